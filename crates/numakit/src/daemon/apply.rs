//! The daemon's acting layer: does what [`decide`](super::decide) asked
//! and checks it, through the logged wrappers of [`act`](crate::act).
//!
//! * **Bind**: every thread's affinity (threads started meanwhile are
//!   caught by repeating the pass until no new one appears), or, when the
//!   process is alone in its own cgroup v2 with the cpuset controller, that
//!   cgroup's `cpuset.cpus` so new threads follow. `cpuset.mems` is never
//!   written: in cgroup v2 that migrates every page at once (outside the
//!   page budget) and makes the nodes a hard binding. Memory goes by the
//!   migrate actions; new allocations follow first touch onto the bound
//!   CPUs' node. The affinity is read back from every thread.
//! * **Migrate**: `migrate_pages` when the whole node's share moves, else
//!   `move_pages` on the pages found there, in batches. The pages moved are
//!   read back from `numa_maps` before and after, never assumed.
//! * **Revert**: the affinity (or cgroup cpus) the process had before
//!   numakit's first move, recorded in an [`Original`], else the CPUs of
//!   the nodes asked for.
//!
//! A process that exits meanwhile is [`Outcome::Gone`], not an error.

use serde::{Deserialize, Serialize};

use super::action::{Action, ActionKind};
use super::collect::{self, NodeCpus};
use crate::act::{self, ActError, MoveFlags, MoveTally, Pid};
use crate::place::migrate::{page_ranges, Walk};
use crate::procs;
use crate::sets::{CpuSet, NodeSet};
use crate::sys::SysRoot;

/// What a process had before numakit first changed it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Original {
    /// Process start (seconds since the epoch), to tell a reused pid apart.
    pub start_s: f64,
    /// The main thread's affinity, a CPU list.
    pub cpus: String,
    /// When numakit changed its cgroup's cpuset instead: the cgroup path
    /// and its `cpuset.cpus` before (may be empty: inherit).
    pub cgroup: Option<(String, String)>,
    /// Nodes the cgroup allowed before (the scope numakit may use).
    #[serde(with = "super::sets_serde", default)]
    pub cgroup_nodes: NodeSet,
}

/// What happened to one action.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "kebab-case")]
pub enum Outcome {
    /// Done and read back.
    Applied {
        /// What was done, with the numbers read back.
        detail: String,
        /// Pages moved (read back from `numa_maps`).
        pages_moved: u64,
    },
    /// The kernel refused (the error names the call and errno).
    Failed {
        /// The error.
        error: String,
    },
    /// The process exited.
    Gone,
    /// Nothing to do (keep), or not done (dry run, deferred): the why.
    NotDone {
        /// Why.
        note: String,
    },
}

impl Outcome {
    /// The short name in logs and metrics.
    pub fn name(&self) -> &'static str {
        match self {
            Outcome::Applied { .. } => "applied",
            Outcome::Failed { .. } => "failed",
            Outcome::Gone => "gone",
            Outcome::NotDone { .. } => "not-done",
        }
    }
}

/// Applies actions on the live system.
pub struct Applier<'a> {
    /// The root (`/` live; the paths of cgroups and `/proc` below it).
    pub sys: &'a SysRoot,
    /// Usable CPUs per node.
    pub node_cpus: &'a NodeCpus,
    /// Bytes per page of the actions.
    pub page_bytes: u64,
}

fn gone(e: &ActError) -> bool {
    e.is_errno(libc::ESRCH)
}

impl Applier<'_> {
    /// What to record before the first change of `pid` (None if gone).
    pub fn original(&self, pid: i32, start_s: f64) -> Option<Original> {
        let cpus = act::get_affinity(Pid(pid)).ok()?;
        let cg = self.own_cgroup(pid);
        let cgroup_nodes = match &cg {
            Some((path, _)) => procs::cgroup::effective_cpus(self.sys, path)
                .ok()
                .flatten()
                .map(|c| self.node_cpus.nodes_of(&c).0)
                .unwrap_or_default(),
            None => NodeSet::new(),
        };
        Some(Original { start_s, cpus: cpus.to_list(), cgroup: cg, cgroup_nodes })
    }

    /// The process's cgroup path and its `cpuset.cpus`, when the process is
    /// alone in a cgroup of its own (not the root) with the cpuset
    /// controller enabled.
    pub fn own_cgroup(&self, pid: i32) -> Option<(String, String)> {
        let path = procs::cgroup::read_path(self.sys, pid).ok().flatten()?;
        if path == "/" || path.is_empty() {
            return None;
        }
        let cpus = procs::cgroup::cpus(self.sys, &path).ok().flatten()?;
        let members = procs::cgroup::members(self.sys, &path).ok().flatten()?;
        (members == [pid]).then_some((path, cpus))
    }

    /// How many of `pid`'s threads have exactly `cpus` as their affinity,
    /// and how many another (threads that exited meanwhile are not
    /// counted): what a bind a killed daemon left half done looks like.
    pub fn threads_bound(&self, pid: i32, cpus: &CpuSet) -> (usize, usize) {
        let tids = procs::thread_ids(self.sys, pid).unwrap_or_default();
        let (mut at, mut other) = (0, 0);
        for tid in tids {
            match act::get_affinity(Pid(tid)) {
                Ok(c) if &c == cpus => at += 1,
                Ok(_) => other += 1,
                Err(_) => {}
            }
        }
        (at, other)
    }

    /// Applies one action. `original` is what the process had before
    /// numakit's first change (for cgroup mode and reverts).
    pub fn apply(&self, a: &Action, original: Option<&Original>) -> Outcome {
        match &a.kind {
            ActionKind::Keep => Outcome::NotDone { note: a.reason.to_string() },
            ActionKind::Bind { cpu_nodes, .. } => {
                let cpus = self.node_cpus.cpus_of(cpu_nodes);
                self.set_cpus(a.pid, &cpus, original.and_then(|o| o.cgroup.as_ref()).map(|c| c.0.as_str()), "bound")
            }
            ActionKind::Revert { cpu_nodes, .. } => match original {
                Some(o)
                    if self.node_cpus.nodes_of(&CpuSet::parse_list(&o.cpus).unwrap_or_default()).0 == *cpu_nodes =>
                {
                    if let Some((path, raw)) = &o.cgroup {
                        self.write_cgroup_cpus(a.pid, path, raw, "restored")
                    } else {
                        let cpus = CpuSet::parse_list(&o.cpus).unwrap_or_default();
                        self.set_cpus(a.pid, &cpus, None, "restored")
                    }
                }
                _ => {
                    let cpus = self.node_cpus.cpus_of(cpu_nodes);
                    let cg = original.and_then(|o| o.cgroup.as_ref()).map(|c| c.0.as_str());
                    self.set_cpus(a.pid, &cpus, cg, "restored")
                }
            },
            ActionKind::Migrate { from, to, pages } => self.migrate(a.pid, *from, *to, *pages),
        }
    }

    fn write_cgroup_cpus(&self, pid: i32, path: &str, cpus: &str, verb: &str) -> Outcome {
        let rel = format!("{}/cpuset.cpus", procs::cgroup::dir(path));
        // An empty value (inherit the parent's CPUs) is written as one
        // space: the kernel strips it, and `write_value` takes no newline.
        match act::knobs::write_value(self.sys, &rel, if cpus.is_empty() { " " } else { cpus }) {
            Ok(()) => Outcome::Applied {
                detail: format!("{verb}: cgroup {path} cpuset.cpus = {:?} (pid {pid})", cpus),
                pages_moved: 0,
            },
            Err(e) => {
                if !self.sys.exists(format!("proc/{pid}")) {
                    Outcome::Gone
                } else {
                    Outcome::Failed { error: e.to_string() }
                }
            }
        }
    }

    /// Sets the CPUs of every thread (or of the cgroup) and reads them back.
    fn set_cpus(&self, pid: i32, cpus: &CpuSet, cgroup: Option<&str>, verb: &str) -> Outcome {
        if cpus.is_empty() {
            return Outcome::Failed { error: "no usable CPU on the nodes asked for".into() };
        }
        if let Some(path) = cgroup {
            return self.write_cgroup_cpus(pid, path, &cpus.to_list(), verb);
        }
        let mut done: std::collections::BTreeSet<i32> = std::collections::BTreeSet::new();
        for _pass in 0..5 {
            let tids = match procs::thread_ids(self.sys, pid) {
                Ok(t) if !t.is_empty() => t,
                _ => return Outcome::Gone,
            };
            let new: Vec<i32> = tids.into_iter().filter(|t| !done.contains(t)).collect();
            if new.is_empty() {
                break;
            }
            for tid in new {
                match act::set_affinity(Pid(tid), cpus) {
                    Ok(()) => {
                        done.insert(tid);
                    }
                    Err(e) if gone(&e) => {
                        done.insert(tid);
                    }
                    Err(e) => return Outcome::Failed { error: e.to_string() },
                }
            }
        }
        // Read back.
        let mut ok = 0;
        let mut other = 0;
        for tid in procs::thread_ids(self.sys, pid).unwrap_or_default() {
            match act::get_affinity(Pid(tid)) {
                Ok(c) if c == *cpus => ok += 1,
                Ok(_) => other += 1,
                Err(_) => {}
            }
        }
        if ok == 0 && other == 0 {
            return Outcome::Gone;
        }
        if other > 0 {
            return Outcome::Failed { error: format!("{other} thread(s) do not have CPUs {cpus} after the bind") };
        }
        Outcome::Applied { detail: format!("{verb}: {ok} thread(s) on CPUs {cpus}"), pages_moved: 0 }
    }

    /// Whether the process still exists with an address space (resident
    /// pages in `statm`): not exited, not a zombie, not mid-exit.
    fn has_memory(&self, pid: i32) -> bool {
        let text = self.sys.read(format!("proc/{pid}/statm")).ok().flatten().unwrap_or_default();
        procs::pidstat::parse_statm_resident(text.as_bytes()).is_some_and(|r| r > 0)
    }

    fn node_pages(&self, pid: i32, node: u32) -> Option<u64> {
        let text = procs::read_numa_maps_text(self.sys, pid).ok().flatten()?;
        let (per, _) = collect::memory_of(&text);
        Some(per.get(&node).copied().unwrap_or(0) / self.page_bytes)
    }

    fn migrate(&self, pid: i32, from: u32, to: u32, pages: u64) -> Outcome {
        let Some(before) = self.node_pages(pid, from) else { return Outcome::Gone };
        let to_before = self.node_pages(pid, to).unwrap_or(0);
        let call = if pages >= before {
            let (f, t) = (NodeSet::from_iter([from]), NodeSet::from_iter([to]));
            act::migrate_pages(Pid(pid), &f, &t).map(|_| ())
        } else {
            self.move_some(pid, from, to, pages)
        };
        if let Err(e) = call {
            // An exiting process has no memory any more; the kernel then
            // answers EINVAL, not ESRCH.
            return if gone(&e) || !self.has_memory(pid) {
                Outcome::Gone
            } else {
                Outcome::Failed { error: e.to_string() }
            };
        }
        let Some(after) = self.node_pages(pid, from) else { return Outcome::Gone };
        let to_after = self.node_pages(pid, to).unwrap_or(0);
        let moved = before.saturating_sub(after);
        Outcome::Applied {
            detail: format!(
                "node {from} -> {to}: asked {pages} pages; numa_maps: node {from} {before} -> {after}, node {to} {to_before} -> {to_after}"
            ),
            pages_moved: moved,
        }
    }

    /// Moves up to `pages` of the process's pages found on `from` to `to`
    /// ([`act::move_ranges`]) over its private writable mappings (the
    /// selection [`page_ranges`] shares with `numakit migrate`).
    fn move_some(&self, pid: i32, from: u32, to: u32, pages: u64) -> Result<(), ActError> {
        let maps = match procs::read_maps(self.sys, pid) {
            Ok(Some(m)) => m,
            _ => return Err(ActError::sys("read maps", libc::ESRCH)),
        };
        let ranges = page_ranges(&maps, Walk::PrivateWritable { page_bytes: self.page_bytes });
        let mut tally = MoveTally::default();
        act::move_ranges(Pid(pid), &ranges, |n| n == from, to, pages, MoveFlags::MOVE, &mut tally)
    }
}

/// Writes a global kernel setting (`proc/sys/...`, relative to the root)
/// through [`act::knobs`], which records the change.
pub fn write_global(sys: &SysRoot, rel: &str, value: &str) -> Result<(), ActError> {
    act::knobs::write_value(sys, rel, value)
}
