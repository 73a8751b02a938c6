#!/usr/bin/env bash
# Overhead of `numakit daemon` with many processes: N sleeping processes
# (mostly small, as on a real host) plus BUSY busy ones above the candidate
# thresholds; the release daemon scans every second for SCANS scans; its own
# per-scan CPU time (CLOCK_THREAD_CPUTIME_ID around collect+decide+apply, from
# status.json) and its peak RSS (VmHWM) are reported. Targets (issue 8): one
# scan under 5 ms of CPU, RSS under 20 MB.
#
#   bench/daemon.sh                     # N=1000 BUSY=4 SCANS=30
#   NUMAKIT_BIN=path bench/daemon.sh    # an already built binary
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-1000}
BUSY=${BUSY:-4}
SCANS=${SCANS:-30}
if [ -z "${NUMAKIT_BIN:-}" ]; then
  cargo build --release -q -p numakit-cli -p numakit-testprogs
fi
BIN=${NUMAKIT_BIN:-$PWD/target/release/numakit}
HOLD=$(dirname "$BIN")/nk-hold
OUT=bench/results; mkdir -p "$OUT"
work=$(mktemp -d)
pids=()
cleanup() { [ ${#pids[@]} -eq 0 ] || kill "${pids[@]}" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

for _ in $(seq "$N"); do sleep 3600 & pids+=($!); done
for _ in $(seq "$BUSY"); do "$HOLD" --mib 400 --loop >/dev/null & pids+=($!); done
cat > "$work/c.toml" <<EOC
interval_min_s = 1
interval_max_s = 1
state_dir = "$work/state"
log = "$work/decisions.jsonl"
socket = "$work/d.sock"
[decide]
min_age_s = 5
EOC
sleep 2
echo "## $N sleeping + $BUSY busy processes, $(nproc) CPUs, $(ls -d /sys/devices/system/node/node[0-9]* | wc -l) node(s), $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
"$BIN" daemon --config "$work/c.toml" --scans "$SCANS" 2>"$work/err"
cp "$work/state/status.json" "$OUT/daemon-status.json"
python3 - "$OUT/daemon-status.json" <<'EOP'
import json, statistics, sys
s = json.load(open(sys.argv[1]))
c = s["counters"]
ms = list(c["recent_scan_cpu_ms"])[1:]   # the first scan has no rates yet
ms.sort()
p = lambda q: ms[min(len(ms) - 1, int(q * len(ms)))]
print(f"scans {c['scans']}, processes {c['processes']}, candidates {c['candidates']}")
print(f"CPU per scan (ms, scans 2..{c['scans']}): mean {statistics.mean(ms):.2f} ± {statistics.stdev(ms):.2f} (sd), "
      f"median {statistics.median(ms):.2f}, p95 {p(0.95):.2f}, max {ms[-1]:.2f}   target < 5")
print(f"wall per scan (ms, mean over all): {c['scan_wall_seconds_total'] / c['scans'] * 1e3:.2f}")
print(f"peak RSS (VmHWM): {c['peak_rss_bytes'] / 2**20:.1f} MiB   target < 20")
EOP
