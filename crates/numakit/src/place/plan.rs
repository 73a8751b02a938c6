//! A placement plan: the CPUs to run on and the memory policy to set, as
//! decided; [`Plan::apply`] performs it on the calling thread (so a command
//! exec'ed afterwards inherits it) through the logged [`act`](crate::act)
//! layer, and [`Plan::numactl_args`] gives the equivalent numactl options.

use crate::act::{self, ActError};
use crate::sets::{CpuSet, NodeSet};

/// Memory policy modes a plan can set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemMode {
    /// MPOL_BIND.
    Bind,
    /// MPOL_PREFERRED (one node).
    Preferred,
    /// MPOL_PREFERRED_MANY.
    PreferredMany,
    /// MPOL_INTERLEAVE.
    Interleave,
    /// MPOL_WEIGHTED_INTERLEAVE.
    WeightedInterleave,
    /// MPOL_LOCAL.
    Local,
}

impl MemMode {
    /// The name numactl uses.
    pub fn name(self) -> &'static str {
        match self {
            MemMode::Bind => "bind",
            MemMode::Preferred => "preferred",
            MemMode::PreferredMany => "preferred-many",
            MemMode::Interleave => "interleave",
            MemMode::WeightedInterleave => "weighted-interleave",
            MemMode::Local => "local",
        }
    }
}

/// A memory policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemPolicy {
    /// Mode.
    pub mode: MemMode,
    /// Nodes (empty for `Local`).
    pub nodes: NodeSet,
    /// MPOL_F_NUMA_BALANCING.
    pub balancing: bool,
}

/// What to do before starting a command.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// CPUs to run on (`None`: leave the affinity alone).
    pub cpus: Option<CpuSet>,
    /// Memory policy (`None`: leave it alone).
    pub memory: Option<MemPolicy>,
}

impl Plan {
    /// Applies the plan to the calling thread: memory policy first, then
    /// CPU affinity. If the affinity fails after the policy was set, the
    /// policy is put back to what it was, so nothing is half-applied.
    pub fn apply(&self) -> Result<(), ActError> {
        use act::mempolicy::{self, Mode, ModeFlags};
        let before = if self.memory.is_some() { Some(mempolicy::get_mempolicy()?) } else { None };
        if let Some(m) = &self.memory {
            let mode = match m.mode {
                MemMode::Bind => Mode::Bind,
                MemMode::Preferred => Mode::Preferred,
                MemMode::PreferredMany => Mode::PreferredMany,
                MemMode::Interleave => Mode::Interleave,
                MemMode::WeightedInterleave => Mode::WeightedInterleave,
                MemMode::Local => Mode::Local,
            };
            let flags = ModeFlags { numa_balancing: m.balancing, ..ModeFlags::default() };
            mempolicy::set_mempolicy(mode, flags, &m.nodes)?;
        }
        if let Some(c) = &self.cpus {
            if let Err(e) = act::affinity::set_affinity(act::Pid::SELF, c) {
                if let Some(p) = before {
                    let _ = mempolicy::set_mempolicy(p.mode, p.flags, &p.nodes);
                }
                return Err(e);
            }
        }
        Ok(())
    }

    /// The numactl options that do the same (for `--dry-run` output).
    pub fn numactl_args(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(c) = &self.cpus {
            out.push(format!("--physcpubind={}", c.to_list()));
        }
        if let Some(m) = &self.memory {
            if m.balancing {
                out.push("--balancing".into());
            }
            let n = m.nodes.to_list();
            out.push(match m.mode {
                MemMode::Bind => format!("--membind={n}"),
                MemMode::Preferred => format!("--preferred={n}"),
                MemMode::PreferredMany => format!("--preferred-many={n}"),
                MemMode::Interleave => format!("--interleave={n}"),
                MemMode::WeightedInterleave => format!("--weighted-interleave={n}"),
                MemMode::Local => "--localalloc".into(),
            });
        }
        out
    }
}
