//! What a run gives back: the work done, pages migrated, actions applied,
//! each job's outcome, and the trace of a traced run.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::action::SimAction;

/// What happened to one job.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JobOutcome {
    /// Queue index.
    pub index: usize,
    /// Work done (CPU-seconds at nominal speed).
    pub work: f64,
    /// Seconds it ran (to completion or the end).
    pub alive_s: f64,
    /// Whether it finished.
    pub finished: bool,
}

impl JobOutcome {
    /// Speed relative to running alone with local memory.
    pub fn speed(&self, threads: u32) -> f64 {
        self.work / (f64::from(threads.max(1)) * self.alive_s.max(1e-9))
    }
}

/// The result of one run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunOutcome {
    /// Work done over the horizon, CPU-seconds at nominal speed.
    pub work: f64,
    /// Horizon, seconds.
    pub horizon_s: f64,
    /// Pages (4 KiB) migrated.
    pub pages_migrated: u64,
    /// Bind actions applied.
    pub binds: u64,
    /// Reverts applied.
    pub reverts: u64,
    /// Per job (index → outcome), for jobs that ran at least 30 s.
    pub jobs: BTreeMap<usize, (JobOutcome, u32)>,
    /// What happened, in order, when the run was traced
    /// ([`Engine::traced`]); empty otherwise.
    pub trace: Vec<TraceEvent>,
}

/// One event of a traced run.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
pub enum TraceEvent {
    /// A job started, on these CPU nodes (its affinity at start).
    Start {
        /// Simulated time, seconds.
        t_s: f64,
        /// Its pid.
        pid: i32,
        /// Command name (its class).
        comm: &'static str,
        /// Threads.
        threads: u32,
        /// Memory, GiB.
        mem_gib: f64,
        /// CPU nodes it may run on (node ids).
        cpu_nodes: Vec<u32>,
        /// Placed by its owner (numakit leaves it alone).
        owner_pinned: bool,
    },
    /// An action of the policy, applied.
    Action {
        /// Simulated time, seconds.
        t_s: f64,
        /// The action, with its reason.
        #[serde(flatten)]
        action: SimAction,
    },
    /// A job finished its work, or was still running at the end of the
    /// run.
    End {
        /// Simulated time, seconds.
        t_s: f64,
        /// Its pid.
        pid: i32,
        /// Whether it finished (else the run ended first).
        finished: bool,
        /// Its average speed: work done over threads × seconds alive (1: as
        /// fast as alone with local memory).
        speed: f64,
    },
    /// The machine's work rate over the last minute: nominal CPU-seconds of
    /// work per second (what throughput sums).
    Rate {
        /// Simulated time, seconds (the end of the minute).
        t_s: f64,
        /// Work per second.
        work_per_s: f64,
    },
}

impl RunOutcome {
    /// Throughput: nominal CPU-seconds of work per second.
    pub fn throughput(&self) -> f64 {
        self.work / self.horizon_s
    }
}
