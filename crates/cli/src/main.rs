//! The `numakit` binary: parses arguments, calls the library, prints, and
//! maps the outcome to an exit code (0 ok, 1 system error, 2 usage error).
//! All logic lives in the `numakit` library crate; this is the only place
//! `anyhow` appears.

mod cli;
mod cmd;

use std::io::Write;
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches};

/// An error with the exit code it must produce.
#[derive(Debug)]
pub struct Failure {
    /// Exit code.
    pub code: u8,
    /// One-line message.
    pub message: String,
}

impl Failure {
    /// A usage error (exit 2).
    pub fn usage(message: impl Into<String>) -> Self {
        Self { code: 2, message: message.into() }
    }
    /// A system error (exit 1).
    pub fn system(message: impl Into<String>) -> Self {
        Self { code: 1, message: message.into() }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}
impl std::error::Error for Failure {}

fn main() -> ExitCode {
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let invoked_as = argv.first().and_then(|a| std::path::Path::new(a).file_name()).map(|n| n.to_os_string());
    let result = if invoked_as.as_deref() == Some(std::ffi::OsStr::new("numactl")) {
        // A `numactl` symlink: numactl's options and exit codes.
        cmd::numactl::run(&numakit::sys::SysRoot::from_env(), &argv[1..])
    } else {
        let matches = cli::Cli::command().get_matches_from(argv);
        match cli::Cli::from_arg_matches(&matches) {
            Ok(args) => cmd::dispatch(args, &matches),
            Err(e) => e.exit(),
        }
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            // A reader that stopped reading (`| head`) is not an error, also
            // when the write was serde_json's.
            let io_kind = e
                .downcast_ref::<std::io::Error>()
                .map(std::io::Error::kind)
                .or_else(|| e.downcast_ref::<serde_json::Error>().and_then(serde_json::Error::io_error_kind));
            if io_kind == Some(std::io::ErrorKind::BrokenPipe) {
                return ExitCode::SUCCESS;
            }
            let code = e.downcast_ref::<Failure>().map_or(1, |f| f.code);
            let _ = writeln!(std::io::stderr(), "numakit: {e:#}");
            ExitCode::from(code)
        }
    }
}
