//! A job's devices: which GPUs and NICs the batch system gave it, from the
//! environment it starts the job with, mapped to PCI devices and their
//! node through what the kernel and the drivers say (the model's
//! [`Gpu`](crate::topo::Gpu)s, `/sys/class/infiniband`), never by guessing
//! from an index.
//!
//! | read (first found) | names | mapped by |
//! |---|---|---|
//! | `SLURM_STEP_GPUS`, `SLURM_JOB_GPUS` | Slurm's GPU indices | `gres.conf`'s `File=` of this node ([`super::gres`]): `/dev/nvidiaN` is NVIDIA's device minor N, `/dev/dri/renderDN` the DRM render node; `AutoDetect=nvml`: NVML's order, the PCI bus order |
//! | `_CONDOR_AssignedGPUs`, `AssignedGPUs` in `_CONDOR_JOB_AD` | `GPU-xxxxxxxx` (a UUID's start), `CUDA1` | the UUID; a CUDA index as below |
//! | `CUDA_VISIBLE_DEVICES` (LSF's and PBS Pro's GPU support set it too) | UUIDs (`GPU-...`), or CUDA indices | the UUID; an index only with `CUDA_DEVICE_ORDER=PCI_BUS_ID` (CUDA's order is then the PCI bus order) |
//! | `ROCR_VISIBLE_DEVICES` | UUIDs (`GPU-...`, amdgpu's `unique_id`), or indices | the UUID |
//! | `ZE_AFFINITY_MASK` | indices | — (said so) |
//! | `OMPI_MCA_btl_openib_if_include` (Slurm's `gres/nic`) | HCAs (`mlx5_0:1`) | `/sys/class/infiniband/NAME` |
//!
//! What cannot be mapped is said in one line ([`JobDevices::unknown`]),
//! and the job is then placed as without devices. SPANK offers a plugin no
//! item for a job's GRES (Slurm 22.05 to 24.11): the plugin reads the
//! task's environment like the wrappers.
//!
//! [`given`] and [`resolve`] are pure; [`read`] gathers their inputs.

use super::gres::{self, GresGpus};
use crate::place::near::Near;
use crate::sets::NodeSet;
use crate::sys::SysRoot;
use crate::topo::{Gpu, Topology};

/// What kind of device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A GPU (or another accelerator the GPU variables name).
    Gpu,
    /// A network adapter.
    Nic,
}

/// One item as the environment names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Named {
    /// Slurm's GPU index (`SLURM_STEP_GPUS`).
    SlurmIndex(u32),
    /// A UUID or its start (`GPU-5f3a2b1c`).
    Uuid(String),
    /// A runtime's device index (CUDA's, ROCm's, Level Zero's).
    Ordinal(u32),
    /// An InfiniBand adapter (`mlx5_0`).
    Hca(String),
    /// Something numakit cannot read (kept as written).
    Other(String),
}

/// What the environment says a job was given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Given {
    /// Where it was read: `SLURM_STEP_GPUS=0,1`.
    pub source: String,
    /// The items, in the order given.
    pub items: Vec<Named>,
}

/// One device mapped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobDevice {
    /// GPU or NIC.
    pub kind: Kind,
    /// As the batch system named it: `GPU 1`, `GPU-5f3a2b1c`, `mlx5_0`.
    pub name: String,
    /// Its PCI address.
    pub address: String,
    /// Its model where the driver gives one.
    pub model: Option<String>,
    /// Its node (`None`: the kernel puts it on none).
    pub node: Option<u32>,
}

/// A job's devices.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JobDevices {
    /// Where they were read (empty: nowhere).
    pub source: String,
    /// Those mapped to PCI devices.
    pub devices: Vec<JobDevice>,
    /// What could not be mapped, one line (`None`: everything was).
    pub unknown: Option<String>,
}

fn slurm_list(v: &str) -> Vec<Named> {
    v.split(',').filter(|s| !s.trim().is_empty()).map(|s| item(s.trim(), true)).collect()
}

fn item(s: &str, slurm: bool) -> Named {
    if let Ok(n) = s.parse::<u32>() {
        return if slurm { Named::SlurmIndex(n) } else { Named::Ordinal(n) };
    }
    if s.starts_with("GPU-") {
        return Named::Uuid(s.to_string());
    }
    // HTCondor's CUDA names (`CUDA1`), Level Zero's sub-devices (`0.1`).
    if let Some(n) = s.strip_prefix("CUDA").or_else(|| s.split('.').next()).and_then(|d| d.parse().ok()) {
        return Named::Ordinal(n);
    }
    Named::Other(s.to_string())
}

/// The devices the environment names (`var` reads a variable, `file` a
/// file's text: HTCondor's job ad), GPUs first; `None` when no variable
/// names any. A set but empty variable (`CUDA_VISIBLE_DEVICES=`) names
/// none.
pub fn given(var: &dyn Fn(&str) -> Option<String>, file: &dyn Fn(&str) -> Option<String>) -> Vec<Given> {
    let mut out = Vec::new();
    let set = |k: &str| var(k).filter(|v| !v.trim().is_empty() && v.trim() != "NoDevFiles");
    let gpus = if let Some((k, v)) = ["SLURM_STEP_GPUS", "SLURM_JOB_GPUS"].iter().find_map(|k| set(k).map(|v| (*k, v)))
    {
        Some(Given { source: format!("{k}={v}"), items: slurm_list(&v) })
    } else if let Some((src, v)) =
        set("_CONDOR_AssignedGPUs").map(|v| ("_CONDOR_AssignedGPUs".to_string(), v)).or_else(|| {
            let path = var("_CONDOR_JOB_AD")?;
            let ad = file(&path)?;
            ad.lines().find_map(|l| {
                let (k, v) = l.split_once('=')?;
                (k.trim() == "AssignedGPUs").then(|| {
                    (format!("AssignedGPUs in _CONDOR_JOB_AD ({path})"), v.trim().trim_matches('"').to_string())
                })
            })
        })
    {
        Some(Given { source: format!("{src}={v}"), items: v.split(',').map(|s| item(s.trim(), false)).collect() })
    } else {
        ["CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "ZE_AFFINITY_MASK"].iter().find_map(|k| {
            let v = set(k)?;
            Some(Given { source: format!("{k}={v}"), items: v.split(',').map(|s| item(s.trim(), false)).collect() })
        })
    };
    out.extend(gpus);
    if let Some(v) = set("OMPI_MCA_btl_openib_if_include") {
        let items = v
            .split(',')
            .filter(|s| !s.trim().is_empty())
            .map(|s| Named::Hca(s.trim().split(':').next().unwrap_or("").to_string()))
            .collect();
        out.push(Given { source: format!("OMPI_MCA_btl_openib_if_include={v}"), items });
    }
    out
}

/// What [`resolve`] needs besides the model: how Slurm's GPU indices map
/// (this node's `gres.conf`), whether CUDA indices are in PCI bus order
/// (`CUDA_DEVICE_ORDER=PCI_BUS_ID`), and an adapter's PCI address.
pub struct Maps<'a> {
    /// This node's GPUs in `gres.conf` (`None`: no `gres.conf` read).
    pub gres: Option<GresGpus>,
    /// `CUDA_DEVICE_ORDER=PCI_BUS_ID`.
    pub cuda_pci_order: bool,
    /// An InfiniBand adapter's PCI address.
    pub hca: &'a dyn Fn(&str) -> Option<String>,
}

fn by_pci_order<'a>(topo: &'a Topology, vendor: &str) -> Vec<&'a Gpu> {
    let mut v: Vec<&Gpu> = topo.gpus.iter().filter(|g| g.vendor == vendor).collect();
    v.sort_by(|a, b| a.address.cmp(&b.address));
    v
}

/// The GPU a device file names: `/dev/nvidiaN` (NVIDIA's device minor N),
/// `/dev/dri/renderDN` or `/dev/dri/cardN` (the DRM class).
pub fn gpu_of_file<'a>(topo: &'a Topology, file: &str) -> Option<&'a Gpu> {
    let name = file.rsplit('/').next()?;
    if let Some(minor) = name.strip_prefix("nvidia").and_then(|m| m.parse::<u32>().ok()) {
        return topo.gpus.iter().find(|g| g.minor == Some(minor));
    }
    topo.gpus.iter().find(|g| g.render.as_deref() == Some(name) || g.card.as_deref() == Some(name))
}

/// Maps what the environment names to PCI devices (pure).
pub fn resolve(given: &[Given], topo: &Topology, maps: &Maps<'_>) -> JobDevices {
    let mut devices = Vec::new();
    let mut unknown: Vec<String> = Vec::new();
    let mut sources = Vec::new();
    let node_of = |address: &str| topo.pci_devices.iter().find(|d| d.address == address).and_then(|d| d.numa_node);
    for g in given {
        sources.push(g.source.clone());
        let var = g.source.split('=').next().unwrap_or("");
        for it in &g.items {
            let gpu = |found: Option<&Gpu>, name: String, why: &dyn Fn() -> String| match found {
                Some(gpu) => Ok(JobDevice {
                    kind: Kind::Gpu,
                    name,
                    address: gpu.address.clone(),
                    model: gpu.model.clone(),
                    node: gpu.numa_node,
                }),
                None => Err(why()),
            };
            let got = match it {
                Named::SlurmIndex(i) => match &maps.gres {
                    Some(GresGpus::Files(files)) => match files.get(*i as usize) {
                        Some(f) => gpu(gpu_of_file(topo, f), format!("GPU {i}"), &|| {
                            format!("GPU {i} is {f} in gres.conf, which no GPU the kernel knows is")
                        }),
                        None => Err(format!("GPU {i}: gres.conf lists {} GPU files here", files.len())),
                    },
                    Some(GresGpus::Nvml) => {
                        gpu(by_pci_order(topo, "nvidia").get(*i as usize).copied(), format!("GPU {i}"), &|| {
                            format!("GPU {i}: the kernel knows fewer NVIDIA GPUs")
                        })
                    }
                    Some(GresGpus::Unknown(why)) => Err(format!("GPU {i}: {why}")),
                    None => Err(format!("GPU {i}: no gres.conf to tell its device")),
                },
                Named::Uuid(u) => {
                    let found = topo.gpus.iter().find(|g| g.uuid.as_deref().is_some_and(|x| x.starts_with(u.as_str())));
                    gpu(found, u.clone(), &|| format!("{u}: no GPU the kernel knows has this UUID"))
                }
                Named::Ordinal(k) if var == "CUDA_VISIBLE_DEVICES" || var.contains("AssignedGPUs") => {
                    if maps.cuda_pci_order {
                        gpu(by_pci_order(topo, "nvidia").get(*k as usize).copied(), format!("CUDA device {k}"), &|| {
                            format!("CUDA device {k}: the kernel knows fewer NVIDIA GPUs")
                        })
                    } else {
                        Err(format!("CUDA device {k}: CUDA's order is not the PCI bus order without CUDA_DEVICE_ORDER=PCI_BUS_ID"))
                    }
                }
                Named::Ordinal(k) => Err(format!("device {k}: {var} gives an index, not a device")),
                Named::Hca(name) => match (maps.hca)(name) {
                    Some(address) => Ok(JobDevice {
                        kind: Kind::Nic,
                        name: name.clone(),
                        node: node_of(&address),
                        address,
                        model: None,
                    }),
                    None => Err(format!("{name}: no such InfiniBand adapter")),
                },
                Named::Other(s) => Err(format!("{s:?}: not a device numakit can read")),
            };
            match got {
                Ok(d) if d.node.is_none() => unknown.push(format!("{} ({}) is on no node", d.name, d.address)),
                Ok(d) => devices.push(d),
                Err(e) => unknown.push(e),
            }
        }
    }
    let source = sources.join(", ");
    let unknown = (!unknown.is_empty()).then(|| format!("{source}: {}", unknown.join("; ")));
    JobDevices { source, devices, unknown }
}

impl JobDevices {
    /// The devices one task of `tasks` on this host (local id `task`)
    /// works with: all of them for a lone task; else, when the task sees
    /// several GPUs, the one at `task` modulo their number (the way
    /// applications pick a GPU by local rank), with the NICs on its node.
    pub fn for_task(&self, task: u32, tasks: u32) -> JobDevices {
        let gpus: Vec<&JobDevice> = self.devices.iter().filter(|d| d.kind == Kind::Gpu).collect();
        if tasks <= 1 || gpus.len() <= 1 {
            return self.clone();
        }
        let mine = gpus[task as usize % gpus.len()].clone();
        let mut devices = vec![mine.clone()];
        devices.extend(self.devices.iter().filter(|d| d.kind == Kind::Nic && d.node == mine.node).cloned());
        JobDevices { source: self.source.clone(), devices, unknown: self.unknown.clone() }
    }

    /// For people: `GPU 1 (0000:21:00.0) on node 1`, `GPUs 0,1
    /// (0000:20:00.0 on node 0, 0000:21:00.0 on node 1)`.
    pub fn summary(&self) -> String {
        match self.devices.as_slice() {
            [] => "no devices".into(),
            [d] => format!("{} ({}) on node {}", d.name, d.address, d.node.map_or("?".into(), |n| n.to_string())),
            all => {
                let gpus = all.iter().all(|d| d.kind == Kind::Gpu && d.name.starts_with("GPU "));
                let names: Vec<&str> = all
                    .iter()
                    .map(|d| if gpus { d.name.trim_start_matches("GPU ") } else { d.name.as_str() })
                    .collect();
                let wheres: Vec<String> = all
                    .iter()
                    .map(|d| format!("{} on node {}", d.address, d.node.map_or("?".into(), |n| n.to_string())))
                    .collect();
                let names = if gpus { format!("GPUs {}", names.join(",")) } else { names.join(", ") };
                format!("{names} ({})", wheres.join(", "))
            }
        }
    }

    /// The nodes of its devices: the GPUs' where it has GPUs, else the
    /// NICs'.
    pub fn nodes(&self) -> NodeSet {
        let gpus = self.devices.iter().any(|d| d.kind == Kind::Gpu);
        self.devices.iter().filter(|d| !gpus || d.kind == Kind::Gpu).filter_map(|d| d.node).collect()
    }

    /// What placement needs (`None`: no device mapped).
    pub fn near(&self, required: bool) -> Option<Near> {
        let nodes = self.nodes();
        (!nodes.is_empty()).then(|| Near { what: self.summary(), nodes, required })
    }
}

/// The job's devices from the calling process's environment (`var`,
/// `file`), read through `sys`: this host's `gres.conf` (beside
/// `SLURM_CONF`, else `/etc/slurm/gres.conf`, below the root) for Slurm's
/// indices, `/sys/class/infiniband` for adapters. `host` is the short host
/// name. Empty when the environment names no device.
pub fn read(
    sys: &SysRoot,
    topo: &Topology,
    var: &dyn Fn(&str) -> Option<String>,
    file: &dyn Fn(&str) -> Option<String>,
    host: Option<&str>,
) -> JobDevices {
    let given = given(var, file);
    if given.is_empty() {
        return JobDevices::default();
    }
    let slurm = given.iter().any(|g| g.items.iter().any(|i| matches!(i, Named::SlurmIndex(_))));
    let gres = slurm.then(|| {
        let conf = var("SLURM_CONF")
            .and_then(|c| c.rsplit_once('/').map(|(dir, _)| format!("{dir}/gres.conf")))
            .unwrap_or_else(|| "/etc/slurm/gres.conf".into());
        match sys.read(conf.trim_start_matches('/')) {
            Ok(Some(text)) => gres::gpus_from_gres_conf(&text, host.unwrap_or("")),
            Ok(None) => GresGpus::Unknown(format!("no {conf}")),
            Err(e) => GresGpus::Unknown(e.to_string()),
        }
    });
    let hca = |name: &str| -> Option<String> {
        if name.is_empty() || name.contains('/') || name.starts_with('.') {
            return None;
        }
        crate::topo::pci_parent(sys, &format!("sys/class/infiniband/{name}")).ok().flatten()
    };
    let maps = Maps { gres, cuda_pci_order: var("CUDA_DEVICE_ORDER").as_deref() == Some("PCI_BUS_ID"), hca: &hca };
    resolve(&given, topo, &maps)
}

/// The devices one task works with, from its environment (`var`, `file`;
/// [`read`] and [`JobDevices::for_task`]): the machine's nodes and devices
/// are read only when a variable names a device. The host is Slurm's name
/// for it (`SLURMD_NODENAME`, what `gres.conf` lists), else its short host
/// name.
pub fn of_task(
    sys: &SysRoot,
    var: &dyn Fn(&str) -> Option<String>,
    file: &dyn Fn(&str) -> Option<String>,
    task: u32,
    tasks: u32,
) -> JobDevices {
    if given(var, file).is_empty() {
        return JobDevices::default();
    }
    let host = var("SLURMD_NODENAME").or_else(|| crate::sys::kernel::hostname(sys));
    let host = host.map(|h| h.split('.').next().unwrap_or(&h).to_string());
    match Topology::read_nodes_only(sys).and_then(|t| t.with_devices(sys)) {
        Ok(topo) => read(sys, &topo, var, file, host.as_deref()).for_task(task, tasks),
        Err(e) => JobDevices { unknown: Some(format!("cannot read the machine's devices: {e}")), ..Default::default() },
    }
}

/// A running process's devices, from its environment as it was started
/// (`/proc/PID/environ`, [`crate::procs::read_environ`]): every device it
/// was given, none chosen for a task.
pub fn of_process(sys: &SysRoot, env: &[(String, String)]) -> JobDevices {
    let var = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    of_task(sys, &var, &|_| None, 0, 1)
}

#[cfg(test)]
mod tests;
