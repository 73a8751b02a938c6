//! CPU affinity: [`set_affinity`], [`get_affinity`] and
//! [`current_cpu_and_node`].
//!
//! Affinity is per thread: [`Pid::SELF`] is the calling thread, any other
//! id a thread id (a process id names the process's main thread only). CPU
//! masks are sized from the set when setting and grown until the kernel's
//! `nr_cpu_ids` fits when reading, so machines with more than 1024 CPUs
//! work.

use libc::{c_long, c_uint, c_ulong};

use super::mask::KernelMask;
use super::{last_errno, log, ActError, Pid, Result};
use crate::sets::CpuSet;

/// First mask size tried by [`get_affinity`] (glibc's `CPU_SETSIZE`).
const GET_FIRST_BITS: usize = 1024;
/// Largest mask tried: 64 Ki CPUs, far above any kernel's `NR_CPUS`.
const GET_MAX_BITS: usize = 1 << 16;

/// Restricts thread `tid` to the CPUs in `cpus`
/// ([sched_setaffinity(2)](https://man7.org/linux/man-pages/man2/sched_setaffinity.2.html))
/// and records the change.
///
/// The kernel keeps only the CPUs that exist and the thread's cpuset
/// allows; if none is left it refuses with `EINVAL` (so an empty set, or a
/// set of CPUs that do not exist, is `EINVAL`). Another user's thread needs
/// `CAP_SYS_NICE` (`EPERM`); an unknown id is `ESRCH`.
///
/// ```
/// use numakit::act::{get_affinity, set_affinity, Pid};
/// use numakit::sets::CpuSet;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// std::thread::spawn(|| -> Result<(), numakit::act::ActError> {
///     let cpu0 = CpuSet::parse_list("0").expect("list");
///     set_affinity(Pid::SELF, &cpu0)?; // only this new thread is pinned
///     assert_eq!(get_affinity(Pid::SELF)?, cpu0);
///     Ok(())
/// })
/// .join()
/// .expect("thread")?;
/// # Ok(()) }
/// ```
pub fn set_affinity(tid: Pid, cpus: &CpuSet) -> Result<()> {
    let mask = KernelMask::from_words(&cpus.to_words(0), 0);
    // SAFETY: the kernel reads `byte_len` bytes from the mask, which holds
    // exactly that many and outlives the call.
    let r = unsafe {
        libc::syscall(libc::SYS_sched_setaffinity, tid.as_raw() as c_long, mask.byte_len() as c_ulong, mask.as_ptr())
    };
    if r != 0 {
        return Err(ActError::sys("sched_setaffinity", last_errno()));
    }
    log::record(&log::Change {
        call: "sched_setaffinity",
        target: tid.thread_target(),
        detail: format!("cpus {cpus}"),
    });
    Ok(())
}

/// The CPUs thread `tid` may run on
/// ([sched_getaffinity(2)](https://man7.org/linux/man-pages/man2/sched_getaffinity.2.html)).
///
/// The mask starts at 1024 CPUs and doubles while the kernel answers
/// `EINVAL` (a mask shorter than its `nr_cpu_ids`), up to 65536 CPUs.
///
/// ```
/// use numakit::act::{get_affinity, Pid};
/// # fn main() -> Result<(), numakit::act::ActError> {
/// let cpus = get_affinity(Pid::SELF)?;
/// assert!(!cpus.is_empty());
/// # Ok(()) }
/// ```
pub fn get_affinity(tid: Pid) -> Result<CpuSet> {
    let mut bits = GET_FIRST_BITS;
    loop {
        let mut mask = KernelMask::zeroed(bits);
        // SAFETY: the kernel writes at most `byte_len` bytes into the mask,
        // which holds that many and outlives the call.
        let r = unsafe {
            libc::syscall(
                libc::SYS_sched_getaffinity,
                tid.as_raw() as c_long,
                mask.byte_len() as c_ulong,
                mask.as_mut_ptr(),
            )
        };
        // The raw call returns the number of bytes written; the rest of the
        // mask stays zero.
        if r >= 0 {
            return Ok(CpuSet::from_words(&mask.to_words()));
        }
        let errno = last_errno();
        if errno == libc::EINVAL && bits < GET_MAX_BITS {
            bits *= 2;
            continue;
        }
        return Err(ActError::sys("sched_getaffinity", errno));
    }
}

/// The CPU the calling thread runs on and that CPU's node
/// ([getcpu(2)](https://man7.org/linux/man-pages/man2/getcpu.2.html)).
///
/// The answer may be stale as soon as it returns, unless the thread is
/// pinned to one CPU.
///
/// ```
/// use numakit::act::{current_cpu_and_node, get_affinity, Pid};
/// # fn main() -> Result<(), numakit::act::ActError> {
/// let (cpu, node) = current_cpu_and_node()?;
/// assert_eq!(node, 0); // a single-node machine
/// assert!(get_affinity(Pid::SELF)?.contains(cpu));
/// # Ok(()) }
/// ```
pub fn current_cpu_and_node() -> Result<(u32, u32)> {
    let mut cpu: c_uint = 0;
    let mut node: c_uint = 0;
    // SAFETY: both pointers are valid unsigned ints that outlive the call;
    // the third argument (a cache the kernel ignores) may be null.
    let r = unsafe {
        libc::syscall(libc::SYS_getcpu, &mut cpu as *mut c_uint, &mut node as *mut c_uint, std::ptr::null_mut::<u8>())
    };
    if r != 0 {
        return Err(ActError::sys("getcpu", last_errno()));
    }
    Ok((cpu, node))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::act::testutil::{in_fresh_thread, log_lock};
    use std::sync::mpsc;

    fn cpus(list: &str) -> CpuSet {
        CpuSet::parse_list(list).expect("list")
    }

    /// What `/proc/thread-self/status` says (test-only cross-check; the act
    /// layer itself never reads /proc).
    fn proc_allowed() -> CpuSet {
        let status = std::fs::read_to_string("/proc/thread-self/status").expect("status");
        let line = status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")).expect("line");
        cpus(line.trim())
    }

    #[test]
    fn get_matches_proc() {
        assert_eq!(get_affinity(Pid::SELF).expect("get"), proc_allowed());
        assert_eq!(get_affinity(Pid::this_thread()).expect("get"), proc_allowed());
    }

    #[test]
    fn pin_to_cpu_1_then_run_there() {
        let allowed = get_affinity(Pid::SELF).expect("get");
        if !allowed.contains(1) {
            eprintln!("skipped: CPU 1 is not allowed here ({allowed})");
            return;
        }
        in_fresh_thread(|| {
            set_affinity(Pid::SELF, &cpus("1")).expect("set");
            // SAFETY: sched_yield takes no argument.
            unsafe { libc::sched_yield() };
            let (cpu, node) = current_cpu_and_node().expect("getcpu");
            assert_eq!((cpu, node), (1, 0));
            assert_eq!(get_affinity(Pid::SELF).expect("get"), cpus("1"));
            assert_eq!(proc_allowed(), cpus("1"));
            set_affinity(Pid::SELF, &cpus("0")).expect("set");
            // SAFETY: as above.
            unsafe { libc::sched_yield() };
            assert_eq!(current_cpu_and_node().expect("getcpu").0, 0);
        });
        // The harness thread is untouched.
        assert_eq!(get_affinity(Pid::SELF).expect("get"), allowed);
    }

    #[test]
    fn set_another_thread_by_tid() {
        let (tid_tx, tid_rx) = mpsc::channel();
        let (done_tx, done_rx) = mpsc::channel::<()>();
        let other = std::thread::spawn(move || {
            tid_tx.send(Pid::this_thread()).expect("send");
            done_rx.recv().expect("recv");
            get_affinity(Pid::SELF).expect("get")
        });
        let tid = tid_rx.recv().expect("tid");
        set_affinity(tid, &cpus("0")).expect("set other");
        assert_eq!(get_affinity(tid).expect("get other"), cpus("0"));
        done_tx.send(()).expect("send");
        assert_eq!(other.join().expect("join"), cpus("0"));
    }

    #[test]
    fn bits_beyond_the_kernel_mask_are_ignored() {
        // A 5001-bit mask: the kernel reads its own cpumask size and drops
        // the rest, so CPU 0 stays.
        in_fresh_thread(|| {
            set_affinity(Pid::SELF, &cpus("0,5000")).expect("set");
            assert_eq!(get_affinity(Pid::SELF).expect("get"), cpus("0"));
        });
    }

    #[test]
    fn impossible_sets_are_einval() {
        in_fresh_thread(|| {
            let before = get_affinity(Pid::SELF).expect("get");
            for list in ["", "4000", "65000"] {
                let e = set_affinity(Pid::SELF, &cpus(list)).expect_err(list);
                assert!(e.is_errno(libc::EINVAL), "{list}: {e}");
                assert_eq!(e.to_string(), "sched_setaffinity: Invalid argument (EINVAL)");
            }
            assert_eq!(get_affinity(Pid::SELF).expect("get"), before);
        });
    }

    #[test]
    fn init_is_readable_or_eperm() {
        match get_affinity(Pid(1)) {
            Ok(set) => assert!(!set.is_empty()),
            Err(e) => assert!(e.is_errno(libc::EPERM) || e.is_errno(libc::ESRCH), "{e}"),
        }
    }

    #[test]
    fn unknown_thread_is_esrch() {
        let e = get_affinity(Pid(i32::MAX)).expect_err("no such thread");
        assert!(e.is_errno(libc::ESRCH), "{e}");
        let e = set_affinity(Pid(i32::MAX), &cpus("0")).expect_err("no such thread");
        assert!(e.is_errno(libc::ESRCH), "{e}");
    }

    #[test]
    fn set_is_logged_get_is_not() {
        let _g = log_lock();
        let _ = log::take();
        let me = in_fresh_thread(|| {
            let _ = get_affinity(Pid::SELF).expect("get");
            let _ = current_cpu_and_node().expect("getcpu");
            set_affinity(Pid::SELF, &cpus("0")).expect("set");
            let _ = set_affinity(Pid::SELF, &CpuSet::new()); // refused: not logged
            Pid::this_thread().as_raw()
        });
        let mine: Vec<String> = log::take().into_iter().filter(|r| r.tid == me).map(|r| r.to_string()).collect();
        assert_eq!(mine, vec!["numakit: sched_setaffinity self: cpus 0".to_string()]);
    }
}
