//! The knob catalogue: lookup by name, alias and path, the per-node
//! weights, validation, current values, IRQ affinities, the tiering modes'
//! kernel version.

use super::*;

#[test]
fn lookup_by_name_alias_and_path() {
    for n in [
        "kernel.numa_balancing",
        "numa_balancing",
        "autonuma",
        "kernel/numa_balancing",
        "/proc/sys/kernel/numa_balancing",
    ] {
        assert_eq!(lookup(n).map(|k| k.name), Some(NUMA_BALANCING.to_string()), "{n}");
    }
    for n in ["vm.zone_reclaim_mode", "zone_reclaim_mode", "vm/zone_reclaim_mode", "/proc/sys/vm/zone_reclaim_mode"] {
        assert_eq!(lookup(n).map(|k| k.name).as_deref(), Some("vm.zone_reclaim_mode"), "{n}");
    }
    let khp = "kernel/mm/transparent_hugepage/khugepaged/scan_sleep_millisecs";
    for n in
        [khp, "/sys/kernel/mm/transparent_hugepage/khugepaged/scan_sleep_millisecs", "khugepaged.scan_sleep_millisecs"]
    {
        assert_eq!(lookup(n).map(|k| k.name).as_deref(), Some(khp), "{n}");
    }
    for n in [
        "scan_delay_ms",
        "kernel/debug/sched/numa_balancing/scan_delay_ms",
        "/sys/kernel/debug/sched/numa_balancing/scan_delay_ms",
        "/proc/sys/kernel/numa_balancing_scan_delay_ms",
    ] {
        assert_eq!(lookup(n).map(|k| k.name).as_deref(), Some("kernel.numa_balancing_scan_delay_ms"), "{n}");
    }
    assert_eq!(lookup("thp").map(|k| k.name).as_deref(), Some(THP_ENABLED));
    assert!(lookup("kernel.nope").is_none());
    assert!(lookup("").is_none());
}

#[test]
fn weights_by_node() {
    for n in [
        "wi.node3",
        "weighted_interleave/node3",
        "kernel/mm/mempolicy/weighted_interleave/node3",
        "/sys/kernel/mm/mempolicy/weighted_interleave/node3",
    ] {
        let k = lookup(n).unwrap_or_else(|| panic!("{n}"));
        assert_eq!(k.weight_node(), Some(3), "{n}");
        assert_eq!(k.paths, vec!["sys/kernel/mm/mempolicy/weighted_interleave/node3".to_string()]);
    }
    for bad in ["wi.node", "wi.node03", "wi.nodex", "wi.3", "wi.node-1"] {
        assert!(lookup(bad).is_none(), "{bad}");
    }
    assert_eq!(lookup("wi.auto").map(|k| k.name).as_deref(), Some(WEIGHT_AUTO));
    assert!(is_weight(&weight(3).name) && !is_weight(WEIGHT_AUTO) && !is_weight("kernel.numa_balancing"));
}

#[test]
fn catalogue_order_puts_weights_before_auto() {
    let c = catalogue(&[1, 0]);
    let names: Vec<&str> = c.iter().map(|k| k.name.as_str()).collect();
    assert_eq!(names[0], NUMA_BALANCING);
    let w0 = names.iter().position(|n| n.ends_with("/node0")).expect("node0");
    let w1 = names.iter().position(|n| n.ends_with("/node1")).expect("node1");
    let auto = names.iter().position(|n| *n == WEIGHT_AUTO).expect("auto");
    assert!(w0 < w1 && w1 < auto, "{names:?}");
    // every name and alias is unique across the catalogue
    let mut seen = std::collections::BTreeSet::new();
    for k in &c {
        for n in std::iter::once(&k.name).chain(&k.aliases) {
            assert!(seen.insert(n.clone()), "{n} twice");
            assert_eq!(lookup(n).map(|l| l.name), Some(k.name.clone()), "{n}");
        }
        assert!(k.validate(k.default).is_ok(), "{}: default {} is refused", k.name, k.default);
    }
}

#[test]
fn validation() {
    let nb = lookup("kernel.numa_balancing").expect("knob");
    assert_eq!(nb.validate(" 1 "), Ok("1".into()));
    assert_eq!(nb.validate("4"), Err("must be an integer from 0 to 3".into()));
    for bad in ["-1", "1.0", "0x1", "", "one", "+1"] {
        assert!(nb.validate(bad).is_err(), "{bad}");
    }
    let zr = lookup("vm.zone_reclaim_mode").expect("knob");
    assert_eq!(zr.validate("7"), Ok("7".into()));
    assert!(zr.validate("8").is_err());
    let ms = lookup("khugepaged.scan_sleep_millisecs").expect("knob");
    assert_eq!(ms.validate("0100"), Ok("100".into()));
    assert_eq!(ms.validate("-5"), Err("must be a whole number from 0 to 4294967295".into()));
    assert!(ms.validate("4294967296").is_err());
    assert!(lookup("pages_to_scan").expect("knob").validate("0").is_err());
    assert!(lookup("scan_size_mb").expect("knob").validate("0").is_err());
    let thp = lookup("thp").expect("knob");
    assert_eq!(thp.validate("never"), Ok("never".into()));
    assert_eq!(thp.validate("defer"), Err("must be one of always, madvise, never".into()));
    let defrag = lookup("thp.defrag").expect("knob");
    assert_eq!(defrag.validate("defer+madvise"), Ok("defer+madvise".into()));
    assert!(defrag.validate("[madvise]").is_err());
    let w = lookup("wi.node0").expect("knob");
    assert!(w.validate("0").is_err() && w.validate("256").is_err());
    assert_eq!(w.validate("255"), Ok("255".into()));
    let d = lookup("demotion_enabled").expect("knob");
    assert_eq!(d.validate("1"), Ok("true".into()));
    assert_eq!(d.validate("Off"), Ok("false".into()));
    assert!(d.validate("maybe").is_err());
}

#[test]
fn current_values() {
    let thp = lookup("thp").expect("knob");
    assert_eq!(thp.current_from_raw("always [madvise] never"), Ok("madvise".into()));
    assert_eq!(thp.current_from_raw("never"), Ok("never".into()));
    assert!(thp.current_from_raw("always madvise never").is_err());
    assert!(thp.current_from_raw("always [madvise never").is_err());
    let defrag = lookup("thp.defrag").expect("knob");
    assert_eq!(defrag.current_from_raw("always defer [defer+madvise] madvise never"), Ok("defer+madvise".into()));
    let nb = lookup("numa_balancing").expect("knob");
    assert_eq!(nb.current_from_raw("1\n"), Ok("1".into()));
    assert!(nb.current_from_raw("").is_err());
}

#[test]
fn irq_affinities_by_number() {
    for n in ["irq/30/smp_affinity_list", "/proc/irq/30/smp_affinity_list", "proc/irq/30/smp_affinity_list"] {
        let k = lookup(n).unwrap_or_else(|| panic!("{n}"));
        assert_eq!(k.name, "irq/30/smp_affinity_list");
        assert_eq!(k.paths, vec!["proc/irq/30/smp_affinity_list".to_string()]);
        assert_eq!(irq_of(&k.name), Some(30));
    }
    for bad in ["irq/030/smp_affinity_list", "irq//smp_affinity_list", "irq/x/smp_affinity_list", "irq/3/smp_affinity"]
    {
        assert!(lookup(bad).is_none(), "{bad}");
    }
    let k = irq_affinity(7);
    assert_eq!(k.validate(" 3,1,2 "), Ok("1-3".into()));
    assert!(k.validate("").unwrap_err().contains("at least one CPU"));
    assert!(k.validate("1-0").unwrap_err().contains("CPU list"));
    assert!(k.order > catalogue(&[0, 1]).iter().map(|k| k.order).max().unwrap_or(0));
}

#[test]
fn tiering_modes_need_5_18() {
    let nb = lookup("numa_balancing").expect("knob");
    assert!(nb.check_kernel("2", Some((5, 15))).unwrap_err().contains("5.18"));
    assert!(nb.check_kernel("3", Some((4, 19))).is_err());
    assert!(nb.check_kernel("1", Some((4, 19))).is_ok());
    assert!(nb.check_kernel("2", Some((6, 1))).is_ok());
    assert!(nb.check_kernel("2", None).is_ok());
}
