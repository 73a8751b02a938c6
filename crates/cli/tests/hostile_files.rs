//! Hostile input, second round: the files a user names (a FIFO, /dev/zero,
//! a sparse terabyte, a folder where a JSON or TOML file is expected),
//! writes below a `--sysroot` through links that lead elsewhere, a dump's
//! links that lead out of it, `compare`'s counts, output, values and
//! signals, and messages quoting outside text. Every run has its own time
//! bound (a hang is killed and fails the test) and its memory is measured
//! (`wait4`'s peak resident size) and capped (`RLIMIT_AS`), so none of
//! these cases can hang CI or eat the machine. The counts it prints
//! (`HOSTILE|...`) are rows of the table in docs/hostile-input.md.

mod common;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const NK: &str = env!("CARGO_BIN_EXE_numakit");
/// Longer than any of these runs takes (milliseconds), short enough that
/// a hang is found.
const HANG: Duration = Duration::from_secs(10);
/// Peak resident memory allowed to a run: numakit needs tens of MiB; a
/// file read whole, or output kept whole, needs hundreds.
const MEM_KIB: i64 = 160 << 10;
/// Address space allowed (the machine's guard if a case regresses).
const AS_LIMIT: u64 = 4 << 30;

use common::bounded::{Bounds, Run};

/// The bounds of each run here.
const BOUNDS: Bounds = Bounds { hang: HANG, as_limit: AS_LIMIT, stdout_cap: 1 << 20 };

impl Run {
    /// What is wrong with a run expected to end with one of `codes` and,
    /// on stderr, one line holding `says` (when given) without control
    /// characters.
    fn problem(&self, codes: &[i32], says: Option<&str>) -> Option<String> {
        let err = self.err();
        if self.hung {
            return Some(format!("hang (killed after {HANG:?})"));
        }
        if let Some(s) = self.signal {
            return Some(format!("killed by signal {s}: {err:?}"));
        }
        if self.max_rss_kib > MEM_KIB {
            return Some(format!("{} MiB resident", self.max_rss_kib >> 10));
        }
        let code = self.code.unwrap_or(-1);
        if !codes.contains(&code) {
            return Some(format!("exit {code}, not {codes:?}: {err:?}"));
        }
        let body = err.strip_suffix('\n').unwrap_or(&err);
        if body.contains('\n') || body.chars().any(char::is_control) || body.len() > 1200 {
            return Some(format!("not one clean line on stderr: {body:?}"));
        }
        if let Some(s) = says {
            if !body.contains(s) {
                return Some(format!("stderr does not say {s:?}: {body:?}"));
            }
        }
        None
    }
}

/// Runs `c` within [`BOUNDS`].
fn run(c: &mut Command) -> Run {
    common::bounded::run(c, BOUNDS)
}

fn nk() -> Command {
    let mut c = Command::new(NK);
    for v in ["NUMAKIT_SYSROOT", "NUMAKIT_TUNE_STATE", "NUMAKIT_PROFILES_DIR", "NUMAKIT_TUNE_PAUSE_AFTER_WRITE"] {
        c.env_remove(v);
    }
    c
}

fn s(p: &Path) -> String {
    p.to_str().expect("utf-8 path").to_string()
}

fn put(root: &Path, rel: &str, content: &str) {
    common::write(root, rel, content);
}

fn mkfifo(p: &Path) {
    let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).expect("path");
    // SAFETY: mkfifo with a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo {}", p.display());
}

/// Tallies of one surface, printed for scripts/hostile-report.
struct Tally {
    surface: &'static str,
    what: &'static str,
    runs: usize,
    failures: Vec<String>,
}

impl Tally {
    fn new(surface: &'static str, what: &'static str) -> Self {
        Tally { surface, what, runs: 0, failures: Vec::new() }
    }

    fn check(&mut self, case: &str, problem: Option<String>) {
        self.runs += 1;
        if let Some(p) = problem {
            self.failures.push(format!("{case}: {p}"));
        }
    }

    fn finish(self) {
        eprintln!("HOSTILE|{}|{}|{}|{}", self.surface, self.what, self.runs, self.failures.len());
        assert!(
            self.failures.is_empty(),
            "{} of {} failed:\n{}",
            self.failures.len(),
            self.runs,
            self.failures.join("\n")
        );
    }
}

/// A fake root with the tune knobs of a 2-node Linux 6.12 machine.
fn tune_root(d: &Path) {
    for (rel, v) in [
        ("sys/devices/system/cpu/online", "0-1"),
        ("proc/sys/kernel/osrelease", "6.12.0-test"),
        ("proc/sys/kernel/hostname", "fake"),
        ("proc/sys/kernel/random/boot_id", "11111111-2222-3333-4444-555555555555"),
        ("proc/sys/kernel/numa_balancing", "1"),
        ("proc/sys/vm/zone_reclaim_mode", "0"),
        ("proc/sys/vm/numa_stat", "1"),
        ("sys/kernel/mm/transparent_hugepage/enabled", "always [madvise] never"),
    ] {
        put(d, rel, &format!("{v}\n"));
    }
}

/// The hostile kinds of file put where a command expects a file it was
/// given: (name, maker). Each must be refused without a wait, without
/// reading it whole, in one line naming the path.
fn hostile_files(dir: &Path) -> Vec<(&'static str, PathBuf)> {
    let fifo = dir.join("a-fifo.json");
    mkfifo(&fifo);
    let sparse = dir.join("sparse.json");
    std::fs::File::create(&sparse).expect("create").set_len(1 << 40).expect("sparse terabyte");
    let folder = dir.join("folder.json");
    std::fs::create_dir(&folder).expect("mkdir");
    let zero = dir.join("zero.json");
    std::os::unix::fs::symlink("/dev/zero", &zero).expect("link");
    vec![
        ("a FIFO", fifo),
        ("a link to /dev/zero", zero),
        ("a sparse 1 TiB file", sparse),
        ("a folder", folder),
        ("/dev/zero itself", PathBuf::from("/dev/zero")),
    ]
}

#[test]
fn files_a_user_names_are_regular_and_bounded() {
    let d = tempfile::tempdir().expect("tmp");
    let root = d.path().join("root");
    tune_root(&root);
    let slurm = d.path().join("slurm");
    common::fake_slurm_root(&slurm, 3);
    let files = hostile_files(d.path());
    let mut t = Tally::new(
        "files a user names",
        "a FIFO, /dev/zero, a link to it, a sparse 1 TiB file, a folder as the file of tune set --state, tune apply, tune check --against, compare --against and --experiment, stat --since, ctl --config, run --auto's _CONDOR_MACHINE_AD, the exporter's --daemon-status",
    );
    for (kind, f) in &files {
        let fs_ = s(f);
        let mut cases: Vec<(String, Command, Vec<i32>, bool)> = vec![
            (
                "tune set --state".into(),
                {
                    let mut c = nk();
                    c.args(["--sysroot", &s(&root), "tune", "set", "autonuma=0", "--state", &fs_]);
                    c
                },
                vec![1],
                true,
            ),
            (
                "tune apply PROFILE".into(),
                {
                    let mut c = nk();
                    c.args(["--sysroot", &s(&root), "tune", "apply", &fs_, "--dry-run"]);
                    c
                },
                vec![2],
                true,
            ),
            (
                "tune check --against".into(),
                {
                    let mut c = nk();
                    c.args(["--sysroot", &s(&root), "tune", "check", "--against", &fs_]);
                    c
                },
                vec![1],
                true,
            ),
            (
                "compare --against".into(),
                {
                    let mut c = nk();
                    c.args(["compare", "-q", "--against", &fs_, "--", "true"]);
                    c
                },
                vec![1],
                true,
            ),
            (
                "compare --experiment".into(),
                {
                    let mut c = nk();
                    c.args(["compare", "-q", "--experiment", &fs_]);
                    c
                },
                vec![1],
                true,
            ),
            (
                "stat --since".into(),
                {
                    let mut c = nk();
                    c.args([
                        "--sysroot",
                        &s(&slurm),
                        "stat",
                        "--cgroup",
                        "/system.slice/slurmstepd.scope/job_42",
                        "--since",
                        &fs_,
                    ]);
                    c
                },
                vec![2],
                true,
            ),
            (
                "ctl --config".into(),
                {
                    let mut c = nk();
                    c.args(["ctl", "--config", &fs_, "status"]);
                    c
                },
                vec![2],
                true,
            ),
            (
                "run --auto, _CONDOR_MACHINE_AD".into(),
                {
                    let mut c = nk();
                    c.args(["run", "--auto", "--mem", "1M", "--dry-run", "--", "true"]).env("_CONDOR_MACHINE_AD", &fs_);
                    c.env_remove("SLURM_CPUS_PER_TASK").env_remove("LSB_MCPU_HOSTS").env_remove("NCPUS");
                    c
                },
                vec![0, 1, 75],
                false,
            ),
        ];
        if f.starts_with("/dev") {
            // Its lock file would be made beside it, in /dev.
            cases.remove(0);
        }
        for (name, mut c, codes, names_it) in cases {
            let r = run(&mut c);
            let says = names_it.then_some(fs_.as_str());
            t.check(&format!("{name} {kind}"), r.problem(&codes, says));
        }
    }
    // The exporter reads --daemon-status at each scrape: a FIFO there must
    // not stop it answering.
    let (mut exp, addr) = common::spawn_exporter(&["--daemon-status", &s(&files[0].1)]);
    let answered = scrape(&addr);
    let _ = exp.kill();
    let _ = exp.wait();
    t.check("exporter --daemon-status a FIFO", (!answered).then(|| "no answer to /metrics within 5 s".into()));
    t.finish();
}

/// Whether `GET /metrics` is answered 200 within 5 seconds.
fn scrape(addr: &str) -> bool {
    let Ok(mut sock) = std::net::TcpStream::connect(addr) else { return false };
    let _ = sock.set_read_timeout(Some(Duration::from_secs(5)));
    if sock.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").is_err() {
        return false;
    }
    let mut head = [0u8; 12];
    sock.read_exact(&mut head).is_ok() && head.starts_with(b"HTTP/1.1 200")
}

#[test]
fn writes_below_a_root_follow_no_link() {
    let d = tempfile::tempdir().expect("tmp");
    let outside = d.path().join("outside");
    std::fs::create_dir_all(&outside).expect("mkdir");
    let victim = outside.join("victim");
    let mut t = Tally::new(
        "writes below a root",
        "tune set and revert on a root whose knob file, its folder or the state file's folder is a link",
    );
    // (what, how the root is crafted, knob set)
    type Craft = fn(&Path, &Path);
    let crafts: [(&str, Craft, &str); 5] = [
        (
            "knob file linked out (absolute)",
            |r, v| {
                let _ = std::fs::remove_file(r.join("proc/sys/vm/zone_reclaim_mode"));
                std::os::unix::fs::symlink(v, r.join("proc/sys/vm/zone_reclaim_mode")).expect("link");
            },
            "zone_reclaim_mode=1",
        ),
        (
            "knob file linked out (relative ../)",
            |r, v| {
                let _ = std::fs::remove_file(r.join("proc/sys/vm/zone_reclaim_mode"));
                let up = "../".repeat(r.components().count() + 3);
                std::os::unix::fs::symlink(format!("{up}{}", &s(v)[1..]), r.join("proc/sys/vm/zone_reclaim_mode"))
                    .expect("link");
            },
            "zone_reclaim_mode=1",
        ),
        (
            "knob file linked inside the root",
            |r, _| {
                put(r, "etc/other", "0\n");
                let _ = std::fs::remove_file(r.join("proc/sys/vm/zone_reclaim_mode"));
                std::os::unix::fs::symlink("../../../etc/other", r.join("proc/sys/vm/zone_reclaim_mode"))
                    .expect("link");
            },
            "zone_reclaim_mode=1",
        ),
        (
            "knob folder linked out",
            |r, v| {
                let folder = v.parent().expect("outside");
                put(folder, "transparent_hugepage/enabled", "always [madvise] never\n");
                std::fs::remove_dir_all(r.join("sys/kernel/mm")).expect("rm");
                std::fs::create_dir_all(r.join("sys/kernel")).expect("mkdir");
                std::os::unix::fs::symlink(folder, r.join("sys/kernel/mm")).expect("link");
            },
            "thp=never",
        ),
        (
            "state file folder linked out",
            |r, v| {
                std::fs::create_dir_all(r.join("var/lib")).expect("mkdir");
                std::os::unix::fs::symlink(v.parent().expect("outside"), r.join("var/lib/numakit")).expect("link");
            },
            "autonuma=0",
        ),
    ];
    for (i, (what, craft, setting)) in crafts.into_iter().enumerate() {
        let root = d.path().join(format!("root{i}"));
        tune_root(&root);
        std::fs::write(&victim, "precious\n").expect("victim");
        craft(&root, &victim);
        let before_out: Vec<_> = std::fs::read_dir(&outside).expect("ls").flatten().map(|e| e.file_name()).collect();
        let r = run(nk().args(["--sysroot", &s(&root), "tune", "set", setting]));
        let mut problem = r.problem(&[1, 2], None);
        let now_out: Vec<_> = std::fs::read_dir(&outside).expect("ls").flatten().map(|e| e.file_name()).collect();
        if std::fs::read_to_string(&victim).ok().as_deref() != Some("precious\n") {
            problem = Some(format!("the file outside the root was written: {}", r.err()));
        } else if now_out.len() != before_out.len() {
            problem = Some(format!("a file was made outside the root: {now_out:?}"));
        } else if what.contains("inside") && get(&root, "etc/other") != "0" {
            problem = Some("the link inside the root was followed".into());
        }
        t.check(what, problem);
    }
    // revert writes too: a root whose knob file became a link after the
    // set (out of the root: read as missing there; inside it: read, but
    // not written through) is refused, nothing written.
    for (i, inside) in [false, true].into_iter().enumerate() {
        let root = d.path().join(format!("root-revert{i}"));
        tune_root(&root);
        let state = d.path().join(format!("revert-state{i}.json"));
        let set = run(nk().args(["--sysroot", &s(&root), "tune", "set", "zone_reclaim_mode=1", "--state", &s(&state)]));
        t.check("set before the link is made", set.problem(&[0], None));
        std::fs::write(&victim, "precious\n").expect("victim");
        put(&root, "etc/other", "1\n");
        let knob = root.join("proc/sys/vm/zone_reclaim_mode");
        std::fs::remove_file(&knob).expect("rm");
        if inside {
            std::os::unix::fs::symlink("../../../etc/other", &knob).expect("link");
        } else {
            std::os::unix::fs::symlink(&victim, &knob).expect("link");
        }
        let back = run(nk().args(["--sysroot", &s(&root), "tune", "revert", "--state", &s(&state)]));
        let mut problem = back.problem(&[1], inside.then_some("symbolic link"));
        if std::fs::read_to_string(&victim).ok().as_deref() != Some("precious\n") {
            problem = Some(format!("revert wrote the file outside the root: {}", back.err()));
        } else if get(&root, "etc/other") != "1" {
            problem = Some(format!("revert wrote through the link inside the root: {}", back.err()));
        }
        let what = if inside { "inside the root" } else { "out of the root" };
        t.check(&format!("revert through a knob file linked {what}"), problem);
    }
    t.finish();
}

fn get(root: &Path, rel: &str) -> String {
    std::fs::read_to_string(root.join(rel)).unwrap_or_default().trim().to_string()
}

#[test]
fn tune_state_records_absolute_roots_and_refuses_duplicates() {
    let d = tempfile::tempdir().expect("tmp");
    let root = d.path().join("r2");
    tune_root(&root);
    let state = d.path().join("state.json");
    let mut t = Tally::new("tune state file", "a relative --sysroot reverted from another folder; a knob saved twice");
    let set =
        run(nk().current_dir(d.path()).args(["--sysroot", "r2", "tune", "set", "autonuma=0", "--state", &s(&state)]));
    t.check("set with a relative root", set.problem(&[0], None));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&state).unwrap_or_default()).unwrap_or_default();
    let recorded = v["root"].as_str().unwrap_or("").to_string();
    t.check(
        "root recorded",
        (Path::new(&recorded) != std::fs::canonicalize(&root).expect("canon")).then(|| format!("root {recorded:?}")),
    );
    let back = run(nk().current_dir("/").args(["--sysroot", &s(&root), "tune", "revert", "--state", &s(&state)]));
    t.check(
        "revert from another folder",
        back.problem(&[0], None)
            .or_else(|| (get(&root, "proc/sys/kernel/numa_balancing") != "1").then(|| "not reverted".into())),
    );
    // A state file naming a knob twice: refused, nothing written.
    let set = run(nk().args(["--sysroot", &s(&root), "tune", "set", "autonuma=0", "--state", &s(&state)]));
    t.check("set again", set.problem(&[0], None));
    let text = std::fs::read_to_string(&state).unwrap_or_default();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
    let mut twice = v["originals"][0].clone();
    twice["value"] = "0".into();
    if let Some(a) = v["originals"].as_array_mut() {
        a.push(twice);
    }
    std::fs::write(&state, v.to_string()).expect("tamper");
    let back = run(nk().args(["--sysroot", &s(&root), "tune", "revert", "--state", &s(&state)]));
    let mut p = back.problem(&[1], Some("twice: it has been tampered with"));
    if p.is_none() && get(&root, "proc/sys/kernel/numa_balancing") != "0" {
        p = Some("a tampered state file was acted on".into());
    }
    t.check("a knob saved twice", p);
    t.finish();
}

#[test]
fn a_dumps_links_and_files_stay_inside_it() {
    let d = tempfile::tempdir().expect("tmp");
    let root = d.path().join("dump");
    common::fake_slurm_root(&root, 0);
    let secret = d.path().join("secret");
    std::fs::write(&secret, "0-1\n").expect("secret");
    let mut t = Tally::new("dumps", "numastat PATTERN with /proc/PID files made FIFOs, links out, /dev/zero, 1 TiB; sysfs files linked out of the dump");
    // Processes whose status or cmdline is hostile.
    for (pid, file) in [(4242, "status"), (4243, "cmdline"), (4244, "cmdline"), (4245, "status"), (4246, "status")] {
        put(&root, &format!("proc/{pid}/stat"), &common::fake_stat_line(pid, "p", 0));
        put(&root, &format!("proc/{pid}/numa_maps"), "");
        let p = root.join(format!("proc/{pid}/{file}"));
        match pid {
            4242 => mkfifo(&p),
            4243 => std::os::unix::fs::symlink("/dev/zero", &p).expect("link"),
            4244 => std::fs::File::create(&p).expect("f").set_len(1 << 40).expect("sparse"),
            4245 => std::os::unix::fs::symlink(&secret, &p).expect("link"),
            _ => std::os::unix::fs::symlink("../../../../../../../../../../../dev/zero", &p).expect("link"),
        }
    }
    let bin = d.path().join("bin");
    std::fs::create_dir(&bin).expect("mkdir");
    std::os::unix::fs::symlink(NK, bin.join("numastat")).expect("link");
    let r = run(Command::new(bin.join("numastat")).arg("no-such-process").env("NUMAKIT_SYSROOT", &root));
    t.check("numastat PATTERN", r.problem(&[0], None));
    // A node's CPU list linked out of the dump (absolute, and by ../):
    // read inside the dump (missing there), never the host's file.
    for (n, target) in [(0, s(&secret)), (1, format!("{}{}", "../".repeat(20), &s(&secret)[1..]))] {
        let rel = format!("sys/devices/system/node/node{n}/cpulist");
        let _ = std::fs::remove_file(root.join(&rel));
        std::os::unix::fs::symlink(&target, root.join(&rel)).expect("link");
    }
    let linked = run(nk().args(["--sysroot", &s(&root), "topo", "--json"]));
    // The same dump with those files missing: what reading inside it gives.
    for n in 0..2 {
        std::fs::remove_file(root.join(format!("sys/devices/system/node/node{n}/cpulist"))).expect("rm");
    }
    let missing = run(nk().args(["--sysroot", &s(&root), "topo", "--json"]));
    let nodes = |r: &Run| serde_json::from_slice::<serde_json::Value>(&r.stdout).unwrap_or_default()["nodes"].clone();
    let p = linked.problem(&[0, 1], None).or_else(|| {
        (nodes(&linked) != nodes(&missing) || linked.code != missing.code)
            .then(|| format!("read outside the dump: {} vs {}", nodes(&linked), nodes(&missing)))
    });
    t.check("topo with node cpulists linked out", p);
    t.finish();
}

#[test]
fn compare_bounds_counts_output_values_and_ends_its_workload() {
    let d = tempfile::tempdir().expect("tmp");
    let mut t = Tally::new(
        "compare",
        "huge counts, 256 MiB of output, 256 MiB of stderr, NaN/inf/1e400, bytes not UTF-8, SIGTERM/SIGINT",
    );
    let compare = |extra: &[&str], workload: &str| {
        let mut c = nk();
        c.args(["compare", "-q"]).args(extra).args(["--", workload]);
        run(&mut c)
    };
    for (flag, v) in [
        ("--runs", "18446744073709551615"),
        ("--runs", "4294967296"),
        ("--warmup", "18446744073709551615"),
        ("--runs", "0"),
    ] {
        let r = compare(&[flag, v], "true");
        t.check(&format!("{flag} {v}"), r.problem(&[2], Some(v)));
    }
    let exp = d.path().join("exp.toml");
    std::fs::write(&exp, "runs = 4294967296\n[[config]]\nname = \"a\"\n").expect("write");
    let r = compare(&["--experiment", &s(&exp)], "true");
    t.check("runs in the experiment file", r.problem(&[2], Some("--runs 4294967296: at most")));
    let r = compare(&["--copies", "100000"], "true");
    t.check("--copies 100000", r.problem(&[2], Some("--copies \"100000\"")));
    let one = ["--runs", "1", "--warmup", "0"];
    let r = compare(&one, "head -c 256M /dev/zero");
    t.check("256 MiB of output, wall time", r.problem(&[0], None));
    let mut re = one.to_vec();
    re.extend(["--metric-regex", "v=([0-9]+)"]);
    let r = compare(&re, "echo v=7; head -c 256M /dev/zero");
    t.check("256 MiB of output, regex", r.problem(&[0], None));
    let r = compare(&one, "head -c 256M /dev/zero >&2; echo last words >&2; exit 3");
    t.check("256 MiB of stderr, then failure", r.problem(&[1], Some("last words")));
    for v in ["NaN", "inf", "1e400"] {
        let r = compare(&["--runs", "1", "--warmup", "0", "--metric-regex", "v=(\\S+)"], &format!("echo v={v}"));
        t.check(&format!("metric {v}"), r.problem(&[1], Some("not a finite number")));
    }
    let r = compare(
        &["--runs", "1", "--warmup", "0", "--metric-regex", "score: ([0-9]+)", "--json"],
        "printf '\\377\\376 score: 12\\n'",
    );
    let json: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap_or_default();
    let p = r.problem(&[0], None).or_else(|| {
        (json["configs"][0]["samples"] != serde_json::json!([12.0]))
            .then(|| format!("samples {}", json["configs"][0]["samples"]))
    });
    t.check("output not UTF-8", p);
    for sig in [libc::SIGTERM, libc::SIGINT] {
        t.check(&format!("signal {sig} to compare"), ended_with_compare(d.path(), sig));
    }
    t.finish();
}

/// Starts a compare whose workload records its pid and sleeps, sends
/// compare `sig`, and says what is wrong if compare does not end by it or
/// the workload outlives it.
fn ended_with_compare(dir: &Path, sig: libc::c_int) -> Option<String> {
    let pidfile = dir.join(format!("workload-{sig}"));
    let mut c = nk()
        .args(["compare", "-q", "--runs", "1", "--warmup", "0", "--"])
        .arg(format!("echo $$ > {}; exec sleep 60", s(&pidfile)))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("compare");
    let t = Instant::now();
    let mut workload = None;
    while t.elapsed() < HANG && workload.is_none() {
        workload = std::fs::read_to_string(&pidfile).ok().and_then(|p| p.trim().parse::<i32>().ok());
        std::thread::sleep(Duration::from_millis(5));
    }
    let Some(w) = workload else {
        let _ = c.kill();
        let _ = c.wait();
        return Some("the workload never started".into());
    };
    // SAFETY: kill with a pid we started.
    unsafe { libc::kill(c.id() as i32, sig) };
    let t = Instant::now();
    let status = loop {
        if let Ok(Some(st)) = c.try_wait() {
            break Some(st);
        }
        if t.elapsed() > HANG {
            let _ = c.kill();
            let _ = c.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    // The workload is gone once it is no process or a zombie waiting for
    // whoever inherited it.
    let alive = || {
        std::fs::read_to_string(format!("/proc/{w}/stat"))
            .ok()
            .and_then(|st| st.rsplit_once(") ").map(|(_, r)| !r.starts_with('Z')))
            .unwrap_or(false)
    };
    while alive() && t.elapsed() < HANG {
        std::thread::sleep(Duration::from_millis(5));
    }
    let still = alive();
    if still {
        // SAFETY: kill with the pid the workload wrote.
        unsafe { libc::kill(w, libc::SIGKILL) };
    }
    match status.map(|s| std::os::unix::process::ExitStatusExt::signal(&s)) {
        None => Some("compare did not end".into()),
        Some(got) if got != Some(sig) => Some(format!("compare ended by {got:?}, not by signal {sig}")),
        _ if still => Some(format!("the workload {w} outlived compare")),
        _ => None,
    }
}

/// Runs `cmd` (a shell line, `$EVIL` standing for `evil`: no process's
/// command line then holds the name, which numastat would find) on a
/// pseudo-terminal (`script`), returning what it printed there; `None`
/// without `script`.
fn on_terminal(cmd: &str, evil: &str) -> Option<Vec<u8>> {
    let out =
        Command::new("script").args(["-qec", cmd, "/dev/null"]).env("EVIL", evil).stdin(Stdio::null()).output().ok()?;
    Some(out.stdout)
}

#[test]
fn messages_quoting_outside_text_are_one_escaped_line() {
    let d = tempfile::tempdir().expect("tmp");
    let evil = "zz\x1b[31mx\x07\ny";
    let mut t = Tally::new("messages", "names holding ESC, BEL and a newline on a pipe and a terminal; a 5,000-character --cgroup; NUMAKIT_SYSROOT=; a sysroot that is a file or a loop");
    let r = run(nk().args(["run", "--", evil]));
    t.check("run: cannot run NAME", r.problem(&[127], Some("cannot run \"zz\\u{1b}[31mx\\u{7}\\ny\"")));
    // numactl and numastat print such a name as given: byte for byte on a
    // pipe (as the real tools, run beside), escaped on a terminal.
    let ours = run(nk().args(["numactl", "-N", "0", "--", evil]));
    let mut p = (!ours.stderr.starts_with(format!("numactl: execution of `{evil}'").as_bytes()))
        .then(|| format!("pipe: {:?}", ours.err()));
    if let Ok(real) = Command::new("numactl").args(["-N", "0", "--", evil]).output() {
        let first = |b: &[u8]| b.split(|&c| c == b':').take(2).map(<[u8]>::to_vec).collect::<Vec<_>>();
        if first(&real.stderr) != first(&ours.stderr) {
            p = Some(format!("numactl printed {:?}, numakit {:?}", String::from_utf8_lossy(&real.stderr), ours.err()));
        }
    }
    t.check("numactl mode on a pipe", p);
    let bin = d.path().join("bin");
    std::fs::create_dir(&bin).expect("mkdir");
    std::os::unix::fs::symlink(NK, bin.join("numastat")).expect("link");
    let ours = run(Command::new(bin.join("numastat")).arg(evil));
    let line = format!("Found no processes containing pattern: \"{evil}\"\n");
    let mut p = (!ours.stdout.starts_with(line.as_bytes()))
        .then(|| format!("pipe: {:?}", String::from_utf8_lossy(&ours.stdout)));
    if let Ok(real) = Command::new("numastat").arg(evil).output() {
        if !real.stdout.starts_with(line.as_bytes()) {
            p = Some(format!("the real numastat printed {:?}", String::from_utf8_lossy(&real.stdout)));
        }
    }
    t.check("numastat PATTERN on a pipe", p);
    for (what, cmd) in [
        ("numactl mode on a terminal", format!("{NK} numactl -N 0 -- \"$EVIL\"")),
        ("numastat PATTERN on a terminal", format!("{} \"$EVIL\"", s(&bin.join("numastat")))),
    ] {
        let p = match on_terminal(&cmd, evil) {
            None => {
                common::skip_or_fail("script (util-linux) is not installed");
                None
            }
            Some(out) => {
                let text = String::from_utf8_lossy(&out);
                (out.contains(&0x1b) || out.contains(&0x07) || !text.contains("zz\\u{1b}[31mx\\u{7}\\ny"))
                    .then(|| format!("terminal: {text:?}"))
            }
        };
        t.check(what, p);
    }
    let long = format!("/{}", "a".repeat(5000));
    let r = run(nk().args(["stat", "--cgroup", &long]));
    t.check("--cgroup of 5,000 characters", r.problem(&[2], Some("… (5001 characters)")));
    let r = run(nk().args(["topo"]).env("NUMAKIT_SYSROOT", ""));
    t.check(
        "NUMAKIT_SYSROOT= (set, empty)",
        r.problem(&[0], None).or_else(|| r.err().contains("--sysroot").then(|| r.err())),
    );
    let file = d.path().join("plain");
    std::fs::write(&file, "x").expect("write");
    let lp = d.path().join("loop");
    std::os::unix::fs::symlink("loop", &lp).expect("link");
    for (what, root, says) in [
        ("a sysroot that is a file", &file, "it is a file, not a folder"),
        ("a sysroot that is a link loop", &lp, "(a loop)"),
    ] {
        let r = run(nk().arg("--sysroot").arg(root).arg("topo"));
        t.check(what, r.problem(&[2], Some(says)));
    }
    t.finish();
}

/// The limits on files a user names, messages and compare, for the table
/// in docs/hostile-input.md (scripts/hostile-report).
#[test]
fn limits_in_force() {
    use numakit::compare::{child, runner, spec};
    let lines = [
        ("files a user names", "bytes read of one", numakit::files::MAX_NAMED_BYTES.to_string()),
        ("messages", "characters of a path shown", numakit::text::PATH_MAX_CHARS.to_string()),
        ("compare", "measured runs per configuration", spec::MAX_RUNS.to_string()),
        ("compare", "warm-up runs per configuration", spec::MAX_WARMUP.to_string()),
        ("compare", "copies at once", spec::MAX_COPIES.to_string()),
        ("compare", "runs in all", spec::MAX_TOTAL_RUNS.to_string()),
        ("compare", "bytes of a copy's output a regex searches", runner::METRIC_OUTPUT_BYTES.to_string()),
        ("compare", "bytes of output kept over all copies", runner::METRIC_OUTPUT_TOTAL.to_string()),
        ("compare", "bytes of a command's error output kept (its end)", child::STDERR_TAIL.to_string()),
    ];
    const { assert!(numakit::files::MAX_NAMED_BYTES >= 1 << 20 && spec::MAX_TOTAL_RUNS >= spec::MAX_RUNS) };
    for (what, limit, value) in lines {
        eprintln!("LIMIT|{what}|{limit}|{value}");
    }
}
