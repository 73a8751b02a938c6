//! What each hook does, in Rust terms: the plugin's state (the site's settings,
//! the mode the job asked for), reading the option, placing a task. The
//! decisions, the ledger and the daemon registration are the library's
//! ([`numakit::batch`]); this is the adapter between them and Slurm's calls.

use std::sync::{Mutex, OnceLock};

use numakit::act;
use numakit::batch::ledger::Ledger;
use numakit::batch::mode::MODE_NAMES;
use numakit::batch::{self, JobError, JobMode, JobStep, Placed, Site, TaskInfo};
use numakit::experiment::policy::assign::Files;
use numakit::experiment::{Design, Numa};
use numakit::place::MemMode;
use numakit::procs::cgroup;
use numakit::sets::CpuSet;
use numakit::sys::SysRoot;

use crate::ffi::{self, Context, Item, Level, SpankHandle, SpankOption};

/// The option's name (`--numa`).
pub const OPTION: &str = "numa";

/// The variable a task finds its mode in (`NUMAKIT_NUMA=local`), and the one
/// with what it was given (`NUMAKIT_NUMA_PLACED=cpus 0-3, memory bind 0`).
pub const ENV_MODE: &str = "NUMAKIT_NUMA";
/// See [`ENV_MODE`].
pub const ENV_PLACED: &str = "NUMAKIT_NUMA_PLACED";

static SITE: Mutex<Option<Site>> = Mutex::new(None);
static ASKED: Mutex<Option<JobMode>> = Mutex::new(None);

/// The report's settings: the site's folder for JSON lines, how often to
/// sample, and the file the user named (`--numa-report=FILE`).
#[derive(Debug, Clone, Default)]
struct Reporting {
    dir: Option<std::path::PathBuf>,
    interval: Option<std::time::Duration>,
    file: Option<String>,
    /// The first task's working folder, for a relative FILE.
    cwd: Option<std::path::PathBuf>,
}

static REPORT: Mutex<Option<Reporting>> = Mutex::new(None);

/// Splits the plugin's own report arguments (`report=DIR`,
/// `report_interval=SECONDS`) from the site's placement ones.
fn report_args(args: &[String]) -> Result<(Reporting, Vec<String>), String> {
    let mut r = Reporting::default();
    let mut rest = Vec::new();
    for a in args {
        match a.split_once('=') {
            Some(("report", d)) if d.starts_with('/') => r.dir = Some(d.into()),
            Some(("report", _)) => return Err(format!("invalid argument {a:?}: give an absolute folder")),
            Some(("report_interval", v)) => {
                let secs: u64 = v
                    .parse()
                    .ok()
                    .filter(|s| (1..=3600).contains(s))
                    .ok_or_else(|| format!("invalid argument {a:?}: give seconds from 1 to 3600"))?;
                r.interval = Some(std::time::Duration::from_secs(secs));
            }
            _ => rest.push(a.clone()),
        }
    }
    Ok((r, rest))
}

fn site() -> Site {
    lock(&SITE).clone().unwrap_or_default()
}

/// A poisoned lock only means a hook panicked (and failed) earlier; the value is
/// still whole (every write is one assignment).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn error(msg: &str) {
    ffi::log(Level::Error, &format!("numakit: {msg}"));
}

/// `slurm_spank_init`: reads the plugin arguments and registers `--numa` where a
/// job's options are seen (srun, sbatch, salloc, slurmstepd).
pub fn init(spank: SpankHandle, args: &[String]) -> Result<(), ()> {
    let ctx = ffi::context();
    let (words, args) = Design::split_args(args);
    let (reporting, args) = report_args(&args).map_err(|e| error(&format!("plugstack.conf: {e}")))?;
    let (files, args) = Files::from_args(&args).map_err(|e| error(&format!("plugstack.conf: {e}")))?;
    crate::experiment::set_files(files);
    let site = Site::from_args(&args).map_err(|e| error(&format!("plugstack.conf: {e}")))?;
    // A bad experiment word never fails a job: the experiment is off, and
    // slurmstepd says why (once per host).
    if let Err(e) = crate::experiment::configure(&words) {
        let _ = crate::experiment::configure(&[]);
        let note = format!("plugstack.conf: {e}: no experiment runs");
        let once = ctx == Context::Remote && Ledger::new(&site.ledger).note_once(&note);
        ffi::log(if once { Level::Error } else { Level::Verbose }, &format!("numakit: {note}"));
    }
    // slurmd (root, at its start): the ledger made as documented, or what
    // is wrong with it said once here, not in every job's output.
    if ctx == Context::Slurmd {
        if let Some(problem) = Ledger::new(&site.ledger).check() {
            error(&problem);
        }
    }
    let usage = usage(&site);
    *lock(&SITE) = Some(site);
    *lock(&REPORT) = Some(reporting);
    if matches!(ctx, Context::Local | Context::Allocator | Context::Remote) {
        ffi::option_register(spank, option(usage)).map_err(|e| error(&e))?;
        ffi::option_register(spank, report_option()).map_err(|e| error(&e))?;
    }
    Ok(())
}

fn usage(site: &Site) -> String {
    let mut text =
        format!("NUMA placement of each task: auto, devices (next to its GPUs and NICs), local, interleave, none or nodes:LIST (default {}", site.default);
    if site.allowed.len() < MODE_NAMES.len() {
        text.push_str(&format!("; allowed here: {}", site.allowed.join(", ")));
    }
    text.push(')');
    text
}

/// The option, built once with its usage text and kept for the process (Slurm
/// keeps the pointer).
fn option(usage: String) -> &'static SpankOption {
    struct Static(SpankOption);
    // SAFETY: the pointers inside point to leaked, never written strings.
    unsafe impl Sync for Static {}
    // SAFETY: as above.
    unsafe impl Send for Static {}
    static OPTION_CELL: OnceLock<Static> = OnceLock::new();
    let leak = |s: String| -> *const std::ffi::c_char {
        let c = std::ffi::CString::new(s).unwrap_or_default();
        Box::leak(c.into_boxed_c_str()).as_ptr()
    };
    &OPTION_CELL
        .get_or_init(|| {
            Static(SpankOption {
                name: leak(OPTION.into()),
                arginfo: leak("MODE".into()),
                usage: leak(usage),
                has_arg: 1,
                val: 0,
                cb: Some(crate::numa_option_cb),
            })
        })
        .0
}

/// The `--numa-report=FILE` option, built once (Slurm keeps the pointer).
fn report_option() -> &'static SpankOption {
    struct Static(SpankOption);
    // SAFETY: the pointers inside point to static, never written strings.
    unsafe impl Sync for Static {}
    // SAFETY: as above.
    unsafe impl Send for Static {}
    static CELL: OnceLock<Static> = OnceLock::new();
    &CELL
        .get_or_init(|| {
            Static(SpankOption {
                name: c"numa-report".as_ptr(),
                arginfo: c"FILE".as_ptr(),
                usage: c"append the step's NUMA report to FILE on each node (%j job, %s step, %N node)".as_ptr(),
                has_arg: 1,
                val: 0,
                cb: Some(crate::numa_report_cb),
            })
        })
        .0
}

/// The report option's callback: the file as typed (relative to the
/// task's working folder).
pub fn report_value(typed: &str) -> Result<(), ()> {
    if typed.is_empty() || typed.contains('\0') {
        error(&format!("invalid --numa-report value {typed:?}: give a file name"));
        return Err(());
    }
    lock(&REPORT).get_or_insert_with(Reporting::default).file = Some(typed.to_string());
    Ok(())
}

/// The option callback: the value as typed, checked against the site's list.
/// In srun, sbatch and salloc a refusal fails the submission.
pub fn option_value(typed: &str) -> Result<(), ()> {
    let mode = JobMode::parse(typed).map_err(|e| error(&e))?;
    site().check(&mode).map_err(|e| error(&e))?;
    *lock(&ASKED) = Some(mode);
    Ok(())
}

/// The mode of this job: what it asked for (`true`), else the site's default.
fn mode() -> (JobMode, bool) {
    match lock(&ASKED).clone() {
        Some(m) => (m, true),
        None => (site().default, false),
    }
}

/// Slurm's ids of the task being started or ended.
struct Ids {
    job: u32,
    step: u32,
    task: u32,
}

impl Ids {
    fn of(spank: SpankHandle) -> Ids {
        Ids {
            job: ffi::get_u32(spank, Item::JobId).unwrap_or(0),
            step: ffi::get_u32(spank, Item::JobStepId).unwrap_or(0),
            task: ffi::get_i32(spank, Item::TaskId).map_or(0, |t| t.max(0) as u32),
        }
    }

    /// `5.0`, `5.batch`: the step as Slurm writes it.
    fn step(&self) -> String {
        match self.step {
            0xffff_fffa => format!("{}.interactive", self.job),
            0xffff_fffb => format!("{}.batch", self.job),
            0xffff_fffc => format!("{}.extern", self.job),
            s => format!("{}.{s}", self.job),
        }
    }

    /// `slurm job 5.0 task 1`.
    fn label(&self) -> String {
        format!("slurm job {} task {}", self.step(), self.task)
    }

    /// The job and step for the ledger (`slurm job 5`, `slurm job 5.batch`):
    /// a job's steps on this host are placed where its other steps are.
    fn job_step(&self) -> JobStep {
        JobStep { job: format!("slurm job {}", self.job), step: format!("slurm job {}", self.step()) }
    }
}

/// The job's own cgroup (v2) for the daemon to exclude: the calling task's
/// cgroup cut after its `job_ID` folder, or nothing when the task is in no
/// folder of this job (proctrack/linuxproc, cgroup v1): never a cgroup that
/// holds more than this job.
fn job_cgroup(job: u32) -> Option<String> {
    let path = cgroup::read_path(&SysRoot::live(), std::process::id() as i32).ok().flatten()?;
    crate::report::cut_after(&path, &format!("/job_{job}"))
}

/// `slurm_spank_task_init`, in the task's process just before exec: places it.
pub fn task_init(spank: SpankHandle) -> Result<(), ()> {
    if ffi::context() != Context::Remote {
        return Ok(());
    }
    let (mode, asked) = crate::experiment::mode().unwrap_or_else(mode);
    let ids = Ids::of(spank);
    let who = ids.label();
    if ids.task == 0 {
        if let Some(why) = report_unwritable(&ids) {
            ffi::log(Level::User, &format!("numakit: slurm job {}: {why}", ids.step()));
        }
    }
    let cpus = ffi::get_u32(spank, Item::StepCpusPerTask).unwrap_or(1).max(1);
    let tasks_here = ffi::get_u32(spank, Item::JobLocalTaskCount).unwrap_or(1);
    // The step's memory on this node (S_STEP_ALLOC_MEM, MiB; 0 where Slurm
    // does not track memory), shared by its tasks here.
    let step_mib = ffi::get_u64(spank, Item::StepAllocMem).unwrap_or(0);
    let mem_bytes = step_mib.saturating_mul(1 << 20) / u64::from(tasks_here.max(1));
    // The task's GPUs and NICs, from the variables Slurm gave it (SPANK has
    // no item for a job's GRES): the one at its local id when it sees several.
    let devices = match mode {
        JobMode::Auto | JobMode::Devices => {
            let task_id = ffi::get_i32(spank, Item::TaskId).unwrap_or(0).max(0) as u32;
            batch::devices::of_task(&SysRoot::live(), &|k| ffi::getenv(spank, k), &|_| None, task_id, tasks_here)
        }
        _ => Default::default(),
    };
    let task = TaskInfo {
        label: who.clone(),
        cpus,
        mem_bytes,
        reserve: CpuSet::new(),
        job_step: Some(ids.job_step()),
        devices,
    };
    let site = site();
    let cgroup = if mode == JobMode::None { job_cgroup(ids.job) } else { None };
    let started = std::time::Instant::now();
    let placed = match batch::place_task(&SysRoot::live(), &site, &mode, &task, cgroup.as_deref()) {
        Ok(p) => p,
        // An experiment's arm never fails a job: it runs as it is (its
        // record keeps the arm and shows what it was given).
        Err(e) if crate::experiment::assigned() => {
            ffi::log(Level::Info, &format!("numakit: {who}: {e}: the experiment's arm runs unplaced"));
            crate::experiment::placed(&current_cpus(), "unchanged");
            return Ok(());
        }
        Err(e) => {
            error(&format!("{who}: {e}"));
            if matches!(e, JobError::Request(_)) {
                end_task();
            }
            return Err(());
        }
    };
    let took = started.elapsed().as_secs_f64() * 1000.0;
    let (cpus_now, memory) = given_parts(&placed);
    crate::experiment::placed(&cpus_now, &memory);
    let given = format!("cpus {cpus_now}, memory {memory}");
    ffi::log(Level::Info, &format!("numakit: {who}: {mode}: {given} ({}; {took:.1} ms)", placed.decision.reason));
    if let Some(n) = &placed.ledger_note {
        // The site's affair, said in slurmd's own log at its start.
        ffi::log(Level::Verbose, &format!("numakit: {who}: {n}"));
    }
    if let Some(w) = &placed.warning {
        // A site default of none without a daemon is every job: the log only.
        let level = if asked || mode != JobMode::None { Level::User } else { Level::Info };
        ffi::log(level, &format!("numakit: {who}: {w}"));
    }
    for (name, value) in [(ENV_MODE, mode.to_string()), (ENV_PLACED, given)] {
        if let Err(e) = ffi::setenv(spank, name, &value) {
            ffi::log(Level::Verbose, &format!("numakit: {who}: {e}"));
        }
    }
    Ok(())
}

/// Ends the task being started (this process, forked by slurmstepd, just
/// before it would exec the job's program) with status 1: what Slurm does
/// itself when a `required` plugin's `task_init` fails ("Failed to invoke
/// spank plugin stack"). Slurm ignores a failing hook of an `optional`
/// plugin and would run the task unplaced; a request the job made that
/// this host cannot satisfy (`--numa=nodes:5` without node 5) fails the
/// step under either instead. The line saying why is in the task's output
/// already.
fn end_task() -> ! {
    // SAFETY: _exit ends this process at once, running no handler of
    // slurmstepd's (the task is slurmstepd's forked child, as Slurm's own
    // `_exit(1)` there).
    unsafe { libc::_exit(1) }
}

/// The calling task's CPUs now, as a list.
fn current_cpus() -> String {
    act::get_affinity(act::Pid::SELF).map(|c| c.to_list()).unwrap_or_else(|_| "?".into())
}

/// What the task has now: its CPUs (a list) and memory policy
/// (`bind 0`, `local`, `unchanged`).
fn given_parts(placed: &Placed) -> (String, String) {
    let cpus = current_cpus();
    let memory = match placed.decision.plan.as_ref().and_then(|p| p.memory.as_ref()) {
        None => "unchanged".to_string(),
        Some(m) if m.mode == MemMode::Local => "local".to_string(),
        Some(m) => format!("{} {}", m.mode.name(), m.nodes.to_list()),
    };
    (cpus, memory)
}

/// `slurm_spank_task_exit`, in slurmstepd after a task ended: its ledger entry
/// goes (the ledger would forget it anyway once the pid is gone).
pub fn task_exit(spank: SpankHandle) -> Result<(), ()> {
    let ids = Ids::of(spank);
    let status = ffi::get_i32(spank, Item::TaskExitStatus).unwrap_or(-1);
    if ffi::context() == Context::Remote && status >= 0 {
        crate::experiment::task_exited(ffi::get_i32(spank, Item::TaskId).unwrap_or(0), status);
    }
    if let Some(pid) = ffi::get_i32(spank, Item::TaskPid) {
        if let Err(e) = Ledger::new(&site().ledger).remove(pid) {
            ffi::log(Level::Verbose, &format!("numakit: {}: {e}", ids.label()));
        }
    }
    ffi::log(Level::Debug, &format!("numakit: {} exited (status {status:#x})", ids.label()));
    Ok(())
}

/// Why the report the job asked for (`--numa-report=FILE`) will not be
/// written on this host, said in the job's own output by its first task
/// here (the task's stderr, before its program starts); `None` when none
/// was asked for or nothing stands in its way now. Runs in the task, as
/// the job's user, in its working folder: FILE as the step's end will
/// open it.
fn report_unwritable(ids: &Ids) -> Option<String> {
    let pattern = lock(&REPORT).as_ref()?.file.clone()?;
    let sys = SysRoot::live();
    let own = sys.read("proc/self/cgroup").ok().flatten().unwrap_or_default();
    if crate::report::step_cgroup(&own, &step_name(ids)).is_none() {
        return Some(
            "no NUMA report (--numa-report): the step has no cgroup of its own here \
             (ProctrackType=proctrack/cgroup or TaskPlugin=task/cgroup gives it one)"
                .into(),
        );
    }
    let host = numakit::sys::kernel::hostname(&sys).unwrap_or_default();
    let name = crate::report::expand(&pattern, ids.job, &step_name(ids), &host);
    crate::report::writable(std::path::Path::new(&name))
        .err()
        .map(|e| format!("no NUMA report: --numa-report {}: {e}", numakit::text::path(std::path::Path::new(&name))))
}

/// The step part of [`Ids::step`] (`0`, `batch`).
fn step_name(ids: &Ids) -> String {
    let s = ids.step();
    s.split_once('.').map_or(s.clone(), |(_, step)| step.to_string())
}

/// `slurm_spank_task_post_fork`, in slurmstepd after a task was forked: when
/// a report is asked for, starts sampling the step's cgroup (once).
pub fn task_post_fork(spank: SpankHandle) -> Result<(), ()> {
    let wanted = lock(&REPORT).as_ref().is_some_and(|r| r.dir.is_some() || r.file.is_some());
    if !wanted || ffi::context() != Context::Remote {
        return Ok(());
    }
    let ids = Ids::of(spank);
    let Some(pid) = ffi::get_i32(spank, Item::TaskPid) else { return Ok(()) };
    let file = SysRoot::live().read(format!("proc/{pid}/cgroup")).ok().flatten().unwrap_or_default();
    let interval = {
        let mut r = lock(&REPORT);
        let r = r.get_or_insert_with(Reporting::default);
        if r.cwd.is_none() {
            r.cwd = SysRoot::live().read_link(format!("proc/{pid}/cwd")).ok().flatten();
        }
        r.interval.unwrap_or(crate::report::DEFAULT_INTERVAL)
    };
    let cg = crate::report::step_cgroup(&file, &step_name(&ids));
    crate::experiment::forked(cg.as_deref());
    match cg {
        Some(cg) => crate::report::start(cg, interval),
        None => {
            ffi::log(
                Level::Verbose,
                &format!("numakit: slurm job {}: no cgroup of the step's own: no NUMA report", ids.step()),
            );
        }
    }
    Ok(())
}

/// `slurm_spank_init_post_opt`: in slurmstepd (as root, before the tasks
/// are forked), the step's arm: the experiment's, the job's own `--numa`
/// or the site's default.
pub fn init_post_opt(spank: SpankHandle) -> Result<(), ()> {
    if ffi::context() != Context::Remote {
        return Ok(());
    }
    let ids = Ids::of(spank);
    let asked = lock(&ASKED).clone();
    crate::experiment::start(spank, ids.job, step_name(&ids), asked, &site());
    Ok(())
}

/// `slurm_spank_exit`: the step (or srun, sbatch) is done; in slurmstepd its
/// report is written where it was asked for, and its outcome record.
pub fn exit(spank: SpankHandle) -> Result<(), ()> {
    if ffi::context() != Context::Remote {
        return Ok(());
    }
    let ids = Ids::of(spank);
    ffi::log(Level::Debug, &format!("numakit: slurm job {} done", ids.step()));
    let r = lock(&REPORT).clone().unwrap_or_default();
    let finished = crate::report::finish();
    let numa = finished.as_ref().map(|(rep, d)| Numa::from_report(rep, d.as_deref()));
    crate::experiment::finish(spank, r.dir.as_deref(), numa, &site());
    let Some((report, delta)) = finished else { return Ok(()) };
    let (text, line) = crate::report::render(&report, delta.as_deref());
    ffi::log(Level::Info, &format!("numakit: slurm job {} report {line}", ids.step()));
    if let Some(dir) = &r.dir {
        if let Err(e) = crate::report::append_site(dir, &line) {
            error(&format!("slurm job {}: report to {}: {e}", ids.step(), numakit::text::path(dir)));
        }
    }
    if let Some(pattern) = &r.file {
        let host = numakit::sys::kernel::hostname(&SysRoot::live()).unwrap_or_default();
        let name = crate::report::expand(pattern, ids.job, &step_name(&ids), &host);
        let path = match &r.cwd {
            Some(cwd) if !name.starts_with('/') => cwd.join(&name),
            _ => std::path::PathBuf::from(&name),
        };
        let uid = ffi::get_u32(spank, Item::JobUid).unwrap_or(u32::MAX);
        let gid = ffi::get_u32(spank, Item::JobGid).unwrap_or(u32::MAX);
        if let Err(e) = crate::report::append_as(&path, &text, uid, gid) {
            error(&format!("slurm job {}: --numa-report {}: {e}", ids.step(), numakit::text::path(&path)));
        }
    }
    Ok(())
}
