//! Property tests of the `/proc/PID` parsers: any text parses or is
//! refused (`None`, skipped lines), never a panic; generated files read
//! back to the values they were written from; CPU and node ids beyond the
//! kernel's limits are not taken.

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::numa_maps::{self, MappingKind, NumaMapping};
use super::*;
use crate::sets::{MAX_CPUS, MAX_NODES};
use crate::sys::proptests::{cfg, kernelish, lossy};

fn any_text() -> impl Strategy<Value = String> {
    prop_oneof![kernelish(), lossy(), any::<String>()]
}

/// A command name as the kernel shows it in `stat`: up to 15 bytes, any
/// of them parentheses or spaces.
fn comm() -> impl Strategy<Value = String> {
    "[a-z() :.-]{0,15}"
}

fn set_of(max: u32) -> impl Strategy<Value = std::collections::BTreeSet<u32>> {
    prop::collection::btree_set(0..max, 1..40)
}

/// A `/proc/PID/stat` line with the given fields (1-based as in proc(5)).
fn stat_line(pid: i32, comm: &str, state: char, ppid: i32, f: &BTreeMap<usize, u64>) -> String {
    let mut out = format!("{pid} ({comm}) {state} {ppid}");
    for i in 5..=52 {
        out.push_str(&format!(" {}", f.get(&i).copied().unwrap_or(i as u64)));
    }
    out
}

/// One `numa_maps` line as the kernel writes it, and the mapping it says.
fn mapping() -> impl Strategy<Value = (String, NumaMapping)> {
    let policy = prop_oneof![
        Just("default".to_string()),
        Just("local".to_string()),
        Just("prefer (many):0-1".to_string()),
        Just("weighted interleave:0-3".to_string()),
        (0u32..MAX_NODES).prop_map(|n| format!("bind:{n}")),
        (0u32..MAX_NODES).prop_map(|n| format!("prefer:{n}")),
    ];
    let kind = prop_oneof![
        Just(MappingKind::Heap),
        Just(MappingKind::Stack),
        Just(MappingKind::Huge),
        Just(MappingKind::Anon),
        "/[a-z]{1,8}( [a-z]{1,4})?".prop_map(MappingKind::File),
    ];
    (
        any::<u64>(),
        policy,
        kind,
        0u64..(1 << 32),
        prop::collection::btree_map(0u32..MAX_NODES, 0u64..(1 << 24), 0..6),
        prop::sample::select(vec![4u64, 64, 2048, 1 << 20]),
    )
        .prop_map(|(start, policy, kind, anon, pages, kb)| {
            let mut line = format!("{start:x} {policy}");
            match &kind {
                MappingKind::File(p) => line.push_str(&format!(" file={}", p.replace(' ', "\\040"))),
                MappingKind::Heap => line.push_str(" heap"),
                MappingKind::Stack => line.push_str(" stack"),
                MappingKind::Huge => line.push_str(" file=/anon_hugepage\\040(deleted) huge"),
                MappingKind::Anon => {}
            }
            line.push_str(&format!(" anon={anon} dirty={anon} active=0"));
            for (n, p) in &pages {
                line.push_str(&format!(" N{n}={p}"));
            }
            line.push_str(&format!(" kernelpagesize_kB={kb}"));
            let m = NumaMapping { start, policy, kind, anon_pages: anon, pages, page_size: kb * 1024 };
            (line, m)
        })
}

proptest! {
    #![proptest_config(cfg())]

    #[test]
    fn parsers_never_panic(t in any_text()) {
        let _ = parse_run_delay(&t);
        let _ = parse_maps(&t);
        let _ = cgroup::parse_path(&t);
        let _ = pidstat::parse_statm_resident(t.as_bytes());
        if let Some(s) = parse_status(&t) {
            prop_assert!(s.cpus_allowed.last().is_none_or(|c| c < MAX_CPUS));
            prop_assert!(s.mems_allowed.last().is_none_or(|n| n < MAX_NODES));
        }
        if let Some(s) = parse_proc_stat(&t) {
            prop_assert!(s.processor.is_none_or(|c| c < MAX_CPUS));
        }
        for m in numa_maps::parse(&t) {
            prop_assert!(m.pages.keys().all(|&n| n < MAX_NODES), "{:?}", m.pages);
            let _ = (m.bytes(), m.bytes_per_node().count(), m.is_private());
        }
        let _ = bytes_per_node(&numa_maps::parse(&t));
    }

    /// Lines of numbers, huge ones included, never overflow a sum.
    #[test]
    fn numa_maps_huge_numbers_never_panic(
        kb in prop_oneof![any::<u64>(), Just(u64::MAX)],
        pages in prop::collection::vec(any::<u64>(), 1..4),
        node in any::<u32>(),
    ) {
        let nodes: String = pages.iter().enumerate().map(|(i, p)| format!(" N{}={p}", node.wrapping_add(i as u32))).collect();
        let text = format!("7f00 default anon=1{nodes} kernelpagesize_kB={kb}\n");
        for m in numa_maps::parse(&text) {
            let _ = (m.bytes(), m.bytes_per_node().count());
            prop_assert!(m.pages.keys().all(|&n| n < MAX_NODES));
        }
        let _ = bytes_per_node(&numa_maps::parse(&text));
    }

    /// A generated `numa_maps` reads back to the mappings it says.
    #[test]
    fn numa_maps_roundtrip(maps in prop::collection::vec(mapping(), 0..12)) {
        let text: String = maps.iter().map(|(l, _)| format!("{l}\n")).collect();
        let want: Vec<NumaMapping> = maps.into_iter().map(|(_, m)| m).collect();
        let got = numa_maps::parse(&text);
        prop_assert_eq!(&got, &want);
        for m in &got {
            prop_assert_eq!(m.bytes(), m.pages.values().sum::<u64>() * m.page_size);
        }
    }

    /// A generated `/proc/PID/status` reads back.
    #[test]
    fn status_roundtrip(
        name in "[a-zA-Z0-9 ._-]{1,15}",
        cpus in set_of(MAX_CPUS),
        mems in set_of(MAX_NODES),
        threads in 1u64..100_000,
        rss_kb in 0u64..(1 << 50),
    ) {
        let cpus: crate::sets::CpuSet = cpus.into_iter().collect();
        let mems: crate::sets::NodeSet = mems.into_iter().collect();
        let text = format!(
            "Name:\t{name}\nUmask:\t0022\nState:\tS (sleeping)\nThreads:\t{threads}\nVmRSS:\t{rss_kb:>8} kB\n\
             Cpus_allowed:\t{}\nCpus_allowed_list:\t{}\nMems_allowed:\t{}\nMems_allowed_list:\t{}\n",
            cpus.to_mask(0), cpus.to_list(), mems.to_mask(0), mems.to_list()
        );
        let s = parse_status(&text).expect("well-formed");
        prop_assert_eq!(s.name.as_str(), name.trim());
        prop_assert_eq!((s.cpus_allowed, s.mems_allowed), (cpus, mems));
        prop_assert_eq!((s.threads, s.rss_bytes), (threads, rss_kb * 1024));
    }

    /// A `VmRSS` whose bytes pass 64 bits is not a wrapped number.
    #[test]
    fn status_rss_overflow(rss_kb in (u64::MAX / 1024 + 1)..=u64::MAX) {
        let text = format!("Name:\tx\nVmRSS:\t{rss_kb} kB\nCpus_allowed_list:\t0\nMems_allowed_list:\t0\n");
        let s = parse_status(&text).expect("status");
        prop_assert_eq!(s.rss_bytes, u64::MAX);
    }

    /// Allowed lists beyond the kernel's limits are not a process's.
    #[test]
    fn status_bounds(cpu in MAX_CPUS..(1 << 20), node in MAX_NODES..(1 << 20)) {
        let t = |c: u32, n: u32| format!("Name:\tx\nCpus_allowed_list:\t0,{c}\nMems_allowed_list:\t0,{n}\n");
        prop_assert_eq!(parse_status(&t(cpu, 0)), None);
        prop_assert_eq!(parse_status(&t(0, node)), None);
    }

    /// Generated `stat` lines read back, whatever the command name holds.
    #[test]
    fn proc_stat_roundtrip(
        pid in 1i32..i32::MAX,
        comm in comm(),
        state in prop::sample::select(vec!['R', 'S', 'D', 'Z', 'T', 'I']),
        ppid in 0i32..i32::MAX,
        utime in 0u64..(1 << 62),
        stime in 0u64..(1 << 62),
        threads in 1u64..100_000,
        start in any::<u64>(),
        rss in 0u64..(1 << 40),
        cpu in 0u32..MAX_CPUS,
    ) {
        let f = BTreeMap::from([(14, utime), (15, stime), (20, threads), (22, start), (24, rss), (39, u64::from(cpu))]);
        let line = stat_line(pid, &comm, state, ppid, &f);
        let s = parse_proc_stat(&line).expect("well-formed");
        prop_assert_eq!((s.pid, s.comm.as_str(), s.state, s.ppid), (pid, comm.as_str(), state, ppid));
        prop_assert_eq!((s.cpu_ticks, s.num_threads, s.start_ticks, s.rss_pages), (utime + stime, threads, start, rss));
        prop_assert_eq!(s.processor, Some(cpu));
    }

    /// CPU times that do not add up in 64 bits, and a last CPU no kernel
    /// can have, are not read as numbers.
    #[test]
    fn proc_stat_overflow_and_bounds(utime in (1u64 << 63)..=u64::MAX, cpu in MAX_CPUS..=u32::MAX) {
        let f = BTreeMap::from([(14, utime), (15, utime), (39, u64::from(cpu))]);
        let line = stat_line(7, "x", 'S', 1, &f);
        if let Some(s) = parse_proc_stat(&line) {
            prop_assert_eq!(s.cpu_ticks, u64::MAX);
            prop_assert_eq!(s.processor, None);
        }
        prop_assert_eq!(parse_proc_stat(&line).and_then(|s| s.processor), None);
    }

    #[test]
    fn statm_schedstat_maps_roundtrip(
        size in any::<u64>(),
        res in any::<u64>(),
        delay in any::<u64>(),
        ranges in prop::collection::vec((any::<u64>(), any::<u64>(), any::<bool>(), any::<bool>()), 0..8),
    ) {
        prop_assert_eq!(pidstat::parse_statm_resident(format!("{size} {res} 3 4 0 5 0\n").as_bytes()), Some(res));
        prop_assert_eq!(parse_run_delay(&format!("123456 {delay} 42\n")), Some(delay));
        let text: String = ranges
            .iter()
            .map(|(a, b, w, s)| {
                format!("{a:08x}-{b:08x} r{}x{} 00000000 08:02 173521  /usr/bin/x\n", if *w { 'w' } else { '-' }, if *s { 's' } else { 'p' })
            })
            .collect();
        let got = parse_maps(&text);
        prop_assert_eq!(got.len(), ranges.len());
        for (m, (a, b, w, s)) in got.iter().zip(&ranges) {
            prop_assert_eq!((m.start, m.end, m.writable, m.shared), (*a, *b, *w, *s));
        }
    }

    /// The cgroup v2 line is found among v1 lines; a path that is not
    /// absolute or climbs with `..` (it would be read outside the root)
    /// is not taken.
    #[test]
    fn cgroup_path(
        parts in prop::collection::vec("[a-z0-9_.@-]{1,12}", 0..5),
        v1 in prop::collection::vec(("[0-9]{1,2}", "[a-z,=_]{1,12}", "/[a-z]{0,8}"), 0..4),
        climb in 0usize..5,
    ) {
        prop_assume!(parts.iter().all(|p| p != "." && p != ".."));
        let path = format!("/{}", parts.join("/"));
        let head: String = v1.iter().map(|(i, c, p)| format!("{}:{c}:{p}\n", i.parse::<u32>().unwrap_or(0) + 1)).collect();
        prop_assert_eq!(cgroup::parse_path(&format!("{head}0::{path}\n")), Some(path.clone()));
        let mut evil = parts.clone();
        evil.insert(climb.min(evil.len()), "..".into());
        prop_assert_eq!(cgroup::parse_path(&format!("0::/{}\n", evil.join("/"))), None);
        prop_assert_eq!(cgroup::parse_path(&format!("0::{}\n", parts.join("/"))), None);
    }
}
