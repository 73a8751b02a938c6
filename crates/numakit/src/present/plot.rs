//! Pictures of measurements as SVG strings, drawn with `plotters`: a
//! heatmap of a CPU node × memory node matrix and line charts (the
//! latency-versus-size sweep, the loaded-latency curve). No I/O: the CLI
//! writes the string where it is asked to.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::bench::sig3;
use super::human_bytes;
use crate::bench::{BandwidthReport, Kernel, LatencyReport, LoadedReport};

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
