//! Measured remote/local ratios beside what the firmware claims: the SLIT
//! distance (10 = local, so distance / 10 is the claimed ratio) and, where
//! the kernel exposes it, HMAT's latency and bandwidth. A pair whose
//! measured ratio is more than [`DISAGREE_PCT`] away from a firmware ratio
//! is flagged.
//!
//! "Local" for a CPU node is its own memory when it has some and it was
//! measured, otherwise the measured memory node nearest to it by SLIT
//! (e.g. for a memory-less CPU node).

use serde::Serialize;

use super::kernels::Kernel;
use super::results::{BandwidthResult, LatencyResult};
use crate::topo::Topology;

/// Measured and firmware ratios further apart than this (percent of the
/// firmware's) are flagged.
pub const DISAGREE_PCT: f64 = 25.0;

/// What was compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Measure {
    /// Latency: ratio = latency / local latency.
    Latency,
    /// Bandwidth: ratio = local bandwidth / bandwidth (so that, like a
    /// distance, remote is above 1).
    Bandwidth,
}

/// One pair's ratios.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FirmwareCheck {
    /// CPU node.
    pub cpu_node: u32,
    /// Memory node.
    pub mem_node: u32,
    /// The memory node used as local for `cpu_node`.
    pub local_node: u32,
    /// Latency or bandwidth.
    pub measure: Measure,
    /// The measured value (ns, or GB/s of triad's best).
    pub measured: f64,
    /// Measured ratio to local.
    pub measured_ratio: f64,
    /// SLIT distance of the pair.
    pub slit_distance: Option<u32>,
    /// SLIT ratio: distance / local distance.
    pub slit_ratio: Option<f64>,
    /// HMAT value of the pair (ns, or MiB/s), where the kernel gives it.
    pub hmat: Option<f64>,
    /// HMAT ratio to local, oriented as `measured_ratio`.
    pub hmat_ratio: Option<f64>,
    /// The measured ratio is more than [`DISAGREE_PCT`] off SLIT's or HMAT's.
    pub disagrees: bool,
}

/// HMAT figure of CPU node `cpu` reading memory node `mem`: the access
/// class of `mem` whose initiators include `cpu` (class 1, CPU initiators,
/// preferred over class 0).
fn hmat(topo: &Topology, cpu: u32, mem: u32, measure: Measure) -> Option<f64> {
    let node = topo.node(mem)?;
    let mut classes: Vec<_> = node.access.iter().filter(|a| a.initiators.contains(cpu)).collect();
    classes.sort_by_key(|a| std::cmp::Reverse(a.class));
    classes.into_iter().find_map(|a| match measure {
        Measure::Latency => a.read_latency_ns.map(|v| v as f64),
        Measure::Bandwidth => a.read_bandwidth_mbps.map(|v| v as f64),
    })
}

fn off(measured: f64, firmware: Option<f64>) -> bool {
    firmware.is_some_and(|f| f > 0.0 && ((measured / f) - 1.0).abs() * 100.0 > DISAGREE_PCT)
}

/// Ratios for `(cpu_node, mem_node, value)` triples.
fn checks(topo: &Topology, values: &[(u32, u32, f64)], measure: Measure) -> Vec<FirmwareCheck> {
    let mut out = Vec::new();
    let mut rows: Vec<u32> = values.iter().map(|v| v.0).collect();
    rows.sort();
    rows.dedup();
    for c in rows {
        let row: Vec<&(u32, u32, f64)> = values.iter().filter(|v| v.0 == c && v.2 > 0.0).collect();
        let local = row
            .iter()
            .find(|v| v.1 == c)
            .or_else(|| row.iter().min_by_key(|v| (topo.distance(c, v.1).unwrap_or(u32::MAX), v.1)));
        let Some(&&(_, lm, lv)) = local else { continue };
        for &&(_, m, v) in &row {
            let measured_ratio = match measure {
                Measure::Latency => v / lv,
                Measure::Bandwidth => lv / v,
            };
            let slit_distance = topo.distance(c, m);
            let slit_ratio = match (slit_distance, topo.distance(c, lm)) {
                (Some(d), Some(l)) if l > 0 => Some(f64::from(d) / f64::from(l)),
                _ => None,
            };
            let h = hmat(topo, c, m, measure);
            let hmat_ratio = match (h, hmat(topo, c, lm, measure)) {
                (Some(x), Some(l)) if x > 0.0 && l > 0.0 => Some(match measure {
                    Measure::Latency => x / l,
                    Measure::Bandwidth => l / x,
                }),
                _ => None,
            };
            out.push(FirmwareCheck {
                cpu_node: c,
                mem_node: m,
                local_node: lm,
                measure,
                measured: v,
                measured_ratio,
                slit_distance,
                slit_ratio,
                hmat: h,
                hmat_ratio,
                disagrees: off(measured_ratio, slit_ratio) || off(measured_ratio, hmat_ratio),
            });
        }
    }
    out
}

/// Latency ratios, from the largest size measured for each pair.
pub fn latency_checks(topo: &Topology, results: &[LatencyResult]) -> Vec<FirmwareCheck> {
    let Some(size) = results.iter().map(|r| r.size_bytes).max() else { return Vec::new() };
    let values: Vec<(u32, u32, f64)> =
        results.iter().filter(|r| r.size_bytes == size).map(|r| (r.cpu_node, r.mem_node, r.ns)).collect();
    checks(topo, &values, Measure::Latency)
}

/// Bandwidth ratios, from triad's best rate (or the last kernel measured
/// when triad was not).
pub fn bandwidth_checks(topo: &Topology, results: &[BandwidthResult]) -> Vec<FirmwareCheck> {
    let kernel = if results.iter().any(|r| r.kernel == Kernel::Triad) {
        Kernel::Triad
    } else {
        match results.iter().map(|r| r.kernel).max() {
            Some(k) => k,
            None => return Vec::new(),
        }
    };
    let values: Vec<(u32, u32, f64)> =
        results.iter().filter(|r| r.kernel == kernel).map(|r| (r.cpu_node, r.mem_node, r.best_gbps)).collect();
    checks(topo, &values, Measure::Bandwidth)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sets::{CpuSet, NodeSet};
    use crate::sys::SysRoot;
    use crate::topo::synth::SynthMachine;
    use crate::topo::AccessClass;

    fn four_nodes() -> (tempfile::TempDir, Topology) {
        let dir = tempfile::tempdir().expect("dir");
        SynthMachine::rr_4n(8, 1024).write(dir.path()).expect("write");
        let t = Topology::read(&SysRoot::at(dir.path())).expect("read");
        (dir, t)
    }

    fn lat(c: u32, m: u32, ns: f64) -> LatencyResult {
        LatencyResult {
            cpu_node: c,
            mem_node: m,
            size_bytes: 1 << 28,
            ns,
            best_ns: ns,
            cpu: 0,
            cpus_seen: CpuSet::new(),
            pages_on_node_pct: None,
        }
    }

    #[test]
    fn latency_ratios_against_slit() {
        let (_d, topo) = four_nodes();
        let d01 = topo.distance(0, 1).expect("distance");
        let d00 = topo.distance(0, 0).expect("distance");
        let slit = f64::from(d01) / f64::from(d00);
        // Node 0 -> 1 measured exactly at SLIT's ratio; 0 -> 2 at 3x local.
        let results = vec![lat(0, 0, 100.0), lat(0, 1, 100.0 * slit), lat(0, 2, 300.0), {
            let mut small = lat(0, 3, 5.0);
            small.size_bytes = 1 << 14; // ignored: not the largest size
            small
        }];
        let c = latency_checks(&topo, &results);
        assert_eq!(c.len(), 3, "{c:?}");
        assert_eq!((c[0].mem_node, c[0].measured_ratio, c[0].disagrees), (0, 1.0, false));
        assert!((c[1].measured_ratio - slit).abs() < 1e-12 && !c[1].disagrees, "{:?}", c[1]);
        let d02 = f64::from(topo.distance(0, 2).expect("distance")) / f64::from(d00);
        assert_eq!(c[2].disagrees, ((3.0 / d02) - 1.0).abs() > 0.25, "{:?}", c[2]);
        assert!(c.iter().all(|x| x.local_node == 0 && x.hmat.is_none()));
    }

    #[test]
    fn hmat_and_bandwidth_orientation() {
        let (_d, mut topo) = four_nodes();
        let init: NodeSet = [0].into_iter().collect();
        for (m, ns, bw) in [(0u32, 100u64, 20_000u64), (1, 150, 10_000)] {
            let i = topo.node_index(m).expect("node");
            topo.nodes[i].access = vec![AccessClass {
                class: 0,
                initiators: init.clone(),
                read_latency_ns: Some(ns),
                write_latency_ns: None,
                read_bandwidth_mbps: Some(bw),
                write_bandwidth_mbps: None,
            }];
        }
        let l = latency_checks(&topo, &[lat(0, 0, 100.0), lat(0, 1, 250.0)]);
        assert_eq!(l[1].hmat, Some(150.0));
        assert_eq!(l[1].hmat_ratio, Some(1.5));
        assert!(l[1].disagrees, "2.5 measured vs 1.5 HMAT");
        let bw = |m: u32, g: f64| BandwidthResult {
            cpu_node: 0,
            mem_node: m,
            kernel: Kernel::Triad,
            threads: 1,
            best_gbps: g,
            median_gbps: g,
            worst_gbps: g,
            min_s: 1.0,
            avg_s: 1.0,
            max_s: 1.0,
            spread_pct: 0.0,
            cpus_seen: CpuSet::new(),
            pages_on_node_pct: None,
        };
        let b = bandwidth_checks(&topo, &[bw(0, 20.0), bw(1, 10.0)]);
        assert_eq!((b[1].measured_ratio, b[1].hmat_ratio), (2.0, Some(2.0)));
        assert_eq!(b[1].measure, Measure::Bandwidth);
        assert!(bandwidth_checks(&topo, &[]).is_empty());
    }

    #[test]
    fn memoryless_rows_use_the_nearest_measured_node() {
        let (_d, topo) = four_nodes();
        // Row 0 without (0, 0): the nearest of 1 and 2 by SLIT is local.
        let c = latency_checks(&topo, &[lat(0, 1, 120.0), lat(0, 2, 150.0)]);
        let near = if topo.distance(0, 1) <= topo.distance(0, 2) { 1 } else { 2 };
        assert!(c.iter().all(|x| x.local_node == near), "{c:?}");
    }
}
