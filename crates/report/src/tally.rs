//! Jobs turned into outcomes and added up: what a job's outcome is (its
//! wall time from its first step's start to its last step's end, its CPU
//! time summed over its steps and hosts, failed when any step failed; see
//! docs/experiments.md), and the sums per cell (moments of log times, a
//! histogram), per cluster of a per-host design, per host and per day.
//! Sums only: the statistics are `analysis`'s.

use numakit::stats_math::Moments;
use serde::Serialize;

use crate::collect::CellKey;
use crate::jobs::{
    FastMap, JobAcc, JobKey, CPU_MISSING, FAILED, INCONSISTENT, LIMITED, MULTI_HOST, NONE, PERIOD_MIXED, SACCT,
    SACCT_FAILED,
};

/// Line and job counts: where every line and every job went.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// Non-empty lines read.
    pub lines: u64,
    /// Lines that are step outcome records.
    pub records: u64,
    /// JSON objects of another schema (or none): skipped.
    pub other_schema: u64,
    /// Lines that are neither (not JSON, a record with a field missing or
    /// of the wrong type, times out of order): skipped.
    pub bad: u64,
    /// Lines longer than the limit: skipped.
    pub too_long: u64,
    /// Records of `extern` steps (the allocation's holder, no work): not
    /// part of a job's outcome.
    pub extern_lines: u64,
    /// Jobs seen in the records.
    pub jobs: u64,
    /// Jobs whose lines disagree on arm, group, hardware key or
    /// experiment: left out.
    pub inconsistent: u64,
    /// Jobs that failed (non-zero exit or a signal in a record, or a sacct
    /// state other than COMPLETED): counted per arm, left out of the times.
    pub failed: u64,
    /// Jobs with a zero wall time (no log): left out of the times.
    pub zero_time: u64,
    /// Jobs of a per-host design that ran on more than one host (or in
    /// more than one period): not in a cluster, left out of that design.
    pub spans_clusters: u64,
    /// Jobs joined to a sacct row.
    pub sacct_matched: u64,
    /// Jobs with records and no sacct row (when sacct was read).
    pub sacct_missing: u64,
    /// sacct rows of jobs without records (not in any experiment).
    pub sacct_only: u64,
    /// With outcomes from sacct: jobs without a usable sacct time.
    pub no_sacct_time: u64,
    /// Record lines left out at the report's memory limits: of clusters
    /// beyond the first 10,000, or of cells beyond the first 50,000.
    pub limited_lines: u64,
    /// Jobs left out because a line of theirs was (a cell beyond the
    /// limit).
    pub limited_jobs: u64,
    /// Lines whose host-level figures were not kept (a host beyond the
    /// first 100,000, or a table of figures per host full): in per-job
    /// comparisons, not in the host checks.
    pub unscored_lines: u64,
    /// Jobs left out of the figures per host (host checks, balance per
    /// host and day) or of a per-host design's hosts for the same reason.
    pub unscored_jobs: u64,
}

impl Counts {
    /// Adds `o`'s job counts.
    pub fn add_jobs(&mut self, o: &Counts) {
        self.jobs += o.jobs;
        self.inconsistent += o.inconsistent;
        self.failed += o.failed;
        self.zero_time += o.zero_time;
        self.spans_clusters += o.spans_clusters;
        self.sacct_matched += o.sacct_matched;
        self.sacct_missing += o.sacct_missing;
        self.sacct_only += o.sacct_only;
        self.no_sacct_time += o.no_sacct_time;
        self.limited_jobs += o.limited_jobs;
        self.unscored_jobs += o.unscored_jobs;
    }

    /// Adds `o`'s line counts (the job counts are the tally's own).
    pub fn add(&mut self, o: &Counts) {
        self.lines += o.lines;
        self.records += o.records;
        self.other_schema += o.other_schema;
        self.bad += o.bad;
        self.too_long += o.too_long;
        self.extern_lines += o.extern_lines;
        self.limited_lines += o.limited_lines;
        self.unscored_lines += o.unscored_lines;
    }
}

/// Bins of a histogram of log10 times: from 1 ms to 10⁷ s.
pub const HIST_LOW: f64 = -3.0;
/// Width of a bin, in log10 units (about 4.7%).
pub const HIST_STEP: f64 = 0.02;
/// Number of bins (values beyond either end go to the end bins).
pub const HIST_BINS: usize = 500;

/// A histogram of log10 wall times: the bins that hold jobs, sorted (a
/// few bytes per bin), until that takes more room than all the bins do.
#[derive(Debug, Clone, PartialEq)]
pub enum LogHist {
    /// (bin, jobs), sorted by bin.
    Sparse(Vec<(u16, u32)>),
    /// Jobs per bin, [`HIST_BINS`] of them.
    Dense(Vec<u32>),
}

/// Bins a sparse histogram holds before it turns dense (8 bytes each
/// against 4 per bin dense: 1 KB, half the dense 2 KB).
const SPARSE_MAX: usize = HIST_BINS / 4;

impl LogHist {
    fn new() -> LogHist {
        LogHist::Sparse(Vec::new())
    }
    fn add(&mut self, seconds: f64) {
        let b = ((seconds.log10() - HIST_LOW) / HIST_STEP).floor();
        let b = if b.is_nan() { 0 } else { b.clamp(0.0, (HIST_BINS - 1) as f64) as usize };
        match self {
            LogHist::Dense(v) => v[b] = v[b].saturating_add(1),
            LogHist::Sparse(v) => match v.binary_search_by_key(&(b as u16), |x| x.0) {
                Ok(i) => v[i].1 = v[i].1.saturating_add(1),
                Err(_) if v.len() >= SPARSE_MAX => {
                    let mut d = vec![0u32; HIST_BINS];
                    v.iter().for_each(|&(i, n)| d[i as usize] = n);
                    d[b] = d[b].saturating_add(1);
                    *self = LogHist::Dense(d);
                }
                Err(i) => v.insert(i, (b as u16, 1)),
            },
        }
    }
    /// (bin, jobs) of the bins that hold jobs, in order.
    fn bins(&self) -> Box<dyn Iterator<Item = (usize, u32)> + '_> {
        match self {
            LogHist::Sparse(v) => Box::new(v.iter().map(|&(i, n)| (i as usize, n))),
            LogHist::Dense(v) => Box::new(v.iter().copied().enumerate().filter(|x| x.1 > 0)),
        }
    }
    /// The `q` quantile (0 to 1), seconds, at the middle of its bin.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        let total: u64 = self.bins().map(|(_, c)| u64::from(c)).sum();
        if total == 0 {
            return None;
        }
        let want = (q * total as f64).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (i, c) in self.bins() {
            seen += u64::from(c);
            if seen >= want {
                return Some(10f64.powf(HIST_LOW + (i as f64 + 0.5) * HIST_STEP));
            }
        }
        None
    }
}

/// The jobs of one cell.
#[derive(Debug, Clone)]
pub struct CellTally {
    /// Jobs with a usable wall time.
    pub jobs: u64,
    /// Jobs that failed.
    pub failed: u64,
    /// ln(wall seconds).
    pub wall: Moments,
    /// ln(CPU seconds), jobs with CPU time above zero.
    pub cpu: Moments,
    /// log10(wall seconds).
    pub hist: LogHist,
}

/// A cluster of a per-host design: (cell, host, period or `u64::MAX`).
pub type ClusterKey = (u32, u32, u64);

/// A count and a mean: what the analysis of per-host designs needs of a
/// cluster's log times.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Mean {
    pub n: u64,
    pub mean: f64,
}

impl Mean {
    fn push(&mut self, x: f64) {
        self.n += 1;
        self.mean += (x - self.mean) / self.n as f64;
    }
}

/// The entry of `k` in `m`, new if `m` holds fewer than `max`; `None` when
/// it would not fit.
fn slot<K: std::hash::Hash + Eq, V: Default>(m: &mut FastMap<K, V>, k: K, max: usize) -> Option<&mut V> {
    if m.len() >= max && !m.contains_key(&k) {
        return None;
    }
    Some(m.entry(k).or_default())
}

/// Agreement of the records with sacct, job by job.
///
/// For wall time the two spans differ by design: the records' runs from
/// the plugin's set-up of the step to its end, sacct's ElapsedRaw (whole
/// seconds) from Slurm's start of the job to its end, so it also holds
/// Slurm's launch of the job and its wind-down. Records shorter than sacct
/// by more than the tolerance are that time (long on a slow or busy
/// slurmd); records longer are a wrong join or a clock that jumped.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Agreement {
    /// Jobs compared.
    pub compared: u64,
    /// Within max(2 s, 5%) of sacct.
    pub agree: u64,
    /// Records below sacct by more than that.
    pub shorter: u64,
    /// Records above sacct by more than that.
    pub longer: u64,
    /// sacct's seconds less the records', over the jobs compared: mean,
    /// lowest, highest (0 when none was compared).
    pub gap_mean_s: f64,
    pub gap_min_s: f64,
    pub gap_max_s: f64,
    /// The largest differences: (job, records' seconds, sacct's seconds).
    pub worst: Vec<(String, f64, f64)>,
}

impl Agreement {
    fn add(&mut self, job: &JobKey, ours: f64, theirs: f64, cluster: &str) {
        if !(ours.is_finite() && theirs.is_finite()) {
            return;
        }
        self.compared += 1;
        let gap = theirs - ours;
        self.gap_mean_s += (gap - self.gap_mean_s) / self.compared as f64;
        if self.compared == 1 {
            (self.gap_min_s, self.gap_max_s) = (gap, gap);
        } else {
            (self.gap_min_s, self.gap_max_s) = (self.gap_min_s.min(gap), self.gap_max_s.max(gap));
        }
        if gap.abs() <= (0.05 * theirs.abs()).max(2.0) {
            self.agree += 1;
            return;
        }
        if gap > 0.0 {
            self.shorter += 1;
        } else {
            self.longer += 1;
        }
        let id = if job.job >> 63 == 0 { job.job.to_string() } else { format!("(hashed {:x})", job.job) };
        self.worst.push((format!("{cluster}/{id}"), ours, theirs));
        let d = |x: &(String, f64, f64)| -(x.1 - x.2).abs();
        self.worst.sort_by(|a, b| d(a).total_cmp(&d(b)));
        self.worst.truncate(5);
    }
}

/// Sums over jobs.
#[derive(Debug)]
pub struct Tally {
    pub from_sacct: bool,
    pub sacct_read: bool,
    pub counts: Counts,
    /// By cell id.
    pub cells: Vec<CellTally>,
    /// Per-host designs: ln times per cluster, [wall, cpu].
    pub clusters: FastMap<ClusterKey, [Mean; 2]>,
    /// Jobs on one host: (host, cell) → (jobs, Σ ln wall).
    pub host_cells: FastMap<(u32, u32), (u64, f64)>,
    /// Assigned per-job arms: (experiment, host, arm) → jobs.
    pub by_host: FastMap<(u32, u32, u32), u64>,
    /// Assigned arms: (experiment, unit, day since the epoch, arm) → jobs.
    pub by_day: FastMap<(u32, u8, i64, u32), u64>,
    /// Records against sacct: wall and CPU time.
    pub agreement: [Agreement; 2],
    /// sacct states of joined jobs: (cell, state index) → jobs.
    pub sacct_states: FastMap<(u32, u8), u64>,
    /// Names of clusters for messages, by id (filled by the caller).
    pub cluster_names: Vec<String>,
}

impl Tally {
    /// An empty tally for `cells` cells.
    pub fn new(cells: usize, from_sacct: bool, sacct_read: bool) -> Tally {
        let cell =
            CellTally { jobs: 0, failed: 0, wall: Moments::default(), cpu: Moments::default(), hist: LogHist::new() };
        Tally {
            from_sacct,
            sacct_read,
            counts: Counts::default(),
            cells: vec![cell; cells],
            clusters: FastMap::default(),
            host_cells: FastMap::default(),
            by_host: FastMap::default(),
            by_day: FastMap::default(),
            agreement: [Agreement::default(), Agreement::default()],
            sacct_states: FastMap::default(),
            cluster_names: Vec::new(),
        }
    }

    /// Adds one job.
    pub fn job(&mut self, k: JobKey, a: &JobAcc, cells: &[CellKey]) {
        if a.cell == NONE {
            self.counts.sacct_only += 1;
            return;
        }
        self.counts.jobs += 1;
        let wall_records = a.end - a.start;
        let cpu_records = if a.flags & CPU_MISSING != 0 { f64::NAN } else { a.cpu };
        if a.flags & SACCT != 0 {
            self.counts.sacct_matched += 1;
            let name = self.cluster_names.get(k.cluster as usize).map_or("", String::as_str).to_string();
            self.agreement[0].add(&k, wall_records, a.sacct_elapsed, &name);
            self.agreement[1].add(&k, cpu_records, a.sacct_cpu, &name);
            *self.sacct_states.entry((a.cell, a.sacct_state)).or_default() += 1;
        } else if self.sacct_read {
            self.counts.sacct_missing += 1;
        }
        if a.flags & LIMITED != 0 {
            self.counts.limited_jobs += 1;
            return;
        }
        if a.flags & INCONSISTENT != 0 {
            self.counts.inconsistent += 1;
            return;
        }
        let key = cells[a.cell as usize];
        let c = &mut self.cells[a.cell as usize];
        if a.flags & (FAILED | SACCT_FAILED) != 0 {
            c.failed += 1;
            self.counts.failed += 1;
            return;
        }
        let (wall, cpu) = if self.from_sacct { (a.sacct_elapsed, a.sacct_cpu) } else { (wall_records, cpu_records) };
        if self.from_sacct && !wall.is_finite() {
            self.counts.no_sacct_time += 1;
            return;
        }
        if wall.is_nan() || wall <= 0.0 {
            self.counts.zero_time += 1;
            return;
        }
        let lw = wall.ln();
        let lc = if cpu > 0.0 { cpu.ln() } else { f64::NAN };
        c.jobs += 1;
        c.wall.push(lw);
        c.hist.add(wall);
        if lc.is_finite() {
            c.cpu.push(lc);
        }
        let one_host = a.flags & MULTI_HOST == 0;
        // figures per host, each table within MAX_HOST_FIGURES
        let max = crate::collect::MAX_HOST_FIGURES;
        let mut unscored = a.host == NONE;
        if one_host && a.host != NONE {
            match slot(&mut self.host_cells, (a.host, a.cell), max) {
                Some(e) => *e = (e.0 + 1, e.1 + lw),
                None => unscored = true,
            }
        }
        if key.source == 0 {
            let day = (a.start / 86_400.0).floor() as i64;
            match slot(&mut self.by_day, (key.experiment, key.unit, day, key.arm), max) {
                Some(e) => *e += 1,
                None => unscored = true,
            }
            if key.unit == 1 && one_host && a.host != NONE {
                match slot(&mut self.by_host, (key.experiment, a.host, key.arm), max) {
                    Some(e) => *e += 1,
                    None => unscored = true,
                }
            }
        }
        if key.unit >= 2 {
            let period = if key.unit == 3 { a.period } else { u64::MAX };
            if !one_host || (key.unit == 3 && a.flags & PERIOD_MIXED != 0) {
                self.counts.spans_clusters += 1;
            } else if let Some(m) =
                (a.host != NONE).then(|| slot(&mut self.clusters, (a.cell, a.host, period), max)).flatten()
            {
                m[0].push(lw);
                if lc.is_finite() {
                    m[1].push(lc);
                }
            } else {
                unscored = true;
            }
        }
        if unscored {
            self.counts.unscored_jobs += 1;
        }
    }
}
