//! In every named topology of the test bed, one boot per topology:
//!
//! * `numakit topo --json` equals the topology the harness asked for (nodes,
//!   CPUs, distances; memory within the kernel's own reservations) and
//!   `numakit topo --hardware` equals what Debian's real `numactl --hardware`
//!   prints in the same guest (the free memory lines, which move from moment
//!   to moment, excepted);
//! * `numakit bench` runs the bandwidth and latency matrices with tiny sizes
//!   (numbers mean nothing under emulation) and the JSON proves the binding:
//!   every (CPU node, memory node) pair is measured, the worker threads ran
//!   exactly on the CPU node's CPUs (`getcpu` inside each worker), and every
//!   page of the buffers is on the memory node (`move_pages` query).
//!
//! Skipped when QEMU cannot run here, failed instead under `CI=true`.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use numakit_testbed::{require_vm, Output, RunSpec, Topology, Vm};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_numakit");

fn ids(v: &Value) -> BTreeSet<u32> {
    v.as_array().map(|a| a.iter().filter_map(Value::as_u64).map(|x| x as u32).collect()).unwrap_or_default()
}

fn check(name: &str) {
    require_vm!();
    let t = Topology::named(name).expect("topology");
    let nk = "target/debug/numakit";
    let checks = vec![
        ("json", format!("{nk} topo --json")),
        ("hw", format!("{nk} topo --hardware")),
        ("numactl", "numactl --hardware".to_string()),
        ("human", format!("{nk} topo")),
        ("bw", format!("{BIN} bench bandwidth --size 64K --reps 1 --json -q")),
        ("lat", format!("{BIN} bench latency --size 64K --reps 1 --time-ms 1 --json -q")),
        ("loaded", format!("{BIN} bench loaded --size 64K --generator-size 64K --delays 0 --time-ms 5 --json -q")),
    ];
    let out = Vm::run_checks(&t, &checks, RunSpec::default().timeout(Duration::from_secs(600)))
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    check_topo(name, &t, &out);
    check_bench(name, &t, &out);
}

/// `topo --json`, `topo --hardware` and `topo` against the topology and numactl.
fn check_topo(name: &str, t: &Topology, out: &BTreeMap<String, Output>) {
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
    // The text view: a tier column where the kernel tiers memory, the HMAT
    // figures where the firmware has them, every memory-only node under the
    // package of the CPU node it is local to.
    let human = &out["human"].stdout;
    let header = human.lines().find(|l| l.starts_with("NODE  CPUS")).unwrap_or_default();
    assert_eq!(header.contains(" TIER "), nodes.iter().any(|n| !n["memory_tier"].is_null()), "{name}: {human}");
    assert_eq!(human.contains("Memory performance (firmware HMAT"), t.hmat.is_some(), "{name}: {human}");
    for (i, _) in t.nodes.iter().enumerate().filter(|(_, n)| n.cpus.is_empty()) {
        let line = human.lines().find(|l| l.trim_start().starts_with(&format!("node {i}: memory only, ")));
        let line = line.unwrap_or_else(|| panic!("{name}: node {i} in the package list: {human}"));
        assert!(line.starts_with("             node") && !line.contains("no package"), "{name}: {line}");
        if name == "tiered" {
            assert!(line.ends_with("local to node 0 (HMAT)"), "{name}: {line}");
        }
    }
    let strip = |s: &str| s.lines().filter(|l| !l.contains(" free: ")).collect::<Vec<_>>().join("\n");
    assert_eq!(strip(&out["hw"].stdout), strip(&out["numactl"].stdout), "{name}: topo --hardware vs numactl");
}

/// `bench bandwidth`, `bench latency` and `bench loaded`: every pair measured, bound as asked.
fn check_bench(name: &str, t: &Topology, out: &BTreeMap<String, Output>) {
    let parse = |k: &str| -> Value {
        let o = &out[k];
        assert!(o.success(), "{name} {k}: status {} {}", o.status, o.stderr);
        serde_json::from_str(&o.stdout).unwrap_or_else(|e| panic!("{name} {k}: {e}: {}", o.stdout))
    };
    let cpus_of = |n: u32| -> BTreeSet<u32> { t.nodes[n as usize].cpus.iter().copied().collect() };
    let cpu_nodes: BTreeSet<u32> =
        (0..t.nodes.len() as u32).filter(|&n| !t.nodes[n as usize].cpus.is_empty()).collect();
    let mem_nodes: BTreeSet<u32> = (0..t.nodes.len() as u32).filter(|&n| t.nodes[n as usize].mem_mib > 0).collect();
    let want_pairs: BTreeSet<(u32, u32)> =
        cpu_nodes.iter().flat_map(|&c| mem_nodes.iter().map(move |&m| (c, m))).collect();

    let bw = parse("bw");
    let results = bw["results"].as_array().expect("results[]");
    assert_eq!(results.len(), want_pairs.len() * 4, "{name}: one result per pair and kernel");
    let mut pairs = BTreeSet::new();
    for r in results {
        let (c, m) =
            (r["cpu_node"].as_u64().expect("cpu_node") as u32, r["mem_node"].as_u64().expect("mem_node") as u32);
        pairs.insert((c, m));
        assert_eq!(
            ids(&r["cpus_seen"]),
            cpus_of(c),
            "{name}: bandwidth {c}>{m}: threads ran on exactly node {c}'s CPUs"
        );
        assert_eq!(r["threads"].as_u64(), Some(cpus_of(c).len() as u64), "{name}: {r}");
        assert_eq!(r["pages_on_node_pct"].as_f64(), Some(100.0), "{name}: bandwidth {c}>{m}: pages on node {m}");
    }
    assert_eq!(pairs, want_pairs, "{name}: bandwidth pairs");
    assert_eq!(bw["validated"], true);

    let lat = parse("lat");
    let results = lat["results"].as_array().expect("results[]");
    let got: BTreeSet<(u32, u32)> = results
        .iter()
        .map(|r| (r["cpu_node"].as_u64().unwrap_or(99) as u32, r["mem_node"].as_u64().unwrap_or(99) as u32))
        .collect();
    assert_eq!(got, want_pairs, "{name}: latency pairs");
    for r in results {
        let (c, m) = (r["cpu_node"].as_u64().unwrap_or(0) as u32, r["mem_node"].as_u64().unwrap_or(0) as u32);
        let first = cpus_of(c).into_iter().next().expect("a CPU");
        assert_eq!(ids(&r["cpus_seen"]), BTreeSet::from([first]), "{name}: latency {c}>{m} ran on CPU {first}");
        assert_eq!(r["pages_on_node_pct"].as_f64(), Some(100.0), "{name}: latency {c}>{m}: pages on node {m}");
        assert!(r["ns"].as_f64().is_some_and(|n| n > 0.0));
    }
    let firmware = lat["firmware"].as_array().expect("firmware[]");
    assert_eq!(firmware.len(), want_pairs.len(), "{name}: a firmware row per pair");
    if t.hmat.is_some() {
        assert!(firmware.iter().any(|f| f["hmat"].is_f64()), "{name}: HMAT latencies shown: {firmware:?}");
    }

    let loaded = parse("loaded");
    let c = loaded["cpu_node"].as_u64().expect("cpu_node") as u32;
    assert!(ids(&loaded["cpus_seen"]).is_subset(&cpus_of(c)), "{name}: loaded threads on node {c}");
    assert_eq!(loaded["pages_on_node_pct"].as_f64(), Some(100.0), "{name}: loaded pages");
    let points = loaded["points"].as_array().expect("points[]");
    assert_eq!(points.len(), if cpus_of(c).len() > 1 { 2 } else { 1 }, "{name}: {points:?}");
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
