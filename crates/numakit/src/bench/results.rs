//! Result structs of `numakit bench` and the arithmetic that turns raw
//! times into them (GB/s as STREAM counts bytes, best / median / worst,
//! spread). The JSON of `numakit bench --json` is these structs (see
//! docs/bench.md).

use serde::Serialize;

use super::chase::Pattern;
use super::firmware::FirmwareCheck;
use super::kernels::Kernel;
use super::runner::{Pair, RawBandwidth, RawLatency, RawLoaded};
use crate::sets::CpuSet;
use crate::stats_math::median;

/// One kernel on one pair.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BandwidthResult {
    /// Node whose CPUs ran the threads.
    pub cpu_node: u32,
    /// Node holding the arrays.
    pub mem_node: u32,
    /// The kernel.
    pub kernel: Kernel,
    /// Threads.
    pub threads: usize,
    /// GB/s (10^9 bytes) of the fastest repetition (STREAM's "best rate").
    pub best_gbps: f64,
    /// GB/s of the median repetition.
    pub median_gbps: f64,
    /// GB/s of the slowest repetition.
    pub worst_gbps: f64,
    /// Fastest repetition, seconds.
    pub min_s: f64,
    /// Mean repetition, seconds.
    pub avg_s: f64,
    /// Slowest repetition, seconds.
    pub max_s: f64,
    /// (slowest - fastest) / fastest, percent.
    pub spread_pct: f64,
    /// CPUs the worker threads were seen on.
    pub cpus_seen: CpuSet,
    /// Share of the arrays' pages found on `mem_node`, percent.
    pub pages_on_node_pct: Option<f64>,
}

/// `numakit bench bandwidth`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BandwidthReport {
    /// Bytes per array (three arrays).
    pub array_bytes: u64,
    /// Measured repetitions (after one unmeasured).
    pub reps: usize,
    /// Transparent huge pages were asked for.
    pub huge_pages: bool,
    /// Every STREAM check passed (a failure is an error instead).
    pub validated: bool,
    /// One per pair and kernel.
    pub results: Vec<BandwidthResult>,
    /// Measured remote/local ratios beside the firmware's.
    pub firmware: Vec<FirmwareCheck>,
    /// What the run did differently from its defaults, and why (a default
    /// size that did not fit in the free memory).
    pub notes: Vec<String>,
}

/// Latency of one pair at one size.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LatencyResult {
    /// Node whose CPU chased.
    pub cpu_node: u32,
    /// Node holding the buffer.
    pub mem_node: u32,
    /// Buffer size.
    pub size_bytes: u64,
    /// Nanoseconds per load, median of the repetitions.
    pub ns: f64,
    /// The fastest repetition.
    pub best_ns: f64,
    /// The CPU that chased.
    pub cpu: u32,
    /// CPUs the thread was seen on.
    pub cpus_seen: CpuSet,
    /// Share of the buffer's pages found on `mem_node`, percent.
    pub pages_on_node_pct: Option<f64>,
}

/// `numakit bench latency`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LatencyReport {
    /// Order of the chase.
    pub pattern: Pattern,
    /// Repetitions per measurement.
    pub reps: usize,
    /// Transparent huge pages were asked for.
    pub huge_pages: bool,
    /// The sizes measured.
    pub sizes: Vec<u64>,
    /// One per pair and size.
    pub results: Vec<LatencyResult>,
    /// Measured remote/local ratios (at the largest size) beside the
    /// firmware's.
    pub firmware: Vec<FirmwareCheck>,
    /// What the run did differently from its defaults, and why.
    pub notes: Vec<String>,
}

/// One point of the loaded-latency curve.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoadedPoint {
    /// Delay-loop length between the generators' blocks (`None`: idle, no
    /// generator).
    pub delay: Option<u64>,
    /// Generators running.
    pub generators: usize,
    /// Bandwidth the generators read, GB/s.
    pub bandwidth_gbps: f64,
    /// Latency meanwhile, nanoseconds per load.
    pub ns: f64,
}

/// `numakit bench loaded`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoadedReport {
    /// The CPU node.
    pub cpu_node: u32,
    /// The memory node.
    pub mem_node: u32,
    /// Bytes of the chased buffer.
    pub size_bytes: u64,
    /// Bytes of each generator's buffer.
    pub generator_bytes: u64,
    /// The CPU that chased.
    pub latency_cpu: u32,
    /// The generators' CPUs.
    pub generator_cpus: CpuSet,
    /// Points, from idle to the heaviest load.
    pub points: Vec<LoadedPoint>,
    /// CPUs all threads were seen on.
    pub cpus_seen: CpuSet,
    /// Share of the buffers' pages on the memory node, percent.
    pub pages_on_node_pct: Option<f64>,
    /// What the run did differently from its defaults, and why.
    pub notes: Vec<String>,
}

/// GB/s from bytes and seconds (0 for a zero time).
pub fn gbps(bytes: f64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        bytes / seconds / 1e9
    } else {
        0.0
    }
}

/// The results of one bandwidth measurement of `pair`.
pub fn summarise_bandwidth(pair: &Pair, raw: &RawBandwidth) -> Vec<BandwidthResult> {
    raw.times
        .iter()
        .filter(|(_, t)| !t.is_empty())
        .map(|(k, t)| {
            let bytes = (k.bytes_per_element() * raw.elements) as f64;
            let min_s = t.iter().copied().fold(f64::INFINITY, f64::min);
            let max_s = t.iter().copied().fold(0.0, f64::max);
            let avg_s = t.iter().sum::<f64>() / t.len() as f64;
            let med = median(t).unwrap_or(avg_s);
            BandwidthResult {
                cpu_node: pair.cpu_node,
                mem_node: pair.mem_node,
                kernel: *k,
                threads: raw.threads,
                best_gbps: gbps(bytes, min_s),
                median_gbps: gbps(bytes, med),
                worst_gbps: gbps(bytes, max_s),
                min_s,
                avg_s,
                max_s,
                spread_pct: if min_s > 0.0 { (max_s - min_s) / min_s * 100.0 } else { 0.0 },
                cpus_seen: raw.cpus_seen.clone(),
                pages_on_node_pct: raw.pages_on_node_pct,
            }
        })
        .collect()
}

/// The result of one latency measurement.
pub fn summarise_latency(pair: &Pair, size_bytes: u64, raw: &RawLatency) -> LatencyResult {
    LatencyResult {
        cpu_node: pair.cpu_node,
        mem_node: pair.mem_node,
        size_bytes,
        ns: median(&raw.ns).unwrap_or(0.0),
        best_ns: raw.ns.iter().copied().fold(f64::INFINITY, f64::min),
        cpu: raw.cpu,
        cpus_seen: raw.cpus_seen.clone(),
        pages_on_node_pct: raw.pages_on_node_pct,
    }
}

/// The loaded-latency report.
pub fn summarise_loaded(pair: &Pair, size_bytes: u64, generator_bytes: u64, raw: &RawLoaded) -> LoadedReport {
    LoadedReport {
        cpu_node: pair.cpu_node,
        mem_node: pair.mem_node,
        size_bytes,
        generator_bytes,
        latency_cpu: raw.latency_cpu,
        generator_cpus: raw.generator_cpus.clone(),
        points: raw
            .points
            .iter()
            .map(|p| LoadedPoint {
                delay: p.delay,
                generators: p.generators,
                bandwidth_gbps: gbps(p.bytes as f64, p.seconds),
                ns: p.ns,
            })
            .collect(),
        cpus_seen: raw.cpus_seen.clone(),
        pages_on_node_pct: raw.pages_on_node_pct,
        notes: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::runner::RawLoadedPoint;

    fn pair() -> Pair {
        Pair { cpu_node: 1, mem_node: 2, cpus: [4, 5].into_iter().collect() }
    }

    #[test]
    fn bandwidth_arithmetic_is_streams() {
        // 10^6 elements: copy moves 16 MB, triad 24 MB.
        let raw = RawBandwidth {
            threads: 2,
            elements: 1_000_000,
            times: vec![(Kernel::Copy, vec![0.002, 0.001, 0.004]), (Kernel::Triad, vec![0.003, 0.002, 0.0024, 0.004])],
            cpus_seen: [4, 5].into_iter().collect(),
            pages_on_node_pct: Some(100.0),
        };
        let r = summarise_bandwidth(&pair(), &raw);
        assert_eq!(r.len(), 2);
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        assert_eq!((r[0].cpu_node, r[0].mem_node, r[0].kernel, r[0].threads), (1, 2, Kernel::Copy, 2));
        assert!(
            close(r[0].best_gbps, 16.0) && close(r[0].median_gbps, 8.0) && close(r[0].worst_gbps, 4.0),
            "{:?}",
            r[0]
        );
        assert!(close(r[0].spread_pct, 300.0) && close(r[0].avg_s, 0.007 / 3.0));
        // Triad: best 24 MB / 2 ms = 12 GB/s; median of 4 = 2.7 ms.
        assert!(close(r[1].best_gbps, 12.0) && close(r[1].median_gbps, 0.024 / 0.0027), "{:?}", r[1]);
    }

    #[test]
    fn latency_and_loaded_arithmetic() {
        let raw = RawLatency {
            cpu: 4,
            ns: vec![90.0, 80.0, 100.0],
            cpus_seen: [4].into_iter().collect(),
            pages_on_node_pct: None,
        };
        let r = summarise_latency(&pair(), 1 << 20, &raw);
        assert_eq!((r.ns, r.best_ns, r.cpu, r.size_bytes), (90.0, 80.0, 4, 1 << 20));
        let raw = RawLoaded {
            latency_cpu: 4,
            generator_cpus: [5].into_iter().collect(),
            points: vec![
                RawLoadedPoint { delay: None, generators: 0, bytes: 0, seconds: 0.1, ns: 80.0 },
                RawLoadedPoint { delay: Some(0), generators: 1, bytes: 2_000_000_000, seconds: 0.2, ns: 150.0 },
            ],
            cpus_seen: [4, 5].into_iter().collect(),
            pages_on_node_pct: Some(100.0),
        };
        let l = summarise_loaded(&pair(), 1 << 20, 1 << 22, &raw);
        assert_eq!(l.points[0].bandwidth_gbps, 0.0);
        assert!((l.points[1].bandwidth_gbps - 10.0).abs() < 1e-9);
        assert_eq!(gbps(1.0, 0.0), 0.0);
    }
}
