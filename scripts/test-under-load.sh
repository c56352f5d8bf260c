#!/usr/bin/env bash
# `make test-under-load`: the test suite RUNS times in a row (default 5) with
# BURNERS CPU-burning processes beside it (default 2, one per core of the
# reference machine): the conditions under which the lost receives of
# docs/local.md showed. The burners are bounded by the runs and always killed.
# Prints one line per run and exits non-zero when any run failed.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
runs="${RUNS:-5}" burners="${BURNERS:-2}"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; }
trap cleanup EXIT
for ((i = 0; i < burners; i++)); do
  (while :; do :; done) &
  pids+=($!)
done
mkdir -p .local/under-load
failed=0
for ((r = 1; r <= runs; r++)); do
  log=".local/under-load/run-$r.log"
  start=$SECONDS
  if scripts/test.sh "$@" >"$log" 2>&1; then
    echo "run $r of $runs: passed in $((SECONDS - start)) s (load: $(cut -d' ' -f1-3 /proc/loadavg))"
  else
    failed=$((failed + 1))
    echo "run $r of $runs: FAILED in $((SECONDS - start)) s, log: $log"
    grep -E '^(--- FAIL|FAIL|panic:)' "$log" | head -20
  fi
  grep -h "localtest http:" "$log" | head -5
done
echo "under load ($burners burners): $((runs - failed)) of $runs runs passed"
[ "$failed" -eq 0 ]
