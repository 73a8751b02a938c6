//! The process entry point, without Rust's runtime set-up.
//!
//! `numakit` stands in for numactl and numastat, so its start-up is measured
//! against theirs (docs/benchmarks.md, "Launch cost"). Rust's `fn main`
//! runs std's set-up first: among other things it reads `/proc/self/maps`
//! to find the main thread's stack and installs a stack-overflow handler
//! with its own signal stack. That costs as much as all of `numactl -H`
//! beyond an empty C program. The binary is therefore built with
//! `#![no_main]` and enters through C's `main` here, doing only the two
//! parts of std's set-up that change what the program does:
//!
//! * file descriptors 0, 1 and 2 that are closed are opened on
//!   `/dev/null`, so that no file the program opens (a state file, a
//!   report) becomes its standard output;
//! * `SIGPIPE` is ignored, so that writing to a reader that has gone
//!   (`| head`) is an error the program ends on quietly
//!   (`output::describe`), not a signal. `Command` puts `SIGPIPE` back to
//!   its default for the programs `numakit` starts, as under `fn main`.
//!
//! What is left out: a stack overflow ends the process with `SIGSEGV`
//! without std's "has overflowed its stack" line. The arguments are taken
//! from `main`'s own `argv` (not `std::env::args_os`, which only glibc
//! fills without Rust's set-up), and `std::process::exit` flushes standard
//! output as a return from `fn main` would.

use std::ffi::{c_char, c_int, CStr, OsString};
use std::os::unix::ffi::OsStringExt;

/// C's `main`: the set-up above, then [`crate::run`]; a panic that reaches
/// here exits 101 as it does from Rust's `fn main` (its message is printed
/// by the panic hook).
#[no_mangle]
extern "C" fn main(argc: c_int, argv: *const *const c_char) -> c_int {
    standard_fds_open();
    // SAFETY: sets a signal's disposition to a constant; no handler runs.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    // SAFETY: the C runtime passes `argc` NUL-terminated strings in `argv`.
    let args = unsafe { arguments(argc, argv) };
    let code = std::panic::catch_unwind(|| crate::run(args)).map_or(101, c_int::from);
    std::process::exit(code)
}

/// `main`'s arguments as Rust strings of bytes.
///
/// # Safety
/// `argv` holds `argc` pointers to NUL-terminated strings (or is null with
/// `argc` 0), as C's `main` receives them.
unsafe fn arguments(argc: c_int, argv: *const *const c_char) -> Vec<OsString> {
    let n = usize::try_from(argc).unwrap_or(0);
    if argv.is_null() {
        return Vec::new();
    }
    (0..n)
        .map(|i| {
            // SAFETY: i < argc entries of `argv` (caller).
            let p = unsafe { *argv.add(i) };
            // SAFETY: each of them is a NUL-terminated string (caller).
            OsString::from_vec(unsafe { CStr::from_ptr(p) }.to_bytes().to_vec())
        })
        .collect()
}

/// Opens `/dev/null` on each of descriptors 0, 1 and 2 that is closed.
fn standard_fds_open() {
    let mut fds = [0, 1, 2].map(|fd| libc::pollfd { fd, events: 0, revents: 0 });
    // SAFETY: `fds` is a valid array of three pollfd for the call.
    let polled = unsafe { libc::poll(fds.as_mut_ptr(), 3, 0) };
    for p in &fds {
        let closed = if polled >= 0 {
            p.revents & libc::POLLNVAL != 0
        } else {
            // SAFETY: F_GETFD only reads the descriptor's flags.
            let flags = unsafe { libc::fcntl(p.fd, libc::F_GETFD) };
            flags == -1
        };
        if closed {
            // SAFETY: a constant NUL-terminated path; the lowest free
            // descriptor, the closed one, is the one opened.
            unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDWR) };
        }
    }
}
