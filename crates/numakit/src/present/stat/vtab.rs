//! numastat's table engine, rewritten: cells of numbers, strings and
//! rules; per-row and per-column seen/non-zero flags kept from one display
//! to the next; numastat's column widths, its (unstable) selection sort
//! and its folding to the screen width. Only [`super::numastat`] uses it.

pub(super) const FLAG_SEEN: u8 = 1 << 2;
pub(super) const FLAG_NON_ZERO: u8 = 1 << 3;
pub(super) const FLAG_ALWAYS: u8 = 1 << 4;

/// A cell of numastat's table.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum VCell {
    Null,
    Num(f64),
    Str(String),
    Rep(char),
}

/// numastat's table, state and all: its rows keep their seen/non-zero
/// flags and their sorted order from one display to the next, as
/// numastat's do when it reuses a table for several processes.
pub(super) struct VTab {
    pub(super) header_rows: usize,
    pub(super) header_cols: usize,
    pub(super) cells: Vec<Vec<VCell>>,
    pub(super) row_map: Vec<usize>,
    pub(super) row_flags: Vec<u8>,
    pub(super) col_flags: Vec<u8>,
    pub(super) col_width: Vec<usize>,
    pub(super) col_places: Vec<usize>,
    pub(super) col_left: Vec<bool>,
}

impl VTab {
    pub(super) fn new(header_rows: usize, header_cols: usize, rows: usize, cols: usize) -> Self {
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

    pub(super) fn ncols(&self) -> usize {
        self.cells.first().map_or(0, Vec::len)
    }

    pub(super) fn zero_data(&mut self) {
        let (hr, hc) = (self.header_rows, self.header_cols);
        for row in self.cells.iter_mut().skip(hr) {
            for c in row.iter_mut().skip(hc) {
                *c = VCell::Num(0.0);
            }
        }
    }

    pub(super) fn add(&mut self, row: usize, col: usize, v: f64) {
        let c = &mut self.cells[row][col];
        *c = VCell::Num(match c {
            VCell::Num(d) => *d + v,
            _ => v,
        });
    }

    /// numastat's `fmt_cell_data`: the text, cut to `max_width` bytes.
    pub(super) fn fmt(c: &VCell, max_width: usize, places: usize) -> String {
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

    pub(super) fn auto_width(&mut self, col: usize, min: usize, max: usize) {
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
    pub(super) fn sort_desc(&mut self, first: usize, last: usize, col: usize) {
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

    pub(super) fn cell_text(&self, row: usize, col: usize) -> String {
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
    pub(super) fn display(&mut self, screen_width: usize, show_zero: bool) -> String {
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
    pub(super) fn sort_col(&self, sort_node: Option<i64>, node_ids: &[u32]) -> usize {
        let total = self.header_cols + node_ids.len();
        match sort_node.and_then(|i| usize::try_from(i).ok()).and_then(|i| node_ids.get(i)) {
            Some(&id) => self.header_cols + id as usize,
            None => total,
        }
    }
}
