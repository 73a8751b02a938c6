//! Running commands in a QEMU guest through `testbed/numakit-vm`.
//!
//! [`Vm::run`] boots one guest for one command or script. Each boot costs seconds
//! under software emulation, so [`Vm::run_checks`] runs several named shell snippets
//! in one boot and returns each one's output. [`vm_available`] says whether QEMU can
//! run here; [`require_vm_or_skip`] (and the `require_vm!` macro) turns that into a
//! skip, or a failure under `CI=true`.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::{Error, Topology};

/// Default guest timeout (boot included).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(180);

/// What to run in the guest and how.
#[derive(Debug, Clone, Default)]
pub struct RunSpec {
    /// Command and arguments (used when `script` is `None`).
    pub command: Vec<String>,
    /// A `sh` script to run instead of `command`.
    pub script: Option<String>,
    /// Environment variables exported in the guest.
    pub env: Vec<(String, String)>,
    /// Kill the guest after this long (default [`DEFAULT_TIMEOUT`]); status 124.
    pub timeout: Option<Duration>,
    /// Busybox-only guest without the host root (boots faster; no host binaries).
    pub busybox_only: bool,
    /// Working directory, shared read-write (default: the repository root).
    pub cwd: Option<PathBuf>,
    /// Extra kernel command line.
    pub kernel_args: Option<String>,
    /// Extra QEMU arguments, one word each (`numakit-vm --qemu`; after the
    /// bed's own, so a later `-machine` or `-bios` wins).
    pub qemu: Vec<String>,
}

impl RunSpec {
    /// Runs `argv` (no shell).
    pub fn command<I, S>(argv: I) -> RunSpec
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        RunSpec { command: argv.into_iter().map(Into::into).collect(), ..RunSpec::default() }
    }

    /// Runs a `sh` script.
    pub fn script(text: impl Into<String>) -> RunSpec {
        RunSpec { script: Some(text.into()), ..RunSpec::default() }
    }

    /// Adds an environment variable.
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> RunSpec {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Adds QEMU arguments (each word one argument).
    pub fn qemu<I, S>(mut self, args: I) -> RunSpec
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.qemu.extend(args.into_iter().map(Into::into));
        self
    }

    /// Sets the timeout.
    pub fn timeout(mut self, timeout: Duration) -> RunSpec {
        self.timeout = Some(timeout);
        self
    }
}

/// What a guest command produced.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Output {
    /// Its standard output.
    pub stdout: String,
    /// Its standard error (for a whole run: plus the harness's messages, and on 124
    /// or 125 the guest console's tail).
    pub stderr: String,
    /// Exit status; 124 timeout, 125 the guest never reported one.
    pub status: i32,
}

impl Output {
    /// Exit status 0.
    pub fn success(&self) -> bool {
        self.status == 0
    }
}

/// The test bed.
#[derive(Debug, Clone, Copy)]
pub struct Vm;

impl Vm {
    /// Boots `topology`, runs `spec` in it and returns its output and status.
    /// `Err` only when the harness itself cannot run (invalid topology, no bash);
    /// a timeout is `Ok` with status 124, a guest that never reported 125.
    pub fn run(topology: &Topology, spec: RunSpec) -> Result<Output, Error> {
        let raw = run_raw(topology, &spec)?;
        Ok(Output {
            stdout: String::from_utf8_lossy(&raw.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&raw.stderr).into_owned(),
            status: raw.status,
        })
    }

    /// Boots `topology` once and runs each `(name, shell snippet)` of `checks` in
    /// turn (each in a subshell, stdin empty), returning name -> output. `spec`
    /// supplies env, timeout etc. (its command/script are ignored). Names are
    /// `[A-Za-z0-9_.-]+`. Fails when the guest does not finish (timeout, panic).
    pub fn run_checks<N, C>(
        topology: &Topology,
        checks: &[(N, C)],
        spec: RunSpec,
    ) -> Result<BTreeMap<String, Output>, Error>
    where
        N: AsRef<str>,
        C: AsRef<str>,
    {
        let nonce = nonce();
        let pairs: Vec<(&str, &str)> = checks.iter().map(|(n, c)| (n.as_ref(), c.as_ref())).collect();
        let script = checks_script(&nonce, &pairs)?;
        let raw = run_raw(topology, &RunSpec { script: Some(script), command: Vec::new(), ..spec })?;
        let results = parse_checks(&nonce, &raw.stdout);
        let missing: Vec<&str> = pairs.iter().map(|p| p.0).filter(|n| !results.contains_key(*n)).collect();
        if raw.status != 0 || !missing.is_empty() {
            return Err(Error::Guest {
                status: raw.status,
                detail: format!(
                    "checks without output: {missing:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
                    String::from_utf8_lossy(&raw.stdout),
                    String::from_utf8_lossy(&raw.stderr)
                ),
            });
        }
        Ok(results)
    }

    /// Boots `topology` once per element of `boots`, all side by side (each a
    /// [`Vm::run_checks`] on its own thread, within [`max_parallel`] guests at
    /// once), and returns every check's output by name. A guest is one TCG
    /// thread, so on two cores two boots take about as long as the longer one.
    /// Check names must be unique across boots (a name twice is an error
    /// before anything boots); the first boot that fails is the error.
    pub fn run_boots<N, C>(
        topology: &Topology,
        boots: &[Vec<(N, C)>],
        spec: RunSpec,
    ) -> Result<BTreeMap<String, Output>, Error>
    where
        N: AsRef<str> + Sync,
        C: AsRef<str> + Sync,
    {
        let mut seen = std::collections::BTreeSet::new();
        if let Some(name) = boots.iter().flatten().map(|c| c.0.as_ref()).find(|n| !seen.insert(*n)) {
            return Err(Error::Harness(format!("check name '{name}' in more than one boot")));
        }
        let mut out = BTreeMap::new();
        std::thread::scope(|scope| {
            let runs: Vec<_> = boots
                .iter()
                .map(|checks| {
                    let spec = spec.clone();
                    scope.spawn(move || Vm::run_checks(topology, checks, spec))
                })
                .collect();
            for run in runs {
                let got = run.join().unwrap_or_else(|e| std::panic::resume_unwind(e))?;
                out.extend(got);
            }
            Ok(out)
        })
    }
}

/// Path of `testbed/numakit-vm`.
pub fn script_path() -> PathBuf {
    repo_root().join("testbed").join("numakit-vm")
}

/// The repository root (two levels above this crate).
pub fn repo_root() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    dir.ancestors().nth(2).unwrap_or(dir).to_path_buf()
}

/// `Ok` when guests can be booted here; else why not. Runs `numakit-vm --check`
/// once per process (which installs QEMU etc. and fetches the kernel if missing).
pub fn vm_available() -> Result<(), String> {
    static STATE: OnceLock<Result<(), String>> = OnceLock::new();
    STATE
        .get_or_init(|| {
            if !cfg!(all(target_os = "linux", target_arch = "x86_64")) {
                return Err("the test bed needs an x86_64 Linux host".into());
            }
            let script = script_path();
            if !script.is_file() {
                return Err(format!("{} is missing", script.display()));
            }
            let out = Command::new("bash")
                .arg(&script)
                .arg("--check")
                .stdin(Stdio::null())
                .output()
                .map_err(|e| format!("cannot run bash {}: {e}", script.display()))?;
            if out.status.success() {
                Ok(())
            } else {
                let err = String::from_utf8_lossy(&out.stderr);
                let tail: Vec<&str> = err.lines().rev().take(10).collect::<Vec<_>>().into_iter().rev().collect();
                Err(format!("numakit-vm --check failed ({}): {}", out.status, tail.join("\n")))
            }
        })
        .clone()
}

/// True when VM tests should run. When QEMU cannot run: panics under `CI=true`
/// (a CI run must not silently skip them), else prints why and returns false.
pub fn require_vm_or_skip() -> bool {
    match vm_available() {
        Ok(()) => true,
        Err(why) => {
            let ci = std::env::var("CI").is_ok_and(|v| v.eq_ignore_ascii_case("true") || v == "1");
            assert!(!ci, "the QEMU test bed is required under CI=true but cannot run: {why}");
            eprintln!("skipping VM test: {why}");
            false
        }
    }
}

struct Raw {
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    status: i32,
}

/// Runs numakit-vm, at most [`max_parallel`] at once per process.
fn run_raw(topology: &Topology, spec: &RunSpec) -> Result<Raw, Error> {
    topology.validate()?;
    let _slot = Slot::take();
    let first = boot(topology, spec)?;
    match (first.status, kernel_crash(&first.stderr)) {
        (125, Some(line)) => {
            // The emulated kernel died under the command (a scheduler oops
            // under TCG on a loaded host was seen): not the command's doing
            // unless it happens again, so the guest boots once more.
            eprintln!("numakit-testbed: the guest kernel crashed ({line}); booting it once more");
            boot(topology, spec)
        }
        _ => Ok(first),
    }
}

/// The first line of a guest kernel crash in what numakit-vm printed on
/// stderr (the console's tail on status 125): an oops, a BUG, a panic.
pub fn kernel_crash(stderr: &[u8]) -> Option<String> {
    const SIGNS: [&str; 5] = ["BUG: ", "Oops: ", "Kernel panic", "general protection fault", "RIP: 0010:"];
    String::from_utf8_lossy(stderr)
        .lines()
        .find(|l| SIGNS.iter().any(|s| l.contains(s)))
        .map(|l| l.trim().chars().take(160).collect())
}

fn boot(topology: &Topology, spec: &RunSpec) -> Result<Raw, Error> {
    let mut cmd = Command::new("bash");
    cmd.arg(script_path()).args(vm_args(topology, spec));
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().map_err(|e| Error::Harness(format!("cannot start numakit-vm: {e}")))?;
    let input = spec.script.clone().unwrap_or_default();
    let mut stdin = child.stdin.take();
    let writer = std::thread::spawn(move || stdin.as_mut().map(|s| s.write_all(input.as_bytes())));
    let out = child.wait_with_output().map_err(|e| Error::Harness(format!("numakit-vm: {e}")))?;
    // a script that fails early may not read all its input: that error is harmless
    let _ = writer.join();
    let status = out.status.code().unwrap_or_else(|| {
        use std::os::unix::process::ExitStatusExt;
        128 + out.status.signal().unwrap_or(0)
    });
    Ok(Raw { stdout: out.stdout, stderr: out.stderr, status })
}

/// The numakit-vm command line (after the script path) for `topology` and `spec`.
pub fn vm_args(topology: &Topology, spec: &RunSpec) -> Vec<String> {
    let mut a = topology.to_args();
    let timeout = spec.timeout.unwrap_or(DEFAULT_TIMEOUT).as_secs().max(1);
    a.extend(["--timeout".to_string(), timeout.to_string()]);
    let cwd = spec.cwd.clone().unwrap_or_else(repo_root);
    a.extend(["--cwd".to_string(), cwd.display().to_string()]);
    if spec.busybox_only {
        a.push("--no-hostroot".into());
    }
    for (k, v) in &spec.env {
        a.extend(["--env".to_string(), format!("{k}={v}")]);
    }
    if let Some(k) = &spec.kernel_args {
        a.extend(["--append".to_string(), k.clone()]);
    }
    for q in &spec.qemu {
        a.extend(["--qemu".to_string(), q.clone()]);
    }
    if spec.script.is_some() {
        a.extend(["--script".to_string(), "-".to_string()]);
    } else {
        a.push("--".into());
        a.extend(spec.command.iter().cloned());
    }
    a
}

/// How many guests one process boots at once: `NUMAKIT_VM_JOBS`, else the number
/// of host CPUs.
pub fn max_parallel() -> usize {
    std::env::var("NUMAKIT_VM_JOBS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n: &usize| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from))
}

/// A slot of the per-process limit on concurrent guests.
struct Slot;

static RUNNING: Mutex<usize> = Mutex::new(0);
static FREED: Condvar = Condvar::new();

impl Slot {
    fn take() -> Slot {
        let max = max_parallel();
        let mut n = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
        while *n >= max {
            n = FREED.wait(n).unwrap_or_else(|e| e.into_inner());
        }
        *n += 1;
        Slot
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut n = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
        *n = n.saturating_sub(1);
        FREED.notify_one();
    }
}

fn nonce() -> String {
    let t = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    format!("{:x}{:x}", t, std::process::id())
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The guest script running `checks`: each one's output is framed by a header line
/// `@@NKVM-<nonce> <name> <status> <stdout bytes> <stderr bytes>@@`.
pub fn checks_script(nonce: &str, checks: &[(&str, &str)]) -> Result<String, Error> {
    let mut s =
        String::from("nkvm_check() {\n  ( eval \"$2\" ) >/tmp/.nkvm.out 2>/tmp/.nkvm.err </dev/null\n  nkvm_rc=$?\n");
    s += &format!(
        "  printf '\\n@@NKVM-{nonce} %s %s %s %s@@\\n' \"$1\" $nkvm_rc $(wc -c </tmp/.nkvm.out) $(wc -c </tmp/.nkvm.err)\n"
    );
    s += "  cat /tmp/.nkvm.out /tmp/.nkvm.err\n}\n";
    let mut seen = std::collections::BTreeSet::new();
    for (name, cmd) in checks {
        let ok = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c));
        if !ok || !seen.insert(*name) {
            return Err(Error::Harness(format!("bad or duplicate check name '{name}' (want unique [A-Za-z0-9_.-]+)")));
        }
        s += &format!("nkvm_check {} {}\n", shell_quote(name), shell_quote(cmd));
    }
    Ok(s)
}

/// Splits the stdout of a [`checks_script`] run into name -> output.
pub fn parse_checks(nonce: &str, stdout: &[u8]) -> BTreeMap<String, Output> {
    let marker = format!("\n@@NKVM-{nonce} ");
    let mut out = BTreeMap::new();
    let mut pos = 0;
    while let Some(start) = find(&stdout[pos..], marker.as_bytes()).map(|i| pos + i + marker.len()) {
        let Some(end) = find(&stdout[start..], b"@@\n").map(|i| start + i) else { break };
        let header = String::from_utf8_lossy(&stdout[start..end]).into_owned();
        let fields: Vec<&str> = header.split(' ').collect();
        let nums: Option<Vec<usize>> = fields.get(1..4).map(|f| f.iter().filter_map(|x| x.parse().ok()).collect());
        let (name, [status, olen, elen]) = match (fields.first(), nums.as_deref()) {
            (Some(name), Some(&[s, o, e])) => (name.to_string(), [s, o, e]),
            _ => break,
        };
        let body = end + 3;
        let (o_end, e_end) = (body + olen, body + olen + elen);
        if e_end > stdout.len() {
            break;
        }
        out.insert(
            name,
            Output {
                stdout: String::from_utf8_lossy(&stdout[body..o_end]).into_owned(),
                stderr: String::from_utf8_lossy(&stdout[o_end..e_end]).into_owned(),
                status: status as i32,
            },
        );
        pos = e_end;
    }
    out
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vm_args_carry_topology_and_spec() -> Result<(), Error> {
        let t = Topology::named("memless")?;
        let spec = RunSpec::command(["numactl", "-H"])
            .env("A", "b c")
            .timeout(Duration::from_secs(42))
            .qemu(["-device", "pxb,id=p1,numa_node=1"]);
        let a = vm_args(&t, &spec).join(" ");
        assert!(a.contains("--qemu -device --qemu pxb,id=p1,numa_node=1 "), "{a}");
        assert!(a.starts_with("--node 0-1:1024M --node 2-3:0M --node 4-5:1024M --dist 0-1=20"), "{a}");
        assert!(a.contains("--sockets 3 --dies 1 --cores 2 --threads 1"), "{a}");
        assert!(a.contains("--timeout 42 --cwd ") && a.contains("--env A=b c"), "{a}");
        assert!(a.ends_with("-- numactl -H"), "{a}");
        let b = vm_args(&t, &RunSpec { busybox_only: true, ..RunSpec::script("true") }).join(" ");
        assert!(b.ends_with("--no-hostroot --script -"), "{b}");
        Ok(())
    }

    #[test]
    fn a_guest_kernel_crash_is_recognised() {
        let tail = b"numakit-vm: the guest never reported an exit status (QEMU exit 0)\n\
            [  788.91] ---[ end trace 0000000000000000 ]---\n[  788.914711] RIP: 0010:update_sd_lb_stats+0x149/0xa00\n";
        assert_eq!(kernel_crash(tail).as_deref(), Some("[  788.914711] RIP: 0010:update_sd_lb_stats+0x149/0xa00"));
        let oops = b"[ 3.1] BUG: kernel NULL pointer dereference, address: 0000000000000000\n[ 3.2] Oops: 0000 [#1]\n";
        assert!(kernel_crash(oops).is_some_and(|l| l.contains("NULL pointer")));
        assert_eq!(kernel_crash(b"numakit-vm: timeout after 300 s\n[ 9.0] reboot: Power down\n"), None);
    }

    #[test]
    fn checks_round_trip_through_the_framing() -> Result<(), Error> {
        let script = checks_script("n1", &[("a", "echo hi"), ("b.2", "it's")])?;
        assert!(script.contains("nkvm_check 'b.2' 'it'\\''s'"), "{script}");
        assert!(checks_script("n", &[("a b", "x")]).is_err());
        assert!(checks_script("n", &[("a", "x"), ("a", "y")]).is_err());
        // what the guest prints: leading noise, a body without a newline, binary
        let mut out = b"noise\n@@NKVM-n1 a 0 3 0@@\nhi\n".to_vec();
        out.extend_from_slice(b"\n@@NKVM-n1 b.2 3 4 5@@\nab\xffderr\n\n");
        let m = parse_checks("n1", &out);
        assert_eq!(m["a"], Output { stdout: "hi\n".into(), stderr: String::new(), status: 0 });
        assert_eq!(m["b.2"].status, 3);
        assert_eq!(m["b.2"].stdout, "ab\u{fffd}d");
        assert_eq!(m["b.2"].stderr, "err\n\n");
        assert!(parse_checks("other", &out).is_empty());
        Ok(())
    }

    /// The shell script and this crate must turn a named topology into the same QEMU
    /// arguments (runs `numakit-vm --dry-run`: bash only, no QEMU).
    #[test]
    fn script_and_crate_agree_on_qemu_arguments() -> Result<(), Error> {
        let dry = |args: &[String]| -> Result<String, Error> {
            let out = Command::new("bash")
                .arg(script_path())
                .arg("--dry-run")
                .args(args)
                .output()
                .map_err(|e| Error::Harness(e.to_string()))?;
            assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        };
        for t in Topology::all_named()? {
            let by_name = dry(&["--topo".into(), t.name.clone()])?;
            assert_eq!(by_name, dry(&t.to_args())?, "{}", t.name);
            let s = t.smp;
            let smp = format!(
                "{},sockets={},dies={},cores={},threads={}",
                t.cpu_count(),
                s.sockets,
                s.dies,
                s.cores,
                s.threads
            );
            assert!(by_name.lines().any(|l| l == smp), "{}: {by_name}", t.name);
            for (i, row) in t.distances.iter().enumerate() {
                for (j, d) in row.iter().enumerate().filter(|(j, _)| *j != i) {
                    assert!(by_name.contains(&format!("dist,src={i},dst={j},val={d}\n")), "{}: {i}>{j}", t.name);
                }
            }
            assert_eq!(by_name.contains("hmat=on"), t.hmat.is_some(), "{}", t.name);
        }
        let hmat = dry(&Topology::named("tiered")?.to_args())?;
        assert!(hmat.contains("node,nodeid=2,memdev=mem2,initiator=0\n"), "{hmat}");
        assert!(
            hmat.contains("hmat-lb,initiator=1,target=2,hierarchy=memory,data-type=access-latency,latency=400\n"),
            "{hmat}"
        );
        Ok(())
    }

    #[test]
    fn script_rejects_bad_topologies_by_name() -> Result<(), Error> {
        for (args, want) in [
            ("--node 0-1:1G --node 1-2:1G", "CPU 1 is in node 0 and node 1"),
            ("--node 0-1:1G --node 2-3:1G --dist 0-3=20", "no node 3"),
            ("--node 0-1:1G --node 2-3:1G --dist 0-1=9", "'0-1=9'"),
            ("--node 0-1:1G --dist 0-0=11", "self-distance of node 0"),
            ("--node 0,2:1G --node 1,3:1G --threads 2", "SMT siblings"),
            ("--topo nosuch", "unknown topology 'nosuch'"),
        ] {
            let out = Command::new("bash")
                .arg(script_path())
                .arg("--dry-run")
                .args(args.split(' '))
                .output()
                .map_err(|e| Error::Harness(e.to_string()))?;
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{args}");
            assert!(err.contains(want), "{args}: {err}");
        }
        Ok(())
    }
}
