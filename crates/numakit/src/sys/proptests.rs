//! Property tests of the read layer's parsers: any text either parses or
//! is the typed error (never a panic), well-formed text parses back to the
//! values it was written from, and ids beyond the kernel's limits are
//! refused. Case counts are kept low: `cargo test --workspace` runs them.

use proptest::prelude::*;

use super::stat::parse_stat;
use super::*;
use crate::sets::{Cpu, Node, MAX_CPUS};

/// Text that reaches past the first checks of kernel-file parsers: digits,
/// the separators they split on, units, keys, NULs and newlines.
pub(crate) fn kernelish() -> impl Strategy<Value = String> {
    "([0-9]{1,22}|[ \t\n:,=/()-]|kB|MB|0x|cpu|Node |N[0-9]|[a-zA-Z_]{1,6}|\u{0}|\u{fffd}|é){0,60}"
}

/// Any bytes, as a kernel file read by [`SysRoot::read`] becomes text.
pub(crate) fn lossy() -> impl Strategy<Value = String> {
    prop::collection::vec(any::<u8>(), 0..300).prop_map(|b| String::from_utf8_lossy(&b).into_owned())
}

/// A meminfo key: what the kernel prints before the colon.
fn key() -> impl Strategy<Value = String> {
    "[A-Za-z][A-Za-z0-9_()]{0,19}"
}

/// 64 cases, or `PROPTEST_CASES` when set (the long run,
/// docs/hostile-input.md).
pub(crate) fn cfg() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(64);
    ProptestConfig::with_cases(cases)
}

proptest! {
    #![proptest_config(cfg())]

    #[test]
    fn parsers_never_panic(t in prop_oneof![kernelish(), lossy(), any::<String>()]) {
        let _ = parse_u64(&t);
        if let Err(e) = parse_kv_lines(&t) {
            prop_assert!(!e.contains('\n'), "{e}");
        }
        if let Err(e) = parse_stat(&t) {
            prop_assert!(!e.contains('\n'), "{e}");
        }
    }

    /// Numbers as the kernel writes them read back, decimal and `0x` hex.
    #[test]
    fn u64_roundtrip(v in any::<u64>(), pad in "[ \t]{0,2}") {
        prop_assert_eq!(parse_u64(&format!("{pad}{v}{pad}")), Some(v));
        prop_assert_eq!(parse_u64(&format!("0x{v:x}")), Some(v));
        prop_assert_eq!(parse_u64(&format!("{v}0")), v.checked_mul(10));
    }

    /// A generated `/proc/meminfo` or node `meminfo` reads back to its
    /// values, kB lines in bytes.
    #[test]
    fn meminfo_roundtrip(
        lines in prop::collection::vec((key(), 0u64..(1 << 53), any::<bool>()), 0..30),
        node in prop::option::of(0u32..1024),
    ) {
        let prefix = node.map(|n| format!("Node {n} ")).unwrap_or_default();
        let text: String = lines
            .iter()
            .map(|(k, v, kb)| format!("{prefix}{:<16}{v:>12}{}\n", format!("{k}:"), if *kb { " kB" } else { "" }))
            .collect();
        let want: Vec<(String, u64)> = lines.iter().map(|(k, v, kb)| (k.clone(), if *kb { v * 1024 } else { *v })).collect();
        prop_assert_eq!(parse_kv_lines(&text), Ok(want));
    }

    /// A value in kB whose bytes pass 64 bits, or another unit, is an
    /// error quoting the line; never a wrapped or unscaled number.
    #[test]
    fn meminfo_refuses_overflow_and_units(k in key(), v in (u64::MAX / 1024 + 1)..=u64::MAX, unit in "[kMGT]?B|pages") {
        let e = parse_kv_lines(&format!("{k}: {v} kB\n")).unwrap_err();
        prop_assert!(e.contains("does not fit 64 bits") && e.contains(&v.to_string()), "{e}");
        prop_assume!(unit != "kB");
        let e = parse_kv_lines(&format!("{k}: 1 {unit}\n")).unwrap_err();
        prop_assert!(e.contains(&format!("unit \"{unit}\"")), "{e}");
    }

    /// Generated `/proc/stat` CPU lines read back: idle is idle + iowait,
    /// total the first eight fields; other lines are ignored.
    #[test]
    fn proc_stat_roundtrip(
        cpus in prop::collection::btree_map(0u32..MAX_CPUS, prop::collection::vec(0u64..(1 << 40), 4..11), 1..16),
    ) {
        let mut text = String::from("cpu  1 2 3 4 5 6 7 8 9 10\n");
        for (id, v) in &cpus {
            let f: Vec<String> = v.iter().map(u64::to_string).collect();
            text.push_str(&format!("cpu{id} {}\n", f.join(" ")));
        }
        text.push_str("intr 12 0 3\nctxt 99\nprocs_running 2\n");
        let got = parse_stat(&text).expect("well-formed");
        prop_assert_eq!(got.len(), cpus.len());
        for (id, v) in &cpus {
            let t = got[id];
            prop_assert_eq!(t.total, v.iter().take(8).sum::<u64>());
            prop_assert_eq!(t.idle, v[3] + v.get(4).copied().unwrap_or(0));
        }
    }

    /// A CPU id no kernel can have is refused, naming it.
    #[test]
    fn proc_stat_bounds_cpu_ids(id in MAX_CPUS..=u32::MAX) {
        let e = parse_stat(&format!("cpu{id} 1 2 3 4\n")).unwrap_err();
        prop_assert!(e.contains(&format!("cpu{id}")), "{e}");
    }

    /// Whatever a list or mask file holds, reading it is a set within the
    /// limits or one bounded line naming the file.
    #[test]
    fn set_files_are_a_set_or_one_line(t in prop_oneof![kernelish(), lossy(), "[0-9a-f,x-]{0,40}"]) {
        let d = tempfile::tempdir().expect("tmp");
        std::fs::create_dir_all(d.path().join("sys")).expect("mkdir");
        std::fs::write(d.path().join("sys/f"), &t).expect("write");
        let r = SysRoot::at(d.path());
        let errs = [
            r.read_list::<Cpu>("sys/f").err(),
            r.read_mask::<Node>("sys/f").err(),
            r.read_u64("sys/f").err(),
            r.read_i64("sys/f").err(),
            r.read_meminfo("sys/f").err(),
        ];
        for e in errs.into_iter().flatten() {
            let e = e.to_string();
            prop_assert!(e.contains("sys/f: ") && !e.contains('\n') && e.len() < 1000, "{e}");
        }
    }
}
