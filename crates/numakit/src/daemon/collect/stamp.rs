//! When each reading was taken. A rate is a difference of two readings of
//! one counter divided by the time between those two readings, not by the
//! time between the two scans that made them: a scan of many processes
//! can take seconds (the first one reads every candidate's `numa_maps`;
//! a starved machine runs the daemon slowly), and a process read at the
//! end of one scan and at the start of the next would otherwise show a
//! fraction of its CPU use (or a multiple of it, the other way round).

use std::cell::Cell;
use std::collections::VecDeque;
use std::time::Instant;

/// The clock of one scan: the scan's monotonic time plus the time elapsed
/// since that time was read (`taken`), on the live system; on a dump
/// (frozen files, tests) every reading is at the scan's time, or `step`
/// seconds after the one before (a slow scan, for tests). Elapsed from
/// when the scan's time was read, not from when the readings begin: what
/// a scan does first (the first scan of a daemon pages its own code in)
/// would otherwise be missing from every reading's time, and the first
/// rates after it read low by that much.
#[derive(Debug)]
pub(super) struct Stamp {
    mono_s: f64,
    scan_s: f64,
    taken: Option<Instant>,
    step: f64,
    readings: Cell<u32>,
}

impl Stamp {
    /// `mono_s`: the scan's monotonic time, read at `taken` (None on a
    /// dump); `scan_s`: the scan's time on the snapshot's clock
    /// ([`Snapshot::time_s`](crate::daemon::Snapshot::time_s)).
    pub(super) fn new(mono_s: f64, scan_s: f64, taken: Option<Instant>, step: f64) -> Self {
        Self { mono_s, scan_s, taken, step, readings: Cell::new(0) }
    }

    /// Now, on the scan's monotonic clock (seconds).
    pub(super) fn now(&self) -> f64 {
        let n = self.readings.get();
        self.readings.set(n.saturating_add(1));
        self.mono_s + self.taken.map_or(0.0, |t| t.elapsed().as_secs_f64()) + self.step * f64::from(n)
    }

    /// The scan's time on the snapshot's clock: which scan a reading
    /// belongs to (a change the daemon applies after a scan comes after
    /// every reading of that scan and before every reading of the next).
    pub(super) fn scan_s(&self) -> f64 {
        self.scan_s
    }

    /// Seconds between two readings (at least a millisecond, so a rate is
    /// never divided by zero).
    pub(super) fn span(before: f64, after: f64) -> f64 {
        (after - before).max(1e-3)
    }
}

/// A reading that knows when it was taken.
pub(super) trait Timed: Copy {
    fn at(&self) -> f64;
}

/// Readings kept at most: a short interval and a long span would otherwise
/// keep dozens per thread; the ones in between are thinned (the span of a
/// rate only grows).
const TRAIL_MAX: usize = 8;

/// The recent readings of one counter, enough to take a rate over at least
/// `min_span` seconds: a counter that was read late by up to a second
/// (a virtual CPU that did not run, a tick that came late) errs by that
/// second over the span, not over one short window.
#[derive(Debug, Clone)]
pub(super) struct Trail<T> {
    r: VecDeque<T>,
}

impl<T> Default for Trail<T> {
    fn default() -> Self {
        Self { r: VecDeque::new() }
    }
}

impl<T: Timed> Trail<T> {
    /// The reading a rate at `now` is taken from: the newest at least
    /// `min_span` seconds before `now`, else the oldest; with whether it is
    /// that old. None before the first reading.
    pub(super) fn base(&self, now: f64, min_span: f64) -> Option<(T, bool)> {
        match self.r.iter().rev().find(|x| now - x.at() >= min_span) {
            Some(x) => Some((*x, true)),
            None => self.r.front().map(|x| (*x, false)),
        }
    }

    /// The newest reading.
    pub(super) fn last(&self) -> Option<T> {
        self.r.back().copied()
    }

    /// Appends `x`; keeps the newest reading at least `min_span` before it
    /// and those after (the base of any later rate), at most [`TRAIL_MAX`].
    pub(super) fn push(&mut self, x: T, min_span: f64) {
        let now = x.at();
        self.r.push_back(x);
        while self.r.len() > 1 && self.r.get(1).is_some_and(|y| now - y.at() >= min_span) {
            self.r.pop_front();
        }
        while self.r.len() > TRAIL_MAX {
            self.r.remove(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Timed for f64 {
        fn at(&self) -> f64 {
            *self
        }
    }

    #[test]
    fn a_trail_keeps_the_base_of_a_rate_over_the_span() {
        let mut t: Trail<f64> = Trail::default();
        assert!(t.base(0.0, 4.0).is_none());
        for x in [0.0, 1.0, 2.0, 3.0] {
            t.push(x, 4.0);
        }
        // Nothing 4 s old at 3.5: the oldest, not old enough.
        assert_eq!(t.base(3.5, 4.0), Some((0.0, false)));
        assert_eq!(t.base(4.0, 4.0), Some((0.0, true)));
        t.push(4.0, 4.0);
        assert_eq!(t.base(5.5, 4.0), Some((1.0, true)));
        t.push(5.5, 4.0);
        // 0.0 and 1.0 are older than the newest base 5.5 needs (1.0): 0.0 goes.
        assert_eq!(t.r, [1.0, 2.0, 3.0, 4.0, 5.5]);
        assert_eq!(t.last(), Some(5.5));
        // A zero span: the previous reading, as before spans.
        let mut z: Trail<f64> = Trail::default();
        z.push(1.0, 0.0);
        z.push(2.0, 0.0);
        assert_eq!(z.r, [2.0]);
        assert_eq!(z.base(3.0, 0.0), Some((2.0, true)));
        // Short intervals: thinned, the oldest kept.
        let mut s: Trail<f64> = Trail::default();
        for i in 0..40 {
            s.push(f64::from(i) * 0.1, 4.0);
        }
        assert!(s.r.len() <= TRAIL_MAX && s.r[0] == 0.0, "{:?}", s.r);
        assert_eq!(s.base(4.0, 4.0), Some((0.0, true)));
    }

    #[test]
    fn frozen_on_a_dump_moving_on_the_live_system() {
        let dump = Stamp::new(10.0, 500.0, None, 0.0);
        assert_eq!((dump.now(), dump.now(), dump.scan_s()), (10.0, 10.0, 500.0));
        let slow = Stamp::new(10.0, 500.0, None, 0.5);
        assert_eq!((slow.now(), slow.now(), slow.now()), (10.0, 10.5, 11.0));
        // Live: counted from when the scan's time was read, so work done
        // before the first reading is in every reading's time.
        let taken = Instant::now();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let live = Stamp::new(10.0, 500.0, Some(taken), 0.0);
        let a = live.now();
        std::thread::sleep(std::time::Duration::from_millis(5));
        let b = live.now();
        assert!(a >= 10.02 && b >= a + 0.004, "{a} {b}");
        assert_eq!(Stamp::span(3.0, 3.0), 1e-3);
        assert_eq!(Stamp::span(3.0, 5.5), 2.5);
    }
}
