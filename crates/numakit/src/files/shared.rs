//! A folder other users may write, and the one rule for opening names in
//! it. Two such folders are numakit's: the job ledger (`/run/numakit/jobs`,
//! mode 1777: every user's jobs record their placements there) and a
//! report folder (`report=DIR`), to which the HTCondor, LSF and PBS
//! wrappers, running as the job's user, append outcome records beside the
//! Slurm plugin running as root in slurmstepd.
//!
//! Whoever opens a name here (root above all) treats the folder as one an
//! attacker writes:
//!
//! * every name is one component opened relative to the folder's
//!   descriptor, and no symbolic link is followed (`O_NOFOLLOW`), so a name
//!   never leads out of the folder;
//! * nothing blocks: names are opened `O_NONBLOCK`, then anything but a
//!   regular file is refused (a FIFO would hang the opener, `/dev/zero`
//!   flood it), and a file with a second hard link is not written (it may
//!   be somebody else's file linked in);
//! * reads are bounded and say who owns what was read ([`Found::owner`]),
//!   so that root trusts only what root wrote for what root decides;
//! * a file is replaced by one created exclusively (`O_EXCL`) under an
//!   unpredictable name and renamed over it ([`SharedDir::replace`]);
//! * a record is appended whole or not at all ([`SharedDir::append_record`]);
//! * the folder's lock is an `flock` on the folder itself
//!   ([`SharedDir::lock`]): there is no lock file anybody could replace.
//!
//! What a site's folder should look like is [`folder_problems`]'s to say
//! (root's, and sticky where every user writes: docs/batch.md).

use std::ffi::{CString, OsStr, OsString};
use std::fs::{File, Metadata, OpenOptions};
use std::io::{self, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::{blocking, kind_of, read_opened, NamedFileError, Unreadable, MAX_LINE_BYTES};

/// How long [`SharedDir::append_record`] waits for another writer of the
/// same file before it appends without the lock (a record is a few KiB;
/// a writer holds the lock for one `write`).
pub const RECORD_LOCK_WAIT: Duration = Duration::from_secs(2);

/// A folder other users may write, open (see the module's text).
#[derive(Debug)]
pub struct SharedDir {
    path: PathBuf,
    dir: File,
}

/// A file read from a shared folder, with who owns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// Its content.
    pub bytes: Vec<u8>,
    /// The owner's uid.
    pub owner: u32,
}

/// An exclusive `flock` on a shared folder, released when dropped (and by
/// the kernel when its holder dies).
#[derive(Debug)]
pub struct DirLock {
    _fd: OwnedFd,
}

impl SharedDir {
    /// Opens the folder at `path` (a link to it is followed: the path is the
    /// site's word; the names in it are not).
    pub fn open(path: &Path) -> io::Result<SharedDir> {
        let dir = OpenOptions::new().read(true).custom_flags(libc::O_DIRECTORY | libc::O_CLOEXEC).open(path)?;
        Ok(SharedDir { path: path.to_path_buf(), dir })
    }

    /// Opens the folder at `path`, made first (its missing parents mode
    /// 0755, itself `mode`, whatever the umask) when it is missing. An
    /// existing folder is left as it is.
    pub fn create(path: &Path, mode: u32) -> io::Result<SharedDir> {
        match Self::open(path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            r => return r,
        }
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)?;
        }
        match std::fs::create_dir(path) {
            Ok(()) => std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))?,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
        Self::open(path)
    }

    /// The folder's path, as given.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The folder's own owner and mode (of the folder opened, not of what
    /// its path names now).
    pub fn metadata(&self) -> io::Result<Metadata> {
        self.dir.metadata()
    }

    /// `name` in the folder, for messages.
    pub fn path_of(&self, name: impl AsRef<OsStr>) -> PathBuf {
        self.path.join(name.as_ref())
    }

    fn fd(&self) -> BorrowedFd<'_> {
        self.dir.as_fd()
    }

    /// Opens `name` with `flags` (`O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC`
    /// added), creating it with `mode` where `flags` say `O_CREAT`.
    fn open_at(&self, name: &OsStr, flags: libc::c_int, mode: u32) -> io::Result<File> {
        let c = component(name)?;
        let flags = flags | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC;
        // SAFETY: openat with the folder's descriptor and a NUL-terminated
        // single-component name; the returned descriptor is new and owned.
        let fd = unsafe { libc::openat(self.fd().as_raw_fd(), c.as_ptr(), flags, mode as libc::c_uint) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just opened and is owned by nobody else.
        Ok(File::from(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// Reads `name`: a regular file (no link followed, no FIFO waited on)
    /// of at most `max` bytes, with its owner.
    pub fn read(&self, name: impl AsRef<OsStr>, max: u64) -> Result<Found, NamedFileError> {
        let name = name.as_ref();
        let path = self.path_of(name);
        let opened = match self.open_at(name, libc::O_RDONLY, 0) {
            Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
                return Err(NamedFileError { path, why: Unreadable::NotRegular("a symbolic link") })
            }
            r => r,
        };
        let (bytes, meta) = read_opened(opened, max, &path)?;
        Ok(Found { bytes, owner: meta.uid() })
    }

    /// Replaces `name` with `bytes` atomically: a new file (mode `mode`
    /// less the umask) created exclusively under a name nobody can guess,
    /// written, made durable first when `durable` (`fsync` of it, and of
    /// the folder after the rename), and renamed over `name`. Whatever
    /// `name` was (a link, a FIFO, another user's file) is replaced, never
    /// opened. On an error the old content stays and the new file goes.
    pub fn replace(&self, name: impl AsRef<OsStr>, bytes: &[u8], mode: u32, durable: bool) -> io::Result<()> {
        let name = name.as_ref();
        let target = component(name)?;
        let (tmp_name, mut f) = self.create_temp(name, mode)?;
        let tmp = component(&tmp_name)?;
        let result = (|| {
            f.write_all(bytes)?;
            if durable {
                f.sync_all()?;
            }
            let fd = self.fd().as_raw_fd();
            // SAFETY: renameat within the folder, both names NUL-terminated
            // single components.
            if unsafe { libc::renameat(fd, tmp.as_ptr(), fd, target.as_ptr()) } != 0 {
                return Err(io::Error::last_os_error());
            }
            if durable {
                self.dir.sync_all()?;
            }
            Ok(())
        })();
        if result.is_err() {
            let _ = self.remove(&tmp_name);
        }
        result
    }

    /// A new file `.NAME.tmp.PID.RANDOM`, created exclusively.
    fn create_temp(&self, name: &OsStr, mode: u32) -> io::Result<(OsString, File)> {
        let mut last = io::Error::from_raw_os_error(libc::EEXIST);
        for _ in 0..16 {
            let mut tmp = OsString::from(".");
            tmp.push(name);
            tmp.push(format!(".tmp.{}.{:016x}", std::process::id(), unguessable()));
            match self.open_at(&tmp, libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL, mode) {
                Ok(f) => {
                    blocking(&f)?;
                    return Ok((tmp, f));
                }
                Err(e) if e.raw_os_error() == Some(libc::EEXIST) => last = e,
                Err(e) => return Err(e),
            }
        }
        Err(last)
    }

    /// Appends `line` and a newline to `name` (created mode 0644 less the
    /// umask) as one record: whole or not at all. The file must be a
    /// regular file with one link; writers of the same file take turns
    /// (an `flock` on it, waited for at most [`RECORD_LOCK_WAIT`]), and a
    /// write cut short (a full disk) is undone: the file is cut back to
    /// the length it had before, and the error says so. A line holding a
    /// newline, or of [`MAX_LINE_BYTES`] or more, is refused.
    pub fn append_record(&self, name: impl AsRef<OsStr>, line: &str) -> io::Result<()> {
        if line.contains('\n') || line.len() >= MAX_LINE_BYTES {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "not one line of at most 1 MiB"));
        }
        let mut f = self.open_append(name.as_ref())?;
        let locked = flock_within(f.as_fd(), RECORD_LOCK_WAIT)?;
        let before = f.metadata()?.len();
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        let written = loop {
            match f.write(&bytes) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                r => break r,
            }
        };
        let short = match written {
            Ok(n) if n == bytes.len() => return Ok(()),
            Ok(n) => io::Error::new(io::ErrorKind::WriteZero, format!("wrote {n} of {} bytes", bytes.len())),
            Err(e) => e,
        };
        // Only a writer holding the lock knows nobody appended after it.
        if locked && f.set_len(before).is_ok() {
            return Err(io::Error::new(short.kind(), format!("{short}: the record was taken back")));
        }
        Err(short)
    }

    /// Appends `bytes` to `name` (created mode 0644 less the umask) by the
    /// same rules as [`SharedDir::append_record`] but as they are: for a
    /// text of several lines that only its writer appends to (a job's own
    /// report file).
    pub fn append_bytes(&self, name: impl AsRef<OsStr>, bytes: &[u8]) -> io::Result<()> {
        self.open_append(name.as_ref())?.write_all(bytes)
    }

    /// `name` opened to append: a regular file with one link (no link
    /// followed, no FIFO waited on), created where missing; its reads and
    /// writes then wait as usual.
    fn open_append(&self, name: &OsStr) -> io::Result<File> {
        let f = self
            .open_at(name, libc::O_WRONLY | libc::O_APPEND | libc::O_CREAT, 0o644)
            .map_err(|e| refused_open(e, "appended to"))?;
        let meta = f.metadata()?;
        if !meta.is_file() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("not a regular file ({}): not appended to", kind_of(&meta.file_type())),
            ));
        }
        if meta.nlink() != 1 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("has {} hard links: not appended to (it may be another file linked in)", meta.nlink()),
            ));
        }
        blocking(&f)?;
        Ok(f)
    }

    /// Removes `name` (a link itself, never what it names); a missing one
    /// is not an error.
    pub fn remove(&self, name: impl AsRef<OsStr>) -> io::Result<()> {
        let c = component(name.as_ref())?;
        // SAFETY: unlinkat within the folder, a NUL-terminated single component.
        if unsafe { libc::unlinkat(self.fd().as_raw_fd(), c.as_ptr(), 0) } != 0 {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::NotFound {
                return Err(e);
            }
        }
        Ok(())
    }

    /// The names in the folder with their kind (as the listing says).
    pub fn names(&self) -> io::Result<Vec<(OsString, crate::beneath::Kind)>> {
        crate::beneath::list(self.reopen()?)
    }

    /// A new open file description of the folder (an `flock` belongs to one).
    fn reopen(&self) -> io::Result<OwnedFd> {
        let f = self.open_at(OsStr::new("."), libc::O_RDONLY | libc::O_DIRECTORY, 0)?;
        Ok(OwnedFd::from(f))
    }

    /// Locks the folder, waiting at most `wait` for another holder:
    /// `Ok(None)` when it is still held then. Any user who can open the
    /// folder can take its lock; nobody can replace it.
    pub fn lock(&self, wait: Duration) -> io::Result<Option<DirLock>> {
        let fd = self.reopen()?;
        Ok(flock_within(fd.as_fd(), wait)?.then_some(DirLock { _fd: fd }))
    }
}

/// Takes an exclusive `flock` on `fd`, polling every millisecond for at
/// most `wait`: whether it was taken.
pub(super) fn flock_within(fd: BorrowedFd<'_>, wait: Duration) -> io::Result<bool> {
    let end = Instant::now() + wait;
    loop {
        // SAFETY: flock on a descriptor the caller holds; no memory is passed.
        if unsafe { libc::flock(fd.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            return Ok(true);
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EWOULDBLOCK) {
            return Err(e);
        }
        if Instant::now() >= end {
            return Ok(false);
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// `name` as one path component (not empty, `.`-free of `..`, no `/`).
fn component(name: &OsStr) -> io::Result<CString> {
    let b = name.as_bytes();
    if b.is_empty() || b == b".." || b.contains(&b'/') {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "not a name within the folder"));
    }
    CString::new(b).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a name with a NUL byte"))
}

/// The error of an open refused by this module's rules, in words.
fn refused_open(e: io::Error, what: &str) -> io::Error {
    match e.raw_os_error() {
        Some(libc::ELOOP) => io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("a symbolic link, which numakit does not follow here: not {what}"),
        ),
        Some(libc::ENXIO) => {
            io::Error::new(io::ErrorKind::InvalidInput, format!("not a regular file (a FIFO or socket): not {what}"))
        }
        _ => e,
    }
}

/// 64 bits nobody can predict (`getrandom`); where the kernel has none,
/// the clock and the pid (names are still created exclusively).
fn unguessable() -> u64 {
    let mut v = [0u8; 8];
    // SAFETY: getrandom writes at most 8 bytes into `v`.
    let n = unsafe { libc::getrandom(v.as_mut_ptr().cast(), v.len(), 0) };
    if n == 8 {
        return u64::from_ne_bytes(v);
    }
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    t ^ (u64::from(std::process::id()) << 32)
}

/// What a site should mend in a folder numakit's jobs share, from its
/// owner and mode (pure): `every_user` says whether every user's jobs must
/// write in it (the ledger; a report folder the wrappers write), so that it
/// must be writable by all and sticky, as `/tmp` is. Empty: as documented.
pub fn folder_problems(owner: u32, mode: u32, every_user: bool) -> Vec<String> {
    let mut out = Vec::new();
    let sticky = mode & 0o1000 != 0;
    if owner != 0 {
        out.push(format!("owned by uid {owner}, not root: its owner can replace anything in it"));
    }
    if mode & 0o022 != 0 && !sticky {
        out.push(format!(
            "mode {:04o}: writable by other users but not sticky, so one user's jobs can remove or replace another's files (chmod +t)",
            mode & 0o7777
        ));
    }
    if every_user && mode & 0o002 == 0 {
        out.push(format!(
            "mode {:04o}: other users' jobs cannot write in it (every user's jobs record here: 1777)",
            mode & 0o7777
        ));
    }
    out
}

#[cfg(test)]
mod tests;
