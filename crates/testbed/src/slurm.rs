//! A real Slurm for tests: munged, slurmctld and slurmd (one controller and one
//! compute host on loopback), started from the installed packages with a
//! configuration generated for the test.
//!
//! ```no_run
//! use numakit_testbed::slurm::{Slurm, SlurmSpec};
//!
//! let slurm = Slurm::start(&SlurmSpec::default()).unwrap_or_else(|e| panic!("{e}"));
//! let out = slurm.run("srun", ["/bin/true"]);
//! assert!(out.success(), "{}", out.stderr);
//! // every daemon, job step and task is killed when `slurm` is dropped
//! ```
//!
//! Everything lives in one temporary folder: the munge key, socket, pid and seed
//! files, `slurm.conf`, `plugstack.conf`, the controller's state, slurmd's spool,
//! the logs, and `work/` (the working directory of commands from
//! [`Slurm::command`], hence of the job's tasks). Ports are chosen free on
//! 127.0.0.1. The daemons run in the foreground as children of the test; on drop
//! (also while a test panics) they, the job steps' `slurmstepd`s (which Slurm
//! detaches into sessions of their own, but which keep slurmd's working directory,
//! the temporary folder) and their tasks are killed, and the folder is removed.
//!
//! With [`SlurmSpec::accounting`], Slurm keeps its accounting in a real
//! `slurmdbd` on a MariaDB server, both started in the same folder and
//! killed with the rest ([`crate::slurmdbd`]), so that `sacct` answers.
//!
//! Needs root (slurmd starts tasks as the job's user) and the Debian packages
//! `munge slurmctld slurmd slurm-client` (and `mariadb-server slurmdbd` for
//! accounting): without them [`Slurm::start`] fails with a message saying so
//! (`scripts/install-deps` installs them). With `NUMAKIT_SLURM_PREFIX=DIR`
//! ([`install::PREFIX_VAR`]) the Slurm programs are those installed under
//! `DIR` instead (`scripts/test-slurm-matrix`: every supported release).

use std::fs;
use std::io::Write as _;
use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::{slurmdbd, Error, Output};

mod host;
pub mod install;
use host::{free_ports, host_name, kill_everything, make_temp_dir};
use install::missing_error;

/// How long a daemon may take to come up (and the compute host to be
/// idle) before the start fails: a hang guard only, since a daemon that
/// fails exits and that is seen at once. A test-bed guest on a busy host
/// (TCG, beside other jobs) starts one in tens of seconds.
const DAEMON_START: Duration = Duration::from_secs(180);

/// The programs a test Slurm needs, and the package each comes from.
pub const PROGRAMS: &[(&str, &str)] = &[
    ("munged", "munge"),
    ("slurmctld", "slurmctld"),
    ("slurmd", "slurmd"),
    ("srun", "slurm-client"),
    ("sbatch", "slurm-client"),
    ("scontrol", "slurm-client"),
    ("sinfo", "slurm-client"),
];

/// How the test Slurm is configured.
#[derive(Debug, Clone)]
pub struct SlurmSpec {
    /// The compute host's name (`NodeName`, `slurmd -N`); default: this host's name.
    pub node_name: Option<String>,
    /// `TaskPlugin` (`task/none`, `task/affinity`, ...).
    pub task_plugin: String,
    /// `ProctrackType`.
    pub proctrack: String,
    /// The contents of the generated `plugstack.conf` (`PlugStackConfig`);
    /// `{dir}` stands for the test Slurm's folder.
    pub plugstack: String,
    /// More `slurm.conf` lines, appended before the node and partition lines.
    pub extra_conf: Vec<String>,
    /// The contents of `cgroup.conf` (beside `slurm.conf`, where Slurm looks
    /// for it); `None` writes none (Slurm's defaults).
    pub cgroup_conf: Option<String>,
    /// The node's generic resources (`Gres=gpu:2` on its node line), with
    /// `gres_conf`.
    pub node_gres: Option<String>,
    /// The contents of `gres.conf` (beside `slurm.conf`); `None` writes none.
    pub gres_conf: Option<String>,
    /// How long the daemons may take to be ready.
    pub ready_timeout: Duration,
    /// Keep Slurm's accounting in a slurmdbd with MariaDB ([`crate::slurmdbd`]).
    pub accounting: bool,
}

impl Default for SlurmSpec {
    fn default() -> SlurmSpec {
        SlurmSpec {
            node_name: None,
            task_plugin: "task/none".into(),
            proctrack: "proctrack/linuxproc".into(),
            plugstack: String::new(),
            extra_conf: Vec::new(),
            cgroup_conf: None,
            node_gres: None,
            gres_conf: None,
            ready_timeout: DAEMON_START,
            accounting: false,
        }
    }
}

impl SlurmSpec {
    /// Sets the contents of `plugstack.conf`.
    pub fn plugstack(mut self, text: impl Into<String>) -> SlurmSpec {
        self.plugstack = text.into();
        self
    }

    /// Sets `TaskPlugin`.
    pub fn task_plugin(mut self, plugin: impl Into<String>) -> SlurmSpec {
        self.task_plugin = plugin.into();
        self
    }

    /// Sets `ProctrackType`.
    pub fn proctrack(mut self, plugin: impl Into<String>) -> SlurmSpec {
        self.proctrack = plugin.into();
        self
    }

    /// Keeps Slurm's accounting in a slurmdbd with MariaDB (`sacct` answers).
    pub fn accounting(mut self) -> SlurmSpec {
        self.accounting = true;
        self
    }

    /// Sets the compute host's name (default: this host's name).
    pub fn node_name(mut self, name: impl Into<String>) -> SlurmSpec {
        self.node_name = Some(name.into());
        self
    }
}

/// A running test Slurm; dropping it kills everything it started.
#[derive(Debug)]
pub struct Slurm {
    dir: PathBuf,
    node: String,
    daemons: Vec<(&'static str, Child)>,
    /// slurmdbd's port, with accounting.
    dbd_port: Option<u16>,
}

/// The first program of [`PROGRAMS`] not found ([`install::search_path`]), with its package.
pub fn missing_program() -> Option<(&'static str, &'static str)> {
    missing_in(&install::search_path(), PROGRAMS)
}

fn missing_in(dirs: &[PathBuf], programs: &[(&'static str, &'static str)]) -> Option<(&'static str, &'static str)> {
    programs.iter().copied().find(|(prog, _)| !dirs.iter().any(|d| d.join(prog).is_file()))
}

impl Slurm {
    /// Starts munged, slurmctld and slurmd and waits until the compute host is idle.
    /// The error says what is missing, or carries the daemons' logs.
    pub fn start(spec: &SlurmSpec) -> Result<Slurm, Error> {
        if let Some((prog, pkg)) = missing_program() {
            return Err(missing_error(prog, pkg));
        }
        if spec.accounting {
            if let Some((prog, pkg)) = missing_in(&install::search_path(), slurmdbd::PROGRAMS) {
                return Err(missing_error(prog, pkg));
            }
        }
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Err(Error::Slurm("a test Slurm needs root (slurmd starts tasks as the job's user)".into()));
        }
        let dir = make_temp_dir()?;
        let node = match &spec.node_name {
            Some(n) => n.clone(),
            None => host_name()?,
        };
        let mut slurm = Slurm { dir, node, daemons: Vec::new(), dbd_port: None };
        slurm.configure(spec)?;
        slurm.spawn_all()?;
        slurm.wait_ready(spec.ready_timeout)?;
        Ok(slurm)
    }

    /// The temporary folder everything lives in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The generated `slurm.conf` (what `SLURM_CONF` points at).
    pub fn conf(&self) -> PathBuf {
        self.dir.join("slurm.conf")
    }

    /// The compute host's name.
    pub fn node(&self) -> &str {
        &self.node
    }

    /// The working directory of [`Slurm::command`]s and of their jobs' tasks.
    pub fn workdir(&self) -> PathBuf {
        self.dir.join("work")
    }

    /// A command with `SLURM_CONF` set, the caller's `SLURM_*`/`SPANK_*` variables
    /// removed, stdin empty, in [`Slurm::workdir`]; the program is the tested
    /// Slurm's ([`install::program`]) and `PATH` finds its programs first.
    pub fn command(&self, program: &str) -> Command {
        let mut cmd = install::command(program);
        for (key, _) in std::env::vars_os() {
            let k = key.to_string_lossy();
            if k.starts_with("SLURM_")
                || k.starts_with("SPANK_")
                || k.starts_with("SBATCH_")
                || k.starts_with("SALLOC_")
            {
                cmd.env_remove(&key);
            }
        }
        cmd.env("SLURM_CONF", self.conf()).current_dir(self.workdir()).stdin(Stdio::null());
        cmd
    }

    /// Runs `program args` through [`Slurm::command`] and returns what it printed.
    /// A program that cannot be started is status 127 with the reason on stderr.
    pub fn run<I, S>(&self, program: &str, args: I) -> Output
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        match self.command(program).args(args).output() {
            Ok(o) => Output {
                stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
                stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
                status: o.status.code().unwrap_or(128),
            },
            Err(e) => Output { stdout: String::new(), stderr: format!("cannot run {program}: {e}"), status: 127 },
        }
    }

    /// Replaces `plugstack.conf` (`{dir}` in `text` stands for [`Slurm::dir`]):
    /// srun, sbatch and salloc read it at each start, slurmstepd at each step's
    /// start (slurmd read it when it started).
    pub fn set_plugstack(&self, text: &str) -> Result<(), Error> {
        let path = self.dir.join("plugstack.conf");
        let text = text.replace("{dir}", &self.dir.to_string_lossy());
        fs::write(&path, text).map_err(|e| Error::Slurm(format!("{}: {e}", path.display())))
    }

    /// Stops one daemon (`slurmd`, `slurmctld`) as its service would: SIGTERM,
    /// waited for (SIGKILL after 10 s). Job steps' slurmstepds go on
    /// without slurmd. Its exit status.
    pub fn stop(&mut self, daemon: &str) -> Result<std::process::ExitStatus, Error> {
        let i = self
            .daemons
            .iter()
            .position(|(n, _)| *n == daemon)
            .ok_or_else(|| Error::Slurm(format!("no {daemon} runs")))?;
        let (_, mut child) = self.daemons.remove(i);
        // SAFETY: kill has no memory-safety preconditions; the pid is our child's.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let end = Instant::now() + Duration::from_secs(10);
        loop {
            match child.try_wait() {
                Ok(Some(status)) => return Ok(status),
                Ok(None) if Instant::now() < end => std::thread::sleep(Duration::from_millis(50)),
                _ => {
                    let _ = child.kill();
                    return child.wait().map_err(|e| Error::Slurm(format!("{daemon}: {e}")));
                }
            }
        }
    }

    /// Starts slurmd again after [`Slurm::stop`] and waits until slurmctld
    /// sees the compute host answer (idle, or still running a job).
    pub fn restart_slurmd(&mut self, timeout: Duration) -> Result<(), Error> {
        let mut slurmd = install::command("slurmd");
        slurmd.args(["-D", "-N", &self.node, "-f"]).arg(self.conf());
        self.spawn("slurmd", slurmd)?;
        self.wait_for(timeout, "the compute host to answer again", |s| {
            let state = s.run("sinfo", ["-h", "-n", &s.node, "-o", "%T"]);
            ["idle", "mixed", "allocated"].contains(&state.stdout.trim())
        })
    }

    /// One daemon's log (`munged`, `slurmctld`, `slurmd`; slurmstepd writes to slurmd's).
    pub fn log(&self, daemon: &str) -> String {
        fs::read_to_string(self.dir.join("log").join(format!("{daemon}.log"))).unwrap_or_default()
    }

    /// The last lines of every daemon's log, for failure messages.
    pub fn logs(&self) -> String {
        logs_of(&self.dir)
    }

    fn configure(&mut self, spec: &SlurmSpec) -> Result<(), Error> {
        let io = |what: &str, e: std::io::Error| Error::Slurm(format!("{what}: {e}"));
        for sub in ["run", "state", "spool", "log", "work"] {
            fs::create_dir_all(self.dir.join(sub)).map_err(|e| io(sub, e))?;
        }
        // The work folder is where tasks run, possibly as another user.
        let _ = fs::set_permissions(self.workdir(), fs::Permissions::from_mode(0o1777));
        let key = self.dir.join("munge.key");
        let mut bytes = vec![0u8; 1024];
        fs::File::open("/dev/urandom")
            .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes))
            .map_err(|e| io("/dev/urandom", e))?;
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o400)
            .open(&key)
            .map_err(|e| io("munge.key", e))?;
        f.write_all(&bytes).map_err(|e| io("munge.key", e))?;
        self.set_plugstack(&spec.plugstack)?;
        let node_line = node_line(&self.node)?;
        let ports = free_ports(3)?;
        let (ctld_port, slurmd_port) = (ports[0], ports[1]);
        if spec.accounting {
            slurmdbd::configure(&self.dir, ports[2])?;
            self.dbd_port = Some(ports[2]);
        }
        let d = self.dir.display();
        // sched/backfill: Slurm 23.11's sched/builtin leaves batch jobs
        // pending (InvalidAccount) where there is no accounting.
        let mut conf = format!(
            "# generated by numakit-testbed for one test\n\
             ClusterName=nktest\n\
             SlurmctldHost={node}(127.0.0.1)\n\
             SlurmctldPort={ctld_port}\n\
             SlurmdPort={slurmd_port}\n\
             SlurmUser=root\n\
             SlurmdUser=root\n\
             AuthType=auth/munge\n\
             AuthInfo=socket={d}/run/munge.socket\n\
             CredType=cred/munge\n\
             MpiDefault=none\n\
             ProctrackType={proctrack}\n\
             TaskPlugin={task}\n\
             StateSaveLocation={d}/state\n\
             SlurmdSpoolDir={d}/spool\n\
             SlurmctldPidFile={d}/run/slurmctld.pid\n\
             SlurmdPidFile={d}/run/slurmd.pid\n\
             SlurmctldLogFile={d}/log/slurmctld.log\n\
             SlurmdLogFile={d}/log/slurmd.log\n\
             SlurmctldDebug=info\n\
             SlurmdDebug=verbose\n\
             SchedulerType=sched/backfill\n\
             SelectType=select/cons_tres\n\
             SelectTypeParameters=CR_CPU_Memory\n\
             DefMemPerCPU=64\n\
             ReturnToService=2\n\
             KillWait=2\n\
             MessageTimeout=10\n\
             JobCompType=jobcomp/none\n\
             AccountingStorageType=accounting_storage/none\n\
             JobAcctGatherType=jobacct_gather/none\n\
             PlugStackConfig={d}/plugstack.conf\n",
            node = self.node,
            proctrack = spec.proctrack,
            task = spec.task_plugin,
        );
        if let Some(port) = self.dbd_port {
            conf = conf
                .replace("AccountingStorageType=accounting_storage/none\n", "")
                .replace("JobAcctGatherType=jobacct_gather/none\n", "");
            conf.push_str(&slurmdbd::slurm_conf(&self.dir, port));
        }
        for line in &spec.extra_conf {
            conf.push_str(line);
            conf.push('\n');
        }
        match &spec.node_gres {
            Some(g) => conf.push_str(&node_line.replace(" State=UNKNOWN", &format!(" Gres={g} State=UNKNOWN"))),
            None => conf.push_str(&node_line),
        }
        if let Some(text) = &spec.gres_conf {
            fs::write(self.dir.join("gres.conf"), text).map_err(|e| io("gres.conf", e))?;
        }
        conf.push_str(&format!("PartitionName=test Nodes={} Default=YES MaxTime=INFINITE State=UP\n", self.node));
        if let Some(text) = &spec.cgroup_conf {
            fs::write(self.dir.join("cgroup.conf"), text).map_err(|e| io("cgroup.conf", e))?;
        }
        fs::write(self.conf(), conf).map_err(|e| io("slurm.conf", e))
    }

    fn spawn_all(&mut self) -> Result<(), Error> {
        let d = self.dir.clone();
        let p = |s: &str| d.join(s).into_os_string();
        let mut munged = Command::new("munged");
        munged
            .args(["-F", "-f", "--num-threads=4"])
            .arg("--key-file")
            .arg(p("munge.key"))
            .arg("-S")
            .arg(p("run/munge.socket"))
            .arg("--pid-file")
            .arg(p("run/munged.pid"))
            .arg("--seed-file")
            .arg(p("state/munged.seed"))
            .arg("--log-file")
            .arg(p("log/munged.log"));
        self.spawn("munged", munged)?;
        self.wait_for(DAEMON_START, "munged's socket", |s| s.dir.join("run/munge.socket").exists())?;
        if let Some(port) = self.dbd_port {
            self.spawn("mariadb", slurmdbd::mariadb(&self.dir))?;
            self.wait_for(DAEMON_START, "MariaDB's socket", |s| s.dir.join("run/db.sock").exists())?;
            self.spawn("slurmdbd", slurmdbd::slurmdbd(&self.dir))?;
            self.wait_for(DAEMON_START, "slurmdbd", |_| slurmdbd::listening(port))?;
        }
        let mut ctld = install::command("slurmctld");
        ctld.args(["-D", "-i", "-f"]).arg(self.conf());
        self.spawn("slurmctld", ctld)?;
        // slurmd after the controller answers, as a site starts them (Slurm
        // 26.05's slurmd started beside a controller still registering with
        // slurmdbd sometimes exited with status 1, saying nothing).
        self.wait_for(Duration::from_secs(30), "slurmctld to answer", |s| {
            s.run("scontrol", ["ping"]).stdout.contains("UP")
        })?;
        let mut slurmd = install::command("slurmd");
        slurmd.args(["-D", "-N", &self.node, "-f"]).arg(self.conf());
        self.spawn("slurmd", slurmd)
    }

    /// Starts one daemon in the foreground, in the temporary folder (which its
    /// detached children keep as their working directory: that is how drop finds
    /// them), stdout and stderr appended to `log/NAME.out` (munged's to its log).
    fn spawn(&mut self, name: &'static str, mut cmd: Command) -> Result<(), Error> {
        let out_name = if name == "munged" { "munged.log".to_string() } else { format!("{name}.out") };
        let out = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("log").join(out_name))
            .map_err(|e| Error::Slurm(format!("{name} log: {e}")))?;
        let err = out.try_clone().map_err(|e| Error::Slurm(format!("{name} log: {e}")))?;
        cmd.current_dir(&self.dir)
            .env("SLURM_CONF", self.conf())
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .process_group(0);
        let child = cmd.spawn().map_err(|e| Error::Slurm(format!("cannot start {name}: {e}")))?;
        self.daemons.push((name, child));
        Ok(())
    }

    fn wait_ready(&mut self, timeout: Duration) -> Result<(), Error> {
        self.wait_for(timeout, "the compute host to be idle", |s| {
            let ping = s.run("scontrol", ["ping"]);
            if !ping.stdout.contains("UP") {
                return false;
            }
            let state = s.run("sinfo", ["-h", "-n", &s.node, "-o", "%T"]);
            state.success() && state.stdout.trim() == "idle"
        })
    }

    /// Polls `ready` every 100 ms; fails with the logs after `timeout`, or as soon
    /// as a daemon has exited.
    fn wait_for(&mut self, timeout: Duration, what: &str, ready: impl Fn(&Slurm) -> bool) -> Result<(), Error> {
        let start = Instant::now();
        loop {
            if ready(self) {
                return Ok(());
            }
            for (name, child) in &mut self.daemons {
                if let Ok(Some(status)) = child.try_wait() {
                    return Err(Error::Slurm(format!(
                        "{name} exited ({status}) while waiting for {what}\n{}",
                        logs_of(&self.dir)
                    )));
                }
            }
            if start.elapsed() > timeout {
                return Err(Error::Slurm(format!(
                    "timed out after {:?} waiting for {what}\n{}",
                    timeout,
                    logs_of(&self.dir)
                )));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// The last lines of every daemon's log in `dir`, or of what it printed
/// where it wrote no log (a daemon that stopped before opening it).
fn logs_of(dir: &Path) -> String {
    let mut out = String::new();
    for d in ["munged", "mariadb", "slurmdbd", "slurmctld", "slurmd"] {
        let read = |file: &str| fs::read_to_string(dir.join("log").join(file)).ok().filter(|t| !t.trim().is_empty());
        let Some((file, log)) =
            [format!("{d}.log"), format!("{d}.out")].into_iter().find_map(|f| read(&f).map(|t| (f, t)))
        else {
            continue;
        };
        let lines: Vec<&str> = log.lines().collect();
        let tail = &lines[lines.len().saturating_sub(40)..];
        out.push_str(&format!("--- {file} (last {} lines) ---\n{}\n", tail.len(), tail.join("\n")));
    }
    out
}

impl Drop for Slurm {
    fn drop(&mut self) {
        kill_everything(&self.dir, &mut self.daemons);
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// The node line: what `slurmd -C` reports of this host (so slurmd finds the
/// configuration matches it), named `node`, at 127.0.0.1.
fn node_line(node: &str) -> Result<String, Error> {
    let out = install::command("slurmd")
        .arg("-C")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| Error::Slurm(format!("cannot run slurmd -C: {e}")))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let Some(line) = text.lines().find(|l| l.starts_with("NodeName=")) else {
        return Err(Error::Slurm(format!(
            "slurmd -C printed no NodeName line: {}{}",
            text,
            String::from_utf8_lossy(&out.stderr)
        )));
    };
    let hardware: Vec<&str> = line
        .split_whitespace()
        .filter(|f| {
            ["CPUs=", "Boards=", "SocketsPerBoard=", "CoresPerSocket=", "ThreadsPerCore=", "RealMemory="]
                .iter()
                .any(|k| f.starts_with(k))
        })
        .collect();
    Ok(format!("NodeName={node} NodeAddr=127.0.0.1 {} State=UNKNOWN\n", hardware.join(" ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_program_is_named_with_its_package() {
        let empty = std::env::temp_dir().join(format!("nk-slurm-empty-{}", std::process::id()));
        assert_eq!(missing_in(std::slice::from_ref(&empty), PROGRAMS), Some(("munged", "munge")));
        assert_eq!(missing_in(&[empty], slurmdbd::PROGRAMS), Some(("mariadbd", "mariadb-server")));
        // (the message itself: install.rs's tests)
    }
}
