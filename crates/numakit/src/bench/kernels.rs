//! STREAM's four kernels on plain slices, and STREAM's validation of the
//! final array values.
//!
//! The loops are written as zipped iterators over slices with no bounds
//! checks left, so LLVM vectorises them (in release builds); each worker
//! thread calls them on its own chunk of the arrays.

use serde::{Deserialize, Serialize};

/// STREAM's scalar.
pub const SCALAR: f64 = 3.0;

/// STREAM's relative error bound for 8-byte values.
pub const EPSILON: f64 = 1.0e-13;

/// One of STREAM's kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kernel {
    /// `c[i] = a[i]`: 2 words moved per element.
    Copy,
    /// `b[i] = q * c[i]`: 2 words.
    Scale,
    /// `c[i] = a[i] + b[i]`: 3 words.
    Add,
    /// `a[i] = b[i] + q * c[i]`: 3 words.
    Triad,
}

impl Kernel {
    /// All four, in STREAM's order.
    pub const ALL: [Kernel; 4] = [Kernel::Copy, Kernel::Scale, Kernel::Add, Kernel::Triad];

    /// The name (`copy`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Kernel::Copy => "copy",
            Kernel::Scale => "scale",
            Kernel::Add => "add",
            Kernel::Triad => "triad",
        }
    }

    /// Parses a name.
    pub fn parse(s: &str) -> Option<Kernel> {
        Kernel::ALL.into_iter().find(|k| k.name() == s.trim().to_ascii_lowercase())
    }

    /// Bytes moved per element (STREAM counts reads and writes, 8 bytes
    /// each).
    pub fn bytes_per_element(self) -> u64 {
        match self {
            Kernel::Copy | Kernel::Scale => 16,
            Kernel::Add | Kernel::Triad => 24,
        }
    }

    /// Runs the kernel on one chunk of the three arrays.
    #[inline]
    pub fn run(self, a: &mut [f64], b: &mut [f64], c: &mut [f64]) {
        match self {
            Kernel::Copy => copy(c, a),
            Kernel::Scale => scale(b, c, SCALAR),
            Kernel::Add => add(c, a, b),
            Kernel::Triad => triad(a, b, c, SCALAR),
        }
    }
}

/// `c = a`.
#[inline(never)]
pub fn copy(c: &mut [f64], a: &[f64]) {
    for (ci, ai) in c.iter_mut().zip(a) {
        *ci = *ai;
    }
}

/// `b = q * c`.
#[inline(never)]
pub fn scale(b: &mut [f64], c: &[f64], q: f64) {
    for (bi, ci) in b.iter_mut().zip(c) {
        *bi = q * *ci;
    }
}

/// `c = a + b`.
#[inline(never)]
pub fn add(c: &mut [f64], a: &[f64], b: &[f64]) {
    for ((ci, ai), bi) in c.iter_mut().zip(a).zip(b) {
        *ci = *ai + *bi;
    }
}

/// `a = b + q * c`.
#[inline(never)]
pub fn triad(a: &mut [f64], b: &[f64], c: &[f64], q: f64) {
    for ((ai, bi), ci) in a.iter_mut().zip(b).zip(c) {
        *ai = *bi + q * *ci;
    }
}

/// STREAM's initial values: a = 1, b = 2, c = 0, then a = 2a (STREAM's
/// timer-granularity pass).
pub fn init(a: &mut [f64], b: &mut [f64], c: &mut [f64]) {
    a.fill(2.0);
    b.fill(2.0);
    c.fill(0.0);
}

/// The values every element should hold after `iterations` passes of
/// `kernels` (in that order) from [`init`]: STREAM's expected a, b, c.
pub fn expected(kernels: &[Kernel], iterations: usize) -> (f64, f64, f64) {
    let (mut a, mut b, mut c) = (2.0, 2.0, 0.0);
    for _ in 0..iterations {
        for k in kernels {
            match k {
                Kernel::Copy => c = a,
                Kernel::Scale => b = SCALAR * c,
                Kernel::Add => c = a + b,
                Kernel::Triad => a = b + SCALAR * c,
            }
        }
    }
    (a, b, c)
}

/// STREAM's check: the average absolute error of each array against the
/// expected value, relative to that value, must not exceed [`EPSILON`].
/// Returns a description of the first failure.
pub fn validate(a: &[f64], b: &[f64], c: &[f64], kernels: &[Kernel], iterations: usize) -> Result<(), String> {
    let (ea, eb, ec) = expected(kernels, iterations);
    for (name, xs, want) in [("a", a, ea), ("b", b, eb), ("c", c, ec)] {
        if xs.is_empty() {
            continue;
        }
        let avg_err = xs.iter().map(|x| (x - want).abs()).sum::<f64>() / xs.len() as f64;
        let rel = if want == 0.0 { avg_err } else { avg_err / want.abs() };
        if rel > EPSILON {
            let bad =
                xs.iter().filter(|x| ((*x - want) / if want == 0.0 { 1.0 } else { want }).abs() > EPSILON).count();
            return Err(format!(
                "array {name}: average relative error {rel:e} exceeds {EPSILON:e} (expected {want:e}, {bad} of {} elements differ)",
                xs.len()
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernels_compute_streams_formulas() {
        let (mut a, mut b, mut c) = (vec![1.0, 2.0, 3.0], vec![4.0, 5.0, 6.0], vec![0.0; 3]);
        Kernel::Copy.run(&mut a, &mut b, &mut c);
        assert_eq!(c, [1.0, 2.0, 3.0]);
        Kernel::Scale.run(&mut a, &mut b, &mut c);
        assert_eq!(b, [3.0, 6.0, 9.0]);
        Kernel::Add.run(&mut a, &mut b, &mut c);
        assert_eq!(c, [4.0, 8.0, 12.0]);
        Kernel::Triad.run(&mut a, &mut b, &mut c);
        assert_eq!(a, [15.0, 30.0, 45.0]);
    }

    #[test]
    fn validation_matches_a_replay_and_catches_errors() {
        let n = 1000;
        let (mut a, mut b, mut c) = (vec![0.0; n], vec![0.0; n], vec![0.0; n]);
        init(&mut a, &mut b, &mut c);
        for _ in 0..11 {
            for k in Kernel::ALL {
                k.run(&mut a, &mut b, &mut c);
            }
        }
        assert_eq!(validate(&a, &b, &c, &Kernel::ALL, 11), Ok(()));
        assert!(validate(&a, &b, &c, &Kernel::ALL, 10).is_err());
        a[7] *= 1.5;
        let e = validate(&a, &b, &c, &Kernel::ALL, 11).expect_err("corrupted");
        assert!(e.starts_with("array a:") && e.contains("1 of 1000"), "{e}");
        // Only triad, twice: a = 2 + 3 * 0 = 2.
        assert_eq!(expected(&[Kernel::Triad], 2), (2.0, 2.0, 0.0));
    }

    #[test]
    fn names_and_sizes() {
        assert_eq!(Kernel::parse("Triad"), Some(Kernel::Triad));
        assert_eq!(Kernel::parse("nope"), None);
        assert_eq!(Kernel::ALL.map(Kernel::bytes_per_element), [16, 16, 24, 24]);
    }
}
