//! Running one job: the [`Runner`] trait, the real [`ShellRunner`] and
//! the figure taken from what a run produced ([`figure`]).
//!
//! The experiment engine only sees the trait, so its statistics are tested
//! with deterministic stand-ins; `ShellRunner` is the one place that starts
//! processes.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::Instant;

use super::spec::{Aggregate, ConfigSpec, Metric};
use super::CompareError;

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
}

/// What one run produced.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// Seconds from starting the first copy to the end of the last.
    pub wall_s: f64,
    /// Each copy's standard output.
    pub stdouts: Vec<String>,
}

/// Performs runs.
pub trait Runner {
    /// Runs `job` once: the `before` commands, the copies of
    /// `PREFIX WORKLOAD`, the `after` commands.
    fn run(&mut self, job: &Job<'_>) -> Result<Outcome, CompareError>;
}

/// The figure of one run: its wall time, or the number the regex finds in
/// each copy's output, combined by `aggregate`.
pub fn figure(metric: &Metric, aggregate: Aggregate, out: &Outcome) -> Result<f64, String> {
    let pattern = match metric {
        Metric::WallTime => return Ok(out.wall_s),
        Metric::Regex { pattern } => pattern,
    };
    let re = super::spec::metric_regex(pattern).map_err(|e| e.to_string())?;
    let mut values = Vec::with_capacity(out.stdouts.len());
    for (i, text) in out.stdouts.iter().enumerate() {
        let caps = re.captures(text.as_bytes()).ok_or_else(|| {
            format!("--metric-regex \"{pattern}\" found nothing in the output of copy {i}: {}", tail(text, 200))
        })?;
        let raw = caps.get(1).map(|m| String::from_utf8_lossy(m.as_bytes())).unwrap_or_default();
        let v: f64 =
            raw.trim().parse().map_err(|_| format!("--metric-regex \"{pattern}\" captured \"{raw}\", not a number"))?;
        values.push(v);
    }
    if values.is_empty() {
        return Err("the run produced no output to search".into());
    }
    let sum: f64 = values.iter().sum();
    Ok(match aggregate {
        Aggregate::Sum => sum,
        Aggregate::Mean => sum / values.len() as f64,
    })
}

/// The last `max` characters of `text`, on one line.
pub fn tail(text: &str, max: usize) -> String {
    let one: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let n = one.chars().count();
    if n <= max {
        if one.is_empty() {
            "(empty)".into()
        } else {
            one
        }
    } else {
        format!("...{}", one.chars().skip(n - max).collect::<String>())
    }
}

/// Runs jobs with `sh -c`: `before` commands one by one, then all copies
/// at once (each with `NUMAKIT_COPY` = its index and `NUMAKIT_COPIES` = the
/// count in its environment), then `after` commands (also after a failed
/// run). Output of the copies is captured; the wall time covers the copies
/// only.
#[derive(Debug, Clone, Default)]
pub struct ShellRunner;

impl ShellRunner {
    fn hook(cmd: &str, job: &Job<'_>, when: &str) -> Result<(), CompareError> {
        let out = Command::new("sh")
            .arg("-c")
            .arg(cmd)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| CompareError::Run(format!("cannot start sh: {e}")))?;
        if !out.status.success() {
            return Err(CompareError::Run(format!(
                "config \"{}\": {when} command \"{cmd}\" failed ({}): {}",
                job.config.name,
                out.status,
                tail(&String::from_utf8_lossy(&out.stderr), 200)
            )));
        }
        Ok(())
    }

    fn copies(job: &Job<'_>) -> Result<Outcome, CompareError> {
        let cmd = job.config.command(job.workload);
        let start = Instant::now();
        let mut children = Vec::with_capacity(job.copies);
        for i in 0..job.copies {
            let child = Command::new("sh")
                .arg("-c")
                .arg(&cmd)
                .env("NUMAKIT_COPY", i.to_string())
                .env("NUMAKIT_COPIES", job.copies.to_string())
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .map_err(|e| CompareError::Run(format!("cannot start sh: {e}")));
            match child {
                Ok(c) => children.push(c),
                Err(e) => {
                    for mut c in children {
                        let _ = c.kill();
                        let _ = c.wait();
                    }
                    return Err(e);
                }
            }
        }
        // Drain every copy's pipes in its own thread so none blocks on a
        // full pipe, then wait for all.
        let results: Vec<std::io::Result<(std::process::ExitStatus, String, String)>> = std::thread::scope(|s| {
            let handles: Vec<_> = children
                .into_iter()
                .map(|mut c| {
                    s.spawn(move || {
                        let mut out = String::new();
                        let mut err = String::new();
                        let mut so = c.stdout.take();
                        let mut se = c.stderr.take();
                        std::thread::scope(|s2| {
                            let e = s2.spawn(|| {
                                if let Some(p) = se.as_mut() {
                                    let _ = p.read_to_string(&mut err);
                                }
                            });
                            if let Some(p) = so.as_mut() {
                                let _ = p.read_to_string(&mut out);
                            }
                            let _ = e.join();
                        });
                        c.wait().map(|st| (st, out, err))
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|_| Err(std::io::Error::other("waiting thread panicked"))))
                .collect()
        });
        let wall_s = start.elapsed().as_secs_f64();
        let mut stdouts = Vec::with_capacity(results.len());
        for (i, r) in results.into_iter().enumerate() {
            let (status, out, err) = r.map_err(|e| CompareError::Run(format!("waiting for the workload: {e}")))?;
            if !status.success() {
                let copy = if job.copies > 1 { format!(" (copy {i})") } else { String::new() };
                return Err(CompareError::Run(format!(
                    "config \"{}\": \"{cmd}\"{copy} failed ({status}): {}",
                    job.config.name,
                    tail(&err, 200)
                )));
            }
            stdouts.push(out);
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
        Outcome { wall_s, stdouts: stdouts.iter().map(|s| s.to_string()).collect() }
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
    }

    #[test]
    fn tails() {
        assert_eq!(tail("a\nb  c\n", 10), "a b c");
        assert_eq!(tail("", 10), "(empty)");
        assert_eq!(tail("0123456789", 4), "...6789");
    }

    #[test]
    fn shell_runner_runs_copies_and_hooks() {
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
        };
        let o = ShellRunner.run(&job).expect("runs");
        let mut got = o.stdouts.clone();
        got.sort();
        assert_eq!(got, vec!["copy=0 of 3\n", "copy=1 of 3\n", "copy=2 of 3\n"]);
        assert!(o.wall_s > 0.0);
        let text = std::fs::read_to_string(dir.path().join("log")).expect("log");
        assert_eq!(text, "before\nafter\n");
    }

    #[test]
    fn shell_runner_failures_name_the_config() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = dir.path().join("log");
        let mut c = ConfigSpec::new("bad", "");
        c.after = vec![format!("echo after >> {}", log.display())];
        let job = Job { config: &c, workload: "echo oops >&2; exit 3", copies: 1, warmup: false, round: 0 };
        let e = ShellRunner.run(&job).expect_err("fails").to_string();
        assert!(e.contains("config \"bad\"") && e.contains("oops") && e.contains('3'), "{e}");
        assert_eq!(std::fs::read_to_string(&log).expect("after ran"), "after\n");
        c.before = vec!["exit 1".into()];
        let job = Job { config: &c, workload: "true", copies: 1, warmup: false, round: 0 };
        assert!(ShellRunner.run(&job).expect_err("before fails").to_string().contains("before command"));
    }
}
