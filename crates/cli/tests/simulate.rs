//! `numakit simulate`: the command line of the simulator (the numbers
//! themselves are tested in the `numakit-sim` crate).

use std::process::{Command, Output};

use serde_json::Value;

fn nk(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_numakit")).args(args).output().expect("run numakit")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn lists_the_named_scenarios() {
    let o = nk(&["simulate", "--list"]);
    assert!(o.status.success());
    let text = stdout(&o);
    for name in ["reco-2s", "sim-2s", "evgen-2s", "hs06-8n", "jvm-4s", "mixed-tiered"] {
        assert!(text.contains(name), "{name} missing:\n{text}");
    }
    assert_eq!(text.lines().count(), 14);
}

#[test]
fn one_scenario_as_json() {
    let o = nk(&["simulate", "--scenario", "evgen-2s", "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).expect("json");
    let sc = &v["scenarios"][0];
    assert_eq!(sc["name"], "evgen-2s");
    assert_eq!(sc["machine"], "intel-2s");
    let names: Vec<&str> =
        sc["policies"].as_array().expect("policies").iter().filter_map(|p| p["policy"].as_str()).collect();
    assert_eq!(names, ["untuned", "static", "numad", "autonuma", "numakit", "oracle"]);
    for p in sc["policies"].as_array().expect("policies") {
        assert!(p["vs_oracle"].as_f64().expect("vs_oracle") > 0.9);
        assert!(p["pages_migrated"].is_u64());
        assert!(p["worst_job_slowdown"].is_f64());
    }
    let oracle = &sc["policies"][5];
    assert_eq!(oracle["vs_oracle"], 1.0);
    // Deterministic: the same numbers again.
    let again = nk(&["simulate", "--scenario", "evgen-2s", "--json"]);
    assert_eq!(o.stdout, again.stdout);
}

#[test]
fn one_random_scenario_as_text() {
    let o = nk(&["simulate", "--scenario", "random-evgen-3"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = stdout(&o);
    assert!(text.contains("random-evgen-3"), "{text}");
    assert!(text.contains("pages migrated") && text.contains("worst job vs untuned"), "{text}");
    assert!(text.contains("numakit") && text.contains("oracle"), "{text}");
}

#[test]
fn usage_errors() {
    let o = nk(&["simulate", "--scenario", "no-such-farm"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no scenario"));
    // --seeds only with --all.
    assert_eq!(nk(&["simulate", "--seeds", "3"]).status.code(), Some(2));
    assert_eq!(nk(&["simulate", "--all", "--scenario", "reco-2s"]).status.code(), Some(2));
    assert_eq!(nk(&["simulate", "--first-seed", "1000"]).status.code(), Some(2));
    assert_eq!(nk(&["simulate", "--held-out", "--all"]).status.code(), Some(2));
    assert_eq!(nk(&["simulate", "--held-out", "--scenario", "reco-2s"]).status.code(), Some(2));
}

#[test]
fn draws_the_chart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("sim.svg");
    let o = nk(&["simulate", "--scenario", "evgen-2s", "--svg", file.to_str().expect("path")]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(stdout(&o).contains("evgen-2s"), "the report is printed too");
    let svg = std::fs::read_to_string(&file).expect("svg written");
    assert!(svg.contains("<svg") && svg.contains("numakit") && svg.contains("named"), "{svg}");
    // "-": the chart instead of the report.
    let o = nk(&["simulate", "--scenario", "evgen-2s", "--svg", "-"]);
    assert!(o.status.success());
    assert!(stdout(&o).starts_with("<svg"));
    assert_eq!(nk(&["simulate", "--list", "--svg", "-"]).status.code(), Some(2));
}

#[test]
fn no_contention_is_a_diagnostic_that_removes_saturation() {
    let tp = |extra: &[&str]| -> f64 {
        let mut args = vec!["simulate", "--scenario", "reco-8n", "--json"];
        args.extend_from_slice(extra);
        let o = nk(&args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
        let p = v["scenarios"][0]["policies"].as_array().expect("policies").clone();
        let x = p.iter().find(|x| x["policy"] == "untuned").expect("untuned");
        x["throughput"].as_f64().expect("throughput")
    };
    // Untuned memory-bound jobs on the 8-node machine: remote traffic counts
    // 1 / 0.4 times against a node's 40 GB/s and saturates some nodes;
    // without bandwidth demand nothing saturates and they run faster.
    let (with, without) = (tp(&[]), tp(&["--no-contention"]));
    assert!(without > with * 1.01, "untuned {with} with contention, {without} without");
}

#[test]
fn traces_a_scenario_and_agrees_with_the_report() {
    // The JSON trace: the asked policies in order, their results equal to the
    // report's for the same scenario, every bind of the run in the events.
    let o = nk(&["simulate", "--scenario", "evgen-2s", "--trace", "--policy", "numakit,numad", "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let t: Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!((t["scenario"].as_str(), t["machine"].as_str()), (Some("evgen-2s"), Some("intel-2s")));
    let report: Value =
        serde_json::from_slice(&nk(&["simulate", "--scenario", "evgen-2s", "--json"]).stdout).expect("json");
    let runs = t["runs"].as_array().expect("runs");
    assert_eq!(runs.iter().filter_map(|r| r["policy"].as_str()).collect::<Vec<_>>(), ["numakit", "numad"]);
    for run in runs {
        let name = run["policy"].as_str().expect("policy");
        let p = report["scenarios"][0]["policies"]
            .as_array()
            .expect("policies")
            .iter()
            .find(|p| p["policy"] == name)
            .expect("in the report");
        assert_eq!(run["pages_migrated"], p["pages_migrated"], "{name}");
        assert_eq!(run["binds"], p["binds"], "{name}");
        let events = run["events"].as_array().expect("events");
        let binds = events.iter().filter(|e| e["event"] == "action" && e["action"] == "bind").count();
        assert_eq!(Some(binds as u64), run["binds"].as_u64(), "{name}");
        assert!(binds > 0, "{name} placed nothing: the trace is not tested");
        assert!(events.iter().any(|e| e["event"] == "start") && events.iter().any(|e| e["event"] == "rate"));
    }
    // Text: numakit's actions with its reasons, numad's in numad's words,
    // and the minutes side by side.
    let o = nk(&["simulate", "--scenario", "evgen-2s", "--trace"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = stdout(&o);
    assert!(text.contains("\nnumad: ") && text.contains("\nnumakit: "), "{text}");
    assert!(text.contains("numad: move from nodes ("), "{text}");
    assert!(text.contains("bind cpu ") && text.contains("access-time ratio"), "{text}");
    assert!(text.contains("work per second, minute by minute"), "{text}");
}

#[test]
fn trace_usage_errors() {
    let o = nk(&["simulate", "--scenario", "evgen-2s", "--trace", "--policy", "numa"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("\"numa\"") && err.lines().count() == 1, "{err}");
    // --trace needs one scenario.
    assert_eq!(nk(&["simulate", "--trace"]).status.code(), Some(2));
    assert_eq!(nk(&["simulate", "--all", "--trace"]).status.code(), Some(2));
}
