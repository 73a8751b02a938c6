//! Kernel NUMA tuning that can always be undone (`numakit tune`).
//!
//! * [`knobs`]: the catalogue (names, aliases, files, accepted values,
//!   defaults, one line each);
//! * [`read`]: current values and the readiness snapshot, through
//!   [`SysRoot`];
//! * [`plan`]: pure: requested settings and current values into a checked
//!   list of writes, or an error naming the knob and the value;
//! * [`state`]: the state file keeping the first-seen original of every
//!   knob numakit changed, written atomically;
//! * [`apply`]: the sequences: check all → save state → write one by one →
//!   roll back on failure; revert → delete the state file only when all is
//!   back;
//! * [`profiles`]: built-in profiles and users' TOML profiles;
//! * [`check`]: pure: the benchmark-readiness report and baseline diff.
//!
//! Their text and JSON for people and scripts are
//! [`crate::present::tune`]'s.
//!
//! Every kernel write goes through [`crate::act::knobs::write_value`];
//! nothing in this module writes a knob itself. The state file and baseline
//! files are numakit's own files, written here.

pub mod apply;
pub mod check;
pub mod knobs;
pub mod plan;
pub mod profiles;
pub mod read;
pub mod state;

use std::path::PathBuf;

pub use apply::{apply, apply_irqs, revert, ApplyOutcome, RevertOutcome};
pub use knobs::{lookup, Knob};
pub use plan::{Plan, Setting, Write};
pub use read::{read_all, Reading};
pub use state::State;

use crate::act::ActError;
use crate::sys::SysRoot;

/// Environment variable naming the state file (like `--state`).
pub const STATE_ENV: &str = "NUMAKIT_TUNE_STATE";
/// Environment variable naming the user profiles folder (like `--profiles-dir`).
pub const PROFILES_ENV: &str = "NUMAKIT_PROFILES_DIR";
/// Default state file, relative to the root.
pub const DEFAULT_STATE: &str = "var/lib/numakit/tune-state.json";
/// Default user profiles folder, relative to the root.
pub const DEFAULT_PROFILES_DIR: &str = "etc/numakit/profiles.d";

/// Why a tune operation stopped.
#[derive(Debug, thiserror::Error)]
pub enum TuneError {
    /// A command-line setting without `=`.
    #[error("\"{arg}\": expected KNOB=VALUE")]
    BadAssignment {
        /// The argument.
        arg: String,
    },
    /// No knob has this name or alias.
    #[error("unknown knob \"{name}\" (numakit tune show lists them)")]
    UnknownKnob {
        /// The name given.
        name: String,
    },
    /// The value is not one the kernel accepts.
    #[error("{knob}={value}: {why}")]
    Invalid {
        /// Canonical knob name.
        knob: String,
        /// The value given.
        value: String,
        /// What is accepted.
        why: String,
    },
    /// The knob is missing or unreadable on this system.
    #[error("{knob}: unavailable: {why}")]
    Unavailable {
        /// Canonical knob name.
        knob: String,
        /// Why.
        why: String,
    },
    /// One knob asked for twice with different values.
    #[error("{knob} is set twice, to {first} and {second}")]
    Conflict {
        /// Canonical knob name.
        knob: String,
        /// First value.
        first: String,
        /// Second value.
        second: String,
    },
    /// A profile that cannot be found or read.
    #[error("profile {name}: {why}")]
    Profile {
        /// Name or file.
        name: String,
        /// What is wrong.
        why: String,
    },
    /// Changing the live system needs root.
    #[error(
        "numakit tune {action} changes kernel settings and needs root (effective user id {euid}); nothing was changed"
    )]
    NotRoot {
        /// The subcommand.
        action: String,
        /// The effective user id.
        euid: u32,
    },
    /// The state file cannot be read, parsed, written or locked.
    #[error("state file {}: {why}", crate::text::path(path))]
    State {
        /// The state file.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
    /// A write failed; the writes made before it were rolled back.
    #[error("{0}")]
    Write(Box<WriteFailure>),
    /// A revert that could not restore everything (the state file is kept).
    #[error("revert incomplete, state file {} kept: {}", crate::text::path(path), failures.join("; "))]
    Revert {
        /// The state file.
        path: PathBuf,
        /// One line per knob that is not back.
        failures: Vec<String>,
    },
    /// A baseline file that cannot be read, parsed or written.
    #[error("baseline {}: {why}", crate::text::path(path))]
    Baseline {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
}

/// A write the kernel refused during an apply, and what was rolled back.
#[derive(Debug, thiserror::Error)]
#[error(
    "{knob}: cannot write {value} to {}: {error}; {}",
    crate::text::path(path),
    rollback_text(rolled_back, rollback_failed)
)]
pub struct WriteFailure {
    /// Canonical knob name.
    pub knob: String,
    /// Full path of the file.
    pub path: PathBuf,
    /// The value.
    pub value: String,
    /// What the kernel said.
    pub error: ActError,
    /// Knobs put back to their previous value.
    pub rolled_back: Vec<String>,
    /// Knobs that could not be put back, with why.
    pub rollback_failed: Vec<String>,
}

fn rollback_text(done: &[String], failed: &[String]) -> String {
    match (done.is_empty(), failed.is_empty()) {
        (_, false) => format!(
            "ROLLBACK FAILED for {} (rolled back: {}); the state file keeps the originals: run numakit tune revert",
            failed.join(", "),
            if done.is_empty() { "none".to_string() } else { done.join(", ") }
        ),
        (true, true) => "nothing had been written".to_string(),
        (false, true) => format!("rolled back {}", done.join(", ")),
    }
}

impl TuneError {
    /// Whether this is a usage error (a bad name, value or profile: exit 2)
    /// rather than a system one (exit 1).
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            TuneError::BadAssignment { .. }
                | TuneError::UnknownKnob { .. }
                | TuneError::Invalid { .. }
                | TuneError::Conflict { .. }
                | TuneError::Profile { .. }
        )
    }
}

/// The state file: `given` (`--state`, `NUMAKIT_TUNE_STATE`), else
/// [`DEFAULT_STATE`] below the root. With `make`, the default's folders are
/// made; below a dump they are made beneath its root following no link
/// ([`crate::beneath::make_dirs`]), so that a dump whose `var/lib` is a link
/// cannot have the state file written elsewhere (refused, nothing written).
pub fn state_path(sys: &SysRoot, given: Option<&std::path::Path>, make: bool) -> Result<PathBuf, TuneError> {
    if let Some(p) = given {
        return Ok(p.to_path_buf());
    }
    let path = sys.path(DEFAULT_STATE);
    let folder = std::path::Path::new(DEFAULT_STATE).parent().unwrap_or(std::path::Path::new(""));
    if make && !sys.is_live() {
        let made = crate::beneath::open_root(sys.root())
            .and_then(|root| crate::beneath::make_dirs(std::os::fd::AsFd::as_fd(&root), folder));
        if let Err(e) = made {
            let why = match e.raw_os_error() {
                Some(libc::ELOOP) => format!("its folder {} is reached through a symbolic link", folder.display()),
                _ => format!("cannot make its folder {}: {e}", folder.display()),
            };
            return Err(TuneError::State { path, why: format!("{why}; nothing was written (give --state FILE)") });
        }
    }
    Ok(path)
}

/// Fails unless the caller may change `sys`: on the live root (`/`) the
/// effective user must be root; a fake root (`--sysroot DIR`) is not
/// checked, so tests run as any user.
pub fn require_root(sys: &SysRoot, action: &str) -> Result<(), TuneError> {
    if !sys.is_live() {
        return Ok(());
    }
    // SAFETY: geteuid has no arguments and cannot fail.
    let euid = unsafe { libc::geteuid() };
    if euid == 0 {
        Ok(())
    } else {
        Err(TuneError::NotRoot { action: action.to_string(), euid })
    }
}

/// Test helpers: a fake root with the files of a Linux 6.x machine.
#[cfg(test)]
pub(crate) mod testutil {
    use crate::sys::SysRoot;

    /// Writes `content` to `rel` below `d`, creating folders.
    pub(crate) fn put(d: &tempfile::TempDir, rel: &str, content: &str) {
        let p = d.path().join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, content).expect("write");
    }

    /// A root with NUMA balancing (scan knobs on debugfs), THP, khugepaged,
    /// weighted interleave for nodes 0-1 (auto named `__auto_type`, as on
    /// 6.18), demotion, and no promote rate limit.
    pub(crate) fn fake_root() -> (tempfile::TempDir, SysRoot) {
        let d = tempfile::tempdir().expect("tempdir");
        for (rel, v) in [
            ("sys/devices/system/cpu/cpu0/topology/core_id", "0"),
            ("proc/sys/kernel/osrelease", "6.12.0-test"),
            ("proc/sys/kernel/random/boot_id", "11111111-2222-3333-4444-555555555555"),
            ("proc/sys/kernel/numa_balancing", "1"),
            ("proc/sys/vm/zone_reclaim_mode", "0"),
            ("proc/sys/vm/numa_stat", "1"),
            ("sys/kernel/debug/sched/numa_balancing/scan_delay_ms", "1000"),
            ("sys/kernel/debug/sched/numa_balancing/scan_period_min_ms", "1000"),
            ("sys/kernel/debug/sched/numa_balancing/scan_period_max_ms", "60000"),
            ("sys/kernel/debug/sched/numa_balancing/scan_size_mb", "256"),
            ("sys/kernel/debug/sched/numa_balancing/hot_threshold_ms", "1000"),
            ("sys/kernel/mm/transparent_hugepage/enabled", "always [madvise] never"),
            ("sys/kernel/mm/transparent_hugepage/defrag", "always defer defer+madvise [madvise] never"),
            ("sys/kernel/mm/transparent_hugepage/khugepaged/scan_sleep_millisecs", "10000"),
            ("sys/kernel/mm/transparent_hugepage/khugepaged/alloc_sleep_millisecs", "60000"),
            ("sys/kernel/mm/transparent_hugepage/khugepaged/pages_to_scan", "4096"),
            ("sys/kernel/mm/transparent_hugepage/khugepaged/defrag", "1"),
            ("sys/kernel/mm/mempolicy/weighted_interleave/node0", "1"),
            ("sys/kernel/mm/mempolicy/weighted_interleave/node1", "1"),
            ("sys/kernel/mm/mempolicy/weighted_interleave/__auto_type", "true"),
            ("sys/kernel/mm/numa/demotion_enabled", "false"),
        ] {
            put(&d, rel, &format!("{v}\n"));
        }
        let r = SysRoot::at(d.path());
        (d, r)
    }
}
