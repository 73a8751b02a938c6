//! `numakit tune` end to end: the real binary on fake roots (`--sysroot`
//! temp folders holding the knob files of a Linux 6.x machine), so every
//! write lands in a temp folder; plus read-only runs on this machine
//! (`tune show`, `tune check`) and the root check on the live system.
//!
//! Covered: show (text, JSON), set/apply/revert, the state file, dry runs,
//! invalid values refused with nothing written, `kill -9` between two
//! writes then revert, apply twice then revert to the first originals, a
//! failing write rolled back, user profiles, baselines.

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_numakit");

/// Writes `content` below `root`, creating folders.
fn put(root: &Path, rel: &str, content: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
    std::fs::write(p, content).expect("write");
}

fn get(root: &Path, rel: &str) -> String {
    std::fs::read_to_string(root.join(rel)).expect("read").trim().to_string()
}

const NB: &str = "proc/sys/kernel/numa_balancing";
const ZR: &str = "proc/sys/vm/zone_reclaim_mode";
const THP: &str = "sys/kernel/mm/transparent_hugepage/enabled";
const KHP: &str = "sys/kernel/mm/transparent_hugepage/khugepaged/scan_sleep_millisecs";
const STATE: &str = "var/lib/numakit/tune-state.json";

/// A fake root with the knobs of a 2-node Linux 6.12 machine.
fn fake_root() -> tempfile::TempDir {
    let d = tempfile::tempdir().expect("tempdir");
    for (rel, v) in [
        ("sys/devices/system/cpu/online", "0-1"),
        ("sys/devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages", "0"),
        ("proc/sys/kernel/osrelease", "6.12.0-test"),
        ("proc/sys/kernel/hostname", "fake"),
        (NB, "1"),
        (ZR, "0"),
        ("proc/sys/vm/numa_stat", "1"),
        ("sys/kernel/debug/sched/numa_balancing/scan_delay_ms", "1000"),
        ("sys/kernel/debug/sched/numa_balancing/scan_period_min_ms", "1000"),
        ("sys/kernel/debug/sched/numa_balancing/scan_period_max_ms", "60000"),
        (THP, "always [madvise] never"),
        ("sys/kernel/mm/transparent_hugepage/defrag", "always defer defer+madvise [madvise] never"),
        (KHP, "10000"),
        ("sys/kernel/mm/mempolicy/weighted_interleave/node0", "1"),
        ("sys/kernel/mm/mempolicy/weighted_interleave/node1", "1"),
        ("sys/kernel/mm/mempolicy/weighted_interleave/auto", "true"),
    ] {
        put(d.path(), rel, &format!("{v}\n"));
    }
    d
}

fn cmd(root: Option<&Path>, args: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    if let Some(r) = root {
        c.arg("--sysroot").arg(r);
    }
    c.arg("tune").args(args);
    for v in ["NUMAKIT_SYSROOT", "NUMAKIT_TUNE_STATE", "NUMAKIT_PROFILES_DIR", "NUMAKIT_TUNE_PAUSE_AFTER_WRITE"] {
        c.env_remove(v);
    }
    c
}

fn run(root: &Path, args: &[&str]) -> Output {
    cmd(Some(root), args).output().expect("numakit runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[track_caller]
fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "status {:?}\nstdout: {}\nstderr: {}",
        out.status,
        text(&out.stdout),
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// Asserts exit `code` and a one-line stderr containing `want`.
#[track_caller]
fn fails(out: &Output, code: i32, want: &str) {
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "stderr: {err}");
    assert!(err.contains(want), "want {want:?} in: {err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
}

/// Every tune subcommand's arguments are well formed (clap checks them when
/// `--help` is built).
#[test]
fn help_of_every_subcommand() {
    for sub in ["show", "set", "apply", "revert", "profiles", "check"] {
        let out = Command::new(BIN).args(["tune", sub, "--help"]).output().expect("runs");
        assert!(out.status.success(), "{sub}: {}", text(&out.stderr));
    }
}

#[test]
fn show_on_a_fake_root() {
    let d = fake_root();
    let out = ok(&run(d.path(), &["show"]));
    assert!(out.contains("kernel.numa_balancing = 1  (default 1, accepts 0-3)"), "{out}");
    assert!(out.contains("kernel/mm/transparent_hugepage/enabled = madvise"), "{out}");
    assert!(out.contains("kernel.numa_balancing_hot_threshold_ms: unavailable: not in this kernel"), "{out}");
    let v: Value = serde_json::from_str(&ok(&run(d.path(), &["show", "--json"]))).expect("json");
    assert_eq!(v["schema_version"], 1);
    for k in v["knobs"].as_array().expect("knobs") {
        assert!(k["name"].is_string() && k["doc"].is_string() && k["default"].is_string(), "{k}");
        assert_eq!(k["available"].as_bool(), Some(k["value"].is_string()), "{k}");
        assert!(k["value"].is_string() != k["unavailable"].is_string(), "a value or a reason: {k}");
    }
}

/// `tune show` and `tune check` read this machine (whatever it is) and succeed.
#[test]
fn show_and_check_on_this_machine() {
    let out = cmd(None, &["show", "--json"]).output().expect("runs");
    let v: Value = serde_json::from_str(&ok(&out)).expect("json");
    let knobs = v["knobs"].as_array().expect("knobs");
    assert!(knobs.len() >= 15, "{}", knobs.len());
    assert!(knobs.iter().all(|k| k["value"].is_string() || k["unavailable"].is_string()));
    let text_out = ok(&cmd(None, &["show"]).output().expect("runs"));
    assert!(text_out.starts_with("kernel.numa_balancing"), "{text_out}");
    let v: Value = serde_json::from_str(&ok(&cmd(None, &["check", "--json"]).output().expect("runs"))).expect("json");
    let keys: Vec<&str> =
        v["findings"].as_array().expect("findings").iter().filter_map(|f| f["key"].as_str()).collect();
    for k in
        ["smt.control", "cpufreq.governor", "turbo", "cstates.offered", "autonuma", "thp.enabled", "daemon.irqbalance"]
    {
        assert!(keys.contains(&k), "{k} in {keys:?}");
    }
}

/// `tune check` judges the folders batch jobs share: the ledger (root's,
/// 1777) and an outcomes folder (root's, sticky where others write).
#[test]
fn check_says_when_a_shared_folder_is_unsafe() {
    use std::os::unix::fs::PermissionsExt;
    let d = tempfile::tempdir().expect("tmp");
    let (good, open, closed) = (d.path().join("good"), d.path().join("open"), d.path().join("closed"));
    for (p, mode) in [(&good, 0o1777), (&open, 0o777), (&closed, 0o755)] {
        std::fs::create_dir(p).expect("dir");
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).expect("chmod");
    }
    let finding = |ledger: &Path, outcomes: &Path| {
        let args = [
            "check",
            "--json",
            "--ledger",
            ledger.to_str().expect("utf8"),
            "--outcomes",
            outcomes.to_str().expect("utf8"),
        ];
        let v: Value = serde_json::from_str(&ok(&cmd(None, &args).output().expect("runs"))).expect("json");
        let get = |key: &str| {
            v["findings"].as_array().expect("findings").iter().find(|f| f["key"] == key).cloned().expect(key)
        };
        (get("folder.ledger"), get("folder.outcomes"))
    };
    let (l, o) = finding(&good, &closed);
    assert_eq!((l["level"].as_str(), o["level"].as_str()), (Some("ok"), Some("ok")), "{l} {o}");
    let (l, o) = finding(&open, &open);
    assert_eq!((l["level"].as_str(), o["level"].as_str()), (Some("warn"), Some("warn")), "{l} {o}");
    assert!(l["advice"].as_str().expect("advice").contains("writable by other users but not sticky"), "{l}");
    let (l, _) = finding(&closed, &good);
    assert!(l["advice"].as_str().expect("advice").contains("other users' jobs cannot write in it"), "{l}");
}

#[test]
fn set_then_revert_restores_and_removes_the_state_file() {
    let d = fake_root();
    let out = ok(&run(d.path(), &["set", "autonuma=0", "thp=never", "vm.zone_reclaim_mode=0"]));
    assert!(out.contains("kernel.numa_balancing: 1 -> 0"), "{out}");
    assert!(out.contains("vm.zone_reclaim_mode: already 0"), "{out}");
    assert!(out.contains(&format!("previous values saved in {}", d.path().join(STATE).display())), "{out}");
    assert_eq!((get(d.path(), NB).as_str(), get(d.path(), THP).as_str()), ("0", "never"));
    let state: Value = serde_json::from_str(&get(d.path(), STATE)).expect("state json");
    assert_eq!(state["format"], "numakit-tune-state");
    assert_eq!(state["root"], d.path().display().to_string());
    let originals: Vec<(&str, &str)> = state["originals"]
        .as_array()
        .expect("originals")
        .iter()
        .map(|o| (o["knob"].as_str().unwrap_or(""), o["value"].as_str().unwrap_or("")))
        .collect();
    assert_eq!(originals, vec![("kernel.numa_balancing", "1"), ("kernel/mm/transparent_hugepage/enabled", "madvise")]);
    // show marks what numakit changed
    assert!(ok(&run(d.path(), &["show"]))
        .contains("kernel.numa_balancing = 0  (default 1, accepts 0-3; changed by numakit, original 1)"));

    let out = ok(&run(d.path(), &["revert", "--dry-run"]));
    assert!(out.contains("would write 1 to ") && out.contains("dry run: nothing written"), "{out}");
    assert_eq!(get(d.path(), NB), "0");
    let out = ok(&run(d.path(), &["revert"]));
    assert!(out.contains("kernel.numa_balancing: 0 -> 1 (original)"), "{out}");
    assert_eq!((get(d.path(), NB).as_str(), get(d.path(), THP).as_str()), ("1", "madvise"));
    assert!(!d.path().join(STATE).exists());
    assert!(ok(&run(d.path(), &["revert"])).starts_with("nothing to revert"));
}

#[test]
fn invalid_or_unknown_values_are_refused_with_nothing_written() {
    let d = fake_root();
    let cases: &[(&[&str], i32, &str)] = &[
        (
            &["set", "vm.zone_reclaim_mode=1", "kernel.numa_balancing=7"],
            2,
            "numakit: kernel.numa_balancing=7: must be an integer from 0 to 3",
        ),
        (&["set", "zone_reclaim_mode=1", "thp=sometimes"], 2, "=sometimes: must be one of always, madvise, never"),
        (&["set", "zone_reclaim_mode=1", "wi.node1=256"], 2, "node1=256: must be an integer from 1 to 255"),
        (&["set", "zone_reclaim_mode=1", "khugepaged.scan_sleep_millisecs=-5"], 2, "must be a whole number"),
        (&["set", "zone_reclaim_mode=1", "kernel.nonsense=1"], 2, "unknown knob \"kernel.nonsense\""),
        (&["set", "zone_reclaim_mode"], 2, "expected KNOB=VALUE"),
        (&["set", "zone_reclaim_mode=1", "promote_rate_limit=10"], 1, "unavailable: not in this kernel"),
        (&["apply", "no-such-profile"], 2, "no such profile"),
    ];
    for (args, code, want) in cases {
        fails(&run(d.path(), args), *code, want);
        assert_eq!(get(d.path(), ZR), "0", "{args:?}");
        assert!(!d.path().join(STATE).exists(), "{args:?}: no state file");
    }
}

#[test]
fn dry_run_prints_the_writes_only() {
    let d = fake_root();
    let out = ok(&run(d.path(), &["apply", "latency", "--dry-run"]));
    let want = format!("would write 0 to {} (kernel.numa_balancing, now 1)", d.path().join(NB).display());
    assert!(out.contains(&want), "{out}");
    assert!(out.contains("vm.zone_reclaim_mode: already 0") && out.contains("dry run: nothing written"), "{out}");
    assert_eq!(get(d.path(), NB), "1");
    assert!(!d.path().join("var").exists(), "no state folder, no lock file");
}

/// Spawns `numakit tune ARGS` with the pause hook and waits until it has
/// paused after write `n`. Returns the child and its further stderr lines.
fn spawn_paused(root: &Path, args: &[&str], n: u32, secs: u32) -> (std::process::Child, mpsc::Receiver<String>) {
    let mut c = cmd(Some(root), args);
    c.env("NUMAKIT_TUNE_PAUSE_AFTER_WRITE", n.to_string()).env("NUMAKIT_TUNE_PAUSE_SECS", secs.to_string());
    let mut child = c.stdout(Stdio::null()).stderr(Stdio::piped()).spawn().expect("spawn");
    let stderr = child.stderr.take().expect("stderr");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let want = format!("paused after write {n} ");
    loop {
        match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(line) if line.contains(&want) => return (child, rx),
            Ok(_) => {}
            Err(e) => {
                let _ = child.kill();
                panic!("numakit never paused after write {n}: {e}");
            }
        }
    }
}

#[test]
fn kill_9_between_two_writes_then_revert_restores_everything() {
    let d = fake_root();
    let (mut child, _) = spawn_paused(d.path(), &["set", "autonuma=0", "zone_reclaim_mode=3", "thp=never"], 1, 600);
    child.kill().expect("SIGKILL"); // std's kill is SIGKILL
    let status = child.wait().expect("wait");
    assert_eq!(std::os::unix::process::ExitStatusExt::signal(&status), Some(libc::SIGKILL));
    assert_eq!(get(d.path(), NB), "0", "first write made");
    assert_eq!((get(d.path(), ZR).as_str(), get(d.path(), THP).as_str()), ("0", "always [madvise] never"));
    let state: Value = serde_json::from_str(&get(d.path(), STATE)).expect("state");
    assert_eq!(state["originals"].as_array().map(Vec::len), Some(3), "all originals saved before write 1: {state}");

    let out = ok(&run(d.path(), &["revert"]));
    assert!(out.contains("kernel.numa_balancing: 0 -> 1 (original)"), "{out}");
    assert!(out.contains("vm.zone_reclaim_mode: already at its original value"), "{out}");
    assert_eq!((get(d.path(), NB).as_str(), get(d.path(), ZR).as_str()), ("1", "0"));
    assert_eq!(get(d.path(), THP), "always [madvise] never", "never written, so never touched");
    assert!(!d.path().join(STATE).exists());
}

/// kill -9 after every write of a three-knob set, and again in a second
/// run on top of the first: each time `revert` brings back every original
/// and leaves no state file and no temporary file behind.
#[test]
fn kill_9_at_every_write_then_revert_loses_nothing() {
    let mut tried = 0;
    for first in 1..=3 {
        for second in 0..=2 {
            let d = fake_root();
            let (mut child, _) =
                spawn_paused(d.path(), &["set", "autonuma=0", "zone_reclaim_mode=3", "thp=never"], first, 600);
            child.kill().expect("SIGKILL");
            child.wait().expect("wait");
            if second > 0 {
                let (mut again, _) = spawn_paused(
                    d.path(),
                    &["set", "zone_reclaim_mode=1", "khugepaged.scan_sleep_millisecs=5"],
                    second,
                    600,
                );
                again.kill().expect("SIGKILL");
                again.wait().expect("wait");
            }
            ok(&run(d.path(), &["revert"]));
            tried += 1;
            let at = format!("killed after write {first}, then {second}");
            assert_eq!(get(d.path(), NB), "1", "{at}");
            assert_eq!(get(d.path(), ZR), "0", "{at}");
            // Untouched, or written back (a fake root's file holds what was
            // written; the kernel's shows the choice in brackets).
            let thp = get(d.path(), THP);
            assert!(thp == "madvise" || thp == "always [madvise] never", "{at}: {thp}");
            assert_eq!(get(d.path(), KHP), "10000", "{at}");
            assert!(!d.path().join(STATE).exists(), "{at}: state file left");
            let dir = d.path().join(STATE).parent().map(Path::to_path_buf).expect("folder");
            let left: Vec<String> = std::fs::read_dir(&dir)
                .map(|r| r.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
                .unwrap_or_default();
            assert!(left.iter().all(|n| !n.contains(".tmp.")), "{at}: {left:?}");
        }
    }
    eprintln!("HOSTILE|tune|kill -9 after each write of one run, and of a second run on top, then revert|{tried}|0");
}

#[test]
fn apply_twice_then_revert_goes_back_to_the_first_originals() {
    let d = fake_root();
    ok(&run(d.path(), &["apply", "hep-farm"]));
    assert_eq!(get(d.path(), KHP), "100");
    ok(&run(d.path(), &["set", "khugepaged.scan_sleep_millisecs=200", "autonuma=0"]));
    ok(&run(d.path(), &["apply", "throughput"]));
    assert_eq!((get(d.path(), KHP).as_str(), get(d.path(), NB).as_str()), ("200", "1"));
    let state: Value = serde_json::from_str(&get(d.path(), STATE)).expect("state");
    assert_eq!(state["history"].as_array().map(Vec::len), Some(3), "{state}");
    ok(&run(d.path(), &["revert"]));
    assert_eq!((get(d.path(), KHP).as_str(), get(d.path(), NB).as_str()), ("10000", "1"));
    assert!(!d.path().join(STATE).exists());
}

#[test]
fn a_failing_write_is_rolled_back() {
    let d = fake_root();
    // pause 2 s after the second write, and meanwhile turn the THP file (third) into a folder
    let (mut child, rest) = spawn_paused(d.path(), &["set", "autonuma=0", "zone_reclaim_mode=1", "thp=never"], 2, 2);
    std::fs::remove_file(d.path().join(THP)).expect("rm");
    std::fs::create_dir(d.path().join(THP)).expect("mkdir");
    let status = child.wait().expect("wait");
    assert_eq!(status.code(), Some(1));
    let err: Vec<String> = rest.iter().collect(); // ends when numakit closes stderr
    let err = err.join("\n");
    let last = err.lines().last().unwrap_or("");
    assert!(last.starts_with("numakit: kernel/mm/transparent_hugepage/enabled: cannot write never to "), "{err}");
    assert!(last.contains("open: Is a directory"), "{err}");
    assert!(last.ends_with("rolled back vm.zone_reclaim_mode, kernel.numa_balancing"), "{err}");
    assert_eq!((get(d.path(), NB).as_str(), get(d.path(), ZR).as_str()), ("1", "0"));
    assert!(!d.path().join(STATE).exists(), "no state file: it was not there before");
}

#[test]
fn user_profiles_from_a_folder() {
    let d = fake_root();
    let dir = d.path().join("profiles");
    put(
        &dir,
        "db.toml",
        "description = \"db\"\nsource = \"ours\"\n[settings]\n\"kernel.numa_balancing\" = 0\nthp = \"never\"\n",
    );
    put(&dir, "broken.toml", "[settings]\nautonuma = 5\n");
    let dir_s = dir.display().to_string();
    ok(&run(d.path(), &["apply", "db", "--profiles-dir", &dir_s]));
    assert_eq!((get(d.path(), NB).as_str(), get(d.path(), THP).as_str()), ("0", "never"));
    ok(&run(d.path(), &["revert"]));
    // NUMAKIT_PROFILES_DIR, and the default folder below the root
    let out =
        cmd(Some(d.path()), &["apply", "db", "--dry-run"]).env("NUMAKIT_PROFILES_DIR", &dir).output().expect("runs");
    assert!(ok(&out).contains("would write never"));
    put(d.path(), "etc/numakit/profiles.d/mine.toml", "[settings]\nzone_reclaim_mode = 1\n");
    assert!(ok(&run(d.path(), &["apply", "mine", "--dry-run"])).contains("would write 1"));
    fails(
        &run(d.path(), &["apply", "broken", "--profiles-dir", &dir_s]),
        2,
        "autonuma=5: must be an integer from 0 to 3",
    );
    let out = run(d.path(), &["profiles", "--profiles-dir", &dir_s]);
    assert_eq!(out.status.code(), Some(2), "a broken file is reported");
    let listing = text(&out.stdout);
    for want in
        ["hep-farm (built-in)", "bound-workloads (built-in)", "throughput (built-in)", "latency (built-in)", "db ("]
    {
        assert!(listing.contains(want), "{want}: {listing}");
    }
    assert!(listing.contains("HEPSPEC06 +1.4%"), "{listing}");
}

#[test]
fn state_file_from_flag_and_env() {
    let d = fake_root();
    let st = d.path().join("elsewhere/st.json");
    ok(&run(d.path(), &["set", "autonuma=0", "--state", &st.display().to_string()]));
    assert!(st.exists() && !d.path().join(STATE).exists());
    let out = cmd(Some(d.path()), &["revert"]).env("NUMAKIT_TUNE_STATE", &st).output().expect("runs");
    ok(&out);
    assert_eq!(get(d.path(), NB), "1");
    assert!(!st.exists());
    // a corrupt state file stops an apply before anything is written
    put(d.path(), STATE, "{ broken");
    fails(&run(d.path(), &["set", "autonuma=0"]), 1, "not a numakit state file");
    assert_eq!(get(d.path(), NB), "1");
}

/// Without root, changing the live system is refused before anything is
/// touched. The knob is "set" to its current value, so even a broken check
/// would change nothing.
#[test]
fn live_system_needs_root() {
    let Some(current) = std::fs::read_to_string("/proc/sys/kernel/numa_balancing").ok() else {
        eprintln!("SKIPPED: no /proc/sys/kernel/numa_balancing here");
        return;
    };
    let setting = format!("kernel.numa_balancing={}", current.trim());
    let mut c = cmd(None, &["set", &setting, "--state", "/nonexistent/numakit-test-state.json"]);
    // SAFETY: geteuid has no arguments and cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        use std::os::unix::process::CommandExt as _;
        c.uid(65534).gid(65534);
    }
    let out = c.output().expect("runs");
    fails(&out, 1, "numakit tune set changes kernel settings and needs root (effective user id");
    assert!(text(&out.stderr).contains("nothing was changed"));
    assert!(!PathBuf::from("/nonexistent").exists());
}

#[test]
fn check_baseline_and_differences() {
    let d = fake_root();
    let base = d.path().join("base.json");
    let base_s = base.display().to_string();
    let out = run(d.path(), &["check", "--save-baseline", &base_s]);
    assert!(ok(&out).contains("autonuma"), "{}", text(&out.stdout));
    let saved: Value = serde_json::from_str(&get(d.path(), "base.json")).expect("baseline");
    assert_eq!(saved["format"], "numakit-tune-baseline");
    assert_eq!(saved["host"], "fake");
    assert_eq!(saved["facts"]["autonuma"], "1");
    assert!(ok(&run(d.path(), &["check", "--against", &base_s])).contains("same as baseline"));

    put(d.path(), NB, "0\n");
    put(d.path(), "proc/77/comm", "numad\n");
    let out = run(d.path(), &["check", "--against", &base_s]);
    assert_eq!(out.status.code(), Some(1), "differences exit 1");
    let t = text(&out.stdout);
    assert!(t.contains("2 differences from baseline"), "{t}");
    assert!(t.contains("  autonuma: baseline 1, here 0"), "{t}");
    assert!(t.contains("  daemon.numad: baseline not running, here running"), "{t}");
    assert!(t.contains("warn  daemon.numad"), "{t}");
    let v: Value =
        serde_json::from_str(&text(&run(d.path(), &["check", "--against", &base_s, "--json"]).stdout)).expect("json");
    assert_eq!(v["baseline"]["differences"].as_array().map(Vec::len), Some(2));
    fails(
        &run(d.path(), &["check", "--against", "/nonexistent/base.json"]),
        1,
        "baseline /nonexistent/base.json: no such file",
    );
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The example profiles in contrib/profiles load, and each applies (dry run) on a fake root.
#[test]
fn contrib_profiles_are_valid() {
    let dir = repo().join("contrib/profiles");
    let dir_s = dir.display().to_string();
    let d = fake_root();
    put(d.path(), "sys/kernel/mm/numa/demotion_enabled", "false\n");
    let listing = ok(&run(d.path(), &["profiles", "--profiles-dir", &dir_s]));
    let mut n = 0;
    for f in std::fs::read_dir(&dir).expect("contrib/profiles").map(|e| e.expect("entry").path()) {
        let name = f.file_stem().expect("stem").to_string_lossy().into_owned();
        assert!(listing.contains(&format!("{name} ({})", f.display())), "{name}: {listing}");
        ok(&run(d.path(), &["apply", &name, "--dry-run", "--profiles-dir", &dir_s]));
        n += 1;
    }
    assert!(n >= 3, "{n} profiles");
}

/// docs/tune.md documents every knob of the catalogue and every built-in profile.
#[test]
fn docs_name_every_knob_and_profile() {
    let doc = std::fs::read_to_string(repo().join("docs/tune.md")).expect("docs/tune.md");
    let d = fake_root();
    let v: Value = serde_json::from_str(&ok(&run(d.path(), &["show", "--json"]))).expect("json");
    for k in v["knobs"].as_array().expect("knobs") {
        let name = k["name"].as_str().expect("name");
        let name = match name.rsplit_once("/node") {
            Some((base, _)) => format!("{base}/nodeN"),
            None => name.to_string(),
        };
        assert!(doc.contains(&format!("| `{name}` |")), "docs/tune.md has no row for {name}");
    }
    let v: Value = serde_json::from_str(&ok(&run(d.path(), &["profiles", "--json"]))).expect("json");
    for p in v["profiles"].as_array().expect("profiles") {
        let name = p["name"].as_str().expect("name");
        assert!(doc.contains(&format!("| `{name}` |")), "docs/tune.md has no row for profile {name}");
    }
}
