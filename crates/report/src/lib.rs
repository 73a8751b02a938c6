//! `numakit report`: does NUMA placement pay on this farm? The analysis of
//! randomized experiments from the per-step outcome records
//! (`numakit::experiment::record`, schema `numakit-step-outcome/1`) that
//! the Slurm plugin and the batch wrappers write.
//!
//! Layers, each a module: [`input`] finds and reads the inputs (files,
//! folders, standard input; gzip by its magic) as chunks of lines; `line`
//! reads one record without copying; `parse` a chunk of lines into rows;
//! `strings` the ids of their text; `collect` runs the reading threads
//! and folds records, within its memory limits, into the job table (`jobs`: a job's lines into one
//! outcome, in bounded memory, spilling to temporary files beyond a
//! budget) and the per-line figures; `tally` turns jobs into outcomes and
//! sums them; [`sacct`] joins Slurm's accounting; [`analysis`] computes
//! every statistic into the plain structs of [`result`]; [`present`]
//! renders them (text, SVG, HTML; `--json` is [`result::Report`] as it
//! is). [`synth`] generates synthetic farms whose truth is known (the
//! calibration tests and the scale benchmark). Nothing here changes the
//! system; the only process it starts is `sacct`, when asked.
//!
//! docs/experiments.md says what every number means.

pub mod analysis;
mod collect;
pub mod guards;
pub mod input;
mod jobs;
mod line;
mod parse;
pub mod present;
pub mod propose;
pub mod result;
pub mod sacct;
mod strings;
pub mod synth;
mod tally;

use std::path::PathBuf;
use std::time::Duration;

pub use analysis::{parse_shares, Options};
pub use jobs::PARTITIONS;
pub use line::FIELDS;
pub use result::Report;

/// Where sacct's rows come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SacctFrom {
    /// sacct is not read.
    None,
    /// A saved `sacct --parsable2` output (with or without its header).
    File(PathBuf),
    /// Run this program (`sacct`) with [`sacct::sacct_args`], stopped after
    /// the duration.
    Run(String, Duration),
}

/// How to read.
#[derive(Debug, Clone)]
pub struct ReadOptions {
    /// Parsing threads (1 to [`MAX_THREADS`]; taken into that range).
    pub threads: usize,
    /// Jobs held in memory before the job table spills to temporary files
    /// ([`MIN_JOB_BUDGET`] to [`MAX_JOB_BUDGET`]; taken into that range).
    pub job_budget: usize,
    /// Where temporary files go.
    pub tmp: PathBuf,
    /// sacct's rows.
    pub sacct: SacctFrom,
    /// Take a job's times from sacct (ElapsedRaw, TotalCPU) rather than
    /// from its records.
    pub outcome_from_sacct: bool,
}

impl Default for ReadOptions {
    fn default() -> ReadOptions {
        ReadOptions {
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()).min(MAX_THREADS),
            job_budget: DEFAULT_JOB_BUDGET,
            tmp: std::env::temp_dir(),
            sacct: SacctFrom::None,
            outcome_from_sacct: false,
        }
    }
}

/// Jobs held in memory by default (about 80 bytes each with the table's
/// overhead: some 150 MB).
pub const DEFAULT_JOB_BUDGET: usize = 1_800_000;

/// The fewest jobs the table holds before it spills.
pub const MIN_JOB_BUDGET: usize = 1024;

/// The most jobs the table may hold (some 8 GB).
pub const MAX_JOB_BUDGET: usize = 100_000_000;

/// The most parsing threads: each holds a few chunks of 4 MiB in flight.
pub const MAX_THREADS: usize = 256;

/// `--sacct-timeout`'s range.
pub const MIN_SACCT_TIMEOUT: Duration = Duration::from_secs(1);
/// See [`MIN_SACCT_TIMEOUT`].
pub const MAX_SACCT_TIMEOUT: Duration = Duration::from_secs(24 * 3600);

pub use analysis::{MAX_WEIGHT, MIN_WEIGHT};

/// A failure that stops the report, one line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Error(pub String);

/// Record fields `--by` refuses: measures and settings the analysis uses
/// itself (grouping by them would compare an arm with itself).
const NOT_GROUPS: &[&str] = &[
    "unit",
    "arm",
    "arm_source",
    "period",
    "start_unix",
    "end_unix",
    "wall_s",
    "cpu_user_s",
    "cpu_system_s",
    "exit_status",
    "exit_signal",
    "cpu_efficiency",
    "peak_memory_bytes",
    "numa.locality",
    "job",
    "step",
];

/// `--by FIELD` split at its dots, or why not: the field must be one of
/// [`FIELDS`] and not a measure or a setting the analysis uses itself.
pub fn check_by(field: &str) -> Result<Vec<String>, String> {
    if NOT_GROUPS.contains(&field) {
        return Err(format!("--by {field}: a measure or a setting the analysis uses itself, not a group"));
    }
    if !FIELDS.contains(&field) {
        return Err(format!("--by {field}: no such record field (one of {})", by_fields().join(", ")));
    }
    Ok(field.split('.').map(str::to_string).collect())
}

/// The fields `--by` accepts.
pub fn by_fields() -> Vec<&'static str> {
    FIELDS.iter().copied().filter(|f| !NOT_GROUPS.contains(f)).collect()
}

/// Reads `sources` (and sacct) and analyses them.
pub fn report(sources: &[input::Source], r: &ReadOptions, o: &Options) -> Result<Report, Error> {
    let by = check_by(&o.by).map_err(Error)?;
    let mut c = collect::Collector::new(r.job_budget.clamp(MIN_JOB_BUDGET, MAX_JOB_BUDGET), r.tmp.clone());
    c.read(sources, &by, r.threads.clamp(1, MAX_THREADS))
        .map_err(|e| Error(format!("temporary files in {}: {}", r.tmp.display(), input::io_text(&e))))?;
    let clusters: Vec<String> = c.clusters.iter().map(|&i| c.strings.name(i).to_string()).collect();
    let default_cluster = (clusters.len() == 1).then(|| clusters[0].clone());
    let sacct = match &r.sacct {
        SacctFrom::None => None,
        SacctFrom::File(p) => {
            // the one reader of files a user names: regular files only, bounded
            let bytes =
                numakit::files::read_bounded(p, sacct::MAX_FILE_BYTES, true).map_err(|e| Error(e.to_string()))?;
            let rows = sacct::read(bytes.as_slice(), &mut c, default_cluster.as_deref())
                .map_err(|e| Error(format!("{}: {e}", numakit::text::path(p))))?;
            Some((p.display().to_string(), rows))
        }
        SacctFrom::Run(program, timeout) => {
            if clusters.is_empty() {
                return Err(Error("--sacct: no records read, so no jobs to ask sacct about".into()));
            }
            let names: Vec<&str> = clusters.iter().map(String::as_str).collect();
            let args = sacct::sacct_args(&names, c.span);
            let rows = sacct::run(program, &args, *timeout, &mut c).map_err(Error)?;
            Some((format!("{program} {}", args.join(" ")), rows))
        }
    };
    let read_sacct = sacct.is_some();
    let names_for_tally: Vec<String> = c.strings.names.clone();
    let (mut tally, fin) = c
        .finish(r.outcome_from_sacct, read_sacct, names_for_tally)
        .map_err(|e| Error(format!("temporary files in {}: {}", r.tmp.display(), input::io_text(&e))))?;
    let summary = sacct.map(|(source, (rows, missing_columns))| result::SacctSummary {
        source,
        rows,
        missing_columns,
        wall: std::mem::take(&mut tally.agreement[0]),
        cpu: std::mem::take(&mut tally.agreement[1]),
        states: {
            let mut by: std::collections::BTreeMap<&str, u64> = std::collections::BTreeMap::new();
            for (&(_, s), &n) in &tally.sacct_states {
                *by.entry(sacct::STATES.get(s as usize).copied().unwrap_or("OTHER")).or_default() += n;
            }
            by.into_iter().map(|(s, n)| (s.to_string(), n)).collect()
        },
    });
    let inputs = sources.iter().filter(|s| !matches!(s, input::Source::Skipped(..))).count() as u64;
    Ok(analysis::analyse(&tally, &fin, o, inputs, summary))
}
