//! What a test Slurm needs of the host: a fresh folder, the host's name,
//! free ports, and, at the end, every process it started killed.

use std::collections::BTreeSet;
use std::fs;
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::Duration;

use crate::Error;

/// Kills the daemons, every process whose working directory is in `dir`
/// (slurmstepd, and tasks started from [`Slurm::workdir`]) and all their
/// descendants, then reaps the daemons.
pub(super) fn kill_everything(dir: &Path, daemons: &mut [(&'static str, Child)]) {
    for _round in 0..3 {
        let mut doomed: BTreeSet<i32> = daemons.iter().map(|(_, c)| c.id() as i32).collect();
        let procs = process_table();
        for (pid, _, cwd) in &procs {
            if cwd.as_deref().is_some_and(|c| c.starts_with(dir)) {
                doomed.insert(*pid);
            }
        }
        loop {
            let before = doomed.len();
            for (pid, ppid, _) in &procs {
                if doomed.contains(ppid) {
                    doomed.insert(*pid);
                }
            }
            if doomed.len() == before {
                break;
            }
        }
        let me = std::process::id() as i32;
        doomed.remove(&me);
        for pid in &doomed {
            // SAFETY: kill has no memory-safety preconditions; the pids are ours.
            unsafe { libc::kill(*pid, libc::SIGKILL) };
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    for (_, child) in daemons.iter_mut() {
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// (pid, parent pid, working directory) of every process that can be read.
fn process_table() -> Vec<(i32, i32, Option<PathBuf>)> {
    let Ok(entries) = fs::read_dir("/proc") else { return Vec::new() };
    let mut out = Vec::new();
    for e in entries.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else { continue };
        let Ok(stat) = fs::read_to_string(e.path().join("stat")) else { continue };
        // "pid (comm) state ppid ...": comm may hold spaces and parentheses.
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else { continue };
        let Some(ppid) = rest.split_whitespace().nth(1).and_then(|s| s.parse::<i32>().ok()) else { continue };
        out.push((pid, ppid, fs::read_link(e.path().join("cwd")).ok()));
    }
    out
}

pub(super) fn make_temp_dir() -> Result<PathBuf, Error> {
    let base = std::env::temp_dir();
    for attempt in 0..100u32 {
        let nanos =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
        let dir = base.join(format!("nk-slurm-{}-{nanos:x}-{attempt}", std::process::id()));
        match fs::create_dir(&dir) {
            Ok(()) => {
                // Slurm's daemons and munged check that their folders are not
                // writable by others; the job's user must reach work/.
                let _ = fs::set_permissions(&dir, fs::Permissions::from_mode(0o755));
                return Ok(dir);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(Error::Slurm(format!("cannot create a folder in {}: {e}", base.display()))),
        }
    }
    Err(Error::Slurm(format!("cannot create a fresh folder in {}", base.display())))
}

pub(super) fn host_name() -> Result<String, Error> {
    let name = fs::read_to_string("/proc/sys/kernel/hostname")
        .map_err(|e| Error::Slurm(format!("cannot read the host name: {e}")))?;
    let name = name.trim();
    // slurmd uses the short name.
    Ok(name.split('.').next().unwrap_or(name).to_string())
}

/// `n` TCP ports free on 127.0.0.1 (bound together, then released).
pub(super) fn free_ports(n: usize) -> Result<Vec<u16>, Error> {
    let err = |e: std::io::Error| Error::Slurm(format!("cannot find a free port: {e}"));
    let held: Vec<TcpListener> =
        (0..n).map(|_| TcpListener::bind("127.0.0.1:0")).collect::<Result<_, _>>().map_err(err)?;
    held.iter().map(|l| l.local_addr().map(|a| a.port()).map_err(err)).collect()
}
