#!/usr/bin/env bash
# Runs the libFuzzer harnesses: fuzz/run.sh BUILD_DIR SECONDS [TARGET...] (default: all).
# Each target starts from its seed corpus and dictionary (fuzz/targets.txt: the repository's own
# examples and test inputs, fuzz/seeds/<target>, past findings in tests/data/fuzz/<target>),
# keeps what it finds in BUILD_DIR/fuzz-corpus/<target>, and writes a crashing input to
# BUILD_DIR/fuzz-findings/. With FUZZ_RUNS=N in the environment a target stops after N runs
# (SECONDS still caps it); FUZZ_TIMEOUT=S changes the per-input hang limit (10 s; raise it for
# campaigns sharing the machine with a build, whose load can stretch one input past 10 s).
# Prints one line per target: runs, runs/s, coverage (edges), features, corpus size.
# Exit status 1 when any target found something.
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:?usage: fuzz/run.sh BUILD_DIR SECONDS [TARGET...]}
seconds=${2:?usage: fuzz/run.sh BUILD_DIR SECONDS [TARGET...]}
shift 2
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  while read -r name _; do targets+=("$name"); done < <(grep -vE '^(#|$)' fuzz/targets.txt)
fi

# The target's line of fuzz/targets.txt: name, dictionary, seed directories.
line_of() { grep -E "^$1[[:space:]]" fuzz/targets.txt; }

# The chakra and tuner_plan harnesses write each input to a scratch file (their readers take
# paths): on a memory-backed TMPDIR they run about twice as fast as on disk.
if [ -z "${TMPDIR:-}" ] && [ -d /dev/shm ] && [ -w /dev/shm ]; then
  export TMPDIR=/dev/shm
fi

status=0
printf '%-16s %8s %12s %10s %8s %8s %7s  %s\n' target seconds runs runs/s cov ft corpus result
for t in "${targets[@]}"; do
  bin="$build/bin/fuzz_$t"
  [ -x "$bin" ] || { echo "fuzz/run.sh: no harness $bin (build the fuzz preset)" >&2; exit 2; }
  corpus="$build/fuzz-corpus/$t"
  findings="$build/fuzz-findings"
  mkdir -p "$corpus" "$findings"
  read -r _ dict seeds <<< "$(line_of "$t")"
  [ -d tests/data/fuzz/"$t" ] && seeds="$seeds tests/data/fuzz/$t"
  args=(-max_total_time="$seconds" -timeout="${FUZZ_TIMEOUT:-10}" -rss_limit_mb=2048 -max_len=65536
        -print_final_stats=1 -artifact_prefix="$findings/$t-")
  [ -n "${FUZZ_RUNS:-}" ] && args+=(-runs="$FUZZ_RUNS")
  [ "$dict" != - ] && args+=(-dict="$dict")
  log="$build/fuzz-$t.log"
  start=$(date +%s.%N)
  # shellcheck disable=SC2046
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "$bin" "${args[@]}" "$corpus" $seeds > "$log" 2>&1
  rc=$?
  elapsed=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }')
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  last=$(grep -E '^#[0-9]+' "$log" | tail -1)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<< "$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<< "$last")
  rate=$(awk -v r="${runs:-0}" -v s="$elapsed" 'BEGIN { printf "%.0f", r / (s > 0 ? s : 1) }')
  result=ok
  if [ $rc -ne 0 ]; then
    result="FINDING (exit $rc): see $log and $findings/$t-*"
    status=1
  fi
  printf '%-16s %8s %12s %10s %8s %8s %7s  %s\n' "$t" "$elapsed" "${runs:-?}" "$rate" \
    "${cov:-?}" "${ft:-?}" "$(ls "$corpus" | wc -l)" "$result"
done
exit $status
