//! The machine as the decision core sees it: nodes (sparse ids, CPU count,
//! memory size, each node its own size), the firmware distance matrix, and
//! optionally measured access-time ratios (from `numakit bench`).
//!
//! Built from a [`Topology`] by the daemon, or directly (by tests and the
//! simulator). Plain data: nothing here reads the system.

use serde::{Deserialize, Serialize};

use crate::topo::Topology;

/// One node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MachineNode {
    /// Node id (may be sparse).
    pub id: u32,
    /// Number of CPUs (0: a CPU-less memory node).
    pub cpus: u32,
    /// Memory in bytes (0: a memory-less CPU node).
    pub mem_bytes: u64,
}

/// Why a machine description was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MachineError {
    /// Nodes are not sorted by id, or an id repeats.
    #[error("node ids must be sorted and distinct")]
    Unsorted,
    /// A matrix is not `nodes × nodes`.
    #[error("{0} matrix is not {1}×{1}")]
    Shape(&'static str, usize),
    /// A measured ratio is not a positive finite number.
    #[error("measured ratio {0} is not positive and finite")]
    Ratio(f64),
}

/// The machine: nodes in id order, with distance rows in the same order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    /// Nodes sorted by id.
    pub nodes: Vec<MachineNode>,
    /// Firmware (SLIT) distances, `distances[i][j]` from node index `i` to `j`.
    pub distances: Vec<Vec<u32>>,
    /// Measured access-time ratios, `measured[i][j]` = time for a CPU of node
    /// index `i` to reach memory of node index `j`, relative to the fastest
    /// local access (1.0). `None`: only firmware distances are known.
    pub measured: Option<Vec<Vec<f64>>>,
}

impl Machine {
    /// A machine from nodes and SLIT distances, checked.
    pub fn new(nodes: Vec<MachineNode>, distances: Vec<Vec<u32>>) -> Result<Self, MachineError> {
        if nodes.windows(2).any(|w| w[0].id >= w[1].id) {
            return Err(MachineError::Unsorted);
        }
        let n = nodes.len();
        if distances.len() != n || distances.iter().any(|r| r.len() != n) {
            return Err(MachineError::Shape("distance", n));
        }
        Ok(Self { nodes, distances, measured: None })
    }

    /// Adds measured access-time ratios (see [`Machine::measured`]).
    pub fn with_measured(mut self, measured: Vec<Vec<f64>>) -> Result<Self, MachineError> {
        let n = self.nodes.len();
        if measured.len() != n || measured.iter().any(|r| r.len() != n) {
            return Err(MachineError::Shape("measured", n));
        }
        if let Some(bad) = measured.iter().flatten().find(|v| !(v.is_finite() && **v > 0.0)) {
            return Err(MachineError::Ratio(*bad));
        }
        self.measured = Some(measured);
        Ok(self)
    }

    /// The machine of a topology (CPU counts of online CPUs, total memory,
    /// SLIT distances; a topology without distances gets 10 local / 20
    /// remote, the kernel's default).
    pub fn from_topology(topo: &Topology) -> Self {
        let nodes = topo
            .nodes
            .iter()
            .map(|n| MachineNode {
                id: n.id,
                cpus: n.cpus.len() as u32,
                mem_bytes: n.memory.map_or(0, |m| m.total_bytes),
            })
            .collect::<Vec<_>>();
        let k = nodes.len();
        let distances = if topo.has_distances && topo.distances.len() == k {
            topo.distances.clone()
        } else {
            (0..k).map(|i| (0..k).map(|j| if i == j { 10 } else { 20 }).collect()).collect()
        };
        Self { nodes, distances, measured: None }
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether the machine has no nodes.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Index of node `id`.
    pub fn index(&self, id: u32) -> Option<usize> {
        self.nodes.binary_search_by_key(&id, |n| n.id).ok()
    }

    /// Access-time ratio matrix by node index: the measured one when given,
    /// else the SLIT distance converted with one calibration point
    /// (`slit_at`, `ratio_at`): `1 + (d - local) × (ratio_at - 1) / (slit_at - 10)`.
    pub fn ratios(&self, slit_at: u32, ratio_at: f64) -> Vec<Vec<f64>> {
        if let Some(m) = &self.measured {
            return m.clone();
        }
        let per = (ratio_at - 1.0) / (f64::from(slit_at.max(11)) - 10.0);
        self.distances
            .iter()
            .enumerate()
            .map(|(i, row)| {
                let local = f64::from(row[i]);
                row.iter().map(|&d| (1.0 + (f64::from(d) - local) * per).max(1.0)).collect()
            })
            .collect()
    }

    /// The memory nodes a CPU node's allocations go to: the node itself if
    /// it has memory, else the nearest node(s) with memory by `ratios`
    /// (memory on nodes that have CPUs first; CPU-less memory nodes only if
    /// there is no other memory).
    pub fn home_memory(&self, ratios: &[Vec<f64>], i: usize) -> Vec<usize> {
        if self.nodes[i].mem_bytes > 0 {
            return vec![i];
        }
        let with_cpu: Vec<usize> =
            (0..self.len()).filter(|&j| self.nodes[j].mem_bytes > 0 && self.nodes[j].cpus > 0).collect();
        let pool: Vec<usize> = if with_cpu.is_empty() {
            (0..self.len()).filter(|&j| self.nodes[j].mem_bytes > 0).collect()
        } else {
            with_cpu
        };
        let best = pool.iter().map(|&j| ratios[i][j]).fold(f64::INFINITY, f64::min);
        pool.into_iter().filter(|&j| ratios[i][j] <= best + 1e-9).collect()
    }
}
