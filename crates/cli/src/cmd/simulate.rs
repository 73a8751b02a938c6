//! `numakit simulate`: runs the deterministic NUMA farm simulator
//! ([`numakit_sim`]) and prints, per scenario, every policy's throughput
//! relative to the oracle, pages migrated and the worst per-job slowdown
//! versus untuned; with `--all`, the distributions over random farms and
//! the three targets; with `--svg`, a chart of the same; with
//! `--held-out`, the random farms of the held-out generator seeds and the
//! criteria the daemon is judged by. Never reads or changes the system.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;

use clap::Args;
use numakit::stats_math::{SignTest, Summary};
use numakit::sys::SysRoot;
use numakit_sim::{self as sim, plot, simtrace, HeldOut, Paired, Report, Scenario, ScenarioResult, Settings, Targets};

use crate::Failure;

/// `numakit simulate`.
#[derive(Debug, Args)]
pub struct SimulateArgs {
    /// Run one scenario: a named one (see --list) or random-CLASS-SEED.
    #[arg(long, value_name = "NAME", conflicts_with = "all")]
    pub scenario: Option<String>,
    /// Run the named scenarios and SEEDS random farms per workload class.
    #[arg(long)]
    pub all: bool,
    /// Random farms per class with --all.
    #[arg(long, value_name = "N", default_value_t = 100, requires = "all")]
    pub seeds: u64,
    /// With --all, the random farms' first generator seed (seeds N to
    /// N + SEEDS - 1).
    #[arg(long, value_name = "N", default_value_t = 0, requires = "all")]
    pub first_seed: u64,
    /// Run the random farms of the held-out generator seeds (1000 to 1099,
    /// never used while the daemon's rules were developed) and print per
    /// class numakit against numad, the oracle and untuned, and whether the
    /// criteria hold.
    #[arg(long, conflicts_with_all = ["scenario", "all", "list", "trace", "svg"])]
    pub held_out: bool,
    #[command(flatten)]
    pub format: crate::cli::JsonOut,
    /// List the named scenarios and exit.
    #[arg(long, conflicts_with_all = ["scenario", "all"])]
    pub list: bool,
    /// Simulate without hardware counters (numakit assumes the memory stall
    /// share and judges moves by CPU time).
    #[arg(long)]
    pub no_counters: bool,
    /// A diagnostic, not the model of record: threads demand no memory
    /// bandwidth, so no node is ever saturated (what part of a gap comes
    /// from bandwidth, which numakit's daemon is not told).
    #[arg(long)]
    pub no_contention: bool,
    /// Trace the scenario given with --scenario: every job start and end,
    /// every action each policy applied with its reason, and the work rate
    /// of every minute side by side (with --json, as JSON).
    #[arg(long, requires = "scenario", conflicts_with_all = ["svg", "list"])]
    pub trace: bool,
    /// With --trace, the policies to trace (comma-separated or repeated;
    /// default: numad,numakit).
    #[arg(long = "policy", value_name = "NAME", value_delimiter = ',', requires = "trace")]
    pub policies: Vec<String>,
    /// Worker threads (default: all CPUs).
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// Also draw the chart (per scenario set, each policy's throughput
    /// relative to the oracle) to FILE ("-": standard output instead of the
    /// report).
    #[arg(long, value_name = "FILE", conflicts_with = "list")]
    pub svg: Option<PathBuf>,
}

/// Runs `numakit simulate`.
pub fn run(_sys: &SysRoot, args: &SimulateArgs) -> anyhow::Result<u8> {
    let mut out = crate::output::stdout();
    if args.list {
        for s in Scenario::named() {
            writeln!(out, "{:14} {:8} {}", s.name, s.class.name(), s.machine_name)?;
        }
        return Ok(0);
    }
    let mut settings = Settings::default();
    settings.params.counters = !args.no_counters;
    if args.no_contention {
        settings.cost.bw_per_stall_gbs = 0.0;
    }
    if args.trace {
        return trace(&mut out, args, &settings);
    }
    let threads = args.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    if args.held_out {
        let h = sim::held_out(&settings, threads);
        if args.format.json {
            serde_json::to_writer_pretty(&mut out, &h)?;
            writeln!(out)?;
        } else {
            out.write_all(render_held_out(&h).as_bytes())?;
        }
        return Ok(0);
    }
    let report = match &args.scenario {
        Some(name) => {
            let sc = scenario(name)?;
            Report::new(vec![sim::run_scenario(&sc, &settings)])
        }
        None => {
            let seeds = if args.all { args.first_seed..args.first_seed.saturating_add(args.seeds) } else { 0..0 };
            sim::report(true, seeds, &settings, threads)
        }
    };
    match &args.svg {
        Some(p) if p.as_os_str() == "-" => {
            out.write_all(plot::simulate_svg(&report).map_err(Failure::system)?.as_bytes())?;
            return Ok(0);
        }
        Some(p) => {
            let s = plot::simulate_svg(&report).map_err(Failure::system)?;
            std::fs::write(p, s).map_err(|e| Failure::system(format!("cannot write {}: {e}", p.display())))?;
        }
        None => {}
    }
    if args.format.json {
        serde_json::to_writer_pretty(&mut out, &report)?;
        writeln!(out)?;
    } else {
        out.write_all(render(&report, args.scenario.is_none()).as_bytes())?;
    }
    Ok(0)
}

/// A named or random-CLASS-SEED scenario, or a usage error naming it.
fn scenario(name: &str) -> Result<Scenario, Failure> {
    Scenario::by_name(name)
        .ok_or_else(|| Failure::usage(format!("no scenario {name:?} (see --list, or random-CLASS-SEED)")))
}

/// `--trace`: the chosen policies' traced runs of one scenario.
fn trace(out: &mut impl std::io::Write, args: &SimulateArgs, settings: &Settings) -> anyhow::Result<u8> {
    let name = args.scenario.as_deref().unwrap_or_default();
    let sc = scenario(name)?;
    let mut policies: Vec<&str> = args.policies.iter().map(String::as_str).collect();
    if policies.is_empty() {
        policies = vec!["numad", "numakit"];
    }
    if let Some(bad) = policies.iter().find(|p| !sim::POLICIES.contains(p)) {
        return Err(Failure::usage(format!("no policy {bad:?} (one of {})", sim::POLICIES.join(", "))).into());
    }
    let report = sim::trace(&sc, &policies, settings);
    if args.format.json {
        serde_json::to_writer_pretty(&mut *out, &report)?;
        writeln!(out)?;
    } else {
        out.write_all(simtrace::text(&report).as_bytes())?;
    }
    Ok(0)
}

fn pages(n: u64) -> String {
    match n {
        0 => "0".into(),
        n if n < 10_000 => n.to_string(),
        n if n < 10_000_000 => format!("{:.0}k", n as f64 / 1e3),
        n => format!("{:.1}M", n as f64 / 1e6),
    }
}

fn scenario_table(out: &mut String, results: &[&ScenarioResult]) {
    let Some(first) = results.first() else { return };
    let names: Vec<&str> = first.policies.iter().map(|p| p.policy.as_str()).collect();
    let _ = write!(out, "{:22} {:9}", "scenario", "machine");
    for n in &names {
        let _ = write!(out, " {n:>9}");
    }
    out.push('\n');
    for r in results {
        let _ = write!(out, "{:22} {:9}", r.name, r.machine);
        for p in &r.policies {
            let _ = write!(out, " {:>9.4}", p.vs_oracle);
        }
        let _ = write!(out, "\n{:32}", "  pages migrated");
        for p in &r.policies {
            let _ = write!(out, " {:>9}", pages(p.pages_migrated));
        }
        let _ = write!(out, "\n{:32}", "  worst job vs untuned");
        for p in &r.policies {
            let _ = write!(out, " {:>8.1}%", p.worst_job_slowdown * 100.0);
        }
        out.push('\n');
    }
}

fn targets(out: &mut String, what: &str, t: &Targets) {
    let yes = |b: bool| if b { "met" } else { "MISSED" };
    let _ = writeln!(out, "targets over {what} ({} scenarios): {}", t.scenarios, yes(t.met));
    let worst_numad = t.below_numad.iter().map(|x| x.1).fold(f64::INFINITY, f64::min);
    let _ = writeln!(
        out,
        "  numakit >= numad on every scenario: {} ({} below{})",
        yes(t.below_numad.is_empty()),
        t.below_numad.len(),
        if t.below_numad.is_empty() { String::new() } else { format!(", worst {:.4} of numad", worst_numad) }
    );
    let _ = writeln!(
        out,
        "  mean throughput vs oracle >= 0.95: {} ({:.4})",
        yes(t.mean_vs_oracle >= 0.95),
        t.mean_vs_oracle
    );
    let worst_untuned = t.below_untuned.iter().map(|x| x.1).fold(f64::INFINITY, f64::min);
    let _ = writeln!(
        out,
        "  never more than 0.5% below untuned: {} ({} below{})",
        yes(t.below_untuned.is_empty()),
        t.below_untuned.len(),
        if t.below_untuned.is_empty() { String::new() } else { format!(", worst {worst_untuned:.4} of untuned") }
    );
    for (name, x) in t.below_numad.iter().take(10) {
        let _ = writeln!(out, "    below numad: {name} ({x:.4})");
    }
    for (name, x) in t.below_untuned.iter().take(10) {
        let _ = writeln!(out, "    below untuned: {name} ({x:.4})");
    }
}

/// A sign test's p as the tables print it (`-`: no test).
fn p_text(sign: Option<SignTest>) -> String {
    match sign.map(|t| t.p_value) {
        None => "-".to_string(),
        Some(p) if p >= 0.001 => format!("{p:.3}"),
        Some(p) => format!("{p:.1e}"),
    }
}

/// A mean's 95 % interval as the tables print it (`-`: none).
fn ci_text(s: &Summary) -> String {
    match (s.ci_low, s.ci_high) {
        (Some(lo), Some(hi)) => format!("{lo:.4} to {hi:.4}"),
        _ => "-".to_string(),
    }
}

/// numakit against numad scenario by scenario, one line per set.
fn paired(out: &mut String, sets: &[Paired]) {
    out.push_str("numakit against numad, scenario by scenario: above, tied (within 1e-9) or below; p, the exact\n");
    out.push_str("sign test of above against below; numakit / numad throughput, its mean with the 95% CI\n");
    let _ = writeln!(
        out,
        "{:14} {:>5} {:>6} {:>5} {:>6} {:>9} {:>7} {:>17} {:>7} {:>7}",
        "set", "n", "above", "tied", "below", "p", "mean", "95% CI", "median", "min"
    );
    for x in sets {
        let p = p_text(x.sign);
        let ci = ci_text(&x.ratio);
        let _ = writeln!(
            out,
            "{:14} {:>5} {:>6} {:>5} {:>6} {:>9} {:>7.4} {:>17} {:>7.4} {:>7.4}",
            x.set, x.scenarios, x.above, x.tied, x.below, p, x.ratio.mean, ci, x.ratio.median, x.ratio.min
        );
    }
}

/// The report as text: the named scenarios in full, random farms as
/// distributions, then the targets and numakit against numad.
pub fn render(r: &Report, with_targets: bool) -> String {
    let mut out = String::new();
    out.push_str("Throughput relative to the oracle (best static placement known in advance); per scenario also\n");
    out.push_str("pages migrated (4 KiB) and the worst per-job slowdown versus untuned.\n\n");
    let named: Vec<&ScenarioResult> = r.scenarios.iter().filter(|s| !s.random).collect();
    let random: Vec<&ScenarioResult> = r.scenarios.iter().filter(|s| s.random).collect();
    if !named.is_empty() || random.len() == 1 {
        let shown = if named.is_empty() { random.clone() } else { named.clone() };
        scenario_table(&mut out, &shown);
        out.push('\n');
    }
    if random.len() > 1 {
        let _ = writeln!(out, "Random farms: throughput / oracle as min, p5, median, mean (and mean pages migrated)");
        let _ = writeln!(
            out,
            "{:14} {:9} {:>7} {:>7} {:>7} {:>7} {:>9}",
            "set", "policy", "min", "p5", "median", "mean", "pages"
        );
        for c in r.summaries.iter().filter(|c| c.set.starts_with("random")) {
            let _ = writeln!(
                out,
                "{:14} {:9} {:>7.4} {:>7.4} {:>7.4} {:>7.4} {:>9}",
                c.set,
                c.policy,
                c.vs_oracle.min,
                c.vs_oracle.p5,
                c.vs_oracle.median,
                c.vs_oracle.mean,
                pages(c.pages_migrated.mean as u64)
            );
        }
        out.push('\n');
    }
    if with_targets {
        if !named.is_empty() {
            targets(&mut out, "the named scenarios", &r.targets_named);
        }
        if let Some(t) = &r.targets_random {
            targets(&mut out, "the random farms", t);
        }
        if !r.vs_numad.is_empty() {
            out.push('\n');
            paired(&mut out, &r.vs_numad);
        }
    }
    out
}

/// `--held-out` as text: per class numakit against numad (the sign test,
/// the ratio's quartiles), against the oracle (the mean with its 95 %
/// interval) and untuned (the worst farm), then the three criteria.
pub fn render_held_out(h: &HeldOut) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Held-out random farms: generator seeds {} to {} of every class (never used while the daemon's rules",
        h.first_seed, h.last_seed
    );
    out.push_str(
        "were developed). numakit against numad farm by farm: above, tied (within 1e-9) or below, p the exact\n",
    );
    out.push_str(
        "sign test; numakit / oracle, its mean with the 95% CI; the farm where numakit / untuned is lowest.\n\n",
    );
    let _ = writeln!(
        out,
        "{:8} {:>5} {:>6} {:>5} {:>6} {:>9} {:>7} {:>17} {:>7}  worst farm",
        "class", "n", "above", "tied", "below", "p", "oracle", "95% CI", "untuned"
    );
    for c in &h.classes {
        let x = &c.vs_numad;
        let _ = writeln!(
            out,
            "{:8} {:>5} {:>6} {:>5} {:>6} {:>9} {:>7.4} {:>17} {:>7.4}  {}",
            c.class.name(),
            x.scenarios,
            x.above,
            x.tied,
            x.below,
            p_text(x.sign),
            c.vs_oracle.mean,
            ci_text(&c.vs_oracle),
            c.worst_vs_untuned.1,
            c.worst_vs_untuned.0
        );
    }
    out.push_str("\nnumakit / numad over the farms: min, quartiles, max; mean with the 95% CI\n");
    let _ = writeln!(
        out,
        "{:8} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>17}",
        "class", "min", "q1", "median", "q3", "max", "mean", "95% CI"
    );
    for c in &h.classes {
        let q = &c.vs_numad_quartiles;
        let _ = writeln!(
            out,
            "{:8} {:>7.4} {:>7.4} {:>7.4} {:>7.4} {:>7.4} {:>7.4} {:>17}",
            c.class.name(),
            q.min,
            q.q1,
            q.median,
            q.q3,
            q.max,
            c.vs_numad.ratio.mean,
            ci_text(&c.vs_numad.ratio)
        );
    }
    let yes = |b: bool| if b { "met" } else { "MISSED" };
    out.push_str("\ncriteria per class: numakit above numad with sign-test p < 0.01; mean >= 0.95 of the oracle;\n");
    out.push_str("no farm more than 0.5% below untuned\n");
    let _ = writeln!(out, "{:8} {:>12} {:>12} {:>12}", "class", "above numad", "oracle", "untuned");
    for c in &h.classes {
        let _ = writeln!(
            out,
            "{:8} {:>12} {:>12} {:>12}",
            c.class.name(),
            yes(c.above_numad),
            yes(c.near_oracle),
            yes(c.never_below_untuned)
        );
    }
    let _ = writeln!(out, "all criteria on every class: {}", yes(h.met));
    out
}

#[cfg(test)]
mod tests {
    use numakit_sim::{Class, HeldOut, PolicyResult, Report, ScenarioResult};

    use super::{render, render_held_out};

    fn farm(name: &str, random: bool, numad: f64, numakit: f64) -> ScenarioResult {
        let pol = |policy: &str, throughput: f64| PolicyResult {
            policy: policy.to_string(),
            throughput,
            vs_oracle: throughput / 10.0,
            vs_untuned: throughput / 9.0,
            pages_migrated: 0,
            binds: 0,
            reverts: 0,
            worst_job_slowdown: 0.0,
        };
        ScenarioResult {
            name: name.to_string(),
            class: numakit_sim::Class::Reco,
            machine: "m".to_string(),
            seed: 1,
            random,
            policies: vec![pol("untuned", 9.0), pol("numad", numad), pol("numakit", numakit), pol("oracle", 10.0)],
        }
    }

    #[test]
    fn the_targets_are_followed_by_numakit_against_numad() {
        let mut farms = vec![farm("reco-2s", false, 10.0, 10.0)];
        farms.extend((0..12).map(|i| farm(&format!("random-reco-{i}"), true, 9.9, 10.0 - f64::from(i % 3) * 0.1)));
        let text = render(&Report::new(farms), true);
        let line = |set: &str| -> Vec<String> {
            let l = text.lines().rev().find(|l| l.starts_with(&format!("{set} "))).unwrap_or_else(|| panic!("{text}"));
            l.split_whitespace().map(str::to_string).collect()
        };
        // named: one scenario, tied, no test and no interval
        assert_eq!(line("named")[1..6], ["1", "0", "1", "0", "-"], "{text}");
        // 12 farms at 10.0, 9.9, 9.8 against numad's 9.9: 4 above, 4 tied, 4 below, p = 1
        let r = line("random-reco");
        assert_eq!(r[1..6], ["12", "4", "4", "4", "1.000"], "{text}");
        assert_eq!(r[6], format!("{:.4}", 1.0), "{text}");
        assert_eq!(line("random-all")[1..5], ["12", "4", "4", "4"], "{text}");
        assert!(text.find("numakit against numad") > text.find("targets over the random farms"), "{text}");
    }

    #[test]
    fn held_out_criteria_are_shown_per_class() {
        // reco: 12 farms above numad, all criteria met. sim: 11 above, one
        // farm 1.1 % below untuned (and below numad).
        let mut farms: Vec<ScenarioResult> =
            (0..12).map(|i| farm(&format!("random-reco-{i}"), true, 9.9, 10.0)).collect();
        for i in 0..12 {
            let mut f = farm(&format!("random-sim-{i}"), true, 9.9, if i == 7 { 8.9 } else { 9.95 });
            f.class = Class::Sim;
            farms.push(f);
        }
        let refs: Vec<&ScenarioResult> = farms.iter().collect();
        let text = render_held_out(&HeldOut::new(1000..1012, &refs));
        let line = |class: &str| -> Vec<String> {
            let l =
                text.lines().rev().find(|l| l.starts_with(&format!("{class} "))).unwrap_or_else(|| panic!("{text}"));
            l.split_whitespace().map(str::to_string).collect()
        };
        assert_eq!(line("reco")[1..], ["met", "met", "met"], "{text}");
        assert_eq!(line("sim")[1..], ["met", "met", "MISSED"], "{text}");
        assert!(text.contains("seeds 1000 to 1011"), "{text}");
        assert!(text.lines().any(|l| l.starts_with("sim ") && l.ends_with(" random-sim-7")), "{text}");
        assert!(text.trim_end().ends_with("all criteria on every class: MISSED"), "{text}");
    }
}
