//! The daemon at run time: one [`Service`] holds the machine, the settings,
//! the persistent [`State`], the collector and the counters, and does one
//! scan at a time: collect → decide → write ahead → apply and read back →
//! correct the history by what really happened → log every decision →
//! status file. It also answers control requests. The loop, signals and
//! the socket belong to the command line (`numakit daemon`); this type
//! does no waiting of its own.

use std::collections::{BTreeMap, VecDeque};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{json, Value};

use super::action::{Action, ActionKind};
use super::apply::{Applier, Outcome};
use super::collect::{Collector, ManagedCgroups, NodeCpus, ScanCounts};
use super::ctl::{Request, Response};
use super::decide::decide;
use super::machine::Machine;
use super::settings::{AutonumaMode, Settings};
use super::snapshot::Snapshot;
use super::state::{write_atomic, GlobalChange, State};
use crate::act::{self, Pid};
use crate::place::auto::{self, AutoDecision, AutoRequest, NodeLoad};
use crate::sets::{CpuSet, NodeSet};
use crate::sys::SysRoot;
use crate::topo::Topology;

/// `kernel.numa_balancing`, relative to the root.
pub const NUMA_BALANCING: &str = "proc/sys/kernel/numa_balancing";

/// Counters since start (status, metrics).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Counters {
    /// Scans done.
    pub scans: u64,
    /// CPU time of all scans (collect, decide, apply), seconds.
    pub scan_cpu_seconds_total: f64,
    /// Wall time of all scans, seconds.
    pub scan_wall_seconds_total: f64,
    /// CPU time of the last scan, seconds.
    pub last_scan_cpu_seconds: f64,
    /// Wall time of the last scan, seconds.
    pub last_scan_wall_seconds: f64,
    /// Processes looked at in the last scan.
    pub processes: usize,
    /// Candidates (details read) in the last scan.
    pub candidates: usize,
    /// Processes skipped as unreadable in the last scan.
    pub unreadable: usize,
    /// `numa_maps` files read in the last scan (the other candidates' came
    /// from the cache).
    pub numa_maps_read: usize,
    /// Binds applied.
    pub binds_total: u64,
    /// Migrations applied.
    pub migrations_total: u64,
    /// Pages moved, read back from `numa_maps`.
    pub pages_migrated_total: u64,
    /// Reverts applied.
    pub reverts_total: u64,
    /// Actions the kernel refused.
    pub failures_total: u64,
    /// Actions whose process exited first.
    pub gone_total: u64,
    /// Half-applied binds found and fixed at start.
    pub repairs_total: u64,
    /// Decisions per reason (keeps included).
    pub decisions_total: BTreeMap<String, u64>,
    /// CPU milliseconds of each of the last 100 scans, oldest first.
    pub recent_scan_cpu_ms: VecDeque<f64>,
    /// Peak resident memory of the daemon (`VmHWM`), bytes.
    pub peak_rss_bytes: u64,
}

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

/// A log line.
#[derive(Debug, Serialize)]
struct LogLine<'a> {
    ts: String,
    t: f64,
    scan: u64,
    comm: &'a str,
    #[serde(flatten)]
    action: &'a Action,
    reason_text: String,
    #[serde(flatten)]
    outcome: &'a Outcome,
    locality: Option<f64>,
    dry_run: bool,
}

/// The daemon's state at run time.
pub struct Service {
    sys: SysRoot,
    settings: Settings,
    config_path: Option<PathBuf>,
    dry_run: bool,
    topo: Topology,
    machine: Machine,
    node_cpus: NodeCpus,
    collector: Collector,
    state: State,
    /// Counters since start.
    pub counters: Counters,
    recent: VecDeque<String>,
    log: Option<File>,
    last: Option<Snapshot>,
    interval_s: f64,
    started: f64,
    deferred: Option<String>,
    /// When the state file was last written (monotonic seconds).
    saved_mono_s: Option<f64>,
}

/// A start or run-time failure, one line.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ServiceError(pub String);

fn wall_now() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
}

/// CPU time of the calling thread, seconds.
pub fn thread_cpu_seconds() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid timespec the call writes.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// How stale the state file may get when nothing changed: observations
/// lost in a crash cost at most this much re-judging; a change (and its
/// write-ahead record) is always written at once.
pub const STATE_SAVE_MAX_AGE_S: f64 = 30.0;

/// Lets this process open as many files as its hard limit allows (the
/// collector keeps one `statm` file per process open; systemd's default
/// soft limit is 1024). Only this process's own limit changes.
fn raise_open_file_limit() {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit and setrlimit read and write the struct passed.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max.min(1 << 20);
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}

fn rfc3339(t: f64) -> String {
    crate::tune::state::utc_rfc3339(t.max(0.0) as u64)
}

impl Service {
    /// Starts: reads the machine and the state file, restores or applies
    /// global settings, and repairs placements a killed daemon left half
    /// done.
    pub fn start(
        sys: SysRoot,
        settings: Settings,
        config_path: Option<PathBuf>,
        dry_run: bool,
    ) -> Result<Self, ServiceError> {
        let e = |x: &dyn std::fmt::Display| ServiceError(x.to_string());
        let topo = Topology::read_nodes_only(&sys).map_err(|x| e(&x))?;
        let reserved = settings.reserved().map_err(|x| e(&x))?;
        let node_cpus = NodeCpus::new(&topo, &reserved);
        let machine = build_machine(&topo, &node_cpus, &settings)?;
        let state = State::load(&state_path(&settings)).map_err(|x| e(&x))?;
        let log = if dry_run && settings.log.as_os_str().is_empty() { None } else { Some(open_log(&settings.log)?) };
        raise_open_file_limit();
        let mut s = Service {
            interval_s: settings.interval_min_s,
            sys,
            settings,
            config_path,
            dry_run,
            topo,
            machine,
            node_cpus,
            collector: Collector::new(),
            state,
            counters: Counters::default(),
            recent: VecDeque::new(),
            log,
            last: None,
            started: wall_now(),
            deferred: None,
            saved_mono_s: None,
        };
        s.globals_at_start()?;
        s.repair();
        s.save()?;
        s.write_status();
        Ok(s)
    }

    /// Seconds to wait before the next scan.
    pub fn interval(&self) -> f64 {
        self.interval_s
    }

    /// The settings in force.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    fn save(&self) -> Result<(), ServiceError> {
        if self.dry_run {
            return Ok(());
        }
        self.state.save(&state_path(&self.settings)).map_err(|x| ServiceError(x.to_string()))
    }

    /// `autonuma = "disable"`: turn the kernel's balancing off, recording
    /// the original (kept from an earlier run that did not exit cleanly).
    /// `defer`: put back what an earlier `disable` run left changed.
    fn globals_at_start(&mut self) -> Result<(), ServiceError> {
        let current = self.sys.read(NUMA_BALANCING).ok().flatten().map(|v| v.trim().to_string());
        match self.settings.autonuma {
            AutonumaMode::Disable if !self.dry_run => {
                let Some(cur) = current else { return Ok(()) };
                if cur != "0" {
                    if !self.state.globals.iter().any(|g| g.path == NUMA_BALANCING) {
                        self.state.globals.push(GlobalChange {
                            path: NUMA_BALANCING.into(),
                            original: cur.clone(),
                            set: "0".into(),
                        });
                        self.save()?;
                    }
                    act::knobs::write_value(&self.sys, NUMA_BALANCING, "0").map_err(|x| {
                        ServiceError(format!("cannot turn kernel AutoNUMA off ({NUMA_BALANCING}): {x}"))
                    })?;
                }
            }
            _ => self.restore_globals(),
        }
        Ok(())
    }

    /// Puts back every global setting numakit changed (only where it still
    /// holds numakit's value: someone else's later change wins).
    pub fn restore_globals(&mut self) {
        let mut left = Vec::new();
        for g in std::mem::take(&mut self.state.globals) {
            let cur = self.sys.read(&g.path).ok().flatten().map(|v| v.trim().to_string());
            if cur.as_deref() == Some(g.set.as_str())
                && act::knobs::write_value(&self.sys, &g.path, &g.original).is_err()
            {
                left.push(g);
            }
        }
        self.state.globals = left;
        let _ = self.save();
    }

    /// Clean exit: restore globals and save the state. Placements stay (the
    /// next start continues from the saved history).
    pub fn shutdown(&mut self) {
        self.restore_globals();
        let _ = self.save();
        self.write_status();
    }

    /// Checks every placement of the history against every thread: a bind
    /// a killed daemon left half done is finished; one that never started
    /// is forgotten; a process that exited is dropped.
    fn repair(&mut self) {
        let now = wall_now();
        let pids: Vec<i32> = self.state.history.procs.keys().copied().collect();
        for pid in pids {
            let alive = self.sys.exists(format!("proc/{pid}"));
            let Some(rec) = self.state.history.procs.get(&pid) else { continue };
            if !alive {
                self.state.history.procs.remove(&pid);
                self.state.originals.remove(&pid);
                continue;
            }
            let Some(pl) = rec.placement.clone() else { continue };
            let target = self.node_cpus.cpus_of(&pl.cpu_nodes);
            let tids = crate::procs::thread_ids(&self.sys, pid).unwrap_or_default();
            let cg = self.state.originals.get(&pid).and_then(|o| o.cgroup.clone());
            let (mut at, mut other) = (0, 0);
            for tid in &tids {
                match act::get_affinity(Pid(*tid)) {
                    Ok(c) if c == target => at += 1,
                    Ok(_) => other += 1,
                    Err(_) => {}
                }
            }
            if other == 0 {
                continue;
            }
            let comm = rec.comm.clone();
            let action = Action {
                pid,
                kind: ActionKind::Bind { cpu_nodes: pl.cpu_nodes.clone(), mem_nodes: pl.mem_nodes.clone() },
                reason: super::action::Why::Pending { left_pages: 0 },
                expected_gain: pl.expected_gain,
            };
            let (outcome, note) = if at > 0 || cg.is_some() {
                let applier = self.applier();
                let o = applier.apply(&action, self.state.originals.get(&pid));
                (o, format!("repair: {at} of {} threads were bound when the daemon stopped; bind finished", at + other))
            } else {
                // Nothing of the bind happened: forget it, decide afresh.
                if let Some(r) = self.state.history.procs.get_mut(&pid) {
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
            if !self.state.history.procs.contains_key(&pid) {
                self.state.originals.remove(&pid);
            }
        }
    }

    fn applier(&self) -> Applier<'_> {
        Applier { sys: &self.sys, node_cpus: &self.node_cpus, page_bytes: self.settings.decide.page_bytes }
    }

    /// Why the daemon must not move anything now (kernel AutoNUMA on and
    /// mode `defer`), or None.
    fn conflict(&self) -> Option<String> {
        let v: u64 = self.sys.read(NUMA_BALANCING).ok().flatten()?.trim().parse().ok()?;
        let tiering = v & 2 != 0 && self.settings.decide.use_cpuless_memory;
        (v & 1 != 0 || tiering).then(|| {
            format!(
                "kernel AutoNUMA is on (kernel.numa_balancing = {v}): deciding and logging only; set autonuma = \"disable\" \
                 or turn it off to let numakit place"
            )
        })
    }

    /// The decision configuration in force: the file's, plus `ctl`
    /// exclusions, with the current interval.
    fn effective_config(&self) -> super::Config {
        let mut c = self.settings.decide.clone();
        c.exclude_pids.extend(self.state.ctl.exclude_pids.iter().copied());
        c.exclude_comms.extend(self.state.ctl.exclude_comms.iter().cloned());
        c.interval_s = self.interval_s;
        c
    }

    /// One scan. `mono_s` is a monotonic clock.
    pub fn scan(&mut self, mono_s: f64) -> Result<ScanReport, ServiceError> {
        let cpu0 = thread_cpu_seconds();
        let t0 = std::time::Instant::now();
        let wall = wall_now();
        self.deferred = self.conflict();
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
                    || ctl.include_comms.iter().any(|c| c == comm))
        };
        let first = !self.collector.has_baseline();
        let (snap, counts) = self
            .collector
            .scan(&self.sys, &self.node_cpus, &self.settings, &include, &self.state.history, &managed, mono_s, wall)
            .map_err(|x| ServiceError(x.to_string()))?;
        let cfg = self.effective_config();
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
        let acting = !self.dry_run && self.deferred.is_none();
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
            // Nothing applied: the history must not record moves that did
            // not happen; only the observations (drift, growth, the run
            // times of processes that exited) are kept.
            let mut h = self.state.history.clone();
            for (name, c) in &decision.history.comms {
                let e = h.comms.entry(name.clone()).or_default();
                e.runs.clone_from(&c.runs);
                e.last_run_s = c.last_run_s;
            }
            for (name, c) in h.comms.iter_mut() {
                if !decision.history.comms.contains_key(name) {
                    c.runs.clear();
                    c.last_run_s = None;
                }
            }
            h.comms.retain(|_, c| !c.runs.is_empty() || c.harms > 0 || c.left_alone_until_s.is_some());
            h.drifts = decision.history.drifts;
            h.drift_observed_s = decision.history.drift_observed_s;
            h.last_time_s = decision.history.last_time_s;
            for (pid, rec) in &decision.history.procs {
                let e = h.procs.entry(*pid).or_insert_with(|| rec.clone());
                e.last_cpu_node = rec.last_cpu_node;
                e.last_rss = rec.last_rss;
            }
            self.state.history = h;
        }

        let mut report = ScanReport { counts, ..Default::default() };
        let mut failed_bind: Vec<i32> = Vec::new();
        for a in &decision.actions {
            let outcome = if !a.changes() {
                Outcome::NotDone { note: a.reason.to_string() }
            } else if self.dry_run {
                Outcome::NotDone { note: "dry run".into() }
            } else if let Some(why) = &self.deferred {
                Outcome::NotDone { note: why.clone() }
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
        self.state.originals.retain(|pid, _| self.state.history.procs.contains_key(pid));
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
        c.peak_rss_bytes = peak_rss(&self.sys);
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
                h.pages_migrated = h.pages_migrated.saturating_sub(short);
                // Part moved: the rest is owed once more (none moved: the
                // pages cannot move, e.g. pinned; not asked again).
                if short > 0 && *pages_moved > 0 {
                    if let Some(pl) = h.procs.get_mut(&a.pid).and_then(|r| r.placement.as_mut()) {
                        pl.pending.push((*from, *to, short));
                    }
                }
            }
            (Outcome::Gone, _) => {
                self.counters.gone_total += 1;
                h.procs.remove(&a.pid);
                failed_bind.push(a.pid);
            }
            (Outcome::Failed { .. }, kind) => {
                self.counters.failures_total += 1;
                match kind {
                    ActionKind::Bind { .. } => {
                        // Not placed: back to what it had.
                        if let Some(r) = h.procs.get_mut(&a.pid) {
                            r.placement = None;
                        }
                        failed_bind.push(a.pid);
                    }
                    ActionKind::Migrate { pages, .. } => h.pages_migrated = h.pages_migrated.saturating_sub(*pages),
                    _ => {}
                }
            }
            _ => {}
        }
    }

    fn log_line(&mut self, t: f64, comm: &str, a: &Action, o: &Outcome, locality: Option<f64>, note: Option<String>) {
        let line = LogLine {
            ts: rfc3339(t),
            t,
            scan: self.counters.scans + 1,
            comm,
            action: a,
            reason_text: note.unwrap_or_else(|| a.reason.to_string()),
            outcome: o,
            locality,
            dry_run: self.dry_run,
        };
        let text = serde_json::to_string(&line).unwrap_or_default();
        if let Some(f) = self.log.as_mut() {
            let _ = writeln!(f, "{text}");
        }
        self.recent.push_back(text);
        while self.recent.len() > 1000 {
            self.recent.pop_front();
        }
    }

    /// The status as JSON (also written to `status.json`).
    pub fn status(&self) -> Value {
        let managed: Vec<Value> = self
            .state
            .history
            .procs
            .iter()
            .filter_map(|(pid, r)| {
                r.placement.as_ref().map(|p| {
                    json!({"pid": pid, "comm": r.comm, "cpu_nodes": p.cpu_nodes.to_list(),
                           "judged": p.judged, "pending_pages": p.pending.iter().map(|x| x.2).sum::<u64>()})
                })
            })
            .collect();
        json!({
            "pid": std::process::id(),
            "started": rfc3339(self.started),
            "config": self.config_path.as_ref().map(|p| p.display().to_string()),
            "dry_run": self.dry_run,
            "deferred": self.deferred,
            "interval_s": self.interval_s,
            "counters": self.counters,
            "managed": managed,
            "excluded": {"pids": self.state.ctl.exclude_pids, "comms": self.state.ctl.exclude_comms},
            "included": {"pids": self.state.ctl.include_pids, "comms": self.state.ctl.include_comms},
            "left_alone_comms": self.state.history.comms.iter()
                .filter(|(_, c)| c.left_alone_until_s.is_some_and(|u| u > wall_now()))
                .map(|(n, _)| n.clone()).collect::<Vec<_>>(),
            "reverts_ever": self.state.history.reverts,
            "run_times": {
                "commands": self.state.history.comms.values().filter(|c| !c.runs.is_empty()).count(),
                "runs": self.state.history.comms.values().map(|c| c.runs.len()).sum::<usize>(),
            },
            "globals_changed": self.state.globals,
            "progress_measure": {"by": self.collector.progress_measure().0, "why": self.collector.progress_measure().1},
        })
    }

    fn write_status(&self) {
        let path = self.settings.state_dir.join("status.json");
        let text = serde_json::to_string_pretty(&self.status()).unwrap_or_default();
        if let Err(e) = write_atomic(&path, &text) {
            eprintln!("numakit daemon: cannot write {}: {e}", path.display());
        }
    }

    /// Answers one control request.
    pub fn handle(&mut self, req: &Request) -> Response {
        let target = |t: &str| -> Result<Target, String> {
            let t = t.trim();
            if t.is_empty() {
                return Err("empty target: give a pid or a command name".into());
            }
            match t.parse::<i32>() {
                Ok(p) if p > 0 => Ok(Target::Pid(p)),
                Ok(_) => Err(format!("invalid pid {t}")),
                Err(_) if t.len() <= 15 => Ok(Target::Comm(t.to_string())),
                Err(_) => Err(format!("command name {t:?} is longer than 15 characters, the kernel's comm length")),
            }
        };
        let r = match req {
            Request::Status => return Response::ok(self.status()),
            Request::Decisions { last } => {
                let n = (*last).min(self.recent.len());
                let lines: Vec<Value> = self
                    .recent
                    .iter()
                    .skip(self.recent.len() - n)
                    .filter_map(|l| serde_json::from_str(l).ok())
                    .collect();
                return Response::ok(Value::Array(lines));
            }
            Request::Reload => return self.reload(),
            Request::Advise { cpus, mem_bytes, reserve } => return self.advise(*cpus, *mem_bytes, reserve),
            Request::Exclude { target: t } => target(t).map(|t| {
                let c = &mut self.state.ctl;
                match &t {
                    Target::Pid(p) => {
                        c.include_pids.retain(|x| x != p);
                        if !c.exclude_pids.contains(p) {
                            c.exclude_pids.push(*p);
                        }
                    }
                    Target::Comm(n) => {
                        c.include_comms.retain(|x| x != n);
                        if !c.exclude_comms.contains(n) {
                            c.exclude_comms.push(n.clone());
                        }
                    }
                }
                format!("excluded {t}")
            }),
            Request::Include { target: t } => target(t).map(|t| {
                let c = &mut self.state.ctl;
                match &t {
                    Target::Pid(p) => {
                        c.exclude_pids.retain(|x| x != p);
                        if !c.include_pids.contains(p) {
                            c.include_pids.push(*p);
                        }
                    }
                    Target::Comm(n) => {
                        c.exclude_comms.retain(|x| x != n);
                        if !c.include_comms.contains(n) {
                            c.include_comms.push(n.clone());
                        }
                    }
                }
                format!("included {t}")
            }),
            Request::Forget { target: t } => target(t).map(|t| {
                let c = &mut self.state.ctl;
                let h = &mut self.state.history;
                match &t {
                    Target::Pid(p) => {
                        c.exclude_pids.retain(|x| x != p);
                        c.include_pids.retain(|x| x != p);
                        if let Some(r) = h.procs.get_mut(p) {
                            r.left_alone_until_s = None;
                        }
                    }
                    Target::Comm(n) => {
                        c.exclude_comms.retain(|x| x != n);
                        c.include_comms.retain(|x| x != n);
                        h.comms.remove(n);
                    }
                }
                format!("forgot {t}")
            }),
        };
        match r {
            Ok(msg) => match self.save() {
                Ok(()) => {
                    self.write_status();
                    Response::ok(json!({ "done": msg }))
                }
                Err(e) => Response::err(e.to_string()),
            },
            Err(e) => Response::err(e),
        }
    }

    fn reload(&mut self) -> Response {
        let Some(path) = self.config_path.clone() else {
            return Response::err("the daemon was started without --config: nothing to reload");
        };
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) => return Response::err(format!("{}: {e}", path.display())),
        };
        let new = match Settings::from_toml(&text, &path.display().to_string()) {
            Ok(s) => s,
            Err(e) => return Response::err(format!("{e} (the old configuration stays)")),
        };
        if new.state_dir != self.settings.state_dir || new.socket != self.settings.socket {
            return Response::err("state_dir and socket cannot change on reload: restart the daemon");
        }
        let reserved = match new.reserved() {
            Ok(r) => r,
            Err(e) => return Response::err(e.to_string()),
        };
        let node_cpus = NodeCpus::new(&self.topo, &reserved);
        let machine = match build_machine(&self.topo, &node_cpus, &new) {
            Ok(m) => m,
            Err(e) => return Response::err(e.to_string()),
        };
        if new.log != self.settings.log {
            match open_log(&new.log) {
                Ok(f) => self.log = Some(f),
                Err(e) => return Response::err(e.to_string()),
            }
        }
        let mode_changed = new.autonuma != self.settings.autonuma;
        self.settings = new;
        self.node_cpus = node_cpus;
        self.machine = machine;
        self.interval_s = self.settings.interval_min_s;
        if mode_changed {
            if let Err(e) = self.globals_at_start() {
                return Response::err(e.to_string());
            }
        }
        self.write_status();
        Response::ok(json!({"done": format!("reloaded {}", path.display())}))
    }

    /// Advice from the last scan's view of the nodes.
    fn advise(&self, cpus: u32, mem_bytes: u64, reserve: &str) -> Response {
        let Some(snap) = &self.last else { return Response::err("no scan yet: ask again after the first interval") };
        let reserve = match parse_reserve(reserve) {
            Ok(r) => r.union(&self.settings.reserved().unwrap_or_default()),
            Err(e) => return Response::err(e),
        };
        let idle = self.collector.last_idle();
        let loads: Vec<NodeLoad> = self
            .topo
            .nodes
            .iter()
            .map(|n| NodeLoad {
                node: n.id,
                idle_cpus: n.cpus.intersection(idle),
                free_bytes: snap.nodes.iter().find(|s| s.id == n.id).map_or(0, |s| s.free_bytes),
            })
            .collect();
        let view = json!({
            "loads": loads.iter().map(|l| json!({"node": l.node, "idle_cpus": l.idle_cpus.to_list(),
                "free_bytes": l.free_bytes})).collect::<Vec<_>>(),
            "reserved": self.settings.reserved().unwrap_or_default().to_list(),
            "scanned": rfc3339(snap.time_s),
        });
        if cpus == 0 {
            return Response::ok(view);
        }
        let req = AutoRequest { cpus, mem_bytes, reserve };
        let mut data = view;
        match auto::decide(&self.topo, &loads, &req) {
            Ok(d) => {
                data["advice"] = advice_json(&d, "daemon");
                Response::ok(data)
            }
            Err(r) => {
                data["refused"] = json!(r.to_string());
                Response { ok: false, error: Some(r.to_string()), data }
            }
        }
    }
}

/// A CPU list, or empty.
pub fn parse_reserve(s: &str) -> Result<CpuSet, String> {
    if s.trim().is_empty() {
        return Ok(CpuSet::new());
    }
    CpuSet::parse_list(s.trim()).map_err(|e| format!("reserve {s:?}: {e}"))
}

/// Advice as JSON: nodes, rule, reason, the numactl options that apply it,
/// and whose view it came from.
pub fn advice_json(d: &AutoDecision, source: &str) -> Value {
    json!({
        "nodes": d.nodes.to_list(),
        "rule": format!("{:?}", d.rule),
        "reason": d.reason,
        "numactl": d.plan.numactl_args(),
        "source": source,
    })
}

enum Target {
    Pid(i32),
    Comm(String),
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Pid(p) => write!(f, "pid {p}"),
            Target::Comm(c) => write!(f, "command {c:?}"),
        }
    }
}

fn reason_name(a: &Action) -> String {
    serde_json::to_value(&a.reason)
        .ok()
        .and_then(|v| v.get("why").and_then(|w| w.as_str()).map(str::to_string))
        .unwrap_or_else(|| "unknown".into())
}

fn locality_of(p: &super::ProcInfo) -> Option<f64> {
    let total: u64 = p.mem_per_node.values().sum();
    if total == 0 {
        return None;
    }
    let mut run: NodeSet = p.cpu_per_node.iter().filter(|(_, c)| **c > 0.0).map(|(n, _)| *n).collect();
    if run.is_empty() {
        run = p.affinity.clone();
    }
    let local: u64 = p.mem_per_node.iter().filter(|(n, _)| run.contains(**n)).map(|(_, b)| *b).sum();
    Some(local as f64 / total as f64)
}

/// `VmHWM` of the daemon itself (0 when unknown).
fn peak_rss(sys: &SysRoot) -> u64 {
    sys.read(format!("proc/{}/status", std::process::id()))
        .ok()
        .flatten()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

fn state_path(s: &Settings) -> PathBuf {
    s.state_dir.join("state.json")
}

fn open_log(path: &Path) -> Result<File, ServiceError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| ServiceError(format!("{}: {e}", dir.display())))?;
    }
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| ServiceError(format!("cannot open the decision log {}: {e}", path.display())))
}

/// The decision core's machine: node sizes and distances of the topology,
/// CPUs less the reserved ones, and measured access-time ratios when a
/// `numakit bench latency --json` result is configured.
pub fn build_machine(topo: &Topology, node_cpus: &NodeCpus, s: &Settings) -> Result<Machine, ServiceError> {
    let mut m = Machine::from_topology(topo);
    for n in &mut m.nodes {
        n.cpus = node_cpus.nodes.iter().find(|(id, _)| *id == n.id).map_or(0, |(_, c)| c.len() as u32);
    }
    if s.bench_latency.as_os_str().is_empty() {
        return Ok(m);
    }
    let path = &s.bench_latency;
    let text =
        std::fs::read_to_string(path).map_err(|e| ServiceError(format!("bench_latency {}: {e}", path.display())))?;
    let mut r = m.ratios(s.decide.slit_at, s.decide.ratio_at);
    let found = measured_ratios(&text, &m, &mut r)
        .map_err(|e| ServiceError(format!("bench_latency {}: {e}", path.display())))?;
    if found == 0 {
        return Err(ServiceError(format!(
            "bench_latency {}: no latency ratio for this machine's nodes (a `numakit bench latency --json` result?)",
            path.display()
        )));
    }
    m.with_measured(r).map_err(|e| ServiceError(format!("bench_latency {}: {e}", path.display())))
}

/// Fills `ratios` (by node index) from the `firmware[]` latency entries of
/// a `numakit bench latency --json` result; returns how many were found.
pub fn measured_ratios(json_text: &str, m: &Machine, ratios: &mut [Vec<f64>]) -> Result<usize, String> {
    let v: Value = serde_json::from_str(json_text).map_err(|e| format!("not JSON: {e}"))?;
    if v.get("kind").and_then(Value::as_str) != Some("latency") {
        return Err("not a `numakit bench latency --json` result (kind is not \"latency\")".into());
    }
    let mut n = 0;
    for f in v.get("firmware").and_then(Value::as_array).into_iter().flatten() {
        let get = |k: &str| f.get(k).and_then(Value::as_u64).map(|x| x as u32);
        let (Some(c), Some(mem), Some(r)) =
            (get("cpu_node"), get("mem_node"), f.get("measured_ratio").and_then(Value::as_f64))
        else {
            continue;
        };
        if let (Some(i), Some(j)) = (m.index(c), m.index(mem)) {
            if r.is_finite() && r > 0.0 {
                ratios[i][j] = r;
                n += 1;
            }
        }
    }
    Ok(n)
}
