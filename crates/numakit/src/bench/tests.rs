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

fn llc(t: &mut Topology, bytes: u64) {
    t.caches = vec![crate::topo::Cache {
        level: 3,
        kind: "Unified".into(),
        size_bytes: Some(bytes),
        line_bytes: Some(64),
        cpus: CpuSet::new(),
    }];
}

#[test]
fn defaults_shrink_to_fit_free_memory_with_a_note() {
    // 1 GiB nodes, 768 MiB free: defaults may take 576 MiB of a node.
    let (_d, mut t) = machine();
    llc(&mut t, 60 << 20);
    let mut probe = Fake { topo: t.clone(), calls: vec![] };
    // STREAM's rule wants three arrays of 240 MiB: 192 MiB each fit.
    let r = run_bandwidth(&t, &mut probe, &BandwidthOptions { reps: 1, ..Default::default() }, &mut |_| {})
        .expect("the default fits");
    assert_eq!(r.array_bytes, 192 << 20);
    assert!(probe.calls.iter().all(|c| c.2 == 192 << 20));
    assert_eq!(
        r.notes,
        vec!["arrays of 192 MiB each instead of 240 MiB (4 × the last-level cache of 60 MiB, STREAM's rule): node 0 \
              has 768 MiB free and the three arrays are kept within three quarters of it; arrays smaller than 4 × \
              the last-level cache let part of the traffic hit the cache"
            .to_string()]
    );
    // The chase: 256 MiB fits; 4 × 130 MiB wants 1 GiB, 512 MiB fit.
    let r = run_latency(&t, &mut probe, &LatencyOptions { reps: 1, ..Default::default() }, &mut |_| {}).expect("ok");
    assert_eq!((r.sizes.clone(), r.notes.len()), (vec![256 << 20], 0));
    llc(&mut t, 130 << 20);
    let r = run_latency(&t, &mut probe, &LatencyOptions { reps: 1, ..Default::default() }, &mut |_| {}).expect("ok");
    assert_eq!(r.sizes, vec![512 << 20]);
    assert!(r.notes[0].starts_with("a chase buffer of 512 MiB instead of 1 GiB"), "{:?}", r.notes);
    assert!(r.notes[0].ends_with("lets part of the chase hit the cache"), "{:?}", r.notes);
    // A size the user gave is refused, not shrunk.
    let opts = LatencyOptions { sizes: Some(vec![1 << 30]), ..Default::default() };
    let e = run_latency(&t, &mut probe, &opts, &mut |_| {}).expect_err("too big");
    assert!(e.to_string().starts_with("node 0 has 768 MiB free, the buffers need 1 GiB"), "{e}");
    // Loaded: a 1 GiB chase and one 520 MiB generator shrink together (the
    // chase to a power of two, the generator to what it leaves); a given
    // chase size stays and the generator takes the rest.
    let opts = LoadedOptions { cpu_node: Some(0), delays: Some(vec![0]), ..Default::default() };
    let r = run_loaded(&t, &mut probe, &opts, &mut |_| {}).expect("ok");
    assert_eq!((r.size_bytes, r.generator_bytes), (256 << 20, 320 << 20));
    assert!(
        r.notes[0].starts_with(
            "a chase buffer of 256 MiB instead of 1 GiB and generator buffers of 320 MiB instead of 520 MiB: node 0"
        ),
        "{:?}",
        r.notes
    );
    let opts = LoadedOptions { size_bytes: Some(64 << 20), ..opts };
    let r = run_loaded(&t, &mut probe, &opts, &mut |_| {}).expect("ok");
    assert_eq!((r.size_bytes, r.generator_bytes), (64 << 20, 512 << 20));
    // Too little free memory for even the smallest default is one line.
    let mut starved = t.clone();
    for n in &mut starved.nodes {
        if let Some(m) = n.memory.as_mut() {
            m.free_bytes = Some(2 << 20);
        }
    }
    let e = run_bandwidth(&starved, &mut probe, &BandwidthOptions::default(), &mut |_| {}).expect_err("starved");
    assert_eq!(e.to_string(), "node 0 has 2 MiB free: too little for the bandwidth test's three arrays");
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

#[test]
fn sizes_from_absurd_caches_and_requests_do_not_overflow() {
    let (_d, mut t) = machine();
    llc(&mut t, u64::MAX / 2);
    t.caches.push(t.caches[0].clone());
    t.caches[1].cpus.insert(1);
    assert_eq!(total_llc_bytes(&t), Some(u64::MAX - 1));
    assert!(default_array_bytes(&t) >= u64::MAX / 2);
    assert_eq!(default_latency_bytes(&t), 1 << 63);
    let mut probe = Fake { topo: t.clone(), calls: vec![] };
    // The default shrinks to what is free; a huge size given is refused.
    let r = run_bandwidth(&t, &mut probe, &BandwidthOptions { reps: 1, ..Default::default() }, &mut |_| {});
    assert_eq!(r.expect("fits").array_bytes, 192 << 20);
    let opts = BandwidthOptions { array_bytes: Some(u64::MAX / 2), ..Default::default() };
    assert!(run_bandwidth(&t, &mut probe, &opts, &mut |_| {}).is_err());
    let opts = LoadedOptions { cpu_node: Some(0), generator_bytes: Some(u64::MAX), ..Default::default() };
    assert!(run_loaded(&t, &mut probe, &opts, &mut |_| {}).is_err());
}
