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
    /// Bytes on each node.
    pub fn bytes_per_node(&self) -> impl Iterator<Item = (u32, u64)> + '_ {
        self.pages.iter().map(|(n, p)| (*n, p * self.page_size))
    }

    /// Total bytes resident.
    pub fn bytes(&self) -> u64 {
        self.pages.values().sum::<u64>() * self.page_size
    }

    /// Whether its memory is private to the process (anonymous, heap,
    /// stack, or anonymous pages of a private file mapping).
    pub fn is_private(&self) -> bool {
        !matches!(self.kind, MappingKind::File(_)) || self.anon_pages > 0
    }
}

/// Parses `numa_maps` text; lines that do not parse are skipped.
pub fn parse(text: &str) -> Vec<NumaMapping> {
    text.lines().filter_map(parse_line).collect()
}

fn parse_line(line: &str) -> Option<NumaMapping> {
    let (addr, rest) = line.split_once(' ')?;
    let start = u64::from_str_radix(addr, 16).ok()?;
    // Two policy names hold a space: "prefer (many)" and "weighted interleave".
    let split_at =
        ["prefer (many)", "weighted interleave"].iter().find(|p| rest.starts_with(*p)).map_or(0, |p| p.len());
    let (policy, tail) = match rest[split_at..].find(' ') {
        Some(i) => (&rest[..split_at + i], &rest[split_at + i + 1..]),
        None => (rest, ""),
    };
    let mut m = NumaMapping {
        start,
        policy: policy.to_string(),
        kind: MappingKind::Anon,
        anon_pages: 0,
        pages: BTreeMap::new(),
        page_size: 4096,
    };
    let mut file = None;
    let mut huge = false;
    for tok in tail.split(' ') {
        match tok {
            "heap" => m.kind = MappingKind::Heap,
            "stack" => m.kind = MappingKind::Stack,
            "huge" => huge = true,
            _ => {
                let Some((k, v)) = tok.split_once('=') else { continue };
                if let Some(node) = k.strip_prefix('N').and_then(|n| n.parse::<u32>().ok()) {
                    m.pages.insert(node, v.parse().unwrap_or(0));
                } else {
                    match k {
                        "file" => file = Some(v.replace("\\040", " ")),
                        "anon" => m.anon_pages = v.parse().unwrap_or(0),
                        "kernelpagesize_kB" => m.page_size = v.parse::<u64>().unwrap_or(4) * 1024,
                        _ => {}
                    }
                }
            }
        }
    }
    if huge {
        m.kind = MappingKind::Huge;
    } else if let Some(f) = file {
        m.kind = MappingKind::File(f);
    }
    Some(m)
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
    }
}
