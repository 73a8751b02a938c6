use super::*;
use crate::sys::SysRoot;
use crate::topo::synth::SynthMachine;

fn topo(m: &SynthMachine) -> (tempfile::TempDir, Topology) {
    let d = tempfile::tempdir().expect("tmp");
    m.write(d.path()).expect("write");
    let t = Topology::read(&SysRoot::at(d.path())).expect("read");
    (d, t)
}

const GIB: u64 = 1 << 30;

fn loads(t: &Topology, idle: &[usize], free_gib: &[u64]) -> Vec<NodeLoad> {
    t.nodes
        .iter()
        .enumerate()
        .map(|(i, n)| NodeLoad {
            node: n.id,
            idle_cpus: n.cpus.iter().take(idle[i]).collect(),
            free_bytes: free_gib[i] * GIB,
            placed: 0,
        })
        .collect()
}

fn req(cpus: u32, mem_gib: u64) -> AutoRequest {
    AutoRequest { cpus, mem_bytes: mem_gib * GIB, reserve: CpuSet::new(), near: None }
}

#[test]
fn fits_one_node_with_most_free_memory() {
    let (_d, t) = topo(&SynthMachine::amd_4s_8n(8, 16384));
    let l = loads(&t, &[8, 2, 8, 8, 8, 8, 8, 8], &[10, 15, 12, 3, 4, 5, 6, 7]);
    let d = decide(&t, &l, &req(4, 8)).expect("fits");
    assert_eq!(d.rule, Rule::OneNode);
    assert_eq!(d.nodes.to_list(), "2", "node 1 has more memory but only 2 idle CPUs");
    let m = d.plan.memory.expect("mem");
    assert_eq!((m.mode, m.nodes.to_list()), (MemMode::Bind, "2".to_string()));
    assert_eq!(d.plan.cpus.expect("cpus"), t.node(2).expect("n").cpus);
}

#[test]
fn too_much_memory_for_a_node_prefers() {
    let (_d, t) = topo(&SynthMachine::rr_4n(16, 8192));
    let l = loads(&t, &[4, 4, 4, 4], &[6, 7, 5, 4]);
    let d = decide(&t, &l, &req(2, 12)).expect("decide");
    assert_eq!(d.rule, Rule::OneNodePreferMemory);
    assert_eq!(d.nodes.to_list(), "1");
    let m = d.plan.memory.expect("mem");
    assert_eq!((m.mode, m.nodes.to_list()), (MemMode::Preferred, "1".to_string()));
}

#[test]
fn more_cpus_than_a_node_takes_the_nearest_group() {
    // AMD: nodes 2k and 2k+1 share a package (distance 16), others 22.
    let (_d, t) = topo(&SynthMachine::amd_4s_8n(4, 4096));
    let l = loads(&t, &[4, 1, 4, 4, 4, 4, 4, 4], &[3, 3, 3, 3, 3, 3, 3, 3]);
    let d = decide(&t, &l, &req(6, 2)).expect("decide");
    assert_eq!(d.rule, Rule::NodeGroup);
    // 0+1 has only 5 idle; 2+3 is a same-package pair with 8.
    assert_eq!(d.nodes.to_list(), "2-3");
    assert!(d.reason.contains("largest distance 16"), "{}", d.reason);
}

#[test]
fn larger_than_the_machine_is_refused() {
    let (_d, t) = topo(&SynthMachine::rr_4n(8, 1024));
    let l = loads(&t, &[2, 2, 2, 2], &[1, 1, 1, 1]);
    let e = decide(&t, &l, &req(9, 1)).unwrap_err();
    assert!(e.0.contains("9 CPUs") && e.0.contains("8 idle CPUs"), "{e}");
    let e = decide(&t, &l, &req(1, 5)).unwrap_err();
    assert!(e.0.contains("pending"), "{e}");
}

#[test]
fn reserve_keeps_cpus_out() {
    let (_d, t) = topo(&SynthMachine::rr_4n(8, 1024));
    let l = loads(&t, &[2, 2, 2, 2], &[1, 1, 1, 1]);
    let mut r = req(2, 0);
    r.reserve = CpuSet::parse_list("0,4").expect("l"); // node 0's CPUs
    let d = decide(&t, &l, &r).expect("decide");
    assert_ne!(d.nodes.to_list(), "0");
    assert!(!d.plan.cpus.expect("c").intersects(&r.reserve));
}

#[test]
fn reserve_lists_in_numactl_syntax() {
    let online = CpuSet::parse_list("0-7").expect("cpus");
    assert_eq!(parse_reserve("", &online), Ok(CpuSet::new()));
    assert_eq!(parse_reserve(" 0-1,4 ", &online).map(|c| c.to_list()), Ok("0-1,4".to_string()));
    assert_eq!(parse_reserve("!0-5", &online).map(|c| c.to_list()), Ok("6-7".to_string()));
    // A CPU that is not there is reserved harmlessly (it could not be
    // given anyway).
    assert_eq!(parse_reserve("9", &online).map(|c| c.to_list()), Ok("9".to_string()));
    assert!(parse_reserve("x-", &online).expect_err("syntax").starts_with("x-: "));
}

#[test]
fn loads_from_idle_cpus_and_free_memory() {
    let (_d, t) = topo(&SynthMachine::amd_4s_8n(4, 1024));
    let idle = CpuSet::parse_list("0,5").expect("cpus");
    let l = loads_of(&t, &idle);
    assert_eq!(l.len(), t.nodes.len());
    for (load, n) in l.iter().zip(&t.nodes) {
        assert_eq!(load.node, n.id);
        assert_eq!(load.idle_cpus, n.cpus.intersection(&idle));
        assert_eq!(load.free_bytes, n.memory.and_then(|m| m.free_bytes).unwrap_or(0));
    }
    assert_eq!(l.iter().map(|x| x.idle_cpus.len()).sum::<usize>(), 2);
}

#[test]
fn among_fitting_nodes_the_one_with_fewest_placed_jobs_first() {
    let (_d, t) = topo(&SynthMachine::amd_4s_8n(8, 16384));
    let mut l = loads(&t, &[8; 8], &[10, 15, 12, 3, 4, 5, 6, 7]);
    // Node 1 has the most free memory but already holds a placed job.
    l[1].placed = 1;
    let d = decide(&t, &l, &req(4, 8)).expect("fits");
    assert_eq!(d.nodes.to_list(), "2");
    // Placed jobs everywhere alike: free memory decides again.
    for x in &mut l {
        x.placed = 1;
    }
    assert_eq!(decide(&t, &l, &req(4, 8)).expect("fits").nodes.to_list(), "1");
}

#[test]
fn page_cache_the_kernel_reclaims_first_counts_as_free() {
    // A busy host: 0.2 GiB MemFree but 12 GiB of inactive page cache on
    // node 1; node 0 has neither. A 1 GiB job fits node 1 (numad's rule
    // with its default -C 1), and without the cache line it does not.
    let d = tempfile::tempdir().expect("tmp");
    SynthMachine::rr_4n(2, 16384).write(d.path()).expect("write");
    let meminfo = |node: u32, free_kb: u64, inactive_kb: Option<u64>| {
        let mut text = format!("Node {node} MemTotal: 16777216 kB\nNode {node} MemFree: {free_kb} kB\n");
        if let Some(i) = inactive_kb {
            text.push_str(&format!("Node {node} Inactive(file): {i} kB\n"));
        }
        std::fs::write(d.path().join(format!("sys/devices/system/node/node{node}/meminfo")), text).expect("meminfo");
    };
    meminfo(0, 0, Some(0));
    meminfo(1, 200 * 1024, Some(12 * 1024 * 1024));
    meminfo(2, 0, None);
    meminfo(3, 0, None);
    let t = Topology::read(&SysRoot::at(d.path())).expect("read");
    let m1 = t.node(1).and_then(|n| n.memory).expect("node 1 memory");
    assert_eq!((m1.free_bytes, m1.inactive_file_bytes), (Some(200 << 20), Some(12 * GIB)));
    assert_eq!(m1.available_bytes(), Some(12 * GIB + (200 << 20)));
    let l = loads_of(&t, &t.allowed.cpus);
    assert_eq!(l.iter().map(|l| l.free_bytes).collect::<Vec<_>>(), vec![0, 12 * GIB + (200 << 20), 0, 0]);
    let d1 = decide(&t, &l, &req(1, 1)).expect("fits node 1");
    assert_eq!((d1.rule, d1.nodes.to_list()), (Rule::OneNode, "1".to_string()));

    meminfo(1, 200 * 1024, None);
    let t = Topology::read(&SysRoot::at(d.path())).expect("read");
    assert!(decide(&t, &loads_of(&t, &t.allowed.cpus), &req(1, 1)).is_err(), "0.2 GiB free and no cache: pending");
}

/// The probe's machine, `--node 0-1:0 --node 2-3:1G`, and the same
/// numbered the other way, `--node 0-1:1G --node 2-3:0`: with every CPU
/// idle, a 2-CPU job goes to the node with memory of its own either way.
#[test]
fn a_memory_less_node_comes_after_a_node_with_its_own_memory() {
    for (nodes, local, memless) in [([("0-1", 0), ("2-3", 1024)], 1, 0), ([("0-1", 1024), ("2-3", 0)], 0, 1)] {
        let (_d, t) = topo(&SynthMachine::of_nodes(&nodes));
        let l = loads_of(&t, &t.allowed.cpus);
        let d = decide(&t, &l, &req(2, 0)).expect("fits");
        assert_eq!((d.rule, d.nodes.to_list()), (Rule::OneNode, local.to_string()), "{nodes:?}: {}", d.reason);
        let m = d.plan.memory.expect("mem");
        assert_eq!((m.mode, m.nodes.to_list()), (MemMode::Bind, local.to_string()), "{nodes:?}");
        assert_eq!(d.plan.cpus.expect("cpus"), t.node(local).expect("n").cpus, "{nodes:?}");
        // Its reason says nothing of the memory-less node's memory.
        assert!(
            d.reason.starts_with(&format!("node {local} has 2 idle CPUs (need 2) and 0.9 GiB free")),
            "{}",
            d.reason
        );
        assert!(d.reason.ends_with("of the 1 node(s) with memory of their own and enough idle CPUs"), "{}", d.reason);

        // Even with more placed jobs there (fewer on the memory-less node).
        let mut l2 = l.clone();
        l2[local as usize].placed = 3;
        assert_eq!(decide(&t, &l2, &req(2, 0)).expect("fits").nodes.to_list(), local.to_string(), "{nodes:?}");

        // Only when the node with memory lacks the idle CPUs does the
        // memory-less node take the job, its memory from the other node.
        let mut busy = l.clone();
        busy[local as usize].idle_cpus = CpuSet::new();
        let d = decide(&t, &busy, &req(2, 0)).expect("fits");
        assert_eq!((d.rule, d.nodes.to_list()), (Rule::OneNode, memless.to_string()), "{nodes:?}");
        let m = d.plan.memory.expect("mem");
        assert_eq!((m.mode, m.nodes.to_list()), (MemMode::Bind, local.to_string()), "{nodes:?}");
        assert_eq!(
            d.reason,
            format!(
                "node {memless} has 2 idle CPUs (need 2) and no memory: memory from node {local} (distance 20), \
                 0.9 GiB free (need 0.0 GiB); no node with memory of its own has 2 idle CPUs"
            )
        );
    }
}

/// The test bed's `memless` machine with a fourth node: node 1 has no
/// memory and is at distance 20 from nodes 0 and 2, so its memory would
/// come from both and it looked the freest of all. Nodes 0 and 2 come
/// first (2 having more free memory), node 1 only when they are busy; too
/// little free memory on the nodes its memory comes from makes it prefer
/// them.
#[test]
fn a_memory_less_node_between_two_is_not_the_freest() {
    let m = SynthMachine::of_nodes(&[("0-1", 1024), ("2-3", 0), ("4-5", 1024), ("6-7", 8192)])
        .with_distance(0, 2, 30)
        .with_distance(1, 3, 30);
    let (_d, t) = topo(&m);
    let mut l = loads(&t, &[2, 2, 2, 0], &[1, 0, 2, 8]);
    let d = decide(&t, &l, &req(2, 1)).expect("fits");
    assert_eq!(d.nodes.to_list(), "2", "{}", d.reason);
    assert!(d.reason.ends_with("the most free memory of the 2 node(s) with memory of their own and enough idle CPUs"));
    l[0].idle_cpus = CpuSet::new();
    l[2].idle_cpus = CpuSet::new();
    let d = decide(&t, &l, &req(2, 1)).expect("fits");
    assert_eq!((d.rule, d.nodes.to_list()), (Rule::OneNode, "1".to_string()));
    let mem = d.plan.memory.expect("mem");
    assert_eq!((mem.mode, mem.nodes.to_list()), (MemMode::Bind, "0,2".to_string()));
    assert!(
        d.reason.contains("no memory: memory from nodes 0,2 (distance 20), 3.0 GiB free (need 1.0 GiB)"),
        "{}",
        d.reason
    );
    // 3 GiB free on its memory nodes: 4 GiB is too much. Memory preferred
    // on both and spilling.
    let d = decide(&t, &l, &req(2, 4)).expect("fits");
    assert_eq!((d.rule, d.nodes.to_list()), (Rule::OneNodePreferMemory, "1".to_string()));
    let mem = d.plan.memory.expect("mem");
    assert_eq!((mem.mode, mem.nodes.to_list()), (MemMode::PreferredMany, "0,2".to_string()));
    assert_eq!(
        d.reason,
        "no node with memory of its own has 2 idle CPUs: node 1 has them and no memory: memory from nodes 0,2 \
         (distance 20), 3.0 GiB free (need 4.0 GiB); CPUs bound to node 1, memory preferred on nodes 0,2 and spilling \
         to other nodes"
    );
}

/// A job larger than a node, numbered either way: a group holding the
/// memory-less node says where that node's memory comes from.
#[test]
fn a_group_says_where_its_memory_less_node_takes_memory_from() {
    for (nodes, memless) in [
        ([("0-1", 0), ("2-3", 1024), ("4-5", 1024), ("6-7", 1024)], 0),
        ([("0-1", 1024), ("2-3", 1024), ("4-5", 1024), ("6-7", 0)], 3),
    ] {
        let (_d, t) = topo(&SynthMachine::of_nodes(&nodes));
        let l = loads_of(&t, &t.allowed.cpus);
        let d = decide(&t, &l, &req(8, 0)).expect("fits");
        assert_eq!((d.rule, d.nodes.len()), (Rule::NodeGroup, 4));
        let from = if memless == 0 { "1-3" } else { "0-2" };
        assert!(
            d.reason.ends_with(&format!("; node {memless} has no memory: memory from nodes {from} (distance 20)")),
            "{}",
            d.reason
        );
        let m = d.plan.memory.expect("mem");
        assert!(!m.nodes.contains(memless), "{}", m.nodes.to_list());
    }
}

/// Memory-only nodes are never CPU targets, however free.
#[test]
fn memory_only_nodes_are_never_cpu_targets() {
    let (_d, t) = topo(&SynthMachine::of_nodes(&[("", 65536), ("0-1", 1024), ("2-3", 1024)]));
    let l = loads_of(&t, &t.allowed.cpus);
    let d = decide(&t, &l, &req(2, 0)).expect("fits");
    assert_ne!(d.nodes.to_list(), "0");
    let d = decide(&t, &l, &req(4, 0)).expect("fits");
    assert_eq!(d.nodes.to_list(), "1-2");
}

/// A node whose memory the cpuset does not allow is memory-less for the
/// job: it comes after the nodes whose memory it may use, and its memory
/// comes from the nearest node whose memory it allows (not from none,
/// its own being the nearest).
#[test]
fn a_node_whose_memory_the_cpuset_forbids_counts_as_memory_less() {
    let m = SynthMachine::of_nodes(&[("0-1", 1024), ("2-3", 1024), ("4-5", 1024)]).with_distance(0, 2, 30);
    let (_d, mut t) = topo(&m);
    t.allowed.nodes = NodeSet::parse_list("1-2").expect("nodes");
    assert_eq!(memory_for(&t, &NodeSet::parse_list("0").expect("n")).to_list(), "1");
    let mut l = loads_of(&t, &t.allowed.cpus);
    let d = decide(&t, &l, &req(2, 0)).expect("fits");
    assert_ne!(d.nodes.to_list(), "0", "{}", d.reason);
    l[1].idle_cpus = CpuSet::new();
    l[2].idle_cpus = CpuSet::new();
    let d = decide(&t, &l, &req(2, 0)).expect("fits");
    assert_eq!(d.nodes.to_list(), "0");
    assert!(
        d.reason.contains("and no memory the cpuset allows: memory from node 1 (distance 20), 0.9 GiB free"),
        "{}",
        d.reason
    );
}
