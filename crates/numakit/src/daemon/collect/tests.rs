//! The collector's `numa_maps` reading (policies, memory per node, sums
//! that saturate, shared file pages left out) and its node/CPU map.

use super::*;

#[test]
fn policies_as_numa_maps_prints_them() {
    assert_eq!(parse_policy("default"), MemPolicy::Default);
    assert_eq!(parse_policy("local"), MemPolicy::Local);
    assert_eq!(parse_policy("bind:0-1"), MemPolicy::Bind(NodeSet::parse_list("0-1").unwrap()));
    assert_eq!(parse_policy("bind=static:2"), MemPolicy::Bind(NodeSet::parse_list("2").unwrap()));
    assert_eq!(parse_policy("prefer (many):1,3"), MemPolicy::Preferred(NodeSet::parse_list("1,3").unwrap()));
    assert_eq!(parse_policy("weighted interleave:0-3"), MemPolicy::Interleave(NodeSet::parse_list("0-3").unwrap()));
}

#[test]
fn memory_and_main_policy() {
    let text = "00400000 default file=/usr/bin/x mapped=10 N0=10 kernelpagesize_kB=4\n\
                7f0000000000 bind:1 anon=100 dirty=100 N1=100 kernelpagesize_kB=4\n\
                7f1000000000 default anon=20 dirty=20 N0=5 N2=15 kernelpagesize_kB=4\n";
    let (per, pol) = memory_of(text);
    assert_eq!(per.get(&0), Some(&(15 * 4096)));
    assert_eq!(per.get(&1), Some(&(100 * 4096)));
    assert_eq!(per.get(&2), Some(&(15 * 4096)));
    assert_eq!(pol, MemPolicy::Bind(NodeSet::parse_list("1").unwrap()));
}

#[test]
fn memory_sums_saturate() {
    let t = "1000 default anon=1 N0=18446744073709551615 kernelpagesize_kB=4\n\
             2000 default anon=1 N0=7 kernelpagesize_kB=4\n";
    let (per_node, _) = memory_of(t);
    assert_eq!(per_node.get(&0), Some(&u64::MAX));
}

#[test]
fn shared_file_pages_are_not_the_processs_memory() {
    // libc mapped by 6 processes; the binary by this one only; a
    // private file mapping with copied-on-write pages; shared memory.
    let text = "7f00 default file=/usr/lib/libc.so.6 mapped=400 mapmax=6 N3=400 kernelpagesize_kB=4\n\
                00400000 default file=/usr/bin/job mapped=30 N2=30 kernelpagesize_kB=4\n\
                7f10 default file=/usr/lib/data anon=8 dirty=8 mapmax=2 N1=8 kernelpagesize_kB=4\n\
                7f20 default file=/dev/shm/seg mapped=50 mapmax=3 N1=50 kernelpagesize_kB=4\n\
                7f30 default anon=100 dirty=100 N0=100 kernelpagesize_kB=4\n";
    let (per, _) = memory_of(text);
    assert_eq!(per.get(&3), None, "{per:?}");
    assert_eq!(per.get(&2), Some(&(30 * 4096)));
    assert_eq!(per.get(&1), Some(&(58 * 4096)));
    assert_eq!(per.get(&0), Some(&(100 * 4096)));
}

#[test]
fn node_cover() {
    let nc = NodeCpus { nodes: vec![(0, CpuSet::parse_list("0-3").unwrap()), (1, CpuSet::parse_list("4-7").unwrap())] };
    assert_eq!(nc.nodes_of(&CpuSet::parse_list("0-7").unwrap()), (NodeSet::parse_list("0-1").unwrap(), false));
    assert_eq!(nc.nodes_of(&CpuSet::parse_list("4-7").unwrap()), (NodeSet::parse_list("1").unwrap(), false));
    assert_eq!(nc.nodes_of(&CpuSet::parse_list("2-7").unwrap()), (NodeSet::parse_list("0-1").unwrap(), true));
    assert_eq!(nc.node_of(5), Some(1));
    assert_eq!(nc.cpus_of(&NodeSet::parse_list("1").unwrap()).to_list(), "4-7");
}
