#!/usr/bin/env bash
# Measures `numakit report` at scale (issue 28, item 6): ten million step
# lines, a farm of 100,000 jobs a day for 100 days (1,000 hosts of two
# hardware keys, one line per job, records of realistic size written by the
# library's own StepOutcome), generated once by numakit-report's synth_farm
# example into $INPUT_DIR (about 10.6 GB plain; with GZIP=1 also a gzip copy,
# `gzip -1`, about 1.4 GB). Then runs
#
#   /usr/bin/time -v numakit report FILE > /dev/null
#
# RUNS times per input and prints the elapsed time, user and system CPU,
# peak RSS and the load average before each run, as a Markdown table
# (raw lines in bench/results/report.tsv, not in git). Targets: at most 60 s
# and 1 GiB peak RSS on the 2-core development machine.
#
#   heavy bench/report.sh                    # RUNS=3, plain input
#   GZIP=1 RUNS=2 heavy bench/report.sh      # also the gzip input
#   INPUT_DIR=/big/disk heavy bench/report.sh
#   NUMAKIT_BIN=path SYNTH_BIN=path bench/report.sh
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-3}
INPUT_DIR=${INPUT_DIR:-bench/results/report-input}
JOBS=${JOBS:-10000000}
DAYS=${DAYS:-100}
if [ -z "${NUMAKIT_BIN:-}" ] || [ -z "${SYNTH_BIN:-}" ]; then
  cargo build --release -q -p numakit-cli
  cargo build --release -q -p numakit-report --example synth_farm
fi
TARGET=${CARGO_TARGET_DIR:-$PWD/target}
BIN=${NUMAKIT_BIN:-$TARGET/release/numakit}
SYNTH=${SYNTH_BIN:-$TARGET/release/examples/synth_farm}
mkdir -p "$INPUT_DIR" bench/results
plain="$INPUT_DIR/outcomes-$JOBS-$DAYS.jsonl"
if [ ! -s "$plain" ]; then
  echo "bench/report.sh: generating $plain ($JOBS jobs over $DAYS days)" >&2
  "$SYNTH" "$JOBS" "$DAYS" 1 600 400 0 > "$plain.tmp"
  mv "$plain.tmp" "$plain"
fi
inputs=("$plain")
if [ "${GZIP:-0}" = 1 ]; then
  gz="$plain.gz"
  if [ ! -s "$gz" ]; then
    echo "bench/report.sh: compressing to $gz" >&2
    gzip -1 -c "$plain" > "$gz.tmp" && mv "$gz.tmp" "$gz"
  fi
  inputs+=("$gz")
fi
lines=$(wc -l < "$plain")
echo "| input | size | run | elapsed s | user s | system s | peak RSS MiB | load before |"
echo "|---|---:|---:|---:|---:|---:|---:|---|"
for f in "${inputs[@]}"; do
  size=$(du -h --apparent-size "$f" | cut -f1)
  for run in $(seq 1 "$RUNS"); do
    load=$(cut -d' ' -f1-3 /proc/loadavg)
    err=$(mktemp)
    /usr/bin/time -v "$BIN" report "$f" > /dev/null 2> "$err"
    wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$err")
    user=$(awk -F': ' '/User time/ {print $2}' "$err")
    sys=$(awk -F': ' '/System time/ {print $2}' "$err")
    rss=$(awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2 / 1024}' "$err")
    secs=$(echo "$wall" | awk -F: '{ if (NF == 3) print $1 * 3600 + $2 * 60 + $3; else print $1 * 60 + $2 }')
    rm -f "$err"
    echo "| $(basename "$f") ($lines lines) | $size | $run | $secs | $user | $sys | $rss | $load |"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(basename "$f")" "$run" "$secs" "$user" "$sys" "$rss" "$load" >> bench/results/report.tsv
  done
done
