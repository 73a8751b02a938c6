//! Counters of other processes' threads through `perf_event_open(2)`:
//! [`ThreadCounters`] gives a process's rate of an event (instructions
//! retired, for the daemon's do-no-harm check) over the time between two
//! calls.
//!
//! One counter per thread (`pid = TID`, `cpu = -1`), user space only
//! (`exclude_kernel`, `exclude_hv`: allowed at `perf_event_paranoid` 2 for
//! one's own processes; root may count every process). A thread that
//! started since the last call has no count for the whole window, so the
//! process's rate is `None` for that window; a thread that exited is read
//! one last time (its file keeps the count). Where the kernel has no such
//! event (no hardware PMU: most VMs, QEMU's TCG) or refuses (permissions),
//! the first open says so and every rate is `None` from then on: callers
//! fall back to CPU time.
//!
//! Counting is not a change to the system (nothing is written, no
//! behaviour changes), so this lives with the readers, not in `act`.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::FromRawFd;

/// What to count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// `PERF_COUNT_HW_INSTRUCTIONS`: instructions retired (needs a PMU).
    Instructions,
    /// `PERF_COUNT_SW_TASK_CLOCK`: nanoseconds on CPU (a software event every
    /// kernel has; the tests use it where no PMU exists).
    TaskClock,
}

/// `struct perf_event_attr` up to `PERF_ATTR_SIZE_VER0` (64 bytes): the
/// fields needed to count one event; the kernel zero-extends the rest.
#[repr(C)]
#[derive(Default)]
struct PerfEventAttr {
    type_: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    /// Bit field: 0 disabled, 1 inherit, ..., 5 exclude_kernel, 6 exclude_hv.
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
}

const PERF_TYPE_HARDWARE: u32 = 0;
const PERF_TYPE_SOFTWARE: u32 = 1;
const PERF_COUNT_HW_INSTRUCTIONS: u64 = 1;
const PERF_COUNT_SW_TASK_CLOCK: u64 = 1;
const EXCLUDE_KERNEL: u64 = 1 << 5;
const EXCLUDE_HV: u64 = 1 << 6;
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;

/// Opens a counting (not sampling) counter of `event` on thread `tid`.
fn open(event: Event, tid: i32) -> io::Result<File> {
    let (type_, config) = match event {
        Event::Instructions => (PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS),
        Event::TaskClock => (PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK),
    };
    let attr = PerfEventAttr {
        type_,
        size: std::mem::size_of::<PerfEventAttr>() as u32,
        config,
        flags: EXCLUDE_KERNEL | EXCLUDE_HV,
        ..Default::default()
    };
    // SAFETY: attr is a valid perf_event_attr of the size it states; the
    // call only reads it. The result is a new file descriptor or -1.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &attr as *const PerfEventAttr,
            tid as libc::pid_t,
            -1 as libc::c_int,
            -1 as libc::c_int,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd was just returned by the kernel and is owned by no one else.
    Ok(unsafe { File::from_raw_fd(fd as libc::c_int) })
}

fn read_count(f: &File) -> io::Result<u64> {
    let mut b = [0u8; 8];
    (&*f).read_exact(&mut b)?;
    Ok(u64::from_ne_bytes(b))
}

/// Per process: each counted thread's file and its count at the last
/// call, and the time of that call.
#[derive(Debug, Default)]
struct Proc {
    threads: HashMap<i32, (File, u64)>,
    at_s: f64,
}

/// Counters of the threads of the processes asked about.
#[derive(Debug)]
pub struct ThreadCounters {
    event: Event,
    procs: HashMap<i32, Proc>,
    unavailable: Option<String>,
}

impl ThreadCounters {
    /// Counters of `event`; nothing is opened before [`ThreadCounters::rate`].
    pub fn new(event: Event) -> Self {
        Self { event, procs: HashMap::new(), unavailable: None }
    }

    /// Counters that cannot be had at all (the reason, e.g. "no hardware
    /// counter for instructions (ENOENT)"), after the first try.
    pub fn unavailable(&self) -> Option<&str> {
        self.unavailable.as_deref()
    }

    /// The event's rate per second of process `pid`, whose threads are now
    /// `tids`, since the last call for it (`now_s`: a monotonic clock in
    /// seconds); `None` on the first call, when a thread is new since then,
    /// or when counters are unavailable.
    pub fn rate(&mut self, pid: i32, tids: &[i32], now_s: f64) -> Option<f64> {
        if self.unavailable.is_some() {
            return None;
        }
        let known = self.procs.contains_key(&pid);
        let p = self.procs.entry(pid).or_default();
        let window_s = now_s - p.at_s;
        p.at_s = now_s;
        let mut complete = known;
        let mut delta: u64 = 0;
        // Threads gone since: their last count.
        p.threads.retain(|tid, (f, last)| {
            if tids.contains(tid) {
                return true;
            }
            if let Ok(v) = read_count(f) {
                delta += v.saturating_sub(*last);
            }
            false
        });
        for &tid in tids {
            if let Some((f, last)) = p.threads.get_mut(&tid) {
                match read_count(f) {
                    Ok(v) => {
                        delta += v.saturating_sub(*last);
                        *last = v;
                    }
                    Err(_) => complete = false,
                }
                continue;
            }
            complete = false;
            match open(self.event, tid) {
                Ok(f) => {
                    let v = read_count(&f).unwrap_or(0);
                    p.threads.insert(tid, (f, v));
                }
                // The thread exited meanwhile.
                Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {}
                Err(e) => {
                    let what = match self.event {
                        Event::Instructions => "instructions",
                        Event::TaskClock => "task-clock",
                    };
                    let errno = e.raw_os_error().unwrap_or(0);
                    self.unavailable = Some(format!("no {what} counter for thread {tid}: {e} (errno {errno})"));
                    self.procs.clear();
                    return None;
                }
            }
        }
        (complete && window_s > 0.0).then(|| delta as f64 / window_s)
    }

    /// Closes the counters of processes for which `keep` says no.
    pub fn retain(&mut self, mut keep: impl FnMut(i32) -> bool) {
        self.procs.retain(|pid, _| keep(*pid));
    }

    /// Counters open now (one per thread).
    pub fn open_counters(&self) -> usize {
        self.procs.values().map(|p| p.threads.len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tids(pid: u32) -> Vec<i32> {
        std::fs::read_dir(format!("/proc/{pid}/task"))
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
            .collect()
    }

    #[test]
    fn attr_is_the_size_of_version_0() {
        assert_eq!(std::mem::size_of::<PerfEventAttr>(), 64);
    }

    /// A busy child counted with the software task clock (every kernel has
    /// it; a PMU is not needed): about 1e9 ns per second of its CPU time.
    #[test]
    fn rate_of_a_busy_process_with_the_task_clock() {
        let mut child = std::process::Command::new("sh").args(["-c", "while :; do :; done"]).spawn().unwrap();
        let pid = child.id();
        let mut c = ThreadCounters::new(Event::TaskClock);
        let t0 = std::time::Instant::now();
        let first = c.rate(pid as i32, &tids(pid), 0.0);
        if let Some(why) = c.unavailable() {
            // perf_event_open is forbidden here (perf_event_paranoid 3, a
            // seccomp filter): the fallback is what is tested then.
            let _ = child.kill();
            let _ = child.wait();
            assert!(first.is_none());
            assert!(why.contains("task-clock"), "{why}");
            eprintln!("counters unavailable here, fallback tested: {why}");
            return;
        }
        assert_eq!(first, None, "no window yet");
        let cpu = || {
            let st = crate::procs::read_proc_stat(&crate::sys::SysRoot::live(), pid as i32).unwrap().unwrap();
            st.cpu_ticks as f64 / crate::procs::pidstat::clock_ticks_per_sec()
        };
        let cpu0 = cpu();
        let w0 = t0.elapsed().as_secs_f64();
        std::thread::sleep(std::time::Duration::from_millis(400));
        let w = t0.elapsed().as_secs_f64();
        let rate = c.rate(pid as i32, &tids(pid), w).expect("a rate over a whole window");
        let w = w - w0;
        let cpu1 = cpu();
        let _ = child.kill();
        let _ = child.wait();
        // Task clock (ns per s) against the kernel's CPU time of the child
        // over about the same window (clock ticks: 10 ms resolution).
        let cpu_rate = (cpu1 - cpu0) / w;
        assert!(rate > 0.05e9, "{rate}");
        assert!((rate / 1e9 - cpu_rate).abs() < 0.1 + 0.2 * cpu_rate, "task clock {rate} vs CPU time {cpu_rate}");
        assert_eq!(c.open_counters(), 1);
        c.retain(|_| false);
        assert_eq!(c.open_counters(), 0);
    }

    #[test]
    fn a_new_thread_makes_the_window_incomplete_and_a_gone_one_is_read_once_more() {
        // Two children stand for two threads of one process (the counters
        // take the thread list from the caller).
        let spawn = || std::process::Command::new("sleep").arg("30").spawn().unwrap();
        let (mut a, mut b) = (spawn(), spawn());
        let (ta, tb) = (a.id() as i32, b.id() as i32);
        let mut c = ThreadCounters::new(Event::TaskClock);
        c.rate(ta, &[ta], 0.0);
        if c.unavailable().is_none() {
            assert!(c.rate(ta, &[ta], 0.1).is_some());
            assert_eq!(c.rate(ta, &[ta, tb], 0.2), None, "the new thread has no count for the window");
            assert!(c.rate(ta, &[ta, tb], 0.3).is_some());
            assert_eq!(c.open_counters(), 2);
            assert!(c.rate(ta, &[ta], 0.4).is_some(), "a thread gone is no gap");
            assert_eq!(c.open_counters(), 1);
        }
        for ch in [&mut a, &mut b] {
            let _ = ch.kill();
            let _ = ch.wait();
        }
    }

    #[test]
    fn instructions_are_counted_or_said_to_be_unavailable() {
        let mut c = ThreadCounters::new(Event::Instructions);
        let me = std::process::id() as i32;
        let mine = tids(me as u32);
        assert_eq!(c.rate(me, &mine, 0.0), None);
        match c.unavailable() {
            // No PMU (this VM, QEMU TCG): said once, None from then on.
            Some(why) => {
                eprintln!("{why}");
                assert!(why.contains("instructions"), "{why}");
                assert_eq!(c.rate(me, &mine, 1.0), None);
            }
            None => assert!(c.rate(me, &mine, 1.0).is_some()),
        }
    }
}
