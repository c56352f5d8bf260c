#!/usr/bin/env bash
# `make demo-console`: run the demo (its emulators keep running, with what it
# left on the pipeline), then serve the console (agentdlq ui) on them until
# Ctrl-C, then stop them.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
bin=.local/bin/agentdlq
"$bin" demo
cleanup() { scripts/local.sh down >/dev/null 2>&1 || true; }
trap cleanup EXIT
eval "$(scripts/local.sh env)"
echo
echo "The console over the demo's pipeline (Ctrl-C stops it and the emulators):"
"$bin" ui "$@"
