//! `numakit top`: the live view run in a real terminal (a tmux pane):
//! keys are sent, the pane is captured, and its text is checked (panels,
//! sort, name filter, pause, help, quit); and the plain-text snapshot of
//! `--once` and of a non-terminal stdout.
//!
//! With CI=true a missing tmux is a failure; elsewhere the test is skipped
//! with the reason printed.

mod common;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::skip_or_fail;

const BIN: &str = env!("CARGO_BIN_EXE_numakit");

/// A tmux server of its own (socket in a temp dir), killed on drop.
struct Tmux {
    socket: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl Tmux {
    fn start(cmd: &str) -> Option<Self> {
        let dir = tempfile::tempdir().expect("tmp");
        let socket = dir.path().join("tmux.sock");
        let ok = Command::new("tmux")
            .arg("-S")
            .arg(&socket)
            .args(["-f", "/dev/null", "new-session", "-d", "-x", "160", "-y", "40", cmd])
            .env("TERM", "xterm-256color")
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            skip_or_fail("tmux cannot start a session (apt-get install tmux)");
            return None;
        }
        Some(Tmux { socket, _dir: dir })
    }

    fn cmd(&self, args: &[&str]) -> std::process::Output {
        Command::new("tmux").arg("-S").arg(&self.socket).args(args).output().expect("tmux")
    }

    fn capture(&self) -> String {
        String::from_utf8_lossy(&self.cmd(&["capture-pane", "-p", "-t", "0"]).stdout).into_owned()
    }

    fn keys(&self, keys: &[&str]) {
        let mut a = vec!["send-keys", "-t", "0"];
        a.extend(keys);
        self.cmd(&a);
    }

    /// Waits until the pane shows `want` (or fails, showing the pane).
    fn wait_for(&self, want: &str) -> String {
        let end = Instant::now() + Duration::from_secs(20);
        loop {
            let s = self.capture();
            if s.contains(want) {
                return s;
            }
            assert!(Instant::now() < end, "pane never showed {want:?}:\n{s}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn alive(&self) -> bool {
        self.cmd(&["has-session"]).status.success()
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd(&["kill-server"]);
    }
}

/// A sleeping child with a command name of its own (`sleep` run through a
/// link named `nktop<pid>`), killed and reaped on drop.
struct Sleeper {
    child: Child,
    name: String,
    /// Holds the link until the child is gone.
    _dir: tempfile::TempDir,
}

impl Drop for Sleeper {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn sleeper(secs: &str) -> Sleeper {
    let dir = tempfile::tempdir().expect("tmp");
    let name = format!("nktop{}{}", std::process::id() % 100_000, secs);
    let link = dir.path().join(&name);
    let target = ["/usr/bin/sleep", "/bin/sleep"].into_iter().find(|p| std::path::Path::new(p).exists());
    std::os::unix::fs::symlink(target.expect("sleep binary"), &link).expect("link");
    let child = Command::new(&link).arg(secs).stdout(Stdio::null()).spawn().expect("sleep");
    Sleeper { child, name, _dir: dir }
}

#[test]
fn live_view_in_tmux() {
    if Command::new("tmux").arg("-V").output().is_err() {
        skip_or_fail("tmux is not installed (apt-get install tmux)");
        return;
    }
    let child = sleeper("301");
    let pid = child.child.id().to_string();
    let Some(t) = Tmux::start(&format!("{BIN} top --interval 0.5")) else { return };
    let s = t.wait_for("PID");
    for want in
        ["numakit top", "sort: rss", "NODE", "FREE", "CPU%", "AutoNUMA: hint faults", "MEM/NODE", "LOCAL", "RUNS ON"]
    {
        assert!(s.contains(want), "missing {want:?}:\n{s}");
    }
    // Rates appear once a second sample is in.
    t.wait_for("HIT/s");

    // Sort cycles.
    t.keys(&["s"]);
    t.wait_for("sort: cpu");
    t.keys(&["N"]);
    t.wait_for("sort: name");

    // Filter by name: only our sleeper.
    t.keys(&["/"]);
    t.wait_for("filter by name:");
    t.keys(&[&child.name, "Enter"]);
    let s = t.wait_for(&format!("name~{}", child.name));
    let s = if s.contains(&pid) { s } else { t.wait_for(&pid) };
    let rows: Vec<&str> = s
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("PID"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .collect();
    assert!(rows.len() == 1 && rows[0].contains(&child.name), "rows other than {}:\n{s}", child.name);

    // Pause stops refreshing; resume.
    t.keys(&["p"]);
    t.wait_for("PAUSED");
    t.keys(&["p"]);
    let end = Instant::now() + Duration::from_secs(10);
    while t.capture().contains("PAUSED") {
        assert!(Instant::now() < end, "still paused");
        std::thread::sleep(Duration::from_millis(100));
    }

    // Filter by user: our own uid; every row is that user's.
    t.keys(&["c", "u"]);
    t.wait_for("filter by user:");
    let uid = {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata("/proc/self").expect("/proc/self").uid().to_string()
    };
    t.keys(&[&uid, "Enter"]);
    let s = t.wait_for(&format!("user={uid}"));
    let user_col: Vec<&str> = s
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("PID"))
        .skip(1)
        // Rows start with a pid; the footer ("31 of 40 matching (...)") ends them.
        .take_while(|l| {
            l.split_whitespace().next().is_some_and(|t| t.parse::<u32>().is_ok()) && !l.contains(" matching (")
        })
        .filter_map(|l| l.split_whitespace().nth(1))
        .collect();
    assert!(!user_col.is_empty(), "no rows for uid {uid}:\n{s}");
    assert!(user_col.windows(2).all(|w| w[0] == w[1]), "rows of several users {user_col:?}:\n{s}");

    // Clear the filters, then the help screen and back.
    t.keys(&["c"]);
    t.keys(&["?"]);
    let s = t.wait_for(" Help ");
    assert!(s.contains("next sort key") && s.contains("filter by user"), "{s}");
    t.keys(&["x"]);
    let end = Instant::now() + Duration::from_secs(10);
    while t.capture().contains(" Help ") {
        assert!(Instant::now() < end, "help did not close");
        std::thread::sleep(Duration::from_millis(100));
    }

    // Quit ends the program (and so the session).
    t.keys(&["q"]);
    let end = Instant::now() + Duration::from_secs(10);
    while t.alive() {
        assert!(Instant::now() < end, "numakit top did not quit:\n{}", t.capture());
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(child);
}

#[test]
fn snapshot_when_not_a_terminal() {
    let child = sleeper("302");
    for args in
        [vec!["top", "--interval", "0.2"], vec!["top", "--once", "--interval", "0.2", "--name", child.name.as_str()]]
    {
        let o = Command::new(BIN).args(&args).output().expect("top");
        assert!(o.status.success(), "{o:?}");
        let s = String::from_utf8_lossy(&o.stdout);
        assert!(s.starts_with("numakit top"), "{s}");
        assert!(s.contains("NODE") && s.contains("AutoNUMA") && s.contains("PID") && s.contains("MEM/NODE"), "{s}");
        assert!(s.contains("(over 0."), "rates of a two-sample snapshot: {s}");
        if args.contains(&"--name") {
            assert!(s.contains(&child.child.id().to_string()), "{s}");
            assert!(!s.lines().skip(5).any(|l| l.contains("numakit")), "{s}");
        }
    }
    let bad = Command::new(BIN).args(["top", "--interval", "0"]).output().expect("top");
    assert_eq!(bad.status.code(), Some(2));
    drop(child);
}
