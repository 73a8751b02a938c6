//! Two machines of 2026 as synthetic offline roots (`numakit::topo::synth`
//! with fake device inventories), with their expected views:
//!
//! * a GB200-like compute tray: two Grace CPU nodes (0, 1), each GPU's own
//!   memory a memory-only node (2-5) that the NVIDIA driver names in
//!   `numa_status`, at distance 80 from its Grace and 120 from the other,
//!   four GPUs (two per Grace) and an InfiniBand NIC per Grace;
//! * a CXL server: two sockets with DRAM (nodes 0, 1) and a CXL memory
//!   expander behind each (memory-only nodes 2, 3) in a slower memory tier,
//!   with HMAT figures.
//!
//! `topo` shows each machine (GPUs per node with their models and memory
//! nodes, NICs per node, tiers, HMAT, memory-only nodes under their
//! package), and `run --auto --dry-run` places a GPU job next to its GPU
//! with its memory on its Grace's DRAM, never on a GPU's memory node nor a
//! CXL node. `NUMAKIT_PRINT_VIEWS=1` prints the views as they are now.

use std::path::Path;
use std::process::Command;

use numakit::topo::synth::{write_devices, SynthAccess, SynthDevice, SynthDeviceKind, SynthMachine};

const NK: &str = env!("CARGO_BIN_EXE_numakit");

fn gb200(root: &Path) {
    let mut m =
        SynthMachine::of_nodes(&[("0-7", 16384), ("8-15", 16384), ("", 8192), ("", 8192), ("", 8192), ("", 8192)])
            .with_distance(0, 1, 40);
    for (cpu, gpus, far) in [(0, [2, 3], [4, 5]), (1, [4, 5], [2, 3])] {
        for g in gpus {
            m = m.with_distance(cpu, g, 80);
        }
        for g in far {
            m = m.with_distance(cpu, g, 120);
        }
    }
    for a in 2..6 {
        for b in 2..6 {
            if a != b {
                m = m.with_distance(a, b, 120);
            }
        }
    }
    m.write(root).expect("write");
    let gpu = |address: &str, node, minor, memory| SynthDevice {
        address: address.into(),
        node: Some(node),
        kind: SynthDeviceKind::NvidiaGpu {
            minor,
            model: "NVIDIA GB200".into(),
            uuid: format!("GPU-0000000{minor}-1111-2222-3333-444444444444"),
            memory_node: Some(memory),
        },
    };
    let nic = |address: &str, node, name: &str| SynthDevice {
        address: address.into(),
        node: Some(node),
        kind: SynthDeviceKind::Nic { name: name.into() },
    };
    write_devices(
        root,
        &[
            gpu("0008:01:00.0", 0, 0, 2),
            gpu("0009:01:00.0", 0, 1, 3),
            gpu("0018:01:00.0", 1, 2, 4),
            gpu("0019:01:00.0", 1, 3, 5),
            nic("0000:03:00.0", 0, "ibp3s0"),
            nic("0002:03:00.0", 1, "ibP2p3s0"),
        ],
    )
    .expect("devices");
}

fn cxl(root: &Path) {
    let mut m = SynthMachine::of_nodes(&[("0-7", 16384), ("8-15", 16384), ("", 32768), ("", 32768)])
        .with_distance(0, 1, 21)
        .with_distance(0, 2, 24)
        .with_distance(1, 3, 24)
        .with_distance(0, 3, 34)
        .with_distance(1, 2, 34)
        .with_distance(2, 3, 44);
    let access = |target, initiators: &[u32], lat, bw| SynthAccess {
        target,
        class: 1,
        initiators: initiators.to_vec(),
        latency_ns: (lat, lat),
        bandwidth_mib_s: (bw, bw),
    };
    m.access = vec![
        access(0, &[0], 110, 262144),
        access(1, &[1], 110, 262144),
        access(2, &[0], 270, 65536),
        access(3, &[1], 270, 65536),
    ];
    m.tiers = vec![(4, vec![0, 1]), (22, vec![2, 3])];
    m.write(root).expect("write");
    write_devices(
        root,
        &[SynthDevice {
            address: "0000:17:00.0".into(),
            node: Some(0),
            kind: SynthDeviceKind::Nic { name: "ens1f0".into() },
        }],
    )
    .expect("devices");
}

/// `numakit ARGS` on `root` with the variables `env`: stdout from the node
/// table on (the summary names the temporary root), or stderr on failure.
fn run(root: &Path, args: &[&str], env: &[(&str, &str)]) -> String {
    let mut c = Command::new(NK);
    c.arg("--sysroot").arg(root).args(args).env_remove("NUMAKIT_SYSROOT");
    for k in ["SLURM_JOB_GPUS", "SLURM_STEP_GPUS", "CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "ZE_AFFINITY_MASK"] {
        c.env_remove(k);
    }
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().expect("numakit runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "numakit {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    match text.split_once("\n\n") {
        Some((head, rest)) if head.starts_with("Machine:") => rest.to_string(),
        _ => text,
    }
}

fn check(name: &str, got: &str, want: &str) {
    if std::env::var_os("NUMAKIT_PRINT_VIEWS").is_some() {
        println!("=== {name}\n{got}");
        return;
    }
    assert_eq!(got, want, "{name}: the view changed; NUMAKIT_PRINT_VIEWS=1 prints it");
}

const GB200_TOPO: &str = r#"NODE  CPUS             MEMORY      FREE  HUGEPAGES  DEVICES
0     0-7              16 GiB  14.4 GiB  -          ibp3s0
1     8-15             16 GiB  14.4 GiB  -          ibP2p3s0
2     - (memory only)   8 GiB   7.2 GiB  -          -
3     - (memory only)   8 GiB   7.2 GiB  -          -
4     - (memory only)   8 GiB   7.2 GiB  -          -
5     - (memory only)   8 GiB   7.2 GiB  -          -
GPUs:
  node 0: 0008:01:00.0 NVIDIA GB200 (/dev/nvidia0), its memory node 2
  node 0: 0009:01:00.0 NVIDIA GB200 (/dev/nvidia1), its memory node 3
  node 1: 0018:01:00.0 NVIDIA GB200 (/dev/nvidia2), its memory node 4
  node 1: 0019:01:00.0 NVIDIA GB200 (/dev/nvidia3), its memory node 5

Distances (firmware SLIT):
         0   1   2   3   4   5
    0   10  40  80  80 120 120
    1   40  10 120 120  80  80
    2   80 120  10 120 120 120
    3   80 120 120  10 120 120
    4  120  80 120 120  10 120
    5  120  80 120 120 120  10

Packages -> nodes -> cores -> CPUs:
  package 0: node 0: 8 cores x 1 thread, CPUs 0-7
             node 2: memory only, 8 GiB, nearest to node 0 (distance 80)
             node 3: memory only, 8 GiB, nearest to node 0 (distance 80)
  package 1: node 1: 8 cores x 1 thread, CPUs 8-15
             node 4: memory only, 8 GiB, nearest to node 1 (distance 80)
             node 5: memory only, 8 GiB, nearest to node 1 (distance 80)
"#;

const GB200_GPU_JOB: &str = r#"decision: node(s) 1 (NearDevices)
reason: the job's GPU-00000002-1111-2222-3333-444444444444 (0018:01:00.0) on node 1: node 1 has 8 idle CPUs (need 4) and 14.4 GiB free (need 8.0 GiB): CPUs and memory bound there
cpus: 4 (--cpus)
view: not sampled
numactl: numactl --physcpubind=8-15 --membind=1 reco
decision: node(s) 1 (NearDevices)
reason: the job's GPU-00000002-1111-2222-3333-444444444444 (0018:01:00.0) on node 1: node 1 has 8 idle CPUs (need 4) and 14.4 GiB free (need 20.0 GiB): CPUs bound there, memory preferred there
cpus: 4 (--cpus)
view: not sampled
numactl: numactl --physcpubind=8-15 --preferred=1 reco
"#;

const CXL_TOPO: &str = r#"NODE  CPUS             MEMORY      FREE  TIER  HUGEPAGES  DEVICES
0     0-7              16 GiB  14.4 GiB     4  -          ens1f0
1     8-15             16 GiB  14.4 GiB     4  -          -
2     - (memory only)  32 GiB  28.8 GiB    22  -          -
3     - (memory only)  32 GiB  28.8 GiB    22  -          -

Distances (firmware SLIT):
       0  1  2  3
   0  10 21 24 34
   1  21 10 34 24
   2  24 34 10 44
   3  34 24 44 10

Memory performance (firmware HMAT, from each node's best initiators):
  NODE  FROM    LATENCY  BANDWIDTH
  0     node 0   110 ns  256 GiB/s
  1     node 1   110 ns  256 GiB/s
  2     node 0   270 ns  64 GiB/s
  3     node 1   270 ns  64 GiB/s

Packages -> nodes -> cores -> CPUs:
  package 0: node 0: 8 cores x 1 thread, CPUs 0-7
             node 2: memory only, 32 GiB, local to node 0 (HMAT)
  package 1: node 1: 8 cores x 1 thread, CPUs 8-15
             node 3: memory only, 32 GiB, local to node 1 (HMAT)
"#;

const CXL_JOB: &str = r#"decision: node(s) 0 (OneNode)
reason: node 0 has 8 idle CPUs (need 4) and 14.4 GiB free (need 8.0 GiB), the most free memory of the 2 node(s) with enough idle CPUs
cpus: 4 (--cpus)
view: not sampled
numactl: numactl --physcpubind=0-7 --membind=0 job
decision: node(s) 0 (OneNodePreferMemory)
reason: no node with 4 idle CPUs has 20.0 GiB free (node 0 has the most: 14.4 GiB): CPUs bound to node 0, memory preferred there and spilling to other nodes
cpus: 4 (--cpus)
view: not sampled
numactl: numactl --physcpubind=0-7 --preferred=0 job
"#;

#[test]
fn gb200_like_tray() {
    let d = tempfile::tempdir().expect("tmp");
    gb200(d.path());
    check("gb200 topo", &run(d.path(), &["topo"], &[]), GB200_TOPO);
    // A job given the third GPU (by UUID, as HTCondor and CUDA name it):
    // next to it on Grace 1, its memory on Grace 1's DRAM, not on the
    // GPU's memory node 4; 20 GiB do not fit there: preferred there.
    let job = |mem: &str| {
        run(
            d.path(),
            &["run", "--auto", "--cpus", "4", "--mem", mem, "--sample", "0", "--dry-run", "--", "reco"],
            &[("CUDA_VISIBLE_DEVICES", "GPU-00000002-1111-2222-3333-444444444444")],
        )
    };
    check("gb200 gpu job", &(job("8G") + &job("20G")), GB200_GPU_JOB);
}

#[test]
fn cxl_server() {
    let d = tempfile::tempdir().expect("tmp");
    cxl(d.path());
    check("cxl topo", &run(d.path(), &["topo"], &[]), CXL_TOPO);
    // auto never puts a job's memory on a CXL node, also when it does not
    // fit the DRAM.
    let job = |mem: &str| {
        run(d.path(), &["run", "--auto", "--cpus", "4", "--mem", mem, "--sample", "0", "--dry-run", "--", "job"], &[])
    };
    check("cxl job", &(job("8G") + &job("20G")), CXL_JOB);
}

/// docs/batch.md's worked example: a 2-socket node with 8 GPUs, GPUs 0-3
/// on socket 0, 4-7 on socket 1 (device minors in bus order, as the
/// driver numbers them), Slurm's gres.conf `File=/dev/nvidia[0-7]`; a step
/// of two tasks given GPUs 3 and 4.
fn eight_gpus(root: &Path) {
    SynthMachine::of_nodes(&[("0-47", 262144), ("48-95", 262144)]).with_distance(0, 1, 21).write(root).expect("write");
    let buses = ["18", "2a", "3a", "5d", "9a", "ab", "ba", "db"];
    let gpus: Vec<SynthDevice> = (0u32..)
        .zip(buses)
        .map(|(i, bus)| SynthDevice {
            address: format!("0000:{bus}:00.0"),
            node: Some(i / 4),
            kind: SynthDeviceKind::NvidiaGpu {
                minor: i,
                model: "NVIDIA H100 80GB HBM3".into(),
                uuid: format!("GPU-{i}0000000-0000-0000-0000-000000000000"),
                memory_node: None,
            },
        })
        .collect();
    write_devices(root, &gpus).expect("devices");
    let conf = root.join("etc/slurm/gres.conf");
    std::fs::create_dir_all(conf.parent().expect("parent")).expect("mkdir");
    std::fs::write(conf, "NodeName=gpu[01-16] Name=gpu Type=h100 File=/dev/nvidia[0-7]\n").expect("gres.conf");
}

const EIGHT_GPUS: &str = r#"decision: node(s) 0 (NearDevices)
reason: the job's GPU 3 (0000:5d:00.0) on node 0: node 0 has 48 idle CPUs (need 8) and 230.4 GiB free (need 32.0 GiB): CPUs and memory bound there
cpus: 8 (--cpus)
view: not sampled
numactl: numactl --physcpubind=0-47 --membind=0 train
decision: node(s) 1 (NearDevices)
reason: the job's GPU 4 (0000:9a:00.0) on node 1: node 1 has 48 idle CPUs (need 8) and 230.4 GiB free (need 32.0 GiB): CPUs and memory bound there
cpus: 8 (--cpus)
view: not sampled
numactl: numactl --physcpubind=48-95 --membind=1 train
decision: node(s) 0 (OneNode)
reason: node 0 has 48 idle CPUs (need 8) and 230.4 GiB free (need 0.0 GiB), the most free memory of the 2 node(s) with enough idle CPUs (devices not known: CUDA_VISIBLE_DEVICES=3: CUDA device 3: CUDA's order is not the PCI bus order without CUDA_DEVICE_ORDER=PCI_BUS_ID: placed as without them)
cpus: 8 (--cpus)
view: not sampled
numactl: numactl --physcpubind=0-47 --membind=0 train
"#;

#[test]
fn eight_gpu_node_of_the_docs() {
    let d = tempfile::tempdir().expect("tmp");
    eight_gpus(d.path());
    let task = |id: &str| {
        run(
            d.path(),
            &["run", "--auto", "--cpus", "8", "--mem", "32G", "--sample", "0", "--dry-run", "--", "train"],
            &[("SLURM_STEP_GPUS", "3,4"), ("SLURMD_NODENAME", "gpu07"), ("SLURM_NTASKS", "2"), ("SLURM_LOCALID", id)],
        )
    };
    let unknown = run(
        d.path(),
        &["run", "--auto", "--cpus", "8", "--sample", "0", "--dry-run", "--", "train"],
        &[("CUDA_VISIBLE_DEVICES", "3")],
    );
    check("eight gpus", &(task("0") + &task("1") + &unknown), EIGHT_GPUS);
}
