# Shell helpers for the VM checks (sourced by each check; cwd is the repo root,
# shared read-write into the guest; binaries are the host's debug builds).
NK=$PWD/target/debug/numakit
H=$PWD/target/debug/nk-hold

# hold OUT CMD...: start CMD (which runs nk-hold) in the background, wait for
# its ready line, and print "PID ADDR" of the holder.
hold() {
  out=$1; shift
  "$@" > "$out" 2>&1 &
  i=0
  while [ $i -lt 600 ]; do
    grep -q '^ready' "$out" 2>/dev/null && break
    sleep 0.1; i=$((i + 1))
  done
  sed -n 's/^ready pid=\([0-9]*\) addr=\([0-9a-f]*\).*/\1 \2/p' "$out"
}

# mapping PID ADDR: the numa_maps line of the mapping that starts at ADDR.
mapping() { grep "^$2 " "/proc/$1/numa_maps"; }
