//! NUMA nodes from `sys/devices/system/node`: CPUs, memory, huge pages,
//! state, distances, HMAT access classes and memory tiers.

use std::collections::BTreeMap;

use super::{AccessClass, HugePages, Node, NodeMemory};
use crate::sets::{CpuSet, NodeSet};
use crate::sys::{SysError, SysRoot};

const NODE_DIR: &str = "sys/devices/system/node";

pub use crate::sets::MAX_NODES;
const TIER_DIR: &str = "sys/devices/virtual/memory_tiering";

/// Reads every node. Without a node folder the machine is one node 0
/// holding every CPU, with the memory of `/proc/meminfo`.
/// With `detail` false only CPUs, memory and state are read (the launch
/// path and `--hardware`): no huge pages, HMAT or tiers.
pub(super) fn read_nodes(sys: &SysRoot, possible_cpus: &CpuSet, detail: bool) -> Result<(bool, Vec<Node>), SysError> {
    let ids = sys.numbered_entries(NODE_DIR, "node")?;
    if let Some(&max) = ids.last().filter(|&&m| m >= MAX_NODES) {
        return Err(sys.invalid(
            format!("{NODE_DIR}/node{max}"),
            format!("node {max} is beyond the kernel's limit (node ids are below {MAX_NODES})"),
        ));
    }
    if ids.is_empty() {
        let memory = read_meminfo(sys, "proc/meminfo")?;
        let hugepages = read_hugepages(sys, "sys/kernel/mm/hugepages")?;
        let node = Node {
            id: 0,
            cpus: possible_cpus.clone(),
            has_cpu: !possible_cpus.is_empty(),
            has_memory: memory.is_none_or(|m| m.total_bytes > 0),
            memory,
            hugepages,
            online: true,
            generic_initiator: false,
            distances: vec![10],
            access: Vec::new(),
            memory_tier: None,
        };
        return Ok((false, vec![node]));
    }
    let state = |name: &str| -> Result<Option<NodeSet>, SysError> { sys.read_list(format!("{NODE_DIR}/{name}")) };
    let has_cpu = state("has_cpu")?;
    let has_memory = state("has_memory")?;
    let online = state("online")?;
    let initiators = state("has_generic_initiator")?.unwrap_or_default();
    let tiers = if detail { read_tiers(sys)? } else { BTreeMap::new() };
    let mut nodes = Vec::with_capacity(ids.len());
    for id in ids {
        let d = format!("{NODE_DIR}/node{id}");
        let cpus: CpuSet = sys.read_list_or_mask(format!("{d}/cpulist"), format!("{d}/cpumap"))?.unwrap_or_default();
        let file = || if sys.exists(format!("{d}/cpulist")) { format!("{d}/cpulist") } else { format!("{d}/cpumap") };
        let stray = cpus.difference(possible_cpus);
        if let Some(c) = stray.iter().next() {
            return Err(sys.invalid(
                file(),
                format!("lists CPU {c}, which is not a possible CPU of this machine (cpu/possible)"),
            ));
        }
        // The same CPU in two nodes is not refused: the kernel does say it
        // on machines whose firmware tables are wrong (hwloc's
        // `8em64t-2s2ca2c-buggynuma` dump), and on heterogeneous memory.
        let memory = read_meminfo(sys, &format!("{d}/meminfo"))?;
        nodes.push(Node {
            id,
            has_cpu: has_cpu.as_ref().map_or(!cpus.is_empty(), |s| s.contains(id)),
            has_memory: has_memory.as_ref().map_or(memory.is_some_and(|m| m.total_bytes > 0), |s| s.contains(id)),
            online: online.as_ref().is_none_or(|s| s.contains(id)),
            generic_initiator: initiators.contains(id),
            cpus,
            memory,
            hugepages: if detail { read_hugepages(sys, &format!("{d}/hugepages"))? } else { Vec::new() },
            distances: Vec::new(),
            access: if detail { read_access(sys, &d)? } else { Vec::new() },
            memory_tier: tiers.get(&id).copied(),
        });
    }
    Ok((true, nodes))
}

fn read_meminfo(sys: &SysRoot, rel: &str) -> Result<Option<NodeMemory>, SysError> {
    let Some(kv) = sys.read_meminfo(rel)? else { return Ok(None) };
    let kv: BTreeMap<String, u64> = kv.into_iter().collect();
    let Some(&total) = kv.get("MemTotal") else {
        return Err(sys.invalid(rel, "no MemTotal line"));
    };
    let free = kv.get("MemFree").copied();
    let used = kv.get("MemUsed").copied().or(free.map(|f| total.saturating_sub(f)));
    let inactive_file = kv.get("Inactive(file)").copied();
    Ok(Some(NodeMemory { total_bytes: total, free_bytes: free, used_bytes: used, inactive_file_bytes: inactive_file }))
}

/// Reads the huge pages of every size under `dir` (`hugepages-<size>kB`
/// folders), by size. A folder whose size in bytes does not fit 64 bits
/// is no kernel's and is skipped, like a name that is not a size.
pub(crate) fn read_hugepages(sys: &SysRoot, dir: &str) -> Result<Vec<HugePages>, SysError> {
    let mut out = Vec::new();
    for name in sys.list_dir(dir)?.unwrap_or_default() {
        let Some(kb) = name.strip_prefix("hugepages-").and_then(|s| s.strip_suffix("kB")) else { continue };
        let Some(size_bytes) = kb.parse::<u64>().ok().and_then(|kb| kb.checked_mul(1024)) else { continue };
        let f = |file: &str| sys.read_u64(format!("{dir}/{name}/{file}"));
        out.push(HugePages {
            size_bytes,
            total: f("nr_hugepages")?.unwrap_or(0),
            free: f("free_hugepages")?.unwrap_or(0),
            surplus: f("surplus_hugepages")?.unwrap_or(0),
        });
    }
    out.sort_by_key(|h| h.size_bytes);
    Ok(out)
}

fn read_access(sys: &SysRoot, node_dir: &str) -> Result<Vec<AccessClass>, SysError> {
    let mut out = Vec::new();
    for class in sys.numbered_entries(node_dir, "access")? {
        let d = format!("{node_dir}/access{class}/initiators");
        let initiators = sys.numbered_entries(&d, "node")?.into_iter().collect();
        let f = |file: &str| sys.read_u64(format!("{d}/{file}"));
        out.push(AccessClass {
            class,
            initiators,
            read_latency_ns: f("read_latency")?,
            write_latency_ns: f("write_latency")?,
            read_bandwidth_mbps: f("read_bandwidth")?,
            write_bandwidth_mbps: f("write_bandwidth")?,
        });
    }
    Ok(out)
}

fn read_tiers(sys: &SysRoot) -> Result<BTreeMap<u32, u32>, SysError> {
    let mut map = BTreeMap::new();
    for tier in sys.numbered_entries(TIER_DIR, "memory_tier")? {
        if let Some(nodes) = sys.read_list::<crate::sets::Node>(format!("{TIER_DIR}/memory_tier{tier}/nodelist"))? {
            for n in nodes.iter() {
                map.insert(n, tier);
            }
        }
    }
    Ok(map)
}

/// Parses a node's `distance` row: its distances, blank-separated, in
/// node order. A token that is not a distance is an error quoting it.
pub fn parse_distance_row(text: &str) -> Result<Vec<u32>, String> {
    text.split_whitespace()
        .map(|tok| tok.parse::<u32>().map_err(|_| format!("{} is not a distance", crate::text::quote(tok))))
        .collect()
}

/// Maps a distance row onto the node folders. The kernel writes one entry
/// per online node; a dump whose `online`/`possible` list is wider than its
/// node folders (an offline node without a folder) has longer rows, which
/// are mapped onto that list and cut to the nodes present. Any other
/// length is contradictory.
fn fit_row(sys: &SysRoot, rel: &str, row: Vec<u32>, ids: &[u32]) -> Result<Vec<u32>, SysError> {
    if row.len() == ids.len() {
        return Ok(row);
    }
    for list in ["online", "possible"] {
        let Some(wide) = sys.read_list::<crate::sets::Node>(format!("{NODE_DIR}/{list}"))? else { continue };
        let wide = wide.to_vec();
        if wide.len() == row.len() && ids.iter().all(|i| wide.contains(i)) {
            return Ok(ids.iter().filter_map(|i| wide.iter().position(|w| w == i).map(|p| row[p])).collect());
        }
    }
    Err(sys.invalid(rel, format!("{} distances for {} nodes", row.len(), ids.len())))
}

/// Reads each node's `distance` row into `nodes[i].distances` and returns
/// the matrix. Row entries map, in order, onto the node ids in increasing
/// order (as the kernel writes them and libnuma reads them). A row whose
/// length differs from the node count is contradictory data: an error
/// naming the file. With no distance file at all, the kernel's defaults
/// (10 local, 20 remote) stand, marked as such.
pub(super) fn read_distances(
    sys: &SysRoot,
    nodes: &mut [Node],
    numa_info: bool,
) -> Result<(Vec<Vec<u32>>, bool), SysError> {
    let n = nodes.len();
    let mut rows: Vec<Option<Vec<u32>>> = Vec::with_capacity(n);
    let ids: Vec<u32> = nodes.iter().map(|x| x.id).collect();
    if numa_info {
        for node in nodes.iter() {
            let rel = format!("{NODE_DIR}/node{}/distance", node.id);
            let row = match sys.read_nonempty(&rel)? {
                None => None,
                Some(text) => {
                    let row = parse_distance_row(&text).map_err(|problem| sys.invalid(&rel, problem))?;
                    Some(fit_row(sys, &rel, row, &ids)?)
                }
            };
            rows.push(row);
        }
    }
    // SLIT distances are at least 10 (10 = local); a 0 means the firmware
    // gave nothing usable (numactl then says "No distance information").
    let have_all = numa_info && rows.iter().all(|r| r.as_ref().is_some_and(|r| r.iter().all(|&d| d >= 10)));
    let matrix: Vec<Vec<u32>> = if have_all {
        rows.into_iter().flatten().collect()
    } else {
        (0..n).map(|i| (0..n).map(|j| if i == j { 10 } else { 20 }).collect()).collect()
    };
    for (node, row) in nodes.iter_mut().zip(&matrix) {
        node.distances = row.clone();
    }
    Ok((matrix, have_all))
}
