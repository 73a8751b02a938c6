//! Placement views: numactl's `--show` format, exactly, and numakit's own
//! `show` of a process (human and JSON).

use std::fmt::Write;

use serde::Serialize;

use super::human_bytes;
use crate::sets::{CpuSet, NodeSet};

/// What `numactl --show` reports for the calling thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SelfPolicy {
    /// Kernel mode number (MPOL_DEFAULT = 0, ...).
    pub mode: i32,
    /// The policy's node mask (get_mempolicy).
    pub nodes: NodeSet,
    /// Next interleave node (get_mempolicy with MPOL_F_NODE), 0 otherwise.
    pub interleave_next: u32,
    /// CPU affinity.
    pub cpus: CpuSet,
    /// Nodes whose CPUs intersect the affinity (libnuma's run node mask).
    pub run_nodes: NodeSet,
    /// Memory nodes the thread may use (for `membind` when not bound).
    pub mems_allowed: NodeSet,
}

/// numactl's policy names.
pub fn numactl_policy_name(mode: i32) -> &'static str {
    match mode {
        0 => "default",
        1 => "preferred",
        2 => "bind",
        3 => "interleave",
        4 => "local",
        5 => "preferred-many",
        6 => "weighted-interleave",
        _ => "unknown",
    }
}

fn mask(out: &mut String, name: &str, set: &NodeSet) {
    let _ = write!(out, "{name}: ");
    for n in set.iter() {
        let _ = write!(out, "{n} ");
    }
    out.push('\n');
}

/// Renders `numactl --show` (numactl 2.0.16).
pub fn numactl_show(p: &SelfPolicy) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "policy: {}", numactl_policy_name(p.mode));
    out.push_str("preferred node: ");
    match p.mode {
        1 => {
            let _ = writeln!(out, "{}", p.nodes.first().unwrap_or(0));
        }
        3 | 6 => {
            let _ = writeln!(out, "{} (interleave next)", p.interleave_next);
        }
        2 => {
            let _ = writeln!(out, "{}", p.nodes.first().unwrap_or(0));
        }
        5 => {
            let _ = writeln!(out, "{} (preferred-many)", p.interleave_next);
        }
        _ => out.push_str("current\n"),
    }
    if p.mode == 3 {
        mask(&mut out, "interleavemask", &p.nodes);
        let _ = writeln!(out, "interleavenode: {}", p.interleave_next);
    }
    out.push_str("physcpubind: ");
    for c in p.cpus.iter() {
        let _ = write!(out, "{c} ");
    }
    out.push('\n');
    mask(&mut out, "cpubind", &p.run_nodes);
    mask(&mut out, "nodebind", &p.run_nodes);
    let membind = if p.mode == 2 { &p.nodes } else { &p.mems_allowed };
    mask(&mut out, "membind", membind);
    mask(&mut out, "preferred", &p.nodes);
    out
}

/// A thread in `numakit show PID`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ThreadView {
    /// Thread id.
    pub tid: i32,
    /// Name.
    pub comm: String,
    /// Affinity.
    pub cpus: CpuSet,
    /// CPU it last ran on.
    pub last_cpu: Option<u32>,
    /// Node of that CPU.
    pub last_node: Option<u32>,
}

/// Memory under one policy (from `numa_maps`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PolicyBytes {
    /// Policy as the kernel prints it.
    pub policy: String,
    /// Mappings with it.
    pub mappings: usize,
    /// Resident bytes under it.
    pub bytes: u64,
}

/// Bytes on one node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct NodeBytes {
    /// Node.
    pub node: u32,
    /// Bytes.
    pub bytes: u64,
}

/// `numakit show [PID]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProcessView {
    /// Process id.
    pub pid: i32,
    /// Name.
    pub comm: String,
    /// The calling thread's own policy (only for `show` without PID).
    pub policy: Option<String>,
    /// Its policy nodes.
    pub policy_nodes: Option<NodeSet>,
    /// Policies of its mappings (from `numa_maps`).
    pub mapping_policies: Vec<PolicyBytes>,
    /// `Cpus_allowed_list`.
    pub allowed_cpus: CpuSet,
    /// `Mems_allowed_list`.
    pub allowed_nodes: NodeSet,
    /// Threads.
    pub threads: Vec<ThreadView>,
    /// Resident memory per node.
    pub memory: Vec<NodeBytes>,
    /// Sum of `memory`.
    pub total_bytes: u64,
    /// The devices its batch system gave it, from its environment (left
    /// out where it names none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub devices: Option<DevicesView>,
}

/// A process's devices and whether its memory sits next to them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DevicesView {
    /// The variables they were read from (`SLURM_STEP_GPUS=1`).
    pub source: String,
    /// Those mapped to PCI devices.
    pub devices: Vec<DeviceView>,
    /// What could not be mapped, one line.
    pub unknown: Option<String>,
    /// The nodes whose memory is next to them (the memory `auto` gives a
    /// job there).
    pub memory_nodes: NodeSet,
    /// Its resident memory on those nodes.
    pub near_bytes: u64,
}

/// One device of a process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeviceView {
    /// As the batch system named it (`GPU 1`).
    pub name: String,
    /// PCI address.
    pub address: String,
    /// Model, where the driver gives one.
    pub model: Option<String>,
    /// Its node.
    pub node: Option<u32>,
}

/// Human view of a process's placement.
pub fn process_text(v: &ProcessView) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "process {} ({})", v.pid, v.comm);
    if let (Some(p), Some(n)) = (&v.policy, &v.policy_nodes) {
        let nodes = if n.is_empty() { String::new() } else { format!(" nodes {n}") };
        let _ = writeln!(out, "  memory policy: {p}{nodes}");
    }
    let _ = writeln!(out, "  allowed: CPUs {}, nodes {}", v.allowed_cpus, v.allowed_nodes);
    if !v.mapping_policies.is_empty() {
        out.push_str("  mapping policies (numa_maps):\n");
        for p in &v.mapping_policies {
            let _ = writeln!(out, "    {:<24} {:>4} mappings  {:>10}", p.policy, p.mappings, human_bytes(p.bytes));
        }
    }
    let _ = writeln!(out, "  memory per node (resident, numa_maps): {} in all", human_bytes(v.total_bytes));
    for m in &v.memory {
        let pct = if v.total_bytes == 0 { 0.0 } else { 100.0 * m.bytes as f64 / v.total_bytes as f64 };
        let _ = writeln!(out, "    node {:<4} {:>10}  {:5.1}%", m.node, human_bytes(m.bytes), pct);
    }
    if let Some(d) = &v.devices {
        out.push_str(&devices_text(d, v.total_bytes));
    }
    let _ = writeln!(out, "  threads ({}):", v.threads.len());
    out.push_str("    TID       NAME             CPUS (affinity)        LAST CPU  NODE\n");
    for t in &v.threads {
        let _ = writeln!(
            out,
            "    {:<9} {:<16} {:<22} {:>8}  {}",
            t.tid,
            t.comm,
            t.cpus.to_list(),
            t.last_cpu.map_or("-".into(), |c| c.to_string()),
            t.last_node.map_or("-".into(), |n| n.to_string())
        );
    }
    out
}

/// The devices lines of `show` and `stat --cgroup`: where they come from,
/// each device on its node, what is not known, and the share of `total`
/// resident bytes next to them.
pub fn devices_text(d: &DevicesView, total: u64) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "  devices ({}):", d.source);
    for x in &d.devices {
        let model = x.model.as_ref().map_or(String::new(), |m| format!(" {m}"));
        let node = x.node.map_or("no node".into(), |n| format!("node {n}"));
        let _ = writeln!(out, "    {} {}{model}, {node}", x.name, x.address);
    }
    if let Some(u) = &d.unknown {
        let _ = writeln!(out, "    not known: {u}");
    }
    if !d.memory_nodes.is_empty() {
        let pct = if total == 0 { 0.0 } else { 100.0 * d.near_bytes as f64 / total as f64 };
        let _ = writeln!(
            out,
            "    memory next to them (node{} {}): {} of {}, {pct:.1}%",
            if d.memory_nodes.len() == 1 { "" } else { "s" },
            d.memory_nodes.to_list(),
            human_bytes(d.near_bytes),
            human_bytes(total)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(mode: i32, nodes: &str) -> SelfPolicy {
        SelfPolicy {
            mode,
            nodes: NodeSet::parse_list(nodes).expect("l"),
            interleave_next: 0,
            cpus: CpuSet::parse_list("0-1").expect("l"),
            run_nodes: NodeSet::parse_list("0").expect("l"),
            mems_allowed: NodeSet::parse_list("0").expect("l"),
        }
    }

    #[test]
    fn default_policy_like_numactl() {
        assert_eq!(
            numactl_show(&p(0, "")),
            "policy: default\npreferred node: current\nphyscpubind: 0 1 \ncpubind: 0 \nnodebind: 0 \nmembind: 0 \npreferred: \n"
        );
    }

    #[test]
    fn interleave_like_numactl() {
        assert_eq!(
            numactl_show(&p(3, "0")),
            "policy: interleave\npreferred node: 0 (interleave next)\ninterleavemask: 0 \ninterleavenode: 0\nphyscpubind: 0 1 \ncpubind: 0 \nnodebind: 0 \nmembind: 0 \npreferred: 0 \n"
        );
    }
}
