//! What the caller may use, told apart the way numactl 2.0.16 tells them
//! apart: its CPU affinity (`Cpus_allowed`, which `taskset` or a batch
//! system may have narrowed: what a CPU list is judged against without
//! `--all`), its memory nodes (`Mems_allowed`, always its cpuset's: what a
//! node list is judged against), and its cpuset's CPUs (the kernel's own
//! limit, which `sched_setaffinity` trims a mask to and `--all` cannot
//! lift). The cpuset is read only when a decision reaches past the
//! affinity, so the launch path reads nothing more in the usual case.
//! Says which limit a refused CPU breaks, so a message never blames a
//! cpuset for what is the affinity. Must not: decide anything else, or
//! write.

use std::cell::OnceCell;

use super::request::PlaceError;
use crate::sets::{CpuSet, NodeSet};
use crate::sys::SysRoot;
use crate::topo::{read_cpuset_cpus, Topology};

/// The caller's limits.
pub(super) struct Limits<'a> {
    topo: &'a Topology,
    sys: &'a SysRoot,
    cpuset: OnceCell<Option<CpuSet>>,
}

impl<'a> Limits<'a> {
    pub(super) fn new(topo: &'a Topology, sys: &'a SysRoot) -> Self {
        Limits { topo, sys, cpuset: OnceCell::new() }
    }

    /// The CPU affinity, within the online CPUs.
    pub(super) fn affinity(&self) -> CpuSet {
        self.topo.allowed.cpus.intersection(&self.topo.online_cpus)
    }

    /// The memory nodes (`Mems_allowed`).
    pub(super) fn mems(&self) -> &NodeSet {
        &self.topo.allowed.nodes
    }

    /// The cpuset's CPUs, when the root says (read once). A cpuset that
    /// does not hold the whole affinity is not this process's (the kernel
    /// keeps the affinity inside it) and is ignored.
    pub(super) fn cpuset(&self) -> Option<&CpuSet> {
        self.cpuset
            .get_or_init(|| {
                read_cpuset_cpus(self.sys, &self.topo.online_cpus)
                    .ok()
                    .flatten()
                    .filter(|s| self.affinity().is_subset(s))
            })
            .as_ref()
    }

    /// What the kernel leaves of `cpus` when they are set as the affinity:
    /// those in the cpuset (all of them when the cpuset is unknown; the
    /// kernel trims them then). The cpuset is read only when `cpus` reach
    /// past the affinity.
    pub(super) fn within_cpuset(&self, cpus: &CpuSet) -> CpuSet {
        if cpus.is_subset(&self.affinity()) {
            return cpus.clone();
        }
        match self.cpuset() {
            Some(s) => cpus.intersection(s),
            None => cpus.clone(),
        }
    }

    /// The refusal of `bad`, CPUs typed in `flag v` outside the affinity:
    /// outside the cpuset too (a cpuset/cgroup restricts), or only outside
    /// the affinity (`--all` lifts it).
    pub(super) fn outside_affinity(&self, flag: &str, v: &str, bad: &CpuSet) -> PlaceError {
        let affinity = self.affinity().to_list();
        let affinity = list_or_none(&affinity);
        PlaceError(match self.cpuset() {
            Some(s) if !bad.is_subset(s) => format!(
                "{flag} {v}: CPU {} is outside this process's cpuset (CPUs {}; a cpuset/cgroup restricts this process)",
                bad.difference(s).to_list(),
                list_or_none(&s.to_list())
            ),
            Some(s) => format!(
                "{flag} {v}: CPU {} is outside this process's CPU affinity {affinity} (narrowed within its cpuset {} by taskset or a batch system; --all lifts it)",
                bad.to_list(),
                s.to_list()
            ),
            None => format!(
                "{flag} {v}: CPU {} is outside this process's CPU affinity {affinity} (--all lifts the affinity, not a cpuset)",
                bad.to_list()
            ),
        })
    }

    /// The refusal of a binding none of whose CPUs (`reach`) is in the
    /// cpuset.
    pub(super) fn no_cpu_in_cpuset(&self, flag: &str, v: &str, reach: &CpuSet) -> PlaceError {
        let set = self.cpuset().map_or_else(|| "unknown".to_string(), |s| list_or_none(&s.to_list()).to_string());
        PlaceError(format!(
            "{flag} {v}: selects CPU(s) {}, none of them in this process's cpuset (CPUs {set}; a cpuset/cgroup restricts this process)",
            list_or_none(&reach.to_list())
        ))
    }

    /// The refusal of nodes typed outside the memory nodes.
    pub(super) fn outside_mems(&self, flag: &str, v: &str, bad: &NodeSet) -> PlaceError {
        PlaceError(format!(
            "{flag} {v}: node {} is outside the allowed nodes {} (a cpuset/cgroup restricts this process)",
            bad.to_list(),
            list_or_none(&self.mems().to_list())
        ))
    }
}

/// `none` for an empty list.
pub(super) fn list_or_none(s: &str) -> &str {
    if s.is_empty() {
        "none"
    } else {
        s
    }
}
