//! Property tests of the topology reader's own parsing: distance rows,
//! and a node's CPUs given as a list and as a mask.

use proptest::prelude::*;

use super::nodes::parse_distance_row;
use crate::sets::{CpuSet, MAX_CPUS};
use crate::sys::proptests::{cfg, kernelish, lossy};
use crate::sys::SysRoot;

proptest! {
    #![proptest_config(cfg())]

    #[test]
    fn distance_rows_parse_or_quote(t in prop_oneof![kernelish(), lossy(), any::<String>()]) {
        match parse_distance_row(&t) {
            Ok(row) => prop_assert_eq!(row.len(), t.split_whitespace().count()),
            Err(e) => prop_assert!(e.ends_with("is not a distance") && !e.contains('\n'), "{e}"),
        }
    }

    /// A row as the kernel writes it (one blank between, a newline at the
    /// end) reads back.
    #[test]
    fn distance_row_roundtrip(row in prop::collection::vec(any::<u32>(), 0..64)) {
        let text: Vec<String> = row.iter().map(u32::to_string).collect();
        prop_assert_eq!(parse_distance_row(&format!("{}\n", text.join(" "))), Ok(row));
    }

    /// The same CPUs in a node's `cpulist` and in its `cpumap` (with the
    /// kernel's `"\n"` and a dump's NUL) read as the same set.
    #[test]
    fn cpulist_and_cpumap_agree(ids in prop::collection::btree_set(0u32..MAX_CPUS, 0..64), width in 0u32..MAX_CPUS) {
        let set: CpuSet = ids.into_iter().collect();
        let d = tempfile::tempdir().expect("tmp");
        let n = d.path().join("sys/devices/system/node/node0");
        std::fs::create_dir_all(&n).expect("mkdir");
        std::fs::write(n.join("cpulist"), format!("{}\n", set.to_list())).expect("write");
        std::fs::write(n.join("cpumap"), format!("{}\n\0", set.to_mask(width))).expect("write");
        let r = SysRoot::at(d.path());
        let rel = "sys/devices/system/node/node0";
        let list: Option<CpuSet> = r.read_list(format!("{rel}/cpulist")).expect("list");
        let mask: Option<CpuSet> = r.read_mask(format!("{rel}/cpumap")).expect("mask");
        prop_assert_eq!(list.as_ref(), Some(&set));
        prop_assert_eq!(mask.as_ref(), Some(&set));
        std::fs::remove_file(n.join("cpulist")).expect("rm");
        let either: Option<CpuSet> = r.read_list_or_mask(format!("{rel}/cpulist"), format!("{rel}/cpumap")).expect("either");
        prop_assert_eq!(either, Some(set));
    }
}
