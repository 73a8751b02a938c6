#!/usr/bin/env bash
# Real kernel, side by side: the daemon's scenarios under Debian's numad, kernel
# AutoNUMA alone, numakit's daemon and no placer at all, each in its own boot
# of the QEMU test bed (bench/placers/topology: 4 nodes of 1 CPU and 1 GiB,
# ring distances), sampled every second from inside the guest by
# bench/placers/guest.sh. Regenerates the tables in docs/placers.md (between
# the <!-- placers:... --> markers) and writes the raw output to
# bench/results/placers.txt (git-ignored).
#
#   bench/placers.sh                              # 2 scenarios x 4 placers, 60 s each (~13 min)
#   RUNS=3 bench/placers.sh                       # each pair three times (one row per run)
#   SECS=30 bench/placers.sh                      # shorter runs
#   SCENARIOS=remote PLACERS="numad numakit" bench/placers.sh   # a subset (the table
#                                                 # then shows only that subset)
#   NUMAKIT_BIN=path bench/placers.sh             # an already built numakit (nk-hold and
#                                                 # nk-locality beside it)
#   RENDER_ONLY=1 bench/placers.sh                # only rewrite the tables from the raw file
#   MARK=beside PLACERS="autonuma numakit-autonuma" RUNS=3 bench/placers.sh
#                                                 # the packaged daemon beside AutoNUMA: the
#                                                 # section between the <!-- beside:... -->
#                                                 # markers, raw output in bench/results/beside.txt
#
# Needs: the test bed (testbed/numakit-vm), numad (Debian package, run inside
# the guest from the host root), a release build.
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${SECS:-60}
RUNS=${RUNS:-1}
SCENARIOS=${SCENARIOS:-remote uneven}
PLACERS=${PLACERS:-none autonuma numad numakit}
DOC=docs/placers.md
MARK=${MARK:-placers}
RAW=bench/results/$MARK.txt

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
read -r -a TOPO <<< "$(grep -v '^#' bench/placers/topology | tr '\n' ' ')"

if [ -z "${RENDER_ONLY:-}" ]; then
scripts/install-deps >/dev/null
if [ -z "${NUMAKIT_BIN:-}" ]; then
  cargo build --release -q -p numakit-cli -p numakit-testprogs
  NUMAKIT_BIN=${CARGO_TARGET_DIR:-$PWD/target}/release/numakit
fi
BIN_DIR=$(cd "$(dirname "$NUMAKIT_BIN")" && pwd)
NK=$BIN_DIR/$(basename "$NUMAKIT_BIN")
for b in "$NK" "$BIN_DIR/nk-hold" "$BIN_DIR/nk-locality"; do
  [ -x "$b" ] || { echo "bench/placers.sh: $b is missing" >&2; exit 2; }
done
case $BIN_DIR in /tmp/*) echo "bench/placers.sh: the guest has its own /tmp; put the binaries elsewhere" >&2; exit 2 ;; esac
command -v numad >/dev/null || { echo "bench/placers.sh: numad is missing (scripts/install-deps)" >&2; exit 2; }

mkdir -p "$(dirname "$RAW")"
{
  echo "# bench/placers.sh $(date -u +%FT%TZ) SECS=$SECS RUNS=$RUNS"
  echo "# host: $(uname -r), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); $(qemu-system-x86_64 --version | head -n 1)"
  echo "# numad: $(numad -V 2>&1 | head -n 1); numakit: $("$NK" --version 2>&1 | head -n 1) ($NK)"
  echo "# topology: ${TOPO[*]}"
} > "$work/raw"
for s in $SCENARIOS; do
  for p in $PLACERS; do
   for r in $(seq "$RUNS"); do
    echo "bench/placers.sh: $s / $p, run $r of $RUNS ($SECS s)" >&2
    start=$(date +%s)
    testbed/numakit-vm "${TOPO[@]}" --append clearcpuid=erms --timeout $((SECS + 300)) \
      --env "NK=$NK" --env "HOLD=$BIN_DIR/nk-hold" -- sh bench/placers/guest.sh "$s" "$p" "$SECS" \
      >> "$work/raw" 2> "$work/err" || true
    if [ "$(grep -c "^result scenario=$s placer=$p " "$work/raw")" -lt "$r" ]; then
      echo "bench/placers.sh: no result for $s / $p:" >&2; tail -n 20 "$work/err" >&2
      echo "result scenario=$s placer=$p status=no-result" >> "$work/raw"
    fi
    echo "bench/placers.sh:   $(( $(date +%s) - start )) s" >&2
   done
  done
done
cp "$work/raw" "$RAW"
fi

# The results table: one row per result line.
awk '
  function pct(x) { return (x == "" || x == "-") ? "-" : sprintf("%.1f %%", 100 * x) }
  function v(k) { return (k in f) ? f[k] : "-" }
  /^# / { next }
  $1 == "result" {
    split("", f)
    for (i = 2; i <= NF; i++) { k = $i; sub(/=.*/, "", k); val = $i; sub(/^[^=]*=/, "", val); f[k] = val }
    run = ++runs[f["scenario"] " " f["placer"]]
    if (f["status"] != "ok") {
      printf "| %s | %s | %d | %s | | | | | | | | | |\n", f["scenario"], f["placer"], run, f["status"]; next
    }
    aff = f["affinity"]; gsub(/cpus=/, "", aff); gsub(/\/mems=/, " / ", aff); sub(/;$/, "", aff); gsub(/;/, "; ", aff)
    over = f["over"] == "1" ? "**yes**" : "no"
    t90 = f["t90"] == "never" ? "never" : f["t90"] " s"
    cpu = f["placer_cpu_s"] == "-" ? "-" : sprintf("%s (%s user, %s sys)", f["placer_cpu_s"], f["placer_user_s"], f["placer_sys_s"])
    kern = f["numa_pte_updates"] + 0 > 0 ? sprintf("%d / %d", f["numa_pte_updates"], f["numa_hint_faults"]) : "-"
    printf "| %s | %s | %d | %s | %s (%s) | %s (%s) | %s | %d | %s | %s | %s | %s | %s |\n",
      f["scenario"], f["placer"], run, pct(f["start_min"]), pct(f["final"]), pct(f["final_min"]),
      pct(v("final_own")), pct(v("final_own_min")), t90,
      f["pgmigrate_success"], cpu, kern, f["targets_sys_s"], over, aff
  }' "$RAW" > "$work/table"

# What numad and numakit said they did (their own log lines, actions only).
awk '
  /^result / { split($2, s, "="); split($3, p, "="); scen = s[2]; placer = p[2]; run = ++runs[scen " " placer]; next }
  /^setup / { split($2, s, "="); split($3, p, "="); scen = s[2]; placer = p[2]; next }
  $1 == "log" && placer == "numad" && /Advising|moved to node|would not move|Moving memory/ {
    sub(/^log [A-Za-z]+ [A-Za-z]+ +[0-9]+ [0-9:]+ [0-9]+: /, ""); print "[" scen " " run "] numad: " $0; next }
  $1 == "log" && placer ~ /^numakit/ && /^log numakit daemon: pid [0-9]+: / {
    sub(/^log numakit daemon: /, ""); line = $0
    if (match(line, / with [0-9]+% of cycles.* -> /)) line = substr(line, 1, RSTART - 1) " ->" substr(line, RSTART + RLENGTH - 1)
    print "[" scen " " run "] " placer ": " line }
' "$RAW" | sed 's/^log //' > "$work/actions"

run_line=$(sed -n 's/^# bench\/placers.sh //p' "$RAW")
# The conditions as a user would rerun them: the host's kernel series and
# CPUs, not its load or the date (those stay in the raw file).
host_line=$(sed -n 's/^# host: //p' "$RAW" | sed -E 's/^([0-9]+\.[0-9]+)[^,]*/Linux \1/; s/, load [0-9. ]+;/;/')
numad_line=$(sed -n 's/^# numad: //p' "$RAW" | sed -E 's/ \([^()]*\)$//')
kernel=$(sed -n 's/.* kernel=\([^ ]*\).*/\1/p' "$RAW" | head -n 1)
{
  echo "<!-- $MARK:begin (generated by bench/placers.sh; do not edit by hand) -->"
  echo
  echo "Measured by \`bench/placers.sh\` (${run_line#* }): guest kernel $kernel under QEMU TCG"
  echo "(\`${TOPO[*]}\`, \`clearcpuid=erms\`), host $host_line; $numad_line."
  echo
  echo "| scenario | placer | run | locality at start (worst process) | locality at the end: all (worst process) | own pages (worst process) | locality ≥ 90 % from | pages migrated | placer CPU s | AutoNUMA PTE updates / hint faults | sys s of the placed processes | a node over capacity | CPUs / memory nodes allowed at the end |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
  cat "$work/table"
  echo
  echo "What the placers logged (actions only):"
  echo
  echo '```text'
  cat "$work/actions"
  echo '```'
  echo
  echo "<!-- $MARK:end -->"
} > "$work/section"

if grep -q "^<!-- $MARK:begin" "$DOC" && grep -q "^<!-- $MARK:end" "$DOC"; then
  awk -v sect="$work/section" -v mark="$MARK" '
    $0 ~ "^<!-- " mark ":begin" { while ((getline l < sect) > 0) print l; skip = 1; next }
    $0 ~ "^<!-- " mark ":end" { skip = 0; next }
    !skip { print }' "$DOC" > "$work/doc"
  cp "$work/doc" "$DOC"
  echo "bench/placers.sh: $DOC updated" >&2
else
  echo "bench/placers.sh: no <!-- $MARK:begin/end --> markers in $DOC; the section:" >&2
  cat "$work/section"
fi
