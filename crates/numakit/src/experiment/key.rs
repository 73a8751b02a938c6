//! Reading an experiment's secret key (`key=FILE`): the file's bytes as
//! they are (a trailing newline included), at least [`MIN_KEY_BYTES`].
//! Made with `head -c 32 /dev/urandom > FILE; chmod 600 FILE`.
//!
//! Where jobs start as root (Slurm's slurmstepd, the daemon) the key must
//! be private: owned by the reader, no access for group or others, or the
//! users who could read it could compute their jobs' arms. The wrappers of
//! HTCondor, LSF and PBS run as the job's user and read it as it is
//! (docs/batch.md says what that means). Bounded: a regular file of at
//! most [`MAX_KEY_BYTES`], opened without following a link at the end and
//! without blocking on a FIFO.

use std::os::unix::fs::MetadataExt as _;
use std::path::Path;

/// The shortest key accepted (128 bits).
pub const MIN_KEY_BYTES: u64 = 16;
/// The longest key file read.
pub const MAX_KEY_BYTES: u64 = 4096;

/// The key in `path`, or why it cannot be used (one line naming the file
/// as given, [`crate::text::path`]). Read by [`crate::files::read_with_metadata`]'s
/// rules, a link at the end not followed. With `private`, a file others
/// may read, or owned by another user, is refused (judged on the
/// descriptor read).
pub fn read_key(path: &Path, private: bool) -> Result<Vec<u8>, String> {
    let (bytes, m) = crate::files::read_with_metadata(path, MAX_KEY_BYTES, false).map_err(|e| format!("key {e}"))?;
    let name = crate::text::path(path);
    if !(MIN_KEY_BYTES..=MAX_KEY_BYTES).contains(&(bytes.len() as u64)) {
        return Err(format!("key {name}: {} bytes: give {MIN_KEY_BYTES} to {MAX_KEY_BYTES}", bytes.len()));
    }
    if private {
        // SAFETY: geteuid has no preconditions.
        let me = unsafe { libc::geteuid() };
        if m.uid() != me || m.mode() & 0o077 != 0 {
            return Err(format!(
                "key {name}: owner {} mode {:04o}: it must be private to user {me} (chmod 600), or users could compute their jobs' arms",
                m.uid(),
                m.mode() & 0o7777
            ));
        }
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    #[test]
    fn a_private_key_reads_others_are_refused_by_name() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("experiment.key");
        std::fs::write(&p, b"0123456789abcdef\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(read_key(&p, true).unwrap(), b"0123456789abcdef\n");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = read_key(&p, true).unwrap_err();
        assert!(e.contains("experiment.key") && e.contains("mode 0644") && !e.contains('\n'), "{e}");
        assert_eq!(read_key(&p, false).unwrap().len(), 17, "the wrappers read a shared key");
        std::fs::write(&p, b"short").unwrap();
        assert!(read_key(&p, false).unwrap_err().contains("5 bytes"));
        std::fs::write(&p, vec![b'k'; 5000]).unwrap();
        let e = read_key(&p, false).unwrap_err();
        assert!(e.ends_with("experiment.key: larger than 4 KiB, the most numakit reads of it"), "{e}");
        assert!(read_key(&d.path().join("missing"), false).unwrap_err().starts_with("key "));
        assert!(read_key(d.path(), false).unwrap_err().contains("not a regular file"));
        let link = d.path().join("link");
        std::os::unix::fs::symlink(&p, &link).unwrap();
        let e = read_key(&link, false).unwrap_err();
        assert!(
            e.ends_with("/link: not a regular file (a symbolic link)"),
            "a link at the end is refused, said so: {e}"
        );
        let odd = d.path().join("k\x1b]0;x\x07");
        let e = read_key(&odd, false).unwrap_err();
        assert!(!e.contains('\x1b') && !e.contains('\x07') && e.contains("k\\u{1b}]0;x\\u{7}"), "escaped: {e}");
        let fifo = d.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(read_key(&fifo, false).unwrap_err().contains("not a regular file"), "no wait on a FIFO");
    }
}
