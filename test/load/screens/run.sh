#!/usr/bin/env bash
# The project's copy of ../shared/bench/screens/run.sh (issue 32, `make load-screens`): one qms process holding N
# live ticket pages and a board per queue while calls are made, then a reconnect storm. The client (main.go, its own
# module so the project's build and linters leave it alone) is the shared one, unchanged.
#
#   run.sh PROJECT_DIR [memory|postgres] [N] [extra client flags, e.g. -rate 20 -dur 30s -queues 20]
#
# Builds qms and the client, starts qms on a free loopback port (postgres: a fresh database on
# postgres://postgres@127.0.0.1:5432, dropped afterwards), runs the client, stops what it started by PID.
# Prints the client's report; its lines "call-answer -> ticket stream: ... p99=..." and "... -> board stream"
# are the figures. Needs `ulimit -n` above 2N+100 (it raises the soft limit as far as the hard limit allows).
# SCREENS_SERVER_LOG, when set, keeps the server's log there.
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
project="$(cd "${1:?PROJECT_DIR}" && pwd)"; mode=${2:-postgres}; n=${3:-1000}; shift $(( $# >= 3 ? 3 : $# ))
work=$(mktemp -d); pid=""; db="qms_screens_$$"
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  [ "$mode" = postgres ] && psql -q "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1
  [ -n "${SCREENS_SERVER_LOG:-}" ] && cp "$work/server.log" "$SCREENS_SERVER_LOG" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
ulimit -n "$(ulimit -Hn)" 2>/dev/null
(cd "$project" && go build -o "$work/qms" ./cmd/qms) || { echo "qms build failed"; exit 2; }
(cd "$here" && go build -o "$work/client" .) || { echo "client build failed"; exit 2; }
port=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
pport=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
admin="screens-$(python3 -c 'import secrets;print(secrets.token_hex(12))')"
export QMS_ADMIN_TOKEN="$admin" QMS_HTTP_ADDR="127.0.0.1:$port" QMS_RATELIMIT_PER_MINUTE=100000000 \
  QMS_PPROF_ADDR="127.0.0.1:$pport" QMS_LOG_LEVEL=warn QMS_STORAGE="$mode"
if [ "$mode" = postgres ]; then
  psql -q "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable" -c "CREATE DATABASE $db" >/dev/null || exit 2
  export QMS_DATABASE_URL="postgres://postgres@127.0.0.1:5432/$db?sslmode=disable"
  export QMS_WEBHOOKS_SECRET_KEY="screens-sealing-key-$(python3 -c 'import secrets;print(secrets.token_hex(16))')"
fi
"$work/qms" serve >"$work/server.log" 2>&1 & pid=$!
for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.2; done
timeout 600 "$work/client" -addr "127.0.0.1:$port" -admin "$admin" -n "$n" -pid "$pid" -pprof "127.0.0.1:$pport" \
  -label "$mode-$n" "$@"
echo "client rc=$?"
grep -iE 'error|panic|too many open files' "$work/server.log" | head -n 5
