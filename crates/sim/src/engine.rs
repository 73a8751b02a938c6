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

use std::collections::BTreeMap;

use numakit::daemon::{ActionKind, MemPolicy, NodeState, ProcInfo, Progress, Snapshot};
use numakit::sets::NodeSet;
use serde::Serialize;

use super::action::SimAction;
use super::cost::CostModel;
use super::machines::SimMachine;
use super::policy::{Policy, Start, StartView};
use super::rng::Rng;
use super::workload::{JobSpec, Workload};

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

    fn load(&mut self) {
        self.r.iter_mut().for_each(|x| *x = 0);
        for j in &self.jobs {
            for (a, &k) in j.t_on.iter().enumerate() {
                self.r[a] += k;
            }
        }
    }

    fn idlest(&mut self, mask: u64, rng_pick: bool) -> Option<usize> {
        let mut best: Vec<usize> = Vec::new();
        let mut best_idle = f64::NEG_INFINITY;
        for a in bits(mask & self.cpu_nodes) {
            let idle = self.cpus[a] - f64::from(self.r[a]);
            if idle > best_idle + 1e-9 {
                best_idle = idle;
                best.clear();
                best.push(a);
            } else if (idle - best_idle).abs() <= 1e-9 {
                best.push(a);
            }
        }
        if best.is_empty() {
            return None;
        }
        Some(if rng_pick { best[self.rng.below(best.len())] } else { best[0] })
    }

    fn start_jobs(&mut self, policy: &mut dyn Policy) {
        let total: u32 = self.m.total_cpus();
        loop {
            let running: u32 = self.jobs.iter().map(Job::threads).sum();
            let Some(spec) = self.wl.next_job(self.next) else { break };
            if running + spec.threads > total {
                break;
            }
            self.next += 1;
            self.load();
            let all = self.cpu_nodes;
            let (mask, pol, owner) = if spec.owner_pin {
                let a = self.idlest(all, false).unwrap_or(0);
                (1u64 << a, Pol::Prefer(1u64 << self.home[a]), true)
            } else {
                let view = self.start_view();
                match policy.on_start(&view, &spec) {
                    Some(Start { cpu_mask, pol }) if cpu_mask & all != 0 => (cpu_mask & all, pol, false),
                    _ => (all, Pol::Default, false),
                }
            };
            let pid = 1000 + spec.index as i32;
            if self.trace {
                self.out.trace.push(TraceEvent::Start {
                    t_s: self.t,
                    pid,
                    comm: spec.comm,
                    threads: spec.threads,
                    mem_gib: spec.mem_bytes / (1u64 << 30) as f64,
                    cpu_nodes: bits(mask).map(|i| self.m.id(i)).collect(),
                    owner_pinned: owner,
                });
            }
            let mut t_on = vec![0u32; self.n];
            for _ in 0..spec.threads {
                if let Some(a) = self.idlest(mask, true) {
                    t_on[a] += 1;
                    self.r[a] += 1;
                }
            }
            let s = self.cost.stall_share(spec.remote_slowdown);
            self.jobs.push(Job {
                pid,
                start: self.t,
                t_on,
                mem: vec![0.0; self.n],
                alloc: 0.0,
                mask,
                pol,
                owner_pinned: owner,
                s,
                bw: s * self.cost.bw_per_stall_gbs,
                work: 0.0,
                debt: 0.0,
                speed: 1.0,
                rng: Rng::stream(self.wl.seed ^ 0xD41F7, spec.index as u64),
                w_cpu: 0.0,
                w_wait: 0.0,
                w_work: 0.0,
                w_meff: 0.0,
                w_time: 0.0,
                w_node: vec![0.0; self.n],
                an_period: 1.0,
                an_pref: None,
                spec,
            });
        }
    }

    fn start_view(&self) -> StartView {
        let mut bound_threads = vec![0u32; self.n];
        let mut bound_bw = vec![0.0; self.n];
        for j in &self.jobs {
            if j.mask != self.cpu_nodes {
                for (a, &k) in j.t_on.iter().enumerate() {
                    bound_threads[a] += k;
                    bound_bw[self.home[a]] += f64::from(k) * j.bw;
                }
            }
        }
        StartView {
            idle: (0..self.n).map(|a| self.cpus[a] - f64::from(self.r[a])).collect(),
            free_bytes: (0..self.n).map(|b| self.cap[b] - self.used[b]).collect(),
            bound_threads,
            bound_bw,
            home: self.home.clone(),
        }
    }

    fn move_thread(&mut self, j: usize, from: usize, to: usize) {
        self.jobs[j].t_on[from] -= 1;
        self.jobs[j].t_on[to] += 1;
        self.r[from] -= 1;
        self.r[to] += 1;
    }

    fn schedule(&mut self) {
        self.load();
        let dt = self.p.dt_s;
        let factor = if self.autonuma { self.p.autonuma_drift_factor } else { 1.0 };
        // Overload relief: threads leave nodes with more runnable threads than CPUs.
        for a in 0..self.n {
            while f64::from(self.r[a]) > self.cpus[a] {
                let mut cands: Vec<(usize, usize)> = Vec::new();
                for (ji, j) in self.jobs.iter().enumerate() {
                    if j.t_on[a] == 0 {
                        continue;
                    }
                    for b in bits(j.mask & self.cpu_nodes) {
                        if b != a && f64::from(self.r[b]) < self.cpus[b] {
                            cands.push((ji, b));
                        }
                    }
                }
                if cands.is_empty() {
                    break;
                }
                let pick = if self.autonuma {
                    cands.iter().copied().find(|&(ji, b)| self.jobs[ji].an_pref == Some(b))
                } else {
                    None
                };
                let (ji, b) = pick.unwrap_or_else(|| cands[self.rng.below(cands.len())]);
                self.move_thread(ji, a, b);
            }
        }
        // Drift.
        let p_idle = dt / self.p.drift_idle_s * factor;
        let p_swap = dt / self.p.drift_swap_s * factor;
        for ji in 0..self.jobs.len() {
            let mask = self.jobs[ji].mask & self.cpu_nodes;
            if mask.count_ones() < 2 {
                continue;
            }
            for a in 0..self.n {
                let k = self.jobs[ji].t_on[a];
                for _ in 0..k {
                    let (idle_draw, swap_draw) = {
                        let r = &mut self.jobs[ji].rng;
                        (r.unit(), r.unit())
                    };
                    if idle_draw < p_idle {
                        let others = mask & !(1u64 << a);
                        let free = bits(others).any(|b| f64::from(self.r[b]) < self.cpus[b]);
                        if free {
                            if let Some(b) = self.idlest(others, true) {
                                self.move_thread(ji, a, b);
                                break;
                            }
                        }
                    }
                    if swap_draw < p_swap {
                        let others: Vec<usize> = bits(mask & !(1u64 << a)).collect();
                        if others.is_empty() {
                            break;
                        }
                        let b = others[self.jobs[ji].rng.below(others.len())];
                        let partners: Vec<usize> = (0..self.jobs.len())
                            .filter(|&o| o != ji && self.jobs[o].t_on[b] > 0 && self.jobs[o].mask & (1u64 << a) != 0)
                            .collect();
                        if partners.is_empty() {
                            break;
                        }
                        let o = partners[self.jobs[ji].rng.below(partners.len())];
                        self.move_thread(ji, a, b);
                        self.move_thread(o, b, a);
                        break;
                    }
                }
            }
        }
        if self.autonuma {
            self.autonuma_tasks();
        }
    }

    /// Puts `bytes` of job `ji` first on `first` (if it has room), then in
    /// the kernel's fallback order from CPU node `a`.
    fn place(&mut self, ji: usize, mut bytes: f64, first: Option<usize>, a: usize) {
        for k in 0..=self.order[a].len() {
            let b = if k == 0 {
                match first {
                    Some(b) => b,
                    None => continue,
                }
            } else {
                self.order[a][k - 1]
            };
            if bytes <= 0.0 {
                break;
            }
            let room = (self.cap[b] - self.used[b]).max(0.0);
            let x = bytes.min(room);
            if x > 0.0 {
                self.used[b] += x;
                self.jobs[ji].mem[b] += x;
                self.jobs[ji].alloc += x;
                bytes -= x;
            }
        }
    }

    fn allocate(&mut self) {
        let dt = self.p.dt_s;
        for ji in 0..self.jobs.len() {
            let j = &self.jobs[ji];
            let left = j.spec.mem_bytes - j.alloc;
            if left <= 1.0 {
                continue;
            }
            let ramp = self.p.ramp_s.min(0.1 * j.spec.work_s).max(dt);
            let chunk = left.min(j.spec.mem_bytes * dt / ramp);
            let total = f64::from(j.threads().max(1));
            let pol = j.pol;
            for a in 0..self.n {
                let k = self.jobs[ji].t_on[a];
                if k == 0 {
                    continue;
                }
                let part = chunk * f64::from(k) / total;
                match pol {
                    Pol::Default => {
                        let h = self.home[a];
                        self.place(ji, part, Some(h), a);
                    }
                    Pol::Prefer(mask) => {
                        let first = self.order[a]
                            .iter()
                            .copied()
                            .find(|&b| mask & (1u64 << b) != 0 && self.cap[b] - self.used[b] > 0.0);
                        self.place(ji, part, first, a);
                    }
                    Pol::Interleave(mask) => {
                        let nodes: Vec<usize> = bits(mask).filter(|&b| b < self.n).collect();
                        let each = part / nodes.len().max(1) as f64;
                        for b in nodes {
                            self.place(ji, each, Some(b), a);
                        }
                    }
                }
            }
        }
    }

    // Several per-node arrays are indexed together here.
    #[allow(clippy::needless_range_loop)]
    fn progress(&mut self) {
        self.load();
        let dt = self.p.dt_s;
        let f: Vec<f64> = (0..self.n)
            .map(|a| if self.r[a] == 0 { 1.0 } else { (self.cpus[a] / f64::from(self.r[a])).min(1.0) })
            .collect();
        let mut demand = vec![0.0; self.n];
        for j in &self.jobs {
            if j.alloc <= 0.0 || j.bw <= 0.0 {
                continue;
            }
            for a in 0..self.n {
                if j.t_on[a] == 0 {
                    continue;
                }
                let act = f64::from(j.t_on[a]) * f[a] * j.speed * j.bw / j.alloc;
                for b in 0..self.n {
                    if j.mem[b] > 0.0 {
                        demand[b] += act * j.mem[b] / self.m.bw_ratio[a][b];
                    }
                }
            }
        }
        let cont: Vec<f64> = (0..self.n).map(|b| self.cost.contention(demand[b], self.m.bw_gbs[b])).collect();
        for j in &mut self.jobs {
            let mut act_total = 0.0;
            let mut meff = 0.0;
            for a in 0..self.n {
                if j.t_on[a] == 0 {
                    continue;
                }
                let act = f64::from(j.t_on[a]) * f[a];
                act_total += act;
                j.w_wait += f64::from(j.t_on[a]) * (1.0 - f[a]) * dt;
                j.w_node[a] += act * dt;
                if j.alloc > 0.0 {
                    let mut row = 0.0;
                    for b in 0..self.n {
                        if j.mem[b] > 0.0 {
                            row += j.mem[b] * self.m.latency[a][b] * cont[b];
                        }
                    }
                    meff += act * row / j.alloc;
                }
            }
            let m = if act_total > 0.0 && j.alloc > 0.0 { meff / act_total } else { 1.0 };
            let speed = self.cost.speed(j.s, m);
            let mut work = act_total * speed * dt;
            let lost = j.debt.min(dt);
            work *= 1.0 - lost / dt;
            j.debt -= lost;
            let left = (j.total_work() - j.work).max(0.0);
            work = work.min(left);
            j.work += work;
            j.speed = speed;
            j.w_cpu += act_total * dt;
            j.w_work += work;
            j.w_meff += m * dt;
            j.w_time += dt;
            self.out.work += work;
        }
    }

    fn record(&mut self, j: &Job, finished: bool) {
        let alive = self.t - j.start;
        if self.trace {
            let speed = j.work / (f64::from(j.threads().max(1)) * alive.max(1e-9));
            self.out.trace.push(TraceEvent::End { t_s: self.t, pid: j.pid, finished, speed });
        }
        if alive >= 30.0 - 1e-9 {
            self.out.jobs.insert(
                j.spec.index,
                (JobOutcome { index: j.spec.index, work: j.work, alive_s: alive, finished }, j.threads()),
            );
        }
    }

    fn retire(&mut self) {
        let mut i = 0;
        while i < self.jobs.len() {
            if self.jobs[i].work >= self.jobs[i].total_work() - 1e-6 {
                let j = self.jobs.swap_remove(i);
                for b in 0..self.n {
                    self.used[b] = (self.used[b] - j.mem[b]).max(0.0);
                }
                self.record(&j, true);
            } else {
                i += 1;
            }
        }
    }

    fn migrate(&mut self, ji: usize, from: usize, to: usize, bytes: f64) -> f64 {
        if from == to || from >= self.n || to >= self.n {
            return 0.0;
        }
        let x = bytes.min(self.jobs[ji].mem[from]).min((self.cap[to] - self.used[to]).max(0.0));
        let x = (x / PAGE).floor() * PAGE;
        if x <= 0.0 {
            return 0.0;
        }
        let j = &mut self.jobs[ji];
        j.mem[from] -= x;
        j.mem[to] += x;
        self.used[from] -= x;
        self.used[to] += x;
        j.debt += self.cost.migrate_s(x);
        self.out.pages_migrated += (x / PAGE) as u64;
        x
    }

    fn mask_of(&self, set: &NodeSet) -> u64 {
        set.iter().filter_map(|id| self.m.index(id)).filter(|&i| i < 64).fold(0u64, |acc, i| acc | (1 << i))
    }

    fn pol_of(&self, p: &MemPolicy) -> Pol {
        match p {
            MemPolicy::Default | MemPolicy::Local => Pol::Default,
            MemPolicy::Preferred(s) | MemPolicy::Bind(s) => Pol::Prefer(self.mask_of(s)),
            MemPolicy::Interleave(s) => Pol::Interleave(self.mask_of(s)),
        }
    }

    fn set_mask(&mut self, ji: usize, mask: u64) {
        self.jobs[ji].mask = mask;
        self.load();
        for a in 0..self.n {
            while mask & (1u64 << a) == 0 && self.jobs[ji].t_on[a] > 0 {
                let Some(b) = self.idlest(mask, false) else { return };
                self.move_thread(ji, a, b);
            }
        }
    }

    /// Applies one action (the only way policies change anything).
    pub fn apply(&mut self, action: &SimAction) {
        let Some(ji) = self.jobs.iter().position(|j| j.pid == action.pid) else { return };
        match &action.kind {
            ActionKind::Bind { cpu_nodes, mem_nodes } => {
                let mask = self.mask_of(cpu_nodes) & self.cpu_nodes;
                if mask == 0 {
                    return;
                }
                self.set_mask(ji, mask);
                if !mem_nodes.is_empty() {
                    self.jobs[ji].pol = Pol::Prefer(self.mask_of(mem_nodes));
                }
                self.out.binds += 1;
            }
            ActionKind::Migrate { from, to, pages } => {
                if let (Some(a), Some(b)) = (self.m.index(*from), self.m.index(*to)) {
                    self.migrate(ji, a, b, *pages as f64 * PAGE);
                }
            }
            ActionKind::Revert { cpu_nodes, mem_policy } => {
                let mut mask = self.mask_of(cpu_nodes) & self.cpu_nodes;
                if mask == 0 {
                    mask = self.cpu_nodes;
                }
                self.set_mask(ji, mask);
                self.jobs[ji].pol = self.pol_of(mem_policy);
                self.out.reverts += 1;
            }
            ActionKind::Keep => {}
        }
    }

    fn ids(&self, mask: u64) -> NodeSet {
        bits(mask).filter(|&i| i < self.n).map(|i| self.m.id(i)).collect()
    }

    /// What a collector would read now; resets the measurement window.
    pub fn snapshot(&mut self) -> Snapshot {
        self.load();
        let nodes = (0..self.n)
            .map(|a| NodeState {
                id: self.m.id(a),
                free_cpus: (self.cpus[a] - f64::from(self.r[a])).max(0.0),
                free_bytes: (self.cap[a] - self.used[a]).max(0.0) as u64,
                // Every job is listed, pinned ones with their affinity.
                bound_cpus: 0.0,
            })
            .collect();
        let mut procs = Vec::with_capacity(self.jobs.len());
        for ji in 0..self.jobs.len() {
            let noise = if self.p.counters { 1.0 + self.p.counter_noise * self.jobs[ji].rng.normal() } else { 1.0 };
            let j = &self.jobs[ji];
            if j.alloc <= 0.0 || j.w_time <= 0.0 {
                continue;
            }
            let wt = j.w_time;
            let sm = self.m;
            let pol = match j.pol {
                Pol::Default => MemPolicy::Default,
                Pol::Prefer(m) => MemPolicy::Preferred(self.ids(m)),
                Pol::Interleave(m) => MemPolicy::Interleave(self.ids(m)),
            };
            let m = j.w_meff / wt;
            procs.push(ProcInfo {
                pid: j.pid,
                comm: j.spec.comm.to_string(),
                uid: 1000,
                cgroup: format!("/batch.slice/job{}", j.spec.index),
                threads: j.threads(),
                cpu_use: j.w_cpu / wt,
                cpu_wait: j.w_wait / wt,
                rss_bytes: j.alloc as u64,
                mem_per_node: (0..self.n).filter(|&b| j.mem[b] >= PAGE).map(|b| (sm.id(b), j.mem[b] as u64)).collect(),
                cpu_per_node: (0..self.n)
                    .filter(|&a| j.w_node[a] > 0.0)
                    .map(|a| (sm.id(a), j.w_node[a] / wt))
                    .collect(),
                // The model knows where every thread ran all along.
                cpu_measured: true,
                affinity: self.ids(j.mask),
                cpuset: NodeSet::new(),
                mem_policy: pol,
                owner_pinned: j.owner_pinned,
                age_s: self.t - j.start,
                progress: Progress { cpu_rate: j.w_cpu / wt, instr_rate: self.p.counters.then(|| j.w_work / wt) },
                mem_stall_share: self
                    .p
                    .counters
                    .then(|| (self.cost.observed_stall(j.s, m) * noise.max(0.0)).clamp(0.0, 1.0)),
            });
        }
        for j in &mut self.jobs {
            j.w_cpu = 0.0;
            j.w_wait = 0.0;
            j.w_work = 0.0;
            j.w_meff = 0.0;
            j.w_time = 0.0;
            j.w_node.iter_mut().for_each(|x| *x = 0.0);
        }
        let mut shown: Vec<i32> = procs.iter().map(|p| p.pid).collect();
        shown.sort_unstable();
        // Jobs get pids never used before, so a pid no longer shown exited.
        let exited = self.shown.iter().filter(|pid| shown.binary_search(pid).is_err()).copied().collect();
        self.shown = shown;
        Snapshot { time_s: self.t, nodes, procs, exited }
    }

    /// AutoNUMA task placement: each job's preferred node is the CPU node
    /// whose memory holds most of its pages; a thread elsewhere moves there
    /// when a CPU is idle, or swaps with a thread that prefers elsewhere.
    fn autonuma_tasks(&mut self) {
        for ji in 0..self.jobs.len() {
            let j = &self.jobs[ji];
            if j.alloc <= 0.0 {
                continue;
            }
            let mask = j.mask & self.cpu_nodes;
            let pref = bits(mask).max_by(|&x, &y| {
                j.mem[self.home[x]].total_cmp(&j.mem[self.home[y]]).then(j.t_on[x].cmp(&j.t_on[y])).then(y.cmp(&x))
            });
            self.jobs[ji].an_pref = pref;
            let Some(p) = pref else { continue };
            // Groups larger than their preferred node stay spread.
            if f64::from(self.jobs[ji].threads()) > self.cpus[p] {
                continue;
            }
            let Some(a) = (0..self.n).find(|&a| a != p && self.jobs[ji].t_on[a] > 0) else { continue };
            if f64::from(self.r[p]) < self.cpus[p] {
                self.move_thread(ji, a, p);
                continue;
            }
            let partner = (0..self.jobs.len()).find(|&o| {
                o != ji
                    && self.jobs[o].t_on[p] > 0
                    && self.jobs[o].mask & (1u64 << a) != 0
                    && self.jobs[o].an_pref != Some(p)
                    && f64::from(self.jobs[o].threads()) <= self.cpus[p]
            });
            if let Some(o) = partner {
                self.move_thread(ji, a, p);
                self.move_thread(o, p, a);
            }
        }
    }

    /// AutoNUMA scanning: hinting faults on a share of each job's memory per
    /// step (rate between its size per 60 s and per 1 s, at most 256 MB/s),
    /// each costing time; faulted pages outside the nodes its threads run
    /// on migrate to them (pseudo-interleave: pages already on any active
    /// node of a spread job stay).
    fn autonuma_scan(&mut self) {
        let dt = self.p.dt_s;
        for ji in 0..self.jobs.len() {
            let (alloc, period) = (self.jobs[ji].alloc, self.jobs[ji].an_period);
            if alloc <= 0.0 {
                continue;
            }
            let scanned = (alloc / period).min(256.0 * 1024.0 * 1024.0) * dt;
            let scanned = scanned.min(alloc);
            self.jobs[ji].debt += scanned / GIB * self.cost.hint_fault_s_per_gib;
            let t_on = self.jobs[ji].t_on.clone();
            let total: f64 = t_on.iter().map(|&k| f64::from(k)).sum();
            if total <= 0.0 {
                continue;
            }
            let maxk = t_on.iter().copied().max().unwrap_or(0);
            let active: Vec<usize> = (0..self.n).filter(|&a| t_on[a] > 0 && 3 * t_on[a] >= maxk).collect();
            let mut active_mem: Vec<usize> = active.iter().map(|&a| self.home[a]).collect();
            active_mem.sort_unstable();
            active_mem.dedup();
            let local: f64 = (0..self.n)
                .filter(|&a| t_on[a] > 0)
                .map(|a| f64::from(t_on[a]) / total * self.jobs[ji].mem[self.home[a]] / alloc)
                .sum();
            let act_total: f64 = active.iter().map(|&a| f64::from(t_on[a])).sum();
            for b in 0..self.n {
                let mb = self.jobs[ji].mem[b];
                if mb <= 0.0 || active_mem.contains(&b) {
                    continue;
                }
                let faulted = scanned * mb / alloc;
                for &a in &active {
                    let share = f64::from(t_on[a]) / act_total;
                    let to = self.home[a];
                    self.migrate(ji, b, to, faulted * share);
                }
            }
            let j = &mut self.jobs[ji];
            j.an_period = if local >= 0.7 { (period * 2.0).min(60.0) } else { (period / 2.0).max(1.0) };
        }
    }
}
