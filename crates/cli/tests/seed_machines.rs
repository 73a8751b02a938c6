//! The seeds' machines, written as synthetic sysfs trees
//! (`numakit::topo::synth`): a 2-socket Intel with Hyper-Threading (even
//! CPUs on node 0, odd on node 1, SMT siblings numbered after all cores), a
//! 4-node 48-CPU machine with round-robin numbering, and a 4-socket AMD
//! with two nodes per socket (8 nodes, distances 10/16/22). The model must
//! equal the description, and `topo --hardware` must equal what the real
//! `numactl --hardware` prints for the same tree (bind-mounted over
//! /sys/devices/system in a private mount namespace, as the hwloc
//! references were made).

mod common;

use std::path::Path;
use std::process::Command;

use numakit::sys::SysRoot;
use numakit::topo::synth::SynthMachine;
use numakit::topo::Topology;

fn seeds() -> Vec<(&'static str, SynthMachine)> {
    vec![
        ("2s-intel-ht", SynthMachine::intel_2s_ht(8, 65536)),
        ("4n-rr-48", SynthMachine::rr_4n(48, 32768)),
        ("amd-4s-8n", SynthMachine::amd_4s_8n(8, 16384)),
    ]
}

fn write(name: &str, m: &SynthMachine) -> tempfile::TempDir {
    let d = tempfile::Builder::new().prefix(name).tempdir().expect("tempdir");
    m.write(d.path()).expect("write tree");
    d
}

#[test]
fn model_equals_the_description() {
    for (name, m) in seeds() {
        let d = write(name, &m);
        let t = Topology::read(&SysRoot::at(d.path())).expect("read");
        assert_eq!(t.nodes.len(), m.nodes.len(), "{name}");
        for (i, (id, mib)) in m.nodes.iter().enumerate() {
            let n = t.node(*id).expect("node");
            assert_eq!(n.cpus, m.node_cpus(*id), "{name} node {id}");
            assert_eq!(n.memory.expect("mem").total_bytes, mib << 20, "{name} node {id}");
            assert_eq!(n.distances, m.distances[i], "{name} node {id}");
        }
        let packages: std::collections::BTreeSet<u32> = m.cpus.iter().map(|c| c.package).collect();
        assert_eq!(t.packages.len(), packages.len(), "{name}");
        for c in &m.cpus {
            let tc = t.cpu(c.id).expect("cpu");
            assert_eq!(tc.node, Some(c.node), "{name} cpu {}", c.id);
            assert_eq!(tc.package, Some(c.package), "{name} cpu {}", c.id);
            assert_eq!(tc.siblings.as_ref(), Some(&m.siblings(c)), "{name} cpu {}", c.id);
        }
    }
}

#[test]
fn intel_ht_numbering_is_the_seeds() {
    let m = SynthMachine::intel_2s_ht(8, 1024);
    let d = write("ht", &m);
    let t = Topology::read(&SysRoot::at(d.path())).expect("read");
    assert_eq!(t.node(0).expect("n0").cpus.to_list(), "0,2,4,6,8,10,12,14,16,18,20,22,24,26,28,30");
    assert_eq!(t.cpu(0).expect("cpu0").siblings.as_ref().expect("sib").to_list(), "0,16");
    assert_eq!(t.core_count(), 16);
    assert_eq!(t.distance(0, 1), Some(21));
}

fn numakit_hardware(root: &Path) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_numakit"))
        .arg("--sysroot")
        .arg(root)
        .args(["topo", "--hardware"])
        .output()
        .expect("run numakit");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("utf8")
}

/// Runs the real numactl with the tree bind-mounted over the live sysfs
/// folders, in a private mount namespace (needs root and util-linux).
fn real_numactl_hardware(root: &Path) -> Result<String, String> {
    let script = format!(
        "mount --bind '{r}/sys/devices/system/node' /sys/devices/system/node && \
         mount --bind '{r}/sys/devices/system/cpu' /sys/devices/system/cpu && exec numactl --hardware",
        r = root.display()
    );
    let out = Command::new("unshare")
        .args(["-m", "--propagation", "private", "sh", "-c", &script])
        .output()
        .map_err(|e| format!("unshare: {e}"))?;
    if !out.status.success() {
        return Err(format!("unshare/mount/numactl failed: {}", String::from_utf8_lossy(&out.stderr).trim()));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn hardware_equals_real_numactl_on_seed_machines() {
    for (name, m) in seeds() {
        let d = write(name, &m);
        let ours = numakit_hardware(d.path());
        match real_numactl_hardware(d.path()) {
            Ok(real) => assert_eq!(ours, real, "{name}: numakit vs numactl"),
            Err(why) => {
                common::skip_or_fail(&format!("cannot run numactl on a bind-mounted tree: {why}"));
                return;
            }
        }
    }
}
