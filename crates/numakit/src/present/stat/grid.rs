//! The table engine of numakit's own `stat` tables: a left header column
//! and data columns of one width, folded into sections that fit the
//! screen the way numastat folds its tables; and the cell formats (MB,
//! per cent) the tables share.

/// One cell of a table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Cell {
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
pub(super) struct Grid {
    pub(super) left_width: usize,
    pub(super) col_width: usize,
    pub(super) rows: Vec<(Cell, Vec<Cell>)>,
}

impl Grid {
    pub(super) fn render(&self, screen_width: usize) -> String {
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

pub(super) fn justify(c: &Cell, width: usize, right: bool) -> String {
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

pub(super) fn text(s: impl Into<String>) -> Cell {
    Cell::Text(s.into())
}

/// numastat's column width rule for the left column of `-p` tables: the
/// longest label plus a gutter, at least 16 + 1 and at most 24.
pub(super) fn left_width_for(labels: &[String]) -> usize {
    (labels.iter().map(|l| l.chars().count()).max().unwrap_or(0).max(16) + 1).min(24)
}

pub(super) fn node_header(ids: impl Iterator<Item = u32>, total: bool) -> Vec<(Cell, Vec<Cell>)> {
    let mut head: Vec<Cell> = ids.map(|id| text(format!("Node {id}"))).collect();
    if total {
        head.push(text("Total"));
    }
    let rule = vec![Cell::Dashes; head.len()];
    vec![(Cell::Empty, head), (Cell::Empty, rule)]
}

pub(super) fn mb(bytes: u64) -> String {
    format!("{:.2}", bytes as f64 / (1024.0 * 1024.0))
}

pub(super) fn pct(r: Option<f64>) -> String {
    r.map_or_else(|| "n/a".to_string(), |r| format!("{:.1}%", r * 100.0))
}
