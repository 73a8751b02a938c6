//! The SVG itself: the style sheet, and each box (package frame, node,
//! core, PU, device) written as elements with its tooltip, at the places
//! [`super::layout`] computed. Text is escaped here ([`esc`]).

use std::fmt::Write as _;

use super::human_bytes;
use crate::sets::CpuSet;
use crate::topo::{Node, PciDevice};

use super::layout::{
    bold_w, grid, truncate_w, Plan, PuStyle, BAR_H, DEV_H, GAP, HEAD_H, HEAD_SIZE, LINE_H, MAX_DEVICE_LINES, PAD,
    PKG_LABEL_H, SLICE_LABEL_H, SLICE_PAD, SMALL_SIZE, TEXT_SIZE,
};
use super::view::{has_bar, Core, Group, NodeView};

pub(super) const STYLE: &str = "\
text{fill:#111}\
.t{font-size:15px;font-weight:bold}\
.s{font-size:12px;fill:#444}\
.h{font-size:13px;font-weight:bold}\
.m{font-size:11px}\
.d{font-size:10px;fill:#333}\
.g{font-size:10px;fill:#555}\
.pkg{fill:#dedede;stroke:#555}\
.slice{fill:#e8e8e8;stroke:#888}\
.node{fill:#d2e7a4;stroke:#4d6b1f}\
.nomem{fill:#d2e7a4;stroke:#b22;stroke-dasharray:6 3}\
.memonly{fill:#c9dcf5;stroke:#2b5797;stroke-dasharray:6 3}\
.core{fill:#bebebe;stroke:#777}\
.pu{fill:#fff;stroke:#444}\
.off{fill:#eee;stroke:#999;stroke-dasharray:2 2}\
.puc{fill:#fff;stroke:#555;stroke-width:.6}\
.offc{fill:#ccc;stroke:#999;stroke-width:.6}\
.bar{fill:#fff;stroke:#4d6b1f;stroke-width:.6}\
.used{fill:#6e8f2e}\
.dev{fill:#f4f4f4;stroke:#888}\
.b1{fill:#2b5797}.b2{fill:#b22}.b3{fill:#777}\
.bt{font-size:10px;fill:#fff;font-weight:bold}\
.n{font-size:10px;text-anchor:middle}\
.no{font-size:10px;text-anchor:middle;fill:#888}";

impl Plan<'_> {
    pub(super) fn draw_group(&self, out: &mut String, g: &Group, x: u32, y: u32, w: u32, h: u32) {
        match g {
            Group::Node(v) => self.draw_node(out, v, x, y, h),
            Group::Package { label, nodes, cols } => {
                let _ = write!(
                    out,
                    "\n<g><rect class=\"pkg\" x=\"{x}\" y=\"{y}\" width=\"{w}\" height=\"{h}\" rx=\"5\"/>\
                     <text class=\"h\" x=\"{}\" y=\"{}\">{}</text>",
                    x + PAD,
                    y + PAD + HEAD_SIZE,
                    esc(label)
                );
                let sizes: Vec<(u32, u32)> = nodes.iter().map(|v| (self.node_w(), self.node_h(v))).collect();
                let cells = grid(&sizes, *cols, GAP);
                // Stretch the nodes to the frame's height when it is taller
                // than its contents (a neighbour frame holds more).
                let extra = h.saturating_sub(cells.h + PKG_LABEL_H + 2 * PAD);
                let rows = nodes.len().div_ceil(*cols) as u32;
                for (i, (v, c)) in nodes.iter().zip(&cells.cells).enumerate() {
                    let last_row = (i / cols) as u32 + 1 == rows;
                    let ch = if last_row { c.h + extra } else { c.h };
                    self.draw_node(out, v, x + PAD + c.x, y + PAD + PKG_LABEL_H + c.y, ch);
                }
                out.push_str("</g>");
            }
        }
    }

    pub(super) fn draw_node(&self, out: &mut String, v: &NodeView, x: u32, y: u32, h: u32) {
        let n = v.node;
        let w = self.node_w();
        let memory_only = n.cpus.is_empty();
        let class = if memory_only {
            "memonly"
        } else if !n.has_memory {
            "nomem"
        } else {
            "node"
        };
        let _ = write!(out, "\n<g><title>{}</title>", esc(&node_tip(v)));
        let _ = write!(out, "<rect class=\"{class}\" x=\"{x}\" y=\"{y}\" width=\"{w}\" height=\"{h}\" rx=\"4\"/>");
        let cx = x + PAD;
        let mut cy = y + PAD;
        let head = format!("Node {}", n.id);
        let _ = write!(out, "<text class=\"h\" x=\"{cx}\" y=\"{}\">{}</text>", cy + HEAD_SIZE, esc(&head));
        let mut bx = cx + bold_w(&head, HEAD_SIZE) + 6;
        let mut badges: Vec<(&str, &str)> = Vec::new();
        match (memory_only, n.has_memory) {
            (true, true) => badges.push(("memory only", "b1")),
            (true, false) if n.generic_initiator => badges.push(("generic initiator", "b3")),
            (true, false) => badges.push(("no CPUs, no memory", "b3")),
            (false, false) => badges.push(("no memory", "b2")),
            (false, true) => {}
        }
        if !n.online {
            badges.push(("offline", "b3"));
        }
        for (text, color) in badges {
            let bw = bold_w(text, SMALL_SIZE) + 8;
            if bx + bw > cx + self.inner_w {
                break;
            }
            let _ = write!(
                out,
                "<rect class=\"{color}\" x=\"{bx}\" y=\"{}\" width=\"{bw}\" height=\"14\" rx=\"3\"/>\
                 <text class=\"bt\" x=\"{}\" y=\"{}\">{text}</text>",
                cy + 2,
                bx + 4,
                cy + 13
            );
            bx += bw + 4;
        }
        cy += HEAD_H;
        let mem = memory_text(n);
        let _ = write!(
            out,
            "<text class=\"m\" x=\"{cx}\" y=\"{}\">{}</text>",
            cy + 11,
            esc(&truncate_w(&mem, self.inner_w, TEXT_SIZE))
        );
        cy += LINE_H;
        if let (true, Some(m)) = (has_bar(n), n.memory) {
            let used = m.total_bytes.saturating_sub(m.free_bytes.unwrap_or(0));
            let uw = (u128::from(used) * u128::from(self.inner_w) / u128::from(m.total_bytes.max(1))) as u32;
            let _ = write!(
                out,
                "<rect class=\"bar\" x=\"{cx}\" y=\"{}\" width=\"{}\" height=\"{BAR_H}\"/>\
                 <rect class=\"used\" x=\"{cx}\" y=\"{}\" width=\"{}\" height=\"{BAR_H}\"/>",
                cy + 1,
                self.inner_w,
                cy + 1,
                uw.min(self.inner_w)
            );
            cy += BAR_H + 4;
        }
        if let Some(near) = &v.near {
            let _ = write!(
                out,
                "<text class=\"g\" x=\"{cx}\" y=\"{}\">{}</text>",
                cy + 11,
                esc(&truncate_w(near, self.inner_w, SMALL_SIZE))
            );
            cy += LINE_H;
        }
        if !v.slices.is_empty() {
            cy += 4;
            let style = self.style(v);
            let (inner, outer) = self.slice_layout(v);
            for ((s, (cells, sw, sh)), pos) in v.slices.iter().zip(&inner).zip(&outer.cells) {
                let sx = cx + pos.x;
                let sy = cy + pos.y;
                let (ox, oy) = match &s.label {
                    Some(l) => {
                        let _ = write!(
                            out,
                            "<rect class=\"slice\" x=\"{sx}\" y=\"{sy}\" width=\"{sw}\" height=\"{sh}\" rx=\"3\"/>\
                             <text class=\"d\" x=\"{}\" y=\"{}\">{}</text>",
                            sx + SLICE_PAD,
                            sy + SLICE_PAD + 9,
                            esc(l)
                        );
                        (sx + SLICE_PAD, sy + SLICE_PAD + SLICE_LABEL_H)
                    }
                    None => (sx, sy),
                };
                for (core, c) in s.cores.iter().zip(&cells.cells) {
                    draw_core(out, core, &style, v.compact, ox + c.x, oy + c.y);
                }
            }
            cy += outer.h;
        }
        for (line, offline) in self.text_lines(v) {
            let tip = if offline { format!("<title>{}</title>", esc(&cpu_tip(&v.collapsed))) } else { String::new() };
            let _ = write!(out, "<text class=\"d\" x=\"{cx}\" y=\"{}\">{tip}{}</text>", cy + 11, esc(&line));
            cy += 13;
        }
        if !v.devices.is_empty() {
            cy += 4;
            for d in v.devices.iter().take(MAX_DEVICE_LINES) {
                draw_device(out, d, cx, cy, self.inner_w);
                cy += DEV_H + 3;
            }
            if v.devices.len() > MAX_DEVICE_LINES {
                let rest = &v.devices[MAX_DEVICE_LINES..];
                let names: Vec<String> = rest.iter().flat_map(|d| device_names(d)).collect();
                let line = truncate_w(&format!("+{} more: {}", rest.len(), names.join(", ")), self.inner_w, SMALL_SIZE);
                let _ = write!(out, "<text class=\"d\" x=\"{cx}\" y=\"{}\">{}</text>", cy + 12, esc(&line));
                cy += DEV_H + 3;
            }
        }
        if !v.other_devices.is_empty() {
            let k = v.other_devices.len();
            let line = format!("{k} other PCI device{}", plural(k));
            let _ = write!(
                out,
                "<text class=\"g\" x=\"{cx}\" y=\"{}\"><title>{}</title>{line}</text>",
                cy + 11,
                esc(&device_list_tip(&v.other_devices))
            );
        }
        out.push_str("</g>");
    }
}

pub(super) fn draw_core(out: &mut String, core: &Core, style: &PuStyle, compact: bool, x: u32, y: u32) {
    let (w, h) = style.core_size(core.pus.len());
    let tip: Vec<String> = core
        .pus
        .iter()
        .map(|p| if p.online { format!("CPU {}", p.id) } else { format!("CPU {} (offline)", p.id) })
        .collect();
    let _ = write!(out, "<g><title>{}</title>", esc(&tip.join(", ")));
    // A core the kernel gave no siblings for and that is offline gets no
    // core frame: it is only a PU.
    if core.pus.iter().any(|p| p.online) {
        let _ = write!(out, "<rect class=\"core\" x=\"{x}\" y=\"{y}\" width=\"{w}\" height=\"{h}\"/>");
    }
    let mut px = x + style.core_pad;
    let py = y + style.core_pad;
    for p in &core.pus {
        let class = match (compact, p.online) {
            (false, true) => "pu",
            (false, false) => "off",
            (true, true) => "puc",
            (true, false) => "offc",
        };
        let _ = write!(
            out,
            "<rect class=\"{class}\" x=\"{px}\" y=\"{py}\" width=\"{}\" height=\"{}\"/>",
            style.pu_w, style.pu_h
        );
        if !compact {
            let tclass = if p.online { "n" } else { "no" };
            let _ =
                write!(out, "<text class=\"{tclass}\" x=\"{}\" y=\"{}\">{}</text>", px + style.pu_w / 2, py + 13, p.id);
        }
        px += style.pu_w + style.pu_gap;
    }
    out.push_str("</g>");
}

pub(super) fn draw_device(out: &mut String, d: &PciDevice, x: u32, y: u32, w: u32) {
    let names = device_names(d).join(", ");
    let line = truncate_w(&format!("{names} · {}", d.address), w - 8, SMALL_SIZE);
    let mut tip = format!("PCI {}", d.address);
    if let Some(c) = &d.class {
        let _ = write!(tip, " class {c}");
    }
    if let (Some(v), Some(dev)) = (&d.vendor, &d.device) {
        let _ = write!(tip, " id {v}:{dev}");
    }
    if !d.netdevs.is_empty() {
        let _ = write!(tip, "; net {}", d.netdevs.join(", "));
    }
    if !d.blockdevs.is_empty() {
        let _ = write!(tip, "; block {}", d.blockdevs.join(", "));
    }
    let _ = write!(
        out,
        "<g><title>{}</title><rect class=\"dev\" x=\"{x}\" y=\"{y}\" width=\"{w}\" height=\"{DEV_H}\" rx=\"2\"/>\
         <text class=\"d\" x=\"{}\" y=\"{}\">{}</text></g>",
        esc(&tip),
        x + 4,
        y + 12,
        esc(&line)
    );
}

/// `net eth0, eth1` / `block nvme0n1`.
pub(super) fn device_names(d: &PciDevice) -> Vec<String> {
    let mut out = Vec::new();
    if !d.netdevs.is_empty() {
        out.push(format!("net {}", d.netdevs.join(", ")));
    }
    if !d.blockdevs.is_empty() {
        out.push(format!("block {}", d.blockdevs.join(", ")));
    }
    out
}

pub(super) fn device_list_tip(devs: &[&PciDevice]) -> String {
    let mut addrs: Vec<String> = devs
        .iter()
        .take(48)
        .map(|d| match &d.class {
            Some(c) => format!("{} ({c})", d.address),
            None => d.address.clone(),
        })
        .collect();
    if devs.len() > 48 {
        addrs.push(format!("… {} more", devs.len() - 48));
    }
    format!("PCI {}", addrs.join(", "))
}

pub(super) fn memory_text(n: &Node) -> String {
    match n.memory {
        Some(m) if m.total_bytes > 0 => match m.free_bytes {
            Some(f) => format!("{} · {} free", human_bytes(m.total_bytes), human_bytes(f)),
            None => format!("{} · free unknown", human_bytes(m.total_bytes)),
        },
        Some(_) => "0 B memory".into(),
        None => "memory unknown".into(),
    }
}

pub(super) fn node_tip(v: &NodeView) -> String {
    let n = v.node;
    let cpus = if n.cpus.is_empty() { "no CPUs".to_string() } else { format!("CPUs {}", n.cpus.to_list()) };
    let mut tip = format!("Node {}: {cpus}; {}", n.id, memory_text(n));
    if let Some(t) = n.memory_tier {
        let _ = write!(tip, "; memory tier {t}");
    }
    tip
}

/// Tooltip text naming every CPU of a set.
pub(super) fn cpu_tip(cpus: &CpuSet) -> String {
    cpus.iter().map(|c| format!("CPU {c}")).collect::<Vec<_>>().join(", ")
}

pub(super) fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// Escapes text for XML content and attributes: the one routine
/// ([`crate::text::xml`]; a control character shown as its escape).
pub(super) fn esc(s: &str) -> String {
    crate::text::xml(s)
}
