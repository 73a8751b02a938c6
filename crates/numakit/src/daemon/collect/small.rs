//! The load of processes too small to be candidates that their owner keeps
//! on some nodes (a busy loop under `taskset`, an MPI rank bound by its
//! launcher, a per-CPU kernel thread): what [`Collector`](super::Collector)
//! reports per node as [`NodeState::bound_cpus`](crate::daemon::NodeState).
//!
//! A process below the memory threshold costs one more read,
//! `/proc/PID/schedstat` (three numbers, kept open as `statm` is): its main
//! thread's CPU time and run-queue wait, turned into a share of the time
//! since its last reading. It is read at every scan while that share could
//! be a busy thread's (at least `busy_thread_cpu` over the last window
//! alone), and otherwise every `idle_small_read_every` scans, staggered by
//! pid, so that the idle many cost a fraction of a read each. Only a
//! process whose main thread was busy at least `busy_thread_cpu` (CPU time
//! plus wait: one that shares its CPU uses half of it and waits the other
//! half) gets its `status` read for its affinity; at most two such threads
//! per CPU fit a window, so these reads grow with the machine, not with the
//! number of processes. Such a thread needs one whole CPU (the decision's
//! rule for a busy single thread), held on the nodes its affinity allows,
//! in proportion to its allowed CPUs there, when that is not every node
//! with usable CPUs.
//!
//! Not seen: the other threads of a small process (the kernel prints the
//! main thread's `schedstat` alone; the whole process's CPU time is in
//! `stat`, which costs three times as much to print), a busy main thread
//! below `busy_thread_cpu`, and for up to `idle_small_read_every` scans one
//! that was idle and became busy. This module reads and sums; it decides
//! nothing.

use std::collections::{BTreeMap, HashMap};

use super::{NodeCpus, Stamp};
use crate::daemon::snapshot::NodeState;
use crate::procs::{self, pidstat};
use crate::sys::kept::KeptFiles;
use crate::sys::{SysError, SysRoot};

/// One process's last `schedstat` reading.
#[derive(Debug, Clone, Copy)]
struct Reading {
    /// Main thread's on-CPU time, ns.
    ran: u64,
    /// ... and run delay, ns.
    waited: u64,
    /// When it was read ([`Stamp`]), seconds.
    at: f64,
    /// Scan at which it is read next.
    due: u64,
}

/// Keeps each small process's last `schedstat` reading, to turn it into a
/// rate, and sums the bound load of one scan.
#[derive(Debug)]
pub(super) struct SmallLoad {
    files: KeptFiles<i32>,
    buf: Vec<u8>,
    /// Scans begun.
    scan: u64,
    prev: HashMap<i32, Reading>,
    next: HashMap<i32, Reading>,
    /// Node id → CPUs of bound load, this scan.
    bound: BTreeMap<u32, f64>,
}

/// How a scan reads the small processes.
#[derive(Debug, Clone, Copy)]
pub(super) struct Rules {
    /// The window (time since the last scan), none on the first.
    pub(super) window: Option<f64>,
    /// `busy_thread_cpu`.
    pub(super) busy: f64,
    /// `idle_small_read_every` (0 taken as 1).
    pub(super) every: u32,
}

impl SmallLoad {
    /// Keeps up to `cap` `schedstat` files open.
    pub(super) fn new(cap: usize) -> Self {
        Self {
            files: KeptFiles::new(cap),
            buf: Vec::with_capacity(64),
            scan: 0,
            prev: HashMap::new(),
            next: HashMap::new(),
            bound: BTreeMap::new(),
        }
    }

    /// The start of a scan.
    pub(super) fn begin(&mut self) {
        self.scan += 1;
    }

    /// One small process at this scan. A process that exited or has no
    /// `schedstat` (a kernel without `CONFIG_SCHED_INFO`) is left out.
    pub(super) fn observe(
        &mut self,
        sys: &SysRoot,
        node_cpus: &NodeCpus,
        pid: i32,
        rules: &Rules,
        stamp: &Stamp,
    ) -> Result<(), SysError> {
        let scan = self.scan;
        let prev = self.prev.get(&pid).copied();
        if let Some(r) = prev.filter(|r| r.due > scan) {
            self.next.insert(pid, r);
            return Ok(());
        }
        if !self.files.read(sys, pid, || format!("proc/{pid}/schedstat"), &mut self.buf)? {
            return Ok(());
        }
        let Some((ran, waited)) = pidstat::parse_schedstat(&self.buf) else { return Ok(()) };
        let at = stamp.now();
        let mut now = Reading { ran, waited, at, due: scan + 1 };
        // No earlier reading, or a counter that went back (another process
        // got the pid): read again at the next scan.
        let Some(r) = prev.filter(|r| ran >= r.ran && waited >= r.waited && at > r.at) else {
            self.next.insert(pid, now);
            return Ok(());
        };
        let span = Stamp::span(r.at, at);
        let share = (ran - r.ran).saturating_add(waited - r.waited) as f64 / 1e9 / span;
        // Idle enough that it cannot have been busy over the last window
        // alone: read again later, staggered by pid.
        let window = rules.window.unwrap_or(span);
        if share * span < rules.busy * window {
            let every = u64::from(rules.every.max(1));
            let step = every - (scan + u64::from(pid.unsigned_abs())) % every;
            now.due = scan + step;
        }
        self.next.insert(pid, now);
        if share < rules.busy {
            return Ok(());
        }
        let Some(status) = procs::read_status(sys, pid)? else { return Ok(()) };
        // (node id, its usable CPUs the process may run on)
        let allowed: Vec<(u32, usize)> = node_cpus
            .nodes
            .iter()
            .map(|(id, c)| (*id, c.intersection(&status.cpus_allowed).len()))
            .filter(|x| x.1 > 0)
            .collect();
        let with_cpus = node_cpus.nodes.iter().filter(|(_, c)| !c.is_empty()).count();
        if allowed.is_empty() || allowed.len() >= with_cpus {
            return Ok(());
        }
        let total: usize = allowed.iter().map(|x| x.1).sum();
        for (id, n) in allowed {
            *self.bound.entry(id).or_default() += n as f64 / total as f64;
        }
        Ok(())
    }

    /// The end of a scan: the bound load into `nodes`, and the readings
    /// kept for the next scan (those of processes not seen this time
    /// dropped).
    pub(super) fn finish(&mut self, nodes: &mut [NodeState]) {
        for n in nodes.iter_mut() {
            n.bound_cpus = self.bound.get(&n.id).copied().unwrap_or(0.0);
        }
        self.bound.clear();
        self.prev = std::mem::take(&mut self.next);
        let prev = &self.prev;
        self.files.retain(|pid| prev.contains_key(pid));
    }
}
