//! Which Slurm a test Slurm runs: the installed packages' (found in `PATH`,
//! `/usr/sbin`, `/usr/bin`), or the Slurm installed under the prefix that
//! [`PREFIX_VAR`] names (`NUMAKIT_SLURM_PREFIX=~/.cache/numakit/slurm/25.11.7`,
//! as `scripts/test-slurm-matrix` builds each supported release): its
//! `sbin/` and `bin/` first, for the daemons, the commands a test runs and,
//! through `PATH`, the commands its jobs run (`srun` in a batch script).
//! munged and MariaDB are the system's either way.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::Error;

/// The variable naming the install prefix of the Slurm to test against.
pub const PREFIX_VAR: &str = "NUMAKIT_SLURM_PREFIX";

/// The Slurm install prefix [`PREFIX_VAR`] names (`None`: unset or empty,
/// the packages' Slurm).
pub fn prefix() -> Option<PathBuf> {
    std::env::var_os(PREFIX_VAR).filter(|p| !p.is_empty()).map(PathBuf::from)
}

/// Where programs are looked for: the prefix's folders, then `PATH`,
/// `/usr/sbin` and `/usr/bin`.
pub fn search_path() -> Vec<PathBuf> {
    search_path_in(prefix().as_deref())
}

fn search_path_in(prefix: Option<&Path>) -> Vec<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let system = std::env::split_paths(&path).chain([PathBuf::from("/usr/sbin"), PathBuf::from("/usr/bin")]);
    let own = prefix.map(|p| vec![p.join("sbin"), p.join("bin")]).unwrap_or_default();
    own.into_iter().chain(system).collect()
}

/// `PATH` for the daemons and commands of a test Slurm: the prefix's
/// folders first, so that a job's own `srun` is the prefix's too.
pub fn path_env() -> OsString {
    std::env::join_paths(search_path()).unwrap_or_else(|_| std::env::var_os("PATH").unwrap_or_default())
}

/// The program `name` as a test Slurm runs it: the first found in
/// [`search_path`], else `name` itself (starting it then fails, saying so).
pub fn program(name: &str) -> PathBuf {
    search_path().into_iter().map(|d| d.join(name)).find(|p| p.is_file()).unwrap_or_else(|| name.into())
}

/// A command for the program `name` ([`program`]) with [`path_env`].
pub fn command(name: &str) -> Command {
    let mut c = Command::new(program(name));
    c.env("PATH", path_env());
    c
}

/// What a missing program is, for [`Slurm::start`](super::Slurm::start)'s error:
/// in the prefix's folders when one is set, else a package to install.
pub fn missing_error(prog: &str, pkg: &str) -> Error {
    missing_error_in(prefix().as_deref(), prog, pkg)
}

fn missing_error_in(prefix: Option<&Path>, prog: &str, pkg: &str) -> Error {
    match prefix {
        Some(p) if !matches!(prog, "munged" | "mariadbd") => Error::Slurm(format!(
            "{prog} is not in {}/sbin nor {}/bin ({PREFIX_VAR}; scripts/test-slurm-matrix builds Slurm there)",
            p.display(),
            p.display()
        )),
        _ => Error::Slurm(format!("{prog} is not installed (Debian package {pkg}; scripts/install-deps installs it)")),
    }
}

/// The version of the Slurm a test Slurm runs: the last word of `slurmd -V`
/// (Debian's says `slurm-wlm 22.05.8`, SchedMD's `slurm 25.11.7`).
pub fn version() -> Result<String, Error> {
    let out = command("slurmd")
        .arg("-V")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| Error::Slurm(format!("cannot run slurmd -V: {e}")))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let version = text.split_whitespace().last().filter(|v| v.starts_with(|c: char| c.is_ascii_digit()));
    version.map(String::from).ok_or_else(|| Error::Slurm(format!("slurmd -V printed no version: {text:?}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefix_comes_first() {
        let x = Some(Path::new("/opt/slurm-x"));
        let dirs = search_path_in(x);
        assert_eq!(&dirs[..2], &[PathBuf::from("/opt/slurm-x/sbin"), PathBuf::from("/opt/slurm-x/bin")]);
        assert!(!search_path_in(None).iter().any(|d| d.starts_with("/opt/slurm-x")));
        let e = missing_error_in(x, "slurmd", "slurmd").to_string();
        assert_eq!(
            e,
            "test Slurm: slurmd is not in /opt/slurm-x/sbin nor /opt/slurm-x/bin (NUMAKIT_SLURM_PREFIX; \
             scripts/test-slurm-matrix builds Slurm there)"
        );
        // munged and MariaDB are the system's.
        assert!(missing_error_in(x, "munged", "munge").to_string().contains("Debian package munge"));
        assert!(missing_error_in(None, "slurmd", "slurmd").to_string().contains("Debian package slurmd"));
    }
}
