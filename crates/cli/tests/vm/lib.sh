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

# slurm_guest NAME: what a real Slurm (nk-slurm) needs in the guest: a host
# name that resolves (through a writable copy of /etc/hosts bound over the
# read-only one), loopback up with a second IPv4 address (Slurm's
# getaddrinfo(AI_ADDRCONFIG) finds no IPv4 address with 127.0.0.1 alone),
# cgroup v2 with a system.slice (Slurm's cgroup/v2 plugin with IgnoreSystemd).
slurm_guest() {
  hostname "$1"
  { cat /etc/hosts; echo "127.0.0.1 $1"; } > /tmp/hosts && mount --bind /tmp/hosts /etc/hosts
  ip link set lo up && ip addr add 127.0.0.2/8 dev lo
  mountpoint -q /sys/fs/cgroup || mount -t cgroup2 none /sys/fs/cgroup
  mkdir -p /sys/fs/cgroup/system.slice
}

# guest_user NAME ID: a user and group NAME with uid and gid ID that the
# guest knows (writable copies of /etc/passwd and /etc/group bound over the
# read-only ones, as slurm_guest does for /etc/hosts), with a home folder
# /tmp/NAME that only it may write.
guest_user() {
  { cat /etc/passwd; echo "$1:x:$2:$2::/tmp/$1:/bin/sh"; } > /tmp/passwd && mount --bind /tmp/passwd /etc/passwd
  { cat /etc/group; echo "$1:x:$2:"; } > /tmp/group && mount --bind /tmp/group /etc/group
  mkdir -p "/tmp/$1" && chown "$2:$2" "/tmp/$1" && chmod 700 "/tmp/$1"
}
