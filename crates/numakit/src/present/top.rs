//! The cells of `numakit top` (node panel, AutoNUMA line, process table)
//! as strings, shared by the live terminal view and the one-shot plain
//! text snapshot ([`snapshot_text`]). Returns strings; never reads or
//! prints.

use std::fmt::Write as _;

use crate::stats::top::{NodeRow, ProcRow, SystemRow, TopFrame};
use crate::stats::ProcessNuma;

/// Headers of the node panel.
pub const NODE_HEADER: [&str; 7] = ["NODE", "TOTAL", "FREE", "FREE%", "CPU%", "HIT/s", "MISS/s"];

/// Headers of the process table.
pub const PROCESS_HEADER: [&str; 10] =
    ["PID", "USER", "COMMAND", "THR", "RSS", "CPU%", "MEM/NODE", "LOCAL", "RUNS ON", "MIGR"];

/// Bytes in a short binary form: `512K`, `3.1M`, `12G`.
pub fn short_bytes(b: u64) -> String {
    const UNITS: [&str; 6] = ["B", "K", "M", "G", "T", "P"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 || v >= 10.0 {
        format!("{v:.0}{}", UNITS[u])
    } else {
        format!("{v:.1}{}", UNITS[u])
    }
}

fn pct(r: Option<f64>) -> String {
    r.map_or_else(|| "-".to_string(), |r| format!("{:.1}", r * 100.0))
}

fn per_sec(v: Option<f64>) -> String {
    match v {
        None => "-".to_string(),
        Some(v) if v >= 100.0 || v == 0.0 => format!("{v:.0}"),
        Some(v) => format!("{v:.1}"),
    }
}

/// Cells of one node row.
pub fn node_cells(n: &NodeRow) -> Vec<String> {
    let free_pct = match (n.free_bytes, n.total_bytes) {
        (Some(f), Some(t)) if t > 0 => Some(f as f64 / t as f64),
        _ => None,
    };
    vec![
        n.id.to_string(),
        n.total_bytes.map_or_else(|| "-".into(), short_bytes),
        n.free_bytes.map_or_else(|| "-".into(), short_bytes),
        pct(free_pct),
        pct(n.cpu_busy),
        per_sec(n.hit_per_sec),
        per_sec(n.miss_per_sec),
    ]
}

/// The AutoNUMA line under the node panel.
pub fn system_line(s: &SystemRow) -> String {
    format!(
        "AutoNUMA: hint faults {}/s, local {}, pages migrated {}/s",
        per_sec(s.hint_faults_per_sec),
        s.hint_local_ratio.map_or_else(|| "-".to_string(), |r| format!("{:.1}%", r * 100.0)),
        per_sec(s.pages_migrated_per_sec)
    )
}

/// Memory per node as one block per node (in `node_ids` order), its
/// height the node's share, then the biggest node and its share:
/// `▁█▁▁ 1:97%`.
pub fn node_bar(p: &ProcessNuma, node_ids: &[u32]) -> String {
    const LEVELS: [char; 9] = [' ', '▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    if p.total_bytes == 0 {
        return "-".to_string();
    }
    let mut s: String = node_ids
        .iter()
        .map(|&id| {
            let b = p.bytes_on(id);
            if b == 0 {
                '·'
            } else {
                let level = ((b as f64 / p.total_bytes as f64) * 8.0).ceil() as usize;
                LEVELS[level.clamp(1, 8)]
            }
        })
        .collect();
    if let Some(top) = p.nodes.iter().max_by_key(|n| n.bytes) {
        let _ = write!(s, " {}:{:.0}%", top.id, top.bytes as f64 * 100.0 / p.total_bytes as f64);
    }
    s
}

/// Cells of one process row.
pub fn process_cells(r: &ProcRow, node_ids: &[u32]) -> Vec<String> {
    let (bar, local, runs) = match &r.memory {
        Some(m) => (
            node_bar(m, node_ids),
            pct(m.locality),
            if m.cpus_nodes.is_empty() { "-".to_string() } else { m.cpus_nodes.to_list() },
        ),
        None if r.denied => ("(no access)".to_string(), "-".to_string(), "-".to_string()),
        None => ("-".to_string(), "-".to_string(), "-".to_string()),
    };
    vec![
        r.pid.to_string(),
        r.user.clone(),
        r.comm.clone(),
        r.threads.to_string(),
        short_bytes(r.rss_bytes),
        r.cpu.map_or_else(|| "-".to_string(), |c| format!("{:.1}", c * 100.0)),
        bar,
        local,
        runs,
        r.migrations.map_or_else(|| "-".to_string(), |m| m.to_string()),
    ]
}

/// Lays out rows of cells in columns (left-aligned text columns at
/// `left`, the others right-aligned), each as wide as its widest cell.
pub fn columns(rows: &[Vec<String>], left: &[usize]) -> String {
    let n = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> =
        (0..n).map(|i| rows.iter().filter_map(|r| r.get(i)).map(|c| c.chars().count()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for r in rows {
        let mut line = String::new();
        for (i, c) in r.iter().enumerate() {
            if i > 0 {
                line.push_str("  ");
            }
            let pad = widths[i].saturating_sub(c.chars().count());
            if left.contains(&i) {
                line.push_str(c);
                line.push_str(&" ".repeat(pad));
            } else {
                line.push_str(&" ".repeat(pad));
                line.push_str(c);
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// Columns of the process table that are left-aligned.
pub const PROCESS_LEFT: [usize; 4] = [1, 2, 6, 8];

/// One refresh as plain text: the node panel, the AutoNUMA line and the
/// process table.
pub fn snapshot_text(f: &TopFrame, node_ids: &[u32]) -> String {
    let mut out = String::new();
    let when = f.interval_secs.map_or_else(|| "first sample".to_string(), |s| format!("over {s:.1} s"));
    let _ = writeln!(out, "numakit top — {} nodes, {} processes ({when})", f.nodes.len(), f.total);
    let mut rows = vec![NODE_HEADER.iter().map(|s| s.to_string()).collect::<Vec<_>>()];
    rows.extend(f.nodes.iter().map(node_cells));
    out.push_str(&columns(&rows, &[]));
    let _ = writeln!(out, "{}", system_line(&f.system));
    out.push('\n');
    let mut rows = vec![PROCESS_HEADER.iter().map(|s| s.to_string()).collect::<Vec<_>>()];
    rows.extend(f.processes.iter().map(|p| process_cells(p, node_ids)));
    out.push_str(&columns(&rows, &PROCESS_LEFT));
    if f.matched > f.processes.len() {
        let _ = writeln!(out, "({} of {} matching processes shown)", f.processes.len(), f.matched);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::process::summarize;

    #[test]
    fn bars_and_cells() {
        let maps = crate::procs::numa_maps::parse("1 bind:1 anon=300 N1=291 N0=9 kernelpagesize_kB=4\n");
        let p = summarize(5, "app", &maps, &[0, 1, 2], [1].into_iter().collect());
        assert_eq!(node_bar(&p, &[0, 1, 2]), "▁█· 1:97%");
        let row = ProcRow {
            pid: 5,
            comm: "app".into(),
            user: "root".into(),
            threads: 3,
            rss_bytes: 3 << 20,
            cpu: Some(0.5),
            memory: Some(p),
            migrations: Some(12),
            denied: false,
        };
        let c = process_cells(&row, &[0, 1, 2]);
        assert_eq!(c, ["5", "root", "app", "3", "3.0M", "50.0", "▁█· 1:97%", "97.0", "1", "12"]);
        assert_eq!(short_bytes(512 << 10), "512K");
        assert_eq!(short_bytes(12 << 30), "12G");
        let n = NodeRow {
            id: 2,
            total_bytes: Some(1 << 30),
            free_bytes: Some(1 << 29),
            cpu_busy: None,
            hit_per_sec: Some(1234.0),
            miss_per_sec: Some(0.5),
        };
        assert_eq!(node_cells(&n), ["2", "1.0G", "512M", "50.0", "-", "1234", "0.5"]);
        let t = columns(&[vec!["A".into(), "bb".into()], vec!["ccc".into(), "d".into()]], &[0]);
        assert_eq!(t, "A    bb\nccc   d\n");
    }
}
