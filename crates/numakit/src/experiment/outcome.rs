//! Building one step's outcome record ([`StepOutcome`]) from what its
//! writer measured: pure functions, so the Slurm plugin and the job
//! wrappers fill the same fields the same way.
//!
//! - Exit: a step's tasks end with wait statuses ([`step_status`]). A
//!   signal wins: if any task was killed by one, the record has the
//!   signal of the first such task (in local task id order) and no exit
//!   status; otherwise the highest exit status of the step's tasks on
//!   this host (0 only when all exited 0), as Slurm's `ExitCode` takes
//!   the highest.
//! - CPU efficiency ([`efficiency`]): (user + system CPU time) / (wall
//!   time × the CPUs the step had on this host); 1 is every CPU busy for
//!   the whole step.

use super::design::Assignment;
use super::ids::JobIds;
use super::record::{Hardware, Numa, Placement, StepOutcome, SCHEMA};
use crate::stats::cgroup::JobReport;

/// What the writer measured of a step on its host.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Measured {
    /// Start, seconds since the epoch.
    pub start_unix: f64,
    /// End, seconds since the epoch.
    pub end_unix: f64,
    /// User and system CPU time, seconds, and where they come from
    /// (`cpu.stat`, `rusage`).
    pub cpu: Option<(f64, f64, &'static str)>,
    /// The CPUs the step had on this host.
    pub cpus: Option<u32>,
    /// Peak memory, bytes.
    pub peak_memory_bytes: Option<u64>,
    /// Exit status and signal ([`step_status`]).
    pub status: (Option<i32>, Option<i32>),
}

/// The step's exit status and signal from its tasks' wait statuses (as
/// `waitpid` gives them), in local task id order: see the module's text.
/// `(None, None)` when no task's end was seen.
pub fn step_status(waits: &[i32]) -> (Option<i32>, Option<i32>) {
    if let Some(sig) = waits.iter().map(|w| w & 0x7f).find(|s| *s != 0 && *s != 0x7f) {
        return (None, Some(sig));
    }
    (waits.iter().map(|w| (w >> 8) & 0xff).max(), None)
}

/// (user + system) / (wall × cpus); `None` without a positive wall time
/// or CPU count.
pub fn efficiency(user_s: f64, system_s: f64, wall_s: f64, cpus: u32) -> Option<f64> {
    (wall_s > 0.0 && cpus > 0).then(|| (user_s + system_s) / (wall_s * f64::from(cpus)))
}

impl Numa {
    /// The record's NUMA part of a step's cgroup report (its last sample)
    /// and its counters' growth over the step.
    pub fn from_report(r: &JobReport, delta: Option<&[(String, u64)]>) -> Numa {
        Numa {
            locality: r.locality,
            node_bytes: r.nodes.iter().map(|n| (n.id, n.bytes)).collect(),
            counters_delta: delta.map(<[_]>::to_vec).unwrap_or_default(),
        }
    }
}

/// What the record says of the step itself.
#[derive(Debug, Clone, PartialEq)]
pub struct Step<'a> {
    /// The step (`0`, `batch`; `job` for a wrapper's whole job).
    pub step: &'a str,
    /// This host's short name.
    pub host: &'a str,
    /// What it was given.
    pub placement: Placement,
    /// What was measured.
    pub measured: Measured,
    /// Its NUMA report, where its cgroup could be read.
    pub numa: Option<Numa>,
}

impl StepOutcome {
    /// The record of `step` of the job `ids`, which ran with `assignment`
    /// on a host of `hardware`.
    pub fn new(ids: &JobIds, assignment: &Assignment, step: Step<'_>, hardware: Hardware) -> StepOutcome {
        let m = &step.measured;
        let wall_s = (m.end_unix - m.start_unix).max(0.0);
        let (user, system, source) = match m.cpu {
            Some((u, s, src)) => (Some(u), Some(s), Some(src.to_string())),
            None => (None, None, None),
        };
        let cpu_efficiency = match (user, system, m.cpus) {
            (Some(u), Some(s), Some(c)) => efficiency(u, s, wall_s, c),
            _ => None,
        };
        StepOutcome {
            schema: SCHEMA.into(),
            cluster: ids.cluster.clone().unwrap_or_default(),
            job: ids.job.clone(),
            step: step.step.to_string(),
            array_job: ids.array_job.clone(),
            array_task: ids.array_task,
            host: step.host.to_string(),
            user: ids.user.clone(),
            job_name: ids.job_name.clone(),
            partition: ids.partition.clone(),
            account: ids.account.clone(),
            batch_system: ids.batch_system.clone(),
            experiment: assignment.experiment.clone(),
            unit: assignment.unit,
            period: assignment.period,
            arm: assignment.arm.clone(),
            arm_source: assignment.source,
            arms: assignment.arms.clone(),
            class: assignment.class.clone(),
            placement: step.placement,
            start_unix: m.start_unix,
            end_unix: m.end_unix,
            wall_s,
            cpu_user_s: user,
            cpu_system_s: system,
            cpu_source: source,
            cpus: m.cpus,
            cpu_efficiency,
            peak_memory_bytes: m.peak_memory_bytes,
            exit_status: m.status.0,
            exit_signal: m.status.1,
            numa: step.numa,
            numakit_version: env!("CARGO_PKG_VERSION").into(),
            hardware,
        }
    }

    /// The record as its one JSON line (no newline).
    pub fn to_line(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::JobMode;
    use crate::experiment::record::{ArmSource, Unit};

    #[test]
    fn exit_statuses_and_signals() {
        assert_eq!(step_status(&[]), (None, None));
        assert_eq!(step_status(&[0, 0]), (Some(0), None));
        // exit 3 and exit 1: the highest.
        assert_eq!(step_status(&[3 << 8, 1 << 8, 0]), (Some(3), None));
        // A task killed by SIGTERM (15) after one that exited 2: the signal.
        assert_eq!(step_status(&[2 << 8, 15, 9 | 0x80]), (None, Some(15)));
        // A core dump's flag (0x80) does not hide the signal.
        assert_eq!(step_status(&[11 | 0x80]), (None, Some(11)));
        // 0x7f is a stopped task, not a signal death.
        assert_eq!(step_status(&[(19 << 8) | 0x7f, 0]), (Some(19), None));
    }

    #[test]
    fn efficiency_of_the_cpus_the_step_had() {
        assert_eq!(efficiency(3.0, 1.0, 2.0, 2), Some(1.0));
        assert_eq!(efficiency(0.5, 0.0, 2.0, 1), Some(0.25));
        assert_eq!(efficiency(1.0, 0.0, 0.0, 1), None);
        assert_eq!(efficiency(1.0, 0.0, 1.0, 0), None);
    }

    #[test]
    fn a_record_from_its_parts() {
        let ids = JobIds {
            batch_system: "slurm".into(),
            cluster: Some("farm".into()),
            job: "43".into(),
            array_job: Some("40".into()),
            array_task: Some(3),
            user: Some("alice".into()),
            ..JobIds::default()
        };
        let a = Assignment {
            experiment: Some("q".into()),
            unit: Some(Unit::Job),
            period: None,
            arm: "auto".into(),
            source: ArmSource::Assigned,
            arms: Some("auto:1,none:1".into()),
            mode: JobMode::Auto,
            daemon: None,
            class: None,
        };
        let hw = Hardware {
            key: "k".into(),
            packages: 1,
            nodes: 1,
            cores: 2,
            cpus: 2,
            node_mem_bytes: vec![1 << 30],
            cpu_model: None,
        };
        let step = Step {
            step: "batch",
            host: "wn1",
            placement: Placement { mode: "auto".into(), cpus: Some("0-1".into()), memory: Some("bind 0".into()) },
            measured: Measured {
                start_unix: 100.0,
                end_unix: 104.0,
                cpu: Some((5.0, 1.0, "cpu.stat")),
                cpus: Some(2),
                peak_memory_bytes: Some(4096),
                status: (Some(0), None),
            },
            numa: None,
        };
        let r = StepOutcome::new(&ids, &a, step, hw);
        assert_eq!((r.wall_s, r.cpu_efficiency, r.cpu_source.as_deref()), (4.0, Some(0.75), Some("cpu.stat")));
        assert_eq!(
            (r.cluster.as_str(), r.job.as_str(), r.step.as_str(), r.array_task),
            ("farm", "43", "batch", Some(3))
        );
        assert_eq!((r.arm.as_str(), r.arm_source, r.unit), ("auto", ArmSource::Assigned, Some(Unit::Job)));
        assert_eq!(r.arms.as_deref(), Some("auto:1,none:1"));
        let back: StepOutcome = serde_json::from_str(&r.to_line()).unwrap();
        assert_eq!(back, r);
        assert!(!r.to_line().contains('\n'));
    }
}
