//! `numakit compare`: run a workload under several configurations and say
//! which is better and how sure that is.
//!
//! * [`spec`]: the experiment (configurations as command prefixes, runs,
//!   warm-ups, order, the figure), from flags or a TOML file;
//! * [`schedule`]: the interleaved order of runs;
//! * [`runner`]: the [`Runner`] trait that performs one run, and the real
//!   [`ShellRunner`] (`sh -c "PREFIX WORKLOAD"`);
//! * [`child`]: the processes a run starts, in a process group of their
//!   own, their output read with bounds, ended with compare;
//! * [`result`]: the statistics per configuration and against the
//!   baseline, saved and loaded as JSON.
//!
//! [`run_experiment`] ties them together. It never prints: progress goes
//! to a callback and the result is a plain struct that `present::compare`
//! renders. Statistics come from [`crate::stats_math`].

pub mod child;
pub mod result;
pub mod runner;
pub mod schedule;
pub mod spec;

#[cfg(test)]
mod selftest;

pub use result::{analyse, compare_samples, Baseline, CompareResult, Comparison, ConfigResult, Verdict};
pub use runner::{figure, Job, Outcome, Runner, ShellRunner};
pub use schedule::{schedule, Slot};
pub use spec::{Aggregate, ConfigSpec, CopiesSpec, Experiment, ExperimentFile, Metric, Order};

/// Why an experiment could not be run or read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CompareError {
    /// The experiment is wrongly specified (a usage error).
    #[error("{0}")]
    Spec(String),
    /// A run failed (the workload or a before/after command).
    #[error("{0}")]
    Run(String),
    /// A saved result cannot be read or written.
    #[error("{0}")]
    Saved(String),
}

/// Where an experiment is, for a progress display.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    /// Runs finished.
    pub done: usize,
    /// Runs in all (warm-ups included).
    pub total: usize,
    /// The configuration about to run (empty when finished).
    pub config: String,
    /// Whether that run is a warm-up.
    pub warmup: bool,
}

/// Runs `exp` with `runner` in the order of [`schedule`] and analyses the
/// measured runs ([`analyse`]); `against` is a saved result to use as the
/// baseline, with its file name. `progress` is called before each run and
/// once at the end.
pub fn run_experiment(
    exp: &Experiment,
    runner: &mut dyn Runner,
    against: Option<(&CompareResult, &str)>,
    progress: &mut dyn FnMut(&Progress),
) -> Result<CompareResult, CompareError> {
    exp.validate()?;
    let slots = schedule(exp.configs.len(), exp.warmup, exp.runs, exp.order);
    let mut samples: Vec<Vec<f64>> = vec![Vec::with_capacity(exp.runs); exp.configs.len()];
    let mut sequence = Vec::with_capacity(exp.runs.checked_mul(exp.configs.len()).unwrap_or(0));
    for (done, slot) in slots.iter().enumerate() {
        let config = &exp.configs[slot.config];
        progress(&Progress { done, total: slots.len(), config: config.name.clone(), warmup: slot.warmup });
        let job = Job {
            config,
            workload: &exp.workload,
            copies: exp.copies,
            warmup: slot.warmup,
            round: slot.round,
            keep_output: runner::keep_for(&exp.metric, exp.copies),
        };
        let out = runner.run(&job)?;
        if slot.warmup {
            continue;
        }
        let value = figure(&exp.metric, exp.aggregate, &out).map_err(|e| {
            CompareError::Run(format!("config {} run {}: {e}", crate::text::quote(&config.name), slot.round + 1))
        })?;
        samples[slot.config].push(value);
        sequence.push(config.name.clone());
    }
    progress(&Progress { done: slots.len(), total: slots.len(), config: String::new(), warmup: false });
    Ok(analyse(exp, samples, sequence, against))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Answers each configuration with a fixed list of wall times, and
    /// records the order it was asked in.
    struct Scripted {
        times: Vec<Vec<f64>>,
        asked: Vec<(String, bool)>,
    }

    impl Runner for Scripted {
        fn run(&mut self, job: &Job<'_>) -> Result<Outcome, CompareError> {
            self.asked.push((job.config.name.clone(), job.warmup));
            let i = if job.config.name == "a" { 0 } else { 1 };
            let t = if job.warmup { 99.0 } else { self.times[i][job.round] };
            Ok(Outcome { wall_s: t, stdouts: vec![format!("rate={}", 1.0 / t).into_bytes()] })
        }
    }

    #[test]
    fn engine_interleaves_skips_warmups_and_analyses() {
        let mut e = Experiment::new("w", vec![ConfigSpec::new("a", ""), ConfigSpec::new("b", "x")]);
        e.runs = 3;
        let mut r = Scripted { times: vec![vec![2.0, 2.1, 1.9], vec![1.0, 1.1, 0.9]], asked: vec![] };
        let mut seen = Vec::new();
        let res = run_experiment(&e, &mut r, None, &mut |p| seen.push((p.done, p.total))).expect("runs");
        let order: Vec<String> = r.asked.iter().map(|(n, w)| format!("{n}{}", if *w { "w" } else { "" })).collect();
        assert_eq!(order, ["aw", "bw", "a", "b", "a", "b", "a", "b"]);
        assert_eq!(seen.first(), Some(&(0, 8)));
        assert_eq!(seen.last(), Some(&(8, 8)));
        assert_eq!(res.configs[0].samples, vec![2.0, 2.1, 1.9]);
        assert_eq!(res.sequence, ["a", "b", "a", "b", "a", "b"]);
        assert_eq!(res.configs[1].vs_baseline.as_ref().map(|v| v.verdict), Some(Verdict::Better));

        e.metric = Metric::Regex { pattern: "rate=([0-9.]+)".into() };
        e.higher_is_better = true;
        let mut r = Scripted { times: vec![vec![2.0, 2.1, 1.9], vec![1.0, 1.1, 0.9]], asked: vec![] };
        let res = run_experiment(&e, &mut r, None, &mut |_| {}).expect("runs");
        assert_eq!(res.configs[1].samples, vec![1.0, 1.0 / 1.1, 1.0 / 0.9]);
        assert_eq!(res.configs[1].vs_baseline.as_ref().map(|v| v.verdict), Some(Verdict::Better));

        e.metric = Metric::Regex { pattern: "speed=([0-9.]+)".into() };
        let mut r = Scripted { times: vec![vec![1.0; 3], vec![1.0; 3]], asked: vec![] };
        let err = run_experiment(&e, &mut r, None, &mut |_| {}).expect_err("no match");
        assert!(err.to_string().starts_with("config \"a\" run 1: --metric-regex"), "{err}");
    }
}
