//! Randomized NUMA experiments on a farm: the site's design ([`design`]),
//! its secret key ([`key`]), which arm a job gets where it starts
//! ([`assign`], feature `experiment`), and the record each job step leaves
//! behind ([`record`]). The analysis of the records is built on them
//! (docs/experiments.md).

#[cfg(feature = "experiment")]
pub mod assign;
pub mod design;
pub mod key;
pub mod record;

pub use design::{Arm, ArmKind, Design};
pub use record::{ArmSource, Hardware, Numa, Placement, StepOutcome, Unit, SCHEMA};
