//! The daemon's memory: what it moved, when, what it expected, whether the
//! move was judged, which processes and command names hurt and are left
//! alone, migrations still owed, the page budget's clock and the observed
//! scheduler drift. Input and output of every decision; serialisable so a
//! daemon can persist it across restarts (JSON).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::sets_serde;
use super::snapshot::MemPolicy;
use crate::sets::NodeSet;

/// A placement numakit made and has not undone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Placement {
    /// CPU nodes it was bound to.
    #[serde(with = "sets_serde")]
    pub cpu_nodes: NodeSet,
    /// Memory nodes it was given (preferred policy).
    #[serde(with = "sets_serde")]
    pub mem_nodes: NodeSet,
    /// Affinity before (nodes), restored on revert.
    #[serde(with = "sets_serde")]
    pub prev_affinity: NodeSet,
    /// Memory policy before, restored on revert.
    pub prev_policy: MemPolicy,
    /// Affinity before numakit's first move of this process (differs from
    /// `prev_affinity` when this move replaced an earlier numakit one).
    #[serde(with = "sets_serde", default)]
    pub origin_affinity: NodeSet,
    /// Memory policy before numakit's first move.
    #[serde(default)]
    pub origin_policy: MemPolicy,
    /// Progress before the move ([`Progress::value`](super::Progress::value)).
    pub baseline_progress: f64,
    /// Whether `baseline_progress` counts instructions (else CPU time).
    pub baseline_is_instr: bool,
    /// Local share of memory accesses before.
    pub baseline_locality: f64,
    /// Expected speed-up (fraction).
    pub expected_gain: f64,
    /// When it was made.
    pub at_s: f64,
    /// Whether the do-no-harm check has passed.
    pub judged: bool,
    /// Pages still to migrate: (from node, to node, pages).
    pub pending: Vec<(u32, u32, u64)>,
    /// When the last pending page moved (judging waits `settle_s` after).
    pub settled_from_s: f64,
}

/// What numakit remembers of one process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProcRecord {
    /// Command name.
    pub comm: String,
    /// Start time (snapshot time minus age), to tell a reused pid apart.
    pub start_s: f64,
    /// Time of the last move numakit made.
    pub last_move_s: Option<f64>,
    /// Moves made.
    pub moves: u32,
    /// Current placement, if any.
    pub placement: Option<Placement>,
    /// Left alone until then (after harm).
    pub left_alone_until_s: Option<f64>,
    /// Main CPU node last seen while not bound (drift observation).
    pub last_cpu_node: Option<u32>,
    /// Time and RSS at the last scan (memory growth).
    #[serde(default)]
    pub last_rss: Option<(f64, u64)>,
}

/// How far apart two start times of one pid may be and still be the same
/// process, seconds: start times come from ages in clock ticks and wall
/// times read at different instants of a scan; a reused pid starts later
/// than that.
pub const SAME_START_SLACK_S: f64 = 2.0;

impl ProcRecord {
    /// Whether a process that started at `start_s` is the one this record
    /// is of (and not a later process with its reused pid).
    pub fn same_process(&self, start_s: f64) -> bool {
        (self.start_s - start_s).abs() <= SAME_START_SLACK_S
    }

    /// A record for a process first seen now.
    pub fn new(comm: &str, start_s: f64) -> Self {
        Self {
            comm: comm.to_string(),
            start_s,
            last_move_s: None,
            moves: 0,
            placement: None,
            left_alone_until_s: None,
            last_cpu_node: None,
            last_rss: None,
        }
    }
}

/// Run times kept per command name (the most recent).
pub const RUNS_KEPT: usize = 32;
/// Command names whose run times are kept (those that ended most recently).
pub const COMMS_WITH_RUNS_KEPT: usize = 512;

/// What numakit remembers of one command name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct CommRecord {
    /// Reverts of processes with this name.
    pub harms: u32,
    /// Left alone until then.
    pub left_alone_until_s: Option<f64>,
    /// Run times (seconds, start to exit) of the last [`RUNS_KEPT`]
    /// processes of this name that numakit watched and saw exit, oldest
    /// first.
    #[serde(default)]
    pub runs: Vec<f64>,
    /// When the last of them exited.
    #[serde(default)]
    pub last_run_s: Option<f64>,
}

impl CommRecord {
    /// Records one run that ended at `at_s` after `run_s` seconds.
    pub fn record_run(&mut self, run_s: f64, at_s: f64) {
        if self.runs.len() >= RUNS_KEPT {
            self.runs.remove(0);
        }
        self.runs.push(run_s.max(0.0));
        self.last_run_s = Some(at_s);
    }
}

/// The history: input and output of [`decide`](super::decide).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct History {
    /// Format version (1).
    pub version: u32,
    /// Time of the previous decision.
    pub last_time_s: Option<f64>,
    /// Per pid.
    pub procs: BTreeMap<i32, ProcRecord>,
    /// Per command name.
    pub comms: BTreeMap<String, CommRecord>,
    /// Observed drifts of unbound candidate processes.
    pub drifts: u64,
    /// Process-seconds of observation behind `drifts`.
    pub drift_observed_s: f64,
    /// Pages migrated so far (all time).
    pub pages_migrated: u64,
    /// Reverts so far (all time).
    pub reverts: u64,
    /// Memory nodes slower than their access-time ratio says (node id →
    /// until when): a move that put pages there made its process slower
    /// although it got its CPUs and its memory got no less local.
    pub slow_memory: BTreeMap<u32, f64>,
}

impl History {
    /// An empty history.
    pub fn new() -> Self {
        Self { version: 1, ..Self::default() }
    }

    /// The JSON form, for persisting.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// Reads the JSON form.
    pub fn from_json(text: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// Observed drift rate per process-second, with a prior of
    /// `prior_per_hour` weighted as one hour of observation.
    pub fn drift_rate(&self, prior_per_hour: f64) -> f64 {
        (self.drifts as f64 + prior_per_hour) / (self.drift_observed_s + 3600.0)
    }
}
