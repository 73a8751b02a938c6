//! PCI devices (`sys/bus/pci/devices`) with their NUMA node and local CPUs,
//! and which network (`sys/class/net`) and block (`sys/class/block`)
//! devices sit on each. Links are resolved lexically inside the root, so a
//! dump works like the live system.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use serde::Serialize;

use crate::sets::CpuSet;
use crate::sys::{SysError, SysRoot};

const PCI_DIR: &str = "sys/bus/pci/devices";

/// A PCI device.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PciDevice {
    /// Domain:bus:device.function, e.g. `0000:3b:00.0`.
    pub address: String,
    /// `numa_node` (`None` where the kernel says -1 or gives nothing).
    pub numa_node: Option<u32>,
    /// `class` (e.g. `0x020000` for Ethernet).
    pub class: Option<String>,
    /// `vendor` id.
    pub vendor: Option<String>,
    /// `device` id.
    pub device: Option<String>,
    /// `local_cpulist` (or `local_cpus`).
    pub local_cpus: Option<CpuSet>,
    /// Network interfaces on this device.
    pub netdevs: Vec<String>,
    /// Block devices (whole disks) on this device.
    pub blockdevs: Vec<String>,
}

impl PciDevice {
    /// For people: its network or block device names and its address
    /// (`eth0 (0000:3b:00.0)`), else its address and kind
    /// (`0000:17:00.0 (display, class 0x030200)`).
    pub fn label(&self) -> String {
        let names: Vec<&str> = self.netdevs.iter().chain(&self.blockdevs).map(String::as_str).collect();
        if names.is_empty() {
            format!("{} ({})", self.address, class_name(self.class.as_deref()))
        } else {
            format!("{} ({})", names.join(","), self.address)
        }
    }

    /// Whether it is a bridge (class `0x06`): the path to devices, not one.
    pub fn is_bridge(&self) -> bool {
        self.class.as_deref().is_some_and(|c| c.starts_with("0x06"))
    }
}

/// A PCI class code's kind (`0x030000` is a display controller).
fn class_name(class: Option<&str>) -> String {
    let Some(c) = class else { return "class unknown".into() };
    let kind = match c.get(2..4).unwrap_or("") {
        "01" => "storage",
        "02" => "network",
        "03" => "display",
        "04" => "multimedia",
        "05" => "memory",
        "07" => "communication",
        "08" => "system peripheral",
        "0b" => "processor",
        "0c" => "serial bus",
        "0d" => "wireless",
        "12" => "accelerator",
        _ => return format!("class {c}"),
    };
    format!("{kind}, class {c}")
}

/// Whether `s` looks like a PCI address `DDDD:BB:DD.F`.
pub fn is_pci_address(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 12
        && s.rsplit_once('.').is_some_and(|(head, f)| {
            f.len() == 1
                && head.split(':').count() == 3
                && head.split(':').all(|p| !p.is_empty() && p.bytes().all(|c| c.is_ascii_hexdigit()))
        })
}

/// Normalises `a/b/../c` without touching the file system.
fn lexical_join(base: &Path, rel: &Path) -> PathBuf {
    let mut out: Vec<String> = Vec::new();
    let joined = if rel.is_absolute() { rel.to_path_buf() } else { base.join(rel) };
    for c in joined.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(s) => out.push(s.to_string_lossy().into_owned()),
            _ => {}
        }
    }
    out.iter().collect()
}

/// The innermost PCI address on the sysfs path that the link `class_rel`
/// (e.g. `sys/class/net/eth0`, `sys/dev/block/8:0`) points to
/// (`../../devices/pci0000:00/0000:00:05.0/0000:02:00.0/net/eth0` gives
/// `0000:02:00.0`).
pub fn pci_parent(sys: &SysRoot, class_rel: &str) -> Result<Option<String>, SysError> {
    let Some(target) = sys.read_link(class_rel)? else { return Ok(None) };
    let base = Path::new(class_rel).parent().unwrap_or(Path::new(""));
    let resolved = lexical_join(base, &target);
    Ok(resolved
        .components()
        .rev()
        .filter_map(|c| match c {
            Component::Normal(s) => s.to_str().map(str::to_string),
            _ => None,
        })
        .find(|s| is_pci_address(s)))
}

/// Reads all PCI devices and attaches network and block devices to them.
pub(super) fn read_pci(sys: &SysRoot) -> Result<Vec<PciDevice>, SysError> {
    let mut devs: BTreeMap<String, PciDevice> = BTreeMap::new();
    for addr in sys.list_dir(PCI_DIR)?.unwrap_or_default() {
        if !is_pci_address(&addr) {
            continue;
        }
        let d = format!("{PCI_DIR}/{addr}");
        let numa_node = sys.read_i64(format!("{d}/numa_node"))?.and_then(|v| u32::try_from(v).ok());
        let local_cpus = sys.read_list_or_mask(format!("{d}/local_cpulist"), format!("{d}/local_cpus"))?;
        devs.insert(
            addr.clone(),
            PciDevice {
                address: addr.clone(),
                numa_node,
                class: sys.read_nonempty(format!("{d}/class"))?,
                vendor: sys.read_nonempty(format!("{d}/vendor"))?,
                device: sys.read_nonempty(format!("{d}/device"))?,
                local_cpus,
                netdevs: Vec::new(),
                blockdevs: Vec::new(),
            },
        );
    }
    for name in sys.list_dir("sys/class/net")?.unwrap_or_default() {
        if let Some(addr) = pci_parent(sys, &format!("sys/class/net/{name}"))? {
            if let Some(d) = devs.get_mut(&addr) {
                d.netdevs.push(name);
            }
        }
    }
    for name in sys.list_dir("sys/class/block")?.unwrap_or_default() {
        // Partitions carry a `partition` file; list whole disks only.
        if sys.exists(format!("sys/class/block/{name}/partition")) {
            continue;
        }
        if let Some(addr) = pci_parent(sys, &format!("sys/class/block/{name}"))? {
            if let Some(d) = devs.get_mut(&addr) {
                d.blockdevs.push(name);
            }
        }
    }
    Ok(devs.into_values().collect())
}

/// The PCI address a network or block device sits on (for `netdev:` and
/// `block:` specifiers). `kind` is `net` or `block`.
pub fn device_pci_address(sys: &SysRoot, kind: &str, name: &str) -> Result<Option<String>, SysError> {
    pci_parent(sys, &format!("sys/class/{kind}/{name}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pci_addresses() {
        assert!(is_pci_address("0000:3b:00.0"));
        assert!(is_pci_address("10000:00:1f.7"));
        assert!(!is_pci_address("pci0000:00"));
        assert!(!is_pci_address("0000:00:1f"));
        assert!(!is_pci_address("net"));
    }

    #[test]
    fn lexical() {
        let p = lexical_join(Path::new("sys/class/net"), Path::new("../../devices/pci0000:00/0000:00:05.0/net/eth0"));
        assert_eq!(p, PathBuf::from("sys/devices/pci0000:00/0000:00:05.0/net/eth0"));
    }
}
