//! Repair at start: every placement of the saved history is checked
//! against every thread of its process. A bind a killed daemon left half
//! done is finished; one that never started is forgotten; a process that
//! exited is dropped.

use super::Service;
use crate::daemon::action::{Action, ActionKind, Why};
use crate::daemon::apply::Outcome;
use crate::units::unix_now;

impl Service {
    /// Checks every placement of the history against every thread (see
    /// the module documentation).
    pub(super) fn repair(&mut self) {
        let now = unix_now();
        let h = &self.state.history;
        let mut pids: Vec<i32> = h.observed.procs.keys().chain(h.committed.procs.keys()).copied().collect();
        pids.sort_unstable();
        pids.dedup();
        for pid in pids {
            if !self.sys.exists(format!("proc/{pid}")) {
                self.state.history.forget(pid);
                self.state.originals.remove(&pid);
                continue;
            }
            let Some(rec) = self.state.history.committed.procs.get(&pid) else { continue };
            let Some(pl) = rec.placement.clone() else { continue };
            let target = self.node_cpus.cpus_of(&pl.cpu_nodes);
            let cg = self.state.originals.get(&pid).and_then(|o| o.cgroup.clone());
            let (at, other) = self.applier().threads_bound(pid, &target);
            if other == 0 {
                continue;
            }
            let comm = rec.comm.clone();
            let action = Action {
                pid,
                kind: ActionKind::Bind { cpu_nodes: pl.cpu_nodes.clone(), mem_nodes: pl.mem_nodes.clone() },
                reason: Why::Pending { left_pages: 0 },
                expected_gain: pl.expected_gain,
            };
            let (outcome, note) = if at > 0 || cg.is_some() {
                let o = self.applier().apply(&action, self.state.originals.get(&pid));
                (o, format!("repair: {at} of {} threads were bound when the daemon stopped; bind finished", at + other))
            } else {
                // Nothing of the bind happened: forget it, decide afresh.
                if let Some(r) = self.state.history.committed.procs.get_mut(&pid) {
                    r.placement = None;
                }
                (
                    Outcome::NotDone { note: "the bind had not started".into() },
                    "repair: bind never started; forgotten".into(),
                )
            };
            self.counters.repairs_total += 1;
            self.log_line(now, &comm, &action, &outcome, None, Some(note));
        }
        let live: Vec<i32> = self.state.originals.keys().copied().collect();
        for pid in live {
            if !self.state.history.knows(pid) {
                self.state.originals.remove(&pid);
            }
        }
    }
}
