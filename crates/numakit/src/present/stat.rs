//! Text and JSON of `numakit stat`: numastat's default layout byte for
//! byte ([`numastat_compat`]), the node counters with the AutoNUMA
//! counters, per-node memory (`-m`), per-process memory (`-p`), and the
//! deltas and rates of an interval. Tables fold to a screen width the way
//! numastat folds them. Returns strings; never reads or prints.

use std::fmt::Write as _;

use serde_json::{json, Map, Value};

use crate::stats::meminfo::is_page_count;
use crate::stats::{CounterRates, CounterSample, NodeCounters, NodeMeminfo, ProcessReport, NUMASTAT_COUNTERS};

/// numastat's line width when stdout is not a terminal ("don't split it
/// up for easier parsing").
pub const UNLIMITED_WIDTH: usize = 10_000_000;

/// One cell of a table.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Cell {
    /// Blank.
    Empty,
    /// Text, cut to the column width.
    Text(String),
    /// A rule: the column width less one gutter, of dashes.
    Dashes,
}

/// A table as numastat draws one: a left header column and data columns of
/// one width; rows that do not fit the screen width continue in further
/// sections, each repeating the left column, separated by a blank line.
struct Grid {
    left_width: usize,
    col_width: usize,
    rows: Vec<(Cell, Vec<Cell>)>,
}

impl Grid {
    fn render(&self, screen_width: usize) -> String {
        let ncols = self.rows.iter().map(|r| r.1.len()).max().unwrap_or(0);
        let mut out = String::new();
        let mut first = 0;
        while first < ncols {
            if first > 0 {
                out.push('\n');
            }
            // numastat prints at least one column, then adds columns while
            // the next still fits.
            let mut end = first + 1;
            while end < ncols && self.left_width + (end - first + 1) * self.col_width <= screen_width {
                end += 1;
            }
            for (left, cells) in &self.rows {
                out.push_str(&justify(left, self.left_width, false));
                for c in cells.get(first..end.min(cells.len())).unwrap_or(&[]) {
                    out.push_str(&justify(c, self.col_width, true));
                }
                out.push('\n');
            }
            first = end;
        }
        out
    }
}

fn justify(c: &Cell, width: usize, right: bool) -> String {
    let text: String = match c {
        Cell::Empty => String::new(),
        Cell::Text(t) => t.chars().take(width).collect(),
        Cell::Dashes => "-".repeat(width.saturating_sub(1)),
    };
    if right {
        format!("{text:>width$}")
    } else {
        format!("{text:<width$}")
    }
}

fn text(s: impl Into<String>) -> Cell {
    Cell::Text(s.into())
}

/// numastat's column width rule for the left column of `-p` tables: the
/// longest label plus a gutter, at least 16 + 1 and at most 24.
fn left_width_for(labels: &[String]) -> usize {
    (labels.iter().map(|l| l.chars().count()).max().unwrap_or(0).max(16) + 1).min(24)
}

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

fn node_header(ids: impl Iterator<Item = u32>, total: bool) -> Vec<(Cell, Vec<Cell>)> {
    let mut head: Vec<Cell> = ids.map(|id| text(format!("Node {id}"))).collect();
    if total {
        head.push(text("Total"));
    }
    let rule = vec![Cell::Dashes; head.len()];
    vec![(Cell::Empty, head), (Cell::Empty, rule)]
}

fn mb(bytes: u64) -> String {
    format!("{:.2}", bytes as f64 / (1024.0 * 1024.0))
}

fn pct(r: Option<f64>) -> String {
    r.map_or_else(|| "n/a".to_string(), |r| format!("{:.1}%", r * 100.0))
}

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
fn meminfo_keys(nodes: &[NodeMeminfo]) -> Vec<String> {
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
fn meminfo_bytes(n: &NodeMeminfo, key: &str) -> Option<u64> {
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

/// JSON of the counters: `nodes[]` of `id` and each counter, and
/// `autonuma` with each counter and `hint_faults_local_ratio`.
pub fn counters_json(sample: &CounterSample) -> Value {
    let nodes: Vec<Value> = sample
        .nodes
        .iter()
        .map(|n| {
            let mut o = Map::new();
            o.insert("id".into(), json!(n.id));
            for (k, v) in &n.lines {
                o.insert(k.clone(), json!(v));
            }
            Value::Object(o)
        })
        .collect();
    let mut vm = Map::new();
    for (k, v) in &sample.vm.lines {
        vm.insert(k.clone(), json!(v));
    }
    vm.insert("hint_faults_local_ratio".into(), json!(sample.vm.hint_local_ratio()));
    json!({ "nodes": nodes, "autonuma": vm })
}

/// JSON of one interval: like [`counters_json`] with `{delta, per_sec}`
/// for each counter, and `interval_secs`.
pub fn rates_json(r: &CounterRates) -> Value {
    let nodes: Vec<Value> = r
        .nodes
        .iter()
        .map(|n| {
            let mut o = Map::new();
            o.insert("id".into(), json!(n.id));
            for (k, x) in &n.rates {
                o.insert(k.clone(), json!({ "delta": x.delta, "per_sec": x.per_sec }));
            }
            Value::Object(o)
        })
        .collect();
    let mut vm = Map::new();
    for (k, x) in &r.vm.rates {
        vm.insert(k.clone(), json!({ "delta": x.delta, "per_sec": x.per_sec }));
    }
    vm.insert("hint_faults_local_ratio".into(), json!(r.vm.hint_local_ratio));
    json!({ "interval_secs": r.interval_secs, "nodes": nodes, "autonuma": vm })
}

/// JSON of `-m`: `nodes[]` with `id`, `meminfo_bytes` (every `kB` line in
/// bytes), `hugepages[]` per size, and the huge page totals in bytes.
pub fn meminfo_json(nodes: &[NodeMeminfo]) -> Value {
    let nodes: Vec<Value> = nodes
        .iter()
        .map(|n| {
            let mut m = Map::new();
            for (k, v) in &n.lines {
                if !is_page_count(k) {
                    m.insert(k.clone(), json!(v));
                }
            }
            json!({
                "id": n.id,
                "meminfo_bytes": m,
                "hugepages": n.hugepages,
                "hugepages_total_bytes": n.huge_total_bytes(),
                "hugepages_free_bytes": n.huge_free_bytes(),
                "hugepages_surplus_bytes": n.huge_surplus_bytes(),
            })
        })
        .collect();
    json!({ "nodes": nodes })
}

/// JSON of `-p`: `processes[]` (see docs/stat.md), `exited[]`,
/// `unreadable[]`.
pub fn processes_json(r: &ProcessReport) -> Value {
    json!({ "processes": r.processes, "exited": r.exited, "unreadable": r.unreadable })
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
const FLAG_SEEN: u8 = 1 << 2;
const FLAG_NON_ZERO: u8 = 1 << 3;
const FLAG_ALWAYS: u8 = 1 << 4;

/// A cell of numastat's table.
#[derive(Debug, Clone, PartialEq)]
enum VCell {
    Null,
    Num(f64),
    Str(String),
    Rep(char),
}

/// numastat's table, state and all: its rows keep their seen/non-zero
/// flags and their sorted order from one display to the next, as
/// numastat's do when it reuses a table for several processes.
struct VTab {
    header_rows: usize,
    header_cols: usize,
    cells: Vec<Vec<VCell>>,
    row_map: Vec<usize>,
    row_flags: Vec<u8>,
    col_flags: Vec<u8>,
    col_width: Vec<usize>,
    col_places: Vec<usize>,
    col_left: Vec<bool>,
}

impl VTab {
    fn new(header_rows: usize, header_cols: usize, rows: usize, cols: usize) -> Self {
        let (nr, nc) = (header_rows + rows, header_cols + cols);
        VTab {
            header_rows,
            header_cols,
            cells: vec![vec![VCell::Null; nc]; nr],
            row_map: (0..nr).collect(),
            row_flags: vec![0; nr],
            col_flags: vec![0; nc],
            col_width: vec![0; nc],
            col_places: vec![0; nc],
            col_left: vec![false; nc],
        }
    }

    fn ncols(&self) -> usize {
        self.cells.first().map_or(0, Vec::len)
    }

    fn zero_data(&mut self) {
        let (hr, hc) = (self.header_rows, self.header_cols);
        for row in self.cells.iter_mut().skip(hr) {
            for c in row.iter_mut().skip(hc) {
                *c = VCell::Num(0.0);
            }
        }
    }

    fn add(&mut self, row: usize, col: usize, v: f64) {
        let c = &mut self.cells[row][col];
        *c = VCell::Num(match c {
            VCell::Num(d) => *d + v,
            _ => v,
        });
    }

    /// numastat's `fmt_cell_data`: the text, cut to `max_width` bytes.
    fn fmt(c: &VCell, max_width: usize, places: usize) -> String {
        let mut t = match c {
            VCell::Null => String::new(),
            VCell::Num(d) => format!("{d:.places$}"),
            VCell::Str(s) => s.clone(),
            VCell::Rep(ch) => ch.to_string().repeat(max_width.saturating_sub(1)),
        };
        if t.len() > max_width {
            let mut cut = max_width;
            while !t.is_char_boundary(cut) {
                cut -= 1;
            }
            t.truncate(cut);
        }
        t
    }

    fn auto_width(&mut self, col: usize, min: usize, max: usize) {
        let mut w = min;
        for row in &self.cells {
            if !matches!(row[col], VCell::Rep(_)) {
                w = w.max(Self::fmt(&row[col], max, self.col_places[col]).len());
            }
        }
        self.col_width[col] = (w + 1).min(max);
    }

    /// Selection sort of the data rows `first..=last`, descending by `col`,
    /// as numastat sorts (not stable).
    /// `col` may lie beyond the table (numastat's `-sNODE` takes the
    /// NODE-th node's id as a column index): numastat then reads the cell
    /// that far on in its row-major cell array, which is copied here;
    /// beyond the array (memory numakit cannot know) the key is 0.
    fn sort_desc(&mut self, first: usize, last: usize, col: usize) {
        let key = |t: &VTab, r: usize| {
            let nc = t.ncols();
            let flat = t.row_map[r] * nc + col;
            match t.cells.get(flat / nc.max(1)).map(|row| &row[flat % nc.max(1)]) {
                Some(VCell::Num(d)) => *d,
                // A rule cell: its character as the low byte of a double.
                Some(VCell::Rep(c)) => f64::from_bits(u64::from(*c as u8)),
                _ => 0.0,
            }
        };
        for ix in first..=last {
            let mut big = ix;
            for iy in ix + 1..=last {
                if key(self, big) < key(self, iy) {
                    big = iy;
                }
            }
            self.row_map.swap(ix, big);
        }
    }

    fn cell_text(&self, row: usize, col: usize) -> String {
        let w = self.col_width[col];
        let t = Self::fmt(&self.cells[row][col], w, self.col_places[col]);
        if self.col_left[col] {
            format!("{t:<w$}")
        } else {
            format!("{t:>w$}")
        }
    }

    /// numastat's `display_table` (rows and columns never assigned are
    /// hidden; zeros too unless `show_zero`).
    fn display(&mut self, screen_width: usize, show_zero: bool) -> String {
        let (hr, hc) = (self.header_rows, self.header_cols);
        let ncols = self.ncols();
        let (mut seen, mut non_zero) = (false, false);
        for row in hr..self.cells.len() {
            for col in hc..ncols {
                let nz = match &self.cells[row][col] {
                    VCell::Null | VCell::Rep(_) => continue,
                    VCell::Num(d) => d.to_bits() != 0,
                    VCell::Str(_) => true,
                };
                seen = true;
                self.row_flags[row] |= FLAG_SEEN;
                self.col_flags[col] |= FLAG_SEEN;
                if nz {
                    non_zero = true;
                    self.row_flags[row] |= FLAG_NON_ZERO;
                    self.col_flags[col] |= FLAG_NON_ZERO;
                }
            }
        }
        if !seen {
            return "Table has no data.\n".into();
        }
        if !non_zero && !show_zero {
            return "Table has no non-zero data.\n".into();
        }
        let shown = |f: u8| f & FLAG_ALWAYS != 0 || (f & FLAG_SEEN != 0 && (show_zero || f & FLAG_NON_ZERO != 0));
        let mut out = String::new();
        let mut col: isize = -1;
        let mut data_col = hc;
        while data_col < ncols {
            if !shown(self.col_flags[data_col]) {
                data_col += 1;
                continue;
            }
            if col > 0 {
                out.push('\n');
            }
            for row_ix in 0..self.cells.len() {
                let row = self.row_map[row_ix];
                let f = self.row_flags[row];
                if row >= hr && f & FLAG_ALWAYS == 0 && (f & FLAG_SEEN == 0 || (!show_zero && f & FLAG_NON_ZERO == 0)) {
                    continue;
                }
                let mut line_width = 0;
                for c in 0..hc {
                    out.push_str(&self.cell_text(row, c));
                    line_width += self.col_width[c];
                }
                let mut c = data_col;
                loop {
                    if shown(self.col_flags[c]) {
                        out.push_str(&self.cell_text(row, c));
                        line_width += self.col_width[c];
                    }
                    c += 1;
                    if c >= ncols || line_width + self.col_width[c] > screen_width {
                        break;
                    }
                }
                col = c as isize;
                out.push('\n');
            }
            data_col = col as usize;
        }
        out
    }

    /// The column `-s` sorts by: the Total column, or that of the
    /// `sort_node`-th node's id (numastat's indexing).
    fn sort_col(&self, opts: &NumastatOptions, node_ids: &[u32]) -> usize {
        let total = self.header_cols + node_ids.len();
        match opts.sort_node.and_then(|i| usize::try_from(i).ok()).and_then(|i| node_ids.get(i)) {
            Some(&id) => self.header_cols + id as usize,
            None => total,
        }
    }
}

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
        let sc = t.sort_col(opts, node_ids);
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
                let sc = self.tab.sort_col(&self.opts, &self.node_ids);
                self.tab.sort_desc(2, 2 + self.data_rows - 1, sc);
            }
            out.push_str(&self.tab.display(self.width, !self.opts.skip_zero));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::counters::parse_numastat;
    use crate::stats::process::summarize;
    use crate::stats::VmNuma;

    fn nodes(n: u32) -> Vec<NodeCounters> {
        (0..n)
            .map(|id| NodeCounters {
                id: id * 2,
                lines: parse_numastat(&format!(
                    "numa_hit {}\nnuma_miss 0\nnuma_foreign 0\ninterleave_hit 2305\nlocal_node {}\nother_node 0\n",
                    24703621 + id as u64,
                    24703621 + id as u64
                ))
                .unwrap(),
            })
            .collect()
    }

    #[test]
    fn compat_one_node_is_numastats_layout() {
        let want = "                           node0\n\
                    numa_hit                24703621\n\
                    numa_miss                      0\n\
                    numa_foreign                   0\n\
                    interleave_hit              2305\n\
                    local_node              24703621\n\
                    other_node                     0\n";
        assert_eq!(numastat_compat(&nodes(1), UNLIMITED_WIDTH), want);
    }

    #[test]
    fn compat_folds_at_width_and_reports_unknown_tokens() {
        let mut n = nodes(5);
        n[1].lines.push(("brand_new".into(), 3));
        let t = numastat_compat(&n, 80);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "Token brand_new not in hash table.");
        // 16 + 4 * 16 = 80: four nodes per section, then node8 alone.
        assert_eq!(lines[1], format!("{:16}{:>16}{:>16}{:>16}{:>16}", "", "node0", "node2", "node4", "node6"));
        assert_eq!(lines[8], "");
        assert_eq!(lines[9], format!("{:16}{:>16}", "", "node8"));
        assert_eq!(lines.len(), 16);
        // Below 32 columns numastat still uses 32: one node per section.
        assert_eq!(numastat_compat(&nodes(2), 10).matches("numa_hit").count(), 2);
    }

    #[test]
    fn process_table_like_numastat() {
        let maps = crate::procs::numa_maps::parse(
            "1000 default heap anon=150 N0=150 kernelpagesize_kB=4\n2000 default anon=256 N1=256 kernelpagesize_kB=4\n",
        );
        let p = summarize(21563, "bash", &maps, &[0, 1], [0].into_iter().collect());
        let r = ProcessReport { processes: vec![p.clone()], exited: vec![], unreadable: vec![9] };
        let t = processes_text(&r, &[0, 1], UNLIMITED_WIDTH);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[1], "Per-node process memory usage (in MBs) for PID 21563 (bash)");
        assert_eq!(lines[2], format!("{:17}{:>16}{:>16}{:>16}", "", "Node 0", "Node 1", "Total"));
        assert_eq!(lines[3], format!("{:17}{:>16}{:>16}{:>16}", "", "-".repeat(15), "-".repeat(15), "-".repeat(15)));
        assert_eq!(lines[5], format!("{:17}{:>16}{:>16}{:>16}", "Heap", "0.59", "0.00", "0.59"));
        assert_eq!(
            lines[8],
            format!("{:17}{:>16}{:>16}{:>16}", "-".repeat(16), "-".repeat(15), "-".repeat(15), "-".repeat(15))
        );
        assert_eq!(lines[9], format!("{:17}{:>16}{:>16}{:>16}", "Total", "0.59", "1.00", "1.59"));
        assert!(t.contains("21563 (bash)") && t.contains("36.9%  runs on node 0"), "{t}");
        assert_eq!(skipped_line(&r).as_deref(), Some("1 process(es) could not be read (permission denied): 9"));

        let r2 = ProcessReport { processes: vec![p.clone(), p], exited: vec![4], unreadable: vec![] };
        let t = processes_text(&r2, &[0, 1], UNLIMITED_WIDTH);
        assert!(t.contains(&format!("{:17}{:>16}", "PID", "Node 0")), "{t}");
        assert!(t.contains(&format!("{:17}{:>16}{:>16}{:>16}", "Total", "1.17", "2.00", "3.17")), "{t}");
        let j = processes_json(&r2);
        assert_eq!(j["processes"][0]["nodes"][1]["private_bytes"], 256 * 4096);
        assert_eq!(j["processes"][0]["cpus_nodes"], json!([0]));
        assert_eq!(j["exited"], json!([4]));
    }

    #[test]
    fn meminfo_counts_every_hugepage_size() {
        let n = NodeMeminfo {
            id: 0,
            lines: vec![("MemTotal".into(), 1 << 30), ("HugePages_Total".into(), 1)],
            hugepages: vec![
                crate::topo::HugePages { size_bytes: 2 << 20, total: 1, free: 1, surplus: 0 },
                crate::topo::HugePages { size_bytes: 1 << 30, total: 1, free: 0, surplus: 0 },
            ],
        };
        let t = meminfo_text(std::slice::from_ref(&n), UNLIMITED_WIDTH);
        assert!(t.contains(&format!("{:16}{:>16}{:>16}", "HugePages_Total", "1026.00", "1026.00")), "{t}");
        assert!(t.contains(&format!("{:16}{:>16}{:>16}", "HugePages_Free", "2.00", "2.00")), "{t}");
        let j = meminfo_json(&[n]);
        assert_eq!(j["nodes"][0]["hugepages_total_bytes"], (1u64 << 30) + (2 << 20));
        assert!(j["nodes"][0]["meminfo_bytes"].get("HugePages_Total").is_none());
    }

    #[test]
    fn counters_and_rates() {
        let vm = crate::stats::vmstat::parse_vmstat("numa_hint_faults 10\nnuma_hint_faults_local 4\n");
        let a = CounterSample { nodes: nodes(2), vm };
        let t = counters_text(&a, UNLIMITED_WIDTH);
        assert!(t.contains(&format!("{:16}{:>16}{:>16}{:>16}", "numa_hit", "24703621", "24703622", "49407243")), "{t}");
        assert!(t.contains("  local share") && t.contains("40.0%"), "{t}");
        let j = counters_json(&a);
        assert_eq!(j["nodes"][1]["id"], 2);
        assert_eq!(j["nodes"][1]["numa_hit"], 24703622);
        assert_eq!(j["autonuma"]["hint_faults_local_ratio"], 0.4);
        let mut b = a.clone();
        b.nodes[0].lines[0].1 += 500;
        b.vm = VmNuma { lines: vec![("numa_hint_faults".into(), 20), ("numa_hint_faults_local".into(), 14)] };
        let r = b.rates_since(&a, std::time::Duration::from_millis(500));
        let t = rates_text(&r, UNLIMITED_WIDTH);
        assert!(t.contains(&format!("{:16}{:>16}{:>16}{:>16}{:>16}", "numa_hit", "500", "0", "500", "1000")), "{t}");
        assert!(t.contains("100.0%"), "{t}");
        let j = rates_json(&r);
        assert_eq!(j["nodes"][0]["numa_hit"]["per_sec"], 1000.0);
        assert_eq!(j["autonuma"]["numa_hint_faults"]["delta"], 10);
    }
}
