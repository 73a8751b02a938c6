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
mod tests {
    use super::*;
    use crate::tune::testutil::{fake_root, put};
    use std::fs;

    fn opts(path: &Path) -> Options<'static> {
        Options::new(path)
    }

    fn with<'a>(path: &Path, f: AfterWrite<'a>) -> Options<'a> {
        Options { state_path: path.to_path_buf(), dry_run: false, after_write: Some(f) }
    }

    fn set(sys: &SysRoot, path: &Path, list: &[(&str, &str)]) -> Result<ApplyOutcome, TuneError> {
        let settings: Vec<Setting> = list.iter().map(|(k, v)| Setting::new(*k, *v)).collect();
        apply(sys, &settings, "set", opts(path))
    }

    fn value(sys: &SysRoot, name: &str) -> String {
        read::read_knob(sys, &knobs::lookup(name).expect("knob")).value().expect("value").to_string()
    }

    /// A kernel that refuses (EIO) the writes to the files in `managed`.
    fn irq_apply(sys: &SysRoot, st: &Path, settings: &[Setting], managed: &[&str]) -> Result<ApplyOutcome, TuneError> {
        let mut kernel = |s: &SysRoot, p: &str, v: &str| {
            if managed.contains(&p) {
                // older kernels answer EIO, 6.x EPERM
                let errno = if p.contains("/28/") { libc::EPERM } else { libc::EIO };
                return Err(ActError::sys("write", errno));
            }
            act::knobs::write_value(s, p, v)
        };
        apply_inner(sys, settings, "irq-local 0000:21:01.0", opts(st), true, &mut kernel)
    }

    fn irq_root() -> (tempfile::TempDir, SysRoot) {
        let (d, sys) = fake_root();
        for (n, v) in [(28, "0,2,4,6"), (29, "0-7"), (30, "0-7")] {
            put(&d, &format!("proc/irq/{n}/smp_affinity_list"), &format!("{v}\n"));
        }
        (d, sys)
    }

    fn affinity(sys: &SysRoot, n: u32) -> String {
        sys.read(format!("proc/irq/{n}/smp_affinity_list")).expect("read").expect("file")
    }

    fn irq_settings(list: &[u32]) -> Vec<Setting> {
        list.iter().map(|n| Setting::new(knobs::irq_affinity(*n).name, "1,3,5,7")).collect()
    }

    #[test]
    fn managed_irqs_are_reported_and_the_rest_applied_then_reverted() {
        let (d, sys) = irq_root();
        let st = d.path().join("s.json");
        let out =
            irq_apply(&sys, &st, &irq_settings(&[28, 29, 30]), &["proc/irq/29/smp_affinity_list"]).expect("apply");
        assert_eq!(out.refused.len(), 1);
        assert_eq!(out.refused[0].0.knob, "irq/29/smp_affinity_list");
        assert!(out.refused[0].1.is_errno(libc::EIO));
        assert_eq!(out.newly_saved, vec!["irq/28/smp_affinity_list", "irq/30/smp_affinity_list"]);
        assert_eq!(
            (affinity(&sys, 28), affinity(&sys, 29), affinity(&sys, 30)),
            ("1,3,5,7".into(), "0-7".into(), "1,3,5,7".into())
        );
        let state = State::load(&st).expect("load").expect("state");
        let saved: Vec<(&str, &str)> = state.originals.iter().map(|o| (o.knob.as_str(), o.value.as_str())).collect();
        assert_eq!(saved, vec![("irq/28/smp_affinity_list", "0,2,4,6"), ("irq/30/smp_affinity_list", "0-7")]);
        assert!(!state.history[0].writes.iter().any(|w| w.starts_with("irq/29/")), "{:?}", state.history);
        let r = revert(&sys, opts(&st)).expect("revert");
        assert_eq!(r.writes.len(), 2);
        assert_eq!((affinity(&sys, 28), affinity(&sys, 30)), ("0,2,4,6".into(), "0-7".into()));
        assert!(!st.exists());
    }

    #[test]
    fn every_irq_refused_leaves_no_state() {
        let (d, sys) = irq_root();
        let st = d.path().join("s.json");
        let all = ["proc/irq/28/smp_affinity_list", "proc/irq/29/smp_affinity_list"];
        let out = irq_apply(&sys, &st, &irq_settings(&[28, 29]), &all).expect("apply");
        assert_eq!(out.refused.len(), 2);
        assert!(out.newly_saved.is_empty());
        assert!(!st.exists(), "nothing was changed, nothing to revert");
    }

    #[test]
    fn other_irq_failures_roll_back_and_plain_set_does_not_skip_eio() {
        let (d, sys) = irq_root();
        let st = d.path().join("s.json");
        // a write failing with another errno rolls back the ones before it
        let mut kernel = |s: &SysRoot, p: &str, v: &str| {
            if p == "proc/irq/30/smp_affinity_list" {
                return Err(ActError::sys("write", libc::ENOSPC));
            }
            act::knobs::write_value(s, p, v)
        };
        let e = apply_inner(&sys, &irq_settings(&[28, 30]), "irq-local x", opts(&st), true, &mut kernel).unwrap_err();
        let msg = e.to_string();
        assert!(msg.starts_with("irq/30/smp_affinity_list: cannot write 1,3,5,7 to "), "{msg}");
        assert!(msg.ends_with("rolled back irq/28/smp_affinity_list"), "{msg}");
        assert_eq!(affinity(&sys, 28), "0,2,4,6");
        assert!(!st.exists());
        // EPERM at open (not root) is not the kernel keeping an affinity
        let mut denied = |_: &SysRoot, _: &str, _: &str| Err(ActError::sys("open", libc::EPERM));
        let e = apply_inner(&sys, &irq_settings(&[28]), "irq-local x", opts(&st), true, &mut denied).unwrap_err();
        assert!(e.to_string().contains("open: "), "{e}");
        // without refusals_ok (tune set), EIO is a failure like any other
        let mut eio = |_: &SysRoot, _: &str, _: &str| Err(ActError::sys("write", libc::EIO));
        let e = apply_inner(&sys, &irq_settings(&[28]), "set", opts(&st), false, &mut eio).unwrap_err();
        assert!(e.to_string().contains("EIO"), "{e}");
    }

    #[test]
    fn apply_then_revert_restores_and_removes_the_state() {
        let (d, sys) = fake_root();
        let st = d.path().join("var/lib/numakit/tune-state.json");
        let out = set(&sys, &st, &[("autonuma", "0"), ("thp", "never"), ("zone_reclaim_mode", "0")]).expect("apply");
        assert_eq!(out.plan.writes.len(), 2);
        assert_eq!(out.newly_saved, vec!["kernel.numa_balancing", knobs::THP_ENABLED]);
        assert_eq!(value(&sys, "autonuma"), "0");
        assert_eq!(
            fs::read_to_string(d.path().join("sys/kernel/mm/transparent_hugepage/enabled")).expect("r"),
            "never"
        );
        let state = State::load(&st).expect("load").expect("state");
        assert_eq!(state.original("kernel.numa_balancing").map(|o| o.value.as_str()), Some("1"));
        assert_eq!(state.history.len(), 1);

        let r = revert(&sys, opts(&st)).expect("revert");
        assert_eq!(r.writes.len(), 2);
        assert_eq!(value(&sys, "autonuma"), "1");
        assert_eq!(value(&sys, "thp"), "madvise");
        assert!(!st.exists(), "state removed after a full revert");
        let again = revert(&sys, opts(&st)).expect("revert");
        assert!(!again.had_state);
    }

    #[test]
    fn revert_checks_saved_values_as_set_does() {
        let (d, sys) = fake_root();
        let st = d.path().join("s.json");
        set(&sys, &st, &[("autonuma", "0"), ("zone_reclaim_mode", "1")]).expect("apply");
        // A tampered state file: an original no `set` would write.
        let text = fs::read_to_string(&st).expect("read");
        let tampered = text.replacen("\"value\": \"1\"", "\"value\": \"99\"", 1);
        assert_ne!(text, tampered, "the state holds numa_balancing's original 1");
        fs::write(&st, tampered).expect("write");
        let e = revert(&sys, opts(&st)).unwrap_err().to_string();
        assert!(e.contains("kernel.numa_balancing: saved value \"99\" must be an integer from 0 to"), "{e}");
        assert_eq!(value(&sys, "autonuma"), "0", "not written");
        assert_eq!(value(&sys, "zone_reclaim_mode"), "0", "the valid original is restored");
        assert!(st.exists(), "kept for another try");
    }

    #[test]
    fn second_apply_keeps_the_first_originals() {
        let (d, sys) = fake_root();
        let st = d.path().join("s.json");
        set(&sys, &st, &[("khugepaged.scan_sleep_millisecs", "100")]).expect("first");
        let out = set(&sys, &st, &[("khugepaged.scan_sleep_millisecs", "200"), ("autonuma", "0")]).expect("second");
        assert_eq!(out.newly_saved, vec!["kernel.numa_balancing"]);
        assert_eq!(value(&sys, "khugepaged.scan_sleep_millisecs"), "200");
        let state = State::load(&st).expect("load").expect("state");
        assert_eq!(state.originals.len(), 2);
        assert_eq!(state.history.len(), 2);
        revert(&sys, opts(&st)).expect("revert");
        assert_eq!(value(&sys, "khugepaged.scan_sleep_millisecs"), "10000");
        assert_eq!(value(&sys, "autonuma"), "1");
    }

    #[test]
    fn invalid_values_write_nothing() {
        let (d, sys) = fake_root();
        let st = d.path().join("s.json");
        let e = set(&sys, &st, &[("zone_reclaim_mode", "1"), ("autonuma", "9")]).unwrap_err();
        assert!(e.to_string().starts_with("kernel.numa_balancing=9: "), "{e}");
        assert_eq!(value(&sys, "zone_reclaim_mode"), "0");
        assert!(!st.exists());
    }

    #[test]
    fn a_failing_write_rolls_back_the_earlier_ones() {
        let (d, sys) = fake_root();
        let st = d.path().join("s.json");
        // THP enabled is written after numa_balancing and zone_reclaim_mode: after the
        // second write its file turns into a folder (which even root cannot write:
        // EISDIR, where a read-only mode would not stop root)
        let thp = d.path().join("sys/kernel/mm/transparent_hugepage/enabled");
        let list = [("autonuma", "0"), ("zone_reclaim_mode", "3"), ("thp", "never")];
        let settings: Vec<Setting> = list.iter().map(|(k, v)| Setting::new(*k, *v)).collect();
        let mut n = 0;
        let mut sabotage = |i: usize, _: &Write| {
            n = i;
            if i == 2 {
                fs::remove_file(&thp).expect("rm");
                fs::create_dir(&thp).expect("mkdir");
            }
        };
        let e = apply(&sys, &settings, "set", with(&st, &mut sabotage)).unwrap_err();
        let msg = e.to_string();
        assert!(msg.starts_with("kernel/mm/transparent_hugepage/enabled: cannot write never to "), "{msg}");
        assert!(msg.ends_with("rolled back vm.zone_reclaim_mode, kernel.numa_balancing"), "{msg}");
        assert!(!e.is_usage());
        assert_eq!(n, 2);
        assert_eq!(value(&sys, "autonuma"), "1");
        assert_eq!(value(&sys, "zone_reclaim_mode"), "0");
        assert!(!st.exists(), "the state file is back to what it was (none)");
    }

    #[test]
    fn rollback_failure_keeps_the_state_for_revert() {
        let (d, sys) = fake_root();
        let st = d.path().join("s.json");
        let zr = d.path().join("proc/sys/vm/zone_reclaim_mode");
        let thp = d.path().join("sys/kernel/mm/transparent_hugepage/enabled");
        let settings: Vec<Setting> =
            [("zone_reclaim_mode", "3"), ("thp", "never")].iter().map(|(k, v)| Setting::new(*k, *v)).collect();
        let mut sabotage = |_: usize, _: &Write| {
            // after the first write both files turn into folders: the THP write and the rollback fail
            for p in [&zr, &thp] {
                fs::remove_file(p).expect("rm");
                fs::create_dir(p).expect("mkdir");
            }
        };
        let e = apply(&sys, &settings, "set", with(&st, &mut sabotage)).unwrap_err().to_string();
        assert!(e.contains("ROLLBACK FAILED for vm.zone_reclaim_mode") && e.contains("numakit tune revert"), "{e}");
        assert!(State::load(&st).expect("load").expect("kept").original("vm.zone_reclaim_mode").is_some());
        // revert cannot read the folder: it fails, names the knob and keeps the state
        let e = revert(&sys, opts(&st)).unwrap_err().to_string();
        assert!(e.contains("revert incomplete") && e.contains("vm.zone_reclaim_mode"), "{e}");
        assert!(st.exists());
        // once the file is back, revert finishes
        fs::remove_dir(&zr).expect("rmdir");
        put(&d, "proc/sys/vm/zone_reclaim_mode", "3\n");
        fs::remove_dir(&thp).expect("rmdir");
        put(&d, "sys/kernel/mm/transparent_hugepage/enabled", "always [madvise] never\n");
        revert(&sys, opts(&st)).expect("revert");
        assert_eq!(value(&sys, "zone_reclaim_mode"), "0");
        assert!(!st.exists());
    }

    #[test]
    fn crash_between_writes_then_revert() {
        let (d, sys) = fake_root();
        let st = d.path().join("s.json");
        let settings: Vec<Setting> =
            [("autonuma", "0"), ("zone_reclaim_mode", "1")].iter().map(|(k, v)| Setting::new(*k, *v)).collect();
        // a "crash" after the first write: the callback panics, as if the process died
        let crashed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut die = |i: usize, _: &Write| {
                if i == 1 {
                    panic!("killed after write 1");
                }
            };
            apply(&sys, &settings, "set", with(&st, &mut die))
        }));
        assert!(crashed.is_err());
        assert_eq!(value(&sys, "autonuma"), "0");
        assert_eq!(value(&sys, "zone_reclaim_mode"), "0", "second write never happened");
        let state = State::load(&st).expect("load").expect("state");
        assert_eq!(state.originals.len(), 2, "both originals were saved before the first write");
        let r = revert(&sys, opts(&st)).expect("revert");
        assert_eq!(r.writes.len(), 1);
        assert_eq!(r.already, vec!["vm.zone_reclaim_mode"]);
        assert_eq!(value(&sys, "autonuma"), "1");
    }

    #[test]
    fn weights_then_revert_restores_auto_last() {
        let (d, sys) = fake_root();
        let st = d.path().join("s.json");
        let mut order = Vec::new();
        let mut kernel_like = |_: usize, w: &Write| {
            order.push(w.knob.clone());
            // the kernel turns auto off when a weight is written
            if knobs::is_weight(&w.knob) {
                put(&d, "sys/kernel/mm/mempolicy/weighted_interleave/__auto_type", "false\n");
            }
        };
        let settings = vec![Setting::new("wi.node1", "4")];
        apply(&sys, &settings, "set", with(&st, &mut kernel_like)).expect("apply");
        assert_eq!(value(&sys, "wi.auto"), "false");
        let r = revert(&sys, with(&st, &mut kernel_like)).expect("revert");
        let names: Vec<&str> = r.writes.iter().map(|w| w.knob.as_str()).collect();
        assert_eq!(names, vec!["kernel/mm/mempolicy/weighted_interleave/node1", knobs::WEIGHT_AUTO]);
        assert_eq!(value(&sys, "wi.auto"), "true");
        assert_eq!(value(&sys, "wi.node1"), "1");
        assert_eq!(order.len(), 3, "one write to apply, two to revert: {order:?}");
    }

    #[test]
    fn dry_run_writes_nothing_and_state_of_another_root_is_refused() {
        let (d, sys) = fake_root();
        let st = d.path().join("s.json");
        let settings = vec![Setting::new("autonuma", "0")];
        let out = apply(&sys, &settings, "set", Options { dry_run: true, ..opts(&st) }).expect("dry run");
        assert!(out.dry_run && out.plan.writes.len() == 1);
        assert_eq!(value(&sys, "autonuma"), "1");
        assert!(!st.exists() && !d.path().join("s.json.lock").exists());

        let (_d2, other) = fake_root();
        set(&other, &st, &[("autonuma", "0")]).expect("apply on the other root");
        let e = set(&sys, &st, &[("autonuma", "0")]).unwrap_err().to_string();
        assert!(e.contains("belongs to root"), "{e}");
        let e = revert(&sys, opts(&st)).unwrap_err().to_string();
        assert!(e.contains("belongs to root"), "{e}");
    }

    #[test]
    fn state_from_an_earlier_boot_is_replaced() {
        let (d, sys) = fake_root();
        let st = d.path().join("s.json");
        set(&sys, &st, &[("autonuma", "0")]).expect("apply");
        // reboot: new boot id, knobs back to boot values
        put(&d, "proc/sys/kernel/random/boot_id", "99999999-2222-3333-4444-555555555555\n");
        put(&d, "proc/sys/kernel/numa_balancing", "1\n");
        put(&d, "proc/sys/vm/zone_reclaim_mode", "2\n");
        let out = set(&sys, &st, &[("zone_reclaim_mode", "0")]).expect("apply");
        assert!(out.notes[0].contains("before the last boot"), "{:?}", out.notes);
        let state = State::load(&st).expect("load").expect("state");
        assert_eq!(state.originals.len(), 1);
        assert_eq!(state.originals[0].knob, "vm.zone_reclaim_mode");
    }

    #[test]
    fn tampered_state_paths_are_left_alone() {
        let (d, sys) = fake_root();
        let st = d.path().join("s.json");
        set(&sys, &st, &[("autonuma", "0")]).expect("apply");
        let mut state = State::load(&st).expect("load").expect("state");
        state.originals[0].path = "proc/sys/kernel/core_pattern".into();
        state.save(&st).expect("save");
        let e = revert(&sys, opts(&st)).unwrap_err().to_string();
        assert!(e.contains("is not one of its files"), "{e}");
        assert_eq!(value(&sys, "autonuma"), "0");
    }
}
