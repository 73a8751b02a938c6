//! The machine prepared for one decision: access-time ratios between
//! nodes (measured, or from firmware distances), each CPU node's home
//! memory, and the weighted ratio and locality of a placement.

use crate::daemon::machine::Machine;
use crate::sets::NodeSet;

/// The machine prepared for one decision: ratios and home memory per node.
pub(super) struct View<'a> {
    pub(super) m: &'a Machine,
    pub(super) r: Vec<Vec<f64>>,
    pub(super) homes: Vec<Vec<usize>>,
    /// Nodes with CPUs.
    pub(super) all_cpu: NodeSet,
}

impl View<'_> {
    pub(super) fn n(&self) -> usize {
        self.m.len()
    }
    pub(super) fn cpus(&self, i: usize) -> f64 {
        f64::from(self.m.nodes[i].cpus)
    }
    pub(super) fn by_id(&self, map: impl Iterator<Item = (u32, f64)>) -> Vec<f64> {
        let mut v = vec![0.0; self.n()];
        for (id, x) in map {
            if let Some(i) = self.m.index(id) {
                v[i] += x;
            }
        }
        v
    }
    pub(super) fn ids(&self, idx: &[usize]) -> NodeSet {
        idx.iter().map(|&i| self.m.nodes[i].id).collect()
    }
    pub(super) fn idx(&self, set: &NodeSet) -> Vec<usize> {
        set.iter().filter_map(|id| self.m.index(id)).collect()
    }
    /// Σ c_a m_b r_ab over the non-zero entries.
    pub(super) fn ratio(&self, c: &[f64], mem: &[f64]) -> f64 {
        let cs: Vec<(usize, f64)> = c.iter().copied().enumerate().filter(|x| x.1 > 0.0).collect();
        let ms: Vec<(usize, f64)> = mem.iter().copied().enumerate().filter(|x| x.1 > 0.0).collect();
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
    pub(super) fn locality(&self, c: &[f64], mem: &[f64]) -> f64 {
        let (ct, mt): (f64, f64) = (c.iter().sum(), mem.iter().sum());
        if ct <= 0.0 || mt <= 0.0 {
            return 1.0;
        }
        let mut s = 0.0;
        for (a, &ca) in c.iter().enumerate().filter(|(_, x)| **x > 0.0) {
            s += ca * self.homes[a].iter().map(|&b| mem[b]).sum::<f64>();
        }
        s / (ct * mt)
    }
}

/// The memory nodes of a placement: its memory nodes when it names them,
/// else the home memory of its CPU nodes.
pub(super) fn placement_memory(v: &View, cpu_nodes: &NodeSet, mem_nodes: &NodeSet) -> Vec<usize> {
    if !mem_nodes.is_empty() {
        return v.idx(mem_nodes);
    }
    let mut d: Vec<usize> = v.idx(cpu_nodes).into_iter().flat_map(|a| v.homes[a].iter().copied()).collect();
    d.sort_unstable();
    d.dedup();
    d
}
