use super::*;

/// A one-CPU `evgen` job 60 s old on node 1, its 2 GiB on the CPU-less
/// node 0: moving them pays over 60 s (gain about 18 %, 10.8 CPU-s against
/// 2 × 2 CPU-s), not over 19 s.
fn short_job_machine() -> (Machine, ProcInfo, [(f64, u64); 2]) {
    let m = machine(&[(0, 0, 16), (1, 4, 16)], vec![vec![10, 21], vec![21, 10]]);
    let mut p = proc_(1, "evgen", &[(1, 1.0)], &[(0, 2)], 0.4);
    p.age_s = 60.0;
    (m, p, [(0.0, 14), (3.0, 16)])
}

/// A history that saw processes of `comm` end after `runs` seconds.
fn with_runs(comm: &str, runs: &[f64]) -> History {
    let mut h = History::new();
    for &r in runs {
        h.observed.comms.entry(comm.to_string()).or_default().record_run(r, 900.0, Config::default().runs_kept);
    }
    h
}

#[test]
fn drift_is_observed_and_protects_local_processes() {
    let m = two();
    let cfg = Config::default();
    // A local, memory-heavy process: no pages to move. With the prior (one
    // drift per hour) pinning it in place is worth it.
    let p = job(1, 0, &[(0, 2)], 0.5);
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
    assert_eq!(h.observed.drifts, 2);
    assert!((h.observed.drift_observed_s - 45.0).abs() < 1e-9);
}

/// Once three runs of a command were seen to end, a process of
/// that name is credited with what those that outran its age still ran
/// (with its age as one more run), never more than its age: a job about to
/// end gets no pages moved; without enough runs, or runs longer than its
/// age, it does as before.
#[test]
fn a_command_seen_to_end_soon_gets_no_move_that_pays_later() {
    let (m, p, free) = short_job_machine();
    let cfg = Config::default();
    let moved = |h: &History, cfg: &Config| {
        let d = decide(&m, &snap(1000.0, &m, &free, vec![p.clone()]), cfg, h);
        let any = d.changes().any(|a| matches!(a.kind, ActionKind::Migrate { .. }));
        any
    };
    assert!(moved(&History::new(), &cfg), "no runs known: the age (60 s) is the horizon");
    // Runs of 62, 65 and 70 s: (2 + 5 + 10 + 60) / 4 = 19.25 s left.
    let short = with_runs("evgen", &[62.0, 65.0, 70.0]);
    assert!(!moved(&short, &cfg));
    let d = decide(&m, &snap(1000.0, &m, &free, vec![p.clone()]), &cfg, &short);
    let why: Vec<&Why> = d.actions.iter().filter(|a| a.pid == 1).map(|a| &a.reason).collect();
    let [Why::NotWorth { horizon_s, horizon_runs, .. }] = why[..] else { panic!("{why:?}") };
    assert_eq!((*horizon_s, *horizon_runs), (19.25, 3));
    assert!(why[0].to_string().contains("over 19 s (the time left by 3 ended runs of this command)"), "{}", why[0]);
    // Two runs are not enough; another command's runs say nothing.
    assert!(moved(&with_runs("evgen", &[62.0, 65.0]), &cfg));
    assert!(moved(&with_runs("reco", &[62.0, 65.0, 70.0]), &cfg));
    // Long runs do not lengthen the horizon beyond the age.
    let long = with_runs("evgen", &[3000.0, 4000.0, 5000.0]);
    let d = decide(&m, &snap(1000.0, &m, &free, vec![p.clone()]), &cfg, &long);
    let horizon = d.actions.iter().find_map(|a| match a.reason {
        Why::Improve { horizon_s, horizon_runs, .. } => Some((horizon_s, horizon_runs)),
        _ => None,
    });
    assert_eq!(horizon, Some((60.0, 0)), "{:#?}", d.actions);
    // Runs all shorter than its age: it outlived them, the age again.
    assert!(moved(&with_runs("evgen", &[20.0, 30.0, 40.0]), &cfg));
    // Learning off.
    assert!(moved(&short, &Config { runs_to_learn: 0, ..Config::default() }));
}

/// A watched process the snapshot says exited adds its run time
/// (from its start to the middle of the last two scans) to its command's
/// runs, also when its pid already names a new process; the names whose
/// runs are kept are the most recent `comms_with_runs_kept`.
#[test]
fn runs_are_learnt_from_exits() {
    let (m, p, free) = short_job_machine();
    let cfg = Config::default();
    let names_kept = cfg.comms_with_runs_kept as usize;
    let mut h = History::new();
    h.observed.procs.insert(7, ProcObserved::new("evgen", 900.0));
    h.observed.procs.insert(1, ProcObserved::new("evgen", 800.0));
    h.observed.procs.insert(9, ProcObserved::new("other", 950.0));
    h.observed.last_time_s = Some(985.0);
    for i in 0..names_kept {
        h.observed.comms.entry(format!("c{i:03}")).or_default().record_run(10.0, i as f64, cfg.runs_kept);
    }
    // pid 1 is now a new process (started at 940 s); 7 is gone; 9 left the
    // candidates but did not exit.
    let mut s = snap(1000.0, &m, &free, vec![p.clone()]);
    s.exited = vec![7, 1];
    let d = decide(&m, &s, &cfg, &h);
    let runs = &d.history.observed.comms["evgen"].runs;
    assert_eq!(runs, &[92.5, 192.5]);
    assert_eq!(d.history.observed.comms["evgen"].last_run_s, Some(1000.0));
    assert!(!d.history.observed.comms.contains_key("other") && !d.history.committed.comms.contains_key("other"));
    assert!(!d.history.knows(7));
    assert_eq!(d.history.observed.procs.get(&1).map(|r| r.start_s), Some(940.0), "the new process's record");
    // The oldest name's runs made room (and the name, with nothing else
    // to remember, is forgotten).
    assert!(!d.history.observed.comms.contains_key("c000") && !d.history.committed.comms.contains_key("c000"));
    assert_eq!(d.history.observed.comms.values().filter(|c| !c.runs.is_empty()).count(), names_kept);
    // No previous scan (a restarted daemon's first): nothing is learnt.
    let mut h0 = h.clone();
    h0.observed.last_time_s = None;
    assert!(!decide(&m, &s, &cfg, &h0).history.observed.comms.contains_key("evgen"));
    // The history keeps them across a restart (JSON).
    let back = History::from_json(&d.history.to_json()).expect("json");
    assert_eq!(back.observed.comms["evgen"].runs, [92.5, 192.5]);
}

/// At most `runs_kept` runs per name,
/// the oldest dropped first.
#[test]
fn a_name_keeps_its_latest_runs() {
    use crate::daemon::history::CommRuns;
    let kept = Config::default().runs_kept;
    let runs_kept = kept as usize;
    let mut c = CommRuns::default();
    for i in 0..runs_kept + 3 {
        c.record_run(i as f64, i as f64, kept);
    }
    assert_eq!(c.runs.len(), runs_kept);
    assert_eq!(c.runs[0], 3.0);
    assert_eq!(c.runs[runs_kept - 1], (runs_kept + 2) as f64);
    c.record_run(-5.0, 100.0, kept);
    assert_eq!(c.runs[runs_kept - 1], 0.0, "a clock step back is no negative run");
}
