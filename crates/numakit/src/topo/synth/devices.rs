//! PCI devices of a synthetic machine, as the kernel and the drivers show
//! them: the device (`sys/devices/pci0000:00/ADDRESS`, linked from
//! `sys/bus/pci/devices`) with its node, NVIDIA's driver files
//! (`proc/driver/nvidia/gpus/ADDRESS/`), DRM render nodes and cards
//! (`sys/class/drm`), network interfaces (`sys/class/net`). Fake GPU
//! inventories for tests, written as a dump of a real machine holds them.

use std::io;
use std::path::Path;

/// What a synthetic PCI device is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SynthDeviceKind {
    /// An NVIDIA GPU: its device minor (`/dev/nvidiaN`), model, UUID, and
    /// the node its memory is onlined as (Grace Hopper, GB200).
    NvidiaGpu {
        /// `Device Minor`.
        minor: u32,
        /// `Model`.
        model: String,
        /// `GPU UUID`.
        uuid: String,
        /// `numa_status`'s node when online.
        memory_node: Option<u32>,
    },
    /// An AMD GPU with its DRM render node (`renderD<render>`) and card
    /// (`card<card>`), `product_name` and `unique_id`.
    AmdGpu {
        /// The N of `renderDN`.
        render: u32,
        /// The N of `cardN`.
        card: u32,
        /// `product_name`.
        model: String,
        /// `unique_id` (hex).
        unique_id: String,
    },
    /// A network interface card with its interface name.
    Nic {
        /// The interface (`eth0`, `ib0`).
        name: String,
    },
}

/// A synthetic PCI device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SynthDevice {
    /// PCI address (`0000:21:00.0`).
    pub address: String,
    /// `numa_node` (`None`: -1).
    pub node: Option<u32>,
    /// What it is.
    pub kind: SynthDeviceKind,
}

/// Writes `devices` below `root` (a tree [`SynthMachine::write`] made, or
/// any folder).
///
/// [`SynthMachine::write`]: super::SynthMachine::write
pub fn write_devices(root: &Path, devices: &[SynthDevice]) -> io::Result<()> {
    let put = |rel: &str, content: &str| -> io::Result<()> {
        let p = root.join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(p, content)
    };
    let link = |rel: &str, target: &str| -> io::Result<()> {
        let p = root.join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::os::unix::fs::symlink(target, p)
    };
    for d in devices {
        let a = &d.address;
        let dev = format!("sys/devices/pci0000:00/{a}");
        let (class, vendor) = match &d.kind {
            SynthDeviceKind::NvidiaGpu { .. } => ("0x030200", "0x10de"),
            SynthDeviceKind::AmdGpu { .. } => ("0x038000", "0x1002"),
            SynthDeviceKind::Nic { .. } => ("0x020000", "0x15b3"),
        };
        let node = d.node.map_or(-1, i64::from);
        put(&format!("{dev}/numa_node"), &format!("{node}\n"))?;
        put(&format!("{dev}/class"), &format!("{class}\n"))?;
        put(&format!("{dev}/vendor"), &format!("{vendor}\n"))?;
        put(&format!("{dev}/device"), "0x1234\n")?;
        link(&format!("sys/bus/pci/devices/{a}"), &format!("../../../devices/pci0000:00/{a}"))?;
        match &d.kind {
            SynthDeviceKind::NvidiaGpu { minor, model, uuid, memory_node } => {
                let g = format!("proc/driver/nvidia/gpus/{a}");
                put(
                    &format!("{g}/information"),
                    &format!(
                        "Model: \t\t {model}\nIRQ:   \t\t 150\nGPU UUID: \t {uuid}\nVideo BIOS: \t 96.00.89.00.01\n\
                         Bus Type: \t PCIe\nDMA Size: \t 47 bits\nDMA Mask: \t 0x7fffffffffff\n\
                         Bus Location: \t {a}\nDevice Minor: \t {minor}\nGPU Excluded:\t No\n"
                    ),
                )?;
                let status = match memory_node {
                    Some(n) => format!("Node:      {n}\nStatus:    online\nAddress:   400000000000\n"),
                    None => "Node:      -1\nStatus:    disabled\n".to_string(),
                };
                put(&format!("{g}/numa_status"), &status)?;
            }
            SynthDeviceKind::AmdGpu { render, card, model, unique_id } => {
                put(&format!("{dev}/product_name"), &format!("{model}\n"))?;
                put(&format!("{dev}/unique_id"), &format!("{unique_id}\n"))?;
                for name in [format!("renderD{render}"), format!("card{card}")] {
                    let d = format!("{dev}/drm/{name}");
                    std::fs::create_dir_all(root.join(&d))?;
                    link(&format!("{d}/device"), &format!("../../../{a}"))?;
                    link(&format!("sys/class/drm/{name}"), &format!("../../devices/pci0000:00/{a}/drm/{name}"))?;
                }
            }
            SynthDeviceKind::Nic { name } => {
                std::fs::create_dir_all(root.join(format!("{dev}/net/{name}")))?;
                link(&format!("sys/class/net/{name}"), &format!("../../devices/pci0000:00/{a}/net/{name}"))?;
            }
        }
    }
    Ok(())
}
