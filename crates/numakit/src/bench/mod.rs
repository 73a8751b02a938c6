//! `numakit bench`: memory bandwidth and latency between every CPU node
//! and every memory node.
//!
//! * [`kernels`]: STREAM's copy, scale, add and triad on plain slices, and
//!   STREAM's validation of the results;
//! * [`chase`]: the dependent-load pointer chase over a random cycle, and
//!   the delay-loop readers of the loaded-latency curve;
//! * [`runner`]: the [`Probe`] trait (one pair, one measurement) and
//!   [`LiveProbe`], which pins threads and binds buffers with [`crate::act`];
//! * [`results`]: result structs and the arithmetic from raw times;
//! * [`firmware`]: measured remote/local ratios beside SLIT and HMAT.
//!
//! [`run_bandwidth`], [`run_latency`] and [`run_loaded`] resolve defaults
//! from the [`Topology`] (array sizes from the last-level caches, fitted
//! to the memory nodes' free memory with a note when they shrink:
//! `sizing`; threads from the node's CPUs), check the nodes, and drive a
//! probe over every pair. Nothing here prints: progress goes to a callback and results come
//! back as structs that `present::bench` and `present::plot` render.

pub mod chase;
pub mod firmware;
pub mod kernels;
pub mod results;
pub mod runner;
mod sizing;

use std::time::Duration;

pub use chase::Pattern;
pub use firmware::{bandwidth_checks, latency_checks, FirmwareCheck, Measure, DISAGREE_PCT};
pub use kernels::Kernel;
pub use results::{BandwidthReport, BandwidthResult, LatencyReport, LatencyResult, LoadedPoint, LoadedReport};
pub use runner::{BandwidthParams, LatencyParams, LiveProbe, LoadedParams, Pair, Probe};
pub use sizing::{default_array_bytes, default_latency_bytes, total_llc_bytes};

use crate::sets::NodeSet;
use crate::topo::Topology;

/// Why a benchmark could not run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BenchError {
    /// Wrong options or nodes (a usage error).
    #[error("{0}")]
    Usage(String),
    /// The system refused (allocation, binding, pinning).
    #[error("{0}")]
    System(String),
    /// STREAM's check of the results failed.
    #[error("STREAM validation failed: {0}")]
    Validation(String),
}

/// Where a run is, for a progress display.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// Measurements finished.
    pub done: usize,
    /// Measurements in all.
    pub total: usize,
    /// The one about to start (empty at the end).
    pub what: String,
}

/// Powers of two from `from` to `to` (both rounded to powers of two), the
/// `--sizes 16K-1G` sweep.
pub fn size_sweep(from: u64, to: u64) -> Vec<u64> {
    let mut s = from.max(1).next_power_of_two();
    let mut out = Vec::new();
    while s <= to {
        out.push(s);
        match s.checked_mul(2) {
            Some(n) => s = n,
            None => break,
        }
    }
    out
}

/// Every (CPU node, memory node) pair to measure: CPU nodes with CPUs the
/// caller may use, memory nodes with memory the caller may use, each
/// restricted to `cpu_nodes` / `mem_nodes` when given (a node asked for
/// that cannot be used is an error naming it). Refuses a topology read
/// from a dump.
pub fn pairs(
    topo: &Topology,
    cpu_nodes: Option<&NodeSet>,
    mem_nodes: Option<&NodeSet>,
) -> Result<Vec<Pair>, BenchError> {
    if !topo.source.live {
        return Err(BenchError::Usage(format!(
            "--sysroot {} is a dump of another machine: benchmarks run only on the live system",
            topo.source.sysroot
        )));
    }
    let usable_cpu =
        |id: u32| topo.node(id).map(|n| n.cpus.intersection(&topo.allowed.cpus).intersection(&topo.online_cpus));
    let cpu_ok: Vec<u32> =
        topo.nodes.iter().filter(|n| usable_cpu(n.id).is_some_and(|c| !c.is_empty())).map(|n| n.id).collect();
    let mem_ok: Vec<u32> =
        topo.nodes.iter().filter(|n| n.has_memory && topo.allowed.nodes.contains(n.id)).map(|n| n.id).collect();
    let pick = |want: Option<&NodeSet>, ok: &[u32], what: &str| -> Result<Vec<u32>, BenchError> {
        match want {
            None => Ok(ok.to_vec()),
            Some(w) => {
                if let Some(bad) = w.iter().find(|id| !ok.contains(id)) {
                    let why = if topo.node(bad).is_none() { "does not exist" } else { what };
                    return Err(BenchError::Usage(format!("node {bad} {why}")));
                }
                Ok(w.to_vec())
            }
        }
    };
    let cpus = pick(cpu_nodes, &cpu_ok, "has no CPU this process may use")?;
    let mems = pick(mem_nodes, &mem_ok, "has no memory this process may use")?;
    if cpus.is_empty() || mems.is_empty() {
        return Err(BenchError::Usage("no usable CPU node or memory node".into()));
    }
    Ok(cpus
        .iter()
        .flat_map(|&c| {
            let set = usable_cpu(c).unwrap_or_default();
            mems.iter().map(move |&m| Pair { cpu_node: c, mem_node: m, cpus: set.clone() })
        })
        .collect())
}

fn mem_nodes_of(pairs: &[Pair]) -> Vec<u32> {
    let mut m: Vec<u32> = pairs.iter().map(|p| p.mem_node).collect();
    m.sort_unstable();
    m.dedup();
    m
}

/// Options of [`run_bandwidth`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BandwidthOptions {
    /// CPU nodes (`None`: all usable).
    pub cpu_nodes: Option<NodeSet>,
    /// Memory nodes (`None`: all usable).
    pub mem_nodes: Option<NodeSet>,
    /// Bytes per array (`None`: [`default_array_bytes`]).
    pub array_bytes: Option<u64>,
    /// Threads per pair (`None`: one per usable CPU of the CPU node).
    pub threads: Option<usize>,
    /// Measured repetitions.
    pub reps: usize,
    /// Kernels.
    pub kernels: Vec<Kernel>,
    /// Transparent huge pages.
    pub huge_pages: bool,
}

impl Default for BandwidthOptions {
    /// STREAM's defaults: all four kernels, 10 repetitions (the first of
    /// STREAM's 10 is unmeasured; here one more runs first).
    fn default() -> Self {
        BandwidthOptions {
            cpu_nodes: None,
            mem_nodes: None,
            array_bytes: None,
            threads: None,
            reps: 10,
            kernels: Kernel::ALL.to_vec(),
            huge_pages: false,
        }
    }
}

/// The bandwidth matrix.
pub fn run_bandwidth(
    topo: &Topology,
    probe: &mut dyn Probe,
    opts: &BandwidthOptions,
    progress: &mut dyn FnMut(&Step),
) -> Result<BandwidthReport, BenchError> {
    if opts.reps == 0 || opts.kernels.is_empty() || opts.threads == Some(0) {
        return Err(BenchError::Usage("need at least one repetition, one kernel and one thread".into()));
    }
    let pairs = pairs(topo, opts.cpu_nodes.as_ref(), opts.mem_nodes.as_ref())?;
    let (array_bytes, note) = sizing::array_bytes(topo, opts.array_bytes, &mem_nodes_of(&pairs))?;
    let params = BandwidthParams {
        array_bytes,
        threads: opts.threads,
        reps: opts.reps,
        kernels: opts.kernels.clone(),
        huge_pages: opts.huge_pages,
    };
    let mut results = Vec::new();
    for (i, pair) in pairs.iter().enumerate() {
        progress(&Step {
            done: i,
            total: pairs.len(),
            what: format!("CPUs of node {} × memory of node {}", pair.cpu_node, pair.mem_node),
        });
        let raw = probe.bandwidth(pair, &params)?;
        results.extend(results::summarise_bandwidth(pair, &raw));
    }
    progress(&Step { done: pairs.len(), total: pairs.len(), what: String::new() });
    let firmware = bandwidth_checks(topo, &results);
    Ok(BandwidthReport {
        array_bytes,
        reps: opts.reps,
        huge_pages: opts.huge_pages,
        validated: true,
        results,
        firmware,
        notes: note.into_iter().collect(),
    })
}

/// Options of [`run_latency`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LatencyOptions {
    /// CPU nodes (`None`: all usable).
    pub cpu_nodes: Option<NodeSet>,
    /// Memory nodes (`None`: all usable).
    pub mem_nodes: Option<NodeSet>,
    /// Buffer sizes (`None`: [`default_latency_bytes`]).
    pub sizes: Option<Vec<u64>>,
    /// Repetitions per measurement.
    pub reps: usize,
    /// About how long each repetition chases.
    pub time_per_rep: Duration,
    /// Cycle order.
    pub pattern: Pattern,
    /// Transparent huge pages.
    pub huge_pages: bool,
    /// Seed of the random cycle.
    pub seed: u64,
}

impl Default for LatencyOptions {
    fn default() -> Self {
        LatencyOptions {
            cpu_nodes: None,
            mem_nodes: None,
            sizes: None,
            reps: 5,
            time_per_rep: Duration::from_millis(100),
            pattern: Pattern::Random,
            huge_pages: false,
            seed: 1,
        }
    }
}

/// The latency matrix (at each size).
pub fn run_latency(
    topo: &Topology,
    probe: &mut dyn Probe,
    opts: &LatencyOptions,
    progress: &mut dyn FnMut(&Step),
) -> Result<LatencyReport, BenchError> {
    if opts.reps == 0 {
        return Err(BenchError::Usage("need at least one repetition".into()));
    }
    let pairs = pairs(topo, opts.cpu_nodes.as_ref(), opts.mem_nodes.as_ref())?;
    if opts.sizes.as_ref().is_some_and(Vec::is_empty) {
        return Err(BenchError::Usage("no size to measure".into()));
    }
    let (sizes, note) = sizing::latency_sizes(topo, opts.sizes.as_deref(), &mem_nodes_of(&pairs))?;
    let params = LatencyParams {
        reps: opts.reps,
        time_per_rep: opts.time_per_rep,
        pattern: opts.pattern,
        huge_pages: opts.huge_pages,
        seed: opts.seed,
    };
    let total = pairs.len() * sizes.len();
    let mut results = Vec::with_capacity(total);
    for pair in &pairs {
        for &size in &sizes {
            progress(&Step {
                done: results.len(),
                total,
                what: format!(
                    "CPU node {} × memory node {}, {}",
                    pair.cpu_node,
                    pair.mem_node,
                    crate::units::human_bytes(size)
                ),
            });
            let raw = probe.latency(pair, size, &params)?;
            results.push(results::summarise_latency(pair, size, &raw));
        }
    }
    progress(&Step { done: total, total, what: String::new() });
    let firmware = latency_checks(topo, &results);
    Ok(LatencyReport {
        pattern: opts.pattern,
        reps: opts.reps,
        huge_pages: opts.huge_pages,
        sizes,
        results,
        firmware,
        notes: note.into_iter().collect(),
    })
}

/// Options of [`run_loaded`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadedOptions {
    /// CPU node (`None`: the first usable).
    pub cpu_node: Option<u32>,
    /// Memory node (`None`: the CPU node if it has memory, else the first
    /// usable).
    pub mem_node: Option<u32>,
    /// Chased buffer (`None`: [`default_latency_bytes`]).
    pub size_bytes: Option<u64>,
    /// Each generator's buffer (`None`: [`default_array_bytes`]).
    pub generator_bytes: Option<u64>,
    /// Generators (`None`: every other CPU of the node).
    pub generators: Option<usize>,
    /// Delays, longest first (`None`: [`DEFAULT_DELAYS`]); an idle point
    /// always comes first.
    pub delays: Option<Vec<u64>>,
    /// About how long the chase runs per point.
    pub time_per_point: Duration,
    /// Cycle order.
    pub pattern: Pattern,
    /// Transparent huge pages.
    pub huge_pages: bool,
    /// Seed of the random cycle.
    pub seed: u64,
}

/// Delay-loop lengths of the loaded-latency curve, from light to full load.
pub const DEFAULT_DELAYS: [u64; 9] = [20_000, 5_000, 2_000, 1_000, 500, 200, 100, 50, 0];

impl Default for LoadedOptions {
    fn default() -> Self {
        LoadedOptions {
            cpu_node: None,
            mem_node: None,
            size_bytes: None,
            generator_bytes: None,
            generators: None,
            delays: None,
            time_per_point: Duration::from_millis(200),
            pattern: Pattern::Random,
            huge_pages: false,
            seed: 1,
        }
    }
}

/// The loaded-latency curve of one pair.
pub fn run_loaded(
    topo: &Topology,
    probe: &mut dyn Probe,
    opts: &LoadedOptions,
    progress: &mut dyn FnMut(&Step),
) -> Result<LoadedReport, BenchError> {
    let one = |id: Option<u32>| id.map(|i| std::iter::once(i).collect::<NodeSet>());
    let all = pairs(topo, one(opts.cpu_node).as_ref(), one(opts.mem_node).as_ref())?;
    let pair = all
        .iter()
        .find(|p| opts.mem_node.is_some() || p.cpu_node == p.mem_node)
        .or_else(|| all.first())
        .cloned()
        .ok_or_else(|| BenchError::Usage("no usable node pair".into()))?;
    let generators =
        opts.generators.unwrap_or(pair.cpus.len().saturating_sub(1)).min(pair.cpus.len().saturating_sub(1));
    let (size_bytes, generator_bytes, note) =
        sizing::loaded_bytes(topo, (opts.size_bytes, opts.generator_bytes), generators as u64, pair.mem_node)?;
    let mut delays: Vec<Option<u64>> = vec![None];
    if generators > 0 {
        delays.extend(opts.delays.clone().unwrap_or_else(|| DEFAULT_DELAYS.to_vec()).into_iter().map(Some));
    }
    let params = LoadedParams {
        size_bytes,
        generator_bytes,
        generators: Some(generators),
        delays,
        time_per_point: opts.time_per_point,
        pattern: opts.pattern,
        huge_pages: opts.huge_pages,
        seed: opts.seed,
    };
    progress(&Step {
        done: 0,
        total: 1,
        what: format!("loaded latency, CPU node {} × memory node {}", pair.cpu_node, pair.mem_node),
    });
    let raw = probe.loaded(&pair, &params)?;
    progress(&Step { done: 1, total: 1, what: String::new() });
    let mut report = results::summarise_loaded(&pair, size_bytes, generator_bytes, &raw);
    report.notes = note.into_iter().collect();
    Ok(report)
}

#[cfg(test)]
mod tests;
