//! Views of the model for people and scripts. Every function here returns
//! a string (or a serialisable value) and never reads the system or prints:
//! the CLI decides where output goes.
//!
//! * [`hardware`]: `numactl --hardware`, byte for byte;
//! * [`json`]: the documented, stable JSON schema (docs/topo-json.md);
//! * [`text`]: the human view of `numakit topo`;
//! * [`svg`]: a picture of packages, nodes, cores and PUs;
//! * [`stat`]: `numakit stat` (numastat's layout exactly with `--compat`);
//! * [`top`]: the cells of `numakit top` and its plain-text snapshot;
//! * [`prometheus`]: the exporter's Prometheus text exposition;
//! * [`simtrace`]: `numakit simulate --trace`.

pub mod bench;
pub mod compare;
pub mod hardware;
pub mod json;
pub mod plot;
pub mod prometheus;
pub mod show;
pub mod simtrace;
pub mod stat;
pub mod svg;
pub mod text;
pub mod top;

/// Formats bytes in binary units with one decimal where it helps
/// (`512 MiB`, `1.5 GiB`, `63.9 GiB`).
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 || (v - v.round()).abs() < 0.05 {
        format!("{:.0} {}", v, UNITS[u])
    } else {
        format!("{:.1} {}", v, UNITS[u])
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn human_bytes() {
        assert_eq!(super::human_bytes(0), "0 B");
        assert_eq!(super::human_bytes(512 << 20), "512 MiB");
        assert_eq!(super::human_bytes(3 << 29), "1.5 GiB");
        assert_eq!(super::human_bytes(1023), "1023 B");
    }
}
