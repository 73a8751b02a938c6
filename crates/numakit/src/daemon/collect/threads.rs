//! One reading of a candidate's threads (`/proc/PID/task/TID/stat` and
//! `schedstat`): each thread's CPU time, the node of its last CPU and its
//! run-queue wait, which two scans turn into where the process ran over
//! the window ([`Collector`](super::Collector)). Reads only.

use std::collections::HashMap;

use super::{NodeCpus, Stamp, Timed, Trail};
use crate::procs;
use crate::sys::{SysError, SysRoot};

/// One thread at one scan.
#[derive(Debug, Clone, Copy)]
pub(super) struct ThreadSeen {
    /// CPU time (clock ticks, `stat`).
    pub(super) cpu_ticks: u64,
    /// Node of its last CPU.
    pub(super) node: Option<u32>,
    /// Time runnable but waiting for a CPU (ns, `schedstat`), when known.
    pub(super) wait_ns: Option<u64>,
    /// When it was read ([`Stamp`]).
    pub(super) at: f64,
    /// The scan it was read in ([`Stamp::scan_s`]).
    pub(super) scan_s: f64,
}

impl Timed for ThreadSeen {
    fn at(&self) -> f64 {
        self.at
    }
}

/// Keeps thread `tid`'s reading `t` for the next scans: after its earlier
/// readings (`prev`, the last scan's trails), in `seen`.
pub(super) fn keep_thread(
    prev: &HashMap<i32, Trail<ThreadSeen>>,
    seen: &mut HashMap<i32, Trail<ThreadSeen>>,
    tid: i32,
    t: ThreadSeen,
    min_span: f64,
) {
    let mut trail = prev.get(&tid).cloned().unwrap_or_default();
    trail.push(t, min_span);
    seen.insert(tid, trail);
}

/// One thread's reading: its CPU time, the node of its last CPU and its
/// run delay; `None` when it exited.
pub(super) fn read_thread(
    sys: &SysRoot,
    node_cpus: &NodeCpus,
    pid: i32,
    tid: i32,
    stamp: &Stamp,
) -> Result<Option<ThreadSeen>, SysError> {
    let Some(t) = procs::read_task_stat(sys, pid, tid)? else { return Ok(None) };
    let node = t.processor.and_then(|c| node_cpus.node_of(c));
    let wait_ns = procs::read_task_run_delay(sys, pid, tid)?;
    Ok(Some(ThreadSeen { cpu_ticks: t.cpu_ticks, node, wait_ns, at: stamp.now(), scan_s: stamp.scan_s() }))
}

/// Every thread's reading of a process, for the next scans' rates.
pub(super) fn read_threads(
    sys: &SysRoot,
    node_cpus: &NodeCpus,
    pid: i32,
    stamp: &Stamp,
    prev: &HashMap<i32, Trail<ThreadSeen>>,
    min_span: f64,
    seen: &mut HashMap<i32, Trail<ThreadSeen>>,
) -> Result<(), SysError> {
    for tid in procs::thread_ids(sys, pid)? {
        if let Some(t) = read_thread(sys, node_cpus, pid, tid, stamp)? {
            keep_thread(prev, seen, tid, t, min_span);
        }
    }
    Ok(())
}
