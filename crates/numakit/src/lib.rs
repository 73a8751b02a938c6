//! numakit: a Linux NUMA toolkit as a library.
//!
//! The layers, each in its own module (see ARCHITECTURE.md):
//!
//! * [`sys`]: the one root-relative reader of `/sys` and `/proc`;
//! * [`sets`]: CPU and node sets and their syntaxes;
//! * [`topo`]: the machine model built from what `sys` reads;
//! * [`present`]: text, JSON and SVG views of the model (no I/O: they
//!   return strings).
//!
//! ```
//! use numakit::sets::CpuSet;
//! let s = CpuSet::parse_list("0-3,8").unwrap();
//! assert_eq!(s.to_mask(32), "0000010f");
//! ```

pub mod present;
pub mod sets;
pub mod sys;
pub mod topo;
