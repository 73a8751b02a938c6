//! `nk-locality`: samples the memory locality of processes, for the placer
//! comparison (bench/placers, crates/cli/tests/vm_placers.rs), without
//! numakit's own code and without a fork per sample.
//!
//! ```text
//! nk-locality --pids P1,P2,... [--secs S] [--interval-ms 1000] [--tick-ms 100]
//! ```
//!
//! Every tick it reads each thread's last CPU (`/proc/PID/task/TID/stat`
//! field 39) and counts it for that CPU's node; every interval it reads each
//! process's `/proc/PID/numa_maps` (pages per node, every mapping) and
//! prints one line
//!
//! ```text
//! sample t=SECS loc=L min=M pid=PID:LOCAL/TOTAL@RUN_NODES:N0=pages,N3=pages ...
//! ```
//!
//! where a thread runs on the node it was seen on most often during the
//! interval, a process's run nodes are those of its threads, its locality
//! is the share of its pages on its run nodes, `loc` is the page-weighted
//! locality of all the processes and `min` the lowest one. `t` is seconds
//! since the start. A process that has gone is left out. It stops after
//! `--secs` (default: when every process has gone).

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::time::{Duration, Instant};

fn arg<T: std::str::FromStr>(args: &[String], name: &str) -> Option<T> {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok())
}

/// CPU id -> node id, from `/sys/devices/system/node/node*/cpulist`.
fn cpu_nodes() -> BTreeMap<u32, u32> {
    let mut map = BTreeMap::new();
    let Ok(dir) = std::fs::read_dir("/sys/devices/system/node") else { return map };
    for e in dir.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(node) = name.strip_prefix("node").and_then(|n| n.parse::<u32>().ok()) else { continue };
        let list = std::fs::read_to_string(e.path().join("cpulist")).unwrap_or_default();
        for part in list.trim().split(',').filter(|p| !p.is_empty()) {
            let (a, b) = part.split_once('-').unwrap_or((part, part));
            if let (Ok(a), Ok(b)) = (a.parse::<u32>(), b.parse::<u32>()) {
                for cpu in a..=b {
                    map.insert(cpu, node);
                }
            }
        }
    }
    map
}

/// The `processor` field (39) of a stat line (the name may hold spaces).
fn processor(stat: &str) -> Option<u32> {
    let rest = &stat[stat.rfind(") ")? + 2..];
    rest.split_whitespace().nth(36)?.parse().ok()
}

/// Pages per node over every mapping of a numa_maps text.
fn pages_per_node(maps: &str) -> BTreeMap<u32, u64> {
    let mut out = BTreeMap::new();
    for tok in maps.split_whitespace() {
        if let Some((k, v)) = tok.split_once('=') {
            if let (Some(Ok(n)), Ok(p)) = (k.strip_prefix('N').map(str::parse::<u32>), v.parse::<u64>()) {
                *out.entry(n).or_default() += p;
            }
        }
    }
    out
}

/// Seen counts per thread and node during one interval.
type Seen = BTreeMap<(i32, u32), BTreeMap<u32, u32>>;

fn tick(pids: &[i32], nodes: &BTreeMap<u32, u32>, seen: &mut Seen) {
    for &pid in pids {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { continue };
        for t in tasks.flatten() {
            let Ok(tid) = t.file_name().to_string_lossy().parse::<u32>() else { continue };
            let stat = std::fs::read_to_string(t.path().join("stat")).unwrap_or_default();
            if let Some(node) = processor(&stat).and_then(|c| nodes.get(&c)) {
                *seen.entry((pid, tid)).or_default().entry(*node).or_default() += 1;
            }
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let pids: Vec<i32> =
        arg::<String>(&args, "--pids").unwrap_or_default().split(',').filter_map(|p| p.trim().parse().ok()).collect();
    if pids.is_empty() {
        eprintln!("usage: nk-locality --pids P1,P2,... [--secs S] [--interval-ms MS] [--tick-ms MS]");
        std::process::exit(2);
    }
    let secs: Option<f64> = arg(&args, "--secs");
    let interval = Duration::from_millis(arg(&args, "--interval-ms").unwrap_or(1000));
    let tick_every = Duration::from_millis(arg(&args, "--tick-ms").unwrap_or(100)).min(interval);
    let nodes = cpu_nodes();
    let start = Instant::now();
    let mut out = std::io::stdout().lock();
    loop {
        let window = Instant::now();
        let mut seen = Seen::new();
        while window.elapsed() < interval {
            tick(&pids, &nodes, &mut seen);
            std::thread::sleep(tick_every);
        }
        let (mut local, mut total, mut min) = (0u64, 0u64, None::<f64>);
        let mut detail = String::new();
        for &pid in &pids {
            let Ok(maps) = std::fs::read_to_string(format!("/proc/{pid}/numa_maps")) else { continue };
            let pages = pages_per_node(&maps);
            let run: BTreeSet<u32> = seen
                .range((pid, 0)..=(pid, u32::MAX))
                .filter_map(|(_, counts)| {
                    counts.iter().max_by_key(|(n, c)| (**c, std::cmp::Reverse(**n))).map(|(n, _)| *n)
                })
                .collect();
            let tot: u64 = pages.values().sum();
            let loc: u64 = pages.iter().filter(|(n, _)| run.contains(n)).map(|(_, p)| p).sum();
            local += loc;
            total += tot;
            let share = if tot > 0 { loc as f64 / tot as f64 } else { 0.0 };
            min = Some(min.map_or(share, |m: f64| m.min(share)));
            let run_s: Vec<String> = run.iter().map(u32::to_string).collect();
            let pages_s: Vec<String> = pages.iter().map(|(n, p)| format!("N{n}={p}")).collect();
            detail += &format!(" pid={pid}:{loc}/{tot}@{}:{}", run_s.join(","), pages_s.join(","));
        }
        let Some(min) = min else { break };
        let loc = if total > 0 { local as f64 / total as f64 } else { 0.0 };
        let t = start.elapsed().as_secs_f64();
        if writeln!(out, "sample t={t:.1} loc={loc:.4} min={min:.4}{detail}").and_then(|()| out.flush()).is_err() {
            break;
        }
        if secs.is_some_and(|s| t >= s) {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn processor_field_after_a_name_with_spaces() {
        let mut stat = String::from("42 (a b) c) R");
        for i in 4..=38 {
            stat += &format!(" {i}");
        }
        stat += " 7 0 0";
        assert_eq!(processor(&stat), Some(7));
    }

    #[test]
    fn pages_summed_over_mappings() {
        let maps = "7f00 default anon=3 dirty=3 N0=2 N3=1 kernelpagesize_kB=4\n7f10 default file=/x N3=5\n";
        let p = pages_per_node(maps);
        assert_eq!(p.get(&0), Some(&2));
        assert_eq!(p.get(&3), Some(&6));
    }
}
