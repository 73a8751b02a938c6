//! What several commands share: mapping library errors to exit codes,
//! sizes and CPU lists as typed, exec'ing the command, the calling
//! thread's policy, and the nodes' loads for `advise` and `run --auto`.
//! Commands import from here, never from each other.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::time::Duration;

use numakit::act;
use numakit::batch::load::{self, LoadSource};
use numakit::daemon::settings::Settings;
use numakit::place::auto::{self, AutoDecision, AutoRequest, NodeLoad};
use numakit::place::Plan;
use numakit::present::show::SelfPolicy;
use numakit::sets::CpuSet;
use numakit::sys::{SysError, SysRoot};
use numakit::topo::Topology;

use crate::Failure;

/// Maps a read error to an exit code: a bad `--sysroot` is a usage error.
pub fn read_error(e: SysError) -> Failure {
    match e {
        SysError::NotARoot { .. } => Failure::usage(e.to_string()),
        _ => Failure::system(e.to_string()),
    }
}

/// A size as typed (`512M`, `1.5G`, `4096`), or a usage error naming it.
pub fn parse_size(s: &str) -> Result<u64, Failure> {
    numakit::units::parse_size(s).map_err(|e| Failure::usage(e.to_string()))
}

/// A `--config` file that cannot be loaded ([`Settings::load`]), as a
/// usage error naming it.
pub fn config_error(path: &std::path::Path, e: numakit::daemon::settings::LoadError) -> Failure {
    use numakit::daemon::settings::LoadError;
    match e {
        LoadError::Read(e) => Failure::usage(format!("--config {}: {e}", numakit::text::path(path))),
        LoadError::Invalid(e) => Failure::usage(e.to_string()),
    }
}

/// `--reserve CPUS` (numactl's list syntax, relative to the online CPUs).
pub fn parse_reserve(topo: &Topology, r: Option<&String>) -> Result<CpuSet, Failure> {
    match r {
        Some(r) => auto::parse_reserve(r, &topo.online_cpus).map_err(|e| Failure::usage(format!("--reserve {e}"))),
        None => Ok(CpuSet::new()),
    }
}

/// A placement error for an option numakit's own command calls otherwise
/// (`migrate --to`, `pin --cpus`): the message names the option as the
/// user typed it, not numactl's name for it. A usage error.
pub fn as_typed(e: &numakit::place::PlaceError, kind: numakit::place::OptKind, typed: &str) -> Failure {
    let msg = e.to_string();
    Failure::usage(match msg.strip_prefix(kind.flag()) {
        Some(rest) => format!("{typed}{rest}"),
        None => msg,
    })
}

/// What getopt_long says of a long option (`arg` starts with `--`) when a
/// C tool's only long option is `--help` (numastat, migratepages): `None`
/// for `--help` or a prefix of it, else the message getopt prints before
/// the tool shows its usage.
pub fn getopt_help_only(prog: &str, arg: &str) -> Option<String> {
    let long = arg.strip_prefix("--").unwrap_or(arg);
    let (name, value) = match long.split_once('=') {
        Some((n, v)) => (n, Some(v)),
        None => (long, None),
    };
    if !name.is_empty() && "help".starts_with(name) {
        value.map(|_| format!("{prog}: option '--help' doesn't allow an argument"))
    } else {
        Some(format!("{prog}: unrecognized option '{arg}'"))
    }
}

/// The running kernel's version (the library's one `osrelease` reader).
pub use numakit::sys::kernel::version as kernel_version;

/// Refuses to place with a dump's topology (only `--dry-run` plans there).
pub fn refuse_dump(sys: &SysRoot, dry_run: bool) -> Result<(), Failure> {
    if !sys.is_live() && !dry_run {
        return Err(Failure::usage(format!(
            "--sysroot {} is a dump of another machine: placement can only be planned there (use --dry-run)",
            sys.root().display()
        )));
    }
    Ok(())
}

/// Applies the plan and execs the command; returns only on failure.
pub fn apply_and_exec(plan: &Plan, command: &[OsString]) -> anyhow::Result<u8> {
    plan.apply().map_err(|e| Failure::system(format!("cannot apply the placement: {e}")))?;
    exec(command)
}

/// Replaces this process with the command. Exit 127 if it is not found,
/// 126 if it cannot be run (as shells do).
pub fn exec(command: &[OsString]) -> anyhow::Result<u8> {
    let Some((prog, rest)) = command.split_first() else {
        return Err(Failure::usage("no command given").into());
    };
    let err = std::process::Command::new(prog).args(rest).exec();
    let code = if err.kind() == std::io::ErrorKind::NotFound { 127 } else { 126 };
    Err(Failure { code, message: format!("cannot run {}: {err}", numakit::text::quote(&prog.to_string_lossy())) }
        .into())
}

/// A command line as a shell would need it typed.
pub fn shell_words(cmd: &[OsString]) -> String {
    cmd.iter()
        .map(|a| {
            let s = a.to_string_lossy();
            if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c)) {
                s.into_owned()
            } else {
                format!("'{}'", s.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// What numactl --show needs, for the calling thread.
pub fn self_policy(topo: &Topology) -> Result<SelfPolicy, Failure> {
    let p = act::get_mempolicy().map_err(|e| Failure::system(e.to_string()))?;
    let cpus = act::get_affinity(act::Pid::SELF).map_err(|e| Failure::system(e.to_string()))?;
    let interleave_next = if matches!(p.mode, act::Mode::Interleave | act::Mode::WeightedInterleave) {
        act::interleave_next_node().unwrap_or(0)
    } else {
        0
    };
    // libnuma's view: the cpuset's memory nodes ("all nodes"), and among
    // them those whose CPUs meet the affinity (the run node mask).
    let mems_allowed =
        act::mems_allowed().map_err(|e| Failure::system(e.to_string()))?.intersection(&topo.memory_nodes());
    Ok(SelfPolicy {
        mode: p.mode.as_raw(),
        nodes: p.nodes,
        interleave_next,
        run_nodes: topo.nodes_of_cpus(&cpus).intersection(&mems_allowed),
        cpus,
        mems_allowed,
    })
}

/// The nodes' loads: from the running daemon's last scan when it answers
/// on its socket, else sampled now (`/proc/stat` over 200 ms, a CPU idle
/// half that time counts as idle); see [`numakit::batch::load::current`].
/// Returns the loads, the CPUs the daemon reserves, and whose view it is.
pub fn node_loads(
    sys: &SysRoot,
    topo: &Topology,
    socket: Option<&PathBuf>,
    no_daemon: bool,
) -> Result<(Vec<NodeLoad>, CpuSet, String), Failure> {
    let path = socket.cloned().unwrap_or_else(|| Settings::default().socket);
    let how = LoadSource { daemon: (!no_daemon).then_some(path.as_path()), sample: Some(Duration::from_millis(200)) };
    let host = load::current(sys, topo, &how).map_err(|e| Failure::system(e.to_string()))?;
    if let Some(w) = host.warning {
        eprintln!("numakit: {w}; sampling now");
    }
    Ok((host.loads, host.reserved, host.source))
}

/// The advice for `req`, or why the job cannot be placed now, and whose
/// view of the nodes it came from.
pub fn advise(
    sys: &SysRoot,
    topo: &Topology,
    mut req: AutoRequest,
    socket: Option<&PathBuf>,
    no_daemon: bool,
) -> Result<(Result<AutoDecision, auto::Refusal>, String), Failure> {
    let (loads, reserved, source) = node_loads(sys, topo, socket, no_daemon)?;
    req.reserve = req.reserve.union(&reserved);
    Ok((auto::decide(topo, &loads, &req), source))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_name_the_value_as_typed() {
        assert_eq!(parse_size("512M").ok(), Some(512 << 20));
        let e = parse_size("-1G").unwrap_err();
        assert_eq!((e.code, e.message.as_str()), (2, "invalid size \"-1G\": use bytes or a number with K, M, G or T"));
    }

    #[test]
    fn getopt_long_with_help_only() {
        assert_eq!(getopt_help_only("numastat", "--help"), None);
        assert_eq!(getopt_help_only("numastat", "--he"), None);
        assert_eq!(
            getopt_help_only("numastat", "--help=1").as_deref(),
            Some("numastat: option '--help' doesn't allow an argument")
        );
        assert_eq!(
            getopt_help_only("migratepages", "--bogus").as_deref(),
            Some("migratepages: unrecognized option '--bogus'")
        );
        assert_eq!(getopt_help_only("x", "--").as_deref(), Some("x: unrecognized option '--'"));
    }

    #[test]
    fn quoting() {
        assert_eq!(shell_words(&["echo".into(), "a b".into(), "it's".into()]), "echo 'a b' 'it'\\''s'");
    }
}
