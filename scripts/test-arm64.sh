#!/usr/bin/env bash
# The pure unit tests of the code Lambda runs — the task contract and its
# decoder, the dead-letter codec, the batch processor, the sample worker and
# the JSON scanner they share (internal/jsonscan, which reads 8-byte words) —
# built for arm64 (Lambda's target) and run under qemu-user. `make test` runs
# this after the amd64 tests; `make test-arm64` runs it alone.
#
# The emulator tests skip here (the emulator variables are unset): they test
# the SDK wiring, which is architecture-free, and would be slow under qemu.
# Extra arguments go to `go test` (default: the five packages below).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
QEMU="$(command -v qemu-aarch64 || command -v qemu-aarch64-static || true)"
if [ -z "$QEMU" ]; then
  echo "test-arm64: qemu-aarch64 not found; make test installs it (scripts/test-deps.sh), or apt-get install qemu-user" >&2
  exit 1
fi
PKGS=(./events/agenttask ./events/deadletter ./functions/batch ./functions/batch/internal/sqsevent ./functions/sampleworker ./internal/jsonscan)
echo "test-arm64: GOARCH=arm64 under $("$QEMU" --version | head -1)"
# shellcheck disable=SC2086
env -u AWS_ENDPOINT_URL_SQS -u AWS_ENDPOINT_URL_DYNAMODB -u AWS_ENDPOINT_URL_S3 -u AGENTDLQ_REQUIRE_EMULATORS \
  CGO_ENABLED=0 GOARCH=arm64 go test -p 2 -timeout 15m -exec "$QEMU" ${GOTESTFLAGS:-} "${@:-${PKGS[@]}}"
