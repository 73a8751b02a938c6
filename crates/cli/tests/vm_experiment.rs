//! An experiment through the SPANK plugin in a real Slurm inside the
//! 4-node test bed guest (`4n-rr`: node k has CPUs k and k+4), one boot,
//! one Slurm (`nk-slurm`: proctrack/cgroup and task/cgroup on cgroup v2,
//! `ConstrainRAMSpace=yes` and not `ConstrainCores`, so every step has a
//! cgroup of its own with the memory controller and its tasks may run on
//! every CPU):
//!
//! - a job array of 40 short jobs under `experiment=vm arms=auto:1,none:1
//!   unit=job`, and one job that chose `--numa=interleave`;
//! - every step leaves exactly one line in `numakit-outcomes.jsonl`; each
//!   job's arm is the library's draw for it recomputed here from the
//!   guest's key (both arms appear), the chosen job is recorded as chosen;
//! - each arm was applied: an `auto` job's CPUs are one node's and its
//!   memory bound there, a `none` job's are every CPU and its memory
//!   policy unchanged, the chosen one's memory interleaved;
//! - plausible figures: wall time at least the job's 1 s sleep and under
//!   a minute, CPU time from the step cgroup's `cpu.stat`, above zero and
//!   at most wall × CPUs, its peak memory from `memory.peak`, exit status
//!   0, the guest's hardware key;
//! - Slurm's accounting runs in the guest (`nk-slurm --accounting`:
//!   slurmdbd on MariaDB), and `numakit report --json --sacct` over the
//!   records, run in the guest as a site runs it, says what the records
//!   say: the experiment's arms and shares (from the records' `arms`), the
//!   jobs per arm, the chosen job shown apart, every job joined to its
//!   sacct row: the same CPU time, and a wall time within Slurm's (the
//!   record's span, from the plugin's set-up of the step to its end, lies
//!   within the span sacct gives the step, whole seconds; sacct's also
//!   holds Slurm's launch and wind-down, seconds long in this slow guest,
//!   so the report must count such jobs as shorter, never longer).
//!
//! The plugin is loaded by every step's slurmstepd: the guest gets a copy
//! without debug information (6 MB instead of 78), which each step maps
//! from the host's disk over 9p.
//!
//! The test bed's memory is equally fast on every node: this proves the
//! machinery, never a gain. Skipped when QEMU cannot run here, failed
//! instead under `CI=true`. `NUMAKIT_PRINT_SCRIPT=1` prints the guest
//! script.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use numakit::experiment::assign::{self, Subject};
use numakit::experiment::{ArmSource, Design, StepOutcome};
use numakit_testbed::{require_vm, RunSpec, Topology, Vm};

const NK: &str = env!("CARGO_BIN_EXE_numakit");

/// Jobs in the array.
const JOBS: usize = 40;

fn beside(name: &str) -> PathBuf {
    Path::new(NK).with_file_name(name)
}

/// The experiment's words, the key's place in the guest.
const WORDS: &str = "experiment=vm arms=auto:1,none:1 unit=job key=/tmp/exp.key";

const SCRIPT: &str = r#"
. @REPO@/crates/cli/tests/vm/lib.sh
slurm_guest nkvm || exit 1
# The controllers Slurm's scope below system.slice gets. Slurm 22.05 never
# sees the last one its cgroup.controllers lists (seemingly the newline left
# on it): with '+cpuset +memory' slurmstepd logs "Controller memory is not
# enabled!", task/cgroup fails with ConstrainRAMSpace and the node drains.
# The kernel lists in its own order; pids comes after memory and is the one
# not seen.
for d in /sys/fs/cgroup /sys/fs/cgroup/system.slice; do echo '+cpuset +cpu +memory +pids' > $d/cgroup.subtree_control; done
# now, mark WHAT: the guest's clock; a progress line on stdout and in the
# kernel log (the console tail a timed-out run shows). exp.sh, run by
# nk-slurm in a shell of its own, defines them again.
now() { cut -d' ' -f1 /proc/uptime; }
mark() { echo "$1 $(now)"; echo "vm_experiment: $1 $(now)" > /dev/kmsg; }
head -c 32 /dev/urandom > /tmp/exp.key && chmod 600 /tmp/exp.key
echo "key $(od -An -v -tx1 /tmp/exp.key | tr -d ' \n')"
# The guest's packages as its kernel counts them (QEMU gives each CPU one).
echo "packages $(cat /sys/devices/system/cpu/cpu*/topology/physical_package_id | sort -u | wc -l)"
printf '#!/bin/sh\nsleep 1\n' > /tmp/job.sh
cat > /tmp/exp.sh <<'NKEND'
now() { cut -d' ' -f1 /proc/uptime; }
mark() { echo "$1 $(now)"; echo "vm_experiment: $1 $(now)" > /dev/kmsg; }
mark slurm_up
sbatch --array=0-@LAST@ -o /dev/null -J exp /tmp/job.sh
sbatch --numa=interleave -J own -o /dev/null --wrap 'sleep 1'
end=$(($(date +%s) + 300))
while [ $(date +%s) -lt $end ]; do
  [ $(cat /tmp/reports/numakit-outcomes.jsonl 2>/dev/null | wc -l) -ge @ALL@ ] && break
  # A step Slurm could not start drains the node: nothing more will run.
  sinfo -h -n $NK_SLURM_NODE -o %T | grep -q drain && break
  sleep 0.2
done
mark jobs_done
sleep 2
# What Slurm did, when a step has no record: the queue, the jobs, the logs.
if [ $(cat /tmp/reports/numakit-outcomes.jsonl 2>/dev/null | wc -l) -lt @ALL@ ]; then
  { echo "ls $(ls -la /tmp/reports 2>&1)"; squeue -a 2>&1; scontrol show job 2>&1 | head -60
    sacct -a -X -S 2020-01-01 -o JobID,JobName,State,ExitCode,Elapsed,NodeList,Reason 2>&1 | head -50
    grep -iE 'cgroup|controller|scope|error' $NK_SLURM_DIR/log/slurmd.log | head -n 80; tail -n 40 $NK_SLURM_DIR/log/slurmctld.log
    tail -n 20 $NK_SLURM_DIR/log/slurmd.out
    for d in /sys/fs/cgroup $(find /sys/fs/cgroup/system.slice -maxdepth 2 -type d); do
      echo "cgroup $d: $(cat $d/cgroup.controllers) / $(cat $d/cgroup.subtree_control) / $(wc -l < $d/cgroup.procs)"
    done
  } > /tmp/diag 2>&1
  sed 's/^/diag /' /tmp/diag
fi
sed 's/^/outcome /' /tmp/reports/numakit-outcomes.jsonl
grep -h 'numakit: .*experiment vm' $NK_SLURM_DIR/log/slurmd.log | sed 's/.*numakit: /log /'
end=$(($(date +%s) + 90))
while [ $(date +%s) -lt $end ]; do
  [ $(sacct -a -n -X -P -o State -S 2020-01-01 2>/dev/null | grep -c '^COMPLETED') -ge @ALL@ ] && break; sleep 0.5
done
mark acct_done
# Slurm's own rows, the jobs' and their steps', beside the report's join
# (times as seconds since the epoch).
SLURM_TIME_FORMAT=%s sacct -a -n -P -o JobIDRaw,Start,End,ElapsedRaw,TotalCPU,State -S 2020-01-01 | sed 's/^/sacct /'
@NK@ report --json --sacct /tmp/reports > /tmp/report.json 2> /tmp/report.err
echo "report_rc $?"
sed 's/^/report /' /tmp/report.json
sed 's/^/report_err /' /tmp/report.err
NKEND
mark start
timeout 600 @NKSLURM@ --ready-timeout 180 --accounting --node nkvm --proctrack proctrack/cgroup --task-plugin task/cgroup \
  --cgroup-conf CgroupPlugin=cgroup/v2 --cgroup-conf IgnoreSystemd=yes --cgroup-conf ConstrainRAMSpace=yes \
  --conf SchedulerParameters=batch_sched_delay=0,sched_min_interval=0 \
  --plugstack "required @SPANK@ ledger=/tmp/ledger socket=/tmp/none.sock report=/tmp/reports @WORDS@" \
  'sh /tmp/exp.sh'
echo "exp_rc $? $(now)"
"#;

/// The plugin without its debug information, beside the built one.
fn stripped_plugin() -> PathBuf {
    let dir = beside("vm-experiment");
    let so = dir.join("libnumakit_spank.so");
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let out = std::process::Command::new("objcopy")
        .arg("--strip-debug")
        .arg(beside("libnumakit_spank.so"))
        .arg(&so)
        .output()
        .unwrap_or_else(|e| panic!("objcopy (binutils): {e}"));
    assert!(out.status.success(), "objcopy: {}", String::from_utf8_lossy(&out.stderr));
    so
}

fn script(plugin: &Path) -> String {
    SCRIPT
        .replace("@REPO@", &numakit_testbed::vm::repo_root().display().to_string())
        .replace("@NKSLURM@", &beside("nk-slurm").display().to_string())
        .replace("@NK@", NK)
        .replace("@SPANK@", &plugin.display().to_string())
        .replace("@WORDS@", WORDS)
        .replace("@LAST@", &(JOBS - 1).to_string())
        .replace("@ALL@", &(JOBS + 1).to_string())
}

/// The first line of `o` that starts with `key ` (without it).
fn field<'a>(o: &'a str, key: &str) -> &'a str {
    let k = format!("{key} ");
    o.lines().find_map(|l| l.strip_prefix(&k)).unwrap_or_else(|| panic!("no {key:?} line in:\n{o}"))
}

fn elapsed(o: &str, from: &str, to: &str) -> f64 {
    let t = |k: &str| -> f64 { field(o, k).split_whitespace().last().and_then(|x| x.parse().ok()).unwrap_or(f64::NAN) };
    t(to) - t(from)
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len() / 2).map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).expect("hex")).collect()
}

fn cpus(list: &str) -> BTreeSet<u32> {
    numakit_testbed::parse_cpulist(list).unwrap_or_else(|e| panic!("{list:?}: {e}")).into_iter().collect()
}

#[test]
fn an_experiment_over_a_job_array() {
    if std::env::var_os("NUMAKIT_PRINT_SCRIPT").is_some() {
        println!("{}", script(&beside("libnumakit_spank.so")));
        return;
    }
    require_vm!();
    for p in ["nk-slurm", "libnumakit_spank.so"] {
        assert!(beside(p).exists(), "{} is missing: build it (cargo test --workspace does)", beside(p).display());
    }
    let topo = Topology::named("4n-rr").expect("topology");
    let spec = RunSpec::default().timeout(Duration::from_secs(900));
    let started = std::time::Instant::now();
    let plugin = stripped_plugin();
    let out = Vm::run_checks(&topo, &[("exp", script(&plugin))], spec).unwrap_or_else(|e| panic!("guest: {e}"));
    let guest = started.elapsed().as_secs_f64();
    let o = &out["exp"].stdout;
    let ctx = || format!("{o}\n--- stderr\n{}", out["exp"].stderr);
    assert_eq!(field(o, "exp_rc").split_whitespace().next(), Some("0"), "{}", ctx());

    let key = hex(field(o, "key"));
    let packages: u32 = field(o, "packages").parse().unwrap_or_else(|e| panic!("packages: {e}: {}", ctx()));
    assert_eq!(key.len(), 32, "{}", ctx());
    let design = Design::from_words(&WORDS.split_whitespace().collect::<Vec<_>>()).expect("words").expect("design");
    let records: Vec<StepOutcome> = o
        .lines()
        .filter_map(|l| l.strip_prefix("outcome "))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    // Every step exactly one line: the array's batch steps and the chosen job's.
    let mut steps = BTreeMap::new();
    for r in &records {
        assert!(steps.insert((r.job.clone(), r.step.clone()), r).is_none(), "two lines for {}.{}", r.job, r.step);
    }
    assert_eq!(records.len(), JOBS + 1, "{}", ctx());
    let tasks: BTreeSet<u32> = records.iter().filter_map(|r| r.array_task).collect();
    assert_eq!(tasks, (0..JOBS as u32).collect(), "every array task: {}", ctx());

    let mut arms: BTreeMap<String, usize> = BTreeMap::new();
    for r in &records {
        let c = || format!("{r:?}\n{}", ctx());
        assert_eq!((r.cluster.as_str(), r.host.as_str(), r.step.as_str()), ("nktest", "nkvm", "batch"), "{}", c());
        assert_eq!(r.experiment.as_deref(), Some("vm"), "{}", c());
        let given = cpus(r.placement.cpus.as_deref().unwrap_or_else(|| panic!("no CPUs: {}", c())));
        let memory = r.placement.memory.as_deref().unwrap_or_default();
        if r.job_name.as_deref() == Some("own") {
            assert_eq!((r.arm.as_str(), r.arm_source), ("interleave", ArmSource::Chosen), "{}", c());
            assert!(memory.starts_with("interleave "), "{}", c());
            continue;
        }
        // The arm the library draws for this job with the guest's key.
        let s = Subject { cluster: Some("nktest"), job: &r.job, host: "nkvm", start_unix: r.start_unix };
        let (i, _) = assign::arm_index(&design, &key, "nktest", &s);
        assert_eq!((r.arm.as_str(), r.arm_source), (design.arms[i].label.as_str(), ArmSource::Assigned), "{}", c());
        *arms.entry(r.arm.clone()).or_default() += 1;
        assert_eq!(r.placement.mode, r.arm, "{}", c());
        match r.arm.as_str() {
            "auto" => {
                let nodes: BTreeSet<u32> = given.iter().map(|c| c % 4).collect();
                assert!(nodes.len() == 1 && memory == format!("bind {}", nodes.iter().next().unwrap_or(&9)), "{}", c());
            }
            _ => assert!(given == (0..8).collect() && memory == "unchanged", "none: every CPU, no policy: {}", c()),
        }
        // Plausible figures, from the step's cgroup.
        assert!(r.wall_s >= 1.0 && r.wall_s < 60.0, "wall: {}", c());
        assert_eq!(r.cpu_source.as_deref(), Some("cpu.stat"), "{}", c());
        let cpu = r.cpu_user_s.unwrap_or(0.0) + r.cpu_system_s.unwrap_or(0.0);
        let had = f64::from(r.cpus.unwrap_or(0));
        assert!(cpu > 0.0 && had >= 1.0 && cpu <= r.wall_s * had, "CPU {cpu} s of {had} CPUs: {}", c());
        assert!(r.cpu_efficiency.is_some_and(|e| e > 0.0 && e <= 1.0), "{}", c());
        assert!(r.peak_memory_bytes.is_some_and(|p| p > 0 && p < 512 << 20), "memory.peak: {}", c());
        assert_eq!((r.exit_status, r.exit_signal), (Some(0), None), "{}", c());
        assert_eq!(r.array_job.is_some(), r.array_task.is_some(), "{}", c());
        assert!(r.numa.is_some(), "the step cgroup's NUMA report: {}", c());
        let hw = &r.hardware;
        let key_head = format!("{packages}p-4n-");
        assert!(hw.key.starts_with(&key_head) && (hw.packages, hw.nodes, hw.cpus) == (packages, 4, 8), "{}", c());
    }
    assert_eq!(arms.len(), 2, "both arms among {JOBS} jobs: {arms:?}");
    let mut gaps = check_spans(o, &records);
    check_report(o, &arms);
    gaps.sort_by(f64::total_cmp);
    eprintln!(
        "vm_experiment: sacct's step span less the record's: median {:.1} s, {:.1} to {:.1} s",
        gaps[gaps.len() / 2],
        gaps[0],
        gaps[gaps.len() - 1]
    );
    eprintln!(
        "vm_experiment: guest run {guest:.1} s; Slurm ready {:.1} s, {} jobs {:.1} s, in sacct {:.1} s; arms {arms:?}",
        elapsed(o, "start", "slurm_up"),
        JOBS + 1,
        elapsed(o, "slurm_up", "jobs_done"),
        elapsed(o, "jobs_done", "acct_done"),
    );
}

/// Job by job, the record's span lies within the span Slurm's accounting
/// gives its step (`JOB.batch`; Start and End in whole seconds, so one
/// second either side), and its wall time is End less Start at most.
/// Returns sacct's seconds less the record's, per step.
fn check_spans(o: &str, records: &[StepOutcome]) -> Vec<f64> {
    let rows: BTreeMap<&str, Vec<&str>> = o
        .lines()
        .filter_map(|l| l.strip_prefix("sacct "))
        .map(|l| l.split('|').collect::<Vec<_>>())
        .filter(|f| f.len() == 6)
        .map(|f| (f[0], f))
        .collect();
    let mut gaps = Vec::new();
    for r in records {
        let id = format!("{}.{}", r.job, r.step);
        let f = rows.get(id.as_str()).unwrap_or_else(|| panic!("no sacct row {id}: {rows:#?}"));
        let secs = |i: usize| f[i].parse::<f64>().unwrap_or_else(|e| panic!("{id}: {:?}: {e}", f[i]));
        let (start, end, elapsed) = (secs(1), secs(2), secs(3));
        assert!(
            start - 1.0 <= r.start_unix && r.end_unix <= end + 1.0 && r.wall_s <= elapsed + 1.0,
            "{id}: record {:.2}..{:.2} ({:.2} s) outside sacct's {start}..{end} ({elapsed} s)",
            r.start_unix,
            r.end_unix,
            r.wall_s
        );
        gaps.push(elapsed - r.wall_s);
    }
    gaps
}

/// `numakit report --json --sacct` as the guest ran it over the records:
/// the experiment's arms and shares from the records, each arm's jobs as
/// the records have them, the chosen job shown and not compared, and every
/// job joined to its row in Slurm's accounting: the same CPU time, and a
/// wall time never longer than Slurm's.
fn check_report(o: &str, arms: &BTreeMap<String, usize>) {
    let all = (JOBS + 1) as u64;
    let text: Vec<&str> = o.lines().filter_map(|l| l.strip_prefix("report ")).collect();
    let errors: Vec<&str> = o.lines().filter_map(|l| l.strip_prefix("report_err ")).collect();
    assert_eq!(field(o, "report_rc"), "0", "numakit report: {errors:?}");
    let r: serde_json::Value =
        serde_json::from_str(&text.join("\n")).unwrap_or_else(|e| panic!("report JSON: {e}: {text:?}"));
    let c = || format!("{r:#}");
    let counts = &r["input"]["counts"];
    for (k, want) in [("records", all), ("jobs", all), ("sacct_matched", all), ("sacct_missing", 0)] {
        assert_eq!(counts[k].as_u64(), Some(want), "{k}: {}", c());
    }
    for k in ["bad", "inconsistent", "failed", "zero_time"] {
        assert_eq!(counts[k].as_u64(), Some(0), "{k}: {}", c());
    }
    let sacct = &r["sacct"];
    assert_eq!(sacct["states"], serde_json::json!([["COMPLETED", all]]), "{}", c());
    // Slurm's rows, jobs' and steps', and the records' times, to see where they part.
    let rows: Vec<&str> = o.lines().filter(|l| l.starts_with("sacct ")).collect();
    let times: Vec<String> = o
        .lines()
        .filter_map(|l| l.strip_prefix("outcome "))
        .filter_map(|l| serde_json::from_str::<StepOutcome>(l).ok())
        .map(|r| format!("{}.{} wall {:.2} s", r.job, r.step, r.wall_s))
        .collect();
    let n = |a: &serde_json::Value, k: &str| a[k].as_u64().unwrap_or(u64::MAX);
    let cpu = &sacct["cpu"];
    assert_eq!((n(cpu, "compared"), n(cpu, "agree")), (all, all), "cpu: {}\n{rows:#?}\n{times:?}", c());
    let wall = &sacct["wall"];
    let got = (n(wall, "compared"), n(wall, "agree") + n(wall, "shorter"), n(wall, "longer"));
    assert_eq!(got, (all, all, 0), "wall: {}\n{rows:#?}\n{times:?}", c());
    assert!(wall["gap_min_s"].as_f64().is_some_and(|g| g > -2.0), "wall: {}", c());
    let exps = r["experiments"].as_array().unwrap_or_else(|| panic!("{}", c()));
    assert_eq!(exps.len(), 1, "{}", c());
    let e = &exps[0];
    assert_eq!((e["name"].as_str(), e["unit"].as_str()), (Some("vm"), Some("job")), "{}", c());
    assert_eq!(e["shares"], serde_json::json!([["auto", 1.0], ["none", 1.0]]), "{}", c());
    assert_eq!(e["shares_from"], "records", "the records' arms field: {}", c());
    let overall: BTreeMap<String, u64> = e["balance"]["overall"]["counts"]
        .as_array()
        .unwrap_or_else(|| panic!("{}", c()))
        .iter()
        .map(|x| (x[0].as_str().unwrap_or_default().to_string(), x[1].as_u64().unwrap_or(0)))
        .collect();
    let want: BTreeMap<String, u64> = arms.iter().map(|(a, n)| (a.clone(), *n as u64)).collect();
    assert_eq!(overall, want, "balance: {}", c());
    assert_eq!(e["balance"]["unknown_arms"], serde_json::json!([]), "{}", c());
    // Grouped by job name: the array's jobs compared, the chosen one shown apart.
    let group = |name: &str| {
        let g: Vec<&serde_json::Value> =
            e["groups"].as_array().into_iter().flatten().filter(|g| g["group"] == name).collect();
        assert_eq!(g.len(), 1, "one hardware key, one group {name}: {}", c());
        g[0]
    };
    let exp = group("exp");
    let per_arm: BTreeMap<String, u64> = exp["arms"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|a| {
            assert_eq!((a["source"].as_str(), a["failed"].as_u64()), (Some("assigned"), Some(0)), "{}", c());
            (a["arm"].as_str().unwrap_or_default().to_string(), a["jobs"].as_u64().unwrap_or(0))
        })
        .collect();
    assert_eq!(per_arm, want, "jobs per arm: {}", c());
    let cmp = exp["comparisons"].as_array().unwrap_or_else(|| panic!("{}", c()));
    assert_eq!((cmp.len(), cmp[0]["arm"].as_str(), cmp[0]["control"].as_str()), (1, Some("auto"), Some("none")));
    assert!(cmp[0]["wall"]["n"] == serde_json::json!([want["auto"], want["none"]]), "{}", c());
    let own = group("own");
    assert_eq!(own["arms"], serde_json::json!([]), "{}", c());
    let chosen = &own["not_randomized"][0];
    assert_eq!(
        (chosen["arm"].as_str(), chosen["source"].as_str(), chosen["jobs"].as_u64()),
        (Some("interleave"), Some("chosen"), Some(1))
    );
}
