//! The decision core's tests, each on hand-built inputs: machines,
//! processes, snapshots and histories all come from the one fixture
//! below, so a test states only what differs.
//!
//! * `placing`: where a process goes and whether a move pays;
//! * `room`: CPUs and memory a move may take, and what it displaces;
//! * `judging`: moves judged after the fact, reverts, what is left alone;
//! * `learning`: what the history observes (drift, run times);
//! * `inputs`: the machine, the configuration and the actions as data.

use std::collections::BTreeMap;

use super::*;
use crate::daemon::{MachineNode, MemPolicy, NodePos, NodeState, Placement, ProcCommitted, ProcObserved, Progress};
use crate::sets::NodeSet;

mod inputs;
mod judging;
mod learning;
mod placing;
mod room;

pub(super) const GIB: u64 = 1 << 30;
pub(super) const PAGE: u64 = 4096;

pub(super) fn ns(list: &str) -> NodeSet {
    NodeSet::parse_list(list).expect("node list")
}

/// A node of `cpus` CPUs and `mem_gib` GiB.
pub(super) fn node(id: u32, cpus: u32, mem_gib: u64) -> MachineNode {
    MachineNode { id, cpus, mem_bytes: mem_gib * GIB }
}

/// A machine of nodes (id, CPUs, GiB) and SLIT distances.
pub(super) fn machine(nodes: &[(u32, u32, u64)], distances: Vec<Vec<u32>>) -> Machine {
    let nodes = nodes.iter().map(|&(id, cpus, gib)| node(id, cpus, gib)).collect();
    Machine::new(nodes, distances).expect("machine")
}

/// Two nodes of 4 CPUs and 8 GiB, SLIT 10/21.
pub(super) fn two() -> Machine {
    machine(&[(0, 4, 8), (1, 4, 8)], vec![vec![10, 21], vec![21, 10]])
}

/// Four nodes of 2 CPUs and 4 GiB, SLIT 10/20.
pub(super) fn four_of_two() -> Machine {
    let dist: Vec<Vec<u32>> = (0..4).map(|a| (0..4).map(|b| if a == b { 10 } else { 20 }).collect()).collect();
    machine(&[(0, 2, 4), (1, 2, 4), (2, 2, 4), (3, 2, 4)], dist)
}

/// An unbound process, 600 s old, of as many threads as it uses CPUs,
/// running on `cpu` (node, CPUs), its memory `mem` (node, GiB), with a
/// measured memory stall share; progress is its CPU use.
pub(super) fn proc_(pid: i32, comm: &str, cpu: &[(u32, f64)], mem: &[(u32, u64)], stall: f64) -> ProcInfo {
    let cpus: f64 = cpu.iter().map(|c| c.1).sum();
    ProcInfo {
        pid,
        comm: comm.into(),
        uid: 1000,
        cgroup: "/user.slice".into(),
        threads: cpus.ceil() as u32,
        cpu_use: cpus,
        cpu_wait: 0.0,
        rss_bytes: mem.iter().map(|m| m.1 * GIB).sum(),
        mem_per_node: mem.iter().map(|&(n, g)| (n, g * GIB)).collect(),
        cpu_per_node: cpu.iter().copied().collect(),
        cpu_measured: true,
        rate_span_s: 0.0,
        rates_from_s: None,
        affinity: ns("0-63"),
        cpuset: NodeSet::new(),
        mem_policy: MemPolicy::Default,
        owner_pinned: false,
        age_s: 600.0,
        progress: Progress { cpu_rate: cpus, instr_rate: Some(cpus) },
        mem_stall_share: Some(stall),
    }
}

/// `job{pid}`: one busy thread on `cpu_node` (see [`proc_`]).
pub(super) fn job(pid: i32, cpu_node: u32, mem: &[(u32, u64)], stall: f64) -> ProcInfo {
    proc_(pid, &format!("job{pid}"), &[(cpu_node, 1.0)], mem, stall)
}

/// `n` one-CPU jobs pinned by their owner to `node` (load the daemon may
/// not displace), 1 GiB each there.
pub(super) fn pinned(node: u32, n: i32, pid0: i32) -> Vec<ProcInfo> {
    (0..n)
        .map(|i| {
            let mut p = job(pid0 + i, node, &[(node, 1)], 0.1);
            p.affinity = ns(&node.to_string());
            p
        })
        .collect()
}

/// A scan at `t`: per node of `m`, in its order, (free CPUs, free GiB).
pub(super) fn snap(t: f64, m: &Machine, free: &[(f64, u64)], procs: Vec<ProcInfo>) -> Snapshot {
    Snapshot {
        time_s: t,
        nodes: m
            .nodes
            .iter()
            .zip(free)
            .map(|(n, &(c, g))| NodeState { id: n.id, free_cpus: c, free_bytes: g * GIB, bound_cpus: 0.0 })
            .collect(),
        procs,
        exited: Vec::new(),
    }
}

/// numakit's first placement of a process on `cpu` (memory `mem`), made at
/// 800 s from no placement at all, progress 1.0 in instructions, memory
/// all local; not judged yet.
pub(super) fn placement(cpu: &str, mem: &str) -> Placement {
    Placement {
        cpu_nodes: ns(cpu),
        mem_nodes: ns(mem),
        prev_affinity: ns("0-63"),
        prev_policy: MemPolicy::Default,
        origin_affinity: ns("0-63"),
        origin_policy: MemPolicy::Default,
        baseline_progress: 1.0,
        baseline_is_instr: true,
        baseline_locality: 1.0,
        expected_gain: 0.05,
        at_s: 800.0,
        judged: false,
        pending: Vec::new(),
        settled_from_s: 800.0,
        need: 0.0,
    }
}

/// Records in `h` that numakit placed `p` (as seen at `now`) with `pl`,
/// its one move, made at `pl.at_s`: the process seen, and the move.
pub(super) fn record(h: &mut History, p: &ProcInfo, now: f64, pl: Placement) {
    let start_s = now - p.age_s;
    h.observed.procs.insert(p.pid, ProcObserved::new(&p.comm, start_s));
    let mut rec = ProcCommitted::new(&p.comm, start_s);
    rec.last_move_s = Some(pl.at_s);
    rec.moves = 1;
    rec.placement = Some(pl);
    h.committed.procs.insert(p.pid, rec);
}

/// Records in `h` that numakit placed `p` on `cpu` (memory `mem`) at
/// 800 s, coming from `prev` (all nodes for a first move); not judged
/// yet; the previous scan was 15 s before `now`.
pub(super) fn placed(h: &mut History, p: &ProcInfo, now: f64, cpu: &str, mem: &str, prev: &str, instr: bool) {
    let prev_policy = if prev == "0-63" { MemPolicy::Default } else { MemPolicy::Preferred(ns(prev)) };
    let pl = Placement { prev_affinity: ns(prev), prev_policy, baseline_is_instr: instr, ..placement(cpu, mem) };
    record(h, p, now, pl);
    h.observed.last_time_s = Some(now - 15.0);
}

/// An hour-old process `p` that numakit placed on `nodes` (CPUs and
/// memory) and judged; the next scan is at 1200 s.
pub(super) fn judged_placement(p: &mut ProcInfo, nodes: &str) -> History {
    p.age_s = 3600.0;
    p.affinity = ns(nodes);
    p.mem_policy = MemPolicy::Preferred(ns(nodes));
    let mut h = History::new();
    placed(&mut h, p, 1200.0, nodes, nodes, "0-63", true);
    h.committed.procs.get_mut(&p.pid).and_then(|r| r.placement.as_mut()).expect("placement").judged = true;
    h
}

pub(super) fn changes(d: &Decision) -> Vec<&Action> {
    d.changes().collect()
}

pub(super) fn why_of(d: &Decision, pid: i32) -> Vec<&Why> {
    d.actions.iter().filter(|a| a.pid == pid).map(|a| &a.reason).collect()
}

/// The binds of a decision: (pid, CPU nodes).
pub(super) fn binds(d: &Decision) -> Vec<(i32, String)> {
    d.changes()
        .filter_map(|a| match &a.kind {
            ActionKind::Bind { cpu_nodes, .. } => Some((a.pid, cpu_nodes.to_list())),
            _ => None,
        })
        .collect()
}

/// No process bound to CPUs of a node set holding `node`.
pub(super) fn assert_no_bind_on(d: &Decision, node: u32) {
    assert!(
        d.changes().all(|a| !matches!(&a.kind, ActionKind::Bind { cpu_nodes, .. } if cpu_nodes.contains(node))),
        "{:#?}",
        d.actions
    );
}
