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

use std::collections::BTreeMap;

use numakit::act;
use numakit::place::{Context, OptKind, PolicyOpt, Request};
use numakit::procs;
use numakit::sets::NodeSet;
use numakit::sys::SysRoot;
use numakit::topo::Topology;
use serde::Serialize;

use super::common::{as_typed, read_error};
use crate::cli::MigrateArgs;
use crate::Failure;

#[derive(Debug, Serialize)]
struct Report {
    pid: i32,
    method: &'static str,
    from: NodeSet,
    to: NodeSet,
    bytes_to_move: u64,
    target_free_bytes: u64,
    dry_run: bool,
    /// Bytes that left the source nodes (numa_maps before vs after).
    bytes_moved: u64,
    /// Pages moved (move_pages: the kernel's per-page answer; migrate_pages:
    /// bytes_moved in 4 KiB pages).
    pages_moved: u64,
    pages_failed: u64,
    failures: BTreeMap<String, u64>,
    before: BTreeMap<u32, u64>,
    after: BTreeMap<u32, u64>,
}

/// The nodes of `--to`/`--from` (`typed`), checked as `--membind` is.
fn nodes(sys: &SysRoot, topo: &Topology, typed: &str, v: &str) -> Result<NodeSet, Failure> {
    let flag = OptKind::MemBind;
    let req = Request { opts: vec![PolicyOpt { kind: flag, value: Some(v.to_string()) }], balancing: false, all: true };
    let plan = req.resolve(&Context { topo, sys, kernel: None }).map_err(|e| as_typed(&e, flag, typed))?;
    Ok(plan.memory.map(|m| m.nodes).unwrap_or_default())
}

fn gib(b: u64) -> String {
    numakit::present::human_bytes(b)
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

    let (method, from, to) = if args.to_cpus_node {
        let threads = procs::read_threads(sys, args.pid).map_err(se)?.unwrap_or_default();
        let mut votes: BTreeMap<u32, usize> = BTreeMap::new();
        for t in &threads {
            if let Some(n) = t.last_cpu.and_then(|c| topo.node_of_cpu(c)) {
                *votes.entry(n).or_default() += 1;
            }
        }
        let (node, _) = votes
            .into_iter()
            .max_by_key(|(n, c)| (*c, std::cmp::Reverse(*n)))
            .ok_or_else(|| Failure::system(format!("cannot tell where the threads of {} run", args.pid)))?;
        let target = if topo.node(node).is_some_and(|n| n.has_memory) {
            std::iter::once(node).collect()
        } else {
            numakit::place::nearest_memory_nodes(&topo, node)
        };
        ("move_pages", topo.memory_nodes().difference(&target), target)
    } else {
        let to = nodes(sys, &topo, "--to", args.to.as_deref().unwrap_or(""))?;
        match &args.from {
            Some(f) => {
                let from = nodes(sys, &topo, "--from", f)?;
                ("migrate_pages", from, to)
            }
            None => ("move_pages", topo.memory_nodes().difference(&to), to),
        }
    };
    if method == "move_pages" && to.len() != 1 {
        return Err(Failure::usage(format!(
            "--to {}: moving pages needs one target node; for several, give --from as well (migrate_pages)",
            to.to_list()
        ))
        .into());
    }
    let bytes_to_move: u64 =
        before.iter().filter(|(n, _)| from.contains(**n) && !to.contains(**n)).map(|(_, b)| b).sum();
    let target_free: u64 =
        to.iter().filter_map(|n| topo.node(n)).filter_map(|n| n.memory.and_then(|m| m.free_bytes)).sum();
    if bytes_to_move > target_free && !args.force {
        return Err(Failure::system(format!(
            "not enough free memory: {} to move from node(s) {} but node(s) {} have {} free (use --force to try anyway)",
            gib(bytes_to_move),
            from.to_list(),
            to.to_list(),
            gib(target_free)
        ))
        .into());
    }
    let mut report = Report {
        pid: args.pid,
        method,
        from: from.clone(),
        to: to.clone(),
        bytes_to_move,
        target_free_bytes: target_free,
        dry_run: args.dry_run,
        bytes_moved: 0,
        pages_moved: 0,
        pages_failed: 0,
        failures: BTreeMap::new(),
        before: before.clone(),
        after: before.clone(),
    };
    if !args.dry_run {
        let pid = act::Pid(args.pid);
        if method == "migrate_pages" {
            let left = act::migrate_pages(pid, &from, &to).map_err(|e| Failure::system(e.to_string()))?;
            report.pages_failed = left;
            if left > 0 {
                report.failures.insert("not migrated (busy, pinned or shared)".into(), left);
            }
        } else {
            move_all(sys, args.pid, to.first().unwrap_or(0), &mut report)?;
        }
        let after = procs::read_numa_maps(sys, args.pid).map_err(se)?.unwrap_or_default();
        report.after = procs::bytes_per_node(&after);
        let on_sources = |m: &BTreeMap<u32, u64>| -> u64 {
            m.iter().filter(|(n, _)| from.contains(**n) && !to.contains(**n)).map(|(_, b)| *b).sum()
        };
        report.bytes_moved = on_sources(&report.before).saturating_sub(on_sources(&report.after));
        if method == "migrate_pages" {
            report.pages_moved = report.bytes_moved / 4096;
        }
    }
    if !args.dry_run {
        crate::output::applied(format!(
            "pid {}: pages moved {} to node(s) {}",
            args.pid,
            sources(&report.from),
            report.to.to_list()
        ));
    }
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_report(&report)?;
    }
    Ok(if report.pages_failed > 0 { 1 } else { 0 })
}

/// Moves every page of `pid` not on `target` there ([`act::move_ranges`]
/// over the mappings that have such pages), tallying the kernel's answers.
fn move_all(sys: &SysRoot, pid: i32, target: u32, report: &mut Report) -> Result<(), Failure> {
    let se = |e: numakit::sys::SysError| Failure::system(e.to_string());
    let maps = procs::read_numa_maps(sys, pid).map_err(se)?.unwrap_or_default();
    let ranges = procs::read_maps(sys, pid).map_err(se)?.unwrap_or_default();
    let todo: Vec<act::PageRange> = maps
        .iter()
        .filter(|m| m.pages.iter().any(|(n, c)| *n != target && *c > 0))
        .filter_map(|m| {
            let r = ranges.iter().find(|r| r.start == m.start)?;
            Some(act::PageRange { start: r.start, end: r.end, page_bytes: m.page_size.max(4096) })
        })
        .collect();
    let mut tally = act::MoveTally::default();
    let r = act::move_ranges(act::Pid(pid), &todo, |_| true, target, u64::MAX, act::MoveFlags::default(), &mut tally);
    report.pages_moved += tally.moved;
    report.pages_failed += tally.failed_total();
    for (why, n) in tally.failed {
        *report.failures.entry(why).or_default() += n;
    }
    match r {
        // The process exited meanwhile: what moved is reported.
        Err(e) if !e.is_errno(libc::ESRCH) => Err(Failure::system(e.to_string())),
        _ => Ok(()),
    }
}

/// Where pages come from, for people: `from node(s) 1-2`, or `from no
/// other node` when the target is the only node with memory.
fn sources(from: &NodeSet) -> String {
    if from.is_empty() {
        "from no other node".into()
    } else {
        format!("from node(s) {}", from.to_list())
    }
}

fn print_report(r: &Report) -> std::io::Result<()> {
    let verb = if r.dry_run { "would move" } else { "moved" };
    outln!(
        "pid {} ({}): {} {} {} to node(s) {}; {} free on the target",
        r.pid,
        r.method,
        verb,
        gib(r.bytes_to_move),
        sources(&r.from),
        r.to.to_list(),
        gib(r.target_free_bytes)
    );
    if !r.dry_run {
        outln!(
            "pages moved: {} ({} left the source nodes), pages not moved: {}",
            r.pages_moved,
            gib(r.bytes_moved),
            r.pages_failed
        );
        for (why, n) in &r.failures {
            outln!("  {n} page(s): {why}");
        }
    }
    outln!("memory per node before -> after (numa_maps):");
    let nodes: std::collections::BTreeSet<u32> = r.before.keys().chain(r.after.keys()).copied().collect();
    for n in nodes {
        outln!(
            "  node {n}: {} -> {}",
            gib(r.before.get(&n).copied().unwrap_or(0)),
            gib(r.after.get(&n).copied().unwrap_or(0))
        );
    }
    Ok(())
}
