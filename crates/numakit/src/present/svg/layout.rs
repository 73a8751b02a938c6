//! Where things go: box sizes and positions (grids, flows, rows), the one
//! width every node box shares, and text widths estimated from character
//! counts. Pure arithmetic on [`super::view`]'s structures; writes nothing.

use std::collections::BTreeSet;

use crate::sets::CpuSet;
use crate::topo::{Node, Topology};

use super::view::{has_bar, node_view, package_of, Core, Group, NodeView, Pu, Slice};
use super::write::plural;
use super::MAX_COLS;

/// Outer margin of the picture.
pub(super) const MARGIN: u32 = 12;
/// Space between boxes of a grid.
pub(super) const GAP: u32 = 10;
/// Padding inside node and package boxes.
pub(super) const PAD: u32 = 6;
/// Padding inside a package slice drawn in a node.
pub(super) const SLICE_PAD: u32 = 3;
/// Space between package slices in a node.
pub(super) const SLICE_GAP: u32 = 4;
/// Narrowest content of a node box.
pub(super) const NODE_MIN_INNER: u32 = 196;
/// PUs per row in the full view.
pub(super) const ROW_PUS: usize = 8;
/// PUs per row in the compact view.
pub(super) const ROW_PUS_COMPACT: usize = 24;
/// Device lines per node before `+N more`.
pub(super) const MAX_DEVICE_LINES: usize = 6;

pub(super) const TITLE_SIZE: u32 = 15;
pub(super) const HEAD_SIZE: u32 = 13;
pub(super) const TEXT_SIZE: u32 = 11;
pub(super) const SMALL_SIZE: u32 = 10;
pub(super) const LINE_H: u32 = 15;
pub(super) const HEAD_H: u32 = 18;
pub(super) const DEV_H: u32 = 17;
pub(super) const BAR_H: u32 = 6;
pub(super) const SLICE_LABEL_H: u32 = 13;
pub(super) const PKG_LABEL_H: u32 = 18;

/// Sizes of PUs and cores in one of the two views.
#[derive(Clone, Copy)]
pub(super) struct PuStyle {
    pub(super) pu_w: u32,
    pub(super) pu_h: u32,
    pub(super) pu_gap: u32,
    pub(super) core_pad: u32,
    pub(super) core_gap: u32,
}

impl PuStyle {
    pub(super) fn core_size(&self, threads: usize) -> (u32, u32) {
        let t = threads.max(1) as u32;
        (t * self.pu_w + (t - 1) * self.pu_gap + 2 * self.core_pad, self.pu_h + 2 * self.core_pad)
    }
}

pub(super) const COMPACT: PuStyle = PuStyle { pu_w: 7, pu_h: 12, pu_gap: 1, core_pad: 1, core_gap: 2 };

pub(super) struct Plan<'a> {
    pub(super) groups: Vec<Group<'a>>,
    pub(super) memory_only: Vec<NodeView<'a>>,
    pub(super) full: PuStyle,
    pub(super) inner_w: u32,
    pub(super) top_cols: usize,
    /// Column count for the node count (the memory-only row follows it).
    pub(super) node_cols: usize,
}

impl<'a> Plan<'a> {
    pub(super) fn new(topo: &'a Topology) -> Self {
        let pkg_of: Vec<(u32, Option<usize>)> = topo.possible_cpus.iter().map(|c| (c, package_of(topo, c))).collect();
        let pkg = |cpu: u32| pkg_of.binary_search_by_key(&cpu, |p| p.0).ok().and_then(|i| pkg_of[i].1);
        let cpu_nodes: Vec<&Node> = topo.nodes.iter().filter(|n| !n.cpus.is_empty()).collect();
        let node_pkgs: Vec<BTreeSet<usize>> =
            cpu_nodes.iter().map(|n| n.cpus.iter().filter_map(pkg).collect()).collect();
        // Packages hold nodes when no node spans two packages.
        let frames = !topo.packages.is_empty()
            && node_pkgs.iter().all(|s| s.len() <= 1)
            && node_pkgs.iter().any(|s| s.len() == 1);
        let max_id = topo.possible_cpus.last().unwrap_or(0);
        let digits = max_id.to_string().len() as u32;
        let full =
            PuStyle { pu_w: (digits * 64 + 80).div_ceil(10).max(20), pu_h: 18, pu_gap: 2, core_pad: 2, core_gap: 3 };

        let view = |n: &'a Node| node_view(topo, n, !frames, &pkg);
        let mut groups: Vec<Group<'a>> = Vec::new();
        if frames {
            for (i, p) in topo.packages.iter().enumerate() {
                let nodes: Vec<NodeView<'a>> =
                    cpu_nodes.iter().zip(&node_pkgs).filter(|(_, s)| s.contains(&i)).map(|(n, _)| view(n)).collect();
                if nodes.is_empty() {
                    continue;
                }
                let cores =
                    if p.cores > 0 { format!(" · {} core{}", p.cores, plural(p.cores)) } else { String::new() };
                let cols = grid_cols(nodes.len());
                groups.push(Group::Package { label: format!("Package {}{cores}", p.id), nodes, cols });
            }
            for (n, s) in cpu_nodes.iter().zip(&node_pkgs) {
                if s.is_empty() {
                    groups.push(Group::Node(view(n)));
                }
            }
        } else {
            groups.extend(cpu_nodes.iter().map(|n| Group::Node(view(n))));
        }
        let memory_only: Vec<NodeView<'a>> = topo.nodes.iter().filter(|n| n.cpus.is_empty()).map(view).collect();

        // One width for every node box: room for the widest slice, and
        // for as many slices side by side as fit in a row of ROW_PUS
        // single-thread PUs.
        let all_views = || {
            groups
                .iter()
                .flat_map(|g| match g {
                    Group::Package { nodes, .. } => nodes.iter().collect::<Vec<_>>(),
                    Group::Node(v) => vec![v],
                })
                .chain(memory_only.iter())
        };
        let row8 = natural_row_w(&single_pus(ROW_PUS), &full, ROW_PUS);
        let mut inner_w = NODE_MIN_INNER;
        for v in all_views() {
            let style = if v.compact { COMPACT } else { full };
            for (w, _) in slice_sizes(v, &style, inner_w.max(row8)) {
                inner_w = inner_w.max(w);
            }
        }
        let cap = inner_w.max(row8);
        for v in all_views() {
            let style = if v.compact { COMPACT } else { full };
            let sizes = slice_sizes(v, &style, cap);
            let per_row = slices_per_row(v, &sizes, cap);
            for row in sizes.chunks(per_row) {
                let w = row.iter().map(|s| s.0).sum::<u32>() + SLICE_GAP * (row.len() as u32 - 1);
                inner_w = inner_w.max(w);
            }
        }
        let node_count = cpu_nodes.len().max(1);
        let node_cols = grid_cols(node_count);
        let inner_cols = groups
            .iter()
            .map(|g| match g {
                Group::Package { cols, .. } => *cols,
                Group::Node(_) => 1,
            })
            .max()
            .unwrap_or(1);
        let top_cols = balance(groups.len(), (node_cols / inner_cols).max(1));
        Plan { groups, memory_only, full, inner_w, top_cols, node_cols }
    }

    pub(super) fn node_w(&self) -> u32 {
        self.inner_w + 2 * PAD
    }

    pub(super) fn style(&self, v: &NodeView) -> PuStyle {
        if v.compact {
            COMPACT
        } else {
            self.full
        }
    }

    /// Positions of the slices of a node (and of the cores in each),
    /// relative to the content origin.
    pub(super) fn slice_layout(&self, v: &NodeView) -> (Vec<(Cells, u32, u32)>, Cells) {
        let style = self.style(v);
        let inner: Vec<(Cells, u32, u32)> = v.slices.iter().map(|s| slice_cells(s, &style, self.inner_w)).collect();
        let sizes: Vec<(u32, u32)> = inner.iter().map(|(_, w, h)| (*w, *h)).collect();
        let per_row = slices_per_row(v, &sizes, self.inner_w);
        let outer = rows_of(&sizes, per_row, SLICE_GAP);
        (inner, outer)
    }

    /// Lines of CPU ranges under the cores; `true` marks the collapsed
    /// offline CPUs (which get a tooltip naming each).
    pub(super) fn text_lines(&self, v: &NodeView) -> Vec<(String, bool)> {
        let mut lines = Vec::new();
        if v.compact {
            let drawn: CpuSet = v.slices.iter().flat_map(|s| &s.cores).flat_map(|c| &c.pus).map(|p| p.id).collect();
            lines.extend(
                wrap(&format!("CPUs {}", drawn.to_list()), self.inner_w, SMALL_SIZE, 4).into_iter().map(|l| (l, false)),
            );
        }
        if !v.collapsed.is_empty() {
            let text = format!("offline: CPUs {} ({})", v.collapsed.to_list(), v.collapsed.len());
            lines.extend(wrap(&text, self.inner_w, SMALL_SIZE, 2).into_iter().map(|l| (l, true)));
        }
        lines
    }

    pub(super) fn node_h(&self, v: &NodeView) -> u32 {
        let mut h = PAD + HEAD_H + LINE_H;
        if has_bar(v.node) {
            h += BAR_H + 4;
        }
        if v.near.is_some() {
            h += LINE_H;
        }
        if !v.slices.is_empty() {
            h += 4 + self.slice_layout(v).1.h;
        }
        h += self.text_lines(v).len() as u32 * 13;
        let dev_lines = v.devices.len().min(MAX_DEVICE_LINES + 1) as u32;
        if dev_lines > 0 {
            h += 4 + dev_lines * (DEV_H + 3);
        }
        if !v.other_devices.is_empty() {
            h += LINE_H;
        }
        h + PAD
    }

    pub(super) fn group_size(&self, g: &Group) -> (u32, u32) {
        match g {
            Group::Node(v) => (self.node_w(), self.node_h(v)),
            Group::Package { label, nodes, cols } => {
                let sizes: Vec<(u32, u32)> = nodes.iter().map(|v| (self.node_w(), self.node_h(v))).collect();
                let cells = grid(&sizes, *cols, GAP);
                (cells.w.max(bold_w(label, HEAD_SIZE)) + 2 * PAD, cells.h + PKG_LABEL_H + 2 * PAD)
            }
        }
    }
}

/// Grid columns for `n` boxes: all in a row up to 4, then about twice as
/// many columns as rows, at most [`MAX_COLS`], balanced so the last row is
/// not nearly empty.
pub(super) fn grid_cols(n: usize) -> usize {
    if n <= 4 {
        return n.max(1);
    }
    let mut c = 1;
    while c * c < 2 * n {
        c += 1;
    }
    balance(n, c.min(MAX_COLS))
}

/// Fewest columns that keep the row count of `cols` columns.
pub(super) fn balance(n: usize, cols: usize) -> usize {
    if n == 0 {
        return 1;
    }
    let cols = cols.clamp(1, n);
    let rows = n.div_ceil(cols);
    n.div_ceil(rows)
}

/// A placed box.
#[derive(Clone, Copy)]
pub(super) struct Cell {
    pub(super) x: u32,
    pub(super) y: u32,
    pub(super) w: u32,
    pub(super) h: u32,
}

/// Placed boxes and the extent they cover.
pub(super) struct Cells {
    pub(super) cells: Vec<Cell>,
    pub(super) w: u32,
    pub(super) h: u32,
}

/// Lays boxes in a grid of `cols` columns: each column as wide as its
/// widest box, each row as tall as its tallest; cells are stretched to
/// their column and row.
pub(super) fn grid(sizes: &[(u32, u32)], cols: usize, gap: u32) -> Cells {
    let cols = cols.max(1);
    let rows = sizes.len().div_ceil(cols);
    let mut col_w = vec![0u32; cols];
    let mut row_h = vec![0u32; rows];
    for (i, (w, h)) in sizes.iter().enumerate() {
        col_w[i % cols] = col_w[i % cols].max(*w);
        row_h[i / cols] = row_h[i / cols].max(*h);
    }
    let col_x: Vec<u32> = col_w
        .iter()
        .scan(0, |x, w| {
            let here = *x;
            *x += w + gap;
            Some(here)
        })
        .collect();
    let row_y: Vec<u32> = row_h
        .iter()
        .scan(0, |y, h| {
            let here = *y;
            *y += h + gap;
            Some(here)
        })
        .collect();
    let cells = (0..sizes.len())
        .map(|i| Cell { x: col_x[i % cols], y: row_y[i / cols], w: col_w[i % cols], h: row_h[i / cols] })
        .collect();
    let used_cols = cols.min(sizes.len());
    let w = col_w[..used_cols].iter().sum::<u32>() + gap * (used_cols.max(1) as u32 - 1);
    let h = row_h.iter().sum::<u32>() + gap * (rows.max(1) as u32 - 1);
    Cells { cells, w, h }
}

/// Lays boxes left to right, wrapping at `max_w` (at least one per row).
pub(super) fn flow(sizes: &[(u32, u32)], max_w: u32, gap: u32) -> Cells {
    let mut cells = Vec::with_capacity(sizes.len());
    let (mut x, mut y, mut row_h, mut w) = (0u32, 0u32, 0u32, 0u32);
    for &(bw, bh) in sizes {
        if x > 0 && x + bw > max_w {
            y += row_h + gap;
            x = 0;
            row_h = 0;
        }
        cells.push(Cell { x, y, w: bw, h: bh });
        w = w.max(x + bw);
        row_h = row_h.max(bh);
        x += bw + gap;
    }
    Cells { cells, w, h: y + row_h }
}

/// Cores and size of one slice laid out in at most `max_w` pixels.
pub(super) fn slice_cells(s: &Slice, style: &PuStyle, max_w: u32) -> (Cells, u32, u32) {
    let (pad, label_h) = if s.label.is_some() { (SLICE_PAD, SLICE_LABEL_H) } else { (0, 0) };
    let core_sizes: Vec<(u32, u32)> = s.cores.iter().map(|c| style.core_size(c.pus.len())).collect();
    let limit = if style.pu_w == COMPACT.pu_w { ROW_PUS_COMPACT } else { ROW_PUS };
    let row_w = natural_row_w(&s.cores, style, limit);
    let cells = flow(&core_sizes, row_w.min(max_w - 2 * pad), style.core_gap);
    let label_w = s.label.as_deref().map_or(0, |l| text_w(l, SMALL_SIZE));
    let w = cells.w.max(label_w) + 2 * pad;
    let h = cells.h + label_h + 2 * pad;
    (cells, w, h)
}

pub(super) fn slice_sizes(v: &NodeView, style: &PuStyle, max_w: u32) -> Vec<(u32, u32)> {
    v.slices.iter().map(|s| slice_cells(s, style, max_w)).map(|(_, w, h)| (w, h)).collect()
}

/// How many slices of a node go in one row: as many as fit in `max_w`
/// and hold at most a row of PUs together, balanced over the rows.
pub(super) fn slices_per_row(v: &NodeView, sizes: &[(u32, u32)], max_w: u32) -> usize {
    let limit = if v.compact { ROW_PUS_COMPACT } else { ROW_PUS };
    let (mut n, mut w, mut pus) = (0usize, 0u32, 0usize);
    for (s, (sw, _)) in v.slices.iter().zip(sizes) {
        let p: usize = s.cores.iter().map(|c| c.pus.len()).sum();
        let next_w = if n == 0 { *sw } else { w + SLICE_GAP + sw };
        if n > 0 && (next_w > max_w || pus + p > limit) {
            break;
        }
        n += 1;
        w = next_w;
        pus += p;
    }
    balance(sizes.len(), n.max(1))
}

/// Boxes in rows of `per_row`, each row as tall as its tallest box.
pub(super) fn rows_of(sizes: &[(u32, u32)], per_row: usize, gap: u32) -> Cells {
    let mut cells = Vec::with_capacity(sizes.len());
    let (mut y, mut w) = (0u32, 0u32);
    let mut h = 0;
    for row in sizes.chunks(per_row.max(1)) {
        let mut x = 0;
        let row_h = row.iter().map(|s| s.1).max().unwrap_or(0);
        for &(bw, bh) in row {
            cells.push(Cell { x, y, w: bw, h: bh });
            x += bw + gap;
        }
        w = w.max(x.saturating_sub(gap));
        h = y + row_h;
        y += row_h + gap;
    }
    Cells { cells, w, h }
}

/// `n` one-PU cores (to measure a row).
pub(super) fn single_pus(n: usize) -> Vec<Core> {
    (0..n as u32).map(|id| Core { pus: vec![Pu { id, online: true }] }).collect()
}

/// Width of the widest row when cores are packed `limit` PUs to a row.
pub(super) fn natural_row_w(cores: &[Core], style: &PuStyle, limit: usize) -> u32 {
    let (mut best, mut w, mut pus) = (0u32, 0u32, 0usize);
    for c in cores {
        let n = c.pus.len();
        let (cw, _) = style.core_size(n);
        if pus > 0 && pus + n > limit {
            best = best.max(w);
            w = 0;
            pus = 0;
        }
        w += if pus > 0 { style.core_gap } else { 0 } + cw;
        pus += n;
    }
    best.max(w)
}

/// Estimated width of text in pixels, in hundredths of an em per
/// character (generous for DejaVu Sans, the widest of the usual fonts).
pub(super) const EM_PCT: u32 = 60;

pub(super) fn text_w(s: &str, size: u32) -> u32 {
    (s.chars().count() as u32 * size * EM_PCT).div_ceil(100)
}

/// Estimated width of bold text.
pub(super) fn bold_w(s: &str, size: u32) -> u32 {
    (s.chars().count() as u32 * size * 68).div_ceil(100)
}

/// `s` cut with an ellipsis to fit `w` pixels.
pub(super) fn truncate_w(s: &str, w: u32, size: u32) -> String {
    let max = (w * 100 / (size * EM_PCT)) as usize;
    truncate(s, max)
}

/// `s` cut with an ellipsis to at most `max` characters.
pub(super) fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

/// Splits `s` at commas or spaces into lines that fit `w` pixels, at most
/// `max_lines` (the last one cut with an ellipsis).
pub(super) fn wrap(s: &str, w: u32, size: u32, max_lines: usize) -> Vec<String> {
    let max = ((w * 100 / (size * EM_PCT)) as usize).max(8);
    let mut lines: Vec<String> = Vec::new();
    let mut cur = String::new();
    let mut rest = s;
    while !rest.is_empty() {
        // Next token, keeping its trailing separator.
        let end = rest.find([',', ' ']).map_or(rest.len(), |i| i + 1);
        let (tok, r) = rest.split_at(end);
        rest = r;
        if !cur.is_empty() && cur.chars().count() + tok.trim_end().chars().count() > max {
            lines.push(std::mem::take(&mut cur).trim_end().to_string());
        }
        cur.push_str(tok);
    }
    if !cur.is_empty() {
        lines.push(cur.trim_end().to_string());
    }
    if lines.len() > max_lines {
        lines.truncate(max_lines);
        if let Some(last) = lines.last_mut() {
            *last = truncate(&format!("{last} …"), max);
        }
    }
    lines.into_iter().map(|l| truncate(&l, max)).collect()
}
