#!/bin/sh
# lagom-validate replays a compute-only step on this GPU, then `lagom validate` compares it with
# the simulation on the matching preset. Exits 77 (skipped) where there is no GPU.
set -u
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
here=$(dirname "$0")
"$LAGOM_VALIDATE" --workload "$here/compute-only.json" --out "$out/m.json" --steps 5 --warmup 2
rc=$?
[ $rc -eq 77 ] && exit 77
[ $rc -eq 0 ] || exit $rc
case $(sed -n 's/.*"gpu": "\(.*\)".*/\1/p' "$out/m.json") in
  *H200*) cluster=hgx-h200 ;;
  *H100*) cluster=dgx-h100 ;;
  *A100*) cluster=dgx-a100 ;;
  *A40*) cluster=a40-pcie ;;
  *) echo "no preset for this GPU; the measurement is in $out/m.json"; exit 0 ;;
esac
"$LAGOM_CLI" validate --measured "$out/m.json" --workload "$here/compute-only.json" \
  --cluster "$cluster" --trace "$out/trace.json"
