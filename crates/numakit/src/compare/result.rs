//! What an experiment found: per configuration the samples, their
//! summary, the change against the baseline with Welch's t-test, and the
//! planning figures; saved and loaded as JSON (schema in docs/compare.md).

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::spec::{Aggregate, Experiment, Metric, Order};
use super::CompareError;
use crate::stats_math::{runs_needed, welch_t_test, PlanRow, Summary, Welch};

/// Version of the saved JSON.
pub const SCHEMA_VERSION: u32 = 1;

/// How a configuration compares with the baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Better, significant at 5%.
    Better,
    /// Worse, significant at 5%.
    Worse,
    /// The difference is not significant at 5%.
    NoSignificantDifference,
    /// Fewer than two runs on a side: no test possible.
    NotEnoughRuns,
}

/// A configuration against the baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// The baseline's name.
    pub baseline: String,
    /// (mean - baseline mean) / baseline mean * 100.
    pub change_pct: Option<f64>,
    /// The verdict.
    pub verdict: Verdict,
    /// Welch's t-test of this configuration against the baseline.
    pub welch: Option<Welch>,
}

/// One configuration's results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfigResult {
    /// Name.
    pub name: String,
    /// Command prefix.
    pub prefix: String,
    /// Commands run before each run.
    pub before: Vec<String>,
    /// Commands run after each run.
    pub after: Vec<String>,
    /// The measured figures, in run order.
    pub samples: Vec<f64>,
    /// Their summary (`None` without samples).
    pub summary: Option<Summary>,
    /// Standard deviation / mean * 100.
    pub cv_pct: Option<f64>,
    /// Against the baseline (`None` for the baseline itself).
    pub vs_baseline: Option<Comparison>,
    /// What 1 to 5 runs give at this configuration's variability.
    pub plan: Vec<PlanRow>,
    /// Runs needed for the target confidence half-width.
    pub runs_needed: Option<usize>,
}

/// Where the baseline came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Baseline {
    /// Its configuration name.
    pub name: String,
    /// The saved results file it was loaded from (`--against`), or `None`
    /// for the first configuration of this experiment.
    pub file: Option<String>,
    /// Its samples.
    pub samples: Vec<f64>,
}

/// The whole result of an experiment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompareResult {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The workload.
    pub workload: String,
    /// The figure.
    pub metric: Metric,
    /// Unit of the figure (`s` for wall time, `None` for a regex figure).
    pub unit: Option<String>,
    /// Whether larger is better.
    pub higher_is_better: bool,
    /// Copies per run.
    pub copies: usize,
    /// How copies combine.
    pub aggregate: Aggregate,
    /// Measured runs per configuration.
    pub runs: usize,
    /// Warm-up runs per configuration.
    pub warmup: usize,
    /// Order within rounds.
    pub order: Order,
    /// Target confidence half-width, percent.
    pub target_ci_pct: Option<f64>,
    /// Names of the configurations in the order their measured runs went.
    pub sequence: Vec<String>,
    /// The baseline.
    pub baseline: Baseline,
    /// Per configuration, in the order given.
    pub configs: Vec<ConfigResult>,
}

/// Compares `samples` with `base` given the direction of "better".
pub fn compare_samples(base_name: &str, base: &[f64], samples: &[f64], higher_is_better: bool) -> Comparison {
    let mean = |xs: &[f64]| crate::stats_math::mean(xs);
    let change_pct = match (mean(base), mean(samples)) {
        (Some(b), Some(m)) if b != 0.0 => Some((m - b) / b.abs() * 100.0),
        _ => None,
    };
    let welch = welch_t_test(base, samples);
    let verdict = match &welch {
        None => Verdict::NotEnoughRuns,
        Some(w) if !w.significant => Verdict::NoSignificantDifference,
        Some(w) if (w.difference > 0.0) == higher_is_better => Verdict::Better,
        Some(_) => Verdict::Worse,
    };
    Comparison { baseline: base_name.to_string(), change_pct, verdict, welch }
}

/// Builds the result from the experiment and each configuration's samples
/// (`samples[i]` for `exp.configs[i]`). With `against` (a saved result and
/// its file name) the baseline is that result's baseline configuration;
/// otherwise the first configuration.
pub fn analyse(
    exp: &Experiment,
    samples: Vec<Vec<f64>>,
    sequence: Vec<String>,
    against: Option<(&CompareResult, &str)>,
) -> CompareResult {
    let baseline = match against {
        Some((saved, file)) => {
            let b = saved.baseline_config();
            Baseline {
                name: b.map_or(saved.baseline.name.clone(), |c| c.name.clone()),
                file: Some(file.to_string()),
                samples: b.map_or(saved.baseline.samples.clone(), |c| c.samples.clone()),
            }
        }
        None => Baseline {
            name: exp.configs.first().map(|c| c.name.clone()).unwrap_or_default(),
            file: None,
            samples: samples.first().cloned().unwrap_or_default(),
        },
    };
    let configs = exp
        .configs
        .iter()
        .zip(samples)
        .enumerate()
        .map(|(i, (c, xs))| {
            let summary = Summary::of(&xs);
            let cv_pct =
                summary.as_ref().and_then(|s| Some(s.stddev? / s.mean.abs() * 100.0)).filter(|v| v.is_finite());
            let is_baseline = against.is_none() && i == 0;
            ConfigResult {
                name: c.name.clone(),
                prefix: c.prefix.clone(),
                before: c.before.clone(),
                after: c.after.clone(),
                vs_baseline: (!is_baseline)
                    .then(|| compare_samples(&baseline.name, &baseline.samples, &xs, exp.higher_is_better)),
                plan: cv_pct.map(PlanRow::table).unwrap_or_default(),
                runs_needed: match (cv_pct, exp.target_ci_pct) {
                    (Some(cv), Some(t)) => runs_needed(cv, t),
                    _ => None,
                },
                samples: xs,
                summary,
                cv_pct,
            }
        })
        .collect();
    CompareResult {
        schema_version: SCHEMA_VERSION,
        workload: exp.workload.clone(),
        unit: matches!(exp.metric, Metric::WallTime).then(|| "s".to_string()),
        metric: exp.metric.clone(),
        higher_is_better: exp.higher_is_better,
        copies: exp.copies,
        aggregate: exp.aggregate,
        runs: exp.runs,
        warmup: exp.warmup,
        order: exp.order,
        target_ci_pct: exp.target_ci_pct,
        sequence,
        baseline,
        configs,
    }
}

impl CompareResult {
    /// The configuration that is the baseline (`None` when it came from
    /// another file).
    pub fn baseline_config(&self) -> Option<&ConfigResult> {
        if self.baseline.file.is_some() {
            return None;
        }
        self.configs.iter().find(|c| c.name == self.baseline.name)
    }

    /// The best configuration by mean, and whether it is significantly
    /// better than the baseline (`None` without any summary).
    pub fn best(&self) -> Option<(&ConfigResult, bool)> {
        let mut best: Option<&ConfigResult> = None;
        for c in &self.configs {
            let Some(s) = &c.summary else { continue };
            let better = match best.and_then(|b| b.summary.as_ref()) {
                None => true,
                Some(b) => (s.mean > b.mean) == self.higher_is_better && s.mean != b.mean,
            };
            if better {
                best = Some(c);
            }
        }
        let b = best?;
        let sure = b.vs_baseline.as_ref().is_some_and(|v| v.verdict == Verdict::Better);
        Some((b, sure))
    }

    /// Pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }

    /// Parses saved JSON, refusing other schema versions.
    pub fn from_json(text: &str) -> Result<CompareResult, CompareError> {
        let v: serde_json::Value =
            serde_json::from_str(text).map_err(|e| CompareError::Saved(format!("not JSON: {e}")))?;
        match v.get("schema_version").and_then(serde_json::Value::as_u64) {
            Some(n) if n == u64::from(SCHEMA_VERSION) => {}
            other => {
                return Err(CompareError::Saved(format!(
                    "schema_version {other:?}: this numakit reads version {SCHEMA_VERSION}"
                )))
            }
        }
        serde_json::from_value(v).map_err(|e| CompareError::Saved(format!("not a numakit compare result: {e}")))
    }

    /// Writes [`CompareResult::to_json`] to `path`.
    pub fn save(&self, path: &Path) -> Result<(), CompareError> {
        std::fs::write(path, self.to_json() + "\n")
            .map_err(|e| CompareError::Saved(format!("cannot write {}: {e}", path.display())))
    }

    /// Reads a result saved by [`CompareResult::save`].
    pub fn load(path: &Path) -> Result<CompareResult, CompareError> {
        let text = crate::files::read_named_text(path).map_err(|e| CompareError::Saved(e.to_string()))?;
        CompareResult::from_json(&text).map_err(|e| CompareError::Saved(format!("{}: {e}", crate::text::path(path))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::spec::ConfigSpec;

    fn exp(higher: bool) -> Experiment {
        let mut e = Experiment::new("w", vec![ConfigSpec::new("a", ""), ConfigSpec::new("b", "p")]);
        e.higher_is_better = higher;
        e
    }

    #[test]
    fn verdicts_follow_the_direction() {
        let slow = vec![10.0, 10.2, 9.8, 10.1, 9.9];
        let fast = vec![8.0, 8.2, 7.8, 8.1, 7.9];
        let r = analyse(&exp(false), vec![slow.clone(), fast.clone()], vec![], None);
        let v = r.configs[1].vs_baseline.as_ref().expect("compared");
        assert_eq!(v.verdict, Verdict::Better);
        assert!((v.change_pct.expect("pct") + 20.0).abs() < 1e-9);
        assert!(r.configs[0].vs_baseline.is_none());
        assert_eq!(r.best().map(|(c, sure)| (c.name.as_str(), sure)), Some(("b", true)));
        let r = analyse(&exp(true), vec![slow, fast], vec![], None);
        assert_eq!(r.configs[1].vs_baseline.as_ref().map(|v| v.verdict), Some(Verdict::Worse));
        assert_eq!(r.best().map(|(c, sure)| (c.name.as_str(), sure)), Some(("a", false)));
        let noisy = analyse(&exp(false), vec![vec![10.0, 12.0, 8.0], vec![10.5, 8.5, 11.5]], vec![], None);
        assert_eq!(noisy.configs[1].vs_baseline.as_ref().map(|v| v.verdict), Some(Verdict::NoSignificantDifference));
        let one = analyse(&exp(false), vec![vec![1.0], vec![2.0]], vec![], None);
        assert_eq!(one.configs[1].vs_baseline.as_ref().map(|v| v.verdict), Some(Verdict::NotEnoughRuns));
        assert!(one.configs[0].plan.is_empty() && one.configs[0].runs_needed.is_none());
    }

    #[test]
    fn planning_fields() {
        // mean 100, sd 5 -> cv 5%, target 1% -> t(.975,n-1)*5/sqrt(n) <= 1.
        let xs = vec![95.0, 105.0, 95.0, 105.0, 100.0 - 5.0 * 0.0];
        let r = analyse(&exp(false), vec![xs.clone(), xs], vec![], None);
        let c = &r.configs[0];
        let cv = c.cv_pct.expect("cv");
        assert_eq!(c.runs_needed, runs_needed(cv, 1.0));
        assert_eq!(c.plan.len(), 5);
        assert_eq!(r.unit.as_deref(), Some("s"));
    }

    #[test]
    fn json_round_trip_and_against() {
        let r =
            analyse(&exp(false), vec![vec![1.0, 1.1, 0.9], vec![2.0, 2.1, 1.9]], vec!["a".into(), "b".into()], None);
        let back = CompareResult::from_json(&r.to_json()).expect("round trip");
        // Samples come back exactly; derived figures to the last digit or so
        // (serde_json's default float parsing).
        assert_eq!(
            back.configs.iter().map(|c| &c.samples).collect::<Vec<_>>(),
            vec![&r.configs[0].samples, &r.configs[1].samples]
        );
        assert_eq!((&back.baseline, &back.sequence, back.order), (&r.baseline, &r.sequence, r.order));
        let (m0, m1) =
            (back.configs[1].summary.as_ref().map(|s| s.mean), r.configs[1].summary.as_ref().map(|s| s.mean));
        assert!((m0.unwrap_or(0.0) - m1.unwrap_or(1.0)).abs() < 1e-12);
        let dir = tempfile::tempdir().expect("dir");
        let p = dir.path().join("r.json");
        r.save(&p).expect("save");
        let saved = CompareResult::load(&p).expect("load");
        // Re-baselining: both new configurations against the saved "a".
        let now =
            analyse(&exp(false), vec![vec![1.0, 1.05, 0.95], vec![0.5, 0.55, 0.45]], vec![], Some((&saved, "r.json")));
        assert_eq!((now.baseline.name.as_str(), now.baseline.file.as_deref()), ("a", Some("r.json")));
        assert_eq!(now.baseline.samples, vec![1.0, 1.1, 0.9]);
        assert!(now.configs.iter().all(|c| c.vs_baseline.is_some()));
        assert_eq!(now.configs[1].vs_baseline.as_ref().map(|v| v.verdict), Some(Verdict::Better));
        assert!(now.baseline_config().is_none());
        let e = CompareResult::from_json("{\"schema_version\": 9}").expect_err("version");
        assert!(e.to_string().contains("version 1"), "{e}");
        assert!(CompareResult::from_json("[").is_err());
        assert!(CompareResult::load(&dir.path().join("missing")).is_err());
    }
}
