#!/usr/bin/env bash
# Runs numakit's read-only views (topo and its --json, -H and --svg forms,
# stat and its --compat forms, irq show, tune show and check) on every hwloc
# dump of ../shared/fixtures/hwloc with two binaries, and says where their
# standard output, standard error or exit status differ. For changes that
# must not change what numakit prints (moves, splits, refactors):
#
#   cargo build -p numakit-cli && cp target/debug/numakit /tmp/numakit-new
#   git stash; cargo build -p numakit-cli; git stash pop
#   bench/same-output.sh target/debug/numakit /tmp/numakit-new
#
#   bench/same-output.sh OLD_BIN NEW_BIN [DUMPS_DIR]
#
# DUMPS_DIR: where the tarballs are unpacked (default /tmp/numakit-dumps,
# made on first use; about 0.5 GB). Exit 1 when anything differs.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: bench/same-output.sh OLD_BIN NEW_BIN [DUMPS_DIR]" >&2; exit 2; }
old=$1 new=$2
dumps=${3:-/tmp/numakit-dumps}
tarballs=$(cd "$(dirname "$0")/.." && pwd)/../shared/fixtures/hwloc/tarballs
mkdir -p "$dumps"
for t in "$tarballs"/*.tar.bz2; do
  n=$(basename "$t" .tar.bz2)
  [ -d "$dumps/$n" ] || { mkdir "$dumps/$n" && tar -xjf "$t" -C "$dumps/$n"; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
views=(
  "topo" "topo --json" "topo -H" "topo --svg -"
  "stat" "stat --json" "stat -m" "stat -m --json"
  "stat --compat" "stat --compat -c" "stat --compat -n" "stat --compat -m" "stat --compat -v"
  "stat --compat -z" "stat --compat -s" "stat --compat -s0" "stat --compat -c -m -z"
  "irq show" "irq show --all --json" "tune show" "tune show --json" "tune check"
)
runs=0 differ=0
for d in "$dumps"/*/; do
  root=$(find "$d" -mindepth 1 -maxdepth 1 -type d | head -1)
  [ -d "$root/fsroot" ] && root=$root/fsroot
  name=$(basename "$d")
  for v in "${views[@]}"; do
    for which in old new; do
      bin=${!which}
      # shellcheck disable=SC2086
      set +e; env -u COLUMNS -u NUMAKIT_SYSROOT "$bin" --sysroot "$root" $v >"$work/$which.out" 2>"$work/$which.err"
      echo "exit $?" >>"$work/$which.err"; set -e
      sed -i "s#$bin#BIN#g" "$work/$which.err"
    done
    runs=$((runs + 1))
    if ! cmp -s "$work/old.out" "$work/new.out" || ! cmp -s "$work/old.err" "$work/new.err"; then
      differ=$((differ + 1))
      echo "DIFFERS: $name: numakit $v"
      diff "$work/old.out" "$work/new.out" | head -5 || true
      diff "$work/old.err" "$work/new.err" | head -5 || true
    fi
  done
done
echo "same-output: $runs runs ($(ls -d "$dumps"/*/ | wc -l) dumps x ${#views[@]} views), $differ differ"
[ "$differ" -eq 0 ]
