//! One sample's summary: [`Summary`] and the functions it is built from.

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

/// The confidence level of every interval numakit reports (95%).
pub const CONFIDENCE: f64 = 0.95;

/// Arithmetic mean; `None` for an empty sample.
pub fn mean(xs: &[f64]) -> Option<f64> {
    (!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64)
}

/// Median (the mean of the two middle values for an even count); `None`
/// for an empty sample. NaNs sort last.
pub fn median(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    median_of_sorted(&v)
}

/// [`median`] of values already sorted (by [`f64::total_cmp`]), without
/// copying them; `None` for an empty sample.
pub fn median_of_sorted(sorted: &[f64]) -> Option<f64> {
    let m = sorted.len() / 2;
    match sorted.len() {
        0 => None,
        n if n % 2 == 1 => Some(sorted[m]),
        _ => Some((sorted[m - 1] + sorted[m]) / 2.0),
    }
}

/// Sample standard deviation (divisor n - 1); `None` below two values.
pub fn stddev(xs: &[f64]) -> Option<f64> {
    if xs.len() < 2 {
        return None;
    }
    let m = mean(xs)?;
    let ss: f64 = xs.iter().map(|x| (x - m) * (x - m)).sum();
    Some((ss / (xs.len() - 1) as f64).sqrt())
}

/// Standard error of the mean, s / sqrt(n); `None` below two values.
pub fn std_error(xs: &[f64]) -> Option<f64> {
    Some(stddev(xs)? / (xs.len() as f64).sqrt())
}

/// The `p` quantile of Student's t distribution with `df` degrees of
/// freedom (e.g. `student_t_quantile(0.975, 9)` = 2.262); `None` when `df`
/// is not positive or `p` not inside (0, 1).
///
/// From [`T_EXPANSION_DF`] degrees of freedom on, Fisher and Cornish's
/// expansion around the normal quantile (Abramowitz and Stegun 26.7.5, to
/// the ν⁻⁴ term; its error there is below 1e-12): statrs's inverse, a
/// search on the incomplete beta function, loses digits beyond some 10⁵
/// degrees of freedom (t(0.975, 10⁷) = 1.83, not 1.96) and does not end
/// beyond some 3 × 10⁷ (the jobs-needed search reaches such counts).
pub fn student_t_quantile(p: f64, df: f64) -> Option<f64> {
    if !(df > 0.0 && p > 0.0 && p < 1.0) {
        return None;
    }
    if df >= T_EXPANSION_DF {
        let z = Normal::new(0.0, 1.0).ok()?.inverse_cdf(p);
        let z2 = z * z;
        let g1 = (z2 + 1.0) * z / 4.0;
        let g2 = ((5.0 * z2 + 16.0) * z2 + 3.0) * z / 96.0;
        let g3 = (((3.0 * z2 + 19.0) * z2 + 17.0) * z2 - 15.0) * z / 384.0;
        let g4 = ((((79.0 * z2 + 776.0) * z2 + 1482.0) * z2 - 1920.0) * z2 - 945.0) * z / 92_160.0;
        return Some(z + (g1 + (g2 + (g3 + g4 / df) / df) / df) / df);
    }
    let t = StudentsT::new(0.0, 1.0, df).ok()?;
    Some(t.inverse_cdf(p))
}

/// Degrees of freedom from which [`student_t_quantile`] uses the
/// expansion around the normal quantile.
pub const T_EXPANSION_DF: f64 = 1000.0;

/// Half-width of the two-sided `level` (e.g. 0.95) Student-t confidence
/// interval of the mean: t(1 - (1 - level) / 2, n - 1) * s / sqrt(n);
/// `None` below two values.
pub fn confidence_half_width(xs: &[f64], level: f64) -> Option<f64> {
    let se = std_error(xs)?;
    let t = student_t_quantile(1.0 - (1.0 - level) / 2.0, (xs.len() - 1) as f64)?;
    Some(t * se)
}

/// Max variance in percent: the largest distance of one value from the
/// mean, relative to the mean, `max |x_i - mean| / |mean| * 100` (the
/// definition of EDA benchmarking practice: how far the worst single run
/// is from the average). `None` for an empty sample or a zero mean.
pub fn max_variance_pct(xs: &[f64]) -> Option<f64> {
    let m = mean(xs)?;
    if m == 0.0 {
        return None;
    }
    let worst = xs.iter().map(|x| (x - m).abs()).fold(0.0, f64::max);
    Some(worst / m.abs() * 100.0)
}

/// Everything numakit reports about one sample.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Number of values.
    pub n: usize,
    /// Arithmetic mean.
    pub mean: f64,
    /// Median.
    pub median: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Sample standard deviation (`None` below two values).
    pub stddev: Option<f64>,
    /// Standard error of the mean (`None` below two values).
    pub std_error: Option<f64>,
    /// Lower end of the 95% Student-t confidence interval of the mean.
    pub ci_low: Option<f64>,
    /// Upper end of that interval.
    pub ci_high: Option<f64>,
    /// [`max_variance_pct`] (`None` for a zero mean).
    pub max_variance_pct: Option<f64>,
}

impl Summary {
    /// Summarises `xs`; `None` for an empty sample or one with a NaN or an
    /// infinity.
    pub fn of(xs: &[f64]) -> Option<Summary> {
        if xs.is_empty() || xs.iter().any(|x| !x.is_finite()) {
            return None;
        }
        let mean = mean(xs)?;
        let half = confidence_half_width(xs, CONFIDENCE);
        Some(Summary {
            n: xs.len(),
            mean,
            median: median(xs)?,
            min: xs.iter().copied().fold(f64::INFINITY, f64::min),
            max: xs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            stddev: stddev(xs),
            std_error: std_error(xs),
            ci_low: half.map(|h| mean - h),
            ci_high: half.map(|h| mean + h),
            max_variance_pct: max_variance_pct(xs),
        })
    }

    /// Whether the confidence interval holds `value` (false without one).
    pub fn ci_contains(&self, value: f64) -> bool {
        matches!((self.ci_low, self.ci_high), (Some(lo), Some(hi)) if lo <= value && value <= hi)
    }

    /// Half-width of the confidence interval as a percentage of the mean.
    pub fn ci_half_width_pct(&self) -> Option<f64> {
        let (lo, hi) = (self.ci_low?, self.ci_high?);
        (self.mean != 0.0).then(|| (hi - lo) / 2.0 / self.mean.abs() * 100.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn basics() {
        let xs = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        assert_eq!(mean(&xs), Some(5.0));
        assert_eq!(median(&xs), Some(4.5));
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        // Sum of squares 32, n - 1 = 7.
        assert!(close(stddev(&xs).expect("sd"), (32.0f64 / 7.0).sqrt(), 1e-12));
        assert!(close(std_error(&xs).expect("se"), (32.0f64 / 7.0).sqrt() / 8f64.sqrt(), 1e-12));
        assert_eq!((mean(&[]), median(&[]), stddev(&[1.0]), std_error(&[1.0])), (None, None, None, None));
    }

    #[test]
    fn t_quantiles_match_tables() {
        // Two-sided 95% critical values from any t table.
        for (df, t) in [(1.0, 12.7062), (4.0, 2.7764), (9.0, 2.2622), (29.0, 2.0452), (1000.0, 1.9623)] {
            let q = student_t_quantile(0.975, df).expect("quantile");
            assert!(close(q, t, 1e-3), "df {df}: {q} vs {t}");
        }
        assert_eq!(student_t_quantile(0.975, 0.0), None);
        assert_eq!(student_t_quantile(1.0, 5.0), None);
    }

    /// The expansion from [`T_EXPANSION_DF`] on against quantiles computed
    /// to 40 digits (mpmath: the root of the regularized incomplete beta
    /// function), where statrs's inverse is off by 2e-9 at 1,000 degrees
    /// of freedom, by 0.13 at 10⁷ and never ends at 3 × 10⁷; each within
    /// microseconds.
    #[test]
    fn t_quantiles_at_many_degrees_of_freedom() {
        for (p, df, want) in [
            (0.8, 1e3, 0.841_980_822_162_429),
            (0.975, 1e3, 1.962_339_080_826_41),
            (0.995, 1e3, 2.580_754_698_065_95),
            (0.975, 1e4, 1.960_201_239_890_63),
            (0.8, 1e6, 0.841_621_593_013_984),
            (0.975, 3e7, 1.959_964_063_615_76),
            (0.975, 1e9, 1.959_963_986_912_33),
        ] {
            let t0 = std::time::Instant::now();
            let q = student_t_quantile(p, df).expect("q");
            assert!(close(q, want, 1e-12) && t0.elapsed().as_millis() < 50, "t({p}, {df}): {q} vs {want}");
        }
        // just below, statrs's own inverse: the two meet
        let below = student_t_quantile(0.975, 999.0).expect("q");
        let above = student_t_quantile(0.975, 1000.0).expect("q");
        assert!(below > above && below - above < 3e-6, "{below} {above}");
    }

    #[test]
    fn interval_by_hand() {
        // mean 11.5, s = sqrt(5/3), se = s/2, t(0.975, 3) = 3.182446.
        let s = Summary::of(&[10.0, 12.0, 11.0, 13.0]).expect("summary");
        let half = 3.182446 * (5.0f64 / 3.0).sqrt() / 2.0;
        assert!(close(s.ci_low.expect("lo"), 11.5 - half, 1e-5), "{s:?}");
        assert!(close(s.ci_high.expect("hi"), 11.5 + half, 1e-5), "{s:?}");
        assert!(s.ci_contains(11.5) && !s.ci_contains(20.0));
        assert!(close(s.ci_half_width_pct().expect("pct"), half / 11.5 * 100.0, 1e-5));
        assert_eq!((s.n, s.min, s.max), (4, 10.0, 13.0));
    }

    #[test]
    fn max_variance_is_the_worst_run_from_the_mean() {
        // mean 100; worst run 90 -> 10%.
        assert_eq!(max_variance_pct(&[100.0, 110.0, 90.0, 100.0]), Some(10.0));
        assert_eq!(max_variance_pct(&[5.0]), Some(0.0));
        assert_eq!(max_variance_pct(&[-1.0, 1.0]), None);
        assert_eq!(max_variance_pct(&[]), None);
    }

    #[test]
    fn degenerate_samples() {
        let one = Summary::of(&[3.0]).expect("one value");
        assert_eq!((one.mean, one.stddev, one.ci_low, one.ci_half_width_pct()), (3.0, None, None, None));
        assert!(!one.ci_contains(3.0));
        assert_eq!(Summary::of(&[]), None);
        assert_eq!(Summary::of(&[1.0, f64::NAN]), None);
        let same = Summary::of(&[2.0, 2.0, 2.0]).expect("constant");
        assert_eq!((same.stddev, same.ci_low, same.ci_high), (Some(0.0), Some(2.0), Some(2.0)));
    }
}
