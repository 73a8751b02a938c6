//! AutoNUMA and migration counters of `/proc/vmstat`: NUMA hinting faults
//! (and how many were local), PTE updates, pages migrated, and the memory
//! tiering counters (`pgpromote_*`, `pgdemote_*`) where the kernel has
//! them. Counters a kernel does not have are absent, never 0.

use std::time::Duration;

use serde::Serialize;

use super::rate::{named_rates, ratio, Rate};
use crate::sys::{SysError, SysRoot};

/// The AutoNUMA counters, in this order when present.
pub const AUTONUMA: [&str; 7] = [
    "numa_pte_updates",
    "numa_huge_pte_updates",
    "numa_hint_faults",
    "numa_hint_faults_local",
    "numa_pages_migrated",
    "pgmigrate_success",
    "pgmigrate_fail",
];

/// Whether `name` is one of the counters kept (tiering ones by prefix).
pub fn is_kept(name: &str) -> bool {
    AUTONUMA.contains(&name) || name.starts_with("pgpromote_") || name.starts_with("pgdemote_")
}

/// The kept counters of one `/proc/vmstat` sample.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct VmNuma {
    /// `(name, value)`: the [`AUTONUMA`] ones first in that order, then the
    /// tiering ones in the file's order.
    pub lines: Vec<(String, u64)>,
}

impl VmNuma {
    /// The value of `name`.
    pub fn get(&self, name: &str) -> Option<u64> {
        self.lines.iter().find(|(k, _)| k == name).map(|(_, v)| *v)
    }

    /// `numa_hint_faults_local / numa_hint_faults` since boot (`None`
    /// without faults or counters).
    pub fn hint_local_ratio(&self) -> Option<f64> {
        ratio(self.get("numa_hint_faults_local")?, self.get("numa_hint_faults")?)
    }
}

/// Parses `/proc/vmstat` text, keeping the NUMA balancing and migration
/// counters.
pub fn parse_vmstat(text: &str) -> VmNuma {
    let all: Vec<(String, u64)> = text
        .lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(' ')?;
            Some((k.to_string(), v.trim().parse().ok()?))
        })
        .filter(|(k, _)| is_kept(k))
        .collect();
    let mut lines: Vec<(String, u64)> =
        AUTONUMA.iter().filter_map(|name| all.iter().find(|(k, _)| k == name).cloned()).collect();
    lines.extend(all.into_iter().filter(|(k, _)| !AUTONUMA.contains(&k.as_str())));
    VmNuma { lines }
}

/// Reads `/proc/vmstat` (empty if the root has none).
pub fn read_vmstat(sys: &SysRoot) -> Result<VmNuma, SysError> {
    Ok(sys.read("proc/vmstat")?.map(|t| parse_vmstat(&t)).unwrap_or_default())
}

/// Rates of the kept counters over an interval, with the share of hinting
/// faults that were local within the interval.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VmRates {
    /// `(name, rate)` in the order of [`VmNuma::lines`].
    pub rates: Vec<(String, Rate)>,
    /// Local share of the hinting faults of the interval (`None` without
    /// faults).
    pub hint_local_ratio: Option<f64>,
}

/// Rates between two samples.
pub fn vm_rates(prev: &VmNuma, cur: &VmNuma, interval: Duration) -> VmRates {
    let rates = named_rates(&prev.lines, &cur.lines, interval);
    let delta = |name: &str| rates.iter().find(|(k, _)| k == name).map(|(_, r)| r.delta);
    let hint_local_ratio = match (delta("numa_hint_faults_local"), delta("numa_hint_faults")) {
        (Some(l), Some(f)) => ratio(l, f),
        _ => None,
    };
    VmRates { rates, hint_local_ratio }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "nr_free_pages 5\nnuma_hit 9\npgpromote_success 4\nnuma_hint_faults_local 30\n\
                        numa_pte_updates 1\nnuma_hint_faults 40\npgdemote_kswapd 2\npgmigrate_success 7\n";

    #[test]
    fn keeps_autonuma_in_order_then_tiering() {
        let v = parse_vmstat(TEXT);
        let names: Vec<&str> = v.lines.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            names,
            [
                "numa_pte_updates",
                "numa_hint_faults",
                "numa_hint_faults_local",
                "pgmigrate_success",
                "pgpromote_success",
                "pgdemote_kswapd"
            ]
        );
        assert_eq!(v.hint_local_ratio(), Some(0.75));
        assert_eq!(v.get("numa_huge_pte_updates"), None);
    }

    #[test]
    fn interval_local_share() {
        let a = parse_vmstat(TEXT);
        let b = parse_vmstat(&TEXT.replace("local 30", "local 39").replace("faults 40", "faults 50"));
        let r = vm_rates(&a, &b, Duration::from_secs(2));
        assert_eq!(r.hint_local_ratio, Some(0.9));
        assert_eq!(r.rates.iter().find(|(k, _)| k == "numa_hint_faults").map(|(_, r)| r.per_sec), Some(5.0));
        let none = vm_rates(&a, &a, Duration::from_secs(1));
        assert_eq!(none.hint_local_ratio, None);
    }
}
