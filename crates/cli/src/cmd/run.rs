//! `numakit run`: resolve the placement, check it, apply it to this
//! process, then exec the command (so its exit status and signals are the
//! command's own, and the placement holds for everything it forks).

use clap::ArgMatches;
use numakit::place::auto::{AutoRequest, EX_TEMPFAIL};
use numakit::place::{Context, OptKind, PolicyOpt, Request};

use numakit::sys::SysRoot;
use numakit::topo::Topology;

use super::common::{
    advise, apply_and_exec, kernel_version, parse_reserve, parse_size, read_error, refuse_dump, shell_words,
};
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
        outln!("cpus: {}", plan.cpus.as_ref().map_or("unchanged".into(), |c| c.to_list()));
        outln!(
            "memory: {}",
            plan.memory.as_ref().map_or("unchanged".into(), |p| format!("{} {}", p.mode.name(), p.nodes.to_list()))
        );
        outln!("numactl: numactl {} {}", plan.numactl_args().join(" "), shell_words(&args.command));
        return Ok(0);
    }
    apply_and_exec(&plan, &args.command)
}

fn run_auto(sys: &SysRoot, topo: &Topology, args: &RunArgs) -> anyhow::Result<u8> {
    let mem_bytes = match &args.mem {
        Some(s) => parse_size(s)?,
        None => 0,
    };
    let reserve = parse_reserve(topo, args.reserve.as_ref())?;
    let req = AutoRequest { cpus: args.cpus.unwrap_or(1), mem_bytes, reserve };
    // The nodes' idle CPUs and free memory: the running daemon's view when
    // it answers, else sampled now (see `numakit advise`).
    let (decision, _source) = advise(sys, topo, req, None, false)?;
    let d = match decision {
        Ok(d) => d,
        Err(refusal) => {
            eprintln!("numakit: cannot place the job now: {refusal}");
            return Ok(EX_TEMPFAIL);
        }
    };
    if args.dry_run {
        outln!("decision: node(s) {} ({:?})", d.nodes.to_list(), d.rule);
        outln!("reason: {}", d.reason);
        outln!("numactl: numactl {} {}", d.plan.numactl_args().join(" "), shell_words(&args.command));
        return Ok(0);
    }
    apply_and_exec(&d.plan, &args.command)
}
