//! A job's names as its batch system gives them (the outcome record's
//! ids), from the job's environment: pure functions of the variables (and
//! of the job ad file HTCondor names in one), so every batch system's
//! convention is tested without it.
//!
//! | record | Slurm | HTCondor (job ad) | LSF | PBS Pro / Torque |
//! |---|---|---|---|---|
//! | job | `SLURM_JOB_ID` | `ClusterId.ProcId` | `LSB_JOBID`, `[LSB_JOBINDEX]` for an array element | `PBS_JOBID` |
//! | array job, task | `SLURM_ARRAY_JOB_ID`, `SLURM_ARRAY_TASK_ID` | `ClusterId`, `ProcId` | `LSB_JOBID`, `LSB_JOBINDEX` (not 0) | `PBS_ARRAY_ID`, `PBS_ARRAY_INDEX` / `PBS_ARRAYID` |
//! | user | `SLURM_JOB_USER` | `Owner` | `LSFUSERNAME`, `USER` | `USER`, `PBS_O_LOGNAME` |
//! | job name | `SLURM_JOB_NAME` | `JobBatchName` | `LSB_JOBNAME` | `PBS_JOBNAME` |
//! | partition | `SLURM_JOB_PARTITION` | — | `LSB_QUEUE` | `PBS_QUEUE` |
//! | account | `SLURM_JOB_ACCOUNT` | `AcctGroup` | `LSB_PROJECT_NAME` | `PBS_ACCOUNT` |
//! | cluster | `SLURM_CLUSTER_NAME` | — | — | — |

/// A job's names.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct JobIds {
    /// `slurm`, `htcondor`, `lsf` or `pbs`.
    pub batch_system: String,
    /// The cluster's name, where the batch system says it.
    pub cluster: Option<String>,
    /// The job id as the batch system writes it.
    pub job: String,
    /// The array's job id, for an array element.
    pub array_job: Option<String>,
    /// The array element's index.
    pub array_task: Option<u32>,
    /// The job's user.
    pub user: Option<String>,
    /// The job's name.
    pub job_name: Option<String>,
    /// Its partition or queue.
    pub partition: Option<String>,
    /// Its account (project, accounting group).
    pub account: Option<String>,
}

/// A variable's value, `None` when unset or empty.
type Var<'a> = &'a dyn Fn(&str) -> Option<String>;

fn get(var: Var<'_>, name: &str) -> Option<String> {
    var(name).map(|v| v.trim().to_string()).filter(|v| !v.is_empty())
}

fn index(v: Option<String>) -> Option<u32> {
    v.and_then(|v| v.parse().ok())
}

/// A Slurm job's names from its environment (`None` without
/// `SLURM_JOB_ID`).
pub fn slurm(var: Var<'_>) -> Option<JobIds> {
    let job = get(var, "SLURM_JOB_ID")?;
    let array_job = get(var, "SLURM_ARRAY_JOB_ID");
    Some(JobIds {
        batch_system: "slurm".into(),
        cluster: get(var, "SLURM_CLUSTER_NAME"),
        array_task: array_job.as_ref().and_then(|_| index(get(var, "SLURM_ARRAY_TASK_ID"))),
        array_job,
        job,
        user: get(var, "SLURM_JOB_USER"),
        job_name: get(var, "SLURM_JOB_NAME"),
        partition: get(var, "SLURM_JOB_PARTITION"),
        account: get(var, "SLURM_JOB_ACCOUNT"),
    })
}

/// `NAME = value` of an HTCondor ClassAd (its quotes taken off).
fn ad_value(ad: &str, name: &str) -> Option<String> {
    ad.lines().find_map(|l| {
        let (k, v) = l.split_once('=')?;
        (k.trim() == name).then(|| v.trim().trim_matches('"').to_string()).filter(|v| !v.is_empty())
    })
}

/// An HTCondor job's names from the job ad `_CONDOR_JOB_AD` names.
pub fn htcondor(var: Var<'_>, file: &dyn Fn(&str) -> Option<String>) -> Option<JobIds> {
    let ad = file(&get(var, "_CONDOR_JOB_AD")?)?;
    let cluster_id = ad_value(&ad, "ClusterId")?;
    let proc_id = ad_value(&ad, "ProcId").unwrap_or_else(|| "0".into());
    Some(JobIds {
        batch_system: "htcondor".into(),
        cluster: None,
        job: format!("{cluster_id}.{proc_id}"),
        array_task: proc_id.parse().ok(),
        array_job: Some(cluster_id),
        user: ad_value(&ad, "Owner"),
        job_name: ad_value(&ad, "JobBatchName"),
        partition: None,
        account: ad_value(&ad, "AcctGroup"),
    })
}

/// An LSF job's names (`None` without `LSB_JOBID`).
pub fn lsf(var: Var<'_>) -> Option<JobIds> {
    let id = get(var, "LSB_JOBID")?;
    let element = index(get(var, "LSB_JOBINDEX")).filter(|i| *i > 0);
    Some(JobIds {
        batch_system: "lsf".into(),
        cluster: None,
        job: element.map_or_else(|| id.clone(), |i| format!("{id}[{i}]")),
        array_job: element.map(|_| id.clone()),
        array_task: element,
        user: get(var, "LSFUSERNAME").or_else(|| get(var, "USER")),
        job_name: get(var, "LSB_JOBNAME"),
        partition: get(var, "LSB_QUEUE"),
        account: get(var, "LSB_PROJECT_NAME"),
    })
}

/// A PBS Pro or Torque job's names (`None` without `PBS_JOBID`).
pub fn pbs(var: Var<'_>) -> Option<JobIds> {
    let job = get(var, "PBS_JOBID")?;
    let task = index(get(var, "PBS_ARRAY_INDEX").or_else(|| get(var, "PBS_ARRAYID")));
    // PBS Pro names the array (`12[].server`); Torque gives only the
    // element's id (`12[3].server`), whose index taken out names it alike.
    let array_job = task.map(|_| get(var, "PBS_ARRAY_ID").unwrap_or_else(|| array_of(&job)));
    Some(JobIds {
        batch_system: "pbs".into(),
        cluster: None,
        job,
        array_job,
        array_task: task,
        user: get(var, "USER").or_else(|| get(var, "PBS_O_LOGNAME")),
        job_name: get(var, "PBS_JOBNAME"),
        partition: get(var, "PBS_QUEUE"),
        account: get(var, "PBS_ACCOUNT"),
    })
}

/// `12[].srv` for `12[3].srv`: an array element's id without its index.
fn array_of(job: &str) -> String {
    match job.find('[').and_then(|o| Some((o, o + job[o..].find(']')?))) {
        Some((open, close)) => format!("{}[]{}", &job[..open], &job[close + 1..]),
        None => job.to_string(),
    }
}

/// The names of the job this process runs in, trying Slurm, HTCondor, LSF
/// and PBS in turn; `None` outside any of them.
pub fn from_env(var: Var<'_>, file: &dyn Fn(&str) -> Option<String>) -> Option<JobIds> {
    slurm(var).or_else(|| htcondor(var, file)).or_else(|| lsf(var)).or_else(|| pbs(var))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn ids(vars: &[(&str, &str)], files: &[(&str, &str)]) -> Option<JobIds> {
        let v = env(vars);
        let f = env(files);
        from_env(&|k| v.get(k).cloned(), &|p| f.get(p).cloned())
    }

    #[test]
    fn slurm_array_task() {
        let got = ids(
            &[
                ("SLURM_JOB_ID", "43"),
                ("SLURM_ARRAY_JOB_ID", "40"),
                ("SLURM_ARRAY_TASK_ID", "3"),
                ("SLURM_JOB_USER", "alice"),
                ("SLURM_JOB_NAME", "reco"),
                ("SLURM_JOB_PARTITION", "batch"),
                ("SLURM_JOB_ACCOUNT", "physics"),
                ("SLURM_CLUSTER_NAME", "farm"),
                ("LSB_JOBID", "ignored"),
            ],
            &[],
        )
        .unwrap();
        assert_eq!(
            got,
            JobIds {
                batch_system: "slurm".into(),
                cluster: Some("farm".into()),
                job: "43".into(),
                array_job: Some("40".into()),
                array_task: Some(3),
                user: Some("alice".into()),
                job_name: Some("reco".into()),
                partition: Some("batch".into()),
                account: Some("physics".into()),
            }
        );
        let plain = ids(&[("SLURM_JOB_ID", "7"), ("SLURM_ARRAY_TASK_ID", "3"), ("SLURM_JOB_ACCOUNT", "")], &[]);
        let plain = plain.unwrap();
        assert_eq!((plain.array_job, plain.array_task, plain.account), (None, None, None));
    }

    #[test]
    fn htcondor_from_its_job_ad() {
        let ad = "ClusterId = 812\nProcId = 4\nOwner = \"bob\"\nJobBatchName = \"sim\"\nAcctGroup = \"cms\"\n";
        let got = ids(&[("_CONDOR_JOB_AD", "/scratch/.job.ad")], &[("/scratch/.job.ad", ad)]).unwrap();
        assert_eq!(got.batch_system, "htcondor");
        assert_eq!((got.job.as_str(), got.array_job.as_deref(), got.array_task), ("812.4", Some("812"), Some(4)));
        assert_eq!(
            (got.user.as_deref(), got.job_name.as_deref(), got.account.as_deref()),
            (Some("bob"), Some("sim"), Some("cms"))
        );
        assert_eq!(ids(&[("_CONDOR_JOB_AD", "/missing")], &[]), None);
        assert_eq!(ids(&[("_CONDOR_JOB_AD", "/a")], &[("/a", "Owner = \"x\"\n")]), None, "no ClusterId");
    }

    #[test]
    fn lsf_and_pbs() {
        let l = ids(&[("LSB_JOBID", "5001"), ("LSB_JOBINDEX", "0"), ("LSB_QUEUE", "normal"), ("USER", "c")], &[]);
        let l = l.unwrap();
        assert_eq!(
            (l.job.as_str(), l.array_task, l.partition.as_deref(), l.user.as_deref()),
            ("5001", None, Some("normal"), Some("c"))
        );
        let e = ids(&[("LSB_JOBID", "5002"), ("LSB_JOBINDEX", "7"), ("LSFUSERNAME", "d"), ("USER", "x")], &[]).unwrap();
        assert_eq!(
            (e.job.as_str(), e.array_job.as_deref(), e.array_task, e.user.as_deref()),
            ("5002[7]", Some("5002"), Some(7), Some("d"))
        );
        let p = ids(
            &[("PBS_JOBID", "12[3].srv"), ("PBS_ARRAY_ID", "12[].srv"), ("PBS_ARRAY_INDEX", "3"), ("PBS_QUEUE", "q")],
            &[],
        )
        .unwrap();
        assert_eq!(
            (p.batch_system.as_str(), p.job.as_str(), p.array_job.as_deref(), p.array_task),
            ("pbs", "12[3].srv", Some("12[].srv"), Some(3))
        );
        let t = ids(&[("PBS_JOBID", "14[2].t"), ("PBS_ARRAYID", "2")], &[]).unwrap();
        assert_eq!((t.array_job.as_deref(), t.array_task), (Some("14[].t"), Some(2)), "Torque");
        let t = ids(&[("PBS_JOBID", "99.torque"), ("PBS_JOBNAME", "fit"), ("PBS_O_LOGNAME", "e")], &[]).unwrap();
        assert_eq!((t.array_task, t.job_name.as_deref(), t.user.as_deref()), (None, Some("fit"), Some("e")));
        assert_eq!(ids(&[("HOME", "/root")], &[]), None);
    }
}
