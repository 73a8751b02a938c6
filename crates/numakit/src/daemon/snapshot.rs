//! What the daemon saw at one scan: per node free CPUs and memory, and per
//! candidate process its size, CPU use over the scan window, memory per
//! node, where its threads ran, its affinity, cpuset and memory policy, age
//! and progress. Filled by a collector from `/proc` (or by the simulator);
//! the decision core only reads it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::sets_serde;
use crate::sets::NodeSet;

/// A node's free resources now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeState {
    /// Node id.
    pub id: u32,
    /// Idle CPUs (average over the window; fractional).
    pub free_cpus: f64,
    /// Free memory in bytes.
    pub free_bytes: u64,
    /// CPUs' worth of load of processes the snapshot does not list (too
    /// small to be candidates) that their affinity keeps on a subset of the
    /// nodes, this node's share of it: load the scheduler cannot move
    /// elsewhere, as that of a listed process with a restricted affinity.
    /// 0 when the collector does not say.
    #[serde(default)]
    pub bound_cpus: f64,
}

/// A process's memory policy, as far as the decision needs it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(tag = "mode", content = "nodes", rename_all = "kebab-case")]
pub enum MemPolicy {
    /// No policy: allocate where the thread runs (first touch).
    #[default]
    Default,
    /// MPOL_LOCAL.
    Local,
    /// MPOL_PREFERRED / MPOL_PREFERRED_MANY on these nodes.
    Preferred(#[serde(with = "sets_serde")] NodeSet),
    /// MPOL_BIND to these nodes.
    Bind(#[serde(with = "sets_serde")] NodeSet),
    /// MPOL_INTERLEAVE (or weighted) over these nodes.
    Interleave(#[serde(with = "sets_serde")] NodeSet),
}

/// How fast a process made progress over the window.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct Progress {
    /// CPU seconds per second (all threads).
    pub cpu_rate: f64,
    /// Instructions per second, when hardware counters are available.
    pub instr_rate: Option<f64>,
}

impl Progress {
    /// The best progress measure available: instructions when counted (they
    /// fall when memory gets slower), else CPU time (falls only when the
    /// process gets less CPU).
    pub fn value(&self) -> f64 {
        self.instr_rate.unwrap_or(self.cpu_rate)
    }
}

/// One process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProcInfo {
    /// Process id.
    pub pid: i32,
    /// Command name (`comm`).
    pub comm: String,
    /// Owner uid.
    pub uid: u32,
    /// cgroup v2 path (`/proc/PID/cgroup`, without the `0::` prefix).
    pub cgroup: String,
    /// Threads.
    pub threads: u32,
    /// CPUs used, averaged over the window.
    pub cpu_use: f64,
    /// CPUs' worth of time its threads were runnable but waited for a CPU
    /// (the kernel's run delay, `/proc/PID/task/TID/schedstat`), averaged
    /// over the window: with `cpu_use`, what the process would use if it
    /// had the CPUs (a busy thread sharing a CPU with another uses half a
    /// CPU and waits the other half). 0 when the kernel does not say.
    #[serde(default)]
    pub cpu_wait: f64,
    /// Resident memory in bytes.
    pub rss_bytes: u64,
    /// Resident memory per node (`numa_maps`), bytes.
    pub mem_per_node: BTreeMap<u32, u64>,
    /// CPUs used per node over the window (from the threads' last CPUs).
    pub cpu_per_node: BTreeMap<u32, f64>,
    /// Whether `cpu_per_node` was measured over the window (each thread's
    /// CPU time between two readings, counted where the thread was at
    /// both), and not only guessed from where its threads happened to be
    /// at the instant of this scan. The decision places only processes
    /// whose placement was measured.
    #[serde(default = "measured_by_default")]
    pub cpu_measured: bool,
    /// Seconds its CPU use, wait and `cpu_per_node` are over (each
    /// reading's own span, at least
    /// [`Config::min_rate_span_s`](crate::daemon::Config::min_rate_span_s)
    /// when measured). 0: not said (the scan's window applies).
    #[serde(default)]
    pub rate_span_s: f64,
    /// The time ([`Snapshot::time_s`]) of the scan whose readings its rates
    /// (CPU use, wait, `cpu_per_node`) are measured from, the earliest of
    /// its own and its threads': a change applied after that scan is
    /// inside them, one applied after a later scan is not. None: not said
    /// (the scan's window applies).
    #[serde(default)]
    pub rates_from_s: Option<f64>,
    /// Nodes covered by the CPU affinity.
    #[serde(with = "sets_serde")]
    pub affinity: NodeSet,
    /// Nodes the process's cgroup cpuset allows (CPUs and memory).
    #[serde(with = "sets_serde")]
    pub cpuset: NodeSet,
    /// Memory policy.
    pub mem_policy: MemPolicy,
    /// Whether the collector knows the affinity or policy was set by its
    /// owner (a launcher, numactl, a batch system). The decision also
    /// infers it: a restricted affinity or a policy numakit did not set.
    pub owner_pinned: bool,
    /// Seconds since the process started.
    pub age_s: f64,
    /// Progress over the window.
    pub progress: Progress,
    /// Share of cycles stalled on memory (hardware counters), 0..1.
    pub mem_stall_share: Option<f64>,
}

/// A snapshot written without `cpu_measured` came from a caller that
/// measured every process's placement (the simulator, tests).
fn measured_by_default() -> bool {
    true
}

impl ProcInfo {
    /// Total bytes in `mem_per_node` (falls back to RSS when empty).
    pub fn mem_total(&self) -> u64 {
        let s: u64 = self.mem_per_node.values().sum();
        if s == 0 {
            self.rss_bytes
        } else {
            s
        }
    }
}

/// One scan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    /// Seconds on a clock that survives restarts (wall clock for the daemon,
    /// simulated time for the simulator).
    pub time_s: f64,
    /// Per node, in any order.
    pub nodes: Vec<NodeState>,
    /// Processes, in any order.
    pub procs: Vec<ProcInfo>,
    /// Processes seen at the previous scan that have exited since (their
    /// pid is gone or now names a process started later), in any order.
    /// Empty when the collector cannot tell (its first scan): a process
    /// that only left the candidates (went idle, shrank) is not here. The
    /// decision learns each command's run times from it.
    #[serde(default)]
    pub exited: Vec<i32>,
}
