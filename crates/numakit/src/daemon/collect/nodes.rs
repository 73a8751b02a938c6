//! The nodes' CPUs the daemon may use, and the nodes a process's cgroup
//! allows.

use crate::procs;
use crate::sets::{CpuSet, NodeSet};
use crate::sys::{SysError, SysRoot};
use crate::topo::Topology;

/// What the collector needs of the machine: each node's CPUs the daemon
/// may use (its CPUs minus the reserved ones).
#[derive(Debug, Clone)]
pub struct NodeCpus {
    /// (node id, usable CPUs), by id.
    pub nodes: Vec<(u32, CpuSet)>,
}

impl NodeCpus {
    /// From a topology and the reserved CPUs.
    pub fn new(topo: &Topology, reserved: &CpuSet) -> Self {
        let mut nodes: Vec<(u32, CpuSet)> =
            topo.nodes.iter().map(|n| (n.id, n.cpus.intersection(&topo.online_cpus).difference(reserved))).collect();
        nodes.sort_by_key(|n| n.0);
        Self { nodes }
    }

    /// The node of a CPU.
    pub fn node_of(&self, cpu: u32) -> Option<u32> {
        self.nodes.iter().find(|(_, c)| c.contains(cpu)).map(|(id, _)| *id)
    }

    /// The usable CPUs of a node set.
    pub fn cpus_of(&self, nodes: &NodeSet) -> CpuSet {
        self.nodes.iter().filter(|(id, _)| nodes.contains(*id)).fold(CpuSet::new(), |acc, (_, c)| acc.union(c))
    }

    /// Nodes a CPU set touches, and whether it covers each of them only in
    /// part (a pinning finer than whole nodes).
    pub fn nodes_of(&self, cpus: &CpuSet) -> (NodeSet, bool) {
        let mut set = NodeSet::new();
        let mut partial = false;
        for (id, c) in &self.nodes {
            if c.is_empty() {
                continue;
            }
            let inter = c.intersection(cpus);
            if !inter.is_empty() {
                set.insert(*id);
                partial |= inter.len() != c.len();
            }
        }
        (set, partial)
    }
}

/// Nodes a cgroup's cpuset allows, or empty when it does not restrict
/// (no cpuset controller, or every usable CPU).
pub(super) fn read_cpuset_nodes(sys: &SysRoot, node_cpus: &NodeCpus, cgroup: &str) -> Result<NodeSet, SysError> {
    if cgroup.is_empty() || cgroup == "/" {
        return Ok(NodeSet::new());
    }
    let Some(cpus) = procs::cgroup::effective_cpus(sys, cgroup)? else {
        return Ok(NodeSet::new());
    };
    let all = node_cpus.nodes.iter().fold(CpuSet::new(), |a, (_, c)| a.union(c));
    if all.is_subset(&cpus) {
        return Ok(NodeSet::new());
    }
    Ok(node_cpus.nodes_of(&cpus).0)
}
