//! `numakit tune`: kernel NUMA knobs. `show`, `set`, `apply`, `revert`,
//! `profiles`, `check`; the logic is in `numakit::tune`, this module parses,
//! checks root, prints and maps errors to exit codes (2 a bad name, value or
//! profile; 1 the system).

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, Subcommand};
use numakit::present::tune as present;
use numakit::sys::SysRoot;
use numakit::tune::{self, apply::Options, check, profiles, read, Setting, State, TuneError};

use super::common::read_error;
use crate::Failure;

/// `numakit tune`.
#[derive(Debug, Args)]
pub struct TuneArgs {
    #[command(subcommand)]
    pub action: TuneAction,
}

/// The `tune` subcommands.
#[derive(Debug, Subcommand)]
pub enum TuneAction {
    /// Every NUMA-relevant knob: current value, kernel default, what it does.
    ///
    /// With --json, the knobs as JSON (schema: docs/tune.md).
    Show {
        #[command(flatten)]
        format: crate::cli::JsonOut,
        #[command(flatten)]
        state: StateOpt,
    },
    /// Set knobs (sysctl names, /sys paths or aliases), saving the old values for `tune revert`.
    Set {
        /// KNOB=VALUE, e.g. kernel.numa_balancing=0 or kernel/mm/transparent_hugepage/enabled=never.
        #[arg(required = true, value_name = "KNOB=VALUE")]
        settings: Vec<String>,
        #[command(flatten)]
        write: WriteOpts,
    },
    /// Apply a profile (built-in, or DIR/PROFILE.toml; `tune profiles` lists them).
    Apply {
        /// Profile name, or a path to a profile file.
        profile: String,
        #[command(flatten)]
        write: WriteOpts,
        #[command(flatten)]
        dir: ProfilesDir,
    },
    /// Move a device's IRQs to the CPUs of its NUMA node, saving the old affinities for `tune revert`.
    IrqLocal {
        /// The device: a PCI address (0000:3b:00.0 or 3b:00.0), network interface or block device
        /// (pci:, netdev: and block: prefixes taken too); `numakit irq show` lists them.
        device: String,
        #[command(flatten)]
        write: WriteOpts,
    },
    /// Put back every value numakit changed (from the state file), then remove the state file.
    Revert {
        #[command(flatten)]
        write: WriteOpts,
    },
    /// List the profiles with what they set and where the advice comes from.
    Profiles {
        #[command(flatten)]
        format: crate::cli::JsonOut,
        #[command(flatten)]
        dir: ProfilesDir,
    },
    /// Benchmark readiness: SMT, cpufreq, turbo, C-states, AutoNUMA, THP, daemons, huge pages;
    /// and whether the folders batch jobs share are safe (the job ledger, an outcomes folder).
    Check {
        /// Save this host's facts to FILE, to compare other hosts with.
        #[arg(long, value_name = "FILE", conflicts_with = "against")]
        save_baseline: Option<PathBuf>,
        /// Compare with a saved baseline; exit 1 when anything differs.
        #[arg(long, value_name = "FILE")]
        against: Option<PathBuf>,
        /// The job ledger's folder to judge (root's, mode 1777).
        #[arg(long, value_name = "DIR", default_value = numakit::batch::ledger::DEFAULT_DIR)]
        ledger: PathBuf,
        /// An outcomes folder (the plugin's report=DIR, the wrappers' NUMAKIT_OUTCOMES) to judge
        /// (root's; sticky where other users write it).
        #[arg(long, value_name = "DIR")]
        outcomes: Option<PathBuf>,
        #[command(flatten)]
        format: crate::cli::JsonOut,
    },
}

/// Where the state file is.
#[derive(Debug, Args)]
pub struct StateOpt {
    /// The state file keeping the original values [default: /var/lib/numakit/tune-state.json below the root].
    #[arg(long = "state", value_name = "FILE", env = "NUMAKIT_TUNE_STATE")]
    pub state_file: Option<PathBuf>,
}

/// Options of the commands that write.
#[derive(Debug, Args)]
pub struct WriteOpts {
    #[command(flatten)]
    pub state: StateOpt,
    /// Print the writes; write nothing.
    #[arg(long)]
    pub dry_run: bool,
}

/// Where user profiles are.
#[derive(Debug, Args)]
pub struct ProfilesDir {
    /// Folder of user profiles (*.toml) [default: /etc/numakit/profiles.d below the root].
    #[arg(long = "profiles-dir", value_name = "DIR", env = "NUMAKIT_PROFILES_DIR")]
    pub profiles_dir: Option<PathBuf>,
}

/// Test-only hook: pause after the Nth write (so a test can kill -9 numakit between two writes).
const PAUSE_ENV: &str = "NUMAKIT_TUNE_PAUSE_AFTER_WRITE";
/// Test-only: how long that pause lasts, seconds (default 600).
const PAUSE_SECS_ENV: &str = "NUMAKIT_TUNE_PAUSE_SECS";

fn state_path(sys: &SysRoot, opt: &StateOpt) -> PathBuf {
    opt.state_file.clone().unwrap_or_else(|| sys.path(tune::DEFAULT_STATE))
}

/// The state file of a command that writes it (its folder made, beneath
/// the root below a dump).
fn state_to_write(sys: &SysRoot, write: &WriteOpts) -> anyhow::Result<PathBuf> {
    tune::state_path(sys, write.state.state_file.as_deref(), !write.dry_run).map_err(failure)
}

fn profiles_dir(sys: &SysRoot, opt: &ProfilesDir) -> PathBuf {
    opt.profiles_dir.clone().unwrap_or_else(|| sys.path(tune::DEFAULT_PROFILES_DIR))
}

fn failure(e: TuneError) -> anyhow::Error {
    if e.is_usage() {
        Failure::usage(e.to_string()).into()
    } else {
        Failure::system(e.to_string()).into()
    }
}

fn print(text: &str) -> anyhow::Result<()> {
    Ok(crate::output::print(text)?)
}

/// Runs `numakit tune`.
pub fn run(sys: &SysRoot, args: &TuneArgs) -> anyhow::Result<u8> {
    match &args.action {
        TuneAction::Show { format, state } => {
            sys.check().map_err(read_error)?;
            // the state file only annotates; an unreadable one is not an error here
            let saved = State::load(&state_path(sys, state)).ok().flatten();
            let readings = read::read_all_and_saved(sys, saved.as_ref());
            let text = if format.json {
                present::show_json(sys, &readings, saved.as_ref())
            } else {
                present::show_text(&readings, saved.as_ref())
            };
            print(&text)?;
            Ok(0)
        }
        TuneAction::Set { settings, write } => {
            let settings =
                settings.iter().map(|s| Setting::parse(s)).collect::<Result<Vec<_>, _>>().map_err(failure)?;
            apply_settings(sys, &settings, "set", write)
        }
        TuneAction::Apply { profile, write, dir } => {
            let p = profiles::find(profile, &profiles_dir(sys, dir)).map_err(failure)?;
            apply_settings(sys, &p.settings, &format!("apply {}", p.name), write)
        }
        TuneAction::IrqLocal { device, write } => irq_local(sys, device, write),
        TuneAction::Revert { write } => {
            sys.check().map_err(read_error)?;
            if !write.dry_run {
                tune::require_root(sys, "revert").map_err(failure)?;
            }
            let path = state_to_write(sys, write)?;
            let mut pause = pauser();
            let opts = Options { state_path: path.clone(), dry_run: write.dry_run, after_write: Some(&mut pause) };
            let out = tune::revert(sys, opts).map_err(failure)?;
            if !write.dry_run {
                crate::output::applied("tune revert");
            }
            print(&present::revert_text(sys, &out, &path))?;
            Ok(0)
        }
        TuneAction::Profiles { format, dir } => {
            let (all, errors) = profiles::list(&profiles_dir(sys, dir));
            print(&if format.json { present::profiles_json(&all) } else { present::profiles_text(&all) })?;
            for e in &errors {
                eprintln!("numakit: {e}");
            }
            Ok(if errors.is_empty() { 0 } else { 2 })
        }
        TuneAction::Check { save_baseline, against, ledger, outcomes, format } => {
            let folders = Folders { ledger: ledger.clone(), outcomes: outcomes.clone() };
            check(sys, save_baseline.as_deref(), against.as_deref(), &folders, format.json)
        }
    }
}

fn apply_settings(sys: &SysRoot, settings: &[Setting], action: &str, write: &WriteOpts) -> anyhow::Result<u8> {
    sys.check().map_err(read_error)?;
    if !write.dry_run {
        let verb = action.split_whitespace().next().unwrap_or(action);
        tune::require_root(sys, verb).map_err(failure)?;
    }
    let path = state_to_write(sys, write)?;
    let mut pause = pauser();
    let opts = Options { state_path: path.clone(), dry_run: write.dry_run, after_write: Some(&mut pause) };
    let out = tune::apply(sys, settings, action, opts).map_err(failure)?;
    if !write.dry_run {
        crate::output::applied(format!("tune {action} (state {})", path.display()));
    }
    print(&present::apply_text(sys, &out, &path))?;
    Ok(0)
}

/// `tune irq-local DEVICE`: the plan is `numakit::irq::local`, the writes
/// `tune::apply_irqs` (state file first, managed IRQs reported, any other
/// refusal rolled back).
fn irq_local(sys: &SysRoot, device: &str, write: &WriteOpts) -> anyhow::Result<u8> {
    use numakit::irq::{self, local};
    sys.check().map_err(read_error)?;
    let topo = numakit::topo::Topology::read(sys).map_err(read_error)?;
    let view = irq::build(&topo, &irq::read::read(sys).map_err(read_error)?);
    let plan = local::plan(&view, &topo, device).map_err(|e| match e {
        local::LocalError::Unknown { .. } => Failure::usage(e.to_string()),
        _ => Failure::system(e.to_string()),
    })?;
    if !write.dry_run {
        tune::require_root(sys, "irq-local").map_err(failure)?;
    }
    let path = state_to_write(sys, write)?;
    let mut pause = pauser();
    let opts = Options { state_path: path.clone(), dry_run: write.dry_run, after_write: Some(&mut pause) };
    let action = format!("irq-local {device}");
    let out = tune::apply_irqs(sys, &plan.settings, &action, opts).map_err(failure)?;
    let moved = out.plan.writes.len() - out.refused.len();
    if !write.dry_run && moved > 0 {
        crate::output::applied(format!("tune {action} (state {})", path.display()));
    }
    let mine = view.irqs.iter().filter(|i| i.devices.iter().any(|d| d.pci == plan.device.pci)).map(|i| i.irq);
    let mut text = format!(
        "{}: node {}, CPUs {}; IRQs {}\n",
        plan.device.label(),
        plan.node,
        plan.cpus.to_list(),
        irq::ranges(mine)
    );
    text.push_str(&present::apply_text(sys, &out, &path));
    if !plan.already.is_empty() {
        let already = irq::ranges(plan.already.iter().copied());
        text.push_str(&format!("IRQs {already}: already on node {}'s CPUs; left alone\n", plan.node));
    }
    let mut reasons: Vec<&str> = plan.skipped.iter().map(|(_, why)| why.as_str()).collect();
    reasons.dedup();
    for why in reasons {
        let which = irq::ranges(plan.skipped.iter().filter(|(_, w)| w == why).map(|(n, _)| *n));
        text.push_str(&format!("IRQs {which}: not moved: {why}\n"));
    }
    print(&text)?;
    let balance = irq::read::irqbalance(sys);
    if balance.running() && moved > 0 {
        let moved_irqs: Vec<String> = out
            .plan
            .writes
            .iter()
            .filter(|w| !out.refused.iter().any(|(r, _)| r.knob == w.knob))
            .filter_map(|w| tune::knobs::irq_of(&w.knob))
            .map(|n| format!("--banirq={n}"))
            .collect();
        eprintln!(
            "numakit: note: irqbalance is running{} and will move these IRQs again; to keep them, add {} to \
             IRQBALANCE_ARGS (or ban the other CPUs with IRQBALANCE_BANNED_CPULIST, IRQBALANCE_BANNED_CPUS in \
             older versions) in /etc/default/irqbalance or /etc/sysconfig/irqbalance and restart it, or stop it",
            if balance.pids.is_empty() {
                String::new()
            } else {
                format!(" (pid {})", balance.pids.iter().map(u32::to_string).collect::<Vec<_>>().join(","))
            },
            moved_irqs.join(" ")
        );
    }
    if !out.refused.is_empty() && moved == 0 && !write.dry_run {
        return Err(Failure::system(format!(
            "{device}: the kernel refused to move every IRQ it was asked to (managed IRQs); nothing was changed"
        ))
        .into());
    }
    Ok(0)
}

/// The test-only pause: with `NUMAKIT_TUNE_PAUSE_AFTER_WRITE=N`, after the
/// Nth write say so on stderr and sleep (`NUMAKIT_TUNE_PAUSE_SECS`, default
/// 600) so a test can kill numakit, or break the next knob, between two
/// writes.
fn pauser() -> impl FnMut(usize, &tune::Write) {
    let env_num = |k: &str| std::env::var(k).ok().and_then(|v| v.trim().parse::<u64>().ok());
    let at = env_num(PAUSE_ENV);
    let secs = env_num(PAUSE_SECS_ENV).unwrap_or(600);
    move |n, w| {
        if Some(n as u64) == at {
            eprintln!("numakit: paused after write {n} ({}={}) for {PAUSE_ENV}", w.knob, w.to);
            std::thread::sleep(Duration::from_secs(secs));
        }
    }
}

/// The shared folders `tune check` judges.
struct Folders {
    ledger: PathBuf,
    outcomes: Option<PathBuf>,
}

/// The folders' findings (on the live system only): owner and mode as
/// the folder opened says, judged by `check::folder`.
fn folder_findings(sys: &SysRoot, f: &Folders) -> Vec<check::Finding> {
    if !sys.is_live() {
        return Vec::new();
    }
    let stat = |p: &Path| {
        use std::os::unix::fs::MetadataExt;
        numakit::files::SharedDir::open(p).and_then(|d| d.metadata()).map(|m| (m.uid(), m.mode()))
    };
    let mut out = vec![check::folder("folder.ledger", &f.ledger, stat(&f.ledger), true)];
    if let Some(o) = &f.outcomes {
        out.push(check::folder("folder.outcomes", o, stat(o), false));
    }
    out
}

fn check(
    sys: &SysRoot,
    save: Option<&Path>,
    against: Option<&Path>,
    folders: &Folders,
    json: bool,
) -> anyhow::Result<u8> {
    sys.check().map_err(read_error)?;
    let snap = read::snapshot(sys);
    let mut findings = check::report(&snap);
    findings.extend(folder_findings(sys, folders));
    let facts = check::facts(&snap);
    if let Some(path) = save {
        let host = numakit::sys::kernel::hostname(sys);
        let base = check::Baseline::new(host, facts.clone());
        let text = present::baseline_json(&base);
        numakit::files::write_atomic(path, text.as_bytes()).map_err(|e| {
            failure(TuneError::Baseline { path: path.to_path_buf(), why: format!("cannot write it: {e}") })
        })?;
    }
    let baseline = match against {
        None => None,
        Some(path) => {
            let bad = |why: String| failure(TuneError::Baseline { path: path.to_path_buf(), why });
            let text = numakit::files::read_named_text(path).map_err(|e| bad(e.why.to_string()))?;
            Some(check::Baseline::parse(&text).map_err(bad)?)
        }
    };
    let diffs = baseline.as_ref().map(|b| check::diff(&b.facts, &facts)).unwrap_or_default();
    let ctx = match (against, &baseline) {
        (Some(p), Some(b)) => Some((p, b, diffs.as_slice())),
        _ => None,
    };
    print(&if json { present::check_json(&findings, ctx) } else { present::check_text(&findings, ctx) })?;
    if let Some(path) = save {
        eprintln!("numakit: baseline saved in {}", numakit::text::path(path));
    }
    Ok(if diffs.is_empty() { 0 } else { 1 })
}
