//! `numakit show [PID]`: a process's placement: its memory policy (its
//! own via get_mempolicy; another's per mapping from numa_maps), allowed
//! CPUs and nodes, every thread's affinity and last CPU and node, and its
//! resident memory per node; the devices its batch system gave it (its
//! environment) and its memory next to them.

use std::collections::BTreeMap;

use numakit::act;
use numakit::present::show::{self, NodeBytes, PolicyBytes, ProcessView, ThreadView};
use numakit::procs;
use numakit::sys::SysRoot;
use numakit::topo::Topology;

use super::common::read_error;
use crate::cli::ShowArgs;
use crate::Failure;

/// Builds the view of process `pid` (`None`: it does not exist).
pub fn process_view(sys: &SysRoot, topo: &Topology, pid: i32) -> Result<Option<ProcessView>, Failure> {
    let se = |e: numakit::sys::SysError| Failure::system(e.to_string());
    let Some(status) = procs::read_status(sys, pid).map_err(se)? else { return Ok(None) };
    let threads = procs::read_threads(sys, pid).map_err(se)?.unwrap_or_default();
    let maps = procs::read_numa_maps(sys, pid).map_err(se)?.unwrap_or_default();
    let mut per_node: BTreeMap<u32, u64> = BTreeMap::new();
    let mut policies: BTreeMap<String, (usize, u64)> = BTreeMap::new();
    for m in &maps {
        for (n, b) in m.bytes_per_node() {
            *per_node.entry(n).or_default() += b;
        }
        let e = policies.entry(m.policy.clone()).or_default();
        e.0 += 1;
        e.1 += m.bytes();
    }
    let total_bytes = per_node.values().sum();
    // Its devices, where its environment may be read (root, its owner).
    let mem: Vec<(u32, u64)> = per_node.iter().map(|(n, b)| (*n, *b)).collect();
    let devices = super::common::process_devices(sys, topo, pid, &mem);
    Ok(Some(ProcessView {
        pid,
        comm: status.name,
        policy: None,
        policy_nodes: None,
        mapping_policies: policies
            .into_iter()
            .map(|(policy, (mappings, bytes))| PolicyBytes { policy, mappings, bytes })
            .collect(),
        allowed_cpus: status.cpus_allowed,
        allowed_nodes: status.mems_allowed,
        threads: threads
            .into_iter()
            .map(|t| ThreadView {
                last_node: t.last_cpu.and_then(|c| topo.node_of_cpu(c)),
                tid: t.tid,
                comm: t.comm,
                cpus: t.cpus_allowed,
                last_cpu: t.last_cpu,
            })
            .collect(),
        memory: per_node.into_iter().map(|(node, bytes)| NodeBytes { node, bytes }).collect(),
        total_bytes,
        devices,
    }))
}

/// Runs `numakit show`.
pub fn run(sys: &SysRoot, args: &ShowArgs) -> anyhow::Result<u8> {
    let topo = Topology::read_nodes_only(sys).map_err(read_error)?;
    let pid = match args.pid {
        Some(p) if p <= 0 => return Err(Failure::usage(format!("invalid PID {p}")).into()),
        Some(p) => p,
        None => std::process::id() as i32,
    };
    let mut view = process_view(sys, &topo, pid)?
        .ok_or_else(|| Failure::usage(format!("no process {pid} (it may have exited)")))?;
    if args.pid.is_none() && sys.is_live() {
        let own = act::get_mempolicy().map_err(|e| Failure::system(e.to_string()))?;
        view.policy = Some(own.mode.name().to_string());
        view.policy_nodes = Some(own.nodes);
    }
    if args.format.json {
        outln!("{}", serde_json::to_string_pretty(&view)?);
    } else {
        out!("{}", show::process_text(&view));
    }
    Ok(0)
}
