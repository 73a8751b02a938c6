//! numakit invoked as `numastat` and as `migratepages` (a symlink to the
//! built binary) against the real tools of Debian's numactl 2.0.16, run
//! with the same argv[0] and arguments:
//!
//! * numastat, live: every option and a set of combinations, with
//!   `NUMASTAT_WIDTH` unset and set (also to values C's `atoi` reads
//!   partly); exit code and stderr equal, stdout equal once digits are
//!   masked (length kept: free memory moves between runs), against one of
//!   two numastat runs around ours; process tables of a quiet child exact;
//! * numastat on frozen multi-node counters (the real-machine dumps,
//!   bind-mounted over `/sys/devices/system/node` in a private mount
//!   namespace): `-n`, `-c`, `-z`, `-s`, `-sNODE` and mixes at several
//!   widths, byte for byte, no masking;
//! * `numakit stat --compat` with numastat's options = numastat;
//! * migratepages on a child process: argument handling, messages and
//!   exit codes (this machine has one node: moves are 0 to 0).
//!
//! With CI=true a missing tool or a failed namespace is a failure;
//! elsewhere the test is skipped with the reason printed.

mod common;

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::{skip_or_fail, Sleeper};

const BIN: &str = env!("CARGO_BIN_EXE_numakit");

/// A temp folder with `numastat` and `migratepages` links to numakit.
fn links() -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::tempdir().expect("tmp");
    for name in ["numastat", "migratepages"] {
        std::os::unix::fs::symlink(BIN, d.path().join(name)).expect("symlink");
    }
    let p = d.path().to_path_buf();
    (d, p)
}

fn have(tool: &str) -> bool {
    if Path::new("/usr/bin").join(tool).exists() {
        return true;
    }
    skip_or_fail(&format!("{tool} is not installed (Debian package numactl)"));
    false
}

/// Runs `program` as argv[0] `name` with `args` and `width`.
fn run_as(program: &Path, name: &str, args: &[&str], width: Option<&str>) -> Output {
    let mut c = Command::new(program);
    c.arg0(name).args(args).env_remove("NUMASTAT_WIDTH").env_remove("NUMAKIT_SYSROOT").env_remove("POSIXLY_CORRECT");
    if let Some(w) = width {
        c.env("NUMASTAT_WIDTH", w);
    }
    c.stdin(Stdio::null()).output().expect("run")
}

/// Digits masked, lengths kept: what moves between two runs.
fn mask(b: &[u8]) -> String {
    String::from_utf8_lossy(b).chars().map(|c| if c.is_ascii_digit() { '9' } else { c }).collect()
}

/// Runs the real numastat with `theirs`, then `ours`, then the real one
/// again, until `same` holds for ours and one of the two real runs around
/// it; several tries, as a row can turn non-zero between runs, and with
/// `-s` two rows of close sizes (55 and 56 MB) can swap places while the
/// machine is busy (4 tries were not enough for `-m -s` beside a build).
/// Err: the last try, both sides.
fn around_real(
    theirs: &[&str],
    width: Option<&str>,
    ours: impl Fn() -> Output,
    same: impl Fn(&Output, &Output) -> bool,
) -> Result<(), String> {
    let real = Path::new("/usr/bin/numastat");
    let mut why = String::new();
    for _ in 0..16 {
        let a = run_as(real, "numastat", theirs, width);
        let o = ours();
        let b = run_as(real, "numastat", theirs, width);
        if same(&a, &o) || same(&b, &o) {
            return Ok(());
        }
        why = format!(
            "numastat {theirs:?} NUMASTAT_WIDTH={width:?}:\n--- numastat (exit {:?}) ---\n{}{}\n--- numakit (exit {:?}) ---\n{}{}",
            a.status.code(),
            String::from_utf8_lossy(&a.stdout),
            String::from_utf8_lossy(&a.stderr),
            o.status.code(),
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
    }
    Err(why)
}

/// numakit invoked as numastat (`ours_prog`) equals one of two real runs
/// around it ([`around_real`]): masked stdout, stderr and exit code exact.
fn compare_live(ours_prog: &Path, args: &[&str], width: Option<&str>) -> Result<(), String> {
    around_real(
        args,
        width,
        || run_as(ours_prog, "numastat", args, width),
        |r, o| r.status.code() == o.status.code() && r.stderr == o.stderr && mask(&r.stdout) == mask(&o.stdout),
    )
}

#[test]
fn numastat_options_and_combinations_live() {
    if !have("numastat") {
        return;
    }
    let (_d, dir) = links();
    let ours = dir.join("numastat");
    let (a, b) = (Sleeper::start("301.25"), Sleeper::start("302.25"));
    let (pa, pb) = (a.pid(), b.pid());
    let table: Vec<Vec<&str>> = vec![
        vec![],
        vec!["-V"],
        vec!["-c"],
        vec!["-m"],
        vec!["-n"],
        vec!["-s"],
        vec!["-s0"],
        vec!["-s7"],
        vec!["-v"],
        vec!["-z"],
        vec!["-p", &pa],
        vec![&pa],
        vec!["-p", &pa, "-p", &pb],
        vec![&pa, &pb, &pa],
        vec!["-v", &pa, &pb],
        vec!["-c", &pa, &pb],
        vec!["-z", &pa],
        vec!["-czs", &pa, &pb],
        vec!["-cv", "-p", &pa, &pb],
        vec!["-s0", "-v", &pa, &pb],
        vec!["301.25"],
        vec!["-p", "302.25", "-n"],
        vec!["sleep 30"],
        vec!["-m", "-n"],
        vec!["-cm"],
        vec!["-zm"],
        vec!["-mcs"],
        vec!["-czn"],
        vec!["-c", "-m", "-n", "-z", "-s"],
        vec!["-n", "-s0", "-c"],
        vec!["-m", &pa],
        vec!["-m", "-n", "-p", &pa, "-z"],
        vec!["-p", "999999999"],
        vec![&pa, "999999999"],
        vec!["999999999", &pa],
        vec!["-p", "no-such-process-pattern"],
        vec!["no-such-process-pattern", "-m"],
        vec!["--", "-m"],
        vec!["-m", "-V"],
        vec!["-V", "-x"],
        vec!["-x", "-V"],
        vec!["-h"],
        vec!["-?"],
        vec!["--help"],
        vec!["--he"],
        vec!["--help=1"],
        vec!["--version"],
        vec!["-p"],
        vec!["-m", "-p"],
        vec!["-mx"],
    ];
    let widths = [None, Some("80"), Some("40"), Some("10"), Some("100abc"), Some("-3"), Some("x")];
    let mut failures = Vec::new();
    let mut compared = 0;
    for args in &table {
        for w in widths {
            compared += 1;
            if let Err(why) = compare_live(&ours, args, w) {
                failures.push(why);
            }
        }
    }
    assert!(failures.is_empty(), "{} of {compared} differ:\n{}", failures.len(), failures.join("\n"));
    eprintln!("compared {compared} numastat command lines");
}

#[test]
fn stat_compat_takes_numastat_options() {
    if !have("numastat") {
        return;
    }
    let a = Sleeper::start("303.25");
    let pa = a.pid();
    for (ours, theirs) in [
        (vec!["-m"], vec!["-m"]),
        (vec!["-c", "-n", "-z"], vec!["-cnz"]),
        (vec!["-p", &pa, "-v"], vec!["-v", &pa]),
        (vec!["--sort=0", "-m"], vec!["-s0", "-m"]),
        (vec!["-s", "-c", "-m"], vec!["-mcs"]),
    ] {
        let mut args = vec!["stat", "--compat"];
        args.extend(&ours);
        // Masked stdout and exit code, as numastat given `theirs`.
        let r = around_real(
            &theirs,
            None,
            || Command::new(BIN).args(&args).env_remove("NUMASTAT_WIDTH").output().expect("numakit"),
            |r, o| r.status.code() == o.status.code() && mask(&r.stdout) == mask(&o.stdout),
        );
        assert!(r.is_ok(), "numakit {args:?} differs from numastat {theirs:?}: {}", r.unwrap_err());
    }
    let o = Command::new(BIN).args(["stat", "-z"]).output().expect("numakit");
    assert_eq!(o.status.code(), Some(2), "numastat's options need --compat");
}

/// `stat --compat` followed by numastat's flags skips clap
/// (`Cli::stat_compat_flags`); the same flags before `--compat` go through
/// clap. Both give the same output, errors and exit codes: on dumps, with
/// `NUMAKIT_SYSROOT` naming no root, and set but empty.
#[test]
fn stat_compat_without_clap_equals_with_clap() {
    let roots: Vec<PathBuf> = common::fixtures()
        .iter()
        .map(|f| f.root.clone())
        .filter(|r| r.join("sys/devices/system/node/node1/numastat").exists())
        .take(4)
        .collect();
    assert!(!roots.is_empty(), "no multi-node dump with numastat files");
    let mut envs: Vec<Option<std::ffi::OsString>> = roots.iter().map(|r| Some(r.clone().into_os_string())).collect();
    envs.extend([Some("/nonexistent/root".into()), Some("".into()), None]);
    for env in &envs {
        for flags in [&[][..], &["-m"], &["-c", "-n", "-z"], &["--verbose", "-m"], &["--skip-zero", "--compress"]] {
            let run = |args: Vec<&str>| {
                let mut c = Command::new(BIN);
                c.args(&args).env_remove("NUMASTAT_WIDTH");
                match env {
                    Some(v) => c.env("NUMAKIT_SYSROOT", v),
                    None => c.env_remove("NUMAKIT_SYSROOT"),
                };
                let o = c.output().expect("numakit");
                // The live counters move between two runs; a dump's do not
                // (an empty NUMAKIT_SYSROOT is the live system).
                let live = env.as_ref().is_none_or(|v| v.is_empty());
                let out = if live { mask(&o.stdout) } else { String::from_utf8_lossy(&o.stdout).into_owned() };
                (o.status.code(), out, String::from_utf8_lossy(&o.stderr).into_owned())
            };
            let fast = run([&["stat", "--compat"][..], flags].concat());
            let clap = run([&["stat"][..], flags, &["--compat"]].concat());
            assert_eq!(fast, clap, "NUMAKIT_SYSROOT={env:?} stat --compat {flags:?}");
            if env.as_ref().is_some_and(|v| v.len() > 1 && !v.to_string_lossy().contains("nonexistent")) {
                assert_eq!(fast.0, Some(0), "{env:?} {flags:?}: {}", fast.2);
            }
        }
    }
}

/// numastat in a private mount namespace with `node_dir` over
/// /sys/devices/system/node; `None` when that cannot be done here.
fn numastat_on(node_dir: &Path, width: Option<&str>, args: &[&str]) -> Option<Output> {
    let mut c = Command::new("unshare");
    c.args(["-m", "--propagation", "private", "sh", "-c"])
        .arg(r#"mount --bind "$0" /sys/devices/system/node && exec numastat "$@""#)
        .arg(node_dir)
        .args(args)
        .env_remove("NUMASTAT_WIDTH");
    if let Some(w) = width {
        c.env("NUMASTAT_WIDTH", w);
    }
    let o = c.output().ok()?;
    if String::from_utf8_lossy(&o.stderr).contains("mount") && !o.status.success() {
        return None;
    }
    Some(o)
}

#[test]
fn numastat_options_on_multi_node_dumps() {
    if !have("numastat") {
        return;
    }
    let (_d, dir) = links();
    let ours = dir.join("numastat");
    let table: [&[&str]; 9] =
        [&["-n"], &["-c"], &["-z"], &["-s"], &["-s1", "-n"], &["-s3", "-c"], &["-czs"], &["-cz", "-s2"], &["-v", "-n"]];
    let (mut compared, mut dumps) = (0, 0);
    for f in common::fixtures() {
        let node_dir = f.root.join("sys/devices/system/node");
        let Ok(entries) = std::fs::read_dir(&node_dir) else { continue };
        let nodes: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("node")) && p.is_dir())
            .collect();
        if nodes.len() < 2 || !nodes.iter().all(|n| n.join("numastat").exists()) {
            continue;
        }
        dumps += 1;
        // `-sN` sorts by column 1 + (the N-th node's id): with sparse ids
        // beyond the table numastat reads memory past its cells (undefined;
        // numakit reads those as 0), so only dense ids are compared there.
        let dense = nodes.iter().all(|n| {
            n.file_name()
                .and_then(|x| x.to_str())
                .and_then(|x| x[4..].parse::<usize>().ok())
                .is_some_and(|i| i < nodes.len())
        });
        for args in table {
            if !dense && args.iter().any(|a| a.starts_with("-s") && a.len() > 2 || a.contains("s2")) {
                continue;
            }
            for w in [None, Some("80"), Some("50"), Some("200")] {
                let Some(theirs) = numastat_on(&node_dir, w, args) else {
                    skip_or_fail("cannot bind-mount in a private mount namespace (needs root)");
                    return;
                };
                let mut c = Command::new(&ours);
                c.arg0("numastat").args(args).env("NUMAKIT_SYSROOT", &f.root).env_remove("NUMASTAT_WIDTH");
                if let Some(w) = w {
                    c.env("NUMASTAT_WIDTH", w);
                }
                let o = c.output().expect("numakit as numastat");
                assert_eq!(
                    (o.status.code(), String::from_utf8_lossy(&o.stdout)),
                    (theirs.status.code(), String::from_utf8_lossy(&theirs.stdout)),
                    "{}: numastat {args:?} NUMASTAT_WIDTH={w:?}",
                    f.name
                );
                compared += 1;
            }
        }
    }
    if dumps > 0 {
        eprintln!("compared {compared} runs on {dumps} multi-node dumps");
        assert!(dumps >= 20, "only {dumps} multi-node dumps with numastat files");
    }
}

#[test]
fn migratepages_arguments_messages_and_exit_codes() {
    if !have("migratepages") {
        return;
    }
    let (_d, dir) = links();
    let ours = dir.join("migratepages");
    let child = Sleeper::start("304.25");
    let pid = child.pid();
    let hex = format!("{:#x}", child.pid().parse::<u32>().expect("pid"));
    let table: Vec<Vec<&str>> = vec![
        vec![],
        vec![&pid],
        vec![&pid, "0"],
        vec![&pid, "0", "0"],
        vec![&pid, "0", "0", "0"],
        vec![&pid, "all", "all"],
        vec![&pid, "0-0", "0"],
        vec![&pid, "0,0", "+0"],
        vec![&pid, "!0", "0"],
        vec![&pid, "", "0"],
        vec![&pid, "0", "1"],
        vec![&pid, "5", "0"],
        vec![&pid, "1-0", "0"],
        vec![&pid, "0-", "0"],
        vec![&pid, ",0", "0"],
        vec![&pid, "0:1", "0"],
        vec![&pid, "0", "abc"],
        vec![&pid, "0x0", "00"],
        vec![&hex, "0", "0"],
        vec!["999999999", "0", "0"],
        vec!["x", "0", "0"],
        vec!["12x", "0", "0"],
        vec!["-h"],
        vec!["--help"],
        vec!["--he"],
        vec!["--help=x"],
        vec!["--bogus", &pid, "0", "0"],
        vec!["-x"],
        vec!["-1", "0", "0"],
        vec!["--", &pid, "0", "0"],
        vec![&pid, "0", "-h", "0"],
    ];
    let mut failures = Vec::new();
    for args in &table {
        let theirs = run_as(Path::new("/usr/bin/migratepages"), "migratepages", args, None);
        let o = run_as(&ours, "migratepages", args, None);
        let view = |r: &Output| {
            (
                r.status.code(),
                String::from_utf8_lossy(&r.stdout).into_owned(),
                String::from_utf8_lossy(&r.stderr).into_owned(),
            )
        };
        if view(&theirs) != view(&o) {
            failures.push(format!("migratepages {args:?}:\n  real:    {:?}\n  numakit: {:?}", view(&theirs), view(&o)));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(std::fs::metadata(format!("/proc/{pid}")).is_ok(), "the child is still there");
}
