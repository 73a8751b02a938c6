//! QEMU test bed for numakit: boots a stock Debian kernel with a chosen NUMA
//! topology (under software emulation) and runs commands in it, with the host's root
//! shared read-only so host-built binaries run unchanged against the guest kernel.
//!
//! ```no_run
//! use numakit_testbed::{require_vm, RunSpec, Topology, Vm};
//!
//! require_vm!(); // skip (or fail under CI=true) when QEMU cannot run
//! let topo = Topology::named("2s-intel-ht").expect("named topology");
//! let out = Vm::run(&topo, RunSpec::command(["cat", "/sys/devices/system/node/node1/cpulist"]))
//!     .expect("numakit-vm runs");
//! assert_eq!(out.stdout.trim(), topo.cpulist(1));
//! ```
//!
//! The work is done by `testbed/numakit-vm` (see `docs/testbed.md`); this crate
//! describes topologies ([`Topology`]), validates them, builds that script's command
//! line and parses what comes back.
//!
//! [`slurm`] starts a real Slurm (munged, slurmctld, slurmd on loopback) for a test,
//! on the host or inside the guest, with its accounting in a real slurmdbd and
//! MariaDB when asked ([`slurmdbd`]).

pub mod slurm;
pub mod slurmdbd;
pub mod topology;
pub mod vm;

pub use topology::{cpulist, parse_cpulist, HmatLb, Node, Smp, Topology};
pub use vm::{require_vm_or_skip, vm_available, Output, RunSpec, Vm};

/// Errors of the test bed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The topology is invalid; the message names the node or distance.
    #[error("invalid topology: {0}")]
    Topology(String),
    /// `numakit-vm` could not be run.
    #[error("test bed: {0}")]
    Harness(String),
    /// A test Slurm could not start: what is missing, or the daemons' logs.
    #[error("test Slurm: {0}")]
    Slurm(String),
    /// The guest did not complete the checks (timeout 124, no report 125, ...).
    #[error("guest run failed with status {status}: {detail}")]
    Guest {
        /// Exit status of `numakit-vm`.
        status: i32,
        /// Output and console tail.
        detail: String,
    },
}

/// Returns from the calling test unless VM tests can run (see [`require_vm_or_skip`]):
/// prints why and skips, or panics under `CI=true`.
#[macro_export]
macro_rules! require_vm {
    () => {
        if !$crate::require_vm_or_skip() {
            return;
        }
    };
}
