//! `numakit exporter`: serves NUMA metrics for Prometheus at `/metrics`
//! (text exposition 0.0.4): node memory and huge pages, node allocation
//! counters, AutoNUMA counters, and memory per node and locality of the
//! top processes by resident memory. Every scrape reads the system afresh;
//! `numa_maps` only for those top processes.
//!
//! Default address 127.0.0.1:19849 (see docs/stat.md for why that port).

use std::io::Write;
use std::net::SocketAddr;
use std::time::Instant;

use clap::Args;
use numakit::present::prometheus;
use numakit::stats::MetricsSample;
use numakit::sys::SysRoot;
use numakit::topo::Topology;
use tiny_http::{Header, Method, Response, Server};

use super::common::read_error;
use crate::Failure;

/// The default port: outside the 9100-9999 range of Prometheus's exporter
/// port allocations (full since 2023), in no `/etc/services` entry, below
/// Linux's ephemeral ports.
pub const DEFAULT_PORT: u16 = 19849;

/// `numakit exporter`.
#[derive(Debug, Args)]
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
}

/// The daemon's families, if its status file is there and readable.
fn daemon_families(path: &std::path::Path) -> String {
    let Ok(text) = std::fs::read_to_string(path) else { return String::new() };
    let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) else { return String::new() };
    let age = std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .map_or(0.0, |d| d.as_secs_f64());
    prometheus::daemon(&v, age)
}

fn header(name: &str, value: &str) -> Option<Header> {
    Header::from_bytes(name.as_bytes(), value.as_bytes()).ok()
}

/// Runs `numakit exporter` until killed.
pub fn run(sys: &SysRoot, args: &ExporterArgs) -> anyhow::Result<u8> {
    let addr: SocketAddr = args.listen.parse().map_err(|_| {
        Failure::usage(format!("invalid --listen {}: give IP:PORT, like 127.0.0.1:{DEFAULT_PORT}", args.listen))
    })?;
    let topo = Topology::read_nodes_only(sys).map_err(read_error)?;
    // One read before serving: a root that cannot be read fails here, not
    // at the first scrape.
    MetricsSample::read(sys, &topo, 0).map_err(read_error)?;
    let server = Server::http(addr).map_err(|e| Failure::system(format!("cannot listen on {addr}: {e}")))?;
    let bound = server.server_addr().to_ip().map_or_else(|| addr.to_string(), |a| a.to_string());
    let _ = writeln!(std::io::stderr(), "numakit exporter: serving http://{bound}/metrics");
    for req in server.incoming_requests() {
        let path = req.url().split('?').next().unwrap_or("").to_string();
        let resp = match (req.method(), path.as_str()) {
            (Method::Get | Method::Head, "/metrics") => {
                let start = Instant::now();
                match MetricsSample::read(sys, &topo, args.top) {
                    Ok(sample) => {
                        let mut body = prometheus::render(&sample);
                        body.push_str(&daemon_families(&args.daemon_status));
                        body.push_str(&prometheus::scrape_duration(start.elapsed()));
                        let mut r = Response::from_string(body);
                        if let Some(h) = header("Content-Type", prometheus::CONTENT_TYPE) {
                            r = r.with_header(h);
                        }
                        r
                    }
                    Err(e) => Response::from_string(format!("numakit: {e}\n")).with_status_code(500),
                }
            }
            (Method::Get | Method::Head, "/") => {
                let mut r = Response::from_string(
                    "<html><head><title>numakit exporter</title></head><body><h1>numakit exporter</h1>\
                     <p><a href=\"/metrics\">Metrics</a></p></body></html>\n",
                );
                if let Some(h) = header("Content-Type", "text/html; charset=utf-8") {
                    r = r.with_header(h);
                }
                r
            }
            _ => Response::from_string("not found\n").with_status_code(404),
        };
        // A client that went away is not the exporter's problem.
        let _ = req.respond(resp);
    }
    Ok(0)
}
