//! VM smoke tests of the QEMU test bed (`numakit-testbed`, `testbed/numakit-vm`).
//!
//! Every named topology boots once and plain shell tools inside the guest check that
//! the kernel sees exactly the requested nodes, CPUs per node, distances, memory
//! (within the kernel's reservations), packages and, for `tiered`, the HMAT memory
//! tiers. Further tests check exit status and output passing, timeouts and errors.
//! Skipped when QEMU cannot run here, failed instead under `CI=true`.

use std::process::Command;
use std::time::Duration;

use numakit_testbed::{parse_cpulist, require_vm, vm, Error, Output, RunSpec, Topology, Vm};

/// Shell snippets reading what the guest kernel reports, one per check name.
fn sysfs_checks(t: &Topology) -> Vec<(String, String)> {
    let node = "/sys/devices/system/node";
    let mut checks = vec![
        ("nodes".to_string(), format!("ls -d {node}/node* | sed 's|.*/node||' | sort -n | tr '\\n' ' '")),
        ("has_cpu".to_string(), format!("cat {node}/has_cpu")),
        ("has_memory".to_string(), format!("cat {node}/has_memory")),
        ("online_cpus".to_string(), "cat /sys/devices/system/cpu/online".to_string()),
        (
            "packages".to_string(),
            format!(
                "for c in $(seq 0 {}); do cat /sys/devices/system/cpu/cpu$c/topology/physical_package_id; done | tr '\\n' ' '",
                t.cpu_count() - 1
            ),
        ),
        ("fails".to_string(), "echo bad >&2; exit 3".to_string()),
        ("kernel".to_string(), "uname -r".to_string()),
    ];
    for i in 0..t.nodes.len() {
        let d = format!("{node}/node{i}");
        checks.push((format!("node{i}"), format!("cat {d}/cpulist {d}/distance; grep MemTotal {d}/meminfo")));
    }
    if t.hmat.is_some() {
        checks.push((
            "tiers".to_string(),
            "for t in /sys/devices/virtual/memory_tiering/memory_tier*; do echo $(cat $t/nodelist); done".to_string(),
        ));
        for i in 0..t.nodes.len() {
            let a = format!("{node}/node{i}/access0/initiators");
            checks.push((format!("hmat{i}"), format!("cat {a}/read_latency {a}/read_bandwidth 2>/dev/null || true")));
        }
    }
    checks
}

/// Boots `name` once and checks the guest kernel's view against the topology.
fn check_topology(name: &str) {
    require_vm!();
    let t = Topology::named(name).expect("named topology");
    let checks = sysfs_checks(&t);
    let out = Vm::run_checks(&t, &checks, RunSpec::default()).unwrap_or_else(|e| panic!("{name}: {e}"));
    let get = |k: &str| -> &Output { &out[k] };
    let line = |k: &str| get(k).stdout.trim().to_string();

    let want_nodes: Vec<String> = (0..t.nodes.len()).map(|i| i.to_string()).collect();
    assert_eq!(line("nodes"), want_nodes.join(" "), "{name}: node directories");
    assert_eq!(line("has_cpu"), t.has_cpu(), "{name}: has_cpu");
    assert_eq!(line("has_memory"), t.has_memory(), "{name}: has_memory");
    assert_eq!(line("online_cpus"), format!("0-{}", t.cpu_count() - 1), "{name}: online CPUs");
    let packages: Vec<String> = (0..t.cpu_count() as u32).map(|c| t.smp.package_of(c).to_string()).collect();
    assert_eq!(line("packages"), packages.join(" "), "{name}: physical_package_id per CPU");
    assert_eq!((get("fails").status, get("fails").stderr.as_str()), (3, "bad\n"), "{name}: check status");

    for (i, node) in t.nodes.iter().enumerate() {
        let o = get(&format!("node{i}"));
        let lines: Vec<&str> = o.stdout.lines().collect();
        assert!(o.success() && lines.len() == 3, "{name}: node{i}: {o:?}");
        assert_eq!(lines[0], t.cpulist(i), "{name}: node{i}/cpulist");
        assert_eq!(lines[1], t.distance_line(i), "{name}: node{i}/distance");
        let kib: u64 = lines[2].split_whitespace().nth(3).and_then(|v| v.parse().ok()).unwrap_or(u64::MAX);
        let want = node.mem_mib * 1024;
        let slack = (want / 10).max(64 * 1024);
        assert!(
            kib <= want && kib + slack >= want,
            "{name}: node{i} MemTotal {kib} kB, requested {want} kB (allowed {slack} kB less)"
        );
    }

    if let Some(hmat) = &t.hmat {
        // HMAT-driven memory tiers (Linux 6.7+; the bed prefers 6.12): memory-only
        // nodes form a slower tier
        let release = line("kernel");
        let mut v = release.split(['.', '-', '+']).map(|x| x.parse::<u32>().unwrap_or(0));
        let tiered_kernel = (v.next().unwrap_or(0), v.next().unwrap_or(0)) >= (6, 7);
        let tiers: Vec<Vec<u32>> = line("tiers").lines().map(|l| parse_cpulist(l).unwrap_or_default()).collect();
        let tier_of = |n: u32| tiers.iter().position(|t| t.contains(&n));
        let (cpu_nodes, mem_only): (Vec<usize>, Vec<usize>) =
            (0..t.nodes.len()).partition(|&i| !t.nodes[i].cpus.is_empty());
        for &m in mem_only.iter().filter(|_| tiered_kernel) {
            assert!(tier_of(m as u32).is_some(), "{name}: node{m} in no tier: {tiers:?}");
            for &c in &cpu_nodes {
                assert_ne!(tier_of(m as u32), tier_of(c as u32), "{name}: node{m} shares node{c}'s tier: {tiers:?}");
            }
        }
        // access0 = the best initiator's latency and bandwidth
        for target in (0..t.nodes.len()).filter(|&i| t.nodes[i].mem_mib > 0) {
            let to: Vec<_> = hmat.iter().filter(|lb| lb.target == target).collect();
            let lat = to.iter().map(|lb| lb.latency_ns).min().unwrap_or(0);
            let bw = to.iter().map(|lb| lb.bandwidth_mib_s).max().unwrap_or(0);
            assert_eq!(line(&format!("hmat{target}")), format!("{lat}\n{bw}"), "{name}: node{target} access0");
        }
    }
}

#[test]
fn vm_topology_1n() {
    check_topology("1n");
}

#[test]
fn vm_topology_2s_intel_ht() {
    check_topology("2s-intel-ht");
}

#[test]
fn vm_topology_4n_rr() {
    check_topology("4n-rr");
}

#[test]
fn vm_topology_amd_8n() {
    check_topology("amd-8n");
}

#[test]
fn vm_topology_tiered() {
    check_topology("tiered");
}

#[test]
fn vm_topology_memless() {
    check_topology("memless");
}

/// Arguments, environment, working directory, stdout, stderr and the exit status
/// come back unchanged.
#[test]
fn vm_passes_status_and_output() {
    require_vm!();
    let t = Topology::named("1n").expect("named topology");
    let script = r#"printf '%s|' "$@"; echo "$NK_VAR"; pwd; echo err >&2; exit 7"#;
    let spec = RunSpec::command(["sh", "-c", script, "sh", "a b", "it's"]).env("NK_VAR", "v w");
    let out = Vm::run(&t, spec).expect("numakit-vm runs");
    let root = vm::repo_root();
    assert_eq!(out.stdout, format!("a b|it's|v w\n{}\n", root.display()), "{out:?}");
    assert_eq!((out.status, out.stderr.as_str()), (7, "err\n"), "{out:?}");
}

/// A guest that runs too long is killed: status 124 and the console tail.
#[test]
fn vm_timeout_gives_124() {
    require_vm!();
    let t = Topology::named("1n").expect("named topology");
    let out = Vm::run(&t, RunSpec::command(["sleep", "600"]).timeout(Duration::from_secs(12))).expect("runs");
    assert_eq!(out.status, 124, "{out:?}");
    assert!(out.stderr.contains("timeout after 12s") && out.stderr.contains("guest console"), "{out:?}");
}

/// Bad topologies are refused before QEMU starts, naming the culprit; what QEMU
/// itself refuses comes back as status 125 with QEMU's message.
#[test]
fn vm_bad_topology_is_named() {
    let mut t = Topology::named("4n-rr").expect("named topology");
    t.distances[0][3] = 5;
    match Vm::run(&t, RunSpec::command(["true"])) {
        Err(Error::Topology(msg)) => assert!(msg.contains("distance 0>3=5"), "{msg}"),
        other => panic!("expected a topology error, got {other:?}"),
    }
    let err = Topology::from_options(&["--node", "0-3:1G", "--node", "3-4:1G"]).expect_err("CPU 3 twice");
    assert!(err.to_string().contains("CPU 3 is in node 0 and node 1"), "{err}");

    let script = vm::script_path();
    let out = Command::new("bash")
        .arg(&script)
        .args(["--node", "0-1:1G", "--node", "2-3:1G", "--dist", "0-2=20", "--", "true"])
        .output()
        .expect("bash runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("distance '0-2=20': no node 2"), "{out:?}");

    require_vm!();
    let out = Command::new("bash")
        .arg(&script)
        .args(["--topo", "1n", "--qemu", "-machine", "--qemu", "no-such-machine", "--", "true"])
        .output()
        .expect("bash runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{err}");
    assert!(err.contains("QEMU failed to start") && err.contains("unsupported machine type"), "{err}");
}

/// `Vm::run_boots` boots once per group of checks, side by side, and merges
/// the outputs by name; a boot that does not finish is the error.
#[test]
fn vm_run_boots_merges_each_boots_checks() {
    require_vm!();
    let t = Topology::named("1n").expect("named topology");
    let boots = [
        vec![("a1", "echo one; cat /proc/sys/kernel/random/boot_id"), ("a2", "exit 4")],
        vec![("b1", "echo two; cat /proc/sys/kernel/random/boot_id")],
    ];
    let out = Vm::run_boots(&t, &boots, RunSpec::default()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(out.keys().map(String::as_str).collect::<Vec<_>>(), ["a1", "a2", "b1"], "{out:?}");
    assert_eq!(out["a2"].status, 4, "{out:?}");
    let (a, b) = (out["a1"].stdout.lines().collect::<Vec<_>>(), out["b1"].stdout.lines().collect::<Vec<_>>());
    assert_eq!((a[0], b[0]), ("one", "two"), "{out:?}");
    // two guests, not one: each boot has its own boot id
    assert_ne!(a.get(1), b.get(1), "{out:?}");

    // one name in two boots: refused before anything boots
    let twice = [vec![("x", "true")], vec![("x", "true")]];
    match Vm::run_boots(&t, &twice, RunSpec::default()) {
        Err(Error::Harness(msg)) => assert!(msg.contains("'x'"), "{msg}"),
        other => panic!("expected the duplicate name refused, got {other:?}"),
    }

    let hung = [vec![("ok", "true")], vec![("hangs", "sleep 600")]];
    let spec = RunSpec::default().timeout(Duration::from_secs(12));
    match Vm::run_boots(&t, &hung, spec) {
        Err(Error::Guest { status, .. }) => assert_eq!(status, 124),
        other => panic!("expected the hung boot's timeout, got {other:?}"),
    }
}
