//! `/proc/interrupts` (counts per CPU, chip, hardware IRQ, trigger, action
//! names) and the per-IRQ files of `/proc/irq/N/` (`smp_affinity_list`,
//! `effective_affinity_list`, `node`).
//!
//! The kernel writes `/proc/interrupts` as a header of `CPUn` columns (the
//! online CPUs) and one line per interrupt (`kernel/irq/proc.c`,
//! `show_interrupts`):
//!
//! ```text
//!            CPU0       CPU1
//!   0:        159          0   IO-APIC   2-edge      timer
//!  27:          0        157  PCI-MSIX-0000:00:03.0   1-edge      virtio1-requests
//!  41:          3          0  IR-PCI-MSI 1048576-edge      eth0-TxRx-0, eth0-TxRx-1
//! NMI:          0          0   Non-maskable interrupts
//! ERR:          0
//! ```
//!
//! A numbered line is `N:`, one count per CPU column, the chip's name,
//! the hardware IRQ number (when the IRQ has a domain) joined to the flow
//! handler's name by `-`, and the actions (drivers' names for it) separated
//! by `, `. Older kernels print `PCI-MSI-edge` as one word and no hardware
//! number; ARM's GIC prints `Level`/`Edge` as a word of its own. Lines
//! named by letters (`NMI`, `LOC`, `IPI0`) are architecture counters with a
//! description; some (`ERR`, `MIS`) have one count only.
//!
//! The parser takes whatever a dump may hold: a header of anything other
//! than `CPUn` words, a line without `:`, a count that does not fit in 64
//! bits are errors quoting the line; nothing panics (a property test feeds
//! it arbitrary text).

use std::collections::BTreeMap;

use serde::Serialize;

use super::{SysError, SysRoot};
use crate::sets::CpuSet;
use crate::text::quote;

/// `/proc/interrupts`, relative to the root.
pub const INTERRUPTS: &str = "proc/interrupts";
/// `/proc/irq`, relative to the root.
pub const IRQ_DIR: &str = "proc/irq";

/// One line of `/proc/interrupts`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IrqLine {
    /// The IRQ number, or `None` for an architecture counter (`NMI`, `LOC`).
    pub irq: Option<u32>,
    /// The line's name as printed (`27`, `NMI`).
    pub name: String,
    /// Count per CPU since boot, keyed by CPU id (the header's columns; a
    /// line with fewer counts has only the first columns).
    pub counts: BTreeMap<u32, u64>,
    /// The interrupt chip (`IO-APIC`, `PCI-MSIX-0000:00:03.0`, `IR-PCI-MSI`).
    pub chip: Option<String>,
    /// The hardware IRQ number in the chip's domain.
    pub hwirq: Option<String>,
    /// The flow handler (`edge`, `fasteoi`, `Level`).
    pub trigger: Option<String>,
    /// The actions' names (what drivers called the IRQ): `eth0-TxRx-0`,
    /// `nvme0q1`, `ahci[0000:00:1f.2]`; for an architecture counter, its
    /// description.
    pub actions: Vec<String>,
}

impl IrqLine {
    /// Sum of the counts over `cpus`.
    pub fn count_on(&self, cpus: &CpuSet) -> u64 {
        self.counts.iter().filter(|(c, _)| cpus.contains(**c)).fold(0u64, |a, (_, n)| a.saturating_add(*n))
    }

    /// Sum of all counts.
    pub fn total(&self) -> u64 {
        self.counts.values().fold(0u64, |a, n| a.saturating_add(*n))
    }
}

/// The whole file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Interrupts {
    /// The CPU ids of the header's columns, in order.
    pub cpus: Vec<u32>,
    /// The lines in file order.
    pub lines: Vec<IrqLine>,
}

impl Interrupts {
    /// The line of IRQ `irq`.
    pub fn irq(&self, irq: u32) -> Option<&IrqLine> {
        self.lines.iter().find(|l| l.irq == Some(irq))
    }
}

/// Parses `/proc/interrupts`. The first non-empty line must be the header
/// (`CPU0 CPU1 ...`, at least one column, ids increasing); every other
/// non-empty line must be `NAME:` followed by counts and text. Errors quote
/// the offending line.
pub fn parse_interrupts(text: &str) -> Result<Interrupts, String> {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let header = lines.next().ok_or("empty: no CPU header")?;
    let mut cpus = Vec::new();
    for word in header.split_whitespace() {
        let id = word
            .strip_prefix("CPU")
            .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|d| d.parse::<u32>().ok())
            .filter(|id| cpus.last().is_none_or(|last| id > last))
            .ok_or_else(|| format!("header {} is not a list of increasing CPUn columns", quote(header)))?;
        cpus.push(id);
    }
    if cpus.is_empty() {
        return Err(format!("header {} names no CPU", quote(header)));
    }
    let mut out = Interrupts { cpus, lines: Vec::new() };
    for line in lines {
        out.lines.push(parse_line(line, &out.cpus)?);
    }
    Ok(out)
}

fn parse_line(line: &str, cpus: &[u32]) -> Result<IrqLine, String> {
    let bad = |why: &str| format!("line {}: {why}", quote(line));
    let (name, rest) = line.split_once(':').ok_or_else(|| bad("no \"NAME:\""))?;
    let name = name.trim();
    if name.is_empty() || name.contains(char::is_whitespace) {
        return Err(bad("no IRQ name before \":\""));
    }
    let irq = if name.bytes().all(|b| b.is_ascii_digit()) {
        Some(name.parse::<u32>().map_err(|_| bad("the IRQ number is too large"))?)
    } else {
        None
    };
    // counts: the leading all-digit words, at most one per CPU column
    let mut counts = BTreeMap::new();
    let mut rest = rest;
    for &cpu in cpus {
        let trimmed = rest.trim_start();
        let end = trimmed.find(char::is_whitespace).unwrap_or(trimmed.len());
        let word = &trimmed[..end];
        if word.is_empty() || !word.bytes().all(|b| b.is_ascii_digit()) {
            break;
        }
        let n = word.parse::<u64>().map_err(|_| bad("a count does not fit in 64 bits"))?;
        counts.insert(cpu, n);
        rest = &trimmed[end..];
    }
    let rest = rest.trim();
    let mut parsed =
        IrqLine { irq, name: name.to_string(), counts, chip: None, hwirq: None, trigger: None, actions: Vec::new() };
    if irq.is_none() {
        // an architecture counter: the rest is its description
        if !rest.is_empty() {
            parsed.actions.push(rest.to_string());
        }
        return Ok(parsed);
    }
    let mut words = rest.splitn(2, char::is_whitespace);
    parsed.chip = words.next().filter(|w| !w.is_empty()).map(str::to_string);
    let mut rest = words.next().unwrap_or("").trim_start();
    // the hardware IRQ, alone (`27`) or joined to the handler (`2-edge`)
    let word_end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    let word = &rest[..word_end];
    let (num, handler) = match word.split_once('-') {
        Some((n, h)) => (n, Some(h)),
        None => (word, None),
    };
    if !num.is_empty() && num.bytes().all(|b| b.is_ascii_digit()) {
        parsed.hwirq = Some(num.to_string());
        parsed.trigger = handler.filter(|h| !h.is_empty()).map(str::to_string);
        rest = rest[word_end..].trim_start();
        // ARM GIC and CONFIG_GENERIC_IRQ_SHOW_LEVEL: `Level`/`Edge` on its own
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        if parsed.trigger.is_none() && matches!(&rest[..end], "Level" | "Edge") {
            parsed.trigger = Some(rest[..end].to_string());
            rest = rest[end..].trim_start();
            if let Some(h) = rest.strip_prefix('-') {
                // `Edge      -handler`: keep only the word after the dash
                let e = h.find(char::is_whitespace).unwrap_or(h.len());
                rest = h[e..].trim_start();
            }
        }
    }
    parsed.actions = rest.split(", ").map(str::trim).filter(|a| !a.is_empty()).map(str::to_string).collect();
    Ok(parsed)
}

/// Reads `/proc/interrupts`; `Ok(None)` when the root has none (a dump).
pub fn read_interrupts(sys: &SysRoot) -> Result<Option<Interrupts>, SysError> {
    match sys.read(INTERRUPTS)? {
        None => Ok(None),
        Some(text) => parse_interrupts(&text).map(Some).map_err(|problem| sys.invalid(INTERRUPTS, problem)),
    }
}

/// What `/proc/irq/N/` says of one IRQ. Files the kernel does not offer
/// (`effective_affinity_list` before Linux 4.15 or on architectures
/// without it, `node` without `CONFIG_NUMA`) are `None`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct IrqFiles {
    /// `smp_affinity_list`: the CPUs the IRQ may be delivered to.
    pub affinity: Option<CpuSet>,
    /// `effective_affinity_list`: the CPUs it is delivered to now (on x86,
    /// one CPU). Empty when the IRQ is not started.
    pub effective: Option<CpuSet>,
    /// `node`: the node the kernel allocated the IRQ's descriptor on
    /// (`None` where it says -1).
    pub node: Option<u32>,
}

/// The IRQ numbers with a folder in `/proc/irq`, sorted.
pub fn irq_numbers(sys: &SysRoot) -> Result<Vec<u32>, SysError> {
    sys.numbered_entries(IRQ_DIR, "")
}

/// `/proc/irq/N/smp_affinity_list`, relative to the root.
pub fn affinity_path(irq: u32) -> String {
    format!("{IRQ_DIR}/{irq}/smp_affinity_list")
}

/// Reads `/proc/irq/N/`; `Ok(None)` when there is no such folder.
pub fn read_irq_files(sys: &SysRoot, irq: u32) -> Result<Option<IrqFiles>, SysError> {
    let dir = format!("{IRQ_DIR}/{irq}");
    if !sys.exists(&dir) {
        return Ok(None);
    }
    Ok(Some(IrqFiles {
        affinity: sys.read_list_or_mask(affinity_path(irq), format!("{dir}/smp_affinity"))?,
        effective: sys
            .read_list_or_mask(format!("{dir}/effective_affinity_list"), format!("{dir}/effective_affinity"))?,
        node: sys.read_i64(format!("{dir}/node"))?.and_then(|n| u32::try_from(n).ok()),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The guest's file (QEMU, Linux 6.12, 8 CPUs), shortened.
    const GUEST: &str = "           CPU0       CPU1       CPU2       CPU3       
  0:        159          0          0          0   IO-APIC   2-edge      timer
  9:          0          0          0          0   IO-APIC   9-fasteoi   acpi
 24:          0          0          0          0  PCI-MSIX-0000:00:02.0   0-edge      virtio0-config
 27:          0          0          0        157  PCI-MSIX-0000:00:03.0   1-edge      virtio1-requests
 41:          3          1          0          0  IR-PCI-MSI 1048576-edge      eth0-TxRx-0, eth0-TxRx-1
 42:          0          0          0          0  IR-PCI-MSI-edge  ahci[0000:00:1f.2]
 50:          5          0          0          0     GICv3  27 Level     arch_timer
 51:          0          0          0          0   dummy
NMI:          0          0          0          0   Non-maskable interrupts
LOC:        625        280        446        280   Local timer interrupts
ERR:          0
";

    #[test]
    fn parses_every_kind_of_line() {
        let i = parse_interrupts(GUEST).expect("parse");
        assert_eq!(i.cpus, vec![0, 1, 2, 3]);
        let timer = i.irq(0).expect("0");
        assert_eq!(timer.counts[&0], 159);
        assert_eq!(timer.chip.as_deref(), Some("IO-APIC"));
        assert_eq!(timer.hwirq.as_deref(), Some("2"));
        assert_eq!(timer.trigger.as_deref(), Some("edge"));
        assert_eq!(timer.actions, vec!["timer"]);
        let v = i.irq(27).expect("27");
        assert_eq!(v.chip.as_deref(), Some("PCI-MSIX-0000:00:03.0"));
        assert_eq!(v.counts.get(&3), Some(&157));
        assert_eq!(v.total(), 157);
        assert_eq!(v.count_on(&CpuSet::parse_list("0-2").expect("set")), 0);
        let eth = i.irq(41).expect("41");
        assert_eq!(eth.hwirq.as_deref(), Some("1048576"));
        assert_eq!(eth.actions, vec!["eth0-TxRx-0", "eth0-TxRx-1"]);
        let old = i.irq(42).expect("42");
        assert_eq!(old.chip.as_deref(), Some("IR-PCI-MSI-edge"));
        assert_eq!((old.hwirq.as_deref(), old.actions.as_slice()), (None, &["ahci[0000:00:1f.2]".to_string()][..]));
        let gic = i.irq(50).expect("50");
        assert_eq!((gic.hwirq.as_deref(), gic.trigger.as_deref()), (Some("27"), Some("Level")));
        assert_eq!(gic.actions, vec!["arch_timer"]);
        assert!(i.irq(51).expect("51").actions.is_empty());
        let nmi = i.lines.iter().find(|l| l.name == "NMI").expect("NMI");
        assert_eq!((nmi.irq, nmi.actions.as_slice()), (None, &["Non-maskable interrupts".to_string()][..]));
        let err = i.lines.iter().find(|l| l.name == "ERR").expect("ERR");
        assert_eq!(err.counts.len(), 1);
    }

    #[test]
    fn sparse_cpu_columns_keep_their_ids() {
        let i = parse_interrupts("  CPU0 CPU2 CPU5\n 7: 1 2 3 chip 7-edge x\n").expect("parse");
        let l = i.irq(7).expect("7");
        assert_eq!(l.counts.keys().copied().collect::<Vec<_>>(), vec![0, 2, 5]);
        assert_eq!(l.count_on(&CpuSet::parse_list("2,5").expect("set")), 5);
    }

    #[test]
    fn refusals_quote_the_line() {
        for (text, want) in [
            ("", "empty"),
            ("CPU0 CPU1\n 3 4 5\n", "line \" 3 4 5\": no \"NAME:\""),
            ("CPUx\n", "header \"CPUx\""),
            ("CPU1 CPU0\n", "increasing"),
            ("CPU0\n 3: 99999999999999999999999 x\n", "does not fit in 64 bits"),
            ("CPU0\n 99999999999: 1 x\n", "too large"),
            ("CPU0\n : 1 x\n", "no IRQ name"),
        ] {
            let e = parse_interrupts(text).unwrap_err();
            assert!(e.contains(want), "{text:?}: {e}");
        }
    }

    #[test]
    fn per_irq_files() {
        let d = tempfile::tempdir().expect("tempdir");
        let put = |rel: &str, v: &str| {
            let p = d.path().join(rel);
            std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            std::fs::write(p, v).expect("write");
        };
        put("proc/irq/24/smp_affinity_list", "0-7\n");
        put("proc/irq/24/effective_affinity_list", "1\n");
        put("proc/irq/24/node", "-1\n");
        put("proc/irq/3/smp_affinity", "00000055\n");
        put("proc/irq/3/node", "0\n");
        std::fs::create_dir_all(d.path().join("proc/irq/default_smp_affinity")).expect("mkdir");
        let sys = SysRoot::at(d.path());
        assert_eq!(irq_numbers(&sys).expect("ls"), vec![3, 24]);
        let f = read_irq_files(&sys, 24).expect("read").expect("some");
        assert_eq!(f.affinity.map(|s| s.to_list()).as_deref(), Some("0-7"));
        assert_eq!(f.effective.map(|s| s.to_list()).as_deref(), Some("1"));
        assert_eq!(f.node, None);
        let f = read_irq_files(&sys, 3).expect("read").expect("some");
        assert_eq!(f.affinity.map(|s| s.to_list()).as_deref(), Some("0,2,4,6"));
        assert_eq!((f.effective, f.node), (None, Some(0)));
        assert_eq!(read_irq_files(&sys, 99).expect("read"), None);
    }

    proptest! {
        #[test]
        fn arbitrary_text_never_panics(s in "\\PC{0,400}|[ :0-9A-Za-z,\\-\n]{0,400}") {
            let _ = parse_interrupts(&s);
        }

        #[test]
        fn any_header_then_garbage_never_panics(
            n in 1usize..6, body in proptest::collection::vec("[ 0-9:,A-Za-z\\-\\[\\]\t]{0,60}", 0..20)
        ) {
            let header: Vec<String> = (0..n).map(|i| format!("CPU{i}")).collect();
            let text = format!("{}\n{}", header.join(" "), body.join("\n"));
            if let Ok(i) = parse_interrupts(&text) {
                for l in &i.lines {
                    prop_assert!(l.counts.len() <= n);
                }
            }
        }
    }
}
