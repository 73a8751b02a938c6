//! What an experiment is: the workload, the configurations, how often and
//! in which order to run them, and which number to compare. Built from
//! `--config NAME=PREFIX` flags and/or a TOML experiment file.

use serde::{Deserialize, Serialize};

use super::CompareError;
use crate::text::quote;

/// The most measured runs per configuration (`--runs`, `runs`): the
/// runs-needed estimate is capped there too.
pub const MAX_RUNS: usize = 100_000;
/// The most warm-up runs per configuration (`--warmup`, `warmup`).
pub const MAX_WARMUP: usize = 100_000;
/// The most copies run at once (`--copies`, `copies`, `per-cpu`).
pub const MAX_COPIES: usize = 4096;
/// The most runs of an experiment in all (configurations × (warm-ups +
/// runs)): the schedule and the results are held in memory.
pub const MAX_TOTAL_RUNS: usize = 1_000_000;

/// One configuration: a command prefix placed before the workload, and
/// commands run (through `sh -c`, untimed) before and after each run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigSpec {
    /// Name shown in reports (unique in an experiment).
    pub name: String,
    /// Prefix placed before the workload, e.g. `numakit run -N 0 -m 0`
    /// (empty: the workload as is).
    pub prefix: String,
    /// Commands run before each run of this configuration.
    #[serde(default)]
    pub before: Vec<String>,
    /// Commands run after each run (also when the run failed).
    #[serde(default)]
    pub after: Vec<String>,
}

impl ConfigSpec {
    /// A configuration with only a prefix.
    pub fn new(name: impl Into<String>, prefix: impl Into<String>) -> ConfigSpec {
        ConfigSpec { name: name.into(), prefix: prefix.into(), before: Vec::new(), after: Vec::new() }
    }

    /// Parses the `--config` syntax `NAME=PREFIX` (`NAME=` for no prefix).
    pub fn parse_flag(text: &str) -> Result<ConfigSpec, CompareError> {
        let (name, prefix) = text.split_once('=').ok_or_else(|| {
            CompareError::Spec(format!(
                "--config {}: expected NAME=PREFIX, e.g. local='numakit run -N 0 -m 0'",
                quote(text)
            ))
        })?;
        let name = name.trim();
        check_name(name)?;
        Ok(ConfigSpec::new(name, prefix.trim()))
    }

    /// The shell command of one run: `PREFIX WORKLOAD`.
    pub fn command(&self, workload: &str) -> String {
        if self.prefix.is_empty() {
            workload.to_string()
        } else {
            format!("{} {}", self.prefix, workload)
        }
    }
}

fn check_name(name: &str) -> Result<(), CompareError> {
    if name.is_empty() || name.chars().any(|c| c.is_control()) {
        return Err(CompareError::Spec(format!("invalid configuration name {}", quote(name))));
    }
    Ok(())
}

/// The order of runs within each round.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Order {
    /// Configurations in the order given, every round: A B C A B C ...
    Interleaved,
    /// Each round a fresh random permutation, from this seed.
    Shuffled {
        /// Seed of the per-round permutations.
        seed: u64,
    },
}

/// What happens to the copies' figures when several run at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Aggregate {
    /// The sum of the copies' figures (throughput, as HEPSPEC06 adds its
    /// copies' scores).
    Sum,
    /// Their mean.
    Mean,
}

/// The figure compared.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Metric {
    /// Wall time of the run in seconds (with copies: from the start of the
    /// first to the end of the last).
    WallTime,
    /// The number in the first capture group of the first match of this
    /// regular expression in each copy's standard output.
    Regex {
        /// The regular expression.
        pattern: String,
    },
}

/// A `Regex` metric's pattern, compiled. Its classes are ASCII (`\d` is
/// `[0-9]`, the digits a number parses from; `\w`, `\s` and `(?i)` alike)
/// and it searches the output's bytes, so output that is not UTF-8 is
/// searched too. Non-ASCII letters in the pattern match themselves.
pub fn metric_regex(pattern: &str) -> Result<regex::bytes::Regex, regex::Error> {
    regex::bytes::RegexBuilder::new(pattern).unicode(false).build()
}

/// A whole experiment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Experiment {
    /// The workload, a shell command line (run as `sh -c "PREFIX WORKLOAD"`).
    pub workload: String,
    /// Configurations; the first is the baseline.
    pub configs: Vec<ConfigSpec>,
    /// Measured runs per configuration.
    pub runs: usize,
    /// Unmeasured warm-up runs per configuration, before the measured ones.
    pub warmup: usize,
    /// Order within a round.
    pub order: Order,
    /// The figure.
    pub metric: Metric,
    /// Whether a larger figure is better (default: smaller is better, as
    /// for times).
    pub higher_is_better: bool,
    /// Copies of the workload run at once in each run (1: just one).
    pub copies: usize,
    /// How the copies' figures combine (ignored for wall time).
    pub aggregate: Aggregate,
    /// Target half-width of the 95% confidence interval, percent of the
    /// mean, for the runs-needed estimate.
    pub target_ci_pct: Option<f64>,
}

impl Experiment {
    /// An experiment with the defaults: 10 runs, 1 warm-up, interleaved,
    /// wall time, one copy, target ±1%.
    pub fn new(workload: impl Into<String>, configs: Vec<ConfigSpec>) -> Experiment {
        Experiment {
            workload: workload.into(),
            configs,
            runs: 10,
            warmup: 1,
            order: Order::Interleaved,
            metric: Metric::WallTime,
            higher_is_better: false,
            copies: 1,
            aggregate: Aggregate::Sum,
            target_ci_pct: Some(1.0),
        }
    }

    /// Checks what can be checked before running: a workload, at least one
    /// configuration, unique names, at least one run, counts within
    /// [`MAX_RUNS`], [`MAX_WARMUP`], [`MAX_COPIES`] and [`MAX_TOTAL_RUNS`],
    /// a valid regex.
    pub fn validate(&self) -> Result<(), CompareError> {
        if self.workload.trim().is_empty() {
            return Err(CompareError::Spec("no workload given".into()));
        }
        if self.configs.is_empty() {
            return Err(CompareError::Spec("no configuration given (use --config NAME=PREFIX)".into()));
        }
        for (i, c) in self.configs.iter().enumerate() {
            check_name(&c.name)?;
            if self.configs[..i].iter().any(|o| o.name == c.name) {
                return Err(CompareError::Spec(format!("configuration {} is given twice", quote(&c.name))));
            }
        }
        if self.runs == 0 {
            return Err(CompareError::Spec("--runs must be at least 1".into()));
        }
        if self.copies == 0 {
            return Err(CompareError::Spec("--copies must be at least 1".into()));
        }
        for (flag, n, max) in [
            ("--runs", self.runs, MAX_RUNS),
            ("--warmup", self.warmup, MAX_WARMUP),
            ("--copies", self.copies, MAX_COPIES),
        ] {
            if n > max {
                return Err(CompareError::Spec(format!("{flag} {n}: at most {max}")));
            }
        }
        let total = self.total_runs();
        if total.is_none_or(|t| t > MAX_TOTAL_RUNS) {
            return Err(CompareError::Spec(format!(
                "{} configurations of {} warm-up and {} measured runs each: more than {MAX_TOTAL_RUNS} runs in all",
                self.configs.len(),
                self.warmup,
                self.runs
            )));
        }
        if let Some(t) = self.target_ci_pct {
            if !(t > 0.0 && t.is_finite()) {
                return Err(CompareError::Spec(format!("--target-ci {t}: must be a positive percentage")));
            }
        }
        if let Metric::Regex { pattern } = &self.metric {
            let re = metric_regex(pattern)
                .map_err(|e| CompareError::Spec(format!("--metric-regex: {}", one_line(&e.to_string()))))?;
            if re.captures_len() < 2 {
                return Err(CompareError::Spec(format!(
                    "--metric-regex {} has no capture group: put the number in ( )",
                    quote(pattern)
                )));
            }
        }
        Ok(())
    }

    /// Runs in all, warm-ups included (`None` if that does not fit a
    /// `usize`).
    pub fn total_runs(&self) -> Option<usize> {
        self.configs.len().checked_mul(self.warmup.checked_add(self.runs)?)
    }
}

fn one_line(s: &str) -> String {
    let collapsed = s.split_whitespace().collect::<Vec<_>>().join(" ");
    crate::text::one_line(&collapsed, 4 * crate::text::QUOTE_MAX_CHARS)
}

/// The TOML experiment file (`numakit compare --experiment FILE`). Every
/// key is optional; command-line flags override it.
///
/// ```toml
/// workload = "./solver --size 4096"
/// runs = 10
/// warmup = 1
/// shuffle_seed = 7          # per-round random order (default: interleaved)
/// metric_regex = "time: ([0-9.]+) s"
/// higher_is_better = false
/// copies = "per-cpu"        # or a number
/// aggregate = "sum"         # or "mean"
/// target_ci = 1.0           # percent
///
/// [[config]]
/// name = "default"
///
/// [[config]]
/// name = "node0"
/// placement = "-N 0 -m 0"   # numakit run -N 0 -m 0 WORKLOAD
///
/// [[config]]
/// name = "tuned"
/// tune = "throughput"       # numakit tune apply throughput / numakit tune revert
/// ```
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExperimentFile {
    /// The workload.
    pub workload: Option<String>,
    /// Measured runs per configuration.
    pub runs: Option<usize>,
    /// Warm-up runs per configuration.
    pub warmup: Option<usize>,
    /// Seed for a per-round random order.
    pub shuffle_seed: Option<u64>,
    /// Regular expression with the figure in its first group.
    pub metric_regex: Option<String>,
    /// Larger figures are better.
    pub higher_is_better: Option<bool>,
    /// `"per-cpu"` or a number.
    pub copies: Option<CopiesSpec>,
    /// `"sum"` or `"mean"`.
    pub aggregate: Option<Aggregate>,
    /// Target CI half-width, percent.
    pub target_ci: Option<f64>,
    /// The configurations.
    #[serde(default, rename = "config")]
    pub configs: Vec<FileConfig>,
}

/// How many copies: a number or one per CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum CopiesSpec {
    /// This many.
    Count(usize),
    /// `"per-cpu"`.
    Named(CopiesName),
}

/// The named copy counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum CopiesName {
    /// One copy per CPU the caller may use.
    #[serde(rename = "per-cpu")]
    PerCpu,
}

impl CopiesSpec {
    /// Parses `per-cpu` or a number (the `--copies` flag).
    pub fn parse(text: &str) -> Result<CopiesSpec, CompareError> {
        match text.trim() {
            "per-cpu" => Ok(CopiesSpec::Named(CopiesName::PerCpu)),
            t => {
                t.parse::<usize>().ok().filter(|&n| n > 0 && n <= MAX_COPIES).map(CopiesSpec::Count).ok_or_else(|| {
                    CompareError::Spec(format!(
                        "--copies {}: use per-cpu or a number from 1 to {MAX_COPIES}",
                        quote(text)
                    ))
                })
            }
        }
    }

    /// The number of copies, given the number of usable CPUs.
    pub fn count(self, cpus: usize) -> usize {
        match self {
            CopiesSpec::Count(n) => n,
            CopiesSpec::Named(CopiesName::PerCpu) => cpus.max(1),
        }
    }
}

/// One `[[config]]` of the experiment file. `prefix`, `placement`, `tune`,
/// `before` and `after` combine: the tune profile is applied before the
/// other `before` commands and reverted after the `after` commands.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    /// Name.
    pub name: String,
    /// A raw command prefix.
    pub prefix: Option<String>,
    /// `numakit run` placement options (`-N 0 -m 0`, `--interleave all`).
    pub placement: Option<String>,
    /// A `numakit tune` profile to apply before each run and revert after.
    pub tune: Option<String>,
    /// Commands to run before each run.
    #[serde(default)]
    pub before: Vec<String>,
    /// Commands to run after each run.
    #[serde(default)]
    pub after: Vec<String>,
    /// Reserved for the numakit daemon on/off (not available yet).
    pub daemon: Option<bool>,
}

impl ExperimentFile {
    /// Parses the TOML text.
    pub fn parse(text: &str) -> Result<ExperimentFile, CompareError> {
        toml::from_str(text).map_err(|e| CompareError::Spec(format!("experiment file: {}", one_line(&e.to_string()))))
    }

    /// The configurations as run: `numakit` is the command that starts
    /// numakit itself (its path), used for `placement` and `tune`.
    pub fn config_specs(&self, numakit: &str) -> Result<Vec<ConfigSpec>, CompareError> {
        self.configs.iter().map(|c| c.to_spec(numakit)).collect()
    }
}

impl FileConfig {
    fn to_spec(&self, numakit: &str) -> Result<ConfigSpec, CompareError> {
        check_name(&self.name)?;
        if self.daemon.is_some() {
            return Err(CompareError::Spec(format!(
                "config {}: daemon on/off is not available yet (remove the daemon key)",
                quote(&self.name)
            )));
        }
        let mut prefix = Vec::new();
        if let Some(p) = &self.placement {
            prefix.push(format!("{} run {}", sh_quote(numakit), p.trim()));
        }
        if let Some(p) = &self.prefix {
            prefix.push(p.trim().to_string());
        }
        let mut before = Vec::new();
        let mut after = self.after.clone();
        if let Some(profile) = &self.tune {
            before.push(format!("{} tune apply {}", sh_quote(numakit), sh_quote(profile)));
            after.push(format!("{} tune revert", sh_quote(numakit)));
        }
        before.extend(self.before.iter().cloned());
        Ok(ConfigSpec { name: self.name.clone(), prefix: prefix.join(" "), before, after })
    }
}

/// Quotes a word for `sh` when it needs it.
pub fn sh_quote(word: &str) -> String {
    if !word.is_empty() && word.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c)) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ASCII classes: `\d` takes the digits a number parses from and not
    /// other scripts' digits; a non-ASCII literal matches itself; output
    /// that is not UTF-8 is searched.
    #[test]
    fn metric_regex_is_ascii_over_bytes() {
        let re = metric_regex(r"time: (\d+)").expect("compiles");
        assert!(re.captures("time: \u{663}\u{664}".as_bytes()).is_none());
        assert_eq!(&re.captures(b"x time: 42 s").expect("match")[1], b"42");
        let re = metric_regex("([0-9.]+) \u{b5}s").expect("compiles");
        assert_eq!(&re.captures("took 3.5 \u{b5}s".as_bytes()).expect("match")[1], b"3.5");
        let re = metric_regex(r"(?i)rate=([0-9]+)").expect("compiles");
        assert_eq!(&re.captures(b"\xff\xfe RATE=7").expect("match")[1], b"7");
        assert!(metric_regex(r"\p{Greek}").is_err());
    }

    #[test]
    fn config_flags() {
        let c = ConfigSpec::parse_flag("local=numakit run -N 0 -m 0").expect("flag");
        assert_eq!((c.name.as_str(), c.prefix.as_str()), ("local", "numakit run -N 0 -m 0"));
        assert_eq!(c.command("./w --n 3"), "numakit run -N 0 -m 0 ./w --n 3");
        let plain = ConfigSpec::parse_flag("plain=").expect("empty prefix");
        assert_eq!(plain.command("./w"), "./w");
        assert!(ConfigSpec::parse_flag("noequals").is_err());
        assert!(ConfigSpec::parse_flag("=x").is_err());
    }

    #[test]
    fn validation() {
        let mut e = Experiment::new("true", vec![ConfigSpec::new("a", ""), ConfigSpec::new("b", "")]);
        assert!(e.validate().is_ok());
        e.configs.push(ConfigSpec::new("a", "x"));
        assert!(e.validate().expect_err("dup").to_string().contains("\"a\" is given twice"));
        e.configs.pop();
        e.metric = Metric::Regex { pattern: "time: [0-9]+".into() };
        assert!(e.validate().expect_err("no group").to_string().contains("no capture group"));
        e.metric = Metric::Regex { pattern: "time: ([0-9]+".into() };
        assert!(e.validate().expect_err("bad").to_string().contains("--metric-regex"));
        e.metric = Metric::WallTime;
        e.runs = 0;
        assert!(e.validate().is_err());
        e.runs = 3;
        e.workload = " ".into();
        assert!(e.validate().is_err());
        e.workload = "true".into();
        for (runs, warmup, copies, what) in [
            (usize::MAX, 1, 1, "--runs 18446744073709551615: at most 100000"),
            (4_294_967_296, 1, 1, "--runs 4294967296: at most 100000"),
            (10, usize::MAX, 1, "--warmup 18446744073709551615: at most 100000"),
            (10, 1, 5000, "--copies 5000: at most 4096"),
            (100_000, 100_000, 1, "6 configurations of 100000 warm-up and 100000 measured runs each: more than"),
        ] {
            if what.starts_with('6') {
                e.configs.extend((0..4).map(|i| ConfigSpec::new(format!("c{i}"), "")));
            }
            (e.runs, e.warmup, e.copies) = (runs, warmup, copies);
            let err = e.validate().expect_err(what).to_string();
            assert!(err.contains(what), "{err}");
        }
        e.configs.truncate(2);
        (e.runs, e.warmup, e.copies) = (MAX_RUNS, 0, MAX_COPIES);
        assert!(e.validate().is_ok());
        e.configs[0].name = "a\x1b]0;x\x07".into();
        let err = e.validate().expect_err("name").to_string();
        assert!(!err.chars().any(char::is_control), "{err}");
    }

    #[test]
    fn experiment_file() {
        let f = ExperimentFile::parse(
            r#"
            workload = "./w"
            runs = 5
            shuffle_seed = 3
            copies = "per-cpu"
            aggregate = "mean"
            [[config]]
            name = "default"
            [[config]]
            name = "node0"
            placement = "-N 0 -m 0"
            [[config]]
            name = "tuned"
            tune = "throughput"
            before = ["sync"]
            after = ["echo done"]
            "#,
        )
        .expect("parses");
        assert_eq!((f.runs, f.shuffle_seed, f.aggregate), (Some(5), Some(3), Some(Aggregate::Mean)));
        assert_eq!(f.copies.map(|c| c.count(8)), Some(8));
        let specs = f.config_specs("/usr/bin/numakit").expect("specs");
        assert_eq!(specs[0], ConfigSpec::new("default", ""));
        assert_eq!(specs[1].prefix, "/usr/bin/numakit run -N 0 -m 0");
        assert_eq!(specs[2].before, vec!["/usr/bin/numakit tune apply throughput".to_string(), "sync".to_string()]);
        assert_eq!(specs[2].after, vec!["echo done".to_string(), "/usr/bin/numakit tune revert".to_string()]);

        let f = ExperimentFile::parse("copies = 4\n[[config]]\nname = \"d\"\ndaemon = true\n").expect("parses");
        assert_eq!(f.copies, Some(CopiesSpec::Count(4)));
        assert!(f.config_specs("numakit").expect_err("daemon").to_string().contains("not available yet"));
        let e = ExperimentFile::parse("runz = 3").expect_err("unknown key");
        assert!(e.to_string().contains("runz"), "{e}");
    }

    #[test]
    fn copies_flag() {
        assert_eq!(CopiesSpec::parse("per-cpu").expect("named").count(6), 6);
        assert_eq!(CopiesSpec::parse("3").expect("number").count(6), 3);
        assert!(CopiesSpec::parse("0").is_err() && CopiesSpec::parse("many").is_err());
        assert!(CopiesSpec::parse("4097").is_err() && CopiesSpec::parse("4096").is_ok());
    }

    #[test]
    fn quoting() {
        assert_eq!(sh_quote("/usr/bin/numakit"), "/usr/bin/numakit");
        assert_eq!(sh_quote("a b"), "'a b'");
        assert_eq!(sh_quote("it's"), "'it'\\''s'");
    }
}
