//! `numakit irq show`: the IRQ locality view as a table and as JSON
//! (schema in docs/irq.md). Strings only: nothing here reads or prints.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::{json, Value};

use crate::irq::{Irq, IrqView, Irqbalance, Locality};
use crate::sets::CpuSet;

/// The JSON schema version of `irq show --json`.
pub const SCHEMA_VERSION: u32 = 1;

/// What to show.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Filter {
    /// Also IRQs that belong to no known device (timer, ACPI, IPIs' lines).
    pub all: bool,
}

fn shown(view: &IrqView, f: Filter) -> impl Iterator<Item = &Irq> {
    view.irqs.iter().filter(move |i| f.all || !i.devices.is_empty())
}

fn list(s: &Option<CpuSet>) -> String {
    match s {
        Some(s) if !s.is_empty() => s.to_list(),
        _ => "-".into(),
    }
}

fn rate(r: f64) -> String {
    if r >= 100.0 {
        format!("{r:.0}")
    } else {
        format!("{r:.1}")
    }
}

/// The table: IRQ, device, its node, affinity, effective affinity, count
/// since boot per node (and per second over the interval), locality, actions.
pub fn text(view: &IrqView, irqbalance: &Irqbalance, f: Filter) -> String {
    let mut head: Vec<String> = ["IRQ", "DEVICE", "NODE", "AFFINITY", "EFFECTIVE"].map(String::from).to_vec();
    for (n, _) in &view.nodes {
        head.push(format!("NODE{n}"));
    }
    if view.interval_s.is_some() {
        for (n, _) in &view.nodes {
            head.push(format!("NODE{n}/s"));
        }
    }
    head.extend(["LOCALITY", "ACTIONS"].map(String::from));
    let mut rows = vec![head];
    for i in shown(view, f) {
        let device = match i.devices.as_slice() {
            [] => "-".to_string(),
            [d] => d.label(),
            many => many.iter().map(|d| d.pci.as_str()).collect::<Vec<_>>().join("+"),
        };
        let mut row = vec![
            i.irq.to_string(),
            device,
            i.node.map_or("-".into(), |n| n.to_string()),
            list(&i.affinity),
            list(&i.effective),
        ];
        for (n, _) in &view.nodes {
            row.push(i.by_node.get(n).map_or("-".into(), |c| c.to_string()));
        }
        if view.interval_s.is_some() {
            for (n, _) in &view.nodes {
                row.push(i.rate_by_node.as_ref().and_then(|r| r.get(n)).map_or("-".into(), |r| rate(*r)));
            }
        }
        row.push(i.locality.word().to_string());
        row.push(if i.actions.is_empty() { "-".into() } else { i.actions.join(",") });
        rows.push(row);
    }
    let ncol = rows[0].len();
    let widths: Vec<usize> = (0..ncol).map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0)).collect();
    let mut s = String::new();
    for r in &rows {
        let mut line = String::new();
        for (c, cell) in r.iter().enumerate() {
            let w = widths[c];
            // numbers right-aligned, words left; the last column unpadded
            let numeric = c == 0 || c == 2 || (c >= 5 && c < ncol - 2);
            if c == ncol - 1 {
                line.push_str(cell);
            } else if numeric {
                let _ = write!(line, "{cell:>w$}  ");
            } else {
                let _ = write!(line, "{cell:<w$}  ");
            }
        }
        let _ = writeln!(s, "{}", line.trim_end());
    }
    let dev: Vec<&Irq> = view.device_irqs().collect();
    let off = dev.iter().filter(|i| i.locality.is_off_node()).count();
    let judged = dev.iter().filter(|i| i.locality != Locality::Unknown).count();
    if !view.has_counts {
        s.push_str("note: no /proc/interrupts in this root: counts and action names unknown\n");
    }
    if !view.has_affinity {
        s.push_str("note: no /proc/irq in this root: affinities unknown, locality not judged\n");
    }
    if let Some(secs) = view.interval_s {
        let _ = writeln!(s, "rates: interrupts per second over {secs:.1} s");
    }
    let unjudged = dev.len() - judged;
    if judged == 0 {
        let _ = writeln!(s, "{} device IRQs, none judged (no device node or no affinity known)", dev.len());
    } else {
        let _ = writeln!(
            s,
            "{off} of {judged} device IRQs served off their device's node{}{}",
            if unjudged > 0 {
                format!(" ({unjudged} more not judged: no device node or no affinity)")
            } else {
                String::new()
            },
            if off > 0 { "; numakit tune irq-local DEVICE moves a device's IRQs to its node's CPUs" } else { "" }
        );
    }
    if irqbalance.running() {
        s.push_str("note: irqbalance is running: it moves IRQs every 10 s, so these affinities may change\n");
    }
    s
}

fn counts(m: &BTreeMap<u32, u64>) -> Value {
    Value::Object(m.iter().map(|(k, v)| (k.to_string(), json!(v))).collect())
}

/// `irq show --json` (schema version [`SCHEMA_VERSION`], docs/irq.md).
pub fn json(view: &IrqView, irqbalance: &Irqbalance, root: &str, live: bool, f: Filter) -> String {
    let set = |s: &Option<CpuSet>| s.as_ref().map(|s| s.to_list());
    let irqs: Vec<Value> = shown(view, f)
        .map(|i| {
            json!({
                "irq": i.irq,
                "devices": i.devices,
                "matched": i.matched,
                "node": i.node,
                "chip": i.chip,
                "hwirq": i.hwirq,
                "trigger": i.trigger,
                "actions": i.actions,
                "affinity": set(&i.affinity),
                "effective": set(&i.effective),
                "kernel_node": i.kernel_node,
                "counts": if view.has_counts { counts(&i.counts) } else { Value::Null },
                "by_node": if view.has_counts { counts(&i.by_node) } else { Value::Null },
                "total": i.total,
                "rate_by_cpu": i.rate_by_cpu.as_ref().map(|r| {
                    Value::Object(r.iter().map(|(k, v)| (k.to_string(), json!(v))).collect())
                }),
                "rate_by_node": i.rate_by_node.as_ref().map(|r| {
                    Value::Object(r.iter().map(|(k, v)| (k.to_string(), json!(v))).collect())
                }),
                "rate": i.rate,
                "locality": i.locality,
                "off_node": i.locality.is_off_node(),
            })
        })
        .collect();
    let v = json!({
        "schema_version": SCHEMA_VERSION,
        "root": root,
        "live": live,
        "has_counts": view.has_counts,
        "has_affinity": view.has_affinity,
        "interval_s": view.interval_s,
        "nodes": view.nodes.iter().map(|(n, c)| json!({"node": n, "cpus": c.to_list()})).collect::<Vec<_>>(),
        "irqbalance": {"running": irqbalance.running(), "pids": irqbalance.pids, "unit_active": irqbalance.unit_active},
        "irqs": irqs,
    });
    let mut out = serde_json::to_string_pretty(&v).unwrap_or_default();
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::irq::tests::{fake_machine, view_of};

    #[test]
    fn table_flags_off_node_irqs_and_sums_per_node() {
        let (_d, sys) = fake_machine();
        let v = view_of(&sys);
        let t = text(&v, &Irqbalance::default(), Filter::default());
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines[0].starts_with("IRQ  DEVICE"), "{t}");
        assert!(lines[0].contains("NODE0  NODE1  LOCALITY  ACTIONS"), "{t}");
        let row = |n: &str| {
            lines
                .iter()
                .find(|l| l.trim_start().starts_with(&format!("{n} ")))
                .copied()
                .unwrap_or_else(|| panic!("{t}"))
        };
        let r28: Vec<&str> = row("28").split_whitespace().collect();
        assert_eq!(
            r28,
            vec!["28", "0000:21:01.0", "(virtio-pci)", "1", "0,2,4,6", "2", "1", "0", "OFF-NODE", "virtio2-config"]
        );
        let r29: Vec<&str> = row("29").split_whitespace().collect();
        assert_eq!(&r29[6..], &["300", "20", "local", "virtio2-requests"]);
        assert!(!t.contains("timer"), "no device: hidden without --all");
        assert!(t.contains("3 of 6 device IRQs served off their device's node (2 more not judged"), "{t}");
        let all = text(&v, &Irqbalance { pids: vec![7], unit_active: false }, Filter { all: true });
        assert!(all.contains("timer") && all.contains("irqbalance is running"), "{all}");
    }

    #[test]
    fn json_holds_sets_as_lists_and_counts_by_node() {
        let (_d, sys) = fake_machine();
        let v = view_of(&sys);
        let j: Value =
            serde_json::from_str(&json(&v, &Irqbalance::default(), "/x", false, Filter::default())).expect("json");
        assert_eq!(j["schema_version"], 1);
        assert_eq!(j["nodes"][1], json!({"node": 1, "cpus": "1,3,5,7"}));
        let i28 = j["irqs"].as_array().expect("irqs").iter().find(|i| i["irq"] == 28).expect("28");
        assert_eq!(i28["affinity"], "0,2,4,6");
        assert_eq!(i28["effective"], "2");
        assert_eq!(i28["by_node"], json!({"0": 1, "1": 0}));
        assert_eq!(i28["locality"], "off-node");
        assert_eq!(i28["off_node"], true);
        assert_eq!(i28["matched"], "msi_irqs");
        assert_eq!(i28["devices"][0]["pci"], "0000:21:01.0");
        assert_eq!(i28["devices"][0]["node"], 1);
        assert_eq!(j["irqbalance"]["running"], false);
    }
}
