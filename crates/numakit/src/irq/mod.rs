//! IRQ locality: every device's interrupts, the device's node, where the
//! kernel may and does deliver them, and how many each node served.
//!
//! * [`read`]: what is read, through [`SysRoot`](crate::sys::SysRoot)
//!   (`/proc/interrupts`, `/proc/irq/N/`, PCI `msi_irqs/` and `irq`);
//! * this module: pure: [`build`] joins the readings with the topology
//!   model (which node each PCI device is on comes from
//!   [`Topology::pci_devices`]) into an [`IrqView`]; [`IrqView::with_rates`]
//!   adds rates between two samples;
//! * [`local`]: pure: which IRQs `tune irq-local DEVICE` writes, and to
//!   which CPUs (the writes themselves go through `tune`, so `tune revert`
//!   restores them).
//!
//! Which device an IRQ belongs to, in this order: the device's
//! `msi_irqs/N`; the chip name of per-device MSI domains
//! (`PCI-MSIX-0000:21:01.0`, Linux 6.2+); an action name naming a PCI
//! address (`ahci[0000:00:1f.2]`, `mlx5_comp0@pci:0000:3b:00.0`), a
//! `virtioN` device, a network interface (`eth0-TxRx-0`) or a block device
//! (`nvme0q1`); last the legacy `irq` line of a device without MSI vectors
//! (shared lines list every such device).

pub mod local;
pub mod read;

use std::collections::BTreeMap;

use serde::Serialize;

pub use read::{Irqbalance, Readings};

use crate::sets::CpuSet;
use crate::sys::interrupts::{Interrupts, IrqLine};
use crate::topo::{is_pci_address, PciDevice, Topology};

/// Where an IRQ's CPUs are, seen from its device's node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Locality {
    /// Every CPU it is delivered to is on the device's node.
    Local,
    /// None is.
    OffNode,
    /// Some are, some are not (an affinity spanning nodes, and no
    /// effective affinity to say which one is used).
    Mixed,
    /// The device has no node, the node no CPUs, or the affinity is unknown.
    Unknown,
}

impl Locality {
    /// Whether the IRQ is (at least partly) served off the device's node.
    pub fn is_off_node(self) -> bool {
        matches!(self, Locality::OffNode | Locality::Mixed)
    }

    /// The word shown in the text view.
    pub fn word(self) -> &'static str {
        match self {
            Locality::Local => "local",
            Locality::OffNode => "OFF-NODE",
            Locality::Mixed => "MIXED",
            Locality::Unknown => "-",
        }
    }
}

/// How an IRQ was matched to its device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Matched {
    /// `sys/bus/pci/devices/ADDR/msi_irqs/N`.
    MsiIrqs,
    /// The chip of a per-device MSI domain (`PCI-MSIX-ADDR`).
    Chip,
    /// An action name (PCI address, `virtioN`, network or block device).
    Action,
    /// The device's legacy `irq` line.
    LegacyIrq,
}

/// A device an IRQ belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IrqDevice {
    /// PCI address.
    pub pci: String,
    /// The driver bound to it.
    pub driver: Option<String>,
    /// Network interfaces on it.
    pub netdevs: Vec<String>,
    /// Block devices on it.
    pub blockdevs: Vec<String>,
    /// Its node (topology model: `numa_node`).
    pub node: Option<u32>,
}

impl IrqDevice {
    /// `0000:3b:00.0 (eth0)`, or with the driver when it has no interface.
    pub fn label(&self) -> String {
        let names: Vec<&str> = self.netdevs.iter().chain(&self.blockdevs).map(String::as_str).collect();
        match (names.is_empty(), &self.driver) {
            (false, _) => format!("{} ({})", self.pci, names.join(",")),
            (true, Some(d)) => format!("{} ({d})", self.pci),
            (true, None) => self.pci.clone(),
        }
    }
}

/// One IRQ.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Irq {
    /// The IRQ number.
    pub irq: u32,
    /// The device(s) it belongs to (several only for a shared legacy line).
    pub devices: Vec<IrqDevice>,
    /// How it was matched.
    pub matched: Option<Matched>,
    /// The devices' node, when they have one (and agree).
    pub node: Option<u32>,
    /// `/proc/interrupts`: chip, hardware IRQ, flow handler, actions.
    pub chip: Option<String>,
    /// Hardware IRQ number.
    pub hwirq: Option<String>,
    /// Flow handler.
    pub trigger: Option<String>,
    /// Action names.
    pub actions: Vec<String>,
    /// `smp_affinity_list`.
    pub affinity: Option<CpuSet>,
    /// `effective_affinity_list`.
    pub effective: Option<CpuSet>,
    /// `/proc/irq/N/node`: where the kernel allocated its descriptor.
    pub kernel_node: Option<u32>,
    /// Count per CPU since boot (empty without `/proc/interrupts`).
    pub counts: BTreeMap<u32, u64>,
    /// Count per node since boot (summed over each node's CPUs).
    pub by_node: BTreeMap<u32, u64>,
    /// All counts.
    pub total: Option<u64>,
    /// Interrupts per second per CPU between two samples.
    pub rate_by_cpu: Option<BTreeMap<u32, f64>>,
    /// Interrupts per second per node between two samples.
    pub rate_by_node: Option<BTreeMap<u32, f64>>,
    /// Interrupts per second over all CPUs.
    pub rate: Option<f64>,
    /// Where it is served, seen from the device's node, judged on the
    /// effective affinity, else (none, or a move still pending) the affinity.
    pub locality: Locality,
}

/// Every IRQ with what is known of it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IrqView {
    /// Whether `/proc/interrupts` was there (counts known).
    pub has_counts: bool,
    /// Whether `/proc/irq` was there (affinities known).
    pub has_affinity: bool,
    /// Nodes with online CPUs, and those CPUs, sorted by id (the count columns).
    pub nodes: Vec<(u32, CpuSet)>,
    /// Seconds between the two samples of the rates.
    pub interval_s: Option<f64>,
    /// IRQs, sorted by number.
    pub irqs: Vec<Irq>,
}

impl IrqView {
    /// The IRQs that belong to a device.
    pub fn device_irqs(&self) -> impl Iterator<Item = &Irq> {
        self.irqs.iter().filter(|i| !i.devices.is_empty())
    }

    /// Adds rates: `earlier` is a sample `secs` before the one the view was
    /// built from. A counter that went back (an IRQ freed and reused) counts 0.
    pub fn with_rates(mut self, earlier: &Interrupts, secs: f64) -> IrqView {
        if secs <= 0.0 || !self.has_counts {
            return self;
        }
        self.interval_s = Some(secs);
        for irq in &mut self.irqs {
            let before = earlier.irq(irq.irq);
            let delta =
                |cpu: &u32, now: &u64| now.saturating_sub(before.and_then(|b| b.counts.get(cpu)).copied().unwrap_or(0));
            let mut by_node = BTreeMap::new();
            for (node, cpus) in &self.nodes {
                let d: u64 = irq.counts.iter().filter(|(c, _)| cpus.contains(**c)).map(|(c, n)| delta(c, n)).sum();
                by_node.insert(*node, d as f64 / secs);
            }
            let all: u64 = irq.counts.iter().map(|(c, n)| delta(c, n)).sum();
            irq.rate_by_cpu = Some(irq.counts.iter().map(|(c, n)| (*c, delta(c, n) as f64 / secs)).collect());
            irq.rate_by_node = Some(by_node);
            irq.rate = Some(all as f64 / secs);
        }
        self
    }
}

/// Joins `readings` with the topology into the view.
pub fn build(topo: &Topology, readings: &Readings) -> IrqView {
    // online CPUs only: a node's cpumap may list offline ones, which
    // neither serve interrupts nor make a useful affinity
    let nodes: Vec<(u32, CpuSet)> = topo
        .nodes
        .iter()
        .map(|n| (n.id, n.cpus.intersection(&topo.online_cpus)))
        .filter(|(_, cpus)| !cpus.is_empty())
        .collect();
    let pci: BTreeMap<&str, &PciDevice> = topo.pci_devices.iter().map(|d| (d.address.as_str(), d)).collect();
    let driver: BTreeMap<&str, Option<String>> =
        readings.devices.iter().map(|d| (d.address.as_str(), d.driver.clone())).collect();
    let device = |addr: &str| -> IrqDevice {
        let p = pci.get(addr);
        IrqDevice {
            pci: addr.to_string(),
            driver: driver.get(addr).cloned().flatten(),
            netdevs: p.map(|p| p.netdevs.clone()).unwrap_or_default(),
            blockdevs: p.map(|p| p.blockdevs.clone()).unwrap_or_default(),
            node: p.and_then(|p| p.numa_node),
        }
    };

    // every IRQ number any source names
    let mut numbers: Vec<u32> = readings.files.keys().copied().collect();
    if let Some(i) = &readings.interrupts {
        numbers.extend(i.lines.iter().filter_map(|l| l.irq));
    }
    for d in &readings.devices {
        numbers.extend(d.msi.iter().copied());
        numbers.extend(d.legacy);
    }
    numbers.sort_unstable();
    numbers.dedup();

    let mut msi: BTreeMap<u32, &str> = BTreeMap::new();
    let mut legacy: BTreeMap<u32, Vec<&str>> = BTreeMap::new();
    for d in &readings.devices {
        for n in &d.msi {
            msi.entry(*n).or_insert(&d.address);
        }
        if let (true, Some(n)) = (d.msi.is_empty(), d.legacy) {
            legacy.entry(n).or_default().push(&d.address);
        }
    }

    let mut irqs = Vec::new();
    for n in numbers {
        let line = readings.interrupts.as_ref().and_then(|i| i.irq(n));
        let (matched, addrs): (Option<Matched>, Vec<String>) = if let Some(a) = msi.get(&n) {
            (Some(Matched::MsiIrqs), vec![a.to_string()])
        } else if let Some(a) = line.and_then(|l| chip_address(l, &pci)) {
            (Some(Matched::Chip), vec![a])
        } else if let Some(a) = line.and_then(|l| action_address(l, topo, &pci, &readings.virtio)) {
            (Some(Matched::Action), vec![a])
        } else if let Some(list) = legacy.get(&n).filter(|_| line.is_none_or(|l| !l.actions.is_empty())) {
            (Some(Matched::LegacyIrq), list.iter().map(|a| a.to_string()).collect())
        } else {
            (None, Vec::new())
        };
        let devices: Vec<IrqDevice> = addrs.iter().map(|a| device(a)).collect();
        let node = match devices.as_slice() {
            [first, rest @ ..] if rest.iter().all(|d| d.node == first.node) => first.node,
            _ => None,
        };
        let files = readings.files.get(&n);
        let affinity = files.and_then(|f| f.affinity.clone());
        let effective = files.and_then(|f| f.effective.clone()).filter(|e| !e.is_empty());
        let counts = line.map(|l| l.counts.clone()).unwrap_or_default();
        let by_node = match line {
            Some(l) => nodes.iter().map(|(id, cpus)| (*id, l.count_on(cpus))).collect(),
            None => BTreeMap::new(),
        };
        let node_cpus = node.and_then(|id| nodes.iter().find(|(n, _)| *n == id)).map(|(_, c)| c);
        let locality = locality(judged(affinity.as_ref(), effective.as_ref()), node_cpus);
        irqs.push(Irq {
            irq: n,
            devices,
            matched,
            node,
            chip: line.and_then(|l| l.chip.clone()),
            hwirq: line.and_then(|l| l.hwirq.clone()),
            trigger: line.and_then(|l| l.trigger.clone()),
            actions: line.map(|l| l.actions.clone()).unwrap_or_default(),
            affinity,
            effective,
            kernel_node: files.and_then(|f| f.node),
            counts,
            by_node,
            total: line.map(IrqLine::total),
            rate_by_cpu: None,
            rate_by_node: None,
            rate: None,
            locality,
        });
    }
    IrqView {
        has_counts: readings.interrupts.is_some(),
        has_affinity: !readings.files.is_empty(),
        nodes,
        interval_s: None,
        irqs,
    }
}

/// IRQ numbers as ranges: `52-103,112`.
pub fn ranges(irqs: impl IntoIterator<Item = u32>) -> String {
    let mut v: Vec<u32> = irqs.into_iter().collect();
    v.sort_unstable();
    v.dedup();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let mut j = i;
        while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
            j += 1;
        }
        out.push(if i == j { v[i].to_string() } else { format!("{}-{}", v[i], v[j]) });
        i = j + 1;
    }
    out.join(",")
}

/// The CPUs an IRQ's locality is judged on: the effective affinity, unless
/// it lies outside the affinity. On x86 a new affinity takes effect at the
/// IRQ's next interrupt (the move is pending until then), so a quiet IRQ
/// keeps showing its old effective CPU; its affinity is the truth then.
pub fn judged<'a>(affinity: Option<&'a CpuSet>, effective: Option<&'a CpuSet>) -> Option<&'a CpuSet> {
    match (affinity, effective) {
        (Some(a), Some(e)) if !e.is_subset(a) => Some(a),
        (a, e) => e.or(a),
    }
}

/// Where `cpus` are, seen from `node_cpus`.
pub fn locality(cpus: Option<&CpuSet>, node_cpus: Option<&CpuSet>) -> Locality {
    match (cpus, node_cpus) {
        (Some(c), Some(n)) if !c.is_empty() && !n.is_empty() => {
            if c.is_subset(n) {
                Locality::Local
            } else if c.intersects(n) {
                Locality::Mixed
            } else {
                Locality::OffNode
            }
        }
        _ => Locality::Unknown,
    }
}

/// The PCI address in a per-device MSI domain's chip name
/// (`PCI-MSIX-0000:21:01.0`, `IR-PCI-MSI-0000:3b:00.0`), if it is a known device.
fn chip_address(line: &IrqLine, pci: &BTreeMap<&str, &PciDevice>) -> Option<String> {
    let chip = line.chip.as_deref()?;
    pci_addresses_in(chip).find(|a| pci.contains_key(a.as_str()))
}

/// Every substring of `s` that is a PCI address.
fn pci_addresses_in(s: &str) -> impl Iterator<Item = String> + '_ {
    s.split(|c: char| !(c.is_ascii_hexdigit() || c == ':' || c == '.')).flat_map(|w| {
        // `PCI-MSIX-0000:21:01.0` splits at '-'; `@pci:0000:3b:00.0` leaves `:0000:...`
        let w = w.trim_start_matches(':');
        let mut found = Vec::new();
        if is_pci_address(w) {
            found.push(w.to_ascii_lowercase());
        } else if let Some(i) = w.find(':').filter(|_| w.matches(':').count() > 2) {
            let rest = &w[i + 1..];
            if is_pci_address(rest) {
                found.push(rest.to_ascii_lowercase());
            }
        }
        found
    })
}

/// The device an action name points at: a PCI address in it, `virtioN`, a
/// network interface or a block device (an NVMe disk's controller: `nvme0`
/// for `nvme0n1`, whose queues are `nvme0q1`...).
fn action_address(
    line: &IrqLine,
    topo: &Topology,
    pci: &BTreeMap<&str, &PciDevice>,
    virtio: &BTreeMap<String, String>,
) -> Option<String> {
    for action in &line.actions {
        if let Some(a) = pci_addresses_in(action).find(|a| pci.contains_key(a.as_str())) {
            return Some(a);
        }
        if let Some((_, addr)) = virtio.iter().find(|(name, _)| starts_with_name(action, name)) {
            return Some(addr.clone());
        }
        // the longest matching name wins (`eth10-rx` is eth10's, not eth1's)
        let mut best: Option<(usize, &str)> = None;
        for d in &topo.pci_devices {
            for name in d.netdevs.iter().chain(&d.blockdevs) {
                let mut candidates = vec![name.clone()];
                if let Some(ctrl) = nvme_controller(name) {
                    candidates.push(ctrl);
                }
                for c in candidates {
                    let hit = starts_with_name(action, &c) || (c.starts_with("nvme") && nvme_queue_of(action, &c));
                    if hit && best.is_none_or(|(len, _)| c.len() > len) {
                        best = Some((c.len(), d.address.as_str()));
                    }
                }
            }
        }
        if let Some((_, a)) = best {
            return Some(a.to_string());
        }
    }
    None
}

/// `action` is `name`, or `name` followed by a separator (`eth0-TxRx-0`,
/// `virtio2-requests`, `mlx5_comp0`).
fn starts_with_name(action: &str, name: &str) -> bool {
    !name.is_empty()
        && action
            .strip_prefix(name)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with(['-', '_', ':', '@', '[', ' ']))
}

/// `nvme0n1` → `nvme0`.
fn nvme_controller(block: &str) -> Option<String> {
    let rest = block.strip_prefix("nvme")?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    (digits > 0 && rest[digits..].starts_with('n')).then(|| format!("nvme{}", &rest[..digits]))
}

/// `action` is a queue of NVMe controller `ctrl`: `nvme0q1`.
fn nvme_queue_of(action: &str, ctrl: &str) -> bool {
    action
        .strip_prefix(ctrl)
        .and_then(|r| r.strip_prefix('q'))
        .is_some_and(|q| !q.is_empty() && q.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
pub(crate) mod tests;
