//! Synthetic machines: writes a sysfs/procfs tree for a described machine
//! into a folder, so tests (here and in other crates) can read machines
//! this host is not, through the same [`SysRoot`] reader as real dumps.
//! Like hwloc's synthetic topologies, but as files. The simulator
//! (`numakit-sim`) builds its named machines from these descriptions.
//!
//! Behind the `synth` feature (always compiled for this crate's own
//! tests): nothing in the library's default build uses it, and nothing
//! here touches the live system.
//!
//! [`SysRoot`]: crate::sys::SysRoot

use std::fmt::Write as _;
use std::io;
use std::path::Path;

use crate::sets::CpuSet;

mod devices;
pub use devices::{write_devices, SynthDevice, SynthDeviceKind};

/// One CPU of a synthetic machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SynthCpu {
    /// Logical id.
    pub id: u32,
    /// Node.
    pub node: u32,
    /// Package.
    pub package: u32,
    /// Core id within the package.
    pub core: u32,
}

/// One HMAT access class of a memory node, as the kernel shows it in
/// `nodeN/accessK/initiators/`: the best initiators and what they see.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SynthAccess {
    /// The memory node.
    pub target: u32,
    /// K in `accessK` (0: any initiator, 1: CPU initiators).
    pub class: u32,
    /// The best initiators.
    pub initiators: Vec<u32>,
    /// Read and write latency, nanoseconds.
    pub latency_ns: (u64, u64),
    /// Read and write bandwidth, MiB/s.
    pub bandwidth_mib_s: (u64, u64),
}

/// A synthetic machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SynthMachine {
    /// CPUs (any numbering).
    pub cpus: Vec<SynthCpu>,
    /// Node ids with their memory in MiB (0: memory-less).
    pub nodes: Vec<(u32, u64)>,
    /// Distance matrix in the order of `nodes`.
    pub distances: Vec<Vec<u32>>,
    /// Free memory as a share of total, in percent.
    pub free_percent: u64,
    /// HMAT access classes (empty: the firmware has no HMAT).
    pub access: Vec<SynthAccess>,
    /// Memory tiers (`memory_tiering/memory_tierN/nodelist`): tier id and
    /// its nodes (empty: the kernel has no memory tiering).
    pub tiers: Vec<(u32, Vec<u32>)>,
}

impl SynthMachine {
    /// The CPUs of node `id`.
    pub fn node_cpus(&self, id: u32) -> CpuSet {
        self.cpus.iter().filter(|c| c.node == id).map(|c| c.id).collect()
    }

    /// SMT siblings of a CPU: same package and core.
    pub fn siblings(&self, cpu: &SynthCpu) -> CpuSet {
        self.cpus.iter().filter(|c| c.package == cpu.package && c.core == cpu.core).map(|c| c.id).collect()
    }

    /// A two-socket Intel server with Hyper-Threading as Linux numbers it:
    /// the first threads of all cores first, alternating sockets (even CPUs
    /// on socket/node 0, odd on 1), then the second threads in the same
    /// order, so CPU `i`'s sibling is `i + cores`. Distances 10/21.
    pub fn intel_2s_ht(cores_per_socket: u32, mem_mib: u64) -> Self {
        let total_cores = 2 * cores_per_socket;
        let cpus = (0..2 * total_cores)
            .map(|id| {
                let first = id % total_cores;
                SynthCpu { id, node: first % 2, package: first % 2, core: first / 2 }
            })
            .collect();
        Self {
            cpus,
            nodes: vec![(0, mem_mib), (1, mem_mib)],
            distances: vec![vec![10, 21], vec![21, 10]],
            free_percent: 80,
            access: Vec::new(),
            tiers: Vec::new(),
        }
    }

    /// Two nodes of two CPUs each (CPUs 0-1 and 2-3, one package each),
    /// distance 20 between them, `mem_mib` each, half of it free: the
    /// small machine of many unit tests.
    pub fn two_by_two(mem_mib: u64) -> Self {
        let cpus = (0..4).map(|id| SynthCpu { id, node: id / 2, package: id / 2, core: id % 2 }).collect();
        Self {
            cpus,
            nodes: vec![(0, mem_mib), (1, mem_mib)],
            distances: vec![vec![10, 20], vec![20, 10]],
            free_percent: 50,
            access: Vec::new(),
            tiers: Vec::new(),
        }
    }

    /// Four nodes (one per package) with round-robin CPU numbering: CPU
    /// `i` is on node `i % 4`; distances 10 / 20 to neighbours / 30 across
    /// (a ring).
    pub fn rr_4n(cpus: u32, mem_mib: u64) -> Self {
        let cpus = (0..cpus).map(|id| SynthCpu { id, node: id % 4, package: id % 4, core: id / 4 }).collect();
        let d = |a: u32, b: u32| match (a + 4 - b) % 4 {
            0 => 10,
            2 => 30,
            _ => 20,
        };
        let distances = (0..4).map(|a| (0..4).map(|b| d(a, b)).collect()).collect();
        Self {
            cpus,
            nodes: (0..4).map(|n| (n, mem_mib)).collect(),
            distances,
            free_percent: 75,
            access: Vec::new(),
            tiers: Vec::new(),
        }
    }

    /// A four-socket AMD server with two nodes per socket: 8 nodes of
    /// `cores_per_node` consecutive CPUs; distances 10 / 16 inside a
    /// package / 22 across.
    pub fn amd_4s_8n(cores_per_node: u32, mem_mib: u64) -> Self {
        let cpus = (0..8 * cores_per_node)
            .map(|id| {
                let node = id / cores_per_node;
                SynthCpu { id, node, package: node / 2, core: id % (2 * cores_per_node) }
            })
            .collect();
        let distances = (0..8u32)
            .map(|a| {
                (0..8u32)
                    .map(|b| {
                        if a == b {
                            10
                        } else if a / 2 == b / 2 {
                            16
                        } else {
                            22
                        }
                    })
                    .collect()
            })
            .collect();
        Self {
            cpus,
            nodes: (0..8).map(|n| (n, mem_mib)).collect(),
            distances,
            free_percent: 90,
            access: Vec::new(),
            tiers: Vec::new(),
        }
    }

    /// A machine of nodes `0..` described as the test bed's `--node
    /// CPUS:MEM` options describe them: each `(CPU list, MiB)`, an empty
    /// list for a memory-only node, 0 MiB for a memory-less one. One
    /// package per CPU node, one core per CPU, distance 20 between every
    /// two nodes ([`SynthMachine::with_distance`] changes one), 90% of the
    /// memory free. Panics on a CPU list that is not one.
    pub fn of_nodes(nodes: &[(&str, u64)]) -> Self {
        let mut cpus = Vec::new();
        let mut package = 0;
        for (node, (list, _)) in (0u32..).zip(nodes) {
            let set = CpuSet::parse_list(list).expect("a CPU list");
            for (core, id) in (0u32..).zip(set.iter()) {
                cpus.push(SynthCpu { id, node, package, core });
            }
            package += u32::from(!set.is_empty());
        }
        cpus.sort_by_key(|c| c.id);
        let n = nodes.len();
        Self {
            cpus,
            nodes: (0u32..).zip(nodes).map(|(i, (_, mib))| (i, *mib)).collect(),
            distances: (0..n).map(|a| (0..n).map(|b| if a == b { 10 } else { 20 }).collect()).collect(),
            free_percent: 90,
            access: Vec::new(),
            tiers: Vec::new(),
        }
    }

    /// The same machine with distance `d` between nodes `a` and `b` (both
    /// ways), `a` and `b` being positions in [`SynthMachine::nodes`].
    pub fn with_distance(mut self, a: usize, b: usize, d: u32) -> Self {
        self.distances[a][b] = d;
        self.distances[b][a] = d;
        self
    }

    /// Writes the tree below `root` (which should be empty).
    pub fn write(&self, root: &Path) -> io::Result<()> {
        let put = |rel: &str, content: &str| -> io::Result<()> {
            let p = root.join(rel);
            if let Some(parent) = p.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(p, content)
        };
        let all: CpuSet = self.cpus.iter().map(|c| c.id).collect();
        let nbits = all.last().map_or(1, |l| l + 1);
        put("sys/devices/system/cpu/possible", &format!("{}\n", all.to_list()))?;
        put("sys/devices/system/cpu/present", &format!("{}\n", all.to_list()))?;
        put("sys/devices/system/cpu/online", &format!("{}\n", all.to_list()))?;
        for c in &self.cpus {
            let t = format!("sys/devices/system/cpu/cpu{}/topology", c.id);
            let sib = self.siblings(c);
            let pkg: CpuSet = self.cpus.iter().filter(|x| x.package == c.package).map(|x| x.id).collect();
            put(&format!("{t}/physical_package_id"), &format!("{}\n", c.package))?;
            put(&format!("{t}/core_id"), &format!("{}\n", c.core))?;
            put(&format!("{t}/die_id"), "0\n")?;
            put(&format!("{t}/thread_siblings_list"), &format!("{}\n", sib.to_list()))?;
            put(&format!("{t}/thread_siblings"), &format!("{}\n", sib.to_mask(nbits)))?;
            put(&format!("{t}/core_siblings_list"), &format!("{}\n", pkg.to_list()))?;
            put(&format!("{t}/core_siblings"), &format!("{}\n", pkg.to_mask(nbits)))?;
        }
        let ids: CpuSet = self.nodes.iter().map(|(n, _)| *n).collect();
        let nd = "sys/devices/system/node";
        put(&format!("{nd}/possible"), &format!("{}\n", ids.to_list()))?;
        put(&format!("{nd}/online"), &format!("{}\n", ids.to_list()))?;
        let with_cpu: CpuSet =
            self.nodes.iter().filter(|(n, _)| !self.node_cpus(*n).is_empty()).map(|(n, _)| *n).collect();
        let with_mem: CpuSet = self.nodes.iter().filter(|(_, m)| *m > 0).map(|(n, _)| *n).collect();
        put(&format!("{nd}/has_cpu"), &format!("{}\n", with_cpu.to_list()))?;
        put(&format!("{nd}/has_memory"), &format!("{}\n", with_mem.to_list()))?;
        put(&format!("{nd}/has_normal_memory"), &format!("{}\n", with_mem.to_list()))?;
        let mut meminfo_total = 0;
        let mut meminfo_free = 0;
        for (i, (n, mib)) in self.nodes.iter().enumerate() {
            let cpus = self.node_cpus(*n);
            put(&format!("{nd}/node{n}/cpulist"), &format!("{}\n", cpus.to_list()))?;
            put(&format!("{nd}/node{n}/cpumap"), &format!("{}\n", cpus.to_mask(nbits)))?;
            let total_kb = mib * 1024;
            let free_kb = total_kb * self.free_percent / 100;
            meminfo_total += total_kb;
            meminfo_free += free_kb;
            let mut m = String::new();
            let _ = writeln!(m, "Node {n} MemTotal:       {total_kb} kB");
            let _ = writeln!(m, "Node {n} MemFree:        {free_kb} kB");
            let _ = writeln!(m, "Node {n} MemUsed:        {} kB", total_kb - free_kb);
            let _ = writeln!(m, "Node {n} HugePages_Total:     0");
            put(&format!("{nd}/node{n}/meminfo"), &m)?;
            let row: Vec<String> = self.distances[i].iter().map(u32::to_string).collect();
            put(&format!("{nd}/node{n}/distance"), &format!("{}\n", row.join(" ")))?;
            for (size, count) in [(2048, 0), (1048576, 0)] {
                let h = format!("{nd}/node{n}/hugepages/hugepages-{size}kB");
                put(&format!("{h}/nr_hugepages"), &format!("{count}\n"))?;
                put(&format!("{h}/free_hugepages"), &format!("{count}\n"))?;
                put(&format!("{h}/surplus_hugepages"), "0\n")?;
            }
        }
        for a in &self.access {
            let d = format!("{nd}/node{}/access{}/initiators", a.target, a.class);
            for i in &a.initiators {
                std::fs::create_dir_all(root.join(format!("{d}/node{i}")))?;
            }
            put(&format!("{d}/read_latency"), &format!("{}\n", a.latency_ns.0))?;
            put(&format!("{d}/write_latency"), &format!("{}\n", a.latency_ns.1))?;
            put(&format!("{d}/read_bandwidth"), &format!("{}\n", a.bandwidth_mib_s.0))?;
            put(&format!("{d}/write_bandwidth"), &format!("{}\n", a.bandwidth_mib_s.1))?;
        }
        for (tier, nodes) in &self.tiers {
            let list: CpuSet = nodes.iter().copied().collect();
            put(
                &format!("sys/devices/virtual/memory_tiering/memory_tier{tier}/nodelist"),
                &format!("{}\n", list.to_list()),
            )?;
        }
        put("proc/meminfo", &format!("MemTotal: {meminfo_total} kB\nMemFree: {meminfo_free} kB\n"))?;
        Ok(())
    }
}
