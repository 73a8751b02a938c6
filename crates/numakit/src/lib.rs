//! numakit: a Linux NUMA toolkit as a library.
//!
//! The layers, each in its own module (see ARCHITECTURE.md):
//!
//! * [`sys`]: the one root-relative reader of `/sys` and `/proc`;
//! * [`sets`]: CPU and node sets and their syntaxes;
//! * [`topo`]: the machine model built from what `sys` reads;
//! * [`procs`]: processes and threads under `/proc/PID` (status, last CPU,
//!   `numa_maps`);
//! * [`place`]: pure decisions: placement options and `--auto` into a
//!   plan, with every check made before anything changes;
//! * [`act`]: the few syscalls that change placement (memory policy,
//!   affinity, page migration), each logged;
//! * [`present`]: text, JSON and SVG views of the model (no I/O: they
//!   return strings).
//!
//! ```
//! use numakit::sets::CpuSet;
//! let s = CpuSet::parse_list("0-3,8").unwrap();
//! assert_eq!(s.to_mask(32), "0000010f");
//! ```

pub mod act;
pub mod bench;
pub mod compare;
pub mod place;
pub mod present;
pub mod procs;
pub mod sets;
pub mod stats_math;
pub mod sys;
pub mod topo;
pub mod tune;
