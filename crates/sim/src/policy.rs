//! Placement policies, all driven by the engine through one interface:
//! a policy may place a job when it starts ([`Policy::on_start`], what a
//! job wrapper can do) and, every [`Policy::interval_s`], turns a
//! [`Snapshot`] into [`SimAction`]s ([`Policy::tick`], what a daemon
//! can do). AutoNUMA is kernel behaviour: [`Policy::autonuma`] turns on the
//! engine's model of it, whose page moves go through the same applier.
//!
//! * [`Untuned`]: nothing (first touch, scheduler drift);
//! * [`StaticBind`]: `numakit run --auto` at job start ([`place::auto`]),
//!   never moved;
//! * [`Numad`](super::numad::Numad): numad's published algorithm;
//! * [`AutoNuma`]: the kernel's automatic NUMA balancing;
//! * [`Numakit`]: numakit's daemon core ([`daemon::decide`]);
//! * [`Oracle`]: the best static placement, knowing each job's memory
//!   intensity in advance.
//!
//! [`place::auto`]: numakit::place::auto
//! [`daemon::decide`]: numakit::daemon::decide

use numakit::daemon::{decide, Action, Config, History, Machine, NodePos, Snapshot};
use numakit::place::auto::{self, AutoRequest, NodeLoad};
use numakit::place::MemMode;
use numakit::sets::{CpuSet, NodeSet};
use numakit::topo::{Allowed, Node, NodeMemory, Source, Topology};

use super::action::SimAction;
use super::cost::CostModel;
use super::engine::Pol;
use super::machines::SimMachine;
use super::workload::JobSpec;

/// What a policy sees when a job starts (by node index).
#[derive(Debug, Clone, PartialEq)]
pub struct StartView {
    /// Idle CPUs.
    pub idle: Vec<f64>,
    /// Free memory, bytes.
    pub free_bytes: Vec<f64>,
    /// Threads bound (restricted affinity) on each node.
    pub bound_threads: Vec<u32>,
    /// Bandwidth demand of bound threads on each memory node, GB/s.
    pub bound_bw: Vec<f64>,
    /// Each node's local memory node (by firmware distance).
    pub home: Vec<usize>,
}

/// A placement at start: CPU node mask and memory policy (node indexes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Start {
    /// CPU nodes (bit per node index).
    pub cpu_mask: u64,
    /// Memory policy.
    pub pol: Pol,
}

/// A placement policy.
pub trait Policy {
    /// Its name in reports.
    fn name(&self) -> &'static str;
    /// Whether the kernel's automatic NUMA balancing is on.
    fn autonuma(&self) -> bool {
        false
    }
    /// Placement when a job starts (`None`: the kernel's default).
    fn on_start(&mut self, _view: &StartView, _job: &JobSpec) -> Option<Start> {
        None
    }
    /// Seconds until the next scan (`None`: never).
    fn interval_s(&mut self) -> Option<f64> {
        None
    }
    /// One scan.
    fn tick(&mut self, _machine: &Machine, _snap: &Snapshot) -> Vec<SimAction> {
        Vec::new()
    }
}

/// No placement at all.
#[derive(Debug, Default)]
pub struct Untuned;

impl Policy for Untuned {
    fn name(&self) -> &'static str {
        "untuned"
    }
}

/// Kernel automatic NUMA balancing (`kernel.numa_balancing=1`).
#[derive(Debug, Default)]
pub struct AutoNuma;

impl Policy for AutoNuma {
    fn name(&self) -> &'static str {
        "autonuma"
    }
    fn autonuma(&self) -> bool {
        true
    }
}

/// numakit's daemon core, with its history kept between scans.
#[derive(Debug, Default)]
pub struct Numakit {
    /// Configuration.
    pub config: Config,
    /// History (persisted by a real daemon).
    pub history: History,
}

impl Policy for Numakit {
    fn name(&self) -> &'static str {
        "numakit"
    }
    fn interval_s(&mut self) -> Option<f64> {
        Some(self.config.interval_s)
    }
    fn tick(&mut self, machine: &Machine, snap: &Snapshot) -> Vec<SimAction> {
        let d = decide(machine, snap, &self.config, &self.history);
        self.history = d.history;
        d.actions.into_iter().filter(Action::changes).map(SimAction::from).collect()
    }
}

/// `numakit run --auto` at every job start: the same [`place::auto`] rules
/// on a topology built from the simulated machine.
///
/// [`place::auto`]: numakit::place::auto
#[derive(Debug)]
pub struct StaticBind {
    topo: Topology,
    first_cpu: Vec<u32>,
}

impl StaticBind {
    /// For a machine.
    pub fn new(m: &SimMachine) -> Self {
        let mut first_cpu = Vec::new();
        let mut next = 0u32;
        let mut nodes = Vec::new();
        for (i, n) in m.model.nodes.iter().enumerate() {
            first_cpu.push(next);
            let cpus: CpuSet = (next..next + n.cpus).collect();
            next += n.cpus;
            nodes.push(Node {
                id: n.id,
                cpus,
                memory: (n.mem_bytes > 0).then_some(NodeMemory {
                    total_bytes: n.mem_bytes,
                    free_bytes: None,
                    used_bytes: None,
                    inactive_file_bytes: None,
                }),
                hugepages: Vec::new(),
                has_cpu: n.cpus > 0,
                has_memory: n.mem_bytes > 0,
                online: true,
                generic_initiator: false,
                distances: m.model.distances[NodePos(i)].iter().copied().collect(),
                access: Vec::new(),
                memory_tier: None,
            });
        }
        let all: CpuSet = (0..next).collect();
        let ids: NodeSet = m.model.nodes.iter().map(|n| n.id).collect();
        let topo = Topology {
            source: Source { sysroot: "(simulated)".into(), live: false },
            possible_cpus: all.clone(),
            online_cpus: all.clone(),
            online_file: true,
            offline_cpus: CpuSet::new(),
            nodes,
            distances: m.model.distances.iter().map(|row| row.iter().copied().collect()).collect(),
            has_distances: true,
            cpus: Vec::new(),
            packages: Vec::new(),
            caches: Vec::new(),
            pci_devices: Vec::new(),
            gpus: Vec::new(),
            allowed: Allowed { cpus: all, nodes: ids, from: "simulated".into() },
            memory_accounting: None,
            numa_info: true,
        };
        Self { topo, first_cpu }
    }

    fn mask(&self, nodes: &NodeSet) -> u64 {
        nodes.iter().filter_map(|id| self.topo.node_index(id)).filter(|&i| i < 64).fold(0u64, |acc, i| acc | (1 << i))
    }
}

impl Policy for StaticBind {
    fn name(&self) -> &'static str {
        "static"
    }
    fn on_start(&mut self, view: &StartView, job: &JobSpec) -> Option<Start> {
        let loads: Vec<NodeLoad> = self
            .topo
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let idle = view.idle[i].max(0.0).floor() as u32;
                let lo = self.first_cpu[i];
                NodeLoad {
                    node: n.id,
                    idle_cpus: (lo..lo + idle.min(n.cpus.len() as u32)).collect(),
                    free_bytes: view.free_bytes[i].max(0.0) as u64,
                    placed: 0,
                }
            })
            .collect();
        let req =
            AutoRequest { cpus: job.threads, mem_bytes: job.mem_bytes as u64, reserve: CpuSet::new(), near: None };
        let d = auto::decide(&self.topo, &loads, &req).ok()?;
        let cpu_mask = self.mask(&self.topo.nodes_of_cpus(d.plan.cpus.as_ref()?));
        let pol = match &d.plan.memory {
            Some(mp) if matches!(mp.mode, MemMode::Interleave | MemMode::WeightedInterleave) => {
                Pol::Interleave(self.mask(&mp.nodes))
            }
            Some(mp) => Pol::Prefer(self.mask(&mp.nodes)),
            None => Pol::Default,
        };
        Some(Start { cpu_mask, pol })
    }
}

/// The best static placement, knowing every job's memory intensity: at
/// start, the node (or nearest node group for jobs larger than a node) with
/// idle CPUs and room for bound threads that minimises the predicted time
/// with the bandwidth already demanded there; CPUs and memory bound, never
/// moved.
#[derive(Debug)]
pub struct Oracle {
    m: SimMachine,
    cost: CostModel,
}

impl Oracle {
    /// For a machine.
    pub fn new(m: &SimMachine, cost: &CostModel) -> Self {
        Self { m: m.clone(), cost: cost.clone() }
    }
}

impl Policy for Oracle {
    fn name(&self) -> &'static str {
        "oracle"
    }
    fn on_start(&mut self, view: &StartView, job: &JobSpec) -> Option<Start> {
        let n = self.m.len();
        let t = f64::from(job.threads);
        let s = self.cost.stall_share(job.remote_slowdown);
        let bw = s * self.cost.bw_per_stall_gbs * t;
        let cpus = |a: usize| f64::from(self.m.cpus(a));
        let score = |group: &[usize]| -> f64 {
            let mut homes: Vec<usize> = group.iter().map(|&a| view.home[a]).collect();
            homes.sort_unstable();
            homes.dedup();
            let free: f64 = homes.iter().map(|&h| view.free_bytes[h].max(0.0)).sum();
            let spill = if job.mem_bytes > 0.0 { ((job.mem_bytes - free) / job.mem_bytes).max(0.0) } else { 0.0 };
            let bwcap: f64 = homes.iter().map(|&h| self.m.bw_gbs[h]).sum();
            let load: f64 = homes.iter().map(|&h| view.bound_bw[h]).sum::<f64>() + bw;
            let cont = (load / bwcap.max(1e-9)).max(1.0);
            let mut lat = 0.0;
            for &a in group {
                for &h in &homes {
                    lat += self.m.latency[a][h];
                }
            }
            lat /= (group.len() * homes.len()) as f64;
            let far = 131.0 / 81.0;
            self.cost.time_factor(s, (lat * (1.0 - spill) + far * spill) * cont)
        };
        let fits = |group: &[usize]| {
            let idle: f64 = group.iter().map(|&a| view.idle[a].max(0.0)).sum();
            let room: f64 = group.iter().map(|&a| cpus(a) - f64::from(view.bound_threads[a])).sum();
            idle + 1e-9 >= t && room + 1e-9 >= t
        };
        let mut best: Option<(f64, Vec<usize>)> = None;
        let consider = |g: Vec<usize>, best: &mut Option<(f64, Vec<usize>)>| {
            if !fits(&g) {
                return;
            }
            let sc = score(&g) + 1e-6 * g.len() as f64;
            if best.as_ref().is_none_or(|b| sc < b.0 - 1e-12) {
                *best = Some((sc, g));
            }
        };
        let cpu_nodes: Vec<usize> = (0..n).filter(|&a| cpus(a) > 0.0).collect();
        for &a in &cpu_nodes {
            consider(vec![a], &mut best);
        }
        if best.is_none() {
            for &start in &cpu_nodes {
                let mut others: Vec<usize> = cpu_nodes.iter().copied().filter(|&o| o != start).collect();
                others.sort_by(|&x, &y| self.m.latency[start][x].total_cmp(&self.m.latency[start][y]).then(x.cmp(&y)));
                let mut g = vec![start];
                for o in others {
                    if fits(&g) {
                        break;
                    }
                    g.push(o);
                }
                g.sort_unstable();
                consider(g, &mut best);
            }
        }
        let (_, g) = best?;
        let cpu_mask = g.iter().fold(0u64, |acc, &a| acc | (1 << a));
        let mem_mask = g.iter().fold(0u64, |acc, &a| acc | (1 << view.home[a]));
        let pol = if g.len() > 1 { Pol::Interleave(mem_mask) } else { Pol::Prefer(mem_mask) };
        Some(Start { cpu_mask, pol })
    }
}
