//! `numakit run`: resolve the placement, check it, apply it to this
//! process, then exec the command (so its exit status and signals are the
//! command's own, and the placement holds for everything it forks).

use std::ffi::OsString;
use std::os::unix::process::CommandExt;

use clap::ArgMatches;
use numakit::place::auto::{AutoRequest, EX_TEMPFAIL};
use numakit::place::{Context, OptKind, Plan, PolicyOpt, Request};

use numakit::sys::SysRoot;
use numakit::topo::Topology;

use super::topo::read_error;
use crate::cli::RunArgs;
use crate::Failure;

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

/// Parses sizes like `512M`, `64G`, `1.5T`, `4096`.
pub fn parse_size(s: &str) -> Result<u64, Failure> {
    let t = s.trim();
    let (num, mult) = match t.chars().last() {
        Some('k' | 'K') => (&t[..t.len() - 1], 1u64 << 10),
        Some('m' | 'M') => (&t[..t.len() - 1], 1 << 20),
        Some('g' | 'G') => (&t[..t.len() - 1], 1 << 30),
        Some('t' | 'T') => (&t[..t.len() - 1], 1 << 40),
        _ => (t, 1),
    };
    match num.parse::<f64>() {
        Ok(v) if v >= 0.0 && v.is_finite() => Ok((v * mult as f64) as u64),
        _ => Err(Failure::usage(format!("invalid size \"{s}\": use bytes or a number with K, M, G or T"))),
    }
}

/// The running kernel's version.
pub fn kernel_version(sys: &SysRoot) -> Option<(u32, u32)> {
    sys.read("proc/sys/kernel/osrelease").ok().flatten().and_then(|t| numakit::place::parse_kernel_version(&t))
}

fn shell_words(cmd: &[OsString]) -> String {
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

fn refuse_dump(sys: &SysRoot, dry_run: bool) -> Result<(), Failure> {
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
    Err(Failure { code, message: format!("cannot run {}: {err}", prog.to_string_lossy()) }.into())
}

/// Runs `numakit run`.
pub fn run(sys: &SysRoot, args: &RunArgs, m: &ArgMatches) -> anyhow::Result<u8> {
    refuse_dump(sys, args.dry_run)?;
    let topo = Topology::read_nodes_only(sys).map_err(read_error)?;
    if args.auto {
        return run_auto(sys, &topo, args);
    }
    let req = request_from(args, m);
    let plan = req
        .resolve(&Context { topo: &topo, sys, kernel: kernel_version(sys) })
        .map_err(|e| Failure::usage(e.to_string()))?;
    if args.dry_run {
        println!("cpus: {}", plan.cpus.as_ref().map_or("unchanged".into(), |c| c.to_list()));
        println!(
            "memory: {}",
            plan.memory.as_ref().map_or("unchanged".into(), |p| format!("{} {}", p.mode.name(), p.nodes.to_list()))
        );
        println!("numactl: numactl {} {}", plan.numactl_args().join(" "), shell_words(&args.command));
        return Ok(0);
    }
    apply_and_exec(&plan, &args.command)
}

fn run_auto(sys: &SysRoot, topo: &Topology, args: &RunArgs) -> anyhow::Result<u8> {
    let mem_bytes = match &args.mem {
        Some(s) => parse_size(s)?,
        None => 0,
    };
    let reserve = super::advise::parse_reserve(topo, args.reserve.as_ref())?;
    let req = AutoRequest { cpus: args.cpus.unwrap_or(1), mem_bytes, reserve };
    // The nodes' idle CPUs and free memory: the running daemon's view when
    // it answers, else sampled now (see `numakit advise`).
    let (decision, _source) = super::advise::advise(sys, topo, req, None, false)?;
    let d = match decision {
        Ok(d) => d,
        Err(refusal) => {
            eprintln!("numakit: cannot place the job now: {refusal}");
            return Ok(EX_TEMPFAIL);
        }
    };
    if args.dry_run {
        println!("decision: node(s) {} ({:?})", d.nodes.to_list(), d.rule);
        println!("reason: {}", d.reason);
        println!("numactl: numactl {} {}", d.plan.numactl_args().join(" "), shell_words(&args.command));
        return Ok(0);
    }
    apply_and_exec(&d.plan, &args.command)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("512M").ok(), Some(512 << 20));
        assert_eq!(parse_size("1.5G").ok(), Some(3 << 29));
        assert_eq!(parse_size("4096").ok(), Some(4096));
        assert!(parse_size("x").is_err() && parse_size("-1G").is_err());
    }

    #[test]
    fn quoting() {
        assert_eq!(shell_words(&["echo".into(), "a b".into(), "it's".into()]), "echo 'a b' 'it'\\''s'");
    }
}
