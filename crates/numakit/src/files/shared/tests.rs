use super::*;
use std::fs;
use std::os::unix::fs::symlink;
use std::time::Instant;

fn fifo(p: &Path) {
    let c = CString::new(p.as_os_str().as_bytes()).unwrap();
    // SAFETY: mkfifo with a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o666) }, 0);
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// A clock for what must not wait: a FIFO opened blocking waits forever,
/// so a slip shows as a test that takes seconds.
fn quick<T>(what: &str, f: impl FnOnce() -> T) -> T {
    let t = Instant::now();
    let r = f();
    assert!(t.elapsed() < Duration::from_secs(2), "{what} waited {:?}", t.elapsed());
    r
}

#[test]
fn the_lock_is_the_folders_own_and_no_file_stands_in_for_it() {
    let d = tempfile::tempdir().unwrap();
    // What an old lock file's name may hold now: a FIFO nobody writes.
    fifo(&d.path().join(".lock"));
    let dir = SharedDir::open(d.path()).unwrap();
    let held = quick("a lock beside a FIFO", || dir.lock(Duration::ZERO).unwrap()).expect("free");
    // Another open of the folder (as another process's) is refused while held.
    let other = SharedDir::open(d.path()).unwrap();
    assert!(other.lock(Duration::from_millis(20)).unwrap().is_none());
    assert!(dir.lock(Duration::ZERO).unwrap().is_none(), "one lock per open, even in one process");
    drop(held);
    assert!(other.lock(Duration::from_millis(20)).unwrap().is_some());
    // No write access is needed to take it.
    fs::set_permissions(d.path(), fs::Permissions::from_mode(0o555)).unwrap();
    assert!(SharedDir::open(d.path()).unwrap().lock(Duration::ZERO).unwrap().is_some());
    fs::set_permissions(d.path(), fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn a_replace_never_writes_through_a_planted_name() {
    let d = tempfile::tempdir().unwrap();
    let shared = d.path().join("shared");
    fs::create_dir(&shared).unwrap();
    let victim = d.path().join("root-file");
    fs::write(&victim, "precious").unwrap();
    // The entry's own name and every name the old scheme would have used
    // (`.NAME.tmp.PID`) point at a file root owns.
    symlink(&victim, shared.join("77.json")).unwrap();
    symlink(&victim, shared.join(format!(".77.json.tmp.{}", std::process::id()))).unwrap();
    fifo(&shared.join(".77.json.tmp"));
    let dir = SharedDir::open(&shared).unwrap();
    quick("a replace", || dir.replace("77.json", b"{\"pid\":77}", 0o644, false)).unwrap();
    assert_eq!(fs::read(&victim).unwrap(), b"precious");
    let meta = fs::symlink_metadata(shared.join("77.json")).unwrap();
    assert!(meta.is_file(), "the link itself was replaced by a file");
    assert_eq!(fs::read(shared.join("77.json")).unwrap(), b"{\"pid\":77}");
    dir.replace("77.json", b"two", 0o644, true).unwrap();
    assert_eq!(fs::read(shared.join("77.json")).unwrap(), b"two");
    // Only the planted names are left beside it.
    assert_eq!(fs::read_dir(&shared).unwrap().count(), 3);
    // Names are single components.
    for bad in ["", "..", "a/b", "../x"] {
        assert_eq!(dir.replace(bad, b"x", 0o644, false).unwrap_err().kind(), io::ErrorKind::InvalidInput, "{bad:?}");
    }
    assert_eq!(fs::read(&victim).unwrap(), b"precious");
}

#[test]
fn temporary_names_cannot_be_guessed() {
    let d = tempfile::tempdir().unwrap();
    let dir = SharedDir::open(d.path()).unwrap();
    let (a, _) = dir.create_temp(OsStr::new("x.json"), 0o600).unwrap();
    let (b, _) = dir.create_temp(OsStr::new("x.json"), 0o600).unwrap();
    assert_ne!(a, b);
    let prefix = format!(".x.json.tmp.{}.", std::process::id());
    for t in [&a, &b] {
        let rest = t.to_str().unwrap().strip_prefix(&prefix).expect("named for its writer");
        assert_eq!(rest.len(), 16, "64 random bits: {t:?}");
        assert_eq!(crate::files::temp_writer(t, OsStr::new("x.json")), Some(std::process::id()));
    }
}

#[test]
fn reads_refuse_fifos_links_and_floods_and_say_the_owner() {
    let d = tempfile::tempdir().unwrap();
    fifo(&d.path().join(".note.0"));
    symlink("/dev/zero", d.path().join("zero")).unwrap();
    fs::File::create(d.path().join("big")).unwrap().set_len(1 << 40).unwrap();
    fs::write(d.path().join("ok"), "note").unwrap();
    let dir = SharedDir::open(d.path()).unwrap();
    let e = quick("a FIFO read", || dir.read(".note.0", 4096)).unwrap_err();
    assert!(e.to_string().ends_with("/.note.0: not a regular file (a FIFO)"), "{e}");
    let e = quick("a link to /dev/zero", || dir.read("zero", 4096)).unwrap_err();
    assert!(e.to_string().ends_with("/zero: not a regular file (a symbolic link)"), "{e}");
    let e = dir.read("big", 4096).unwrap_err();
    assert!(matches!(e.why, Unreadable::TooLarge(4096)), "{e}");
    assert!(dir.read("none", 4096).unwrap_err().is_missing());
    let f = dir.read("ok", 4096).unwrap();
    // SAFETY: geteuid has no preconditions.
    assert_eq!((f.bytes.as_slice(), f.owner), (&b"note"[..], unsafe { libc::geteuid() }));
    if is_root() {
        std::os::unix::fs::chown(d.path().join("ok"), Some(65534), None).unwrap();
        assert_eq!(dir.read("ok", 4096).unwrap().owner, 65534);
    }
}

#[test]
fn a_record_goes_only_to_a_regular_file_of_its_own() {
    let d = tempfile::tempdir().unwrap();
    let victim = d.path().join("victim");
    fs::write(&victim, "precious\n").unwrap();
    let shared = d.path().join("shared");
    fs::create_dir(&shared).unwrap();
    let dir = SharedDir::open(&shared).unwrap();
    fifo(&shared.join("fifo.jsonl"));
    let e = quick("a record to a FIFO", || dir.append_record("fifo.jsonl", "{}")).unwrap_err();
    assert!(e.to_string().contains("not a regular file"), "{e}");
    symlink(&victim, shared.join("link.jsonl")).unwrap();
    let e = dir.append_record("link.jsonl", "{}").unwrap_err();
    assert!(e.to_string().starts_with("a symbolic link, which numakit does not follow here"), "{e}");
    fs::hard_link(&victim, shared.join("hard.jsonl")).unwrap();
    let e = dir.append_record("hard.jsonl", "{}").unwrap_err();
    assert!(e.to_string().starts_with("has 2 hard links"), "{e}");
    assert_eq!(fs::read(&victim).unwrap(), b"precious\n");
    dir.append_record("ok.jsonl", "{\"a\":1}").unwrap();
    dir.append_record("ok.jsonl", "{\"a\":2}").unwrap();
    assert_eq!(fs::read_to_string(shared.join("ok.jsonl")).unwrap(), "{\"a\":1}\n{\"a\":2}\n");
    assert_eq!(dir.append_record("ok.jsonl", "a\nb").unwrap_err().kind(), io::ErrorKind::InvalidInput);
}

/// The child side of [`a_record_cut_short_is_taken_back`]: with the file
/// size limit just past what the file holds, a record longer than the room
/// left is cut short by the kernel (as a full disk cuts it).
fn cut_short_child(path: &Path) {
    let dir = SharedDir::open(path.parent().unwrap()).unwrap();
    let name = path.file_name().unwrap();
    dir.append_record(name, "{\"job\":76}").unwrap();
    let limit = fs::metadata(path).unwrap().len() + 100;
    // SAFETY: ignoring SIGXFSZ makes a write past the limit return short
    // (or EFBIG) instead of killing the process; setrlimit takes a valid struct.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
        let lim = libc::rlimit { rlim_cur: limit, rlim_max: limit };
        assert_eq!(libc::setrlimit(libc::RLIMIT_FSIZE, &lim), 0);
    }
    let long = format!("{{\"job\":77,\"pad\":\"{}\"}}", "x".repeat(300));
    let e = dir.append_record(name, &long).unwrap_err();
    assert!(e.to_string().ends_with("the record was taken back"), "{e}");
    let e = dir.append_record(name, &long).unwrap_err();
    assert!(e.to_string().ends_with("the record was taken back"), "a second try, also cut short: {e}");
    dir.append_record(name, "{\"job\":78}").unwrap();
}

#[test]
fn a_record_cut_short_is_taken_back() {
    if let Some(p) = std::env::var_os("NUMAKIT_TEST_CUT_SHORT") {
        return cut_short_child(Path::new(&p));
    }
    let d = tempfile::tempdir().unwrap();
    let file = d.path().join("numakit-outcomes.jsonl");
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "files::shared::tests::a_record_cut_short_is_taken_back", "--nocapture"])
        .env("NUMAKIT_TEST_CUT_SHORT", &file)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    // Every record whole, the one cut short gone, the one after it kept.
    assert_eq!(fs::read_to_string(&file).unwrap(), "{\"job\":76}\n{\"job\":78}\n");
}

#[test]
fn a_folder_is_judged_by_its_owner_and_mode() {
    assert!(folder_problems(0, 0o1777, true).is_empty());
    assert!(folder_problems(0, 0o755, false).is_empty());
    assert!(folder_problems(0, 0o1770, false).is_empty());
    let p = folder_problems(0, 0o777, true);
    assert_eq!(p.len(), 1);
    assert!(p[0].starts_with("mode 0777: writable by other users but not sticky"), "{p:?}");
    let p = folder_problems(0, 0o755, true);
    assert!(p[0].starts_with("mode 0755: other users' jobs cannot write in it"), "{p:?}");
    let p = folder_problems(1000, 0o1777, true);
    assert_eq!(p, vec!["owned by uid 1000, not root: its owner can replace anything in it".to_string()]);
    assert_eq!(folder_problems(1000, 0o775, false).len(), 2);
}

#[test]
fn a_folder_is_created_with_its_mode_whatever_the_umask() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("a/b/jobs");
    let dir = SharedDir::create(&p, 0o1777).unwrap();
    assert_eq!(dir.metadata().unwrap().permissions().mode() & 0o7777, 0o1777);
    fs::set_permissions(&p, fs::Permissions::from_mode(0o755)).unwrap();
    let again = SharedDir::create(&p, 0o1777).unwrap();
    assert_eq!(again.metadata().unwrap().permissions().mode() & 0o7777, 0o755, "an existing folder is left as it is");
}
