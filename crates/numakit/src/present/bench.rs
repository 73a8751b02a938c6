//! `numakit bench` for people (tables and matrices) and for scripts (JSON,
//! documented in docs/bench.md). Strings only: nothing here measures or
//! prints.

use std::fmt::Write as _;

use serde::Serialize;

use super::human_bytes;
use crate::bench::{
    BandwidthReport, FirmwareCheck, Kernel, LatencyReport, LatencyResult, LoadedReport, Measure, DISAGREE_PCT,
};

/// Version of the bench JSON.
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Serialize)]
struct Tagged<'a, T: Serialize> {
    schema_version: u32,
    kind: &'a str,
    #[serde(flatten)]
    report: &'a T,
}

fn json<T: Serialize>(kind: &str, report: &T) -> String {
    let v = Tagged { schema_version: SCHEMA_VERSION, kind, report };
    serde_json::to_string_pretty(&v).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}")) + "\n"
}

/// `numakit bench bandwidth --json`.
pub fn bandwidth_json(r: &BandwidthReport) -> String {
    json("bandwidth", r)
}

/// `numakit bench latency --json`.
pub fn latency_json(r: &LatencyReport) -> String {
    json("latency", r)
}

/// `numakit bench loaded --json`.
pub fn loaded_json(r: &LoadedReport) -> String {
    json("loaded", r)
}

fn sorted_unique(mut v: Vec<u32>) -> Vec<u32> {
    v.sort_unstable();
    v.dedup();
    v
}

/// A matrix with row labels `CPU node N`, column labels `mem N`.
fn matrix(rows: &[u32], cols: &[u32], cell: impl Fn(u32, u32) -> Option<String>) -> String {
    let cells: Vec<Vec<String>> =
        rows.iter().map(|&r| cols.iter().map(|&c| cell(r, c).unwrap_or_else(|| "-".into())).collect()).collect();
    let head: Vec<String> = cols.iter().map(|c| format!("mem {c}")).collect();
    let width = cells.iter().flatten().chain(&head).map(String::len).max().unwrap_or(1);
    let label = |r: u32| format!("CPU node {r}");
    let lw = rows.iter().map(|&r| label(r).len()).max().unwrap_or(8);
    let mut out = format!("{:lw$}", "");
    for h in &head {
        let _ = write!(out, "  {h:>width$}");
    }
    out.push('\n');
    for (r, row) in rows.iter().zip(&cells) {
        let _ = write!(out, "{:lw$}", label(*r));
        for c in row {
            let _ = write!(out, "  {c:>width$}");
        }
        out.push('\n');
    }
    out
}

/// Formats a number with about 3 significant digits (`123`, `12.3`,
/// `1.23`, `0.123`).
pub fn sig3(v: f64) -> String {
    let a = v.abs();
    if a >= 100.0 || a == 0.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// The bandwidth report: per kernel, a matrix of best (median) GB/s.
pub fn bandwidth_text(r: &BandwidthReport) -> String {
    let rows = sorted_unique(r.results.iter().map(|x| x.cpu_node).collect());
    let cols = sorted_unique(r.results.iter().map(|x| x.mem_node).collect());
    let threads = sorted_unique(r.results.iter().map(|x| x.threads as u32).collect());
    let threads = threads.iter().map(u32::to_string).collect::<Vec<_>>().join("/");
    let mut out = format!(
        "STREAM bandwidth, GB/s best (median): {} per array, {} repetitions, {threads} thread(s) per CPU node{}\n",
        human_bytes(r.array_bytes),
        r.reps,
        if r.huge_pages { ", huge pages" } else { "" }
    );
    out += &notes_text(&r.notes);
    for k in Kernel::ALL {
        if !r.results.iter().any(|x| x.kernel == k) {
            continue;
        }
        let _ = writeln!(out, "\n{}:", k.name());
        out += &matrix(&rows, &cols, |c, m| {
            r.results
                .iter()
                .find(|x| x.kernel == k && x.cpu_node == c && x.mem_node == m)
                .map(|x| format!("{} ({})", sig3(x.best_gbps), sig3(x.median_gbps)))
        });
    }
    if let Some(w) = r.results.iter().max_by(|a, b| a.spread_pct.total_cmp(&b.spread_pct)) {
        let _ = writeln!(
            out,
            "\nlargest spread: {} CPU node {} × mem {}: slowest repetition {:.1}% slower than the fastest",
            w.kernel.name(),
            w.cpu_node,
            w.mem_node,
            w.spread_pct
        );
    }
    if r.validated {
        out += "results validated (STREAM's check of the final arrays)\n";
    }
    out + &firmware_text(&r.firmware)
}

fn latency_cell(x: &LatencyResult) -> String {
    sig3(x.ns)
}

/// The latency report: a matrix in ns at one size, or one row per size.
pub fn latency_text(r: &LatencyReport) -> String {
    let rows = sorted_unique(r.results.iter().map(|x| x.cpu_node).collect());
    let cols = sorted_unique(r.results.iter().map(|x| x.mem_node).collect());
    let mut out = format!(
        "memory latency, ns per dependent load ({} chase, median of {}{})\n",
        r.pattern.name(),
        r.reps,
        if r.huge_pages { ", huge pages" } else { "" }
    );
    out += &notes_text(&r.notes);
    if r.sizes.len() == 1 {
        let _ = writeln!(out, "buffer {}:", human_bytes(r.sizes[0]));
        out += &matrix(&rows, &cols, |c, m| {
            r.results.iter().find(|x| x.cpu_node == c && x.mem_node == m).map(latency_cell)
        });
    } else {
        let pairs: Vec<(u32, u32)> = rows.iter().flat_map(|&c| cols.iter().map(move |&m| (c, m))).collect();
        let head: Vec<String> = pairs.iter().map(|(c, m)| format!("{c}>{m}")).collect();
        let w = head.iter().map(String::len).max().unwrap_or(4).max(6);
        let _ = write!(out, "{:>9}", "size");
        for h in &head {
            let _ = write!(out, "  {h:>w$}");
        }
        out += "   (CPU node>memory node)\n";
        for &s in &r.sizes {
            let _ = write!(out, "{:>9}", human_bytes(s));
            for &(c, m) in &pairs {
                let cell = r
                    .results
                    .iter()
                    .find(|x| x.cpu_node == c && x.mem_node == m && x.size_bytes == s)
                    .map_or("-".to_string(), latency_cell);
                let _ = write!(out, "  {cell:>w$}");
            }
            out.push('\n');
        }
    }
    out + &firmware_text(&r.firmware)
}

/// The loaded-latency curve as a table.
pub fn loaded_text(r: &LoadedReport) -> String {
    let mut out = format!(
        "loaded latency: CPU {} (node {}) chasing {} on node {}; load from CPUs {} ({} each)\n",
        r.latency_cpu,
        r.cpu_node,
        human_bytes(r.size_bytes),
        r.mem_node,
        if r.generator_cpus.is_empty() { "none".to_string() } else { r.generator_cpus.to_list() },
        human_bytes(r.generator_bytes)
    );
    out += &notes_text(&r.notes);
    let _ = writeln!(out, "{:>8}  {:>10}  {:>9}  {:>8}", "delay", "generators", "load GB/s", "ns");
    for p in &r.points {
        let delay = p.delay.map_or("idle".to_string(), |d| d.to_string());
        let _ = writeln!(out, "{delay:>8}  {:>10}  {:>9}  {:>8}", p.generators, sig3(p.bandwidth_gbps), sig3(p.ns));
    }
    if r.generator_cpus.is_empty() {
        let _ = writeln!(out, "node {} has no other usable CPU to generate load: only the idle point", r.cpu_node);
    }
    out
}

/// One `note: ...` line per note (a default size that did not fit).
fn notes_text(notes: &[String]) -> String {
    notes.iter().map(|n| format!("note: {n}\n")).collect()
}

/// The measured ratios beside SLIT and HMAT, with disagreements flagged.
pub fn firmware_text(checks: &[FirmwareCheck]) -> String {
    if checks.is_empty() {
        return String::new();
    }
    let what = match checks[0].measure {
        Measure::Latency => "latency / local latency",
        Measure::Bandwidth => "local bandwidth / bandwidth (triad)",
    };
    let mut out = format!("\nmeasured vs firmware ({what}; SLIT = distance / local distance):\n");
    let _ = writeln!(out, "{:>9}  {:>8}  {:>8}  {:>10}  {:>9}", "CPU>mem", "measured", "ratio", "SLIT", "HMAT");
    for c in checks {
        let slit = match (c.slit_distance, c.slit_ratio) {
            (Some(d), Some(r)) => format!("{d} {r:.2}"),
            _ => "-".into(),
        };
        let hmat = c.hmat_ratio.map_or("-".to_string(), |r| format!("{r:.2}"));
        let line = format!(
            "{:>9}  {:>8}  {:>8.2}  {slit:>10}  {hmat:>9}  {}",
            format!("{}>{}", c.cpu_node, c.mem_node),
            sig3(c.measured),
            c.measured_ratio,
            if c.disagrees { "DISAGREES" } else { "" }
        );
        let _ = writeln!(out, "{}", line.trim_end());
    }
    let bad = checks.iter().filter(|c| c.disagrees).count();
    if bad > 0 {
        let _ = writeln!(out, "{bad} pair(s) more than {DISAGREE_PCT:.0}% away from the firmware's ratio");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::{BandwidthResult, LoadedPoint, Pattern};
    use crate::sets::CpuSet;

    fn bw(c: u32, m: u32, k: Kernel, g: f64) -> BandwidthResult {
        BandwidthResult {
            cpu_node: c,
            mem_node: m,
            kernel: k,
            threads: 2,
            best_gbps: g,
            median_gbps: g * 0.9,
            worst_gbps: g * 0.8,
            min_s: 0.1,
            avg_s: 0.11,
            max_s: 0.125,
            spread_pct: 25.0,
            cpus_seen: [0, 1].into_iter().collect(),
            pages_on_node_pct: Some(100.0),
        }
    }

    fn check(c: u32, m: u32, ratio: f64, disagrees: bool) -> FirmwareCheck {
        FirmwareCheck {
            cpu_node: c,
            mem_node: m,
            local_node: c,
            measure: Measure::Latency,
            measured: 100.0 * ratio,
            measured_ratio: ratio,
            slit_distance: Some(if c == m { 10 } else { 20 }),
            slit_ratio: Some(if c == m { 1.0 } else { 2.0 }),
            hmat: None,
            hmat_ratio: None,
            disagrees,
        }
    }

    #[test]
    fn bandwidth_matrix_text_and_json() {
        let r = BandwidthReport {
            array_bytes: 64 << 20,
            reps: 10,
            huge_pages: false,
            validated: true,
            results: vec![
                bw(0, 0, Kernel::Triad, 20.0),
                bw(0, 1, Kernel::Triad, 10.0),
                bw(1, 0, Kernel::Triad, 9.5),
                bw(1, 1, Kernel::Triad, 19.0),
            ],
            firmware: vec![],
            notes: vec!["arrays of 1 GiB each instead of 1.2 GiB".into()],
        };
        let t = bandwidth_text(&r);
        assert!(
            t.starts_with("STREAM bandwidth, GB/s best (median): 64 MiB per array, 10 repetitions, 2 thread(s)"),
            "{t}"
        );
        assert!(t.contains("triad:\n") && !t.contains("copy:"), "{t}");
        assert!(t.contains("2 thread(s) per CPU node\nnote: arrays of 1 GiB each instead of 1.2 GiB\n"), "{t}");
        assert!(t.contains("CPU node 0  20.0 (18.0)  10.0 (9.00)\nCPU node 1  9.50 (8.55)  19.0 (17.1)\n"), "{t}");
        let v: serde_json::Value = serde_json::from_str(&bandwidth_json(&r)).expect("json");
        assert_eq!((v["schema_version"].as_u64(), v["kind"].as_str()), (Some(1), Some("bandwidth")));
        let first = &v["results"][0];
        assert_eq!(
            (first["cpu_node"].as_u64(), first["mem_node"].as_u64(), first["kernel"].as_str()),
            (Some(0), Some(0), Some("triad"))
        );
        assert_eq!(
            (first["threads"].as_u64(), first["best_gbps"].as_f64(), first["median_gbps"].as_f64()),
            (Some(2), Some(20.0), Some(18.0))
        );
        assert_eq!(first["cpus_seen"], serde_json::json!([0, 1]));
        assert_eq!(first["pages_on_node_pct"].as_f64(), Some(100.0));
        assert_eq!(v["notes"], serde_json::json!(["arrays of 1 GiB each instead of 1.2 GiB"]));
    }

    #[test]
    fn latency_views() {
        let lat = |c: u32, m: u32, s: u64, ns: f64| LatencyResult {
            cpu_node: c,
            mem_node: m,
            size_bytes: s,
            ns,
            best_ns: ns,
            cpu: 0,
            cpus_seen: CpuSet::new(),
            pages_on_node_pct: None,
        };
        let mut r = LatencyReport {
            pattern: Pattern::Random,
            reps: 5,
            huge_pages: false,
            sizes: vec![1 << 28],
            results: vec![lat(0, 0, 1 << 28, 90.0), lat(0, 1, 1 << 28, 140.0)],
            firmware: vec![check(0, 0, 1.0, false), check(0, 1, 1.56, true)],
            notes: vec![],
        };
        let t = latency_text(&r);
        assert!(t.contains("buffer 256 MiB:\n            mem 0  mem 1\nCPU node 0   90.0    140\n"), "{t}");
        assert!(t.contains("      0>1       156      1.56     20 2.00          -  DISAGREES\n"), "{t}");
        assert!(t.contains("      0>0       100      1.00     10 1.00          -\n"), "{t}");
        assert!(t.contains("1 pair(s) more than 25% away"), "{t}");
        r.sizes = vec![16 << 10, 1 << 28];
        r.results.push(lat(0, 0, 16 << 10, 1.5));
        let t = latency_text(&r);
        assert!(t.contains("     size     0>0     0>1   (CPU node>memory node)\n   16 KiB    1.50       -\n  256 MiB    90.0     140\n"), "{t}");
        let v: serde_json::Value = serde_json::from_str(&latency_json(&r)).expect("json");
        assert_eq!(v["results"][0]["size_bytes"].as_u64(), Some(1 << 28));
        assert_eq!(v["results"][0]["ns"].as_f64(), Some(90.0));
        assert_eq!(v["pattern"], "random");
    }

    #[test]
    fn loaded_view() {
        let r = LoadedReport {
            cpu_node: 0,
            mem_node: 0,
            size_bytes: 1 << 28,
            generator_bytes: 1 << 27,
            latency_cpu: 0,
            generator_cpus: [1].into_iter().collect(),
            points: vec![
                LoadedPoint { delay: None, generators: 0, bandwidth_gbps: 0.0, ns: 90.0 },
                LoadedPoint { delay: Some(0), generators: 1, bandwidth_gbps: 9.87, ns: 130.0 },
            ],
            cpus_seen: [0, 1].into_iter().collect(),
            pages_on_node_pct: Some(100.0),
            notes: vec![],
        };
        let t = loaded_text(&r);
        assert!(
            t.contains("    idle           0          0      90.0\n       0           1       9.87       130\n"),
            "{t}"
        );
        let v: serde_json::Value = serde_json::from_str(&loaded_json(&r)).expect("json");
        assert_eq!(v["points"][0]["delay"], serde_json::Value::Null);
        assert_eq!(v["kind"], "loaded");
        assert_eq!(sig3(0.1234), "0.123");
    }
}
