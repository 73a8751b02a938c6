use std::collections::BTreeMap;

use super::*;
use crate::batch::load::{with_claims, NodeClaims};
use crate::topo::synth::SynthMachine;

/// Four nodes of two CPUs each (node `n` has CPUs `n` and `n + 4`), 4 GiB
/// each.
fn topo4() -> Topology {
    let d = tempfile::tempdir().unwrap();
    SynthMachine::rr_4n(8, 4096).write(d.path()).unwrap();
    Topology::read_nodes_only(&SysRoot::at(d.path())).unwrap()
}

fn task(cpus: u32) -> TaskInfo {
    TaskInfo {
        label: "slurm job 1.0 task 0".into(),
        cpus,
        mem_bytes: 0,
        reserve: CpuSet::new(),
        job_step: None,
        devices: Default::default(),
    }
}

fn cpus(list: &str) -> CpuSet {
    CpuSet::parse_list(list).unwrap()
}

/// The ledger's claims of decisions made, as `load::claims_of` would
/// count them for running jobs that have touched no memory yet.
fn claims(ds: &[&TaskDecision]) -> BTreeMap<u32, NodeClaims> {
    let mut out: BTreeMap<u32, NodeClaims> = BTreeMap::new();
    for d in ds {
        for c in &d.claims {
            let n = out.entry(c.node).or_default();
            n.jobs += 1;
            n.cpus += c.cpus;
            n.outstanding_bytes += c.mem_bytes;
        }
    }
    out
}

#[test]
fn unbound_jobs_started_together_get_different_nodes() {
    let t = topo4();
    let all = t.allowed.cpus.clone();
    let base = auto::loads_of(&t, &all);
    let mut made: Vec<TaskDecision> = Vec::new();
    for _ in 0..4 {
        let refs: Vec<&TaskDecision> = made.iter().collect();
        let loads = with_claims(&t, &base, &claims(&refs));
        made.push(decide_task(&t, &JobMode::Auto, &all, &loads, &task(1)).unwrap());
    }
    let nodes: Vec<String> = made.iter().map(|d| d.nodes.to_list()).collect();
    assert_eq!(nodes, ["0", "1", "2", "3"], "one single-CPU job per node while nodes are free");
    for d in &made {
        let p = d.plan.as_ref().unwrap();
        let n = d.nodes.first().unwrap();
        assert_eq!(p.cpus.as_ref().unwrap(), &t.node(n).unwrap().cpus);
        let m = p.memory.as_ref().unwrap();
        assert_eq!((m.mode, m.nodes.to_list()), (MemMode::Bind, n.to_string()));
        assert_eq!(d.claims, vec![Claim { node: n, cpus: 1, mem_bytes: 0 }]);
    }
    // Four more fill the second CPU of each node; a ninth does not fit.
    for _ in 0..4 {
        let refs: Vec<&TaskDecision> = made.iter().collect();
        let loads = with_claims(&t, &base, &claims(&refs));
        made.push(decide_task(&t, &JobMode::Auto, &all, &loads, &task(1)).unwrap());
    }
    let refs: Vec<&TaskDecision> = made.iter().collect();
    let loads = with_claims(&t, &base, &claims(&refs));
    let e = decide_task(&t, &JobMode::Auto, &all, &loads, &task(1)).unwrap_err();
    assert!(matches!(&e, JobError::NoFit(m) if m.starts_with("--numa=auto: the job needs 1 CPUs")), "{e}");
}

#[test]
fn a_bound_task_is_never_widened() {
    let t = topo4();
    let loads = auto::loads_of(&t, &CpuSet::new()); // every CPU busy: irrelevant when bound
                                                    // Slurm bound the task to CPU 6 (node 2).
    let d = decide_task(&t, &JobMode::Auto, &cpus("6"), &loads, &task(1)).unwrap();
    let p = d.plan.unwrap();
    assert_eq!(p.cpus.unwrap(), cpus("6"));
    assert_eq!(p.memory.unwrap().nodes.to_list(), "2");
    assert!(d.reason.contains("within its CPUs 6"), "{}", d.reason);
    // Given CPUs on nodes 1 and 2, a 2-CPU task: node group, inside them.
    let d = decide_task(&t, &JobMode::Auto, &cpus("1,2"), &loads, &task(2)).unwrap();
    assert_eq!(d.plan.unwrap().cpus.unwrap(), cpus("1,2"));
    assert_eq!(d.nodes.to_list(), "1-2");
}

#[test]
fn tasks_of_a_step_spread_over_its_nodes_by_free_memory() {
    let t = topo4();
    let given = cpus("0-1,4-5"); // nodes 0 and 1, two CPUs each
    let mut base = auto::loads_of(&t, &t.allowed.cpus);
    base[0].free_bytes = 1 << 30;
    base[1].free_bytes = 3 << 30;
    let first = decide_task(&t, &JobMode::Auto, &given, &base, &task(1)).unwrap();
    assert_eq!(first.nodes.to_list(), "1", "the node with more free memory first");
    let loads = with_claims(&t, &base, &claims(&[&first]));
    let second = decide_task(&t, &JobMode::Auto, &given, &loads, &task(1)).unwrap();
    assert_eq!(second.nodes.to_list(), "0", "then the node no task of numakit's holds");
    assert_eq!(second.plan.unwrap().cpus.unwrap(), cpus("0,4"));
}

#[test]
fn a_node_list_must_be_inside_the_allocation() {
    let t = topo4();
    let loads = auto::loads_of(&t, &t.allowed.cpus);
    let given = cpus("0-1,4-5");
    let e = decide_task(&t, &JobMode::Nodes("3".into()), &given, &loads, &task(1)).unwrap_err();
    assert_eq!(
        e,
        JobError::Request(
            "--numa=nodes:3: node 3 is outside this task's allocation (CPUs 0-1,4-5 on nodes 0-1)".into()
        )
    );
    let e = decide_task(&t, &JobMode::Nodes("9".into()), &given, &loads, &task(1)).unwrap_err();
    assert!(matches!(&e, JobError::Request(m) if m.starts_with("--numa=nodes:9: ")), "{e}");
    let d = decide_task(&t, &JobMode::Nodes("1".into()), &given, &loads, &task(1)).unwrap();
    let p = d.plan.unwrap();
    assert_eq!(p.cpus.unwrap(), cpus("1,5"));
    assert_eq!(p.memory.unwrap().nodes.to_list(), "1");
}

#[test]
fn local_interleave_and_none_leave_the_cpus_alone() {
    let t = topo4();
    let loads = auto::loads_of(&t, &t.allowed.cpus);
    let given = cpus("2-3");
    let d = decide_task(&t, &JobMode::Local, &given, &loads, &task(1)).unwrap();
    let p = d.plan.unwrap();
    assert_eq!((p.cpus, p.memory.unwrap().mode), (None, MemMode::Local));
    let d = decide_task(&t, &JobMode::Interleave, &given, &loads, &task(1)).unwrap();
    let m = d.plan.unwrap().memory.unwrap();
    assert_eq!((m.mode, m.nodes.to_list()), (MemMode::Interleave, "2-3".to_string()));
    let d = decide_task(&t, &JobMode::None, &given, &loads, &task(1)).unwrap();
    assert!(d.plan.is_none() && d.claims.is_empty());
}

#[test]
fn claims_spread_a_multi_node_placement() {
    let t = topo4();
    let c = spread_claims(&t, &NodeSet::parse_list("0-2").unwrap(), &TaskInfo { mem_bytes: 10, ..task(5) });
    let got: Vec<(u32, u32, u64)> = c.iter().map(|c| (c.node, c.cpus, c.mem_bytes)).collect();
    assert_eq!(got, [(0, 2, 4), (1, 2, 3), (2, 1, 3)]);
}

/// A daemon that answers each request after `delay` (a scan in progress),
/// recording the requests; stops after `n` connections.
fn slow_daemon(
    socket: &std::path::Path,
    delay: Duration,
    n: usize,
) -> std::thread::JoinHandle<Vec<crate::daemon::protocol::Request>> {
    use crate::daemon::{ctl, protocol};
    let listener = std::os::unix::net::UnixListener::bind(socket).unwrap();
    std::thread::spawn(move || {
        let mut seen = Vec::new();
        for conn in listener.incoming().take(n) {
            let stream = conn.unwrap();
            let req = ctl::read_request(&stream, Duration::from_secs(5)).unwrap();
            std::thread::sleep(delay);
            let done = protocol::Done { done: format!("{req:?}") };
            let _ = ctl::write_response(&stream, &protocol::Response::ok(&done));
            seen.push(req);
        }
        seen
    })
}

#[test]
fn a_none_task_waits_for_a_daemon_busy_with_a_scan() {
    use crate::daemon::protocol::Request;
    let d = tempfile::tempdir().unwrap();
    let socket = d.path().join("d.sock");
    // 2.5 s: longer than the 2 s the plugin used to wait (the guest's
    // daemon took 1.8 s of CPU for its first scan, and the job's
    // exclusion failed with "no answer").
    let daemon = slow_daemon(&socket, Duration::from_millis(2500), 2);
    let warning = exclude_from_daemon(&socket, 42, Some("/system.slice/job_7"));
    assert_eq!(warning, None, "the task waited for the answers");
    let seen = daemon.join().unwrap();
    assert_eq!(
        seen,
        [
            Request::Exclude { target: Target::Pid(42) },
            Request::Exclude { target: Target::parse("cgroup:/system.slice/job_7").unwrap() }
        ]
    );
}

#[test]
fn a_daemon_that_does_not_answer_in_time_is_a_warning() {
    let d = tempfile::tempdir().unwrap();
    let socket = d.path().join("d.sock");
    let daemon = slow_daemon(&socket, Duration::from_millis(800), 1);
    let warning = exclude_waiting(&socket, 42, None, Duration::from_millis(200)).expect("a warning");
    assert!(warning.starts_with("the daemon did not exclude the job: "), "{warning}");
    drop(daemon);
}

#[test]
fn an_unbound_auto_step_goes_where_its_job_is() {
    let t = topo4();
    let all = t.allowed.cpus.clone();
    // The job's batch step holds node 1 (CPUs 1 and 5).
    let job = cpus("1,5");
    assert_eq!(within_job(&t, &all, &job, 2), Some(cpus("1,5")));
    assert_eq!(within_job(&t, &all, &job, 1), Some(cpus("1,5")));
    // More CPUs than the job holds here, no placement of the job, or a
    // binding the batch system made: chosen as without them.
    assert_eq!(within_job(&t, &all, &job, 3), None);
    assert_eq!(within_job(&t, &all, &CpuSet::new(), 1), None);
    assert_eq!(within_job(&t, &cpus("0-1,4-5"), &job, 1), None, "Slurm's binding is the step's place");
    // Inside the job's CPUs, every one counts as the job's although the
    // ledger shows node 1 full (the batch step's claim, were it counted).
    let mut loads = auto::loads_of(&t, &all);
    loads[1].idle_cpus = CpuSet::new();
    let inside = within_job(&t, &all, &job, 2).unwrap();
    let d = decide_task(&t, &JobMode::Auto, &inside, &loads, &task(2)).unwrap();
    assert_eq!((d.nodes.to_list(), d.plan.unwrap().cpus.unwrap()), ("1".to_string(), cpus("1,5")));
}

#[test]
fn the_jobs_other_steps_are_its_own_and_its_sibling_tasks_count() {
    use crate::batch::ledger::{Claim, Entry, JobStep};
    // The live system (prepare reads the ledger only there): node 0, which
    // every Linux host has, claimed whole by this test's own process as
    // job 7's batch step.
    let sys = SysRoot::live();
    let topo = Topology::read_nodes_only(&sys).unwrap();
    let node0 = topo.node(0).unwrap().cpus.intersection(&topo.allowed.cpus);
    let d = tempfile::tempdir().unwrap();
    let site = Site { socket: d.path().join("no-daemon.sock"), ledger: d.path().join("jobs"), ..Site::default() };
    let ledger = Ledger::new(&site.ledger);
    let step = |job: u32, s: &str| JobStep { job: format!("slurm job {job}"), step: format!("slurm job {job}.{s}") };
    let me = std::process::id() as i32;
    let start_ticks = crate::procs::read_proc_stat(&sys, me).unwrap().unwrap().start_ticks;
    ledger
        .lock(LOCK_WAIT)
        .unwrap()
        .record(&Entry {
            pid: me,
            start_ticks,
            job: "slurm job 7.batch task 0".into(),
            claims: vec![Claim { node: 0, cpus: node0.len() as u32, mem_bytes: 0 }],
            placed_unix: 0,
            job_step: Some(step(7, "batch")),
            arm: None,
        })
        .unwrap();
    let idle0 = |p: &Prepared<'_>| p.loads.iter().find(|l| l.node == 0).unwrap().idle_cpus.len();
    // Job 7's step 0: the batch step's node is the job's, not a load.
    let p = prepare(&sys, &site, &ledger, Some(&step(7, "0"))).unwrap();
    assert_eq!((p.job_cpus.clone(), idle0(&p)), (topo.cpus_of_nodes(&NodeSet::parse_list("0").unwrap()), node0.len()));
    drop(p);
    // Another job, the batch step's own tasks, and a job of its own: a claim like any.
    for other in [Some(step(8, "0")), Some(step(7, "batch")), None] {
        let p = prepare(&sys, &site, &ledger, other.as_ref()).unwrap();
        assert_eq!((p.job_cpus.is_empty(), idle0(&p)), (true, 0), "{other:?}");
    }
}

#[test]
fn a_jobs_own_steps_are_only_those_its_user_or_root_recorded() {
    use crate::batch::ledger::{Entry, JobStep, Recorded};
    let step = |s: &str| JobStep { job: "slurm job 4".into(), step: format!("slurm job 4.{s}") };
    let rec = |pid, s: &str, owner| Recorded {
        entry: Entry {
            pid,
            start_ticks: 1,
            job: "t".into(),
            claims: Vec::new(),
            placed_unix: 0,
            job_step: Some(step(s)),
            arm: None,
        },
        owner,
    };
    let entries = vec![rec(1, "0", 1000), rec(2, "0", 0), rec(3, "0", 2000), rec(4, "1", 1000)];
    let (own, others) = own_steps(entries, Some(&step("1")), 1000);
    let pids = |v: &[Entry]| v.iter().map(|e| e.pid).collect::<Vec<_>>();
    // Another user's entry naming this job is everybody else's load; the
    // step's own sibling tasks (step 1) too.
    assert_eq!((pids(&own), pids(&others)), (vec![1, 2], vec![3, 4]));
}

/// `auto` tasks started together on a machine with a memory-less node
/// (`--node 0-1:0 --node 2-3:4G`): the ledger's claims spread them, but
/// `place::auto`'s rule puts a memory-less node after a node with memory
/// of its own, so the node with memory fills first and the memory-less
/// node takes the tasks only then, its memory from node 1.
#[test]
fn tasks_started_together_fill_the_node_with_memory_first() {
    let d = tempfile::tempdir().unwrap();
    SynthMachine::of_nodes(&[("0-1", 0), ("2-3", 4096)]).write(d.path()).unwrap();
    let t = Topology::read_nodes_only(&SysRoot::at(d.path())).unwrap();
    let all = t.allowed.cpus.clone();
    let base = auto::loads_of(&t, &all);
    let mut made: Vec<TaskDecision> = Vec::new();
    for _ in 0..4 {
        let refs: Vec<&TaskDecision> = made.iter().collect();
        let loads = with_claims(&t, &base, &claims(&refs));
        made.push(decide_task(&t, &JobMode::Auto, &all, &loads, &task(1)).unwrap());
    }
    let nodes: Vec<String> = made.iter().map(|d| d.nodes.to_list()).collect();
    assert_eq!(nodes, ["1", "1", "0", "0"]);
    for d in &made {
        let m = d.plan.as_ref().unwrap().memory.as_ref().unwrap();
        assert_eq!((m.mode, m.nodes.to_list()), (MemMode::Bind, "1".to_string()), "{}", d.reason);
    }
    assert!(made[2].reason.contains("no memory: memory from node 1 (distance 20)"), "{}", made[2].reason);
    let refs: Vec<&TaskDecision> = made.iter().collect();
    let loads = with_claims(&t, &base, &claims(&refs));
    assert!(matches!(decide_task(&t, &JobMode::Auto, &all, &loads, &task(1)), Err(JobError::NoFit(_))));
}
