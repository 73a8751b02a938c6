//! The daemon's read layer: one scan of `/proc` and `/sys` (through a
//! [`SysRoot`], so tests drive it with fake trees) into a [`Snapshot`].
//!
//! Cheap first, costly only for candidates: every process costs one read
//! of `/proc/PID/statm` (resident pages; the file is kept open, see
//! [`KeptFiles`]); those below the memory threshold one more, of their
//! main thread's `schedstat`, for the load their owner pinned ([`small`]);
//! those at or above it, or placed by numakit before, get `/proc/PID/stat`
//! read (CPU time, start time); only those also above the CPU threshold get
//! their `status`, `cgroup`, threads' `stat` and `numa_maps` read. CPU use
//! is the difference of CPU time between two scans, so a process seen for
//! the first time (or the first time above the memory threshold) counts as
//! idle until the next scan; its threads are read then, so that the next
//! scan measures where they ran.

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

use super::config::Config;
use super::history::History;
use super::settings::Settings;
use super::snapshot::{MemPolicy, NodeState, ProcInfo, Progress, Snapshot};

use crate::place::auto;
use crate::procs::counters::{Event, ThreadCounters};
use crate::procs::{self, pidstat, ProcStat};
use crate::sets::{CpuSet, NodeSet};
use crate::stats::{self, meminfo};
use crate::sys::kept::{open_file_budget, KeptFiles};
use crate::sys::{stat as cpustat, SysError, SysRoot};

mod memory;
mod nodes;
mod small;
mod stamp;
mod threads;

pub use memory::{memory_of, parse_policy};
use nodes::read_cpuset_nodes;
pub use nodes::NodeCpus;
use stamp::{Stamp, Timed, Trail};
use threads::{keep_thread, read_thread, read_threads, ThreadSeen};

/// Counts of one scan, for status and metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScanCounts {
    /// Processes looked at (one `statm` or `stat` read each).
    pub processes: usize,
    /// Processes whose details (`numa_maps` ...) were read.
    pub detailed: usize,
    /// Processes that could not be read (permissions), skipped.
    pub unreadable: usize,
    /// Processes that exited while being read, skipped.
    pub vanished: usize,
    /// `numa_maps` files read (the others came from the cache).
    pub numa_maps_read: usize,
}

/// A process's memory per node from its last `numa_maps` read.
#[derive(Debug, Clone)]
struct MapsEntry {
    start_ticks: u64,
    rss: u64,
    main_node: Option<u32>,
    at: f64,
    /// `pgmigrate_success` of `/proc/vmstat` when it was read.
    migrated: Option<u64>,
    mem: BTreeMap<u32, u64>,
    policy: MemPolicy,
}

/// Per-process numbers of the cheap first pass, for [`Collector::details`].
#[derive(Debug, Clone, Copy)]
struct Ctx {
    cpu_use: f64,
    rss: u64,
    age_s: f64,
    window: Option<f64>,
    mono_s: f64,
    /// The time of this process's reads (see [`Stamp`]).
    at: f64,
    /// Seconds `cpu_use` is over, and whether that is the configured
    /// span ([`Config::min_rate_span_s`]).
    span_s: f64,
    /// The scan `cpu_use` is measured from.
    rates_from: Option<f64>,
    long: bool,
    settling: bool,
    /// `pgmigrate_success` now.
    migrated: Option<u64>,
}

#[derive(Debug, Clone, Copy)]
struct Seen {
    /// CPU time so far, seconds.
    cpu_s: f64,
    start_ticks: u64,
    /// When it was read (the scan's monotonic clock).
    at: f64,
    /// The scan it was read in ([`Stamp::scan_s`]).
    scan_s: f64,
}

impl Timed for Seen {
    fn at(&self) -> f64 {
        self.at
    }
}

/// Keeps what is needed between scans to turn CPU times into rates.
#[derive(Debug)]
pub struct Collector {
    statm: KeptFiles<i32>,
    /// Instructions retired by the candidates' threads (live system only).
    counters: Option<ThreadCounters>,
    buf: Vec<u8>,
    prev_at: Option<f64>,
    prev_cpu: Option<cpustat::CpuSample>,
    /// Per process, its recent readings (a rate spans at least
    /// [`Config::min_rate_span_s`]).
    prev_procs: HashMap<i32, Trail<Seen>>,
    /// Per thread of the processes read last scan, its recent readings.
    prev_threads: HashMap<i32, Trail<ThreadSeen>>,
    last_idle: CpuSet,
    maps: HashMap<i32, MapsEntry>,
    /// Processes below the memory threshold: their pinned load.
    small: small::SmallLoad,
    /// Seconds between two readings on a dump (tests of a slow scan).
    read_step_s: f64,
}

/// Which cgroups numakit changed, so their original scope is reported
/// instead of numakit's own narrowing: pid → nodes the cgroup allowed
/// before.
pub type ManagedCgroups = BTreeMap<i32, NodeSet>;

impl Default for Collector {
    fn default() -> Self {
        Self::new()
    }
}

impl Collector {
    /// A collector with no previous scan; it keeps up to half the files
    /// this process may open for `statm` reads, and a quarter for the
    /// small processes' `schedstat`.
    pub fn new() -> Self {
        Self {
            statm: KeptFiles::new(open_file_budget() / 2),
            small: small::SmallLoad::new(open_file_budget() / 4),
            counters: Some(ThreadCounters::new(Event::Instructions)),
            buf: Vec::with_capacity(256),
            prev_at: None,
            prev_cpu: None,
            prev_procs: HashMap::new(),
            prev_threads: HashMap::new(),
            last_idle: CpuSet::new(),
            maps: HashMap::new(),
            read_step_s: 0.0,
        }
    }

    /// On a dump, each reading `step` seconds after the one before: a scan
    /// as slow as a starved machine's (tests).
    #[cfg(test)]
    pub(crate) fn slow_reads(&mut self, step: f64) {
        self.read_step_s = step;
    }

    /// `/proc/PID/statm` files kept open now.
    pub fn kept_files(&self) -> usize {
        self.statm.len()
    }

    /// What progress is measured with: `"instructions"` when the
    /// candidates' instructions are counted, else `"cpu-time"` and why.
    pub fn progress_measure(&self) -> (&'static str, Option<&str>) {
        match &self.counters {
            Some(c) => match c.unavailable() {
                None => ("instructions", None),
                Some(why) => ("cpu-time", Some(why)),
            },
            None => ("cpu-time", Some("not the live system")),
        }
    }

    /// Whether a scan was made before (CPU use is known from the next one).
    pub fn has_baseline(&self) -> bool {
        self.prev_at.is_some()
    }

    /// CPUs idle at least [`auto::IDLE_SHARE`] of the last window (what
    /// `run --auto` counts as idle).
    pub fn last_idle(&self) -> &CpuSet {
        &self.last_idle
    }

    /// One scan. `include` says whether a process may be managed (the
    /// configured include lists and `ctl include`). `mono_s` is a monotonic clock (rates), read at `taken`
    /// (each reading is stamped `mono_s` plus the time since), `wall_s` the
    /// time put in the snapshot (it survives restarts, as the history needs).
    #[allow(clippy::too_many_arguments)]
    pub fn scan(
        &mut self,
        sys: &SysRoot,
        node_cpus: &NodeCpus,
        settings: &Settings,
        include: &dyn Fn(i32, &str, &str, u32) -> bool,
        history: &History,
        managed: &ManagedCgroups,
        mono_s: f64,
        wall_s: f64,
        taken: Instant,
    ) -> Result<(Snapshot, ScanCounts), SysError> {
        let clk = pidstat::clock_ticks_per_sec();
        let page = stats::page_size();
        let window = self.prev_at.map(|p| (mono_s - p).max(1e-3));
        let uptime = read_uptime(sys)?;
        // Any page migrated since a process's numa_maps was read makes the
        // cached copy stale.
        let migrated = stats::vmstat::read_vmstat(sys)?.get("pgmigrate_success");

        // Nodes: idle CPUs over the window (since boot on the first scan),
        // free memory now.
        let cpu_now = cpustat::read_cpu_sample(sys)?;
        let idle = cpustat::idle_share(self.prev_cpu.as_ref().unwrap_or(&BTreeMap::new()), &cpu_now);
        let free: BTreeMap<u32, u64> = meminfo::read_node_free(sys)?
            .into_iter()
            .map(|m| (m.id, crate::topo::available(m.free_bytes(), m.get("Inactive(file)")).unwrap_or(0)))
            .collect();
        let mut nodes: Vec<NodeState> = node_cpus
            .nodes
            .iter()
            .map(|(id, cpus)| NodeState {
                id: *id,
                free_cpus: cpus.iter().map(|c| idle.get(&c).copied().unwrap_or(0.0)).sum(),
                free_bytes: free.get(id).copied().unwrap_or(0),
                bound_cpus: 0.0,
            })
            .collect();

        let mut counts = ScanCounts::default();
        let mut seen: HashMap<i32, Trail<Seen>> = HashMap::with_capacity(self.prev_procs.len());
        let mut reused = Vec::new();
        let mut threads_seen = HashMap::new();
        let mut procs_out = Vec::new();
        let mut maps_next = HashMap::new();
        let cfg = &settings.decide;
        let min_span = cfg.min_rate_span_s.max(0.0);
        let pids = pidstat::list_pids(sys)?;
        // Hardware counters only for the running system (not a dump).
        let mut counters = if sys.is_live() { self.counters.take() } else { None };
        let mut counted = Vec::new();
        let mut vanished = Vec::new();
        self.small.begin();
        let small_rules = small::Rules { window, busy: cfg.busy_thread_cpu, every: cfg.idle_small_read_every };
        let stamp = Stamp::new(mono_s, wall_s, sys.is_live().then_some(taken), self.read_step_s);
        for &pid in &pids {
            // `statm` first: the kernel prints 7 numbers, where `stat` sums
            // every thread's times and faults and prints 52 fields.
            // Processes below the memory threshold end here.
            let by_statm = cfg.min_rss_bytes > 0 && !history.knows(pid);
            if by_statm {
                match self.statm.read(sys, pid, || format!("proc/{pid}/statm"), &mut self.buf) {
                    Ok(true) => {}
                    Ok(false) => {
                        counts.vanished += 1;
                        continue;
                    }
                    Err(e) => {
                        counts.skipped(e)?;
                        continue;
                    }
                }
                let resident = match pidstat::parse_statm_resident(&self.buf) {
                    Some(pages) => pages.saturating_mul(page),
                    // An empty file: the process exited while being read.
                    None if self.buf.iter().all(u8::is_ascii_whitespace) => {
                        counts.vanished += 1;
                        continue;
                    }
                    None => return Err(sys.invalid(format!("proc/{pid}/statm"), "not a statm line")),
                };
                counts.processes += 1;
                if resident < cfg.min_rss_bytes {
                    if let Err(e) = self.small.observe(sys, node_cpus, pid, &small_rules, &stamp) {
                        counts.skipped(e)?;
                    }
                    continue;
                }
            }
            // `stat`: CPU time (all threads), start time, resident pages.
            // (`schedstat` is cheaper for the kernel to print but counts
            // the main thread only.)
            let st = match pidstat::read_proc_stat(sys, pid) {
                Ok(Some(s)) => s,
                Ok(None) => {
                    counts.vanished += 1;
                    vanished.push(pid);
                    continue;
                }
                Err(e) => {
                    counts.skipped(e)?;
                    continue;
                }
            };
            let at = stamp.now();
            let cpu_s = st.cpu_ticks as f64 / clk;
            counts.processes += usize::from(!by_statm);
            // Another start time than last scan: the pid was reused (the
            // process it named exited); a CPU time that went back: no rate.
            let mut trail = self.prev_procs.remove(&pid).unwrap_or_default();
            if let Some(last) = trail.last().filter(|p| p.start_ticks != st.start_ticks || cpu_s < p.cpu_s) {
                if last.start_ticks != st.start_ticks {
                    reused.push(pid);
                }
                trail = Trail::default();
            }
            let base = trail.base(at, min_span).filter(|_| window.is_some());
            let rate = base.map(|(p, _)| (cpu_s - p.cpu_s) / Stamp::span(p.at, at));
            let (span_s, long) = base.map_or((0.0, false), |(p, long)| (at - p.at, long));
            let rates_from = base.map(|(p, _)| p.scan_s);
            let cpu_use = rate.unwrap_or(0.0);
            trail.push(Seen { cpu_s, start_ticks: st.start_ticks, at, scan_s: stamp.scan_s() }, min_span);
            seen.insert(pid, trail);
            if st.is_kernel_thread() || st.state == 'Z' || st.state == 'X' {
                continue;
            }
            let rss = st.rss_pages.saturating_mul(page);
            let age_s = (uptime - st.start_ticks as f64 / clk).max(0.0);
            let rec =
                history.committed.procs.get(&pid).filter(|r| r.same_process(wall_s - age_s, cfg.same_start_slack_s));
            let placed = rec.is_some_and(|r| r.placement.is_some());
            // A move still settling is read afresh every scan.
            let settling = rec.and_then(|r| r.placement.as_ref()).is_some_and(|p| !p.judged || !p.pending.is_empty());
            if !placed && (cpu_use < cfg.min_cpu || rss < cfg.min_rss_bytes) {
                // Its CPU use is not known yet (the first scan, or first seen
                // this large): its threads are read now, so that if it is
                // busy the next scan measures where they ran.
                if rate.is_none() && rss >= cfg.min_rss_bytes {
                    if let Err(e) =
                        read_threads(sys, node_cpus, pid, &stamp, &self.prev_threads, min_span, &mut threads_seen)
                    {
                        counts.skipped(e)?;
                    }
                }
                continue;
            }
            let ctx = Ctx { cpu_use, rss, age_s, window, mono_s, at, span_s, rates_from, long, settling, migrated };
            match self.details(
                sys,
                node_cpus,
                include,
                managed,
                &st,
                &ctx,
                &stamp,
                cfg,
                &mut threads_seen,
                counters.as_mut(),
            ) {
                Ok(Some((p, entry, fresh))) => {
                    counted.push(pid);
                    counts.detailed += 1;
                    counts.numa_maps_read += usize::from(fresh);
                    maps_next.insert(pid, entry);
                    procs_out.push(p);
                }
                Ok(None) => {}
                Err(e) => counts.skipped(e)?,
            }
        }
        self.statm.retain(|pid| pids.binary_search(pid).is_ok());
        self.small.finish(&mut nodes);
        // Counters of processes that are no candidates now are closed: when
        // they come back their window starts afresh.
        if let Some(mut c) = counters {
            c.retain(|pid| counted.contains(&pid));
            self.counters = Some(c);
        }
        self.prev_at = Some(mono_s);
        self.last_idle = idle.iter().filter(|(_, s)| **s >= auto::IDLE_SHARE).map(|(c, _)| *c).collect();
        self.prev_cpu = Some(cpu_now);
        self.prev_threads = threads_seen;
        // Keep the entries of processes still alive that were not
        // candidates this time (CPU use near the threshold comes and goes).
        self.maps.retain(|pid, e| seen.get(pid).and_then(Trail::last).is_some_and(|s| s.start_ticks == e.start_ticks));
        self.maps.extend(maps_next);
        // The pid now names a later process (above), or gone from /proc:
        // those read last scan and not this one. (A process alive but not
        // read this time is no exit.)
        let mut exited = reused;
        exited.extend(
            self.prev_procs.keys().filter(|pid| pids.binary_search(pid).is_err() || vanished.contains(pid)).copied(),
        );
        exited.sort_unstable();
        self.prev_procs = seen;
        Ok((Snapshot { time_s: wall_s, nodes, procs: procs_out, exited }, counts))
    }

    /// The costly reads for one candidate; `Ok(None)` when it exited or is
    /// not included. Also returns its `numa_maps` cache entry and whether
    /// `numa_maps` was read (else the cached memory per node was used).
    #[allow(clippy::too_many_arguments)]
    fn details(
        &self,
        sys: &SysRoot,
        node_cpus: &NodeCpus,
        include: &dyn Fn(i32, &str, &str, u32) -> bool,
        managed: &ManagedCgroups,
        st: &ProcStat,
        ctx: &Ctx,
        stamp: &Stamp,
        cfg: &Config,
        threads_seen: &mut HashMap<i32, Trail<ThreadSeen>>,
        counters: Option<&mut ThreadCounters>,
    ) -> Result<Option<(ProcInfo, MapsEntry, bool)>, SysError> {
        let Ctx { cpu_use, rss, age_s, window, mono_s, at, span_s, rates_from, long, settling, migrated } = *ctx;
        let min_span = cfg.min_rate_span_s.max(0.0);
        let pid = st.pid;
        let Some(uid) = pidstat::owner_uid(sys, pid) else { return Ok(None) };
        let cgroup = procs::cgroup::read_path(sys, pid)?.unwrap_or_default();
        if !include(pid, &st.comm, &cgroup, uid) {
            return Ok(None);
        }
        let Some(status) = procs::read_status(sys, pid)? else { return Ok(None) };
        let (affinity, partial) = node_cpus.nodes_of(&status.cpus_allowed);
        let cpuset = match managed.get(&pid) {
            Some(origin) => origin.clone(),
            None => read_cpuset_nodes(sys, node_cpus, &cgroup)?,
        };

        // Threads: CPU time per node over the window, by each thread's
        // last CPU. `stat` tells only where a thread is now: one that was
        // on another node at the last scan moved at an unknown moment of
        // the window, so its time is split half and half (the expectation
        // for a uniform moment), not all given to where it happens to be
        // (a scheduler's bounce onto a busy node would look like room).
        let clk = pidstat::clock_ticks_per_sec();
        let mut cpu_per_node: BTreeMap<u32, f64> = BTreeMap::new();
        let mut weights: BTreeMap<u32, f64> = BTreeMap::new();
        // CPU time of the threads read over the whole span (a thread born
        // since counts over its own shorter one, and does not hold back
        // the measure of a process whose other threads are older).
        let mut long_used = 0.0;
        let mut cpu_wait = 0.0;
        // The earliest scan any of its rates is measured from.
        let mut rates_from = rates_from;
        let tids = procs::thread_ids(sys, pid)?;
        let instr_rate = counters.and_then(|c| c.rate(pid, &tids, at));
        for &tid in &tids {
            let Some(t) = read_thread(sys, node_cpus, pid, tid, stamp)? else { continue };
            let base = self.prev_threads.get(&tid).and_then(|tr| tr.base(t.at, min_span));
            keep_thread(&self.prev_threads, threads_seen, tid, t, min_span);
            let ThreadSeen { cpu_ticks, node, wait_ns, at: t_at, .. } = t;
            let Some(node) = node else { continue };
            *weights.entry(node).or_default() += 1.0;
            if let (Some((prev, long_t)), Some(_)) = (base, window) {
                rates_from = Some(rates_from.map_or(prev.scan_s, |r: f64| r.min(prev.scan_s)));
                let w = Stamp::span(prev.at, t_at);
                let used = cpu_ticks.saturating_sub(prev.cpu_ticks) as f64 / clk / w;
                if let (Some(now), Some(before)) = (wait_ns, prev.wait_ns) {
                    cpu_wait += now.saturating_sub(before) as f64 / 1e9 / w;
                }
                match prev.node {
                    Some(pn) if pn != node => {
                        *cpu_per_node.entry(node).or_default() += used / 2.0;
                        *cpu_per_node.entry(pn).or_default() += used / 2.0;
                    }
                    _ => *cpu_per_node.entry(node).or_default() += used,
                }
                if long_t {
                    long_used += used;
                }
            }
        }
        let cpu_measured = long && long_used > 0.0;
        if !cpu_measured {
            // No per-thread history yet: the process's CPU use spread over
            // where its threads are at this instant (not acted on).
            let n: f64 = weights.values().sum();
            cpu_per_node = weights.iter().map(|(k, w)| (*k, if n > 0.0 { cpu_use * w / n } else { 0.0 })).collect();
        }

        let main_node = cpu_per_node.iter().max_by(|a, b| a.1.total_cmp(b.1)).map(|(n, _)| *n);
        let cached = self.maps.get(&pid).filter(|e| {
            !settling
                && e.start_ticks == st.start_ticks
                && e.main_node == main_node
                && mono_s - e.at < cfg.numa_maps_max_age_s
                && e.migrated == migrated
                && (e.rss as f64 - rss as f64).abs() <= cfg.numa_maps_rss_share * e.rss.max(1) as f64
        });
        let (entry, fresh) = match cached {
            Some(e) => (e.clone(), false),
            None => {
                let Some(text) = procs::read_numa_maps_text(sys, pid)? else { return Ok(None) };
                let (mem, policy) = memory_of(&text);
                (MapsEntry { start_ticks: st.start_ticks, rss, main_node, at: mono_s, migrated, mem, policy }, true)
            }
        };
        let (mem_per_node, mem_policy) = (entry.mem.clone(), entry.policy.clone());
        let owner_pinned = partial || !matches!(mem_policy, MemPolicy::Default | MemPolicy::Local);
        Ok(Some((
            ProcInfo {
                pid,
                comm: st.comm.clone(),
                uid,
                cgroup,
                threads: st.num_threads.min(u64::from(u32::MAX)) as u32,
                cpu_use,
                cpu_wait,
                rss_bytes: rss,
                mem_per_node,
                cpu_per_node,
                cpu_measured,
                rate_span_s: span_s,
                rates_from_s: rates_from,
                affinity,
                cpuset,
                mem_policy,
                owner_pinned,
                age_s,
                progress: Progress { cpu_rate: cpu_use, instr_rate },
                mem_stall_share: None,
            },
            entry,
            fresh,
        )))
    }
}

impl ScanCounts {
    /// A failed read of one process's files: not ours to read (counted as
    /// unreadable) or the process exited meanwhile (ESRCH, counted as
    /// vanished) skips the process; any other error ends the scan.
    fn skipped(&mut self, e: SysError) -> Result<(), SysError> {
        match &e {
            SysError::Io { source, .. } if source.kind() == std::io::ErrorKind::PermissionDenied => {
                self.unreadable += 1
            }
            SysError::Io { source, .. } if source.raw_os_error() == Some(libc::ESRCH) => self.vanished += 1,
            _ => return Err(e),
        }
        Ok(())
    }
}

/// Seconds since boot (`/proc/uptime`).
pub fn read_uptime(sys: &SysRoot) -> Result<f64, SysError> {
    let text = sys.read("proc/uptime")?.ok_or_else(|| sys.invalid("proc/uptime", "missing"))?;
    text.split_whitespace()
        .next()
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| sys.invalid("proc/uptime", "not a number of seconds"))
}

#[cfg(test)]
mod tests;
