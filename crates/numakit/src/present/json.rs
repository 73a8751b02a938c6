//! The JSON view of the machine model (`numakit topo --json`), schema
//! version 1, documented in docs/topo-json.md. Field names and shapes are a
//! stable interface: add fields, never rename or remove them without a new
//! `schema_version`.

use serde::Serialize;

use crate::sets::{CpuSet, NodeSet};
use crate::topo::{AccessClass, Cache, HugePages, PciDevice, Topology};

/// Current schema version.
pub const SCHEMA_VERSION: u32 = 1;

/// Top-level document.
#[derive(Debug, Serialize)]
pub struct TopoJson<'a> {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Where the data was read.
    pub source: &'a crate::topo::Source,
    /// Nodes in id order.
    pub nodes: Vec<NodeJson<'a>>,
    /// Distance matrix, rows and columns in the order of `nodes`.
    pub distances: &'a [Vec<u32>],
    /// Whether the firmware gave distances (false: kernel defaults).
    pub distances_from_firmware: bool,
    /// Every possible CPU.
    pub cpus: Vec<CpuJson>,
    /// Packages.
    pub packages: Vec<PackageJson<'a>>,
    /// Caches.
    pub caches: &'a [Cache],
    /// PCI devices.
    pub pci_devices: &'a [PciDevice],
    /// GPUs (left out where the machine has none).
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub gpus: &'a [crate::topo::Gpu],
    /// What the calling process may use.
    pub allowed: AllowedJson<'a>,
    /// `cpu/possible`, `cpu/online`, offline.
    pub possible_cpus: &'a CpuSet,
    /// Online CPUs.
    pub online_cpus: &'a CpuSet,
    /// Possible but offline CPUs.
    pub offline_cpus: &'a CpuSet,
    /// The nodes' memory beside `/proc/meminfo`'s (null: unknown).
    pub memory_accounting: Option<AccountingJson>,
}

/// The nodes' `MemTotal` beside `/proc/meminfo`'s.
#[derive(Debug, Serialize)]
pub struct AccountingJson {
    /// `/proc/meminfo` `MemTotal`.
    pub meminfo_total_bytes: u64,
    /// The sum of the nodes' `MemTotal`.
    pub nodes_total_bytes: u64,
    /// `meminfo_total_bytes - nodes_total_bytes` (negative: the nodes
    /// count more).
    pub difference_bytes: i128,
    /// Whether the difference is within the tolerance (docs/topo-json.md).
    pub adds_up: bool,
}

/// A node.
#[derive(Debug, Serialize)]
pub struct NodeJson<'a> {
    /// Kernel node id.
    pub id: u32,
    /// CPUs, as integers.
    pub cpus: &'a CpuSet,
    /// Memory; null when the kernel gives none.
    pub memory: Option<MemoryJson>,
    /// Has CPUs.
    pub has_cpu: bool,
    /// Has memory.
    pub has_memory: bool,
    /// Online.
    pub online: bool,
    /// A generic initiator (devices, no CPUs or memory of its own).
    pub generic_initiator: bool,
    /// Huge pages per size.
    pub hugepages: &'a [HugePages],
    /// Distance row.
    pub distances: &'a [u32],
    /// HMAT access classes.
    pub access: &'a [AccessClass],
    /// Memory tier.
    pub memory_tier: Option<u32>,
}

/// Node memory.
#[derive(Debug, Serialize)]
pub struct MemoryJson {
    /// MemTotal.
    pub total_bytes: u64,
    /// MemFree (null: not given).
    pub free_bytes: Option<u64>,
    /// MemUsed (null: not given).
    pub used_bytes: Option<u64>,
}

/// A CPU.
#[derive(Debug, Serialize)]
pub struct CpuJson {
    /// Id.
    pub id: u32,
    /// Online.
    pub online: bool,
    /// Node.
    pub node: Option<u32>,
    /// Package.
    pub package: Option<u32>,
    /// Die.
    pub die: Option<u32>,
    /// Cluster.
    pub cluster: Option<u32>,
    /// Core id.
    pub core: Option<u32>,
    /// SMT siblings including itself (null: unknown).
    pub siblings: Option<CpuSet>,
}

/// A package.
#[derive(Debug, Serialize)]
pub struct PackageJson<'a> {
    /// Id.
    pub id: u32,
    /// Online CPUs.
    pub cpus: &'a CpuSet,
    /// Nodes.
    pub nodes: &'a NodeSet,
    /// Core count.
    pub cores: usize,
}

/// Allowed CPUs and nodes.
#[derive(Debug, Serialize)]
pub struct AllowedJson<'a> {
    /// CPUs.
    pub cpus: &'a CpuSet,
    /// Nodes.
    pub nodes: &'a NodeSet,
    /// Source file.
    pub from: &'a str,
}

/// Builds the JSON document for `topo`.
pub fn document(topo: &Topology) -> TopoJson<'_> {
    TopoJson {
        schema_version: SCHEMA_VERSION,
        source: &topo.source,
        nodes: topo
            .nodes
            .iter()
            .map(|n| NodeJson {
                id: n.id,
                cpus: &n.cpus,
                memory: n.memory.map(|m| MemoryJson {
                    total_bytes: m.total_bytes,
                    free_bytes: m.free_bytes,
                    used_bytes: m.used_bytes,
                }),
                has_cpu: n.has_cpu,
                has_memory: n.has_memory,
                online: n.online,
                generic_initiator: n.generic_initiator,
                hugepages: &n.hugepages,
                distances: &n.distances,
                access: &n.access,
                memory_tier: n.memory_tier,
            })
            .collect(),
        distances: &topo.distances,
        distances_from_firmware: topo.has_distances,
        cpus: topo
            .cpus
            .iter()
            .map(|c| CpuJson {
                id: c.id,
                online: c.online,
                node: c.node,
                package: c.package,
                die: c.die,
                cluster: c.cluster,
                core: c.core,
                siblings: c.siblings.clone(),
            })
            .collect(),
        packages: topo
            .packages
            .iter()
            .map(|p| PackageJson { id: p.id, cpus: &p.cpus, nodes: &p.nodes, cores: p.cores })
            .collect(),
        caches: &topo.caches,
        pci_devices: &topo.pci_devices,
        gpus: &topo.gpus,
        allowed: AllowedJson { cpus: &topo.allowed.cpus, nodes: &topo.allowed.nodes, from: &topo.allowed.from },
        possible_cpus: &topo.possible_cpus,
        online_cpus: &topo.online_cpus,
        offline_cpus: &topo.offline_cpus,
        memory_accounting: topo.memory_accounting.map(|a| AccountingJson {
            meminfo_total_bytes: a.meminfo_total_bytes,
            nodes_total_bytes: a.nodes_total_bytes,
            difference_bytes: a.difference_bytes(),
            adds_up: a.adds_up(),
        }),
    }
}

/// The JSON text (pretty-printed).
pub fn render(topo: &Topology) -> String {
    serde_json::to_string_pretty(&document(topo)).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
}
