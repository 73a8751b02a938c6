//! The exporter's page: a [`MetricsSample`] in the Prometheus text
//! exposition format 0.0.4, every family with `# HELP` and `# TYPE`, names
//! after Prometheus conventions (base units, `_bytes`, `_ratio`, counters
//! ending in `_total`).
//!
//! Written by hand rather than with prometheus-client: that crate (0.23)
//! only writes OpenMetrics text, whose counter families are named without
//! `_total` (`# TYPE x counter` over samples `x_total`) and which ends in
//! `# EOF`; `promtool check metrics` reads the 0.0.4 format and rejects
//! such counters ("x_total no help text", exit 3). The 0.0.4 format is
//! what every Prometheus server reads, so one format serves both.

use std::fmt::Write as _;

use crate::daemon::protocol::Status;
use crate::stats::cgroup::{CgroupSample, JobReport};
use crate::stats::MetricsSample;

/// The content type of [`render`]'s text.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// One metric family being written.
struct Family<'a> {
    out: &'a mut String,
    name: String,
}

impl<'a> Family<'a> {
    fn new(out: &'a mut String, name: &str, kind: &str, help: &str) -> Self {
        let _ = writeln!(out, "# HELP {name} {}", escape_help(help));
        let _ = writeln!(out, "# TYPE {name} {kind}");
        Family { out, name: name.to_string() }
    }

    fn sample(&mut self, labels: &[(&str, &str)], value: impl Into<f64>) {
        let v: f64 = value.into();
        self.out.push_str(&self.name);
        if !labels.is_empty() {
            let l: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{}\"", escape_label(v))).collect();
            let _ = write!(self.out, "{{{}}}", l.join(","));
        }
        let _ = writeln!(self.out, " {}", number(v));
    }
}

fn escape_help(s: &str) -> String {
    s.replace('\\', "\\\\").replace('\n', "\\n")
}

fn escape_label(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// A sample value: integers without a fraction, `NaN`, `+Inf`, `-Inf`.
fn number(v: f64) -> String {
    if v.is_nan() {
        "NaN".to_string()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.to_string()
    } else if v.fract() == 0.0 && v.abs() < 9.007_199_254_740_992e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

/// Converts a counter to f64 (exact below 2^53 pages or bytes).
fn f(v: u64) -> f64 {
    v as f64
}

/// Help of each node counter of `numastat`.
fn counter_help(name: &str) -> String {
    let what = match name {
        "numa_hit" => "Pages allocated on this node as intended",
        "numa_miss" => "Pages allocated on this node although another was preferred",
        "numa_foreign" => "Pages intended for this node but allocated on another",
        "interleave_hit" => "Interleaved pages allocated on this node as intended",
        "local_node" => "Pages allocated on this node while the process ran on it",
        "other_node" => "Pages allocated on this node while the process ran on another",
        _ => "Node counter",
    };
    format!("{what} (nodeN/numastat {name}).")
}

fn vm_help(name: &str) -> String {
    let what = match name {
        "numa_pte_updates" => "Base page table entries marked for NUMA hinting faults",
        "numa_huge_pte_updates" => "Huge page table entries marked for NUMA hinting faults",
        "numa_hint_faults" => "NUMA hinting faults taken",
        "numa_hint_faults_local" => "NUMA hinting faults on pages already local",
        "numa_pages_migrated" => "Pages migrated by NUMA balancing",
        "pgmigrate_success" => "Pages migrated successfully",
        "pgmigrate_fail" => "Pages that failed to migrate",
        n if n.starts_with("pgpromote_") => "Memory tiering promotion counter",
        n if n.starts_with("pgdemote_") => "Memory tiering demotion counter",
        _ => "vmstat counter",
    };
    format!("{what} (/proc/vmstat {name}).")
}

/// Names a metric after a kernel counter: lower case, `[a-z0-9_]` only.
fn metric_part(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '_' }).collect()
}

/// The whole page.
pub fn render(s: &MetricsSample) -> String {
    let mut out = String::new();
    let o = &mut out;
    // Node memory.
    for (name, key, help) in [
        ("numakit_node_memory_total_bytes", "MemTotal", "Memory of the node (nodeN/meminfo MemTotal)."),
        ("numakit_node_memory_free_bytes", "MemFree", "Free memory of the node (nodeN/meminfo MemFree)."),
        ("numakit_node_memory_used_bytes", "MemUsed", "Used memory of the node (nodeN/meminfo MemUsed)."),
        ("numakit_node_memory_file_bytes", "FilePages", "Page cache of the node (nodeN/meminfo FilePages)."),
        ("numakit_node_memory_anon_bytes", "AnonPages", "Anonymous memory of the node (nodeN/meminfo AnonPages)."),
    ] {
        if s.memory.iter().all(|n| n.get(key).is_none()) {
            continue;
        }
        let mut fam = Family::new(o, name, "gauge", help);
        for n in &s.memory {
            if let Some(v) = n.get(key) {
                fam.sample(&[("node", &n.id.to_string())], f(v));
            }
        }
    }
    // Huge pages, per size and over every size.
    if s.memory.iter().any(|n| !n.hugepages.is_empty()) {
        let mut fam = Family::new(
            o,
            "numakit_node_hugepages",
            "gauge",
            "Huge pages of the node by page size and state (total, free, surplus), in pages.",
        );
        for n in &s.memory {
            let id = n.id.to_string();
            for h in &n.hugepages {
                let size = h.size_bytes.to_string();
                for (state, v) in [("total", h.total), ("free", h.free), ("surplus", h.surplus)] {
                    fam.sample(&[("node", &id), ("size_bytes", &size), ("state", state)], f(v));
                }
            }
        }
        let mut fam = Family::new(
            o,
            "numakit_node_hugepages_bytes",
            "gauge",
            "Memory in huge pages of the node by state, every page size counted at its size.",
        );
        for n in &s.memory {
            let id = n.id.to_string();
            for (state, v) in
                [("total", n.huge_total_bytes()), ("free", n.huge_free_bytes()), ("surplus", n.huge_surplus_bytes())]
            {
                fam.sample(&[("node", &id), ("state", state)], f(v));
            }
        }
    }
    // Node counters.
    let nodes = &s.counters.nodes;
    let mut names: Vec<&str> = Vec::new();
    for n in nodes {
        for (k, _) in &n.lines {
            if !names.contains(&k.as_str()) {
                names.push(k);
            }
        }
    }
    for name in names {
        let mut fam =
            Family::new(o, &format!("numakit_node_{}_total", metric_part(name)), "counter", &counter_help(name));
        for n in nodes {
            if let Some(v) = n.get(name) {
                fam.sample(&[("node", &n.id.to_string())], f(v));
            }
        }
    }
    // AutoNUMA.
    for (name, v) in &s.counters.vm.lines {
        let mut fam = Family::new(o, &format!("numakit_vmstat_{}_total", metric_part(name)), "counter", &vm_help(name));
        fam.sample(&[], f(*v));
    }
    // Processes.
    if !s.processes.is_empty() {
        let mut fam = Family::new(
            o,
            "numakit_process_resident_bytes",
            "gauge",
            "Resident memory of the process (the top processes by resident memory).",
        );
        for (p, rss) in &s.processes {
            fam.sample(&[("pid", &p.pid.to_string()), ("comm", &p.comm)], f(*rss));
        }
        let mut fam = Family::new(
            o,
            "numakit_process_memory_bytes",
            "gauge",
            "Memory of the process on the node (from /proc/PID/numa_maps).",
        );
        for (p, _) in &s.processes {
            let pid = p.pid.to_string();
            for n in &p.nodes {
                fam.sample(&[("pid", &pid), ("comm", &p.comm), ("node", &n.id.to_string())], f(n.bytes));
            }
        }
        let mut fam = Family::new(
            o,
            "numakit_process_locality_ratio",
            "gauge",
            "Share of the process's memory on the nodes its threads run on (0 to 1).",
        );
        for (p, _) in &s.processes {
            if let Some(l) = p.locality {
                fam.sample(&[("pid", &p.pid.to_string()), ("comm", &p.comm)], l);
            }
        }
    }
    let mut fam = Family::new(
        o,
        "numakit_exporter_processes_unreadable",
        "gauge",
        "Top processes whose numa_maps could not be read (permissions) in this scrape.",
    );
    fam.sample(&[], f(s.unreadable as u64));
    out
}

/// The daemon's families, from its status ([`Status`], the `ctl status`
/// answer the daemon also writes to `status.json`, see
/// [`crate::daemon::service::Service::status`]); `age_s` is how long ago
/// the file was written.
pub fn daemon(status: &Status, age_s: f64) -> String {
    let mut out = String::new();
    let c = &status.counters;
    Family::new(
        &mut out,
        "numakit_daemon_status_age_seconds",
        "gauge",
        "Seconds since the daemon last wrote its status.",
    )
    .sample(&[], age_s);
    let deferred = if status.deferred.is_some() { 1.0 } else { 0.0 };
    Family::new(
        &mut out,
        "numakit_daemon_deferred",
        "gauge",
        "1 while the daemon only decides and logs because kernel AutoNUMA is on.",
    )
    .sample(&[], deferred);
    let cpus_only = if status.cpus_only.is_some() { 1.0 } else { 0.0 };
    Family::new(
        &mut out,
        "numakit_daemon_cpus_only",
        "gauge",
        "1 while the daemon places CPUs only and leaves page migration to kernel AutoNUMA.",
    )
    .sample(&[], cpus_only);
    let counters: [(f64, &str, &str); 9] = [
        (c.scans as f64, "numakit_daemon_scans_total", "Scans done since the daemon started."),
        (c.scan_cpu_seconds_total, "numakit_daemon_scan_cpu_seconds_total", "CPU time spent in scans."),
        (
            c.pages_migrated_total as f64,
            "numakit_daemon_pages_migrated_total",
            "Pages moved, read back from numa_maps.",
        ),
        (c.reverts_total as f64, "numakit_daemon_reverts_total", "Moves undone after they did harm."),
        (c.failures_total as f64, "numakit_daemon_failures_total", "Actions the kernel refused."),
        (c.gone_total as f64, "numakit_daemon_gone_total", "Actions whose process exited first."),
        (c.repairs_total as f64, "numakit_daemon_repairs_total", "Half-applied binds found and fixed at start."),
        (c.binds_total as f64, "numakit_daemon_binds_total", "CPU binds applied."),
        (c.migrations_total as f64, "numakit_daemon_migrations_total", "Page migration actions applied."),
    ];
    for (v, name, help) in counters {
        Family::new(&mut out, name, "counter", help).sample(&[], v);
    }
    let gauges: [(f64, &str, &str); 3] = [
        (c.last_scan_cpu_seconds, "numakit_daemon_last_scan_cpu_seconds", "CPU time of the last scan."),
        (
            c.candidates as f64,
            "numakit_daemon_candidates",
            "Processes whose placement was considered in the last scan.",
        ),
        (c.processes as f64, "numakit_daemon_processes", "Processes looked at in the last scan."),
    ];
    for (v, name, help) in gauges {
        Family::new(&mut out, name, "gauge", help).sample(&[], v);
    }
    let mut fam = Family::new(
        &mut out,
        "numakit_daemon_decisions_total",
        "counter",
        "Decisions made, by reason (keeps included).",
    );
    for (reason, v) in &c.decisions_total {
        fam.sample(&[("reason", reason)], *v as f64);
    }
    out
}

/// The per-cgroup families (appended after [`render`]): for each cgroup
/// of the sample, labelled `cgroup` (its path) and `job_id` (when the path
/// names a Slurm job), its processes' memory per node, own and local bytes
/// and locality (from `numa_maps`), the kernel's charge per node
/// (`memory.numa_stat`) and its NUMA counters (`memory.stat`). The byte
/// sums are there so a query can compute a job's locality over all its
/// hosts exactly: `sum by (job_id) (own_local) / sum by (job_id) (own)`.
pub fn cgroups(s: &CgroupSample) -> String {
    cgroups_with_arms(s, &|_| None)
}

/// A job's experiment arm as its families' labels: `experiment` (absent
/// when none ran), `arm`, `arm_source` (`assigned`, `chosen`, `default`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArmLabels {
    /// The experiment.
    pub experiment: Option<String>,
    /// The arm.
    pub arm: String,
    /// How it was set.
    pub source: String,
}

/// [`cgroups`], each job's families also labelled with its experiment
/// arm where `arm` gives one (the exporter reads it from the job ledger).
pub fn cgroups_with_arms(s: &CgroupSample, arm: &dyn Fn(&JobReport) -> Option<ArmLabels>) -> String {
    let mut out = String::new();
    let o = &mut out;
    let labels = |r: &JobReport| -> Vec<(&'static str, String)> {
        let mut l = vec![("cgroup", r.cgroup.path.clone())];
        if let Some(ids) = &r.slurm {
            l.push(("job_id", ids.job_id.to_string()));
        }
        if let Some(a) = arm(r) {
            if let Some(e) = a.experiment {
                l.push(("experiment", e));
            }
            l.push(("arm", a.arm));
            l.push(("arm_source", a.source));
        }
        l
    };
    let with = |base: &[(&'static str, String)], more: &[(&'static str, String)]| -> Vec<(&'static str, String)> {
        base.iter().chain(more).cloned().collect()
    };
    let sample = |fam: &mut Family<'_>, l: &[(&'static str, String)], v: f64| {
        let refs: Vec<(&str, &str)> = l.iter().map(|(k, v)| (*k, v.as_str())).collect();
        fam.sample(&refs, v);
    };
    if !s.reports.is_empty() {
        let mut fam =
            Family::new(o, "numakit_cgroup_processes", "gauge", "Processes in the cgroup and below it (cgroup.procs).");
        for r in &s.reports {
            sample(&mut fam, &labels(r), f(r.processes.len() as u64));
        }
        let mut fam = Family::new(
            o,
            "numakit_cgroup_memory_bytes",
            "gauge",
            "Memory of the cgroup's processes on the node (sum of their /proc/PID/numa_maps).",
        );
        for r in &s.reports {
            for n in &r.nodes {
                sample(&mut fam, &with(&labels(r), &[("node", n.id.to_string())]), f(n.bytes));
            }
        }
        for (name, help, get) in [
            (
                "numakit_cgroup_own_bytes",
                "Own memory (all but ordinary file pages) of the cgroup's processes (numa_maps).",
                (|r: &JobReport| r.own_bytes) as fn(&JobReport) -> u64,
            ),
            (
                "numakit_cgroup_own_local_bytes",
                "Own memory of the cgroup's processes on the nodes their threads run on (numa_maps).",
                |r: &JobReport| r.own_local_bytes,
            ),
        ] {
            let mut fam = Family::new(o, name, "gauge", help);
            for r in &s.reports {
                sample(&mut fam, &labels(r), f(get(r)));
            }
        }
        let mut fam = Family::new(
            o,
            "numakit_cgroup_locality_ratio",
            "gauge",
            "Share of the cgroup's processes' own memory on the nodes their threads run on (0 to 1).",
        );
        for r in &s.reports {
            if let Some(l) = r.locality {
                sample(&mut fam, &labels(r), l);
            }
        }
        if s.reports.iter().any(|r| r.numa_stat.is_some()) {
            let mut fam = Family::new(
                o,
                "numakit_cgroup_charged_bytes",
                "gauge",
                "Memory charged to the cgroup on the node, by type anon or file (memory.numa_stat).",
            );
            for r in &s.reports {
                for n in &r.nodes {
                    for (kind, v) in [("anon", n.charged_anon_bytes), ("file", n.charged_file_bytes)] {
                        if let Some(v) = v {
                            let l = with(&labels(r), &[("node", n.id.to_string()), ("type", kind.to_string())]);
                            sample(&mut fam, &l, f(v));
                        }
                    }
                }
            }
        }
        let mut names: Vec<&str> = Vec::new();
        for r in &s.reports {
            for (k, _) in &r.counters.lines {
                if !names.contains(&k.as_str()) {
                    names.push(k);
                }
            }
        }
        for name in names {
            let what = vm_help(name);
            let what = what.split(" (").next().filter(|w| *w != "vmstat counter").unwrap_or("NUMA counter");
            let help = format!("{what} (the cgroup's memory.stat {name}).");
            let mut fam = Family::new(o, &format!("numakit_cgroup_{}_total", metric_part(name)), "counter", &help);
            for r in &s.reports {
                if let Some(v) = r.counters.get(name) {
                    sample(&mut fam, &labels(r), f(v));
                }
            }
        }
    }
    let mut fam = Family::new(
        o,
        "numakit_exporter_cgroups_dropped",
        "gauge",
        "Cgroups asked for or found (Slurm jobs) beyond --max-cgroups, not exported in this scrape.",
    );
    fam.sample(&[], f(s.dropped as u64));
    let mut fam = Family::new(
        o,
        "numakit_exporter_cgroups_unreadable",
        "gauge",
        "Cgroups left out of this scrape because a file of theirs could not be read or understood.",
    );
    fam.sample(&[], f(s.failed.len() as u64));
    out
}

/// The family timing a scrape (appended after [`render`]).
pub fn scrape_duration(d: std::time::Duration) -> String {
    let mut out = String::new();
    let mut fam = Family::new(
        &mut out,
        "numakit_exporter_scrape_duration_seconds",
        "gauge",
        "Time taken to read the system for this scrape.",
    );
    fam.sample(&[], d.as_secs_f64());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::counters::parse_numastat;
    use crate::stats::process::summarize;
    use crate::stats::{CounterSample, NodeCounters, NodeMeminfo};

    fn sample() -> MetricsSample {
        let maps = crate::procs::numa_maps::parse("1000 bind:1 anon=256 N1=256 kernelpagesize_kB=4\n");
        MetricsSample {
            memory: vec![NodeMeminfo {
                id: 1,
                lines: vec![("MemTotal".into(), 1 << 30), ("MemFree".into(), 1 << 29)],
                hugepages: vec![crate::topo::HugePages { size_bytes: 2 << 20, total: 4, free: 2, surplus: 0 }],
            }],
            counters: CounterSample {
                nodes: vec![NodeCounters { id: 1, lines: parse_numastat("numa_hit 5\nnuma_miss 1\n").unwrap() }],
                vm: crate::stats::vmstat::parse_vmstat("numa_hint_faults 3\npgpromote_success 2\n"),
            },
            processes: vec![(summarize(42, "a \"q\"", &maps, &[0, 1], [1].into_iter().collect()), 2 << 20)],
            unreadable: 0,
        }
    }

    #[test]
    fn families_are_typed_and_named() {
        let t = render(&sample());
        for want in [
            "# TYPE numakit_node_memory_free_bytes gauge\nnumakit_node_memory_free_bytes{node=\"1\"} 536870912\n",
            "numakit_node_hugepages{node=\"1\",size_bytes=\"2097152\",state=\"free\"} 2\n",
            "numakit_node_hugepages_bytes{node=\"1\",state=\"total\"} 8388608\n",
            "# TYPE numakit_node_numa_hit_total counter\nnumakit_node_numa_hit_total{node=\"1\"} 5\n",
            "# TYPE numakit_vmstat_numa_hint_faults_total counter\nnumakit_vmstat_numa_hint_faults_total 3\n",
            "numakit_vmstat_pgpromote_success_total 2\n",
            "numakit_process_memory_bytes{pid=\"42\",comm=\"a \\\"q\\\"\",node=\"1\"} 1048576\n",
            "numakit_process_locality_ratio{pid=\"42\",comm=\"a \\\"q\\\"\"} 1\n",
        ] {
            assert!(t.contains(want), "missing {want:?} in\n{t}");
        }
        // Every family has HELP then TYPE, and every sample follows its TYPE.
        let mut current = String::new();
        for line in t.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                current = rest.split(' ').next().unwrap_or_default().to_string();
            } else if !line.starts_with('#') {
                assert!(line.starts_with(&current), "{line} outside {current}");
            }
        }
        assert_eq!(t.matches("# HELP").count(), t.matches("# TYPE").count());
    }

    #[test]
    fn cgroup_families_with_job_labels() {
        use crate::stats::cgroup::{parse_memory_stat, CgroupDir, JobNode, SlurmIds};
        let r = JobReport {
            cgroup: CgroupDir { path: "/s/job_42".into(), folder: "sys/fs/cgroup/s/job_42".into() },
            slurm: Some(SlurmIds { job_id: 42, step: None }),
            folders: 1,
            processes: vec![],
            exited: vec![],
            unreadable: vec![],
            nodes: vec![JobNode { id: 1, bytes: 8192, charged_anon_bytes: Some(4096), charged_file_bytes: None }],
            total_bytes: 8192,
            own_bytes: 8192,
            own_local_bytes: 4096,
            locality: Some(0.5),
            cpus_nodes: [1].into_iter().collect(),
            allowed_cpus: None,
            allowed_nodes: None,
            allowed_cpus_file: "cpuset.cpus.effective",
            numa_stat: Some(Default::default()),
            counters: parse_memory_stat("numa_pages_migrated 3\n").expect("stat"),
        };
        let mut other = r.clone();
        other.cgroup = CgroupDir { path: "/svc \"q\"".into(), folder: String::new() };
        other.slurm = None;
        other.locality = None;
        let t = cgroups(&CgroupSample {
            reports: vec![r.clone(), other.clone()],
            dropped: 2,
            failed: vec![("/x".into(), "bad".into())],
        });
        for want in [
            "numakit_cgroup_memory_bytes{cgroup=\"/s/job_42\",job_id=\"42\",node=\"1\"} 8192\n",
            "numakit_cgroup_own_local_bytes{cgroup=\"/s/job_42\",job_id=\"42\"} 4096\n",
            "numakit_cgroup_locality_ratio{cgroup=\"/s/job_42\",job_id=\"42\"} 0.5\n",
            "numakit_cgroup_charged_bytes{cgroup=\"/s/job_42\",job_id=\"42\",node=\"1\",type=\"anon\"} 4096\n",
            "# TYPE numakit_cgroup_numa_pages_migrated_total counter\n",
            "numakit_cgroup_numa_pages_migrated_total{cgroup=\"/svc \\\"q\\\"\"} 3\n",
            "numakit_exporter_cgroups_dropped 2\n",
            "numakit_exporter_cgroups_unreadable 1\n",
        ] {
            assert!(t.contains(want), "missing {want:?} in\n{t}");
        }
        assert!(!t.contains("locality_ratio{cgroup=\"/svc"), "{t}");
        assert!(!t.contains("type=\"file\""), "{t}");
        assert_eq!(t.matches("# HELP").count(), t.matches("# TYPE").count());
        // With the job's experiment arm (from the ledger): the same
        // families, three labels more, the other job's unchanged.
        let sample = CgroupSample { reports: vec![r, other], dropped: 0, failed: vec![] };
        let arm = |x: &JobReport| {
            x.slurm.as_ref().map(|_| ArmLabels {
                experiment: Some("q4".into()),
                arm: "auto".into(),
                source: "assigned".into(),
            })
        };
        let t = cgroups_with_arms(&sample, &arm);
        let with = "cgroup=\"/s/job_42\",job_id=\"42\",experiment=\"q4\",arm=\"auto\",arm_source=\"assigned\"";
        assert!(t.contains(&format!("numakit_cgroup_locality_ratio{{{with}}} 0.5\n")), "{t}");
        assert!(t.contains(&format!("numakit_cgroup_memory_bytes{{{with},node=\"1\"}} 8192\n")), "{t}");
        assert!(t.contains("numakit_cgroup_numa_pages_migrated_total{cgroup=\"/svc \\\"q\\\"\"} 3\n"), "{t}");
        let empty = cgroups(&CgroupSample::default());
        assert!(
            !empty.contains("numakit_cgroup_") && empty.contains("numakit_exporter_cgroups_dropped 0\n"),
            "{empty}"
        );
        assert!(empty.contains("numakit_exporter_cgroups_unreadable 0\n"), "{empty}");
    }

    #[test]
    fn daemon_families_from_the_typed_status() {
        let mut st = Status { deferred: Some("AutoNUMA is on".into()), ..Status::default() };
        st.counters.scans = 7;
        st.counters.scan_cpu_seconds_total = 0.25;
        st.counters.migrations_total = 2;
        st.counters.decisions_total = [("keep".to_string(), 5), ("bind-cpus".to_string(), 2)].into();
        // As the exporter reads it: the daemon's status.json.
        let st: Status = serde_json::from_str(&serde_json::to_string_pretty(&st).expect("json")).expect("typed");
        let t = daemon(&st, 1.5);
        for line in [
            "numakit_daemon_status_age_seconds 1.5",
            "numakit_daemon_deferred 1",
            "numakit_daemon_cpus_only 0",
            "numakit_daemon_scans_total 7",
            "numakit_daemon_scan_cpu_seconds_total 0.25",
            "numakit_daemon_migrations_total 2",
            "numakit_daemon_decisions_total{reason=\"bind-cpus\"} 2",
            "numakit_daemon_decisions_total{reason=\"keep\"} 5",
            "# TYPE numakit_daemon_processes gauge",
        ] {
            assert!(t.lines().any(|l| l == line), "{line} missing:\n{t}");
        }
        assert_eq!(t.matches("# HELP ").count(), 16, "{t}");
    }

    #[test]
    fn numbers() {
        assert_eq!(number(3.0), "3");
        assert_eq!(number(0.25), "0.25");
        assert_eq!(number(f64::NAN), "NaN");
        assert_eq!(number(f64::INFINITY), "+Inf");
    }
}
