//! numakit: a Linux NUMA toolkit as a library.
//!
//! The layers, each in its own module (see ARCHITECTURE.md). The default
//! build holds what a program that only wants the machine needs: its model,
//! the reader, and placement (what `numakit topo`, `run` and `show` use):
//!
//! * [`units`]: sizes, bytes and times as people type and read them;
//! * [`files`]: numakit's own state files, replaced durably, and files a
//!   user names, read with bounds;
//! * [`beneath`]: paths opened below a root without leaving it;
//! * [`text`]: outside text made safe for a one-line message;
//! * [`sys`]: the one root-relative reader of `/sys` and `/proc`;
//! * [`sets`]: CPU and node sets and their syntaxes;
//! * [`topo`]: the machine model built from what `sys` reads;
//! * [`procs`]: processes and threads under `/proc/PID` (status, last CPU,
//!   `numa_maps`, cgroup);
//! * [`place`]: pure decisions: placement options and `--auto` into a
//!   plan, with every check made before anything changes;
//! * [`act`]: the few syscalls that change placement (memory policy,
//!   affinity, page migration) and write kernel knobs, each logged;
//! * [`present`]: text and JSON views of the model (`numactl --hardware`,
//!   `--show`, the topology's text and JSON; no I/O: they return strings).
//!
//! Behind cargo features (none is on by default; each crate of the
//! workspace turns on those it uses, the `numakit` binary all but
//! `synth` and `experiment`):
//!
//! * `stats`: `stats`, NUMA counters, per-node memory, AutoNUMA activity,
//!   per-process and per-cgroup memory per node with locality, and rates
//!   between samples (what `stat`, `top` and the exporter show), with
//!   their views `present::{stat, cgroup, top}`;
//! * `daemon` (with `stats`, `toml`): `daemon`, the automatic-placement
//!   daemon: its decision core, a pure function from machine, scan
//!   snapshot, configuration and history to actions (bind, migrate,
//!   revert) with reasons and expected gains, the collector, the service,
//!   the control socket and its client; `present::daemon`;
//! * `batch` (with `daemon`): `batch`, placing the tasks a batch system
//!   starts (modes, the host's job ledger, the daemon's view of the load);
//! * `tune` (with `toml`): `tune`, kernel NUMA knobs: show, checked
//!   set/apply with a state file so every change can be reverted,
//!   profiles, readiness check;
//! * `irq` (with `tune`): `irq`, every device's interrupts seen from its
//!   node, and `present::irq`;
//! * `svg`: `present::svg`, a picture of packages, nodes, cores and PUs;
//! * `experiment` (with `batch`, `hmac`, `sha2`): `experiment`,
//!   randomized NUMA experiments on a farm: the site's design, the keyed
//!   draw of a job's arm, each job step's outcome record and what fills it;
//! * `synth`: `topo::synth`, synthetic sysfs/procfs trees of described
//!   machines, for tests and the simulator (`numakit-sim`);
//! * `stats_math`: `stats_math`, statistics of measurements (mean, median,
//!   standard error, Student-t intervals, Welch's t-test, the exact sign
//!   test, runs needed), with `statrs`;
//! * `measure` (with `stats_math`, `rand`, `regex`, `toml`): `bench`,
//!   memory bandwidth (STREAM kernels) and latency (pointer chase) between
//!   every CPU node and memory node, returned as plain result structs, and
//!   `compare`, a workload under several configurations run in
//!   interleaved order with statistics of which is better and how sure;
//!   `present::bench` and `present::compare` render them;
//! * `plot` (with `measure`, `plotters`): `present::plot`, the bench
//!   results as SVG charts;
//! * `prometheus` (with `stats`): `present::prometheus`, the exporter's
//!   text exposition.
//!
//! ```
//! use numakit::sets::CpuSet;
//! let s = CpuSet::parse_list("0-3,8").unwrap();
//! assert_eq!(s.to_mask(32), "0000010f");
//! ```

#![deny(missing_docs)]

pub mod act;
#[cfg(feature = "batch")]
pub mod batch;
#[cfg(feature = "measure")]
pub mod bench;
pub mod beneath;
#[cfg(feature = "measure")]
pub mod compare;
#[cfg(feature = "daemon")]
pub mod daemon;
#[cfg(feature = "experiment")]
pub mod experiment;
pub mod files;
#[cfg(feature = "irq")]
pub mod irq;
pub mod place;
pub mod present;
pub mod procs;
pub mod sets;
#[cfg(feature = "stats")]
pub mod stats;
#[cfg(feature = "stats_math")]
pub mod stats_math;
pub mod sys;
pub mod text;
pub mod topo;
#[cfg(feature = "tune")]
pub mod tune;
pub mod units;
