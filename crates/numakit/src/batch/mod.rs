//! Placing the jobs a batch system starts (Slurm's SPANK plugin, the job
//! wrappers of HTCondor, LSF and PBS, `numakit run --auto` inside a job):
//! what a job may ask for ([`mode`]), the host's load as the placement
//! rules see it ([`load`]), the host-local record of the placements made
//! so that jobs starting together see each other ([`ledger`]), and one
//! task's decision and its application ([`task`]).
//!
//! The decisions are [`crate::place::auto`]'s rules and pure functions
//! ([`task::decide_task`], [`load::with_claims`]); reading goes through
//! [`SysRoot`](crate::sys::SysRoot), changing the placement through
//! [`Plan::apply`](crate::place::Plan::apply) and the `act` layer.

pub mod devices;
pub mod env;
pub mod gres;
pub mod ledger;
pub mod load;
pub mod mode;
pub mod task;

pub use ledger::JobStep;
pub use mode::{JobMode, Site};
pub use task::{
    commit, decide_task, exclude_from_daemon, place_task, prepare, within_job, JobError, Placed, Prepared,
    TaskDecision, TaskInfo,
};
