//! Dependent-load pointer chasing (memory latency) and the delay-loop
//! readers that load a node's memory for the loaded-latency curve.
//!
//! The chain is one random cycle through every cache line of a buffer:
//! each line's first word holds the address of the next line, so each load
//! depends on the one before and the random order defeats the hardware
//! prefetchers (as lmbench's `lat_mem_rd` and Intel MLC do). [`Pattern`]
//! chooses whether the cycle wanders across the whole buffer (TLB misses
//! included) or finishes each page, in random order within it, before it
//! moves to another random page (TLB misses mostly excluded).

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rand::seq::SliceRandom;
use rand::Rng;
use serde::{Deserialize, Serialize};

/// Cache-line size the chain steps by.
pub const LINE: usize = 64;

/// The order of the cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Pattern {
    /// Every line of the buffer in one random order.
    Random,
    /// Pages in random order; the lines of each page in random order
    /// before the next page.
    Page,
}

impl Pattern {
    /// The name (`random`, `page`).
    pub fn name(self) -> &'static str {
        match self {
            Pattern::Random => "random",
            Pattern::Page => "page",
        }
    }
}

/// The visiting order of lines `0..lines` (`page_lines` lines per page).
pub fn order(lines: usize, page_lines: usize, pattern: Pattern, rng: &mut impl Rng) -> Vec<usize> {
    match pattern {
        Pattern::Random => {
            let mut v: Vec<usize> = (0..lines).collect();
            v.shuffle(rng);
            v
        }
        Pattern::Page => {
            let per = page_lines.max(1);
            let mut pages: Vec<usize> = (0..lines.div_ceil(per)).collect();
            pages.shuffle(rng);
            let mut v = Vec::with_capacity(lines);
            for p in pages {
                let start = p * per;
                let mut inner: Vec<usize> = (start..(start + per).min(lines)).collect();
                inner.shuffle(rng);
                v.extend(inner);
            }
            v
        }
    }
}

/// Writes the cycle `order` into `buf` (whose length is at least
/// `order.len() * LINE` bytes and whose start is 8-byte aligned): line
/// `order[i]` points to line `order[i + 1]`, the last back to the first.
/// Returns the address of the first line.
///
/// # Panics
///
/// If `buf` is not word aligned or shorter than `order.len()` lines.
pub fn link(buf: &mut [u8], order: &[usize]) -> usize {
    let base = buf.as_mut_ptr() as usize;
    assert!(base % std::mem::align_of::<usize>() == 0, "chase buffer must be word aligned");
    assert!(order.len() * LINE <= buf.len(), "chase buffer too small");
    let Some(&first) = order.first() else { return base };
    for (i, &line) in order.iter().enumerate() {
        let next = order.get(i + 1).copied().unwrap_or(first);
        let bytes = (base + next * LINE).to_ne_bytes();
        buf[line * LINE..line * LINE + bytes.len()].copy_from_slice(&bytes);
    }
    base + first * LINE
}

/// Follows the chain from `start` for `loads` loads (rounded up to 16) and
/// returns where it ended.
///
/// # Safety
///
/// `start` must be the address returned by [`link`] for a buffer that is
/// still alive and unchanged since, so that every address in the chain is
/// a readable, aligned word of that buffer.
#[inline(never)]
pub unsafe fn chase(start: usize, loads: u64) -> usize {
    let mut p = start as *const usize;
    for _ in 0..loads.div_ceil(16) {
        // Sixteen dependent loads per turn keep the loop overhead off the
        // critical path.
        for _ in 0..16 {
            // SAFETY: by the caller's promise `p` is a word in the live
            // chain, and the word holds the next such address.
            p = unsafe { *p } as *const usize;
        }
    }
    black_box(p) as usize
}

/// Times `loads` loads along the chain and returns nanoseconds per load.
///
/// # Safety
///
/// As for [`chase`].
pub unsafe fn time_chase(start: usize, loads: u64) -> (f64, usize) {
    let loads = loads.div_ceil(16) * 16;
    let t = Instant::now();
    // SAFETY: passed on from the caller.
    let end = unsafe { chase(start, loads) };
    (t.elapsed().as_nanos() as f64 / loads as f64, end)
}

/// How many loads take about `target` at the latency one calibration run
/// of `probe_loads` loads showed (at least `probe_loads`).
///
/// # Safety
///
/// As for [`chase`].
pub unsafe fn calibrate(start: usize, probe_loads: u64, target: Duration) -> u64 {
    // SAFETY: passed on from the caller.
    let (ns, _) = unsafe { time_chase(start, probe_loads) };
    let want = target.as_nanos() as f64 / ns.max(0.1);
    (want as u64).max(probe_loads)
}

/// Delay loop: about `n` dependent multiply-adds (a few cycles each), that
/// the compiler cannot remove.
#[inline(always)]
pub fn delay(n: u64) -> u64 {
    let mut x = black_box(1u64);
    for i in 0..n {
        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(i);
    }
    black_box(x)
}

/// Bytes a load generator reads between two delays.
pub const BLOCK: usize = 512;

/// A load generator: reads `buf` over and over in [`BLOCK`]-byte blocks,
/// with [`delay`]`(delay_n)` between blocks, until `stop` is set; adds the
/// bytes read to `bytes` every 64 blocks (only this thread writes it).
pub fn generate(buf: &[u64], delay_n: u64, stop: &AtomicBool, bytes: &AtomicU64) {
    let words = BLOCK / 8;
    let mut acc = 0u64;
    let mut since = 0u64;
    while !stop.load(Ordering::Relaxed) {
        for (i, block) in buf.chunks_exact(words).enumerate() {
            acc = acc.wrapping_add(block.iter().fold(0u64, |s, &w| s.wrapping_add(w)));
            if delay_n > 0 {
                acc = acc.wrapping_add(delay(delay_n));
            }
            since += 1;
            if i % 64 == 63 {
                bytes.store(bytes.load(Ordering::Relaxed) + since * BLOCK as u64, Ordering::Relaxed);
                since = 0;
                if stop.load(Ordering::Relaxed) {
                    break;
                }
            }
        }
    }
    bytes.store(bytes.load(Ordering::Relaxed) + since * BLOCK as u64, Ordering::Relaxed);
    black_box(acc);
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{rngs::StdRng, SeedableRng};

    fn is_permutation(v: &[usize], n: usize) -> bool {
        let mut s = v.to_vec();
        s.sort();
        s == (0..n).collect::<Vec<_>>()
    }

    #[test]
    fn orders_are_permutations() {
        let mut rng = StdRng::seed_from_u64(1);
        let r = order(1000, 64, Pattern::Random, &mut rng);
        assert!(is_permutation(&r, 1000));
        assert_ne!(r, (0..1000).collect::<Vec<_>>());
        let p = order(1000, 64, Pattern::Page, &mut rng);
        assert!(is_permutation(&p, 1000));
        // Page pattern: each run of 64 stays inside one page (the short
        // last page aside).
        let mut i = 0;
        while i < p.len() {
            let page = p[i] / 64;
            let len = if page == 1000 / 64 { 1000 % 64 } else { 64 };
            assert!(p[i..i + len].iter().all(|l| l / 64 == page), "at {i}");
            i += len;
        }
    }

    #[test]
    fn the_chain_is_one_cycle_through_every_line() {
        let lines = 257;
        let mut buf = vec![0u64; lines * LINE / 8];
        // SAFETY: a u64 vector is aligned; viewing it as bytes is sound.
        let bytes = unsafe { std::slice::from_raw_parts_mut(buf.as_mut_ptr().cast::<u8>(), lines * LINE) };
        let ord = order(lines, 64, Pattern::Random, &mut StdRng::seed_from_u64(3));
        let start = link(bytes, &ord);
        let mut seen = std::collections::BTreeSet::new();
        let mut p = start;
        for _ in 0..lines {
            assert!(seen.insert(p), "revisited {p:#x} early");
            // SAFETY: `p` is a line start inside `buf`, written by `link`.
            p = unsafe { *(p as *const usize) };
        }
        assert_eq!(p, start, "back to the start after every line");
        // SAFETY: the chain was built by `link` over `buf`, alive here.
        let end = unsafe { chase(start, lines as u64 * 3) };
        assert!(seen.contains(&end));
        // SAFETY: as above.
        let (ns, _) = unsafe { time_chase(start, 10_000) };
        assert!(ns > 0.0 && ns < 10_000.0);
        // SAFETY: as above.
        assert!(unsafe { calibrate(start, 1000, Duration::from_millis(1)) } >= 1000);
    }

    #[test]
    fn generator_counts_what_it_reads() {
        let buf = vec![1u64; 64 * 1024];
        let stop = AtomicBool::new(false);
        let bytes = AtomicU64::new(0);
        std::thread::scope(|s| {
            s.spawn(|| generate(&buf, 10, &stop, &bytes));
            // Until it has counted something (on a loaded machine the
            // generator may not get a CPU within a fixed 20 ms), at most 10 s.
            let t0 = std::time::Instant::now();
            while bytes.load(Ordering::Relaxed) == 0 && t0.elapsed() < Duration::from_secs(10) {
                std::thread::sleep(Duration::from_millis(5));
            }
            stop.store(true, Ordering::Relaxed);
        });
        let b = bytes.load(Ordering::Relaxed);
        assert!(b > 0 && b % BLOCK as u64 == 0, "{b}");
        assert!(delay(1000) != delay(999));
    }
}
