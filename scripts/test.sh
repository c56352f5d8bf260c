#!/usr/bin/env bash
# `make test`: start private emulators on free ports, run every Go test against
# them with AGENTDLQ_REQUIRE_EMULATORS=1 (an emulator test that would skip
# fails instead), always stop the emulators, and exit with go test's status.
#
# Extra arguments go to `go test` (default ./...). GOTESTFLAGS adds flags.
# Without arguments it first installs what the whole run needs from Debian's
# packages when it is missing (scripts/test-deps.sh: qemu-user, chromium),
# then runs the arm64 unit tests under qemu-user (scripts/test-arm64.sh) and
# the tests of every module under examples/ after the Go tests. The emulators
# and the CDK CLI come from npm (scripts/local.sh runs npm ci when
# node_modules is missing), Go modules from the module proxy.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
if [ $# -eq 0 ]; then
  scripts/test-deps.sh
fi
mkdir -p .local
export AGENTDLQ_LOCAL_DIR
AGENTDLQ_LOCAL_DIR="$(mktemp -d "$ROOT/.local/test.XXXXXX")"
cleanup() {
  AGENTDLQ_SQS_PORT=0 scripts/local.sh down || true
  rm -rf "$AGENTDLQ_LOCAL_DIR"
}
trap cleanup EXIT
AGENTDLQ_SQS_PORT=0 AGENTDLQ_DYNAMODB_PORT=0 AGENTDLQ_S3_PORT=0 scripts/local.sh up
eval "$(scripts/local.sh env)"
export AGENTDLQ_REQUIRE_EMULATORS=1
# Two cores: two test binaries at a time, each package bounded.
set +e
# shellcheck disable=SC2086
go test -p 2 -timeout 15m ${GOTESTFLAGS:-} "${@:-./...}"
rc=$?
if [ $# -eq 0 ]; then
  scripts/test-arm64.sh || rc=1
  # The example modules (examples/*/go.mod: each a module of its own, with a
  # replace to this checkout), built and tested as an adopter would.
  for mod in examples/*/go.mod; do
    [ -e "$mod" ] || continue
    dir="$(dirname "$mod")"
    echo "--- $dir (a module of its own)"
    # shellcheck disable=SC2086
    (cd "$dir" && go test -timeout 15m ${GOTESTFLAGS:-} ./...) || rc=1
  done
fi
set -e
exit $rc
