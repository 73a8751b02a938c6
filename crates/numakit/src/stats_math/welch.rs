//! Welch's unequal-variances t-test: is the difference between two means
//! real?

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};

use super::moments::Moments;
use super::summary::{student_t_quantile, CONFIDENCE};

/// The significance level numakit uses (5%).
pub const SIGNIFICANCE: f64 = 0.05;

/// The outcome of [`welch_t_test`] of sample `b` against sample `a`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Welch {
    /// mean(b) - mean(a).
    pub difference: f64,
    /// t statistic, (mean(b) - mean(a)) / sqrt(s_a²/n_a + s_b²/n_b).
    pub t: f64,
    /// Welch–Satterthwaite degrees of freedom.
    pub df: f64,
    /// Two-sided p-value: the chance of a difference at least this large
    /// if the true means were equal.
    pub p_value: f64,
    /// Lower end of the 95% confidence interval of the difference.
    pub diff_ci_low: f64,
    /// Upper end of that interval.
    pub diff_ci_high: f64,
    /// `p_value < 0.05`.
    pub significant: bool,
}

/// Welch's two-sided t-test of `b` against `a`. `None` when either sample
/// has fewer than two values. Two constant samples give p = 1 when their
/// means are equal and p = 0 otherwise.
pub fn welch_t_test(a: &[f64], b: &[f64]) -> Option<Welch> {
    welch_from_moments(&Moments::of(a), &Moments::of(b))
}

/// [`welch_t_test`] from the two samples' [`Moments`] (what a streaming
/// reader keeps instead of the values). `None` also when a mean, a spread
/// or the difference is not a finite number.
pub fn welch_from_moments(a: &Moments, b: &Moments) -> Option<Welch> {
    let (va, vb) = (a.variance()?, b.variance()?);
    let (na, nb) = (a.n as f64, b.n as f64);
    let (va, vb) = (va / na, vb / nb);
    let se2 = va + vb;
    let df = if se2 == 0.0 { na + nb - 2.0 } else { se2 * se2 / (va * va / (na - 1.0) + vb * vb / (nb - 1.0)) };
    from_t(b.mean - a.mean, se2.sqrt(), df)
}

/// Student's one-sample t-test of mean zero from the sample's [`Moments`]
/// (paired differences: a host's arm against its control), in [`Welch`]'s
/// shape: `difference` is the mean, `df` n - 1. `None` below two values.
/// A constant sample gives p = 1 when it is zero and p = 0 otherwise.
pub fn one_sample_from_moments(m: &Moments) -> Option<Welch> {
    let v = m.variance()?;
    let n = m.n as f64;
    from_t(m.mean, (v / n).sqrt(), n - 1.0)
}

/// The test's result from a difference, its standard error and degrees
/// of freedom: two-sided p and the 95% interval. A zero standard error
/// gives p = 1 for a zero difference and p = 0 otherwise, the interval the
/// difference itself.
fn from_t(difference: f64, se: f64, df: f64) -> Option<Welch> {
    // Values beyond the float range (an infinite mean, a NaN spread) are
    // no test: statrs's t distribution panics on a NaN statistic.
    if !(difference.is_finite() && se.is_finite() && df.is_finite() && df > 0.0) {
        return None;
    }
    if se == 0.0 {
        let p_value = if difference == 0.0 { 1.0 } else { 0.0 };
        return Some(Welch {
            difference,
            t: if difference == 0.0 { 0.0 } else { difference.signum() * f64::INFINITY },
            df,
            p_value,
            diff_ci_low: difference,
            diff_ci_high: difference,
            significant: p_value < SIGNIFICANCE,
        });
    }
    let t = difference / se;
    // statrs's t tail loses digits beyond some 10⁹ degrees of freedom (at
    // 10³⁰⁰ its cdf(1) is 0.5); at 10⁷ it is the normal's within 1e-8.
    let dist = StudentsT::new(0.0, 1.0, df.min(1e7)).ok()?;
    let p_value = (2.0 * (1.0 - dist.cdf(t.abs()))).clamp(0.0, 1.0);
    let half = student_t_quantile(1.0 - (1.0 - CONFIDENCE) / 2.0, df)? * se;
    Some(Welch {
        difference,
        t,
        df,
        p_value,
        diff_ci_low: difference - half,
        diff_ci_high: difference + half,
        significant: p_value < SIGNIFICANCE,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_a_reference_computation() {
        // Reference values computed independently (sums of squares by hand,
        // the p-value by numerical integration of the t density):
        // t = 2.60216, df = 6.66875, p = 0.03685.
        let a = [19.1, 20.3, 18.7, 21.0, 19.9];
        let b = [21.4, 22.9, 20.1, 23.8, 21.0];
        let w = welch_t_test(&a, &b).expect("welch");
        assert!((w.difference - 2.04).abs() < 1e-9, "{w:?}");
        assert!((w.t - 2.60216).abs() < 1e-4 && (w.df - 6.66875).abs() < 1e-4, "{w:?}");
        assert!((w.p_value - 0.03685).abs() < 1e-4, "{w:?}");
        assert!(w.significant);
        assert!(w.diff_ci_low > 0.0 && w.diff_ci_low < 2.04 && w.diff_ci_high > 2.04, "{w:?}");
    }

    #[test]
    fn a_clear_difference_is_significant() {
        let a = [10.0, 10.1, 9.9, 10.05, 9.95];
        let b = [11.0, 11.1, 10.9, 11.05, 10.95];
        let w = welch_t_test(&a, &b).expect("welch");
        assert!(w.significant && w.p_value < 1e-6 && w.t > 0.0, "{w:?}");
        assert!(w.diff_ci_low < 1.0 && 1.0 < w.diff_ci_high);
        let back = welch_t_test(&b, &a).expect("welch");
        assert!((back.t + w.t).abs() < 1e-12 && (back.p_value - w.p_value).abs() < 1e-12);
    }

    #[test]
    fn one_sample_by_hand() {
        // 1, 2, 3, 4, 5: mean 3, sd sqrt(2.5), se 0.7071, t 4.2426, df 4,
        // p 0.01324 (t table), half-width 2.7764 × 0.7071
        let w = one_sample_from_moments(&Moments::of(&[1.0, 2.0, 3.0, 4.0, 5.0])).expect("t");
        assert!((w.t - 4.242_64).abs() < 1e-4 && w.df == 4.0, "{w:?}");
        assert!((w.p_value - 0.013_24).abs() < 1e-4, "{w:?}");
        assert!((w.diff_ci_low - (3.0 - 2.776_45 * std::f64::consts::FRAC_1_SQRT_2)).abs() < 1e-4, "{w:?}");
        assert_eq!(one_sample_from_moments(&Moments::of(&[1.0])), None);
        assert_eq!(one_sample_from_moments(&Moments::of(&[0.0, 0.0])).map(|w| w.p_value), Some(1.0));
    }

    #[test]
    fn degenerate_samples() {
        assert_eq!(welch_t_test(&[1.0], &[1.0, 2.0]), None);
        let same = welch_t_test(&[2.0, 2.0], &[2.0, 2.0]).expect("constant");
        assert_eq!((same.p_value, same.significant), (1.0, false));
        let apart = welch_t_test(&[2.0, 2.0], &[3.0, 3.0]).expect("constant");
        assert_eq!((apart.p_value, apart.significant), (0.0, true));
    }

    /// Values beyond the float range (an infinite time, its log) give no
    /// test, never a panic in the t distribution or a NaN p-value.
    #[test]
    fn non_finite_values_give_no_test() {
        let inf = f64::INFINITY;
        let good = [1.0, 2.0, 3.0];
        for bad in [vec![1.0, 2.0, inf], vec![-inf, 2.0, 3.0], vec![inf, inf], vec![1.0, f64::NAN], vec![1e308, -1e308]]
        {
            assert_eq!(welch_t_test(&bad, &good), None, "{bad:?}");
            assert_eq!(welch_t_test(&good, &bad), None, "{bad:?}");
            assert_eq!(one_sample_from_moments(&Moments::of(&bad)), None, "{bad:?}");
        }
        // a huge df (billions of jobs) stays a p-value, within milliseconds
        let t0 = std::time::Instant::now();
        let m = Moments { n: 2_000_000_000, mean: 0.01, m2: 2e9, m3: 0.0, m4: 0.0 };
        let w = welch_from_moments(&Moments { mean: 0.0, ..m }, &m).expect("test");
        assert!(w.p_value.is_finite() && w.p_value < 1e-15 && w.diff_ci_low > 0.0, "{w:?}");
        let m = Moments { n: 1 << 62, mean: 1e-10, m2: 4e18, m3: 0.0, m4: 0.0 };
        let w = welch_from_moments(&Moments { mean: 0.0, ..m }, &m).expect("test");
        assert!((0.0..=1.0).contains(&w.p_value) && w.diff_ci_low.is_finite(), "{w:?}");
        assert!(t0.elapsed().as_millis() < 100, "{:?}", t0.elapsed());
    }
}
