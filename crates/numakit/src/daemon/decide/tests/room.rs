use super::*;

/// Records in `h` that numakit bound `p` to node 0 at 990 s, the scan
/// before 1000 s, from all four nodes; not judged yet.
fn bound_in_the_last_window(h: &mut History, p: &ProcInfo) {
    let pl = Placement {
        prev_affinity: ns("0-3"),
        origin_affinity: ns("0-3"),
        baseline_locality: 0.5,
        expected_gain: 0.1,
        at_s: 990.0,
        settled_from_s: 990.0,
        ..placement("0", "0")
    };
    record(h, p, 1000.0, pl);
}

#[test]
fn bound_load_never_exceeds_a_nodes_cpus() {
    let m = two();
    // Node 1 already runs 4 bound CPUs' worth (owner-pinned). A process
    // whose memory is on node 1 cannot be bound there even if idle CPUs
    // are reported (the bound ones are about to wake).
    let mut pinned: Vec<ProcInfo> = (10..14).map(|i| job(i, 1, &[(1, 1)], 0.1)).collect();
    for p in &mut pinned {
        p.affinity = ns("1");
    }
    let mut procs = pinned;
    procs.push(job(1, 0, &[(1, 2)], 0.5));
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
    let mut starved: Vec<ProcInfo> = (10..14).map(|i| job(i, 1, &[(1, 1)], 0.1)).collect();
    starved.push(job(1, 1, &[(1, 2), (0, 1)], 0.5));
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
        let mut p = job(pid, 0, &[(0, 1)], 0.3);
        p.affinity = ns("0");
        p.cpu_per_node = ran.into_iter().collect();
        bound_in_the_last_window(&mut h, &p);
        procs.push(p);
    }
    let mut third = job(3, 2, &[(0, 2)], 0.5);
    third.age_s = 3600.0;
    procs.push(third);
    let s = snap(1000.0, &m, &[(1.0, 1), (1.5, 4), (1.0, 2), (1.5, 4)], procs);
    let d = decide(&m, &s, &Config::default(), &h);
    assert_no_bind_on(&d, 0);
}

/// Two one-thread processes numakit bound to node 0 at the last scan,
/// booked a CPU each, read 0.45 CPU over the window in which their pages
/// moved (their threads blocked on the moving pages: neither running nor
/// waiting for a CPU). Until the moves are judged they hold what they were
/// booked for: a third process whose memory is on node 0 is not bound
/// there.
#[test]
fn a_move_being_made_holds_what_it_was_booked_for() {
    let m = four_of_two();
    let mut h = History::new();
    let mut procs = Vec::new();
    for (pid, was) in [(1, 1), (2, 3)] {
        let mut p = job(pid, 0, &[(0, 1)], 0.3);
        p.affinity = ns("0");
        p.cpu_use = 0.45;
        p.progress.cpu_rate = 0.45;
        p.cpu_per_node = BTreeMap::from([(0, 0.225), (was, 0.225)]);
        bound_in_the_last_window(&mut h, &p);
        h.committed.procs.get_mut(&pid).and_then(|r| r.placement.as_mut()).expect("placed").need = 1.0;
        procs.push(p);
    }
    let mut third = job(3, 2, &[(0, 2)], 0.5);
    third.age_s = 3600.0;
    procs.push(third);
    let s = snap(1000.0, &m, &[(1.1, 1), (1.5, 4), (1.0, 2), (1.5, 4)], procs);
    let d = decide(&m, &s, &Config::default(), &h);
    assert_no_bind_on(&d, 0);
    // Booked for less (an older state file: 0), they hold what they read,
    // and node 0 has room for the third.
    for r in h.committed.procs.values_mut() {
        r.placement.as_mut().expect("placed").need = 0.0;
    }
    let d = decide(&m, &s, &Config::default(), &h);
    assert!(binds(&d).contains(&(3, "0".to_string())), "{:#?}", d.actions);
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
        let mut p = job(pid, 0, &[(0, 1)], 0.3);
        p.affinity = ns("0");
        slow(&mut p);
        bound_in_the_last_window(&mut h, &p);
        procs.push(p);
    }
    for (pid, node) in [(3, 1), (4, 2), (5, 3), (6, 1)] {
        let mut p = job(pid, node, &[(0, 1)], 0.5);
        p.age_s = 3600.0;
        slow(&mut p);
        procs.push(p);
    }
    let s = snap(1000.0, &m, &[(0.68, 2), (0.68, 3), (1.34, 3), (1.34, 3)], procs);
    let d = decide(&m, &s, &Config::default(), &h);
    assert_no_bind_on(&d, 0);
    assert!(d.changes().any(|a| matches!(&a.kind, ActionKind::Bind { .. })), "{:#?}", d.actions);
}

/// In the test bed (4 nodes of 1 CPU, ring distances) one busy thread
/// read 1.013 CPUs over a window: it was "larger than a node" and was
/// bound to nodes 0 and 3, its memory on node 0 whose one CPU another
/// process is bound to, so it kept running on node 3 far from all of
/// its memory. A process needs at most one CPU per thread.
#[test]
fn a_thread_never_needs_more_than_one_cpu() {
    let ring = vec![vec![10, 20, 30, 20], vec![20, 10, 20, 30], vec![30, 20, 10, 20], vec![20, 30, 20, 10]];
    let m = machine(&[(0, 1, 1), (1, 1, 1), (2, 1, 1), (3, 1, 1)], ring);
    let mib = |x: u64| x << 20;
    let mut p = proc_(407, "nk-hold", &[(1, 0.5065), (3, 0.5065)], &[], 0.2);
    p.threads = 1;
    p.mem_per_node = BTreeMap::from([(0, mib(320))]);
    p.rss_bytes = mib(320);
    let mut q = proc_(408, "nk-hold", &[(0, 1.0)], &[], 0.2);
    q.affinity = ns("0");
    q.mem_per_node = BTreeMap::from([(0, mib(320))]);
    q.rss_bytes = mib(320);
    let free = [(0.0, 0), (0.5, 1), (0.0, 0), (0.5, 1)];
    let mut s = snap(1000.0, &m, &free, vec![p, q]);
    for (n, x) in s.nodes.iter_mut().zip([mib(350), mib(990), mib(600), mib(980)]) {
        n.free_bytes = x;
    }
    let d = decide(&m, &s, &Config::default(), &History::new());
    let b = binds(&d);
    assert!(b.iter().any(|(pid, _)| *pid == 407), "{:#?}", d.actions);
    for (pid, nodes) in &b {
        assert!(nodes.parse::<u32>().is_ok(), "pid {pid} bound to the group {nodes}: {:#?}", d.actions);
    }
}

/// Two processes want the one idle CPU of node 0: the first takes it;
/// the second, costed without displacing anyone, waits instead of
/// displacing a thread for free.
#[test]
fn an_option_whose_idle_cpus_were_taken_waits() {
    let m = machine(&[(0, 4, 8), (1, 4, 8)], vec![vec![10, 21], vec![21, 10]]);
    let mut procs = vec![proc_(1, "reco", &[(1, 1.0)], &[(0, 2)], 0.4), proc_(2, "reco", &[(1, 1.0)], &[(0, 2)], 0.4)];
    // Three small local jobs on node 0 (below the memory threshold).
    for pid in 10..13 {
        let mut p = proc_(pid, "small", &[(0, 1.0)], &[(0, 0)], 0.2);
        p.rss_bytes = 200_000_000;
        p.mem_per_node = BTreeMap::from([(0, 200_000_000)]);
        procs.push(p);
    }
    let d = decide(&m, &snap(1000.0, &m, &[(1.0, 4), (0.0, 4)], procs), &Config::default(), &History::new());
    assert_eq!(binds(&d), [(1, "0".to_string())], "{:#?}", d.actions);
    let why: Vec<&Why> = d.actions.iter().filter(|a| a.pid == 2).map(|a| &a.reason).collect();
    assert_eq!(why, [&Why::RoomTaken]);
}

/// The threads a move displaces take their own memory with
/// them, not the moving process's: a 4-thread process with 8 GiB on
/// node 0 and half its threads on node 1 displaces two small jobs from
/// node 0, whose 200 MB each are what has to follow them.
#[test]
fn displaced_threads_are_charged_their_own_memory() {
    let m = machine(&[(0, 4, 16), (1, 4, 16)], vec![vec![10, 21], vec![21, 10]]);
    let mut java = proc_(1, "java", &[(0, 2.0), (1, 2.0)], &[(0, 8)], 0.05);
    java.age_s = 60.0;
    let mut procs = vec![java];
    for pid in 10..12 {
        let mut p = proc_(pid, "small", &[(0, 1.0)], &[(0, 0)], 0.2);
        p.rss_bytes = 200_000_000;
        p.mem_per_node = BTreeMap::from([(0, 200_000_000)]);
        procs.push(p);
    }
    let d = decide(&m, &snap(1000.0, &m, &[(0.0, 7), (2.0, 15)], procs), &Config::default(), &History::new());
    assert_eq!(binds(&d), [(1, "0".to_string())], "{:#?}", d.actions);
    let Some(Why::Improve { cost_s, .. }) = d.actions.iter().find(|a| a.pid == 1).map(|a| &a.reason) else {
        panic!("{:#?}", d.actions)
    };
    // Two displaced threads of 200 MB, counted twice.
    assert!((cost_s - 4.0 * 200e6 / GIB as f64).abs() < 0.05, "{cost_s}");
}

#[test]
fn our_own_pins_make_room_for_a_bigger_gain() {
    // 2 nodes of 4 CPUs. Three one-CPU processes numakit pinned to node 0,
    // one unbound on node 1. A 4-CPU process runs 1 CPU on node 0 and 3 on
    // node 1 with its 4 GiB on node 0: moving it to node 0 needs the pins
    // undone (the scheduler then moves them to node 1).
    let m = machine(&[(0, 4, 16), (1, 4, 16)], vec![vec![10, 21], vec![21, 10]]);
    let mut h = History::new();
    let mut procs = Vec::new();
    for pid in 1..=3 {
        let mut p = job(pid, 0, &[(0, 1)], 0.05);
        p.affinity = ns("0");
        p.mem_policy = MemPolicy::Preferred(ns("0"));
        let pl = Placement { expected_gain: 0.01, at_s: 0.0, judged: true, settled_from_s: 0.0, ..placement("0", "0") };
        record(&mut h, &p, 1000.0, pl);
        procs.push(p);
    }
    let mut big = job(9, 0, &[(0, 4)], 0.6);
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
    assert!(d.history.committed.procs[&1].placement.is_none());
}

/// The test bed's `remote` scenario (bench/placers): four nodes of one CPU
/// and 1 GiB in a ring (neighbours 20, opposite 30), a busy loop pinned by
/// its owner to each of nodes 0-2, too small to be listed (the snapshot
/// reports their load per node, `bound_cpus`), every CPU busy; `hold` is
/// one busy thread of 340 MiB, its memory on `mem`, that ran where `ran`
/// says over the window.
fn ring_with_pinned_loops(mem: u32, ran: &[(u32, f64)], loops: f64) -> (Machine, Snapshot) {
    let ring = |a: u32, b: u32| match (a + 4 - b) % 4 {
        0 => 10,
        2 => 30,
        _ => 20,
    };
    let dist = (0..4).map(|a| (0..4).map(|b| ring(a, b)).collect()).collect();
    let m = machine(&[(0, 1, 1), (1, 1, 1), (2, 1, 1), (3, 1, 1)], dist);
    let mut hold = job(1, 0, &[], 0.2);
    hold.comm = "nk-hold".into();
    hold.cpu_use = 0.9;
    hold.progress.cpu_rate = 0.9;
    hold.cpu_per_node = ran.iter().copied().collect();
    hold.rss_bytes = 340 << 20;
    hold.mem_per_node = BTreeMap::from([(mem, 340 << 20)]);
    let mut s = snap(1000.0, &m, &[(0.0, 0), (0.0, 0), (0.0, 0), (0.0, 0)], vec![hold]);
    for n in &mut s.nodes {
        n.free_bytes = if n.id == mem { 600 << 20 } else { 900 << 20 };
        n.bound_cpus = if n.id < 3 { loops } else { 0.0 };
    }
    (m, s)
}

/// A node whose one CPU a small process's owner keeps busy is full, although
/// no listed process holds it: `remote` is never bound next to the pinned
/// loops, neither where its memory is (numakit alone: it ran on node 3 at
/// the previous scan and is on node 0 at this one, so its window is split
/// between the two) nor where it ran (beside AutoNUMA, which had brought
/// its pages to node 3 before the scheduler put it on node 0 for a window,
/// and after the bind moved them a second time). Without the loops' load
/// both decisions bind it to node 0, as the daemon did in the test bed.
#[test]
fn a_pinned_small_busy_loop_is_load_no_bind_may_share() {
    for (mem, ran) in [(0, vec![(0, 0.45), (3, 0.45)]), (3, vec![(0, 0.9)])] {
        let (m, s) = ring_with_pinned_loops(mem, &ran, 1.0);
        let d = decide(&m, &s, &Config::default(), &History::new());
        for node in 0..3 {
            assert_no_bind_on(&d, node);
        }
        let (m, unseen) = ring_with_pinned_loops(mem, &ran, 0.0);
        let d = decide(&m, &unseen, &Config::default(), &History::new());
        assert_eq!(binds(&d), [(1, "0".to_string())], "memory on {mem}: {:#?}", d.actions);
    }
    // With its memory on node 0, the one place with room is node 3, and the
    // pages follow.
    let (m, s) = ring_with_pinned_loops(0, &[(0, 0.45), (3, 0.45)], 1.0);
    let d = decide(&m, &s, &Config::default(), &History::new());
    assert_eq!(binds(&d), [(1, "3".to_string())], "{:#?}", d.actions);
    assert!(d.changes().any(|a| a.kind == ActionKind::Migrate { from: 0, to: 3, pages: 340 << 8 }), "{:#?}", d.actions);
}
