//! Reading the inputs into tallies: a reader thread splits the inputs
//! into chunks of lines (`input`), worker threads parse them (`line`) into
//! compact rows with their own string tables, and the caller's thread
//! folds the rows in input order (so the figures do not depend on thread
//! timing) into the job table (`jobs`) and the per-line figures. Then
//! [`Collector::finish`] turns every job into its outcome and adds it to
//! the per-cell [`Tally`]. Computes no statistic beyond sums.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::{Arc, Mutex};

use crate::input::{self, Chunk, Source};
use crate::jobs::{FastMap, JobAcc, JobKey, JobTable, TableStats, CPU_MISSING, FAILED, LIMITED, NONE};
use crate::parse::{parse_chunk, Batch, Row, BAD_EXAMPLES};
use crate::strings::{LocalStrings, Strings, Translate};
use crate::tally::{Counts, Tally};

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

/// The most clusters (names) whose records are kept: the lines of
/// others are left out and counted.
pub const MAX_CLUSTERS: usize = 10_000;

/// The most cells (experiment, unit, group, hardware key, arm, arm
/// source) with figures of their own: each some 150 bytes, and its
/// histogram up to 2 KB. The lines of cells beyond are left out (their
/// jobs with them) and counted.
pub const MAX_CELLS: usize = 50_000;

/// The most hosts with figures of their own (the host checks, balance by
/// host, per-host designs). The lines of others still count in per-job
/// comparisons, not in those.
pub const MAX_HOSTS: usize = 100_000;

/// The most entries in each table of figures per host (per host and
/// cell: locality, wall time; per host, experiment and arm; per day; per
/// host and period of per-host designs): some 30 to 60 bytes each. What
/// does not fit is counted and left out of those figures.
pub const MAX_HOST_FIGURES: usize = 500_000;

/// The most configured arms (`arms`) counted per experiment and in all.
pub const MAX_ARMS_SPECS: usize = 1_000;

/// [`Collector::kinds`]: the string names a cluster of the records.
const IS_CLUSTER: u8 = 1;
/// The string names a host with figures of its own.
const IS_HOST: u8 = 2;

/// Whether string `g` is of `kind` ([`Collector::kinds`]).
fn is(kinds: &[u8], g: u32, kind: u8) -> bool {
    kinds.get(g as usize).is_some_and(|k| k & kind != 0)
}

/// `JobAcc::cell` of a line of a cell beyond [`MAX_CELLS`].
pub const LIMITED_CELL: u32 = u32::MAX - 1;

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
    /// Cluster ids seen in records, in order.
    pub clusters: Vec<u32>,
    /// Per string id: [`IS_CLUSTER`], [`IS_HOST`] (a host with figures of
    /// its own).
    kinds: Vec<u8>,
    /// Hosts with figures of their own.
    hosts: usize,
    /// Each parsing thread's ids.
    translate: Vec<Translate>,
    /// sacct rows of clusters no record names.
    sacct_foreign: u64,
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
            kinds: Vec::new(),
            hosts: 0,
            translate: Vec::new(),
            sacct_foreign: 0,
            span: (f64::INFINITY, f64::NEG_INFINITY),
            warnings: Vec::new(),
            bytes: 0,
            gzip_inputs: 0,
        }
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
        self.translate = (0..threads).map(|_| Translate::default()).collect();
        for b in rx {
            pending.insert(b.seq, b);
            while let Some(b) = pending.remove(&next) {
                next += 1;
                let t = &mut self.translate[b.worker];
                if b.reset {
                    t.reset();
                }
                b.new_strings.iter().for_each(|s| t.push(s));
                for (n, why) in &b.bad {
                    if self.bad_examples.len() < BAD_EXAMPLES {
                        let name = sources.get(b.source).map(Source::name).unwrap_or_default();
                        self.bad_examples.push(format!("{name}: line {}: {why}", b.first_line + n + 1));
                    }
                }
                self.counts.add(&b.counts);
                for r in &b.rows {
                    self.row(r, b.worker)?;
                }
            }
        }
        Ok(())
    }

    /// The report's id of cluster `local` (thread `w`'s id), `None` beyond
    /// [`MAX_CLUSTERS`].
    fn cluster_id(&mut self, w: usize, local: u32) -> Option<u32> {
        let t = &mut self.translate[w];
        if let Some(g) = t.get(&self.strings, local).filter(|&g| is(&self.kinds, g, IS_CLUSTER)) {
            return Some(g);
        }
        if self.clusters.len() >= MAX_CLUSTERS {
            return None;
        }
        let g = t.intern(&mut self.strings, local);
        self.mark(g, IS_CLUSTER);
        self.clusters.push(g);
        Some(g)
    }

    fn mark(&mut self, g: u32, kind: u8) {
        if self.kinds.len() <= g as usize {
            self.kinds.resize(g as usize + 1, 0);
        }
        self.kinds[g as usize] |= kind;
    }

    /// The report's id of host `local`, [`NONE`] beyond [`MAX_HOSTS`].
    fn host_id(&mut self, w: usize, local: u32) -> u32 {
        let t = &mut self.translate[w];
        if let Some(g) = t.get(&self.strings, local).filter(|&g| is(&self.kinds, g, IS_HOST)) {
            return g;
        }
        if self.hosts >= MAX_HOSTS {
            return NONE;
        }
        let g = t.intern(&mut self.strings, local);
        self.mark(g, IS_HOST);
        self.hosts += 1;
        g
    }

    /// The cell of row `r`, new if there is room; `None` beyond
    /// [`MAX_CELLS`] (its strings then not taken).
    fn cell_id(&mut self, w: usize, r: &Row) -> Option<u32> {
        let t = &mut self.translate[w];
        let parts = [r.experiment, r.group, r.hw, r.arm];
        let mut ids = [NONE; 4];
        let mut known = true;
        for (id, &local) in ids.iter_mut().zip(&parts) {
            if local != NONE {
                match t.get(&self.strings, local) {
                    Some(g) => *id = g,
                    None => known = false,
                }
            }
        }
        let key = |ids: [u32; 4]| CellKey {
            experiment: ids[0],
            unit: r.unit,
            group: ids[1],
            hw: ids[2],
            arm: ids[3],
            source: r.source,
        };
        if known {
            if let Some(&c) = self.cell_ids.get(&key(ids)) {
                return Some(c);
            }
        }
        if self.cells.len() >= MAX_CELLS {
            return None;
        }
        for (id, &local) in ids.iter_mut().zip(&parts) {
            if local != NONE {
                *id = t.intern(&mut self.strings, local);
            }
        }
        let k = key(ids);
        let c = self.cells.len() as u32;
        self.cells.push(k);
        self.cell_ids.insert(k, c);
        Some(c)
    }

    /// Counts a line of (experiment, arms as configured), within
    /// [`MAX_ARMS_SPECS`].
    fn arms_spec(&mut self, w: usize, experiment: u32, local: u32) {
        let t = &mut self.translate[w];
        let room = self.arms_specs.len() < MAX_ARMS_SPECS;
        let arms = match local {
            NONE => Some(NONE),
            l => t.get(&self.strings, l).or_else(|| room.then(|| t.intern(&mut self.strings, l))),
        };
        if let Some(a) = arms {
            if room || self.arms_specs.contains_key(&(experiment, a)) {
                *self.arms_specs.entry((experiment, a)).or_default() += 1;
            }
        }
    }

    fn row(&mut self, r: &Row, w: usize) -> std::io::Result<()> {
        let Some(cluster) = self.cluster_id(w, r.cluster) else {
            self.counts.limited_lines += 1;
            return Ok(());
        };
        self.span = (self.span.0.min(r.start), self.span.1.max(r.end));
        let job = JobKey { cluster, job: r.job };
        let Some(cell) = self.cell_id(w, r) else {
            // left out, and its job with it (whose other lines may fit)
            self.counts.limited_lines += 1;
            let acc = JobAcc { cell: LIMITED_CELL, lines: 1, flags: LIMITED, ..JobAcc::EMPTY };
            return if r.is_extern { Ok(()) } else { self.jobs.add(job, &acc) };
        };
        let host = self.host_id(w, r.host);
        let experiment = self.cells[cell as usize].experiment;
        self.arms_spec(w, experiment, r.arms);
        let mut unscored = host == NONE;
        if r.locality.is_finite() && host != NONE {
            let room = self.locality.len() < MAX_HOST_FIGURES;
            match self.locality.get_mut(&(host, cell)) {
                Some(e) => *e = (e.0 + 1, e.1 + r.locality, e.2 + r.locality * r.locality),
                None if room => {
                    self.locality.insert((host, cell), (1, r.locality, r.locality * r.locality));
                }
                None => unscored = true,
            }
        }
        if unscored {
            self.counts.unscored_lines += 1;
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
        self.jobs.add(job, &acc)
    }

    /// Folds a sacct row for job `id` of `cluster` in.
    /// A row of a cluster no record names joins nothing: counted as a row
    /// without records, its name not kept.
    pub fn sacct_row(&mut self, cluster: &str, id: &str, acc: &JobAcc) -> std::io::Result<()> {
        match self.strings.get(cluster).filter(|&c| is(&self.kinds, c, IS_CLUSTER)) {
            Some(cluster) => self.jobs.add(JobKey::new(cluster, id), acc),
            None => {
                self.sacct_foreign += 1;
                Ok(())
            }
        }
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
        let mut counts = tally.counts;
        counts.sacct_only += self.sacct_foreign;
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
