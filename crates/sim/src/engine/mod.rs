//! The simulation engine: simulated time in fixed steps (no sleeping), a
//! batch queue that starts the next job whenever its threads fit the free
//! CPUs, a scheduler with drift, first-touch memory allocation with the
//! kernel's fallback order, the cost model, the kernel's automatic NUMA
//! balancing when a policy asks for it, and the one applier of
//! [`SimAction`]s every policy goes through.
//!
//! Each step: start jobs → schedule threads (overload relief, drift,
//! AutoNUMA task placement) → allocate memory → compute each job's speed
//! from CPU share, access ratios and bandwidth contention → retire finished
//! jobs → AutoNUMA scan → the policy's scan, when due, on a [`Snapshot`].
//!
//! The engine's rooms, each an `impl Engine` of its own: `queue` (jobs
//! start and retire), `schedule` (threads: overload relief, drift),
//! `alloc` (first-touch allocation), `speed` (the cost model applied: each
//! job's progress in a step), `autonuma` (the kernel's balancing as
//! modelled), `apply` (the one applier of actions), `snapshot` (what a
//! collector would read); `outcome` holds the results. This file holds the
//! state and the step loop.

mod alloc;
mod apply;
mod autonuma;
mod outcome;
mod queue;
mod schedule;
mod snapshot;
mod speed;

use std::collections::BTreeMap;

use serde::Serialize;

use super::cost::CostModel;
use super::machines::SimMachine;
use super::policy::Policy;
use super::rng::Rng;
use super::workload::{JobSpec, Workload};

pub use outcome::{JobOutcome, RunOutcome, TraceEvent};

const GIB: f64 = (1u64 << 30) as f64;
const PAGE: f64 = 4096.0;

/// Parameters of the simulation that are not the cost model. The drift
/// rates are assumptions (no published figure was found); see
/// docs/simulate.md.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SimParams {
    /// Step, seconds.
    pub dt_s: f64,
    /// Mean time between moves of a thread to a node with an idle CPU,
    /// when one exists (wake-up balancing), seconds.
    pub drift_idle_s: f64,
    /// Mean time between swaps of a thread with one on another node in a
    /// full machine (periodic load balancing), seconds.
    pub drift_swap_s: f64,
    /// Factor on drift with AutoNUMA on (its balancer resists moves that
    /// degrade locality).
    pub autonuma_drift_factor: f64,
    /// Memory is first touched over this long (or 10 % of the run).
    pub ramp_s: f64,
    /// Whether hardware counters are available (stall share, instructions).
    pub counters: bool,
    /// Relative noise of the measured stall share.
    pub counter_noise: f64,
    /// Share of each node's memory the system keeps for itself.
    pub mem_reserve: f64,
}

impl Default for SimParams {
    fn default() -> Self {
        Self {
            dt_s: 5.0,
            drift_idle_s: 600.0,
            drift_swap_s: 3600.0,
            autonuma_drift_factor: 0.25,
            ramp_s: 120.0,
            counters: true,
            counter_noise: 0.1,
            mem_reserve: 0.05,
        }
    }
}

/// A memory policy as the engine applies it (node index masks).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pol {
    /// First touch.
    Default,
    /// Preferred on these nodes (nearest by SLIT first), then fallback.
    Prefer(u64),
    /// Round robin over these nodes.
    Interleave(u64),
}

struct Job {
    spec: JobSpec,
    pid: i32,
    start: f64,
    t_on: Vec<u32>,
    mem: Vec<f64>,
    alloc: f64,
    mask: u64,
    pol: Pol,
    owner_pinned: bool,
    s: f64,
    bw: f64,
    work: f64,
    debt: f64,
    speed: f64,
    rng: Rng,
    w_cpu: f64,
    /// Thread time runnable but waiting for a CPU (over-subscribed nodes).
    w_wait: f64,
    w_work: f64,
    w_meff: f64,
    w_time: f64,
    w_node: Vec<f64>,
    an_period: f64,
    an_pref: Option<usize>,
}

impl Job {
    fn threads(&self) -> u32 {
        self.spec.threads
    }
    fn total_work(&self) -> f64 {
        self.spec.work_s * f64::from(self.spec.threads)
    }
}

/// The engine.
pub struct Engine<'a> {
    m: &'a SimMachine,
    cost: &'a CostModel,
    p: &'a SimParams,
    wl: &'a Workload,
    n: usize,
    cpus: Vec<f64>,
    cap: Vec<f64>,
    used: Vec<f64>,
    order: Vec<Vec<usize>>,
    home: Vec<usize>,
    cpu_nodes: u64,
    jobs: Vec<Job>,
    next: usize,
    t: f64,
    rng: Rng,
    autonuma: bool,
    out: RunOutcome,
    r: Vec<u32>,
    trace: bool,
    /// The pids the last snapshot showed (sorted), to tell which exited.
    shown: Vec<i32>,
}

/// The set bits of a node mask, lowest first.
fn bits(mut mask: u64) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        if mask == 0 {
            return None;
        }
        let i = mask.trailing_zeros() as usize;
        mask &= mask - 1;
        Some(i)
    })
}

impl<'a> Engine<'a> {
    /// A fresh engine for a machine and a workload.
    pub fn new(m: &'a SimMachine, wl: &'a Workload, cost: &'a CostModel, p: &'a SimParams, seed: u64) -> Self {
        let n = m.len();
        let cpus: Vec<f64> = (0..n).map(|i| f64::from(m.cpus(i))).collect();
        let cap: Vec<f64> = m.model.nodes.iter().map(|x| x.mem_bytes as f64 * (1.0 - p.mem_reserve)).collect();
        let order: Vec<Vec<usize>> = (0..n)
            .map(|a| {
                let mut v: Vec<usize> = (0..n).filter(|&b| cap[b] > 0.0).collect();
                v.sort_by_key(|&b| (m.distance(a, b), b));
                v
            })
            .collect();
        let home = order.iter().map(|o| o.first().copied().unwrap_or(0)).collect();
        let cpu_nodes = (0..n).filter(|&i| cpus[i] > 0.0).fold(0u64, |acc, i| acc | (1 << i));
        Self {
            m,
            cost,
            p,
            wl,
            n,
            cpus,
            cap,
            used: vec![0.0; n],
            order,
            home,
            cpu_nodes,
            jobs: Vec::new(),
            next: 0,
            t: 0.0,
            rng: Rng::stream(seed, 0x5C4ED),
            autonuma: false,
            out: RunOutcome {
                work: 0.0,
                horizon_s: 0.0,
                pages_migrated: 0,
                binds: 0,
                reverts: 0,
                jobs: BTreeMap::new(),
                trace: Vec::new(),
            },
            r: vec![0; n],
            trace: false,
            shown: Vec::new(),
        }
    }

    /// The same engine, recording every job start and end, every applied
    /// action and the work rate of every minute in
    /// [`RunOutcome::trace`]. Tracing changes no result.
    pub fn traced(mut self) -> Self {
        self.trace = true;
        self
    }

    /// Runs a policy for `horizon_s` simulated seconds.
    pub fn run(mut self, policy: &mut dyn Policy, horizon_s: f64) -> RunOutcome {
        self.autonuma = policy.autonuma();
        let dt = self.p.dt_s;
        let mut next_tick = policy.interval_s();
        let mut minute = (0.0, 0.0);
        while self.t < horizon_s - 1e-9 {
            self.start_jobs(policy);
            self.schedule();
            self.allocate();
            self.progress();
            self.t += dt;
            if self.trace && self.t - minute.0 >= 60.0 - 1e-9 {
                let work_per_s = (self.out.work - minute.1) / (self.t - minute.0);
                self.out.trace.push(TraceEvent::Rate { t_s: self.t, work_per_s });
                minute = (self.t, self.out.work);
            }
            self.retire();
            if self.autonuma {
                self.autonuma_scan();
            }
            if let Some(at) = next_tick {
                if self.t + 1e-9 >= at {
                    let snap = self.snapshot();
                    let actions = policy.tick(&self.m.model, &snap);
                    for a in &actions {
                        if self.trace {
                            self.out.trace.push(TraceEvent::Action { t_s: self.t, action: a.clone() });
                        }
                        self.apply(a);
                    }
                    next_tick = policy.interval_s().map(|i| self.t + i);
                }
            }
        }
        for j in std::mem::take(&mut self.jobs) {
            self.record(&j, false);
        }
        self.out.horizon_s = horizon_s;
        self.out
    }
}
