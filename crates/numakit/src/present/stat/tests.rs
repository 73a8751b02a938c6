//! `present::stat` on parsed kernel text: numastat's layouts, the
//! counters, rates, `-m` and `-p` tables and their JSON.

use serde_json::json;

use super::*;
use crate::stats::counters::parse_numastat;
use crate::stats::process::summarize;
use crate::stats::{CounterSample, NodeCounters, NodeMeminfo, ProcessReport, VmNuma};

fn nodes(n: u32) -> Vec<NodeCounters> {
    (0..n)
        .map(|id| NodeCounters {
            id: id * 2,
            lines: parse_numastat(&format!(
                "numa_hit {}\nnuma_miss 0\nnuma_foreign 0\ninterleave_hit 2305\nlocal_node {}\nother_node 0\n",
                24703621 + id as u64,
                24703621 + id as u64
            ))
            .unwrap(),
        })
        .collect()
}

#[test]
fn compat_one_node_is_numastats_layout() {
    let want = "                           node0\n\
                numa_hit                24703621\n\
                numa_miss                      0\n\
                numa_foreign                   0\n\
                interleave_hit              2305\n\
                local_node              24703621\n\
                other_node                     0\n";
    assert_eq!(numastat_compat(&nodes(1), UNLIMITED_WIDTH), want);
}

#[test]
fn compat_folds_at_width_and_reports_unknown_tokens() {
    let mut n = nodes(5);
    n[1].lines.push(("brand_new".into(), 3));
    let t = numastat_compat(&n, 80);
    let lines: Vec<&str> = t.lines().collect();
    assert_eq!(lines[0], "Token brand_new not in hash table.");
    // 16 + 4 * 16 = 80: four nodes per section, then node8 alone.
    assert_eq!(lines[1], format!("{:16}{:>16}{:>16}{:>16}{:>16}", "", "node0", "node2", "node4", "node6"));
    assert_eq!(lines[8], "");
    assert_eq!(lines[9], format!("{:16}{:>16}", "", "node8"));
    assert_eq!(lines.len(), 16);
    // Below 32 columns numastat still uses 32: one node per section.
    assert_eq!(numastat_compat(&nodes(2), 10).matches("numa_hit").count(), 2);
}

#[test]
fn process_table_like_numastat() {
    let maps = crate::procs::numa_maps::parse(
        "1000 default heap anon=150 N0=150 kernelpagesize_kB=4\n2000 default anon=256 N1=256 kernelpagesize_kB=4\n",
    );
    let p = summarize(21563, "bash", &maps, &[0, 1], [0].into_iter().collect());
    let r = ProcessReport { processes: vec![p.clone()], exited: vec![], unreadable: vec![9] };
    let t = processes_text(&r, &[0, 1], UNLIMITED_WIDTH);
    let lines: Vec<&str> = t.lines().collect();
    assert_eq!(lines[1], "Per-node process memory usage (in MBs) for PID 21563 (bash)");
    assert_eq!(lines[2], format!("{:17}{:>16}{:>16}{:>16}", "", "Node 0", "Node 1", "Total"));
    assert_eq!(lines[3], format!("{:17}{:>16}{:>16}{:>16}", "", "-".repeat(15), "-".repeat(15), "-".repeat(15)));
    assert_eq!(lines[5], format!("{:17}{:>16}{:>16}{:>16}", "Heap", "0.59", "0.00", "0.59"));
    assert_eq!(
        lines[8],
        format!("{:17}{:>16}{:>16}{:>16}", "-".repeat(16), "-".repeat(15), "-".repeat(15), "-".repeat(15))
    );
    assert_eq!(lines[9], format!("{:17}{:>16}{:>16}{:>16}", "Total", "0.59", "1.00", "1.59"));
    assert!(t.contains("21563 (bash)") && t.contains("36.9%  runs on node 0"), "{t}");
    assert_eq!(skipped_line(&r).as_deref(), Some("1 process(es) could not be read (permission denied): 9"));

    let r2 = ProcessReport { processes: vec![p.clone(), p], exited: vec![4], unreadable: vec![] };
    let t = processes_text(&r2, &[0, 1], UNLIMITED_WIDTH);
    assert!(t.contains(&format!("{:17}{:>16}", "PID", "Node 0")), "{t}");
    assert!(t.contains(&format!("{:17}{:>16}{:>16}{:>16}", "Total", "1.17", "2.00", "3.17")), "{t}");
    let j = processes_json(&r2);
    assert_eq!(j["processes"][0]["nodes"][1]["private_bytes"], 256 * 4096);
    assert_eq!(j["processes"][0]["cpus_nodes"], json!([0]));
    assert_eq!(j["exited"], json!([4]));
}

#[test]
fn meminfo_counts_every_hugepage_size() {
    let n = NodeMeminfo {
        id: 0,
        lines: vec![("MemTotal".into(), 1 << 30), ("HugePages_Total".into(), 1)],
        hugepages: vec![
            crate::topo::HugePages { size_bytes: 2 << 20, total: 1, free: 1, surplus: 0 },
            crate::topo::HugePages { size_bytes: 1 << 30, total: 1, free: 0, surplus: 0 },
        ],
    };
    let t = meminfo_text(std::slice::from_ref(&n), UNLIMITED_WIDTH);
    assert!(t.contains(&format!("{:16}{:>16}{:>16}", "HugePages_Total", "1026.00", "1026.00")), "{t}");
    assert!(t.contains(&format!("{:16}{:>16}{:>16}", "HugePages_Free", "2.00", "2.00")), "{t}");
    let j = meminfo_json(&[n]);
    assert_eq!(j["nodes"][0]["hugepages_total_bytes"], (1u64 << 30) + (2 << 20));
    assert!(j["nodes"][0]["meminfo_bytes"].get("HugePages_Total").is_none());
}

#[test]
fn counters_and_rates() {
    let vm = crate::stats::vmstat::parse_vmstat("numa_hint_faults 10\nnuma_hint_faults_local 4\n");
    let a = CounterSample { nodes: nodes(2), vm };
    let t = counters_text(&a, UNLIMITED_WIDTH);
    assert!(t.contains(&format!("{:16}{:>16}{:>16}{:>16}", "numa_hit", "24703621", "24703622", "49407243")), "{t}");
    assert!(t.contains("  local share") && t.contains("40.0%"), "{t}");
    let j = counters_json(&a);
    assert_eq!(j["nodes"][1]["id"], 2);
    assert_eq!(j["nodes"][1]["numa_hit"], 24703622);
    assert_eq!(j["autonuma"]["hint_faults_local_ratio"], 0.4);
    let mut b = a.clone();
    b.nodes[0].lines[0].1 += 500;
    b.vm = VmNuma { lines: vec![("numa_hint_faults".into(), 20), ("numa_hint_faults_local".into(), 14)] };
    let r = b.rates_since(&a, std::time::Duration::from_millis(500));
    let t = rates_text(&r, UNLIMITED_WIDTH);
    assert!(t.contains(&format!("{:16}{:>16}{:>16}{:>16}{:>16}", "numa_hit", "500", "0", "500", "1000")), "{t}");
    assert!(t.contains("100.0%"), "{t}");
    let j = rates_json(&r);
    assert_eq!(j["nodes"][0]["numa_hit"]["per_sec"], 1000.0);
    assert_eq!(j["autonuma"]["numa_hint_faults"]["delta"], 10);
}
