use std::collections::BTreeMap;

use numakit::daemon::{ActionKind, Machine, MachineNode, MemPolicy, NodeState, ProcInfo, Progress, Snapshot, Why};
use numakit::sets::NodeSet;

use super::engine::Pol;
use super::numad::Numad;
use super::policy::{AutoNuma, Numakit, Oracle, Policy, Start, StartView, StaticBind, Untuned};
use super::*;

const GIB: f64 = (1u64 << 30) as f64;

fn job(threads: u32, mem_gib: f64, slowdown: f64, work_s: f64) -> JobSpec {
    JobSpec {
        index: 0,
        kind: Class::Reco,
        comm: "t",
        threads,
        mem_bytes: mem_gib * GIB,
        remote_slowdown: slowdown,
        work_s,
        owner_pin: false,
    }
}

/// Places every job as told; optionally with AutoNUMA; optionally emits
/// fixed actions at its first scan.
struct Place {
    start: Start,
    autonuma: bool,
    at_first_tick: Vec<SimAction>,
}

impl Policy for Place {
    fn name(&self) -> &'static str {
        "place"
    }
    fn autonuma(&self) -> bool {
        self.autonuma
    }
    fn on_start(&mut self, _view: &StartView, _job: &JobSpec) -> Option<Start> {
        Some(self.start)
    }
    fn interval_s(&mut self) -> Option<f64> {
        Some(5.0)
    }
    fn tick(&mut self, _m: &Machine, _s: &Snapshot) -> Vec<SimAction> {
        std::mem::take(&mut self.at_first_tick)
    }
}

fn place(cpu: usize, mem: usize) -> Place {
    Place {
        start: Start { cpu_mask: 1 << cpu, pol: Pol::Prefer(1 << mem) },
        autonuma: false,
        at_first_tick: Vec::new(),
    }
}

/// No drift, memory touched in the first step, exact counters.
fn quiet() -> SimParams {
    SimParams { drift_idle_s: 1e12, drift_swap_s: 1e12, ramp_s: 5.0, counter_noise: 0.0, ..SimParams::default() }
}

fn run_one(m: &SimMachine, jobs: Vec<JobSpec>, p: &mut dyn Policy, horizon: f64) -> RunOutcome {
    let (cost, params) = (CostModel::default(), quiet());
    let wl = Workload::fixed(jobs);
    Engine::new(m, &wl, &cost, &params, 1).run(p, horizon)
}

#[test]
fn cost_model_figures() {
    let c = CostModel::default();
    // A job that slows by 30 % all-remote on the reference machine does so
    // at the reference ratio (MLC 131/81 ns).
    let s = c.stall_share(0.3);
    assert!((c.time_factor(s, 131.0 / 81.0) - 1.3).abs() < 1e-12);
    assert!((c.speed(s, 1.0) - 1.0).abs() < 1e-12);
    // The SPEC CPU2006 spread 3–50 % maps to 5–81 % of time stalled.
    assert!((c.stall_share(0.03) - 0.0486).abs() < 1e-3);
    assert!((c.stall_share(0.5) - 0.81).abs() < 1e-3);
    assert_eq!(c.stall_share(2.0), 1.0);
    assert!((c.ref_bw_ratio - 0.4722).abs() < 1e-3);
    assert_eq!(c.contention(216.0, 108.0), 2.0);
    assert_eq!(c.contention(50.0, 108.0), 1.0);
    assert!((c.migrate_s(2.0 * GIB) - 2.0).abs() < 1e-12);
    assert!((c.observed_stall(0.4, 1.0) - 0.4).abs() < 1e-12);
    // 0.5 µs per 4 KiB page of hinting faults.
    assert!((c.hint_fault_s_per_gib - 0.131072).abs() < 1e-9);
}

#[test]
fn a_local_job_runs_at_full_speed() {
    let m = SimMachine::intel_2s();
    let o = run_one(&m, vec![job(1, 2.0, 0.3, 1000.0)], &mut place(0, 0), 2000.0);
    assert!((o.work - 1000.0).abs() < 1e-6, "{}", o.work);
    let (j, _) = &o.jobs[&0];
    assert!(j.finished);
    assert!((j.alive_s - 1000.0).abs() < 1e-6);
    assert_eq!(o.pages_migrated, 0);
}

#[test]
fn remote_memory_costs_its_slowdown() {
    let m = SimMachine::intel_2s();
    // CPUs on node 1, memory on node 0: 30 % slower.
    let o = run_one(&m, vec![job(1, 2.0, 0.3, 1000.0)], &mut place(1, 0), 650.0);
    assert!((o.work - 500.0).abs() < 1e-6, "{}", o.work);
    // On the 8-node AMD two hops (1.9×) cost more than one (1.4×).
    let amd = SimMachine::amd_8n();
    let near = run_one(&amd, vec![job(1, 2.0, 0.3, 1e6)], &mut place(1, 0), 1000.0).work;
    let far = run_one(&amd, vec![job(1, 2.0, 0.3, 1e6)], &mut place(2, 0), 1000.0).work;
    let s = CostModel::default().stall_share(0.3);
    assert!((near - 1000.0 / (1.0 + s * 0.4)).abs() < 1e-6);
    assert!((far - 1000.0 / (1.0 + s * 0.9)).abs() < 1e-6);
}

#[test]
fn migration_is_charged_and_counted() {
    let m = SimMachine::intel_2s();
    let mut p = place(1, 0);
    p.at_first_tick = vec![SimAction {
        pid: 1000,
        kind: ActionKind::Migrate { from: 0, to: 1, pages: 1 << 20 },
        reason: Reason::Daemon(Why::Budget),
        expected_gain: 0.0,
    }];
    let o = run_one(&m, vec![job(1, 2.0, 0.3, 1e6)], &mut p, 100.0);
    // 5 s remote (speed 1/1.3), then 2 s lost moving 2 GiB, then 93 s local.
    assert!((o.work - (5.0 / 1.3 + 3.0 + 90.0)).abs() < 1e-6, "{}", o.work);
    assert_eq!(o.pages_migrated, 2 * (1 << 30) / 4096);
}

#[test]
fn bandwidth_contention_slows_everyone() {
    // 30 memory-bound threads on one node of the 8-node AMD (40 GB/s):
    // demand ~146 GB/s at full speed.
    let m = SimMachine::amd_8n();
    let o = run_one(&m, vec![job(8, 8.0, 0.5, 1e6)], &mut place(0, 0), 100.0);
    assert!((o.work - 800.0).abs() < 1e-6, "8 threads, 39 GB/s: no contention ({})", o.work);
    let o2 = run_one(&m, vec![job(8, 8.0, 0.5, 1e6)], &mut place(1, 0), 100.0);
    // Remote at 0.6× bandwidth: 39 / 0.6 = 65 GB/s demanded of 40 → stretched.
    let s = CostModel::default().stall_share(0.5);
    assert!(o2.work < 800.0 / (1.0 + s * 0.4) - 1.0, "{}", o2.work);
}

#[test]
fn autonuma_brings_memory_to_the_threads() {
    let m = SimMachine::intel_2s();
    let plain = run_one(&m, vec![job(1, 2.0, 0.3, 1e6)], &mut place(1, 0), 600.0);
    let mut p = place(1, 0);
    p.autonuma = true;
    let auto = run_one(&m, vec![job(1, 2.0, 0.3, 1e6)], &mut p, 600.0);
    assert!(auto.pages_migrated >= 500_000, "{}", auto.pages_migrated);
    assert!(auto.work > plain.work + 80.0, "{} vs {}", auto.work, plain.work);
    // The policy object only switches the kernel feature on.
    assert!(AutoNuma.autonuma() && !Untuned.autonuma());
}

fn node(id: u32, cpus: u32, mem_gib: u64) -> MachineNode {
    MachineNode { id, cpus, mem_bytes: mem_gib << 30 }
}

fn proc_(pid: i32, cpu_node: u32, mem: &[(u32, u64)], cpus: f64, threads: u32) -> ProcInfo {
    ProcInfo {
        pid,
        comm: "job".into(),
        uid: 1000,
        cgroup: String::new(),
        threads,
        cpu_use: cpus,
        cpu_wait: 0.0,
        rss_bytes: mem.iter().map(|m| m.1).sum(),
        mem_per_node: mem.iter().copied().collect(),
        cpu_per_node: BTreeMap::from([(cpu_node, cpus)]),
        cpu_measured: true,
        rate_span_s: 0.0,
        rates_from_s: None,
        affinity: NodeSet::parse_list("0-63").unwrap(),
        cpuset: NodeSet::new(),
        mem_policy: MemPolicy::Default,
        owner_pinned: false,
        age_s: 600.0,
        progress: Progress { cpu_rate: cpus, instr_rate: None },
        mem_stall_share: None,
    }
}

fn snap(t: f64, free: &[(u32, f64, u64)], procs: Vec<ProcInfo>) -> Snapshot {
    Snapshot {
        time_s: t,
        nodes: free.iter().map(|&(id, c, b)| NodeState { id, free_cpus: c, free_bytes: b, bound_cpus: 0.0 }).collect(),
        procs,
        exited: Vec::new(),
    }
}

const GB: u64 = 1_000_000_000;

#[test]
fn numad_binds_to_the_memory_one_process_per_interval() {
    let m = Machine::new(vec![node(0, 4, 8), node(1, 4, 8)], vec![vec![10, 21], vec![21, 10]]).unwrap();
    let procs = vec![proc_(1, 1, &[(0, GB)], 1.0, 1), proc_(2, 0, &[(1, GB)], 1.0, 1)];
    let free = [(0, 0.0, 6 * GB), (1, 0.0, 6 * GB)];
    let mut n = Numad::default();
    // First sighting: no CPU rate yet.
    assert!(n.tick(&m, &snap(15.0, &free, procs.clone())).is_empty());
    assert_eq!(n.interval_s(), Some(15.0));
    // Second: the first candidate (equal magnitudes: lowest pid) is bound
    // where its memory is (the 17/16 bias and the CPU credit), local or not.
    let a = n.tick(&m, &snap(30.0, &free, procs.clone()));
    let bind0 = ActionKind::Bind { cpu_nodes: NodeSet::parse_list("0").unwrap(), mem_nodes: NodeSet::new() };
    assert_eq!(a.iter().map(|x| (x.pid, x.kind.clone())).collect::<Vec<_>>(), [(1, bind0)]);
    assert_eq!(n.interval_s(), Some(5.0));
    // Next interval: the other one (the first is in its 300 s hysteresis).
    let a = n.tick(&m, &snap(35.0, &free, procs));
    assert_eq!(a.len(), 1);
    assert_eq!(a[0].pid, 2);
}

#[test]
fn numad_sizes_requests_by_node_zero() {
    // Node 0 has 2 CPUs, node 1 has 8: a 4-CPU process fits node 1, but
    // numad sizes by node 0 and wants 3 nodes (all of them), so it leaves
    // the process unbound; numakit binds it to node 1.
    let m = Machine::new(vec![node(0, 2, 8), node(1, 8, 8)], vec![vec![10, 21], vec![21, 10]]).unwrap();
    let p = proc_(1, 1, &[(1, GB)], 4.0, 4);
    let free = [(0, 0.0, 6 * GB), (1, 4.0, 6 * GB)];
    let mut n = Numad::default();
    n.tick(&m, &snap(15.0, &free, vec![p.clone()]));
    assert!(n.tick(&m, &snap(30.0, &free, vec![p.clone()])).is_empty());
    let mut k = Numakit::default();
    let a = k.tick(&m, &snap(30.0, &free, vec![p]));
    assert!(matches!(&a[0].kind, ActionKind::Bind { cpu_nodes, .. } if cpu_nodes.to_list() == "1"), "{a:?}");
}

#[test]
fn numad_never_picks_cpu_less_nodes_and_moves_whole_nodes() {
    let m = Machine::new(
        vec![node(0, 4, 8), node(1, 4, 8), node(2, 0, 64)],
        vec![vec![10, 21, 14], vec![21, 10, 24], vec![14, 24, 10]],
    )
    .unwrap();
    let p = proc_(1, 0, &[(0, GB / 2), (2, 2 * GB)], 1.0, 1);
    let free = [(0, 0.0, 4 * GB), (1, 1.0, 4 * GB), (2, 0.0, 60 * GB)];
    let mut n = Numad::default();
    n.tick(&m, &snap(15.0, &free, vec![p.clone()]));
    let a = n.tick(&m, &snap(30.0, &free, vec![p]));
    assert!(matches!(&a[0].kind, ActionKind::Bind { cpu_nodes, .. } if !cpu_nodes.contains(2)), "{a:?}");
    let ActionKind::Migrate { from, pages, .. } = a[1].kind else { panic!("{a:?}") };
    assert_eq!((from, pages), (2, 2 * GB / 4096 + 1));
}

fn view(idle: &[f64], bound_bw: &[f64]) -> StartView {
    StartView {
        idle: idle.to_vec(),
        free_bytes: vec![32.0 * GIB; idle.len()],
        bound_threads: vec![0; idle.len()],
        bound_bw: bound_bw.to_vec(),
        home: (0..idle.len()).collect(),
    }
}

#[test]
fn static_binding_is_run_auto() {
    let m = SimMachine::intel_2s();
    let mut p = StaticBind::new(&m);
    let s = p.on_start(&view(&[0.0, 5.0], &[0.0, 0.0]), &job(1, 2.0, 0.3, 100.0)).unwrap();
    assert_eq!(s, Start { cpu_mask: 0b10, pol: Pol::Prefer(0b10) });
    // Larger than a node: both.
    let s = p.on_start(&view(&[16.0, 16.0], &[0.0, 0.0]), &job(20, 2.0, 0.3, 100.0)).unwrap();
    assert_eq!(s.cpu_mask, 0b11);
}

#[test]
fn the_oracle_spreads_bandwidth() {
    let m = SimMachine::amd_8n();
    let mut o = Oracle::new(&m, &CostModel::default());
    let mut idle = vec![0.0; 8];
    idle[2] = 2.0;
    idle[3] = 2.0;
    let mut bw = vec![0.0; 8];
    bw[2] = 39.0;
    let s = o.on_start(&view(&idle, &bw), &job(1, 2.0, 0.5, 100.0)).unwrap();
    assert_eq!(s, Start { cpu_mask: 1 << 3, pol: Pol::Prefer(1 << 3) });
}

#[test]
fn numakit_policy_returns_only_changes() {
    let m = Machine::new(vec![node(0, 4, 8), node(1, 4, 8)], vec![vec![10, 21], vec![21, 10]]).unwrap();
    let mut p = proc_(1, 1, &[(0, 2 * GB)], 1.0, 1);
    p.mem_stall_share = Some(0.4);
    let mut k = Numakit::default();
    let a = k.tick(&m, &snap(600.0, &[(0, 0.0, 6 * GB), (1, 0.0, 6 * GB)], vec![p]));
    assert!(a.iter().all(SimAction::changes));
    assert_eq!(a.len(), 2);
    assert_eq!(k.history.committed.procs[&1].moves, 1);
}

#[test]
fn distributions_are_exact() {
    let v: Vec<f64> = (1..=20).map(f64::from).collect();
    let d = Distribution::of(&v).unwrap();
    assert_eq!((d.n, d.min, d.p5, d.median, d.mean), (20, 1.0, 1.0, 10.5, 10.5));
    let d = Distribution::of(&[3.0, 1.0, 2.0]).unwrap();
    assert_eq!((d.min, d.p5, d.median), (1.0, 1.0, 2.0));
    assert!(Distribution::of(&[]).is_none());
}

#[test]
fn scenarios_by_name_and_random_machines() {
    assert_eq!(Scenario::named().len(), 14);
    assert_eq!(Scenario::by_name("jvm-4s").unwrap().machine_name, "intel-4s");
    let r = Scenario::by_name("random-reco-3").unwrap();
    assert!(r.random && r.class == Class::Reco);
    assert!(Scenario::by_name("random-nope-1").is_none());
    for seed in 0..200 {
        let m = SimMachine::random(seed);
        assert!((2..=33).contains(&m.len()), "{}", m.len());
        assert!(m.total_cpus() <= 192);
        for a in 0..m.len() {
            assert_eq!(m.latency[a][a], 1.0);
            for b in 0..m.len() {
                assert_eq!(m.latency[a][b], m.latency[b][a]);
            }
        }
    }
}

#[test]
fn runs_are_deterministic() {
    // A small random machine (3 nodes, one a CPU-less slow tier), so that
    // four runs of all six policies stay cheap in a debug build.
    let sc = Scenario::random(Class::Evgen, 16);
    assert_eq!((sc.machine.len(), sc.machine.total_cpus()), (3, 8));
    let s = Settings::default();
    let a = run_scenario(&sc, &s);
    let b = run_scenario(&sc, &s);
    assert_eq!(a, b);
    let par = run_all(&[sc.clone(), sc], &s, 2);
    assert_eq!(par[0], a);
    assert_eq!(par[1], a);
}

/// A traced run gives the same results, and its trace accounts for them:
/// one start and one end per job (finished, or running when the run ended),
/// actions only for running jobs (its binds are the run's binds), and the
/// minutes' work rates sum to the run's work.
#[test]
fn a_traced_run_changes_nothing_and_accounts_for_its_results() {
    let sc = Scenario::random(Class::Evgen, 16);
    let s = Settings::default();
    for policy in ["numad", "numakit"] {
        let plain = run_policy(&sc, policy, &s).expect("policy");
        let traced = trace_policy(&sc, policy, &s).expect("policy");
        assert!(plain.trace.is_empty());
        assert_eq!((traced.work, traced.pages_migrated, traced.binds), (plain.work, plain.pages_migrated, plain.binds));
        assert_eq!(traced.jobs, plain.jobs);
        let mut starts = BTreeMap::new();
        let (mut binds, mut ends, mut rated, mut last_t) = (0u64, 0usize, 0.0, 0.0);
        for e in &traced.trace {
            let t = match e {
                TraceEvent::Start { t_s, pid, threads, .. } => {
                    assert!(starts.insert(*pid, *threads).is_none(), "pid {pid} started twice");
                    *t_s
                }
                TraceEvent::Action { t_s, action } => {
                    assert!(starts.contains_key(&action.pid), "{policy}: action for a job not running");
                    binds += u64::from(matches!(action.kind, ActionKind::Bind { .. }));
                    *t_s
                }
                TraceEvent::End { t_s, pid, finished, speed } => {
                    assert!(starts.remove(pid).is_some(), "pid {pid} ended without a start, or twice");
                    assert!(*speed > 0.0 && *speed <= 1.0 + 1e-9, "pid {pid}: speed {speed}");
                    ends += usize::from(*finished);
                    *t_s
                }
                TraceEvent::Rate { t_s, work_per_s } => {
                    rated += work_per_s * 60.0;
                    *t_s
                }
            };
            assert!(t >= last_t, "{policy}: events out of order at {t} s");
            last_t = t;
        }
        assert!(starts.is_empty(), "{policy}: jobs with no end event: {starts:?}");
        assert_eq!(binds, traced.binds, "{policy}");
        assert!(binds > 0, "{policy} placed nothing on this farm: the trace is not tested");
        assert_eq!(ends, traced.jobs.values().filter(|j| j.0.finished).count(), "{policy}");
        assert!(ends > 10, "{policy}: evgen jobs last about a minute");
        assert!((rated - traced.work).abs() <= 1e-6 * traced.work, "{policy}: {rated} vs {}", traced.work);
    }
}

/// The three targets on the named scenarios, one random farm per class and
/// two farms whose shortfalls in the first run with 100 farms per class led
/// to rule changes 6 and 7 of docs/simulate.md (the documented command runs
/// 100 per class; changes 8 and 9 are checked on hand-built snapshots in
/// `daemon::decide`), with the four policies the targets need.
///
/// The strict "numakit ≥ numad on every scenario" is not met (see the
/// results in docs/simulate.md: on the named scenarios numakit is below numad
/// on `sim-4s`, `jvm-4s` and `jvm-8n` by less than 0.1 %, mostly JVM-like jobs
/// larger than a node, which numad binds at first sight before their memory
/// exists); here it is held to within 0.3 % of numad, so that a regression
/// shows, and to at least numad on the regression farms.
#[test]
fn targets_on_named_and_a_reduced_random_set() {
    let s = Settings::default();
    let mut scenarios = Scenario::named();
    scenarios.extend(Scenario::random_set(1));
    let regressions = ["random-evgen-68", "random-jvm-76"];
    scenarios.extend(regressions.iter().filter_map(|n| Scenario::by_name(n)));
    assert_eq!(scenarios.len(), 14 + 6 + 2);
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let report = Report::new(run_all_with(&scenarios, &s, threads, &["untuned", "numad", "numakit", "oracle"]));
    for r in &report.scenarios {
        let k = r.policy("numakit").unwrap();
        let d = r.policy("numad").unwrap();
        assert!(k.throughput >= d.throughput * 0.997, "{}: numakit {} < numad {}", r.name, k.vs_oracle, d.vs_oracle);
        assert!(k.vs_untuned >= 0.995, "{}: numakit {} of untuned", r.name, k.vs_untuned);
        if regressions.contains(&r.name.as_str()) {
            assert!(k.throughput >= d.throughput, "{}: numakit {} < numad {}", r.name, k.vs_oracle, d.vs_oracle);
            assert!(k.vs_untuned >= 1.0, "{}: numakit {} of untuned", r.name, k.vs_untuned);
        }
    }
    assert!(report.targets_named.mean_vs_oracle >= 0.95, "{:?}", report.targets_named);
    assert!(report.targets_named.below_untuned.is_empty());
    let random = report.targets_random.as_ref().unwrap();
    assert!(random.mean_vs_oracle >= 0.95, "{random:?}");
    assert!(random.below_untuned.is_empty());
}

/// numakit below numad by the last digits of a sum is a tie; below by more
/// than [`report::TIE`] is below.
#[test]
fn below_numad_means_below_by_more_than_rounding() {
    let run = |work: f64| RunOutcome {
        work,
        horizon_s: 100.0,
        pages_migrated: 0,
        binds: 0,
        reverts: 0,
        jobs: BTreeMap::new(),
        trace: Vec::new(),
    };
    let result = |name: &str, numakit: f64| {
        let runs: Vec<(String, RunOutcome)> =
            [("untuned", 900.0), ("numad", 1000.0), ("numakit", numakit), ("oracle", 1000.0)]
                .iter()
                .map(|&(p, w)| (p.to_string(), run(w)))
                .collect();
        ScenarioResult::from_runs(name, Class::Reco, "m", 1, true, &runs)
    };
    let (tie, below) = (result("tie", 1000.0 * (1.0 - 1e-14)), result("below", 1000.0 * (1.0 - 1e-6)));
    let t = Targets::check(&[&tie, &below]);
    assert_eq!(t.below_numad.iter().map(|x| x.0.as_str()).collect::<Vec<_>>(), ["below"]);

    // Farm by farm: the same tie rule, the sign test over those that differ,
    // and the ratio's mean with its interval.
    let above: Vec<ScenarioResult> = (0..9).map(|i| result(&format!("a{i}"), 1010.0 + f64::from(i))).collect();
    let mut all: Vec<&ScenarioResult> = above.iter().collect();
    all.extend([&tie, &below]);
    let p = Paired::of("random-reco", &all).expect("numakit and numad ran");
    assert_eq!((p.scenarios, p.above, p.tied, p.below), (11, 9, 1, 1));
    let sign = p.sign.expect("pairs differ");
    assert!((sign.p_value - 2.0 * 11.0 / 1024.0).abs() < 1e-12, "{sign:?}");
    let ratio = |r: &ScenarioResult| r.policy("numakit").map_or(0.0, |k| k.throughput) / 10.0;
    let want_mean = all.iter().map(|r| ratio(r)).sum::<f64>() / 11.0;
    assert!((p.ratio.mean - want_mean).abs() < 1e-12, "{p:?}");
    let (lo, hi) = (p.ratio.ci_low.expect("n > 1"), p.ratio.ci_high.expect("n > 1"));
    assert!(lo < p.ratio.mean && p.ratio.mean < hi && lo > 0.99 && hi < 1.03, "{p:?}");
    assert!((p.ratio.min - (1.0 - 1e-6)).abs() < 1e-12, "{p:?}");
    // a set where every scenario ties has no test to make
    assert_eq!(Paired::of("named", &[&tie]).map(|p| p.sign), Some(None));
}

/// Change 22 in the simulator: the engine tells the daemon which jobs
/// exited, the daemon learns the run times of `evgen` (40-90 s) and leaves
/// the pages of jobs about to end where they are: fewer pages moved, no
/// less work. With learning off the daemon moves them as before.
#[test]
fn learnt_run_times_spare_short_jobs_their_page_moves() {
    let sc = Scenario::by_name("random-evgen-38").expect("scenario");
    let on = Settings::default();
    let off = Settings { config: Config { runs_to_learn: 0, ..Config::default() }, ..Settings::default() };
    let a = run_policy(&sc, "numakit", &on).expect("run");
    let b = run_policy(&sc, "numakit", &off).expect("run");
    assert!(
        a.pages_migrated * 2 < b.pages_migrated,
        "pages {} with learning, {} without",
        a.pages_migrated,
        b.pages_migrated
    );
    assert!(a.work > b.work, "work {} with learning, {} without", a.work, b.work);
}

#[test]
fn a_synthetic_machine_as_software_sees_it() {
    let mut s = numakit::topo::synth::SynthMachine::amd_4s_8n(4, 1024);
    // Nodes listed out of id order come out sorted, distances with them.
    s.nodes.swap(0, 7);
    s.distances.swap(0, 7);
    for row in &mut s.distances {
        row.swap(0, 7);
    }
    let m = machines::from_synth(&s);
    assert_eq!(m.len(), 8);
    assert_eq!(m.nodes.iter().map(|n| n.id).collect::<Vec<_>>(), (0..8).collect::<Vec<_>>());
    let third = &m.nodes[numakit::daemon::NodePos(3)];
    assert_eq!((third.cpus, third.mem_bytes), (4, 1 << 30));
    let want = numakit::topo::synth::SynthMachine::amd_4s_8n(4, 1024).distances;
    assert_eq!(m.distances.iter().map(|row| row.iter().copied().collect::<Vec<_>>()).collect::<Vec<_>>(), want);
}

#[test]
fn random_farms_from_any_first_seed() {
    let names = |v: Vec<Scenario>| v.into_iter().map(|s| (s.name, s.seed)).collect::<Vec<_>>();
    let held = names(Scenario::random_range(1000..1002));
    assert_eq!(held.len(), 2 * Class::ALL.len());
    assert_eq!(held[0].0, "random-reco-1000");
    assert_eq!(held[1].0, "random-reco-1001");
    assert_eq!(held[2].0, format!("random-{}-1000", Class::ALL[1].name()));
    // The same farm as by its name, and today's set is seeds 0 to n - 1.
    let by_name = Scenario::by_name("random-reco-1001").expect("scenario");
    assert_eq!(held[1].1, by_name.seed);
    assert_eq!(names(Scenario::random_set(3)), names(Scenario::random_range(0..3)));
    // No held-out farm shares its generator seed with a farm of seeds 0 to 99.
    let dev: Vec<u64> = Scenario::random_range(0..100).iter().map(|s| s.seed).collect();
    assert!(Scenario::random_range(HELD_OUT_SEEDS).iter().all(|s| !dev.contains(&s.seed)));
}
