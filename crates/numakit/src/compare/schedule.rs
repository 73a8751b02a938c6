//! The order of runs. Runs go in rounds: each round runs every
//! configuration once, so slow drifts of the machine (thermal, other load,
//! page cache) touch every configuration alike instead of the last one.
//! Warm-up rounds come first and are not measured. Within a round the order
//! is the configurations' order (A B C A B C ...) or, with a seed, a fresh
//! random permutation per round (so a fixed position in the round cannot
//! favour one configuration either).

use rand::seq::SliceRandom;
use rand::{rngs::StdRng, SeedableRng};
use serde::{Deserialize, Serialize};

use super::spec::Order;

/// One run in the schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Slot {
    /// Index of the configuration.
    pub config: usize,
    /// Round number: warm-up rounds count from 0, measured rounds from 0.
    pub round: usize,
    /// A warm-up run (not measured).
    pub warmup: bool,
}

/// Every run of an experiment with `configs` configurations, in order:
/// `warmup` warm-up rounds, then `runs` measured rounds. The caller bounds
/// the counts ([`Experiment::validate`](super::Experiment::validate)): the
/// schedule is held in memory.
pub fn schedule(configs: usize, warmup: usize, runs: usize, order: Order) -> Vec<Slot> {
    let mut rng = match order {
        Order::Interleaved => None,
        Order::Shuffled { seed } => Some(StdRng::seed_from_u64(seed)),
    };
    let total = warmup.checked_add(runs).and_then(|r| r.checked_mul(configs));
    let mut out = Vec::with_capacity(total.unwrap_or(0).min(super::spec::MAX_TOTAL_RUNS));
    for (rounds, warm) in [(warmup, true), (runs, false)] {
        for round in 0..rounds {
            let mut ids: Vec<usize> = (0..configs).collect();
            if let Some(rng) = rng.as_mut() {
                ids.shuffle(rng);
            }
            out.extend(ids.into_iter().map(|config| Slot { config, round, warmup: warm }));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interleaved_is_a_b_a_b() {
        let s = schedule(2, 1, 2, Order::Interleaved);
        let got: Vec<(usize, usize, bool)> = s.iter().map(|s| (s.config, s.round, s.warmup)).collect();
        assert_eq!(got, vec![(0, 0, true), (1, 0, true), (0, 0, false), (1, 0, false), (0, 1, false), (1, 1, false)]);
    }

    #[test]
    fn shuffled_rounds_are_permutations_and_reproducible() {
        let a = schedule(4, 0, 20, Order::Shuffled { seed: 9 });
        assert_eq!(a, schedule(4, 0, 20, Order::Shuffled { seed: 9 }));
        assert_ne!(a, schedule(4, 0, 20, Order::Shuffled { seed: 10 }));
        for round in a.chunks(4) {
            let mut ids: Vec<usize> = round.iter().map(|s| s.config).collect();
            ids.sort();
            assert_eq!(ids, vec![0, 1, 2, 3]);
        }
        let firsts: std::collections::BTreeSet<usize> = a.chunks(4).map(|r| r[0].config).collect();
        assert!(firsts.len() > 1, "the first slot varies between rounds");
    }
}
