use super::*;

const LINE: &str = r#"{"schema":"numakit-step-outcome/1","cluster":"farm","job":"42","step":"0","array_job":null,"array_task":null,"host":"wn1","user":"alice","job_name":"reco","partition":"p","account":null,"batch_system":"slurm","experiment":"q4","unit":"job","period":null,"arm":"auto","arm_source":"assigned","arms":"auto:50,none:50","placement":{"mode":"auto","cpus":"0-3","memory":"bind 0"},"start_unix":10.0,"end_unix":70.5,"wall_s":60.5,"cpu_user_s":100.0,"cpu_system_s":2.5,"cpus":2,"cpu_efficiency":0.85,"peak_memory_bytes":1048576,"exit_status":0,"exit_signal":null,"numa":{"locality":0.97,"node_bytes":[[0,4096]],"counters_delta":[["numa_pages_migrated",3]]},"numakit_version":"0.1.0","hardware":{"key":"k1","packages":2,"nodes":2,"cores":8,"cpus":16,"node_mem_bytes":[1,2],"cpu_model":"Xeon \"Gold\""}}"#;

fn record<'a>(line: &'a str, by: &[&str]) -> Line<'a> {
    match parse(line.as_bytes(), by) {
        Parsed::Record(l) => *l,
        other => panic!("{other:?}"),
    }
}

#[test]
fn reads_the_fields_the_analysis_uses_without_copying() {
    let l = record(LINE, &["job_name"]);
    assert_eq!((&*l.cluster, &*l.job, &*l.step, &*l.host, &*l.arm), ("farm", "42", "0", "wn1", "auto"));
    assert!(matches!(l.job, Cow::Borrowed(_)) && matches!(l.by, Some(Cow::Borrowed("reco"))), "{l:?}");
    assert_eq!((l.unit, l.arm_source, l.period), (Some(Unit::Job), Some(ArmSource::Assigned), None));
    assert_eq!((l.start_unix, l.end_unix, l.wall_s), (10.0, 70.5, 60.5));
    assert_eq!((l.cpu_user_s, l.cpu_system_s, l.exit_status, l.exit_signal), (Some(100.0), Some(2.5), Some(0), None));
    assert_eq!((l.locality, &*l.hardware_key), (Some(0.97), "k1"));
    assert_eq!((l.experiment.as_deref(), l.arms.as_deref()), (Some("q4"), Some("auto:50,none:50")));
}

#[test]
fn by_reaches_any_field_nested_or_not() {
    let by = |path: &str| record(LINE, &path.split('.').collect::<Vec<_>>()).by.map(|c| c.into_owned());
    assert_eq!(by("user").as_deref(), Some("alice"));
    assert_eq!(by("account"), None, "null");
    assert_eq!(by("placement.mode").as_deref(), Some("auto"));
    assert_eq!(by("hardware.cpu_model").as_deref(), Some("Xeon \"Gold\""), "an escaped string is copied");
    assert_eq!(by("hardware.cores").as_deref(), Some("8"), "a number as text");
    assert_eq!(by("cpus").as_deref(), Some("2"));
    // grouping by a field the analysis also reads keeps both
    let l = record(LINE, &["hardware", "key"]);
    assert_eq!((l.by.as_deref(), &*l.hardware_key), (Some("k1"), "k1"));
    let l = record(LINE, &["host"]);
    assert_eq!((l.by.as_deref(), &*l.host), (Some("wn1"), "wn1"));
    let l = record(LINE, &["experiment"]);
    assert_eq!((l.by.as_deref(), l.experiment.as_deref()), (Some("q4"), Some("q4")));
}

#[test]
fn other_schemas_and_bad_lines_are_told_apart() {
    for other in [
        r#"{"schema":"numakit-cgroup-report/1","job":"1"}"#,
        r#"{"job":"1","host":"x"}"#,
        r#"{"host":"x","schema":"something-else/2"}"#,
    ] {
        assert!(matches!(parse(other.as_bytes(), &[]), Parsed::Other), "{other}");
    }
    let missing = LINE.replace(r#""host":"wn1","#, "");
    match parse(missing.as_bytes(), &[]) {
        Parsed::Bad(why) => assert!(why.contains("missing field `host`"), "{why}"),
        other => panic!("{other:?}"),
    }
    let wrong = LINE.replace(r#""wall_s":60.5"#, r#""wall_s":"long""#);
    assert!(matches!(parse(wrong.as_bytes(), &[]), Parsed::Bad(_)));
    for bad in ["", "not json", "[1,2]", "{", &format!("{LINE} trailing")] {
        assert!(matches!(parse(bad.as_bytes(), &[]), Parsed::Bad(_)), "{bad}");
    }
    // a later version within /1 with a field this reader does not know
    let newer = LINE.replace(r#""numakit_version""#, r#""future":{"a":[1,2]},"numakit_version""#);
    assert!(matches!(parse(newer.as_bytes(), &[]), Parsed::Record(_)));
    // the schema may carry a suffix within version 1
    let suffixed = LINE.replace("numakit-step-outcome/1", "numakit-step-outcome/1.3");
    assert!(matches!(parse(suffixed.as_bytes(), &[]), Parsed::Record(_)));
}

#[test]
fn a_record_the_library_writes_reads_back() {
    use numakit::experiment::{Hardware, Placement, StepOutcome};
    let r = StepOutcome {
        class: None,
        schema: SCHEMA.into(),
        cluster: "c".into(),
        job: "7".into(),
        step: "batch".into(),
        array_job: None,
        array_task: None,
        host: "h".into(),
        user: None,
        job_name: Some("j".into()),
        partition: None,
        account: None,
        batch_system: "slurm".into(),
        experiment: None,
        unit: None,
        period: None,
        arm: "none".into(),
        arm_source: ArmSource::Default,
        arms: None,
        placement: Placement::default(),
        start_unix: 1.0,
        end_unix: 2.0,
        wall_s: 1.0,
        cpu_user_s: None,
        cpu_system_s: None,
        cpu_source: None,
        cpus: None,
        cpu_efficiency: None,
        peak_memory_bytes: None,
        exit_status: None,
        exit_signal: Some(9),
        numa: None,
        numakit_version: "x".into(),
        hardware: Hardware {
            key: "k".into(),
            packages: 1,
            nodes: 1,
            cores: 1,
            cpus: 1,
            node_mem_bytes: vec![],
            cpu_model: None,
        },
    };
    let text = serde_json::to_string(&r).expect("json");
    let l = record(&text, &["job_name"]);
    assert_eq!(
        (l.arm_source, l.exit_signal, l.locality, l.by.as_deref()),
        (Some(ArmSource::Default), Some(9), None, Some("j"))
    );
}

#[test]
fn a_record_starts_where_the_library_writes_its_schema() {
    assert_eq!(record_start(LINE.as_bytes()), Some(0));
    let torn = format!("{}{LINE}", &LINE[..391]);
    assert_eq!(record_start(&torn.as_bytes()[1..]).map(|p| p + 1), Some(391));
    // inside a string the quotes are escaped: no start there
    let quoted = LINE.replace(r#""job_name":"reco""#, r#""job_name":"{\"schema\":\"numakit-step-outcome/1""#);
    assert!(matches!(parse(quoted.as_bytes(), &[]), Parsed::Record(_)));
    assert_eq!(record_start(&quoted.as_bytes()[1..]), None);
}
