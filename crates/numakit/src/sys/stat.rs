//! CPU time counters of `/proc/stat` (`cpuN user nice system idle iowait
//! irq softirq steal ...`, in clock ticks) and the idle share between two
//! samples.

use std::collections::BTreeMap;

use super::{SysError, SysRoot};
use crate::sets::{CpuSet, MAX_CPUS};

/// Ticks of one CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CpuTicks {
    /// idle + iowait.
    pub idle: u64,
    /// All ticks (guest time is already part of user time).
    pub total: u64,
}

/// Per-CPU ticks keyed by CPU id.
pub type CpuSample = BTreeMap<u32, CpuTicks>;

/// Parses `/proc/stat` text. A `cpuN` line must hold at least four
/// counts (user nice system idle), all numbers; text without any `cpuN`
/// line is not `/proc/stat`, and a CPU id at or above [`MAX_CPUS`] is no
/// kernel's. Errors quote the line.
pub fn parse_stat(text: &str) -> Result<CpuSample, String> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("cpu") else { continue };
        if !rest.starts_with(|c: char| c.is_ascii_digit()) {
            // The `cpu` total line.
            continue;
        }
        let mut f = rest.split_whitespace();
        let Some(id) = f.next() else { continue };
        let bad = || format!("{} is not a CPU's time counters", crate::text::quote(line));
        let id: u32 = id.parse().map_err(|_| bad())?;
        if id >= MAX_CPUS {
            // A set holding it would take id / 8 bytes (512 MiB for cpu4294967295).
            return Err(format!(
                "{} names CPU {id}, beyond any kernel's limit (CPU ids are below {MAX_CPUS})",
                crate::text::quote(line)
            ));
        }
        let v: Vec<u64> = f.map(str::parse).collect::<Result<_, _>>().map_err(|_| bad())?;
        if v.len() < 4 {
            return Err(bad());
        }
        // user nice system idle iowait irq softirq steal (guest, guest_nice
        // are included in user/nice).
        let total = v.iter().take(8).try_fold(0u64, |a, x| a.checked_add(*x)).ok_or_else(bad)?;
        let idle = v[3].checked_add(v.get(4).copied().unwrap_or(0)).ok_or_else(bad)?;
        out.insert(id, CpuTicks { idle, total });
    }
    if out.is_empty() {
        return Err("no cpuN lines".into());
    }
    Ok(out)
}

/// Reads `/proc/stat`.
pub fn read_cpu_sample(sys: &SysRoot) -> Result<CpuSample, SysError> {
    let text = sys.read("proc/stat")?.ok_or_else(|| sys.invalid("proc/stat", "missing"))?;
    parse_stat(&text).map_err(|problem| sys.invalid("proc/stat", problem))
}

/// Idle share (0..=1) of each CPU between two samples; CPUs whose counters
/// did not move (no ticks elapsed) count as idle.
pub fn idle_share(before: &CpuSample, after: &CpuSample) -> BTreeMap<u32, f64> {
    after
        .iter()
        .map(|(id, a)| {
            let b = before.get(id).copied().unwrap_or_default();
            let dt = a.total.saturating_sub(b.total);
            let di = a.idle.saturating_sub(b.idle);
            (*id, if dt == 0 { 1.0 } else { di as f64 / dt as f64 })
        })
        .collect()
}

/// CPUs idle for at least `threshold` of the interval.
pub fn idle_cpus(before: &CpuSample, after: &CpuSample, threshold: f64) -> CpuSet {
    idle_share(before, after).into_iter().filter(|(_, s)| *s >= threshold).map(|(id, _)| id).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_between_samples() {
        let a = parse_stat("cpu  1 2 3 4\ncpu0 100 0 0 900 0 0 0 0 0 0\ncpu1 500 0 0 500 0 0 0 0\nintr 5\n").unwrap();
        let b = parse_stat("cpu0 110 0 0 990 0 0 0 0 0 0\ncpu1 590 0 0 510 0 0 0 0\n").unwrap();
        for bad in ["cpu0 1 2 x 4", "cpu0 1 2 3", "cpu0 1 2 3 -4", "garbage\nmore garbage", ""] {
            assert!(parse_stat(bad).is_err(), "{bad:?}");
        }
        let s = idle_share(&a, &b);
        for id in [MAX_CPUS, u32::MAX] {
            let e = parse_stat(&format!("cpu0 1 2 3 4\ncpu{id} 1 2 3 4\n")).unwrap_err();
            assert!(e.contains(&format!("\"cpu{id} 1 2 3 4\" names CPU {id}, beyond any kernel's limit")), "{e}");
        }
        assert_eq!(parse_stat(&format!("cpu{} 1 2 3 4", MAX_CPUS - 1)).map(|s| s.len()), Ok(1));
        assert!((s[&0] - 0.9).abs() < 1e-9 && (s[&1] - 0.1).abs() < 1e-9);
        assert_eq!(idle_cpus(&a, &b, 0.5).to_list(), "0");
    }
}
