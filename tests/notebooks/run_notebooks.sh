#!/usr/bin/env bash
# Executes every notebook under notebooks/ headless (jupyter nbconvert --execute) against this
# build's lagom, writing their figures to a temporary directory, and checks that each wrote its
# PNGs and that the committed notebooks carry no outputs. Exit 77 (a skip) where Jupyter, pandas
# or matplotlib are missing (`make deps-notebooks` installs them from Debian).
#
#   run_notebooks.sh LAGOM REPO_ROOT [FIGURES_DIR]
set -euo pipefail
lagom=$(readlink -f "$1")
root=$(readlink -f "$2")
figures=${3:-}
py=/usr/bin/python3
[ -x "$py" ] || py=$(command -v python3)
if ! command -v jupyter >/dev/null || ! "$py" -c "import pandas, matplotlib, nbclient, ipykernel" \
    2>/dev/null; then
  echo "SKIP: Jupyter, pandas or matplotlib missing (make deps-notebooks installs them)"
  exit 77
fi
work=$(mktemp -d /tmp/lagom-notebooks-XXXXXX)
trap 'rm -rf "$work"' EXIT
[ -n "$figures" ] || figures="$work/figures"
mkdir -p "$figures"
figures=$(readlink -f "$figures")
status=0
for nb in "$root"/notebooks/*.ipynb; do
  name=$(basename "$nb" .ipynb)
  # Committed notebooks are stripped: no outputs, no execution counts.
  if ! "$py" - "$nb" <<'PY'
import json, sys
nb = json.load(open(sys.argv[1]))
bad = [i for i, c in enumerate(nb["cells"])
       if c["cell_type"] == "code" and (c.get("outputs") or c.get("execution_count"))]
sys.exit(f"{sys.argv[1]}: cells {bad} hold outputs; strip them before committing" if bad else 0)
PY
  then
    status=1
  fi
  touch "$work/stamp"
  sleep 1  # figure times must be newer than the stamp
  start=$(date +%s)
  if ! (cd "$root/notebooks" && LAGOM="$lagom" LAGOM_ROOT="$root" LAGOM_FIGURES="$figures" \
        LAGOM_WORK="$work/$name" PYDEVD_DISABLE_FILE_VALIDATION=1 \
        jupyter nbconvert --to notebook --execute --ExecutePreprocessor.timeout=600 \
        --output-dir "$work/out" "$nb" >"$work/$name.log" 2>&1); then
    cat "$work/$name.log"
    echo "FAIL: $name did not execute"
    status=1
    continue
  fi
  if [ -z "$(find "$figures" -name '*.png' -newer "$work/stamp")" ]; then
    echo "FAIL: $name wrote no figure"
    status=1
  else
    echo "OK: $name ($(( $(date +%s) - start )) s)"
  fi
done
ls -l "$figures"
exit $status
