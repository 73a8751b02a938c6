//! `numakit simulate --svg`: the simulator's box chart of placement
//! policies as an SVG string, drawn with `plotters`. No I/O: the CLI
//! writes the string where it is asked to.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::{Class, Distribution, Report, ScenarioResult};

fn err<E: std::fmt::Debug>(e: E) -> String {
    format!("cannot draw the picture: {e:?}")
}

/// The spread of some values: min, 5th percentile, median, 95th
/// percentile, max (nearest rank), mean.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    /// Minimum.
    pub min: f64,
    /// 5th percentile.
    pub p5: f64,
    /// Median.
    pub median: f64,
    /// 95th percentile.
    pub p95: f64,
    /// Maximum.
    pub max: f64,
    /// Mean.
    pub mean: f64,
}

impl Spread {
    /// Of some values (`None` when empty).
    pub fn of(values: &[f64]) -> Option<Self> {
        let d = Distribution::of(values)?;
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let p95 = v[((0.95 * n as f64).ceil() as usize).clamp(1, n) - 1];
        Some(Self { min: d.min, p5: d.p5, median: d.median, p95, max: v[n - 1], mean: d.mean })
    }
}

/// The policies [`simulate_svg`] draws, with their colours.
pub const SIM_POLICIES: [(&str, RGBColor); 4] = [
    ("numakit", RGBColor(31, 119, 180)),
    ("numad", RGBColor(255, 127, 14)),
    ("autonuma", RGBColor(44, 160, 44)),
    ("untuned", RGBColor(127, 127, 127)),
];

/// The scenario sets of a simulator report (the named scenarios, then the
/// random farms of each class) with each policy's throughput relative to
/// the oracle: (label, scenarios, per policy of [`SIM_POLICIES`] the spread).
pub fn simulate_sets(r: &Report) -> Vec<(String, usize, Vec<Option<Spread>>)> {
    let mut sets: Vec<(String, Vec<&ScenarioResult>)> =
        vec![("named".to_string(), r.scenarios.iter().filter(|s| !s.random).collect())];
    for class in Class::ALL {
        let these: Vec<&ScenarioResult> = r.scenarios.iter().filter(|s| s.random && s.class == class).collect();
        sets.push((format!("random {}", class.name()), these));
    }
    sets.into_iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(label, v)| {
            let spreads = SIM_POLICIES
                .iter()
                .map(|(p, _)| {
                    let xs: Vec<f64> = v.iter().filter_map(|s| s.policy(p)).map(|x| x.vs_oracle).collect();
                    Spread::of(&xs)
                })
                .collect();
            (label, v.len(), spreads)
        })
        .collect()
}

/// `numakit simulate --svg`: per scenario set, a box per policy of its
/// throughput relative to the oracle (box 5th to 95th percentile, whiskers
/// min to max, bar the median, dot the mean); above over the whole range
/// (whiskers below the axis cut, their minimum written at the bottom),
/// below the same from 0.97 to 1.02.
pub fn simulate_svg(r: &Report) -> Result<String, String> {
    let sets = simulate_sets(r);
    let all: Vec<Spread> = sets.iter().flat_map(|s| s.2.iter().flatten().copied()).collect();
    let lo = all.iter().map(|s| s.p5).fold(0.95_f64, f64::min);
    let lo = ((lo - 0.02) * 20.0).floor() / 20.0;
    let hi = all.iter().map(|s| s.max).fold(1.0_f64, f64::max);
    let hi = ((hi + 0.01) * 100.0).ceil() / 100.0;
    let w = (160 * sets.len() + 140).max(720) as u32;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (w, 940)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let (top, bottom) = root.split_vertically(520);
        let title = "throughput relative to the oracle (numakit simulate)";
        sim_panel(&top, &sets, (lo, hi), title, true)?;
        sim_panel(&bottom, &sets, (0.97, 1.02), "the same from 0.97 to 1.02", false)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

type SimSets = [(String, usize, Vec<Option<Spread>>)];

fn sim_panel(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    sets: &SimSets,
    (lo, hi): (f64, f64),
    title: &str,
    full: bool,
) -> Result<(), String> {
    let n = sets.len().max(1);
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", if full { 20 } else { 16 }))
        .margin(15)
        .x_label_area_size(if full { 60 } else { 20 })
        .y_label_area_size(60)
        .build_cartesian_2d(-0.5..(n as f64 - 0.5), lo..hi)
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_desc("throughput / oracle")
        .y_label_formatter(&|v| if hi - lo < 0.1 { format!("{v:.3}") } else { format!("{v:.2}") })
        .draw()
        .map_err(err)?;
    let oracle = vec![(-0.5, 1.0), (n as f64 - 0.5, 1.0)];
    chart.draw_series(LineSeries::new(oracle, BLACK.mix(0.4).stroke_width(1))).map_err(err)?;
    let (bx, by) = area.get_base_pixel();
    let at = |c: (i32, i32)| (c.0 - bx, c.1 - by);
    let k = SIM_POLICIES.len() as f64;
    let half = 0.8 / k / 2.0 * 0.8;
    let clip = |y: f64| y.clamp(lo, hi);
    for (j, (name, color)) in SIM_POLICIES.iter().enumerate() {
        let color = *color;
        let mut elems: Vec<DynElement<'static, SVGBackend<'_>, (f64, f64)>> = Vec::new();
        let mut cut: Vec<(f64, f64)> = Vec::new();
        for (i, set) in sets.iter().enumerate() {
            let Some(s) = set.2[j] else { continue };
            let x = i as f64 - 0.4 + 0.8 / k * (j as f64 + 0.5);
            let (y0, y1) = (clip(s.p5), clip(s.p95));
            elems.push(PathElement::new(vec![(x, clip(s.min)), (x, clip(s.max))], color.stroke_width(1)).into_dyn());
            elems.push(Rectangle::new([(x - half, y0), (x + half, y1)], color.mix(0.35).filled()).into_dyn());
            elems.push(Rectangle::new([(x - half, y0), (x + half, y1)], color.stroke_width(1)).into_dyn());
            if (lo..=hi).contains(&s.median) {
                let bar = vec![(x - half, s.median), (x + half, s.median)];
                elems.push(PathElement::new(bar, color.stroke_width(3)).into_dyn());
            }
            if (lo..=hi).contains(&s.mean) {
                elems.push(Circle::new((x, s.mean), 3, BLACK.filled()).into_dyn());
            }
            if s.min < lo {
                cut.push((x, s.min));
            }
        }
        let series = chart.draw_series(elems).map_err(err)?;
        if full {
            series.label(*name).legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 14, y + 5)], color.filled()));
        }
        for (x, min) in cut.into_iter().filter(|_| full) {
            let p = at(chart.backend_coord(&(x, lo)));
            let style = TextStyle::from(("sans-serif", 10).into_font()).pos(Pos::new(HPos::Center, VPos::Bottom));
            area.draw(&Text::new(format!("{min:.2}"), (p.0, p.1 - 2), style)).map_err(err)?;
        }
    }
    if full {
        for (i, (label, count, _)) in sets.iter().enumerate() {
            let p = at(chart.backend_coord(&(i as f64, lo)));
            let style = TextStyle::from(("sans-serif", 14).into_font()).pos(Pos::new(HPos::Center, VPos::Top));
            let what = if label == "named" { "scenarios" } else { "farms" };
            area.draw(&Text::new(label.clone(), (p.0, p.1 + 8), style.clone())).map_err(err)?;
            area.draw(&Text::new(format!("{count} {what}"), (p.0, p.1 + 26), style)).map_err(err)?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerLeft)
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .draw()
            .map_err(err)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_svg(s: &str) -> bool {
        s.contains("<svg") && s.trim_end().ends_with("</svg>")
    }

    fn scenario(name: &str, class: Class, random: bool, values: [f64; 4]) -> ScenarioResult {
        let policies = SIM_POLICIES
            .iter()
            .zip(values)
            .map(|((p, _), v)| crate::PolicyResult {
                policy: p.to_string(),
                throughput: v,
                vs_oracle: v,
                vs_untuned: v / values[3],
                pages_migrated: 0,
                binds: 0,
                reverts: 0,
                worst_job_slowdown: 0.0,
            })
            .collect();
        ScenarioResult { name: name.into(), class, machine: "m".into(), seed: 1, random, policies }
    }

    #[test]
    fn simulate_chart_has_a_box_per_set_and_policy() {
        let mut v = vec![scenario("a", Class::Reco, false, [1.0, 0.99, 0.98, 0.9])];
        for i in 0..40 {
            let x = f64::from(i) / 100.0;
            let numad = if i == 0 { 0.1 } else { 0.4 + x };
            v.push(scenario(&format!("r{i}"), Class::Sim, true, [1.0 - x / 10.0, numad, 0.97, 0.95]));
        }
        let r = Report::new(v);
        let sets = simulate_sets(&r);
        assert_eq!(sets.iter().map(|s| (s.0.as_str(), s.1)).collect::<Vec<_>>(), [("named", 1), ("random sim", 40)]);
        let numad = sets[1].2[1].expect("numad");
        assert_eq!((numad.min, numad.max), (0.1, 0.79));
        assert!((numad.p5 - 0.41).abs() < 1e-12 && (numad.p95 - 0.77).abs() < 1e-12, "{numad:?}");
        let s = simulate_svg(&r).expect("svg");
        assert!(is_svg(&s));
        for label in ["named", "random sim", "40 farms", "numakit", "numad", "autonuma", "untuned"] {
            assert!(s.contains(label), "{label} missing");
        }
        // numad's minimum is below the axis (which starts under the lowest
        // 5th percentile): written at the bottom.
        assert!(s.contains("0.10"), "{s}");
    }
}
