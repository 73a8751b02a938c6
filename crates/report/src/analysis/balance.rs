//! Was the assignment as configured? The arms' shares against the
//! configured ones (the records' `arms` field, `--shares`, or equal
//! shares when neither says), by Pearson's chi-square: over the whole
//! experiment, per host and per day for per-job arms (a broken hash, a
//! host whose plugin is not configured, a day the experiment was stopped
//! on some hosts), and over the hosts or host-periods of per-host designs.
//! Per-host and per-day p-values are adjusted together, over all the
//! hosts and days checked (one family: the chance that a correct
//! assignment shows any host or day off stays below 5% with Holm); a host
//! or day whose smallest expected count is below 5 is counted as too few
//! to check.

use std::collections::BTreeMap;

use numakit::stats_math::{chi_square_gof, Adjustment, SIGNIFICANCE};

use super::{parse_shares, Options};
use crate::collect::Finished;
use crate::jobs::NONE;
use crate::result::{Balance, ShareTest};
use crate::tally::Tally;

/// Hosts (days) listed as off at most.
const MAX_LISTED: usize = 100;

/// The shares of experiment `exp` (cells `cells`), where they come from,
/// and notes.
pub fn shares(
    exp: u32,
    unit: u8,
    f: &Finished,
    _t: &Tally,
    o: &Options,
    cells: &[u32],
) -> (Vec<(String, f64)>, String, Vec<String>) {
    let mut notes = Vec::new();
    if unit == 0 {
        return (Vec::new(), "none".into(), notes);
    }
    if let Some((s, _)) = &o.shares {
        return (s.clone(), "--shares".into(), notes);
    }
    let mut specs: Vec<(&str, u64)> = f
        .arms_specs
        .iter()
        .filter(|((e, a), _)| *e == exp && *a != NONE)
        .map(|((_, a), n)| (f.strings.name(*a), *n))
        .collect();
    specs.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    if specs.len() > 1 {
        let list: Vec<String> = specs.iter().map(|(s, n)| format!("{s} ({n} lines)")).collect();
        notes.push(format!(
            "the configured arms changed during the experiment: {}; balance is checked against the most common",
            list.join(", ")
        ));
    }
    if let Some((spec, _)) = specs.first() {
        match parse_shares(spec) {
            Ok(s) => return (s, "records".into(), notes),
            Err(bad) => {
                notes.push(format!("cannot read the configured arms {spec:?} (at {bad:?}): equal shares assumed"))
            }
        }
    }
    let mut arms: Vec<&str> =
        cells.iter().map(|&c| &f.cells[c as usize]).filter(|k| k.source == 0).map(|k| f.strings.name(k.arm)).collect();
    arms.sort_unstable();
    arms.dedup();
    (arms.iter().map(|a| (a.to_string(), 1.0)).collect(), "equal shares assumed".into(), notes)
}

fn test(what: String, counts: &BTreeMap<&str, u64>, shares: &[(String, f64)]) -> Option<(ShareTest, f64)> {
    let obs: Vec<u64> = shares.iter().map(|(a, _)| counts.get(a.as_str()).copied().unwrap_or(0)).collect();
    let w: Vec<f64> = shares.iter().map(|s| s.1).collect();
    let g = chi_square_gof(&obs, &w)?;
    let total: u64 = obs.iter().sum();
    let weight: f64 = w.iter().sum();
    let counts = shares.iter().zip(&obs).map(|((a, s), &o)| (a.clone(), o, total as f64 * s / weight)).collect();
    Some((ShareTest { what, counts, p_value: g.p_value, p_adjusted: g.p_value }, g.min_expected))
}

/// Tests each item (a host or a day): the tests, and how many had too
/// few to check.
fn tests(items: Vec<(String, BTreeMap<&str, u64>)>, shares: &[(String, f64)]) -> (Vec<ShareTest>, u64) {
    let mut checked = Vec::new();
    let mut too_few = 0;
    for (what, counts) in items {
        match test(what, &counts, shares) {
            Some((t, min_e)) if min_e >= 5.0 => checked.push(t),
            _ => too_few += 1,
        }
    }
    (checked, too_few)
}

/// Adjusts hosts' and days' p-values as one family; returns those off.
fn off(hosts: &mut [ShareTest], days: &mut [ShareTest], how: Adjustment) -> (Vec<ShareTest>, Vec<ShareTest>) {
    let ps: Vec<f64> = hosts.iter().chain(days.iter()).map(|t| t.p_value).collect();
    for (t, p) in hosts.iter_mut().chain(days.iter_mut()).zip(how.adjust(&ps)) {
        t.p_adjusted = p;
    }
    let pick = |v: &[ShareTest]| {
        let mut o: Vec<ShareTest> = v.iter().filter(|t| t.p_adjusted < SIGNIFICANCE).cloned().collect();
        o.sort_by(|a, b| a.p_value.total_cmp(&b.p_value));
        o.truncate(MAX_LISTED);
        o
    };
    (pick(hosts), pick(days))
}

/// The balance checks of experiment `exp`.
#[allow(clippy::too_many_arguments)]
pub fn check(
    exp: u32,
    unit: u8,
    t: &Tally,
    f: &Finished,
    clusters: &super::compare::ClusterIndex,
    cells: &[u32],
    shares: &[(String, f64)],
    how: Adjustment,
) -> Balance {
    let mut b = Balance::default();
    if unit == 0 || shares.len() < 2 {
        return b;
    }
    let name = |id: u32| f.strings.name(id);
    let mut overall: BTreeMap<&str, u64> = BTreeMap::new();
    if unit == 1 {
        let mut days: BTreeMap<i64, BTreeMap<&str, u64>> = BTreeMap::new();
        for (&(e, u, day, arm), &n) in &t.by_day {
            if e == exp && u == unit {
                *overall.entry(name(arm)).or_default() += n;
                *days.entry(day).or_default().entry(name(arm)).or_default() += n;
            }
        }
        let mut hosts: BTreeMap<&str, BTreeMap<&str, u64>> = BTreeMap::new();
        for (&(e, host, arm), &n) in &t.by_host {
            if e == exp {
                *hosts.entry(name(host)).or_default().entry(name(arm)).or_default() += n;
            }
        }
        let items = hosts.into_iter().map(|(h, c)| (h.to_string(), c)).collect();
        let (mut host_tests, too_few) = tests(items, shares);
        let day_name = |d: i64| numakit::units::utc_rfc3339((d.max(0) as u64) * 86_400)[..10].to_string();
        let items = days.into_iter().map(|(d, c)| (day_name(d), c)).collect();
        let (mut day_tests, _) = tests(items, shares);
        (b.hosts_checked, b.hosts_too_few, b.days_checked) = (host_tests.len() as u64, too_few, day_tests.len() as u64);
        (b.hosts_off, b.days_off) = off(&mut host_tests, &mut day_tests, how);
    } else {
        // hosts (or host-periods) per arm, each counted once
        let mut seen: BTreeMap<(u32, u64), u32> = BTreeMap::new();
        for &c in cells {
            let k = &f.cells[c as usize];
            if k.source == 0 {
                for (host, period, _) in clusters.of(c) {
                    seen.insert((*host, *period), k.arm);
                }
            }
        }
        for arm in seen.values() {
            *overall.entry(name(*arm)).or_default() += 1;
        }
    }
    b.unknown_arms = overall.keys().filter(|a| !shares.iter().any(|(s, _)| s == *a)).map(|a| a.to_string()).collect();
    let what = if unit == 1 {
        "all jobs"
    } else if unit == 2 {
        "all hosts"
    } else {
        "all host-periods"
    };
    b.overall = test(what.to_string(), &overall, shares).map(|x| x.0);
    b
}
