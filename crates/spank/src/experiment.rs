//! The experiment and the step's outcome record in slurmstepd: the arm of
//! the job is assigned once per step, as root, before the tasks are
//! forked ([`start`], in `slurm_spank_init_post_opt`); each task is placed
//! with it ([`mode`]) and the first hands back what it was given
//! ([`placed`]); the step's cgroup, tasks' ends and CPU time are noted as
//! they come ([`forked`], [`task_exited`]); at the step's end one JSON
//! line goes to `DIR/numakit-outcomes.jsonl` ([`finish`]).
//!
//! The assignment, the record and every reader are the library's
//! ([`numakit::experiment`], [`numakit::stats::usage`]); this adapts
//! Slurm's hooks to them. Nothing here can fail a job: any error is one
//! line in Slurm's log (an experiment's error once per host, through
//! the ledger's note) and the job gets the site's default.

use std::path::Path;
use std::sync::{Mutex, OnceLock};

use numakit::batch::ledger::{ArmTag, Ledger};
use numakit::batch::{JobMode, JobStep, Site};
use numakit::experiment::assign;
use numakit::experiment::guard::Guards;
use numakit::experiment::ids::{self, JobIds};
use numakit::experiment::outcome::{step_status, Measured, Step};
use numakit::experiment::policy::assign::{assign_with_files, Files, Start};
use numakit::experiment::policy::JobFacts;
use numakit::experiment::{key, Assignment, Design, Hardware, Numa, Placement, StepOutcome};
use numakit::files;
use numakit::stats::cgroup::CgroupDir;
use numakit::stats::usage::CgroupUsage;
use numakit::sys::SysRoot;
use numakit::units::unix_now;

use crate::ffi::{self, Item, Level, SpankHandle};
use crate::shared::SharedLine;

/// The file the records go to, in the site's `report=DIR`.
pub const OUTCOMES: &str = "numakit-outcomes.jsonl";

static DESIGN: Mutex<Option<Design>> = Mutex::new(None);
static FILES: Mutex<Option<Files>> = Mutex::new(None);
static STEP: Mutex<Option<StepState>> = Mutex::new(None);
static PLACED: OnceLock<Option<SharedLine>> = OnceLock::new();

/// What slurmstepd knows of its step.
#[derive(Debug)]
struct StepState {
    ids: JobIds,
    /// `0`, `batch`.
    step: String,
    host: String,
    assignment: Assignment,
    start_unix: f64,
    /// The step's processes' CPU time reaped before the step (RUSAGE_CHILDREN).
    rusage_start: (f64, f64),
    /// Tasks forked, and (local task id, wait status) of those ended.
    forked: u32,
    exits: Vec<(i32, i32)>,
    /// The step's cgroup and its last reading.
    cgroup: Option<CgroupDir>,
    usage: Option<CgroupUsage>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Reads the experiment's words (`slurm_spank_init`); `Err` names a bad one.
pub fn configure(words: &[String]) -> Result<(), String> {
    *lock(&DESIGN) = Design::from_words(words)?;
    Ok(())
}

/// The site's policy and guard files (`policy=`, `guard=`), read at each
/// step's start.
pub fn set_files(files: Files) {
    *lock(&FILES) = Some(files);
}

/// This host's short name.
fn host() -> String {
    let h = SysRoot::live().read("proc/sys/kernel/hostname").ok().flatten().unwrap_or_default();
    h.split('.').next().unwrap_or_default().to_string()
}

/// CPU time of this process's reaped children (user, system), seconds.
fn children_cpu() -> (f64, f64) {
    // SAFETY: an all-zero rusage is valid; getrusage writes it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid rusage the call writes.
    if unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) } != 0 {
        return (0.0, 0.0);
    }
    let s = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    (s(ru.ru_utime), s(ru.ru_stime))
}

/// The name of user `uid` (the password database, as slurmstepd itself
/// looks it up).
fn user_name(uid: u32) -> Option<String> {
    let mut buf = vec![0 as libc::c_char; 16 * 1024];
    // SAFETY: an all-zero passwd is valid; getpwuid_r fills it and points
    // its strings into `buf`, which outlives their use below.
    let mut pw: libc::passwd = unsafe { std::mem::zeroed() };
    let mut out: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: every pointer is valid for the call and the lengths match.
    let rc = unsafe { libc::getpwuid_r(uid, &mut pw, buf.as_mut_ptr(), buf.len(), &mut out) };
    if rc != 0 || out.is_null() || pw.pw_name.is_null() {
        return None;
    }
    // SAFETY: pw_name points to a NUL-terminated string in `buf`.
    Some(unsafe { std::ffi::CStr::from_ptr(pw.pw_name) }.to_string_lossy().into_owned())
}

/// The job's names: its environment, with Slurm's items where it lacks them.
fn job_ids(spank: SpankHandle, job: u32) -> JobIds {
    let var = |k: &str| ffi::getenv(spank, k);
    let mut ids = ids::slurm(&var).unwrap_or_else(|| JobIds {
        batch_system: "slurm".into(),
        job: job.to_string(),
        ..JobIds::default()
    });
    // slurmstepd sets SLURM_JOB_USER in the task's environment only, after
    // this hook: the job's uid's name instead.
    if ids.user.is_none() {
        ids.user = ffi::get_u32(spank, Item::JobUid).and_then(user_name);
    }
    if ids.array_job.is_none() {
        // Outside an array Slurm gives the job's own id and NO_VAL.
        let task = ffi::get_u32(spank, Item::JobArrayTaskId).filter(|t| *t < 0xffff_fffe);
        if let (Some(a), Some(t)) = (ffi::get_u32(spank, Item::JobArrayId).filter(|a| *a != 0), task) {
            ids.array_job = Some(a.to_string());
            ids.array_task = Some(t);
        }
    }
    ids
}

/// `slurm_spank_init_post_opt` in slurmstepd (root, before the tasks are
/// forked): the step's arm from the experiment, the job's own `--numa`
/// (`asked`) or the site's default; the arm in the ledger for the
/// exporter; the page a task hands its placement back through.
pub fn start(spank: SpankHandle, job: u32, step: String, asked: Option<JobMode>, site: &Site) {
    let start_unix = unix_now();
    let mut ids = job_ids(spank, job);
    let host = host();
    let design = lock(&DESIGN).clone();
    // The cluster the arm is drawn for: the experiment's cluster= first.
    if let Some(c) = design.as_ref().and_then(|d| d.cluster.clone()) {
        ids.cluster = Some(c);
    }
    let ledger = Ledger::new(&site.ledger);
    let subject = assign::Subject { cluster: ids.cluster.as_deref(), job: &ids.job, host: &host, start_unix };
    let var = |k: &str| ffi::getenv(spank, k);
    let facts = JobFacts {
        cpus: ffi::get_u16(spank, Item::JobNcpus).map(u32::from).filter(|c| *c > 0),
        mem_bytes: ffi::get_u64(spank, Item::StepAllocMem).filter(|m| *m > 0).map(|mib| mib.saturating_mul(1 << 20)),
        ..JobFacts::from_ids(&ids).with_slurm_env(&var)
    };
    let files = lock(&FILES).clone().unwrap_or_default();
    let start = Start {
        subject: &subject,
        chosen: asked.as_ref(),
        default: &site.default,
        site: design.as_ref(),
        guards: &Guards::default(),
        read_key: &|p| key::read_key(p, true),
        stop_present: &|p| p.exists(),
    };
    let (a, notes) = assign_with_files(&files, &facts, &start);
    let who = format!("slurm job {}.{step}", ids.job);
    for n in notes {
        // A stop is the site's own doing: said once, not as an error.
        let stopped = n.contains(": stopped by the site") || n.contains(": ended at ");
        let level = match (ledger.note_once(&n), stopped) {
            (true, false) => Level::Error,
            (true, true) => Level::Info,
            (false, _) => Level::Verbose,
        };
        ffi::log(level, &format!("numakit: {who}: {n}"));
    }
    if design.is_some() || a.experiment.is_some() || a.class.is_some() {
        let name = a.experiment.as_deref().unwrap_or("none");
        let class = a.class.as_deref().map_or_else(String::new, |c| format!("class {c}: "));
        ffi::log(
            Level::Info,
            &format!("numakit: {who}: {class}experiment {name}: arm {} ({})", a.arm, a.source.name()),
        );
        let tag = ArmTag { experiment: a.experiment.clone(), arm: a.arm.clone(), source: a.source.name().into() };
        let js = JobStep { job: format!("slurm job {}", ids.job), step: who.clone() };
        let pid = std::process::id() as i32;
        if let Err(e) = ledger.tag(&SysRoot::live(), pid, &format!("{who} arm"), Some(&js), tag) {
            ffi::log(Level::Verbose, &format!("numakit: {who}: experiment {name}: {e}"));
        }
    }
    PLACED.get_or_init(SharedLine::new);
    *lock(&STEP) = Some(StepState {
        ids,
        step,
        host,
        assignment: a,
        start_unix,
        rusage_start: children_cpu(),
        forked: 0,
        exits: Vec::new(),
        cgroup: None,
        usage: None,
    });
}

/// The mode the step's tasks get, and whether the job asked for it;
/// `None` when [`start`] did not run (then the caller decides as before).
pub fn mode() -> Option<(JobMode, bool)> {
    let s = lock(&STEP);
    let a = &s.as_ref()?.assignment;
    Some((a.mode.clone(), a.source == numakit::experiment::ArmSource::Chosen))
}

/// Whether the step's arm is the site's draw or decision (an experiment's
/// arm, a policy's decided mode, holdout or guard), which never fails a job.
pub fn assigned() -> bool {
    lock(&STEP).as_ref().is_some_and(|s| s.assignment.source.by_site())
}

/// In a task after its placement: what it was given (`cpus` a list,
/// `memory` a policy), handed to slurmstepd (the first task's only).
pub fn placed(cpus: &str, memory: &str) {
    if let Some(Some(page)) = PLACED.get() {
        page.write(&format!("{cpus}\t{memory}"));
    }
}

/// `slurm_spank_task_post_fork`: a task was forked; `cgroup` is the
/// step's cgroup path when it has one of its own.
pub fn forked(cgroup: Option<&str>) {
    let mut s = lock(&STEP);
    let Some(s) = s.as_mut() else { return };
    s.forked += 1;
    if s.cgroup.is_none() {
        s.cgroup = cgroup.and_then(|c| CgroupDir::resolve(&SysRoot::live(), c).ok());
    }
}

/// `slurm_spank_task_exit`: a task ended with `status` (as `waitpid`
/// gives it); the step's cgroup is read while it surely exists.
pub fn task_exited(task: i32, status: i32) {
    let mut s = lock(&STEP);
    let Some(s) = s.as_mut() else { return };
    s.exits.push((task, status));
    if let Some(dir) = &s.cgroup {
        if let Ok(Some(u)) = CgroupUsage::read(&SysRoot::live(), dir) {
            s.usage = Some(u);
        }
    }
}

/// `slurm_spank_exit` in slurmstepd: the step's record to
/// `dir/numakit-outcomes.jsonl` (when `dir` is given and a task ran),
/// with `numa` from the step's NUMA report if one was sampled; the
/// ledger's arm entry goes.
pub fn finish(spank: SpankHandle, dir: Option<&Path>, numa: Option<Numa>, site: &Site) {
    let Some(s) = lock(&STEP).take() else { return };
    let _ = Ledger::new(&site.ledger).remove(std::process::id() as i32);
    let Some(dir) = dir else { return };
    if s.forked == 0 {
        return;
    }
    let end_unix = unix_now();
    let who = format!("slurm job {}.{}", s.ids.job, s.step);
    // The cgroup now if it is still there, else its reading at the last task's end.
    let usage = s.cgroup.as_ref().and_then(|d| CgroupUsage::read(&SysRoot::live(), d).ok().flatten()).or(s.usage);
    let cpu = match usage.and_then(|u| u.cpu) {
        Some(c) => Some((c.user_usec as f64 * 1e-6, c.system_usec as f64 * 1e-6, c.source)),
        None => {
            let (u, sy) = children_cpu();
            Some(((u - s.rusage_start.0).max(0.0), (sy - s.rusage_start.1).max(0.0), "rusage"))
        }
    };
    let mut exits = s.exits.clone();
    exits.sort_by_key(|(t, _)| *t);
    let waits: Vec<i32> = exits.iter().map(|(_, w)| *w).collect();
    let given = PLACED.get().and_then(|p| p.as_ref()).and_then(SharedLine::read);
    let (cpus, memory) = match given.as_deref().and_then(|g| g.split_once('\t')) {
        Some((c, m)) => (Some(c.to_string()), Some(m.to_string())),
        None => (None, None),
    };
    let measured = Measured {
        start_unix: s.start_unix,
        end_unix,
        cpu,
        cpus: ffi::get_u16(spank, Item::JobNcpus).map(u32::from).filter(|c| *c > 0),
        peak_memory_bytes: usage.and_then(|u| u.peak_bytes),
        status: step_status(&waits),
    };
    let hardware = match Hardware::read(&SysRoot::live()) {
        Ok(h) => h,
        Err(e) => {
            ffi::log(Level::Error, &format!("numakit: {who}: outcome: the host's hardware: {e}"));
            return;
        }
    };
    let step = Step {
        step: &s.step,
        host: &s.host,
        placement: Placement { mode: s.assignment.mode.to_string(), cpus, memory },
        measured,
        numa,
    };
    let record = StepOutcome::new(&s.ids, &s.assignment, step, hardware);
    if let Err(e) = files::append_line(&dir.join(OUTCOMES), &record.to_line()) {
        ffi::log(
            Level::Error,
            &format!("numakit: {who}: outcome to {}: {e}", numakit::text::path(&dir.join(OUTCOMES))),
        );
    }
}
