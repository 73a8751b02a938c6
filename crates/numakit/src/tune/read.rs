//! Reading knobs and the benchmark-readiness snapshot through [`SysRoot`].
//!
//! A knob the kernel lacks, or one on debugfs when debugfs is not mounted
//! or not readable, is a [`Reading`] with `why` it is unavailable, never an
//! error: `tune show` lists every knob. Nothing here decides or writes.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::knobs::{self, Knob};
use crate::sys::SysRoot;

/// A knob and what the system says about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reading {
    /// The knob.
    pub knob: Knob,
    /// Where it was found (relative path) and its current value, or why it
    /// is unavailable.
    pub state: Result<Found, String>,
}

/// A knob found on the system.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Found {
    /// The file, relative to the root (`proc/sys/kernel/numa_balancing`).
    pub path: String,
    /// Its current value (the bracketed word of a choice file).
    pub value: String,
}

impl Reading {
    /// The current value, if available.
    pub fn value(&self) -> Option<&str> {
        self.state.as_ref().ok().map(|f| f.value.as_str())
    }
}

/// Where the weighted-interleave files are, relative to the root.
const WEIGHTS_DIR: &str = "sys/kernel/mm/mempolicy/weighted_interleave";

/// The nodes that have a weighted-interleave weight file.
pub fn weight_nodes(sys: &SysRoot) -> Vec<u32> {
    sys.numbered_entries(WEIGHTS_DIR, "node").unwrap_or_default()
}

/// Every knob of the catalogue with its current value. When the kernel has
/// no weight files, one placeholder weight (`nodeN` where N is the first
/// node) says why.
pub fn read_all(sys: &SysRoot) -> Vec<Reading> {
    let nodes = weight_nodes(sys);
    let mut out: Vec<Reading> = knobs::catalogue(&nodes).into_iter().map(|k| read_knob(sys, &k)).collect();
    if nodes.is_empty() {
        let w = knobs::weight(0);
        let why = match sys.exists(WEIGHTS_DIR) {
            true => "no node has a weight file".to_string(),
            false => format!("not in this kernel (needs {})", w.needs),
        };
        let at = out.iter().position(|r| r.knob.order > w.order).unwrap_or(out.len());
        out.insert(at, Reading { knob: w, state: Err(why) });
    }
    out
}

/// [`read_all`], plus the IRQ affinities the state file holds originals
/// of (they are not in the catalogue: `tune show` lists those numakit
/// changed).
pub fn read_all_and_saved(sys: &SysRoot, state: Option<&super::State>) -> Vec<Reading> {
    let mut out = read_all(sys);
    for o in state.map(|s| s.originals.as_slice()).unwrap_or_default() {
        if let Some(n) = knobs::irq_of(&o.knob) {
            out.push(read_knob(sys, &knobs::irq_affinity(n)));
        }
    }
    out
}

/// Reads one knob: the first of its files that exists.
pub fn read_knob(sys: &SysRoot, knob: &Knob) -> Reading {
    Reading { knob: knob.clone(), state: find(sys, knob) }
}

fn find(sys: &SysRoot, knob: &Knob) -> Result<Found, String> {
    let mut unreadable = None;
    for rel in &knob.paths {
        match sys.read(rel) {
            Ok(Some(raw)) => {
                let value = knob.current_from_raw(&raw).map_err(|e| format!("/{rel}: {e}"))?;
                return Ok(Found { path: rel.clone(), value });
            }
            Ok(None) => {}
            Err(e) => {
                let hint = if knobs::on_debugfs(rel) { " (debugfs is readable by root only)" } else { "" };
                unreadable.get_or_insert(format!("{e}{hint}"));
            }
        }
    }
    if let Some(why) = unreadable {
        return Err(why);
    }
    if knob.paths.iter().any(|p| knobs::on_debugfs(p)) {
        match sys.list_dir(knobs::DEBUGFS) {
            Ok(Some(names)) if !names.is_empty() => {}
            Ok(_) => {
                return Err(
                    "debugfs is not mounted at /sys/kernel/debug (mount -t debugfs none /sys/kernel/debug)".into()
                )
            }
            Err(e) => return Err(format!("{e} (debugfs is readable by root only)")),
        }
    }
    match knob.weight_node() {
        Some(n) if sys.exists(WEIGHTS_DIR) => Err(format!("node {n} has no weight file (no such node, or no memory)")),
        _ => Err(format!("not in this kernel (needs {})", knob.needs)),
    }
}

/// The `boot_id` of the running kernel (a new one at every boot).
pub fn boot_id(sys: &SysRoot) -> Option<String> {
    sys.read_nonempty("proc/sys/kernel/random/boot_id").ok()?
}

/// What `tune check` looks at, read once. Every field the kernel does not
/// offer is `None` (or empty).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Snapshot {
    /// `osrelease`.
    pub kernel: Option<String>,
    /// `smt/control`: on, off, forceoff, notsupported, notimplemented.
    pub smt_control: Option<String>,
    /// `smt/active`: 1 when sibling threads are online.
    pub smt_active: Option<String>,
    /// Per online CPU: id and what its cpufreq and cpuidle files say.
    pub cpus: Vec<CpuFacts>,
    /// `cpuidle/current_driver`.
    pub cpuidle_driver: Option<String>,
    /// `intel_pstate/no_turbo` (1: turbo off).
    pub intel_no_turbo: Option<String>,
    /// `cpufreq/boost` (1: boost on).
    pub cpufreq_boost: Option<String>,
    /// `kernel.numa_balancing`.
    pub numa_balancing: Option<String>,
    /// THP `enabled` (current word).
    pub thp_enabled: Option<String>,
    /// THP `defrag` (current word).
    pub thp_defrag: Option<String>,
    /// Watched daemons (irqbalance, numad, tuned) to the ids of their processes.
    pub daemons: BTreeMap<String, Vec<u32>>,
    /// Huge pages reserved: (node, page size in kB, count).
    pub hugepages: Vec<(u32, u64, u64)>,
    /// Nodes (0: the machine model could not be read).
    pub nodes: usize,
    /// The nodes' memory beside `/proc/meminfo`'s.
    pub memory_accounting: Option<crate::topo::MemoryAccounting>,
    /// The PCI devices on no node (bridges left out), as people read them.
    pub devices_without_node: Vec<String>,
}

/// What one CPU's cpufreq and cpuidle files say.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuFacts {
    /// CPU id.
    pub id: u32,
    /// `cpufreq/scaling_driver`.
    pub driver: Option<String>,
    /// `cpufreq/scaling_governor`.
    pub governor: Option<String>,
    /// `cpuidle/stateN`: (name, disabled).
    pub idle_states: Vec<(String, bool)>,
}

/// Daemons whose running changes placement or tuning under a benchmark.
pub const WATCHED_DAEMONS: &[&str] = &["irqbalance", "numad", "tuned"];

/// Reads the [`Snapshot`].
pub fn snapshot(sys: &SysRoot) -> Snapshot {
    let text = |rel: &str| sys.read_nonempty(rel).ok().flatten();
    let cpu_dir = "sys/devices/system/cpu";
    let online = sys.read_list::<crate::sets::Cpu>(format!("{cpu_dir}/online")).ok().flatten();
    let ids: Vec<u32> = match online {
        Some(set) => set.to_vec(),
        None => sys.numbered_entries(cpu_dir, "cpu").unwrap_or_default(),
    };
    let cpus = ids
        .into_iter()
        .map(|id| {
            let d = format!("{cpu_dir}/cpu{id}");
            let idle_states = sys
                .numbered_entries(format!("{d}/cpuidle"), "state")
                .unwrap_or_default()
                .into_iter()
                .filter_map(|s| {
                    let name = text(&format!("{d}/cpuidle/state{s}/name"))?;
                    let disabled = text(&format!("{d}/cpuidle/state{s}/disable")).is_some_and(|v| v != "0");
                    Some((name, disabled))
                })
                .collect();
            CpuFacts {
                id,
                driver: text(&format!("{d}/cpufreq/scaling_driver")),
                governor: text(&format!("{d}/cpufreq/scaling_governor")),
                idle_states,
            }
        })
        .collect();
    let word = |name: &str| {
        let k = knobs::lookup(name)?;
        read_knob(sys, &k).value().map(str::to_string)
    };
    let mut hugepages = Vec::new();
    for node in sys.numbered_entries("sys/devices/system/node", "node").unwrap_or_default() {
        let dir = format!("sys/devices/system/node/node{node}/hugepages");
        for size in sys.list_dir(&dir).ok().flatten().unwrap_or_default() {
            let kb = size.strip_prefix("hugepages-").and_then(|s| s.strip_suffix("kB")).and_then(|s| s.parse().ok());
            let nr = sys.read_u64(format!("{dir}/{size}/nr_hugepages")).ok().flatten();
            if let (Some(kb), Some(nr)) = (kb, nr) {
                hugepages.push((node, kb, nr));
            }
        }
    }
    hugepages.sort_unstable();
    let topo = crate::topo::Topology::read(sys).ok();
    Snapshot {
        kernel: crate::sys::kernel::release(sys),
        smt_control: text(&format!("{cpu_dir}/smt/control")),
        smt_active: text(&format!("{cpu_dir}/smt/active")),
        cpus,
        cpuidle_driver: text(&format!("{cpu_dir}/cpuidle/current_driver")),
        intel_no_turbo: text(&format!("{cpu_dir}/intel_pstate/no_turbo")),
        cpufreq_boost: text(&format!("{cpu_dir}/cpufreq/boost")),
        numa_balancing: word(knobs::NUMA_BALANCING),
        thp_enabled: word(knobs::THP_ENABLED),
        thp_defrag: word(knobs::THP_DEFRAG),
        daemons: running_daemons(sys),
        hugepages,
        nodes: topo.as_ref().map_or(0, |t| t.nodes.len()),
        memory_accounting: topo.as_ref().and_then(|t| t.memory_accounting),
        devices_without_node: topo
            .as_ref()
            .map(|t| t.devices_without_node().iter().map(|d| d.label()).collect())
            .unwrap_or_default(),
    }
}

/// Scans `/proc/*/comm` for the [`WATCHED_DAEMONS`]; every one is a key,
/// with an empty list when it is not running.
fn running_daemons(sys: &SysRoot) -> BTreeMap<String, Vec<u32>> {
    let mut out: BTreeMap<String, Vec<u32>> = WATCHED_DAEMONS.iter().map(|d| (d.to_string(), Vec::new())).collect();
    for pid in sys.list_dir("proc").ok().flatten().unwrap_or_default() {
        let Ok(id) = pid.parse::<u32>() else { continue };
        // a process may exit between the listing and the read: skip it
        let Ok(Some(comm)) = sys.read(format!("proc/{pid}/comm")) else { continue };
        if let Some(list) = out.get_mut(comm.trim()) {
            list.push(id);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tune::testutil::{fake_root, put};

    #[test]
    fn reads_values_and_explains_missing_ones() {
        let (d, sys) = fake_root();
        let all = read_all(&sys);
        let get = |n: &str| all.iter().find(|r| r.knob.name == n).unwrap_or_else(|| panic!("{n}")).clone();
        assert_eq!(get("kernel.numa_balancing").value(), Some("1"));
        assert_eq!(get(knobs::THP_ENABLED).value(), Some("madvise"));
        assert_eq!(get(knobs::THP_DEFRAG).value(), Some("madvise"));
        let scan = get("kernel.numa_balancing_scan_delay_ms");
        assert_eq!(
            scan.state.clone().map(|f| f.path),
            Ok("sys/kernel/debug/sched/numa_balancing/scan_delay_ms".into())
        );
        let promote = get("kernel.numa_balancing_promote_rate_limit_MBps");
        assert_eq!(promote.state, Err("not in this kernel (needs Linux 6.1+ with CONFIG_NUMA_BALANCING)".into()));
        assert_eq!(get(&format!("{}node1", knobs::WEIGHT_PREFIX)).value(), Some("1"));
        assert_eq!(get(knobs::WEIGHT_AUTO).value(), Some("true"), "the 6.18 __auto_type name is found");

        // debugfs unmounted: the scan knobs say so
        std::fs::remove_dir_all(d.path().join("sys/kernel/debug")).expect("rm");
        std::fs::create_dir_all(d.path().join("sys/kernel/debug")).expect("mkdir");
        let scan = read_knob(&sys, &knobs::lookup("scan_delay_ms").expect("knob"));
        assert!(scan.state.unwrap_err().starts_with("debugfs is not mounted"));
        // the old sysctl file wins when it exists
        put(&d, "proc/sys/kernel/numa_balancing_scan_delay_ms", "500\n");
        let scan = read_knob(&sys, &knobs::lookup("scan_delay_ms").expect("knob"));
        assert_eq!(scan.value(), Some("500"));
    }

    #[test]
    fn weights_placeholder_and_bad_content() {
        let (d, sys) = fake_root();
        std::fs::remove_dir_all(d.path().join("sys/kernel/mm/mempolicy")).expect("rm");
        let all = read_all(&sys);
        let w: Vec<_> = all.iter().filter(|r| r.knob.weight_node().is_some()).collect();
        assert_eq!(w.len(), 1);
        assert!(w[0].state.clone().unwrap_err().contains("Linux 6.9+"));
        let w7 = read_knob(&sys, &knobs::weight(7));
        assert!(w7.state.unwrap_err().starts_with("not in this kernel"));
        put(&d, "sys/kernel/mm/transparent_hugepage/enabled", "always madvise never\n");
        let thp = read_knob(&sys, &knobs::lookup("thp").expect("knob"));
        assert!(thp.state.unwrap_err().contains("marks no current value"));
    }

    #[test]
    fn snapshot_reads_what_check_needs() {
        let (d, sys) = fake_root();
        put(&d, "sys/devices/system/cpu/online", "0-1\n");
        for c in 0..2 {
            put(&d, &format!("sys/devices/system/cpu/cpu{c}/cpufreq/scaling_governor"), "performance\n");
            put(&d, &format!("sys/devices/system/cpu/cpu{c}/cpuidle/state0/name"), "POLL\n");
            put(&d, &format!("sys/devices/system/cpu/cpu{c}/cpuidle/state0/disable"), "0\n");
            put(&d, &format!("sys/devices/system/cpu/cpu{c}/cpuidle/state1/name"), "C6\n");
            put(&d, &format!("sys/devices/system/cpu/cpu{c}/cpuidle/state1/disable"), "1\n");
        }
        put(&d, "proc/42/comm", "irqbalance\n");
        put(&d, "proc/43/comm", "bash\n");
        put(&d, "sys/devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages", "16\n");
        let s = snapshot(&sys);
        assert_eq!(s.cpus.len(), 2);
        assert_eq!(s.cpus[1].idle_states, vec![("POLL".to_string(), false), ("C6".to_string(), true)]);
        assert_eq!(s.daemons["irqbalance"], vec![42]);
        assert!(s.daemons["numad"].is_empty());
        assert_eq!(s.hugepages, vec![(0, 2048, 16)]);
        assert_eq!(s.numa_balancing.as_deref(), Some("1"));
        assert_eq!(s.thp_enabled.as_deref(), Some("madvise"));
        assert_eq!(s.smt_control, None);
    }
}
