//! The cheap per-process files: `/proc/PID/stat` (command, state, CPU
//! time, threads, resident pages, last CPU), the list of processes, the
//! owner of `/proc/PID`, `cmdline`, and `numa_pages_migrated` from
//! `/proc/PID/sched`. Views scan every process through these and read the
//! costly `numa_maps` only for the processes they show.

use crate::sets::MAX_CPUS;
use crate::sys::{SysError, SysRoot};

/// What `/proc/PID/stat` says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcStat {
    /// Process id (field 1).
    pub pid: i32,
    /// `comm` (field 2, without the parentheses).
    pub comm: String,
    /// State letter (field 3): `R`, `S`, `D`, `Z`, ...
    pub state: char,
    /// Parent (field 4).
    pub ppid: i32,
    /// User plus system CPU time in clock ticks (fields 14 and 15).
    pub cpu_ticks: u64,
    /// Threads (field 20).
    pub num_threads: u64,
    /// Start time after boot in clock ticks (field 22): with the pid, it
    /// tells a reused pid from the process seen before.
    pub start_ticks: u64,
    /// Resident pages (field 24).
    pub rss_pages: u64,
    /// CPU the main thread last ran on (field 39).
    pub processor: Option<u32>,
}

impl ProcStat {
    /// Whether this is a kernel thread (no memory of its own: no
    /// resident pages and parent `kthreadd` or pid 2 itself).
    pub fn is_kernel_thread(&self) -> bool {
        self.rss_pages == 0 && (self.ppid == 2 || self.pid == 2)
    }
}

/// Clock ticks per second of `/proc` CPU times (`sysconf(_SC_CLK_TCK)`).
pub fn clock_ticks_per_sec() -> f64 {
    // SAFETY: sysconf only reads a configuration value.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

/// Parses a `stat` line of a process or thread. The comm may hold spaces
/// and parentheses, so fields are counted after the last `)`. CPU times
/// whose sum passes 64 bits are `u64::MAX`; a last CPU at or above
/// [`MAX_CPUS`] is no kernel's (`None`).
pub fn parse_proc_stat(text: &str) -> Option<ProcStat> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let pid = text.get(..open)?.trim().parse().ok()?;
    let comm = text.get(open + 1..close)?.to_string();
    // Fields 3, 4, ... in order; `nth(k)` skips k fields.
    let mut f = text.get(close + 1..)?.split_ascii_whitespace();
    let num = |s: Option<&str>| s.and_then(|v| v.parse::<u64>().ok());
    let state = f.next()?.chars().next()?;
    let ppid = f.next()?.parse().ok()?;
    let utime = num(f.nth(9))?; // field 14
    let stime = num(f.next())?; // 15
    let num_threads = num(f.nth(4)); // 20
    let start_ticks = num(f.nth(1)); // 22
    let rss_pages = num(f.nth(1)); // 24
    let processor = f.nth(14).and_then(|v| v.parse().ok()).filter(|&c| c < MAX_CPUS); // 39
    Some(ProcStat {
        pid,
        comm,
        state,
        ppid,
        cpu_ticks: utime.saturating_add(stime),
        num_threads: num_threads.unwrap_or(1),
        start_ticks: start_ticks.unwrap_or(0),
        rss_pages: rss_pages.unwrap_or(0),
        processor,
    })
}

/// Reads `/proc/PID/stat`; `Ok(None)` if the process is gone.
pub fn read_proc_stat(sys: &SysRoot, pid: i32) -> Result<Option<ProcStat>, SysError> {
    let rel = format!("proc/{pid}/stat");
    match sys.read_proc_file(&rel, 1024)? {
        None => Ok(None),
        // An empty file: the process exited while being read.
        Some(t) if t.trim().is_empty() => Ok(None),
        Some(t) => parse_proc_stat(&t).map(Some).ok_or_else(|| sys.invalid(&rel, "not a stat line")),
    }
}

/// Resident pages (the second field) of a `/proc/PID/statm` text;
/// `None` if it is not a statm line (an exited process's file is empty).
pub fn parse_statm_resident(text: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(text).ok()?;
    let mut f = text.split_ascii_whitespace();
    f.next()?.parse::<u64>().ok()?;
    f.next()?.parse().ok()
}

/// Every process id under `/proc`, sorted.
pub fn list_pids(sys: &SysRoot) -> Result<Vec<i32>, SysError> {
    let mut pids: Vec<i32> = sys
        .list_dir("proc")?
        .unwrap_or_default()
        .iter()
        .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
        .filter_map(|n| n.parse().ok())
        .collect();
    pids.sort_unstable();
    Ok(pids)
}

/// The last CPU of every thread of a process, from `task/TID/stat`
/// (threads that exit meanwhile are left out). A single-threaded process
/// needs no further read: its `stat` already says. Empty if the process is
/// gone.
pub fn thread_cpus(sys: &SysRoot, stat: &ProcStat) -> Result<Vec<u32>, SysError> {
    if stat.num_threads <= 1 {
        return Ok(stat.processor.into_iter().collect());
    }
    let pid = stat.pid;
    let mut cpus = Vec::new();
    for tid in super::thread_ids(sys, pid)? {
        let Some(text) = sys.read_proc_file(format!("proc/{pid}/task/{tid}/stat"), 1024)? else { continue };
        if let Some(cpu) = parse_proc_stat(&text).and_then(|t| t.processor) {
            cpus.push(cpu);
        }
    }
    Ok(cpus)
}

/// Owner (uid) of `/proc/PID`: the process's effective user; `None` if gone.
pub fn owner_uid(sys: &SysRoot, pid: i32) -> Option<u32> {
    sys.owner_uid(format!("proc/{pid}"))
}

/// `/proc/PID/cmdline` with NULs as spaces; `Ok(None)` if gone.
pub fn read_cmdline(sys: &SysRoot, pid: i32) -> Result<Option<String>, SysError> {
    Ok(sys.read(format!("proc/{pid}/cmdline"))?.map(|t| t.replace('\0', " ").trim_end().to_string()))
}

/// `numa_pages_migrated` of the main thread from `/proc/PID/sched`
/// (kernels with scheduler debugging and NUMA balancing); `None` where the
/// kernel does not say or the process is gone.
pub fn read_numa_pages_migrated(sys: &SysRoot, pid: i32) -> Result<Option<u64>, SysError> {
    let Some(text) = sys.read(format!("proc/{pid}/sched"))? else { return Ok(None) };
    Ok(text.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == "numa_pages_migrated").then(|| v.trim().parse().ok()).flatten()
    }))
}

/// User names by uid from `etc/passwd` below the root (empty if missing).
pub fn read_user_names(sys: &SysRoot) -> Result<std::collections::BTreeMap<u32, String>, SysError> {
    let text = sys.read("etc/passwd")?.unwrap_or_default();
    Ok(text
        .lines()
        .filter_map(|l| {
            let mut f = l.split(':');
            let name = f.next()?;
            let uid = f.nth(1)?.parse().ok()?;
            Some((uid, name.to_string()))
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields() {
        let line = "1234 (my (odd) prog) S 1 1234 1234 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 2 0 100 1000000 200 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 3 0 0 0 0 0";
        let s = parse_proc_stat(line).expect("parse");
        assert_eq!((s.pid, s.comm.as_str(), s.state, s.ppid), (1234, "my (odd) prog", 'S', 1));
        assert_eq!((s.cpu_ticks, s.num_threads, s.start_ticks, s.rss_pages, s.processor), (8, 2, 100, 200, Some(3)));
        assert!(!s.is_kernel_thread());
        assert!(parse_proc_stat("garbage").is_none());
    }

    #[test]
    fn stat_numbers_beyond_the_kernel() {
        // utime + stime past 64 bits (it panicked in debug builds, wrapped
        // to a small number in release ones), and CPU 16384 as the last CPU.
        let max = u64::MAX;
        let line = format!("7 (x) R 1 7 7 0 -1 0 0 0 0 0 {max} {max} 0 0 20 0 1 0 9 0 5{} 16384 0 0", " 0".repeat(14));
        let s = parse_proc_stat(&line).expect("parse");
        assert_eq!((s.cpu_ticks, s.rss_pages, s.processor), (u64::MAX, 5, None));
        let s = parse_proc_stat(&line.replace(" 16384 ", " 16383 ")).expect("parse");
        assert_eq!(s.processor, Some(16383));
    }

    #[test]
    fn live_self() {
        let sys = SysRoot::live();
        let pid = std::process::id() as i32;
        let s = read_proc_stat(&sys, pid).expect("read").expect("exists");
        assert_eq!(s.pid, pid);
        assert!(s.rss_pages > 0 && s.processor.is_some());
        assert!(!thread_cpus(&sys, &s).expect("threads").is_empty());
        assert!(list_pids(&sys).expect("pids").contains(&pid));
        assert_eq!(owner_uid(&sys, pid), Some(unsafe { libc::geteuid() }));
        assert!(read_proc_stat(&sys, i32::MAX).expect("ok").is_none());
        assert!(read_cmdline(&sys, pid).expect("ok").is_some_and(|c| !c.is_empty()));
    }

    #[test]
    fn passwd_names() {
        let d = tempfile::tempdir().expect("tmp");
        std::fs::create_dir_all(d.path().join("etc")).expect("mkdir");
        std::fs::write(
            d.path().join("etc/passwd"),
            "root:x:0:0:root:/root:/bin/sh\nbob:x:1000:1000::/home/bob:/bin/sh\n",
        )
        .expect("write");
        let names = read_user_names(&SysRoot::at(d.path())).expect("read");
        assert_eq!(names.get(&1000).map(String::as_str), Some("bob"));
        assert_eq!(names.get(&0).map(String::as_str), Some("root"));
    }
}
