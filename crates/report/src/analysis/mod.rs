//! The statistics of the report: from the tallies to [`Report`]. Per
//! experiment, group and hardware key, each assigned arm against the
//! control on log times (jobs, or hosts for per-host designs), the change
//! in spread, the units still needed, p-values adjusted over the whole
//! report; balance (`balance.rs`) and hosts that stand apart (`hosts.rs`).
//! Every formula is `numakit::stats_math`'s; nothing here reads or prints.

mod balance;
mod compare;
mod hosts;
pub mod look;

pub use look::{Basis, Look};

/// How the comparisons' numbers are written in words.
pub mod compare_text {
    pub use super::compare::{count, p_text, pct_text};
}

use std::collections::BTreeMap;

use numakit::experiment::policy::assign::control_label;
use numakit::stats_math::{Adjustment, CONFIDENCE, SIGNIFICANCE};

use crate::collect::{CellKey, Finished};
use crate::jobs::NONE;
use crate::result::{ArmSummary, Experiment, Group, InputSummary, Report, SacctSummary, Settings, SCHEMA};
use crate::tally::{CellTally, Tally};

/// What the analysis is asked.
#[derive(Debug, Clone)]
pub struct Options {
    /// The `--by` field (dotted when nested).
    pub by: String,
    /// The control arm (`None`: each experiment's own, as
    /// `policy::assign::control_label` chooses it from its arms).
    pub control: Option<String>,
    /// How p-values are adjusted.
    pub adjustment: Adjustment,
    /// The effect "jobs needed" is for, as a fraction (0.02).
    pub detect: f64,
    /// The power "jobs needed" is for.
    pub power: f64,
    /// `--shares`: arms and weights, and the text as typed.
    pub shares: Option<(Vec<(String, f64)>, String)>,
    /// How the report is read: always-valid (default) or once.
    pub look: Look,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            by: "job_name".into(),
            control: None,
            adjustment: Adjustment::Holm,
            detect: 0.02,
            power: 0.8,
            shares: None,
            look: Look::Always { planned: None },
        }
    }
}

/// The smallest weight of an arm (`--shares`, the records' `arms`).
pub const MIN_WEIGHT: f64 = 0.001;
/// The largest weight of an arm: weights are relative, and within
/// [`MIN_WEIGHT`] to this every share computed from them is a number.
pub const MAX_WEIGHT: f64 = 1_000_000.0;

/// Arms and weights from `auto:50,none:50` (a missing weight is 1).
/// `Err` names the part that is not an arm with a weight from
/// [`MIN_WEIGHT`] to [`MAX_WEIGHT`].
pub fn parse_shares(text: &str) -> Result<Vec<(String, f64)>, String> {
    let mut out: Vec<(String, f64)> = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (arm, w) = match part.split_once(':') {
            Some((a, w)) => (a.trim(), w.trim().parse::<f64>().map_err(|_| part.to_string())?),
            None => (part, 1.0),
        };
        if arm.is_empty() || !(MIN_WEIGHT..=MAX_WEIGHT).contains(&w) || out.iter().any(|(a, _)| a == arm) {
            return Err(part.to_string());
        }
        out.push((arm.to_string(), w));
    }
    if out.is_empty() {
        return Err(text.to_string());
    }
    Ok(out)
}

/// The unit's name as records write it.
pub fn unit_name(u: u8) -> &'static str {
    match u {
        1 => "job",
        2 => "host",
        3 => "host-period",
        _ => "none",
    }
}

fn source_name(s: u8) -> &'static str {
    match s {
        0 => "assigned",
        1 => "chosen",
        3 => "guarded",
        _ => "default",
    }
}

fn design(unit: u8) -> &'static str {
    match unit {
        1 => {
            "Per-job arms: each job drew its arm, and jobs are the units. This estimates an arm's effect on a job \
              in a farm where both arms run side by side (an auto job may take the node a none job would have \
              used), not the effect of switching the whole farm to the arm."
        }
        2 => {
            "Per-host arms: each host drew its arm for all its jobs, and hosts are the units (Welch's t on each \
              host's mean log time). This estimates the effect of switching hosts as a whole: what a site-wide \
              switch would do, with as many units as hosts."
        }
        3 => {
            "Switchback: each host changes arm from period to period, and hosts are the units (each host's \
              arm periods against its own control periods, Student's t over hosts). This estimates the effect \
              of a site-wide switch, free of differences between hosts."
        }
        _ => "No experiment ran for these records: their arms were not assigned, so nothing is compared.",
    }
}

/// An arm's summary from its cell.
fn arm_summary(arm: &str, source: u8, c: &CellTally, clusters: Option<u64>) -> ArmSummary {
    let geo = |m: &numakit::stats_math::Moments| (m.n > 0).then(|| m.mean.exp());
    ArmSummary {
        arm: arm.to_string(),
        source: source_name(source).to_string(),
        jobs: c.jobs,
        failed: c.failed,
        clusters,
        wall_geo_mean_s: geo(&c.wall),
        wall_sd_log: c.wall.stddev(),
        wall_quantiles_s: match (c.hist.quantile(0.1), c.hist.quantile(0.5), c.hist.quantile(0.9)) {
            (Some(a), Some(b), Some(d)) => Some([a, b, d]),
            _ => None,
        },
        cpu_geo_mean_s: geo(&c.cpu),
        cpu_sd_log: c.cpu.stddev(),
        cpu_jobs: c.cpu.n,
    }
}

/// The analysis of everything read.
pub fn analyse(t: &Tally, f: &Finished, o: &Options, inputs: u64, sacct: Option<SacctSummary>) -> Report {
    let names = &f.strings;
    let clusters = compare::ClusterIndex::new(t);
    // experiments: (name, unit) → cells
    let mut experiments: BTreeMap<(Option<&str>, u8), Vec<u32>> = BTreeMap::new();
    for (i, k) in f.cells.iter().enumerate() {
        let name = (k.experiment != NONE).then(|| names.name(k.experiment));
        experiments.entry((name, k.unit)).or_default().push(i as u32);
    }
    let mut out = Vec::new();
    for ((name, unit), cells) in &experiments {
        let exp_id = name.and_then(|n| names.get(n)).unwrap_or(NONE);
        let (shares, shares_from, mut notes) = balance::shares(exp_id, *unit, f, t, o, cells);
        let mut groups: BTreeMap<(Option<&str>, &str), Vec<u32>> = BTreeMap::new();
        for &c in cells {
            let k: &CellKey = &f.cells[c as usize];
            let g = (k.group != NONE).then(|| names.name(k.group));
            groups.entry((g, names.name(k.hw))).or_default().push(c);
        }
        let control = o.control.clone().unwrap_or_else(|| {
            let mut labels: Vec<&str> = shares.iter().map(|s| s.0.as_str()).collect();
            if labels.is_empty() {
                labels = cells.iter().map(|&c| names.name(f.cells[c as usize].arm)).collect();
                labels.sort_unstable();
            }
            control_label(&labels).unwrap_or("none").to_string()
        });
        let mut gs = Vec::new();
        for ((g, hw), cs) in groups {
            gs.push(group(t, f, o, &clusters, (*unit, &control), g, hw, &cs, &shares));
        }
        let bal = balance::check(exp_id, *unit, t, f, &clusters, cells, &shares, o.adjustment);
        if *unit == 0 {
            notes.push("No experiment: these records' arms were not assigned.".into());
        }
        out.push(Experiment {
            name: name.map(str::to_string),
            unit: unit_name(*unit).to_string(),
            control,
            design: design(*unit).to_string(),
            shares,
            shares_from,
            notes,
            groups: gs,
            balance: bal,
        });
    }
    let k = adjust(&mut out, o);
    let span = f.span;
    Report {
        schema: SCHEMA.to_string(),
        numakit_version: env!("CARGO_PKG_VERSION").to_string(),
        settings: Settings {
            by: o.by.clone(),
            control: o.control.clone().unwrap_or_else(|| "default".into()),
            adjustment: o.adjustment.name().to_string(),
            alpha: SIGNIFICANCE,
            confidence: CONFIDENCE,
            detect_pct: o.detect * 100.0,
            power: o.power,
            outcome_from: if t.from_sacct { "sacct" } else { "records" }.to_string(),
            shares: o.shares.as_ref().map(|s| s.1.clone()),
            analysis: if o.look == Look::Once { "fixed-horizon" } else { "always-valid" }.to_string(),
            planned_jobs: o.look.planned_jobs(),
            planned_from: match o.look {
                Look::Always { planned: Some(_) } => Some("--planned".into()),
                Look::Always { planned: None } => Some("default".into()),
                Look::Once => None,
            },
            comparisons: k as u64,
            intervals: intervals_text(o, k),
        },
        input: InputSummary {
            inputs,
            gzip_inputs: f.gzip_inputs,
            bytes: f.bytes,
            counts: t.counts,
            bad_examples: f.bad_examples.clone(),
            warnings: f.warnings.clone(),
            first_start_unix: span.0.is_finite().then_some(span.0),
            last_end_unix: span.1.is_finite().then_some(span.1),
            table: f.table,
            limits: crate::result::Limits::now(),
        },
        experiments: out,
        hosts: hosts::check(t, f, o.detect),
        sacct,
    }
}

#[allow(clippy::too_many_arguments)]
fn group(
    t: &Tally,
    f: &Finished,
    o: &Options,
    clusters: &compare::ClusterIndex,
    (unit, control): (u8, &str),
    g: Option<&str>,
    hw: &str,
    cells: &[u32],
    shares: &[(String, f64)],
) -> Group {
    let names = &f.strings;
    let mut arms = Vec::new();
    let mut not_randomized = Vec::new();
    let mut assigned: Vec<(&str, u32)> = Vec::new();
    let mut sorted: Vec<u32> = cells.to_vec();
    sorted.sort_by_key(|&c| (f.cells[c as usize].source, names.name(f.cells[c as usize].arm).to_string()));
    for c in sorted {
        let k = &f.cells[c as usize];
        let arm = names.name(k.arm);
        let n_clusters = (unit >= 2 && k.source == 0).then(|| clusters.count(c));
        let s = arm_summary(arm, k.source, &t.cells[c as usize], n_clusters);
        if k.source == 0 && unit != 0 {
            assigned.push((arm, c));
            arms.push(s);
        } else {
            not_randomized.push(s);
        }
    }
    let mut comparisons = Vec::new();
    let mut note = None;
    if unit != 0 && !assigned.is_empty() {
        match assigned.iter().find(|(a, _)| *a == control) {
            None => note = Some(format!("no assigned jobs in the control arm {control:?}: nothing to compare against")),
            Some(&(_, ctrl)) => {
                for &(arm, c) in assigned.iter().filter(|(a, _)| *a != control) {
                    comparisons.push(compare::compare(t, clusters, unit, (arm, c), (control, ctrl), o, shares));
                }
                if comparisons.is_empty() {
                    note = Some("only the control arm has assigned jobs".into());
                }
            }
        }
    }
    Group { group: g.map(str::to_string), hardware_key: hw.to_string(), arms, not_randomized, comparisons, note }
}

/// "needed" for the always-valid interval: the units in all for it to
/// show ±detect with the power, α shared over the `k` comparisons.
fn always_needed(c: &mut crate::result::Comparison, o: &Options, k: usize) {
    let per_host = c.analysed_by.starts_with("host");
    let (Some(n), Some(b)) = (c.needed.as_mut(), c.wall.as_ref().and_then(|w| w.basis)) else { return };
    let planned = if per_host { None } else { o.look.planned_jobs() };
    if let Some(u) = look::needed(&b, (1.0 + o.detect).ln(), o.power, planned, k) {
        let have = b.n;
        let (total, more_than) = match u {
            numakit::stats_math::UnitsNeeded::Exactly(t) => (t, false),
            numakit::stats_math::UnitsNeeded::MoreThan(t) => (t, true),
        };
        (n.total, n.more, n.more_than) = (total, total.saturating_sub(have), more_than);
    }
}

/// The header's words for the intervals.
fn intervals_text(o: &Options, k: usize) -> String {
    match o.look {
        Look::Always { planned } => format!(
            "always-valid 95% intervals (confidence sequence planned for {} jobs per comparison{}, per-host designs \
             for their hosts; Bonferroni over {} comparison{}): they may be read at any time, as often as wanted",
            compare::count(o.look.planned_jobs().unwrap_or(look::DEFAULT_PLANNED_JOBS)),
            if planned.is_some() { ", --planned" } else { ", the default" },
            k,
            if k == 1 { "" } else { "s" }
        ),
        Look::Once => format!(
            "fixed-horizon 95% intervals (Welch's t, p-values adjusted by {}; --look once): valid for one look \
             at a size fixed in advance, not for reading again as jobs come in",
            o.adjustment.name()
        ),
    }
}

/// Adjusts the p-values of every comparison of the report, one family per
/// measure (wall time, CPU time, spread), and sets the verdicts. Read
/// always-valid, the wall and CPU times take their confidence sequences
/// with α shared over each measure's comparisons (Bonferroni); the spread
/// keeps its one-look interval. Returns the wall-time comparisons.
fn adjust(exps: &mut [Experiment], o: &Options) -> usize {
    let how = o.adjustment;
    let always = o.look != Look::Once;
    for measure in 0..3 {
        let mut ps = Vec::new();
        for e in exps.iter() {
            for g in &e.groups {
                for c in &g.comparisons {
                    let p = match measure {
                        0 => c.wall.as_ref().map(|x| x.p_value),
                        1 => c.cpu.as_ref().map(|x| x.p_value),
                        _ => c.variation.as_ref().map(|x| x.p_value),
                    };
                    if let Some(p) = p {
                        ps.push(p);
                    }
                }
            }
        }
        let k = ps.len();
        let adjusted = how.adjust(&ps);
        let mut it = adjusted.into_iter();
        for e in exps.iter_mut() {
            for g in &mut e.groups {
                for c in &mut g.comparisons {
                    let per_host = c.analysed_by.starts_with("host");
                    if always && measure < 2 {
                        let effect = if measure == 0 { c.wall.as_mut() } else { c.cpu.as_mut() };
                        if let Some(e) = effect {
                            if let Some(planned) = look::planned_for(&o.look, e, per_host) {
                                look::apply(e, planned, k);
                            }
                        }
                        continue;
                    }
                    let slot = match measure {
                        0 => c.wall.as_mut().map(|x| &mut x.p_adjusted),
                        1 => c.cpu.as_mut().map(|x| &mut x.p_adjusted),
                        _ => c.variation.as_mut().map(|x| &mut x.p_adjusted),
                    };
                    if let Some(slot) = slot {
                        if let Some(p) = it.next() {
                            *slot = p;
                        }
                    }
                }
            }
        }
    }
    let reading = if always {
        compare::Reading { ci: "always-valid 95% CI", adjusted: "Bonferroni", by_interval: true }
    } else {
        compare::Reading { ci: "95% CI", adjusted: how.name(), by_interval: false }
    };
    let k = exps.iter().flat_map(|e| &e.groups).flat_map(|g| &g.comparisons).filter(|c| c.wall.is_some()).count();
    for e in exps.iter_mut() {
        for g in &mut e.groups {
            for c in &mut g.comparisons {
                if always {
                    always_needed(c, o, k);
                }
                compare::verdict(c, reading);
                compare::settle(c, o.detect, o.power, reading.ci);
            }
        }
    }
    k
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_parse_or_name_the_bad_part() {
        assert_eq!(parse_shares("auto:50, none:50"), Ok(vec![("auto".into(), 50.0), ("none".into(), 50.0)]));
        assert_eq!(parse_shares("auto,none"), Ok(vec![("auto".into(), 1.0), ("none".into(), 1.0)]));
        assert_eq!(parse_shares("auto:x,none"), Err("auto:x".into()));
        assert_eq!(parse_shares("auto:0,none"), Err("auto:0".into()));
        assert_eq!(parse_shares("auto:1e308,none:1e308"), Err("auto:1e308".into()));
        assert_eq!(parse_shares("auto:NaN,none"), Err("auto:NaN".into()));
        assert_eq!(parse_shares("auto:0.001,none:1000000"), Ok(vec![("auto".into(), 0.001), ("none".into(), 1e6)]));
        assert_eq!(parse_shares("auto,auto"), Err("auto".into()));
        assert_eq!(parse_shares(""), Err("".into()));
    }
}
