//! What the calling process may use: `Cpus_allowed_list` and
//! `Mems_allowed_list` of `/proc/self/status`. Dumps of real machines often
//! lack that file but keep the cpuset or cgroup files; then the cpuset of
//! `/proc/self/cpuset` (or `/proc/self/cgroup`) under the cpuset mount found
//! in `/proc/mounts` is read, as hwloc does.
//!
//! `Cpus_allowed` is the process's CPU affinity, which `taskset` or a batch
//! system may have narrowed inside its cpuset; [`read_cpuset_cpus`] reads
//! the cpuset's own CPUs (the kernel's limit for `sched_setaffinity`), for
//! the callers that must tell the two apart.

use super::{Allowed, Node};
use crate::sets::{CpuSet, NodeSet};
use crate::sys::{SysError, SysRoot};

/// Reads the allowed CPUs and nodes.
pub(super) fn read_allowed(sys: &SysRoot, online: &CpuSet, nodes: &[Node]) -> Result<Allowed, SysError> {
    let all_nodes: NodeSet = nodes.iter().map(|n| n.id).collect();
    if let Some(status) = sys.read("proc/self/status")? {
        let field = |key: &str| crate::sys::status_field(&status, key).map(str::trim);
        if let (Some(c), Some(m)) = (field("Cpus_allowed_list:"), field("Mems_allowed_list:")) {
            let cpus = CpuSet::parse_list(c).map_err(|e| sys.invalid("proc/self/status", e.to_string()))?;
            let nodes = NodeSet::parse_list(m).map_err(|e| sys.invalid("proc/self/status", e.to_string()))?;
            return Ok(Allowed { cpus, nodes, from: "/proc/self/status".into() });
        }
    }
    if let Some((cpus_rel, mems_rel)) = cgroup_files(sys)? {
        let cpus = sys.read_list::<crate::sets::Cpu>(&cpus_rel)?;
        let mems = sys.read_list::<crate::sets::Node>(&mems_rel)?;
        if let (Some(c), Some(m)) = (cpus, mems) {
            if !c.is_empty() && !m.is_empty() {
                return Ok(Allowed { cpus: c.intersection(online), nodes: m, from: format!("/{cpus_rel}") });
            }
        }
    }
    Ok(Allowed { cpus: online.clone(), nodes: all_nodes, from: "unrestricted".into() })
}

/// The CPUs of the calling process's cpuset: `cpuset.cpus.effective` on
/// cgroup v2, `cpuset.effective_cpus` (or `cpuset.cpus`) on v1, within the
/// online CPUs. `None` where the root does not say (no cpuset mounted, no
/// `/proc/self/cpuset` or `cgroup`, an empty file).
pub fn read_cpuset_cpus(sys: &SysRoot, online: &CpuSet) -> Result<Option<CpuSet>, SysError> {
    let Some((cpus_rel, _)) = cgroup_files(sys)? else { return Ok(None) };
    // v1 keeps the effective set beside the configured one.
    let effective = match cpus_rel.rsplit_once('/') {
        Some((dir, "cpuset.cpus")) => Some(format!("{dir}/cpuset.effective_cpus")),
        Some((dir, "cpus")) => Some(format!("{dir}/effective_cpus")),
        _ => None,
    };
    let rel = effective.filter(|e| sys.exists(e)).unwrap_or(cpus_rel);
    Ok(sys.read_list::<crate::sets::Cpu>(&rel)?.map(|c| c.intersection(online)).filter(|c| !c.is_empty()))
}

/// Finds the cpuset files of the calling process from `/proc/mounts` and
/// `/proc/self/cpuset` or `/proc/self/cgroup`, relative to the root.
fn cgroup_files(sys: &SysRoot) -> Result<Option<(String, String)>, SysError> {
    let Some(mounts) = sys.read("proc/mounts")? else { return Ok(None) };
    let path = match sys.read_nonempty("proc/self/cpuset")? {
        Some(p) => p,
        None => match sys.read("proc/self/cgroup")?.and_then(|t| crate::procs::cgroup::parse_path(&t)) {
            Some(p) => p,
            None => return Ok(None),
        },
    };
    let path = path.trim().trim_start_matches('/');
    for line in mounts.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let [_, mnt, fstype, opts, ..] = f[..] else { continue };
        let (cpus, mems) = match fstype {
            "cpuset" => ("cpus", "mems"),
            "cgroup" if opts.split(',').any(|o| o == "cpuset") => {
                if opts.split(',').any(|o| o == "noprefix") {
                    ("cpus", "mems")
                } else {
                    ("cpuset.cpus", "cpuset.mems")
                }
            }
            "cgroup2" => ("cpuset.cpus.effective", "cpuset.mems.effective"),
            _ => continue,
        };
        let mnt = mnt.trim_start_matches('/');
        let dir = if path.is_empty() { mnt.to_string() } else { format!("{mnt}/{path}") };
        let c = format!("{dir}/{cpus}");
        if sys.exists(&c) {
            return Ok(Some((c, format!("{dir}/{mems}"))));
        }
    }
    Ok(None)
}
