//! What each hook does, in Rust terms: the plugin's state (the site's settings,
//! the mode the job asked for), reading the option, placing a task. The
//! decisions are the library's ([`job`]); this is the adapter between them and
//! Slurm's calls.

use std::sync::{Mutex, OnceLock};

use numakit::sys::SysRoot;

use crate::ffi::{self, Context, Item, Level, SpankHandle, SpankOption};
use crate::job::{self, JobMode, Site, TaskInfo};

/// The option's name (`--numa`).
pub const OPTION: &str = "numa";

/// The variable a task finds its mode in (`NUMAKIT_NUMA=local`), and the one
/// with what it was given (`NUMAKIT_NUMA_PLACED=cpus 0-3, memory bind 0`).
pub const ENV_MODE: &str = "NUMAKIT_NUMA";
/// See [`ENV_MODE`].
pub const ENV_PLACED: &str = "NUMAKIT_NUMA_PLACED";

static SITE: Mutex<Option<Site>> = Mutex::new(None);
static ASKED: Mutex<Option<JobMode>> = Mutex::new(None);

fn site() -> Site {
    lock(&SITE).clone().unwrap_or(Site { default: JobMode::None, allowed: None })
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
    let site = Site::from_args(args).map_err(|e| error(&e))?;
    let usage = usage(&site);
    *lock(&SITE) = Some(site);
    if matches!(ctx, Context::Local | Context::Allocator | Context::Remote) {
        ffi::option_register(spank, option(usage)).map_err(|e| error(&e))?;
    }
    Ok(())
}

fn usage(site: &Site) -> String {
    let mut text = format!("NUMA placement of each task: {} (default {}", job::MODES, site.default);
    if let Some(allowed) = &site.allowed {
        text.push_str(&format!("; allowed here: {}", allowed.join(", ")));
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

/// The option callback: the value as typed, checked against the site's list.
/// In srun, sbatch and salloc a refusal fails the submission.
pub fn option_value(typed: &str) -> Result<(), ()> {
    let mode = JobMode::parse(typed).map_err(|e| error(&format!("--{OPTION}={typed}: {e}")))?;
    site().check(&mode).map_err(|e| error(&format!("--{OPTION}={typed}: {e}")))?;
    *lock(&ASKED) = Some(mode);
    Ok(())
}

/// The mode of this job: what it asked for, else the site's default.
fn mode() -> JobMode {
    lock(&ASKED).clone().unwrap_or_else(|| site().default)
}

fn task_info(spank: SpankHandle) -> TaskInfo {
    TaskInfo {
        job_id: ffi::get_u32(spank, Item::JobId).unwrap_or(0),
        step_id: ffi::get_u32(spank, Item::JobStepId).unwrap_or(0),
        local_task_id: ffi::get_i32(spank, Item::TaskId).map_or(0, |t| t.max(0) as u32),
        local_tasks: ffi::get_u32(spank, Item::JobLocalTaskCount).unwrap_or(1),
        cpus_per_task: ffi::get_u32(spank, Item::StepCpusPerTask),
    }
}

/// `job.step` as Slurm writes it (`5.0`, `5.batch`).
fn step_name(task: &TaskInfo) -> String {
    match task.step_id {
        0xffff_fffa => format!("{}.interactive", task.job_id),
        0xffff_fffb => format!("{}.batch", task.job_id),
        0xffff_fffc => format!("{}.extern", task.job_id),
        s => format!("{}.{s}", task.job_id),
    }
}

/// `slurm_spank_task_init`, in the task's process just before exec: places it.
pub fn task_init(spank: SpankHandle) -> Result<(), ()> {
    if ffi::context() != Context::Remote {
        return Ok(());
    }
    let mode = mode();
    let task = task_info(spank);
    let who = format!("job {} task {}", step_name(&task), task.local_task_id);
    let placed = if mode == JobMode::None {
        if let Err(e) = job::exclude_job(&task) {
            ffi::log(Level::Verbose, &format!("numakit: {who}: --{OPTION}=none: {e}"));
        }
        "unchanged".to_string()
    } else {
        let site = site();
        let placed = job::place_task(&SysRoot::live(), &site, &mode, &task)
            .map_err(|e| error(&format!("{who}: --{OPTION}={mode}: {e}")))?;
        placed.to_string()
    };
    ffi::log(Level::Info, &format!("numakit: {who}: {mode}: {placed}"));
    for (name, value) in [(ENV_MODE, mode.to_string()), (ENV_PLACED, placed)] {
        if let Err(e) = ffi::setenv(spank, name, &value) {
            ffi::log(Level::Verbose, &format!("numakit: {who}: {e}"));
        }
    }
    Ok(())
}

/// `slurm_spank_task_exit`, in slurmstepd after a task ended.
pub fn task_exit(spank: SpankHandle) -> Result<(), ()> {
    let task = task_info(spank);
    let status = ffi::get_i32(spank, Item::TaskExitStatus).unwrap_or(-1);
    ffi::log(
        Level::Debug,
        &format!("numakit: job {} task {} exited (status {status:#x})", step_name(&task), task.local_task_id),
    );
    Ok(())
}

/// `slurm_spank_exit`: the step (or srun, sbatch) is done.
pub fn exit(spank: SpankHandle) -> Result<(), ()> {
    if ffi::context() == Context::Remote {
        let task = task_info(spank);
        ffi::log(Level::Debug, &format!("numakit: job {} done", step_name(&task)));
    }
    Ok(())
}
