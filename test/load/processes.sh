#!/usr/bin/env bash
# Throughput of the mixed workload (mixed.lua: 80 % GET turn, 20 % POST turn) with 1, 2 and 3 `qms serve` processes
# on one PostgreSQL (docs/scaling.md). 64 connections in all, split across the processes, BENCH_SECONDS (15) each.
#   processes.sh [PROJECT_DIR]
# Environment: BENCH_DATABASE_URL (postgres://postgres@127.0.0.1:5432/postgres); PROCS_SAMPLE=1 also samples
# pg_stat_activity of the database every 0.2 s during each step and prints the most frequent states, wait events
# and statements of its backends (where the time goes when more processes serve fewer requests, issue 30).
# Every step also prints the CPU per request of the qms processes, of the database's PostgreSQL backends and of wrk,
# from /proc/PID/stat over the step's middle (all but its first and last second), and how busy the machine's cores
# were (/proc/stat, everyone's work): throughput moves with the machine's other load, CPU per request much less;
# and the database's transactions and rate-limit leases per request (pg_stat_database, pg_stat_user_tables).
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
snap() { # the time, then qms:i, wrk:i and pg:pid CPU ticks; cpu busy/total ticks of the machine (1/100 s)
  local files=() i p
  for i in "${!pids[@]}"; do files+=("/proc/${pids[$i]}/stat"); done
  for i in "${!outs[@]}"; do files+=("/proc/${outs[$i]}/stat"); done
  for p in $(pgrep -f "postgres: .* $db "); do files+=("/proc/$p/stat"); done
  cat "${files[@]}" /proc/stat 2>/dev/null | awk -v qms="${pids[*]}" -v wrk="${outs[*]}" 'BEGIN {
      getline up <"/proc/uptime"; split(up, u, " "); print "uptime", u[1] * 100
      n = split(qms, q, " "); for (i = 1; i <= n; i++) name[q[i]] = "qms:" (i - 1)
      n = split(wrk, w, " "); for (i = 1; i <= n; i++) name[w[i]] = "wrk:" (i - 1) }
    $1 == "cpu" { print "busy", $2+$3+$4+$7+$8; print "all", $2+$3+$4+$5+$6+$7+$8 }
    $1 ~ /^[0-9]+$/ { print ($1 in name ? name[$1] : "pg:" $1), $14 + $15 }'
  # The database's transactions and the rate limit's leases (each upserts its key's row), from the statistics
  # PostgreSQL's backends flush at most once a second: counts to divide by the requests, not exact to the second.
  psql "$QMS_DATABASE_URL" -At -F' ' -c "SELECT 'xacts', xact_commit + xact_rollback FROM pg_stat_database
    WHERE datname = current_database() UNION ALL SELECT 'leases', n_tup_ins + n_tup_upd FROM pg_stat_user_tables
    WHERE relname = 'rate_limits'" 2>/dev/null
}
for n in 1 2 3; do
  c=$((64 / n)); total=0; outs=()
  for i in $(seq 0 $((n - 1))); do
    wrk -t1 -c"$c" -d"${secs}s" --latency -s "$here/mixed.lua" "${bases[$i]}" >"$work/wrk-$n-$i.txt" 2>&1 &
    outs+=($!)
  done
  (sleep 1; snap >"$work/cpu-$n.a"; sleep $((secs - 3)); snap >"$work/cpu-$n.b") &
  snapper=$!
  if [ "${PROCS_SAMPLE:-0}" = 1 ]; then
    printf '%s\n' "SELECT coalesce(state, '-') || ' | ' || coalesce(wait_event_type || ':' || wait_event, 'CPU') || ' | ' ||
      left(regexp_replace(query, '\s+', ' ', 'g'), 70) FROM pg_stat_activity
      WHERE datname = '$db' AND pid <> pg_backend_pid() AND backend_type = 'client backend' AND state <> 'idle'" '\watch 0.2' |
      psql "$QMS_DATABASE_URL" -At >"$work/activity-$n.txt" 2>/dev/null &
    sampler=$!
  fi
  wait "$snapper"
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
  # A backend that started during the window counts from zero; one that ended is lost (pools keep theirs).
  awk -v rps="$total" -v cores="$(nproc)" 'NR == FNR {a[$1] = $2; next} $1 == "uptime" {secs = ($2 - a[$1]) / 100; n = rps * secs; next}
    $1 == "xacts" || $1 == "leases" {c[$1] = $2 - a[$1]; next}
    {d = $2 - ($1 in a ? a[$1] : 0); if (d < 0) d = 0; g = $1; sub(/:.*/, "", g); t[g] += d; if (g == "qms") q = q sprintf(" %.0f", d * 1e4 / n)}
    END {printf "   CPU us/request: qms %.0f (by process:%s), pg %.0f, wrk %.0f; cores busy %.2f of %d (qms %.2f, pg %.2f, wrk %.2f, everyone %.2f)\n",
      t["qms"] * 1e4 / n, q, t["pg"] * 1e4 / n, t["wrk"] * 1e4 / n, (t["qms"] + t["pg"] + t["wrk"]) / secs / 100, cores,
      t["qms"] / secs / 100, t["pg"] / secs / 100, t["wrk"] / secs / 100, cores * t["busy"] / t["all"]
      printf "   per request: %.2f transactions, %.3f rate-limit leases (%.0f leases a second)\n", c["xacts"] / n, c["leases"] / n, c["leases"] / secs}' "$work/cpu-$n.a" "$work/cpu-$n.b"
done
echo "== load average: $(cut -d' ' -f1-3 /proc/loadavg)"
