//! Streaming sample moments: count, mean and the central sums of squares,
//! cubes and fourth powers, updated one value at a time and merged
//! exactly (Pébay 2008, "Formulas for robust, one-pass parallel
//! computation of covariances and arbitrary-order statistical moments").
//! What a reader of millions of values keeps instead of the values.

use serde::{Deserialize, Serialize};

/// Moments of a sample seen one value at a time.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Moments {
    /// Number of values.
    pub n: u64,
    /// Their mean.
    pub mean: f64,
    /// Σ (x - mean)².
    pub m2: f64,
    /// Σ (x - mean)³.
    pub m3: f64,
    /// Σ (x - mean)⁴.
    pub m4: f64,
}

impl Moments {
    /// The moments of `xs`.
    pub fn of(xs: &[f64]) -> Moments {
        let mut m = Moments::default();
        xs.iter().for_each(|&x| m.push(x));
        m
    }

    /// Adds one value.
    pub fn push(&mut self, x: f64) {
        let n1 = self.n as f64;
        self.n += 1;
        let n = self.n as f64;
        let delta = x - self.mean;
        let dn = delta / n;
        let dn2 = dn * dn;
        let t1 = delta * dn * n1;
        self.mean += dn;
        self.m4 += t1 * dn2 * (n * n - 3.0 * n + 3.0) + 6.0 * dn2 * self.m2 - 4.0 * dn * self.m3;
        self.m3 += t1 * dn * (n - 2.0) - 3.0 * dn * self.m2;
        self.m2 += t1;
    }

    /// Adds every value `other` has seen (as if pushed one by one).
    pub fn merge(&mut self, other: &Moments) {
        if other.n == 0 {
            return;
        }
        if self.n == 0 {
            *self = *other;
            return;
        }
        let (na, nb) = (self.n as f64, other.n as f64);
        let n = na + nb;
        let d = other.mean - self.mean;
        let d2 = d * d;
        let m2 = self.m2 + other.m2 + d2 * na * nb / n;
        let m3 =
            self.m3 + other.m3 + d * d2 * na * nb * (na - nb) / (n * n) + 3.0 * d * (na * other.m2 - nb * self.m2) / n;
        let m4 = self.m4
            + other.m4
            + d2 * d2 * na * nb * (na * na - na * nb + nb * nb) / (n * n * n)
            + 6.0 * d2 * (na * na * other.m2 + nb * nb * self.m2) / (n * n)
            + 4.0 * d * (na * other.m3 - nb * self.m3) / n;
        self.mean += d * nb / n;
        self.m2 = m2;
        self.m3 = m3;
        self.m4 = m4;
        self.n += other.n;
    }

    /// Sample variance (divisor n - 1); `None` below two values.
    pub fn variance(&self) -> Option<f64> {
        (self.n >= 2).then(|| self.m2.max(0.0) / (self.n - 1) as f64)
    }

    /// Sample standard deviation (divisor n - 1); `None` below two values.
    pub fn stddev(&self) -> Option<f64> {
        self.variance().map(f64::sqrt)
    }

    /// Sample kurtosis (not excess: 3 for a normal sample), n m4 / m2²;
    /// `None` below two values or for a constant sample.
    pub fn kurtosis(&self) -> Option<f64> {
        (self.n >= 2 && self.m2 > 0.0).then(|| self.n as f64 * self.m4 / (self.m2 * self.m2))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * (1.0 + b.abs())
    }

    fn direct(xs: &[f64]) -> (f64, f64, f64, f64) {
        let n = xs.len() as f64;
        let m = xs.iter().sum::<f64>() / n;
        let s = |k: i32| xs.iter().map(|x| (x - m).powi(k)).sum::<f64>();
        (m, s(2), s(3), s(4))
    }

    #[test]
    fn streaming_and_merged_moments_equal_the_direct_sums() {
        let xs: Vec<f64> = (0..200).map(|i| ((i * 37 % 101) as f64).ln_1p() * 3.0 + (i % 7) as f64).collect();
        let (m, m2, m3, m4) = direct(&xs);
        let one = Moments::of(&xs);
        assert!(close(one.mean, m) && close(one.m2, m2) && close(one.m3, m3) && close(one.m4, m4), "{one:?}");
        for cut in [0, 1, 57, 199, 200] {
            let mut a = Moments::of(&xs[..cut]);
            a.merge(&Moments::of(&xs[cut..]));
            assert_eq!(a.n, 200);
            assert!(close(a.mean, m) && close(a.m2, m2) && close(a.m3, m3) && close(a.m4, m4), "cut {cut}: {a:?}");
        }
        // variance and kurtosis by hand: 1, 2, 3, 4 has m2 = 5, m4 = 10.25
        let k = Moments::of(&[1.0, 2.0, 3.0, 4.0]);
        assert!(close(k.variance().expect("var"), 5.0 / 3.0));
        assert!(close(k.kurtosis().expect("kurt"), 4.0 * 10.25 / 25.0));
        assert_eq!((Moments::of(&[1.0]).variance(), Moments::of(&[2.0, 2.0]).kurtosis()), (None, None));
    }
}
