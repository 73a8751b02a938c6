//! A process's memory per node and its memory policy, from its
//! `numa_maps` text (pure).

use std::collections::BTreeMap;

use crate::act::mempolicy::{Mode, Policy};
use crate::daemon::snapshot::MemPolicy;
use crate::procs::numa_maps;
use crate::stats;

/// Memory per node and the memory policy of a process from its
/// `numa_maps`: the policy is the one over most of its own memory
/// (anonymous, heap, stack, huge, shared memory). Pages of files that
/// other processes map too are left out.
pub fn memory_of(text: &str) -> (BTreeMap<u32, u64>, MemPolicy) {
    let mut per_node: BTreeMap<u32, u64> = BTreeMap::new();
    let mut by_policy: BTreeMap<&str, u64> = BTreeMap::new();
    for v in numa_maps::views(text) {
        let own = match v.kind {
            numa_maps::KindView::File(path) => stats::process::is_shared_memory_path(path),
            _ => true,
        };
        // Pages of a file other processes map too (shared libraries, the
        // binary of many copies of a job) are not this process's to place:
        // pulled to its node they are pulled away from the others, who pull
        // them back (as root `migrate_pages` moves shared pages as well).
        if !own && v.anon_pages == 0 && v.mapmax > 1 {
            continue;
        }
        let mut bytes = 0u64;
        for (node, b) in v.bytes_per_node() {
            let e = per_node.entry(node).or_default();
            *e = e.saturating_add(b);
            bytes = bytes.saturating_add(b);
        }
        if own {
            let e = by_policy.entry(v.policy).or_default();
            *e = e.saturating_add(bytes.max(1));
        }
    }
    let main = by_policy.iter().max_by_key(|(_, b)| **b).map_or("default", |(p, _)| *p);
    (per_node, parse_policy(main))
}

/// A policy as `numa_maps` prints it (`default`, `local`, `bind:0-1`,
/// `prefer:1`, `prefer (many):1-2`, `interleave:0-3`,
/// `weighted interleave:0-1`; flags like `=static` after the mode), read
/// by the one policy parser ([`Policy`]'s); text no kernel writes is
/// [`MemPolicy::Default`].
pub fn parse_policy(s: &str) -> MemPolicy {
    let Ok(p) = s.parse::<Policy>() else { return MemPolicy::Default };
    match p.mode {
        Mode::Bind => MemPolicy::Bind(p.nodes),
        Mode::Preferred | Mode::PreferredMany => MemPolicy::Preferred(p.nodes),
        Mode::Interleave | Mode::WeightedInterleave => MemPolicy::Interleave(p.nodes),
        Mode::Local => MemPolicy::Local,
        Mode::Default => MemPolicy::Default,
    }
}
