//! Benchmark readiness, pure on a [`Snapshot`]: [`facts`] turns it into
//! flat `key → value` facts (the same on every host that will behave
//! alike: no process ids, no host names), [`report`] adds a level and
//! advice to each, and [`diff`] compares facts with a saved [`Baseline`]
//! to find the hosts of a farm that differ.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::read::Snapshot;
use crate::sets::CpuSet;

/// Facts: `key → value`, sorted by key.
pub type Facts = BTreeMap<String, String>;

/// How much a fact matters for repeatable benchmarks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// Nothing to do.
    Ok,
    /// Worth knowing; may add variance.
    Note,
    /// Likely to make runs differ.
    Warn,
}

impl Level {
    /// `ok`, `note`, `warn`.
    pub fn name(self) -> &'static str {
        match self {
            Level::Ok => "ok",
            Level::Note => "note",
            Level::Warn => "warn",
        }
    }
}

/// One line of the readiness report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// Fact key (`cpufreq.governor`).
    pub key: String,
    /// Its value.
    pub value: String,
    /// How much it matters.
    pub level: Level,
    /// What to do, when something is worth doing.
    pub advice: Option<String>,
}

/// A saved baseline (`tune check --save-baseline FILE`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Baseline {
    /// Always `numakit-tune-baseline`.
    pub format: String,
    /// 1.
    pub version: u32,
    /// The host it was taken on (for people; not compared).
    pub host: Option<String>,
    /// When (UTC, RFC 3339).
    pub taken: String,
    /// The facts.
    pub facts: Facts,
}

/// The `format` of baseline files.
pub const BASELINE_FORMAT: &str = "numakit-tune-baseline";

impl Baseline {
    /// A baseline of `facts`.
    pub fn new(host: Option<String>, facts: Facts) -> Baseline {
        Baseline { format: BASELINE_FORMAT.into(), version: 1, host, taken: super::state::now_utc(), facts }
    }

    /// Parses a baseline file's text.
    pub fn parse(text: &str) -> Result<Baseline, String> {
        let b: Baseline = serde_json::from_str(text).map_err(|e| format!("not a numakit baseline ({e})"))?;
        if b.format != BASELINE_FORMAT {
            return Err(format!("format is \"{}\", not \"{BASELINE_FORMAT}\"", b.format));
        }
        Ok(b)
    }
}

/// A fact that differs from the baseline (`None`: absent on that side).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Difference {
    /// Fact key.
    pub key: String,
    /// The baseline's value.
    pub baseline: Option<String>,
    /// This host's value.
    pub current: Option<String>,
}

/// Values per CPU, summarised: `performance` when all agree, else
/// `performance (0-3), powersave (4-7)`; CPUs without a value count as
/// `none`.
fn per_cpu(values: impl Iterator<Item = (u32, Option<String>)>) -> String {
    let mut groups: BTreeMap<String, CpuSet> = BTreeMap::new();
    for (cpu, v) in values {
        groups.entry(v.unwrap_or_else(|| "none".into())).or_default().insert(cpu);
    }
    match groups.len() {
        0 => "none".into(),
        1 => groups.into_keys().next().unwrap_or_default(),
        _ => groups.into_iter().map(|(v, cpus)| format!("{v} ({cpus})")).collect::<Vec<_>>().join(", "),
    }
}

/// The snapshot as facts.
pub fn facts(s: &Snapshot) -> Facts {
    let mut f = Facts::new();
    let mut put = |k: &str, v: String| {
        f.insert(k.to_string(), v);
    };
    let or_none = |v: &Option<String>| v.clone().unwrap_or_else(|| "none".into());
    put("kernel.release", or_none(&s.kernel));
    put("smt.control", or_none(&s.smt_control));
    put("smt.active", or_none(&s.smt_active));
    put("cpufreq.driver", per_cpu(s.cpus.iter().map(|c| (c.id, c.driver.clone()))));
    put("cpufreq.governor", per_cpu(s.cpus.iter().map(|c| (c.id, c.governor.clone()))));
    let turbo = match (s.intel_no_turbo.as_deref(), s.cpufreq_boost.as_deref()) {
        (Some("0"), _) => "on (intel_pstate/no_turbo=0)".to_string(),
        (Some("1"), _) => "off (intel_pstate/no_turbo=1)".to_string(),
        (_, Some("1")) => "on (cpufreq/boost=1)".to_string(),
        (_, Some("0")) => "off (cpufreq/boost=0)".to_string(),
        _ => "unknown (no intel_pstate/no_turbo or cpufreq/boost)".to_string(),
    };
    put("turbo", turbo);
    put("cpuidle.driver", or_none(&s.cpuidle_driver));
    let names = |c: &super::read::CpuFacts, only_disabled: bool| {
        let list: Vec<&str> =
            c.idle_states.iter().filter(|(_, d)| !only_disabled || *d).map(|(n, _)| n.as_str()).collect();
        if list.is_empty() {
            None
        } else {
            Some(list.join(","))
        }
    };
    put("cstates.offered", per_cpu(s.cpus.iter().map(|c| (c.id, names(c, false)))));
    put("cstates.disabled", per_cpu(s.cpus.iter().map(|c| (c.id, names(c, true)))));
    put("autonuma", or_none(&s.numa_balancing));
    put("thp.enabled", or_none(&s.thp_enabled));
    put("thp.defrag", or_none(&s.thp_defrag));
    for (name, pids) in &s.daemons {
        put(&format!("daemon.{name}"), if pids.is_empty() { "not running" } else { "running" }.into());
    }
    for (node, kb, nr) in &s.hugepages {
        put(&format!("hugepages.node{node}.{kb}kB"), nr.to_string());
    }
    put("memory.nodes", memory_nodes(s.memory_accounting.as_ref()));
    put(
        "pci.no_node",
        if s.devices_without_node.is_empty() { "none".into() } else { s.devices_without_node.join(", ") },
    );
    f
}

/// Whether the nodes' memory adds up to `/proc/meminfo`'s; the figures
/// only when it does not (hosts that behave alike give the same value).
fn memory_nodes(a: Option<&crate::topo::MemoryAccounting>) -> String {
    use crate::units::human_bytes;
    match a {
        None => "unknown".into(),
        Some(a) if a.adds_up() => "add up to MemTotal".into(),
        Some(a) => format!(
            "{} in the nodes, MemTotal {}: {:.1}% {}",
            human_bytes(a.nodes_total_bytes),
            human_bytes(a.meminfo_total_bytes),
            a.difference_pct().abs(),
            if a.difference_bytes() > 0 { "in no node" } else { "more in the nodes" }
        ),
    }
}

/// The readiness report: every fact with a level and, when useful, advice.
pub fn report(s: &Snapshot) -> Vec<Finding> {
    facts(s)
        .into_iter()
        .map(|(key, value)| {
            let (level, advice) = judge(s, &key, &value);
            Finding { key, value, level, advice: advice.map(str::to_string) }
        })
        .collect()
}

fn judge(s: &Snapshot, key: &str, value: &str) -> (Level, Option<&'static str>) {
    let running = value == "running";
    match key {
        "cpufreq.governor" if value != "performance" && value != "none" => (
            Level::Warn,
            Some("the clock follows the load: use the performance governor on every CPU (cpupower frequency-set -g performance)"),
        ),
        "turbo" if value.starts_with("on") => {
            (Level::Note, Some("turbo clocks depend on temperature and busy cores: turn it off for repeatable numbers"))
        }
        "smt.active" if value == "1" => (
            Level::Note,
            Some("SMT siblings share a core: pin one thread per core, or turn SMT off (echo off > /sys/devices/system/cpu/smt/control)"),
        ),
        "cstates.disabled" if value == "none" && deep_cstates(s) => {
            (Level::Note, Some("deep C-states add wake-up latency: disable them for latency benchmarks"))
        }
        "autonuma" if value != "0" && value != "none" => (
            Level::Note,
            Some("AutoNUMA may move pages and tasks during a run: numakit tune apply bound-workloads for bound benchmarks"),
        ),
        "thp.enabled" if value == "always" => {
            (Level::Note, Some("every large mapping may get huge pages: results depend on memory fragmentation"))
        }
        "daemon.numad" if running => (Level::Warn, Some("numad re-binds processes while they run: stop it for benchmarks")),
        "daemon.tuned" if running => (Level::Warn, Some("tuned may change tunables during a run: stop it or pin its profile")),
        "daemon.irqbalance" if running => {
            (Level::Note, Some("irqbalance moves interrupts between CPUs during a run: stop it or ban the benchmark's CPUs"))
        }
        "memory.nodes" if value.ends_with("in no node") => (
            Level::Warn,
            Some("memory no node accounts for: placement, numastat and bench's free-memory figures do not see it; check the firmware's (or the virtual machine's) NUMA memory layout"),
        ),
        "memory.nodes" if value.ends_with("more in the nodes") => (
            Level::Note,
            Some("the nodes count more memory than MemTotal (an older kernel counts reserved pages per node): per-node figures run high"),
        ),
        "pci.no_node" if value != "none" && s.nodes > 1 => (
            Level::Note,
            Some("the firmware gives these devices no node: their interrupts and buffers land on any node, and tune irq-local cannot place them"),
        ),
        _ => (Level::Ok, None),
    }
}

/// A folder batch jobs share (`key`: `folder.ledger`, `folder.outcomes`)
/// judged from its owner and mode, or from why it could not be opened
/// (pure): [`crate::files::folder_problems`] as advice. `every_user`: every
/// user's jobs must write in it (the ledger). A missing ledger is made at
/// the first job start as it should be.
pub fn folder(key: &str, path: &std::path::Path, stat: std::io::Result<(u32, u32)>, every_user: bool) -> Finding {
    let shown = crate::text::path(path);
    let (value, level, advice) = match stat {
        Ok((uid, mode)) => {
            let problems = crate::files::folder_problems(uid, mode, every_user);
            let value = format!("{shown}: owner uid {uid}, mode {:04o}", mode & 0o7777);
            if problems.is_empty() {
                (value, Level::Ok, None)
            } else {
                (value, Level::Warn, Some(format!("{}; see docs/batch.md, Shared folders", problems.join("; "))))
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && every_user => {
            (format!("{shown}: not there yet (made root's, mode 1777, at the first job start)"), Level::Ok, None)
        }
        Err(e) => {
            (format!("{shown}: {e}"), Level::Warn, Some("the folder cannot be opened: jobs cannot use it".into()))
        }
    };
    Finding { key: key.into(), value, level, advice }
}

/// Whether any CPU offers an idle state deeper than POLL and C1.
fn deep_cstates(s: &Snapshot) -> bool {
    s.cpus.iter().flat_map(|c| c.idle_states.iter()).any(|(n, _)| !matches!(n.as_str(), "POLL" | "C1" | "C1_ACPI"))
}

/// The facts that differ between `baseline` and `current`, by key.
pub fn diff(baseline: &Facts, current: &Facts) -> Vec<Difference> {
    let keys: std::collections::BTreeSet<&String> = baseline.keys().chain(current.keys()).collect();
    keys.into_iter()
        .filter_map(|k| {
            let (b, c) = (baseline.get(k), current.get(k));
            (b != c).then(|| Difference { key: k.clone(), baseline: b.cloned(), current: c.cloned() })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tune::read::CpuFacts;

    fn snapshot() -> Snapshot {
        let cpu = |id: u32, gov: &str| CpuFacts {
            id,
            driver: Some("intel_pstate".into()),
            governor: Some(gov.into()),
            idle_states: vec![("POLL".into(), false), ("C1".into(), false), ("C6".into(), id == 3)],
        };
        Snapshot {
            kernel: Some("6.12.0".into()),
            smt_control: Some("on".into()),
            smt_active: Some("1".into()),
            cpus: vec![cpu(0, "performance"), cpu(1, "performance"), cpu(2, "powersave"), cpu(3, "powersave")],
            cpuidle_driver: Some("intel_idle".into()),
            intel_no_turbo: Some("0".into()),
            cpufreq_boost: None,
            numa_balancing: Some("1".into()),
            thp_enabled: Some("always".into()),
            thp_defrag: Some("madvise".into()),
            daemons: [("irqbalance".to_string(), vec![7]), ("numad".into(), vec![]), ("tuned".into(), vec![9])]
                .into_iter()
                .collect(),
            hugepages: vec![(0, 2048, 16), (1, 2048, 0)],
            nodes: 2,
            memory_accounting: Some(crate::topo::MemoryAccounting {
                meminfo_total_bytes: 23 << 30,
                nodes_total_bytes: 7 << 30,
            }),
            devices_without_node: vec!["0000:17:00.0 (display, class 0x030200)".into()],
        }
    }

    #[test]
    fn memory_in_no_node_and_devices_on_no_node_are_reported() {
        let r = report(&snapshot());
        let get = |k: &str| r.iter().find(|f| f.key == k).cloned().expect("finding");
        let m = get("memory.nodes");
        assert_eq!(m.value, "7 GiB in the nodes, MemTotal 23 GiB: 69.6% in no node");
        assert_eq!(m.level, Level::Warn);
        let p = get("pci.no_node");
        assert_eq!((p.value.as_str(), p.level), ("0000:17:00.0 (display, class 0x030200)", Level::Note));
        let mut one = snapshot();
        one.nodes = 1;
        one.memory_accounting =
            Some(crate::topo::MemoryAccounting { meminfo_total_bytes: 23 << 30, nodes_total_bytes: 23 << 30 });
        let r = report(&one);
        let get = |k: &str| r.iter().find(|f| f.key == k).cloned().expect("finding");
        assert_eq!((get("memory.nodes").value.as_str(), get("memory.nodes").level), ("add up to MemTotal", Level::Ok));
        // On one node every device is local: a node-less device is no news.
        assert_eq!(get("pci.no_node").level, Level::Ok);
        assert_eq!(facts(&Snapshot::default())["memory.nodes"], "unknown");
        assert_eq!(facts(&Snapshot::default())["pci.no_node"], "none");
    }

    #[test]
    fn facts_summarise_per_cpu_values() {
        let f = facts(&snapshot());
        assert_eq!(f["cpufreq.driver"], "intel_pstate");
        assert_eq!(f["cpufreq.governor"], "performance (0-1), powersave (2-3)");
        assert_eq!(f["cstates.offered"], "POLL,C1,C6");
        assert_eq!(f["cstates.disabled"], "C6 (3), none (0-2)");
        assert_eq!(f["turbo"], "on (intel_pstate/no_turbo=0)");
        assert_eq!(f["daemon.irqbalance"], "running");
        assert_eq!(f["daemon.numad"], "not running");
        assert_eq!(f["hugepages.node1.2048kB"], "0");
        assert_eq!(facts(&Snapshot::default())["cpufreq.governor"], "none");
        assert_eq!(facts(&Snapshot::default())["turbo"], "unknown (no intel_pstate/no_turbo or cpufreq/boost)");
    }

    #[test]
    fn report_levels() {
        let r = report(&snapshot());
        let level = |k: &str| r.iter().find(|f| f.key == k).map(|f| f.level);
        assert_eq!(level("cpufreq.governor"), Some(Level::Warn));
        assert_eq!(level("daemon.tuned"), Some(Level::Warn));
        assert_eq!(level("daemon.numad"), Some(Level::Ok));
        assert_eq!(level("daemon.irqbalance"), Some(Level::Note));
        assert_eq!(level("autonuma"), Some(Level::Note));
        assert_eq!(level("kernel.release"), Some(Level::Ok));
        assert!(r.iter().filter(|f| f.level != Level::Ok).all(|f| f.advice.is_some()));
    }

    #[test]
    fn diff_finds_changed_added_and_missing_facts() {
        let base = facts(&snapshot());
        let mut other = snapshot();
        other.numa_balancing = Some("0".into());
        other.hugepages.pop();
        other.hugepages.push((1, 1048576, 1));
        other.daemons.insert("irqbalance".into(), vec![1234]); // a different pid is no difference
        let d = diff(&base, &facts(&other));
        let keys: Vec<&str> = d.iter().map(|x| x.key.as_str()).collect();
        assert_eq!(keys, vec!["autonuma", "hugepages.node1.1048576kB", "hugepages.node1.2048kB"]);
        assert_eq!(d[0].baseline.as_deref(), Some("1"));
        assert_eq!(d[0].current.as_deref(), Some("0"));
        assert_eq!(d[1].baseline, None);
        assert_eq!(d[2].current, None);
        assert!(diff(&base, &base).is_empty());
    }

    #[test]
    fn baseline_round_trip() {
        let b = Baseline::new(Some("h1".into()), facts(&snapshot()));
        let back = Baseline::parse(&serde_json::to_string(&b).expect("json")).expect("parse");
        assert_eq!(back, b);
        assert!(Baseline::parse("{}").is_err());
        assert!(Baseline::parse(&serde_json::to_string(&Baseline { format: "x".into(), ..b }).expect("json"))
            .unwrap_err()
            .contains("format"));
    }
}
