//! Running one job: the [`Runner`] trait, the real [`ShellRunner`] and
//! the figure taken from what a run produced ([`figure`]).
//!
//! The experiment engine only sees the trait, so its statistics are tested
//! with deterministic stand-ins; `ShellRunner` is the one place that starts
//! processes (through [`super::child`]: a process group per run, output
//! read with bounds).

use std::process::Command;
use std::time::Instant;

use super::child;
use super::spec::{Aggregate, ConfigSpec, Metric};
use super::CompareError;
use crate::text::{one_line, quote};

/// Bytes of one copy's standard output a regex metric searches (its first
/// ones): the rest is read and dropped.
pub const METRIC_OUTPUT_BYTES: usize = 16 << 20;
/// Bytes of standard output kept over all the copies of a run: with many
/// copies each keeps less ([`keep_for`]).
pub const METRIC_OUTPUT_TOTAL: usize = 256 << 20;

/// The bytes of each copy's standard output the figure needs: none for
/// wall time, for a regex [`METRIC_OUTPUT_BYTES`] or an equal share of
/// [`METRIC_OUTPUT_TOTAL`], whichever is less.
pub fn keep_for(metric: &Metric, copies: usize) -> usize {
    match metric {
        Metric::WallTime => 0,
        Metric::Regex { .. } => METRIC_OUTPUT_BYTES.min(METRIC_OUTPUT_TOTAL / copies.max(1)),
    }
}

/// One run to perform.
#[derive(Debug, Clone)]
pub struct Job<'a> {
    /// The configuration.
    pub config: &'a ConfigSpec,
    /// The workload.
    pub workload: &'a str,
    /// Copies to start at once.
    pub copies: usize,
    /// A warm-up run.
    pub warmup: bool,
    /// Round number (see [`Slot`](super::schedule::Slot)).
    pub round: usize,
    /// Bytes of each copy's standard output to keep ([`keep_for`]).
    pub keep_output: usize,
}

/// What one run produced.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// Seconds from starting the first copy to the end of the last.
    pub wall_s: f64,
    /// Each copy's standard output, as far as it was kept
    /// ([`Job::keep_output`]).
    pub stdouts: Vec<Vec<u8>>,
}

/// Performs runs.
pub trait Runner {
    /// Runs `job` once: the `before` commands, the copies of
    /// `PREFIX WORKLOAD`, the `after` commands.
    fn run(&mut self, job: &Job<'_>) -> Result<Outcome, CompareError>;
}

/// The figure of one run: its wall time, or the number the regex finds in
/// each copy's output (searched as bytes), combined by `aggregate`. A
/// number that is not finite (`NaN`, `inf`, `1e400`) is refused, as is a
/// combined figure that is not.
pub fn figure(metric: &Metric, aggregate: Aggregate, out: &Outcome) -> Result<f64, String> {
    let pattern = match metric {
        Metric::WallTime => return Ok(out.wall_s),
        Metric::Regex { pattern } => pattern,
    };
    let re = super::spec::metric_regex(pattern).map_err(|e| e.to_string())?;
    let mut values = Vec::with_capacity(out.stdouts.len());
    for (i, bytes) in out.stdouts.iter().enumerate() {
        let caps = re.captures(bytes).ok_or_else(|| {
            format!("--metric-regex {} found nothing in the output of copy {i}: {}", quote(pattern), tail(bytes, 200))
        })?;
        let raw = caps.get(1).map(|m| String::from_utf8_lossy(m.as_bytes())).unwrap_or_default();
        let v: f64 = raw
            .trim()
            .parse()
            .map_err(|_| format!("--metric-regex {} captured {}, not a number", quote(pattern), quote(&raw)))?;
        if !v.is_finite() {
            return Err(format!("--metric-regex {} captured {}, not a finite number", quote(pattern), quote(&raw)));
        }
        values.push(v);
    }
    if values.is_empty() {
        return Err("the run produced no output to search".into());
    }
    let sum: f64 = values.iter().sum();
    let v = match aggregate {
        Aggregate::Sum => sum,
        Aggregate::Mean => sum / values.len() as f64,
    };
    if !v.is_finite() {
        return Err(format!("the copies' figures add up to {v}, beyond what a 64-bit float holds"));
    }
    Ok(v)
}

/// The last `max` characters of `bytes` (not UTF-8: `�`), blanks made
/// one space, on one escaped line ([`one_line`]).
pub fn tail(bytes: &[u8], max: usize) -> String {
    let text = String::from_utf8_lossy(bytes);
    let one: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let n = one.chars().count();
    if n <= max {
        if one.is_empty() {
            "(empty)".into()
        } else {
            one_line(&one, usize::MAX)
        }
    } else {
        format!("...{}", one_line(&one.chars().skip(n - max).collect::<String>(), usize::MAX))
    }
}

/// Runs jobs with `sh -c`: `before` commands one by one, then all copies
/// at once (each with `NUMAKIT_COPY` = its index and `NUMAKIT_COPIES` = the
/// count in its environment), then `after` commands (also after a failed
/// run). Each command, and all the copies together, run in a process group
/// of their own ([`child`]); of the copies' output what the figure needs is
/// kept, of every command's error output its tail. The wall time covers the
/// copies only.
#[derive(Debug, Clone, Default)]
pub struct ShellRunner;

impl ShellRunner {
    fn hook(cmd: &str, job: &Job<'_>, when: &str) -> Result<(), CompareError> {
        let start = child::spawn(Command::new("sh").arg("-c").arg(cmd), None)
            .map_err(|e| CompareError::Run(format!("cannot start sh: {e}")));
        let out = start.and_then(|c| {
            child::wait(c, 0).map_err(|e| CompareError::Run(format!("waiting for the {when} command: {e}")))
        });
        child::done();
        let out = out?;
        if !out.status.success() {
            return Err(CompareError::Run(format!(
                "config {}: {when} command {} failed ({}): {}",
                quote(&job.config.name),
                quote(cmd),
                out.status,
                tail(&out.stderr_tail, 200)
            )));
        }
        Ok(())
    }

    fn copies(job: &Job<'_>) -> Result<Outcome, CompareError> {
        let cmd = job.config.command(job.workload);
        let start = Instant::now();
        let mut children = Vec::with_capacity(job.copies);
        let mut group = None;
        for i in 0..job.copies {
            let mut c = Command::new("sh");
            c.arg("-c").arg(&cmd).env("NUMAKIT_COPY", i.to_string()).env("NUMAKIT_COPIES", job.copies.to_string());
            match child::spawn(&mut c, group) {
                Ok(c) => {
                    group = group.or(i32::try_from(c.id()).ok());
                    children.push(c);
                }
                Err(e) => {
                    child::end_running(libc::SIGKILL);
                    for mut c in children {
                        let _ = c.wait();
                    }
                    child::done();
                    return Err(CompareError::Run(format!("cannot start sh: {e}")));
                }
            }
        }
        // Each copy waited for in its own thread, reading its pipes, so
        // none blocks on a full pipe.
        let keep = job.keep_output;
        let results: Vec<std::io::Result<child::Output>> = std::thread::scope(|s| {
            let handles: Vec<_> = children.into_iter().map(|c| s.spawn(move || child::wait(c, keep))).collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|_| Err(std::io::Error::other("waiting thread panicked"))))
                .collect()
        });
        child::done();
        let wall_s = start.elapsed().as_secs_f64();
        let mut stdouts = Vec::with_capacity(results.len());
        for (i, r) in results.into_iter().enumerate() {
            let out = r.map_err(|e| CompareError::Run(format!("waiting for the workload: {e}")))?;
            if !out.status.success() {
                let copy = if job.copies > 1 { format!(" (copy {i})") } else { String::new() };
                return Err(CompareError::Run(format!(
                    "config {}: {}{copy} failed ({}): {}",
                    quote(&job.config.name),
                    quote(&cmd),
                    out.status,
                    tail(&out.stderr_tail, 200)
                )));
            }
            stdouts.push(out.stdout);
        }
        Ok(Outcome { wall_s, stdouts })
    }
}

impl Runner for ShellRunner {
    fn run(&mut self, job: &Job<'_>) -> Result<Outcome, CompareError> {
        let mut result = Ok(());
        for cmd in &job.config.before {
            result = ShellRunner::hook(cmd, job, "before");
            if result.is_err() {
                break;
            }
        }
        let outcome = result.and_then(|()| ShellRunner::copies(job));
        let mut after = Ok(());
        for cmd in &job.config.after {
            let r = ShellRunner::hook(cmd, job, "after");
            if after.is_ok() {
                after = r;
            }
        }
        let outcome = outcome?;
        after?;
        Ok(outcome)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(wall_s: f64, stdouts: &[&str]) -> Outcome {
        Outcome { wall_s, stdouts: stdouts.iter().map(|s| s.as_bytes().to_vec()).collect() }
    }

    #[test]
    fn figures() {
        let o = out(2.5, &["score: 10.5 ok", "score: 12 ok"]);
        assert_eq!(figure(&Metric::WallTime, Aggregate::Sum, &o), Ok(2.5));
        let re = Metric::Regex { pattern: r"score: ([0-9.]+)".into() };
        assert_eq!(figure(&re, Aggregate::Sum, &o), Ok(22.5));
        assert_eq!(figure(&re, Aggregate::Mean, &o), Ok(11.25));
        let e = figure(&re, Aggregate::Sum, &out(1.0, &["score: 1", "nothing"])).expect_err("no match");
        assert!(e.contains("copy 1") && e.contains("nothing"), "{e}");
        let re = Metric::Regex { pattern: r"score: (\S+)".into() };
        assert!(figure(&re, Aggregate::Sum, &out(1.0, &["score: fast"])).expect_err("nan").contains("\"fast\""));
        for bad in ["NaN", "inf", "-inf", "1e400", "infinity"] {
            let e = figure(&re, Aggregate::Sum, &out(1.0, &[&format!("score: {bad}")])).expect_err(bad);
            assert!(e.ends_with(&format!("captured \"{bad}\", not a finite number")), "{e}");
        }
        let e = figure(&re, Aggregate::Sum, &out(1.0, &["score: 1e308", "score: 1e308"])).expect_err("sum");
        assert!(e.contains("beyond what a 64-bit float holds"), "{e}");
        // Output that is not UTF-8 is searched as bytes.
        let bytes = Outcome { wall_s: 1.0, stdouts: vec![b"\xff\xfe score: 12\n".to_vec()] };
        assert_eq!(figure(&re, Aggregate::Sum, &bytes), Ok(12.0));
    }

    #[test]
    fn tails() {
        assert_eq!(tail(b"a\nb  c\n", 10), "a b c");
        assert_eq!(tail(b"", 10), "(empty)");
        assert_eq!(tail(b"0123456789", 4), "...6789");
        assert_eq!(tail(b"bad \x1b]0;x\x07 \xff", 40), "bad \\u{1b}]0;x\\u{7} \u{fffd}");
    }

    #[test]
    fn keeps_what_the_figure_needs() {
        let re = Metric::Regex { pattern: "(x)".into() };
        assert_eq!(keep_for(&Metric::WallTime, 1), 0);
        assert_eq!(keep_for(&re, 1), METRIC_OUTPUT_BYTES);
        assert_eq!(keep_for(&re, 64), 4 << 20);
        assert_eq!(keep_for(&re, 0), METRIC_OUTPUT_BYTES);
    }

    #[test]
    fn shell_runner_runs_copies_and_hooks() {
        let _turn = crate::compare::child::tests::TURN.lock().unwrap_or_else(|e| e.into_inner());
        let dir = tempfile::tempdir().expect("tempdir");
        let log = dir.path().join("log");
        let log = log.display();
        let mut c = ConfigSpec::new("c", "env");
        c.before = vec![format!("echo before >> {log}")];
        c.after = vec![format!("echo after >> {log}")];
        let job = Job {
            config: &c,
            workload: "sh -c 'echo copy=$NUMAKIT_COPY of $NUMAKIT_COPIES'",
            copies: 3,
            warmup: false,
            round: 0,
            keep_output: 1000,
        };
        let o = ShellRunner.run(&job).expect("runs");
        let mut got: Vec<String> = o.stdouts.iter().map(|b| String::from_utf8_lossy(b).into_owned()).collect();
        got.sort();
        assert_eq!(got, vec!["copy=0 of 3\n", "copy=1 of 3\n", "copy=2 of 3\n"]);
        assert!(o.wall_s > 0.0);
        let text = std::fs::read_to_string(dir.path().join("log")).expect("log");
        assert_eq!(text, "before\nafter\n");
    }

    #[test]
    fn shell_runner_failures_name_the_config() {
        let _turn = crate::compare::child::tests::TURN.lock().unwrap_or_else(|e| e.into_inner());
        let dir = tempfile::tempdir().expect("tempdir");
        let log = dir.path().join("log");
        let mut c = ConfigSpec::new("bad", "");
        c.after = vec![format!("echo after >> {}", log.display())];
        let job =
            Job { config: &c, workload: "echo oops >&2; exit 3", copies: 1, warmup: false, round: 0, keep_output: 0 };
        let e = ShellRunner.run(&job).expect_err("fails").to_string();
        assert!(e.contains("config \"bad\"") && e.contains("oops") && e.contains('3'), "{e}");
        assert_eq!(std::fs::read_to_string(&log).expect("after ran"), "after\n");
        c.before = vec!["exit 1".into()];
        let job = Job { config: &c, workload: "true", copies: 1, warmup: false, round: 0, keep_output: 0 };
        assert!(ShellRunner.run(&job).expect_err("before fails").to_string().contains("before command"));
    }
}
