//! Guards: arms stopped for a class because they hurt it. One guard a
//! line, written by `numakit report --guard-file` or by hand (`numakit
//! guard add`), read where jobs start: a job of the class whose arm is
//! guarded gets the control instead, recorded `arm_source: guarded`.
//!
//! ```text
//! # numakit guards
//! guard class=sim arm=auto since=2026-11-29T06:00:00Z  # 4.1% slower (1.9% to 6.3%), 812 jobs
//! guard class=reco experiment=reco-q1 arm=interleave
//! ```
//!
//! `experiment=` limits a guard to one experiment's arm; without it the arm
//! is stopped for the class whatever gives it (an experiment, a decided
//! mode, a holdout). Errors are `LINE:COL: "WORD": why`, as the policy's.

use std::path::Path;

/// The largest guard file read.
pub const MAX_GUARD_BYTES: u64 = 1 << 20;

/// One guard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Guard {
    /// The class it stops the arm for.
    pub class: String,
    /// The experiment it is limited to (`None`: any).
    pub experiment: Option<String>,
    /// The arm stopped.
    pub arm: String,
    /// Since when (seconds since the epoch, UTC), where said.
    pub since: Option<u64>,
    /// Why, as the comment after it says.
    pub why: Option<String>,
}

/// A guard file's guards, in order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Guards(pub Vec<Guard>);

/// Whether `s` may be a guard's class, arm or experiment: 1 to 64
/// letters, digits, `.`, `_`, `-` or `:`.
pub fn is_name(s: &str) -> bool {
    !s.is_empty() && s.len() <= 64 && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-:".contains(&b))
}

impl Guards {
    /// The guard that stops `arm` for `class` (in `experiment`, if any).
    pub fn stopping(&self, class: &str, experiment: Option<&str>, arm: &str) -> Option<&Guard> {
        self.0
            .iter()
            .find(|g| g.class == class && g.arm == arm && g.experiment.as_deref().is_none_or(|e| Some(e) == experiment))
    }

    /// Parses a guard file's text.
    pub fn parse(text: &str) -> Result<Guards, String> {
        let mut out = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let (body, why) = match raw.split_once(" #").or_else(|| raw.strip_prefix('#').map(|r| ("", r))) {
                Some((b, w)) => (b, Some(w.trim().to_string()).filter(|w| !w.is_empty())),
                None => (raw, None),
            };
            let mut words = body.split_whitespace();
            let Some(first) = words.next() else { continue };
            let at = |w: &str| {
                let col = raw.find(w).map_or(1, |b| raw[..b].chars().count() + 1);
                format!("{}:{col}: {}", i + 1, crate::text::quote(w))
            };
            if first != "guard" {
                return Err(format!("{}: a line is `guard class=CLASS arm=ARM ...`", at(first)));
            }
            let mut g = Guard { class: String::new(), experiment: None, arm: String::new(), since: None, why };
            for w in words {
                let (k, v) = w.split_once('=').ok_or_else(|| format!("{}: a word is NAME=VALUE", at(w)))?;
                match k {
                    "class" | "arm" | "experiment" if !is_name(v) => {
                        return Err(format!("{}: 1 to 64 letters, digits, '.', '_', '-' or ':'", at(w)))
                    }
                    "class" => g.class = v.to_string(),
                    "arm" => g.arm = v.to_string(),
                    "experiment" => g.experiment = Some(v.to_string()),
                    "since" => g.since = Some(crate::units::parse_utc(v).map_err(|e| format!("{}: {e}", at(w)))?),
                    _ => return Err(format!("{}: a guard's words are class=, arm=, experiment=, since=", at(w))),
                }
            }
            if g.class.is_empty() || g.arm.is_empty() {
                return Err(format!("{}: a guard needs class= and arm=", at(first)));
            }
            out.push(g);
        }
        Ok(Guards(out))
    }

    /// The file's text: a header, then a line a guard, its reason as a comment.
    pub fn to_text(&self) -> String {
        let mut s = String::from("# numakit guards: each stops an arm for a class; its jobs get the control\n");
        for g in &self.0 {
            s.push_str(&format!("guard class={}", g.class));
            if let Some(e) = &g.experiment {
                s.push_str(&format!(" experiment={e}"));
            }
            s.push_str(&format!(" arm={}", g.arm));
            if let Some(t) = g.since {
                s.push_str(&format!(" since={}", crate::units::utc_rfc3339(t)));
            }
            if let Some(w) = &g.why {
                s.push_str(&format!("  # {}", crate::text::one_line(w, 400)));
            }
            s.push('\n');
        }
        s
    }
}

/// The guards at `path` (bounded, parsed once per file identity in this
/// process); a missing file is no guards.
pub fn load(path: &Path) -> Result<Guards, String> {
    match super::policy::read_cached(path, MAX_GUARD_BYTES, "guards", Guards::parse) {
        Err(e) if e.ends_with(": no such file") => Ok(Guards::default()),
        r => r,
    }
}

/// Reads, changes and writes the guard file at `path` whole, under its
/// lock (`PATH.lock`, waited for up to 10 s): the one writer of guard
/// files (`numakit guard add|clear`, `numakit report --guard-file`). The
/// file is replaced atomically through `files::write_atomic` (a new file
/// renamed into place in the folder: a link at the path is replaced, never
/// followed). Returns what `change` returns.
pub fn update<T>(path: &Path, change: impl FnOnce(&mut Guards) -> T) -> Result<T, String> {
    let mut lock_path = path.as_os_str().to_owned();
    lock_path.push(".lock");
    let shown = crate::text::path(path);
    let _lock = crate::files::FileLock::acquire(Path::new(&lock_path), std::time::Duration::from_secs(10))
        .map_err(|e| format!("guards {shown}: its lock: {e}"))?
        .ok_or_else(|| format!("guards {shown}: another writer held its lock for 10 s"))?;
    let mut g = load(path)?;
    let out = change(&mut g);
    crate::files::write_atomic(path, g.to_text().as_bytes())
        .map_err(|e| format!("guards {shown}: cannot write it: {e}"))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guards_round_trip_and_stop_only_their_arm() {
        let text = "# header\n\nguard class=sim arm=auto since=2026-11-29T06:00:00Z  # 4.1% slower\n\
                    guard class=reco experiment=q1 arm=interleave\n";
        let g = Guards::parse(text).unwrap();
        assert_eq!(g.0.len(), 2);
        assert_eq!(g.0[0].why.as_deref(), Some("4.1% slower"));
        assert!(g.stopping("sim", None, "auto").is_some() && g.stopping("sim", Some("x"), "auto").is_some());
        assert!(g.stopping("sim", None, "none").is_none() && g.stopping("reco", None, "auto").is_none());
        assert!(g.stopping("reco", Some("q1"), "interleave").is_some());
        assert!(g.stopping("reco", Some("q2"), "interleave").is_none(), "limited to its experiment");
        assert_eq!(Guards::parse(&g.to_text()).unwrap(), g);
    }

    #[test]
    fn update_replaces_the_file_whole_and_a_link_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("elsewhere");
        std::fs::write(&target, "# someone else's file\n").unwrap();
        let path = dir.path().join("guards");
        std::os::unix::fs::symlink(&target, &path).unwrap();
        let g = Guard { class: "sim".into(), experiment: None, arm: "auto".into(), since: None, why: None };
        let n = update(&path, |gs| {
            gs.0.push(g.clone());
            gs.0.len()
        })
        .unwrap();
        assert_eq!(n, 1);
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "# someone else's file\n", "the link's target kept");
        assert!(!std::fs::symlink_metadata(&path).unwrap().file_type().is_symlink(), "the link replaced");
        assert_eq!(Guards::parse(&std::fs::read_to_string(&path).unwrap()).unwrap().0, vec![g]);
    }

    #[test]
    fn a_bad_guard_names_its_line_column_and_word() {
        let e = Guards::parse("guard class=sim arm=auto\nguard class=sim arms=auto\n").unwrap_err();
        assert_eq!(e, "2:17: \"arms=auto\": a guard's words are class=, arm=, experiment=, since=");
        let e = Guards::parse("guard arm=auto").unwrap_err();
        assert!(e.starts_with("1:1: \"guard\": a guard needs class= and arm="), "{e}");
        let e = Guards::parse("guard class=a\u{1b}b arm=x").unwrap_err();
        assert!(e.contains("\\u{1b}") && !e.contains('\u{1b}'), "{e}");
    }
}
