//! Pearson's chi-square goodness of fit: are counts in line with the
//! shares they were drawn with (an experiment's arms per host, per day)?

use serde::{Deserialize, Serialize};
use statrs::distribution::{ChiSquared, ContinuousCDF};

/// The outcome of [`chi_square_gof`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GoodnessOfFit {
    /// Σ (observed - expected)² / expected.
    pub statistic: f64,
    /// Degrees of freedom: categories - 1.
    pub df: u32,
    /// The chance of a statistic at least this large were the counts drawn
    /// with the shares.
    pub p_value: f64,
    /// The smallest expected count (the test is approximate below 5).
    pub min_expected: f64,
}

/// Pearson's test of `observed` counts against `shares` (any positive
/// finite weights, normalised here; by the largest first where their sum
/// would overflow). `None` with
/// fewer than two categories, no counts, a length mismatch or a share that
/// is not a positive finite number.
pub fn chi_square_gof(observed: &[u64], shares: &[f64]) -> Option<GoodnessOfFit> {
    if observed.len() < 2 || observed.len() != shares.len() || shares.iter().any(|s| !(s.is_finite() && *s > 0.0)) {
        return None;
    }
    let total: u64 = observed.iter().sum();
    if total == 0 {
        return None;
    }
    let mut weight: f64 = shares.iter().sum();
    let mut shares = shares.to_vec();
    if !weight.is_finite() {
        let top = shares.iter().copied().fold(0.0, f64::max);
        shares.iter_mut().for_each(|s| *s /= top);
        weight = shares.iter().sum();
    }
    let mut statistic = 0.0;
    let mut min_expected = f64::INFINITY;
    for (&o, &s) in observed.iter().zip(&shares) {
        let e = total as f64 * s / weight;
        min_expected = min_expected.min(e);
        statistic += (o as f64 - e) * (o as f64 - e) / e;
    }
    if !statistic.is_finite() {
        return None;
    }
    let df = observed.len() as u32 - 1;
    let p_value = (1.0 - ChiSquared::new(df as f64).ok()?.cdf(statistic)).clamp(0.0, 1.0);
    Some(GoodnessOfFit { statistic, df, p_value, min_expected })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn by_hand() {
        // 60 / 40 against 50:50: (10² + 10²) / 50 = 4, df 1, p = 0.0455
        let g = chi_square_gof(&[60, 40], &[50.0, 50.0]).expect("test");
        assert!((g.statistic - 4.0).abs() < 1e-12 && g.df == 1, "{g:?}");
        assert!((g.p_value - 0.0455).abs() < 1e-4, "{g:?}");
        // shares as weights: 30 / 70 against 3:7 fits exactly
        let g = chi_square_gof(&[30, 70], &[3.0, 7.0]).expect("test");
        assert_eq!((g.statistic, g.p_value, g.min_expected), (0.0, 1.0, 30.0));
        assert_eq!(chi_square_gof(&[1], &[1.0]), None);
        assert_eq!(chi_square_gof(&[0, 0], &[1.0, 1.0]), None);
        assert_eq!(chi_square_gof(&[1, 2], &[1.0, 0.0]), None);
        // weights at the top of the float range: their sum overflows, the shares do not
        let g = chi_square_gof(&[60, 40], &[1e308, 1e308]).expect("test");
        assert!((g.statistic - 4.0).abs() < 1e-12 && (g.min_expected - 50.0).abs() < 1e-9, "{g:?}");
        assert_eq!(chi_square_gof(&[1, 2], &[1.0, f64::INFINITY]), None);
    }
}
