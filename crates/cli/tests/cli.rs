//! The binary's contract on this machine: `topo --hardware` equals the real
//! `numactl --hardware` (free memory excepted, it moves), bad input gives
//! one line naming the value and the right exit code, `--help` never reads
//! the system, and a broken pipe is not an error.

mod common;

use std::io::Read;
use std::process::{Command, Stdio};

fn nk(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_numakit")).args(args).output().expect("run numakit")
}

#[test]
fn hardware_equals_numactl_on_this_machine() {
    let Ok(real) = Command::new("numactl").arg("--hardware").output() else {
        common::skip_or_fail("numactl is not installed (scripts/install-deps installs it)");
        return;
    };
    let ours = nk(&["topo", "--hardware"]);
    assert!(ours.status.success());
    let strip = |b: &[u8]| -> Vec<String> {
        String::from_utf8_lossy(b).lines().filter(|l| !l.contains(" free: ")).map(str::to_string).collect()
    };
    assert_eq!(strip(&ours.stdout), strip(&real.stdout));
}

#[test]
fn numactl_show_equals_numactl_on_this_machine() {
    let Ok(real) = Command::new("numactl").arg("--show").output() else {
        common::skip_or_fail("numactl is not installed");
        return;
    };
    let ours = nk(&["numactl", "--show"]);
    assert_eq!(String::from_utf8_lossy(&ours.stdout), String::from_utf8_lossy(&real.stdout));
}

#[test]
fn usage_errors_exit_2_system_errors_exit_1() {
    let o = nk(&["--sysroot", "/nonexistent/root", "topo"]);
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(e.trim(), "numakit: /nonexistent/root is not a Linux system root: no such folder");

    // A root whose distance file is a folder: not a file to read.
    let d = tempfile::tempdir().expect("tmp");
    numakit::topo::synth::SynthMachine::rr_4n(4, 64).write(d.path()).expect("write");
    let dist = d.path().join("sys/devices/system/node/node1/distance");
    std::fs::remove_file(&dist).expect("rm");
    std::fs::create_dir(&dist).expect("mkdir");
    let o = nk(&["--sysroot", d.path().to_str().expect("utf8"), "topo", "--json"]);
    assert_eq!(o.status.code(), Some(1));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("node1/distance: not a regular file (a folder)"), "{e}");
    assert_eq!(e.lines().count(), 1, "{e}");

    let o = nk(&["run", "-m", "x-y", "--", "true"]);
    assert_eq!(o.status.code(), Some(2));
    let o = nk(&["show", "999999999"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no process 999999999"));
}

#[test]
fn run_execs_the_command_and_keeps_its_status() {
    let o = nk(&["run", "-m", "0", "--", "sh", "-c", "grep Mems_allowed_list /proc/self/status; exit 7"]);
    assert_eq!(o.status.code(), Some(7));
    let o = nk(&["run", "-N", "0", "--", "/nonexistent/cmd"]);
    assert_eq!(o.status.code(), Some(127));
    assert!(String::from_utf8_lossy(&o.stderr).contains("cannot run /nonexistent/cmd"));
}

#[test]
fn help_never_reads_the_system_and_broken_pipe_is_quiet() {
    let o = Command::new(env!("CARGO_BIN_EXE_numakit"))
        .args(["--sysroot", "/nonexistent", "topo", "--help"])
        .output()
        .expect("run");
    assert!(o.status.success());
    // Reader closes the pipe early: no error message, success.
    let mut child = Command::new(env!("CARGO_BIN_EXE_numakit"))
        .args(["topo", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut first = [0u8; 1];
    child.stdout.take().expect("stdout").read_exact(&mut first).expect("read");
    let out = child.wait_with_output().expect("wait");
    assert!(out.stderr.is_empty() || !String::from_utf8_lossy(&out.stderr).contains("error"));
}
