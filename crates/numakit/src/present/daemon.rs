//! `numakit ctl status` for people: the daemon's [`Status`] in a few lines.

use std::fmt::Write as _;

use crate::daemon::protocol::Status;

/// The status as text: pid and start, why it defers, scans and interval,
/// what it did, the processes it placed, the exclusions and what it learnt.
pub fn status_text(d: &Status) -> String {
    let c = &d.counters;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "daemon pid {} since {}{}",
        d.pid,
        if d.started.is_empty() { "?" } else { &d.started },
        if d.dry_run { " (dry run)" } else { "" }
    );
    if let Some(why) = &d.deferred {
        let _ = writeln!(out, "deferred: {why}");
    }
    if let Some(why) = &d.cpus_only {
        let _ = writeln!(out, "CPUs only: {why}");
    }
    let _ = writeln!(
        out,
        "scans {} (last {:.2} ms CPU, {} processes, {} candidates), interval {} s",
        c.scans,
        c.last_scan_cpu_seconds * 1e3,
        c.processes,
        c.candidates,
        serde_json::Value::from(d.interval_s)
    );
    let _ = writeln!(
        out,
        "binds {}, migrations {} ({} pages read back), reverts {}, failures {}, exited first {}",
        c.binds_total, c.migrations_total, c.pages_migrated_total, c.reverts_total, c.failures_total, c.gone_total
    );
    for m in &d.managed {
        let _ = writeln!(
            out,
            "  pid {} ({}) on nodes {}{}",
            m.pid,
            m.comm,
            m.cpu_nodes,
            if m.judged { ", judged" } else { ", being judged" }
        );
    }
    let _ = writeln!(
        out,
        "excluded: {} {}",
        serde_json::Value::from(d.excluded.pids.clone()),
        serde_json::Value::from(d.excluded.comms.clone())
    );
    if d.run_times.runs > 0 {
        let _ = writeln!(out, "run times learnt: {} runs of {} command names", d.run_times.runs, d.run_times.commands);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::daemon::protocol::{Managed, RunTimes};

    #[test]
    fn status_text_says_what_the_daemon_learnt() {
        let mut d = Status {
            pid: 7,
            started: "2026-11-25T00:00:00Z".into(),
            interval_s: 15.0,
            managed: vec![Managed {
                pid: 42,
                comm: "reco".into(),
                cpu_nodes: "1".into(),
                judged: true,
                pending_pages: 0,
            }],
            run_times: RunTimes { commands: 2, runs: 5 },
            ..Status::default()
        };
        d.excluded.comms.push("geant4".into());
        let t = status_text(&d);
        assert!(t.starts_with("daemon pid 7 since 2026-11-25T00:00:00Z\n"), "{t}");
        assert!(t.contains("interval 15.0 s\n"), "{t}");
        assert!(t.contains("pid 42 (reco) on nodes 1, judged"), "{t}");
        assert!(t.contains("excluded: [] [\"geant4\"]\n"), "{t}");
        assert!(t.contains("run times learnt: 5 runs of 2 command names"), "{t}");
        d.run_times = RunTimes::default();
        d.deferred = Some("kernel AutoNUMA is on".into());
        let t = status_text(&d);
        assert!(!t.contains("run times"));
        assert!(t.contains("\ndeferred: kernel AutoNUMA is on\n"), "{t}");
        d.deferred = None;
        d.cpus_only = Some("kernel AutoNUMA is on".into());
        let t = status_text(&d);
        assert!(t.contains("\nCPUs only: kernel AutoNUMA is on\n") && !t.contains("deferred"), "{t}");
    }
}
