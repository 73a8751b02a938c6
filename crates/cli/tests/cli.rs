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
    assert!(String::from_utf8_lossy(&o.stderr).contains("cannot run \"/nonexistent/cmd\""));
}

#[test]
fn help_never_reads_the_system() {
    let o = Command::new(env!("CARGO_BIN_EXE_numakit"))
        .args(["--sysroot", "/nonexistent", "topo", "--help"])
        .output()
        .expect("run");
    assert!(o.status.success());
}

/// The binary enters through C's `main` (crates/cli/src/start.rs) and does
/// itself what Rust's start-up did: a closed standard output is opened on
/// /dev/null (no write error), a reader that goes away ends the output
/// quietly with exit 0 and nothing on stderr (SIGPIPE ignored, not a
/// kill; a broken pipe is not an error), and the commands it
/// starts get SIGPIPE back at its default.
#[test]
fn start_up_keeps_what_rusts_main_did() {
    let bin = env!("CARGO_BIN_EXE_numakit");
    // Standard output closed: numakit and the command it runs have
    // /dev/null there, not the first file numakit opens.
    let script = "exec \"$0\" run -- sh -c 't=$(readlink /proc/$$/fd/1); echo \"$t\" >&2' >&-";
    let o = Command::new("sh").args(["-c", script, bin]).output().expect("sh");
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(String::from_utf8_lossy(&o.stderr).trim(), "/dev/null");

    // More than a pipe holds (83 KB), its reader gone after one byte.
    let mut child = Command::new(bin)
        .args(["completions", "bash"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut first = [0u8; 1];
    let mut out = child.stdout.take().expect("stdout");
    out.read_exact(&mut first).expect("read");
    drop(out);
    let o = child.wait_with_output().expect("wait");
    assert_eq!(o.status.code(), Some(0), "{:?} {}", o.status, String::from_utf8_lossy(&o.stderr));
    assert!(o.stderr.is_empty(), "{}", String::from_utf8_lossy(&o.stderr));

    for args in [
        &["run", "--", "grep", "SigIgn", "/proc/self/status"][..],
        &["numactl", "--", "grep", "SigIgn", "/proc/self/status"],
    ] {
        let o = nk(args);
        assert!(o.status.success(), "{args:?}");
        let line = String::from_utf8_lossy(&o.stdout).into_owned();
        let mask = u64::from_str_radix(line.trim().trim_start_matches("SigIgn:").trim(), 16).expect("a mask");
        assert_eq!(mask & (1 << (libc::SIGPIPE - 1)), 0, "{args:?}: SIGPIPE ignored in the child: {line}");
    }
}

/// Errors of `pin` and `migrate` name the option as typed (they used
/// numactl's names: `--physcpubind 7`, `--membind 5`), and a move with no
/// source node says so.
#[test]
fn pin_and_migrate_name_their_own_options() {
    let me = std::process::id().to_string();
    let err = |o: &std::process::Output| String::from_utf8_lossy(&o.stderr).into_owned();
    for (args, want) in [
        (vec!["pin", &me, "--cpus", "4095"], "numakit: --cpus 4095: "),
        (vec!["pin", &me, "--nodes", "1023"], "numakit: --nodes 1023: "),
        (vec!["migrate", &me, "--to", "1023"], "numakit: --to 1023: "),
        (vec!["migrate", &me, "--from", "1023", "--to", "0"], "numakit: --from 1023: "),
    ] {
        let o = nk(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", err(&o));
        assert!(err(&o).starts_with(want), "{args:?}: {}", err(&o));
    }
    let o = nk(&["migrate", &me, "--to", "0", "--dry-run"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", err(&o));
    assert!(!out.contains("node(s)  to") && !out.contains("node(s) to"), "{out}");
}

/// `ip:` takes the interface the kernel routes through: the machine's own
/// addresses go through `lo` (the local table), not the default route.
#[test]
fn ip_specifier_of_a_local_address_is_lo() {
    let o = nk(&["run", "--dry-run", "-N", "ip:127.0.0.1", "--", "true"]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains("route to 127.0.0.1 leaves through lo"), "{e}");
}

/// A synthetic 4-node machine whose nodes hold a third of /proc/meminfo's
/// memory (as on the virtual machine of issue 30) and a GPU the firmware
/// puts on no node: `topo` says both (text and JSON), `tune check` reports
/// both, and `topo --hardware` (numactl's format) stays as it was.
#[test]
fn memory_in_no_node_and_devices_on_no_node_are_said() {
    let d = tempfile::tempdir().expect("tmp");
    numakit::topo::synth::SynthMachine::rr_4n(8, 2048).write(d.path()).expect("write");
    let root = d.path().to_str().expect("utf8").to_string();
    let hardware_before = nk(&["--sysroot", &root, "topo", "--hardware"]);
    let put = |rel: &str, text: &str| {
        let p = d.path().join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("dir");
        std::fs::write(p, text).expect("write");
    };
    // 4 x 2 GiB in the nodes, 24 GiB in /proc/meminfo.
    put("proc/meminfo", "MemTotal: 25165824 kB\nMemFree: 20000000 kB\n");
    for (addr, node, class) in [("0000:17:00.0", "-1", "0x030200"), ("0000:00:01.0", "-1", "0x060400")] {
        put(&format!("sys/bus/pci/devices/{addr}/numa_node"), &format!("{node}\n"));
        put(&format!("sys/bus/pci/devices/{addr}/class"), &format!("{class}\n"));
    }
    let text = String::from_utf8_lossy(&nk(&["--sysroot", &root, "topo"]).stdout).into_owned();
    assert!(
        text.contains(
            "Memory: the nodes' MemTotal add up to 8 GiB, 16 GiB (66.7%) less than /proc/meminfo's MemTotal of 24 GiB: \
             no node accounts for that memory\n"
        ),
        "{text}"
    );
    // The GPU is listed, the bridge is not.
    assert!(text.contains("\nNo node (numa_node -1): 0000:17:00.0 (display, class 0x030200)\n"), "{text}");
    let j: serde_json::Value =
        serde_json::from_slice(&nk(&["--sysroot", &root, "topo", "--json"]).stdout).expect("json");
    common::assert_topo_json_shape(&j);
    assert_eq!(
        j["memory_accounting"],
        serde_json::json!({"meminfo_total_bytes": 24u64 << 30, "nodes_total_bytes": 8u64 << 30,
                           "difference_bytes": 16u64 << 30, "adds_up": false})
    );
    let check = String::from_utf8_lossy(&nk(&["--sysroot", &root, "tune", "check"]).stdout).into_owned();
    let line = |k: &str| check.lines().find(|l| l.split_whitespace().nth(1) == Some(k)).unwrap_or_default().to_string();
    assert!(line("memory.nodes").starts_with("warn"), "{check}");
    assert!(line("memory.nodes").ends_with("8 GiB in the nodes, MemTotal 24 GiB: 66.7% in no node"), "{check}");
    assert!(line("pci.no_node").starts_with("note"), "{check}");
    assert!(line("pci.no_node").ends_with("0000:17:00.0 (display, class 0x030200)"), "{check}");
    // numactl's view of the same root is unchanged, byte for byte.
    let hardware_after = nk(&["--sysroot", &root, "topo", "--hardware"]);
    assert!(hardware_after.status.success());
    assert_eq!(hardware_after.stdout, hardware_before.stdout);
    // Nodes that add up say nothing.
    put("proc/meminfo", "MemTotal: 8388608 kB\nMemFree: 6000000 kB\n");
    let text = String::from_utf8_lossy(&nk(&["--sysroot", &root, "topo"]).stdout).into_owned();
    assert!(!text.contains("Memory:"), "{text}");
}
