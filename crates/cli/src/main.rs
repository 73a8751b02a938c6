//! The `numakit` binary: parses arguments, calls the library, prints, and
//! maps the outcome to an exit code (0 ok, 1 system error, 2 usage error).
//! All logic lives in the `numakit` library crate; this is the only place
//! `anyhow` appears.

#[macro_use]
mod output;
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

/// clap's answer: `--help` and `--version` as clap prints them; a usage
/// error as one line, like numakit's other errors (exit 2).
fn usage_error(e: clap::Error) -> anyhow::Result<u8> {
    use clap::error::ErrorKind;
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        e.print().map_err(output::OutputError)?;
        return Ok(0);
    }
    if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
        let _ = e.print();
        return Ok(2);
    }
    Err(Failure::usage(one_line(&e.to_string())).into())
}

/// clap's message in one line: its first line without the `error: `
/// prefix, the lines it continues with (the missing arguments), and the
/// tip it gives further down.
fn one_line(clap_text: &str) -> String {
    let mut lines = clap_text.lines();
    let first = lines.next().unwrap_or("invalid arguments");
    let mut msg = first.strip_prefix("error: ").unwrap_or(first).trim_end().to_string();
    for more in lines.by_ref().take_while(|l| l.starts_with([' ', '\t'])) {
        msg.push(' ');
        msg.push_str(more.trim());
    }
    let tip = clap_text.lines().find_map(|l| l.trim().strip_prefix("tip: ")).map(str::trim);
    match tip {
        Some(tip) => format!("{msg} ({tip}; see --help)"),
        None => format!("{msg} (see --help)"),
    }
}

fn main() -> ExitCode {
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let invoked_as = argv.first().and_then(|a| std::path::Path::new(a).file_name()).map(|n| n.to_os_string());
    let name = invoked_as.as_deref().and_then(|n| n.to_str());
    let result = if name == Some("numactl") {
        // A `numactl` symlink: numactl's options and exit codes.
        cmd::numactl::run(&numakit::sys::SysRoot::from_env(), &argv[1..])
    } else if name == Some("numastat") {
        // numastat's options, output and exit codes.
        cmd::numastat::run(&numakit::sys::SysRoot::from_env(), &argv)
    } else if name == Some("migratepages") {
        // `migratepages PID FROM TO` with its messages and exit codes.
        cmd::migratepages::run(&numakit::sys::SysRoot::from_env(), &argv)
    } else if argv.get(1).is_some_and(|a| a == "numactl") {
        // `numakit numactl ARGS`: every argument is numactl's (`-V`, `--help`
        // too), as through the symlink.
        cmd::numactl::run(&numakit::sys::SysRoot::from_env(), &argv[2..])
    } else {
        match cli::Cli::command().try_get_matches_from(argv).and_then(|m| Ok((cli::Cli::from_arg_matches(&m)?, m))) {
            Ok((args, matches)) => cmd::dispatch(args, &matches),
            Err(e) => usage_error(e),
        }
    };
    let result = result.and_then(|code| {
        output::finish()?;
        Ok(code)
    });
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            // A reader that stopped reading (`| head`) is not an error.
            let Some(line) = output::describe(&e) else { return ExitCode::SUCCESS };
            let code = e.downcast_ref::<Failure>().map_or(1, |f| f.code);
            let _ = writeln!(std::io::stderr(), "numakit: {line}");
            ExitCode::from(code)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::one_line;

    #[test]
    fn clap_errors_in_one_line() {
        let t = "error: the following required arguments were not provided:\n  <PID>\n  --to <NODES>\n\nUsage: numakit migrate <PID>\n\nFor more information, try '--help'.\n";
        assert_eq!(one_line(t), "the following required arguments were not provided: <PID> --to <NODES> (see --help)");
        let t = "error: unexpected argument '-X' found\n\n  tip: to pass '-X' as a value, use '-- -X'\n\nUsage: x\n";
        assert_eq!(one_line(t), "unexpected argument '-X' found (to pass '-X' as a value, use '-- -X'; see --help)");
    }
}
