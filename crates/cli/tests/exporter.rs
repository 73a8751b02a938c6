//! `numakit exporter` for real: a scrape passes `promtool check metrics`
//! (the Prometheus project's checker, Debian package `prometheus`), and a
//! real Prometheus server started here on loopback (temp config scraping
//! the exporter every second, its TSDB in a temp dir) answers a query for
//! a numakit series through its HTTP API.
//!
//! With CI=true a missing promtool or prometheus is a failure; elsewhere
//! those tests are skipped with the reason printed.

mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::skip_or_fail;
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_numakit");

/// A child process killed on drop.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts the exporter on a free port; returns it and its address.
fn exporter(extra: &[&str]) -> (Proc, String) {
    let (c, addr) = common::spawn_exporter(extra);
    (Proc(c), addr)
}

/// A plain HTTP/1.0 GET: (status, headers, body).
fn get(addr: &str, path: &str) -> (u16, String, String) {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(30))).expect("timeout");
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").expect("send");
    let mut raw = String::new();
    s.read_to_string(&mut raw).expect("read");
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let status = head.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    (status, head.to_string(), body.to_string())
}

fn tool(name: &str) -> bool {
    if Command::new(name).arg("--version").output().is_ok() {
        return true;
    }
    skip_or_fail(&format!("{name} is not installed (Debian package prometheus)"));
    false
}

#[test]
fn scrape_has_the_families_and_serves_errors_right() {
    let (_p, addr) = exporter(&["--top", "5"]);
    let (status, head, body) = get(&addr, "/metrics");
    assert_eq!(status, 200, "{head}");
    assert!(head.to_ascii_lowercase().contains("content-type: text/plain; version=0.0.4"), "{head}");
    for family in [
        "numakit_node_memory_total_bytes",
        "numakit_node_memory_free_bytes",
        "numakit_node_numa_hit_total",
        "numakit_node_numa_miss_total",
        "numakit_node_other_node_total",
        "numakit_process_memory_bytes",
        "numakit_process_locality_ratio",
        "numakit_process_resident_bytes",
        "numakit_exporter_scrape_duration_seconds",
    ] {
        assert!(body.contains(&format!("# HELP {family} ")), "no HELP for {family}");
        assert!(body.contains(&format!("# TYPE {family} ")), "no TYPE for {family}");
    }
    assert!(body.contains("numakit_node_memory_free_bytes{node=\"0\"} "), "{body}");
    let procs: std::collections::BTreeSet<&str> = body
        .lines()
        .filter(|l| l.starts_with("numakit_process_resident_bytes{"))
        .filter_map(|l| l.split("pid=\"").nth(1)?.split('"').next())
        .collect();
    assert!(!procs.is_empty() && procs.len() <= 5, "{procs:?}");
    assert_eq!(get(&addr, "/nope").0, 404);
    assert!(get(&addr, "/").2.contains("/metrics"));
}

#[test]
fn scrape_passes_promtool() {
    if !tool("promtool") {
        return;
    }
    let (_p, addr) = exporter(&[]);
    let (_, _, body) = get(&addr, "/metrics");
    let mut c = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool");
    c.stdin.take().expect("stdin").write_all(body.as_bytes()).expect("write");
    let out = c.wait_with_output().expect("promtool");
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && said.trim().is_empty(), "promtool check metrics: {:?}\n{said}", out.status);
}

/// `promtool check metrics` on a page: (success, what it said).
fn promtool(body: &str) -> (bool, String) {
    let mut c = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool");
    c.stdin.take().expect("stdin").write_all(body.as_bytes()).expect("write");
    let out = c.wait_with_output().expect("promtool");
    (out.status.success(), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

#[test]
fn job_cgroups_with_their_labels_pass_promtool() {
    let d = tempfile::tempdir().expect("tmp");
    common::fake_slurm_root(d.path(), 7);
    common::write(d.path(), "sys/fs/cgroup/system.slice/svc.service/cgroup.procs", "20\n");
    common::write(d.path(), "sys/fs/cgroup/system.slice/slurmstepd.scope/job_43/cgroup.procs", "");
    // The job ledger: job 42's arm (as its slurmstepd leaves it), a
    // wrapper's job's by its pid (20, in svc.service), and an ended one's.
    let ledger = d.path().join("ledger");
    let entry = |pid: i32, job_step: &str, arm: &str| {
        let text =
            format!(r#"{{"pid":{pid},"start_ticks":0,"job":"x","claims":[],"placed_unix":1,{job_step}"arm":{arm}}}"#);
        common::write(&ledger, &format!("{pid}.json"), &text);
    };
    entry(
        10,
        r#""job_step":{"job":"slurm job 42","step":"slurm job 42.0"},"#,
        r#"{"experiment":"q4","arm":"auto","source":"assigned"}"#,
    );
    entry(20, "", r#"{"arm":"none","source":"chosen"}"#);
    entry(99, r#""job_step":{"job":"slurm job 43","step":"slurm job 43.0"},"#, r#"{"arm":"local","source":"default"}"#);
    let root = d.path().to_string_lossy().to_string();
    let ledger = ledger.to_string_lossy().to_string();
    let (_p, addr) = exporter(&[
        "--sysroot",
        &root,
        "--cgroup",
        "/system.slice/svc.service",
        "--max-cgroups",
        "2",
        "--ledger",
        &ledger,
    ]);
    let (status, _, body) = get(&addr, "/metrics");
    assert_eq!(status, 200, "{body}");
    let job = r#"cgroup="/system.slice/slurmstepd.scope/job_42",job_id="42",experiment="q4",arm="auto",arm_source="assigned""#;
    for want in [
        format!("numakit_cgroup_processes{{{job}}} 2\n"),
        format!("numakit_cgroup_memory_bytes{{{job},node=\"0\"}} {}\n", 200 * 4096),
        format!("numakit_cgroup_own_local_bytes{{{job}}} {}\n", 200 * 4096),
        format!("numakit_cgroup_charged_bytes{{{job},node=\"1\",type=\"file\"}} 204800\n"),
        format!("numakit_cgroup_numa_pages_migrated_total{{{job}}} 7\n"),
        "numakit_cgroup_processes{cgroup=\"/system.slice/svc.service\",arm=\"none\",arm_source=\"chosen\"} 1\n"
            .to_string(),
        // Asked for first, then the jobs by path: job_43 is beyond 2.
        "numakit_exporter_cgroups_dropped 1\n".to_string(),
    ] {
        assert!(body.contains(&want), "missing {want:?} in\n{body}");
    }
    assert!(!body.contains("job_43"), "{body}");
    if tool("promtool") {
        let (ok, said) = promtool(&body);
        assert!(ok && said.trim().is_empty(), "promtool check metrics:\n{said}");
    }
    let o = Command::new(BIN).args(["exporter", "--cgroup", "relative/path"]).output().expect("run");
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert!(String::from_utf8_lossy(&o.stderr).contains("--cgroup: invalid cgroup \"relative/path\""), "{o:?}");
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port()
}

#[test]
fn real_prometheus_scrapes_and_answers() {
    if !tool("prometheus") {
        return;
    }
    let (_p, addr) = exporter(&["--top", "3"]);
    let dir = tempfile::tempdir().expect("tmp");
    let cfg = dir.path().join("prometheus.yml");
    std::fs::write(
        &cfg,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: numakit\n    \
             static_configs:\n      - targets: ['{addr}']\n"
        ),
    )
    .expect("config");
    let web = format!("127.0.0.1:{}", free_port());
    let log = std::fs::File::create(dir.path().join("prometheus.log")).expect("log");
    let _prom = Proc(
        Command::new("prometheus")
            .arg(format!("--config.file={}", cfg.display()))
            .arg(format!("--storage.tsdb.path={}", dir.path().join("data").display()))
            .arg(format!("--web.listen-address={web}"))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start prometheus"),
    );
    let deadline = Instant::now() + Duration::from_secs(90);
    let query = "/api/v1/query?query=numakit_node_memory_free_bytes";
    let result = loop {
        let v = api(&web, query);
        if v["data"]["result"].as_array().is_some_and(|a| !a.is_empty()) {
            break v;
        }
        if Instant::now() > deadline {
            let log = std::fs::read_to_string(dir.path().join("prometheus.log")).unwrap_or_default();
            panic!("Prometheus never had numakit_node_memory_free_bytes; its log:\n{log}");
        }
        std::thread::sleep(Duration::from_millis(500));
    };
    assert_eq!(result["status"], "success");
    let series = &result["data"]["result"][0];
    assert_eq!(series["metric"]["__name__"], "numakit_node_memory_free_bytes");
    assert_eq!(series["metric"]["job"], "numakit");
    assert!(series["metric"]["node"].is_string());
    let v: f64 = series["value"][1].as_str().and_then(|s| s.parse().ok()).expect("value");
    assert!(v > 0.0, "{series}");

    // Every query of the Grafana dashboard is valid PromQL and finds data
    // (the tiering panel only where the kernel has those counters).
    let dash: Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../contrib/grafana/numakit-dashboard.json"))
            .expect("dashboard"),
    )
    .expect("dashboard json");
    for panel in dash["panels"].as_array().expect("panels") {
        for t in panel["targets"].as_array().expect("targets") {
            let expr = t["expr"].as_str().expect("expr").replace("$__rate_interval", "10s").replace("$instance", ".*");
            let deadline = Instant::now() + Duration::from_secs(30);
            loop {
                let v = api(&web, &format!("/api/v1/query?query={}", percent(&expr)));
                assert_eq!(v["status"], "success", "{expr}: {v}");
                let found = v["data"]["result"].as_array().is_some_and(|a| !a.is_empty());
                let tiering = expr.contains("pgpromote") || expr.contains("pgdemote");
                if found || tiering || Instant::now() > deadline {
                    assert!(found || tiering, "no data for {expr}");
                    break;
                }
                std::thread::sleep(Duration::from_millis(500));
            }
        }
    }
}

/// A GET of Prometheus's HTTP API, as JSON (`null` if unreachable).
fn api(web: &str, path: &str) -> Value {
    let Ok(mut s) = TcpStream::connect(web) else { return Value::Null };
    let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
    let _ = write!(s, "GET {path} HTTP/1.0\r\nHost: {web}\r\n\r\n");
    let mut raw = String::new();
    let _ = s.read_to_string(&mut raw);
    raw.split_once("\r\n\r\n").and_then(|(_, b)| serde_json::from_str(b).ok()).unwrap_or(Value::Null)
}

/// Percent-encodes a query parameter.
fn percent(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[test]
fn listen_errors() {
    let o = Command::new(BIN).args(["exporter", "--listen", "not-an-address"]).output().expect("run");
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    let busy = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = busy.local_addr().expect("addr").to_string();
    let o = Command::new(BIN).args(["exporter", "--listen", &addr]).output().expect("run");
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    assert!(String::from_utf8_lossy(&o.stderr).contains("cannot listen on"), "{o:?}");
}
