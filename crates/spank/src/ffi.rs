//! The part of Slurm's `slurm/spank.h` (22.05) the plugin uses, written by hand,
//! and safe wrappers around it. `spank_h_tests.rs` (a unit test) compares it with
//! the header of every supported Slurm release (Debian's 22.05 and the
//! source tarballs of 23.11 to 26.05): the enums' values, the option
//! structure and the functions' prototypes.
//!
//! The functions live in the process that loads the plugin (srun, sbatch,
//! salloc, slurmd, slurmstepd: all link libslurm). They are looked up with
//! `dlsym(RTLD_DEFAULT, ...)` on first use instead of being linked, so the
//! plugin never links libslurm, the crate's unit tests link without Slurm, and
//! a function a process lacks is an error code rather than a failed load.

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::sync::OnceLock;

/// `spank_t`: the handle Slurm passes to every hook.
pub type SpankHandle = *mut c_void;

/// `spank_opt_cb_f`: `int (*)(int val, const char *optarg, int remote)`.
pub type OptionCallback = unsafe extern "C" fn(c_int, *const c_char, c_int) -> c_int;

/// `struct spank_option`.
#[repr(C)]
#[derive(Debug)]
pub struct SpankOption {
    /// Long option name, without `--`.
    pub name: *const c_char,
    /// One word naming the argument.
    pub arginfo: *const c_char,
    /// Usage text.
    pub usage: *const c_char,
    /// Whether the option takes an argument (1: required).
    pub has_arg: c_int,
    /// Value passed back to the callback.
    pub val: c_int,
    /// Called with the option's value, in every context where it is seen.
    pub cb: Option<OptionCallback>,
}

/// `ESPANK_SUCCESS`.
pub const ESPANK_SUCCESS: c_int = 0;
/// `SLURM_ERROR`: what a failing hook or option callback returns (spank.c
/// treats a negative hook result as failure).
pub const SLURM_ERROR: c_int = -1;

/// `enum spank_item` values the plugin reads (the enum's order in spank.h).
#[derive(Debug, Clone, Copy)]
#[repr(C)]
#[allow(dead_code)]
pub enum Item {
    /// `S_JOB_UID` (uid_t *).
    JobUid = 0,
    /// `S_JOB_GID` (gid_t *).
    JobGid = 1,
    /// `S_JOB_ID` (uint32_t *).
    JobId = 2,
    /// `S_JOB_STEPID` (uint32_t *).
    JobStepId = 3,
    /// `S_JOB_NNODES` (uint32_t *).
    JobNnodes = 4,
    /// `S_JOB_NODEID` (uint32_t *).
    JobNodeId = 5,
    /// `S_JOB_LOCAL_TASK_COUNT` (uint32_t *).
    JobLocalTaskCount = 6,
    /// `S_JOB_TOTAL_TASK_COUNT` (uint32_t *).
    JobTotalTaskCount = 7,
    /// `S_JOB_NCPUS` (uint16_t *).
    JobNcpus = 8,
    /// `S_TASK_ID` (int *): the local task id.
    TaskId = 11,
    /// `S_TASK_GLOBAL_ID` (uint32_t *).
    TaskGlobalId = 12,
    /// `S_TASK_EXIT_STATUS` (int *).
    TaskExitStatus = 13,
    /// `S_TASK_PID` (pid_t *).
    TaskPid = 14,
    /// `S_SLURM_VERSION` (char **): the running Slurm's version, `22.05.8`.
    SlurmVersion = 20,
    /// `S_STEP_CPUS_PER_TASK` (uint32_t *).
    StepCpusPerTask = 24,
    /// `S_STEP_ALLOC_MEM` (uint64_t *): the step's memory on this node, MiB.
    StepAllocMem = 28,
    /// `S_JOB_ARRAY_ID` (uint32_t *): the array's job id, or 0.
    JobArrayId = 30,
    /// `S_JOB_ARRAY_TASK_ID` (uint32_t *).
    JobArrayTaskId = 31,
}

/// `enum spank_context`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Context {
    /// `S_CTX_ERROR` (or an unknown value).
    Error,
    /// `S_CTX_LOCAL`: srun.
    Local,
    /// `S_CTX_REMOTE`: slurmstepd.
    Remote,
    /// `S_CTX_ALLOCATOR`: sbatch, salloc.
    Allocator,
    /// `S_CTX_SLURMD`: slurmd.
    Slurmd,
    /// `S_CTX_JOB_SCRIPT`: prolog and epilog.
    JobScript,
}

type LogFn = unsafe extern "C" fn(*const c_char, ...);
type RegisterFn = unsafe extern "C" fn(SpankHandle, *mut SpankOption) -> c_int;
type GetItemFn = unsafe extern "C" fn(SpankHandle, c_int, ...) -> c_int;
type SetenvFn = unsafe extern "C" fn(SpankHandle, *const c_char, *const c_char, c_int) -> c_int;
type ContextFn = unsafe extern "C" fn() -> c_int;
type GetenvFn = unsafe extern "C" fn(SpankHandle, *const c_char, *mut c_char, c_int) -> c_int;

/// The functions, resolved once.
struct Api {
    error: Option<LogFn>,
    info: Option<LogFn>,
    verbose: Option<LogFn>,
    debug: Option<LogFn>,
    user: Option<LogFn>,
    register: Option<RegisterFn>,
    get_item: Option<GetItemFn>,
    setenv: Option<SetenvFn>,
    getenv: Option<GetenvFn>,
    context: Option<ContextFn>,
}

fn api() -> &'static Api {
    static API: OnceLock<Api> = OnceLock::new();
    API.get_or_init(|| {
        fn sym(name: &CStr) -> *mut c_void {
            // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name only reads.
            unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) }
        }
        // SAFETY (each transmute): the symbol, when present, is the function of
        // that name declared in spank.h with exactly this signature.
        macro_rules! f {
            ($name:expr, $ty:ty) => {{
                let p = sym($name);
                if p.is_null() {
                    None
                } else {
                    Some(unsafe { std::mem::transmute::<*mut c_void, $ty>(p) })
                }
            }};
        }
        Api {
            error: f!(c"slurm_error", LogFn),
            info: f!(c"slurm_info", LogFn),
            verbose: f!(c"slurm_verbose", LogFn),
            debug: f!(c"slurm_debug", LogFn),
            user: f!(c"slurm_spank_log", LogFn),
            register: f!(c"spank_option_register", RegisterFn),
            get_item: f!(c"spank_get_item", GetItemFn),
            setenv: f!(c"spank_setenv", SetenvFn),
            getenv: f!(c"spank_getenv", GetenvFn),
            context: f!(c"spank_context", ContextFn),
        }
    })
}

/// A log level of Slurm's log.
#[derive(Debug, Clone, Copy)]
pub enum Level {
    /// `slurm_error`: shown to the user by srun/sbatch, in the daemons' logs.
    Error,
    /// `slurm_info`.
    Info,
    /// `slurm_verbose` (`srun -v`, `SlurmdDebug=verbose`).
    Verbose,
    /// `slurm_debug`.
    Debug,
    /// `slurm_spank_log`: at error level, without the "error: " prefix, so
    /// srun shows it to the user (warnings).
    User,
}

/// Writes one line to Slurm's log; false when the process has no Slurm log.
pub fn log(level: Level, msg: &str) -> bool {
    let a = api();
    let f = match level {
        Level::Error => a.error,
        Level::Info => a.info,
        Level::Verbose => a.verbose,
        Level::Debug => a.debug,
        Level::User => a.user,
    };
    let Some(f) = f else { return false };
    let line = CString::new(msg.replace('\0', "\\0")).unwrap_or_default();
    // SAFETY: a printf-style function given "%s" and one NUL-terminated string.
    unsafe { f(c"%s".as_ptr(), line.as_ptr()) };
    true
}

/// `spank_context()`.
pub fn context() -> Context {
    let Some(f) = api().context else { return Context::Error };
    // SAFETY: no arguments; Slurm answers from its own state.
    context_of(unsafe { f() })
}

/// A value of `enum spank_context` (its order in spank.h).
pub fn context_of(value: c_int) -> Context {
    match value {
        1 => Context::Local,
        2 => Context::Remote,
        3 => Context::Allocator,
        4 => Context::Slurmd,
        5 => Context::JobScript,
        _ => Context::Error,
    }
}

/// `spank_option_register(spank, opt)`. `opt` must stay valid for the process
/// (Slurm keeps the pointer).
pub fn option_register(spank: SpankHandle, opt: &'static SpankOption) -> Result<(), String> {
    let Some(f) = api().register else { return Err("spank_option_register is missing".into()) };
    // SAFETY: `spank` is the handle Slurm gave the hook; `opt` lives forever and
    // Slurm only reads through it.
    let rc = unsafe { f(spank, opt as *const SpankOption as *mut SpankOption) };
    if rc == ESPANK_SUCCESS {
        Ok(())
    } else {
        Err(format!("spank_option_register failed ({rc})"))
    }
}

/// `spank_get_item` for the items whose value is a `uint32_t`.
pub fn get_u32(spank: SpankHandle, item: Item) -> Option<u32> {
    let f = api().get_item?;
    let mut v: u32 = 0;
    // SAFETY: the item's value type is uint32_t (see `Item`); Slurm writes one.
    let rc = unsafe { f(spank, item as c_int, &mut v as *mut u32) };
    (rc == ESPANK_SUCCESS).then_some(v)
}

/// `spank_get_item` for the items whose value is a `uint64_t`.
pub fn get_u64(spank: SpankHandle, item: Item) -> Option<u64> {
    let f = api().get_item?;
    let mut v: u64 = 0;
    // SAFETY: the item's value type is uint64_t (see `Item`); Slurm writes one.
    let rc = unsafe { f(spank, item as c_int, &mut v as *mut u64) };
    (rc == ESPANK_SUCCESS).then_some(v)
}

/// `spank_get_item` for the items whose value is a string (`char **`, Slurm's
/// own memory, copied here).
pub fn get_str(spank: SpankHandle, item: Item) -> Option<String> {
    let f = api().get_item?;
    let mut p: *const c_char = std::ptr::null();
    // SAFETY: the item's value type is char ** (see `Item`); Slurm writes a
    // pointer to a string it keeps.
    let rc = unsafe { f(spank, item as c_int, &mut p as *mut *const c_char) };
    if rc != ESPANK_SUCCESS || p.is_null() {
        return None;
    }
    // SAFETY: a NUL-terminated string Slurm owns, read at once.
    Some(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

/// `spank_get_item` for the items whose value is an `int` or `pid_t`.
pub fn get_i32(spank: SpankHandle, item: Item) -> Option<i32> {
    let f = api().get_item?;
    let mut v: c_int = 0;
    // SAFETY: the item's value type is int or pid_t (see `Item`); Slurm writes one.
    let rc = unsafe { f(spank, item as c_int, &mut v as *mut c_int) };
    (rc == ESPANK_SUCCESS).then_some(v)
}

/// `spank_get_item` for the items whose value is a `uint16_t`.
pub fn get_u16(spank: SpankHandle, item: Item) -> Option<u16> {
    let f = api().get_item?;
    let mut v: u16 = 0;
    // SAFETY: the item's value type is uint16_t (see `Item`); Slurm writes one.
    let rc = unsafe { f(spank, item as c_int, &mut v as *mut u16) };
    (rc == ESPANK_SUCCESS).then_some(v)
}

/// The longest job variable [`getenv`] reads.
pub const GETENV_MAX: usize = 4096;

/// `spank_getenv(spank, name, buf, len)`: a variable of the job's
/// environment (remote context); `None` when it is unset, longer than
/// [`GETENV_MAX`], or outside slurmstepd.
pub fn getenv(spank: SpankHandle, name: &str) -> Option<String> {
    let f = api().getenv?;
    let n = CString::new(name).ok()?;
    let mut buf = vec![0 as c_char; GETENV_MAX];
    // SAFETY: the handle Slurm gave the hook, a NUL-terminated name and a
    // buffer of the length passed, which Slurm NUL-terminates on success.
    let rc = unsafe { f(spank, n.as_ptr(), buf.as_mut_ptr(), GETENV_MAX as c_int) };
    if rc != ESPANK_SUCCESS {
        return None;
    }
    // SAFETY: on success the buffer holds a NUL-terminated string.
    Some(unsafe { CStr::from_ptr(buf.as_ptr()) }.to_string_lossy().into_owned())
}

/// `spank_setenv(spank, name, value, 1)`: sets a variable of the job's
/// environment (in `task_init`: the environment the task is exec'ed with).
pub fn setenv(spank: SpankHandle, name: &str, value: &str) -> Result<(), String> {
    let Some(f) = api().setenv else { return Err("spank_setenv is missing".into()) };
    let (Ok(n), Ok(v)) = (CString::new(name), CString::new(value)) else {
        return Err(format!("{name}: a NUL byte in the name or value"));
    };
    // SAFETY: the handle Slurm gave the hook and two NUL-terminated strings.
    let rc = unsafe { f(spank, n.as_ptr(), v.as_ptr(), 1) };
    if rc == ESPANK_SUCCESS {
        Ok(())
    } else {
        Err(format!("spank_setenv({name}) failed ({rc})"))
    }
}

/// The plugin arguments `(ac, av)` of a hook, as strings.
///
/// # Safety
/// `av` must point to `ac` NUL-terminated strings (or be null with `ac` 0).
pub unsafe fn args(ac: c_int, av: *const *const c_char) -> Vec<String> {
    if av.is_null() || ac <= 0 {
        return Vec::new();
    }
    (0..ac as usize)
        .filter_map(|i| {
            // SAFETY: i < ac, per the caller's contract.
            let p = unsafe { *av.add(i) };
            // SAFETY: each element is a NUL-terminated string (or null, skipped).
            (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
        })
        .collect()
}
