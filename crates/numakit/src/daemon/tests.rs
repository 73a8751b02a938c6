use std::collections::BTreeMap;

use super::*;
use crate::sets::NodeSet;

const GIB: u64 = 1 << 30;
const PAGE: u64 = 4096;

fn node(id: u32, cpus: u32, mem_gib: u64) -> MachineNode {
    MachineNode { id, cpus, mem_bytes: mem_gib * GIB }
}

/// Two nodes of 4 CPUs and 8 GiB, SLIT 10/21.
fn two() -> Machine {
    Machine::new(vec![node(0, 4, 8), node(1, 4, 8)], vec![vec![10, 21], vec![21, 10]]).unwrap()
}

fn ns(list: &str) -> NodeSet {
    NodeSet::parse_list(list).unwrap()
}

/// A 1-CPU process running on `cpu_node` with `mem` (node, GiB) and a
/// measured stall share.
fn proc_(pid: i32, cpu_node: u32, mem: &[(u32, u64)], stall: f64) -> ProcInfo {
    ProcInfo {
        pid,
        comm: format!("job{pid}"),
        uid: 1000,
        cgroup: "/user.slice".into(),
        threads: 1,
        cpu_use: 1.0,
        cpu_wait: 0.0,
        rss_bytes: mem.iter().map(|m| m.1 * GIB).sum(),
        mem_per_node: mem.iter().map(|&(n, g)| (n, g * GIB)).collect(),
        cpu_per_node: BTreeMap::from([(cpu_node, 1.0)]),
        affinity: ns("0-63"),
        cpuset: NodeSet::new(),
        mem_policy: MemPolicy::Default,
        owner_pinned: false,
        age_s: 600.0,
        progress: Progress { cpu_rate: 1.0, instr_rate: Some(1.0) },
        mem_stall_share: Some(stall),
    }
}

/// `n` one-CPU processes pinned by their owner to `node` (load the daemon
/// may not displace).
fn pinned(node: u32, n: i32, pid0: i32) -> Vec<ProcInfo> {
    (0..n)
        .map(|i| {
            let mut p = proc_(pid0 + i, node, &[(node, 1)], 0.1);
            p.affinity = ns(&node.to_string());
            p
        })
        .collect()
}

fn snap(t: f64, m: &Machine, free: &[(f64, u64)], procs: Vec<ProcInfo>) -> Snapshot {
    Snapshot {
        time_s: t,
        nodes: m
            .nodes
            .iter()
            .zip(free)
            .map(|(n, &(c, g))| NodeState { id: n.id, free_cpus: c, free_bytes: g * GIB })
            .collect(),
        procs,
        exited: Vec::new(),
    }
}

fn changes(d: &Decision) -> Vec<&Action> {
    d.changes().collect()
}

fn why_of(d: &Decision, pid: i32) -> Vec<&Why> {
    d.actions.iter().filter(|a| a.pid == pid).map(|a| &a.reason).collect()
}

#[test]
fn remote_memory_follows_the_cpus() {
    let m = two();
    // Full machine: the process drifted to node 1, its 2 GiB stayed on 0.
    let s = snap(1000.0, &m, &[(0.0, 4), (0.0, 4)], vec![proc_(7, 1, &[(0, 2)], 0.4)]);
    let d = decide(&m, &s, &Config::default(), &History::new());
    let c = changes(&d);
    assert_eq!(c.len(), 2, "{:#?}", d.actions);
    assert_eq!(c[0].kind, ActionKind::Bind { cpu_nodes: ns("1"), mem_nodes: ns("1") });
    assert_eq!(c[1].kind, ActionKind::Migrate { from: 0, to: 1, pages: 2 * GIB / PAGE });
    // Ratio 1.62 -> 1.0 at 40% stalled: 1/(0.6+0.4/1.62)-1 = 18.1%, plus
    // a little drift protection.
    assert!(c[0].expected_gain > 0.18 && c[0].expected_gain < 0.22, "{}", c[0].expected_gain);
    let text = c[0].reason.to_string();
    assert!(text.contains("1.62 -> 1.00") && text.contains("measured"), "{text}");
    let rec = &d.history.procs[&7];
    assert_eq!(rec.moves, 1);
    assert_eq!(d.history.pages_migrated, 2 * GIB / PAGE);
}

#[test]
fn cache_resident_jobs_are_not_moved() {
    let m = two();
    let s = snap(1000.0, &m, &[(0.0, 4), (0.0, 4)], vec![proc_(7, 1, &[(0, 2)], 0.005)]);
    let d = decide(&m, &s, &Config::default(), &History::new());
    assert!(changes(&d).is_empty(), "{:#?}", d.actions);
    assert!(matches!(why_of(&d, 7)[..], [Why::NotWorth { .. } | Why::InPlace]), "{:?}", d.actions);
}

#[test]
fn thresholds_and_age() {
    let m = two();
    let mut small_cpu = proc_(1, 1, &[(0, 2)], 0.4);
    small_cpu.cpu_use = 0.4;
    small_cpu.cpu_per_node = BTreeMap::from([(1, 0.4)]);
    let mut small_mem = proc_(2, 1, &[(0, 0)], 0.4);
    small_mem.rss_bytes = 200_000_000;
    small_mem.mem_per_node = BTreeMap::from([(0, 200_000_000)]);
    let mut young = proc_(3, 1, &[(0, 2)], 0.4);
    young.age_s = 20.0;
    let s = snap(1000.0, &m, &[(1.0, 4), (1.0, 4)], vec![small_cpu, small_mem, young]);
    let d = decide(&m, &s, &Config::default(), &History::new());
    assert!(d.actions.is_empty(), "{:#?}", d.actions);
}

#[test]
fn exclusions() {
    let m = two();
    let mut procs: Vec<ProcInfo> = (1..=4).map(|p| proc_(p, 1, &[(0, 2)], 0.4)).collect();
    procs[1].comm = "postgres".into();
    procs[2].cgroup = "/system.slice/db.service".into();
    procs[3].uid = 0;
    let cfg = Config {
        exclude_pids: vec![1],
        exclude_comms: vec!["postgres".into()],
        exclude_cgroups: vec!["/system.slice".into()],
        exclude_uids: vec![0],
        ..Config::default()
    };
    let d = decide(&m, &snap(1000.0, &m, &[(2.0, 4), (2.0, 4)], procs), &cfg, &History::new());
    assert!(changes(&d).is_empty());
    let rules: Vec<String> = d
        .actions
        .iter()
        .map(|a| match &a.reason {
            Why::Excluded { rule } => rule.clone(),
            w => panic!("{w:?}"),
        })
        .collect();
    assert_eq!(rules, ["pid 1", "command name postgres", "cgroup /system.slice", "uid 0"]);
}

#[test]
fn owner_placement_is_respected_unless_configured() {
    let m = two();
    let mut p = proc_(5, 1, &[(0, 2)], 0.4);
    p.affinity = ns("1");
    let s = snap(1000.0, &m, &[(1.0, 4), (1.0, 4)], vec![p.clone()]);
    let d = decide(&m, &s, &Config::default(), &History::new());
    assert!(changes(&d).is_empty());
    assert_eq!(why_of(&d, 5), [&Why::OwnerPlaced]);
    // A memory policy someone set counts too.
    let mut q = proc_(6, 1, &[(0, 2)], 0.4);
    q.mem_policy = MemPolicy::Bind(ns("0"));
    let d = decide(&m, &snap(1000.0, &m, &[(1.0, 4), (1.0, 4)], vec![q]), &Config::default(), &History::new());
    assert_eq!(why_of(&d, 6), [&Why::OwnerPlaced]);
    // Configured: managed like any other (node 0 has an idle CPU, so the
    // CPUs go to the memory: nothing to migrate).
    let cfg = Config { manage_owner_pinned: true, ..Config::default() };
    let d = decide(&m, &s, &cfg, &History::new());
    let c = changes(&d);
    assert_eq!(c.len(), 1, "{:#?}", d.actions);
    assert_eq!(c[0].kind, ActionKind::Bind { cpu_nodes: ns("0"), mem_nodes: ns("0") });
}

#[test]
fn memory_less_cpu_node_takes_the_nearest_memory() {
    // Node 1 has CPUs but no memory; node 0 is nearer to it than node 2.
    let m = Machine::new(
        vec![node(0, 4, 8), node(1, 4, 0), node(2, 4, 8)],
        vec![vec![10, 12, 21], vec![12, 10, 21], vec![21, 21, 10]],
    )
    .unwrap();
    // Runs on node 1 (the only idle CPUs), memory on far node 2.
    let mut procs = vec![proc_(9, 1, &[(2, 2)], 0.5)];
    procs.extend(pinned(0, 4, 100));
    procs.extend(pinned(2, 4, 200));
    let s = snap(1000.0, &m, &[(0.0, 6), (1.0, 0), (0.0, 6)], procs);
    let d = decide(&m, &s, &Config::default(), &History::new());
    let c = changes(&d);
    assert_eq!(c[0].kind, ActionKind::Bind { cpu_nodes: ns("1"), mem_nodes: ns("0") }, "{:#?}", d.actions);
    assert_eq!(c[1].kind, ActionKind::Migrate { from: 2, to: 0, pages: 2 * GIB / PAGE });
}

#[test]
fn cpu_less_memory_node_never_gets_cpus_and_memory_only_when_allowed() {
    // Node 2: 64 GiB, no CPUs, slow.
    let m = Machine::new(
        vec![node(0, 4, 8), node(1, 4, 8), node(2, 0, 64)],
        vec![vec![10, 21, 14], vec![21, 10, 24], vec![14, 24, 10]],
    )
    .unwrap()
    .with_measured(vec![vec![1.0, 1.62, 2.1], vec![1.62, 1.0, 2.8], vec![2.1, 2.8, 1.0]])
    .unwrap();
    // Memory on the slow node, CPU on node 0 with room on node 0.
    let s = snap(1000.0, &m, &[(0.0, 6), (0.0, 6), (0.0, 60)], vec![proc_(3, 0, &[(2, 2)], 0.4)]);
    let d = decide(&m, &s, &Config::default(), &History::new());
    let c = changes(&d);
    assert_eq!(c[0].kind, ActionKind::Bind { cpu_nodes: ns("0"), mem_nodes: ns("0") });
    assert_eq!(c[1].kind, ActionKind::Migrate { from: 2, to: 0, pages: 2 * GIB / PAGE });
    // Node 0 and 1 full of memory, memory on node 1 (ratio 1.62 from node 0):
    // the slow node (2.1) is no better, so nothing moves even when allowed.
    let s = snap(1000.0, &m, &[(0.0, 0), (0.0, 0), (0.0, 60)], vec![proc_(4, 0, &[(1, 2)], 0.4)]);
    let cfg = Config { use_cpuless_memory: true, ..Config::default() };
    let d = decide(&m, &s, &cfg, &History::new());
    assert!(d.changes().all(|a| !matches!(a.kind, ActionKind::Migrate { to: 2, .. })), "{:#?}", d.actions);
    // Memory on a far node (2.8 from node 1) with the slow node nearer (2.1
    // from node 0) and no DRAM room: allowed -> moved to the slow node.
    let m2 = Machine::new(
        vec![node(0, 4, 8), node(1, 4, 8), node(2, 0, 64), node(3, 4, 8)],
        vec![vec![10, 21, 14, 31], vec![21, 10, 24, 21], vec![14, 24, 10, 30], vec![31, 21, 30, 10]],
    )
    .unwrap()
    .with_measured(vec![
        vec![1.0, 1.62, 2.1, 2.8],
        vec![1.62, 1.0, 2.8, 1.62],
        vec![2.1, 2.8, 1.0, 3.0],
        vec![2.8, 1.62, 3.0, 1.0],
    ])
    .unwrap();
    let mut procs = vec![proc_(5, 0, &[(3, 2)], 0.5)];
    procs.extend(pinned(1, 4, 100));
    procs.extend(pinned(3, 4, 200));
    let s = snap(1000.0, &m2, &[(0.0, 0), (0.0, 0), (0.0, 60), (0.0, 0)], procs);
    let d = decide(&m2, &s, &Config::default(), &History::new());
    assert!(
        changes(&d).iter().all(|a| matches!(a.kind, ActionKind::Bind { .. })),
        "not allowed by default: {:#?}",
        d.actions
    );
    let d = decide(&m2, &s, &cfg, &History::new());
    let c = changes(&d);
    assert!(c.iter().all(|a| !matches!(&a.kind, ActionKind::Bind { cpu_nodes, .. } if cpu_nodes.contains(2))));
    assert!(c.iter().any(|a| a.kind == ActionKind::Migrate { from: 3, to: 2, pages: 2 * GIB / PAGE }), "{c:#?}");
}

#[test]
fn node_sizes_are_each_nodes_own() {
    // Node 0 has 2 CPUs, node 1 has 8: a 4-CPU process fits only node 1.
    let m = Machine::new(vec![node(0, 2, 8), node(1, 8, 8)], vec![vec![10, 21], vec![21, 10]]).unwrap();
    let mut p = proc_(2, 0, &[(0, 1)], 0.4);
    p.threads = 4;
    p.cpu_use = 4.0;
    p.cpu_per_node = BTreeMap::from([(0, 1.5), (1, 2.5)]);
    let s = snap(1000.0, &m, &[(0.5, 6), (5.5, 7)], vec![p]);
    let d = decide(&m, &s, &Config::default(), &History::new());
    let c = changes(&d);
    assert_eq!(c[0].kind, ActionKind::Bind { cpu_nodes: ns("1"), mem_nodes: ns("1") }, "{:#?}", d.actions);
}

#[test]
fn measured_ratios_beat_firmware_distances() {
    // Memory stuck on node 0 (no free memory elsewhere), CPUs free on 1 and
    // 2. Firmware says 1 is nearer to 0, measurement says 2.
    let slit = vec![vec![10, 16, 22, 22], vec![16, 10, 22, 22], vec![22, 22, 10, 16], vec![22, 22, 16, 10]];
    let nodes = vec![node(0, 4, 8), node(1, 4, 8), node(2, 4, 8), node(3, 4, 8)];
    let free = [(0.0, 0), (2.0, 0), (2.0, 0), (0.0, 0)];
    let mut procs = vec![proc_(8, 3, &[(0, 2)], 0.5)];
    procs.extend(pinned(0, 4, 100));
    let m = Machine::new(nodes.clone(), slit.clone()).unwrap();
    let d = decide(&m, &snap(1000.0, &m, &free, procs.clone()), &Config::default(), &History::new());
    assert_eq!(changes(&d)[0].kind, ActionKind::Bind { cpu_nodes: ns("1"), mem_nodes: ns("1") });
    let measured =
        vec![vec![1.0, 1.9, 1.3, 1.9], vec![1.9, 1.0, 1.9, 1.9], vec![1.3, 1.9, 1.0, 1.9], vec![1.9, 1.9, 1.9, 1.0]];
    let m = Machine::new(nodes, slit).unwrap().with_measured(measured).unwrap();
    let d = decide(&m, &snap(1000.0, &m, &free, procs), &Config::default(), &History::new());
    assert_eq!(changes(&d)[0].kind, ActionKind::Bind { cpu_nodes: ns("2"), mem_nodes: ns("2") });
}

#[test]
fn larger_than_a_node_takes_the_nearest_group() {
    // 4 nodes of 4 CPUs; pairs 0-1 and 2-3 are near (16), others 22.
    let slit = vec![vec![10, 16, 22, 22], vec![16, 10, 22, 22], vec![22, 22, 10, 16], vec![22, 22, 16, 10]];
    let m = Machine::new((0..4).map(|i| node(i, 4, 8)).collect(), slit).unwrap();
    let mut p = proc_(4, 0, &[(0, 2), (1, 2), (2, 2), (3, 2)], 0.3);
    p.threads = 6;
    p.cpu_use = 6.0;
    p.cpu_per_node = BTreeMap::from([(0, 1.5), (1, 1.5), (2, 1.5), (3, 1.5)]);
    let s = snap(1000.0, &m, &[(2.5, 5), (2.5, 5), (0.0, 5), (0.0, 5)], vec![p]);
    let d = decide(&m, &s, &Config::default(), &History::new());
    let c = changes(&d);
    assert_eq!(c[0].kind, ActionKind::Bind { cpu_nodes: ns("0-1"), mem_nodes: ns("0-1") }, "{:#?}", d.actions);
    let moved: u64 = c
        .iter()
        .filter_map(|a| match a.kind {
            ActionKind::Migrate { from, pages, .. } => {
                assert!(from >= 2);
                Some(pages)
            }
            _ => None,
        })
        .sum();
    // 4 GiB to move, 3.75 GiB of budget per 15 s: the rest is owed.
    assert_eq!(moved, 983040);
    let owed: u64 = d.history.procs[&4].placement.as_ref().unwrap().pending.iter().map(|x| x.2).sum();
    assert_eq!(moved + owed, 4 * GIB / PAGE);
}

#[test]
fn page_budget_is_global_and_big_moves_continue() {
    let m = Machine::new(vec![node(0, 4, 16), node(1, 4, 16)], vec![vec![10, 21], vec![21, 10]]).unwrap();
    let cfg = Config { pages_per_s: 65536, interval_s: 15.0, ..Config::default() };
    // Budget per 15 s: 983040 pages = 3.75 GiB. Two 3-GiB moves: one now.
    let mut a = proc_(1, 1, &[(0, 3)], 0.4);
    a.mem_stall_share = Some(0.5);
    let b = proc_(2, 1, &[(0, 3)], 0.4);
    let s = snap(1000.0, &m, &[(0.0, 1), (0.0, 12)], vec![a, b]);
    let d = decide(&m, &s, &cfg, &History::new());
    let migrated: u64 = d
        .changes()
        .filter_map(|x| match x.kind {
            ActionKind::Migrate { pages, .. } => Some(pages),
            _ => None,
        })
        .sum();
    assert_eq!(migrated, 3 * GIB / PAGE);
    assert_eq!(why_of(&d, 2), [&Why::Budget], "{:#?}", d.actions);
    // One 6-GiB move: the budget's worth now, the rest owed next scan.
    let p = proc_(3, 1, &[(0, 6)], 0.5);
    let s = snap(1000.0, &m, &[(0.0, 1), (0.0, 12)], vec![p.clone()]);
    let d = decide(&m, &s, &cfg, &History::new());
    let first: Vec<_> = d.changes().map(|a| a.kind.clone()).collect();
    assert_eq!(first[1], ActionKind::Migrate { from: 0, to: 1, pages: 983040 });
    let owed = 6 * GIB / PAGE - 983040;
    assert_eq!(d.history.procs[&3].placement.as_ref().unwrap().pending, vec![(0, 1, owed)]);
    let mut p2 = p;
    p2.age_s += 15.0;
    p2.affinity = ns("1");
    p2.mem_policy = MemPolicy::Preferred(ns("1"));
    p2.mem_per_node = BTreeMap::from([(0, 6 * GIB - 983040 * PAGE), (1, 983040 * PAGE)]);
    let s = snap(1015.0, &m, &[(0.0, 4), (0.0, 4)], vec![p2]);
    let d2 = decide(&m, &s, &cfg, &d.history);
    let next: Vec<_> = d2.changes().map(|a| (a.kind.clone(), a.reason.clone())).collect();
    assert_eq!(next, [(ActionKind::Migrate { from: 0, to: 1, pages: owed }, Why::Pending { left_pages: 0 })]);
}

/// Moves a process, then judges it `later` seconds on with `progress`.
fn move_then_judge(progress: f64, history: &History, pid: i32, t0: f64) -> (Decision, Decision) {
    let m = two();
    let cfg = Config::default();
    let p = proc_(pid, 1, &[(0, 2)], 0.4);
    let d1 = decide(&m, &snap(t0, &m, &[(0.0, 4), (0.0, 4)], vec![p.clone()]), &cfg, history);
    assert_eq!(d1.changes().count(), 2, "{:#?}", d1.actions);
    let mut after = p;
    after.age_s += 120.0;
    after.affinity = ns("1");
    after.mem_policy = MemPolicy::Preferred(ns("1"));
    after.mem_per_node = BTreeMap::from([(1, 2 * GIB)]);
    after.progress = Progress { cpu_rate: 1.0, instr_rate: Some(progress) };
    let d2 = decide(&m, &snap(t0 + 120.0, &m, &[(0.0, 4), (0.0, 4)], vec![after]), &cfg, &d1.history);
    (d1, d2)
}

#[test]
fn a_move_that_helps_is_kept() {
    let (_, d2) = move_then_judge(1.15, &History::new(), 7, 1000.0);
    assert!(d2.changes().next().is_none());
    assert!(matches!(why_of(&d2, 7)[0], Why::Judged { .. }), "{:#?}", d2.actions);
    assert!(d2.history.procs[&7].placement.as_ref().unwrap().judged);
}

#[test]
fn a_move_that_hurts_is_reverted_and_remembered() {
    let (_, d2) = move_then_judge(0.9, &History::new(), 7, 1000.0);
    let c: Vec<_> = d2.changes().collect();
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].kind, ActionKind::Revert { cpu_nodes: ns("0-63"), mem_policy: MemPolicy::Default });
    assert!(c[0].reason.to_string().contains("-10.0%"), "{}", c[0].reason);
    let rec = &d2.history.procs[&7];
    assert_eq!(rec.left_alone_until_s, Some(1120.0 + 3600.0));
    assert_eq!(d2.history.comms["job7"].harms, 1);
    // The history survives a restart (JSON round trip).
    let h = History::from_json(&d2.history.to_json()).unwrap();
    assert_eq!(h, d2.history);
    // Next scan: left alone.
    let m = two();
    let mut p = proc_(7, 0, &[(0, 2)], 0.4);
    p.age_s = 800.0;
    let d3 = decide(&m, &snap(1200.0, &m, &[(0.0, 4), (0.0, 4)], vec![p]), &Config::default(), &h);
    assert_eq!(why_of(&d3, 7), [&Why::LeftAlone { until_s: 4720.0 }]);
}

#[test]
fn comm_ban_is_set_by_decide_itself() {
    let m = two();
    let cfg = Config { comm_harm_limit: 2, ..Config::default() };
    let mut h = History::new();
    let mut t = 1000.0;
    for pid in [31, 32] {
        let mut p = proc_(pid, 1, &[(0, 2)], 0.4);
        p.comm = "reco".into();
        let d1 = decide(&m, &snap(t, &m, &[(0.0, 4), (0.0, 4)], vec![p.clone()]), &cfg, &h);
        p.age_s += 120.0;
        p.affinity = ns("1");
        p.mem_policy = MemPolicy::Preferred(ns("1"));
        p.progress.instr_rate = Some(0.5);
        let d2 = decide(&m, &snap(t + 120.0, &m, &[(0.0, 4), (0.0, 4)], vec![p]), &cfg, &d1.history);
        h = d2.history;
        // (Node 1's memory is now remembered as slow, change 19 in
        // decide/judge.rs; the name's record is what is tested here.)
        h.slow_memory.clear();
        t += 200.0;
    }
    assert_eq!(h.reverts, 2);
    assert_eq!(h.comms["reco"].left_alone_until_s, Some(1320.0 + 86400.0));
    // Another process of the same name is left alone too.
    let mut p = proc_(40, 1, &[(0, 2)], 0.4);
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
    let mut p = proc_(7, 1, &[(1, 2)], 0.4);
    p.age_s = 800.0;
    p.affinity = ns("1");
    p.mem_policy = MemPolicy::Preferred(ns("1"));
    let d3 = decide(&m, &snap(1200.0, &m, &[(0.0, 4), (0.0, 4)], vec![p]), &Config::default(), &d2.history);
    assert_eq!(why_of(&d3, 7), [&Why::CoolDown { until_s: 1300.0 }]);
}

#[test]
fn pid_reuse_forgets_the_old_process() {
    let (_, d2) = move_then_judge(0.5, &History::new(), 7, 1000.0);
    assert!(d2.history.procs[&7].left_alone_until_s.is_some());
    let m = two();
    // Same pid, but started just now.
    let mut p = proc_(7, 1, &[(0, 2)], 0.4);
    p.age_s = 100.0;
    // (Node 1's memory is remembered as slow, change 19 in decide/judge.rs; the
    // process's own record is what is tested here.)
    let mut h = d2.history.clone();
    h.slow_memory.clear();
    let d3 = decide(&m, &snap(1500.0, &m, &[(0.0, 4), (0.0, 4)], vec![p]), &Config::default(), &h);
    assert_eq!(d3.changes().count(), 2, "{:#?}", d3.actions);
}

#[test]
fn deterministic_and_order_independent() {
    let m = two();
    let procs: Vec<ProcInfo> =
        (1..=6).map(|i| proc_(i, (i % 2) as u32, &[(((i + 1) % 2) as u32, 1)], 0.1 * i as f64)).collect();
    let mut rev = procs.clone();
    rev.reverse();
    let a = decide(&m, &snap(1000.0, &m, &[(0.0, 3), (0.0, 3)], procs), &Config::default(), &History::new());
    let b = decide(&m, &snap(1000.0, &m, &[(0.0, 3), (0.0, 3)], rev), &Config::default(), &History::new());
    assert_eq!(a, b);
    // Best gain first.
    let first = a.changes().next().unwrap();
    assert_eq!(first.pid, 6);
}

#[test]
fn bound_load_never_exceeds_a_nodes_cpus() {
    let m = two();
    // Node 1 already runs 4 bound CPUs' worth (owner-pinned). A process
    // whose memory is on node 1 cannot be bound there even if idle CPUs
    // are reported (the bound ones are about to wake).
    let mut pinned: Vec<ProcInfo> = (10..14).map(|i| proc_(i, 1, &[(1, 1)], 0.1)).collect();
    for p in &mut pinned {
        p.affinity = ns("1");
    }
    let mut procs = pinned;
    procs.push(proc_(1, 0, &[(1, 2)], 0.5));
    let s = snap(1000.0, &m, &[(0.0, 4), (1.0, 1)], procs);
    let d = decide(&m, &s, &Config::default(), &History::new());
    assert_no_bind_on(&d, 1);
}

#[test]
fn bound_load_counts_what_starved_threads_wait_for() {
    let m = two();
    // Node 0 is full of owner-pinned work. Five busy threads share node 1's
    // four CPUs: four pinned there by their owner and one unbound, whose
    // memory is mostly on node 1. Each gets 0.8 CPU and waits 0.2. By use
    // alone the pinned ones hold 3.2 CPUs and pinning the fifth there looks
    // like it fits (4.0); by what they need they hold all four, and node 0
    // has no room either: nothing is bound.
    let mut procs = pinned(0, 4, 20);
    let mut starved: Vec<ProcInfo> = (10..14).map(|i| proc_(i, 1, &[(1, 1)], 0.1)).collect();
    starved.push(proc_(1, 1, &[(1, 2), (0, 1)], 0.5));
    for (i, p) in starved.iter_mut().enumerate() {
        p.cpu_use = 0.8;
        p.cpu_wait = 0.2;
        p.cpu_per_node = BTreeMap::from([(1, 0.8)]);
        p.progress.cpu_rate = 0.8;
        if i < 4 {
            p.affinity = ns("1");
        }
    }
    procs.extend(starved);
    let s = snap(1000.0, &m, &[(0.0, 4), (0.0, 1)], procs);
    let d = decide(&m, &s, &Config::default(), &History::new());
    assert!(d.changes().all(|a| !matches!(&a.kind, ActionKind::Bind { .. })), "{:#?}", d.actions);
}

#[test]
fn a_process_bound_in_the_window_holds_its_new_node_whole() {
    // Four nodes of 2 CPUs. Two one-thread processes numakit bound to node
    // 0 at the previous scan, so over this window each ran half on node 0
    // and half where it was before, and node 0 was half idle. By where
    // they ran node 0 holds 1 CPU; by where they may run, 2: a third
    // process whose memory is on node 0 must not be bound there too.
    let m = four_of_two();
    let mut h = History::new();
    let mut procs = Vec::new();
    for (pid, ran) in [(1, vec![(0, 0.5), (1, 0.5)]), (2, vec![(0, 0.5), (3, 0.5)])] {
        let mut p = proc_(pid, 0, &[(0, 1)], 0.3);
        p.affinity = ns("0");
        p.cpu_per_node = ran.into_iter().collect();
        h.procs.insert(pid, bound_record(&p, "0"));
        procs.push(p);
    }
    let mut third = proc_(3, 2, &[(0, 2)], 0.5);
    third.age_s = 3600.0;
    procs.push(third);
    let s = snap(1000.0, &m, &[(1.0, 1), (1.5, 4), (1.0, 2), (1.5, 4)], procs);
    let d = decide(&m, &s, &Config::default(), &h);
    assert_no_bind_on(&d, 0);
}

#[test]
fn a_busy_single_thread_needs_a_whole_cpu_even_when_it_reads_less() {
    // Four nodes of 2 CPUs. Two one-thread processes numakit bound to node
    // 0 read 0.66 CPU each (a guest on a loaded host under-counts busy
    // threads), so do the other four, all with memory on node 0. By those
    // readings a third fits node 0 (3 x 0.66 <= 2); by what a busy thread
    // needs, it does not.
    let m = four_of_two();
    let mut h = History::new();
    let mut procs = Vec::new();
    let slow = |p: &mut ProcInfo| {
        p.cpu_use = 0.66;
        p.progress.cpu_rate = 0.66;
        for x in p.cpu_per_node.values_mut() {
            *x = 0.66;
        }
    };
    for pid in [1, 2] {
        let mut p = proc_(pid, 0, &[(0, 1)], 0.3);
        p.affinity = ns("0");
        slow(&mut p);
        h.procs.insert(pid, bound_record(&p, "0"));
        procs.push(p);
    }
    for (pid, node) in [(3, 1), (4, 2), (5, 3), (6, 1)] {
        let mut p = proc_(pid, node, &[(0, 1)], 0.5);
        p.age_s = 3600.0;
        slow(&mut p);
        procs.push(p);
    }
    let s = snap(1000.0, &m, &[(0.68, 2), (0.68, 3), (1.34, 3), (1.34, 3)], procs);
    let d = decide(&m, &s, &Config::default(), &h);
    assert_no_bind_on(&d, 0);
    assert!(d.changes().any(|a| matches!(&a.kind, ActionKind::Bind { .. })), "{:#?}", d.actions);
}

/// No process bound to CPUs of a node set holding `node`.
fn assert_no_bind_on(d: &Decision, node: u32) {
    assert!(
        d.changes().all(|a| !matches!(&a.kind, ActionKind::Bind { cpu_nodes, .. } if cpu_nodes.contains(node))),
        "{:#?}",
        d.actions
    );
}

/// Four nodes of 2 CPUs and 4 GiB, SLIT 10/20.
fn four_of_two() -> Machine {
    let dist: Vec<Vec<u32>> = (0..4).map(|a| (0..4).map(|b| if a == b { 10 } else { 20 }).collect()).collect();
    Machine::new((0..4).map(|i| node(i, 2, 4)).collect(), dist).unwrap()
}

/// A history record of a process numakit bound to `nodes` at t = 990 s.
fn bound_record(p: &ProcInfo, nodes: &str) -> ProcRecord {
    ProcRecord {
        comm: p.comm.clone(),
        start_s: 1000.0 - p.age_s,
        last_move_s: Some(990.0),
        moves: 1,
        placement: Some(Placement {
            cpu_nodes: ns(nodes),
            mem_nodes: ns(nodes),
            prev_affinity: ns("0-3"),
            prev_policy: MemPolicy::Default,
            origin_affinity: ns("0-3"),
            origin_policy: MemPolicy::Default,
            baseline_progress: 1.0,
            baseline_is_instr: true,
            baseline_locality: 0.5,
            expected_gain: 0.1,
            at_s: 990.0,
            judged: false,
            pending: Vec::new(),
            settled_from_s: 990.0,
        }),
        left_alone_until_s: None,
        last_cpu_node: None,
        last_rss: None,
    }
}

#[test]
fn drift_is_observed_and_protects_local_processes() {
    let m = two();
    let cfg = Config::default();
    // A local, memory-heavy process: no pages to move. With the prior (one
    // drift per hour) pinning it in place is worth it.
    let p = proc_(1, 0, &[(0, 2)], 0.5);
    let d = decide(&m, &snap(1000.0, &m, &[(0.0, 4), (1.0, 4)], vec![p.clone()]), &cfg, &History::new());
    let c: Vec<_> = d.changes().collect();
    assert_eq!(c.len(), 1, "{:#?}", d.actions);
    assert_eq!(c[0].kind, ActionKind::Bind { cpu_nodes: ns("0"), mem_nodes: ns("0") });
    assert!(matches!(c[0].reason, Why::Improve { drift_protection, .. } if drift_protection > 0.01));
    // Without pinning in place it is left as it is.
    let cfg2 = Config { pin_in_place: false, ..Config::default() };
    let d = decide(&m, &snap(1000.0, &m, &[(0.0, 4), (1.0, 4)], vec![p.clone()]), &cfg2, &History::new());
    assert!(d.changes().next().is_none());
    // Drift is counted from the main CPU node of unbound processes.
    let mut h = History::new();
    let mut q = p;
    q.mem_stall_share = Some(0.0);
    for (i, n) in [0u32, 1, 1, 0].iter().enumerate() {
        q.cpu_per_node = BTreeMap::from([(*n, 1.0)]);
        let t = 1000.0 + 15.0 * i as f64;
        q.age_s = 600.0 + 15.0 * i as f64;
        h = decide(&m, &snap(t, &m, &[(0.0, 4), (1.0, 4)], vec![q.clone()]), &cfg, &h).history;
    }
    assert_eq!(h.drifts, 2);
    assert!((h.drift_observed_s - 45.0).abs() < 1e-9);
}

#[test]
fn machine_ratios_and_checks() {
    let m = Machine::new(
        vec![node(0, 4, 1), node(1, 4, 1), node(2, 4, 1)],
        vec![vec![10, 16, 22], vec![16, 10, 16], vec![22, 16, 10]],
    )
    .unwrap();
    let r = m.ratios(21, 1.62);
    assert!((r[0][1] - (1.0 + 6.0 * 0.62 / 11.0)).abs() < 1e-9);
    assert_eq!(r[2][2], 1.0);
    assert!(Machine::new(vec![node(1, 1, 1), node(0, 1, 1)], vec![vec![10; 2]; 2]).is_err());
    assert!(two().with_measured(vec![vec![1.0, f64::NAN], vec![1.0, 1.0]]).is_err());
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
    let s = snap(1000.0, &m, &[(0.0, 4), (0.0, 4)], vec![proc_(7, 1, &[(0, 2)], 0.4)]);
    let d = decide(&m, &s, &Config::default(), &History::new());
    let j = serde_json::to_value(&d.actions).unwrap();
    assert_eq!(j[0]["action"], "bind");
    assert_eq!(j[0]["cpu_nodes"], "1");
    assert_eq!(j[0]["reason"]["why"], "improve");
    assert_eq!(j[1]["action"], "migrate");
}

#[test]
fn our_own_pins_make_room_for_a_bigger_gain() {
    // 2 nodes of 4 CPUs. Three one-CPU processes numakit pinned to node 0,
    // one unbound on node 1. A 4-CPU process runs 1 CPU on node 0 and 3 on
    // node 1 with its 4 GiB on node 0: moving it to node 0 needs the pins
    // undone (the scheduler then moves them to node 1).
    let m = Machine::new(vec![node(0, 4, 16), node(1, 4, 16)], vec![vec![10, 21], vec![21, 10]]).unwrap();
    let mut h = History::new();
    let mut procs = Vec::new();
    for pid in 1..=3 {
        let mut p = proc_(pid, 0, &[(0, 1)], 0.05);
        p.affinity = ns("0");
        p.mem_policy = MemPolicy::Preferred(ns("0"));
        h.procs.insert(
            pid,
            ProcRecord {
                comm: p.comm.clone(),
                start_s: 1000.0 - p.age_s,
                last_move_s: Some(0.0),
                moves: 1,
                placement: Some(Placement {
                    cpu_nodes: ns("0"),
                    mem_nodes: ns("0"),
                    prev_affinity: ns("0-63"),
                    prev_policy: MemPolicy::Default,
                    origin_affinity: ns("0-63"),
                    origin_policy: MemPolicy::Default,
                    baseline_progress: 1.0,
                    baseline_is_instr: true,
                    baseline_locality: 1.0,
                    expected_gain: 0.01,
                    at_s: 0.0,
                    judged: true,
                    pending: Vec::new(),
                    settled_from_s: 0.0,
                }),
                left_alone_until_s: None,
                last_cpu_node: None,
                last_rss: None,
            },
        );
        procs.push(p);
    }
    let mut big = proc_(9, 0, &[(0, 4)], 0.6);
    big.threads = 4;
    big.cpu_use = 4.0;
    big.cpu_per_node = BTreeMap::from([(0, 1.0), (1, 3.0)]);
    big.age_s = 3600.0;
    procs.push(big);
    let s = snap(1000.0, &m, &[(0.0, 8), (0.0, 12)], procs);
    let d = decide(&m, &s, &Config::default(), &h);
    let c: Vec<_> = d.changes().collect();
    let reverts = c.iter().filter(|a| matches!(a.reason, Why::MakeRoom { for_pid: 9 })).count();
    assert_eq!(reverts, 3, "{c:#?}");
    assert!(c.iter().any(|a| a.pid == 9 && a.kind == ActionKind::Bind { cpu_nodes: ns("0"), mem_nodes: ns("0") }));
    assert!(d.history.procs[&1].placement.is_none());
}
