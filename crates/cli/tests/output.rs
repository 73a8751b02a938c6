//! Every command's output through the one writer: with standard output a
//! pipe nobody reads, the command ends quietly with exit 0; with
//! `/dev/full`, one line on stderr and exit 1, never a panic (exit 101);
//! a change made before the output failed is said as done.

use std::fs::File;
use std::process::{Command, Output, Stdio};

const NK: &str = env!("CARGO_BIN_EXE_numakit");

/// Commands that print on any machine, without a daemon or root state.
fn commands() -> Vec<Vec<String>> {
    let me = std::process::id().to_string();
    let list: &[&[&str]] = &[
        &["topo"],
        &["topo", "--json"],
        &["topo", "--hardware"],
        &["topo", "--svg", "-"],
        &["show"],
        &["show", "--json"],
        &["show", &me],
        &["run", "--dry-run", "-N", "0", "--", "true"],
        &["run", "--dry-run", "--auto", "--cpus", "1", "--", "true"],
        &["numactl", "--show"],
        &["numactl", "-H"],
        &["migrate", &me, "--to", "0", "--dry-run"],
        &["advise", "--cpus", "1", "--no-daemon"],
        &["advise", "--cpus", "1", "--no-daemon", "--json"],
        &["stat"],
        &["stat", "--compat"],
        &["stat", "-m"],
        &["stat", "--json"],
        &["stat", "-p", &me],
        &["top", "--once"],
        &["tune", "show"],
        &["tune", "profiles"],
        &["irq", "show", "--all"],
        &["irq", "show", "--json"],
        &["simulate", "--list"],
    ];
    list.iter().map(|a| a.iter().map(|s| s.to_string()).collect()).collect()
}

/// `advise` and `run --auto` on a machine too busy to have an idle CPU
/// (other tests run beside this one) refuse with exit 75 and print nothing.
fn busy(args: &[String], o: &Output) -> bool {
    o.status.code() == Some(75) && args.iter().any(|a| a == "advise" || a == "--auto")
}

fn run(args: &[String], stdout: Stdio) -> Output {
    Command::new(NK).args(args).stdout(stdout).stderr(Stdio::piped()).output().expect("run numakit")
}

fn dev_full() -> Stdio {
    Stdio::from(File::options().write(true).open("/dev/full").expect("/dev/full"))
}

#[test]
fn a_closed_pipe_ends_quietly() {
    for args in commands() {
        let (reader, writer) = std::io::pipe().expect("pipe");
        drop(reader);
        let o = run(&args, Stdio::from(writer));
        let err = String::from_utf8_lossy(&o.stderr);
        if busy(&args, &o) {
            continue;
        }
        assert_eq!(o.status.code(), Some(0), "{args:?}: {err}");
        assert!(err.is_empty(), "{args:?} said: {err}");
    }
    eprintln!("HOSTILE|output|every printing command with its reader gone (closed pipe)|{}|0", commands().len());
}

#[test]
fn a_full_disk_is_one_line_and_exit_1() {
    for args in commands() {
        let o = run(&args, dev_full());
        let err = String::from_utf8_lossy(&o.stderr);
        if busy(&args, &o) {
            continue;
        }
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("numakit: cannot write the output: No space left on device"), "{args:?}: {err}");
    }
    eprintln!("HOSTILE|output|every printing command writing to /dev/full|{}|0", commands().len());
}

#[test]
fn a_pin_made_before_the_output_failed_is_said_as_done() {
    let mut child = Command::new("sleep").arg("30").spawn().expect("sleep");
    let pid = child.id().to_string();
    let o = run(&["pin".into(), pid.clone(), "--cpus".into(), "0".into()], dev_full());
    let allowed = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    let _ = child.kill();
    let _ = child.wait();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with(&format!("numakit: done: pid {pid}: 1 thread(s) now on CPUs 0; but cannot write the output")),
        "{err}"
    );
    assert!(
        allowed.lines().any(|l| l.split_whitespace().collect::<Vec<_>>() == ["Cpus_allowed_list:", "0"]),
        "{allowed}"
    );
    eprintln!("HOSTILE|output|pin applied, then its report fails (/dev/full)|1|0");
}
