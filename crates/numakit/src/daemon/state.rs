//! What the daemon keeps across restarts, in one JSON file written
//! atomically (temporary file, fsync, rename): the decision history (moves,
//! harm memory), the exclusions and inclusions made through `numakit ctl`,
//! what each process had before numakit changed it, and the global
//! settings numakit changed with their original values.
//!
//! The file is written before an action is applied (write-ahead) and again
//! after, so a daemon killed in between finds at its next start a
//! placement it can check against every thread and finish or undo.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::apply::Original;
use super::history::History;
use super::protocol::Target;

/// A global setting numakit changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GlobalChange {
    /// Path relative to the root (`proc/sys/kernel/numa_balancing`).
    pub path: String,
    /// The value before.
    pub original: String,
    /// The value numakit wrote.
    pub set: String,
}

/// Run-time exclusions and inclusions from `numakit ctl`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct CtlLists {
    /// Pids never touched.
    pub exclude_pids: Vec<i32>,
    /// Command names never touched.
    pub exclude_comms: Vec<String>,
    /// Pids managed even when the configured include lists would not.
    pub include_pids: Vec<i32>,
    /// Command names managed even when the include lists would not.
    pub include_comms: Vec<String>,
}

impl CtlLists {
    /// Puts `t` on the exclude list (`exclude`) or the include list, and
    /// takes it off the other.
    pub fn put(&mut self, t: &Target, exclude: bool) {
        fn on<T: PartialEq + Clone>(add: &mut Vec<T>, remove: &mut Vec<T>, x: &T) {
            remove.retain(|y| y != x);
            if !add.contains(x) {
                add.push(x.clone());
            }
        }
        match (t, exclude) {
            (Target::Pid(p), true) => on(&mut self.exclude_pids, &mut self.include_pids, p),
            (Target::Pid(p), false) => on(&mut self.include_pids, &mut self.exclude_pids, p),
            (Target::Comm(n), true) => on(&mut self.exclude_comms, &mut self.include_comms, n),
            (Target::Comm(n), false) => on(&mut self.include_comms, &mut self.exclude_comms, n),
        }
    }
}

/// The daemon's persistent state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct State {
    /// Format version (1).
    pub version: u32,
    /// The decision core's history.
    pub history: History,
    /// `numakit ctl` lists.
    pub ctl: CtlLists,
    /// Per pid, what it had before numakit's first change.
    pub originals: BTreeMap<i32, Original>,
    /// Global settings changed, to restore on exit.
    pub globals: Vec<GlobalChange>,
}

/// A state file that cannot be read or written, in one line.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// I/O.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// Not our JSON.
    #[error("{path}: not a numakit daemon state file ({source}); move it away to start afresh")]
    Format {
        /// The file.
        path: PathBuf,
        /// The error.
        source: serde_json::Error,
    },
}

impl State {
    /// An empty state.
    pub fn new() -> Self {
        Self { version: 1, history: History::new(), ..Self::default() }
    }

    /// Reads the state file; a missing file is an empty state.
    pub fn load(path: &Path) -> Result<Self, StateError> {
        match std::fs::read_to_string(path) {
            Ok(t) => serde_json::from_str(&t).map_err(|source| StateError::Format { path: path.into(), source }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Self::new()),
            Err(source) => Err(StateError::Io { path: path.into(), source }),
        }
    }

    /// Writes the state file durably ([`crate::files::write_atomic`]).
    pub fn save(&self, path: &Path) -> Result<(), StateError> {
        let text = serde_json::to_string_pretty(self).unwrap_or_default();
        crate::files::write_atomic(path, text.as_bytes()).map_err(|source| StateError::Io { path: path.into(), source })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ctl_lists_move_a_target_from_one_list_to_the_other() {
        let mut c = CtlLists::default();
        c.put(&Target::Pid(7), true);
        c.put(&Target::Pid(7), true);
        c.put(&Target::Comm("reco".into()), false);
        assert_eq!((c.exclude_pids.as_slice(), c.include_comms.as_slice()), (&[7][..], &["reco".to_string()][..]));
        c.put(&Target::Pid(7), false);
        c.put(&Target::Comm("reco".into()), true);
        assert_eq!(c.include_pids, vec![7]);
        assert!(c.exclude_pids.is_empty() && c.include_comms.is_empty());
        assert_eq!(c.exclude_comms, vec!["reco".to_string()]);
    }

    #[test]
    fn round_trip_missing_and_bad() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("sub/state.json");
        assert_eq!(State::load(&p).unwrap(), State::new());
        let mut s = State::new();
        s.ctl.exclude_comms.push("geant4".into());
        s.globals.push(GlobalChange {
            path: "proc/sys/kernel/numa_balancing".into(),
            original: "1".into(),
            set: "0".into(),
        });
        s.save(&p).unwrap();
        assert_eq!(State::load(&p).unwrap(), s);
        std::fs::write(&p, "{not json").unwrap();
        let e = State::load(&p).unwrap_err().to_string();
        assert!(e.contains("state.json") && e.contains("not a numakit daemon state file") && !e.contains('\n'), "{e}");
    }
}
