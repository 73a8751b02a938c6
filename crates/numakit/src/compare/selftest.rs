//! Statistics self-test: the whole compare engine on synthetic workloads
//! with known noise, through a seeded stand-in [`Runner`].
//!
//! For each noise model, 1000 experiments of two identical configurations
//! with 10 runs each (and a 3-run case): the 95% confidence interval of the
//! first must hold the true mean in 95% ± 3% of the experiments, and
//! Welch's test must call the (equal) configurations different in at most
//! 5% + 2% of them. The
//! measured figures are recorded in docs/compare.md (run with
//! `cargo test -p numakit --features measure selftest -- --nocapture` to see them).

use rand::distributions::Distribution;
use rand::{rngs::StdRng, SeedableRng};
use statrs::distribution::{LogNormal, Normal};

use super::{run_experiment, CompareError, ConfigSpec, Experiment, Job, Outcome, Runner, Verdict};

/// Wall times drawn from a distribution.
struct Noise<D: Distribution<f64>> {
    dist: D,
    rng: StdRng,
}

impl<D: Distribution<f64>> Runner for Noise<D> {
    fn run(&mut self, _job: &Job<'_>) -> Result<Outcome, CompareError> {
        Ok(Outcome { wall_s: self.dist.sample(&mut self.rng), stdouts: vec![Vec::new()] })
    }
}

/// (CI coverage %, false-positive rate %) over `experiments` experiments.
fn simulate<D: Distribution<f64>>(dist: D, true_mean: f64, seed: u64, experiments: usize, runs: usize) -> (f64, f64) {
    let mut runner = Noise { dist, rng: StdRng::seed_from_u64(seed) };
    let mut exp = Experiment::new("synthetic", vec![ConfigSpec::new("a", ""), ConfigSpec::new("b", "")]);
    exp.runs = runs;
    exp.warmup = 0;
    let (mut covered, mut false_pos) = (0usize, 0usize);
    for _ in 0..experiments {
        let r = run_experiment(&exp, &mut runner, None, &mut |_| {}).expect("synthetic run");
        if r.configs[0].summary.as_ref().expect("summary").ci_contains(true_mean) {
            covered += 1;
        }
        let v = r.configs[1].vs_baseline.as_ref().expect("compared").verdict;
        if v != Verdict::NoSignificantDifference {
            false_pos += 1;
        }
    }
    (covered as f64 / experiments as f64 * 100.0, false_pos as f64 / experiments as f64 * 100.0)
}

fn check(name: &str, (coverage, fpr): (f64, f64)) {
    eprintln!("selftest {name}: 95% CI coverage {coverage:.1}%, false-positive rate {fpr:.1}%");
    assert!((92.0..=98.0).contains(&coverage), "{name}: CI coverage {coverage}% not in 95 ± 3%");
    // At most 5% + 2%; a lower rate only means the test is conservative
    // (Welch's test is, with very few runs).
    assert!(fpr <= 7.0, "{name}: false-positive rate {fpr}% above 5 + 2%");
}

#[test]
fn normal_noise_mean_100_sd_5() {
    let dist = Normal::new(100.0, 5.0).expect("normal");
    check("normal(100, 5), 10 runs", simulate(dist, 100.0, 20_240_601, 1000, 10));
}

#[test]
fn lognormal_noise_mean_100() {
    // sigma 0.25 (a skewed, heavy right tail); mu chosen so the mean is 100.
    let sigma: f64 = 0.25;
    let mu = 100f64.ln() - sigma * sigma / 2.0;
    let dist = LogNormal::new(mu, sigma).expect("lognormal");
    check("lognormal(mean 100, sigma 0.25), 10 runs", simulate(dist, 100.0, 20_240_602, 1000, 10));
}

#[test]
fn few_runs_still_hold() {
    let dist = Normal::new(100.0, 5.0).expect("normal");
    check("normal(100, 5), 3 runs", simulate(dist, 100.0, 20_240_603, 1000, 3));
}
