//! Processes as the kernel shows them under `/proc/PID`: `status`
//! (allowed CPUs and nodes), `task/TID/stat` (last CPU of each thread) and
//! `numa_maps` (memory per mapping and node, and each mapping's policy),
//! and the cheap files every scan starts from ([`pidstat`]: `stat`, the
//! process list, owner, `cmdline`, `sched`), and its cgroup ([`cgroup`]).
//! Read through [`SysRoot`]; a process that has exited is `Ok(None)`, not
//! an error.

pub mod cgroup;
pub mod counters;
pub mod numa_maps;
pub mod pidstat;
#[cfg(test)]
mod proptests;

use crate::sets::{CpuSet, NodeSet, MAX_CPUS, MAX_NODES};
use crate::sys::{SysError, SysRoot};

pub use numa_maps::{KindView, MappingKind, MappingView, NumaMapping};
pub use pidstat::{list_pids, parse_proc_stat, read_proc_stat, thread_cpus, ProcStat};

/// What `/proc/PID/status` says about placement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    /// `Name`.
    pub name: String,
    /// `Cpus_allowed_list`.
    pub cpus_allowed: CpuSet,
    /// `Mems_allowed_list`.
    pub mems_allowed: NodeSet,
    /// `Threads`.
    pub threads: u64,
    /// `VmRSS` in bytes (0 for kernel threads).
    pub rss_bytes: u64,
}

/// One thread's `stat` (`/proc/PID/task/TID/stat`).
pub fn read_task_stat(sys: &SysRoot, pid: i32, tid: i32) -> Result<Option<ProcStat>, SysError> {
    Ok(sys.read(format!("proc/{pid}/task/{tid}/stat"))?.and_then(|t| parse_proc_stat(&t)))
}

/// How long one thread has waited for a CPU, nanoseconds (the second
/// field of `/proc/PID/task/TID/schedstat`; `None` without schedstats).
pub fn read_task_run_delay(sys: &SysRoot, pid: i32, tid: i32) -> Result<Option<u64>, SysError> {
    Ok(sys.read(format!("proc/{pid}/task/{tid}/schedstat"))?.and_then(|s| parse_run_delay(&s)))
}

/// The run-queue wait in `schedstat` text: its second field ("on-CPU
/// ns, run-delay ns, time slices").
pub fn parse_run_delay(text: &str) -> Option<u64> {
    text.split_whitespace().nth(1)?.parse().ok()
}

/// Parses `/proc/PID/status` text; `None` where [`read_status`] says why.
pub fn parse_status(text: &str) -> Option<Status> {
    status(text).ok()
}

/// `/proc/PID/status` text as a [`Status`], or what is wrong with it: a
/// line missing, a list that is not one, or a CPU or node id no kernel can
/// have (at or above [`MAX_CPUS`], [`MAX_NODES`]). A `VmRSS` whose bytes
/// pass 64 bits is `u64::MAX`, never a wrapped number.
fn status(text: &str) -> Result<Status, String> {
    let field = |key: &str| crate::sys::status_field(text, key).map(str::trim);
    let need = |key: &str| field(key).ok_or_else(|| format!("no {key} line"));
    let kb = |key: &str| {
        field(key)
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse::<u64>().ok())
            .map_or(0, |v| v.saturating_mul(1024))
    };
    let cpus_allowed = CpuSet::parse_list(need("Cpus_allowed_list:")?).map_err(|e| e.to_string())?;
    if let Some(c) = cpus_allowed.last().filter(|&c| c >= MAX_CPUS) {
        return Err(format!(
            "Cpus_allowed_list names CPU {c}, beyond any kernel's limit (CPU ids are below {MAX_CPUS})"
        ));
    }
    let mems_allowed = NodeSet::parse_list(need("Mems_allowed_list:")?).map_err(|e| e.to_string())?;
    if let Some(n) = mems_allowed.last().filter(|&n| n >= MAX_NODES) {
        return Err(format!(
            "Mems_allowed_list names node {n}, beyond the kernel's limit (node ids are below {MAX_NODES})"
        ));
    }
    Ok(Status {
        name: need("Name:")?.to_string(),
        cpus_allowed,
        mems_allowed,
        threads: field("Threads:").and_then(|v| v.parse().ok()).unwrap_or(1),
        rss_bytes: kb("VmRSS:"),
    })
}

/// Reads `/proc/PID/status`; `Ok(None)` if the process is gone.
pub fn read_status(sys: &SysRoot, pid: i32) -> Result<Option<Status>, SysError> {
    let rel = format!("proc/{pid}/status");
    match sys.read(&rel)? {
        None => Ok(None),
        Some(t) => status(&t).map(Some).map_err(|problem| sys.invalid(&rel, problem)),
    }
}

/// The variables of `/proc/PID/environ` (`NAME=value`, NUL-separated):
/// what the process was started with (what it set later is not there).
/// Pure; entries without `=` are left out.
pub fn parse_environ(bytes: &[u8]) -> Vec<(String, String)> {
    bytes
        .split(|b| *b == 0)
        .filter_map(|e| {
            let text = String::from_utf8_lossy(e);
            let (k, v) = text.split_once('=')?;
            (!k.is_empty()).then(|| (k.to_string(), v.to_string()))
        })
        .collect()
}

/// Reads a process's environment ([`parse_environ`]); `Ok(None)` if the
/// process is gone. Only root and its owner may read it: another user's is
/// an error (EACCES).
pub fn read_environ(sys: &SysRoot, pid: i32) -> Result<Option<Vec<(String, String)>>, SysError> {
    Ok(sys.read_bytes(format!("proc/{pid}/environ"))?.map(|b| parse_environ(&b)))
}

/// Thread ids of a process (`/proc/PID/task`), sorted; empty if gone.
pub fn thread_ids(sys: &SysRoot, pid: i32) -> Result<Vec<i32>, SysError> {
    let mut ids: Vec<i32> =
        sys.list_dir(format!("proc/{pid}/task"))?.unwrap_or_default().iter().filter_map(|s| s.parse().ok()).collect();
    ids.sort_unstable();
    Ok(ids)
}

/// One thread's placement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadInfo {
    /// Thread id.
    pub tid: i32,
    /// `comm`.
    pub comm: String,
    /// CPU it last ran on (`stat` field 39).
    pub last_cpu: Option<u32>,
    /// Its affinity (`Cpus_allowed_list` of `task/TID/status`).
    pub cpus_allowed: CpuSet,
}

/// Reads every thread of a process; threads that exit meanwhile are left
/// out. `Ok(None)` if the process itself is gone.
pub fn read_threads(sys: &SysRoot, pid: i32) -> Result<Option<Vec<ThreadInfo>>, SysError> {
    if !sys.exists(format!("proc/{pid}")) {
        return Ok(None);
    }
    let mut out = Vec::new();
    for tid in thread_ids(sys, pid)? {
        let Some(stat) = sys.read(format!("proc/{pid}/task/{tid}/stat"))? else { continue };
        let Some(status) = sys.read(format!("proc/{pid}/task/{tid}/status"))? else { continue };
        let Some(stat) = parse_proc_stat(&stat) else { continue };
        let Some(st) = parse_status(&status) else { continue };
        out.push(ThreadInfo { tid, comm: stat.comm, last_cpu: stat.processor, cpus_allowed: st.cpus_allowed });
    }
    Ok(Some(out))
}

/// Reads and parses `/proc/PID/numa_maps`; `Ok(None)` if the process is
/// gone. (Reading it takes the process's mmap lock: read it only for the
/// processes a view shows.)
pub fn read_numa_maps(sys: &SysRoot, pid: i32) -> Result<Option<Vec<NumaMapping>>, SysError> {
    Ok(read_numa_maps_text(sys, pid)?.map(|t| numa_maps::parse(&t)))
}

/// Reads `/proc/PID/numa_maps` as text (for [`numa_maps::views`]);
/// `Ok(None)` if the process is gone.
pub fn read_numa_maps_text(sys: &SysRoot, pid: i32) -> Result<Option<String>, SysError> {
    sys.read_proc_file(format!("proc/{pid}/numa_maps"), 16 << 10)
}

/// One line of `/proc/PID/maps`: an address range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapRange {
    /// Start address.
    pub start: u64,
    /// End address (exclusive).
    pub end: u64,
    /// Writable (`w` in the permissions).
    pub writable: bool,
    /// Shared (`s`; private mappings show `p`).
    pub shared: bool,
}

/// Parses `/proc/PID/maps` ranges.
pub fn parse_maps(text: &str) -> Vec<MapRange> {
    text.lines()
        .filter_map(|l| {
            let (range, rest) = l.split_once(' ')?;
            let perms = rest.split(' ').next().unwrap_or("");
            let (a, b) = range.split_once('-')?;
            Some(MapRange {
                start: u64::from_str_radix(a, 16).ok()?,
                end: u64::from_str_radix(b, 16).ok()?,
                writable: perms.as_bytes().get(1) == Some(&b'w'),
                shared: perms.as_bytes().get(3) == Some(&b's'),
            })
        })
        .collect()
}

/// Reads `/proc/PID/maps`; `Ok(None)` if the process is gone.
pub fn read_maps(sys: &SysRoot, pid: i32) -> Result<Option<Vec<MapRange>>, SysError> {
    Ok(sys.read(format!("proc/{pid}/maps"))?.map(|t| parse_maps(&t)))
}

/// Resident bytes per node of a process, summed over its mappings.
pub fn bytes_per_node(maps: &[NumaMapping]) -> std::collections::BTreeMap<u32, u64> {
    let mut out = std::collections::BTreeMap::new();
    for m in maps {
        for (n, b) in m.bytes_per_node() {
            let e: &mut u64 = out.entry(n).or_default();
            *e = e.saturating_add(b);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn maps_ranges() {
        let m = super::parse_maps(
            "00400000-00452000 r-xp 00000000 08:02 173521 /usr/bin/dbus\n7ffd-7fff rw-p 0 0:0 0 [stack]\n",
        );
        assert_eq!(m.len(), 2);
        assert_eq!((m[0].start, m[0].end), (0x400000, 0x452000));
    }

    use super::*;

    #[test]
    fn environ_variables() {
        let e = parse_environ(b"SLURM_STEP_GPUS=0,1\0EMPTY=\0junk\0=x\0A=b=c\0");
        let want: Vec<(String, String)> =
            [("SLURM_STEP_GPUS", "0,1"), ("EMPTY", ""), ("A", "b=c")].map(|(k, v)| (k.into(), v.into())).into();
        assert_eq!(e, want);
    }

    #[test]
    fn stat_line_with_odd_comm() {
        let line = "1234 (my (odd) prog) S 1 1234 1234 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 2 0 100 1000000 200 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 3 0 0 0 0 0";
        let s = parse_proc_stat(line).expect("parse");
        assert_eq!(s.comm, "my (odd) prog");
        assert_eq!(s.processor, Some(3));
    }

    #[test]
    fn status_fields() {
        let t = "Name:\tsleep\nThreads:\t2\nVmRSS:\t  1024 kB\nCpus_allowed_list:\t0-3\nMems_allowed_list:\t0-1\n";
        let s = parse_status(t).expect("status");
        assert_eq!((s.name.as_str(), s.threads, s.rss_bytes), ("sleep", 2, 1 << 20));
        assert_eq!(s.cpus_allowed.to_list(), "0-3");
        assert_eq!(s.mems_allowed.to_list(), "0-1");
    }

    #[test]
    fn status_numbers_beyond_the_kernel() {
        let t = |rss: &str, cpus: &str, mems: &str| {
            format!("Name:\tx\nVmRSS:\t{rss} kB\nCpus_allowed_list:\t{cpus}\nMems_allowed_list:\t{mems}\n")
        };
        // 2^64 - 1 kB: the bytes do not fit (it wrapped, or panicked in debug builds).
        let s = parse_status(&t("18446744073709551615", "0", "0")).expect("status");
        assert_eq!(s.rss_bytes, u64::MAX);
        assert_eq!(
            status(&t("1", "0,16384", "0")),
            Err("Cpus_allowed_list names CPU 16384, beyond any kernel's limit (CPU ids are below 16384)".into())
        );
        assert_eq!(
            status(&t("1", "0-3", "1,1024")),
            Err("Mems_allowed_list names node 1024, beyond the kernel's limit (node ids are below 1024)".into())
        );
        assert_eq!(status("Name:\tx\nMems_allowed_list:\t0\n"), Err("no Cpus_allowed_list: line".into()));
        assert!(parse_status(&t("1", "0-16383", "0-1023")).is_some());
        let d = tempfile::tempdir().expect("tmp");
        std::fs::create_dir_all(d.path().join("proc/9")).expect("mkdir");
        std::fs::write(d.path().join("proc/9/status"), t("1", "3-1", "0")).expect("write");
        let e = read_status(&SysRoot::at(d.path()), 9).unwrap_err().to_string();
        assert!(e.ends_with("proc/9/status: invalid cpu list \"3-1\": range 3-1 goes backwards"), "{e}");
    }

    #[test]
    fn stat_line_cpu_beyond_the_kernel() {
        let line = |cpu: u64| format!("1 (x) S 0{} {cpu} 0 0", " 0".repeat(34));
        let parse = |cpu| parse_proc_stat(&line(cpu)).map(|s| (s.comm, s.processor));
        assert_eq!(parse(16383), Some(("x".into(), Some(16383))));
        assert_eq!(parse(16384), Some(("x".into(), None)));
    }

    #[test]
    fn proc_text_reads_whole_files() {
        let d = tempfile::tempdir().expect("tmp");
        let big: String = (0..5000).map(|i| format!("{i:x} default anon=1 N0=1\n")).collect();
        std::fs::create_dir_all(d.path().join("proc/7")).expect("mkdir");
        std::fs::write(d.path().join("proc/7/numa_maps"), &big).expect("write");
        let sys = SysRoot::at(d.path());
        assert_eq!(sys.read_proc_file("proc/7/numa_maps", 64).expect("read").as_deref(), Some(big.as_str()));
        assert_eq!(read_numa_maps(&sys, 7).expect("read").map(|m| m.len()), Some(5000));
        assert_eq!(sys.read_proc_file("proc/8/numa_maps", 64).expect("missing"), None);
        assert_eq!(sys.read_proc_file("proc/7/numa_maps/x", 64).expect("under a file"), None);
        assert!(sys.read_proc_file("proc/7", 64).is_err());
    }

    #[test]
    fn live_self_is_readable() {
        let sys = SysRoot::live();
        let pid = std::process::id() as i32;
        let st = read_status(&sys, pid).expect("read").expect("exists");
        assert!(!st.cpus_allowed.is_empty());
        let th = read_threads(&sys, pid).expect("read").expect("exists");
        assert!(th.iter().any(|t| t.tid == pid) && th.iter().all(|t| t.last_cpu.is_some()));
        assert!(read_status(&sys, i32::MAX).expect("ok").is_none());
    }
}
