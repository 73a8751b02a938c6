//! The machine model against real machines: every sysfs/procfs dump in
//! `../shared/fixtures/hwloc/` (test data of the hwloc project, BSD-3-Clause,
//! see its COPYING) is extracted at test time into the target folder and
//! read by `numakit`; the result must equal the reference answers produced
//! by the real tools (hwloc 2.9.0 JSON, numactl 2.0.16 `--hardware` text).
//!
//! Where hwloc and numactl disagree, the raw sysfs files decide; each such
//! case is listed in `RAW_SYSFS_DECIDES` with the reason.

mod common;

use std::collections::BTreeMap;
use std::process::Command;

use common::{fixtures, Fixture};

use numakit::sets::{CpuSet, NodeSet};
use numakit::sys::SysRoot;
use numakit::topo::Topology;
use serde_json::Value;

/// Where hwloc's view differs from the kernel's raw files: (fixture, the
/// check that differs, why numakit follows the raw files). Everything else
/// of these fixtures is still compared.
const RAW_SYSFS_DECIDES: &[(&str, &str, &str)] = &[
    (
        "8em64t-2s2ca2c-buggynuma",
        "all",
        "the dump has 8 node folders whose cpumaps all claim CPUs 0-7 and whose distances are all 10; \
         hwloc discards them as buggy and reports one node; numactl (and numakit) report the 8 nodes \
         the kernel lists (checked against numactl's reference)",
    ),
    (
        "nvidiagpunumanodes",
        "nodes, allowed nodes",
        "hwloc hides the six CPU-less GPU memory nodes (250-255) outside its 'kept' variant; the kernel \
         lists 8 node folders and numactl shows all 8, so does numakit",
    ),
    (
        "40intel64-4n10c+pci-conflicts",
        "packages",
        "hwloc leaves node 3's CPUs outside any package; physical_package_id and core_siblings_list \
         give 4 packages of 10 CPUs each (0,4,..36 / 1,5,..37 / 2,6,..38 / 3,7,..39)",
    ),
    (
        "16em64t-4s2c2t-offlines",
        "numactl cpus",
        "the dump has no cpu/online file; its cpuN/online files take CPUs 2,3,10,11 (and others) offline \
         (hwloc too counts 12 PUs). libnuma reads only cpu/online and so prints all 16; numakit prints \
         the 12 online CPUs",
    ),
    (
        "offline-cpu0-node0",
        "numactl distances",
        "node1/distance holds \"21 10\", one entry per node of node/possible (0-1), while only node1 has \
         a folder; numactl maps the first entry onto node 1 and prints a self-distance of 21, which \
         SLIT forbids (self is always 10). numakit maps the row onto node/possible: node 1 -> 1 is 10",
    ),
];

fn decided_by_raw(fixture: &str, check: &str) -> bool {
    RAW_SYSFS_DECIDES.iter().any(|(f, c, _)| *f == fixture && (c.split(", ").any(|x| x == check) || *c == "all"))
}

/// Nodes whose CPUs hwloc moves elsewhere (memory-less or CPU-less nodes);
/// the kernel's cpulist is the truth and numactl's reference checks it.
fn hwloc_moves_cpus(reference: &Value) -> Vec<u64> {
    reference["numactl_hardware"]["agreement_with_hwloc"]["nodes_with_different_cpus"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_u64).collect())
        .unwrap_or_default()
}

fn list(v: &Value) -> CpuSet {
    CpuSet::parse_list(v.as_str().unwrap_or("")).expect("ref list")
}

/// Checks the model of one fixture against hwloc's reference JSON;
/// returns the differences.
fn check_against_hwloc(f: &Fixture, t: &Topology) -> Vec<String> {
    let mut bad = Vec::new();
    let r = &f.reference;
    if decided_by_raw(&f.name, "all") {
        return bad; // numactl's reference is checked instead (see the reason)
    }
    let ref_nodes: NodeSet =
        r["nodes"].as_array().expect("nodes").iter().filter_map(|n| n["os_index"].as_u64()).map(|v| v as u32).collect();
    if ref_nodes != t.node_ids() && !decided_by_raw(&f.name, "nodes") {
        bad.push(format!("nodes: hwloc {} numakit {}", ref_nodes.to_list(), t.node_ids().to_list()));
    }
    let moved = hwloc_moves_cpus(r);
    for rn in r["nodes"].as_array().expect("nodes") {
        let id = rn["os_index"].as_u64().expect("os_index") as u32;
        let Some(n) = t.node(id) else { continue };
        if !moved.contains(&u64::from(id)) {
            let ours = n.cpus.intersection(&t.online_cpus);
            if ours != list(&rn["cpus"]) {
                bad.push(format!("node {id} cpus: hwloc {} numakit {}", rn["cpus"], ours.to_list()));
            }
        }
        let ours_kb = n.memory.map(|m| m.total_bytes / 1024);
        if ours_kb != rn["memory_kb"].as_u64() && !(ours_kb.is_none() && rn["memory_kb"].as_u64() == Some(0)) {
            bad.push(format!("node {id} memory: hwloc {} kB numakit {ours_kb:?} kB", rn["memory_kb"]));
        }
        // Huge pages of every size hwloc lists (the first entry is the base page).
        for p in rn["pages"].as_array().into_iter().flatten().skip(1) {
            let size = p["size_kb"].as_u64().expect("size") * 1024;
            let count = p["count"].as_u64().expect("count");
            let ours = n.hugepages.iter().find(|h| h.size_bytes == size).map_or(0, |h| h.total);
            if ours != count {
                bad.push(format!("node {id} hugepages {size}: hwloc {count} numakit {ours}"));
            }
        }
    }
    if let Some(d) = r["distances"].as_array().and_then(|a| a.first()) {
        let ids: Vec<u32> =
            d["os_indexes"].as_array().expect("ids").iter().filter_map(Value::as_u64).map(|v| v as u32).collect();
        for (i, row) in d["matrix"].as_array().expect("matrix").iter().enumerate() {
            for (j, v) in row.as_array().expect("row").iter().enumerate() {
                let ours = t.distance(ids[i], ids[j]);
                if ours != v.as_u64().map(|x| x as u32) {
                    bad.push(format!("distance {}->{}: hwloc {v} numakit {ours:?}", ids[i], ids[j]));
                }
            }
        }
    }
    let c = &r["counts"];
    let pus = t.online_cpus.len() as u64;
    if c["pus"].as_u64() != Some(pus) {
        bad.push(format!("pus: hwloc {} numakit {pus}", c["pus"]));
    }
    if c["cores"].as_u64() != Some(t.core_count() as u64) {
        bad.push(format!("cores: hwloc {} numakit {}", c["cores"], t.core_count()));
    }
    if c["packages"].as_u64() != Some(t.packages.len() as u64) && !decided_by_raw(&f.name, "packages") {
        bad.push(format!("packages: hwloc {} numakit {}", c["packages"], t.packages.len()));
    }
    let m = &r["machine"];
    if list(&m["allowed_cpus"]) != t.allowed.cpus {
        bad.push(format!("allowed cpus: hwloc {} numakit {}", m["allowed_cpus"], t.allowed.cpus.to_list()));
    }
    if NodeSet::parse_list(m["allowed_nodes"].as_str().unwrap_or("")).expect("nodes") != t.allowed.nodes
        && !decided_by_raw(&f.name, "allowed nodes")
    {
        bad.push(format!("allowed nodes: hwloc {} numakit {}", m["allowed_nodes"], t.allowed.nodes.to_list()));
    }
    bad
}

#[test]
fn model_equals_hwloc_reference_on_every_dump() {
    let fx = fixtures();
    let mut failures = BTreeMap::new();
    for f in fx {
        match Topology::read(&SysRoot::at(&f.root)) {
            Ok(t) => {
                let bad = check_against_hwloc(f, &t);
                if !bad.is_empty() {
                    failures.insert(f.name.clone(), bad);
                }
            }
            Err(e) => {
                failures.insert(f.name.clone(), vec![format!("read failed: {e}")]);
            }
        }
    }
    if !fx.is_empty() {
        assert!(fx.len() >= 50, "only {} fixtures found", fx.len());
    }
    assert!(failures.is_empty(), "{} of {} fixtures differ:\n{:#?}", failures.len(), fx.len(), failures);
}

#[test]
fn topo_hardware_equals_real_numactl_line_for_line() {
    let fx = fixtures();
    let mut failures = BTreeMap::new();
    let mut compared = 0;
    for f in fx {
        let real = f.refdir.join("numactl-H.real.txt");
        let Ok(expected) = std::fs::read_to_string(&real) else { continue };
        if decided_by_raw(&f.name, "numactl cpus") {
            continue; // see RAW_SYSFS_DECIDES; the model test still checks it against hwloc
        }
        compared += 1;
        let expected = if decided_by_raw(&f.name, "numactl distances") {
            // See RAW_SYSFS_DECIDES: only the distance values differ.
            expected.replace("  1:  21 ", "  1:  10 ")
        } else {
            expected
        };
        let out = Command::new(env!("CARGO_BIN_EXE_numakit"))
            .args(["--sysroot"])
            .arg(&f.root)
            .args(["topo", "--hardware"])
            .output()
            .expect("run numakit");
        let got = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() || got != expected {
            let diff: Vec<String> = expected
                .lines()
                .zip(got.lines().chain(std::iter::repeat("<missing>")))
                .filter(|(a, b)| a != b)
                .take(3)
                .map(|(a, b)| format!("want {a:?} got {b:?}"))
                .collect();
            failures.insert(f.name.clone(), (String::from_utf8_lossy(&out.stderr).to_string(), diff));
        }
    }
    if !fx.is_empty() {
        assert!(compared >= 45, "only {compared} numactl references compared");
    }
    assert!(failures.is_empty(), "{} of {compared} differ: {:#?}", failures.len(), failures);
}

#[test]
fn json_has_the_documented_shape_on_every_dump() {
    for f in fixtures() {
        let out = Command::new(env!("CARGO_BIN_EXE_numakit"))
            .arg("--sysroot")
            .arg(&f.root)
            .args(["topo", "--json"])
            .output()
            .expect("run");
        assert!(out.status.success(), "{}: {}", f.name, String::from_utf8_lossy(&out.stderr));
        let v: Value = serde_json::from_slice(&out.stdout).expect("json");
        common::assert_topo_json_shape(&v);
        let n = v["nodes"].as_array().expect("nodes").len();
        assert_eq!(v["distances"].as_array().expect("d").len(), n, "{}", f.name);
    }
}

/// The nodes' memory beside /proc/meminfo's on every dump, computed here
/// from the raw files: the JSON's figures match them, and only
/// `offline-cpu0-node0` (node 0's folder absent: half the memory in no
/// node) does not add up. The real dumps' nodes add up to between 3.4%
/// more than MemTotal (older kernels count reserved pages per node) and
/// 0.3% less. The text view says so exactly where the JSON does, and lists
/// every non-bridge PCI device whose numa_node is -1.
#[test]
fn node_memory_and_node_less_devices_on_every_dump() {
    let mut flagged = Vec::new();
    for f in fixtures() {
        let nk = |args: &[&str]| {
            Command::new(env!("CARGO_BIN_EXE_numakit")).arg("--sysroot").arg(&f.root).args(args).output().expect("run")
        };
        let j: Value = serde_json::from_slice(&nk(&["topo", "--json"]).stdout).expect("json");
        let text = String::from_utf8_lossy(&nk(&["topo"]).stdout).into_owned();
        let kb = |path: &std::path::Path| -> Option<u64> {
            let t = std::fs::read_to_string(path).ok()?;
            let line = t.lines().find(|l| l.contains("MemTotal:"))?;
            line.split_whitespace().rev().nth(1)?.parse::<u64>().ok().map(|k| k * 1024)
        };
        let node_dir = f.root.join("sys/devices/system/node");
        let node_sum: u64 = std::fs::read_dir(&node_dir)
            .map(|d| {
                d.filter_map(Result::ok)
                    .filter(|e| e.file_name().to_string_lossy().starts_with("node"))
                    .filter_map(|e| kb(&e.path().join("meminfo")))
                    .sum()
            })
            .unwrap_or(0);
        let a = &j["memory_accounting"];
        match kb(&f.root.join("proc/meminfo")) {
            Some(total) if node_sum > 0 => {
                assert_eq!(a["meminfo_total_bytes"].as_u64(), Some(total), "{}: {a}", f.name);
                assert_eq!(a["nodes_total_bytes"].as_u64(), Some(node_sum), "{}: {a}", f.name);
                assert_eq!(a["difference_bytes"].as_i64(), Some(total as i64 - node_sum as i64), "{}", f.name);
            }
            _ => assert!(a.is_null(), "{}: no figures to compare, yet {a}", f.name),
        }
        let says = text.contains("Memory: the nodes' MemTotal add up to");
        assert_eq!(says, a["adds_up"] == false, "{}: {text}", f.name);
        if says {
            flagged.push(f.name.clone());
        }
        let none: Vec<&Value> = j["pci_devices"]
            .as_array()
            .expect("pci")
            .iter()
            .filter(|d| d["numa_node"].is_null() && !d["class"].as_str().is_some_and(|c| c.starts_with("0x06")))
            .collect();
        let line = text.lines().find(|l| l.starts_with("No node (numa_node -1): "));
        match line {
            None => assert!(none.is_empty(), "{}: {} devices on no node, no line", f.name, none.len()),
            Some(l) => {
                let shown = none.iter().filter(|d| l.contains(d["address"].as_str().unwrap_or("?"))).count();
                let more = l.split(" and ").nth(1).and_then(|m| m.split(' ').next()).and_then(|n| n.parse().ok());
                assert_eq!(shown + more.unwrap_or(0), none.len(), "{}: {l}", f.name);
            }
        }
    }
    if !fixtures().is_empty() {
        assert_eq!(flagged, ["offline-cpu0-node0"]);
    }
}

/// Machines whose shape the text view and the checks once got wrong:
/// a hybrid CPU (cores of two and one threads), cores the kernel does not
/// group (s390), and a generic-initiator node (no CPUs, no memory).
#[test]
fn odd_machines_are_described_as_they_are() {
    let nk = |root: &std::path::Path, args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_numakit"))
            .arg("--sysroot")
            .arg(root)
            .args(args)
            .output()
            .expect("run numakit")
    };
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    if let Some(r) = common::fixture_root("20em64t-hybrid-1p6c2t+2ca4co1t") {
        let t = text(&nk(&r, &["topo"]).stdout);
        assert!(t.contains("node 0: 6 cores x 2 threads + 8 cores x 1 thread, CPUs 0-19"), "{t}");
    }
    if let Some(r) = common::fixture_root("2s390-2c") {
        let t = text(&nk(&r, &["topo"]).stdout);
        assert!(t.contains("node 0: cores unknown, CPUs 0-1") && !t.contains("0 cores"), "{t}");
    }
    if let Some(r) = common::fixture_root("fakememinitiators-1np2c+1npp+gi") {
        let t = text(&nk(&r, &["topo"]).stdout);
        let row = t.lines().find(|l| l.starts_with("4 ")).unwrap_or_default();
        assert!(row.contains("- (generic initiator)") && !row.contains("memory only"), "{t}");
        let j: serde_json::Value = serde_json::from_slice(&nk(&r, &["topo", "--json"]).stdout).expect("json");
        let n4 = j["nodes"].as_array().and_then(|n| n.iter().find(|n| n["id"] == 4)).cloned().unwrap_or_default();
        assert_eq!((n4["generic_initiator"].as_bool(), n4["has_cpu"].as_bool()), (Some(true), Some(false)), "{n4}");
        assert_eq!(j["nodes"][0]["generic_initiator"], false);
        let o = nk(&r, &["run", "--dry-run", "-m", "4", "--", "true"]);
        let e = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{e}");
        assert!(e.contains("node 4 has no memory (a generic initiator") && !e.contains("CPU node"), "{e}");
    }
}

/// The nodes `topo`'s text lists under each package, memory-only and other
/// CPU-less nodes included, against hwloc's packages' node sets: hwloc
/// attaches a CPU-less node to its HMAT initiators, else to its nearest
/// nodes by SLIT distance unless all are as near (then to no package).
#[test]
fn text_packages_hold_the_nodes_hwloc_puts_there() {
    let mut failures = BTreeMap::new();
    let mut cpuless_placed = 0;
    for f in fixtures() {
        if decided_by_raw(&f.name, "all") || decided_by_raw(&f.name, "packages") {
            continue;
        }
        let out = Command::new(env!("CARGO_BIN_EXE_numakit"))
            .arg("--sysroot")
            .arg(&f.root)
            .arg("topo")
            .output()
            .expect("run numakit");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        // package id (None: "no package") -> the nodes listed under it.
        let mut ours: BTreeMap<Option<u32>, NodeSet> = BTreeMap::new();
        let mut current: Option<Option<u32>> = None;
        for line in text.lines().skip_while(|l| !l.starts_with("Packages -> ")).skip(1) {
            if !line.starts_with("  ") {
                break;
            }
            let mut rest = line.trim_start();
            if let Some(r) = rest.strip_prefix("package ") {
                let (id, r) = r.split_once(':').expect("package id");
                current = Some(Some(id.parse().expect("package id")));
                rest = r.trim_start();
            } else if let Some(r) = rest.strip_prefix("no package:") {
                current = Some(None);
                rest = r.trim_start();
            }
            let Some(node) = rest.strip_prefix("node ").and_then(|r| r.split_once(':')).map(|(n, _)| n) else {
                continue;
            };
            let pkg = current.expect("a node line under a package");
            ours.entry(pkg).or_default().insert(node.parse().expect("node id"));
        }
        cpuless_placed += text.lines().filter(|l| l.contains(": memory only, ") && !l.contains("no package")).count();
        // hwloc's packages by os_index (it splits the packages of
        // 28em64t-2s2n7c-buggycoresiblings in two objects with one index).
        let mut theirs: BTreeMap<u32, NodeSet> = BTreeMap::new();
        for p in f.reference["packages"].as_array().into_iter().flatten() {
            let (Some(id), Some(nodes)) = (p["os_index"].as_u64(), p["nodes"].as_str()) else { continue };
            let want = NodeSet::parse_list(nodes).expect("ref nodes");
            theirs.entry(id as u32).and_modify(|s| *s = s.union(&want)).or_insert(want);
        }
        let mut bad = Vec::new();
        for (id, want) in theirs {
            let got = ours.get(&Some(id)).cloned().unwrap_or_default();
            if got != want {
                bad.push(format!("package {id}: hwloc nodes {} text {}", want.to_list(), got.to_list()));
            }
        }
        if !bad.is_empty() {
            failures.insert(f.name.clone(), bad);
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
    if !fixtures().is_empty() {
        // The KNL's MCDRAM, the fake tiered and initiator machines.
        assert!(cpuless_placed >= 18, "only {cpuless_placed} memory-only nodes under a package");
    }
}
