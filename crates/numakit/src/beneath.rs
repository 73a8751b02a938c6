//! Opening a path below a root folder so that it cannot lead out of it:
//! the one place numakit resolves paths of a dump (`--sysroot`) and of the
//! knob files it writes below a root.
//!
//! Two ways to treat the symbolic links met on the way ([`Links`]):
//!
//! * [`Links::InRoot`], for reads of a dump: a link is followed as if the
//!   root were `/` (sysfs is full of relative links, `node0/cpu0 ->
//!   ../../cpu/cpu0`; an absolute one, `/dev/zero`, means the dump's own
//!   `dev/zero`), and `..` stops at the root;
//! * [`Links::Refused`], for writes: no link is followed at all and `..`
//!   is refused, so a write lands on the file named, below the root.
//!
//! The kernel does this itself with `openat2(2)` (`RESOLVE_IN_ROOT`,
//! `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`, Linux 5.6). Where it answers
//! `ENOSYS` (an older kernel, a seccomp filter), the same rules are kept
//! by a walk, one component at a time, each opened with `O_NOFOLLOW` and
//! looked at before the next. Either way a refusal is `ELOOP` (a link met
//! where none may be) or `EXDEV` (`..` out of the root).
//!
//! This module opens and lists; it neither reads nor writes content and
//! knows nothing of kernel files (that is [`crate::sys`] and
//! [`crate::act`]).

use std::ffi::{CStr, CString, OsStr, OsString};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, IntoRawFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Component, Path};
use std::sync::atomic::{AtomicU8, Ordering};

/// How symbolic links on the path are treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Links {
    /// Followed, with the root as `/` (`RESOLVE_IN_ROOT`): for reads.
    InRoot,
    /// Not followed: any link on the path, the last component included, is
    /// refused (`ELOOP`), as is a `..` out of the root (`EXDEV`): for writes.
    Refused,
}

/// Most links followed in one path (the kernel's own limit, `MAXSYMLINKS`).
const MAX_LINKS: usize = 40;

/// Whether the kernel has `openat2`: 0 not known yet, 1 yes, 2 no.
static OPENAT2: AtomicU8 = AtomicU8::new(0);

/// `struct open_how` of `linux/openat2.h` (the kernel's ABI; libc's is
/// marked non-exhaustive).
#[repr(C)]
struct OpenHow {
    flags: u64,
    mode: u64,
    resolve: u64,
}

/// Opens a folder to resolve paths below (`O_PATH`: no read permission
/// needed, nothing read).
pub fn open_root(root: &Path) -> io::Result<OwnedFd> {
    open_plain(libc::AT_FDCWD, root.as_os_str(), libc::O_PATH | libc::O_DIRECTORY)
}

/// Opens `rel` below the folder `root` with `flags` (`O_RDONLY`,
/// `O_WRONLY | O_TRUNC`, `O_PATH | O_NOFOLLOW`, ...; `O_CLOEXEC` is
/// added), the links on the way treated as `links` says. A leading `/` of
/// `rel` is dropped; an empty `rel` is the root itself. `O_CREAT` is not
/// for this function (nothing below a root is created through it).
pub fn open(root: BorrowedFd<'_>, rel: &Path, flags: libc::c_int, links: Links) -> io::Result<OwnedFd> {
    if OPENAT2.load(Ordering::Relaxed) != 2 {
        match openat2(root, rel, flags, links) {
            Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => OPENAT2.store(2, Ordering::Relaxed),
            r => {
                OPENAT2.store(1, Ordering::Relaxed);
                return r;
            }
        }
    }
    walk(root, rel, flags, links)
}

/// Whether `open` uses the kernel's `openat2` (known after the first call).
pub fn kernel_resolves() -> Option<bool> {
    match OPENAT2.load(Ordering::Relaxed) {
        1 => Some(true),
        2 => Some(false),
        _ => None,
    }
}

fn relative(rel: &Path) -> &Path {
    let r = rel.strip_prefix("/").unwrap_or(rel);
    if r.as_os_str().is_empty() {
        Path::new(".")
    } else {
        r
    }
}

fn cstring(s: &OsStr) -> io::Result<CString> {
    CString::new(s.as_bytes()).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

fn openat2(root: BorrowedFd<'_>, rel: &Path, flags: libc::c_int, links: Links) -> io::Result<OwnedFd> {
    let c = cstring(relative(rel).as_os_str())?;
    let resolve = match links {
        Links::InRoot => libc::RESOLVE_IN_ROOT | libc::RESOLVE_NO_MAGICLINKS,
        Links::Refused => libc::RESOLVE_BENEATH | libc::RESOLVE_NO_SYMLINKS,
    };
    let how = OpenHow { flags: (flags | libc::O_CLOEXEC) as u64, mode: 0, resolve };
    // The kernel answers EAGAIN when any rename or mount on the system
    // raced with a `..` lookup under these flags (a dump's sysfs links
    // are full of `..`); on a busy machine eight quick tries can all
    // lose. Try again, then with short growing pauses: at most 64 tries
    // and about 0.2 s in all.
    for attempt in 0..64u32 {
        if attempt >= 8 {
            std::thread::sleep(std::time::Duration::from_micros(50 << (attempt - 8).min(6)));
        }
        // SAFETY: openat2 with a valid folder descriptor, a NUL-terminated
        // path and an `open_how` of the size passed; it returns a new
        // descriptor or -1.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_openat2,
                root.as_raw_fd(),
                c.as_ptr(),
                &how as *const OpenHow,
                std::mem::size_of::<OpenHow>(),
            )
        };
        if fd >= 0 {
            // SAFETY: the kernel just returned this descriptor to us alone.
            return Ok(unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) });
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EAGAIN) {
            return Err(e);
        }
    }
    Err(io::Error::from_raw_os_error(libc::EAGAIN))
}

/// `openat(dir, name, flags | O_CLOEXEC)`.
fn open_plain(dir: libc::c_int, name: &OsStr, flags: libc::c_int) -> io::Result<OwnedFd> {
    let c = cstring(name)?;
    // SAFETY: openat with a NUL-terminated name; it returns a new
    // descriptor or -1.
    let fd = unsafe { libc::openat(dir, c.as_ptr(), flags | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the descriptor was just returned to us alone.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn fstat_mode(fd: BorrowedFd<'_>) -> io::Result<libc::mode_t> {
    // SAFETY: an all-zero `stat` is a valid value to be overwritten.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat on an open descriptor into a `stat` we own.
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(st.st_mode & libc::S_IFMT)
}

/// The target of the link open at `fd` (`O_PATH | O_NOFOLLOW`).
fn link_target(fd: BorrowedFd<'_>) -> io::Result<OsString> {
    let mut buf = vec![0u8; 4096];
    // SAFETY: readlinkat of the empty path reads the link `fd` is open
    // on (Linux 2.6.39) into a buffer of the length passed.
    let n = unsafe { libc::readlinkat(fd.as_raw_fd(), c"".as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    buf.truncate(n as usize);
    Ok(OsString::from_vec(buf))
}

/// The path's components as names and `..` (`.` dropped).
fn parts(p: &Path) -> Vec<OsString> {
    p.components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_os_string()),
            Component::ParentDir => Some(OsString::from("..")),
            Component::CurDir | Component::RootDir | Component::Prefix(_) => None,
        })
        .collect()
}

/// The walk that stands in for `openat2` (see the module's text).
pub(crate) fn walk(root: BorrowedFd<'_>, rel: &Path, flags: libc::c_int, links: Links) -> io::Result<OwnedFd> {
    // Folders entered below the root, innermost last.
    let mut stack: Vec<OwnedFd> = Vec::new();
    let mut todo: std::collections::VecDeque<OsString> = parts(relative(rel)).into();
    let mut followed = 0;
    while let Some(name) = todo.pop_front() {
        let here = stack.last().map_or(root.as_raw_fd(), |f| f.as_raw_fd());
        if name == ".." {
            // Above the root: where RESOLVE_IN_ROOT stays at the root,
            // RESOLVE_BENEATH refuses.
            if stack.pop().is_none() && links == Links::Refused {
                return Err(io::Error::from_raw_os_error(libc::EXDEV));
            }
            continue;
        }
        let node = open_plain(here, &name, libc::O_PATH | libc::O_NOFOLLOW)?;
        let mode = fstat_mode(node.as_fd())?;
        if mode == libc::S_IFLNK {
            if links == Links::Refused {
                return Err(io::Error::from_raw_os_error(libc::ELOOP));
            }
            followed += 1;
            if followed > MAX_LINKS {
                return Err(io::Error::from_raw_os_error(libc::ELOOP));
            }
            let target = link_target(node.as_fd())?;
            if target.as_bytes().first() == Some(&b'/') {
                stack.clear();
            }
            for p in parts(Path::new(&target)).into_iter().rev() {
                todo.push_front(p);
            }
            continue;
        }
        if todo.is_empty() {
            // The last component, not a link: open it for real. Should it
            // have become a link since, O_NOFOLLOW refuses it.
            return open_plain(here, &name, flags | libc::O_NOFOLLOW);
        }
        if mode != libc::S_IFDIR {
            return Err(io::Error::from_raw_os_error(libc::ENOTDIR));
        }
        stack.push(node);
    }
    // The path ended on a folder reached by `..` or a link (or was empty).
    let here = stack.last().map_or(root.as_raw_fd(), |f| f.as_raw_fd());
    open_plain(here, OsStr::new("."), flags)
}

/// Makes the folders of `rel` below `root` that are missing (mode 0755
/// less the umask), following no link: a link on the way is refused
/// (`ELOOP`), as is `..` (`EXDEV`), as [`Links::Refused`] opens. Then
/// `root/rel` is a path without links below the root.
pub fn make_dirs(root: BorrowedFd<'_>, rel: &Path) -> io::Result<()> {
    let mut here: Option<OwnedFd> = None;
    for name in parts(relative(rel)) {
        if name == ".." {
            return Err(io::Error::from_raw_os_error(libc::EXDEV));
        }
        let dir = here.as_ref().map_or(root.as_raw_fd(), |f| f.as_raw_fd());
        let c = cstring(&name)?;
        // SAFETY: mkdirat with a NUL-terminated name; it creates nothing
        // through a link (an existing name, link or not, is EEXIST).
        if unsafe { libc::mkdirat(dir, c.as_ptr(), 0o755) } != 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EEXIST) {
                return Err(e);
            }
        }
        let fd = open_plain(dir, &name, libc::O_PATH | libc::O_NOFOLLOW)?;
        match fstat_mode(fd.as_fd())? {
            libc::S_IFDIR => here = Some(fd),
            libc::S_IFLNK => return Err(io::Error::from_raw_os_error(libc::ELOOP)),
            _ => return Err(io::Error::from_raw_os_error(libc::ENOTDIR)),
        }
    }
    Ok(())
}

/// What a folder entry is, as the listing says (`d_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// A folder.
    Folder,
    /// A symbolic link.
    Link,
    /// Anything else (a file, a device, ...).
    Other,
}

/// The entries of the folder open at `dir` (`.` and `..` left out), with
/// their kind; the descriptor is consumed. Where the file system does not
/// say the kind in the listing, it is asked (`fstatat`, links not followed).
pub fn list(dir: OwnedFd) -> io::Result<Vec<(OsString, Kind)>> {
    let raw = dir.into_raw_fd();
    // SAFETY: fdopendir takes the descriptor we own; on success the DIR
    // owns it (closedir closes it), on failure we still do.
    let dirp = unsafe { libc::fdopendir(raw) };
    if dirp.is_null() {
        let e = io::Error::last_os_error();
        // SAFETY: `raw` is still ours when fdopendir failed.
        drop(unsafe { OwnedFd::from_raw_fd(raw) });
        return Err(e);
    }
    let mut out = Vec::new();
    let result = loop {
        // SAFETY: errno is thread-local; readdir reports an error only
        // through it, so it is cleared first.
        unsafe { *libc::__errno_location() = 0 };
        // SAFETY: readdir64 on the open DIR; the entry stays valid until
        // the next readdir64 or closedir, and is copied before that.
        let ent = unsafe { libc::readdir64(dirp) };
        if ent.is_null() {
            let e = io::Error::last_os_error();
            break if e.raw_os_error().unwrap_or(0) == 0 { Ok(()) } else { Err(e) };
        }
        // SAFETY: d_name is a NUL-terminated name inside the entry.
        let (name, d_type) = unsafe { (CStr::from_ptr((*ent).d_name.as_ptr()), (*ent).d_type) };
        let bytes = name.to_bytes();
        if bytes == b"." || bytes == b".." {
            continue;
        }
        let kind = match d_type {
            libc::DT_DIR => Kind::Folder,
            libc::DT_LNK => Kind::Link,
            libc::DT_UNKNOWN => kind_at(dirp, name),
            _ => Kind::Other,
        };
        out.push((OsStr::from_bytes(bytes).to_os_string(), kind));
    };
    // SAFETY: closes the DIR (and its descriptor) once.
    unsafe { libc::closedir(dirp) };
    result.map(|()| out)
}

fn kind_at(dirp: *mut libc::DIR, name: &CStr) -> Kind {
    // SAFETY: an all-zero `stat` is a valid value to be overwritten.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstatat relative to the open DIR's descriptor, a
    // NUL-terminated name, into a `stat` we own.
    let r = unsafe { libc::fstatat(libc::dirfd(dirp), name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) };
    match (r, st.st_mode & libc::S_IFMT) {
        (0, libc::S_IFDIR) => Kind::Folder,
        (0, libc::S_IFLNK) => Kind::Link,
        _ => Kind::Other,
    }
}

/// The target of the link `rel` below `root` (its folders resolved as
/// [`Links::InRoot`]), as written; `EINVAL` when it is not a link.
pub fn read_link(root: BorrowedFd<'_>, rel: &Path) -> io::Result<OsString> {
    let fd = open(root, rel, libc::O_PATH | libc::O_NOFOLLOW, Links::InRoot)?;
    if fstat_mode(fd.as_fd())? != libc::S_IFLNK {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    link_target(fd.as_fd())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::io::Read;
    use std::os::unix::fs::symlink;

    type Opener = fn(BorrowedFd<'_>, &Path, libc::c_int, Links) -> io::Result<OwnedFd>;

    /// The kernel's way (where it has openat2) and the walk, alike.
    const BOTH: [(&str, Opener); 2] = [("open", open), ("walk", walk)];

    /// A root `r/` with a file, relative and absolute links inside it, and
    /// links that point out of it to `outside`.
    fn tree() -> (tempfile::TempDir, OwnedFd) {
        let d = tempfile::tempdir().unwrap();
        let r = d.path().join("r");
        fs::create_dir_all(r.join("sys/devices/cpu/cpu0")).unwrap();
        fs::create_dir_all(r.join("sys/node/node0")).unwrap();
        fs::write(r.join("sys/devices/cpu/cpu0/online"), "inside").unwrap();
        fs::write(d.path().join("outside"), "OUTSIDE").unwrap();
        fs::create_dir_all(r.join("tmp")).unwrap();
        fs::write(r.join("tmp/outside"), "the root's own").unwrap();
        symlink("../../devices/cpu/cpu0", r.join("sys/node/node0/cpu0")).unwrap();
        symlink("/sys/devices/cpu/cpu0/online", r.join("abs")).unwrap();
        symlink(d.path().join("outside"), r.join("out_abs")).unwrap();
        symlink("../../../../../../../../outside", r.join("sys/out_rel")).unwrap();
        symlink("loop2", r.join("loop1")).unwrap();
        symlink("loop1", r.join("loop2")).unwrap();
        let root = open_root(&r).unwrap();
        (d, root)
    }

    fn read(fd: OwnedFd) -> String {
        let mut s = String::new();
        fs::File::from(fd).read_to_string(&mut s).unwrap();
        s
    }

    fn errno(r: io::Result<OwnedFd>) -> i32 {
        r.map(|_| 0).unwrap_or_else(|e| e.raw_os_error().unwrap_or(-1))
    }

    #[test]
    fn reads_resolve_links_inside_the_root() {
        let (d, root) = tree();
        let dir = d.path().display().to_string();
        let outside = format!("{}/outside", &dir[1..]);
        for (how, f) in BOTH {
            let rd = |p: &str| f(root.as_fd(), Path::new(p), libc::O_RDONLY, Links::InRoot);
            assert_eq!(read(rd("sys/node/node0/cpu0/online").unwrap()), "inside", "{how}");
            assert_eq!(read(rd("/sys/node/node0/cpu0/../cpu0/online").unwrap()), "inside", "{how}");
            // Absolute links are the root's own paths.
            assert_eq!(read(rd("abs").unwrap()), "inside", "{how}");
            assert_eq!(read(rd("../../../tmp/outside").unwrap()), "the root's own", "{how}");
            // Links out of the root land inside it (and find nothing there).
            assert_eq!(errno(rd("out_abs")), libc::ENOENT, "{how}");
            assert_eq!(errno(rd("sys/out_rel")), libc::ENOENT, "{how}");
            assert_eq!(errno(rd(&outside)), libc::ENOENT, "{how}");
            assert_eq!(errno(rd("loop1")), libc::ELOOP, "{how}");
            assert_eq!(errno(rd("sys/devices/cpu/cpu0/online/x")), libc::ENOTDIR, "{how}");
            assert!(rd("").is_ok() && rd("sys/node/node0/cpu0").is_ok(), "{how}");
        }
    }

    #[test]
    fn writes_follow_no_link_and_stay_below() {
        let (_d, root) = tree();
        for (how, f) in BOTH {
            let wr = |p: &str| f(root.as_fd(), Path::new(p), libc::O_WRONLY, Links::Refused);
            assert!(wr("sys/devices/cpu/cpu0/online").is_ok(), "{how}");
            assert_eq!(errno(wr("sys/node/node0/cpu0/online")), libc::ELOOP, "{how}: a folder link");
            assert_eq!(errno(wr("abs")), libc::ELOOP, "{how}: the file a link");
            assert_eq!(errno(wr("out_abs")), libc::ELOOP, "{how}");
            assert!(wr("sys/../sys/devices/cpu/cpu0/online").is_ok(), "{how}");
            assert_eq!(errno(wr("sys/../../r/sys/devices/cpu/cpu0/online")), libc::EXDEV, "{how}");
            assert_eq!(errno(wr("sys/nope")), libc::ENOENT, "{how}");
        }
    }

    #[test]
    fn folders_are_made_below_without_links() {
        let (d, root) = tree();
        make_dirs(root.as_fd(), Path::new("var/lib/numakit")).unwrap();
        assert!(d.path().join("r/var/lib/numakit").is_dir());
        make_dirs(root.as_fd(), Path::new("var/lib/numakit")).unwrap();
        let away = tempfile::tempdir().unwrap();
        symlink(away.path(), d.path().join("r/var/away")).unwrap();
        let e = make_dirs(root.as_fd(), Path::new("var/away/numakit")).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ELOOP));
        assert_eq!(fs::read_dir(away.path()).unwrap().count(), 0, "nothing made out of the root");
        let e = make_dirs(root.as_fd(), Path::new("sys/devices/cpu/cpu0/online/x")).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENOTDIR));
        assert_eq!(make_dirs(root.as_fd(), Path::new("../x")).unwrap_err().raw_os_error(), Some(libc::EXDEV));
    }

    #[test]
    fn listing_says_what_entries_are() {
        let (d, root) = tree();
        let fd =
            open(root.as_fd(), Path::new("sys/node/node0"), libc::O_RDONLY | libc::O_DIRECTORY, Links::InRoot).unwrap();
        assert_eq!(list(fd).unwrap(), vec![(OsString::from("cpu0"), Kind::Link)]);
        let fd = open(root.as_fd(), Path::new("sys"), libc::O_RDONLY | libc::O_DIRECTORY, Links::InRoot).unwrap();
        let mut got = list(fd).unwrap();
        got.sort();
        let want = [("devices", Kind::Folder), ("node", Kind::Folder), ("out_rel", Kind::Link)];
        assert_eq!(got, want.map(|(n, k)| (OsString::from(n), k)));
        assert_eq!(read_link(root.as_fd(), Path::new("sys/node/node0/cpu0")).unwrap(), "../../devices/cpu/cpu0");
        let e = read_link(root.as_fd(), Path::new("sys/devices")).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EINVAL));
        drop(d);
    }
}
