//! `numakit migrate PID`: move a running process's memory.
//!
//! * `--from NODES --to NODES`: `migrate_pages(2)`, with migratepages'
//!   relative-order semantics (the k-th source node maps to the k-th
//!   target node);
//! * `--to NODE` / `--to-cpus-node`: `move_pages(2)` for the pages not yet
//!   on the target, in batches, with the kernel's per-page answer.
//!
//! Before moving, the target nodes must have the free memory (refused with
//! the numbers unless `--force`). The result is read back from numa_maps,
//! never assumed.

use numakit::place::migrate::{self, MigrateError, Target};
use numakit::place::{Context, OptKind, PolicyOpt, Request};
use numakit::present::migrate as present;
use numakit::procs;
use numakit::sets::NodeSet;
use numakit::sys::SysRoot;
use numakit::topo::Topology;

use super::common::{as_typed, read_error};
use crate::cli::MigrateArgs;
use crate::Failure;

/// The nodes of `--to`/`--from` (`typed`), checked as `--membind` is.
fn nodes(sys: &SysRoot, topo: &Topology, typed: &str, v: &str) -> Result<NodeSet, Failure> {
    let flag = OptKind::MemBind;
    let req = Request { opts: vec![PolicyOpt { kind: flag, value: Some(v.to_string()) }], balancing: false, all: true };
    let plan = req.resolve(&Context { topo, sys, kernel: None }).map_err(|e| as_typed(&e, flag, typed))?;
    Ok(plan.memory.map(|m| m.nodes).unwrap_or_default())
}

fn failure(e: MigrateError) -> Failure {
    if e.is_usage() {
        Failure::usage(e.to_string())
    } else {
        Failure::system(e.to_string())
    }
}

/// Runs `numakit migrate`.
pub fn run(sys: &SysRoot, args: &MigrateArgs) -> anyhow::Result<u8> {
    if !sys.is_live() {
        return Err(Failure::usage("migrate acts on the running system; --sysroot is not allowed").into());
    }
    let topo = Topology::read_nodes_only(sys).map_err(read_error)?;
    let se = |e: numakit::sys::SysError| Failure::system(e.to_string());
    let maps = procs::read_numa_maps(sys, args.pid)
        .map_err(se)?
        .ok_or_else(|| Failure::usage(format!("no process {}", args.pid)))?;
    let before = procs::bytes_per_node(&maps);
    let (target, threads) = if args.to_cpus_node {
        (Target::CpusNode, procs::read_threads(sys, args.pid).map_err(se)?.unwrap_or_default())
    } else {
        let to = nodes(sys, &topo, "--to", args.to.as_deref().unwrap_or(""))?;
        let from = args.from.as_deref().map(|f| nodes(sys, &topo, "--from", f)).transpose()?;
        (Target::Nodes { to, from }, Vec::new())
    };
    let plan = migrate::plan(&topo, args.pid, before, &threads, &target, args.force).map_err(failure)?;
    let report = if args.dry_run {
        plan.dry_run()
    } else {
        let r = plan.apply(sys).map_err(failure)?;
        crate::output::applied(format!(
            "pid {}: pages moved {} to node(s) {}",
            args.pid,
            present::sources(&r.from),
            r.to.to_list()
        ));
        r
    };
    if args.format.json {
        outln!("{}", present::json(&report));
    } else {
        out!("{}", present::text(&report));
    }
    Ok(if report.pages_failed > 0 { 1 } else { 0 })
}
