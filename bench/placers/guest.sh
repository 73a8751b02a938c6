#!/bin/sh
# Runs one placement scenario under one placer inside a test-bed guest
# (topology bench/placers/topology: 4 nodes of 1 CPU and 1 GiB) and reports
# what happened. Used by bench/placers.sh (the table in docs/placers.md) and
# crates/cli/tests/vm_placers.rs. The guest must boot with clearcpuid=erms
# (see docs/placers.md: page migration is 24 times faster under TCG).
#
#   sh bench/placers/guest.sh SCENARIO PLACER SECONDS
#
#   SCENARIO  remote : one busy 340 MiB process whose pages are on node 0
#                      (first touch under MPOL_BIND, then MPOL_DEFAULT) and
#                      whose thread runs on node 3, because busy loops pinned
#                      to the CPUs of nodes 0-2 fill them
#             uneven : three busy 320 MiB processes, the pages of two on
#                      node 0, of one on node 1
#   PLACER    none | autonuma | numad | numakit | numakit-autonuma
#             (numakit-autonuma: the packaged configuration, autonuma =
#             "place-cpus", beside kernel.numa_balancing=1)
#   SECONDS   how long the placer runs at most (sampled every second)
#
# Environment: NK (numakit) and HOLD (nk-hold), required; LOC (nk-locality,
# default beside HOLD); NUMAD (default numad); NUMAD_ARGS (default "-i 5");
# NK_INTERVAL (numakit's interval_min_s and interval_max_s, default 5);
# NK_DECIDE (TOML lines of numakit's [decide] table, default "min_age_s = 5";
# for numakit-autonuma they replace the packaged file's lines of those keys);
# NK_PACKAGED (the packaged configuration, default contrib/numakit-daemon.toml);
# NK_NICE (the daemon's nice value: for numakit-autonuma default 10 as the
# packaged unit's, for numakit default 0);
# NK_CPUS (the CPUs numakit's daemon runs on, taskset -c; default: any);
# SETTLE="M:N" ends the run early once the worst process's locality has been
# at least M for N samples in a row (the CI test; the table runs full length).
#
# Output, one record per line:
#   setup  scenario=S placer=P t= up= loc= min= pid=...  (before the placer)
#   sample scenario=S placer=P t= up= loc= min= pid=...  (every second; t from
#          the placer's start: its process's start time, or the sysctl write)
#   result scenario=S placer=P status=ok key=value...     (once, at the end:
#          final, final_min, final_own, final_own_min are the means of the
#          last three samples' loc, min, own, own_min)
#   log    <line>                                         (numad.log, numakit's decision log)
#   phase  scenario=S placer=P NAME UPTIME                (where the guest time goes)
# `loc` is the page-weighted locality of the scenario's processes: the share
# of their pages (numa_maps, every mapping) on the nodes their threads ran
# on during that second (most often seen in /proc/PID/task/*/stat field 39,
# read every 100 ms); `min` is the lowest one process has; `own` and `own_min`
# the same over the processes' own pages, without the pages of files other
# processes map too (the C library; nk-locality).
# Under TCG with every vCPU busy each process start costs 1.5-4 s, so the
# measuring is done by nk-locality alone and the shell forks little.
set -u
SCEN=${1:?scenario}
PLACER=${2:?placer}
SECS=${3:?seconds}
: "${NK:?NK must name the numakit binary}" "${HOLD:?HOLD must name nk-hold}"
LOC=${LOC:-$(dirname "$HOLD")/nk-locality}
NUMAD=${NUMAD:-numad}
tag="scenario=$SCEN placer=$PLACER"
W=/tmp/placers.$SCEN.$PLACER
rm -rf "$W"; mkdir -p "$W"
NODES=/sys/devices/system/node

# Every binary runs from the guest's memory: under load, page faults on the
# 9p host root are about 60 times slower than when idle (the debug numakit
# took 19 s for --version), which would penalise whichever placer is larger.
BIN=/tmp/placers.bin
mkdir -p "$BIN"
for b in "$NK" "$HOLD" "$LOC" "$(command -v "$NUMAD")"; do
  [ -x "$BIN/${b##*/}" ] || cp "$b" "$BIN/" || exit 2
done
NK=$BIN/${NK##*/}; HOLD=$BIN/${HOLD##*/}; LOC=$BIN/${LOC##*/}; NUMAD=$BIN/numad

up() { read -r u _ < /proc/uptime; echo "$u"; }
phase() { echo "phase $tag $1 $(up)"; }
# sample ARGS...: nk-locality over the scenario's processes.
sample() { "$LOC" --pids "$(echo $PIDS | tr ' ' ,)" "$@"; }
# ready_in FILE: whether an nk-hold printed its ready line there (shell
# builtins only: no process to start).
ready_in() {
  [ -f "$1" ] || return 1
  while IFS= read -r line; do
    case $line in ready*) return 0 ;; esac
  done < "$1"
  return 1
}
# wait_ready FILE...: until each nk-hold printed its ready line, at most
# 300 s of guest time in all (the clock is /proc/uptime, read by a builtin).
# Not a count of checks: under TCG with every vCPU busy a check that starts
# a process (grep, sleep) costs 1-4 s, and 600 checks of "0.1 s" ran ten
# minutes in a CI run. Names the holder that was not ready.
wait_ready() {
  read -r now _ < /proc/uptime
  end=$(( ${now%.*} + 300 ))
  for f in "$@"; do
    until ready_in "$f"; do
      read -r now _ < /proc/uptime
      if [ "${now%.*}" -ge "$end" ]; then
        echo "log not ready after 300 s: ${f##*/}"
        return 1
      fi
      sleep 0.2
    done
  done
}

PIDS=""
HOGS=""
PLACER_PID=""
cleanup() {
  phase cleanup
  # shellcheck disable=SC2086
  kill -KILL $PIDS $HOGS 2>/dev/null
  [ -n "$PLACER_PID" ] && kill "$PLACER_PID" 2>/dev/null
  # until they are gone and their memory is free (numad leaves at the end of
  # its sleep; a second numad started before would only talk to the first)
  for p in $PIDS $HOGS $PLACER_PID; do
    i=0; while [ -d "/proc/$p" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
  done
  echo 0 > /proc/sys/kernel/numa_balancing
  phase finished
}

# --- no placer before the scenario is set up; numad needs a writable /var/log
echo 0 > /proc/sys/kernel/numa_balancing
if ! touch /var/log/.placers 2>/dev/null; then mount -t tmpfs tmpfs /var/log; fi

phase setup
OK=1
case $SCEN in
  remote)
    # first touch while the machine is idle, then the loops fill nodes 0-2
    "$HOLD" --mib 340 --first-touch-node 0 --loop > "$W/h0" 2>&1 &
    PIDS=$!
    wait_ready "$W/h0" || OK=0
    for n in 0 1 2; do
      for c in $(sed 's/,/ /g' "$NODES/node$n/cpulist"); do
        taskset -c "$c" sh -c 'while :; do :; done' &
        HOGS="$HOGS $!"
      done
    done
    # until the scheduler runs it on node 3 (30 s)
    i=0
    while [ $i -lt 30 ] && [ $OK = 1 ]; do
      case $(sample --secs 0) in *@3:*) break ;; esac
      i=$((i + 1))
    done
    ;;
  uneven)
    i=0; files=""
    for node in 0 0 1; do
      "$HOLD" --mib 320 --first-touch-node "$node" --loop > "$W/h$i" 2>&1 &
      PIDS="$PIDS $!"; files="$files $W/h$i"
      i=$((i + 1))
    done
    # the names, not a glob: a child under TCG may not have opened its
    # output file yet (a glob then stays "h*" and is never ready)
    # shellcheck disable=SC2086
    wait_ready $files || OK=0
    sleep 2
    ;;
  *) echo "unknown scenario $SCEN" >&2; exit 2 ;;
esac
for p in $PIDS; do [ -d "/proc/$p" ] || OK=0; done
if [ $OK = 0 ]; then
  echo "result $tag status=setup-failed"; sed 's/^/log /' "$W"/h*
  # where memory stood (a first touch bound to a full node waits on reclaim)
  for n in "$NODES"/node*; do
    echo "log ${n##*/}: $(grep -E 'MemFree|FilePages|Shmem:' "$n/meminfo" | tr -s ' ' | cut -d' ' -f3- | tr '\n' ' ')"
  done
  cleanup; exit 1
fi
sample --secs 0 > "$W/start"
sed -n "s/^sample /setup $tag /p" "$W/start"

phase placer
settle=""
case ${SETTLE:-} in *:*) settle="--until-min ${SETTLE%%:*} --for ${SETTLE##*:}" ;; esac
# the sampler first (a process start costs seconds here); it learns the
# placer's PID from a file at the end
: > "$W/placer.pid"
# shellcheck disable=SC2086
sample --secs "$SECS" --cpu-of "@$W/placer.pid" $settle > "$W/samples.raw" &
SAMPLER=$!
# the placer only once the sampler has read its counters' baseline (its
# start costs seconds here, and AutoNUMA moves pages from the sysctl write
# on: they must all be counted)
read -r now _ < /proc/uptime
end=$(( ${now%.*} + 120 ))
PIN=""
[ -n "${NK_CPUS:-}" ] && PIN="taskset -c $NK_CPUS"
until [ -s "$W/samples.raw" ] || [ "${now%.*}" -ge "$end" ]; do sleep 0.1; read -r now _ < /proc/uptime; done
T0=$(up)
case $PLACER in
  none) ;;
  autonuma) echo 1 > /proc/sys/kernel/numa_balancing ;;
  numad)
    rm -f /var/run/numad.pid /var/log/numad.log
    # numad leaves every process alone while CLOCK_MONOTONIC reads under
    # 300 s (unbound processes have bind time 0 and it skips what was bound
    # less than MIN_DELAY_FOR_REEVALUATION = 300 s ago): in a time namespace
    # its clocks read as on a machine up for an hour longer.
    # shellcheck disable=SC2086
    unshare --time --monotonic 3600 --boottime 3600 --fork \
      "$NUMAD" ${NUMAD_ARGS:--i 5} > "$W/numad.out" 2>&1
    i=0; while ! [ -s /var/run/numad.pid ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
    PLACER_PID=$(cat /var/run/numad.pid 2>/dev/null)
    ;;
  numakit)
    mkdir -p "$W/state"
    cat > "$W/nk.toml" <<EOF
interval_min_s = ${NK_INTERVAL:-5}
interval_max_s = ${NK_INTERVAL:-5}
state_dir = "$W/state"
socket = "$W/state/sock"
log = "$W/decisions.jsonl"
autonuma = "defer"

[decide]
${NK_DECIDE:-min_age_s = 5}
EOF
    # shellcheck disable=SC2086
    nice -n "${NK_NICE:-0}" $PIN "$NK" daemon --config "$W/nk.toml" > "$W/numakit.out" 2>&1 &
    PLACER_PID=$!
    ;;
  numakit-autonuma)
    # The packaged configuration as it is, but for its paths (moved under
    # $W) and the [decide] keys NK_DECIDE names; AutoNUMA on as a stock
    # kernel has it, from the daemon's start.
    mkdir -p "$W/state"
    printf '%s\n' "${NK_DECIDE:-}" > "$W/decide"
    awk -v w="$W" 'FNR == NR { if (split($0, kv, " = ") == 2) set[kv[1]] = $0; next }
      /^state_dir = / { print "state_dir = \"" w "/state\""; next }
      /^log = / { print "log = \"" w "/decisions.jsonl\""; next }
      /^socket = / { print "socket = \"" w "/state/sock\""; next }
      ($1 in set) { print set[$1]; delete set[$1]; next }
      { print }' "$W/decide" "${NK_PACKAGED:-contrib/numakit-daemon.toml}" > "$W/nk.toml" || exit 2
    echo 1 > /proc/sys/kernel/numa_balancing
    # at the packaged unit's priority (contrib/systemd: Nice=10) unless
    # NK_NICE says otherwise
    # shellcheck disable=SC2086
    nice -n "${NK_NICE:-10}" $PIN "$NK" daemon --config "$W/nk.toml" > "$W/numakit.out" 2>&1 &
    PLACER_PID=$!
    ;;
  *) echo "unknown placer $PLACER" >&2; kill $SAMPLER; cleanup; exit 2 ;;
esac
if [ "$PLACER" = numad ] || [ "$PLACER" = numakit ] || [ "$PLACER" = numakit-autonuma ]; then
  if [ -z "$PLACER_PID" ] || ! [ -r "/proc/$PLACER_PID/stat" ]; then
    echo "result $tag status=placer-failed"; sed 's/^/log /' "$W/${PLACER%-autonuma}.out"; kill $SAMPLER; cleanup; exit 1
  fi
  echo "$PLACER_PID" > "$W/placer.pid"
  # the placer's own start (field 22, clock ticks of 1/100 s since boot)
  T0=$(sed 's/.*) //' "/proc/$PLACER_PID/stat" | awk '{ printf "%.2f", $20 / 100 }')
fi
wait $SAMPLER

phase measure
# the placer stops; everything else is frozen so the rest is quick
[ -n "$PLACER_PID" ] && kill "$PLACER_PID" 2>/dev/null
# shellcheck disable=SC2086
kill -STOP $PIDS $HOGS 2>/dev/null
awk -v t0="$T0" -v tag="$tag" '$1 == "sample" {
    for (i = 2; i <= NF; i++) if ($i ~ /^up=/) u = substr($i, 4)
    $1 = "sample " tag; $2 = sprintf("t=%.1f", u - t0); print }' "$W/samples.raw" | tee "$W/samples"

# Capacity at the end: per node, the busy threads (the scenario's and the
# pinned loops) whose affinity confines them to it, against its CPUs, and its
# free memory; over capacity: more such threads than CPUs, or under 2 % free.
files=""
for p in $PIDS $HOGS; do files="$files /proc/$p/task/*/status"; done
# shellcheck disable=SC2086
CAP=$(awk '
  FILENAME ~ /cpulist$/ {
    split(FILENAME, p, "/"); n = substr(p[6], 5); ids[n] = 1
    k = split($0, r, ","); for (i = 1; i <= k; i++) { split(r[i], e, "-"); if (e[2] == "") e[2] = e[1]; for (c = e[1]; c <= e[2]; c++) { node[c] = n; ncpu[n]++ } }
    next
  }
  FILENAME ~ /meminfo$/ { split(FILENAME, p, "/"); n = substr(p[6], 5); if ($3 == "MemTotal:") tot[n] = $4; if ($3 == "MemFree:") free[n] = $4; next }
  $1 == "Cpus_allowed_list:" {
    k = split($2, r, ","); split("", in_node); cnt = 0
    for (i = 1; i <= k; i++) { split(r[i], e, "-"); if (e[2] == "") e[2] = e[1]; for (c = e[1]; c <= e[2]; c++) in_node[node[c]] = 1 }
    for (x in in_node) { cnt++; only = x }
    if (cnt == 1) bound[only]++
  }
  END {
    over = 0; s = ""
    for (n in ids) {
      if (bound[n] + 0 > ncpu[n]) over = 1
      if (free[n] * 50 < tot[n]) over = 1
      s = s sprintf("n%s:%d/%dcpu,%dMfree;", n, bound[n], ncpu[n], free[n] / 1024)
    }
    printf "over=%d nodes=%s", over, s
  }' "$NODES"/node[0-9]*/cpulist "$NODES"/node[0-9]*/meminfo $files 2>/dev/null)
AFF=""
for p in $PIDS; do
  AFF="$AFF$(awk '$1 == "Cpus_allowed_list:" { c = $2 } $1 == "Mems_allowed_list:" { m = $2 } END { printf "cpus=%s/mems=%s;", c, m }' "/proc/$p/status")"
done
NKSTAT=""
if [ "${PLACER%-autonuma}" = numakit ] && [ -r "$W/state/status.json" ]; then
  NKSTAT=$(tr -d ' \n' < "$W/state/status.json" | grep -o '"\(scan_cpu_seconds_total\|pages_migrated_total\|scans\|reverts_total\|binds_total\)":[0-9.]*' | sed 's/"\([a-z_]*\)":/nk_\1=/' | tr '\n' ' ')
  NKSTAT="${NKSTAT}nk_cpus_only=$(tr -d ' \n' < "$W/state/status.json" | grep -c '"cpus_only":"') "
fi

# reached: the first sample from which the worst process stays >= 90 % for
# three samples (or to the end); final: the mean of the last three samples
awk -v tag="$tag" -v secs="$SECS" -v kernel="$(uname -r)" -v cap="$CAP" -v aff="$AFF" -v nk="$NKSTAT" \
    -v start="$(sed -n 's/.* loc=\([0-9.]*\) .*/\1/p' "$W/start")" -v smin="$(sed -n 's/.* min=\([0-9.]*\).*/\1/p' "$W/start")" '
  FILENAME ~ /raw$/ {
    if ($1 != "end") next
    for (i = 2; i <= NF; i++) {
      split($i, kv, "=")
      if (kv[1] == "cpu") { split(kv[2], c, ":"); cpu = (kv[2] == "-" || c[1] == "0") ? "placer_cpu_s=- placer_user_s=- placer_sys_s=-" : sprintf("placer_cpu_s=%.2f placer_user_s=%s placer_sys_s=%s", c[2] + c[3], c[2], c[3]) }
      else if (kv[1] != "t" && kv[1] != "up" && kv[1] != "samples") end = end " " $i
    }
    next
  }
  { for (i = 2; i <= NF; i++) {
      split($i, kv, "=")
      if (kv[1] == "t") t[FNR] = kv[2]; if (kv[1] == "loc") l[FNR] = kv[2]; if (kv[1] == "min") m[FNR] = kv[2]
      if (kv[1] == "own") o[FNR] = kv[2]; if (kv[1] == "own_min") om[FNR] = kv[2]
    }
    n = FNR }
  END {
    for (i = 1; i <= n && t90 == ""; i++) {
      ok = 1; for (j = i; j < i + 3 && j <= n; j++) if (m[j] < 0.9) ok = 0
      if (ok) t90 = t[i]
    }
    k = (n < 3) ? n : 3; fl = 0; fm = 0; fo = 0; fom = 0
    for (i = n - k + 1; i <= n; i++) { fl += l[i] / k; fm += m[i] / k; fo += o[i] / k; fom += om[i] / k }
    printf "result %s status=ok start=%s start_min=%s final=%.4f final_min=%.4f final_own=%.4f final_own_min=%.4f t90=%s samples=%d last_t=%s secs=%s %s%s %s%s affinity=%s kernel=%s\n",
      tag, start, smin, fl, fm, fo, fom, (t90 == "" ? "never" : t90), n, t[n], secs, cpu, end, nk, cap, aff, kernel
  }' "$W/samples.raw" "$W/samples"

phase logs
case $PLACER in
  numad) grep -v '^$' /var/log/numad.log 2>/dev/null | sed 's/^/log /' | tail -n 80 ;;
  numakit*)
    { cat "$W/decisions.jsonl" 2>/dev/null; cat "$W/numakit.out"; } | sed 's/^/log /' | tail -n 60
    if [ -r "$W/state/status.json" ]; then tr -d '\n' < "$W/state/status.json" | sed 's/^/log status.json /; s/  */ /g'; echo; fi
    ;;
esac
cleanup
exit 0
