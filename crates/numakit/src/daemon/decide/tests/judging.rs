use super::*;

/// Job `pid` bound to node 1 at `t0` (its 2 GiB on node 0 follow it): that
/// decision, and the process as a scan `dt` seconds on sees it, on node 1
/// with its memory there, making `progress` (instructions).
fn bound_then(pid: i32, t0: f64, history: &History, dt: f64, progress: f64) -> (Decision, ProcInfo) {
    let m = two();
    let p = job(pid, 1, &[(0, 2)], 0.4);
    let d1 = decide(&m, &snap(t0, &m, &[(0.0, 4), (0.0, 4)], vec![p.clone()]), &Config::default(), history);
    assert_eq!(binds(&d1), [(pid, "1".to_string())], "{:#?}", d1.actions);
    let mut after = p;
    after.age_s += dt;
    after.affinity = ns("1");
    after.mem_policy = MemPolicy::Preferred(ns("1"));
    after.mem_per_node = BTreeMap::from([(1, 2 * GIB)]);
    after.progress = Progress { cpu_rate: 1.0, instr_rate: Some(progress) };
    (d1, after)
}

/// Moves a process, then judges it 120 s on with `progress` (a scan at
/// 60 s between: the window in which a move is made is never judged).
fn move_then_judge(progress: f64, history: &History, pid: i32, t0: f64) -> (Decision, Decision) {
    let m = two();
    let cfg = Config::default();
    let (d1, after) = bound_then(pid, t0, history, 120.0, progress);
    assert_eq!(d1.changes().count(), 2, "{:#?}", d1.actions);
    let mut between = after.clone();
    between.age_s -= 60.0;
    let db = decide(&m, &snap(t0 + 60.0, &m, &[(0.0, 4), (0.0, 4)], vec![between]), &cfg, &d1.history);
    assert!(db.changes().next().is_none() && matches!(why_of(&db, pid)[..], [Why::Waiting]), "{:#?}", db.actions);
    let d2 = decide(&m, &snap(t0 + 120.0, &m, &[(0.0, 4), (0.0, 4)], vec![after]), &cfg, &db.history);
    (d1, d2)
}

#[test]
fn a_move_that_helps_is_kept() {
    let (_, d2) = move_then_judge(1.15, &History::new(), 7, 1000.0);
    assert!(d2.changes().next().is_none());
    assert!(matches!(why_of(&d2, 7)[0], Why::Judged { .. }), "{:#?}", d2.actions);
    assert!(d2.history.committed.procs[&7].placement.as_ref().unwrap().judged);
}

/// A move whose pages took longer than `settle_s` to move: the next
/// window holds the move itself (the threads blocked while their pages
/// moved, half of it run where the process was). It reads as harm, but is
/// not judged on it, nor moved again; the window after judges it.
#[test]
fn a_move_is_not_judged_on_the_window_it_was_made_in() {
    let m = two();
    let cfg = Config::default();
    let (d1, mut during) = bound_then(7, 1000.0, &History::new(), 120.0, 1.15);
    during.cpu_use = 0.6;
    during.cpu_per_node = BTreeMap::from([(0, 0.3), (1, 0.3)]);
    during.progress = Progress { cpu_rate: 0.6, instr_rate: Some(0.6) };
    let d2 = decide(&m, &snap(1120.0, &m, &[(0.0, 4), (0.0, 4)], vec![during.clone()]), &cfg, &d1.history);
    assert!(d2.changes().next().is_none(), "{:#?}", d2.actions);
    assert_eq!(why_of(&d2, 7), [&Why::Waiting]);
    assert!(!d2.history.committed.procs[&7].placement.as_ref().expect("placed").judged);
    let mut after = during;
    after.age_s += 60.0;
    after.cpu_use = 1.0;
    after.cpu_per_node = BTreeMap::from([(1, 1.0)]);
    after.progress = Progress { cpu_rate: 1.0, instr_rate: Some(1.15) };
    let d3 = decide(&m, &snap(1180.0, &m, &[(0.0, 4), (0.0, 4)], vec![after]), &cfg, &d2.history);
    assert!(d3.changes().next().is_none(), "{:#?}", d3.actions);
    assert!(matches!(why_of(&d3, 7)[0], Why::Judged { .. }), "{:#?}", d3.actions);
}

/// Rates that span several scans (a short interval) hold a move made
/// before the previous scan: it is judged only on rates that began after it.
#[test]
fn a_move_is_not_judged_on_rates_that_span_it() {
    let m = two();
    let cfg = Config::default();
    let (d1, after) = bound_then(7, 1000.0, &History::new(), 65.0, 1.15);
    let at = |t: f64, span: f64, h: &History| {
        let mut q = after.clone();
        q.age_s += t - 1065.0;
        q.rate_span_s = span;
        decide(&m, &snap(t, &m, &[(0.0, 4), (0.0, 4)], vec![q]), &cfg, h)
    };
    // The first scan after the move: its window holds the move.
    let d2 = at(1065.0, 65.0, &d1.history);
    assert_eq!(why_of(&d2, 7), [&Why::Waiting]);
    // Five seconds later: the window since the last scan does not hold it,
    // but these rates are over 75 s, since 995.
    let d3 = at(1070.0, 75.0, &d2.history);
    assert_eq!(why_of(&d3, 7), [&Why::Waiting], "{:#?}", d3.actions);
    // The same scan with rates over its own 5 s: judged.
    let d3b = at(1070.0, 5.0, &d2.history);
    assert!(matches!(why_of(&d3b, 7)[0], Why::Judged { .. }), "{:#?}", d3b.actions);
    // And on rates over 75 s that began after it.
    let d4 = at(1080.0, 75.0, &d3.history);
    assert!(matches!(why_of(&d4, 7)[0], Why::Judged { .. }), "{:#?}", d4.actions);
}

/// Rates measured from the scan that made a move hold it, however their
/// span reads: a scan reads a process seconds after its own start, and
/// the next scans may read it sooner (a slow scan of many candidates, then
/// quick ones), so `now - span` can fall after the move although every
/// reading of that scan came before it. Neither judged nor moved again on
/// them (it would read half where it was, and be moved away from the
/// memory it was just bound to); judged on rates from the next scan.
#[test]
fn a_move_is_not_judged_on_rates_from_the_scan_that_made_it() {
    let m = two();
    let cfg = Config::default();
    let (d1, mut after) = bound_then(7, 1000.0, &History::new(), 65.0, 1.15);
    // Half of the window on node 0, where its thread was at the reading
    // that scan took before the bind.
    after.cpu_per_node = BTreeMap::from([(0, 0.5), (1, 0.5)]);
    let at = |t: f64, from: f64, h: &History| {
        let mut q = after.clone();
        q.age_s += t - 1065.0;
        // Read 3 s into the scan that made the move, at once in this one.
        q.rate_span_s = t - from - 3.0;
        q.rates_from_s = Some(from);
        decide(&m, &snap(t, &m, &[(0.0, 4), (0.0, 4)], vec![q]), &cfg, h)
    };
    let d2 = at(1065.0, 1000.0, &d1.history);
    assert_eq!(why_of(&d2, 7), [&Why::Waiting], "{:#?}", d2.actions);
    let d3 = at(1070.0, 1000.0, &d2.history);
    assert_eq!(why_of(&d3, 7), [&Why::Waiting], "{:#?}", d3.actions);
    assert!(d3.changes().next().is_none(), "{:#?}", d3.actions);
    // From the scan after it: judged.
    let d4 = at(1080.0, 1065.0, &d3.history);
    assert!(matches!(why_of(&d4, 7)[0], Why::Judged { .. }), "{:#?}", d4.actions);
}

#[test]
fn a_move_that_hurts_is_reverted_and_remembered() {
    let (_, d2) = move_then_judge(0.9, &History::new(), 7, 1000.0);
    let c: Vec<_> = d2.changes().collect();
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].kind, ActionKind::Revert { cpu_nodes: ns("0-63"), mem_policy: MemPolicy::Default });
    assert!(c[0].reason.to_string().contains("-10.0%"), "{}", c[0].reason);
    let rec = &d2.history.committed.procs[&7];
    assert_eq!(rec.left_alone_until_s, Some(1120.0 + 3600.0));
    assert_eq!(d2.history.committed.comms["job7"].harms, 1);
    // The history survives a restart (JSON round trip).
    let h = History::from_json(&d2.history.to_json()).unwrap();
    assert_eq!(h, d2.history);
    // Next scan: left alone.
    let m = two();
    let mut p = job(7, 0, &[(0, 2)], 0.4);
    p.age_s = 800.0;
    let d3 = decide(&m, &snap(1200.0, &m, &[(0.0, 4), (0.0, 4)], vec![p]), &Config::default(), &h);
    assert_eq!(why_of(&d3, 7), [&Why::LeftAlone { until_s: 4720.0 }]);
}

/// A second move judged harmful goes back to the first placement, and
/// the pages it moved are owed back there.
#[test]
fn a_revert_takes_the_pages_back() {
    let m = machine(&[(0, 4, 8), (1, 4, 8)], vec![vec![10, 21], vec![21, 10]]);
    let mut p = proc_(7, "java", &[(1, 1.0)], &[(1, 2)], 0.4);
    p.affinity = ns("1");
    p.mem_policy = MemPolicy::Preferred(ns("1"));
    p.progress.instr_rate = Some(0.8);
    let mut h = History::new();
    placed(&mut h, &p, 1000.0, "1", "1", "0", true);
    let cfg = Config::default();
    let free = [(0.0, 4), (0.0, 4)];
    let d = decide(&m, &snap(1000.0, &m, &free, vec![p.clone()]), &cfg, &h);
    let c: Vec<&Action> = d.changes().collect();
    assert_eq!(c.len(), 1, "{:#?}", d.actions);
    assert_eq!(c[0].kind, ActionKind::Revert { cpu_nodes: ns("0"), mem_policy: MemPolicy::Preferred(ns("0")) });
    let pl = d.history.committed.procs[&7].placement.as_ref().expect("placement");
    assert_eq!(pl.pending, [(1, 0, 2 * GIB / PAGE)]);
    // Next scan: back on node 0, its pages follow within the budget.
    p.affinity = ns("0");
    p.mem_policy = MemPolicy::Preferred(ns("0"));
    p.cpu_per_node = BTreeMap::from([(0, 1.0)]);
    p.age_s += 15.0;
    let d2 = decide(&m, &snap(1015.0, &m, &free, vec![p]), &cfg, &d.history);
    let c: Vec<(ActionKind, Why)> = d2.changes().map(|a| (a.kind.clone(), a.reason.clone())).collect();
    assert_eq!(c, [(ActionKind::Migrate { from: 1, to: 0, pages: 2 * GIB / PAGE }, Why::Pending { left_pages: 0 })]);
}

/// Pins of one name reverted in one scan (one crowded node) count
/// once against the name; a kept move of the name ends the run.
#[test]
fn reverts_of_one_scan_count_once_and_a_success_ends_the_run() {
    let m = machine(&[(0, 4, 8), (1, 4, 8)], vec![vec![10, 21], vec![21, 10]]);
    let mut h = History::new();
    let mut procs = Vec::new();
    for pid in 1..=4 {
        let mut p = proc_(pid, "hs06", &[(0, 0.8)], &[(0, 1)], 0.3);
        p.affinity = ns("0");
        p.mem_policy = MemPolicy::Preferred(ns("0"));
        p.progress = Progress { cpu_rate: 0.8, instr_rate: Some(0.8) };
        placed(&mut h, &p, 1000.0, "0", "0", "0-63", false);
        procs.push(p);
    }
    let cfg = Config::default();
    let free = [(0.0, 4), (0.0, 4)];
    let d = decide(&m, &snap(1000.0, &m, &free, procs), &cfg, &h);
    assert_eq!(d.history.committed.reverts, 4);
    assert_eq!(d.history.committed.comms["hs06"].harms, 1);
    assert_eq!(d.history.committed.comms["hs06"].left_alone_until_s, None);
    // Another hs06 whose pin is judged and kept: the run ends.
    let mut p = proc_(9, "hs06", &[(1, 1.0)], &[(1, 1)], 0.3);
    p.affinity = ns("1");
    p.mem_policy = MemPolicy::Preferred(ns("1"));
    let mut h = d.history.clone();
    placed(&mut h, &p, 1015.0, "1", "1", "0-63", false);
    let d2 = decide(&m, &snap(1015.0, &m, &free, vec![p]), &cfg, &h);
    assert!(d2.actions.iter().any(|a| matches!(a.reason, Why::Judged { .. })), "{:#?}", d2.actions);
    assert_eq!(d2.history.committed.comms["hs06"].harms, 0);
}

#[test]
fn comm_ban_is_set_by_decide_itself() {
    let m = two();
    let cfg = Config { comm_harm_limit: 2, ..Config::default() };
    let mut h = History::new();
    let mut t = 1000.0;
    for pid in [31, 32] {
        let mut p = job(pid, 1, &[(0, 2)], 0.4);
        p.comm = "reco".into();
        let d1 = decide(&m, &snap(t, &m, &[(0.0, 4), (0.0, 4)], vec![p.clone()]), &cfg, &h);
        p.age_s += 120.0;
        p.affinity = ns("1");
        p.mem_policy = MemPolicy::Preferred(ns("1"));
        p.progress.instr_rate = Some(0.5);
        // (A scan between: the window of the move is not judged.)
        let mut between = p.clone();
        between.age_s -= 60.0;
        let db = decide(&m, &snap(t + 60.0, &m, &[(0.0, 4), (0.0, 4)], vec![between]), &cfg, &d1.history);
        let d2 = decide(&m, &snap(t + 120.0, &m, &[(0.0, 4), (0.0, 4)], vec![p]), &cfg, &db.history);
        h = d2.history;
        // (The harm also marks node 1's memory slow, which would keep the
        // next process off it; the name's record is what is tested here.)
        h.committed.slow_memory.clear();
        t += 200.0;
    }
    assert_eq!(h.committed.reverts, 2);
    assert_eq!(h.committed.comms["reco"].left_alone_until_s, Some(1320.0 + 86400.0));
    // Another process of the same name is left alone too.
    let mut p = job(40, 1, &[(0, 2)], 0.4);
    p.comm = "reco".into();
    let d = decide(&m, &snap(t, &m, &[(0.0, 4), (0.0, 4)], vec![p]), &cfg, &h);
    assert_eq!(why_of(&d, 40), [&Why::CommLeftAlone { until_s: 1320.0 + 86400.0 }]);
}

#[test]
fn cool_down_and_stickiness() {
    let (_, d2) = move_then_judge(1.2, &History::new(), 7, 1000.0);
    let m = two();
    // The process is placed on node 1; now its thread sits on node 0 (e.g.
    // the owner of the machine changed something) within the cool-down.
    let mut p = job(7, 1, &[(1, 2)], 0.4);
    p.age_s = 800.0;
    p.affinity = ns("1");
    p.mem_policy = MemPolicy::Preferred(ns("1"));
    let d3 = decide(&m, &snap(1200.0, &m, &[(0.0, 4), (0.0, 4)], vec![p]), &Config::default(), &d2.history);
    assert_eq!(why_of(&d3, 7), [&Why::CoolDown { until_s: 1300.0 }]);
}

#[test]
fn pid_reuse_forgets_the_old_process() {
    let (_, d2) = move_then_judge(0.5, &History::new(), 7, 1000.0);
    assert!(d2.history.committed.procs[&7].left_alone_until_s.is_some());
    let m = two();
    // Same pid, but started just now.
    let mut p = job(7, 1, &[(0, 2)], 0.4);
    p.age_s = 100.0;
    // (The harm also marked node 1's memory slow, which would keep the new
    // process off it; the old process's record is what is tested here.)
    let mut h = d2.history.clone();
    h.committed.slow_memory.clear();
    let d3 = decide(&m, &snap(1500.0, &m, &[(0.0, 4), (0.0, 4)], vec![p]), &Config::default(), &h);
    assert_eq!(d3.changes().count(), 2, "{:#?}", d3.actions);
}

/// A move judged harmful although its process had its CPUs
/// and its memory got no less local (by the access-time ratios) lost
/// through the memory it put the process on: bandwidth, which the
/// daemon is not told. Here a job moved to a memory-less node, its pages
/// to that node's home, node 0. For `leave_alone_s` no other move puts
/// pages or threads on node 0; without the rule the next job, remote
/// from its memory on node 0, is bound there. The same loss while the
/// job waited for a CPU says nothing about the memory.
#[test]
fn memory_that_did_harm_gets_no_more_for_a_while() {
    // Node 1 has CPUs and no memory; its home is node 0.
    let d = vec![vec![10, 12, 21], vec![12, 10, 21], vec![21, 21, 10]];
    let m = machine(&[(0, 4, 16), (1, 4, 0), (2, 4, 8)], d);
    let mut a = proc_(1, "reco", &[(1, 1.0)], &[(0, 2)], 0.5);
    a.affinity = ns("1");
    a.mem_policy = MemPolicy::Preferred(ns("0"));
    a.progress.instr_rate = Some(0.8);
    let mut h = History::new();
    placed(&mut h, &a, 1000.0, "1", "0", "0-63", true);
    h.committed.procs.get_mut(&1).and_then(|r| r.placement.as_mut()).expect("placement").baseline_locality = 0.0;
    let b = proc_(2, "reco", &[(2, 1.0)], &[(0, 2)], 0.5);
    let free = [(2.0, 8), (3.0, 0), (0.0, 0)];
    let cfg = Config::default();
    let d = decide(&m, &snap(1000.0, &m, &free, vec![a.clone(), b.clone()]), &cfg, &h);
    assert!(d.changes().any(|x| x.pid == 1 && matches!(x.reason, Why::Harm { .. })), "{:#?}", d.actions);
    assert_eq!(d.history.committed.slow_memory, BTreeMap::from([(0, 1000.0 + cfg.leave_alone_s)]));
    assert!(binds(&d).iter().all(|(pid, to)| *pid != 2 || to == "2"), "{:#?}", d.actions);
    // A scan later it still holds (and b stays off node 0 and node 1).
    let mut b2 = b.clone();
    b2.age_s += 15.0;
    let d2 = decide(&m, &snap(1015.0, &m, &free, vec![b2.clone()]), &cfg, &d.history);
    assert!(binds(&d2).iter().all(|(pid, to)| *pid != 2 || to == "2"), "{:#?}", d2.actions);
    // With no pin in place to make instead, the decision says why the
    // move to its memory is not made.
    let no_pin = Config { pin_in_place: false, ..Config::default() };
    let d4 = decide(&m, &snap(1015.0, &m, &free, vec![b2]), &no_pin, &d.history);
    let why: Vec<&Why> = d4.actions.iter().filter(|a| a.pid == 2).map(|a| &a.reason).collect();
    assert_eq!(why, [&Why::SlowMemory { nodes: vec![0], until_s: 1000.0 + cfg.leave_alone_s }], "{:#?}", d4.actions);
    // Lost while waiting for a CPU: nothing learnt, b goes to its memory.
    a.cpu_use = 0.8;
    a.cpu_wait = 0.2;
    a.cpu_per_node = BTreeMap::from([(1, 0.8)]);
    let d3 = decide(&m, &snap(1000.0, &m, &free, vec![a, b]), &cfg, &h);
    assert!(d3.changes().any(|x| x.pid == 1 && matches!(x.reason, Why::Harm { .. })), "{:#?}", d3.actions);
    assert!(d3.history.committed.slow_memory.is_empty());
    assert_eq!(binds(&d3), [(2, "0".to_string())], "{:#?}", d3.actions);
}
