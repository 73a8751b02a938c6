#!/usr/bin/env bash
# Launch cost of numakit's drop-in paths beside the C tools they replace
# (issue 21 item 4: within 1.2x of numactl and numastat):
#
#   numakit run -N 0 -- true        vs  numactl -N 0 true
#   numakit run -N 0 -m 0 -- true   vs  numactl -N 0 -m 0 true
#   numakit numactl -H              vs  numactl -H
#   numakit stat --compat           vs  numastat
#   numakit --version               vs  /bin/true      (process start-up alone, for reference)
#
# and numakit run through the compatibility links an administrator may put
# first in PATH (/usr/lib/numakit/compat; here links in a temporary folder):
#
#   numastat (link)                 vs  numastat
#   numactl -H (link)               vs  numactl -H
#
# Paired runs, in ROUNDS rounds per row. A round first drops both
# executables from the page cache (posix_fadvise) and has WARMUP runs of
# each read them back: how a binary's pages came into the cache changes
# its start-up by a few percent (page faults of one numakit binary ranged
# from 129 to 149 over reads), so each round draws that state afresh.
# Then PAIRS times numakit's command and the C tool's run one right after
# the other (which goes first alternates), each started with posix_spawn
# with its output to /dev/null. A pair's ratio is numakit's time over the
# C tool's, for wall time (spawn to reaped) and for CPU time (the child's
# user + system time from wait4); load that comes and goes hits both runs
# of a pair alike. Printed as a Markdown table: the median ratio over all
# pairs with a distribution-free 95% confidence interval (order statistics
# of the binomial), the lowest and highest round's median (the spread from
# the page cache), and each command's median milliseconds.
#
#   bench/launch.sh [BIN]      BIN: the numakit binary (default: a release build here)
#   ROUNDS=5 PAIRS=400 WARMUP=20 bench/launch.sh
#
# Raw per-pair times go to bench/results/launch/ (not in git).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}
PAIRS=${PAIRS:-400}
WARMUP=${WARMUP:-20}
if [ $# -ge 1 ]; then
  BIN=$(realpath "$1")
else
  cargo build --release -q -p numakit-cli
  BIN=${CARGO_TARGET_DIR:-$PWD/target}/release/numakit
fi
for t in numactl numastat python3; do
  command -v $t >/dev/null || { echo "launch.sh: $t is not installed" >&2; exit 1; }
done
OUT=bench/results/launch
mkdir -p $OUT
LINKS=$(mktemp -d)
trap 'rm -rf "$LINKS"' EXIT
ln -s "$BIN" "$LINKS/numastat"
ln -s "$BIN" "$LINKS/numactl"
python3 - "$OUT" "$ROUNDS" "$PAIRS" "$WARMUP" "$BIN" "$LINKS" <<'PY'
import math, os, shutil, statistics, sys, time

out, rounds, pairs, warmup = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
binary, links = sys.argv[5], sys.argv[6]
# (what the table calls numakit's command, its argv, the C tool's command line)
cases = [(f"numakit {a}", [binary] + a.split(), c) for a, c in [
    ("run -N 0 -- true", "numactl -N 0 true"),
    ("run -N 0 -m 0 -- true", "numactl -N 0 -m 0 true"),
    ("numactl -H", "numactl -H"),
    ("stat --compat", "numastat"),
    ("--version", "/bin/true"),
]] + [
    ("numastat (link)", [f"{links}/numastat"], "numastat"),
    ("numactl -H (link)", [f"{links}/numactl", "-H"], "numactl -H"),
]
devnull = [(os.POSIX_SPAWN_OPEN, 1, "/dev/null", os.O_WRONLY, 0)]

def run(argv):
    """Wall ms (spawn to reaped) and CPU ms (user + system) of one run."""
    t0 = time.perf_counter_ns()
    pid = os.posix_spawn(argv[0], argv, os.environ, file_actions=devnull)
    _, status, ru = os.wait4(pid, 0)
    wall = (time.perf_counter_ns() - t0) / 1e6
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"launch.sh: {' '.join(argv)} exited with {os.waitstatus_to_exitcode(status)}")
    return wall, (ru.ru_utime + ru.ru_stime) * 1e3

def median_ci(values):
    """Median and its 95% confidence interval from order statistics."""
    v = sorted(values)
    n = len(v)
    half = 1.96 * math.sqrt(n) / 2
    lo, hi = max(0, math.floor(n / 2 - half)), min(n - 1, math.ceil(n / 2 + half))
    return statistics.median(v), v[lo], v[hi]

def uncache(path):
    """Drops a file's clean, unmapped pages from the page cache."""
    fd = os.open(os.path.realpath(path), os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)

print(f"binary: {binary}; {rounds} rounds of {pairs} pairs per row, "
      f"{warmup} warm-up runs of each command per round\n")
print("| numakit | C tool | numakit median ms | C tool median ms "
      "| wall ratio, median (95% CI) | rounds' medians | CPU ratio, median (95% CI) | rounds' medians |")
print("|---|---|---|---|---|---|---|---|")
for i, (ours, a, theirs) in enumerate(cases):
    b = theirs.split()
    b[0] = shutil.which(b[0])
    rows, wall_rounds, cpu_rounds = [], [], []
    for r in range(rounds):
        uncache(a[0]), uncache(b[0])
        for _ in range(warmup):
            run(a), run(b)
        got = []
        for k in range(pairs):
            if k % 2:
                y = run(b); x = run(a)
            else:
                x = run(a); y = run(b)
            got.append((x, y))
        wall_rounds.append(statistics.median(x[0] / y[0] for x, y in got))
        cpu_rounds.append(statistics.median(x[1] / y[1] for x, y in got if y[1] > 0))
        rows += got
    with open(f"{out}/pair{i}.csv", "w") as f:
        f.write("numakit_wall_ms,numakit_cpu_ms,c_wall_ms,c_cpu_ms\n")
        for x, y in rows:
            f.write(f"{x[0]:.4f},{x[1]:.4f},{y[0]:.4f},{y[1]:.4f}\n")
    wall = median_ci([x[0] / y[0] for x, y in rows])
    # CPU time is accounted in whole microseconds; a run reported as 0 has no ratio.
    cpu = median_ci([x[1] / y[1] for x, y in rows if y[1] > 0])
    print(f"| `{ours}` | `{theirs}` "
          f"| {statistics.median(x[0] for x, _ in rows):.2f} | {statistics.median(y[0] for _, y in rows):.2f} "
          f"| **{wall[0]:.2f}** ({wall[1]:.2f}–{wall[2]:.2f}) | {min(wall_rounds):.2f}–{max(wall_rounds):.2f} "
          f"| **{cpu[0]:.2f}** ({cpu[1]:.2f}–{cpu[2]:.2f}) | {min(cpu_rounds):.2f}–{max(cpu_rounds):.2f} |")
PY
