//! `numakit run`: resolve the placement, check it, apply it to this
//! process, then exec the command (so its exit status and signals are the
//! command's own, and the placement holds for everything it forks).

use std::time::{Duration, Instant};

use clap::ArgMatches;
use numakit::batch::{self, ledger::Ledger, JobError, JobMode, Site, TaskDecision, TaskInfo};
use numakit::daemon::settings::Settings;
use numakit::place::auto::EX_TEMPFAIL;
use numakit::place::{Context, OptKind, PolicyOpt, Request};
use numakit::procs;
use numakit::sys::SysRoot;
use numakit::topo::Topology;

use super::common::{
    apply_and_exec, exec, kernel_version, parse_reserve, parse_size, read_error, refuse_dump, shell_words,
};
use crate::cli::RunArgs;
use crate::Failure;

mod job;

/// The policy options in command-line order (`same` refers back).
pub fn request_from(args: &RunArgs, m: &ArgMatches) -> Request {
    let mut opts: Vec<(usize, PolicyOpt)> = Vec::new();
    let mut push = |id: &str, kind: OptKind, v: &Option<String>| {
        if let Some(v) = v {
            let at = m.index_of(id).unwrap_or(usize::MAX);
            opts.push((at, PolicyOpt { kind, value: Some(v.clone()) }));
        }
    };
    push("cpunodebind", OptKind::CpuNodeBind, &args.cpunodebind);
    push("physcpubind", OptKind::PhysCpuBind, &args.physcpubind);
    push("membind", OptKind::MemBind, &args.membind);
    push("preferred", OptKind::Preferred, &args.preferred);
    push("preferred_many", OptKind::PreferredMany, &args.preferred_many);
    push("interleave", OptKind::Interleave, &args.interleave);
    push("weighted_interleave", OptKind::WeightedInterleave, &args.weighted_interleave);
    if args.localalloc {
        opts.push((
            m.index_of("localalloc").unwrap_or(usize::MAX),
            PolicyOpt { kind: OptKind::LocalAlloc, value: None },
        ));
    }
    opts.sort_by_key(|(i, _)| *i);
    Request { opts: opts.into_iter().map(|(_, o)| o).collect(), balancing: args.balancing, all: args.all }
}

/// Runs `numakit run`.
pub fn run(sys: &SysRoot, args: &RunArgs, m: &ArgMatches) -> anyhow::Result<u8> {
    refuse_dump(sys, args.dry_run)?;
    let topo = Topology::read_nodes_only(sys).map_err(read_error)?;
    let socket = args.daemon.socket.clone().unwrap_or_else(|| Settings::default().socket);
    if args.auto {
        let job_words = [args.experiment.is_some(), args.policy.is_some(), args.guard.is_some(), args.chosen.is_some()];
        if job_words.contains(&true) || args.default_mode.is_some() || args.outcomes.is_some() {
            return job::run(sys, &topo, args, &socket);
        }
        return run_auto(sys, &topo, args, &socket);
    }
    let req = request_from(args, m);
    let plan = req
        .resolve(&Context { topo: &topo, sys, kernel: kernel_version(sys) })
        .map_err(|e| Failure::usage(e.to_string()))?;
    if args.dry_run {
        outln!("cpus: {}", plan.cpus.as_ref().map_or("unchanged".into(), |c| c.to_list()));
        outln!(
            "memory: {}",
            plan.memory.as_ref().map_or("unchanged".into(), |p| format!("{} {}", p.mode.name(), p.nodes.to_list()))
        );
        outln!("numactl: numactl {} {}", plan.numactl_args().join(" "), shell_words(&args.command));
        return Ok(0);
    }
    exclude(sys, args, &socket)?;
    apply_and_exec(&plan, &args.command)
}

/// `--exclude-from-daemon`: registers this process (which the command
/// replaces, keeping the pid) or its cgroup with the daemon. No daemon is
/// a warning: the command runs anyway.
fn exclude(sys: &SysRoot, args: &RunArgs, socket: &std::path::Path) -> Result<(), Failure> {
    let Some(by) = &args.exclude_from_daemon else { return Ok(()) };
    let pid = std::process::id() as i32;
    let cgroup = if by == "cgroup" {
        match procs::cgroup::read_path(sys, pid).map_err(|e| Failure::system(e.to_string()))? {
            Some(p) if p != "/" => Some(p),
            _ => {
                return Err(Failure::usage(
                    "--exclude-from-daemon=cgroup: this process is in no cgroup v2 of its own (use --exclude-from-daemon=pid)",
                ))
            }
        }
    } else {
        None
    };
    if let Some(w) = batch::exclude_from_daemon(socket, pid, cgroup.as_deref()) {
        eprintln!("numakit: {w}");
    }
    Ok(())
}

/// The CPUs the job needs: `--cpus`, else the batch system's count, else
/// the CPUs this process may use when narrower than the machine, else 1;
/// and where the number came from.
fn job_cpus(args: &RunArgs, topo: &Topology) -> Result<(u32, String), Failure> {
    if let Some(n) = args.cpus {
        if n == 0 {
            return Err(Failure::usage("--cpus 0: a job needs at least one CPU"));
        }
        return Ok((n, "--cpus".into()));
    }
    Ok(batch::env::job_cpus(topo))
}

fn run_auto(sys: &SysRoot, topo: &Topology, args: &RunArgs, socket: &std::path::Path) -> anyhow::Result<u8> {
    match place_auto(sys, topo, args, socket, args.if_no_fit == "run")? {
        Auto::Exit(code) => Ok(code),
        Auto::Placed(_) | Auto::Unplaced => {
            exclude(sys, args, socket)?;
            exec(&args.command)
        }
    }
}

/// What `--auto`'s placement of this process came to.
enum Auto {
    /// Placed (recorded in the ledger, applied).
    Placed(TaskDecision),
    /// Nothing fits, and the job runs unplaced (said on stderr).
    Unplaced,
    /// Run nothing: exit with this code (75: no fit; 0: a dry run).
    Exit(u8),
}

/// Places this process as `--auto` says, waiting for a fit up to `--wait`;
/// with nothing fitting then, runs unplaced (`run_unplaced`) or exits 75.
fn place_auto(
    sys: &SysRoot,
    topo: &Topology,
    args: &RunArgs,
    socket: &std::path::Path,
    run_unplaced: bool,
) -> anyhow::Result<Auto> {
    let reserve = parse_reserve(topo, args.reserve.as_ref())?;
    let wait = match &args.wait {
        Some(w) => numakit::units::parse_duration(w).map_err(|e| Failure::usage(format!("--wait: {e}")))?,
        None => Duration::ZERO,
    };
    let sample = numakit::units::parse_duration(&args.sample).map_err(|e| Failure::usage(format!("--sample: {e}")))?;
    let (cpus, cpus_from) = job_cpus(args, topo)?;
    // --mem, else inside a Slurm job its memory request (SLURM_MEM_PER_CPU
    // times the CPUs, or SLURM_MEM_PER_NODE), else not said.
    let mem_bytes = match &args.mem {
        Some(s) => parse_size(s)?,
        None => batch::env::slurm_task_mem(&|k| std::env::var(k).ok(), cpus, 1).unwrap_or(0),
    };
    let devices = super::common::task_devices(sys);
    let task = TaskInfo { label: "run --auto".into(), cpus, mem_bytes, reserve, job_step: None, devices };
    let mode = if args.near_devices { JobMode::Devices } else { JobMode::Auto };
    let site = site(args, socket, (!sample.is_zero()).then_some(sample));
    let ledger = Ledger::new(&site.ledger);
    let end = Instant::now() + wait;
    let (prepared, d) = loop {
        let prepared = batch::prepare(sys, &site, &ledger, None).map_err(|e| Failure::system(e.to_string()))?;
        match batch::decide_task(&prepared.topo, &mode, &prepared.given, &prepared.loads, &task) {
            Ok(d) => break (prepared, d),
            Err(JobError::NoFit(why)) => {
                drop(prepared);
                if Instant::now() >= end {
                    let why = why.strip_prefix(&format!("--numa={mode}: ")).unwrap_or(&why);
                    let waited = if wait.is_zero() { String::new() } else { format!(" after waiting {:?}", wait) };
                    if run_unplaced && !args.dry_run {
                        eprintln!("numakit: cannot place the job{waited}: {why}: running it unplaced");
                        return Ok(Auto::Unplaced);
                    }
                    eprintln!("numakit: cannot place the job now{waited}: {why}");
                    return Ok(Auto::Exit(EX_TEMPFAIL));
                }
                std::thread::sleep(Duration::from_secs(1).min(end.saturating_duration_since(Instant::now())));
            }
            Err(e) => return Err(Failure::usage(e.to_string()).into()),
        }
    };
    for w in &prepared.warnings {
        eprintln!("numakit: {w}");
    }
    let plan = d.plan.clone().unwrap_or_default();
    if args.dry_run {
        let rule = d.rule.map_or(String::new(), |r| format!(" ({r:?})"));
        outln!("decision: node(s) {}{rule}", d.nodes.to_list());
        outln!("reason: {}", d.reason.strip_prefix(&format!("--numa={mode}: ")).unwrap_or(&d.reason));
        outln!("cpus: {cpus} ({cpus_from})");
        outln!("view: {}", prepared.source);
        outln!("numactl: numactl {} {}", plan.numactl_args().join(" "), shell_words(&args.command));
        for w in &prepared.ledger_notes {
            eprintln!("numakit: {w}");
        }
        return Ok(Auto::Exit(0));
    }
    let (_, ledger_notes) =
        batch::commit(sys, prepared, &d, "run --auto").map_err(|e| Failure::system(e.to_string()))?;
    // The wrappers' only log is the job's stderr: the ledger's trouble too.
    for w in &ledger_notes {
        eprintln!("numakit: {w}");
    }
    Ok(Auto::Placed(d))
}

/// The site's settings as `run --auto`'s options give them.
fn site(args: &RunArgs, socket: &std::path::Path, sample: Option<Duration>) -> Site {
    Site { socket: socket.to_path_buf(), ledger: args.ledger.clone(), sample, ..Site::default() }
}
