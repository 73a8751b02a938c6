//! `numakit daemon`, `ctl` and `advise` on this machine: usage errors are
//! one line with exit 2, a missing daemon is one line with exit 1, the
//! control socket answers root and refuses other users by their kernel
//! credentials (`SO_PEERCRED`), the group set in `ctl_group` is let in,
//! `--scans` stops the daemon cleanly and `advise` answers from the
//! daemon's view or from a fresh sample. The multi-node behaviour is in
//! `vm_daemon.rs`.

mod common;

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const NK: &str = env!("CARGO_BIN_EXE_numakit");

fn nk(args: &[&str]) -> Output {
    Command::new(NK).args(args).output().expect("run numakit")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn config(dir: &Path, extra: &str) -> std::path::PathBuf {
    let p = dir.join("c.toml");
    std::fs::write(
        &p,
        format!(
            "interval_min_s = 0.5\ninterval_max_s = 1\nstate_dir = {:?}\nlog = {:?}\nsocket = {:?}\n{extra}",
            dir.join("state").display().to_string(),
            dir.join("log.jsonl").display().to_string(),
            dir.join("d.sock").display().to_string()
        ),
    )
    .expect("config");
    p
}

/// A daemon child, killed if a test fails before stopping it.
struct Daemon(Option<Child>);

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn start(cfg: &Path, dir: &Path) -> Daemon {
    let child = Command::new(NK).args(["daemon", "--config"]).arg(cfg).stderr(Stdio::null()).spawn().expect("daemon");
    // Until it accepts connections: the socket file appears at bind(),
    // a moment before listen() (a connect in between is refused).
    let t = Instant::now();
    while std::os::unix::net::UnixStream::connect(dir.join("d.sock")).is_err() {
        assert!(t.elapsed() < Duration::from_secs(20), "daemon socket did not appear");
        std::thread::sleep(Duration::from_millis(50));
    }
    Daemon(Some(child))
}

fn stop(mut d: Daemon) {
    let Some(mut child) = d.0.take() else { return };
    // SAFETY: plain kill(2) of our child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let t = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        assert!(t.elapsed() < Duration::from_secs(20), "daemon did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn one_line_error(o: &Output, code: i32, needle: &str) {
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(code), "stderr: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(err.contains(needle), "{needle:?} not in {err}");
}

/// The advice, or on a machine too busy to have an idle CPU (other tests
/// run beside this one), the refusal with run --auto's exit code 75.
fn advice(o: &Output) -> serde_json::Value {
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&o.stderr)));
    match o.status.code() {
        Some(0) => assert!(v["nodes"].is_string() && v["numactl"].is_array(), "{v}"),
        Some(75) => assert!(v["refused"].as_str().is_some_and(|r| r.contains("idle CPUs")), "{v}"),
        c => panic!("exit {c:?}: {}", text(&o.stderr)),
    }
    v
}

#[test]
fn usage_errors_name_the_bad_value() {
    let d = tempfile::tempdir().expect("tmp");
    let bad = d.path().join("bad.toml");
    std::fs::write(&bad, "interval_min_s = 0\n").expect("write");
    one_line_error(&nk(&["daemon", "--config", bad.to_str().expect("utf8")]), 2, "interval_min_s = 0");
    std::fs::write(&bad, "[decide]\nharm_treshold = 0.1\n").expect("write");
    one_line_error(&nk(&["daemon", "--config", bad.to_str().expect("utf8")]), 2, "harm_treshold");
    one_line_error(&nk(&["daemon", "--config", "/nonexistent.toml"]), 2, "/nonexistent.toml");
    let cfg = config(d.path(), "");
    one_line_error(&nk(&["daemon", "--config", cfg.to_str().expect("utf8"), "-i", "x:y"]), 2, "--interval x:y");
    one_line_error(&nk(&["advise", "--cpus", "0"]), 2, "--cpus 0");
    one_line_error(&nk(&["advise", "--cpus", "1", "--mem", "lots"]), 2, "lots");
    one_line_error(
        &nk(&["ctl", "--socket", "/nonexistent.sock", "status"]),
        1,
        "no numakit daemon at /nonexistent.sock",
    );
}

#[test]
fn control_socket_answers_root_and_refuses_others() {
    let d = tempfile::tempdir().expect("tmp");
    let cfg = config(d.path(), "");
    let child = start(&cfg, d.path());
    let sock = d.path().join("d.sock");
    let s = sock.to_str().expect("utf8");
    // A second daemon on the same socket is refused.
    one_line_error(&nk(&["daemon", "--config", cfg.to_str().expect("utf8")]), 1, "another numakit daemon is running");

    let o = nk(&["ctl", "--socket", s, "exclude", "geant4"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout).trim(), "excluded command \"geant4\"");
    let o = nk(&["ctl", "--config", cfg.to_str().expect("utf8"), "status", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("status JSON");
    assert_eq!(v["excluded"]["comms"], serde_json::json!(["geant4"]));
    // A bad target is the user's typing: a usage error, before the socket.
    one_line_error(&nk(&["ctl", "--socket", s, "exclude", "-5"]), 2, "invalid pid -5");
    one_line_error(&nk(&["ctl", "--socket", "/nonexistent.sock", "forget", "0"]), 2, "invalid pid 0");

    // Another user: the file mode keeps them out; with the mode opened, the
    // daemon refuses them by SO_PEERCRED.
    let mode = std::fs::metadata(&sock).map(|m| std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o777);
    assert_eq!(mode.ok(), Some(0o660));
    if unsafe { libc::geteuid() } == 0 && Path::new("/usr/bin/setpriv").exists() {
        // Kept out by the file mode: said as a permission problem, not as
        // a missing daemon.
        let o = Command::new("/usr/bin/setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", NK, "ctl", "--socket", s, "status"])
            .output()
            .expect("setpriv");
        one_line_error(&o, 1, "permission denied on ");
        assert!(!text(&o.stderr).contains("no numakit daemon"), "{}", text(&o.stderr));
        std::fs::set_permissions(&sock, std::os::unix::fs::PermissionsExt::from_mode(0o666)).expect("chmod");
        let o = Command::new("/usr/bin/setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", NK, "ctl", "--socket", s, "status"])
            .output()
            .expect("setpriv");
        one_line_error(&o, 1, "permission denied: uid 65534 is not root");
    } else {
        common::skip_or_fail("the refusal of other users needs root and setpriv");
    }
    // Decisions are JSON lines.
    std::thread::sleep(Duration::from_millis(1500));
    let o = nk(&["ctl", "--socket", s, "decisions", "-n", "5"]);
    for l in text(&o.stdout).lines() {
        let v: serde_json::Value = serde_json::from_str(l).expect("decision line");
        assert!(v["outcome"].is_string() && v["action"].is_string(), "{l}");
    }
    // advise from the daemon's view.
    let o = nk(&["advise", "--cpus", "1", "--mem", "1M", "--socket", s, "--json"]);
    let v = advice(&o);
    assert!(v["source"].as_str().is_some_and(|x| x.starts_with("daemon")), "{v}");
    stop(child);
    assert!(!sock.exists(), "socket removed on exit");
    // The exclusion survived in the state file.
    let st = std::fs::read_to_string(d.path().join("state/state.json")).expect("state");
    assert!(st.contains("geant4"));
}

#[test]
fn ctl_group_members_are_let_in() {
    if unsafe { libc::geteuid() } != 0 || !Path::new("/usr/bin/setpriv").exists() {
        common::skip_or_fail("group access needs root and setpriv");
        return;
    }
    let d = tempfile::tempdir().expect("tmp");
    let cfg = config(d.path(), "ctl_group = \"4242\"\n");
    let child = start(&cfg, d.path());
    let sock = d.path().join("d.sock");
    std::fs::set_permissions(&sock, std::os::unix::fs::PermissionsExt::from_mode(0o666)).expect("chmod");
    let s = sock.to_str().expect("utf8");
    let as_user = |groups: &str| {
        Command::new("/usr/bin/setpriv")
            .args(["--reuid=65534", "--regid=65534", &format!("--groups={groups}"), NK, "ctl", "--socket", s, "status"])
            .output()
            .expect("setpriv")
    };
    let o = as_user("4242");
    assert!(o.status.success(), "a member of the group: {}", text(&o.stderr));
    one_line_error(&as_user("4243"), 1, "not in group 4242");
    stop(child);
}

#[test]
fn scans_limit_and_advise_without_daemon() {
    let d = tempfile::tempdir().expect("tmp");
    let cfg = config(d.path(), "");
    let o =
        Command::new(NK).args(["daemon", "--dry-run", "--scans", "2", "--config"]).arg(&cfg).output().expect("daemon");
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("stopped after 2 scans"));
    let st: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.path().join("state/status.json")).expect("status"))
            .expect("json");
    assert_eq!(st["counters"]["scans"], 2);
    assert_eq!(st["dry_run"], true);
    let o = nk(&["advise", "--cpus", "1", "--no-daemon", "--json"]);
    assert_eq!(advice(&o)["source"], "sampled now");
    // More CPUs than the machine has: refused with run --auto's exit code.
    let o = nk(&["advise", "--cpus", "100000", "--no-daemon"]);
    assert_eq!(o.status.code(), Some(75), "{}", text(&o.stderr));
}

#[test]
fn a_file_at_the_socket_path_is_never_deleted() {
    let d = tempfile::tempdir().expect("tmp");
    let cfg = config(d.path(), "");
    let precious = d.path().join("d.sock");
    std::fs::write(&precious, "not a socket\n").expect("write");
    one_line_error(
        &nk(&["daemon", "--config", cfg.to_str().expect("utf8")]),
        1,
        "is not a socket is there; refusing to replace it",
    );
    assert_eq!(std::fs::read_to_string(&precious).expect("still there"), "not a socket\n");
    // A stale socket (no daemon answers on it) is replaced.
    std::fs::remove_file(&precious).expect("rm");
    drop(std::os::unix::net::UnixListener::bind(&precious).expect("stale socket"));
    // start() waits until the daemon accepts connections: the stale socket
    // refuses them.
    let child = start(&cfg, d.path());
    let o = nk(&["ctl", "--config", cfg.to_str().expect("utf8"), "status"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    stop(child);
    eprintln!("HOSTILE|control socket|a regular file, then a stale socket, at the socket path|2|0");
}

#[test]
fn slow_idle_and_oversized_clients_do_not_hold_the_socket() {
    use std::io::{Read, Write};
    use std::os::unix::net::UnixStream;
    let d = tempfile::tempdir().expect("tmp");
    let cfg = config(d.path(), "");
    let child = start(&cfg, d.path());
    let sock = d.path().join("d.sock");
    // Eight clients that connect and say nothing, one that sends a byte
    // now and then: each holds a connection of its own.
    let idle: Vec<UnixStream> = (0..8).map(|_| UnixStream::connect(&sock).expect("connect")).collect();
    let mut slow = UnixStream::connect(&sock).expect("connect");
    slow.write_all(b"{").expect("write");
    let t = Instant::now();
    let o = nk(&["ctl", "--socket", sock.to_str().expect("utf8"), "status", "--json"]);
    // Served while the others wait for their own timeouts (2 s each;
    // before, one connection at a time with a 5 s timeout per read).
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(t.elapsed() < Duration::from_secs(2), "status took {:?}", t.elapsed());
    // An oversized request is refused without being echoed back.
    let mut big = UnixStream::connect(&sock).expect("connect");
    let line = format!("{{\"cmd\":\"exclude\",\"target\":\"{}\"}}\n", "x".repeat(100_000));
    let _ = big.write_all(line.as_bytes());
    let mut answer = String::new();
    // The daemon answers and closes with the rest unread: the answer
    // comes first, then the reset.
    let _ = big.read_to_string(&mut answer);
    assert!(answer.contains("longer than 4096 bytes") && answer.len() < 300, "{answer}");
    // The slow client is cut off at its deadline with a short error.
    let mut rest = String::new();
    slow.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    slow.read_to_string(&mut rest).expect("answer");
    assert!(rest.contains("did not arrive within"), "{rest}");
    drop(idle);
    stop(child);
    eprintln!("HOSTILE|control socket|8 idle and 1 slow client while ctl status runs; a 100 kB request|3|0");
}

/// What the daemon's status lists as excluded.
fn excluded(cfg: &Path) -> serde_json::Value {
    let o = nk(&["ctl", "--config", cfg.to_str().expect("utf8"), "status", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("status JSON");
    v["excluded"].clone()
}

#[test]
fn batch_job_exclusions_end_with_the_job() {
    let d = tempfile::tempdir().expect("tmp");
    let cfg = config(d.path(), "");
    let child = start(&cfg, d.path());
    let s = d.path().join("d.sock");
    let s = s.to_str().expect("utf8");
    // A cgroup that exists (the root's folder is there on every host) and
    // one that does not (a job that ended): the scan drops the second.
    for t in ["cgroup:/", "cgroup:/job_that_ended_42"] {
        let o = nk(&["ctl", "--socket", s, "exclude", t]);
        assert!(o.status.success(), "{}", text(&o.stderr));
    }
    one_line_error(&nk(&["ctl", "--socket", s, "exclude", "cgroup:job_1"]), 2, "invalid cgroup \"cgroup:job_1\"");
    // A job wrapper's process: excluded by pid while the command runs.
    let mut job = Command::new(NK)
        .args(["run", "--exclude-from-daemon", "--socket", s, "--", "sleep", "30"])
        .stderr(Stdio::piped())
        .spawn()
        .expect("run");
    let pid = job.id();
    let t = Instant::now();
    loop {
        let ex = excluded(&cfg);
        let pids: Vec<u64> = ex["pids"].as_array().map_or(vec![], |a| a.iter().filter_map(|p| p.as_u64()).collect());
        if pids.contains(&u64::from(pid)) && ex["cgroups"] == serde_json::json!(["/"]) {
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(10), "not both excluded and dropped: {ex}");
        std::thread::sleep(Duration::from_millis(100));
    }
    // The job ends: its pid leaves the list at the next scan.
    job.kill().expect("kill");
    job.wait().expect("wait");
    let t = Instant::now();
    while excluded(&cfg)["pids"].as_array().is_some_and(|a| !a.is_empty()) {
        assert!(t.elapsed() < Duration::from_secs(10), "the ended job's pid stayed: {}", excluded(&cfg));
        std::thread::sleep(Duration::from_millis(100));
    }
    stop(child);
    // Without a daemon the wrapper warns and runs the command.
    let o = nk(&["run", "--exclude-from-daemon", "--socket", "/nonexistent.sock", "--", "true"]);
    assert!(o.status.success());
    assert_eq!(
        text(&o.stderr).trim(),
        "numakit: no numakit daemon answers at /nonexistent.sock: nothing to exclude the job from"
    );
}

#[test]
fn an_experiments_off_host_decides_and_logs_only() {
    use numakit::experiment::{assign, Design};
    use std::os::unix::fs::PermissionsExt as _;
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").expect("hostname");
    let host = host.trim().split('.').next().unwrap_or_default().to_string();
    // One key that draws this host daemon-off, one that draws it daemon-on.
    let words =
        |key: &Path| format!("experiment=dm arms=daemon-on,daemon-off unit=host key={} cluster=farm", key.display());
    let draw = |n: u8| {
        let key = vec![n; 32];
        let w = words(Path::new("/k"));
        let d = Design::from_words(&w.split_whitespace().collect::<Vec<_>>()).expect("words").expect("design");
        (key.clone(), assign::daemon_off(&d, &key, &host, 0.0, false).is_some())
    };
    let off = (0..=255).map(draw).find(|(_, off)| *off).expect("a key drawing off");
    let on = (0..=255).map(draw).find(|(_, off)| !*off).expect("a key drawing on");
    for (key, is_off) in [off, on] {
        let d = tempfile::tempdir().expect("tmp");
        let k = d.path().join("experiment.key");
        std::fs::write(&k, &key).expect("key");
        std::fs::set_permissions(&k, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        let cfg = config(d.path(), &format!("experiment = {:?}\n", words(&k)));
        let o = Command::new(NK)
            .args(["daemon", "--dry-run", "--scans", "2", "--config"])
            .arg(&cfg)
            .output()
            .expect("daemon");
        assert!(o.status.success(), "{}", text(&o.stderr));
        assert!(text(&o.stderr).contains(&format!("experiment dm on host {host}")), "{}", text(&o.stderr));
        let st: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(d.path().join("state/status.json")).expect("status"))
                .expect("json");
        let deferred = st["deferred"].as_str().unwrap_or_default();
        assert_eq!(deferred.contains("this host's arm is daemon-off"), is_off, "{st}");
    }
    // A bad experiment is a bad setting: the daemon does not start.
    let d = tempfile::tempdir().expect("tmp");
    let cfg = config(d.path(), "experiment = \"experiment=dm arms=auto,none unit=host key=/k cluster=c\"\n");
    let o =
        Command::new(NK).args(["daemon", "--dry-run", "--scans", "1", "--config"]).arg(&cfg).output().expect("daemon");
    one_line_error(&o, 2, "the daemon's arms are daemon-on and daemon-off");
}
