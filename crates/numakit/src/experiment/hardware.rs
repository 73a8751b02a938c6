//! The host's hardware key ([`Hardware`]): the topology's shape, so that
//! outcomes of unlike hosts are never pooled silently. [`Hardware::of`] is
//! a pure function of the model and `/proc/cpuinfo`'s text;
//! [`Hardware::read`] reads both through [`SysRoot`].
//!
//! The key is `PACKAGESp-NODESn-CORESc-CPUSt-MEMORY-MODEL`, for example
//! `2p-2n-32c-64t-2x96G-Intel(R) Xeon(R) Gold 6130 CPU @ 2.10GHz`, where
//! MEMORY is each node's `MemTotal` rounded by [`round_memory`]: `2x96G`
//! when the nodes are alike, else their sizes joined by `+`.

use super::record::Hardware;
use crate::sys::{SysError, SysRoot};
use crate::topo::Topology;

/// `MemTotal` rounded up to the next of eight steps per power of two (an
/// eighth of the power of two below it): 62.8 GiB is 64 GiB, 94.1 GiB is
/// 96 GiB, 190 GiB is 192 GiB. The kernel's `MemTotal` is the installed
/// memory less what firmware and the kernel reserve (1 to 3 %, varying
/// with firmware versions and boot options), and installed sizes are such
/// steps, so hosts with the same memory get the same figure while a host
/// with a different size (12.5 % or more apart) does not.
pub fn round_memory(bytes: u64) -> u64 {
    if bytes == 0 {
        return 0;
    }
    let e = 63 - bytes.leading_zeros();
    let step = 1u64 << e.saturating_sub(3);
    bytes.div_ceil(step).saturating_mul(step)
}

/// `64G`, `480M`, `1.5T`: a rounded size, short.
fn short_size(bytes: u64) -> String {
    const G: u64 = 1 << 30;
    if bytes >= 1 << 40 && bytes % (1 << 37) == 0 {
        let t = bytes as f64 / (1u64 << 40) as f64;
        return if bytes % (1 << 40) == 0 { format!("{t:.0}T") } else { format!("{t}T") };
    }
    if bytes >= G && bytes % G == 0 {
        format!("{}G", bytes / G)
    } else if bytes % (1 << 20) == 0 {
        format!("{}M", bytes >> 20)
    } else {
        format!("{bytes}B")
    }
}

/// `/proc/cpuinfo`'s first `model name`, its runs of spaces made one.
pub fn cpu_model(cpuinfo: &str) -> Option<String> {
    cpuinfo.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == "model name").then(|| v.split_whitespace().collect::<Vec<_>>().join(" "))
    })
}

impl Hardware {
    /// The key of a machine model (read with its CPUs: [`Topology::read`]
    /// or [`Topology::read_shape`])
    /// and its `/proc/cpuinfo`. Nodes with neither CPUs nor memory are
    /// left out; a memory-less node counts 0 bytes.
    pub fn of(topo: &Topology, cpuinfo: Option<&str>) -> Hardware {
        let nodes: Vec<_> = topo.nodes.iter().filter(|n| n.has_cpu || n.has_memory).collect();
        let node_mem_bytes: Vec<u64> = nodes.iter().map(|n| n.memory.map_or(0, |m| m.total_bytes)).collect();
        let rounded: Vec<u64> = node_mem_bytes.iter().map(|b| round_memory(*b)).collect();
        let memory = match rounded.first() {
            Some(first) if rounded.iter().all(|r| r == first) => format!("{}x{}", rounded.len(), short_size(*first)),
            _ => rounded.iter().map(|r| short_size(*r)).collect::<Vec<_>>().join("+"),
        };
        let cpu_model = cpuinfo.and_then(cpu_model).filter(|m| !m.is_empty());
        let packages = topo.packages.len() as u32;
        let cores = topo.core_count() as u32;
        let cpus = topo.online_cpus.len() as u32;
        let mut key = format!("{packages}p-{}n-{cores}c-{cpus}t-{memory}", nodes.len());
        if let Some(m) = &cpu_model {
            key.push('-');
            key.push_str(m);
        }
        Hardware { key, packages, nodes: nodes.len() as u32, cores, cpus, node_mem_bytes, cpu_model }
    }

    /// Reads the machine through `sys` ([`Topology::read_shape`] and
    /// `proc/cpuinfo`; a missing or unreadable cpuinfo leaves the model out).
    pub fn read(sys: &SysRoot) -> Result<Hardware, SysError> {
        let topo = Topology::read_shape(sys)?;
        let cpuinfo = sys.read("proc/cpuinfo").ok().flatten();
        Ok(Hardware::of(&topo, cpuinfo.as_deref()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topo::synth::SynthMachine;

    const GIB: u64 = 1 << 30;

    #[test]
    fn memory_rounds_to_the_installed_size() {
        for (kernel, installed) in [
            (63 * GIB + 800 * (1 << 20), 64 * GIB),
            (62 * GIB, 64 * GIB),
            (64 * GIB, 64 * GIB),
            (94 * GIB, 96 * GIB),
            (190 * GIB, 192 * GIB),
            (380 * GIB, 384 * GIB),
            (15 * GIB + 600 * (1 << 20), 16 * GIB),
            (480 << 20, 480 << 20),
            (490 << 20, 512 << 20),
        ] {
            assert_eq!(round_memory(kernel), installed, "{kernel}");
        }
        assert_eq!(round_memory(0), 0);
        assert_eq!(round_memory(1), 1);
        assert_eq!(round_memory(u64::MAX), u64::MAX, "saturates, no overflow");
        assert_eq!(short_size(96 * GIB), "96G");
        assert_eq!(short_size(480 << 20), "480M");
        assert_eq!(short_size(2 << 40), "2T");
        assert_eq!(short_size(3 << 39), "1.5T");
    }

    #[test]
    fn the_model_name_of_the_first_cpu() {
        let info =
            "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R)  Gold 6130 CPU @ 2.10GHz\n\
                    \nprocessor\t: 1\nmodel name\t: other\n";
        assert_eq!(cpu_model(info).as_deref(), Some("Intel(R) Xeon(R) Gold 6130 CPU @ 2.10GHz"));
        assert_eq!(cpu_model("processor : 0\nBogoMIPS : 50.00\n"), None, "arm64 has no model name");
    }

    /// Two packages of 4 cores of 2 threads, a node each, memory in MiB.
    fn machine(mem_mib: [u64; 2]) -> Topology {
        let d = tempfile::tempdir().unwrap();
        let mut m = SynthMachine::intel_2s_ht(4, 1024);
        m.nodes = vec![(0, mem_mib[0]), (1, mem_mib[1])];
        m.write(d.path()).unwrap();
        Topology::read(&SysRoot::at(d.path())).unwrap()
    }

    #[test]
    fn identical_hosts_share_a_key_despite_firmware_and_others_do_not() {
        let info = Some("model name\t: Test CPU\n");
        let a = Hardware::of(&machine([63 * 1024, 63 * 1024 + 300]), info);
        let b = Hardware::of(&machine([62 * 1024 + 700, 63 * 1024]), info);
        assert_eq!(a.key, "2p-2n-8c-16t-2x64G-Test CPU");
        assert_eq!(a.key, b.key);
        assert_ne!(a.node_mem_bytes, b.node_mem_bytes, "the raw figures stay in the record");
        assert_eq!((a.packages, a.nodes, a.cores, a.cpus), (2, 2, 8, 16));
        let c = Hardware::of(&machine([63 * 1024, 31 * 1024]), None);
        assert_eq!(c.key, "2p-2n-8c-16t-64G+32G");
        assert_eq!(c.cpu_model, None);
    }

    #[test]
    fn read_through_a_root() {
        let d = tempfile::tempdir().unwrap();
        SynthMachine::two_by_two(512).write(d.path()).unwrap();
        std::fs::create_dir_all(d.path().join("proc")).unwrap();
        std::fs::write(d.path().join("proc/cpuinfo"), "model name : Fake\n").unwrap();
        let h = Hardware::read(&SysRoot::at(d.path())).unwrap();
        assert_eq!(h.key, "2p-2n-4c-4t-2x512M-Fake");
        let full = Topology::read(&SysRoot::at(d.path())).unwrap();
        assert_eq!(h, Hardware::of(&full, Some("model name : Fake")), "the shape is the full model's");
    }
}
