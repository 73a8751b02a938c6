//! In every named topology of the test bed, `numakit topo --json` equals the
//! topology the harness asked for (nodes, CPUs, distances; memory within the
//! kernel's own reservations) and `numakit topo --hardware` equals what
//! Debian's real `numactl --hardware` prints in the same guest (the free
//! memory lines, which move from moment to moment, excepted).

use numakit_testbed::{require_vm, RunSpec, Topology, Vm};
use serde_json::Value;

fn check(name: &str) {
    require_vm!();
    let t = Topology::named(name).expect("topology");
    let nk = "target/debug/numakit";
    let checks = vec![
        ("json", format!("{nk} topo --json")),
        ("hw", format!("{nk} topo --hardware")),
        ("numactl", "numactl --hardware".to_string()),
        ("human", format!("{nk} topo")),
    ];
    let out = Vm::run_checks(&t, &checks, RunSpec::default()).unwrap_or_else(|e| panic!("{name}: {e}"));
    for k in ["json", "hw", "numactl", "human"] {
        assert!(out[k].success(), "{name}: {k}: {:?}", out[k]);
    }
    let v: Value = serde_json::from_str(&out["json"].stdout).expect("json");
    let nodes = v["nodes"].as_array().expect("nodes");
    assert_eq!(nodes.len(), t.nodes.len(), "{name}: node count");
    for (i, (n, want)) in nodes.iter().zip(&t.nodes).enumerate() {
        assert_eq!(n["id"], i as u64, "{name}");
        let cpus: Vec<u32> =
            n["cpus"].as_array().expect("cpus").iter().map(|c| c.as_u64().expect("u") as u32).collect();
        assert_eq!(cpus, want.cpus, "{name}: node {i} cpus");
        assert_eq!(n["has_cpu"], !want.cpus.is_empty(), "{name}: node {i} has_cpu");
        assert_eq!(n["has_memory"], want.mem_mib > 0, "{name}: node {i} has_memory");
        let total = n["memory"]["total_bytes"].as_u64().unwrap_or(0);
        let req = want.mem_mib << 20;
        assert!(total <= req && total + (req / 10).max(64 << 20) >= req, "{name}: node {i} memory {total} vs {req}");
        let row: Vec<u32> =
            n["distances"].as_array().expect("d").iter().map(|d| d.as_u64().expect("u") as u32).collect();
        assert_eq!(row, t.distances[i], "{name}: node {i} distances");
    }
    assert_eq!(v["source"]["live"], true);
    if t.hmat.is_some() {
        // The CPU-less memory node reports HMAT access attributes.
        assert!(nodes.iter().any(|n| !n["access"].as_array().expect("a").is_empty()), "{name}: HMAT access classes");
    }
    let strip = |s: &str| s.lines().filter(|l| !l.contains(" free: ")).collect::<Vec<_>>().join("\n");
    assert_eq!(strip(&out["hw"].stdout), strip(&out["numactl"].stdout), "{name}: topo --hardware vs numactl");
}

#[test]
fn vm_topo_1n() {
    check("1n");
}
#[test]
fn vm_topo_2s_intel_ht() {
    check("2s-intel-ht");
}
#[test]
fn vm_topo_4n_rr() {
    check("4n-rr");
}
#[test]
fn vm_topo_amd_8n() {
    check("amd-8n");
}
#[test]
fn vm_topo_tiered() {
    check("tiered");
}
#[test]
fn vm_topo_memless() {
    check("memless");
}
