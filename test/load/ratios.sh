#!/usr/bin/env bash
# The project's copy of ../shared/bench/ratios.sh (issue 16, `make load`): the same pairs, measured the same way,
# plus the latency percentiles of every qms run (wrk --latency). Differences from the shared copy: the project
# defaults to this repository, serve gets a webhook sealing key (postgres mode requires one), and each qms line
# reports p50/p90/p99 (the medians of the rounds).
#
# Side-by-side ratios of qms against the ceilings below it, measured in one run on this machine:
#   P1  memory mode, authenticated GET /turns/{id}     vs  a fiber v2 JSON hello-world (same fiber version)
#   P2  postgres mode, authenticated GET /turns/{id}   vs  pgbench -S (select-only) on the same server
#   P3  postgres mode, POST /queue-runs/{id}/turns     vs  pgbench running pgbench-intake.sql (50 runs)
#   P3h the same on one hot run                          vs  pgbench-intake-hot.sql
# Each pair is measured alternately, ROUNDS times, and the medians are compared, so a busy machine skews
# both sides alike. Reads use 256 keys and writes 64 keys (one key is limited to 120 requests a minute in
# real use); the rate limit is raised out of the way but still runs. Logging stays at its default.
#
#   ratios.sh [PROJECT_DIR] [memory|postgres|all]      (default: this repository, all)
# From the project root: make load (or test/load/ratios.sh . all)
# Environment: BENCH_SECONDS (10), BENCH_ROUNDS (2), BENCH_DATABASE_URL (postgres://postgres@127.0.0.1:5432/postgres)
# Needs go, python3, wrk, pgbench and psql; installs wrk from Debian's packages when it is missing.
set -u
here="$(cd "$(dirname "$0")" && pwd)"
project="$(cd "${1:-$here/../..}" 2>/dev/null && pwd)" || { echo "no project dir"; exit 2; }
[ -f "$project/go.mod" ] || { echo "not a Go module: $project"; exit 2; }
modes="${2:-all}"
secs="${BENCH_SECONDS:-10}" rounds="${BENCH_ROUNDS:-2}"
admin_url="${BENCH_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}"
work="$(mktemp -d "${TMPDIR:-/tmp}/qms-ratios.XXXXXX")"
export BENCH_DIR="$work"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; }
trap cleanup EXIT

command -v wrk >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null; }
for t in go python3 wrk; do command -v "$t" >/dev/null || { echo "missing $t"; exit 2; }; done

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_up() { for _ in $(seq 1 100); do curl -sf "$1" >/dev/null 2>&1 && return 0; sleep 0.2; done; echo "did not start: $1"; exit 2; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
# wrk_rps OUT ARGS...: prints req/s; appends "p50 p90 p99" (ms) of the run to OUT.lat
wrk_rps() {
  local out=$1; shift
  wrk -t2 -c64 -d"${secs}s" --latency "$@" 2>/dev/null | awk -v lat="$out.lat" '
    function ms(v) { if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0; if (v ~ /s$/) return v * 1000; return v }
    /Requests\/sec/ {print int($2)} /Non-2xx/ {bad=$NF}
    /^ +50%/ {p50=ms($2)} /^ +90%/ {p90=ms($2)} /^ +99%/ {p99=ms($2)}
    END {if (bad) print "non2xx " bad > "/dev/stderr"; printf "%.2f %.2f %.2f\n", p50, p90, p99 >> lat}'
}
# latency OUT: the medians of the runs' p50, p90 and p99
latency() {
  local f=$1.lat
  printf "p50 %s ms, p90 %s ms, p99 %s ms" "$(cut -d' ' -f1 "$f" | median)" "$(cut -d' ' -f2 "$f" | median)" "$(cut -d' ' -f3 "$f" | median)"
}
pgb_tps() { pgbench -n -T "$secs" "$@" 2>/dev/null | awk '/^tps/ {print int($3)}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.0f%%", (b > 0 ? 100 * a / b : 0)}'; }

echo "== building qms ($project) and the fiber hello-world"
(cd "$project" && go build -o "$work/qms" ./cmd/qms) || { echo "build failed"; exit 2; }
(cd "$here/hello" && go build -o "$work/hello" .) || { echo "hello build failed"; exit 2; }
export QMS_ADMIN_TOKEN="bench-$(python3 -c 'import secrets; print(secrets.token_hex(16))')"
export QMS_RATELIMIT_PER_MINUTE=1000000000
export QMS_WEBHOOKS_SECRET_KEY="${QMS_WEBHOOKS_SECRET_KEY:-bench-$(python3 -c 'import secrets; print(secrets.token_hex(16))')}"

start_qms() { # start_qms MODE -> sets BASE
  local p; p=$(port); BASE="http://127.0.0.1:$p"
  QMS_HTTP_ADDR="127.0.0.1:$p" QMS_STORAGE="$1" "$work/qms" serve >"$work/qms-$1.log" 2>&1 &
  pids+=($!); wait_up "$BASE/healthz"
  python3 "$here/seed.py" "$BASE" "$QMS_ADMIN_TOKEN" "$work" || { echo "seeding failed"; exit 2; }
}

if [ "$modes" = all ] || [ "$modes" = memory ]; then
  echo "== P1: memory mode"
  hp=$(port); "$work/hello" "127.0.0.1:$hp" >/dev/null 2>&1 & pids+=($!); wait_up "http://127.0.0.1:$hp/json"
  start_qms memory
  export BENCH_PATH="/api/v1/turns/$(cat "$work/turn.txt")"
  : >"$work/p1a"; : >"$work/p1b"
  for _ in $(seq 1 "$rounds"); do
    wrk_rps "$work/p1b" "http://127.0.0.1:$hp/json" >>"$work/p1b"
    wrk_rps "$work/p1a" -s "$here/get.lua" "$BASE" >>"$work/p1a"
  done
  a=$(median <"$work/p1a"); b=$(median <"$work/p1b")
  echo "P1 memory GET turn: $a req/s vs fiber hello-world $b req/s = $(ratio "$a" "$b")  [qms $(latency "$work/p1a")]"
fi

if [ "$modes" = all ] || [ "$modes" = postgres ]; then
  command -v pgbench >/dev/null || { echo "missing pgbench"; exit 2; }
  db="qms_ratios_$$" pgb="qms_ratios_pgb_$$"
  psql "$admin_url" -qc "CREATE DATABASE $db" -c "CREATE DATABASE $pgb" >/dev/null || exit 2
  trap 'cleanup; psql "$admin_url" -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)" -c "DROP DATABASE IF EXISTS $pgb WITH (FORCE)" >/dev/null 2>&1' EXIT
  base_url="${admin_url%/*}"; query="${admin_url#*\?}"; [ "$query" = "$admin_url" ] && query="" || query="?$query"
  export QMS_DATABASE_URL="$base_url/$db$query"
  pgb_url="$base_url/$pgb$query"
  pgbench -i -s 10 -q "$pgb_url" >/dev/null 2>&1 || { echo "pgbench -i failed"; exit 2; }
  psql "$pgb_url" -q -f "$here/pgbench-intake-init.sql" >/dev/null 2>&1
  QMS_STORAGE=postgres "$work/qms" migrate >/dev/null 2>&1 || { echo "qms migrate failed"; exit 2; }
  echo "== P2, P3: postgres mode"
  start_qms postgres
  export BENCH_PATH="/api/v1/turns/$(cat "$work/turn.txt")"
  for f in p2a p2b p3a p3b p3ha p3hb; do : >"$work/$f"; done
  for _ in $(seq 1 "$rounds"); do
    pgb_tps -S -c 8 -j 2 "$pgb_url" >>"$work/p2b"
    wrk_rps "$work/p2a" -s "$here/get.lua" "$BASE" >>"$work/p2a"
    pgb_tps -f "$here/pgbench-intake.sql" -c 16 -j 2 "$pgb_url" >>"$work/p3b"
    wrk_rps "$work/p3a" -s "$here/post.lua" "$BASE" >>"$work/p3a"
  done
  BENCH_HOT_RUN=$(head -n 1 "$work/runs.txt") wrk_rps "$work/p3ha" -s "$here/post.lua" "$BASE" >>"$work/p3ha"
  pgb_tps -f "$here/pgbench-intake-hot.sql" -c 16 -j 2 "$pgb_url" >>"$work/p3hb"
  a=$(median <"$work/p2a"); b=$(median <"$work/p2b")
  echo "P2 postgres GET turn: $a req/s vs pgbench -S $b tps = $(ratio "$a" "$b")  [qms $(latency "$work/p2a")]"
  a=$(median <"$work/p3a"); b=$(median <"$work/p3b")
  echo "P3 postgres POST turn (50 runs): $a req/s vs pgbench intake $b tps = $(ratio "$a" "$b")  [qms $(latency "$work/p3a")]"
  a=$(median <"$work/p3ha"); b=$(median <"$work/p3hb")
  echo "P3h postgres POST turn (one run): $a req/s vs pgbench intake on one run $b tps = $(ratio "$a" "$b")  [qms $(latency "$work/p3ha")]"
fi
echo "== load average: $(cut -d' ' -f1-3 /proc/loadavg)"
