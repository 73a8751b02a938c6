//! The human view of `numakit topo`: a summary line (and a line when the
//! nodes' memory does not add up to `/proc/meminfo`'s), one row per node
//! (CPU ranges, memory, free memory, huge pages, devices) and a line of the
//! PCI devices on no node, the distance matrix (a compact per-node form
//! beyond 16 nodes), packages → nodes → cores → PUs, caches, and the
//! allowed set when a cpuset restricts it.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::human_bytes;
use crate::sets::CpuSet;
use crate::topo::{MemoryAccounting, Topology};

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
    out.push('\n');
    distances(topo, &mut out);
    out.push('\n');
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
    let rows: Vec<[String; 6]> = topo
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
            [n.id.to_string(), cpus, total, free, or_dash(&huge.join(" ")).to_string(), or_dash(&d).to_string()]
        })
        .collect();
    let header = ["NODE", "CPUS", "MEMORY", "FREE", "HUGEPAGES", "DEVICES"];
    let mut w = header.map(str::len);
    for r in &rows {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(c.len());
        }
    }
    let line = |cells: [&str; 6]| {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i == 5 {
                s.push_str(c);
            } else if i == 2 || i == 3 {
                let _ = write!(s, "{:>width$}  ", c, width = w[i]);
            } else {
                let _ = write!(s, "{:<width$}  ", c, width = w[i]);
            }
        }
        s.trim_end().to_string()
    };
    let _ = writeln!(out, "{}", line(header));
    for r in &rows {
        let _ = writeln!(out, "{}", line([&r[0], &r[1], &r[2], &r[3], &r[4], &r[5]]));
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

fn packages(topo: &Topology, out: &mut String) {
    if topo.packages.is_empty() {
        return;
    }
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
        }
        if first {
            let _ = writeln!(out, " CPUs {}", p.cpus.to_list());
        }
    }
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
