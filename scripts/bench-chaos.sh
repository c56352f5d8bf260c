#!/usr/bin/env bash
# scripts/bench-chaos.sh (make bench-chaos): the load bench through the
# fault-injecting proxy, each toxic of CHAOS on each path of CHAOS_PATHS,
# TASKS tasks each. Every pair runs, whatever an earlier one did; each keeps
# in OUT (default .local/bench):
#   chaos-<toxic>-<path>.txt             the bench's result (stdout)
#   chaos-<toxic>-<path>.err             what it said on stderr
#   chaos-<toxic>-<path>.<n>.<svc>.log   the log of an emulator that failed
#                                        to start (attempt n; the bench tries twice)
# At the end a table: toxic, path, result, where its files are, then each
# failed pair with the last line it said on stderr; the exit status is 1
# when any pair failed.
#
# Settings (environment): CHAOS, CHAOS_PATHS, TASKS (see the Makefile),
# OUT, AGENTDLQ_BIN (default .local/bin/agentdlq).
set -uo pipefail
cd "$(dirname "$0")/.."
CHAOS="${CHAOS:-none latency reset timeout truncate slicer}"
CHAOS_PATHS="${CHAOS_PATHS:-sqs dynamodb}"
TASKS="${TASKS:-20000}"
OUT="${OUT:-.local/bench}"
BIN="${AGENTDLQ_BIN:-.local/bin/agentdlq}"
mkdir -p "$OUT"

rows=() whys=() failed=0
for path in $CHAOS_PATHS; do
  for toxic in $CHAOS; do
    base="$OUT/chaos-$toxic-$path"
    rm -f "$base".*.log # an earlier run's kept logs are not this run's
    echo "== $toxic on $path, $TASKS tasks"
    # The group's stderr, not the bench's alone: a process substitution made
    # inside a pipeline belongs to its subshell, and this shell could not
    # wait for the tee to finish writing the .err it reads below.
    {
      "$BIN" local bench --tasks "$TASKS" --raw-messages 1000 --chaos "$toxic" --chaos-path "$path" --emulator-logs "$base" |
        tee "$base.txt" | grep -E '^(lost|chaos|active|sent|keys done|receives lost|  dead-lettered budget)'
      rc="${PIPESTATUS[0]}"
    } 2> >(tee "$base.err" >&2)
    wait "$!" # the tee
    files="$base.txt $base.err"
    for kept in "$base".*.log; do [[ -e "$kept" ]] && files+=" $kept"; done
    if [[ "$rc" == 0 ]]; then
      result=ok
    else
      failed=$((failed + 1))
      # The bench's own last word on stderr says why.
      why="$(grep -v '^SDK ' "$base.err" | grep -v '^[[:space:]]*$' | tail -n 1)"
      result="FAILED (exit $rc)"
      whys+=("$toxic on $path: ${why:-(it said nothing on stderr)}")
    fi
    rows+=("$toxic|$path|$result|$files")
  done
done

echo
echo "== make bench-chaos: $TASKS tasks each"
{
  echo "toxic|path|result|files"
  for row in "${rows[@]}"; do echo "$row"; done
} | column -t -s '|'
if ((failed > 0)); then
  echo "$failed of ${#rows[@]} failed:"
  for why in "${whys[@]}"; do echo "  $why"; done
  exit 1
fi
