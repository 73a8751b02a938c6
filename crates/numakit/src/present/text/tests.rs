use super::*;
use crate::sys::SysRoot;
use crate::topo::synth::{SynthAccess, SynthMachine};

/// The view of a synthetic machine, from its node table on (the summary
/// lines name the temporary root).
fn view(m: &SynthMachine) -> String {
    let d = tempfile::tempdir().expect("tmp");
    m.write(d.path()).expect("write");
    let t = Topology::read(&SysRoot::at(d.path())).expect("read");
    let text = render(&t);
    text.split_once("\n\n").map(|(_, rest)| rest.to_string()).unwrap_or(text)
}

fn access(target: u32, class: u32, initiators: &[u32], latency_ns: (u64, u64), bw: (u64, u64)) -> SynthAccess {
    SynthAccess { target, class, initiators: initiators.to_vec(), latency_ns, bandwidth_mib_s: bw }
}

/// The test bed's `tiered` machine (`--node 0-1:1G --node 2-3:1G --node
/// -:1G`, HMAT from `testbed/topologies`), its slow node in a memory tier
/// of its own: the tier column, the HMAT figures of each node from its
/// best initiator, and the memory-only node under node 0's package.
#[test]
fn tiers_hmat_and_a_memory_only_node_under_its_package() {
    let mut m = SynthMachine::of_nodes(&[("0-1", 1024), ("2-3", 1024), ("", 1024)])
        .with_distance(0, 2, 30)
        .with_distance(1, 2, 40);
    for class in [0, 1] {
        m.access.extend([
            access(0, class, &[0], (100, 100), (20480, 20480)),
            access(1, class, &[1], (100, 100), (20480, 20480)),
            access(2, class, &[0], (300, 300), (5120, 5120)),
        ]);
    }
    m.tiers = vec![(4, vec![0, 1]), (22, vec![2])];
    assert_eq!(
        view(&m),
        "\
NODE  CPUS             MEMORY       FREE  TIER  HUGEPAGES  DEVICES
0     0-1               1 GiB  921.6 MiB     4  -          -
1     2-3               1 GiB  921.6 MiB     4  -          -
2     - (memory only)   1 GiB  921.6 MiB    22  -          -

Distances (firmware SLIT):
       0  1  2
   0  10 20 30
   1  20 10 40
   2  30 40 10

Memory performance (firmware HMAT, from each node's best initiators):
  NODE  FROM    LATENCY  BANDWIDTH
  0     node 0   100 ns  20 GiB/s
  1     node 1   100 ns  20 GiB/s
  2     node 0   300 ns  5 GiB/s

Packages -> nodes -> cores -> CPUs:
  package 0: node 0: 2 cores x 1 thread, CPUs 0-1
             node 2: memory only, 1 GiB, local to node 0 (HMAT)
  package 1: node 1: 2 cores x 1 thread, CPUs 2-3
"
    );
}

/// Without tiers or HMAT figures the view is as it always was; a
/// memory-only node as near to every CPU node (GPU memory at distance 80)
/// is under no package, one nearer to one CPU node by SLIT goes under its
/// package.
#[test]
fn without_hmat_by_distance_or_under_no_package() {
    let m = SynthMachine::of_nodes(&[("0-1", 1024), ("2-3", 1024), ("", 512), ("", 512)])
        .with_distance(0, 2, 80)
        .with_distance(1, 2, 80)
        .with_distance(2, 3, 80)
        .with_distance(0, 3, 30)
        .with_distance(1, 3, 40);
    let v = view(&m);
    assert!(v.starts_with("NODE  CPUS              MEMORY       FREE  HUGEPAGES  DEVICES\n"), "{v}");
    assert!(!v.contains("HMAT"), "{v}");
    assert!(
        v.ends_with(
            "\
Packages -> nodes -> cores -> CPUs:
  package 0: node 0: 2 cores x 1 thread, CPUs 0-1
             node 3: memory only, 512 MiB, nearest to node 0 (distance 30)
  package 1: node 1: 2 cores x 1 thread, CPUs 2-3
  no package: node 2: memory only, 512 MiB, every CPU node at distance 80
"
        ),
        "{v}"
    );
}

/// A memory node whose best initiator of any kind (a generic initiator,
/// class 0) is not its best CPU initiator (class 1): both rows, the CPU
/// initiators first; read and write figures that differ are both given; a
/// class without figures (the kernel's zeros) is left out; a node local to
/// CPU nodes of two packages is under none.
#[test]
fn hmat_classes_that_differ_and_initiators_in_two_packages() {
    let mut m = SynthMachine::of_nodes(&[("0-1", 1024), ("2-3", 1024), ("", 4096), ("", 0)]);
    m.access = vec![
        access(0, 1, &[0], (0, 0), (0, 0)),
        access(2, 0, &[3], (8, 8), (409_600, 409_600)),
        access(2, 1, &[0, 1], (120, 150), (40960, 20480)),
    ];
    let v = view(&m);
    assert!(
        v.contains(
            "\
Memory performance (firmware HMAT, from each node's best initiators):
  NODE  FROM                                          LATENCY  BANDWIDTH
  2     nodes 0-1 (CPU initiators)  120 ns read, 150 ns write  40 GiB/s read, 20 GiB/s write
        node 3 (any initiator)                           8 ns  400 GiB/s
"
        ),
        "{v}"
    );
    assert!(v.contains("  no package: node 2: memory only, 4 GiB, local to nodes 0-1 (HMAT)\n"), "{v}");
    assert!(v.contains("              node 3: no CPUs, no memory, every CPU node at distance 20\n"), "{v}");
}
