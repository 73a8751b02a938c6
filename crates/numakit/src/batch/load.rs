//! The host's load as `run --auto`'s rules see it: each node's idle CPUs
//! and free memory, from the running daemon's last scan when it answers,
//! else sampled from `/proc/stat` (or, with no sampling window, every
//! allowed CPU counted idle), and then the placements in the job ledger
//! taken off ([`with_claims`]), so that a job started a moment ago counts
//! before it has used a CPU or touched a page.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use super::ledger::{Claim, Entry};
use crate::daemon::ctl::{Client, ClientError};
use crate::place::auto::{self, NodeLoad};
use crate::procs;
use crate::sets::CpuSet;
use crate::sys::{SysError, SysRoot};
use crate::topo::Topology;

/// The nodes' loads and where they came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostLoad {
    /// Per node, in the topology's order.
    pub loads: Vec<NodeLoad>,
    /// CPUs the daemon's configuration keeps for the system (empty when
    /// the load was not the daemon's).
    pub reserved: CpuSet,
    /// Whose view: `daemon (PATH)`, `sampled now`, or `not sampled`.
    pub source: String,
    /// Why the daemon's view was not used although a daemon answered (one
    /// line, for the caller to show).
    pub warning: Option<String>,
}

/// How to read the load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadSource<'a> {
    /// The daemon's control socket to ask first (`None`: do not ask).
    pub daemon: Option<&'a Path>,
    /// Without the daemon: how long to sample `/proc/stat` (a CPU idle at
    /// least half that time is idle); `None` counts every CPU idle.
    pub sample: Option<Duration>,
}

/// Reads the nodes' loads (see the module's text). Only a live root asks
/// the daemon.
pub fn current(sys: &SysRoot, topo: &Topology, how: &LoadSource<'_>) -> Result<HostLoad, SysError> {
    let mut warning = None;
    if let Some(path) = how.daemon.filter(|_| sys.is_live()) {
        let daemon = Client::new(path, Duration::from_secs(5));
        let view = daemon.node_view().and_then(|v| {
            let loads = v.loads.iter().map(|l| l.to_load()).collect::<Result<Vec<_>, _>>();
            let reserved = CpuSet::parse_list(&v.reserved).map_err(|e| format!("reserved CPUs {:?}: {e}", v.reserved));
            loads.and_then(|l| Ok((l, reserved?))).map_err(ClientError::Io)
        });
        match view {
            Ok((loads, reserved)) => {
                return Ok(HostLoad { loads, reserved, source: format!("daemon ({})", path.display()), warning: None })
            }
            Err(ClientError::NoDaemon(..)) => {}
            Err(ClientError::Refused(why)) => {
                warning = Some(format!("the daemon at {} did not give its view ({why})", path.display()))
            }
            Err(e) => warning = Some(e.to_string()),
        }
    }
    let (idle, source) = match how.sample {
        Some(w) => (crate::stats::cpu::idle_cpus_over(sys, w, auto::IDLE_SHARE)?, "sampled now"),
        None => (topo.allowed.cpus.clone(), "not sampled"),
    };
    Ok(HostLoad { loads: auto::loads_of(topo, &idle), reserved: CpuSet::new(), source: source.into(), warning })
}

/// What the ledger's live placements take from one node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NodeClaims {
    /// Placed processes that claim CPUs or memory there.
    pub jobs: u32,
    /// CPUs they claim.
    pub cpus: u32,
    /// Memory they said they need there and have not touched yet, bytes.
    pub outstanding_bytes: u64,
}

/// The claims of live ledger entries per node, each entry's as far as
/// [`credible_claims`] allows. A job's memory claim counts only as far as
/// the job has not yet made it resident (`VmRSS`, from `/proc/PID/status`,
/// spread over its nodes in the claims' proportion): what is resident is
/// already out of the node's free memory. An entry whose process's status
/// cannot be read claims nothing.
pub fn claims_of(sys: &SysRoot, topo: &Topology, entries: &[Entry]) -> BTreeMap<u32, NodeClaims> {
    let mut out: BTreeMap<u32, NodeClaims> = BTreeMap::new();
    for e in entries {
        let Ok(Some(status)) = procs::read_status(sys, e.pid) else { continue };
        let claims = credible_claims(topo, &status, &e.claims);
        let asked: u64 = claims.iter().fold(0, |a, c| a.saturating_add(c.mem_bytes));
        let left = asked.saturating_sub(status.rss_bytes);
        for c in &claims {
            let n = out.entry(c.node).or_default();
            n.jobs = n.jobs.saturating_add(1);
            n.cpus = n.cpus.saturating_add(c.cpus);
            if asked > 0 {
                let share = (u128::from(c.mem_bytes) * u128::from(left) / u128::from(asked)) as u64;
                n.outstanding_bytes = n.outstanding_bytes.saturating_add(share);
            }
        }
    }
    out
}

/// What a ledger entry's claims may take (pure): an entry is a file any
/// user may write for their own process, so its claims count only as far
/// as the machine and the limits the batch system set on the process
/// (its allowed CPUs and memory nodes, `status`) allow. A claim on a node
/// the machine lacks is dropped; CPUs count at most the node's CPUs the
/// process may run on, and only when the process runs within its claimed
/// nodes (a placement binds it there: one allowed elsewhere was not placed
/// so, or left its placement); memory counts at most the node's size, on
/// nodes the process may take memory from.
pub fn credible_claims(topo: &Topology, status: &procs::Status, claims: &[Claim]) -> Vec<Claim> {
    let nodes: crate::sets::NodeSet = claims.iter().map(|c| c.node).filter(|n| topo.node(*n).is_some()).collect();
    let within = status.cpus_allowed.is_subset(&topo.cpus_of_nodes(&nodes));
    claims
        .iter()
        .filter_map(|c| {
            let node = topo.node(c.node)?;
            let may_run = node.cpus.intersection(&status.cpus_allowed).len();
            let cpus = if within { c.cpus.min(u32::try_from(may_run).unwrap_or(u32::MAX)) } else { 0 };
            let size = node.memory.as_ref().map_or(0, |m| m.total_bytes);
            let mem_bytes = if status.mems_allowed.contains(c.node) { c.mem_bytes.min(size) } else { 0 };
            Some(Claim { node: c.node, cpus, mem_bytes })
        })
        .collect()
}

/// The loads with the ledger's claims taken off: a node's idle CPUs are
/// at most its allowed CPUs less those claimed (the lowest ids are kept;
/// a claimed job that already runs is counted once, by whichever of the
/// two is smaller), its free memory less the claims not yet resident, and
/// its count of placed jobs is raised (the rules prefer the node with the
/// fewest, so that jobs starting together spread).
pub fn with_claims(topo: &Topology, loads: &[NodeLoad], claims: &BTreeMap<u32, NodeClaims>) -> Vec<NodeLoad> {
    loads
        .iter()
        .map(|l| {
            let Some(c) = claims.get(&l.node) else { return l.clone() };
            let own = topo.node(l.node).map_or(0, |n| n.cpus.intersection(&topo.allowed.cpus).len());
            let capacity = own.saturating_sub(c.cpus as usize);
            NodeLoad {
                node: l.node,
                idle_cpus: l.idle_cpus.iter().take(capacity).collect(),
                free_bytes: l.free_bytes.saturating_sub(c.outstanding_bytes),
                placed: l.placed + c.jobs,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topo::synth::SynthMachine;

    /// Four nodes of two CPUs (node `n` has CPUs `n` and `n + 4`).
    fn topo4() -> Topology {
        let d = tempfile::tempdir().unwrap();
        SynthMachine::rr_4n(8, 4096).write(d.path()).unwrap();
        Topology::read_nodes_only(&SysRoot::at(d.path())).unwrap()
    }

    #[test]
    fn claims_take_cpus_memory_and_count_jobs() {
        let t = topo4();
        let loads = auto::loads_of(&t, &t.allowed.cpus);
        let mut claims = BTreeMap::new();
        claims.insert(1, NodeClaims { jobs: 1, cpus: 1, outstanding_bytes: 1 << 30 });
        claims.insert(2, NodeClaims { jobs: 2, cpus: 5, outstanding_bytes: 8 << 30 });
        let after = with_claims(&t, &loads, &claims);
        assert_eq!(after[0], loads[0]);
        assert_eq!(after[1].idle_cpus.len(), 1);
        assert_eq!(after[1].free_bytes, loads[1].free_bytes - (1 << 30));
        assert_eq!(after[1].placed, 1);
        // More claimed than the node has: nothing idle, nothing free.
        assert_eq!((after[2].idle_cpus.len(), after[2].free_bytes, after[2].placed), (0, 0, 2));
    }

    #[test]
    fn a_busy_claimed_job_is_not_counted_twice() {
        let t = topo4();
        // Node 1 (CPUs 1 and 5): CPU 1 busy with the claimed job itself.
        let idle: CpuSet = t.allowed.cpus.iter().filter(|&c| c != 1).collect();
        let loads = auto::loads_of(&t, &idle);
        let mut claims = BTreeMap::new();
        claims.insert(1, NodeClaims { jobs: 1, cpus: 1, outstanding_bytes: 0 });
        assert_eq!(with_claims(&t, &loads, &claims)[1].idle_cpus.len(), 1);
    }

    #[test]
    fn resident_memory_is_not_claimed_again() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("proc/50");
        std::fs::create_dir_all(&p).unwrap();
        std::fs::write(
            p.join("status"),
            "Name:\tjob\nCpus_allowed_list:\t0-1\nMems_allowed_list:\t0-1\nVmRSS:\t  1048576 kB\n",
        )
        .unwrap();
        let sys = SysRoot::at(d.path());
        let e = Entry {
            pid: 50,
            start_ticks: 1,
            job: "t".into(),
            claims: vec![
                Claim { node: 0, cpus: 1, mem_bytes: 3 << 30 },
                Claim { node: 1, cpus: 1, mem_bytes: 1 << 30 },
            ],
            placed_unix: 0,
            job_step: None,
            arm: None,
        };
        let c = claims_of(&sys, &topo4(), &[e]);
        // 4 GiB asked, 1 GiB resident: 3 GiB left, 3:1 over the nodes.
        assert_eq!(c[&0].outstanding_bytes, (9 << 30) / 4);
        assert_eq!(c[&1].outstanding_bytes, (3 << 30) / 4);
        assert_eq!((c[&0].jobs, c[&0].cpus), (1, 1));
    }

    fn status(cpus: &str, mems: &str) -> procs::Status {
        let text = format!("Name:\tjob\nCpus_allowed_list:\t{cpus}\nMems_allowed_list:\t{mems}\nVmRSS:\t0 kB\n");
        procs::parse_status(&text).unwrap()
    }

    #[test]
    fn claims_count_only_as_far_as_the_machine_and_the_process_allow() {
        let t = topo4(); // node n: CPUs n and n + 4
        let size = t.node(1).and_then(|n| n.memory.as_ref()).map(|m| m.total_bytes).unwrap();
        let claim = |node, cpus, mem_bytes| Claim { node, cpus, mem_bytes };
        let huge = [claim(1, u32::MAX, u64::MAX), claim(7, 5, 5), claim(u32::MAX, 1, 1)];
        // A process bound to node 1's CPUs: at most node 1's two CPUs and
        // its memory; nodes the machine lacks dropped.
        let bound = status("1,5", "0-3");
        assert_eq!(credible_claims(&t, &bound, &huge), vec![claim(1, 2, size)]);
        // Allowed one CPU of the node: one; memory only where allowed.
        assert_eq!(credible_claims(&t, &status("1", "0"), &huge), vec![claim(1, 1, 0)]);
        // A process that may run anywhere was not placed on node 1: no CPUs.
        assert_eq!(credible_claims(&t, &status("0-7", "0-3"), &huge), vec![claim(1, 0, size)]);
        // A real placement's claims stand as they are.
        let real = [claim(1, 1, 1 << 20), claim(2, 1, 1 << 20)];
        assert_eq!(credible_claims(&t, &status("1-2,5-6", "0-3"), &real), real.to_vec());
    }

    #[test]
    fn a_claim_of_every_cpu_takes_no_more_than_the_batch_system_gave() {
        // Two entries of a user's batch job, whose cpuset is node 1's CPUs,
        // claim 2^32-1 CPUs on every node and on a node no machine has: they
        // take node 1, nothing else, and nothing overflows.
        let d = tempfile::tempdir().unwrap();
        SynthMachine::rr_4n(8, 4096).write(d.path()).unwrap();
        for pid in [50, 51] {
            let p = d.path().join(format!("proc/{pid}"));
            std::fs::create_dir_all(&p).unwrap();
            std::fs::write(
                p.join("status"),
                "Name:\tsleep\nCpus_allowed_list:\t1,5\nMems_allowed_list:\t0-3\nVmRSS:\t0 kB\n",
            )
            .unwrap();
        }
        let sys = SysRoot::at(d.path());
        let t = Topology::read_nodes_only(&sys).unwrap();
        let claims: Vec<Claim> =
            [0, 1, 2, 3, u32::MAX].into_iter().map(|node| Claim { node, cpus: u32::MAX, mem_bytes: 0 }).collect();
        let e = |pid| Entry {
            pid,
            start_ticks: 1,
            job: "x".into(),
            claims: claims.clone(),
            placed_unix: 0,
            job_step: None,
            arm: None,
        };
        let loads = auto::loads_of(&t, &t.allowed.cpus);
        let after = with_claims(&t, &loads, &claims_of(&sys, &t, &[e(50), e(51)]));
        let idle: Vec<usize> = after.iter().map(|l| l.idle_cpus.len()).collect();
        assert_eq!(idle, vec![2, 0, 2, 2], "{after:?}");
    }
}
