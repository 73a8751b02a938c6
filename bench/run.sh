#!/usr/bin/env bash
# Launch overhead: `numakit run -N 0 -- true` beside `numactl -N 0 true`
# (hyperfine, warm-up runs, mean ± stddev). Target: numakit no more than
# 1.2x numactl's wall time (the launch path reads only nodes, no full
# topology scan). Writes bench/results/run.json and prints a Markdown table.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps >/dev/null
cargo build --release -q -p numakit-cli
BIN=$PWD/target/release/numakit
mkdir -p bench/results
hyperfine -N --warmup 30 --runs 500 --export-json bench/results/run.json \
  "$BIN run -N 0 -- true" "numactl -N 0 true" "$BIN run -N 0 -m 0 -- true" "numactl -N 0 -m 0 true"
python3 - <<'PY'
import json
r = {x["command"].split("/")[-1]: x for x in json.load(open("bench/results/run.json"))["results"]}
print("| command | mean ms | stddev ms | median ms | runs |\n|---|---|---|---|---|")
for c, x in r.items():
    print(f"| `{c}` | {x['mean']*1e3:.3f} | {x['stddev']*1e3:.3f} | {x['median']*1e3:.3f} | {len(x['times'])} |")
a = r["numakit run -N 0 -- true"]["mean"]; b = r["numactl -N 0 true"]["mean"]
print(f"\nratio numakit/numactl (-N 0): {a/b:.2f}")
PY
