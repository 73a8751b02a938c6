//! `numakit report` on the command line: standard input, files, every
//! output (text, JSON, SVG, HTML), usage errors as one line and exit 2,
//! `--sacct` running a stand-in `sacct` (the arguments it is given, its
//! rows joined), a closed pipe and a full disk. The statistics are tested
//! in the `numakit-report` crate.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use numakit_report::synth::Farm;

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
        (vec!["report", f, "--threads", "0"], "--threads 0: at least 1"),
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
