#!/usr/bin/env bash
# Throughput of the mixed workload (mixed.lua: 80 % GET turn, 20 % POST turn) with 1, 2 and 3 `qms serve` processes
# on one PostgreSQL (docs/scaling.md). 64 connections in all, split across the processes, BENCH_SECONDS (15) each.
#   processes.sh [PROJECT_DIR]
# Environment: BENCH_DATABASE_URL (postgres://postgres@127.0.0.1:5432/postgres); PROCS_SAMPLE=1 also samples
# pg_stat_activity of the database every 0.2 s during each step and prints the most frequent states, wait events
# and statements of its backends (where the time goes when more processes serve fewer requests, issue 30).
set -u
here="$(cd "$(dirname "$0")" && pwd)"
project="$(cd "${1:-$here/../..}" && pwd)"
secs="${BENCH_SECONDS:-15}"
admin_url="${BENCH_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}"
work="$(mktemp -d "${TMPDIR:-/tmp}/qms-procs.XXXXXX")"
export BENCH_DIR="$work"
pids=()
db="qms_procs_$$"
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  psql "$admin_url" -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1; }
trap cleanup EXIT
(cd "$project" && go build -o "$work/qms" ./cmd/qms) || exit 2
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_up() { for _ in $(seq 1 100); do curl -sf "$1" >/dev/null 2>&1 && return 0; sleep 0.2; done; echo "did not start: $1"; exit 2; }
psql "$admin_url" -qc "CREATE DATABASE $db" >/dev/null || exit 2
base_url="${admin_url%/*}"; query="${admin_url#*\?}"; [ "$query" = "$admin_url" ] && query="" || query="?$query"
export QMS_DATABASE_URL="$base_url/$db$query" QMS_STORAGE=postgres QMS_RATELIMIT_PER_MINUTE=1000000000
export QMS_ADMIN_TOKEN="bench-$(python3 -c 'import secrets; print(secrets.token_hex(16))')"
export QMS_WEBHOOKS_SECRET_KEY="bench-$(python3 -c 'import secrets; print(secrets.token_hex(16))')"
"$work/qms" migrate >/dev/null 2>&1 || { echo "migrate failed"; exit 2; }
bases=()
for i in 1 2 3; do
  p=$(port); QMS_HTTP_ADDR="127.0.0.1:$p" "$work/qms" serve --no-migrate >"$work/qms-$i.log" 2>&1 & pids+=($!)
  bases+=("http://127.0.0.1:$p"); wait_up "http://127.0.0.1:$p/healthz"
done
python3 "$here/seed.py" "${bases[0]}" "$QMS_ADMIN_TOKEN" "$work" || exit 2
export BENCH_PATH="/api/v1/turns/$(cat "$work/turn.txt")"
for n in 1 2 3; do
  c=$((64 / n)); total=0; outs=()
  for i in $(seq 0 $((n - 1))); do
    wrk -t1 -c"$c" -d"${secs}s" --latency -s "$here/mixed.lua" "${bases[$i]}" >"$work/wrk-$n-$i.txt" 2>&1 &
    outs+=($!)
  done
  if [ "${PROCS_SAMPLE:-0}" = 1 ]; then
    printf '%s\n' "SELECT coalesce(state, '-') || ' | ' || coalesce(wait_event_type || ':' || wait_event, 'CPU') || ' | ' ||
      left(regexp_replace(query, '\s+', ' ', 'g'), 70) FROM pg_stat_activity
      WHERE datname = '$db' AND pid <> pg_backend_pid() AND backend_type = 'client backend' AND state <> 'idle'" '\watch 0.2' |
      psql "$QMS_DATABASE_URL" -At >"$work/activity-$n.txt" 2>/dev/null &
    sampler=$!
  fi
  for o in "${outs[@]}"; do wait "$o"; done
  if [ "${PROCS_SAMPLE:-0}" = 1 ]; then
    kill "$sampler" 2>/dev/null; wait "$sampler" 2>/dev/null
    samples=$(grep -c . "$work/activity-$n.txt")
    echo "   $n process(es): $samples busy-backend samples (0.2 s apart); most frequent (count | state | wait | statement):"
    sort "$work/activity-$n.txt" | grep . | uniq -c | sort -rn | head -"${PROCS_SAMPLE_TOP:-12}" | sed 's/^/     /'
  fi
  for i in $(seq 0 $((n - 1))); do
    r=$(awk '/Requests\/sec/ {print int($2)}' "$work/wrk-$n-$i.txt"); total=$((total + r))
  done
  p99=$(awk '/^ +99%/ {print $2}' "$work/wrk-$n-0.txt")
  echo "$n process(es): $total req/s mixed (80 % GET, 20 % POST), p99 of the first $p99"
done
echo "== load average: $(cut -d' ' -f1-3 /proc/loadavg)"
