//! Slurm's accounting joined job by job: reading `sacct --parsable2`
//! output (from a file, or from `sacct` run here with [`sacct_args`]) and
//! folding each job's row into the job table beside the job's records.
//!
//! The join: a sacct row whose JobIDRaw has no `.` is the job's own row;
//! it joins the records of the same cluster and job id (the records'
//! `job`, Slurm's own id also for an array task, which is JobIDRaw).
//! Step rows (`123.batch`, `123.0`, `123.extern`) are counted and not
//! joined: a job's outcome is the unit of the analysis, and the job row's
//! TotalCPU is the sum over its steps, as the records' CPU time is. A job
//! whose row has a state other than COMPLETED or an ExitCode other than
//! `0:0` counts as failed. With outcomes from sacct, the job's wall time
//! is ElapsedRaw and its CPU time TotalCPU.

mod child;

use std::io::BufRead;
use std::time::Duration;

use crate::collect::Collector;
use crate::jobs::{JobAcc, SACCT, SACCT_FAILED};

/// The fields `numakit report --sacct` asks for, in this order; a saved
/// file without a header must have them in this order.
pub const FORMAT: &str = "JobIDRaw,Cluster,ElapsedRaw,TotalCPU,State,ExitCode";

/// The most of a saved sacct file (`--sacct-file`) read, a regular file
/// read whole through `numakit::files::read_bounded` (some 4.5 million
/// rows of [`FORMAT`]).
pub const MAX_FILE_BYTES: u64 = 256 << 20;

/// sacct's job states as the report counts them (index 0: unknown, the
/// State column missing or empty).
pub const STATES: &[&str] = &[
    "",
    "COMPLETED",
    "FAILED",
    "CANCELLED",
    "TIMEOUT",
    "OUT_OF_MEMORY",
    "NODE_FAIL",
    "PREEMPTED",
    "BOOT_FAIL",
    "DEADLINE",
    "RUNNING",
    "PENDING",
    "REQUEUED",
    "SUSPENDED",
    "OTHER",
];

/// A sacct field's column.
#[derive(Debug, Clone, Copy)]
struct Columns {
    job: usize,
    cluster: Option<usize>,
    elapsed: Option<(usize, bool)>, // (column, raw seconds)
    cpu: Option<usize>,
    state: Option<usize>,
    exit: Option<usize>,
}

const DEFAULT: Columns =
    Columns { job: 0, cluster: Some(1), elapsed: Some((2, true)), cpu: Some(3), state: Some(4), exit: Some(5) };

/// The names a header may hold (lower case), and the column each fills.
const NAMES: &[&str] = &["jobidraw", "jobid", "cluster", "elapsedraw", "elapsed", "totalcpu", "state", "exitcode"];

/// The columns of a header line: `None` when `line` is not one (none of
/// its fields is a field name sacct writes), `Some(Err)` when it is one
/// without a job id column.
fn header(line: &str) -> Option<Result<Columns, String>> {
    let names: Vec<String> = line.split('|').map(|s| s.trim().to_ascii_lowercase()).collect();
    if !names.iter().any(|n| NAMES.contains(&n.as_str())) {
        return None;
    }
    let at = |n: &str| names.iter().position(|x| x == n);
    let Some(job) = at("jobidraw").or_else(|| at("jobid")) else {
        return Some(Err("its header has no JobIDRaw or JobID column".into()));
    };
    Some(Ok(Columns {
        job,
        cluster: at("cluster"),
        elapsed: at("elapsedraw").map(|i| (i, true)).or_else(|| at("elapsed").map(|i| (i, false))),
        cpu: at("totalcpu"),
        state: at("state"),
        exit: at("exitcode"),
    }))
}

impl Columns {
    /// The columns [`FORMAT`] names that these lack.
    fn missing(&self) -> Vec<String> {
        [
            ("Cluster", self.cluster.is_none()),
            ("ElapsedRaw", self.elapsed.is_none()),
            ("TotalCPU", self.cpu.is_none()),
            ("State", self.state.is_none()),
            ("ExitCode", self.exit.is_none()),
        ]
        .iter()
        .filter(|x| x.1)
        .map(|x| x.0.to_string())
        .collect()
    }
}

/// sacct's `[DD-][HH:]MM:SS[.mmm]` as seconds.
pub fn duration(s: &str) -> Option<f64> {
    let s = s.trim();
    let (days, rest) = match s.split_once('-') {
        Some((d, r)) => (d.parse::<f64>().ok()?, r),
        None => (0.0, s),
    };
    let parts: Vec<&str> = rest.split(':').collect();
    if parts.is_empty() || parts.len() > 3 || parts.iter().any(|p| p.is_empty()) {
        return None;
    }
    let mut total = 0.0;
    for p in &parts {
        let v: f64 = p.parse().ok()?;
        if !(v.is_finite() && v >= 0.0) {
            return None;
        }
        total = total * 60.0 + v;
    }
    Some(days * 86_400.0 + total)
}

/// The index in [`STATES`] of a state as sacct writes it (`CANCELLED by
/// 1000`, `RUNNING+`); 0 for an empty one: unknown.
fn state_index(s: &str) -> u8 {
    let word = s.split_whitespace().next().unwrap_or("").trim_end_matches('+');
    if word.is_empty() {
        return 0;
    }
    STATES.iter().position(|x| *x == word).map_or((STATES.len() - 1) as u8, |i| i as u8)
}

/// The longest line of sacct's output read (its rows are some 60 bytes);
/// a longer one is skipped and counted as not understood.
pub const MAX_LINE: usize = 64 << 10;

/// What [`next_line`] found.
enum Line {
    Whole,
    TooLong,
    End,
}

/// The next line of `r` (without its newline) into `buf`: at most
/// [`MAX_LINE`] bytes are kept, a longer line is read to its end and
/// dropped.
fn next_line(r: &mut impl BufRead, buf: &mut Vec<u8>) -> std::io::Result<Line> {
    buf.clear();
    let mut too_long = false;
    let mut any = false;
    loop {
        let avail = match r.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if avail.is_empty() {
            return Ok(match (any, too_long) {
                (false, _) => Line::End,
                (true, true) => Line::TooLong,
                (true, false) => Line::Whole,
            });
        }
        any = true;
        let (part, found) = match avail.iter().position(|&b| b == b'\n') {
            Some(i) => (&avail[..i], Some(i + 1)),
            None => (avail, None),
        };
        if !too_long {
            if buf.len() + part.len() > MAX_LINE {
                too_long = true;
                buf.clear();
            } else {
                buf.extend_from_slice(part);
            }
        }
        let used = found.unwrap_or(avail.len());
        r.consume(used);
        if found.is_some() {
            return Ok(if too_long { Line::TooLong } else { Line::Whole });
        }
    }
}

/// Rows read: [job rows, step rows, lines not understood].
pub type Rows = [u64; 3];

/// Folds sacct's output `r` into `c`: the rows read and the columns of
/// [`FORMAT`] its header lacks. The first line that is not blank (after a
/// UTF-8 byte order mark, which is dropped) is the header when any of its
/// fields is one of sacct's field names; without a header the columns
/// are [`FORMAT`]'s. A missing or empty State is unknown (not failed);
/// a missing ExitCode says nothing either. `default_cluster` is used
/// where the output has no Cluster column. An error (an I/O error's text,
/// a header without a job id column) is one line.
pub fn read(r: impl BufRead, c: &mut Collector, default_cluster: Option<&str>) -> Result<(Rows, Vec<String>), String> {
    let mut rows: Rows = [0; 3];
    let mut cols: Option<Columns> = None;
    let mut first = true;
    let mut r = r;
    let mut buf = Vec::new();
    loop {
        match next_line(&mut r, &mut buf).map_err(|e| crate::input::io_text(&e))? {
            Line::End => break,
            Line::TooLong => {
                rows[2] += 1;
                continue;
            }
            Line::Whole => {}
        }
        let line = String::from_utf8_lossy(&buf);
        let line = line.strip_prefix('\u{feff}').filter(|_| first).unwrap_or(&line);
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() {
            continue;
        }
        if std::mem::take(&mut first) {
            if let Some(h) = header(line) {
                cols = Some(h?);
                continue;
            }
        }
        let k = cols.unwrap_or(DEFAULT);
        let f: Vec<&str> = line.split('|').collect();
        let get = |i: Option<usize>| i.and_then(|i| f.get(i)).map(|s| s.trim());
        let Some(id) = get(Some(k.job)).filter(|s| !s.is_empty()) else {
            rows[2] += 1;
            continue;
        };
        if id.contains('.') {
            rows[1] += 1;
            continue;
        }
        let cluster = get(k.cluster).filter(|s| !s.is_empty()).or(default_cluster);
        let Some(cluster) = cluster else {
            rows[2] += 1;
            continue;
        };
        let elapsed = k.elapsed.and_then(|(i, raw)| {
            let s = f.get(i)?.trim();
            if raw {
                s.parse::<f64>().ok()
            } else {
                duration(s)
            }
        });
        let cpu = get(k.cpu).and_then(duration);
        // a figure beyond any job's (inf, NaN, a negative or absurd one) is none
        let time = |x: Option<f64>| x.filter(|x| (0.0..=crate::parse::MAX_UNIX).contains(x));
        let (elapsed, cpu) = (time(elapsed), time(cpu));
        let state = get(k.state).map_or(0, state_index);
        let exit_ok = get(k.exit).is_none_or(|e| e.split(':').all(|x| x.trim() == "0"));
        let mut flags = SACCT;
        if state > 1 || !exit_ok {
            flags |= SACCT_FAILED;
        }
        let acc = JobAcc {
            sacct_elapsed: elapsed.unwrap_or(f64::NAN),
            sacct_cpu: cpu.unwrap_or(f64::NAN),
            sacct_state: state,
            flags,
            ..JobAcc::EMPTY
        };
        c.sacct_row(cluster, id, &acc).map_err(|e| crate::input::io_text(&e))?;
        rows[0] += 1;
    }
    Ok((rows, cols.map_or_else(Vec::new, |k| k.missing())))
}

/// `YYYY-MM-DDTHH:MM:SS` (UTC) of `secs`.
fn sacct_time(secs: f64) -> String {
    let s = numakit::units::utc_rfc3339(secs.max(0.0) as u64);
    s.trim_end_matches('Z').to_string()
}

/// The arguments `numakit report --sacct` runs `sacct` with (with `TZ=UTC`
/// in its environment, so the times are UTC): every user's jobs of the
/// records' clusters active from a minute before the first record's
/// start to a minute after the last one's end, one row per job and step,
/// fields [`FORMAT`], `|`-separated, no header.
pub fn sacct_args(clusters: &[&str], span: (f64, f64)) -> Vec<String> {
    vec![
        "--parsable2".into(),
        "--noheader".into(),
        "--allusers".into(),
        format!("--clusters={}", clusters.join(",")),
        format!("--starttime={}", sacct_time(span.0.floor() - 60.0)),
        format!("--endtime={}", sacct_time(span.1.ceil() + 60.0)),
        format!("--format={FORMAT}"),
    ]
}

/// The most output of `sacct` read (some 20 million rows of [`FORMAT`];
/// it is streamed, not kept): beyond, it is stopped.
pub const MAX_OUTPUT_BYTES: u64 = 1 << 30;

/// Runs `program` (`sacct`) with `args`, folding its output into `c` as it
/// comes. Stopped, with its process group, after `timeout` (whoever holds
/// its output pipe) or [`MAX_OUTPUT_BYTES`] of output. An error is one
/// line.
pub fn run(
    program: &str,
    args: &[String],
    timeout: Duration,
    c: &mut Collector,
) -> Result<(Rows, Vec<String>), String> {
    let mut out = child::Output::spawn(program, args, &[("TZ", "UTC")], timeout, MAX_OUTPUT_BYTES)
        .map_err(|e| format!("cannot run {program}: {}", crate::input::io_text(&e)))?;
    let result = read(std::io::BufReader::with_capacity(1 << 20, &mut out), c, None);
    let (status, err, stop) = out.finish();
    match stop {
        Some(child::Stop::TimedOut) => {
            return Err(format!("{program} did not finish within {} s and was stopped", timeout.as_secs()))
        }
        Some(child::Stop::TooMuch) => {
            return Err(format!(
                "{program} printed more than {}, the most numakit reads of its output, and was stopped",
                numakit::units::human_bytes(MAX_OUTPUT_BYTES)
            ))
        }
        None => {}
    }
    match status {
        Some(st) if st.success() => result,
        _ => {
            let text = String::from_utf8_lossy(&err);
            let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
            let how = status.map_or("ended".to_string(), |st| format!("failed ({st})"));
            Err(format!("{program} {how}: {}", numakit::text::one_line(first, 200)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_in_sacct_formats() {
        assert_eq!(duration("00:01.234"), Some(1.234));
        assert_eq!(duration("12:34:56"), Some(45_296.0));
        assert_eq!(duration("1-02:03:04"), Some(93_784.0));
        assert_eq!(duration("02:03"), Some(123.0));
        assert_eq!(duration(""), None);
        assert_eq!(duration("1:2:3:4"), None);
        assert_eq!(duration("x"), None);
        assert_eq!(state_index("CANCELLED by 1000"), 3);
        assert_eq!(state_index("COMPLETED"), 1);
        assert_eq!(state_index("WEIRD"), (STATES.len() - 1) as u8);
        assert_eq!(state_index(" "), 0, "unknown");
    }

    #[test]
    fn lines_are_bounded() {
        let mut input = b"a\n".to_vec();
        input.extend(std::iter::repeat_n(b'x', 3 * MAX_LINE));
        input.extend_from_slice(b"\nb\nlast");
        let mut r = std::io::BufReader::with_capacity(1000, input.as_slice());
        let mut buf = Vec::new();
        let mut seen = Vec::new();
        loop {
            match next_line(&mut r, &mut buf).expect("read") {
                Line::End => break,
                Line::TooLong => seen.push("(too long)".to_string()),
                Line::Whole => seen.push(String::from_utf8_lossy(&buf).into_owned()),
            }
            assert!(buf.len() <= MAX_LINE);
        }
        assert_eq!(seen, ["a", "(too long)", "b", "last"]);
    }

    #[test]
    fn arguments_name_the_span_in_utc() {
        let a = sacct_args(&["farm"], (86_400.0 + 90.5, 2.0 * 86_400.0));
        assert!(a.contains(&"--starttime=1970-01-02T00:00:30".to_string()), "{a:?}");
        assert!(a.contains(&"--endtime=1970-01-03T00:01:00".to_string()), "{a:?}");
        assert!(a.contains(&"--clusters=farm".to_string()) && a.contains(&format!("--format={FORMAT}")));
    }
}
