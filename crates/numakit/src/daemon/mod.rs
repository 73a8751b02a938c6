//! Automatic placement that does no harm: the daemon's decision core and
//! the layers around it.
//!
//! # The decision core
//!
//! `decide(&Machine, &Snapshot, &Config, &History) -> Decision` ([`decide`])
//! is pure and deterministic: it neither reads nor changes the system, the
//! same inputs give the same decision, and the order in which a snapshot
//! lists nodes and processes does not matter. Two callers feed it the same
//! types: the daemon, through its collector ([`collect`]: `/proc` and `/sys`
//! read through a [`SysRoot`](crate::sys::SysRoot)), and the simulator
//! (`numakit-sim`: its model of a farm, in simulated time).
//!
//! Inputs, and what each promises:
//!
//! * [`Machine`]: the nodes in id order, each its own size (CPU count and
//!   memory; memory-less CPU nodes and CPU-less memory nodes allowed), the
//!   firmware distances, and optionally measured access-time ratios. Ids
//!   are sorted and distinct and the matrices square ([`Machine::new`]
//!   checks). A node is named by its kernel id (`u32`, in a
//!   [`NodeSet`](crate::sets::NodeSet); ids may be sparse) or by its
//!   position ([`NodePos`]: dense, the index of every [`PerNode`] vector
//!   and [`NodeMatrix`]); [`Machine::index`] and [`Machine::id`] convert,
//!   and the compiler keeps the two apart.
//! * [`Snapshot`]: one scan, on a clock that survives restarts. Per node
//!   (by id) its idle CPUs and free memory (a node not listed has none
//!   free); per process its threads, CPU use and run-queue wait over the
//!   window, RSS and memory per node, where its threads ran, affinity,
//!   cpuset, memory policy, whether its owner placed it, age, progress and
//!   memory stall share; the watched processes that exited since the last
//!   scan.
//! * [`Config`]: every number a decision uses, each with its source.
//! * [`History`]: what earlier decisions left, in two halves. [`Observed`]:
//!   what the scans saw (each process's identity, last main node and size,
//!   the scheduler drift, the run times of commands seen to end).
//!   [`Committed`]: what numakit did (placements and the pages they still
//!   owe, reverts, harm and what is left alone because of it, memory marked
//!   slow, pages migrated). Serialisable (JSON); the daemon persists it.
//!
//! Output: a [`Decision`]. Its [`Action`]s, in the order to apply them
//! (bind CPUs and preferred memory to nodes, migrate N pages from node A to
//! node B, revert an earlier move, or keep), each carry their reason as
//! data ([`Why`], printed on demand) and their expected gain. Its history
//! is the next call's input and assumes every action is applied: a caller
//! that applies nothing (dry run, deferring to AutoNUMA) keeps
//! `History { observed: decision.history.observed, ..previous }`, and one
//! whose action failed corrects the committed half ([`service`] does both).
//!
//! # The rules, in short
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
//! # Around it, in layers
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
