//! The one way numakit writes its output: every command prints through
//! [`stdout`] (or the [`outln!`] and [`out!`] macros), so that
//!
//! * a reader that stops reading (`numakit show | head -1`) ends the
//!   command quietly with exit 0, as ripgrep does;
//! * any other failure to write (a full disk, `>/dev/full`) is one line,
//!   `numakit: cannot write the output: …`, exit 1, never a panic;
//! * a change already made to the system before the output failed is
//!   said in that line ([`applied`]), so a script is not told a pin or a
//!   move failed when only its report did.
//!
//! Errors of the output are tagged ([`OutputError`]) so `main` can tell
//! them from errors of the files a command reads or writes.

use std::fmt;
use std::io::{self, Write};
use std::sync::Mutex;

/// A failure to write the command's output.
#[derive(Debug)]
pub struct OutputError(pub io::Error);

impl fmt::Display for OutputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot write the output: {}", self.0)
    }
}

impl std::error::Error for OutputError {}

/// Standard output, whose errors say they are the output's.
pub struct Out(io::StdoutLock<'static>);

/// Standard output (locked while the value lives).
pub fn stdout() -> Out {
    Out(io::stdout().lock())
}

fn tag(e: io::Error) -> io::Error {
    if e.get_ref().is_some_and(|r| r.is::<OutputError>()) {
        return e;
    }
    io::Error::new(e.kind(), OutputError(e))
}

impl Write for Out {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf).map_err(tag)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.0.flush().map_err(tag)
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.0.write_all(buf).map_err(tag)
    }
}

/// Writes `text` to standard output.
pub fn print(text: &str) -> io::Result<()> {
    stdout().write_all(text.as_bytes())
}

/// `writeln!` to standard output; `?` on its error.
macro_rules! outln {
    ($($arg:tt)*) => {
        ::std::io::Write::write_fmt(&mut crate::output::stdout(), format_args!("{}\n", format_args!($($arg)*)))?
    };
}

/// `write!` to standard output; `?` on its error.
macro_rules! out {
    ($($arg:tt)*) => {
        ::std::io::Write::write_fmt(&mut crate::output::stdout(), format_args!($($arg)*))?
    };
}

static APPLIED: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Records a change this run made to the system (`pid 42: 3 thread(s) now
/// on CPUs 1`), for the error line should the output then fail.
pub fn applied(what: impl Into<String>) {
    APPLIED.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(what.into());
}

/// How an error ends the run: `None` for a reader that went away (exit 0,
/// nothing said), else the line to print. An output failure after a
/// change says the change was made.
pub fn describe(e: &anyhow::Error) -> Option<String> {
    for cause in e.chain() {
        let io = cause
            .downcast_ref::<io::Error>()
            .map(|i| (i.kind(), i.get_ref().is_some_and(|r| r.is::<OutputError>())))
            .or_else(|| cause.downcast_ref::<OutputError>().map(|o| (o.0.kind(), true)));
        let Some((kind, ours)) = io else { continue };
        if kind == io::ErrorKind::BrokenPipe {
            return None;
        }
        if ours {
            let done = APPLIED.lock().unwrap_or_else(std::sync::PoisonError::into_inner).join("; ");
            let why = cause
                .downcast_ref::<io::Error>()
                .and_then(|i| i.get_ref())
                .and_then(|r| r.downcast_ref::<OutputError>())
                .map_or_else(|| cause.to_string(), ToString::to_string);
            return Some(if done.is_empty() { why } else { format!("done: {done}; but {why}") });
        }
    }
    Some(format!("{e:#}"))
}

/// Flushes standard output at the end of a run.
pub fn finish() -> io::Result<()> {
    stdout().flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broken_pipe_is_quiet_other_output_errors_say_so() {
        let pipe: anyhow::Error = tag(io::Error::from(io::ErrorKind::BrokenPipe)).into();
        assert_eq!(describe(&pipe), None);
        let full: anyhow::Error = tag(io::Error::from_raw_os_error(libc::ENOSPC)).into();
        let line = describe(&full).expect("an error");
        assert!(line.starts_with("cannot write the output: No space left on device"), "{line}");
        // Not the output's: the error as it is.
        let other: anyhow::Error = io::Error::from_raw_os_error(libc::ENOSPC).into();
        assert!(describe(&other).expect("an error").starts_with("No space left"), "{:?}", describe(&other));
        // After a change: said as done.
        applied("pid 42: 1 thread(s) now on CPUs 1");
        let line = describe(&full).expect("an error");
        assert!(line.starts_with("done: pid 42: 1 thread(s) now on CPUs 1; but cannot write the output"), "{line}");
        // serde_json writing to the output.
        let json = serde_json::to_writer(stdout_failing(), &[1]).expect_err("fails");
        let line = describe(&anyhow::Error::from(json)).expect("an error");
        assert!(line.contains("cannot write the output"), "{line}");
    }

    struct Failing;
    impl Write for Failing {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(tag(io::Error::from_raw_os_error(libc::ENOSPC)))
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    fn stdout_failing() -> Failing {
        Failing
    }
}
