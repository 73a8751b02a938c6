//! Memory of each node: every line of `nodeN/meminfo` and the huge pages
//! of every size from `nodeN/hugepages/hugepages-<size>kB/`. The huge page
//! totals are counted here per size (pages × that size): `meminfo`'s
//! `HugePages_*` lines count pages of the default size only, which is what
//! numastat -m multiplies by the default size, wrong as soon as another
//! size (1 GiB pages) is in use.

use serde::Serialize;

use super::counters::NODE_DIR;
use crate::sys::{SysError, SysRoot};
use crate::topo::HugePages;

/// One node's memory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NodeMeminfo {
    /// Node id.
    pub id: u32,
    /// `(key, value)` in the file's order: bytes for `kB` lines, a count for
    /// the `HugePages_*` lines.
    pub lines: Vec<(String, u64)>,
    /// Huge pages of every size, sorted by size.
    pub hugepages: Vec<HugePages>,
}

/// Pages of each size times that size, summed; saturating (a crafted
/// `nr_hugepages` may hold any count).
fn huge_bytes(sizes: &[HugePages], count: impl Fn(&HugePages) -> u64) -> u64 {
    sizes.iter().fold(0u64, |a, h| a.saturating_add(count(h).saturating_mul(h.size_bytes)))
}

impl NodeMeminfo {
    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<u64> {
        self.lines.iter().find(|(k, _)| k == key).map(|(_, v)| *v)
    }

    /// Bytes of huge pages reserved, every size counted at its size.
    pub fn huge_total_bytes(&self) -> u64 {
        huge_bytes(&self.hugepages, |h| h.total)
    }

    /// Bytes of free huge pages, every size counted at its size.
    pub fn huge_free_bytes(&self) -> u64 {
        huge_bytes(&self.hugepages, |h| h.free)
    }

    /// Bytes of surplus huge pages, every size counted at its size.
    pub fn huge_surplus_bytes(&self) -> u64 {
        huge_bytes(&self.hugepages, |h| h.surplus)
    }

    /// `MemFree`.
    pub fn free_bytes(&self) -> Option<u64> {
        self.get("MemFree")
    }

    /// `MemTotal`.
    pub fn total_bytes(&self) -> Option<u64> {
        self.get("MemTotal")
    }
}

/// Whether a meminfo key counts pages rather than kB.
pub fn is_page_count(key: &str) -> bool {
    key.starts_with("HugePages_")
}

/// Reads the huge pages of every size under `dir` (the model's reader).
pub fn read_hugepages(sys: &SysRoot, dir: &str) -> Result<Vec<HugePages>, SysError> {
    crate::topo::read_hugepages(sys, dir)
}

/// Reads every node's memory. Without node folders the machine is one
/// node 0 with `/proc/meminfo` and `sys/kernel/mm/hugepages`.
pub fn read_node_meminfo(sys: &SysRoot) -> Result<Vec<NodeMeminfo>, SysError> {
    let ids = sys.numbered_entries(NODE_DIR, "node")?;
    if ids.is_empty() {
        let lines = sys.read_meminfo("proc/meminfo")?.unwrap_or_default();
        let hugepages = read_hugepages(sys, "sys/kernel/mm/hugepages")?;
        return Ok(vec![NodeMeminfo { id: 0, lines, hugepages }]);
    }
    let mut out = Vec::with_capacity(ids.len());
    for id in ids {
        let d = format!("{NODE_DIR}/node{id}");
        let lines = sys.read_meminfo(format!("{d}/meminfo"))?.unwrap_or_default();
        let hugepages = read_hugepages(sys, &format!("{d}/hugepages"))?;
        out.push(NodeMeminfo { id, lines, hugepages });
    }
    Ok(out)
}

/// Reads only `MemTotal`, `MemFree` and `Inactive(file)` of every node
/// (what `top` shows and what the daemon counts as available), without
/// the huge page folders.
pub fn read_node_free(sys: &SysRoot) -> Result<Vec<NodeMeminfo>, SysError> {
    let ids = sys.numbered_entries(NODE_DIR, "node")?;
    let files: Vec<(u32, String)> = if ids.is_empty() {
        vec![(0, "proc/meminfo".to_string())]
    } else {
        ids.into_iter().map(|id| (id, format!("{NODE_DIR}/node{id}/meminfo"))).collect()
    };
    let mut out = Vec::with_capacity(files.len());
    for (id, rel) in files {
        let lines = sys
            .read_meminfo(&rel)?
            .unwrap_or_default()
            .into_iter()
            .filter(|(k, _)| k == "MemTotal" || k == "MemFree" || k == "Inactive(file)")
            .collect();
        out.push(NodeMeminfo { id, lines, hugepages: Vec::new() });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root(files: &[(&str, &str)]) -> (tempfile::TempDir, SysRoot) {
        let d = tempfile::tempdir().expect("tmp");
        for (rel, text) in files {
            let p = d.path().join(rel);
            std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            std::fs::write(p, text).expect("write");
        }
        let r = SysRoot::at(d.path());
        (d, r)
    }

    #[test]
    fn every_hugepage_size_counts_at_its_size() {
        let n = "sys/devices/system/node/node1";
        let (_d, sys) = root(&[
            (
                &format!("{n}/meminfo"),
                "Node 1 MemTotal: 8000 kB\nNode 1 MemFree: 6000 kB\nNode 1 HugePages_Total:   10\nNode 1 HugePages_Free: 4\n",
            ),
            (&format!("{n}/hugepages/hugepages-2048kB/nr_hugepages"), "10\n"),
            (&format!("{n}/hugepages/hugepages-2048kB/free_hugepages"), "4\n"),
            (&format!("{n}/hugepages/hugepages-2048kB/surplus_hugepages"), "0\n"),
            (&format!("{n}/hugepages/hugepages-1048576kB/nr_hugepages"), "2\n"),
            (&format!("{n}/hugepages/hugepages-1048576kB/free_hugepages"), "1\n"),
            (&format!("{n}/hugepages/hugepages-1048576kB/surplus_hugepages"), "1\n"),
        ]);
        let m = read_node_meminfo(&sys).expect("read");
        assert_eq!(m.len(), 1);
        let m = &m[0];
        assert_eq!((m.id, m.total_bytes(), m.free_bytes()), (1, Some(8000 * 1024), Some(6000 * 1024)));
        assert_eq!(m.get("HugePages_Total"), Some(10));
        assert_eq!(m.huge_total_bytes(), 10 * (2 << 20) + 2 * (1 << 30));
        assert_eq!(m.huge_free_bytes(), 4 * (2 << 20) + (1 << 30));
        assert_eq!(m.huge_surplus_bytes(), 1 << 30);
        let f = read_node_free(&sys).expect("free");
        assert_eq!(f[0].lines.len(), 2);
    }

    #[test]
    fn huge_page_numbers_beyond_the_kernel() {
        // A count whose bytes pass 64 bits (it overflowed: a panic in debug
        // builds, a wrapped total in release ones), and a size folder
        // whose bytes do not fit (skipped, like a name that is no size).
        let h = "sys/kernel/mm/hugepages";
        let (_d, sys) = root(&[
            ("sys/devices/system/cpu/online", "0\n"),
            ("proc/meminfo", "MemTotal: 8000 kB\nMemFree: 6000 kB\n"),
            (&format!("{h}/hugepages-2048kB/nr_hugepages"), "18446744073709551615\n"),
            (&format!("{h}/hugepages-2048kB/free_hugepages"), "3\n"),
            (&format!("{h}/hugepages-18014398509481984kB/nr_hugepages"), "1\n"),
        ]);
        let m = read_node_meminfo(&sys).expect("read");
        assert_eq!(m[0].hugepages.iter().map(|h| h.size_bytes).collect::<Vec<_>>(), vec![2 << 20]);
        assert_eq!((m[0].huge_total_bytes(), m[0].huge_free_bytes()), (u64::MAX, 3 * (2 << 20)));
    }

    #[test]
    fn no_node_folder_is_one_node() {
        let (_d, sys) = root(&[("proc/meminfo", "MemTotal: 100 kB\nMemFree: 50 kB\n")]);
        let m = read_node_meminfo(&sys).expect("read");
        assert_eq!((m.len(), m[0].id, m[0].free_bytes()), (1, 0, Some(50 * 1024)));
    }
}
