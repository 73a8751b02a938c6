//! Stand-in for the library's `numakit::place::job` until it is on main: the
//! same names and shapes (`JobMode::parse`, `Site::from_args`, `Site::check`,
//! `place_task`, `exclude_job`), so that switching the plugin over is changing
//! one `use`. Deliberately small: no host-local ledger (so `auto` sees no other
//! job's placement), no daemon registration for `none`. Placement decisions do
//! not belong in the plugin; this file goes away when the library has them.

use std::fmt;

use numakit::place::auto::{self, AutoRequest};
use numakit::place::{Context, MemMode, MemPolicy, OptKind, Plan, PolicyOpt, Request};
use numakit::sets::{CpuSet, NodeSet};
use numakit::sys::SysRoot;
use numakit::topo::Topology;

/// What a job asked for with `--numa=`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobMode {
    /// `auto`: the node(s) `run --auto`'s rules choose, CPUs and memory bound.
    Auto,
    /// `local`: memory on the node the task runs on.
    Local,
    /// `interleave`: memory interleaved over the allowed nodes.
    Interleave,
    /// `none`: left alone (and, with a daemon, excluded from it).
    None,
    /// `nodes:LIST`: CPUs and memory bound to these nodes (the list as typed).
    Nodes(String),
}

/// The modes, as the option's help and messages name them.
pub const MODES: &str = "auto, local, interleave, none or nodes:LIST";

impl JobMode {
    /// Reads a mode as a user or a site typed it.
    pub fn parse(text: &str) -> Result<JobMode, String> {
        Ok(match text {
            "auto" => JobMode::Auto,
            "local" => JobMode::Local,
            "interleave" => JobMode::Interleave,
            "none" => JobMode::None,
            _ => match text.strip_prefix("nodes:") {
                Some(list) => {
                    let nodes = NodeSet::parse_list(list).map_err(|e| format!("bad node list {list:?}: {e}"))?;
                    if nodes.is_empty() {
                        return Err("an empty node list".into());
                    }
                    JobMode::Nodes(list.to_string())
                }
                None => return Err(format!("not a NUMA mode (expected {MODES})")),
            },
        })
    }

    /// The mode's name without its list (what `allowed=` names).
    pub fn name(&self) -> &'static str {
        match self {
            JobMode::Auto => "auto",
            JobMode::Local => "local",
            JobMode::Interleave => "interleave",
            JobMode::None => "none",
            JobMode::Nodes(_) => "nodes",
        }
    }
}

impl fmt::Display for JobMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JobMode::Nodes(list) => write!(f, "nodes:{list}"),
            m => f.write_str(m.name()),
        }
    }
}

/// A site's settings, from the plugin's arguments in plugstack.conf.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Site {
    /// `default=MODE`: the mode of jobs that do not ask (default `none`).
    pub default: JobMode,
    /// `allowed=MODE,...`: the modes users may ask for (`None`: all).
    pub allowed: Option<Vec<String>>,
}

impl Site {
    /// Reads `default=MODE` and `allowed=MODE,MODE,...`; the error names the
    /// argument as written.
    pub fn from_args(args: &[String]) -> Result<Site, String> {
        let mut site = Site { default: JobMode::None, allowed: None };
        for arg in args {
            let (key, value) = arg.split_once('=').unwrap_or((arg.as_str(), ""));
            match key {
                "default" => {
                    site.default = JobMode::parse(value).map_err(|e| format!("plugin argument {arg:?}: {e}"))?
                }
                "allowed" => {
                    let mut names = Vec::new();
                    for name in value.split(',') {
                        let known = ["auto", "local", "interleave", "none", "nodes"].contains(&name);
                        if !known {
                            return Err(format!(
                                "plugin argument {arg:?}: {name:?} is not a NUMA mode (expected auto, local, interleave, none or nodes)"
                            ));
                        }
                        names.push(name.to_string());
                    }
                    site.allowed = Some(names);
                }
                _ => {
                    return Err(format!("plugin argument {arg:?}: unknown (expected default=MODE or allowed=MODE,...)"))
                }
            }
        }
        Ok(site)
    }

    /// Whether users may ask for `mode`; the error lists what they may ask for.
    pub fn check(&self, mode: &JobMode) -> Result<(), String> {
        match &self.allowed {
            Some(allowed) if !allowed.iter().any(|a| a == mode.name()) => {
                Err(format!("not allowed on this cluster (allowed: {})", allowed.join(", ")))
            }
            _ => Ok(()),
        }
    }
}

/// The task being placed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskInfo {
    /// Slurm job id.
    pub job_id: u32,
    /// Step id.
    pub step_id: u32,
    /// Task id on this host.
    pub local_task_id: u32,
    /// Tasks of the step on this host.
    pub local_tasks: u32,
    /// CPUs per task (Slurm's `--cpus-per-task`), if known.
    pub cpus_per_task: Option<u32>,
}

/// What a task was given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placed {
    /// The task's CPUs afterwards.
    pub cpus: CpuSet,
    /// Its memory policy afterwards (`None`: left alone).
    pub memory: Option<MemPolicy>,
}

impl fmt::Display for Placed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cpus {}, memory ", self.cpus.to_list())?;
        match &self.memory {
            None => f.write_str("unchanged"),
            Some(m) if m.mode == MemMode::Local => f.write_str("local"),
            Some(m) => write!(f, "{} {}", m.mode.name(), m.nodes.to_list()),
        }
    }
}

/// Decides the task's placement and applies it to the calling process (the
/// task, before exec: children and the exec'ed program inherit it).
pub fn place_task(sys: &SysRoot, site: &Site, mode: &JobMode, task: &TaskInfo) -> Result<Placed, String> {
    let _ = site;
    let topo = Topology::read_nodes_only(sys).map_err(|e| e.to_string())?;
    let own = topo.allowed.cpus.clone();
    let with_memory: NodeSet = topo.nodes.iter().filter(|n| n.has_memory).map(|n| n.id).collect();
    let plan = match mode {
        JobMode::None => Plan::default(),
        JobMode::Local => Plan { cpus: None, memory: Some(policy(MemMode::Local, NodeSet::new())) },
        JobMode::Interleave => {
            let nodes = with_memory.intersection(&topo.allowed.nodes);
            Plan { cpus: None, memory: Some(policy(MemMode::Interleave, nodes)) }
        }
        JobMode::Nodes(list) => {
            let opt = |kind| PolicyOpt { kind, value: Some(list.clone()) };
            let req = Request { opts: vec![opt(OptKind::CpuNodeBind), opt(OptKind::MemBind)], ..Request::default() };
            req.resolve(&Context { topo: &topo, sys, kernel: None }).map_err(|e| e.to_string())?
        }
        JobMode::Auto => {
            let cpus = task.cpus_per_task.unwrap_or(1).max(1);
            let req = AutoRequest { cpus, mem_bytes: 0, reserve: CpuSet::new() };
            auto::decide(&topo, &auto::loads_of(&topo, &own), &req).map_err(|e| e.to_string())?.plan
        }
    };
    plan.apply().map_err(|e| e.to_string())?;
    Ok(Placed { cpus: plan.cpus.unwrap_or(own), memory: plan.memory })
}

fn policy(mode: MemMode, nodes: NodeSet) -> MemPolicy {
    MemPolicy { mode, nodes, balancing: false }
}

/// Registers the job with a running numakit daemon as excluded. Stand-in: no
/// daemon protocol yet, so this only says so.
pub fn exclude_job(task: &TaskInfo) -> Result<(), String> {
    Err(format!("job {}: no registration with numakit's daemon yet (library pending)", task.job_id))
}
