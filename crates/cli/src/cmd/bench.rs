//! `numakit bench bandwidth|latency|loaded`: parse the options, read the
//! topology, run the library's benchmark with a progress bar (stderr, only
//! on a terminal), print a table or JSON, write the SVG.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use numakit::bench::{
    self, BandwidthOptions, BenchError, Kernel, LatencyOptions, LiveProbe, LoadedOptions, Pattern, Step,
};
use numakit::present::{bench as text, plot};
use numakit::sets::NodeSet;
use numakit::sys::SysRoot;
use numakit::topo::Topology;

use super::common::parse_size;
use super::common::read_error;
use crate::Failure;

/// `numakit bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// What to measure.
    #[command(subcommand)]
    pub kind: BenchKind,
}

/// The benchmarks.
#[derive(Debug, Subcommand)]
pub enum BenchKind {
    /// STREAM bandwidth (copy, scale, add, triad) for every CPU node × memory node.
    Bandwidth(BandwidthArgs),
    /// Pointer-chase latency for every CPU node × memory node, at one size or a sweep.
    Latency(LatencyArgs),
    /// Latency on one CPU while the node's other CPUs read memory at rising intensity.
    Loaded(LoadedArgs),
}

/// Options every benchmark takes.
#[derive(Debug, Args)]
pub struct OutputArgs {
    /// Ask for transparent huge pages (madvise MADV_HUGEPAGE) for the buffers.
    #[arg(long)]
    pub huge_pages: bool,
    #[command(flatten)]
    pub format: crate::cli::JsonOut,
    /// Also draw a picture to FILE ("-": standard output instead of the table).
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// No progress bar.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

/// `numakit bench bandwidth`.
#[derive(Debug, Args)]
pub struct BandwidthArgs {
    /// Run threads on the CPUs of these nodes (default: every node with CPUs).
    #[arg(long, value_name = "NODES")]
    pub cpu_nodes: Option<String>,
    /// Bind the arrays to these nodes (default: every node with memory).
    #[arg(long, value_name = "NODES")]
    pub mem_nodes: Option<String>,
    /// Threads per CPU node (default: one per usable CPU of the node).
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// Bytes per array, three arrays (default: 4 × the total last-level cache).
    #[arg(long, value_name = "SIZE")]
    pub size: Option<String>,
    /// Measured repetitions (one more runs first, unmeasured).
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub reps: usize,
    /// Kernels to run, in STREAM's order.
    #[arg(long, value_name = "LIST", value_delimiter = ',', default_value = "copy,scale,add,triad")]
    pub kernels: Vec<String>,
    #[command(flatten)]
    pub out: OutputArgs,
}

/// Cycle order of the chase.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum PatternArg {
    /// One random order over every cache line of the buffer.
    Random,
    /// Random pages; each page's lines in random order before the next page (fewer TLB misses).
    Page,
}

impl From<PatternArg> for Pattern {
    fn from(p: PatternArg) -> Pattern {
        match p {
            PatternArg::Random => Pattern::Random,
            PatternArg::Page => Pattern::Page,
        }
    }
}

/// `numakit bench latency`.
#[derive(Debug, Args)]
pub struct LatencyArgs {
    /// Chase from the first CPU of these nodes (default: every node with CPUs).
    #[arg(long, value_name = "NODES")]
    pub cpu_nodes: Option<String>,
    /// Bind the buffer to these nodes (default: every node with memory).
    #[arg(long, value_name = "NODES")]
    pub mem_nodes: Option<String>,
    /// Buffer size (default: 256 MiB, or 4 × the last-level cache if larger).
    #[arg(long, value_name = "SIZE", conflicts_with = "sizes")]
    pub size: Option<String>,
    /// Sweep sizes: FROM-TO in powers of two, or a list (default when given alone: 16K-1G).
    #[arg(long, value_name = "SIZES", num_args = 0..=1, default_missing_value = "16K-1G")]
    pub sizes: Option<String>,
    /// Repetitions per measurement (the median is reported).
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub reps: usize,
    /// About how long each repetition chases, milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 100)]
    pub time_ms: u64,
    /// Cycle order.
    #[arg(long, value_enum, default_value = "random")]
    pub pattern: PatternArg,
    /// Seed of the random cycle.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[command(flatten)]
    pub out: OutputArgs,
}

/// `numakit bench loaded`.
#[derive(Debug, Args)]
pub struct LoadedArgs {
    /// The CPU node (default: the first with CPUs).
    #[arg(long, value_name = "NODE")]
    pub cpu_node: Option<u32>,
    /// The memory node (default: the CPU node's own).
    #[arg(long, value_name = "NODE")]
    pub mem_node: Option<u32>,
    /// Size of the chased buffer (default as for latency).
    #[arg(long, value_name = "SIZE")]
    pub size: Option<String>,
    /// Size of each load generator's buffer (default: 4 × the last-level cache).
    #[arg(long, value_name = "SIZE")]
    pub generator_size: Option<String>,
    /// Load generators (default: every other CPU of the node).
    #[arg(long, value_name = "N")]
    pub generators: Option<usize>,
    /// Delay-loop lengths between the generators' 512-byte reads, light to heavy.
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub delays: Option<Vec<u64>>,
    /// About how long the chase runs per point, milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 200)]
    pub time_ms: u64,
    /// Cycle order.
    #[arg(long, value_enum, default_value = "random")]
    pub pattern: PatternArg,
    /// Seed of the random cycle.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[command(flatten)]
    pub out: OutputArgs,
}

fn nodes(flag: &str, v: &Option<String>) -> Result<Option<NodeSet>, Failure> {
    v.as_ref().map(|s| NodeSet::parse_list(s).map_err(|e| Failure::usage(format!("{flag} \"{s}\": {e}")))).transpose()
}

fn size(flag: &str, v: &Option<String>) -> Result<Option<u64>, Failure> {
    v.as_ref()
        .map(|s| match parse_size(s) {
            Ok(0) => Err(Failure::usage(format!("{flag} \"{s}\": must be more than 0"))),
            Ok(n) => Ok(n),
            Err(e) => Err(Failure::usage(format!("{flag}: {}", e.message))),
        })
        .transpose()
}

/// `16K-1G` (powers of two) or `16K,1M,256M`.
fn sizes(s: &str) -> Result<Vec<u64>, Failure> {
    let bad = |why: &str| Failure::usage(format!("--sizes \"{s}\": {why}"));
    let out = if let Some((a, b)) = s.split_once('-') {
        let (a, b) = (parse_size(a).map_err(|e| bad(&e.message))?, parse_size(b).map_err(|e| bad(&e.message))?);
        if a == 0 || a > b {
            return Err(bad("use FROM-TO with 0 < FROM <= TO"));
        }
        bench::size_sweep(a, b)
    } else {
        s.split(',').map(|p| parse_size(p).map_err(|e| bad(&e.message))).collect::<Result<Vec<_>, _>>()?
    };
    if out.is_empty() || out.contains(&0) {
        return Err(bad("no size, or a size of 0"));
    }
    Ok(out)
}

fn bench_error(e: BenchError) -> Failure {
    match e {
        BenchError::Usage(m) => Failure::usage(m),
        e => Failure::system(e.to_string()),
    }
}

/// A progress bar on stderr when it is a terminal; `None` otherwise.
fn bar(quiet: bool) -> Option<ProgressBar> {
    if quiet || !std::io::stderr().is_terminal() {
        return None;
    }
    let pb = ProgressBar::new(1);
    if let Ok(style) = ProgressStyle::with_template("{bar:30} {pos}/{len} {elapsed} {msg}") {
        pb.set_style(style);
    }
    Some(pb)
}

fn step_to(pb: &Option<ProgressBar>) -> impl FnMut(&Step) + '_ {
    move |s: &Step| {
        if let Some(pb) = pb {
            pb.set_length(s.total as u64);
            pb.set_position(s.done as u64);
            pb.set_message(s.what.clone());
        }
    }
}

fn topology(sys: &SysRoot) -> Result<Topology, Failure> {
    Topology::read(sys).map_err(read_error)
}

/// Prints the text or JSON, and writes the SVG.
fn output(
    out: &OutputArgs,
    text: String,
    json: String,
    svg: impl FnOnce() -> Result<String, String>,
) -> anyhow::Result<u8> {
    let mut stdout = crate::output::stdout();
    match &out.svg {
        Some(p) if p.as_os_str() == "-" => {
            stdout.write_all(svg().map_err(Failure::system)?.as_bytes())?;
            return Ok(0);
        }
        Some(p) => {
            let s = svg().map_err(Failure::system)?;
            std::fs::write(p, s).map_err(|e| Failure::system(format!("cannot write {}: {e}", p.display())))?;
        }
        None => {}
    }
    stdout.write_all(if out.format.json { json } else { text }.as_bytes())?;
    Ok(0)
}

/// Runs `numakit bench`.
pub fn run(sys: &SysRoot, args: &BenchArgs) -> anyhow::Result<u8> {
    match &args.kind {
        BenchKind::Bandwidth(a) => bandwidth(sys, a),
        BenchKind::Latency(a) => latency(sys, a),
        BenchKind::Loaded(a) => loaded(sys, a),
    }
}

fn bandwidth(sys: &SysRoot, a: &BandwidthArgs) -> anyhow::Result<u8> {
    let kernels = a
        .kernels
        .iter()
        .map(|k| {
            Kernel::parse(k)
                .ok_or_else(|| Failure::usage(format!("--kernels: unknown kernel \"{k}\" (copy, scale, add, triad)")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let opts = BandwidthOptions {
        cpu_nodes: nodes("--cpu-nodes", &a.cpu_nodes)?,
        mem_nodes: nodes("--mem-nodes", &a.mem_nodes)?,
        array_bytes: size("--size", &a.size)?,
        threads: a.threads,
        reps: a.reps,
        kernels,
        huge_pages: a.out.huge_pages,
    };
    let topo = topology(sys)?;
    let pb = bar(a.out.quiet);
    let report = bench::run_bandwidth(&topo, &mut LiveProbe, &opts, &mut step_to(&pb)).map_err(bench_error);
    if let Some(pb) = &pb {
        pb.finish_and_clear();
    }
    let report = report?;
    output(&a.out, text::bandwidth_text(&report), text::bandwidth_json(&report), || plot::bandwidth_svg(&report))
}

fn latency(sys: &SysRoot, a: &LatencyArgs) -> anyhow::Result<u8> {
    let sizes = match (&a.sizes, size("--size", &a.size)?) {
        (Some(s), _) => Some(sizes(s)?),
        (None, Some(n)) => Some(vec![n]),
        (None, None) => None,
    };
    let opts = LatencyOptions {
        cpu_nodes: nodes("--cpu-nodes", &a.cpu_nodes)?,
        mem_nodes: nodes("--mem-nodes", &a.mem_nodes)?,
        sizes,
        reps: a.reps,
        time_per_rep: Duration::from_millis(a.time_ms),
        pattern: a.pattern.into(),
        huge_pages: a.out.huge_pages,
        seed: a.seed,
    };
    let topo = topology(sys)?;
    let pb = bar(a.out.quiet);
    let report = bench::run_latency(&topo, &mut LiveProbe, &opts, &mut step_to(&pb)).map_err(bench_error);
    if let Some(pb) = &pb {
        pb.finish_and_clear();
    }
    let report = report?;
    output(&a.out, text::latency_text(&report), text::latency_json(&report), || plot::latency_svg(&report))
}

fn loaded(sys: &SysRoot, a: &LoadedArgs) -> anyhow::Result<u8> {
    let opts = LoadedOptions {
        cpu_node: a.cpu_node,
        mem_node: a.mem_node,
        size_bytes: size("--size", &a.size)?,
        generator_bytes: size("--generator-size", &a.generator_size)?,
        generators: a.generators,
        delays: a.delays.clone(),
        time_per_point: Duration::from_millis(a.time_ms),
        pattern: a.pattern.into(),
        huge_pages: a.out.huge_pages,
        seed: a.seed,
    };
    let topo = topology(sys)?;
    let pb = bar(a.out.quiet);
    let report = bench::run_loaded(&topo, &mut LiveProbe, &opts, &mut step_to(&pb)).map_err(bench_error);
    if let Some(pb) = &pb {
        pb.finish_and_clear();
    }
    let report = report?;
    output(&a.out, text::loaded_text(&report), text::loaded_json(&report), || plot::loaded_svg(&report))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_lists() {
        assert_eq!(sizes("16K-64K").ok(), Some(vec![16 << 10, 32 << 10, 64 << 10]));
        assert_eq!(sizes("4K,1M").ok(), Some(vec![4 << 10, 1 << 20]));
        assert_eq!(sizes("16K-1G").map(|v| v.len()).ok(), Some(17));
        for bad in ["1G-16K", "x", "0,4K", "0-4K"] {
            assert!(sizes(bad).is_err(), "{bad}");
        }
    }
}
