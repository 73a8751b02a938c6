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

/// A farm of classes (records' `class` the job name) with the given
/// effects of `auto` against `none` (ln ratio), per-job arms at 50:50.
fn class_farm(dir: &Path, name: &str, seed: u64, jobs: u64, effects: &[(&str, f64)]) -> PathBuf {
    let mut farm = Farm::calibration(seed, jobs);
    farm.slow_host = None;
    farm.chosen = 0.0;
    farm.classes.retain(|c| effects.iter().any(|(n, _)| *n == c.name));
    for c in &mut farm.classes {
        c.effect = effects.iter().find(|(n, _)| *n == c.name).map_or(0.0, |e| e.1);
        c.sd_factor = 1.0;
        c.sd_log = 0.15;
        c.tail = numakit_report::synth::Tail::LogNormal;
    }
    write_farm(dir, name, &farm, |l| {
        let mut v: serde_json::Value = serde_json::from_str(&l).expect("record");
        v["class"] = v["job_name"].clone();
        v.to_string()
    })
}

#[test]
fn a_class_ten_percent_slower_is_guarded_and_nothing_else() {
    let dir = tempfile::tempdir().expect("tmp");
    let p = class_farm(dir.path(), "farm.jsonl", 21, 4000, &[("reco", 0.0), ("sim", (1.10f64).ln())]);
    let guards = dir.path().join("guards");
    let o = nk(&["report", p.to_str().unwrap(), "--guard-file", guards.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(out.contains("guard written to ") && out.contains("class=sim arm=auto  # +"), "{out}");
    let g =
        numakit::experiment::guard::Guards::parse(&std::fs::read_to_string(&guards).expect("guards")).expect("parse");
    assert_eq!(g.0.len(), 1, "{:?}", g.0);
    assert_eq!((g.0[0].class.as_str(), g.0[0].arm.as_str(), g.0[0].experiment.as_deref()), ("sim", "auto", None));
    assert!(g.0[0].since.is_some());
    let why = g.0[0].why.as_deref().expect("its evidence");
    assert!(why.contains("slower than none (always-valid CI") && why.contains("3% margin"), "{why}");
    // `numakit guard list` reads what report wrote; a second report keeps it, once
    let l = nk(&["guard", "list", "--file", guards.to_str().unwrap()]);
    assert!(l.status.success() && text(&l.stdout).contains("sim"), "{}{}", text(&l.stdout), text(&l.stderr));
    let o = nk(&["report", p.to_str().unwrap(), "--guard-file", guards.to_str().unwrap(), "--json"]);
    assert!(o.status.success() && text(&o.stderr).contains("guard kept: class=sim arm=auto"), "{}", text(&o.stderr));
    serde_json::from_slice::<serde_json::Value>(&o.stdout).expect("stdout stays JSON");
    let g2 = numakit::experiment::guard::Guards::parse(&std::fs::read_to_string(&guards).unwrap()).unwrap();
    assert_eq!(g2, g);
}

#[test]
fn a_null_farm_writes_no_guard() {
    let dir = tempfile::tempdir().expect("tmp");
    let p = class_farm(dir.path(), "null.jsonl", 22, 4000, &[("reco", 0.0), ("sim", 0.0)]);
    let guards = dir.path().join("guards");
    let o = nk(&["report", p.to_str().unwrap(), "--guard-file", guards.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("guards: no arm worse than its control beyond doubt"), "{}", text(&o.stdout));
    assert!(!guards.exists(), "no guard, no file");
}

#[test]
fn guard_flags_refuse_what_they_cannot_do_in_one_line() {
    let dir = tempfile::tempdir().expect("tmp");
    let p = class_farm(dir.path(), "f.jsonl", 23, 200, &[("reco", 0.0)]);
    let g = dir.path().join("guards");
    let (p, g) = (p.to_str().unwrap(), g.to_str().unwrap());
    for (args, want) in [
        (vec!["--guard-file", g, "--by", "user"], "--guard-file: per class: give --by class, not --by user"),
        (vec!["--guard-file", g, "--look", "once"], "always-valid evidence only"),
        (vec!["--guard-file", g, "--guard-margin", "abc"], "--guard-margin \"abc\": a percentage"),
        (vec!["--planned", "0"], "--planned \"0\": a number of jobs from 10"),
    ] {
        let mut a = vec!["report", p];
        a.extend(args);
        let o = nk(&a);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{a:?}: {err}");
        assert!(err.contains(want) && err.lines().count() == 1, "{a:?}: {err}");
    }
    // a guard file that is not one: refused, named, left as it was
    std::fs::write(dir.path().join("guards"), "not a guard\n").unwrap();
    let class = class_farm(dir.path(), "slow.jsonl", 24, 4000, &[("sim", (1.10f64).ln())]);
    let o = nk(&["report", class.to_str().unwrap(), "--guard-file", g]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("guards") && text(&o.stderr).lines().count() == 1, "{}", text(&o.stderr));
    assert_eq!(std::fs::read_to_string(g).unwrap(), "not a guard\n");
}

const CURRENT: &str = "# the site's policy\n\
defaults key=/etc/numakit/experiment.key cluster=farm\n\
rule reco name=reco* experiment=reco-q1 arms=auto:1,none:1\n\
rule sim partition=sim \\\n    experiment=sim-q1 arms=auto:1,none:1  # since June\n\
rule hepspec name=hepspec experiment=hs-q1 arms=auto:1,none:1\n\
rule rest mode=auto holdout=2%\n";

fn line_of<'a>(text: &'a str, start: &str) -> &'a str {
    text.lines().find(|l| l.starts_with(start)).unwrap_or_else(|| panic!("no line {start:?} in\n{text}"))
}

#[test]
fn a_proposed_policy_decides_gains_and_losses_and_keeps_the_rest() {
    let dir = tempfile::tempdir().expect("tmp");
    let effects = [("reco", (0.90f64).ln()), ("sim", (1.10f64).ln()), ("hepspec", 0.0)];
    let p = class_farm(dir.path(), "farm.jsonl", 31, 6000, &effects);
    let current = dir.path().join("policy");
    std::fs::write(&current, CURRENT).unwrap();
    let out = dir.path().join("proposed");
    let args = ["report", p.to_str().unwrap(), "--propose-policy", out.to_str().unwrap()];
    let o = nk(&[&args[..], &["--policy", current.to_str().unwrap()]].concat());
    assert!(o.status.success(), "{}", text(&o.stderr));
    let said = text(&o.stdout);
    assert!(said.contains("proposed: class reco: decide auto (auto faster than none)"), "{said}");
    assert!(said.contains("proposed: class sim: decide none (auto slower than none)"), "{said}");
    assert!(said.contains("proposed: class hepspec: undecided: kept as it is"), "{said}");
    let new = std::fs::read_to_string(&out).expect("proposed");
    eprintln!("{new}");
    assert_eq!(std::fs::read_to_string(&current).unwrap(), CURRENT, "the policy in force is never written");
    // the modes, matchers kept, the undecided and untouched rules as they were
    assert_eq!(line_of(&new, "rule reco"), "rule reco name=reco* mode=auto holdout=5% holdout-arm=none");
    assert_eq!(line_of(&new, "rule sim"), "rule sim partition=sim mode=none holdout=5% holdout-arm=auto");
    assert_eq!(line_of(&new, "rule hepspec"), "rule hepspec name=hepspec experiment=hs-q1 arms=auto:1,none:1");
    assert_eq!(line_of(&new, "rule rest"), "rule rest mode=auto holdout=2%");
    // the evidence, as comments
    assert!(line_of(&new, "# was: rule reco").contains("experiment=reco-q1"), "{new}");
    assert!(new.contains("# was:     experiment=sim-q1 arms=auto:1,none:1  # since June"), "{new}");
    let reco = line_of(&new, "# proposed for class reco: auto is faster than none");
    assert!(!reco.is_empty());
    assert!(line_of(&new, "#   auto against none on ").contains("(always-valid 95% CI"), "{new}");
    let records = line_of(&new, "#   records 2026-01-01T");
    assert!(
        records.contains(" (UTC); inputs sha256 ") && records.contains("of the bytes of 1 input file"),
        "{records}"
    );
    let hash = records.split("sha256 ").nth(1).unwrap().split(' ').next().unwrap();
    assert_eq!(hash.len(), 64, "{records}");
    // it passes the policy's own check, and the diff says what changed
    let c = nk(&["policy", "check", out.to_str().unwrap()]);
    assert!(
        c.status.success() && text(&c.stdout).contains("4 rules, 4 classes: valid"),
        "{}{}",
        text(&c.stdout),
        text(&c.stderr)
    );
    let mut diff_path = out.clone().into_os_string();
    diff_path.push(".diff");
    let diff = std::fs::read_to_string(&diff_path).expect("diff");
    assert!(diff.starts_with(&format!("--- {}\n+++ {}\n", current.display(), out.display())), "{diff}");
    assert!(diff.contains("\n-rule reco name=reco* experiment=reco-q1 arms=auto:1,none:1\n"), "{diff}");
    assert!(diff.contains("\n+rule reco name=reco* mode=auto holdout=5% holdout-arm=none\n"), "{diff}");
    assert!(!diff.contains("-rule hepspec"), "{diff}");
    // the proposal, once in force, is the start of the next one: one header, rules as decided
    let again = dir.path().join("again");
    let o =
        nk(&[&args[..2], &["--propose-policy", again.to_str().unwrap(), "--policy", out.to_str().unwrap()]].concat());
    assert!(o.status.success(), "{}", text(&o.stderr));
    let next = std::fs::read_to_string(&again).unwrap();
    assert_eq!(next.matches("# numakit policy proposed by").count(), 1, "{next}");
    // an earlier proposal's evidence gives way to today's: one block per class
    assert_eq!(next.matches("# proposed for class reco:").count(), 1, "{next}");
    assert_eq!(next.matches("# was: rule reco").count(), 1, "{next}");
    assert!(line_of(&next, "# was: rule reco").contains("mode=auto"), "the rule in force: {next}");
    assert_eq!(line_of(&next, "rule reco"), "rule reco name=reco* mode=auto holdout=5% holdout-arm=none");
    assert!(nk(&["policy", "check", again.to_str().unwrap()]).status.success());
}

#[test]
fn without_a_policy_rules_are_per_job_name() {
    let dir = tempfile::tempdir().expect("tmp");
    let effects = [("reco", (0.90f64).ln()), ("sim", (1.10f64).ln()), ("hepspec", 0.0)];
    let p = class_farm(dir.path(), "farm.jsonl", 32, 6000, &effects);
    let out = dir.path().join("proposed");
    let o = nk(&["report", p.to_str().unwrap(), "--propose-policy", out.to_str().unwrap(), "--json"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    serde_json::from_slice::<serde_json::Value>(&o.stdout).expect("stdout stays JSON");
    let new = std::fs::read_to_string(&out).expect("proposed");
    assert_eq!(line_of(&new, "rule reco"), "rule reco name=reco mode=auto holdout=5% holdout-arm=none");
    assert_eq!(line_of(&new, "rule sim"), "rule sim name=sim mode=none holdout=5% holdout-arm=auto");
    assert!(new.contains("# hepspec: undecided: no rule"), "{new}");
    let c = nk(&["policy", "check", out.to_str().unwrap()]);
    assert!(c.status.success(), "{}", text(&c.stderr));
    let mut diff_path = out.into_os_string();
    diff_path.push(".diff");
    assert!(!Path::new(&diff_path).exists(), "no current policy, no diff");
}

#[test]
fn the_policy_in_force_is_never_the_output() {
    let dir = tempfile::tempdir().expect("tmp");
    let p = class_farm(dir.path(), "f.jsonl", 33, 300, &[("reco", 0.0)]);
    let current = dir.path().join("policy");
    std::fs::write(&current, CURRENT).unwrap();
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&current, &link).unwrap();
    for out in [current.clone(), link, dir.path().join(".").join("policy")] {
        let o = nk(&[
            "report",
            p.to_str().unwrap(),
            "--propose-policy",
            out.to_str().unwrap(),
            "--policy",
            current.to_str().unwrap(),
        ]);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{out:?}: {err}");
        assert!(err.contains("the same file as --policy") && err.lines().count() == 1, "{err}");
    }
    assert_eq!(std::fs::read_to_string(&current).unwrap(), CURRENT);
    // a broken current policy is named with its line and column
    std::fs::write(&current, "rule x cpus=9-1 mode=auto\n").unwrap();
    let out = dir.path().join("new");
    let o = nk(&[
        "report",
        p.to_str().unwrap(),
        "--propose-policy",
        out.to_str().unwrap(),
        "--policy",
        current.to_str().unwrap(),
    ]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("--policy ") && err.contains(":1:8: \"cpus=9-1\"") && err.lines().count() == 1, "{err}");
    assert!(!out.exists());
    let o = nk(&["report", p.to_str().unwrap(), "--policy", current.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "--policy alone: {}", text(&o.stderr));
}

#[test]
fn an_arm_that_fails_more_often_is_guarded_on_its_failures() {
    let dir = tempfile::tempdir().expect("tmp");
    let mut farm = Farm::calibration(41, 4000);
    farm.slow_host = None;
    farm.chosen = 0.0;
    farm.classes.retain(|c| c.name == "reco" || c.name == "hepspec");
    farm.classes.iter_mut().for_each(|c| c.effect = 0.0);
    // every seventh reco job under auto fails (exit 1), besides the farm's 1%
    let p = write_farm(dir.path(), "fails.jsonl", &farm, |l| {
        let mut v: serde_json::Value = serde_json::from_str(&l).expect("record");
        v["class"] = v["job_name"].clone();
        let job: u64 = v["job"].as_str().and_then(|j| j.parse().ok()).expect("job id");
        if v["job_name"] == "reco" && v["arm"] == "auto" && job % 7 == 0 {
            v["exit_status"] = 1.into();
        }
        v.to_string()
    });
    let guards = dir.path().join("guards");
    let o = nk(&["report", p.to_str().unwrap(), "--guard-file", guards.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let g =
        numakit::experiment::guard::Guards::parse(&std::fs::read_to_string(&guards).expect("guards")).expect("parse");
    assert_eq!(g.0.len(), 1, "{:?}", g.0);
    assert_eq!((g.0[0].class.as_str(), g.0[0].arm.as_str()), ("reco", "auto"));
    let why = g.0[0].why.as_deref().unwrap_or_default();
    assert!(
        why.starts_with("more failures than none: ") && why.contains("always-valid CI of the difference +"),
        "{why}"
    );
}

/// Text from the records (a hardware key with a line break and an escape)
/// stays inside the comments it is quoted in: no rule or guard is made of it.
#[test]
fn record_text_cannot_write_rules_or_guards() {
    let dir = tempfile::tempdir().expect("tmp");
    let mut farm = Farm::calibration(51, 6000);
    farm.slow_host = None;
    farm.chosen = 0.0;
    farm.classes.retain(|c| c.name == "sim");
    farm.classes.iter_mut().for_each(|c| (c.effect, c.sd_log) = ((1.10f64).ln(), 0.15));
    let p = write_farm(dir.path(), "hostile.jsonl", &farm, |l| {
        let mut v: serde_json::Value = serde_json::from_str(&l).expect("record");
        v["class"] = v["job_name"].clone();
        v["hardware"]["key"] = "k\nrule evil mode=interleave\nguard class=reco arm=none \u{1b}[2J".into();
        v.to_string()
    });
    let (out, guards) = (dir.path().join("proposed"), dir.path().join("guards"));
    let o = nk(&["report", p.to_str().unwrap(), "--propose-policy", out.to_str().unwrap()]);
    assert!(o.status.success() && !text(&o.stdout).contains('\u{1b}'), "{}", text(&o.stderr));
    let new = std::fs::read_to_string(&out).expect("proposed");
    let rules: Vec<&str> = new.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(rules, ["rule sim name=sim mode=none holdout=5% holdout-arm=auto"], "{new}");
    assert!(nk(&["policy", "check", out.to_str().unwrap()]).status.success());
    let o = nk(&["report", p.to_str().unwrap(), "--guard-file", guards.to_str().unwrap()]);
    assert!(o.status.success() && !text(&o.stdout).contains('\u{1b}'), "{}", text(&o.stderr));
    let g = numakit::experiment::guard::Guards::parse(&std::fs::read_to_string(&guards).unwrap()).expect("parse");
    assert_eq!(g.0.iter().map(|g| (g.class.as_str(), g.arm.as_str())).collect::<Vec<_>>(), [("sim", "auto")]);
}
