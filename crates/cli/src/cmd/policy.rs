//! `numakit policy check|explain` and `numakit guard list|add|clear`: the
//! site's policy file and guard file (docs/policy.md). The parsing, the
//! matching and the guards are `numakit::experiment::{policy, guard}`'s;
//! this module reads the arguments, prints, and writes the guard file
//! through `files::write_atomic` under a lock.

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use numakit::experiment::guard::{self, Guard, Guards};
use numakit::experiment::policy::{self, Action, JobFacts};

use crate::Failure;

/// `numakit policy`.
#[derive(Debug, Args)]
pub struct PolicyArgs {
    #[command(subcommand)]
    pub action: PolicyAction,
}

/// The `policy` subcommands.
#[derive(Debug, Subcommand)]
pub enum PolicyAction {
    /// Check a policy file: exit 0 when it is valid (with what a site should know), 2 with the
    /// first error (file, line, column, the word as written).
    Check {
        /// The policy file.
        file: PathBuf,
    },
    /// Which rule a job meets and why, rule by rule, and what the job gets.
    Explain {
        /// The policy file.
        file: PathBuf,
        #[command(flatten)]
        job: JobArgs,
    },
}

/// A job as the batch system describes it when it starts.
#[derive(Debug, Args)]
pub struct JobArgs {
    /// Its partition (queue).
    #[arg(long)]
    partition: Option<String>,
    /// Its account.
    #[arg(long)]
    account: Option<String>,
    /// Its user.
    #[arg(long)]
    user: Option<String>,
    /// Its quality of service.
    #[arg(long)]
    qos: Option<String>,
    /// Its name.
    #[arg(long)]
    job_name: Option<String>,
    /// The CPUs it was given.
    #[arg(long)]
    cpus: Option<u32>,
    /// The memory it asked for (4G, 512M).
    #[arg(long, value_name = "SIZE")]
    mem: Option<String>,
    /// The GPUs it asked for.
    #[arg(long)]
    gpus: Option<u32>,
    /// A GRES item it asked for (gpu:a100:2); repeat for more.
    #[arg(long, value_name = "ITEM")]
    gres: Vec<String>,
    /// It is an element of a job array.
    #[arg(long)]
    array: bool,
}

/// `numakit guard`.
#[derive(Debug, Args)]
pub struct GuardArgs {
    /// The guard file the plugin's guard= and the wrappers' NUMAKIT_GUARD name.
    #[arg(long, value_name = "FILE", global = true, default_value = DEFAULT_GUARDS)]
    file: PathBuf,
    #[command(subcommand)]
    pub action: GuardAction,
}

/// Where guards live unless told otherwise.
pub const DEFAULT_GUARDS: &str = "/etc/numakit/guards";

/// The `guard` subcommands.
#[derive(Debug, Subcommand)]
pub enum GuardAction {
    /// List the guards in force.
    List,
    /// Stop an arm for a class: its jobs get the control from their next start.
    Add {
        /// The class (a policy rule's name).
        #[arg(long)]
        class: String,
        /// The arm to stop (auto, devices, local, interleave, daemon-on, ...).
        #[arg(long)]
        arm: String,
        /// Only this experiment's arm (default: whatever gives the arm).
        #[arg(long)]
        experiment: Option<String>,
        /// Why, kept as the guard's comment.
        #[arg(long)]
        why: Option<String>,
    },
    /// Take guards away: those of a class (and arm), or with --all every one.
    Clear {
        /// The class whose guards go.
        #[arg(long, required_unless_present = "all")]
        class: Option<String>,
        /// Only the guard of this arm.
        #[arg(long, requires = "class")]
        arm: Option<String>,
        /// Every guard.
        #[arg(long, conflicts_with = "class")]
        all: bool,
    },
}

/// Runs `numakit policy`.
pub fn run(args: &PolicyArgs) -> anyhow::Result<u8> {
    match &args.action {
        PolicyAction::Check { file } => {
            let p = policy::load(file).map_err(Failure::usage)?;
            let (rules, classes) =
                (p.rules.len(), p.rules.iter().map(|r| &r.class).collect::<std::collections::BTreeSet<_>>());
            outln!("{}: {rules} rules, {} classes: valid", numakit::text::path(file), classes.len());
            for w in p.warnings() {
                outln!("note: {w}");
            }
            Ok(0)
        }
        PolicyAction::Explain { file, job } => {
            let p = policy::load(file).map_err(Failure::usage)?;
            let facts = facts(job)?;
            for e in p.explain(&facts) {
                match &e.verdict {
                    Ok(why) if why.is_empty() => {
                        outln!("rule {} (line {}): matches (a rule for every job)", e.class, e.line)
                    }
                    Ok(why) => outln!("rule {} (line {}): matches: {}", e.class, e.line, why.join("; ")),
                    Err(why) => outln!("rule {} (line {}): no: {why}", e.class, e.line),
                }
            }
            match p.first_match(&facts) {
                Some(r) => outln!("class {}: {}", r.class, action_text(&r.action)),
                None => outln!("no rule matches: the job gets the site's experiment or default"),
            }
            Ok(0)
        }
    }
}

fn facts(j: &JobArgs) -> Result<JobFacts, Failure> {
    let mem = match &j.mem {
        Some(m) => Some(
            numakit::units::parse_size(m)
                .map_err(|e| Failure::usage(format!("--mem {}: {e}", numakit::text::quote(m))))?,
        ),
        None => None,
    };
    Ok(JobFacts {
        partition: j.partition.clone(),
        account: j.account.clone(),
        user: j.user.clone(),
        qos: j.qos.clone(),
        job_name: j.job_name.clone(),
        cpus: j.cpus,
        mem_bytes: mem,
        gpus: j.gpus,
        gres: j.gres.clone(),
        array: Some(j.array),
    })
}

/// What a rule gives, in words.
fn action_text(a: &Action) -> String {
    match a {
        Action::Mode { mode, holdout: None, .. } => format!("mode {mode}, no holdout"),
        Action::Mode { mode, holdout: Some(h), key, .. } => format!(
            "mode {mode}, {} of its jobs held out into {} (drawn with the key {})",
            h.share_text(),
            h.arm,
            key.as_deref().map_or_else(|| "none: nobody is held out".to_string(), numakit::text::path)
        ),
        Action::Experiment(d) => format!("experiment {} (arms {}, unit {})", d.name, d.arms_spec(), unit(d)),
    }
}

fn unit(d: &numakit::experiment::Design) -> &'static str {
    match d.unit {
        numakit::experiment::Unit::Job => "job",
        numakit::experiment::Unit::Host => "host",
        numakit::experiment::Unit::HostPeriod => "host-period",
    }
}

/// Runs `numakit guard`.
pub fn run_guard(args: &GuardArgs) -> anyhow::Result<u8> {
    let file = &args.file;
    match &args.action {
        GuardAction::List => {
            let g = guard::load(file).map_err(Failure::system)?;
            if g.0.is_empty() {
                outln!("no guards in {}", numakit::text::path(file));
            }
            for g in &g.0 {
                let exp = g.experiment.as_deref().map_or_else(String::new, |e| format!(" in experiment {e}"));
                let since = g.since.map_or_else(String::new, |t| format!(" since {}", numakit::units::utc_rfc3339(t)));
                let why = g.why.as_deref().map_or_else(String::new, |w| format!(": {w}"));
                outln!("class {}: arm {} stopped{exp}{since}{why}", g.class, g.arm);
            }
            Ok(0)
        }
        GuardAction::Add { class, arm, experiment, why } => {
            let new = Guard {
                class: class.clone(),
                experiment: experiment.clone(),
                arm: arm.clone(),
                since: Some(numakit::units::unix_now() as u64),
                why: why.clone(),
            };
            for (flag, v) in [("--class", Some(class)), ("--arm", Some(arm)), ("--experiment", experiment.as_ref())] {
                if let Some(v) = v.filter(|v| !guard::is_name(v)) {
                    let why = "1 to 64 letters, digits, '.', '_', '-' or ':'";
                    return Err(Failure::usage(format!("{flag} {}: {why}", numakit::text::quote(v))).into());
                }
            }
            update(file, |g| {
                g.0.retain(|o| !(o.class == new.class && o.arm == new.arm && o.experiment == new.experiment));
                g.0.push(new.clone());
            })?;
            outln!("class {class}: arm {arm} stopped from the next job start ({})", numakit::text::path(file));
            Ok(0)
        }
        GuardAction::Clear { class, arm, all } => {
            let mut gone = 0;
            update(file, |g| {
                let before = g.0.len();
                g.0.retain(|o| {
                    !(*all || (Some(&o.class) == class.as_ref() && arm.as_ref().is_none_or(|a| *a == o.arm)))
                });
                gone = before - g.0.len();
            })?;
            outln!("{gone} guard(s) taken away ({})", numakit::text::path(file));
            Ok(0)
        }
    }
}

/// The library's one writer of guard files, its error as a failure.
fn update(file: &Path, change: impl FnOnce(&mut Guards)) -> Result<(), Failure> {
    guard::update(file, change).map_err(Failure::system)
}
