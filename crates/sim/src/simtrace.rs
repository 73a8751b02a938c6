//! `numakit simulate --trace` as text: per policy a line per event (job
//! start and end, every action applied with its reason), then the work
//! rate minute by minute side by side, where one policy falls behind the
//! other.

use std::fmt::Write as _;

use numakit::daemon::{ActionKind, MemPolicy};

use crate::{TraceEvent, TraceReport};

fn action_text(kind: &ActionKind) -> String {
    match kind {
        ActionKind::Bind { cpu_nodes, mem_nodes } if mem_nodes.is_empty() => {
            format!("bind cpu {}", cpu_nodes.to_list())
        }
        ActionKind::Bind { cpu_nodes, mem_nodes } => {
            format!("bind cpu {} mem {}", cpu_nodes.to_list(), mem_nodes.to_list())
        }
        ActionKind::Migrate { from, to, pages } => format!("migrate {pages} pages {from} -> {to}"),
        ActionKind::Revert { cpu_nodes, mem_policy } => {
            let policy = match mem_policy {
                MemPolicy::Default => "default".to_string(),
                MemPolicy::Local => "local".to_string(),
                MemPolicy::Preferred(n) => format!("preferred {}", n.to_list()),
                MemPolicy::Bind(n) => format!("bind {}", n.to_list()),
                MemPolicy::Interleave(n) => format!("interleave {}", n.to_list()),
            };
            format!("revert to cpu {} mem {policy}", cpu_nodes.to_list())
        }
        ActionKind::Keep => "keep".to_string(),
    }
}

fn nodes_text(ids: &[u32]) -> String {
    let set: numakit::sets::NodeSet = ids.iter().copied().collect();
    set.to_list()
}

/// The trace as text.
pub fn text(r: &TraceReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} on {}, {:.0} s simulated: every job start and end, every action applied (with its reason), and\n\
         the work rate (nominal CPU-seconds of work per second) of every minute.",
        r.scenario, r.machine, r.horizon_s
    );
    for run in &r.runs {
        let _ = writeln!(
            out,
            "\n{}: {:.4} work/s, {} binds, {} reverts, {} pages migrated",
            run.policy, run.throughput, run.binds, run.reverts, run.pages_migrated
        );
        let _ = writeln!(out, "{:>7}  {:>5}  event", "t (s)", "pid");
        for e in &run.events {
            match e {
                TraceEvent::Start { t_s, pid, comm, threads, mem_gib, cpu_nodes, owner_pinned } => {
                    let _ = writeln!(
                        out,
                        "{t_s:>7.0}  {pid:>5}  start {comm}, {threads} thread{}, {mem_gib:.2} GiB, on nodes {}{}",
                        if *threads == 1 { "" } else { "s" },
                        nodes_text(cpu_nodes),
                        if *owner_pinned { " (placed by its owner)" } else { "" }
                    );
                }
                TraceEvent::Action { t_s, action } => {
                    let _ = writeln!(
                        out,
                        "{t_s:>7.0}  {:>5}  {}: {}",
                        action.pid,
                        action_text(&action.kind),
                        action.reason
                    );
                }
                TraceEvent::End { t_s, pid, finished, speed } => {
                    let what = if *finished { "end" } else { "still running" };
                    let _ = writeln!(out, "{t_s:>7.0}  {pid:>5}  {what}, speed {speed:.4} (1 = alone, memory local)");
                }
                TraceEvent::Rate { .. } => {}
            }
        }
    }
    let rates: Vec<Vec<(f64, f64)>> = r
        .runs
        .iter()
        .map(|run| {
            run.events
                .iter()
                .filter_map(|e| match e {
                    TraceEvent::Rate { t_s, work_per_s } => Some((*t_s, *work_per_s)),
                    _ => None,
                })
                .collect()
        })
        .collect();
    let minutes = rates.iter().map(Vec::len).max().unwrap_or(0);
    if minutes > 0 {
        let _ = write!(out, "\nwork per second, minute by minute\n{:>7}", "t (s)");
        for run in &r.runs {
            let _ = write!(out, " {:>10}", run.policy);
        }
        out.push('\n');
        for i in 0..minutes {
            let t = rates.iter().find_map(|x| x.get(i).map(|p| p.0)).unwrap_or(0.0);
            let _ = write!(out, "{t:>7.0}");
            for x in &rates {
                let _ = match x.get(i) {
                    Some((_, w)) => write!(out, " {w:>10.3}"),
                    None => write!(out, " {:>10}", "-"),
                };
            }
            out.push('\n');
        }
    }
    out
}
