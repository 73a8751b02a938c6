//! `numakit bench` inside multi-node guests (QEMU test bed): on every named
//! topology, one boot runs the bandwidth and latency matrices with tiny
//! sizes (numbers mean nothing under emulation) and the JSON proves the
//! binding: every (CPU node, memory node) pair is measured, the worker
//! threads ran exactly on the CPU node's CPUs (`getcpu` inside each
//! worker), and every page of the buffers is on the memory node
//! (`move_pages` query). Skipped when QEMU cannot run here, failed instead
//! under `CI=true`.

use std::collections::BTreeSet;
use std::time::Duration;

use numakit_testbed::{require_vm, RunSpec, Topology, Vm};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_numakit");

fn ids(v: &Value) -> BTreeSet<u32> {
    v.as_array().map(|a| a.iter().filter_map(Value::as_u64).map(|x| x as u32).collect()).unwrap_or_default()
}

fn check(name: &str) {
    require_vm!();
    let t = Topology::named(name).expect("named topology");
    let checks = vec![
        ("bw", format!("{BIN} bench bandwidth --size 64K --reps 1 --json -q")),
        ("lat", format!("{BIN} bench latency --size 64K --reps 1 --time-ms 1 --json -q")),
        ("loaded", format!("{BIN} bench loaded --size 64K --generator-size 64K --delays 0 --time-ms 5 --json -q")),
    ];
    let out = Vm::run_checks(&t, &checks, RunSpec::default().timeout(Duration::from_secs(600)))
        .unwrap_or_else(|e| panic!("{name}: {e}"));
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
fn vm_bench_1n() {
    check("1n");
}

#[test]
fn vm_bench_2s_intel_ht() {
    check("2s-intel-ht");
}

#[test]
fn vm_bench_4n_rr() {
    check("4n-rr");
}

#[test]
fn vm_bench_amd_8n() {
    check("amd-8n");
}

#[test]
fn vm_bench_tiered() {
    check("tiered");
}

#[test]
fn vm_bench_memless() {
    check("memless");
}
