#!/usr/bin/env bash
# What a 200-rule policy adds to a job start (issue 39: at most 1 ms), where
# the policy is read: the Slurm plugin in slurmstepd and the PBS job starter.
#
# The policy: 199 rules that a test job does not match, every one of them
# looked at (partition and name patterns, CPU and memory ranges), then a
# rule for every job, mode=auto with a 5% holdout drawn with a private key
# (the key read, the holdout drawn, the arm tagged in the ledger: the whole
# path), and a guard file of 50 guards. Release builds.
#
#   plugin:  srun /bin/true, plugstack.conf with the plugin at default=auto
#            and the site's experiment (experiment=, arms=, key=: the job's
#            arm drawn with the key and tagged in the ledger), against the
#            same with policy= and guard= instead (hyperfine, ROUNDS rounds
#            alternating, RUNS runs each)
#   wrapper: the PBS job starter around /bin/true with NUMAKIT_EXPERIMENT,
#            against the same with NUMAKIT_POLICY and NUMAKIT_GUARD
#
# Both sides take the same path (key read, draw, ledger tag), so the
# difference is the policy's own: reading and parsing the files, matching
# 200 rules. Prints each command's median and quartiles and the difference
# of the medians; samples to bench/results/policy-*.json (not in git).
#
#   bench/policy.sh           # needs root, hyperfine, Slurm (scripts/install-deps)
#   RUNS=200 ROUNDS=4 bench/policy.sh
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-200}
ROUNDS=${ROUNDS:-4}
command -v hyperfine >/dev/null || { echo "policy.sh: hyperfine is needed (scripts/install-deps)" >&2; exit 2; }
cargo build --release -q -p numakit-cli -p numakit-spank
cargo build --release -q -p numakit-testbed --example slurm-up
TARGET=${CARGO_TARGET_DIR:-$PWD/target}/release
OUT=bench/results; mkdir -p "$OUT"
work=$(mktemp -d)
LEDGER=$(mktemp -d /dev/shm/numakit-bench-ledger.XXXXXX)

head -c 32 /dev/urandom > "$work/key"; chmod 600 "$work/key"
{
  echo "defaults key=$work/key cluster=bench holdout=5%"
  for i in $(seq 1 199); do
    echo "rule c$i partition=p$i,q$i name=job${i}_*,run$i* cpus=$((i % 8 + 2))- mem=$((i))G- mode=auto"
  done
  echo "rule rest mode=auto"
} > "$work/policy"
for i in $(seq 1 50); do echo "guard class=c$i arm=auto"; done > "$work/guards"
"$TARGET/numakit" policy check "$work/policy" | head -1

# Runs `hyperfine` over two commands in ROUNDS rounds; $1 the name.
pair() {
  local name=$1; shift
  local per=$(( (RUNS + ROUNDS - 1) / ROUNDS ))
  for r in $(seq 1 "$ROUNDS"); do
    hyperfine -N --warmup 5 --runs "$per" --export-json "$work/$name.$r.json" "$@" >"$work/hyperfine.log" 2>&1 \
      || { cat "$work/hyperfine.log" >&2; exit 1; }
  done
}

# The wrapper: the PBS job starter, its environment as pbs_mom gives it.
cat > "$work/job.sh" <<EOF
#!/bin/sh
export PATH=/usr/bin:/bin NUMAKIT=$TARGET/numakit NUMAKIT_WAIT=0 NUMAKIT_SOCKET=/nonexistent.sock
export NUMAKIT_RUN_ARGS="--sample 0 --ledger $LEDGER" PBS_JOBID=\$\$.bench PBS_NUM_PPN=1
case \${1-} in
  policy) export NUMAKIT_POLICY=$work/policy NUMAKIT_GUARD=$work/guards;;
  *) export NUMAKIT_EXPERIMENT="experiment=site arms=auto:19,none:1 key=$work/key cluster=bench";;
esac
exec /bin/sh $PWD/contrib/batch/pbs-job-starter /bin/true
EOF
chmod +x "$work/job.sh"
pair wrapper --command-name "wrapper, site experiment" --command-name "wrapper, 200-rule policy" \
  "$work/job.sh experiment" "$work/job.sh policy"

# The plugin, in the tests' Slurm on this machine.
coproc UP { exec "$TARGET/examples/slurm-up"; }
up_pid=$UP_PID
trap 'exec {UP[1]}>&-; wait "$up_pid" 2>/dev/null; rm -rf "$work" "$LEDGER"' EXIT
read -r line <&"${UP[0]}" || { echo "policy.sh: the test Slurm did not start" >&2; exit 1; }
export SLURM_CONF=${line#SLURM_CONF=}
STACK=$(dirname "$SLURM_CONF")/plugstack.conf
SITE=$(dirname "$SLURM_CONF")
base="required $TARGET/libnumakit_spank.so default=auto ledger=$LEDGER socket=$SITE/no-daemon.sock"
echo "$base experiment=site arms=auto:19,none:1 key=$work/key cluster=bench" > "$work/stack-experiment"
echo "$base policy=$work/policy guard=$work/guards" > "$work/stack-policy"
pair plugin --prepare "cp $work/stack-experiment $STACK" --prepare "cp $work/stack-policy $STACK" \
  --command-name "plugin, site experiment" --command-name "plugin, 200-rule policy" "srun /bin/true" "srun /bin/true"
grep -q "class rest: experiment holdout.rest" "$SITE/log/slurmd.log" \
  || { echo "policy.sh: the plugin did not apply the policy (see $SITE/log/slurmd.log)" >&2; exit 1; }

python3 - "$work" "$OUT" <<'PY'
import glob, json, statistics, sys
work, out = sys.argv[1], sys.argv[2]
for kind in ("wrapper", "plugin"):
    times = {}
    for f in sorted(glob.glob(f"{work}/{kind}.*.json")):
        for r in json.load(open(f))["results"]:
            times.setdefault(r["command"], []).extend(t * 1000 for t in r["times"])
    json.dump(times, open(f"{out}/policy-{kind}.json", "w"))
    print(f"| {kind} | runs | median ms | quartiles ms |")
    print("|---|---:|---:|---:|")
    med = {}
    for name, ts in times.items():
        q = statistics.quantiles(ts, n=4)
        med[name] = statistics.median(ts)
        print(f"| {name} | {len(ts)} | {med[name]:.2f} | {q[0]:.2f}–{q[2]:.2f} |")
    a, b = list(med.values())
    print(f"\na 200-rule policy adds {b - a:+.2f} ms to the {kind}'s median job start (issue 39: at most 1 ms)\n")
PY
