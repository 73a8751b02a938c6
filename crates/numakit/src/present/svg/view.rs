//! What the picture shows of the model: each node's cores (grouped into
//! package slices where a node spans packages), offline CPUs summed up,
//! its PCI devices, and for a CPU-less node where its CPUs are. Reads the
//! topology only; sizes are [`super::layout`]'s, SVG [`super::write`]'s.

use crate::sets::{CpuSet, NodeSet};
use crate::topo::{Node, PciDevice, Topology};

use super::COMPACT_ABOVE;

/// Offline CPUs without topology beyond which they are summed up as text.
pub(super) const COLLAPSE_OFFLINE_ABOVE: usize = 8;

/// One logical CPU as drawn.
pub(super) struct Pu {
    pub(super) id: u32,
    pub(super) online: bool,
}

/// A core: its PUs in the node.
pub(super) struct Core {
    pub(super) pus: Vec<Pu>,
}

/// The cores of a node in one package (`label` is `None` when nodes sit
/// in package frames or there is no package information).
pub(super) struct Slice {
    pub(super) label: Option<String>,
    pub(super) cores: Vec<Core>,
}

/// A node as drawn.
pub(super) struct NodeView<'a> {
    pub(super) node: &'a Node,
    pub(super) slices: Vec<Slice>,
    /// Offline CPUs the kernel says nothing else about, written as ranges.
    pub(super) collapsed: CpuSet,
    pub(super) compact: bool,
    pub(super) devices: Vec<&'a PciDevice>,
    pub(super) other_devices: Vec<&'a PciDevice>,
    /// For CPU-less nodes: where their CPUs are.
    pub(super) near: Option<String>,
}

/// What the top grid holds: a package frame with its nodes, or a lone node.
pub(super) enum Group<'a> {
    Package { label: String, nodes: Vec<NodeView<'a>>, cols: usize },
    Node(NodeView<'a>),
}

pub(super) fn has_names(d: &PciDevice) -> bool {
    !d.netdevs.is_empty() || !d.blockdevs.is_empty()
}

/// Whether a node gets a memory usage bar (size and free memory known).
pub(super) fn has_bar(n: &Node) -> bool {
    n.memory.is_some_and(|m| m.total_bytes > 0 && m.free_bytes.is_some())
}

/// Index in `topo.packages` of the package holding `cpu`.
pub(super) fn package_of(topo: &Topology, cpu: u32) -> Option<usize> {
    topo.packages.iter().position(|p| p.cpus.contains(cpu)).or_else(|| {
        let id = topo.cpu(cpu)?.package?;
        topo.packages.iter().position(|p| p.id == id)
    })
}

/// Builds the view of one node: its cores (grouped into package slices
/// when `split` and packages are known), devices and, for a CPU-less node,
/// where its CPUs are.
pub(super) fn node_view<'a>(
    topo: &'a Topology,
    n: &'a Node,
    split: bool,
    pkg: &dyn Fn(u32) -> Option<usize>,
) -> NodeView<'a> {
    let mut assigned = CpuSet::new();
    let mut cores: Vec<Core> = Vec::new();
    let mut lonely_offline = CpuSet::new();
    for id in n.cpus.iter() {
        if assigned.contains(id) {
            continue;
        }
        let cpu = topo.cpu(id);
        let online = topo.online_cpus.contains(id);
        let set = match cpu.and_then(|c| c.siblings.as_ref()) {
            Some(s) if s.contains(id) => s.intersection(&n.cpus).difference(&assigned),
            _ => {
                if !online {
                    lonely_offline.insert(id);
                }
                std::iter::once(id).collect()
            }
        };
        for c in set.iter() {
            assigned.insert(c);
        }
        cores.push(Core { pus: set.iter().map(|c| Pu { id: c, online: topo.online_cpus.contains(c) }).collect() });
    }
    let mut collapsed = CpuSet::new();
    if lonely_offline.len() > COLLAPSE_OFFLINE_ABOVE {
        cores.retain(|c| !(c.pus.len() == 1 && lonely_offline.contains(c.pus[0].id)));
        collapsed = lonely_offline;
    }
    let pus: usize = cores.iter().map(|c| c.pus.len()).sum();
    let compact = pus > COMPACT_ABOVE;
    let mut slices: Vec<Slice> = Vec::new();
    if cores.is_empty() {
        // Nothing to draw.
    } else if split && !topo.packages.is_empty() {
        let mut keyed: Vec<(Option<usize>, Vec<Core>)> = Vec::new();
        for c in cores {
            let k = c.pus.first().and_then(|p| pkg(p.id));
            match keyed.iter_mut().find(|(kk, _)| *kk == k) {
                Some((_, v)) => v.push(c),
                None => keyed.push((k, vec![c])),
            }
        }
        keyed.sort_by_key(|(k, _)| (k.is_none(), *k));
        let only_unknown = keyed.len() == 1 && keyed[0].0.is_none();
        for (k, cores) in keyed {
            let label = match k {
                Some(i) => topo.packages.get(i).map(|p| format!("Package {}", p.id)),
                None if only_unknown => None,
                None => Some("no package".to_string()),
            };
            slices.push(Slice { label, cores });
        }
    } else {
        slices.push(Slice { label: None, cores });
    }
    let mine: Vec<&PciDevice> = topo.pci_devices.iter().filter(|d| d.numa_node == Some(n.id)).collect();
    let devices = mine.iter().copied().filter(|d| has_names(d)).collect();
    let other_devices = mine.iter().copied().filter(|d| !has_names(d)).collect();
    let near = if n.cpus.is_empty() { nearest_cpus(topo, n) } else { None };
    NodeView { node: n, slices, collapsed, compact, devices, other_devices, near }
}

/// For a CPU-less node: its HMAT initiators, else the nearest CPU node by
/// SLIT distance.
pub(super) fn nearest_cpus(topo: &Topology, n: &Node) -> Option<String> {
    if let Some(a) = n.access.iter().filter(|a| !a.initiators.is_empty()).min_by_key(|a| a.class) {
        return Some(format!("local to node {}", a.initiators.to_list()));
    }
    if !topo.has_distances {
        return None;
    }
    let dists: Vec<(u32, u32)> = topo
        .nodes
        .iter()
        .filter(|m| !m.cpus.is_empty())
        .filter_map(|m| topo.distance(n.id, m.id).map(|d| (d, m.id)))
        .collect();
    let best = dists.iter().map(|p| p.0).min()?;
    let near: NodeSet = dists.iter().filter(|p| p.0 == best).map(|p| p.1).collect();
    if dists.len() > 1 && near.len() == dists.len() {
        Some(format!("all CPU nodes at distance {best}"))
    } else {
        Some(format!("nearest: node {} (distance {best})", near.to_list()))
    }
}
