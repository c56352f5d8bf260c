#!/usr/bin/env bash
# Build the Lambda bootstraps for provided.al2023 on arm64 and zip them:
#   dist/<name>/bootstrap and dist/<name>.zip (deterministic: scripts/detzip)
# for each Lambda entry: worker (functions/sampleworker/lambda), triage (triage/lambda).
# An entry whose main.go does not exist yet is reported and makes the build fail
# after the others are built. The worker bootstrap must stay under 10 MB
# (10,000,000 bytes; docs/deploying.md says why and how an adopter keeps to it).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
GO="${GO:-go}"
MAX_BYTES=10000000 # 10 MB, decimal: the stricter reading
ENTRIES=("worker:functions/sampleworker/lambda" "triage:triage/lambda")

missing=()
for entry in "${ENTRIES[@]}"; do
  name="${entry%%:*}" dir="${entry#*:}"
  if [[ ! -f "$dir/main.go" ]]; then
    echo "build: $dir/main.go does not exist: $name not built" >&2
    missing+=("$name")
    continue
  fi
  mkdir -p "dist/$name"
  GOOS=linux GOARCH=arm64 CGO_ENABLED=0 "$GO" build -tags lambda.norpc -trimpath \
    -ldflags '-s -w -buildid=' -o "dist/$name/bootstrap" "./$dir"
  "$GO" run ./scripts/detzip "dist/$name.zip" "dist/$name"
  size=$(stat -c %s "dist/$name/bootstrap")
  printf 'build: dist/%s/bootstrap %d bytes (%.1f MiB), dist/%s.zip %d bytes, sha256 %s\n' \
    "$name" "$size" "$(awk -v s="$size" 'BEGIN{print s/1048576}')" "$name" "$(stat -c %s "dist/$name.zip")" \
    "$(sha256sum "dist/$name.zip" | cut -c1-16)"
  if [[ "$name" == worker && "$size" -ge "$MAX_BYTES" ]]; then
    echo "build: the worker bootstrap is $size bytes, over the 10 MB (10,000,000 bytes) budget" >&2
    exit 1
  fi
done
if ((${#missing[@]} > 0)); then
  echo "build: missing Lambda entries: ${missing[*]}" >&2
  exit 1
fi
