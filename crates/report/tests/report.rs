//! `numakit_report::report` on small hand-made inputs whose answers are
//! known exactly: what a job's outcome is (steps, hosts, extern, failures),
//! inputs of every kind (folders, gzip, other schemas, bad lines), the
//! sacct join job by job, per-host designs analysed by host.

use std::io::Write;
use std::path::Path;

use numakit::experiment::{ArmSource, Hardware, Placement, StepOutcome, Unit, SCHEMA};
use numakit_report::input::{expand, Source};
use numakit_report::{report, Options, ReadOptions, SacctFrom};

fn rec(job: u64, step: &str, host: &str, arm: &str, start: f64, end: f64, cpu: f64) -> StepOutcome {
    StepOutcome {
        class: None,
        schema: SCHEMA.into(),
        cluster: "farm".into(),
        job: job.to_string(),
        step: step.into(),
        array_job: None,
        array_task: None,
        host: host.into(),
        user: Some("u".into()),
        job_name: Some("reco".into()),
        partition: None,
        account: None,
        batch_system: "slurm".into(),
        experiment: Some("q4".into()),
        unit: Some(Unit::Job),
        period: None,
        arm: arm.into(),
        arm_source: ArmSource::Assigned,
        arms: Some("auto:50,none:50".into()),
        placement: Placement::default(),
        start_unix: start,
        end_unix: end,
        wall_s: end - start,
        cpu_user_s: Some(cpu * 0.9),
        cpu_system_s: Some(cpu * 0.1),
        cpu_source: Some("cpu.stat".into()),
        cpus: Some(2),
        cpu_efficiency: None,
        peak_memory_bytes: None,
        exit_status: Some(0),
        exit_signal: None,
        numa: None,
        numakit_version: "0".into(),
        hardware: Hardware {
            key: "k".into(),
            packages: 1,
            nodes: 1,
            cores: 1,
            cpus: 1,
            node_mem_bytes: vec![],
            cpu_model: None,
        },
    }
}

fn write(path: &Path, recs: &[StepOutcome], extra: &[&str]) {
    let mut f = std::fs::File::create(path).expect("create");
    for r in recs {
        writeln!(f, "{}", serde_json::to_string(r).expect("json")).expect("write");
    }
    for e in extra {
        writeln!(f, "{e}").expect("write");
    }
}

fn read(sources: &[Source], r: &ReadOptions) -> numakit_report::Report {
    report(sources, r, &Options::default()).expect("report")
}

#[test]
fn a_jobs_outcome_spans_its_steps_and_sums_their_cpu() {
    let dir = tempfile::tempdir().expect("tmp");
    let mut recs = vec![
        // job 1: batch step 0..100 s, srun step 10..90 s on two hosts: wall 100, CPU 10 + 70 + 80
        rec(1, "batch", "a", "auto", 1000.0, 1100.0, 10.0),
        rec(1, "0", "a", "auto", 1010.0, 1090.0, 70.0),
        rec(1, "0", "b", "auto", 1010.0, 1090.0, 80.0),
        rec(1, "extern", "a", "auto", 990.0, 1200.0, 0.5),
        // job 2: one step, 400 s, CPU 40
        rec(2, "batch", "a", "auto", 2000.0, 2400.0, 40.0),
        // job 3: failed
        rec(3, "batch", "b", "auto", 3000.0, 3050.0, 5.0),
        // job 4: lines disagree on the arm
        rec(4, "batch", "a", "auto", 4000.0, 4100.0, 1.0),
        rec(4, "0", "a", "none", 4000.0, 4100.0, 1.0),
        // jobs 5, 6: control
        rec(5, "batch", "b", "none", 5000.0, 5200.0, 20.0),
        rec(6, "batch", "b", "none", 6000.0, 6800.0, 80.0),
    ];
    recs[5].exit_status = Some(1);
    write(&dir.path().join("numakit-outcomes.jsonl"), &recs, &[r#"{"schema":"numakit-cgroup-report/1"}"#, "garbage"]);
    let r = read(&expand(&[dir.path().to_path_buf()]).expect("expand"), &ReadOptions::default());
    let c = r.input.counts;
    assert_eq!((c.lines, c.records, c.other_schema, c.bad, c.extern_lines), (12, 10, 1, 1, 1), "{c:?}");
    assert_eq!((c.jobs, c.failed, c.inconsistent), (6, 1, 1), "{c:?}");
    assert!(r.input.bad_examples[0].contains("numakit-outcomes.jsonl: line 12:"), "{:?}", r.input.bad_examples);
    let g = &r.experiments[0].groups[0];
    let auto = g.arms.iter().find(|a| a.arm == "auto").expect("auto");
    // jobs 1 and 2: wall 100 and 400 (geo mean 200), CPU 160 and 40 (geo mean 80)
    assert_eq!((auto.jobs, auto.failed, auto.cpu_jobs), (2, 1, 2));
    assert!((auto.wall_geo_mean_s.expect("gm") - 200.0).abs() < 1e-9, "{auto:?}");
    assert!((auto.cpu_geo_mean_s.expect("gm") - 80.0).abs() < 1e-9, "{auto:?}");
    let none = g.arms.iter().find(|a| a.arm == "none").expect("none");
    assert!((none.wall_geo_mean_s.expect("gm") - 400.0).abs() < 1e-9, "{none:?}");
    let w = g.comparisons[0].wall.as_ref().expect("2 and 2 jobs");
    assert!((w.ratio - 0.5).abs() < 1e-12 && w.n == [2, 2], "{w:?}");
}

#[test]
fn gzip_stdin_like_streams_and_a_sacct_file_join_job_by_job() {
    let dir = tempfile::tempdir().expect("tmp");
    let recs: Vec<StepOutcome> = (0..40)
        .map(|j| rec(100 + j, "batch", "a", if j % 2 == 0 { "auto" } else { "none" }, 0.0, 100.0 + j as f64, 50.0))
        .collect();
    let plain = dir.path().join("x.jsonl");
    write(&plain, &recs, &[]);
    // gzip by its magic, whatever the name; two members back to back
    let gz = dir.path().join("x.data");
    let bytes = std::fs::read(&plain).expect("read");
    let half = bytes.len() / 2;
    let cut = half + bytes[half..].iter().position(|&b| b == b'\n').expect("nl") + 1;
    let mut f = std::fs::File::create(&gz).expect("create");
    for part in [&bytes[..cut], &bytes[cut..]] {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(part).expect("gz");
        f.write_all(&e.finish().expect("gz")).expect("write");
    }
    drop(f);
    // sacct: a header, jobs 100..139 (101 timed out, 102's span 10 s longer than its records',
    // 103's 6 s shorter), their steps, one job of no record
    let mut s = String::from("JobIDRaw|Cluster|ElapsedRaw|TotalCPU|State|ExitCode\n");
    for j in 100..140 {
        let elapsed = 100 + (j - 100) + [(102, 10), (103, -6)].iter().find(|x| x.0 == j).map_or(0, |x| x.1);
        let state = if j == 101 { "TIMEOUT" } else { "COMPLETED" };
        s.push_str(&format!(
            "{j}|farm|{elapsed}|00:50.000|{state}|0:0\n{j}.batch|farm|{elapsed}|00:50.000|COMPLETED|0:0\n"
        ));
    }
    s.push_str("999|farm|5|00:01|COMPLETED|0:0\n");
    let sacct = dir.path().join("sacct.txt");
    std::fs::write(&sacct, s).expect("write");
    let opts = ReadOptions { sacct: SacctFrom::File(sacct), ..ReadOptions::default() };
    let r = read(&[Source::File(gz)], &opts);
    assert_eq!((r.input.gzip_inputs, r.input.counts.records), (1, 40));
    let c = r.input.counts;
    assert_eq!((c.sacct_matched, c.sacct_missing, c.sacct_only, c.failed), (40, 0, 1, 1), "{c:?}");
    let sj = r.sacct.as_ref().expect("sacct");
    assert_eq!(sj.rows, [41, 40, 0]);
    let w = &sj.wall;
    assert_eq!((w.compared, w.agree, w.shorter, w.longer), (40, 38, 1, 1), "{w:?}");
    assert!((w.gap_mean_s - 0.1).abs() < 1e-9 && (w.gap_min_s, w.gap_max_s) == (-6.0, 10.0), "{w:?}");
    assert_eq!((w.worst[0].0.as_str(), w.worst[1].0.as_str()), ("farm/102", "farm/103"), "{w:?}");
    assert_eq!((sj.cpu.compared, sj.cpu.agree), (40, 40));
    assert!(sj.states.contains(&("TIMEOUT".to_string(), 1)), "{:?}", sj.states);
    // outcomes from sacct: job 102's wall is sacct's 112 s
    let opts = ReadOptions { outcome_from_sacct: true, ..opts };
    let r2 = read(&[Source::File(dir.path().join("x.data"))], &opts);
    let auto = |r: &numakit_report::Report| {
        r.experiments[0].groups[0].arms.iter().find(|a| a.arm == "auto").cloned().expect("auto")
    };
    let (a1, a2) = (auto(&r), auto(&r2));
    assert_eq!(a1.jobs, a2.jobs);
    assert!(a2.wall_geo_mean_s > a1.wall_geo_mean_s, "{a1:?} {a2:?}");
}

#[test]
fn per_host_arms_are_analysed_by_host() {
    // 8 hosts, 4 per arm, 30 jobs each; host h's jobs take 100 × (1 + h/100) s, auto hosts 10% less
    let dir = tempfile::tempdir().expect("tmp");
    let mut recs = Vec::new();
    let mut job = 0;
    for h in 0..8u32 {
        let arm = if h % 2 == 0 { "auto" } else { "none" };
        for i in 0..30 {
            job += 1;
            let t = 100.0
                * (1.0 + f64::from(h) / 100.0)
                * if arm == "auto" { 0.9 } else { 1.0 }
                * (1.0 + f64::from(i % 5) / 50.0);
            let mut r = rec(job, "batch", &format!("h{h}"), arm, 0.0, t, t);
            r.unit = Some(Unit::Host);
            recs.push(r);
        }
    }
    let p = dir.path().join("h.jsonl");
    write(&p, &recs, &[]);
    let r = read(&[Source::File(p)], &ReadOptions::default());
    let e = &r.experiments[0];
    assert_eq!(e.unit, "host");
    let c = &e.groups[0].comparisons[0];
    let w = c.wall.as_ref().expect("4 and 4 hosts");
    assert_eq!((c.analysed_by.as_str(), w.n), ("host", [4, 4]), "jobs are not the units");
    assert!((w.df - 6.0).abs() < 0.5, "df from hosts, not jobs: {}", w.df);
    assert!(w.ci_low < 0.9 * 0.99 && w.ci_high > 0.9 * 0.99 && w.ci_high < 1.0, "{w:?}");
    assert_eq!(e.balance.overall.as_ref().map(|b| b.counts.iter().map(|x| x.1).sum::<u64>()), Some(8), "hosts counted");
}
