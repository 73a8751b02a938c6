use super::*;
use crate::place::auto::{decide, loads_of, ordinary_memory};
use crate::sys::SysRoot;
use crate::topo::synth::{write_devices, SynthDevice, SynthDeviceKind, SynthMachine};

const GIB: u64 = 1 << 30;

fn topo(m: &SynthMachine, gpus: &[(u32, Option<u32>)]) -> (tempfile::TempDir, Topology) {
    let d = tempfile::tempdir().expect("tmp");
    m.write(d.path()).expect("write");
    let devs: Vec<SynthDevice> = (0u32..)
        .zip(gpus)
        .map(|(i, (node, mem))| SynthDevice {
            address: format!("0000:{:02x}:00.0", 0x10 + i),
            node: Some(*node),
            kind: SynthDeviceKind::NvidiaGpu {
                minor: i,
                model: "NVIDIA GB200".into(),
                uuid: format!("GPU-{i:08x}"),
                memory_node: *mem,
            },
        })
        .collect();
    write_devices(d.path(), &devs).expect("devices");
    let t = Topology::read(&SysRoot::at(d.path())).expect("read");
    (d, t)
}

fn near(nodes: &str, required: bool) -> Option<Near> {
    Some(Near { what: format!("GPU on node {nodes}"), nodes: NodeSet::parse_list(nodes).expect("nodes"), required })
}

fn req(cpus: u32, mem_gib: u64, near: Option<Near>) -> AutoRequest {
    AutoRequest { cpus, mem_bytes: mem_gib * GIB, reserve: CpuSet::new(), near }
}

fn two_nodes() -> SynthMachine {
    SynthMachine::of_nodes(&[("0-3", 4096), ("4-7", 2048)])
}

/// Next to the GPU although the other node has more free memory (rule 1
/// alone would take node 0).
#[test]
fn a_gpu_job_goes_next_to_its_gpu() {
    let (_d, t) = topo(&two_nodes(), &[(1, None)]);
    let l = loads_of(&t, &t.allowed.cpus);
    assert_eq!(decide(&t, &l, &req(2, 1, None)).expect("fits").nodes.to_list(), "0");
    let d = decide(&t, &l, &req(2, 1, near("1", false))).expect("fits");
    assert_eq!((d.rule, d.nodes.to_list()), (Rule::NearDevices, "1".into()));
    assert_eq!(d.plan.cpus.as_ref().map(|c| c.to_list()), Some("4-7".into()));
    let m = d.plan.memory.expect("memory");
    assert_eq!((m.mode, m.nodes.to_list()), (MemMode::Bind, "1".into()));
    assert_eq!(
        d.reason,
        "the job's GPU on node 1: node 1 has 4 idle CPUs (need 2) and 1.8 GiB free (need 1.0 GiB): CPUs and memory bound there"
    );
    // Memory that does not fit there is preferred there.
    let d = decide(&t, &l, &req(2, 3, near("1", false))).expect("fits");
    assert_eq!(d.plan.memory.map(|m| m.mode), Some(MemMode::Preferred));
}

/// Without the idle CPUs next to its GPU, `auto` places the job as
/// without devices and says why; `devices` binds it there all the same.
#[test]
fn no_room_next_to_the_gpu() {
    let (_d, t) = topo(&two_nodes(), &[(1, None)]);
    let mut l = loads_of(&t, &t.allowed.cpus);
    l[1].idle_cpus = CpuSet::parse_list("7").expect("cpus");
    let d = decide(&t, &l, &req(2, 0, near("1", false))).expect("fits");
    assert_eq!(d.nodes.to_list(), "0");
    assert!(
        d.reason.starts_with(
            "node 1, next to the job's GPU on node 1, has 1 idle CPU (need 2): placed as without them: node 0 has"
        ),
        "{}",
        d.reason
    );
    let d = decide(&t, &l, &req(2, 0, near("1", true))).expect("placed");
    assert_eq!((d.rule, d.nodes.to_list()), (Rule::NearDevices, "1".into()));
    assert_eq!(d.plan.cpus.map(|c| c.to_list()), Some("4-7".into()));
    assert!(d.reason.contains("only 1 idle CPUs (need 2), bound there as --numa=devices asks"), "{}", d.reason);
    // A job larger than the machine still waits (auto).
    assert!(decide(&t, &l, &req(9, 0, near("1", false))).is_err());
}

/// GPUs on two nodes: the job's CPUs and memory on both.
#[test]
fn gpus_on_two_nodes_take_both() {
    let (_d, t) = topo(&two_nodes(), &[(0, None), (1, None)]);
    let l = loads_of(&t, &t.allowed.cpus);
    let d = decide(&t, &l, &req(2, 0, near("0-1", false))).expect("fits");
    assert_eq!(d.nodes.to_list(), "0-1");
    assert_eq!(d.plan.cpus.map(|c| c.to_list()), Some("0-7".into()));
    assert_eq!(d.plan.memory.map(|m| m.nodes.to_list()), Some("0-1".into()));
}

/// The CPUs a job may not use are no target: a Slurm task bound to node
/// 0 whose GPU is on node 1 keeps its CPUs, memory with them.
#[test]
fn never_wider_than_the_cpus_given() {
    let (_d, t) = topo(&two_nodes(), &[(1, None)]);
    let l = loads_of(&t, &t.allowed.cpus);
    let r = AutoRequest { reserve: CpuSet::parse_list("4-7").expect("cpus"), ..req(2, 0, near("1", false)) };
    let d = decide(&t, &l, &r).expect("fits");
    assert_eq!(d.nodes.to_list(), "0");
    assert!(
        d.reason.starts_with("the job's GPU on node 1 may not use CPUs near them: placed as without them"),
        "{}",
        d.reason
    );
}

/// A GB200-like node: two Grace CPU nodes, each GPU's memory a memory-only
/// node at distance 80 from both (the firmware says nothing of where it
/// belongs). The GPUs' PCI devices are on the CPU nodes; their memory
/// nodes are never a job's ordinary memory, nor CPU targets.
#[test]
fn gpu_memory_nodes_are_not_ordinary_memory() {
    let mut m = SynthMachine::of_nodes(&[("0-3", 4096), ("4-7", 4096), ("", 8192), ("", 8192)]);
    for (a, b) in [(0, 2), (0, 3), (1, 2), (1, 3)] {
        m = m.with_distance(a, b, 80);
    }
    let (_d, t) = topo(&m, &[(0, Some(2)), (1, Some(3))]);
    assert_eq!(t.gpu_memory_nodes().to_list(), "2-3");
    assert_eq!(ordinary_memory(&t).to_list(), "0-1");
    let l = loads_of(&t, &t.allowed.cpus);
    // More memory than a CPU node has: preferred there, never on a GPU's.
    let d = decide(&t, &l, &req(2, 6, near("1", false))).expect("fits");
    let mem = d.plan.memory.expect("memory");
    assert_eq!((d.nodes.to_list(), mem.mode, mem.nodes.to_list()), ("1".into(), MemMode::Preferred, "1".into()));
    // The whole machine's free memory is the CPU nodes'.
    assert!(decide(&t, &l, &req(2, 9, None)).is_err());
}

/// A GPU the kernel puts on a node without CPUs (a generic initiator, or
/// its memory node): the CPU nodes that node is local to.
#[test]
fn a_gpu_on_a_cpu_less_node_goes_to_its_local_cpus() {
    let m = SynthMachine::of_nodes(&[("0-3", 4096), ("4-7", 4096), ("", 1024)]).with_distance(1, 2, 11);
    let (_d, t) = topo(&m, &[(2, None)]);
    assert_eq!(cpu_nodes_near(&t, &NodeSet::parse_list("2").expect("n")).to_list(), "1");
    let l = loads_of(&t, &t.allowed.cpus);
    let d = decide(&t, &l, &req(1, 0, near("2", false))).expect("fits");
    assert_eq!(d.nodes.to_list(), "1");
    assert_eq!(d.plan.memory.map(|m| m.nodes.to_list()), Some("1".into()));
}

/// A memory-less CPU node next to the GPU: its memory from its nearest
/// node with memory, said in the reason.
#[test]
fn a_memory_less_node_next_to_the_gpu() {
    let m = SynthMachine::of_nodes(&[("0-3", 4096), ("4-7", 0), ("8-11", 4096)]).with_distance(1, 2, 30);
    let (_d, t) = topo(&m, &[(1, None)]);
    let l = loads_of(&t, &t.allowed.cpus);
    let d = decide(&t, &l, &req(2, 0, near("1", false))).expect("fits");
    assert_eq!(d.nodes.to_list(), "1");
    assert_eq!(d.plan.memory.map(|m| m.nodes.to_list()), Some("0".into()));
    assert!(d.reason.contains("(memory on node 0)"), "{}", d.reason);
}
