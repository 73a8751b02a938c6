//! Moving a running process's memory (`numakit migrate`): which nodes the
//! pages leave and reach and by which call ([`plan`]: the node the
//! threads run on, the target nodes' free memory), and which address
//! ranges a page move walks ([`page_ranges`], shared with the daemon's
//! page mover). Deciding is pure; [`MigratePlan::apply`] hands the plan to
//! [`act`] and reads the result back from `numa_maps`, never assuming it.
//! Nothing here prints.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::act::{self, ActError, MoveFlags, MoveTally, PageRange};
use crate::procs::{self, MapRange, NumaMapping, ThreadInfo};
use crate::sets::NodeSet;
use crate::sys::{SysError, SysRoot};
use crate::topo::Topology;

/// How pages move.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Method {
    /// `migrate_pages(2)`: every page on the source nodes, the k-th source
    /// node to the k-th target node (migratepages' relative order).
    #[serde(rename = "migrate_pages")]
    MigratePages,
    /// `move_pages(2)`: each page not on the one target node, with the
    /// kernel's answer per page.
    #[serde(rename = "move_pages")]
    MovePages,
}

impl Method {
    /// The system call's name.
    pub fn name(self) -> &'static str {
        match self {
            Method::MigratePages => "migrate_pages",
            Method::MovePages => "move_pages",
        }
    }
}

/// Where the pages go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// To these nodes; from `from` by `migrate_pages` when given, else
    /// from every other memory node by `move_pages`.
    Nodes {
        /// Target nodes.
        to: NodeSet,
        /// Source nodes (`--from`).
        from: Option<NodeSet>,
    },
    /// To the node where most of the process's threads last ran (its
    /// nearest memory nodes when it has no memory), by `move_pages`.
    CpusNode,
}

/// Why a move cannot be planned or made.
#[derive(Debug, thiserror::Error)]
pub enum MigrateError {
    /// No thread's last CPU is on a node of the model.
    #[error("cannot tell where the threads of {0} run")]
    NoThreadNode(i32),
    /// `move_pages` has one target node.
    #[error("--to {0}: moving pages needs one target node; for several, give --from as well (migrate_pages)")]
    OneTarget(String),
    /// The target nodes lack the free memory (and no force).
    #[error(
        "not enough free memory: {} to move from node(s) {} but node(s) {} have {} free (use --force to try anyway)",
        crate::units::human_bytes(*.to_move),
        .from,
        .to,
        crate::units::human_bytes(*.free)
    )]
    NoRoom {
        /// Bytes to move.
        to_move: u64,
        /// Source nodes, as a list.
        from: String,
        /// Target nodes, as a list.
        to: String,
        /// Free bytes on the targets.
        free: u64,
    },
    /// A kernel file could not be read.
    #[error(transparent)]
    Sys(#[from] SysError),
    /// The kernel refused a call.
    #[error(transparent)]
    Act(#[from] ActError),
}

impl MigrateError {
    /// Whether the request itself is wrong (a usage error), not the system.
    pub fn is_usage(&self) -> bool {
        matches!(self, MigrateError::OneTarget(_))
    }
}

/// A planned move of one process's memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigratePlan {
    /// The process.
    pub pid: i32,
    /// The call.
    pub method: Method,
    /// Source nodes.
    pub from: NodeSet,
    /// Target nodes.
    pub to: NodeSet,
    /// Bytes on the source nodes that are not targets (`numa_maps`).
    pub bytes_to_move: u64,
    /// Free bytes on the target nodes (their `MemFree`).
    pub target_free_bytes: u64,
    /// Bytes per node before (`numa_maps`).
    pub before: BTreeMap<u32, u64>,
}

/// What a move did, or would do (a dry run): the plan's numbers and the
/// kernel's answers, memory per node read back from `numa_maps`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MigrateReport {
    /// The process.
    pub pid: i32,
    /// The call.
    pub method: Method,
    /// Source nodes.
    pub from: NodeSet,
    /// Target nodes.
    pub to: NodeSet,
    /// Bytes on the source nodes that are not targets, before.
    pub bytes_to_move: u64,
    /// Free bytes on the target nodes, before.
    pub target_free_bytes: u64,
    /// Nothing was moved.
    pub dry_run: bool,
    /// Bytes that left the source nodes (numa_maps before vs after).
    pub bytes_moved: u64,
    /// Pages moved (move_pages: the kernel's per-page answer;
    /// migrate_pages: bytes_moved in 4 KiB pages).
    pub pages_moved: u64,
    /// Pages not moved.
    pub pages_failed: u64,
    /// Pages not moved, by why.
    pub failures: BTreeMap<String, u64>,
    /// Bytes per node before.
    pub before: BTreeMap<u32, u64>,
    /// Bytes per node after (the same as before for a dry run).
    pub after: BTreeMap<u32, u64>,
}

/// Plans moving `pid`'s memory (`before`: its bytes per node from
/// `numa_maps`; `threads`: its threads, read for [`Target::CpusNode`]).
/// Refuses a `move_pages` to several nodes, and, unless `force`, a move
/// whose bytes pass the target nodes' free memory.
pub fn plan(
    topo: &Topology,
    pid: i32,
    before: BTreeMap<u32, u64>,
    threads: &[ThreadInfo],
    target: &Target,
    force: bool,
) -> Result<MigratePlan, MigrateError> {
    let (method, from, to) = match target {
        Target::CpusNode => {
            let node = threads_node(topo, threads).ok_or(MigrateError::NoThreadNode(pid))?;
            let to = if topo.node(node).is_some_and(|n| n.has_memory) {
                std::iter::once(node).collect()
            } else {
                super::nearest_memory_nodes(topo, node)
            };
            (Method::MovePages, topo.memory_nodes().difference(&to), to)
        }
        Target::Nodes { to, from: Some(from) } => (Method::MigratePages, from.clone(), to.clone()),
        Target::Nodes { to, from: None } => (Method::MovePages, topo.memory_nodes().difference(to), to.clone()),
    };
    if method == Method::MovePages && to.len() != 1 {
        return Err(MigrateError::OneTarget(to.to_list()));
    }
    let bytes_to_move = leaving(&before, &from, &to);
    let target_free_bytes: u64 =
        to.iter().filter_map(|n| topo.node(n)).filter_map(|n| n.memory.and_then(|m| m.available_bytes())).sum();
    if bytes_to_move > target_free_bytes && !force {
        return Err(MigrateError::NoRoom {
            to_move: bytes_to_move,
            from: from.to_list(),
            to: to.to_list(),
            free: target_free_bytes,
        });
    }
    Ok(MigratePlan { pid, method, from, to, bytes_to_move, target_free_bytes, before })
}

/// The node where most threads last ran (the lowest id on a tie).
fn threads_node(topo: &Topology, threads: &[ThreadInfo]) -> Option<u32> {
    let mut votes: BTreeMap<u32, usize> = BTreeMap::new();
    for t in threads {
        if let Some(n) = t.last_cpu.and_then(|c| topo.node_of_cpu(c)) {
            *votes.entry(n).or_default() += 1;
        }
    }
    votes.into_iter().max_by_key(|(n, c)| (*c, std::cmp::Reverse(*n))).map(|(n, _)| n)
}

/// Bytes of `per_node` on the nodes of `from` that are not in `to`.
fn leaving(per_node: &BTreeMap<u32, u64>, from: &NodeSet, to: &NodeSet) -> u64 {
    per_node.iter().filter(|(n, _)| from.contains(**n) && !to.contains(**n)).map(|(_, b)| *b).sum()
}

/// Which mappings of a process a page move walks, and at what step.
#[derive(Debug, Clone, Copy)]
pub enum Walk<'a> {
    /// Every mapping `numa_maps` shows with pages off `target`, stepped by
    /// its own page size (at least 4 KiB): `numakit migrate --to NODE`.
    OffTarget {
        /// The process's `numa_maps`.
        numa_maps: &'a [NumaMapping],
        /// The node the pages go to.
        target: u32,
    },
    /// Every private writable mapping, stepped by `page_bytes`: the
    /// daemon's partial migrations, whose page counts are in those units.
    PrivateWritable {
        /// The step, bytes.
        page_bytes: u64,
    },
}

/// The address ranges of `maps` (`/proc/PID/maps`) a page move walks: the
/// one selection of `numakit migrate` and the daemon's page mover, for
/// [`act::move_ranges`].
pub fn page_ranges(maps: &[MapRange], walk: Walk<'_>) -> Vec<PageRange> {
    match walk {
        Walk::OffTarget { numa_maps, target } => numa_maps
            .iter()
            .filter(|m| m.pages.iter().any(|(n, c)| *n != target && *c > 0))
            .filter_map(|m| {
                let r = maps.iter().find(|r| r.start == m.start)?;
                Some(PageRange { start: r.start, end: r.end, page_bytes: m.page_size.max(4096) })
            })
            .collect(),
        Walk::PrivateWritable { page_bytes } => maps
            .iter()
            .filter(|m| m.writable && !m.shared)
            .map(|m| PageRange { start: m.start, end: m.end, page_bytes })
            .collect(),
    }
}

impl MigratePlan {
    /// The report of a dry run: the plan's numbers, nothing moved.
    pub fn dry_run(&self) -> MigrateReport {
        self.report(true)
    }

    fn report(&self, dry_run: bool) -> MigrateReport {
        MigrateReport {
            pid: self.pid,
            method: self.method,
            from: self.from.clone(),
            to: self.to.clone(),
            bytes_to_move: self.bytes_to_move,
            target_free_bytes: self.target_free_bytes,
            dry_run,
            bytes_moved: 0,
            pages_moved: 0,
            pages_failed: 0,
            failures: BTreeMap::new(),
            before: self.before.clone(),
            after: self.before.clone(),
        }
    }

    /// Moves the pages (through [`act`], which records the change) and
    /// reads the result back from `numa_maps` below `sys`.
    pub fn apply(&self, sys: &SysRoot) -> Result<MigrateReport, MigrateError> {
        let mut report = self.report(false);
        let pid = act::Pid(self.pid);
        match self.method {
            Method::MigratePages => {
                let left = act::migrate_pages(pid, &self.from, &self.to)?;
                report.pages_failed = left;
                if left > 0 {
                    report.failures.insert("not migrated (busy, pinned or shared)".into(), left);
                }
            }
            Method::MovePages => self.move_all(sys, self.to.first().unwrap_or(0), &mut report)?,
        }
        let after = procs::read_numa_maps(sys, self.pid)?.unwrap_or_default();
        report.after = procs::bytes_per_node(&after);
        report.bytes_moved =
            leaving(&report.before, &self.from, &self.to).saturating_sub(leaving(&report.after, &self.from, &self.to));
        if self.method == Method::MigratePages {
            report.pages_moved = report.bytes_moved / 4096;
        }
        Ok(report)
    }

    /// Moves every page not on `target` there ([`act::move_ranges`] over
    /// the mappings that have such pages), tallying the kernel's answers.
    fn move_all(&self, sys: &SysRoot, target: u32, report: &mut MigrateReport) -> Result<(), MigrateError> {
        let numa_maps = procs::read_numa_maps(sys, self.pid)?.unwrap_or_default();
        let maps = procs::read_maps(sys, self.pid)?.unwrap_or_default();
        let todo = page_ranges(&maps, Walk::OffTarget { numa_maps: &numa_maps, target });
        let mut tally = MoveTally::default();
        let r =
            act::move_ranges(act::Pid(self.pid), &todo, |_| true, target, u64::MAX, MoveFlags::default(), &mut tally);
        report.pages_moved += tally.moved;
        report.pages_failed += tally.failed_total();
        for (why, n) in tally.failed {
            *report.failures.entry(why).or_default() += n;
        }
        match r {
            // The process exited meanwhile: what moved is reported.
            Err(e) if !e.is_errno(libc::ESRCH) => Err(e.into()),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::procs::numa_maps;
    use crate::sets::CpuSet;

    /// Two nodes with memory (1 GiB free on node 0, 2 GiB on node 1) and a
    /// memory-less node 2 nearest to node 1.
    fn machine() -> (tempfile::TempDir, Topology) {
        let d = tempfile::tempdir().expect("tmp");
        let put = |rel: &str, text: &str| {
            let p = d.path().join(rel);
            std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            std::fs::write(p, text).expect("write");
        };
        let nd = "sys/devices/system/node";
        put("sys/devices/system/cpu/online", "0-5\n");
        put("sys/devices/system/cpu/possible", "0-5\n");
        put(&format!("{nd}/online"), "0-2\n");
        put(&format!("{nd}/possible"), "0-2\n");
        for (n, cpus, free_kb, dist) in
            [(0, "0-1", 1 << 20, "10 20 30"), (1, "2-3", 2 << 20, "20 10 15"), (2, "4-5", 0, "30 15 10")]
        {
            put(&format!("{nd}/node{n}/cpulist"), &format!("{cpus}\n"));
            put(&format!("{nd}/node{n}/distance"), &format!("{dist}\n"));
            let total = if free_kb == 0 { 0 } else { 4 << 20 };
            put(
                &format!("{nd}/node{n}/meminfo"),
                &format!("Node {n} MemTotal: {total} kB\nNode {n} MemFree: {free_kb} kB\n"),
            );
        }
        let topo = Topology::read_nodes_only(&SysRoot::at(d.path())).expect("topology");
        (d, topo)
    }

    fn thread(tid: i32, cpu: u32) -> ThreadInfo {
        ThreadInfo { tid, comm: "x".into(), last_cpu: Some(cpu), cpus_allowed: CpuSet::first_n(6) }
    }

    fn nodes(l: &str) -> NodeSet {
        NodeSet::parse_list(l).expect("list")
    }

    #[test]
    fn targets_and_methods() {
        let (_d, topo) = machine();
        let before = BTreeMap::from([(0, 3 << 20), (1, 5 << 20)]);
        let to1 = Target::Nodes { to: nodes("1"), from: None };
        let p = plan(&topo, 7, before.clone(), &[], &to1, false).expect("plan");
        assert_eq!((p.method, p.from.to_list(), p.to.to_list()), (Method::MovePages, "0".into(), "1".into()));
        assert_eq!((p.bytes_to_move, p.target_free_bytes), (3 << 20, 2 << 30));
        let mp = Target::Nodes { to: nodes("0-1"), from: Some(nodes("1")) };
        let p = plan(&topo, 7, before.clone(), &[], &mp, false).expect("plan");
        assert_eq!((p.method, p.bytes_to_move, p.target_free_bytes), (Method::MigratePages, 0, 3 << 30));
        let e = plan(&topo, 7, before.clone(), &[], &Target::Nodes { to: nodes("0-1"), from: None }, false);
        let e = e.unwrap_err();
        assert!(e.is_usage());
        assert_eq!(
            e.to_string(),
            "--to 0-1: moving pages needs one target node; for several, give --from as well (migrate_pages)"
        );
        // Most threads on node 1's CPUs; on a tie the lower node.
        let p = plan(&topo, 7, before.clone(), &[thread(1, 2), thread(2, 3), thread(3, 0)], &Target::CpusNode, false);
        assert_eq!(p.expect("plan").to.to_list(), "1");
        let p = plan(&topo, 7, before.clone(), &[thread(1, 2), thread(3, 0)], &Target::CpusNode, false);
        assert_eq!(p.expect("plan").to.to_list(), "0");
        // Threads on the memory-less node 2: its nearest memory node.
        let p = plan(&topo, 7, before.clone(), &[thread(1, 4)], &Target::CpusNode, false).expect("plan");
        assert_eq!((p.from.to_list(), p.to.to_list()), ("0".into(), "1".into()));
        let e = plan(&topo, 7, before, &[], &Target::CpusNode, false).unwrap_err();
        assert_eq!(e.to_string(), "cannot tell where the threads of 7 run");
    }

    #[test]
    fn free_memory_is_checked_unless_forced() {
        let (_d, topo) = machine();
        let before = BTreeMap::from([(1, 3 << 30)]);
        let to0 = Target::Nodes { to: nodes("0"), from: None };
        let e = plan(&topo, 7, before.clone(), &[], &to0, false).unwrap_err();
        assert!(!e.is_usage());
        assert_eq!(
            e.to_string(),
            "not enough free memory: 3 GiB to move from node(s) 1 but node(s) 0 have 1 GiB free (use --force to try anyway)"
        );
        let p = plan(&topo, 7, before, &[], &to0, true).expect("forced");
        let r = p.dry_run();
        assert!(r.dry_run && r.after == r.before && r.pages_moved == 0);
    }

    #[test]
    fn ranges_of_both_walks() {
        let maps = procs::parse_maps(
            "1000-3000 rw-p 0 0:0 0\n\
             4000-6000 r-xp 0 08:01 5 /bin/x\n\
             7000-9000 rw-s 0 0:1 6 /dev/shm/y\n\
             200000-600000 rw-p 0 0:0 0\n",
        );
        let nm = numa_maps::parse(
            "1000 default anon=2 dirty=2 N0=1 N1=1 kernelpagesize_kB=4\n\
             4000 default file=/bin/x mapped=2 N1=2 kernelpagesize_kB=4\n\
             7000 default file=/dev/shm/y dirty=2 N0=2 kernelpagesize_kB=4\n\
             200000 default anon=2 N0=2 kernelpagesize_kB=2048\n\
             a000 default anon=1 N0=1 kernelpagesize_kB=4\n",
        );
        let off1 = page_ranges(&maps, Walk::OffTarget { numa_maps: &nm, target: 1 });
        let want = [(0x1000, 0x3000, 4096), (0x7000, 0x9000, 4096), (0x200000, 0x600000, 2 << 20)];
        assert_eq!(off1.iter().map(|r| (r.start, r.end, r.page_bytes)).collect::<Vec<_>>(), want);
        let private = page_ranges(&maps, Walk::PrivateWritable { page_bytes: 4096 });
        let want = [(0x1000, 0x3000, 4096), (0x200000, 0x600000, 4096)];
        assert_eq!(private.iter().map(|r| (r.start, r.end, r.page_bytes)).collect::<Vec<_>>(), want);
    }
}
