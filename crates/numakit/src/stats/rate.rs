//! Deltas and rates of monotonic counters between two samples, computed
//! here once from (previous, current, interval) so that `stat`, `top` and
//! the JSON agree.

use std::time::Duration;

use serde::Serialize;

/// The change of one counter over an interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Rate {
    /// Increase over the interval (0 if the counter went backwards, e.g.
    /// after a node was hot-removed and added again).
    pub delta: u64,
    /// Increase per second.
    pub per_sec: f64,
}

impl Rate {
    /// The rate of a counter that went from `prev` to `cur` in `interval`.
    /// A zero interval gives a zero rate, never a division by zero.
    pub fn between(prev: u64, cur: u64, interval: Duration) -> Self {
        let delta = cur.saturating_sub(prev);
        let secs = interval.as_secs_f64();
        Rate { delta, per_sec: if secs > 0.0 { delta as f64 / secs } else { 0.0 } }
    }
}

/// Rates of named counters: every name of `cur` that `prev` also has, in
/// the order of `cur`.
pub fn named_rates(prev: &[(String, u64)], cur: &[(String, u64)], interval: Duration) -> Vec<(String, Rate)> {
    cur.iter()
        .filter_map(|(k, v)| {
            let p = prev.iter().find(|(pk, _)| pk == k)?.1;
            Some((k.clone(), Rate::between(p, *v, interval)))
        })
        .collect()
}

/// `part / whole`, or `None` when `whole` is 0 (a share of nothing is
/// unknown, not 0% or 100%).
pub fn ratio(part: u64, whole: u64) -> Option<f64> {
    (whole > 0).then(|| part as f64 / whole as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_from_prev_cur_interval() {
        let r = Rate::between(100, 350, Duration::from_millis(500));
        assert_eq!(r, Rate { delta: 250, per_sec: 500.0 });
        assert_eq!(Rate::between(10, 5, Duration::from_secs(1)), Rate { delta: 0, per_sec: 0.0 });
        assert_eq!(Rate::between(0, 5, Duration::ZERO).per_sec, 0.0);
        let prev = vec![("a".to_string(), 1), ("b".to_string(), 2)];
        let cur = vec![("b".to_string(), 12), ("c".to_string(), 3), ("a".to_string(), 4)];
        let r = named_rates(&prev, &cur, Duration::from_secs(2));
        assert_eq!(r.len(), 2);
        assert_eq!((r[0].0.as_str(), r[0].1.delta, r[0].1.per_sec), ("b", 10, 5.0));
        assert_eq!((r[1].0.as_str(), r[1].1.delta), ("a", 3));
        assert_eq!(ratio(1, 4), Some(0.25));
        assert_eq!(ratio(1, 0), None);
    }
}
