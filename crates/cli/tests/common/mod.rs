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
