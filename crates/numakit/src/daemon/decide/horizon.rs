//! How long a move's gain is credited: the process's expected remaining
//! run time, capped at `max_horizon_s`, and what the history learns of
//! run times.
//!
//! Knowing nothing else, the age: under the Lindy prior
//! (`P(remaining > r) = age / (age + r)`) a process that has run for `a`
//! seconds is as likely as not to run another `a` (the median, the
//! cautious choice: its mean is unbounded). Once `runs_to_learn` processes
//! of the same command name were seen to exit, their run times may say it
//! ends sooner: of those that ran longer than this process has so far, the
//! mean time they still ran (each capped), with the age as one more run
//! (the prior), and never more than the age. The runs only shorten: with
//! the whole expected run as horizon, moves of a few per cent passed
//! against displacement costs and some did harm (docs/design-notes.md,
//! "The horizon is the age"). A process older than every run seen gets the age. Run times are
//! only known of processes that ended, so early on the long ones are
//! missing: the estimate errs short, towards doing less.

use std::collections::BTreeSet;

use crate::daemon::config::Config;
use crate::daemon::history::{History, Observed, ProcObserved};
use crate::daemon::snapshot::ProcInfo;

/// The expected remaining run time of `p`, seconds, at most
/// `cfg.max_horizon_s`, and how many ended runs made it shorter than the
/// age (0 when it is the age).
pub(super) fn horizon(h: &History, p: &ProcInfo, cfg: &Config) -> (f64, u32) {
    let cap = cfg.max_horizon_s.max(0.0);
    let age = p.age_s.clamp(0.0, cap);
    let Some(runs) = h
        .observed
        .comms
        .get(&p.comm)
        .map(|c| &c.runs)
        .filter(|r| cfg.runs_to_learn > 0 && r.len() >= cfg.runs_to_learn as usize)
    else {
        return (age, 0);
    };
    let (sum, n) =
        runs.iter().filter(|&&r| r > p.age_s).fold((0.0, 0u32), |(s, n), &r| (s + (r - p.age_s).min(cap), n + 1));
    let learnt = (sum + age) / f64::from(n + 1);
    if learnt < age {
        (learnt, runs.len() as u32)
    } else {
        (age, 0)
    }
}

/// Records the run time of every watched process the snapshot says exited
/// (between the previous scan at `prev_s` and `now`: the middle is taken)
/// under its command name (the last `cfg.runs_kept` of each), and keeps the
/// run times of the `cfg.comms_with_runs_kept` names that ended most
/// recently.
pub(super) fn learn_runs(h: &mut Observed, exited: &[i32], prev_s: Option<f64>, now: f64, cfg: &Config) {
    let Some(prev) = prev_s else { return };
    let ended = (prev + now) / 2.0;
    let done: Vec<(String, f64)> = exited
        .iter()
        .filter_map(|pid| h.procs.get(pid))
        .map(|r: &ProcObserved| (r.comm.clone(), (ended - r.start_s).max(0.0)))
        .collect();
    for (comm, run) in done {
        h.comms.entry(comm).or_default().record_run(run, now, cfg.runs_kept);
    }
    let with_runs = h.comms.values().filter(|c| !c.runs.is_empty()).count();
    let names_kept = cfg.comms_with_runs_kept as usize;
    if with_runs > names_kept {
        let mut last: Vec<(f64, String)> =
            h.comms.iter().filter_map(|(k, c)| c.last_run_s.map(|t| (t, k.clone()))).collect();
        last.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
        let drop: BTreeSet<String> = last.into_iter().take(with_runs - names_kept).map(|(_, k)| k).collect();
        for (k, c) in h.comms.iter_mut() {
            if drop.contains(k) {
                c.runs.clear();
                c.last_run_s = None;
            }
        }
    }
}
