#!/bin/sh
# A short lagom-calibrate run (a few samples of every single-GPU benchmark), then the fit of the
# bundle it wrote. Exits 77 (skipped) where there is no GPU.
set -u
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$LAGOM_CALIBRATE" --out "$out/bundle" --samples 3 --quick
rc=$?
[ $rc -eq 77 ] && exit 77
[ $rc -eq 0 ] || exit $rc
for f in context.json summary.json raw/hbm.csv raw/launch.csv raw/gemm.csv raw/stream.csv raw/contention.csv; do
  [ -s "$out/bundle/$f" ] || { echo "missing $f"; exit 1; }
done
"$LAGOM_CLI" calibrate fit --measurements "$out/bundle" --force -o "$out/profile.json"
