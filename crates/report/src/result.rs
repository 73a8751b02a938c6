//! The report as plain data: what `numakit report --json` prints (schema
//! [`SCHEMA`], documented in docs/experiments.md) and what the text, SVG
//! and HTML renderers format. No computation here.

use serde::Serialize;

use crate::jobs::TableStats;
use crate::tally::{Agreement, Counts};

/// The `schema` of the JSON report. Fields may be added within version 1;
/// one that changes meaning or goes away bumps it.
pub const SCHEMA: &str = "numakit-report/1";

/// The whole report.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// [`SCHEMA`].
    pub schema: String,
    /// The numakit version that made it.
    pub numakit_version: String,
    /// How it was made.
    pub settings: Settings,
    /// What was read.
    pub input: InputSummary,
    /// One per experiment (and one for records of no experiment).
    pub experiments: Vec<Experiment>,
    /// Hosts that stand apart from hosts of the same hardware key.
    pub hosts: HostCheck,
    /// The join with Slurm's accounting, when sacct was read.
    pub sacct: Option<SacctSummary>,
}

/// The analysis's settings.
#[derive(Debug, Clone, Serialize)]
pub struct Settings {
    /// The field jobs are grouped by (dotted when nested).
    pub by: String,
    /// The control arm as given with --control, or "default": each
    /// experiment's own (`none`, else `daemon-off`, else its first arm).
    pub control: String,
    /// How p-values are adjusted for the number of comparisons ("Holm",
    /// "Benjamini-Hochberg").
    pub adjustment: String,
    /// The level flags use (0.05).
    pub alpha: f64,
    /// The confidence level of every interval (0.95).
    pub confidence: f64,
    /// The effect "jobs needed" is for, percent (2 = ±2%).
    pub detect_pct: f64,
    /// The power "jobs needed" is for (0.8).
    pub power: f64,
    /// Where a job's times come from: "records" or "sacct".
    pub outcome_from: String,
    /// Shares given with --shares, as typed.
    pub shares: Option<String>,
    /// How the wall- and CPU-time comparisons were analysed:
    /// "always-valid" (confidence sequences, Bonferroni over the
    /// comparisons; the default) or "fixed-horizon" (`--look once`:
    /// Welch's t, `adjustment`).
    pub analysis: String,
    /// Always-valid: the jobs per comparison the sequences are planned for
    /// (per-host designs: the hosts they have).
    pub planned_jobs: Option<u64>,
    /// Where `planned_jobs` comes from: "--planned" or "default".
    pub planned_from: Option<String>,
    /// Always-valid: the wall-time comparisons α is shared over (k).
    pub comparisons: u64,
    /// What the intervals are, in words (the text report's header).
    pub intervals: String,
}

/// What was read, and where each line and job went.
#[derive(Debug, Clone, Serialize)]
pub struct InputSummary {
    /// Inputs read.
    pub inputs: u64,
    /// Of which gzip.
    pub gzip_inputs: u64,
    /// Bytes read, after decompression.
    pub bytes: u64,
    /// Lines and jobs counted by what happened to them.
    pub counts: Counts,
    /// The first few bad lines: `input: line N: why`.
    pub bad_examples: Vec<String>,
    /// Inputs that could not be read to the end, one line each.
    pub warnings: Vec<String>,
    /// Earliest step start and latest step end, seconds since the epoch.
    pub first_start_unix: Option<f64>,
    /// See `first_start_unix`.
    pub last_end_unix: Option<f64>,
    /// How the job table was used (spills to temporary files).
    pub table: TableStats,
    /// The memory limits the reading kept to (what went beyond them is
    /// counted in `counts`: limited_lines, limited_jobs, unscored_lines,
    /// unscored_jobs).
    pub limits: Limits,
}

/// The most of each kind the report keeps figures for (bounded memory).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Limits {
    /// Cluster names.
    pub clusters: u64,
    /// Cells (experiment, unit, group, hardware key, arm, arm source).
    pub cells: u64,
    /// Hosts with figures of their own.
    pub hosts: u64,
    /// Entries in each table of figures per host.
    pub host_figures: u64,
}

impl Limits {
    /// The limits in force.
    pub fn now() -> Limits {
        use crate::collect::{MAX_CELLS, MAX_CLUSTERS, MAX_HOSTS, MAX_HOST_FIGURES};
        Limits {
            clusters: MAX_CLUSTERS as u64,
            cells: MAX_CELLS as u64,
            hosts: MAX_HOSTS as u64,
            host_figures: MAX_HOST_FIGURES as u64,
        }
    }
}

/// One experiment (or the records of no experiment).
#[derive(Debug, Clone, Serialize)]
pub struct Experiment {
    /// Its name (`None`: records written when no experiment ran).
    pub name: Option<String>,
    /// What it randomized: "job", "host", "host-period", or "none".
    pub unit: String,
    /// The arm its others are compared with: --control, or its own
    /// (`none`, else `daemon-off`, else its first configured arm).
    pub control: String,
    /// What its comparisons estimate, in words.
    pub design: String,
    /// The arms and shares the balance checks use, and where they come
    /// from ("records", "--shares", "equal shares assumed").
    pub shares: Vec<(String, f64)>,
    /// See `shares`.
    pub shares_from: String,
    /// Things a reader must know (the configured arms changed, ...).
    pub notes: Vec<String>,
    /// Per group and hardware key.
    pub groups: Vec<Group>,
    /// Whether the arms were assigned as configured.
    pub balance: Balance,
}

/// One group (a `--by` value) on one hardware key.
#[derive(Debug, Clone, Serialize)]
pub struct Group {
    /// The `--by` value (`None`: the field was missing or null).
    pub group: Option<String>,
    /// The hosts' hardware key.
    pub hardware_key: String,
    /// Arms assigned by the experiment.
    pub arms: Vec<ArmSummary>,
    /// Jobs whose arm was chosen by the user or was the site's default:
    /// shown, never compared.
    pub not_randomized: Vec<ArmSummary>,
    /// Each assigned arm against the control.
    pub comparisons: Vec<Comparison>,
    /// Why there is no comparison, when there is none.
    pub note: Option<String>,
}

/// One arm's jobs in a group.
#[derive(Debug, Clone, Serialize)]
pub struct ArmSummary {
    /// The arm.
    pub arm: String,
    /// "assigned", "chosen" or "default".
    pub source: String,
    /// Jobs with a wall time.
    pub jobs: u64,
    /// Jobs that failed (left out of the times).
    pub failed: u64,
    /// Per-host designs: clusters (hosts or host-periods).
    pub clusters: Option<u64>,
    /// Geometric mean wall time, seconds.
    pub wall_geo_mean_s: Option<f64>,
    /// Standard deviation of ln(wall time) (about the coefficient of
    /// variation when small).
    pub wall_sd_log: Option<f64>,
    /// Wall time quantiles: 10%, 50%, 90% (from a histogram, ±2.3%).
    pub wall_quantiles_s: Option<[f64; 3]>,
    /// Geometric mean CPU time, seconds.
    pub cpu_geo_mean_s: Option<f64>,
    /// Standard deviation of ln(CPU time).
    pub cpu_sd_log: Option<f64>,
    /// Jobs with a CPU time.
    pub cpu_jobs: u64,
}

/// An effect on a time: the ratio of geometric means (arm / control).
#[derive(Debug, Clone, Serialize)]
pub struct Effect {
    /// Geometric mean ratio: below 1 is faster.
    pub ratio: f64,
    /// 95% interval of the ratio.
    pub ci_low: f64,
    /// See `ci_low`.
    pub ci_high: f64,
    /// Two-sided p-value of no effect.
    pub p_value: f64,
    /// `p_value` adjusted for the comparisons of the report.
    pub p_adjusted: f64,
    /// Degrees of freedom of the t distribution used.
    pub df: f64,
    /// Units (jobs, hosts or paired hosts) in the arm and in the control.
    pub n: [u64; 2],
    /// What the always-valid interval is computed from (not in the JSON).
    #[serde(skip)]
    pub basis: Option<crate::analysis::Basis>,
}

/// The change in run-to-run variation.
#[derive(Debug, Clone, Serialize)]
pub struct Variation {
    /// sd(ln wall) of the control.
    pub sd_control: f64,
    /// sd(ln wall) of the arm.
    pub sd_arm: f64,
    /// sd_arm / sd_control with its 95% interval.
    pub ratio: f64,
    /// See `ratio`.
    pub ci_low: f64,
    /// See `ratio`.
    pub ci_high: f64,
    /// Two-sided p-value of equal spreads.
    pub p_value: f64,
    /// `p_value` adjusted for the report's variation comparisons.
    pub p_adjusted: f64,
    /// Caveats: "between jobs, not cluster-robust" for per-host designs.
    pub note: Option<String>,
}

/// How many more units a comparison needs.
#[derive(Debug, Clone, Serialize)]
pub struct Needed {
    /// Units in all (arm and control) for the settings' power to detect
    /// the settings' effect at level alpha, in one comparison.
    pub total: u64,
    /// `total` less what there is (0 when enough).
    pub more: u64,
    /// The search's cap was reached: more than `total` are needed (and
    /// more than `more` more).
    pub more_than: bool,
    /// "jobs", "hosts" or "hosts with both arms".
    pub unit: String,
}

/// One arm against the control in one group.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// The arm.
    pub arm: String,
    /// The control arm as given with --control, or "default": each
    /// experiment's own (`none`, else `daemon-off`, else its first arm).
    pub control: String,
    /// The unit of analysis: "job", "host", "host (paired periods)".
    pub analysed_by: String,
    /// The method, named.
    pub method: String,
    /// On wall time (`None`: too few units).
    pub wall: Option<Effect>,
    /// On CPU time.
    pub cpu: Option<Effect>,
    /// On the spread of wall times.
    pub variation: Option<Variation>,
    /// What the wall-time comparison says: "faster", "slower",
    /// "no-effect" (no effect as large as the settings' detect),
    /// "undecided", "too-few".
    pub verdict: String,
    /// The verdict in words.
    pub verdict_text: String,
    /// Units needed to detect the settings' effect on wall time.
    pub needed: Option<Needed>,
}

/// Arm shares against the configured ones.
#[derive(Debug, Clone, Serialize, Default)]
pub struct Balance {
    /// Over the whole experiment: (arm, count, expected) and the test.
    pub overall: Option<ShareTest>,
    /// Hosts checked (at least 5 expected in every arm).
    pub hosts_checked: u64,
    /// Hosts with too few jobs to check.
    pub hosts_too_few: u64,
    /// Hosts whose shares are off (p adjusted over hosts and days together
    /// below alpha; at most 100, lowest p first).
    pub hosts_off: Vec<ShareTest>,
    /// Days checked.
    pub days_checked: u64,
    /// Days whose shares are off.
    pub days_off: Vec<ShareTest>,
    /// Arms in the records that the configuration does not name.
    pub unknown_arms: Vec<String>,
}

/// One share test.
#[derive(Debug, Clone, Serialize)]
pub struct ShareTest {
    /// "all", a host name, or a day (YYYY-MM-DD, UTC).
    pub what: String,
    /// Per arm: (arm, observed, expected).
    pub counts: Vec<(String, u64, f64)>,
    /// Pearson's chi-square p-value.
    pub p_value: f64,
    /// Adjusted over the hosts and days checked.
    pub p_adjusted: f64,
}

/// Hosts against hosts of the same hardware key.
#[derive(Debug, Clone, Serialize, Default)]
pub struct HostCheck {
    /// Hosts scored on wall time (at least 5 jobs that ran on one host).
    pub scored: u64,
    /// Hosts scored on locality (at least 5 step lines).
    pub scored_locality: u64,
    /// Hosts that stand apart.
    pub flagged: Vec<HostFlag>,
}

/// A host that stands apart, with the evidence.
#[derive(Debug, Clone, Serialize)]
pub struct HostFlag {
    /// The host.
    pub host: String,
    /// Its hardware key.
    pub hardware_key: String,
    /// "wall" (its jobs' times) or "locality".
    pub metric: String,
    /// Jobs (wall) or step lines (locality) it is scored on.
    pub n: u64,
    /// Wall: its jobs' mean ln-time residual as a percentage (+12 = 12%
    /// slower than same-cell jobs elsewhere); locality: percentage points.
    pub difference: f64,
    /// The median difference of the hosts of its key.
    pub median_of_key: f64,
    /// Robust z among the hosts of its key (median, 1.4826 × MAD).
    pub robust_z: f64,
    /// Its own evidence: mean standardized residual × √n.
    pub z_own: f64,
    /// Hosts of its key scored.
    pub hosts_of_key: u64,
}

/// The sacct join.
#[derive(Debug, Clone, Serialize)]
pub struct SacctSummary {
    /// How sacct was read (the command, or the file).
    pub source: String,
    /// sacct rows read: jobs, steps, bad.
    pub rows: [u64; 3],
    /// Columns of the fields `--sacct` asks for that the file's header
    /// lacks ("Cluster", "ElapsedRaw", "TotalCPU", "State", "ExitCode"):
    /// their figures are unknown (a job without a State is not failed).
    pub missing_columns: Vec<String>,
    /// Wall time: records' span against sacct's ElapsedRaw.
    pub wall: Agreement,
    /// CPU time: records' sum against sacct's TotalCPU.
    pub cpu: Agreement,
    /// Jobs per sacct state.
    pub states: Vec<(String, u64)>,
}
