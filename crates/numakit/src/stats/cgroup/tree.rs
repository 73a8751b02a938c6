//! Where a cgroup is: the folder a path as the user typed it names, the
//! folders below it and the processes in them (bounded, so a crafted root
//! cannot make the walk endless), the Slurm job cgroups of a host and the
//! job and step ids in a path.

use serde::Serialize;

use super::CgroupError;
use crate::procs::{self, cgroup};
use crate::sys::{SysError, SysRoot};
use crate::text::{one_line, quote, QUOTE_MAX_CHARS};

/// Folders below a cgroup read at most (the cgroup itself included).
pub const MAX_FOLDERS: usize = 10_000;
/// Folder levels below a cgroup read at most.
pub const MAX_DEPTH: usize = 32;

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
    /// ([`cgroup::unified_root`]) and then in the v1 hierarchies, the
    /// memory hierarchy first ([`cgroup::v1_hierarchies`]: a Slurm step
    /// without a memory cgroup is in the cpuset or freezer one), or an
    /// absolute folder under `/sys/fs/cgroup`. The folder must hold
    /// `cgroup.procs`.
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
            c.extend(cgroup::v1_hierarchies(sys)?.into_iter().map(|h| format!("{h}{rest}")));
            c
        };
        for folder in &candidates {
            if sys.read(format!("{folder}/cgroup.procs"))?.is_some() {
                return Ok(CgroupDir { path: path.to_string(), folder: folder.clone() });
            }
        }
        let mut looked: Vec<String> = candidates.iter().take(2).map(|c| format!("/{c}/cgroup.procs")).collect();
        if candidates.len() > 2 {
            looked.push(format!("the same in {} other v1 hierarchies", candidates.len() - 2));
        }
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
