//! `numakit policy` and `numakit guard`, and a policy applied where jobs
//! start: the PBS job starter with `NUMAKIT_POLICY` and `NUMAKIT_GUARD`,
//! each job's record carrying its class and how its arm was set (decided,
//! held out, guarded), the arm applied to the job (`numactl --show`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use numakit::experiment::{ArmSource, StepOutcome};

const NK: &str = env!("CARGO_BIN_EXE_numakit");

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn nk(args: &[&str]) -> Output {
    Command::new(NK).args(args).output().expect("numakit")
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write");
    p
}

#[test]
fn check_says_valid_or_names_line_column_and_word() {
    let d = tempfile::tempdir().expect("tmp");
    let good = write(
        d.path(),
        "good",
        "defaults key=/k cluster=c holdout=5%\nrule a partition=x mode=auto\nrule b mode=none\n",
    );
    let o = nk(&["policy", "check", good.to_str().expect("utf8")]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout), format!("{}: 2 rules, 2 classes: valid\n", good.display()));
    let bad = write(d.path(), "bad", "rule a mode=auto\n\nrule b  gpus=2-1 mode=auto\n");
    let o = nk(&["policy", "check", bad.to_str().expect("utf8")]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        text(&o.stderr),
        format!("numakit: policy {}:3:9: \"gpus=2-1\": the range's low end is above its high end\n", bad.display())
    );
    let o = nk(&["policy", "check", "/dev/zero"]);
    assert_eq!(
        (o.status.code(), text(&o.stderr).as_str()),
        (Some(2), "numakit: policy /dev/zero: not a regular file (a character device)\n")
    );
    let o = nk(&["policy", "check", good.to_str().expect("utf8"), "--bogus"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn explain_goes_rule_by_rule_to_the_one_that_wins() {
    let d = tempfile::tempdir().expect("tmp");
    let p = write(
        d.path(),
        "policy",
        "defaults key=/etc/k holdout=5%\nrule reco name=reco_* mode=auto\nrule big cpus=32- mode=local holdout=0\nrule rest mode=none\n",
    );
    let o = nk(&["policy", "explain", p.to_str().expect("utf8"), "--job-name", "reco_7", "--cpus", "64"]);
    assert_eq!(
        text(&o.stdout),
        "rule reco (line 2): matches: name \"reco_7\" matches name=reco_*\n\
         class reco: mode auto, 5% of its jobs held out into none (drawn with the key /etc/k)\n"
    );
    let o = nk(&["policy", "explain", p.to_str().expect("utf8"), "--job-name", "calib", "--cpus", "64"]);
    assert_eq!(
        text(&o.stdout),
        "rule reco (line 2): no: name \"calib\" does not match name=reco_*\n\
         rule big (line 3): matches: cpus 64 in cpus=32-\n\
         class big: mode local, no holdout\n"
    );
    let o = nk(&["policy", "explain", p.to_str().expect("utf8"), "--mem", "4Q"]);
    assert_eq!((o.status.code(), text(&o.stderr).starts_with("numakit: --mem \"4Q\": ")), (Some(2), true));
}

#[test]
fn guards_are_added_listed_and_cleared() {
    let d = tempfile::tempdir().expect("tmp");
    let g = d.path().join("guards");
    let gs = g.to_str().expect("utf8");
    let o = nk(&["guard", "--file", gs, "add", "--class", "sim", "--arm", "auto", "--why", "4.1% slower"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(nk(&["guard", "--file", gs, "add", "--class", "reco", "--arm", "local"]).status.success());
    let list = text(&nk(&["guard", "--file", gs, "list"]).stdout);
    assert!(
        list.starts_with("class sim: arm auto stopped since ") && list.contains(": 4.1% slower\nclass reco: arm local"),
        "{list}"
    );
    let o = nk(&["guard", "--file", gs, "clear", "--class", "sim"]);
    assert_eq!(text(&o.stdout), format!("1 guard(s) taken away ({gs})\n"));
    let o = nk(&["guard", "--file", gs, "add", "--class", "a b", "--arm", "x"]);
    assert_eq!(
        (o.status.code(), text(&o.stderr).as_str()),
        (Some(2), "numakit: --class \"a b\": 1 to 64 letters, digits, '.', '_', '-' or ':'\n")
    );
    assert!(nk(&["guard", "--file", gs, "clear", "--all"]).status.success());
    assert_eq!(text(&nk(&["guard", "--file", gs, "list"]).stdout), format!("no guards in {gs}\n"));
}

/// The records a wrapped job left in `dir`.
fn outcomes(dir: &Path) -> Vec<StepOutcome> {
    let t = std::fs::read_to_string(dir.join("numakit-outcomes.jsonl")).unwrap_or_default();
    t.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect()
}

fn pbs_job(d: &Path, job: &str, queue: &str, extra: &[(&str, &str)]) -> Output {
    let starter = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../contrib/batch/pbs-job-starter");
    let mut c = Command::new("/bin/sh");
    c.env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("NUMAKIT", NK)
        .env("NUMAKIT_WAIT", "0")
        .env("NUMAKIT_SOCKET", "/nonexistent.sock")
        .env("NUMAKIT_RUN_ARGS", format!("--sample 0 --ledger {}", d.join("ledger").display()))
        .env("NUMAKIT_OUTCOMES", d.join("out"))
        .env("NUMAKIT_POLICY", d.join("policy"))
        .env("NUMAKIT_GUARD", d.join("guards"))
        .env("PBS_JOBID", job)
        .env("PBS_QUEUE", queue)
        .env("PBS_NUM_PPN", "1");
    for (k, v) in extra {
        c.env(k, v);
    }
    c.args([starter.to_str().expect("utf8"), "/bin/sh", "-c", "numactl --show | grep -e '^policy'"]);
    c.output().expect("the job starter")
}

#[test]
fn a_policy_gives_each_class_its_mode_holdout_and_guard_where_jobs_start() {
    let d = tempfile::tempdir().expect("tmp");
    let key = write(d.path(), "key", "a key the jobs' users may read..");
    write(
        d.path(),
        "policy",
        &format!(
            "defaults key={} cluster=farm\nrule reco partition=reco mode=auto holdout=20%\nrule sim partition=sim mode=none\n",
            key.display()
        ),
    );
    let (mut decided, mut held) = (0, 0);
    for j in 0..30 {
        let job = format!("{}.server", 100 + j);
        let o = pbs_job(d.path(), &job, "reco", &[]);
        assert!(o.status.success() && text(&o.stderr).is_empty(), "{}", text(&o.stderr));
        let r = outcomes(&d.path().join("out")).pop().expect("a record");
        assert_eq!((r.job.as_str(), r.class.as_deref()), (job.as_str(), Some("reco")));
        assert_eq!((r.experiment.as_deref(), r.arms.as_deref()), (Some("holdout.reco"), Some("auto:4,none:1")));
        let applied = text(&o.stdout);
        match r.arm_source {
            ArmSource::Decided => {
                decided += 1;
                assert_eq!((r.arm.as_str(), applied.as_str()), ("auto", "policy: bind\n"), "{r:?}");
            }
            ArmSource::Holdout => {
                held += 1;
                assert_eq!((r.arm.as_str(), applied.as_str()), ("none", "policy: default\n"), "{r:?}");
            }
            s => panic!("{s:?}"),
        }
    }
    assert!(decided > 0 && held > 0, "both arms among 30 jobs: {decided} decided, {held} held out");
    // A job of another class, and one no rule matches.
    let o = pbs_job(d.path(), "200.server", "sim", &[]);
    assert_eq!(text(&o.stdout), "policy: default\n");
    let r = outcomes(&d.path().join("out")).pop().expect("a record");
    assert_eq!(
        (r.class.as_deref(), r.arm.as_str(), r.arm_source, r.experiment),
        (Some("sim"), "none", ArmSource::Decided, None)
    );
    pbs_job(d.path(), "201.server", "short", &[]);
    let r = outcomes(&d.path().join("out")).pop().expect("a record");
    assert_eq!((r.class, r.arm.as_str(), r.arm_source), (None, "auto", ArmSource::Default));
    // A guard on auto for reco: every reco job gets the control from now on.
    assert!(nk(&[
        "guard",
        "--file",
        d.path().join("guards").to_str().expect("utf8"),
        "add",
        "--class",
        "reco",
        "--arm",
        "auto"
    ])
    .status
    .success());
    for j in 0..10 {
        let o = pbs_job(d.path(), &format!("{}.server", 300 + j), "reco", &[]);
        assert_eq!(text(&o.stdout), "policy: default\n", "{}", text(&o.stderr));
        let r = outcomes(&d.path().join("out")).pop().expect("a record");
        assert_eq!(r.arm, "none");
        assert!(matches!(r.arm_source, ArmSource::Guarded | ArmSource::Holdout), "{r:?}");
    }
    // A policy that does not parse: every job gets the default, said once.
    write(d.path(), "policy", "rule reco partition=reco mode=sideways\n");
    let o = pbs_job(d.path(), "400.server", "reco", &[]);
    let err = text(&o.stderr);
    assert!(err.contains(":1:26: \"mode=sideways\": ") && err.ends_with(": jobs get the site's default\n"), "{err}");
    let r = outcomes(&d.path().join("out")).pop().expect("a record");
    assert_eq!((r.class, r.arm_source), (None, ArmSource::Default));
    assert_eq!(text(&pbs_job(d.path(), "401.server", "reco", &[]).stderr), "", "said once per host and user");
}
