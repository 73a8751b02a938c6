//! The guards a report calls for (`numakit report --guard-file`): an arm
//! that hurts a class, on always-valid evidence only, so that reading the
//! report every day never stops an arm that is not worse.
//!
//! - **slower**: the always-valid interval of the arm's wall-time ratio
//!   against the control lies entirely above `1 + margin` (default 3%):
//!   the arm is more than the margin slower at every look's confidence;
//! - **more failures**: the always-valid interval of the difference of
//!   failure shares (arm less control) lies entirely above 0. It is the
//!   same confidence sequence as the times' (`stats_math::Sequence`,
//!   asymptotic: the share's normal approximation with its standard error
//!   √(p_a(1-p_a)/n_a + p_c(1-p_c)/n_c)), with α shared over the
//!   comparisons (Bonferroni), planned for the report's planned jobs; as
//!   an asymptotic sequence it is used only with at least
//!   [`MIN_FAILED`] failed jobs in the arm, and only for per-job designs
//!   (jobs of one host are not independent).
//!
//! Groups are classes (`--by class`); a group without a class or with a
//! name a guard cannot carry is passed over. Pure: the CLI writes the
//! file (`numakit::experiment::guard::update`).

use numakit::experiment::guard::is_name;
use numakit::stats_math::SIGNIFICANCE;

use crate::analysis::compare_text::{count, pct_text};
use crate::analysis::look::{bounds, Basis};
use crate::result::{ArmSummary, Report};

/// The fewest failed jobs in an arm before its failure share is judged.
pub const MIN_FAILED: u64 = 10;

/// The default margin: an arm is guarded when it is more than 3% slower.
pub const DEFAULT_MARGIN: f64 = 0.03;

/// An arm the evidence says to stop for a class.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    /// The class (the group).
    pub class: String,
    /// The arm to stop.
    pub arm: String,
    /// Its control.
    pub control: String,
    /// The experiment the evidence is from.
    pub experiment: Option<String>,
    /// The hardware key.
    pub hardware_key: String,
    /// The evidence in words (the guard's comment).
    pub why: String,
}

fn failed_share(a: &ArmSummary) -> (f64, u64) {
    let n = a.jobs + a.failed;
    (if n == 0 { 0.0 } else { a.failed as f64 / n as f64 }, n)
}

/// The findings of `r`: each (class, arm) once, the first evidence met.
pub fn findings(r: &Report, margin: f64) -> Vec<Finding> {
    let planned = r.settings.planned_jobs.unwrap_or(crate::analysis::look::DEFAULT_PLANNED_JOBS);
    let k_fail: usize =
        r.experiments.iter().filter(|e| e.unit == "job").flat_map(|e| &e.groups).map(|g| g.comparisons.len()).sum();
    let mut out: Vec<Finding> = Vec::new();
    for e in &r.experiments {
        for g in &e.groups {
            let Some(class) = g.group.as_deref().filter(|c| is_name(c)) else { continue };
            for c in &g.comparisons {
                if !is_name(&c.arm) || out.iter().any(|f| f.class == class && f.arm == c.arm) {
                    continue;
                }
                let mut why = None;
                if let Some(w) = c.wall.as_ref().filter(|w| w.ci_low > 1.0 + margin) {
                    why = Some(format!(
                        "{}% slower than {} (always-valid CI {}% to {}%, beyond the {}% margin), {} / {} jobs",
                        pct1(w.ratio),
                        c.control,
                        pct1(w.ci_low),
                        pct1(w.ci_high),
                        pct_text(margin * 100.0),
                        count(w.n[0]),
                        count(w.n[1])
                    ));
                }
                let arm = g.arms.iter().find(|a| a.arm == c.arm);
                let ctrl = g.arms.iter().find(|a| a.arm == c.control);
                if let (None, "job", Some(a), Some(k)) = (&why, e.unit.as_str(), arm, ctrl) {
                    let ((pa, na), (pc, nc)) = (failed_share(a), failed_share(k));
                    if a.failed >= MIN_FAILED && na > 0 && nc > 0 {
                        let se = (pa * (1.0 - pa) / na as f64 + pc * (1.0 - pc) / nc as f64).sqrt();
                        let b = Basis { estimate: pa - pc, se, n: na + nc };
                        if let Some((lo, hi)) = bounds(&b, planned, k_fail, SIGNIFICANCE) {
                            if lo > 0.0 {
                                why = Some(format!(
                                    "more failures than {}: {:.1}% of {} jobs against {:.1}% of {} (always-valid CI of the \
                                     difference +{:.1} to +{:.1} points)",
                                    c.control,
                                    pa * 100.0,
                                    count(na),
                                    pc * 100.0,
                                    count(nc),
                                    lo * 100.0,
                                    hi * 100.0
                                ));
                            }
                        }
                    }
                }
                if let Some(why) = why {
                    out.push(Finding {
                        class: class.to_string(),
                        arm: c.arm.clone(),
                        control: c.control.clone(),
                        experiment: e.name.clone(),
                        hardware_key: g.hardware_key.clone(),
                        why: format!(
                            "{why}; on {}, experiment {}",
                            g.hardware_key,
                            e.name.as_deref().unwrap_or("(none)")
                        ),
                    });
                }
            }
        }
    }
    out
}

/// A ratio as a percentage change: 1.041 → "+4.1".
fn pct1(ratio: f64) -> String {
    format!("{:+.1}", (ratio - 1.0) * 100.0)
}
