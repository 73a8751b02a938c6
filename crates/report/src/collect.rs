//! Reading the inputs into tallies: a reader thread splits the inputs
//! into chunks of lines (`input`), worker threads parse them (`line`) into
//! compact rows with their own string tables, and the caller's thread
//! folds the rows in input order (so the figures do not depend on thread
//! timing) into the job table (`jobs`) and the per-line figures. Then
//! [`Collector::finish`] turns every job into its outcome and adds it to
//! the per-cell [`Tally`]. Computes no statistic beyond sums.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::{Arc, Mutex};

use numakit::experiment::{ArmSource, Unit};

use crate::input::{self, Chunk, Source, MAX_LINE};
use crate::jobs::{FastMap, JobAcc, JobKey, JobTable, TableStats, CPU_MISSING, FAILED, NONE};
use crate::line::{self, Parsed};
use crate::tally::{Counts, Tally};

/// Examples of bad lines kept for the report.
const BAD_EXAMPLES: usize = 5;

/// A cell: the finest set of jobs the analysis tells apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CellKey {
    /// Experiment name ([`NONE`]: none ran).
    pub experiment: u32,
    /// 0 none, 1 job, 2 host, 3 host-period.
    pub unit: u8,
    /// The `--by` value ([`NONE`]: missing).
    pub group: u32,
    /// Hardware key.
    pub hw: u32,
    /// Arm.
    pub arm: u32,
    /// 0 assigned, 1 chosen, 2 default.
    pub source: u8,
}

/// [`CellKey::unit`] of a record's unit.
pub fn unit_code(u: Option<Unit>) -> u8 {
    match u {
        None => 0,
        Some(Unit::Job) => 1,
        Some(Unit::Host) => 2,
        Some(Unit::HostPeriod) => 3,
    }
}

/// [`CellKey::source`] of a record's arm source: 0 for every arm drawn at
/// random (an experiment's, a policy's decided mode and its holdout, which
/// the records name experiment `holdout.CLASS`), the rest apart.
pub fn source_code(s: ArmSource) -> u8 {
    match s {
        ArmSource::Assigned | ArmSource::Decided | ArmSource::Holdout => 0,
        ArmSource::Chosen => 1,
        ArmSource::Default => 2,
        ArmSource::Guarded => 3,
    }
}

/// Strings by id.
#[derive(Debug, Default)]
pub struct Strings {
    ids: HashMap<Box<str>, u32>,
    pub names: Vec<String>,
}

impl Strings {
    /// The id of `s`, new if unseen.
    pub fn id(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.ids.get(s) {
            return i;
        }
        let i = self.names.len() as u32;
        self.ids.insert(s.into(), i);
        self.names.push(s.to_string());
        i
    }
    /// The id of `s` if seen.
    pub fn get(&self, s: &str) -> Option<u32> {
        self.ids.get(s).copied()
    }
    /// The string of `id` (`(none)` for [`NONE`]).
    pub fn name(&self, id: u32) -> &str {
        self.names.get(id as usize).map_or("(none)", String::as_str)
    }
}

/// One record line, compact; strings are the worker's ids.
#[derive(Debug, Clone, Copy)]
struct Row {
    cluster: u32,
    job: u64,
    host: u32,
    group: u32,
    hw: u32,
    arm: u32,
    experiment: u32,
    arms: u32,
    unit: u8,
    source: u8,
    is_extern: bool,
    failed: bool,
    period: u64,
    start: f64,
    end: f64,
    cpu: f64,
    locality: f64,
}

/// What a worker made of one chunk.
struct Batch {
    seq: u64,
    /// The input's line (from 0) the chunk starts at.
    first_line: u64,
    worker: usize,
    source: usize,
    counts: Counts,
    bad: Vec<(u64, String)>,
    rows: Vec<Row>,
    new_strings: Vec<String>,
}

/// A worker's string table.
#[derive(Default)]
struct LocalStrings {
    ids: FastMap<Box<str>, u32>,
    fresh: Vec<String>,
}

impl LocalStrings {
    fn id(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.ids.get(s) {
            return i;
        }
        let i = self.ids.len() as u32;
        self.ids.insert(s.into(), i);
        self.fresh.push(s.to_string());
        i
    }
}

/// The latest time a record may name: 10000-01-01T00:00:00Z. With times
/// from 1970 to then, every span, sum and logarithm the analysis takes is
/// a finite number.
pub const MAX_UNIX: f64 = 253_402_300_800.0;

/// The most CPU time one line may give, seconds: sums over any number of
/// lines stay finite.
pub const MAX_CPU_S: f64 = 1e15;

/// Whether a record's times are ones the analysis can use: start and end
/// from 1970 to [`MAX_UNIX`] in order, the wall time a finite number, the
/// CPU times at most [`MAX_CPU_S`] (a negative one counts as missing). The
/// reason, one line, when not.
fn times(l: &line::Line) -> Result<(), String> {
    let (s, e) = (l.start_unix, l.end_unix);
    let in_range = |t: f64| (0.0..=MAX_UNIX).contains(&t);
    if !(in_range(s) && in_range(e)) {
        return Err(format!("times outside 1970 to 9999 (start {s}, end {e})"));
    }
    if e < s {
        return Err(format!("times out of order (start {s}, end {e})"));
    }
    if !(l.wall_s.is_finite() && l.wall_s >= 0.0) {
        return Err(format!("wall_s {} is not a time", l.wall_s));
    }
    for (name, v) in [("cpu_user_s", l.cpu_user_s), ("cpu_system_s", l.cpu_system_s)] {
        if let Some(v) = v.filter(|v| v.is_nan() || *v > MAX_CPU_S) {
            return Err(format!("{name} {v} beyond {MAX_CPU_S:e} s"));
        }
    }
    Ok(())
}

fn parse_chunk(c: Chunk, worker: usize, by: &[&str], strings: &mut LocalStrings, pool: &input::Pool) -> Batch {
    let mut counts = Counts { too_long: c.too_long, ..Counts::default() };
    let mut rows = Vec::with_capacity(c.data.len() / 600 + 1);
    let mut bad = Vec::new();
    for (n, raw) in c.data.split(|&b| b == b'\n').enumerate() {
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        if raw.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        counts.lines += 1;
        if raw.len() > MAX_LINE {
            counts.too_long += 1;
            continue;
        }
        let mut rest = raw;
        let l = loop {
            match line::parse(rest, by) {
                Parsed::Record(l) => break Some(l),
                Parsed::Other => {
                    counts.other_schema += 1;
                    break None;
                }
                Parsed::Bad(why) => {
                    counts.bad += 1;
                    // a record cut short (a full disk), the next one written after it:
                    // the cut one is a line of its own, the next one is read
                    let next = line::record_start(&rest[1..]).map(|p| p + 1);
                    if bad.len() < BAD_EXAMPLES {
                        let why = if next.is_some() { line::CUT_SHORT.to_string() } else { why };
                        bad.push((n as u64, why));
                    }
                    match next {
                        Some(p) => {
                            counts.lines += 1;
                            rest = &rest[p..];
                        }
                        None => break None,
                    }
                }
            }
        };
        let Some(l) = l else { continue };
        if let Err(why) = times(&l) {
            counts.bad += 1;
            if bad.len() < BAD_EXAMPLES {
                bad.push((n as u64, why));
            }
            continue;
        }
        counts.records += 1;
        let cpu = match (l.cpu_user_s, l.cpu_system_s) {
            (Some(u), Some(s)) if u >= 0.0 && s >= 0.0 => u + s,
            _ => f64::NAN,
        };
        let Some(src) = l.arm_source else { continue };
        rows.push(Row {
            cluster: strings.id(&l.cluster),
            job: JobKey::new(0, &l.job).job,
            host: strings.id(&l.host),
            group: l.by.as_deref().map_or(NONE, |g| strings.id(g)),
            hw: strings.id(&l.hardware_key),
            arm: strings.id(&l.arm),
            experiment: l.experiment.as_deref().map_or(NONE, |e| strings.id(e)),
            arms: l.arms.as_deref().map_or(NONE, |a| strings.id(a)),
            unit: unit_code(l.unit),
            source: source_code(src),
            is_extern: l.step == "extern",
            failed: l.exit_status.is_some_and(|s| s != 0) || l.exit_signal.is_some(),
            period: l.period.unwrap_or(u64::MAX),
            start: l.start_unix,
            end: l.end_unix,
            cpu,
            locality: l.locality.filter(|x| (0.0..=1.0).contains(x)).unwrap_or(f64::NAN),
        });
    }
    let b = Batch {
        seq: c.seq,
        first_line: c.first_line,
        worker,
        source: c.source,
        counts,
        bad,
        rows,
        new_strings: std::mem::take(&mut strings.fresh),
    };
    pool.give(c.data);
    b
}

/// Everything read so far, before jobs are turned into outcomes.
pub struct Collector {
    pub strings: Strings,
    pub cells: Vec<CellKey>,
    cell_ids: FastMap<CellKey, u32>,
    jobs: JobTable,
    pub counts: Counts,
    /// Bad lines: `input: line N: why` (the first few).
    pub bad_examples: Vec<String>,
    /// Per-line locality per (host, cell): count, sum, sum of squares.
    pub locality: FastMap<(u32, u32), (u64, f64, f64)>,
    /// Record lines per (experiment, arms as configured).
    pub arms_specs: BTreeMap<(u32, u32), u64>,
    /// Cluster ids seen in records.
    pub clusters: Vec<u32>,
    /// Earliest start and latest end of the records.
    pub span: (f64, f64),
    pub warnings: Vec<String>,
    pub bytes: u64,
    pub gzip_inputs: u64,
}

impl Collector {
    /// An empty collector whose job table holds `budget` jobs in memory
    /// and spills below `tmp`.
    pub fn new(budget: usize, tmp: PathBuf) -> Collector {
        Collector {
            strings: Strings::default(),
            cells: Vec::new(),
            cell_ids: FastMap::default(),
            jobs: JobTable::new(budget, tmp),
            counts: Counts::default(),
            bad_examples: Vec::new(),
            locality: FastMap::default(),
            arms_specs: BTreeMap::new(),
            clusters: Vec::new(),
            span: (f64::INFINITY, f64::NEG_INFINITY),
            warnings: Vec::new(),
            bytes: 0,
            gzip_inputs: 0,
        }
    }

    /// The id of cell `k`.
    pub fn cell(&mut self, k: CellKey) -> u32 {
        if let Some(&i) = self.cell_ids.get(&k) {
            return i;
        }
        let i = self.cells.len() as u32;
        self.cells.push(k);
        self.cell_ids.insert(k, i);
        i
    }

    /// Reads every line of `sources` with `threads` parsing threads,
    /// grouping by the field `by` (split at its dots).
    pub fn read(&mut self, sources: &[Source], by: &[String], threads: usize) -> std::io::Result<()> {
        let threads = threads.clamp(1, crate::MAX_THREADS);
        let (chunk_tx, chunk_rx) = sync_channel::<Chunk>(threads * 2);
        let chunk_rx = Arc::new(Mutex::new(chunk_rx));
        let (batch_tx, batch_rx) = sync_channel::<Batch>(threads * 2);
        let by: Vec<&str> = by.iter().map(String::as_str).collect();
        let pool = input::Pool::default();
        let mut result = Ok(());
        std::thread::scope(|s| {
            let pool = &pool;
            let reader = s.spawn(move || input::read_all(sources, pool, |c| chunk_tx.send(c).is_ok()));
            for w in 0..threads {
                let rx = Arc::clone(&chunk_rx);
                let tx = batch_tx.clone();
                let by = &by;
                s.spawn(move || {
                    let mut strings = LocalStrings::default();
                    loop {
                        let next = rx.lock().map(|r| r.recv());
                        let Ok(Ok(chunk)) = next else { break };
                        if tx.send(parse_chunk(chunk, w, by, &mut strings, pool)).is_err() {
                            break;
                        }
                    }
                });
            }
            drop(batch_tx);
            result = self.fold(&batch_rx, threads, sources);
            drop(batch_rx);
            if let Ok(stats) = reader.join() {
                self.bytes += stats.bytes;
                self.gzip_inputs += stats.gzip_inputs;
                self.warnings.extend(stats.warnings);
            }
        });
        result
    }

    /// Folds the workers' batches in input order.
    fn fold(&mut self, rx: &Receiver<Batch>, threads: usize, sources: &[Source]) -> std::io::Result<()> {
        let mut pending: BTreeMap<u64, Batch> = BTreeMap::new();
        let mut next = 0;
        let mut translate: Vec<Vec<u32>> = vec![Vec::new(); threads];
        for b in rx {
            pending.insert(b.seq, b);
            while let Some(b) = pending.remove(&next) {
                next += 1;
                let t = &mut translate[b.worker];
                for s in &b.new_strings {
                    t.push(self.strings.id(s));
                }
                for (n, why) in &b.bad {
                    if self.bad_examples.len() < BAD_EXAMPLES {
                        let name = sources.get(b.source).map(Source::name).unwrap_or_default();
                        self.bad_examples.push(format!("{name}: line {}: {why}", b.first_line + n + 1));
                    }
                }
                self.counts.add(&b.counts);
                let t = std::mem::take(&mut translate[b.worker]);
                for r in &b.rows {
                    self.row(r, &t)?;
                }
                translate[b.worker] = t;
            }
        }
        Ok(())
    }

    fn row(&mut self, r: &Row, t: &[u32]) -> std::io::Result<()> {
        let g = |i: u32| if i == NONE { NONE } else { t[i as usize] };
        let cluster = g(r.cluster);
        if !self.clusters.contains(&cluster) {
            self.clusters.push(cluster);
        }
        self.span = (self.span.0.min(r.start), self.span.1.max(r.end));
        let (host, experiment) = (g(r.host), g(r.experiment));
        let key = CellKey { experiment, unit: r.unit, group: g(r.group), hw: g(r.hw), arm: g(r.arm), source: r.source };
        let cell = self.cell(key);
        *self.arms_specs.entry((experiment, g(r.arms))).or_default() += 1;
        if r.locality.is_finite() {
            let e = self.locality.entry((host, cell)).or_default();
            e.0 += 1;
            e.1 += r.locality;
            e.2 += r.locality * r.locality;
        }
        if r.is_extern {
            self.counts.extern_lines += 1;
            return Ok(());
        }
        let mut flags = 0;
        if r.failed {
            flags |= FAILED;
        }
        let cpu = if r.cpu.is_nan() {
            flags |= CPU_MISSING;
            0.0
        } else {
            r.cpu
        };
        let acc =
            JobAcc { start: r.start, end: r.end, cpu, period: r.period, cell, host, lines: 1, flags, ..JobAcc::EMPTY };
        self.jobs.add(JobKey { cluster, job: r.job }, &acc)
    }

    /// Folds a sacct row for job `id` of `cluster` in.
    pub fn sacct_row(&mut self, cluster: &str, id: &str, acc: &JobAcc) -> std::io::Result<()> {
        let cluster = self.strings.id(cluster);
        self.jobs.add(JobKey::new(cluster, id), acc)
    }

    /// Turns every job into its outcome (`outcome_from_sacct`: sacct's
    /// elapsed and CPU time instead of the records') and tallies it.
    pub fn finish(
        self,
        outcome_from_sacct: bool,
        sacct_read: bool,
        cluster_names: Vec<String>,
    ) -> std::io::Result<(Tally, Finished)> {
        let mut tally = Tally::new(self.cells.len(), outcome_from_sacct, sacct_read);
        tally.cluster_names = cluster_names;
        let cells = self.cells;
        let stats: TableStats = self.jobs.finish(|k, a| tally.job(k, &a, &cells))?;
        let counts = tally.counts;
        tally.counts = self.counts;
        tally.counts.add_jobs(&counts);
        let rest = Finished {
            strings: self.strings,
            cells,
            locality: self.locality,
            arms_specs: self.arms_specs,
            bad_examples: self.bad_examples,
            warnings: self.warnings,
            bytes: self.bytes,
            gzip_inputs: self.gzip_inputs,
            table: stats,
            span: self.span,
        };
        Ok((tally, rest))
    }
}

/// What the analysis needs from the reading besides the tally.
pub struct Finished {
    pub strings: Strings,
    pub cells: Vec<CellKey>,
    pub locality: FastMap<(u32, u32), (u64, f64, f64)>,
    pub arms_specs: BTreeMap<(u32, u32), u64>,
    pub bad_examples: Vec<String>,
    pub warnings: Vec<String>,
    pub bytes: u64,
    pub gzip_inputs: u64,
    pub table: TableStats,
    pub span: (f64, f64),
}
