//! `numakit report` closing the loop of docs/policy.md: each experiment
//! compared against its own control (`none`, `daemon-off` for the
//! daemon's arms), the guards a report writes (`--guard-file`) and the
//! policy it proposes (`--propose-policy`), on synthetic farms whose truth
//! is known (`numakit_report::synth`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use numakit::experiment::Unit;
use numakit_report::synth::Farm;

fn nk(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_numakit")).args(args).stdin(Stdio::null()).output().expect("run numakit")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Writes `farm`'s records to `dir/name`, each line passed through `edit`.
fn write_farm(dir: &Path, name: &str, farm: &Farm, edit: impl Fn(String) -> String) -> PathBuf {
    let mut raw = Vec::new();
    farm.write(&mut raw).expect("write");
    let p = dir.join(name);
    let mut f = std::io::BufWriter::new(std::fs::File::create(&p).expect("create"));
    for line in text(&raw).lines() {
        writeln!(f, "{}", edit(line.to_string())).expect("write");
    }
    f.flush().expect("flush");
    p
}

/// The documented daemon switchback (docs/experiments.md, the physics
/// farm): `unit=host-period arms=daemon-on:50,daemon-off:50`, compared
/// against `daemon-off` without `--control`, its tables counting
/// host-periods.
#[test]
fn a_daemon_switchback_is_compared_against_daemon_off_by_default() {
    let dir = tempfile::tempdir().expect("tmp");
    let mut farm = Farm::calibration(11, 3000);
    farm.unit = Unit::HostPeriod;
    farm.chosen = 0.0;
    let daemon = |l: String| {
        l.replace("\"arm\":\"auto\"", "\"arm\":\"daemon-on\"")
            .replace("\"arm\":\"none\"", "\"arm\":\"daemon-off\"")
            .replace("\"arms\":\"auto:50,none:50\"", "\"arms\":\"daemon-on:50,daemon-off:50\"")
    };
    let p = write_farm(dir.path(), "switchback.jsonl", &farm, daemon);
    let o = nk(&["report", p.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(out.contains("experiment numa-test: unit host-period"), "{out}");
    assert!(out.contains("daemon-on against daemon-off ("), "{out}");
    assert!(!out.contains("no assigned jobs in the control arm"), "{out}");
    assert!(out.contains(" host-periods)"), "{out}");
    let arm_rows: Vec<&str> = out.lines().filter(|l| l.trim_start().starts_with("daemon-o")).collect();
    assert!(!arm_rows.is_empty(), "{out}");
    assert!(arm_rows.iter().all(|l| !l.contains(" hosts)")), "per-host-period tables count host-periods: {out}");
    let j = nk(&["report", p.to_str().unwrap(), "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&j.stdout).expect("json");
    assert_eq!(v["settings"]["control"], "default");
    assert_eq!(v["experiments"][0]["control"], "daemon-off");
    // --control still wins, and an arm nobody ran says so
    let o = nk(&["report", p.to_str().unwrap(), "--control", "none"]);
    assert!(text(&o.stdout).contains("no assigned jobs in the control arm \"none\""), "{}", text(&o.stdout));
}

/// Per-host arms count hosts.
#[test]
fn per_host_tables_count_hosts() {
    let dir = tempfile::tempdir().expect("tmp");
    let mut farm = Farm::calibration(12, 1500);
    farm.unit = Unit::Host;
    let p = write_farm(dir.path(), "hosts.jsonl", &farm, |l| l);
    let o = nk(&["report", p.to_str().unwrap()]);
    let out = text(&o.stdout);
    assert!(out.contains("auto against none (") && out.contains(" hosts)"), "{out}");
    assert!(!out.contains("host-periods)"), "{out}");
}
