//! The report as one self-contained HTML page: the picture (`svg`) and the
//! text report beneath it. No script, no external resource.

use super::svg::escape;
use crate::result::Report;

/// The page.
pub fn render(r: &Report) -> String {
    let title = match r.experiments.iter().filter_map(|e| e.name.as_deref()).collect::<Vec<_>>() {
        v if v.is_empty() => "numakit report".to_string(),
        v => format!("numakit report: {}", v.iter().map(|n| super::name(n)).collect::<Vec<_>>().join(", ")),
    };
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{t}</title>\n<style>body{{font-family:sans-serif;margin:2em}}pre{{font-size:12px;line-height:1.35}}</style>\n</head>\n<body>\n<h1>{t}</h1>\n{svg}<pre>{text}</pre>\n</body>\n</html>\n",
        t = escape(&title),
        svg = super::svg::render(r),
        text = super::text::render(r).lines().map(escape).collect::<Vec<_>>().join("\n"),
    )
}
