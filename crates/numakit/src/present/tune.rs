//! `numakit tune`'s results ([`crate::tune`]) as text and JSON, for people
//! and scripts. Pure: each function returns a string (the caller prints
//! it); [`SysRoot::path`] only joins paths. JSON documents carry
//! `schema_version: 1` (docs/tune.md describes them).

use std::fmt::Write as _;
use std::path::Path;

use serde_json::{json, Value};

use crate::sys::SysRoot;
use crate::tune::apply::{ApplyOutcome, RevertOutcome};
use crate::tune::check::{Baseline, Difference, Finding};
use crate::tune::profiles::Profile;
use crate::tune::read::Reading;
use crate::tune::state::State;

/// `tune show`: two lines per knob, `NAME = VALUE  (default D, accepts A)`
/// (or `NAME: unavailable: WHY`) and the doc line.
pub fn show_text(readings: &[Reading], state: Option<&State>) -> String {
    let mut out = String::new();
    for r in readings {
        let k = &r.knob;
        match &r.state {
            Ok(found) => {
                let _ =
                    write!(out, "{} = {}  (default {}, accepts {}", k.name, found.value, k.default, k.accepts_text());
                if let Some(o) = state.and_then(|s| s.original(&k.name)) {
                    let _ = write!(out, "; changed by numakit, original {}", o.value);
                }
                out.push_str(")\n");
            }
            Err(why) => {
                let _ = writeln!(out, "{}: unavailable: {why}", k.name);
            }
        }
        let _ = writeln!(out, "    {}", k.doc);
    }
    out
}

/// `tune show --json`.
pub fn show_json(sys: &SysRoot, readings: &[Reading], state: Option<&State>) -> String {
    let knobs: Vec<Value> = readings
        .iter()
        .map(|r| {
            let k = &r.knob;
            let (path, value, why) = match &r.state {
                Ok(f) => (Some(sys.path(&f.path).display().to_string()), Some(f.value.clone()), None),
                Err(why) => (None, None, Some(why.clone())),
            };
            json!({
                "name": k.name,
                "aliases": k.aliases,
                "available": value.is_some(),
                "path": path,
                "value": value,
                "unavailable": why,
                "default": k.default,
                "accepts": k.accepts,
                "doc": k.doc,
                "needs": k.needs,
                "original": state.and_then(|s| s.original(&k.name)).map(|o| o.value.clone()),
            })
        })
        .collect();
    let doc = json!({ "schema_version": 1, "root": sys.root().display().to_string(), "knobs": knobs });
    serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n"
}

/// `tune set` / `tune apply`: one line per write, then where the originals
/// are; with `--dry-run` the writes it would make.
pub fn apply_text(sys: &SysRoot, out: &ApplyOutcome, state_path: &Path) -> String {
    let mut s = String::new();
    for note in &out.notes {
        let _ = writeln!(s, "note: {note}");
    }
    let refused = |k: &str| out.refused.iter().any(|(w, _)| w.knob == k);
    for w in out.plan.writes.iter().filter(|w| !refused(&w.knob)) {
        if out.dry_run {
            let _ = writeln!(s, "would write {} to {} ({}, now {})", w.to, sys.path(&w.path).display(), w.knob, w.from);
        } else {
            let _ = writeln!(s, "{}: {} -> {}", w.knob, w.from, w.to);
        }
    }
    for w in &out.plan.unchanged {
        let _ = writeln!(s, "{}: already {}", w.knob, w.to);
    }
    for (w, e) in &out.refused {
        let _ = writeln!(
            s,
            "{}: the kernel refused {} ({e}): it keeps this IRQ's affinity (a managed, per-CPU or no-balancing IRQ); left at {}",
            w.knob, w.to, w.from
        );
    }
    if out.dry_run {
        s.push_str("dry run: nothing written\n");
    } else if out.plan.writes.iter().any(|w| !refused(&w.knob)) {
        let _ = writeln!(s, "previous values saved in {} (numakit tune revert puts them back)", state_path.display());
    }
    s
}

/// `tune revert`.
pub fn revert_text(sys: &SysRoot, out: &RevertOutcome, state_path: &Path) -> String {
    let mut s = String::new();
    if !out.had_state {
        let _ = writeln!(s, "nothing to revert: no state file {}", state_path.display());
        return s;
    }
    for note in &out.notes {
        let _ = writeln!(s, "note: {note}");
    }
    for w in &out.writes {
        if out.dry_run {
            let _ = writeln!(s, "would write {} to {} ({}, now {})", w.to, sys.path(&w.path).display(), w.knob, w.from);
        } else {
            let _ = writeln!(s, "{}: {} -> {} (original)", w.knob, w.from, w.to);
        }
    }
    for k in &out.already {
        let _ = writeln!(s, "{k}: already at its original value");
    }
    if out.dry_run {
        s.push_str("dry run: nothing written\n");
    } else {
        let _ = writeln!(s, "all original values are back; removed {}", state_path.display());
    }
    s
}

/// `tune profiles`.
pub fn profiles_text(profiles: &[Profile]) -> String {
    let mut s = String::new();
    for p in profiles {
        let from = p.file.as_ref().map_or("built-in".to_string(), |f| f.display().to_string());
        let _ = writeln!(s, "{} ({from})", p.name);
        if !p.description.is_empty() {
            let _ = writeln!(s, "    {}", p.description);
        }
        let sets: Vec<String> = p.settings.iter().map(|x| format!("{}={}", x.knob, x.value)).collect();
        let _ = writeln!(s, "    sets: {}", sets.join(" "));
        if !p.source.is_empty() {
            let _ = writeln!(s, "    source: {}", p.source);
        }
    }
    s
}

/// `tune profiles --json`.
pub fn profiles_json(profiles: &[Profile]) -> String {
    let doc = json!({ "schema_version": 1, "profiles": profiles });
    serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n"
}

/// `tune check`: one line per finding (`LEVEL KEY VALUE`, advice below);
/// with a baseline, its differences.
pub fn check_text(findings: &[Finding], against: Option<(&Path, &Baseline, &[Difference])>) -> String {
    let mut s = String::new();
    let width = findings.iter().map(|f| f.key.len()).max().unwrap_or(0);
    for f in findings {
        let _ = writeln!(s, "{:<5} {:<width$}  {}", f.level.name(), f.key, f.value);
        if let Some(a) = &f.advice {
            let _ = writeln!(s, "      {:<width$}  -> {a}", "");
        }
    }
    if let Some((path, base, diffs)) = against {
        let host = base.host.as_deref().unwrap_or("unknown host");
        if diffs.is_empty() {
            let _ = writeln!(s, "same as baseline {} ({host}, {})", path.display(), base.taken);
        } else {
            let _ =
                writeln!(s, "{} differences from baseline {} ({host}, {}):", diffs.len(), path.display(), base.taken);
            for d in diffs {
                let side = |v: &Option<String>| v.clone().unwrap_or_else(|| "(absent)".into());
                let _ = writeln!(s, "  {}: baseline {}, here {}", d.key, side(&d.baseline), side(&d.current));
            }
        }
    }
    s
}

/// `tune check --json`.
pub fn check_json(findings: &[Finding], against: Option<(&Path, &Baseline, &[Difference])>) -> String {
    let baseline = against.map(
        |(p, b, d)| json!({ "file": p.display().to_string(), "host": b.host, "taken": b.taken, "differences": d }),
    );
    let doc = json!({ "schema_version": 1, "findings": findings, "baseline": baseline });
    serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n"
}

/// A `tune check --save` baseline, as its file holds it (the file
/// `--against` reads back).
pub fn baseline_json(base: &Baseline) -> String {
    serde_json::to_string_pretty(base).unwrap_or_default() + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tune::read::read_all;
    use crate::tune::testutil::fake_root;

    #[test]
    fn show_lists_every_knob_with_value_or_reason() {
        let (_d, sys) = fake_root();
        let r = read_all(&sys);
        let text = show_text(&r, None);
        assert!(text.contains("kernel.numa_balancing = 1  (default 1, accepts 0-3)\n"), "{text}");
        assert!(text.contains("kernel.numa_balancing_promote_rate_limit_MBps: unavailable: not in this kernel"));
        assert_eq!(text.lines().count(), r.len() * 2);
        let v: Value = serde_json::from_str(&show_json(&sys, &r, None)).expect("json");
        assert_eq!(v["schema_version"], 1);
        let first = &v["knobs"][0];
        assert_eq!(first["name"], "kernel.numa_balancing");
        assert_eq!(first["value"], "1");
        assert_eq!(first["accepts"], json!({"type": "range", "min": 0, "max": 3}));
        assert!(first["path"].as_str().expect("path").ends_with("/proc/sys/kernel/numa_balancing"));
        let thp = v["knobs"]
            .as_array()
            .expect("knobs")
            .iter()
            .find(|k| k["name"] == "kernel/mm/transparent_hugepage/enabled")
            .expect("thp");
        assert_eq!(thp["accepts"]["choices"], json!(["always", "madvise", "never"]));
    }
}
