#!/usr/bin/env bash
# profile.sh MODE ROUTE OUT: one qms process under wrk (-t2 -c64, 12 s) on one of the ratio benchmarks' routes,
# with an 8 s CPU profile taken in the middle, to see what dominates a route (docs/scaling.md).
#   MODE  memory | postgres          ROUTE  get (P1/P2) | post (P3) | posthot (P3h)
#   OUT   prefix: OUT.wrk (wrk's report), OUT.pprof (the profile), OUT.top (pprof -top -cum)
# Environment: BENCH_DATABASE_URL (postgres://postgres@127.0.0.1:5432/postgres), for postgres mode; a scratch
# database qms_profile is made and dropped.
set -u
[ $# -eq 3 ] || { echo "usage: profile.sh memory|postgres get|post|posthot OUT"; exit 2; }
mode=$1 route=$2 out=$3
here="$(cd "$(dirname "$0")" && pwd)" root="$(cd "$(dirname "$0")/../.." && pwd)"
work=$(mktemp -d "${TMPDIR:-/tmp}/qms-profile.XXXXXX"); export BENCH_DIR=$work
(cd "$root" && go build -o "$work/qms" ./cmd/qms) || exit 2
export QMS_ADMIN_TOKEN="bench-$(python3 -c 'import secrets; print(secrets.token_hex(16))')"
export QMS_WEBHOOKS_SECRET_KEY="bench-$(python3 -c 'import secrets; print(secrets.token_hex(16))')"
export QMS_RATELIMIT_PER_MINUTE=1000000000
admin_url="${BENCH_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}"
if [ "$mode" = postgres ]; then
  psql "$admin_url" -qc "DROP DATABASE IF EXISTS qms_profile WITH (FORCE)" -c "CREATE DATABASE qms_profile" >/dev/null || exit 2
  trap 'psql "$admin_url" -qc "DROP DATABASE IF EXISTS qms_profile WITH (FORCE)" >/dev/null 2>&1' EXIT
  base="${admin_url%/*}" query="${admin_url#*\?}"; [ "$query" = "$admin_url" ] && query="" || query="?$query"
  export QMS_DATABASE_URL="$base/qms_profile$query"
  QMS_STORAGE=postgres "$work/qms" migrate >/dev/null 2>&1 || { echo "migrate failed"; exit 2; }
fi
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
pport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
QMS_PPROF_ADDR=127.0.0.1:$pport QMS_HTTP_ADDR=127.0.0.1:$port QMS_STORAGE=$mode "$work/qms" serve >"$work/qms.log" 2>&1 &
pid=$!
for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.2; done
python3 "$here/seed.py" "http://127.0.0.1:$port" "$QMS_ADMIN_TOKEN" "$work" || { kill $pid; exit 2; }
export BENCH_PATH="/api/v1/turns/$(cat "$work/turn.txt")"
case $route in
  get) script=get.lua ;;
  post) script=post.lua ;;
  posthot) script=post.lua; export BENCH_HOT_RUN=$(head -n 1 "$work/runs.txt") ;;
  *) echo "unknown route $route"; kill $pid; exit 2 ;;
esac
wrk -t2 -c64 -d12s --latency -s "$here/$script" "http://127.0.0.1:$port" >"$out.wrk" 2>&1 &
sleep 2
curl -s -o "$out.pprof" "http://127.0.0.1:$pport/debug/pprof/profile?seconds=8"
wait %2 2>/dev/null
kill $pid; wait $pid 2>/dev/null
grep -E 'Requests/sec|50%|99%|Non-2xx' "$out.wrk"
go tool pprof -top -cum -nodecount=60 "$work/qms" "$out.pprof" >"$out.top" 2>/dev/null && echo "profile: $out.top"
