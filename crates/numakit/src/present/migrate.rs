//! `numakit migrate`'s report ([`MigrateReport`]) for people ([`text`])
//! and scripts ([`json`]: the report's fields, pretty-printed).

use std::fmt::Write as _;

use crate::place::migrate::MigrateReport;
use crate::sets::NodeSet;
use crate::units::human_bytes;

/// Where pages come from, for people: `from node(s) 1-2`, or `from no
/// other node` when the target is the only node with memory.
pub fn sources(from: &NodeSet) -> String {
    if from.is_empty() {
        "from no other node".into()
    } else {
        format!("from node(s) {}", from.to_list())
    }
}

/// The report as text: what moved (or would), the pages the kernel did not
/// move and why, and memory per node before and after.
pub fn text(r: &MigrateReport) -> String {
    let mut s = String::new();
    let verb = if r.dry_run { "would move" } else { "moved" };
    let _ = writeln!(
        s,
        "pid {} ({}): {} {} {} to node(s) {}; {} free on the target",
        r.pid,
        r.method.name(),
        verb,
        human_bytes(r.bytes_to_move),
        sources(&r.from),
        r.to.to_list(),
        human_bytes(r.target_free_bytes)
    );
    if !r.dry_run {
        let _ = writeln!(
            s,
            "pages moved: {} ({} left the source nodes), pages not moved: {}",
            r.pages_moved,
            human_bytes(r.bytes_moved),
            r.pages_failed
        );
        for (why, n) in &r.failures {
            let _ = writeln!(s, "  {n} page(s): {why}");
        }
    }
    let _ = writeln!(s, "memory per node before -> after (numa_maps):");
    let nodes: std::collections::BTreeSet<u32> = r.before.keys().chain(r.after.keys()).copied().collect();
    for n in nodes {
        let _ = writeln!(
            s,
            "  node {n}: {} -> {}",
            human_bytes(r.before.get(&n).copied().unwrap_or(0)),
            human_bytes(r.after.get(&n).copied().unwrap_or(0))
        );
    }
    s
}

/// The report as pretty-printed JSON (no final newline).
pub fn json(r: &MigrateReport) -> String {
    serde_json::to_string_pretty(r).unwrap_or_default()
}
