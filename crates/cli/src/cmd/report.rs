//! `numakit report`: reads step outcome records and prints whether
//! placement pays, per group and hardware key, with statistics
//! ([`numakit_report`]; docs/experiments.md). Parses the flags, calls the
//! report crate, writes what it renders. Never changes the system; runs
//! `sacct` only with `--sacct`.

use std::io::Write as _;
use std::path::PathBuf;

use clap::builder::RangedU64ValueParser;
use clap::{Args, ValueEnum};
use numakit::stats_math::Adjustment;
use numakit_report::analysis::look::{Look, MAX_PLANNED, MIN_PLANNED};
use numakit_report::{self as report, present, Options, ReadOptions, SacctFrom};

use crate::Failure;

mod close;

/// How p-values are adjusted for the number of comparisons.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AdjustArg {
    /// Holm's step-down method: the chance of any false flag stays below 5%.
    Holm,
    /// Benjamini-Hochberg: the expected share of false flags among flags stays below 5%.
    Bh,
}

/// Where a job's times come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutcomeArg {
    /// The records: wall from the first step's start to the last step's end, CPU summed.
    Records,
    /// sacct's ElapsedRaw and TotalCPU (needs --sacct or --sacct-file).
    Sacct,
}

/// How often the report is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LookArg {
    /// Read at any time, as often as wanted: always-valid intervals (confidence sequences, Bonferroni).
    Always,
    /// One look at a size fixed in advance: Welch's t intervals, --adjust.
    Once,
}

/// `numakit report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Record files, folders (searched for *.jsonl and *.jsonl.gz) or - for standard input (the default); gzip is detected.
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Group jobs by this record field (user, partition, account, class, placement.mode, ...; default job_name, class with --guard-file).
    #[arg(long, value_name = "FIELD")]
    pub by: Option<String>,
    /// The control arm every other arm is compared with (default: each experiment's own: none, else daemon-off, else its first arm).
    #[arg(long, value_name = "ARM")]
    pub control: Option<String>,
    /// How p-values are adjusted for the number of comparisons (with --look once; always: spread and balance).
    #[arg(long, value_name = "METHOD", value_enum, default_value_t = AdjustArg::Holm)]
    pub adjust: AdjustArg,
    /// How the report is read: always (intervals valid at every look) or once (one look, fixed horizon).
    #[arg(long, value_name = "HOW", value_enum, default_value_t = LookArg::Always)]
    pub look: LookArg,
    /// The jobs per comparison the always-valid intervals are tuned for (default 10000; 10 to 100000000).
    #[arg(long, value_name = "N")]
    pub planned: Option<String>,
    /// The effect "jobs needed" is for, in percent (2 or 2%): units for 80% power to detect it.
    #[arg(long, value_name = "PCT", default_value = "2%")]
    pub detect: String,
    /// The arms' configured shares (auto:50,none:50), instead of the records' own.
    #[arg(long, value_name = "ARM:WEIGHT,...")]
    pub shares: Option<String>,
    /// Join Slurm's accounting: run sacct for the records' clusters and time span.
    #[arg(long, conflicts_with = "sacct_file")]
    pub sacct: bool,
    /// Join Slurm's accounting from saved `sacct --parsable2` output.
    #[arg(long, value_name = "FILE")]
    pub sacct_file: Option<PathBuf>,
    /// Stop sacct after this long (90, 2m, 300s; 1 s to 24 h).
    #[arg(long, value_name = "DURATION", default_value = "5m", requires = "sacct")]
    pub sacct_timeout: String,
    /// Where a job's wall and CPU times come from.
    #[arg(long, value_name = "FROM", value_enum, default_value_t = OutcomeArg::Records)]
    pub outcome_from: OutcomeArg,
    #[command(flatten)]
    pub json: crate::cli::JsonOut,
    /// Also draw the effects (forest plot) and the distributions per arm to FILE as SVG.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Also write the report with its pictures to FILE as one HTML page.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Add a guard to FILE for each class whose arm is worse than its control on always-valid evidence.
    #[arg(long, value_name = "FILE")]
    pub guard_file: Option<PathBuf>,
    /// How much slower an arm must be, beyond doubt, to be guarded (3 or 3%).
    #[arg(long, value_name = "PCT", default_value = "3%", requires = "guard_file")]
    pub guard_margin: String,
    /// Write a policy to OUT deciding each class's arm where the always-valid evidence is clear (and OUT.diff against --policy).
    #[arg(long, value_name = "OUT")]
    pub propose_policy: Option<PathBuf>,
    /// The policy in force the proposal starts from (its classes, rules and matchers); never written.
    #[arg(long, value_name = "CURRENT", requires = "propose_policy")]
    pub policy: Option<PathBuf>,
    /// Parsing threads (default: all CPUs; 1 to 256).
    #[arg(
        long,
        value_name = "N",
        value_parser = RangedU64ValueParser::<usize>::new().range(1..=report::MAX_THREADS as u64),
    )]
    pub threads: Option<usize>,
    /// Jobs held in memory before the job table spills to temporary files (1,024 to 100,000,000).
    #[arg(
        long,
        value_name = "N",
        default_value_t = report::DEFAULT_JOB_BUDGET,
        value_parser = RangedU64ValueParser::<usize>::new().range(report::MIN_JOB_BUDGET as u64..=report::MAX_JOB_BUDGET as u64),
    )]
    pub max_jobs_in_memory: usize,
    /// Where spilled temporary files go (default: TMPDIR or /tmp).
    #[arg(long, value_name = "DIR")]
    pub tmpdir: Option<PathBuf>,
}

/// "2%", "2", "0.5%" as a fraction; the message names the flag and the
/// value as typed.
fn percent(flag: &str, text: &str) -> Result<f64, Failure> {
    let t = text.trim().trim_end_matches('%').trim();
    match t.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v < 100.0 => Ok(v / 100.0),
        _ => Err(Failure::usage(format!("{flag} {text:?}: a percentage above 0 and below 100 (2 or 2%)"))),
    }
}

/// The `--by` field: as given, else `class` where guards or a policy
/// are written from classes, else `job_name`. Guards and a proposal from
/// a current policy need classes; a proposal without one, job names.
fn by(args: &ReportArgs) -> Result<String, Failure> {
    let classes = args.guard_file.is_some() || args.policy.is_some();
    let names = args.propose_policy.is_some() && args.policy.is_none();
    match (&args.by, classes, names) {
        (_, true, true) => Err(Failure::usage(
            "--guard-file with --propose-policy needs --policy CURRENT: its rules say which jobs a class is",
        )),
        (Some(b), true, _) if b != "class" => Err(Failure::usage(format!(
            "{}: per class: give --by class, not --by {b}",
            if args.guard_file.is_some() { "--guard-file" } else { "--propose-policy with --policy" }
        ))),
        (Some(b), _, true) if b != "job_name" => Err(Failure::usage(format!(
            "--propose-policy without --policy: rules per job name: give --by job_name (or --policy CURRENT), not --by {b}"
        ))),
        (Some(b), ..) => Ok(b.clone()),
        (None, true, _) => Ok("class".into()),
        (None, ..) => Ok("job_name".into()),
    }
}

/// `--planned N` (10000, 10,000 or 10_000) within its range.
fn planned(text: &str) -> Result<u64, Failure> {
    let t: String = text.trim().chars().filter(|c| *c != ',' && *c != '_').collect();
    match t.parse::<u64>() {
        Ok(n) if (MIN_PLANNED..=MAX_PLANNED).contains(&n) => Ok(n),
        _ => Err(Failure::usage(format!("--planned {text:?}: a number of jobs from {MIN_PLANNED} to {MAX_PLANNED}"))),
    }
}

fn write_file(path: &PathBuf, text: &str) -> Result<(), Failure> {
    std::fs::write(path, text).map_err(|e| Failure::system(format!("cannot write {}: {e}", path.display())))
}

/// Runs `numakit report`.
pub fn run(args: &ReportArgs) -> anyhow::Result<u8> {
    let by = by(args)?;
    report::check_by(&by).map_err(Failure::usage)?;
    for (flag, given) in
        [("--guard-file", args.guard_file.is_some()), ("--propose-policy", args.propose_policy.is_some())]
    {
        if given && args.look == LookArg::Once {
            return Err(
                Failure::usage(format!("{flag}: written on always-valid evidence only, not with --look once")).into()
            );
        }
    }
    let current = match &args.propose_policy {
        Some(out) => close::current(out, args.policy.as_deref())?,
        None => None,
    };
    let margin = percent("--guard-margin", &args.guard_margin)?;
    if args.outcome_from == OutcomeArg::Sacct && !args.sacct && args.sacct_file.is_none() {
        return Err(Failure::usage("--outcome-from sacct needs --sacct or --sacct-file").into());
    }
    let shares = match &args.shares {
        Some(s) => Some((
            report::parse_shares(s).map_err(|bad| {
                Failure::usage(format!(
                    "--shares {s:?}: {bad:?} is not ARM or ARM:WEIGHT (a weight from {} to {})",
                    report::MIN_WEIGHT,
                    report::analysis::compare_text::count(report::MAX_WEIGHT as u64)
                ))
            })?,
            s.clone(),
        )),
        None => None,
    };
    let look = match args.look {
        LookArg::Once if args.planned.is_some() => {
            return Err(Failure::usage("--planned: only with always-valid reading, not with --look once").into())
        }
        LookArg::Once => Look::Once,
        LookArg::Always => Look::Always { planned: args.planned.as_deref().map(planned).transpose()? },
    };
    let options = Options {
        by,
        control: args.control.clone(),
        adjustment: match args.adjust {
            AdjustArg::Holm => Adjustment::Holm,
            AdjustArg::Bh => Adjustment::BenjaminiHochberg,
        },
        detect: percent("--detect", &args.detect)?,
        power: 0.8,
        shares,
        look,
    };
    let sacct = if args.sacct {
        let t = numakit::units::parse_duration(&args.sacct_timeout)
            .map_err(|e| Failure::usage(format!("--sacct-timeout {:?}: {e}", args.sacct_timeout)))?;
        if !(report::MIN_SACCT_TIMEOUT..=report::MAX_SACCT_TIMEOUT).contains(&t) {
            return Err(Failure::usage(format!("--sacct-timeout {:?}: from 1 s to 24 h", args.sacct_timeout)).into());
        }
        SacctFrom::Run("sacct".into(), t)
    } else if let Some(f) = &args.sacct_file {
        SacctFrom::File(f.clone())
    } else {
        SacctFrom::None
    };
    let mut read =
        ReadOptions { sacct, outcome_from_sacct: args.outcome_from == OutcomeArg::Sacct, ..ReadOptions::default() };
    if let Some(t) = args.threads {
        read.threads = t;
    }
    read.job_budget = args.max_jobs_in_memory;
    if let Some(d) = &args.tmpdir {
        read.tmp = d.clone();
    }
    let sources = report::input::expand(&args.paths).map_err(Failure::usage)?;
    let r = report::report(&sources, &read, &options).map_err(|e| Failure::system(e.0))?;
    if let Some(p) = &args.svg {
        write_file(p, &present::svg::render(&r))?;
    }
    if let Some(p) = &args.html {
        write_file(p, &present::html::render(&r))?;
    }
    let mut out = crate::output::stdout();
    if args.json.json {
        serde_json::to_writer_pretty(&mut out, &r)?;
        writeln!(out)?;
    } else {
        out.write_all(present::text::render(&r).as_bytes())?;
    }
    let mut said = Vec::new();
    if let Some(file) = &args.guard_file {
        said.extend(close::guards(file, &r, margin)?);
    }
    if let Some(out_path) = &args.propose_policy {
        let cur = args.policy.as_deref().zip(current.as_deref());
        said.extend(close::propose(out_path, cur, &r, &sources)?);
    }
    if !said.is_empty() {
        if args.json.json {
            out.flush()?;
            let mut err = std::io::stderr().lock();
            said.iter()
                .try_for_each(|l| writeln!(err, "numakit: report: {}", numakit::text::one_line(l, usize::MAX)))?;
        } else {
            said.iter().try_for_each(|l| writeln!(out, "{}", numakit::text::one_line(l, usize::MAX)))?;
        }
    }
    // As ripgrep does: an input that could not be read (to its end) is said
    // on standard error too, the report is made of the rest, and the exit
    // code says something was skipped.
    if r.input.warnings.is_empty() {
        return Ok(0);
    }
    out.flush()?;
    let mut err = std::io::stderr().lock();
    for w in &r.input.warnings {
        let _ = writeln!(err, "numakit: report: {}", numakit::text::one_line(w, usize::MAX));
    }
    Ok(1)
}
