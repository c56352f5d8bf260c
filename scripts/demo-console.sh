#!/usr/bin/env bash
# `make demo-console`: run the demo on private emulators and keep them, then
# serve the console (agentdlq ui) on them until Ctrl-C, then stop them.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
bin=.local/bin/agentdlq
log=$(mktemp)
"$bin" demo --keep-emulators | tee "$log"
dir=$(sed -n 's/^emulators left running: AGENTDLQ_LOCAL_DIR=\([^ ]*\) .*/\1/p' "$log" | tail -1)
rm -f "$log"
if [ -z "$dir" ]; then
  echo "demo-console: the demo did not leave its emulators running" >&2
  exit 1
fi
export AGENTDLQ_LOCAL_DIR="$dir"
cleanup() { scripts/local.sh down >/dev/null 2>&1 || true; rm -rf "$dir"; }
trap cleanup EXIT
eval "$(scripts/local.sh env)"
echo
echo "The console over the demo's pipeline (Ctrl-C stops it and the emulators):"
"$bin" ui "$@"
