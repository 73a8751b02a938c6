//! Buffer sizes of `numakit bench`: the defaults (STREAM's 4 × the
//! last-level cache; 256 MiB or 4 × the cache for the chase), fitted to
//! what the memory nodes have free, and the check of sizes the user gave.
//!
//! What a node has free is its `MemFree` plus its `Inactive(file)`, the
//! page cache the kernel reclaims first when a bound buffer asks for pages
//! (a node full of cache still runs the benchmark; active cache and slab
//! are left out, so the figure errs low). A default never makes a run
//! fail: where it does not fit in three quarters of the least a memory
//! node measured has free, it shrinks, and a note says what was used
//! instead of what and why. A size the user gave is refused when it does
//! not fit in what the node has free (with 5% to spare). Pure: decides from the [`Topology`] read before the
//! run; nothing is allocated here.

use super::BenchError;
use crate::topo::Topology;
use crate::units::human_bytes;

const MIB: u64 = 1 << 20;

/// The default array size of the bandwidth test: STREAM's rule, each
/// array at least 4 times the total last-level cache (rounded up to MiB);
/// 128 MiB when the caches are unknown.
pub fn default_array_bytes(topo: &Topology) -> u64 {
    match total_llc_bytes(topo) {
        Some(llc) => llc.saturating_mul(4).saturating_add(MIB - 1) / MIB * MIB,
        None => 128 * MIB,
    }
}

/// The default latency buffer: 256 MiB, or 4 times the total last-level
/// cache rounded up to a power of two when that is larger.
pub fn default_latency_bytes(topo: &Topology) -> u64 {
    let four_llc =
        total_llc_bytes(topo).map_or(0, |l| l.saturating_mul(4).checked_next_power_of_two().unwrap_or(1 << 63));
    four_llc.max(256 * MIB)
}

/// Sum of the sizes of the highest-level data or unified caches.
pub fn total_llc_bytes(topo: &Topology) -> Option<u64> {
    let data = |k: &str| k.eq_ignore_ascii_case("unified") || k.eq_ignore_ascii_case("data");
    let level = topo.caches.iter().filter(|c| data(&c.kind)).map(|c| c.level).max()?;
    let total = topo
        .caches
        .iter()
        .filter(|c| c.level == level && data(&c.kind))
        .filter_map(|c| c.size_bytes)
        .fold(0u64, u64::saturating_add);
    (total > 0).then_some(total)
}

/// Refuses when `node` has less free memory than `bytes` (plus 5%) by its
/// `MemFree`: the check of sizes the user gave.
pub(super) fn check_memory(topo: &Topology, node: u32, bytes: u64) -> Result<(), BenchError> {
    match free_bytes(topo, node) {
        Some(f) if f < bytes.saturating_add(bytes / 20) => Err(BenchError::Usage(format!(
            "node {node} has {} free, the buffers need {}: use a smaller --size",
            human_bytes(f),
            human_bytes(bytes)
        ))),
        _ => Ok(()),
    }
}

/// `MemFree` + `Inactive(file)` of `node` (`None`: no `MemFree`), the
/// one rule of [`NodeMemory::available_bytes`](crate::topo::NodeMemory::available_bytes).
fn free_bytes(topo: &Topology, node: u32) -> Option<u64> {
    topo.node(node).and_then(|n| n.memory.as_ref())?.available_bytes()
}

/// What default sizes may take: three quarters of the smallest `MemFree`
/// among `nodes`, with that node and its `MemFree` (`None` when no node
/// says).
fn budget(topo: &Topology, nodes: &[u32]) -> Option<(u64, u32, u64)> {
    let (node, free) = nodes.iter().filter_map(|&n| free_bytes(topo, n).map(|f| (n, f))).min_by_key(|x| x.1)?;
    Some((free / 4 * 3, node, free))
}

/// What the rule behind the default bandwidth array is.
fn array_rule(topo: &Topology) -> String {
    match total_llc_bytes(topo) {
        Some(llc) => format!("4 × the last-level cache of {}, STREAM's rule", human_bytes(llc)),
        None => "the size used when the caches are unknown".into(),
    }
}

/// The bandwidth test's array size: the one given (checked), or the
/// default fitted to `mem_nodes` (three arrays), with a note when it
/// shrank.
pub(super) fn array_bytes(
    topo: &Topology,
    given: Option<u64>,
    mem_nodes: &[u32],
) -> Result<(u64, Option<String>), BenchError> {
    if let Some(b) = given {
        for &m in mem_nodes {
            check_memory(topo, m, b.saturating_mul(3))?;
        }
        return Ok((b, None));
    }
    let wanted = default_array_bytes(topo);
    let Some((budget, node, free)) = budget(topo, mem_nodes) else { return Ok((wanted, None)) };
    if wanted.saturating_mul(3) <= budget {
        return Ok((wanted, None));
    }
    let fit = budget / 3 / MIB * MIB;
    if fit < MIB {
        return Err(too_little(node, free, "the bandwidth test's three arrays"));
    }
    Ok((
        fit,
        Some(format!(
            "arrays of {} each instead of {} ({}): node {node} has {} free and the three arrays are kept within \
             three quarters of it; arrays smaller than 4 × the last-level cache let part of the traffic hit the cache",
            human_bytes(fit),
            human_bytes(wanted),
            array_rule(topo),
            human_bytes(free)
        )),
    ))
}

/// The latency test's sizes: the ones given (the largest checked), or the
/// default fitted to `mem_nodes` (a power of two), with a note when it
/// shrank.
pub(super) fn latency_sizes(
    topo: &Topology,
    given: Option<&[u64]>,
    mem_nodes: &[u32],
) -> Result<(Vec<u64>, Option<String>), BenchError> {
    if let Some(sizes) = given {
        if let Some(&max) = sizes.iter().max() {
            for &m in mem_nodes {
                check_memory(topo, m, max)?;
            }
        }
        return Ok((sizes.to_vec(), None));
    }
    let wanted = default_latency_bytes(topo);
    let Some((budget, node, free)) = budget(topo, mem_nodes) else { return Ok((vec![wanted], None)) };
    if wanted <= budget {
        return Ok((vec![wanted], None));
    }
    let fit = prev_power_of_two(budget);
    if fit < MIB {
        return Err(too_little(node, free, "the latency test's buffer"));
    }
    Ok((vec![fit], Some(latency_note(topo, fit, wanted, node, free))))
}

fn latency_note(topo: &Topology, fit: u64, wanted: u64, node: u32, free: u64) -> String {
    let cache = match total_llc_bytes(topo) {
        Some(llc) if fit < llc.saturating_mul(4) => format!(
            "; a buffer smaller than 4 × the last-level cache ({}) lets part of the chase hit the cache",
            human_bytes(llc.saturating_mul(4))
        ),
        _ => String::new(),
    };
    format!(
        "a chase buffer of {} instead of {} (256 MiB, or 4 × the last-level cache when larger): node {node} has {} \
         free and the buffers are kept within three quarters of it{cache}",
        human_bytes(fit),
        human_bytes(wanted),
        human_bytes(free)
    )
}

/// The loaded-latency test's chased buffer and generator buffers: the
/// ones given (checked together), and the defaults shrunk by the same
/// factor where the total does not fit in `mem_node`, with a note.
pub(super) fn loaded_bytes(
    topo: &Topology,
    given: (Option<u64>, Option<u64>),
    generators: u64,
    mem_node: u32,
) -> Result<(u64, u64, Option<String>), BenchError> {
    let size = given.0.unwrap_or_else(|| default_latency_bytes(topo));
    let gen = given.1.unwrap_or_else(|| default_array_bytes(topo));
    let total = size.saturating_add(generators.saturating_mul(gen));
    let budget = budget(topo, &[mem_node]);
    let fits = budget.is_none_or(|(b, _, _)| total <= b);
    if fits || (given.0.is_some() && given.1.is_some()) {
        check_memory(topo, mem_node, total)?;
        return Ok((size, gen, None));
    }
    let (budget, node, free) = budget.unwrap_or((total, mem_node, total));
    // The chase shrinks with the generators (by the share of the budget
    // left after what was given), to a power of two; the generators take
    // what it leaves, at most their default.
    let fixed = given.0.unwrap_or(0).saturating_add(given.1.map_or(0, |g| generators.saturating_mul(g)));
    let room = budget.saturating_sub(fixed);
    let flexible = (total - fixed).max(1);
    let new_size = match given.0 {
        Some(s) => s,
        None => prev_power_of_two((u128::from(size) * u128::from(room) / u128::from(flexible)) as u64),
    };
    let new_gen = match given.1 {
        Some(g) => g,
        None => (budget.saturating_sub(new_size) / generators.max(1) / MIB * MIB).min(gen),
    };
    if new_size < MIB || (generators > 0 && new_gen < MIB) {
        return Err(too_little(node, free, "the loaded-latency test's buffers"));
    }
    check_memory(topo, mem_node, new_size.saturating_add(generators.saturating_mul(new_gen)))?;
    let mut parts = Vec::new();
    if new_size != size {
        parts.push(format!("a chase buffer of {} instead of {}", human_bytes(new_size), human_bytes(size)));
    }
    if new_gen != gen && generators > 0 {
        parts.push(format!("generator buffers of {} instead of {}", human_bytes(new_gen), human_bytes(gen)));
    }
    let note = format!(
        "{}: node {node} has {} free and the buffers are kept within three quarters of it",
        parts.join(" and "),
        human_bytes(free)
    );
    Ok((new_size, new_gen, Some(note)))
}

fn too_little(node: u32, free: u64, what: &str) -> BenchError {
    BenchError::Usage(format!("node {node} has {} free: too little for {what}", human_bytes(free)))
}

/// The largest power of two at most `n` (0 for 0).
fn prev_power_of_two(n: u64) -> u64 {
    if n == 0 {
        0
    } else {
        1 << (63 - n.leading_zeros())
    }
}
