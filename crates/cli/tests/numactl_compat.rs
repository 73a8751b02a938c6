//! `numakit numactl` (and numakit invoked as `numactl`) against the real
//! numactl 2.0.16 on this machine, same arguments, same tiny command (it
//! prints its `Cpus_allowed_list` and memory policy): the same exit status
//! class, and for successes the same output. The rows are the in-order
//! rules numactl follows (the last CPU binding wins, `-b` before `-m`, `-H`
//! and `-s` act at once, `-a` first), libnuma's list quirks (a reversed
//! range is its first id, strides are refused) and numactl's option set
//! (`-V` is `--verify`; there is no `--version`). They need one node and
//! CPUs 0-1; the 4-node table is tests/vm_numactl.rs.
//!
//! A second table runs both under `taskset -c 0`: numactl judges a CPU
//! list against the caller's affinity (`--all` against every CPU), a
//! `--cpunodebind` binds past it, `!` inverts within the machine.
//!
//! With CI=true a missing numactl is a failure; elsewhere the test is skipped.

mod common;

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use common::skip_or_fail;

const BIN: &str = env!("CARGO_BIN_EXE_numakit");

const PROBE: &str = "grep -E '^Cpus_allowed_list' /proc/self/status; head -1 /proc/self/numa_maps | cut -d' ' -f2";

fn run(program: &str, pre: &[&str], args: &[&str]) -> Output {
    let mut c = Command::new(program);
    c.arg0("numactl").args(pre).args(args).args(["sh", "-c", PROBE]).stdin(Stdio::null());
    c.output().expect("run")
}

/// `run` under `taskset -c CPUS` (taskset execs the program by its path,
/// so the link is still named `numactl`).
fn run_in(cpus: &str, program: &str, pre: &[&str], args: &[&str]) -> Output {
    let mut c = Command::new("taskset");
    c.args(["-c", cpus, program]).args(pre).args(args).args(["sh", "-c", PROBE]).stdin(Stdio::null());
    c.output().expect("run")
}

/// `-H` output without the free memory (it moves between two runs).
fn view(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| match l.split_once(" free: ") {
            Some((h, _)) => format!("{h} free: N MB\n"),
            None => format!("{l}\n"),
        })
        .collect()
}

/// numactl and CPUs 0-1 online, or why the test cannot run.
fn ready() -> bool {
    if !Path::new("/usr/bin/numactl").exists() {
        skip_or_fail("numactl is not installed (Debian package numactl)");
        return false;
    }
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").expect("online");
    if !online.trim().starts_with("0-") {
        skip_or_fail(&format!("needs CPUs 0 and 1 online (online: {})", online.trim()));
        return false;
    }
    true
}

/// A row's difference: not the same exit status class, or on success not
/// the same output.
fn differs(args: &[&str], who: &str, real: &Output, o: &Output) -> Option<String> {
    let same_class = real.status.success() == o.status.success();
    (!same_class || (real.status.success() && view(real) != view(o))).then(|| {
        format!(
            "{args:?} {who}:\n  real    {:?} {:?} {:?}\n  numakit {:?} {:?} {:?}",
            real.status.code(),
            view(real),
            String::from_utf8_lossy(&real.stderr).lines().next(),
            o.status.code(),
            view(o),
            String::from_utf8_lossy(&o.stderr).lines().next()
        )
    })
}

#[test]
fn numactl_mode_follows_numactl_option_by_option() {
    if !ready() {
        return;
    }
    let rows: &[&[&str]] = &[
        &["-C", "0", "-C", "1"],
        &["-N", "0", "-C", "1"],
        &["-C", "1", "-N", "0"],
        &["-C", "1", "-C", "0-1"],
        &["-C", "99", "-C", "0"],
        &["-C", "1-0"],
        &["-C", "+1-0"],
        &["-C", "!1-0"],
        &["-m", "0-0"],
        &["-C", "0-1:2"],
        &["-C", "0-1:1/2"],
        &["-m", "0-0:1"],
        &["-b"],
        &["-b", "-m", "0"],
        &["-m", "0", "-b"],
        &["-b", "-C", "1"],
        &["-H"],
        &["-H", "-m", "0"],
        &["-m", "0", "-H"],
        &["-N", "0", "-H"],
        &["-C", "99", "-H"],
        &["-H", "-Z"],
        &["-H", "-s"],
        &["-s", "-H"],
        &["-s", "--foo"],
        &["-m", "0", "-s"],
        &["-a", "-m", "all"],
        &["-m", "all", "-a"],
        &["-C", "0", "-a"],
        &["-l", "-a"],
        &["-N", "0", "-m", "same"],
        &["-m", "0", "-N", "same"],
        &["-C", "0", "-m", "same"],
        &["-m", "same"],
        &["-C", "same"],
        &["-N", "0", "-C", "same"],
        &["-l", "-a", "-m", "all"],
        &["-V"],
        &["--version"],
        &["-v"],
        &["--verify"],
        &["-m", "0", "-m", "0"],
        &["-m", "0", "-i", "0"],
        &["-l", "-m", "0"],
    ];
    let link_dir = tempfile::tempdir().expect("tmp");
    let link = link_dir.path().join("numactl");
    std::os::unix::fs::symlink(BIN, &link).expect("symlink");
    let mut failures = Vec::new();
    for args in rows {
        let real = run("/usr/bin/numactl", &[], args);
        for (who, o) in
            [("numakit numactl", run(BIN, &["numactl"], args)), ("link", run(&link.to_string_lossy(), &[], args))]
        {
            failures.extend(differs(args, who, &real, &o));
        }
    }
    assert!(failures.is_empty(), "{} of {} rows differ:\n{}", failures.len(), rows.len(), failures.join("\n"));
}

#[test]
fn numactl_mode_judges_lists_against_the_callers_affinity() {
    if !ready() {
        return;
    }
    // Every option that takes CPUs or nodes, under `taskset -c 0`, with and
    // without --all.
    let rows: &[&[&str]] = &[
        &["-C", "1"],
        &["-a", "-C", "1"],
        &["-C", "0"],
        &["-C", "all"],
        &["-a", "-C", "all"],
        &["-C", "!0"],
        &["-C", "!1"],
        &["-a", "-C", "!1"],
        &["-C", "+0"],
        &["-C", "+1"],
        &["-a", "-C", "+1"],
        &["-C", "0-1"],
        &["-a", "-C", "0-1"],
        &["-C", "1-1"],
        &["-C", "0", "-C", "1"],
        &["-a", "-C", "1", "-C", "0"],
        &["-C", "1", "-N", "0"],
        &["-N", "0", "-C", "1"],
        &["-a", "-N", "0", "-C", "1"],
        &["-N", "0"],
        &["-a", "-N", "0"],
        &["-N", "all"],
        &["-N", "!0"],
        &["-c", "0"],
        &["-m", "0"],
        &["-a", "-m", "all"],
        &["-m", "!0"],
        &["-i", "all"],
        &["-a", "-i", "0"],
        &["-p", "0"],
        &["-a", "-p", "+0"],
        &["-P", "0"],
        &["-l", "-a", "-C", "1"],
        &["-s"],
        &["-a", "-s"],
        &["-C", "0", "-s"],
    ];
    let link_dir = tempfile::tempdir().expect("tmp");
    let link = link_dir.path().join("numactl");
    std::os::unix::fs::symlink(BIN, &link).expect("symlink");
    let mut failures = Vec::new();
    for args in rows {
        let real = run_in("0", "/usr/bin/numactl", &[], args);
        for (who, o) in [
            ("numakit numactl", run_in("0", BIN, &["numactl"], args)),
            ("link", run_in("0", &link.to_string_lossy(), &[], args)),
        ] {
            failures.extend(differs(args, who, &real, &o));
        }
    }
    // The refusal names the affinity, not a cpuset.
    let o = run_in("0", BIN, &["numactl"], &["-C", "1"]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("CPU 1 is outside this process's CPU affinity 0") && e.contains("--all lifts it"), "{e}");
    assert!(failures.is_empty(), "{} of {} rows differ:\n{}", failures.len(), rows.len(), failures.join("\n"));
}
