use super::*;

#[test]
fn machine_ratios_and_checks() {
    let m = machine(&[(0, 4, 1), (1, 4, 1), (2, 4, 1)], vec![vec![10, 16, 22], vec![16, 10, 16], vec![22, 16, 10]]);
    let r = m.ratios(21, 1.62);
    assert!((r[0][1] - (1.0 + 6.0 * 0.62 / 11.0)).abs() < 1e-9);
    assert_eq!(r[2][2], 1.0);
    assert!(Machine::new(vec![node(1, 1, 1), node(0, 1, 1)], vec![vec![10; 2]; 2]).is_err());
    assert!(two().with_measured(vec![vec![1.0, f64::NAN], vec![1.0, 1.0]]).is_err());
}

#[test]
fn config_reads_toml_with_defaults() {
    let c = Config::from_toml("min_cpu = 1.0\nexclude_comms = [\"qemu-kvm\"]\n").unwrap();
    assert_eq!(c.min_cpu, 1.0);
    assert_eq!(c.exclude_comms, ["qemu-kvm"]);
    assert_eq!(c.min_rss_bytes, 300_000_000);
    assert!(Config::from_toml("no_such_knob = 1").is_err());
}

#[test]
fn actions_serialise() {
    let m = two();
    let s = snap(1000.0, &m, &[(0.0, 4), (0.0, 4)], vec![job(7, 1, &[(0, 2)], 0.4)]);
    let d = decide(&m, &s, &Config::default(), &History::new());
    let j = serde_json::to_value(&d.actions).unwrap();
    assert_eq!(j[0]["action"], "bind");
    assert_eq!(j[0]["cpu_nodes"], "1");
    assert_eq!(j[0]["reason"]["why"], "improve");
    assert_eq!(j[1]["action"], "migrate");
}
