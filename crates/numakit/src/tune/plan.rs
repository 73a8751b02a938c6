//! Pure planning: requested settings and current values into a checked
//! [`Plan`] of writes, or a [`TuneError`] naming the knob and the value.
//!
//! Every value is checked before anything is written: the knob exists and
//! is available here, the value is one the kernel accepts (range, choice,
//! kernel version), no knob is asked for twice with different values, and
//! the result is consistent (scan period min ≤ max; node weights are not
//! combined with weighted-interleave `auto=true`, which would recompute
//! them). Writes come out in catalogue order; knobs already at the asked
//! value are listed as unchanged and not written.

use serde::Serialize;

use super::knobs::{self, Knob};
use super::read::Reading;
use super::state::Original;
use super::TuneError;

/// One requested setting, as the user wrote it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Setting {
    /// Knob name or alias.
    pub knob: String,
    /// Value.
    pub value: String,
}

impl Setting {
    /// A setting from `KNOB=VALUE` (split at the first `=`).
    pub fn parse(arg: &str) -> Result<Setting, TuneError> {
        match arg.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() => Ok(Setting { knob: k.trim().to_string(), value: v.to_string() }),
            _ => Err(TuneError::BadAssignment { arg: arg.to_string() }),
        }
    }

    /// A setting from a name and a value.
    pub fn new(knob: impl Into<String>, value: impl Into<String>) -> Setting {
        Setting { knob: knob.into(), value: value.into() }
    }
}

/// One write of a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Write {
    /// Canonical knob name.
    pub knob: String,
    /// The file, relative to the root.
    pub path: String,
    /// The current value.
    pub from: String,
    /// The value to write.
    pub to: String,
    /// Catalogue position (writes go in this order).
    #[serde(skip)]
    pub order: u32,
}

/// What to write, checked.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Plan {
    /// The writes, in catalogue order.
    pub writes: Vec<Write>,
    /// Requested knobs already at the asked value (not written).
    pub unchanged: Vec<Write>,
    /// Knobs the writes change as a side effect (weighted-interleave `auto`
    /// when a node weight is written): their originals are saved too.
    pub side_effects: Vec<Original>,
}

impl Plan {
    /// Every original to save before writing: the writes' current values,
    /// then the side effects'.
    pub fn originals(&self) -> Vec<Original> {
        let writes = self.writes.iter().map(|w| Original {
            knob: w.knob.clone(),
            path: w.path.clone(),
            value: w.from.clone(),
            saved: String::new(),
        });
        writes.chain(self.side_effects.iter().cloned()).collect()
    }
}

/// Checks `settings` against the catalogue and `readings` (the current
/// values; a requested knob without a reading is unavailable) and returns
/// the writes. `kernel` is the running kernel's (major, minor).
pub fn plan(settings: &[Setting], readings: &[Reading], kernel: Option<(u32, u32)>) -> Result<Plan, TuneError> {
    // 1. names and values, in the order given
    let mut wanted: Vec<(Knob, String)> = Vec::new();
    for s in settings {
        let knob = knobs::lookup(&s.knob).ok_or_else(|| TuneError::UnknownKnob { name: s.knob.clone() })?;
        let invalid = |why: String| TuneError::Invalid { knob: knob.name.clone(), value: s.value.clone(), why };
        let value = knob.validate(&s.value).map_err(invalid)?;
        knob.check_kernel(&value, kernel).map_err(invalid)?;
        match wanted.iter().find(|(k, _)| k.name == knob.name) {
            Some((_, v)) if *v != value => {
                return Err(TuneError::Conflict { knob: knob.name.clone(), first: v.clone(), second: value })
            }
            Some(_) => {}
            None => wanted.push((knob, value)),
        }
    }
    // 2. availability and current values
    let reading = |name: &str| readings.iter().find(|r| r.knob.name == name);
    let mut plan = Plan::default();
    for (knob, value) in &wanted {
        let found = match reading(&knob.name).map(|r| &r.state) {
            Some(Ok(found)) => found,
            Some(Err(why)) => return Err(TuneError::Unavailable { knob: knob.name.clone(), why: why.clone() }),
            None => {
                let why = format!("not in this kernel (needs {})", knob.needs);
                return Err(TuneError::Unavailable { knob: knob.name.clone(), why });
            }
        };
        let w = Write {
            knob: knob.name.clone(),
            path: found.path.clone(),
            from: found.value.clone(),
            to: value.clone(),
            order: knob.order,
        };
        if w.from == w.to {
            plan.unchanged.push(w);
        } else {
            plan.writes.push(w);
        }
    }
    // 3. consistency of the result
    let after = |name: &str| -> Option<String> {
        wanted
            .iter()
            .find(|(k, _)| k.name == name)
            .map(|(_, v)| v.clone())
            .or_else(|| reading(name).and_then(|r| r.value().map(str::to_string)))
    };
    let (min, max) = (after(knobs::SCAN_PERIOD_MIN), after(knobs::SCAN_PERIOD_MAX));
    if let (Some(lo), Some(hi)) = (&min, &max) {
        let (a, b) = (lo.parse::<u64>().unwrap_or(0), hi.parse::<u64>().unwrap_or(u64::MAX));
        if a > b {
            let asked_min = wanted.iter().any(|(k, _)| k.name == knobs::SCAN_PERIOD_MIN);
            let (knob, value, why) = if asked_min {
                (knobs::SCAN_PERIOD_MIN, lo, format!("above {} ({hi})", knobs::SCAN_PERIOD_MAX))
            } else {
                (knobs::SCAN_PERIOD_MAX, hi, format!("below {} ({lo})", knobs::SCAN_PERIOD_MIN))
            };
            return Err(TuneError::Invalid { knob: knob.into(), value: value.clone(), why });
        }
    }
    let weights: Vec<&Write> = plan.writes.iter().filter(|w| knobs::is_weight(&w.knob)).collect();
    if let Some(first) = weights.first() {
        if wanted.iter().any(|(k, v)| k.name == knobs::WEIGHT_AUTO && v == "true") {
            return Err(TuneError::Invalid {
                knob: knobs::WEIGHT_AUTO.into(),
                value: "true".into(),
                why: format!("auto mode recomputes the node weights, so {} would not stay; leave auto out", first.knob),
            });
        }
        let auto_written = plan.writes.iter().any(|w| w.knob == knobs::WEIGHT_AUTO);
        if let (false, Some(Ok(found))) = (auto_written, reading(knobs::WEIGHT_AUTO).map(|r| &r.state)) {
            plan.side_effects.push(Original {
                knob: knobs::WEIGHT_AUTO.into(),
                path: found.path.clone(),
                value: found.value.clone(),
                saved: String::new(),
            });
        }
    }
    plan.writes.sort_by_key(|w| w.order);
    plan.unchanged.sort_by_key(|w| w.order);
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tune::read::{read_all, read_knob};
    use crate::tune::testutil::fake_root;

    fn settings(list: &[(&str, &str)]) -> Vec<Setting> {
        list.iter().map(|(k, v)| Setting::new(*k, *v)).collect()
    }

    fn run(list: &[(&str, &str)]) -> Result<Plan, TuneError> {
        let (_d, sys) = fake_root();
        plan(&settings(list), &read_all(&sys), Some((6, 12)))
    }

    #[test]
    fn parse_assignments() {
        assert_eq!(Setting::parse("vm.zone_reclaim_mode=1").expect("ok"), Setting::new("vm.zone_reclaim_mode", "1"));
        assert_eq!(Setting::parse("a=b=c").expect("ok").value, "b=c");
        for bad in ["novalue", "=1", ""] {
            let e = Setting::parse(bad).unwrap_err();
            assert!(e.is_usage() && e.to_string().contains("expected KNOB=VALUE"), "{e}");
        }
    }

    #[test]
    fn writes_in_catalogue_order_with_current_values() {
        let p = run(&[("thp", "never"), ("autonuma", "0"), ("zone_reclaim_mode", "0"), ("scan_delay_ms", "100")])
            .expect("plan");
        let got: Vec<(&str, &str, &str)> =
            p.writes.iter().map(|w| (w.knob.as_str(), w.from.as_str(), w.to.as_str())).collect();
        assert_eq!(
            got,
            vec![
                ("kernel.numa_balancing", "1", "0"),
                ("kernel.numa_balancing_scan_delay_ms", "1000", "100"),
                (knobs::THP_ENABLED, "madvise", "never"),
            ]
        );
        assert_eq!(p.writes[1].path, "sys/kernel/debug/sched/numa_balancing/scan_delay_ms");
        assert_eq!(p.unchanged.len(), 1);
        assert_eq!(p.unchanged[0].knob, "vm.zone_reclaim_mode");
        assert!(p.side_effects.is_empty());
    }

    #[test]
    fn errors_name_knob_and_value() {
        type Case<'a> = (&'a [(&'a str, &'a str)], &'a str, bool);
        let cases: &[Case<'_>] = &[
            (&[("kernel.numa_balancing", "7")], "kernel.numa_balancing=7: must be an integer from 0 to 3", true),
            (&[("vm.zone_reclaim_mode", "8")], "vm.zone_reclaim_mode=8: must be an integer from 0 to 7", true),
            (&[("thp", "sometimes")], "kernel/mm/transparent_hugepage/enabled=sometimes: must be one of", true),
            (&[("wi.node0", "0")], "weighted_interleave/node0=0: must be an integer from 1 to 255", true),
            (&[("khugepaged.scan_sleep_millisecs", "-1")], "scan_sleep_millisecs=-1: must be a whole number", true),
            (&[("kernel.nope", "1")], "unknown knob \"kernel.nope\"", true),
            (&[("autonuma", "0"), ("numa_balancing", "1")], "kernel.numa_balancing is set twice, to 0 and 1", true),
            (&[("promote_rate_limit", "100")], "unavailable: not in this kernel (needs Linux 6.1+", false),
            (&[("wi.node5", "3")], "node5: unavailable: not in this kernel", false),
            (&[("scan_period_min_ms", "70000")], "scan_period_min_ms=70000: above", true),
            (&[("scan_period_max_ms", "10")], "scan_period_max_ms=10: below", true),
            (&[("wi.node0", "3"), ("wi.auto", "true")], "auto=true: auto mode recomputes", true),
        ];
        for (list, want, usage) in cases {
            let e = run(list).unwrap_err();
            assert!(e.to_string().contains(want), "{list:?}: {e}");
            assert_eq!(e.is_usage(), *usage, "{list:?}: {e}");
        }
        // the same value twice is fine
        assert_eq!(run(&[("autonuma", "0"), ("numa_balancing", "0")]).expect("plan").writes.len(), 1);
    }

    #[test]
    fn tiering_modes_follow_the_kernel() {
        let (_d, sys) = fake_root();
        let r = read_all(&sys);
        assert!(plan(&settings(&[("autonuma", "2")]), &r, Some((5, 10))).unwrap_err().to_string().contains("5.18"));
        assert_eq!(plan(&settings(&[("autonuma", "3")]), &r, Some((6, 1))).expect("plan").writes[0].to, "3");
    }

    #[test]
    fn weights_save_auto_as_a_side_effect() {
        let p = run(&[("wi.node1", "3"), ("wi.node0", "2")]).expect("plan");
        let names: Vec<&str> = p.writes.iter().map(|w| w.knob.as_str()).collect();
        assert!(names[0].ends_with("node0") && names[1].ends_with("node1"), "{names:?}");
        assert_eq!(p.side_effects.len(), 1);
        assert_eq!(p.side_effects[0].knob, knobs::WEIGHT_AUTO);
        assert_eq!(p.side_effects[0].value, "true");
        assert_eq!(p.side_effects[0].path, "sys/kernel/mm/mempolicy/weighted_interleave/__auto_type");
        assert_eq!(p.originals().len(), 3);
        // with auto=false asked too, auto is a write, not a side effect, and comes after the weights
        let p = run(&[("wi.auto", "false"), ("wi.node1", "3")]).expect("plan");
        assert!(p.side_effects.is_empty());
        assert_eq!(p.writes.last().map(|w| w.knob.as_str()), Some(knobs::WEIGHT_AUTO));
    }

    #[test]
    fn a_knob_missing_from_readings_is_unavailable() {
        let (_d, sys) = fake_root();
        let only = vec![read_knob(&sys, &knobs::lookup("thp").expect("knob"))];
        let e = plan(&settings(&[("autonuma", "0")]), &only, None).unwrap_err();
        assert!(matches!(e, TuneError::Unavailable { .. }), "{e}");
    }
}
