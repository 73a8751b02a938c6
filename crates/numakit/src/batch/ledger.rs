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
//! user adds and removes only their own entries. Every name in it is
//! opened by [`crate::files::shared`]'s rule (no link followed, no FIFO
//! waited on, bounded reads, new files created exclusively under names
//! nobody can guess, the lock an `flock` on the folder itself), and an
//! entry speaks for its process only when root or the process's owner
//! wrote it ([`Recorded`]).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::files::{self, DirLock, SharedDir};
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

/// The most read of a note file (a note is one line of a message).
const MAX_NOTE_BYTES: u64 = 4 << 10;

/// The folder's mode when numakit creates it: every user's jobs write
/// there, each only their own entries (sticky).
pub const DIR_MODE: u32 = 0o1777;

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

/// An entry as read, with the owner of its file: what a reader may take
/// from it. Only entries written by root or by their process's owner are
/// read at all ([`Ledger::read_all`]); root's alone speak for a batch job
/// by its name ([`arm_of`]), and a placement counts the entries of its own
/// job's other steps apart only when its own user wrote them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    /// The entry.
    pub entry: Entry,
    /// Its file's owner (uid).
    pub owner: u32,
}

/// A record that cannot be used, in one line.
#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    /// The folder or a file in it.
    #[error("job ledger {}: {source}", crate::text::path(path))]
    Io {
        /// The path.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// Another placement held the lock too long.
    #[error("job ledger {}: another placement on this host held the lock for {secs} s", crate::text::path(path))]
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
    dir: SharedDir,
    _lock: DirLock,
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
        self.open_created().map(|_| ())
    }

    fn open_created(&self) -> Result<SharedDir, LedgerError> {
        SharedDir::create(&self.dir, DIR_MODE).map_err(|e| self.io(&self.dir, e))
    }

    /// What is wrong with the folder for every user's jobs
    /// ([`files::folder_problems`]), creating it first (root's, 1777) when
    /// it is missing: one line, `None` when it is as it should be. For a
    /// site's log at start (slurmd), instead of a line in every job's
    /// output.
    pub fn check(&self) -> Option<String> {
        use std::os::unix::fs::MetadataExt;
        let problems = match self.open_created().and_then(|d| d.metadata().map_err(|e| self.io(&self.dir, e))) {
            Ok(m) => files::folder_problems(m.uid(), m.mode(), true),
            Err(e) => return Some(e.to_string()),
        };
        (!problems.is_empty()).then(|| format!("job ledger {}: {}", crate::text::path(&self.dir), problems.join("; ")))
    }

    /// The folder, open; `None` when there is none.
    fn open(&self) -> Result<Option<SharedDir>, LedgerError> {
        match SharedDir::open(&self.dir) {
            Ok(d) => Ok(Some(d)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(self.io(&self.dir, e)),
        }
    }

    /// Locks the record (creating the folder if needed), waiting at most
    /// `wait` for another placement. The lock is the folder's own
    /// ([`SharedDir::lock`]): no write access is needed to take it, and no
    /// file in the folder can stand in for it.
    pub fn lock(&self, wait: Duration) -> Result<Locked<'_>, LedgerError> {
        let dir = self.open_created()?;
        match dir.lock(wait) {
            Ok(Some(l)) => Ok(Locked { ledger: self, dir, _lock: l }),
            Ok(None) => Err(LedgerError::Busy { path: self.dir.clone(), secs: wait.as_secs() }),
            Err(e) => Err(self.io(&self.dir, e)),
        }
    }

    fn entry_path(&self, pid: i32) -> PathBuf {
        self.dir.join(entry_name(pid))
    }

    /// Removes the entry of `pid` (a missing one is not an error): what a
    /// job's end does where it can.
    pub fn remove(&self, pid: i32) -> Result<(), LedgerError> {
        match self.open()? {
            Some(dir) => dir.remove(entry_name(pid)).map_err(|e| self.io(&self.entry_path(pid), e)),
            None => Ok(()),
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
        let mine =
            held.read(sys)?.into_iter().map(|r| r.entry).find(|e| e.pid == pid && e.start_ticks == st.start_ticks);
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
    /// A note file another user wrote does not count, and a folder that
    /// cannot be written makes every note new.
    pub fn note_once(&self, note: &str) -> bool {
        // SAFETY: geteuid has no preconditions.
        let me = unsafe { libc::geteuid() };
        let name = format!(".note.{me}");
        let Ok(dir) = self.open_created() else { return true };
        if dir.read(&name, MAX_NOTE_BYTES).is_ok_and(|f| f.owner == me && f.bytes == note.as_bytes()) {
            return false;
        }
        let _ = dir.replace(&name, note.as_bytes(), 0o644, false);
        true
    }

    /// Every entry whose file reads and may speak for its process (root's,
    /// or its process's owner's; see [`Recorded`]), without checking that
    /// the processes run (files that are not entries are skipped).
    pub fn read_all(&self, sys: &SysRoot) -> Result<Vec<Recorded>, LedgerError> {
        match self.open()? {
            Some(dir) => read_entries(self, &dir, sys),
            None => Ok(Vec::new()),
        }
    }
}

fn entry_name(pid: i32) -> String {
    format!("{pid}.json")
}

/// The entries in `dir` (see [`Ledger::read_all`]).
fn read_entries(ledger: &Ledger, dir: &SharedDir, sys: &SysRoot) -> Result<Vec<Recorded>, LedgerError> {
    let names = dir.names().map_err(|e| ledger.io(&ledger.dir, e))?;
    let mut out = Vec::new();
    for (name, _) in names {
        let Some(pid) = name.to_str().and_then(|n| n.strip_suffix(".json")).and_then(|p| p.parse::<i32>().ok()) else {
            continue;
        };
        // Small regular files only (an entry is a few hundred bytes): the
        // folder is every user's, and a FIFO, a link or a huge file there
        // must not stop or flood another user's placement.
        let Ok(found) = dir.read(&name, MAX_ENTRY_BYTES) else { continue };
        let Ok(entry) = serde_json::from_slice::<Entry>(&found.bytes) else { continue };
        if entry.pid == pid && may_speak_for(sys, pid, found.owner) {
            out.push(Recorded { entry, owner: found.owner });
        }
    }
    out.sort_by_key(|r| r.entry.pid);
    Ok(out)
}

/// Whether a file `owner` wrote may speak for process `pid`: root's may,
/// and its process's owner's (the owner of `/proc/PID`). An entry of a
/// process that is gone is read (to be found ended and removed).
fn may_speak_for(sys: &SysRoot, pid: i32, owner: u32) -> bool {
    owner == 0 || procs::pidstat::owner_uid(sys, pid).is_none_or(|uid| uid == owner)
}

/// Whether the process of `e` still runs (same pid, same start time, not
/// a zombie), read through `sys`.
pub fn is_running(sys: &SysRoot, e: &Entry) -> bool {
    matches!(procs::read_proc_stat(sys, e.pid), Ok(Some(st)) if st.start_ticks == e.start_ticks && st.state != 'Z')
}

impl Locked<'_> {
    /// Every entry that reads ([`Ledger::read_all`]).
    pub fn read(&self, sys: &SysRoot) -> Result<Vec<Recorded>, LedgerError> {
        read_entries(self.ledger, &self.dir, sys)
    }

    /// The entries of processes that still run; the files of ended ones
    /// are removed (where the folder lets this user), as are temporary
    /// files whose writer was killed.
    pub fn live(&self, sys: &SysRoot) -> Result<Vec<Recorded>, LedgerError> {
        let mut live = Vec::new();
        for r in self.read(sys)? {
            if is_running(sys, &r.entry) {
                live.push(r);
            } else {
                let _ = self.dir.remove(entry_name(r.entry.pid));
            }
        }
        for (name, _) in self.dir.names().unwrap_or_default() {
            let writer = name.to_str().and_then(|n| n.strip_prefix('.')).and_then(|n| n.split_once(".tmp."));
            let dead = writer
                .and_then(|(target, _)| files::temp_writer(&name, target.as_ref()))
                .is_some_and(|pid| i32::try_from(pid).is_ok_and(|p| matches!(procs::read_proc_stat(sys, p), Ok(None))));
            if dead {
                let _ = self.dir.remove(&name);
            }
        }
        Ok(live)
    }

    /// Adds (or replaces) the entry of `e.pid`: a new file created
    /// exclusively and renamed over the old one ([`SharedDir::replace`]).
    pub fn record(&self, e: &Entry) -> Result<(), LedgerError> {
        let p = self.ledger.entry_path(e.pid);
        let text = serde_json::to_vec(e).map_err(|x| self.ledger.io(&p, std::io::Error::other(x)))?;
        // Atomic, not durable: the ledger lives in /run (gone at reboot) and
        // every reader checks an entry's process, so an fsync would only cost
        // each job start milliseconds where /run is on disk.
        self.dir.replace(entry_name(e.pid), &text, 0o644, false).map_err(|x| self.ledger.io(&p, x))
    }

    /// Removes the entry of `pid`.
    pub fn remove(&self, pid: i32) -> Result<(), LedgerError> {
        self.dir.remove(entry_name(pid)).map_err(|e| self.ledger.io(&self.ledger.entry_path(pid), e))
    }
}

/// The arm of the job a cgroup holds, from the ledger's `entries` (live
/// ones, [`Locked::live`] or [`is_running`]): the entry of the Slurm job
/// `slurm_job` (its slurmstepd's, root's: a user's entry does not speak
/// for a job by name), else one whose process is among `pids` (a
/// wrapper's job). `None` when no entry carries an arm.
pub fn arm_of<'a>(entries: &'a [Recorded], slurm_job: Option<u64>, pids: &[i32]) -> Option<&'a ArmTag> {
    let with_arm = || entries.iter().filter(|r| r.entry.arm.is_some());
    let by_job = slurm_job.and_then(|j| {
        let name = format!("slurm job {j}");
        with_arm().find(|r| r.owner == 0 && r.entry.job_step.as_ref().is_some_and(|s| s.job == name))
    });
    by_job.or_else(|| with_arm().find(|r| pids.contains(&r.entry.pid))).and_then(|r| r.entry.arm.as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::PermissionsExt;

    fn entries(r: Vec<Recorded>) -> Vec<Entry> {
        r.into_iter().map(|r| r.entry).collect()
    }

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
        assert_eq!(entries(g.live(&sys).unwrap()), vec![entry(10, 500)]);
        // The ended ones' files are gone; the live one's stays.
        assert_eq!(entries(l.read_all(&sys).unwrap()), vec![entry(10, 500)]);
        let mode = fs::metadata(l.dir()).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode, 0o1777);
    }

    #[test]
    fn garbage_and_misnamed_files_are_not_entries() {
        let d = tempfile::tempdir().unwrap();
        let l = Ledger::new(d.path());
        let sys = SysRoot::at(d.path().join("no-proc"));
        fs::write(d.path().join("5.json"), "not json").unwrap();
        fs::write(d.path().join("6.json"), serde_json::to_vec(&entry(7, 1)).unwrap()).unwrap();
        fs::write(d.path().join("notes.txt"), "x").unwrap();
        fs::write(d.path().join("8.json"), serde_json::to_vec(&entry(8, 1)).unwrap()).unwrap();
        assert_eq!(entries(l.read_all(&sys).unwrap()), vec![entry(8, 1)]);
        assert!(Ledger::new(d.path().join("missing")).read_all(&sys).unwrap().is_empty());
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
        let all = entries(l.read_all(&sys).unwrap());
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
        let root = |entry| Recorded { entry, owner: 0 };
        let entries = vec![
            root(Entry { arm: Some(tag("auto")), job_step: Some(step.clone()), ..entry(10, 1) }),
            root(Entry { arm: Some(tag("none")), ..entry(20, 1) }),
            root(entry(30, 1)),
        ];
        assert_eq!(arm_of(&entries, Some(4), &[]).map(|t| t.arm.as_str()), Some("auto"));
        assert_eq!(arm_of(&entries, Some(5), &[7, 20]).map(|t| t.arm.as_str()), Some("none"));
        assert_eq!(arm_of(&entries, None, &[20]).map(|t| t.arm.as_str()), Some("none"));
        assert_eq!(arm_of(&entries, None, &[30]), None, "an entry without an arm");
        assert_eq!(arm_of(&entries, Some(44), &[]), None);
        // A user's entry names a job: it does not speak for the job by its
        // name (slurmstepd's, root's, does), only for the user's own pid.
        let forged = vec![Recorded {
            entry: Entry { arm: Some(tag("none")), job_step: Some(step), ..entry(40, 1) },
            owner: 1000,
        }];
        assert_eq!(arm_of(&forged, Some(4), &[]), None);
        assert_eq!(arm_of(&forged, Some(4), &[40]).map(|t| t.arm.as_str()), Some("none"));
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

    #[test]
    fn a_planted_name_never_leads_a_record_out_of_the_folder() {
        let d = tempfile::tempdir().unwrap();
        let l = Ledger::new(d.path().join("jobs"));
        l.create().unwrap();
        let victim = d.path().join("root-file");
        fs::write(&victim, "precious").unwrap();
        // The old scheme's temporary name, and the entry's own name.
        std::os::unix::fs::symlink(&victim, l.dir().join(format!(".10.json.tmp.{}", std::process::id()))).unwrap();
        std::os::unix::fs::symlink(&victim, l.dir().join("10.json")).unwrap();
        l.lock(Duration::from_millis(50)).unwrap().record(&entry(10, 500)).unwrap();
        assert_eq!(fs::read_to_string(&victim).unwrap(), "precious");
        assert!(fs::symlink_metadata(l.dir().join("10.json")).unwrap().is_file());
    }

    #[test]
    fn a_note_file_made_a_fifo_or_a_flood_is_neither_waited_on_nor_read() {
        for plant in ["fifo", "zero"] {
            let d = tempfile::tempdir().unwrap();
            let l = Ledger::new(d.path().join("jobs"));
            l.create().unwrap();
            // SAFETY: geteuid has no preconditions.
            let note = l.dir().join(format!(".note.{}", unsafe { libc::geteuid() }));
            if plant == "fifo" {
                let c = std::ffi::CString::new(note.to_str().unwrap()).unwrap();
                // SAFETY: mkfifo with a NUL-terminated path.
                assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o666) }, 0);
            } else {
                std::os::unix::fs::symlink("/dev/zero", &note).unwrap();
            }
            let t = std::time::Instant::now();
            assert!(l.note_once("key /k: missing"), "{plant}");
            assert!(t.elapsed() < Duration::from_secs(2), "{plant}: waited {:?}", t.elapsed());
            assert!(!l.note_once("key /k: missing"), "{plant}: the note replaced the planted name");
        }
    }

    #[test]
    fn an_entry_speaks_for_its_process_only_when_root_or_its_owner_wrote_it() {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("needs root to give files other owners");
            assert!(std::env::var_os("CI").is_none(), "CI runs as root");
            return;
        }
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("root");
        proc_root(&root, 10, 500, 'S'); // root's process
        proc_root(&root, 11, 600, 'S'); // user 65534's process
        std::os::unix::fs::chown(root.join("proc/11"), Some(65534), None).unwrap();
        let sys = SysRoot::at(&root);
        let l = Ledger::new(d.path().join("jobs"));
        let g = l.lock(Duration::from_millis(50)).unwrap();
        g.record(&entry(10, 500)).unwrap();
        g.record(&entry(11, 600)).unwrap();
        let pids = |r: Vec<Recorded>| r.iter().map(|r| (r.entry.pid, r.owner)).collect::<Vec<_>>();
        assert_eq!(pids(g.live(&sys).unwrap()), vec![(10, 0), (11, 0)], "root's entries speak for anybody");
        // User 65534 wrote both: only its own process's entry is read.
        for f in ["10.json", "11.json"] {
            std::os::unix::fs::chown(l.dir().join(f), Some(65534), None).unwrap();
        }
        assert_eq!(pids(g.live(&sys).unwrap()), vec![(11, 65534)]);
        assert!(l.dir().join("10.json").exists(), "a forged entry of a live process is left, not trusted");
    }

    #[test]
    fn a_ledger_folder_is_made_as_documented_or_said_wrong_in_one_line() {
        let d = tempfile::tempdir().unwrap();
        let l = Ledger::new(d.path().join("run/numakit/jobs"));
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        assert_eq!(l.check().is_none(), root, "made 1777 (root's only where root made it): {:?}", l.check());
        assert_eq!(fs::metadata(l.dir()).unwrap().permissions().mode() & 0o7777, 0o1777);
        fs::set_permissions(l.dir(), fs::Permissions::from_mode(0o755)).unwrap();
        let said = l.check().expect("a problem");
        assert!(
            said.contains("/run/numakit/jobs: ") && said.contains("mode 0755: other users' jobs cannot write in it"),
            "{said}"
        );
        assert!(!said.contains('\n'));
    }
}
