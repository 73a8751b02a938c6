//! `numakit ctl`: talks to a running daemon over its control socket
//! (root, or the configured group): status, exclude, include, forget,
//! reload, decisions.

use std::io::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand};
use numakit::daemon::ctl::{self, Client};
use numakit::daemon::protocol::Target;
use numakit::daemon::settings::Settings;
use numakit::present;

use super::common::config_error;
use crate::Failure;

/// `numakit ctl`. Its --socket and --json may also follow the subcommand.
#[derive(Debug, Args)]
#[command(mut_arg("socket", |a| a.global(true)), mut_arg("json", |a| a.global(true)))]
pub struct CtlArgs {
    #[command(flatten)]
    pub daemon: crate::cli::SocketArg,
    /// Take the socket path from this daemon configuration file.
    #[arg(long, value_name = "FILE", global = true)]
    pub config: Option<PathBuf>,
    #[command(flatten)]
    pub format: crate::cli::JsonOut,
    /// What to do.
    #[command(subcommand)]
    pub what: CtlCommand,
}

/// `numakit ctl` subcommands.
#[derive(Debug, Subcommand)]
pub enum CtlCommand {
    /// The daemon's state and counters.
    Status,
    /// Never touch a process (PID), every process of a command name (NAME), or every process in a
    /// cgroup v2 and below it (cgroup:PATH, PATH as in /proc/PID/cgroup); dropped when it ends.
    Exclude {
        /// PID, command name or cgroup:PATH.
        #[arg(allow_hyphen_values = true)]
        target: String,
    },
    /// Undo an exclusion; manage it even outside the configured include lists.
    Include {
        /// PID, command name or cgroup:PATH.
        #[arg(allow_hyphen_values = true)]
        target: String,
    },
    /// Drop a PID, command name or cgroup:PATH from both lists and forget the harm it was remembered for.
    Forget {
        /// PID, command name or cgroup:PATH.
        #[arg(allow_hyphen_values = true)]
        target: String,
    },
    /// Re-read the configuration file.
    Reload,
    /// The last decisions, one JSON line each.
    Decisions {
        /// How many.
        #[arg(long, short = 'n', default_value_t = 20)]
        last: usize,
    },
}

/// The socket path from the arguments.
pub fn socket_path(socket: Option<&PathBuf>, config: Option<&PathBuf>) -> Result<PathBuf, Failure> {
    if let Some(s) = socket {
        return Ok(s.clone());
    }
    if let Some(c) = config {
        return Ok(Settings::load(c).map_err(|e| config_error(c, e))?.socket);
    }
    Ok(Settings::default().socket)
}

/// A target as typed, or a usage error naming it.
fn target(t: &str) -> Result<Target, Failure> {
    Target::parse(t).map_err(Failure::usage)
}

/// Runs `numakit ctl`.
pub fn run(args: &CtlArgs) -> anyhow::Result<u8> {
    let socket = socket_path(args.daemon.socket.as_ref(), args.config.as_ref())?;
    let daemon = Client::new(socket, Duration::from_secs(30));
    let failed = |e: ctl::ClientError| Failure::system(e.to_string());
    let mut out = crate::output::stdout();
    // JSON objects as the daemon's answers always printed them (keys in
    // alphabetical order).
    let value = |v: &dyn erased::Json| v.value();
    let done = match &args.what {
        CtlCommand::Status => {
            let st = daemon.status().map_err(failed)?;
            if args.format.json {
                writeln!(out, "{}", serde_json::to_string_pretty(&value(&st))?)?;
            } else {
                out.write_all(present::daemon::status_text(&st).as_bytes())?;
            }
            return Ok(0);
        }
        CtlCommand::Decisions { last } => {
            let records = daemon.decisions(*last).map_err(failed)?;
            if args.format.json {
                writeln!(out, "{}", serde_json::to_string_pretty(&value(&records))?)?;
            } else {
                for r in &records {
                    writeln!(out, "{}", value(r))?;
                }
            }
            return Ok(0);
        }
        CtlCommand::Exclude { target: t } => daemon.exclude(target(t)?),
        CtlCommand::Include { target: t } => daemon.include(target(t)?),
        CtlCommand::Forget { target: t } => daemon.forget(target(t)?),
        CtlCommand::Reload => daemon.reload(),
    }
    .map_err(failed)?;
    if args.format.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&done)?)?;
    } else {
        writeln!(out, "{}", done.done)?;
    }
    Ok(0)
}

/// Any answer as a JSON value (objects with sorted keys).
mod erased {
    /// Something serialisable, as a value.
    pub trait Json {
        /// The value (`null` if it cannot be one).
        fn value(&self) -> serde_json::Value;
    }
    impl<T: serde::Serialize> Json for T {
        fn value(&self) -> serde_json::Value {
            serde_json::to_value(self).unwrap_or_default()
        }
    }
}
