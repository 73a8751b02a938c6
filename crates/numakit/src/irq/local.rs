//! Pure: what `numakit tune irq-local DEVICE` changes. The device named as
//! typed (a PCI address, full or without the domain, a network interface or
//! a block device, optionally with `pci:`, `netdev:` or `block:` in front)
//! is looked up in the view; its node's CPUs are the target; every IRQ of
//! the device whose affinity reaches a CPU off that node gets the node's
//! CPUs. An affinity already inside the node (one CPU chosen by hand, say)
//! is left alone.

use crate::sets::CpuSet;
use crate::topo::Topology;
use crate::tune::knobs;
use crate::tune::Setting;

use super::{IrqDevice, IrqView};

/// Why there is nothing to plan. Each names the device as typed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LocalError {
    /// No device of that name.
    #[error("unknown device \"{typed}\": not a PCI address, network interface or block device of this machine (numakit irq show lists those with IRQs)")]
    Unknown {
        /// As typed.
        typed: String,
    },
    /// The kernel gives the device no node.
    #[error(
        "device \"{typed}\" ({pci}) has no NUMA node (numa_node is -1): there are no local CPUs to move its IRQs to"
    )]
    NoNode {
        /// As typed.
        typed: String,
        /// Its PCI address.
        pci: String,
    },
    /// Its node has no CPUs.
    #[error(
        "device \"{typed}\" ({pci}) is on node {node}, which has no CPUs: there are no local CPUs to move its IRQs to"
    )]
    NodeWithoutCpus {
        /// As typed.
        typed: String,
        /// Its PCI address.
        pci: String,
        /// The node.
        node: u32,
    },
    /// No IRQ of the device is known.
    #[error("device \"{typed}\" ({pci}) has no IRQs (no driver bound, or no MSI vectors and no legacy line)")]
    NoIrqs {
        /// As typed.
        typed: String,
        /// Its PCI address.
        pci: String,
    },
}

/// The change for one device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalPlan {
    /// The device.
    pub device: IrqDevice,
    /// Its node.
    pub node: u32,
    /// The node's CPUs (the value written).
    pub cpus: CpuSet,
    /// One `irq/N/smp_affinity_list=CPUS` per IRQ to move.
    pub settings: Vec<Setting>,
    /// IRQs already on the node (affinity inside its CPUs).
    pub already: Vec<u32>,
    /// IRQs that cannot be moved, with why (no `/proc/irq/N`).
    pub skipped: Vec<(u32, String)>,
}

/// The device `typed` names among `view`'s devices (those with IRQs).
pub fn find_device<'a>(view: &'a IrqView, typed: &str) -> Option<&'a IrqDevice> {
    find_in(view.device_irqs().flat_map(|i| i.devices.iter()), typed)
}

/// The device `typed` names among `devices`.
fn find_in<'a>(mut devices: impl Iterator<Item = &'a IrqDevice>, typed: &str) -> Option<&'a IrqDevice> {
    let t = typed.trim();
    let (kind, name) = match t.split_once(':') {
        Some((k @ ("pci" | "netdev" | "block"), rest)) => (Some(k), rest),
        _ => (None, t),
    };
    let name = name.strip_prefix("/dev/").unwrap_or(name);
    let pci = crate::place::iospec::normalize_pci(name);
    devices.find(|d| match kind {
        Some("pci") => pci.as_deref() == Some(d.pci.as_str()),
        Some("netdev") => d.netdevs.iter().any(|n| n == name),
        Some("block") => d.blockdevs.iter().any(|n| n == name),
        _ => {
            pci.as_deref() == Some(d.pci.as_str())
                || d.netdevs.iter().any(|n| n == name)
                || d.blockdevs.iter().any(|n| n == name)
        }
    })
}

/// The IRQ moves that put `typed`'s IRQs on its node's CPUs. `topo` knows
/// the PCI devices without IRQs (to say so, rather than "unknown").
pub fn plan(view: &IrqView, topo: &Topology, typed: &str) -> Result<LocalPlan, LocalError> {
    let Some(device) = find_device(view, typed).cloned() else {
        let all: Vec<IrqDevice> = topo
            .pci_devices
            .iter()
            .map(|p| IrqDevice {
                pci: p.address.clone(),
                driver: None,
                netdevs: p.netdevs.clone(),
                blockdevs: p.blockdevs.clone(),
                node: p.numa_node,
            })
            .collect();
        return Err(match find_in(all.iter(), typed) {
            Some(d) => LocalError::NoIrqs { typed: typed.to_string(), pci: d.pci.clone() },
            None => LocalError::Unknown { typed: typed.to_string() },
        });
    };
    let pci = device.pci.clone();
    let node = device.node.ok_or_else(|| LocalError::NoNode { typed: typed.to_string(), pci: pci.clone() })?;
    let cpus = view
        .nodes
        .iter()
        .find(|(n, _)| *n == node)
        .map(|(_, c)| c.clone())
        .filter(|c| !c.is_empty())
        .ok_or_else(|| LocalError::NodeWithoutCpus { typed: typed.to_string(), pci: pci.clone(), node })?;
    let mine: Vec<_> = view.irqs.iter().filter(|i| i.devices.iter().any(|d| d.pci == pci)).collect();
    if mine.is_empty() {
        return Err(LocalError::NoIrqs { typed: typed.to_string(), pci });
    }
    let mut out =
        LocalPlan { device, node, cpus: cpus.clone(), settings: Vec::new(), already: Vec::new(), skipped: Vec::new() };
    for irq in mine {
        match &irq.affinity {
            None => out.skipped.push((irq.irq, "no /proc/irq/N/smp_affinity_list".to_string())),
            Some(a) if !a.is_empty() && a.is_subset(&cpus) => out.already.push(irq.irq),
            Some(_) => out.settings.push(Setting::new(knobs::irq_affinity(irq.irq).name, cpus.to_list())),
        }
    }
    Ok(out)
}
