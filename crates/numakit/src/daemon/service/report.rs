//! What the daemon tells: one [`DecisionRecord`] per decision (the log
//! file, and the last 1,000 kept for `ctl decisions`), and the [`Status`]
//! (`ctl status`, and `status.json` in the state folder after every scan
//! and change).

use std::io::Write;

use super::{rfc3339, Service};
use crate::daemon::action::Action;
use crate::daemon::apply::Outcome;
use crate::daemon::protocol::{DecisionRecord, Managed, Names, ProgressMeasure, RunTimes, Status};
use crate::daemon::settings::Coexistence;
use crate::units::unix_now;

/// Decisions kept in memory for `ctl decisions`.
pub const RECENT_DECISIONS: usize = 1000;

impl Service {
    /// Logs one decision (the log file, and the recent list).
    pub(super) fn log_line(
        &mut self,
        t: f64,
        comm: &str,
        a: &Action,
        o: &Outcome,
        locality: Option<f64>,
        note: Option<String>,
    ) {
        let rec = DecisionRecord {
            ts: rfc3339(t),
            t,
            scan: self.counters.scans + 1,
            comm: comm.to_string(),
            action: a.clone(),
            reason_text: note.unwrap_or_else(|| a.reason.to_string()),
            outcome: o.clone(),
            locality,
            dry_run: self.dry_run,
        };
        if let Some(f) = self.log.as_mut() {
            let _ = writeln!(f, "{}", serde_json::to_string(&rec).unwrap_or_default());
        }
        self.recent.push_back(rec);
        while self.recent.len() > RECENT_DECISIONS {
            self.recent.pop_front();
        }
    }

    /// The status (also written to `status.json`).
    pub fn status(&self) -> Status {
        let h = &self.state.history;
        let ctl = &self.state.ctl;
        let (by, why) = self.collector.progress_measure();
        Status {
            pid: std::process::id(),
            started: rfc3339(self.started),
            config: self.config_path.as_ref().map(|p| p.display().to_string()),
            dry_run: self.dry_run,
            deferred: match &self.coexist {
                Coexistence::Deferred(why) => Some(why.clone()),
                _ => None,
            },
            cpus_only: match &self.coexist {
                Coexistence::CpusOnly(why) => Some(why.clone()),
                _ => None,
            },
            interval_s: self.interval_s,
            counters: self.counters.clone(),
            managed: h
                .committed
                .procs
                .iter()
                .filter_map(|(pid, r)| {
                    r.placement.as_ref().map(|p| Managed {
                        pid: *pid,
                        comm: r.comm.clone(),
                        cpu_nodes: p.cpu_nodes.to_list(),
                        judged: p.judged,
                        pending_pages: p.pending.iter().map(|x| x.2).sum(),
                    })
                })
                .collect(),
            excluded: Names {
                pids: ctl.exclude_pids.clone(),
                comms: ctl.exclude_comms.clone(),
                cgroups: ctl.exclude_cgroups.clone(),
            },
            included: Names {
                pids: ctl.include_pids.clone(),
                comms: ctl.include_comms.clone(),
                cgroups: ctl.include_cgroups.clone(),
            },
            left_alone_comms: h
                .committed
                .comms
                .iter()
                .filter(|(_, c)| c.left_alone_until_s.is_some_and(|u| u > unix_now()))
                .map(|(n, _)| n.clone())
                .collect(),
            reverts_ever: h.committed.reverts,
            run_times: RunTimes {
                commands: h.observed.comms.values().filter(|c| !c.runs.is_empty()).count(),
                runs: h.observed.comms.values().map(|c| c.runs.len()).sum(),
            },
            globals_changed: self.state.globals.clone(),
            progress_measure: ProgressMeasure { by: by.to_string(), why: why.map(str::to_string) },
        }
    }

    /// Writes `status.json` (keys in alphabetical order, as a JSON object
    /// read back and written again would have them).
    pub(super) fn write_status(&self) {
        let path = self.settings.state_dir.join("status.json");
        let text =
            serde_json::to_value(self.status()).and_then(|v| serde_json::to_string_pretty(&v)).unwrap_or_default();
        if let Err(e) = crate::files::write_atomic(&path, text.as_bytes()) {
            eprintln!("numakit daemon: cannot write {}: {e}", path.display());
        }
    }
}
