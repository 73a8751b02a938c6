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

#[test]
fn cpuset_restriction_is_named() {
    let mut f = fx();
    f.topo.allowed.nodes = NodeSet::parse_list("0").expect("l");
    f.topo.allowed.cpus = CpuSet::parse_list("0-1").expect("l");
    let e = resolve(&f, vec![opt(OptKind::MemBind, "2")]).unwrap_err().to_string();
    assert_eq!(e, "--membind 2: node 2 is outside the allowed nodes 0 (a cpuset/cgroup restricts this process)");
    let e = resolve(&f, vec![opt(OptKind::PhysCpuBind, "3")]).unwrap_err().to_string();
    assert!(e.contains("outside the allowed CPUs 0-1"), "{e}");
    // `+` is relative to the allowed set, `!` inverts within it.
    let p = resolve(&f, vec![opt(OptKind::PhysCpuBind, "+1")]).expect("ok");
    assert_eq!(p.cpus.expect("c").to_list(), "1");
    let p = resolve(&f, vec![opt(OptKind::Interleave, "all")]).expect("ok");
    assert_eq!(p.memory.expect("m").nodes.to_list(), "0");
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
