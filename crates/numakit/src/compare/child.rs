//! The processes a comparison run starts (the copies of the workload, the
//! `before` and `after` commands): started in a process group of their
//! own, their output read with bounds, and ended with compare.
//!
//! * Output: standard output is kept only up to what the figure needs
//!   (nothing for wall time; the first bytes a regex searches otherwise),
//!   the rest read and dropped; standard error only as its last
//!   [`STDERR_TAIL`] bytes, for the message of a failed run. A workload
//!   that writes gigabytes costs compare no memory.
//! * Process group: what a run starts shares one process group, not
//!   compare's (a terminal's Ctrl-C reaches compare alone). While it runs,
//!   [`end_running`] signals that group, and [`forward_signals`] makes
//!   SIGINT, SIGTERM and SIGHUP to compare end the group first, then
//!   compare itself by the same signal (so its parent sees why it ended).
//!
//! It does not decide what to run or measure ([`super::runner`]).

use std::io::{self, Read};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicI32, Ordering};

/// Bytes of a process's standard error kept (its end), for messages.
pub const STDERR_TAIL: usize = 4096;

/// The process group of the processes running now (0: none).
static GROUP: AtomicI32 = AtomicI32::new(0);

/// What a finished process left.
#[derive(Debug)]
pub struct Output {
    /// How it ended.
    pub status: ExitStatus,
    /// Its standard output, up to the bytes asked to keep.
    pub stdout: Vec<u8>,
    /// Whether standard output went on beyond what was kept.
    pub stdout_cut: bool,
    /// The last [`STDERR_TAIL`] bytes of its standard error.
    pub stderr_tail: Vec<u8>,
}

/// Runs `f` with SIGINT, SIGTERM and SIGHUP held back in this thread, so
/// that a process started in `f` is recorded before such a signal ends
/// compare.
fn signals_held<T>(f: impl FnOnce() -> T) -> T {
    // SAFETY: sigset_t is plain data, set up by sigemptyset/sigaddset
    // before use; pthread_sigmask changes this thread's mask only, and the
    // old mask is put back below.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            libc::sigaddset(&mut set, s);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
        let r = f();
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        r
    }
}

/// Starts `cmd` (standard input from `/dev/null`, output piped) in the
/// process group `group`, or in a new one it leads (`None`), which becomes
/// the group [`end_running`] ends. The child starts with default handlers
/// (exec resets caught signals) and an empty signal mask (set here: the
/// standard library passes the parent thread's mask on).
pub fn spawn(cmd: &mut Command, group: Option<i32>) -> io::Result<Child> {
    use std::os::unix::process::CommandExt;
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(group.unwrap_or(0));
    // SAFETY: between fork and exec the closure only calls sigemptyset and
    // sigprocmask, which are async-signal-safe, on a set on its stack.
    unsafe {
        cmd.pre_exec(|| {
            let mut none: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut none);
            if libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut()) != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
    signals_held(|| {
        let child = cmd.spawn()?;
        if group.is_none() {
            GROUP.store(i32::try_from(child.id()).unwrap_or(0), Ordering::SeqCst);
        }
        Ok(child)
    })
}

/// The processes started since the last [`spawn`] in a new group have all
/// been waited for: nothing is left to end.
pub fn done() {
    GROUP.store(0, Ordering::SeqCst);
}

/// Sends `sig` (then `SIGCONT`, for stopped ones) to the process group
/// running now, if any. Safe in a signal handler (atomics and `kill`).
pub fn end_running(sig: libc::c_int) {
    let g = GROUP.load(Ordering::SeqCst);
    if g > 0 {
        // SAFETY: kill has no memory arguments; a group that is gone is ESRCH.
        unsafe {
            libc::kill(-g, sig);
            libc::kill(-g, libc::SIGCONT);
        }
    }
}

extern "C" fn on_signal(sig: libc::c_int) {
    end_running(sig);
    // SAFETY: signal and raise are async-signal-safe: the default action
    // (ending the process) is restored and taken.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        libc::raise(sig);
    }
}

/// From now on SIGINT, SIGTERM and SIGHUP to this process end the running
/// group ([`end_running`]) and then this process, by the same signal.
pub fn forward_signals() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: the handler only touches atomics and async-signal-safe calls.
        unsafe { libc::signal(sig, on_signal as *const () as libc::sighandler_t) };
    }
}

/// Waits for `child`, reading its standard output (the first `keep` bytes
/// kept) and error (the tail kept) at the same time, so it never blocks on
/// a full pipe.
pub fn wait(mut child: Child, keep: usize) -> io::Result<Output> {
    let out = child.stdout.take();
    let err = child.stderr.take();
    let ((stdout, stdout_cut), stderr_tail) = std::thread::scope(|s| {
        let e = s.spawn(move || err.map(tail).unwrap_or_default());
        let o = out.map(|p| head(p, keep)).unwrap_or_default();
        (o, e.join().unwrap_or_default())
    });
    let status = child.wait()?;
    Ok(Output { status, stdout, stdout_cut, stderr_tail })
}

/// Reads `r` to its end: the first `keep` bytes, and whether there were
/// more (read and dropped).
fn head(mut r: impl Read, keep: usize) -> (Vec<u8>, bool) {
    let mut kept = Vec::new();
    let mut buf = vec![0u8; 64 << 10];
    let mut cut = false;
    loop {
        match r.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                let room = keep - kept.len();
                kept.extend_from_slice(&buf[..n.min(room)]);
                cut |= n > room;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    (kept, cut)
}

/// Reads `r` to its end, keeping the last [`STDERR_TAIL`] bytes.
fn tail(mut r: impl Read) -> Vec<u8> {
    let mut kept: Vec<u8> = Vec::with_capacity(2 * STDERR_TAIL);
    let mut buf = vec![0u8; 64 << 10];
    loop {
        match r.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                let chunk = &buf[n.saturating_sub(STDERR_TAIL)..n];
                kept.extend_from_slice(chunk);
                if kept.len() > STDERR_TAIL {
                    kept.drain(..kept.len() - STDERR_TAIL);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    kept
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The running group is one per process: tests that start groups take turns.
    pub(crate) static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());

    #[test]
    fn output_is_kept_within_bounds() {
        let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
        let mut c = Command::new("sh");
        c.arg("-c").arg("head -c 3000000 /dev/zero; echo end; head -c 100000 /dev/zero >&2; echo last words >&2");
        let child = spawn(&mut c, None).expect("spawn");
        let out = wait(child, 1000).expect("wait");
        done();
        assert!(out.status.success());
        assert_eq!(out.stdout.len(), 1000);
        assert!(out.stdout_cut);
        assert_eq!(out.stderr_tail.len(), STDERR_TAIL);
        assert!(out.stderr_tail.ends_with(b"\0last words\n"));
        let mut c = Command::new("sh");
        c.arg("-c").arg("printf 'a\\377b'");
        let out = wait(spawn(&mut c, None).expect("spawn"), 10).expect("wait");
        assert_eq!((out.stdout.as_slice(), out.stdout_cut), (&b"a\xffb"[..], false));
    }

    #[test]
    fn the_running_group_is_ended_with_what_it_started() {
        let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
        let mut c = Command::new("sh");
        c.arg("-c").arg("sleep 30 & sleep 30; wait");
        let child = spawn(&mut c, None).expect("spawn");
        let pid = child.id() as i32;
        // SAFETY: getpgid has no memory arguments.
        assert_eq!(unsafe { libc::getpgid(pid) }, pid, "a group of its own");
        std::thread::sleep(std::time::Duration::from_millis(50));
        let t = std::time::Instant::now();
        end_running(libc::SIGTERM);
        let out = wait(child, 0).expect("wait");
        done();
        assert!(t.elapsed() < std::time::Duration::from_secs(5), "{:?}", t.elapsed());
        assert_eq!(std::os::unix::process::ExitStatusExt::signal(&out.status), Some(libc::SIGTERM));
        // The background sleep went with the group (wait returned: nothing
        // holds the pipes open), and the group empties once init has
        // reaped it.
        // SAFETY: kill with signal 0 only asks whether the group exists.
        let gone = || unsafe { libc::kill(-pid, 0) } == -1;
        while !gone() && t.elapsed() < std::time::Duration::from_secs(5) {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(gone(), "the group outlived the signal");
    }

    #[test]
    fn the_child_starts_with_no_signal_held() {
        // `sleep` itself, not a shell: a shell blocks signals for a moment
        // around each fork and wait, so its mask is not the one it was
        // given. The mask is read once the program runs (its name is
        // `sleep`), before that it is still the spawning side's.
        let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
        let mut c = Command::new("sleep");
        c.arg("30");
        let child = spawn(&mut c, None).expect("spawn");
        let pid = child.id();
        let t = std::time::Instant::now();
        let status = loop {
            let s = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
            if s.starts_with("Name:\tsleep\n") || t.elapsed() > std::time::Duration::from_secs(5) {
                break s;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        };
        end_running(libc::SIGKILL);
        let _ = wait(child, 0);
        done();
        assert!(status.starts_with("Name:\tsleep\n"), "sleep never ran: {status}");
        assert!(status.contains("SigBlk:\t0000000000000000"), "no signal held in the child: {status}");
    }
}
