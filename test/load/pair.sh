#!/usr/bin/env bash
# pair.sh DIR_A DIR_B [ROUNDS] [SECS]: two builds of qms serving at once in memory mode (seeded like the ratios), wrk
# -t2 -c64 on P1's GET of A then B for SECS (1) each, ROUNDS (5) times; prints each one's µs of CPU per request over all
# its bursts. Both see the same moments of a shared machine, which runs of one build after the other do not
# (docs/scaling.md, "Issue 30, fourth session: the memory GET").
set -u
a=$(cd "$1" && pwd) b=$(cd "$2" && pwd) rounds=${3:-5} secs=${4:-1}
here=$a/test/load
work=$(mktemp -d /tmp/pair.XXXXXX)
export QMS_ADMIN_TOKEN="bench-$(python3 -c 'import secrets; print(secrets.token_hex(16))')"
export QMS_WEBHOOKS_SECRET_KEY="$(python3 -c 'import secrets; print(secrets.token_hex(24))')"
export QMS_RATELIMIT_PER_MINUTE=1000000000
declare -A pid port path
for n in A B; do
  d=$a; [ $n = B ] && d=$b
  mkdir -p $work/$n
  (cd "$d" && go build -o "$work/$n/qms" ./cmd/qms) || exit 2
  port[$n]=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  QMS_HTTP_ADDR=127.0.0.1:${port[$n]} QMS_STORAGE=memory "$work/$n/qms" serve >"$work/$n/qms.log" 2>&1 &
  pid[$n]=$!
done
for n in A B; do
  for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:${port[$n]}/healthz" >/dev/null && break; sleep 0.2; done
  BENCH_DIR=$work/$n python3 "$here/seed.py" "http://127.0.0.1:${port[$n]}" "$QMS_ADMIN_TOKEN" "$work/$n" >/dev/null || exit 2
  path[$n]="/api/v1/turns/$(cat "$work/$n/turn.txt")"
done
ticks() { awk '{print $14+$15}' /proc/$1/stat; }
declare -A t r
t[A]=0; t[B]=0; r[A]=0; r[B]=0
for n in A B; do BENCH_DIR=$work/$n BENCH_PATH=${path[$n]} wrk -t2 -c64 -d1s -s "$here/get.lua" "http://127.0.0.1:${port[$n]}" >/dev/null 2>&1; done
for i in $(seq 1 $rounds); do
  for n in A B; do
    q0=$(ticks ${pid[$n]})
    out=$(BENCH_DIR=$work/$n BENCH_PATH=${path[$n]} wrk -t2 -c64 -d${secs}s -s "$here/get.lua" "http://127.0.0.1:${port[$n]}" 2>&1)
    q1=$(ticks ${pid[$n]})
    t[$n]=$((t[$n] + q1 - q0)); r[$n]=$((r[$n] + $(echo "$out" | awk '/requests in/ {print $1}')))
  done
done
kill ${pid[A]} ${pid[B]}; wait 2>/dev/null
hz=$(getconf CLK_TCK)
for n in A B; do awk -v n=$n -v t=${t[$n]} -v r=${r[$n]} -v hz=$hz 'BEGIN { printf "%s %.2f µs/req (%d requests) ", n, t*1e6/hz/r, r }'; done; echo
rm -rf $work
