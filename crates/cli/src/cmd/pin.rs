//! `numakit pin PID (--cpus LIST | --mask MASK | --nodes LIST)`: sets the affinity of
//! every thread of a running process (like `taskset -a -p`), and reports
//! which threads changed and which failed, and why.

use numakit::place;
use numakit::present::pin as present;
use numakit::sets::CpuSet;
use numakit::sys::SysRoot;
use numakit::topo::Topology;

use super::common::{as_typed, read_error};
use crate::cli::PinArgs;
use crate::Failure;

/// Resolves `--cpus`/`--mask`/`--nodes` against the machine (checks as `run` does).
fn target_cpus(sys: &SysRoot, topo: &Topology, args: &PinArgs) -> Result<CpuSet, Failure> {
    let (kind, typed, value) = if let Some(c) = &args.cpus {
        (place::OptKind::PhysCpuBind, format!("--cpus {c}"), c.clone())
    } else if let Some(m) = &args.mask {
        (place::OptKind::PhysCpuBind, format!("--mask {m}"), mask_cpus(topo, m)?.to_list())
    } else {
        let n = args.nodes.clone().unwrap_or_default();
        (place::OptKind::CpuNodeBind, format!("--nodes {n}"), n)
    };
    let req = place::Request {
        opts: vec![place::PolicyOpt { kind, value: Some(value.clone()) }],
        balancing: false,
        all: true,
    };
    let plan = req.resolve(&place::Context { topo, sys, kernel: None }).map_err(|e| {
        // The message names the value as typed (`--cpus 7: ...`, `--mask 0x80: ...`).
        let f = as_typed(&e, kind, "");
        let rest = f.message.strip_prefix(&format!(" {value}")).unwrap_or(&f.message);
        Failure::usage(format!("{typed}{rest}"))
    })?;
    plan.cpus.ok_or_else(|| Failure::usage("no CPUs selected"))
}

/// taskset's hex mask ([`numakit::sets::taskset::parse_mask`]): the CPUs
/// of it this process may use.
fn mask_cpus(topo: &Topology, typed: &str) -> Result<CpuSet, Failure> {
    numakit::sets::taskset::parse_mask(typed, &topo.allowed.cpus)
        .map_err(|e| Failure::usage(format!("--mask {typed}: {e}")))
}

/// Runs `numakit pin`.
pub fn run(sys: &SysRoot, args: &PinArgs) -> anyhow::Result<u8> {
    if !sys.is_live() {
        return Err(Failure::usage("pin acts on the running system; --sysroot is not allowed").into());
    }
    let topo = Topology::read_nodes_only(sys).map_err(read_error)?;
    let cpus = target_cpus(sys, &topo, args)?;
    let report = place::pin::pin(sys, args.pid, &cpus)
        .map_err(|e| Failure::system(e.to_string()))?
        .ok_or_else(|| Failure::usage(format!("no process {}", args.pid)))?;
    if !report.changed.is_empty() {
        crate::output::applied(format!(
            "pid {}: {} thread(s) now on CPUs {}",
            args.pid,
            report.changed.len(),
            cpus.to_list()
        ));
    }
    if args.format.json {
        outln!("{}", present::json(&report));
    } else {
        out!("{}", present::text(&report));
    }
    Ok(if report.failed.is_empty() { 0 } else { 1 })
}
