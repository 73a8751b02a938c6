//! A process's cgroup (v2, the unified hierarchy under `/sys/fs/cgroup`):
//! its path from `/proc/PID/cgroup`, the folder of a path, and what the
//! folder says about placement (`cpuset.cpus`, `cpuset.cpus.effective`)
//! and membership (`cgroup.procs`). Read through [`SysRoot`]; a process or
//! cgroup that is gone, or a controller that is not enabled, is
//! `Ok(None)`.

use crate::sets::{Cpu, CpuSet};
use crate::sys::{SysError, SysRoot};

/// One line of `/proc/PID/cgroup`: `hierarchy-ID:controller-list:path`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CgroupLine<'a> {
    /// The hierarchy's id (`0` for the unified hierarchy).
    pub hierarchy: &'a str,
    /// The hierarchy's controllers, comma-separated (`cpu,cpuacct`,
    /// `name=systemd`; empty for the unified hierarchy).
    pub controllers: &'a str,
    /// The path, as the kernel writes it (blanks around it taken off).
    pub path: &'a str,
}

impl CgroupLine<'_> {
    /// Whether `controller` is one of the line's controllers.
    pub fn has_controller(&self, controller: &str) -> bool {
        self.controllers.split(',').any(|c| c == controller)
    }
}

/// The lines of `/proc/PID/cgroup` text, in order; lines without the two
/// colons are left out. The one parser of that file.
pub fn parse_lines(text: &str) -> impl Iterator<Item = CgroupLine<'_>> {
    text.lines().filter_map(|l| {
        let mut f = l.splitn(3, ':');
        let (hierarchy, controllers, path) = (f.next()?, f.next()?, f.next()?);
        Some(CgroupLine { hierarchy, controllers, path: path.trim() })
    })
}

/// The cgroup v2 path in `/proc/PID/cgroup` text (the `0::/path` line).
/// `None` for a path that does not resolve below `/sys/fs/cgroup`: not
/// absolute, or climbing with `..` (the kernel writes `/../..` for a
/// process outside the reader's cgroup namespace; a crafted dump could
/// point anywhere).
pub fn parse_path(text: &str) -> Option<String> {
    let p = parse_lines(text).find(|l| l.hierarchy == "0" && l.controllers.is_empty())?.path;
    (p.starts_with('/') && !p.split('/').any(|c| c == "..")).then(|| p.to_string())
}

/// The cgroup v2 path of a process (`/` for the root cgroup).
pub fn read_path(sys: &SysRoot, pid: i32) -> Result<Option<String>, SysError> {
    Ok(sys.read(format!("proc/{pid}/cgroup"))?.and_then(|t| parse_path(&t)))
}

/// The folder of a cgroup v2 path, relative to the root.
pub fn dir(path: &str) -> String {
    format!("sys/fs/cgroup{}", if path == "/" { "" } else { path.trim_end_matches('/') })
}

/// The folder of the unified (v2) hierarchy below the root:
/// `sys/fs/cgroup` where cgroup2 is mounted there (a v2-only host), else
/// `sys/fs/cgroup/unified` where a hybrid host (v1 controllers at
/// `/sys/fs/cgroup/<controller>`) mounts it, else `sys/fs/cgroup`.
pub fn unified_root(sys: &SysRoot) -> &'static str {
    if !sys.exists("sys/fs/cgroup/cgroup.controllers") && sys.exists("sys/fs/cgroup/unified/cgroup.controllers") {
        "sys/fs/cgroup/unified"
    } else {
        "sys/fs/cgroup"
    }
}

/// The CPUs a cgroup's tasks may use: its `cpuset.cpus.effective`, or,
/// where the cpuset controller is not enabled in it (no such file), its
/// nearest ancestor's that has one: a cgroup v2 without the controller
/// shares its parent's cpuset (Slurm's `…/job_1/step_0/user/task_0` below
/// a job cgroup or slice that has one). `None` when no folder up to the
/// root has the file.
pub fn effective_cpus(sys: &SysRoot, path: &str) -> Result<Option<CpuSet>, SysError> {
    effective_cpus_in(sys, &dir(path))
}

/// [`effective_cpus`] of a cgroup folder given relative to the root
/// (`sys/fs/cgroup/…`, or a hybrid host's `sys/fs/cgroup/unified/…`): the
/// walk up stops at `sys/fs/cgroup`, so a v1 hierarchy's folder (which has
/// no such file) and a folder outside `/sys/fs/cgroup` are `None`.
pub fn effective_cpus_in(sys: &SysRoot, folder: &str) -> Result<Option<CpuSet>, SysError> {
    let mut f = folder.trim_end_matches('/');
    loop {
        if let Some(cpus) = sys.read_list::<Cpu>(format!("{f}/cpuset.cpus.effective"))? {
            return Ok(Some(cpus));
        }
        match f.rfind('/') {
            Some(i) if f.starts_with("sys/fs/cgroup/") => f = &f[..i],
            _ => return Ok(None),
        }
    }
}

/// A cgroup's own `cpuset.cpus`, as written (empty: inherited).
pub fn cpus(sys: &SysRoot, path: &str) -> Result<Option<String>, SysError> {
    Ok(sys.read(format!("{}/cpuset.cpus", dir(path)))?.map(|t| t.trim().to_string()))
}

/// The processes in a cgroup (`cgroup.procs`, not those of its children).
pub fn members(sys: &SysRoot, path: &str) -> Result<Option<Vec<i32>>, SysError> {
    members_in(sys, &dir(path))
}

/// [`members`] of a cgroup folder given relative to the root (a v1
/// hierarchy's folder too: its `cgroup.procs` has the same format).
pub fn members_in(sys: &SysRoot, folder: &str) -> Result<Option<Vec<i32>>, SysError> {
    Ok(sys
        .read(format!("{folder}/cgroup.procs"))?
        .map(|t| t.split_whitespace().filter_map(|p| p.parse().ok()).collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_folders() {
        assert_eq!(parse_path("0::/system.slice/job.scope\n").as_deref(), Some("/system.slice/job.scope"));
        // A hybrid host: v1 lines first, the unified line last.
        assert_eq!(parse_path("12:cpuset:/x\n1:name=systemd:/y\n0::/user.slice\n").as_deref(), Some("/user.slice"));
        assert_eq!(parse_path("12:cpuset:/x\n"), None);
        // Outside the cgroup namespace, or crafted: not below /sys/fs/cgroup.
        for bad in ["0::/../../..\n", "0::/a/../../etc\n", "0::/a/..\n", "0::relative\n", "0::\n"] {
            assert_eq!(parse_path(bad), None, "{bad:?}");
        }
        assert_eq!(parse_path("0::/a..b/.x\n").as_deref(), Some("/a..b/.x"));
        assert_eq!(dir("/"), "sys/fs/cgroup");
        assert_eq!(dir("/a/b/"), "sys/fs/cgroup/a/b");
    }

    #[test]
    fn a_cgroup_read_below_a_root() {
        let d = tempfile::tempdir().expect("tmp");
        let cg = d.path().join("sys/fs/cgroup/job");
        std::fs::create_dir_all(&cg).expect("mkdir");
        std::fs::create_dir_all(d.path().join("proc/42")).expect("mkdir");
        std::fs::write(d.path().join("proc/42/cgroup"), "0::/job\n").expect("write");
        std::fs::write(cg.join("cpuset.cpus"), "2-3\n").expect("write");
        std::fs::write(cg.join("cpuset.cpus.effective"), "2-3\n").expect("write");
        std::fs::write(cg.join("cgroup.procs"), "42\n43\n").expect("write");
        let sys = SysRoot::at(d.path());
        assert_eq!(read_path(&sys, 42).expect("read").as_deref(), Some("/job"));
        assert_eq!(read_path(&sys, 7).expect("gone"), None);
        assert_eq!(effective_cpus(&sys, "/job").expect("read"), Some(CpuSet::parse_list("2-3").expect("set")));
        assert_eq!(cpus(&sys, "/job").expect("read").as_deref(), Some("2-3"));
        assert_eq!(members(&sys, "/job").expect("read"), Some(vec![42, 43]));
        assert_eq!(members(&sys, "/none").expect("no cgroup"), None);
        assert_eq!(unified_root(&sys), "sys/fs/cgroup");
        std::fs::create_dir_all(d.path().join("sys/fs/cgroup/unified")).expect("mkdir");
        std::fs::write(d.path().join("sys/fs/cgroup/unified/cgroup.controllers"), "").expect("write");
        assert_eq!(unified_root(&sys), "sys/fs/cgroup/unified");
        std::fs::write(d.path().join("sys/fs/cgroup/cgroup.controllers"), "cpuset memory\n").expect("write");
        assert_eq!(unified_root(&sys), "sys/fs/cgroup");
    }

    #[test]
    fn a_cgroup_without_the_cpuset_controller_has_its_nearest_ancestors_cpus() {
        // Slurm's cgroup v2 tree as the test bed guest shows it: the
        // controller enabled for system.slice (CPUs 1-3,5-7), not below it.
        let d = tempfile::tempdir().expect("tmp");
        let root = d.path().join("sys/fs/cgroup");
        let task = root.join("system.slice/nkvm_slurmstepd.scope/job_4/step_0/user/task_special");
        std::fs::create_dir_all(&task).expect("mkdir");
        std::fs::write(root.join("cpuset.cpus.effective"), "0-7\n").expect("write");
        std::fs::write(root.join("system.slice/cpuset.cpus.effective"), "1-3,5-7\n").expect("write");
        let sys = SysRoot::at(d.path());
        let want = Some(CpuSet::parse_list("1-3,5-7").expect("set"));
        let path = "/system.slice/nkvm_slurmstepd.scope/job_4/step_0/user/task_special";
        assert_eq!(effective_cpus(&sys, path).expect("read"), want);
        assert_eq!(effective_cpus(&sys, "/system.slice/").expect("read"), want);
        assert_eq!(effective_cpus(&sys, "/user.slice").expect("read"), Some(CpuSet::parse_list("0-7").expect("set")));
        // A folder given relative to the root walks the same way, up to
        // /sys/fs/cgroup and never above it.
        assert_eq!(effective_cpus_in(&sys, &dir(path)).expect("read"), want);
        std::fs::write(d.path().join("sys/fs/cpuset.cpus.effective"), "0\n").expect("write");
        std::fs::create_dir_all(d.path().join("sys/fs/other")).expect("mkdir");
        assert_eq!(effective_cpus_in(&sys, "sys/fs/other").expect("read"), None, "outside /sys/fs/cgroup");
        assert_eq!(effective_cpus_in(&sys, "sys/fs/cgroupx/a").expect("read"), None, "not below /sys/fs/cgroup");
        std::fs::remove_file(root.join("cpuset.cpus.effective")).expect("rm");
        assert_eq!(effective_cpus(&sys, "/user.slice").expect("read"), None, "no folder up to the root has one");
    }
}
