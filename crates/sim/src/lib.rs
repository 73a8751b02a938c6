//! A deterministic simulator of NUMA farms, to prove the daemon: numakit's
//! decision core ([`daemon::decide`](numakit::daemon::decide)) against no
//! placement, static binding at start, numad's published algorithm, the
//! kernel's automatic NUMA balancing and an oracle, on the same machines,
//! jobs and random draws.
//!
//! * [`machines`]: 2 to 32 nodes with CPUs, memory per node, firmware
//!   distances and the truth (access-time and bandwidth ratios, bandwidth);
//! * [`workload`]: job classes (memory-bound long, cache-resident, short,
//!   one copy per CPU, larger than a node, mixed) and the batch queue;
//! * [`cost`]: the cost model from published figures;
//! * [`engine`]: simulated time (no sleeping), scheduler with drift, first
//!   touch, contention, AutoNUMA, and the one action applier;
//! * [`policy`], [`numad`]: the six policies, and [`action`] what they
//!   ask for with their reasons (numakit's, or another placer's words);
//! * [`scenario`], [`report`]: named and seeded scenarios, results,
//!   distributions and the targets;
//! * [`simtrace`], [`plot`]: `numakit simulate --trace` as text, and
//!   `--svg`'s chart.
//!
//! Everything is a function of the seeds: the same scenario gives the same
//! numbers on every run and machine. Nothing here reads or changes the
//! system, and nothing prints. The decision core it runs is the library's
//! (`numakit::daemon`); nothing of the simulator lives in the library.

#![deny(missing_docs)]

pub mod action;
pub mod cost;
pub mod engine;
pub mod machines;
pub mod numad;
pub mod plot;
pub mod policy;
pub mod report;
pub mod rng;
pub mod scenario;
pub mod simtrace;
pub mod workload;

use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use numakit::daemon::Config;
use serde::Serialize;

pub use action::{Reason, SimAction};
pub use cost::CostModel;
pub use engine::{Engine, RunOutcome, SimParams, TraceEvent};
pub use machines::SimMachine;
pub use report::{
    ClassSummary, Distribution, HeldOut, HeldOutClass, Paired, PolicyResult, Quartiles, Report, ScenarioResult,
    Targets, HELD_OUT_SEEDS,
};
pub use scenario::Scenario;
pub use workload::{Class, JobSpec, Workload};

use policy::{AutoNuma, Numakit, Oracle, Policy, StaticBind, Untuned};

/// The policies in report order.
pub const POLICIES: [&str; 6] = ["untuned", "static", "numad", "autonuma", "numakit", "oracle"];

/// Settings of a simulation run.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// Cost model.
    pub cost: CostModel,
    /// Engine parameters.
    pub params: SimParams,
    /// numakit's daemon configuration.
    pub config: Config,
}

/// A fresh policy by name (one of [`POLICIES`]).
pub fn make_policy(name: &str, m: &SimMachine, s: &Settings) -> Option<Box<dyn Policy>> {
    Some(match name {
        "untuned" => Box::new(Untuned),
        "static" => Box::new(StaticBind::new(m)),
        "numad" => Box::new(numad::Numad::default()),
        "autonuma" => Box::new(AutoNuma),
        "numakit" => Box::new(Numakit { config: s.config.clone(), history: numakit::daemon::History::new() }),
        "oracle" => Box::new(Oracle::new(m, &s.cost)),
        _ => return None,
    })
}

/// Runs one policy on one scenario.
pub fn run_policy(sc: &Scenario, policy: &str, s: &Settings) -> Option<RunOutcome> {
    run_with(sc, policy, s, false)
}

fn run_with(sc: &Scenario, policy: &str, s: &Settings, traced: bool) -> Option<RunOutcome> {
    let mut p = make_policy(policy, &sc.machine, s)?;
    let engine = Engine::new(&sc.machine, &sc.workload, &s.cost, &s.params, sc.seed);
    let engine = if traced { engine.traced() } else { engine };
    Some(engine.run(p.as_mut(), sc.horizon_s))
}

/// Runs one policy on one scenario, traced: the outcome's
/// [`trace`](RunOutcome::trace) holds every job start and end, every
/// applied action and the work rate of every minute (the results are those
/// of [`run_policy`]).
pub fn trace_policy(sc: &Scenario, policy: &str, s: &Settings) -> Option<RunOutcome> {
    run_with(sc, policy, s, true)
}

/// One policy's traced run of a scenario.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TracedRun {
    /// The policy (one of [`POLICIES`]).
    pub policy: String,
    /// Nominal CPU-seconds of work per second over the horizon.
    pub throughput: f64,
    /// Pages (4 KiB) migrated.
    pub pages_migrated: u64,
    /// Bind actions applied.
    pub binds: u64,
    /// Reverts applied.
    pub reverts: u64,
    /// Every job start and end, every applied action, the work rate of
    /// every minute, in order.
    pub events: Vec<TraceEvent>,
}

/// `numakit simulate --trace`: some policies' traced runs of one scenario.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TraceReport {
    /// Scenario name.
    pub scenario: String,
    /// Machine name.
    pub machine: String,
    /// Simulated seconds.
    pub horizon_s: f64,
    /// One per policy, in the order asked.
    pub runs: Vec<TracedRun>,
}

/// Traces `policies` (names from [`POLICIES`]; unknown names are skipped)
/// on one scenario.
pub fn trace(sc: &Scenario, policies: &[&str], s: &Settings) -> TraceReport {
    let runs = policies
        .iter()
        .filter_map(|p| {
            trace_policy(sc, p, s).map(|o| TracedRun {
                policy: p.to_string(),
                throughput: o.throughput(),
                pages_migrated: o.pages_migrated,
                binds: o.binds,
                reverts: o.reverts,
                events: o.trace,
            })
        })
        .collect();
    TraceReport { scenario: sc.name.clone(), machine: sc.machine_name.clone(), horizon_s: sc.horizon_s, runs }
}

/// Runs every policy on one scenario.
pub fn run_scenario(sc: &Scenario, s: &Settings) -> ScenarioResult {
    run_scenario_with(sc, s, &POLICIES)
}

/// Runs some policies on one scenario (the targets need `untuned`, `numad`,
/// `numakit` and `oracle`).
pub fn run_scenario_with(sc: &Scenario, s: &Settings, policies: &[&str]) -> ScenarioResult {
    let runs: Vec<(String, RunOutcome)> =
        policies.iter().filter_map(|p| run_policy(sc, p, s).map(|o| (p.to_string(), o))).collect();
    ScenarioResult::from_runs(&sc.name, sc.class, &sc.machine_name, sc.seed, sc.random, &runs)
}

/// Runs scenarios on `threads` threads (results in input order; the same
/// whatever the thread count).
pub fn run_all(scenarios: &[Scenario], s: &Settings, threads: usize) -> Vec<ScenarioResult> {
    run_all_with(scenarios, s, threads, &POLICIES)
}

/// [`run_all`] with some policies only.
pub fn run_all_with(scenarios: &[Scenario], s: &Settings, threads: usize, policies: &[&str]) -> Vec<ScenarioResult> {
    let next = AtomicUsize::new(0);
    let out: Mutex<Vec<Option<ScenarioResult>>> = Mutex::new(vec![None; scenarios.len()]);
    std::thread::scope(|scope| {
        for _ in 0..threads.max(1) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(sc) = scenarios.get(i) else { break };
                let r = run_scenario_with(sc, s, policies);
                if let Ok(mut o) = out.lock() {
                    o[i] = Some(r);
                }
            });
        }
    });
    out.into_inner().unwrap_or_default().into_iter().flatten().collect()
}

/// The report for the named scenarios and the random farms of every class
/// from the generator seeds of `seeds`.
pub fn report(named: bool, seeds: Range<u64>, s: &Settings, threads: usize) -> Report {
    let mut scenarios = if named { Scenario::named() } else { Vec::new() };
    scenarios.extend(Scenario::random_range(seeds));
    Report::new(run_all(&scenarios, s, threads))
}

/// The held-out report: the random farms of every class from the
/// [`HELD_OUT_SEEDS`] and the criteria per class ([`HeldOut`]). Only the
/// policies the criteria compare are run (untuned, numad, numakit, the
/// oracle).
pub fn held_out(s: &Settings, threads: usize) -> HeldOut {
    let policies = ["untuned", "numad", "numakit", "oracle"];
    let results = run_all_with(&Scenario::random_range(HELD_OUT_SEEDS), s, threads, &policies);
    let refs: Vec<&ScenarioResult> = results.iter().collect();
    HeldOut::new(HELD_OUT_SEEDS, &refs)
}

#[cfg(test)]
mod tests;
