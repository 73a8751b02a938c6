//! A job's GPUs in a real Slurm inside the test bed (`4n-rr`: node k has
//! CPUs k and k+4), one boot, `task/none`:
//!
//! * QEMU puts two PCI expander bridges on nodes 1 and 2, each with a
//!   device behind it (`0000:21:01.0` on node 1, `0000:41:01.0` on node 2;
//!   SeaBIOS numbers the bridges' buses, docs/testbed.md);
//! * a fake NVIDIA inventory says they are GPUs: a tmpfs over
//!   `/proc/driver` with `nvidia/gpus/ADDRESS/information` for each, their
//!   device minors crosswise to the bus order (minor 0 is `0000:41:01.0`
//!   on node 2, minor 1 `0000:21:01.0` on node 1), and `/dev/nvidia0`,
//!   `/dev/nvidia1` made with mknod;
//! * Slurm with `GresTypes=gpu`, the node's `Gres=gpu:a:1,gpu:b:1` and a
//!   `gres.conf` of `Type=a File=/dev/nvidia0`, `Type=b File=/dev/nvidia1`:
//!   - a job given GPU 1 (`--gres=gpu:b:1`: `SLURM_STEP_GPUS=1`, the second
//!     file, minor 1) lands on node 1 with its memory there (an index taken
//!     for the bus order would have said node 2);
//!   - a two-GPU job of two tasks: task 0 with GPU 0 on node 2, task 1 with
//!     GPU 1 on node 1, each with its memory;
//!   - a job without devices is placed as before (the rules, no device in
//!     its reason);
//!   - `numakit show` of the first job's task names its GPU from the task's
//!     environment, on node 1, and all its memory next to it.
//!
//! Skipped when QEMU (or SeaBIOS) cannot run here, failed instead under
//! `CI=true`. `NUMAKIT_PRINT_SCRIPT=1` prints the guest script.

use std::path::{Path, PathBuf};
use std::time::Duration;

use numakit_testbed::{require_vm, RunSpec, Topology, Vm};

const NK: &str = env!("CARGO_BIN_EXE_numakit");
const SEABIOS: &str = "/usr/share/seabios/bios-256k.bin";

fn beside(name: &str) -> PathBuf {
    Path::new(NK).with_file_name(name)
}

const GUEST: &str = r#"cat > /tmp/nk.sh <<NKLIB
. @REPO@/crates/cli/tests/vm/lib.sh
SL=@NKSLURM@; SPANK=@SPANK@
NK=@NK@; H=@HOLD@
NKLIB
cat >> /tmp/nk.sh <<'NKLIB'
cpus() { sed -n 's/^Cpus_allowed_list:\t//p' /proc/$1/status; }
ready_all() {
  for i in $(seq 3000); do [ $(grep -c ^ready $1) -ge $2 ] || ! kill -0 $3 2>/dev/null && break; sleep 0.1; done
  sed -n 's/^ready pid=\([0-9]*\) addr=\([0-9a-f]*\).*/\1 \2/p' $1
}
NKLIB
. /tmp/nk.sh
slurm_guest nkvm || exit 1
sysctl -qw kernel.numa_balancing=0
echo '+cpuset +memory' > /sys/fs/cgroup/cgroup.subtree_control
for d in 0000:21:01.0 0000:41:01.0; do echo "dev $d node $(cat /sys/bus/pci/devices/$d/numa_node)"; done
mount -t tmpfs none /proc/driver || exit 1
gpu() {
  mkdir -p /proc/driver/nvidia/gpus/$1
  printf 'Model: \t\t NVIDIA Test GPU\nIRQ:   \t\t 0\nGPU UUID: \t GPU-%s\nBus Location: \t %s\nDevice Minor: \t %s\n' $3 $1 $2 \
    > /proc/driver/nvidia/gpus/$1/information
  mknod /dev/nvidia$2 c 195 $2
}
gpu 0000:41:01.0 0 00000000-0000-0000-0000-000000000041
gpu 0000:21:01.0 1 00000000-0000-0000-0000-000000000021
$NK topo | sed "s/^/topo /"
cat > /tmp/gpu.sh <<'NKEND'
echo "slurm_up"
show() { # TAG PID ADDR
  echo "$1 pid=$2 cpus=$(cpus $2) map=$(mapping $2 $3) $(tr '\0' '\n' < /proc/$2/environ | grep -E '^(SLURM_STEP_GPUS|CUDA_VISIBLE_DEVICES|SLURM_LOCALID)=' | tr '\n' ' ')"
}
# One GPU, the second of gres.conf's (type b: /dev/nvidia1).
srun --numa=auto -n1 -c2 --gres=gpu:b:1 $H --mib 32 > /tmp/g1.out 2>&1 &
ready_all /tmp/g1.out 1 $! | while read p a; do show one $p $a; $NK show $p | sed -n '/devices/,/memory next/p' | sed 's/^/shown /'; kill $p; done; wait
# Two GPUs, two tasks.
srun --numa=auto -n2 -c2 --gres=gpu:2 $H --mib 32 > /tmp/g2.out 2>&1 &
ready_all /tmp/g2.out 2 $! > /tmp/g2.ready
while read p a; do show two $p $a; done < /tmp/g2.ready
while read p a; do kill $p; done < /tmp/g2.ready; wait
# No devices.
srun --numa=auto -n1 -c2 $H --mib 32 > /tmp/g0.out 2>&1 &
ready_all /tmp/g0.out 1 $! | while read p a; do show none $p $a; kill $p; done; wait
grep -h 'numakit: slurm job' $NK_SLURM_DIR/log/slurmd.log | sed 's/.*numakit: /placed /'
grep -h 'gres' $NK_SLURM_DIR/log/slurmd.log | head -20 | sed 's/^/log /'
cat /tmp/g*.out | grep -v ^ready | sed 's/^/out /'
NKEND
timeout 600 $SL --ready-timeout 180 --node nkvm --task-plugin task/none --proctrack proctrack/linuxproc --cgroup-conf CgroupPlugin=cgroup/v2 --cgroup-conf IgnoreSystemd=yes \
  --conf GresTypes=gpu --node-gres gpu:a:1,gpu:b:1 \
  --gres-conf 'Name=gpu Type=a File=/dev/nvidia0' --gres-conf 'Name=gpu Type=b File=/dev/nvidia1' \
  --plugstack "required $SPANK ledger=/tmp/ledger socket=/tmp/none.sock" '. /tmp/nk.sh; . /tmp/gpu.sh'
echo "rc $?"
"#;

fn script() -> String {
    GUEST
        .replace("@REPO@", &numakit_testbed::vm::repo_root().display().to_string())
        .replace("@HOLD@", &beside("nk-hold").display().to_string())
        .replace("@NKSLURM@", &beside("nk-slurm").display().to_string())
        .replace("@SPANK@", &beside("libnumakit_spank.so").display().to_string())
        .replace("@NK@", NK)
}

/// The line of `o` that starts with `key ` and holds `has`.
fn line<'a>(o: &'a str, key: &str, has: &str) -> &'a str {
    let k = format!("{key} ");
    o.lines()
        .filter_map(|l| l.strip_prefix(&k))
        .find(|l| l.contains(has))
        .unwrap_or_else(|| panic!("no {key:?} line with {has:?} in:\n{o}"))
}

#[test]
fn vm_gpu_jobs_land_by_their_gpus() {
    if std::env::var_os("NUMAKIT_PRINT_SCRIPT").is_some() {
        println!("{}", script());
        return;
    }
    require_vm!();
    if !Path::new(SEABIOS).exists() && std::env::var("CI").as_deref() != Ok("true") {
        eprintln!("skipped: {SEABIOS} is missing (apt-get install seabios)");
        return;
    }
    for p in ["nk-hold", "nk-slurm", "libnumakit_spank.so"] {
        assert!(
            beside(p).exists(),
            "{} is missing: build it (`cargo build -p numakit-testprogs -p numakit-spank`)",
            beside(p).display()
        );
    }
    let topo = Topology::named("4n-rr").expect("topology");
    let qemu = [
        "-bios",
        SEABIOS,
        "-device",
        "pxb,id=pxb1,bus_nr=32,numa_node=1,bus=pci.0",
        "-device",
        "virtio-rng-pci,bus=pxb1,addr=0x1",
        "-device",
        "pxb,id=pxb2,bus_nr=64,numa_node=2,bus=pci.0",
        "-device",
        "virtio-rng-pci,bus=pxb2,addr=0x1",
    ];
    let spec = RunSpec { kernel_args: Some("clearcpuid=erms".into()), ..RunSpec::script(script()) }
        .qemu(qemu)
        .timeout(Duration::from_secs(420));
    let started = std::time::Instant::now();
    let out = Vm::run(&topo, spec).unwrap_or_else(|e| panic!("guest: {e}"));
    eprintln!("vm_devices: guest run {:.1} s", started.elapsed().as_secs_f64());
    let o = out.stdout.as_str();
    for l in o.lines().filter(|l| ["one ", "two ", "none ", "placed ", "shown "].iter().any(|p| l.starts_with(p))) {
        eprintln!("vm_devices| {l}");
    }
    let ctx = format!("{o}\n--- stderr\n{}", out.stderr);
    assert_eq!(out.status, 0, "{ctx}");
    assert!(o.contains("dev 0000:21:01.0 node 1") && o.contains("dev 0000:41:01.0 node 2"), "{ctx}");
    assert!(o.lines().any(|l| l == "rc 0"), "{ctx}");

    // GPU 1: node 1, CPUs 1,5, every page there; the plugin's reason names it.
    let one = line(o, "one", "SLURM_STEP_GPUS=1 ");
    assert!(one.contains("cpus=1,5 ") && one.contains(" bind:1 ") && one.contains(" N1=8192 "), "{one}\n{ctx}");
    let placed = line(o, "placed", "job 1.0 task 0");
    assert!(
        placed.contains("cpus 1,5, memory bind 1") && placed.contains("the job's GPU 1 (0000:21:01.0) on node 1"),
        "{placed}"
    );

    // `show` finds the task's GPU in its environment, its memory next to it.
    let shown: Vec<&str> = o.lines().filter_map(|l| l.strip_prefix("shown ")).collect();
    assert!(shown.first().is_some_and(|l| l.starts_with("  devices (SLURM_STEP_GPUS=1)")), "{ctx}");
    assert!(shown.iter().any(|l| l.trim() == "GPU 1 0000:21:01.0 NVIDIA Test GPU, node 1"), "{ctx}");
    // Its anonymous memory all there; shared libraries' page cache may sit elsewhere.
    let near = shown.iter().find(|l| l.contains("memory next to them (node 1)")).unwrap_or_else(|| panic!("{ctx}"));
    let pct: f64 = near.rsplit(", ").next().and_then(|p| p.trim_end_matches('%').parse().ok()).unwrap_or(0.0);
    assert!(pct >= 90.0, "{near}\n{ctx}");

    // Two GPUs, two tasks: each by its own GPU.
    let t0 = line(o, "two", "SLURM_LOCALID=0");
    let t1 = line(o, "two", "SLURM_LOCALID=1");
    assert!(t0.contains("cpus=2,6 ") && t0.contains(" N2=8192 "), "task 0 by GPU 0 on node 2: {t0}\n{ctx}");
    assert!(t1.contains("cpus=1,5 ") && t1.contains(" N1=8192 "), "task 1 by GPU 1 on node 1: {t1}\n{ctx}");
    assert!(line(o, "placed", "job 2.0 task 0").contains("GPU 0 (0000:41:01.0) on node 2"), "{ctx}");
    assert!(line(o, "placed", "job 2.0 task 1").contains("GPU 1 (0000:21:01.0) on node 1"), "{ctx}");

    // No devices: the rules, as before.
    let none = line(o, "placed", "job 3.0 task 0");
    assert!(!none.contains("GPU") && none.contains("the most free memory of the 4 node(s)"), "{none}");
    let n = line(o, "none", "pid=");
    assert!(!n.contains("SLURM_STEP_GPUS"), "{n}");
}
