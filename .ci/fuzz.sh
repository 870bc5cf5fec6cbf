#!/usr/bin/env bash
# Fuzzes every fuzz target of the module for a short while (issue 14).
#   .ci/fuzz.sh            each target for $FUZZ_TIME (default 5s)
#   FUZZ_TIME=30s .ci/fuzz.sh          a longer run
#   FUZZ_TIME=10000x .ci/fuzz.sh       until 10,000 executions, timed
# Minimization of each new interesting input is bounded (-fuzzminimizetime),
# otherwise it dominates a short run: with Go's default of 60 s a target can
# spend its whole budget minimizing and execute almost nothing.
# Prints one line per target: package, target, executions, seconds.
set -euo pipefail
cd "$(dirname "$0")/.."

fuzz_time=${FUZZ_TIME:-5s}
minimize=${FUZZ_MINIMIZE_TIME:-50x}
failed=0

mapfile -t targets < <(grep -rlE --include='*_test.go' '^func Fuzz[A-Za-z0-9_]+\(f \*testing\.F\)' internal cmd 2>/dev/null |
  while read -r file; do
    for name in $(grep -oE '^func Fuzz[A-Za-z0-9_]+' "$file" | sed 's/^func //'); do
      echo "$(dirname "$file") $name"
    done
  done | sort -u)

echo "== fuzz: ${#targets[@]} targets, $fuzz_time each (minimize $minimize)"
for t in "${targets[@]}"; do
  read -r dir name <<<"$t"
  start=$EPOCHREALTIME
  status=FAIL
  for try in 1 2; do
    if out=$(go test "./$dir" -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzz_time" -fuzzminimizetime "$minimize" 2>&1); then
      status=ok
      break
    fi
    # Go's fuzzing coordinator can end a short run with "context deadline
    # exceeded" when -fuzztime runs out while it is still minimizing a new
    # interesting input: no input failed (none is written to testdata/fuzz).
    # Such a run is tried once more; a real failure names its input.
    if grep -q 'Failing input written' <<<"$out" || ! grep -q 'context deadline exceeded' <<<"$out"; then
      break
    fi
  done
  [ "$status" = ok ] || failed=1
  secs=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
  execs=$(grep -oE 'execs: [0-9]+' <<<"$out" | tail -1 | grep -oE '[0-9]+' || echo 0)
  printf '%-4s %-34s %-22s %9s execs %6s s\n' "$status" "$dir" "$name" "$execs" "$secs"
  if [ "$status" = FAIL ]; then
    echo "$out" | tail -40
  fi
done
# Corpus entries that a failure wrote are under testdata/fuzz/: commit them
# with the fix, so that go test replays them.
exit $failed
