use super::*;
use crate::topo::synth::{write_devices, SynthDevice, SynthDeviceKind, SynthMachine};

/// Two nodes; NVIDIA GPUs with minors 0 and 1 on node 0 and node 1 (their
/// minors crosswise to their addresses, so an index taken for a minor or
/// an address order shows), an AMD GPU on node 1, an HCA on node 1.
fn machine() -> (tempfile::TempDir, Topology) {
    let d = tempfile::tempdir().expect("tmp");
    SynthMachine::of_nodes(&[("0-3", 1024), ("4-7", 1024)]).write(d.path()).expect("write");
    let nv = |address: &str, node, minor, uuid: &str| SynthDevice {
        address: address.into(),
        node: Some(node),
        kind: SynthDeviceKind::NvidiaGpu {
            minor,
            model: "NVIDIA H100 80GB HBM3".into(),
            uuid: uuid.into(),
            memory_node: None,
        },
    };
    write_devices(
        d.path(),
        &[
            nv("0000:1b:00.0", 0, 1, "GPU-aaaa1111-0000-0000-0000-000000000000"),
            nv("0000:9b:00.0", 1, 0, "GPU-bbbb2222-0000-0000-0000-000000000000"),
            SynthDevice {
                address: "0000:c1:00.0".into(),
                node: Some(1),
                kind: SynthDeviceKind::AmdGpu {
                    render: 128,
                    card: 0,
                    model: "AMD Instinct MI210".into(),
                    unique_id: "5c2a31e1734de3f1".into(),
                },
            },
            SynthDevice {
                address: "0000:a1:00.0".into(),
                node: Some(1),
                kind: SynthDeviceKind::Nic { name: "ib0".into() },
            },
        ],
    )
    .expect("devices");
    let t = Topology::read(&SysRoot::at(d.path())).expect("read");
    (d, t)
}

fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
    move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
}

fn no_file(_: &str) -> Option<String> {
    None
}

fn maps(gres: Option<GresGpus>) -> Maps<'static> {
    Maps { gres, cuda_pci_order: false, hca: &|n: &str| (n == "mlx5_0").then(|| "0000:a1:00.0".to_string()) }
}

fn files(f: &[&str]) -> Option<GresGpus> {
    Some(GresGpus::Files(f.iter().map(|s| s.to_string()).collect()))
}

#[test]
fn the_inventory_has_both_vendors() {
    let (_d, t) = machine();
    let g: Vec<(&str, &str, Option<u32>, Option<u32>)> =
        t.gpus.iter().map(|g| (g.address.as_str(), g.vendor.as_str(), g.numa_node, g.minor)).collect();
    assert_eq!(
        g,
        [
            ("0000:1b:00.0", "nvidia", Some(0), Some(1)),
            ("0000:9b:00.0", "nvidia", Some(1), Some(0)),
            ("0000:c1:00.0", "amd", Some(1), None)
        ]
    );
    let amd = t.gpu("0000:c1:00.0").expect("amd");
    assert_eq!(amd.render.as_deref(), Some("renderD128"));
    assert_eq!(amd.card.as_deref(), Some("card0"));
    assert_eq!(amd.model.as_deref(), Some("AMD Instinct MI210"));
    assert_eq!(amd.uuid.as_deref(), Some("GPU-5c2a31e1734de3f1"));
    assert_eq!(t.gpu("0000:1b:00.0").and_then(|g| g.model.as_deref()), Some("NVIDIA H100 80GB HBM3"));
}

/// Slurm's index 1 is gres.conf's second file, /dev/nvidia1: NVIDIA's
/// minor 1, which is the GPU on node 0, not the second by address.
#[test]
fn slurm_indices_through_gres_conf_files_and_minors() {
    let (_d, t) = machine();
    let g = given(&env(&[("SLURM_STEP_GPUS", "1"), ("CUDA_VISIBLE_DEVICES", "0")]), &no_file);
    assert_eq!(g, [Given { source: "SLURM_STEP_GPUS=1".into(), items: vec![Named::SlurmIndex(1)] }]);
    let j = resolve(&g, &t, &maps(files(&["/dev/nvidia0", "/dev/nvidia1"])));
    assert_eq!(j.unknown, None);
    assert_eq!(j.summary(), "GPU 1 (0000:1b:00.0) on node 0");
    assert_eq!(j.near(false).map(|n| n.nodes.to_list()), Some("0".into()));
    // AMD through its render node.
    let j = resolve(&g, &t, &maps(files(&["/dev/nvidia0", "/dev/dri/renderD128"])));
    assert_eq!(j.summary(), "GPU 1 (0000:c1:00.0) on node 1");
    // NVML's order is the PCI bus order.
    let j = resolve(&g, &t, &maps(Some(GresGpus::Nvml)));
    assert_eq!(j.summary(), "GPU 1 (0000:9b:00.0) on node 1");
}

#[test]
fn what_cannot_be_mapped_is_said_and_nothing_is_guessed() {
    let (_d, t) = machine();
    let g = given(&env(&[("SLURM_JOB_GPUS", "0,3")]), &no_file);
    let j = resolve(&g, &t, &maps(files(&["/dev/nvidia0", "/dev/nvidia7"])));
    assert_eq!(j.summary(), "GPU 0 (0000:9b:00.0) on node 1");
    assert_eq!(j.unknown.as_deref(), Some("SLURM_JOB_GPUS=0,3: GPU 3: gres.conf lists 2 GPU files here"));
    let j = resolve(&g, &t, &maps(None));
    assert!(j.devices.is_empty() && j.near(false).is_none());
    assert!(j.unknown.as_deref().is_some_and(|u| u.contains("GPU 0: no gres.conf")), "{:?}", j.unknown);
    // A CUDA index is no device unless CUDA's order is the bus order.
    let g = given(&env(&[("CUDA_VISIBLE_DEVICES", "1")]), &no_file);
    let j = resolve(&g, &t, &maps(None));
    assert!(j.devices.is_empty());
    assert!(j.unknown.as_deref().is_some_and(|u| u.contains("CUDA_DEVICE_ORDER=PCI_BUS_ID")), "{:?}", j.unknown);
    let j = resolve(&g, &t, &Maps { cuda_pci_order: true, ..maps(None) });
    assert_eq!(j.summary(), "CUDA device 1 (0000:9b:00.0) on node 1");
    let g = given(&env(&[("ZE_AFFINITY_MASK", "0.1")]), &no_file);
    assert!(resolve(&g, &t, &maps(None)).unknown.is_some());
    assert!(given(&env(&[("CUDA_VISIBLE_DEVICES", "")]), &no_file).is_empty());
}

#[test]
fn uuids_from_cuda_rocm_and_htcondor() {
    let (_d, t) = machine();
    let g = given(&env(&[("CUDA_VISIBLE_DEVICES", "GPU-bbbb2222-0000-0000-0000-000000000000")]), &no_file);
    assert_eq!(resolve(&g, &t, &maps(None)).nodes().to_list(), "1");
    let g = given(&env(&[("ROCR_VISIBLE_DEVICES", "GPU-5c2a31e1734de3f1")]), &no_file);
    assert_eq!(resolve(&g, &t, &maps(None)).summary(), "GPU-5c2a31e1734de3f1 (0000:c1:00.0) on node 1");
    // HTCondor: the job ad's short UUIDs.
    let ad = |p: &str| {
        (p == "/scratch/.job.ad").then(|| "Owner = \"u\"\nAssignedGPUs = \"GPU-aaaa1111,GPU-bbbb2222\"\n".into())
    };
    let g = given(&env(&[("_CONDOR_JOB_AD", "/scratch/.job.ad")]), &ad);
    assert_eq!(g[0].source, "AssignedGPUs in _CONDOR_JOB_AD (/scratch/.job.ad)=GPU-aaaa1111,GPU-bbbb2222");
    let j = resolve(&g, &t, &maps(None));
    assert_eq!(j.nodes().to_list(), "0-1");
    assert_eq!(j.unknown, None);
}

/// Each task of several on the host takes the GPU at its local id modulo
/// their number, with the NICs on that GPU's node.
#[test]
fn tasks_each_take_their_gpu() {
    let (_d, t) = machine();
    let g = given(&env(&[("SLURM_STEP_GPUS", "0,1"), ("OMPI_MCA_btl_openib_if_include", "mlx5_0:1")]), &no_file);
    let j = resolve(&g, &t, &maps(files(&["/dev/nvidia0", "/dev/nvidia1"])));
    assert_eq!(
        j.summary(),
        "GPU 0, GPU 1, mlx5_0 (0000:9b:00.0 on node 1, 0000:1b:00.0 on node 0, 0000:a1:00.0 on node 1)"
    );
    assert_eq!(j.nodes().to_list(), "0-1");
    let t0 = j.for_task(0, 2);
    assert_eq!(t0.summary(), "GPU 0, mlx5_0 (0000:9b:00.0 on node 1, 0000:a1:00.0 on node 1)");
    assert_eq!(t0.nodes().to_list(), "1");
    assert_eq!(j.for_task(1, 2).summary(), "GPU 1 (0000:1b:00.0) on node 0");
    assert_eq!(j.for_task(3, 4).nodes().to_list(), "0");
    assert_eq!(j.for_task(0, 1), j);
}
