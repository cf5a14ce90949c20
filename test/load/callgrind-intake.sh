#!/usr/bin/env bash
# callgrind-intake.sh SEED_URL SCRIPT[:SETUP] ...
#
# PostgreSQL's instructions per intake for pgbench replays of the intake (pgbench-intake-qms.sql and its
# variants), counted rather than timed: CPU time per intake moves by ±10 % between identical runs on the shared
# machine, instructions repeat to 0.1 %. A private PostgreSQL cluster (initdb in a temporary directory, a Unix
# socket, the CI server untouched) runs under `valgrind --tool=callgrind`; SEED_URL's database (one that
# cpu_per_req.sh or ratios.sh seeded; copied with pg_dump) is its template. Each SCRIPT runs on a fresh copy,
# after SETUP (an SQL file, the variant's schema) if given, on one connection, -M prepared, N1 then N2 intakes
# (CG_N1=300, CG_N2=900); the slope (instructions(N2) - instructions(N1)) / (N2 - N1) leaves out the
# connection's start and the first plans. Prints each script's slope and its WAL records per intake
# (pg_walinspect, N1 intakes). Takes a few minutes; PG_BIN (/usr/lib/postgresql/15/bin) names the binaries.
set -eu
seed=$1; shift
n1=${CG_N1:-300} n2=${CG_N2:-900}
bin=${PG_BIN:-/usr/lib/postgresql/15/bin}
work=$(mktemp -d /tmp/cg-intake.XXXXXX)
chmod 755 "$work"
as_pg() { if [ "$(id -u)" = 0 ]; then su postgres -c "$1"; else sh -c "$1"; fi; }
[ "$(id -u)" = 0 ] && chown postgres "$work"
port=55400
as_pg "$bin/initdb -D $work/data -A trust -U postgres >$work/initdb.log 2>&1"
cat >>"$work/data/postgresql.conf" <<EOF
autovacuum = off
listen_addresses = ''
unix_socket_directories = '$work'
port = $port
shared_buffers = 128MB
TimeZone = 'Etc/UTC'
max_connections = 20
EOF
as_pg "cd $work && valgrind --tool=callgrind --callgrind-out-file=$work/cg.%p $bin/postgres -D $work/data >$work/vg.log 2>&1 &"
# The cluster and its callgrind outputs go with the script's end unless CG_KEEP=1 (then in $work).
stop() {
  as_pg "$bin/pg_ctl -D $work/data stop -m fast -w" >/dev/null 2>&1 || true
  [ "${CG_KEEP:-0}" = 1 ] && echo "kept $work" >&2 || rm -rf "$work"
}
trap stop EXIT
H="-h $work -p $port -U postgres"
for _ in $(seq 1 120); do psql $H -d postgres -Atc 'SELECT 1' >/dev/null 2>&1 && break; sleep 1; done
psql $H -d postgres -qc 'CREATE DATABASE seed'
pg_dump "$seed" | psql $H -d seed -q >/dev/null
psql $H -d seed -qc 'CREATE TABLE IF NOT EXISTS bench_runs AS SELECT (row_number() OVER (ORDER BY id))::int - 1 AS i,
  id AS run, account_id AS acc, queue_id AS que FROM queue_runs' 2>/dev/null
psql $H -d seed -qc 'CREATE EXTENSION IF NOT EXISTS pg_walinspect'

# run SCRIPT SETUP N: instructions of the replay's backend over N intakes on a fresh copy (the largest output
# file the replay made: its one connection's backend).
run() {
  local db=cg_$RANDOM
  psql $H -d postgres -qc "CREATE DATABASE $db TEMPLATE seed"
  [ -n "$2" ] && psql $H -d $db -q -f "$2" >/dev/null
  sleep 3 # the backends of the psql sessions above write their outputs as they exit
  ls "$work" >"$work/before"
  local l0; l0=$(psql $H -d $db -Atc 'SELECT pg_current_wal_flush_lsn()')
  pgbench $H -n -M prepared -c 1 -t "$3" -f "$1" -D nul=x -D pad=3 -D "since=2026-01-01 00:00:00+00" \
    -D "now=2026-01-01 00:05:00+00" -D hash=0123abcd -D 'removed={}' -D 'data={"number":1,"status":"WAITING"}' \
    "$db" >"$work/pgbench.out" 2>&1 || { cat "$work/pgbench.out" >&2; exit 2; }
  wal=$(psql $H -d $db -Atc "SELECT round(count(*)::numeric / $3, 2) FROM pg_get_wal_records_info('$l0', pg_current_wal_flush_lsn())")
  sleep 2
  instr=0
  for f in $(ls "$work" | grep '^cg\.' | grep -vxFf "$work/before"); do
    t=$(awk '/^(totals|summary):/ {print $2; exit}' "$work/$f")
    [ -n "$t" ] && [ "$t" -gt "$instr" ] && instr=$t
  done
  psql $H -d postgres -qc "DROP DATABASE $db"
}
for arg in "$@"; do
  script=${arg%%:*} setup=""
  [ "$script" != "$arg" ] && setup=${arg#*:}
  run "$script" "$setup" "$n1"; i1=$instr w1=$wal
  run "$script" "$setup" "$n2"; i2=$instr
  echo "$(basename "$script") instructions/intake $(((i2 - i1) / (n2 - n1))) (N=$n1: $i1, N=$n2: $i2) WAL records/intake $w1"
done
