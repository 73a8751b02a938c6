//! GPUs: which PCI device each one is and what its driver says of it, from
//! the two places the kernel tells: NVIDIA's driver files
//! (`/proc/driver/nvidia/gpus/ADDRESS/information`: `Model`, `GPU UUID`,
//! `Bus Location`, `Device Minor`, the `N` of `/dev/nvidiaN`; and
//! `numa_status`, the node its memory is onlined as on coherent systems
//! such as Grace Hopper and GB200) and the DRM class
//! (`/sys/class/drm/renderD128`, `card0`: their `device` link is the PCI
//! device; AMD's `product_name` and `unique_id` where amdgpu gives them).
//! A GPU's node is its PCI device's `numa_node`, never a guess.
//!
//! The parsers are pure; [`read_gpus`] reads through [`SysRoot`].

use std::collections::BTreeMap;

use serde::Serialize;

use super::devices::{pci_parent, PciDevice};
use crate::sys::{SysError, SysRoot};

const NVIDIA_GPUS: &str = "proc/driver/nvidia/gpus";
const DRM: &str = "sys/class/drm";

/// A GPU the kernel knows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Gpu {
    /// Its PCI address (`0000:3b:00.0`).
    pub address: String,
    /// `nvidia`, `amd`, `intel`, or the PCI vendor id.
    pub vendor: String,
    /// Its PCI device's `numa_node` (`None`: -1, or no such PCI device).
    pub numa_node: Option<u32>,
    /// Its model name where the driver gives one (NVIDIA's `Model`,
    /// amdgpu's `product_name`).
    pub model: Option<String>,
    /// NVIDIA's device minor: the `N` of `/dev/nvidiaN`.
    pub minor: Option<u32>,
    /// Its UUID (`GPU-...`: NVIDIA's `GPU UUID`; amdgpu's `unique_id` with
    /// `GPU-` in front, as ROCm writes it).
    pub uuid: Option<String>,
    /// Its DRM render node (`renderD128`), where it has one.
    pub render: Option<String>,
    /// Its DRM card (`card0`), where it has one.
    pub card: Option<String>,
    /// The memory-only node its own memory is onlined as (NVIDIA's
    /// `numa_status` on Grace Hopper and GB200: `Node` with `Status`
    /// `online`); such a node is the GPU's, not memory for ordinary jobs.
    pub memory_node: Option<u32>,
}

impl Gpu {
    /// For people: `GPU 0000:3b:00.0 (NVIDIA H100 80GB HBM3)`.
    pub fn label(&self) -> String {
        match &self.model {
            Some(m) => format!("GPU {} ({m})", self.address),
            None => format!("GPU {}", self.address),
        }
    }
}

/// What NVIDIA's `information` file says of one GPU.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NvidiaInfo {
    /// `Model`.
    pub model: Option<String>,
    /// `GPU UUID`.
    pub uuid: Option<String>,
    /// `Bus Location` (lower case, as sysfs names PCI devices).
    pub bus: Option<String>,
    /// `Device Minor` (older drivers: `Minor Number`).
    pub minor: Option<u32>,
}

/// Reads NVIDIA's `information` file (`Key: \t value` lines). A line it
/// does not know is skipped; values are kept as given, trimmed.
pub fn parse_nvidia_information(text: &str) -> NvidiaInfo {
    let mut info = NvidiaInfo::default();
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else { continue };
        let value = value.trim();
        if value.is_empty() {
            continue;
        }
        match key.trim() {
            "Model" => info.model = Some(value.to_string()),
            "GPU UUID" => info.uuid = Some(value.to_string()),
            "Bus Location" => info.bus = Some(value.to_ascii_lowercase()),
            "Device Minor" | "Minor Number" => info.minor = value.parse().ok(),
            _ => {}
        }
    }
    info
}

/// The node NVIDIA's `numa_status` says the GPU's memory is onlined as:
/// its `Node` when `Status` is `online` and the node is not -1.
pub fn parse_nvidia_numa_status(text: &str) -> Option<u32> {
    let field = |k: &str| {
        text.lines().find_map(|l| l.split_once(':').filter(|(key, _)| key.trim() == k).map(|(_, v)| v.trim()))
    };
    (field("Status")? == "online").then_some(())?;
    field("Node")?.parse::<i64>().ok().and_then(|n| u32::try_from(n).ok())
}

fn vendor_name(id: Option<&str>) -> String {
    match id {
        Some("0x10de") => "nvidia".into(),
        Some("0x1002") => "amd".into(),
        Some("0x8086") => "intel".into(),
        Some(v) => v.to_string(),
        None => "unknown".into(),
    }
}

/// Whether a DRM class entry is a render node or a card (not a
/// connector such as `card0-HDMI-A-1`, nor `version`).
fn drm_kind(name: &str) -> Option<bool> {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if name.strip_prefix("renderD").is_some_and(digits) {
        Some(true)
    } else if name.strip_prefix("card").is_some_and(digits) {
        Some(false)
    } else {
        None
    }
}

/// Every GPU the NVIDIA driver and the DRM class name, merged by PCI
/// address, sorted by it; `pci` gives each its node and vendor.
pub(super) fn read_gpus(sys: &SysRoot, pci: &[PciDevice]) -> Result<Vec<Gpu>, SysError> {
    let mut gpus: BTreeMap<String, Gpu> = BTreeMap::new();
    let blank = |address: &str| {
        let dev = pci.iter().find(|d| d.address == address);
        Gpu {
            address: address.to_string(),
            vendor: vendor_name(dev.and_then(|d| d.vendor.as_deref())),
            numa_node: dev.and_then(|d| d.numa_node),
            model: None,
            minor: None,
            uuid: None,
            render: None,
            card: None,
            memory_node: None,
        }
    };
    for dir in sys.list_dir(NVIDIA_GPUS)?.unwrap_or_default() {
        // The folder is named by the GPU's address; a dump may hold only
        // some of its files (hwloc's keep numa_status alone).
        let info = sys
            .read(format!("{NVIDIA_GPUS}/{dir}/information"))?
            .map(|t| parse_nvidia_information(&t))
            .unwrap_or_default();
        let address = info.bus.clone().unwrap_or_else(|| dir.to_ascii_lowercase());
        if !super::is_pci_address(&address) {
            continue;
        }
        let g = gpus.entry(address.clone()).or_insert_with(|| blank(&address));
        g.vendor = "nvidia".into();
        g.model = info.model;
        g.uuid = info.uuid;
        g.minor = info.minor;
        g.memory_node =
            sys.read(format!("{NVIDIA_GPUS}/{dir}/numa_status"))?.as_deref().and_then(parse_nvidia_numa_status);
    }
    let mut names = sys.list_dir(DRM)?.unwrap_or_default();
    names.sort();
    for name in names {
        let Some(render) = drm_kind(&name) else { continue };
        let Some(address) = pci_parent(sys, &format!("{DRM}/{name}"))? else { continue };
        let g = gpus.entry(address.clone()).or_insert_with(|| blank(&address));
        if render {
            g.render.get_or_insert(name.clone());
        } else {
            g.card.get_or_insert(name.clone());
        }
        if g.vendor == "amd" {
            let dev = format!("{DRM}/{name}/device");
            if g.model.is_none() {
                g.model = sys.read_nonempty(format!("{dev}/product_name"))?;
            }
            if g.uuid.is_none() {
                g.uuid = sys.read_nonempty(format!("{dev}/unique_id"))?.map(|u| format!("GPU-{u}"));
            }
        }
    }
    Ok(gpus.into_values().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nvidia_information() {
        let text = "Model: \t\t NVIDIA H100 80GB HBM3\nIRQ:   \t\t 160\nGPU UUID: \t GPU-5f3a2b1c-0d4e-4f5a-8b6c-7d8e9f0a1b2c\n\
                    Video BIOS: \t 96.00.5e.00.01\nBus Type: \t PCIe\nDMA Size: \t 52 bits\nDMA Mask: \t 0xfffffffffffff\n\
                    Bus Location: \t 0000:1B:00.0\nDevice Minor: \t 3\nGPU Excluded:\t No\n";
        let i = parse_nvidia_information(text);
        assert_eq!(i.model.as_deref(), Some("NVIDIA H100 80GB HBM3"));
        assert_eq!(i.uuid.as_deref(), Some("GPU-5f3a2b1c-0d4e-4f5a-8b6c-7d8e9f0a1b2c"));
        assert_eq!(i.bus.as_deref(), Some("0000:1b:00.0"));
        assert_eq!(i.minor, Some(3));
        assert_eq!(parse_nvidia_information("Minor Number: 7\n").minor, Some(7));
        assert_eq!(parse_nvidia_information("garbage\nModel:\n"), NvidiaInfo::default());
    }

    #[test]
    fn nvidia_numa_status() {
        assert_eq!(parse_nvidia_numa_status("Node:      4\nStatus:    online\nAddress:   4000000000\n"), Some(4));
        assert_eq!(parse_nvidia_numa_status("Node:      -1\nStatus:    disabled\n"), None);
        assert_eq!(parse_nvidia_numa_status("Node:      2\nStatus:    offline\n"), None);
        assert_eq!(parse_nvidia_numa_status(""), None);
    }

    #[test]
    fn drm_names() {
        assert_eq!(drm_kind("renderD128"), Some(true));
        assert_eq!(drm_kind("card1"), Some(false));
        assert_eq!(drm_kind("card0-HDMI-A-1"), None);
        assert_eq!(drm_kind("version"), None);
        assert_eq!(drm_kind("renderD"), None);
    }
}
