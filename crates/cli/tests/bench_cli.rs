//! `numakit bench` end to end on this machine, with tiny sizes and few
//! repetitions (the numbers mean nothing here; shapes, binding and exit
//! codes do).

use std::process::{Command, Output};

use serde_json::Value;

fn numakit(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_numakit")).args(args).output().expect("run numakit")
}

fn json(args: &[&str]) -> Value {
    let out = numakit(args);
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("JSON")
}

fn allowed_cpus() -> Vec<u64> {
    let status = std::fs::read_to_string("/proc/self/status").expect("status");
    let list = status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")).expect("line").trim().to_string();
    let mut out = Vec::new();
    for part in list.split(',') {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        out.extend(a.parse::<u64>().expect("cpu")..=b.parse::<u64>().expect("cpu"));
    }
    out
}

#[test]
fn bandwidth_json_has_the_documented_fields() {
    let v = json(&["bench", "bandwidth", "--size", "256K", "--reps", "2", "--json", "-q"]);
    assert_eq!((v["schema_version"].as_u64(), v["kind"].as_str()), (Some(1), Some("bandwidth")));
    assert_eq!(v["validated"], true);
    let results = v["results"].as_array().expect("results[]");
    let cpus = allowed_cpus();
    let kernels: Vec<&str> = results.iter().filter_map(|r| r["kernel"].as_str()).collect();
    for k in ["copy", "scale", "add", "triad"] {
        assert!(kernels.contains(&k), "{k} in {kernels:?}");
    }
    for r in results {
        for k in ["cpu_node", "mem_node", "threads"] {
            assert!(r[k].is_u64(), "{k}: {r}");
        }
        assert!(r["best_gbps"].as_f64().expect("best") >= r["median_gbps"].as_f64().expect("median"), "{r}");
        let seen: Vec<u64> = r["cpus_seen"].as_array().expect("cpus_seen").iter().filter_map(Value::as_u64).collect();
        assert!(!seen.is_empty() && seen.iter().all(|c| cpus.contains(c)), "{seen:?} outside {cpus:?}");
        assert_eq!(r["pages_on_node_pct"].as_f64(), Some(100.0), "{r}");
    }
    assert!(v["firmware"].as_array().is_some_and(|f| !f.is_empty()));
    // A size given is used as given: no note.
    assert_eq!(v["notes"], serde_json::json!([]));
}

#[test]
fn bandwidth_one_thread_one_kernel_table_and_svg() {
    let dir = tempfile::tempdir().expect("dir");
    let svg = dir.path().join("bw.svg");
    let out = numakit(&[
        "bench",
        "bandwidth",
        "--size",
        "128K",
        "--reps",
        "2",
        "--threads",
        "1",
        "--kernels",
        "triad",
        "--svg",
        svg.to_str().expect("path"),
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        text.starts_with("STREAM bandwidth, GB/s best (median): 128 KiB per array, 2 repetitions, 1 thread(s)"),
        "{text}"
    );
    assert!(text.contains("triad:") && !text.contains("copy:"), "{text}");
    assert!(
        out.stderr.is_empty(),
        "no progress bar when stderr is not a terminal: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let picture = std::fs::read_to_string(&svg).expect("svg written");
    assert!(picture.contains("<svg") && picture.contains("STREAM triad bandwidth"));
}

#[test]
fn latency_sweep_json_and_svg() {
    let v = json(&["bench", "latency", "--sizes", "16K-64K", "--reps", "2", "--time-ms", "2", "--json"]);
    assert_eq!(v["kind"], "latency");
    assert_eq!(v["notes"], serde_json::json!([]));
    let results = v["results"].as_array().expect("results[]");
    let sizes: Vec<u64> = results.iter().filter_map(|r| r["size_bytes"].as_u64()).collect();
    for s in [16384, 32768, 65536] {
        assert!(sizes.contains(&s), "{sizes:?}");
    }
    for r in results {
        assert!(r["cpu_node"].is_u64() && r["mem_node"].is_u64() && r["ns"].as_f64().is_some_and(|n| n > 0.0), "{r}");
        assert_eq!(r["cpus_seen"].as_array().map(Vec::len), Some(1), "one pinned CPU: {r}");
    }
    let out = numakit(&["bench", "latency", "--sizes", "16K,32K", "--reps", "1", "--time-ms", "1", "--svg", "-"]);
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && s.contains("<svg") && s.contains("memory latency by buffer size"), "{s}");
}

#[test]
fn loaded_curve_text() {
    let out = numakit(&[
        "bench",
        "loaded",
        "--size",
        "256K",
        "--generator-size",
        "256K",
        "--delays",
        "100,0",
        "--time-ms",
        "5",
        "--pattern",
        "page",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.starts_with("loaded latency: CPU ") && text.contains("    idle "), "{text}");
    if allowed_cpus().len() > 1 {
        assert_eq!(
            text.lines().filter(|l| l.trim_start().starts_with("100 ") || l.trim_start().starts_with("0 ")).count(),
            2,
            "{text}"
        );
    }
}

#[test]
fn usage_errors_exit_2_with_one_line() {
    for args in [
        &["bench", "bandwidth", "--cpu-nodes", "63"][..],
        &["bench", "bandwidth", "--kernels", "copy,nope"],
        &["bench", "latency", "--sizes", "1G-16K"],
        &["bench", "bandwidth", "--size", "0"],
        &["bench", "loaded", "--mem-node", "63"],
    ] {
        let out = numakit(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("numakit: "), "{err}");
    }
    let dir = tempfile::tempdir().expect("dir");
    std::fs::create_dir_all(dir.path().join("sys/devices/system/cpu")).expect("dump");
    let out = Command::new(env!("CARGO_BIN_EXE_numakit"))
        .arg("--sysroot")
        .arg(dir.path())
        .args(["bench", "latency"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
}
