//! The report as a picture (hand-written SVG): a forest plot of every
//! comparison's wall-time effect with its 95% interval on a log axis, the
//! ±detect band shaded, coloured by verdict; below it, each group's arms'
//! wall-time distributions (10th to 90th percentile, median, geometric
//! mean) of the assigned arms on a shared log axis.

use std::fmt::Write as _;

use crate::result::Report;

const WIDTH: f64 = 960.0;
const LEFT: f64 = 360.0;
const PLOT: f64 = 400.0;
const ROW: f64 = 20.0;

/// Text made safe inside SVG (and HTML): [`numakit::text::xml`].
pub fn escape(s: &str) -> String {
    numakit::text::xml(s)
}

fn colour(verdict: &str) -> &'static str {
    match verdict {
        "faster" => "#1a7f37",
        "slower" => "#cf222e",
        "no-effect" => "#0969da",
        _ => "#6e7781",
    }
}

/// `s` as a label of at most `n` characters: its control characters
/// escaped first ([`super::name`]), then cut.
fn short(s: &str, n: usize) -> String {
    let s = super::name(s);
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

/// The picture.
pub fn render(r: &Report) -> String {
    struct Row {
        label: String,
        ratio: f64,
        lo: f64,
        hi: f64,
        verdict: String,
    }
    let mut rows = Vec::new();
    for e in &r.experiments {
        for g in &e.groups {
            for c in &g.comparisons {
                if let Some(w) = &c.wall {
                    let name = format!(
                        "{} · {} · {} vs {}",
                        short(g.group.as_deref().unwrap_or("(none)"), 24),
                        short(&g.hardware_key, 18),
                        short(&c.arm, 16),
                        short(&c.control, 16)
                    );
                    let label = if r.experiments.len() > 1 {
                        format!("{}: {name}", short(e.name.as_deref().unwrap_or("-"), 12))
                    } else {
                        name
                    };
                    rows.push(Row { label, ratio: w.ratio, lo: w.ci_low, hi: w.ci_high, verdict: c.verdict.clone() });
                }
            }
        }
    }
    let detect = r.settings.detect_pct / 100.0;
    let (mut lo, mut hi) = (1.0 / (1.0 + 2.5 * detect), 1.0 + 2.5 * detect);
    for x in &rows {
        lo = f64::min(lo, x.lo.max(0.25));
        hi = f64::max(hi, x.hi.min(4.0));
    }
    let (llo, lhi) = (lo.ln(), hi.ln());
    let xpos = |v: f64| LEFT + (v.clamp(lo, hi).ln() - llo) / (lhi - llo) * PLOT;
    let mut s = String::new();
    let top = 50.0;
    let forest_h = top + ROW * rows.len().max(1) as f64 + 40.0;
    // distributions
    let mut dist: Vec<(String, bool, [f64; 3], f64)> = Vec::new();
    for e in &r.experiments {
        for g in &e.groups {
            for a in &g.arms {
                if let (Some(q), Some(gm)) = (a.wall_quantiles_s, a.wall_geo_mean_s) {
                    let label = format!(
                        "{} · {} · {}",
                        short(g.group.as_deref().unwrap_or("(none)"), 24),
                        short(&g.hardware_key, 18),
                        short(&a.arm, 16)
                    );
                    dist.push((label, a.arm == e.control, q, gm));
                }
            }
        }
    }
    let (dlo, dhi) = dist.iter().fold((f64::INFINITY, 0.0f64), |(l, h), d| (l.min(d.2[0]), h.max(d.2[2])));
    let (dlo, dhi) =
        if dist.is_empty() { (1.0, 10.0) } else { ((dlo * 0.8).log10().floor(), (dhi * 1.25).log10().ceil()) };
    let dtop = forest_h + 40.0;
    let height = dtop + ROW * dist.len().max(1) as f64 + 50.0;
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height:.0}" viewBox="0 0 {WIDTH} {height:.0}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="10" y="20" font-size="14" font-weight="bold">Wall time, arm / control (geometric mean ratio, {})</text>"#,
        if r.settings.analysis == "always-valid" {
            "always-valid 95% interval, Bonferroni".to_string()
        } else {
            format!("95% interval; {} adjusted verdicts", escape(&r.settings.adjustment))
        }
    );
    // band and axis
    let (b0, b1) = (xpos(1.0 / (1.0 + detect)), xpos(1.0 + detect));
    let plot_bottom = top + ROW * rows.len().max(1) as f64;
    let _ = writeln!(
        s,
        r##"<rect x="{b0:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="#ddf4ff"/>"##,
        top - 10.0,
        b1 - b0,
        plot_bottom - top + 10.0
    );
    let _ = writeln!(
        s,
        r##"<line x1="{0:.1}" x2="{0:.1}" y1="{1:.1}" y2="{2:.1}" stroke="#444"/>"##,
        xpos(1.0),
        top - 10.0,
        plot_bottom
    );
    for t in [0.5, 0.8, 0.9, 0.95, 0.98, 1.0, 1.02, 1.05, 1.1, 1.25, 2.0] {
        if t >= lo && t <= hi {
            let x = xpos(t);
            let _ = writeln!(
                s,
                r##"<line x1="{x:.1}" x2="{x:.1}" y1="{plot_bottom:.1}" y2="{:.1}" stroke="#444"/>"##,
                plot_bottom + 4.0
            );
            let _ = writeln!(s, r#"<text x="{x:.1}" y="{:.1}" text-anchor="middle">{t}</text>"#, plot_bottom + 16.0);
        }
    }
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">faster ← ratio → slower (shaded: ±{}%)</text>"#,
        LEFT + PLOT / 2.0,
        plot_bottom + 30.0,
        crate::analysis::compare_text::pct_text(r.settings.detect_pct)
    );
    if rows.is_empty() {
        let _ = writeln!(
            s,
            r#"<text x="{LEFT}" y="{:.1}">no comparison: nothing was randomized against the control</text>"#,
            top + 10.0
        );
    }
    for (i, x) in rows.iter().enumerate() {
        let y = top + ROW * i as f64 + ROW / 2.0;
        let c = colour(&x.verdict);
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
            LEFT - 8.0,
            y + 4.0,
            escape(&x.label)
        );
        let _ = writeln!(
            s,
            r#"<line x1="{:.1}" x2="{:.1}" y1="{y:.1}" y2="{y:.1}" stroke="{c}" stroke-width="2"/>"#,
            xpos(x.lo),
            xpos(x.hi)
        );
        let _ = writeln!(s, r#"<circle cx="{:.1}" cy="{y:.1}" r="4" fill="{c}"/>"#, xpos(x.ratio));
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" fill="{c}">×{:.3} [{:.3}, {:.3}] {}</text>"#,
            LEFT + PLOT + 10.0,
            y + 4.0,
            x.ratio,
            x.lo,
            x.hi,
            escape(&x.verdict)
        );
    }
    // distributions
    let _ = writeln!(
        s,
        r#"<text x="10" y="{:.1}" font-size="14" font-weight="bold">Wall time per arm: 10th to 90th percentile, median (tick), geometric mean (dot)</text>"#,
        dtop - 20.0
    );
    let dx = |v: f64| LEFT + ((v.max(1e-9).log10() - dlo) / (dhi - dlo).max(1e-9)).clamp(0.0, 1.0) * PLOT;
    let dbottom = dtop + ROW * dist.len().max(1) as f64;
    let mut d = dlo;
    while d <= dhi + 1e-9 {
        let x = dx(10f64.powf(d));
        let _ = writeln!(
            s,
            r##"<line x1="{x:.1}" x2="{x:.1}" y1="{:.1}" y2="{dbottom:.1}" stroke="#d0d7de"/>"##,
            dtop - 6.0
        );
        let _ = writeln!(
            s,
            r#"<text x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            dbottom + 14.0,
            escape(&super::text::duration(10f64.powf(d)))
        );
        d += 1.0;
    }
    for (i, (label, is_control, q, gm)) in dist.iter().enumerate() {
        let y = dtop + ROW * i as f64 + ROW / 2.0;
        let c = if *is_control { "#6e7781" } else { "#8250df" };
        let _ =
            writeln!(s, r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#, LEFT - 8.0, y + 4.0, escape(label));
        let _ = writeln!(
            s,
            r#"<line x1="{:.1}" x2="{:.1}" y1="{y:.1}" y2="{y:.1}" stroke="{c}" stroke-width="6" stroke-opacity="0.45"/>"#,
            dx(q[0]),
            dx(q[2])
        );
        let _ = writeln!(
            s,
            r#"<line x1="{0:.1}" x2="{0:.1}" y1="{1:.1}" y2="{2:.1}" stroke="{c}" stroke-width="2"/>"#,
            dx(q[1]),
            y - 6.0,
            y + 6.0
        );
        let _ = writeln!(s, r#"<circle cx="{:.1}" cy="{y:.1}" r="3" fill="{c}"/>"#, dx(*gm));
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}">{} / {} / {}</text>"#,
            LEFT + PLOT + 10.0,
            y + 4.0,
            escape(&super::text::duration(q[0])),
            escape(&super::text::duration(q[1])),
            escape(&super::text::duration(q[2]))
        );
    }
    s.push_str("</svg>\n");
    s
}
