//! A cgroup's NUMA report ([`JobReport`]) for people ([`text`]) and as one
//! JSON line a site can collect ([`json()`], schema [`SCHEMA`], documented in
//! docs/stat.md). Either may carry the counters' growth since a snapshot
//! taken at step start ([`CgroupCounters::delta`]). Returns strings; never
//! reads or prints.
//!
//! [`CgroupCounters::delta`]: crate::stats::cgroup::CgroupCounters::delta

use std::fmt::Write as _;

use serde_json::{json, Map, Value};

use crate::stats::cgroup::{CgroupCounters, JobReport, NOT_PER_CGROUP};
use crate::units::human_bytes;

/// The `schema` of [`json()`]: bumped only when a field changes meaning or
/// goes away (fields may be added).
pub const SCHEMA: &str = "numakit-cgroup-report/1";

fn pct(r: Option<f64>) -> String {
    r.map_or_else(|| "n/a".to_string(), |r| format!("{:.1}%", r * 100.0))
}

fn opt_bytes(b: Option<u64>) -> String {
    b.map_or_else(|| "-".to_string(), human_bytes)
}

/// The report for people: where the cgroup runs, memory per node (its
/// processes' and the kernel's charge), locality, and the counters, each
/// with the file it comes from. `delta`: the counters' growth since start.
pub fn text(r: &JobReport, delta: Option<&[(String, u64)]>) -> String {
    let mut o = String::new();
    let job = match &r.slurm {
        Some(s) => match &s.step {
            Some(step) => format!(" (Slurm job {}, step {step})", s.job_id),
            None => format!(" (Slurm job {})", s.job_id),
        },
        None => String::new(),
    };
    let _ = writeln!(o, "cgroup {}{job}", r.cgroup.path);
    let mut gone = Vec::new();
    if !r.exited.is_empty() {
        gone.push(format!("{} exited while read", r.exited.len()));
    }
    if !r.unreadable.is_empty() {
        gone.push(format!("{} unreadable (permissions)", r.unreadable.len()));
    }
    let gone = if gone.is_empty() { String::new() } else { format!("; {}", gone.join(", ")) };
    let _ = writeln!(
        o,
        "  {} process{} in {} cgroup folder{}{gone}",
        r.processes.len(),
        if r.processes.len() == 1 { "" } else { "es" },
        r.folders,
        if r.folders == 1 { "" } else { "s" }
    );
    let runs = if r.cpus_nodes.is_empty() { "-".to_string() } else { format!("node {}", r.cpus_nodes.to_list()) };
    let allowed = match (&r.allowed_cpus, &r.allowed_nodes) {
        (Some(c), Some(n)) => format!("CPUs {} (node {}, {})", c.to_list(), n.to_list(), r.allowed_cpus_file),
        _ => format!("CPUs unknown (no {})", r.allowed_cpus_file),
    };
    let _ = writeln!(o, "  runs on {runs} (its threads' last CPUs); allowed {allowed}");
    let _ = writeln!(o);
    let charged = r.numa_stat.is_some();
    let _ = write!(o, "  {:>4}  {:>14}", "node", "processes");
    if charged {
        let _ = write!(o, "  {:>14}  {:>14}", "charged anon", "charged file");
    }
    let _ = writeln!(o);
    for n in &r.nodes {
        let _ = write!(o, "  {:>4}  {:>14}", n.id, human_bytes(n.bytes));
        if charged {
            let _ = write!(o, "  {:>14}  {:>14}", opt_bytes(n.charged_anon_bytes), opt_bytes(n.charged_file_bytes));
        }
        let _ = writeln!(o);
    }
    let sum = |f: fn(&crate::stats::cgroup::JobNode) -> Option<u64>| -> Option<u64> {
        r.nodes.iter().map(f).try_fold(0u64, |a, b| b.map(|b| a.saturating_add(b)))
    };
    let _ = write!(o, "  {:>4}  {:>14}", "all", human_bytes(r.total_bytes));
    if charged {
        let _ = write!(
            o,
            "  {:>14}  {:>14}",
            opt_bytes(sum(|n| n.charged_anon_bytes)),
            opt_bytes(sum(|n| n.charged_file_bytes))
        );
    }
    let _ = writeln!(o);
    let _ =
        writeln!(o, "  processes: Σ /proc/PID/numa_maps of its processes (a page shared by several counts for each)");
    if charged {
        let _ = writeln!(o, "  charged: memory.numa_stat, what the kernel charged to the cgroup (each page once)");
    } else {
        let _ = writeln!(o, "  charged: no memory.numa_stat (no memory controller on this cgroup)");
    }
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "  locality {}: {} of {} own memory (file pages aside) on the nodes its threads run on",
        pct(r.locality),
        human_bytes(r.own_local_bytes),
        human_bytes(r.own_bytes)
    );
    let _ = writeln!(o);
    if r.counters.memory_stat {
        let _ = writeln!(o, "  counters (memory.stat, the cgroup and those below it):");
    } else {
        let _ = writeln!(o, "  counters: no memory.stat (no memory controller on this cgroup)");
    }
    for (name, v) in r.counters.named() {
        let grew = delta.and_then(|d| d.iter().find(|(k, _)| *k == name)).map(|(_, g)| format!("  (+{g} since start)"));
        match v {
            Some(v) => {
                let _ = writeln!(o, "    {name:<22} {v:>12}{}", grew.unwrap_or_default());
            }
            None if r.counters.memory_stat => {
                let _ = writeln!(o, "    {name:<22} {:>12}  (not in this memory.stat)", "-");
            }
            None => {}
        }
    }
    let _ = writeln!(o, "  not counted per cgroup by Linux: {}", NOT_PER_CGROUP.join(", "));
    o
}

/// The report as one JSON object (print it with `serde_json::to_string`
/// for one line). Every counter of [`crate::stats::cgroup::COUNTERS`] and
/// [`NOT_PER_CGROUP`] is present, `null` when the kernel does not count it
/// for this cgroup; `delta` only when a start snapshot was given.
pub fn json(r: &JobReport, delta: Option<&[(String, u64)]>) -> Value {
    let nodes: Vec<Value> = r
        .nodes
        .iter()
        .map(|n| {
            json!({
                "id": n.id,
                "bytes": n.bytes,
                "charged_anon_bytes": n.charged_anon_bytes,
                "charged_file_bytes": n.charged_file_bytes,
            })
        })
        .collect();
    let mut counters = Map::new();
    for (name, v) in r.counters.named() {
        counters.insert(name, json!(v));
    }
    for name in NOT_PER_CGROUP {
        counters.insert(name.to_string(), Value::Null);
    }
    let numa_stat = r.numa_stat.as_ref().map(|s| {
        let mut m = Map::new();
        for l in &s.lines {
            let per: Map<String, Value> = l.nodes.iter().map(|(n, b)| (n.to_string(), json!(b))).collect();
            m.insert(l.key.clone(), Value::Object(per));
        }
        Value::Object(m)
    });
    let mut v = json!({
        "schema": SCHEMA,
        "cgroup": r.cgroup.path,
        "job_id": r.slurm.as_ref().map(|s| s.job_id),
        "step": r.slurm.as_ref().and_then(|s| s.step.clone()),
        "processes": r.processes.len(),
        "exited": r.exited.len(),
        "unreadable": r.unreadable.len(),
        "folders": r.folders,
        "cpus_nodes": r.cpus_nodes,
        "allowed_cpus": r.allowed_cpus.as_ref().map(|c| c.to_list()),
        "allowed_nodes": r.allowed_nodes,
        "allowed_cpus_file": r.allowed_cpus_file,
        "nodes": nodes,
        "total_bytes": r.total_bytes,
        "own_bytes": r.own_bytes,
        "own_local_bytes": r.own_local_bytes,
        "locality": r.locality,
        "memory_stat": r.counters.memory_stat,
        "counters": counters,
        "numa_stat": numa_stat,
    });
    if let (Some(d), Value::Object(o)) = (delta, &mut v) {
        let m: Map<String, Value> = d.iter().map(|(k, g)| (k.clone(), json!(g))).collect();
        o.insert("delta".to_string(), Value::Object(m));
    }
    v
}

/// The cgroup path and counters of an earlier [`json()`] report (a start
/// snapshot kept in a file), for [`CgroupCounters::delta`]. `Err` names
/// what is missing; `null` counters are left out.
///
/// [`CgroupCounters::delta`]: crate::stats::cgroup::CgroupCounters::delta
pub fn start_from_json(v: &Value) -> Result<(String, CgroupCounters), String> {
    if v["schema"] != SCHEMA {
        return Err(format!("not a numakit cgroup report (no \"schema\": \"{SCHEMA}\")"));
    }
    let cgroup = v["cgroup"].as_str().ok_or("no \"cgroup\"")?.to_string();
    let counters = v["counters"].as_object().ok_or("no \"counters\"")?;
    let lines = counters.iter().filter_map(|(k, v)| Some((k.clone(), v.as_u64()?))).collect();
    Ok((cgroup, CgroupCounters { memory_stat: v["memory_stat"].as_bool().unwrap_or(false), lines }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sets::{CpuSet, NodeSet};
    use crate::stats::cgroup::{parse_memory_stat, parse_numa_stat, CgroupDir, JobNode, SlurmIds};

    fn report(with_memory: bool) -> JobReport {
        let counters = if with_memory {
            parse_memory_stat("numa_pages_migrated 10\nnuma_hint_faults 4\n").expect("stat")
        } else {
            Default::default()
        };
        JobReport {
            cgroup: CgroupDir { path: "/s/job_42/step_0".into(), folder: "sys/fs/cgroup/s/job_42/step_0".into() },
            slurm: Some(SlurmIds { job_id: 42, step: Some("0".into()) }),
            folders: 3,
            processes: vec![],
            exited: vec![7],
            unreadable: vec![],
            nodes: vec![
                JobNode {
                    id: 0,
                    bytes: 3 << 20,
                    charged_anon_bytes: with_memory.then_some(1 << 20),
                    charged_file_bytes: with_memory.then_some(0),
                },
                JobNode {
                    id: 1,
                    bytes: 1 << 20,
                    charged_anon_bytes: with_memory.then_some(2 << 20),
                    charged_file_bytes: with_memory.then_some(4096),
                },
            ],
            total_bytes: 4 << 20,
            own_bytes: 4 << 20,
            own_local_bytes: 3 << 20,
            locality: Some(0.75),
            cpus_nodes: [0].into_iter().collect::<NodeSet>(),
            allowed_cpus: Some(CpuSet::parse_list("0-3").expect("cpus")),
            allowed_cpus_file: "cpuset.cpus.effective",
            allowed_nodes: Some([0, 1].into_iter().collect()),
            numa_stat: with_memory
                .then(|| parse_numa_stat("anon N0=1048576 N1=2097152\nfile N0=0 N1=4096\n", 4096).expect("ns")),
            counters,
        }
    }

    #[test]
    fn one_json_line_with_unknowns_null() {
        let start = parse_memory_stat("numa_pages_migrated 3\nnuma_hint_faults 4\n").expect("stat");
        let r = report(true);
        let d = r.counters.delta(&start);
        let line = serde_json::to_string(&json(&r, Some(&d))).expect("json");
        assert!(!line.contains('\n'));
        let v: Value = serde_json::from_str(&line).expect("parse");
        assert_eq!(v["schema"], SCHEMA);
        assert_eq!((v["job_id"].as_u64(), v["step"].as_str()), (Some(42), Some("0")));
        assert_eq!(v["locality"].as_f64(), Some(0.75));
        assert_eq!(v["allowed_cpus"], "0-3");
        assert_eq!(v["cpus_nodes"], json!([0]));
        assert_eq!(v["nodes"][1]["charged_anon_bytes"].as_u64(), Some(2 << 20));
        assert_eq!(v["counters"]["numa_pages_migrated"].as_u64(), Some(10));
        assert!(v["counters"]["numa_pte_updates"].is_null() && v["counters"]["numa_hit"].is_null());
        assert!(v["counters"].as_object().expect("map").contains_key("other_node"));
        assert_eq!(v["delta"], json!({ "numa_pages_migrated": 7, "numa_hint_faults": 0 }));
        assert_eq!(v["numa_stat"]["file"]["1"].as_u64(), Some(4096));
        let (cg, back) = start_from_json(&v).expect("start");
        assert_eq!(
            (cg.as_str(), back.get("numa_pages_migrated"), back.get("numa_hit")),
            ("/s/job_42/step_0", Some(10), None)
        );
        assert!(start_from_json(&json!({ "schema": "x" })).unwrap_err().contains("not a numakit cgroup report"));
        let bare = json(&report(false), None);
        assert!(
            bare.get("delta").is_none()
                && bare["numa_stat"].is_null()
                && bare["nodes"][0]["charged_anon_bytes"].is_null()
        );
        assert_eq!(bare["memory_stat"], false);
    }

    #[test]
    fn text_says_where_each_figure_comes_from() {
        let r = report(true);
        let start = parse_memory_stat("numa_pages_migrated 3\n").expect("stat");
        let t = text(&r, Some(&r.counters.delta(&start)));
        for want in [
            "cgroup /s/job_42/step_0 (Slurm job 42, step 0)\n",
            "  0 processes in 3 cgroup folders; 1 exited while read\n",
            "runs on node 0 (its threads' last CPUs); allowed CPUs 0-3 (node 0-1, cpuset.cpus.effective)",
            "     1           1 MiB           2 MiB           4 KiB\n",
            "   all           4 MiB           3 MiB           4 KiB\n",
            "memory.numa_stat",
            "locality 75.0%: 3 MiB of 4 MiB own memory",
            "    numa_pages_migrated              10  (+7 since start)\n",
            "    numa_pte_updates                  -  (not in this memory.stat)\n",
            "not counted per cgroup by Linux: numa_hit, numa_miss, other_node, numa_hint_faults_local\n",
        ] {
            assert!(t.contains(want), "missing {want:?} in\n{t}");
        }
        let t = text(&report(false), None);
        assert!(
            t.contains("no memory.numa_stat") && t.contains("no memory.stat") && !t.contains("charged anon"),
            "{t}"
        );
        assert!(!t.contains("numa_pte_updates"), "{t}");
    }
}
