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

use std::collections::BTreeSet;
use std::fmt::Write;

use super::human_bytes;
use crate::sets::{CpuSet, NodeSet};
use crate::topo::{Node, PciDevice, Topology};

/// PUs in a node beyond which they are drawn as small cells.
pub const COMPACT_ABOVE: usize = 32;
/// Most grid columns.
pub const MAX_COLS: usize = 8;

/// Outer margin of the picture.
const MARGIN: u32 = 12;
/// Space between boxes of a grid.
const GAP: u32 = 10;
/// Padding inside node and package boxes.
const PAD: u32 = 6;
/// Padding inside a package slice drawn in a node.
const SLICE_PAD: u32 = 3;
/// Space between package slices in a node.
const SLICE_GAP: u32 = 4;
/// Narrowest content of a node box.
const NODE_MIN_INNER: u32 = 196;
/// PUs per row in the full view.
const ROW_PUS: usize = 8;
/// PUs per row in the compact view.
const ROW_PUS_COMPACT: usize = 24;
/// Offline CPUs without topology beyond which they are summed up as text.
const COLLAPSE_OFFLINE_ABOVE: usize = 8;
/// Device lines per node before `+N more`.
const MAX_DEVICE_LINES: usize = 6;

const TITLE_SIZE: u32 = 15;
const HEAD_SIZE: u32 = 13;
const TEXT_SIZE: u32 = 11;
const SMALL_SIZE: u32 = 10;
const LINE_H: u32 = 15;
const HEAD_H: u32 = 18;
const DEV_H: u32 = 17;
const BAR_H: u32 = 6;
const SLICE_LABEL_H: u32 = 13;
const PKG_LABEL_H: u32 = 18;

const STYLE: &str = "\
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
        let _ = write!(
            body,
            "<text class=\"g\" x=\"{MARGIN}\" y=\"{}\"><title>{}</title>{}</text>",
            y + 11,
            esc(&tip),
            esc(&line)
        );
        width = width.max(text_w(&line, SMALL_SIZE));
        y += LINE_H;
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
        let _ = write!(
            body,
            "<text class=\"g\" x=\"{MARGIN}\" y=\"{}\"><title>{}</title>{}</text>",
            y + 11,
            esc(&tip),
            esc(&line)
        );
        width = width.max(text_w(&line, SMALL_SIZE));
        y += LINE_H;
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

/// One logical CPU as drawn.
struct Pu {
    id: u32,
    online: bool,
}

/// A core: its PUs in the node.
struct Core {
    pus: Vec<Pu>,
}

/// The cores of a node in one package (`label` is `None` when nodes sit
/// in package frames or there is no package information).
struct Slice {
    label: Option<String>,
    cores: Vec<Core>,
}

/// A node as drawn.
struct NodeView<'a> {
    node: &'a Node,
    slices: Vec<Slice>,
    /// Offline CPUs the kernel says nothing else about, written as ranges.
    collapsed: CpuSet,
    compact: bool,
    devices: Vec<&'a PciDevice>,
    other_devices: Vec<&'a PciDevice>,
    /// For CPU-less nodes: where their CPUs are.
    near: Option<String>,
}

/// What the top grid holds: a package frame with its nodes, or a lone node.
enum Group<'a> {
    Package { label: String, nodes: Vec<NodeView<'a>>, cols: usize },
    Node(NodeView<'a>),
}

/// Sizes of PUs and cores in one of the two views.
#[derive(Clone, Copy)]
struct PuStyle {
    pu_w: u32,
    pu_h: u32,
    pu_gap: u32,
    core_pad: u32,
    core_gap: u32,
}

impl PuStyle {
    fn core_size(&self, threads: usize) -> (u32, u32) {
        let t = threads.max(1) as u32;
        (t * self.pu_w + (t - 1) * self.pu_gap + 2 * self.core_pad, self.pu_h + 2 * self.core_pad)
    }
}

const COMPACT: PuStyle = PuStyle { pu_w: 7, pu_h: 12, pu_gap: 1, core_pad: 1, core_gap: 2 };

struct Plan<'a> {
    groups: Vec<Group<'a>>,
    memory_only: Vec<NodeView<'a>>,
    full: PuStyle,
    inner_w: u32,
    top_cols: usize,
    /// Column count for the node count (the memory-only row follows it).
    node_cols: usize,
}

impl<'a> Plan<'a> {
    fn new(topo: &'a Topology) -> Self {
        let pkg_of: Vec<(u32, Option<usize>)> = topo.possible_cpus.iter().map(|c| (c, package_of(topo, c))).collect();
        let pkg = |cpu: u32| pkg_of.binary_search_by_key(&cpu, |p| p.0).ok().and_then(|i| pkg_of[i].1);
        let cpu_nodes: Vec<&Node> = topo.nodes.iter().filter(|n| !n.cpus.is_empty()).collect();
        let node_pkgs: Vec<BTreeSet<usize>> =
            cpu_nodes.iter().map(|n| n.cpus.iter().filter_map(pkg).collect()).collect();
        // Packages hold nodes when no node spans two packages.
        let frames = !topo.packages.is_empty()
            && node_pkgs.iter().all(|s| s.len() <= 1)
            && node_pkgs.iter().any(|s| s.len() == 1);
        let max_id = topo.possible_cpus.last().unwrap_or(0);
        let digits = max_id.to_string().len() as u32;
        let full =
            PuStyle { pu_w: (digits * 64 + 80).div_ceil(10).max(20), pu_h: 18, pu_gap: 2, core_pad: 2, core_gap: 3 };

        let view = |n: &'a Node| node_view(topo, n, !frames, &pkg);
        let mut groups: Vec<Group<'a>> = Vec::new();
        if frames {
            for (i, p) in topo.packages.iter().enumerate() {
                let nodes: Vec<NodeView<'a>> =
                    cpu_nodes.iter().zip(&node_pkgs).filter(|(_, s)| s.contains(&i)).map(|(n, _)| view(n)).collect();
                if nodes.is_empty() {
                    continue;
                }
                let cores =
                    if p.cores > 0 { format!(" · {} core{}", p.cores, plural(p.cores)) } else { String::new() };
                let cols = grid_cols(nodes.len());
                groups.push(Group::Package { label: format!("Package {}{cores}", p.id), nodes, cols });
            }
            for (n, s) in cpu_nodes.iter().zip(&node_pkgs) {
                if s.is_empty() {
                    groups.push(Group::Node(view(n)));
                }
            }
        } else {
            groups.extend(cpu_nodes.iter().map(|n| Group::Node(view(n))));
        }
        let memory_only: Vec<NodeView<'a>> = topo.nodes.iter().filter(|n| n.cpus.is_empty()).map(view).collect();

        // One width for every node box: room for the widest slice, and
        // for as many slices side by side as fit in a row of ROW_PUS
        // single-thread PUs.
        let all_views = || {
            groups
                .iter()
                .flat_map(|g| match g {
                    Group::Package { nodes, .. } => nodes.iter().collect::<Vec<_>>(),
                    Group::Node(v) => vec![v],
                })
                .chain(memory_only.iter())
        };
        let row8 = natural_row_w(&single_pus(ROW_PUS), &full, ROW_PUS);
        let mut inner_w = NODE_MIN_INNER;
        for v in all_views() {
            let style = if v.compact { COMPACT } else { full };
            for (w, _) in slice_sizes(v, &style, inner_w.max(row8)) {
                inner_w = inner_w.max(w);
            }
        }
        let cap = inner_w.max(row8);
        for v in all_views() {
            let style = if v.compact { COMPACT } else { full };
            let sizes = slice_sizes(v, &style, cap);
            let per_row = slices_per_row(v, &sizes, cap);
            for row in sizes.chunks(per_row) {
                let w = row.iter().map(|s| s.0).sum::<u32>() + SLICE_GAP * (row.len() as u32 - 1);
                inner_w = inner_w.max(w);
            }
        }
        let node_count = cpu_nodes.len().max(1);
        let node_cols = grid_cols(node_count);
        let inner_cols = groups
            .iter()
            .map(|g| match g {
                Group::Package { cols, .. } => *cols,
                Group::Node(_) => 1,
            })
            .max()
            .unwrap_or(1);
        let top_cols = balance(groups.len(), (node_cols / inner_cols).max(1));
        Plan { groups, memory_only, full, inner_w, top_cols, node_cols }
    }

    fn node_w(&self) -> u32 {
        self.inner_w + 2 * PAD
    }

    fn style(&self, v: &NodeView) -> PuStyle {
        if v.compact {
            COMPACT
        } else {
            self.full
        }
    }

    /// Positions of the slices of a node (and of the cores in each),
    /// relative to the content origin.
    fn slice_layout(&self, v: &NodeView) -> (Vec<(Cells, u32, u32)>, Cells) {
        let style = self.style(v);
        let inner: Vec<(Cells, u32, u32)> = v.slices.iter().map(|s| slice_cells(s, &style, self.inner_w)).collect();
        let sizes: Vec<(u32, u32)> = inner.iter().map(|(_, w, h)| (*w, *h)).collect();
        let per_row = slices_per_row(v, &sizes, self.inner_w);
        let outer = rows_of(&sizes, per_row, SLICE_GAP);
        (inner, outer)
    }

    /// Lines of CPU ranges under the cores; `true` marks the collapsed
    /// offline CPUs (which get a tooltip naming each).
    fn text_lines(&self, v: &NodeView) -> Vec<(String, bool)> {
        let mut lines = Vec::new();
        if v.compact {
            let drawn: CpuSet = v.slices.iter().flat_map(|s| &s.cores).flat_map(|c| &c.pus).map(|p| p.id).collect();
            lines.extend(
                wrap(&format!("CPUs {}", drawn.to_list()), self.inner_w, SMALL_SIZE, 4).into_iter().map(|l| (l, false)),
            );
        }
        if !v.collapsed.is_empty() {
            let text = format!("offline: CPUs {} ({})", v.collapsed.to_list(), v.collapsed.len());
            lines.extend(wrap(&text, self.inner_w, SMALL_SIZE, 2).into_iter().map(|l| (l, true)));
        }
        lines
    }

    fn node_h(&self, v: &NodeView) -> u32 {
        let mut h = PAD + HEAD_H + LINE_H;
        if has_bar(v.node) {
            h += BAR_H + 4;
        }
        if v.near.is_some() {
            h += LINE_H;
        }
        if !v.slices.is_empty() {
            h += 4 + self.slice_layout(v).1.h;
        }
        h += self.text_lines(v).len() as u32 * 13;
        let dev_lines = v.devices.len().min(MAX_DEVICE_LINES + 1) as u32;
        if dev_lines > 0 {
            h += 4 + dev_lines * (DEV_H + 3);
        }
        if !v.other_devices.is_empty() {
            h += LINE_H;
        }
        h + PAD
    }

    fn group_size(&self, g: &Group) -> (u32, u32) {
        match g {
            Group::Node(v) => (self.node_w(), self.node_h(v)),
            Group::Package { label, nodes, cols } => {
                let sizes: Vec<(u32, u32)> = nodes.iter().map(|v| (self.node_w(), self.node_h(v))).collect();
                let cells = grid(&sizes, *cols, GAP);
                (cells.w.max(bold_w(label, HEAD_SIZE)) + 2 * PAD, cells.h + PKG_LABEL_H + 2 * PAD)
            }
        }
    }

    fn draw_group(&self, out: &mut String, g: &Group, x: u32, y: u32, w: u32, h: u32) {
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

    fn draw_node(&self, out: &mut String, v: &NodeView, x: u32, y: u32, h: u32) {
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

fn draw_core(out: &mut String, core: &Core, style: &PuStyle, compact: bool, x: u32, y: u32) {
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

fn draw_device(out: &mut String, d: &PciDevice, x: u32, y: u32, w: u32) {
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
fn device_names(d: &PciDevice) -> Vec<String> {
    let mut out = Vec::new();
    if !d.netdevs.is_empty() {
        out.push(format!("net {}", d.netdevs.join(", ")));
    }
    if !d.blockdevs.is_empty() {
        out.push(format!("block {}", d.blockdevs.join(", ")));
    }
    out
}

fn has_names(d: &PciDevice) -> bool {
    !d.netdevs.is_empty() || !d.blockdevs.is_empty()
}

fn device_list_tip(devs: &[&PciDevice]) -> String {
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

/// Whether a node gets a memory usage bar (size and free memory known).
fn has_bar(n: &Node) -> bool {
    n.memory.is_some_and(|m| m.total_bytes > 0 && m.free_bytes.is_some())
}

fn memory_text(n: &Node) -> String {
    match n.memory {
        Some(m) if m.total_bytes > 0 => match m.free_bytes {
            Some(f) => format!("{} · {} free", human_bytes(m.total_bytes), human_bytes(f)),
            None => format!("{} · free unknown", human_bytes(m.total_bytes)),
        },
        Some(_) => "0 B memory".into(),
        None => "memory unknown".into(),
    }
}

fn node_tip(v: &NodeView) -> String {
    let n = v.node;
    let cpus = if n.cpus.is_empty() { "no CPUs".to_string() } else { format!("CPUs {}", n.cpus.to_list()) };
    let mut tip = format!("Node {}: {cpus}; {}", n.id, memory_text(n));
    if let Some(t) = n.memory_tier {
        let _ = write!(tip, "; memory tier {t}");
    }
    tip
}

/// Tooltip text naming every CPU of a set.
fn cpu_tip(cpus: &CpuSet) -> String {
    cpus.iter().map(|c| format!("CPU {c}")).collect::<Vec<_>>().join(", ")
}

/// Index in `topo.packages` of the package holding `cpu`.
fn package_of(topo: &Topology, cpu: u32) -> Option<usize> {
    topo.packages.iter().position(|p| p.cpus.contains(cpu)).or_else(|| {
        let id = topo.cpu(cpu)?.package?;
        topo.packages.iter().position(|p| p.id == id)
    })
}

/// Builds the view of one node: its cores (grouped into package slices
/// when `split` and packages are known), devices and, for a CPU-less node,
/// where its CPUs are.
fn node_view<'a>(topo: &'a Topology, n: &'a Node, split: bool, pkg: &dyn Fn(u32) -> Option<usize>) -> NodeView<'a> {
    let mut assigned = CpuSet::new();
    let mut cores: Vec<Core> = Vec::new();
    let mut lonely_offline = CpuSet::new();
    for id in n.cpus.iter() {
        if assigned.contains(id) {
            continue;
        }
        let cpu = topo.cpu(id);
        let online = topo.online_cpus.contains(id);
        let set = match cpu.and_then(|c| c.siblings.as_ref()) {
            Some(s) if s.contains(id) => s.intersection(&n.cpus).difference(&assigned),
            _ => {
                if !online {
                    lonely_offline.insert(id);
                }
                std::iter::once(id).collect()
            }
        };
        for c in set.iter() {
            assigned.insert(c);
        }
        cores.push(Core { pus: set.iter().map(|c| Pu { id: c, online: topo.online_cpus.contains(c) }).collect() });
    }
    let mut collapsed = CpuSet::new();
    if lonely_offline.len() > COLLAPSE_OFFLINE_ABOVE {
        cores.retain(|c| !(c.pus.len() == 1 && lonely_offline.contains(c.pus[0].id)));
        collapsed = lonely_offline;
    }
    let pus: usize = cores.iter().map(|c| c.pus.len()).sum();
    let compact = pus > COMPACT_ABOVE;
    let mut slices: Vec<Slice> = Vec::new();
    if cores.is_empty() {
        // Nothing to draw.
    } else if split && !topo.packages.is_empty() {
        let mut keyed: Vec<(Option<usize>, Vec<Core>)> = Vec::new();
        for c in cores {
            let k = c.pus.first().and_then(|p| pkg(p.id));
            match keyed.iter_mut().find(|(kk, _)| *kk == k) {
                Some((_, v)) => v.push(c),
                None => keyed.push((k, vec![c])),
            }
        }
        keyed.sort_by_key(|(k, _)| (k.is_none(), *k));
        let only_unknown = keyed.len() == 1 && keyed[0].0.is_none();
        for (k, cores) in keyed {
            let label = match k {
                Some(i) => topo.packages.get(i).map(|p| format!("Package {}", p.id)),
                None if only_unknown => None,
                None => Some("no package".to_string()),
            };
            slices.push(Slice { label, cores });
        }
    } else {
        slices.push(Slice { label: None, cores });
    }
    let mine: Vec<&PciDevice> = topo.pci_devices.iter().filter(|d| d.numa_node == Some(n.id)).collect();
    let devices = mine.iter().copied().filter(|d| has_names(d)).collect();
    let other_devices = mine.iter().copied().filter(|d| !has_names(d)).collect();
    let near = if n.cpus.is_empty() { nearest_cpus(topo, n) } else { None };
    NodeView { node: n, slices, collapsed, compact, devices, other_devices, near }
}

/// For a CPU-less node: its HMAT initiators, else the nearest CPU node by
/// SLIT distance.
fn nearest_cpus(topo: &Topology, n: &Node) -> Option<String> {
    if let Some(a) = n.access.iter().filter(|a| !a.initiators.is_empty()).min_by_key(|a| a.class) {
        return Some(format!("local to node {}", a.initiators.to_list()));
    }
    if !topo.has_distances {
        return None;
    }
    let dists: Vec<(u32, u32)> = topo
        .nodes
        .iter()
        .filter(|m| !m.cpus.is_empty())
        .filter_map(|m| topo.distance(n.id, m.id).map(|d| (d, m.id)))
        .collect();
    let best = dists.iter().map(|p| p.0).min()?;
    let near: NodeSet = dists.iter().filter(|p| p.0 == best).map(|p| p.1).collect();
    if dists.len() > 1 && near.len() == dists.len() {
        Some(format!("all CPU nodes at distance {best}"))
    } else {
        Some(format!("nearest: node {} (distance {best})", near.to_list()))
    }
}

/// Grid columns for `n` boxes: all in a row up to 4, then about twice as
/// many columns as rows, at most [`MAX_COLS`], balanced so the last row is
/// not nearly empty.
fn grid_cols(n: usize) -> usize {
    if n <= 4 {
        return n.max(1);
    }
    let mut c = 1;
    while c * c < 2 * n {
        c += 1;
    }
    balance(n, c.min(MAX_COLS))
}

/// Fewest columns that keep the row count of `cols` columns.
fn balance(n: usize, cols: usize) -> usize {
    if n == 0 {
        return 1;
    }
    let cols = cols.clamp(1, n);
    let rows = n.div_ceil(cols);
    n.div_ceil(rows)
}

/// A placed box.
#[derive(Clone, Copy)]
struct Cell {
    x: u32,
    y: u32,
    w: u32,
    h: u32,
}

/// Placed boxes and the extent they cover.
struct Cells {
    cells: Vec<Cell>,
    w: u32,
    h: u32,
}

/// Lays boxes in a grid of `cols` columns: each column as wide as its
/// widest box, each row as tall as its tallest; cells are stretched to
/// their column and row.
fn grid(sizes: &[(u32, u32)], cols: usize, gap: u32) -> Cells {
    let cols = cols.max(1);
    let rows = sizes.len().div_ceil(cols);
    let mut col_w = vec![0u32; cols];
    let mut row_h = vec![0u32; rows];
    for (i, (w, h)) in sizes.iter().enumerate() {
        col_w[i % cols] = col_w[i % cols].max(*w);
        row_h[i / cols] = row_h[i / cols].max(*h);
    }
    let col_x: Vec<u32> = col_w
        .iter()
        .scan(0, |x, w| {
            let here = *x;
            *x += w + gap;
            Some(here)
        })
        .collect();
    let row_y: Vec<u32> = row_h
        .iter()
        .scan(0, |y, h| {
            let here = *y;
            *y += h + gap;
            Some(here)
        })
        .collect();
    let cells = (0..sizes.len())
        .map(|i| Cell { x: col_x[i % cols], y: row_y[i / cols], w: col_w[i % cols], h: row_h[i / cols] })
        .collect();
    let used_cols = cols.min(sizes.len());
    let w = col_w[..used_cols].iter().sum::<u32>() + gap * (used_cols.max(1) as u32 - 1);
    let h = row_h.iter().sum::<u32>() + gap * (rows.max(1) as u32 - 1);
    Cells { cells, w, h }
}

/// Lays boxes left to right, wrapping at `max_w` (at least one per row).
fn flow(sizes: &[(u32, u32)], max_w: u32, gap: u32) -> Cells {
    let mut cells = Vec::with_capacity(sizes.len());
    let (mut x, mut y, mut row_h, mut w) = (0u32, 0u32, 0u32, 0u32);
    for &(bw, bh) in sizes {
        if x > 0 && x + bw > max_w {
            y += row_h + gap;
            x = 0;
            row_h = 0;
        }
        cells.push(Cell { x, y, w: bw, h: bh });
        w = w.max(x + bw);
        row_h = row_h.max(bh);
        x += bw + gap;
    }
    Cells { cells, w, h: y + row_h }
}

/// Cores and size of one slice laid out in at most `max_w` pixels.
fn slice_cells(s: &Slice, style: &PuStyle, max_w: u32) -> (Cells, u32, u32) {
    let (pad, label_h) = if s.label.is_some() { (SLICE_PAD, SLICE_LABEL_H) } else { (0, 0) };
    let core_sizes: Vec<(u32, u32)> = s.cores.iter().map(|c| style.core_size(c.pus.len())).collect();
    let limit = if style.pu_w == COMPACT.pu_w { ROW_PUS_COMPACT } else { ROW_PUS };
    let row_w = natural_row_w(&s.cores, style, limit);
    let cells = flow(&core_sizes, row_w.min(max_w - 2 * pad), style.core_gap);
    let label_w = s.label.as_deref().map_or(0, |l| text_w(l, SMALL_SIZE));
    let w = cells.w.max(label_w) + 2 * pad;
    let h = cells.h + label_h + 2 * pad;
    (cells, w, h)
}

fn slice_sizes(v: &NodeView, style: &PuStyle, max_w: u32) -> Vec<(u32, u32)> {
    v.slices.iter().map(|s| slice_cells(s, style, max_w)).map(|(_, w, h)| (w, h)).collect()
}

/// How many slices of a node go in one row: as many as fit in `max_w`
/// and hold at most a row of PUs together, balanced over the rows.
fn slices_per_row(v: &NodeView, sizes: &[(u32, u32)], max_w: u32) -> usize {
    let limit = if v.compact { ROW_PUS_COMPACT } else { ROW_PUS };
    let (mut n, mut w, mut pus) = (0usize, 0u32, 0usize);
    for (s, (sw, _)) in v.slices.iter().zip(sizes) {
        let p: usize = s.cores.iter().map(|c| c.pus.len()).sum();
        let next_w = if n == 0 { *sw } else { w + SLICE_GAP + sw };
        if n > 0 && (next_w > max_w || pus + p > limit) {
            break;
        }
        n += 1;
        w = next_w;
        pus += p;
    }
    balance(sizes.len(), n.max(1))
}

/// Boxes in rows of `per_row`, each row as tall as its tallest box.
fn rows_of(sizes: &[(u32, u32)], per_row: usize, gap: u32) -> Cells {
    let mut cells = Vec::with_capacity(sizes.len());
    let (mut y, mut w) = (0u32, 0u32);
    let mut h = 0;
    for row in sizes.chunks(per_row.max(1)) {
        let mut x = 0;
        let row_h = row.iter().map(|s| s.1).max().unwrap_or(0);
        for &(bw, bh) in row {
            cells.push(Cell { x, y, w: bw, h: bh });
            x += bw + gap;
        }
        w = w.max(x.saturating_sub(gap));
        h = y + row_h;
        y += row_h + gap;
    }
    Cells { cells, w, h }
}

/// `n` one-PU cores (to measure a row).
fn single_pus(n: usize) -> Vec<Core> {
    (0..n as u32).map(|id| Core { pus: vec![Pu { id, online: true }] }).collect()
}

/// Width of the widest row when cores are packed `limit` PUs to a row.
fn natural_row_w(cores: &[Core], style: &PuStyle, limit: usize) -> u32 {
    let (mut best, mut w, mut pus) = (0u32, 0u32, 0usize);
    for c in cores {
        let n = c.pus.len();
        let (cw, _) = style.core_size(n);
        if pus > 0 && pus + n > limit {
            best = best.max(w);
            w = 0;
            pus = 0;
        }
        w += if pus > 0 { style.core_gap } else { 0 } + cw;
        pus += n;
    }
    best.max(w)
}

/// Estimated width of text in pixels, in hundredths of an em per
/// character (generous for DejaVu Sans, the widest of the usual fonts).
const EM_PCT: u32 = 60;

fn text_w(s: &str, size: u32) -> u32 {
    (s.chars().count() as u32 * size * EM_PCT).div_ceil(100)
}

/// Estimated width of bold text.
fn bold_w(s: &str, size: u32) -> u32 {
    (s.chars().count() as u32 * size * 68).div_ceil(100)
}

/// `s` cut with an ellipsis to fit `w` pixels.
fn truncate_w(s: &str, w: u32, size: u32) -> String {
    let max = (w * 100 / (size * EM_PCT)) as usize;
    truncate(s, max)
}

/// `s` cut with an ellipsis to at most `max` characters.
fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

/// Splits `s` at commas or spaces into lines that fit `w` pixels, at most
/// `max_lines` (the last one cut with an ellipsis).
fn wrap(s: &str, w: u32, size: u32, max_lines: usize) -> Vec<String> {
    let max = ((w * 100 / (size * EM_PCT)) as usize).max(8);
    let mut lines: Vec<String> = Vec::new();
    let mut cur = String::new();
    let mut rest = s;
    while !rest.is_empty() {
        // Next token, keeping its trailing separator.
        let end = rest.find([',', ' ']).map_or(rest.len(), |i| i + 1);
        let (tok, r) = rest.split_at(end);
        rest = r;
        if !cur.is_empty() && cur.chars().count() + tok.trim_end().chars().count() > max {
            lines.push(std::mem::take(&mut cur).trim_end().to_string());
        }
        cur.push_str(tok);
    }
    if !cur.is_empty() {
        lines.push(cur.trim_end().to_string());
    }
    if lines.len() > max_lines {
        lines.truncate(max_lines);
        if let Some(last) = lines.last_mut() {
            *last = truncate(&format!("{last} …"), max);
        }
    }
    lines.into_iter().map(|l| truncate(&l, max)).collect()
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// Escapes text for XML content and attributes.
fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // Characters XML 1.0 forbids.
            c if (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r') => out.push('?'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::fs;
    use std::path::Path;

    use super::*;
    use crate::sys::SysRoot;

    const N: &str = "sys/devices/system/node";
    const C: &str = "sys/devices/system/cpu";

    /// A synthetic machine: `nodes` CPU nodes of `per_node` CPUs each
    /// (numbered in order), cores of `threads` consecutive CPUs,
    /// `nodes_per_pkg` nodes per package (0: no topology files at all,
    /// negative: each node spans `-nodes_per_pkg` packages), then
    /// `memory_only` CPU-less nodes with sparse ids 100, 101, ...
    struct Spec {
        nodes: u32,
        per_node: u32,
        threads: u32,
        nodes_per_pkg: i32,
        memory_only: u32,
    }

    impl Spec {
        fn new(nodes: u32, per_node: u32) -> Self {
            Spec { nodes, per_node, threads: 1, nodes_per_pkg: 1, memory_only: 0 }
        }

        fn files(&self) -> Vec<(String, String)> {
            let mut f: Vec<(String, String)> = Vec::new();
            let cpus = self.nodes * self.per_node;
            f.push((format!("{C}/possible"), format!("0-{}\n", cpus - 1)));
            f.push((format!("{C}/online"), format!("0-{}\n", cpus - 1)));
            let ids: Vec<u32> = (0..self.nodes).chain((0..self.memory_only).map(|k| 100 + k)).collect();
            for (i, id) in ids.iter().enumerate() {
                let d = format!("{N}/node{id}");
                let list = if *id < 100 {
                    format!("{}-{}\n", id * self.per_node, (id + 1) * self.per_node - 1)
                } else {
                    "\n".to_string()
                };
                f.push((format!("{d}/cpulist"), list));
                f.push((
                    format!("{d}/meminfo"),
                    format!("Node {id} MemTotal: {} kB\nNode {id} MemFree: {} kB\n", 16 << 20, 12 << 20),
                ));
                let dist: Vec<String> =
                    (0..ids.len()).map(|j| if i == j { "10".into() } else { "20".into() }).collect();
                f.push((format!("{d}/distance"), dist.join(" ") + "\n"));
            }
            if self.nodes_per_pkg != 0 {
                for cpu in 0..cpus {
                    let t = format!("{C}/cpu{cpu}/topology");
                    let node = cpu / self.per_node;
                    let pkg = if self.nodes_per_pkg > 0 {
                        node / self.nodes_per_pkg as u32
                    } else {
                        // Each node split evenly over -nodes_per_pkg packages.
                        let span = (-self.nodes_per_pkg) as u32;
                        node * span + (cpu % self.per_node) / (self.per_node / span)
                    };
                    let first = cpu - cpu % self.threads;
                    f.push((format!("{t}/physical_package_id"), format!("{pkg}\n")));
                    f.push((format!("{t}/core_id"), format!("{}\n", first % 64)));
                    f.push((format!("{t}/thread_siblings_list"), format!("{first}-{}\n", first + self.threads - 1)));
                }
            }
            f
        }

        fn topo(&self) -> Topology {
            self.topo_with(&[], "numakit-svg")
        }

        /// Reads the machine with `extra` files, in a root whose name
        /// starts with `prefix`.
        fn topo_with(&self, extra: &[(&str, &str)], prefix: &str) -> Topology {
            let d = tempfile::Builder::new().prefix(prefix).tempdir().expect("tempdir");
            let mut files = self.files();
            files.extend(extra.iter().map(|(a, b)| (a.to_string(), b.to_string())));
            for (rel, content) in &files {
                let p = d.path().join(rel);
                fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
                fs::write(p, content).expect("write");
            }
            Topology::read(&SysRoot::at(d.path())).expect("read")
        }
    }

    /// Parses the picture, checks its size attributes and returns the
    /// document text (for `roxmltree`) with its width and height.
    fn parse(svg: &str) -> (roxmltree::Document<'_>, u32, u32) {
        let doc = roxmltree::Document::parse(svg).unwrap_or_else(|e| panic!("not well-formed XML: {e}\n{svg}"));
        let root = doc.root_element();
        assert_eq!(root.tag_name().name(), "svg");
        assert_eq!(root.tag_name().namespace(), Some("http://www.w3.org/2000/svg"));
        let num =
            |a: &str| root.attribute(a).and_then(|v| v.parse::<u32>().ok()).unwrap_or_else(|| panic!("no numeric {a}"));
        let (w, h) = (num("width"), num("height"));
        assert_eq!(root.attribute("viewBox"), Some(format!("0 0 {w} {h}").as_str()));
        assert!(w > 0 && h > 0);
        (doc, w, h)
    }

    fn texts(doc: &roxmltree::Document, tag: &str) -> Vec<String> {
        doc.descendants()
            .filter(|n| n.tag_name().name() == tag)
            .map(|n| n.children().filter(|c| c.is_text()).filter_map(|c| c.text()).collect::<String>())
            .collect()
    }

    /// CPU ids shown: PU labels, and `CPU n` in tooltips.
    fn cpu_ids_shown(doc: &roxmltree::Document) -> BTreeSet<u32> {
        let mut ids: BTreeSet<u32> = doc
            .descendants()
            .filter(|n| n.tag_name().name() == "text" && matches!(n.attribute("class"), Some("n" | "no")))
            .filter_map(|n| n.text()?.parse().ok())
            .collect();
        for t in texts(doc, "title") {
            for part in t.split("CPU ").skip(1) {
                let digits: String = part.chars().take_while(char::is_ascii_digit).collect();
                if let Ok(id) = digits.parse() {
                    ids.insert(id);
                }
            }
        }
        ids
    }

    /// Checks what every picture must show: each node by id, each node's
    /// CPUs, and every element inside the picture's bounds.
    fn check_complete(topo: &Topology, svg: &str) -> (u32, u32) {
        let (doc, w, h) = parse(svg);
        let text = texts(&doc, "text");
        for n in &topo.nodes {
            let label = format!("Node {}", n.id);
            assert!(text.contains(&label), "{label} missing");
        }
        let shown = cpu_ids_shown(&doc);
        for n in &topo.nodes {
            for c in n.cpus.iter() {
                assert!(shown.contains(&c), "CPU {c} of node {} missing", n.id);
            }
        }
        for r in doc.descendants().filter(|n| n.tag_name().name() == "rect") {
            let a = |k: &str| r.attribute(k).and_then(|v| v.parse::<u32>().ok()).unwrap_or(0);
            assert!(a("x") + a("width") <= w && a("y") + a("height") <= h, "rect out of bounds: {:?}", r);
        }
        (w, h)
    }

    #[test]
    fn packages_nodes_cores_and_memory_only() {
        let spec = Spec { nodes: 4, per_node: 8, threads: 2, nodes_per_pkg: 2, memory_only: 2 };
        let t = spec.topo();
        let svg = render(&t);
        check_complete(&t, &svg);
        let (doc, _, _) = parse(&svg);
        let text = texts(&doc, "text");
        assert!(text.iter().any(|s| s.starts_with("Package 0")) && text.iter().any(|s| s.starts_with("Package 1")));
        assert!(!text.iter().any(|s| s.starts_with("Package 2")));
        // CPU-less nodes are labelled, in their own row.
        assert_eq!(text.iter().filter(|s| *s == "memory only").count(), 2);
        assert!(text.iter().any(|s| s.starts_with("Nodes without CPUs")));
        assert!(text.iter().any(|s| s.starts_with("Machine: 6 NUMA nodes, 2 packages, 16 cores, 32 CPUs")), "{text:?}");
        assert!(text.iter().any(|s| s.starts_with("dump of ")));
        assert!(text.iter().any(|s| s == "16 GiB · 12 GiB free"));
        // Memory-only node 100 sits in a group labelled as such.
        let g = doc
            .descendants()
            .find(|n| n.tag_name().name() == "g" && n.descendants().any(|c| c.text() == Some("Node 100")))
            .expect("group of node 100");
        assert!(g.descendants().any(|c| c.attribute("class") == Some("memonly")));
        assert!(g.descendants().any(|c| c.text() == Some("memory only")));
    }

    #[test]
    fn memoryless_node_and_devices() {
        let spec = Spec::new(2, 4);
        let extra = [
            (format!("{N}/node1/meminfo"), "Node 1 MemTotal: 0 kB\nNode 1 MemFree: 0 kB\n".to_string()),
            ("sys/bus/pci/devices/0000:02:00.0/numa_node".into(), "1\n".into()),
            ("sys/bus/pci/devices/0000:02:00.0/class".into(), "0x020000\n".into()),
            ("sys/bus/pci/devices/0000:03:00.0/numa_node".into(), "-1\n".into()),
            ("sys/bus/pci/devices/0000:00:1f.0/numa_node".into(), "0\n".into()),
        ];
        let extra: Vec<(&str, &str)> = extra.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        let d = tempfile::Builder::new().prefix("svgdev").tempdir().expect("tempdir");
        for (rel, content) in spec.files().iter().map(|(a, b)| (a.as_str(), b.as_str())).chain(extra) {
            let p = d.path().join(rel);
            fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            fs::write(p, content).expect("write");
        }
        let net = d.path().join("sys/class/net");
        fs::create_dir_all(&net).expect("mkdir");
        std::os::unix::fs::symlink("../../devices/pci0000:00/0000:00:01.0/0000:02:00.0/net/eth0", net.join("eth0"))
            .expect("symlink");
        std::os::unix::fs::symlink("../../devices/pci0000:00/0000:03:00.0/net/eth9", net.join("eth9"))
            .expect("symlink");
        let t = Topology::read(&SysRoot::at(d.path())).expect("read");
        let svg = render(&t);
        check_complete(&t, &svg);
        let (doc, _, _) = parse(&svg);
        let node1 = doc
            .descendants()
            .find(|n| n.tag_name().name() == "g" && n.children().any(|c| c.text() == Some("Node 1")))
            .expect("group of node 1");
        assert!(node1.descendants().any(|c| c.text() == Some("no memory")));
        assert!(node1.descendants().any(|c| c.text().is_some_and(|s| s.starts_with("net eth0 · 0000:02:00.0"))));
        let node0 = doc
            .descendants()
            .find(|n| n.tag_name().name() == "g" && n.children().any(|c| c.text() == Some("Node 0")))
            .expect("group of node 0");
        assert!(node0.descendants().any(|c| c.text() == Some("1 other PCI device")));
        let text = texts(&doc, "text");
        assert!(text.iter().any(|s| s.starts_with("net eth9")), "device with no node shown: {text:?}");
    }

    #[test]
    fn large_nodes_are_compact_and_complete() {
        // 2 nodes of 128 CPUs, 2 threads per core.
        let spec = Spec { nodes: 2, per_node: 128, threads: 2, nodes_per_pkg: 1, memory_only: 0 };
        let t = spec.topo();
        let svg = render(&t);
        let (w, h) = check_complete(&t, &svg);
        assert!(w < 1600 && h < 1000, "{w}x{h}");
        let (doc, _, _) = parse(&svg);
        // PUs are cells without labels; the ranges are written out.
        assert!(!doc.descendants().any(|n| n.attribute("class") == Some("n")));
        let text = texts(&doc, "text");
        assert!(text.iter().any(|s| s == "CPUs 0-127") && text.iter().any(|s| s == "CPUs 128-255"), "{text:?}");
        assert!(texts(&doc, "title").iter().any(|s| s == "CPU 4, CPU 5"));
    }

    #[test]
    fn size_grows_with_nodes_and_stays_bounded() {
        let mut last = (0, 0);
        for n in [2u32, 4, 8, 17, 36, 64] {
            let t = Spec { nodes: n, per_node: 4, threads: 1, nodes_per_pkg: 1, memory_only: 0 }.topo();
            let (w, h) = check_complete(&t, &render(&t));
            assert!(w >= last.0 && h >= last.1 && w * h > last.0 * last.1, "{n} nodes: {w}x{h} after {last:?}");
            assert!(w < 4000 && h < 4000, "{n} nodes: {w}x{h}");
            if n == 36 {
                assert!(w < 3000, "36 nodes: {w} wide");
            }
            last = (w, h);
        }
        // 64 nodes of 4 CPUs with no package information, 256 CPUs.
        let t = Spec { nodes: 64, per_node: 4, threads: 2, nodes_per_pkg: 0, memory_only: 0 }.topo();
        let (w, h) = check_complete(&t, &render(&t));
        assert!(w < 4000 && h < 4000, "{w}x{h}");
    }

    #[test]
    fn nodes_spanning_packages_hold_package_slices() {
        let t = Spec { nodes: 2, per_node: 8, threads: 2, nodes_per_pkg: -2, memory_only: 1 }.topo();
        assert_eq!(t.packages.len(), 4);
        let svg = render(&t);
        check_complete(&t, &svg);
        let (doc, _, _) = parse(&svg);
        let node1 = doc
            .descendants()
            .find(|n| n.tag_name().name() == "g" && n.children().any(|c| c.text() == Some("Node 1")))
            .expect("group of node 1");
        let labels: Vec<&str> = node1
            .descendants()
            .filter(|c| c.is_element())
            .filter_map(|c| c.text())
            .filter(|s| s.starts_with("Package"))
            .collect();
        assert_eq!(labels, ["Package 2", "Package 3"]);
        assert!(!doc.descendants().any(|n| n.attribute("class") == Some("pkg")), "no package frames");
    }

    #[test]
    fn no_topology_files_draws_nodes_directly() {
        let t = Spec { nodes: 3, per_node: 2, threads: 1, nodes_per_pkg: 0, memory_only: 0 }.topo();
        assert!(t.packages.is_empty());
        let svg = render(&t);
        check_complete(&t, &svg);
        assert!(!svg.contains("Package"));
    }

    #[test]
    fn text_is_escaped() {
        assert_eq!(esc("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&apos;");
        let t = Spec::new(2, 2).topo_with(&[], "dump&<odd>\"name'");
        let svg = render(&t);
        let (doc, _, _) = parse(&svg);
        assert!(texts(&doc, "text").iter().any(|s| s.starts_with("dump of ") && s.contains("dump&<odd>\"name'")));
    }

    #[test]
    fn grid_columns() {
        assert_eq!((1..=4).map(grid_cols).collect::<Vec<_>>(), [1, 2, 3, 4]);
        assert_eq!(grid_cols(8), 4);
        assert_eq!(grid_cols(36), 8);
        assert_eq!(grid_cols(64), 8);
        assert!((5..200).all(|n| grid_cols(n) <= MAX_COLS));
        assert_eq!(wrap("CPUs 0,2,4,6,8,10,12,14", 60, 10, 4), ["CPUs 0,2,", "4,6,8,10,", "12,14"]);
    }

    /// The real machines' dumps, where the fixture tests extracted them.
    #[test]
    fn real_dumps_when_present() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/tmp/hwloc-fixtures");
        let Ok(entries) = fs::read_dir(&dir) else { return };
        for e in entries.flatten() {
            for inner in fs::read_dir(e.path()).into_iter().flatten().flatten() {
                let Ok(t) = Topology::read(&SysRoot::at(inner.path())) else { continue };
                let svg = render(&t);
                let (w, h) = check_complete(&t, &svg);
                assert!(w < 4000 && h < 4000, "{}: {w}x{h}", inner.path().display());
            }
        }
    }
}
