//! What a cgroup (a batch job's step) used: CPU time from `cpu.stat`
//! (cgroup v2: `usage_usec`, `user_usec`, `system_usec`, counted by the
//! kernel for every cgroup whether or not the cpu controller is enabled)
//! and its peak memory (`memory.peak`, v2 since Linux 5.19). On cgroup v1
//! each comes from its controller's hierarchy, the same path as the
//! cgroup's ([`cgroup::controller_folder`]): `cpuacct.usage_user` and
//! `cpuacct.usage_sys` (nanoseconds; `cpuacct.usage` their sum where
//! present), and the memory controller's `memory.max_usage_in_bytes`.
//! Read through [`SysRoot`]; a cgroup that is gone (its `cgroup.procs`
//! missing) reads as `None`, so a caller keeps its last reading instead.

use serde::Serialize;

use super::cgroup::CgroupDir;
use crate::procs::cgroup;
use crate::sys::{parse_u64, SysError, SysRoot};

/// CPU time of a cgroup's processes, microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct CpuTime {
    /// `usage_usec`: user and system together.
    pub usage_usec: u64,
    /// `user_usec`.
    pub user_usec: u64,
    /// `system_usec`.
    pub system_usec: u64,
    /// Where they were read: `cpu.stat`, or v1's `cpuacct` (the outcome
    /// record's `cpu_source`).
    pub source: &'static str,
}

/// A cgroup's use at one reading.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct CgroupUsage {
    /// CPU time (`None`: no `cpu.stat`, as in a v1 memory hierarchy).
    pub cpu: Option<CpuTime>,
    /// Peak memory, bytes (`None`: the kernel has no such file).
    pub peak_bytes: Option<u64>,
}

/// Parses `cpu.stat` (`key value` lines); the three times must be there
/// as numbers, other lines are not looked at.
pub fn parse_cpu_stat(text: &str) -> Result<CpuTime, String> {
    let get = |name: &str| -> Result<u64, String> {
        let line = text.lines().find(|l| l.split_whitespace().next() == Some(name));
        let line = line.ok_or_else(|| format!("no {name} line"))?;
        let mut w = line.split_whitespace().skip(1);
        match (w.next().and_then(parse_u64), w.next()) {
            (Some(v), None) => Ok(v),
            _ => Err(format!("{}: not {name} and a number", crate::text::quote(line))),
        }
    };
    Ok(CpuTime {
        usage_usec: get("usage_usec")?,
        user_usec: get("user_usec")?,
        system_usec: get("system_usec")?,
        source: "cpu.stat",
    })
}

impl CgroupUsage {
    /// Reads `dir`'s `cpu.stat` and peak memory; `Ok(None)` when the
    /// cgroup is gone.
    pub fn read(sys: &SysRoot, dir: &CgroupDir) -> Result<Option<CgroupUsage>, SysError> {
        if sys.read(format!("{}/cgroup.procs", dir.folder))?.is_none() {
            return Ok(None);
        }
        if cgroup::v1_split(sys, &dir.folder).is_some() {
            return Ok(Some(Self::read_v1(sys, &dir.folder)?));
        }
        let rel = format!("{}/cpu.stat", dir.folder);
        let cpu = match sys.read(&rel)? {
            Some(t) => Some(parse_cpu_stat(&t).map_err(|p| sys.invalid(&rel, p))?),
            None => None,
        };
        let peak_bytes = sys.read_u64(format!("{}/memory.peak", dir.folder))?;
        Ok(Some(CgroupUsage { cpu, peak_bytes }))
    }

    /// A cgroup v1 folder's use, each figure from its controller's hierarchy.
    fn read_v1(sys: &SysRoot, folder: &str) -> Result<CgroupUsage, SysError> {
        let mut cpu = None;
        if let Some(acct) = cgroup::controller_folder(sys, folder, "cpuacct")? {
            let ns = |name: &str| sys.read_u64(format!("{acct}/cpuacct.{name}"));
            if let (Some(user), Some(system)) = (ns("usage_user")?, ns("usage_sys")?) {
                let usage = ns("usage")?.unwrap_or(user.saturating_add(system));
                let (usage_usec, user_usec, system_usec) = (usage / 1000, user / 1000, system / 1000);
                cpu = Some(CpuTime { usage_usec, user_usec, system_usec, source: "cpuacct" });
            }
        }
        let peak_bytes = match cgroup::controller_folder(sys, folder, "memory")? {
            Some(mem) => sys.read_u64(format!("{mem}/memory.max_usage_in_bytes"))?,
            None => None,
        };
        Ok(CgroupUsage { cpu, peak_bytes })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_stat_as_the_kernel_writes_it() {
        let t = "usage_usec 2250012\nuser_usec 2000010\nsystem_usec 250002\nnr_periods 0\nnr_throttled 0\n\
                 throttled_usec 0\nnr_bursts 0\nburst_usec 0\n";
        assert_eq!(
            parse_cpu_stat(t),
            Ok(CpuTime { usage_usec: 2_250_012, user_usec: 2_000_010, system_usec: 250_002, source: "cpu.stat" })
        );
        assert!(parse_cpu_stat("usage_usec 1\nuser_usec 1\n").unwrap_err().contains("no system_usec"));
        let e = parse_cpu_stat("usage_usec 1\nuser_usec x\nsystem_usec 1\n").unwrap_err();
        assert!(e.contains("user_usec x"), "{e}");
        assert!(parse_cpu_stat("usage_usec 1 2\nuser_usec 1\nsystem_usec 1\n").is_err());
    }

    fn cgroup(root: &std::path::Path, files: &[(&str, &str)]) -> CgroupDir {
        let folder = "sys/fs/cgroup/system.slice/job_4/step_0/user";
        let d = root.join(folder);
        std::fs::create_dir_all(&d).unwrap();
        for (name, text) in files {
            std::fs::write(d.join(name), text).unwrap();
        }
        CgroupDir { path: "/system.slice/job_4/step_0/user".into(), folder: folder.into() }
    }

    #[test]
    fn a_step_cgroup_on_a_fake_root() {
        let d = tempfile::tempdir().unwrap();
        let sys = SysRoot::at(d.path());
        let dir = cgroup(
            d.path(),
            &[
                ("cgroup.procs", "12\n"),
                ("cpu.stat", "usage_usec 30\nuser_usec 20\nsystem_usec 10\n"),
                ("memory.peak", "1048576\n"),
            ],
        );
        let u = CgroupUsage::read(&sys, &dir).unwrap().unwrap();
        assert_eq!(u.cpu, Some(CpuTime { usage_usec: 30, user_usec: 20, system_usec: 10, source: "cpu.stat" }));
        assert_eq!(u.peak_bytes, Some(1 << 20));
        // An older kernel: no memory.peak; a cgroup without cpu.stat.
        std::fs::remove_file(d.path().join(&dir.folder).join("memory.peak")).unwrap();
        assert_eq!(CgroupUsage::read(&sys, &dir).unwrap().unwrap().peak_bytes, None);
        std::fs::remove_file(d.path().join(&dir.folder).join("cpu.stat")).unwrap();
        assert_eq!(CgroupUsage::read(&sys, &dir).unwrap(), Some(CgroupUsage { cpu: None, peak_bytes: None }));
        // Garbage is an error naming the file; a removed cgroup is None.
        std::fs::write(d.path().join(&dir.folder).join("cpu.stat"), "usage_usec lots\n").unwrap();
        let e = CgroupUsage::read(&sys, &dir).unwrap_err().to_string();
        assert!(e.contains("cpu.stat"), "{e}");
        std::fs::remove_dir_all(d.path().join(&dir.folder)).unwrap();
        assert_eq!(CgroupUsage::read(&sys, &dir).unwrap(), None);
    }

    #[test]
    fn a_v1_step_cgroup_has_its_cpu_time_and_peak_memory() {
        // EL8: the step in the memory, cpuset and cpu,cpuacct hierarchies
        // (procs::cgroup's v1 host), found in any of them.
        let d = tempfile::tempdir().unwrap();
        crate::procs::cgroup::tests::v1_host(d.path());
        let sys = SysRoot::at(d.path());
        let want = CgroupUsage {
            cpu: Some(CpuTime { usage_usec: 1_750_000, user_usec: 1_500_000, system_usec: 250_000, source: "cpuacct" }),
            peak_bytes: Some(8 << 20),
        };
        for h in ["memory", "cpuset", "freezer", "cpu,cpuacct"] {
            let dir = CgroupDir {
                path: "/slurm/uid_1000/job_5/step_0".into(),
                folder: format!("sys/fs/cgroup/{h}/slurm/uid_1000/job_5/step_0"),
            };
            assert_eq!(CgroupUsage::read(&sys, &dir).unwrap(), Some(want), "found in {h}");
        }
        // cpuacct.usage, where there, is the total; a kernel without
        // usage_user and usage_sys has no CPU figure; a step without a
        // memory cgroup (no ConstrainRAMSpace) no peak.
        let acct = d.path().join("sys/fs/cgroup/cpu,cpuacct/slurm/uid_1000/job_5/step_0");
        std::fs::write(acct.join("cpuacct.usage"), "1800000000\n").unwrap();
        let dir = CgroupDir {
            path: "/slurm/uid_1000/job_5/step_0".into(),
            folder: "sys/fs/cgroup/freezer/slurm/uid_1000/job_5/step_0".into(),
        };
        assert_eq!(CgroupUsage::read(&sys, &dir).unwrap().unwrap().cpu.map(|c| c.usage_usec), Some(1_800_000));
        std::fs::remove_file(acct.join("cpuacct.usage_sys")).unwrap();
        std::fs::remove_dir_all(d.path().join("sys/fs/cgroup/memory/slurm")).unwrap();
        assert_eq!(CgroupUsage::read(&sys, &dir).unwrap(), Some(CgroupUsage { cpu: None, peak_bytes: None }));
    }
}
