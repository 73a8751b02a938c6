//! `numakit compare` for people: per configuration the mean, median,
//! confidence interval, standard error and max variance, the change
//! against the baseline with its significance, a verdict, and the planning
//! table. (The JSON is [`CompareResult::to_json`].) Strings only.

use std::fmt::Write as _;

use crate::compare::{CompareResult, Metric, Order, Verdict};
use crate::stats_math::SIGNIFICANCE;

/// About 4 significant digits.
pub fn sig4(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if a >= 1000.0 {
        format!("{v:.0}")
    } else if a >= 100.0 {
        format!("{v:.1}")
    } else if a >= 10.0 {
        format!("{v:.2}")
    } else if a >= 1.0 {
        format!("{v:.3}")
    } else {
        let digits = (3 - a.log10().floor() as i32).clamp(0, 12) as usize;
        format!("{v:.digits$}")
    }
}

fn p_value(p: f64) -> String {
    if p < 0.0001 {
        "<0.0001".into()
    } else {
        format!("{p:.4}")
    }
}

fn p_phrase(p: f64) -> String {
    if p < 0.0001 {
        "p < 0.0001".into()
    } else {
        format!("p = {p:.4}")
    }
}

fn verdict_words(v: Verdict) -> &'static str {
    match v {
        Verdict::Better => "better, significant at 5%",
        Verdict::Worse => "worse, significant at 5%",
        Verdict::NoSignificantDifference => "not significant at 5%",
        Verdict::NotEnoughRuns => "too few runs to test",
    }
}

fn table(rows: &[Vec<String>]) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> =
        (0..cols).map(|c| rows.iter().filter_map(|r| r.get(c)).map(|s| s.chars().count()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for r in rows {
        let mut line = String::new();
        for (c, cell) in r.iter().enumerate() {
            if c == 0 {
                let _ = write!(line, "{cell:<w$}", w = widths[c]);
            } else {
                let _ = write!(line, "  {cell:>w$}", w = widths[c]);
            }
        }
        out += line.trim_end();
        out.push('\n');
    }
    out
}

/// The report.
pub fn text(r: &CompareResult) -> String {
    let figure = match &r.metric {
        Metric::WallTime => "wall time, s".to_string(),
        Metric::Regex { pattern } => format!("the number /{pattern}/ finds"),
    };
    let direction = if r.higher_is_better { "higher is better" } else { "lower is better" };
    let order = match r.order {
        Order::Interleaved => "interleaved".to_string(),
        Order::Shuffled { seed } => format!("shuffled per round, seed {seed}"),
    };
    let copies = if r.copies > 1 {
        format!(", {} copies at once ({:?} of their figures)", r.copies, r.aggregate).to_lowercase()
    } else {
        String::new()
    };
    let mut out = format!(
        "compare: {}\nfigure: {figure} ({direction}); {} runs + {} warm-up per configuration, {order}{copies}\n",
        r.workload, r.runs, r.warmup
    );
    let base = match &r.baseline.file {
        Some(f) => format!("{} ({f})", r.baseline.name),
        None => r.baseline.name.clone(),
    };
    let mut rows = vec![vec![
        "config".to_string(),
        "mean".into(),
        "median".into(),
        "95% CI".into(),
        "std err".into(),
        "max var".into(),
        format!("vs {base}"),
        "p".into(),
        String::new(),
    ]];
    if r.baseline.file.is_some() {
        let s = crate::stats_math::Summary::of(&r.baseline.samples);
        rows.push(summary_row(&format!("{} (saved)", r.baseline.name), s.as_ref()));
        if let Some(last) = rows.last_mut() {
            last.push("baseline".into());
        }
    }
    for c in &r.configs {
        let mut row = summary_row(&c.name, c.summary.as_ref());
        match &c.vs_baseline {
            None => row.push("baseline".into()),
            Some(v) => {
                row.push(v.change_pct.map_or("-".into(), |p| format!("{p:+.1}%")));
                row.push(v.welch.as_ref().map_or("-".into(), |w| p_value(w.p_value)));
                row.push(verdict_words(v.verdict).into());
            }
        }
        rows.push(row);
    }
    out.push('\n');
    out += &table(&rows);
    out.push('\n');
    out += &verdict(r);
    out += &planning(r);
    out
}

fn summary_row(name: &str, s: Option<&crate::stats_math::Summary>) -> Vec<String> {
    match s {
        None => vec![name.to_string(), "-".into(), "-".into(), "-".into(), "-".into(), "-".into()],
        Some(s) => vec![
            name.to_string(),
            sig4(s.mean),
            sig4(s.median),
            match (s.ci_low, s.ci_high) {
                (Some(lo), Some(hi)) => {
                    let pct = s.ci_half_width_pct().map_or(String::new(), |p| format!(" ({p:.1}%)"));
                    format!("±{}{pct}", sig4((hi - lo) / 2.0))
                }
                _ => "-".into(),
            },
            s.std_error.map_or("-".into(), sig4),
            s.max_variance_pct.map_or("-".into(), |v| format!("{v:.1}%")),
        ],
    }
}

fn verdict(r: &CompareResult) -> String {
    let Some((best, sure)) = r.best() else { return "no results\n".into() };
    let base = &r.baseline.name;
    if r.configs.len() == 1 && r.baseline.file.is_none() {
        return format!("one configuration: {} (nothing to compare)\n", best.name);
    }
    let change = best.vs_baseline.as_ref().and_then(|v| Some((v.change_pct?, v.welch.as_ref()?.p_value)));
    match (best.vs_baseline.as_ref(), change) {
        (None, _) => {
            let others: Vec<_> = r.configs.iter().filter_map(|c| c.vs_baseline.as_ref()).collect();
            if others.iter().any(|v| v.verdict == Verdict::NoSignificantDifference || v.verdict == Verdict::NotEnoughRuns) {
                format!("verdict: {base} (the baseline) has the best mean, but not every other configuration is significantly worse at 5%\n")
            } else {
                format!("verdict: {base} (the baseline) is best; every other configuration is significantly worse at 5%\n")
            }
        }
        (Some(_), Some((pct, p))) if sure => format!(
            "verdict: {} is best, {:.1}% {} than {base} (Welch's t-test {}, significant at {:.0}%)\n",
            best.name,
            pct.abs(),
            if (pct > 0.0) == r.higher_is_better { "better" } else { "worse" },
            p_phrase(p),
            SIGNIFICANCE * 100.0
        ),
        (Some(_), Some((pct, p))) => format!(
            "verdict: {} has the best mean ({pct:+.1}% vs {base}) but the difference is not significant at {:.0}% ({}): run more, or call them equal\n",
            best.name,
            SIGNIFICANCE * 100.0,
            p_phrase(p)
        ),
        (Some(_), None) => format!("verdict: {} has the best mean; too few runs to test it\n", best.name),
    }
}

fn planning(r: &CompareResult) -> String {
    if r.configs.iter().all(|c| c.plan.is_empty()) {
        return String::new();
    }
    let target = r.target_ci_pct.map_or(String::new(), |t| format!("; runs needed for a 95% CI of ±{t}%"));
    let out = format!("\nplanning (max variance to expect with 1-5 runs at the measured spread{target}):\n");
    let mut head = vec!["config".to_string(), "sd/mean".into()];
    head.extend((1..=5).map(|n| format!("{n} run{}", if n > 1 { "s" } else { "" })));
    if let Some(t) = r.target_ci_pct {
        head.push(format!("runs for ±{t}%"));
    }
    let mut rows = vec![head];
    for c in r.configs.iter().filter(|c| !c.plan.is_empty()) {
        let mut row = vec![c.name.clone(), c.cv_pct.map_or("-".into(), |v| format!("{v:.2}%"))];
        row.extend(c.plan.iter().map(|p| format!("{:.1}%", p.expected_max_variance_pct)));
        if r.target_ci_pct.is_some() {
            row.push(c.runs_needed.map_or("> 100000".into(), |n| n.to_string()));
        }
        rows.push(row);
    }
    out + &table(&rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::{analyse, ConfigSpec, Experiment};

    fn result(b: Vec<f64>) -> CompareResult {
        let e =
            Experiment::new("./w", vec![ConfigSpec::new("default", ""), ConfigSpec::new("node0", "numakit run -N 0")]);
        analyse(&e, vec![vec![10.0, 10.2, 9.8, 10.1, 9.9], b], vec![], None)
    }

    #[test]
    fn a_significant_win() {
        let t = text(&result(vec![8.0, 8.2, 7.8, 8.1, 7.9]));
        assert!(t.starts_with("compare: ./w\nfigure: wall time, s (lower is better); 10 runs + 1 warm-up"), "{t}");
        assert!(t.contains("node0    8.000   8.000  ±0.1963 (2.5%)  0.07071     2.5%      -20.0%  <0.0001  better, significant at 5%\n"), "{t}");
        assert!(t.contains("-20.0%") && t.contains("better, significant at 5%"), "{t}");
        assert!(t.contains("verdict: node0 is best, 20.0% better than default (Welch's t-test p < 0.0001"), "{t}");
        assert!(t.contains("planning (max variance") && t.contains("runs for ±1%"), "{t}");
    }

    #[test]
    fn no_difference() {
        let t = text(&result(vec![10.1, 9.9, 10.3, 9.7, 10.05]));
        assert!(t.contains("not significant at 5%"), "{t}");
        assert!(
            t.contains("but the difference is not significant at 5%") || t.contains("(the baseline) has the best mean"),
            "{t}"
        );
    }

    #[test]
    fn numbers() {
        assert_eq!(
            (sig4(1234.4), sig4(12.346), sig4(0.012346), sig4(0.0)),
            ("1234".into(), "12.35".into(), "0.01235".into(), "0".into())
        );
        assert_eq!(p_value(0.04), "0.0400");
    }
}
