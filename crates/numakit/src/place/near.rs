//! A job next to its devices: where `auto` puts a job that was given GPUs
//! or NICs ([`Near`]), before its usual rules. Pure, like the rest of
//! [`auto`](super::auto).
//!
//! The job's CPUs go to the CPU node(s) nearest its devices (a device's
//! own node, or for a device the kernel puts on a node without CPUs, the
//! CPU nodes that node is local to) when they have the idle CPUs it needs,
//! its memory with them (bound when it fits there, else preferred). A job
//! whose devices sit on several nodes gets all of them, the CPUs and the
//! memory of each: one process that drives GPUs on two sockets has threads
//! next to each (a batch system's tasks are given one device each first,
//! `batch::devices`). Where they lack the idle CPUs, `auto` places the job
//! as without devices and says why; `--numa=devices` ([`Near::required`])
//! binds it there anyway, its memory preferred there when it does not fit.
//! Memory-only nodes are never CPU targets, and a GPU's own memory node
//! (Grace Hopper, GB200) is never a job's ordinary memory
//! ([`super::auto::ordinary_memory`]).

use super::auto::{memory_for, AutoDecision, AutoRequest, NodeLoad, Rule};
use super::plan::{MemMode, MemPolicy, Plan};
use crate::sets::{CpuSet, NodeSet};
use crate::topo::Topology;

/// The devices a job was given, as placement sees them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Near {
    /// For the reason line: `GPU 1 (0000:21:00.0) on node 1`.
    pub what: String,
    /// The nodes the kernel puts the devices on (their `numa_node`).
    pub nodes: NodeSet,
    /// `--numa=devices`: placed next to them even when they lack the idle
    /// CPUs (never wider than the CPUs the job may use).
    pub required: bool,
}

/// The CPU nodes nearest `devices`' nodes: each node with CPUs itself,
/// else the CPU nodes it is local to ([`Topology::local_cpu_nodes`]).
pub fn cpu_nodes_near(topo: &Topology, devices: &NodeSet) -> NodeSet {
    devices.iter().fold(NodeSet::new(), |acc, n| match topo.node(n) {
        Some(node) if !node.cpus.is_empty() => acc.union(&std::iter::once(n).collect()),
        Some(_) => acc.union(&topo.local_cpu_nodes(n).map(|l| l.nodes).unwrap_or_default()),
        None => acc,
    })
}

/// The memory next to devices on `devices`' nodes: that of the CPU nodes
/// nearest them ([`cpu_nodes_near`]), where `auto` puts a job's memory.
pub fn memory_near(topo: &Topology, devices: &NodeSet) -> NodeSet {
    memory_for(topo, &cpu_nodes_near(topo, devices))
}

fn gib(b: u64) -> String {
    format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64)
}

fn plural(set: &NodeSet) -> &'static str {
    if set.len() == 1 {
        ""
    } else {
        "s"
    }
}

/// The decision next to the job's devices, or why not (`Err`: the reason
/// `auto`'s usual rules place it instead, one clause). `allowed_cpus` are
/// the CPUs the job may use (cpuset and affinity, less `--reserve`).
pub fn decide_near(
    topo: &Topology,
    loads: &[NodeLoad],
    req: &AutoRequest,
    near: &Near,
    allowed_cpus: &CpuSet,
) -> Result<AutoDecision, String> {
    let targets: NodeSet = cpu_nodes_near(topo, &near.nodes)
        .iter()
        .filter(|&n| topo.node(n).is_some_and(|node| node.cpus.intersects(allowed_cpus)))
        .collect();
    if targets.is_empty() {
        return Err(format!("the job's {} may not use CPUs near them", near.what));
    }
    let idle = |n: u32| -> CpuSet {
        loads.iter().find(|l| l.node == n).map_or_else(CpuSet::new, |l| l.idle_cpus.intersection(allowed_cpus))
    };
    let free = |m: &NodeSet| -> u64 { loads.iter().filter(|l| m.contains(l.node)).map(|l| l.free_bytes).sum() };
    let idle_all: usize = targets.iter().map(|n| idle(n).len()).sum();
    let need = req.cpus.max(1) as usize;
    let fits = idle_all >= need;
    // Devices on several nodes: all of them, the job's threads next to
    // each device.
    let chosen = targets;
    if !fits {
        return if near.required {
            Ok(required_anyway(topo, loads, req, near, &chosen, allowed_cpus, idle_all))
        } else {
            Err(lacking(near, &chosen, idle_all, need))
        };
    }
    let mem = memory_for(topo, &chosen);
    let have = free(&mem);
    let cpus = topo.cpus_of_nodes(&chosen).intersection(allowed_cpus);
    let (mode, how) = if have >= req.mem_bytes {
        (MemMode::Bind, "CPUs and memory bound there")
    } else if mem.len() == 1 {
        (MemMode::Preferred, "CPUs bound there, memory preferred there")
    } else {
        (MemMode::PreferredMany, "CPUs bound there, memory preferred there")
    };
    let source =
        if mem == chosen { String::new() } else { format!(" (memory on node{} {})", plural(&mem), mem.to_list()) };
    let reason = format!(
        "the job's {}: node{} {} {} {} idle CPUs (need {}) and {} free (need {}){source}: {how}",
        near.what,
        plural(&chosen),
        chosen.to_list(),
        if chosen.len() == 1 { "has" } else { "have" },
        idle_all,
        need,
        gib(have),
        gib(req.mem_bytes),
    );
    Ok(AutoDecision {
        rule: Rule::NearDevices,
        nodes: chosen,
        plan: Plan { cpus: Some(cpus), memory: Some(MemPolicy { mode, nodes: mem, balancing: false }) },
        reason,
    })
}

/// Why not next to the devices: `node 1, next to the job's GPU 1
/// (0000:21:00.0) on node 1, has 0 idle CPUs (need 2)`.
fn lacking(near: &Near, nodes: &NodeSet, idle: usize, need: usize) -> String {
    format!(
        "node{} {}, next to the job's {}, {} {idle} idle CPU{} (need {need})",
        plural(nodes),
        nodes.to_list(),
        near.what,
        if nodes.len() == 1 { "has" } else { "have" },
        if idle == 1 { "" } else { "s" },
    )
}

/// `--numa=devices` where the device nodes lack idle CPUs: bound there
/// all the same, memory bound when it fits there, else preferred.
fn required_anyway(
    topo: &Topology,
    loads: &[NodeLoad],
    req: &AutoRequest,
    near: &Near,
    chosen: &NodeSet,
    allowed_cpus: &CpuSet,
    idle: usize,
) -> AutoDecision {
    let mem = memory_for(topo, chosen);
    let have: u64 = loads.iter().filter(|l| mem.contains(l.node)).map(|l| l.free_bytes).sum();
    let mode = if have >= req.mem_bytes {
        MemMode::Bind
    } else if mem.len() == 1 {
        MemMode::Preferred
    } else {
        MemMode::PreferredMany
    };
    AutoDecision {
        rule: Rule::NearDevices,
        nodes: chosen.clone(),
        plan: Plan {
            cpus: Some(topo.cpus_of_nodes(chosen).intersection(allowed_cpus)),
            memory: Some(MemPolicy { mode, nodes: mem.clone(), balancing: false }),
        },
        reason: format!(
            "the job's {}: node{} {} {} only {} idle CPUs (need {}), bound there as --numa=devices asks, memory {} on node{} {} ({} free, need {})",
            near.what,
            plural(chosen),
            chosen.to_list(),
            if chosen.len() == 1 { "has" } else { "have" },
            idle,
            req.cpus.max(1),
            mode.name(),
            plural(&mem),
            mem.to_list(),
            gib(have),
            gib(req.mem_bytes)
        ),
    }
}

#[cfg(test)]
mod tests;
