//! When each reading was taken. A rate is a difference of two readings of
//! one counter divided by the time between those two readings, not by the
//! time between the two scans that made them: a scan of many processes
//! can take seconds (the first one reads every candidate's `numa_maps`;
//! a starved machine runs the daemon slowly), and a process read at the
//! end of one scan and at the start of the next would otherwise show a
//! fraction of its CPU use (or a multiple of it, the other way round).

use std::cell::Cell;
use std::time::Instant;

/// The clock of one scan: the scan's monotonic time plus the time elapsed
/// since it began, on the live system; on a dump (frozen files, tests)
/// every reading is at the scan's time, or `step` seconds after the one
/// before (a slow scan, for tests).
#[derive(Debug)]
pub(super) struct Stamp {
    mono_s: f64,
    started: Option<Instant>,
    step: f64,
    readings: Cell<u32>,
}

impl Stamp {
    pub(super) fn new(mono_s: f64, live: bool, step: f64) -> Self {
        Self { mono_s, started: live.then(Instant::now), step, readings: Cell::new(0) }
    }

    /// Now, on the scan's monotonic clock (seconds).
    pub(super) fn now(&self) -> f64 {
        let n = self.readings.get();
        self.readings.set(n.saturating_add(1));
        self.mono_s + self.started.map_or(0.0, |t| t.elapsed().as_secs_f64()) + self.step * f64::from(n)
    }

    /// Seconds between two readings (at least a millisecond, so a rate is
    /// never divided by zero).
    pub(super) fn span(before: f64, after: f64) -> f64 {
        (after - before).max(1e-3)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frozen_on_a_dump_moving_on_the_live_system() {
        let dump = Stamp::new(10.0, false, 0.0);
        assert_eq!((dump.now(), dump.now()), (10.0, 10.0));
        let slow = Stamp::new(10.0, false, 0.5);
        assert_eq!((slow.now(), slow.now(), slow.now()), (10.0, 10.5, 11.0));
        let live = Stamp::new(10.0, true, 0.0);
        let a = live.now();
        std::thread::sleep(std::time::Duration::from_millis(5));
        let b = live.now();
        assert!(a >= 10.0 && b >= a + 0.004, "{a} {b}");
        assert_eq!(Stamp::span(3.0, 3.0), 1e-3);
        assert_eq!(Stamp::span(3.0, 5.5), 2.5);
    }
}
