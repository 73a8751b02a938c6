//! Deciding placement: turning what a user asked for (numactl-style
//! options, I/O specifiers, `--auto` requests) into a [`Plan`] of CPUs and
//! a memory policy, with every check done before anything changes.
//!
//! Everything here is a pure function of its inputs (the machine model,
//! the allowed set, the kernel version, and for I/O specifiers a
//! [`SysRoot`](crate::sys::SysRoot) to look devices up). Applying a plan is
//! [`Plan::apply`], which goes through [`act`](crate::act).
//!
//! [`migrate`] plans moving a running process's memory the same way (the
//! target nodes, their free memory, the page ranges a move walks, shared
//! with the daemon's page mover) and applies it through `act`; [`pin`]
//! sets the CPUs of every thread of a running process.

pub mod auto;
pub mod iospec;
mod limits;
pub mod migrate;
pub mod near;
pub mod pin;
mod plan;
mod request;

pub use plan::{MemMode, MemPolicy, Plan};
pub use request::{nearest_memory_nodes, Context, OptKind, PlaceError, PolicyOpt, Request};
