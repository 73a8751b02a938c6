//! Proof that the report's default reading survives peeking: farms read
//! after every 100 jobs of a class, 20 looks up to the planned size, as a
//! site reads its report every morning.
//!
//! Each farm has two job classes (two comparisons, so α is shared over
//! them: Bonferroni α/2 for the always-valid reading, Holm over the two
//! for the fixed-horizon one), `auto` against `none` at 50:50, log-normal
//! run times in one class and Pareto-tailed ones (ln T = s (E - 1)) in the
//! other. The figures come from the same functions the report uses on a
//! per-job comparison: `analysis::look` (the basis and the always-valid
//! interval) and Welch's t on the log times' moments.
//!
//! - null farms (no effect anywhere): the share with a "faster" or
//!   "slower" at any of the 20 looks is at most 5% for the always-valid
//!   reading, and clearly above 10% for the fixed-horizon one read alike;
//! - farms with known effects: the always-valid intervals cover the truth
//!   at the planned size in at least 93% of comparisons (and at every one
//!   of the 20 looks at once in at least 93%);
//! - the price: the always-valid interval's width at the planned size
//!   against the fixed-horizon one's on the same data, 1.2 to 2.0 times.
//!
//! Deterministic (seeded); the figures are printed (`cargo test -p
//! numakit-report --test sequential -- --nocapture`). Nothing here is
//! tuned to pass: a failure means the method is wrong.

use numakit::stats_math::{welch_from_moments, Adjustment, Moments, SIGNIFICANCE};
use numakit_report::analysis::look::{always_valid, Basis};
use numakit_report::synth::Rng;

const PLANNED: u64 = 2000;
const STEP: u64 = 100;
const LOOKS: u64 = PLANNED / STEP;
const CLASSES: usize = 2;
const FARMS: u64 = 400;

/// One class's log time for an arm with `effect` (added to ln T).
fn draw(rng: &mut Rng, class: usize, effect: f64) -> f64 {
    let noise = if class == 0 { 0.3 * rng.normal() } else { 0.2 * (rng.exp1() - 1.0) };
    (300.0f64).ln() + effect + noise
}

/// What one look at one farm shows, per class: the always-valid interval
/// and the fixed-horizon one with its Holm-adjusted verdict, on ln ratio.
struct Look {
    seq: Vec<(f64, f64, bool)>,
    fixed: Vec<(f64, f64, bool)>,
}

fn look(arms: &[[Moments; 2]]) -> Look {
    let mut seq = Vec::new();
    let mut ps = Vec::new();
    let mut fixed = Vec::new();
    for [none, auto] in arms {
        let b = Basis::two(none, auto).expect("two jobs in each arm");
        let (lo, hi, _, _) = always_valid(&b, PLANNED, arms.len(), SIGNIFICANCE).expect("an interval");
        seq.push((lo.ln(), hi.ln(), hi < 1.0 || lo > 1.0));
        let w = welch_from_moments(none, auto).expect("welch");
        ps.push(w.p_value);
        fixed.push((w.diff_ci_low, w.diff_ci_high, false));
    }
    for (f, p) in fixed.iter_mut().zip(Adjustment::Holm.adjust(&ps)) {
        f.2 = p < SIGNIFICANCE;
    }
    Look { seq, fixed }
}

/// Runs `FARMS` farms with the classes' true effects, looking after every
/// `STEP` jobs of each class; calls `see(farm, look index, look)`.
fn farms(seed: u64, effects: [f64; CLASSES], mut see: impl FnMut(u64, u64, &Look)) {
    for farm in 0..FARMS {
        let mut rng = Rng::new(seed + farm);
        let mut arms: Vec<[Moments; 2]> = vec![[Moments::default(), Moments::default()]; CLASSES];
        for i in 0..LOOKS {
            for (class, a) in arms.iter_mut().enumerate() {
                for _ in 0..STEP {
                    let arm = rng.below(2) as usize;
                    let effect = if arm == 1 { effects[class] } else { 0.0 };
                    a[arm].push(draw(&mut rng, class, effect));
                }
            }
            see(farm, i, &look(&arms));
        }
    }
}

#[test]
fn peeking_at_null_farms_stays_within_alpha_only_when_always_valid() {
    let mut seq_hit = vec![false; FARMS as usize];
    let mut fixed_hit = vec![false; FARMS as usize];
    let mut last_fixed_hit = 0u64;
    farms(70_000, [0.0, 0.0], |farm, i, l| {
        seq_hit[farm as usize] |= l.seq.iter().any(|x| x.2);
        fixed_hit[farm as usize] |= l.fixed.iter().any(|x| x.2);
        if i == LOOKS - 1 {
            last_fixed_hit += u64::from(l.fixed.iter().any(|x| x.2));
        }
    });
    let seq = seq_hit.iter().filter(|x| **x).count() as f64 / FARMS as f64;
    let fixed = fixed_hit.iter().filter(|x| **x).count() as f64 / FARMS as f64;
    let once = last_fixed_hit as f64 / FARMS as f64;
    eprintln!(
        "null farms ({FARMS}, {CLASSES} classes, {LOOKS} looks every {STEP} jobs up to {PLANNED}) with a false \
         verdict at any look: always-valid {:.1}%, fixed-horizon {:.1}% (fixed-horizon at the last look only: {:.1}%)",
        seq * 100.0,
        fixed * 100.0,
        once * 100.0
    );
    assert!(seq <= 0.05, "always-valid: {seq} of null farms ever showed an effect");
    assert!(fixed > 0.10, "fixed horizon read {LOOKS} times: only {fixed} (expected well above 5%)");
    assert!(once <= 0.08, "fixed horizon read once should hold its 5%: {once}");
}

#[test]
fn always_valid_intervals_cover_the_truth_at_a_known_width_cost() {
    let effects = [-0.03, 0.02];
    let (mut covered_end, mut covered_all, mut total) = (0u64, 0u64, 0u64);
    let mut always_covered = vec![[true; CLASSES]; FARMS as usize];
    let (mut ratio_sum, mut ratios) = (0.0f64, 0u64);
    let (mut seq_found, mut fixed_found) = (0u64, 0u64);
    farms(80_000, effects, |farm, i, l| {
        for (class, (s, f)) in l.seq.iter().zip(&l.fixed).enumerate() {
            let truth = effects[class];
            let inside = s.0 <= truth && truth <= s.1;
            always_covered[farm as usize][class] &= inside;
            if i == LOOKS - 1 {
                total += 1;
                covered_end += u64::from(inside);
                ratio_sum += (s.1 - s.0) / (f.1 - f.0);
                ratios += 1;
                seq_found += u64::from(s.2);
                fixed_found += u64::from(f.2);
            }
        }
    });
    covered_all += always_covered.iter().flatten().filter(|x| **x).count() as u64;
    let end = covered_end as f64 / total as f64;
    let all = covered_all as f64 / total as f64;
    let width = ratio_sum / ratios as f64;
    eprintln!(
        "farms with effects {effects:?}: always-valid coverage at {PLANNED} jobs {covered_end} of {total} = {:.1}%, \
         at all {LOOKS} looks at once {:.1}%; width at the planned size {width:.2} times the fixed-horizon 95% \
         interval's (Bonferroni over {CLASSES}); effects found at {PLANNED} jobs: always-valid {seq_found}, \
         fixed-horizon {fixed_found} of {total}",
        end * 100.0,
        all * 100.0
    );
    assert!(end >= 0.93, "coverage at the planned size {end}");
    assert!(all >= 0.93, "coverage at every look {all}");
    assert!((1.2..2.0).contains(&width), "width cost {width}");
}

/// The report itself, on a synthetic farm read both ways: the same
/// ratios, the always-valid intervals around the fixed-horizon ones, each
/// always-valid verdict one the single look also gives, and the settings
/// saying which analysis was used.
#[test]
fn the_report_reads_always_valid_by_default_and_once_when_asked() {
    use numakit_report::analysis::Look;
    use numakit_report::input::Source;
    use numakit_report::synth::Farm;
    use numakit_report::{report, Options, ReadOptions};
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("farm.jsonl");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).expect("create"));
    Farm::calibration(4242, 1500).write(&mut f).expect("write");
    drop(f);
    let r = ReadOptions { threads: 2, tmp: dir.path().to_path_buf(), ..ReadOptions::default() };
    let src = [Source::File(path)];
    let always = report(&src, &r, &Options::default()).expect("report");
    let once = report(&src, &r, &Options { look: Look::Once, ..Options::default() }).expect("report");
    assert_eq!(always.settings.analysis, "always-valid");
    assert_eq!(always.settings.planned_jobs, Some(10_000));
    assert_eq!(once.settings.analysis, "fixed-horizon");
    assert!(always.settings.intervals.contains("Bonferroni over"), "{}", always.settings.intervals);
    let mut compared = 0;
    for (ga, go) in always.experiments[0].groups.iter().zip(&once.experiments[0].groups) {
        for (ca, co) in ga.comparisons.iter().zip(&go.comparisons) {
            let (a, o) = (ca.wall.as_ref().expect("wall"), co.wall.as_ref().expect("wall"));
            assert_eq!(a.ratio, o.ratio);
            assert!(a.ci_low < o.ci_low && a.ci_high > o.ci_high, "{a:?} {o:?}");
            if ca.verdict == "faster" || ca.verdict == "slower" {
                assert_eq!(ca.verdict, co.verdict);
                assert!(ca.verdict_text.contains("always-valid"), "{}", ca.verdict_text);
            }
            compared += 1;
        }
    }
    assert_eq!(always.settings.comparisons, compared);
}
