//! Results: per scenario and policy the throughput relative to the oracle
//! and to untuned, pages migrated, binds, reverts and the worst per-job
//! slowdown versus untuned; per class and policy the distribution (min,
//! p5, median, mean); the three targets checked; and numakit against
//! numad scenario by scenario (above, tied, below, the sign test, the mean
//! ratio with its confidence interval). Plain data: the CLI renders it.

use std::collections::BTreeMap;
use std::ops::Range;

use numakit::stats_math::{median_of_sorted, sign_test, SignTest, Summary};
use serde::Serialize;

use super::engine::RunOutcome;
use super::workload::Class;

/// One policy in one scenario.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PolicyResult {
    /// Policy name.
    pub policy: String,
    /// Nominal CPU-seconds of work per second.
    pub throughput: f64,
    /// Throughput / the oracle's.
    pub vs_oracle: f64,
    /// Throughput / untuned's.
    pub vs_untuned: f64,
    /// Pages (4 KiB) migrated.
    pub pages_migrated: u64,
    /// Binds applied.
    pub binds: u64,
    /// Reverts applied.
    pub reverts: u64,
    /// Worst per-job slowdown versus untuned (0.05: one job ran 5 % slower
    /// than under untuned), over jobs that ran at least 30 s under both.
    pub worst_job_slowdown: f64,
}

/// One scenario.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScenarioResult {
    /// Name.
    pub name: String,
    /// Class.
    pub class: Class,
    /// Machine.
    pub machine: String,
    /// Seed.
    pub seed: u64,
    /// Generated from a seed.
    pub random: bool,
    /// Per policy, in the order run.
    pub policies: Vec<PolicyResult>,
}

impl ScenarioResult {
    /// Builds the result from raw runs (`runs[i]` = (policy, outcome)).
    pub fn from_runs(
        name: &str,
        class: Class,
        machine: &str,
        seed: u64,
        random: bool,
        runs: &[(String, RunOutcome)],
    ) -> Self {
        let tp = |p: &str| runs.iter().find(|r| r.0 == p).map_or(f64::NAN, |r| r.1.throughput());
        let (oracle, untuned) = (tp("oracle"), tp("untuned"));
        let base = runs.iter().find(|r| r.0 == "untuned").map(|r| &r.1);
        let policies = runs
            .iter()
            .map(|(name, o)| {
                let mut worst: f64 = 0.0;
                if let Some(b) = base {
                    for (idx, (jo, threads)) in &o.jobs {
                        if let Some((ju, _)) = b.jobs.get(idx) {
                            let (su, sp) = (ju.speed(*threads), jo.speed(*threads));
                            if sp > 0.0 {
                                worst = worst.max(su / sp - 1.0);
                            }
                        }
                    }
                }
                PolicyResult {
                    policy: name.clone(),
                    throughput: o.throughput(),
                    vs_oracle: o.throughput() / oracle,
                    vs_untuned: o.throughput() / untuned,
                    pages_migrated: o.pages_migrated,
                    binds: o.binds,
                    reverts: o.reverts,
                    worst_job_slowdown: worst,
                }
            })
            .collect();
        Self { name: name.into(), class, machine: machine.into(), seed, random, policies }
    }

    /// A policy's result.
    pub fn policy(&self, name: &str) -> Option<&PolicyResult> {
        self.policies.iter().find(|p| p.policy == name)
    }
}

/// min, 5th percentile, median, mean.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Distribution {
    /// Values.
    pub n: usize,
    /// Minimum.
    pub min: f64,
    /// 5th percentile (nearest rank).
    pub p5: f64,
    /// Median.
    pub median: f64,
    /// Mean.
    pub mean: f64,
}

impl Distribution {
    /// Of some values (NaN-free); `None` when empty.
    pub fn of(values: &[f64]) -> Option<Self> {
        if values.is_empty() {
            return None;
        }
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        Some(Self {
            n,
            min: v[0],
            p5: nearest_rank(&v, 0.05),
            median: median_of_sorted(&v)?,
            mean: v.iter().sum::<f64>() / n as f64,
        })
    }
}

/// The `q` quantile of sorted, non-empty values by nearest rank.
fn nearest_rank(sorted: &[f64], q: f64) -> f64 {
    let n = sorted.len();
    sorted[((q * n as f64).ceil() as usize).clamp(1, n) - 1]
}

/// min, quartiles (nearest rank) and max.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Quartiles {
    /// Minimum.
    pub min: f64,
    /// First quartile.
    pub q1: f64,
    /// Median.
    pub median: f64,
    /// Third quartile.
    pub q3: f64,
    /// Maximum.
    pub max: f64,
}

impl Quartiles {
    /// Of some values (NaN-free); `None` when empty.
    pub fn of(values: &[f64]) -> Option<Self> {
        if values.is_empty() {
            return None;
        }
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        Some(Self {
            min: v[0],
            q1: nearest_rank(&v, 0.25),
            median: median_of_sorted(&v)?,
            q3: nearest_rank(&v, 0.75),
            max: v[v.len() - 1],
        })
    }
}

/// Distribution of one policy over a class's scenarios.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClassSummary {
    /// Which scenarios: `named`, `random-CLASS` or `random-all`.
    pub set: String,
    /// Class (`None`: all classes).
    pub class: Option<Class>,
    /// Policy.
    pub policy: String,
    /// Throughput / oracle.
    pub vs_oracle: Distribution,
    /// Throughput / untuned.
    pub vs_untuned: Distribution,
    /// Worst per-job slowdown versus untuned.
    pub worst_job_slowdown: Distribution,
    /// Pages migrated.
    pub pages_migrated: Distribution,
}

/// Relative throughput differences smaller than this are ties: two runs
/// that placed every job alike can still differ in the last digits by the
/// order in which their floating-point sums were taken (1e-14 relative is
/// seen), and that is not numakit doing worse than numad.
pub const TIE: f64 = 1e-9;

/// The three targets over a set of scenarios.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Targets {
    /// Scenarios checked.
    pub scenarios: usize,
    /// Scenarios where numakit's throughput is below numad's by more than a
    /// [`TIE`] (name, numakit/numad).
    pub below_numad: Vec<(String, f64)>,
    /// Mean of numakit's throughput / oracle.
    pub mean_vs_oracle: f64,
    /// Scenarios where numakit is below untuned by more than 0.5 % (name, numakit/untuned).
    pub below_untuned: Vec<(String, f64)>,
    /// All three met.
    pub met: bool,
}

impl Targets {
    /// Checks numakit ≥ numad everywhere, mean ≥ 95 % of the oracle, and
    /// never more than 0.5 % below untuned.
    pub fn check(results: &[&ScenarioResult]) -> Self {
        let mut below_numad = Vec::new();
        let mut below_untuned = Vec::new();
        let mut sum = 0.0;
        for r in results {
            let (Some(k), Some(d)) = (r.policy("numakit"), r.policy("numad")) else { continue };
            if k.throughput < d.throughput * (1.0 - TIE) {
                below_numad.push((r.name.clone(), k.throughput / d.throughput));
            }
            if k.vs_untuned < 0.995 {
                below_untuned.push((r.name.clone(), k.vs_untuned));
            }
            sum += k.vs_oracle;
        }
        let mean = if results.is_empty() { f64::NAN } else { sum / results.len() as f64 };
        Self {
            scenarios: results.len(),
            met: below_numad.is_empty() && below_untuned.is_empty() && mean >= 0.95,
            below_numad,
            mean_vs_oracle: mean,
            below_untuned,
        }
    }
}

/// numakit against numad scenario by scenario over a set of scenarios:
/// how often it does better, as well or worse, whether that split could be
/// chance (the sign test), and the ratio of their throughputs with a 95 %
/// confidence interval of its mean. The random farms of a class are a
/// sample of what its generator makes, so the test and the interval speak
/// of a farm drawn from that generator; for the named scenarios, a fixed
/// list, they only describe it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Paired {
    /// Which scenarios: `named`, `random-CLASS` or `random-all`.
    pub set: String,
    /// Scenarios compared.
    pub scenarios: usize,
    /// numakit above numad by more than a [`TIE`].
    pub above: usize,
    /// Within a [`TIE`] of each other.
    pub tied: usize,
    /// numakit below numad by more than a [`TIE`].
    pub below: usize,
    /// The exact sign test of above against below (`None` when all tie).
    pub sign: Option<SignTest>,
    /// numakit's throughput / numad's, over the scenarios.
    pub ratio: Summary,
}

impl Paired {
    /// Of some scenarios (those with both policies); `None` when none has.
    pub fn of(set: &str, results: &[&ScenarioResult]) -> Option<Self> {
        let ratios: Vec<f64> = results
            .iter()
            .filter_map(|r| Some(r.policy("numakit")?.throughput / r.policy("numad")?.throughput))
            .collect();
        let above = ratios.iter().filter(|&&x| x > 1.0 + TIE).count();
        let below = ratios.iter().filter(|&&x| x < 1.0 - TIE).count();
        Some(Self {
            set: set.to_string(),
            scenarios: ratios.len(),
            above,
            tied: ratios.len() - above - below,
            below,
            sign: sign_test(above, below),
            ratio: Summary::of(&ratios)?,
        })
    }
}

/// The whole report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// Per scenario.
    pub scenarios: Vec<ScenarioResult>,
    /// Per policy over the named scenarios, then per class and policy over
    /// the random ones, then per policy over all random ones.
    pub summaries: Vec<ClassSummary>,
    /// Targets over the named scenarios.
    pub targets_named: Targets,
    /// Targets over the random scenarios (`None` when none ran).
    pub targets_random: Option<Targets>,
    /// numakit against numad: over the named scenarios, the random farms
    /// of each class, and all random farms.
    pub vs_numad: Vec<Paired>,
}

fn summarize(set: &str, class: Option<Class>, results: &[&ScenarioResult]) -> Vec<ClassSummary> {
    let mut by_policy: BTreeMap<usize, (String, Vec<[f64; 4]>)> = BTreeMap::new();
    for r in results {
        for (i, p) in r.policies.iter().enumerate() {
            by_policy.entry(i).or_insert_with(|| (p.policy.clone(), Vec::new())).1.push([
                p.vs_oracle,
                p.vs_untuned,
                p.worst_job_slowdown,
                p.pages_migrated as f64,
            ]);
        }
    }
    by_policy
        .into_values()
        .filter_map(|(policy, rows)| {
            let col = |k: usize| rows.iter().map(|r| r[k]).collect::<Vec<f64>>();
            Some(ClassSummary {
                set: set.to_string(),
                class,
                policy,
                vs_oracle: Distribution::of(&col(0))?,
                vs_untuned: Distribution::of(&col(1))?,
                worst_job_slowdown: Distribution::of(&col(2))?,
                pages_migrated: Distribution::of(&col(3))?,
            })
        })
        .collect()
}

impl Report {
    /// Builds the report from scenario results.
    pub fn new(scenarios: Vec<ScenarioResult>) -> Self {
        let named: Vec<&ScenarioResult> = scenarios.iter().filter(|s| !s.random).collect();
        let random: Vec<&ScenarioResult> = scenarios.iter().filter(|s| s.random).collect();
        let mut summaries = summarize("named", None, &named);
        let mut vs_numad: Vec<Paired> = Paired::of("named", &named).into_iter().collect();
        for class in Class::ALL {
            let these: Vec<&ScenarioResult> = random.iter().copied().filter(|s| s.class == class).collect();
            let set = format!("random-{}", class.name());
            summaries.extend(summarize(&set, Some(class), &these));
            vs_numad.extend(Paired::of(&set, &these));
        }
        let targets_named = Targets::check(&named);
        let targets_random = (!random.is_empty()).then(|| Targets::check(&random));
        if !random.is_empty() {
            summaries.extend(summarize("random-all", None, &random));
            vs_numad.extend(Paired::of("random-all", &random));
        }
        Self { scenarios, summaries, targets_named, targets_random, vs_numad }
    }
}

/// The generator seeds of the held-out report, for every class: never used
/// while the daemon's rules were developed (those saw seeds 0 to 99).
pub const HELD_OUT_SEEDS: Range<u64> = 1000..1100;

/// Held-out criterion: numakit above numad with the sign test's p below this.
pub const HELD_OUT_P: f64 = 0.01;
/// Held-out criterion: numakit's mean throughput at least this share of the
/// oracle's.
pub const HELD_OUT_ORACLE: f64 = 0.95;
/// Held-out criterion: no farm with numakit below this share of untuned
/// (0.5 % below).
pub const HELD_OUT_UNTUNED: f64 = 0.995;

/// The held-out report of one class: numakit against numad farm by farm,
/// against the oracle and against untuned, and whether the three criteria
/// hold (numakit above numad with sign-test p < [`HELD_OUT_P`]; mean ≥
/// [`HELD_OUT_ORACLE`] of the oracle; no farm below [`HELD_OUT_UNTUNED`]
/// of untuned).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HeldOutClass {
    /// The class.
    pub class: Class,
    /// numakit against numad: above, tied, below, the sign test, and
    /// numakit / numad with its mean's 95 % interval.
    pub vs_numad: Paired,
    /// numakit / numad: min, quartiles, max.
    pub vs_numad_quartiles: Quartiles,
    /// numakit / oracle: its mean with the 95 % interval.
    pub vs_oracle: Summary,
    /// The farm where numakit does worst against untuned: (name,
    /// numakit / untuned).
    pub worst_vs_untuned: (String, f64),
    /// numakit above numad (more farms above than below) with the sign
    /// test's p < [`HELD_OUT_P`].
    pub above_numad: bool,
    /// Mean of numakit / oracle ≥ [`HELD_OUT_ORACLE`].
    pub near_oracle: bool,
    /// No farm with numakit / untuned below [`HELD_OUT_UNTUNED`].
    pub never_below_untuned: bool,
}

impl HeldOutClass {
    /// Of one class's farms (those with numakit, numad, untuned and the
    /// oracle); `None` when there are none.
    pub fn of(class: Class, results: &[&ScenarioResult]) -> Option<Self> {
        let vs_numad = Paired::of(&format!("random-{}", class.name()), results)?;
        let ratios: Vec<f64> = results
            .iter()
            .filter_map(|r| Some(r.policy("numakit")?.throughput / r.policy("numad")?.throughput))
            .collect();
        let k: Vec<&ScenarioResult> = results.iter().copied().filter(|r| r.policy("numakit").is_some()).collect();
        let oracle: Vec<f64> = k.iter().filter_map(|r| r.policy("numakit")).map(|p| p.vs_oracle).collect();
        let worst = k
            .iter()
            .filter_map(|r| Some((r.name.clone(), r.policy("numakit")?.vs_untuned)))
            .min_by(|a, b| a.1.total_cmp(&b.1))?;
        let vs_oracle = Summary::of(&oracle)?;
        let above_numad = vs_numad.above > vs_numad.below && vs_numad.sign.is_some_and(|t| t.p_value < HELD_OUT_P);
        Some(Self {
            class,
            vs_numad_quartiles: Quartiles::of(&ratios)?,
            above_numad,
            near_oracle: vs_oracle.mean >= HELD_OUT_ORACLE,
            never_below_untuned: worst.1 >= HELD_OUT_UNTUNED,
            vs_numad,
            vs_oracle,
            worst_vs_untuned: worst,
        })
    }

    /// All three criteria hold.
    pub fn met(&self) -> bool {
        self.above_numad && self.near_oracle && self.never_below_untuned
    }
}

/// The held-out report: per class, [`HeldOutClass`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HeldOut {
    /// First generator seed.
    pub first_seed: u64,
    /// Last generator seed.
    pub last_seed: u64,
    /// Per class, in [`Class::ALL`] order (classes without farms left out).
    pub classes: Vec<HeldOutClass>,
    /// Every criterion holds on every class.
    pub met: bool,
}

impl HeldOut {
    /// Of the random farms of `results` (named scenarios are left out),
    /// run on the generator seeds of `seeds`.
    pub fn new(seeds: Range<u64>, results: &[&ScenarioResult]) -> Self {
        let classes: Vec<HeldOutClass> = Class::ALL
            .iter()
            .filter_map(|&c| {
                let these: Vec<&ScenarioResult> =
                    results.iter().copied().filter(|r| r.random && r.class == c).collect();
                HeldOutClass::of(c, &these)
            })
            .collect();
        Self {
            first_seed: seeds.start,
            last_seed: seeds.end.saturating_sub(1),
            met: !classes.is_empty() && classes.iter().all(HeldOutClass::met),
            classes,
        }
    }
}

#[cfg(test)]
mod tests;
