//! What a policy costs a job start, in the process that starts the job
//! (slurmstepd's plugin, a wrapper), measured apart from the job start's
//! other work (`bench/policy.sh` measures whole job starts, where this
//! difference is far below their spread).
//!
//! * `site experiment`: the job's arm drawn from the site's experiment
//!   (the key read, the keyed draw), no policy;
//! * `200-rule policy`: the same job through a 200-rule policy file and a
//!   50-guard file as every job start reads them: both files opened,
//!   read and parsed (a job start is a new process: nothing is cached), the
//!   199 rules before the last one tested and refused, the last one's 5%
//!   holdout drawn with its key, the guards looked up.
//!
//! `cargo bench -p numakit --features experiment --bench policy`

use std::path::{Path, PathBuf};

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use numakit::batch::mode::JobMode;
use numakit::experiment::assign::Subject;
use numakit::experiment::design::Design;
use numakit::experiment::guard::{self, Guards};
use numakit::experiment::policy::assign::{assign_job, Start};
use numakit::experiment::policy::{parse, JobFacts};

fn files(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let key = dir.join("key");
    std::fs::write(&key, [7u8; 32]).expect("key");
    let mut policy = format!("defaults key={} cluster=bench holdout=5%\n", key.display());
    for i in 1..200 {
        policy.push_str(&format!(
            "rule c{i} partition=p{i},q{i} name=job{i}_*,run{i}* cpus={}- mem={i}G- mode=auto\n",
            i % 8 + 2
        ));
    }
    policy.push_str("rule rest mode=auto\n");
    let p = dir.join("policy");
    std::fs::write(&p, policy).expect("policy");
    let g = dir.join("guards");
    std::fs::write(&g, (1..=50).map(|i| format!("guard class=c{i} arm=auto\n")).collect::<String>()).expect("guards");
    (key, p, g)
}

fn read(path: &Path) -> String {
    let (bytes, _) = numakit::files::read_with_metadata(path, 1 << 20, true).expect("read");
    String::from_utf8(bytes).expect("utf-8")
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tmp");
    let (key, policy_path, guard_path) = files(dir.path());
    let site = Design::from_words(&[
        "experiment=numa-q4".to_string(),
        "arms=auto:1,none:1".to_string(),
        "unit=job".to_string(),
        format!("key={}", key.display()),
    ])
    .expect("design")
    .expect("an experiment");
    let facts = JobFacts {
        partition: Some("batch".into()),
        job_name: Some("reco_42".into()),
        cpus: Some(4),
        mem_bytes: Some(8 << 30),
        ..JobFacts::default()
    };
    let subject = Subject { cluster: Some("bench"), job: "123456", host: "node001", start_unix: 1.8e9 };
    let read_key = |p: &Path| Ok(read(p).into_bytes());
    let stop_present = |_: &Path| false;
    let none = Guards::default();
    let start = |site: Option<&'static Design>, guards: &Guards| {
        let s: Start<'_> = Start {
            subject: &subject,
            chosen: None,
            default: &JobMode::None,
            site,
            guards,
            read_key: &read_key,
            stop_present: &stop_present,
        };
        assign_job(None, &s).0
    };
    let site: &'static Design = Box::leak(Box::new(site));

    let mut g = c.benchmark_group("job start");
    g.bench_function("site experiment", |b| b.iter(|| black_box(start(Some(site), &none))));
    g.bench_function("200-rule policy", |b| {
        b.iter(|| {
            let policy = parse::parse(&read(&policy_path)).expect("policy");
            let guards = guard::Guards::parse(&read(&guard_path)).expect("guards");
            let rule = policy.first_match(black_box(&facts)).expect("the last rule");
            let s = Start {
                subject: &subject,
                chosen: None,
                default: &JobMode::None,
                site: None,
                guards: &guards,
                read_key: &read_key,
                stop_present: &stop_present,
            };
            black_box(assign_job(Some(rule), &s).0)
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
