#!/usr/bin/env bash
# Times `numakit topo --json` (and --hardware) beside `numactl --hardware` and
# `lstopo-no-graphics` on this machine and on the largest real-machine dump,
# with hyperfine (warm-up runs, many repetitions, mean ± stddev). Writes the
# hyperfine JSON to bench/results/ and prints a Markdown table to paste into
# docs/benchmarks.md.
#
#   bench/topo.sh            # needs: hyperfine numactl hwloc-nox (scripts/install-deps)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps >/dev/null
cargo build --release -q -p numakit-cli
BIN=$PWD/target/release/numakit
OUT=bench/results; mkdir -p "$OUT"
FX=../shared/fixtures/hwloc/tarballs
DUMP_NAME=${DUMP_NAME:-256ia64-64n2s2c}   # the most nodes (64) and CPUs (256) of the dumps
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
tar -xjf "$FX/$DUMP_NAME.tar.bz2" -C "$work"
DUMP=$(find "$work" -mindepth 1 -maxdepth 1 -type d | head -1)

echo "## this machine ($(nproc) CPUs, $(ls -d /sys/devices/system/node/node* | wc -l) node(s))"
hyperfine -N --warmup 20 --runs 300 --export-json "$OUT/topo-live.json" \
  "$BIN topo --json" "$BIN topo --hardware" "numactl --hardware" "lstopo-no-graphics --of xml"

echo "## dump $DUMP_NAME"
# numactl has no root option: run it in a private mount namespace with the
# dump's node and cpu folders bind-mounted over the live ones (needs root).
cat > "$work/numactl-dump.sh" <<EOS
#!/bin/sh
mount --bind "$DUMP/sys/devices/system/node" /sys/devices/system/node
mount --bind "$DUMP/sys/devices/system/cpu" /sys/devices/system/cpu
exec hyperfine -N --warmup 20 --runs 300 --export-json "$OUT/topo-dump-numactl.json" "numactl --hardware"
EOS
chmod +x "$work/numactl-dump.sh"
hyperfine -N --warmup 20 --runs 300 --export-json "$OUT/topo-dump.json" \
  "$BIN --sysroot $DUMP topo --json" "$BIN --sysroot $DUMP topo --hardware"
HWLOC_FSROOT=$DUMP HWLOC_COMPONENTS=linux,stop hyperfine -N --warmup 5 --runs 100 \
  --export-json "$OUT/topo-dump-lstopo.json" "lstopo-no-graphics --of xml"
unshare -m --propagation private "$work/numactl-dump.sh" || echo "(numactl on the dump needs root)"

python3 - "$OUT" <<'PY'
import json, sys, os
out = sys.argv[1]
def load(f):
    p = os.path.join(out, f)
    return {r["command"]: r for r in json.load(open(p))["results"]} if os.path.exists(p) else {}
rows = []
for label, f in (("live", "topo-live.json"), ("dump", "topo-dump.json"), ("dump", "topo-dump-lstopo.json"), ("dump", "topo-dump-numactl.json")):
    for cmd, r in load(f).items():
        rows.append((label, cmd.split("/")[-1] if cmd.startswith("/") else cmd, r["mean"]*1e3, r["stddev"]*1e3, len(r["times"])))
print("| root | command | mean ms | stddev ms | runs |\n|---|---|---|---|---|")
for r in rows:
    print(f"| {r[0]} | `{r[1]}` | {r[2]:.2f} | {r[3]:.2f} | {r[4]} |")
PY
