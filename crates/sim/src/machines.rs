//! Simulated machines: what software sees (a [`Machine`]: nodes, firmware
//! distances, and the measured ratios `numakit bench` would report) and
//! the truth the simulator runs on (access-time ratios, bandwidth ratios,
//! each memory node's bandwidth).
//!
//! Named machines: a 2-socket Intel, a 4-socket ring, an 8-node AMD and a
//! tiered machine with a slow CPU-less memory node; random machines of 2 to
//! 32 nodes with uneven node sizes, memory-less CPU nodes and slow tiers.

use numakit::daemon::{Machine, MachineNode, NodePos};
use numakit::topo::synth::SynthMachine;
use serde::Serialize;

use super::rng::Rng;

const GIB: u64 = 1 << 30;

/// A machine with its truth.
#[derive(Debug, Clone, Serialize)]
pub struct SimMachine {
    /// Name.
    pub name: String,
    /// What software sees; `model.measured` holds what `numakit bench`
    /// measures (the true latency ratios).
    pub model: Machine,
    /// True access-time ratio CPU node `a` → memory node `b` (1.0 local).
    pub latency: Vec<Vec<f64>>,
    /// True bandwidth ratio `a` → `b` (1.0 local).
    pub bw_ratio: Vec<Vec<f64>>,
    /// Bandwidth of each memory node, GB/s.
    pub bw_gbs: Vec<f64>,
}

impl SimMachine {
    fn build(name: &str, model: Machine, latency: Vec<Vec<f64>>, bw_ratio: Vec<Vec<f64>>, bw_gbs: Vec<f64>) -> Self {
        let mut model = model;
        model.measured = Some(latency.iter().map(|row| row.iter().copied().collect()).collect());
        Self { name: name.into(), model, latency, bw_ratio, bw_gbs }
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.model.len()
    }

    /// Whether there are no nodes.
    pub fn is_empty(&self) -> bool {
        self.model.is_empty()
    }

    /// CPUs of node index `i`.
    pub fn cpus(&self, i: usize) -> u32 {
        self.model.nodes[NodePos(i)].cpus
    }

    /// Node id of node index `i` (the simulator's indexes are the model's
    /// node positions).
    pub fn id(&self, i: usize) -> u32 {
        self.model.id(NodePos(i))
    }

    /// Node index of node id `id`.
    pub fn index(&self, id: u32) -> Option<usize> {
        self.model.index(id).map(|p| p.0)
    }

    /// Firmware distance from node index `a` to `b`.
    pub fn distance(&self, a: usize, b: usize) -> u32 {
        self.model.distances[NodePos(a)][NodePos(b)]
    }

    /// Total CPUs.
    pub fn total_cpus(&self) -> u32 {
        self.model.nodes.iter().map(|n| n.cpus).sum()
    }

    /// 2-socket Intel Xeon: 2 × 16 cores (no SMT), 64 GiB per socket; SLIT
    /// 10/21; MLC: 1.62× latency, 0.47× bandwidth remote, 108 GB/s local.
    pub fn intel_2s() -> Self {
        let model = machine(vec![node(0, 16, 64), node(1, 16, 64)], vec![vec![10, 21], vec![21, 10]]);
        let l = 131.0 / 81.0;
        let b = 51.0 / 108.0;
        Self::build(
            "intel-2s",
            model,
            vec![vec![1.0, l], vec![l, 1.0]],
            vec![vec![1.0, b], vec![b, 1.0]],
            vec![108.0; 2],
        )
    }

    /// 4-socket ring (numakit's `SynthMachine::rr_4n` distances 10/20/30):
    /// 4 × 12 cores, 48 GiB per socket; one hop 1.6× / 0.47×, two hops
    /// 2.1× / 0.3×; 60 GB/s per node.
    pub fn intel_4s() -> Self {
        let s = SynthMachine::rr_4n(48, 48 * 1024);
        let model = from_synth(&s);
        let lat = model.distances.iter().map(|r| r.iter().map(|&d| hop(d, 1.6, 2.1)).collect()).collect();
        let bw = model.distances.iter().map(|r| r.iter().map(|&d| hop(d, 0.47, 0.3)).collect()).collect();
        Self::build("intel-4s", model, lat, bw, vec![60.0; 4])
    }

    /// 8-node AMD, two nodes per socket (`SynthMachine::amd_4s_8n`, SLIT
    /// 10/16/22): 8 × 8 cores, 32 GiB per node; measured 1.4× inside a
    /// socket and 1.9× across (the SLIT calibration would say 1.34 and
    /// 1.68); bandwidth 0.6× / 0.4×, 40 GB/s per node.
    pub fn amd_8n() -> Self {
        let s = SynthMachine::amd_4s_8n(8, 32 * 1024);
        let model = from_synth(&s);
        let lat = model.distances.iter().map(|r| r.iter().map(|&d| hop(d, 1.4, 1.9)).collect()).collect();
        let bw = model.distances.iter().map(|r| r.iter().map(|&d| hop(d, 0.6, 0.4)).collect()).collect();
        Self::build("amd-8n", model, lat, bw, vec![40.0; 8])
    }

    /// Tiered: the 2-socket Intel with 32 GiB per socket and a CPU-less
    /// 128 GiB slow node (CXL-like) attached to socket 0. The firmware puts
    /// it nearer than the other socket (SLIT 14 from socket 0, 24 from 1);
    /// measured it is slower: 2.1× from socket 0, 2.8× from socket 1; 30 GB/s.
    pub fn tiered() -> Self {
        let model = machine(
            vec![node(0, 16, 32), node(1, 16, 32), node(2, 0, 128)],
            vec![vec![10, 21, 14], vec![21, 10, 24], vec![14, 24, 10]],
        );
        let l = 131.0 / 81.0;
        let b = 51.0 / 108.0;
        let lat = vec![vec![1.0, l, 2.1], vec![l, 1.0, 2.8], vec![2.1, 2.8, 1.0]];
        let bw = vec![vec![1.0, b, 1.0], vec![b, 1.0, b], vec![1.0, b, 1.0]];
        Self::build("tiered", model, lat, bw, vec![108.0, 108.0, 30.0])
    }

    /// The named machines.
    pub fn named() -> Vec<Self> {
        vec![Self::intel_2s(), Self::intel_4s(), Self::amd_8n(), Self::tiered()]
    }

    /// A random machine: 2–32 nodes in sockets of 1, 2 or 4 nodes; node
    /// sizes even or uneven; sometimes memory-less CPU nodes and a slow
    /// CPU-less memory node; firmware distances from the socket structure,
    /// true ratios from the SLIT calibration ±15 %.
    pub fn random(seed: u64) -> Self {
        let mut r = Rng::stream(seed, 0xA11CE);
        let n = r.pick(&[(2usize, 3.0), (4, 3.0), (8, 2.0), (16, 1.0), (32, 1.0)]).unwrap_or(2);
        let per_socket = *[1usize, 2, 4].iter().filter(|&&g| g <= n).nth(r.below(3.min(n))).unwrap_or(&1);
        let base = (r.pick(&[(4u32, 1.0), (8, 2.0), (12, 1.0), (16, 1.0)]).unwrap_or(8)).min(128 / n as u32).max(2);
        let uneven = r.chance(0.3);
        let gib_per_cpu = r.pick(&[(2.5, 1.0), (3.0, 1.0), (4.0, 2.0), (6.0, 1.0)]).unwrap_or(4.0);
        let memless = if n >= 4 && r.chance(0.15) { 1 + r.below(n / 4) } else { 0 };
        let slow = r.chance(0.2);
        let mut nodes = Vec::new();
        for i in 0..n {
            let f = if uneven { [0.5, 1.0, 1.5][r.below(3)] } else { 1.0 };
            let cpus = ((f64::from(base) * f).round() as u32).max(2);
            let mem = if i >= 1 && i <= memless { 0 } else { (f64::from(cpus) * gib_per_cpu).round() as u64 };
            nodes.push(node(i as u32, cpus, mem));
        }
        // Memory-less nodes' memory is on their socket neighbours: give it back.
        if memless > 0 {
            let lost: u64 = (1..=memless).map(|i| u64::from(nodes[i].cpus) * gib_per_cpu as u64).sum();
            nodes[0].mem_bytes += lost * GIB;
        }
        let sockets = n.div_ceil(per_socket);
        let intra = 11 + r.below(6) as u32;
        let cross = 20 + r.below(5) as u32;
        let sock = |i: usize| i / per_socket;
        let ring = |a: usize, b: usize| {
            let d = a.abs_diff(b);
            d.min(sockets - d)
        };
        let mut slit: Vec<Vec<u32>> = (0..n)
            .map(|a| {
                (0..n)
                    .map(|b| {
                        if a == b {
                            10
                        } else if sock(a) == sock(b) {
                            intra
                        } else {
                            cross + 6 * (ring(sock(a), sock(b)) as u32).saturating_sub(1).min(2)
                        }
                    })
                    .collect()
            })
            .collect();
        let per = (131.0 / 81.0 - 1.0) / 11.0;
        let mut lat: Vec<Vec<f64>> = vec![vec![1.0; n]; n];
        for a in 0..n {
            for b in a + 1..n {
                let v = (1.0 + f64::from(slit[a][b] - 10) * per) * r.range(0.85, 1.15);
                lat[a][b] = v.max(1.05);
                lat[b][a] = lat[a][b];
            }
        }
        let mut bw_gbs: Vec<f64> = nodes.iter().map(|x| f64::from(x.cpus) * r.range(3.0, 7.0)).collect();
        if slow {
            // A CPU-less slow tier attached to node 0.
            let mem = u64::from(base) * 8 * n as u64;
            nodes.push(node(n as u32, 0, mem));
            for (a, row) in slit.iter_mut().enumerate() {
                row.push(if a == 0 { 14 } else { slit_to_far(row[0]) });
            }
            let last: Vec<u32> = slit.iter().map(|row| row[n]).chain(std::iter::once(10)).collect();
            slit.push(last);
            let tier = r.range(2.0, 3.0);
            for (a, row) in lat.iter_mut().enumerate() {
                row.push(if a == 0 { tier } else { tier + row[0] - 1.0 });
            }
            let last: Vec<f64> = lat.iter().map(|row| row[n]).chain(std::iter::once(1.0)).collect();
            lat.push(last);
            bw_gbs.push(f64::from(base) * 2.0);
        }
        let k = nodes.len();
        let bw_ratio =
            (0..k).map(|a| (0..k).map(|b| if a == b { 1.0 } else { lat[a][b].powf(-1.6) }).collect()).collect();
        let model = machine(nodes, slit);
        Self::build(&format!("random-{seed}"), model, lat, bw_ratio, bw_gbs)
    }
}

/// A machine built here (ids in order, square matrix by construction).
fn machine(nodes: Vec<MachineNode>, distances: Vec<Vec<u32>>) -> Machine {
    Machine::new(nodes, distances).expect("ids in order, square matrix")
}

fn node(id: u32, cpus: u32, mem_gib: u64) -> MachineNode {
    MachineNode { id, cpus, mem_bytes: mem_gib * GIB }
}

fn hop(d: u32, near: f64, far: f64) -> f64 {
    match d {
        0..=10 => 1.0,
        11..=20 => near,
        _ => far,
    }
}

fn slit_to_far(d: u32) -> u32 {
    (d + 10).min(40)
}

/// The machine software sees of a synthetic description
/// ([`SynthMachine`]): nodes sorted by id with their CPU count and memory,
/// and the SLIT distances in the same order.
pub fn from_synth(s: &SynthMachine) -> Machine {
    let mut order: Vec<usize> = (0..s.nodes.len()).collect();
    order.sort_by_key(|&i| s.nodes[i].0);
    let nodes = order
        .iter()
        .map(|&i| {
            let (id, mib) = s.nodes[i];
            MachineNode { id, cpus: s.node_cpus(id).len() as u32, mem_bytes: mib << 20 }
        })
        .collect();
    let distances = order.iter().map(|&i| order.iter().map(|&j| s.distances[i][j]).collect()).collect();
    Machine::new(nodes, distances).expect("ids sorted, square matrix")
}
