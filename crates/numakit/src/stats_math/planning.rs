//! Planning: what precision a number of runs buys, and how many runs a
//! target precision needs, from a measured coefficient of variation.
//!
//! Both assume normal noise with the measured standard deviation.

use serde::{Deserialize, Serialize};

use super::summary::{student_t_quantile, CONFIDENCE};

/// E[max_i |x_i - mean(x)|] / sigma for n = 1..=5 normal values. n = 2 is
/// exactly 1/sqrt(pi); n = 3..5 were computed by simulation (1.5 million
/// samples each, standard error below 0.0005) and are checked again by a
/// seeded simulation in the tests.
const MAX_DEV_FACTOR: [f64; 5] = [0.0, 0.564_19, 0.976_71, 1.196_74, 1.352_74];

/// [`runs_needed`] gives up (returns `None`) beyond this many runs.
pub const MAX_RUNS_NEEDED: usize = 100_000;

/// The max variance (see
/// [`max_variance_pct`](super::max_variance_pct)) one should expect to see
/// in `n` runs (1 to 5) of a workload whose standard deviation is `cv_pct`
/// percent of its mean. `None` outside 1..=5.
pub fn expected_max_variance_pct(cv_pct: f64, n: usize) -> Option<f64> {
    let k = MAX_DEV_FACTOR.get(n.checked_sub(1)?)?;
    Some(k * cv_pct)
}

/// The fewest runs (at least 2) whose 95% confidence interval half-width,
/// t(0.975, n - 1) * cv / sqrt(n), is at most `target_pct` percent of the
/// mean, for a workload with coefficient of variation `cv_pct` percent.
/// `None` when the target is not positive or needs more than
/// [`MAX_RUNS_NEEDED`] runs.
pub fn runs_needed(cv_pct: f64, target_pct: f64) -> Option<usize> {
    if target_pct.is_nan() || target_pct <= 0.0 || !cv_pct.is_finite() || cv_pct < 0.0 {
        return None;
    }
    let q = 1.0 - (1.0 - CONFIDENCE) / 2.0;
    let half = |n: usize| student_t_quantile(q, (n - 1) as f64).map(|t| t * cv_pct / (n as f64).sqrt());
    // The half-width falls with n: find a bound by doubling, then bisect.
    let mut hi = 2;
    while half(hi)? > target_pct {
        hi *= 2;
        if hi > 2 * MAX_RUNS_NEEDED {
            return None;
        }
    }
    let mut lo = hi / 2; // half(lo) > target, or lo < 2
    if lo < 2 {
        return Some(2);
    }
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if half(mid)? <= target_pct {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    (hi <= MAX_RUNS_NEEDED).then_some(hi)
}

/// One row of the planning table: what `runs` runs give.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanRow {
    /// Number of runs (1 to 5).
    pub runs: usize,
    /// [`expected_max_variance_pct`] for that many runs.
    pub expected_max_variance_pct: f64,
    /// Expected 95% confidence half-width of the mean, percent (`None` for
    /// one run).
    pub ci_half_width_pct: Option<f64>,
}

impl PlanRow {
    /// The table for 1 to 5 runs at coefficient of variation `cv_pct`.
    pub fn table(cv_pct: f64) -> Vec<PlanRow> {
        let q = 1.0 - (1.0 - CONFIDENCE) / 2.0;
        (1..=MAX_DEV_FACTOR.len())
            .map(|n| PlanRow {
                runs: n,
                expected_max_variance_pct: expected_max_variance_pct(cv_pct, n).unwrap_or(0.0),
                ci_half_width_pct: (n >= 2)
                    .then(|| student_t_quantile(q, (n - 1) as f64))
                    .flatten()
                    .map(|t| t * cv_pct / (n as f64).sqrt()),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats_math::max_variance_pct;
    use rand::distributions::Distribution;
    use rand::{rngs::StdRng, SeedableRng};

    #[test]
    fn max_variance_factors_match_a_simulation() {
        let mut rng = StdRng::seed_from_u64(11);
        let normal = statrs::distribution::Normal::new(100.0, 5.0).expect("normal");
        for n in 1..=5 {
            let trials = 40_000;
            let total: f64 = (0..trials)
                .map(|_| {
                    let xs: Vec<f64> = (0..n).map(|_| normal.sample(&mut rng)).collect();
                    max_variance_pct(&xs).expect("mean > 0")
                })
                .sum();
            let got = total / trials as f64;
            let want = expected_max_variance_pct(5.0, n).expect("1..5");
            assert!((got - want).abs() <= 0.02 * want.max(0.1), "n {n}: simulated {got}, table {want}");
        }
        assert_eq!(expected_max_variance_pct(5.0, 0), None);
        assert_eq!(expected_max_variance_pct(5.0, 6), None);
    }

    #[test]
    fn runs_needed_is_the_first_n_that_reaches_the_target() {
        // cv 5%, target 2%: n = 27 gives t(.975,26) 2.0555 * 5 / sqrt(27) = 1.978,
        // n = 26 gives 2.0595 * 5 / sqrt(26) = 2.0195.
        assert_eq!(runs_needed(5.0, 2.0), Some(27));
        assert_eq!(runs_needed(0.0, 1.0), Some(2));
        assert_eq!(runs_needed(1.0, 100.0), Some(2));
        assert_eq!(runs_needed(5.0, 0.0), None);
        assert_eq!(runs_needed(100.0, 0.01), None, "beyond the cap");
        for (cv, target) in [(3.0, 1.0), (10.0, 2.5), (1.0, 0.1)] {
            let n = runs_needed(cv, target).expect("reachable");
            let t = |n: usize| student_t_quantile(0.975, (n - 1) as f64).expect("t") * cv / (n as f64).sqrt();
            assert!(t(n) <= target && t(n - 1) > target, "cv {cv} target {target}: {n}");
        }
    }

    #[test]
    fn table_rows() {
        let t = PlanRow::table(10.0);
        assert_eq!(t.len(), 5);
        assert_eq!((t[0].runs, t[0].expected_max_variance_pct, t[0].ci_half_width_pct), (1, 0.0, None));
        // Two runs: t(.975, 1) = 12.706 * 10 / sqrt 2.
        assert!((t[1].ci_half_width_pct.expect("2 runs") - 12.7062 * 10.0 / 2f64.sqrt()).abs() < 1e-2);
        assert!(t.windows(2).all(|w| w[0].expected_max_variance_pct < w[1].expected_max_variance_pct));
    }
}
