//! The one recording point for changes to the system.
//!
//! Every act wrapper that changes state (`set_mempolicy`, `mbind`,
//! `sched_setaffinity`, `migrate_pages`, `move_pages` with target nodes)
//! calls [`record`] once the kernel has accepted the change. Queries are
//! never recorded.
//!
//! Records go to an in-process list, drained with [`take`] (or copied with
//! [`peek`]). The list keeps the newest [`MAX_RECORDS`]; older ones are
//! dropped and counted ([`dropped`]). When the environment variable
//! `NUMAKIT_LOG` is `1` (or after [`set_verbose`]`(true)`), each record is
//! also printed as one line on standard error:
//!
//! ```text
//! numakit: set_mempolicy self: mode bind nodes 0
//! ```

use std::collections::VecDeque;
use std::fmt;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};

/// Environment variable that turns on printing of every change.
pub const LOG_ENV: &str = "NUMAKIT_LOG";

/// How many records the in-process list keeps (the oldest go first).
pub const MAX_RECORDS: usize = 4096;

/// A change a wrapper made, as it reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The system call (`set_mempolicy`, `mbind`, ...).
    pub call: &'static str,
    /// Whose placement changed: `self`, `pid 123`, `tid 124`,
    /// `self addr 0x7f.. len 4096`.
    pub target: String,
    /// What it was set to, e.g. `mode bind nodes 0-1`.
    pub detail: String,
}

/// A [`Change`] as kept in the list.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ChangeRecord {
    /// Increasing number over the life of the process (gaps mean records
    /// were dropped from the front of a full list).
    pub seq: u64,
    /// The kernel id of the thread that made the change.
    pub tid: i32,
    /// The system call.
    pub call: &'static str,
    /// Whose placement changed.
    pub target: String,
    /// What it was set to.
    pub detail: String,
}

impl fmt::Display for ChangeRecord {
    /// The line printed when verbose: `numakit: CALL TARGET: DETAIL`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "numakit: {} {}: {}", self.call, self.target, self.detail)
    }
}

static RECORDS: Mutex<VecDeque<ChangeRecord>> = Mutex::new(VecDeque::new());
static SEQ: AtomicU64 = AtomicU64::new(0);
static DROPPED: AtomicU64 = AtomicU64::new(0);
/// 0: follow `NUMAKIT_LOG`; 1: quiet; 2: verbose.
static VERBOSE: AtomicU8 = AtomicU8::new(0);
static ENV_VERBOSE: OnceLock<bool> = OnceLock::new();

/// Records a change: appends it to the list and, when verbose, prints it.
pub fn record(change: &Change) {
    let rec = ChangeRecord {
        seq: SEQ.fetch_add(1, Ordering::Relaxed),
        tid: crate::act::Pid::this_thread().as_raw(),
        call: change.call,
        target: change.target.clone(),
        detail: change.detail.clone(),
    };
    if verbose() {
        eprintln!("{rec}");
    }
    let mut list = RECORDS.lock().unwrap_or_else(PoisonError::into_inner);
    if list.len() >= MAX_RECORDS {
        list.pop_front();
        DROPPED.fetch_add(1, Ordering::Relaxed);
    }
    list.push_back(rec);
}

/// Removes and returns every kept record, oldest first.
pub fn take() -> Vec<ChangeRecord> {
    let mut list = RECORDS.lock().unwrap_or_else(PoisonError::into_inner);
    list.drain(..).collect()
}

/// A copy of every kept record, oldest first, leaving them in place.
pub fn peek() -> Vec<ChangeRecord> {
    let list = RECORDS.lock().unwrap_or_else(PoisonError::into_inner);
    list.iter().cloned().collect()
}

/// How many records were dropped because the list was full.
pub fn dropped() -> u64 {
    DROPPED.load(Ordering::Relaxed)
}

/// Turns printing of every change on standard error on or off, overriding
/// `NUMAKIT_LOG`.
pub fn set_verbose(on: bool) {
    VERBOSE.store(if on { 2 } else { 1 }, Ordering::Relaxed);
}

/// Whether changes are printed: [`set_verbose`] if it was called, else
/// whether `NUMAKIT_LOG` is `1` (read once).
pub fn verbose() -> bool {
    match VERBOSE.load(Ordering::Relaxed) {
        1 => false,
        2 => true,
        _ => *ENV_VERBOSE.get_or_init(|| std::env::var(LOG_ENV).is_ok_and(|v| env_says_on(&v))),
    }
}

fn env_says_on(v: &str) -> bool {
    matches!(v.trim().to_ascii_lowercase().as_str(), "1" | "true" | "yes" | "on")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::act::testutil::log_lock;
    use crate::act::Pid;

    fn mine(records: Vec<ChangeRecord>) -> Vec<ChangeRecord> {
        let me = Pid::this_thread().as_raw();
        records.into_iter().filter(|r| r.tid == me).collect()
    }

    #[test]
    fn record_then_take_in_order() {
        let _g = log_lock();
        let _ = take();
        record(&Change { call: "set_mempolicy", target: "self".into(), detail: "mode bind nodes 0".into() });
        record(&Change { call: "mbind", target: "self addr 0x1000 len 4096".into(), detail: "mode local".into() });
        assert_eq!(mine(peek()).len(), 2, "peek leaves records in place");
        let got = mine(take());
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].call, "set_mempolicy");
        assert_eq!(got[1].call, "mbind");
        assert!(got[0].seq < got[1].seq);
        assert_eq!(got[0].to_string(), "numakit: set_mempolicy self: mode bind nodes 0");
        assert!(mine(take()).is_empty(), "take drains");
    }

    #[test]
    fn list_is_bounded() {
        let _g = log_lock();
        let _ = take();
        let before = dropped();
        for i in 0..MAX_RECORDS + 10 {
            record(&Change { call: "mbind", target: "self".into(), detail: format!("n {i}") });
        }
        let got = take();
        assert_eq!(got.len(), MAX_RECORDS);
        assert!(dropped() >= before + 10);
        assert_eq!(got.last().map(|r| r.detail.clone()), Some(format!("n {}", MAX_RECORDS + 9)));
    }

    #[test]
    fn verbose_switch_and_env_values() {
        let _g = log_lock();
        let prev = VERBOSE.load(Ordering::Relaxed);
        set_verbose(true);
        assert!(verbose());
        record(&Change { call: "sched_setaffinity", target: "self".into(), detail: "cpus 0 (printed)".into() });
        set_verbose(false);
        assert!(!verbose());
        VERBOSE.store(prev, Ordering::Relaxed);
        let _ = take();
        assert!(env_says_on("1") && env_says_on(" TRUE\n") && env_says_on("yes"));
        assert!(!env_says_on("0") && !env_says_on("") && !env_says_on("no"));
    }

    #[test]
    fn records_serialize() {
        let r =
            ChangeRecord { seq: 3, tid: 7, call: "mbind", target: "self".into(), detail: "mode bind nodes 0".into() };
        let j = serde_json::to_string(&r).expect("json");
        assert_eq!(j, r#"{"seq":3,"tid":7,"call":"mbind","target":"self","detail":"mode bind nodes 0"}"#);
    }
}
