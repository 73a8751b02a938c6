//! `numakit stat --cgroup` in a real 4-node kernel (QEMU test bed, `4n-rr`,
//! cgroup v2 at `/sys/fs/cgroup`), one boot of a few seconds: a Slurm-like
//! job cgroup (`/system.slice/slurmstepd.scope/job_42/step_0`, memory and
//! cpuset controllers on) holding a helper that runs on node 2 with 64 MiB
//! it wrote there. The report must agree with the kernel's own files read
//! around it: the charge per node with `memory.numa_stat`, every counter
//! with `memory.stat` (a counter this kernel lacks is `null`), the helper's
//! bytes with its `numa_maps`; locality 100%.
//!
//! AutoNUMA is off in the guest so that nothing moves pages between the
//! readings. Skipped when QEMU cannot run here, failed instead under
//! `CI=true`.

use std::collections::BTreeMap;
use std::time::Duration;

use numakit_testbed::{require_vm, RunSpec, Topology, Vm};
use serde_json::Value;

const NK: &str = env!("CARGO_BIN_EXE_numakit");
const JOB: &str = "/system.slice/slurmstepd.scope/job_42";

fn checks() -> Vec<(String, String)> {
    let setup = format!(
        "echo 0 > /proc/sys/kernel/numa_balancing\n\
         C=/sys/fs/cgroup; J=$C{JOB}; mkdir -p $J/step_0\n\
         for d in $C $C/system.slice $C/system.slice/slurmstepd.scope $J; do \
           echo '+memory +cpuset' > $d/cgroup.subtree_control || exit 1; done\n\
         sh -c \"echo \\$\\$ > $J/step_0/cgroup.procs; exec {NK} run -N 2 -m 2 -- /usr/bin/python3 -c \\\"\n\
import time\nb = bytearray(64 << 20)\nfor i in range(0, len(b), 4096): b[i] = 1\n\
open('/tmp/ready', 'w').write('1')\ntime.sleep(900)\\\"\" >/dev/null 2>&1 &\n\
         for i in $(seq 300); do [ -e /tmp/ready ] && break; sleep 0.1; done\n\
         cat $J/step_0/cgroup.procs"
    );
    let report = format!(
        "J=/sys/fs/cgroup{JOB}\n\
         cat $J/memory.numa_stat; echo '=== json'\n\
         {NK} stat --cgroup {JOB} --json; echo '=== after'\n\
         cat $J/memory.numa_stat; echo '=== stat'\n\
         cat $J/memory.stat; echo '=== maps'\n\
         cat /proc/$(cat $J/step_0/cgroup.procs)/numa_maps"
    );
    vec![
        ("setup".into(), setup),
        ("report".into(), report),
        ("step".into(), format!("{NK} stat --cgroup 0::{JOB}/step_0/ --json")),
        ("stop".into(), format!("kill $(cat /sys/fs/cgroup{JOB}/step_0/cgroup.procs)")),
    ]
}

/// `memory.numa_stat` text: type → node → bytes.
fn numa_stat(text: &str) -> BTreeMap<String, BTreeMap<u64, u64>> {
    text.lines()
        .filter_map(|l| {
            let mut t = l.split_whitespace();
            let key = t.next()?.to_string();
            let nodes = t
                .filter_map(|tok| {
                    let (n, v) = tok.strip_prefix('N')?.split_once('=')?;
                    Some((n.parse().ok()?, v.parse().ok()?))
                })
                .collect();
            Some((key, nodes))
        })
        .collect()
}

/// Bytes per node in `numa_maps` text (each mapping's own page size).
fn maps_bytes(text: &str) -> BTreeMap<u64, u64> {
    let mut out = BTreeMap::new();
    for l in text.lines() {
        let kb: u64 =
            l.split_whitespace().find_map(|t| t.strip_prefix("kernelpagesize_kB=")?.parse().ok()).unwrap_or(4);
        for t in l.split_whitespace() {
            if let Some((n, v)) = t.strip_prefix('N').and_then(|r| r.split_once('=')) {
                if let (Ok(n), Ok(v)) = (n.parse::<u64>(), v.parse::<u64>()) {
                    *out.entry(n).or_default() += v * kb * 1024;
                }
            }
        }
    }
    out
}

#[test]
fn vm_stat_cgroup_of_a_job() {
    require_vm!();
    let topo = Topology::named("4n-rr").expect("named topology");
    let out = Vm::run_checks(&topo, &checks(), RunSpec::default().timeout(Duration::from_secs(300)))
        .unwrap_or_else(|e| panic!("guest: {e}"));
    let get = |k: &str| out[k].stdout.clone();
    // The helper's PID, from the step's cgroup.procs: it started there.
    let started = get("setup");
    assert!(started.trim().parse::<u32>().is_ok(), "setup: {started:?} {}", out["setup"].stderr);

    let report = get("report");
    let (before, rest) = report.split_once("=== json\n").expect("json marker");
    let (json, rest) = rest.split_once("=== after\n").expect("after marker");
    let (after, rest) = rest.split_once("=== stat\n").expect("stat marker");
    let (memory_stat, maps) = rest.split_once("=== maps\n").expect("maps marker");
    let v: Value = serde_json::from_str(json.trim()).unwrap_or_else(|e| panic!("{e}: {json}"));
    assert_eq!(json.trim().lines().count(), 1, "{json}");
    assert_eq!((v["job_id"].as_u64(), v["step"].is_null(), v["processes"].as_u64()), (Some(42), true, Some(1)), "{v}");
    assert_eq!(v["cpus_nodes"], serde_json::json!([2]), "{v}");
    assert_eq!(v["locality"].as_f64(), Some(1.0), "{v}");
    assert!(v["own_bytes"].as_u64().unwrap_or(0) >= 64 << 20, "{v}");

    // The charge per node: what memory.numa_stat said just before and
    // just after (the helper sleeps: the same, but bracketed anyway).
    let (b, a) = (numa_stat(before), numa_stat(after));
    for (kind, field) in [("anon", "charged_anon_bytes"), ("file", "charged_file_bytes")] {
        for n in 0..4u64 {
            let ours = v["nodes"][n as usize][field].as_u64().expect("charged");
            let (x, y) = (b[kind][&n], a[kind][&n]);
            assert!((x.min(y)..=x.max(y)).contains(&ours), "{kind} N{n}: {ours} not within {x}..{y}");
        }
        assert_eq!(v["numa_stat"][kind]["2"].as_u64(), v["nodes"][2][field].as_u64());
    }
    assert!(v["nodes"][2]["charged_anon_bytes"].as_u64().unwrap_or(0) >= 64 << 20, "{v}");

    // The helper's numa_maps (read after the report; it sleeps).
    let maps = maps_bytes(maps);
    assert_eq!(v["nodes"][2]["bytes"].as_u64(), maps.get(&2).copied(), "{v}");

    // Every counter of memory.stat, and null for those it lacks.
    let stat: BTreeMap<&str, u64> = memory_stat
        .lines()
        .filter_map(|l| {
            let (k, x) = l.split_once(' ')?;
            Some((k, x.parse().ok()?))
        })
        .collect();
    let counters = v["counters"].as_object().expect("counters");
    for (k, c) in counters {
        match stat.get(k.as_str()) {
            Some(x) => assert_eq!(c.as_u64(), Some(*x), "{k}"),
            None => assert!(c.is_null(), "{k}: {c} but memory.stat has none"),
        }
    }
    assert!(counters["numa_pages_migrated"].is_u64(), "this kernel counts it per cgroup: {memory_stat}");
    for k in ["numa_hit", "numa_miss", "other_node", "numa_hint_faults_local"] {
        assert!(counters[k].is_null() && !stat.contains_key(k), "{k}");
    }

    let s: Value = serde_json::from_str(get("step").trim()).unwrap_or_else(|e| panic!("{e}: {}", get("step")));
    assert_eq!(
        (s["cgroup"].as_str(), s["step"].as_str()),
        (Some("/system.slice/slurmstepd.scope/job_42/step_0"), Some("0"))
    );
    assert_eq!(s["processes"].as_u64(), Some(1), "{s}");
    assert_eq!(s["folders"].as_u64(), Some(1), "{s}");
    assert_eq!(v["folders"].as_u64(), Some(2), "{v}");
}
