//! Randomized NUMA experiments on a farm: the site's design ([`design`]),
//! its secret key ([`key`]), which arm a job gets where it starts
//! ([`assign`]), and the record each job step leaves
//! behind ([`record`]): the job's names as its batch system gives them
//! ([`ids`]), the host's hardware key ([`hardware`]) and the record built
//! from what its writer measured ([`outcome`]). A site's policy gives each
//! job class its mode with a standing holdout, or an experiment of its own
//! ([`policy`]); guards stop an arm that hurts a class ([`guard`]). The analysis of the
//! records is built on them (docs/experiments.md).
//!
//! Nothing here acts: the Slurm plugin and the job wrappers read the
//! step's cgroup ([`crate::stats::usage`]), place the job
//! ([`crate::batch`]) and append the line ([`crate::files::append_line`]).

pub mod assign;
pub mod design;
pub mod guard;
pub mod hardware;
pub mod ids;
pub mod key;
pub mod outcome;
pub mod policy;
pub mod record;

pub use design::{Arm, ArmKind, Assignment, Design};
pub use record::{ArmSource, Hardware, Numa, Placement, StepOutcome, Unit, SCHEMA};
