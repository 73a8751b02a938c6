//! The IRQ view and the irq-local plan on a synthetic two-node machine.

use super::local::{self, LocalError};
use super::*;
use crate::sys::SysRoot;
use crate::topo::synth::SynthMachine;

/// `/proc/interrupts` of the fake machine: 8 CPUs, node 0 even, node 1 odd.
pub(crate) const INTERRUPTS: &str = "            CPU0       CPU1       CPU2       CPU3       CPU4       CPU5       CPU6       CPU7
  0:        100          0          0          0          0          0          0          0   IO-APIC   2-edge      timer
 19:          5          0          0          0          0          0          0          0   IO-APIC  19-fasteoi   ahci[0000:00:1f.2]
 24:          0          0          0          0          0          0          0          0  PCI-MSIX-0000:00:02.0   0-edge      virtio0-config
 25:          7          0          0          0          0          0          0          0  PCI-MSIX-0000:00:02.0   1-edge      virtio0-requests
 28:          0          0          1          0          0          0          0          0  PCI-MSIX-0000:21:01.0   0-edge      virtio2-config
 29:          0          0        300          0          0          0          0         20  PCI-MSIX-0000:21:01.0   1-edge      virtio2-requests
 41:         40          2          0          0          0          0          0          0  IR-PCI-MSI 1048576-edge      eth0-TxRx-0
 50:          0          0          0          0          0          0          0          0  IR-PCI-MSI 2097152-edge      nvme0q0
 51:          3          3          0          0          0          0          0          0  IR-PCI-MSI 2097153-edge      nvme0q1
NMI:          0          0          0          0          0          0          0          0   Non-maskable interrupts
";

/// Writes `content` to `rel` below `root`, creating folders.
pub(crate) fn put(root: &std::path::Path, rel: &str, content: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
    std::fs::write(p, content).expect("write");
}

fn link(root: &std::path::Path, rel: &str, target: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
    std::os::unix::fs::symlink(target, p).expect("symlink");
}

/// A two-node machine (CPUs 0,2,4,6 on node 0, 1,3,5,7 on node 1) with:
/// a virtio device on node 1 (`0000:21:01.0`, MSI-X 28-29, `virtio2`), a
/// NIC `eth0` on node 1 (`0000:3b:00.0`, IRQ 41 found by its action name),
/// a SATA controller on node 0 (`0000:00:1f.2`, legacy line 19), an NVMe
/// disk `nvme0n1` on node 0 (`0000:5e:00.0`, queues 50-51), a virtio device
/// without a node (`0000:00:02.0`, MSI-X 24-25), and the timer.
pub(crate) fn fake_machine() -> (tempfile::TempDir, SysRoot) {
    let d = tempfile::tempdir().expect("tempdir");
    let r = d.path();
    SynthMachine::intel_2s_ht(2, 1024).write(r).expect("synth");
    put(r, "proc/interrupts", INTERRUPTS);
    put(r, "proc/sys/kernel/osrelease", "6.12.0-test\n");
    put(r, "proc/sys/kernel/random/boot_id", "11111111-2222-3333-4444-555555555555\n");
    let dev = |addr: &str, node: i32, driver: Option<&str>, msi: &[u32], irq: u32| {
        let base = format!("sys/bus/pci/devices/{addr}");
        put(r, &format!("{base}/numa_node"), &format!("{node}\n"));
        put(r, &format!("{base}/class"), "0x020000\n");
        put(r, &format!("{base}/irq"), &format!("{irq}\n"));
        for m in msi {
            put(r, &format!("{base}/msi_irqs/{m}"), "msix\n");
        }
        if let Some(drv) = driver {
            link(r, &format!("{base}/driver"), &format!("../../../bus/pci/drivers/{drv}"));
        }
    };
    dev("0000:21:01.0", 1, Some("virtio-pci"), &[28, 29], 11);
    dev("0000:00:02.0", -1, Some("virtio-pci"), &[24, 25], 10);
    dev("0000:3b:00.0", 1, Some("ixgbe"), &[], 0);
    dev("0000:00:1f.2", 0, Some("ahci"), &[], 19);
    dev("0000:5e:00.0", 0, Some("nvme"), &[], 0);
    link(r, "sys/class/net/eth0", "../../devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0/net/eth0");
    link(r, "sys/class/block/nvme0n1", "../../devices/pci0000:5d/0000:5d:00.0/0000:5e:00.0/nvme/nvme0/nvme0n1");
    link(r, "sys/bus/virtio/devices/virtio2", "../../../devices/pci0000:20/0000:20:00.0/0000:21:01.0/virtio2");
    for (irq, aff, eff) in [
        (0, "0-7", "0"),
        (19, "0-7", "0"),
        (24, "0-7", "0"),
        (25, "0-7", "0"),
        (28, "0,2,4,6", "2"),
        (29, "1", "1"),
        (41, "0-7", "0"),
        (50, "0-7", ""),
        (51, "0,2", "0"),
    ] {
        put(r, &format!("proc/irq/{irq}/smp_affinity_list"), &format!("{aff}\n"));
        put(r, &format!("proc/irq/{irq}/effective_affinity_list"), &format!("{eff}\n"));
        put(r, &format!("proc/irq/{irq}/node"), "0\n");
    }
    let sys = SysRoot::at(r);
    (d, sys)
}

pub(crate) fn view_of(sys: &SysRoot) -> IrqView {
    let topo = Topology::read(sys).expect("topology");
    build(&topo, &read::read(sys).expect("read"))
}

fn irq(v: &IrqView, n: u32) -> &Irq {
    v.irqs.iter().find(|i| i.irq == n).unwrap_or_else(|| panic!("IRQ {n}"))
}

#[test]
fn every_irq_finds_its_device_and_node() {
    let (_d, sys) = fake_machine();
    let v = view_of(&sys);
    assert!(v.has_counts && v.has_affinity);
    assert_eq!(
        v.nodes.iter().map(|(n, c)| (*n, c.to_list())).collect::<Vec<_>>(),
        vec![(0, "0,2,4,6".to_string()), (1, "1,3,5,7".to_string())]
    );
    let who = |n: u32| {
        let i = irq(&v, n);
        (i.devices.iter().map(|d| d.pci.as_str()).collect::<Vec<_>>(), i.matched, i.node)
    };
    assert_eq!(who(28), (vec!["0000:21:01.0"], Some(Matched::MsiIrqs), Some(1)));
    assert_eq!(who(24), (vec!["0000:00:02.0"], Some(Matched::MsiIrqs), None));
    assert_eq!(who(41), (vec!["0000:3b:00.0"], Some(Matched::Action), Some(1)));
    assert_eq!(who(19), (vec!["0000:00:1f.2"], Some(Matched::Action), Some(0)));
    assert_eq!(who(51), (vec!["0000:5e:00.0"], Some(Matched::Action), Some(0)));
    assert_eq!(who(0), (vec![], None, None));
    assert_eq!(irq(&v, 41).devices[0].label(), "0000:3b:00.0 (eth0)");
    assert_eq!(irq(&v, 28).devices[0].label(), "0000:21:01.0 (virtio-pci)");
}

#[test]
fn counts_per_node_and_locality() {
    let (_d, sys) = fake_machine();
    let v = view_of(&sys);
    let i = irq(&v, 29);
    assert_eq!(i.by_node, BTreeMap::from([(0, 300), (1, 20)]));
    assert_eq!(i.total, Some(320));
    assert_eq!(i.locality, Locality::Local, "effective CPU 1 is on node 1");
    assert_eq!(irq(&v, 28).locality, Locality::OffNode, "node 1's device served on CPU 2");
    assert_eq!(irq(&v, 41).locality, Locality::OffNode);
    assert_eq!(irq(&v, 50).locality, Locality::Mixed, "no effective CPU, affinity 0-7 spans both nodes");
    assert_eq!(irq(&v, 51).locality, Locality::Local);
    assert_eq!(irq(&v, 24).locality, Locality::Unknown, "the device has no node");
    assert!(irq(&v, 28).locality.is_off_node() && !irq(&v, 29).locality.is_off_node());
}

#[test]
fn a_pending_move_is_judged_on_the_affinity() {
    // x86 applies a new affinity at the next interrupt: until then the
    // effective CPU (1, node 1) lies outside the affinity (node 0's CPUs)
    let (d, sys) = fake_machine();
    put(d.path(), "proc/irq/29/smp_affinity_list", "0,2,4,6\n");
    let v = view_of(&sys);
    assert_eq!(irq(&v, 29).effective.as_ref().map(|e| e.to_list()).as_deref(), Some("1"));
    assert_eq!(irq(&v, 29).locality, Locality::OffNode);
}

#[test]
fn rates_between_two_samples() {
    let (d, sys) = fake_machine();
    let before = crate::sys::interrupts::read_interrupts(&sys).expect("read").expect("some");
    put(d.path(), "proc/interrupts", &INTERRUPTS.replace("        300 ", "        500 "));
    let v = view_of(&sys).with_rates(&before, 2.0);
    let i = irq(&v, 29);
    assert_eq!(v.interval_s, Some(2.0));
    assert_eq!(i.rate, Some(100.0));
    assert_eq!(i.rate_by_node.as_ref().map(|r| (r[&0], r[&1])), Some((100.0, 0.0)));
    assert_eq!(i.rate_by_cpu.as_ref().map(|r| (r[&2], r[&7], r.len())), Some((100.0, 0.0, 8)));
    assert_eq!(irq(&v, 28).rate, Some(0.0));
}

#[test]
fn a_dump_without_proc_still_maps_devices() {
    let (d, sys) = fake_machine();
    std::fs::remove_file(d.path().join("proc/interrupts")).expect("rm");
    std::fs::remove_dir_all(d.path().join("proc/irq")).expect("rm");
    let v = view_of(&sys);
    assert!(!v.has_counts && !v.has_affinity);
    // MSI vectors and legacy lines from sysfs (not the unused INTx lines 10
    // and 11 of the devices with MSI vectors); action names need /proc/interrupts
    let found: Vec<u32> = v.device_irqs().map(|i| i.irq).collect();
    assert_eq!(found, vec![19, 24, 25, 28, 29]);
    assert!(v.irqs.iter().all(|i| i.locality == Locality::Unknown && i.total.is_none()));
}

#[test]
fn action_names_need_a_separator_after_the_device() {
    assert!(starts_with_name("eth0-TxRx-0", "eth0"));
    assert!(starts_with_name("eth0", "eth0"));
    assert!(!starts_with_name("eth10-rx", "eth1"));
    assert_eq!(nvme_controller("nvme12n3").as_deref(), Some("nvme12"));
    assert_eq!(nvme_controller("sda"), None);
    assert!(nvme_queue_of("nvme0q12", "nvme0") && !nvme_queue_of("nvme0q", "nvme0"));
    let found: Vec<String> = pci_addresses_in("mlx5_comp0@pci:0000:3b:00.0").collect();
    assert_eq!(found, vec!["0000:3b:00.0"]);
    let found: Vec<String> = pci_addresses_in("PCI-MSIX-0000:21:01.0").collect();
    assert_eq!(found, vec!["0000:21:01.0"]);
}

#[test]
fn irq_local_moves_only_what_is_off_node() {
    let (_d, sys) = fake_machine();
    let v = view_of(&sys);
    let topo = Topology::read(&sys).expect("topology");
    for typed in ["0000:21:01.0", "21:01.0", "pci:21:01.0"] {
        let p = local::plan(&v, &topo, typed).unwrap_or_else(|e| panic!("{typed}: {e}"));
        assert_eq!((p.node, p.cpus.to_list()), (1, "1,3,5,7".to_string()));
        let s: Vec<(&str, &str)> = p.settings.iter().map(|s| (s.knob.as_str(), s.value.as_str())).collect();
        assert_eq!(s, vec![("irq/28/smp_affinity_list", "1,3,5,7")]);
        assert_eq!(p.already, vec![29], "CPU 1 is on node 1: left alone");
    }
    let p = local::plan(&v, &topo, "eth0").expect("eth0");
    assert_eq!(p.settings.len(), 1);
    let p = local::plan(&v, &topo, "block:nvme0n1").expect("nvme");
    assert_eq!(p.settings.iter().map(|s| s.knob.as_str()).collect::<Vec<_>>(), vec!["irq/50/smp_affinity_list"]);
    assert_eq!(p.already, vec![51]);
}

#[test]
fn irq_local_refusals_name_the_device_as_typed() {
    let (d, sys) = fake_machine();
    put(d.path(), "sys/bus/pci/devices/0000:00:00.0/numa_node", "0\n");
    let v = view_of(&sys);
    let topo = Topology::read(&sys).expect("topology");
    let e = local::plan(&v, &topo, "00:00.0").unwrap_err();
    assert_eq!(
        e.to_string(),
        "device \"00:00.0\" (0000:00:00.0) has no IRQs (no driver bound, or no MSI vectors and no legacy line)"
    );
    let e = local::plan(&v, &topo, "eth9").unwrap_err();
    assert_eq!(e, LocalError::Unknown { typed: "eth9".into() });
    assert!(e.to_string().starts_with("unknown device \"eth9\""), "{e}");
    let e = local::plan(&v, &topo, "00:02.0").unwrap_err();
    assert!(matches!(e, LocalError::NoNode { .. }), "{e}");
    assert!(e.to_string().starts_with("device \"00:02.0\" (0000:00:02.0) has no NUMA node"), "{e}");
    assert!(local::plan(&v, &topo, "netdev:nvme0n1").is_err(), "a block device is not a netdev");
}

#[test]
fn irq_ranges() {
    assert_eq!(ranges([53, 52, 54, 60, 7, 52]), "7,52-54,60");
    assert_eq!(ranges([]), "");
}

#[test]
fn offline_cpus_are_no_target() {
    let (d, sys) = fake_machine();
    put(d.path(), "sys/devices/system/cpu/online", "0-6\n");
    let v = view_of(&sys);
    let topo = Topology::read(&sys).expect("topology");
    assert_eq!(v.nodes[1].1.to_list(), "1,3,5");
    let p = local::plan(&v, &topo, "21:01.0").expect("plan");
    assert_eq!(p.settings[0].value, "1,3,5");
}
