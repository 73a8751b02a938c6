//! `numakit compare` end to end with tiny shell workloads.

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

fn verdict(v: &Value, i: usize) -> &str {
    v["configs"][i]["vs_baseline"]["verdict"].as_str().unwrap_or("none")
}

#[test]
fn a_slower_configuration_is_found_worse() {
    let v = json(&[
        "compare",
        "--config",
        "fast=",
        "--config",
        "slow=sleep 0.05;",
        "--runs",
        "5",
        "--warmup",
        "0",
        "--json",
        "--",
        "true",
    ]);
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["metric"]["kind"], "wall_time");
    assert_eq!(v["unit"], "s");
    assert_eq!(
        v["sequence"],
        serde_json::json!(["fast", "slow", "fast", "slow", "fast", "slow", "fast", "slow", "fast", "slow"])
    );
    assert_eq!(v["configs"][0]["samples"].as_array().map(Vec::len), Some(5));
    let s = &v["configs"][1]["summary"];
    assert!(s["mean"].as_f64().expect("mean") >= 0.05, "{s}");
    for k in ["median", "stddev", "std_error", "ci_low", "ci_high", "max_variance_pct"] {
        assert!(s[k].is_f64(), "{k}: {s}");
    }
    assert_eq!(verdict(&v, 1), "worse");
    assert!(v["configs"][1]["vs_baseline"]["welch"]["p_value"].as_f64().expect("p") < 0.05);
    assert!(v["configs"][1]["vs_baseline"]["change_pct"].as_f64().expect("change") > 0.0);
    assert_eq!(v["configs"][0]["plan"].as_array().map(Vec::len), Some(5));
}

#[test]
fn metric_regex_copies_and_text_report() {
    let out = numakit(&[
        "compare",
        "--config",
        "ten=X=10",
        "--config",
        "twenty=X=20",
        "--runs",
        "3",
        "--warmup",
        "1",
        "--copies",
        "2",
        "--metric-regex",
        r"score: (\d+)",
        "--higher-is-better",
        "--",
        "sh",
        "-c",
        "echo score: $X",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // Two copies summed: 20 and 40.
    assert!(text.contains("\nten     20.00   20.00") && text.contains("\ntwenty  40.00   40.00"), "{text}");
    assert!(text.contains("+100.0%") && text.contains("better, significant at 5%"), "{text}");
    assert!(text.contains("verdict: twenty is best, 100.0% better than ten"), "{text}");
    assert!(text.contains("2 copies at once (sum of their figures)"), "{text}");
}

#[test]
fn save_then_compare_against_it() {
    let dir = tempfile::tempdir().expect("dir");
    let saved = dir.path().join("base.json");
    let saved_s = saved.to_str().expect("path");
    let v = json(&[
        "compare",
        "--config",
        "base=X=5",
        "--runs",
        "3",
        "--warmup",
        "0",
        "--metric-regex",
        r"v=(\d+)",
        "--save",
        saved_s,
        "--json",
        "--",
        "sh -c 'echo v=$X'",
    ]);
    assert_eq!(v["configs"][0]["samples"], serde_json::json!([5.0, 5.0, 5.0]));
    let back: Value = serde_json::from_str(&std::fs::read_to_string(&saved).expect("saved")).expect("JSON");
    assert_eq!(back["configs"][0]["samples"], v["configs"][0]["samples"]);
    let now = json(&[
        "compare",
        "--config",
        "new=X=4",
        "--runs",
        "3",
        "--warmup",
        "0",
        "--metric-regex",
        r"v=(\d+)",
        "--against",
        saved_s,
        "--json",
        "--",
        "sh -c 'echo v=$X'",
    ]);
    assert_eq!(now["baseline"]["name"], "base");
    assert_eq!(now["baseline"]["file"], saved_s);
    assert_eq!(now["baseline"]["samples"], serde_json::json!([5.0, 5.0, 5.0]));
    assert_eq!(verdict(&now, 0), "better", "4 < 5 and lower is better");
}

#[test]
fn experiment_file_with_placement_hooks_and_shuffle() {
    let dir = tempfile::tempdir().expect("dir");
    let log = dir.path().join("hooks.log");
    let file = dir.path().join("exp.toml");
    std::fs::write(
        &file,
        format!(
            r#"
workload = "true"
runs = 4
warmup = 0
shuffle_seed = 5
[[config]]
name = "plain"
[[config]]
name = "node0"
placement = "-N 0 -m 0"
before = ["echo before >> {log}"]
after = ["echo after >> {log}"]
"#,
            log = log.display()
        ),
    )
    .expect("write");
    let v = json(&["compare", "--experiment", file.to_str().expect("path"), "--json"]);
    assert_eq!(v["order"], serde_json::json!({"kind": "shuffled", "seed": 5}));
    let seq: Vec<&str> = v["sequence"].as_array().expect("sequence").iter().filter_map(Value::as_str).collect();
    assert_eq!(seq.len(), 8);
    for round in seq.chunks(2) {
        let mut r = round.to_vec();
        r.sort();
        assert_eq!(r, ["node0", "plain"]);
    }
    assert!(v["configs"][1]["prefix"].as_str().expect("prefix").ends_with(" run -N 0 -m 0"), "{}", v["configs"][1]);
    assert_eq!(std::fs::read_to_string(&log).expect("hooks ran"), "before\nafter\n".repeat(4));
}

#[test]
fn errors() {
    let cases: [(&[&str], i32, &str); 5] = [
        (&["compare", "--config", "a="], 2, "no workload given"),
        (&["compare", "--config", "a=", "--metric-regex", "x(", "--", "true"], 2, "--metric-regex"),
        (&["compare", "--config", "noequals", "--", "true"], 2, "expected NAME=PREFIX"),
        (&["compare", "--config", "a=", "--runs", "1", "--warmup", "0", "--", "echo boom >&2; exit 3"], 1, "boom"),
        (&["compare", "--against", "/nonexistent/base.json", "--", "true"], 1, "/nonexistent/base.json: no such file"),
    ];
    for (args, code, text) in cases {
        let out = numakit(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
        assert!(err.contains(text) && err.lines().count() == 1, "{args:?}: {err}");
    }
}
