//! `numakit compare`: build the experiment from the flags and/or a TOML
//! file, run it with the shell runner (progress bar on a terminal), print
//! the report or JSON, save it, or compare against a saved baseline.

use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use clap::builder::RangedU64ValueParser;
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use numakit::act::{get_affinity, Pid};
use numakit::compare::{
    self, spec, spec::sh_quote, Aggregate, CompareError, CompareResult, ConfigSpec, CopiesSpec, Experiment,
    ExperimentFile, Metric, Order, ShellRunner,
};
use numakit::present;
use numakit::sys::SysRoot;

use crate::Failure;

/// `numakit compare`: runs WORKLOAD under each configuration in interleaved
/// rounds (A B A B ...) and reports which is better and how sure that is.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// A configuration: NAME=PREFIX, the prefix placed before the workload
    /// (e.g. local='numakit run -N 0 -m 0'); repeatable; the first is the baseline.
    #[arg(long = "config", value_name = "NAME=PREFIX")]
    pub configs: Vec<String>,
    /// A TOML experiment file (configurations with placement, tune profile,
    /// before/after commands; see docs/compare.md). Flags override it.
    #[arg(long, value_name = "FILE")]
    pub experiment: Option<PathBuf>,
    /// Measured runs per configuration [default: 10].
    #[arg(long, value_name = "N", value_parser = RangedU64ValueParser::<usize>::new().range(1..=spec::MAX_RUNS as u64))]
    pub runs: Option<usize>,
    /// Unmeasured warm-up runs per configuration, before the measured ones [default: 1].
    #[arg(long, value_name = "N", value_parser = RangedU64ValueParser::<usize>::new().range(0..=spec::MAX_WARMUP as u64))]
    pub warmup: Option<usize>,
    /// Randomise the order within each round, from this seed.
    #[arg(long, value_name = "SEED")]
    pub shuffle: Option<u64>,
    /// Compare the number in the first capture group of this regex in the
    /// workload's output instead of the wall time.
    #[arg(long, value_name = "REGEX")]
    pub metric_regex: Option<String>,
    /// A larger figure is better (default: smaller, as for times).
    #[arg(long)]
    pub higher_is_better: bool,
    /// Copies run at once per run: a number or per-cpu (one per usable CPU).
    #[arg(long, value_name = "N|per-cpu")]
    pub copies: Option<String>,
    /// How the copies' figures combine [default: sum].
    #[arg(long, value_enum)]
    pub aggregate: Option<AggregateArg>,
    /// Target half-width of the 95% confidence interval, percent of the
    /// mean, for the runs-needed estimate [default: 1].
    #[arg(long, value_name = "PCT")]
    pub target_ci: Option<f64>,
    /// Save the results as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub save: Option<PathBuf>,
    /// Compare against the baseline of results saved with --save.
    #[arg(long, value_name = "FILE")]
    pub against: Option<PathBuf>,
    #[command(flatten)]
    pub format: crate::cli::JsonOut,
    /// No progress bar.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// The workload: one shell command line, or a command and its arguments.
    #[arg(trailing_var_arg = true, value_name = "WORKLOAD")]
    pub workload: Vec<OsString>,
}

/// `--aggregate`.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum AggregateArg {
    /// Add the copies' figures (throughput).
    Sum,
    /// Average them.
    Mean,
}

fn spec_error(e: CompareError) -> Failure {
    match e {
        CompareError::Spec(m) => Failure::usage(m),
        e => Failure::system(e.to_string()),
    }
}

fn workload(words: &[OsString]) -> Option<String> {
    match words {
        [] => None,
        [one] => Some(one.to_string_lossy().into_owned()),
        many => Some(many.iter().map(|w| sh_quote(&w.to_string_lossy())).collect::<Vec<_>>().join(" ")),
    }
}

/// The experiment: the file's settings, overridden by the flags.
fn experiment(args: &CompareArgs) -> Result<Experiment, Failure> {
    let file = match &args.experiment {
        Some(p) => {
            let text = numakit::files::read_named_text(p).map_err(|e| Failure::system(format!("--experiment {e}")))?;
            ExperimentFile::parse(&text).map_err(|e| Failure::usage(format!("{}: {e}", numakit::text::path(p))))?
        }
        None => ExperimentFile::default(),
    };
    let numakit = std::env::current_exe().map(|p| p.display().to_string()).unwrap_or_else(|_| "numakit".into());
    let mut configs = file.config_specs(&numakit).map_err(spec_error)?;
    for c in &args.configs {
        configs.push(ConfigSpec::parse_flag(c).map_err(spec_error)?);
    }
    if configs.is_empty() {
        configs.push(ConfigSpec::new("default", ""));
    }
    let work = workload(&args.workload).or(file.workload.clone()).ok_or_else(|| {
        Failure::usage("no workload given: numakit compare --config A=... --config B=... -- WORKLOAD")
    })?;
    let mut e = Experiment::new(work, configs);
    e.runs = args.runs.or(file.runs).unwrap_or(e.runs);
    e.warmup = args.warmup.or(file.warmup).unwrap_or(e.warmup);
    if let Some(seed) = args.shuffle.or(file.shuffle_seed) {
        e.order = Order::Shuffled { seed };
    }
    if let Some(re) = args.metric_regex.clone().or(file.metric_regex.clone()) {
        e.metric = Metric::Regex { pattern: re };
    }
    e.higher_is_better = args.higher_is_better || file.higher_is_better.unwrap_or(false);
    let copies = match &args.copies {
        Some(c) => Some(CopiesSpec::parse(c).map_err(spec_error)?),
        None => file.copies,
    };
    if let Some(c) = copies {
        let cpus = get_affinity(Pid::SELF).map(|s| s.len()).unwrap_or(1);
        e.copies = c.count(cpus);
    }
    e.aggregate = match args.aggregate {
        Some(AggregateArg::Sum) => Aggregate::Sum,
        Some(AggregateArg::Mean) => Aggregate::Mean,
        None => file.aggregate.unwrap_or(Aggregate::Sum),
    };
    if let Some(t) = args.target_ci.or(file.target_ci) {
        e.target_ci_pct = Some(t);
    }
    e.validate().map_err(spec_error)?;
    Ok(e)
}

/// Runs `numakit compare`.
pub fn run(_sys: &SysRoot, args: &CompareArgs) -> anyhow::Result<u8> {
    let exp = experiment(args)?;
    // Ended, compare ends the workload's process group first.
    compare::child::forward_signals();
    let against = match &args.against {
        Some(p) => Some((CompareResult::load(p).map_err(spec_error)?, p.display().to_string())),
        None => None,
    };
    let pb = (!args.quiet && std::io::stderr().is_terminal()).then(|| {
        let pb = ProgressBar::new(1);
        if let Ok(style) = ProgressStyle::with_template("{bar:30} {pos}/{len} {elapsed} {msg}") {
            pb.set_style(style);
        }
        pb
    });
    let result =
        compare::run_experiment(&exp, &mut ShellRunner, against.as_ref().map(|(r, f)| (r, f.as_str())), &mut |p| {
            if let Some(pb) = &pb {
                pb.set_length(p.total as u64);
                pb.set_position(p.done as u64);
                pb.set_message(format!("{}{}", p.config, if p.warmup { " (warm-up)" } else { "" }));
            }
        });
    if let Some(pb) = &pb {
        pb.finish_and_clear();
    }
    let result = result.map_err(spec_error)?;
    if let Some(p) = &args.save {
        result.save(p).map_err(spec_error)?;
    }
    let out = if args.format.json { result.to_json() + "\n" } else { present::compare::text(&result) };
    crate::output::stdout().write_all(out.as_bytes())?;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workload_words() {
        assert_eq!(workload(&[]), None);
        assert_eq!(workload(&["sleep 0.1 && echo x".into()]).as_deref(), Some("sleep 0.1 && echo x"));
        assert_eq!(workload(&["echo".into(), "a b".into()]).as_deref(), Some("echo 'a b'"));
    }
}
