//! Text and JSON of `numakit stat`: numastat's default layout byte for
//! byte ([`numastat_compat`]), the node counters with the AutoNUMA
//! counters, per-node memory (`-m`), per-process memory (`-p`), and the
//! deltas and rates of an interval. Tables fold to a screen width the way
//! numastat folds them. Returns strings; never reads or prints.
//!
//! Rooms: `tables` (numakit's own tables) on the table engine in `grid`;
//! `json`; `numastat` (numastat's output exactly) on numastat's own
//! engine in `vtab`.

mod grid;
mod json;
mod numastat;
mod tables;
#[cfg(test)]
mod tests;
mod vtab;

pub use json::{counters_json, meminfo_json, processes_json, rates_json};
pub use numastat::{numastat_compat, numastat_counters_mb, numastat_meminfo_mb, NumastatOptions, NumastatProcesses};
pub use tables::{counters_text, meminfo_text, processes_text, rates_text, skipped_line};

/// numastat's line width when stdout is not a terminal ("don't split it
/// up for easier parsing").
pub const UNLIMITED_WIDTH: usize = 10_000_000;
