//! The two sequences that change knobs, built so a change can always be
//! undone.
//!
//! [`apply`]: lock → read → plan (every value checked) → save the originals
//! to the state file (merged: the first-seen original of a knob stays) →
//! write one by one through [`act::knobs`](crate::act::knobs) → on a failed
//! write, put back the ones already written (newest first) and the state
//! file as it was. A crash between writes leaves the state file holding
//! every original, so [`revert`] restores them all.
//!
//! [`revert`]: lock → read the state file → write each original that
//! differs from the current value (catalogue order) → re-read to verify →
//! remove the state file only when everything is back.

use std::path::{Path, PathBuf};

use super::knobs;
use super::plan::{self, Plan, Setting, Write};
use super::read::{self, Reading};
use super::state::{self, Event, Lock, State};
use super::{TuneError, WriteFailure};
use crate::act::{self, ActError};
use crate::sys::SysRoot;

/// A callback after each successful write: its number (1, 2, ...) and the write.
pub type AfterWrite<'a> = &'a mut dyn FnMut(usize, &Write);

/// How to run [`apply`] and [`revert`].
pub struct Options<'a> {
    /// The state file.
    pub state_path: PathBuf,
    /// Only plan: no lock, no state file, no write.
    pub dry_run: bool,
    /// Called after each successful write with its number (1, 2, ...);
    /// the CLI uses it for the test-only pause.
    pub after_write: Option<AfterWrite<'a>>,
}

impl Options<'_> {
    /// Real writes, state in `state_path`, no callback.
    pub fn new(state_path: impl Into<PathBuf>) -> Options<'static> {
        Options { state_path: state_path.into(), dry_run: false, after_write: None }
    }
}

/// What [`apply`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApplyOutcome {
    /// The checked plan (its writes were all made unless `dry_run`).
    pub plan: Plan,
    /// Whether nothing was written.
    pub dry_run: bool,
    /// Knobs whose original was newly saved in the state file.
    pub newly_saved: Vec<String>,
    /// Things worth telling (a stale state file from an earlier boot).
    pub notes: Vec<String>,
    /// With [`apply_irqs`]: the IRQ affinity writes the kernel refused with
    /// `EIO` or `EPERM` (managed and per-CPU IRQs), which were left as they are.
    pub refused: Vec<(Write, ActError)>,
}

/// What [`revert`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RevertOutcome {
    /// Whether there was a state file.
    pub had_state: bool,
    /// The writes made (or, with `dry_run`, to make): `from` current, `to` original.
    pub writes: Vec<Write>,
    /// Saved knobs already at their original value.
    pub already: Vec<String>,
    /// Whether nothing was written.
    pub dry_run: bool,
    /// Things worth telling.
    pub notes: Vec<String>,
}

/// The readings a plan for `settings` needs: the whole catalogue plus any
/// requested knob it does not list (a weight of a node without a file).
fn readings_for(sys: &SysRoot, settings: &[Setting]) -> Vec<Reading> {
    let mut readings = read::read_all(sys);
    for s in settings {
        if let Some(k) = knobs::lookup(&s.knob) {
            if !readings.iter().any(|r| r.knob.name == k.name) {
                readings.push(read::read_knob(sys, &k));
            }
        }
    }
    readings
}

/// Checks and applies `settings` (`action` names it in the state history:
/// `set`, `apply hep-farm`).
pub fn apply(sys: &SysRoot, settings: &[Setting], action: &str, opts: Options<'_>) -> Result<ApplyOutcome, TuneError> {
    apply_inner(sys, settings, action, opts, false, &mut |s: &SysRoot, p: &str, v: &str| {
        act::knobs::write_value(s, p, v)
    })
}

/// [`apply`] for IRQ affinities (`tune irq-local`): a write the kernel
/// refuses with `EIO` or `EPERM` (a managed IRQ, whose affinity the kernel
/// owns, or a per-CPU one) is not a failure: that IRQ is left as it is, reported in
/// [`ApplyOutcome::refused`], and its original leaves the state file; the
/// other writes go on. Any other refusal rolls back as in [`apply`].
pub fn apply_irqs(
    sys: &SysRoot,
    settings: &[Setting],
    action: &str,
    opts: Options<'_>,
) -> Result<ApplyOutcome, TuneError> {
    apply_inner(sys, settings, action, opts, true, &mut |s: &SysRoot, p: &str, v: &str| {
        act::knobs::write_value(s, p, v)
    })
}

/// Whether a failed IRQ affinity write is the kernel refusing to let user
/// space move that IRQ (kernel/irq/proc.c `write_irq_affinity`: managed,
/// per-CPU and no-balancing IRQs): `EIO` before Linux 6.x, `EPERM` since
/// (6.12 answers EPERM for the timer's IRQ 0). Only the write itself: an
/// `open` refused for lack of privileges is not this.
fn kernel_keeps_affinity(e: &ActError) -> bool {
    matches!(e, ActError::Sys { call: "write", errno, .. } if *errno == libc::EIO || *errno == libc::EPERM)
}

/// How a write is made: [`act::knobs::write_value`]; tests stand in a
/// kernel that refuses some writes.
type Writer<'w> = &'w mut dyn FnMut(&SysRoot, &str, &str) -> act::Result<()>;

fn apply_inner(
    sys: &SysRoot,
    settings: &[Setting],
    action: &str,
    mut opts: Options<'_>,
    refusals_ok: bool,
    write: Writer<'_>,
) -> Result<ApplyOutcome, TuneError> {
    let _lock = if opts.dry_run { None } else { Some(Lock::acquire(&opts.state_path)?) };
    let readings = readings_for(sys, settings);
    let plan = plan::plan(settings, &readings, crate::sys::kernel::version(sys))?;
    let mut outcome =
        ApplyOutcome { plan, dry_run: opts.dry_run, newly_saved: Vec::new(), notes: Vec::new(), refused: Vec::new() };
    if opts.dry_run || outcome.plan.writes.is_empty() {
        return Ok(outcome);
    }
    let path = opts.state_path.as_path();
    let previous = State::load(path)?;
    let boot_id = read::boot_id(sys);
    let kernel = crate::sys::kernel::release(sys);
    let mut state = match previous.clone() {
        Some(s) if !s.belongs_to(sys.root()) => {
            return Err(TuneError::State {
                path: path.to_path_buf(),
                why: format!("it belongs to root {}, not {}", s.root, sys.root().display()),
            })
        }
        Some(s) if s.boot_id.is_some() && s.boot_id != boot_id => {
            outcome.notes.push(format!(
                "{} was written before the last boot (the kernel reset those knobs); starting a new one",
                path.display()
            ));
            State::new(sys.root(), boot_id, kernel)
        }
        Some(s) => s,
        None => State::new(sys.root(), boot_id, kernel),
    };
    outcome.newly_saved = state.merge(outcome.plan.originals());
    state.history.push(Event {
        at: state::now_utc(),
        action: action.to_string(),
        writes: outcome.plan.writes.iter().map(|w| format!("{}={}", w.knob, w.to)).collect(),
    });
    state.save(path)?;

    let writes = outcome.plan.writes.clone();
    let mut written: Vec<Write> = Vec::new();
    for w in writes.iter() {
        if let Err(error) = write(sys, &w.path, &w.to) {
            if refusals_ok && knobs::irq_of(&w.knob).is_some() && kernel_keeps_affinity(&error) {
                outcome.refused.push((w.clone(), error));
                continue;
            }
            let (rolled_back, rollback_failed) = roll_back(sys, &written, write);
            if rollback_failed.is_empty() {
                // everything is as before: so is the state file
                let restored = match previous {
                    Some(mut p) => p.save(path),
                    None => State::remove(path),
                };
                if let Err(e) = restored {
                    outcome.notes.push(e.to_string());
                }
            }
            return Err(TuneError::Write(Box::new(WriteFailure {
                knob: w.knob.clone(),
                path: sys.path(&w.path),
                value: w.to.clone(),
                error,
                rolled_back,
                rollback_failed,
            })));
        }
        written.push(w.clone());
        if let Some(f) = opts.after_write.as_mut() {
            f(written.len(), w);
        }
    }
    if !outcome.refused.is_empty() {
        // the refused IRQs were never changed: the state file forgets them
        // (unless an earlier run saved them), or returns to what it was
        let refused: Vec<&str> = outcome.refused.iter().map(|(w, _)| w.knob.as_str()).collect();
        let fresh = |k: &str| refused.contains(&k) && outcome.newly_saved.iter().any(|n| n == k);
        state.originals.retain(|o| !fresh(&o.knob));
        outcome.newly_saved.retain(|k| !refused.contains(&k.as_str()));
        if let Some(ev) = state.history.last_mut() {
            ev.writes.retain(|kv| !refused.iter().any(|k| kv.starts_with(&format!("{k}="))));
        }
        let saved = if written.is_empty() {
            match previous {
                Some(mut p) => p.save(path),
                None => State::remove(path),
            }
        } else {
            state.save(path)
        };
        if let Err(e) = saved {
            outcome.notes.push(e.to_string());
        }
    }
    Ok(outcome)
}

/// Writes back the `from` values of `done`, newest first. Returns the
/// knobs put back and the failures (`knob (error)`).
fn roll_back(sys: &SysRoot, done: &[Write], write: Writer<'_>) -> (Vec<String>, Vec<String>) {
    let (mut ok, mut failed) = (Vec::new(), Vec::new());
    for w in done.iter().rev() {
        match write(sys, &w.path, &w.from) {
            Ok(()) => ok.push(w.knob.clone()),
            Err(e) => failed.push(format!("{} ({e})", w.knob)),
        }
    }
    (ok, failed)
}

/// Puts back every original in the state file, then removes it.
pub fn revert(sys: &SysRoot, mut opts: Options<'_>) -> Result<RevertOutcome, TuneError> {
    let path = opts.state_path.as_path();
    let _lock = if opts.dry_run { None } else { Some(Lock::acquire(path)?) };
    let mut outcome = RevertOutcome {
        had_state: false,
        writes: Vec::new(),
        already: Vec::new(),
        dry_run: opts.dry_run,
        notes: vec![],
    };
    let Some(state) = State::load(path)? else { return Ok(outcome) };
    outcome.had_state = true;
    if !state.belongs_to(sys.root()) {
        return Err(revert_error(path, format!("it belongs to root {}, not {}", state.root, sys.root().display())));
    }
    if state.boot_id.is_some() && state.boot_id != read::boot_id(sys) {
        outcome.notes.push("the state file is from an earlier boot; restoring its values anyway".into());
    }
    let (targets, mut failures) = revert_targets(sys, &state);
    for (w, needs_write) in &targets {
        if *needs_write {
            outcome.writes.push(w.clone());
        } else {
            outcome.already.push(w.knob.clone());
        }
    }
    if opts.dry_run {
        return if failures.is_empty() { Ok(outcome) } else { Err(TuneError::Revert { path: path.into(), failures }) };
    }
    let mut n = 0;
    for w in outcome.writes.iter() {
        match act::knobs::write_value(sys, &w.path, &w.to) {
            Ok(()) => {
                n += 1;
                if let Some(f) = opts.after_write.as_mut() {
                    f(n, w);
                }
            }
            Err(e) => {
                failures.push(format!("{}: cannot write {} to {}: {e}", w.knob, w.to, sys.path(&w.path).display()))
            }
        }
    }
    // verify: everything reads back as saved (weights under auto=true are the kernel's to compute)
    let auto_on = state.original(knobs::WEIGHT_AUTO).is_some_and(|o| o.value == "true");
    for (w, _) in &targets {
        if auto_on && knobs::is_weight(&w.knob) {
            continue;
        }
        match current(sys, w) {
            Ok(v) if v == w.to => {}
            Ok(v) => failures.push(format!("{} reads {v} after the revert, not {}", w.knob, w.to)),
            Err(why) if failures.iter().any(|f| f.starts_with(&w.knob)) => drop(why),
            Err(why) => failures.push(format!("{}: {why}", w.knob)),
        }
    }
    failures.dedup();
    if !failures.is_empty() {
        return Err(TuneError::Revert { path: path.into(), failures });
    }
    State::remove(path)?;
    Ok(outcome)
}

fn revert_error(path: &Path, why: String) -> TuneError {
    TuneError::State { path: path.to_path_buf(), why }
}

/// For each saved original, in catalogue order: the write that restores it
/// and whether it is needed; plus the originals that cannot be handled.
fn revert_targets(sys: &SysRoot, state: &State) -> (Vec<(Write, bool)>, Vec<String>) {
    let mut targets = Vec::new();
    let mut failures = Vec::new();
    for o in &state.originals {
        let Some(knob) = knobs::lookup(&o.knob) else {
            failures.push(format!("{}: not a knob this numakit knows; left alone", o.knob));
            continue;
        };
        // the state file names the file; it must be one of the knob's own
        if !knob.paths.contains(&o.path) {
            failures.push(format!("{}: /{} is not one of its files; left alone", o.knob, o.path));
            continue;
        }
        if o.value.is_empty() || o.value.contains(['\n', '\0']) {
            failures.push(format!(
                "{}: saved value {} is not one value; left alone",
                o.knob,
                crate::text::quote(&o.value)
            ));
            continue;
        }
        // The state file is checked as `set` checks what a user types: a
        // tampered or corrupted file must not write what set never would.
        if let Err(why) = knob.validate(&o.value) {
            failures.push(format!("{}: saved value {} {why}; left alone", o.knob, crate::text::quote(&o.value)));
            continue;
        }
        let mut w = Write {
            knob: knob.name.clone(),
            path: o.path.clone(),
            from: String::new(),
            to: o.value.clone(),
            order: knob.order,
        };
        match current(sys, &w) {
            Ok(v) => {
                let needed = v != o.value;
                w.from = v;
                targets.push((w, needed));
            }
            Err(why) => failures.push(format!("{}: {why}", o.knob)),
        }
    }
    targets.sort_by_key(|(w, _)| w.order);
    (targets, failures)
}

/// The current value at a write's file.
fn current(sys: &SysRoot, w: &Write) -> Result<String, String> {
    let knob = knobs::lookup(&w.knob).ok_or_else(|| "unknown knob".to_string())?;
    match sys.read(&w.path) {
        Ok(Some(raw)) => knob.current_from_raw(&raw),
        Ok(None) => Err(format!("{} is gone", sys.path(&w.path).display())),
        Err(e) => Err(e.to_string()),
    }
}

#[cfg(test)]
mod tests;
