//! `present::svg` on synthetic machines (packages, nodes spanning packages,
//! compact PUs, memory-only and memory-less nodes, devices, 1 to 64 nodes,
//! escaping) and on the real dumps when they are present.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

use super::layout::wrap;
use super::*;
use crate::sys::SysRoot;

const N: &str = "sys/devices/system/node";
const C: &str = "sys/devices/system/cpu";

/// A synthetic machine: `nodes` CPU nodes of `per_node` CPUs each
/// (numbered in order), cores of `threads` consecutive CPUs,
/// `nodes_per_pkg` nodes per package (0: no topology files at all,
/// negative: each node spans `-nodes_per_pkg` packages), then
/// `memory_only` CPU-less nodes with sparse ids 100, 101, ...
struct Spec {
    nodes: u32,
    per_node: u32,
    threads: u32,
    nodes_per_pkg: i32,
    memory_only: u32,
}

impl Spec {
    fn new(nodes: u32, per_node: u32) -> Self {
        Spec { nodes, per_node, threads: 1, nodes_per_pkg: 1, memory_only: 0 }
    }

    fn files(&self) -> Vec<(String, String)> {
        let mut f: Vec<(String, String)> = Vec::new();
        let cpus = self.nodes * self.per_node;
        f.push((format!("{C}/possible"), format!("0-{}\n", cpus - 1)));
        f.push((format!("{C}/online"), format!("0-{}\n", cpus - 1)));
        let ids: Vec<u32> = (0..self.nodes).chain((0..self.memory_only).map(|k| 100 + k)).collect();
        for (i, id) in ids.iter().enumerate() {
            let d = format!("{N}/node{id}");
            let list = if *id < 100 {
                format!("{}-{}\n", id * self.per_node, (id + 1) * self.per_node - 1)
            } else {
                "\n".to_string()
            };
            f.push((format!("{d}/cpulist"), list));
            f.push((
                format!("{d}/meminfo"),
                format!("Node {id} MemTotal: {} kB\nNode {id} MemFree: {} kB\n", 16 << 20, 12 << 20),
            ));
            let dist: Vec<String> = (0..ids.len()).map(|j| if i == j { "10".into() } else { "20".into() }).collect();
            f.push((format!("{d}/distance"), dist.join(" ") + "\n"));
        }
        if self.nodes_per_pkg != 0 {
            for cpu in 0..cpus {
                let t = format!("{C}/cpu{cpu}/topology");
                let node = cpu / self.per_node;
                let pkg = if self.nodes_per_pkg > 0 {
                    node / self.nodes_per_pkg as u32
                } else {
                    // Each node split evenly over -nodes_per_pkg packages.
                    let span = (-self.nodes_per_pkg) as u32;
                    node * span + (cpu % self.per_node) / (self.per_node / span)
                };
                let first = cpu - cpu % self.threads;
                f.push((format!("{t}/physical_package_id"), format!("{pkg}\n")));
                f.push((format!("{t}/core_id"), format!("{}\n", first % 64)));
                f.push((format!("{t}/thread_siblings_list"), format!("{first}-{}\n", first + self.threads - 1)));
            }
        }
        f
    }

    fn topo(&self) -> Topology {
        self.topo_with(&[], "numakit-svg")
    }

    /// Reads the machine with `extra` files, in a root whose name
    /// starts with `prefix`.
    fn topo_with(&self, extra: &[(&str, &str)], prefix: &str) -> Topology {
        let d = tempfile::Builder::new().prefix(prefix).tempdir().expect("tempdir");
        let mut files = self.files();
        files.extend(extra.iter().map(|(a, b)| (a.to_string(), b.to_string())));
        for (rel, content) in &files {
            let p = d.path().join(rel);
            fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            fs::write(p, content).expect("write");
        }
        Topology::read(&SysRoot::at(d.path())).expect("read")
    }
}

/// Parses the picture, checks its size attributes and returns the
/// document text (for `roxmltree`) with its width and height.
fn parse(svg: &str) -> (roxmltree::Document<'_>, u32, u32) {
    let doc = roxmltree::Document::parse(svg).unwrap_or_else(|e| panic!("not well-formed XML: {e}\n{svg}"));
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "svg");
    assert_eq!(root.tag_name().namespace(), Some("http://www.w3.org/2000/svg"));
    let num =
        |a: &str| root.attribute(a).and_then(|v| v.parse::<u32>().ok()).unwrap_or_else(|| panic!("no numeric {a}"));
    let (w, h) = (num("width"), num("height"));
    assert_eq!(root.attribute("viewBox"), Some(format!("0 0 {w} {h}").as_str()));
    assert!(w > 0 && h > 0);
    (doc, w, h)
}

fn texts(doc: &roxmltree::Document, tag: &str) -> Vec<String> {
    doc.descendants()
        .filter(|n| n.tag_name().name() == tag)
        .map(|n| n.children().filter(|c| c.is_text()).filter_map(|c| c.text()).collect::<String>())
        .collect()
}

/// CPU ids shown: PU labels, and `CPU n` in tooltips.
fn cpu_ids_shown(doc: &roxmltree::Document) -> BTreeSet<u32> {
    let mut ids: BTreeSet<u32> = doc
        .descendants()
        .filter(|n| n.tag_name().name() == "text" && matches!(n.attribute("class"), Some("n" | "no")))
        .filter_map(|n| n.text()?.parse().ok())
        .collect();
    for t in texts(doc, "title") {
        for part in t.split("CPU ").skip(1) {
            let digits: String = part.chars().take_while(char::is_ascii_digit).collect();
            if let Ok(id) = digits.parse() {
                ids.insert(id);
            }
        }
    }
    ids
}

/// Checks what every picture must show: each node by id, each node's
/// CPUs, and every element inside the picture's bounds.
fn check_complete(topo: &Topology, svg: &str) -> (u32, u32) {
    let (doc, w, h) = parse(svg);
    let text = texts(&doc, "text");
    for n in &topo.nodes {
        let label = format!("Node {}", n.id);
        assert!(text.contains(&label), "{label} missing");
    }
    let shown = cpu_ids_shown(&doc);
    for n in &topo.nodes {
        for c in n.cpus.iter() {
            assert!(shown.contains(&c), "CPU {c} of node {} missing", n.id);
        }
    }
    for r in doc.descendants().filter(|n| n.tag_name().name() == "rect") {
        let a = |k: &str| r.attribute(k).and_then(|v| v.parse::<u32>().ok()).unwrap_or(0);
        assert!(a("x") + a("width") <= w && a("y") + a("height") <= h, "rect out of bounds: {:?}", r);
    }
    (w, h)
}

#[test]
fn packages_nodes_cores_and_memory_only() {
    let spec = Spec { nodes: 4, per_node: 8, threads: 2, nodes_per_pkg: 2, memory_only: 2 };
    let t = spec.topo();
    let svg = render(&t);
    check_complete(&t, &svg);
    let (doc, _, _) = parse(&svg);
    let text = texts(&doc, "text");
    assert!(text.iter().any(|s| s.starts_with("Package 0")) && text.iter().any(|s| s.starts_with("Package 1")));
    assert!(!text.iter().any(|s| s.starts_with("Package 2")));
    // CPU-less nodes are labelled, in their own row.
    assert_eq!(text.iter().filter(|s| *s == "memory only").count(), 2);
    assert!(text.iter().any(|s| s.starts_with("Nodes without CPUs")));
    assert!(text.iter().any(|s| s.starts_with("Machine: 6 NUMA nodes, 2 packages, 16 cores, 32 CPUs")), "{text:?}");
    assert!(text.iter().any(|s| s.starts_with("dump of ")));
    assert!(text.iter().any(|s| s == "16 GiB · 12 GiB free"));
    // Memory-only node 100 sits in a group labelled as such.
    let g = doc
        .descendants()
        .find(|n| n.tag_name().name() == "g" && n.descendants().any(|c| c.text() == Some("Node 100")))
        .expect("group of node 100");
    assert!(g.descendants().any(|c| c.attribute("class") == Some("memonly")));
    assert!(g.descendants().any(|c| c.text() == Some("memory only")));
}

#[test]
fn memoryless_node_and_devices() {
    let spec = Spec::new(2, 4);
    let extra = [
        (format!("{N}/node1/meminfo"), "Node 1 MemTotal: 0 kB\nNode 1 MemFree: 0 kB\n".to_string()),
        ("sys/bus/pci/devices/0000:02:00.0/numa_node".into(), "1\n".into()),
        ("sys/bus/pci/devices/0000:02:00.0/class".into(), "0x020000\n".into()),
        ("sys/bus/pci/devices/0000:03:00.0/numa_node".into(), "-1\n".into()),
        ("sys/bus/pci/devices/0000:00:1f.0/numa_node".into(), "0\n".into()),
    ];
    let extra: Vec<(&str, &str)> = extra.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    let d = tempfile::Builder::new().prefix("svgdev").tempdir().expect("tempdir");
    for (rel, content) in spec.files().iter().map(|(a, b)| (a.as_str(), b.as_str())).chain(extra) {
        let p = d.path().join(rel);
        fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        fs::write(p, content).expect("write");
    }
    let net = d.path().join("sys/class/net");
    fs::create_dir_all(&net).expect("mkdir");
    std::os::unix::fs::symlink("../../devices/pci0000:00/0000:00:01.0/0000:02:00.0/net/eth0", net.join("eth0"))
        .expect("symlink");
    std::os::unix::fs::symlink("../../devices/pci0000:00/0000:03:00.0/net/eth9", net.join("eth9")).expect("symlink");
    let t = Topology::read(&SysRoot::at(d.path())).expect("read");
    let svg = render(&t);
    check_complete(&t, &svg);
    let (doc, _, _) = parse(&svg);
    let node1 = doc
        .descendants()
        .find(|n| n.tag_name().name() == "g" && n.children().any(|c| c.text() == Some("Node 1")))
        .expect("group of node 1");
    assert!(node1.descendants().any(|c| c.text() == Some("no memory")));
    assert!(node1.descendants().any(|c| c.text().is_some_and(|s| s.starts_with("net eth0 · 0000:02:00.0"))));
    let node0 = doc
        .descendants()
        .find(|n| n.tag_name().name() == "g" && n.children().any(|c| c.text() == Some("Node 0")))
        .expect("group of node 0");
    assert!(node0.descendants().any(|c| c.text() == Some("1 other PCI device")));
    let text = texts(&doc, "text");
    assert!(text.iter().any(|s| s.starts_with("net eth9")), "device with no node shown: {text:?}");
}

#[test]
fn large_nodes_are_compact_and_complete() {
    // 2 nodes of 128 CPUs, 2 threads per core.
    let spec = Spec { nodes: 2, per_node: 128, threads: 2, nodes_per_pkg: 1, memory_only: 0 };
    let t = spec.topo();
    let svg = render(&t);
    let (w, h) = check_complete(&t, &svg);
    assert!(w < 1600 && h < 1000, "{w}x{h}");
    let (doc, _, _) = parse(&svg);
    // PUs are cells without labels; the ranges are written out.
    assert!(!doc.descendants().any(|n| n.attribute("class") == Some("n")));
    let text = texts(&doc, "text");
    assert!(text.iter().any(|s| s == "CPUs 0-127") && text.iter().any(|s| s == "CPUs 128-255"), "{text:?}");
    assert!(texts(&doc, "title").iter().any(|s| s == "CPU 4, CPU 5"));
}

#[test]
fn size_grows_with_nodes_and_stays_bounded() {
    let mut last = (0, 0);
    for n in [2u32, 4, 8, 17, 36, 64] {
        let t = Spec { nodes: n, per_node: 4, threads: 1, nodes_per_pkg: 1, memory_only: 0 }.topo();
        let (w, h) = check_complete(&t, &render(&t));
        assert!(w >= last.0 && h >= last.1 && w * h > last.0 * last.1, "{n} nodes: {w}x{h} after {last:?}");
        assert!(w < 4000 && h < 4000, "{n} nodes: {w}x{h}");
        if n == 36 {
            assert!(w < 3000, "36 nodes: {w} wide");
        }
        last = (w, h);
    }
    // 64 nodes of 4 CPUs with no package information, 256 CPUs.
    let t = Spec { nodes: 64, per_node: 4, threads: 2, nodes_per_pkg: 0, memory_only: 0 }.topo();
    let (w, h) = check_complete(&t, &render(&t));
    assert!(w < 4000 && h < 4000, "{w}x{h}");
}

#[test]
fn nodes_spanning_packages_hold_package_slices() {
    let t = Spec { nodes: 2, per_node: 8, threads: 2, nodes_per_pkg: -2, memory_only: 1 }.topo();
    assert_eq!(t.packages.len(), 4);
    let svg = render(&t);
    check_complete(&t, &svg);
    let (doc, _, _) = parse(&svg);
    let node1 = doc
        .descendants()
        .find(|n| n.tag_name().name() == "g" && n.children().any(|c| c.text() == Some("Node 1")))
        .expect("group of node 1");
    let labels: Vec<&str> = node1
        .descendants()
        .filter(|c| c.is_element())
        .filter_map(|c| c.text())
        .filter(|s| s.starts_with("Package"))
        .collect();
    assert_eq!(labels, ["Package 2", "Package 3"]);
    assert!(!doc.descendants().any(|n| n.attribute("class") == Some("pkg")), "no package frames");
}

#[test]
fn no_topology_files_draws_nodes_directly() {
    let t = Spec { nodes: 3, per_node: 2, threads: 1, nodes_per_pkg: 0, memory_only: 0 }.topo();
    assert!(t.packages.is_empty());
    let svg = render(&t);
    check_complete(&t, &svg);
    assert!(!svg.contains("Package"));
}

#[test]
fn text_is_escaped() {
    assert_eq!(esc("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&apos;");
    let t = Spec::new(2, 2).topo_with(&[], "dump&<odd>\"name'");
    let svg = render(&t);
    let (doc, _, _) = parse(&svg);
    assert!(texts(&doc, "text").iter().any(|s| s.starts_with("dump of ") && s.contains("dump&<odd>\"name'")));
}

#[test]
fn grid_columns() {
    assert_eq!((1..=4).map(grid_cols).collect::<Vec<_>>(), [1, 2, 3, 4]);
    assert_eq!(grid_cols(8), 4);
    assert_eq!(grid_cols(36), 8);
    assert_eq!(grid_cols(64), 8);
    assert!((5..200).all(|n| grid_cols(n) <= MAX_COLS));
    assert_eq!(wrap("CPUs 0,2,4,6,8,10,12,14", 60, 10, 4), ["CPUs 0,2,", "4,6,8,10,", "12,14"]);
}

/// The real machines' dumps, where the fixture tests extracted them.
#[test]
fn real_dumps_when_present() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/tmp/hwloc-fixtures");
    let Ok(entries) = fs::read_dir(&dir) else { return };
    for e in entries.flatten() {
        for inner in fs::read_dir(e.path()).into_iter().flatten().flatten() {
            let Ok(t) = Topology::read(&SysRoot::at(inner.path())) else { continue };
            let svg = render(&t);
            let (w, h) = check_complete(&t, &svg);
            assert!(w < 4000 && h < 4000, "{}: {w}x{h}", inner.path().display());
        }
    }
}
