//! One command run bounded in time and memory, for the hostile-input
//! tests: stdin from /dev/null, its output read (and cut at a cap), its
//! address space capped (`RLIMIT_AS`), killed after a time, and reaped by
//! `wait4` for its peak resident size. A hang fails the case, never CI.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The bounds of one run.
#[derive(Clone, Copy)]
pub struct Bounds {
    /// Killed after this long (longer than any case takes).
    pub hang: Duration,
    /// Address space allowed: a run that asks for more fails at once.
    pub as_limit: u64,
    /// Bytes of stdout kept (the rest is read and dropped).
    pub stdout_cap: u64,
}

/// What one bounded run did.
pub struct Run {
    /// Exit code; `None` when killed (by a signal, or on a hang).
    pub code: Option<i32>,
    pub hung: bool,
    pub signal: Option<i32>,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub max_rss_kib: i64,
    pub secs: f64,
}

impl Run {
    pub fn err(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }
}

/// Runs `c` within `b`.
#[allow(clippy::zombie_processes)]
pub fn run(c: &mut Command, b: Bounds) -> Run {
    let as_limit = b.as_limit;
    // SAFETY: setrlimit only, between fork and exec.
    unsafe {
        c.pre_exec(move || {
            let lim = libc::rlimit { rlim_cur: as_limit, rlim_max: as_limit };
            libc::setrlimit(libc::RLIMIT_AS, &lim);
            Ok(())
        });
    }
    let t = Instant::now();
    let mut child = c.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn");
    let (out, err) = (child.stdout.take().expect("out"), child.stderr.take().expect("err"));
    let keep = |mut r: Box<dyn Read + Send>, cap: u64| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = (&mut r).take(cap).read_to_end(&mut v);
            let _ = std::io::copy(&mut r, &mut std::io::sink());
            v
        })
    };
    let (o, e) = (keep(Box::new(out), b.stdout_cap), keep(Box::new(err), 64 << 10));
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value to be overwritten.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let mut hung = false;
    loop {
        // SAFETY: wait4 on our own child, into values we own.
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut ru) };
        if r == pid {
            break;
        }
        if t.elapsed() > b.hang && !hung {
            hung = true;
            let _ = child.kill();
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let secs = t.elapsed().as_secs_f64();
    let (stdout, stderr) = (o.join().expect("stdout"), e.join().expect("stderr"));
    Run {
        code: libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)),
        hung,
        signal: (!hung && libc::WIFSIGNALED(status)).then(|| libc::WTERMSIG(status)),
        stdout,
        stderr,
        max_rss_kib: ru.ru_maxrss,
        secs,
    }
}
