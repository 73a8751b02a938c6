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

use std::collections::BTreeMap;

use serde::Serialize;

use super::process::{self, ProcessNuma};
use super::rate::ratio;
use crate::procs::{self, cgroup};
use crate::sets::{CpuSet, NodeSet};
use crate::sys::{SysError, SysRoot};
use crate::text::{one_line, quote, QUOTE_MAX_CHARS};
use crate::topo::Topology;

/// Folders below a cgroup read at most (the cgroup itself included).
pub const MAX_FOLDERS: usize = 10_000;
/// Folder levels below a cgroup read at most.
pub const MAX_DEPTH: usize = 32;

/// The `memory.stat` counters a report always names, in this order: a
/// kernel without one gives `None`.
pub const COUNTERS: [&str; 8] = [
    "numa_pages_migrated",
    "numa_pte_updates",
    "numa_hint_faults",
    "pgpromote_success",
    "pgdemote_kswapd",
    "pgdemote_direct",
    "pgdemote_khugepaged",
    "pgdemote_proactive",
];

/// Node counters the kernel keeps per node and system-wide but not per
/// cgroup (no cgroup file has them): a report names them as unknown.
pub const NOT_PER_CGROUP: [&str; 4] = ["numa_hit", "numa_miss", "other_node", "numa_hint_faults_local"];

/// Whether a `memory.stat` key is a NUMA counter kept in
/// [`CgroupCounters`].
pub fn is_kept(name: &str) -> bool {
    name.starts_with("numa_") || name.starts_with("pgpromote_") || name.starts_with("pgdemote_")
}

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

/// A cgroup's folder, found from a path as the user typed it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CgroupDir {
    /// The cgroup's path: as in `/proc/PID/cgroup` (`/system.slice/x`),
    /// or the folder when one was given (`/sys/fs/cgroup/memory/slurm/…`).
    pub path: String,
    /// Its folder relative to the root (`sys/fs/cgroup/system.slice/x`).
    pub folder: String,
}

impl CgroupDir {
    /// Finds the cgroup `typed` names: a path as `/proc/PID/cgroup` shows it
    /// (`/system.slice/slurmstepd.scope/job_42`; a pasted `0::` prefix is
    /// dropped), looked for in the unified hierarchy
    /// ([`cgroup::unified_root`]) and then in a v1 memory hierarchy
    /// (`/sys/fs/cgroup/memory`), or an absolute folder under
    /// `/sys/fs/cgroup`. The folder must hold `cgroup.procs`.
    pub fn resolve(sys: &SysRoot, typed: &str) -> Result<CgroupDir, CgroupError> {
        let invalid = |why: &str| CgroupError::Invalid { typed: quote(typed), why: why.to_string() };
        let stripped = typed.strip_prefix("0::").unwrap_or(typed);
        let trimmed = stripped.trim_end_matches('/');
        let path = if trimmed.is_empty() && stripped.starts_with('/') { "/" } else { trimmed };
        if !path.starts_with('/') {
            return Err(invalid("give a path starting with / (as in /proc/PID/cgroup) or a /sys/fs/cgroup folder"));
        }
        if path.split('/').any(|c| c == "." || c == "..") || path.contains('\0') || path.contains("//") {
            return Err(invalid("it may not hold empty, . or .. components"));
        }
        // What no file system holds: a name above NAME_MAX, a path above
        // PATH_MAX (the kernel would refuse it as too long).
        if path.split('/').any(|c| c.len() > 255) || path.len() >= 4096 {
            return Err(invalid("a cgroup's names are at most 255 bytes each, its path under 4096 bytes"));
        }
        let candidates: Vec<String> = if path == "/sys/fs/cgroup" || path.starts_with("/sys/fs/cgroup/") {
            vec![path[1..].to_string()]
        } else {
            let rest = if path == "/" { "" } else { path };
            let mut c = vec![format!("{}{rest}", cgroup::unified_root(sys))];
            if sys.exists("sys/fs/cgroup/memory/cgroup.procs") && !sys.exists("sys/fs/cgroup/memory/cgroup.controllers")
            {
                c.push(format!("sys/fs/cgroup/memory{rest}"));
            }
            c
        };
        for folder in &candidates {
            if sys.read(format!("{folder}/cgroup.procs"))?.is_some() {
                return Ok(CgroupDir { path: path.to_string(), folder: folder.clone() });
            }
        }
        let looked: Vec<String> = candidates.iter().map(|c| format!("/{c}/cgroup.procs")).collect();
        let why = one_line(&format!("no {}", looked.join(" nor ")), 4 * QUOTE_MAX_CHARS);
        Err(CgroupError::NotFound { typed: quote(typed), why })
    }

    /// The Slurm job and step the path names ([`slurm_ids`]).
    pub fn slurm(&self) -> Option<SlurmIds> {
        slurm_ids(&self.path)
    }
}

/// The Slurm job (and step) a cgroup path names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SlurmIds {
    /// The job id (`job_42`).
    pub job_id: u64,
    /// The step below the job (`step_0` → `0`, `step_batch` → `batch`).
    pub step: Option<String>,
}

/// The Slurm job id and step in a cgroup path: the last component
/// `job_<digits>` (cgroup v2: `/system.slice/slurmstepd.scope/job_42/step_0/user/task_0`;
/// v1: `/slurm/uid_1000/job_42/step_batch`; or a `job_42` anywhere), and
/// the `step_<name>` right below it. `None` when no component is exactly
/// `job_` and a number that fits 64 bits.
pub fn slurm_ids(path: &str) -> Option<SlurmIds> {
    let parts: Vec<&str> = path.split('/').collect();
    let (i, job_id) = parts.iter().enumerate().rev().find_map(|(i, c)| {
        let digits = c.strip_prefix("job_")?;
        (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
            .then(|| digits.parse().ok().map(|n| (i, n)))?
    })?;
    let step = parts.get(i + 1).and_then(|c| c.strip_prefix("step_")).filter(|s| !s.is_empty()).map(str::to_string);
    Some(SlurmIds { job_id, step })
}

/// One line of `memory.numa_stat`: a memory type and its bytes per node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NumaStatLine {
    /// The type (`anon`, `file`, `shmem`, …; v1: `total`, `hierarchical_anon`, …).
    pub key: String,
    /// `(node, bytes)`, sorted by node.
    pub nodes: Vec<(u32, u64)>,
}

/// A cgroup's `memory.numa_stat`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct NumaStat {
    /// Its lines in the file's order.
    pub lines: Vec<NumaStatLine>,
}

impl NumaStat {
    /// Bytes per node of a type.
    pub fn get(&self, key: &str) -> Option<&[(u32, u64)]> {
        self.lines.iter().find(|l| l.key == key).map(|l| l.nodes.as_slice())
    }

    /// Bytes of a type on a node (`None`: the type or node is not in the file).
    pub fn bytes(&self, key: &str, node: u32) -> Option<u64> {
        self.get(key)?.iter().find(|(n, _)| *n == node).map(|(_, b)| *b)
    }

    /// The anonymous memory per node: v2's `anon`, v1's `hierarchical_anon`
    /// (the cgroup and its descendants, as v2 counts).
    pub fn anon(&self) -> Option<&[(u32, u64)]> {
        self.get("hierarchical_anon").or_else(|| self.get("anon"))
    }

    /// The page cache per node: v2's `file`, v1's `hierarchical_file`.
    pub fn file(&self) -> Option<&[(u32, u64)]> {
        self.get("hierarchical_file").or_else(|| self.get("file"))
    }
}

/// Parses `memory.numa_stat`. cgroup v2 writes `type N0=<bytes> N1=…`; a
/// v1 memory hierarchy writes `type=<pages> N0=<pages> …`, whose pages are
/// counted at `page_bytes`. Blank lines are skipped; anything else
/// (a token not `N<node>=<number>`, a number beyond 64 bits) is an error
/// quoting the line.
pub fn parse_numa_stat(text: &str, page_bytes: u64) -> Result<NumaStat, String> {
    let mut lines = Vec::new();
    for line in text.lines() {
        let mut tokens = line.split_whitespace();
        let Some(first) = tokens.next() else { continue };
        let bad = |what: &str| format!("{}: {what}", quote(line));
        let (key, unit) = match first.split_once('=') {
            // v1: the line's own total first, in pages.
            Some((k, v)) if v.parse::<u64>().is_ok() => (k, page_bytes),
            Some(_) => return Err(bad("not a type and its bytes per node")),
            None => (first, 1),
        };
        let mut nodes: Vec<(u32, u64)> = Vec::new();
        for tok in tokens {
            let parsed = tok
                .strip_prefix('N')
                .and_then(|t| t.split_once('='))
                .and_then(|(n, v)| Some((n.parse::<u32>().ok()?, v.parse::<u64>().ok()?)));
            let Some((node, v)) = parsed else { return Err(bad(&format!("{} is not N<node>=<number>", quote(tok)))) };
            let bytes = v.checked_mul(unit).ok_or_else(|| bad("does not fit 64 bits in bytes"))?;
            match nodes.binary_search_by_key(&node, |(n, _)| *n) {
                Ok(_) => return Err(bad(&format!("node {node} twice"))),
                Err(i) => nodes.insert(i, (node, bytes)),
            }
        }
        lines.push(NumaStatLine { key: key.to_string(), nodes });
    }
    Ok(NumaStat { lines })
}

/// A cgroup's NUMA event counters from `memory.stat` ([`is_kept`] keys).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CgroupCounters {
    /// Whether the cgroup has a `memory.stat` (the memory controller).
    pub memory_stat: bool,
    /// `(name, value)` in the file's order.
    pub lines: Vec<(String, u64)>,
}

impl CgroupCounters {
    /// Reads `memory.stat` of a cgroup: nothing else, so that a snapshot
    /// at step start costs one small read.
    pub fn read(sys: &SysRoot, dir: &CgroupDir) -> Result<Self, SysError> {
        let rel = format!("{}/memory.stat", dir.folder);
        match sys.read(&rel)? {
            None => Ok(Self::default()),
            Some(t) => parse_memory_stat(&t).map_err(|p| sys.invalid(&rel, p)),
        }
    }

    /// The value of a counter (`None`: this kernel does not count it for a
    /// cgroup).
    pub fn get(&self, name: &str) -> Option<u64> {
        self.lines.iter().find(|(k, _)| k == name).map(|(_, v)| *v)
    }

    /// The counters a report names: [`COUNTERS`] in order, each with its
    /// value or `None`, then any other kept counter the file has.
    pub fn named(&self) -> Vec<(String, Option<u64>)> {
        let mut out: Vec<(String, Option<u64>)> = COUNTERS.iter().map(|n| (n.to_string(), self.get(n))).collect();
        out.extend(
            self.lines.iter().filter(|(k, _)| !COUNTERS.contains(&k.as_str())).map(|(k, v)| (k.clone(), Some(*v))),
        );
        out
    }

    /// What each counter grew by from `start` to `self` (the end), for the
    /// counters both have. A counter that went backwards (the cgroup was
    /// removed and made again between the two) is left out rather than
    /// given a made-up value.
    pub fn delta(&self, start: &CgroupCounters) -> Vec<(String, u64)> {
        self.lines
            .iter()
            .filter_map(|(k, end)| {
                let s = start.get(k)?;
                Some((k.clone(), end.checked_sub(s)?))
            })
            .collect()
    }
}

/// Parses `memory.stat` (`key value` lines), keeping the [`is_kept`]
/// counters. A kept key whose value is not a number is an error quoting
/// the line; other lines are not looked at.
pub fn parse_memory_stat(text: &str) -> Result<CgroupCounters, String> {
    let mut lines = Vec::new();
    for line in text.lines() {
        let mut it = line.split_whitespace();
        let (Some(k), v) = (it.next(), it.next()) else { continue };
        if !is_kept(k) {
            continue;
        }
        let v = v.and_then(|v| v.parse::<u64>().ok()).filter(|_| it.next().is_none());
        let Some(v) = v else { return Err(format!("{}: not a counter and its value", quote(line))) };
        lines.push((k.to_string(), v));
    }
    Ok(CgroupCounters { memory_stat: true, lines })
}

/// The folders of a cgroup: its own and every one below it, breadth first,
/// at most [`MAX_FOLDERS`] and [`MAX_DEPTH`] levels (a crafted root cannot
/// make the walk endless).
pub fn folders(sys: &SysRoot, dir: &CgroupDir) -> Result<Vec<String>, SysError> {
    let mut out = vec![dir.folder.clone()];
    let mut level = vec![dir.folder.clone()];
    for _ in 0..MAX_DEPTH {
        let mut next = Vec::new();
        for f in &level {
            for name in sys.list_dirs(f)?.unwrap_or_default() {
                if out.len() + next.len() >= MAX_FOLDERS {
                    out.extend(next);
                    return Ok(out);
                }
                next.push(format!("{f}/{name}"));
            }
        }
        if next.is_empty() {
            break;
        }
        out.extend(next.iter().cloned());
        level = next;
    }
    Ok(out)
}

/// The PIDs in `cgroup.procs` of the folders, sorted, without duplicates.
/// A threaded cgroup's `cgroup.procs` cannot be read (`EOPNOTSUPP`): its
/// threads belong to processes its threaded domain above lists.
pub fn member_pids(sys: &SysRoot, folders: &[String]) -> Result<Vec<i32>, SysError> {
    let mut pids = Vec::new();
    for f in folders {
        match procs::cgroup::members_in(sys, f) {
            Ok(m) => pids.extend(m.unwrap_or_default()),
            Err(SysError::Io { source, .. }) if source.raw_os_error() == Some(libc::EOPNOTSUPP) => {}
            Err(e) => return Err(e),
        }
    }
    pids.sort_unstable();
    pids.dedup();
    Ok(pids)
}

/// Folder levels below a hierarchy's root searched for job cgroups
/// (Slurm's v2 jobs are 3 deep: `system.slice/slurmstepd.scope/job_N`;
/// v1: `slurm/uid_U/job_N`).
pub const JOB_SEARCH_DEPTH: usize = 6;
/// Folders looked at at most when searching for job cgroups.
pub const JOB_SEARCH_FOLDERS: usize = 4096;

/// The Slurm job cgroups on this host: folders named `job_<N>`
/// ([`slurm_ids`]) in the unified hierarchy, and in the v1 memory
/// hierarchy when one is mounted, found breadth first at most
/// [`JOB_SEARCH_DEPTH`] levels deep and among [`JOB_SEARCH_FOLDERS`]
/// folders, never searched below a job (its steps are part of it).
/// Sorted by path; a job seen in both hierarchies is kept once (v2).
pub fn find_job_cgroups(sys: &SysRoot) -> Result<Vec<CgroupDir>, SysError> {
    let mut roots = vec![cgroup::unified_root(sys).to_string()];
    if sys.exists("sys/fs/cgroup/memory/cgroup.procs") && !sys.exists("sys/fs/cgroup/memory/cgroup.controllers") {
        roots.push("sys/fs/cgroup/memory".to_string());
    }
    let mut found: Vec<CgroupDir> = Vec::new();
    let mut seen_jobs = std::collections::BTreeSet::new();
    let mut looked = 0usize;
    'search: for root in roots {
        let mut level = vec![String::new()];
        for _ in 0..JOB_SEARCH_DEPTH {
            let mut next = Vec::new();
            for rel in &level {
                for name in sys.list_dirs(format!("{root}{rel}"))?.unwrap_or_default() {
                    looked += 1;
                    if looked > JOB_SEARCH_FOLDERS {
                        break 'search;
                    }
                    let path = format!("{rel}/{name}");
                    match slurm_ids(&name) {
                        Some(ids) => {
                            if seen_jobs.insert(ids.job_id) {
                                found.push(CgroupDir { folder: format!("{root}{path}"), path });
                            }
                        }
                        None => next.push(path),
                    }
                }
            }
            level = next;
        }
    }
    found.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(found)
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
    /// ([`cgroup::effective_cpus_in`]; `None` when no folder up to
    /// `/sys/fs/cgroup` has one).
    pub allowed_cpus: Option<CpuSet>,
    /// The nodes of `allowed_cpus`.
    pub allowed_nodes: Option<NodeSet>,
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
        let rel = format!("{}/memory.numa_stat", dir.folder);
        let numa_stat = match sys.read(&rel)? {
            None => None,
            Some(t) => Some(parse_numa_stat(&t, page_bytes).map_err(|p| sys.invalid(&rel, p))?),
        };
        let allowed_cpus = cgroup::effective_cpus_in(sys, &dir.folder)?;
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
            allowed_cpus,
            allowed_nodes,
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
        allowed_cpus: Option<CpuSet>,
        allowed_nodes: Option<NodeSet>,
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
            numa_stat,
            counters,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn write(root: &std::path::Path, rel: &str, text: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, text).expect("write");
    }

    fn stat_line(pid: i32, comm: &str, cpu: u32) -> String {
        let mut f: Vec<String> = vec!["0".into(); 37];
        f[0] = "S".into();
        f[1] = "1".into();
        f[17] = "1".into();
        f[36] = cpu.to_string();
        format!("{pid} ({comm}) {}\n", f.join(" "))
    }

    const JOB: &str = "sys/fs/cgroup/system.slice/slurmstepd.scope/job_42";

    /// Two nodes (CPUs 0-1, 2-3); a v2 Slurm job with two steps, a task
    /// cgroup, a member that has exited and one listed twice.
    fn fake(root: &std::path::Path) {
        let m = crate::topo::synth::SynthMachine::two_by_two(1024);
        m.write(root).expect("synth");
        write(root, "sys/fs/cgroup/cgroup.controllers", "cpuset cpu memory\n");
        write(root, "sys/fs/cgroup/cgroup.procs", "1\n");
        write(root, &format!("{JOB}/cgroup.procs"), "");
        write(root, &format!("{JOB}/cpuset.cpus.effective"), "0-3\n");
        write(
            root,
            &format!("{JOB}/memory.stat"),
            "anon 819200\nfile 204800\nnuma_pages_migrated 7\nnuma_pte_updates 100\nnuma_hint_faults 40\n\
             pgdemote_kswapd 0\npgpromote_success 2\nworkingset_refault_anon 3\n",
        );
        write(
            root,
            &format!("{JOB}/memory.numa_stat"),
            "anon N0=409600 N1=409600\nfile N0=0 N1=204800\nshmem N0=0 N1=0\n",
        );
        write(root, &format!("{JOB}/step_0/cgroup.procs"), "10\n");
        write(root, &format!("{JOB}/step_0/user/task_0/cgroup.procs"), "20\n30\n");
        write(root, &format!("{JOB}/step_batch/cgroup.procs"), "10\n");
        write(root, "proc/10/stat", &stat_line(10, "lead", 0));
        write(
            root,
            "proc/10/numa_maps",
            "1000 default anon=100 dirty=100 N0=100 kernelpagesize_kB=4\n\
             2000 default file=/usr/lib/libc.so.6 mapped=50 N1=50 kernelpagesize_kB=4\n",
        );
        write(root, "proc/20/stat", &stat_line(20, "rank", 2));
        write(root, "proc/20/numa_maps", "1000 interleave:0-1 anon=200 dirty=200 N0=100 N1=100 kernelpagesize_kB=4\n");
    }

    #[test]
    fn slurm_job_and_step_from_paths() {
        let ids = |p: &str| slurm_ids(p).map(|s| (s.job_id, s.step));
        assert_eq!(ids("/system.slice/slurmstepd.scope/job_42/step_0/user/task_0"), Some((42, Some("0".into()))));
        assert_eq!(ids("/slurm/uid_1000/job_42/step_batch"), Some((42, Some("batch".into()))));
        assert_eq!(ids("/sys/fs/cgroup/memory/slurm/uid_1000/job_7"), Some((7, None)));
        assert_eq!(ids("/a/job_9/x/step_1"), Some((9, None)));
        assert_eq!(ids("/job_1/job_2/step_extern"), Some((2, Some("extern".into()))));
        for none in ["/", "/user.slice", "/job_", "/job_x1", "/job_1x", "/myjob_1", "/job_99999999999999999999", ""] {
            assert_eq!(slurm_ids(none), None, "{none}");
        }
        assert_eq!(ids("/job_3/step_"), Some((3, None)));
    }

    #[test]
    fn numa_stat_v2_bytes_and_v1_pages() {
        let s = parse_numa_stat("anon N0=4096 N1=8192\nfile N1=0 N0=12288\n\nshmem\n", 4096).expect("v2");
        assert_eq!(s.anon(), Some(&[(0, 4096), (1, 8192)][..]));
        assert_eq!(s.file(), Some(&[(0, 12288), (1, 0)][..]));
        assert_eq!((s.bytes("file", 0), s.bytes("file", 7), s.get("shmem")), (Some(12288), None, Some(&[][..])));
        let v1 =
            parse_numa_stat("total=3 N0=3\nanon=1 N0=1\nhierarchical_total=5 N0=5\nhierarchical_anon=2 N0=2\n", 4096)
                .expect("v1");
        assert_eq!(v1.anon(), Some(&[(0, 2 * 4096)][..]));
        assert_eq!(v1.file(), None);
        for bad in
            ["anon N0=x", "anon 5", "anon N-1=3", "anon=x N0=1", "anon N0=1 N0=2", "anon N0=18446744073709551616"]
        {
            let e = parse_numa_stat(bad, 4096).unwrap_err();
            assert!(e.starts_with(&quote(bad)) && !e.contains('\n'), "{e}");
        }
        assert!(parse_numa_stat("total=18446744073709551615 N0=18446744073709551615\n", 4096)
            .unwrap_err()
            .contains("does not fit"));
    }

    proptest! {
        #[test]
        fn numa_stat_parser_never_panics(s in "\\PC{0,200}|([a-z_=0-9N ]{0,30}\n){0,8}") {
            let _ = parse_numa_stat(&s, 4096);
            let _ = parse_memory_stat(&s);
            let _ = slurm_ids(&s);
        }
    }

    #[test]
    fn counters_and_their_delta() {
        let start = parse_memory_stat("anon 1\nnuma_pages_migrated 7\nnuma_hint_faults 40\npgdemote_direct 9\n")
            .expect("parse");
        assert_eq!(start.lines.len(), 3);
        let end = parse_memory_stat("numa_pages_migrated 10\nnuma_hint_faults 40\npgdemote_direct 2\nnuma_new 1\n")
            .expect("parse");
        // pgdemote_direct went backwards, numa_new was not there at start.
        assert_eq!(
            end.delta(&start),
            vec![("numa_pages_migrated".to_string(), 3), ("numa_hint_faults".to_string(), 0)]
        );
        let named = end.named();
        assert_eq!(named[0], ("numa_pages_migrated".to_string(), Some(10)));
        assert_eq!(named[1], ("numa_pte_updates".to_string(), None));
        assert_eq!(named.last(), Some(&("numa_new".to_string(), Some(1))));
        assert!(parse_memory_stat("numa_pages_migrated lots\n").unwrap_err().contains("\"numa_pages_migrated lots\""));
        assert!(parse_memory_stat("numa_pages_migrated 1 2\n").is_err());
        assert!(parse_memory_stat("anon lots\n").is_ok());
    }

    #[test]
    fn paths_as_typed_resolve_or_fail_naming_them() {
        let d = tempfile::tempdir().expect("tmp");
        fake(d.path());
        let sys = SysRoot::at(d.path());
        let job = "/system.slice/slurmstepd.scope/job_42";
        for typed in [job.to_string(), format!("{job}/"), format!("0::{job}"), format!("/{JOB}")] {
            let dir = CgroupDir::resolve(&sys, &typed).expect("resolve");
            assert_eq!(dir.folder, JOB, "{typed}");
        }
        assert_eq!(CgroupDir::resolve(&sys, "/").expect("root").folder, "sys/fs/cgroup");
        assert_eq!(CgroupDir::resolve(&sys, "0::/").expect("root").path, "/");
        let e = CgroupDir::resolve(&sys, "/no/such").unwrap_err();
        assert!(matches!(e, CgroupError::NotFound { .. }));
        assert_eq!(e.to_string(), "no such cgroup \"/no/such\": no /sys/fs/cgroup/no/such/cgroup.procs");
        for bad in ["", "job_42", "/a/../b", "/a//b", "/a/./b"] {
            let e = CgroupDir::resolve(&sys, bad).unwrap_err();
            assert!(matches!(e, CgroupError::Invalid { .. }), "{bad}: {e}");
            assert!(e.to_string().contains(&quote(bad)), "{e}");
        }
        let e = CgroupDir::resolve(&sys, "/x\n\x1b[31m").unwrap_err().to_string();
        assert!(!e.contains('\n') && !e.contains('\x1b'), "{e}");
        // A path no file system holds: refused as typed, cut like any value.
        for long in [format!("/{}", "a".repeat(5000)), format!("/{}/b", "a".repeat(256)), "/a".repeat(2048)] {
            let e = CgroupDir::resolve(&sys, &long).unwrap_err();
            assert!(matches!(e, CgroupError::Invalid { .. }), "{e}");
            assert!(e.to_string().len() < 300 && e.to_string().contains("characters)"), "{e}");
        }
    }

    #[test]
    fn hybrid_hosts_and_v1_memory_folders() {
        let d = tempfile::tempdir().expect("tmp");
        write(d.path(), "sys/fs/cgroup/unified/cgroup.controllers", "");
        write(d.path(), "sys/fs/cgroup/unified/a/cgroup.procs", "5\n");
        write(d.path(), "sys/fs/cgroup/memory/cgroup.procs", "1\n");
        write(d.path(), "sys/fs/cgroup/memory/slurm/uid_1/job_8/step_batch/cgroup.procs", "6\n");
        let sys = SysRoot::at(d.path());
        assert_eq!(CgroupDir::resolve(&sys, "/a").expect("v2").folder, "sys/fs/cgroup/unified/a");
        let dir = CgroupDir::resolve(&sys, "/slurm/uid_1/job_8/step_batch").expect("v1");
        assert_eq!(dir.folder, "sys/fs/cgroup/memory/slurm/uid_1/job_8/step_batch");
        assert_eq!(dir.slurm(), Some(SlurmIds { job_id: 8, step: Some("batch".into()) }));
        let e = CgroupDir::resolve(&sys, "/b").unwrap_err().to_string();
        assert!(
            e.ends_with("no /sys/fs/cgroup/unified/b/cgroup.procs nor /sys/fs/cgroup/memory/b/cgroup.procs"),
            "{e}"
        );
    }

    #[test]
    fn a_job_with_steps_and_tasks() {
        let d = tempfile::tempdir().expect("tmp");
        fake(d.path());
        let sys = SysRoot::at(d.path());
        let r = JobReport::collect(&sys, "/system.slice/slurmstepd.scope/job_42").expect("collect");
        assert_eq!(r.slurm, Some(SlurmIds { job_id: 42, step: None }));
        assert_eq!(r.folders, 5);
        assert_eq!(r.processes.iter().map(|p| p.pid).collect::<Vec<_>>(), vec![10, 20]);
        assert_eq!((r.exited.clone(), r.unreadable.clone()), (vec![30], vec![]));
        let page = 4096;
        // numa_maps: 10 has 100 anon pages on node 0 and 50 libc pages on
        // node 1; 20 has 100 + 100 interleaved.
        assert_eq!(r.nodes.iter().map(|n| (n.id, n.bytes)).collect::<Vec<_>>(), vec![(0, 200 * page), (1, 150 * page)]);
        assert_eq!(r.total_bytes, 350 * page);
        // Own memory: 10's 100 pages, all on node 0 where it runs; 20's 200
        // pages, 100 on node 1 where it runs. libc's pages are not own.
        assert_eq!((r.own_bytes, r.own_local_bytes), (300 * page, 200 * page));
        assert_eq!(r.locality, Some(2.0 / 3.0));
        assert_eq!(r.cpus_nodes.to_list(), "0-1");
        assert_eq!(r.allowed_cpus.as_ref().map(|c| c.to_list()).as_deref(), Some("0-3"));
        assert_eq!(r.allowed_nodes.as_ref().map(|c| c.to_list()).as_deref(), Some("0-1"));
        assert_eq!(r.nodes[1].charged_anon_bytes, Some(409600));
        assert_eq!(r.nodes[1].charged_file_bytes, Some(204800));
        assert_eq!(r.counters.get("numa_pages_migrated"), Some(7));
        assert_eq!(r.counters.get("workingset_refault_anon"), None);
        assert!(NOT_PER_CGROUP.iter().all(|n| r.counters.get(n).is_none()));
        // A step alone: its own processes only, no memory files of its own.
        let s = JobReport::collect(&sys, "/system.slice/slurmstepd.scope/job_42/step_0").expect("step");
        assert_eq!(s.slurm, Some(SlurmIds { job_id: 42, step: Some("0".into()) }));
        assert_eq!(s.processes.len(), 2);
        assert_eq!((s.numa_stat.clone(), s.counters.memory_stat), (None, false));
        assert_eq!(s.allowed_cpus.as_ref().map(|c| c.to_list()).as_deref(), Some("0-3"), "the job's, above it");
        assert_eq!(s.nodes.iter().map(|n| n.charged_anon_bytes).collect::<Vec<_>>(), vec![None, None]);
    }

    #[test]
    fn a_cgroup_without_cpuset_files_has_its_nearest_ancestors_cpus() {
        // cgroup v2 without the cpuset controller below the job (Slurm's
        // step and task folders with proctrack/cgroup alone): the CPUs its
        // tasks may use are the nearest ancestor's, as the daemon reads them.
        let d = tempfile::tempdir().expect("tmp");
        fake(d.path());
        write(d.path(), "sys/fs/cgroup/cpuset.cpus.effective", "0-3\n");
        write(d.path(), &format!("{JOB}/cpuset.cpus.effective"), "2-3\n");
        let sys = SysRoot::at(d.path());
        let task = "/system.slice/slurmstepd.scope/job_42/step_0/user/task_0";
        for path in [task, "/system.slice/slurmstepd.scope/job_42/step_0"] {
            let r = JobReport::collect(&sys, path).expect("collect");
            assert_eq!(r.allowed_cpus.as_ref().map(|c| c.to_list()).as_deref(), Some("2-3"), "{path}");
            assert_eq!(r.allowed_nodes.as_ref().map(|n| n.to_list()).as_deref(), Some("1"), "{path}");
        }
        // No job file: the root's.
        std::fs::remove_file(d.path().join(JOB).join("cpuset.cpus.effective")).expect("rm");
        let r = JobReport::collect(&sys, task).expect("collect");
        assert_eq!(r.allowed_cpus.as_ref().map(|c| c.to_list()).as_deref(), Some("0-3"));
        // None up to the root: unknown, as before.
        std::fs::remove_file(d.path().join("sys/fs/cgroup/cpuset.cpus.effective")).expect("rm");
        let r = JobReport::collect(&sys, task).expect("collect");
        assert_eq!((r.allowed_cpus, r.allowed_nodes), (None, None));
        // A v1 memory hierarchy's folder has no cpuset files anywhere above it.
        write(d.path(), "sys/fs/cgroup/memory/cgroup.procs", "1\n");
        write(d.path(), "sys/fs/cgroup/memory/slurm/job_5/cgroup.procs", "");
        let r = JobReport::collect(&sys, "/sys/fs/cgroup/memory/slurm/job_5").expect("v1");
        assert_eq!(r.allowed_cpus, None);
    }

    #[test]
    fn hostile_cgroup_files_are_one_line_errors() {
        let d = tempfile::tempdir().expect("tmp");
        fake(d.path());
        write(d.path(), &format!("{JOB}/memory.numa_stat"), "anon N0=1\x1b]0;x\x07\n");
        let sys = SysRoot::at(d.path());
        let e = JobReport::collect(&sys, "/system.slice/slurmstepd.scope/job_42").unwrap_err().to_string();
        assert!(e.contains("memory.numa_stat") && !e.contains('\x1b') && !e.contains('\n'), "{e}");
        fake(d.path());
        write(d.path(), &format!("{JOB}/memory.stat"), "numa_pages_migrated -1\n");
        let e = JobReport::collect(&sys, "/system.slice/slurmstepd.scope/job_42").unwrap_err().to_string();
        assert!(e.contains("memory.stat") && e.contains("\"numa_pages_migrated -1\""), "{e}");
    }

    #[test]
    fn job_cgroups_found_and_capped() {
        let d = tempfile::tempdir().expect("tmp");
        fake(d.path());
        write(d.path(), "sys/fs/cgroup/system.slice/slurmstepd.scope/job_7/cgroup.procs", "");
        write(d.path(), "sys/fs/cgroup/user.slice/job_x/cgroup.procs", "");
        write(d.path(), "sys/fs/cgroup/a/b/c/d/e/f/job_9/cgroup.procs", "");
        let sys = SysRoot::at(d.path());
        let found: Vec<String> = find_job_cgroups(&sys).expect("find").into_iter().map(|c| c.path).collect();
        // job_9 is 7 levels deep; steps below job_42 are part of it.
        assert_eq!(found, ["/system.slice/slurmstepd.scope/job_42", "/system.slice/slurmstepd.scope/job_7"]);
        let topo = Topology::read_nodes_only(&sys).expect("topo");
        let asked = vec!["/user.slice/job_x".to_string(), "/gone".to_string(), "relative".to_string()];
        let s = CgroupSample::read(&sys, &topo, &asked, true, 2).expect("sample");
        let paths: Vec<&str> = s.reports.iter().map(|r| r.cgroup.path.as_str()).collect();
        assert_eq!((paths, s.dropped), (vec!["/user.slice/job_x", "/system.slice/slurmstepd.scope/job_42"], 1));
        assert_eq!(s.reports[1].processes.len(), 2);
        assert_eq!(CgroupSample::read(&sys, &topo, &asked, true, 0).expect("off"), CgroupSample::default());
        // One garbage cgroup file: that cgroup is left out, named.
        write(d.path(), "sys/fs/cgroup/user.slice/job_x/memory.stat", "numa_pages_migrated x\n");
        let s = CgroupSample::read(&sys, &topo, &asked, true, 2).expect("sample");
        assert_eq!((s.reports.len(), s.failed.len()), (1, 1));
        assert!(s.failed[0].0 == "/user.slice/job_x" && s.failed[0].1.contains("memory.stat"), "{:?}", s.failed);
        assert_eq!(CgroupSample::read(&sys, &topo, &[], false, 5).expect("none").reports.len(), 0);
    }

    #[test]
    fn deep_trees_are_bounded() {
        let d = tempfile::tempdir().expect("tmp");
        let deep: String = (0..MAX_DEPTH + 5).map(|i| format!("/d{i}")).collect();
        write(d.path(), &format!("sys/fs/cgroup/j{deep}/cgroup.procs"), "");
        write(d.path(), "sys/fs/cgroup/j/cgroup.procs", "");
        let sys = SysRoot::at(d.path());
        let dir = CgroupDir::resolve(&sys, "/j").expect("resolve");
        assert_eq!(folders(&sys, &dir).expect("walk").len(), MAX_DEPTH + 1);
    }

    #[test]
    fn live_own_cgroup_holds_this_process() {
        let sys = SysRoot::live();
        let me = std::process::id() as i32;
        let Some(path) = cgroup::read_path(&sys, me).expect("read") else { return };
        let dir = match CgroupDir::resolve(&sys, &path) {
            Ok(d) => d,
            Err(CgroupError::NotFound { .. }) => return, // no cgroup2 mounted here
            Err(e) => panic!("{e}"),
        };
        // Only this cgroup's own folder: the host's root holds every process.
        let pids = member_pids(&sys, std::slice::from_ref(&dir.folder)).expect("members");
        assert!(pids.contains(&me), "{me} not in {pids:?} of {}", dir.folder);
    }
}
