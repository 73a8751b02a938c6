//! Deciding placement: turning what a user asked for (numactl-style
//! options, I/O specifiers, `--auto` requests) into a [`Plan`] of CPUs and
//! a memory policy, with every check done before anything changes.
//!
//! Everything here is a pure function of its inputs (the machine model,
//! the allowed set, the kernel version, and for I/O specifiers a
//! [`SysRoot`](crate::sys::SysRoot) to look devices up). Applying a plan is
//! [`Plan::apply`], which goes through [`act`](crate::act).

pub mod auto;
pub mod iospec;
mod limits;
mod plan;
mod request;

pub use plan::{MemMode, MemPolicy, Plan};
pub use request::{nearest_memory_nodes, parse_kernel_version, Context, OptKind, PlaceError, PolicyOpt, Request};
