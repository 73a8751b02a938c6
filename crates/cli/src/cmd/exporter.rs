//! `numakit exporter`: serves NUMA metrics for Prometheus at `/metrics`
//! (text exposition 0.0.4): node memory and huge pages, node allocation
//! counters, AutoNUMA counters, memory per node and locality of the top
//! processes by resident memory, and the same per cgroup for Slurm job
//! cgroups and `--cgroup` ones, with their NUMA counters (and the job's
//! experiment arm, from the job ledger). Every scrape
//! reads the system afresh; `numa_maps` only for those top processes and
//! the exported cgroups' processes.
//!
//! Default address 127.0.0.1:19849 (see docs/stat.md for why that port).
//! The HTTP server and its limits are in [`http`].

mod http;

use std::io::Write;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Instant;

use clap::builder::RangedU64ValueParser;
use clap::Args;
use numakit::batch::ledger::{arm_of, is_running, Ledger, Recorded};
use numakit::daemon::protocol::Status;
use numakit::present::prometheus;
use numakit::stats::cgroup::{CgroupDir, CgroupError, CgroupSample, JobReport};
use numakit::stats::MetricsSample;
use numakit::sys::SysRoot;
use numakit::topo::Topology;

use super::common::read_error;
use crate::Failure;

/// The default port: outside the 9100-9999 range of Prometheus's exporter
/// port allocations (full since 2023), in no `/etc/services` entry, below
/// Linux's ephemeral ports.
pub const DEFAULT_PORT: u16 = 19849;

/// Cgroups exported per scrape by default: the label sets stay bounded
/// (a node runs a few jobs at a time) and so does the scrape's cost (each
/// job's processes' `numa_maps` are read).
pub const DEFAULT_MAX_CGROUPS: usize = 32;
/// The most `--max-cgroups` accepts.
pub const MAX_CGROUPS_LIMIT: usize = 1024;

/// `numakit exporter`.
#[derive(Debug, Clone, Args)]
pub struct ExporterArgs {
    /// Address to listen on (port 0: any free port, printed at start).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:19849")]
    pub listen: String,
    /// Export memory per node and locality of the N processes with the most resident memory.
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub top: usize,
    /// The daemon's status file: its families (scans, moves, pages, reverts, decisions) are exported while it exists.
    #[arg(long, value_name = "FILE", default_value = "/var/lib/numakit/status.json")]
    pub daemon_status: std::path::PathBuf,
    /// Also export this cgroup's NUMA figures (PATH as in /proc/PID/cgroup, or a /sys/fs/cgroup folder); repeatable.
    #[arg(long = "cgroup", value_name = "PATH", action = clap::ArgAction::Append)]
    pub cgroups: Vec<String>,
    /// Do not search for Slurm job cgroups (folders named job_N); export only the --cgroup ones.
    #[arg(long)]
    pub no_job_search: bool,
    /// Export at most N cgroups per scrape (the --cgroup ones first, then the jobs found by path); 0: none.
    #[arg(
        long,
        value_name = "N",
        default_value_t = DEFAULT_MAX_CGROUPS,
        value_parser = RangedU64ValueParser::<usize>::new().range(0..=MAX_CGROUPS_LIMIT as u64),
    )]
    pub max_cgroups: usize,
    /// The job ledger, where the Slurm plugin and the job wrappers leave each job's experiment arm
    /// (the job families' experiment, arm and arm_source labels).
    #[arg(long, value_name = "DIR", default_value = numakit::batch::ledger::DEFAULT_DIR)]
    pub ledger: std::path::PathBuf,
    /// Connections kept open at most; beyond, the least recently active one is closed.
    #[arg(
        long,
        value_name = "N",
        default_value_t = http::DEFAULT_MAX_CONNECTIONS,
        value_parser = RangedU64ValueParser::<usize>::new().range(1..=http::MAX_CONNECTIONS_LIMIT as u64),
    )]
    pub max_connections: usize,
}

/// The daemon's families, if its status file is there and readable.
fn daemon_families(path: &Path) -> String {
    let Ok(text) = numakit::files::read_named_text(path) else { return String::new() };
    let Ok(status) = serde_json::from_str::<Status>(&text) else { return String::new() };
    let age = std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .map_or(0.0, |d| d.as_secs_f64());
    prometheus::daemon(&status, age)
}

/// Each job's experiment arm, from the ledger's entries of running
/// processes (none where the ledger cannot be read).
fn arms(sys: &SysRoot, ledger: &Path) -> impl Fn(&JobReport) -> Option<prometheus::ArmLabels> {
    let entries: Vec<Recorded> = Ledger::new(ledger)
        .read_all(sys)
        .unwrap_or_default()
        .into_iter()
        .filter(|r| r.entry.arm.is_some() && is_running(sys, &r.entry))
        .collect();
    move |r: &JobReport| {
        let pids: Vec<i32> = r.processes.iter().map(|p| p.pid).collect();
        arm_of(&entries, r.slurm.as_ref().map(|s| s.job_id), &pids).map(|t| prometheus::ArmLabels {
            experiment: t.experiment.clone(),
            arm: t.arm.clone(),
            source: t.source.clone(),
        })
    }
}

/// The answer to `method path`: the metrics, a small index page, or 404.
fn answer(sys: &SysRoot, topo: &Topology, args: &ExporterArgs, method: &str, path: &str) -> http::Answer {
    let text =
        |status, body: &str| http::Answer { status, content_type: "text/plain; charset=utf-8", body: body.to_string() };
    match (method, path) {
        ("GET" | "HEAD", "/metrics") => {
            let start = Instant::now();
            match MetricsSample::read(sys, topo, args.top) {
                Ok(sample) => {
                    let mut body = prometheus::render(&sample);
                    match CgroupSample::read(sys, topo, &args.cgroups, !args.no_job_search, args.max_cgroups) {
                        Ok(cg) => body.push_str(&prometheus::cgroups_with_arms(&cg, &arms(sys, &args.ledger))),
                        Err(e) => return text(500, &format!("numakit: {e}\n")),
                    }
                    body.push_str(&daemon_families(&args.daemon_status));
                    body.push_str(&prometheus::scrape_duration(start.elapsed()));
                    http::Answer { status: 200, content_type: prometheus::CONTENT_TYPE, body }
                }
                Err(e) => text(500, &format!("numakit: {e}\n")),
            }
        }
        ("GET" | "HEAD", "/") => http::Answer {
            status: 200,
            content_type: "text/html; charset=utf-8",
            body: "<html><head><title>numakit exporter</title></head><body><h1>numakit exporter</h1>\
                   <p><a href=\"/metrics\">Metrics</a></p></body></html>\n"
                .to_string(),
        },
        _ => text(404, "not found\n"),
    }
}

/// Runs `numakit exporter` until killed.
pub fn run(sys: &SysRoot, args: &ExporterArgs) -> anyhow::Result<u8> {
    let addr: SocketAddr = args.listen.parse().map_err(|_| {
        Failure::usage(format!("invalid --listen {}: give IP:PORT, like 127.0.0.1:{DEFAULT_PORT}", args.listen))
    })?;
    for typed in &args.cgroups {
        // A cgroup that is not there yet may come; a path that can never be
        // one is refused now.
        if let Err(e @ CgroupError::Invalid { .. }) = CgroupDir::resolve(sys, typed) {
            return Err(Failure::usage(format!("--cgroup: {e}")).into());
        }
    }
    let topo = Topology::read_nodes_only(sys).map_err(read_error)?;
    // One read before serving: a root that cannot be read fails here, not
    // at the first scrape.
    MetricsSample::read(sys, &topo, 0).map_err(read_error)?;
    let server = http::Server::bind(addr, args.max_connections)
        .map_err(|e| Failure::system(format!("cannot listen on {addr}: {e}")))?;
    let bound = server.local_addr().map_or_else(|_| addr.to_string(), |a| a.to_string());
    let _ = writeln!(std::io::stderr(), "numakit exporter: serving http://{bound}/metrics");
    let (sys, args) = (sys.clone(), args.clone());
    let Err(e) = server.serve(move |method, path| answer(&sys, &topo, &args, method, path));
    Err(Failure::system(format!("cannot serve on {bound}: {e}")).into())
}
