//! The daemon's memory, in two halves. [`Observed`]: what the scans saw
//! (each process's identity, last main CPU node and size, the scheduler
//! drift, the run times of the commands seen to end, the time of the last
//! scan), true whether or not anything was applied. [`Committed`]: what
//! numakit did or decided to do (placements, the pages they still owe,
//! reverts, harm and what is left alone because of it, memory marked slow,
//! pages migrated). A daemon that applies nothing (dry run, deferring to
//! AutoNUMA) keeps the new observations and its old commitments:
//! `History { observed: new.observed, ..old }`.
//!
//! Input and output of every decision; serialisable so a daemon can
//! persist it across restarts (JSON, [`HISTORY_VERSION`]; the one-record
//! form of version 1 is still read).

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
    /// CPUs it was booked for on its nodes (its need when placed): held
    /// there until the move is judged, whatever a window that saw the
    /// move being made says (0 in a state file from before this field).
    #[serde(default)]
    pub need: f64,
}

impl Placement {
    /// Whether the window that began at `window_start` (the previous
    /// scan's time, or earlier when the rates span several scans) saw the
    /// move being made: it was made, or its last owed
    /// pages moved, at or after that scan. Such a window is neither judged
    /// nor acted on. None: no earlier scan on record.
    pub fn made_in_window(&self, window_start: Option<f64>) -> bool {
        window_start.is_some_and(|w| self.settled_from_s >= w)
    }
}

/// Whether two start times of one pid are of the same process: at most
/// `slack_s` apart ([`Config::same_start_slack_s`](super::Config::same_start_slack_s)).
fn same_start(a: f64, b: f64, slack_s: f64) -> bool {
    (a - b).abs() <= slack_s
}

/// What the scans saw of one process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProcObserved {
    /// Command name.
    pub comm: String,
    /// Start time (snapshot time minus age), to tell a reused pid apart.
    pub start_s: f64,
    /// Main CPU node last seen while not bound (drift observation).
    pub last_cpu_node: Option<u32>,
    /// Time and RSS at the last scan (memory growth).
    #[serde(default)]
    pub last_rss: Option<(f64, u64)>,
}

impl ProcObserved {
    /// A process first seen now, started at `start_s`.
    pub fn new(comm: &str, start_s: f64) -> Self {
        Self { comm: comm.to_string(), start_s, last_cpu_node: None, last_rss: None }
    }

    /// Whether a process that started at `start_s` is the one this record
    /// is of (and not a later process with its reused pid), start times
    /// at most `slack_s` apart.
    pub fn same_process(&self, start_s: f64, slack_s: f64) -> bool {
        same_start(self.start_s, start_s, slack_s)
    }
}

/// What numakit did to one process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProcCommitted {
    /// Command name (as first seen).
    pub comm: String,
    /// Start time, as in [`ProcObserved::start_s`].
    pub start_s: f64,
    /// Time of the last move numakit made.
    pub last_move_s: Option<f64>,
    /// Moves made.
    pub moves: u32,
    /// Current placement, if any.
    pub placement: Option<Placement>,
    /// Left alone until then (after harm).
    pub left_alone_until_s: Option<f64>,
}

impl ProcCommitted {
    /// A process numakit has done nothing to yet, started at `start_s`.
    pub fn new(comm: &str, start_s: f64) -> Self {
        Self { comm: comm.to_string(), start_s, last_move_s: None, moves: 0, placement: None, left_alone_until_s: None }
    }

    /// As [`ProcObserved::same_process`].
    pub fn same_process(&self, start_s: f64, slack_s: f64) -> bool {
        same_start(self.start_s, start_s, slack_s)
    }
}

/// What the scans saw of one command name: how long its processes ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct CommRuns {
    /// Run times (seconds, start to exit) of the last
    /// [`Config::runs_kept`](super::Config::runs_kept) processes of this
    /// name that numakit watched and saw exit, oldest first.
    #[serde(default)]
    pub runs: Vec<f64>,
    /// When the last of them exited.
    #[serde(default)]
    pub last_run_s: Option<f64>,
}

impl CommRuns {
    /// Records one run that ended at `at_s` after `run_s` seconds, keeping
    /// the last `kept`.
    pub fn record_run(&mut self, run_s: f64, at_s: f64, kept: u32) {
        self.runs.push(run_s.max(0.0));
        let excess = self.runs.len().saturating_sub(kept as usize);
        self.runs.drain(..excess);
        self.last_run_s = Some(at_s);
    }
}

/// What numakit's moves of one command name's processes came to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct CommHarms {
    /// Reverts of processes with this name (since the last move of the
    /// name that was kept).
    pub harms: u32,
    /// Left alone until then.
    pub left_alone_until_s: Option<f64>,
}

/// What the scans saw: true whether or not anything was applied.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct Observed {
    /// Time of the previous decision.
    pub last_time_s: Option<f64>,
    /// Per pid: the processes seen as candidates (and still alive).
    pub procs: BTreeMap<i32, ProcObserved>,
    /// Per command name: run times of its processes seen to end.
    pub comms: BTreeMap<String, CommRuns>,
    /// Observed drifts of unbound candidate processes.
    pub drifts: u64,
    /// Process-seconds of observation behind `drifts`.
    pub drift_observed_s: f64,
}

impl Observed {
    /// Observed drift rate per process-second, with a prior of
    /// `prior_per_hour` weighted as `prior_weight_s` seconds of
    /// observation.
    pub fn drift_rate(&self, prior_per_hour: f64, prior_weight_s: f64) -> f64 {
        let prior = prior_per_hour * (prior_weight_s / 3600.0);
        (self.drifts as f64 + prior) / (self.drift_observed_s + prior_weight_s)
    }
}

/// What numakit did, or decided to do and handed to the acting layer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct Committed {
    /// Per pid: the processes numakit moved (and that are still alive).
    pub procs: BTreeMap<i32, ProcCommitted>,
    /// Per command name: harm of its moves, and whether it is left alone.
    pub comms: BTreeMap<String, CommHarms>,
    /// Pages migrated so far (all time).
    pub pages_migrated: u64,
    /// Reverts so far (all time).
    pub reverts: u64,
    /// Memory nodes slower than their access-time ratio says (node id →
    /// until when): a move that put pages there made its process slower
    /// although it got its CPUs and its memory got no less local.
    pub slow_memory: BTreeMap<u32, f64>,
}

/// The format version [`History`] writes.
pub const HISTORY_VERSION: u32 = 2;

/// The history: input and output of [`decide`](super::decide).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(from = "HistoryFile")]
pub struct History {
    /// Format version ([`HISTORY_VERSION`]).
    pub version: u32,
    /// What the scans saw.
    pub observed: Observed,
    /// What numakit did.
    pub committed: Committed,
}

impl History {
    /// An empty history.
    pub fn new() -> Self {
        Self { version: HISTORY_VERSION, ..Self::default() }
    }

    /// The JSON form, for persisting.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// Reads the JSON form (this version's, or version 1's).
    pub fn from_json(text: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// Whether either half has a record of `pid`.
    pub fn knows(&self, pid: i32) -> bool {
        self.observed.procs.contains_key(&pid) || self.committed.procs.contains_key(&pid)
    }

    /// Forgets `pid` in both halves (the process is gone).
    pub fn forget(&mut self, pid: i32) {
        self.observed.procs.remove(&pid);
        self.committed.procs.remove(&pid);
    }
}

/// The history as read: version 2's two halves, or version 1's one record
/// per process and per command name.
#[derive(Deserialize, Default)]
#[serde(default)]
struct HistoryFile {
    observed: Option<Observed>,
    committed: Option<Committed>,
    last_time_s: Option<f64>,
    procs: BTreeMap<i32, ProcRecordV1>,
    comms: BTreeMap<String, CommRecordV1>,
    drifts: u64,
    drift_observed_s: f64,
    pages_migrated: u64,
    reverts: u64,
    slow_memory: BTreeMap<u32, f64>,
}

/// Version 1's record of a process: both halves in one.
#[derive(Deserialize)]
struct ProcRecordV1 {
    comm: String,
    start_s: f64,
    last_move_s: Option<f64>,
    moves: u32,
    placement: Option<Placement>,
    left_alone_until_s: Option<f64>,
    last_cpu_node: Option<u32>,
    #[serde(default)]
    last_rss: Option<(f64, u64)>,
}

/// Version 1's record of a command name.
#[derive(Deserialize)]
struct CommRecordV1 {
    harms: u32,
    left_alone_until_s: Option<f64>,
    #[serde(default)]
    runs: Vec<f64>,
    #[serde(default)]
    last_run_s: Option<f64>,
}

impl From<HistoryFile> for History {
    fn from(f: HistoryFile) -> Self {
        if f.observed.is_some() || f.committed.is_some() {
            return Self {
                version: HISTORY_VERSION,
                observed: f.observed.unwrap_or_default(),
                committed: f.committed.unwrap_or_default(),
            };
        }
        let mut h = Self::new();
        h.observed.last_time_s = f.last_time_s;
        h.observed.drifts = f.drifts;
        h.observed.drift_observed_s = f.drift_observed_s;
        h.committed.pages_migrated = f.pages_migrated;
        h.committed.reverts = f.reverts;
        h.committed.slow_memory = f.slow_memory;
        for (pid, r) in f.procs {
            let did = r.moves > 0 || r.last_move_s.is_some() || r.placement.is_some() || r.left_alone_until_s.is_some();
            h.observed.procs.insert(
                pid,
                ProcObserved {
                    comm: r.comm.clone(),
                    start_s: r.start_s,
                    last_cpu_node: r.last_cpu_node,
                    last_rss: r.last_rss,
                },
            );
            if did {
                h.committed.procs.insert(
                    pid,
                    ProcCommitted {
                        comm: r.comm,
                        start_s: r.start_s,
                        last_move_s: r.last_move_s,
                        moves: r.moves,
                        placement: r.placement,
                        left_alone_until_s: r.left_alone_until_s,
                    },
                );
            }
        }
        for (name, c) in f.comms {
            if !c.runs.is_empty() {
                h.observed.comms.insert(name.clone(), CommRuns { runs: c.runs, last_run_s: c.last_run_s });
            }
            if c.harms > 0 || c.left_alone_until_s.is_some() {
                h.committed.comms.insert(name, CommHarms { harms: c.harms, left_alone_until_s: c.left_alone_until_s });
            }
        }
        h
    }
}
