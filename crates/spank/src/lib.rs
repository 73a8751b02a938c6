//! numakit's Slurm SPANK plugin (`libnumakit_spank.so`): the job option
//! `--numa=auto|local|interleave|none|nodes:LIST` for `sbatch`, `srun` and
//! `salloc`, applied to each task by numakit's library.
//!
//! A site adds one line to `plugstack.conf`:
//!
//! ```text
//! optional /usr/lib/x86_64-linux-gnu/slurm/libnumakit_spank.so default=none allowed=auto,none,local
//! ```
//!
//! - `default=MODE`: the mode of jobs that do not ask (default `none`);
//! - `allowed=MODE,...`: the modes users may ask for (default: all);
//! - `ledger=DIR`, `socket=PATH`, `sample=MS`: where placements are recorded,
//!   the numakit daemon's socket, how long to sample the load without a daemon
//!   (see `numakit::batch::Site`).
//!
//! A bad argument is one error line in Slurm's log and fails the plugin's init
//! (so a `required` plugin stops the daemons and commands that load it). A bad
//! `--numa` value, or one the site does not allow, fails the submission with one
//! line naming the value as typed. In each task, just before exec, the mode is
//! applied to the task's own process (inherited across exec); the task finds it
//! in `NUMAKIT_NUMA` and what it was given in `NUMAKIT_NUMA_PLACED`.
//!
//! The plugin is built for one Slurm release (`slurm_version.h` at build time,
//! `build.rs`): its first line in each process that loads it says which, and
//! a Slurm of another major or minor number gets one error line instead of
//! placements (`version`; Slurm 22.05 refuses to load it before that).
//!
//! The decisions, the host-local ledger and the daemon registration of `none`
//! are the library's (`numakit::batch`); the plugin only adapts Slurm's calls.
//!
//! Rules of the house: every hook body runs under [`std::panic::catch_unwind`]
//! and a panic is an error code plus one line in Slurm's log, never an unwind
//! into Slurm; nothing is written to stdout or stderr except through Slurm's
//! log functions; libslurm is not linked (see [`ffi`]).

#![allow(non_upper_case_globals)]

mod experiment;
mod ffi;
mod hooks;
mod report;
mod shared;
#[cfg(test)]
mod spank_h_tests;
mod version;

use std::ffi::{c_char, c_int, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Once;

use ffi::{Level, SpankHandle, SLURM_ERROR};

// BUILT_FOR, HEADER and BUILT_FOR_LINE, written by build.rs.
include!(concat!(env!("OUT_DIR"), "/slurm_version.rs"));

/// `SLURM_VERSION_NUMBER` of the Slurm this plugin is built for; 0 when it was
/// built without Slurm's headers (no Slurm loads it then).
pub const SLURM_VERSION_NUMBER: u32 = match BUILT_FOR {
    Ok(n) => n,
    Err(_) => 0,
};

// SPANK_PLUGIN(numakit, 1), as slurm/spank.h (22.05) expands it:
//   const char plugin_name [] = "numakit";
//   const char plugin_type [] = "spank";
//   const unsigned int plugin_version = SLURM_VERSION_NUMBER;
//   const unsigned int spank_plugin_version = 1;
// The names are arrays of chars (the symbol is the string itself, not a pointer
// to it). Slurm 22.05 loads the plugin only if plugin_version has its own major
// and minor number (see `version`).

/// `plugin_name`: the plugin's name in Slurm's messages.
#[no_mangle]
pub static plugin_name: [u8; 8] = *b"numakit\0";
/// `plugin_type`: a SPANK plugin.
#[no_mangle]
pub static plugin_type: [u8; 6] = *b"spank\0";
/// `plugin_version`: the Slurm version this was built against.
#[no_mangle]
pub static plugin_version: u32 = SLURM_VERSION_NUMBER;
/// `spank_plugin_version`: this plugin's own version.
#[no_mangle]
pub static spank_plugin_version: u32 = 1;
/// What the plugin was built for, between two NULs in the library, so that
/// `strings libnumakit_spank.so | grep 'built for'` shows the line alone.
#[no_mangle]
#[used]
pub static numakit_spank_built_for: [u8; BUILT_FOR_LINE.len() + 2] = between_nuls(BUILT_FOR_LINE);

/// A NUL, `text`, a NUL, as an array (`N` is its length plus two).
const fn between_nuls<const N: usize>(text: &str) -> [u8; N] {
    let bytes = text.as_bytes();
    let mut out = [0u8; N];
    let mut i = 0;
    while i < bytes.len() && i + 2 < N {
        out[i + 1] = bytes[i];
        i += 1;
    }
    out
}

/// The plugin's first words in every process that loads it: which Slurm it was
/// built for, checked against the one that loaded it (one error line and a
/// failed init when they differ). slurmd logs it at info level (once per
/// start), slurmstepd at verbose, srun, sbatch and salloc at debug.
fn announce(spank: SpankHandle) -> Result<(), ()> {
    let running = ffi::get_str(spank, ffi::Item::SlurmVersion);
    // The word Slurm compared, read from the library's memory (not folded from
    // the constant), so the line says what the loaded file says.
    // SAFETY: a valid, aligned static, never written.
    let word = unsafe { std::ptr::read_volatile(std::ptr::addr_of!(plugin_version)) };
    let built = if word == 0 { BUILT_FOR.map(|_| 0) } else { Ok(word) };
    match version::check(built, running.as_deref(), env!("CARGO_PKG_VERSION")) {
        Ok(line) => {
            let level = match ffi::context() {
                ffi::Context::Slurmd => Level::Info,
                ffi::Context::Remote => Level::Verbose,
                _ => Level::Debug,
            };
            ffi::log(level, &line);
            Ok(())
        }
        Err(line) => {
            ffi::log(Level::Error, &line);
            Err(())
        }
    }
}

/// Runs a hook body: `Ok` is 0, `Err` (already logged) or a panic is -1. A
/// panic's message goes to Slurm's log through the panic hook.
fn guard(f: impl FnOnce() -> Result<(), ()>) -> c_int {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        // This library has its own copy of std, so the hook is the plugin's alone.
        // Outside Slurm (the unit tests) the previous hook reports.
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let line = info.to_string().replace('\n', " ");
            if !ffi::log(Level::Error, &format!("numakit: internal error: {line}")) {
                previous(info);
            }
        }));
    });
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => 0,
        Ok(Err(())) | Err(_) => SLURM_ERROR,
    }
}

/// `slurm_spank_init`: plugin arguments, option registration.
///
/// # Safety
/// Called by Slurm: `av` holds `ac` NUL-terminated strings.
#[no_mangle]
pub unsafe extern "C" fn slurm_spank_init(spank: SpankHandle, ac: c_int, av: *const *const c_char) -> c_int {
    guard(|| {
        announce(spank)?;
        // SAFETY: Slurm's argument vector, per this function's contract.
        let args = unsafe { ffi::args(ac, av) };
        hooks::init(spank, &args)
    })
}

/// `slurm_spank_init_post_opt`: the step's experiment arm (slurmstepd, as
/// root, before the tasks are forked).
///
/// # Safety
/// Called by Slurm with its handle.
#[no_mangle]
pub unsafe extern "C" fn slurm_spank_init_post_opt(spank: SpankHandle, _ac: c_int, _av: *const *const c_char) -> c_int {
    guard(|| hooks::init_post_opt(spank))
}

/// `slurm_spank_task_init`: places the task (remote context, the task's process,
/// as the job's user, just before exec).
///
/// # Safety
/// Called by Slurm with its handle.
#[no_mangle]
pub unsafe extern "C" fn slurm_spank_task_init(spank: SpankHandle, _ac: c_int, _av: *const *const c_char) -> c_int {
    guard(|| hooks::task_init(spank))
}

/// `slurm_spank_task_exit`: a task ended (slurmstepd).
///
/// # Safety
/// Called by Slurm with its handle.
#[no_mangle]
pub unsafe extern "C" fn slurm_spank_task_exit(spank: SpankHandle, _ac: c_int, _av: *const *const c_char) -> c_int {
    guard(|| hooks::task_exit(spank))
}

/// `slurm_spank_exit`: the step, or the command, is done.
///
/// # Safety
/// Called by Slurm with its handle.
#[no_mangle]
pub unsafe extern "C" fn slurm_spank_exit(spank: SpankHandle, _ac: c_int, _av: *const *const c_char) -> c_int {
    guard(|| hooks::exit(spank))
}

/// `slurm_spank_task_post_fork`: a task was forked (slurmstepd, as root): the
/// step's report starts sampling.
///
/// # Safety
/// Called by Slurm with its handle.
#[no_mangle]
pub unsafe extern "C" fn slurm_spank_task_post_fork(
    spank: SpankHandle,
    _ac: c_int,
    _av: *const *const c_char,
) -> c_int {
    guard(|| hooks::task_post_fork(spank))
}

/// The `--numa-report` option's callback.
unsafe extern "C" fn numa_report_cb(_val: c_int, optarg: *const c_char, _remote: c_int) -> c_int {
    guard(|| {
        let typed = if optarg.is_null() {
            String::new()
        } else {
            // SAFETY: Slurm passes the option's value as a NUL-terminated string.
            unsafe { CStr::from_ptr(optarg) }.to_string_lossy().into_owned()
        };
        hooks::report_value(&typed)
    })
}

/// The `--numa` option's callback (every context where the option is seen).
unsafe extern "C" fn numa_option_cb(_val: c_int, optarg: *const c_char, _remote: c_int) -> c_int {
    guard(|| {
        let typed = if optarg.is_null() {
            String::new()
        } else {
            // SAFETY: Slurm passes the option's value as a NUL-terminated string.
            unsafe { CStr::from_ptr(optarg) }.to_string_lossy().into_owned()
        };
        hooks::option_value(&typed)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    // Outside Slurm the spank_* and slurm_* functions are absent: hooks must
    // still return, and logging is a no-op. The plugin's state is global:
    // tests that set the site take this lock.
    static SITE_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

    #[test]
    fn a_panic_is_an_error_code_not_an_unwind() {
        assert_eq!(guard(|| Ok(())), 0);
        assert_eq!(guard(|| Err(())), SLURM_ERROR);
        assert_eq!(guard(|| panic!("boom")), SLURM_ERROR);
        // and again, with the hook already installed
        assert_eq!(guard(|| panic!("boom")), SLURM_ERROR);
    }

    #[test]
    fn the_option_callback_accepts_modes_and_refuses_the_rest() {
        let _site = SITE_LOCK.lock().unwrap_or_else(|p| p.into_inner());
        // SAFETY: no arguments.
        assert_eq!(unsafe { slurm_spank_init(std::ptr::null_mut(), 0, std::ptr::null()) }, 0);
        for ok in [c"auto", c"local", c"interleave", c"none", c"nodes:0-1"] {
            // SAFETY: a NUL-terminated string, as Slurm passes.
            assert_eq!(unsafe { numa_option_cb(0, ok.as_ptr(), 0) }, 0, "{ok:?}");
        }
        for bad in [c"", c"bogus", c"Local", c"nodes:", c"nodes:x"] {
            // SAFETY: as above.
            assert_eq!(unsafe { numa_option_cb(0, bad.as_ptr(), 1) }, SLURM_ERROR, "{bad:?}");
        }
        // SAFETY: a null value (an option without its argument) is allowed.
        assert_eq!(unsafe { numa_option_cb(0, std::ptr::null(), 0) }, SLURM_ERROR);
    }

    #[test]
    fn init_fails_on_a_bad_argument_and_hooks_return_outside_slurm() {
        let _site = SITE_LOCK.lock().unwrap_or_else(|p| p.into_inner());
        let good = [c"default=local".as_ptr(), c"allowed=local,none".as_ptr()];
        let bad = [c"sideways".as_ptr()];
        let null = std::ptr::null_mut();
        // SAFETY: argument vectors of NUL-terminated strings of the given lengths.
        unsafe {
            assert_eq!(slurm_spank_init(null, 2, good.as_ptr()), 0);
            assert_eq!(slurm_spank_init(null, 1, bad.as_ptr()), SLURM_ERROR);
            assert_eq!(slurm_spank_init(null, 0, std::ptr::null()), 0);
            assert_eq!(slurm_spank_task_init(null, 0, std::ptr::null()), 0, "not remote: nothing to do");
            assert_eq!(slurm_spank_task_exit(null, 0, std::ptr::null()), 0);
            assert_eq!(slurm_spank_exit(null, 0, std::ptr::null()), 0);
        }
    }

    #[test]
    fn the_version_is_the_headers_and_recorded_as_a_line() {
        assert_eq!(&plugin_name, b"numakit\0");
        assert_eq!(&plugin_type, b"spank\0");
        let line = std::str::from_utf8(&numakit_spank_built_for).unwrap();
        assert_eq!(line.strip_prefix('\0').and_then(|l| l.strip_suffix('\0')), Some(BUILT_FOR_LINE));
        let ours = env!("CARGO_PKG_VERSION");
        match BUILT_FOR {
            Ok(n) => {
                assert_eq!(plugin_version, n);
                let text = std::fs::read_to_string(HEADER).unwrap();
                assert_eq!(version::parse_header(&text), Some(n), "{HEADER}");
                let want = format!(
                    "numakit-spank {ours} built for Slurm {} (SLURM_VERSION_NUMBER {n:#x})",
                    version::dotted(n)
                );
                assert_eq!(BUILT_FOR_LINE, want);
            }
            Err(why) => {
                assert_eq!(plugin_version, 0, "no Slurm loads version 0");
                assert!(why.contains(HEADER), "{why}");
                assert_eq!(BUILT_FOR_LINE, format!("numakit-spank {ours} built for no Slurm ({why})"));
            }
        }
    }
}
