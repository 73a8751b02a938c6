//! Property tests of the counter parsers (`nodeN/numastat`,
//! `/proc/vmstat`) and of the `numa_maps` sums behind `stat -p`: any text
//! parses or is the typed error, never a panic; generated files read back.

use proptest::prelude::*;

use super::counters::parse_numastat;
use super::process::{numastat_usage, summarize_text};
use super::vmstat::{parse_vmstat, AUTONUMA};
use crate::sets::NodeSet;
use crate::sys::proptests::{cfg, kernelish, lossy};

proptest! {
    #![proptest_config(cfg())]

    #[test]
    fn parsers_never_panic(t in prop_oneof![kernelish(), lossy(), any::<String>()]) {
        if let Err(e) = parse_numastat(&t) {
            prop_assert!(!e.contains('\n'), "{e}");
        }
        let _ = parse_vmstat(&t);
        let _ = numastat_usage(&t, &[0, 1, 3], 4096, 2 << 20);
        let p = summarize_text(1, "x", &t, &[0, 1], NodeSet::first_n(1));
        prop_assert!(p.locality.is_none_or(|l| (0.0..=1.0).contains(&l)));
    }

    /// numa_maps lines whose pages and page sizes overflow 64 bits when
    /// multiplied or summed are sums that saturate, never a panic or a
    /// small wrapped number.
    #[test]
    fn numa_maps_sums_saturate(pages in (1u64 << 40)..=u64::MAX, kb in (1u64 << 30)..=u64::MAX) {
        let text = format!("1000 default anon=1 N0={pages} N1={pages} kernelpagesize_kB={kb}\n2000 default heap anon=1 N0={pages}\n");
        let p = summarize_text(1, "x", &text, &[0, 1], NodeSet::first_n(1));
        prop_assert_eq!(p.total_bytes, u64::MAX);
        prop_assert!(p.nodes.iter().all(|n| n.bytes >= pages));
    }

    /// A generated `numastat` file reads back in its order.
    #[test]
    fn numastat_roundtrip(lines in prop::collection::vec(("[a-z_]{1,20}", any::<u64>()), 0..12)) {
        let text: String = lines.iter().map(|(k, v)| format!("{k} {v}\n")).collect();
        prop_assert_eq!(parse_numastat(&text), Ok(lines));
    }

    /// A generated `/proc/vmstat` keeps the AutoNUMA and tiering counters,
    /// AutoNUMA's in their documented order first, with their values.
    #[test]
    fn vmstat_roundtrip(
        kept in prop::collection::btree_map(prop::sample::select(AUTONUMA.to_vec()), any::<u64>(), 0..7),
        tier in prop::collection::btree_map("pg(promote|demote)_[a-z]{1,8}", any::<u64>(), 0..4),
        other in prop::collection::btree_map("nr_[a-z]{1,8}", any::<u64>(), 0..6),
    ) {
        let written: Vec<(String, u64)> = other
            .iter()
            .map(|(k, v)| (k.clone(), *v))
            .chain(kept.iter().map(|(k, v)| (k.to_string(), *v)))
            .chain(tier.iter().map(|(k, v)| (k.clone(), *v)))
            .collect();
        let text: String = written.iter().map(|(k, v)| format!("{k} {v}\n")).collect();
        let got = parse_vmstat(&text);
        let mut want: Vec<(String, u64)> = AUTONUMA.iter().filter_map(|n| kept.get(n).map(|v| (n.to_string(), *v))).collect();
        want.extend(tier.into_iter());
        prop_assert_eq!(got.lines, want);
    }
}
