//! `numakit stat --cgroup PATH`: a Slurm job's report on a synthetic root
//! (cgroup v2 tree with steps and tasks, `/proc/PID` files), the JSON line
//! and `--since`, errors naming the value as typed, and this host's own
//! cgroup.

mod common;

use std::process::{Command, Output};

use common::{fake_slurm_root as fake, write};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_numakit");
const JOB: &str = common::SLURM_JOB_FOLDER;
const PATH: &str = "/system.slice/slurmstepd.scope/job_42";

fn numakit(args: &[&str]) -> Output {
    Command::new(BIN).args(args).env_remove("NUMAKIT_SYSROOT").output().expect("run numakit")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn a_slurm_job_as_text_and_one_json_line() {
    let d = tempfile::tempdir().expect("tmp");
    fake(d.path(), 7);
    let root = d.path().to_string_lossy().to_string();
    let o = numakit(&["--sysroot", &root, "stat", "--cgroup", PATH]);
    let out = text(&o.stdout);
    assert!(o.status.success() && o.stderr.is_empty(), "{out}{}", text(&o.stderr));
    for want in [
        "cgroup /system.slice/slurmstepd.scope/job_42 (Slurm job 42)\n",
        "  2 processes in 3 cgroup folders\n",
        "locality 66.7%: 800 KiB of 1.2 MiB own memory",
        "numa_pages_migrated",
        "not counted per cgroup by Linux: numa_hit, numa_miss, other_node",
    ] {
        assert!(out.contains(want), "missing {want:?} in\n{out}");
    }

    let o = numakit(&["--sysroot", &root, "stat", "--cgroup", PATH, "--json"]);
    let line = text(&o.stdout);
    assert!(o.status.success() && line.lines().count() == 1, "{line}{}", text(&o.stderr));
    let v: Value = serde_json::from_str(&line).expect("json");
    assert_eq!((v["schema"].as_str(), v["job_id"].as_u64()), (Some("numakit-cgroup-report/1"), Some(42)));
    assert_eq!((v["processes"].as_u64(), v["own_bytes"].as_u64()), (Some(2), Some(300 * 4096)));
    assert_eq!(v["nodes"][0]["bytes"].as_u64(), Some(200 * 4096));
    assert_eq!(v["nodes"][1]["charged_file_bytes"].as_u64(), Some(204800));
    assert_eq!(v["counters"]["numa_pages_migrated"].as_u64(), Some(7));
    assert!(v["counters"]["numa_hit"].is_null() && v["counters"]["pgpromote_success"].is_null());

    // At step end: the counters' growth since the start snapshot.
    let start = d.path().join("start.json");
    std::fs::write(&start, &line).expect("save");
    fake(d.path(), 19);
    let s = start.to_string_lossy().to_string();
    let o = numakit(&["--sysroot", &root, "stat", "--cgroup", PATH, "--json", "--since", &s]);
    let v: Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["delta"], serde_json::json!({ "numa_pages_migrated": 12, "numa_hint_faults": 0 }));
    let o = numakit(&["--sysroot", &root, "stat", "--cgroup", PATH, "--since", &s]);
    assert!(text(&o.stdout).contains("19  (+12 since start)"), "{}", text(&o.stdout));
}

#[test]
fn bad_paths_and_files_are_one_line_naming_them() {
    let d = tempfile::tempdir().expect("tmp");
    fake(d.path(), 0);
    let root = d.path().to_string_lossy().to_string();
    let notes = d.path().join("notes.txt");
    std::fs::write(&notes, "hello").expect("write");
    let other = d.path().join("other.json");
    std::fs::write(&other, r#"{"schema":"numakit-cgroup-report/1","cgroup":"/elsewhere","counters":{}}"#).expect("w");
    for (args, code, want) in [
        (
            vec!["stat", "--cgroup", "/system.slice/nope"],
            2,
            "no such cgroup \"/system.slice/nope\": no /sys/fs/cgroup/system.slice/nope/cgroup.procs",
        ),
        (vec!["stat", "--cgroup", "job_42"], 2, "invalid cgroup \"job_42\": give a path starting with /"),
        (vec!["stat", "--cgroup", "/a/../b"], 2, "invalid cgroup \"/a/../b\""),
        (vec!["stat", "--cgroup", PATH, "--since", &notes.to_string_lossy()], 2, "notes.txt is not JSON"),
        (
            vec!["stat", "--cgroup", PATH, "--since", &other.to_string_lossy()],
            2,
            "is the report of cgroup \"/elsewhere\"",
        ),
        (vec!["stat", "--cgroup", PATH, "--interval", "1"], 2, "cannot be used with"),
    ] {
        let mut a = vec!["--sysroot", root.as_str()];
        a.extend(args.iter().copied());
        let o = numakit(&a);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(code), "{args:?}: {err}");
        assert!(err.contains(want) && err.lines().count() == 1 && o.stdout.is_empty(), "{args:?}: {err}");
    }
    // A hostile kernel file: a system error (exit 1) naming it, one line.
    write(d.path(), &format!("{JOB}/memory.numa_stat"), "anon N0=\u{1b}[2J\n");
    let o = numakit(&["--sysroot", &root, "stat", "--cgroup", PATH]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("memory.numa_stat") && err.lines().count() == 1 && !err.contains('\u{1b}'), "{err}");
}

#[test]
fn this_hosts_own_cgroup() {
    let own = std::fs::read_to_string("/proc/self/cgroup").expect("cgroup");
    let Some(path) = own.lines().find_map(|l| l.strip_prefix("0::")) else {
        eprintln!("SKIPPED: no cgroup v2 line in /proc/self/cgroup");
        return;
    };
    let o = numakit(&["stat", "--cgroup", path, "--json"]);
    if o.status.code() == Some(2) && text(&o.stderr).contains("no such cgroup") {
        eprintln!("SKIPPED: cgroup2 not mounted where numakit looks: {}", text(&o.stderr));
        return;
    }
    assert!(o.status.success(), "{}", text(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["cgroup"].as_str(), Some(path.trim_end_matches('/')).filter(|p| !p.is_empty()).or(Some("/")));
    // numakit itself is in its cgroup while it reads it; a denied process
    // is counted, not fatal.
    assert!(v["processes"].as_u64().unwrap_or(0) + v["unreadable"].as_u64().unwrap_or(0) >= 1, "{v}");
    let sum: u64 = v["nodes"].as_array().expect("nodes").iter().map(|n| n["bytes"].as_u64().unwrap_or(0)).sum();
    assert_eq!(v["total_bytes"].as_u64(), Some(sum));
    assert!(v["own_local_bytes"].as_u64() <= v["own_bytes"].as_u64());
}

/// A GPU job's report says which GPU its environment names (CUDA's UUID
/// here) and how much of its memory sits next to it: process 20's GPU is
/// on node 1, and 100 of the job's 300 pages are there.
#[test]
fn a_gpu_jobs_devices_and_its_memory_next_to_them() {
    use numakit::topo::synth::{write_devices, SynthDevice, SynthDeviceKind};
    let d = tempfile::tempdir().expect("tmp");
    fake(d.path(), 7);
    write_devices(
        d.path(),
        &[SynthDevice {
            address: "0000:41:00.0".into(),
            node: Some(1),
            kind: SynthDeviceKind::NvidiaGpu {
                minor: 0,
                model: "NVIDIA H100".into(),
                uuid: "GPU-12345678-0000-0000-0000-000000000000".into(),
                memory_node: None,
            },
        }],
    )
    .expect("devices");
    write(d.path(), "proc/20/environ", "HOME=/home/u\0CUDA_VISIBLE_DEVICES=GPU-12345678\0");
    let root = d.path().to_string_lossy().to_string();
    let o = numakit(&["--sysroot", &root, "stat", "--cgroup", PATH]);
    let out = text(&o.stdout);
    assert!(o.status.success(), "{out}{}", text(&o.stderr));
    assert!(
        out.ends_with(
            "  devices (CUDA_VISIBLE_DEVICES=GPU-12345678):\n    GPU-12345678 0000:41:00.0 NVIDIA H100, node 1\n    \
             memory next to them (node 1): 400 KiB of 1.2 MiB, 33.3%\n"
        ),
        "{out}"
    );
    let o = numakit(&["--sysroot", &root, "stat", "--cgroup", PATH, "--json"]);
    let v: Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["devices"]["devices"][0]["node"].as_u64(), Some(1), "{v}");
    assert_eq!(v["devices"]["near_bytes"].as_u64(), Some(100 * 4096), "{v}");
    // Without devices in any environment: no devices key, no lines.
    std::fs::remove_file(d.path().join("proc/20/environ")).expect("rm");
    let o = numakit(&["--sysroot", &root, "stat", "--cgroup", PATH, "--json"]);
    let v: Value = serde_json::from_slice(&o.stdout).expect("json");
    assert!(v.get("devices").is_none(), "{v}");
}
