//! Statistics for measurements: summaries of a sample (mean, median,
//! standard deviation, standard error, Student-t confidence intervals, max
//! variance), streaming moments, Welch's two-sample t-test (from values or
//! moments), the ratio of two spreads, robust scores, the exact sign test
//! of paired comparisons, Pearson's goodness of fit, p-values adjusted for
//! many comparisons (Holm, Benjamini–Hochberg), confidence sequences that
//! stay valid however often they are read ([`Sequence`]), and planning (how
//! many runs a target precision needs, how many jobs a test needs).
//!
//! Pure functions on `&[f64]`: nothing here measures, reads the system or
//! prints. Distributions (Student's t, the normal) come from `statrs`.
//! `bench` and `compare` build their reports from these; renderers in
//! `present` format them.
//!
//! ```
//! use numakit::stats_math::Summary;
//! let s = Summary::of(&[10.0, 12.0, 11.0, 13.0]).expect("two or more samples");
//! assert_eq!((s.mean, s.median), (11.5, 11.5));
//! assert!(s.ci_contains(11.5) && !s.ci_contains(15.0));
//! ```

mod adjust;
mod gof;
mod moments;
mod planning;
mod sequential;
mod sign;
mod spread;
mod summary;
mod welch;

pub use adjust::{benjamini_hochberg, holm, Adjustment};
pub use gof::{chi_square_gof, GoodnessOfFit};
pub use moments::Moments;
pub use planning::{
    expected_max_variance_pct, paired_units_needed, runs_needed, welch_jobs_needed, PlanRow, UnitsNeeded,
    MAX_RUNS_NEEDED, MAX_UNITS_NEEDED,
};
pub use sequential::Sequence;
pub use sign::{sign_test, SignTest};
pub use spread::{mad, robust_z, sd_ratio, SdRatio};
pub use summary::{
    confidence_half_width, max_variance_pct, mean, median, median_of_sorted, std_error, stddev, student_t_quantile,
    Summary, CONFIDENCE, T_EXPANSION_DF,
};
pub use welch::{one_sample_from_moments, welch_from_moments, welch_t_test, Welch, SIGNIFICANCE};
