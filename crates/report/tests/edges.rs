//! `numakit_report::report` at the edges of its input: numbers at the
//! ends of the float range, options at the ends of theirs. Every case
//! must give a report whose figures are finite (or absent), never a
//! panic, a hang or a NaN.

use std::io::Write;
use std::path::Path;

use numakit_report::input::Source;
use numakit_report::{report, Options, ReadOptions, Report};

/// One record line: job `job` of arm `arm` from `start` to `end`, CPU `cpu`.
fn line(job: u64, host: &str, arm: &str, start: f64, end: f64, cpu: f64) -> String {
    format!(
        r#"{{"schema":"numakit-step-outcome/1","cluster":"farm","job":"{job}","step":"batch","host":"{host}","job_name":"reco","experiment":"q4","unit":"job","arm":"{arm}","arm_source":"assigned","arms":"auto:1,none:1","start_unix":{start:e},"end_unix":{end:e},"wall_s":{wall:e},"cpu_user_s":{cpu:e},"cpu_system_s":0.5,"exit_status":0,"numa":{{"locality":0.9}},"hardware":{{"key":"k1"}}}}"#,
        wall = if (end - start).is_finite() { end - start } else { 1.0 }
    )
}

/// 40 ordinary jobs, half in each arm, on 4 hosts.
fn ordinary() -> Vec<String> {
    (0..40u64)
        .map(|j| {
            let t = 100.0 * (1.0 + (j % 7) as f64 / 20.0) * if j % 2 == 0 { 0.95 } else { 1.0 };
            let arm = if j % 2 == 0 { "auto" } else { "none" };
            line(1000 + j, &format!("h{}", j % 4), arm, 1.0e9 + j as f64, 1.0e9 + j as f64 + t, t)
        })
        .collect()
}

fn write(path: &Path, lines: &[String]) {
    let mut f = std::fs::File::create(path).expect("create");
    for l in lines {
        writeln!(f, "{l}").expect("write");
    }
}

fn run(lines: &[String], o: &Options) -> Report {
    let dir = tempfile::tempdir().expect("tmp");
    let p = dir.path().join("r.jsonl");
    write(&p, lines);
    report(&[Source::File(p)], &ReadOptions { threads: 2, ..ReadOptions::default() }, o).expect("report")
}

/// Every number of the report's comparisons and arms, named.
fn numbers(r: &Report) -> Vec<(String, f64)> {
    let mut out = Vec::new();
    for e in &r.experiments {
        for g in &e.groups {
            for a in g.arms.iter().chain(&g.not_randomized) {
                for (k, v) in [("gm", a.wall_geo_mean_s), ("sd", a.wall_sd_log), ("cpu", a.cpu_geo_mean_s)] {
                    out.extend(v.map(|v| (format!("{} {k}", a.arm), v)));
                }
            }
            for c in &g.comparisons {
                for (k, e) in [("wall", &c.wall), ("cpu", &c.cpu)] {
                    if let Some(e) = e {
                        for (n, v) in [("ratio", e.ratio), ("lo", e.ci_low), ("hi", e.ci_high), ("p", e.p_value)] {
                            out.push((format!("{k} {n}"), v));
                        }
                    }
                }
                if let Some(v) = &c.variation {
                    out.extend([("spread".to_string(), v.ratio), ("spread p".to_string(), v.p_value)]);
                }
            }
        }
    }
    for h in &r.hosts.flagged {
        out.extend([("host diff".to_string(), h.difference), ("host z".to_string(), h.robust_z)]);
    }
    out
}

#[test]
fn spans_and_times_at_the_ends_of_the_float_range_are_bad_lines() {
    let mut lines = ordinary();
    // the issue's record: a span of 3.4e308 s, beyond any float
    lines.push(line(1, "h0", "auto", -1.7e308, 1.7e308, 1.0));
    lines.push(line(2, "h1", "none", -1.7e308, 1.7e308, 1.0));
    // finite times, but before 1970 or after 9999, and a CPU time whose sum overflows
    lines.push(line(3, "h2", "auto", -5.0, 10.0, 1.0));
    lines.push(line(4, "h2", "none", 1.0e9, 1.0e300, 1.0));
    lines.push(line(5, "h3", "auto", 1.0e9, 1.0e9 + 50.0, 1.7e308));
    // one job, two lines each within the range: its span must stay finite too
    lines.push(line(6, "h3", "none", 1.0e9, 1.0e9 + 10.0, 1.0));
    lines.push(line(6, "h3", "none", 2.0e11, 2.0e11 + 10.0, 1.0));
    let r = run(&lines, &Options::default());
    let c = r.input.counts;
    assert_eq!((c.records, c.bad), (42, 5), "{c:?} {:?}", r.input.bad_examples);
    assert!(r.input.bad_examples.iter().any(|b| b.contains("line 41:")), "{:?}", r.input.bad_examples);
    for (what, v) in numbers(&r) {
        assert!(v.is_finite(), "{what} is {v}");
    }
    // job 6 is a job of 2e11 s: odd, and a number
    let w = r.experiments[0].groups[0].comparisons[0].wall.as_ref().expect("20 and 21 jobs");
    assert_eq!(w.n, [20, 21], "{w:?}");
}

#[test]
fn only_overflowing_spans_give_no_comparison_and_no_panic() {
    // every job of the report with the issue's span: nothing to compare, nothing NaN
    let lines: Vec<String> =
        (0..10u64).map(|j| line(j, "h0", if j % 2 == 0 { "auto" } else { "none" }, -1.7e308, 1.7e308, 1.0)).collect();
    let r = run(&lines, &Options::default());
    assert_eq!((r.input.counts.records, r.input.counts.bad), (0, 10));
    assert!(numbers(&r).is_empty(), "{:?}", numbers(&r));
}

/// Runs `f` in a thread; `None` when it takes longer than `secs`.
fn within<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(std::time::Duration::from_secs(secs)).ok()
}

#[test]
fn jobs_needed_for_a_tiny_effect_is_bounded_in_time_and_said_as_more_than() {
    // 0.03% (--detect 0.03): millions of jobs; the search took minutes in statrs
    for detect in [0.0003, 1e-6, 1e-12] {
        let o = Options { detect, ..Options::default() };
        let r = within(10, move || run(&ordinary(), &o)).unwrap_or_else(|| panic!("--detect {detect}: over 10 s"));
        let c = &r.experiments[0].groups[0].comparisons[0];
        let n = c.needed.as_ref().expect("needed");
        if detect == 0.0003 {
            assert!(n.total > 1_000_000, "{n:?}");
            continue;
        }
        assert!(n.more_than && n.total == numakit::stats_math::MAX_UNITS_NEEDED, "{n:?}");
        assert!(c.verdict_text.contains("more than 10,000,000 jobs"), "{}", c.verdict_text);
    }
    // 3%: an exact number, as before
    let r = run(&ordinary(), &Options { detect: 0.03, ..Options::default() });
    let n = r.experiments[0].groups[0].comparisons[0].needed.clone().expect("needed");
    assert!(!n.more_than && n.total > 40 && n.total < 100_000, "{n:?}");
}

/// The report of the ordinary jobs joined with the sacct file `text`.
fn with_sacct(text: &str) -> Result<Report, numakit_report::Error> {
    let dir = tempfile::tempdir().expect("tmp");
    let p = dir.path().join("r.jsonl");
    write(&p, &ordinary());
    let s = dir.path().join("sacct.txt");
    std::fs::write(&s, text).expect("write");
    let r = ReadOptions { threads: 2, sacct: numakit_report::SacctFrom::File(s), ..ReadOptions::default() };
    report(&[Source::File(p)], &r, &Options::default())
}

/// sacct rows for the ordinary jobs: `row(job)` each, under `header`.
fn sacct_text(header: &str, row: impl Fn(u64) -> String) -> String {
    let mut s = header.to_string();
    for j in 1000..1040 {
        s.push_str(&row(j));
        s.push('\n');
    }
    s
}

#[test]
fn a_sacct_header_after_a_bom_or_blank_lines_is_a_header() {
    let rows = |j: u64| format!("{j}|farm|100|01:40.000|COMPLETED|0:0");
    for header in [
        "\u{feff}JobIDRaw|Cluster|ElapsedRaw|TotalCPU|State|ExitCode\n",
        "\n\r\n  \nJobIDRaw|Cluster|ElapsedRaw|TotalCPU|State|ExitCode\n",
        "\u{feff}\nJobIDRaw|Cluster|ElapsedRaw|TotalCPU|State|ExitCode\n",
    ] {
        let r = with_sacct(&sacct_text(header, rows)).expect("report");
        let (c, s) = (r.input.counts, r.sacct.as_ref().expect("sacct"));
        assert_eq!((c.sacct_matched, c.failed, s.rows), (40, 0, [40, 0, 0]), "{header:?}: {c:?}");
        assert!(s.missing_columns.is_empty(), "{:?}", s.missing_columns);
    }
    // the mark glued to the first column's name: that column is still found
    let text = sacct_text("\u{feff}State|JobIDRaw|Cluster|ElapsedRaw|TotalCPU|ExitCode\n", |j| {
        format!("COMPLETED|{j}|farm|100|01:40.000|0:0")
    });
    let r = with_sacct(&text).expect("report");
    assert_eq!((r.input.counts.sacct_matched, r.input.counts.failed), (40, 0), "{:?}", r.input.counts);
}

#[test]
fn missing_sacct_columns_are_unknown_and_said() {
    // no State: every job's state unknown, none failed for it; ExitCode still counts
    let r = with_sacct(&sacct_text("JobIDRaw|Cluster|ElapsedRaw|TotalCPU|ExitCode\n", |j| {
        format!("{j}|farm|100|01:40.000|{}", if j == 1003 { "1:0" } else { "0:0" })
    }))
    .expect("report");
    let (c, s) = (r.input.counts, r.sacct.as_ref().expect("sacct"));
    assert_eq!((c.sacct_matched, c.failed), (40, 1), "{c:?}");
    assert_eq!(s.missing_columns, ["State"]);
    assert!(s.states.iter().all(|(st, _)| st.is_empty()), "{:?}", s.states);
    // only the job id: joined, nothing else known, nothing failed
    let r = with_sacct(&sacct_text("JobID\n", |j| j.to_string())).expect("report");
    let (c, s) = (r.input.counts, r.sacct.as_ref().expect("sacct"));
    assert_eq!((c.sacct_matched, c.failed), (40, 0), "{c:?}");
    assert_eq!(s.missing_columns, ["Cluster", "ElapsedRaw", "TotalCPU", "State", "ExitCode"]);
    // a header without a job id column: said, not read as rows
    let e = with_sacct(&sacct_text("Cluster|State\n", |_| "farm|COMPLETED".into())).expect_err("no job id column");
    assert!(e.0.contains("no JobIDRaw or JobID column") && !e.0.contains('\n'), "{e}");
    // a text report says which columns were missing
    let text = numakit_report::present::text::render(&r);
    assert!(text.contains("columns missing: Cluster, ElapsedRaw, TotalCPU, State, ExitCode"), "{text}");
}

/// The report of `text` as one file.
fn run_text(text: &[u8]) -> Report {
    let dir = tempfile::tempdir().expect("tmp");
    let p = dir.path().join("r.jsonl");
    std::fs::write(&p, text).expect("write");
    report(&[Source::File(p)], &ReadOptions { threads: 2, ..ReadOptions::default() }, &Options::default())
        .expect("report")
}

#[test]
fn bad_line_numbers_count_blank_and_overlong_lines() {
    // 15,000 records (beyond one 4 MiB chunk) with 700 blank lines among the first ones,
    // then a bad line, a line of 5 MiB, and another bad line
    let mut text = Vec::new();
    let mut n = 0;
    let mut push = |text: &mut Vec<u8>, l: &str| {
        text.extend_from_slice(l.as_bytes());
        text.push(b'\n');
        n += 1;
        n
    };
    for j in 0..15_000u64 {
        push(&mut text, &line(j, "h0", if j % 2 == 0 { "auto" } else { "none" }, 1e9, 1e9 + 100.0, 1.0));
        if j < 700 {
            push(&mut text, if j % 2 == 0 { "" } else { "  \r" });
        }
    }
    assert!(text.len() > 5 << 20);
    let first_bad = push(&mut text, "garbage one");
    push(&mut text, &"x".repeat(5 << 20));
    let second_bad = push(&mut text, "garbage two");
    push(&mut text, &line(99_999, "h0", "auto", 1e9, 1e9 + 100.0, 1.0));
    let r = run_text(&text);
    let c = r.input.counts;
    assert_eq!((c.records, c.bad, c.too_long), (15_001, 2, 1), "{c:?}");
    let b = &r.input.bad_examples;
    assert!(b[0].contains(&format!("line {first_bad}:")), "{b:?} (want line {first_bad})");
    assert!(b[1].contains(&format!("line {second_bad}:")), "{b:?} (want line {second_bad})");
}

#[test]
fn a_record_after_a_torn_one_on_the_same_line_is_read() {
    // job 77's record cut at 391 bytes by a full disk, job 78's whole record
    // appended to it, then more lines: one bad line, nothing after it lost
    let mut lines = ordinary();
    let torn = line(77, "h0", "auto", 1e9, 1e9 + 99.0, 1.0);
    let whole = line(78, "h1", "none", 1e9, 1e9 + 98.0, 1.0);
    lines.insert(10, format!("{}{whole}", &torn[..391.min(torn.len() - 1)]));
    // torn twice in a row, then a whole one; and a torn line at the very end
    let (a, b) = (line(79, "h2", "auto", 1e9, 1e9 + 97.0, 1.0), line(80, "h3", "none", 1e9, 1e9 + 96.0, 1.0));
    lines.insert(20, format!("{}{}{}", &a[..50], &b[..200], line(81, "h3", "auto", 1e9, 1e9 + 95.0, 1.0)));
    let mut text = lines.join("\n").into_bytes();
    text.push(b'\n');
    text.extend_from_slice(&line(82, "h0", "none", 1e9, 1e9 + 94.0, 1.0).as_bytes()[..300]);
    let r = run_text(&text);
    let c = r.input.counts;
    assert_eq!((c.records, c.bad, c.jobs), (42, 4, 42), "{c:?} {:?}", r.input.bad_examples);
    let b = &r.input.bad_examples;
    assert!(b[0].contains("line 11:") && b[0].contains("cut short"), "{b:?}");
    assert!(b[1].contains("line 21:") && b[2].contains("line 21:"), "{b:?}");
    assert!(b[3].contains("line 43:"), "{b:?}");
}

/// `n` one-job lines, line `j` with job name `name(j)` and host `host(j)`.
fn many(n: u64, name: impl Fn(u64) -> String, host: impl Fn(u64) -> String) -> Vec<String> {
    (0..n)
        .map(|j| {
            line(10_000 + j, &host(j), if j % 2 == 0 { "auto" } else { "none" }, 1e9, 1e9 + 100.0 + j as f64, 1.0)
                .replace(r#""job_name":"reco""#, &format!(r#""job_name":"{}""#, name(j)))
        })
        .collect()
}

#[test]
fn cells_and_hosts_beyond_the_limits_are_counted_and_said() {
    use numakit_report::result::Limits;
    let l = Limits::now();
    // the ordinary jobs first (2 cells, 4 hosts), then 60,000 names of one job each
    let mut lines = ordinary();
    lines.extend(many(60_000, |j| format!("n{j}"), |_| "h0".into()));
    let r = run(&lines, &Options::default());
    let c = r.input.counts;
    let kept = l.cells - 2;
    assert_eq!((c.limited_lines, c.limited_jobs), (60_000 - kept, 60_000 - kept), "{c:?}");
    assert_eq!(c.jobs, 60_040, "{c:?}");
    let g = r.experiments[0].groups.iter().find(|g| g.group.as_deref() == Some("reco")).expect("reco kept");
    assert_eq!(g.comparisons[0].wall.as_ref().map(|w| w.n), Some([20, 20]));
    let text = numakit_report::present::text::render(&r);
    assert!(text.contains("limits: 10,002 record lines of clusters beyond the first 10,000 or of cells beyond the first 50,000 left out"), "{}", &text[..2000]);
    // 110,000 hosts: the first 100,000 scored, the rest in the comparison only
    let lines = many(110_000, |_| "reco".into(), |j| format!("x{j}"));
    let r = run(&lines, &Options::default());
    let c = r.input.counts;
    assert_eq!((c.limited_lines, c.unscored_lines, c.unscored_jobs), (0, 10_000, 10_000), "{c:?}");
    assert_eq!(r.experiments[0].groups[0].comparisons[0].wall.as_ref().map(|w| w.n), Some([55_000, 55_000]));
    let text = numakit_report::present::text::render(&r);
    assert!(
        text.contains("limits: 10,000 lines and 10,000 jobs of hosts beyond the first 100,000"),
        "{}",
        &text[..2000]
    );
}

/// A value from the classes the hostile-input probe tried on records'
/// numbers: the ends of the float range, before 1970, after 9999, tiny,
/// negative zero, ordinary.
fn edge_number() -> impl proptest::strategy::Strategy<Value = f64> {
    use proptest::prelude::*;
    prop_oneof![
        Just(-1.7e308),
        Just(1.7e308),
        Just(f64::MAX),
        Just(-1.0e12),
        Just(1.0e300),
        Just(2.6e11),
        Just(-0.0),
        Just(5e-324),
        1.0e9..1.1e9f64,
        0.0..1.0e6f64,
    ]
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 32, ..Default::default() })]

    /// Records whose numbers are drawn from the probe's classes, some torn
    /// (cut anywhere, the next record written after them on the same line):
    /// never a panic, every figure of the report a number, every line
    /// accounted for, and a torn line never costs the record after it.
    #[test]
    fn hostile_numbers_and_torn_lines_give_a_report_of_numbers(
        recs in proptest::collection::vec((edge_number(), edge_number(), edge_number(), proptest::option::of(1usize..600)), 1..40)
    ) {
        let mut text = String::new();
        let mut torn = 0;
        let mut whole_after_torn = 0;
        let mut last_torn = false;
        for (j, (start, span, cpu, cut)) in recs.iter().enumerate() {
            let l = line(j as u64, &format!("h{}", j % 3), if j % 2 == 0 { "auto" } else { "none" }, *start, start + span, *cpu);
            match cut {
                Some(c) if *c < l.len() - 1 && j + 1 < recs.len() => {
                    text.push_str(&l[..*c]);
                    torn += 1;
                    last_torn = true;
                }
                _ => {
                    if last_torn {
                        whole_after_torn += 1;
                    }
                    last_torn = false;
                    text.push_str(&l);
                    text.push('\n');
                }
            }
        }
        let dir = tempfile::tempdir().expect("tmp");
        let p = dir.path().join("r.jsonl");
        std::fs::write(&p, &text).expect("write");
        let r = report(&[Source::File(p)], &ReadOptions { threads: 2, ..ReadOptions::default() }, &Options::default())
            .expect("report");
        for (what, v) in numbers(&r) {
            proptest::prop_assert!(v.is_finite(), "{} is {}", what, v);
        }
        // every whole record is read (a record or a bad line), torn ones
        // are bad lines (two torn in a row may make one), nothing is counted twice
        let c = r.input.counts;
        let whole = recs.len() as u64 - torn;
        proptest::prop_assert!(c.records + c.bad <= recs.len() as u64 && c.records + c.bad >= whole, "{:?} torn {}", c, torn);
        proptest::prop_assert!(torn == 0 || c.bad >= 1, "{:?} torn {}", c, torn);
        proptest::prop_assert_eq!(c.other_schema, 0);
        proptest::prop_assert!(whole_after_torn <= c.records + c.bad);
    }
}
