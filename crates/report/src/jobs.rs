//! A job's outcome gathered from its lines, in bounded memory. A job's
//! lines (one per step per host, in any order, in any of the inputs) are
//! folded into one [`JobAcc`] each: the span of its steps, the sum of their
//! CPU time, whether any failed, where it ran, its arm. Every field merges
//! (two partial accumulators of a job merge into the one its lines would
//! give), so the table can hold at most a set number of jobs: when full it
//! is spilled, each job to one of [`PARTITIONS`] temporary files by a hash
//! of its id, and at the end each file is read back and merged on its own.
//! Memory is the table's budget plus one partition; what a job's outcome
//! means is documented in docs/experiments.md.

use std::collections::HashMap;
use std::fs::File;
use std::hash::{BuildHasherDefault, Hasher};
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

/// Temporary files a spilled table is split into.
pub const PARTITIONS: usize = 64;

/// A value of a `u32` id that names nothing.
pub const NONE: u32 = u32::MAX;

/// A job: its cluster (an interned name) and its id (the number, or a hash
/// of a non-numeric id with the top bit set).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct JobKey {
    pub cluster: u32,
    pub job: u64,
}

impl JobKey {
    /// The key of job id `id` in cluster `cluster`.
    pub fn new(cluster: u32, id: &str) -> JobKey {
        let job = match id.parse::<u64>() {
            Ok(n) if n < 1 << 63 && !id.starts_with('+') => n,
            _ => {
                // FNV-1a, then mixed: 63 bits; a collision between two
                // non-numeric ids of one cluster merges them (chance about
                // n² / 2⁶⁴).
                let mut h: u64 = 0xcbf2_9ce4_8422_2325;
                for b in id.bytes() {
                    h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
                }
                mix(h) | 1 << 63
            }
        };
        JobKey { cluster, job }
    }
}

/// SplitMix64's finaliser: every input bit reaches every output bit.
pub fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A fast hasher for the small integer keys of the tables (SipHash, std's
/// default, costs more than the rest of a lookup; nothing here is keyed by
/// what an attacker chooses to collide: a job id hashes to itself mixed).
#[derive(Default)]
pub struct MixHasher(u64);

impl Hasher for MixHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for w in &mut words {
            let mut b = [0u8; 8];
            b.copy_from_slice(w);
            self.write_u64(u64::from_le_bytes(b));
        }
        let rest = words.remainder();
        if !rest.is_empty() {
            let mut b = [0u8; 8];
            b[..rest.len()].copy_from_slice(rest);
            self.write_u64(u64::from_le_bytes(b) ^ (rest.len() as u64) << 59);
        }
    }
    fn write_u8(&mut self, i: u8) {
        self.write_u64(u64::from(i));
    }
    fn write_u32(&mut self, i: u32) {
        self.write_u64(u64::from(i));
    }
    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0.rotate_left(23) ^ i).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
    fn write_i64(&mut self, i: i64) {
        self.write_u64(i as u64);
    }
    fn write_usize(&mut self, i: usize) {
        self.write_u64(i as u64);
    }
    fn finish(&self) -> u64 {
        mix(self.0)
    }
}

/// A `HashMap` with [`MixHasher`].
pub type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<MixHasher>>;

/// [`JobAcc::flags`]: a line of the job failed (non-zero exit or a signal).
pub const FAILED: u8 = 1;
/// A line had no CPU time.
pub const CPU_MISSING: u8 = 2;
/// Its lines disagree on the arm, group, hardware or experiment.
pub const INCONSISTENT: u8 = 4;
/// It ran on more than one host.
pub const MULTI_HOST: u8 = 8;
/// Its lines name different periods.
pub const PERIOD_MIXED: u8 = 16;
/// sacct had a row for it.
pub const SACCT: u8 = 32;
/// sacct says it did not complete (a state other than COMPLETED, or a
/// non-zero exit code).
pub const SACCT_FAILED: u8 = 64;
/// A line of it was left out at the report's memory limits (a cell
/// beyond them): the job is left out.
pub const LIMITED: u8 = 128;

/// One job, as far as its lines (and sacct) have told.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JobAcc {
    /// Earliest start of its lines, seconds since the epoch.
    pub start: f64,
    /// Latest end.
    pub end: f64,
    /// Sum of its lines' user + system CPU time, seconds.
    pub cpu: f64,
    /// sacct's ElapsedRaw, seconds (NaN: none).
    pub sacct_elapsed: f64,
    /// sacct's TotalCPU, seconds (NaN: none).
    pub sacct_cpu: f64,
    /// Its period (switchback designs), [`u64::MAX`] for none.
    pub period: u64,
    /// Its cell (experiment, unit, group, hardware key, arm, arm source),
    /// [`NONE`] before a record line was seen (a sacct row only).
    pub cell: u32,
    /// The host of its first line.
    pub host: u32,
    /// Record lines seen.
    pub lines: u32,
    /// sacct's state, an index into `sacct::STATES` (0: none).
    pub sacct_state: u8,
    /// [`FAILED`], [`CPU_MISSING`], ...
    pub flags: u8,
}

impl JobAcc {
    /// An accumulator with nothing in it.
    pub const EMPTY: JobAcc = JobAcc {
        start: f64::INFINITY,
        end: f64::NEG_INFINITY,
        cpu: 0.0,
        sacct_elapsed: f64::NAN,
        sacct_cpu: f64::NAN,
        period: u64::MAX,
        cell: NONE,
        host: NONE,
        lines: 0,
        sacct_state: 0,
        flags: 0,
    };

    /// Folds `o` (another part of the same job) in.
    pub fn merge(&mut self, o: &JobAcc) {
        if o.lines > 0 {
            if self.lines == 0 {
                (self.cell, self.host, self.period) = (o.cell, o.host, o.period);
            } else {
                if self.cell != o.cell {
                    self.flags |= INCONSISTENT;
                }
                if self.host != o.host {
                    self.flags |= MULTI_HOST;
                }
                if self.period != o.period {
                    self.flags |= PERIOD_MIXED;
                }
            }
            self.start = self.start.min(o.start);
            self.end = self.end.max(o.end);
            self.cpu += o.cpu;
            self.lines += o.lines;
            self.flags |= o.flags & (FAILED | CPU_MISSING | INCONSISTENT | MULTI_HOST | PERIOD_MIXED | LIMITED);
        }
        if o.flags & SACCT != 0 {
            self.sacct_elapsed = o.sacct_elapsed;
            self.sacct_cpu = o.sacct_cpu;
            self.sacct_state = o.sacct_state;
            self.flags |= o.flags & (SACCT | SACCT_FAILED);
        }
    }

    const BYTES: usize = 64;

    fn write(&self, key: &JobKey, out: &mut impl Write) -> io::Result<()> {
        let mut b = [0u8; Self::BYTES];
        b[0..4].copy_from_slice(&key.cluster.to_le_bytes());
        b[4..12].copy_from_slice(&key.job.to_le_bytes());
        for (i, x) in [self.start, self.end, self.cpu, self.sacct_elapsed, self.sacct_cpu].iter().enumerate() {
            b[12 + 8 * i..20 + 8 * i].copy_from_slice(&x.to_le_bytes());
        }
        b[52..56].copy_from_slice(&self.cell.to_le_bytes());
        b[56..60].copy_from_slice(&self.host.to_le_bytes());
        // period, lines, state and flags in the 4 bytes left would not
        // fit: the period goes in its own 8 bytes below.
        b[60] = self.sacct_state;
        b[61] = self.flags;
        b[62..64].copy_from_slice(&(self.lines.min(u32::from(u16::MAX)) as u16).to_le_bytes());
        out.write_all(&b)?;
        out.write_all(&self.period.to_le_bytes())
    }

    fn read(b: &[u8; Self::BYTES + 8]) -> (JobKey, JobAcc) {
        let u32_at = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let u64_at = |i: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&b[i..i + 8]);
            u64::from_le_bytes(w)
        };
        let f = |i: usize| f64::from_bits(u64_at(12 + 8 * i));
        let key = JobKey { cluster: u32_at(0), job: u64_at(4) };
        let acc = JobAcc {
            start: f(0),
            end: f(1),
            cpu: f(2),
            sacct_elapsed: f(3),
            sacct_cpu: f(4),
            cell: u32_at(52),
            host: u32_at(56),
            sacct_state: b[60],
            flags: b[61],
            lines: u32::from(u16::from_le_bytes([b[62], b[63]])),
            period: u64_at(64),
        };
        (key, acc)
    }
}

/// A temporary folder removed with what is in it when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(parent: &Path) -> io::Result<TempDir> {
        use std::os::unix::fs::DirBuilderExt;
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        for i in 0..100u32 {
            let name = format!("numakit-report.{}.{:x}", std::process::id(), mix(nanos as u64 ^ u64::from(i)));
            let p = parent.join(name);
            match std::fs::DirBuilder::new().mode(0o700).create(&p) {
                Ok(()) => return Ok(TempDir(p)),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
        Err(io::Error::new(io::ErrorKind::AlreadyExists, "no free temporary folder name"))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

struct Spill {
    dir: TempDir,
    files: Vec<BufWriter<File>>,
    written: u64,
    spills: u64,
}

/// Jobs by key, at most `budget` in memory at once.
pub struct JobTable {
    map: FastMap<JobKey, JobAcc>,
    budget: usize,
    tmp: PathBuf,
    spill: Option<Spill>,
}

/// How a table was used, for the report's own figures.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct TableStats {
    /// Times the table was full and written out.
    pub spills: u64,
    /// Job parts written to temporary files.
    pub spilled_parts: u64,
}

impl JobTable {
    /// A table holding at most `budget` jobs (at least 1,024) in memory,
    /// spilling into a new folder below `tmp` beyond.
    pub fn new(budget: usize, tmp: PathBuf) -> JobTable {
        JobTable { map: FastMap::default(), budget: budget.max(1024), tmp, spill: None }
    }

    /// Folds `acc` into job `key`.
    pub fn add(&mut self, key: JobKey, acc: &JobAcc) -> io::Result<()> {
        if let Some(a) = self.map.get_mut(&key) {
            a.merge(acc);
            return Ok(());
        }
        if self.map.len() >= self.budget {
            self.spill_all()?;
        }
        let mut a = JobAcc::EMPTY;
        a.merge(acc);
        self.map.insert(key, a);
        Ok(())
    }

    fn partition(key: &JobKey) -> usize {
        (mix(key.job.wrapping_mul(0xD6E8_FEB8_6659_FD93) ^ u64::from(key.cluster)) % PARTITIONS as u64) as usize
    }

    fn spill_all(&mut self) -> io::Result<()> {
        if self.spill.is_none() {
            let dir = TempDir::new(&self.tmp)?;
            let mut files = Vec::with_capacity(PARTITIONS);
            for i in 0..PARTITIONS {
                files.push(BufWriter::with_capacity(64 * 1024, File::create(dir.0.join(format!("part-{i:02}")))?));
            }
            self.spill = Some(Spill { dir, files, written: 0, spills: 0 });
        }
        let Some(s) = self.spill.as_mut() else { return Ok(()) };
        s.spills += 1;
        for (k, a) in self.map.drain() {
            a.write(&k, &mut s.files[Self::partition(&k)])?;
            s.written += 1;
        }
        Ok(())
    }

    /// Hands every job to `f`, once, with all its parts merged, in an order
    /// that depends only on the input (the hasher has no random state).
    pub fn finish(mut self, mut f: impl FnMut(JobKey, JobAcc)) -> io::Result<TableStats> {
        let Some(_) = self.spill else {
            self.map.drain().for_each(|(k, a)| f(k, a));
            return Ok(TableStats::default());
        };
        self.spill_all()?;
        let Some(mut s) = self.spill.take() else { return Ok(TableStats::default()) };
        let stats = TableStats { spills: s.spills, spilled_parts: s.written };
        for file in &mut s.files {
            file.flush()?;
        }
        s.files.clear();
        for i in 0..PARTITIONS {
            let path = s.dir.0.join(format!("part-{i:02}"));
            let mut r = BufReader::with_capacity(1 << 20, File::open(&path)?);
            let mut map: FastMap<JobKey, JobAcc> = FastMap::default();
            let mut buf = [0u8; JobAcc::BYTES + 8];
            loop {
                match r.read_exact(&mut buf) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => break,
                    Err(e) => return Err(e),
                }
                let (k, a) = JobAcc::read(&buf);
                map.entry(k).or_insert(JobAcc::EMPTY).merge(&a);
            }
            drop(r);
            std::fs::remove_file(&path)?;
            map.into_iter().for_each(|(k, a)| f(k, a));
        }
        Ok(stats)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(cell: u32, host: u32, start: f64, end: f64, cpu: f64, flags: u8) -> JobAcc {
        JobAcc { start, end, cpu, cell, host, lines: 1, flags, ..JobAcc::EMPTY }
    }

    #[test]
    fn parts_merge_into_the_job() {
        let mut a = JobAcc::EMPTY;
        a.merge(&part(3, 1, 100.0, 200.0, 50.0, 0));
        a.merge(&part(3, 1, 90.0, 150.0, 20.0, FAILED));
        assert_eq!((a.start, a.end, a.cpu, a.lines, a.flags), (90.0, 200.0, 70.0, 2, FAILED));
        a.merge(&part(3, 2, 95.0, 210.0, 1.0, 0));
        assert_eq!((a.end, a.flags & MULTI_HOST, a.host), (210.0, MULTI_HOST, 1));
        a.merge(&part(4, 1, 95.0, 100.0, 1.0, CPU_MISSING));
        assert_eq!(a.flags & (INCONSISTENT | CPU_MISSING), INCONSISTENT | CPU_MISSING);
        // a sacct row first, then the record
        let mut s = JobAcc { sacct_elapsed: 60.0, sacct_cpu: 5.0, sacct_state: 1, flags: SACCT, ..JobAcc::EMPTY };
        s.merge(&part(3, 1, 0.0, 61.0, 4.0, 0));
        assert_eq!((s.cell, s.sacct_elapsed, s.flags), (3, 60.0, SACCT));
    }

    #[test]
    fn non_numeric_ids_hash_apart_from_numbers() {
        assert_eq!(JobKey::new(1, "123").job, 123);
        let h = JobKey::new(1, "123_4");
        assert!(h.job >> 63 == 1 && h != JobKey::new(1, "123_5"));
        assert_eq!(JobKey::new(0, "+5").job >> 63, 1, "not Slurm's spelling of 5");
    }

    /// The same parts give the same jobs whether the table spilled or not.
    #[test]
    fn a_spilled_table_gives_the_same_jobs() {
        let dir = tempfile::tempdir().expect("tmp");
        let parts: Vec<(JobKey, JobAcc)> = (0..20_000u64)
            .map(|i| {
                let job = (i * 7919) % 5003; // every job in several parts, far apart
                let acc = part(
                    (job % 5) as u32,
                    (i % 3) as u32,
                    i as f64,
                    i as f64 + 10.0,
                    1.0,
                    if i % 97 == 0 { FAILED } else { 0 },
                );
                (JobKey { cluster: 0, job }, acc)
            })
            .collect();
        let run = |budget: usize| {
            let mut t = JobTable::new(budget, dir.path().to_path_buf());
            for (k, a) in &parts {
                t.add(*k, a).expect("add");
            }
            let mut out = Vec::new();
            let stats = t.finish(|k, a| out.push((k, a))).expect("finish");
            out.sort_by_key(|x| x.0);
            (out, stats)
        };
        let (whole, s0) = run(1 << 20);
        let (spilled, s1) = run(1024);
        assert_eq!(s0.spills, 0);
        assert!(s1.spills >= 2 && s1.spilled_parts > 5003, "{s1:?}");
        assert_eq!(whole.len(), 5003);
        // NaN (no sacct figure) is never equal to itself: compare as text
        assert!(format!("{whole:?}") == format!("{spilled:?}"), "spilled table differs");
        assert_eq!(std::fs::read_dir(dir.path()).expect("dir").count(), 0, "temporary files removed");
    }
}
