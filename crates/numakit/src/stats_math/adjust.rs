//! Multiple comparisons: p-values adjusted for the number of tests in a
//! family, by Holm's step-down method (the family-wise error rate) or
//! Benjamini–Hochberg's step-up method (the false discovery rate).

use serde::{Deserialize, Serialize};

/// How p-values are adjusted for the number of comparisons.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Adjustment {
    /// Holm (1979): controls the chance of any false flag in the family.
    Holm,
    /// Benjamini–Hochberg (1995): controls the expected share of false
    /// flags among the flags.
    BenjaminiHochberg,
}

impl Adjustment {
    /// The name the reports print.
    pub fn name(self) -> &'static str {
        match self {
            Adjustment::Holm => "Holm",
            Adjustment::BenjaminiHochberg => "Benjamini-Hochberg",
        }
    }

    /// The adjusted p-values of `ps`, in the same order.
    pub fn adjust(self, ps: &[f64]) -> Vec<f64> {
        match self {
            Adjustment::Holm => holm(ps),
            Adjustment::BenjaminiHochberg => benjamini_hochberg(ps),
        }
    }
}

/// The indexes of `ps` by increasing p (NaN last).
fn order(ps: &[f64]) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..ps.len()).collect();
    idx.sort_by(|&a, &b| ps[a].total_cmp(&ps[b]));
    idx
}

/// Holm's adjusted p-values: with the p-values sorted, p_(i) × (m - i + 1)
/// made non-decreasing and capped at 1. Reject at level α where the
/// adjusted value is below α.
pub fn holm(ps: &[f64]) -> Vec<f64> {
    let m = ps.len();
    let mut out = vec![1.0; m];
    let mut running: f64 = 0.0;
    for (rank, &i) in order(ps).iter().enumerate() {
        running = running.max((ps[i] * (m - rank) as f64).min(1.0));
        out[i] = running;
    }
    out
}

/// Benjamini–Hochberg's adjusted p-values (q-values): with the p-values
/// sorted, p_(i) × m / i made non-increasing from the largest down and
/// capped at 1.
pub fn benjamini_hochberg(ps: &[f64]) -> Vec<f64> {
    let m = ps.len();
    let mut out = vec![1.0; m];
    let mut running: f64 = 1.0;
    for (rank, &i) in order(ps).iter().enumerate().rev() {
        running = running.min((ps[i] * m as f64 / (rank + 1) as f64).min(1.0));
        out[i] = running;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: &[f64], b: &[f64]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-12)
    }

    #[test]
    fn holm_by_hand() {
        // sorted 0.01, 0.02, 0.03, 0.5: ×4, ×3, ×2, ×1 = 0.04, 0.06, 0.06, 0.5
        let got = holm(&[0.03, 0.5, 0.01, 0.02]);
        assert!(close(&got, &[0.06, 0.5, 0.04, 0.06]), "{got:?}");
        // monotone: a later product below an earlier one is raised to it
        assert!(close(&holm(&[0.02, 0.021]), &[0.04, 0.04]));
        assert!(close(&holm(&[0.9, 0.8]), &[1.0, 1.0]));
        assert!(holm(&[]).is_empty());
    }

    #[test]
    fn benjamini_hochberg_by_hand() {
        // sorted 0.01, 0.02, 0.03, 0.5: ×4/1, ×4/2, ×4/3, ×4/4 = 0.04, 0.04, 0.04, 0.5
        let got = benjamini_hochberg(&[0.03, 0.5, 0.01, 0.02]);
        assert!(close(&got, &[0.04, 0.5, 0.04, 0.04]), "{got:?}");
        assert!(close(&benjamini_hochberg(&[0.04, 0.01]), &[0.04, 0.02]));
        assert_eq!(Adjustment::BenjaminiHochberg.adjust(&[0.2]), vec![0.2]);
        assert_eq!(Adjustment::Holm.name(), "Holm");
    }
}
