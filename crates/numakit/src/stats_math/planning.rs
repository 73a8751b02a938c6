//! Planning: what precision a number of runs buys, and how many runs a
//! target precision needs, from a measured coefficient of variation.
//!
//! Both assume normal noise with the measured standard deviation.

use serde::{Deserialize, Serialize};

use super::summary::{student_t_quantile, CONFIDENCE};
use super::welch::SIGNIFICANCE;

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

/// The most units [`welch_jobs_needed`] and [`paired_units_needed`] look
/// for; beyond, they say [`UnitsNeeded::MoreThan`] this.
pub const MAX_UNITS_NEEDED: u64 = 10_000_000;

/// Units a test needs: a number, or more than [`MAX_UNITS_NEEDED`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum UnitsNeeded {
    /// The fewest that are enough.
    Exactly(u64),
    /// More than this many (the searches' cap).
    MoreThan(u64),
}

/// The normal quantile of `p`.
fn z(p: f64) -> Option<f64> {
    use statrs::distribution::{ContinuousCDF, Normal};
    Some(Normal::new(0.0, 1.0).ok()?.inverse_cdf(p))
}

/// The first `n` from `lowest` on for which `enough(n)` holds (`enough`
/// rising with `n`), starting at `guess` (a lower bound: the normal
/// approximation, which the t quantiles only raise), doubling, then
/// bisecting: at most some 50 calls of `enough`. Beyond
/// [`MAX_UNITS_NEEDED`], `MoreThan` that.
fn first_enough(lowest: u64, guess: f64, enough: impl Fn(u64) -> Option<bool>) -> Option<UnitsNeeded> {
    let cap = MAX_UNITS_NEEDED;
    if guess.is_nan() || guess >= cap as f64 {
        // NaN (never here: the inputs are checked) or beyond the cap
        return Some(UnitsNeeded::MoreThan(cap));
    }
    let start = (guess.floor() as u64).max(lowest);
    // below `lo` is not enough (`lo` itself is unknown), `hi` is enough
    let mut lo = start;
    let mut hi = start;
    while !enough(hi)? {
        lo = hi + 1;
        if hi >= cap {
            return Some(UnitsNeeded::MoreThan(cap));
        }
        hi = (hi.max(1) * 2).min(cap);
    }
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if enough(mid)? {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    Some(UnitsNeeded::Exactly(hi))
}

/// The fewest jobs in all (both arms together, split `share_b` : 1 -
/// `share_b`) with which Welch's two-sided test at level [`SIGNIFICANCE`]
/// finds a difference of means `delta` with chance `power`, when the two
/// arms' values have standard deviations `sd_a` and `sd_b`: the smallest N
/// with δ / se(N) ≥ t(1 - α/2, df) + t(power, df), se(N)² = sd_a² / (N
/// (1 - share_b)) + sd_b² / (N share_b), df Welch–Satterthwaite's at N (the
/// usual approximation of the noncentral t; its error is a fraction of a
/// job above a few dozen). The search starts from the normal
/// approximation, N ≥ (z(1 - α/2) + z(power))² (sd_a² / (1 - share_b) +
/// sd_b² / share_b) / δ², and is bounded: more than [`MAX_UNITS_NEEDED`]
/// is said as [`UnitsNeeded::MoreThan`]. `None` for a zero effect, a share
/// outside (0, 1), a power outside (α/2, 1) or a spread or an effect that
/// is not a finite number.
pub fn welch_jobs_needed(sd_a: f64, sd_b: f64, share_b: f64, delta: f64, power: f64) -> Option<UnitsNeeded> {
    let ok = |x: f64| x.is_finite() && x >= 0.0;
    if !(ok(sd_a) && ok(sd_b) && delta.is_finite() && delta != 0.0 && share_b > 0.0 && share_b < 1.0) {
        return None;
    }
    if !(power > SIGNIFICANCE / 2.0 && power < 1.0) {
        return None;
    }
    let (wa, wb) = (1.0 - share_b, share_b);
    let (va, vb) = (sd_a * sd_a, sd_b * sd_b);
    let zs = z(1.0 - SIGNIFICANCE / 2.0)? + z(power)?;
    let guess = zs * zs * (va / wa + vb / wb) / (delta * delta);
    first_enough(4, guess, |n| {
        let n = n as f64;
        let (na, nb) = (n * wa, n * wb);
        if na < 2.0 || nb < 2.0 {
            return Some(false);
        }
        let (sa, sb) = (va / na, vb / nb);
        let se2 = sa + sb;
        if se2 == 0.0 {
            return Some(true);
        }
        let df = se2 * se2 / (sa * sa / (na - 1.0) + sb * sb / (nb - 1.0));
        let need = student_t_quantile(1.0 - SIGNIFICANCE / 2.0, df)? + student_t_quantile(power, df)?;
        Some(delta.abs() / se2.sqrt() >= need)
    })
}

/// The fewest paired units (hosts, each with its arm and its control) with
/// which the one-sample t-test of their differences, standard deviation
/// `sd`, finds a mean difference `delta` with chance `power` at level
/// [`SIGNIFICANCE`]: the smallest n with δ √n / sd ≥ t(1 - α/2, n - 1) +
/// t(power, n - 1); bounded and `None` as for [`welch_jobs_needed`].
pub fn paired_units_needed(sd: f64, delta: f64, power: f64) -> Option<UnitsNeeded> {
    if !(sd.is_finite() && sd >= 0.0 && delta.is_finite() && delta != 0.0 && power > SIGNIFICANCE / 2.0 && power < 1.0)
    {
        return None;
    }
    let zs = z(1.0 - SIGNIFICANCE / 2.0)? + z(power)?;
    let guess = (zs * sd / delta).powi(2);
    first_enough(2, guess, |n| {
        let df = (n - 1) as f64;
        let need = student_t_quantile(1.0 - SIGNIFICANCE / 2.0, df)? + student_t_quantile(power, df)?;
        Some(sd == 0.0 || delta.abs() * (n as f64).sqrt() / sd >= need)
    })
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
    fn paired_units_by_formula() {
        // sd 0.05, δ 0.02: normal n = (1.96 + 0.8416)² × 6.25 = 49.06; the t
        // quantiles add about two units
        let Some(UnitsNeeded::Exactly(n)) = paired_units_needed(0.05, 0.02, 0.8) else { panic!("n") };
        assert!((51..=53).contains(&n), "{n}");
        let t = |n: u64| {
            let df = (n - 1) as f64;
            (student_t_quantile(0.975, df).expect("t") + student_t_quantile(0.8, df).expect("t")) * 0.05
                / (n as f64).sqrt()
        };
        assert!(t(n) <= 0.02 && t(n - 1) > 0.02, "{n}");
        assert_eq!(paired_units_needed(0.05, 0.0, 0.8), None);
    }

    /// The searches end within milliseconds for any effect, however small,
    /// and say "more than" the cap beyond it; the first n that is enough is
    /// found exactly just below the cap too.
    #[test]
    fn searches_are_bounded_and_exact() {
        for delta in [1e-4, 1e-6, 1e-12, f64::MIN_POSITIVE] {
            let t0 = std::time::Instant::now();
            assert_eq!(welch_jobs_needed(0.2, 0.2, 0.5, delta, 0.8), Some(UnitsNeeded::MoreThan(MAX_UNITS_NEEDED)));
            assert_eq!(paired_units_needed(0.2, delta, 0.8), Some(UnitsNeeded::MoreThan(MAX_UNITS_NEEDED)));
            assert!(t0.elapsed().as_millis() < 100, "delta {delta}: {:?}", t0.elapsed());
        }
        // about 8 million jobs: below the cap, the first N that is enough
        let (sd, d) = (0.2, 1.0004f64.ln());
        let t0 = std::time::Instant::now();
        let Some(UnitsNeeded::Exactly(n)) = welch_jobs_needed(sd, sd, 0.5, d, 0.8) else { panic!("below the cap") };
        assert!(t0.elapsed().as_millis() < 100, "{:?}", t0.elapsed());
        let power = |n: u64| {
            let se = (4.0 * sd * sd / n as f64).sqrt();
            let df = n as f64 - 2.0;
            d / se >= student_t_quantile(0.975, df).expect("t") + student_t_quantile(0.8, df).expect("t")
        };
        assert!(power(n) && !power(n - 1) && (7_000_000..MAX_UNITS_NEEDED).contains(&n), "{n}");
        let Some(UnitsNeeded::Exactly(n)) = paired_units_needed(sd, d, 0.8) else { panic!("below the cap") };
        assert!((1_500_000..2_500_000).contains(&n), "{n}");
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

    #[test]
    fn jobs_needed_matches_the_normal_formula_and_a_simulation() {
        // sd 0.1 in both arms, 50:50, 2%: N ≈ 4 × 0.01 × (1.96 + 0.8416)² / 0.0198² ≈ 801
        let d = 1.02f64.ln();
        let exactly = |n: Option<UnitsNeeded>| match n {
            Some(UnitsNeeded::Exactly(n)) => n,
            other => panic!("{other:?}"),
        };
        let n = exactly(welch_jobs_needed(0.1, 0.1, 0.5, d, 0.8));
        let normal = 4.0 * 0.01 * (1.959_964f64 + 0.841_621).powi(2) / (d * d);
        assert!((n as f64 - normal).abs() <= 3.0, "{n} vs {normal}");
        // the first N that is enough
        assert!(exactly(welch_jobs_needed(0.1, 0.1, 0.5, -d, 0.8)) == n, "sign does not matter");
        // unequal shares need more jobs in all
        assert!(exactly(welch_jobs_needed(0.1, 0.1, 0.2, d, 0.8)) > n);
        assert_eq!(welch_jobs_needed(0.1, 0.1, 0.5, 0.0, 0.8), None);
        assert_eq!(welch_jobs_needed(0.1, 0.1, 1.0, d, 0.8), None);
        // simulated power at that N: 80% give or take the simulation's error
        let mut rng = StdRng::seed_from_u64(3);
        let normal = statrs::distribution::Normal::new(0.0, 0.1).expect("normal");
        let n = exactly(welch_jobs_needed(0.1, 0.1, 0.5, 0.05, 0.8)) as usize;
        let trials = 2000;
        let hits = (0..trials)
            .filter(|_| {
                let a: Vec<f64> = (0..n / 2).map(|_| normal.sample(&mut rng)).collect();
                let b: Vec<f64> = (0..n - n / 2).map(|_| 0.05 + normal.sample(&mut rng)).collect();
                crate::stats_math::welch_t_test(&a, &b).is_some_and(|w| w.significant)
            })
            .count();
        let power = hits as f64 / trials as f64;
        assert!((0.77..=0.85).contains(&power), "n {n}: power {power}");
    }
}
