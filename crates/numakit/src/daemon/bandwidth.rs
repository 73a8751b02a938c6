//! Memory bandwidth in the decision: how busy each memory node is, and what
//! a move does to it and to the other processes that use it.
//!
//! Known only when the machine's bandwidth is measured
//! ([`Machine::bandwidth`](super::Machine::bandwidth): what the CPUs of
//! node `a` stream from memory of node `b`, `numakit bench bandwidth`) and
//! processes' memory traffic is counted
//! ([`ProcInfo::mem_traffic`](super::ProcInfo::mem_traffic)). A memory
//! node's utilisation is `Σ_a traffic_ab / bandwidth_ab` over the traffic
//! reaching it from each CPU node (remote traffic weighs more where remote
//! bandwidth is lower); past 1 every access to it waits in proportion, so
//! its contention factor is `max(1, utilisation)`, which multiplies the
//! access-time ratio of every access to that node. With no bandwidth or no
//! traffic, every factor is 1 and decisions are as without this module.
//!
//! A move changes the factors of the nodes its traffic leaves and reaches,
//! and so the speed of every other process using them. A process's
//! *exposure* to node `b` is its CPU use × its share of cycles stalled on
//! memory × the share of that stall time spent on `b`; when `b`'s factor
//! goes from `k` to `k'`, its progress changes by about `exposure × (1 -
//! k'/k)` CPUs (first order).

/// Per memory node, by node index: utilisation and the processes'
/// exposure. Empty vectors when bandwidth plays no part.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct NodeLoad {
    pub util: Vec<f64>,
    pub exposure: Vec<f64>,
}

impl NodeLoad {
    /// Whether bandwidth plays a part (measured bandwidth and some traffic).
    pub fn active(&self) -> bool {
        !self.util.is_empty()
    }

    /// Contention factors, `max(1, utilisation)` (empty when not active).
    pub fn factors(&self) -> Vec<f64> {
        factors(&self.util)
    }

    /// Adds `sign ×` one process's share (its utilisation and exposure).
    pub fn add(&mut self, share: &NodeLoad, sign: f64) {
        for (x, y) in self.util.iter_mut().zip(&share.util) {
            *x = (*x + sign * y).max(0.0);
        }
        for (x, y) in self.exposure.iter_mut().zip(&share.exposure) {
            *x = (*x + sign * y).max(0.0);
        }
    }
}

/// `max(1, u)` per node.
pub(super) fn factors(util: &[f64]) -> Vec<f64> {
    util.iter().map(|u| u.max(1.0)).collect()
}

/// The utilisation one process's `traffic` (bytes per second) puts on each
/// memory node, its threads on CPU nodes in proportion to `c` and its
/// memory in proportion to `mem`. A pair whose bandwidth was not measured
/// takes the memory node's local bandwidth; a node with neither is left
/// out (utilisation 0).
pub(super) fn util_of(bw: &[Vec<f64>], traffic: f64, c: &[f64], mem: &[f64]) -> Vec<f64> {
    let n = bw.len();
    let mut out = vec![0.0; n];
    let (ct, mt): (f64, f64) = (c.iter().sum(), mem.iter().sum());
    if traffic <= 0.0 || ct <= 0.0 || mt <= 0.0 {
        return out;
    }
    for (a, &ca) in c.iter().enumerate().filter(|x| *x.1 > 0.0) {
        for (b, &mb) in mem.iter().enumerate().filter(|x| *x.1 > 0.0) {
            let cap = if bw[a][b] > 0.0 { bw[a][b] } else { bw[b][b] };
            if cap > 0.0 {
                out[b] += traffic * (ca / ct) * (mb / mt) / cap;
            }
        }
    }
    out
}

/// One process's exposure to each memory node: `cpu × stall × ` the share
/// of its stall time spent on that node, with access-time ratios `r` and
/// contention factors `k` (empty: all 1).
pub(super) fn exposure_of(r: &[Vec<f64>], k: &[f64], cpu: f64, stall: f64, c: &[f64], mem: &[f64]) -> Vec<f64> {
    let n = r.len();
    let mut t = vec![0.0; n];
    for (a, &ca) in c.iter().enumerate().filter(|x| *x.1 > 0.0) {
        for (b, &mb) in mem.iter().enumerate().filter(|x| *x.1 > 0.0) {
            t[b] += ca * mb * r[a][b] * k.get(b).copied().unwrap_or(1.0);
        }
    }
    let total: f64 = t.iter().sum();
    if total <= 0.0 {
        return t;
    }
    t.iter().map(|x| cpu * stall * x / total).collect()
}

/// The change in the other processes' progress, CPUs, when the factors go
/// from `k_now` to `k_after`, for their `exposure` (positive: they gain).
pub(super) fn others_gain(exposure: &[f64], k_now: &[f64], k_after: &[f64]) -> f64 {
    exposure.iter().zip(k_now.iter().zip(k_after)).map(|(e, (k0, k1))| e * (1.0 - k1 / k0)).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    const GB: f64 = 1e9;

    #[test]
    fn utilisation_weighs_remote_traffic_by_its_lower_bandwidth() {
        // Node 1's memory: 40 GB/s locally, 20 GB/s from node 0.
        let bw = vec![vec![40.0 * GB, 20.0 * GB], vec![20.0 * GB, 40.0 * GB]];
        // 10 GB/s from node 1's CPUs to its own memory: a quarter of it.
        let u = util_of(&bw, 10.0 * GB, &[0.0, 1.0], &[0.0, 1.0]);
        assert_eq!(u, vec![0.0, 0.25]);
        // The same traffic from node 0: half of node 1's bandwidth.
        let u = util_of(&bw, 10.0 * GB, &[1.0, 0.0], &[0.0, 1.0]);
        assert_eq!(u, vec![0.0, 0.5]);
        // Threads half on each node, memory half on each node.
        let u = util_of(&bw, 8.0 * GB, &[1.0, 1.0], &[1.0, 1.0]);
        assert!((u[0] - (2.0 / 40.0 + 2.0 / 20.0)).abs() < 1e-12, "{u:?}");
        // An unmeasured pair takes the memory node's local bandwidth; no
        // traffic, no utilisation.
        let bw0 = vec![vec![40.0 * GB, 0.0], vec![0.0, 40.0 * GB]];
        assert_eq!(util_of(&bw0, 10.0 * GB, &[1.0, 0.0], &[0.0, 1.0]), vec![0.0, 0.25]);
        assert_eq!(util_of(&bw, 0.0, &[1.0, 0.0], &[0.0, 1.0]), vec![0.0, 0.0]);
    }

    #[test]
    fn factors_start_at_saturation() {
        assert_eq!(factors(&[0.0, 0.99, 1.0, 2.5]), vec![1.0, 1.0, 1.0, 2.5]);
    }

    #[test]
    fn exposure_is_stall_time_shared_by_where_it_is_spent() {
        let r = vec![vec![1.0, 2.0], vec![2.0, 1.0]];
        // 2 CPUs, 30 % stalled, memory half local half remote (ratio 2):
        // two thirds of the stall time is on the remote node.
        let e = exposure_of(&r, &[], 2.0, 0.3, &[1.0, 0.0], &[1.0, 1.0]);
        assert!((e[0] - 0.2).abs() < 1e-12 && (e[1] - 0.4).abs() < 1e-12, "{e:?}");
        // Contention on node 0 (factor 2) makes it half of it.
        let e = exposure_of(&r, &[2.0, 1.0], 2.0, 0.3, &[1.0, 0.0], &[1.0, 1.0]);
        assert!((e[0] - 0.3).abs() < 1e-12 && (e[1] - 0.3).abs() < 1e-12, "{e:?}");
    }

    #[test]
    fn others_lose_what_a_busier_node_costs_them() {
        // 0.6 CPUs of stall time on node 0, whose factor goes 1 -> 1.5:
        // they lose 0.3 CPUs; relief from 2 to 1 on node 1 gives back half
        // of their 0.4.
        let g = others_gain(&[0.6, 0.4], &[1.0, 2.0], &[1.5, 1.0]);
        assert!((g - (-0.3 + 0.2)).abs() < 1e-12, "{g}");
        // No change, no gain.
        assert_eq!(others_gain(&[0.6, 0.4], &[1.0, 2.0], &[1.0, 2.0]), 0.0);
    }

    #[test]
    fn a_share_added_and_taken_back_leaves_the_load_as_it_was() {
        let mut load = NodeLoad { util: vec![0.5, 1.2], exposure: vec![0.3, 0.1] };
        let share = NodeLoad { util: vec![0.25, 0.0], exposure: vec![0.1, 0.05] };
        let before = load.clone();
        load.add(&share, 1.0);
        assert_eq!(load.factors(), vec![1.0, 1.2]);
        load.add(&share, -1.0);
        assert!(load.util.iter().zip(&before.util).all(|(a, b)| (a - b).abs() < 1e-12));
        assert!(!NodeLoad::default().active());
    }
}
