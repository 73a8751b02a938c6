//! CPUs, packages and caches from `sys/devices/system/cpu`.

use std::collections::BTreeMap;

use super::{Cache, Cpu, Node, Package};
use crate::sets::{CpuSet, NodeSet};
use crate::sys::{SysError, SysRoot};

const CPU_DIR: &str = "sys/devices/system/cpu";

/// The machine-wide CPU sets.
pub(super) struct CpuSets {
    pub possible: CpuSet,
    pub online: CpuSet,
    pub online_file: bool,
}

/// Reads `possible` and `online`, falling back to the `cpuN` folders and
/// their `online` files where a dump lacks the summary files.
pub(super) fn read_cpu_sets(sys: &SysRoot) -> Result<CpuSets, SysError> {
    // The `cpuN` folders are listed only where a summary file is missing.
    let dirs = || -> Result<CpuSet, SysError> { Ok(sys.numbered_entries(CPU_DIR, "cpu")?.into_iter().collect()) };
    let possible = match sys.read_list(format!("{CPU_DIR}/possible"))? {
        Some(p) if !p.is_empty() => p,
        _ => match sys.read_list(format!("{CPU_DIR}/present"))? {
            Some(p) if !p.is_empty() => p.union(&dirs()?),
            _ => dirs()?,
        },
    };
    let online_list = sys.read_list(format!("{CPU_DIR}/online"))?;
    let online_file = online_list.is_some();
    let online = match online_list {
        Some(o) => o,
        None => {
            let mut o = CpuSet::new();
            for id in dirs()?.iter() {
                // cpu0 often has no `online` file: it cannot be taken offline.
                if sys.read_u64(format!("{CPU_DIR}/cpu{id}/online"))? != Some(0) {
                    o.insert(id);
                }
            }
            o
        }
    };
    let possible = possible.union(&online);
    if let Some(max) = possible.iter().last().filter(|&m| m >= MAX_CPUS) {
        let file = if online.contains(max) { "online" } else { "possible" };
        return Err(sys.invalid(
            format!("{CPU_DIR}/{file}"),
            format!("CPU {max} is beyond any kernel's limit (CPU ids are below {MAX_CPUS})"),
        ));
    }
    // Every online CPU has its `cpuN` folder; a list far beyond the
    // folders is not this machine's (listed only for large lists, to keep
    // the launch path's reads as they are).
    if online.len() > 1024 {
        let dirs = dirs()?;
        let without = online.difference(&dirs).len();
        if without > dirs.len() {
            return Err(sys.invalid(
                format!("{CPU_DIR}/online"),
                format!("lists {} CPUs but only {} have a cpuN folder", online.len(), dirs.len()),
            ));
        }
    }
    Ok(CpuSets { possible, online, online_file })
}

pub use crate::sets::MAX_CPUS;

/// A CPU set from a list file or, without it, a mask file, refused when
/// it names a CPU the machine cannot have (not in `cpu/possible`).
fn cpus_within(sys: &SysRoot, list: &str, mask: &str, possible: &CpuSet) -> Result<Option<CpuSet>, SysError> {
    let Some(set) = sys.read_list_or_mask(list, mask)? else { return Ok(None) };
    match set.difference(possible).iter().next() {
        None => Ok(Some(set)),
        Some(c) => {
            let file = if sys.exists(list) { list } else { mask };
            Err(sys.invalid(file, format!("lists CPU {c}, which is not a possible CPU of this machine (cpu/possible)")))
        }
    }
}

fn opt_id(v: Option<i64>) -> Option<u32> {
    v.and_then(|x| u32::try_from(x).ok())
}

/// Reads every CPU's topology folder.
///
/// Cores and packages are the sets the kernel gives, as hwloc reads them:
/// a core is the CPU's SMT siblings (`core_cpus_list`/`thread_siblings`)
/// that share its `core_id` (AMD compute units list two cores as
/// siblings), a package is its `package_cpus_list`/`core_siblings` set.
/// Where the kernel gives no such set the field is unknown (`None`), never
/// guessed.
pub(super) fn read_cpus(sys: &SysRoot, sets: &CpuSets, nodes: &[Node]) -> Result<Vec<Cpu>, SysError> {
    struct Raw {
        id: u32,
        pkg_id: Option<u32>,
        pkg_set: Option<CpuSet>,
        core: Option<u32>,
        siblings: Option<CpuSet>,
        die: Option<u32>,
        cluster: Option<u32>,
    }
    let mut raw = Vec::with_capacity(sets.possible.len());
    for id in sets.possible.iter() {
        let t = format!("{CPU_DIR}/cpu{id}/topology");
        let set =
            |list: &str, mask: &str| cpus_within(sys, &format!("{t}/{list}"), &format!("{t}/{mask}"), &sets.possible);
        let siblings = match set("core_cpus_list", "core_cpus")? {
            Some(s) => Some(s),
            None => set("thread_siblings_list", "thread_siblings")?,
        }
        .filter(|s| s.contains(id));
        let pkg_set = match set("package_cpus_list", "package_cpus")? {
            Some(s) => Some(s),
            None => set("core_siblings_list", "core_siblings")?,
        }
        .filter(|s| s.contains(id));
        raw.push(Raw {
            id,
            pkg_id: opt_id(sys.read_i64(format!("{t}/physical_package_id"))?),
            pkg_set,
            core: opt_id(sys.read_i64(format!("{t}/core_id"))?),
            siblings,
            die: opt_id(sys.read_i64(format!("{t}/die_id"))?),
            cluster: opt_id(sys.read_i64(format!("{t}/cluster_id"))?),
        });
    }
    let core_of = |cpu: u32| raw.iter().find(|r| r.id == cpu).and_then(|r| r.core);
    // Package ids: the physical id where the kernel gives one, else the
    // package's position among the distinct package sets.
    let mut pkg_sets: Vec<CpuSet> = raw.iter().filter_map(|r| r.pkg_set.clone()).collect();
    pkg_sets.sort();
    pkg_sets.dedup();
    let mut out = Vec::with_capacity(raw.len());
    for r in &raw {
        let siblings = r.siblings.as_ref().map(|s| match r.core {
            Some(c) => s.iter().filter(|&x| core_of(x).is_none_or(|cx| cx == c)).collect(),
            None => s.clone(),
        });
        let package_cpus = r.pkg_set.clone();
        let package = match (r.pkg_id, &package_cpus) {
            (Some(p), _) => Some(p),
            (None, Some(set)) => pkg_sets.iter().position(|s| s == set).map(|i| i as u32),
            (None, None) => None,
        };
        out.push(Cpu {
            id: r.id,
            online: sets.online.contains(r.id),
            node: nodes.iter().find(|n| n.cpus.contains(r.id)).map(|n| n.id),
            package,
            package_cpus,
            die: r.die,
            cluster: r.cluster,
            core: r.core,
            siblings,
        });
    }
    Ok(out)
}

/// Groups online CPUs into packages by the kernel's package sets (or by
/// package id where no set is given).
pub(super) fn packages(cpus: &[Cpu]) -> Vec<Package> {
    let mut by_set: BTreeMap<CpuSet, (u32, CpuSet, NodeSet, Vec<CpuSet>)> = BTreeMap::new();
    let mut by_id: BTreeMap<u32, CpuSet> = BTreeMap::new();
    for c in cpus.iter().filter(|c| c.package.is_some() && c.package_cpus.is_none()) {
        if let Some(p) = c.package {
            by_id.entry(p).or_default().insert(c.id);
        }
    }
    for c in cpus.iter().filter(|c| c.online) {
        let (Some(id), Some(set)) =
            (c.package, c.package_cpus.clone().or_else(|| c.package.and_then(|p| by_id.get(&p).cloned())))
        else {
            continue;
        };
        let e = by_set.entry(set).or_insert_with(|| (id, CpuSet::new(), NodeSet::new(), Vec::new()));
        e.1.insert(c.id);
        if let Some(n) = c.node {
            e.2.insert(n);
        }
        if let Some(s) = &c.siblings {
            e.3.push(s.clone());
        }
    }
    let mut out: Vec<Package> = by_set
        .into_values()
        .map(|(id, cpus, nodes, mut sib)| {
            sib.sort();
            sib.dedup();
            Package { id, cpus, nodes, cores: sib.len() }
        })
        .collect();
    out.sort_by_key(|p| (p.id, p.cpus.first()));
    out
}

/// Reads `cpuN/cache/indexK` of every online CPU, deduplicated by level,
/// kind and sharing set.
pub(super) fn read_caches(sys: &SysRoot, online: &CpuSet, possible: &CpuSet) -> Result<Vec<Cache>, SysError> {
    let mut seen: BTreeMap<(u32, String, CpuSet), Cache> = BTreeMap::new();
    // CPUs already covered by a cache found at `indexK`: their `indexK` is
    // that same cache, so it is not read again (a 256-CPU machine reads
    // each shared cache once, not 256 times).
    let mut covered: BTreeMap<u32, CpuSet> = BTreeMap::new();
    for cpu in online.iter() {
        let dir = format!("{CPU_DIR}/cpu{cpu}/cache");
        for idx in sys.numbered_entries(&dir, "index")? {
            if covered.get(&idx).is_some_and(|c| c.contains(cpu)) {
                continue;
            }
            let d = format!("{dir}/index{idx}");
            let Some(level) = sys.read_u64(format!("{d}/level"))? else { continue };
            let kind = sys.read_nonempty(format!("{d}/type"))?.unwrap_or_else(|| "Unified".into());
            let cpus = cpus_within(sys, &format!("{d}/shared_cpu_list"), &format!("{d}/shared_cpu_map"), possible)?
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| std::iter::once(cpu).collect());
            let e = covered.entry(idx).or_default();
            *e = e.union(&cpus);
            let key = (level as u32, kind.clone(), cpus.clone());
            if seen.contains_key(&key) {
                continue;
            }
            let size_bytes = sys.read_nonempty(format!("{d}/size"))?.and_then(|s| crate::units::parse_size(&s).ok());
            let line_bytes = sys.read_u64(format!("{d}/coherency_line_size"))?;
            seen.insert(key, Cache { level: level as u32, kind, size_bytes, line_bytes, cpus });
        }
    }
    let mut caches: Vec<Cache> = seen.into_values().collect();
    caches.sort_by(|a, b| (a.level, &a.kind, a.cpus.first()).cmp(&(b.level, &b.kind, b.cpus.first())));
    Ok(caches)
}
