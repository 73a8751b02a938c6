//! `/proc/PID/numa_maps`: one line per mapping with its memory policy and
//! the pages it has on each node, e.g.
//!
//! ```text
//! 7f2c1a000000 bind:1 anon=2560 dirty=2560 active=0 N1=2560 kernelpagesize_kB=4
//! 01b4c000 default heap anon=33 dirty=33 N0=33 kernelpagesize_kB=4
//! 7f00 default file=/usr/lib/x.so mapped=3 N0=3 kernelpagesize_kB=4
//! 7fff default stack anon=5 dirty=5 N0=5 kernelpagesize_kB=4
//! 7f40 default file=/anon_hugepage\040(deleted) huge dirty=1 N0=1 kernelpagesize_kB=2048
//! ```
//!
//! `Nk=` counts pages of `kernelpagesize_kB`.

use std::collections::BTreeMap;

use crate::sets::MAX_NODES;

/// What a mapping is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MappingKind {
    /// `heap`.
    Heap,
    /// `stack`.
    Stack,
    /// `huge` (hugetlbfs).
    Huge,
    /// `file=PATH`.
    File(String),
    /// Anonymous, not heap or stack.
    Anon,
}

/// One mapping.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NumaMapping {
    /// Start address.
    pub start: u64,
    /// Policy as the kernel prints it (`default`, `bind:0-1`,
    /// `interleave:0-3`, `prefer:1`, `local`, ...).
    pub policy: String,
    /// Kind.
    pub kind: MappingKind,
    /// `anon=` pages.
    pub anon_pages: u64,
    /// Pages per node (`Nk=`).
    pub pages: BTreeMap<u32, u64>,
    /// `kernelpagesize_kB` in bytes.
    pub page_size: u64,
}

impl NumaMapping {
    /// Bytes on each node (saturating: a crafted line may hold counts
    /// whose bytes do not fit 64 bits).
    pub fn bytes_per_node(&self) -> impl Iterator<Item = (u32, u64)> + '_ {
        self.pages.iter().map(|(n, p)| (*n, p.saturating_mul(self.page_size)))
    }

    /// Total bytes resident (saturating).
    pub fn bytes(&self) -> u64 {
        self.pages.values().fold(0u64, |a, p| a.saturating_add(*p)).saturating_mul(self.page_size)
    }

    /// Whether its memory is private to the process (anonymous, heap,
    /// stack, or anonymous pages of a private file mapping).
    pub fn is_private(&self) -> bool {
        !matches!(self.kind, MappingKind::File(_)) || self.anon_pages > 0
    }
}

/// Parses `numa_maps` text; lines that do not parse are skipped.
pub fn parse(text: &str) -> Vec<NumaMapping> {
    views(text).map(|v| v.to_mapping()).collect()
}

/// Borrowed views of every line that parses: what [`parse`] reads, without
/// allocating (for summing many processes' maps).
pub fn views(text: &str) -> impl Iterator<Item = MappingView<'_>> {
    text.lines().filter_map(MappingView::parse)
}

/// The kind of a mapping as written (`File` holds the path still escaped,
/// `\040` for a space).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KindView<'a> {
    /// `heap`.
    Heap,
    /// `stack`.
    Stack,
    /// `huge` (hugetlbfs).
    Huge,
    /// `file=PATH`, escaped.
    File(&'a str),
    /// Anonymous, not heap or stack.
    Anon,
}

/// One `numa_maps` line, borrowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MappingView<'a> {
    /// Start address.
    pub start: u64,
    /// Policy as the kernel prints it.
    pub policy: &'a str,
    /// Kind.
    pub kind: KindView<'a>,
    /// `anon=` pages.
    pub anon_pages: u64,
    /// `kernelpagesize_kB` in bytes.
    pub page_size: u64,
    /// `mapmax=`: the most processes mapping one of its pages (the kernel
    /// prints it only above 1; 1 when absent).
    pub mapmax: u64,
    /// The fields after the policy.
    tail: &'a str,
    /// Where in `tail` the first `Nk=` field starts.
    nodes_at: Option<usize>,
}

/// The space-separated fields of `s`. A plain byte loop: the fields are a
/// few bytes long, shorter than what makes memchr pay off.
fn fields(s: &str) -> impl Iterator<Item = &str> {
    let bytes = s.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || {
        if i >= bytes.len() {
            return None;
        }
        let start = i;
        while i < bytes.len() && bytes[i] != b' ' {
            i += 1;
        }
        let field = s.get(start..i);
        i += 1;
        field
    })
}

impl<'a> MappingView<'a> {
    /// Parses one line.
    pub fn parse(line: &'a str) -> Option<Self> {
        let (addr, rest) = line.split_once(' ')?;
        let start = u64::from_str_radix(addr, 16).ok()?;
        // Two policy names hold a space: "prefer (many)" and "weighted interleave".
        let split_at =
            ["prefer (many)", "weighted interleave"].iter().find(|p| rest.starts_with(*p)).map_or(0, |p| p.len());
        let (policy, tail) = match rest[split_at..].find(' ') {
            Some(i) => (&rest[..split_at + i], &rest[split_at + i + 1..]),
            None => (rest, ""),
        };
        let mut v = MappingView {
            start,
            policy,
            kind: KindView::Anon,
            anon_pages: 0,
            page_size: 4096,
            mapmax: 1,
            tail,
            nodes_at: None,
        };
        let mut file = None;
        let mut huge = false;
        // Dispatch on the first byte: most fields (dirty=, active=, mapped=,
        // ...) are skipped without looking further.
        for tok in fields(tail) {
            match tok.as_bytes().first() {
                Some(b'h') if tok == "heap" => v.kind = KindView::Heap,
                Some(b'h') if tok == "huge" => huge = true,
                // Kernels before 4.5 wrote `stack:TID` for thread stacks.
                Some(b's') if tok == "stack" || tok.starts_with("stack:") => v.kind = KindView::Stack,
                Some(b'f') => file = tok.strip_prefix("file=").or(file),
                Some(b'a') => {
                    if let Some(n) = tok.strip_prefix("anon=") {
                        v.anon_pages = n.parse().unwrap_or(0);
                    }
                }
                Some(b'm') => {
                    if let Some(n) = tok.strip_prefix("mapmax=") {
                        v.mapmax = n.parse().unwrap_or(1);
                    }
                }
                Some(b'k') => {
                    if let Some(n) = tok.strip_prefix("kernelpagesize_kB=") {
                        v.page_size = n.parse::<u64>().unwrap_or(4).saturating_mul(1024);
                    }
                }
                Some(b'N') if v.nodes_at.is_none() && tok.as_bytes().get(1).is_some_and(u8::is_ascii_digit) => {
                    v.nodes_at = Some(tok.as_ptr() as usize - tail.as_ptr() as usize);
                }
                _ => {}
            }
        }
        if huge {
            v.kind = KindView::Huge;
        } else if let Some(f) = file {
            v.kind = KindView::File(f);
        }
        Some(v)
    }

    /// Pages per node (`Nk=`), in the line's order. A node id at or above
    /// [`MAX_NODES`] is no kernel's: its field is skipped.
    pub fn pages(&self) -> impl Iterator<Item = (u32, u64)> + 'a {
        let from = self.nodes_at.map_or(self.tail.len(), |i| i.min(self.tail.len()));
        fields(&self.tail[from..]).filter_map(|tok| {
            let (k, v) = tok.strip_prefix('N')?.split_once('=')?;
            let node = k.parse::<u32>().ok().filter(|&n| n < MAX_NODES)?;
            Some((node, v.parse().unwrap_or(0)))
        })
    }

    /// Bytes on each node (saturating).
    pub fn bytes_per_node(&self) -> impl Iterator<Item = (u32, u64)> + 'a {
        let size = self.page_size;
        self.pages().map(move |(n, p)| (n, p.saturating_mul(size)))
    }

    /// The owned mapping.
    pub fn to_mapping(&self) -> NumaMapping {
        NumaMapping {
            start: self.start,
            policy: self.policy.to_string(),
            kind: match self.kind {
                KindView::Heap => MappingKind::Heap,
                KindView::Stack => MappingKind::Stack,
                KindView::Huge => MappingKind::Huge,
                KindView::File(f) => MappingKind::File(f.replace("\\040", " ")),
                KindView::Anon => MappingKind::Anon,
            },
            anon_pages: self.anon_pages,
            pages: self.pages().collect(),
            page_size: self.page_size,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_kinds_policies_and_nodes() {
        let t = "7f2c1a000000 bind:1 anon=2560 dirty=2560 active=0 N1=2560 kernelpagesize_kB=4
01b4c000 default heap anon=33 dirty=33 N0=30 N2=3 kernelpagesize_kB=4
7f00 default file=/usr/lib/x\\040y.so mapped=3 N0=3 kernelpagesize_kB=4
7fff default stack anon=5 dirty=5 N0=5 kernelpagesize_kB=4
7f40 default file=/anon_hugepage\\040(deleted) huge dirty=1 N0=1 kernelpagesize_kB=2048
7f50 prefer (many):0-1 anon=1 N1=1 kernelpagesize_kB=4
7f60 weighted interleave:0-1 anon=2 N0=1 N1=1 kernelpagesize_kB=4
7f70 interleave:0-3
";
        let m = parse(t);
        assert_eq!(m.len(), 8);
        assert_eq!(m[0].policy, "bind:1");
        assert_eq!(m[0].bytes_per_node().collect::<Vec<_>>(), vec![(1, 2560 * 4096)]);
        assert_eq!(m[1].kind, MappingKind::Heap);
        assert_eq!(m[1].pages.get(&2), Some(&3));
        assert_eq!(m[2].kind, MappingKind::File("/usr/lib/x y.so".into()));
        assert!(!m[2].is_private());
        assert_eq!(m[3].kind, MappingKind::Stack);
        assert_eq!(m[4].kind, MappingKind::Huge);
        assert_eq!(m[4].bytes(), 2 << 20);
        assert_eq!(m[5].policy, "prefer (many):0-1");
        assert_eq!(m[6].policy, "weighted interleave:0-1");
        assert_eq!(m[7].bytes(), 0);
        let v: Vec<MappingView> = views(t).collect();
        assert_eq!(v[2].kind, KindView::File("/usr/lib/x\\040y.so"));
        assert_eq!(v[1].bytes_per_node().collect::<Vec<_>>(), vec![(0, 30 * 4096), (2, 3 * 4096)]);
        assert_eq!(parse("7fff default stack:1234 anon=1 N0=1\n")[0].kind, MappingKind::Stack);
    }

    #[test]
    fn numbers_beyond_the_kernel() {
        // Pages times the page size, and the page size in kB times 1024,
        // past 64 bits: a panic in debug builds, a small wrapped number in
        // release ones. Now saturating.
        let m = parse("7f00 default anon=1 N0=18446744073709551615 N1=2 kernelpagesize_kB=18446744073709551615\n");
        assert_eq!(m[0].page_size, u64::MAX);
        assert_eq!(m[0].bytes(), u64::MAX);
        assert_eq!(m[0].bytes_per_node().collect::<Vec<_>>(), vec![(0, u64::MAX), (1, u64::MAX)]);
        let v: Vec<MappingView> = views("7f00 default N0=18446744073709551615 N1=9 kernelpagesize_kB=4\n").collect();
        assert_eq!(v[0].bytes_per_node().collect::<Vec<_>>(), vec![(0, u64::MAX), (1, 9 * 4096)]);
        // Node ids no kernel has (MAX_NODES is 1024) are not a node's pages.
        let m = parse("7f00 default anon=3 N1023=1 N1024=1 N4294967295=1 kernelpagesize_kB=4\n");
        assert_eq!(m[0].pages.keys().copied().collect::<Vec<_>>(), vec![1023]);
    }
}
