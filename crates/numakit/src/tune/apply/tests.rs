//! tune's apply and revert on fake roots: the state file across runs and
//! boots, rollback when a write fails, a crash between writes, invalid and
//! tampered input, IRQ affinities the kernel keeps for itself.

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
    let out = irq_apply(&sys, &st, &irq_settings(&[28, 29, 30]), &["proc/irq/29/smp_affinity_list"]).expect("apply");
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
    assert_eq!(fs::read_to_string(d.path().join("sys/kernel/mm/transparent_hugepage/enabled")).expect("r"), "never");
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
