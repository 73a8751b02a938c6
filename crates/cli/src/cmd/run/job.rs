//! `numakit run --auto` as a batch job's wrapper starts it
//! (contrib/batch: HTCondor, LSF, PBS), with any of `--experiment`,
//! `--chosen`, `--default-mode`, `--outcomes`: the job's mode is its own
//! choice, else the experiment's arm, else the site's default
//! (`numakit::experiment::assign`, as in Slurm's plugin); this process is
//! placed with it; and with `--outcomes` numakit stays the job's parent
//! and appends the job's outcome record (step `job`) when it ends.
//!
//! An experiment never fails a job: a bad word, an unreadable key or a
//! job without a batch system's id is one line on stderr (once per host
//! and user, through the ledger's note) and the job runs with the default.

use std::path::Path;

use numakit::batch::ledger::{ArmTag, Ledger};
use numakit::batch::{self, JobMode, TaskInfo};
use numakit::experiment::assign::{self, Subject};
use numakit::experiment::guard::Guards;
use numakit::experiment::ids::{self, JobIds};
use numakit::experiment::outcome::{step_status, Measured, Step};
use numakit::experiment::policy::assign::{assign_with_files, Files, Start};
use numakit::experiment::policy::JobFacts;
use numakit::experiment::{key, Assignment, Design, Hardware, Numa, Placement, StepOutcome};
use numakit::place::MemMode;
use numakit::sets::CpuSet;
use numakit::stats::cgroup::{CgroupCounters, CgroupDir};
use numakit::stats::usage::CgroupUsage;
use numakit::sys::SysRoot;
use numakit::topo::Topology;
use numakit::units::unix_now;

use super::super::common::{exec, exit_like, supervise};
use super::{job_cpus, place_auto, site, Auto};
use crate::cli::RunArgs;
use crate::Failure;

/// The file the records go to, in `--outcomes DIR`.
const OUTCOMES: &str = "numakit-outcomes.jsonl";

fn mode(typed: &Option<String>, what: &str) -> Result<Option<JobMode>, Failure> {
    typed.as_deref().map(|t| JobMode::parse(t).map_err(|e| Failure::usage(format!("{what}: {e}")))).transpose()
}

/// A file the batch system names (HTCondor's `_CONDOR_JOB_AD`), through
/// the one reader of named files: a regular file, bounded; unreadable is
/// absent.
fn read_small(path: &str) -> Option<String> {
    numakit::files::read_named_text(std::path::Path::new(path)).ok()
}

/// The job's mode and arm, and the notes for the log: the site's policy
/// and guards (`--policy`, `--guard`), else its experiment, else the
/// default.
fn assignment(
    args: &RunArgs,
    chosen: Option<&JobMode>,
    default: &JobMode,
    ids: Option<&JobIds>,
    facts: &JobFacts,
    host: &str,
    start_unix: f64,
) -> (Assignment, Vec<String>) {
    let words: Vec<&str> = args.experiment.as_deref().map(|w| w.split_whitespace().collect()).unwrap_or_default();
    let plain = || assign::assign(None, Err(String::new()), None, chosen, default, &blank(host, start_unix)).0;
    let design = match Design::from_words(&words) {
        Ok(d) => d,
        Err(e) => return (plain(), vec![format!("--experiment: {e}: no experiment runs")]),
    };
    let files = Files { policy: args.policy.clone(), guards: args.guard.clone() };
    let Some(ids) = ids.filter(|_| design.is_some() || files.policy.is_some()) else {
        let what = design.as_ref().map(|d| format!("experiment {}", d.name));
        let what = what.or_else(|| files.policy.as_ref().map(|_| "--policy".to_string()));
        return (plain(), what.map(|w| format!("{w}: no batch system's job id here")).into_iter().collect());
    };
    let subject = Subject { cluster: ids.cluster.as_deref(), job: &ids.job, host, start_unix };
    let start = Start {
        subject: &subject,
        chosen,
        default,
        site: design.as_ref(),
        guards: &Guards::default(),
        // The wrappers run as the job's user: the key cannot be private to root.
        read_key: &|p| key::read_key(p, false),
        stop_present: &|p| p.exists(),
    };
    assign_with_files(&files, facts, &start)
}

/// What the policy's rules match the job on: its names, the CPUs the
/// batch system gave it, the memory it asked for (`--mem`), and in a
/// Slurm job its QOS and GPUs.
fn job_facts(args: &RunArgs, topo: &Topology, ids: Option<&JobIds>) -> JobFacts {
    let var = |k: &str| std::env::var(k).ok();
    let base = ids.map(JobFacts::from_ids).unwrap_or_default();
    let base = if ids.is_some_and(|i| i.batch_system == "slurm") { base.with_slurm_env(&var) } else { base };
    JobFacts {
        cpus: job_cpus(args, topo).ok().map(|c| c.0),
        mem_bytes: args.mem.as_deref().and_then(|m| numakit::units::parse_size(m).ok()),
        ..base
    }
}

fn blank(host: &str, start_unix: f64) -> Subject<'_> {
    Subject { cluster: None, job: "", host, start_unix }
}

/// This process's cgroup, when it is the job's own (`--job-cgroup`).
fn own_cgroup(sys: &SysRoot, args: &RunArgs) -> Result<Option<CgroupDir>, Failure> {
    if !args.job_cgroup {
        return Ok(None);
    }
    match numakit::procs::cgroup::read_path(sys, std::process::id() as i32) {
        Ok(Some(p)) if p != "/" => Ok(CgroupDir::resolve(sys, &p).ok()),
        _ => Err(Failure::usage("--job-cgroup: this process is in no cgroup v2 of its own")),
    }
}

/// Runs the job: see the module's text.
pub fn run(sys: &SysRoot, topo: &Topology, args: &RunArgs, socket: &Path) -> anyhow::Result<u8> {
    let chosen = mode(&args.chosen, "--chosen")?;
    let default = mode(&args.default_mode, "--default-mode")?.unwrap_or(JobMode::Auto);
    let cgroup = own_cgroup(sys, args)?;
    let var = |k: &str| std::env::var(k).ok();
    let ids = ids::from_env(&var, &read_small);
    let host = sys.read("proc/sys/kernel/hostname").ok().flatten().unwrap_or_default();
    let host = host.split('.').next().unwrap_or_default().to_string();
    let start_unix = unix_now();
    let ledger = Ledger::new(&args.ledger);
    let facts = job_facts(args, topo, ids.as_ref());
    let (a, notes) = assignment(args, chosen.as_ref(), &default, ids.as_ref(), &facts, &host, start_unix);
    for n in notes {
        if ledger.note_once(&n) {
            eprintln!("numakit: {n}");
        }
    }
    let pid = std::process::id() as i32;
    let by_cgroup = cgroup.as_ref().map(|c| c.path.clone());
    // Placed with the arm; an experiment's arm never fails the job.
    let given = match &a.mode {
        JobMode::Auto => {
            let run_unplaced = args.if_no_fit == "run" || a.source.by_site();
            match place_auto(sys, topo, args, socket, run_unplaced)? {
                Auto::Exit(code) => return Ok(code),
                Auto::Placed(d) => d.plan.and_then(|p| p.memory).map(|m| memory_text(m.mode, &m.nodes.to_list())),
                Auto::Unplaced => None,
            }
        }
        JobMode::None => None,
        m => {
            let (cpus, _) = job_cpus(args, topo)?;
            let task = TaskInfo {
                label: "run --auto".into(),
                cpus,
                mem_bytes: 0,
                reserve: CpuSet::new(),
                job_step: None,
                devices: super::super::common::task_devices(sys),
            };
            match batch::place_task(sys, &site(args, socket, None), m, &task, None) {
                Ok(p) => {
                    for w in p.warning.iter().chain(&p.ledger_note) {
                        eprintln!("numakit: {w}");
                    }
                    p.decision.plan.and_then(|p| p.memory).map(|m| memory_text(m.mode, &m.nodes.to_list()))
                }
                Err(e) if a.source.by_site() => {
                    eprintln!("numakit: {e}: the experiment's arm runs unplaced");
                    None
                }
                Err(e) => return Err(Failure::usage(e.to_string()).into()),
            }
        }
    };
    if a.experiment.is_some() || args.experiment.is_some() {
        let tag = ArmTag { experiment: a.experiment.clone(), arm: a.arm.clone(), source: a.source.name().into() };
        if let Err(e) = ledger.tag(sys, pid, "run --auto", None, tag) {
            eprintln!("numakit: {e}");
        }
    }
    // No daemon to keep an assigned `none` job from is the site's affair,
    // not the job's: said only when the job or the site's default asked.
    let exclude_none = |pid: i32| {
        if a.mode == JobMode::None {
            let w = batch::exclude_from_daemon(socket, pid, by_cgroup.as_deref());
            if let (Some(w), false) = (w, a.source.by_site()) {
                eprintln!("numakit: {w}");
            }
        }
    };
    let Some(dir) = &args.outcomes else {
        exclude_none(pid);
        return exec(&args.command);
    };
    let placement = Placement {
        mode: a.mode.to_string(),
        cpus: numakit::act::get_affinity(numakit::act::Pid::SELF).ok().map(|c| c.to_list()),
        memory: Some(given.unwrap_or_else(|| "unchanged".into())),
    };
    let counters0 = cgroup.as_ref().and_then(|c| CgroupCounters::read(sys, c).ok());
    let usage0 = cgroup.as_ref().and_then(|c| CgroupUsage::read(sys, c).ok().flatten());
    let ended = supervise(&args.command, exclude_none)?;
    let end_unix = unix_now();
    let usage = cgroup.as_ref().and_then(|c| CgroupUsage::read(sys, c).ok().flatten());
    // The job's cgroup over the job's life; else what the job and the
    // processes it waited for used, as wait4 says.
    let cpu = match (usage0.and_then(|u| u.cpu), usage.and_then(|u| u.cpu)) {
        (Some(s), Some(e)) => (
            e.user_usec.saturating_sub(s.user_usec) as f64 * 1e-6,
            e.system_usec.saturating_sub(s.system_usec) as f64 * 1e-6,
            e.source,
        ),
        _ => (ended.cpu.0, ended.cpu.1, "rusage"),
    };
    let numa = match (&cgroup, counters0) {
        (Some(c), Some(start)) => CgroupCounters::read(sys, c).ok().map(|end| Numa {
            locality: None,
            node_bytes: Vec::new(),
            counters_delta: end.delta(&start),
        }),
        _ => None,
    };
    match (ids, Hardware::read(sys)) {
        (Some(ids), Ok(hardware)) => {
            // The cluster the arm was drawn for: the experiment's cluster= first.
            let ids = JobIds { cluster: cluster_of(args).or(ids.cluster.clone()), ..ids };
            let measured = Measured {
                start_unix,
                end_unix,
                cpu: Some(cpu),
                cpus: job_cpus(args, topo).ok().map(|c| c.0),
                peak_memory_bytes: usage.and_then(|u| u.peak_bytes),
                status: step_status(&[ended.status]),
            };
            let step = Step { step: "job", host: &host, placement, measured, numa };
            let record = StepOutcome::new(&ids, &a, step, hardware);
            if let Err(e) = numakit::files::append_line(&dir.join(OUTCOMES), &record.to_line()) {
                eprintln!("numakit: outcome to {}: {e}", numakit::text::path(&dir.join(OUTCOMES)));
            }
        }
        (None, _) => eprintln!("numakit: --outcomes: no batch system's job id here: no outcome record"),
        (_, Err(e)) => eprintln!("numakit: --outcomes: the host's hardware: {e}"),
    }
    Ok(exit_like(ended.status))
}

/// The experiment's `cluster=`, where the batch system names none.
fn cluster_of(args: &RunArgs) -> Option<String> {
    let words: Vec<&str> = args.experiment.as_deref()?.split_whitespace().collect();
    Design::from_words(&words).ok().flatten().and_then(|d| d.cluster)
}

/// `bind 0`, `interleave 0-1`, `local`: a memory policy as the record says it.
fn memory_text(mode: MemMode, nodes: &str) -> String {
    if mode == MemMode::Local {
        "local".into()
    } else {
        format!("{} {nodes}", mode.name())
    }
}
