//! The machine as the decision core sees it: nodes (sparse ids, CPU count,
//! memory size, each node its own size), the firmware distance matrix, and
//! optionally measured access-time ratios (from `numakit bench`).
//!
//! Nodes are addressed two ways: by id (`u32`, sparse, what the kernel and
//! a [`NodeSet`](crate::sets::NodeSet) use) and by position ([`NodePos`],
//! dense, the index into [`Machine::nodes`] and every [`PerNode`] vector
//! and matrix). [`Machine::index`] and [`Machine::id`] convert.
//!
//! Built from a [`Topology`] by the daemon, or directly (by tests and the
//! simulator). Plain data: nothing here reads the system.

use serde::{Deserialize, Serialize};

use crate::topo::Topology;

/// A node's position in a [`Machine`]: the index into [`Machine::nodes`]
/// and into every per-node vector ([`PerNode`]) and matrix of the
/// decision. Positions run `0..len` in id order; a node id (`u32`, as in
/// a [`NodeSet`](crate::sets::NodeSet)) may be sparse and is converted
/// with [`Machine::index`] and [`Machine::id`]. The two are distinct types
/// so that one cannot be used for the other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodePos(pub usize);

/// One value per node of a [`Machine`], indexed by [`NodePos`] (never by a
/// bare `usize` or a node id). Serialised as a plain list in node order.
///
/// ```
/// use numakit::daemon::{Machine, MachineNode, NodePos};
/// let m = Machine::new(vec![MachineNode { id: 4, cpus: 2, mem_bytes: 1 << 30 }], vec![vec![10]]).unwrap();
/// assert_eq!(m.nodes[NodePos(0)].id, 4);
/// assert_eq!(m.index(4), Some(NodePos(0)));
/// ```
///
/// A node id or a bare index does not compile:
///
/// ```compile_fail
/// use numakit::daemon::{Machine, MachineNode};
/// let m = Machine::new(vec![MachineNode { id: 4, cpus: 2, mem_bytes: 1 << 30 }], vec![vec![10]]).unwrap();
/// let _ = m.nodes[0usize].cpus;
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PerNode<T>(Vec<T>);

impl<T> PerNode<T> {
    /// `len` copies of `x`.
    pub fn filled(len: usize, x: T) -> Self
    where
        T: Clone,
    {
        Self(vec![x; len])
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are no nodes.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Every position, in order.
    pub fn positions(&self) -> impl Iterator<Item = NodePos> {
        (0..self.0.len()).map(NodePos)
    }

    /// The values in node order.
    pub fn iter(&self) -> std::slice::Iter<'_, T> {
        self.0.iter()
    }

    /// The values in node order, to change.
    pub fn iter_mut(&mut self) -> std::slice::IterMut<'_, T> {
        self.0.iter_mut()
    }

    /// (position, value) in node order.
    pub fn enumerate(&self) -> impl Iterator<Item = (NodePos, &T)> + '_ {
        self.0.iter().enumerate().map(|(i, x)| (NodePos(i), x))
    }
}

impl<T> PerNode<T> {
    /// The values in node order, as a plain vector.
    pub fn into_vec(self) -> Vec<T> {
        self.0
    }
}

impl<T> From<Vec<T>> for PerNode<T> {
    fn from(v: Vec<T>) -> Self {
        Self(v)
    }
}

impl<T> FromIterator<T> for PerNode<T> {
    fn from_iter<I: IntoIterator<Item = T>>(it: I) -> Self {
        Self(it.into_iter().collect())
    }
}

impl<'a, T> IntoIterator for &'a PerNode<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl<'a, T> IntoIterator for &'a mut PerNode<T> {
    type Item = &'a mut T;
    type IntoIter = std::slice::IterMut<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter_mut()
    }
}

impl<T> std::ops::Index<NodePos> for PerNode<T> {
    type Output = T;
    fn index(&self, p: NodePos) -> &T {
        &self.0[p.0]
    }
}

impl<T> std::ops::IndexMut<NodePos> for PerNode<T> {
    fn index_mut(&mut self, p: NodePos) -> &mut T {
        &mut self.0[p.0]
    }
}

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

/// A matrix by node position: `m[a][b]` from node `a` to node `b`.
pub type NodeMatrix<T> = PerNode<PerNode<T>>;

fn matrix<T>(rows: Vec<Vec<T>>) -> NodeMatrix<T> {
    rows.into_iter().map(PerNode::from).collect()
}

/// The machine: nodes in id order, with distance rows in the same order.
/// Made by [`Machine::new`] (checked) or [`Machine::from_topology`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    /// Nodes sorted by id.
    pub nodes: PerNode<MachineNode>,
    /// Firmware (SLIT) distances, `distances[a][b]` from node `a` to `b`.
    pub distances: NodeMatrix<u32>,
    /// Measured access-time ratios, `measured[a][b]` = time for a CPU of node
    /// `a` to reach memory of node `b`, relative to the fastest local access
    /// (1.0). `None`: only firmware distances are known.
    pub measured: Option<NodeMatrix<f64>>,
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
        Ok(Self { nodes: nodes.into(), distances: matrix(distances), measured: None })
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
        self.measured = Some(matrix(measured));
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
        Self { nodes: nodes.into(), distances: matrix(distances), measured: None }
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether the machine has no nodes.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Every node's position, in id order.
    pub fn positions(&self) -> impl Iterator<Item = NodePos> {
        self.nodes.positions()
    }

    /// Position of node `id`.
    pub fn index(&self, id: u32) -> Option<NodePos> {
        self.nodes.0.binary_search_by_key(&id, |n| n.id).ok().map(NodePos)
    }

    /// Id of the node at `pos`.
    pub fn id(&self, pos: NodePos) -> u32 {
        self.nodes[pos].id
    }

    /// Access-time ratio matrix by node position: the measured one when
    /// given, else the SLIT distance converted with one calibration point
    /// (`slit_at`, `ratio_at`): `1 + (d - local) × (ratio_at - 1) / (slit_at - 10)`.
    pub fn ratios(&self, slit_at: u32, ratio_at: f64) -> NodeMatrix<f64> {
        if let Some(m) = &self.measured {
            return m.clone();
        }
        let per = (ratio_at - 1.0) / (f64::from(slit_at.max(11)) - 10.0);
        self.distances
            .enumerate()
            .map(|(a, row)| {
                let local = f64::from(row[a]);
                row.iter().map(|&d| (1.0 + (f64::from(d) - local) * per).max(1.0)).collect()
            })
            .collect()
    }

    /// The memory nodes a CPU node's allocations go to: the node itself if
    /// it has memory, else the nearest node(s) with memory by `ratios`
    /// (memory on nodes that have CPUs first; CPU-less memory nodes only if
    /// there is no other memory).
    pub fn home_memory(&self, ratios: &NodeMatrix<f64>, a: NodePos) -> Vec<NodePos> {
        if self.nodes[a].mem_bytes > 0 {
            return vec![a];
        }
        let with_cpu: Vec<NodePos> =
            self.positions().filter(|&b| self.nodes[b].mem_bytes > 0 && self.nodes[b].cpus > 0).collect();
        let pool: Vec<NodePos> = if with_cpu.is_empty() {
            self.positions().filter(|&b| self.nodes[b].mem_bytes > 0).collect()
        } else {
            with_cpu
        };
        let best = pool.iter().map(|&b| ratios[a][b]).fold(f64::INFINITY, f64::min);
        pool.into_iter().filter(|&b| ratios[a][b] <= best + 1e-9).collect()
    }
}
