//! What the daemon keeps across restarts, in one JSON file written
//! atomically (temporary file, fsync, rename): the decision history (moves,
//! harm memory), the exclusions and inclusions made through `numakit ctl`,
//! what each process had before numakit changed it, and the global
//! settings numakit changed with their original values.
//!
//! The file is written before an action is applied (write-ahead) and again
//! after, so a daemon killed in between finds at its next start a
//! placement it can check against every thread and finish or undo.
//!
//! Format [`STATE_VERSION`] (2) keeps the history in its two halves,
//! observed and committed; files of version 1 (one record per process)
//! are read and written back as version 2.

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
    /// Cgroups whose processes (and those of the cgroups below) are never
    /// touched; dropped when the cgroup is gone (the job ended).
    pub exclude_cgroups: Vec<String>,
    /// Cgroups managed even when the include lists would not.
    pub include_cgroups: Vec<String>,
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
            (Target::Cgroup(c), true) => on(&mut self.exclude_cgroups, &mut self.include_cgroups, c),
            (Target::Cgroup(c), false) => on(&mut self.include_cgroups, &mut self.exclude_cgroups, c),
        }
    }
}

/// The state file's format version: 2 since the history is kept in two
/// halves ([`History`]).
pub const STATE_VERSION: u32 = 2;

/// The daemon's persistent state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct State {
    /// Format version ([`STATE_VERSION`]; 1 is read too).
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
    /// Not read: not a regular file, too large, not text, or I/O.
    #[error("{0}")]
    Read(crate::files::NamedFileError),
    /// Written by a newer numakit.
    #[error(
        "{path}: state file version {version}, this numakit reads up to {STATE_VERSION}; move it away to start afresh"
    )]
    Version {
        /// The file.
        path: PathBuf,
        /// Its version.
        version: u32,
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
        Self { version: STATE_VERSION, history: History::new(), ..Self::default() }
    }

    /// Reads the state file (version 1 or 2, as version 2); a missing file
    /// is an empty state.
    pub fn load(path: &Path) -> Result<Self, StateError> {
        let text = match crate::files::read_named_text(path) {
            Ok(t) => t,
            Err(e) if e.is_missing() => return Ok(Self::new()),
            Err(e) => return Err(StateError::Read(e)),
        };
        let mut state: Self =
            serde_json::from_str(&text).map_err(|source| StateError::Format { path: path.into(), source })?;
        if state.version > STATE_VERSION {
            return Err(StateError::Version { path: path.into(), version: state.version });
        }
        state.version = STATE_VERSION;
        Ok(state)
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

    /// A state file of version 1 (one record per process and per command
    /// name), written by the daemon before its history was split: read
    /// into the two halves, written back as version 2, read back the same.
    /// (That the halves are what today's scans make of the same inputs is
    /// tested with the decision, `decide::tests::inputs`.)
    #[test]
    fn version_1_files_are_read_and_written_as_version_2() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("state.json");
        std::fs::write(&p, include_str!("testdata/state-v1.json")).unwrap();
        let s = State::load(&p).unwrap();
        assert_eq!(s.version, STATE_VERSION);
        let (o, c) = (&s.history.observed, &s.history.committed);
        assert_eq!(o.last_time_s, Some(1120.0));
        assert_eq!(o.procs.keys().copied().collect::<Vec<_>>(), [3, 7]);
        assert_eq!((o.procs[&7].last_cpu_node, o.procs[&7].last_rss), (Some(1), Some((1120.0, 2 << 30))));
        assert_eq!(o.comms.keys().collect::<Vec<_>>(), ["job5"]);
        assert_eq!((o.comms["job5"].runs.as_slice(), o.comms["job5"].last_run_s), (&[660.0][..], Some(1120.0)));
        assert_eq!(c.procs[&3].placement.as_ref().map(|p| p.pending.clone()), Some(vec![(1, 0, 22144)]));
        assert_eq!((c.procs[&7].moves, c.procs[&7].left_alone_until_s), (1, Some(4720.0)));
        assert_eq!(c.comms.keys().collect::<Vec<_>>(), ["job7"]);
        assert_eq!(c.comms["job7"].harms, 1);
        assert_eq!((c.pages_migrated, c.reverts), (764288, 1));
        assert_eq!(c.slow_memory, BTreeMap::from([(1, 4720.0)]));
        assert_eq!(s.ctl.exclude_comms, ["qemu-kvm"]);
        assert_eq!(s.originals[&7].cpus, "0-7");
        assert_eq!(s.globals.len(), 1);
        s.save(&p).unwrap();
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        assert_eq!((v["version"].as_u64(), v["history"]["version"].as_u64()), (Some(2), Some(2)));
        assert!(v["history"]["procs"].is_null() && v["history"]["observed"]["procs"]["7"].is_object());
        assert_eq!(State::load(&p).unwrap(), s);
    }

    #[test]
    fn a_newer_version_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("state.json");
        std::fs::write(&p, r#"{"version": 3}"#).unwrap();
        let e = State::load(&p).unwrap_err().to_string();
        assert!(e.contains("version 3") && e.contains("up to 2") && !e.contains('\n'), "{e}");
    }
}
