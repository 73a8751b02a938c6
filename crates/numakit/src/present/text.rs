//! The human view of `numakit topo`: a summary line (and a line when the
//! nodes' memory does not add up to `/proc/meminfo`'s), one row per node
//! (CPU ranges, memory, free memory, memory tier where the kernel has
//! memory tiering, huge pages, devices) and a line of the PCI devices on no
//! node, the distance matrix (a compact per-node form beyond 16 nodes),
//! the HMAT figures where the firmware gives them (each memory node's
//! latency and bandwidth from its best initiators), packages → nodes →
//! cores → PUs with the nodes without CPUs under the package of the CPU
//! nodes they are local to (as hwloc places them), caches, and the allowed
//! set when a cpuset restricts it.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::human_bytes;
use crate::sets::{CpuSet, NodeSet};
use crate::topo::{AccessClass, LocalBy, MemoryAccounting, Node, Topology};

/// Nodes beyond which the distance matrix is shown in compact form.
pub const MATRIX_MAX_NODES: usize = 16;

/// Renders the human view.
pub fn render(topo: &Topology) -> String {
    let mut out = String::new();
    let online = topo.online_cpus.len();
    let _ = writeln!(
        out,
        "Machine: {} package{}, {} node{}, {}, {} CPUs ({} online), {} memory",
        topo.packages.len(),
        plural(topo.packages.len()),
        topo.nodes.len(),
        plural(topo.nodes.len()),
        // Zero cores means the kernel did not group the CPUs into cores.
        match topo.core_count() {
            0 => "cores unknown".to_string(),
            n => format!("{n} core{}", plural(n)),
        },
        topo.possible_cpus.len(),
        online,
        human_bytes(topo.total_memory_bytes()),
    );
    if !topo.source.live {
        let _ = writeln!(out, "Source: {} (a dump, not this system)", topo.source.sysroot);
    }
    if !topo.numa_info {
        out.push_str("No NUMA information (no sys/devices/system/node): shown as one node.\n");
    }
    if let Some(line) = topo.memory_accounting.as_ref().and_then(accounting_line) {
        let _ = writeln!(out, "{line}");
    }
    out.push('\n');
    node_table(topo, &mut out);
    if let Some(line) = no_node_line(topo) {
        let _ = writeln!(out, "{line}");
    }
    gpus(topo, &mut out);
    out.push('\n');
    distances(topo, &mut out);
    out.push('\n');
    if hmat(topo, &mut out) {
        out.push('\n');
    }
    packages(topo, &mut out);
    caches(topo, &mut out);
    let all_nodes = topo.node_ids();
    if topo.allowed.cpus != topo.online_cpus || topo.allowed.nodes != all_nodes {
        let _ = writeln!(
            out,
            "\nAllowed by cpuset ({}): CPUs {}, nodes {}",
            topo.allowed.from,
            or_dash(&topo.allowed.cpus.to_list()),
            or_dash(&topo.allowed.nodes.to_list())
        );
    }
    out
}

/// What to say when the nodes' `MemTotal` do not add up to
/// `/proc/meminfo`'s (`None`: they do, within the tolerance).
pub fn accounting_line(a: &MemoryAccounting) -> Option<String> {
    if a.adds_up() {
        return None;
    }
    let diff = a.difference_bytes();
    let (amount, side) = (human_bytes(diff.unsigned_abs().try_into().unwrap_or(u64::MAX)), diff > 0);
    Some(format!(
        "Memory: the nodes' MemTotal add up to {}, {amount} ({:.1}%) {} /proc/meminfo's MemTotal of {}{}",
        human_bytes(a.nodes_total_bytes),
        a.difference_pct().abs(),
        if side { "less than" } else { "more than" },
        human_bytes(a.meminfo_total_bytes),
        if side { ": no node accounts for that memory" } else { "" }
    ))
}

/// Devices shown on no node: at most this many named, then a count.
const NO_NODE_SHOWN: usize = 12;

/// `No node (numa_node -1): ...` when some device has no node.
fn no_node_line(topo: &Topology) -> Option<String> {
    let all = topo.devices_without_node();
    if all.is_empty() {
        return None;
    }
    let shown: Vec<String> = all.iter().take(NO_NODE_SHOWN).map(|d| d.label()).collect();
    let mut line = format!("No node (numa_node -1): {}", shown.join(", "));
    if all.len() > NO_NODE_SHOWN {
        let _ = write!(line, " and {} more (topo --json lists them)", all.len() - NO_NODE_SHOWN);
    }
    Some(line)
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

fn or_dash(s: &str) -> &str {
    if s.is_empty() {
        "-"
    } else {
        s
    }
}

fn node_table(topo: &Topology, out: &mut String) {
    let mut devs: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    for d in &topo.pci_devices {
        if let Some(n) = d.numa_node {
            devs.entry(n).or_default().extend(d.netdevs.iter().chain(&d.blockdevs).cloned());
        }
    }
    // The tier column only where the kernel has memory tiering.
    let tiers = topo.nodes.iter().any(|n| n.memory_tier.is_some());
    let rows: Vec<Vec<String>> = topo
        .nodes
        .iter()
        .map(|n| {
            let mut cpus = or_dash(&n.cpus.to_list()).to_string();
            if !n.has_cpu {
                cpus = match (n.has_memory, n.generic_initiator) {
                    (true, _) => "- (memory only)",
                    (false, true) => "- (generic initiator)",
                    (false, false) => "- (no CPUs)",
                }
                .into();
            }
            let (total, free) = match n.memory {
                Some(m) if n.has_memory => (human_bytes(m.total_bytes), m.free_bytes.map_or("?".into(), human_bytes)),
                Some(_) => ("0 (no memory)".into(), "-".into()),
                None => ("?".into(), "?".into()),
            };
            let huge: Vec<String> = n
                .hugepages
                .iter()
                .filter(|h| h.total > 0)
                .map(|h| format!("{}x{}", h.total, short_size(h.size_bytes)))
                .collect();
            let d = devs.get(&n.id).map(|v| v.join(",")).unwrap_or_default();
            let mut row = vec![n.id.to_string(), cpus, total, free];
            if tiers {
                row.push(n.memory_tier.map_or("-".into(), |t| t.to_string()));
            }
            row.extend([or_dash(&huge.join(" ")).to_string(), or_dash(&d).to_string()]);
            row
        })
        .collect();
    let mut header = vec!["NODE", "CPUS", "MEMORY", "FREE"];
    if tiers {
        header.push("TIER");
    }
    header.extend(["HUGEPAGES", "DEVICES"]);
    let right = |i: usize| i == 2 || i == 3 || (tiers && i == 4);
    let header: Vec<String> = header.into_iter().map(String::from).collect();
    table(&header, &rows, right, "", out);
}

/// The GPUs per node, where the machine has any: `  node 0: 0000:1b:00.0
/// NVIDIA H100 80GB HBM3 (/dev/nvidia1)`, with the memory-only node its
/// memory is onlined as (Grace Hopper, GB200).
fn gpus(topo: &Topology, out: &mut String) {
    if topo.gpus.is_empty() {
        return;
    }
    let _ = writeln!(out, "GPUs:");
    let mut sorted: Vec<_> = topo.gpus.iter().collect();
    sorted.sort_by_key(|g| (g.numa_node.is_none(), g.numa_node, g.address.clone()));
    for g in sorted {
        let place = g.numa_node.map_or("no node".into(), |n| format!("node {n}"));
        let mut files: Vec<String> = g.minor.iter().map(|m| format!("/dev/nvidia{m}")).collect();
        files.extend(g.render.iter().chain(&g.card).map(|r| format!("/dev/dri/{r}")));
        let mut line = format!("  {place}: {}", g.address);
        if let Some(m) = &g.model {
            let _ = write!(line, " {m}");
        }
        if !files.is_empty() {
            let _ = write!(line, " ({})", files.join(", "));
        }
        if let Some(n) = g.memory_node {
            let _ = write!(line, ", its memory node {n}");
        }
        let _ = writeln!(out, "{line}");
    }
}

/// Writes rows under a header, each line starting with `indent`: columns
/// two spaces apart, `right(i)` ones right-aligned, the last one as it is,
/// trailing blanks cut.
fn table(header: &[String], rows: &[Vec<String>], right: impl Fn(usize) -> bool, indent: &str, out: &mut String) {
    let mut w: Vec<usize> = header.iter().map(String::len).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(c.len());
        }
    }
    let last = header.len() - 1;
    for cells in std::iter::once(header).chain(rows.iter().map(Vec::as_slice)) {
        let mut s = String::from(indent);
        for (i, c) in cells.iter().enumerate() {
            if i == last {
                s.push_str(c);
            } else if right(i) {
                let _ = write!(s, "{:>width$}  ", c, width = w[i]);
            } else {
                let _ = write!(s, "{:<width$}  ", c, width = w[i]);
            }
        }
        let _ = writeln!(out, "{}", s.trim_end());
    }
}

fn short_size(b: u64) -> String {
    if b >= 1 << 30 {
        format!("{}G", b >> 30)
    } else if b >= 1 << 20 {
        format!("{}M", b >> 20)
    } else {
        format!("{}K", b >> 10)
    }
}

fn distances(topo: &Topology, out: &mut String) {
    let src = if topo.has_distances { "firmware SLIT" } else { "none given; kernel defaults" };
    let _ = writeln!(out, "Distances ({src}):");
    let ids: Vec<u32> = topo.nodes.iter().map(|n| n.id).collect();
    if ids.len() <= MATRIX_MAX_NODES {
        let w = ids
            .iter()
            .map(|i| i.to_string().len())
            .chain(topo.distances.iter().flatten().map(|d| d.to_string().len()))
            .max()
            .unwrap_or(2)
            .max(2);
        let _ = write!(out, "{:>w$} ", "", w = w + 2);
        for i in &ids {
            let _ = write!(out, " {i:>w$}");
        }
        out.push('\n');
        for (i, row) in ids.iter().zip(&topo.distances) {
            let _ = write!(out, "  {i:>w$} ");
            for d in row {
                let _ = write!(out, " {d:>w$}");
            }
            out.push('\n');
        }
    } else {
        // One line per node: the other nodes grouped by distance.
        for (i, row) in ids.iter().zip(&topo.distances) {
            let mut by: BTreeMap<u32, CpuSet> = BTreeMap::new();
            for (j, d) in ids.iter().zip(row) {
                if j != i {
                    by.entry(*d).or_default().insert(*j);
                }
            }
            let parts: Vec<String> = by.iter().map(|(d, s)| format!("{d}: {}", s.to_list())).collect();
            let _ = writeln!(out, "  node {i:>3} -> {}", parts.join("; "));
        }
    }
}

/// The HMAT figures, one row per memory node and access class with
/// figures: the best initiators and their read and write latency and
/// bandwidth. A node's class 0 (any initiator) is shown apart from its
/// class 1 (CPU initiators) only where they differ. Writes nothing and
/// returns false where the firmware gives no figures.
fn hmat(topo: &Topology, out: &mut String) -> bool {
    let mut rows: Vec<Vec<String>> = Vec::new();
    for n in &topo.nodes {
        // CPU initiators (class 1) first: what a job's threads see.
        let mut known: Vec<&AccessClass> = n.access.iter().filter(|a| has_figures(a)).collect();
        known.sort_by_key(|a| (a.class != 1, a.class));
        let same = known.len() == 2 && same_access(known[0], known[1]);
        let shown = if same { &known[..1] } else { &known[..] };
        for (i, a) in shown.iter().enumerate() {
            let label = match (shown.len(), a.class) {
                (1, _) => "",
                (_, 0) => " (any initiator)",
                (_, 1) => " (CPU initiators)",
                _ => " (other initiators)",
            };
            rows.push(vec![
                if i == 0 { n.id.to_string() } else { String::new() },
                if a.initiators.is_empty() { "-".into() } else { format!("{}{label}", nodes_word(&a.initiators)) },
                figure_pair(a.read_latency_ns, a.write_latency_ns, |ns| format!("{ns} ns")),
                figure_pair(a.read_bandwidth_mbps, a.write_bandwidth_mbps, |m| {
                    human_bytes(m.saturating_mul(1 << 20)) + "/s"
                }),
            ]);
        }
    }
    if rows.is_empty() {
        return false;
    }
    out.push_str("Memory performance (firmware HMAT, from each node's best initiators):\n");
    let header: Vec<String> = ["NODE", "FROM", "LATENCY", "BANDWIDTH"].map(String::from).to_vec();
    table(&header, &rows, |i| i == 2, "  ", out);
    true
}

/// Whether the firmware gave any figure (the kernel writes 0 for one it
/// was not given).
fn has_figures(a: &AccessClass) -> bool {
    [a.read_latency_ns, a.write_latency_ns, a.read_bandwidth_mbps, a.write_bandwidth_mbps]
        .iter()
        .any(|v| v.is_some_and(|v| v > 0))
}

fn same_access(a: &AccessClass, b: &AccessClass) -> bool {
    (a.initiators.clone(), a.read_latency_ns, a.write_latency_ns, a.read_bandwidth_mbps, a.write_bandwidth_mbps)
        == (b.initiators.clone(), b.read_latency_ns, b.write_latency_ns, b.read_bandwidth_mbps, b.write_bandwidth_mbps)
}

/// `26 ns`, `26 ns read, 30 ns write`, `30 ns write`, `-`: a read and a
/// write figure (0: not given).
fn figure_pair(read: Option<u64>, write: Option<u64>, f: impl Fn(u64) -> String) -> String {
    match (read.filter(|v| *v > 0), write.filter(|v| *v > 0)) {
        (Some(r), Some(w)) if r == w => f(r),
        (Some(r), Some(w)) => format!("{} read, {} write", f(r), f(w)),
        (Some(r), None) => format!("{} read", f(r)),
        (None, Some(w)) => format!("{} write", f(w)),
        (None, None) => "-".into(),
    }
}

fn packages(topo: &Topology, out: &mut String) {
    if topo.packages.is_empty() {
        return;
    }
    // Nodes without CPUs, each with the package it sits in (None: none).
    let cpuless: Vec<(&Node, Option<u32>)> =
        topo.nodes.iter().filter(|n| n.cpus.is_empty()).map(|n| (n, topo.package_of_cpuless(n.id))).collect();
    out.push_str("Packages -> nodes -> cores -> CPUs:\n");
    for p in &topo.packages {
        let _ = write!(out, "  package {}:", p.id);
        let mut first = true;
        for n in &topo.nodes {
            let cpus = n.cpus.intersection(&p.cpus);
            if cpus.is_empty() {
                continue;
            }
            let mut cores: Vec<&CpuSet> = topo
                .cpus
                .iter()
                .filter(|c| c.online && cpus.contains(c.id))
                .filter_map(|c| c.siblings.as_ref())
                .collect();
            cores.sort();
            cores.dedup();
            let indent = if first { " " } else { "             " };
            first = false;
            let _ = writeln!(out, "{indent}node {}: {}, CPUs {}", n.id, core_shapes(&cores, &cpus), cpus.to_list());
            // Then the CPU-less nodes of this package whose last CPU node
            // (in node order) this is.
            for (m, _) in cpuless.iter().filter(|(_, pk)| *pk == Some(p.id)) {
                let last = topo.local_cpu_nodes(m.id).and_then(|l| l.nodes.intersection(&p.nodes).last());
                if last == Some(n.id) {
                    let _ = writeln!(out, "             {}", cpuless_line(topo, m));
                }
            }
        }
        if first {
            let _ = writeln!(out, " CPUs {}", p.cpus.to_list());
        }
    }
    let mut first = true;
    for (m, _) in cpuless.iter().filter(|(_, pk)| pk.is_none()) {
        let lead = if first { "  no package: " } else { "              " };
        first = false;
        let _ = writeln!(out, "{lead}{}", cpuless_line(topo, m));
    }
}

/// `node 8: memory only, 384 MiB, local to node 0 (HMAT)`: a node without
/// CPUs, what it is and which CPU nodes it is local to.
fn cpuless_line(topo: &Topology, n: &Node) -> String {
    let what = match (n.has_memory, n.generic_initiator) {
        (true, _) => format!("memory only, {}", n.memory.map_or("?".into(), |m| human_bytes(m.total_bytes))),
        (false, true) => "generic initiator".into(),
        (false, false) => "no CPUs, no memory".into(),
    };
    let near = match topo.local_cpu_nodes(n.id) {
        Some(l) => match l.by {
            LocalBy::Hmat => format!("local to {} (HMAT)", nodes_word(&l.nodes)),
            LocalBy::Distance(d) => format!("nearest to {} (distance {d})", nodes_word(&l.nodes)),
        },
        None => unplaced_why(topo, n),
    };
    format!("node {}: {what}, {near}", n.id)
}

/// Why a node without CPUs is local to no CPU node.
fn unplaced_why(topo: &Topology, n: &Node) -> String {
    if !topo.has_distances {
        return "no HMAT or distances tell where".into();
    }
    let d: Vec<u32> =
        topo.nodes.iter().filter(|m| !m.cpus.is_empty()).filter_map(|m| topo.distance(n.id, m.id)).collect();
    match (d.iter().min(), d.iter().max()) {
        (Some(lo), Some(hi)) if lo == hi => format!("every CPU node at distance {lo}"),
        _ => "no CPU node nearer than itself".into(),
    }
}

/// `node 3`, `nodes 0-1`.
fn nodes_word(nodes: &NodeSet) -> String {
    format!("node{} {}", if nodes.len() == 1 { "" } else { "s" }, nodes.to_list())
}

/// `6 cores x 2 threads + 8 cores x 1 thread`: cores grouped by how many
/// of `cpus` each holds (hybrid CPUs mix them), most threads first; where
/// the kernel gives no core siblings, says so instead of counting zero.
fn core_shapes(cores: &[&CpuSet], cpus: &CpuSet) -> String {
    if cores.is_empty() {
        return "cores unknown".into();
    }
    let mut by_threads: BTreeMap<std::cmp::Reverse<usize>, usize> = BTreeMap::new();
    for c in cores {
        *by_threads.entry(std::cmp::Reverse(c.intersection(cpus).len())).or_default() += 1;
    }
    by_threads
        .iter()
        .map(|(std::cmp::Reverse(t), n)| format!("{n} core{} x {t} thread{}", plural(*n), plural(*t)))
        .collect::<Vec<_>>()
        .join(" + ")
}

fn caches(topo: &Topology, out: &mut String) {
    let mut groups: BTreeMap<(u32, String, Option<u64>, usize), usize> = BTreeMap::new();
    for c in &topo.caches {
        *groups.entry((c.level, c.kind.clone(), c.size_bytes, c.cpus.len())).or_default() += 1;
    }
    if groups.is_empty() {
        return;
    }
    out.push_str("Caches:\n");
    for ((level, kind, size, shared), count) in groups {
        let k = match kind.as_str() {
            "Data" => "d",
            "Instruction" => "i",
            _ => "",
        };
        let size = size.map_or("?".to_string(), human_bytes);
        let _ = writeln!(out, "  L{level}{k} {size} x {count} (each shared by {shared} CPU{})", plural(shared));
    }
}

#[cfg(test)]
mod tests;
