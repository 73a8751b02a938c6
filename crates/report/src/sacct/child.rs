//! `sacct` run as a child whose output is bounded in time and in size:
//! it starts in a process group of its own, its output and error pipes
//! are read with `poll` against one deadline (a read never waits past
//! it, whoever holds the pipe's other end), at most a set number of
//! bytes of output are taken, and whatever way reading ends, the whole
//! group is killed and the child reaped. Once the child itself has
//! exited and its output pipe stays idle, the output is at its end even
//! if a process it started still holds the pipe open (`sleep 100 &`):
//! what sacct wrote is all in the pipe by the time it exits.
//!
//! Knows nothing of sacct's rows: [`Output`] is a [`Read`].

use std::io::{self, Read};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStderr, ChildStdout, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// Bytes of the child's error output kept (its start), for the message
/// of a failed run; the rest is read and dropped.
pub const STDERR_KEPT: usize = 64 << 10;

/// How long an idle output pipe is waited on at a time (and how long after
/// the child's exit before the output is taken as ended).
const SLICE: Duration = Duration::from_millis(100);

/// Why reading stopped before the output's end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// The deadline passed.
    TimedOut,
    /// More than the limit of output.
    TooMuch,
}

/// A running child's output, read against a deadline and a limit.
pub struct Output {
    child: Child,
    out: ChildStdout,
    err: Option<ChildStderr>,
    err_kept: Vec<u8>,
    deadline: Instant,
    limit: u64,
    taken: u64,
    /// The child has exited (seen without reaping it, so that its process
    /// group's id stays its own until the group is killed).
    exited: bool,
    done: bool,
    stop: Option<Stop>,
    reaped: Option<ExitStatus>,
}

impl Output {
    /// Starts `program` with `args` and `env` in a process group of its
    /// own, standard input from /dev/null; reading ends at `timeout` from
    /// now or after `limit` bytes of output.
    pub fn spawn(
        program: &str,
        args: &[String],
        env: &[(&str, &str)],
        timeout: Duration,
        limit: u64,
    ) -> io::Result<Output> {
        let mut cmd = Command::new(program);
        cmd.args(args).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn()?;
        let (Some(out), Some(err)) = (child.stdout.take(), child.stderr.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(io::Error::other("no output pipes"));
        };
        Ok(Output {
            child,
            out,
            err: Some(err),
            err_kept: Vec::new(),
            deadline: Instant::now() + timeout,
            limit,
            taken: 0,
            exited: false,
            done: false,
            stop: None,
            reaped: None,
        })
    }

    /// Whether the child has exited, without reaping it.
    fn has_exited(&self) -> bool {
        // SAFETY: an all-zero siginfo_t is a valid value for waitid to fill.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let pid = self.child.id() as libc::id_t;
        // SAFETY: waitid on our own child into a value we own; WNOWAIT
        // leaves it to be reaped by `finish`.
        let r = unsafe { libc::waitid(libc::P_PID, pid, &mut info, libc::WEXITED | libc::WNOHANG | libc::WNOWAIT) };
        // SAFETY: si_pid is set by waitid (0 when no child has exited).
        r == 0 && unsafe { info.si_pid() } != 0
    }

    /// Reads what the error pipe has, keeping the first [`STDERR_KEPT`] bytes.
    fn drain_err(&mut self) {
        let Some(err) = self.err.as_mut() else { return };
        let mut buf = [0u8; 16 << 10];
        match err.read(&mut buf) {
            Ok(0) => self.err = None,
            Ok(n) => {
                let room = STDERR_KEPT.saturating_sub(self.err_kept.len());
                self.err_kept.extend_from_slice(&buf[..n.min(room)]);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => self.err = None,
        }
    }

    /// Kills the child's process group and reaps the child: its exit
    /// status (`None` when it could not be had), its error output's start,
    /// and why reading stopped early, if it did.
    pub fn finish(mut self) -> (Option<ExitStatus>, Vec<u8>, Option<Stop>) {
        self.end();
        (self.reaped, std::mem::take(&mut self.err_kept), self.stop)
    }

    fn end(&mut self) {
        if self.reaped.is_some() {
            return;
        }
        let pgid = self.child.id() as libc::pid_t;
        // SAFETY: a signal to the process group the child leads; the child
        // is not reaped yet, so the id is still its group's.
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        }
        self.reaped = self.child.wait().ok();
    }
}

impl Drop for Output {
    fn drop(&mut self) {
        self.end();
    }
}

impl Read for Output {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.done || buf.is_empty() {
            return Ok(0);
        }
        loop {
            let now = Instant::now();
            if now >= self.deadline {
                self.stop = Some(Stop::TimedOut);
                return Err(io::Error::new(io::ErrorKind::TimedOut, "timed out"));
            }
            let wait = (self.deadline - now).min(SLICE);
            let err_fd = self.err.as_ref().map_or(-1, AsRawFd::as_raw_fd);
            let mut fds = [
                libc::pollfd { fd: self.out.as_raw_fd(), events: libc::POLLIN, revents: 0 },
                libc::pollfd { fd: err_fd, events: libc::POLLIN, revents: 0 },
            ];
            // SAFETY: poll on two pollfd values we own; a negative fd is ignored.
            let r = unsafe { libc::poll(fds.as_mut_ptr(), 2, wait.as_millis().max(1) as libc::c_int) };
            if r < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            if fds[1].revents != 0 {
                self.drain_err();
            }
            if fds[0].revents != 0 {
                let room = self.limit.saturating_sub(self.taken).saturating_add(1);
                let want = buf.len().min(usize::try_from(room).unwrap_or(usize::MAX));
                let n = match self.out.read(&mut buf[..want]) {
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    other => other?,
                };
                if n == 0 {
                    self.done = true;
                    return Ok(0);
                }
                self.taken += n as u64;
                if self.taken > self.limit {
                    self.stop = Some(Stop::TooMuch);
                    return Err(io::Error::other("too much output"));
                }
                return Ok(n);
            }
            if r == 0 {
                // idle: once the child has gone, its output is whole
                if self.exited {
                    self.done = true;
                    return Ok(0);
                }
                self.exited = self.has_exited();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str, timeout_ms: u64, limit: u64) -> (Vec<u8>, Option<ExitStatus>, Vec<u8>, Option<Stop>, Duration) {
        let t = Instant::now();
        let mut o =
            Output::spawn("sh", &["-c".into(), script.into()], &[("X", "1")], Duration::from_millis(timeout_ms), limit)
                .expect("spawn");
        let mut got = Vec::new();
        let _ = o.read_to_end(&mut got);
        let (status, err, stop) = o.finish();
        (got, status, err, stop, t.elapsed())
    }

    #[test]
    fn output_status_and_errors_of_a_child_that_ends() {
        let (out, status, err, stop, _) = sh("echo out; echo \"err $X\" >&2; exit 3", 5000, 1 << 20);
        assert_eq!((out.as_slice(), err.as_slice(), stop), (&b"out\n"[..], &b"err 1\n"[..], None));
        assert_eq!(status.and_then(|s| s.code()), Some(3));
    }

    #[test]
    fn the_deadline_holds_whoever_holds_the_pipe() {
        // the child exits, a process it started keeps the pipe: the output ends
        let (out, status, _, stop, took) = sh("sleep 30 & echo done", 5000, 1 << 20);
        assert!(out == b"done\n" && stop.is_none() && status.is_some_and(|s| s.success()), "{out:?} {stop:?}");
        assert!(took < Duration::from_secs(2), "{took:?}");
        // the child waits on its pipeline: stopped at the deadline, group killed
        let (_, _, _, stop, took) = sh("sleep 30 | cat", 500, 1 << 20);
        assert!(stop == Some(Stop::TimedOut) && took < Duration::from_secs(2), "{stop:?} {took:?}");
        let (_, _, _, stop, took) = sh("trap '' TERM; echo x; sleep 30", 500, 1 << 20);
        assert!(stop == Some(Stop::TimedOut) && took < Duration::from_secs(2), "{stop:?} {took:?}");
    }

    #[test]
    fn output_beyond_the_limit_stops_it() {
        let (out, _, _, stop, _) = sh("yes", 10_000, 1 << 20);
        assert_eq!(stop, Some(Stop::TooMuch));
        assert!(out.len() <= 1 << 20, "{}", out.len());
        let (out, _, err, stop, _) = sh("head -c 100000 /dev/zero >&2; echo ok", 5000, 100);
        assert!(stop.is_none() && out == b"ok\n" && err.len() == 100_000.min(STDERR_KEPT), "{stop:?}");
    }
}
