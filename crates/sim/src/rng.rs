//! A small deterministic random generator (SplitMix64), so that results
//! depend only on seeds and never on a library's generator changing.

/// SplitMix64 (Steele, Lea, Flood 2014).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Self {
        Self(seed ^ 0x9E37_79B9_7F4A_7C15)
    }

    /// A generator for item `i` of stream `seed` (independent streams).
    pub fn stream(seed: u64, i: u64) -> Self {
        let mut r = Self::new(seed.wrapping_mul(0xD1B5_4A32_D192_ED03) ^ i.wrapping_mul(0x8CB9_2BA7_2F3D_8DD7));
        r.next_u64();
        r
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in [lo, hi).
    pub fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }

    /// Uniform integer in [0, n) (0 when n is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    /// Standard normal (Box–Muller).
    pub fn normal(&mut self) -> f64 {
        let u = self.unit().max(1e-300);
        let v = self.unit();
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }

    /// One of `items`, by weight.
    pub fn pick<T: Copy>(&mut self, items: &[(T, f64)]) -> Option<T> {
        let total: f64 = items.iter().map(|x| x.1).sum();
        let mut x = self.unit() * total;
        for &(t, w) in items {
            if x < w {
                return Some(t);
            }
            x -= w;
        }
        items.last().map(|x| x.0)
    }
}
