//! Randomized NUMA experiments on a farm: the record each job step leaves
//! behind ([`record`]). Assigning arms where jobs start and analysing the
//! records are built on it (docs/experiments.md).

pub mod record;

pub use record::{ArmSource, Hardware, Numa, Placement, StepOutcome, Unit, SCHEMA};
