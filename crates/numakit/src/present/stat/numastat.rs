//! numastat 2.0.16's output, byte for byte: its default table
//! ([`numastat_compat`]), `-n` and `-m` ([`numastat_counters_mb`],
//! [`numastat_meminfo_mb`]) and `-p` ([`NumastatProcesses`]) with the
//! options `-c`, `-z`, `-s[NODE]` and `-v` ([`NumastatOptions`]), on
//! numastat's own table engine ([`super::vtab`]).

use std::fmt::Write as _;

use super::grid::{text, Cell, Grid};
use super::vtab::{VCell, VTab, FLAG_ALWAYS};
use crate::stats::meminfo::is_page_count;
use crate::stats::{NodeCounters, NodeMeminfo, NUMASTAT_COUNTERS};

/// Exactly what `numastat` without arguments prints for these nodes: a
/// `nodeN` header and the six counters in numastat's order (rows no node
/// has are left out), 16 columns each, folded to `width`. Lines the kernel
/// writes that numastat does not know give numastat's
/// `Token NAME not in hash table.` first, as it does.
pub fn numastat_compat(nodes: &[NodeCounters], width: usize) -> String {
    let mut out = String::new();
    for n in nodes {
        for (k, _) in &n.lines {
            if !NUMASTAT_COUNTERS.contains(&k.as_str()) {
                let _ = writeln!(out, "Token {k} not in hash table.");
            }
        }
    }
    let mut rows = vec![(Cell::Empty, nodes.iter().map(|n| text(format!("node{}", n.id))).collect())];
    for name in NUMASTAT_COUNTERS {
        if nodes.iter().all(|n| n.get(name).is_none()) {
            continue;
        }
        let cells =
            nodes.iter().map(|n| n.get(name).map_or(Cell::Empty, |v| text(format!("{:.0}", v as f64)))).collect();
        rows.push((text(name), cells));
    }
    out.push_str(&Grid { left_width: 16, col_width: 16, rows }.render(width.max(32)));
    out
}

/// What numastat's options change in its tables (`-c`, `-z`, `-s[NODE]`,
/// `-v`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NumastatOptions {
    /// `-c`: columns as narrow as their contents, whole MB.
    pub compress: bool,
    /// `-z`: rows and columns of only zeros left out.
    pub skip_zero: bool,
    /// `-s[NODE]`: rows sorted by the Total column, descending.
    pub sort: bool,
    /// `-sNODE`: sort by the column of the NODE-th node instead (an index
    /// into the sorted node ids, as numastat reads it; `None` or out of
    /// range: Total).
    pub sort_node: Option<i64>,
    /// `-v`: one table per process even for several.
    pub verbose: bool,
}

const MB_F: f64 = 1024.0 * 1024.0;

/// numastat's rows of `-m`: (token in `nodeN/meminfo`, label).
const NUMASTAT_MEMINFO_ROWS: [&str; 36] = [
    "MemTotal",
    "MemFree",
    "MemUsed",
    "HighTotal",
    "HighFree",
    "LowTotal",
    "LowFree",
    "Active",
    "Inactive",
    "Active(anon)",
    "Inactive(anon)",
    "Active(file)",
    "Inactive(file)",
    "Unevictable",
    "Mlocked",
    "Dirty",
    "Writeback",
    "FilePages",
    "Mapped",
    "AnonPages",
    "Shmem",
    "KernelStack",
    "PageTables",
    "NFS_Unstable",
    "Bounce",
    "WritebackTmp",
    "Slab",
    "SReclaimable",
    "SUnreclaim",
    "AnonHugePages",
    "ShmemHugePages",
    "ShmemPmdMapped",
    "HugePages_Total",
    "HugePages_Free",
    "HugePages_Surp",
    "KReclaimable",
];

/// numastat's labels of `-n`, in the order of [`NUMASTAT_COUNTERS`].
const NUMASTAT_COUNTER_LABELS: [&str; 6] =
    ["Numa_Hit", "Numa_Miss", "Numa_Foreign", "Interleave_Hit", "Local_Node", "Other_Node"];

/// numastat's table of a system file (`-m`, `-n`): `lines[i]` are node
/// `node_ids[i]`'s `(token, MB)` in file order.
fn numastat_system_table(
    node_ids: &[u32],
    lines: &[Vec<(String, f64)>],
    tokens: &[&str],
    labels: &[&str],
    opts: &NumastatOptions,
    width: usize,
) -> String {
    let n = node_ids.len();
    let mut t = VTab::new(2, 1, tokens.len(), n + 1);
    let total = 1 + n;
    for (r, label) in labels.iter().enumerate() {
        t.cells[2 + r][0] = VCell::Str(label.to_string());
    }
    t.col_width[0] = 16;
    t.col_left[0] = true;
    let places = if opts.compress { 0 } else { 2 };
    for c in 1..=total {
        t.cells[0][c] = VCell::Str(node_ids.get(c - 1).map_or_else(|| "Total".to_string(), |id| format!("Node {id}")));
        t.cells[1][c] = VCell::Rep('-');
        t.col_places[c] = places;
        t.col_width[c] = 16;
    }
    let mut out = String::new();
    for (i, node_lines) in lines.iter().enumerate().take(n) {
        for (k, mb) in node_lines {
            match tokens.iter().position(|x| x == k) {
                None => {
                    let _ = writeln!(out, "Token {k} not in hash table.");
                }
                Some(r) => {
                    t.cells[2 + r][1 + i] = VCell::Num(*mb);
                    t.add(2 + r, total, *mb);
                }
            }
        }
    }
    if opts.compress {
        for c in 0..=total {
            t.auto_width(c, 4, 16);
        }
    }
    if opts.sort {
        let sc = t.sort_col(opts.sort_node, node_ids);
        t.sort_desc(2, 2 + tokens.len() - 1, sc);
    }
    out.push_str(&t.display(width, !opts.skip_zero));
    out
}

/// `numastat -n` (and numastat with options but no process): the six
/// counters in MB (pages of `page_bytes`), under
/// `Per-node numastat info (in MBs):`.
pub fn numastat_counters_mb(nodes: &[NodeCounters], page_bytes: u64, opts: &NumastatOptions, width: usize) -> String {
    let ids: Vec<u32> = nodes.iter().map(|n| n.id).collect();
    let lines: Vec<Vec<(String, f64)>> = nodes
        .iter()
        .map(|n| n.lines.iter().map(|(k, v)| (k.clone(), *v as f64 * page_bytes as f64 / MB_F)).collect())
        .collect();
    let mut out = String::from("\nPer-node numastat info (in MBs):\n");
    out.push_str(&numastat_system_table(&ids, &lines, &NUMASTAT_COUNTERS, &NUMASTAT_COUNTER_LABELS, opts, width));
    out
}

/// `numastat -m`: `nodeN/meminfo` in MB as numastat 2.0.16 shows it (its
/// rows in its order, `Token NAME not in hash table.` for the lines it
/// does not know, `HugePages_*` counted at the default huge page size
/// `huge_page_bytes`).
pub fn numastat_meminfo_mb(
    nodes: &[NodeMeminfo],
    huge_page_bytes: u64,
    opts: &NumastatOptions,
    width: usize,
) -> String {
    let ids: Vec<u32> = nodes.iter().map(|n| n.id).collect();
    let lines: Vec<Vec<(String, f64)>> = nodes
        .iter()
        .map(|n| {
            n.lines
                .iter()
                .map(|(k, v)| {
                    let bytes = if is_page_count(k) { *v as f64 * huge_page_bytes as f64 } else { *v as f64 };
                    (k.clone(), bytes / MB_F)
                })
                .collect()
        })
        .collect();
    let mut out = String::from("\nPer-node system memory usage (in MBs):\n");
    out.push_str(&numastat_system_table(&ids, &lines, &NUMASTAT_MEMINFO_ROWS, &NUMASTAT_MEMINFO_ROWS, opts, width));
    out
}

/// numastat's process tables (`numastat -p`), fed one process at a time
/// in PID order: one table per process (one process, or `-v`), else one
/// row per process and a table after the last.
pub struct NumastatProcesses {
    tab: VTab,
    node_ids: Vec<u32>,
    per_process: bool,
    count: usize,
    data_rows: usize,
    opts: NumastatOptions,
    width: usize,
}

impl NumastatProcesses {
    /// The tables for `count` processes; also the text printed before
    /// the first process (the title of the one-row-per-process table).
    pub fn new(node_ids: &[u32], count: usize, opts: NumastatOptions, width: usize) -> (Self, String) {
        let per_process = opts.verbose || count == 1;
        let data_rows = if per_process { 4 } else { count };
        let n = node_ids.len();
        let mut tab = VTab::new(2, 1, data_rows + 2, n + 1);
        let total_row = 2 + data_rows + 1;
        tab.cells[total_row][0] = VCell::Str("Total".into());
        let mut head = String::new();
        if per_process {
            for (r, label) in crate::stats::process::NUMASTAT_CATEGORIES.iter().enumerate() {
                tab.cells[2 + r][0] = VCell::Str(label.to_string());
            }
        } else {
            tab.cells[0][0] = VCell::Str("PID".into());
            tab.cells[1][0] = VCell::Rep('-');
            head.push_str("\nPer-node process memory usage (in MBs)\n");
        }
        tab.col_width[0] = 16;
        tab.col_left[0] = true;
        for c in 1..=n + 1 {
            tab.cells[0][c] =
                VCell::Str(node_ids.get(c - 1).map_or_else(|| "Total".to_string(), |id| format!("Node {id}")));
            tab.cells[1][c] = VCell::Rep('-');
            tab.col_width[c] = 16;
            tab.col_places[c] = if opts.compress { 0 } else { 2 };
        }
        tab.zero_data();
        let me = NumastatProcesses { tab, node_ids: node_ids.to_vec(), per_process, count, data_rows, opts, width };
        (me, head)
    }

    /// The text for the `index`-th process (`pid`, its status `Name`, its
    /// memory per node or `None` when its `numa_maps` could not be read:
    /// the caller then says why on stderr).
    pub fn add(
        &mut self,
        index: usize,
        pid: i32,
        name: Option<&str>,
        usage: Option<&crate::stats::process::NumastatUsage>,
    ) -> String {
        let name = name.unwrap_or("(null)");
        let mut out = String::new();
        if self.per_process {
            let _ = writeln!(out, "\nPer-node process memory usage (in MBs) for PID {pid} ({name})");
            if index > 0 {
                self.tab.zero_data();
            }
        } else {
            let mut label = format!("{pid} ({name})");
            if label.len() > 63 {
                let mut cut = 63;
                while !label.is_char_boundary(cut) {
                    cut -= 1;
                }
                label.truncate(cut);
            }
            self.tab.cells[2 + index][0] = VCell::Str(label);
        }
        let Some(usage) = usage else { return out };
        let n = self.node_ids.len();
        let (total_col, total_row) = (1 + n, 2 + self.data_rows + 1);
        for (id, cats) in usage {
            let Some(i) = self.node_ids.iter().position(|x| x == id) else { continue };
            for (cat, bytes) in cats.iter().enumerate() {
                if *bytes == 0 {
                    continue;
                }
                let v = *bytes as f64 / MB_F;
                let row = if self.per_process { 2 + cat } else { 2 + index };
                self.tab.add(row, 1 + i, v);
                self.tab.add(row, total_col, v);
                self.tab.add(total_row, 1 + i, v);
                self.tab.add(total_row, total_col, v);
            }
        }
        if self.per_process || index + 1 == self.count {
            if self.opts.compress {
                for c in 0..=total_col {
                    self.tab.auto_width(c, 4, 16);
                }
            } else {
                self.tab.auto_width(0, 16, 24);
            }
            self.tab.row_flags[total_row - 1] |= FLAG_ALWAYS;
            for c in 0..=total_col {
                self.tab.cells[total_row - 1][c] = VCell::Rep('-');
            }
            if self.opts.sort {
                let sc = self.tab.sort_col(self.opts.sort_node, &self.node_ids);
                self.tab.sort_desc(2, 2 + self.data_rows - 1, sc);
            }
            out.push_str(&self.tab.display(self.width, !self.opts.skip_zero));
        }
        out
    }
}
