//! How the report may be read: always-valid (the default) or once.
//!
//! A site reads its report every morning. A 95% interval built for one
//! look at a fixed horizon, read every day until it shows something,
//! shows a "faster" or "slower" that is not there several times more
//! often than 5%. By default the wall- and CPU-time comparisons use a
//! confidence sequence instead (`numakit::stats_math::Sequence`, the
//! normal-mixture boundary of Howard et al. 2021 on the log-ratio with its
//! standard error), tuned to a planned number of units and with the error
//! rate shared out over the comparisons shown (Bonferroni, α / k): the
//! chance that any comparison ever shows an effect that is not there, at
//! any look, stays below α. `--look once` keeps the fixed-horizon analysis
//! (Welch's t, Holm or Benjamini–Hochberg) for a site that declares its one
//! look in advance.

use numakit::stats_math::{student_t_quantile, Moments, Sequence, UnitsNeeded, MAX_UNITS_NEEDED, SIGNIFICANCE};

use super::compare::exp_bounded;
use crate::result::Effect;

/// The planned number of jobs of a per-job comparison (arm and control
/// together) when `--planned` is not given.
pub const DEFAULT_PLANNED_JOBS: u64 = 10_000;

/// `--planned`'s range.
pub const MIN_PLANNED: u64 = 10;
/// See [`MIN_PLANNED`].
pub const MAX_PLANNED: u64 = 100_000_000;

/// How the report is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Look {
    /// Any number of looks: confidence sequences planned for this many
    /// jobs per comparison (`None`: [`DEFAULT_PLANNED_JOBS`]). Per-host
    /// designs are planned for the hosts they have.
    Always { planned: Option<u64> },
    /// One look at a fixed horizon: Welch's t, the chosen adjustment.
    Once,
}

impl Look {
    /// The planned jobs of a per-job comparison, `None` for one look.
    pub fn planned_jobs(&self) -> Option<u64> {
        match self {
            Look::Always { planned } => Some(planned.unwrap_or(DEFAULT_PLANNED_JOBS)),
            Look::Once => None,
        }
    }
}

/// What an always-valid interval is computed from: the estimate (a
/// difference of mean log times), its standard error and the units.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Basis {
    /// The difference of mean ln(time), arm less control.
    pub estimate: f64,
    /// Its standard error.
    pub se: f64,
    /// Units in all (arm and control; paired hosts once).
    pub n: u64,
}

impl Basis {
    /// Two independent samples (`arm` less `control`).
    pub fn two(control: &Moments, arm: &Moments) -> Option<Basis> {
        let (vc, va) = (control.variance()?, arm.variance()?);
        let se = (vc / control.n as f64 + va / arm.n as f64).sqrt();
        Some(Basis { estimate: arm.mean - control.mean, se, n: control.n + arm.n })
    }

    /// One sample of paired differences.
    pub fn one(d: &Moments) -> Option<Basis> {
        let v = d.variance()?;
        Some(Basis { estimate: d.mean, se: (v / d.n as f64).sqrt(), n: d.n })
    }
}

/// The always-valid interval of the estimate itself (not its ratio), for
/// one of `k` comparisons at level `alpha`, planned for `planned` units.
pub fn bounds(b: &Basis, planned: u64, k: usize, alpha: f64) -> Option<(f64, f64)> {
    let s = Sequence::new(alpha / k.max(1) as f64, planned.max(1) as f64)?;
    s.interval(b.estimate, b.se, b.n as f64)
}

/// The always-valid interval of the ratio and its p-values, for one of
/// `k` comparisons read together at level `alpha`, planned for `planned`
/// units: (ci_low, ci_high, p, p adjusted over the k). `None` when the
/// basis has no unit.
pub fn always_valid(b: &Basis, planned: u64, k: usize, alpha: f64) -> Option<(f64, f64, f64, f64)> {
    let k = k.max(1) as f64;
    let s = Sequence::new(alpha / k, planned.max(1) as f64)?;
    let n = b.n as f64;
    let (lo, hi) = s.interval(b.estimate, b.se, n)?;
    let p = if b.se > 0.0 {
        s.p_value(b.estimate, b.se, n)?
    } else if b.estimate == 0.0 {
        1.0
    } else {
        0.0
    };
    Some((exp_bounded(lo), exp_bounded(hi), p, (p * k).min(1.0)))
}

/// Replaces `e`'s interval and p-values by the always-valid ones.
pub fn apply(e: &mut Effect, planned: u64, k: usize) {
    let Some(b) = e.basis else { return };
    if let Some((lo, hi, p, adj)) = always_valid(&b, planned, k, SIGNIFICANCE) {
        e.ci_low = lo;
        e.ci_high = hi;
        e.p_value = p;
        e.p_adjusted = adj;
    }
}

/// Units in all for the always-valid interval to show an effect of
/// `delta` (ln ratio) with `power`, for one of `k` comparisons: the
/// smallest n with δ √n / σ ≥ k_seq(n) + z_power, σ = se √n of the
/// comparison's basis (its units' spread at its shares). Planned for
/// `planned` units, or (`None`, per-host designs) for n itself.
pub fn needed(b: &Basis, delta: f64, power: f64, planned: Option<u64>, k: usize) -> Option<UnitsNeeded> {
    let sigma = b.se * (b.n as f64).sqrt();
    let z = student_t_quantile(power, 1e6)?;
    if !(sigma.is_finite() && sigma > 0.0 && delta > 0.0) {
        return None;
    }
    let alpha = SIGNIFICANCE / k.max(1) as f64;
    let enough = |n: u64| -> Option<bool> {
        let s = Sequence::new(alpha, planned.unwrap_or(n).max(1) as f64)?;
        Some(delta * (n as f64).sqrt() / sigma >= s.multiplier(n as f64)? + z)
    };
    // the boundary grows like √(ln n) beyond the plan, the effect like √n:
    // double until enough, then bisect
    let mut hi = 4u64;
    while !enough(hi)? {
        if hi >= MAX_UNITS_NEEDED {
            return Some(UnitsNeeded::MoreThan(MAX_UNITS_NEEDED));
        }
        hi = (hi * 2).min(MAX_UNITS_NEEDED);
    }
    let mut lo = hi / 2;
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if enough(mid)? {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(UnitsNeeded::Exactly(hi))
}

/// The planned units of a comparison analysed by `analysed_by`: jobs as
/// planned, hosts as there are.
pub fn planned_for(look: &Look, e: &Effect, per_host: bool) -> Option<u64> {
    let jobs = look.planned_jobs()?;
    Some(if per_host { e.basis.map_or(1, |b| b.n.max(1)) } else { jobs })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn moments(xs: &[f64]) -> Moments {
        let mut m = Moments::default();
        xs.iter().for_each(|x| m.push(*x));
        m
    }

    #[test]
    fn the_interval_is_wider_than_one_looks_and_shares_alpha() {
        let c = moments(&(0..1000).map(|i| (i % 10) as f64 * 0.02).collect::<Vec<_>>());
        let a = moments(&(0..1000).map(|i| (i % 10) as f64 * 0.02 - 0.03).collect::<Vec<_>>());
        let b = Basis::two(&c, &a).unwrap();
        assert!((b.estimate + 0.03).abs() < 1e-12 && b.n == 2000);
        let (lo1, hi1, p1, adj1) = always_valid(&b, 2000, 1, 0.05).unwrap();
        let (lo4, hi4, _, adj4) = always_valid(&b, 2000, 4, 0.05).unwrap();
        assert!(lo4 < lo1 && hi4 > hi1, "four comparisons share α: wider");
        assert_eq!(adj1, p1);
        assert_eq!(hi4 < 1.0, adj4 <= 0.05);
        // 1.55 times one look's half-width at the planned size
        let fixed = 1.959_964 * b.se;
        let half = (hi1.ln() - lo1.ln()) / 2.0;
        assert!((half / fixed - 1.549).abs() < 0.01, "{}", half / fixed);
        // the interval and the adjusted p-value agree, near the edge too
        for est in [-0.002, -0.005, -0.008, -0.01, -0.02] {
            let b = Basis { estimate: est, ..b };
            for k in [1, 3] {
                let (_, hi, _, adj) = always_valid(&b, 2000, k, 0.05).unwrap();
                assert_eq!(hi < 1.0, adj <= 0.05, "estimate {est}, k {k}");
            }
        }
    }

    #[test]
    fn the_always_valid_interval_needs_about_twice_the_jobs_of_one_look() {
        // sd(ln time) 0.1 at 50:50: one look needs 800 jobs for 2%
        // (docs/experiments.md's table); a unit's σ of the difference is
        // 0.1 √(1/0.5 + 1/0.5) = 0.2
        let b = Basis { estimate: 0.0, se: 0.2 / (1000f64).sqrt(), n: 1000 };
        let Some(UnitsNeeded::Exactly(n)) = needed(&b, (1.02f64).ln(), 0.8, None, 1) else { panic!() };
        let ratio = n as f64 / 800.0;
        assert!((1.7..2.1).contains(&ratio), "{n} jobs, {ratio} times one look's");
        // planned far from it costs more; a tiny effect is bounded
        let Some(UnitsNeeded::Exactly(m)) = needed(&b, (1.02f64).ln(), 0.8, Some(100_000), 1) else { panic!() };
        assert!(m > n, "{m} vs {n}");
        assert_eq!(needed(&b, 1e-6, 0.8, Some(10_000), 1), Some(UnitsNeeded::MoreThan(MAX_UNITS_NEEDED)));
    }

    #[test]
    fn constant_samples_and_no_units_are_handled() {
        let b = Basis { estimate: 0.0, se: 0.0, n: 4 };
        assert_eq!(always_valid(&b, 100, 1, 0.05), Some((1.0, 1.0, 1.0, 1.0)));
        let b = Basis { estimate: 0.1, se: 0.0, n: 4 };
        assert_eq!(always_valid(&b, 100, 2, 0.05).map(|x| x.3), Some(0.0));
        assert_eq!(always_valid(&Basis { estimate: 0.1, se: 0.1, n: 0 }, 100, 1, 0.05), None);
        assert_eq!(Basis::two(&moments(&[1.0]), &moments(&[1.0, 2.0])), None);
    }
}
