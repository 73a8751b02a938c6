//! How many CPUs the batch system gave a job, from the environment it
//! starts the job with. A pure function of the variables (and of the job
//! ad file HTCondor names in one of them), so that every batch system's
//! convention is tested without that batch system.
//!
//! | system | read | meaning |
//! |---|---|---|
//! | Slurm | `SLURM_CPUS_PER_TASK` | `--cpus-per-task` (set only when given) |
//! | HTCondor | `Cpus` in the file `_CONDOR_MACHINE_AD` names | the slot's CPUs |
//! | LSF | this host's count in `LSB_MCPU_HOSTS` (`host n host n …`), else `LSB_DJOB_NUMPROC` | slots on this host / of the job |
//! | PBS Pro | `NCPUS` | `ncpus` of the job's chunk on this host |
//! | Torque | `PBS_NUM_PPN` | processors per node |
//!
//! [`job_cpus`] gathers them for the calling process (its variables, the
//! machine ad, this host's name, its affinity).

use std::path::Path;

use crate::act;
use crate::sys::{kernel, SysRoot};
use crate::topo::Topology;

/// The CPU count and the variable it came from, or `None` when no batch
/// system's variable says it. `var` reads a variable, `file` a file's text
/// (HTCondor's machine ad), `host` is this host's name (LSF lists hosts).
/// A variable that is set but not a positive number is skipped.
pub fn cpus_from_env(
    var: &dyn Fn(&str) -> Option<String>,
    file: &dyn Fn(&str) -> Option<String>,
    host: Option<&str>,
) -> Option<(u32, String)> {
    let num = |v: &str| v.trim().parse::<u32>().ok().filter(|n| *n > 0);
    if let Some(n) = var("SLURM_CPUS_PER_TASK").as_deref().and_then(num) {
        return Some((n, "SLURM_CPUS_PER_TASK".into()));
    }
    if let Some(path) = var("_CONDOR_MACHINE_AD") {
        let n = file(&path).and_then(|ad| {
            ad.lines().find_map(|l| {
                let (k, v) = l.split_once('=')?;
                (k.trim() == "Cpus").then(|| num(v)).flatten()
            })
        });
        if let Some(n) = n {
            return Some((n, format!("Cpus in _CONDOR_MACHINE_AD ({path})")));
        }
    }
    if let (Some(hosts), Some(me)) = (var("LSB_MCPU_HOSTS"), host) {
        let words: Vec<&str> = hosts.split_whitespace().collect();
        let short = |h: &str| h.split('.').next().unwrap_or(h).to_string();
        let n = words.chunks(2).find(|c| c.len() == 2 && short(c[0]) == short(me)).and_then(|c| num(c[1]));
        if let Some(n) = n {
            return Some((n, format!("LSB_MCPU_HOSTS (host {me})")));
        }
    }
    for name in ["LSB_DJOB_NUMPROC", "NCPUS", "PBS_NUM_PPN"] {
        if let Some(n) = var(name).as_deref().and_then(num) {
            return Some((n, name.into()));
        }
    }
    None
}

/// The CPUs a job started by this process needs, and where the number came
/// from: the batch system's count in this process's environment
/// ([`cpus_from_env`]; HTCondor's machine ad is read by [`crate::files::read_named`]'s
/// checks, this host's name from `/proc/sys/kernel/hostname`), else the
/// CPUs this process may use when fewer than those of `topo`'s nodes,
/// else 1.
pub fn job_cpus(topo: &Topology) -> (u32, String) {
    let host = kernel::hostname(&SysRoot::live());
    let var = |k: &str| std::env::var(k).ok();
    // A file the batch system names (HTCondor's machine ad): the one
    // reader of named files, regular and bounded.
    let file = |p: &str| crate::files::read_named_text(Path::new(p)).ok();
    if let Some(found) = cpus_from_env(&var, &file, host.as_deref()) {
        return found;
    }
    if let Ok(mine) = act::get_affinity(act::Pid::SELF) {
        let mine = mine.intersection(&topo.allowed.cpus);
        if !mine.is_empty() && mine != topo.cpus_of_nodes(&topo.node_ids()) {
            return (mine.len() as u32, format!("the CPUs this job may use ({})", mine.to_list()));
        }
    }
    (1, "no batch system's count: 1".into())
}

/// The memory one Slurm task asked for, bytes, from its job's variables:
/// `SLURM_MEM_PER_CPU` (MiB, `--mem-per-cpu`) times its CPUs, else
/// `SLURM_MEM_PER_NODE` (MiB, `--mem`) shared by the step's tasks on this
/// node. `None` when the job asked for no memory (or `--mem=0`, all of it).
pub fn slurm_task_mem(var: &dyn Fn(&str) -> Option<String>, cpus_per_task: u32, tasks_here: u32) -> Option<u64> {
    let mib = |name: &str| var(name).and_then(|v| v.trim().parse::<u64>().ok()).filter(|m| *m > 0);
    if let Some(m) = mib("SLURM_MEM_PER_CPU") {
        return m.checked_mul(u64::from(cpus_per_task.max(1)))?.checked_mul(1 << 20);
    }
    mib("SLURM_MEM_PER_NODE").and_then(|m| m.checked_mul(1 << 20)).map(|b| b / u64::from(tasks_here.max(1)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn from(vars: &[(&str, &str)], files: &[(&str, &str)], host: Option<&str>) -> Option<(u32, String)> {
        let v: BTreeMap<String, String> = vars.iter().map(|(k, x)| (k.to_string(), x.to_string())).collect();
        let f: BTreeMap<String, String> = files.iter().map(|(k, x)| (k.to_string(), x.to_string())).collect();
        cpus_from_env(&|k| v.get(k).cloned(), &|p| f.get(p).cloned(), host)
    }

    #[test]
    fn each_batch_systems_convention() {
        assert_eq!(from(&[], &[], None), None);
        assert_eq!(from(&[("SLURM_CPUS_PER_TASK", "4")], &[], None), Some((4, "SLURM_CPUS_PER_TASK".into())));
        let ad = "Name = \"slot1@wn\"\nCpus = 8\nMemory = 16000\n";
        assert_eq!(
            from(&[("_CONDOR_MACHINE_AD", "/scratch/.machine.ad")], &[("/scratch/.machine.ad", ad)], None),
            Some((8, "Cpus in _CONDOR_MACHINE_AD (/scratch/.machine.ad)".into()))
        );
        let lsf = [("LSB_MCPU_HOSTS", "wn01 4 wn02.farm 2"), ("LSB_DJOB_NUMPROC", "6")];
        assert_eq!(from(&lsf, &[], Some("wn02")).map(|x| x.0), Some(2));
        assert_eq!(from(&lsf, &[], Some("wn01.farm")).map(|x| x.0), Some(4));
        assert_eq!(from(&lsf, &[], Some("other")), Some((6, "LSB_DJOB_NUMPROC".into())));
        assert_eq!(from(&[("NCPUS", "12")], &[], None), Some((12, "NCPUS".into())));
        assert_eq!(from(&[("PBS_NUM_PPN", "3")], &[], None), Some((3, "PBS_NUM_PPN".into())));
        // Set but not a positive count: the next convention.
        assert_eq!(
            from(&[("SLURM_CPUS_PER_TASK", "0"), ("NCPUS", "x"), ("PBS_NUM_PPN", "2")], &[], None).unwrap().0,
            2
        );
        // A machine ad that cannot be read or has no Cpus.
        assert_eq!(from(&[("_CONDOR_MACHINE_AD", "/nope")], &[], None), None);
    }

    #[test]
    fn slurm_memory_per_task() {
        let v = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, x)| x.to_string())
        };
        assert_eq!(slurm_task_mem(&v(&[]), 2, 1), None);
        assert_eq!(slurm_task_mem(&v(&[("SLURM_MEM_PER_CPU", "512")]), 4, 2), Some(2 << 30));
        assert_eq!(slurm_task_mem(&v(&[("SLURM_MEM_PER_NODE", "4096")]), 1, 4), Some(1 << 30));
        assert_eq!(slurm_task_mem(&v(&[("SLURM_MEM_PER_NODE", "0")]), 1, 4), None);
        assert_eq!(
            slurm_task_mem(&v(&[("SLURM_MEM_PER_CPU", "x"), ("SLURM_MEM_PER_NODE", "100")]), 1, 0),
            Some(100 << 20)
        );
    }
}
