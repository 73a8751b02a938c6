use super::*;
use crate::topo::synth::SynthMachine;

struct Fx {
    _d: tempfile::TempDir,
    sys: SysRoot,
    topo: Topology,
}

/// 3 nodes: 0 (CPUs 0-1, memory), 1 (CPUs 2-3, no memory), 2 (no CPUs, memory).
fn fx() -> Fx {
    let mut m = SynthMachine::rr_4n(4, 1024);
    m.cpus = vec![
        crate::topo::synth::SynthCpu { id: 0, node: 0, package: 0, core: 0 },
        crate::topo::synth::SynthCpu { id: 1, node: 0, package: 0, core: 1 },
        crate::topo::synth::SynthCpu { id: 2, node: 1, package: 1, core: 0 },
        crate::topo::synth::SynthCpu { id: 3, node: 1, package: 1, core: 1 },
    ];
    m.nodes = vec![(0, 1024), (1, 0), (2, 2048)];
    m.distances = vec![vec![10, 20, 30], vec![20, 10, 25], vec![30, 25, 10]];
    let d = tempfile::tempdir().expect("tmp");
    m.write(d.path()).expect("write");
    let sys = SysRoot::at(d.path());
    let topo = Topology::read(&sys).expect("read");
    Fx { _d: d, sys, topo }
}

fn opt(kind: OptKind, v: &str) -> PolicyOpt {
    PolicyOpt { kind, value: Some(v.into()) }
}

fn resolve(f: &Fx, opts: Vec<PolicyOpt>) -> Result<Plan, PlaceError> {
    Request { opts, ..Request::default() }.resolve(&Context { topo: &f.topo, sys: &f.sys, kernel: Some((6, 1)) })
}

#[test]
fn bind_cpus_and_memory() {
    let f = fx();
    let p = resolve(&f, vec![opt(OptKind::CpuNodeBind, "0"), opt(OptKind::MemBind, "same")]).expect("ok");
    assert_eq!(p.cpus.expect("cpus").to_list(), "0-1");
    let m = p.memory.expect("mem");
    assert_eq!((m.mode, m.nodes.to_list()), (MemMode::Bind, "0".into()));
    assert_eq!(
        Plan { cpus: Some(CpuSet::parse_list("0-1").expect("l")), memory: Some(m) }.numactl_args(),
        vec!["--physcpubind=0-1".to_string(), "--membind=0".to_string()]
    );
}

#[test]
fn interleave_all_means_allowed_memory_nodes() {
    let f = fx();
    let p = resolve(&f, vec![opt(OptKind::Interleave, "all")]).expect("ok");
    assert_eq!(p.memory.expect("m").nodes.to_list(), "0,2");
    let p = resolve(&f, vec![opt(OptKind::CpuNodeBind, "all")]).expect("ok");
    assert_eq!(p.cpus.expect("c").to_list(), "0-3");
}

#[test]
fn refusals_name_value_and_reason() {
    let f = fx();
    let cases: Vec<(Vec<PolicyOpt>, &str)> = vec![
        (vec![opt(OptKind::MemBind, "7")], "--membind 7: node 7 does not exist (this machine has node(s) 0-2)"),
        (
            vec![opt(OptKind::MemBind, "1")],
            "--membind 1: node 1 has no memory (a memory-less CPU node); its CPUs use node(s) 0 for memory",
        ),
        (vec![opt(OptKind::Preferred, "1")], "node 1 has no memory"),
        (vec![opt(OptKind::CpuNodeBind, "2")], "--cpunodebind 2: node 2 has no CPUs"),
        (vec![opt(OptKind::PhysCpuBind, "9")], "--physcpubind 9: CPU 9 does not exist (this machine has CPUs 0-3)"),
        (
            vec![opt(OptKind::PhysCpuBind, "0"), opt(OptKind::CpuNodeBind, "1")],
            "has no CPU in common with --physcpubind 0",
        ),
        (vec![opt(OptKind::Preferred, "0,2")], "exactly one node"),
        (vec![opt(OptKind::MemBind, "0"), opt(OptKind::Interleave, "0,2")], "conflicts with the bind policy"),
        (vec![opt(OptKind::WeightedInterleave, "0,2")], "needs Linux 6.9 or later; this kernel is 6.1"),
        (
            vec![PolicyOpt { kind: OptKind::LocalAlloc, value: None }, opt(OptKind::PhysCpuBind, "1-2")],
            "on several nodes (0-1)",
        ),
        (vec![opt(OptKind::MemBind, "x")], "--membind: invalid node list \"x\""),
        (vec![opt(OptKind::MemBind, "same")], "needs an earlier node option"),
        (vec![opt(OptKind::MemBind, "netdev:nope0")], "no network device nope0"),
    ];
    for (opts, want) in cases {
        let e = resolve(&f, opts.clone()).expect_err(&format!("{opts:?} must fail")).to_string();
        assert!(e.contains(want), "{opts:?}: got {e:?}, want {want:?}");
        assert!(!e.contains('\n'), "one line: {e}");
    }
}

/// `rr_4n` (CPU i on node i % 4) with the caller's affinity and memory
/// nodes in /proc/self/status, and its cpuset's CPUs in a cgroup v2 tree
/// (`None`: no cgroup files, the cpuset unknown).
fn narrowed(affinity: &str, mems: &str, cpuset: Option<&str>) -> Fx {
    let d = tempfile::tempdir().expect("tmp");
    SynthMachine::rr_4n(8, 1024).write(d.path()).expect("write");
    let put = |rel: &str, text: &str| {
        let p = d.path().join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("dir");
        std::fs::write(p, text).expect("write");
    };
    put("proc/self/status", &format!("Name:\tx\nCpus_allowed_list:\t{affinity}\nMems_allowed_list:\t{mems}\n"));
    if let Some(c) = cpuset {
        put("proc/mounts", "cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid,nodev,noexec,relatime 0 0\n");
        put("proc/self/cgroup", "0::/job\n");
        put("sys/fs/cgroup/job/cpuset.cpus.effective", &format!("{c}\n"));
    }
    let sys = SysRoot::at(d.path());
    let topo = Topology::read(&sys).expect("read");
    Fx { _d: d, sys, topo }
}

fn placed(f: &Fx, all: bool, opts: Vec<PolicyOpt>) -> Result<Plan, String> {
    Request { opts, balancing: false, all }
        .resolve(&Context { topo: &f.topo, sys: &f.sys, kernel: Some((6, 1)) })
        .map_err(|e| e.0)
}

fn cpus_of(f: &Fx, all: bool, kind: OptKind, v: &str) -> Result<String, String> {
    placed(f, all, vec![opt(kind, v)]).map(|p| p.cpus.map(|c| c.to_list()).unwrap_or_default())
}

fn nodes_of(f: &Fx, all: bool, kind: OptKind, v: &str) -> Result<String, String> {
    placed(f, all, vec![opt(kind, v)]).map(|p| p.memory.map(|m| m.nodes.to_list()).unwrap_or_default())
}

#[test]
fn a_narrowed_affinity_is_named_and_all_lifts_it() {
    // taskset -c 0 in the root cpuset (numactl 2.0.16's rules, checked
    // against it in tests/vm_numactl.rs).
    let f = narrowed("0", "0-3", Some("0-7"));
    use OptKind::*;
    assert_eq!(
        cpus_of(&f, false, PhysCpuBind, "1"),
        Err("--physcpubind 1: CPU 1 is outside this process's CPU affinity 0 (narrowed within its cpuset 0-7 by taskset or a batch system; --all lifts it)".into())
    );
    assert_eq!(cpus_of(&f, true, PhysCpuBind, "1"), Ok("1".into()));
    assert_eq!(cpus_of(&f, false, PhysCpuBind, "all"), Ok("0".into()));
    assert_eq!(cpus_of(&f, true, PhysCpuBind, "all"), Ok("0-7".into()));
    // `!` inverts within the machine, `+` counts within the affinity.
    assert_eq!(cpus_of(&f, false, PhysCpuBind, "!0"), Ok("1-7".into()));
    assert!(cpus_of(&f, false, PhysCpuBind, "!1")
        .is_err_and(|e| e.contains("CPU 1 is outside this process's CPU affinity")));
    assert!(cpus_of(&f, false, PhysCpuBind, "+1").is_err_and(|e| e.contains("relative cpu +1 is out of range")));
    assert_eq!(cpus_of(&f, true, PhysCpuBind, "+1"), Ok("1".into()));
    // A node binding takes every CPU of the node, past the affinity.
    assert_eq!(cpus_of(&f, false, CpuNodeBind, "1"), Ok("1,5".into()));
    assert_eq!(nodes_of(&f, false, MemBind, "1"), Ok("1".into()));
    // The CPUs inside a range that the affinity lacks are skipped; its
    // ends must be in it.
    let f = narrowed("0,2,4", "0-3", Some("0-7"));
    assert_eq!(cpus_of(&f, false, PhysCpuBind, "0-2"), Ok("0,2".into()));
    assert!(cpus_of(&f, false, PhysCpuBind, "0-3").is_err_and(|e| e.contains("CPU 3 is outside")));
    // Without a cpuset to read, the message says what --all can lift.
    let f = narrowed("0", "0-3", None);
    assert_eq!(
        cpus_of(&f, false, PhysCpuBind, "3"),
        Err("--physcpubind 3: CPU 3 is outside this process's CPU affinity 0 (--all lifts the affinity, not a cpuset)"
            .into())
    );
}

#[test]
fn a_narrowed_cpuset_is_named_and_all_stays_inside_it() {
    // A cpuset of nodes 0-1 (CPUs 0,1,4,5), taskset -c 0 inside it.
    let f = narrowed("0", "0-1", Some("0-1,4-5"));
    use OptKind::*;
    assert!(cpus_of(&f, false, PhysCpuBind, "4")
        .is_err_and(|e| e.contains("outside this process's CPU affinity 0 (narrowed within its cpuset 0-1,4-5")));
    assert_eq!(
        cpus_of(&f, false, PhysCpuBind, "2"),
        Err("--physcpubind 2: CPU 2 is outside this process's cpuset (CPUs 0-1,4-5; a cpuset/cgroup restricts this process)".into())
    );
    assert_eq!(
        cpus_of(&f, true, PhysCpuBind, "2"),
        Err("--physcpubind 2: selects CPU(s) 2, none of them in this process's cpuset (CPUs 0-1,4-5; a cpuset/cgroup restricts this process)".into())
    );
    assert_eq!(cpus_of(&f, true, PhysCpuBind, "1-3"), Ok("1".into()));
    assert_eq!(cpus_of(&f, true, PhysCpuBind, "all"), Ok("0-1,4-5".into()));
    assert_eq!(cpus_of(&f, false, PhysCpuBind, "!0"), Ok("1,4-5".into()));
    assert_eq!(cpus_of(&f, false, CpuNodeBind, "1"), Ok("1,5".into()));
    assert_eq!(
        cpus_of(&f, false, CpuNodeBind, "2"),
        Err("--cpunodebind 2: node 2 is outside the allowed nodes 0-1 (a cpuset/cgroup restricts this process)".into())
    );
    assert!(cpus_of(&f, true, CpuNodeBind, "2")
        .is_err_and(|e| e.contains("selects CPU(s) 2,6, none of them in this process's cpuset")));
    assert_eq!(cpus_of(&f, true, CpuNodeBind, "all"), Ok("0-1,4-5".into()));
    // Memory: the cpuset's nodes, whatever the affinity.
    assert_eq!(
        nodes_of(&f, false, MemBind, "2"),
        Err("--membind 2: node 2 is outside the allowed nodes 0-1 (a cpuset/cgroup restricts this process)".into())
    );
    assert!(nodes_of(&f, false, MemBind, "0-2").is_err_and(|e| e.contains("node 2 is outside the allowed nodes 0-1")));
    assert!(nodes_of(&f, true, MemBind, "2").is_err_and(|e| e.contains("node 2 is outside the allowed nodes 0-1")));
    assert_eq!(nodes_of(&f, true, MemBind, "1-2"), Ok("1".into()));
    assert_eq!(nodes_of(&f, false, MemBind, "!0"), Ok("1".into()));
    assert_eq!(nodes_of(&f, true, Interleave, "all"), Ok("0-1".into()));
    assert_eq!(nodes_of(&f, false, Interleave, "+1"), Ok("1".into()));
    assert!(nodes_of(&f, true, Preferred, "1-2").is_err_and(|e| e.contains("exactly one node")));
}

#[test]
fn memory_less_nodes_keep_their_own_reason() {
    let mut f = fx();
    // A kernel never lists a memory-less node among Mems_allowed.
    f.topo.allowed.nodes = NodeSet::parse_list("0,2").expect("l");
    let e = resolve(&f, vec![opt(OptKind::MemBind, "1")]).unwrap_err().to_string();
    assert!(e.contains("node 1 has no memory (a memory-less CPU node)"), "{e}");
    // CPUs bind there (numactl 2.0.16 refuses without --all: docs/install.md).
    let p = resolve(&f, vec![opt(OptKind::CpuNodeBind, "1")]).expect("ok");
    assert_eq!(p.cpus.expect("c").to_list(), "2-3");
    // A range skips what it cannot use.
    let p = resolve(&f, vec![opt(OptKind::MemBind, "0-2")]).expect("ok");
    assert_eq!(p.memory.expect("m").nodes.to_list(), "0,2");
}

#[test]
fn balancing_needs_membind() {
    let f = fx();
    let r = Request { opts: vec![opt(OptKind::Interleave, "0")], balancing: true, all: false };
    let e = r.resolve(&Context { topo: &f.topo, sys: &f.sys, kernel: Some((6, 1)) }).unwrap_err();
    assert!(e.0.contains("only applies together with --membind"));
    let r = Request { opts: vec![opt(OptKind::MemBind, "0")], balancing: true, all: false };
    let p = r.resolve(&Context { topo: &f.topo, sys: &f.sys, kernel: Some((6, 1)) }).expect("ok");
    assert!(p.memory.expect("m").balancing);
}
