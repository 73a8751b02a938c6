//! Pinning a running process (`numakit pin`, like `taskset -a -p`): the
//! affinity of every thread set through [`act`], with which threads
//! changed and which failed and why. A thread that exits meanwhile is not
//! a failure. Nothing here prints.

use serde::Serialize;

use crate::act;
use crate::procs;
use crate::sets::CpuSet;
use crate::sys::{SysError, SysRoot};

/// What pinning did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PinReport {
    /// The process.
    pub pid: i32,
    /// The CPUs its threads were given.
    pub cpus: CpuSet,
    /// Threads now on those CPUs.
    pub changed: Vec<i32>,
    /// Threads the kernel refused, with why.
    pub failed: Vec<PinFailure>,
}

/// One thread the kernel refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PinFailure {
    /// The thread.
    pub tid: i32,
    /// The kernel's refusal.
    pub error: String,
}

/// Sets the affinity of every thread of `pid` (its `/proc/PID/task` below
/// `sys`) to `cpus`; `Ok(None)` when there is no such process.
pub fn pin(sys: &SysRoot, pid: i32, cpus: &CpuSet) -> Result<Option<PinReport>, SysError> {
    let tids = procs::thread_ids(sys, pid)?;
    if tids.is_empty() {
        return Ok(None);
    }
    let mut report = PinReport { pid, cpus: cpus.clone(), changed: Vec::new(), failed: Vec::new() };
    for tid in tids {
        match act::set_affinity(act::Pid(tid), cpus) {
            Ok(()) => report.changed.push(tid),
            // A thread that exited meanwhile is not a failure.
            Err(e) if e.is_errno(libc::ESRCH) => {}
            Err(e) => report.failed.push(PinFailure { tid, error: e.to_string() }),
        }
    }
    Ok(Some(report))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_process_is_none() {
        let d = tempfile::tempdir().expect("tmp");
        assert_eq!(pin(&SysRoot::at(d.path()), 42, &CpuSet::first_n(1)).expect("read"), None);
    }

    #[test]
    fn every_thread_of_a_child_is_pinned() {
        let mut child = std::process::Command::new("sleep").arg("30").spawn().expect("sleep");
        let pid = child.id() as i32;
        let cpus = act::get_affinity(act::Pid(pid)).expect("affinity");
        let one: CpuSet = cpus.first().into_iter().collect();
        let r = pin(&SysRoot::live(), pid, &one).expect("read").expect("process");
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!((r.changed, r.failed, r.cpus), (vec![pid], Vec::new(), one));
    }
}
