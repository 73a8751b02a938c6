//! Everything the IRQ view reads, through [`SysRoot`]: `/proc/interrupts`,
//! `/proc/irq/N/`, each PCI device's `msi_irqs/` and `irq`, its driver, the
//! `virtioN` devices' PCI parents, and whether irqbalance runs. Nothing here
//! decides; [`super::build`] turns a [`Readings`] into the view.

use std::collections::BTreeMap;

use crate::sys::interrupts::{self, Interrupts, IrqFiles};
use crate::sys::{SysError, SysRoot};
use crate::topo::pci_parent;

const PCI_DIR: &str = "sys/bus/pci/devices";
const VIRTIO_DIR: &str = "sys/bus/virtio/devices";

/// The IRQs a PCI device says it has.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeviceIrqs {
    /// PCI address.
    pub address: String,
    /// The bound driver's name (`virtio-pci`, `nvme`), from the `driver` link.
    pub driver: Option<String>,
    /// `msi_irqs/`: its MSI and MSI-X vectors.
    pub msi: Vec<u32>,
    /// `irq`: its legacy (INTx) line, when not 0.
    pub legacy: Option<u32>,
}

/// What the view is built from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Readings {
    /// `/proc/interrupts` (`None` in a dump without it).
    pub interrupts: Option<Interrupts>,
    /// `/proc/irq/N/` of every IRQ that has a folder.
    pub files: BTreeMap<u32, IrqFiles>,
    /// Every PCI device's IRQs.
    pub devices: Vec<DeviceIrqs>,
    /// `virtioN` → the PCI address it sits on (action names start with it).
    pub virtio: BTreeMap<String, String>,
}

/// Reads everything the view needs. Unreadable or malformed kernel files
/// are errors naming the file; missing ones are `None` or empty.
pub fn read(sys: &SysRoot) -> Result<Readings, SysError> {
    let interrupts = interrupts::read_interrupts(sys)?;
    let mut files = BTreeMap::new();
    for irq in interrupts::irq_numbers(sys)? {
        if let Some(f) = interrupts::read_irq_files(sys, irq)? {
            files.insert(irq, f);
        }
    }
    let mut devices = Vec::new();
    for addr in sys.list_dir(PCI_DIR)?.unwrap_or_default() {
        if !crate::topo::is_pci_address(&addr) {
            continue;
        }
        let d = format!("{PCI_DIR}/{addr}");
        let msi: Vec<u32> = sys.numbered_entries(format!("{d}/msi_irqs"), "")?;
        let legacy = sys.read_u64(format!("{d}/irq"))?.filter(|&n| n > 0).and_then(|n| u32::try_from(n).ok());
        let driver =
            sys.read_link(format!("{d}/driver"))?.and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()));
        devices.push(DeviceIrqs { address: addr, driver, msi, legacy });
    }
    let mut virtio = BTreeMap::new();
    for name in sys.list_dir(VIRTIO_DIR)?.unwrap_or_default() {
        if let Some(addr) = pci_parent(sys, &format!("{VIRTIO_DIR}/{name}"))? {
            virtio.insert(name, addr);
        }
    }
    Ok(Readings { interrupts, files, devices, virtio })
}

/// Whether irqbalance runs: the ids of processes named `irqbalance`, and
/// whether its systemd unit's cgroup holds a process.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Irqbalance {
    /// Processes whose `comm` is `irqbalance`.
    pub pids: Vec<u32>,
    /// `/sys/fs/cgroup/system.slice/irqbalance.service/cgroup.procs` is not empty.
    pub unit_active: bool,
}

impl Irqbalance {
    /// Whether it runs.
    pub fn running(&self) -> bool {
        !self.pids.is_empty() || self.unit_active
    }
}

/// Looks for irqbalance in `/proc/*/comm` and in its unit's cgroup.
pub fn irqbalance(sys: &SysRoot) -> Irqbalance {
    let mut pids = Vec::new();
    for pid in sys.list_dir("proc").ok().flatten().unwrap_or_default() {
        let Ok(id) = pid.parse::<u32>() else { continue };
        // a process may exit between the listing and the read: skip it
        if let Ok(Some(comm)) = sys.read(format!("proc/{pid}/comm")) {
            if comm.trim() == "irqbalance" {
                pids.push(id);
            }
        }
    }
    let unit_active = sys
        .read("sys/fs/cgroup/system.slice/irqbalance.service/cgroup.procs")
        .ok()
        .flatten()
        .is_some_and(|t| !t.trim().is_empty());
    Irqbalance { pids, unit_active }
}
