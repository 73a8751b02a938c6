//! `numakit stat` against the real `numastat` (Debian's numactl package):
//!
//! * `--compat` equals numastat byte for byte on a frozen copy of this
//!   machine's node counters and on every real-machine dump that has them,
//!   with numastat run in a private mount namespace where the dump's node
//!   folder is bind-mounted over `/sys/devices/system/node` (needs root);
//!   at several line widths, so folding is compared too;
//! * on the live machine, ours lies between two numastat runs around it;
//! * `-p` prints numastat -p's table for a quiet process, then locality,
//!   and keeps going when a PID has exited (numastat then prints nothing);
//! * `-m` counts huge pages of every size; JSON shapes; intervals; errors.
//!
//! With CI=true a missing numastat or a failed namespace is a failure;
//! elsewhere the test is skipped with the reason printed.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{skip_or_fail, Sleeper};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_numakit");

fn numakit(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(BIN);
    c.args(args).env_remove("NUMASTAT_WIDTH").env_remove("NUMAKIT_SYSROOT");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("run numakit")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn have_numastat() -> bool {
    if Command::new("numastat").arg("-V").output().is_ok() {
        return true;
    }
    skip_or_fail("numastat is not installed (Debian package numactl)");
    false
}

/// Whether a private mount namespace with a bind mount can be made here
/// (root); says why not once.
fn can_bind_mount() -> bool {
    static OK: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    let r = OK.get_or_init(|| {
        let d = tempfile::tempdir().map_err(|e| e.to_string())?;
        let out = Command::new("unshare")
            .args(["-m", "--propagation", "private", "sh", "-c", r#"mount --bind "$0" "$0""#])
            .arg(d.path())
            .output()
            .map_err(|e| format!("cannot run unshare: {e}"))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
        }
    });
    match r {
        Ok(()) => true,
        Err(why) => {
            skip_or_fail(&format!("cannot bind-mount in a private mount namespace (needs root): {why}"));
            false
        }
    }
}

/// numastat with `node_dir` bind-mounted over /sys/devices/system/node in
/// a private mount namespace; `None` (after skip_or_fail) if that is not
/// possible here.
fn numastat_on(node_dir: &Path, width: Option<&str>, args: &[&str]) -> Option<Output> {
    if !can_bind_mount() {
        return None;
    }
    let mut c = Command::new("unshare");
    c.args(["-m", "--propagation", "private", "sh", "-c"])
        .arg(r#"mount --bind "$0" /sys/devices/system/node && exec numastat "$@""#)
        .arg(node_dir)
        .args(args)
        .env_remove("NUMASTAT_WIDTH");
    if let Some(w) = width {
        c.env("NUMASTAT_WIDTH", w);
    }
    c.output().ok()
}

/// Copies this machine's `nodeN/numastat` files into `dir/node/`.
fn freeze_live_counters(dir: &Path) -> PathBuf {
    let node_dir = dir.join("sys/devices/system/node");
    for e in std::fs::read_dir("/sys/devices/system/node").expect("node dir").flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.strip_prefix("node").is_some_and(|r| !r.is_empty() && r.bytes().all(|b| b.is_ascii_digit())) {
            let d = node_dir.join(&name);
            std::fs::create_dir_all(&d).expect("mkdir");
            std::fs::copy(e.path().join("numastat"), d.join("numastat")).expect("copy numastat");
        }
    }
    std::fs::create_dir_all(dir.join("sys/devices/system/cpu")).expect("cpu dir");
    node_dir
}

const WIDTHS: [Option<&str>; 5] = [None, Some("80"), Some("50"), Some("200"), Some("10")];

fn assert_compat_equal(root: &Path, node_dir: &Path, what: &str) -> bool {
    for w in WIDTHS {
        let Some(theirs) = numastat_on(node_dir, w, &[]) else { return false };
        let env: Vec<(&str, &str)> = w.map(|w| ("NUMASTAT_WIDTH", w)).into_iter().collect();
        let ours = numakit(&["--sysroot", &root.to_string_lossy(), "stat", "--compat"], &env);
        assert_eq!(
            (ours.status.code(), stdout(&ours)),
            (theirs.status.code(), stdout(&theirs)),
            "{what}, NUMASTAT_WIDTH={w:?}: numakit stat --compat differs from numastat"
        );
    }
    true
}

#[test]
fn compat_equals_numastat_on_frozen_live_counters() {
    if !have_numastat() {
        return;
    }
    let d = tempfile::tempdir().expect("tmp");
    let node_dir = freeze_live_counters(d.path());
    assert_compat_equal(d.path(), &node_dir, "this machine (frozen)");
}

#[test]
fn compat_equals_numastat_on_every_dump() {
    if !have_numastat() {
        return;
    }
    let mut compared = 0;
    for f in common::fixtures() {
        let node_dir = f.root.join("sys/devices/system/node");
        let Ok(entries) = std::fs::read_dir(&node_dir) else { continue };
        let nodes: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("node")) && p.is_dir())
            .collect();
        if nodes.is_empty() || !nodes.iter().all(|n| n.join("numastat").exists()) {
            continue;
        }
        if !assert_compat_equal(&f.root, &node_dir, &f.name) {
            return;
        }
        compared += 1;
    }
    if compared > 0 {
        eprintln!("compared {compared} dumps");
        assert!(compared >= 30, "only {compared} dumps with numastat files");
    }
}

/// `name value` pairs of numastat's compat output, per node column.
fn parse_compat(text: &str) -> Vec<(String, String, u64)> {
    let mut out = Vec::new();
    let mut header: Vec<String> = Vec::new();
    for line in text.lines() {
        if line.trim().is_empty() {
            continue;
        }
        if line.starts_with(' ') {
            header = line.split_whitespace().map(str::to_string).collect();
            continue;
        }
        let mut f = line.split_whitespace();
        let name = f.next().unwrap_or_default().to_string();
        for (node, v) in header.iter().zip(f) {
            out.push((node.clone(), name.clone(), v.parse().expect("number")));
        }
    }
    out
}

#[test]
fn compat_live_lies_between_two_numastat_runs() {
    if !have_numastat() {
        return;
    }
    let before = Command::new("numastat").output().expect("numastat");
    let ours = numakit(&["stat", "--compat"], &[]);
    let after = Command::new("numastat").output().expect("numastat");
    assert!(ours.status.success());
    let (a, b, c) = (parse_compat(&stdout(&before)), parse_compat(&stdout(&ours)), parse_compat(&stdout(&after)));
    assert_eq!(a.len(), b.len(), "{}", stdout(&ours));
    for ((x, y), z) in a.iter().zip(&b).zip(&c) {
        assert_eq!((&x.0, &x.1), (&y.0, &y.1));
        assert!(x.2 <= y.2 && y.2 <= z.2, "{} {}: {} <= {} <= {}", y.0, y.1, x.2, y.2, z.2);
    }
    let lines = |t: &str| t.lines().map(|l| l.len()).collect::<Vec<_>>();
    let l = lines(&stdout(&ours));
    assert!(l == lines(&stdout(&before)) || l == lines(&stdout(&after)), "column layout differs");
}

fn dead_pid() -> String {
    let mut c = Command::new("true").spawn().expect("true");
    let pid = c.id();
    c.wait().expect("wait");
    pid.to_string()
}

#[test]
fn pid_table_equals_numastat_then_locality() {
    if !have_numastat() {
        return;
    }
    let (a, b) = (Sleeper::start("300"), Sleeper::start("300"));
    for pids in [vec![a.pid()], vec![a.pid(), b.pid()]] {
        let args: Vec<&str> = pids.iter().map(String::as_str).collect();
        let theirs = Command::new("numastat").arg("-p").args(&args).output().expect("numastat -p");
        let mut ours_args = vec!["stat", "-p"];
        ours_args.extend(&args);
        let ours = numakit(&ours_args, &[]);
        assert!(ours.status.success(), "{ours:?}");
        let text = stdout(&ours);
        let (table, locality) = text.split_once("\nLocality").expect("locality section");
        assert_eq!(table, stdout(&theirs), "pids {pids:?}");
        for p in &pids {
            assert!(locality.contains(&format!("{p} (sleep)")), "{locality}");
        }
    }
}

#[test]
fn pid_that_exited_does_not_break_the_output() {
    let a = Sleeper::start("300");
    let dead = dead_pid();
    let ours = numakit(&["stat", "-p", &a.pid(), &dead], &[]);
    assert_eq!(ours.status.code(), Some(0), "{ours:?}");
    assert!(stdout(&ours).contains(&format!("for PID {} (sleep)", a.pid())), "{}", stdout(&ours));
    let err = String::from_utf8_lossy(&ours.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("exited") && err.contains(&dead), "{err}");
    if Command::new("numastat").arg("-V").output().is_ok() {
        // What numakit must not do: numastat prints no table at all here.
        let theirs = Command::new("numastat").args(["-p", &a.pid(), &dead]).output().expect("numastat");
        eprintln!("numastat -p LIVE DEAD printed {} bytes of stdout", theirs.stdout.len());
    }
    let j = numakit(&["stat", "-p", &a.pid(), &dead, "--json"], &[]);
    let v: Value = serde_json::from_slice(&j.stdout).expect("json");
    assert_eq!(v["processes"].as_array().map(Vec::len), Some(1));
    assert_eq!(v["exited"][0].to_string(), dead);

    let only_dead = numakit(&["stat", "-p", &dead], &[]);
    assert_eq!(only_dead.status.code(), Some(2), "{only_dead:?}");
    let none = numakit(&["stat", "-p", "no-such-process-name-at-all"], &[]);
    assert_eq!(none.status.code(), Some(2), "{none:?}");
}

#[test]
fn pid_json_shape_and_name_patterns() {
    let a = Sleeper::start("300");
    let o = numakit(&["stat", "-p", &a.pid(), "--json"], &[]);
    assert!(o.status.success(), "{o:?}");
    let v: Value = serde_json::from_slice(&o.stdout).expect("json");
    let p = &v["processes"][0];
    assert_eq!(p["pid"].to_string(), a.pid());
    assert_eq!(p["comm"], "sleep");
    let mut sum = 0;
    for n in p["nodes"].as_array().expect("nodes") {
        assert!(n["id"].is_u64());
        let parts: u64 = ["huge_bytes", "heap_bytes", "stack_bytes", "private_bytes"]
            .iter()
            .map(|k| n[k].as_u64().expect("bytes"))
            .sum();
        assert_eq!(n["bytes"].as_u64(), Some(parts));
        sum += parts;
    }
    assert_eq!(p["total_bytes"].as_u64(), Some(sum));
    assert!(sum > 0);
    assert!(p["cpus_nodes"].as_array().is_some_and(|a| !a.is_empty()));
    let loc = p["locality"].as_f64().expect("locality");
    assert!((0.0..=1.0).contains(&loc));
    // The pattern finds it by name, without numakit itself.
    let o = numakit(&["stat", "-p", "sleep", "--json"], &[]);
    let v: Value = serde_json::from_slice(&o.stdout).expect("json");
    let pids: Vec<String> = v["processes"].as_array().expect("array").iter().map(|p| p["pid"].to_string()).collect();
    assert!(pids.contains(&a.pid()), "{pids:?}");
    let me = std::process::id().to_string();
    assert!(!pids.contains(&me));
}

#[test]
fn counters_json_and_intervals() {
    let o = numakit(&["stat", "--json"], &[]);
    assert!(o.status.success(), "{o:?}");
    let v: Value = serde_json::from_slice(&o.stdout).expect("json");
    for n in v["nodes"].as_array().expect("nodes") {
        assert!(n["id"].is_u64());
        for k in ["numa_hit", "numa_miss", "numa_foreign", "interleave_hit", "local_node", "other_node"] {
            assert!(n[k].is_u64(), "{k}");
        }
    }
    assert!(v["autonuma"].is_object());
    let o = numakit(&["stat", "--interval", "0.2", "--count", "2", "--json"], &[]);
    assert!(o.status.success(), "{o:?}");
    let lines: Vec<Value> = stdout(&o).lines().map(|l| serde_json::from_str(l).expect("json line")).collect();
    assert_eq!(lines.len(), 2);
    for l in &lines {
        let secs = l["interval_secs"].as_f64().expect("interval");
        assert!((0.19..1.0).contains(&secs), "{secs}");
        let hit = &l["nodes"][0]["numa_hit"];
        let (d, r) = (hit["delta"].as_f64().expect("delta"), hit["per_sec"].as_f64().expect("rate"));
        assert!((r - d / secs).abs() < 1e-6 * (1.0 + r), "{d} / {secs} != {r}");
    }
    let o = numakit(&["stat", "--interval", "0.2", "--count", "1"], &[]);
    assert!(stdout(&o).contains("Total/s"), "{}", stdout(&o));
}

#[test]
fn meminfo_counts_every_hugepage_size() {
    let d = tempfile::tempdir().expect("tmp");
    let n = d.path().join("sys/devices/system/node/node0");
    let put = |rel: &str, text: &str| {
        let p = n.join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, text).expect("write");
    };
    std::fs::create_dir_all(d.path().join("sys/devices/system/cpu")).expect("cpu");
    put("meminfo", "Node 0 MemTotal: 4194304 kB\nNode 0 MemFree: 1048576 kB\nNode 0 HugePages_Total: 8\nNode 0 HugePages_Free: 8\nNode 0 HugePages_Surp: 0\n");
    put("hugepages/hugepages-2048kB/nr_hugepages", "8\n");
    put("hugepages/hugepages-2048kB/free_hugepages", "8\n");
    put("hugepages/hugepages-2048kB/surplus_hugepages", "0\n");
    put("hugepages/hugepages-1048576kB/nr_hugepages", "2\n");
    put("hugepages/hugepages-1048576kB/free_hugepages", "1\n");
    put("hugepages/hugepages-1048576kB/surplus_hugepages", "0\n");
    let root = d.path().to_string_lossy().into_owned();
    let o = numakit(&["--sysroot", &root, "stat", "-m"], &[]);
    assert!(o.status.success(), "{o:?}");
    // 8 x 2 MiB + 2 x 1 GiB = 2064 MB; free 16 + 1024 = 1040 MB.
    let t = stdout(&o);
    assert!(t.contains(&format!("{:16}{:>16}{:>16}", "HugePages_Total", "2064.00", "2064.00")), "{t}");
    assert!(t.contains(&format!("{:16}{:>16}{:>16}", "HugePages_Free", "1040.00", "1040.00")), "{t}");
    let o = numakit(&["--sysroot", &root, "stat", "-m", "--json"], &[]);
    let v: Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["nodes"][0]["hugepages_total_bytes"].as_u64(), Some((8 << 21) + (2 << 30)));
    assert_eq!(v["nodes"][0]["meminfo_bytes"]["MemFree"].as_u64(), Some(1 << 30));
}

#[test]
fn usage_errors() {
    for args in [
        vec!["stat", "--interval", "0"],
        vec!["stat", "--interval", "-1"],
        vec!["stat", "--count", "2"],
        vec!["stat", "--compat", "--json"],
        vec!["stat", "-z"],
        vec!["--sysroot", "/nonexistent-root", "stat"],
    ] {
        let o = numakit(&args, &[]);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {o:?}");
        assert_eq!(String::from_utf8_lossy(&o.stderr).trim().lines().count().min(1), 1);
    }
}
