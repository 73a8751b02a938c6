//! The NUMA behaviour of one cgroup (a batch job, a job step, a service):
//! what its processes hold on each node and how much of it is local to
//! where they run, what the kernel charged to the cgroup on each node, and
//! the cgroup's own NUMA event counters. [`JobReport::collect`] reads it
//! all; [`CgroupCounters::read`] reads only the counters, cheaply, so a
//! caller (a Slurm plugin, a job wrapper) can take a snapshot at step
//! start and report [`CgroupCounters::delta`] at step end.
//!
//! Where each figure comes from, and what it is exactly:
//!
//! * **Processes**: the PIDs in `cgroup.procs` of the cgroup's folder and
//!   of every folder below it (so the steps and tasks under a job's cgroup
//!   count), at most [`MAX_FOLDERS`] folders [`MAX_DEPTH`] deep.
//! * **Memory per node** (`nodes[].bytes`): the sum over those processes
//!   of their `/proc/PID/numa_maps` ([`super::process::read_process`], as
//!   `stat -p` reads it). A page mapped by several of the job's processes
//!   (shared memory, a library) counts once per process: `numa_maps` does
//!   not say who owns a page.
//! * **Locality**: Σ `own_local_bytes` ÷ Σ `own_bytes` over the processes,
//!   each process judged as `stat -p` judges it: its own memory (all but
//!   pages of ordinary files) on the nodes of the CPUs its threads last ran
//!   on. It is the share of all the job's own bytes that are local to the
//!   process holding them; `None` when the processes hold no own memory or
//!   none has a known CPU.
//! * **Charged per node** (`memory.numa_stat`): what the kernel charged to
//!   the cgroup and its descendants on each node, exactly, each page once,
//!   including page cache and memory of processes that have exited; cgroup
//!   v2 in bytes, a v1 memory hierarchy's file in pages (converted). Absent
//!   without the memory controller on the cgroup.
//! * **Counters** (`memory.stat`, cgroup v2, hierarchical): the NUMA
//!   balancing and tiering events the kernel counts per cgroup:
//!   `numa_pages_migrated`, `numa_pte_updates`, `numa_hint_faults`
//!   (recent kernels with `CONFIG_NUMA_BALANCING`; 6.12 has them), `pgpromote_success`,
//!   `pgdemote_*`; any other `numa_*` key a kernel adds is kept too. The
//!   kernel counts no per-cgroup `numa_hit`, `numa_miss`, `other_node` or
//!   `numa_hint_faults_local` (those exist only per node and system-wide),
//!   so they are [`NOT_PER_CGROUP`]: reported as unknown, never estimated.
//!
//! Reads go through [`SysRoot`] and [`crate::procs`]; nothing here prints.
//!
//! Rooms: `tree` finds the cgroup (the folder a path names, the folders
//! below it, their processes, the Slurm job cgroups of a host), `files`
//! parses the cgroup's own NUMA files; this file builds the report. Their
//! names are re-exported here.

mod files;
#[cfg(test)]
mod tests;
mod tree;

use std::collections::BTreeMap;

use serde::Serialize;

use super::process::{self, ProcessNuma};
use super::rate::ratio;
use crate::procs::{self, cgroup};
use crate::sets::{CpuSet, NodeSet};
use crate::sys::{SysError, SysRoot};
use crate::topo::Topology;
pub use files::{
    is_kept, parse_memory_stat, parse_numa_stat, CgroupCounters, NumaStat, NumaStatLine, COUNTERS, NOT_PER_CGROUP,
};
pub use tree::{
    find_job_cgroups, folders, member_pids, slurm_ids, CgroupDir, SlurmIds, JOB_SEARCH_DEPTH, JOB_SEARCH_FOLDERS,
    MAX_DEPTH, MAX_FOLDERS,
};

/// A cgroup that could not be found or understood, or a read that failed.
#[derive(Debug, thiserror::Error)]
pub enum CgroupError {
    /// The path as typed names no cgroup.
    #[error("no such cgroup {typed}: {why}")]
    NotFound {
        /// The path as typed, quoted.
        typed: String,
        /// What was looked for.
        why: String,
    },
    /// The path as typed is not a cgroup path.
    #[error("invalid cgroup {typed}: {why}")]
    Invalid {
        /// The path as typed, quoted.
        typed: String,
        /// What is wrong.
        why: String,
    },
    /// A kernel file could not be read or understood.
    #[error(transparent)]
    Sys(#[from] SysError),
}

/// The cgroups an exporter scrape reports on.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CgroupSample {
    /// One report per cgroup: the asked ones first, then the jobs found.
    pub reports: Vec<JobReport>,
    /// Cgroups found or asked for beyond the cap, not read.
    pub dropped: usize,
    /// Cgroups whose files could not be read or understood (left out, so
    /// that one bad cgroup does not take the host's other figures away).
    pub failed: Vec<(String, String)>,
}

impl CgroupSample {
    /// Reads the cgroups `asked` names that exist now (paths as typed;
    /// [`CgroupDir::resolve`]), then, if `search`, the Slurm jobs
    /// [`find_job_cgroups`] finds, at most `max` in all.
    pub fn read(
        sys: &SysRoot,
        topo: &Topology,
        asked: &[String],
        search: bool,
        max: usize,
    ) -> Result<CgroupSample, SysError> {
        if max == 0 {
            return Ok(CgroupSample::default());
        }
        let mut dirs: Vec<CgroupDir> = Vec::new();
        for typed in asked {
            match CgroupDir::resolve(sys, typed) {
                Ok(d) => dirs.push(d),
                // A cgroup asked for that is not there (yet) is left out.
                Err(CgroupError::NotFound { .. } | CgroupError::Invalid { .. }) => {}
                Err(CgroupError::Sys(e)) => return Err(e),
            }
        }
        if search {
            for d in find_job_cgroups(sys)? {
                if !dirs.iter().any(|x| x.folder == d.folder) {
                    dirs.push(d);
                }
            }
        }
        let dropped = dirs.len().saturating_sub(max);
        dirs.truncate(max);
        let page = super::page_size();
        let mut reports = Vec::with_capacity(dirs.len());
        let mut failed = Vec::new();
        for d in &dirs {
            match JobReport::collect_dir(sys, topo, d, page) {
                Ok(r) => reports.push(r),
                Err(e) => failed.push((d.path.clone(), e.to_string())),
            }
        }
        Ok(CgroupSample { reports, dropped, failed })
    }
}

/// A cgroup's memory on one node.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct JobNode {
    /// Node id.
    pub id: u32,
    /// Σ over its processes of their `numa_maps` bytes on the node.
    pub bytes: u64,
    /// `memory.numa_stat` anonymous bytes charged on the node (`None`
    /// without the file or the node in it).
    pub charged_anon_bytes: Option<u64>,
    /// `memory.numa_stat` page-cache bytes charged on the node.
    pub charged_file_bytes: Option<u64>,
}

/// One cgroup's NUMA report (see the module documentation for where each
/// figure comes from).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JobReport {
    /// The cgroup.
    pub cgroup: CgroupDir,
    /// The Slurm job and step its path names.
    pub slurm: Option<SlurmIds>,
    /// Cgroup folders read (the cgroup and those below it).
    pub folders: usize,
    /// Its processes that were read, by PID.
    pub processes: Vec<ProcessNuma>,
    /// Member PIDs that exited while being read.
    pub exited: Vec<i32>,
    /// Member PIDs that could not be read (permissions).
    pub unreadable: Vec<i32>,
    /// Every node of the machine (and any other a file names), by id.
    pub nodes: Vec<JobNode>,
    /// Σ `nodes[].bytes`.
    pub total_bytes: u64,
    /// Σ over the processes with a known CPU of their own memory.
    pub own_bytes: u64,
    /// Σ over the processes of their own memory on their threads' nodes.
    pub own_local_bytes: u64,
    /// `own_local_bytes / own_bytes` (`None` without own memory or known
    /// CPUs).
    pub locality: Option<f64>,
    /// The union of the processes' threads' nodes (last CPU).
    pub cpus_nodes: NodeSet,
    /// `cpuset.cpus.effective` of the cgroup, or of its nearest ancestor
    /// that has one where the cpuset controller is not enabled in it
    /// ([`cgroup::effective_cpus_in`]; v1: `cpuset.effective_cpus`;
    /// `None` when no folder up to `/sys/fs/cgroup` has one).
    pub allowed_cpus: Option<CpuSet>,
    /// The nodes of `allowed_cpus`.
    pub allowed_nodes: Option<NodeSet>,
    /// The file `allowed_cpus` is read from: `cpuset.cpus.effective`, or
    /// v1's `cpuset.effective_cpus` (in the v1 cpuset hierarchy, the
    /// cgroup's path or its nearest folder above).
    pub allowed_cpus_file: &'static str,
    /// `memory.numa_stat` (`None` without the file).
    pub numa_stat: Option<NumaStat>,
    /// `memory.stat`'s NUMA counters.
    pub counters: CgroupCounters,
}

impl JobReport {
    /// Finds the cgroup `cgroup_path` names ([`CgroupDir::resolve`]) and
    /// reads its report, with the machine's nodes read first.
    pub fn collect(sys: &SysRoot, cgroup_path: &str) -> Result<JobReport, CgroupError> {
        let dir = CgroupDir::resolve(sys, cgroup_path)?;
        let topo = Topology::read_nodes_only(sys)?;
        Ok(Self::collect_dir(sys, &topo, &dir, super::page_size())?)
    }

    /// Reads the report of a found cgroup on a known machine (the exporter
    /// reads the topology once). Processes' memory is read a few at a time
    /// ([`super::par_map`]). `page_bytes` converts a v1 `numa_stat`.
    pub fn collect_dir(
        sys: &SysRoot,
        topo: &Topology,
        dir: &CgroupDir,
        page_bytes: u64,
    ) -> Result<JobReport, SysError> {
        let folders = folders(sys, dir)?;
        let pids = member_pids(sys, &folders)?;
        // Counters first: a snapshot taken at the end then includes every
        // event up to the reading of the processes.
        let counters = CgroupCounters::read(sys, dir)?;
        let mut stats = Vec::new();
        let mut exited = Vec::new();
        let mut unreadable = Vec::new();
        for (pid, r) in pids.iter().zip(super::par_map(&pids, |&pid| procs::read_proc_stat(sys, pid))) {
            match r {
                Ok(Some(st)) => stats.push(st),
                Ok(None) => exited.push(*pid),
                Err(e) => match process::skip_reason(&e) {
                    Some(process::Skip::Exited) => exited.push(*pid),
                    Some(process::Skip::Denied) => unreadable.push(*pid),
                    None => return Err(e),
                },
            }
        }
        let read = process::read_processes(sys, topo, &stats)?;
        exited.extend(read.exited);
        unreadable.extend(read.unreadable);
        exited.sort_unstable();
        unreadable.sort_unstable();
        let numa_stat = match cgroup::controller_folder(sys, &dir.folder, "memory")? {
            None => None,
            Some(memory) => {
                let rel = format!("{memory}/memory.numa_stat");
                match sys.read(&rel)? {
                    None => None,
                    Some(t) => Some(parse_numa_stat(&t, page_bytes).map_err(|p| sys.invalid(&rel, p))?),
                }
            }
        };
        let allowed_cpus = cgroup::effective_cpus_in(sys, &dir.folder)?;
        let allowed_cpus_file = cgroup::cpus_file(sys, &dir.folder);
        let allowed_nodes =
            allowed_cpus.as_ref().map(|c| c.iter().filter_map(|cpu| topo.node_of_cpu(cpu)).collect::<NodeSet>());
        Ok(Self::from_parts(
            dir.clone(),
            folders.len(),
            read.processes,
            exited,
            unreadable,
            topo,
            numa_stat,
            (allowed_cpus, allowed_nodes, allowed_cpus_file),
            counters,
        ))
    }

    /// Sums what was read (pure: the tests' way in).
    #[allow(clippy::too_many_arguments)]
    fn from_parts(
        cgroup: CgroupDir,
        folders: usize,
        processes: Vec<ProcessNuma>,
        exited: Vec<i32>,
        unreadable: Vec<i32>,
        topo: &Topology,
        numa_stat: Option<NumaStat>,
        (allowed_cpus, allowed_nodes, allowed_cpus_file): (Option<CpuSet>, Option<NodeSet>, &'static str),
        counters: CgroupCounters,
    ) -> JobReport {
        let mut per: BTreeMap<u32, JobNode> =
            topo.nodes.iter().map(|n| (n.id, JobNode { id: n.id, ..Default::default() })).collect();
        let mut cpus_nodes = NodeSet::new();
        let (mut own, mut own_local) = (0u64, 0u64);
        for p in &processes {
            for n in &p.nodes {
                per.entry(n.id).or_insert_with(|| JobNode { id: n.id, ..Default::default() }).bytes += n.bytes;
            }
            // As for one process: without a known CPU, nothing is local
            // or remote, so such a process is left out of the shares.
            if !p.cpus_nodes.is_empty() {
                own += p.own_bytes;
                own_local += p.own_local_bytes;
                cpus_nodes = cpus_nodes.union(&p.cpus_nodes);
            }
        }
        if let Some(ns) = &numa_stat {
            for &(node, b) in ns.anon().unwrap_or_default() {
                per.entry(node).or_insert_with(|| JobNode { id: node, ..Default::default() }).charged_anon_bytes =
                    Some(b);
            }
            for &(node, b) in ns.file().unwrap_or_default() {
                per.entry(node).or_insert_with(|| JobNode { id: node, ..Default::default() }).charged_file_bytes =
                    Some(b);
            }
        }
        let nodes: Vec<JobNode> = per.into_values().collect();
        let total_bytes = nodes.iter().map(|n| n.bytes).sum();
        let locality = if cpus_nodes.is_empty() { None } else { ratio(own_local, own) };
        JobReport {
            slurm: slurm_ids(&cgroup.path),
            cgroup,
            folders,
            processes,
            exited,
            unreadable,
            nodes,
            total_bytes,
            own_bytes: own,
            own_local_bytes: own_local,
            locality,
            cpus_nodes,
            allowed_cpus,
            allowed_nodes,
            allowed_cpus_file,
            numa_stat,
            counters,
        }
    }
}
