//! The drivers over a synthetic four-node machine with a deterministic
//! stand-in probe: pairs, defaults, memory checks, progress, and the
//! arithmetic all the way to the reports.

use super::runner::{RawBandwidth, RawLatency, RawLoaded, RawLoadedPoint};
use super::*;
use crate::sets::CpuSet;
use crate::sys::SysRoot;
use crate::topo::synth::SynthMachine;

/// Times that follow the distance: remote memory is slower.
struct Fake {
    topo: Topology,
    calls: Vec<(u32, u32, u64)>,
}

impl Probe for Fake {
    fn bandwidth(&mut self, pair: &Pair, p: &BandwidthParams) -> Result<RawBandwidth, BenchError> {
        self.calls.push((pair.cpu_node, pair.mem_node, p.array_bytes));
        let d = f64::from(self.topo.distance(pair.cpu_node, pair.mem_node).unwrap_or(10)) / 10.0;
        let times = p
            .kernels
            .iter()
            .map(|&k| (k, (0..p.reps).map(|i| d * 0.001 * (1.0 + i as f64 / 10.0)).collect()))
            .collect();
        Ok(RawBandwidth {
            threads: p.threads.unwrap_or(pair.cpus.len()),
            elements: p.array_bytes / 8,
            times,
            cpus_seen: pair.cpus.clone(),
            pages_on_node_pct: Some(100.0),
        })
    }

    fn latency(&mut self, pair: &Pair, size: u64, p: &LatencyParams) -> Result<RawLatency, BenchError> {
        self.calls.push((pair.cpu_node, pair.mem_node, size));
        let d = f64::from(self.topo.distance(pair.cpu_node, pair.mem_node).unwrap_or(10));
        Ok(RawLatency {
            cpu: pair.cpus.first().unwrap_or(0),
            ns: (0..p.reps).map(|i| d * 10.0 + i as f64).collect(),
            cpus_seen: pair.cpus.iter().take(1).collect(),
            pages_on_node_pct: Some(100.0),
        })
    }

    fn loaded(&mut self, pair: &Pair, p: &LoadedParams) -> Result<RawLoaded, BenchError> {
        self.calls.push((pair.cpu_node, pair.mem_node, p.size_bytes));
        Ok(RawLoaded {
            latency_cpu: pair.cpus.first().unwrap_or(0),
            generator_cpus: pair.cpus.iter().skip(1).collect(),
            points: p
                .delays
                .iter()
                .enumerate()
                .map(|(i, &delay)| RawLoadedPoint {
                    delay,
                    generators: if delay.is_some() { p.generators.unwrap_or(0) } else { 0 },
                    bytes: i as u64 * 1_000_000_000,
                    seconds: 1.0,
                    ns: 100.0 + i as f64 * 10.0,
                })
                .collect(),
            cpus_seen: pair.cpus.clone(),
            pages_on_node_pct: Some(100.0),
        })
    }
}

fn machine() -> (tempfile::TempDir, Topology) {
    let dir = tempfile::tempdir().expect("dir");
    SynthMachine::rr_4n(8, 1024).write(dir.path()).expect("write");
    let mut t = Topology::read(&SysRoot::at(dir.path())).expect("read");
    t.source.live = true; // as if it were this machine
    (dir, t)
}

fn nodes(list: &str) -> NodeSet {
    NodeSet::parse_list(list).expect("list")
}

#[test]
fn pairs_cover_every_usable_node_and_name_bad_ones() {
    let (_d, t) = machine();
    let all = pairs(&t, None, None).expect("pairs");
    assert_eq!(all.len(), 16);
    assert_eq!((all[1].cpu_node, all[1].mem_node), (0, 1));
    assert_eq!(all[0].cpus, CpuSet::parse_list("0,4").expect("list"));
    let some = pairs(&t, Some(&nodes("1")), Some(&nodes("2-3"))).expect("pairs");
    assert_eq!(some.iter().map(|p| (p.cpu_node, p.mem_node)).collect::<Vec<_>>(), vec![(1, 2), (1, 3)]);
    let e = pairs(&t, Some(&nodes("7")), None).expect_err("no node 7");
    assert_eq!(e.to_string(), "node 7 does not exist");
    let mut dump = t.clone();
    dump.source.live = false;
    assert!(pairs(&dump, None, None).expect_err("dump").to_string().contains("dump of another machine"));
    let mut memless = t.clone();
    memless.nodes[2].has_memory = false;
    let e = pairs(&memless, None, Some(&nodes("2"))).expect_err("memory-less");
    assert_eq!(e.to_string(), "node 2 has no memory this process may use");
    assert_eq!(pairs(&memless, None, None).expect("pairs").len(), 12);
}

#[test]
fn defaults_follow_the_caches() {
    let (_d, mut t) = machine();
    t.caches = vec![
        crate::topo::Cache {
            level: 2,
            kind: "Unified".into(),
            size_bytes: Some(1 << 20),
            line_bytes: Some(64),
            cpus: CpuSet::new(),
        },
        crate::topo::Cache {
            level: 3,
            kind: "Unified".into(),
            size_bytes: Some(30 << 20),
            line_bytes: Some(64),
            cpus: CpuSet::new(),
        },
        crate::topo::Cache {
            level: 3,
            kind: "Unified".into(),
            size_bytes: Some(30 << 20),
            line_bytes: Some(64),
            cpus: CpuSet::new(),
        },
    ];
    assert_eq!(total_llc_bytes(&t), Some(60 << 20));
    assert_eq!(default_array_bytes(&t), 240 << 20);
    assert_eq!(default_latency_bytes(&t), 256 << 20);
    t.caches[2].size_bytes = Some(100 << 20);
    assert_eq!(default_latency_bytes(&t), 1 << 30);
    t.caches.clear();
    assert_eq!((total_llc_bytes(&t), default_array_bytes(&t)), (None, 128 << 20));
    let sweep = size_sweep(16 << 10, 1 << 30);
    assert_eq!((sweep.len(), sweep[0], sweep[16]), (17, 16 << 10, 1 << 30));
    assert_eq!(size_sweep(3000, 8192), vec![4096, 8192]);
}

#[test]
fn bandwidth_matrix_from_a_stand_in() {
    let (_d, t) = machine();
    let mut probe = Fake { topo: t.clone(), calls: vec![] };
    let opts = BandwidthOptions { array_bytes: Some(8_000_000), reps: 3, ..BandwidthOptions::default() };
    let mut steps = Vec::new();
    let r = run_bandwidth(&t, &mut probe, &opts, &mut |s| steps.push((s.done, s.total))).expect("runs");
    assert_eq!(r.results.len(), 16 * 4);
    assert_eq!(steps.first(), Some(&(0, 16)));
    assert_eq!(steps.last(), Some(&(16, 16)));
    assert!(probe.calls.iter().all(|c| c.2 == 8_000_000));
    // Local triad: 24 bytes * 10^6 elements in 1 ms at best = 24 GB/s;
    // distance 20 doubles the time.
    let triad = |c: u32, m: u32| {
        r.results.iter().find(|x| x.cpu_node == c && x.mem_node == m && x.kernel == Kernel::Triad).expect("result")
    };
    assert!((triad(0, 0).best_gbps - 24.0).abs() < 1e-9);
    assert!((triad(0, 1).best_gbps - 12.0).abs() < 1e-9);
    assert!((triad(0, 0).median_gbps - 24.0 / 1.1).abs() < 1e-9);
    // The stand-in follows SLIT exactly: nothing disagrees.
    assert_eq!(r.firmware.len(), 16);
    assert!(r.firmware.iter().all(|f| !f.disagrees && f.measure == Measure::Bandwidth), "{:?}", r.firmware);
    assert!(r.validated);
    let e = run_bandwidth(&t, &mut probe, &BandwidthOptions { reps: 0, ..opts.clone() }, &mut |_| {}).expect_err("0");
    assert!(matches!(e, BenchError::Usage(_)));
}

#[test]
fn memory_is_checked_before_anything_runs() {
    let (_d, t) = machine();
    let mut probe = Fake { topo: t.clone(), calls: vec![] };
    // 1 GiB nodes with 75% free: three 512 MiB arrays do not fit.
    let opts = BandwidthOptions { array_bytes: Some(512 << 20), ..BandwidthOptions::default() };
    let e = run_bandwidth(&t, &mut probe, &opts, &mut |_| {}).expect_err("too big");
    assert!(e.to_string().starts_with("node 0 has 768 MiB free, the buffers need 1.5 GiB"), "{e}");
    assert!(probe.calls.is_empty());
}

#[test]
fn latency_sweep_from_a_stand_in() {
    let (_d, t) = machine();
    let mut probe = Fake { topo: t.clone(), calls: vec![] };
    let opts = LatencyOptions {
        cpu_nodes: Some(nodes("0")),
        sizes: Some(vec![16 << 10, 1 << 20]),
        reps: 3,
        ..LatencyOptions::default()
    };
    let r = run_latency(&t, &mut probe, &opts, &mut |_| {}).expect("runs");
    assert_eq!(r.results.len(), 4 * 2);
    assert_eq!(r.sizes, vec![16 << 10, 1 << 20]);
    let at = |m: u32| r.results.iter().find(|x| x.mem_node == m && x.size_bytes == 1 << 20).expect("result");
    assert_eq!((at(0).ns, at(0).best_ns), (101.0, 100.0));
    assert_eq!(at(2).ns, 301.0);
    assert_eq!(r.firmware.len(), 4);
    assert!(r.firmware.iter().all(|f| f.measure == Measure::Latency && f.local_node == 0));
}

#[test]
fn loaded_curve_from_a_stand_in() {
    let (_d, t) = machine();
    let mut probe = Fake { topo: t.clone(), calls: vec![] };
    let opts = LoadedOptions {
        cpu_node: Some(1),
        size_bytes: Some(1 << 20),
        generator_bytes: Some(1 << 20),
        delays: Some(vec![100, 0]),
        ..LoadedOptions::default()
    };
    let r = run_loaded(&t, &mut probe, &opts, &mut |_| {}).expect("runs");
    assert_eq!((r.cpu_node, r.mem_node), (1, 1), "the local pair");
    assert_eq!(r.points.iter().map(|p| p.delay).collect::<Vec<_>>(), vec![None, Some(100), Some(0)]);
    assert_eq!(r.points.iter().map(|p| p.generators).collect::<Vec<_>>(), vec![0, 1, 1]);
    assert_eq!(r.points[2].bandwidth_gbps, 2.0);
    let opts = LoadedOptions { mem_node: Some(3), ..opts };
    let r = run_loaded(&t, &mut probe, &opts, &mut |_| {}).expect("runs");
    assert_eq!((r.cpu_node, r.mem_node), (1, 3));
}
