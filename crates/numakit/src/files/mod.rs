//! Files that are not kernel files: numakit's own state files, written
//! so that a crash at any instant leaves either the old content or the
//! new one, never a mix or an empty file; and files a user names, read
//! with bounds.
//!
//! [`write_atomic`] is the one way numakit replaces such a file: a
//! temporary file beside it, `fsync`, `rename` over the old one, `fsync` of
//! the folder (without the last step a power cut can undo the rename).
//! The temporary file is named `.NAME.tmp.PID`; one a killed writer left
//! behind is removed by the next [`write_atomic`] to the same file
//! (or by [`remove_stale_temps`]), once its writer is gone.
//!
//! [`read_named`] is the one way numakit reads a file a user (or a
//! configuration, or another user's job) names: a tune state file or
//! profile, a baseline, a saved comparison, a `--since` report, the
//! daemon's status and configuration. Only a regular file is read (a FIFO
//! would wait for a writer forever, `/dev/zero` would fill memory), at most
//! [`MAX_NAMED_BYTES`] of it (a larger size is refused before a byte is
//! read), and an error is one line naming the path as it was given.
//!
//! [`append_line`] adds one record to a log shared by many writers (the
//! batch jobs' JSON lines): whole or not at all, in a folder other users
//! may write ([`shared`]: the one rule for names in such a folder, which
//! the job ledger follows too).
//!
//! This module reads and writes only the files it is given; it never
//! touches kernel knobs or placement (that is [`crate::act`]).

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

pub mod shared;
pub use shared::{folder_problems, DirLock, Found, SharedDir};

/// The most numakit reads of a file a user names: far above any file
/// numakit writes for itself (a saved comparison of 100,000 runs is about
/// 2 MiB), far below what would hurt.
pub const MAX_NAMED_BYTES: u64 = 16 << 20;

/// Why a named file was not read.
#[derive(Debug)]
pub enum Unreadable {
    /// There is no file at that path.
    Missing,
    /// Something else than a regular file is there (its kind).
    NotRegular(&'static str),
    /// The file is larger than the limit (bytes).
    TooLarge(u64),
    /// The file is not UTF-8 text (where text is read).
    NotText,
    /// The system refused: permissions, a folder on the path that is not
    /// one, an I/O error.
    Io(io::Error),
}

impl std::fmt::Display for Unreadable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unreadable::Missing => f.write_str("no such file"),
            Unreadable::NotRegular(kind) => write!(f, "not a regular file ({kind})"),
            Unreadable::TooLarge(max) => {
                write!(f, "larger than {}, the most numakit reads of it", crate::units::human_bytes(*max))
            }
            Unreadable::NotText => f.write_str("not UTF-8 text"),
            Unreadable::Io(e) => write!(f, "cannot read it: {e}"),
        }
    }
}

/// A named file that could not be read: `PATH: why`, the path as given
/// ([`crate::text::path`]: one line, bounded).
#[derive(Debug, thiserror::Error)]
#[error("{}: {why}", crate::text::path(path))]
pub struct NamedFileError {
    /// The path as given.
    pub path: PathBuf,
    /// What is wrong.
    pub why: Unreadable,
}

impl NamedFileError {
    /// Whether there is no file at all (for files that may be absent,
    /// such as a state file before the first change).
    pub fn is_missing(&self) -> bool {
        matches!(self.why, Unreadable::Missing)
    }
}

/// Reads the file a user named at `path` (followed if a link): regular
/// files only, at most [`MAX_NAMED_BYTES`].
pub fn read_named(path: &Path) -> Result<Vec<u8>, NamedFileError> {
    read_bounded(path, MAX_NAMED_BYTES, true)
}

/// Whether two paths a user named are one file: the same path, or the
/// same device and inode (links followed; a path that does not exist is
/// no file). For refusing to write over an input, not for security.
pub fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    if a == b {
        return true;
    }
    match (fs::metadata(a), fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}

/// [`read_named`] as UTF-8 text ([`Unreadable::NotText`] otherwise).
pub fn read_named_text(path: &Path) -> Result<String, NamedFileError> {
    String::from_utf8(read_named(path)?)
        .map_err(|_| NamedFileError { path: path.to_path_buf(), why: Unreadable::NotText })
}

/// Reads the regular file at `path`, at most `max` bytes of it (a larger
/// one is refused, by its size before reading when it says it). With
/// `follow` false a symbolic link at `path` is refused too (for files in a
/// folder other users write, such as the job ledger's). Opening never
/// waits: a FIFO is opened without blocking and refused by its type.
pub fn read_bounded(path: &Path, max: u64, follow: bool) -> Result<Vec<u8>, NamedFileError> {
    read_with_metadata(path, max, follow).map(|(bytes, _)| bytes)
}

/// [`read_bounded`], with the metadata of the file read (its owner and
/// mode as the descriptor says, for a caller that must judge them).
pub fn read_with_metadata(path: &Path, max: u64, follow: bool) -> Result<(Vec<u8>, fs::Metadata), NamedFileError> {
    let flags = libc::O_NONBLOCK | if follow { 0 } else { libc::O_NOFOLLOW };
    let opened = match OpenOptions::new().read(true).custom_flags(flags).open(path) {
        Err(e) if !follow && e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(NamedFileError { path: path.to_path_buf(), why: Unreadable::NotRegular("a symbolic link") })
        }
        r => r,
    };
    read_opened(opened, max, path)
}

/// The content of a file opened `O_NONBLOCK` (`opened`, the open's own
/// result) and its metadata: a regular file of at most `max` bytes (a
/// larger size is refused before a byte is read), read with ordinary
/// blocking reads; errors name `path`.
fn read_opened(opened: io::Result<File>, max: u64, path: &Path) -> Result<(Vec<u8>, fs::Metadata), NamedFileError> {
    let err = |why| NamedFileError { path: path.to_path_buf(), why };
    let file = match opened {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(err(Unreadable::Missing)),
        Err(e) => return Err(err(Unreadable::Io(e))),
    };
    let meta = file.metadata().map_err(|e| err(Unreadable::Io(e)))?;
    if !meta.is_file() {
        return Err(err(Unreadable::NotRegular(kind_of(&meta.file_type()))));
    }
    if meta.len() > max {
        return Err(err(Unreadable::TooLarge(max)));
    }
    blocking(&file).map_err(|e| err(Unreadable::Io(e)))?;
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0).saturating_add(1));
    file.take(max.saturating_add(1)).read_to_end(&mut bytes).map_err(|e| err(Unreadable::Io(e)))?;
    if bytes.len() as u64 > max {
        return Err(err(Unreadable::TooLarge(max)));
    }
    Ok((bytes, meta))
}

/// Takes `O_NONBLOCK` off `file`, which was opened with it only so that
/// opening a FIFO would not wait: once the file is known to be regular,
/// its reads and writes get the kernel's ordinary semantics.
pub fn blocking(file: &File) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let fd = file.as_raw_fd();
    // SAFETY: F_GETFL and F_SETFL on a descriptor `file` owns; no memory
    // is passed.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags < 0 || libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// A file type in words, for "not a regular file (…)".
pub fn kind_of(t: &fs::FileType) -> &'static str {
    if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_dir() {
        "a folder"
    } else if t.is_symlink() {
        "a symbolic link"
    } else {
        "not a file"
    }
}

/// The folder `path` is in (`.` for a bare file name).
pub fn folder(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

fn file_name(path: &Path) -> &std::ffi::OsStr {
    path.file_name().unwrap_or_else(|| std::ffi::OsStr::new("file"))
}

/// Replaces `path` with `bytes` durably, creating its folder if needed:
/// a new file beside it (mode 0644 less the umask) created exclusively
/// under a name nobody can guess, `fsync`, `rename` over the old one,
/// `fsync` of the folder ([`SharedDir::replace`]). On an error the old
/// content stays and the temporary file is removed; those of killed
/// writers are removed first ([`remove_stale_temps`]).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = folder(path);
    fs::create_dir_all(dir)?;
    remove_stale_temps(path);
    SharedDir::open(dir)?.replace(file_name(path), bytes, 0o644, true)
}

/// The longest line [`append_line`] writes: far above a job's record (a
/// few KiB), well below what one `write` to a local file system always
/// completes.
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// Appends `line` and a newline to `path` as one record, whole or not at
/// all, creating its folder if needed: the file is opened in its folder by
/// [`SharedDir::append_record`]'s rules (no link followed, no FIFO waited
/// on, a regular file with one link; concurrent writers take turns, and a
/// write cut short by a full disk is taken back). A line holding a
/// newline, or longer than [`MAX_LINE_BYTES`], is refused.
pub fn append_line(path: &Path, line: &str) -> io::Result<()> {
    let dir = folder(path);
    let not_a_folder = |e: io::Error| match e.raw_os_error() {
        Some(libc::EEXIST | libc::ENOTDIR) => {
            io::Error::new(io::ErrorKind::InvalidInput, format!("{} is not a folder", crate::text::path(dir)))
        }
        _ => e,
    };
    fs::create_dir_all(dir).map_err(not_a_folder)?;
    SharedDir::open(dir).map_err(not_a_folder)?.append_record(file_name(path), line)
}

/// Removes `path` (a missing file is not an error) and makes the removal
/// durable (`fsync` of the folder).
pub fn remove_durable(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Ok(()) => File::open(folder(path))?.sync_all(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// Removes the temporary files of `path` whose writer (the PID in the
/// name) no longer runs: what a `kill -9` during [`write_atomic`] leaves.
/// Returns how many were removed. Errors are ignored: a leftover is
/// harmless, and the next write tries again.
pub fn remove_stale_temps(path: &Path) -> usize {
    let Ok(dir) = SharedDir::open(folder(path)) else { return 0 };
    let Ok(names) = dir.names() else { return 0 };
    let mut removed = 0;
    for (name, _) in names {
        let dead =
            temp_writer(&name, file_name(path)).is_some_and(|pid| pid != std::process::id() && !process_exists(pid));
        if dead && dir.remove(&name).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// The writer's pid of a temporary file of `target` ([`SharedDir::replace`]'s
/// `.NAME.tmp.PID.RANDOM`, or the older `.NAME.tmp.PID`), by its name.
pub fn temp_writer(name: &std::ffi::OsStr, target: &std::ffi::OsStr) -> Option<u32> {
    use std::os::unix::ffi::OsStrExt;
    let rest = name.as_bytes().strip_prefix(b".")?.strip_prefix(target.as_bytes())?.strip_prefix(b".tmp.")?;
    let pid = rest.split(|b| *b == b'.').next()?;
    std::str::from_utf8(pid).ok()?.parse().ok()
}

/// An exclusive `flock` on a lock file, released when dropped (and by the
/// kernel when the process dies, so a `kill -9` never leaves it held).
#[derive(Debug)]
pub struct FileLock {
    _file: File,
}

impl FileLock {
    /// Takes the lock on `path` (created, with its folder, if missing)
    /// without waiting: `Ok(None)` when another process holds it.
    pub fn try_acquire(path: &Path) -> io::Result<Option<FileLock>> {
        Self::acquire(path, std::time::Duration::ZERO)
    }

    /// Takes the lock on `path`, waiting at most `timeout` for its holder
    /// (polled every millisecond): `Ok(None)` when it is still held then.
    /// The lock file is opened without following a link or waiting on a
    /// FIFO, and must be a regular file.
    pub fn acquire(path: &Path, timeout: std::time::Duration) -> io::Result<Option<FileLock>> {
        fs::create_dir_all(folder(path))?;
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o644)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(path)?;
        let meta = file.metadata()?;
        if !meta.is_file() {
            let why = format!("not a regular file ({})", kind_of(&meta.file_type()));
            return Err(io::Error::new(io::ErrorKind::InvalidInput, why));
        }
        let taken = shared::flock_within(std::os::fd::AsFd::as_fd(&file), timeout)?;
        Ok(taken.then_some(FileLock { _file: file }))
    }
}

fn process_exists(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else { return false };
    // SAFETY: signal 0 only checks that the process exists.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nonblocking(f: &File) -> bool {
        use std::os::fd::AsRawFd;
        // SAFETY: F_GETFL on a descriptor `f` owns.
        unsafe { libc::fcntl(f.as_raw_fd(), libc::F_GETFL) & libc::O_NONBLOCK != 0 }
    }

    #[test]
    fn files_opened_without_waiting_are_read_waiting() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("sys/x")).unwrap();
        std::fs::write(d.path().join("sys/x/f"), "1\n").unwrap();
        let f = OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(d.path().join("sys/x/f")).unwrap();
        assert!(nonblocking(&f));
        blocking(&f).unwrap();
        assert!(!nonblocking(&f));
        // The one reader below a root hands out files whose reads wait.
        let sys = crate::sys::SysRoot::at(d.path());
        let f = sys.open("sys/x/f").unwrap().expect("there");
        assert!(!nonblocking(&f));
        assert_eq!(sys.read("sys/x/f").unwrap().as_deref(), Some("1"));
    }

    #[test]
    fn replaces_creates_and_leaves_no_temp() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("sub/state.json");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"two");
        let names: Vec<_> = fs::read_dir(p.parent().unwrap()).unwrap().flatten().map(|e| e.file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from("state.json")]);
    }

    #[test]
    fn appends_whole_lines_and_refuses_the_rest() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("sub/lines.jsonl");
        append_line(&p, "{\"a\":1}").unwrap();
        append_line(&p, "{\"a\":2}").unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), "{\"a\":1}\n{\"a\":2}\n");
        assert_eq!(append_line(&p, "two\nlines").unwrap_err().kind(), io::ErrorKind::InvalidInput);
        let link = d.path().join("link");
        std::os::unix::fs::symlink(&p, &link).unwrap();
        assert!(append_line(&link, "x").is_err(), "a link at the end is refused");
        if Path::new("/dev/full").exists() {
            assert!(append_line(Path::new("/dev/full"), "x").is_err(), "a full disk is an error");
        }
        let e = append_line(&link.join("x.jsonl"), "x").unwrap_err().to_string();
        assert!(e.ends_with("/link is not a folder"), "a file named as the folder: {e}");
        // Writers in several threads: every line whole.
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let p = p.clone();
                std::thread::spawn(move || {
                    for i in 0..200 {
                        append_line(&p, &format!("{t}:{i}:{}", "x".repeat(3000))).unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let text = fs::read_to_string(&p).unwrap();
        let long: Vec<&str> = text.lines().filter(|l| l.len() > 100).collect();
        assert_eq!(long.len(), 800);
        assert!(long.iter().all(|l| l.ends_with(&"x".repeat(3000)) && l.split(':').count() == 3));
    }

    #[test]
    fn an_error_keeps_the_old_content() {
        let d = tempfile::tempdir().unwrap();
        // A folder where the file should be: the rename fails.
        let p = d.path().join("state.json");
        fs::create_dir(&p).unwrap();
        fs::write(p.join("inside"), "x").unwrap();
        assert!(write_atomic(&p, b"new").is_err());
        assert_eq!(fs::read(p.join("inside")).unwrap(), b"x");
        assert_eq!(fs::read_dir(d.path()).unwrap().count(), 1, "the temporary file was removed");
    }

    #[test]
    fn temps_of_dead_writers_are_removed_live_ones_kept() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("state.json");
        // A child that has exited and been reaped: its pid is free.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let temp = |pid: u32, rand: &str| d.path().join(format!(".state.json.tmp.{pid}{rand}"));
        let stale = temp(dead, ".00ff00ff00ff00ff");
        let stale_old_form = temp(dead, "");
        let live = temp(1, ".0123456789abcdef");
        let mine = temp(std::process::id(), ".0123456789abcdef");
        let other = d.path().join(".other.json.tmp.12345");
        for f in [&stale, &stale_old_form, &live, &mine, &other] {
            fs::write(f, "x").unwrap();
        }
        assert_eq!(remove_stale_temps(&p), 2);
        assert!(!stale.exists() && !stale_old_form.exists());
        assert!(live.exists() && mine.exists() && other.exists());
        write_atomic(&p, b"v").unwrap();
        let mut names: Vec<_> = fs::read_dir(d.path()).unwrap().flatten().map(|e| e.file_name()).collect();
        names.sort();
        assert_eq!(names.len(), 4, "no temporary file of this write is left: {names:?}");
    }

    /// A FIFO: opening it for reading without `O_NONBLOCK` would wait for
    /// a writer forever, so a read that blocks fails the test by its clock.
    fn fifo(p: &Path) {
        let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: mkfifo with a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    }

    #[test]
    fn named_files_are_regular_bounded_and_named_as_given() {
        let d = tempfile::tempdir().unwrap();
        let ok = d.path().join("ok.json");
        fs::write(&ok, "{}").unwrap();
        assert_eq!(read_named_text(&ok).unwrap(), "{}");
        let t = std::time::Instant::now();
        let f = d.path().join("fifo");
        fifo(&f);
        let e = read_named(&f).unwrap_err().to_string();
        assert!(e.ends_with("/fifo: not a regular file (a FIFO)"), "{e}");
        let e = read_named(Path::new("/dev/zero")).unwrap_err().to_string();
        assert_eq!(e, "/dev/zero: not a regular file (a character device)");
        assert!(t.elapsed() < std::time::Duration::from_secs(2), "no wait: {:?}", t.elapsed());
        // A sparse file far above the limit: refused by its size, unread.
        let big = d.path().join("big");
        File::create(&big).unwrap().set_len(1 << 40).unwrap();
        let e = read_named(&big).unwrap_err().to_string();
        assert!(e.ends_with("big: larger than 16 MiB, the most numakit reads of it"), "{e}");
        let e = read_named(&d.path().join("none")).unwrap_err();
        assert!(e.is_missing() && e.to_string().ends_with("none: no such file"), "{e}");
        let e = read_named(d.path()).unwrap_err().to_string();
        assert!(e.ends_with("not a regular file (a folder)"), "{e}");
        fs::write(d.path().join("bin"), b"\xff\xfe").unwrap();
        assert!(read_named_text(&d.path().join("bin")).unwrap_err().to_string().ends_with("not UTF-8 text"));
        // The path as given, on one line.
        let odd = d.path().join("a\nb\x1b[31m");
        let e = read_named(&odd).unwrap_err().to_string();
        assert!(e.contains("a\\nb\\u{1b}[31m: no such file") && !e.contains('\n'), "{e}");
    }

    #[test]
    fn bounded_reads_refuse_links_when_asked() {
        let d = tempfile::tempdir().unwrap();
        let target = d.path().join("t");
        fs::write(&target, "x".repeat(100)).unwrap();
        let link = d.path().join("l");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert_eq!(read_bounded(&link, 100, true).unwrap().len(), 100);
        let e = read_bounded(&link, 100, false).unwrap_err().to_string();
        assert!(e.ends_with("not a regular file (a symbolic link)"), "{e}");
        let e = read_bounded(&target, 99, true).unwrap_err();
        assert!(matches!(e.why, Unreadable::TooLarge(99)), "{e}");
    }

    #[test]
    fn a_lock_is_exclusive_and_freed_on_drop() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("sub/x.lock");
        let held = FileLock::try_acquire(&p).unwrap().expect("free");
        // flock locks belong to the open file description: a second open
        // in the same process is refused as another process would be.
        assert!(FileLock::try_acquire(&p).unwrap().is_none());
        assert!(FileLock::acquire(&p, std::time::Duration::from_millis(5)).unwrap().is_none());
        drop(held);
        assert!(FileLock::acquire(&p, std::time::Duration::from_millis(5)).unwrap().is_some());
    }
}
