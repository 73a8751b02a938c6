//! The step's NUMA report. The figures that need the tasks alive (memory
//! per node from `numa_maps`, locality) are sampled by one thread in
//! slurmstepd while the step runs; the cgroup's counters are read at its
//! start and at its end. At the end the report goes, as text, to the file
//! the user named (`--numa-report=FILE`, written with the user's file
//! permissions), and as one JSON line to the site's folder (`report=DIR`,
//! `DIR/numakit-steps.jsonl`) and to slurmd's log.
//!
//! The report is the library's ([`numakit::stats::cgroup::JobReport`],
//! [`numakit::present::cgroup`]); this module only times and routes it.
//! A step without a cgroup of its own (proctrack/linuxproc on cgroup v1)
//! gets no report, said once in the log.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use numakit::present::cgroup as present;
use numakit::stats::cgroup::{CgroupCounters, JobReport};
use numakit::sys::SysRoot;

/// How often the tasks' memory is sampled unless the site says.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(10);

/// Counters' growth since the step's start, by name.
pub type Delta = Vec<(String, u64)>;

/// The sampling thread and what it has seen.
struct Sampler {
    cgroup: String,
    start: Option<CgroupCounters>,
    last: Arc<Mutex<Option<JobReport>>>,
    stop: Arc<(Mutex<bool>, Condvar)>,
    thread: Option<JoinHandle<()>>,
}

static SAMPLER: Mutex<Option<Sampler>> = Mutex::new(None);

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The cgroup of Slurm step `step` that process `pid` is in, cut after its
/// `step_…` folder, or after the step's `user` folder where there is one
/// (cgroup v2: the tasks are in `step_0/user/task_N`, slurmstepd itself in
/// `step_0/slurm`, and its memory and CPUs are not the job's): the unified
/// hierarchy's path, else the v1 memory hierarchy's, else any other v1
/// hierarchy's that names the step (cpuset, freezer, cpuacct: a step
/// without a memory cgroup; the library reads each controller's files in
/// its own hierarchy). `None` when the process is in no folder of that step.
pub fn step_cgroup(cgroup_file: &str, step: &str) -> Option<String> {
    let folder = format!("/step_{step}");
    let mut paths: Vec<(u8, &str)> = numakit::procs::cgroup::parse_lines(cgroup_file)
        .map(|l| {
            let rank = if l.controllers.is_empty() {
                0
            } else if l.has_controller("memory") {
                1
            } else {
                2
            };
            (rank, l.path)
        })
        .collect();
    // The unified hierarchy first, where it names the step, then memory.
    paths.sort_by_key(|(rank, _)| *rank);
    paths.into_iter().find_map(|(_, path)| {
        let step = cut_after(path, &folder)?;
        let user = &path[step.len()..];
        Some(if user == "/user" || user.starts_with("/user/") { format!("{step}/user") } else { step })
    })
}

/// `path` up to and with its component `folder` (`/job_42`), or `None`
/// when no component is that folder.
pub fn cut_after(path: &str, folder: &str) -> Option<String> {
    let end = path
        .find(&format!("{folder}/"))
        .map(|i| i + folder.len())
        .or_else(|| path.ends_with(folder).then_some(path.len()))?;
    Some(path[..end].to_string())
}

/// Starts sampling `cgroup` every `interval` (once per step: later calls do
/// nothing). Reads the counters at start at once.
pub fn start(cgroup: String, interval: Duration) {
    let mut s = lock(&SAMPLER);
    if s.is_some() {
        return;
    }
    let sys = SysRoot::live();
    let first = JobReport::collect(&sys, &cgroup).ok();
    let start = first.as_ref().map(|r| r.counters.clone());
    let last = Arc::new(Mutex::new(first.filter(|r| !r.processes.is_empty())));
    let stop = Arc::new((Mutex::new(false), Condvar::new()));
    let (l, st, cg) = (last.clone(), stop.clone(), cgroup.clone());
    let thread = std::thread::Builder::new()
        .name("numakit-report".into())
        .spawn(move || loop {
            {
                let (m, cv) = &*st;
                let stopped = lock(m);
                let (stopped, _) = cv.wait_timeout(stopped, interval).unwrap_or_else(|p| p.into_inner());
                if *stopped {
                    return;
                }
            }
            // A sample with the tasks' memory replaces the last one; one
            // taken after they ended (no processes) does not.
            if let Ok(r) = JobReport::collect(&SysRoot::live(), &cg) {
                if !r.processes.is_empty() {
                    *lock(&l) = Some(r);
                }
            }
        })
        .ok();
    *s = Some(Sampler { cgroup, start, last, stop, thread });
}

/// The step's report: the last sample of its tasks' memory, with the
/// cgroup's counters now and their growth since the start. Stops the
/// sampler. `None` when nothing was sampled (no cgroup, or no sampler).
pub fn finish() -> Option<(JobReport, Option<Delta>)> {
    let mut s = lock(&SAMPLER).take()?;
    {
        let (m, cv) = &*s.stop;
        *lock(m) = true;
        cv.notify_all();
    }
    if let Some(t) = s.thread.take() {
        let _ = t.join();
    }
    let end = JobReport::collect(&SysRoot::live(), &s.cgroup).ok();
    let last = lock(&s.last).take();
    let mut report = last.or_else(|| end.clone())?;
    // The counters at the end where they can still be read; else (the
    // cgroup gone, or on cgroup v1 its memory folder gone before the
    // others) the last sample's.
    let end = end.filter(|e| e.counters.memory_stat || !report.counters.memory_stat);
    let delta = match (&end, &s.start) {
        (Some(e), Some(start)) => {
            report.counters = e.counters.clone();
            Some(e.counters.delta(start))
        }
        (None, Some(start)) if report.counters.memory_stat => Some(report.counters.delta(start)),
        _ => None,
    };
    Some((report, delta))
}

/// `%j` the job id, `%s` the step, `%N` this host, `%%` a percent sign.
pub fn expand(pattern: &str, job: u32, step: &str, host: &str) -> String {
    let mut out = String::new();
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('j') => out.push_str(&job.to_string()),
            Some('s') => out.push_str(step),
            Some('N') => out.push_str(host),
            Some('%') => out.push('%'),
            Some(o) => {
                out.push('%');
                out.push(o);
            }
            None => out.push('%'),
        }
    }
    out
}

/// Appends `text` to `path` with the job user's file permissions (the
/// calling thread's fsuid and fsgid are the user's for the open), never
/// following a symbolic link at the end of the path.
pub fn append_as(path: &Path, text: &str, uid: u32, gid: u32) -> std::io::Result<()> {
    // SAFETY: setfsuid/setfsgid change only this thread's file-system ids;
    // the previous ones are put back below whatever the open did.
    let (old_gid, old_uid) = unsafe { (libc::setfsgid(gid), libc::setfsuid(uid)) };
    // The user's own path: opened as the user, by the rule of a folder
    // others write (no link followed, no FIFO waited on: slurmstepd must
    // not hang at the step's end on a name the user planted).
    let folder = numakit::files::folder(path);
    let name = path.file_name().unwrap_or_default();
    let written = numakit::files::SharedDir::open(folder).and_then(|d| d.append_bytes(name, text.as_bytes()));
    // SAFETY: as above.
    unsafe {
        libc::setfsuid(old_uid as u32);
        libc::setfsgid(old_gid as u32);
    }
    written
}

/// Whether the calling process may append to `path` as [`append_as`]
/// would: a writable file that is not a symbolic link, or a new name in a
/// folder it may write (`access(2)` with the process's own ids; nothing is
/// created).
pub fn writable(path: &Path) -> std::io::Result<()> {
    let can = |p: &Path, mode: libc::c_int| -> std::io::Result<()> {
        let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes())
            .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
        // SAFETY: a NUL-terminated path; access only looks.
        match unsafe { libc::access(c.as_ptr(), mode) } {
            0 => Ok(()),
            _ => Err(std::io::Error::last_os_error()),
        }
    };
    match path.symlink_metadata() {
        Ok(m) if m.file_type().is_symlink() => {
            Err(std::io::Error::other("a symbolic link (the report is never written through one)"))
        }
        Ok(_) => can(path, libc::W_OK),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
            can(parent, libc::W_OK | libc::X_OK)
        }
        Err(e) => Err(e),
    }
}

/// Appends one line to the site's `DIR/numakit-steps.jsonl` (as root), as
/// the outcome records are appended: whole, by the shared-folder rule
/// ([`numakit::files::append_line`]), the folder made where missing.
pub fn append_site(dir: &Path, line: &str) -> std::io::Result<PathBuf> {
    let p = dir.join("numakit-steps.jsonl");
    numakit::files::append_line(&p, line)?;
    Ok(p)
}

/// The report as text and as its JSON line.
pub fn render(r: &JobReport, delta: Option<&[(String, u64)]>) -> (String, String) {
    (present::text(r, delta), present::json(r, delta).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_steps_cgroup_from_proc_pid_cgroup() {
        // v2: the tasks' folder (user/), without slurmstepd's (slurm/).
        let v2 = "0::/system.slice/slurmstepd.scope/job_42/step_0/user/task_1\n";
        assert_eq!(step_cgroup(v2, "0").as_deref(), Some("/system.slice/slurmstepd.scope/job_42/step_0/user"));
        assert_eq!(step_cgroup(v2, "batch"), None);
        let batch = "0::/system.slice/slurmstepd.scope/job_7/step_batch/user/task_0\n";
        assert_eq!(
            step_cgroup(batch, "batch").as_deref(),
            Some("/system.slice/slurmstepd.scope/job_7/step_batch/user")
        );
        let special = "0::/system.slice/n_slurmstepd.scope/job_4/step_0/user/task_special\n";
        assert_eq!(step_cgroup(special, "0").as_deref(), Some("/system.slice/n_slurmstepd.scope/job_4/step_0/user"));
        // A step without a user folder: the step's.
        assert_eq!(step_cgroup("0::/a/job_3/step_1/task_0\n", "1").as_deref(), Some("/a/job_3/step_1"));
        assert_eq!(step_cgroup("0::/a/job_3/step_1/username\n", "1").as_deref(), Some("/a/job_3/step_1"));
        // cgroup v1: the memory hierarchy's line; the unified one wins when it names the step.
        let v1 = "11:memory:/slurm/uid_0/job_5/step_2/task_0\n4:cpuset:/slurm/uid_0/job_5/step_2\n0::/user.slice\n";
        assert_eq!(step_cgroup(v1, "2").as_deref(), Some("/slurm/uid_0/job_5/step_2"));
        // No memory cgroup (task/cgroup without ConstrainRAMSpace, or
        // proctrack/cgroup alone): the cpuset's or the freezer's.
        let freezer = "12:freezer:/slurm/uid_0/job_5/step_2\n11:memory:/system.slice/slurmd.service\n";
        assert_eq!(step_cgroup(freezer, "2").as_deref(), Some("/slurm/uid_0/job_5/step_2"));
        assert_eq!(step_cgroup("0::/user.slice\n", "0"), None);
        assert_eq!(step_cgroup("garbage", "0"), None);
    }

    #[test]
    fn file_name_patterns() {
        assert_eq!(expand("numa-%j.%s-%N.txt", 42, "0", "wn1"), "numa-42.0-wn1.txt");
        assert_eq!(expand("100%%-%x-%", 1, "batch", "h"), "100%-%x-%");
    }

    #[test]
    fn appends_as_the_user_and_never_through_a_link() {
        let d = tempfile::tempdir().expect("tmp");
        let p = d.path().join("r.txt");
        append_as(&p, "one\n", 0, 0).expect("append");
        append_as(&p, "two\n", 0, 0).expect("append");
        assert_eq!(std::fs::read_to_string(&p).expect("read"), "one\ntwo\n");
        let link = d.path().join("link");
        std::os::unix::fs::symlink(&p, &link).expect("symlink");
        assert!(append_as(&link, "three\n", 0, 0).is_err(), "a link at the end is refused");
        // What the first task checks before the step runs, nothing created.
        assert!(writable(&p).is_ok() && writable(&d.path().join("new.txt")).is_ok());
        assert!(!d.path().join("new.txt").exists());
        assert!(writable(&link).is_err_and(|e| e.to_string().contains("symbolic link")));
        let missing = d.path().join("no/such/folder.txt");
        assert_eq!(writable(&missing).map_err(|e| e.kind()), Err(std::io::ErrorKind::NotFound));
        if unsafe { libc::geteuid() } == 0 {
            // Nobody may not write into a folder only root may write.
            let e = append_as(&d.path().join("nobody.txt"), "x", 65534, 65534).expect_err("refused");
            assert_eq!(e.kind(), std::io::ErrorKind::PermissionDenied);
        }
    }
}
