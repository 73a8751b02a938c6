//! Where a node without CPUs belongs (a memory-only node: CXL, HBM, NVM,
//! GPU memory; or a generic initiator): the CPU nodes it is local to, and
//! so the package it sits in, found the way hwloc places such nodes
//! (`look_sysfsnode`): the firmware's HMAT initiators, else the CPU nodes
//! nearest by SLIT distance, unless every CPU node is as near.
//!
//! Pure functions of the model; nothing here reads the system.

use super::Topology;
use crate::sets::NodeSet;

/// How a CPU-less node's CPU nodes were found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LocalBy {
    /// The HMAT initiators the kernel lists (`accessK/initiators`).
    Hmat,
    /// The CPU nodes at the smallest SLIT distance (that distance).
    Distance(u32),
}

/// The CPU nodes a CPU-less node is local to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Locality {
    /// The CPU nodes (never empty).
    pub nodes: NodeSet,
    /// How they were found.
    pub by: LocalBy,
}

impl Topology {
    /// The nodes with CPUs in their list (`cpulist`/`cpumap`; some old
    /// dumps' `has_cpu` file is empty although their nodes hold CPUs).
    fn nodes_with_cpus(&self) -> NodeSet {
        self.nodes.iter().filter(|n| !n.cpus.is_empty()).map(|n| n.id).collect()
    }

    /// For a node without CPUs, the CPU nodes it is local to: its HMAT
    /// initiators that have CPUs (class 1, the kernel's CPU initiators,
    /// first; else class 0), else the CPU nodes at the smallest SLIT
    /// distance, unless every CPU node (more than one) is as near or that
    /// distance is not more than its own. `None` for a node with CPUs, and
    /// when neither tells.
    pub fn local_cpu_nodes(&self, id: u32) -> Option<Locality> {
        let n = self.node(id)?;
        if !n.cpus.is_empty() {
            return None;
        }
        let with_cpus = self.nodes_with_cpus();
        for class in [1, 0] {
            let init = n
                .access
                .iter()
                .filter(|a| a.class == class)
                .fold(NodeSet::new(), |acc, a| acc.union(&a.initiators.intersection(&with_cpus)));
            if !init.is_empty() {
                return Some(Locality { nodes: init, by: LocalBy::Hmat });
            }
        }
        if !self.has_distances {
            return None;
        }
        let own = self.distance(id, id)?;
        let dists: Vec<(u32, u32)> = with_cpus.iter().filter_map(|c| self.distance(id, c).map(|d| (c, d))).collect();
        let best = dists.iter().map(|p| p.1).min()?;
        let near: NodeSet = dists.iter().filter(|p| p.1 == best).map(|p| p.0).collect();
        if best <= own || (near.len() > 1 && near.len() == with_cpus.len()) {
            return None;
        }
        Some(Locality { nodes: near, by: LocalBy::Distance(best) })
    }

    /// The package a node without CPUs sits in: the one package holding
    /// the CPU nodes it is local to ([`Topology::local_cpu_nodes`]).
    /// `None` for a node with CPUs, when it is local to no CPU node, or to
    /// CPU nodes of several packages (hwloc then attaches it to the
    /// machine).
    pub fn package_of_cpuless(&self, id: u32) -> Option<u32> {
        let local = self.local_cpu_nodes(id)?;
        let mut pkgs = self.packages.iter().filter(|p| p.nodes.intersects(&local.nodes));
        let p = pkgs.next()?;
        pkgs.next().is_none().then_some(p.id)
    }
}
