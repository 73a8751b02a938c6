//! The run-time layers on a fake root (a synthetic 4-node machine and
//! hand-written `/proc` files), in dry-run mode: the collector's reads and
//! rates, owner pinning, candidates, the service's decisions, log, status
//! and control requests. Nothing here touches the live system.

use std::collections::BTreeMap;
use std::path::Path;

use super::collect::{Collector, NodeCpus, ScanCounts};
use super::protocol::Request;
use super::service::Service;
use super::settings::Settings;
use super::History;
use crate::daemon::Snapshot;
use crate::sets::CpuSet;
use crate::sys::{SysError, SysRoot};
use crate::topo::synth::SynthMachine;
use crate::topo::Topology;

fn put(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

struct Fake {
    dir: tempfile::TempDir,
}

/// One process: pid, comm, CPU ticks, last CPU, resident pages, allowed
/// CPUs, pages per node, policy.
struct P<'a> {
    pid: i32,
    comm: &'a str,
    ticks: u64,
    cpu: u32,
    rss_pages: u64,
    allowed: &'a str,
    pages: &'a [(u32, u64)],
    policy: &'a str,
}

impl Fake {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        SynthMachine::rr_4n(8, 4096).write(dir.path()).unwrap();
        let f = Fake { dir };
        put(f.root(), "proc/self/status", "Name:\tnumakit\nCpus_allowed_list:\t0-7\nMems_allowed_list:\t0-3\n");
        f.tick(0, 0);
        f
    }
    fn root(&self) -> &Path {
        self.dir.path()
    }
    fn sys(&self) -> SysRoot {
        SysRoot::at(self.dir.path())
    }
    /// `/proc/stat` with every CPU busy for `busy` ticks of `total`, and
    /// `/proc/uptime`.
    fn tick(&self, total: u64, busy: u64) {
        let mut s = String::from("cpu  0 0 0 0 0 0 0 0 0 0\n");
        for c in 0..8 {
            s.push_str(&format!("cpu{c} {busy} 0 0 {} 0 0 0 0 0 0\n", total - busy));
        }
        put(self.root(), "proc/stat", &s);
        put(self.root(), "proc/uptime", &format!("{}.00 0.00\n", 1000 + total / 100));
    }
    fn proc(&self, p: &P) {
        let stat = |pid: i32| {
            format!(
                "{pid} ({}) R 1 1 1 0 -1 0 0 0 0 0 {} 0 0 0 20 0 1 0 100 1000000 {} 0 0 0 0 0 0 0 0 0 0 0 0 0 0 {} 0 0 0 0 0\n",
                p.comm, p.ticks, p.rss_pages, p.cpu
            )
        };
        let d = format!("proc/{}", p.pid);
        put(self.root(), &format!("{d}/stat"), &stat(p.pid));
        put(self.root(), &format!("{d}/statm"), &format!("{} {} 0 0 0 0 0\n", p.rss_pages * 2, p.rss_pages));
        put(self.root(), &format!("{d}/task/{}/stat", p.pid), &stat(p.pid));
        put(
            self.root(),
            &format!("{d}/status"),
            &format!("Name:\t{}\nThreads:\t1\nCpus_allowed_list:\t{}\nMems_allowed_list:\t0-3\n", p.comm, p.allowed),
        );
        put(self.root(), &format!("{d}/cgroup"), "0::/batch/job\n");
        let nodes: Vec<String> = p.pages.iter().map(|(n, c)| format!("N{n}={c}")).collect();
        let total: u64 = p.pages.iter().map(|x| x.1).sum();
        put(
            self.root(),
            &format!("{d}/numa_maps"),
            &format!("7f0000000000 {} anon={total} dirty={total} {} kernelpagesize_kB=4\n", p.policy, nodes.join(" ")),
        );
    }
}

const GIB_PAGES: u64 = 1 << 18;

/// The remote job: 1 GiB on node 0, last on CPU `cpu`.
fn reco(ticks: u64, cpu: u32) -> P<'static> {
    P {
        pid: 100,
        comm: "reco",
        ticks,
        cpu,
        rss_pages: GIB_PAGES,
        allowed: "0-7",
        pages: &[(0, GIB_PAGES)],
        policy: "default",
    }
}

fn farm(f: &Fake, ticks: u64) {
    // A: 1 GiB on node 0, runs on CPU 3 (node 3): remote.
    f.proc(&reco(ticks, 3));
    farm_without_reco(f, ticks);
}

/// The farm but A.
fn farm_without_reco(f: &Fake, ticks: u64) {
    // B: pinned by its owner to CPU 1.
    f.proc(&P {
        pid: 200,
        comm: "pinned",
        ticks,
        cpu: 1,
        rss_pages: GIB_PAGES,
        allowed: "1",
        pages: &[(2, GIB_PAGES)],
        policy: "default",
    });
    // C: bound memory by numactl --membind.
    f.proc(&P {
        pid: 300,
        comm: "membound",
        ticks,
        cpu: 2,
        rss_pages: GIB_PAGES,
        allowed: "0-7",
        pages: &[(1, GIB_PAGES)],
        policy: "bind:1",
    });
    // D: small, never a candidate.
    f.proc(&P {
        pid: 400,
        comm: "small",
        ticks,
        cpu: 0,
        rss_pages: 100,
        allowed: "0-7",
        pages: &[(0, 100)],
        policy: "default",
    });
}

fn settings(f: &Fake) -> Settings {
    let mut s = Settings {
        state_dir: f.root().join("state"),
        log: f.root().join("decisions.jsonl"),
        socket: f.root().join("d.sock"),
        ..Default::default()
    };
    s.decide.min_age_s = 10.0;
    // These tests scan a second apart; spans of several scans have their
    // own test (`a_rate_spans_at_least_min_rate_span_s`).
    s.decide.min_rate_span_s = 1.0;
    s
}

/// A collector over the fake root, every process included, as the
/// collector tests drive it: scan `t` is at monotonic `t` s, wall 5000 + `t`.
struct Rig {
    sys: SysRoot,
    nc: NodeCpus,
    s: Settings,
    c: Collector,
}

impl Rig {
    fn new(f: &Fake) -> Self {
        let sys = f.sys();
        let topo = Topology::read_nodes_only(&sys).unwrap();
        Rig { nc: NodeCpus::new(&topo, &CpuSet::new()), s: settings(f), sys, c: Collector::new() }
    }
    fn scan(&mut self, t: f64) -> Result<(Snapshot, ScanCounts), SysError> {
        self.scan_with(t, &|_, _, _, _| true)
    }
    /// With an include filter (pid, comm, cgroup, uid).
    fn scan_with(
        &mut self,
        t: f64,
        include: &dyn Fn(i32, &str, &str, u32) -> bool,
    ) -> Result<(Snapshot, ScanCounts), SysError> {
        self.c.scan(
            &self.sys,
            &self.nc,
            &self.s,
            include,
            &History::new(),
            &Default::default(),
            t,
            5000.0 + t,
            std::time::Instant::now(),
        )
    }
}

#[test]
fn collector_rates_candidates_and_owner_placement() {
    let f = Fake::new();
    farm(&f, 0);
    let mut rig = Rig::new(&f);
    let (snap, counts) = rig.scan(0.0).unwrap();
    // First scan: no CPU use known yet, so nobody is a candidate.
    assert_eq!(counts.processes, 4);
    assert!(snap.procs.is_empty());
    // One second later every process used one CPU; CPUs half busy.
    farm(&f, 100);
    f.tick(100, 50);
    let (snap, counts) = rig.scan(1.0).unwrap();
    assert_eq!(counts.detailed, 3, "the small process is not read in detail");
    assert_eq!(counts.processes, 4);
    let a = snap.procs.iter().find(|p| p.pid == 100).unwrap();
    assert!((a.cpu_use - 1.0).abs() < 1e-9, "{}", a.cpu_use);
    assert_eq!(a.mem_per_node.get(&0), Some(&(GIB_PAGES * 4096)));
    assert_eq!(a.cpu_per_node.keys().copied().collect::<Vec<_>>(), vec![3]);
    assert_eq!(a.affinity.to_list(), "0-3");
    assert!(!a.owner_pinned);
    assert!((a.age_s - 999.0).abs() < 1.5, "{}", a.age_s);
    assert_eq!(a.cgroup, "/batch/job");
    let b = snap.procs.iter().find(|p| p.pid == 200).unwrap();
    assert!(b.owner_pinned, "a pinning finer than a node is the owner's");
    let cp = snap.procs.iter().find(|p| p.pid == 300).unwrap();
    assert!(cp.owner_pinned, "a memory policy is the owner's");
    for n in &snap.nodes {
        assert!((n.free_cpus - 1.0).abs() < 1e-9, "two CPUs half idle per node: {n:?}");
    }
    assert_eq!(counts.numa_maps_read, 3);
    // Nothing changed: memory per node comes from the cache; a process
    // whose resident size moved by more than 5% is read again.
    farm(&f, 200);
    f.tick(200, 100);
    let (snap, counts) = rig.scan(2.0).unwrap();
    assert_eq!((counts.detailed, counts.numa_maps_read), (3, 0));
    assert_eq!(snap.procs.iter().find(|p| p.pid == 100).unwrap().mem_per_node.get(&0), Some(&(GIB_PAGES * 4096)));
    f.proc(&P {
        pid: 100,
        comm: "reco",
        ticks: 300,
        cpu: 3,
        rss_pages: GIB_PAGES * 2,
        allowed: "0-7",
        pages: &[(0, GIB_PAGES), (3, GIB_PAGES)],
        policy: "default",
    });
    f.tick(300, 150);
    let (snap, counts) = rig.scan(3.0).unwrap();
    assert_eq!(counts.numa_maps_read, 1);
    assert_eq!(snap.procs.iter().find(|p| p.pid == 100).unwrap().mem_per_node.get(&3), Some(&(GIB_PAGES * 4096)));
    // ... and every process once a page has migrated anywhere (the kernel's
    // balancing moves pages without changing a resident size or a node):
    // AutoNUMA brings reco's first GiB to node 3.
    let reco_at = |ticks: u64, pages: &'static [(u32, u64)]| {
        farm_without_reco(&f, ticks);
        f.proc(&P { ticks, rss_pages: GIB_PAGES * 2, pages, ..reco(ticks, 3) });
        f.tick(ticks, ticks / 2);
    };
    put(f.root(), "proc/vmstat", "pgmigrate_success 0\n");
    reco_at(350, &[(0, GIB_PAGES), (3, GIB_PAGES)]);
    let (_, counts) = rig.scan(3.5).unwrap();
    assert_eq!(counts.numa_maps_read, 3, "the counter appeared: nothing cached is known to be current");
    reco_at(400, &[(3, GIB_PAGES * 2)]);
    let (_, counts) = rig.scan(3.6).unwrap();
    assert_eq!(counts.numa_maps_read, 0, "no page migrated: the cache stands");
    put(f.root(), "proc/vmstat", "pgmigrate_success 262144\n");
    reco_at(450, &[(3, GIB_PAGES * 2)]);
    let (snap, counts) = rig.scan(3.7).unwrap();
    assert_eq!(counts.numa_maps_read, 3);
    let reco = snap.procs.iter().find(|p| p.pid == 100).unwrap();
    assert_eq!((reco.mem_per_node.get(&0), reco.mem_per_node.get(&3)), (None, Some(&(GIB_PAGES * 2 * 4096))));
    // ... and every scan after `numa_maps_max_age_s`.
    let later = 3.7 + super::Config::default().numa_maps_max_age_s;
    farm(&f, 300 + 6100);
    f.tick(6400, 3200);
    let (_, counts) = rig.scan(later).unwrap();
    assert_eq!(counts.numa_maps_read, 3);
    // Include lists filter before the costly reads.
    let only_reco = |_: i32, comm: &str, _: &str, _: u32| comm == "reco";
    farm(&f, 6400 + 100);
    f.tick(6500, 3250);
    let (snap, _) = rig.scan_with(later + 1.0, &only_reco).unwrap();
    assert_eq!(snap.procs.iter().map(|p| p.pid).collect::<Vec<_>>(), vec![100]);
}

/// A scan can take seconds (the first reads every candidate's
/// `numa_maps`; a starved guest ran one for 8 s), so the processes read at
/// its end were read much later than those read at its start. Each rate
/// is over the time between a process's own two readings: divided by the
/// time between the scans, busy processes read at the end of a slow scan
/// and at the start of a quick one looked a quarter busy, and four of
/// them were bound to a node of two CPUs.
#[test]
fn rates_are_over_each_readings_own_span() {
    let f = Fake::new();
    farm(&f, 0);
    let mut rig = Rig::new(&f);
    // A slow first scan: each reading 0.25 s after the one before.
    rig.c.slow_reads(0.25);
    rig.scan(0.0).unwrap();
    // The next scan is quick, 2 s after the slow one began; every process
    // used 100 ticks (1 s of CPU) since it was read.
    rig.c.slow_reads(0.0);
    farm(&f, 100);
    f.tick(100, 50);
    let (snap, _) = rig.scan(2.0).unwrap();
    let by_pid: BTreeMap<i32, f64> = snap.procs.iter().map(|p| (p.pid, p.cpu_use)).collect();
    let (a, b, c) = (by_pid[&100], by_pid[&200], by_pid[&300]);
    // The first process read in both scans was read 2 s apart: 0.5 CPU,
    // what every process read when rates were over the scans' window.
    // The later a process was read in the slow scan, the shorter its span
    // and the higher its rate, up to a whole CPU.
    assert!((a - 0.5).abs() < 1e-9 && a < b && b < c && c <= 1.0 + 1e-9, "{by_pid:?}");
    // A thread's CPU time (and wait) is over the thread's own span: reco's
    // one thread was read after the process's `stat`, so its 100 ticks
    // came in less time.
    let reco = snap.procs.iter().find(|p| p.pid == 100).unwrap();
    let thread: f64 = reco.cpu_per_node.values().sum();
    assert!(thread > a + 0.01 && thread < b, "thread {thread}, process {a}: {by_pid:?}");
}

#[test]
fn service_decides_logs_and_answers_control_requests() {
    let f = Fake::new();
    farm(&f, 0);
    let s = settings(&f);
    let mut svc = Service::start(f.sys(), s.clone(), None, true).unwrap();
    svc.scan(0.0).unwrap();
    farm(&f, 100);
    f.tick(100, 50);
    let r = svc.scan(1.0).unwrap();
    let for_pid = |pid: i32| r.results.iter().filter(|(a, _)| a.pid == pid).collect::<Vec<_>>();
    // A: bound where its memory will be local (node 0 where the pages are,
    // with nothing to move, or elsewhere with a migration from node 0), not
    // done (dry run).
    let a = for_pid(100);
    let bind = a
        .iter()
        .find_map(|(a, _)| match &a.kind {
            super::ActionKind::Bind { cpu_nodes, .. } => Some(cpu_nodes.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no bind: {a:?}"));
    let migrates_there =
        a.iter().any(|(a, _)| matches!(&a.kind, super::ActionKind::Migrate { from: 0, to, .. } if bind.contains(*to)));
    assert!(bind.contains(0) || migrates_there, "{a:?}");
    assert!(a.iter().all(|(_, o)| o.name() == "not-done"));
    assert!(!r.changed);
    // Nothing applied, nothing committed: the history keeps what was
    // observed only, and the status lists no process as managed.
    assert!(svc.status().managed.is_empty(), "{:?}", svc.status().managed);
    // B and C are left alone as their owners' placements.
    for pid in [200, 300] {
        let v = for_pid(pid);
        assert!(!v.is_empty() && v.iter().all(|(a, _)| !a.changes()), "{v:?}");
        assert!(v.iter().any(|(a, _)| a.reason == super::Why::OwnerPlaced), "{v:?}");
    }
    // Every decision is one log line with its outcome.
    let log = std::fs::read_to_string(&s.log).unwrap();
    assert_eq!(log.lines().count(), r.results.len());
    for l in log.lines() {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        assert!(v["outcome"].is_string() && v["pid"].is_i64() && !v["why"].is_object(), "{l}");
        assert!(v["reason"]["why"].is_string() && v["ts"].is_string(), "{l}");
    }
    // Status file and counters agree with the log.
    let st: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(s.state_dir.join("status.json")).unwrap()).unwrap();
    let decided: u64 =
        st["counters"]["decisions_total"].as_object().unwrap().values().map(|v| v.as_u64().unwrap()).sum();
    assert_eq!(decided as usize, log.lines().count());
    assert_eq!(st["counters"]["scans"], 2);

    // Control requests.
    let ok = |r: super::protocol::Response| {
        assert!(r.ok, "{r:?}");
        r.data
    };
    assert_eq!(
        ok(svc.handle(&Request::Exclude { target: super::protocol::Target::Comm("reco".into()) }))["done"],
        "excluded command \"reco\""
    );
    farm(&f, 200);
    f.tick(200, 100);
    let r = svc.scan(2.0).unwrap();
    assert!(r
        .results
        .iter()
        .filter(|(a, _)| a.pid == 100)
        .all(|(a, _)| matches!(a.reason, super::Why::Excluded { .. })));
    ok(svc.handle(&Request::Include { target: super::protocol::Target::Comm("reco".into()) }));
    assert_eq!(ok(svc.handle(&Request::Status))["excluded"]["comms"], serde_json::json!([]));
    // Bad targets never reach the service: the request line is refused.
    let bad = serde_json::from_str::<Request>(r#"{"cmd":"exclude","target":"0"}"#).unwrap_err();
    assert!(bad.to_string().contains("invalid pid 0"), "{bad}");
    let bad = serde_json::from_str::<Request>(r#"{"cmd":"exclude","target":"a-command-name-too-long"}"#).unwrap_err();
    assert!(bad.to_string().contains("15 characters"), "{bad}");
    let d = ok(svc.handle(&Request::Decisions { last: 3 }));
    assert_eq!(d.as_array().unwrap().len(), 3);
    let adv = ok(svc.handle(&Request::Advise { cpus: 1, mem_bytes: 1 << 30, reserve: String::new() }));
    assert!(adv["advice"]["nodes"].is_string() && adv["loads"].as_array().unwrap().len() == 4, "{adv}");
    let refused = svc.handle(&Request::Advise { cpus: 64, mem_bytes: 0, reserve: String::new() });
    assert!(!refused.ok && refused.data["refused"].is_string());
    let r = svc.handle(&Request::Reload);
    assert!(!r.ok && r.error.unwrap().contains("without --config"));
    // Dry run: no state file.
    assert!(!s.state_dir.join("state.json").exists());
    // A watched process exits: its run time is learnt (an observation,
    // kept in a dry run too) and shown in the status.
    assert_eq!(ok(svc.handle(&Request::Status))["run_times"], serde_json::json!({"commands": 0, "runs": 0}));
    std::fs::remove_dir_all(f.root().join("proc/100")).unwrap();
    farm_without_reco(&f, 300);
    f.tick(300, 150);
    svc.scan(3.0).unwrap();
    assert_eq!(ok(svc.handle(&Request::Status))["run_times"], serde_json::json!({"commands": 1, "runs": 1}));
    farm_without_reco(&f, 400);
    f.tick(400, 200);
    svc.scan(4.0).unwrap();
    assert_eq!(ok(svc.handle(&Request::Status))["run_times"], serde_json::json!({"commands": 1, "runs": 1}));
}

#[test]
fn reload_checks_the_file_and_keeps_the_old_settings_on_error() {
    let f = Fake::new();
    farm(&f, 0);
    let s = settings(&f);
    let cfg = f.root().join("c.toml");
    let base = format!(
        "state_dir = {:?}\nlog = {:?}\nsocket = {:?}\n",
        s.state_dir.display().to_string(),
        s.log.display().to_string(),
        s.socket.display().to_string()
    );
    std::fs::write(&cfg, format!("{base}interval_max_s = 20\n")).unwrap();
    let mut svc = Service::start(f.sys(), s, Some(cfg.clone()), true).unwrap();
    std::fs::write(&cfg, format!("{base}interval_max_s = 30\n")).unwrap();
    assert!(svc.handle(&Request::Reload).ok);
    assert_eq!(svc.settings().interval_max_s, 30.0);
    std::fs::write(&cfg, format!("{base}interval_max_s = -1\n")).unwrap();
    let r = svc.handle(&Request::Reload);
    assert!(!r.ok && r.error.as_deref().unwrap().contains("interval_max_s = -1"), "{r:?}");
    assert_eq!(svc.settings().interval_max_s, 30.0);
}

#[test]
fn disable_mode_turns_autonuma_off_and_restores_it_also_after_a_crash() {
    let f = Fake::new();
    farm(&f, 0);
    put(f.root(), super::service::NUMA_BALANCING, "1\n");
    let mut s = settings(&f);
    s.autonuma = super::settings::AutonumaMode::Disable;
    let read = || std::fs::read_to_string(f.root().join(super::service::NUMA_BALANCING)).unwrap();
    // A first daemon turns it off, then "crashes" (never shuts down).
    let svc = Service::start(f.sys(), s.clone(), None, false).unwrap();
    assert_eq!(read(), "0");
    drop(svc);
    // The next one keeps the original from the state file and restores it
    // on exit.
    let mut svc = Service::start(f.sys(), s.clone(), None, false).unwrap();
    assert_eq!(read(), "0");
    svc.shutdown();
    assert_eq!(read(), "1");
    // Defer mode while AutoNUMA is on: decisions are logged, nothing done.
    s.autonuma = super::settings::AutonumaMode::Defer;
    let mut svc = Service::start(f.sys(), s, None, false).unwrap();
    svc.scan(0.0).unwrap();
    farm(&f, 100);
    f.tick(100, 50);
    let r = svc.scan(1.0).unwrap();
    let changes: Vec<_> = r.results.iter().filter(|(a, _)| a.changes()).collect();
    assert!(!changes.is_empty());
    for (_, o) in changes {
        assert!(matches!(o, super::apply::Outcome::NotDone { note } if note.contains("AutoNUMA")), "{o:?}");
    }
    assert!(svc.status().deferred.unwrap().contains("numa_balancing = 1"));
}

/// reco's pid in the tests around the AutoNUMA guard and the experiment
/// gate: above any pid_max (2^22), so a bind reaches the kernel and finds
/// no such process (nothing live is touched, the outcome is `gone`).
const PID: i32 = 2_000_000_000;

/// reco (pid [`PID`], memory on node 0) with node 0's and node 1's CPUs
/// busy with owner-pinned hogs whose memory is on node 1: the best place
/// for reco is elsewhere, so a decision binds it and moves its pages.
fn reco_beside_pinned_hogs(f: &Fake, ticks: u64) {
    let hog = |pid: i32, cpu: u32| P {
        pid,
        comm: "hog",
        ticks,
        cpu,
        rss_pages: GIB_PAGES,
        allowed: if cpu == 0 { "0" } else { "4" },
        pages: &[(1, GIB_PAGES)],
        policy: "default",
    };
    f.proc(&P { pid: PID, ..reco(ticks, 3) });
    f.proc(&hog(500, 0));
    f.proc(&hog(501, 4));
}

#[test]
fn place_cpus_beside_autonuma_binds_and_leaves_every_page_to_the_kernel() {
    // reco's memory is on node 0, whose CPUs are busy with owner-pinned
    // work, so the best place is elsewhere and the decision asks for a bind
    // and a migration. Beside a balancing kernel the bind is applied and the
    // migration is not. reco's pid is above any pid_max (2^22): the bind
    // reaches the kernel and finds no such process, so nothing live is
    // touched and the outcome is `gone`.
    let f = Fake::new();
    put(f.root(), super::service::NUMA_BALANCING, "1\n");
    let all = |ticks: u64| reco_beside_pinned_hogs(&f, ticks);
    all(0);
    let s = settings(&f);
    assert_eq!(s.autonuma, super::settings::AutonumaMode::PlaceCpus, "the packaged default");
    let mut svc = Service::start(f.sys(), s.clone(), None, false).unwrap();
    svc.scan(0.0).unwrap();
    all(100);
    f.tick(100, 50);
    let r = svc.scan(1.0).unwrap();
    let mine: Vec<_> = r.results.iter().filter(|(a, _)| a.pid == PID).collect();
    let bind = mine.iter().find(|(a, _)| matches!(a.kind, super::ActionKind::Bind { .. }));
    let migrate = mine.iter().find(|(a, _)| matches!(a.kind, super::ActionKind::Migrate { .. }));
    let (Some((_, bound)), Some((_, moved))) = (bind, migrate) else {
        panic!("no bind and migration away from the busy node: {mine:?}")
    };
    assert_eq!(bound.name(), "gone", "the bind was applied: {bound:?}");
    assert!(
        matches!(moved, super::apply::Outcome::NotDone { note } if note == super::settings::LEFT_TO_KERNEL),
        "{moved:?}"
    );
    let st = svc.status();
    assert!(st.deferred.is_none() && st.cpus_only.as_deref().is_some_and(|w| w.contains("numa_balancing = 1")));
    assert_eq!(svc.counters.pages_migrated_total, 0);
    // The log says it.
    let log = std::fs::read_to_string(&s.log).unwrap();
    assert!(log.lines().any(|l| l.contains(super::settings::LEFT_TO_KERNEL)), "{log}");
    // The kernel stops balancing: the next decision may move pages again.
    put(f.root(), super::service::NUMA_BALANCING, "0\n");
    all(200);
    f.tick(200, 100);
    svc.scan(2.0).unwrap();
    assert!(svc.status().cpus_only.is_none());
}

#[test]
fn an_experiments_off_period_decides_and_logs_only() {
    // As above, without kernel balancing: reco would be bound and its
    // pages moved. In the gate's "off" period nothing is applied and the
    // status says why; once the gate opens, the same decision is applied.
    let f = Fake::new();
    put(f.root(), super::service::NUMA_BALANCING, "0\n");
    let all = |ticks: u64| reco_beside_pinned_hogs(&f, ticks);
    all(0);
    let s = settings(&f);
    let mut svc = Service::start(f.sys(), s.clone(), None, false).unwrap();
    // The gate is given the time (seconds since the epoch, a real clock).
    let why = "experiment dm: this host's arm is daemon-off in period 7";
    svc.set_observe_only(Some(Box::new(move |now| (now > 1e9).then(|| why.to_string()))));
    svc.scan(0.0).unwrap();
    all(100);
    f.tick(100, 50);
    let off = svc.scan(1.0).unwrap();
    let mine: Vec<_> = off.results.iter().filter(|(a, _)| a.pid == PID && a.changes()).collect();
    assert!(!mine.is_empty(), "a change was decided: {:?}", off.results);
    assert!(mine.iter().all(|(_, o)| matches!(o, super::apply::Outcome::NotDone { note } if note == why)), "{mine:?}");
    assert!(!off.changed);
    assert_eq!(svc.status().deferred.as_deref(), Some(why));
    let log = std::fs::read_to_string(&s.log).unwrap();
    assert!(log.lines().any(|l| l.contains(why)), "the log says it: {log}");
    // The gate opens: acted upon (the bind reaches the kernel: gone).
    svc.set_observe_only(Some(Box::new(|_| None)));
    all(200);
    f.tick(200, 100);
    let on = svc.scan(2.0).unwrap();
    assert!(on.results.iter().any(|(a, o)| a.pid == PID && o.name() == "gone"), "{:?}", on.results);
    assert!(svc.status().deferred.is_none());
}

#[test]
fn small_processes_cost_one_statm_read() {
    let f = Fake::new();
    farm(&f, 0);
    // The small process's `stat` is unreadable garbage: the collector must
    // not need it (its `statm` says it is below the memory threshold).
    put(f.root(), "proc/400/stat", "garbage");
    let mut rig = Rig::new(&f);
    let (_, counts) = rig.scan(0.0).unwrap();
    assert_eq!((counts.processes, counts.vanished), (4, 0));
    // A bad `statm` is an error naming the file.
    put(f.root(), "proc/400/statm", "x y");
    let e = rig.scan(1.0).unwrap_err();
    assert!(e.to_string().contains("proc/400/statm"), "{e}");
    // An empty one (the process exited while read) is skipped.
    put(f.root(), "proc/400/statm", "");
    let (_, counts) = rig.scan(2.0).unwrap();
    assert_eq!((counts.processes, counts.vanished), (3, 1));
}

#[test]
fn the_daemon_never_places_itself() {
    let f = Fake::new();
    let me = std::process::id() as i32;
    let myself = |ticks| P {
        pid: me,
        comm: "numakit",
        ticks,
        cpu: 3,
        rss_pages: GIB_PAGES,
        allowed: "0-7",
        pages: &[(0, GIB_PAGES)],
        policy: "default",
    };
    farm(&f, 0);
    f.proc(&myself(0));
    let s = settings(&f);
    let mut svc = Service::start(f.sys(), s, None, true).unwrap();
    svc.scan(0.0).unwrap();
    farm(&f, 100);
    f.proc(&myself(100));
    f.tick(100, 50);
    let r = svc.scan(1.0).unwrap();
    assert!(r.results.iter().any(|(a, _)| a.pid == 100), "the same process under another pid is decided on");
    assert!(r.results.iter().all(|(a, _)| a.pid != me), "{:?}", r.results);
}

#[test]
fn a_thread_that_changed_node_has_its_window_split_between_both() {
    let f = Fake::new();
    let mut rig = Rig::new(&f);
    let at = reco;
    let mut scan = |t: u64, cpu: u32| {
        f.proc(&at(t * 100, cpu));
        f.tick(t * 100, t * 50);
        rig.scan(t as f64).unwrap().0
    };
    scan(0, 3);
    scan(1, 3);
    // Still on CPU 3 (node 3): the whole second there.
    let snap = scan(2, 3);
    assert_eq!(snap.procs[0].cpu_per_node.get(&3), Some(&1.0));
    // Now seen on CPU 1 (node 1): it moved at some moment of the window.
    let snap = scan(3, 1);
    let per = &snap.procs[0].cpu_per_node;
    assert_eq!((per.get(&1), per.get(&3)), (Some(&0.5), Some(&0.5)), "{per:?}");
    // Seen on node 1 twice: all of it there.
    let snap = scan(4, 1);
    assert_eq!(snap.procs[0].cpu_per_node.get(&1), Some(&1.0));
    assert_eq!(snap.procs[0].cpu_per_node.get(&3), None);
}

#[test]
fn run_queue_wait_comes_from_each_threads_schedstat() {
    let f = Fake::new();
    let mut rig = Rig::new(&f);
    let at = |ticks| reco(ticks, 3);
    // On-CPU ns, run-delay ns, time slices (the kernel's three fields).
    let mut scan = |t: u64, ran_cs: u64, waited_ms: u64| {
        f.proc(&at(ran_cs));
        put(f.root(), "proc/100/task/100/schedstat", &format!("{} {} 7\n", ran_cs * 10_000_000, waited_ms * 1_000_000));
        f.tick(t * 100, t * 100);
        rig.scan(t as f64).unwrap().0
    };
    scan(0, 0, 0);
    // A candidate from its first busy window on; its threads are read from
    // then, so what they waited is known from the window after.
    let s = scan(1, 100, 0);
    assert_eq!(s.procs[0].cpu_wait, 0.0);
    // Second 2: it ran 0.6 s and waited 0.4 s for a CPU.
    let s = scan(2, 160, 400);
    assert!((s.procs[0].cpu_use - 0.6).abs() < 1e-9, "{:?}", s.procs[0]);
    assert!((s.procs[0].cpu_wait - 0.4).abs() < 1e-9, "{:?}", s.procs[0]);
    // Second 3: it ran the whole second.
    let s = scan(3, 260, 400);
    assert_eq!(s.procs[0].cpu_wait, 0.0);
    // Without schedstat (a kernel without CONFIG_SCHED_INFO): nothing known.
    std::fs::remove_file(f.root().join("proc/100/task/100/schedstat")).unwrap();
    f.proc(&at(360));
    f.tick(400, 400);
    let s = rig.scan(4.0).unwrap().0;
    assert_eq!(s.procs[0].cpu_wait, 0.0);
}

/// The snapshot names the processes read at the previous scan that exited
/// since: gone from `/proc`, or their pid now a later process. Not a
/// process merely not read this time, and nothing on the first scan.
#[test]
fn exits_are_reported_once_and_only_real_ones() {
    let f = Fake::new();
    farm(&f, 0);
    let mut rig = Rig::new(&f);
    let (snap, _) = rig.scan(0.0).unwrap();
    assert!(snap.exited.is_empty(), "the first scan knows no earlier one");
    farm(&f, 100);
    f.tick(100, 50);
    let (snap, _) = rig.scan(1.0).unwrap();
    assert!(snap.exited.is_empty(), "{:?}", snap.exited);
    // 100 exits, 200's pid is reused by a process started later, 300 is
    // alive but shrinks below the memory threshold (read by statm only
    // now), the small 400 (never read in full) exits.
    std::fs::remove_dir_all(f.root().join("proc/100")).unwrap();
    std::fs::remove_dir_all(f.root().join("proc/400")).unwrap();
    let stat = std::fs::read_to_string(f.root().join("proc/200/stat")).unwrap();
    let reused = stat.replacen(" 0 1 0 100 ", " 0 1 0 150 ", 1);
    assert_ne!(stat, reused, "the start time field was found");
    put(f.root(), "proc/200/stat", &reused);
    f.proc(&P {
        pid: 300,
        comm: "membound",
        ticks: 200,
        cpu: 2,
        rss_pages: 100,
        allowed: "0-7",
        pages: &[(1, 100)],
        policy: "bind:1",
    });
    f.tick(200, 100);
    let (snap, _) = rig.scan(2.0).unwrap();
    assert_eq!(snap.exited, [100, 200]);
    // Reported once.
    f.tick(300, 150);
    let (snap, _) = rig.scan(3.0).unwrap();
    assert!(snap.exited.is_empty(), "{:?}", snap.exited);
}

/// A process at or above the memory threshold has its threads read at the
/// first scan that sees it, although its CPU use is not known yet, so the
/// next scan measures where they ran; one that becomes busy after a scan
/// that skipped its threads (its CPU use was known and low) is listed as
/// unmeasured once, measured from the scan after.
#[test]
fn where_threads_ran_is_measured_from_the_second_scan() {
    let f = Fake::new();
    let mut rig = Rig::new(&f);
    let mut scan = |t: u64, ticks: u64, cpu: u32| {
        f.proc(&reco(ticks, cpu));
        f.tick(t * 100, t * 50);
        rig.scan(t as f64).unwrap().0
    };
    // On node 1 at the first scan and on node 3 now: measured, split.
    assert!(scan(0, 0, 1).procs.is_empty());
    let s = scan(1, 100, 3);
    let p = &s.procs[0];
    assert!(p.cpu_measured, "{p:?}");
    assert_eq!((p.cpu_per_node.get(&1), p.cpu_per_node.get(&3)), (Some(&0.5), Some(&0.5)));
    // Idle for a second (not a candidate, its threads not read), then busy.
    assert!(scan(2, 100, 3).procs.is_empty());
    let s = scan(3, 200, 0);
    assert!(!s.procs[0].cpu_measured, "{:?}", s.procs[0]);
    assert_eq!(s.procs[0].cpu_per_node.get(&0), Some(&1.0), "where it is at this instant");
    let s = scan(4, 300, 0);
    assert!(s.procs[0].cpu_measured, "{:?}", s.procs[0]);
}

/// With scans a second apart, rates span `min_rate_span_s` (4 s): a busy
/// thread whose CPU time was read a second late (a virtual CPU that did
/// not run, a late tick) reads no CPU over one window and its double over
/// the next; over four seconds it reads three quarters, still busy. The
/// process is acted on only once its rates span that long.
#[test]
fn a_rate_spans_at_least_min_rate_span_s() {
    let f = Fake::new();
    let mut rig = Rig::new(&f);
    rig.s.decide.min_rate_span_s = 4.0;
    // Ticks at each second: 100 a second, but the reading at t=2 is a
    // second late (it shows t=1's count) and so is the one at t=5.
    let ticks = [0, 100, 100, 300, 400, 400, 600, 700];
    let mut snaps = Vec::new();
    for (t, &k) in ticks.iter().enumerate() {
        f.proc(&reco(k, 3));
        f.tick(t as u64 * 100, t as u64 * 50);
        snaps.push(rig.scan(t as f64).unwrap().0);
    }
    let reco_at = |t: usize| snaps[t].procs.iter().find(|p| p.pid == 100).unwrap_or_else(|| panic!("t={t}"));
    // Over less than 4 s (t = 1..3): its rate over all it has, not acted on.
    for (t, &k) in ticks.iter().enumerate().take(4).skip(1) {
        let p = reco_at(t);
        assert!(!p.cpu_measured, "t={t}: {p:?}");
        assert!((p.rate_span_s - t as f64).abs() < 1e-9, "t={t}: {p:?}");
        // From the first scan (its snapshot time, the rig's 5000 + t).
        assert_eq!(p.rates_from_s, Some(5000.0), "t={t}: {p:?}");
        assert!((p.cpu_use - k as f64 / 100.0 / t as f64).abs() < 1e-9, "t={t}: {p:?}");
    }
    // From t=4: over the newest reading at least 4 s old; the late
    // readings cost a quarter at most (a one-second window read 0 at t=2
    // and 0 at t=5).
    for t in 4..ticks.len() {
        let p = reco_at(t);
        assert!(p.cpu_measured && (p.rate_span_s - 4.0).abs() < 1e-9, "t={t}: {p:?}");
        let want = (ticks[t] - ticks[t - 4]) as f64 / 100.0 / 4.0;
        assert!((p.cpu_use - want).abs() < 1e-9 && p.cpu_use >= 0.75, "t={t}: {p:?}");
        let on_3: f64 = p.cpu_per_node.get(&3).copied().unwrap_or(0.0);
        assert!((on_3 - want).abs() < 1e-9, "its thread over the same span, t={t}: {p:?}");
        assert_eq!(p.rates_from_s, Some(5000.0 + (t - 4) as f64), "the scan they start from, t={t}: {p:?}");
    }
}

/// A thread younger than the span counts over its own shorter one and does
/// not hold back the measure of its process: a process whose pool starts a
/// thread every second is still placed (its older threads span 4 s).
#[test]
fn a_young_thread_does_not_hold_back_its_process() {
    let f = Fake::new();
    let mut rig = Rig::new(&f);
    rig.s.decide.min_rate_span_s = 4.0;
    let mut last = None;
    for t in 0..7u64 {
        f.proc(&reco(t * 100, 3));
        // Thread 1000 + t, born at scan t (idle: the main thread is busy).
        let tid = 1000 + t;
        put(
            f.root(),
            &format!("proc/100/task/{tid}/stat"),
            &format!("{tid} (reco) R 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 100 1000000 10 0 0 0 0 0 0 0 0 0 0 0 0 0 0 3 0 0 0 0 0\n"),
        );
        f.tick(t * 100, t * 50);
        last = Some(rig.scan(t as f64).unwrap().0);
    }
    let snap = last.unwrap();
    let p = snap.procs.iter().find(|p| p.pid == 100).unwrap();
    assert!(p.cpu_measured && (p.rate_span_s - 4.0).abs() < 1e-9, "{p:?}");
}

/// The busy main thread of a process too small to be a candidate, pinned
/// by its owner to some nodes, is load those nodes hold (one CPU, shared
/// by its allowed CPUs there); an unpinned or an idle one is not, and an
/// idle one is read again only at its turn, within
/// `idle_small_read_every` scans.
#[test]
fn busy_small_processes_pinned_by_their_owner_are_bound_load() {
    let f = Fake::new();
    let mut rig = Rig::new(&f);
    // pid, allowed CPUs (CPU c is on node c % 4), on-CPU ns per second,
    // run-delay ns per second.
    let small = [(500, "0", 700_000_000, 300_000_000), (501, "1,5,2", 1_000_000_000, 0), (502, "3", 100_000_000, 0)];
    let small = small.iter().chain([(503, "0-7", 1_000_000_000, 0)].iter());
    let at = |t: u64| {
        for &(pid, allowed, ran, waited) in small.clone() {
            f.proc(&P {
                pid,
                comm: "loop",
                ticks: 0,
                cpu: 0,
                rss_pages: 100,
                allowed,
                pages: &[(0, 100)],
                policy: "default",
            });
            put(f.root(), &format!("proc/{pid}/schedstat"), &format!("{} {} 9\n", ran * t, waited * t));
        }
        f.tick(t * 100, t * 100);
    };
    at(0);
    let (s, _) = rig.scan(0.0).unwrap();
    assert!(s.nodes.iter().all(|n| n.bound_cpus == 0.0), "no window yet: {:?}", s.nodes);
    at(1);
    let (s, counts) = rig.scan(1.0).unwrap();
    assert_eq!(counts.detailed, 0);
    let bound: Vec<f64> = s.nodes.iter().map(|n| (n.bound_cpus * 1e6).round() / 1e6).collect();
    // 500: 0.7 s run + 0.3 s waited, on node 0. 501: on nodes 1 (two
    // CPUs) and 2 (one). 502 is pinned but idle, 503 busy but free.
    assert_eq!(bound, [1.0, 0.666667, 0.333333, 0.0], "{:?}", s.nodes);
    // A counter that went back (the pid now names another process) and
    // an exited process are not counted.
    put(f.root(), "proc/500/schedstat", "5 0 1\n");
    std::fs::remove_dir_all(f.root().join("proc/501")).unwrap();
    let (s, _) = rig.scan(2.0).unwrap();
    assert!(s.nodes.iter().all(|n| n.bound_cpus == 0.0), "{:?}", s.nodes);
    // 502 (on node 3, idle at its last reading, at 1 s) turns busy at 2 s:
    // read at every scan it would count from 3 s; it is read at its turn.
    assert_eq!(rig.s.decide.idle_small_read_every, 4);
    let mut seen = Vec::new();
    for t in 3..=6u64 {
        put(f.root(), "proc/502/schedstat", &format!("{} 0 9\n", 100_000_000 + (t - 2) * 1_000_000_000));
        f.tick(t * 100, t * 100);
        let (s, _) = rig.scan(t as f64).unwrap();
        seen.push(s.nodes[3].bound_cpus);
    }
    let first = seen.iter().position(|&b| b == 1.0).map(|i| i + 3);
    assert!(matches!(first, Some(4..=5)), "{seen:?}");
    assert!(seen[first.unwrap_or(3) - 3..].iter().all(|&b| b == 1.0), "busy: read at every scan now, {seen:?}");
}
