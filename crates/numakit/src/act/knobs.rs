//! Writes of kernel tunables: [`write_value`] puts one value into one file
//! under `/proc/sys` or `/sys`, or an IRQ's `/proc/irq/N/smp_affinity_list`,
//! relative to a [`SysRoot`] (the live `/`, or a temporary folder in tests),
//! and records the change.
//!
//! This is the only code in numakit that writes a kernel knob. It does not
//! read knobs, validate values or decide anything: `tune` (feature `tune`) checks
//! every value against what the kernel accepts, saves the previous values
//! and rolls back. What the kernel refuses comes back unchanged as an
//! [`ActError::Sys`] naming the step (`open` or `write`) and the errno.
//!
//! A write stays below its root and follows no link
//! ([`crate::beneath`], `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`): a crafted
//! dump whose knob file is a link cannot make numakit, run as root,
//! overwrite a file elsewhere. Only a regular file is written (kernel knob
//! files are regular files).

use std::fs::File;
use std::io::Write as _;
use std::os::fd::AsFd;
use std::path::{Component, Path};

use super::{log, ActError, Result};
use crate::beneath::{self, Links};
use crate::sys::SysRoot;

/// Writes `value` (without a newline) to the knob file `rel` below `sys`'s
/// root, e.g. `proc/sys/kernel/numa_balancing`, and records the change as
/// `write /proc/sys/kernel/numa_balancing: 0`.
///
/// `rel` must lie under `proc/sys/` or `sys/`, or be
/// `proc/irq/N/smp_affinity_list`, and may not contain `..`
/// ([`ActError::Invalid`] otherwise, nothing written). The file must exist
/// (it is never created), be a regular file, and be reached from the root
/// without a symbolic link (the file itself no link either): otherwise
/// [`ActError::Invalid`] and nothing is written. It is opened with
/// `O_TRUNC`, like the shell's `echo 0 > FILE`: the kernel ignores the
/// truncation, and a plain file in a test root ends up holding exactly
/// `value`. The value goes out in one `write(2)`, as sysfs requires.
///
/// ```
/// use numakit::act::knobs::write_value;
/// use numakit::sys::SysRoot;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let dir = tempfile::tempdir()?;
/// std::fs::create_dir_all(dir.path().join("proc/sys/vm"))?;
/// std::fs::write(dir.path().join("proc/sys/vm/zone_reclaim_mode"), "0\n")?;
/// let root = SysRoot::at(dir.path());
/// write_value(&root, "proc/sys/vm/zone_reclaim_mode", "1")?;
/// assert_eq!(root.read("proc/sys/vm/zone_reclaim_mode")?.as_deref(), Some("1"));
/// # Ok(()) }
/// ```
pub fn write_value(sys: &SysRoot, rel: impl AsRef<Path>, value: &str) -> Result<()> {
    let rel = rel.as_ref();
    check_rel(rel)?;
    if value.is_empty() || value.contains(['\n', '\0']) {
        return Err(ActError::Invalid { call: "write", why: format!("refusing to write {value:?}: not one value") });
    }
    let path = sys.path(rel);
    let shown = crate::text::path(&path);
    let refused = |why: &str| ActError::Invalid { call: "write", why: format!("{shown}: {why}; nothing written") };
    let root = beneath::open_root(sys.root()).map_err(|e| io_error("open", &e))?;
    // O_NONBLOCK: a FIFO without a reader is refused (ENXIO) instead of
    // waited on; taken off again once the file is known to be regular.
    let flags = libc::O_WRONLY | libc::O_TRUNC | libc::O_NONBLOCK;
    let fd = beneath::open(root.as_fd(), rel, flags, Links::Refused).map_err(|e| match e.raw_os_error() {
        Some(libc::ELOOP) => refused("a symbolic link is on its path (a write below a root follows none)"),
        Some(libc::EXDEV) => refused("it leads out of the root"),
        _ => io_error("open", &e),
    })?;
    let mut file = File::from(fd);
    let kind = file.metadata().map_err(|e| io_error("open", &e))?.file_type();
    if !kind.is_file() {
        return Err(refused(&format!("not a regular file ({})", crate::files::kind_of(&kind))));
    }
    crate::files::blocking(&file).map_err(|e| io_error("open", &e))?;
    let n = file.write(value.as_bytes()).map_err(|e| io_error("write", &e))?;
    if n != value.len() {
        return Err(ActError::Invalid {
            call: "write",
            why: format!("{}: the kernel took {n} of {} bytes", path.display(), value.len()),
        });
    }
    log::record(&log::Change { call: "write", target: path.display().to_string(), detail: value.to_string() });
    Ok(())
}

/// Refuses paths outside `proc/sys/`, `sys/` and
/// `proc/irq/N/smp_affinity_list`, absolute paths after the leading `/` is
/// dropped, and `..`.
fn check_rel(rel: &Path) -> Result<()> {
    let rel = rel.strip_prefix("/").unwrap_or(rel);
    let parts: Vec<Component<'_>> = rel.components().collect();
    let normal = parts.iter().all(|c| matches!(c, Component::Normal(_)));
    let under = match parts.as_slice() {
        [Component::Normal(a), Component::Normal(b), _, ..] if *a == "proc" && *b == "sys" => true,
        [Component::Normal(a), _, ..] if *a == "sys" => true,
        [Component::Normal(a), Component::Normal(b), Component::Normal(n), Component::Normal(f)]
            if *a == "proc" && *b == "irq" && *f == "smp_affinity_list" =>
        {
            let n = n.to_string_lossy();
            !n.is_empty() && n.bytes().all(|c| c.is_ascii_digit())
        }
        _ => false,
    };
    if normal && under {
        Ok(())
    } else {
        Err(ActError::Invalid {
            call: "write",
            why: format!(
                "{} is not a knob file under /proc/sys or /sys, nor an IRQ's smp_affinity_list",
                rel.display()
            ),
        })
    }
}

fn io_error(call: &'static str, e: &std::io::Error) -> ActError {
    ActError::sys(call, e.raw_os_error().unwrap_or(libc::EIO))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::act::testutil::log_lock;
    use crate::act::Pid;
    use std::fs;

    fn root() -> (tempfile::TempDir, SysRoot) {
        let d = tempfile::tempdir().expect("tempdir");
        fs::create_dir_all(d.path().join("proc/sys/kernel")).expect("mkdir");
        fs::write(d.path().join("proc/sys/kernel/numa_balancing"), "65536\n").expect("write");
        let r = SysRoot::at(d.path());
        (d, r)
    }

    #[test]
    fn writes_exactly_the_value_and_records_it() {
        let _g = log_lock();
        let (d, r) = root();
        let me = Pid::this_thread().as_raw();
        write_value(&r, "/proc/sys/kernel/numa_balancing", "0").expect("write");
        assert_eq!(fs::read_to_string(d.path().join("proc/sys/kernel/numa_balancing")).expect("read"), "0");
        let recs: Vec<_> = log::take().into_iter().filter(|c| c.tid == me).collect();
        let last = recs.last().expect("a record");
        assert_eq!(last.call, "write");
        assert!(last.target.ends_with("proc/sys/kernel/numa_balancing"), "{last:?}");
        assert_eq!(last.detail, "0");
    }

    #[test]
    fn missing_file_is_not_created() {
        let (d, r) = root();
        let e = write_value(&r, "proc/sys/kernel/nope", "1").unwrap_err();
        assert!(e.is_errno(libc::ENOENT), "{e}");
        assert!(!d.path().join("proc/sys/kernel/nope").exists());
    }

    #[test]
    fn a_folder_fails_with_the_kernel_errno() {
        let (d, r) = root();
        fs::create_dir_all(d.path().join("sys/kernel/mm/x")).expect("mkdir");
        let e = write_value(&r, "sys/kernel/mm/x", "1").unwrap_err();
        assert!(e.is_errno(libc::EISDIR), "{e}");
        assert!(e.to_string().starts_with("open: "), "{e}");
    }

    /// A knob file that is a link (to a file outside the root, or inside
    /// it), or below a folder that is one, is refused and nothing is
    /// written anywhere; so is a FIFO (without waiting for a reader).
    #[test]
    fn links_and_special_files_are_refused_unwritten() {
        let (d, r) = root();
        let outside = tempfile::tempdir().expect("tempdir");
        let victim = outside.path().join("victim");
        fs::write(&victim, "precious\n").expect("write");
        let vm = d.path().join("proc/sys/vm");
        fs::create_dir_all(&vm).expect("mkdir");
        std::os::unix::fs::symlink(&victim, vm.join("zone_reclaim_mode")).expect("link");
        fs::write(d.path().join("proc/sys/kernel/inside"), "0\n").expect("write");
        std::os::unix::fs::symlink("inside", d.path().join("proc/sys/kernel/numa_stat")).expect("link");
        fs::create_dir_all(d.path().join("sys/kernel/mm")).expect("mkdir");
        std::os::unix::fs::symlink(outside.path(), d.path().join("sys/kernel/mm/out")).expect("link");
        for rel in ["proc/sys/vm/zone_reclaim_mode", "proc/sys/kernel/numa_stat", "sys/kernel/mm/out/victim"] {
            let e = write_value(&r, rel, "1").unwrap_err().to_string();
            assert!(e.contains("a symbolic link is on its path") && e.ends_with("nothing written"), "{rel}: {e}");
        }
        assert_eq!(fs::read_to_string(&victim).expect("read"), "precious\n");
        assert_eq!(fs::read_to_string(d.path().join("proc/sys/kernel/inside")).expect("read"), "0\n");
        let fifo = d.path().join("proc/sys/kernel/fifo");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).expect("path");
        // SAFETY: mkfifo with a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let t = std::time::Instant::now();
        let e = write_value(&r, "proc/sys/kernel/fifo", "1").unwrap_err();
        assert!(e.is_errno(libc::ENXIO), "{e}");
        assert!(t.elapsed() < std::time::Duration::from_secs(2));
    }

    #[test]
    fn irq_affinity_files_are_writable() {
        let (d, r) = root();
        fs::create_dir_all(d.path().join("proc/irq/30")).expect("mkdir");
        fs::write(d.path().join("proc/irq/30/smp_affinity_list"), "0-7\n").expect("write");
        write_value(&r, "proc/irq/30/smp_affinity_list", "1,3").expect("write");
        assert_eq!(fs::read_to_string(d.path().join("proc/irq/30/smp_affinity_list")).expect("read"), "1,3");
    }

    #[test]
    fn paths_outside_proc_sys_and_sys_are_refused() {
        let (_d, r) = root();
        for bad in [
            "etc/passwd",
            "proc/self/mem",
            "sys/../etc/passwd",
            "proc/sys/../../etc/x",
            "sys",
            "proc/sys",
            "proc/irq/default_smp_affinity",
            "proc/irq/x1/smp_affinity_list",
            "proc/irq/1/spurious",
            "proc/irq/1/../../self/mem",
            "proc/irq/1/smp_affinity_list/x",
        ] {
            let e = write_value(&r, bad, "1").unwrap_err();
            assert!(matches!(e, ActError::Invalid { .. }), "{bad}: {e}");
        }
        for bad in ["", "1\n2", "a\0"] {
            assert!(matches!(write_value(&r, "proc/sys/kernel/numa_balancing", bad), Err(ActError::Invalid { .. })));
        }
    }
}
