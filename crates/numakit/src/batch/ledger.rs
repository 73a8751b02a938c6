//! The host-local record of the placements numakit made for jobs, so that
//! the next job on the host knows them even when both start in the same
//! second, before either has used a CPU or touched a page.
//!
//! One small JSON file per placed process (`PID.json`) in one folder
//! ([`DEFAULT_DIR`], `/run/numakit/jobs`: gone at reboot), written
//! atomically (not durably: nothing of it should outlive a reboot); a lock file in the folder (`.lock`, `flock`) makes
//! "read the record, decide, add to it" one step for concurrent starts.
//! The record survives a crash of whoever wrote it (the files stay) and
//! forgets ended jobs by itself: an entry counts only while its process
//! runs, told by the pid *and* its start time (`/proc/PID/stat` field 22),
//! so a reused pid is never mistaken for the job. Entries of ended
//! processes are removed when found (where the folder's permissions let
//! the reader; the rest are skipped the same way).
//!
//! The folder is shared by every user's jobs on the host (a Slurm task is
//! placed as its user): it is created mode 1777 (sticky, as `/tmp`), so a
//! user adds and removes only their own entries.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::files::{self, FileLock};
use crate::procs;
use crate::sys::SysRoot;

/// Where the record lives unless told otherwise.
pub const DEFAULT_DIR: &str = "/run/numakit/jobs";

/// How long a placement waits for the others on the host to finish
/// recording before it goes on without the ledger. One placement holds
/// the lock for milliseconds, but a node's tasks start together: a burst
/// of hundreds of tasks on a busy host queues for seconds, and placing
/// blind is worse than waiting.
pub const LOCK_WAIT: Duration = Duration::from_secs(30);

/// The most read of one entry file (an entry is a few hundred bytes).
const MAX_ENTRY_BYTES: u64 = 64 << 10;

/// What one placement takes on one node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claim {
    /// Node id.
    pub node: u32,
    /// CPUs counted as taken there.
    pub cpus: u32,
    /// Memory the job said it needs there, bytes (0: not said).
    pub mem_bytes: u64,
}

/// The batch job and step a placement belongs to. A job's placements on
/// the host are its own to the job's other steps: not a load they compete
/// with, but where the job is (see [`super::task::prepare`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobStep {
    /// The job (`slurm job 42`).
    pub job: String,
    /// The step (`slurm job 42.batch`, `slurm job 42.0`).
    pub step: String,
}

impl JobStep {
    /// Whether `other` is another step of the same job.
    pub fn is_sibling_step(&self, other: &JobStep) -> bool {
        self.job == other.job && self.step != other.step
    }
}

/// The experiment arm a job runs with, as the exporter labels the job's
/// families with it (`experiment::Assignment`, as text).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArmTag {
    /// The experiment (absent: none ran; the job's own or the site's mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experiment: Option<String>,
    /// The arm (`auto`, `daemon-off`).
    pub arm: String,
    /// How it was set (`assigned`, `chosen`, `default`).
    pub source: String,
}

/// One placed process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// The placed process (the job's first process: it keeps its pid
    /// across `exec`).
    pub pid: i32,
    /// Its start time after boot in clock ticks (tells a reused pid).
    pub start_ticks: u64,
    /// What it is, for people (`slurm job 42.0 task 1`, `run --auto`).
    pub job: String,
    /// What it takes, per node.
    pub claims: Vec<Claim>,
    /// When it was placed, seconds since the epoch.
    pub placed_unix: u64,
    /// The batch job and step it belongs to (absent: a job of its own,
    /// as `run --auto` and entries written before the field existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_step: Option<JobStep>,
    /// The job's experiment arm, where one was recorded ([`Ledger::tag`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arm: Option<ArmTag>,
}

/// A record that cannot be used, in one line.
#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    /// The folder or a file in it.
    #[error("job ledger {path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// Another placement held the lock too long.
    #[error("job ledger {path}: another placement on this host held the lock for {secs} s")]
    Busy {
        /// The lock file.
        path: PathBuf,
        /// How long it waited.
        secs: u64,
    },
}

/// The record in one folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ledger {
    dir: PathBuf,
}

/// The record, locked: what is read through it stays true until it is
/// dropped (for processes placed through numakit).
#[derive(Debug)]
pub struct Locked<'a> {
    ledger: &'a Ledger,
    _lock: FileLock,
}

impl Ledger {
    /// The record in `dir` (nothing is read or created yet).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// Its folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn io(&self, path: &Path, source: std::io::Error) -> LedgerError {
        LedgerError::Io { path: path.to_path_buf(), source }
    }

    /// Creates the folder (mode 1777, shared by all users' jobs) if it is
    /// missing.
    pub fn create(&self) -> Result<(), LedgerError> {
        if self.dir.is_dir() {
            return Ok(());
        }
        fs::create_dir_all(&self.dir).map_err(|e| self.io(&self.dir, e))?;
        fs::set_permissions(&self.dir, fs::Permissions::from_mode(0o1777)).map_err(|e| self.io(&self.dir, e))
    }

    /// Locks the record (creating the folder if needed), waiting at most
    /// `wait` for another placement.
    pub fn lock(&self, wait: Duration) -> Result<Locked<'_>, LedgerError> {
        self.create()?;
        let path = self.dir.join(".lock");
        match FileLock::acquire(&path, wait) {
            Ok(Some(l)) => Ok(Locked { ledger: self, _lock: l }),
            Ok(None) => Err(LedgerError::Busy { path, secs: wait.as_secs() }),
            Err(e) => Err(self.io(&path, e)),
        }
    }

    fn entry_path(&self, pid: i32) -> PathBuf {
        self.dir.join(format!("{pid}.json"))
    }

    /// Removes the entry of `pid` (a missing one is not an error): what a
    /// job's end does where it can.
    pub fn remove(&self, pid: i32) -> Result<(), LedgerError> {
        let p = self.entry_path(pid);
        match fs::remove_file(&p) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(self.io(&p, e)),
            _ => Ok(()),
        }
    }

    /// Records `pid`'s job arm: added to its entry when it has one (of the
    /// same process), else an entry of its own claiming nothing, which
    /// counts (and is forgotten) like any other. What the exporter reads
    /// to label a job's families; where no placement is recorded (Slurm's
    /// slurmstepd, a `none` job) it is the only entry.
    pub fn tag(
        &self,
        sys: &SysRoot,
        pid: i32,
        label: &str,
        job_step: Option<&JobStep>,
        arm: ArmTag,
    ) -> Result<(), LedgerError> {
        let held = self.lock(LOCK_WAIT)?;
        let st = procs::read_proc_stat(sys, pid)
            .ok()
            .flatten()
            .ok_or_else(|| self.io(&self.entry_path(pid), std::io::Error::other("the process is gone")))?;
        let mine = self.read_all()?.into_iter().find(|e| e.pid == pid && e.start_ticks == st.start_ticks);
        let e = match mine {
            Some(e) => Entry { arm: Some(arm), ..e },
            None => Entry {
                pid,
                start_ticks: st.start_ticks,
                job: label.to_string(),
                claims: Vec::new(),
                placed_unix: crate::units::unix_now() as u64,
                job_step: job_step.cloned(),
                arm: Some(arm),
            },
        };
        held.record(&e)
    }

    /// Whether `note` is new on this host for this user: the last note
    /// given is kept in `.note.UID` in the folder, and the same note again
    /// is not new. So an error every job start meets (a missing key) is
    /// logged once, not once per job; a different one is logged again.
    /// A folder that cannot be written makes every note new.
    pub fn note_once(&self, note: &str) -> bool {
        // SAFETY: geteuid has no preconditions.
        let path = self.dir.join(format!(".note.{}", unsafe { libc::geteuid() }));
        if fs::read(&path).is_ok_and(|old| old == note.as_bytes()) {
            return false;
        }
        let _ = self.create();
        let _ = files::write_replace(&path, note.as_bytes());
        true
    }

    /// Every entry whose file reads, without checking the processes
    /// (files that are not entries are skipped).
    pub fn read_all(&self) -> Result<Vec<Entry>, LedgerError> {
        let rd = match fs::read_dir(&self.dir) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(self.io(&self.dir, e)),
        };
        let mut out = Vec::new();
        for e in rd.flatten() {
            let name = e.file_name();
            let Some(pid) = name.to_str().and_then(|n| n.strip_suffix(".json")).and_then(|p| p.parse::<i32>().ok())
            else {
                continue;
            };
            // Small regular files only (an entry is a few hundred bytes):
            // the folder is every user's, and a FIFO, a link or a huge
            // file there must not stop or flood another user's placement.
            let Ok(text) = files::read_bounded(&e.path(), MAX_ENTRY_BYTES, false) else { continue };
            if let Ok(entry) = serde_json::from_slice::<Entry>(&text) {
                if entry.pid == pid {
                    out.push(entry);
                }
            }
        }
        out.sort_by_key(|e| e.pid);
        Ok(out)
    }
}

/// Whether the process of `e` still runs (same pid, same start time, not
/// a zombie), read through `sys`.
pub fn is_running(sys: &SysRoot, e: &Entry) -> bool {
    matches!(procs::read_proc_stat(sys, e.pid), Ok(Some(st)) if st.start_ticks == e.start_ticks && st.state != 'Z')
}

impl Locked<'_> {
    /// The entries of processes that still run; the files of ended ones
    /// are removed (where the folder lets this user).
    pub fn live(&self, sys: &SysRoot) -> Result<Vec<Entry>, LedgerError> {
        let mut live = Vec::new();
        for e in self.ledger.read_all()? {
            if is_running(sys, &e) {
                live.push(e);
            } else {
                let _ = fs::remove_file(self.ledger.entry_path(e.pid));
            }
        }
        Ok(live)
    }

    /// Adds (or replaces) the entry of `e.pid`.
    pub fn record(&self, e: &Entry) -> Result<(), LedgerError> {
        let p = self.ledger.entry_path(e.pid);
        let text = serde_json::to_vec(e).map_err(|x| self.ledger.io(&p, std::io::Error::other(x)))?;
        // Atomic, not durable: the ledger lives in /run (gone at reboot) and
        // every reader checks an entry's process, so an fsync would only cost
        // each job start milliseconds where /run is on disk.
        files::write_replace(&p, &text).map_err(|x| self.ledger.io(&p, x))
    }

    /// Removes the entry of `pid`.
    pub fn remove(&self, pid: i32) -> Result<(), LedgerError> {
        self.ledger.remove(pid)
    }
}

/// The arm of the job a cgroup holds, from the ledger's `entries` (live
/// ones, [`Locked::live`] or [`is_running`]): the entry of the Slurm job
/// `slurm_job` (its slurmstepd's), else one whose process is among
/// `pids` (a wrapper's job). `None` when no entry carries an arm.
pub fn arm_of<'a>(entries: &'a [Entry], slurm_job: Option<u64>, pids: &[i32]) -> Option<&'a ArmTag> {
    let with_arm = || entries.iter().filter(|e| e.arm.is_some());
    let by_job = slurm_job.and_then(|j| {
        let name = format!("slurm job {j}");
        with_arm().find(|e| e.job_step.as_ref().is_some_and(|s| s.job == name))
    });
    by_job.or_else(|| with_arm().find(|e| pids.contains(&e.pid))).and_then(|e| e.arm.as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(pid: i32, start: u64) -> Entry {
        Entry {
            pid,
            start_ticks: start,
            job: "test".into(),
            claims: vec![Claim { node: 1, cpus: 2, mem_bytes: 1 << 30 }],
            placed_unix: 1,
            job_step: None,
            arm: None,
        }
    }

    fn proc_root(d: &Path, pid: i32, start: u64, state: char) {
        let p = d.join(format!("proc/{pid}"));
        fs::create_dir_all(&p).unwrap();
        // Fields 1..24: pid (comm) state ppid ... starttime (22) ... rss (24).
        let line = format!("{pid} (job) {state} 1 0 0 0 0 0 0 0 0 0 5 5 0 0 20 0 1 0 {start} 0 10\n");
        fs::write(p.join("stat"), line).unwrap();
    }

    #[test]
    fn live_entries_stay_ended_and_reused_pids_are_forgotten() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("root");
        proc_root(&root, 10, 500, 'S'); // runs
        proc_root(&root, 11, 999, 'S'); // pid reused: another start time
        proc_root(&root, 12, 700, 'Z'); // ended, not reaped yet
        let sys = SysRoot::at(&root);
        let l = Ledger::new(d.path().join("jobs"));
        let g = l.lock(Duration::from_millis(50)).unwrap();
        for e in [entry(10, 500), entry(11, 600), entry(12, 700), entry(13, 800)] {
            g.record(&e).unwrap();
        }
        assert_eq!(g.live(&sys).unwrap(), vec![entry(10, 500)]);
        // The ended ones' files are gone; the live one's stays.
        assert_eq!(l.read_all().unwrap(), vec![entry(10, 500)]);
        let mode = fs::metadata(l.dir()).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode, 0o1777);
    }

    #[test]
    fn garbage_and_misnamed_files_are_not_entries() {
        let d = tempfile::tempdir().unwrap();
        let l = Ledger::new(d.path());
        fs::write(d.path().join("5.json"), "not json").unwrap();
        fs::write(d.path().join("6.json"), serde_json::to_vec(&entry(7, 1)).unwrap()).unwrap();
        fs::write(d.path().join("notes.txt"), "x").unwrap();
        fs::write(d.path().join("8.json"), serde_json::to_vec(&entry(8, 1)).unwrap()).unwrap();
        assert_eq!(l.read_all().unwrap(), vec![entry(8, 1)]);
        assert!(Ledger::new(d.path().join("missing")).read_all().unwrap().is_empty());
    }

    #[test]
    fn an_entry_without_its_job_step_reads_and_one_with_it_round_trips() {
        let old = r#"{"pid":8,"start_ticks":1,"job":"run --auto","claims":[],"placed_unix":1}"#;
        let e: Entry = serde_json::from_str(old).unwrap();
        assert_eq!(e.job_step, None);
        assert_eq!(serde_json::to_string(&e).unwrap(), old, "no field written for None");
        let step = JobStep { job: "slurm job 4".into(), step: "slurm job 4.batch".into() };
        let with = Entry { job_step: Some(step.clone()), ..e };
        let back: Entry = serde_json::from_str(&serde_json::to_string(&with).unwrap()).unwrap();
        assert_eq!(back, with);
        let other = |job: &str, s: &str| JobStep { job: job.into(), step: s.into() };
        assert!(step.is_sibling_step(&other("slurm job 4", "slurm job 4.0")));
        assert!(!step.is_sibling_step(&other("slurm job 4", "slurm job 4.batch")), "the same step");
        assert!(!step.is_sibling_step(&other("slurm job 5", "slurm job 5.0")), "another job");
    }

    #[test]
    fn an_arm_is_added_to_a_placement_or_recorded_alone() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("root");
        proc_root(&root, 10, 500, 'S');
        proc_root(&root, 11, 600, 'S');
        let sys = SysRoot::at(&root);
        let l = Ledger::new(d.path().join("jobs"));
        l.lock(Duration::from_millis(50)).unwrap().record(&entry(10, 500)).unwrap();
        let tag = ArmTag { experiment: Some("q".into()), arm: "auto".into(), source: "assigned".into() };
        l.tag(&sys, 10, "x", None, tag.clone()).unwrap();
        let step = JobStep { job: "slurm job 4".into(), step: "slurm job 4.0".into() };
        l.tag(&sys, 11, "slurm job 4.0 arm", Some(&step), tag.clone()).unwrap();
        let all = l.read_all().unwrap();
        assert_eq!(all[0], Entry { arm: Some(tag.clone()), ..entry(10, 500) }, "the placement kept, the arm added");
        assert_eq!((all[1].start_ticks, all[1].claims.len()), (600, 0));
        assert_eq!((all[1].job_step.as_ref(), all[1].arm.as_ref()), (Some(&step), Some(&tag)));
        assert!(l.tag(&sys, 12, "gone", None, tag).is_err(), "a process that is not there");
        // Written without the field when there is none; read back alike.
        assert!(!serde_json::to_string(&entry(1, 1)).unwrap().contains("arm"));
    }

    #[test]
    fn the_arm_of_a_job_by_slurm_job_or_by_pid() {
        let tag = |arm: &str| ArmTag { experiment: Some("q".into()), arm: arm.into(), source: "assigned".into() };
        let step = JobStep { job: "slurm job 4".into(), step: "slurm job 4.0".into() };
        let entries = vec![
            Entry { arm: Some(tag("auto")), job_step: Some(step), ..entry(10, 1) },
            Entry { arm: Some(tag("none")), ..entry(20, 1) },
            entry(30, 1),
        ];
        assert_eq!(arm_of(&entries, Some(4), &[]).map(|t| t.arm.as_str()), Some("auto"));
        assert_eq!(arm_of(&entries, Some(5), &[7, 20]).map(|t| t.arm.as_str()), Some("none"));
        assert_eq!(arm_of(&entries, None, &[20]).map(|t| t.arm.as_str()), Some("none"));
        assert_eq!(arm_of(&entries, None, &[30]), None, "an entry without an arm");
        assert_eq!(arm_of(&entries, Some(44), &[]), None);
    }

    #[test]
    fn a_note_is_new_once() {
        let d = tempfile::tempdir().unwrap();
        let l = Ledger::new(d.path().join("jobs"));
        assert!(l.note_once("key /k: missing"));
        assert!(!l.note_once("key /k: missing"));
        assert!(l.note_once("key /k: 5 bytes"));
        assert!(l.note_once("key /k: missing"), "a change back is new again");
        assert!(Ledger::new("/proc/no/such").note_once("x") && Ledger::new("/proc/no/such").note_once("x"));
    }

    #[test]
    fn a_second_placement_waits_for_the_lock() {
        let d = tempfile::tempdir().unwrap();
        let l = Ledger::new(d.path());
        let held = l.lock(Duration::from_millis(10)).unwrap();
        let e = l.lock(Duration::from_millis(20)).unwrap_err();
        assert!(e.to_string().contains("another placement on this host held the lock"), "{e}");
        drop(held);
        l.lock(Duration::from_millis(10)).unwrap();
    }
}
