//! What a cgroup (a batch job's step) used: CPU time from `cpu.stat`
//! (cgroup v2: `usage_usec`, `user_usec`, `system_usec`, counted by the
//! kernel for every cgroup whether or not the cpu controller is enabled)
//! and its peak memory (`memory.peak`, v2 since Linux 5.19; the v1 memory
//! controller's `memory.max_usage_in_bytes`). Read through [`SysRoot`];
//! a cgroup that is gone (its `cgroup.procs` missing) reads as `None`, so
//! a caller keeps its last reading instead.

use serde::Serialize;

use super::cgroup::CgroupDir;
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
    Ok(CpuTime { usage_usec: get("usage_usec")?, user_usec: get("user_usec")?, system_usec: get("system_usec")? })
}

impl CgroupUsage {
    /// Reads `dir`'s `cpu.stat` and peak memory; `Ok(None)` when the
    /// cgroup is gone.
    pub fn read(sys: &SysRoot, dir: &CgroupDir) -> Result<Option<CgroupUsage>, SysError> {
        if sys.read(format!("{}/cgroup.procs", dir.folder))?.is_none() {
            return Ok(None);
        }
        let rel = format!("{}/cpu.stat", dir.folder);
        let cpu = match sys.read(&rel)? {
            Some(t) => Some(parse_cpu_stat(&t).map_err(|p| sys.invalid(&rel, p))?),
            None => None,
        };
        let mut peak_bytes = None;
        for name in ["memory.peak", "memory.max_usage_in_bytes"] {
            let rel = format!("{}/{name}", dir.folder);
            if let Some(v) = sys.read_u64(&rel)? {
                peak_bytes = Some(v);
                break;
            }
        }
        Ok(Some(CgroupUsage { cpu, peak_bytes }))
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
            Ok(CpuTime { usage_usec: 2_250_012, user_usec: 2_000_010, system_usec: 250_002 })
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
        assert_eq!(u.cpu, Some(CpuTime { usage_usec: 30, user_usec: 20, system_usec: 10 }));
        assert_eq!(u.peak_bytes, Some(1 << 20));
        // An older kernel: no memory.peak; v1: max_usage_in_bytes, no cpu.stat.
        std::fs::remove_file(d.path().join(&dir.folder).join("memory.peak")).unwrap();
        assert_eq!(CgroupUsage::read(&sys, &dir).unwrap().unwrap().peak_bytes, None);
        std::fs::remove_file(d.path().join(&dir.folder).join("cpu.stat")).unwrap();
        std::fs::write(d.path().join(&dir.folder).join("memory.max_usage_in_bytes"), "4096\n").unwrap();
        assert_eq!(CgroupUsage::read(&sys, &dir).unwrap(), Some(CgroupUsage { cpu: None, peak_bytes: Some(4096) }));
        // Garbage is an error naming the file; a removed cgroup is None.
        std::fs::write(d.path().join(&dir.folder).join("cpu.stat"), "usage_usec lots\n").unwrap();
        let e = CgroupUsage::read(&sys, &dir).unwrap_err().to_string();
        assert!(e.contains("cpu.stat"), "{e}");
        std::fs::remove_dir_all(d.path().join(&dir.folder)).unwrap();
        assert_eq!(CgroupUsage::read(&sys, &dir).unwrap(), None);
    }
}
