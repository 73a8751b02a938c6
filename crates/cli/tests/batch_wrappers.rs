//! The job wrappers in contrib/batch, invoked as each batch system invokes
//! them (arguments and environment as HTCondor's USER_JOB_WRAPPER, LSF's
//! JOB_STARTER and Torque's $job_starter give them), with the real
//! numakit and numactl: the job runs with its exit status and arguments
//! intact, placed by `run --auto` (its memory policy read back by `numactl
//! --show` inside the job), or unplaced and excluded where it asked.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const NK: &str = env!("CARGO_BIN_EXE_numakit");

fn contrib(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../contrib/batch").join(name)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A wrapper run with a clean environment: numakit's binary, a private
/// ledger, no CPU sampling (the ledger's jobs are the load, as the batch
/// system counts CPUs, so a busy test machine does not change the result),
/// no daemon, and what `env` adds.
fn wrapper(ledger: &Path, env: &[(&str, &str)]) -> Command {
    let mut c = Command::new("/bin/sh");
    c.env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("NUMAKIT", NK)
        .env("NUMAKIT_WAIT", "0")
        .env("NUMAKIT_SOCKET", "/nonexistent.sock")
        .env("NUMAKIT_RUN_ARGS", format!("--sample 0 --ledger {}", ledger.display()));
    for (k, v) in env {
        c.env(k, v);
    }
    c
}

fn run(c: &mut Command) -> Output {
    c.output().expect("run wrapper")
}

/// `numactl --show`'s policy and membind lines of a job's output.
fn policy(o: &Output) -> (String, String) {
    let out = text(&o.stdout);
    let get = |k: &str| out.lines().find_map(|l| l.strip_prefix(k)).map_or(String::new(), |v| v.trim().to_string());
    (get("policy:"), get("membind:"))
}

#[test]
fn htcondor_wrapper_places_the_job_and_keeps_its_arguments_and_status() {
    let d = tempfile::tempdir().expect("tmp");
    let ad = d.path().join(".machine.ad");
    std::fs::write(&ad, "Name = \"slot1@wn\"\nCpus = 1\nMemory = 1024\n").expect("ad");
    let job_ad = d.path().join(".job.ad");
    std::fs::write(&job_ad, "ClusterId = 7\nRequestCpus = 1\n").expect("ad");
    let ledger = d.path().join("ledger");
    let env = [
        ("_CONDOR_MACHINE_AD", ad.to_str().expect("utf8")),
        ("_CONDOR_JOB_AD", job_ad.to_str().expect("utf8")),
        ("_CONDOR_SCRATCH_DIR", d.path().to_str().expect("utf8")),
    ];
    // HTCondor: `wrapper EXECUTABLE ARGS...`.
    let script = "numactl --show; printf '<%s>' \"$@\"; echo; exit 3";
    let o = run(wrapper(&ledger, &env).args([
        contrib("htcondor-user-job-wrapper").to_str().expect("utf8"),
        "/bin/sh",
        "-c",
        script,
        "job",
        "a b",
        "",
        "*",
    ]));
    assert_eq!(o.status.code(), Some(3), "the job's status: {}", text(&o.stderr));
    assert!(text(&o.stdout).contains("<a b><><*>"), "arguments intact: {}", text(&o.stdout));
    assert_eq!(policy(&o), ("bind".to_string(), "0".to_string()), "{}", text(&o.stdout));
    assert_eq!(text(&o.stderr), "", "a placed job says nothing");

    // The job ad asks for none: unplaced, and the missing daemon is one
    // warning line, not a failure.
    std::fs::write(&job_ad, "ClusterId = 7\nNumakitNuma = \"none\"\n").expect("ad");
    let o = run(wrapper(&ledger, &env).args([
        contrib("htcondor-user-job-wrapper").to_str().expect("utf8"),
        "/usr/bin/numactl",
        "--show",
    ]));
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(policy(&o).0, "default");
    assert_eq!(
        text(&o.stderr).trim(),
        "numakit: no numakit daemon answers at /nonexistent.sock: nothing to exclude the job from"
    );
}

#[test]
fn lsf_job_starter_runs_the_users_command_line_through_the_shell() {
    let d = tempfile::tempdir().expect("tmp");
    let ledger = d.path().join("ledger");
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").expect("hostname");
    let hosts = format!("{} 1 otherhost 4", host.trim());
    let env = [("LSB_JOBID", "42"), ("LSB_MCPU_HOSTS", hosts.as_str()), ("LSB_DJOB_NUMPROC", "5")];
    // lsb.queues: JOB_STARTER = lsf-job-starter "%USRCMD"; LSF runs the
    // line with /bin/sh -c after putting the user's command in.
    let line =
        format!("{} \"numactl --show | grep -e policy -e membind; exit 4\"", contrib("lsf-job-starter").display());
    let o = run(wrapper(&ledger, &env).args(["-c", &line]));
    assert_eq!(o.status.code(), Some(4), "{}", text(&o.stderr));
    assert_eq!(policy(&o), ("bind".to_string(), "0".to_string()), "{}", text(&o.stdout));

    // A job larger than the machine (LSF gave it this host's 999 slots):
    // it does not fit, so it runs unplaced and says so on its stderr.
    let hosts = format!("{} 999", host.trim());
    let env = [("LSB_JOBID", "43"), ("LSB_MCPU_HOSTS", hosts.as_str())];
    let line = format!("{} \"numactl --show\"", contrib("lsf-job-starter").display());
    let o = run(wrapper(&ledger, &env).args(["-c", &line]));
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(policy(&o).0, "default");
    let err = text(&o.stderr);
    assert!(
        err.starts_with("numakit: cannot place the job: the job needs 999 CPUs")
            && err.trim_end().ends_with("running it unplaced"),
        "{err}"
    );
    // With NUMAKIT_IF_NO_FIT=exit the site's requeue rule sees 75.
    let o = run(wrapper(&ledger, &env).env("NUMAKIT_IF_NO_FIT", "exit").args(["-c", &line]));
    assert_eq!(o.status.code(), Some(75), "{}", text(&o.stderr));
}

#[test]
fn pbs_job_starter_and_the_sites_allowed_modes() {
    let d = tempfile::tempdir().expect("tmp");
    let ledger = d.path().join("ledger");
    let env = [("PBS_JOBID", "12.server"), ("PBS_NUM_PPN", "1"), ("PBS_ENVIRONMENT", "PBS_BATCH")];
    // pbs_mom: `starter COMMAND ARGS...`.
    let o = run(wrapper(&ledger, &env).args([
        contrib("pbs-job-starter").to_str().expect("utf8"),
        "/usr/bin/numactl",
        "--show",
    ]));
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(policy(&o), ("bind".to_string(), "0".to_string()));
    // A mode the site does not allow: the job fails with one line naming it.
    let o = run(wrapper(&ledger, &env)
        .env("NUMAKIT_NUMA", "interleave")
        .args([contrib("pbs-job-starter").to_str().expect("utf8"), "/bin/true"]));
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        text(&o.stderr).trim(),
        "numakit-job-wrapper: NUMAKIT_NUMA=interleave is not allowed here (allowed: auto none off)"
    );
    // off: the job as is.
    let o = run(wrapper(&ledger, &env).env("NUMAKIT_NUMA", "off").args([
        contrib("pbs-job-starter").to_str().expect("utf8"),
        "/usr/bin/numactl",
        "--show",
    ]));
    assert_eq!(policy(&o).0, "default");
}

#[test]
fn concurrent_wrapped_jobs_are_recorded_and_forgotten_when_they_end() {
    let d = tempfile::tempdir().expect("tmp");
    let ledger = d.path().join("ledger");
    let env = [("PBS_NUM_PPN", "1")];
    let mut jobs: Vec<std::process::Child> = (0..2)
        .map(|_| {
            wrapper(&ledger, &env)
                .args([contrib("pbs-job-starter").to_str().expect("utf8"), "sleep", "30"])
                .spawn()
                .expect("spawn")
        })
        .collect();
    // Both recorded, each under its own pid (the wrapper execs numakit,
    // which execs the job: one pid throughout).
    let pids: Vec<u32> = jobs.iter().map(|j| j.id()).collect();
    let t = std::time::Instant::now();
    let entries = loop {
        let mut names: Vec<String> = std::fs::read_dir(&ledger)
            .map(|r| r.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
            .unwrap_or_default();
        names.retain(|n| n.ends_with(".json"));
        names.sort();
        if names.len() == 2 || t.elapsed().as_secs() > 10 {
            break names;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let mut want: Vec<String> = pids.iter().map(|p| format!("{p}.json")).collect();
    want.sort();
    assert_eq!(entries, want);
    for j in &mut jobs {
        j.kill().expect("kill");
        j.wait().expect("wait");
    }
    // The next placement forgets them (their processes are gone).
    let o = run(wrapper(&ledger, &env).args([contrib("pbs-job-starter").to_str().expect("utf8"), "true"]));
    assert!(o.status.success(), "{}", text(&o.stderr));
    let left: Vec<_> = std::fs::read_dir(&ledger)
        .expect("ledger")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
        .collect();
    assert_eq!(left.len(), 1, "only the last job's entry (its pid ended too, but nobody looked since)");
}

/// The records a wrapped job left in `dir`.
fn outcomes(dir: &Path) -> Vec<numakit::experiment::StepOutcome> {
    let text = std::fs::read_to_string(dir.join("numakit-outcomes.jsonl")).unwrap_or_default();
    text.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect()
}

#[test]
fn an_experiment_assigns_arms_and_each_job_leaves_its_record() {
    use numakit::experiment::assign::{self, Subject};
    use numakit::experiment::{ArmSource, Design};
    let d = tempfile::tempdir().expect("tmp");
    let ledger = d.path().join("ledger");
    let out = d.path().join("outcomes");
    let key = d.path().join("experiment.key");
    std::fs::write(&key, b"a key the jobs' users may read..").expect("key");
    let words = format!("experiment=w arms=auto:1,none:1 key={} cluster=farm", key.display());
    let design = Design::from_words(&words.split_whitespace().collect::<Vec<_>>()).expect("words").expect("design");
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").expect("hostname");
    let host = host.trim().split('.').next().unwrap_or_default().to_string();
    let starter = contrib("lsf-job-starter");
    let line = format!("{} \"numactl --show | grep -e '^policy'; exit 5\"", starter.display());
    let jobs: Vec<String> = (500..510).map(|j| j.to_string()).collect();
    for job in &jobs {
        let env = [
            ("LSB_JOBID", job.as_str()),
            ("LSB_DJOB_NUMPROC", "1"),
            ("LSB_QUEUE", "normal"),
            ("NUMAKIT_EXPERIMENT", words.as_str()),
            ("NUMAKIT_OUTCOMES", out.to_str().expect("utf8")),
        ];
        let o = run(wrapper(&ledger, &env).args(["-c", &line]));
        assert_eq!(o.status.code(), Some(5), "the job's status through numakit: {}", text(&o.stderr));
        assert_eq!(text(&o.stderr), "", "an assigned job says nothing");
        let r = outcomes(&out).pop().expect("a record");
        assert_eq!((r.job.as_str(), r.step.as_str(), r.batch_system.as_str()), (job.as_str(), "job", "lsf"));
        let s = Subject { cluster: Some("farm"), job, host: &host, start_unix: r.start_unix };
        let (i, _) = assign::arm_index(&design, &std::fs::read(&key).expect("key"), "farm", &s);
        assert_eq!((r.arm.as_str(), r.arm_source), (design.arms[i].label.as_str(), ArmSource::Assigned));
        assert_eq!(r.arms.as_deref(), Some("auto:1,none:1"), "the configured arms, for the report's balance check");
        // The arm was applied to the job: numactl --show inside it.
        let want = if r.arm == "auto" { "bind" } else { "default" };
        assert_eq!(policy(&o).0, want, "{r:?}");
        assert_eq!((r.cluster.as_str(), r.partition.as_deref(), r.exit_status), ("farm", Some("normal"), Some(5)));
        assert!(r.wall_s > 0.0 && r.cpu_source.as_deref() == Some("rusage") && r.cpu_user_s.is_some(), "{r:?}");
        assert_eq!(r.host, host);
    }
    let arms: std::collections::BTreeSet<String> = outcomes(&out).into_iter().map(|r| r.arm).collect();
    assert_eq!(arms.len(), 2, "both arms in {} jobs", jobs.len());
    // The job's own choice wins and is recorded as chosen; a job killed by
    // a signal is recorded so, and its wrapper dies of the same signal.
    let pbs = [
        ("PBS_JOBID", "77.server"),
        ("PBS_NUM_PPN", "1"),
        ("NUMAKIT_NUMA", "none"),
        ("NUMAKIT_EXPERIMENT", words.as_str()),
        ("NUMAKIT_OUTCOMES", out.to_str().expect("utf8")),
    ];
    let o = run(wrapper(&ledger, &pbs).args([
        contrib("pbs-job-starter").to_str().expect("utf8"),
        "/bin/sh",
        "-c",
        "kill -TERM $$",
    ]));
    use std::os::unix::process::ExitStatusExt as _;
    assert_eq!(o.status.signal(), Some(15), "{o:?}");
    let r = outcomes(&out).pop().expect("a record");
    assert_eq!((r.job.as_str(), r.arm.as_str(), r.arm_source), ("77.server", "none", ArmSource::Chosen));
    assert_eq!(r.arms.as_deref(), Some("auto:1,none:1"), "chosen within the running experiment");
    assert_eq!((r.exit_status, r.exit_signal), (None, Some(15)));
    // A key that cannot be read: the job runs with the site's default, one line says why.
    let broken = words.replace(key.to_str().expect("utf8"), "/nonexistent/key");
    let env = [
        ("PBS_JOBID", "78.server"),
        ("NUMAKIT_EXPERIMENT", broken.as_str()),
        ("NUMAKIT_OUTCOMES", out.to_str().expect("utf8")),
    ];
    let o = run(wrapper(&ledger, &env).args([contrib("pbs-job-starter").to_str().expect("utf8"), "/bin/true"]));
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("experiment w: key /nonexistent/key: "), "{}", text(&o.stderr));
    let r = outcomes(&out).pop().expect("a record");
    assert_eq!((r.arm.as_str(), r.arm_source, r.experiment, r.arms), ("auto", ArmSource::Default, None, None));
    let o = run(wrapper(&ledger, &env).args([contrib("pbs-job-starter").to_str().expect("utf8"), "/bin/true"]));
    assert_eq!(text(&o.stderr), "", "said once per host and user");
}
