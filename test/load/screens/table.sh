#!/usr/bin/env bash
# `make load-screens`: run.sh for each mode and N, then the table of docs/scaling.md (issue 32) from the reports.
#
#   table.sh PROJECT_DIR "memory postgres" "1000 5000 10000" [extra client flags]
# Each run's full report is kept in $SCREENS_OUT (default: a fresh folder under /tmp), named MODE-N.txt.
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
project="${1:-.}"; modes="${2:-memory postgres}"; sizes="${3:-1000 5000 10000}"; shift $(( $# >= 3 ? 3 : $# ))
out="${SCREENS_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/qms-screens.XXXXXX")}"; mkdir -p "$out"
for mode in $modes; do
  for n in $sizes; do
    echo "== $mode $n" >&2
    "$here/run.sh" "$project" "$mode" "$n" "$@" >"$out/$mode-$n.txt" 2>&1
  done
done
echo "reports in $out" >&2
echo "| mode, N | RSS idle (per stream) → after calls | idle CPU | call → ticket p50 / p99 | call → board p99 | missed / dup | storm: back in, not connected, 5xx | fds after storm |"
echo "|---|---|---|---|---|---|---|---|"
for mode in $modes; do
  for n in $sizes; do
    f="$out/$mode-$n.txt"
    python3 - "$f" "$mode" "$n" <<'PY'
import re, sys
f, mode, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
t = open(f).read()
def g(p, d="?"):
    m = re.search(p, t)
    return m.group(1) if m else d
base = int(g(r"setup done in [\d.]+s: \d+ turns\+links, RSS=(\d+) KB", "0"))
idle = int(g(r"IDLE with streams: server RSS=(\d+) KB", "0"))
streams = int(g(r"opened (\d+) streams", "0")) or 1
per = (idle - base) / streams if idle and base else 0
after = g(r"CALLS done: .*? RSS=(\d+) KB")
cpu = g(r"IDLE with streams: .*? CPU=([\d.]+)%")
tp50, tp99 = g(r"call-answer -> ticket stream: .*?p50=([-\d.]+)ms"), g(r"call-answer -> ticket stream: .*?p99=([-\d.]+)ms")
bp99 = g(r"call-answer -> board stream: .*?p99=([-\d.]+)ms")
miss, dup = g(r"events missed=(\d+)"), g(r"\(dups=(\d+)\)")
back, nc = g(r"reopened \(first frame\) ([\d.]+)s"), g(r"not connected=(\d+) ")
codes = g(r"HTTP statuses=map\[([^\]]*)\]", "")
fivexx = sum(int(c.split(":")[1]) for c in codes.split() if c.split(":")[0].startswith("5"))
fds = g(r"STORM after \+15s: .*? fds=(\d+)")
print(f"| {mode}, {n:,} | {idle/1024:.0f} MB ({per:.1f} KB) → {int(after)/1024 if after!='?' else 0:.0f} MB | {cpu} % | {tp50} / {tp99} ms | {bp99} ms | {miss} / {dup} | {back} s, {nc}, {fivexx} | {fds} |")
PY
  done
done
