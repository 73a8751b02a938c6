//! The AutoNUMA guard: with `autonuma = "disable"` the kernel's balancing
//! is turned off at start (its original value written ahead to the state
//! file) and restored on exit or when the mode changes; with `place-cpus`
//! and `defer` whatever an earlier `disable` run left changed is put back,
//! and a balancing kernel makes the daemon place CPUs only or decide and
//! log only ([`coexistence`]).

use super::{Service, ServiceError};
use crate::daemon::apply::write_global;
use crate::daemon::settings::{coexistence, AutonumaMode, Coexistence};
use crate::daemon::state::GlobalChange;

/// `kernel.numa_balancing`, relative to the root.
pub const NUMA_BALANCING: &str = "proc/sys/kernel/numa_balancing";

impl Service {
    /// `autonuma = "disable"`: turn the kernel's balancing off, recording
    /// the original (kept from an earlier run that did not exit cleanly).
    /// Otherwise: put back what an earlier `disable` run left changed.
    pub(super) fn globals_at_start(&mut self) -> Result<(), ServiceError> {
        let current = self.sys.read(NUMA_BALANCING).ok().flatten().map(|v| v.trim().to_string());
        match self.settings.autonuma {
            AutonumaMode::Disable if !self.dry_run => {
                let Some(cur) = current else { return Ok(()) };
                if cur != "0" {
                    if !self.state.globals.iter().any(|g| g.path == NUMA_BALANCING) {
                        self.state.globals.push(GlobalChange {
                            path: NUMA_BALANCING.into(),
                            original: cur.clone(),
                            set: "0".into(),
                        });
                        self.save()?;
                    }
                    write_global(&self.sys, NUMA_BALANCING, "0").map_err(|x| {
                        ServiceError(format!("cannot turn kernel AutoNUMA off ({NUMA_BALANCING}): {x}"))
                    })?;
                }
            }
            _ => self.restore_globals(),
        }
        Ok(())
    }

    /// Puts back every global setting numakit changed (only where it still
    /// holds numakit's value: someone else's later change wins).
    pub fn restore_globals(&mut self) {
        let mut left = Vec::new();
        for g in std::mem::take(&mut self.state.globals) {
            let cur = self.sys.read(&g.path).ok().flatten().map(|v| v.trim().to_string());
            if cur.as_deref() == Some(g.set.as_str()) && write_global(&self.sys, &g.path, &g.original).is_err() {
                left.push(g);
            }
        }
        self.state.globals = left;
        let _ = self.save();
    }

    /// What the daemon may do in this scan beside the kernel's balancing.
    pub(super) fn coexistence(&self) -> Coexistence {
        let v = self.sys.read(NUMA_BALANCING).ok().flatten().and_then(|v| v.trim().parse().ok());
        coexistence(self.settings.autonuma, v, self.settings.decide.use_cpuless_memory)
    }
}
