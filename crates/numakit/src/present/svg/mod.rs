//! A picture of the machine for `numakit topo --svg`, in the spirit of
//! hwloc's `lstopo`, built as a plain string (no drawing library).
//!
//! What it draws, outside in:
//!
//! * a title line: node, package, core and CPU counts and total memory,
//!   and `dump of <root>` when the topology was read from a dump;
//! * packages as grey boxes holding their NUMA nodes, when every node's
//!   CPUs lie in one package (one or several nodes per package, whatever
//!   the numbering). When a node spans several packages (one node per
//!   machine, IA-64 and SGI machines with several sockets per node), the
//!   nodes are drawn directly and each holds its packages' slices instead;
//!   without package information nodes are drawn directly too;
//! * NUMA nodes as green boxes: node id, memory size, free memory (with a
//!   usage bar), then cores (grey) holding their PUs (white, with the CPU
//!   id). Offline CPUs are dashed; offline CPUs of which the kernel says
//!   nothing more are summed up as one line of ranges. A node with more
//!   than [`COMPACT_ABOVE`] PUs shows its PUs as small cells whose ids are
//!   in tooltips (`<title>`), with the node's CPU ranges written below;
//! * CPU-less nodes (CXL, HBM, GPU memory) in their own row, in blue,
//!   labelled `memory only` with the CPU nodes they are local or nearest
//!   to (HMAT initiators, else SLIT distance); memory-less CPU nodes carry
//!   a red `no memory` badge;
//! * PCI devices that carry network or block devices, inside the node
//!   given by their `numa_node` (or in a last row when they have none),
//!   with a count of the other PCI devices.
//!
//! Nodes are laid out in a grid whose column count depends on the node
//! count (at most [`MAX_COLS`]), all node boxes share one width, and PU
//! rows wrap, so the picture stays legible from 2 to 64 nodes and a few
//! hundred CPUs. The root element carries explicit `width`, `height` and
//! `viewBox` computed from the layout.
//!
//! Three rooms: `view` decides what is drawn (each node's cores, slices
//! and devices, read off the model), `layout` where (sizes, grids,
//! estimated text widths), `write` writes the SVG elements; [`render`] here
//! puts the page together.

mod layout;
#[cfg(test)]
mod tests;
mod view;
mod write;

use std::fmt::Write as _;

use super::human_bytes;
use crate::sets::CpuSet;
use crate::topo::{PciDevice, Topology};
use layout::{
    bold_w, grid, grid_cols, text_w, truncate, Plan, DEV_H, GAP, HEAD_H, HEAD_SIZE, LINE_H, MARGIN, PAD, SMALL_SIZE,
    TITLE_SIZE,
};
use view::has_names;
use write::{cpu_tip, device_list_tip, draw_device, esc, plural, STYLE};

/// PUs in a node beyond which they are drawn as small cells.
pub const COMPACT_ABOVE: usize = 32;
/// Most grid columns.
pub const MAX_COLS: usize = 8;

/// Renders an SVG picture of `topo`.
pub fn render(topo: &Topology) -> String {
    let plan = Plan::new(topo);
    let mut body = String::new();
    let mut y = MARGIN;
    let mut width = 0u32;

    // Title.
    let title = title_line(topo);
    let _ = write!(body, "<text class=\"t\" x=\"{MARGIN}\" y=\"{}\">{}</text>", y + TITLE_SIZE, esc(&title));
    width = width.max(bold_w(&title, TITLE_SIZE));
    y += TITLE_SIZE + 8;
    for line in subtitle_lines(topo) {
        let _ = write!(body, "<text class=\"s\" x=\"{MARGIN}\" y=\"{}\">{}</text>", y + 12, esc(&line));
        width = width.max(text_w(&line, 12));
        y += LINE_H;
    }
    y += 6;

    // CPU nodes, in package frames or directly.
    if !plan.groups.is_empty() {
        let sizes: Vec<(u32, u32)> = plan.groups.iter().map(|g| plan.group_size(g)).collect();
        let cells = grid(&sizes, plan.top_cols, GAP);
        for (g, cell) in plan.groups.iter().zip(&cells.cells) {
            plan.draw_group(&mut body, g, MARGIN + cell.x, y + cell.y, cell.w, cell.h);
        }
        width = width.max(cells.w);
        y += cells.h + GAP;
    }

    // Memory-only nodes.
    if !plan.memory_only.is_empty() {
        let label = "Nodes without CPUs (memory only)";
        let _ = write!(body, "<text class=\"h\" x=\"{MARGIN}\" y=\"{}\">{label}</text>", y + HEAD_SIZE);
        y += HEAD_H + 2;
        let sizes: Vec<(u32, u32)> = plan.memory_only.iter().map(|v| (plan.node_w(), plan.node_h(v))).collect();
        let cols = grid_cols(sizes.len()).max(plan.node_cols.min(sizes.len()));
        let cells = grid(&sizes, cols, GAP);
        for (v, cell) in plan.memory_only.iter().zip(&cells.cells) {
            plan.draw_node(&mut body, v, MARGIN + cell.x, y + cell.y, cell.h);
        }
        width = width.max(cells.w).max(bold_w(label, HEAD_SIZE));
        y += cells.h + GAP;
    }

    // PCI devices without a node, CPUs in no node.
    let floating: Vec<&PciDevice> = topo.pci_devices.iter().filter(|d| d.numa_node.is_none()).collect();
    let named: Vec<&PciDevice> = floating.iter().copied().filter(|d| has_names(d)).collect();
    let unnamed: Vec<&PciDevice> = floating.iter().copied().filter(|d| !has_names(d)).collect();
    if !named.is_empty() {
        let label = "PCI devices with no NUMA node";
        let _ = write!(body, "<text class=\"h\" x=\"{MARGIN}\" y=\"{}\">{label}</text>", y + HEAD_SIZE);
        y += HEAD_H + 2;
        let dev_w = plan.node_w() - 2 * PAD;
        let sizes: Vec<(u32, u32)> = named.iter().map(|_| (dev_w, DEV_H)).collect();
        let cells = grid(&sizes, plan.node_cols.max(1), 4);
        for (d, cell) in named.iter().zip(&cells.cells) {
            draw_device(&mut body, d, MARGIN + cell.x, y + cell.y, dev_w);
        }
        width = width.max(cells.w);
        y += cells.h + 4;
    }
    if !unnamed.is_empty() {
        let line = format!("{} other PCI device{} with no NUMA node", unnamed.len(), plural(unnamed.len()));
        let tip = device_list_tip(&unnamed);
        note_line(&mut body, &mut width, &mut y, &tip, &line);
    }
    let in_nodes = topo.nodes.iter().fold(CpuSet::new(), |acc, n| acc.union(&n.cpus));
    let orphans = topo.possible_cpus.difference(&in_nodes);
    if !orphans.is_empty() {
        let off = orphans.difference(&topo.online_cpus);
        let line = if off == orphans {
            format!("offline CPUs in no node: {}", orphans.to_list())
        } else if off.is_empty() {
            format!("CPUs in no node: {}", orphans.to_list())
        } else {
            format!("CPUs in no node: {} (offline: {})", orphans.to_list(), off.to_list())
        };
        let tip = cpu_tip(&orphans);
        let line = truncate(&line, 160);
        note_line(&mut body, &mut width, &mut y, &tip, &line);
    }

    let w = width + 2 * MARGIN;
    let h = y + MARGIN;
    let mut out = String::with_capacity(body.len() + 2048);
    let _ = write!(
        out,
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" \
         font-family=\"DejaVu Sans, Verdana, Arial, Helvetica, sans-serif\">\n\
         <title>{}</title>\n<style>{STYLE}</style>\n\
         <rect x=\"0\" y=\"0\" width=\"{w}\" height=\"{h}\" fill=\"#fff\"/>\n",
        esc(&title)
    );
    out.push_str(&body);
    out.push_str("\n</svg>\n");
    out
}

/// One grey note line below the drawing (`tip` as its hover text), the
/// picture widened to hold it and `y` moved past it.
fn note_line(body: &mut String, width: &mut u32, y: &mut u32, tip: &str, line: &str) {
    let _ = write!(
        body,
        "<text class=\"g\" x=\"{MARGIN}\" y=\"{}\"><title>{}</title>{}</text>",
        *y + 11,
        esc(tip),
        esc(line)
    );
    *width = (*width).max(text_w(line, SMALL_SIZE));
    *y += LINE_H;
}

fn title_line(topo: &Topology) -> String {
    let n = topo.nodes.len();
    let p = topo.packages.len();
    let cores = topo.core_count();
    let mut parts = vec![format!("{n} NUMA node{}", plural(n))];
    if p > 0 {
        parts.push(format!("{p} package{}", plural(p)));
    }
    if cores > 0 {
        parts.push(format!("{cores} core{}", plural(cores)));
    }
    let cpus = topo.possible_cpus.len();
    let online = topo.online_cpus.len();
    if online == cpus {
        parts.push(format!("{cpus} CPU{}", plural(cpus)));
    } else {
        parts.push(format!("{cpus} CPUs ({online} online)"));
    }
    parts.push(format!("{} memory", human_bytes(topo.total_memory_bytes())));
    format!("Machine: {}", parts.join(", "))
}

fn subtitle_lines(topo: &Topology) -> Vec<String> {
    let mut out = Vec::new();
    if !topo.source.live {
        let root = &topo.source.sysroot;
        let n = root.chars().count();
        let shown =
            if n > 100 { format!("…{}", root.chars().skip(n - 99).collect::<String>()) } else { root.clone() };
        out.push(format!("dump of {shown} (not this system)"));
    }
    if !topo.numa_info {
        out.push("no NUMA information (no sys/devices/system/node): shown as one node".into());
    }
    out
}
