//! Hosts that stand apart from the hosts of the same hardware key: on
//! their jobs' wall times and on their steps' locality. A host's score is
//! the mean of its jobs' standardized residuals, each job against the mean
//! and spread of its own cell (group, hardware key, arm) over all hosts,
//! so that a host that happened to run more long jobs or more of one arm
//! is not mistaken for a slow one. A host is flagged when its score is an
//! outlier among the hosts of its key (robust z above [`ROBUST_Z`], from
//! the median and MAD of the scores) and is not chance on its own (|mean
//! standardized residual| × √n above [`OWN_Z`]), with at least [`MIN_N`]
//! jobs, and the difference is at least the effect the report is asked to
//! detect (`--detect`; for locality [`LOCALITY_POINTS`] points): a host 1%
//! slower than its peers is real with enough jobs, and not worth a flag
//! when the experiment looks for 2%. The thresholds are the usual ones
//! (Iglewicz and Hoaglin's 3.5; three standard errors), set before any
//! data was scored.

use std::collections::BTreeMap;

use numakit::stats_math::{median, robust_z};

use crate::collect::Finished;
use crate::result::{HostCheck, HostFlag};
use crate::tally::Tally;

/// A host's outlier rule among the hosts of its key.
pub const ROBUST_Z: f64 = 3.5;
/// A host's own evidence.
pub const OWN_Z: f64 = 3.0;
/// Jobs (or lines) a host needs to be scored.
pub const MIN_N: u64 = 5;
/// The smallest locality difference flagged, percentage points.
pub const LOCALITY_POINTS: f64 = 5.0;

/// Per (host, hardware key): n, Σ raw residual, Σ standardized residual.
type Scores = BTreeMap<(u32, u32), (u64, f64, f64)>;

/// Cell means and standard deviations from (cell → n, Σx, Σx²).
fn cell_stats(sums: &BTreeMap<u32, (u64, f64, f64)>) -> BTreeMap<u32, (f64, f64)> {
    sums.iter()
        .filter(|(_, s)| s.0 >= 2)
        .filter_map(|(&c, &(n, s1, s2))| {
            let n = n as f64;
            let mean = s1 / n;
            let var = ((s2 - s1 * mean) / (n - 1.0)).max(0.0);
            (var > 0.0).then(|| (c, (mean, var.sqrt())))
        })
        .collect()
}

fn flag(scores: Scores, f: &Finished, metric: &str, floor: f64, out: &mut HostCheck) {
    let mut by_key: BTreeMap<u32, Vec<(u32, u64, f64, f64)>> = BTreeMap::new();
    for ((host, hw), (n, raw, std)) in scores {
        if n >= MIN_N {
            by_key.entry(hw).or_default().push((host, n, raw / n as f64, std / n as f64));
        }
    }
    for (hw, hosts) in by_key {
        if metric == "wall" {
            out.scored += hosts.len() as u64;
        } else {
            out.scored_locality += hosts.len() as u64;
        }
        let m: Vec<f64> = hosts.iter().map(|h| h.3).collect();
        let Some(z) = robust_z(&m) else { continue };
        let diff = |raw: f64| if metric == "wall" { raw.clamp(-700.0, 700.0).exp_m1() * 100.0 } else { raw * 100.0 };
        let diffs: Vec<f64> = hosts.iter().map(|h| diff(h.2)).collect();
        let med = median(&diffs).unwrap_or(0.0);
        for ((host, n, raw, std), rz) in hosts.iter().zip(z) {
            let own = std * (*n as f64).sqrt();
            if rz.abs() > ROBUST_Z && own.abs() > OWN_Z && diff(*raw).abs() >= floor {
                out.flagged.push(HostFlag {
                    host: f.strings.name(*host).to_string(),
                    hardware_key: f.strings.name(hw).to_string(),
                    metric: metric.to_string(),
                    n: *n,
                    difference: diff(*raw),
                    median_of_key: med,
                    robust_z: rz,
                    z_own: own,
                    hosts_of_key: m.len() as u64,
                });
            }
        }
    }
}

/// The host checks over everything read.
pub fn check(t: &Tally, f: &Finished, detect: f64) -> HostCheck {
    let mut out = HostCheck::default();
    // wall: cell moments are the tally's (all hosts, ln wall)
    let mut sums: BTreeMap<u32, (u64, f64, f64)> = BTreeMap::new();
    for (c, cell) in t.cells.iter().enumerate() {
        let w = &cell.wall;
        if w.n >= 2 {
            let n = w.n as f64;
            sums.insert(c as u32, (w.n, w.mean * n, w.m2 + w.mean * w.mean * n));
        }
    }
    let stats = cell_stats(&sums);
    let mut scores: Scores = BTreeMap::new();
    for (&(host, cell), &(n, s)) in &t.host_cells {
        if let Some(&(mean, sd)) = stats.get(&cell) {
            let e = scores.entry((host, f.cells[cell as usize].hw)).or_default();
            let raw = s - n as f64 * mean;
            *e = (e.0 + n, e.1 + raw, e.2 + raw / sd);
        }
    }
    flag(scores, f, "wall", detect * 100.0, &mut out);
    // locality: per line, cell sums over hosts
    let mut sums: BTreeMap<u32, (u64, f64, f64)> = BTreeMap::new();
    for (&(_, cell), &(n, s1, s2)) in &f.locality {
        let e = sums.entry(cell).or_default();
        *e = (e.0 + n, e.1 + s1, e.2 + s2);
    }
    let stats = cell_stats(&sums);
    let mut scores: Scores = BTreeMap::new();
    for (&(host, cell), &(n, s1, _)) in &f.locality {
        if let Some(&(mean, sd)) = stats.get(&cell) {
            let e = scores.entry((host, f.cells[cell as usize].hw)).or_default();
            let raw = s1 - n as f64 * mean;
            *e = (e.0 + n, e.1 + raw, e.2 + raw / sd);
        }
    }
    flag(scores, f, "locality", LOCALITY_POINTS, &mut out);
    out.flagged.sort_by(|a, b| b.robust_z.abs().total_cmp(&a.robust_z.abs()));
    out
}
