//! The machine prepared for one decision: access-time ratios between
//! nodes (measured, or from firmware distances), each CPU node's home
//! memory, and the weighted ratio and locality of a placement. Everything
//! here is by node position ([`NodePos`]); node ids come in and go out
//! through [`View::by_id`], [`View::idx`] and [`View::ids`].

use crate::daemon::machine::{Machine, NodeMatrix, NodePos, PerNode};
use crate::sets::NodeSet;

/// The machine prepared for one decision: ratios and home memory per node.
pub(super) struct View<'a> {
    pub(super) m: &'a Machine,
    pub(super) r: NodeMatrix<f64>,
    pub(super) homes: PerNode<Vec<NodePos>>,
    /// Nodes with CPUs.
    pub(super) all_cpu: NodeSet,
}

impl View<'_> {
    pub(super) fn n(&self) -> usize {
        self.m.len()
    }
    /// Every node's position.
    pub(super) fn positions(&self) -> impl Iterator<Item = NodePos> {
        self.m.positions()
    }
    /// A per-node vector of zeros.
    pub(super) fn zeros(&self) -> PerNode<f64> {
        PerNode::filled(self.n(), 0.0)
    }
    pub(super) fn cpus(&self, a: NodePos) -> f64 {
        f64::from(self.m.nodes[a].cpus)
    }
    /// A per-node vector of values given by node id (ids not on the
    /// machine left out; an id given twice adds up).
    pub(super) fn by_id(&self, map: impl Iterator<Item = (u32, f64)>) -> PerNode<f64> {
        let mut v = self.zeros();
        for (id, x) in map {
            if let Some(a) = self.m.index(id) {
                v[a] += x;
            }
        }
        v
    }
    pub(super) fn ids(&self, idx: &[NodePos]) -> NodeSet {
        idx.iter().map(|&a| self.m.id(a)).collect()
    }
    pub(super) fn idx(&self, set: &NodeSet) -> Vec<NodePos> {
        set.iter().filter_map(|id| self.m.index(id)).collect()
    }
    /// Σ c_a m_b r_ab over the non-zero entries.
    pub(super) fn ratio(&self, c: &PerNode<f64>, mem: &PerNode<f64>) -> f64 {
        let cs: Vec<(NodePos, f64)> = c.enumerate().map(|(a, x)| (a, *x)).filter(|x| x.1 > 0.0).collect();
        let ms: Vec<(NodePos, f64)> = mem.enumerate().map(|(b, x)| (b, *x)).filter(|x| x.1 > 0.0).collect();
        let (ct, mt): (f64, f64) = (cs.iter().map(|x| x.1).sum(), ms.iter().map(|x| x.1).sum());
        if ct <= 0.0 || mt <= 0.0 {
            return 1.0;
        }
        let mut s = 0.0;
        for &(a, ca) in &cs {
            let row = &self.r[a];
            s += ca * ms.iter().map(|&(b, mb)| mb * row[b]).sum::<f64>();
        }
        s / (ct * mt)
    }
    /// Share of accesses that go to the CPU node's home memory.
    pub(super) fn locality(&self, c: &PerNode<f64>, mem: &PerNode<f64>) -> f64 {
        let (ct, mt): (f64, f64) = (c.iter().sum(), mem.iter().sum());
        if ct <= 0.0 || mt <= 0.0 {
            return 1.0;
        }
        let mut s = 0.0;
        for (a, &ca) in c.enumerate().filter(|(_, x)| **x > 0.0) {
            s += ca * self.homes[a].iter().map(|&b| mem[b]).sum::<f64>();
        }
        s / (ct * mt)
    }
}

/// The memory nodes of a placement: its memory nodes when it names them,
/// else the home memory of its CPU nodes.
pub(super) fn placement_memory(v: &View, cpu_nodes: &NodeSet, mem_nodes: &NodeSet) -> Vec<NodePos> {
    if !mem_nodes.is_empty() {
        return v.idx(mem_nodes);
    }
    let mut d: Vec<NodePos> = v.idx(cpu_nodes).into_iter().flat_map(|a| v.homes[a].iter().copied()).collect();
    d.sort_unstable();
    d.dedup();
    d
}
