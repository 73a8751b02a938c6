use super::assign::{assign_job, control, Start};
use super::*;
use crate::experiment::assign::Subject;
use crate::experiment::guard::Guards;
use crate::experiment::record::ArmSource;

const POLICY: &str = "\
# a farm's policy
defaults key=/etc/numakit/k cluster=farm holdout=5%

rule reco  partition=reco,reco-long name=reco_*  mode=auto
rule sim   partition=sim \\
           array=yes                              mode=none holdout=10%
rule hs06  name=hs06*  experiment=hs06-q1 arms=auto:1,none:1
rule big   cpus=32- mem=64G-                      mode=local holdout=0
rule gpu   gres=gpu*                              mode=auto holdout=1% holdout-arm=local
rule rest                                         mode=auto   # everything else
";

fn facts(partition: &str, name: &str) -> JobFacts {
    JobFacts {
        partition: Some(partition.into()),
        job_name: Some(name.into()),
        cpus: Some(4),
        mem_bytes: Some(8 << 30),
        array: Some(false),
        ..JobFacts::default()
    }
}

#[test]
fn a_policy_reads_with_its_defaults_and_continued_lines() {
    let p = parse::parse(POLICY).unwrap();
    let classes: Vec<(&str, usize)> = p.rules.iter().map(|r| (r.class.as_str(), r.line)).collect();
    assert_eq!(classes, vec![("reco", 4), ("sim", 5), ("hs06", 7), ("big", 8), ("gpu", 9), ("rest", 10)]);
    let mode = |i: usize| match &p.rules[i].action {
        Action::Mode { mode, holdout, key, cluster } => {
            assert_eq!(key.as_deref(), Some(Path::new("/etc/numakit/k")));
            assert_eq!(cluster.as_deref(), Some("farm"));
            (mode.to_string(), holdout.as_ref().map(|h| (h.share_text(), h.arm.to_string())))
        }
        Action::Experiment(_) => panic!("rule {i}"),
    };
    assert_eq!(mode(0), ("auto".into(), Some(("5%".into(), "none".into()))), "the default holdout");
    assert_eq!(mode(1), ("none".into(), Some(("10%".into(), "auto".into()))), "a none rule holds out into auto");
    assert_eq!(mode(3), ("local".into(), None), "holdout=0 turns the default off");
    assert_eq!(mode(4), ("auto".into(), Some(("1%".into(), "local".into()))));
    let Action::Experiment(d) = &p.rules[2].action else { panic!("hs06") };
    assert_eq!(
        (d.name.as_str(), d.key.as_path(), d.cluster.as_deref()),
        ("hs06-q1", Path::new("/etc/numakit/k"), Some("farm"))
    );
    assert_eq!(p.rules[1].matchers.len(), 2, "the continued line's matcher belongs to its rule");
}

#[test]
fn the_first_rule_that_matches_wins_and_explain_says_why() {
    let p = parse::parse(POLICY).unwrap();
    let class = |f: &JobFacts| p.first_match(f).map(|r| r.class.clone());
    assert_eq!(class(&facts("reco-long", "reco_2026")).as_deref(), Some("reco"));
    assert_eq!(class(&facts("reco", "calib")).as_deref(), Some("rest"), "both matchers must match");
    assert_eq!(class(&JobFacts { array: Some(true), ..facts("sim", "g4") }).as_deref(), Some("sim"));
    assert_eq!(class(&facts("sim", "g4")).as_deref(), Some("rest"), "not an array");
    assert_eq!(class(&facts("short", "hs06_all")).as_deref(), Some("hs06"));
    let big = JobFacts { cpus: Some(64), mem_bytes: Some(128 << 30), ..facts("x", "y") };
    assert_eq!(class(&big).as_deref(), Some("big"));
    let gpu = JobFacts { gres: vec!["gpu:a100:2".into()], ..facts("x", "y") };
    assert_eq!(class(&gpu).as_deref(), Some("gpu"));
    let e = p.explain(&facts("reco", "calib"));
    assert_eq!(e.len(), 6, "every rule up to the one that matched: {e:?}");
    assert_eq!(e[0].verdict, Err("name \"calib\" does not match name=reco_*".into()));
    assert_eq!(e[3].verdict, Err("cpus 4 outside cpus=32-".into()));
    assert_eq!(e[4].verdict, Err("gres=gpu*: the job asked for no GRES".into()));
    assert_eq!(e[5].verdict, Ok(vec![]), "the catch-all");
    let unknown = JobFacts { partition: None, ..facts("", "reco_1") };
    assert_eq!(
        p.explain(&unknown)[0].verdict,
        Err("partition=reco,reco-long: the job's partition is not known".into())
    );
}

#[test]
fn every_error_names_its_line_column_and_word_as_typed() {
    let cases = [
        ("rule a mode=auto\nrule b cpus=4x mode=auto", "2:8: \"cpus=4x\": a count: N, N-, -N or N-M"),
        ("rule a mem=8Q- mode=auto", "1:8: \"mem=8Q-\": "),
        ("rule a mode=sideways", "1:8: \"mode=sideways\": "),
        ("rule a partition=x", "1:6: \"a\": a rule needs mode=MODE or an experiment"),
        (
            "rule a mode=auto arms=auto,none experiment=e",
            "1:18: \"arms=auto,none\": a rule gives mode= or an experiment, not both",
        ),
        ("rule a mode=auto mode=none", "1:18: \"mode=none\": mode= is given twice"),
        (
            "rule a experiment=e arms=auto:1,none:1 key=/k holdout=5%",
            "1:47: \"holdout=5%\": an experiment's jobs are all drawn",
        ),
        ("rule a experiment=e arms=auto:1,bogus:1 key=/k", "1:21: \"arms=auto:1,bogus:1\": "),
        ("rule a experiment=e arms=auto:1,none:1", "1:8: \"experiment=e\": an experiment needs key=FILE"),
        ("rule a mode=auto holdout=60%", "1:18: \"holdout=60%\": a share from 0 to 50%"),
        ("rule a mode=auto holdout-arm=none", "1:18: \"holdout-arm=none\": holdout-arm= goes with holdout=SHARE"),
        (
            "rule a mode=auto holdout=5% holdout-arm=auto",
            "1:29: \"holdout-arm=auto\": the holdout's arm is another mode",
        ),
        ("rule b/c mode=auto", "1:6: \"b/c\": a class is 1 to 64 letters"),
        ("rule a name=[x mode=auto", "1:8: \"name=[x\": pattern \"[x\": "),
        ("rule a cpus=8-2 mode=auto", "1:8: \"cpus=8-2\": the range's low end is above its high end"),
        ("rules a mode=auto", "1:1: \"rules\": a line is `rule CLASS WORD...` or `defaults WORD...`"),
        ("rule a mode=auto\ndefaults key=/k", "2:1: \"defaults\": one defaults line, before every rule"),
        ("  rule a\tmode=auto color=red", "1:20: \"color=red\": not a rule's word"),
        ("rule a mode=auto name=\u{1b}[31m", "1:18: \"name=\\u{1b}[31m\": "),
    ];
    for (text, want) in cases {
        let e = parse::parse(text).unwrap_err();
        assert!(e.starts_with(want), "{text:?}:\n got {e}\nwant {want}");
        assert!(!e.contains('\n') && !e.contains('\u{1b}'), "{e}");
    }
}

#[test]
fn check_warns_of_unreachable_rules_and_decided_modes_without_holdout() {
    let p = parse::parse("rule a mode=auto\nrule b partition=x mode=none\nrule c mode=local holdout=5%\n").unwrap();
    let w = p.warnings();
    assert_eq!(w.len(), 5, "{w:#?}");
    assert!(w[0].starts_with("line 2: rule b: never reached (rule a on line 1 matches every job)"), "{w:#?}");
    assert!(w[2].starts_with("line 1: rule a: mode=auto without a holdout"), "{w:#?}");
    assert!(w.iter().any(|l| l.contains("rule c: holdout without a key")), "{w:#?}");
    assert!(parse::parse(POLICY).unwrap().warnings().iter().all(|l| !l.contains("never")));
}

fn start<'a>(subject: &'a Subject<'a>, guards: &'a Guards, chosen: Option<&'a JobMode>) -> Start<'a> {
    Start {
        subject,
        chosen,
        default: &JobMode::Auto,
        site: None,
        guards,
        read_key: &|_| Ok(b"0123456789abcdef0123456789abcdef".to_vec()),
        stop_present: &|_| false,
    }
}

#[test]
fn a_holdout_draws_its_share_by_the_keyed_hash() {
    let p = parse::parse(POLICY).unwrap();
    let reco = &p.rules[0];
    let guards = Guards::default();
    let mut held = 0;
    let n = 20_000;
    for j in 0..n {
        let job = j.to_string();
        let subject = Subject { cluster: None, job: &job, host: "wn1", start_unix: 1e9 };
        let (a, note) = assign_job(Some(reco), &start(&subject, &guards, None));
        assert_eq!(note, None);
        assert_eq!((a.class.as_deref(), a.experiment.as_deref()), (Some("reco"), Some("holdout.reco")));
        assert_eq!(a.arms.as_deref(), Some("auto:19,none:1"));
        match a.source {
            ArmSource::Holdout => {
                held += 1;
                assert_eq!((a.arm.as_str(), &a.mode), ("none", &JobMode::None));
            }
            s => assert_eq!((s, a.arm.as_str()), (ArmSource::Decided, "auto")),
        }
        // The same job draws the same again.
        assert_eq!(assign_job(Some(reco), &start(&subject, &guards, None)).0, a);
    }
    // 5% of 20,000: 1,000, standard deviation 31; four of them either side.
    assert!((876..=1124).contains(&held), "{held} held out");
    // The job's own choice wins and is recorded so.
    let subject = Subject { cluster: None, job: "1", host: "wn1", start_unix: 1e9 };
    let (a, _) = assign_job(Some(reco), &start(&subject, &guards, Some(&JobMode::Local)));
    assert_eq!((a.source, a.arm.as_str(), a.class.as_deref()), (ArmSource::Chosen, "local", Some("reco")));
}

#[test]
fn a_guard_gives_the_class_the_control_and_a_missing_key_holds_nobody_out() {
    let p = parse::parse(POLICY).unwrap();
    let guards = Guards::parse("guard class=reco arm=auto\nguard class=hs06 arm=auto\n").unwrap();
    let subject = Subject { cluster: None, job: "7", host: "wn1", start_unix: 1e9 };
    for rule in [&p.rules[0], &p.rules[2]] {
        for j in 0..200 {
            let job = j.to_string();
            let subject = Subject { job: &job, ..subject.clone() };
            let (a, _) = assign_job(Some(rule), &start(&subject, &guards, None));
            assert_ne!(a.arm, "auto", "{a:?}");
            if a.source == ArmSource::Guarded {
                assert_eq!((a.arm.as_str(), &a.mode), ("none", &JobMode::None));
            }
        }
    }
    // A rule of another class is not guarded.
    let (a, _) = assign_job(Some(&p.rules[5]), &start(&subject, &guards, None));
    assert_eq!((a.arm.as_str(), a.source), ("auto", ArmSource::Decided));
    // No key: the decided mode for every job, said once.
    let mut s = start(&subject, &guards, None);
    let no_key = |_: &Path| Err("key /etc/numakit/k: no such file".to_string());
    s.read_key = &no_key;
    let (a, note) = assign_job(Some(&p.rules[1]), &s);
    assert_eq!((a.arm.as_str(), a.source), ("none", ArmSource::Decided));
    assert_eq!(note.as_deref(), Some("class sim: holdout: key /etc/numakit/k: no such file; no job is held out"));
    let d =
        Design::from_words(&["experiment=d", "arms=daemon-on:1,daemon-off:1", "unit=host", "key=/k"]).unwrap().unwrap();
    assert_eq!(control(&d), ("daemon-off".to_string(), JobMode::None, Some(false)));
}

#[test]
fn a_policy_file_is_read_bounded_and_again_when_it_changes() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("policy");
    std::fs::write(&f, "rule a mode=auto\n").unwrap();
    assert_eq!(load(&f).unwrap().rules[0].class, "a");
    std::fs::write(&f, "rule bb mode=none\n").unwrap();
    assert_eq!(load(&f).unwrap().rules[0].class, "bb", "a new file is read again");
    std::fs::write(&f, "rule bb mode=none\nrule c cpus=x mode=auto\n").unwrap();
    let e = load(&f).unwrap_err();
    assert!(e.starts_with("policy ") && e.contains("/policy:2:8: \"cpus=x\""), "{e}");
    let e = load(Path::new("/dev/zero")).unwrap_err();
    assert_eq!(e, "policy /dev/zero: not a regular file (a character device)");
}
