//! `numakit advise`: where a job of N CPUs and SIZE memory should go now
//! (numad's `-w`). The nodes' idle CPUs and free memory come from the
//! running daemon's last scan when it answers on its socket, else from a
//! fresh sample (/proc/stat over 200 ms); the choice is
//! `place::auto::decide` either way, the function `run --auto` uses.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use numakit::daemon::ctl::{self, ClientError, Request};
use numakit::daemon::service::advice_json;
use numakit::place::auto::{self, AutoDecision, AutoRequest, NodeLoad, EX_TEMPFAIL};
use numakit::sets::CpuSet;
use numakit::sys::{stat, SysRoot};
use numakit::topo::Topology;

use super::run::parse_size;
use super::topo::read_error;
use crate::Failure;

/// `numakit advise`.
#[derive(Debug, Args)]
pub struct AdviseArgs {
    /// CPUs the job needs.
    #[arg(long, value_name = "N")]
    pub cpus: u32,
    /// Memory the job needs (bytes, or with K, M, G, T).
    #[arg(long, value_name = "SIZE", default_value = "0")]
    pub mem: String,
    /// CPUs never to give the job (a CPU list).
    #[arg(long, value_name = "CPUS")]
    pub reserve: Option<String>,
    /// The daemon's control socket (default /run/numakit/daemon.sock).
    #[arg(long, value_name = "PATH")]
    pub socket: Option<PathBuf>,
    /// Do not ask the daemon; sample the system now.
    #[arg(long)]
    pub no_daemon: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// The nodes' loads: from the daemon when it answers, else sampled now.
/// Returns the loads and where they came from.
pub fn loads(
    sys: &SysRoot,
    topo: &Topology,
    socket: Option<&PathBuf>,
    no_daemon: bool,
) -> Result<(Vec<NodeLoad>, CpuSet, String), Failure> {
    if !no_daemon && sys.is_live() {
        let path = socket.cloned().unwrap_or_else(|| numakit::daemon::settings::Settings::default().socket);
        let req = Request::Advise { cpus: 0, mem_bytes: 0, reserve: String::new() };
        match ctl::request(&path, &req, Duration::from_secs(5)) {
            Ok(r) if r.data.get("loads").is_some() => {
                let loads = r.data["loads"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|l| {
                        Some(NodeLoad {
                            node: l["node"].as_u64()? as u32,
                            idle_cpus: CpuSet::parse_list(l["idle_cpus"].as_str()?).unwrap_or_default(),
                            free_bytes: l["free_bytes"].as_u64()?,
                        })
                    })
                    .collect();
                let reserved = CpuSet::parse_list(r.data["reserved"].as_str().unwrap_or("")).unwrap_or_default();
                return Ok((loads, reserved, format!("daemon ({})", path.display())));
            }
            Ok(r) => {
                eprintln!(
                    "numakit: the daemon at {} did not give its view ({}); sampling now",
                    path.display(),
                    r.error.unwrap_or_default()
                );
            }
            Err(ClientError::NoDaemon(..)) => {}
            Err(e) => eprintln!("numakit: {e}; sampling now"),
        }
    }
    // Idle CPUs: /proc/stat sampled over 200 ms; a CPU idle at least half
    // of that time counts as idle.
    let read = |s: &SysRoot| stat::read_cpu_sample(s).map_err(|e| Failure::system(e.to_string()));
    let before = read(sys)?;
    std::thread::sleep(Duration::from_millis(200));
    let after = read(sys)?;
    let idle = stat::idle_cpus(&before, &after, 0.5);
    let loads = topo
        .nodes
        .iter()
        .map(|n| NodeLoad {
            node: n.id,
            idle_cpus: n.cpus.intersection(&idle),
            free_bytes: n.memory.and_then(|m| m.free_bytes).unwrap_or(0),
        })
        .collect();
    Ok((loads, CpuSet::new(), "sampled now".into()))
}

/// Parses `--reserve`.
pub fn parse_reserve(topo: &Topology, r: Option<&String>) -> Result<CpuSet, Failure> {
    match r {
        Some(r) => numakit::sets::numactl::SetSpec::<numakit::sets::Cpu>::parse(r)
            .map_err(|e| Failure::usage(format!("--reserve: {e}")))?
            .resolve(&topo.online_cpus, None)
            .map_err(|e| Failure::usage(format!("--reserve {r}: {e}"))),
        None => Ok(CpuSet::new()),
    }
}

/// The advice for `req`, or why the job cannot be placed now.
pub fn advise(
    sys: &SysRoot,
    topo: &Topology,
    mut req: AutoRequest,
    socket: Option<&PathBuf>,
    no_daemon: bool,
) -> Result<(Result<AutoDecision, auto::Refusal>, String), Failure> {
    let (loads, reserved, source) = loads(sys, topo, socket, no_daemon)?;
    req.reserve = req.reserve.union(&reserved);
    Ok((auto::decide(topo, &loads, &req), source))
}

/// Runs `numakit advise`.
pub fn run(sys: &SysRoot, args: &AdviseArgs) -> anyhow::Result<u8> {
    let topo = Topology::read_nodes_only(sys).map_err(read_error)?;
    if args.cpus == 0 {
        return Err(Failure::usage("--cpus 0: a job needs at least one CPU").into());
    }
    let req = AutoRequest {
        cpus: args.cpus,
        mem_bytes: parse_size(&args.mem)?,
        reserve: parse_reserve(&topo, args.reserve.as_ref())?,
    };
    let (d, source) = advise(sys, &topo, req, args.socket.as_ref(), args.no_daemon)?;
    match d {
        Ok(d) => {
            if args.json {
                println!("{}", serde_json::to_string_pretty(&advice_json(&d, &source))?);
            } else {
                println!("nodes: {}", d.nodes.to_list());
                println!("numactl: numactl {}", d.plan.numactl_args().join(" "));
                println!("reason: {}", d.reason);
                println!("view: {source}");
            }
            Ok(0)
        }
        Err(refusal) => {
            if args.json {
                println!("{}", serde_json::json!({"refused": refusal.to_string(), "source": source}));
            } else {
                eprintln!("numakit: no node can take the job now: {refusal}");
            }
            Ok(EX_TEMPFAIL)
        }
    }
}
