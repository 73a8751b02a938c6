//! The report as text for people: what was read, then per experiment its
//! design, each group's arms and comparisons with their verdicts, the
//! balance checks, the hosts that stand apart and the sacct join.
//! docs/experiments.md explains every line.

use std::fmt::Write as _;

use super::name;
use crate::analysis::compare_text::{count, p_text, pct_text};
use crate::result::{ArmSummary, Comparison, Effect, Experiment, Report};

/// A line of the report's own words with outside text in it (a verdict
/// naming arms, a note quoting the records): its control characters
/// escaped, not cut.
fn one_line(s: &str) -> String {
    numakit::text::one_line(s, usize::MAX)
}

/// A duration as people read it: 45.2s, 29m06s, 3h02m, 2d04h.
pub fn duration(s: f64) -> String {
    if !s.is_finite() {
        return "-".into();
    }
    if s < 60.0 {
        return format!("{s:.1}s");
    }
    let t = s.round() as u64;
    match t {
        t if t < 3600 => format!("{}m{:02}s", t / 60, t % 60),
        t if t < 86_400 => format!("{}h{:02}m", t / 3600, t % 3600 / 60),
        t => format!("{}d{:02}h", t / 86_400, t % 86_400 / 3600),
    }
}

fn opt_dur(x: Option<f64>) -> String {
    x.map_or("-".into(), duration)
}

fn opt3(x: Option<f64>) -> String {
    x.map_or("-".into(), |v| format!("{v:.3}"))
}

fn arm_line(out: &mut String, a: &ArmSummary, unit: &str) {
    let q = a
        .wall_quantiles_s
        .map_or("-".into(), |q| format!("{} / {} / {}", duration(q[0]), duration(q[1]), duration(q[2])));
    let units = if unit == "host-period" { "host-periods" } else { "hosts" };
    let clusters = a.clusters.map_or(String::new(), |c| format!(" ({} {units})", count(c)));
    let _ = writeln!(
        out,
        "    {:10} {:9} {:>9}{clusters} {:>7} {:>9} {:>8} {:>26} {:>9} {:>8}",
        name(&a.arm),
        a.source,
        count(a.jobs),
        count(a.failed),
        opt_dur(a.wall_geo_mean_s),
        opt3(a.wall_sd_log),
        q,
        opt_dur(a.cpu_geo_mean_s),
        opt3(a.cpu_sd_log),
    );
}

/// The interval's and the adjustment's names of the wall and CPU lines.
fn effect_words(r: &Report) -> (&'static str, &str) {
    if r.settings.analysis == "always-valid" {
        ("always-valid CI", "Bonferroni")
    } else {
        ("95% CI", &r.settings.adjustment)
    }
}

fn effect_line(out: &mut String, what: &str, e: &Option<Effect>, (ci, how): (&str, &str)) {
    match e {
        None => {
            let _ = writeln!(out, "      {what:10} -  (too few to compare)");
        }
        Some(e) => {
            let _ = writeln!(
                out,
                "      {what:10} ×{:.3}  {ci} {:.3} to {:.3}  ({:+.1}% to {:+.1}%)  p {}  {how} {}  n {} / {}",
                e.ratio,
                e.ci_low,
                e.ci_high,
                (e.ci_low - 1.0) * 100.0,
                (e.ci_high - 1.0) * 100.0,
                p_text(e.p_value),
                p_text(e.p_adjusted),
                count(e.n[0]),
                count(e.n[1])
            );
        }
    }
}

fn comparison(out: &mut String, c: &Comparison, how: &str, words: (&str, &str)) {
    let _ = writeln!(out, "    {} against {} ({}):", name(&c.arm), name(&c.control), c.method);
    effect_line(out, "wall time", &c.wall, words);
    effect_line(out, "CPU time", &c.cpu, words);
    match &c.variation {
        None => {
            let _ = writeln!(out, "      {:10} -  (too few to compare)", "spread");
        }
        Some(v) => {
            let _ = writeln!(
                out,
                "      {:10} ×{:.3}  95% CI {:.3} to {:.3}  sd(ln wall) {:.1}% → {:.1}%  p {}  {how} {}{}",
                "spread",
                v.ratio,
                v.ci_low,
                v.ci_high,
                v.sd_control * 100.0,
                v.sd_arm * 100.0,
                p_text(v.p_value),
                p_text(v.p_adjusted),
                v.note.as_ref().map_or(String::new(), |n| format!("  ({})", name(n)))
            );
        }
    }
    if let Some(n) = c.needed.as_ref().filter(|n| n.more_than) {
        let _ =
            writeln!(out, "      {:10} more than {} {} in all for this comparison", "needed", count(n.total), n.unit);
    } else if let Some(n) = &c.needed {
        let _ = writeln!(
            out,
            "      {:10} {} {} in all for this comparison ({} more)",
            "needed",
            count(n.total),
            n.unit,
            count(n.more)
        );
    }
    let _ = writeln!(out, "      => {}", one_line(&c.verdict_text));
}

fn experiment(out: &mut String, e: &Experiment, r: &Report) {
    let exp = e.name.as_deref().map_or("(no experiment)".to_string(), name);
    let _ = writeln!(out, "\nexperiment {exp}: unit {}", e.unit);
    for l in wrap(&e.design, 96) {
        let _ = writeln!(out, "  {l}");
    }
    if !e.shares.is_empty() {
        let s: Vec<String> = e.shares.iter().map(|(a, w)| format!("{}:{}", name(a), pct_text(*w))).collect();
        let _ = writeln!(out, "  shares: {} ({})", s.join(","), e.shares_from);
    }
    for n in &e.notes {
        let _ = writeln!(out, "  note: {}", one_line(n));
    }
    let how = &r.settings.adjustment;
    for g in &e.groups {
        let group = g.group.as_deref().map_or("(no value)".to_string(), name);
        let _ = writeln!(out, "\n  {group} on {}", name(&g.hardware_key));
        let _ = writeln!(
            out,
            "    {:10} {:9} {:>9} {:>7} {:>9} {:>8} {:>26} {:>9} {:>8}",
            "arm", "source", "jobs", "failed", "wall gm", "sd(ln)", "wall p10 / p50 / p90", "CPU gm", "sd(ln)"
        );
        for a in g.arms.iter().chain(&g.not_randomized) {
            arm_line(out, a, &e.unit);
        }
        if !g.not_randomized.is_empty() {
            let _ = writeln!(out, "    (chosen and default arms are shown, never compared: not randomized)");
        }
        if let Some(n) = &g.note {
            let _ = writeln!(out, "    {}", one_line(n));
        }
        for c in &g.comparisons {
            comparison(out, c, how, effect_words(r));
        }
    }
    let b = &e.balance;
    if let Some(o) = &b.overall {
        let _ = writeln!(out, "\n  balance against the shares ({} p-values adjusted over hosts, days):", how);
        let parts: Vec<String> =
            o.counts.iter().map(|(a, n, x)| format!("{} {} (expected {x:.0})", name(a), count(*n))).collect();
        let verdict = if o.p_value < r.settings.alpha { "OFF" } else { "as configured" };
        let _ =
            writeln!(out, "    {}: {}; chi-square p {}: {verdict}", name(&o.what), parts.join(", "), p_text(o.p_value));
        if e.unit == "job" {
            let _ = writeln!(
                out,
                "    hosts: {} checked, {} off, {} with too few jobs to check; days: {} checked, {} off",
                b.hosts_checked,
                b.hosts_off.len(),
                b.hosts_too_few,
                b.days_checked,
                b.days_off.len()
            );
        }
        for t in b.hosts_off.iter().chain(&b.days_off).take(20) {
            let parts: Vec<String> =
                t.counts.iter().map(|(a, n, x)| format!("{} {n} (expected {x:.1})", name(a))).collect();
            let _ = writeln!(
                out,
                "    OFF {}: {}; p {} ({how} {})",
                name(&t.what),
                parts.join(", "),
                p_text(t.p_value),
                p_text(t.p_adjusted)
            );
        }
        if !b.unknown_arms.is_empty() {
            let arms: Vec<String> = b.unknown_arms.iter().map(|a| name(a)).collect();
            let _ = writeln!(out, "    arms not in the configuration: {}", arms.join(", "));
        }
    }
}

/// Words wrapped at `width`.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut cur = String::new();
    for w in text.split_whitespace() {
        if !cur.is_empty() && cur.len() + 1 + w.len() > width {
            lines.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(w);
    }
    if !cur.is_empty() {
        lines.push(cur);
    }
    lines
}

/// The whole report as text.
pub fn render(r: &Report) -> String {
    let mut out = String::new();
    let i = &r.input;
    let c = &i.counts;
    let _ = writeln!(
        out,
        "read {} input{} ({} gzip, {} MB): {} lines, {} step records, {} of other schemas skipped, {} bad, {} too long",
        i.inputs,
        if i.inputs == 1 { "" } else { "s" },
        i.gzip_inputs,
        i.bytes / 1_000_000,
        count(c.lines),
        count(c.records),
        count(c.other_schema),
        count(c.bad),
        count(c.too_long)
    );
    for b in &i.bad_examples {
        let _ = writeln!(out, "  bad: {}", one_line(b));
    }
    for w in &i.warnings {
        let _ = writeln!(out, "  warning: {}", one_line(w));
    }
    let _ = writeln!(
        out,
        "jobs: {} ({} failed: counted per arm, left out of the times; {} with inconsistent lines left out; {} with zero time; {} extern step lines not counted)",
        count(c.jobs),
        count(c.failed),
        count(c.inconsistent),
        count(c.zero_time),
        count(c.extern_lines)
    );
    let l = &i.limits;
    if c.limited_lines > 0 {
        let _ = writeln!(
            out,
            "  limits: {} record lines of clusters beyond the first {} or of cells beyond the first {} left out, and {} jobs with them (memory is bounded: docs/experiments.md)",
            count(c.limited_lines),
            count(l.clusters),
            count(l.cells),
            count(c.limited_jobs)
        );
    }
    if c.unscored_lines + c.unscored_jobs > 0 {
        let _ = writeln!(
            out,
            "  limits: {} lines and {} jobs of hosts beyond the first {} (or beyond {} figures per host table) left out of the host checks, the balance per host and day, and per-host designs",
            count(c.unscored_lines),
            count(c.unscored_jobs),
            count(l.hosts),
            count(l.host_figures)
        );
    }
    if c.spans_clusters > 0 {
        let _ = writeln!(
            out,
            "  {} jobs of per-host designs ran on several hosts or periods: left out of those",
            count(c.spans_clusters)
        );
    }
    let _ = writeln!(
        out,
        "a job's outcome: wall time from its first step's start to its last step's end, CPU time summed over its steps and hosts (from {})",
        r.settings.outcome_from
    );
    let _ = writeln!(out, "{}", r.settings.intervals);
    let spread = if r.settings.analysis == "always-valid" {
        "; spread: one-look 95% intervals; spread and balance p-values"
    } else {
        "; p-values"
    };
    let _ = writeln!(
        out,
        "effects are ratios of geometric means (arm / control; below 1 is faster){spread} adjusted by {} over all comparisons; \"needed\": units for {:.0}% power to detect ±{}% {}",
        r.settings.adjustment,
        r.settings.power * 100.0,
        pct_text(r.settings.detect_pct),
        if r.settings.analysis == "always-valid" {
            "with these always-valid intervals".to_string()
        } else {
            format!("at p < {} in one look", r.settings.alpha)
        }
    );
    for e in &r.experiments {
        experiment(&mut out, e, r);
    }
    let h = &r.hosts;
    let _ = writeln!(
        out,
        "\nhosts against hosts of the same hardware key: {} scored on wall time, {} on locality",
        h.scored, h.scored_locality
    );
    if h.flagged.is_empty() {
        let _ = writeln!(out, "  none stands apart");
    }
    for f in &h.flagged {
        let unit = if f.metric == "wall" { "% slower than same-cell jobs elsewhere" } else { " points of locality" };
        let _ = writeln!(
            out,
            "  {} ({}): {:+.1}{unit} (median of {} hosts {:+.1}); robust z {:.1}, own z {:.1}, n {}",
            name(&f.host),
            f.metric,
            f.difference,
            f.hosts_of_key,
            f.median_of_key,
            f.robust_z,
            f.z_own,
            count(f.n)
        );
    }
    if let Some(s) = &r.sacct {
        let _ = writeln!(out, "\nsacct: {}", one_line(&s.source));
        let _ = writeln!(
            out,
            "  rows: {} jobs, {} steps (not joined), {} not understood; joined {} jobs, {} with records and no row, {} rows without records",
            count(s.rows[0]),
            count(s.rows[1]),
            count(s.rows[2]),
            count(c.sacct_matched),
            count(c.sacct_missing),
            count(c.sacct_only)
        );
        if !s.missing_columns.is_empty() {
            let _ = writeln!(
                out,
                "  columns missing: {} (unknown: a job without a state is not counted as failed)",
                s.missing_columns.join(", ")
            );
        }
        for (what, a) in [("wall vs ElapsedRaw", &s.wall), ("CPU vs TotalCPU", &s.cpu)] {
            let _ = writeln!(
                out,
                "  {what}: {} of {} within max(2 s, 5%), {} shorter in the records, {} longer; sacct less records: mean {:.1} s ({:.1} to {:.1} s)",
                count(a.agree),
                count(a.compared),
                count(a.shorter),
                count(a.longer),
                a.gap_mean_s,
                a.gap_min_s,
                a.gap_max_s
            );
            for (job, ours, theirs) in &a.worst {
                let _ = writeln!(out, "    {}: records {ours:.1} s, sacct {theirs:.1} s", name(job));
            }
        }
        let st: Vec<String> = s
            .states
            .iter()
            .map(|(s, n)| format!("{} {}", if s.is_empty() { "(unknown)" } else { s }, count(*n)))
            .collect();
        let _ = writeln!(out, "  states: {}", st.join(", "));
    }
    out
}
