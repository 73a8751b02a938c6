//! Topologies: the named ones, options and their round trip, distances,
//! the CPU layout, HMAT, and the errors that name the culprit.

use super::*;

fn opts(s: &str) -> Result<Topology, Error> {
    Topology::from_options(&s.split_whitespace().collect::<Vec<_>>())
}

fn err(s: &str) -> String {
    match opts(s) {
        Ok(t) => panic!("'{s}' should be rejected, got {t:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn cpulists_format_like_linux() {
    assert_eq!(cpulist(&[0, 1]), "0-1");
    assert_eq!(cpulist(&[0, 2, 4, 6]), "0,2,4,6");
    assert_eq!(cpulist(&[8, 0, 1, 2, 3, 10, 11]), "0-3,8,10-11");
    assert_eq!(cpulist(&[]), "");
    assert_eq!(parse_cpulist("0-3,8").ok(), Some(vec![0, 1, 2, 3, 8]));
    assert_eq!(parse_cpulist("").ok(), Some(vec![]));
    assert!(parse_cpulist("3-1").is_err());
}

#[test]
fn named_topologies_are_valid_and_as_specified() -> Result<(), Error> {
    let names = Topology::names();
    assert_eq!(names, ["1n", "2s-intel-ht", "4n-rr", "amd-8n", "tiered", "memless"]);
    for t in Topology::all_named()? {
        t.validate()?;
    }
    let t = Topology::named("2s-intel-ht")?;
    assert_eq!((t.cpulist(0), t.cpulist(1)), ("0,2,4,6".into(), "1,3,5,7".into()));
    assert_eq!(t.distance_line(1), "20 10");
    let t = Topology::named("4n-rr")?;
    for c in 0..8u32 {
        assert!(t.nodes[(c % 4) as usize].cpus.contains(&c));
    }
    assert_eq!(t.distance_line(0), "10 20 30 20");
    let t = Topology::named("amd-8n")?;
    assert_eq!(t.distance_line(2), "22 22 10 16 22 22 22 22");
    assert_eq!((t.smp.sockets, t.smp.dies, t.smp.package_of(1), t.smp.package_of(2)), (4, 2, 0, 1));
    let t = Topology::named("tiered")?;
    assert_eq!((t.has_cpu(), t.has_memory()), ("0-1".into(), "0-2".into()));
    let hmat = t.hmat.unwrap_or_default();
    assert_eq!(hmat.len(), 6);
    assert!(hmat.iter().any(|lb| (lb.initiator, lb.target, lb.latency_ns) == (0, 2, 300)));
    let t = Topology::named("memless")?;
    assert_eq!((t.has_cpu(), t.has_memory()), ("0-2".into(), "0,2".into()));
    assert!(Topology::named("nope").is_err());
    Ok(())
}

#[test]
fn args_round_trip() -> Result<(), Error> {
    for t in Topology::all_named()? {
        let mut back = Topology::from_options(&t.to_args())?;
        back.name.clone_from(&t.name);
        assert_eq!(back, t);
    }
    Ok(())
}

#[test]
fn distances_default_mirror_and_asymmetry() -> Result<(), Error> {
    let t =
        opts("--node 0:256M --node 1:256M --node 2:256M --dist 0>1=30 --dist 1>0=40 --dist 0>2=25 --dist-default 50")?;
    assert_eq!(t.distances, vec![vec![10, 30, 25], vec![40, 10, 50], vec![25, 50, 10]]);
    let args = t.to_args().join(" ");
    assert!(args.contains("--dist 0>1=30 --dist 1>0=40") && args.contains("--dist 0-2=25"), "{args}");
    Ok(())
}

#[test]
fn smp_layout_is_derived_or_completed() -> Result<(), Error> {
    let s = |o: &str| opts(o).map(|t| (t.smp.sockets, t.smp.dies, t.smp.cores, t.smp.threads));
    assert_eq!(s("--node 0-1:1G --node 2-3:1G")?, (2, 1, 2, 1));
    assert_eq!(s("--node 0,2:1G --node 1,3:1G")?, (4, 1, 1, 1));
    assert_eq!(s("--node 0-1:1G --node 2-3:0 --node -:1G")?, (2, 1, 2, 1));
    assert_eq!(s("--node 0-3:1G --threads 2")?, (2, 1, 1, 2));
    assert_eq!(s("--node 0-3:1G --sockets 2")?, (2, 1, 2, 1));
    assert_eq!(s("--node 0-7:1G --sockets 2 --dies 2")?, (2, 2, 2, 1));
    Ok(())
}

#[test]
fn bad_topologies_name_the_culprit() {
    assert!(err("--node 0-1:1G --node 1-2:1G").contains("CPU 1 is in node 0 and node 1"));
    assert!(err("--node 0-1:1G --node 2-3:1G --dist 0-2=20").contains("no node 2"));
    assert!(err("--node 0-1:1G --node 2-3:1G --dist 0-1=5").contains("'0-1=5'"));
    assert!(err("--node 0-1:1G --node 2-3:1G --dist 1-1=12").contains("self-distance of node 1"));
    assert!(err("--node 0-1:1G --node 3:1G").contains("CPU 2 is in no node"));
    assert!(err("--node 0-1:1G --node -:0").contains("node 1 has neither"));
    assert!(err("--node 0-1:1G --node 2:16M").contains("node 1: 16M"));
    assert!(err("--node 0-1:128M").contains("too small"));
    assert!(err("--node 0-1:1x").contains("node 0: bad memory size"));
    assert!(err("--node 0-1:1G --dist 0-1=x").contains("no node 1"));
    assert!(err("--node 0-3:1G --sockets 3").contains("cannot be split"));
    assert!(err("--node 0-3:1G --sockets 2 --cores 3").contains("makes 6 CPUs"));
    assert!(err("--node 0,2:1G --node 1,3:1G --threads 2").contains("SMT siblings CPU 0 and CPU 1"));
    assert!(err("--node 0-1:1G --node -:1G --hmat-lb 1-0=1:1").contains("initiator node 1 has no CPUs"));
    assert!(err("--node 0-1:1G --node 2:0 --hmat-lb 0-1=1:1").contains("target node 1 has no memory"));
    assert!(err("--node 0-1:1G --hmat-lb 0-3=1:1").contains("no node 3"));
    assert!(err("--node 0-1:1G --bogus 1").contains("unknown topology option"));
    assert!(err("").contains("no nodes"));
}

#[test]
fn validate_catches_hand_built_mistakes() {
    let mut t = Topology::new(vec![Node { cpus: vec![0, 1], mem_mib: 512 }, Node { cpus: vec![2, 3], mem_mib: 512 }]);
    assert!(t.validate().is_ok());
    t.distances[0][1] = 10;
    assert!(t.validate().is_err_and(|e| e.to_string().contains("distance 0>1=10")));
    t.distances[0][1] = 20;
    t.smp.cores = 1;
    assert!(t.validate().is_err_and(|e| e.to_string().contains("makes 2 CPUs")));
}

#[test]
fn hmat_is_completed_from_distances() -> Result<(), Error> {
    let t = opts("--node 0-1:1G --node -:1G --dist 0-1=25 --hmat --hmat-lb 0-0=90:30000")?;
    let hmat = t.hmat.unwrap_or_default();
    assert_eq!(
        hmat,
        vec![
            HmatLb { initiator: 0, target: 0, latency_ns: 90, bandwidth_mib_s: 30000 },
            HmatLb { initiator: 0, target: 1, latency_ns: 250, bandwidth_mib_s: 8192 },
        ]
    );
    Ok(())
}
