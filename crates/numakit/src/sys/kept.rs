//! Kernel files read again and again, kept open: [`KeptFiles`].
//!
//! A scan that reads one small `/proc/PID` file of every process spends
//! most of its time opening it (path lookup through `/proc`, a new inode
//! and `struct file`), not in the read. Kept open and read again with
//! `pread` at offset 0, the kernel only prints the file afresh: over 1000
//! processes `/proc/PID/statm` cost 4.4 ms of CPU opened each time and
//! 1.9 ms kept open (C loop on this machine, docs/daemon.md).
//!
//! A `/proc/PID` file stays bound to the process it was opened for: once
//! that process has exited, reading fails with `ESRCH`, also when a new
//! process got the same pid. Then the file is closed and the path opened
//! once more, so a reused pid is read as the new process. Files are only
//! kept on the live system: in a dump a deleted file would still read.
//! They are opened by [`SysRoot::open`] (regular files only, resolved
//! inside a dump's root) and read up to [`MAX_FILE_BYTES`].

use std::collections::HashMap;
use std::fs::File;
use std::hash::Hash;
use std::io;
use std::os::unix::fs::FileExt;

use super::{SysError, SysRoot, MAX_FILE_BYTES};

/// Open files by key (a pid, say), at most `cap` of them.
#[derive(Debug)]
pub struct KeptFiles<K> {
    files: HashMap<K, File>,
    cap: usize,
}

impl<K: Hash + Eq + Copy> KeptFiles<K> {
    /// Keeps at most `cap` files open (0: none, every read opens anew).
    pub fn new(cap: usize) -> Self {
        Self { files: HashMap::new(), cap }
    }

    /// Files open now.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// Whether no file is open.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// Reads the file of `key` (`rel` names it below the root) into `buf`
    /// (cleared first; one `pread` of up to its capacity); `Ok(false)` if
    /// the file is missing or its process is gone.
    pub fn read(
        &mut self,
        sys: &SysRoot,
        key: K,
        rel: impl FnOnce() -> String,
        buf: &mut Vec<u8>,
    ) -> Result<bool, SysError> {
        if let Some(f) = self.files.get(&key) {
            match pread_all(f, buf) {
                Ok(true) => return Ok(true),
                Ok(false) => {
                    self.files.remove(&key);
                    return Err(sys.too_large(rel()));
                }
                // Its process exited: the pid may be a new process now.
                Err(e) if gone(&e) => {
                    self.files.remove(&key);
                }
                Err(source) => {
                    self.files.remove(&key);
                    return Err(SysError::Io { path: sys.path(rel()), source });
                }
            }
        }
        let rel = rel();
        let f = match sys.open(&rel) {
            Ok(Some(f)) => f,
            Ok(None) => return Ok(false),
            Err(SysError::Io { source, .. }) if gone(&source) => return Ok(false),
            Err(e) => return Err(e),
        };
        match pread_all(&f, buf) {
            Ok(true) => {}
            Ok(false) => return Err(sys.too_large(&rel)),
            Err(e) if gone(&e) => return Ok(false),
            Err(source) => return Err(SysError::Io { path: sys.path(&rel), source }),
        }
        if sys.is_live() && self.files.len() < self.cap {
            self.files.insert(key, f);
        }
        Ok(true)
    }

    /// Closes the files of keys for which `keep` says no.
    pub fn retain(&mut self, mut keep: impl FnMut(&K) -> bool) {
        self.files.retain(|k, _| keep(k));
    }
}

/// Reads from offset 0 until end of file into `buf`: `Ok(false)` when the
/// file holds more than [`MAX_FILE_BYTES`] (not read further).
fn pread_all(f: &File, buf: &mut Vec<u8>) -> io::Result<bool> {
    buf.clear();
    if buf.capacity() < 256 {
        buf.reserve(256);
    }
    loop {
        let len = buf.len();
        buf.resize(buf.capacity(), 0);
        let n = loop {
            match f.read_at(&mut buf[len..], len as u64) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                r => break r,
            }
        };
        match n {
            Ok(n) => {
                buf.truncate(len + n);
                if n == 0 || buf.len() < buf.capacity() {
                    return Ok(true);
                }
                if buf.len() as u64 > MAX_FILE_BYTES {
                    return Ok(false);
                }
                buf.reserve(buf.len());
            }
            Err(e) => {
                buf.truncate(len);
                return Err(e);
            }
        }
    }
}

/// The file or its process is gone (missing path, `ESRCH` of an exited
/// process).
fn gone(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::NotFound || matches!(e.raw_os_error(), Some(libc::ESRCH) | Some(libc::ENOTDIR))
}

/// How many files a process may keep open for [`KeptFiles`]: the soft
/// `RLIMIT_NOFILE` minus a reserve for everything else.
pub fn open_file_budget() -> usize {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes into the struct passed.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return 0;
    }
    (lim.rlim_cur as usize).saturating_sub(256)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn live_file_read_again_and_gone_after_exit() {
        let sys = SysRoot::live();
        let mut kept = KeptFiles::new(10);
        let mut child = std::process::Command::new("sleep").arg("30").spawn().unwrap();
        let pid = child.id() as i32;
        let mut buf = Vec::new();
        assert!(kept.read(&sys, pid, || format!("proc/{pid}/stat"), &mut buf).unwrap());
        assert!(String::from_utf8_lossy(&buf).starts_with(&format!("{pid} (sleep)")));
        assert_eq!(kept.len(), 1);
        // Read again through the kept file.
        assert!(kept.read(&sys, pid, || format!("proc/{pid}/stat"), &mut buf).unwrap());
        assert!(String::from_utf8_lossy(&buf).starts_with(&format!("{pid} (sleep) ")));
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(!kept.read(&sys, pid, || format!("proc/{pid}/stat"), &mut buf).unwrap());
        assert_eq!(kept.len(), 0);
    }

    #[test]
    fn long_file_read_whole_and_dump_files_not_kept() {
        let dir = tempfile::tempdir().unwrap();
        let text = "x".repeat(5000);
        std::fs::create_dir_all(dir.path().join("proc/7")).unwrap();
        std::fs::write(dir.path().join("proc/7/statm"), &text).unwrap();
        let sys = SysRoot::at(dir.path());
        let mut kept = KeptFiles::new(10);
        let mut buf = Vec::new();
        assert!(kept.read(&sys, 7, || "proc/7/statm".into(), &mut buf).unwrap());
        assert_eq!(buf.len(), 5000);
        assert!(kept.is_empty());
        assert!(!kept.read(&sys, 8, || "proc/8/statm".into(), &mut buf).unwrap());
    }

    #[test]
    fn cap_limits_open_files() {
        let sys = SysRoot::live();
        let mut kept = KeptFiles::new(1);
        let mut buf = Vec::new();
        let me = std::process::id() as i32;
        assert!(kept.read(&sys, 1, || format!("proc/{me}/statm"), &mut buf).unwrap());
        assert!(kept.read(&sys, 2, || format!("proc/{me}/stat"), &mut buf).unwrap());
        assert_eq!(kept.len(), 1);
        kept.retain(|k| *k != 1);
        assert!(kept.is_empty());
    }
}
