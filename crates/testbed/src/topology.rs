//! NUMA topologies for the test bed: nodes (CPUs, memory), the distance matrix, the
//! SMP layout and optional HMAT latency/bandwidth.
//!
//! A [`Topology`] is written with the same options `testbed/numakit-vm` takes
//! (`--node 0-1:1G --dist 0-1=20 ...`, see [`Topology::from_options`]), validated the
//! same way, and turned back into those options by [`Topology::to_args`]. The named
//! topologies live in `testbed/topologies`, shared with the shell script.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use crate::Error;

/// The named topologies file, shared with `numakit-vm --topo NAME`.
const NAMED: &str = include_str!("../../../testbed/topologies");

/// Distance between nodes not given explicitly (`--dist-default`).
pub const DEFAULT_DISTANCE: u32 = 20;

/// One NUMA node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Node {
    /// CPUs of the node, ascending (empty: memory-only node).
    pub cpus: Vec<u32>,
    /// Memory in MiB (0: memory-less CPU node).
    pub mem_mib: u64,
}

/// QEMU's CPU layout: CPU `c` is in package `c / (dies * cores * threads)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Smp {
    /// Packages.
    pub sockets: u32,
    /// Dies per package.
    pub dies: u32,
    /// Cores per die.
    pub cores: u32,
    /// Threads per core (siblings are numbered adjacently).
    pub threads: u32,
}

impl Smp {
    /// Number of CPUs this layout holds.
    pub fn cpus(&self) -> u64 {
        u64::from(self.sockets) * u64::from(self.dies) * u64::from(self.cores) * u64::from(self.threads)
    }

    /// Package (socket) of CPU `cpu`.
    pub fn package_of(&self, cpu: u32) -> u32 {
        cpu / (self.dies * self.cores * self.threads).max(1)
    }

    /// The layout `numakit-vm` picks when none is given: one package per CPU node
    /// when every CPU node holds an equal, contiguous, ascending CPU range; else one
    /// package per CPU.
    pub fn derive(nodes: &[Node]) -> Smp {
        let ncpu = nodes.iter().map(|n| n.cpus.len() as u32).sum::<u32>();
        let mut next = 0;
        let mut size = None;
        let mut blocks = true;
        for node in nodes.iter().filter(|n| !n.cpus.is_empty()) {
            let len = node.cpus.len() as u32;
            blocks &= *size.get_or_insert(len) == len;
            for &c in &node.cpus {
                blocks &= c == next;
                next += 1;
            }
        }
        let cores = match size {
            Some(s) if blocks && s > 0 => s,
            _ => 1,
        };
        Smp { sockets: ncpu / cores, dies: 1, cores, threads: 1 }
    }
}

/// One ACPI HMAT entry: memory access from `initiator` (a CPU node) to `target`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct HmatLb {
    /// Initiator node (has CPUs).
    pub initiator: usize,
    /// Target node (has memory).
    pub target: usize,
    /// Access latency in nanoseconds.
    pub latency_ns: u64,
    /// Access bandwidth in MiB/s.
    pub bandwidth_mib_s: u64,
}

impl HmatLb {
    /// The entry `numakit-vm --hmat` derives for a pair given no `--hmat-lb`.
    pub fn from_distance(initiator: usize, target: usize, distance: u32) -> HmatLb {
        let d = u64::from(distance.max(1));
        HmatLb { initiator, target, latency_ns: d * 10, bandwidth_mib_s: 204_800 / d }
    }
}

/// A guest NUMA topology.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Topology {
    /// Name (the named topology, or "custom").
    pub name: String,
    /// Nodes; node `i` is Linux node `i`.
    pub nodes: Vec<Node>,
    /// `distances[i][j]`: distance from node `i` to node `j` (self 10).
    pub distances: Vec<Vec<u32>>,
    /// CPU layout.
    pub smp: Smp,
    /// HMAT (`-machine hmat=on`): one entry per (CPU node, memory node) pair.
    pub hmat: Option<Vec<HmatLb>>,
}

impl Topology {
    /// A topology with these nodes, every remote distance [`DEFAULT_DISTANCE`], the
    /// derived SMP layout and no HMAT. Not yet validated (see [`Topology::validate`]).
    pub fn new(nodes: Vec<Node>) -> Topology {
        let n = nodes.len();
        let distances = (0..n).map(|i| (0..n).map(|j| if i == j { 10 } else { DEFAULT_DISTANCE }).collect()).collect();
        let smp = Smp::derive(&nodes);
        Topology { name: "custom".into(), nodes, distances, smp, hmat: None }
    }

    /// One of the named topologies of `testbed/topologies`: `1n`, `2s-intel-ht`,
    /// `4n-rr`, `amd-8n`, `tiered`, `memless`.
    pub fn named(name: &str) -> Result<Topology, Error> {
        let entries = named_entries();
        let opts = entries.get(name).ok_or_else(|| {
            let known: Vec<&str> = entries.keys().map(String::as_str).collect();
            Error::Topology(format!("unknown topology '{name}' (known: {})", known.join(", ")))
        })?;
        let mut t = Topology::from_options(opts)?;
        t.name = name.to_string();
        Ok(t)
    }

    /// Names of all named topologies, in file order.
    pub fn names() -> Vec<String> {
        named_lines().into_iter().map(|(name, _)| name).collect()
    }

    /// Every named topology.
    pub fn all_named() -> Result<Vec<Topology>, Error> {
        Topology::names().iter().map(|n| Topology::named(n)).collect()
    }

    /// Parses `numakit-vm` topology options (`--node`, `--dist`, `--dist-default`,
    /// `--sockets`, `--dies`, `--cores`, `--threads`, `--hmat`, `--hmat-lb`) and
    /// validates the result.
    pub fn from_options<S: AsRef<str>>(opts: &[S]) -> Result<Topology, Error> {
        let mut nodes = Vec::new();
        let mut dists = Vec::new();
        let mut default = DEFAULT_DISTANCE;
        let mut smp: [Option<u32>; 4] = [None; 4];
        let mut hmat = false;
        let mut lbs = Vec::new();
        let mut it = opts.iter().map(AsRef::as_ref);
        while let Some(opt) = it.next() {
            if opt == "--hmat" {
                hmat = true;
                continue;
            }
            let val = it.next().ok_or_else(|| bad(format!("option {opt} needs a value")))?;
            match opt {
                "--node" => nodes.push(parse_node(nodes.len(), val)?),
                "--dist" => dists.push(val),
                "--dist-default" => default = parse_num(val, "--dist-default")?,
                "--sockets" | "--dies" | "--cores" | "--threads" => {
                    let i = ["--sockets", "--dies", "--cores", "--threads"].iter().position(|o| *o == opt);
                    let v = parse_num(val, opt)?;
                    if v == 0 {
                        return Err(bad(format!("{opt} must be positive")));
                    }
                    smp[i.unwrap_or(0)] = Some(v);
                }
                "--hmat-lb" => {
                    hmat = true;
                    lbs.push(val);
                }
                _ => return Err(bad(format!("unknown topology option {opt}"))),
            }
        }
        if nodes.is_empty() {
            return Err(bad("no nodes".into()));
        }
        if !(11..=254).contains(&default) {
            return Err(bad("--dist-default must be 11..254".into()));
        }
        let n = nodes.len();
        let mut t = Topology::new(nodes);
        // explicit distances first, then mirror one-way entries, then the default
        let mut set = vec![vec![None; n]; n];
        for spec in dists {
            let (a, b, both, v) = parse_dist(spec, n)?;
            set[a][b] = Some(v);
            if both {
                set[b][a] = Some(v);
            }
        }
        for (i, row) in t.distances.iter_mut().enumerate() {
            for (j, d) in row.iter_mut().enumerate().filter(|(j, _)| *j != i) {
                *d = set[i][j].or(set[j][i]).unwrap_or(default);
            }
        }
        t.smp = resolve_smp(&t.nodes, smp)?;
        if hmat {
            let mut explicit = BTreeMap::new();
            for spec in lbs {
                let lb = parse_lb(spec, n)?;
                explicit.insert((lb.initiator, lb.target), lb);
            }
            t.hmat = Some(
                t.hmat_pairs()
                    .map(|(i, j)| {
                        explicit.get(&(i, j)).copied().unwrap_or(HmatLb::from_distance(i, j, t.distances[i][j]))
                    })
                    .collect(),
            );
            if let Some(lb) = explicit.values().find(|lb| !t.hmat_pairs().any(|p| p == (lb.initiator, lb.target))) {
                let why = if t.nodes[lb.initiator].cpus.is_empty() {
                    format!("initiator node {} has no CPUs", lb.initiator)
                } else {
                    format!("target node {} has no memory", lb.target)
                };
                return Err(bad(format!("--hmat-lb {}-{}: {why}", lb.initiator, lb.target)));
            }
        }
        t.validate()?;
        Ok(t)
    }

    /// (initiator, target) pairs HMAT describes: CPU nodes to memory nodes.
    fn hmat_pairs(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        let n = self.nodes.len();
        (0..n)
            .filter(|&i| !self.nodes[i].cpus.is_empty())
            .flat_map(move |i| (0..n).filter(move |&j| self.nodes[j].mem_mib > 0).map(move |j| (i, j)))
    }

    /// Checks what QEMU and Linux need; the error names the bad node or distance.
    pub fn validate(&self) -> Result<(), Error> {
        let n = self.nodes.len();
        if n == 0 || n > 64 {
            return Err(bad(format!("{n} nodes (want 1..64)")));
        }
        let mut owner: BTreeMap<u32, usize> = BTreeMap::new();
        let mut total = 0;
        for (i, node) in self.nodes.iter().enumerate() {
            for &c in &node.cpus {
                if let Some(o) = owner.insert(c, i) {
                    if o != i {
                        return Err(bad(format!("CPU {c} is in node {o} and node {i}")));
                    }
                }
            }
            if node.cpus.is_empty() && node.mem_mib == 0 {
                return Err(bad(format!("node {i} has neither CPUs nor memory")));
            }
            if node.mem_mib != 0 && node.mem_mib < 32 {
                return Err(bad(format!("node {i}: {}M is too small (0 or at least 32M)", node.mem_mib)));
            }
            total += node.mem_mib;
        }
        let ncpu = owner.len() as u32;
        if ncpu == 0 {
            return Err(bad("no node has CPUs".into()));
        }
        if ncpu > 255 {
            return Err(bad("at most 255 CPUs".into()));
        }
        if let Some(c) = (0..ncpu).find(|c| !owner.contains_key(c)) {
            return Err(bad(format!("CPU {c} is in no node (CPUs must be numbered 0..{} without gaps)", ncpu - 1)));
        }
        if total < 256 {
            return Err(bad(format!("total memory {total}M is too small (at least 256M)")));
        }
        if self.distances.len() != n || self.distances.iter().any(|r| r.len() != n) {
            return Err(bad(format!("the distance matrix must be {n}x{n}")));
        }
        for (i, row) in self.distances.iter().enumerate() {
            for (j, &d) in row.iter().enumerate() {
                if i == j && d != 10 {
                    return Err(bad(format!("distance {i}-{i}={d}: self-distance of node {i} must be 10")));
                }
                if i != j && !(11..=254).contains(&d) {
                    return Err(bad(format!("distance {i}>{j}={d}: must be 11..254 between different nodes")));
                }
            }
        }
        let s = self.smp;
        if s.sockets == 0 || s.dies == 0 || s.cores == 0 || s.threads == 0 || s.cpus() != u64::from(ncpu) {
            return Err(bad(format!(
                "SMP layout sockets={} dies={} cores={} threads={} makes {} CPUs, the nodes have {ncpu}",
                s.sockets,
                s.dies,
                s.cores,
                s.threads,
                s.cpus()
            )));
        }
        for c in 0..ncpu {
            let first = c - c % s.threads;
            if owner.get(&c) != owner.get(&first) {
                return Err(bad(format!(
                    "SMT siblings CPU {first} and CPU {c} are in node {} and node {} (QEMU numbers the threads of a core adjacently)",
                    owner.get(&first).copied().unwrap_or(0),
                    owner.get(&c).copied().unwrap_or(0)
                )));
            }
        }
        for lb in self.hmat.iter().flatten() {
            let name = format!("HMAT entry {}-{}", lb.initiator, lb.target);
            match (self.nodes.get(lb.initiator), self.nodes.get(lb.target)) {
                (Some(i), Some(t)) => {
                    if i.cpus.is_empty() {
                        return Err(bad(format!("{name}: initiator node {} has no CPUs", lb.initiator)));
                    }
                    if t.mem_mib == 0 {
                        return Err(bad(format!("{name}: target node {} has no memory", lb.target)));
                    }
                }
                _ => return Err(bad(format!("{name}: no such node (nodes are 0..{})", n - 1))),
            }
            if lb.latency_ns == 0 || lb.bandwidth_mib_s == 0 {
                return Err(bad(format!("{name}: latency and bandwidth must be > 0")));
            }
        }
        Ok(())
    }

    /// `numakit-vm` options describing exactly this topology (every distance, the
    /// SMP layout and every HMAT entry explicit).
    pub fn to_args(&self) -> Vec<String> {
        let mut a = Vec::new();
        for node in &self.nodes {
            let cpus = if node.cpus.is_empty() { "-".to_string() } else { cpulist(&node.cpus) };
            a.extend(["--node".to_string(), format!("{cpus}:{}M", node.mem_mib)]);
        }
        let n = self.nodes.len();
        for i in 0..n {
            for j in i + 1..n {
                let (ij, ji) = (self.distances[i][j], self.distances[j][i]);
                if ij == ji {
                    a.extend(["--dist".to_string(), format!("{i}-{j}={ij}")]);
                } else {
                    a.extend([
                        "--dist".to_string(),
                        format!("{i}>{j}={ij}"),
                        "--dist".to_string(),
                        format!("{j}>{i}={ji}"),
                    ]);
                }
            }
        }
        let s = self.smp;
        for (opt, v) in [("--sockets", s.sockets), ("--dies", s.dies), ("--cores", s.cores), ("--threads", s.threads)] {
            a.extend([opt.to_string(), v.to_string()]);
        }
        if let Some(lbs) = &self.hmat {
            a.push("--hmat".into());
            for lb in lbs {
                a.extend([
                    "--hmat-lb".to_string(),
                    format!("{}-{}={}:{}", lb.initiator, lb.target, lb.latency_ns, lb.bandwidth_mib_s),
                ]);
            }
        }
        a
    }

    /// Total CPU count.
    pub fn cpu_count(&self) -> usize {
        self.nodes.iter().map(|n| n.cpus.len()).sum()
    }

    /// Nodes with CPUs, as Linux prints `/sys/devices/system/node/has_cpu`.
    pub fn has_cpu(&self) -> String {
        self.node_list(|n| !n.cpus.is_empty())
    }

    /// Nodes with memory, as Linux prints `/sys/devices/system/node/has_memory`.
    pub fn has_memory(&self) -> String {
        self.node_list(|n| n.mem_mib > 0)
    }

    fn node_list(&self, f: impl Fn(&Node) -> bool) -> String {
        let ids: Vec<u32> = (0u32..).zip(&self.nodes).filter(|(_, n)| f(n)).map(|(i, _)| i).collect();
        cpulist(&ids)
    }

    /// Node `i`'s CPU list as in `/sys/devices/system/node/nodeI/cpulist` ("" if none).
    pub fn cpulist(&self, node: usize) -> String {
        self.nodes.get(node).map(|n| cpulist(&n.cpus)).unwrap_or_default()
    }

    /// Node `i`'s row as in `/sys/devices/system/node/nodeI/distance`.
    pub fn distance_line(&self, node: usize) -> String {
        let row = self.distances.get(node).map(Vec::as_slice).unwrap_or_default();
        row.iter().map(u32::to_string).collect::<Vec<_>>().join(" ")
    }
}

/// Formats CPU (or node) ids the way Linux does: "0-3,8,10-11".
pub fn cpulist(ids: &[u32]) -> String {
    let mut v = ids.to_vec();
    v.sort_unstable();
    v.dedup();
    let mut out = String::new();
    let mut i = 0;
    while i < v.len() {
        let mut j = i;
        while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
            j += 1;
        }
        let sep = if out.is_empty() { "" } else { "," };
        let _ = if j > i { write!(out, "{sep}{}-{}", v[i], v[j]) } else { write!(out, "{sep}{}", v[i]) };
        i = j + 1;
    }
    out
}

/// Parses a Linux list "0-3,8" (empty string: no ids).
pub fn parse_cpulist(s: &str) -> Result<Vec<u32>, Error> {
    let mut out = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        let (lo, hi) = part.split_once('-').unwrap_or((part, part));
        let (lo, hi) = (parse_num(lo, part)?, parse_num(hi, part)?);
        if lo > hi {
            return Err(bad(format!("bad CPU range '{part}'")));
        }
        out.extend(lo..=hi);
    }
    Ok(out)
}

fn bad(msg: String) -> Error {
    Error::Topology(msg)
}

fn parse_num(s: &str, what: &str) -> Result<u32, Error> {
    s.parse().map_err(|_| bad(format!("{what}: '{s}' is not a number")))
}

/// `CPUS:MEM` as in `--node`.
fn parse_node(i: usize, spec: &str) -> Result<Node, Error> {
    let (cpus, mem) = spec.rsplit_once(':').ok_or_else(|| bad(format!("node {i}: '{spec}' is not CPUS:MEM")))?;
    let (num, mult) = match mem.chars().last() {
        Some('G' | 'g') => (&mem[..mem.len() - 1], 1024),
        Some('M' | 'm') => (&mem[..mem.len() - 1], 1),
        _ => (mem, 1),
    };
    let mem_mib =
        num.parse::<u64>().map_err(|_| bad(format!("node {i}: bad memory size '{mem}' (e.g. 512M, 1G, 0)")))? * mult;
    let cpus = match cpus {
        "-" => Vec::new(),
        "" => return Err(bad(format!("node {i}: empty CPU list (use - for a memory-only node)"))),
        list => parse_cpulist(list).map_err(|_| bad(format!("node {i}: bad CPU list '{list}'")))?,
    };
    Ok(Node { cpus, mem_mib })
}

/// `A-B=V` (both directions) or `A>B=V` (one way) as in `--dist`.
fn parse_dist(spec: &str, n: usize) -> Result<(usize, usize, bool, u32), Error> {
    let err = || bad(format!("bad distance '{spec}' (want A-B=V or A>B=V)"));
    let (pair, v) = spec.split_once('=').ok_or_else(err)?;
    let (both, (a, b)) = match (pair.split_once('-'), pair.split_once('>')) {
        (Some(p), None) => (true, p),
        (None, Some(p)) => (false, p),
        _ => return Err(err()),
    };
    let (a, b): (usize, usize) = (a.parse().map_err(|_| err())?, b.parse().map_err(|_| err())?);
    if let Some(x) = [a, b].into_iter().find(|&x| x >= n) {
        return Err(bad(format!("distance '{spec}': no node {x} (nodes are 0..{})", n - 1)));
    }
    let v: u32 = v.parse().map_err(|_| bad(format!("distance '{spec}': '{v}' is not a number")))?;
    if a == b && v != 10 {
        return Err(bad(format!("distance '{spec}': self-distance of node {a} must be 10")));
    }
    if a != b && !(11..=254).contains(&v) {
        return Err(bad(format!("distance '{spec}': must be 11..254 between different nodes")));
    }
    Ok((a, b, both, v))
}

/// `I-T=LAT:BW` as in `--hmat-lb`.
fn parse_lb(spec: &str, n: usize) -> Result<HmatLb, Error> {
    let err = || bad(format!("bad --hmat-lb '{spec}' (want I-T=LATENCY_NS:BANDWIDTH_MIB_S)"));
    let (pair, vals) = spec.split_once('=').ok_or_else(err)?;
    let (i, t) = pair.split_once('-').ok_or_else(err)?;
    let (lat, bw) = vals.split_once(':').ok_or_else(err)?;
    let (initiator, target): (usize, usize) = (i.parse().map_err(|_| err())?, t.parse().map_err(|_| err())?);
    if let Some(x) = [initiator, target].into_iter().find(|&x| x >= n) {
        return Err(bad(format!("--hmat-lb '{spec}': no node {x} (nodes are 0..{})", n - 1)));
    }
    let (latency_ns, bandwidth_mib_s) = (lat.parse().map_err(|_| err())?, bw.parse().map_err(|_| err())?);
    Ok(HmatLb { initiator, target, latency_ns, bandwidth_mib_s })
}

/// Fills in what `--sockets/--dies/--cores/--threads` left out, as `numakit-vm` does.
fn resolve_smp(nodes: &[Node], given: [Option<u32>; 4]) -> Result<Smp, Error> {
    let ncpu = nodes.iter().map(|n| n.cpus.len() as u32).sum::<u32>();
    let [sockets, dies, cores, threads] = given;
    if given.iter().all(Option::is_none) {
        return Ok(Smp::derive(nodes));
    }
    let (dies, threads) = (dies.unwrap_or(1), threads.unwrap_or(1));
    let cores = if sockets.is_none() && cores.is_none() { Some(1) } else { cores };
    let per = dies * threads * sockets.unwrap_or(1) * cores.unwrap_or(1);
    let missing = if sockets.is_none() || cores.is_none() {
        if per == 0 || ncpu % per != 0 {
            return Err(bad(format!(
                "{ncpu} CPUs cannot be split into groups of {per} (--sockets/--dies/--cores/--threads)"
            )));
        }
        ncpu / per
    } else {
        0
    };
    Ok(Smp { sockets: sockets.unwrap_or(missing), dies, cores: cores.unwrap_or(missing), threads })
}

/// Entries of the named topologies file: name -> options.
fn named_entries() -> BTreeMap<String, Vec<String>> {
    named_lines().into_iter().collect()
}

fn named_lines() -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for line in NAMED.lines() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let mut words = trimmed.split_whitespace().map(String::from);
        if line.starts_with(char::is_whitespace) {
            if let Some(last) = out.last_mut() {
                last.1.extend(words);
            }
        } else if let Some(name) = words.next() {
            out.push((name, words.collect()));
        }
    }
    out
}

#[cfg(test)]
mod tests;
