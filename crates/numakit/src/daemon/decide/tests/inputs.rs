use super::*;

#[test]
fn machine_ratios_and_checks() {
    let m = machine(&[(0, 4, 1), (1, 4, 1), (2, 4, 1)], vec![vec![10, 16, 22], vec![16, 10, 16], vec![22, 16, 10]]);
    let r = m.ratios(21, 1.62);
    let (a, b, c) = (NodePos(0), NodePos(1), NodePos(2));
    assert!((r[a][b] - (1.0 + 6.0 * 0.62 / 11.0)).abs() < 1e-9);
    assert_eq!(r[c][c], 1.0);
    assert!(Machine::new(vec![node(1, 1, 1), node(0, 1, 1)], vec![vec![10; 2]; 2]).is_err());
    assert!(two().with_measured(vec![vec![1.0, f64::NAN], vec![1.0, 1.0]]).is_err());
}

/// Node ids may be sparse; positions are dense, in id order, and the
/// machine converts between the two.
#[test]
fn node_ids_and_positions_convert() {
    let m = machine(&[(0, 4, 1), (2, 4, 1), (5, 0, 1)], vec![vec![10, 20, 20], vec![20, 10, 20], vec![20, 20, 10]]);
    assert_eq!(m.index(5), Some(NodePos(2)));
    assert_eq!(m.index(1), None);
    assert_eq!(m.positions().map(|a| m.id(a)).collect::<Vec<_>>(), [0, 2, 5]);
    assert_eq!(m.nodes[NodePos(1)].id, 2);
    // Ratios by position: SLIT 20 is the calibration point, 2.0.
    let r = m.ratios(20, 2.0);
    assert_eq!((r[NodePos(0)][NodePos(2)], r[NodePos(2)][NodePos(2)]), (2.0, 1.0));
}

#[test]
fn config_reads_toml_with_defaults() {
    let c = Config::from_toml("min_cpu = 1.0\nexclude_comms = [\"qemu-kvm\"]\n").unwrap();
    assert_eq!(c.min_cpu, 1.0);
    assert_eq!(c.exclude_comms, ["qemu-kvm"]);
    assert_eq!(c.min_rss_bytes, 300_000_000);
    assert!(Config::from_toml("no_such_knob = 1").is_err());
}

#[test]
fn actions_serialise() {
    let m = two();
    let s = snap(1000.0, &m, &[(0.0, 4), (0.0, 4)], vec![job(7, 1, &[(0, 2)], 0.4)]);
    let d = decide(&m, &s, &Config::default(), &History::new());
    let j = serde_json::to_value(&d.actions).unwrap();
    assert_eq!(j[0]["action"], "bind");
    assert_eq!(j[0]["cpu_nodes"], "1");
    assert_eq!(j[0]["reason"]["why"], "improve");
    assert_eq!(j[1]["action"], "migrate");
}

/// A history of version 1 (one record per process and per command name),
/// captured from the daemon's state file before the history was split:
/// two scans, a move judged harmful and reverted, a move owing pages, a
/// command seen to end. Read now, it is what today's decision makes of
/// the same scans, half for half, with one scan between them: a move is
/// no longer judged on the window in which it was made, and a
/// placement's `need` (newer than version 1) reads as 0.
#[test]
fn a_version_1_history_reads_as_the_same_scans_give_now() {
    let file: serde_json::Value = serde_json::from_str(include_str!("../../testdata/state-v1.json")).expect("json");
    let old = History::from_json(&file["history"].to_string()).expect("history");
    let m = two();
    let p7 = job(7, 1, &[(0, 2)], 0.4);
    let p5 = job(5, 0, &[(0, 1)], 0.1);
    let d1 = decide(
        &m,
        &snap(1000.0, &m, &[(0.0, 4), (0.0, 4)], vec![p7.clone(), p5.clone()]),
        &Config::default(),
        &History::new(),
    );
    let mut a7 = p7;
    a7.affinity = ns("1");
    a7.mem_policy = MemPolicy::Preferred(ns("1"));
    a7.mem_per_node = BTreeMap::from([(1, 2 * GIB)]);
    a7.progress.instr_rate = Some(0.5);
    let mut between = a7.clone();
    between.age_s += 60.0;
    // (job5 idle then, so that the scan between observes it no more than
    // version 1's two scans did.)
    let mut p5_between = p5;
    p5_between.age_s += 60.0;
    p5_between.cpu_use = 0.0;
    let cfg = Config { pages_per_s: 4000, ..Config::default() };
    let d_between = decide(&m, &snap(1060.0, &m, &[(0.0, 4), (0.0, 4)], vec![between, p5_between]), &cfg, &d1.history);
    assert!(d_between.changes().next().is_none(), "{:#?}", d_between.actions);
    a7.age_s += 120.0;
    let p3 = job(3, 0, &[(1, 3)], 0.5);
    let mut s = snap(1120.0, &m, &[(0.0, 4), (0.0, 4)], vec![a7, p3]);
    s.exited = vec![5];
    let mut d2 = decide(&m, &s, &cfg, &d_between.history);
    for pl in d2.history.committed.procs.values_mut().filter_map(|r| r.placement.as_mut()) {
        assert!(pl.need > 0.0, "{pl:?}");
        pl.need = 0.0;
    }
    // job5 ended between the last two scans: 30 s later with the scan
    // between (its start was at 400 s).
    let mut old = old;
    let runs = &mut old.observed.comms.get_mut("job5").expect("job5's runs").runs;
    assert_eq!(runs, &vec![660.0]);
    *runs = vec![(1060.0 + 1120.0) / 2.0 - 400.0];
    assert_eq!(old, d2.history);
    assert!(!old.committed.procs[&3].placement.as_ref().expect("placed").pending.is_empty());
    assert_eq!(old.committed.reverts, 1);
}
