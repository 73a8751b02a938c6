//! The one way numakit reads `/sys` and `/proc`: [`SysRoot`], a reader
//! relative to a root folder (`/` on a live system, a dump of a real
//! machine in tests, like hwloc's `HWLOC_FSROOT`).
//!
//! It owns the quirks of kernel files: text ending in `"\n\0"`, empty files,
//! files the kernel may omit (missing is `Ok(None)`, never an error) and
//! files that cannot be read (an error naming the file). It never decides
//! anything and never writes.
//!
//! It also holds against a hostile root (a crafted dump): only regular
//! files are read (a FIFO would hang the reader, a link to `/dev/zero`
//! would read until memory runs out), at most [`MAX_FILE_BYTES`] of each,
//! and values quoted in errors are one bounded line ([`crate::text`]).
//! Below a dump every path is resolved inside the dump
//! ([`crate::beneath`], `RESOLVE_IN_ROOT`): its own links (sysfs is full of
//! them) are followed as the machine it came from would, an absolute link
//! means the dump's own path, and nothing leads out of it. The live root
//! (`/`) is opened by plain paths: everything is below `/` already, and the
//! launch path pays no extra system call.

pub mod interrupts;
pub mod kept;
pub mod kernel;
#[cfg(test)]
pub(crate) mod proptests;
pub mod stat;

use std::fs;
use std::io::{self, Read};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use crate::beneath::{self, Links};
use crate::sets::{IdSet, Kind};
use crate::text::{one_line, quote, QUOTE_MAX_CHARS};

/// The most read of one file: far above any kernel file numakit reads
/// (the `numa_maps` of a process with a million mappings is ~100 MiB,
/// which numakit would not want in memory at once either).
pub const MAX_FILE_BYTES: u64 = 64 << 20;

/// Environment variable that selects another root (like `--sysroot`).
pub const SYSROOT_ENV: &str = "NUMAKIT_SYSROOT";

/// A failure to read or understand a kernel file.
#[derive(Debug, thiserror::Error)]
pub enum SysError {
    /// The file exists but could not be read.
    #[error("cannot read {}: {source}", crate::text::path(path))]
    Io {
        /// Full path of the file.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
    /// The file was read but its content is not what the kernel writes.
    #[error("{}: {problem}", crate::text::path(path))]
    Invalid {
        /// Full path of the file.
        path: PathBuf,
        /// What is wrong, quoting the bad value.
        problem: String,
    },
    /// The root is not a Linux file-system root.
    #[error("{} is not a Linux system root: {problem}", crate::text::path(root))]
    NotARoot {
        /// The root given.
        root: PathBuf,
        /// What is missing.
        problem: String,
    },
}

/// Reader of kernel files below a root folder.
#[derive(Debug, Clone)]
pub struct SysRoot {
    root: PathBuf,
    /// Below a dump: the root folder, opened at the first read (or the
    /// errno of that open), that every path is resolved in.
    dir: Option<Arc<OnceLock<Result<OwnedFd, i32>>>>,
}

impl Default for SysRoot {
    fn default() -> Self {
        Self::live()
    }
}

impl SysRoot {
    /// The running system (`/`).
    pub fn live() -> Self {
        Self { root: PathBuf::from("/"), dir: None }
    }

    /// The root named by `NUMAKIT_SYSROOT`, else the live system.
    pub fn from_env() -> Self {
        match std::env::var_os(SYSROOT_ENV) {
            Some(v) if !v.is_empty() => Self::at(PathBuf::from(v)),
            _ => Self::live(),
        }
    }

    /// A root folder holding `sys/` and `proc/` (a dump). The folder is not
    /// checked here; see [`SysRoot::check`].
    pub fn at(root: impl Into<PathBuf>) -> Self {
        let root = root.into();
        let dir = (root != Path::new("/")).then(|| Arc::new(OnceLock::new()));
        Self { root, dir }
    }

    /// The root folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Whether this is the running system (so placement may act on it).
    pub fn is_live(&self) -> bool {
        self.root == Path::new("/")
    }

    /// Fails with a clear message unless the root looks like a Linux root
    /// (a `sys/devices/system/cpu` folder): what is there instead when the
    /// root is no folder (nothing, a file, a link that loops).
    pub fn check(&self) -> Result<(), SysError> {
        let not_a_root = |problem: String| SysError::NotARoot { root: self.root.clone(), problem };
        match fs::metadata(&self.root) {
            Ok(m) if m.is_dir() => {}
            Ok(m) if m.is_file() => return Err(not_a_root("it is a file, not a folder".into())),
            Ok(m) => return Err(not_a_root(format!("it is {}, not a folder", crate::files::kind_of(&m.file_type())))),
            Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
                return Err(not_a_root("it is a symbolic link that leads to itself (a loop)".into()))
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(not_a_root("no such folder".into())),
            Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => {
                return Err(not_a_root("a part of the path is a file, not a folder".into()))
            }
            Err(e) => return Err(not_a_root(format!("cannot open it: {e}"))),
        }
        let cpu_dir = match &self.dir {
            None => self.path("sys/devices/system/cpu").is_dir(),
            Some(_) => self.open_fd("sys/devices/system/cpu", libc::O_PATH | libc::O_DIRECTORY).is_ok(),
        };
        if !cpu_dir {
            return Err(SysError::NotARoot {
                root: self.root.clone(),
                problem: "it has no sys/devices/system/cpu folder".into(),
            });
        }
        Ok(())
    }

    /// Full path of `rel` (a path like `sys/devices/system/node/online`).
    pub fn path(&self, rel: impl AsRef<Path>) -> PathBuf {
        let rel = rel.as_ref();
        let rel = rel.strip_prefix("/").unwrap_or(rel);
        self.root.join(rel)
    }

    /// Opens `rel` with `flags` (`O_CLOEXEC` added): by its path on the
    /// live root, resolved inside the root below a dump.
    fn open_fd(&self, rel: impl AsRef<Path>, flags: libc::c_int) -> io::Result<OwnedFd> {
        match self.dump_root() {
            None => {
                let f = fs::OpenOptions::new().read(true).custom_flags(flags).open(self.path(rel))?;
                Ok(OwnedFd::from(f))
            }
            Some(root) => beneath::open(root?, rel.as_ref(), flags, Links::InRoot),
        }
    }

    /// Below a dump, the root folder that paths are resolved in (opened
    /// at the first call); `None` on the live root.
    fn dump_root(&self) -> Option<io::Result<BorrowedFd<'_>>> {
        let dir = self.dir.as_ref()?;
        let opened =
            dir.get_or_init(|| beneath::open_root(&self.root).map_err(|e| e.raw_os_error().unwrap_or(libc::EIO)));
        Some(match opened {
            Ok(fd) => Ok(fd.as_fd()),
            Err(errno) => Err(io::Error::from_raw_os_error(*errno)),
        })
    }

    /// Opens the regular file `rel` for reading; `Ok(None)` if it (or a
    /// folder on its path) does not exist. Anything but a regular file is
    /// [`SysError::Invalid`]; opening never waits (a FIFO is opened with
    /// `O_NONBLOCK`, then refused by its type); reading a regular file
    /// does (the flag is taken off again).
    pub fn open(&self, rel: impl AsRef<Path>) -> Result<Option<fs::File>, SysError> {
        Ok(self.open_sized(rel.as_ref())?.map(|(f, _)| f))
    }

    /// [`SysRoot::open`] with the size the file says it has (0 for most
    /// kernel files, which are made as they are read).
    fn open_sized(&self, rel: &Path) -> Result<Option<(fs::File, u64)>, SysError> {
        let io = |source| SysError::Io { path: self.path(rel), source };
        let file = match self.open_fd(rel, libc::O_RDONLY | libc::O_NONBLOCK) {
            Ok(f) => fs::File::from(f),
            Err(e) if is_missing(&e) => return Ok(None),
            Err(source) => return Err(io(source)),
        };
        let meta = file.metadata().map_err(io)?;
        if !meta.is_file() {
            let kind = crate::files::kind_of(&meta.file_type());
            return Err(self.invalid(rel, format!("not a regular file ({kind})")));
        }
        crate::files::blocking(&file).map_err(io)?;
        Ok(Some((file, meta.len())))
    }

    /// The bytes of the regular file `rel` ([`SysRoot::open`]), at most
    /// [`MAX_FILE_BYTES`] (a larger file is [`SysError::Invalid`], refused
    /// unread when it says its size).
    pub fn read_bytes(&self, rel: impl AsRef<Path>) -> Result<Option<Vec<u8>>, SysError> {
        let rel = rel.as_ref();
        let Some((file, size)) = self.open_sized(rel)? else { return Ok(None) };
        if size > MAX_FILE_BYTES {
            return Err(self.too_large(rel));
        }
        // A page up front: sysfs files fit in one, so one read and the
        // one that finds the end (an empty Vec probes 32 bytes at a time).
        let mut bytes = Vec::with_capacity(4096);
        file.take(MAX_FILE_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|source| SysError::Io { path: self.path(rel), source })?;
        if bytes.len() as u64 > MAX_FILE_BYTES {
            return Err(self.too_large(rel));
        }
        Ok(Some(bytes))
    }

    /// The error for a file above [`MAX_FILE_BYTES`].
    pub fn too_large(&self, rel: impl AsRef<Path>) -> SysError {
        self.invalid(rel, format!("larger than {} MiB", MAX_FILE_BYTES >> 20))
    }

    /// Reads a whole file as text, without trailing whitespace and NULs.
    /// `Ok(None)` if the file (or a folder on its path) does not exist.
    /// Only regular files are read (anything else is
    /// [`SysError::Invalid`]), and at most [`MAX_FILE_BYTES`] of them.
    pub fn read(&self, rel: impl AsRef<Path>) -> Result<Option<String>, SysError> {
        let Some(bytes) = self.read_bytes(rel)? else { return Ok(None) };
        let text = String::from_utf8_lossy(&bytes);
        Ok(Some(text.trim_end_matches(|c: char| c.is_whitespace() || c == '\0').to_string()))
    }

    /// Reads a `/proc/PID` file as text as it is (not trimmed), with the
    /// checks of [`SysRoot::read`], in reads of `capacity` bytes and more.
    /// The kernel generates `numa_maps` per `read()` call, taking the
    /// process's mmap lock and looking its mappings up again each time; a
    /// buffer sized for the file up front takes 2 `read()` calls per
    /// process where growing from a small probe took about 15 (about 40%
    /// more kernel time over 1000 processes than numastat's 4 KiB reads).
    /// `Ok(None)` if the file is missing, or goes missing while read (its
    /// process exited).
    pub fn read_proc_file(&self, rel: impl AsRef<Path>, capacity: usize) -> Result<Option<String>, SysError> {
        let rel = rel.as_ref();
        let Some((mut file, size)) = self.open_sized(rel)? else { return Ok(None) };
        if size > MAX_FILE_BYTES {
            return Err(self.too_large(rel));
        }
        // Plain read() calls into a sized buffer: no seek first (the size
        // of a /proc file is 0), no small probe reads.
        let mut bytes = vec![0u8; capacity.clamp(64, MAX_FILE_BYTES as usize + 1)];
        let mut len = 0;
        loop {
            if len == bytes.len() {
                if len as u64 > MAX_FILE_BYTES {
                    return Err(self.too_large(rel));
                }
                bytes.resize((bytes.len() * 2).min(MAX_FILE_BYTES as usize + 1), 0);
            }
            match file.read(&mut bytes[len..]) {
                Ok(0) => break,
                Ok(n) => len += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if is_missing(&e) => return Ok(None),
                Err(source) => return Err(SysError::Io { path: self.path(rel), source }),
            }
        }
        bytes.truncate(len);
        Ok(Some(match String::from_utf8(bytes) {
            Ok(t) => t,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        }))
    }

    /// Like [`SysRoot::read`], treating an empty file as missing.
    pub fn read_nonempty(&self, rel: impl AsRef<Path>) -> Result<Option<String>, SysError> {
        Ok(self.read(rel)?.filter(|s| !s.is_empty()))
    }

    /// Reads a file holding one integer (decimal, or hex with `0x`).
    pub fn read_u64(&self, rel: impl AsRef<Path>) -> Result<Option<u64>, SysError> {
        let rel = rel.as_ref();
        match self.read_nonempty(rel)? {
            None => Ok(None),
            Some(t) => {
                parse_u64(&t).map(Some).ok_or_else(|| self.invalid(rel, format!("{} is not a number", quote(&t))))
            }
        }
    }

    /// Reads a file holding one signed integer (like `numa_node`, `-1`).
    pub fn read_i64(&self, rel: impl AsRef<Path>) -> Result<Option<i64>, SysError> {
        let rel = rel.as_ref();
        match self.read_nonempty(rel)? {
            None => Ok(None),
            Some(t) => {
                t.trim().parse().map(Some).map_err(|_| self.invalid(rel, format!("{} is not a number", quote(&t))))
            }
        }
    }

    /// Reads a file in the kernel list syntax (`cpulist`, `online`, ...).
    /// An empty file is the empty set.
    pub fn read_list<K: Kind>(&self, rel: impl AsRef<Path>) -> Result<Option<IdSet<K>>, SysError> {
        let rel = rel.as_ref();
        match self.read(rel)? {
            None => Ok(None),
            Some(t) => IdSet::parse_list(&t).map(Some).map_err(|e| self.invalid(rel, e.to_string())),
        }
    }

    /// Reads a file holding a hex mask (`cpumap`, `shared_cpu_map`).
    /// An empty file is the empty set.
    pub fn read_mask<K: Kind>(&self, rel: impl AsRef<Path>) -> Result<Option<IdSet<K>>, SysError> {
        let rel = rel.as_ref();
        match self.read(rel)? {
            None => Ok(None),
            Some(t) if t.is_empty() => Ok(Some(IdSet::new())),
            Some(t) => IdSet::parse_mask(&t).map(Some).map_err(|e| self.invalid(rel, e.to_string())),
        }
    }

    /// Reads the list file `list_rel`, or the mask file `mask_rel` when the
    /// list is missing (older kernels and some dumps only have masks).
    pub fn read_list_or_mask<K: Kind>(
        &self,
        list_rel: impl AsRef<Path>,
        mask_rel: impl AsRef<Path>,
    ) -> Result<Option<IdSet<K>>, SysError> {
        match self.read_list(list_rel)? {
            Some(s) => Ok(Some(s)),
            None => self.read_mask(mask_rel),
        }
    }

    /// Names in a folder, sorted; `Ok(None)` if the folder is missing.
    pub fn list_dir(&self, rel: impl AsRef<Path>) -> Result<Option<Vec<String>>, SysError> {
        self.list_where(rel, false)
    }

    /// Names of the folders in a folder (links not followed), sorted;
    /// `Ok(None)` if the folder is missing. The entry type comes with the
    /// listing (`d_type`), so no file is opened or stat'ed per entry: a
    /// cgroup folder holds dozens of control files beside its children.
    pub fn list_dirs(&self, rel: impl AsRef<Path>) -> Result<Option<Vec<String>>, SysError> {
        self.list_where(rel, true)
    }

    /// The names of a folder's entries (only its folders with
    /// `folders_only`), sorted.
    fn list_where(&self, rel: impl AsRef<Path>, folders_only: bool) -> Result<Option<Vec<String>>, SysError> {
        let rel = rel.as_ref();
        let io = |source| SysError::Io { path: self.path(rel), source };
        let mut names = Vec::new();
        if self.dir.is_some() {
            let fd = match self.open_fd(rel, libc::O_RDONLY | libc::O_DIRECTORY) {
                Ok(fd) => fd,
                Err(e) if is_missing(&e) => return Ok(None),
                Err(source) => return Err(io(source)),
            };
            for (name, kind) in beneath::list(fd).map_err(io)? {
                if !folders_only || kind == beneath::Kind::Folder {
                    names.push(name.to_string_lossy().into_owned());
                }
            }
        } else {
            let rd = match fs::read_dir(self.path(rel)) {
                Ok(rd) => rd,
                Err(e) if is_missing(&e) => return Ok(None),
                Err(source) => return Err(io(source)),
            };
            for entry in rd {
                let entry = entry.map_err(io)?;
                if !folders_only || entry.file_type().is_ok_and(|t| t.is_dir()) {
                    names.push(entry.file_name().to_string_lossy().into_owned());
                }
            }
        }
        names.sort();
        Ok(Some(names))
    }

    /// Ids of entries named `PREFIX<number>` in a folder (`node0`, `cpu12`,
    /// `index3`), sorted numerically; empty if the folder is missing.
    pub fn numbered_entries(&self, rel: impl AsRef<Path>, prefix: &str) -> Result<Vec<u32>, SysError> {
        let mut ids: Vec<u32> = self
            .list_dir(rel)?
            .unwrap_or_default()
            .iter()
            .filter_map(|n| n.strip_prefix(prefix))
            .filter(|rest| !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit()))
            .filter_map(|rest| rest.parse().ok())
            .collect();
        ids.sort_unstable();
        Ok(ids)
    }

    /// Target of a symbolic link, as written (relative or absolute):
    /// `/proc/PID/cwd`, a device's `driver`. `Ok(None)` if `rel` is missing
    /// or not a link. Bounded: Linux keeps a link's target within a page
    /// (`PATH_MAX`, 4096 bytes), and `/proc`'s links fail beyond it.
    pub fn read_link(&self, rel: impl AsRef<Path>) -> Result<Option<PathBuf>, SysError> {
        let rel = rel.as_ref();
        let found = match self.dump_root() {
            None => fs::read_link(self.path(rel)),
            Some(root) => root.and_then(|root| beneath::read_link(root, rel)).map(PathBuf::from),
        };
        match found {
            Ok(t) => Ok(Some(t)),
            Err(e) if is_missing(&e) || e.kind() == io::ErrorKind::InvalidInput => Ok(None),
            Err(source) => Err(SysError::Io { path: self.path(rel), source }),
        }
    }

    /// The owner (uid) of `rel`, its link followed (`/proc/PID`: the
    /// process's effective user); `None` if it is missing or unreadable.
    pub fn owner_uid(&self, rel: impl AsRef<Path>) -> Option<u32> {
        use std::os::unix::fs::MetadataExt;
        self.metadata(rel).map(|m| m.uid())
    }

    /// Whether `rel` exists (file, folder or link).
    pub fn exists(&self, rel: impl AsRef<Path>) -> bool {
        match &self.dir {
            None => self.path(rel).symlink_metadata().is_ok(),
            Some(_) => self.open_fd(rel, libc::O_PATH | libc::O_NOFOLLOW).is_ok(),
        }
    }

    /// The metadata of `rel` (links followed, inside the root); `None` if
    /// it does not exist or cannot be looked at.
    pub fn metadata(&self, rel: impl AsRef<Path>) -> Option<fs::Metadata> {
        match &self.dir {
            None => fs::metadata(self.path(rel)).ok(),
            Some(_) => self.open_fd(rel, libc::O_PATH).ok().and_then(|fd| fs::File::from(fd).metadata().ok()),
        }
    }

    /// Reads a `meminfo` file (`/proc/meminfo` or a node's) as
    /// [`parse_kv_lines`] pairs, refusing what the kernel cannot write: a
    /// unit other than kB, and `MemFree` above `MemTotal`.
    pub fn read_meminfo(&self, rel: impl AsRef<Path>) -> Result<Option<Vec<(String, u64)>>, SysError> {
        let rel = rel.as_ref();
        let Some(text) = self.read(rel)? else { return Ok(None) };
        let kv = parse_kv_lines(&text).map_err(|problem| self.invalid(rel, problem))?;
        let get = |k: &str| kv.iter().find(|(key, _)| key == k).map(|(_, v)| *v);
        if let (Some(total), Some(free)) = (get("MemTotal"), get("MemFree")) {
            if free > total {
                return Err(self.invalid(rel, format!("MemFree ({free} bytes) is more than MemTotal ({total} bytes)")));
            }
        }
        Ok(Some(kv))
    }

    /// An [`SysError::Invalid`] for `rel`.
    /// The problem is made one bounded line ([`crate::text::one_line`]):
    /// it may quote what a crafted file holds.
    pub fn invalid(&self, rel: impl AsRef<Path>, problem: impl Into<String>) -> SysError {
        SysError::Invalid { path: self.path(rel), problem: one_line(&problem.into(), 4 * QUOTE_MAX_CHARS) }
    }
}

fn is_missing(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::NotFound || e.raw_os_error() == Some(libc::ENOTDIR)
}

/// Parses a decimal or `0x` hex integer.
pub fn parse_u64(t: &str) -> Option<u64> {
    let t = t.trim();
    match t.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => t.parse().ok(),
    }
}

/// The value after `key` (given with its colon, `"Groups:"`) on the first
/// line that starts with it, untrimmed: the one way numakit finds a line
/// of `/proc/PID/status`. `None` when no line does.
pub fn status_field<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.lines().find_map(|l| l.strip_prefix(key))
}

/// Parses `Key: value [kB]` lines (`/proc/meminfo`, node `meminfo` whose
/// lines start with `Node N `, `/proc/PID/status`) into (key, number)
/// pairs; values with a `kB` unit are returned in bytes. Lines without a
/// number are skipped; a number with another unit, or one whose bytes do
/// not fit 64 bits, is an error quoting the line (never read as bytes).
pub fn parse_kv_lines(text: &str) -> Result<Vec<(String, u64)>, String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let trimmed = line.trim_start();
        // Node meminfo: "Node 0 MemTotal:  123 kB"
        let l = match trimmed.strip_prefix("Node ") {
            Some(rest) => rest.split_once(' ').map_or(rest, |(_, r)| r),
            None => trimmed,
        };
        let Some((key, val)) = l.split_once(':') else { continue };
        let mut parts = val.split_whitespace();
        let Some(num) = parts.next().and_then(parse_u64) else { continue };
        let bytes = match parts.next() {
            Some("kB") => num.checked_mul(1024).ok_or_else(|| format!("{} does not fit 64 bits", quote(line)))?,
            None => num,
            Some(unit) => return Err(format!("{}: unit {} is not the kernel's kB", quote(line), quote(unit))),
        };
        out.push((key.trim().to_string(), bytes));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sets::CpuSet;

    fn root_with(files: &[(&str, &[u8])]) -> (tempfile::TempDir, SysRoot) {
        let d = tempfile::tempdir().expect("tempdir");
        for (rel, content) in files {
            let p = d.path().join(rel);
            fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            fs::write(p, content).expect("write");
        }
        let r = SysRoot::at(d.path());
        (d, r)
    }

    #[test]
    fn trailing_newline_and_nul_are_stripped() {
        let (_d, r) = root_with(&[("sys/a", b"0-3\n\0"), ("sys/e", b""), ("sys/m", b"0000000f\n\0")]);
        assert_eq!(r.read("sys/a").expect("read").as_deref(), Some("0-3"));
        assert_eq!(r.read_list::<crate::sets::Cpu>("sys/a").expect("l"), Some(CpuSet::first_n(4)));
        assert_eq!(r.read_mask::<crate::sets::Cpu>("sys/m").expect("m"), Some(CpuSet::first_n(4)));
        assert_eq!(r.read("sys/e").expect("read").as_deref(), Some(""));
        assert_eq!(r.read_nonempty("sys/e").expect("read"), None);
        assert_eq!(r.read_list::<crate::sets::Cpu>("sys/e").expect("l"), Some(CpuSet::new()));
    }

    #[test]
    fn missing_is_none_not_error() {
        let (_d, r) = root_with(&[("sys/a", b"1")]);
        assert_eq!(r.read("sys/none").expect("ok"), None);
        assert_eq!(r.read("sys/a/under_a_file").expect("ok"), None);
        assert_eq!(r.list_dir("sys/nodir").expect("ok"), None);
        assert!(r.numbered_entries("sys/nodir", "node").expect("ok").is_empty());
    }

    #[test]
    fn only_regular_files_are_read() {
        let (d, r) = root_with(&[("sys/dir/x", b"1")]);
        let e = r.read("sys/dir").unwrap_err().to_string();
        assert!(e.contains("sys/dir: not a regular file (a folder)"), "{e}");
        // A FIFO would hang a plain read (no writer ever comes).
        let fifo = d.path().join("sys/fifo");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).expect("path");
        // SAFETY: mkfifo with a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = r.read("sys/fifo").unwrap_err().to_string();
        assert!(e.ends_with("sys/fifo: not a regular file (a FIFO)"), "{e}");
        // /dev/zero would read until memory runs out. (A dump's link to
        // it means the dump's own dev/zero: missing here.)
        let e = SysRoot::live().read_list::<crate::sets::Cpu>("dev/zero").unwrap_err().to_string();
        assert_eq!(e, "/dev/zero: not a regular file (a character device)");
        std::os::unix::fs::symlink("/dev/zero", d.path().join("sys/zero")).expect("link");
        assert_eq!(r.read("sys/zero").expect("read"), None);
    }

    #[test]
    fn files_beyond_the_limit_are_refused() {
        let (d, r) = root_with(&[("sys/big", b"")]);
        let f = fs::File::options().write(true).open(d.path().join("sys/big")).expect("open");
        f.set_len(MAX_FILE_BYTES + 1).expect("sparse file");
        let e = r.read("sys/big").unwrap_err().to_string();
        assert!(e.ends_with("sys/big: larger than 64 MiB"), "{e}");
    }

    #[test]
    fn quoted_values_are_one_bounded_line() {
        let evil = format!("{}\n", "\x1b]0;pwned\x07\n".repeat(100_000));
        let (_d, r) = root_with(&[("sys/n", evil.as_bytes()), ("sys/m", evil.as_bytes())]);
        for e in [r.read_u64("sys/n").unwrap_err(), r.read_mask::<crate::sets::Cpu>("sys/m").unwrap_err()] {
            let e = e.to_string();
            assert!(e.len() < 800, "{} bytes", e.len());
            assert!(!e.contains('\n') && !e.contains('\x1b') && !e.contains('\x07'), "{e}");
            assert!(e.contains("\\u{1b}]0;pwned"), "{e}");
        }
    }

    #[test]
    fn invalid_content_names_file_and_value() {
        let (_d, r) = root_with(&[("sys/n", b"abc\n"), ("sys/l", b"3-1\n")]);
        let e = r.read_u64("sys/n").unwrap_err().to_string();
        assert!(e.contains("sys/n") && e.contains("\"abc\""), "{e}");
        let e = r.read_list::<crate::sets::Cpu>("sys/l").unwrap_err().to_string();
        assert!(e.contains("sys/l") && e.contains("backwards"), "{e}");
    }

    #[test]
    fn list_dirs_keeps_folders_only() {
        let (d, r) = root_with(&[("sys/cg/a/cgroup.procs", b""), ("sys/cg/b/x", b""), ("sys/cg/memory.stat", b"")]);
        std::os::unix::fs::symlink(d.path().join("sys/cg/a"), d.path().join("sys/cg/link")).expect("link");
        assert_eq!(r.list_dirs("sys/cg").expect("ok"), Some(vec!["a".to_string(), "b".to_string()]));
        assert_eq!(r.list_dirs("sys/none").expect("ok"), None);
        assert_eq!(r.list_dirs("sys/cg/memory.stat").expect("ok"), None);
    }

    #[test]
    fn numbered_entries_sorted_numerically() {
        let (_d, r) = root_with(&[
            ("sys/node/node10/x", b""),
            ("sys/node/node2/x", b""),
            ("sys/node/node0/x", b""),
            ("sys/node/nodefoo/x", b""),
            ("sys/node/possible", b""),
        ]);
        assert_eq!(r.numbered_entries("sys/node", "node").expect("ok"), vec![0, 2, 10]);
    }

    #[test]
    fn check_rejects_non_roots() {
        let (d, r) = root_with(&[("etc/x", b"")]);
        let e = r.check().unwrap_err().to_string();
        assert!(e.contains("not a Linux system root") && e.contains("sys/devices/system/cpu"), "{e}");
        let missing = SysRoot::at(d.path().join("nope"));
        assert!(missing.check().unwrap_err().to_string().ends_with("no such folder"));
    }

    #[test]
    fn check_says_what_the_root_is_instead() {
        let d = tempfile::tempdir().expect("tempdir");
        fs::write(d.path().join("file"), "x").expect("write");
        std::os::unix::fs::symlink("loop", d.path().join("loop")).expect("link");
        let e = SysRoot::at(d.path().join("file")).check().unwrap_err().to_string();
        assert!(e.ends_with("/file is not a Linux system root: it is a file, not a folder"), "{e}");
        let e = SysRoot::at(d.path().join("loop")).check().unwrap_err().to_string();
        assert!(
            e.ends_with("/loop is not a Linux system root: it is a symbolic link that leads to itself (a loop)"),
            "{e}"
        );
        let e = SysRoot::at(d.path().join("file/sub")).check().unwrap_err().to_string();
        assert!(e.contains("a part of the path is a file"), "{e}");
    }

    /// A dump's links are followed inside the dump, never out of it: the
    /// node's CPU link as sysfs has it, an absolute link meaning the dump's
    /// own path, and links out of it (to a secret beside it, to /dev/zero)
    /// finding nothing.
    #[test]
    fn dump_links_resolve_inside_the_dump() {
        let (d, r) = root_with(&[
            ("sys/devices/system/cpu/cpu0/topology/core_id", b"7\n"),
            ("sys/devices/system/node/node0/cpulist", b"0\n"),
            ("dev/zero", b"the dump's own\n"),
        ]);
        fs::write(d.path().join("../secret-beside-the-dump"), "secret").ok();
        let link = |target: &str, at: &str| std::os::unix::fs::symlink(target, d.path().join(at)).expect("link");
        link("../../cpu/cpu0", "sys/devices/system/node/node0/cpu0");
        link("/dev/zero", "sys/zero");
        link("../../../../../../../../../../etc/hostname", "sys/hostname");
        link(&format!("{}/../secret-beside-the-dump", d.path().display()), "sys/secret");
        assert_eq!(r.read_u64("sys/devices/system/node/node0/cpu0/topology/core_id").expect("read"), Some(7));
        assert_eq!(r.read("sys/zero").expect("read").as_deref(), Some("the dump's own"));
        assert_eq!(r.read("sys/hostname").expect("read"), None);
        assert_eq!(r.read("sys/secret").expect("read"), None);
        assert!(r.exists("sys/zero") && r.exists("sys/secret") && !r.exists("sys/secret/x"));
        assert_eq!(r.read_link("sys/zero").expect("link"), Some(PathBuf::from("/dev/zero")));
        assert_eq!(
            r.list_dir("sys/devices/system/node/node0/cpu0/topology").expect("ls"),
            Some(vec!["core_id".to_string()])
        );
        assert_eq!(r.list_dirs("sys/devices/system/node/node0").expect("ls"), Some(vec![]));
        assert!(r.metadata("sys/devices/system/node/node0/cpu0").is_some_and(|m| m.is_dir()));
        let _ = fs::remove_file(d.path().join("../secret-beside-the-dump"));
    }

    #[test]
    fn kv_lines() {
        let kv = parse_kv_lines("Node 0 MemTotal:       8386704 kB\nNode 0 HugePages_Total:     3\nbad line\n");
        assert_eq!(kv, Ok(vec![("MemTotal".to_string(), 8386704 * 1024), ("HugePages_Total".to_string(), 3)]));
        let kv = parse_kv_lines("MemFree:  12 kB\n");
        assert_eq!(kv, Ok(vec![("MemFree".to_string(), 12 * 1024)]));
        let e = parse_kv_lines("Node 1 MemFree:  12 MB\n").unwrap_err();
        assert!(e.contains("unit \"MB\" is not the kernel's kB"), "{e}");
        assert!(parse_kv_lines("MemTotal: 18446744073709551615 kB\n").unwrap_err().contains("does not fit"));
    }
}
