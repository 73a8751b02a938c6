//! `numakit advise`: where a job of N CPUs and SIZE memory should go now
//! (numad's `-w`). The nodes' idle CPUs and free memory come from the
//! running daemon's last scan when it answers on its socket, else from a
//! fresh sample (/proc/stat over 200 ms); the choice is
//! `place::auto::decide` either way, the function `run --auto` uses, with
//! the devices the environment's batch variables name.

use clap::Args;
use numakit::place::auto::{AutoRequest, EX_TEMPFAIL};
use numakit::present::advise as present;
use numakit::sys::SysRoot;
use numakit::topo::Topology;

use super::common::{advise, parse_reserve, parse_size, read_error};
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
    #[command(flatten)]
    pub daemon: crate::cli::SocketArg,
    /// Next to the job's devices (the GPUs and NICs the batch system's variables in this
    /// environment name) even where they lack idle CPUs; without it a device job goes there when
    /// it fits.
    #[arg(long)]
    pub near_devices: bool,
    /// Do not ask the daemon; sample the system now.
    #[arg(long)]
    pub no_daemon: bool,
    #[command(flatten)]
    pub format: crate::cli::JsonOut,
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
        near: super::common::task_devices(sys).near(args.near_devices),
    };
    let (d, source) = advise(sys, &topo, req, args.daemon.socket.as_ref(), args.no_daemon)?;
    match d {
        Ok(d) => {
            if args.format.json {
                outln!("{}", present::json(&d, &source));
            } else {
                out!("{}", present::text(&d, &source));
            }
            Ok(0)
        }
        Err(refusal) => {
            if args.format.json {
                outln!("{}", present::refusal_json(&refusal, &source));
            } else {
                eprintln!("numakit: no node can take the job now: {refusal}");
            }
            Ok(EX_TEMPFAIL)
        }
    }
}
