//! The knob catalogue: every NUMA-relevant kernel tunable numakit knows,
//! with its name, aliases, the files that may hold it (in the order tried),
//! what values the kernel accepts, the kernel's default and one line on what
//! it does.
//!
//! Pure data and pure functions: nothing here reads or writes the system.
//! Names follow the convention: the sysctl name for `/proc/sys`
//! knobs (`kernel.numa_balancing`), the path below `/sys` for sysfs knobs
//! (`kernel/mm/transparent_hugepage/enabled`). The NUMA balancing scan knobs
//! moved from `/proc/sys/kernel` to debugfs in Linux 5.13; they keep their
//! sysctl name and list both files.

use serde::Serialize;

/// What values a knob takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Accepts {
    /// A decimal integer from `min` to `max`.
    Range {
        /// Smallest value.
        min: u64,
        /// Largest value.
        max: u64,
    },
    /// One word of a list; the file shows all of them with the current one
    /// in brackets (`always [madvise] never`).
    Choice {
        /// The words the kernel accepts.
        choices: &'static [&'static str],
    },
    /// `true` or `false` (also taken: `1`/`0`, `yes`/`no`, `on`/`off`).
    Bool,
    /// A non-empty CPU list in the kernel's list syntax (`0-3,8`): an
    /// IRQ's `smp_affinity_list`.
    CpuList,
}

/// The largest `unsigned int` (debugfs `u32` and `kstrtouint` knobs).
const U32: u64 = u32::MAX as u64;
/// The largest `int` (`proc_dointvec` knobs).
const I32: u64 = i32::MAX as u64;

/// A knob of the catalogue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Knob {
    /// Canonical name (sysctl name or path below `/sys`).
    pub name: String,
    /// Other names accepted on the command line and in profiles.
    pub aliases: Vec<String>,
    /// Files that may hold it, relative to the root, in the order tried.
    pub paths: Vec<String>,
    /// What values the kernel accepts.
    pub accepts: Accepts,
    /// The kernel's default.
    pub default: &'static str,
    /// One line on what it does.
    pub doc: &'static str,
    /// What the kernel needs to have it (shown when it is missing).
    pub needs: &'static str,
    /// Position in the catalogue: writes and reverts go in this order.
    pub order: u32,
}

impl Knob {
    /// Checks `value` against what the kernel accepts and returns it as it
    /// will be written (`Bool` as `true`/`false`, integers without leading
    /// zeros), or why not.
    pub fn validate(&self, value: &str) -> Result<String, String> {
        let v = value.trim();
        match self.accepts {
            Accepts::Range { min, max } => {
                let n = (!v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
                    .then(|| v.parse::<u64>().ok())
                    .flatten()
                    .filter(|n| (min..=max).contains(n));
                match n {
                    Some(n) => Ok(n.to_string()),
                    None if max == U32 || max == I32 => Err(format!("must be a whole number from {min} to {max}")),
                    None => Err(format!("must be an integer from {min} to {max}")),
                }
            }
            Accepts::Choice { choices } => match choices.iter().find(|c| **c == v) {
                Some(c) => Ok(c.to_string()),
                None => Err(format!("must be one of {}", choices.join(", "))),
            },
            Accepts::Bool => match v.to_ascii_lowercase().as_str() {
                "true" | "1" | "yes" | "on" | "y" => Ok("true".into()),
                "false" | "0" | "no" | "off" | "n" => Ok("false".into()),
                _ => Err("must be true or false".into()),
            },
            Accepts::CpuList => match crate::sets::CpuSet::parse_list(v) {
                Ok(set) if !set.is_empty() => Ok(set.to_list()),
                Ok(_) => Err("must name at least one CPU".into()),
                Err(e) => Err(format!("must be a CPU list such as 0-3,8 ({e})")),
            },
        }
    }

    /// The current value from a file's text: the bracketed word of a
    /// `Choice` file, else the trimmed text.
    pub fn current_from_raw(&self, raw: &str) -> Result<String, String> {
        let raw = raw.trim();
        match self.accepts {
            Accepts::Choice { .. } => {
                if let Some(start) = raw.find('[') {
                    let rest = &raw[start + 1..];
                    return match rest.find(']') {
                        Some(end) => Ok(rest[..end].to_string()),
                        None => Err(format!("\"{raw}\" has no closing bracket")),
                    };
                }
                match raw.split_whitespace().count() {
                    1 => Ok(raw.to_string()),
                    _ => Err(format!("\"{raw}\" marks no current value")),
                }
            }
            _ if raw.is_empty() => Err("the file is empty".into()),
            _ => Ok(raw.to_string()),
        }
    }

    /// What values it takes, in words (`0-3`, `always|madvise|never`).
    pub fn accepts_text(&self) -> String {
        match self.accepts {
            Accepts::Range { min, max } => format!("{min}-{max}"),
            Accepts::Choice { choices } => choices.join("|"),
            Accepts::Bool => "true|false".into(),
            Accepts::CpuList => "CPU list".into(),
        }
    }

    /// Refusals that depend on the kernel version (`kernel` is
    /// `osrelease`'s major and minor): `kernel.numa_balancing` 2 and 3 are
    /// memory-tiering modes, new in Linux 5.18. An unknown version is not a
    /// reason to refuse (the kernel still checks, and a refusal rolls back).
    pub fn check_kernel(&self, value: &str, kernel: Option<(u32, u32)>) -> Result<(), String> {
        if self.name == NUMA_BALANCING && (value == "2" || value == "3") {
            if let Some((major, minor)) = kernel.filter(|k| *k < (5, 18)) {
                return Err(format!(
                    "modes 2 and 3 (memory tiering) need Linux 5.18 or later; this kernel is {major}.{minor}"
                ));
            }
        }
        Ok(())
    }

    /// Whether `name` is this knob's name or one of its aliases.
    pub fn is_named(&self, name: &str) -> bool {
        self.name == name || self.aliases.iter().any(|a| a == name)
    }

    /// The node of a weighted-interleave weight knob.
    pub fn weight_node(&self) -> Option<u32> {
        self.name.strip_prefix(WEIGHT_PREFIX).and_then(|n| n.strip_prefix("node")).and_then(|n| n.parse().ok())
    }
}

/// `kernel.numa_balancing`.
pub const NUMA_BALANCING: &str = "kernel.numa_balancing";
/// The minimum NUMA balancing scan period.
pub const SCAN_PERIOD_MIN: &str = "kernel.numa_balancing_scan_period_min_ms";
/// The maximum NUMA balancing scan period.
pub const SCAN_PERIOD_MAX: &str = "kernel.numa_balancing_scan_period_max_ms";
/// The weighted-interleave auto mode.
pub const WEIGHT_AUTO: &str = "kernel/mm/mempolicy/weighted_interleave/auto";
/// Weighted-interleave weights are `<prefix>node<N>`.
pub const WEIGHT_PREFIX: &str = "kernel/mm/mempolicy/weighted_interleave/";
/// THP mode.
pub const THP_ENABLED: &str = "kernel/mm/transparent_hugepage/enabled";
/// THP defrag mode.
pub const THP_DEFRAG: &str = "kernel/mm/transparent_hugepage/defrag";
/// Where debugfs is mounted, relative to the root.
pub const DEBUGFS: &str = "sys/kernel/debug";

/// A catalogue entry as written in the source.
struct Def {
    name: &'static str,
    aliases: &'static [&'static str],
    paths: &'static [&'static str],
    accepts: Accepts,
    default: &'static str,
    doc: &'static str,
    needs: &'static str,
}

const BALANCING_NEEDS: &str = "a kernel built with CONFIG_NUMA_BALANCING";
const THP_NEEDS: &str = "a kernel built with CONFIG_TRANSPARENT_HUGEPAGE";
const DBG: &str = "sys/kernel/debug/sched/numa_balancing/";

macro_rules! scan_knob {
    ($short:literal, $default:literal, $min:expr, $doc:literal) => {
        Def {
            name: concat!("kernel.numa_balancing_", $short),
            aliases: &[
                concat!("numa_balancing.", $short),
                $short,
                concat!("kernel/debug/sched/numa_balancing/", $short),
            ],
            paths: &[
                concat!("proc/sys/kernel/numa_balancing_", $short),
                concat!("sys/kernel/debug/sched/numa_balancing/", $short),
            ],
            accepts: Accepts::Range { min: $min, max: U32 },
            default: $default,
            doc: $doc,
            needs: BALANCING_NEEDS,
        }
    };
}

/// The fixed knobs, in catalogue order; the weighted-interleave node
/// weights go right before `auto` (see [`catalogue`]).
const DEFS: &[Def] = &[
    Def {
        name: NUMA_BALANCING,
        aliases: &["numa_balancing", "autonuma"],
        paths: &["proc/sys/kernel/numa_balancing"],
        accepts: Accepts::Range { min: 0, max: 3 },
        default: "1",
        doc: "automatic NUMA balancing (AutoNUMA): 0 off, 1 on, 2 memory-tiering promotion, 3 both; \
              the kernel starts with 0 on single-node machines",
        needs: BALANCING_NEEDS,
    },
    scan_knob!("scan_delay_ms", "1000", 0, "delay before a new task's memory is first scanned"),
    scan_knob!("scan_period_min_ms", "1000", 0, "shortest time to scan a task's whole address space"),
    scan_knob!("scan_period_max_ms", "60000", 0, "longest time to scan a task's whole address space"),
    scan_knob!("scan_size_mb", "256", 1, "memory scanned per scan step, MiB"),
    Def {
        name: "kernel.numa_balancing_hot_threshold_ms",
        aliases: &[
            "numa_balancing.hot_threshold_ms",
            "hot_threshold_ms",
            "kernel/debug/sched/numa_balancing/hot_threshold_ms",
        ],
        paths: &[
            "proc/sys/kernel/numa_balancing_hot_threshold_ms",
            "sys/kernel/debug/sched/numa_balancing/hot_threshold_ms",
        ],
        accepts: Accepts::Range { min: 0, max: U32 },
        default: "1000",
        doc: "memory tiering: a slow-tier page faulting again within this time is hot and promoted",
        needs: "Linux 5.18+ with CONFIG_NUMA_BALANCING",
    },
    Def {
        name: "kernel.numa_balancing_promote_rate_limit_MBps",
        aliases: &["promote_rate_limit_MBps", "promote_rate_limit", "numa_balancing.promote_rate_limit_MBps"],
        paths: &["proc/sys/kernel/numa_balancing_promote_rate_limit_MBps"],
        accepts: Accepts::Range { min: 0, max: I32 },
        default: "65536",
        doc: "memory tiering: most MB/s promoted to the fast tier",
        needs: "Linux 6.1+ with CONFIG_NUMA_BALANCING",
    },
    Def {
        name: "vm.zone_reclaim_mode",
        aliases: &["zone_reclaim_mode"],
        paths: &["proc/sys/vm/zone_reclaim_mode"],
        accepts: Accepts::Range { min: 0, max: 7 },
        default: "0",
        doc: "reclaim on the local node before allocating remotely: bitmask 1 reclaim, 2 write dirty pages, 4 swap",
        needs: "a kernel built with CONFIG_NUMA",
    },
    Def {
        name: "vm.numa_stat",
        aliases: &["numa_stat"],
        paths: &["proc/sys/vm/numa_stat"],
        accepts: Accepts::Range { min: 0, max: 1 },
        default: "1",
        doc: "keep the NUMA allocation counters (numa_hit, numa_miss, ...); 0 saves a little allocation cost",
        needs: "Linux 4.16+ with CONFIG_NUMA",
    },
    Def {
        name: THP_ENABLED,
        aliases: &["thp", "thp.enabled", "transparent_hugepage/enabled", "transparent_hugepage.enabled"],
        paths: &["sys/kernel/mm/transparent_hugepage/enabled"],
        accepts: Accepts::Choice { choices: &["always", "madvise", "never"] },
        default: "always",
        doc: "transparent huge pages: for every mapping, only madvise(MADV_HUGEPAGE) ones, or never \
              (the default is the kernel's build choice)",
        needs: THP_NEEDS,
    },
    Def {
        name: THP_DEFRAG,
        aliases: &["thp.defrag", "transparent_hugepage/defrag", "transparent_hugepage.defrag"],
        paths: &["sys/kernel/mm/transparent_hugepage/defrag"],
        accepts: Accepts::Choice { choices: &["always", "defer", "defer+madvise", "madvise", "never"] },
        default: "madvise",
        doc: "how hard a THP page fault compacts memory: stall (always), wake kcompactd (defer), or only for madvise",
        needs: THP_NEEDS,
    },
    Def {
        name: "kernel/mm/transparent_hugepage/khugepaged/scan_sleep_millisecs",
        aliases: &["khugepaged.scan_sleep_millisecs", "khugepaged/scan_sleep_millisecs", "scan_sleep_millisecs"],
        paths: &["sys/kernel/mm/transparent_hugepage/khugepaged/scan_sleep_millisecs"],
        accepts: Accepts::Range { min: 0, max: U32 },
        default: "10000",
        doc: "khugepaged's pause between scans, ms (shorter: pages collapse into huge pages sooner)",
        needs: THP_NEEDS,
    },
    Def {
        name: "kernel/mm/transparent_hugepage/khugepaged/alloc_sleep_millisecs",
        aliases: &["khugepaged.alloc_sleep_millisecs", "khugepaged/alloc_sleep_millisecs", "alloc_sleep_millisecs"],
        paths: &["sys/kernel/mm/transparent_hugepage/khugepaged/alloc_sleep_millisecs"],
        accepts: Accepts::Range { min: 0, max: U32 },
        default: "60000",
        doc: "khugepaged's pause after a failed huge page allocation, ms",
        needs: THP_NEEDS,
    },
    Def {
        name: "kernel/mm/transparent_hugepage/khugepaged/pages_to_scan",
        aliases: &["khugepaged.pages_to_scan", "khugepaged/pages_to_scan", "pages_to_scan"],
        paths: &["sys/kernel/mm/transparent_hugepage/khugepaged/pages_to_scan"],
        accepts: Accepts::Range { min: 1, max: U32 },
        default: "4096",
        doc: "pages khugepaged scans per wake-up (default: 8 huge pages' worth)",
        needs: THP_NEEDS,
    },
    Def {
        name: "kernel/mm/transparent_hugepage/khugepaged/defrag",
        aliases: &["khugepaged.defrag", "khugepaged/defrag"],
        paths: &["sys/kernel/mm/transparent_hugepage/khugepaged/defrag"],
        accepts: Accepts::Range { min: 0, max: 1 },
        default: "1",
        doc: "whether khugepaged may compact memory to collapse huge pages",
        needs: THP_NEEDS,
    },
    Def {
        name: WEIGHT_AUTO,
        aliases: &["wi.auto", "weighted_interleave/auto", "weighted_interleave.auto"],
        // Linux 6.18 names the file `__auto_type` (the kernel's new `auto`
        // macro leaked into the attribute name).
        paths: &[
            "sys/kernel/mm/mempolicy/weighted_interleave/auto",
            "sys/kernel/mm/mempolicy/weighted_interleave/__auto_type",
        ],
        accepts: Accepts::Bool,
        default: "true",
        doc: "weighted interleave: weights computed from HMAT/CDAT bandwidth (true) or set by hand (false; \
              writing a node weight switches to false)",
        needs: "Linux 6.16+",
    },
    Def {
        name: "kernel/mm/numa/demotion_enabled",
        aliases: &["demotion_enabled", "demotion", "numa.demotion_enabled"],
        paths: &["sys/kernel/mm/numa/demotion_enabled"],
        accepts: Accepts::Bool,
        default: "false",
        doc: "memory tiering: reclaim demotes cold pages to a slower node instead of dropping them",
        needs: "Linux 5.15+ with CONFIG_MIGRATION",
    },
];

/// Where the node-weight knobs sit in [`catalogue`] order: right before
/// `auto`, so a revert writes the weights first and `auto` last (writing a
/// weight turns `auto` off; turning it on recomputes the weights).
fn weight_order() -> u32 {
    let auto = DEFS.iter().position(|d| d.name == WEIGHT_AUTO).unwrap_or(DEFS.len());
    (auto as u32) * 1000 - 500
}

fn from_def(i: usize, d: &Def) -> Knob {
    Knob {
        name: d.name.to_string(),
        aliases: d.aliases.iter().map(|a| a.to_string()).collect(),
        paths: d.paths.iter().map(|p| p.to_string()).collect(),
        accepts: d.accepts,
        default: d.default,
        doc: d.doc,
        needs: d.needs,
        order: i as u32 * 1000,
    }
}

/// The weighted-interleave weight of `node`
/// (`kernel/mm/mempolicy/weighted_interleave/nodeN`, alias `wi.nodeN`).
pub fn weight(node: u32) -> Knob {
    Knob {
        name: format!("{WEIGHT_PREFIX}node{node}"),
        aliases: vec![format!("wi.node{node}"), format!("weighted_interleave/node{node}")],
        paths: vec![format!("sys/{WEIGHT_PREFIX}node{node}")],
        accepts: Accepts::Range { min: 1, max: 255 },
        default: "1",
        doc: "weighted interleave: pages placed on this node per round (MPOL_WEIGHTED_INTERLEAVE)",
        needs: "Linux 6.9+, and a node with memory",
        order: weight_order() + node.min(499),
    }
}

/// IRQ affinities are `irq/<N>/smp_affinity_list` (the path below `/proc`).
pub const IRQ_PREFIX: &str = "irq/";
const IRQ_SUFFIX: &str = "/smp_affinity_list";

/// The affinity of IRQ `irq` (`irq/N/smp_affinity_list`, also its full
/// path `/proc/irq/N/smp_affinity_list`). Not in the catalogue (`tune show`
/// does not list every IRQ); `tune irq-local` writes these, and `set`
/// takes them by name. They come after every catalogue knob, by number.
pub fn irq_affinity(irq: u32) -> Knob {
    Knob {
        name: format!("{IRQ_PREFIX}{irq}{IRQ_SUFFIX}"),
        aliases: vec![],
        paths: vec![format!("proc/{IRQ_PREFIX}{irq}{IRQ_SUFFIX}")],
        accepts: Accepts::CpuList,
        default: "all CPUs (/proc/irq/default_smp_affinity)",
        doc: "the CPUs this interrupt may be delivered to",
        needs: "an IRQ of that number (/proc/irq/N)",
        order: 1_000_000u32.saturating_add(irq),
    }
}

/// The IRQ of an IRQ affinity knob's canonical name.
pub fn irq_of(name: &str) -> Option<u32> {
    let digits = name.strip_prefix(IRQ_PREFIX)?.strip_suffix(IRQ_SUFFIX)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) || (digits.len() > 1 && digits.starts_with('0'))
    {
        return None;
    }
    digits.parse().ok()
}

/// The catalogue, with the weights of `weight_nodes` (the nodes the
/// kernel lists in `weighted_interleave/`), in catalogue order.
pub fn catalogue(weight_nodes: &[u32]) -> Vec<Knob> {
    let mut all: Vec<Knob> = DEFS.iter().enumerate().map(|(i, d)| from_def(i, d)).collect();
    all.extend(weight_nodes.iter().map(|&n| weight(n)));
    all.sort_by_key(|k| (k.order, k.weight_node()));
    all
}

/// The knob called `name`: its canonical name, an alias, a sysctl name
/// written with slashes (`kernel/numa_balancing`), a full path
/// (`/proc/sys/vm/zone_reclaim_mode`, `/sys/kernel/mm/...`), or a
/// weighted-interleave weight (`wi.node1`, `.../weighted_interleave/node1`).
pub fn lookup(name: &str) -> Option<Knob> {
    let name = name.trim();
    let stripped = name.trim_start_matches('/');
    if let Some(n) = irq_of(name).or_else(|| stripped.strip_prefix("proc/").and_then(irq_of)) {
        return Some(irq_affinity(n));
    }
    let mut candidates = vec![name.to_string()];
    if let Some(rest) = stripped.strip_prefix("proc/sys/") {
        candidates.push(rest.replace('/', "."));
    } else if let Some(rest) = stripped.strip_prefix("sys/") {
        candidates.push(rest.to_string());
    } else {
        candidates.push(stripped.replace('/', "."));
    }
    for c in &candidates {
        if let Some((i, d)) = DEFS.iter().enumerate().find(|(_, d)| d.name == c || d.aliases.contains(&c.as_str())) {
            return Some(from_def(i, d));
        }
        if let Some(n) = parse_weight_name(c) {
            return Some(weight(n));
        }
    }
    None
}

fn parse_weight_name(name: &str) -> Option<u32> {
    let rest = name
        .strip_prefix(WEIGHT_PREFIX)
        .or_else(|| name.strip_prefix("weighted_interleave/"))
        .or_else(|| name.strip_prefix("weighted_interleave."))
        .or_else(|| name.strip_prefix("wi."))?;
    let digits = rest.strip_prefix("node")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) || (digits.len() > 1 && digits.starts_with('0'))
    {
        return None;
    }
    digits.parse().ok()
}

/// Whether `name` (canonical) is a weighted-interleave node weight (not `auto`).
pub fn is_weight(name: &str) -> bool {
    name.strip_prefix(WEIGHT_PREFIX).is_some_and(|rest| parse_weight_name(&format!("wi.{rest}")).is_some())
}

/// Whether `rel` (a path relative to the root) is on debugfs.
pub fn on_debugfs(rel: &str) -> bool {
    rel.starts_with(DBG) || rel.starts_with("sys/kernel/debug/")
}

#[cfg(test)]
mod tests;
