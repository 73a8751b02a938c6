//! A site's placement policy per job class: ordered rules matched on what
//! the batch system knows when a job starts, each naming a class and what
//! its jobs get (a decided mode with a standing holdout, or an experiment
//! of their own). The first rule that matches decides; a job no rule
//! matches gets what it got without a policy (the site's default or
//! experiment).
//!
//! ```text
//! # /etc/numakit/policy
//! defaults key=/etc/numakit/experiment.key cluster=farm
//! rule reco  partition=reco,reco-long name=reco_*  mode=auto holdout=5%
//! rule sim   partition=sim                         mode=none holdout=5%
//! rule hs06  name=hs06*   experiment=hs06-q1 arms=auto:1,none:1
//! rule big   cpus=32- mem=64G-                     mode=auto
//! rule rest                                        mode=auto
//! ```
//!
//! The words are the experiment's words of `plugstack.conf` and the
//! wrappers' `NUMAKIT_EXPERIMENT` ([`super::design`]), plus the matchers
//! ([`matcher`]) and `mode=`, `holdout=`, `holdout-arm=`. Parsing is
//! [`parse`]'s (every error one line with the line and column, the word as
//! typed); reading a file, bounded and cached by its identity, is
//! [`load`]'s; which rule a job meets is [`Policy::first_match`], and why
//! each rule matched or not [`Policy::explain`]. Nothing here draws an
//! arm: that is [`super::assign::assign_class`].

pub mod assign;
pub mod matcher;
pub mod parse;

use std::path::{Path, PathBuf};
use std::sync::Mutex;

pub use matcher::{JobFacts, Matcher};

use super::design::Design;
use crate::batch::JobMode;

/// The largest policy file read.
pub const MAX_POLICY_BYTES: u64 = 1 << 20;

/// The most rules a policy may hold.
pub const MAX_RULES: usize = 10_000;

/// A policy: its rules in order, and the defaults they share.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Policy {
    /// The rules, first match wins.
    pub rules: Vec<Rule>,
    /// The `defaults` line's words.
    pub defaults: Defaults,
}

/// What every rule inherits unless it says otherwise.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Defaults {
    /// The secret key of holdouts and experiments (`key=`).
    pub key: Option<PathBuf>,
    /// The cluster's name for the draws (`cluster=`).
    pub cluster: Option<String>,
    /// The holdout of rules with a decided mode (`holdout=`).
    pub holdout: Option<Holdout>,
}

/// One rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// Its class: the records' `class`, what the report groups by.
    pub class: String,
    /// The line it starts on (1-based).
    pub line: usize,
    /// Every one must match (a rule without any matches every job).
    pub matchers: Vec<Matcher>,
    /// What its jobs get.
    pub action: Action,
}

/// What a rule's jobs get.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// A decided mode, with the share of jobs kept in another arm.
    Mode {
        /// The mode.
        mode: JobMode,
        /// The standing holdout (`None`: every job gets `mode`).
        holdout: Option<Holdout>,
        /// The key the holdout is drawn with.
        key: Option<PathBuf>,
        /// The cluster's name for the draw, where the batch system names none.
        cluster: Option<String>,
    },
    /// An experiment of the class's own.
    Experiment(Box<Design>),
}

/// A standing holdout: `share` of a decided rule's jobs, drawn by the
/// keyed hash, get `arm` instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holdout {
    /// The share in parts per million (1 to 500,000).
    pub share_ppm: u32,
    /// The arm they get (`holdout-arm=`; default `none`, or `auto` where
    /// the rule's mode is `none`).
    pub arm: JobMode,
}

impl Holdout {
    /// The share as written back: `5%`, `0.1%`.
    pub fn share_text(&self) -> String {
        let pct = f64::from(self.share_ppm) / 10_000.0;
        format!("{}%", trim_float(pct))
    }
}

fn trim_float(x: f64) -> String {
    let s = format!("{x:.4}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Why one rule did or did not match a job ([`Policy::explain`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Explained {
    /// The rule's class.
    pub class: String,
    /// Its line.
    pub line: usize,
    /// `Ok`: what matched (empty: a rule that matches every job); `Err`:
    /// the first matcher that did not, and why.
    pub verdict: Result<Vec<String>, String>,
}

impl Policy {
    /// The first rule that matches `facts`.
    pub fn first_match(&self, facts: &JobFacts) -> Option<&Rule> {
        self.rules.iter().find(|r| r.matchers.iter().all(|m| m.test(facts).is_ok()))
    }

    /// Every rule up to and including the first that matches, each with
    /// why it matched or not (`policy explain`).
    pub fn explain(&self, facts: &JobFacts) -> Vec<Explained> {
        let mut out = Vec::new();
        for r in &self.rules {
            let mut matched = Vec::new();
            let mut verdict = None;
            for m in &r.matchers {
                match m.test(facts) {
                    Ok(why) => matched.push(why),
                    Err(why) => {
                        verdict = Some(Err(why));
                        break;
                    }
                }
            }
            let verdict = verdict.unwrap_or(Ok(matched));
            let hit = verdict.is_ok();
            out.push(Explained { class: r.class.clone(), line: r.line, verdict });
            if hit {
                break;
            }
        }
        out
    }

    /// What a site should know of an otherwise valid policy (`policy
    /// check`): rules no job can reach (after a rule that matches every
    /// job), decided rules without a holdout (nothing would show that the
    /// answer changed), and holdouts without a key to draw them.
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(i) = self.rules.iter().position(|r| r.matchers.is_empty()) {
            for r in &self.rules[i + 1..] {
                out.push(format!(
                    "line {}: rule {}: never reached (rule {} on line {} matches every job)",
                    r.line, r.class, self.rules[i].class, self.rules[i].line
                ));
            }
        }
        for r in &self.rules {
            if let Action::Mode { mode, holdout, key, .. } = &r.action {
                match (holdout, key) {
                    (None, _) => out.push(format!(
                        "line {}: rule {}: mode={mode} without a holdout: nothing will show when its answer changes (holdout=5%)",
                        r.line, r.class
                    )),
                    (Some(_), None) => out.push(format!(
                        "line {}: rule {}: holdout without a key: no job is held out (key=FILE here or on the defaults line)",
                        r.line, r.class
                    )),
                    _ => {}
                }
            }
        }
        out
    }
}

/// The policy at `path`, read through the one reader of named files
/// (a regular file of at most [`MAX_POLICY_BYTES`]) and parsed; an error
/// is one line naming the file (and line and column). Parsed once per
/// file identity (device, inode, size, modification time) in this process:
/// a long-lived reader sees a new file without a restart.
pub fn load(path: &Path) -> Result<Policy, String> {
    read_cached(path, MAX_POLICY_BYTES, "policy", parse::parse)
}

/// The file at `path` (followed if a link: the site names it), at most
/// `max` bytes of UTF-8, parsed by `parse` once per file identity (device,
/// inode, size, modification time) in this process. Errors are one line:
/// `WHAT PATH: why` or `WHAT PATH:LINE:COL: ...`.
pub fn read_cached<T: Clone + Send + 'static>(
    path: &Path,
    max: u64,
    what: &str,
    parse: fn(&str) -> Result<T, String>,
) -> Result<T, String> {
    use std::any::Any;
    use std::os::unix::fs::MetadataExt;
    type Id = (u64, u64, u64, i64, i64);
    type Entry = (PathBuf, Id, Box<dyn Any + Send>);
    static CACHE: Mutex<Vec<Entry>> = Mutex::new(Vec::new());
    let (bytes, meta) = crate::files::read_with_metadata(path, max, true).map_err(|e| format!("{what} {e}"))?;
    let id = (meta.dev(), meta.ino(), meta.size(), meta.mtime(), meta.mtime_nsec());
    let mut cache = CACHE.lock().unwrap_or_else(|p| p.into_inner());
    let hit = cache.iter().find(|(p, i, _)| p == path && *i == id).and_then(|(_, _, v)| v.downcast_ref::<T>());
    if let Some(v) = hit {
        return Ok(v.clone());
    }
    let shown = crate::text::path(path);
    let text = String::from_utf8(bytes).map_err(|_| format!("{what} {shown}: not UTF-8 text"))?;
    let value = parse(&text).map_err(|e| format!("{what} {shown}:{e}"))?;
    cache.retain(|(p, _, v)| !(p == path && v.is::<T>()));
    if cache.len() >= 8 {
        cache.remove(0);
    }
    cache.push((path.to_path_buf(), id, Box::new(value.clone())));
    Ok(value)
}

#[cfg(test)]
mod tests;
