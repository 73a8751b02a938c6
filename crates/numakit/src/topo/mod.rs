//! The machine model: NUMA nodes, CPUs, packages, caches, distances,
//! memory, HMAT attributes, memory tiers, PCI devices, and what the calling
//! process may use.
//!
//! [`Topology::read`] builds it from a [`SysRoot`] (the live system or a
//! dump); the model itself is plain data that decisions read and
//! presenters print. Node ids may be sparse (0, 2, 5): nodes are kept in a
//! vector sorted by id and looked up with [`Topology::node`], never indexed
//! by id. This module reads; it never changes the system.

mod accounting;
mod allowed;
mod cpus;
mod devices;
mod gpus;
mod locality;
mod nodes;
#[cfg(feature = "stats")]
pub(crate) use nodes::read_hugepages;
#[cfg(any(test, feature = "synth"))]
pub mod synth;

use serde::Serialize;

use crate::sets::{CpuSet, NodeSet};
use crate::sys::{SysError, SysRoot};

pub use accounting::{MemoryAccounting, EXCESS_PCT, SHORTFALL_PCT};
pub use allowed::read_cpuset_cpus;
pub use cpus::MAX_CPUS;
pub use devices::{device_pci_address, is_pci_address, pci_parent, PciDevice};
pub use gpus::{parse_nvidia_information, parse_nvidia_numa_status, Gpu, NvidiaInfo};
pub use locality::{LocalBy, Locality};
pub use nodes::{parse_distance_row, MAX_NODES};

/// Where a topology came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Source {
    /// The root it was read from (`/` for the running system).
    pub sysroot: String,
    /// Whether it describes the running system. A topology read from a dump
    /// must never be used to bind anything.
    pub live: bool,
}

/// Memory of one node, from `nodeN/meminfo`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct NodeMemory {
    /// `MemTotal`.
    pub total_bytes: u64,
    /// `MemFree` (`None` when the file has no such line).
    pub free_bytes: Option<u64>,
    /// `MemUsed` (the kernel's own figure), else total - free.
    pub used_bytes: Option<u64>,
    /// `Inactive(file)`: page cache the kernel reclaims first, counted as
    /// room for new work by [`NodeMemory::available_bytes`]. Not part of
    /// the JSON schema.
    #[serde(skip)]
    pub inactive_file_bytes: Option<u64>,
}

impl NodeMemory {
    /// Memory a placement may count on: `MemFree` plus `Inactive(file)`,
    /// the page cache the kernel reclaims first (numad's rule with its
    /// default `-C 1`). A node full of cache is not a full node: on a
    /// busy host `MemFree` alone is often a few hundred MiB.
    pub fn available_bytes(&self) -> Option<u64> {
        available(self.free_bytes, self.inactive_file_bytes)
    }
}

/// `MemFree` plus `Inactive(file)` (either may be missing), the one rule
/// for memory a placement may count on ([`NodeMemory::available_bytes`]).
pub fn available(free: Option<u64>, inactive_file: Option<u64>) -> Option<u64> {
    free.map(|f| f.saturating_add(inactive_file.unwrap_or(0)))
}

/// Huge pages of one size on one node
/// (`nodeN/hugepages/hugepages-<size>kB/`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct HugePages {
    /// Page size in bytes.
    pub size_bytes: u64,
    /// `nr_hugepages`.
    pub total: u64,
    /// `free_hugepages`.
    pub free: u64,
    /// `surplus_hugepages`.
    pub surplus: u64,
}

/// One HMAT access class of a memory node (`nodeN/accessK/initiators/`):
/// the performance seen from the best initiators.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AccessClass {
    /// K in `accessK` (0: any initiator, 1: CPU initiators).
    pub class: u32,
    /// Initiator nodes (links `initiators/nodeN`).
    pub initiators: NodeSet,
    /// `read_latency`, nanoseconds.
    pub read_latency_ns: Option<u64>,
    /// `write_latency`, nanoseconds.
    pub write_latency_ns: Option<u64>,
    /// `read_bandwidth`, MiB/s.
    pub read_bandwidth_mbps: Option<u64>,
    /// `write_bandwidth`, MiB/s.
    pub write_bandwidth_mbps: Option<u64>,
}

/// A NUMA node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Node {
    /// The kernel's node id (may be sparse).
    pub id: u32,
    /// CPUs of the node (`cpulist`, or `cpumap` where the list is missing),
    /// offline ones included, as the kernel lists them.
    pub cpus: CpuSet,
    /// Memory figures; `None` when the kernel gives no `meminfo`.
    pub memory: Option<NodeMemory>,
    /// Huge pages of every size the node offers.
    pub hugepages: Vec<HugePages>,
    /// The node has CPUs (`has_cpu`, or non-empty `cpus` when the state
    /// file is missing).
    pub has_cpu: bool,
    /// The node has memory (`has_memory`, or non-zero `MemTotal`).
    pub has_memory: bool,
    /// The node is online (`node/online`; assumed when missing).
    pub online: bool,
    /// The node is a generic initiator (`has_generic_initiator`: an ACPI
    /// SRAT entry for devices such as accelerators or NICs, with neither
    /// CPUs nor memory of its own); false where the kernel does not say.
    pub generic_initiator: bool,
    /// Firmware (SLIT) distances to every node, in the order of
    /// [`Topology::nodes`].
    pub distances: Vec<u32>,
    /// HMAT access classes, where the kernel exposes them.
    pub access: Vec<AccessClass>,
    /// Memory tier id (`memory_tiering/memory_tierN`), where present.
    pub memory_tier: Option<u32>,
}

/// A logical CPU (a PU in hwloc's words).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Cpu {
    /// Logical CPU id.
    pub id: u32,
    /// Whether it is online.
    pub online: bool,
    /// Node it belongs to.
    pub node: Option<u32>,
    /// Package id: `physical_package_id`, or the package's position where
    /// the kernel gives -1 but a package CPU set.
    pub package: Option<u32>,
    /// CPUs of its package (`package_cpus_list` / `core_siblings`).
    pub package_cpus: Option<CpuSet>,
    /// `die_id`.
    pub die: Option<u32>,
    /// `cluster_id`, where the kernel has it.
    pub cluster: Option<u32>,
    /// `core_id` (unique only within a package).
    pub core: Option<u32>,
    /// CPUs of its core, itself included (`core_cpus_list` /
    /// `thread_siblings_list`, restricted to its `core_id`); `None` when the
    /// kernel does not say.
    pub siblings: Option<CpuSet>,
}

/// A processor package (socket).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Package {
    /// `physical_package_id`.
    pub id: u32,
    /// Its online CPUs.
    pub cpus: CpuSet,
    /// Nodes holding its CPUs.
    pub nodes: NodeSet,
    /// Number of cores (distinct SMT sibling groups).
    pub cores: usize,
}

/// A CPU cache shared by a set of CPUs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Cache {
    /// 1, 2, 3, ...
    pub level: u32,
    /// `Data`, `Instruction` or `Unified`.
    pub kind: String,
    /// Size in bytes.
    pub size_bytes: Option<u64>,
    /// `coherency_line_size`.
    pub line_bytes: Option<u64>,
    /// CPUs sharing it (`shared_cpu_list`).
    pub cpus: CpuSet,
}

/// What the calling process may use (its cpuset / cgroup).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Allowed {
    /// `Cpus_allowed_list`.
    pub cpus: CpuSet,
    /// `Mems_allowed_list`.
    pub nodes: NodeSet,
    /// Where these came from (`/proc/self/status`, a cgroup file, or
    /// `unrestricted` when the root says nothing).
    pub from: String,
}

/// The whole machine model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Topology {
    /// Where it was read.
    pub source: Source,
    /// `cpu/possible`.
    pub possible_cpus: CpuSet,
    /// `cpu/online` (or, where a dump lacks it, the `cpuN/online` files).
    pub online_cpus: CpuSet,
    /// Whether `cpu/online` itself exists (numactl only reads that file).
    pub online_file: bool,
    /// Possible CPUs that are not online.
    pub offline_cpus: CpuSet,
    /// Nodes sorted by id.
    pub nodes: Vec<Node>,
    /// The SLIT distance matrix; rows and columns in the order of `nodes`.
    /// Asymmetric matrices are kept as the firmware gives them.
    pub distances: Vec<Vec<u32>>,
    /// Whether the kernel gave distances (`false`: the matrix is the
    /// default 10 local / 20 remote that the kernel assumes).
    pub has_distances: bool,
    /// Every CPU in `cpu/possible` (or found in sysfs), sorted by id.
    pub cpus: Vec<Cpu>,
    /// Packages sorted by id.
    pub packages: Vec<Package>,
    /// Caches, deduplicated, sorted by level, kind and first CPU.
    pub caches: Vec<Cache>,
    /// PCI devices with their node and the network and block devices on
    /// them, sorted by address.
    pub pci_devices: Vec<PciDevice>,
    /// GPUs (NVIDIA's driver files, the DRM class), sorted by PCI address;
    /// empty where [`Topology::read`] was not used.
    pub gpus: Vec<Gpu>,
    /// What the calling process may use.
    pub allowed: Allowed,
    /// The nodes' memory beside `/proc/meminfo`'s (`None`: not read, as by
    /// [`Topology::read_nodes_only`], or not known).
    pub memory_accounting: Option<MemoryAccounting>,
    /// Whether `sys/devices/system/node` exists (else the machine is shown
    /// as a single node holding every CPU).
    pub numa_info: bool,
}

impl Topology {
    /// Reads the whole model from `sys`.
    pub fn read(sys: &SysRoot) -> Result<Self, SysError> {
        sys.check()?;
        let cpuset = cpus::read_cpu_sets(sys)?;
        let (numa_info, mut nodes) = nodes::read_nodes(sys, &cpuset.possible, true)?;
        let (distances, has_distances) = nodes::read_distances(sys, &mut nodes, numa_info)?;
        let cpus = cpus::read_cpus(sys, &cpuset, &nodes)?;
        let packages = cpus::packages(&cpus);
        let caches = cpus::read_caches(sys, &cpuset.online, &cpuset.possible)?;
        let pci_devices = devices::read_pci(sys)?;
        let gpus = gpus::read_gpus(sys, &pci_devices)?;
        let allowed = allowed::read_allowed(sys, &cpuset.online, &nodes)?;
        let memory_accounting = accounting::read(sys, numa_info, &nodes)?;
        Ok(Topology {
            source: Source { sysroot: sys.root().display().to_string(), live: sys.is_live() },
            offline_cpus: cpuset.possible.difference(&cpuset.online),
            possible_cpus: cpuset.possible,
            online_cpus: cpuset.online,
            online_file: cpuset.online_file,
            nodes,
            distances,
            has_distances,
            cpus,
            packages,
            caches,
            pci_devices,
            gpus,
            allowed,
            memory_accounting,
            numa_info,
        })
    }

    /// Only what `numactl --hardware` and `run` need: node CPUs, memory,
    /// state and distances. Cheaper than [`Topology::read`]: no per-CPU,
    /// cache, PCI, huge page or HMAT scan (the launch path must stay as fast
    /// as numactl's).
    pub fn read_nodes_only(sys: &SysRoot) -> Result<Self, SysError> {
        sys.check()?;
        let cpuset = cpus::read_cpu_sets(sys)?;
        let (numa_info, mut nodes) = nodes::read_nodes(sys, &cpuset.possible, false)?;
        let (distances, has_distances) = nodes::read_distances(sys, &mut nodes, numa_info)?;
        let allowed = allowed::read_allowed(sys, &cpuset.online, &nodes)?;
        Ok(Topology {
            source: Source { sysroot: sys.root().display().to_string(), live: sys.is_live() },
            offline_cpus: cpuset.possible.difference(&cpuset.online),
            possible_cpus: cpuset.possible,
            online_cpus: cpuset.online,
            online_file: cpuset.online_file,
            nodes,
            distances,
            has_distances,
            cpus: Vec::new(),
            packages: Vec::new(),
            caches: Vec::new(),
            pci_devices: Vec::new(),
            gpus: Vec::new(),
            allowed,
            memory_accounting: None,
            numa_info,
        })
    }

    /// [`Topology::read_nodes_only`] with the CPUs and packages (no caches,
    /// PCI devices, huge pages or HMAT): the machine's shape, read where it
    /// is read often (each job step's hardware key).
    pub fn read_shape(sys: &SysRoot) -> Result<Self, SysError> {
        let mut t = Self::read_nodes_only(sys)?;
        let cpuset = cpus::read_cpu_sets(sys)?;
        t.cpus = cpus::read_cpus(sys, &cpuset, &t.nodes)?;
        t.packages = cpus::packages(&t.cpus);
        Ok(t)
    }

    /// This model with the machine's PCI devices and GPUs read (what
    /// [`Topology::read_nodes_only`] leaves out): where a job's devices
    /// are, for placing it next to them.
    pub fn with_devices(mut self, sys: &SysRoot) -> Result<Self, SysError> {
        self.pci_devices = devices::read_pci(sys)?;
        self.gpus = gpus::read_gpus(sys, &self.pci_devices)?;
        Ok(self)
    }

    /// The node with id `id`.
    pub fn node(&self, id: u32) -> Option<&Node> {
        self.nodes.binary_search_by_key(&id, |n| n.id).ok().map(|i| &self.nodes[i])
    }

    /// Position of node `id` in [`Topology::nodes`] (and in distance rows).
    pub fn node_index(&self, id: u32) -> Option<usize> {
        self.nodes.binary_search_by_key(&id, |n| n.id).ok()
    }

    /// All node ids.
    pub fn node_ids(&self) -> NodeSet {
        self.nodes.iter().map(|n| n.id).collect()
    }

    /// Nodes that have memory.
    pub fn memory_nodes(&self) -> NodeSet {
        self.nodes.iter().filter(|n| n.has_memory).map(|n| n.id).collect()
    }

    /// Nodes that have CPUs.
    pub fn cpu_nodes(&self) -> NodeSet {
        self.nodes.iter().filter(|n| n.has_cpu).map(|n| n.id).collect()
    }

    /// SLIT distance from node `a` to node `b`.
    pub fn distance(&self, a: u32, b: u32) -> Option<u32> {
        let (i, j) = (self.node_index(a)?, self.node_index(b)?);
        self.distances.get(i)?.get(j).copied()
    }

    /// The CPU with id `id`.
    pub fn cpu(&self, id: u32) -> Option<&Cpu> {
        self.cpus.binary_search_by_key(&id, |c| c.id).ok().map(|i| &self.cpus[i])
    }

    /// The node a CPU belongs to.
    pub fn node_of_cpu(&self, cpu: u32) -> Option<u32> {
        self.nodes.iter().find(|n| n.cpus.contains(cpu)).map(|n| n.id)
    }

    /// CPUs of a set of nodes.
    pub fn cpus_of_nodes(&self, nodes: &NodeSet) -> CpuSet {
        self.nodes.iter().filter(|n| nodes.contains(n.id)).fold(CpuSet::new(), |acc, n| acc.union(&n.cpus))
    }

    /// Nodes holding any CPU of `cpus`.
    pub fn nodes_of_cpus(&self, cpus: &CpuSet) -> NodeSet {
        self.nodes.iter().filter(|n| n.cpus.intersects(cpus)).map(|n| n.id).collect()
    }

    /// Total memory of all nodes.
    pub fn total_memory_bytes(&self) -> u64 {
        self.nodes.iter().filter_map(|n| n.memory).map(|m| m.total_bytes).sum()
    }

    /// The GPU at PCI address `address`.
    pub fn gpu(&self, address: &str) -> Option<&Gpu> {
        self.gpus.iter().find(|g| g.address == address)
    }

    /// Memory-only nodes that hold a GPU's own memory (NVIDIA's
    /// `numa_status` on Grace Hopper and GB200): never ordinary memory.
    pub fn gpu_memory_nodes(&self) -> NodeSet {
        self.gpus.iter().filter_map(|g| g.memory_node).collect()
    }

    /// The PCI devices the kernel puts on no node (`numa_node` -1),
    /// bridges left out.
    pub fn devices_without_node(&self) -> Vec<&PciDevice> {
        self.pci_devices.iter().filter(|d| d.numa_node.is_none() && !d.is_bridge()).collect()
    }

    /// Number of cores: distinct SMT sibling groups among online CPUs
    /// (0 when the kernel gives no core information).
    pub fn core_count(&self) -> usize {
        let mut groups: Vec<&CpuSet> =
            self.cpus.iter().filter(|c| c.online).filter_map(|c| c.siblings.as_ref()).collect();
        groups.sort();
        groups.dedup();
        groups.len()
    }
}

#[cfg(test)]
mod proptests;
#[cfg(test)]
mod tests;
