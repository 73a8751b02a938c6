#!/usr/bin/env bash
# `numakit bench latency` beside a plain C pointer chase (bench/chase.c), in
# interleaved pairs:
#
#   numakit bench latency --cpu-nodes 0 --mem-nodes 0 --size S --seed SEED --json
#                                                   (its defaults otherwise)
#   numactl -C CPU -m 0 chase S_MIB 20000000 SEED   (CPU: the one numakit chased on)
#
# bench/chase.c is the reference: a random cyclic permutation (Sattolo) of
# the 64-byte lines of an mmap'd buffer (4 KiB pages), first touched in
# address order, one warm cycle, then 20 million dependent loads timed.
# For each size, PAIRS pairs run one right after the other (which goes
# first alternates; pair k seeds both cycles with k + 1), so load that
# comes and goes hits both runs of a pair alike. A pair's ratio is
# numakit's ns per load over the chase's. Printed as a Markdown table per
# size: both medians, the median ratio with a distribution-free
# confidence interval (order statistics of the sign
# test: the k-th smallest and k-th largest ratio, k the largest with
# P(Binomial(n, 1/2) < k) <= 2.5%; the exact coverage is printed), and the
# lowest and highest ratio. The last columns set numakit beside the
# chase's figure from its thread CPU time (the time it was not running
# left out), with the same statistics.
#
#   bench/latency.sh [BIN]       BIN: the numakit binary (default: a release build here)
#   PAIRS=12 SIZES="16 64 256 1024" bench/latency.sh     # a quiet machine
#   RT=1 bench/latency.sh                                # a busy one
#
# Run it on a quiet machine without RT. RT=1 runs both tools under
# `chrt -f 1` (SCHED_FIFO, root only): on a busy machine other processes
# then cannot take the chasing CPU in the middle of a timed chase. But the
# kernel throttles real-time tasks to sched_rt_runtime_us of each second
# (950 ms by default), idle CPU or not: the chase's single run of several
# seconds then loses about 5% of its wall time (its CPU-time figure does
# not), while numakit's median of 100 ms repetitions mostly misses the
# pauses, so the wall-clock ratio comes out about 5% low. Without RT, a
# load above the CPU count inflates both tools' figures several times
# over, and unevenly, for the same reason.
#
# Sizes (MiB) that do not fit in what node 0 has free (MemFree and
# Inactive(file), as numakit bench counts it, with 25% to spare: each
# tool also holds the cycle's order, up to an eighth of the buffer) are
# skipped with a note. Needs a C compiler (cc, from build-essential),
# numactl, python3. The chase is compiled at each run into a temporary
# directory, removed at the end; raw pairs go to bench/results/latency/
# (not in git); the load average before and after goes to standard error.
set -euo pipefail
cd "$(dirname "$0")/.."
PAIRS=${PAIRS:-12}
RT=${RT:-0}
SIZES=${SIZES:-16 64 256 1024}
for t in cc numactl python3 $([ "$RT" = 1 ] && echo chrt); do
  command -v $t >/dev/null || { echo "latency.sh: $t is not installed" >&2; exit 1; }
done
if [ $# -ge 1 ]; then
  BIN=$(realpath "$1")
else
  cargo build --release -q -p numakit-cli
  BIN=${CARGO_TARGET_DIR:-$PWD/target}/release/numakit
fi
OUT=bench/results/latency
mkdir -p $OUT
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cc -O2 -Wall -Wextra -o "$TMP/chase" bench/chase.c
python3 - "$OUT" "$PAIRS" "$BIN" "$TMP/chase" "$RT" $SIZES <<'PY'
import json, math, os, platform, statistics, subprocess, sys, time

out, pairs, binary, chase = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
rt = ["chrt", "-f", "1"] if sys.argv[5] == "1" else []
sizes = [int(s) for s in sys.argv[6:]]

def numakit(mib, seed):
    o = subprocess.run(rt + [binary, "bench", "latency", "--cpu-nodes", "0", "--mem-nodes", "0",
                        "--size", f"{mib}M", "--seed", str(seed), "--json", "--quiet"],
                       check=True, capture_output=True, text=True).stdout
    r = json.loads(o)["results"][0]
    return r["ns"], r["cpu"]

def c_chase(mib, cpu, seed):
    o = subprocess.run(rt + ["numactl", f"--physcpubind={cpu}", "--membind=0", chase, str(mib), "20000000", str(seed)],
                       check=True, capture_output=True, text=True).stdout
    wall, cpu_time = (float(x) for x in o.split())
    return wall, cpu_time

def median_ci(values):
    """Median, and the sign test's interval from order statistics with its coverage."""
    v = sorted(values)
    n = len(v)
    cdf, k = 0.0, 0
    # k: the largest with P(B < k) <= 0.025, B ~ Binomial(n, 1/2).
    for i in range(n + 1):
        if cdf + math.comb(n, i) / 2 ** n > 0.025:
            k = i
            break
        cdf += math.comb(n, i) / 2 ** n
    if k == 0:
        return statistics.median(v), None, None, 0.0
    return statistics.median(v), v[k - 1], v[n - k], 1 - 2 * cdf

def free_mib():
    """MemFree + Inactive(file) of node 0, as numakit bench counts what a node has free."""
    kb = 0
    for line in open("/sys/devices/system/node/node0/meminfo"):
        if "MemFree:" in line or "Inactive(file):" in line:
            kb += int(line.split()[-2])
    return kb // 1024

cpu_model = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
thp = open("/sys/kernel/mm/transparent_hugepage/enabled").read().strip()
print(f"{cpu_model}; {os.cpu_count()} CPUs; kernel {platform.release()}; THP {thp}; "
      f"{pairs} pairs per size; {'SCHED_FIFO 1' if rt else 'normal scheduling'}\n")
print(f"load average before: {' '.join(open('/proc/loadavg').read().split()[:3])}", file=sys.stderr)
print("| size | numakit median ns | C chase median ns | ratio, median (CI, coverage) | ratio range "
      "| C chase CPU-time ns | ratio to it, median (CI) | pairs |")
print("|---:|---:|---:|---|---|---:|---|---:|")
for mib in sizes:
    if mib * 5 // 4 > free_mib():
        print(f"| {mib} MiB | skipped: node 0 has {free_mib()} MiB free | | | | | | |")
        continue
    got = []
    cpu = None
    for k in range(pairs):
        # Pair k: both cycles from seed k + 1 (each its own generator), so
        # the pairs average over cycles; which runs first alternates.
        if k % 2:  # the chase first; `cpu` is known from pair 0
            c, cc = c_chase(mib, cpu, k + 1)
            n, cpu = numakit(mib, k + 1)
        else:
            n, cpu = numakit(mib, k + 1)
            c, cc = c_chase(mib, cpu, k + 1)
        got.append((n, c, cc))
    with open(f"{out}/pairs-{mib}M.csv", "w") as f:
        f.write("numakit_ns,chase_ns,chase_cpu_ns\n")
        for n, c, cc in got:
            f.write(f"{n:.3f},{c:.3f},{cc:.3f}\n")
    ratios = [n / c for n, c, _ in got]
    med, lo, hi, cov = median_ci(ratios)
    ci = f"{lo:.3f}–{hi:.3f}, {cov:.1%}" if lo is not None else "too few pairs"
    by_cpu = [n / cc for n, _, cc in got]
    med2, lo2, hi2, _ = median_ci(by_cpu)
    ci2 = f"{lo2:.3f}–{hi2:.3f}" if lo2 is not None else "too few pairs"
    print(f"| {mib} MiB | {statistics.median(n for n, _, _ in got):.1f} | {statistics.median(c for _, c, _ in got):.1f} "
          f"| **{med:.3f}** ({ci}) | {min(ratios):.3f}–{max(ratios):.3f} "
          f"| {statistics.median(cc for _, _, cc in got):.1f} | {med2:.3f} ({ci2}) | {len(got)} |")
print(f"load average after: {' '.join(open('/proc/loadavg').read().split()[:3])}", file=sys.stderr)
PY
