//! Per-node allocation counters of `sys/devices/system/node/nodeN/numastat`
//! (`numa_hit`, `numa_miss`, `numa_foreign`, `interleave_hit`,
//! `local_node`, `other_node`: pages, counted since boot), kept in the
//! kernel's order with any line this version does not know.

use std::time::Duration;

use serde::Serialize;

use super::rate::{named_rates, Rate};
use crate::sys::{SysError, SysRoot};

/// Folder of the node directories.
pub const NODE_DIR: &str = "sys/devices/system/node";

/// The counters numastat knows, in its row order.
pub const NUMASTAT_COUNTERS: [&str; 6] =
    ["numa_hit", "numa_miss", "numa_foreign", "interleave_hit", "local_node", "other_node"];

/// One node's counters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NodeCounters {
    /// Node id.
    pub id: u32,
    /// `(name, value)` in the file's order.
    pub lines: Vec<(String, u64)>,
}

impl NodeCounters {
    /// The value of counter `name`.
    pub fn get(&self, name: &str) -> Option<u64> {
        self.lines.iter().find(|(k, _)| k == name).map(|(_, v)| *v)
    }
}

/// Parses `name value` lines (blank lines skipped). A line without a
/// value, or with a value that is not a count (negative, not a number,
/// beyond 64 bits), is an error quoting it: never dropped silently.
pub fn parse_numastat(text: &str) -> Result<Vec<(String, u64)>, String> {
    let mut out = Vec::new();
    for l in text.lines() {
        let mut f = l.split_whitespace();
        let Some(k) = f.next() else { continue };
        match (f.next().map(str::parse::<u64>), f.next()) {
            (Some(Ok(v)), None) => out.push((k.to_string(), v)),
            _ => return Err(format!("{} is not a counter and its count", crate::text::quote(l))),
        }
    }
    Ok(out)
}

/// Ids of the `nodeN` folders, sorted (empty without NUMA support).
pub fn node_ids(sys: &SysRoot) -> Result<Vec<u32>, SysError> {
    sys.numbered_entries(NODE_DIR, "node")
}

/// Reads the counters of every node. A node folder without a `numastat`
/// file is an error naming the file (numastat fails there too).
pub fn read_node_counters(sys: &SysRoot) -> Result<Vec<NodeCounters>, SysError> {
    read_counters_of(sys, &node_ids(sys)?)
}

/// Like [`read_node_counters`], for the nodes `ids` (from [`node_ids`]).
pub fn read_counters_of(sys: &SysRoot, ids: &[u32]) -> Result<Vec<NodeCounters>, SysError> {
    let mut out = Vec::new();
    for &id in ids {
        let rel = format!("{NODE_DIR}/node{id}/numastat");
        let text = sys.read(&rel)?.ok_or_else(|| sys.invalid(&rel, "missing"))?;
        let lines = parse_numastat(&text).map_err(|problem| sys.invalid(&rel, problem))?;
        out.push(NodeCounters { id, lines });
    }
    Ok(out)
}

/// One node's counter rates over an interval.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NodeRates {
    /// Node id.
    pub id: u32,
    /// `(name, rate)` in the file's order.
    pub rates: Vec<(String, Rate)>,
}

/// Rates of every node present in both samples.
pub fn node_rates(prev: &[NodeCounters], cur: &[NodeCounters], interval: Duration) -> Vec<NodeRates> {
    cur.iter()
        .filter_map(|c| {
            let p = prev.iter().find(|p| p.id == c.id)?;
            Some(NodeRates { id: c.id, rates: named_rates(&p.lines, &c.lines, interval) })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_rates() {
        let a = NodeCounters { id: 1, lines: parse_numastat("numa_hit 10\nnuma_miss 2\n\nnew_one 7\n").unwrap() };
        assert_eq!(a.lines.len(), 3);
        assert_eq!((a.get("numa_hit"), a.get("new_one"), a.get("other_node")), (Some(10), Some(7), None));
        let b = NodeCounters { id: 1, lines: parse_numastat("numa_hit 30\nnuma_miss 2\nnew_one 8\n").unwrap() };
        for bad in ["bogus", "numa_hit -5", "numa_hit x", "numa_hit 18446744073709551616", "numa_hit 1 2"] {
            assert!(parse_numastat(bad).unwrap_err().contains(&format!("{bad:?}")), "{bad}");
        }
        let r = node_rates(&[a], &[b], Duration::from_secs(4));
        assert_eq!(r[0].rates[0], ("numa_hit".to_string(), Rate { delta: 20, per_sec: 5.0 }));
    }

    #[test]
    fn live_nodes_have_the_six_counters() {
        let c = read_node_counters(&SysRoot::live()).expect("read");
        for n in &c {
            for k in NUMASTAT_COUNTERS {
                assert!(n.get(k).is_some(), "node{} {k}", n.id);
            }
        }
    }
}
