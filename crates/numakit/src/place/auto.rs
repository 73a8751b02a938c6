//! `numakit run --auto`: choosing a node for a job, by the rules of an EDA
//! batch farm:
//!
//! 1. the job fits one node's idle CPUs and free memory → bind CPUs and
//!    memory there (among the nodes with enough idle CPUs, the one with the
//!    most free memory);
//! 2. it needs more memory than any such node has free → bind CPUs there,
//!    *prefer* memory there (the rest spills to other nodes);
//! 3. it needs more CPUs than a node has idle → the nearest group of nodes
//!    by distance that has enough;
//! 4. larger than the whole machine (idle CPUs or free memory) → refuse, so
//!    a job wrapper can keep the job pending (exit 75, EX_TEMPFAIL).
//!
//! Among the nodes a job fits (rules 1 and 2), those with fewer running
//! jobs numakit placed ([`NodeLoad::placed`]) come first: jobs that start
//! in the same second spread over the nodes instead of all taking the one
//! that looked freest.
//!
//! Memory-less CPU nodes count as what they are: every access of a job
//! there is remote. Among the nodes a job fits, a node with memory of its
//! own (that the cpuset allows) comes before every memory-less one,
//! whatever their placed jobs and free memory: a memory-less node is
//! chosen only when no node with its own memory has the idle CPUs. No
//! margin of load makes up for it: the placed count only spreads jobs
//! that start together (the idle-CPU test already leaves out nodes
//! without room), and a job moved to a memory-less node still draws its
//! memory from a memory node, often the same one, only from farther away.
//! Groups of nodes (rule 3) are chosen as before, by distance; a
//! memory-less member's memory comes from its nearest memory nodes.
//! Memory-only nodes (no CPUs) are never CPU targets. The reason line of
//! a memory-less node, alone or in a group, says where its memory comes
//! from.
//!
//! [`decide`] is a pure function of the model, the per-node load and the
//! request; sampling the load is [`crate::sys::stat`]'s job.

use std::fmt;

pub use super::near::Near;
use super::plan::{MemMode, MemPolicy, Plan};
use crate::sets::{CpuSet, NodeSet};
use crate::topo::Topology;

/// Exit code for "cannot place now, try later" (sysexits.h EX_TEMPFAIL).
pub const EX_TEMPFAIL: u8 = 75;

/// A CPU idle for at least this share of the window its load was sampled
/// over counts as idle ([`NodeLoad::idle_cpus`]), whoever sampled it: `run
/// --auto` itself or the daemon's last scan. 0.5: idle more than busy.
pub const IDLE_SHARE: f64 = 0.5;

/// What a job needs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AutoRequest {
    /// CPUs.
    pub cpus: u32,
    /// Memory in bytes.
    pub mem_bytes: u64,
    /// CPUs kept for the OS, never given to the job.
    pub reserve: CpuSet,
    /// The devices the job was given (GPUs, NICs): placed next to them
    /// first ([`super::near`]); `None`: no devices, or none known.
    pub near: Option<Near>,
}

/// The state of one node when deciding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeLoad {
    /// Node id.
    pub node: u32,
    /// Its CPUs that are idle now.
    pub idle_cpus: CpuSet,
    /// Its free memory: `MemFree` + `Inactive(file)` (page cache the
    /// kernel reclaims first).
    pub free_bytes: u64,
    /// Jobs numakit placed there that still run (from the job ledger,
    /// `batch::ledger`; 0 when not known). Among the nodes a job
    /// fits, the one with the fewest comes first, so that jobs starting
    /// together spread.
    pub placed: u32,
}

/// Which rule decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// Rule 1: CPUs and memory bound to one node.
    OneNode,
    /// Rule 2: CPUs bound to one node, memory preferred there.
    OneNodePreferMemory,
    /// Rule 3: a group of nearest nodes.
    NodeGroup,
    /// Before the rules: next to the job's devices ([`super::near`]).
    NearDevices,
}

/// A placement decision with its reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AutoDecision {
    /// The rule that applied.
    pub rule: Rule,
    /// The chosen node(s).
    pub nodes: NodeSet,
    /// What to apply.
    pub plan: Plan,
    /// Why, in one sentence with the numbers.
    pub reason: String,
}

/// Why a job cannot be placed now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal(pub String);

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for Refusal {}

fn gib(b: u64) -> String {
    format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64)
}

/// What a node without usable memory of its own lacks: `no memory`, or
/// `no memory the cpuset allows` when its memory is outside the cpuset.
fn no_memory(topo: &Topology, node: u32) -> &'static str {
    if topo.node(node).is_some_and(|n| n.has_memory) {
        "no memory the cpuset allows"
    } else {
        "no memory"
    }
}

/// Where the memory of a job on memory-less `node` comes from:
/// `memory from node 1 (distance 20)`, `memory from nodes 0,2 (distance
/// 20)`; `no node with memory it may use` when there is none.
fn memory_source(topo: &Topology, node: u32, mem: &NodeSet) -> String {
    if mem.is_empty() {
        return "no node with memory it may use".into();
    }
    let d: Vec<u32> = mem.iter().filter_map(|m| topo.distance(node, m)).collect();
    let distance = match (d.iter().min(), d.iter().max()) {
        (Some(lo), Some(hi)) if lo == hi => format!(" (distance {lo})"),
        (Some(lo), Some(hi)) => format!(" (distances {lo}-{hi})"),
        _ => String::new(),
    };
    format!("memory from node{} {}{distance}", if mem.len() == 1 { "" } else { "s" }, mem.to_list())
}

/// The nodes' loads from a set of idle CPUs and the memory the topology
/// read as available (`MemFree` + `Inactive(file)`,
/// [`NodeMemory::available_bytes`](crate::topo::NodeMemory::available_bytes);
/// 0 where the kernel does not say), in the topology's node order.
pub fn loads_of(topo: &Topology, idle: &CpuSet) -> Vec<NodeLoad> {
    topo.nodes
        .iter()
        .map(|n| NodeLoad {
            node: n.id,
            idle_cpus: n.cpus.intersection(idle),
            free_bytes: n.memory.and_then(|m| m.available_bytes()).unwrap_or(0),
            placed: 0,
        })
        .collect()
}

/// Reads a `--reserve` CPU list in numactl's syntax (`0-3`, `all`, `!2`,
/// `+1-2` relative to `allowed`); empty text is no CPU. The error names
/// the text as given.
pub fn parse_reserve(text: &str, allowed: &CpuSet) -> Result<CpuSet, String> {
    if text.trim().is_empty() {
        return Ok(CpuSet::new());
    }
    crate::sets::numactl::SetSpec::<crate::sets::Cpu>::parse(text.trim())
        .map_err(|e| format!("{text}: {e}"))?
        .resolve(allowed, None)
        .map_err(|e| format!("{text}: {e}"))
}

/// The nodes whose memory `auto` gives jobs: those with memory the cpuset
/// allows and CPUs of their own. Memory-only nodes (CXL expanders, HBM,
/// a GPU's memory) only where no such node exists, and a GPU's own memory
/// node ([`Topology::gpu_memory_nodes`]) never: a job's memory goes to one
/// only when it asks (`nodes:LIST`, numactl's options).
pub fn ordinary_memory(topo: &Topology) -> NodeSet {
    let allowed = topo.memory_nodes().intersection(&topo.allowed.nodes);
    let with_cpus: NodeSet = topo.nodes.iter().filter(|n| !n.cpus.is_empty()).map(|n| n.id).collect();
    let ordinary = allowed.intersection(&with_cpus);
    if !ordinary.is_empty() {
        return ordinary;
    }
    let not_gpu = allowed.difference(&topo.gpu_memory_nodes());
    if not_gpu.is_empty() {
        allowed
    } else {
        not_gpu
    }
}

/// The memory nodes for the CPUs of `nodes`: each node with ordinary
/// memory ([`ordinary_memory`]) itself, a memory-less (or not allowed) one
/// its nearest node(s) with ordinary memory.
pub fn memory_for(topo: &Topology, nodes: &NodeSet) -> NodeSet {
    let allowed = ordinary_memory(topo);
    nodes.iter().fold(NodeSet::new(), |acc, n| {
        if allowed.contains(n) {
            acc.union(&std::iter::once(n).collect())
        } else {
            let best = allowed.iter().filter_map(|m| topo.distance(n, m)).min();
            acc.union(&allowed.iter().filter(|&m| best.is_some() && topo.distance(n, m) == best).collect())
        }
    })
}

/// Decides where a job goes: next to its devices when it has some and
/// they have room ([`super::near::decide_near`]), else by the rules; the
/// reason then says why not next to them.
pub fn decide(topo: &Topology, loads: &[NodeLoad], req: &AutoRequest) -> Result<AutoDecision, Refusal> {
    let Some(near) = &req.near else { return decide_by_rules(topo, loads, req) };
    let allowed_cpus = topo.allowed.cpus.difference(&req.reserve);
    if req.cpus == 0 {
        return Err(Refusal("--cpus must be at least 1".into()));
    }
    if !near.required {
        // A job larger than the machine waits, devices or not.
        decide_by_rules(topo, loads, &AutoRequest { near: None, ..req.clone() })?;
    }
    match super::near::decide_near(topo, loads, req, near, &allowed_cpus) {
        Ok(d) => Ok(d),
        Err(why) => {
            let mut d = decide_by_rules(topo, loads, req)?;
            d.reason = format!("{why}: placed as without them: {}", d.reason);
            Ok(d)
        }
    }
}

/// The rules alone (the devices left aside).
fn decide_by_rules(topo: &Topology, loads: &[NodeLoad], req: &AutoRequest) -> Result<AutoDecision, Refusal> {
    let allowed_cpus = topo.allowed.cpus.difference(&req.reserve);
    let usable = |l: &NodeLoad| l.idle_cpus.intersection(&allowed_cpus);
    let load_of = |n: u32| loads.iter().find(|l| l.node == n);
    let mem_nodes = |n: u32| -> NodeSet { memory_for(topo, &std::iter::once(n).collect()) };
    let free_of = |nodes: &NodeSet| -> u64 { nodes.iter().filter_map(&load_of).map(|l| l.free_bytes).sum() };
    let cpu_nodes: Vec<&NodeLoad> =
        loads.iter().filter(|l| topo.node(l.node).is_some_and(|n| n.has_cpu) && !usable(l).is_empty()).collect();

    let total_idle: usize = cpu_nodes.iter().map(|l| usable(l).len()).sum();
    let total_free = free_of(&ordinary_memory(topo));
    if req.cpus == 0 {
        return Err(Refusal("--cpus must be at least 1".into()));
    }
    if (req.cpus as usize) > total_idle || req.mem_bytes > total_free {
        return Err(Refusal(format!(
            "the job needs {} CPUs and {} but the machine has {} idle CPUs (after --reserve and the cpuset) and {} free: keep it pending",
            req.cpus,
            gib(req.mem_bytes),
            total_idle,
            gib(total_free)
        )));
    }

    // Rules 1 and 2: one node with enough idle CPUs.
    let mut fits: Vec<(&NodeLoad, NodeSet, u64)> = cpu_nodes
        .iter()
        .filter(|l| usable(l).len() >= req.cpus as usize)
        .map(|l| {
            let m = mem_nodes(l.node);
            let free = free_of(&m);
            (*l, m, free)
        })
        .collect();
    // Nodes with their own memory before memory-less ones; then fewest jobs
    // numakit placed, then most free memory; ties to the lower node id.
    let own = |x: &(&NodeLoad, NodeSet, u64)| x.1.contains(x.0.node);
    fits.sort_by(|a, b| {
        own(b).cmp(&own(a)).then(a.0.placed.cmp(&b.0.placed)).then(b.2.cmp(&a.2)).then(a.0.node.cmp(&b.0.node))
    });
    if let Some(first) = fits.first() {
        let (l, m, free) = first;
        let local = own(first);
        let cpus = topo.cpus_of_nodes(&std::iter::once(l.node).collect()).intersection(&allowed_cpus);
        let rule = if *free >= req.mem_bytes { Rule::OneNode } else { Rule::OneNodePreferMemory };
        let (mode, nodes) = match rule {
            Rule::OneNode => (MemMode::Bind, m.clone()),
            _ => {
                let first = m.first().map(|f| std::iter::once(f).collect()).unwrap_or_default();
                (
                    if m.len() == 1 { MemMode::Preferred } else { MemMode::PreferredMany },
                    if m.len() == 1 { first } else { m.clone() },
                )
            }
        };
        // The nodes of the chosen kind (with memory of their own, or not).
        let kind = fits.iter().filter(|x| own(x) == local).count();
        let reason = match (rule, local) {
            (Rule::OneNode, true) => format!(
                "node {} has {} idle CPUs (need {}) and {} free (need {}), the most free memory of the {} node(s) with {}enough idle CPUs",
                l.node,
                usable(l).len(),
                req.cpus,
                gib(*free),
                gib(req.mem_bytes),
                kind,
                if kind < fits.len() { "memory of their own and " } else { "" }
            ),
            (Rule::OneNode, false) => format!(
                "node {} has {} idle CPUs (need {}) and {}: {}, {} free (need {}); no node with memory of its own has {} idle CPUs",
                l.node,
                usable(l).len(),
                req.cpus,
                no_memory(topo, l.node),
                memory_source(topo, l.node, m),
                gib(*free),
                gib(req.mem_bytes),
                req.cpus
            ),
            (_, true) => format!(
                "no node with {} idle CPUs has {} free (node {} has the most: {}): CPUs bound to node {}, memory preferred there and spilling to other nodes",
                req.cpus,
                gib(req.mem_bytes),
                l.node,
                gib(*free),
                l.node
            ),
            (_, false) => format!(
                "no node with memory of its own has {} idle CPUs: node {} has them and {}: {}, {} free (need {}); CPUs bound to node {}, memory preferred on node{} {} and spilling to other nodes",
                req.cpus,
                l.node,
                no_memory(topo, l.node),
                memory_source(topo, l.node, m),
                gib(*free),
                gib(req.mem_bytes),
                l.node,
                if nodes.len() == 1 { "" } else { "s" },
                nodes.to_list()
            ),
        };
        return Ok(AutoDecision {
            rule,
            nodes: std::iter::once(l.node).collect(),
            plan: Plan { cpus: Some(cpus), memory: Some(MemPolicy { mode, nodes, balancing: false }) },
            reason,
        });
    }

    // Rule 3: the nearest group of nodes. From every start node, add the
    // nearest nodes (ties: more idle CPUs, then lower id) until the idle
    // CPUs suffice; keep the group with the smallest largest distance, then
    // the smallest distance sum, then the most free memory. (Memory-less
    // nodes are not put last here: in the simulator that lost throughput
    // on 4 of its 68 farms with memory-less nodes and won on none.)
    let memless = |n: u32| !mem_nodes(n).contains(n);
    let mut best: Option<(u32, u32, u64, NodeSet)> = None;
    for start in &cpu_nodes {
        let mut others: Vec<&&NodeLoad> = cpu_nodes.iter().filter(|l| l.node != start.node).collect();
        others.sort_by_key(|l| {
            (topo.distance(start.node, l.node).unwrap_or(u32::MAX), std::cmp::Reverse(usable(l).len()), l.node)
        });
        let mut group: NodeSet = std::iter::once(start.node).collect();
        let mut idle = usable(start).len();
        for o in others {
            if idle >= req.cpus as usize {
                break;
            }
            group.insert(o.node);
            idle += usable(o).len();
        }
        if idle < req.cpus as usize {
            continue;
        }
        let ids = group.to_vec();
        let mut maxd = 0;
        let mut sumd = 0;
        for &a in &ids {
            for &b in &ids {
                let d = topo.distance(a, b).unwrap_or(u32::MAX / 4);
                maxd = maxd.max(d);
                sumd += d;
            }
        }
        let mem: NodeSet = ids.iter().fold(NodeSet::new(), |acc, &n| acc.union(&mem_nodes(n)));
        let free = free_of(&mem);
        let key = (maxd, sumd, std::cmp::Reverse(free));
        if best.as_ref().is_none_or(|(bm, bs, bf, _)| key < (*bm, *bs, std::cmp::Reverse(*bf))) {
            best = Some((maxd, sumd, free, group));
        }
    }
    let Some((maxd, _, free, group)) = best else {
        return Err(Refusal(format!("no group of nodes has {} idle CPUs", req.cpus)));
    };
    let mem: NodeSet = group.iter().fold(NodeSet::new(), |acc, n| acc.union(&mem_nodes(n)));
    let cpus = topo.cpus_of_nodes(&group).intersection(&allowed_cpus);
    let mode = if free >= req.mem_bytes { MemMode::Bind } else { MemMode::PreferredMany };
    let mut reason = format!(
        "no single node has {} idle CPUs: nodes {} are the nearest group with enough (largest distance {}), {} free there (need {})",
        req.cpus,
        group.to_list(),
        maxd,
        gib(free),
        gib(req.mem_bytes)
    );
    for n in group.iter().filter(|&n| memless(n)) {
        reason.push_str(&format!("; node {n} has {}: {}", no_memory(topo, n), memory_source(topo, n, &mem_nodes(n))));
    }
    Ok(AutoDecision {
        rule: Rule::NodeGroup,
        nodes: group,
        plan: Plan { cpus: Some(cpus), memory: Some(MemPolicy { mode, nodes: mem, balancing: false }) },
        reason,
    })
}

#[cfg(test)]
mod tests;
