//! `numakit run` checks and I/O specifiers without a multi-node kernel:
//! on real machines' dumps (`--sysroot`, with `--dry-run`, since a dump is
//! never bound to) and on synthetic roots. The multi-node behaviour itself
//! is proven in the VM suite (vm_placement.rs).

mod common;

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::{Command, Output};

use numakit::topo::synth::SynthMachine;

fn nk(root: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_numakit")).arg("--sysroot").arg(root).args(args).output().expect("run numakit")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn netdev_and_block_on_a_real_dump() {
    let Some(root) = common::fixture_root("40intel64-2g2n4c+pcilocality") else {
        common::skip_or_fail("fixtures missing");
        return;
    };
    // ib0 sits on 0000:43:00.0 whose numa_node is 2.
    let o = nk(&root, &["run", "--dry-run", "-N", "netdev:ib0", "-m", "same", "--", "true"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("memory: bind 2"), "{}", stdout(&o));
    // eth0's numa_node is -1 and its local_cpulist is every CPU: all nodes.
    let o = nk(&root, &["run", "--dry-run", "-i", "netdev:eth0", "--", "true"]);
    assert!(stdout(&o).contains("memory: interleave 0-3"), "{}{}", stdout(&o), stderr(&o));
    // A partition resolves through its disk to the RAID controller.
    let o = nk(&root, &["run", "--dry-run", "-m", "block:/dev/sda", "--", "true"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = nk(&root, &["run", "--dry-run", "-m", "pci:43:00.0", "--", "true"]);
    assert!(stdout(&o).contains("memory: bind 2"), "{}{}", stdout(&o), stderr(&o));
    // Virtual and unknown devices are refused with the reason, exit 2.
    let o = nk(&root, &["run", "--dry-run", "-m", "netdev:lo", "--", "true"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("netdev:lo: network device lo is not on a PCI device"), "{}", stderr(&o));
    let o = nk(&root, &["run", "--dry-run", "-m", "netdev:eth9", "--", "true"]);
    assert!(stderr(&o).contains("no network device eth9"), "{}", stderr(&o));
    // A dump is never bound to.
    let o = nk(&root, &["run", "-m", "0", "--", "true"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("dump of another machine"), "{}", stderr(&o));
}

/// A synthetic 2-node root with a NIC on node 1 and the disk holding "/"
/// on node 0, plus a routing table.
fn synthetic_io_root() -> tempfile::TempDir {
    let d = tempfile::tempdir().expect("tmp");
    SynthMachine::rr_4n(8, 1024).write(d.path()).expect("write");
    let put = |rel: &str, content: &str| {
        let p = d.path().join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, content).expect("write");
    };
    let link = |rel: &str, target: &str| {
        let p = d.path().join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::os::unix::fs::symlink(target, p).expect("symlink");
    };
    for (addr, node) in [("0000:00:1f.2", "0"), ("0000:81:00.0", "1")] {
        put(&format!("sys/devices/pci0000:00/{addr}/numa_node"), &format!("{node}\n"));
        link(&format!("sys/bus/pci/devices/{addr}"), &format!("../../../devices/pci0000:00/{addr}"));
    }
    link("sys/class/net/eth7", "../../devices/pci0000:00/0000:81:00.0/net/eth7");
    link("sys/class/net/lo", "../../devices/virtual/net/lo");
    let dev = std::fs::metadata("/").expect("stat /").dev();
    let (maj, min) = (libc::major(dev), libc::minor(dev));
    link(
        &format!("sys/dev/block/{maj}:{min}"),
        "../../devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0/block/sda/sda1",
    );
    put(
        "proc/net/route",
        "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n\
         lo\t00000000\t00000000\t0001\t0\t0\t0\t00000000\t0\t0\t0\n\
         eth7\t0000000A\t00000000\t0001\t0\t0\t0\t000000FF\t0\t0\t0\n",
    );
    d
}

#[test]
fn file_ip_and_pci_specifiers_on_a_synthetic_root() {
    let d = synthetic_io_root();
    let o = nk(d.path(), &["run", "--dry-run", "-N", "ip:10.1.2.3", "-m", "same", "--", "true"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("memory: bind 1") && stdout(&o).contains("cpus: 1,5"), "{}", stdout(&o));
    let o = nk(d.path(), &["run", "--dry-run", "-m", "file:/", "--", "true"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("memory: bind 0"), "{}", stdout(&o));
    let o = nk(d.path(), &["run", "--dry-run", "-m", "ip:192.0.2.1", "--", "true"]);
    assert!(stderr(&o).contains("leaves through lo"), "{}", stderr(&o));
    let o = nk(d.path(), &["run", "--dry-run", "-m", "pci:zz", "--", "true"]);
    assert!(stderr(&o).contains("\"zz\" is not a PCI address"), "{}", stderr(&o));
}

#[test]
fn bad_values_exit_2_with_one_line() {
    let d = tempfile::tempdir().expect("tmp");
    SynthMachine::rr_4n(8, 1024).write(d.path()).expect("write");
    for (args, want) in [
        (vec!["-m", "7"], "--membind 7: node 7 does not exist (this machine has node(s) 0-3)"),
        (vec!["-C", "0-99"], "--physcpubind 0-99: CPU 99 does not exist (this machine has CPUs 0-7)"),
        (vec!["-p", "0,1"], "exactly one node"),
        (vec!["-N", "1", "-C", "0"], "no CPU in common"),
        (vec!["-m", "1-"], "invalid node list"),
    ] {
        let mut a = vec!["run", "--dry-run"];
        a.extend(&args);
        a.extend(["--", "true"]);
        let o = nk(d.path(), &a);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let e = stderr(&o);
        assert!(e.contains(want), "{args:?}: {e}");
        assert_eq!(e.lines().count(), 1, "{args:?}: one line: {e}");
    }
}

#[test]
fn auto_dry_run_explains_and_refuses_with_75() {
    let d = tempfile::tempdir().expect("tmp");
    SynthMachine::amd_4s_8n(4, 4096).write(d.path()).expect("write");
    // The synthetic root has no /proc/stat: give it one where every CPU is idle.
    let mut stat = String::from("cpu  0 0 0 0\n");
    for c in 0..32 {
        stat.push_str(&format!("cpu{c} 0 0 0 1000 0 0 0 0 0 0\n"));
    }
    std::fs::write(d.path().join("proc/stat"), stat).expect("stat");
    let o = nk(d.path(), &["run", "--auto", "--cpus", "4", "--mem", "1G", "--dry-run", "--", "make", "-j4"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("decision: node(s) 0 (OneNode)"), "{out}");
    assert!(out.contains("numactl: numactl --physcpubind=0-3 --membind=0 make -j4"), "{out}");
    let o = nk(d.path(), &["run", "--auto", "--cpus", "64", "--dry-run", "--", "true"]);
    assert_eq!(o.status.code(), Some(75), "{}", stderr(&o));
    assert!(stderr(&o).contains("keep it pending"));
}

/// Issue 41's probe: `--node 0-1:0 --node 2-3:1G` (a memory-less CPU node
/// first) put a 2-CPU job on node 0 with all its memory on node 1. Numbered
/// either way, the job goes to the node with memory of its own; with that
/// node's CPUs reserved, to the memory-less node, and the reason says
/// where its memory comes from.
#[test]
fn auto_dry_run_puts_memory_less_nodes_after_nodes_with_memory() {
    for (opts, local, memless) in [("--node 0-1:0 --node 2-3:1G", "1", "0"), ("--node 0-1:1G --node 2-3:0", "0", "1")] {
        let d = common::write_synth(&common::synth_of(opts));
        let ledger = d.path().join("ledger");
        let auto = |extra: &[&str]| {
            let mut a = vec!["run", "--auto", "--cpus", "2", "--mem", "100M", "--dry-run"];
            a.extend(["--ledger", ledger.to_str().expect("utf-8 path")]);
            a.extend(extra);
            a.extend(["--", "true"]);
            nk(d.path(), &a)
        };
        let o = auto(&[]);
        assert!(o.status.success(), "{opts}: {}", stderr(&o));
        let out = stdout(&o);
        let cpus = if local == "0" { "0-1" } else { "2-3" };
        assert!(out.contains(&format!("decision: node(s) {local} (OneNode)")), "{opts}: {out}");
        assert!(
            out.contains(&format!("reason: node {local} has 2 idle CPUs (need 2) and 0.9 GiB free")),
            "{opts}: {out}"
        );
        assert!(out.contains(&format!("numactl --physcpubind={cpus} --membind={local} true")), "{opts}: {out}");
        // `advise` shares the rules.
        let o = nk(d.path(), &["advise", "--cpus", "2", "--mem", "100M"]);
        assert!(stdout(&o).contains(&format!("nodes: {local}\n")), "{opts}: {}{}", stdout(&o), stderr(&o));

        let mem_cpus = if local == "0" { "0-1" } else { "2-3" };
        let o = auto(&["--reserve", mem_cpus]);
        assert!(o.status.success(), "{opts}: {}", stderr(&o));
        let out = stdout(&o);
        let cpus = if memless == "0" { "0-1" } else { "2-3" };
        assert!(out.contains(&format!("decision: node(s) {memless} (OneNode)")), "{opts}: {out}");
        assert!(
            out.contains(&format!(
                "reason: node {memless} has 2 idle CPUs (need 2) and no memory: memory from node {local} (distance 20), \
                 0.9 GiB free (need 0.1 GiB); no node with memory of its own has 2 idle CPUs"
            )),
            "{opts}: {out}"
        );
        assert!(out.contains(&format!("numactl --physcpubind={cpus} --membind={local} true")), "{opts}: {out}");
    }
}
