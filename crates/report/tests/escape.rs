//! Text from records, whatever it holds, comes out of every renderer
//! safe: the text report one line per line without a control character,
//! the SVG well-formed XML 1.0 (parsed by a real XML parser), the HTML
//! page without a raw control character or markup from the records.
//! Property tests over random strings in every text field a renderer
//! shows (the group, the experiment, the arm, the hardware key, the
//! host, the cluster), with the classes of the hostile-input probe mixed
//! in: terminal escapes (ESC, OSC, BEL, C1), NUL, XML's forbidden
//! noncharacters, markup, newlines.

use numakit_report::input::Source;
use numakit_report::present::{html, svg, text};
use numakit_report::{report, Options, ReadOptions, Report};
use proptest::prelude::*;

/// Record text fields: (job_name, experiment, arm, hardware key, host, cluster).
type Fields = (String, String, String, String, String, String);

fn record(job: u64, f: &Fields, control: bool, wall: f64) -> String {
    let (name, exp, arm, key, host, cluster) = f;
    serde_json::json!({
        "schema": "numakit-step-outcome/1", "cluster": cluster, "job": job.to_string(), "step": "batch",
        "host": format!("{host}{}", job % 3), "user": name, "job_name": name, "experiment": exp, "unit": "job",
        "arm": if control { "none" } else { arm.as_str() }, "arm_source": "assigned", "arms": format!("{arm}:1,none:1"),
        "start_unix": 1.0e9, "end_unix": 1.0e9 + wall, "wall_s": wall, "cpu_user_s": wall, "cpu_system_s": 1.0,
        "exit_status": 0, "numa": {"locality": 0.9}, "hardware": {"key": key},
    })
    .to_string()
}

fn run(f: &Fields, by: &str) -> Report {
    let dir = tempfile::tempdir().expect("tmp");
    let p = dir.path().join("r.jsonl");
    let lines: Vec<String> =
        (0..24u64).map(|j| record(j, f, j % 2 == 1, 100.0 * (1.0 + (j % 5) as f64 / 10.0))).collect();
    std::fs::write(&p, lines.join("\n")).expect("write");
    let r = ReadOptions { threads: 1, ..ReadOptions::default() };
    report(&[Source::File(p)], &r, &Options { by: by.into(), ..Options::default() }).expect("report")
}

/// A character the renderers must never write raw.
fn unsafe_char(c: char) -> bool {
    (c.is_control() && c != '\n') || c == '\u{fffe}' || c == '\u{ffff}'
}

fn check(f: &Fields) -> Result<(), TestCaseError> {
    for by in ["job_name", "user", "hardware.key"] {
        let r = run(f, by);
        let t = text::render(&r);
        prop_assert!(!t.chars().any(unsafe_char), "text: {:?}", t.chars().find(|&c| unsafe_char(c)));
        let s = svg::render(&r);
        prop_assert!(!s.chars().any(unsafe_char), "svg holds {:?}", s.chars().find(|&c| unsafe_char(c)));
        let doc = roxmltree::Document::parse(&s);
        prop_assert!(doc.is_ok(), "svg not XML: {:?}\n{s}", doc.err());
        let h = html::render(&r);
        prop_assert!(!h.chars().any(unsafe_char), "html holds {:?}", h.chars().find(|&c| unsafe_char(c)));
        // the page's own elements only: what the records hold is text
        let svg_in_html = &h[h.find("<svg").unwrap_or(0)..h.find("</svg>").map_or(0, |i| i + 6)];
        prop_assert!(roxmltree::Document::parse(svg_in_html).is_ok(), "the page's svg is not XML");
        prop_assert_eq!(h.matches("<pre>").count(), 1);
        prop_assert_eq!(h.matches("<script").count(), 0);
    }
    Ok(())
}

/// Text the hostile-input probe used, and random text beside it.
fn hostile() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[\\x00-\\x1f\\x7f-\\u{9f}<>&'\"\\u{fffe}\\u{ffff}\\u{1b}\\[\\]a-z;]{1,30}",
        Just("\u{1b}]0;owned\u{7}\u{1b}[31m\u{9b}2J".to_string()),
        Just("</text><script>alert(1)</script>".to_string()),
        Just("a\nb\r\nc\u{0}".to_string()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn every_renderer_is_safe_for_any_record_text(
        name in hostile(), exp in hostile(), arm in hostile(), key in hostile(), host in hostile(), cluster in hostile()
    ) {
        // the arm must differ from the control for a comparison to be drawn
        let arm = if arm == "none" { format!("{arm}x") } else { arm };
        check(&(name, exp, arm, key, host, cluster))?;
    }
}

#[test]
fn the_probes_own_names() {
    let evil = "zz\u{1b}]0;owned\u{7}\u{1b}[31m\u{9b}2J\u{85}\u{0}</text><script>x</script>&\u{fffe}\n".to_string();
    check(&(evil.clone(), evil.clone(), format!("auto{evil}"), evil.clone(), evil.clone(), evil)).expect("safe");
}
