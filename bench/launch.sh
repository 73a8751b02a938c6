#!/usr/bin/env bash
# Launch cost of numakit's drop-in paths beside the C tools they replace
# (issue 21 item 4: within 1.2x of numactl and numastat):
#
#   numakit run -N 0 -m 0 -- true   vs  numactl -N 0 -m 0 true
#   numakit numactl -H              vs  numactl -H
#   numakit stat --compat           vs  numastat
#   numakit --version               vs  /bin/true      (process start-up alone, for reference)
#
# Paired runs: ROUNDS rounds; in each, hyperfine (-N: no shell) runs the two
# commands of a pair back to back (RUNS runs each after warm-up), and the
# round's ratio is numakit's median wall time over the C tool's. Load that
# comes and goes hits both commands of a round alike; the median ratio over
# the rounds and its spread (min, quartiles, max) are printed as a Markdown
# table, with the same for CPU time (user + system), which other work on
# the machine shakes less than wall time.
#
#   bench/launch.sh [BIN]      BIN: the numakit binary (default: a release build here)
#   ROUNDS=15 RUNS=40 bench/launch.sh
#
# Raw hyperfine JSON goes to bench/results/launch/ (not in git).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-15}
RUNS=${RUNS:-40}
if [ $# -ge 1 ]; then
  BIN=$(realpath "$1")
else
  cargo build --release -q -p numakit-cli
  BIN=${CARGO_TARGET_DIR:-$PWD/target}/release/numakit
fi
for t in hyperfine numactl numastat python3; do
  command -v $t >/dev/null || { echo "launch.sh: $t is not installed" >&2; exit 1; }
done
OUT=bench/results/launch
mkdir -p $OUT
pairs=(
  "run|$BIN run -N 0 -m 0 -- true|numactl -N 0 -m 0 true"
  "numactl -H|$BIN numactl -H|numactl -H"
  "stat --compat|$BIN stat --compat|numastat"
  "--version|$BIN --version|/bin/true"
)
i=0
for p in "${pairs[@]}"; do
  IFS='|' read -r name ours theirs <<< "$p"
  for r in $(seq "$ROUNDS"); do
    hyperfine -N --style none --warmup 5 --runs "$RUNS" \
      --export-json "$OUT/pair$i-round$r.json" "$ours" "$theirs" > /dev/null
  done
  i=$((i + 1))
done
python3 - "$OUT" "$ROUNDS" "$BIN" "${pairs[@]}" <<'PY'
import json, statistics, sys
out, rounds, binary, pairs = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
def q(v, f):
    v = sorted(v); k = (len(v) - 1) * f; lo = int(k); hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)
print(f"binary: {binary}; {rounds} rounds per pair\n")
print("| numakit | C tool | numakit median ms | C tool median ms | wall ratio (median of rounds) | wall ratio min / q1 / q3 / max | CPU ratio (median of rounds) | CPU ratio q1 / q3 |")
print("|---|---|---|---|---|---|---|---|")
for i, p in enumerate(pairs):
    name, ours, theirs = p.split("|")
    ratios, cpu, a_med, b_med = [], [], [], []
    for r in range(1, rounds + 1):
        res = json.load(open(f"{out}/pair{i}-round{r}.json"))["results"]
        a, b = res[0]["median"], res[1]["median"]
        a_med.append(a); b_med.append(b); ratios.append(a / b)
        # CPU time (user + system, mean per run): what each process costs,
        # less shaken than wall time when other work shares the cores.
        cpu.append((res[0]["user"] + res[0]["system"]) / (res[1]["user"] + res[1]["system"]))
    short = lambda c: c.replace(binary, "numakit")
    print(f"| `{short(ours)}` | `{theirs}` | {statistics.median(a_med)*1e3:.2f} | {statistics.median(b_med)*1e3:.2f} "
          f"| **{statistics.median(ratios):.2f}** | {min(ratios):.2f} / {q(ratios,.25):.2f} / {q(ratios,.75):.2f} / {max(ratios):.2f} "
          f"| **{statistics.median(cpu):.2f}** | {q(cpu,.25):.2f} / {q(cpu,.75):.2f} |")
PY
