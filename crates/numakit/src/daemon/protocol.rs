//! The control protocol between `numakit daemon` and its clients
//! (`numakit ctl`, `numakit advise`, `run --auto`), as types both sides
//! use: a [`Request`] goes in as one JSON line, a [`Response`] comes back as
//! one JSON line whose `data` is the typed answer of that request
//! ([`Status`], [`Done`], [`NodeView`], a list of [`DecisionRecord`]s).
//!
//! The socket, the access check and the client live in [`super::ctl`];
//! this module only says what is exchanged. Fields of the answers built
//! with `json!` before these types existed are in alphabetical order, the
//! order those objects had on the wire.

use std::collections::{BTreeMap, VecDeque};
use std::fmt;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::action::Action;
use super::apply::Outcome;
use super::state::GlobalChange;
use crate::place::auto::{AutoDecision, NodeLoad};
use crate::sets::CpuSet;

/// What `exclude`, `include` and `forget` name: one process, every
/// process of a command name, or every process in a cgroup and the
/// cgroups below it (a batch job's).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum Target {
    /// A process id.
    Pid(i32),
    /// A command name (the kernel's `comm`, at most 15 bytes).
    Comm(String),
    /// A cgroup v2: its path as `/proc/PID/cgroup` gives it (the `0::`
    /// line, relative to the cgroup v2 root). Typed as `cgroup:PATH`.
    Cgroup(String),
}

impl Target {
    /// Reads a target as typed: a positive number is a pid, anything else
    /// a command name. The error names the text as given.
    pub fn parse(text: &str) -> Result<Target, String> {
        let t = text.trim();
        if t.is_empty() {
            return Err("empty target: give a pid, a command name or cgroup:PATH".into());
        }
        if let Some(path) = t.strip_prefix("cgroup:") {
            let ok = path.starts_with('/')
                && path.len() <= 4096
                && !path.split('/').any(|c| c == "..")
                && !path.chars().any(char::is_control);
            return if ok {
                Ok(Target::Cgroup(path.to_string()))
            } else {
                Err(format!("invalid cgroup {text:?}: give an absolute cgroup path without \"..\""))
            };
        }
        match t.parse::<i64>() {
            Ok(p) if p > 0 && p <= i64::from(i32::MAX) => Ok(Target::Pid(p as i32)),
            Ok(_) => Err(format!("invalid pid {text}")),
            Err(_) if t.len() <= 15 => Ok(Target::Comm(t.to_string())),
            Err(_) => Err(format!("command name {t:?} is longer than 15 characters, the kernel's comm length")),
        }
    }
}

impl TryFrom<String> for Target {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        Target::parse(&s)
    }
}

impl From<Target> for String {
    fn from(t: Target) -> String {
        match t {
            Target::Pid(p) => p.to_string(),
            Target::Comm(c) => c,
            Target::Cgroup(p) => format!("cgroup:{p}"),
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Pid(p) => write!(f, "pid {p}"),
            Target::Comm(c) => write!(f, "command {c:?}"),
            Target::Cgroup(p) => write!(f, "cgroup {p}"),
        }
    }
}

/// A request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "cmd", rename_all = "kebab-case")]
pub enum Request {
    /// The daemon's state and counters ([`Status`]).
    Status,
    /// Never touch a pid or command name (from now on; a process already
    /// placed keeps its placement). Answer: [`Done`].
    Exclude {
        /// A pid or a command name.
        target: Target,
    },
    /// Manage a pid or command name again (undoes `exclude`; manages it
    /// even if the configured include lists would not). Answer: [`Done`].
    Include {
        /// A pid or a command name.
        target: Target,
    },
    /// Drop a pid or command name from both lists and forget its history
    /// (harm memory), so it is judged afresh. Answer: [`Done`].
    Forget {
        /// A pid or a command name.
        target: Target,
    },
    /// Re-read the configuration file. Answer: [`Done`].
    Reload,
    /// The last decisions: a list of [`DecisionRecord`]s, oldest first.
    Decisions {
        /// How many.
        last: usize,
    },
    /// The daemon's view of the nodes, and with `cpus > 0` its advice for
    /// a job ([`NodeView`]).
    Advise {
        /// CPUs the job needs (0: the view only).
        cpus: u32,
        /// Memory the job needs, bytes.
        mem_bytes: u64,
        /// CPUs never to use (a CPU list, may be empty).
        #[serde(default)]
        reserve: String,
    },
}

/// A response: whether the request was done, what went wrong, and the
/// answer (`data`, the typed answer of the request as JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Response {
    /// Whether the request was done.
    pub ok: bool,
    /// What went wrong, one line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The answer.
    #[serde(default)]
    pub data: serde_json::Value,
}

impl Response {
    /// A success carrying `answer`.
    pub fn ok(answer: &impl Serialize) -> Self {
        Self { ok: true, error: None, data: serde_json::to_value(answer).unwrap_or_default() }
    }
    /// A failure.
    pub fn err(msg: impl Into<String>) -> Self {
        Self { ok: false, error: Some(msg.into()), data: serde_json::Value::Null }
    }
    /// The answer as the type the request was answered with.
    pub fn answer<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        T::deserialize(&self.data)
    }
}

/// The answer of `exclude`, `include`, `forget` and `reload`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Done {
    /// What was done, one line (`excluded pid 42`).
    pub done: String,
}

/// Counters since start (status, metrics).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Counters {
    /// Scans done.
    pub scans: u64,
    /// CPU time of all scans (collect, decide, apply), seconds.
    pub scan_cpu_seconds_total: f64,
    /// Wall time of all scans, seconds.
    pub scan_wall_seconds_total: f64,
    /// CPU time of the last scan, seconds.
    pub last_scan_cpu_seconds: f64,
    /// Wall time of the last scan, seconds.
    pub last_scan_wall_seconds: f64,
    /// Processes looked at in the last scan.
    pub processes: usize,
    /// Candidates (details read) in the last scan.
    pub candidates: usize,
    /// Processes skipped as unreadable in the last scan.
    pub unreadable: usize,
    /// `numa_maps` files read in the last scan (the other candidates' came
    /// from the cache).
    pub numa_maps_read: usize,
    /// Binds applied.
    pub binds_total: u64,
    /// Migrations applied.
    pub migrations_total: u64,
    /// Pages moved, read back from `numa_maps`.
    pub pages_migrated_total: u64,
    /// Reverts applied.
    pub reverts_total: u64,
    /// Actions the kernel refused.
    pub failures_total: u64,
    /// Actions whose process exited first.
    pub gone_total: u64,
    /// Half-applied binds found and fixed at start.
    pub repairs_total: u64,
    /// Decisions per reason (keeps included).
    pub decisions_total: BTreeMap<String, u64>,
    /// CPU milliseconds of each of the last 100 scans, oldest first.
    pub recent_scan_cpu_ms: VecDeque<f64>,
    /// Peak resident memory of the daemon (`VmHWM`), bytes.
    pub peak_rss_bytes: u64,
}

/// A process the daemon placed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Managed {
    /// Process id.
    pub pid: i32,
    /// Command name.
    pub comm: String,
    /// The nodes its CPUs are bound to (a node list).
    pub cpu_nodes: String,
    /// Whether the move's effect was judged (kept) already.
    pub judged: bool,
    /// Pages still owed to it.
    pub pending_pages: u64,
}

/// Pids and command names of one `ctl` list.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Names {
    /// Process ids.
    pub pids: Vec<i32>,
    /// Command names.
    pub comms: Vec<String>,
    /// Cgroups (absent: none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cgroups: Vec<String>,
}

/// Run times learnt per command name.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct RunTimes {
    /// Command names with at least one run.
    pub commands: usize,
    /// Runs in all.
    pub runs: usize,
}

/// How the daemon measures a process's progress.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ProgressMeasure {
    /// `instructions` (hardware counters) or `cpu-time`.
    pub by: String,
    /// Why not instructions, when not.
    pub why: Option<String>,
}

/// The answer of `status` (also the daemon's `status.json`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Status {
    /// The daemon's pid.
    pub pid: u32,
    /// When it started (RFC 3339).
    pub started: String,
    /// Its configuration file.
    pub config: Option<String>,
    /// Whether it only decides and logs.
    pub dry_run: bool,
    /// Why it does not move anything now (kernel AutoNUMA on, mode
    /// `defer`), if so.
    pub deferred: Option<String>,
    /// Why it places CPUs only and leaves the pages to the kernel now
    /// (kernel AutoNUMA on, mode `place-cpus`), if so.
    pub cpus_only: Option<String>,
    /// Seconds to the next scan.
    pub interval_s: f64,
    /// Counters since start.
    pub counters: Counters,
    /// Processes it placed.
    pub managed: Vec<Managed>,
    /// Excluded through `ctl`.
    pub excluded: Names,
    /// Included through `ctl`.
    pub included: Names,
    /// Command names left alone after repeated harm.
    pub left_alone_comms: Vec<String>,
    /// Reverts ever made (kept across restarts).
    pub reverts_ever: u64,
    /// Run times learnt.
    pub run_times: RunTimes,
    /// Global settings it changed, to restore on exit.
    pub globals_changed: Vec<GlobalChange>,
    /// How progress is measured.
    pub progress_measure: ProgressMeasure,
}

/// One decision as logged (a line of the decision log, and an item of the
/// `decisions` answer).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecisionRecord {
    /// When (RFC 3339).
    pub ts: String,
    /// When, seconds since the epoch.
    pub t: f64,
    /// The scan it was made in.
    pub scan: u64,
    /// The process's command name.
    pub comm: String,
    /// The action.
    #[serde(flatten)]
    pub action: Action,
    /// The reason, for people.
    pub reason_text: String,
    /// What happened when it was applied.
    #[serde(flatten)]
    pub outcome: Outcome,
    /// The process's memory locality at the scan (local share of its
    /// pages), if known.
    pub locality: Option<f64>,
    /// Whether the daemon only decided.
    pub dry_run: bool,
}

/// One node's load as the daemon last saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoadView {
    /// Free memory, bytes.
    pub free_bytes: u64,
    /// Idle CPUs (a CPU list).
    pub idle_cpus: String,
    /// Node id.
    pub node: u32,
    /// Jobs numakit placed there that still run (absent: 0).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub placed: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl LoadView {
    /// From the placement layer's load.
    pub fn of(l: &NodeLoad) -> Self {
        Self { node: l.node, idle_cpus: l.idle_cpus.to_list(), free_bytes: l.free_bytes, placed: l.placed }
    }

    /// Back to the placement layer's load; an unreadable CPU list is an
    /// error naming it.
    pub fn to_load(&self) -> Result<NodeLoad, String> {
        let idle_cpus = CpuSet::parse_list(&self.idle_cpus)
            .map_err(|e| format!("node {}: idle CPUs {:?}: {e}", self.node, self.idle_cpus))?;
        Ok(NodeLoad { node: self.node, idle_cpus, free_bytes: self.free_bytes, placed: self.placed })
    }
}

/// Advice for one job: the nodes, the rule that chose them and the
/// numactl options that apply them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Advice {
    /// The chosen nodes (a node list).
    pub nodes: String,
    /// numactl's options for the same placement.
    pub numactl: Vec<String>,
    /// Why, for people.
    pub reason: String,
    /// The rule that chose them.
    pub rule: String,
    /// Whose view of the nodes it came from (`daemon`, or the sampling).
    pub source: String,
}

impl Advice {
    /// From the placement layer's decision.
    pub fn of(d: &AutoDecision, source: &str) -> Self {
        Self {
            nodes: d.nodes.to_list(),
            rule: format!("{:?}", d.rule),
            reason: d.reason.clone(),
            numactl: d.plan.numactl_args(),
            source: source.to_string(),
        }
    }
}

/// The answer of `advise`: the nodes as the last scan saw them, and the
/// advice (or why the job cannot be placed now) when a job was given.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeView {
    /// The advice for the job asked about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub advice: Option<Advice>,
    /// Per node: idle CPUs and free memory.
    pub loads: Vec<LoadView>,
    /// Why the job asked about cannot be placed now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
    /// CPUs the daemon's configuration reserves (a CPU list).
    pub reserved: String,
    /// When the scan was (RFC 3339).
    pub scanned: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_as_json_lines() {
        let r = Request::Exclude { target: Target::Comm("geant4".into()) };
        let t = serde_json::to_string(&r).unwrap();
        assert_eq!(t, r#"{"cmd":"exclude","target":"geant4"}"#);
        assert_eq!(serde_json::from_str::<Request>(&t).unwrap(), r);
        let p: Request = serde_json::from_str(r#"{"cmd":"forget","target":"42"}"#).unwrap();
        assert_eq!(p, Request::Forget { target: Target::Pid(42) });
        let a: Request = serde_json::from_str(r#"{"cmd":"advise","cpus":4,"mem_bytes":1024}"#).unwrap();
        assert_eq!(a, Request::Advise { cpus: 4, mem_bytes: 1024, reserve: String::new() });
        assert!(serde_json::from_str::<Request>(r#"{"cmd":"shutdown"}"#).is_err());
        let bad = serde_json::from_str::<Request>(r#"{"cmd":"exclude","target":"-3"}"#).unwrap_err();
        assert!(bad.to_string().contains("invalid pid -3"), "{bad}");
    }

    #[test]
    fn targets_as_typed() {
        assert_eq!(Target::parse(" 42 "), Ok(Target::Pid(42)));
        assert_eq!(Target::parse("reco.exe"), Ok(Target::Comm("reco.exe".into())));
        assert_eq!(Target::parse("0"), Err("invalid pid 0".into()));
        assert_eq!(Target::parse("99999999999"), Err("invalid pid 99999999999".into()));
        assert!(Target::parse("").is_err());
        assert!(Target::parse("a-name-of-16-chr").unwrap_err().contains("longer than 15"));
        assert_eq!(Target::Pid(7).to_string(), "pid 7");
        assert_eq!(Target::Comm("x".into()).to_string(), "command \"x\"");
        let cg = Target::parse("cgroup:/system.slice/slurmstepd.scope/job_42").unwrap();
        assert_eq!(cg, Target::Cgroup("/system.slice/slurmstepd.scope/job_42".into()));
        assert_eq!(String::from(cg.clone()), "cgroup:/system.slice/slurmstepd.scope/job_42");
        assert_eq!(serde_json::from_str::<Target>("\"cgroup:/a\"").unwrap(), Target::Cgroup("/a".into()));
        for bad in ["cgroup:", "cgroup:relative", "cgroup:/a/../b"] {
            assert!(Target::parse(bad).unwrap_err().contains(&format!("{bad:?}")), "{bad}");
        }
    }

    #[test]
    fn answers_round_trip_through_the_envelope() {
        let mut st = Status { pid: 7, started: "2026-11-25T00:00:00Z".into(), ..Status::default() };
        st.counters.scans = 3;
        st.counters.decisions_total.insert("keep".into(), 5);
        st.managed.push(Managed {
            pid: 42,
            comm: "reco".into(),
            cpu_nodes: "1".into(),
            judged: true,
            pending_pages: 0,
        });
        let r = Response::ok(&st);
        let line = serde_json::to_string(&r).unwrap();
        let back: Response = serde_json::from_str(&line).unwrap();
        assert_eq!(back.answer::<Status>().unwrap(), st);
        // Older or partial status files still read, with defaults.
        let partial: Status = serde_json::from_str(r#"{"pid": 9, "counters": {"scans": 2}}"#).unwrap();
        assert_eq!((partial.pid, partial.counters.scans), (9, 2));
        // A wrong answer type is an error, not a default.
        assert!(Response::ok(&Done { done: "x".into() }).answer::<Vec<DecisionRecord>>().is_err());
    }

    #[test]
    fn load_views_check_their_cpu_lists() {
        let v = LoadView { node: 1, idle_cpus: "2-3".into(), free_bytes: 5, placed: 0 };
        assert_eq!(v.to_load().unwrap().idle_cpus, CpuSet::parse_list("2-3").unwrap());
        let bad = LoadView { idle_cpus: "x".into(), ..v };
        assert!(bad.to_load().unwrap_err().starts_with("node 1: idle CPUs \"x\""));
    }
}
