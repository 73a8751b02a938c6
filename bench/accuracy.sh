#!/usr/bin/env bash
# Accuracy of `numakit bench` on this machine, side by side with reference
# programs built here:
#
#   * bandwidth: a plain C STREAM-style triad (below, gcc -O3 -march=native
#     -fopenmp) at the same array size, with 1 thread and with every CPU of
#     node 0; numakit's triad must reach at least 95% of it;
#   * latency at 256 MiB: lmbench's lat_mem_rd when installed (Debian's
#     lmbench is in non-free), else a C pointer chase (below) over the same
#     kind of random cycle of cache lines; numakit must be within 5%.
#
# Both sides run alternately, ROUNDS times, so other load on the machine
# hits both alike. Each round's figure is STREAM's best rate over REPS
# repetitions (bandwidth) or the median of 5 repetitions (latency); the
# median round of each side is compared (on a shared, noisy machine the
# single best round is one lucky moment). Prints the section for
# docs/bench.md (conditions, the spread of single rounds, the table) on
# stdout, every round, the best ones and the load average on stderr, and
# exits 1 if a bound is missed.
#
#   bench/accuracy.sh            # needs: gcc (build-essential), libgomp1
#   ROUNDS=5 REPS=20 bench/accuracy.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
REPS=${REPS:-10}
LAT_SIZE_MB=${LAT_SIZE_MB:-256}
command -v gcc >/dev/null || { echo "accuracy.sh: gcc is needed (apt-get install build-essential)" >&2; exit 2; }

cargo build --release -q -p numakit-cli
BIN=$PWD/target/release/numakit
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Array size: numakit's default, 4 x the total last-level cache (MiB-rounded).
llc=0; lvl=0
for d in /sys/devices/system/cpu/cpu*/cache/index*; do
  t=$(cat "$d/type"); [ "$t" = Instruction ] && continue
  l=$(cat "$d/level"); [ "$l" -gt "$lvl" ] && lvl=$l
done
declare -A seen=()
for d in /sys/devices/system/cpu/cpu*/cache/index*; do
  [ "$(cat "$d/type")" = Instruction ] && continue
  [ "$(cat "$d/level")" = "$lvl" ] || continue
  key=$(cat "$d/shared_cpu_list")
  [ -n "${seen[$key]:-}" ] && continue
  seen[$key]=1
  s=$(cat "$d/size"); s=${s%K}
  llc=$((llc + s * 1024))
done
ARRAY=$(( (4 * llc + 1048575) / 1048576 * 1048576 ))
[ "$ARRAY" -gt 0 ] || ARRAY=$((128 << 20))
N=$((ARRAY / 8))
CPUS=$(cat /sys/devices/system/node/node0/cpulist 2>/dev/null || echo 0-$(($(nproc) - 1)))
NCPU=$(nproc)

cat > "$work/triad.c" <<'EOF'
/* STREAM-style triad: a[j] = b[j] + q*c[j], timed per repetition, first
   repetition discarded, best rate reported (STREAM's bytes: 3 x 8 x N). */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
  long n = atol(argv[1]); int reps = atoi(argv[2]);
  double *a, *b, *c;
  if (posix_memalign((void **)&a, 4096, n * 8) || posix_memalign((void **)&b, 4096, n * 8) ||
      posix_memalign((void **)&c, 4096, n * 8)) return 1;
#pragma omp parallel for
  for (long j = 0; j < n; j++) { a[j] = 1.0; b[j] = 2.0; c[j] = 0.0; }
#pragma omp parallel for
  for (long j = 0; j < n; j++) a[j] = 2.0 * a[j];
  const double q = 3.0; double best = 1e30;
  for (int k = 0; k <= reps; k++) {
    double t = omp_get_wtime();
#pragma omp parallel for
    for (long j = 0; j < n; j++) a[j] = b[j] + q * c[j];
    t = omp_get_wtime() - t;
    if (k > 0 && t < best) best = t;
  }
  double err = 0; for (long j = 0; j < n; j++) err += a[j] - 2.0;
  if (err != 0) { fprintf(stderr, "triad: validation failed\n"); return 1; }
  printf("%.3f\n", 24.0 * n / best / 1e9);
  return 0;
}
EOF
gcc -O3 -march=native -fopenmp -o "$work/triad" "$work/triad.c"

cat > "$work/chase.c" <<'EOF'
/* Pointer chase over one random cycle through every 64-byte line of an
   anonymous mapping (4 KiB pages, no huge pages), 16 dependent loads per
   loop turn; prints the median ns per load of 5 repetitions. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
static uint64_t s = 88172645463325252ull;
static uint64_t xs(void) { s ^= s << 13; s ^= s >> 7; s ^= s << 17; return s; }
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static int cmp(const void *x, const void *y) { double a = *(double *)x, b = *(double *)y; return (a > b) - (a < b); }
int main(int argc, char **argv) {
  size_t bytes = (size_t)atol(argv[1]) << 20, lines = bytes / 64;
  char *buf = mmap(0, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (buf == MAP_FAILED) return 1;
  size_t *ord = malloc(lines * sizeof *ord);
  for (size_t i = 0; i < lines; i++) ord[i] = i;
  for (size_t i = lines - 1; i > 0; i--) { size_t j = xs() % (i + 1), t = ord[i]; ord[i] = ord[j]; ord[j] = t; }
  for (size_t i = 0; i < lines; i++) *(char **)(buf + ord[i] * 64) = buf + ord[(i + 1) % lines] * 64;
  void **p = (void **)(buf + ord[0] * 64);
  free(ord);
  long warm = lines < (1 << 22) ? lines : (1 << 22);
  for (long i = 0; i < warm; i++) p = (void **)*p;
  long loads = 1 << 16; double t = now();
  for (long i = 0; i < loads / 16; i++) {
#define L p = (void **)*p;
    L L L L L L L L L L L L L L L L
  }
  double ns = (now() - t) * 1e9 / loads;
  loads = (long)(200e6 / ns) / 16 * 16;
  double r[5];
  for (int k = 0; k < 5; k++) {
    t = now();
    for (long i = 0; i < loads / 16; i++) { L L L L L L L L L L L L L L L L }
    r[k] = (now() - t) * 1e9 / loads;
  }
  qsort(r, 5, sizeof *r, cmp);
  printf("%.2f\n", r[2]);
  return p == 0;
}
EOF
gcc -O2 -o "$work/chase" "$work/chase.c"

LAT_MEM_RD=$(command -v lat_mem_rd || ls /usr/lib/lmbench/bin/*/lat_mem_rd 2>/dev/null | head -1 || true)

best() { sort -g | tail -1; }
lowest() { sort -g | head -1; }
range() { printf '%.2f–%.2f' "$(printf '%s\n' "$@" | lowest)" "$(printf '%s\n' "$@" | best)"; }
middle() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
jq_triad() { python3 -c 'import json,sys; print(max(r["best_gbps"] for r in json.load(sys.stdin)["results"] if r["kernel"]=="triad"))'; }
jq_lat() { python3 -c 'import json,sys; print(json.load(sys.stdin)["results"][0]["ns"])'; }

LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
c1=(); n1=(); cA=(); nA=(); cl=(); nl=(); lm=()
for r in $(seq "$ROUNDS"); do
  c1+=("$(OMP_NUM_THREADS=1 OMP_PROC_BIND=true OMP_PLACES="{0}" "$work/triad" "$N" "$REPS")")
  n1+=("$("$BIN" bench bandwidth --cpu-nodes 0 --mem-nodes 0 --threads 1 --kernels triad --size "$ARRAY" --reps "$REPS" --json -q | jq_triad)")
  cA+=("$(OMP_NUM_THREADS=$NCPU OMP_PROC_BIND=true OMP_PLACES=cores "$work/triad" "$N" "$REPS")")
  nA+=("$("$BIN" bench bandwidth --cpu-nodes 0 --mem-nodes 0 --kernels triad --size "$ARRAY" --reps "$REPS" --json -q | jq_triad)")
  cl+=("$(taskset -c 0 "$work/chase" "$LAT_SIZE_MB")")
  nl+=("$("$BIN" bench latency --cpu-nodes 0 --mem-nodes 0 --size "${LAT_SIZE_MB}M" --reps 5 --time-ms 200 --json -q | jq_lat)")
  if [ -n "$LAT_MEM_RD" ]; then
    # lat_mem_rd prints "size_MB ns" lines on stderr; -t: random (thrashing) order.
    lm+=("$(taskset -c 0 "$LAT_MEM_RD" -t "$LAT_SIZE_MB" 64 2>&1 | awk -v s="$LAT_SIZE_MB" '$1+0 >= s*0.99 {print $2}' | tail -1)")
  fi
done

C1=$(printf '%s\n' "${c1[@]}" | middle); N1=$(printf '%s\n' "${n1[@]}" | middle)
CA=$(printf '%s\n' "${cA[@]}" | middle); NA=$(printf '%s\n' "${nA[@]}" | middle)
C1B=$(printf '%s\n' "${c1[@]}" | best); N1B=$(printf '%s\n' "${n1[@]}" | best)
CAB=$(printf '%s\n' "${cA[@]}" | best); NAB=$(printf '%s\n' "${nA[@]}" | best)
CL=$(printf '%s\n' "${cl[@]}" | middle); NL=$(printf '%s\n' "${nl[@]}" | middle)
REF_LAT=$CL; REF_NAME="C pointer chase (this script)"
if [ ${#lm[@]} -gt 0 ] && [ -n "${lm[0]}" ]; then
  REF_LAT=$(printf '%s\n' "${lm[@]}" | middle); REF_NAME="lmbench lat_mem_rd -t"
fi

fail=0
row() { # name, numakit, reference, unit, check (python expr on ratio r)
  local ok
  set -- "$1" "$(printf '%.2f' "$2")" "$(printf '%.2f' "$3")" "$4" "$5"
  ok=$(python3 -c "r=$2/$3; print('yes' if $5 else 'NO')")
  [ "$ok" = yes ] || fail=1
  printf '| %s | %s %s | %s %s | %s | %s |\n' "$1" "$2" "$4" "$3" "$4" "$(python3 -c "print(f'{$2/$3*100:.1f}%')")" "$ok"
}
# For whoever runs it, on stderr: the machine's load and every round.
{
  echo "load average before: $LOAD0, after: $(cut -d' ' -f1-3 /proc/loadavg)"
  printf 'best single rounds: triad 1 thread numakit %.2f vs C %.2f GB/s; all threads numakit %.2f vs C %.2f GB/s\n' "$N1B" "$C1B" "$NAB" "$CAB"
  echo "rounds: C triad 1 thread ${c1[*]}; numakit ${n1[*]}; C triad all ${cA[*]}; numakit ${nA[*]}; C chase ${cl[*]}; numakit ${nl[*]}${lm:+; lat_mem_rd ${lm[*]}}"
} >&2
# For docs/bench.md, on stdout: the conditions as a user would rerun them,
# the spread of single rounds and the table.
echo "### \`ROUNDS=$ROUNDS REPS=$REPS bench/accuracy.sh\` on $(nproc) CPUs, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(ls -d /sys/devices/system/node/node* | wc -l) node(s)"
echo
echo "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); Linux $(uname -r | cut -d. -f1-2); gcc $(gcc -dumpversion)."
echo "Arrays of $((ARRAY >> 20)) MiB (4 × the last-level cache, $((llc >> 10)) KiB), $REPS repetitions per round (best rate), median of $ROUNDS alternating rounds; latency buffer $LAT_SIZE_MB MiB, reference: $REF_NAME."
echo "Single rounds ranged: triad 1 thread numakit $(range "${n1[@]}"), C $(range "${c1[@]}") GB/s; all threads numakit $(range "${nA[@]}"), C $(range "${cA[@]}") GB/s; latency numakit $(range "${nl[@]}"), C $(range "${cl[@]}") ns."
echo
echo "| measurement | numakit | reference | numakit / reference | within bound |"
echo "|---|---|---|---|---|"
row "triad, 1 thread (bound: >= 95%)" "$N1" "$C1" "GB/s" "r >= 0.95"
row "triad, $NCPU threads on CPUs $CPUS (bound: >= 95%)" "$NA" "$CA" "GB/s" "r >= 0.95"
row "latency ${LAT_SIZE_MB} MiB (bound: within 5%)" "$NL" "$REF_LAT" "ns" "abs(r - 1) <= 0.05"
exit $fail
