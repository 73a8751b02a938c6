//! One step's outcome: the JSON line a batch job's step leaves on each host
//! it ran on (schema [`SCHEMA`], documented in docs/experiments.md). The
//! Slurm plugin and the job wrappers write it where `report=DIR` writes the
//! step's NUMA report today; `numakit report` reads it.
//!
//! The record is flat where a site filters or groups (ids, arm, times), so
//! that `jq` and `numakit report --by FIELD` reach every field by its name.
//! Fields the writer cannot know are `null`, never guessed: a wrapper
//! outside Slurm has no partition, a kernel without `memory.peak` no peak.
//!
//! Compatibility: readers accept any line whose `schema` starts with
//! `numakit-step-outcome/1`; fields may be added within version 1 (readers
//! ignore fields they do not know), a field that changes meaning or goes
//! away bumps the version.

use serde::{Deserialize, Serialize};

/// The `schema` field of every record.
pub const SCHEMA: &str = "numakit-step-outcome/1";

/// How a step's arm was set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ArmSource {
    /// Assigned by the experiment (per job, per host, or per host and
    /// period): the only records a randomized comparison uses.
    Assigned,
    /// The user asked for a mode (`--numa=MODE`, `NUMAKIT_NUMA`): recorded,
    /// kept out of the randomized comparison.
    Chosen,
    /// No experiment ran (none configured, or stopped by the site): the
    /// site's default mode.
    Default,
    /// A rule of the site's policy decided the class's mode and the job
    /// was not held out (drawn by the keyed hash, as a holdout is): with
    /// [`ArmSource::Holdout`], a randomized comparison within the class.
    Decided,
    /// Held out of a decided rule's mode into its other arm by the keyed
    /// hash (`holdout=`).
    Holdout,
    /// The arm drawn or decided is stopped for the class by a guard: the
    /// job got the control; kept out of every comparison.
    Guarded,
}

impl ArmSource {
    /// The word records write (`assigned`, `holdout`).
    pub fn name(self) -> &'static str {
        match self {
            ArmSource::Assigned => "assigned",
            ArmSource::Chosen => "chosen",
            ArmSource::Default => "default",
            ArmSource::Decided => "decided",
            ArmSource::Holdout => "holdout",
            ArmSource::Guarded => "guarded",
        }
    }

    /// Whether the site's experiment or policy set the arm (drawn, decided,
    /// held out or guarded): such an arm never fails a job, and what the
    /// site set up is the site's to hear of, not the job's.
    pub fn by_site(self) -> bool {
        !matches!(self, ArmSource::Chosen | ArmSource::Default)
    }

    /// Whether the arm was drawn at random (an experiment's, a decided
    /// rule's or its holdout's): the records a randomized comparison uses.
    pub fn randomized(self) -> bool {
        matches!(self, ArmSource::Assigned | ArmSource::Decided | ArmSource::Holdout)
    }
}

/// The unit an experiment randomizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Unit {
    /// Each job draws its arm; all its steps share it.
    Job,
    /// Each host draws its arm; all jobs on it share it.
    Host,
    /// Each host draws an arm per period (switchback).
    HostPeriod,
}

/// The host's hardware shape: results of hosts with different keys are
/// never pooled silently.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hardware {
    /// One string, equal on hosts of the same shape (packages, nodes,
    /// cores, CPUs, memory per node rounded as documented, CPU model):
    /// what `numakit report` groups by.
    pub key: String,
    /// Packages (sockets).
    pub packages: u32,
    /// NUMA nodes with CPUs or memory.
    pub nodes: u32,
    /// Physical cores.
    pub cores: u32,
    /// Logical CPUs.
    pub cpus: u32,
    /// Each node's `MemTotal`, bytes, in node id order.
    pub node_mem_bytes: Vec<u64>,
    /// `/proc/cpuinfo`'s `model name` (first CPU), where there is one.
    pub cpu_model: Option<String>,
}

/// What the step was given.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Placement {
    /// The mode applied (`auto`, `local`, `interleave`, `none`, `nodes:LIST`).
    pub mode: String,
    /// The CPUs its first task ran on after placement (kernel list syntax).
    pub cpus: Option<String>,
    /// Its memory policy (`bind 0`, `interleave 0-1`, `local`, `unchanged`).
    pub memory: Option<String>,
}

/// The step's NUMA behaviour, from its cgroup's report (the fields of
/// `numakit-cgroup-report/1` an outcome analysis needs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Numa {
    /// Share of the tasks' own memory on the nodes their threads ran on
    /// (the report's `locality`), last sample.
    pub locality: Option<f64>,
    /// Bytes of the tasks' memory per node, `[node, bytes]`, last sample.
    pub node_bytes: Vec<(u32, u64)>,
    /// The cgroup's NUMA counters' growth over the step (`memory.stat`:
    /// `numa_pages_migrated`, `numa_hint_faults`, ...), by name.
    pub counters_delta: Vec<(String, u64)>,
}

/// One step's outcome on one host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepOutcome {
    /// [`SCHEMA`].
    pub schema: String,
    /// The cluster's name (Slurm's `ClusterName`, the wrappers' setting).
    pub cluster: String,
    /// The job id as the batch system writes it (Slurm: the job's own id,
    /// also for an array task).
    pub job: String,
    /// The step (`0`, `1`, `batch`, `extern`, `interactive`; `job` for a
    /// wrapper's whole job).
    pub step: String,
    /// The array's job id, for an array task.
    pub array_job: Option<String>,
    /// The array task id, for an array task.
    pub array_task: Option<u32>,
    /// This host's name.
    pub host: String,
    /// The job's user.
    pub user: Option<String>,
    /// The job's name.
    pub job_name: Option<String>,
    /// The job's partition (queue).
    pub partition: Option<String>,
    /// The job's account.
    pub account: Option<String>,
    /// The batch system (`slurm`, `htcondor`, `lsf`, `pbs`, `none`).
    pub batch_system: String,
    /// The experiment's name, `None` when none ran.
    pub experiment: Option<String>,
    /// What the experiment randomizes.
    pub unit: Option<Unit>,
    /// With [`Unit::HostPeriod`]: the period's index (start time in
    /// seconds since the epoch divided by the period's length).
    pub period: Option<u64>,
    /// The arm: a mode name, or a host arm's label.
    pub arm: String,
    /// How [`StepOutcome::arm`] was set.
    pub arm_source: ArmSource,
    /// The experiment's arms with their configured shares, as the site
    /// wrote them (`auto:50,none:50`), so that `numakit report` checks the
    /// assignment against them. Added within version 1: `None` in older
    /// records and where no experiment ran.
    #[serde(default)]
    pub arms: Option<String>,
    /// The job's class: the name of the policy rule that matched it
    /// (`policy=`). Added within version 1: `None` in older records and
    /// where no policy rule matched.
    #[serde(default)]
    pub class: Option<String>,
    /// What the step was given.
    pub placement: Placement,
    /// Start, seconds since the epoch.
    pub start_unix: f64,
    /// End, seconds since the epoch.
    pub end_unix: f64,
    /// Wall time, seconds (end - start).
    pub wall_s: f64,
    /// User CPU time of the step's cgroup (`cpu.stat` `user_usec`), seconds.
    pub cpu_user_s: Option<f64>,
    /// System CPU time of the step's cgroup (`cpu.stat` `system_usec`), seconds.
    pub cpu_system_s: Option<f64>,
    /// Where the CPU times come from: `cpu.stat` (the step's cgroup), or
    /// `rusage` (the step's processes as their parent reaped them, where
    /// the step has no cgroup of its own); `None` with no CPU times.
    /// Added within version 1: older lines read as `None`.
    #[serde(default)]
    pub cpu_source: Option<String>,
    /// CPUs the step had on this host.
    pub cpus: Option<u32>,
    /// (user + system) / (wall × cpus).
    pub cpu_efficiency: Option<f64>,
    /// Peak memory of the step's cgroup (`memory.peak`), bytes.
    pub peak_memory_bytes: Option<u64>,
    /// Exit status, when the step exited.
    pub exit_status: Option<i32>,
    /// The signal that ended it, when one did.
    pub exit_signal: Option<i32>,
    /// The step's NUMA behaviour, when its cgroup could be read.
    pub numa: Option<Numa>,
    /// The numakit version that wrote the record.
    pub numakit_version: String,
    /// The host's hardware shape.
    pub hardware: Hardware,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_names_its_enums_in_kebab_case() {
        let r = StepOutcome {
            schema: SCHEMA.into(),
            cluster: "farm".into(),
            job: "42".into(),
            step: "batch".into(),
            array_job: Some("40".into()),
            array_task: Some(2),
            host: "wn1".into(),
            user: Some("alice".into()),
            job_name: Some("reco".into()),
            partition: None,
            account: None,
            batch_system: "slurm".into(),
            experiment: Some("numa-q4".into()),
            unit: Some(Unit::HostPeriod),
            period: Some(493_000),
            arm: "auto".into(),
            arm_source: ArmSource::Assigned,
            arms: Some("auto:50,none:50".into()),
            class: Some("reco".into()),
            placement: Placement { mode: "auto".into(), cpus: Some("0-3".into()), memory: Some("bind 0".into()) },
            start_unix: 1.0,
            end_unix: 3.5,
            wall_s: 2.5,
            cpu_user_s: Some(4.0),
            cpu_system_s: Some(0.5),
            cpu_source: Some("cpu.stat".into()),
            cpus: Some(2),
            cpu_efficiency: Some(0.9),
            peak_memory_bytes: Some(1 << 20),
            exit_status: Some(0),
            exit_signal: None,
            numa: Some(Numa {
                locality: Some(0.99),
                node_bytes: vec![(0, 4096)],
                counters_delta: vec![("numa_pages_migrated".into(), 3)],
            }),
            numakit_version: "0.1.0".into(),
            hardware: Hardware {
                key: "k".into(),
                packages: 1,
                nodes: 1,
                cores: 2,
                cpus: 2,
                node_mem_bytes: vec![1 << 30],
                cpu_model: None,
            },
        };
        let line = serde_json::to_string(&r).expect("json");
        assert!(line.contains("\"unit\":\"host-period\"") && line.contains("\"arm_source\":\"assigned\""), "{line}");
        let back: StepOutcome = serde_json::from_str(&line).expect("parse");
        assert_eq!(back, r);
        // A line written before cpu_source existed still reads.
        let old = line.replace(",\"cpu_source\":\"cpu.stat\"", "");
        assert_ne!(old, line);
        let back: StepOutcome = serde_json::from_str(&old).expect("parse an older line");
        assert_eq!(back.cpu_source, None);
        // a record written before `arms` was added still reads
        let old = line.replace("\"arms\":\"auto:50,none:50\",", "");
        assert!(!old.contains("arms"), "{old}");
        let back: StepOutcome = serde_json::from_str(&old).expect("parse");
        assert_eq!(back.arms, None);
    }
}
