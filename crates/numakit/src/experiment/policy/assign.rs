//! What a job of a policy's class runs with: pure, as
//! [`crate::experiment::assign`] is, and built on it.
//!
//! - A rule with an experiment: the experiment's draw ([`assign`]).
//! - A rule with a decided mode: that mode (`arm_source: decided`), except
//!   for the share `holdout=` draws into its other arm (`holdout`). The
//!   draw is HMAC-SHA256 keyed with the key file, as an arm's, over
//!   `numakit-holdout/1 NUL CLASS NUL CLUSTER NUL job NUL JOB_ID`; the
//!   records name it experiment `holdout.CLASS` with the shares it draws
//!   (`auto:19,none:1` for 5%), so the report compares the two arms as it
//!   compares any experiment's.
//! - A guard that stops the arm for the class: the control instead
//!   (`none`; `daemon-off` for daemon arms), `arm_source: guarded`.
//! - The job's own choice always wins (`chosen`), as without a policy.

use std::path::Path;

use super::{Action, Rule};
use crate::batch::JobMode;
use crate::experiment::assign::{self, draw, stopped, Subject};
use crate::experiment::design::{ArmKind, Assignment, Design};
use crate::experiment::guard::Guards;
use crate::experiment::record::{ArmSource, Unit};

/// The first field of every holdout draw.
pub const HOLDOUT_DOMAIN: &str = "numakit-holdout/1";

/// What a job start knows besides the policy, and how it reads files.
pub struct Start<'a> {
    /// The job's subject (cluster, job id, host, start time).
    pub subject: &'a Subject<'a>,
    /// The mode the job asked for.
    pub chosen: Option<&'a JobMode>,
    /// The site's default mode.
    pub default: &'a JobMode,
    /// The site's experiment outside the policy's rules.
    pub site: Option<&'a Design>,
    /// The guards in force.
    pub guards: &'a Guards,
    /// Reads a key file (root: a private one only).
    pub read_key: &'a dyn Fn(&Path) -> Result<Vec<u8>, String>,
    /// Whether a `stop=` file exists.
    pub stop_present: &'a dyn Fn(&Path) -> bool,
}

/// The job's assignment and a note for the log (once per host): the rule
/// of the policy the job's facts matched (`rule`), else the site's
/// experiment or default.
pub fn assign_job(rule: Option<&Rule>, s: &Start<'_>) -> (Assignment, Option<String>) {
    let now = s.subject.start_unix;
    let Some(rule) = rule else {
        let stop = s.site.and_then(|d| stopped(d, now, d.stop.as_deref().is_some_and(s.stop_present)));
        let key = match s.site {
            Some(d) if stop.is_none() => (s.read_key)(&d.key),
            _ => Err(String::new()),
        };
        return assign::assign(s.site, key.as_deref().map_err(Clone::clone), stop, s.chosen, s.default, s.subject);
    };
    match &rule.action {
        Action::Experiment(d) => {
            let stop = stopped(d, now, d.stop.as_deref().is_some_and(s.stop_present));
            let key = if stop.is_none() { (s.read_key)(&d.key) } else { Err(String::new()) };
            let (mut a, note) =
                assign::assign(Some(d), key.as_deref().map_err(Clone::clone), stop, s.chosen, s.default, s.subject);
            a.class = Some(rule.class.clone());
            if a.source == ArmSource::Assigned {
                guard(&mut a, &rule.class, s.guards, control(d));
            }
            (a, note.map(|n| format!("class {}: {n}", rule.class)))
        }
        Action::Mode { mode, holdout, key, cluster } => {
            let plain = |source: ArmSource, mode: &JobMode| Assignment::plain(source, mode, Some(&rule.class));
            if let Some(m) = s.chosen {
                return (plain(ArmSource::Chosen, m), None);
            }
            let Some(h) = holdout else {
                let mut a = plain(ArmSource::Decided, mode);
                guard(&mut a, &rule.class, s.guards, (JobMode::None.to_string(), JobMode::None, None));
                return (a, None);
            };
            let cluster = cluster.as_deref().or(s.subject.cluster);
            let key = match (key, cluster) {
                (Some(k), Some(_)) => (s.read_key)(k),
                (None, _) => Err("no key= to draw the holdout with".into()),
                (_, None) => Err("the batch system names no cluster: give cluster=NAME".into()),
            };
            let key = match key {
                Ok(k) => k,
                Err(e) => {
                    let mut a = plain(ArmSource::Decided, mode);
                    guard(&mut a, &rule.class, s.guards, (JobMode::None.to_string(), JobMode::None, None));
                    return (a, Some(format!("class {}: holdout: {e}; no job is held out", rule.class)));
                }
            };
            let c = cluster.unwrap_or_default();
            let u = draw(&key, &[HOLDOUT_DOMAIN, &rule.class, c, "job", s.subject.job]);
            let held = ((u128::from(u) * 1_000_000) >> 64) < u128::from(h.share_ppm);
            let (arm, source) = if held { (&h.arm, ArmSource::Holdout) } else { (mode, ArmSource::Decided) };
            let (a, b) = reduced(1_000_000 - h.share_ppm, h.share_ppm);
            let mut out = Assignment {
                experiment: Some(format!("holdout.{}", rule.class)),
                unit: Some(Unit::Job),
                arms: Some(format!("{mode}:{a},{}:{b}", h.arm)),
                ..plain(source, arm)
            };
            let control = if *mode == JobMode::None || h.arm == JobMode::None { JobMode::None } else { h.arm.clone() };
            guard(&mut out, &rule.class, s.guards, (control.to_string(), control, None));
            (out, None)
        }
    }
}

/// The site's files a job start reads (`policy=`, `guard=`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Files {
    /// The policy file.
    pub policy: Option<std::path::PathBuf>,
    /// The guard file.
    pub guards: Option<std::path::PathBuf>,
}

impl Files {
    /// Takes `policy=FILE` and `guard=FILE` out of a plugin's arguments;
    /// the rest is returned. Paths are absolute; an error names the word.
    pub fn from_args<S: AsRef<str>>(args: &[S]) -> Result<(Files, Vec<String>), String> {
        let mut f = Files::default();
        let mut rest = Vec::new();
        for a in args {
            let a = a.as_ref();
            let slot = match a.split_once('=') {
                Some(("policy", v)) => Some((&mut f.policy, v)),
                Some(("guard", v)) => Some((&mut f.guards, v)),
                _ => None,
            };
            match slot {
                Some((_, v)) if !v.starts_with('/') => {
                    return Err(format!("invalid argument {}: give an absolute path", crate::text::quote(a)))
                }
                Some((s, _)) if s.is_some() => {
                    return Err(format!("invalid argument {}: given twice", crate::text::quote(a)))
                }
                Some((s, v)) => *s = Some(v.into()),
                None => rest.push(a.to_string()),
            }
        }
        Ok((f, rest))
    }
}

/// The job's assignment with the site's files: the policy's rule for
/// `facts` and the guards in force (a file that cannot be read or parsed:
/// no guards, or for the policy the site's default for every job), with
/// the notes for the log (once per host each: they name the file and
/// its error, so a change is said again). `s.guards` is replaced by the
/// guard file's.
pub fn assign_with_files(files: &Files, facts: &super::JobFacts, s: &Start<'_>) -> (Assignment, Vec<String>) {
    let mut notes = Vec::new();
    let guards = match &files.guards {
        Some(p) => crate::experiment::guard::load(p).unwrap_or_else(|e| {
            notes.push(format!("{e}: no guard is in force"));
            Guards::default()
        }),
        None => s.guards.clone(),
    };
    let s = Start { guards: &guards, ..*s };
    let policy = match &files.policy {
        Some(p) => match super::load(p) {
            Ok(policy) => Some(policy),
            Err(e) => {
                notes.push(format!("{e}: jobs get the site's default"));
                let (a, _) = assign::assign(None, Err(String::new()), None, s.chosen, s.default, s.subject);
                return (a, notes);
            }
        },
        None => None,
    };
    let rule = policy.as_ref().and_then(|p| p.first_match(facts));
    let (a, note) = assign_job(rule, &s);
    notes.extend(note);
    (a, notes)
}

/// `a / gcd, b / gcd`.
fn reduced(a: u32, b: u32) -> (u32, u32) {
    let (mut x, mut y) = (a, b);
    while y != 0 {
        (x, y) = (y, x % y);
    }
    let g = x.max(1);
    (a / g, b / g)
}

/// The control among arms named as records name them (`auto`, `none`,
/// `daemon-off`, ...): `none`, else `daemon-off`, else the first; the one
/// rule [`control`] and `numakit report` share. `None` without an arm.
pub fn control_label<'a>(labels: &[&'a str]) -> Option<&'a str> {
    ["none", "daemon-off"].iter().find_map(|c| labels.iter().find(|l| *l == c).copied()).or(labels.first().copied())
}

/// An experiment's control: its `none` arm, else `daemon-off`, else its
/// first arm, as (label, mode, daemon).
pub fn control(d: &Design) -> (String, JobMode, Option<bool>) {
    let labels: Vec<&str> = d.arms.iter().map(|a| a.label.as_str()).collect();
    let want = control_label(&labels).unwrap_or_default();
    let arm = d.arms.iter().find(|a| a.label == want).unwrap_or(&d.arms[0]);
    match &arm.kind {
        ArmKind::Mode(m) => (arm.label.clone(), m.clone(), None),
        ArmKind::Daemon(on) => (arm.label.clone(), JobMode::None, Some(*on)),
    }
}

/// The control for `a` when a guard stops its arm for `class`.
fn guard(a: &mut Assignment, class: &str, guards: &Guards, control: (String, JobMode, Option<bool>)) {
    if a.arm == control.0 || guards.stopping(class, a.experiment.as_deref(), &a.arm).is_none() {
        return;
    }
    a.arm = control.0;
    a.mode = match control.2 {
        Some(_) => a.mode.clone(),
        None => control.1,
    };
    a.daemon = control.2;
    a.source = ArmSource::Guarded;
}
