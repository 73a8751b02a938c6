//! `numakit advise`'s answer ([`place::auto::decide`](crate::place::auto::decide)
//! for one job) for people ([`text`]) and scripts ([`json`], and
//! [`refusal_json`] when no node can take the job now).

use crate::daemon::protocol::Advice;
use crate::place::auto::{AutoDecision, Refusal};

/// The nodes, the numactl options that apply them, the reason and whose
/// view of the nodes it came from, one line each.
pub fn text(d: &AutoDecision, source: &str) -> String {
    format!(
        "nodes: {}\nnumactl: numactl {}\nreason: {}\nview: {source}\n",
        d.nodes.to_list(),
        d.plan.numactl_args().join(" "),
        d.reason
    )
}

/// The advice as pretty-printed JSON ([`Advice`], the daemon's answer's
/// shape; no final newline).
pub fn json(d: &AutoDecision, source: &str) -> String {
    serde_json::to_string_pretty(&Advice::of(d, source)).unwrap_or_default()
}

/// Why no node can take the job now, as one JSON line (no final newline).
pub fn refusal_json(refusal: &Refusal, source: &str) -> String {
    serde_json::json!({"refused": refusal.to_string(), "source": source}).to_string()
}
