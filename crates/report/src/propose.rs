//! The policy a report proposes (`numakit report --propose-policy OUT
//! [--policy CURRENT]`), for an administrator to review: per class, on
//! the always-valid evidence of the report,
//!
//! - an arm **faster** than the control (faster on some hardware key,
//!   slower on none; the fastest such arm where several are) → a rule
//!   deciding that arm, with the current rule's `holdout=` or 5%, held out
//!   into the control;
//! - every arm **slower** than the control (on some key, faster on none)
//!   → a rule deciding the control, held out into the arm;
//! - otherwise **undecided** → the current rule as it is (its experiment
//!   goes on).
//!
//! With CURRENT, groups are its classes (`--by class`) and a changed rule
//! keeps its matchers, its old text kept as a `# was:` comment; without
//! it, groups are job names and each decided one gets `rule NAME
//! name=NAME`. Each proposed rule carries its evidence as `#` comments:
//! the ratio with its interval and units per hardware key, the records'
//! time window (UTC) and a digest of the inputs. The text is parsed with
//! the policy's own parser before it is returned. Pure: the CLI reads
//! CURRENT and writes OUT.

use numakit::batch::JobMode;
use numakit::experiment::policy::parse::parse;

use crate::analysis::compare_text::count;
use crate::result::Report;

/// The holdout of a proposed rule when the current one gives none.
pub const DEFAULT_HOLDOUT: &str = "5%";

/// A rule's words that say which jobs it matches (kept when it changes).
const MATCHERS: &[&str] = &["partition", "account", "user", "qos", "name", "cpus", "mem", "gpus", "gres", "array"];

/// What the evidence says for one class.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Call {
    /// Decide this arm (faster than `control`).
    Gain { arm: String, control: String },
    /// Decide the control (`arm`, the arms tried, slower).
    Loss { arm: String, control: String },
    /// No decision: keep what runs.
    Undecided,
}

/// One class's call with its evidence lines.
#[derive(Debug, Clone)]
pub struct ClassCall {
    /// The class (or job name).
    pub class: String,
    /// The call.
    pub call: Call,
    /// The comparisons behind it, one line each.
    pub evidence: Vec<String>,
}

/// Where the evidence comes from, for the comments.
#[derive(Debug, Clone)]
pub struct Provenance {
    /// `sha256 HEX of the bytes of N input files`, with what was not hashed.
    pub digest: String,
    /// When the proposal is made (seconds since the epoch).
    pub now: u64,
}

fn is_class(s: &str) -> bool {
    !s.is_empty() && s.len() <= 64 && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
}

fn is_mode(arm: &str) -> bool {
    !arm.starts_with("daemon-") && JobMode::parse(arm).is_ok()
}

/// The calls of `r`, class by class (sorted by name).
pub fn calls(r: &Report) -> Vec<ClassCall> {
    use std::collections::BTreeMap;
    // class → arm → (faster seen, slower seen, control)
    type Seen = BTreeMap<String, (bool, bool, String, f64)>;
    let mut by: BTreeMap<String, (Seen, Vec<String>, bool)> = BTreeMap::new();
    for e in &r.experiments {
        for g in &e.groups {
            let Some(class) = g.group.as_deref() else { continue };
            let entry = by.entry(class.to_string()).or_default();
            for c in &g.comparisons {
                let Some(w) = &c.wall else { continue };
                entry.2 |= !is_mode(&c.arm) || !is_mode(&c.control);
                let s = entry.0.entry(c.arm.clone()).or_insert((false, false, c.control.clone(), f64::INFINITY));
                s.0 |= c.verdict == "faster";
                s.1 |= c.verdict == "slower";
                s.3 = s.3.min(w.ratio);
                entry.1.push(format!(
                    "{} against {} on {}: wall time ×{:.3} (always-valid 95% CI {:.3} to {:.3}), {} / {} jobs, \
                     experiment {}: {}",
                    c.arm,
                    c.control,
                    g.hardware_key,
                    w.ratio,
                    w.ci_low,
                    w.ci_high,
                    count(w.n[0]),
                    count(w.n[1]),
                    e.name.as_deref().unwrap_or("(none)"),
                    c.verdict
                ));
            }
        }
    }
    by.into_iter()
        .filter(|(_, (seen, _, _))| !seen.is_empty())
        .map(|(class, (seen, evidence, not_modes))| {
            let gains = seen.iter().filter(|(_, s)| s.0 && !s.1);
            let best = gains.min_by(|a, b| a.1 .3.total_cmp(&b.1 .3));
            let call = if not_modes {
                Call::Undecided
            } else if let Some((arm, s)) = best {
                Call::Gain { arm: arm.clone(), control: s.2.clone() }
            } else if seen.values().all(|s| s.1 && !s.0) {
                let (arm, s) = seen.iter().next().expect("not empty");
                Call::Loss { arm: arm.clone(), control: s.2.clone() }
            } else {
                Call::Undecided
            };
            ClassCall { class, call, evidence }
        })
        .collect()
}

/// `sha256 HEX of the bytes of N input files` (in the order read), with what
/// was not hashed (standard input, a file gone since).
pub fn digest(sources: &[crate::input::Source]) -> String {
    use sha2::{Digest, Sha256};
    use std::io::Read;
    let mut h = Sha256::new();
    let (mut files, mut left) = (0u64, Vec::new());
    let mut buf = vec![0u8; 1 << 20];
    for s in sources {
        match s {
            crate::input::Source::File(p) => {
                let hashed = std::fs::File::open(p).and_then(|mut f| loop {
                    match f.read(&mut buf)? {
                        0 => break Ok(()),
                        n => h.update(&buf[..n]),
                    }
                });
                match hashed {
                    Ok(()) => files += 1,
                    Err(_) => left.push(numakit::text::path(p)),
                }
            }
            crate::input::Source::Stdin => left.push("standard input".into()),
            crate::input::Source::Skipped(..) => {}
        }
    }
    let hex: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
    let mut s = format!("sha256 {hex} of the bytes of {files} input file{}", if files == 1 { "" } else { "s" });
    if !left.is_empty() {
        s.push_str(&format!(" (not hashed: {})", left.join(", ")));
    }
    s
}

/// The statements of a policy text: (raw lines, words without comments).
fn statements(text: &str) -> Vec<(Vec<&str>, Vec<String>)> {
    let mut out: Vec<(Vec<&str>, Vec<String>)> = Vec::new();
    let mut open = false;
    for raw in text.lines() {
        let mut words: Vec<String> = Vec::new();
        for w in raw.split_whitespace() {
            if w.starts_with('#') {
                break;
            }
            words.push(w.to_string());
        }
        let cont = words.last().is_some_and(|w| w.ends_with('\\'));
        if let Some(w) = words.last_mut().filter(|_| cont) {
            w.pop();
        }
        words.retain(|w| !w.is_empty());
        match (open, out.last_mut()) {
            (true, Some(last)) => {
                last.0.push(raw);
                last.1.extend(words);
            }
            _ => out.push((vec![raw], words)),
        }
        open = cont;
    }
    out
}

/// The action words of a decided rule.
fn action(mode: &str, holdout: &str, holdout_arm: &str) -> String {
    format!("mode={mode} holdout={holdout} holdout-arm={holdout_arm}")
}

fn utc(t: Option<f64>) -> String {
    t.filter(|t| t.is_finite() && *t >= 0.0).map_or("-".into(), |t| numakit::units::utc_rfc3339(t as u64))
}

fn comments(out: &mut String, c: &ClassCall, what: &str, window: &str, p: &Provenance) {
    out.push_str(&format!("# proposed for class {}: {what}\n", c.class));
    for e in &c.evidence {
        out.push_str(&format!("#   {}\n", numakit::text::one_line(e, 400)));
    }
    out.push_str(&format!("#   records {window}; inputs {}\n", p.digest));
}

/// The proposed policy's text, or why none can be written.
pub fn propose(r: &Report, current: Option<&str>, p: &Provenance) -> Result<String, String> {
    let calls = calls(r);
    let window = format!("{} to {} (UTC)", utc(r.input.first_start_unix), utc(r.input.last_end_unix));
    let mut out = format!(
        "# numakit policy proposed by `numakit report --propose-policy` at {}\n# from {}; records {window}\n\
         # review it: `numakit policy check FILE`, the diff against the policy in force, the evidence below\n",
        numakit::units::utc_rfc3339(p.now),
        p.digest
    );
    let what = |call: &Call| match call {
        Call::Gain { arm, control } => Some((
            format!("{arm} is faster than {control}: decide {arm}, hold out into {control}"),
            arm.clone(),
            control.clone(),
        )),
        Call::Loss { arm, control } => Some((
            format!("{arm} is slower than {control}: decide {control}, hold out into {arm}"),
            control.clone(),
            arm.clone(),
        )),
        Call::Undecided => None,
    };
    match current {
        Some(text) => {
            let mut used = std::collections::BTreeSet::new();
            // an earlier proposal's header gives way to this one's
            let header = ["# numakit policy proposed by ", "# from sha256 ", "# review it: "];
            // and its evidence (`# proposed for class`, its `#   ` lines and
            // the rule it replaced, `# was:`) to the evidence of today's records
            let mut in_evidence = false;
            for (raw, words) in statements(text) {
                let comment = (raw.len() == 1).then(|| raw[0].trim_start());
                if comment.is_some_and(|c| header.iter().any(|h| c.starts_with(h))) {
                    continue;
                }
                if comment.is_some_and(|c| c.starts_with("# proposed for class ")) {
                    in_evidence = true;
                    continue;
                }
                if in_evidence && comment.is_some_and(|c| c.starts_with("#   ") || c.starts_with("# was: ")) {
                    continue;
                }
                in_evidence = false;
                let call = (words.first().map(String::as_str) == Some("rule"))
                    .then(|| words.get(1).and_then(|class| calls.iter().find(|c| &c.class == class)))
                    .flatten();
                let Some((c, (said, mode, held))) = call.and_then(|c| Some((c, what(&c.call)?))) else {
                    if let Some(c) = call.filter(|c| used.insert(c.class.clone())) {
                        comments(&mut out, c, "undecided: the rule as it is", &window, p);
                    }
                    raw.iter().for_each(|l| out.push_str(&format!("{l}\n")));
                    continue;
                };
                used.insert(c.class.clone());
                let kept: Vec<&str> = words[2..]
                    .iter()
                    .filter(|w| w.split_once('=').is_some_and(|(k, _)| MATCHERS.contains(&k)))
                    .map(String::as_str)
                    .collect();
                let holdout = words
                    .iter()
                    .find_map(|w| w.strip_prefix("holdout="))
                    .filter(|_| words.iter().any(|w| w.starts_with("mode=")))
                    .unwrap_or(DEFAULT_HOLDOUT);
                comments(&mut out, c, &said, &window, p);
                raw.iter().for_each(|l| out.push_str(&format!("# was: {}\n", l.trim_start_matches("# was: "))));
                let mut rule = vec![format!("rule {}", c.class)];
                rule.extend(kept.iter().map(|w| w.to_string()));
                rule.push(action(&mode, holdout, &held));
                out.push_str(&format!("{}\n", rule.join(" ")));
            }
            for c in calls.iter().filter(|c| !used.contains(&c.class)) {
                if let Some((said, ..)) = what(&c.call) {
                    out.push_str(&format!(
                        "# class {}: {said}, but no rule of the current policy gives it: add one by hand\n",
                        numakit::text::one_line(&c.class, 80)
                    ));
                }
            }
        }
        None => {
            out.push_str(
                "# no current policy: a rule per job name that has an answer; give `defaults key=FILE` (the \
                 experiment's key) so that the holdouts are drawn\n",
            );
            for c in &calls {
                match what(&c.call) {
                    Some(_) if !is_class(&c.class) => out.push_str(&format!(
                        "# job name {}: not usable as a class and a name= pattern: left out\n",
                        numakit::text::one_line(&c.class, 80)
                    )),
                    Some((said, mode, held)) => {
                        comments(&mut out, c, &said, &window, p);
                        out.push_str(&format!(
                            "rule {} name={} {}\n",
                            c.class,
                            c.class,
                            action(&mode, DEFAULT_HOLDOUT, &held)
                        ));
                    }
                    None => out.push_str(&format!(
                        "# {}: undecided: no rule (its experiment goes on)\n",
                        numakit::text::one_line(&c.class, 80)
                    )),
                }
            }
        }
    }
    parse(&out).map_err(|e| format!("the proposed policy does not parse ({e}): nothing written"))?;
    Ok(out)
}

/// A line diff of `old` against `new` (`-` removed, `+` added, hunks with
/// two lines of context), empty when they are the same.
pub fn diff(old_name: &str, old: &str, new_name: &str, new: &str) -> String {
    let (a, b): (Vec<&str>, Vec<&str>) = (old.lines().collect(), new.lines().collect());
    let (n, m) = (a.len(), b.len());
    let mut ops: Vec<(char, &str)> = Vec::new();
    if n.saturating_mul(m) > 16_000_000 {
        a.iter().for_each(|l| ops.push(('-', l)));
        b.iter().for_each(|l| ops.push(('+', l)));
    } else {
        // longest common subsequence, lengths from the end
        let mut l = vec![0u32; (n + 1) * (m + 1)];
        for i in (0..n).rev() {
            for j in (0..m).rev() {
                l[i * (m + 1) + j] = if a[i] == b[j] {
                    l[(i + 1) * (m + 1) + j + 1] + 1
                } else {
                    l[(i + 1) * (m + 1) + j].max(l[i * (m + 1) + j + 1])
                };
            }
        }
        let (mut i, mut j) = (0, 0);
        while i < n || j < m {
            if i < n && j < m && a[i] == b[j] {
                ops.push((' ', a[i]));
                (i, j) = (i + 1, j + 1);
            } else if i < n && (j == m || l[(i + 1) * (m + 1) + j] >= l[i * (m + 1) + j + 1]) {
                ops.push(('-', a[i]));
                i += 1;
            } else {
                ops.push(('+', b[j]));
                j += 1;
            }
        }
    }
    if ops.iter().all(|o| o.0 == ' ') {
        return String::new();
    }
    let mut out = format!("--- {old_name}\n+++ {new_name}\n");
    let near = |k: usize| ops[k.saturating_sub(2)..(k + 3).min(ops.len())].iter().any(|o| o.0 != ' ');
    let mut skipping = false;
    for (k, (op, line)) in ops.iter().enumerate() {
        if *op == ' ' && !near(k) {
            if !skipping {
                out.push_str("@@\n");
            }
            skipping = true;
            continue;
        }
        skipping = false;
        out.push_str(&format!("{op}{line}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_diff_marks_what_changed() {
        assert_eq!(diff("a", "x\ny\n", "b", "x\ny\n"), "");
        let d = diff("a", "1\n2\n3\n4\n5\n6\n7\n", "b", "1\n2\n3\nfour\n5\n6\n7\n");
        assert_eq!(d, "--- a\n+++ b\n@@\n 2\n 3\n-4\n+four\n 5\n 6\n@@\n");
        assert_eq!(diff("a", "", "b", "new\n"), "--- a\n+++ b\n+new\n");
    }

    #[test]
    fn statements_join_continued_lines_and_drop_comments() {
        let s = statements("rule a name=x \\\n  mode=auto # c\n# only\nrule b mode=none\n");
        assert_eq!(s.len(), 3);
        assert_eq!(s[0].1, vec!["rule", "a", "name=x", "mode=auto"]);
        assert_eq!(s[0].0.len(), 2);
        assert!(s[1].1.is_empty());
    }
}
