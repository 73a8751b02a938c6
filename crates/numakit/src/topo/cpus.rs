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
}

/// Reads `possible` and `online`, falling back to the `cpuN` folders and
/// their `online` files where a dump lacks the summary files.
pub(super) fn read_cpu_sets(sys: &SysRoot) -> Result<CpuSets, SysError> {
    let dirs: CpuSet = sys.numbered_entries(CPU_DIR, "cpu")?.into_iter().collect();
    let possible = match sys.read_list(format!("{CPU_DIR}/possible"))? {
        Some(p) if !p.is_empty() => p,
        _ => match sys.read_list(format!("{CPU_DIR}/present"))? {
            Some(p) if !p.is_empty() => p.union(&dirs),
            _ => dirs.clone(),
        },
    };
    let online = match sys.read_list(format!("{CPU_DIR}/online"))? {
        Some(o) => o,
        None => {
            let mut o = CpuSet::new();
            for id in dirs.iter() {
                // cpu0 often has no `online` file: it cannot be taken offline.
                if sys.read_u64(format!("{CPU_DIR}/cpu{id}/online"))? != Some(0) {
                    o.insert(id);
                }
            }
            o
        }
    };
    let possible = possible.union(&online);
    Ok(CpuSets { possible, online })
}

fn opt_id(v: Option<i64>) -> Option<u32> {
    v.and_then(|x| u32::try_from(x).ok())
}

/// Reads every CPU's topology folder.
pub(super) fn read_cpus(sys: &SysRoot, sets: &CpuSets, nodes: &[Node]) -> Result<Vec<Cpu>, SysError> {
    let mut out = Vec::with_capacity(sets.possible.len());
    for id in sets.possible.iter() {
        let t = format!("{CPU_DIR}/cpu{id}/topology");
        let siblings = sys
            .read_list_or_mask(format!("{t}/thread_siblings_list"), format!("{t}/thread_siblings"))?
            .or(sys.read_list(format!("{t}/core_cpus_list"))?)
            .filter(|s| s.contains(id))
            .unwrap_or_else(|| std::iter::once(id).collect());
        out.push(Cpu {
            id,
            online: sets.online.contains(id),
            node: nodes.iter().find(|n| n.cpus.contains(id)).map(|n| n.id),
            package: opt_id(sys.read_i64(format!("{t}/physical_package_id"))?),
            die: opt_id(sys.read_i64(format!("{t}/die_id"))?),
            cluster: opt_id(sys.read_i64(format!("{t}/cluster_id"))?),
            core: opt_id(sys.read_i64(format!("{t}/core_id"))?),
            siblings,
        });
    }
    Ok(out)
}

/// Groups online CPUs by package id.
pub(super) fn packages(cpus: &[Cpu]) -> Vec<Package> {
    let mut by_id: BTreeMap<u32, (CpuSet, NodeSet, Vec<CpuSet>)> = BTreeMap::new();
    for c in cpus.iter().filter(|c| c.online) {
        let Some(p) = c.package else { continue };
        let e = by_id.entry(p).or_default();
        e.0.insert(c.id);
        if let Some(n) = c.node {
            e.1.insert(n);
        }
        // Siblings restricted to the package: a buggy dump may list
        // siblings across packages.
        e.2.push(c.siblings.clone());
    }
    by_id
        .into_iter()
        .map(|(id, (cpus, nodes, mut sib))| {
            sib.sort();
            sib.dedup();
            Package { id, cpus, nodes, cores: sib.len() }
        })
        .collect()
}

/// Parses a cache `size` file: `32K`, `8192K`, `1M`, or plain bytes.
pub fn parse_size(text: &str) -> Option<u64> {
    let t = text.trim();
    let (num, mult) = match t.chars().last()? {
        'K' | 'k' => (&t[..t.len() - 1], 1024),
        'M' | 'm' => (&t[..t.len() - 1], 1024 * 1024),
        'G' | 'g' => (&t[..t.len() - 1], 1024 * 1024 * 1024),
        _ => (t, 1),
    };
    num.trim().parse::<u64>().ok().map(|n| n * mult)
}

/// Reads `cpuN/cache/indexK` of every online CPU, deduplicated by level,
/// kind and sharing set.
pub(super) fn read_caches(sys: &SysRoot, online: &CpuSet) -> Result<Vec<Cache>, SysError> {
    let mut seen: BTreeMap<(u32, String, CpuSet), Cache> = BTreeMap::new();
    for cpu in online.iter() {
        let dir = format!("{CPU_DIR}/cpu{cpu}/cache");
        for idx in sys.numbered_entries(&dir, "index")? {
            let d = format!("{dir}/index{idx}");
            let Some(level) = sys.read_u64(format!("{d}/level"))? else { continue };
            let kind = sys.read_nonempty(format!("{d}/type"))?.unwrap_or_else(|| "Unified".into());
            let cpus = sys
                .read_list_or_mask(format!("{d}/shared_cpu_list"), format!("{d}/shared_cpu_map"))?
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| std::iter::once(cpu).collect());
            let key = (level as u32, kind.clone(), cpus.clone());
            if seen.contains_key(&key) {
                continue;
            }
            let size_bytes = sys.read_nonempty(format!("{d}/size"))?.and_then(|s| parse_size(&s));
            let line_bytes = sys.read_u64(format!("{d}/coherency_line_size"))?;
            seen.insert(key, Cache { level: level as u32, kind, size_bytes, line_bytes, cpus });
        }
    }
    let mut caches: Vec<Cache> = seen.into_values().collect();
    caches.sort_by(|a, b| (a.level, &a.kind, a.cpus.first()).cmp(&(b.level, &b.kind, b.cpus.first())));
    Ok(caches)
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn cache_sizes() {
        assert_eq!(parse_size("32K"), Some(32768));
        assert_eq!(parse_size("8M"), Some(8 << 20));
        assert_eq!(parse_size("512"), Some(512));
        assert_eq!(parse_size("x"), None);
        assert_eq!(parse_size(""), None);
    }
}
