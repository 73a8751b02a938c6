#!/usr/bin/env bash
# What the SPANK plugin adds to a job step: `srun /bin/true` timed RUNS times
# with hyperfine against one test Slurm on this machine (numakit_testbed's, the
# one the tests use), with plugstack.conf empty and with the plugin (release
# build) at the site default MODE, so every task is placed (and recorded in a
# ledger on tmpfs, LEDGER; no daemon). The two commands
# alternate in ROUNDS rounds so drift hits both alike. Prints the median and
# spread (quartiles, min, max) of each and the difference of the medians,
# which issue 20 wants at most 5 ms; writes the samples to bench/results/.
#
#   bench/slurm.sh                   # needs root, hyperfine, Slurm (scripts/install-deps)
#   RUNS=100 ROUNDS=4 MODE=auto LEDGER=/run/numakit/jobs bench/slurm.sh
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-100}
ROUNDS=${ROUNDS:-4}
MODE=${MODE:-auto}
command -v hyperfine >/dev/null || { echo "slurm.sh: hyperfine is needed (scripts/install-deps)" >&2; exit 2; }
cargo build --release -q -p numakit-spank
cargo build --release -q -p numakit-testbed --example slurm-up
TARGET=${CARGO_TARGET_DIR:-$PWD/target}/release
PLUGIN=$TARGET/libnumakit_spank.so
OUT=bench/results; mkdir -p "$OUT"
work=$(mktemp -d)

coproc UP { exec "$TARGET/examples/slurm-up"; }
up_pid=$UP_PID
trap 'exec {UP[1]}>&-; wait "$up_pid" 2>/dev/null; rm -rf "$work" "${LEDGER_TMP:-}"' EXIT
read -r line <&"${UP[0]}" || { echo "slurm.sh: the test Slurm did not start" >&2; exit 1; }
export SLURM_CONF=${line#SLURM_CONF=}
STACK=$(dirname "$SLURM_CONF")/plugstack.conf
: > "$work/without"
SITE=$(dirname "$SLURM_CONF")
# The ledger where a host has it, on tmpfs (/run on Debian); /dev/shm here, as
# /run may be a disk in a container, and each placement fsyncs its entry.
[ -n "${LEDGER:-}" ] || { LEDGER=$(mktemp -d /dev/shm/numakit-bench-ledger.XXXXXX); LEDGER_TMP=$LEDGER; }
echo "required $PLUGIN default=$MODE ledger=$LEDGER socket=$SITE/no-daemon.sock" > "$work/with"

per=$(( (RUNS + ROUNDS - 1) / ROUNDS ))
for r in $(seq 1 "$ROUNDS"); do
  hyperfine -N --warmup 3 --runs "$per" --export-json "$work/round$r.json" \
    --prepare "cp $work/without $STACK" --prepare "cp $work/with $STACK" \
    --command-name without --command-name "with --numa=$MODE" \
    "srun /bin/true" "srun /bin/true" >"$work/hyperfine.log" 2>&1 \
    || { cat "$work/hyperfine.log" >&2; exit 1; }
done
grep -q "numakit: slurm job .* $MODE: cpus " "$(dirname "$SLURM_CONF")/log/slurmd.log" \
  || { echo "slurm.sh: the plugin placed no task (see slurmd.log)" >&2; exit 1; }

python3 - "$work" "$OUT/slurm.json" <<'PY'
import glob, json, statistics, sys
work, out = sys.argv[1], sys.argv[2]
times = {}
for f in sorted(glob.glob(f"{work}/round*.json")):
    for r in json.load(open(f))["results"]:
        times.setdefault(r["command"], []).extend(t * 1000 for t in r["times"])
json.dump({k: v for k, v in times.items()}, open(out, "w"))
print("| srun /bin/true | runs | median ms | quartiles ms | min–max ms |")
print("|---|---:|---:|---:|---:|")
med = {}
for name, ts in times.items():
    q = statistics.quantiles(ts, n=4)
    med[name] = statistics.median(ts)
    print(f"| {name} | {len(ts)} | {med[name]:.1f} | {q[0]:.1f}–{q[2]:.1f} | {min(ts):.1f}–{max(ts):.1f} |")
names = list(med)
delta = med[names[1]] - med[names[0]]
print(f"\nthe plugin adds {delta:+.1f} ms to the median (issue 20: at most 5 ms)")
PY
