//! One chunk of lines parsed by a worker thread: each line read
//! (`line`), its times checked, a record cut short by a full disk told
//! apart from the whole one written after it, and the records turned into
//! compact [`Row`]s whose strings are the worker's own ids
//! (`strings::LocalStrings`). Keeps no state between chunks but the
//! worker's ids; decides nothing about jobs.

use numakit::experiment::{ArmSource, Unit};

use crate::input::{self, Chunk, MAX_LINE};
use crate::jobs::{JobKey, NONE};
use crate::line::{self, Parsed};
use crate::strings::LocalStrings;
use crate::tally::Counts;

/// Examples of bad lines kept for the report.
pub const BAD_EXAMPLES: usize = 5;

/// `CellKey::unit` of a record's unit.
pub fn unit_code(u: Option<Unit>) -> u8 {
    match u {
        None => 0,
        Some(Unit::Job) => 1,
        Some(Unit::Host) => 2,
        Some(Unit::HostPeriod) => 3,
    }
}

/// `CellKey::source` of a record's arm source: 0 for every arm drawn at
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

/// One record line, compact; strings are the worker's ids.
#[derive(Debug, Clone, Copy)]
pub struct Row {
    pub cluster: u32,
    pub job: u64,
    pub host: u32,
    pub group: u32,
    pub hw: u32,
    pub arm: u32,
    pub experiment: u32,
    pub arms: u32,
    pub unit: u8,
    pub source: u8,
    pub is_extern: bool,
    pub failed: bool,
    pub period: u64,
    pub start: f64,
    pub end: f64,
    pub cpu: f64,
    pub locality: f64,
}

/// What a worker made of one chunk.
pub struct Batch {
    /// The worker started its string table anew before this chunk.
    pub reset: bool,
    pub seq: u64,
    /// The input's line (from 0) the chunk starts at.
    pub first_line: u64,
    pub worker: usize,
    pub source: usize,
    pub counts: Counts,
    pub bad: Vec<(u64, String)>,
    pub rows: Vec<Row>,
    pub new_strings: Vec<String>,
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

pub fn parse_chunk(c: Chunk, worker: usize, by: &[&str], strings: &mut LocalStrings, pool: &input::Pool) -> Batch {
    let reset = strings.start_chunk();
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
                // a torn record whose cut fell in its schema reads as another
                // schema before the JSON's end is seen: not JSON, and a
                // record's start after it, it is torn
                Parsed::Other => match line::record_start(&rest[1..]).map(|p| p + 1) {
                    Some(p) if serde_json::from_slice::<serde::de::IgnoredAny>(rest).is_err() => {
                        counts.bad += 1;
                        counts.lines += 1;
                        if bad.len() < BAD_EXAMPLES {
                            bad.push((n as u64, line::CUT_SHORT.to_string()));
                        }
                        rest = &rest[p..];
                    }
                    _ => {
                        counts.other_schema += 1;
                        break None;
                    }
                },
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
        reset,
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
