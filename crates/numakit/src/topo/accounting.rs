//! Whether the nodes' memory adds up to the machine's: the sum of every
//! `nodeN/meminfo` `MemTotal` beside `/proc/meminfo`'s `MemTotal`.
//!
//! Both count the pages the kernel manages, so on current kernels they are
//! equal. Older kernels counted a node's present pages, reserved ones
//! included (the kernel image, the page structs, a crash kernel), so the
//! nodes there add up to a few percent more than `/proc/meminfo` (up to
//! 3.4% among the real-machine dumps numakit is tested on). Nodes adding
//! up to less means memory no node accounts for: on virtual machines whose
//! firmware gives the nodes less than the guest has, or a dump missing a
//! node's folder. Hence the tolerance: a shortfall beyond
//! [`SHORTFALL_PCT`] or an excess beyond [`EXCESS_PCT`] of `MemTotal` does
//! not add up. Reads `/proc/meminfo` only; deciding is pure.

use serde::{Deserialize, Serialize};

use super::Node;
use crate::sys::{SysError, SysRoot};

/// The share of `MemTotal` (percent) the nodes may lack and still add up.
pub const SHORTFALL_PCT: f64 = 1.0;
/// The share of `MemTotal` (percent) the nodes may exceed it by and still
/// add up (reserved pages counted per node by older kernels).
pub const EXCESS_PCT: f64 = 10.0;

/// The nodes' memory beside the machine's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryAccounting {
    /// `/proc/meminfo` `MemTotal`.
    pub meminfo_total_bytes: u64,
    /// The sum of the nodes' `MemTotal`.
    pub nodes_total_bytes: u64,
}

impl MemoryAccounting {
    /// `MemTotal` minus the nodes' sum: positive when the nodes lack
    /// memory, negative when they count more.
    pub fn difference_bytes(&self) -> i128 {
        i128::from(self.meminfo_total_bytes) - i128::from(self.nodes_total_bytes)
    }

    /// The difference as a percentage of `MemTotal` (0 when it is 0).
    pub fn difference_pct(&self) -> f64 {
        if self.meminfo_total_bytes == 0 {
            return 0.0;
        }
        self.difference_bytes() as f64 / self.meminfo_total_bytes as f64 * 100.0
    }

    /// Whether the nodes add up within the tolerance.
    pub fn adds_up(&self) -> bool {
        let pct = self.difference_pct();
        pct <= SHORTFALL_PCT && -pct <= EXCESS_PCT
    }
}

/// The accounting of `nodes` against `/proc/meminfo`: `None` when the
/// root has no `/proc/meminfo`, or no node folder (then the one node shown
/// is `/proc/meminfo` itself), or a node with memory but no `meminfo`.
pub(super) fn read(sys: &SysRoot, numa_info: bool, nodes: &[Node]) -> Result<Option<MemoryAccounting>, SysError> {
    if !numa_info || nodes.iter().any(|n| n.has_memory && n.memory.is_none()) {
        return Ok(None);
    }
    let Some(kv) = sys.read_meminfo("proc/meminfo")? else { return Ok(None) };
    let Some(total) = kv.iter().find(|(k, _)| k == "MemTotal").map(|(_, v)| *v) else {
        return Err(sys.invalid("proc/meminfo", "no MemTotal line"));
    };
    let nodes_total = nodes.iter().filter_map(|n| n.memory).map(|m| m.total_bytes).sum();
    Ok(Some(MemoryAccounting { meminfo_total_bytes: total, nodes_total_bytes: nodes_total }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acc(meminfo_gib: f64, nodes_gib: f64) -> MemoryAccounting {
        let b = |g: f64| (g * (1u64 << 30) as f64) as u64;
        MemoryAccounting { meminfo_total_bytes: b(meminfo_gib), nodes_total_bytes: b(nodes_gib) }
    }

    #[test]
    fn tolerance() {
        assert!(acc(125.0, 125.0).adds_up());
        // An older kernel's reserved pages counted per node.
        assert!(acc(3.74, 3.87).adds_up());
        // Memory no node accounts for (issue 30's virtual machine and server).
        let vm = acc(23.5, 7.0);
        assert!(!vm.adds_up());
        assert_eq!(vm.difference_bytes(), i128::from(33u64 << 29));
        assert!((vm.difference_pct() - 70.2).abs() < 0.1, "{}", vm.difference_pct());
        assert!(!acc(125.0, 4.3).adds_up());
        assert!(acc(100.0, 99.01).adds_up() && !acc(100.0, 98.9).adds_up());
        assert!(acc(100.0, 109.9).adds_up() && !acc(100.0, 110.1).adds_up());
        assert_eq!(acc(0.0, 0.0).difference_pct(), 0.0);
    }
}
