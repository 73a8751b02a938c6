//! An experiment in a real Slurm on this machine, with Slurm's own
//! accounting (a real slurmdbd on MariaDB, started in the test Slurm's
//! folder: numakit_testbed::slurmdbd): a job array's arms are the ones the
//! library's assignment gives, each step leaves exactly one outcome record,
//! and every record agrees with `sacct`'s record of the same step (ids,
//! elapsed time, state and exit code, TotalCPU). Then what a site does to
//! an experiment: a key others may read, a stop file, an end date; no job
//! fails, each gets the site's default, and the log says why once.
//!
//! Multi-node placement of the arms is tested in the guest
//! (crates/cli/tests/vm_experiment.rs). Needs root and Slurm's and
//! MariaDB's packages (scripts/install-deps); fails, never skips, without
//! them.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use numakit::experiment::assign::{self, Subject};
use numakit::experiment::{ArmSource, Design, StepOutcome};
use numakit_testbed::slurm::{Slurm, SlurmSpec};
use numakit_testbed::Output;

/// The plugin cargo built for this test (the crate's cdylib, beside `deps/`).
fn plugin() -> PathBuf {
    let exe = std::env::current_exe().expect("the test's path");
    let deps = exe.parent().expect("deps/");
    let so = [deps.join("libnumakit_spank.so"), deps.parent().expect("profile folder").join("libnumakit_spank.so")]
        .into_iter()
        .find(|p| p.is_file());
    so.unwrap_or_else(|| panic!("libnumakit_spank.so not found beside {}", deps.display()))
}

fn plugstack(args: &str) -> String {
    format!(
        "required {} default=none ledger={{dir}}/ledger socket={{dir}}/no-daemon.sock report={{dir}}/reports {args}\n",
        plugin().display()
    )
}

fn run(slurm: &Slurm, args: &[&str]) -> Output {
    slurm.run(args[0], &args[1..])
}

/// Every outcome record written so far.
fn records(dir: &Path) -> Vec<StepOutcome> {
    let text = std::fs::read_to_string(dir.join("reports/numakit-outcomes.jsonl")).unwrap_or_default();
    text.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect()
}

/// Waits until `n` records are written (slurmstepd writes a step's in its
/// exit hook, which may come after `sbatch --wait` returned).
fn wait_records(dir: &Path, n: usize) -> Vec<StepOutcome> {
    let end = Instant::now() + Duration::from_secs(60);
    loop {
        let r = records(dir);
        if r.len() >= n || Instant::now() > end {
            return r;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// sacct's `[D-][HH:]MM:SS[.mmm]` as seconds.
fn sacct_duration(t: &str) -> f64 {
    let (days, rest) = t.split_once('-').map_or((0.0, t), |(d, r)| (d.parse().unwrap_or(f64::NAN), r));
    let parts: Vec<f64> = rest.split(':').map(|p| p.parse().unwrap_or(f64::NAN)).collect();
    let secs = parts.iter().fold(0.0, |acc, p| acc * 60.0 + p);
    days * 86_400.0 + secs
}

/// sacct's rows for the jobs and steps of `jobs`, by `JobIDRaw`, each a
/// map of its fields; waits until `want_ended` jobs have ended in the
/// database and none is a stand-in: slurmdbd makes up a job's row
/// (named "allocation", no partition, no array) from its first step's
/// record when that comes before the job's own start record, and fills
/// it in when the job's record comes.
fn sacct(slurm: &Slurm, jobs: &str, fields: &[&str], want_ended: usize) -> BTreeMap<String, BTreeMap<String, String>> {
    let end = Instant::now() + Duration::from_secs(60);
    loop {
        let out = slurm
            .command("sacct")
            .env("TZ", "UTC")
            .args(["-n", "-P", "-j", jobs, "-o", &fields.join(",")])
            .output()
            .expect("sacct runs");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let rows: BTreeMap<String, BTreeMap<String, String>> = text
            .lines()
            .map(|l| {
                let row: BTreeMap<String, String> =
                    fields.iter().zip(l.split('|')).map(|(k, v)| (k.to_string(), v.to_string())).collect();
                (row["JobIDRaw"].clone(), row)
            })
            .collect();
        let jobs_rows = || rows.values().filter(|r| !r["JobIDRaw"].contains('.'));
        let ended = jobs_rows().filter(|r| !r["End"].is_empty() && r["End"] != "Unknown").count();
        let stand_ins = jobs_rows().filter(|r| r["JobName"] == "allocation" && r["Partition"].is_empty()).count();
        if (ended >= want_ended && stand_ins == 0) || Instant::now() > end {
            assert!(out.status.success(), "sacct: {}", String::from_utf8_lossy(&out.stderr));
            return rows;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The script of each array job: CPU work sacct and the record both see,
/// an exit status from the task id (3 for every fifth), and, in task 0, a
/// copy of the ledger while the job runs (its arm, for the exporter).
const SCRIPT: &str = "#!/bin/sh\n\
    head -c 150000000 /dev/zero | md5sum > /dev/null\n\
    sleep 0.3\n\
    [ \"$SLURM_ARRAY_TASK_ID\" = 0 ] && cat \"$LEDGER\"/*.json > ledger.$SLURM_JOB_ID\n\
    [ $((SLURM_ARRAY_TASK_ID % 5)) = 4 ] && exit 3\n\
    [ \"$SLURM_ARRAY_TASK_ID\" = 7 ] && kill -USR1 $$\n\
    exit 0\n";

#[test]
fn a_job_array_experiment_against_sacct() {
    let d = tempfile::tempdir().expect("tmp");
    let key = d.path().join("experiment.key");
    std::fs::write(&key, b"a secret of 32 bytes, test only.").expect("key");
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let words = format!("experiment=t1 arms=auto:1,none:1 unit=job key={}", key.display());
    let mut spec = SlurmSpec::default().accounting().plugstack(plugstack(&words));
    // Start the next job as soon as one ends (not at the next scheduling
    // cycle, seconds later): 12 jobs of about a second on 2 CPUs take 8 s.
    spec.extra_conf.push("SchedulerParameters=batch_sched_delay=0,sched_min_interval=0".into());
    let started = Instant::now();
    let slurm = Slurm::start(&spec).unwrap_or_else(|e| panic!("{e}"));
    let ready = started.elapsed();
    let work = slurm.workdir();
    std::fs::write(work.join("job.sh"), SCRIPT).expect("script");
    let n = 12;
    let ledger = slurm.dir().join("ledger");
    // Submitted at once, waited for by their records (sbatch --wait polls
    // the controller every few seconds).
    let array = slurm
        .command("sbatch")
        .env("LEDGER", &ledger)
        .args(["--parsable", &format!("--array=0-{}", n - 1), "-o", "/dev/null", "-J", "exp", "job.sh"])
        .output()
        .expect("sbatch");
    let array_id = String::from_utf8_lossy(&array.stdout).trim().to_string();
    assert!(!array_id.is_empty(), "sbatch: {array:?}\n{}", slurm.logs());
    // The user's own choice, and a job with a step besides its batch step.
    let chosen = run(&slurm, &["sbatch", "--parsable", "--numa=local", "-o", "/dev/null", "--wrap", "true"]);
    let chosen_id = chosen.stdout.trim().to_string();
    let stepped = run(&slurm, &["sbatch", "--parsable", "-o", "/dev/null", "--wrap", "srun true"]);
    let stepped_id = stepped.stdout.trim().to_string();
    let got = wait_records(slurm.dir(), n + 3);
    let ran = started.elapsed();

    // Exactly one record per step; every array job's batch step is there.
    let mut by_step: BTreeMap<(String, String), &StepOutcome> = BTreeMap::new();
    for r in &got {
        assert!(by_step.insert((r.job.clone(), r.step.clone()), r).is_none(), "two records of {}.{}", r.job, r.step);
    }
    assert_eq!(got.len(), n + 3, "{n} array jobs, the chosen one, a batch step and its srun step: {got:#?}");
    let design = Design::from_words(&words.split_whitespace().collect::<Vec<_>>()).expect("words").expect("design");
    let key_bytes = std::fs::read(&key).expect("key");
    let jobs: Vec<String> = got.iter().map(|r| r.job.clone()).collect();
    let fields = [
        "JobIDRaw",
        "JobID",
        "State",
        "ExitCode",
        "ElapsedRaw",
        "TotalCPU",
        "Start",
        "End",
        "NodeList",
        "Cluster",
        "User",
        "Partition",
        "JobName",
        "Account",
    ];
    let recorded = started.elapsed();
    let acct = sacct(&slurm, &jobs.join(","), &fields, n + 2);
    eprintln!(
        "experiment: records after {:.1} s, sacct after {:.1} s",
        recorded.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
    let host = slurm.node().to_string();
    let mut arms = BTreeMap::new();
    for r in &got {
        let ctx = || format!("{}.{}: {r:?}\nsacct: {:?}", r.job, r.step, acct.get(&r.job));
        // The arm: the library's draw for this job, or the job's own choice.
        if r.job == chosen_id {
            assert_eq!(
                (r.arm.as_str(), r.arm_source, r.placement.mode.as_str()),
                ("local", ArmSource::Chosen, "local")
            );
        } else {
            let s = Subject { cluster: Some("nktest"), job: &r.job, host: &host, start_unix: r.start_unix };
            let (i, _) = assign::arm_index(&design, &key_bytes, "nktest", &s);
            assert_eq!(r.arm, design.arms[i].label, "{}", ctx());
            assert_eq!((r.arm_source, r.placement.mode.as_str()), (ArmSource::Assigned, r.arm.as_str()), "{}", ctx());
            *arms.entry(r.arm.clone()).or_insert(0) += 1;
        }
        assert_eq!(
            (r.experiment.as_deref(), r.arms.as_deref(), r.cluster.as_str(), r.host.as_str()),
            (Some("t1"), Some("auto:1,none:1"), "nktest", host.as_str())
        );
        // sacct's record of the same step.
        let id = format!("{}.{}", r.job, r.step);
        let a = acct.get(&id).unwrap_or_else(|| panic!("sacct has no {id}: {acct:#?}"));
        let job_row = &acct[&r.job];
        assert_eq!(a["NodeList"], host, "{}", ctx());
        assert_eq!(a["Cluster"], r.cluster, "{}", ctx());
        assert_eq!(Some(&job_row["User"]), r.user.as_ref(), "{}", ctx());
        assert_eq!(Some(&job_row["JobName"]), r.job_name.as_ref(), "{}", ctx());
        assert_eq!(Some(&job_row["Partition"]), r.partition.as_ref(), "{}", ctx());
        assert_eq!(Some(&job_row["Account"]), r.account.as_ref(), "{}", ctx());
        // The record's span (the plugin's set-up of the step to its end) lies
        // within Slurm's (its start of the step to its end, which also holds
        // its launch and wind-down: longer on a loaded host), whole seconds:
        // one second either side.
        let start = numakit::units::parse_utc(&a["Start"]).expect("sacct's Start") as f64;
        let elapsed: f64 = a["ElapsedRaw"].parse().expect("ElapsedRaw");
        assert!(
            start - 1.0 <= r.start_unix && r.end_unix <= start + elapsed + 1.0 && r.wall_s <= elapsed + 1.0,
            "record {:.2}..{:.2} ({:.2} s) outside sacct's {} + {elapsed} s: {}",
            r.start_unix,
            r.end_unix,
            r.wall_s,
            a["Start"],
            ctx()
        );
        // TotalCPU: the step's tasks' CPU time, as the record's.
        let total = sacct_duration(&a["TotalCPU"]);
        let cpu = r.cpu_user_s.unwrap_or(f64::NAN) + r.cpu_system_s.unwrap_or(f64::NAN);
        assert!((cpu - total).abs() <= 0.05 + 0.1 * total, "CPU {cpu} vs TotalCPU {}: {}", a["TotalCPU"], ctx());
        // State and exit code against the record's status or signal.
        let code = match (r.exit_status, r.exit_signal) {
            (Some(s), None) => format!("{s}:0"),
            (None, Some(sig)) => format!("0:{sig}"),
            other => panic!("status {other:?}: {}", ctx()),
        };
        assert_eq!(a["ExitCode"], code, "{}", ctx());
        // Slurm 22.05: a step killed by a signal is CANCELLED, one that
        // exited non-zero FAILED.
        let state = match (r.exit_status, r.exit_signal) {
            (Some(0), None) => "COMPLETED",
            (Some(_), None) => "FAILED",
            _ => "CANCELLED",
        };
        assert_eq!(a["State"], state, "{}", ctx());
        assert!(r.wall_s > 0.0 && r.wall_s < 30.0 && r.cpu_efficiency.is_some(), "{}", ctx());
        assert_eq!(r.cpu_source.as_deref(), Some("rusage"), "no step cgroup here (proctrack/linuxproc): {}", ctx());
        if let Some(t) = r.array_task {
            assert_eq!(a["JobID"], format!("{array_id}_{t}.{}", r.step), "{}", ctx());
            assert_eq!(r.array_job.as_deref(), Some(array_id.as_str()), "{}", ctx());
            let burnt = r.job_name.as_deref() == Some("exp");
            assert!(!burnt || cpu > 0.1, "the array job's md5sum: {}", ctx());
        }
    }
    assert!(arms.len() == 2, "both arms in {n} jobs: {arms:?}");
    let stepped: Vec<&StepOutcome> = got.iter().filter(|r| r.job == stepped_id).collect();
    assert_eq!(stepped.len(), 2, "the batch step and its srun step: {got:#?}");
    assert_eq!(stepped[0].arm, stepped[1].arm, "every step of a job has its job's arm");
    let signalled = got.iter().find(|r| r.array_task == Some(7)).expect("task 7");
    assert_eq!((signalled.exit_status, signalled.exit_signal), (None, Some(10)), "killed by SIGUSR1");
    // The ledger while task 0 ran: slurmstepd's entry with the job's arm.
    let task0 = got.iter().find(|r| r.array_task == Some(0)).expect("task 0");
    let seen = std::fs::read_to_string(work.join(format!("ledger.{}", task0.job))).unwrap_or_default();
    let tag = format!("\"arm\":{{\"experiment\":\"t1\",\"arm\":\"{}\",\"source\":\"assigned\"}}", task0.arm);
    assert!(seen.contains(&tag), "the ledger held {tag}: {seen}");
    let left: Vec<_> = std::fs::read_dir(&ledger).expect("ledger").flatten().map(|e| e.file_name()).collect();
    assert!(left.iter().all(|n| !n.to_string_lossy().ends_with(".json")), "entries left: {left:?}");
    let reported = Instant::now();
    check_report(&slurm, &got, &chosen_id);
    let report_s = reported.elapsed().as_secs_f64();

    // The site's hands on the experiment: no job fails, each gets the
    // default, the log says why once per host.
    let mut expect = n + 3;
    let mut one = |what: &str, words: &str| -> StepOutcome {
        slurm.set_plugstack(&plugstack(words)).unwrap_or_else(|e| panic!("{e}"));
        for _ in 0..2 {
            let out = run(&slurm, &["srun", "true"]);
            assert!(out.success(), "{what}: {out:?}");
        }
        expect += 2;
        let r = wait_records(slurm.dir(), expect);
        let last = r.last().cloned().unwrap_or_else(|| panic!("{what}: no record"));
        assert_eq!(
            (last.arm.as_str(), last.arm_source, last.experiment.as_deref(), last.arms.as_deref()),
            ("none", ArmSource::Default, None, None),
            "{what}"
        );
        last
    };
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    one("a key others may read", &words);
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let stop = d.path().join("stop");
    std::fs::write(&stop, "").expect("stop file");
    one("a stop file", &format!("{words} stop={}", stop.display()));
    one("an end date", &format!("{words} until=2020-01-01"));
    one("a bad word", &format!("{words} arms=auto"));
    let log = slurm.log("slurmd");
    let said = |needle: &str| log.lines().filter(|l| l.contains("error: numakit:") && l.contains(needle)).count();
    assert_eq!(said("mode 0644"), 1, "the key's error once, not per job:\n{log}");
    assert_eq!(said("is given twice"), 1, "the bad word once:\n{log}");
    assert!(log.contains("stopped by the site") && log.contains("ended at 2020-01-01T00:00:00Z"), "{log}");
    eprintln!(
        "experiment: Slurm with accounting ready in {:.1} s; {} jobs, records and sacct in {:.1} s; \
         numakit report --sacct {report_s:.1} s; all {:.1} s",
        ready.as_secs_f64(),
        n + 2,
        (ran - ready).as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
}

/// The `numakit` binary cargo built beside this test (`cargo test
/// --workspace` builds it; `cargo build -p numakit-cli` otherwise).
fn numakit() -> PathBuf {
    let exe = std::env::current_exe().expect("the test's path");
    let bin = exe.parent().and_then(Path::parent).expect("profile folder").join("numakit");
    assert!(bin.is_file(), "{} is missing: cargo build -p numakit-cli", bin.display());
    bin
}

/// `numakit report --json --sacct` over the records `got` (the whole
/// reports folder), with sacct run by the report itself against this
/// Slurm's database: the experiment's arms and shares from the records,
/// each arm's jobs and failures as the records have them, the chosen job
/// shown and not compared, every job joined to its sacct row with the
/// same CPU time and a wall time within Slurm's.
fn check_report(slurm: &Slurm, got: &[StepOutcome], chosen_id: &str) {
    let out = slurm
        .command(numakit().to_str().expect("utf8"))
        .args(["report", "--json", "--sacct"])
        .arg(slurm.dir().join("reports"))
        .output()
        .expect("numakit report");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "numakit report: {err}");
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {err}"));
    let c = || format!("{r:#}");
    // Each job's outcome from its records: (arm, source, group, failed).
    let mut jobs: BTreeMap<&str, (&str, ArmSource, &str, bool)> = BTreeMap::new();
    for g in got {
        let failed = g.exit_signal.is_some() || g.exit_status != Some(0);
        let e = jobs.entry(&g.job).or_insert((&g.arm, g.arm_source, g.job_name.as_deref().unwrap_or(""), false));
        e.3 |= failed;
    }
    let all = jobs.len() as u64;
    let failed = jobs.values().filter(|j| j.3).count() as u64;
    assert!(failed >= 3, "tasks 4, 9 exit 3, task 7 a signal: {jobs:?}");
    let counts = &r["input"]["counts"];
    for (k, want) in [("records", got.len() as u64), ("jobs", all), ("failed", failed), ("sacct_matched", all)] {
        assert_eq!(counts[k].as_u64(), Some(want), "{k}: {}", c());
    }
    for k in ["bad", "inconsistent", "sacct_missing"] {
        assert_eq!(counts[k].as_u64(), Some(0), "{k}: {}", c());
    }
    let sacct = &r["sacct"];
    let states: u64 = sacct["states"].as_array().into_iter().flatten().map(|s| s[1].as_u64().unwrap_or(0)).sum();
    assert_eq!(states, all, "{}", c());
    let completed = sacct["states"].as_array().into_iter().flatten().find(|s| s[0] == "COMPLETED");
    assert_eq!(completed.and_then(|s| s[1].as_u64()), Some(all - failed), "{}", c());
    // CPU time is the same; a record's wall time never longer than Slurm's
    // (which adds its launch and wind-down: seconds on a loaded host).
    let (cpu, wall) = (&sacct["cpu"], &sacct["wall"]);
    assert_eq!((cpu["compared"].as_u64(), cpu["agree"].as_u64()), (Some(all), Some(all)), "cpu: {}", c());
    assert_eq!((wall["compared"].as_u64(), wall["longer"].as_u64()), (Some(all), Some(0)), "wall: {}", c());
    let e = &r["experiments"][0];
    assert_eq!(r["experiments"].as_array().map(Vec::len), Some(1), "{}", c());
    assert_eq!((e["name"].as_str(), e["unit"].as_str()), (Some("t1"), Some("job")), "{}", c());
    assert_eq!(e["shares"], serde_json::json!([["auto", 1.0], ["none", 1.0]]), "{}", c());
    assert_eq!(e["shares_from"], "records", "{}", c());
    // Per group (job name) and arm: jobs that ran to the end, and failures.
    let mut want: BTreeMap<(String, String, String), (u64, u64)> = BTreeMap::new();
    for (arm, source, group, bad) in jobs.values() {
        let src = if *source == ArmSource::Assigned { "assigned" } else { "chosen" };
        let w = want.entry((group.to_string(), arm.to_string(), src.to_string())).or_default();
        if *bad {
            w.1 += 1;
        } else {
            w.0 += 1;
        }
    }
    let mut seen: BTreeMap<(String, String, String), (u64, u64)> = BTreeMap::new();
    for g in e["groups"].as_array().into_iter().flatten() {
        for a in g["arms"].as_array().into_iter().flatten().chain(g["not_randomized"].as_array().into_iter().flatten())
        {
            let key = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_string();
            let k = (key(&g["group"]), key(&a["arm"]), key(&a["source"]));
            let v = (a["jobs"].as_u64().unwrap_or(0), a["failed"].as_u64().unwrap_or(0));
            assert!(seen.insert(k, v).is_none(), "one summary per group, arm and source: {}", c());
        }
    }
    assert_eq!(seen, want, "jobs and failures per group and arm: {}", c());
    assert!(seen.keys().any(|k| k.1 == "local" && k.2 == "chosen"), "chosen job {chosen_id}: {}", c());
    let overall: BTreeMap<String, u64> = e["balance"]["overall"]["counts"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|x| (x[0].as_str().unwrap_or_default().to_string(), x[1].as_u64().unwrap_or(0)))
        .collect();
    let mut assigned: BTreeMap<String, u64> = BTreeMap::new();
    for ((_, arm, src), (ok, _)) in &want {
        if src == "assigned" {
            *assigned.entry(arm.clone()).or_default() += ok;
        }
    }
    assert_eq!(overall, assigned, "the balance check's counts (jobs that ran to the end): {}", c());
}

/// The job of the guard loop: a class whose `auto` arm is slower by
/// construction (it sleeps ten times as long under `auto`, read from the
/// mode the plugin gives the job, `NUMAKIT_NUMA`): the machinery is under
/// test, not a NUMA gain.
const SLOW_UNDER_AUTO: &str = "#!/bin/sh\n\
    if [ \"$NUMAKIT_NUMA\" = auto ]; then sleep 2; else sleep 0.2; fi\n";

/// The loop of docs/policy.md in a real Slurm: a policy gives class `sim`
/// an experiment; its records go to `numakit report --guard-file`, which
/// guards `auto` for `sim`; the class's next jobs that would draw `auto`
/// get the control, `none`, recorded `arm_source: guarded`, and those that
/// draw `none` run as drawn.
#[test]
fn a_guard_written_by_the_report_gives_the_class_the_control() {
    let d = tempfile::tempdir().expect("tmp");
    let key = d.path().join("experiment.key");
    std::fs::write(&key, b"a secret of 32 bytes, test only.").expect("key");
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let policy = d.path().join("policy");
    let exp_words = format!("experiment=sim-q1 arms=auto:1,none:1 unit=job key={}", key.display());
    std::fs::write(&policy, format!("rule sim name=sim* {exp_words}\n")).expect("policy");
    let guards = d.path().join("guards");
    let words = format!("policy={} guard={}", policy.display(), guards.display());
    let mut spec = SlurmSpec::default().plugstack(plugstack(&words));
    spec.extra_conf.push("SchedulerParameters=batch_sched_delay=0,sched_min_interval=0".into());
    let slurm = Slurm::start(&spec).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(slurm.workdir().join("sim.sh"), SLOW_UNDER_AUTO).expect("script");
    let submit = |n: usize| {
        let out = run(
            &slurm,
            &["sbatch", "--parsable", &format!("--array=0-{}", n - 1), "-o", "/dev/null", "-J", "sim", "sim.sh"],
        );
        assert!(out.success(), "sbatch: {out:?}\n{}", slurm.logs());
    };
    let n = 24;
    submit(n);
    let first = wait_records(slurm.dir(), n);
    assert_eq!(first.len(), n, "{first:#?}\n{}", slurm.logs());
    let design = Design::from_words(&exp_words.split_whitespace().collect::<Vec<_>>()).expect("words").expect("design");
    let key_bytes = std::fs::read(&key).expect("key");
    let host = slurm.node().to_string();
    let drawn = |r: &StepOutcome| {
        let s = Subject { cluster: Some("nktest"), job: &r.job, host: &host, start_unix: r.start_unix };
        design.arms[assign::arm_index(&design, &key_bytes, "nktest", &s).0].label.clone()
    };
    for r in &first {
        assert_eq!((r.class.as_deref(), r.experiment.as_deref()), (Some("sim"), Some("sim-q1")), "{r:?}");
        assert_eq!((r.arm.clone(), r.arm_source), (drawn(r), ArmSource::Assigned), "{r:?}");
    }
    for arm in ["auto", "none"] {
        assert!(first.iter().filter(|r| r.arm == arm).count() >= 3, "both arms drawn: {first:#?}");
    }

    // The report reads the records and writes the guard.
    let out = slurm
        .command(numakit().to_str().expect("utf8"))
        .args(["report", "--planned", "40", "--guard-file"])
        .arg(&guards)
        .arg(slurm.dir().join("reports"))
        .output()
        .expect("numakit report");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "numakit report: {}", String::from_utf8_lossy(&out.stderr));
    assert!(said.contains("guard written to ") && said.contains("class=sim arm=auto"), "{said}");
    let g =
        numakit::experiment::guard::Guards::parse(&std::fs::read_to_string(&guards).expect("guards")).expect("parse");
    assert_eq!(g.0.len(), 1, "{g:?}");
    assert!(g.stopping("sim", Some("sim-q1"), "auto").is_some(), "{g:?}");

    // The class's next jobs: auto's draws get the control, recorded guarded.
    let mut next = Vec::new();
    for round in 0..4 {
        submit(8);
        let all = wait_records(slurm.dir(), n + 8 * (round + 1));
        next = all[n..].to_vec();
        if next.iter().any(|r| drawn(r) == "auto") {
            break;
        }
    }
    assert!(next.iter().any(|r| drawn(r) == "auto"), "no job drew auto in {} jobs", next.len());
    for r in &next {
        assert_eq!((r.arm.as_str(), r.placement.mode.as_str()), ("none", "none"), "{r:?}");
        let want = if drawn(r) == "auto" { ArmSource::Guarded } else { ArmSource::Assigned };
        assert_eq!(r.arm_source, want, "{r:?}");
    }
    let guarded = next.iter().filter(|r| r.arm_source == ArmSource::Guarded).count();
    let line = said.lines().find(|l| l.contains("guard written")).unwrap_or_default();
    eprintln!("guard loop: {n} jobs, then {line}; of the next {} jobs {guarded} guarded", next.len());
}
