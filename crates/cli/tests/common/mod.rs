//! Shared helpers of the integration tests.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::Value;

/// `../shared/fixtures/hwloc` beside the repository (or `NUMAKIT_FIXTURES`).
pub fn fixtures_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("NUMAKIT_FIXTURES") {
        return Some(PathBuf::from(d));
    }
    let d = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/hwloc");
    d.join("refs").is_dir().then_some(d)
}

/// With `CI=true` a missing prerequisite fails the test; elsewhere it is
/// skipped with the reason printed.
pub fn skip_or_fail(reason: &str) {
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("required in CI: {reason}");
    }
    eprintln!("SKIPPED: {reason}");
}

/// Asserts the fields docs/topo-json.md promises.
pub fn assert_topo_json_shape(v: &Value) {
    assert_eq!(v["schema_version"], 1);
    for n in v["nodes"].as_array().expect("nodes[]") {
        assert!(n["id"].is_u64(), "node id");
        assert!(n["cpus"].as_array().expect("cpus").iter().all(Value::is_u64));
        if !n["memory"].is_null() {
            assert!(n["memory"]["total_bytes"].is_u64());
            assert!(n["memory"]["free_bytes"].is_u64() || n["memory"]["free_bytes"].is_null());
        }
        assert!(n["has_cpu"].is_boolean() && n["has_memory"].is_boolean());
        assert!(n["hugepages"].is_array());
    }
    assert!(v["distances"].as_array().expect("distances").iter().all(Value::is_array));
    for c in v["cpus"].as_array().expect("cpus[]") {
        assert!(c["id"].is_u64() && c["online"].is_boolean());
        for k in ["node", "package", "core"] {
            assert!(c[k].is_u64() || c[k].is_null(), "cpu {k}");
        }
        assert!(c["siblings"].is_array() || c["siblings"].is_null());
    }
    assert!(v["packages"].is_array() && v["caches"].is_array());
    for d in v["pci_devices"].as_array().expect("pci_devices[]") {
        assert!(d["address"].is_string());
        assert!(d["numa_node"].is_u64() || d["numa_node"].is_null());
        assert!(d["netdevs"].is_array() && d["blockdevs"].is_array());
        assert!(d["class"].is_string() || d["class"].is_null());
    }
    assert!(v["allowed"]["cpus"].is_array() && v["allowed"]["nodes"].is_array());
    let a = &v["memory_accounting"];
    if !a.is_null() {
        assert!(a["meminfo_total_bytes"].is_u64() && a["nodes_total_bytes"].is_u64(), "{a}");
        assert!(a["difference_bytes"].is_i64() && a["adds_up"].is_boolean(), "{a}");
    }
}

/// One extracted real-machine dump with its references.
pub struct Fixture {
    /// Fixture name.
    pub name: String,
    /// The extracted root.
    pub root: PathBuf,
    /// hwloc reference JSON.
    pub reference: Value,
    /// refs/NAME folder.
    pub refdir: PathBuf,
}

/// The fixtures, extracted once per test binary.
pub fn fixtures() -> &'static [Fixture] {
    static FIXTURES: std::sync::OnceLock<Vec<Fixture>> = std::sync::OnceLock::new();
    FIXTURES.get_or_init(extract_all)
}

fn extract_all() -> Vec<Fixture> {
    let Some(dir) = fixtures_dir() else {
        skip_or_fail("the hwloc fixtures (../shared/fixtures/hwloc) are not beside the repository");
        return Vec::new();
    };
    let work = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hwloc-fixtures");
    // Test processes run side by side (cargo nextest): one extracts, the
    // others wait for it on this lock and find the markers.
    std::fs::create_dir_all(&work).expect("fixtures folder");
    let lock = std::fs::File::create(work.join(".lock")).expect("fixtures lock");
    // SAFETY: flock on a descriptor this function owns; released when `lock` is dropped.
    assert_eq!(unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&lock), libc::LOCK_EX) }, 0, "lock fixtures");
    let mut out = Vec::new();
    let mut refs: Vec<PathBuf> = std::fs::read_dir(dir.join("refs"))
        .expect("refs folder")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    refs.sort();
    for rpath in refs {
        let reference: Value = serde_json::from_slice(&std::fs::read(&rpath).expect("read ref")).expect("ref json");
        if !reference["variant"].is_null() {
            continue; // variants are views of a base fixture
        }
        let name = reference["fixture"].as_str().expect("fixture name").to_string();
        let tar_name = Path::new(reference["source"]["path"].as_str().expect("source path"))
            .file_name()
            .expect("tar name")
            .to_owned();
        let tarball = dir.join("tarballs").join(tar_name);
        assert!(tarball.exists(), "{name}: tarball {} missing", tarball.display());
        let dest = work.join(&name);
        if !dest.join(".extracted").exists() {
            let _ = std::fs::remove_dir_all(&dest);
            std::fs::create_dir_all(&dest).expect("mkdir");
            let st = Command::new("tar")
                .arg("-xjf")
                .arg(&tarball)
                .arg("-C")
                .arg(&dest)
                .status()
                .expect("run tar (needs bzip2)");
            assert!(st.success(), "{name}: tar failed");
            std::fs::write(dest.join(".extracted"), "").expect("marker");
        }
        let top: Vec<PathBuf> = std::fs::read_dir(&dest)
            .expect("dest")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_dir())
            .collect();
        assert_eq!(top.len(), 1, "{name}: expected one top folder");
        let mut root = top[0].clone();
        if root.join("fsroot").is_dir() {
            root = root.join("fsroot");
        }
        out.push(Fixture { refdir: dir.join("refs").join(&name), name, root, reference });
    }
    out
}

/// The root of the fixture called `name`, if the fixtures are present.
pub fn fixture_root(name: &str) -> Option<PathBuf> {
    fixtures().iter().find(|f| f.name == name).map(|f| f.root.clone())
}

/// A child that sleeps `secs` (a `sleep` argument: distinct values tell
/// the children apart in process lists); killed on drop.
pub struct Sleeper(Child);

impl Sleeper {
    /// Starts it and waits until it has settled: `sleep` exec'd, its loader
    /// done (it is asleep) and its memory no longer changing; before that,
    /// two tools run one after the other can see different mappings.
    pub fn start(secs: &str) -> Self {
        let c = Command::new("sleep").arg(secs).stdout(Stdio::null()).spawn().expect("sleep");
        let pid = c.id();
        let read = |f: &str| std::fs::read_to_string(format!("/proc/{pid}/{f}")).unwrap_or_default();
        let asleep = || read("stat").rsplit_once(") ").is_some_and(|(_, r)| r.starts_with('S'));
        let mut last = String::new();
        for _ in 0..400 {
            let maps = read("numa_maps");
            if read("comm").trim() == "sleep" && asleep() && maps == last {
                break;
            }
            last = maps;
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        Sleeper(c)
    }

    /// Its pid, as text.
    pub fn pid(&self) -> String {
        self.0.id().to_string()
    }
}

impl Drop for Sleeper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `numakit exporter` on a free loopback port (plus `extra`
/// arguments); returns the child and the address it serves on, read from
/// its first line on stderr.
pub fn spawn_exporter(extra: &[&str]) -> (Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_numakit"))
        .args(["exporter", "--listen", "127.0.0.1:0"])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start exporter");
    let mut line = String::new();
    BufReader::new(child.stderr.take().expect("stderr")).read_line(&mut line).expect("first line");
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_string();
    (child, addr)
}

/// The folder of [`fake_slurm_root`]'s job, below the root.
pub const SLURM_JOB_FOLDER: &str = "sys/fs/cgroup/system.slice/slurmstepd.scope/job_42";

/// Writes `content` to `rel` below `root`, making folders.
pub fn write(root: &Path, rel: &str, content: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
    std::fs::write(p, content).expect("write");
}

/// A `/proc/PID/stat` line of a one-thread process last on `cpu`.
pub fn fake_stat_line(pid: i32, comm: &str, cpu: u32) -> String {
    let mut f: Vec<String> = vec!["0".into(); 37];
    f[0] = "S".into();
    f[1] = "1".into();
    f[17] = "1".into();
    f[36] = cpu.to_string();
    format!("{pid} ({comm}) {}\n", f.join(" "))
}

/// A synthetic root: two nodes (CPUs 0-1, 2-3), cgroup v2 with Slurm job
/// 42 ([`SLURM_JOB_FOLDER`]: `numa_pages_migrated` = `migrated`), a step
/// and a task cgroup, processes 10 (on node 0) and 20 (on node 1).
pub fn fake_slurm_root(root: &Path, migrated: u64) {
    let m = numakit::topo::synth::SynthMachine::two_by_two(1024);
    m.write(root).expect("synth");
    for n in 0..2 {
        write(root, &format!("sys/devices/system/node/node{n}/numastat"), "numa_hit 5\nnuma_miss 0\nother_node 0\n");
    }
    write(root, "proc/vmstat", "numa_pages_migrated 0\n");
    write(root, "sys/fs/cgroup/cgroup.controllers", "cpuset memory\n");
    write(root, &format!("{SLURM_JOB_FOLDER}/cgroup.procs"), "");
    write(root, &format!("{SLURM_JOB_FOLDER}/cpuset.cpus.effective"), "0-3\n");
    write(
        root,
        &format!("{SLURM_JOB_FOLDER}/memory.stat"),
        &format!("anon 1\nnuma_pages_migrated {migrated}\nnuma_hint_faults 9\n"),
    );
    write(root, &format!("{SLURM_JOB_FOLDER}/memory.numa_stat"), "anon N0=409600 N1=409600\nfile N0=0 N1=204800\n");
    write(root, &format!("{SLURM_JOB_FOLDER}/step_0/cgroup.procs"), "10\n");
    write(root, &format!("{SLURM_JOB_FOLDER}/step_0/task_0/cgroup.procs"), "20\n");
    write(root, "proc/10/stat", &fake_stat_line(10, "lead", 0));
    write(root, "proc/10/numa_maps", "1000 default anon=100 N0=100 kernelpagesize_kB=4\n");
    write(root, "proc/20/stat", &fake_stat_line(20, "rank", 2));
    write(root, "proc/20/numa_maps", "1000 interleave:0-1 anon=200 N0=100 N1=100 kernelpagesize_kB=4\n");
}

/// A frozen copy of this machine's `/sys/devices/system/node` in `dir`:
/// every regular file that can be read, four levels down (counters,
/// meminfo, CPU lists, huge pages), so that two tools run one after the
/// other on it read the same figures. Returns the copy's folder.
pub fn freeze_node_dir(dir: &Path) -> PathBuf {
    fn copy(from: &Path, to: &Path, depth: u32) {
        let Ok(entries) = std::fs::read_dir(from) else { return };
        for e in entries.flatten() {
            let Ok(t) = e.file_type() else { continue };
            let dest = to.join(e.file_name());
            if t.is_dir() && depth > 0 {
                std::fs::create_dir_all(&dest).expect("mkdir");
                copy(&e.path(), &dest, depth - 1);
            } else if t.is_file() {
                // Write-only attributes (compact, reclaim) cannot be read.
                if let Ok(b) = std::fs::read(e.path()) {
                    std::fs::write(&dest, b).expect("write the frozen copy");
                }
            }
        }
    }
    let node_dir = dir.join("sys/devices/system/node");
    std::fs::create_dir_all(&node_dir).expect("mkdir");
    copy(Path::new("/sys/devices/system/node"), &node_dir, 4);
    node_dir
}

/// Runs `program` as argv[0] `name` with `args` and `envs` (and
/// `NUMASTAT_WIDTH`, `NUMAKIT_SYSROOT` removed) in a private mount
/// namespace where `node_dir` lies over `/sys/devices/system/node`; `None`
/// when that namespace cannot be made here (not root).
pub fn run_on_node_dir(
    node_dir: &Path,
    program: &Path,
    name: &str,
    args: &[&str],
    envs: &[(&str, &str)],
) -> Option<std::process::Output> {
    let mut c = Command::new("unshare");
    c.args(["-m", "--propagation", "private", "bash", "-c"])
        .arg(r#"mount --bind "$0" /sys/devices/system/node || exit 97; p=$1; n=$2; shift 2; exec -a "$n" "$p" "$@""#)
        .arg(node_dir)
        .arg(program)
        .arg(name)
        .args(args)
        .env_remove("NUMASTAT_WIDTH")
        .env_remove("NUMAKIT_SYSROOT")
        .env_remove("POSIXLY_CORRECT")
        .envs(envs.iter().copied())
        .stdin(Stdio::null());
    let o = c.output().ok()?;
    let refused = o.status.code() == Some(97) || String::from_utf8_lossy(&o.stderr).starts_with("unshare:");
    (!refused).then_some(o)
}

/// The machine that the test bed's topology options describe (`--node
/// 0-1:0 --node 2-3:1G --dist 0-1=20 --hmat-lb 0-1=150:10240 ...`, as
/// `numakit-vm` takes them), as a synthetic sysfs tree's description: the
/// same nodes, CPUs, packages and distances, and the HMAT access classes
/// the kernel would show (for each memory node, the initiators with the
/// lowest latency and, among them, the highest bandwidth; classes 0 and
/// 1 alike, every test bed initiator having CPUs). Every CPU idle in its
/// `/proc/stat` once [`write_synth`] wrote it.
pub fn synth_of(opts: &str) -> numakit::topo::synth::SynthMachine {
    use numakit::topo::synth::{SynthAccess, SynthCpu, SynthMachine};
    let words: Vec<&str> = opts.split_whitespace().collect();
    let t = numakit_testbed::Topology::from_options(&words).unwrap_or_else(|e| panic!("{opts}: {e}"));
    let mut cpus: Vec<SynthCpu> = Vec::new();
    for (node, n) in (0u32..).zip(&t.nodes) {
        for &id in &n.cpus {
            let package = t.smp.package_of(id);
            cpus.push(SynthCpu { id, node, package, core: id });
        }
    }
    cpus.sort_by_key(|c| c.id);
    let mut access = Vec::new();
    for (target, _) in t.nodes.iter().enumerate().filter(|(_, n)| n.mem_mib > 0) {
        let lbs: Vec<&numakit_testbed::HmatLb> = t.hmat.iter().flatten().filter(|l| l.target == target).collect();
        let Some(lat) = lbs.iter().map(|l| l.latency_ns).min() else { continue };
        let bw = lbs.iter().filter(|l| l.latency_ns == lat).map(|l| l.bandwidth_mib_s).max().unwrap_or(0);
        let best: Vec<u32> =
            lbs.iter().filter(|l| l.latency_ns == lat && l.bandwidth_mib_s == bw).map(|l| l.initiator as u32).collect();
        for class in [0, 1] {
            access.push(SynthAccess {
                target: target as u32,
                class,
                initiators: best.clone(),
                latency_ns: (lat, lat),
                bandwidth_mib_s: (bw, bw),
            });
        }
    }
    SynthMachine {
        cpus,
        nodes: (0u32..).zip(&t.nodes).map(|(i, n)| (i, n.mem_mib)).collect(),
        distances: t.distances.clone(),
        free_percent: 90,
        access,
        tiers: Vec::new(),
    }
}

/// Writes `m` into a new temporary root with a `/proc/stat` in which
/// every CPU is idle.
pub fn write_synth(m: &numakit::topo::synth::SynthMachine) -> tempfile::TempDir {
    let d = tempfile::tempdir().expect("tmp");
    m.write(d.path()).expect("write");
    let mut stat = String::from("cpu  0 0 0 0\n");
    for c in &m.cpus {
        stat.push_str(&format!("cpu{} 0 0 0 1000 0 0 0 0 0 0\n", c.id));
    }
    std::fs::write(d.path().join("proc/stat"), stat).expect("stat");
    d
}
pub mod bounded;
