//! Automatic placement that does no harm: the daemon's decision core.
//!
//! [`decide`] is a pure, deterministic function of
//!
//! * the [`Machine`] (nodes of any size, memory-less CPU nodes, CPU-less
//!   memory nodes, firmware distances and optionally measured access-time
//!   ratios),
//! * a [`Snapshot`] of one scan (free CPUs and memory per node; per process
//!   its threads, CPU use over the window, RSS and memory per node, where
//!   its threads ran, affinity, cpuset, memory policy, owner placement, age,
//!   progress and memory stall share),
//! * the [`Config`] (every threshold documented with its source), and
//! * the [`History`] of earlier moves (serialisable: a daemon persists it),
//!
//! to a list of [`Action`]s (bind CPUs and preferred memory to nodes,
//! migrate N pages from node A to node B, revert an earlier move, or keep)
//! each with its reason ([`Why`]) and expected gain, and the next history.
//!
//! The rules, in short:
//!
//! * **Candidates**: long-running (`min_age_s`), above numad's thresholds
//!   (half a CPU, 300 MB), not excluded (pid, comm, cgroup, uid), not placed
//!   by their owner (a restricted affinity or a memory policy numakit did
//!   not set) unless configured.
//! * **Targets**: nodes with room for the process's CPU use (idle CPUs plus
//!   its own) and its memory (free minus a margin), by the real distances or
//!   measured ratios, each node its own size; memory-less CPU nodes take
//!   memory from their nearest memory node; CPU-less memory nodes never get
//!   CPUs, and memory only when configured. Bound (unmovable) CPU load on a
//!   node never exceeds its CPUs.
//! * **Cost and benefit**: expected speed-up = from the access-time ratio now
//!   and after, weighted by the measured share of cycles stalled on memory
//!   (assumed when there are no counters), plus protection from the
//!   scheduler drift observed so far; it must beat the cost of moving the
//!   pages over a horizon, by a factor: the process's expected remaining
//!   run time, its age (capped) or less when the runs of its command name
//!   seen to end say it will end sooner.
//!   Stickiness and a cool-down per process; a global budget of pages per
//!   second.
//! * **Do no harm**: after a move settles, progress (instructions when
//!   counted, else CPU time) is compared with before; a drop past
//!   `harm_threshold` reverts it and leaves the process alone for a while,
//!   and after repeated harm its command name too.
//!
//! [`decide`] neither reads nor changes the system. Around it, in layers:
//!
//! * [`collect`]: the read layer, one scan of `/proc` and `/sys` (through
//!   a [`SysRoot`](crate::sys::SysRoot)) into a [`Snapshot`], `numa_maps`
//!   only for candidates;
//! * [`apply`]: the acting layer, through the logged wrappers of
//!   [`act`](crate::act), every result read back;
//! * [`state`]: what survives a restart (history, `ctl` lists, originals,
//!   changed globals), written ahead of every action;
//! * [`service`]: one scan after another, decision log, status, control
//!   requests; [`protocol`]: what the control socket carries, typed;
//!   [`ctl`]: the socket, its access check and the client;
//! * [`settings`]: the configuration file.

mod action;
pub mod apply;
pub mod collect;
mod config;
pub mod ctl;
mod decide;
mod history;
mod machine;
pub mod protocol;
pub mod service;
pub mod sets_serde;
pub mod settings;
mod snapshot;
pub mod state;

pub use action::{Action, ActionKind, Why};
pub use config::Config;
pub use decide::{decide, Decision};
pub use history::{
    CommHarms, CommRuns, Committed, History, Observed, Placement, ProcCommitted, ProcObserved, HISTORY_VERSION,
};
pub use machine::{Machine, MachineError, MachineNode, NodeMatrix, NodePos, PerNode};
pub use snapshot::{MemPolicy, NodeState, ProcInfo, Progress, Snapshot};

#[cfg(test)]
mod runtime_tests;
