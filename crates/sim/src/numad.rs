//! numad's placement algorithm (release 20150602), rewritten from its
//! published description (`../shared/reference/numad-and-autonuma.md`),
//! with the quirks that matter kept:
//!
//! * firmware (SLIT) distances only;
//! * every node assumed the size of node 0 when sizing requests;
//! * memory-less nodes dropped, CPU-less memory nodes never chosen;
//! * at most one process moved per interval (5 s after a move, else 15 s);
//! * peak-hold CPU use (maximum of the last 8 samples);
//! * migration assumed to succeed, whole node pairs, no budget;
//! * no cost/benefit test: any process above the thresholds that is not
//!   already bound where numad wants it is bound, local or not;
//! * a process bound by its owner (numactl) looks unbound: numad reads
//!   `Mems_allowed_list`, which a memory policy does not change.
//!
//! Left out: `-w` advice, `-K` interleave handling, THP tuning, the
//! re-evaluation bypass for processes on the fullest node (a refinement
//! that only shortens the 300 s hysteresis) and the sort bug.

use std::collections::{BTreeMap, VecDeque};

use numakit::daemon::{ActionKind, Machine, NodePos, Snapshot};
use numakit::sets::NodeSet;

use super::action::{Reason, SimAction};
use super::policy::Policy;

const MB: f64 = 1_000_000.0;
const PAGE: f64 = 4096.0;

/// numad's state.
#[derive(Debug, Clone)]
pub struct Numad {
    /// `-u`: target utilization percent (85).
    pub utilization: f64,
    /// `-m`: target memory locality percent (90).
    pub locality: f64,
    samples: BTreeMap<i32, VecDeque<f64>>,
    bound: BTreeMap<i32, (f64, NodeSet)>,
    next: f64,
}

impl Default for Numad {
    fn default() -> Self {
        Self { utilization: 85.0, locality: 90.0, samples: BTreeMap::new(), bound: BTreeMap::new(), next: 15.0 }
    }
}

/// Per-node numbers in numad's units (CPU hundredths, MB).
#[derive(Debug, Clone, Copy)]
struct N {
    idx: usize,
    id: u32,
    cpus_total: f64,
    cpus_free: f64,
    mbs_total: f64,
    mbs_free: f64,
}

impl Numad {
    #[allow(clippy::too_many_arguments)]
    fn pick(
        &self,
        m: &Machine,
        nodes: &[N],
        proc_mb: &BTreeMap<u32, f64>,
        cpus_used: f64,
        mbs_used: f64,
        cpu_req: f64,
        mb_req: f64,
        bound: Option<&NodeSet>,
        sum_used: f64,
    ) -> Option<NodeSet> {
        let u = self.utilization;
        let node0 = nodes.first()?;
        let mut tmp: Vec<N> = nodes.to_vec();
        let free_total: f64 = nodes.iter().map(|n| n.cpus_free).sum();
        match bound {
            None => {
                for n in &mut tmp {
                    let p = proc_mb.get(&n.id).copied().unwrap_or(0.0);
                    n.mbs_free += 17.0 / 16.0 * p;
                    if mbs_used > 0.0 {
                        n.cpus_free += cpus_used * p / mbs_used;
                    }
                }
            }
            Some(set) => {
                let inside: Vec<usize> = (0..tmp.len()).filter(|&i| set.contains(tmp[i].id)).collect();
                let sum: f64 = inside.iter().map(|&i| tmp[i].cpus_free).sum();
                for n in &mut tmp {
                    let p = proc_mb.get(&n.id).copied().unwrap_or(0.0);
                    n.mbs_free += 5.0 / 4.0 * p;
                }
                if !inside.is_empty() {
                    let share = (cpus_used + sum) / inside.len() as f64;
                    for &i in &inside {
                        tmp[i].cpus_free = share;
                    }
                }
            }
        }
        for n in &mut tmp {
            n.mbs_free = n.mbs_free.min(n.mbs_total);
            n.cpus_free = n.cpus_free.min(n.cpus_total).max(1.0);
        }
        let mag: Vec<f64> = tmp
            .iter()
            .map(|n| {
                let nm = n.mbs_free.min(mb_req);
                let nc = n.cpus_free.min(cpu_req);
                (10.0 * nm + 4.0 * (n.mbs_free - nm)) * (6.0 * nc + (n.cpus_free - nc))
            })
            .collect();
        let cpu_flex = (100.0 - u) * node0.cpus_total / 200.0;
        let total_cpus: f64 = nodes.iter().map(|n| n.cpus_total).sum();
        let assume_enough = sum_used <= total_cpus || cpu_req > free_total;
        let min_req =
            ((mb_req / node0.mbs_total).ceil()).max(((cpu_req - cpu_flex) / node0.cpus_total).ceil()).max(1.0) as usize;
        let min_req = min_req.min(tmp.len());
        let dist = |a: &N, b: &N| f64::from(m.distances[NodePos(a.idx)][NodePos(b.idx)]);
        let sorted_from = |i: usize| -> Vec<usize> {
            let mut v: Vec<usize> = (0..tmp.len()).collect();
            v.sort_by(|&x, &y| {
                dist(&tmp[i], &tmp[x]).total_cmp(&dist(&tmp[i], &tmp[y])).then(mag[y].total_cmp(&mag[x]))
            });
            v
        };
        let mut seed = 0;
        let mut best = f64::NEG_INFINITY;
        for i in 0..tmp.len() {
            let tot: f64 = sorted_from(i).iter().take(min_req).map(|&j| mag[j] / dist(&tmp[i], &tmp[j]).powi(2)).sum();
            if tot > best {
                best = tot;
                seed = i;
            }
        }
        let mut target = NodeSet::new();
        let (mut mem_left, mut cpu_left) = (mb_req, cpu_req);
        for (k, j) in sorted_from(seed).into_iter().enumerate() {
            target.insert(tmp[j].id);
            mem_left -= (tmp[j].mbs_free - 100.0).max(0.0);
            cpu_left -= tmp[j].cpus_free;
            if k + 1 >= min_req && mem_left <= 0.0 && (assume_enough || cpu_left <= cpu_flex) {
                break;
            }
        }
        let nonlocal: f64 = proc_mb.iter().filter(|(id, _)| !target.contains(**id)).map(|(_, v)| *v).sum();
        let nonlocal_pct = if mbs_used > 0.0 { 100.0 * nonlocal / mbs_used } else { 0.0 };
        let current = bound.cloned().unwrap_or_else(|| m.nodes.iter().map(|n| n.id).collect());
        if nonlocal_pct <= 100.0 - self.locality && target == current {
            return None;
        }
        Some(target)
    }
}

impl Policy for Numad {
    fn name(&self) -> &'static str {
        "numad"
    }
    fn interval_s(&mut self) -> Option<f64> {
        Some(self.next)
    }
    fn tick(&mut self, m: &Machine, snap: &Snapshot) -> Vec<SimAction> {
        let now = snap.time_s;
        self.next = 15.0;
        // Node model: memory-less and CPU-less nodes never take part.
        let nodes: Vec<N> = m
            .nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| n.cpus > 0 && n.mem_bytes > 0)
            .map(|(i, n)| {
                let st = snap.nodes.iter().find(|s| s.id == n.id);
                N {
                    idx: i,
                    id: n.id,
                    cpus_total: f64::from(n.cpus) * 100.0,
                    cpus_free: st.map_or(0.0, |s| s.free_cpus * 100.0),
                    mbs_total: n.mem_bytes as f64 / MB,
                    mbs_free: st.map_or(0.0, |s| s.free_bytes as f64 / MB),
                }
            })
            .collect();
        if nodes.len() < 2 {
            return Vec::new();
        }
        // Process model: peak-hold CPU over 8 samples of processes > 300 MB.
        let live: std::collections::BTreeSet<i32> = snap.procs.iter().map(|p| p.pid).collect();
        self.samples.retain(|pid, _| live.contains(pid));
        self.bound.retain(|pid, _| live.contains(pid));
        let mut cands = Vec::new();
        let mut sum_used = 0.0;
        for p in &snap.procs {
            let mbs = p.rss_bytes as f64 / MB;
            if mbs <= 300.0 {
                continue;
            }
            let s = self.samples.entry(p.pid).or_default();
            s.push_back(p.cpu_use * 100.0);
            while s.len() > 8 {
                s.pop_front();
            }
            if s.len() < 2 {
                continue;
            }
            let used = s.iter().copied().fold(0.0, f64::max);
            sum_used += used;
            if used > 50.0 {
                cands.push((p, used, mbs));
            }
        }
        // Never-bound first by magnitude (descending), then bound ones by
        // magnitude (ascending), oldest bind first.
        cands.sort_by(|a, b| {
            let (ba, bb) = (self.bound.get(&a.0.pid), self.bound.get(&b.0.pid));
            let (ma, mb) = (a.1 * a.2, b.1 * b.2);
            match (ba, bb) {
                (None, None) => mb.total_cmp(&ma).then(a.0.pid.cmp(&b.0.pid)),
                (None, Some(_)) => std::cmp::Ordering::Less,
                (Some(_), None) => std::cmp::Ordering::Greater,
                (Some(x), Some(y)) => ma.total_cmp(&mb).then(x.0.total_cmp(&y.0)).then(a.0.pid.cmp(&b.0.pid)),
            }
        });
        let u = self.utilization;
        for (p, used, mbs) in cands {
            let bound = self.bound.get(&p.pid).cloned();
            if bound.as_ref().is_some_and(|(t, _)| now - t < 300.0) {
                continue;
            }
            let mb_req = mbs * 100.0 / u.min(100.0);
            let cpu_req = (used * 100.0 / u).min(f64::from(p.threads) * 100.0);
            let proc_mb: BTreeMap<u32, f64> = p.mem_per_node.iter().map(|(k, v)| (*k, *v as f64 / MB)).collect();
            let Some(target) =
                self.pick(m, &nodes, &proc_mb, used, mbs, cpu_req, mb_req, bound.as_ref().map(|b| &b.1), sum_used)
            else {
                if let Some(b) = self.bound.get_mut(&p.pid) {
                    b.0 = now;
                }
                continue;
            };
            // numad's own log line for the move ("Advising pid … move from
            // nodes (…) to nodes (…)"); it weighs no gain against a cost.
            let from: NodeSet = proc_mb.iter().filter(|(_, v)| **v > 0.0).map(|(id, _)| *id).collect();
            let why = Reason::Peer {
                text: format!(
                    "numad: move from nodes ({}) to nodes ({}), {:.0} MB and {:.2} CPUs",
                    from.to_list(),
                    target.to_list(),
                    mbs,
                    used / 100.0
                ),
            };
            let mut actions = vec![SimAction {
                pid: p.pid,
                kind: ActionKind::Bind { cpu_nodes: target.clone(), mem_nodes: NodeSet::new() },
                reason: why.clone(),
                expected_gain: 0.0,
            }];
            // Largest non-target source to the target node holding the least
            // of the process (ties: higher id); success assumed.
            let mut mb = proc_mb;
            let mut last = None;
            loop {
                let src = mb
                    .iter()
                    .filter(|(id, v)| !target.contains(**id) && **v > 0.0)
                    .max_by(|a, b| a.1.total_cmp(b.1).then(b.0.cmp(a.0)))
                    .map(|(id, v)| (*id, *v));
                let Some((src, amount)) = src else { break };
                if last == Some(src) {
                    break;
                }
                last = Some(src);
                let dst = target
                    .iter()
                    .min_by(|a, b| {
                        let (x, y) = (mb.get(a).copied().unwrap_or(0.0), mb.get(b).copied().unwrap_or(0.0));
                        x.total_cmp(&y).then(b.cmp(a))
                    })
                    .unwrap_or(src);
                actions.push(SimAction {
                    pid: p.pid,
                    kind: ActionKind::Migrate { from: src, to: dst, pages: (amount * MB / PAGE).ceil() as u64 },
                    reason: why.clone(),
                    expected_gain: 0.0,
                });
                *mb.entry(dst).or_insert(0.0) += amount;
                mb.insert(src, 0.0);
            }
            self.bound.insert(p.pid, (now, target));
            self.next = 5.0;
            return actions;
        }
        Vec::new()
    }
}
