//! Placing one task of a batch job: [`decide_task`] is the pure decision
//! from the machine, the CPUs the task was given and the nodes' loads;
//! [`place_task`] reads those, decides, records the placement in the job
//! ledger and applies it to the calling process (the task itself, just
//! before it execs the job's program, which inherits it); and
//! [`exclude_from_daemon`] keeps a `none` job out of a running daemon's
//! reach.
//!
//! The CPUs a batch system gave are never widened: when the task's
//! affinity is narrower than the machine's CPUs (Slurm's `task/affinity`
//! or `task/cgroup` bound it, a cpuset confines it), every mode chooses
//! within them, all of them counted as the job's own; when it is the whole
//! machine (`task/none`, HTCondor's default), `auto` chooses among all
//! nodes from their load and the ledger.
//!
//! The steps of one job place themselves where the job already is: the
//! live placements of the job's other steps on this host (a Slurm batch
//! step, which holds the job's CPUs while its script runs `srun`) are not
//! load a step competes with, and an unbound `auto` step is placed inside
//! the nodes they hold ([`within_job`]), as a binding would place it.

use std::time::Duration;

use super::devices::JobDevices;
use super::ledger::{Claim, Entry, JobStep, Ledger, Locked, Recorded, LOCK_WAIT};
use super::load::{self, LoadSource};
use super::mode::{JobMode, Site};
use crate::act;
use crate::daemon::ctl::{Client, ClientError};
use crate::daemon::protocol::Target;
use crate::place::auto::{self, memory_for, AutoRequest, NodeLoad};
use crate::place::{MemMode, MemPolicy, Plan};
use crate::sets::{numactl::SetSpec, CpuSet, Node, NodeSet};
use crate::sys::SysRoot;
use crate::topo::Topology;

/// One task as the batch system describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskInfo {
    /// For people and the ledger: `slurm job 42.0 task 1`.
    pub label: String,
    /// CPUs the task needs (Slurm's `--cpus-per-task`; at least 1).
    pub cpus: u32,
    /// Memory the task needs, bytes (0: not said).
    pub mem_bytes: u64,
    /// CPUs never given to it (kept for the system).
    pub reserve: CpuSet,
    /// The batch job and step it belongs to (`None`: a job of its own).
    pub job_step: Option<JobStep>,
    /// The devices it works with (its GPUs, NICs: [`super::devices`];
    /// empty: none named), already chosen for this task of the step
    /// ([`JobDevices::for_task`]).
    pub devices: JobDevices,
}

/// A job that cannot be placed as asked: the job fails with this line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JobError {
    /// What the user asked for cannot be had (bad or unsatisfiable
    /// value).
    #[error("{0}")]
    Request(String),
    /// `auto` finds no node(s) with the idle CPUs and free memory the
    /// task needs now (a wrapper may wait and try again).
    #[error("{0}")]
    NoFit(String),
    /// Reading or changing the system failed.
    #[error("{0}")]
    System(String),
}

/// What [`decide_task`] chose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskDecision {
    /// The rule of `auto` that chose (`None` for the other modes).
    pub rule: Option<auto::Rule>,
    /// What to apply (`None`: nothing).
    pub plan: Option<Plan>,
    /// The nodes chosen (empty: none).
    pub nodes: NodeSet,
    /// Why, in one sentence with the numbers.
    pub reason: String,
    /// What the ledger records (empty: nothing to record).
    pub claims: Vec<Claim>,
}

/// What [`place_task`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placed {
    /// The decision applied.
    pub decision: TaskDecision,
    /// Something the user should read although the task runs (one line).
    pub warning: Option<String>,
    /// What is wrong with the host's job ledger (it could not be locked,
    /// read or written: the placement did not know, or was not recorded
    /// for, the other jobs), one line: the site's affair, for its log,
    /// apart from what the job's user should read.
    pub ledger_note: Option<String>,
}

/// Decides a task's placement (pure). `given` is the task's CPU affinity
/// now; `loads` the nodes' loads with the ledger's claims already taken
/// off (see [`load::with_claims`]); with a `given` narrower than the
/// machine's CPUs the task is bound already and only `given` is used, all
/// of it counted idle (the batch system gave those CPUs to this job).
pub fn decide_task(
    topo: &Topology,
    mode: &JobMode,
    given: &CpuSet,
    loads: &[NodeLoad],
    task: &TaskInfo,
) -> Result<TaskDecision, JobError> {
    let given = given.intersection(&topo.allowed.cpus);
    if given.is_empty() {
        return Err(JobError::System(format!(
            "{}: its CPUs are outside this host's allowed CPUs ({})",
            task.label,
            topo.allowed.cpus.to_list()
        )));
    }
    let given_nodes = topo.nodes_of_cpus(&given);
    let bound = is_bound(topo, &given);
    let none =
        |reason: String| TaskDecision { rule: None, plan: None, nodes: NodeSet::new(), reason, claims: Vec::new() };
    match mode {
        JobMode::None => Ok(none("--numa=none: not placed".into())),
        JobMode::Local => Ok(TaskDecision {
            rule: None,
            plan: Some(Plan {
                cpus: None,
                memory: Some(MemPolicy { mode: MemMode::Local, nodes: NodeSet::new(), balancing: false }),
            }),
            nodes: given_nodes.clone(),
            reason: format!("--numa=local: memory from the node each thread runs on, CPUs {}", given.to_list()),
            claims: Vec::new(),
        }),
        JobMode::Interleave => {
            let mem = memory_for(topo, &given_nodes);
            Ok(TaskDecision {
                rule: None,
                plan: Some(Plan {
                    cpus: None,
                    memory: Some(MemPolicy { mode: MemMode::Interleave, nodes: mem.clone(), balancing: false }),
                }),
                nodes: mem.clone(),
                reason: format!(
                    "--numa=interleave: memory interleaved over nodes {}, those of its CPUs {}",
                    mem.to_list(),
                    given.to_list()
                ),
                claims: Vec::new(),
            })
        }
        JobMode::Nodes(list) => {
            let typed = format!("--numa=nodes:{list}");
            let nodes = SetSpec::<Node>::parse(list)
                .map_err(|e| JobError::Request(format!("{typed}: {e}")))?
                .resolve(&topo.allowed.nodes, None)
                .map_err(|e| JobError::Request(format!("{typed}: {e}")))?;
            if let Some(out) = nodes.iter().find(|n| !given_nodes.contains(*n)) {
                return Err(JobError::Request(format!(
                    "{typed}: node {out} is outside this task's allocation (CPUs {} on nodes {})",
                    given.to_list(),
                    given_nodes.to_list()
                )));
            }
            let cpus = topo.cpus_of_nodes(&nodes).intersection(&given);
            let mem = memory_for(topo, &nodes);
            let claims = spread_claims(topo, &nodes, task);
            Ok(TaskDecision {
                rule: None,
                plan: Some(Plan {
                    cpus: Some(cpus.clone()),
                    memory: Some(MemPolicy { mode: MemMode::Bind, nodes: mem.clone(), balancing: false }),
                }),
                nodes,
                reason: format!("{typed}: CPUs {} and memory on nodes {}", cpus.to_list(), mem.to_list()),
                claims,
            })
        }
        JobMode::Auto | JobMode::Devices => {
            // Bound: every CPU given counts idle (they are this job's), and
            // only those are candidates. Not bound: the host's loads.
            let loads: Vec<NodeLoad> = if bound {
                loads
                    .iter()
                    .map(|l| NodeLoad {
                        idle_cpus: topo.node(l.node).map_or_else(CpuSet::new, |n| n.cpus.intersection(&given)),
                        ..l.clone()
                    })
                    .collect()
            } else {
                loads.to_vec()
            };
            let reserve = topo.allowed.cpus.difference(&given).union(&task.reserve);
            let cpus = task.cpus.max(1);
            let near = task.devices.near(*mode == JobMode::Devices);
            // What the devices' mapping left out, said once, after the reason.
            let unknown = match (&task.devices.unknown, &near) {
                (Some(u), None) => format!(" (devices not known: {u}: placed as without them)"),
                (Some(u), Some(_)) => format!(" (devices not known: {u})"),
                (None, None) if *mode == JobMode::Devices => " (the job names no devices: placed as auto)".into(),
                _ => String::new(),
            };
            let req = AutoRequest { cpus, mem_bytes: task.mem_bytes, reserve, near };
            match auto::decide(topo, &loads, &req) {
                Ok(d) => {
                    let claims = spread_claims(topo, &d.nodes, &TaskInfo { cpus, ..task.clone() });
                    let within = if bound { format!(" (within its CPUs {})", given.to_list()) } else { String::new() };
                    Ok(TaskDecision {
                        rule: Some(d.rule),
                        plan: Some(d.plan),
                        nodes: d.nodes,
                        reason: format!("--numa={mode}{within}: {}{unknown}", d.reason),
                        claims,
                    })
                }
                Err(refusal) => Err(JobError::NoFit(format!("--numa={mode}: {refusal}{unknown}"))),
            }
        }
    }
}

/// Whether `given` is narrower than every CPU of the machine: an affinity
/// or a cpuset the batch system set (the cpuset is also what the
/// topology's allowed set was read from).
fn is_bound(topo: &Topology, given: &CpuSet) -> bool {
    given.intersection(&topo.allowed.cpus) != topo.cpus_of_nodes(&topo.node_ids())
}

/// The CPUs an `auto` task of a job that is already placed on this host
/// chooses from: those of `given` on the nodes the job's other steps hold
/// (`job_cpus`, [`Prepared::job_cpus`]), when the batch system did not
/// bind the task (a binding is the batch system's own word on where the
/// step runs) and they are enough for its `cpus`. `None`: choose as
/// without them.
pub fn within_job(topo: &Topology, given: &CpuSet, job_cpus: &CpuSet, cpus: u32) -> Option<CpuSet> {
    if job_cpus.is_empty() || is_bound(topo, given) {
        return None;
    }
    let inside = given.intersection(job_cpus).intersection(&topo.allowed.cpus);
    (inside.len() >= cpus.max(1) as usize).then_some(inside)
}

/// The ledger's claims of a task on `nodes`: its CPUs and memory spread
/// evenly (the remainder on the first nodes).
fn spread_claims(topo: &Topology, nodes: &NodeSet, task: &TaskInfo) -> Vec<Claim> {
    let ids: Vec<u32> = nodes.iter().filter(|n| topo.node(*n).is_some()).collect();
    let k = ids.len().max(1) as u64;
    ids.iter()
        .enumerate()
        .map(|(i, &node)| Claim {
            node,
            cpus: (u64::from(task.cpus) / k + u64::from((i as u64) < u64::from(task.cpus) % k)) as u32,
            mem_bytes: task.mem_bytes / k + u64::from((i as u64) < task.mem_bytes % k),
        })
        .collect()
}

/// What a placement reads before deciding, with the ledger locked (so no
/// other placement on the host records between the reading and
/// [`commit`]).
#[derive(Debug)]
pub struct Prepared<'a> {
    /// The machine.
    pub topo: Topology,
    /// The CPUs the calling process runs on now (the whole allowed set
    /// when `sys` is not the live system).
    pub given: CpuSet,
    /// The nodes' loads, the ledger's claims taken off.
    pub loads: Vec<NodeLoad>,
    /// Whose view of the load it is ([`load::HostLoad::source`]).
    pub source: String,
    /// The CPUs of the nodes where the job's other steps hold live
    /// placements on this host (empty: none, or no job given). Their
    /// claims are not in `loads`: they are the job's own.
    pub job_cpus: CpuSet,
    /// What the caller should show although the task can be placed.
    pub warnings: Vec<String>,
    /// What kept the ledger from being used (see [`Placed::ledger_note`]).
    pub ledger_notes: Vec<String>,
    /// The job and step the placement is recorded under ([`commit`]).
    job_step: Option<JobStep>,
    lock: Option<Locked<'a>>,
}

/// Reads what a placement of the calling process needs: the machine, its
/// CPUs, the nodes' loads (the daemon's view at `site.socket`, else as
/// `site.sample` says) and, on the live system, the placements in
/// `ledger` (locked until the result is dropped or committed). The
/// placements of `job_step`'s other steps are set apart as the job's own
/// ([`Prepared::job_cpus`]); those of its own step (its sibling tasks)
/// count as every other job's do. A ledger that cannot be used costs only
/// the coordination: a warning.
pub fn prepare<'a>(
    sys: &SysRoot,
    site: &Site,
    ledger: &'a Ledger,
    job_step: Option<&JobStep>,
) -> Result<Prepared<'a>, JobError> {
    let sys_err = |e: String| JobError::System(e);
    let topo = Topology::read_nodes_only(sys).map_err(|e| sys_err(e.to_string()))?;
    // The measured load before taking the lock: it is a snapshot either
    // way, and what concurrent starts must agree on is the ledger, so the
    // lock is held only to read the ledger, decide, record and apply.
    let host = load::current(sys, &topo, &LoadSource { daemon: Some(&site.socket), sample: site.sample })
        .map_err(|e| sys_err(e.to_string()))?;
    let mut warnings = Vec::new();
    let mut ledger_notes = Vec::new();
    let (given, lock) = if sys.is_live() {
        let given = act::get_affinity(act::Pid::SELF).map_err(|e| sys_err(e.to_string()))?;
        let lock = match ledger.lock(LOCK_WAIT) {
            Ok(l) => Some(l),
            Err(e) => {
                ledger_notes.push(format!("{e}: placed without knowing the other jobs' placements"));
                None
            }
        };
        (given, lock)
    } else {
        (topo.allowed.cpus.clone(), None)
    };
    let entries = match &lock {
        Some(l) => l.live(sys).unwrap_or_else(|e| {
            ledger_notes.push(e.to_string());
            Vec::new()
        }),
        None => Vec::new(),
    };
    // SAFETY: geteuid has no preconditions.
    let (own, entries) = own_steps(entries, job_step, unsafe { libc::geteuid() });
    let job_nodes: NodeSet = own.iter().flat_map(|e| e.claims.iter().map(|c| c.node)).collect();
    let job_cpus = topo.cpus_of_nodes(&job_nodes);
    warnings.extend(host.warning);
    let mut loads = load::with_claims(&topo, &host.loads, &load::claims_of(sys, &topo, &entries));
    // The daemon's reserved CPUs are never idle for a job.
    for l in &mut loads {
        l.idle_cpus = l.idle_cpus.difference(&host.reserved);
    }
    let job_step = job_step.cloned();
    Ok(Prepared { topo, given, loads, source: host.source, job_cpus, warnings, ledger_notes, job_step, lock })
}

/// The ledger's live entries split into the placements of `job_step`'s
/// other steps and everybody else's (pure). A job's steps run as its
/// user: an entry written by another user (root aside) is never taken for
/// the job's own, whatever job it names.
fn own_steps(entries: Vec<Recorded>, job_step: Option<&JobStep>, me: u32) -> (Vec<Entry>, Vec<Entry>) {
    let (own, others): (Vec<Recorded>, Vec<Recorded>) = entries.into_iter().partition(|r| {
        (r.owner == me || r.owner == 0)
            && matches!((job_step, &r.entry.job_step), (Some(mine), Some(theirs)) if mine.is_sibling_step(theirs))
    });
    let plain = |v: Vec<Recorded>| v.into_iter().map(|r| r.entry).collect();
    (plain(own), plain(others))
}

/// Records `decision` in the ledger (when it claims anything and the
/// ledger is held) as the calling process's placement, of the job step
/// given to [`prepare`], then applies it to the calling process. If applying fails the
/// record is taken back. Returns the warnings to show and what kept the
/// ledger from being used.
pub fn commit(
    sys: &SysRoot,
    prepared: Prepared<'_>,
    decision: &TaskDecision,
    label: &str,
) -> Result<(Vec<String>, Vec<String>), JobError> {
    let (warnings, mut ledger_notes) = (prepared.warnings, prepared.ledger_notes);
    let pid = std::process::id() as i32;
    let mut recorded = None;
    if let (Some(l), false) = (&prepared.lock, decision.claims.is_empty()) {
        match crate::procs::read_proc_stat(sys, pid) {
            Ok(Some(st)) => {
                let e = Entry {
                    pid,
                    start_ticks: st.start_ticks,
                    job: label.to_string(),
                    claims: decision.claims.clone(),
                    placed_unix: crate::units::unix_now() as u64,
                    job_step: prepared.job_step.clone(),
                    arm: None,
                };
                match l.record(&e) {
                    Ok(()) => recorded = Some(l),
                    Err(x) => ledger_notes.push(format!("{x}: the placement is not recorded")),
                }
            }
            _ => ledger_notes.push(format!("cannot read /proc/{pid}/stat: the placement is not recorded")),
        }
    }
    if let Some(plan) = &decision.plan {
        if let Err(e) = plan.apply() {
            if let Some(l) = recorded {
                let _ = l.remove(pid);
            }
            return Err(JobError::System(format!("cannot apply the placement ({}): {e}", decision.reason)));
        }
    }
    Ok((warnings, ledger_notes))
}

/// Places the calling process, a task of a batch job, as `mode` asks
/// ([`prepare`], [`decide_task`], [`commit`]); an unbound `auto` task of a
/// job whose other steps are placed on this host is placed among their
/// nodes ([`within_job`]); `none` registers the process and `cgroup` with
/// the daemon instead ([`exclude_from_daemon`]).
pub fn place_task(
    sys: &SysRoot,
    site: &Site,
    mode: &JobMode,
    task: &TaskInfo,
    cgroup: Option<&str>,
) -> Result<Placed, JobError> {
    if *mode == JobMode::None {
        let warning = exclude_from_daemon(&site.socket, std::process::id() as i32, cgroup);
        let decision = decide_task_none();
        return Ok(Placed { decision, warning, ledger_note: None });
    }
    let ledger = Ledger::new(&site.ledger);
    let prepared = prepare(sys, site, &ledger, task.job_step.as_ref())?;
    let inside = match mode {
        JobMode::Auto => within_job(&prepared.topo, &prepared.given, &prepared.job_cpus, task.cpus),
        _ => None,
    };
    let given = inside.as_ref().unwrap_or(&prepared.given);
    let mut decision = decide_task(&prepared.topo, mode, given, &prepared.loads, task)?;
    if let Some(c) = &inside {
        decision.reason =
            format!("{} (CPUs {}: where its job's other steps are placed here)", decision.reason, c.to_list());
    }
    let (warnings, notes) = commit(sys, prepared, &decision, &task.label)?;
    let line = |v: Vec<String>| (!v.is_empty()).then(|| v.join("; "));
    Ok(Placed { decision, warning: line(warnings), ledger_note: line(notes) })
}

fn decide_task_none() -> TaskDecision {
    TaskDecision {
        rule: None,
        plan: None,
        nodes: NodeSet::new(),
        reason: "--numa=none: not placed, excluded from the daemon".into(),
        claims: Vec::new(),
    }
}

/// How long a `none` task waits for the daemon to answer its exclusion.
/// The daemon answers control requests between scans, so a request that
/// arrives during one waits for its end (a daemon's first scan after a
/// start reads every process: 1.8 s of CPU in the 4-node test bed guest,
/// more on a large host). The daemon itself gives up on a request after
/// 30 s, and `numakit ctl` waits as long: so does the task, which then runs
/// excluded instead of with a warning that the daemon was only busy.
pub const EXCLUDE_WAIT: Duration = Duration::from_secs(30);

/// Registers `pid`, and `cgroup` when given (so its child processes
/// follow), as excluded with the daemon at `socket` for as long as they
/// live (the daemon drops them when they end), waiting up to
/// [`EXCLUDE_WAIT`] for each answer. Returns a warning when it could not
/// (no daemon, or it refused or did not answer): a `none` job runs anyway.
pub fn exclude_from_daemon(socket: &std::path::Path, pid: i32, cgroup: Option<&str>) -> Option<String> {
    exclude_waiting(socket, pid, cgroup, EXCLUDE_WAIT)
}

fn exclude_waiting(socket: &std::path::Path, pid: i32, cgroup: Option<&str>, wait: Duration) -> Option<String> {
    let client = Client::new(socket, wait);
    let mut targets = vec![Target::Pid(pid)];
    if let Some(cg) = cgroup.and_then(|c| Target::parse(&format!("cgroup:{c}")).ok()) {
        targets.push(cg);
    }
    for t in targets {
        match client.exclude(t) {
            Ok(_) => {}
            Err(ClientError::NoDaemon(..)) => {
                return Some(format!(
                    "no numakit daemon answers at {}: nothing to exclude the job from",
                    socket.display()
                ))
            }
            Err(e) => return Some(format!("the daemon did not exclude the job: {e}")),
        }
    }
    None
}

#[cfg(test)]
mod tests;
