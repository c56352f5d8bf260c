#!/usr/bin/env bash
# What `make test` needs beyond Go, Node and npm, installed from Debian's
# packages the first time:
#
#   qemu-user  runs the arm64 unit tests (scripts/test-arm64.sh): Lambda's target
#   chromium   runs the console's browser test (console/browser_test.go)
#
# Quick and silent when both are there (qemu-aarch64 or qemu-aarch64-static;
# chromium, chromium-browser, google-chrome or $AGENTDLQ_CHROMIUM). Otherwise
# it says what it installs, runs apt-get (as root, or through sudo), and
# fails with a clear message when it cannot. Only bash builtins, `id`,
# `sudo` and `apt-get` are used, so a test can run it on a PATH of fakes
# (testkit/readme/testdeps_test.go).
set -euo pipefail

say() { echo "test-deps: $*" >&2; }

has_qemu() { command -v qemu-aarch64 >/dev/null 2>&1 || command -v qemu-aarch64-static >/dev/null 2>&1; }
has_chromium() {
  if [[ -n "${AGENTDLQ_CHROMIUM:-}" ]]; then [[ -x "$AGENTDLQ_CHROMIUM" ]] || command -v "$AGENTDLQ_CHROMIUM" >/dev/null 2>&1; return; fi
  local b
  for b in chromium chromium-browser google-chrome google-chrome-stable; do
    command -v "$b" >/dev/null 2>&1 && return 0
  done
  return 1
}

missing() {
  local pkgs=()
  has_qemu || pkgs+=(qemu-user)
  has_chromium || pkgs+=(chromium fonts-dejavu-core)
  echo "${pkgs[*]}"
}

# names PKGS...: what a person would call them ("qemu-user and chromium").
names() {
  local n="$*"
  n="${n/ fonts-dejavu-core/}"
  echo "${n/qemu-user chromium/qemu-user and chromium}"
}

read -r -a PKGS <<<"$(missing)"
[[ ${#PKGS[@]} -eq 0 ]] && exit 0
NAMES="$(names "${PKGS[@]}")"
manual="install them yourself (Debian: apt-get install ${PKGS[*]}), then run make test again"

if ! command -v apt-get >/dev/null 2>&1; then
  say "make test needs $NAMES, and there is no apt-get to install them: $manual"
  exit 1
fi
AS_ROOT=()
if [[ "$(id -u)" != 0 ]]; then
  if ! command -v sudo >/dev/null 2>&1; then
    say "make test needs $NAMES; installing them takes root, and this user is not root and has no sudo: $manual"
    exit 1
  fi
  AS_ROOT=(sudo)
fi

say "installing $NAMES from Debian's packages (first time only)"
if ! "${AS_ROOT[@]}" apt-get -qq update >&2 ||
  ! "${AS_ROOT[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${PKGS[@]}" >&2; then
  say "apt-get could not install ${PKGS[*]}: $manual"
  exit 1
fi
hash -r
left="$(missing)"
if [[ -n "$left" ]]; then
  # shellcheck disable=SC2086
  left="$(names $left)"
  verb=is; [[ "$left" == *" and "* ]] && verb=are
  say "apt-get ran, but $left $verb still not on the PATH: $manual"
  exit 1
fi
