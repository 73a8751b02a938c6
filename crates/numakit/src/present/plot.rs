//! Pictures of measurements as SVG strings, drawn with `plotters`: a
//! heatmap of a CPU node × memory node matrix, line charts (the
//! latency-versus-size sweep, the loaded-latency curve), and the
//! simulator's box chart of placement policies. No I/O: the CLI
//! writes the string where it is asked to.

use plotters::coord::Shift;
use plotters::prelude::*;

use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::bench::sig3;
use super::human_bytes;
use crate::bench::{BandwidthReport, Kernel, LatencyReport, LoadedReport};
use crate::sim::{Class, Distribution, Report, ScenarioResult};

/// A matrix to draw: `values[r][c]` for row `rows[r]`, column `cols[c]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Matrix {
    /// Title above the picture.
    pub title: String,
    /// Row node ids (CPU nodes).
    pub rows: Vec<u32>,
    /// Column node ids (memory nodes).
    pub cols: Vec<u32>,
    /// Cell values (`None`: not measured).
    pub values: Vec<Vec<Option<f64>>>,
    /// Whether larger values are better (drawn lighter).
    pub higher_is_better: bool,
}

/// One line of a chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Legend label.
    pub label: String,
    /// Points (x, y).
    pub points: Vec<(f64, f64)>,
}

/// A line chart.
#[derive(Debug, Clone, PartialEq)]
pub struct LineChart {
    /// Title.
    pub title: String,
    /// X axis label.
    pub x_label: String,
    /// Y axis label.
    pub y_label: String,
    /// Log-2 x axis labelled as byte sizes.
    pub x_bytes_log: bool,
    /// The lines.
    pub series: Vec<Series>,
}

fn err<E: std::fmt::Debug>(e: E) -> String {
    format!("cannot draw the picture: {e:?}")
}

/// Light (good) to dark red (bad).
fn heat(t: f64) -> RGBColor {
    let t = t.clamp(0.0, 1.0);
    let lerp = |a: f64, b: f64| (a + (b - a) * t).round() as u8;
    RGBColor(lerp(255.0, 165.0), lerp(247.0, 15.0), lerp(188.0, 21.0))
}

/// The matrix as an SVG heatmap with the value in each cell.
pub fn heatmap_svg(m: &Matrix) -> Result<String, String> {
    let (cell_w, cell_h, left, top) = (110i32, 48i32, 110i32, 80i32);
    let w = (left + cell_w * m.cols.len().max(1) as i32 + 30) as u32;
    let h = (top + cell_h * m.rows.len().max(1) as i32 + 30) as u32;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (w.max(320), h)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        draw_heatmap(&root, m, (cell_w, cell_h, left, top))?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

fn draw_heatmap(
    root: &DrawingArea<SVGBackend<'_>, Shift>,
    m: &Matrix,
    geo: (i32, i32, i32, i32),
) -> Result<(), String> {
    let (cell_w, cell_h, left, top) = geo;
    let font = |size: i32| ("sans-serif", size).into_font();
    root.draw(&Text::new(m.title.clone(), (10, 12), font(18))).map_err(err)?;
    root.draw(&Text::new("memory node →".to_string(), (left, top - 44), font(13))).map_err(err)?;
    root.draw(&Text::new("CPU node ↓".to_string(), (10, top - 22), font(13))).map_err(err)?;
    let all: Vec<f64> = m.values.iter().flatten().flatten().copied().collect();
    let lo = all.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = all.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    for (j, c) in m.cols.iter().enumerate() {
        let x = left + j as i32 * cell_w + cell_w / 2 - 8;
        root.draw(&Text::new(c.to_string(), (x, top - 20), font(14))).map_err(err)?;
    }
    for (i, r) in m.rows.iter().enumerate() {
        let y = top + i as i32 * cell_h;
        root.draw(&Text::new(r.to_string(), (left - 30, y + cell_h / 2 - 7), font(14))).map_err(err)?;
        for (j, v) in m.values.get(i).into_iter().flatten().enumerate() {
            let x = left + j as i32 * cell_w;
            let color = match v {
                Some(v) if hi > lo => {
                    let t = (v - lo) / (hi - lo);
                    heat(if m.higher_is_better { 1.0 - t } else { t })
                }
                Some(_) => heat(0.0),
                None => RGBColor(230, 230, 230),
            };
            root.draw(&Rectangle::new([(x, y), (x + cell_w - 2, y + cell_h - 2)], color.filled())).map_err(err)?;
            let label = v.map_or("-".to_string(), sig3);
            root.draw(&Text::new(label, (x + cell_w / 2 - 18, y + cell_h / 2 - 7), font(15))).map_err(err)?;
        }
    }
    Ok(())
}

/// The chart as SVG.
pub fn line_chart_svg(c: &LineChart) -> Result<String, String> {
    let xs: Vec<f64> = c.series.iter().flat_map(|s| s.points.iter().map(|p| p.0)).collect();
    let ys: Vec<f64> = c.series.iter().flat_map(|s| s.points.iter().map(|p| p.1)).collect();
    let (x0, x1) = span(&xs);
    let (_, y1) = span(&ys);
    let y1 = y1 * 1.1;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (800, 500)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut b = ChartBuilder::on(&root);
        b.caption(&c.title, ("sans-serif", 20)).margin(15).x_label_area_size(45).y_label_area_size(60);
        if c.x_bytes_log {
            let (x0, x1) = (x0.max(1.0), x1.max(2.0));
            let mut chart = b.build_cartesian_2d((x0..x1 * 1.2).log_scale(), 0.0..y1).map_err(err)?;
            chart
                .configure_mesh()
                .x_desc(&c.x_label)
                .y_desc(&c.y_label)
                .x_label_formatter(&|v| human_bytes(*v as u64))
                .draw()
                .map_err(err)?;
            for (i, s) in c.series.iter().enumerate() {
                let color = Palette99::pick(i).to_rgba();
                chart
                    .draw_series(LineSeries::new(s.points.clone(), color.stroke_width(2)))
                    .map_err(err)?
                    .label(s.label.clone())
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
                chart.draw_series(s.points.iter().map(|&p| Circle::new(p, 3, color.filled()))).map_err(err)?;
            }
            chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw().map_err(err)?;
        } else {
            let mut chart = b.build_cartesian_2d(x0.min(0.0)..(x1 * 1.1).max(1e-9), 0.0..y1).map_err(err)?;
            chart.configure_mesh().x_desc(&c.x_label).y_desc(&c.y_label).draw().map_err(err)?;
            for (i, s) in c.series.iter().enumerate() {
                let color = Palette99::pick(i).to_rgba();
                chart
                    .draw_series(LineSeries::new(s.points.clone(), color.stroke_width(2)))
                    .map_err(err)?
                    .label(s.label.clone())
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
                chart.draw_series(s.points.iter().map(|&p| Circle::new(p, 3, color.filled()))).map_err(err)?;
            }
            chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw().map_err(err)?;
        }
        root.present().map_err(err)?;
    }
    Ok(svg)
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

fn span(v: &[f64]) -> (f64, f64) {
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if lo.is_finite() && hi.is_finite() {
        (lo, if hi > lo { hi } else { lo + 1.0 })
    } else {
        (0.0, 1.0)
    }
}

fn ids(v: impl Iterator<Item = u32>) -> Vec<u32> {
    let mut v: Vec<u32> = v.collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// Heatmap of triad's best GB/s (or the last kernel measured).
pub fn bandwidth_svg(r: &BandwidthReport) -> Result<String, String> {
    let k = if r.results.iter().any(|x| x.kernel == Kernel::Triad) {
        Kernel::Triad
    } else {
        r.results.iter().map(|x| x.kernel).max().unwrap_or(Kernel::Triad)
    };
    let rows = ids(r.results.iter().map(|x| x.cpu_node));
    let cols = ids(r.results.iter().map(|x| x.mem_node));
    let values = rows
        .iter()
        .map(|&c| {
            cols.iter()
                .map(|&m| {
                    r.results.iter().find(|x| x.kernel == k && x.cpu_node == c && x.mem_node == m).map(|x| x.best_gbps)
                })
                .collect()
        })
        .collect();
    heatmap_svg(&Matrix {
        title: format!("STREAM {} bandwidth, GB/s (best of {})", k.name(), r.reps),
        rows,
        cols,
        values,
        higher_is_better: true,
    })
}

/// Heatmap at one size; line chart of ns against size for a sweep.
pub fn latency_svg(r: &LatencyReport) -> Result<String, String> {
    let rows = ids(r.results.iter().map(|x| x.cpu_node));
    let cols = ids(r.results.iter().map(|x| x.mem_node));
    if r.sizes.len() == 1 {
        let values = rows
            .iter()
            .map(|&c| {
                cols.iter()
                    .map(|&m| r.results.iter().find(|x| x.cpu_node == c && x.mem_node == m).map(|x| x.ns))
                    .collect()
            })
            .collect();
        return heatmap_svg(&Matrix {
            title: format!("memory latency, ns ({} buffer)", human_bytes(r.sizes[0])),
            rows,
            cols,
            values,
            higher_is_better: false,
        });
    }
    let series = rows
        .iter()
        .flat_map(|&c| cols.iter().map(move |&m| (c, m)))
        .map(|(c, m)| Series {
            label: format!("CPU node {c} > memory node {m}"),
            points: r
                .results
                .iter()
                .filter(|x| x.cpu_node == c && x.mem_node == m)
                .map(|x| (x.size_bytes as f64, x.ns))
                .collect(),
        })
        .filter(|s| !s.points.is_empty())
        .collect();
    line_chart_svg(&LineChart {
        title: "memory latency by buffer size".into(),
        x_label: "buffer size".into(),
        y_label: "ns per load".into(),
        x_bytes_log: true,
        series,
    })
}

/// The loaded-latency curve: latency against the bandwidth the other
/// cores draw.
pub fn loaded_svg(r: &LoadedReport) -> Result<String, String> {
    line_chart_svg(&LineChart {
        title: format!("loaded latency, CPU node {} > memory node {}", r.cpu_node, r.mem_node),
        x_label: "bandwidth drawn by the other cores, GB/s".into(),
        y_label: "ns per load".into(),
        x_bytes_log: false,
        series: vec![Series {
            label: format!("CPU {}", r.latency_cpu),
            points: r.points.iter().map(|p| (p.bandwidth_gbps, p.ns)).collect(),
        }],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::Report;

    fn is_svg(s: &str) -> bool {
        s.contains("<svg") && s.trim_end().ends_with("</svg>")
    }

    #[test]
    fn heatmap_has_a_cell_per_value() {
        let m = Matrix {
            title: "t".into(),
            rows: vec![0, 1],
            cols: vec![0, 1],
            values: vec![vec![Some(20.0), Some(10.0)], vec![None, Some(19.5)]],
            higher_is_better: true,
        };
        let s = heatmap_svg(&m).expect("svg");
        assert!(is_svg(&s));
        assert_eq!(s.matches("<rect").count(), 1 + 4, "background + cells");
        for label in ["20.0", "19.5", "10.0", "-"] {
            assert!(
                s.contains(&format!(">\n{label}\n</text>")) || s.contains(&format!(">{label}</text>")),
                "{label}: {s}"
            );
        }
    }

    fn scenario(name: &str, class: Class, random: bool, values: [f64; 4]) -> ScenarioResult {
        let policies = SIM_POLICIES
            .iter()
            .zip(values)
            .map(|((p, _), v)| crate::sim::PolicyResult {
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

    #[test]
    fn line_charts_draw() {
        let c = LineChart {
            title: "sweep".into(),
            x_label: "size".into(),
            y_label: "ns".into(),
            x_bytes_log: true,
            series: vec![Series {
                label: "0>0".into(),
                points: vec![(16384.0, 1.5), (1048576.0, 5.0), (1073741824.0, 90.0)],
            }],
        };
        let s = line_chart_svg(&c).expect("svg");
        assert!(is_svg(&s) && s.contains("0&gt;0") || s.contains("0>0"), "{s}");
        assert!(s.contains("<polyline"));
        let c = LineChart { x_bytes_log: false, series: vec![Series { label: "x".into(), points: vec![] }], ..c };
        assert!(is_svg(&line_chart_svg(&c).expect("empty series")));
    }
}
