//! Root in folders other users write: the job ledger and the outcomes
//! folder, attacked as a user on a shared node would attack them, with the
//! real numakit started as a root-run wrapper starts it (`run --auto`, the
//! PBS job starter). Every run is bounded in time: a FIFO opened blocking
//! would hang it, and the bound fails the test instead of CI.
//!
//! The full-disk case mounts a small tmpfs in a private mount namespace
//! (root, as CI runs; failed instead of skipped under `CI=true`).

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const NK: &str = env!("CARGO_BIN_EXE_numakit");

/// Far above what any of these runs takes; a blocking open never returns.
const LIMIT: Duration = Duration::from_secs(20);

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Runs `c` for at most [`LIMIT`] (killed then, and the test fails).
fn bounded(c: &mut Command) -> Output {
    let mut child = c.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn");
    let t = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if t.elapsed() > LIMIT {
            let _ = child.kill();
            let o = child.wait_with_output().expect("output");
            panic!("still running after {LIMIT:?} (killed): {}{}", text(&o.stdout), text(&o.stderr));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    child.wait_with_output().expect("output")
}

fn fifo(p: &Path) {
    let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).expect("path");
    // SAFETY: mkfifo with a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o666) }, 0, "mkfifo {}", p.display());
}

/// `numakit run --auto` as a wrapper runs it: no sampling, no daemon, the
/// ledger `ledger`, then `cmd`.
fn run_auto(ledger: &Path, extra: &[&str], cmd: &[&str]) -> Command {
    let mut c = Command::new(NK);
    c.args(["run", "--auto", "--sample", "0", "--socket", "/nonexistent.sock", "--ledger"])
        .arg(ledger)
        .args(extra)
        .arg("--")
        .args(cmd);
    c
}

/// The PBS job starter around `cmd`, with the outcomes folder `outcomes`.
fn pbs_job(ledger: &Path, outcomes: &Path, job: &str, cmd: &str) -> Command {
    let starter = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../contrib/batch/pbs-job-starter");
    let mut c = Command::new("/bin/sh");
    c.env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("NUMAKIT", NK)
        .env("NUMAKIT_WAIT", "0")
        .env("NUMAKIT_SOCKET", "/nonexistent.sock")
        .env("NUMAKIT_RUN_ARGS", format!("--sample 0 --ledger {}", ledger.display()))
        .env("NUMAKIT_OUTCOMES", outcomes)
        .env("PBS_JOBID", job)
        .env("PBS_NUM_PPN", "1")
        .args([starter.to_str().expect("utf8"), "/bin/sh", "-c", cmd]);
    c
}

fn ledger_dir(d: &Path) -> PathBuf {
    let l = d.join("jobs");
    std::fs::create_dir(&l).expect("ledger");
    l
}

/// Defect 1: `rm L/.lock; mkfifo L/.lock` made root's next placement wait
/// in open() for ever.
#[test]
fn a_fifo_for_the_lock_file_does_not_stop_a_placement() {
    let d = tempfile::tempdir().expect("tmp");
    let l = ledger_dir(d.path());
    fifo(&l.join(".lock"));
    let o = bounded(&mut run_auto(&l, &[], &["true"]));
    assert!(o.status.success(), "{}", text(&o.stderr));
    eprintln!("HOSTILE|shared folders|the job ledger's old lock file made a FIFO, then a placement as root|1|0");
}

/// Defect 2: a temporary name root would write through. The old scheme's
/// names (`.PID.json.tmp.PID`) are planted for every pid the next process
/// may get, each a link to a file the user may not write.
#[test]
fn planted_temporary_names_never_make_root_write_elsewhere() {
    let d = tempfile::tempdir().expect("tmp");
    let l = ledger_dir(d.path());
    let victim = d.path().join("root-owned");
    std::fs::write(&victim, "precious\n").expect("victim");
    let last: u32 =
        std::fs::read_to_string("/proc/sys/kernel/ns_last_pid").expect("ns_last_pid").trim().parse().expect("pid");
    for pid in last + 1..last + 3000 {
        symlink(&victim, l.join(format!(".{pid}.json.tmp.{pid}"))).expect("plant");
    }
    let o = bounded(&mut run_auto(&l, &[], &["true"]));
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(std::fs::read_to_string(&victim).expect("victim"), "precious\n");
    // The placement was recorded all the same, in a file of its own.
    let entries: Vec<_> = std::fs::read_dir(&l)
        .expect("ledger")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
        .collect();
    assert_eq!(entries.len(), 1, "one entry");
    assert!(entries[0].file_type().expect("type").is_file());
    eprintln!("HOSTILE|shared folders|links to a root file at 3000 predictable temporary names in the ledger|1|0");
}

/// Defect 3: the note file read with a plain read: a FIFO hung root, a link
/// to /dev/zero grew it without bound. A broken experiment's note is what
/// makes a wrapped job read it.
#[test]
fn a_note_file_that_is_a_fifo_or_a_link_to_dev_zero_is_not_read() {
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    for plant in ["fifo", "zero"] {
        let d = tempfile::tempdir().expect("tmp");
        let l = ledger_dir(d.path());
        let note = l.join(format!(".note.{me}"));
        match plant {
            "fifo" => fifo(&note),
            _ => symlink("/dev/zero", &note).expect("link"),
        }
        let words = "experiment=e arms=auto:1,none:1 key=/nonexistent/key";
        let mut c = run_auto(&l, &["--experiment", words], &["sh", "-c", "exit 3"]);
        c.env("PBS_JOBID", "70.server").env("PBS_NUM_PPN", "1");
        let o = bounded(&mut c);
        assert_eq!(o.status.code(), Some(3), "{plant}: the job's own status: {}", text(&o.stderr));
        assert!(
            text(&o.stderr).starts_with("numakit: experiment e: "),
            "{plant}: the note is said: {}",
            text(&o.stderr)
        );
        let kind = std::fs::symlink_metadata(&note).expect("note").file_type();
        assert!(kind.is_file(), "{plant}: the planted name was replaced, not written through");
    }
    eprintln!("HOSTILE|shared folders|the ledger's note file a FIFO, a link to /dev/zero|2|0");
}

/// Defect 4: the outcomes file made a FIFO: the job ran, then the wrapper
/// waited in open() and the job's exit status was lost.
#[test]
fn an_outcomes_fifo_keeps_the_jobs_status_and_says_why_no_record() {
    let d = tempfile::tempdir().expect("tmp");
    let l = ledger_dir(d.path());
    let out = d.path().join("outcomes");
    std::fs::create_dir(&out).expect("outcomes");
    fifo(&out.join("numakit-outcomes.jsonl"));
    let o = bounded(&mut pbs_job(&l, &out, "71.server", "exit 4"));
    assert_eq!(o.status.code(), Some(4), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(err.contains("numakit-outcomes.jsonl: not a regular file (a FIFO"), "{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    // A link there is not followed either.
    let victim = d.path().join("victim");
    std::fs::write(&victim, "precious\n").expect("victim");
    std::fs::remove_file(out.join("numakit-outcomes.jsonl")).expect("rm");
    symlink(&victim, out.join("numakit-outcomes.jsonl")).expect("link");
    let o = bounded(&mut pbs_job(&l, &out, "72.server", "exit 0"));
    assert!(o.status.success());
    assert!(text(&o.stderr).contains("a symbolic link, which numakit does not follow here"), "{}", text(&o.stderr));
    assert_eq!(std::fs::read_to_string(&victim).expect("victim"), "precious\n");
    eprintln!("HOSTILE|shared folders|the outcomes file a FIFO, a link to another file|2|0");
}

/// Defect 5: a full disk tore a record (391 of 832 bytes, no newline) and
/// the next job's record was glued to it. On a tmpfs of two pages, the
/// file is filled to 391 bytes short of its page and the rest of the
/// tmpfs taken: a job's record cannot fit, is taken back whole, the job's
/// status is kept; once there is room again the next job's record is whole.
#[test]
fn a_full_disk_takes_a_record_back_whole_and_the_next_one_is_kept() {
    let d = tempfile::tempdir().expect("tmp");
    let l = ledger_dir(d.path());
    let mnt = d.path().join("outcomes");
    std::fs::create_dir(&mnt).expect("mnt");
    let script = format!(
        r#"set -e
mount -t tmpfs -o size=8k,mode=1777 numakit-test "$MNT"
head -c 3704 /dev/zero | tr '\0' x > "$MNT/numakit-outcomes.jsonl"; echo >> "$MNT/numakit-outcomes.jsonl"
head -c 4096 /dev/zero > "$MNT/fill" || true
set +e
{job77}; echo "status77=$?"
{job77b}; echo "status77b=$?"
rm "$MNT/fill"
{job78}; echo "status78=$?"
cp "$MNT/numakit-outcomes.jsonl" "$COPY"
"#,
        job77 = shell_job("77.server", "exit 6"),
        job77b = shell_job("77b.server", "exit 0"),
        job78 = shell_job("78.server", "exit 0"),
    );
    let starter = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../contrib/batch/pbs-job-starter");
    let copy = d.path().join("copy.jsonl");
    let mut c = Command::new("unshare");
    c.args(["-m", "--propagation", "private", "sh", "-c", &script])
        .env("MNT", &mnt)
        .env("COPY", &copy)
        .env("NUMAKIT", NK)
        .env("STARTER", &starter)
        .env("NUMAKIT_WAIT", "0")
        .env("NUMAKIT_SOCKET", "/nonexistent.sock")
        .env("NUMAKIT_RUN_ARGS", format!("--sample 0 --ledger {}", l.display()))
        .env("NUMAKIT_OUTCOMES", &mnt)
        .env("PBS_NUM_PPN", "1");
    let o = bounded(&mut c);
    let (out, err) = (text(&o.stdout), text(&o.stderr));
    if !o.status.success() && err.contains("mount") {
        assert!(std::env::var_os("CI").is_none(), "CI must be able to mount a tmpfs: {err}");
        eprintln!("skipped: no private mount namespace here: {err}");
        return;
    }
    assert!(o.status.success(), "{out}\n{err}");
    assert!(out.contains("status77=6\n") && out.contains("status77b=0\n"), "the jobs' own status: {out}\n{err}");
    assert!(out.contains("status78=0\n"), "{out}\n{err}");
    assert_eq!(err.matches("the record was taken back").count(), 2, "each job said why it has no record: {err}");
    let file = std::fs::read_to_string(&copy).expect("copy");
    let lines: Vec<&str> = file.split_inclusive('\n').collect();
    assert_eq!(lines.len(), 2, "the padding line and job 78's record, nothing torn: {file:?}");
    assert_eq!(lines[0].len(), 3705);
    let r: numakit::experiment::StepOutcome =
        serde_json::from_str(lines[1].trim_end()).expect("job 78's record, whole");
    assert_eq!(r.job, "78.server");
    eprintln!("HOSTILE|shared folders|outcome records on a full tmpfs (a record cut short at 391 bytes)|3|0");
}

/// The PBS job starter line for the full-disk script.
fn shell_job(job: &str, cmd: &str) -> String {
    format!("PBS_JOBID={job} sh \"$STARTER\" /bin/sh -c '{cmd}'")
}
