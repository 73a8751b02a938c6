//! Resolving numactl-style placement options into a [`Plan`], with the
//! checks numactl lacks: unknown or disallowed nodes and CPUs (saying
//! whether the affinity or a cpuset restricts them), memory policies on
//! memory-less nodes, CPU binding to CPU-less nodes, `--localalloc` across
//! several nodes, empty intersections, conflicting policies, and features
//! the kernel lacks.
//!
//! Lists are read as numactl 2.0.16 reads them: a CPU list is judged
//! against the caller's CPU affinity and a node list against its memory
//! nodes (`--all`: against every CPU and node); the ids typed must be
//! allowed, the ids inside a range that are not are skipped, `all` and `+`
//! refer to the allowed ones and `!` inverts within the whole machine. A
//! `--cpunodebind` binds to every CPU of its nodes, past a narrowed
//! affinity; what reaches past the affinity is kept inside the cpuset, as
//! the kernel keeps it (`limits`).

use std::fmt;

use super::iospec;
use super::limits::Limits;
use super::plan::{MemMode, MemPolicy, Plan};
use crate::sets::numactl::SetSpec;
use crate::sets::{CpuSet, NodeSet};
use crate::sys::SysRoot;
use crate::topo::Topology;

/// Which option a value was given to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptKind {
    /// `--cpunodebind` / `-N`.
    CpuNodeBind,
    /// `--physcpubind` / `-C`.
    PhysCpuBind,
    /// `--membind` / `-m`.
    MemBind,
    /// `--preferred` / `-p`.
    Preferred,
    /// `--preferred-many` / `-P`.
    PreferredMany,
    /// `--interleave` / `-i`.
    Interleave,
    /// `--weighted-interleave` / `-w`.
    WeightedInterleave,
    /// `--localalloc` / `-l` (no value).
    LocalAlloc,
}

impl OptKind {
    /// The long option name, for messages.
    pub fn flag(self) -> &'static str {
        match self {
            OptKind::CpuNodeBind => "--cpunodebind",
            OptKind::PhysCpuBind => "--physcpubind",
            OptKind::MemBind => "--membind",
            OptKind::Preferred => "--preferred",
            OptKind::PreferredMany => "--preferred-many",
            OptKind::Interleave => "--interleave",
            OptKind::WeightedInterleave => "--weighted-interleave",
            OptKind::LocalAlloc => "--localalloc",
        }
    }

    fn mem_mode(self) -> Option<MemMode> {
        Some(match self {
            OptKind::MemBind => MemMode::Bind,
            OptKind::Preferred => MemMode::Preferred,
            OptKind::PreferredMany => MemMode::PreferredMany,
            OptKind::Interleave => MemMode::Interleave,
            OptKind::WeightedInterleave => MemMode::WeightedInterleave,
            OptKind::LocalAlloc => MemMode::Local,
            OptKind::CpuNodeBind | OptKind::PhysCpuBind => return None,
        })
    }
}

/// One option with its value, in command-line order (`same` refers back).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyOpt {
    /// The option.
    pub kind: OptKind,
    /// Its value (`None` for `--localalloc`).
    pub value: Option<String>,
}

/// A placement request: options in command-line order plus flags.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Request {
    /// The options, in order.
    pub opts: Vec<PolicyOpt>,
    /// `--balancing` / `-b`: MPOL_F_NUMA_BALANCING with `--membind`.
    pub balancing: bool,
    /// `--all` / `-a`: lists are judged against every CPU and node, not
    /// against the caller's CPU affinity and memory nodes (what they bind
    /// is still kept inside its cpuset, as the kernel keeps it).
    pub all: bool,
}

/// What the request is resolved against.
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    /// The machine model (nodes, CPUs, memory, allowed set).
    pub topo: &'a Topology,
    /// Where I/O specifiers are looked up.
    pub sys: &'a SysRoot,
    /// Running kernel version (major, minor), if known.
    pub kernel: Option<(u32, u32)>,
}

/// A refused request: one line naming the value and the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlaceError(pub String);

impl fmt::Display for PlaceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for PlaceError {}

fn err<T>(msg: impl Into<String>) -> Result<T, PlaceError> {
    Err(PlaceError(msg.into()))
}

impl Request {
    /// Resolves the request into a plan, or says why it cannot be done.
    pub fn resolve(&self, ctx: &Context<'_>) -> Result<Plan, PlaceError> {
        let topo = ctx.topo;
        let limits = Limits::new(topo, ctx.sys);
        let mut previous: Option<NodeSet> = None;
        let mut cpus: Option<CpuSet> = None;
        let mut cpus_from: Vec<String> = Vec::new();
        let mut memory: Option<MemPolicy> = None;

        for opt in &self.opts {
            let flag = opt.kind.flag();
            match opt.kind {
                OptKind::PhysCpuBind => {
                    let v = opt.value.as_deref().unwrap_or("");
                    let set = self.cpu_spec(topo, &limits, flag, v)?;
                    cpus = Some(intersect(cpus.take(), set, &mut cpus_from, format!("{flag} {v}"))?);
                }
                OptKind::LocalAlloc => {
                    if memory.is_some() {
                        return err(format!("{flag} conflicts with the memory policy given before it"));
                    }
                    memory = Some(MemPolicy { mode: MemMode::Local, nodes: NodeSet::new(), balancing: false });
                }
                kind => {
                    let v = opt.value.as_deref().unwrap_or("");
                    let nodes = self.node_spec(ctx, &limits, flag, v, kind, previous.as_ref())?;
                    previous = Some(nodes.clone());
                    if kind == OptKind::CpuNodeBind {
                        // Every CPU of the nodes, past a narrowed affinity
                        // (numactl binds so), inside the cpuset.
                        let reach = topo.cpus_of_nodes(&nodes).intersection(&topo.online_cpus);
                        let set = limits.within_cpuset(&reach);
                        if set.is_empty() {
                            return Err(limits.no_cpu_in_cpuset(flag, v, &reach));
                        }
                        cpus = Some(intersect(cpus.take(), set, &mut cpus_from, format!("{flag} {v}"))?);
                        continue;
                    }
                    let Some(mode) = kind.mem_mode() else { continue };
                    if let Some(prev) = &memory {
                        return err(format!(
                            "{flag} {v} conflicts with the {} policy given before it: give one memory policy",
                            prev.mode.name()
                        ));
                    }
                    if let Some(x) = nodes.iter().filter_map(|n| topo.node(n)).find(|x| !x.has_memory) {
                        let near = nearest_memory_nodes(topo, x.id).to_list();
                        return err(match (x.has_cpu, x.generic_initiator) {
                            (true, _) => format!(
                                "{flag} {v}: node {} has no memory (a memory-less CPU node); its CPUs use node(s) {near} for memory",
                                x.id
                            ),
                            (false, true) => format!(
                                "{flag} {v}: node {} has no memory (a generic initiator: devices, no CPUs or memory); the nearest memory is node(s) {near}",
                                x.id
                            ),
                            (false, false) => format!(
                                "{flag} {v}: node {} has neither memory nor CPUs; the nearest memory is node(s) {near}",
                                x.id
                            ),
                        });
                    }
                    if kind == OptKind::Preferred && nodes.len() != 1 {
                        return err(format!(
                            "{flag} {v}: --preferred takes exactly one node (use --preferred-many for several)"
                        ));
                    }
                    // The kernel keeps a policy to the cpuset's nodes (what
                    // `!` or --all reach past them); none left is refused.
                    let nodes = match nodes.intersection(limits.mems()) {
                        kept if kept.is_empty() => return Err(limits.outside_mems(flag, v, &nodes)),
                        kept => kept,
                    };
                    if kind == OptKind::WeightedInterleave && ctx.kernel.is_some_and(|k| k < (6, 9)) {
                        let (a, b) = ctx.kernel.unwrap_or((0, 0));
                        return err(format!(
                            "{flag}: weighted interleave needs Linux 6.9 or later; this kernel is {a}.{b}"
                        ));
                    }
                    if kind == OptKind::PreferredMany && ctx.kernel.is_some_and(|k| k < (5, 15)) {
                        let (a, b) = ctx.kernel.unwrap_or((0, 0));
                        return err(format!(
                            "{flag}: preferred-many needs Linux 5.15 or later; this kernel is {a}.{b}"
                        ));
                    }
                    memory = Some(MemPolicy { mode, nodes, balancing: false });
                }
            }
        }
        if self.balancing {
            match memory.as_mut() {
                Some(m) if m.mode == MemMode::Bind => {
                    if ctx.kernel.is_some_and(|k| k < (5, 12)) {
                        return err("--balancing: NUMA balancing of bound memory needs Linux 5.12 or later");
                    }
                    m.balancing = true;
                }
                _ => return err("--balancing only applies together with --membind"),
            }
        }
        if let (Some(m), Some(c)) = (&memory, &cpus) {
            if m.mode == MemMode::Local {
                let nodes = topo.nodes_of_cpus(c);
                if nodes.len() > 1 {
                    return err(format!(
                        "--localalloc with CPUs {} on several nodes ({}): memory would land on whichever node a thread runs; bind CPUs to one node or use --membind",
                        c.to_list(),
                        nodes.to_list()
                    ));
                }
            }
        }
        Ok(Plan { cpus, memory })
    }

    /// A node list: its typed ids checked (they exist; memory-less or
    /// CPU-less where that matters is refused by the caller; within the
    /// memory nodes unless --all), then read as libnuma reads it.
    fn node_spec(
        &self,
        ctx: &Context<'_>,
        limits: &Limits<'_>,
        flag: &str,
        v: &str,
        kind: OptKind,
        previous: Option<&NodeSet>,
    ) -> Result<NodeSet, PlaceError> {
        let topo = ctx.topo;
        if iospec::is_iospec(v) {
            return iospec::resolve(ctx.sys, topo, v).map_err(|e| PlaceError(format!("{flag} {v}: {e}")));
        }
        let existing = topo.node_ids();
        // The nodes that can serve this option: with memory for memory
        // policies, with CPUs for CPU binding.
        let usable = match kind {
            OptKind::CpuNodeBind => topo.cpu_nodes(),
            _ => topo.memory_nodes(),
        };
        let judged = if self.all { existing.clone() } else { limits.mems().intersection(&existing) };
        let spec = SetSpec::<crate::sets::Node>::parse(v).map_err(|e| PlaceError(format!("{flag}: {e}")))?;
        let ends = spec.typed_ends();
        let unknown = ends.difference(&existing);
        if !unknown.is_empty() {
            return err(format!(
                "{flag} {v}: node {} does not exist (this machine has node(s) {})",
                unknown.to_list(),
                existing.to_list()
            ));
        }
        // A typed node the option cannot use is refused by the caller with
        // its own reason (memory-less, CPU-less), not as outside the memory
        // nodes: the kernel never lists a memory-less node there.
        let outside: NodeSet = ends
            .difference(&judged)
            .iter()
            .filter(|&n| usable.contains(n) && topo.node(n).is_some_and(|x| x.has_memory))
            .collect();
        if !outside.is_empty() {
            return Err(limits.outside_mems(flag, v, &outside));
        }
        let base = judged.intersection(&usable).union(&ends);
        let nodes = spec
            .resolve_within(&base, &existing.intersection(&usable), previous)
            .map_err(|e| PlaceError(format!("{flag} {v}: {e}")))?;
        if nodes.is_empty() {
            return err(format!("{flag} {v}: selects no node"));
        }
        if kind == OptKind::CpuNodeBind {
            if let Some(n) = nodes.iter().find(|&n| topo.node(n).is_some_and(|x| !x.has_cpu)) {
                return err(format!("{flag} {v}: node {n} has no CPUs (a memory-only node); bind memory there with --membind, CPUs elsewhere"));
            }
        }
        Ok(nodes)
    }

    /// A CPU list: its typed CPUs checked (they exist, are online, and are
    /// in the affinity unless --all), then read as libnuma reads it; what
    /// `!` or --all reach past the affinity is kept inside the cpuset.
    fn cpu_spec(&self, topo: &Topology, limits: &Limits<'_>, flag: &str, v: &str) -> Result<CpuSet, PlaceError> {
        let spec = SetSpec::<crate::sets::Cpu>::parse(v).map_err(|e| PlaceError(format!("{flag}: {e}")))?;
        let ends = spec.typed_ends();
        let unknown = ends.difference(&topo.possible_cpus);
        if !unknown.is_empty() {
            return err(format!(
                "{flag} {v}: CPU {} does not exist (this machine has CPUs {})",
                unknown.to_list(),
                topo.possible_cpus.to_list()
            ));
        }
        let offline = ends.difference(&topo.online_cpus);
        if !offline.is_empty() {
            return err(format!("{flag} {v}: CPU {} is offline", offline.to_list()));
        }
        let judged = if self.all { topo.online_cpus.clone() } else { limits.affinity() };
        let outside = ends.difference(&judged);
        if !outside.is_empty() {
            return Err(limits.outside_affinity(flag, v, &outside));
        }
        let chosen = spec
            .resolve_within(&judged, &topo.online_cpus, None)
            .map_err(|e| PlaceError(format!("{flag} {v}: {e}")))?;
        if chosen.is_empty() {
            return err(format!("{flag} {v}: selects no CPU"));
        }
        let set = limits.within_cpuset(&chosen);
        if set.is_empty() {
            return Err(limits.no_cpu_in_cpuset(flag, v, &chosen));
        }
        Ok(set)
    }
}

fn intersect(prev: Option<CpuSet>, set: CpuSet, from: &mut Vec<String>, what: String) -> Result<CpuSet, PlaceError> {
    let out = match prev {
        None => set,
        Some(p) => {
            let i = p.intersection(&set);
            if i.is_empty() {
                return err(format!("{what} has no CPU in common with {} (CPUs {})", from.join(" "), p.to_list()));
            }
            i
        }
    };
    from.push(what);
    Ok(out)
}

/// The memory nodes nearest (by SLIT distance) to node `n`.
pub fn nearest_memory_nodes(topo: &Topology, n: u32) -> NodeSet {
    let mem = topo.memory_nodes();
    let best = mem.iter().filter_map(|m| topo.distance(n, m)).min();
    mem.iter().filter(|&m| best.is_some() && topo.distance(n, m) == best).collect()
}

#[cfg(test)]
mod tests;
