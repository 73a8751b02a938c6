//! A process's cgroup (v2, the unified hierarchy under `/sys/fs/cgroup`):
//! its path from `/proc/PID/cgroup`, the folder of a path, and what the
//! folder says about placement (`cpuset.cpus`, `cpuset.cpus.effective`)
//! and membership (`cgroup.procs`). Read through [`SysRoot`]; a process or
//! cgroup that is gone, or a controller that is not enabled, is
//! `Ok(None)`.
//!
//! cgroup v1 (EL8's default): each controller has a hierarchy of its own
//! (`/sys/fs/cgroup/memory`, `/sys/fs/cgroup/cpuset`,
//! `/sys/fs/cgroup/cpu,cpuacct`, ...), a cgroup is the same path in each
//! (Slurm's `/slurm/uid_U/job_N/step_S`), and the files have v1's names
//! (`cpuset.effective_cpus`). [`controller_folder`] finds the folder that
//! holds one controller's files for a cgroup found in any hierarchy.

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

/// Whether `sys/fs/cgroup` holds hierarchies (v1 or hybrid: a tmpfs of
/// mount points) rather than being the v2 root cgroup (`cgroup.procs`,
/// `cgroup.controllers`).
fn holds_hierarchies(sys: &SysRoot) -> bool {
    !sys.exists("sys/fs/cgroup/cgroup.controllers") && !sys.exists("sys/fs/cgroup/cgroup.procs")
}

/// Whether the folder `sys/fs/cgroup/NAME` is the root of a v1 hierarchy:
/// it has `cgroup.procs` and v1's `tasks`, and no `cgroup.controllers` (a
/// v2 cgroup has it and no `tasks`), and it is not a hybrid host's `unified`.
fn is_v1_root(sys: &SysRoot, name: &str) -> bool {
    name != "unified"
        && sys.exists(format!("sys/fs/cgroup/{name}/cgroup.procs"))
        && sys.exists(format!("sys/fs/cgroup/{name}/tasks"))
        && !sys.exists(format!("sys/fs/cgroup/{name}/cgroup.controllers"))
}

/// The roots of the v1 hierarchies mounted below `sys/fs/cgroup`
/// (`sys/fs/cgroup/memory`, `sys/fs/cgroup/cpu,cpuacct`, ...), the memory
/// hierarchy first, then by name; none on a v2-only host.
pub fn v1_hierarchies(sys: &SysRoot) -> Result<Vec<String>, SysError> {
    if !holds_hierarchies(sys) {
        return Ok(Vec::new());
    }
    let mut names: Vec<String> =
        sys.list_dirs("sys/fs/cgroup")?.unwrap_or_default().into_iter().filter(|n| is_v1_root(sys, n)).collect();
    names.sort_by_key(|n| (n != "memory", n.clone()));
    Ok(names.into_iter().map(|n| format!("sys/fs/cgroup/{n}")).collect())
}

/// The v1 hierarchy root a folder is in and the folder's path within it
/// (`sys/fs/cgroup/memory/slurm/job_1` → `sys/fs/cgroup/memory`,
/// `/slurm/job_1`); `None` for a folder of the unified (v2) hierarchy.
pub fn v1_split(sys: &SysRoot, folder: &str) -> Option<(String, String)> {
    let rest = folder.trim_end_matches('/').strip_prefix("sys/fs/cgroup/")?;
    let (name, path) = rest.split_once('/').map_or((rest, ""), |(n, p)| (n, p));
    if !holds_hierarchies(sys) || !is_v1_root(sys, name) {
        return None;
    }
    Some((format!("sys/fs/cgroup/{name}"), format!("/{path}")))
}

/// The folder that holds `controller`'s files (`memory`, `cpuset`,
/// `cpuacct`) for the cgroup whose folder is `folder`: `folder` itself on
/// cgroup v2 and in a v1 hierarchy that has the controller; else the same
/// path in the v1 hierarchy that has it. `None` on v1 when no hierarchy
/// has the controller.
pub fn controller_folder(sys: &SysRoot, folder: &str, controller: &str) -> Result<Option<String>, SysError> {
    let Some((root, path)) = v1_split(sys, folder) else { return Ok(Some(folder.to_string())) };
    let has = |root: &str| root.rsplit('/').next().is_some_and(|n| n.split(',').any(|c| c == controller));
    if has(&root) {
        return Ok(Some(folder.to_string()));
    }
    let other = v1_hierarchies(sys)?.into_iter().find(|r| has(r));
    Ok(other.map(|r| if path == "/" { r } else { format!("{r}{path}") }))
}

/// The file a cgroup's CPUs are read from: v2's `cpuset.cpus.effective`,
/// or v1's `cpuset.effective_cpus` for a folder of a v1 hierarchy.
pub fn cpus_file(sys: &SysRoot, folder: &str) -> &'static str {
    if v1_split(sys, folder).is_some() {
        "cpuset.effective_cpus"
    } else {
        "cpuset.cpus.effective"
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
/// walk up stops at `sys/fs/cgroup`, so a folder outside `/sys/fs/cgroup`
/// is `None`. A folder of a v1 hierarchy is read in the v1 cpuset
/// hierarchy ([`controller_folder`]): its `cpuset.effective_cpus`, or that
/// of its nearest folder up to the hierarchy's root (a cgroup Slurm made
/// in the memory hierarchy only runs in the cpuset its slurmstepd is in,
/// the root's where nothing else moved it).
pub fn effective_cpus_in(sys: &SysRoot, folder: &str) -> Result<Option<CpuSet>, SysError> {
    let (mut f, file, top) = match v1_split(sys, folder) {
        None => (folder.trim_end_matches('/').to_string(), "cpuset.cpus.effective", "sys/fs/cgroup".to_string()),
        Some(_) => match controller_folder(sys, folder, "cpuset")? {
            Some(c) => {
                let top = v1_split(sys, &c).map_or_else(|| c.clone(), |(root, _)| root);
                (c, "cpuset.effective_cpus", top)
            }
            None => return Ok(None),
        },
    };
    loop {
        if let Some(cpus) = sys.read_list::<Cpu>(format!("{f}/{file}"))? {
            return Ok(Some(cpus));
        }
        match f.rfind('/') {
            Some(i) if f.starts_with(&format!("{top}/")) => f.truncate(i),
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
pub(crate) mod tests {
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

    /// An EL8 host (cgroup v1): Slurm's step in the memory, cpuset and
    /// cpuacct hierarchies, each under the same path.
    pub(crate) fn v1_host(root: &std::path::Path) {
        let cg = root.join("sys/fs/cgroup");
        let step = "slurm/uid_1000/job_5/step_0";
        for (h, files) in [
            ("memory", vec![("memory.max_usage_in_bytes", "8388608\n")]),
            ("cpuset", vec![("cpuset.effective_cpus", "2-3\n"), ("cpuset.cpus", "2-3\n")]),
            ("cpu,cpuacct", vec![("cpuacct.usage_user", "1500000000\n"), ("cpuacct.usage_sys", "250000000\n")]),
            ("freezer", vec![]),
        ] {
            std::fs::create_dir_all(cg.join(h).join(step).join("task_0")).expect("mkdir");
            std::fs::write(cg.join(h).join("cgroup.procs"), "1\n").expect("write");
            std::fs::write(cg.join(h).join("tasks"), "1\n").expect("write");
            std::fs::write(cg.join(h).join(step).join("cgroup.procs"), "").expect("write");
            std::fs::write(cg.join(h).join(step).join("task_0/cgroup.procs"), "42\n").expect("write");
            for (name, text) in files {
                std::fs::write(cg.join(h).join(step).join(name), text).expect("write");
            }
        }
        std::fs::write(cg.join("cpuset/cpuset.effective_cpus"), "0-7\n").expect("write");
        // systemd's own named hierarchy: not a controller's
        std::fs::create_dir_all(cg.join("systemd")).expect("mkdir");
        std::fs::write(cg.join("systemd/cgroup.procs"), "1\n").expect("write");
        std::fs::write(cg.join("systemd/tasks"), "1\n").expect("write");
    }

    #[test]
    fn a_v1_host_reads_each_controller_in_its_own_hierarchy() {
        let d = tempfile::tempdir().expect("tmp");
        v1_host(d.path());
        let sys = SysRoot::at(d.path());
        let h: Vec<String> = v1_hierarchies(&sys).expect("read");
        assert_eq!(h[0], "sys/fs/cgroup/memory", "memory first: {h:?}");
        assert!(h.contains(&"sys/fs/cgroup/cpu,cpuacct".to_string()) && h.len() == 5, "{h:?}");
        let mem = "sys/fs/cgroup/memory/slurm/uid_1000/job_5/step_0";
        assert_eq!(v1_split(&sys, mem), Some(("sys/fs/cgroup/memory".into(), "/slurm/uid_1000/job_5/step_0".into())));
        let folder = |c: &str| controller_folder(&sys, mem, c).expect("read");
        assert_eq!(folder("memory").as_deref(), Some(mem));
        assert_eq!(folder("cpuset").as_deref(), Some("sys/fs/cgroup/cpuset/slurm/uid_1000/job_5/step_0"));
        assert_eq!(folder("cpuacct").as_deref(), Some("sys/fs/cgroup/cpu,cpuacct/slurm/uid_1000/job_5/step_0"));
        assert_eq!(folder("hugetlb"), None, "no such hierarchy");
        assert_eq!(cpus_file(&sys, mem), "cpuset.effective_cpus");
        let two_three = Some(CpuSet::parse_list("2-3").expect("set"));
        assert_eq!(effective_cpus_in(&sys, mem).expect("read"), two_three);
        // A step's task folder has none of its own in the cpuset hierarchy:
        // the step's; a cgroup Slurm made in the memory hierarchy only: the root's.
        assert_eq!(effective_cpus_in(&sys, &format!("{mem}/task_0")).expect("read"), two_three);
        std::fs::create_dir_all(d.path().join("sys/fs/cgroup/memory/other")).expect("mkdir");
        let all = effective_cpus_in(&sys, "sys/fs/cgroup/memory/other").expect("read");
        assert_eq!(all, Some(CpuSet::parse_list("0-7").expect("set")));
        // The same tree seen as v2 (a root with cgroup.controllers): no v1 hierarchy.
        std::fs::write(d.path().join("sys/fs/cgroup/cgroup.controllers"), "cpuset memory\n").expect("write");
        assert!(v1_hierarchies(&sys).expect("read").is_empty());
        assert_eq!(v1_split(&sys, mem), None);
        assert_eq!(cpus_file(&sys, mem), "cpuset.cpus.effective");
        assert_eq!(folder("cpuset").as_deref(), Some(mem));
    }
}
