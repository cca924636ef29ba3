#!/usr/bin/env bash
# The whole single-GPU calibration and a compute-only validation, in 8 minutes or less on one
# H100 or H200 (docs/calibration.md):
#   1. lagom-calibrate: every single-GPU benchmark into OUT/bundle;
#   2. lagom calibrate fit --measurements: the fitted profile, every coefficient before and after;
#   3. lagom-validate on tests/gpu/compute-only.json, then lagom validate against the matching
#      preset, with the prior profile and with the fitted one.
# Writes OUT/device-check.tar.gz (bundle, profile, reports) and OUT/summary.txt: what a GPU
# machine can send back (at most 8 files).
#   calibrate/gpu/device-check.sh OUT [DIR]
# DIR holds bin/ (lagom, lagom-calibrate, lagom-validate) and lib/ (calibrate/gpu/pack-for-device.sh
# makes it; default: .device, else build). The CUDA libraries come from the machine: the system's,
# or those of Python's nvidia-* packages.
set -uo pipefail
out=${1:?usage: device-check.sh OUT [DIR]}
dir=${2:-.device}
[ -d "$dir/bin" ] || dir=build
mkdir -p "$out"
work=$(mktemp -d)
start=$(date +%s)
export LD_LIBRARY_PATH="$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
for d in /usr/local/cuda/lib64 $(python3 -c 'import glob,site; print(" ".join(sorted(glob.glob(site.getsitepackages()[0]+"/nvidia/*/lib"))))' 2>/dev/null); do
  [ -d "$d" ] && LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$d"
done
bin=$dir/bin
here=$(cd "$(dirname "$0")/../.." && pwd)
workload=$here/tests/gpu/compute-only.json
[ -f "$workload" ] || workload=$dir/gpu/compute-only.json
log() { echo "[$(($(date +%s) - start)) s] $*" | tee -a "$work/summary.txt"; }

nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv \
  > "$work/nvidia-smi.csv" 2>&1
log "GPU: $(sed -n 2p "$work/nvidia-smi.csv")"
timeout 360 "$bin/lagom-calibrate" --out "$work/bundle" 2> "$work/calibrate.log"
rc=$?
log "lagom-calibrate: exit $rc ($(tail -1 "$work/calibrate.log"))"
if [ $rc -eq 0 ]; then
  "$bin/lagom" calibrate fit --measurements "$work/bundle" -o "$work/profile.json" \
    > "$work/fit.txt" 2>&1
  log "fit: exit $? (OUT/fit.txt)"
  grep -E "^# (compute|contention|gpu)\." "$work/fit.txt" | head -40 >> "$work/summary.txt"
fi
case $(sed -n 2p "$work/nvidia-smi.csv") in
  *H200*) cluster=hgx-h200 ;; *H100*) cluster=dgx-h100 ;; *A100*) cluster=dgx-a100 ;;
  *A40*) cluster=a40-pcie ;; *) cluster= ;;
esac
timeout 120 "$bin/lagom-validate" --workload "$workload" --out "$work/measured.json" \
  2> "$work/validate-run.log"
log "lagom-validate: exit $? ($(tail -1 "$work/validate-run.log"))"
if [ -n "$cluster" ] && [ -s "$work/measured.json" ]; then
  "$bin/lagom" validate --measured "$work/measured.json" --workload "$workload" \
    --cluster "$cluster" --trace "$work/trace.json" > "$work/validate-prior.txt" 2>&1
  log "validate (prior profile): $(grep -E '^(step|compute)' "$work/validate-prior.txt" | tr '\n' ' ')"
  if [ -s "$work/profile.json" ]; then
    "$bin/lagom" validate --measured "$work/measured.json" --workload "$workload" \
      --cluster "$cluster" --profile "$work/profile.json" > "$work/validate-fitted.txt" 2>&1
    log "validate (fitted profile): $(grep -E '^(step|compute)' "$work/validate-fitted.txt" | tr '\n' ' ')"
  fi
fi
tar czf "$out/device-check.tar.gz" -C "$work" .
cp "$work/summary.txt" "$out/summary.txt"
log "done: $out/device-check.tar.gz"
