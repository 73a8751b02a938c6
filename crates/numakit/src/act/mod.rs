//! The act layer: thin, typed wrappers over the Linux system calls that
//! change where a process runs and where its memory lives.
//!
//! # What this layer owns
//!
//! This is the only code in numakit that changes process placement. Each
//! wrapper is one system call (through `libc::syscall`, no libnuma), in the
//! style of the `nix` crate: one module per area, `Result<T, ActError>`,
//! newtypes for ids ([`Pid`]), enums for exclusive modes ([`Mode`]), flag
//! structs for flag sets ([`ModeFlags`], [`MbindFlags`], [`MoveFlags`]).
//!
//! * [`mempolicy`]: `set_mempolicy`, `get_mempolicy`, `mbind`;
//! * [`affinity`]: `sched_setaffinity`, `sched_getaffinity`, `getcpu`;
//! * [`pages`]: `migrate_pages`, `move_pages`;
//! * [`alloc`]: [`NodeBuffer`], an anonymous mapping bound to nodes (for
//!   tests and benchmarks);
//! * [`knobs`]: writes of kernel tunables under `/proc/sys` and `/sys`
//!   (for `tune` and the daemon), relative to a [`crate::sys::SysRoot`];
//! * [`log`]: the one recording point. Every wrapper that changes the system
//!   calls [`log::record`] after the kernel accepted the change; queries are
//!   not recorded.
//!
//! Node and CPU sets cross the kernel boundary as bitmaps of `unsigned long`
//! words sized from the set itself (never from a fixed 64 or 1024), so
//! sparse node ids, more than 64 nodes and more than 1024 CPUs work.
//!
//! # What it must not do
//!
//! It never reads `/sys` or `/proc` (that is [`crate::sys`]) and never
//! decides anything (that is the decide layer): callers pass the exact
//! mode, nodes and CPUs, and the kernel's answer comes back unchanged, as an
//! [`ActError`] naming the call and the errno when it refuses.

pub mod affinity;
pub mod alloc;
pub mod knobs;
pub mod log;
mod mask;
pub mod mempolicy;
pub mod pages;

use std::fmt;

pub use affinity::{current_cpu_and_node, get_affinity, set_affinity};
pub use alloc::NodeBuffer;
pub use log::{Change, ChangeRecord};
pub use mempolicy::{
    get_mempolicy, get_mempolicy_at, interleave_next_node, kernel_supports, mbind, mems_allowed, node_of_address,
    set_mempolicy, MbindFlags, Mode, ModeFlags, ParseModeError, Policy,
};
pub use pages::{migrate_pages, move_pages, move_ranges, query_pages, MoveFlags, MoveTally, PageRange, PageStatus};

/// `Result` of the act layer.
pub type Result<T, E = ActError> = std::result::Result<T, E>;

/// Why a placement call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ActError {
    /// The kernel refused the call. Displays like
    /// `set_mempolicy: Invalid argument (EINVAL)`.
    #[error("{call}: {message} ({})", errno_name(*.errno))]
    Sys {
        /// The system call, as its man page names it (`set_mempolicy`).
        call: &'static str,
        /// The positive `errno` value.
        errno: i32,
        /// The C library's text for `errno` (`strerror`).
        message: String,
    },
    /// The running kernel does not offer what was asked (a mode or flag
    /// newer than the kernel, or a combination it never accepts).
    #[error("{what} is not supported: {why}")]
    Unsupported {
        /// What was asked, e.g. `MPOL_F_NUMA_BALANCING`.
        what: String,
        /// Why, in words, e.g. which kernel version brought it.
        why: String,
    },
    /// The arguments were refused before any system call was made
    /// (e.g. `move_pages` with fewer target nodes than pages).
    #[error("{call}: {why}")]
    Invalid {
        /// The wrapper that refused.
        call: &'static str,
        /// What is wrong with the arguments.
        why: String,
    },
}

impl ActError {
    /// A [`ActError::Sys`] for `call` failing with `errno`, with the C
    /// library's message.
    pub fn sys(call: &'static str, errno: i32) -> Self {
        ActError::Sys { call, errno, message: errno_message(errno) }
    }

    /// The `errno` of a [`ActError::Sys`], `None` for the other kinds.
    pub fn errno(&self) -> Option<i32> {
        match self {
            ActError::Sys { errno, .. } => Some(*errno),
            _ => None,
        }
    }

    /// Whether this is the kernel refusing with `errno`.
    pub fn is_errno(&self, errno: i32) -> bool {
        self.errno() == Some(errno)
    }
}

/// The symbolic name of an errno value (`EINVAL`), or `errno N` when it is
/// not one this layer expects.
pub fn errno_name(errno: i32) -> String {
    let name = match errno {
        libc::EPERM => "EPERM",
        libc::ENOENT => "ENOENT",
        libc::ESRCH => "ESRCH",
        libc::EINTR => "EINTR",
        libc::EIO => "EIO",
        libc::ENXIO => "ENXIO",
        libc::E2BIG => "E2BIG",
        libc::EBADF => "EBADF",
        libc::EAGAIN => "EAGAIN",
        libc::ENOMEM => "ENOMEM",
        libc::EACCES => "EACCES",
        libc::EFAULT => "EFAULT",
        libc::EBUSY => "EBUSY",
        libc::EEXIST => "EEXIST",
        libc::EXDEV => "EXDEV",
        libc::ENODEV => "ENODEV",
        libc::EINVAL => "EINVAL",
        libc::ENOSPC => "ENOSPC",
        libc::ERANGE => "ERANGE",
        libc::ENOSYS => "ENOSYS",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::EHWPOISON => "EHWPOISON",
        _ => return format!("errno {errno}"),
    };
    name.to_string()
}

/// The C library's text for `errno` ("Invalid argument"), without Rust's
/// `(os error N)` suffix.
pub fn errno_message(errno: i32) -> String {
    let full = std::io::Error::from_raw_os_error(errno).to_string();
    match full.strip_suffix(&format!(" (os error {errno})")) {
        Some(s) => s.to_string(),
        None => full,
    }
}

/// The `errno` the last failed call left in this thread.
pub(crate) fn last_errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO)
}

/// A process or thread id as the kernel takes it (`pid_t`). `Pid::SELF` (0)
/// means the calling thread for the per-thread calls
/// (`sched_setaffinity`) and the calling process for the per-process ones
/// (`migrate_pages`, `move_pages`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Pid(pub i32);

impl Pid {
    /// The caller (0).
    pub const SELF: Pid = Pid(0);

    /// The kernel's value.
    pub const fn as_raw(self) -> i32 {
        self.0
    }

    /// Whether this is [`Pid::SELF`].
    pub const fn is_self(self) -> bool {
        self.0 == 0
    }

    /// The calling thread's own id ([gettid(2)](https://man7.org/linux/man-pages/man2/gettid.2.html)),
    /// e.g. to name this thread to another one.
    pub fn this_thread() -> Pid {
        // SAFETY: gettid takes no argument and cannot fail.
        let tid = unsafe { libc::syscall(libc::SYS_gettid) };
        Pid(tid as i32)
    }

    /// The calling process's id ([getpid(2)](https://man7.org/linux/man-pages/man2/getpid.2.html)).
    pub fn this_process() -> Pid {
        Pid(std::process::id() as i32)
    }

    /// How change records name this id when it is a process: `self` or `pid N`.
    pub(crate) fn process_target(self) -> String {
        if self.is_self() {
            "self".to_string()
        } else {
            format!("pid {}", self.0)
        }
    }

    /// How change records name this id when it is a thread: `self` or `tid N`.
    pub(crate) fn thread_target(self) -> String {
        if self.is_self() {
            "self".to_string()
        } else {
            format!("tid {}", self.0)
        }
    }
}

impl fmt::Display for Pid {
    /// `self` for [`Pid::SELF`], else the number.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_self() {
            f.write_str("self")
        } else {
            write!(f, "{}", self.0)
        }
    }
}

impl From<i32> for Pid {
    fn from(raw: i32) -> Self {
        Pid(raw)
    }
}

/// Test helpers shared by the act modules' tests.
#[cfg(test)]
pub(crate) mod testutil {
    use std::sync::{Mutex, MutexGuard, PoisonError};

    static LOG_LOCK: Mutex<()> = Mutex::new(());

    /// Serialises the tests that drain the change log (`log::take`), so one
    /// test never takes another's records.
    pub(crate) fn log_lock() -> MutexGuard<'static, ()> {
        LOG_LOCK.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `f` in a new thread and returns its result: per-thread state
    /// (memory policy, affinity) changed there never leaks into the test
    /// harness's threads, whatever `--test-threads` is.
    pub(crate) fn in_fresh_thread<T: Send>(f: impl FnOnce() -> T + Send) -> T {
        std::thread::scope(|s| s.spawn(f).join().expect("test thread panicked"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sys_error_displays_call_message_and_name() {
        let e = ActError::sys("set_mempolicy", libc::EINVAL);
        assert_eq!(e.to_string(), "set_mempolicy: Invalid argument (EINVAL)");
        assert_eq!(e.errno(), Some(libc::EINVAL));
        assert!(e.is_errno(libc::EINVAL));
        let e = ActError::sys("sched_getaffinity", libc::EPERM);
        assert_eq!(e.to_string(), "sched_getaffinity: Operation not permitted (EPERM)");
    }

    #[test]
    fn unknown_errno_has_a_numeric_name() {
        assert_eq!(errno_name(4000), "errno 4000");
        assert!(ActError::sys("mbind", 4000).to_string().starts_with("mbind: "));
    }

    #[test]
    fn other_errors_display() {
        let e = ActError::Unsupported { what: "MPOL_F_NUMA_BALANCING".into(), why: "needs Linux 5.12".into() };
        assert_eq!(e.to_string(), "MPOL_F_NUMA_BALANCING is not supported: needs Linux 5.12");
        assert_eq!(e.errno(), None);
        let e = ActError::Invalid { call: "move_pages", why: "2 nodes for 3 pages".into() };
        assert_eq!(e.to_string(), "move_pages: 2 nodes for 3 pages");
    }

    #[test]
    fn pid_names() {
        assert_eq!(Pid::SELF.to_string(), "self");
        assert_eq!(Pid(42).to_string(), "42");
        assert_eq!(Pid(42).process_target(), "pid 42");
        assert_eq!(Pid(42).thread_target(), "tid 42");
        assert_eq!(Pid::SELF.thread_target(), "self");
        assert!(Pid::this_thread().as_raw() > 0);
        assert_eq!(Pid::this_process().as_raw() as u32, std::process::id());
    }
}
