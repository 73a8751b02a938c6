//! Statistics for measurements: summaries of a sample (mean, median,
//! standard deviation, standard error, Student-t confidence intervals, max
//! variance), Welch's two-sample t-test, the exact sign test of paired
//! comparisons, and planning (how many runs a
//! target precision needs).
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

mod planning;
mod sign;
mod summary;
mod welch;

pub use planning::{expected_max_variance_pct, runs_needed, PlanRow, MAX_RUNS_NEEDED};
pub use sign::{sign_test, SignTest};
pub use summary::{
    confidence_half_width, max_variance_pct, mean, median, median_of_sorted, std_error, stddev, student_t_quantile,
    Summary, CONFIDENCE,
};
pub use welch::{welch_t_test, Welch, SIGNIFICANCE};
