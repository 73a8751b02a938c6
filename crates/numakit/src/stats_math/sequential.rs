//! Confidence sequences: intervals that stay valid however often they are
//! read. A site reads its report every morning; an interval built for one
//! look at a fixed horizon, read every day, shows a "faster" or "slower"
//! that is not there several times more often than its nominal 5%. A
//! confidence sequence covers the truth at every look at once, with
//! probability at least 1 - α: stop, decide or look again whenever, it
//! stays honest.
//!
//! The sequence here is the asymptotic confidence sequence of Waudby-Smith,
//! Arbour, Sinha, Kennedy and Ramdas ("Time-uniform central limit theory
//! and asymptotic confidence sequences", Annals of Statistics, 2024), the
//! one GrowthBook uses: the two-sided normal-mixture boundary of Howard,
//! Ramdas, McAuliffe and Sekhon ("Time-uniform, nonparametric,
//! nonasymptotic confidence sequences", Annals of Statistics, 2021) applied
//! to an estimate with a consistent standard error. For an estimate `θ̂`
//! from `n` independent units with standard error `se` (so a unit's
//! standard deviation is `σ = se √n`):
//!
//! ```text
//! θ̂ ± σ √( 2 (n ρ² + 1) / (n² ρ²) · ln( √(n ρ² + 1) / α ) )
//! ρ² = ( -2 ln α + ln(1 - 2 ln α) ) / n*
//! ```
//!
//! `n*`, the planned number of units, tunes where the sequence is tightest
//! (any `n*` gives a valid sequence): at `n = n*` and α = 5% the half-width
//! is 3.03 standard errors against 1.96 for one fixed-horizon look, 1.55
//! times as wide. The always-valid p-value is the smallest α whose
//! sequence excludes 0 with the same ρ (the mixture martingale bounds the
//! error for every α at once, by Ville's inequality):
//! `p = min(1, √(n ρ² + 1) · exp(-θ̂² n² ρ² / (2 σ² (n ρ² + 1))))`.
//!
//! Many classes read at once: give each its share of α (Bonferroni,
//! `α / classes`), which holds under any dependence and any reading.

/// A confidence sequence's boundary: its error rate and tuning.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sequence {
    /// The error rate over every look together (0.05 for 95%).
    pub alpha: f64,
    /// The planned number of units the boundary is tuned for.
    pub planned: f64,
    rho2: f64,
}

impl Sequence {
    /// The sequence of error rate `alpha` (0 < α < 1) tuned for `planned`
    /// units (at least 1).
    pub fn new(alpha: f64, planned: f64) -> Option<Sequence> {
        if !(alpha > 0.0 && alpha < 1.0 && planned.is_finite() && planned >= 1.0) {
            return None;
        }
        let l = -2.0 * alpha.ln();
        Some(Sequence { alpha, planned, rho2: (l + (l + 1.0).ln()) / planned })
    }

    /// The half-width in standard errors after `n` units: `θ̂ ± k · se`.
    /// `None` without a unit.
    pub fn multiplier(&self, n: f64) -> Option<f64> {
        if !(n.is_finite() && n >= 1.0) {
            return None;
        }
        let a = n * self.rho2 + 1.0;
        let k2 = n * 2.0 * a / (n * n * self.rho2) * (a.sqrt() / self.alpha).ln();
        Some(k2.max(0.0).sqrt())
    }

    /// The interval for `estimate` with standard error `se` from `n` units.
    pub fn interval(&self, estimate: f64, se: f64, n: f64) -> Option<(f64, f64)> {
        let k = self.multiplier(n)?;
        (estimate.is_finite() && se.is_finite() && se >= 0.0).then_some((estimate - k * se, estimate + k * se))
    }

    /// The always-valid p-value of "the effect is 0" (see the module's text).
    pub fn p_value(&self, estimate: f64, se: f64, n: f64) -> Option<f64> {
        if !(n.is_finite() && n >= 1.0 && estimate.is_finite() && se.is_finite() && se > 0.0) {
            return None;
        }
        let a = n * self.rho2 + 1.0;
        let var_unit = se * se * n;
        let exponent = -estimate * estimate * n * n * self.rho2 / (2.0 * var_unit * a);
        Some((a.sqrt() * exponent.exp()).min(1.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_the_planned_size_it_is_a_half_again_as_wide_as_one_look() {
        let s = Sequence::new(0.05, 2000.0).unwrap();
        let k = s.multiplier(2000.0).unwrap();
        assert!((k - 3.035).abs() < 0.005, "{k}");
        assert!((k / 1.959_964 - 1.549).abs() < 0.005);
        // Tightest near the plan, valid (and wider) everywhere else.
        for n in [10.0, 100.0, 20_000.0] {
            assert!(s.multiplier(n).unwrap() > k, "{n}");
        }
        assert_eq!(Sequence::new(0.0, 10.0), None);
        assert_eq!(Sequence::new(0.05, 0.5), None);
        assert_eq!(s.multiplier(0.0), None);
        assert_eq!(s.interval(f64::NAN, 1.0, 10.0), None);
    }

    #[test]
    fn the_p_value_crosses_alpha_where_the_interval_leaves_zero() {
        let s = Sequence::new(0.05, 500.0).unwrap();
        let (se, n) = (0.01, 400.0);
        let k = s.multiplier(n).unwrap();
        for est in [0.5 * k * se, 0.999 * k * se, 1.001 * k * se, 2.0 * k * se] {
            let (lo, hi) = s.interval(est, se, n).unwrap();
            let excludes = lo > 0.0 || hi < 0.0;
            let p = s.p_value(est, se, n).unwrap();
            assert_eq!(p <= 0.05, excludes, "estimate {est}: p {p}, interval {lo}..{hi}");
        }
        assert_eq!(s.p_value(0.0, se, n), Some(1.0));
    }

    /// A normal draw from a xorshift generator (Box-Muller): tests need no
    /// random crate and give the same numbers everywhere.
    fn normals(seed: u64) -> impl FnMut() -> f64 {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            ((x >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        };
        move || (-2.0 * next().ln()).sqrt() * (2.0 * std::f64::consts::PI * next()).cos()
    }

    /// Null two-arm streams looked at after every 100 units, 20 looks: the
    /// share ever showing an effect, sequence against a fixed-horizon look.
    #[test]
    fn peeking_at_null_streams_stays_within_alpha_for_the_sequence_only() {
        let s = Sequence::new(0.05, 2000.0).unwrap();
        let (streams, looks, step) = (400, 20, 100);
        let (mut seq_false, mut fixed_false) = (0, 0);
        for i in 0..streams {
            let mut draw = normals(i + 1);
            let (mut n, mut sum, mut sq) = (0.0f64, 0.0f64, 0.0f64);
            let (mut seq_hit, mut fixed_hit) = (false, false);
            for _ in 0..looks {
                for _ in 0..step {
                    // A unit's contribution to the difference of two arms'
                    // means (log times): mean 0 under the null.
                    let v = draw() - draw();
                    n += 1.0;
                    sum += v;
                    sq += v * v;
                }
                let mean = sum / n;
                let se = ((sq / n - mean * mean) * n / (n - 1.0) / n).sqrt();
                let (lo, hi) = s.interval(mean, se, n).unwrap();
                seq_hit |= lo > 0.0 || hi < 0.0;
                fixed_hit |= (mean / se).abs() > 1.959_964;
            }
            seq_false += usize::from(seq_hit);
            fixed_false += usize::from(fixed_hit);
        }
        let (seq, fixed) = (seq_false as f64 / streams as f64, fixed_false as f64 / streams as f64);
        eprintln!(
            "null streams with a false effect at any of {looks} looks: sequence {seq:.3}, fixed horizon {fixed:.3}"
        );
        assert!(seq <= 0.05, "sequence: {seq} of null streams ever showed an effect");
        assert!(fixed >= 0.15, "fixed horizon read 20 times: {fixed} (expected about a quarter)");
    }
}
