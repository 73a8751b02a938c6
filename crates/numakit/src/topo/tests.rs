//! Model tests on small synthetic roots (the real machines' dumps are
//! tested in crates/cli/tests/fixtures.rs).
use super::*;
use std::fs;

/// Writes files into a temporary root.
fn root(files: &[(&str, &str)]) -> (tempfile::TempDir, SysRoot) {
    let d = tempfile::tempdir().expect("tempdir");
    for (rel, content) in files {
        let p = d.path().join(rel);
        fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        fs::write(p, content).expect("write");
    }
    let r = SysRoot::at(d.path());
    (d, r)
}

const N: &str = "sys/devices/system/node";
const C: &str = "sys/devices/system/cpu";

#[test]
fn sparse_nodes_memoryless_and_cpuless() {
    let files = [
        (format!("{C}/possible"), "0-3\n"),
        (format!("{C}/online"), "0-3\n"),
        (format!("{N}/node0/cpulist"), "0-1\n"),
        (
            format!("{N}/node0/meminfo"),
            "Node 0 MemTotal: 1048576 kB\nNode 0 MemFree: 524288 kB\nNode 0 MemUsed: 524288 kB\n",
        ),
        (format!("{N}/node0/distance"), "10 20 30\n"),
        (format!("{N}/node2/cpumap"), "0000000c\n\0"),
        (format!("{N}/node2/meminfo"), "Node 2 MemTotal: 0 kB\nNode 2 MemFree: 0 kB\n"),
        (format!("{N}/node2/distance"), "20 10 25\n"),
        (format!("{N}/node5/cpulist"), "\n"),
        (format!("{N}/node5/meminfo"), "Node 5 MemTotal: 2097152 kB\nNode 5 MemFree: 2097152 kB\n"),
        (format!("{N}/node5/distance"), "30 25 10\n"),
        (format!("{N}/node5/hugepages/hugepages-2048kB/nr_hugepages"), "4\n"),
        (format!("{N}/node5/hugepages/hugepages-2048kB/free_hugepages"), "3\n"),
    ];
    let files: Vec<(&str, &str)> = files.iter().map(|(a, b)| (a.as_str(), *b)).collect();
    let (_d, sys) = root(&files);
    let t = Topology::read(&sys).expect("read");
    assert_eq!(t.nodes.iter().map(|n| n.id).collect::<Vec<_>>(), vec![0, 2, 5]);
    assert_eq!(t.node(2).expect("node 2").cpus.to_list(), "2-3");
    assert!(!t.node(2).expect("n").has_memory && t.node(2).expect("n").has_cpu);
    assert!(t.node(5).expect("n").has_memory && !t.node(5).expect("n").has_cpu);
    assert_eq!(t.distance(2, 5), Some(25));
    assert_eq!(t.distance(5, 0), Some(30));
    assert_eq!(t.distance(1, 0), None);
    assert_eq!(t.node(5).expect("n").hugepages[0].total, 4);
    assert_eq!(t.node_of_cpu(3), Some(2));
    assert_eq!(t.memory_nodes().to_list(), "0,5");
    assert!(!t.source.live);
}

#[test]
fn no_node_folder_is_one_node_with_every_cpu() {
    let (_d, sys) = root(&[
        ("sys/devices/system/cpu/possible", "0-7"),
        ("sys/devices/system/cpu/online", "0-7"),
        ("proc/meminfo", "MemTotal: 4096 kB\nMemFree: 1024 kB\n"),
    ]);
    let t = Topology::read(&sys).expect("read");
    assert!(!t.numa_info);
    assert_eq!(t.nodes.len(), 1);
    assert_eq!(t.nodes[0].cpus.to_list(), "0-7");
    assert_eq!(t.nodes[0].memory.expect("mem").total_bytes, 4096 * 1024);
    assert!(!t.has_distances);
}

#[test]
fn wrong_distance_count_names_the_file() {
    let (_d, sys) = root(&[
        ("sys/devices/system/cpu/online", "0"),
        ("sys/devices/system/node/node0/cpulist", "0"),
        ("sys/devices/system/node/node0/distance", "10 20"),
    ]);
    let e = Topology::read(&sys).unwrap_err().to_string();
    assert!(e.contains("node0/distance") && e.contains("2 distances for 1 nodes"), "{e}");
}

#[test]
fn not_a_root() {
    let (_d, sys) = root(&[("etc/hostname", "x")]);
    assert!(Topology::read(&sys).unwrap_err().to_string().contains("not a Linux system root"));
}

/// Where CPU-less nodes belong: the HMAT's CPU initiators (class 1) before
/// class 0's, initiators without CPUs passed over (a generic initiator),
/// then the nearest CPU nodes by SLIT unless every CPU node is as near;
/// the package is the one package of those CPU nodes.
#[test]
fn cpu_less_nodes_are_local_to_their_initiators_or_nearest_cpu_nodes() {
    use crate::topo::synth::{SynthAccess, SynthMachine};
    let acc = |target, class, initiators: &[u32]| SynthAccess {
        target,
        class,
        initiators: initiators.to_vec(),
        latency_ns: (10, 10),
        bandwidth_mib_s: (100, 100),
    };
    let mut m = SynthMachine::of_nodes(&[("0-1", 1024), ("2-3", 1024), ("", 1024), ("", 0), ("", 1024), ("", 1024)])
        .with_distance(1, 4, 15)
        .with_distance(0, 5, 15)
        .with_distance(1, 5, 15);
    // Node 2: class 0 names the generic initiator 3 and class 1 node 1.
    m.access = vec![acc(2, 0, &[3]), acc(2, 1, &[1])];
    let d = tempfile::tempdir().expect("tmp");
    m.write(d.path()).expect("write");
    let t = Topology::read(&SysRoot::at(d.path())).expect("read");
    let local = |id| t.local_cpu_nodes(id).map(|l| (l.nodes.to_list(), l.by));
    assert_eq!(local(0), None, "a CPU node");
    assert_eq!(local(2), Some(("1".into(), LocalBy::Hmat)));
    assert_eq!(t.package_of_cpuless(2), Some(1));
    assert_eq!(local(3), None, "every CPU node at distance 20");
    assert_eq!(t.package_of_cpuless(3), None);
    assert_eq!(local(4), Some(("1".into(), LocalBy::Distance(15))));
    assert_eq!(t.package_of_cpuless(4), Some(1));
    assert_eq!(local(5), None, "as near to both CPU nodes as to each other");
}
