//! The daemon at run time: one [`Service`] holds the machine, the settings,
//! the persistent [`State`], the collector and the counters. Its work is
//! split along its seams, one file each:
//!
//! * [`scan`]: one scan (collect → decide → write ahead → apply and read
//!   back → correct the history → log → status);
//! * [`repair`]: at start, placements a killed daemon left half done;
//! * [`autonuma`]: the AutoNUMA guard (turn the kernel's balancing off and
//!   back; beside it, place CPUs only or defer);
//! * [`control`]: the control requests of [`crate::daemon::protocol`];
//! * [`report`]: the decision log and the status.
//!
//! Every change to the system goes through [`crate::daemon::apply`]. The
//! loop, signals and the socket belong to the command line (`numakit
//! daemon`); this type does no waiting of its own.

use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::action::Action;
use super::apply::Applier;
use super::collect::{Collector, NodeCpus};
use super::machine::{Machine, NodeMatrix, PerNode};
use super::protocol::{Counters, DecisionRecord};
use super::settings::{Coexistence, Settings};
use super::snapshot::Snapshot;
use super::state::State;
use crate::sets::NodeSet;
use crate::sys::SysRoot;
use crate::topo::Topology;
use crate::units::unix_now;

mod autonuma;
mod control;
mod repair;
mod report;
mod scan;

pub use autonuma::NUMA_BALANCING;
pub use report::RECENT_DECISIONS;
pub use scan::ScanReport;

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
    recent: VecDeque<DecisionRecord>,
    log: Option<File>,
    last: Option<Snapshot>,
    interval_s: f64,
    started: f64,
    /// What this scan may do beside the kernel's balancing.
    coexist: Coexistence,
    /// When the state file was last written (monotonic seconds).
    saved_mono_s: Option<f64>,
    /// An experiment's gate: why this scan only decides and logs (the
    /// host's `daemon-off` period), given the time; set by the caller.
    observe_only: Option<ObserveGate>,
}

/// See [`Service::set_observe_only`].
pub type ObserveGate = Box<dyn Fn(f64) -> Option<String> + Send>;

/// A start or run-time failure, one line.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ServiceError(pub String);

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

pub(crate) fn rfc3339(t: f64) -> String {
    crate::units::utc_rfc3339(t.max(0.0) as u64)
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
            started: unix_now(),
            coexist: Coexistence::Full,
            saved_mono_s: None,
            observe_only: None,
        };
        s.globals_at_start()?;
        s.repair();
        s.save()?;
        s.write_status();
        Ok(s)
    }

    /// Sets the experiment's gate: a function of the time (seconds since
    /// the epoch) that says why the daemon must only decide and log in a
    /// scan (a `daemon-off` arm), or `None` when it may act as its
    /// settings say. The daemon's experiment ([`Settings::experiment`]) is
    /// drawn by the caller, which holds the key.
    pub fn set_observe_only(&mut self, gate: Option<ObserveGate>) {
        self.observe_only = gate;
    }

    /// Seconds to wait before the next scan.
    pub fn interval(&self) -> f64 {
        self.interval_s
    }

    /// The settings in force.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    pub(super) fn save(&self) -> Result<(), ServiceError> {
        if self.dry_run {
            return Ok(());
        }
        self.state.save(&state_path(&self.settings)).map_err(|x| ServiceError(x.to_string()))
    }

    /// Clean exit: restore globals and save the state. Placements stay (the
    /// next start continues from the saved history).
    pub fn shutdown(&mut self) {
        self.restore_globals();
        let _ = self.save();
        self.write_status();
    }

    pub(super) fn applier(&self) -> Applier<'_> {
        Applier { sys: &self.sys, node_cpus: &self.node_cpus, page_bytes: self.settings.decide.page_bytes }
    }

    /// The decision configuration in force: the file's, plus `ctl`
    /// exclusions, with the current interval.
    pub(super) fn effective_config(&self) -> super::Config {
        let mut c = self.settings.decide.clone();
        c.exclude_pids.extend(self.state.ctl.exclude_pids.iter().copied());
        c.exclude_comms.extend(self.state.ctl.exclude_comms.iter().cloned());
        c.interval_s = self.interval_s;
        c
    }
}

fn reason_name(a: &Action) -> String {
    serde_json::to_value(&a.reason)
        .ok()
        .and_then(|v| v.get("why").and_then(|w| w.as_str()).map(str::to_string))
        .unwrap_or_else(|| "unknown".into())
}

fn locality_of(p: &crate::daemon::ProcInfo) -> Option<f64> {
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
            crate::sys::status_field(&t, "VmHWM:").and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
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
    let text = crate::files::read_named_text(path).map_err(|e| ServiceError(format!("bench_latency {e}")))?;
    let mut r = m.ratios(s.decide.slit_at, s.decide.ratio_at);
    let found = measured_ratios(&text, &m, &mut r)
        .map_err(|e| ServiceError(format!("bench_latency {}: {e}", path.display())))?;
    if found == 0 {
        return Err(ServiceError(format!(
            "bench_latency {}: no latency ratio for this machine's nodes (a `numakit bench latency --json` result?)",
            path.display()
        )));
    }
    let r = r.into_vec().into_iter().map(PerNode::into_vec).collect();
    m.with_measured(r).map_err(|e| ServiceError(format!("bench_latency {}: {e}", path.display())))
}

/// Fills `ratios` (by node position) from the `firmware[]` latency entries
/// of a `numakit bench latency --json` result; returns how many were found.
pub fn measured_ratios(json_text: &str, m: &Machine, ratios: &mut NodeMatrix<f64>) -> Result<usize, String> {
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
        if let (Some(a), Some(b)) = (m.index(c), m.index(mem)) {
            if r.is_finite() && r > 0.0 {
                ratios[a][b] = r;
                n += 1;
            }
        }
    }
    Ok(n)
}
