//! What several commands share: mapping library errors to exit codes,
//! sizes and CPU lists as typed, exec'ing the command (or running it as a
//! child that gets numakit's signals, for a batch job's outcome record),
//! the calling thread's policy, and the nodes' loads for `advise` and
//! `run --auto`. Commands import from here, never from each other.

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

/// How a supervised command ended ([`supervise`]).
#[derive(Debug, Clone, Copy)]
pub struct Ended {
    /// Its wait status (as `waitpid` gives it).
    pub status: i32,
    /// User and system CPU time of it and the descendants it waited for
    /// (`wait4`'s rusage), seconds.
    pub cpu: (f64, f64),
}

/// The signals a batch system sends a job to stop or warn it, handed on
/// to the supervised command.
const FORWARDED: [libc::c_int; 8] = [
    libc::SIGTERM,
    libc::SIGINT,
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGCONT,
    libc::SIGXCPU,
];

static CHILD: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

extern "C" fn forward(sig: libc::c_int) {
    let pid = CHILD.load(std::sync::atomic::Ordering::SeqCst);
    if pid > 0 {
        // SAFETY: kill is async-signal-safe.
        unsafe { libc::kill(pid, sig) };
    }
}

fn signal_set() -> libc::sigset_t {
    // SAFETY: sigemptyset/sigaddset initialise and fill the set they are given.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in FORWARDED {
            libc::sigaddset(&mut set, s);
        }
        set
    }
}

/// Runs the command as a child of numakit (which stays its parent, so the
/// placement made for this process is its own), hands it the signals a
/// batch system sends ([`FORWARDED`]), and waits for it. The signals are
/// blocked from before the child exists until its pid is known, so none
/// is lost. `started` is called with the child's pid once it runs. Not
/// found: exit 127; cannot be run: 126 (as [`exec`]).
pub fn supervise(command: &[OsString], started: impl FnOnce(i32)) -> anyhow::Result<Ended> {
    let Some((prog, rest)) = command.split_first() else {
        return Err(Failure::usage("no command given").into());
    };
    let set = signal_set();
    // SAFETY: the handler only reads an atomic and calls kill; the masks
    // are this thread's, restored below.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = forward as extern "C" fn(libc::c_int) as usize;
        sa.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut sa.sa_mask);
        for s in FORWARDED {
            libc::sigaction(s, &sa, std::ptr::null_mut());
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
    let mut cmd = std::process::Command::new(prog);
    cmd.args(rest);
    // SAFETY: only async-signal-safe calls between fork and exec: the
    // child unblocks the signals (exec resets the handlers).
    unsafe {
        cmd.pre_exec(move || {
            libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
            Ok(())
        });
    }
    let spawned = cmd.spawn();
    let unblock = || {
        // SAFETY: restores this thread's mask changed above.
        unsafe { libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut()) };
    };
    let child = match spawned {
        Ok(c) => c,
        Err(err) => {
            unblock();
            let code = if err.kind() == std::io::ErrorKind::NotFound { 127 } else { 126 };
            return Err(Failure { code, message: format!("cannot run {}: {err}", prog.to_string_lossy()) }.into());
        }
    };
    let pid = child.id() as i32;
    CHILD.store(pid, std::sync::atomic::Ordering::SeqCst);
    unblock();
    started(pid);
    let mut status = 0;
    // SAFETY: an all-zero rusage is valid; wait4 writes it and the status.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: waits for our own child, writing into the two locals.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
        if r == pid {
            break;
        }
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINTR) {
            return Err(Failure::system(format!("waiting for {}: {e}", prog.to_string_lossy())).into());
        }
    }
    CHILD.store(0, std::sync::atomic::Ordering::SeqCst);
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    Ok(Ended { status, cpu: (secs(ru.ru_utime), secs(ru.ru_stime)) })
}

/// numakit's exit for a supervised command that ended with wait `status`:
/// its exit status, or the same signal (default action restored first, so
/// the batch system sees the job killed as it was); 128 + signal if the
/// signal does not end numakit.
pub fn exit_like(status: i32) -> u8 {
    let sig = status & 0x7f;
    if sig == 0 {
        return ((status >> 8) & 0xff) as u8;
    }
    // SAFETY: restores the default action and raises the signal on this
    // process; a core-dumping signal's dump is the child's already, so
    // numakit's own is turned off.
    unsafe {
        let none = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        libc::setrlimit(libc::RLIMIT_CORE, &none);
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = libc::SIG_DFL;
        libc::sigaction(sig, &sa, std::ptr::null_mut());
        let mut one: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut one);
        libc::sigaddset(&mut one, sig);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &one, std::ptr::null_mut());
        libc::raise(sig);
    }
    (128 + sig) as u8
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

/// The devices this process's batch system gave it (`batch::devices`):
/// its GPUs and NICs from its variables, HTCondor's job ad read as a named
/// file; for one of several tasks of a Slurm step on this host
/// (`SLURM_LOCALID`, `SLURM_NTASKS`), the GPU at its local id.
pub fn task_devices(sys: &SysRoot) -> numakit::batch::devices::JobDevices {
    let var = |k: &str| std::env::var(k).ok();
    let file = |p: &str| numakit::files::read_named_text(std::path::Path::new(p)).ok();
    let num = |k: &str| var(k).and_then(|v| v.trim().parse::<u32>().ok());
    let (task, tasks) = (num("SLURM_LOCALID").unwrap_or(0), num("SLURM_NTASKS").unwrap_or(1));
    numakit::batch::devices::of_task(sys, &var, &file, task, tasks)
}

/// The devices process `pid` was given (its environment, where root or its
/// owner may read it) as `show` and `stat --cgroup` show them, with the
/// share of `memory` (bytes per node) next to them; `None` where its
/// environment names none or cannot be read.
pub fn process_devices(
    sys: &SysRoot,
    topo: &Topology,
    pid: i32,
    memory: &[(u32, u64)],
) -> Option<numakit::present::show::DevicesView> {
    use numakit::present::show::{DeviceView, DevicesView};
    let env = numakit::procs::read_environ(sys, pid).ok().flatten()?;
    let devices = numakit::batch::devices::of_process(sys, &env);
    if devices.source.is_empty() {
        return None;
    }
    let memory_nodes = numakit::place::near::memory_near(topo, &devices.nodes());
    Some(DevicesView {
        source: devices.source.clone(),
        devices: devices
            .devices
            .iter()
            .map(|d| DeviceView {
                name: d.name.clone(),
                address: d.address.clone(),
                model: d.model.clone(),
                node: d.node,
            })
            .collect(),
        unknown: devices.unknown.clone(),
        near_bytes: memory.iter().filter(|(n, _)| memory_nodes.contains(*n)).map(|(_, b)| b).sum(),
        memory_nodes,
    })
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
