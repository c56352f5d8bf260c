#!/usr/bin/env bash
# scripts/progress.sh LABEL CMD [ARG...]: run CMD, saying on stderr what it is
# doing while it runs, so that a long first step is not silence: "LABEL…" at
# the start, then, with SHORT the label without its "(…)" remark,
# "SHORT: still at it (N s)" every AGENTDLQ_PROGRESS_EVERY seconds (default
# 10), and "SHORT: done in N s" (or "failed after N s") at the end.
# CMD's own output passes through; its exit status is this script's.
set -uo pipefail
label="$1"
shift
short="${label%% (*}"
every="${AGENTDLQ_PROGRESS_EVERY:-10}"
start=$SECONDS
echo "$label…" >&2
"$@" &
pid=$!
# Ctrl-C or a kill of this script stops CMD too.
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; exit 130' INT TERM
(
  n=0
  while sleep 1; do # one second at a time: a kill leaves no sleep behind for long
    n=$((n + 1))
    if ((n % every == 0)); then echo "$short: still at it ($((SECONDS - start)) s)" >&2; fi
  done
) &
beat=$!
wait "$pid"
rc=$?
kill "$beat" 2>/dev/null
wait "$beat" 2>/dev/null
if [[ $rc -eq 0 ]]; then
  echo "$short: done in $((SECONDS - start)) s" >&2
else
  echo "$short: failed after $((SECONDS - start)) s (exit $rc)" >&2
fi
exit $rc
