//! One scan: collect → decide → write ahead → apply and read back →
//! correct the history by what really happened → log every decision →
//! status file.

use std::collections::BTreeMap;

use super::{locality_of, reason_name, thread_cpu_seconds, Service, ServiceError, STATE_SAVE_MAX_AGE_S};
use crate::daemon::action::{Action, ActionKind};
use crate::daemon::apply::Outcome;
use crate::daemon::collect::{ManagedCgroups, ScanCounts};
use crate::daemon::decide::decide;
use crate::daemon::settings::{cgroup_under, Coexistence};
use crate::daemon::History;
use crate::units::unix_now;

/// What one scan did.
#[derive(Debug, Clone, Default)]
pub struct ScanReport {
    /// Actions and their outcomes.
    pub results: Vec<(Action, Outcome)>,
    /// Read counts.
    pub counts: ScanCounts,
    /// Whether anything was changed.
    pub changed: bool,
}

impl Service {
    /// One scan. `mono_s` is a monotonic clock, read just before the call
    /// (the scan's readings are stamped from it).
    pub fn scan(&mut self, mono_s: f64) -> Result<ScanReport, ServiceError> {
        // When `mono_s` was read (the collector stamps its readings from it).
        let t0 = std::time::Instant::now();
        let cpu0 = thread_cpu_seconds();
        let wall = unix_now();
        self.forget_ended_targets()?;
        self.coexist = self.coexistence();
        if let Some(why) = self.observe_only.as_ref().and_then(|gate| gate(wall)) {
            self.coexist = Coexistence::Deferred(why);
        }
        let managed: ManagedCgroups = self
            .state
            .originals
            .iter()
            .filter(|(_, o)| o.cgroup.is_some())
            .map(|(p, o)| (*p, o.cgroup_nodes.clone()))
            .collect();
        let ctl = self.state.ctl.clone();
        let settings = self.settings.clone();
        // Never the daemon itself (its RSS and CPU use can pass low
        // thresholds), whatever the lists say.
        let me = std::process::id() as i32;
        let include = move |pid: i32, comm: &str, cgroup: &str, uid: u32| {
            pid != me
                && (settings.included(pid, comm, cgroup, uid)
                    || ctl.include_pids.contains(&pid)
                    || ctl.include_comms.iter().any(|c| c == comm)
                    || ctl.include_cgroups.iter().any(|c| cgroup_under(cgroup, c)))
        };
        let first = !self.collector.has_baseline();
        let (snap, counts) = self
            .collector
            .scan(&self.sys, &self.node_cpus, &self.settings, &include, &self.state.history, &managed, mono_s, wall, t0)
            .map_err(|x| ServiceError(x.to_string()))?;
        let mut cfg = self.effective_config();
        // Processes in an excluded cgroup (a `none` batch job's) are seen,
        // their load counted, and never touched, as excluded pids are.
        let ex = &self.state.ctl.exclude_cgroups;
        cfg.exclude_pids
            .extend(snap.procs.iter().filter(|p| ex.iter().any(|c| cgroup_under(&p.cgroup, c))).map(|p| p.pid));
        if first {
            // The first scan after a start has no window: every CPU use is
            // unknown (0), and judging or moving on it would be wrong (a
            // restarted daemon would see every placed process stalled). It
            // is the baseline; decisions start with the second scan.
            self.counters.scans += 1;
            self.counters.processes = counts.processes;
            self.last = Some(snap);
            self.write_status();
            return Ok(ScanReport { counts, ..Default::default() });
        }
        let decision = decide(&self.machine, &snap, &cfg, &self.state.history);
        let comms: BTreeMap<i32, (String, f64, Option<f64>)> =
            snap.procs.iter().map(|p| (p.pid, (p.comm.clone(), snap.time_s - p.age_s, locality_of(p)))).collect();

        // Write ahead: originals for processes about to change, and the
        // new history, before anything is applied.
        let acting = !self.dry_run && !matches!(self.coexist, Coexistence::Deferred(_));
        if acting {
            for a in decision.changes() {
                if !self.state.originals.contains_key(&a.pid) {
                    let start = comms.get(&a.pid).map_or(wall, |c| c.1);
                    if let Some(o) = self.applier().original(a.pid, start) {
                        self.state.originals.insert(a.pid, o);
                    }
                }
            }
            self.state.history = decision.history.clone();
            if decision.changes().next().is_some() {
                self.save()?;
            }
        } else {
            // Nothing is applied: the new observations, the old commitments.
            self.state.history =
                History { observed: decision.history.observed.clone(), ..std::mem::take(&mut self.state.history) };
        }

        let mut report = ScanReport { counts, ..Default::default() };
        let mut failed_bind: Vec<i32> = Vec::new();
        for a in &decision.actions {
            let outcome = if !a.changes() {
                Outcome::NotDone { note: a.reason.to_string() }
            } else if self.dry_run {
                Outcome::NotDone { note: "dry run".into() }
            } else if let Some(note) = self.coexist.refuses(&a.kind) {
                // Placing CPUs only: the kernel moves the pages after the
                // bound CPUs, and the history must not count them as
                // numakit's.
                if let (true, ActionKind::Migrate { pages, .. }) = (acting, &a.kind) {
                    let h = &mut self.state.history.committed;
                    h.pages_migrated = h.pages_migrated.saturating_sub(*pages);
                }
                Outcome::NotDone { note }
            } else if failed_bind.contains(&a.pid) {
                Outcome::NotDone { note: "its bind failed in this scan".into() }
            } else {
                let o = self.applier().apply(a, self.state.originals.get(&a.pid));
                self.account(a, &o, &mut failed_bind);
                o
            };
            if matches!(outcome, Outcome::Applied { .. }) {
                report.changed = true;
            }
            *self.counters.decisions_total.entry(reason_name(a)).or_default() += 1;
            let (comm, _, loc) = comms.get(&a.pid).cloned().unwrap_or_default();
            self.log_line(wall, &comm, a, &outcome, loc, None);
            report.results.push((a.clone(), outcome));
        }
        // Records of processes gone.
        self.state.originals.retain(|pid, _| self.state.history.knows(*pid));
        // After a change at once; otherwise the observations (rates,
        // drift, judgements under way) at most STATE_SAVE_MAX_AGE_S late.
        let attempted = decision.changes().next().is_some();
        if attempted || self.saved_mono_s.is_none_or(|t| mono_s - t >= STATE_SAVE_MAX_AGE_S) {
            self.save()?;
            self.saved_mono_s = Some(mono_s);
        }

        self.interval_s = if report.changed {
            self.settings.interval_min_s
        } else {
            (self.interval_s * 2.0).min(self.settings.interval_max_s)
        };
        let c = &mut self.counters;
        c.scans += 1;
        c.processes = counts.processes;
        c.candidates = counts.detailed;
        c.unreadable = counts.unreadable;
        c.numa_maps_read = counts.numa_maps_read;
        c.last_scan_cpu_seconds = thread_cpu_seconds() - cpu0;
        c.last_scan_wall_seconds = t0.elapsed().as_secs_f64();
        c.scan_cpu_seconds_total += c.last_scan_cpu_seconds;
        c.scan_wall_seconds_total += c.last_scan_wall_seconds;
        c.recent_scan_cpu_ms.push_back(c.last_scan_cpu_seconds * 1e3);
        while c.recent_scan_cpu_ms.len() > 100 {
            c.recent_scan_cpu_ms.pop_front();
        }
        c.peak_rss_bytes = super::peak_rss(&self.sys);
        self.last = Some(snap);
        self.write_status();
        Ok(report)
    }

    /// Counts an applied action and corrects the history by what really
    /// happened.
    fn account(&mut self, a: &Action, o: &Outcome, failed_bind: &mut Vec<i32>) {
        let h = &mut self.state.history;
        match (o, &a.kind) {
            (Outcome::Applied { .. }, ActionKind::Bind { .. }) => self.counters.binds_total += 1,
            (Outcome::Applied { .. }, ActionKind::Revert { .. }) => self.counters.reverts_total += 1,
            (Outcome::Applied { pages_moved, .. }, ActionKind::Migrate { from, to, pages }) => {
                self.counters.migrations_total += 1;
                self.counters.pages_migrated_total += pages_moved;
                let short = pages.saturating_sub(*pages_moved);
                h.committed.pages_migrated = h.committed.pages_migrated.saturating_sub(short);
                // Part moved: the rest is owed once more (none moved: the
                // pages cannot move, e.g. pinned; not asked again).
                if short > 0 && *pages_moved > 0 {
                    if let Some(pl) = h.committed.procs.get_mut(&a.pid).and_then(|r| r.placement.as_mut()) {
                        pl.pending.push((*from, *to, short));
                    }
                }
            }
            (Outcome::Gone, _) => {
                self.counters.gone_total += 1;
                h.forget(a.pid);
                failed_bind.push(a.pid);
            }
            (Outcome::Failed { .. }, kind) => {
                self.counters.failures_total += 1;
                match kind {
                    ActionKind::Bind { .. } => {
                        // Not placed: back to what it had.
                        if let Some(r) = h.committed.procs.get_mut(&a.pid) {
                            r.placement = None;
                        }
                        failed_bind.push(a.pid);
                    }
                    ActionKind::Migrate { pages, .. } => {
                        h.committed.pages_migrated = h.committed.pages_migrated.saturating_sub(*pages)
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
}
