//! Batch-job placement in a real multi-node kernel (the QEMU test bed,
//! `4n-rr`: node k has CPUs k and k+4 and 512 MiB): jobs that `run --auto`
//! starts in the same instant get disjoint nodes through the job ledger,
//! each with its CPUs and at least 99% of its pages there; the next job
//! that does not fit waits or exits 75; a job the batch system narrowed to
//! some CPUs is placed inside them, never wider.

use std::collections::BTreeMap;

use numakit_testbed::{require_vm, Output, RunSpec, Topology, Vm};

/// Pages per node in a numa_maps line (`N2=16384` ...).
fn pages(line: &str) -> BTreeMap<u32, u64> {
    line.split_whitespace()
        .filter_map(|t| {
            let (k, v) = t.split_once('=')?;
            Some((k.strip_prefix('N')?.parse().ok()?, v.parse().ok()?))
        })
        .collect()
}

fn lines_with<'a>(o: &'a Output, prefix: &str) -> Vec<&'a str> {
    o.stdout.lines().filter_map(|l| l.strip_prefix(prefix)).collect()
}

/// Four jobs of two CPUs started together with one ledger, then a fifth.
const TOGETHER: &str = r#". crates/cli/tests/vm/lib.sh
L="--sample 0 --ledger /tmp/ledger"
for i in 1 2 3 4; do
  ( hold /tmp/j$i $NK run --auto $L --cpus 2 --mem 64M -- $H --mib 64 > /tmp/p$i ) &
done
wait
for i in 1 2 3 4; do
  set -- $(cat /tmp/p$i)
  echo "job $i cpus=$(sed -n 's/^Cpus_allowed_list:\t//p' /proc/$1/status) map=$(mapping $1 $2)"
  grep -v '^ready' /tmp/j$i | sed "s/^/said $i: /"
done
ls /tmp/ledger | grep -c '\.json$' | sed 's/^/entries /'
$NK run --auto $L --cpus 2 -- true; echo "fifth $?"
$NK run --auto $L --cpus 2 --wait 2s -- true 2> /tmp/w; echo "fifth_waited $?"; cat /tmp/w
for i in 1 2 3 4; do set -- $(cat /tmp/p$i); kill $1; done
sleep 0.2
$NK run --auto $L --cpus 2 --dry-run -- true | sed -n 's/^decision: /after_end /p'
"#;

/// A job the batch system narrowed to CPUs 1 and 2 (nodes 1 and 2).
const NARROWED: &str = r#". crates/cli/tests/vm/lib.sh
L="--sample 0 --ledger /tmp/ledger2"
set -- $(hold /tmp/n1 taskset -c 1,2 $NK run --auto $L -- $H --mib 32)
echo "both cpus=$(sed -n 's/^Cpus_allowed_list:\t//p' /proc/$1/status)"; kill $1
set -- $(hold /tmp/n2 taskset -c 1,2 $NK run --auto $L --cpus 1 -- $H --mib 32)
echo "one cpus=$(sed -n 's/^Cpus_allowed_list:\t//p' /proc/$1/status) map=$(mapping $1 $2)"
set -- $(hold /tmp/n3 taskset -c 1,2 $NK run --auto $L --cpus 1 -- $H --mib 32)
echo "two cpus=$(sed -n 's/^Cpus_allowed_list:\t//p' /proc/$1/status) map=$(mapping $1 $2)"
taskset -c 1,2 $NK run --auto $L --dry-run -- true | sed -n 's/^cpus: /count /p'
"#;

#[test]
fn vm_run_auto_jobs_spread_and_stay_inside_their_cpus() {
    require_vm!();
    let t = Topology::named("4n-rr").expect("topology");
    let checks = [("together", TOGETHER.to_string()), ("narrowed", NARROWED.to_string())];
    let out = Vm::run_checks(&t, &checks, RunSpec::default().timeout(std::time::Duration::from_secs(600)))
        .unwrap_or_else(|e| panic!("4n-rr: {e}"));

    let o = &out["together"];
    let jobs = lines_with(o, "job ");
    assert_eq!(jobs.len(), 4, "{o:?}");
    let mut nodes = Vec::new();
    for j in &jobs {
        let cpus = j.split_whitespace().find_map(|w| w.strip_prefix("cpus=")).expect("cpus");
        let (a, b) = cpus.split_once(',').unwrap_or_else(|| panic!("two CPUs of one node: {j}"));
        let (a, b): (u32, u32) = (a.parse().expect("cpu"), b.parse().expect("cpu"));
        assert_eq!((a % 4, b), (a, a + 4), "the CPUs of node {a}: {j}");
        let p = pages(j.split_once("map=").expect("map").1);
        let total: u64 = p.values().sum();
        assert_eq!(total, 64 * 256, "{j}");
        let on = p.get(&a).copied().unwrap_or(0);
        assert!(on as f64 >= 0.99 * total as f64, "pages off node {a}: {j}");
        nodes.push(a);
    }
    nodes.sort();
    assert_eq!(nodes, [0, 1, 2, 3], "four jobs started together got disjoint nodes: {o:?}");
    assert!(lines_with(o, "said ").is_empty(), "the jobs placed without a warning: {o:?}");
    assert_eq!(lines_with(o, "entries "), ["4"], "{o:?}");
    assert_eq!(lines_with(o, "fifth "), ["75"], "{o:?}");
    assert_eq!(lines_with(o, "fifth_waited "), ["75"], "{o:?}");
    assert!(o.stdout.contains("numakit: cannot place the job now after waiting 2s: the job needs 2 CPUs"), "{o:?}");
    // The ended jobs are forgotten: a new one fits again.
    assert_eq!(lines_with(o, "after_end ").len(), 1, "{o:?}");

    let o = &out["narrowed"];
    assert_eq!(lines_with(o, "both cpus="), ["1-2"], "the two given CPUs, not wider: {o:?}");
    assert_eq!(lines_with(o, "count "), ["2 (the CPUs this job may use (1-2))"], "{o:?}");
    let mut seen = Vec::new();
    for k in ["one cpus=", "two cpus="] {
        let l = lines_with(o, k);
        let (cpu, map) = l[0].split_once(" map=").expect("map");
        let cpu: u32 = cpu.parse().unwrap_or_else(|_| panic!("one CPU: {o:?}"));
        assert!(cpu == 1 || cpu == 2, "{o:?}");
        let p = pages(map);
        assert!(p.get(&cpu).copied().unwrap_or(0) as f64 >= 0.99 * p.values().sum::<u64>() as f64, "{o:?}");
        seen.push(cpu);
    }
    seen.sort();
    assert_eq!(seen, [1, 2], "the second one-CPU job goes to the other node of the two: {o:?}");
}
