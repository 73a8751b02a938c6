//! `numakit report` on the command line: standard input, files, every
//! output (text, JSON, SVG, HTML), usage errors as one line and exit 2,
//! `--sacct` running a stand-in `sacct` (the arguments it is given, its
//! rows joined), a closed pipe and a full disk. The statistics are tested
//! in the `numakit-report` crate.
//!
//! Hostile input (records at the ends of the float range, options at the
//! ends of theirs, sacct files and programs that never end): each run
//! bounded in time and measured (`wait4`'s peak resident size); the counts
//! printed (`HOSTILE|...`) are rows of the table in docs/hostile-input.md
//! (scripts/hostile-report).

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use numakit_report::synth::Farm;

mod common;

fn farm_file(dir: &Path, jobs: u64) -> std::path::PathBuf {
    let p = dir.join("numakit-outcomes.jsonl");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&p).expect("create"));
    Farm::calibration(3, jobs).write(&mut f).expect("write");
    f.flush().expect("flush");
    p
}

fn nk(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_numakit")).args(args).stdin(Stdio::null()).output().expect("run numakit")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn reads_standard_input_and_prints_text() {
    let dir = tempfile::tempdir().expect("tmp");
    let data = std::fs::read(farm_file(dir.path(), 1500)).expect("read");
    let mut child = Command::new(env!("CARGO_BIN_EXE_numakit"))
        .arg("report")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().expect("stdin");
    let writer = std::thread::spawn(move || stdin.write_all(&data));
    let o = child.wait_with_output().expect("wait");
    writer.join().expect("join").expect("write");
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(out.starts_with("read 1 input (0 gzip"), "{out}");
    assert!(out.contains("experiment numa-test: unit job") && out.contains("\n  reco on "), "{out}");
    assert!(out.contains("auto against none (Welch's t on ln(time), jobs as units):"), "{out}");
    assert!(out.contains("hosts against hosts of the same hardware key"), "{out}");
}

#[test]
fn json_svg_and_html() {
    let dir = tempfile::tempdir().expect("tmp");
    let f = farm_file(dir.path(), 1500);
    let (svg, html) = (dir.path().join("r.svg"), dir.path().join("r.html"));
    let o = nk(&[
        "report",
        dir.path().to_str().expect("utf-8"),
        "--json",
        "--adjust",
        "bh",
        "--by",
        "partition",
        "--svg",
        svg.to_str().expect("utf-8"),
        "--html",
        html.to_str().expect("utf-8"),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["schema"], "numakit-report/1");
    assert_eq!(v["settings"]["adjustment"], "Benjamini-Hochberg");
    assert_eq!(v["settings"]["by"], "partition");
    let groups: Vec<&str> =
        v["experiments"][0]["groups"].as_array().expect("groups").iter().filter_map(|g| g["group"].as_str()).collect();
    assert_eq!(groups, ["amd", "intel"], "partitions, each on its own hardware key");
    assert!(v["input"]["counts"]["records"].as_u64().expect("records") > 1500);
    let svg = std::fs::read_to_string(svg).expect("svg");
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>") && svg.contains("amd"), "{svg}");
    let html = std::fs::read_to_string(html).expect("html");
    assert!(html.contains("<svg") && html.contains("<pre>read 1 input") && html.trim_end().ends_with("</html>"));
    drop(f);
}

#[test]
fn usage_errors_are_one_line_and_exit_2() {
    let dir = tempfile::tempdir().expect("tmp");
    let f = farm_file(dir.path(), 50);
    let f = f.to_str().expect("utf-8");
    for (args, says) in [
        (vec!["report", f, "--by", "nosuch"], "--by nosuch: no such record field"),
        (vec!["report", f, "--by", "wall_s"], "--by wall_s: a measure or a setting"),
        (vec!["report", f, "--detect", "0"], "--detect \"0\": a percentage"),
        (vec!["report", f, "--shares", "auto:x"], "--shares \"auto:x\": \"auto:x\" is not ARM or ARM:WEIGHT"),
        (vec!["report", f, "--outcome-from", "sacct"], "--outcome-from sacct needs --sacct or --sacct-file"),
        (vec!["report", "/nonexistent/x.jsonl"], "/nonexistent/x.jsonl: No such file or directory"),
        (vec!["report", "/dev/null"], "/dev/null: not a regular file or a folder"),
        (vec!["report", f, "--threads", "0"], "invalid value '0' for '--threads <N>': 0 is not in 1..=256"),
    ] {
        let o = nk(&args);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    // a sacct file that cannot be read is a system error
    let o = nk(&["report", f, "--sacct-file", "/nonexistent/sacct.txt"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
}

#[test]
fn sacct_is_run_for_the_records_clusters_and_span() {
    let dir = tempfile::tempdir().expect("tmp");
    let f = farm_file(dir.path(), 200);
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).expect("mkdir");
    let args_file = dir.path().join("args");
    // a stand-in sacct: says what it was given, answers two jobs and a step
    let script = format!(
        "#!/bin/sh\nprintf '%s\\n' \"$@\" > {}\necho \"TZ=$TZ\" >> {}\nprintf '1000000|farm|10|00:05.000|COMPLETED|0:0\\n1000000.batch|farm|10|00:05.000|COMPLETED|0:0\\n1000001|farm|10|00:05.000|FAILED|1:0\\n'\n",
        args_file.display(),
        args_file.display()
    );
    let sacct = bin.join("sacct");
    std::fs::write(&sacct, script).expect("write");
    std::fs::set_permissions(&sacct, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let o = Command::new(env!("CARGO_BIN_EXE_numakit"))
        .args(["report", f.to_str().expect("utf-8"), "--sacct", "--json"])
        .env("PATH", path)
        .output()
        .expect("run");
    assert!(o.status.success(), "{}", text(&o.stderr));
    let given = std::fs::read_to_string(&args_file).expect("args");
    let lines: Vec<&str> = given.lines().collect();
    assert_eq!(lines[..3], ["--parsable2", "--noheader", "--allusers"], "{given}");
    assert!(lines.contains(&"--clusters=farm") && lines.contains(&"TZ=UTC"), "{given}");
    assert!(lines.iter().any(|l| l.starts_with("--starttime=2026-01-0")), "{given}");
    assert!(lines.contains(&"--format=JobIDRaw,Cluster,ElapsedRaw,TotalCPU,State,ExitCode"), "{given}");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["sacct"]["rows"], serde_json::json!([2, 1, 0]));
    assert_eq!(v["input"]["counts"]["sacct_matched"], 2);
    assert_eq!(v["input"]["counts"]["sacct_missing"], 198);
}

#[test]
fn a_closed_pipe_ends_quietly_and_a_full_disk_is_one_line() {
    let dir = tempfile::tempdir().expect("tmp");
    let f = farm_file(dir.path(), 300);
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").expect("/dev/full");
    let o = Command::new(env!("CARGO_BIN_EXE_numakit"))
        .args(["report", f.to_str().expect("utf-8")])
        .stdout(Stdio::from(full))
        .output()
        .expect("run");
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    let mut child = Command::new(env!("CARGO_BIN_EXE_numakit"))
        .args(["report", f.to_str().expect("utf-8")])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    drop(child.stdout.take());
    let o = child.wait_with_output().expect("wait");
    assert_eq!((o.status.code(), text(&o.stderr)), (Some(0), String::new()));
}

use common::bounded::{Bounds, Run};

/// Longer than any of these runs takes, short enough that a hang is found.
const HANG: Duration = Duration::from_secs(20);
/// Peak resident memory allowed to a run (the small inputs here need tens of MiB).
const MEM_KIB: i64 = 256 << 10;
/// Address space allowed: a run that asks for more fails at once.
const AS_LIMIT: u64 = 8 << 30;

/// The bounds of each hostile run here.
const BOUNDS: Bounds = Bounds { hang: HANG, as_limit: AS_LIMIT, stdout_cap: 16 << 20 };

impl Run {
    /// What is wrong with a run expected to end with one of `codes` within
    /// `secs`, its stderr empty or one clean line holding `says`.
    fn problem(&self, codes: &[i32], says: Option<&str>, secs: f64) -> Option<String> {
        let err = self.err();
        if self.hung {
            return Some(format!("hang (killed after {HANG:?})"));
        }
        if let Some(s) = self.signal {
            return Some(format!("killed by signal {s}: {err:?}"));
        }
        if self.max_rss_kib > MEM_KIB {
            return Some(format!("{} MiB resident", self.max_rss_kib >> 10));
        }
        if self.secs > secs {
            return Some(format!("took {:.1} s, more than {secs} s", self.secs));
        }
        let code = self.code.unwrap_or(-1);
        if !codes.contains(&code) {
            return Some(format!("exit {code}, not {codes:?}: {err:?}"));
        }
        let body = err.strip_suffix('\n').unwrap_or(&err);
        if body.contains('\n') || body.chars().any(char::is_control) {
            return Some(format!("not one clean line on stderr: {body:?}"));
        }
        match says {
            Some(s) if !body.contains(s) => Some(format!("stderr does not say {s:?}: {body:?}")),
            _ => None,
        }
    }
}

/// Runs `c` within [`BOUNDS`].
fn bounded(c: &mut Command) -> Run {
    common::bounded::run(c, BOUNDS)
}

/// Tallies of one hostile surface, printed for scripts/hostile-report.
struct Tally {
    what: &'static str,
    runs: usize,
    failures: Vec<String>,
}

impl Tally {
    fn new(what: &'static str) -> Self {
        Tally { what, runs: 0, failures: Vec::new() }
    }

    fn check(&mut self, case: &str, problem: Option<String>) {
        self.runs += 1;
        if let Some(p) = problem {
            self.failures.push(format!("{case}: {p}"));
        }
    }

    fn finish(self) {
        eprintln!("HOSTILE|report|{}|{}|{}", self.what, self.runs, self.failures.len());
        assert!(
            self.failures.is_empty(),
            "{} of {} failed:\n{}",
            self.failures.len(),
            self.runs,
            self.failures.join("\n")
        );
    }
}

/// The farm's records with `f` applied to some of them (as JSON values).
fn farm_with(dir: &Path, name: &str, jobs: u64, f: impl Fn(usize, &mut serde_json::Value)) -> std::path::PathBuf {
    let plain = std::fs::read_to_string(farm_file(dir, jobs)).expect("read");
    let mut out = String::new();
    for (i, l) in plain.lines().enumerate() {
        let mut v: serde_json::Value = serde_json::from_str(l).expect("record");
        f(i, &mut v);
        out.push_str(&v.to_string());
        out.push('\n');
    }
    let p = dir.join(name);
    std::fs::write(&p, out).expect("write");
    p
}

fn report_cmd(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_numakit"));
    c.arg("report").args(args);
    c
}

/// Figures that are not numbers: what the report must never print.
fn not_numbers(out: &str) -> Option<String> {
    out.lines().find(|l| l.contains("NaN") || l.contains("inf ") || l.contains("×inf")).map(str::to_string)
}

#[test]
fn records_at_the_ends_of_the_float_range() {
    let dir = tempfile::tempdir().expect("tmp");
    let mut t = Tally::new(
        "records whose times are ±1.7e308, before 1970, after 9999, whose CPU time overflows, or whose arms weigh 1e308",
    );
    let huge = |every: usize| {
        move |i: usize, v: &mut serde_json::Value| {
            if i % every == 0 {
                v["start_unix"] = (-1.7e308).into();
                v["end_unix"] = 1.7e308.into();
            }
        }
    };
    for (name, file) in [
        ("one record spanning ±1.7e308", farm_with(dir.path(), "one.jsonl", 300, huge(1000))),
        ("every tenth record spanning ±1.7e308", farm_with(dir.path(), "tenth.jsonl", 300, huge(10))),
        ("every record spanning ±1.7e308", farm_with(dir.path(), "all.jsonl", 300, huge(1))),
        (
            "CPU times of 1.7e308",
            farm_with(dir.path(), "cpu.jsonl", 300, |i, v| {
                if i % 3 == 0 {
                    v["cpu_user_s"] = 1.7e308.into();
                }
            }),
        ),
        (
            "configured arms weighing 1e308 each",
            farm_with(dir.path(), "weights.jsonl", 300, |_, v| {
                v["arms"] = "auto:1e308,none:1e308".into();
            }),
        ),
        (
            "times before 1970 and after 9999",
            farm_with(dir.path(), "range.jsonl", 300, |i, v| {
                if i % 5 == 0 {
                    v["start_unix"] = (-1.0e12).into();
                } else if i % 5 == 1 {
                    v["end_unix"] = 1.0e300.into();
                }
            }),
        ),
    ] {
        for json in [false, true] {
            let mut args = vec![file.to_str().expect("utf-8")];
            if json {
                args.push("--json");
            }
            let r = bounded(&mut report_cmd(&args));
            let out = text(&r.stdout);
            let p = r.problem(&[0], None, 10.0).or_else(|| {
                if json {
                    // serde_json writes a NaN or an infinity as null: none may be in a comparison
                    let v: serde_json::Value = serde_json::from_str(&out).ok()?;
                    let comps = v["experiments"]
                        .as_array()?
                        .iter()
                        .flat_map(|e| e["groups"].as_array().cloned().unwrap_or_default());
                    comps.flat_map(|g| g["comparisons"].as_array().cloned().unwrap_or_default()).find_map(|c| {
                        (c["wall"].is_object() && !c["wall"]["ratio"].is_number()).then(|| format!("{c}"))
                    })
                } else {
                    not_numbers(&out)
                }
            });
            t.check(&format!("{name}{}", if json { " --json" } else { "" }), p);
        }
    }
    t.finish();
}

#[test]
fn jobs_needed_for_tiny_effects_is_bounded() {
    let dir = tempfile::tempdir().expect("tmp");
    let f = farm_file(dir.path(), 100);
    let f = f.to_str().expect("utf-8");
    let mut t = Tally::new("--detect down to 1e-9%: the jobs-needed search bounded, \"more than\" beyond its cap");
    for detect in ["0.03", "0.001%", "1e-9"] {
        let r = bounded(&mut report_cmd(&[f, "--detect", detect]));
        let out = text(&r.stdout);
        let p = r
            .problem(&[0], None, 5.0)
            .or_else(|| (!out.contains("more than 10,000,000 jobs")).then(|| format!("no \"more than\": {out}")));
        t.check(&format!("--detect {detect}"), p);
    }
    t.finish();
}

#[test]
fn numeric_options_out_of_range_are_usage_errors_naming_the_value() {
    let dir = tempfile::tempdir().expect("tmp");
    let f = farm_file(dir.path(), 50);
    let f = f.to_str().expect("utf-8");
    let mut t = Tally::new("every numeric option at and past the ends of its range (--threads 2^64-1, 4e9, 1e6, 0; --max-jobs-in-memory, --sacct-timeout, --detect, --shares weights)");
    for (args, says) in [
        (vec!["--threads", "18446744073709551615"], "18446744073709551615"),
        (vec!["--threads", "18446744073709551616"], "18446744073709551616"),
        (vec!["--threads", "4000000000"], "4000000000"),
        (vec!["--threads", "1000000"], "1000000"),
        (vec!["--threads", "0"], "'0'"),
        (vec!["--threads", "-1"], "-1"),
        (vec!["--max-jobs-in-memory", "0"], "'0'"),
        (vec!["--max-jobs-in-memory", "18446744073709551615"], "18446744073709551615"),
        (vec!["--sacct", "--sacct-timeout", "0"], "--sacct-timeout \"0\""),
        (vec!["--sacct", "--sacct-timeout", "100000000000000000000s"], "100000000000000000000s"),
        (vec!["--sacct", "--sacct-timeout", "400d"], "--sacct-timeout \"400d\""),
        (vec!["--detect", "NaN"], "--detect \"NaN\""),
        (vec!["--detect", "1e400"], "--detect \"1e400\""),
        (vec!["--detect", "100"], "--detect \"100\""),
        (vec!["--shares", "auto:1e308,none:1e308"], "\"auto:1e308\""),
        (vec!["--shares", "auto:inf,none"], "\"auto:inf\""),
        (vec!["--shares", "auto:1e-320,none"], "\"auto:1e-320\""),
    ] {
        let mut all = vec![f];
        all.extend(&args);
        let r = bounded(&mut report_cmd(&all));
        t.check(&args.join(" "), r.problem(&[2], Some(says), 5.0));
    }
    // at the top of the range: runs, in bounded memory
    for args in [vec!["--threads", "256"], vec!["--max-jobs-in-memory", "100000000"]] {
        let mut all = vec![f];
        all.extend(&args);
        let r = bounded(&mut report_cmd(&all));
        t.check(&args.join(" "), r.problem(&[0], None, 10.0));
    }
    t.finish();
}

/// Makes `p` a FIFO.
fn mkfifo(p: &Path) {
    let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).expect("path");
    // SAFETY: mkfifo with a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo {}", p.display());
}

#[test]
fn sacct_files_are_regular_and_bounded() {
    let dir = tempfile::tempdir().expect("tmp");
    let f = farm_file(dir.path(), 50);
    let f = f.to_str().expect("utf-8");
    let fifo = dir.path().join("fifo");
    mkfifo(&fifo);
    let sparse = dir.path().join("sparse");
    std::fs::File::create(&sparse).expect("create").set_len(1 << 40).expect("sparse terabyte");
    let zero = dir.path().join("zero");
    std::os::unix::fs::symlink("/dev/zero", &zero).expect("link");
    let mut t = Tally::new("--sacct-file a FIFO, /dev/zero, a link to it, a sparse 1 TiB file, a folder");
    for (what, p, says) in [
        ("a FIFO", fifo.clone(), "not a regular file (a FIFO)"),
        ("/dev/zero", "/dev/zero".into(), "not a regular file (a character device)"),
        ("a link to /dev/zero", zero, "not a regular file (a character device)"),
        ("a sparse 1 TiB file", sparse, "larger than"),
        ("a folder", dir.path().to_path_buf(), "not a regular file (a folder)"),
    ] {
        let r = bounded(&mut report_cmd(&[f, "--sacct-file", p.to_str().expect("utf-8")]));
        t.check(what, r.problem(&[1], Some(&format!("{}: {says}", p.display())), 5.0));
    }
    t.finish();
}

/// `numakit report FILE --sacct ARGS` with `script` as `sacct` on PATH.
fn with_sacct_script(dir: &Path, name: &str, script: &str, args: &[&str]) -> Run {
    let f = farm_file(dir, 30);
    let bin = dir.join(format!("bin-{name}"));
    std::fs::create_dir_all(&bin).expect("mkdir");
    let sacct = bin.join("sacct");
    std::fs::write(&sacct, format!("#!/bin/sh\n{script}\n")).expect("write");
    std::fs::set_permissions(&sacct, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let mut all = vec![f.to_str().expect("utf-8").to_string(), "--sacct".into()];
    all.extend(args.iter().map(|s| s.to_string()));
    let mut c = Command::new(env!("CARGO_BIN_EXE_numakit"));
    c.arg("report").args(&all).env("PATH", path);
    bounded(&mut c)
}

#[test]
fn a_sacct_that_never_ends_is_stopped_in_time_and_bounded() {
    let dir = tempfile::tempdir().expect("tmp");
    let rows = "printf '1000000|farm|10|00:05.000|COMPLETED|0:0\\n1000001|farm|10|00:05.000|COMPLETED|0:0\\n'";
    let mut t = Tally::new("a stand-in sacct whose child keeps its output open, that never ends, that prints without end (a line, or lines) or ignores SIGTERM; --sacct-timeout 2");
    let timeout = ["--sacct-timeout", "2"];
    for (name, script, args, code, says, secs) in [
        // sacct's own output is whole when it exits; the child holding the pipe is not sacct
        ("a child left running with the output", format!("sleep 100 &\n{rows}"), &timeout[..], 0, None, 3.0),
        (
            "its output through a pipe that never ends",
            "sleep 100 | cat".to_string(),
            &timeout[..],
            1,
            Some("did not finish within 2 s"),
            4.0,
        ),
        (
            "SIGTERM ignored",
            format!("trap '' TERM\n{rows}\nsleep 100"),
            &timeout[..],
            1,
            Some("did not finish within 2 s"),
            4.0,
        ),
        ("one endless line", "cat /dev/zero".into(), &["--sacct-timeout", "60"][..], 1, Some("more than 1 GiB"), 40.0),
        (
            "endless lines",
            "yes \"$(printf '%60000s')\"".into(),
            &["--sacct-timeout", "60"][..],
            1,
            Some("more than 1 GiB"),
            40.0,
        ),
    ] {
        let r = with_sacct_script(dir.path(), &name.replace(' ', "-"), &script, args);
        let mut p = r.problem(&[code], says, secs);
        if p.is_none() && code == 0 && !text(&r.stdout).contains("rows: 2 jobs") {
            p = Some(format!("rows not read: {}", text(&r.stdout)));
        }
        t.check(name, p);
    }
    t.finish();
}

#[test]
fn an_unreadable_subfolder_is_named_and_the_rest_read() {
    let dir = tempfile::tempdir().expect("tmp");
    let top = dir.path().join("outcomes");
    let (a, locked) = (top.join("a"), top.join("b-locked"));
    std::fs::create_dir_all(&a).expect("mkdir");
    std::fs::create_dir_all(&locked).expect("mkdir");
    std::fs::copy(farm_file(dir.path(), 200), a.join("numakit-outcomes.jsonl")).expect("copy");
    std::fs::copy(farm_file(dir.path(), 100), locked.join("numakit-outcomes.jsonl")).expect("copy");
    for d in [dir.path(), &top, &a] {
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    std::fs::set_permissions(a.join("numakit-outcomes.jsonl"), std::fs::Permissions::from_mode(0o644)).expect("chmod");
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).expect("chmod");
    let mut t = Tally::new("a folder of inputs with an unreadable subfolder (and, run by root, as another user)");
    let mut c = report_cmd(&[top.to_str().expect("utf-8")]);
    // SAFETY: getuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        // root reads any folder: run as nobody, who cannot read b-locked
        c.uid(65534).gid(65534);
    }
    let r = bounded(&mut c);
    let out = text(&r.stdout);
    let says = format!("{}: Permission denied", locked.display());
    let mut p = r.problem(&[1], Some(&says), 10.0);
    if p.is_none() && !(out.starts_with("read 1 input") && out.contains("warning: ") && out.contains("b-locked")) {
        p = Some(format!("the rest not read, or the skip not said: {out}"));
    }
    t.check("a subfolder without read permission", p);
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o755)).expect("chmod back");
    t.finish();
}

#[test]
fn text_from_records_is_escaped_in_text_svg_and_html() {
    let dir = tempfile::tempdir().expect("tmp");
    let evil = "zz\u{1b}]0;owned\u{7}\u{1b}[31m\u{9b}2J\u{85}\u{0}</text><script>x</script>&\u{fffe}\n";
    let f = farm_with(dir.path(), "evil.jsonl", 300, |i, v| {
        v["job_name"] = format!("{evil}{}", i % 2).into();
        v["experiment"] = evil.into();
        v["user"] = evil.into();
        v["hardware"]["key"] = format!("k{evil}").into();
    });
    let (svg, html) = (dir.path().join("r.svg"), dir.path().join("r.html"));
    let mut t = Tally::new("ESC, OSC, BEL, C1, NUL, U+FFFE, markup and a newline in job_name, experiment, user, hardware.key: text, --by user, SVG, HTML");
    for by in ["job_name", "user"] {
        let r = bounded(&mut report_cmd(&[
            f.to_str().expect("utf-8"),
            "--by",
            by,
            "--svg",
            svg.to_str().expect("utf-8"),
            "--html",
            html.to_str().expect("utf-8"),
        ]));
        let raw = |b: &[u8]| {
            let s = String::from_utf8_lossy(b);
            s.chars().find(|&c| (c.is_control() && c != '\n') || c == '\u{fffe}').map(|c| format!("{c:?}"))
        };
        let mut p = r.problem(&[0], None, 10.0);
        for (what, bytes) in [
            ("text", r.stdout.clone()),
            ("svg", std::fs::read(&svg).unwrap_or_default()),
            ("html", std::fs::read(&html).unwrap_or_default()),
        ] {
            if p.is_none() {
                p = raw(&bytes).map(|c| format!("{what} holds {c} raw"));
            }
            if p.is_none() && what != "text" && String::from_utf8_lossy(&bytes).contains("<script>") {
                p = Some(format!("{what} holds the records' markup"));
            }
        }
        if p.is_none() && !text(&r.stdout).contains("zz\\u{1b}]0;owned\\u{7}") {
            p = Some(format!("the names are not shown escaped: {}", text(&r.stdout)));
        }
        t.check(&format!("--by {by}"), p);
    }
    t.finish();
}

#[test]
fn memory_is_bounded_by_the_limits_not_by_distinct_names() {
    // 150,000 one-job lines, each with a job name and a host of its own
    let dir = tempfile::tempdir().expect("tmp");
    let p = dir.path().join("distinct.jsonl");
    let mut out = std::io::BufWriter::new(std::fs::File::create(&p).expect("create"));
    for j in 0..150_000u64 {
        let arm = if j % 2 == 0 { "auto" } else { "none" };
        writeln!(
            out,
            r#"{{"schema":"numakit-step-outcome/1","cluster":"farm","job":"{}","step":"batch","host":"host-{j}","job_name":"name-{j}","experiment":"x","unit":"job","arm":"{arm}","arm_source":"assigned","arms":"auto:1,none:1","start_unix":1767225600,"end_unix":{},"wall_s":100,"cpu_user_s":1.0,"cpu_system_s":0.5,"exit_status":0,"numa":{{"locality":0.9}},"hardware":{{"key":"k1"}}}}"#,
            1_000_000 + j,
            1_767_225_700 + j % 50
        )
        .expect("write");
    }
    out.flush().expect("flush");
    drop(out);
    let mut t = Tally::new("150,000 distinct job names and hosts: peak memory bounded by the limits");
    let r = bounded(&mut report_cmd(&[p.to_str().expect("utf-8"), "--threads", "2"]));
    let mut problem = r.problem(&[0], None, 20.0);
    if problem.is_none() && !text(&r.stdout).contains("limits: ") {
        problem = Some("the limits reached are not said".into());
    }
    eprintln!("distinct names and hosts: {} MiB peak, {:.1} s", r.max_rss_kib >> 10, r.secs);
    t.check("150,000 names and hosts", problem);
    t.finish();
}

/// The report's limits, for the table in docs/hostile-input.md
/// (scripts/hostile-report).
#[test]
fn limits_in_force() {
    use numakit_report::{result::Limits, sacct};
    let l = Limits::now();
    for (limit, value) in [
        ("bytes of a --sacct-file read", sacct::MAX_FILE_BYTES),
        ("bytes of sacct's output read", sacct::MAX_OUTPUT_BYTES),
        ("bytes of one sacct line", sacct::MAX_LINE as u64),
        ("bytes of one record line", numakit_report::input::MAX_LINE as u64),
        ("parsing threads (--threads)", numakit_report::MAX_THREADS as u64),
        ("jobs held in memory (--max-jobs-in-memory)", numakit_report::MAX_JOB_BUDGET as u64),
        ("cells with figures of their own", l.cells),
        ("cluster names", l.clusters),
        ("hosts with figures of their own", l.hosts),
        ("entries in each table of figures per host", l.host_figures),
        ("units a jobs-needed search looks for", numakit::stats_math::MAX_UNITS_NEEDED),
        ("seconds of --sacct-timeout", numakit_report::MAX_SACCT_TIMEOUT.as_secs()),
    ] {
        eprintln!("LIMIT|report|{limit}|{value}");
    }
}
