//! The cgroup's own NUMA files, parsed: `memory.numa_stat` (what the
//! kernel charged on each node) and the NUMA counters of `memory.stat`.

use serde::Serialize;

use super::CgroupDir;
use crate::sys::{SysError, SysRoot};
use crate::text::quote;

/// The `memory.stat` counters a report always names, in this order: a
/// kernel without one gives `None`.
pub const COUNTERS: [&str; 8] = [
    "numa_pages_migrated",
    "numa_pte_updates",
    "numa_hint_faults",
    "pgpromote_success",
    "pgdemote_kswapd",
    "pgdemote_direct",
    "pgdemote_khugepaged",
    "pgdemote_proactive",
];

/// Node counters the kernel keeps per node and system-wide but not per
/// cgroup (no cgroup file has them): a report names them as unknown.
pub const NOT_PER_CGROUP: [&str; 4] = ["numa_hit", "numa_miss", "other_node", "numa_hint_faults_local"];

/// Whether a `memory.stat` key is a NUMA counter kept in
/// [`CgroupCounters`].
pub fn is_kept(name: &str) -> bool {
    name.starts_with("numa_") || name.starts_with("pgpromote_") || name.starts_with("pgdemote_")
}

/// One line of `memory.numa_stat`: a memory type and its bytes per node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NumaStatLine {
    /// The type (`anon`, `file`, `shmem`, …; v1: `total`, `hierarchical_anon`, …).
    pub key: String,
    /// `(node, bytes)`, sorted by node.
    pub nodes: Vec<(u32, u64)>,
}

/// A cgroup's `memory.numa_stat`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct NumaStat {
    /// Its lines in the file's order.
    pub lines: Vec<NumaStatLine>,
}

impl NumaStat {
    /// Bytes per node of a type.
    pub fn get(&self, key: &str) -> Option<&[(u32, u64)]> {
        self.lines.iter().find(|l| l.key == key).map(|l| l.nodes.as_slice())
    }

    /// Bytes of a type on a node (`None`: the type or node is not in the file).
    pub fn bytes(&self, key: &str, node: u32) -> Option<u64> {
        self.get(key)?.iter().find(|(n, _)| *n == node).map(|(_, b)| *b)
    }

    /// The anonymous memory per node: v2's `anon`, v1's `hierarchical_anon`
    /// (the cgroup and its descendants, as v2 counts).
    pub fn anon(&self) -> Option<&[(u32, u64)]> {
        self.get("hierarchical_anon").or_else(|| self.get("anon"))
    }

    /// The page cache per node: v2's `file`, v1's `hierarchical_file`.
    pub fn file(&self) -> Option<&[(u32, u64)]> {
        self.get("hierarchical_file").or_else(|| self.get("file"))
    }
}

/// Parses `memory.numa_stat`. cgroup v2 writes `type N0=<bytes> N1=…`; a
/// v1 memory hierarchy writes `type=<pages> N0=<pages> …`, whose pages are
/// counted at `page_bytes`. Blank lines are skipped; anything else
/// (a token not `N<node>=<number>`, a number beyond 64 bits) is an error
/// quoting the line.
pub fn parse_numa_stat(text: &str, page_bytes: u64) -> Result<NumaStat, String> {
    let mut lines = Vec::new();
    for line in text.lines() {
        let mut tokens = line.split_whitespace();
        let Some(first) = tokens.next() else { continue };
        let bad = |what: &str| format!("{}: {what}", quote(line));
        let (key, unit) = match first.split_once('=') {
            // v1: the line's own total first, in pages.
            Some((k, v)) if v.parse::<u64>().is_ok() => (k, page_bytes),
            Some(_) => return Err(bad("not a type and its bytes per node")),
            None => (first, 1),
        };
        let mut nodes: Vec<(u32, u64)> = Vec::new();
        for tok in tokens {
            let parsed = tok
                .strip_prefix('N')
                .and_then(|t| t.split_once('='))
                .and_then(|(n, v)| Some((n.parse::<u32>().ok()?, v.parse::<u64>().ok()?)));
            let Some((node, v)) = parsed else { return Err(bad(&format!("{} is not N<node>=<number>", quote(tok)))) };
            let bytes = v.checked_mul(unit).ok_or_else(|| bad("does not fit 64 bits in bytes"))?;
            match nodes.binary_search_by_key(&node, |(n, _)| *n) {
                Ok(_) => return Err(bad(&format!("node {node} twice"))),
                Err(i) => nodes.insert(i, (node, bytes)),
            }
        }
        lines.push(NumaStatLine { key: key.to_string(), nodes });
    }
    Ok(NumaStat { lines })
}

/// A cgroup's NUMA event counters from `memory.stat` ([`is_kept`] keys).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CgroupCounters {
    /// Whether the cgroup has a `memory.stat` (the memory controller).
    pub memory_stat: bool,
    /// `(name, value)` in the file's order.
    pub lines: Vec<(String, u64)>,
}

impl CgroupCounters {
    /// Reads `memory.stat` of a cgroup (on v1, in the memory hierarchy):
    /// nothing else, so that a snapshot at step start costs one small read.
    pub fn read(sys: &SysRoot, dir: &CgroupDir) -> Result<Self, SysError> {
        let Some(folder) = crate::procs::cgroup::controller_folder(sys, &dir.folder, "memory")? else {
            return Ok(Self::default());
        };
        let rel = format!("{folder}/memory.stat");
        match sys.read(&rel)? {
            None => Ok(Self::default()),
            Some(t) => parse_memory_stat(&t).map_err(|p| sys.invalid(&rel, p)),
        }
    }

    /// The value of a counter (`None`: this kernel does not count it for a
    /// cgroup).
    pub fn get(&self, name: &str) -> Option<u64> {
        self.lines.iter().find(|(k, _)| k == name).map(|(_, v)| *v)
    }

    /// The counters a report names: [`COUNTERS`] in order, each with its
    /// value or `None`, then any other kept counter the file has.
    pub fn named(&self) -> Vec<(String, Option<u64>)> {
        let mut out: Vec<(String, Option<u64>)> = COUNTERS.iter().map(|n| (n.to_string(), self.get(n))).collect();
        out.extend(
            self.lines.iter().filter(|(k, _)| !COUNTERS.contains(&k.as_str())).map(|(k, v)| (k.clone(), Some(*v))),
        );
        out
    }

    /// What each counter grew by from `start` to `self` (the end), for the
    /// counters both have. A counter that went backwards (the cgroup was
    /// removed and made again between the two) is left out rather than
    /// given a made-up value.
    pub fn delta(&self, start: &CgroupCounters) -> Vec<(String, u64)> {
        self.lines
            .iter()
            .filter_map(|(k, end)| {
                let s = start.get(k)?;
                Some((k.clone(), end.checked_sub(s)?))
            })
            .collect()
    }
}

/// Parses `memory.stat` (`key value` lines), keeping the [`is_kept`]
/// counters. A kept key whose value is not a number is an error quoting
/// the line; other lines are not looked at.
pub fn parse_memory_stat(text: &str) -> Result<CgroupCounters, String> {
    let mut lines = Vec::new();
    for line in text.lines() {
        let mut it = line.split_whitespace();
        let (Some(k), v) = (it.next(), it.next()) else { continue };
        if !is_kept(k) {
            continue;
        }
        let v = v.and_then(|v| v.parse::<u64>().ok()).filter(|_| it.next().is_none());
        let Some(v) = v else { return Err(format!("{}: not a counter and its value", quote(line))) };
        lines.push((k.to_string(), v));
    }
    Ok(CgroupCounters { memory_stat: true, lines })
}
