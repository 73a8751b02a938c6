//! A policy's text into a [`Policy`]: one `defaults` line at most and
//! `rule CLASS WORD...` lines, `#` comments, a `\` at a line's end
//! continuing it. Every error is `LINE:COL: "WORD": why`, the word as
//! typed; nothing is guessed (an unknown or repeated word is an error).

use std::path::PathBuf;

use super::matcher::{CountField, Matcher, TextField};
use super::{Action, Defaults, Holdout, Policy, Rule, MAX_RULES};
use crate::batch::JobMode;
use crate::experiment::design::{Design, WORDS};

/// One word and where it starts (1-based line and column, in characters).
#[derive(Debug, Clone, Copy)]
struct Word<'a> {
    text: &'a str,
    line: usize,
    col: usize,
}

fn err(w: &Word<'_>, why: impl std::fmt::Display) -> String {
    format!("{}:{}: {}: {why}", w.line, w.col, crate::text::quote(w.text))
}

/// The policy in `text`.
pub fn parse(text: &str) -> Result<Policy, String> {
    let mut policy = Policy::default();
    let mut defaults_seen = false;
    for (line, words) in statements(text) {
        let Some(first) = words.first() else { continue };
        match first.text {
            "defaults" if policy.rules.is_empty() && !defaults_seen => {
                policy.defaults = defaults(&words[1..])?;
                defaults_seen = true;
            }
            "defaults" => return Err(err(first, "one defaults line, before every rule")),
            "rule" => {
                if policy.rules.len() >= MAX_RULES {
                    return Err(err(first, format!("more than {MAX_RULES} rules")));
                }
                let class = words.get(1).ok_or_else(|| err(first, "give the rule's class: rule CLASS WORD..."))?;
                policy.rules.push(rule(line, class, &words[2..], &policy.defaults)?);
            }
            _ => return Err(err(first, "a line is `rule CLASS WORD...` or `defaults WORD...`")),
        }
    }
    Ok(policy)
}

/// The statements of `text`: (first line, words), comments (from a word
/// that starts with `#`) dropped, a line whose last word ends in `\`
/// joined with the next.
fn statements(text: &str) -> Vec<(usize, Vec<Word<'_>>)> {
    let mut out: Vec<(usize, Vec<Word<'_>>)> = Vec::new();
    let mut open = false;
    for (i, raw) in text.lines().enumerate() {
        let mut words = words_of(raw, i + 1);
        if let Some(k) = words.iter().position(|w| w.text.starts_with('#')) {
            words.truncate(k);
        }
        let cont = words.last().is_some_and(|w| w.text.ends_with('\\'));
        if cont {
            if let Some(w) = words.last_mut() {
                w.text = &w.text[..w.text.len() - 1];
            }
            words.retain(|w| !w.text.is_empty());
        }
        match (open, out.last_mut()) {
            (true, Some(last)) => last.1.extend(words),
            _ => out.push((i + 1, words)),
        }
        open = cont;
    }
    out
}

/// The words of one line with their columns (characters, 1-based).
fn words_of(raw: &str, line: usize) -> Vec<Word<'_>> {
    let mut out = Vec::new();
    let mut start: Option<(usize, usize)> = None;
    for (col, (b, c)) in raw.char_indices().enumerate() {
        match (c.is_whitespace(), start) {
            (true, Some((s, sc))) => {
                out.push(Word { text: &raw[s..b], line, col: sc });
                start = None;
            }
            (false, None) => start = Some((b, col + 1)),
            _ => {}
        }
    }
    if let Some((s, sc)) = start {
        out.push(Word { text: &raw[s..], line, col: sc });
    }
    out
}

fn key_value<'a>(w: &Word<'a>) -> Result<(&'a str, &'a str), String> {
    w.text.split_once('=').ok_or_else(|| err(w, "a word is NAME=VALUE"))
}

fn no_twice(seen: &mut Vec<String>, w: &Word<'_>, k: &str) -> Result<(), String> {
    if seen.iter().any(|s| s == k) {
        return Err(err(w, format!("{k}= is given twice")));
    }
    seen.push(k.to_string());
    Ok(())
}

fn defaults(words: &[Word<'_>]) -> Result<Defaults, String> {
    let mut d = Defaults::default();
    let mut seen = Vec::new();
    for w in words {
        let (k, v) = key_value(w)?;
        no_twice(&mut seen, w, k)?;
        match k {
            "key" if v.starts_with('/') => d.key = Some(PathBuf::from(v)),
            "key" => return Err(err(w, "give the key file's absolute path")),
            "cluster" => d.cluster = Some(cluster(w, v)?),
            "holdout" => d.holdout = share(w, v)?.map(|share_ppm| Holdout { share_ppm, arm: JobMode::None }),
            _ => return Err(err(w, "the defaults line takes key=, cluster= and holdout=")),
        }
    }
    Ok(d)
}

fn cluster(w: &Word<'_>, v: &str) -> Result<String, String> {
    if v.is_empty() || v.len() > 64 || v.bytes().any(|b| b.is_ascii_control() || b == b' ') {
        return Err(err(w, "a name of 1 to 64 characters, no spaces"));
    }
    Ok(v.to_string())
}

/// A holdout share: `5%`, `0.05`; `0` turns a default holdout off.
fn share(w: &Word<'_>, v: &str) -> Result<Option<u32>, String> {
    let (num, scale) = match v.strip_suffix('%') {
        Some(n) => (n, 10_000.0),
        None => (v, 1_000_000.0),
    };
    let x: f64 = num.parse().map_err(|_| err(w, "a share: 5% or 0.05"))?;
    let ppm = (x * scale).round();
    if !(0.0..=500_000.0).contains(&ppm) || !x.is_finite() {
        return Err(err(w, "a share from 0 to 50%"));
    }
    if ppm == 0.0 && x != 0.0 {
        return Err(err(w, "a share of at least 0.0001%"));
    }
    Ok((ppm > 0.0).then_some(ppm as u32))
}

fn is_name(s: &str) -> bool {
    !s.is_empty() && s.len() <= 64 && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
}

fn rule(line: usize, class: &Word<'_>, words: &[Word<'_>], defaults: &Defaults) -> Result<Rule, String> {
    if !is_name(class.text) {
        return Err(err(class, "a class is 1 to 64 letters, digits, '.', '_' or '-'"));
    }
    let mut seen = Vec::new();
    let mut matchers = Vec::new();
    let mut mode = None;
    let mut holdout: Option<(Option<u32>, &Word<'_>)> = None;
    let mut holdout_arm = None;
    let mut experiment: Vec<&Word<'_>> = Vec::new();
    for w in words {
        let (k, v) = key_value(w)?;
        no_twice(&mut seen, w, k)?;
        let text = |field| patterns(w, v).map(|patterns| Matcher::Text { field, patterns, typed: w.text.to_string() });
        let count = |field| {
            range(w, v, field).map(|(low, high)| Matcher::Count { field, low, high, typed: w.text.to_string() })
        };
        match k {
            "partition" => matchers.push(text(TextField::Partition)?),
            "account" => matchers.push(text(TextField::Account)?),
            "user" => matchers.push(text(TextField::User)?),
            "qos" => matchers.push(text(TextField::Qos)?),
            "name" => matchers.push(text(TextField::Name)?),
            "cpus" => matchers.push(count(CountField::Cpus)?),
            "gpus" => matchers.push(count(CountField::Gpus)?),
            "mem" => matchers.push(count(CountField::Mem)?),
            "gres" => matchers.push(Matcher::Gres { patterns: patterns(w, v)?, typed: w.text.to_string() }),
            "array" => matchers.push(Matcher::Array(match v {
                "yes" | "true" => true,
                "no" | "false" => false,
                _ => return Err(err(w, "array=yes or array=no")),
            })),
            "mode" => mode = Some((JobMode::parse(v).map_err(|e| err(w, e))?, w)),
            "holdout" => holdout = Some((share(w, v)?, w)),
            "holdout-arm" => holdout_arm = Some((JobMode::parse(v).map_err(|e| err(w, e))?, w)),
            _ if WORDS.contains(&k) => experiment.push(w),
            _ => {
                return Err(err(
                    w,
                    "not a rule's word: partition=, account=, user=, qos=, name=, cpus=, mem=, gpus=, gres=, array=, \
                     mode= (holdout=, holdout-arm=) or an experiment's words",
                ))
            }
        }
    }
    let action = match (mode, experiment.first()) {
        (Some(_), Some(w)) => return Err(err(w, "a rule gives mode= or an experiment, not both")),
        (None, None) => return Err(err(class, "a rule needs mode=MODE or an experiment (experiment=NAME arms=...)")),
        (None, Some(first)) => {
            if let Some((_, w)) = holdout.or(holdout_arm.map(|(_, w)| (None, w))) {
                return Err(err(w, "an experiment's jobs are all drawn: holdout= goes with mode="));
            }
            Action::Experiment(Box::new(design(&experiment, first, defaults)?))
        }
        (Some((mode, _)), None) => {
            let share = match holdout {
                Some((s, _)) => s,
                None => defaults.holdout.as_ref().map(|h| h.share_ppm),
            };
            if let (None, Some((_, w))) = (share, &holdout_arm) {
                return Err(err(w, "holdout-arm= goes with holdout=SHARE"));
            }
            let arm = match holdout_arm {
                Some((a, w)) if a == mode => return Err(err(w, "the holdout's arm is another mode than the rule's")),
                Some((a, _)) => a,
                None if mode == JobMode::None => JobMode::Auto,
                None => JobMode::None,
            };
            Action::Mode {
                mode,
                holdout: share.map(|share_ppm| Holdout { share_ppm, arm }),
                key: defaults.key.clone(),
                cluster: defaults.cluster.clone(),
            }
        }
    };
    Ok(Rule { class: class.text.to_string(), line, matchers, action })
}

/// An experiment's words, the defaults' key= and cluster= added where the
/// rule has none; an error names the word it is about.
fn design(words: &[&Word<'_>], first: &Word<'_>, defaults: &Defaults) -> Result<Design, String> {
    let mut list: Vec<String> = words.iter().map(|w| w.text.to_string()).collect();
    let has = |k: &str| words.iter().any(|w| w.text.split_once('=').is_some_and(|(wk, _)| wk == k));
    if let (false, Some(k)) = (has("key"), &defaults.key) {
        list.push(format!("key={}", k.display()));
    }
    if let (false, Some(c)) = (has("cluster"), &defaults.cluster) {
        list.push(format!("cluster={c}"));
    }
    match Design::from_words(&list) {
        Ok(Some(d)) => Ok(d),
        Ok(None) => Err(err(first, "an experiment needs its words")),
        Err(e) => {
            // The word the message names, else the experiment's first.
            let at = words.iter().find(|w| e.contains(&format!("{:?}", w.text))).copied().unwrap_or(first);
            let why = match e.strip_prefix("invalid experiment word ") {
                Some(r) => r.split_once(": ").map_or(r, |(_, w)| w),
                None => e.strip_prefix(&format!("{}: ", at.text)).unwrap_or(&e),
            };
            Err(err(at, why))
        }
    }
}

fn patterns(w: &Word<'_>, v: &str) -> Result<Vec<glob::Pattern>, String> {
    v.split(',')
        .map(|p| {
            if p.is_empty() {
                return Err(err(w, "an empty pattern in the list"));
            }
            glob::Pattern::new(p).map_err(|e| err(w, format!("pattern {}: {}", crate::text::quote(p), e.msg)))
        })
        .collect()
}

/// `N`, `N-`, `-N`, `N-M` (sizes for `mem=`).
fn range(w: &Word<'_>, v: &str, field: CountField) -> Result<(u64, u64), String> {
    let num = |s: &str| -> Result<u64, String> {
        match field {
            CountField::Mem => crate::units::parse_size(s).map_err(|e| err(w, e)),
            _ => s.parse::<u32>().map(u64::from).map_err(|_| err(w, "a count: N, N-, -N or N-M")),
        }
    };
    let (low, high) = match v.split_once('-') {
        None => (num(v)?, num(v)?),
        Some(("", "")) => return Err(err(w, "a range: N, N-, -N or N-M")),
        Some(("", h)) => (0, num(h)?),
        Some((l, "")) => (num(l)?, u64::MAX),
        Some((l, h)) => (num(l)?, num(h)?),
    };
    if low > high {
        return Err(err(w, "the range's low end is above its high end"));
    }
    Ok((low, high))
}
