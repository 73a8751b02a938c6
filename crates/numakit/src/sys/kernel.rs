//! What the kernel says about itself under `/proc/sys/kernel`: its release
//! (`osrelease`), the major and minor version in it, and the host's name
//! (`hostname`). Read through [`SysRoot`]; each file is parsed here and
//! nowhere else. It decides nothing.

use super::SysRoot;

/// The kernel's release as `osrelease` writes it (`6.1.0-27-amd64`);
/// `None` if the file is missing, empty or unreadable.
pub fn release(sys: &SysRoot) -> Option<String> {
    sys.read_nonempty("proc/sys/kernel/osrelease").ok().flatten()
}

/// The running kernel's major and minor version, from `osrelease`.
pub fn version(sys: &SysRoot) -> Option<(u32, u32)> {
    parse_version(&sys.read("proc/sys/kernel/osrelease").ok()??)
}

/// Parses `/proc/sys/kernel/osrelease` style text ("6.1.0-27-amd64") into
/// its major and minor version.
pub fn parse_version(text: &str) -> Option<(u32, u32)> {
    let mut it = text.trim().split(|c: char| !c.is_ascii_digit());
    let major = it.next()?.parse().ok()?;
    let minor = it.next()?.parse().ok()?;
    Some((major, minor))
}

/// The host's name (`/proc/sys/kernel/hostname`); `None` if the file is
/// missing, empty or unreadable.
pub fn hostname(sys: &SysRoot) -> Option<String> {
    sys.read_nonempty("proc/sys/kernel/hostname").ok().flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_versions() {
        assert_eq!(parse_version("6.1.0-27-amd64\n"), Some((6, 1)));
        assert_eq!(parse_version("6.12.9+bpo-amd64"), Some((6, 12)));
        assert_eq!(parse_version("x"), None);
    }

    #[test]
    fn files_below_the_root() {
        let d = tempfile::tempdir().expect("tmp");
        let k = d.path().join("proc/sys/kernel");
        std::fs::create_dir_all(&k).expect("mkdir");
        let sys = SysRoot::at(d.path());
        assert_eq!((release(&sys), version(&sys), hostname(&sys)), (None, None, None));
        std::fs::write(k.join("osrelease"), "6.12.0-test\n").expect("write");
        std::fs::write(k.join("hostname"), "node7\n").expect("write");
        assert_eq!(release(&sys).as_deref(), Some("6.12.0-test"));
        assert_eq!(version(&sys), Some((6, 12)));
        assert_eq!(hostname(&sys).as_deref(), Some("node7"));
    }
}
