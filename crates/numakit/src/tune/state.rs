//! The state file: the original value of every knob numakit changed, so
//! `tune revert` can put it back, also after a crash.
//!
//! JSON (`format: "numakit-tune-state"`, `version: 1`): the root it belongs
//! to, the kernel's `boot_id` and release, timestamps, the originals (the
//! FIRST value seen for each knob: a second apply never replaces it) and a
//! short history. Saved with write-to-temp, `fsync`, `rename`, `fsync` of
//! the folder, so a crash leaves the old file or the new one, never half of
//! one. A lock file beside it (`flock`) keeps two `numakit tune` runs from
//! interleaving. This module owns numakit's own file; it never touches a
//! kernel knob.

use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::TuneError;
use crate::{files, units};

/// The `format` field of every state file.
pub const FORMAT: &str = "numakit-tune-state";
/// The newest `version` this numakit writes and reads.
pub const VERSION: u32 = 1;

/// The state file's content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    /// Always [`FORMAT`].
    pub format: String,
    /// [`VERSION`].
    pub version: u32,
    /// The root the knobs belong to (`/`, or a `--sysroot` folder), as an
    /// absolute path with its links resolved, so that `revert` from
    /// another folder finds it.
    pub root: String,
    /// `/proc/sys/kernel/random/boot_id` when the first original was saved.
    pub boot_id: Option<String>,
    /// `osrelease` then.
    pub kernel: Option<String>,
    /// When the file was created (UTC, RFC 3339).
    pub created: String,
    /// When it was last saved.
    pub updated: String,
    /// First-seen original of each changed knob, in the order first saved.
    pub originals: Vec<Original>,
    /// What was done (newest last).
    #[serde(default)]
    pub history: Vec<Event>,
}

/// A knob's value before numakit first changed it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Original {
    /// Canonical knob name.
    pub knob: String,
    /// The file it was read from, relative to the root.
    pub path: String,
    /// The value.
    pub value: String,
    /// When it was saved (UTC, RFC 3339).
    #[serde(default)]
    pub saved: String,
}

/// One entry of the history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    /// When (UTC, RFC 3339).
    pub at: String,
    /// `set`, `apply PROFILE`.
    pub action: String,
    /// `knob=value` written (saved before the writes began).
    pub writes: Vec<String>,
}

impl State {
    /// An empty state for `root` (recorded absolute and canonical).
    pub fn new(root: &Path, boot_id: Option<String>, kernel: Option<String>) -> State {
        let now = now_utc();
        State {
            format: FORMAT.to_string(),
            version: VERSION,
            root: canonical(root).display().to_string(),
            boot_id,
            kernel,
            created: now.clone(),
            updated: now,
            originals: Vec::new(),
            history: Vec::new(),
        }
    }

    /// Adds the originals of knobs not yet saved (the first-seen value of a
    /// knob is never replaced). Returns the knobs added.
    pub fn merge(&mut self, originals: impl IntoIterator<Item = Original>) -> Vec<String> {
        let mut added = Vec::new();
        for mut o in originals {
            if self.original(&o.knob).is_none() {
                if o.saved.is_empty() {
                    o.saved = now_utc();
                }
                added.push(o.knob.clone());
                self.originals.push(o);
            }
        }
        added
    }

    /// The saved original of `knob`.
    pub fn original(&self, knob: &str) -> Option<&Original> {
        self.originals.iter().find(|o| o.knob == knob)
    }

    /// Whether this state was written for `root` (compared after resolving
    /// symbolic links, when both exist).
    pub fn belongs_to(&self, root: &Path) -> bool {
        canonical(Path::new(&self.root)) == canonical(root)
    }

    /// Reads the state file; `Ok(None)` when there is none.
    pub fn load(path: &Path) -> Result<Option<State>, TuneError> {
        let text = match files::read_named_text(path) {
            Ok(t) => t,
            Err(e) if e.is_missing() => return Ok(None),
            Err(e) => return Err(state_error(path, e.why.to_string())),
        };
        let state: State = serde_json::from_str(&text)
            .map_err(|e| state_error(path, format!("not a numakit state file ({e}); fix or remove it")))?;
        if state.format != FORMAT {
            return Err(state_error(path, format!("format is \"{}\", not \"{FORMAT}\"", state.format)));
        }
        if state.version > VERSION {
            return Err(state_error(
                path,
                format!("version {} was written by a newer numakit (this one reads {VERSION})", state.version),
            ));
        }
        // numakit saves a knob's original once: a second one was put there
        // by hand (or the file is damaged), and reverting to either could
        // restore a value that was never the original.
        let name = |k: &str| super::knobs::lookup(k).map_or_else(|| k.to_string(), |k| k.name);
        for (i, o) in state.originals.iter().enumerate() {
            if state.originals[..i].iter().any(|p| name(&p.knob) == name(&o.knob)) {
                return Err(state_error(
                    path,
                    format!(
                        "it saves knob {} twice: it has been tampered with; nothing was done (fix or remove it)",
                        crate::text::quote(&o.knob)
                    ),
                ));
            }
        }
        Ok(Some(state))
    }

    /// Saves atomically: a temporary file in the same folder, `fsync`,
    /// `rename` over `path`, `fsync` of the folder. Creates the folder.
    pub fn save(&mut self, path: &Path) -> Result<(), TuneError> {
        self.updated = now_utc();
        let mut json = serde_json::to_string_pretty(self).map_err(|e| state_error(path, e.to_string()))?;
        json.push('\n');
        files::write_atomic(path, json.as_bytes()).map_err(|e| state_error(path, format!("cannot write it: {e}")))
    }

    /// Removes the state file and makes the removal durable.
    pub fn remove(path: &Path) -> Result<(), TuneError> {
        files::remove_durable(path).map_err(|e| state_error(path, format!("cannot remove it: {e}")))
    }
}

/// `p` absolute, its links resolved where it exists (made absolute from
/// the current folder where it does not).
fn canonical(p: &Path) -> PathBuf {
    fs::canonicalize(p).or_else(|_| std::path::absolute(p)).unwrap_or_else(|_| p.to_path_buf())
}

fn state_error(path: &Path, why: String) -> TuneError {
    TuneError::State { path: path.to_path_buf(), why }
}

/// An exclusive lock on `<state file>.lock`, released when dropped (and by
/// the kernel if the process dies).
#[derive(Debug)]
pub struct Lock {
    _lock: files::FileLock,
}

impl Lock {
    /// Takes the lock without waiting; fails when another `numakit tune`
    /// holds it. Creates the state file's folder, and removes the
    /// temporary files of writers killed during a save.
    pub fn acquire(state_path: &Path) -> Result<Lock, TuneError> {
        let mut name = state_path.as_os_str().to_owned();
        name.push(".lock");
        let lock_path = PathBuf::from(name);
        let lock = files::FileLock::try_acquire(&lock_path)
            .map_err(|e| state_error(state_path, format!("cannot lock {}: {e}", lock_path.display())))?
            .ok_or_else(|| {
                state_error(state_path, format!("another numakit tune is running (it holds {})", lock_path.display()))
            })?;
        // Under the lock no live numakit writes the state: what a killed
        // one left of its atomic save (`.NAME.tmp.PID`) can go.
        files::remove_stale_temps(state_path);
        Ok(Lock { _lock: lock })
    }
}

/// Now, as UTC RFC 3339 (`2025-01-31T12:00:00Z`).
pub fn now_utc() -> String {
    units::utc_rfc3339(units::unix_now() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lock_cleans_what_a_killed_save_left() {
        let d = tempfile::tempdir().unwrap();
        let st = d.path().join("tune-state.json");
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let left = d.path().join(format!(".tune-state.json.tmp.{dead}"));
        fs::write(&left, "{").unwrap();
        let _lock = Lock::acquire(&st).unwrap();
        assert!(!left.exists());
    }

    fn orig(knob: &str, value: &str) -> Original {
        Original { knob: knob.into(), path: format!("proc/sys/{knob}"), value: value.into(), saved: String::new() }
    }

    #[test]
    fn merge_keeps_the_first_seen_original() {
        let mut s = State::new(Path::new("/"), None, None);
        assert_eq!(s.merge([orig("a", "1"), orig("b", "2")]), vec!["a", "b"]);
        assert_eq!(s.merge([orig("a", "9"), orig("c", "3")]), vec!["c"]);
        let values: Vec<(&str, &str)> = s.originals.iter().map(|o| (o.knob.as_str(), o.value.as_str())).collect();
        assert_eq!(values, vec![("a", "1"), ("b", "2"), ("c", "3")]);
        assert!(s.originals.iter().all(|o| o.saved.ends_with('Z')));
    }

    #[test]
    fn save_load_round_trip_and_remove() {
        let d = tempfile::tempdir().expect("tempdir");
        let path = d.path().join("deep/er/state.json");
        assert_eq!(State::load(&path).expect("load"), None);
        let mut s = State::new(d.path(), Some("boot".into()), Some("6.12".into()));
        s.merge([orig("kernel.numa_balancing", "1")]);
        s.save(&path).expect("save");
        let back = State::load(&path).expect("load").expect("some");
        assert_eq!(back, s);
        assert!(back.belongs_to(d.path()));
        assert!(!back.belongs_to(Path::new("/")));
        // no temporary file is left behind
        let names: Vec<String> = fs::read_dir(path.parent().expect("dir"))
            .expect("ls")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, vec!["state.json"]);
        State::remove(&path).expect("remove");
        assert!(!path.exists());
        State::remove(&path).expect("removing twice is fine");
    }

    #[test]
    fn bad_files_are_refused_with_the_path() {
        let d = tempfile::tempdir().expect("tempdir");
        let path = d.path().join("s.json");
        fs::write(&path, "{not json").expect("write");
        let e = State::load(&path).unwrap_err().to_string();
        assert!(e.contains("s.json") && e.contains("not a numakit state file"), "{e}");
        let mut s = State::new(d.path(), None, None);
        s.version = 7;
        fs::write(&path, serde_json::to_string(&s).expect("json")).expect("write");
        assert!(State::load(&path).unwrap_err().to_string().contains("newer numakit"));
        s.version = 1;
        s.format = "other".into();
        fs::write(&path, serde_json::to_string(&s).expect("json")).expect("write");
        assert!(State::load(&path).unwrap_err().to_string().contains("format is \"other\""));
    }

    #[test]
    fn roots_are_recorded_absolute_and_knobs_once() {
        let d = tempfile::tempdir().expect("tempdir");
        let s = State::new(Path::new("."), None, None);
        assert_eq!(Path::new(&s.root), fs::canonicalize(".").expect("cwd"));
        assert!(s.belongs_to(&std::env::current_dir().expect("cwd")));
        let path = d.path().join("s.json");
        let mut s = State::new(d.path(), None, None);
        s.merge([orig("kernel.numa_balancing", "1")]);
        s.originals.push(orig("autonuma", "0"));
        s.save(&path).expect("save");
        let e = State::load(&path).unwrap_err().to_string();
        assert!(e.contains("saves knob \"autonuma\" twice: it has been tampered with"), "{e}");
    }

    #[test]
    fn lock_is_exclusive() {
        let d = tempfile::tempdir().expect("tempdir");
        let path = d.path().join("s.json");
        let first = Lock::acquire(&path).expect("lock");
        let e = Lock::acquire(&path).unwrap_err().to_string();
        assert!(e.contains("another numakit tune is running"), "{e}");
        drop(first);
        Lock::acquire(&path).expect("free again");
    }
}
