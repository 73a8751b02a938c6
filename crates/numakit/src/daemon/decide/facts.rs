//! What the decision knows of one process: where its threads run and its
//! memory is, what it needs (CPU use plus run-queue wait), what it holds
//! bound, its memory stall share, and whether it is excluded or restricted.

use super::view::View;
use crate::daemon::config::Config;
use crate::daemon::machine::{NodePos, PerNode};
use crate::daemon::snapshot::ProcInfo;

/// Per-process facts used by the evaluation.
pub(super) struct Facts {
    pub(super) pid: i32,
    pub(super) c: PerNode<f64>,
    pub(super) own_cpu: PerNode<f64>,
    pub(super) mem: PerNode<f64>,
    pub(super) ratio_now: f64,
    pub(super) locality: f64,
    pub(super) q: f64,
    pub(super) measured: bool,
    pub(super) allowed: Vec<NodePos>,
    pub(super) own_bound: PerNode<f64>,
    /// `own_bound` when numakit placed the process, else zeros.
    pub(super) own_ours: PerNode<f64>,
    /// Memory growth, bytes per second (0 until seen twice).
    pub(super) growth: f64,
    /// Its memory, bytes (as the book counts it).
    pub(super) mem_total: f64,
    /// Its expected remaining run time, seconds (set by the scan from the
    /// history: [`horizon`](super::horizon::horizon)); the age until then.
    pub(super) horizon: f64,
    /// The ended runs of its command name that made `horizon` shorter than
    /// its age (0: the age).
    pub(super) horizon_runs: u32,
}

pub(super) fn speedup(q: f64, ratio_now: f64, ratio_after: f64) -> f64 {
    let t = (1.0 - q) + q * ratio_after / ratio_now;
    if t > 0.0 {
        1.0 / t - 1.0
    } else {
        0.0
    }
}

/// The CPUs a process needs: what it used over the window plus what its
/// threads waited for a CPU (a busy thread sharing a CPU with another uses
/// half a CPU and needs a whole one; counting only its use, three such
/// threads on a node of two CPUs look like they fit it), at most one per
/// thread. Tick accounting over a short window can read slightly above
/// what its threads can use (1.013 CPUs for one busy thread in a
/// test-bed guest), which must not make a one-thread process "larger than
/// a node" of one CPU and send it to a group of nodes.
///
/// A single-threaded process busy for at least half the window needs a
/// whole CPU: its one thread is either mostly idle or a CPU's worth of
/// work, and a busy thread's CPU time can read low in a virtual machine
/// whose hypervisor takes time the guest does not see as stolen (a busy
/// loop reads 0.6 to 0.9 CPU in a test-bed guest on a loaded host; by
/// those readings three fit a node of two CPUs).
pub(super) fn demand(p: &ProcInfo, cfg: &Config) -> f64 {
    let busy = p.cpu_use + p.cpu_wait.max(0.0);
    if p.threads <= 1 && busy >= cfg.busy_thread_cpu {
        return 1.0;
    }
    busy.clamp(0.0, f64::from(p.threads.max(1)))
}

pub(super) fn is_restricted(v: &View, p: &ProcInfo) -> bool {
    if p.cpuset.is_empty() {
        !v.all_cpu.is_subset(&p.affinity)
    } else {
        !p.cpuset.intersection(&v.all_cpu).is_subset(&p.affinity)
    }
}

/// What a restricted process holds on each node: its need (not only what
/// it got), on the nodes it may run on, shared as its threads ran there
/// over the window. Only its affinity's nodes: a process bound during the
/// window ran partly elsewhere, and counting that part where it ran would
/// leave half its load off the node it is now bound to.
pub(super) fn held(v: &View, p: &ProcInfo, own_cpu: &PerNode<f64>, cfg: &Config, booked: f64) -> PerNode<f64> {
    let nodes = v.idx(&p.affinity);
    let need = demand(p, cfg).max(booked);
    let ran: f64 = nodes.iter().map(|&a| own_cpu[a]).sum();
    let cap: f64 = nodes.iter().map(|&a| v.cpus(a)).sum();
    let mut out = v.zeros();
    for &a in &nodes {
        out[a] = match (ran > 1e-9, cap > 0.0) {
            (true, _) => need * own_cpu[a] / ran,
            (false, true) => need * v.cpus(a) / cap,
            _ => 0.0,
        };
    }
    out
}

/// `booked`: the CPUs numakit's unjudged placement of it was booked for
/// (0 for others), the least it holds.
pub(super) fn facts(v: &View, p: &ProcInfo, cfg: &Config, ours: bool, booked: f64) -> Facts {
    let own_cpu = v.by_id(p.cpu_per_node.iter().map(|(k, x)| (*k, *x)));
    let mut c = own_cpu.clone();
    if c.iter().sum::<f64>() <= 0.0 {
        for i in v.idx(&p.affinity) {
            c[i] = v.cpus(i);
        }
    }
    let mem = v.by_id(p.mem_per_node.iter().map(|(k, x)| (*k, *x as f64)));
    let scope = if p.cpuset.is_empty() { v.all_cpu.clone() } else { p.cpuset.intersection(&v.all_cpu) };
    let own_bound = if is_restricted(v, p) { held(v, p, &own_cpu, cfg, booked) } else { v.zeros() };
    let (q, measured) = match p.mem_stall_share {
        Some(q) if q.is_finite() => (q.clamp(0.0, cfg.max_stall_share), true),
        _ => (cfg.default_stall_share, false),
    };
    Facts {
        pid: p.pid,
        ratio_now: v.ratio(&c, &mem),
        locality: v.locality(&c, &mem),
        c,
        own_cpu,
        mem,
        q,
        measured,
        allowed: v.idx(&scope),
        own_ours: if ours { own_bound.clone() } else { v.zeros() },
        own_bound,
        growth: 0.0,
        mem_total: p.mem_total() as f64,
        horizon: p.age_s.clamp(0.0, cfg.max_horizon_s.max(0.0)),
        horizon_runs: 0,
    }
}

pub(super) fn excluded(p: &ProcInfo, cfg: &Config) -> Option<String> {
    if cfg.exclude_pids.contains(&p.pid) {
        return Some(format!("pid {}", p.pid));
    }
    if cfg.exclude_comms.iter().any(|c| c == &p.comm) {
        return Some(format!("command name {}", p.comm));
    }
    if let Some(c) = cfg
        .exclude_cgroups
        .iter()
        .find(|c| p.cgroup == **c || p.cgroup.starts_with(&format!("{}/", c.trim_end_matches('/'))))
    {
        return Some(format!("cgroup {c}"));
    }
    if cfg.exclude_uids.contains(&p.uid) {
        return Some(format!("uid {}", p.uid));
    }
    None
}

pub(super) fn main_node(v: &View, p: &ProcInfo) -> Option<u32> {
    p.cpu_per_node
        .iter()
        .filter(|(id, x)| **x > 0.0 && v.m.index(**id).is_some())
        .max_by(|a, b| a.1.total_cmp(b.1).then(b.0.cmp(a.0)))
        .map(|(id, _)| *id)
}

/// Large enough to be a candidate: numad's thresholds (`min_cpu`,
/// `min_rss_bytes`).
pub(super) fn big(p: &ProcInfo, cfg: &Config) -> bool {
    p.cpu_use >= cfg.min_cpu && p.rss_bytes >= cfg.min_rss_bytes
}
