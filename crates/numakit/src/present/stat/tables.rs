//! `numakit stat` as text: the node counters with the AutoNUMA counters,
//! an interval's deltas and rates, per-node memory (`-m`) and per-process
//! memory with locality (`-p`), built on [`super::grid`].

use std::fmt::Write as _;

use super::grid::{left_width_for, mb, node_header, pct, text, Cell, Grid};
use crate::stats::meminfo::is_page_count;
use crate::stats::{CounterRates, CounterSample, NodeCounters, NodeMeminfo, ProcessReport, NUMASTAT_COUNTERS};

/// The node counters (pages since boot, with a total) and the AutoNUMA
/// counters with the local share of hinting faults.
pub fn counters_text(sample: &CounterSample, width: usize) -> String {
    let mut out = String::from("Per-node NUMA counters (pages):\n");
    let nodes = &sample.nodes;
    let mut rows = node_header(nodes.iter().map(|n| n.id), true);
    for name in counter_names(nodes) {
        let mut cells: Vec<Cell> =
            nodes.iter().map(|n| n.get(&name).map_or(Cell::Empty, |v| text(v.to_string()))).collect();
        // Summed wide: counters near 2^64 must not wrap the total.
        cells.push(text(nodes.iter().filter_map(|n| n.get(&name)).map(u128::from).sum::<u128>().to_string()));
        rows.push((text(name), cells));
    }
    out.push_str(&Grid { left_width: 16, col_width: 16, rows }.render(width));
    if !sample.vm.lines.is_empty() {
        out.push_str("\nAutoNUMA and migration (/proc/vmstat):\n");
        for (k, v) in &sample.vm.lines {
            let _ = writeln!(out, "{k:<24}{v:>16}");
            if k == "numa_hint_faults_local" {
                let _ = writeln!(out, "{:<24}{:>16}", "  local share", pct(sample.vm.hint_local_ratio()));
            }
        }
    }
    out
}

/// Counter names of all nodes: numastat's six first, then others in the
/// order first seen.
fn counter_names(nodes: &[NodeCounters]) -> Vec<String> {
    let mut names: Vec<String> =
        NUMASTAT_COUNTERS.iter().filter(|k| nodes.iter().any(|n| n.get(k).is_some())).map(|k| k.to_string()).collect();
    for n in nodes {
        for (k, _) in &n.lines {
            if !names.contains(k) {
                names.push(k.clone());
            }
        }
    }
    names
}

fn rate_text(per_sec: f64) -> String {
    if per_sec >= 100.0 || per_sec == 0.0 {
        format!("{per_sec:.0}")
    } else {
        format!("{per_sec:.1}")
    }
}

/// One interval: per-node deltas with their total and the total per
/// second, then the AutoNUMA deltas and rates.
pub fn rates_text(r: &CounterRates, width: usize) -> String {
    let mut out = format!("Per-node NUMA counters over {:.2} s (pages; Total/s = rate):\n", r.interval_secs);
    let mut rows = node_header(r.nodes.iter().map(|n| n.id), true);
    if let Some((_, head)) = rows.first_mut() {
        head.push(text("Total/s"));
    }
    if let Some((_, rule)) = rows.get_mut(1) {
        rule.push(Cell::Dashes);
    }
    let mut names: Vec<String> = Vec::new();
    for n in &r.nodes {
        for (k, _) in &n.rates {
            if !names.contains(k) {
                names.push(k.clone());
            }
        }
    }
    for name in names {
        let get = |n: &crate::stats::NodeRates| n.rates.iter().find(|(k, _)| *k == name).map(|(_, r)| *r);
        let mut cells: Vec<Cell> =
            r.nodes.iter().map(|n| get(n).map_or(Cell::Empty, |x| text(x.delta.to_string()))).collect();
        let delta: u64 = r.nodes.iter().filter_map(get).map(|x| x.delta).sum();
        let per_sec: f64 = r.nodes.iter().filter_map(get).map(|x| x.per_sec).sum();
        cells.push(text(delta.to_string()));
        cells.push(text(rate_text(per_sec)));
        rows.push((text(name), cells));
    }
    out.push_str(&Grid { left_width: 16, col_width: 16, rows }.render(width));
    if !r.vm.rates.is_empty() {
        out.push_str("\nAutoNUMA and migration (/proc/vmstat):\n");
        let _ = writeln!(out, "{:<24}{:>16}{:>16}", "", "delta", "per second");
        for (k, x) in &r.vm.rates {
            let _ = writeln!(out, "{k:<24}{:>16}{:>16}", x.delta, rate_text(x.per_sec));
            if k == "numa_hint_faults_local" {
                let _ = writeln!(out, "{:<24}{:>16}", "  local share", pct(r.vm.hint_local_ratio));
            }
        }
    }
    out
}

/// `-m`: every node's meminfo in MB like numastat -m, with the huge page
/// lines counted over every page size.
pub fn meminfo_text(nodes: &[NodeMeminfo], width: usize) -> String {
    let mut out = String::from("\nPer-node system memory usage (in MBs):\n");
    let mut rows = node_header(nodes.iter().map(|n| n.id), true);
    for key in meminfo_keys(nodes) {
        let vals: Vec<Option<u64>> = nodes.iter().map(|n| meminfo_bytes(n, &key)).collect();
        let mut cells: Vec<Cell> = vals.iter().map(|v| v.map_or(Cell::Empty, |b| text(mb(b)))).collect();
        cells.push(text(mb(vals.iter().flatten().sum())));
        rows.push((text(key), cells));
    }
    out.push_str(&Grid { left_width: 16, col_width: 16, rows }.render(width));
    out
}

/// Keys of every node in the order first seen; the huge page totals are
/// always there.
pub(super) fn meminfo_keys(nodes: &[NodeMeminfo]) -> Vec<String> {
    let mut keys: Vec<String> = Vec::new();
    for n in nodes {
        for (k, _) in &n.lines {
            if !keys.contains(k) {
                keys.push(k.clone());
            }
        }
    }
    for k in ["HugePages_Total", "HugePages_Free", "HugePages_Surp"] {
        if !keys.iter().any(|x| x == k) {
            keys.push(k.to_string());
        }
    }
    keys
}

/// A meminfo value in bytes; the huge page lines counted at every size.
pub(super) fn meminfo_bytes(n: &NodeMeminfo, key: &str) -> Option<u64> {
    match key {
        "HugePages_Total" => Some(n.huge_total_bytes()),
        "HugePages_Free" => Some(n.huge_free_bytes()),
        "HugePages_Surp" => Some(n.huge_surplus_bytes()),
        k if is_page_count(k) => None,
        k => n.get(k),
    }
}

/// `-p`: one table per process (one process) or one row per process
/// (several), in MB like numastat -p, then each one's locality.
pub fn processes_text(r: &ProcessReport, node_ids: &[u32], width: usize) -> String {
    let mut out = String::new();
    let ids = || node_ids.iter().copied();
    let total_row = |label: &str, per_node: Vec<u64>| -> (Cell, Vec<Cell>) {
        let sum = per_node.iter().sum();
        let mut cells: Vec<Cell> = per_node.into_iter().map(|b| text(mb(b))).collect();
        cells.push(text(mb(sum)));
        (text(label), cells)
    };
    let rule = |n: usize| (Cell::Dashes, vec![Cell::Dashes; n + 1]);
    if let [p] = r.processes.as_slice() {
        let _ = writeln!(out, "\nPer-node process memory usage (in MBs) for PID {} ({})", p.pid, p.comm);
        let mut rows = node_header(ids(), true);
        let on = |id: u32| p.nodes.iter().find(|n| n.id == id);
        rows.push(total_row("Huge", ids().map(|i| on(i).map_or(0, |n| n.huge_bytes)).collect()));
        rows.push(total_row("Heap", ids().map(|i| on(i).map_or(0, |n| n.heap_bytes)).collect()));
        rows.push(total_row("Stack", ids().map(|i| on(i).map_or(0, |n| n.stack_bytes)).collect()));
        rows.push(total_row("Private", ids().map(|i| on(i).map_or(0, |n| n.private_bytes)).collect()));
        rows.push(rule(node_ids.len()));
        rows.push(total_row("Total", ids().map(|i| p.bytes_on(i)).collect()));
        out.push_str(&Grid { left_width: 17, col_width: 16, rows }.render(width));
    } else if !r.processes.is_empty() {
        out.push_str("\nPer-node process memory usage (in MBs)\n");
        let labels: Vec<String> = r.processes.iter().map(|p| format!("{} ({})", p.pid, p.comm)).collect();
        let mut rows = node_header(ids(), true);
        rows[0].0 = text("PID");
        rows[1].0 = Cell::Dashes;
        for (p, label) in r.processes.iter().zip(&labels) {
            rows.push(total_row(label, ids().map(|i| p.bytes_on(i)).collect()));
        }
        rows.push(rule(node_ids.len()));
        let totals = ids().map(|i| r.processes.iter().map(|p| p.bytes_on(i)).sum()).collect();
        rows.push(total_row("Total", totals));
        out.push_str(&Grid { left_width: left_width_for(&labels), col_width: 16, rows }.render(width));
    }
    if !r.processes.is_empty() {
        out.push_str("\nLocality (share of its own memory, file pages aside, on the nodes its threads run on):\n");
        for p in &r.processes {
            let label = format!("{} ({})", p.pid, p.comm);
            let runs = if p.cpus_nodes.is_empty() { "-".to_string() } else { p.cpus_nodes.to_list() };
            let _ = writeln!(out, "{label:<24} {:>7}  runs on node {runs}", pct(p.locality));
        }
    }
    out
}

/// The one line saying which processes were skipped (`None`: none were).
pub fn skipped_line(r: &ProcessReport) -> Option<String> {
    let list = |v: &[i32]| v.iter().map(i32::to_string).collect::<Vec<_>>().join(" ");
    let mut parts = Vec::new();
    if !r.unreadable.is_empty() {
        parts.push(format!(
            "{} process(es) could not be read (permission denied): {}",
            r.unreadable.len(),
            list(&r.unreadable)
        ));
    }
    if !r.exited.is_empty() {
        parts.push(format!("{} process(es) exited before they could be read: {}", r.exited.len(), list(&r.exited)));
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}
