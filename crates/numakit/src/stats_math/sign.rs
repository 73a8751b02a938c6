//! The exact sign test of paired comparisons: of the pairs that differ,
//! are more above than chance would give?

use serde::{Deserialize, Serialize};
use statrs::distribution::{Binomial, DiscreteCDF};

/// The outcome of [`sign_test`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SignTest {
    /// Pairs whose second member is above the first.
    pub above: usize,
    /// Pairs whose second member is below the first.
    pub below: usize,
    /// Exact two-sided p-value: the chance, were above and below equally
    /// likely (ties left out), of a split at least this uneven.
    pub p_value: f64,
}

/// The exact two-sided sign test of `above` against `below` (ties are not
/// counted): `p = min(1, 2 P(X <= min(above, below)))` with `X ~
/// Binomial(above + below, 1/2)`. `None` when no pair differs.
///
/// ```
/// use numakit::stats_math::sign_test;
/// // 9 of 10 above: p = 2 × 11/1024
/// assert!((sign_test(9, 1).unwrap().p_value - 0.021484375).abs() < 1e-12);
/// ```
pub fn sign_test(above: usize, below: usize) -> Option<SignTest> {
    let n = above + below;
    if n == 0 {
        return None;
    }
    let dist = Binomial::new(0.5, n as u64).ok()?;
    let tail = dist.cdf(above.min(below) as u64);
    Some(SignTest { above, below, p_value: (2.0 * tail).min(1.0) })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs().max(1e-300)
    }

    #[test]
    fn p_values_are_the_binomial_tails() {
        // P(X <= 5), X ~ B(20, 1/2) = (1 + 20 + 190 + 1140 + 4845 + 15504) / 2^20
        let p = sign_test(5, 15).expect("pairs differ").p_value;
        assert!(close(p, 2.0 * 21700.0 / 1_048_576.0), "{p}");
        // symmetric in the direction
        assert_eq!(sign_test(15, 5).map(|t| t.p_value), Some(p));
        // a balanced split, or a single pair, is no evidence at all
        for (a, b) in [(10, 10), (1, 0), (0, 1)] {
            let p = sign_test(a, b).expect("pairs differ").p_value;
            assert!((p - 1.0).abs() < 1e-12, "{a} above, {b} below: {p}");
        }
        // the far tail keeps its precision: 100 of 100 above, 2 / 2^100
        let p = sign_test(100, 0).expect("pairs differ").p_value;
        assert!(close(p, 2.0 * 0.5f64.powi(100)), "{p:e}");
        // 35 of 600 below: P(X <= 35) over B(600, 1/2), summed term by term in logs
        let ln_c = |n: u64, k: u64| statrs::function::factorial::ln_binomial(n, k);
        let want: f64 = 2.0 * (0..=35u64).map(|k| (ln_c(600, k) - 600.0 * 2f64.ln()).exp()).sum::<f64>();
        let p = sign_test(565, 35).expect("pairs differ").p_value;
        assert!(close(p, want) && p < 1e-100, "{p:e} vs {want:e}");
    }

    #[test]
    fn no_pair_that_differs_is_no_test() {
        assert_eq!(sign_test(0, 0), None);
    }
}
