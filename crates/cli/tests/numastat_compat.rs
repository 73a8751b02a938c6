//! numakit invoked as `numastat` and as `migratepages` (a symlink to the
//! built binary) against the real tools of Debian's numactl 2.0.16, run
//! with the same argv[0] and arguments:
//!
//! * numastat on this machine: every option and a set of combinations,
//!   with `NUMASTAT_WIDTH` unset and set (also to values C's `atoi` reads
//!   partly), both tools in a private mount namespace where a frozen copy
//!   of this machine's `/sys/devices/system/node` lies over the live one
//!   (counters and free memory move between two runs; the copy does not):
//!   stdout, stderr and exit code byte for byte. The process tables read
//!   the live `numa_maps` of quiet children, which the page cache can
//!   still change: ours must equal one of two real runs around it;
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

/// A frozen copy of this machine's node folder, for [`on_frozen`].
fn frozen() -> Option<(tempfile::TempDir, PathBuf)> {
    let d = tempfile::tempdir().expect("tmp");
    let node_dir = common::freeze_node_dir(d.path());
    if common::run_on_node_dir(&node_dir, Path::new("/bin/true"), "true", &[], &[]).is_none() {
        skip_or_fail("cannot bind-mount in a private mount namespace (needs root)");
        return None;
    }
    Some((d, node_dir))
}

/// `program` as argv[0] `name` on the frozen node folder `node_dir`.
fn on_frozen(node_dir: &Path, program: &Path, name: &str, args: &[&str], width: Option<&str>) -> Output {
    let env: Vec<(&str, &str)> = width.map(|w| ("NUMASTAT_WIDTH", w)).into_iter().collect();
    common::run_on_node_dir(node_dir, program, name, args, &env).expect("the namespace worked a moment ago")
}

/// Runs the real numastat with `theirs`, then `ours`, then the real one
/// again, until `same` holds for ours and one of the two real runs around
/// it: what a process table shows can change between runs (page cache).
/// On a frozen node folder nothing else moves, so a few tries are plenty.
/// Err: the last try, both sides.
fn around_real(
    node_dir: &Path,
    theirs: &[&str],
    width: Option<&str>,
    ours: impl Fn() -> Output,
    same: impl Fn(&Output, &Output) -> bool,
) -> Result<(), String> {
    let real = Path::new("/usr/bin/numastat");
    let mut why = String::new();
    for _ in 0..4 {
        let a = on_frozen(node_dir, real, "numastat", theirs, width);
        let o = ours();
        let b = on_frozen(node_dir, real, "numastat", theirs, width);
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

/// Stdout, stderr and exit code byte for byte.
fn exact(r: &Output, o: &Output) -> bool {
    r.status.code() == o.status.code() && r.stderr == o.stderr && r.stdout == o.stdout
}

/// numakit invoked as numastat (`ours_prog`) on the frozen node folder
/// equals one of two real runs around it ([`around_real`]), byte for byte.
fn compare_frozen(node_dir: &Path, ours_prog: &Path, args: &[&str], width: Option<&str>) -> Result<(), String> {
    around_real(node_dir, args, width, || on_frozen(node_dir, ours_prog, "numastat", args, width), exact)
}

#[test]
fn numastat_options_and_combinations_on_this_machine() {
    if !have("numastat") {
        return;
    }
    let (_d, dir) = links();
    let ours = dir.join("numastat");
    let Some((_f, node_dir)) = frozen() else { return };
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
        vec!["sleep 302.2"],
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
        vec!["--", "-no-such-dash-pattern"],
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
            if let Err(why) = compare_frozen(&node_dir, &ours, args, w) {
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
    let Some((_f, node_dir)) = frozen() else { return };
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
        // Stdout and exit code, as numastat given `theirs`.
        let r = around_real(
            &node_dir,
            &theirs,
            None,
            || on_frozen(&node_dir, Path::new(BIN), "numakit", &args, None),
            |r, o| r.status.code() == o.status.code() && r.stdout == o.stdout,
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
    let Some((_f, node_dir)) = frozen() else { return };
    let mut envs: Vec<Option<std::ffi::OsString>> = roots.iter().map(|r| Some(r.clone().into_os_string())).collect();
    envs.extend([Some("/nonexistent/root".into()), Some("".into()), None]);
    for env in &envs {
        for flags in [&[][..], &["-m"], &["-c", "-n", "-z"], &["--verbose", "-m"], &["--skip-zero", "--compress"]] {
            let run = |args: Vec<&str>| {
                let o = match env {
                    // An empty NUMAKIT_SYSROOT is the live system: run it,
                    // like no NUMAKIT_SYSROOT, on the frozen node folder.
                    Some(v) if v.is_empty() => Ok(common::run_on_node_dir(
                        &node_dir,
                        Path::new(BIN),
                        "numakit",
                        &args,
                        &[("NUMAKIT_SYSROOT", "")],
                    )
                    .expect("the namespace worked a moment ago")),
                    Some(v) => {
                        Command::new(BIN).args(&args).env_remove("NUMASTAT_WIDTH").env("NUMAKIT_SYSROOT", v).output()
                    }
                    // This machine, on a frozen copy of its node folder: the
                    // live counters move between two runs.
                    None => Ok(on_frozen(&node_dir, Path::new(BIN), "numakit", &args, None)),
                }
                .expect("numakit");
                let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
                (o.status.code(), text(&o.stdout), text(&o.stderr))
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
