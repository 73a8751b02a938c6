//! `numakit pin`'s report ([`PinReport`]) for people ([`text`]) and
//! scripts ([`json`]).

use std::fmt::Write as _;

use crate::place::pin::PinReport;

/// How many threads are on which CPUs, how many failed, and each failure.
pub fn text(r: &PinReport) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "pid {}: {} thread(s) now on CPUs {}, {} failed",
        r.pid,
        r.changed.len(),
        r.cpus.to_list(),
        r.failed.len()
    );
    for f in &r.failed {
        let _ = writeln!(s, "  tid {}: {}", f.tid, f.error);
    }
    s
}

/// The report as pretty-printed JSON (no final newline).
pub fn json(r: &PinReport) -> String {
    serde_json::to_string_pretty(r).unwrap_or_default()
}
