//! `numactl --hardware`, reproduced exactly (numactl 2.0.x): scripts that
//! parse it keep working. Memory is `MemTotal`/`MemFree` of the node's
//! `meminfo` shifted down to MiB, CPUs are every CPU of the node's map
//! (offline ones too, as numactl prints them), and the node range uses
//! numactl's own range printer.

use std::fmt::Write;

use crate::topo::Topology;

/// numactl's "% 3d" (space flag, width 3).
fn num3(v: u32) -> String {
    format!("{:>3}", format!(" {v}"))
}

/// numactl's way of printing the node list of the `available:` line.
fn numactl_ranges(ids: &[u32]) -> String {
    let mut out = String::new();
    let Some(&maxnode) = ids.last() else { return out };
    let mut prev: Option<u32> = None;
    let mut skip = false;
    for &i in ids {
        match prev {
            None => {
                let _ = write!(out, "{i}");
                prev = Some(i);
                continue;
            }
            Some(p) if i > p + 1 => {
                if skip {
                    let _ = write!(out, "{p}");
                    skip = false;
                }
                let _ = write!(out, ",{i}");
                prev = Some(i);
                continue;
            }
            Some(p) => {
                if i == p + 1 {
                    if !skip {
                        out.push('-');
                        skip = true;
                    }
                    prev = Some(i);
                }
            }
        }
        if i == maxnode && skip {
            let _ = write!(out, "{i}");
        }
    }
    out
}

const NOT_AVAILABLE: &str = "<not available>";

fn fmt_mem(bytes: Option<u64>) -> String {
    bytes.map_or(NOT_AVAILABLE.to_string(), |b| format!("{} MB", b >> 20))
}

/// Renders `numactl --hardware` for `topo`.
pub fn render(topo: &Topology) -> String {
    let mut out = String::new();
    let ids: Vec<u32> = topo.nodes.iter().map(|n| n.id).collect();
    let _ = writeln!(out, "available: {} nodes ({})", ids.len(), numactl_ranges(&ids));
    for n in &topo.nodes {
        let _ = write!(out, "node {} cpus:", n.id);
        // numactl (libnuma 2.0.16) leaves out CPUs that `cpu/online` omits.
        let cpus = if topo.online_file { n.cpus.intersection(&topo.online_cpus) } else { n.cpus.clone() };
        for c in cpus.iter() {
            let _ = write!(out, " {c}");
        }
        out.push('\n');
        let (size, free) = match n.memory {
            Some(m) => (format!("{} MB", m.total_bytes >> 20), fmt_mem(m.free_bytes)),
            None => (NOT_AVAILABLE.to_string(), NOT_AVAILABLE.to_string()),
        };
        let _ = writeln!(out, "node {} size: {size}", n.id);
        let _ = writeln!(out, "node {} free: {free}", n.id);
    }
    if !topo.has_distances {
        out.push_str("No distance information available.\n");
        return out;
    }
    out.push_str("node distances:\nnode ");
    for &i in &ids {
        let _ = write!(out, "{} ", num3(i));
    }
    out.push('\n');
    for (i, row) in ids.iter().zip(&topo.distances) {
        let _ = write!(out, "{}: ", num3(*i));
        for d in row {
            let _ = write!(out, "{} ", num3(*d));
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_like_numactl() {
        assert_eq!(numactl_ranges(&[0]), "0");
        assert_eq!(numactl_ranges(&[0, 1, 2, 3]), "0-3");
        assert_eq!(numactl_ranges(&[0, 1, 2, 4, 6, 8, 9]), "0-2,4,6,8-9");
        assert_eq!(numactl_ranges(&[0, 1, 2, 33, 34, 45, 72, 73]), "0-2,33-34,45,72-73");
        assert_eq!(numactl_ranges(&[0, 8, 250, 251, 252, 253, 254, 255]), "0,8,250-255");
        assert_eq!(numactl_ranges(&[0, 2]), "0,2");
    }

    #[test]
    fn num3_matches_printf_space_flag() {
        assert_eq!(num3(0), "  0");
        assert_eq!(num3(10), " 10");
        assert_eq!(num3(250), " 250");
    }
}
