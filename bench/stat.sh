#!/usr/bin/env bash
# Cost of `numakit stat -p` and `numakit top` with many processes:
#   1. `numakit stat -p` over N sleeping processes beside `numastat -p` over
#      the same set (hyperfine: warm-up, repetitions, mean ± stddev, user and
#      system time); target: numakit no slower;
#   2. `numakit top --interval 2` in a tmux pane for SECS seconds with those
#      processes alive: its CPU time over wall time; target: under 5% of one
#      core.
# Writes hyperfine's JSON to bench/results/ and prints a Markdown table to
# paste into docs/stat.md.
#
#   bench/stat.sh                 # N=1000 SECS=60; needs hyperfine numactl tmux
#   N=200 SECS=20 bench/stat.sh   # quicker
#   NUMAKIT_BIN=path bench/stat.sh  # an already built binary
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-1000}
SECS=${SECS:-60}
if [ -z "${NUMAKIT_BIN:-}" ]; then
  scripts/install-deps >/dev/null
  cargo build --release -q -p numakit-cli
fi
BIN=${NUMAKIT_BIN:-$PWD/target/release/numakit}
for t in hyperfine numastat tmux; do command -v $t >/dev/null || { echo "bench/stat.sh: $t is missing" >&2; exit 2; }; done
OUT=bench/results; mkdir -p "$OUT"
work=$(mktemp -d)
sock=$work/tmux.sock
pids=()
cleanup() {
  tmux -S "$sock" kill-server 2>/dev/null || true
  [ ${#pids[@]} -eq 0 ] || kill "${pids[@]}" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

for _ in $(seq "$N"); do sleep 3600 & pids+=($!); done
PIDS="${pids[*]}"
echo "## $N sleeping processes, $(nproc) CPUs, $(ls -d /sys/devices/system/node/node[0-9]* | wc -l) node(s), $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"

# Both print one table of the N processes; check they agree first.
"$BIN" stat -p $PIDS > "$work/ours.txt"
numastat -p $PIDS > "$work/theirs.txt" 2>/dev/null || true
# (numakit's output is numastat's table, a blank line, then the locality section)
if diff -q <(awk '/^Locality/ { exit } { print }' "$work/ours.txt" | head -n -1) "$work/theirs.txt" >/dev/null; then
  echo "numakit's table equals numastat's"
else
  echo "note: numakit's table differs from numastat's (processes changed between the runs?)" >&2
fi
hyperfine -N --warmup 3 --runs "${RUNS:-20}" --export-json "$OUT/stat-p.json" \
  --command-name "numakit stat -p <$N pids>" "$BIN stat -p $PIDS" \
  --command-name "numastat -p <$N pids>" "numastat -p $PIDS"

# top: one tmux pane, refresh every 2 s.
tmux -S "$sock" -f /dev/null new-session -d -x 200 -y 50 "exec $BIN top --interval 2"
sleep 1
tpid=$(tmux -S "$sock" display -p '#{pane_pid}')
ticks() { awk '{ print $14 + $15 }' "/proc/$tpid/stat"; }
sleep 4   # past start-up
t0=$(ticks); s0=$(date +%s.%N)
sleep "$SECS"
t1=$(ticks); s1=$(date +%s.%N)
hz=$(getconf CLK_TCK)
top_pct=$(awk -v a="$t0" -v b="$t1" -v hz="$hz" -v s0="$s0" -v s1="$s1" 'BEGIN { printf "%.2f", (b - a) / hz / (s1 - s0) * 100 }')
echo "{\"processes\": $N, \"seconds\": $(awk -v a="$s0" -v b="$s1" 'BEGIN{print b-a}'), \"cpu_ticks\": $((t1 - t0)), \"clk_tck\": $hz, \"cpu_percent_of_one_core\": $top_pct}" > "$OUT/top-cpu.json"

python3 - "$OUT" "$N" <<'PY'
import json, sys, os
out, n = sys.argv[1], int(sys.argv[2])
r = json.load(open(os.path.join(out, "stat-p.json")))["results"]
print(f"\n| command | wall mean ms | stddev ms | min ms | user ms | system ms | CPU ms | runs |\n|---|---|---|---|---|---|---|---|")
for x in r:
    cpu = (x['user'] + x['system']) * 1e3
    print(f"| `{x['command']}` | {x['mean']*1e3:.1f} | {x['stddev']*1e3:.1f} | {x['min']*1e3:.1f} | {x['user']*1e3:.1f} | {x['system']*1e3:.1f} | {cpu:.1f} | {len(x['times'])} |")
t = json.load(open(os.path.join(out, "top-cpu.json")))
print(f"\n`numakit top --interval 2` with {t['processes']} extra processes: {t['cpu_ticks']} ticks "
      f"({t['clk_tck']}/s) in {t['seconds']:.1f} s = **{t['cpu_percent_of_one_core']}% of one core**")
PY
