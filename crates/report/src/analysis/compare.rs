//! One arm against the control in one group: on wall and CPU time as the
//! ratio of geometric means with its 95% interval (Welch's t on log times
//! of jobs; for per-host designs on hosts: Welch's t on per-host means, or
//! for switchback Student's t on each host's arm-minus-control
//! difference), the ratio of spreads, the units still needed, and the
//! verdict. Why logs: run times are skewed and multiplicative (a job
//! twice as long gains twice as many seconds), so a ratio is the effect
//! that means the same for short and long jobs, and on logs jobs of very
//! different size do not swamp the rest.

use numakit::stats_math::{
    one_sample_from_moments, paired_units_needed, sd_ratio, welch_from_moments, welch_jobs_needed, Moments,
    UnitsNeeded, Welch, SIGNIFICANCE,
};

use super::look::Basis;
use super::Options;
use crate::jobs::FastMap;
use crate::result::{Comparison, Effect, Needed, Variation};
use crate::tally::{Mean, Tally};

/// A cluster of a per-host design: (host, period, [wall, cpu]).
pub type Cluster<'t> = (u32, u64, &'t [Mean; 2]);

/// The clusters of per-host designs, by cell.
pub struct ClusterIndex<'t> {
    by_cell: FastMap<u32, Vec<Cluster<'t>>>,
}

impl<'t> ClusterIndex<'t> {
    /// Indexes `t`'s clusters.
    pub fn new(t: &'t Tally) -> ClusterIndex<'t> {
        let mut by_cell: FastMap<u32, Vec<Cluster<'t>>> = FastMap::default();
        for ((cell, host, period), m) in &t.clusters {
            by_cell.entry(*cell).or_default().push((*host, *period, m));
        }
        for v in by_cell.values_mut() {
            v.sort_by_key(|x| (x.0, x.1));
        }
        ClusterIndex { by_cell }
    }

    /// Clusters of cell `c`.
    pub fn count(&self, c: u32) -> u64 {
        self.by_cell.get(&c).map_or(0, |v| v.len() as u64)
    }

    /// Cell `c`'s clusters.
    pub fn of(&self, c: u32) -> &[Cluster<'t>] {
        self.by_cell.get(&c).map_or(&[], Vec::as_slice)
    }
}

/// `e^x` within the float range: an interval wider than e^±700 (a few
/// jobs of wildly different times) shows its end as 1e304 or 1e-304,
/// never infinite.
pub fn exp_bounded(x: f64) -> f64 {
    x.clamp(-700.0, 700.0).exp()
}

fn effect(w: &Welch, n: [u64; 2], basis: Option<Basis>) -> Effect {
    Effect {
        ratio: exp_bounded(w.difference),
        ci_low: exp_bounded(w.diff_ci_low),
        ci_high: exp_bounded(w.diff_ci_high),
        p_value: w.p_value,
        p_adjusted: w.p_value,
        df: w.df,
        n,
        basis,
    }
}

/// The arm's share of (arm + control) jobs: configured where known, else
/// as observed.
fn share(arm: &str, control: &str, shares: &[(String, f64)], n_arm: u64, n_ctrl: u64) -> Option<f64> {
    let w = |a: &str| shares.iter().find(|(x, _)| x == a).map(|x| x.1);
    match (w(arm), w(control)) {
        (Some(a), Some(c)) => Some(a / (a + c)),
        _ if n_arm + n_ctrl > 0 => Some(n_arm as f64 / (n_arm + n_ctrl) as f64),
        _ => None,
    }
    .filter(|s| *s > 0.0 && *s < 1.0)
}

/// The standard deviations to plan with: each arm's own, or the other's
/// where one has fewer than two values.
fn plan_sds(ctrl: &Moments, arm: &Moments) -> Option<(f64, f64)> {
    match (ctrl.stddev(), arm.stddev()) {
        (Some(c), Some(a)) => Some((c, a)),
        (Some(c), None) => Some((c, c)),
        (None, Some(a)) => Some((a, a)),
        (None, None) => None,
    }
}

/// Units needed in all, with `have` of them there.
fn needed(n: UnitsNeeded, have: u64, unit: &str) -> Needed {
    let (total, more_than) = match n {
        UnitsNeeded::Exactly(n) => (n, false),
        UnitsNeeded::MoreThan(n) => (n, true),
    };
    Needed { total, more: total.saturating_sub(have), more_than, unit: unit.into() }
}

/// `arm` (name, cell) against `control` (name, cell).
pub fn compare(
    t: &Tally,
    clusters: &ClusterIndex,
    unit: u8,
    arm: (&str, u32),
    control: (&str, u32),
    o: &Options,
    shares: &[(String, f64)],
) -> Comparison {
    let (ca, cc) = (&t.cells[arm.1 as usize], &t.cells[control.1 as usize]);
    let delta = (1.0 + o.detect).ln();
    let mut variation = sd_ratio(&cc.wall, &ca.wall).map(|r| Variation {
        sd_control: cc.wall.stddev().unwrap_or(f64::NAN),
        sd_arm: ca.wall.stddev().unwrap_or(f64::NAN),
        ratio: r.ratio,
        ci_low: r.ci_low,
        ci_high: r.ci_high,
        p_value: r.p_value,
        p_adjusted: r.p_value,
        note: None,
    });
    let (analysed_by, method, wall, cpu, needed) = match unit {
        2 => {
            let means = |c: u32, k: usize| {
                let mut m = Moments::default();
                clusters.of(c).iter().filter(|x| x.2[k].n > 0).for_each(|x| m.push(x.2[k].mean));
                m
            };
            let (wa, wc) = (means(arm.1, 0), means(control.1, 0));
            let (pa, pc) = (means(arm.1, 1), means(control.1, 1));
            let wall = welch_from_moments(&wc, &wa).map(|w| effect(&w, [wa.n, wc.n], Basis::two(&wc, &wa)));
            let cpu = welch_from_moments(&pc, &pa).map(|w| effect(&w, [pa.n, pc.n], Basis::two(&pc, &pa)));
            let needed = plan_sds(&wc, &wa).and_then(|(sc, sa)| {
                let s = share(arm.0, control.0, shares, wa.n, wc.n)?;
                Some(needed(welch_jobs_needed(sc, sa, s, delta, o.power)?, wa.n + wc.n, "hosts"))
            });
            let method = "Welch's t on per-host mean ln(time), hosts as units".to_string();
            ("host".to_string(), method, wall, cpu, needed)
        }
        3 => {
            let diffs = |k: usize| {
                // each host: mean of its arm periods' means less mean of its control periods' means
                let per_host = |c: u32| {
                    let mut m: std::collections::BTreeMap<u32, Moments> = std::collections::BTreeMap::new();
                    clusters
                        .of(c)
                        .iter()
                        .filter(|x| x.2[k].n > 0)
                        .for_each(|x| m.entry(x.0).or_default().push(x.2[k].mean));
                    m
                };
                let (a, c) = (per_host(arm.1), per_host(control.1));
                let mut d = Moments::default();
                for (h, ma) in &a {
                    if let Some(mc) = c.get(h) {
                        d.push(ma.mean - mc.mean);
                    }
                }
                d
            };
            let (dw, dc) = (diffs(0), diffs(1));
            let wall = one_sample_from_moments(&dw).map(|w| effect(&w, [dw.n, dw.n], Basis::one(&dw)));
            let cpu = one_sample_from_moments(&dc).map(|w| effect(&w, [dc.n, dc.n], Basis::one(&dc)));
            let needed = dw
                .stddev()
                .and_then(|sd| Some(needed(paired_units_needed(sd, delta, o.power)?, dw.n, "hosts with both arms")));
            let method = "Student's t over hosts of each host's mean ln(time) in arm periods less in control periods"
                .to_string();
            ("host (paired periods)".to_string(), method, wall, cpu, needed)
        }
        _ => {
            let wall = welch_from_moments(&cc.wall, &ca.wall)
                .map(|w| effect(&w, [ca.wall.n, cc.wall.n], Basis::two(&cc.wall, &ca.wall)));
            let cpu = welch_from_moments(&cc.cpu, &ca.cpu)
                .map(|w| effect(&w, [ca.cpu.n, cc.cpu.n], Basis::two(&cc.cpu, &ca.cpu)));
            let needed = plan_sds(&cc.wall, &ca.wall).and_then(|(sc, sa)| {
                let s = share(arm.0, control.0, shares, ca.wall.n, cc.wall.n)?;
                Some(needed(welch_jobs_needed(sc, sa, s, delta, o.power)?, ca.wall.n + cc.wall.n, "jobs"))
            });
            let method = "Welch's t on ln(time), jobs as units".to_string();
            ("job".to_string(), method, wall, cpu, needed)
        }
    };
    if unit >= 2 {
        if let Some(v) = variation.as_mut() {
            v.note = Some("between jobs, not host-robust: indicative only".into());
        }
    }
    Comparison {
        arm: arm.0.to_string(),
        control: control.0.to_string(),
        analysed_by,
        method,
        wall,
        cpu,
        variation,
        verdict: String::new(),
        verdict_text: String::new(),
        needed,
    }
}

/// How a comparison's verdict is read: by its always-valid interval, or
/// by its adjusted p-value (one look).
#[derive(Debug, Clone, Copy)]
pub struct Reading<'a> {
    /// The interval's name in words ("95% CI", "always-valid 95% CI").
    pub ci: &'a str,
    /// The adjustment's name ("Holm", "Bonferroni").
    pub adjusted: &'a str,
    /// Flag by the interval (it excludes 1) rather than the adjusted p.
    pub by_interval: bool,
}

/// Sets the comparison's verdict from its adjusted wall-time p-value (or
/// its always-valid interval), its interval and the settings' effect.
pub fn verdict(c: &mut Comparison, how: Reading) {
    let ci = how.ci;
    let flagged = |e: &Effect| {
        if how.by_interval {
            e.ci_high < 1.0 || e.ci_low > 1.0
        } else {
            e.p_adjusted < SIGNIFICANCE
        }
    };
    let (v, text) = match &c.wall {
        None => ("too-few", format!("too few {} to compare (at least 2 in each arm)", unit_word(&c.analysed_by))),
        Some(e) if flagged(e) => {
            let word = if e.ratio < 1.0 { "faster" } else { "slower" };
            (
                word,
                format!(
                    "{} is {word} than {}: wall time ×{:.3} ({ci} {:.3} to {:.3}), {}-adjusted p {}",
                    c.arm,
                    c.control,
                    e.ratio,
                    e.ci_low,
                    e.ci_high,
                    how.adjusted,
                    p_text(e.p_adjusted)
                ),
            )
        }
        Some(_) => ("undecided", String::new()),
    };
    c.verdict = v.to_string();
    c.verdict_text = text;
}

/// Refines an "undecided" verdict: "no-effect" when the interval lies
/// within ±`detect`, else how many more units would decide.
pub fn settle(c: &mut Comparison, detect: f64, power: f64, ci: &str) {
    if c.verdict != "undecided" {
        return;
    }
    let Some(e) = &c.wall else { return };
    let (lo, hi) = (1.0 / (1.0 + detect), 1.0 + detect);
    let pct = pct_text(detect * 100.0);
    if e.ci_low > lo && e.ci_high < hi {
        c.verdict = "no-effect".into();
        c.verdict_text = format!(
            "no effect as large as ±{pct}%: wall time ×{:.3} ({ci} {:.3} to {:.3}) lies within {lo:.3} to {hi:.3}",
            e.ratio, e.ci_low, e.ci_high
        );
        return;
    }
    c.verdict_text = match &c.needed {
        Some(n) if n.more_than => format!(
            "cannot decide yet: wall time ×{:.3} ({ci} {:.3} to {:.3}); more than {} {} in all would be needed to detect ±{pct}% with {:.0}% power",
            e.ratio,
            e.ci_low,
            e.ci_high,
            count(n.total),
            n.unit,
            power * 100.0
        ),
        Some(n) if n.more > 0 => format!(
            "cannot decide yet: wall time ×{:.3} ({ci} {:.3} to {:.3}); about {} more {} to detect ±{pct}% with {:.0}% power",
            e.ratio,
            e.ci_low,
            e.ci_high,
            count(n.more),
            n.unit,
            power * 100.0
        ),
        _ => format!(
            "cannot decide: wall time ×{:.3} ({ci} {:.3} to {:.3}) takes in both no effect and one of ±{pct}% or more",
            e.ratio, e.ci_low, e.ci_high
        ),
    };
}

fn unit_word(analysed_by: &str) -> &'static str {
    if analysed_by.starts_with("host") {
        "hosts"
    } else {
        "jobs"
    }
}

/// A percentage without trailing zeros: 2, 1.5, 0.25.
pub fn pct_text(x: f64) -> String {
    let s = format!("{x:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

/// A count with thousands separators: 12,616.
pub fn count(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// A p-value as the report prints it (below 1e-15, the t and normal
/// tails' precision, as "<1e-15").
pub fn p_text(p: f64) -> String {
    if p < 1e-15 {
        "<1e-15".to_string()
    } else if p >= 0.001 {
        format!("{p:.3}")
    } else {
        format!("{p:.1e}")
    }
}
