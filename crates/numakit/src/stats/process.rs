//! Memory of processes per node, split as numastat -p splits it (Huge,
//! Heap, Stack, Private = everything else), and its locality: the share of
//! the process's own memory that sits on the nodes where its threads last
//! ran. Its own memory is what its placement decides: anonymous memory,
//! heap, stack, huge pages and shared memory (tmpfs, memfd, SysV). Pages of
//! ordinary files (libraries, the page cache) are left out of locality:
//! they sit where whoever first read the file put them, so a process bound
//! to one node would otherwise never be 100% local.
//!
//! Cost: `numa_maps` takes the process's mmap lock and costs about 0.14 ms
//! of kernel time per process, so a process is first found through its
//! cheap `stat` file ([`select`]) and `numa_maps` is read once, only for
//! the processes a view shows ([`read_process`]). Processes that exit
//! meanwhile are skipped; those that cannot be read (permissions) are
//! counted, never fatal.

use std::collections::BTreeMap;

use serde::Serialize;

use super::rate::ratio;
use crate::procs::{self, numa_maps, KindView, MappingKind, NumaMapping, ProcStat};
use crate::sets::NodeSet;
use crate::sys::{SysError, SysRoot};
use crate::topo::Topology;

/// A process's memory on one node, in bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct NodeBytes {
    /// Node id.
    pub id: u32,
    /// All of it.
    pub bytes: u64,
    /// hugetlbfs mappings.
    pub huge_bytes: u64,
    /// The heap.
    pub heap_bytes: u64,
    /// The stack.
    pub stack_bytes: u64,
    /// Everything else (anonymous and file mappings), as numastat counts it.
    pub private_bytes: u64,
}

/// One process's memory per node and its locality.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProcessNuma {
    /// Process id.
    pub pid: i32,
    /// Command name.
    pub comm: String,
    /// Every node of the machine (zeros included), sorted by id.
    pub nodes: Vec<NodeBytes>,
    /// Sum over the nodes.
    pub total_bytes: u64,
    /// Nodes of the CPUs its threads last ran on.
    pub cpus_nodes: NodeSet,
    /// Its own memory ([`is_own_memory`]: everything but pages of
    /// ordinary files), bytes.
    pub own_bytes: u64,
    /// The part of `own_bytes` on `cpus_nodes`.
    pub own_local_bytes: u64,
    /// Share (0..=1) of its own memory (not ordinary file pages) on
    /// `cpus_nodes` (`own_local_bytes / own_bytes`); `None` without such
    /// memory or without a known CPU.
    pub locality: Option<f64>,
}

impl ProcessNuma {
    /// Bytes on node `id`.
    pub fn bytes_on(&self, id: u32) -> u64 {
        self.nodes.iter().find(|n| n.id == id).map_or(0, |n| n.bytes)
    }
}

/// Whether a mapping's pages are placed by the process's own policy:
/// anonymous, heap, stack, huge pages, and shared memory backed by tmpfs
/// (`/dev/shm`, `memfd:`, SysV segments, `/dev/zero`).
pub fn is_own_memory(m: &NumaMapping) -> bool {
    match &m.kind {
        MappingKind::File(path) => is_shared_memory_path(path),
        _ => true,
    }
}

/// Whether a file mapping is shared memory placed by the process's own
/// policy (tmpfs-backed: `/dev/shm`, `memfd:`, SysV segments, `/dev/zero`).
pub fn is_shared_memory_path(path: &str) -> bool {
    ["/dev/shm/", "/memfd:", "/SYSV", "/dev/zero", "/anon_hugepage"].iter().any(|p| path.starts_with(p))
}

/// numastat's category of a mapping.
#[derive(Clone, Copy)]
enum Category {
    Huge,
    Heap,
    Stack,
    Private,
}

/// Sums per node and category, and the own memory for locality.
struct Sum<'a> {
    /// Sorted by id (a handful of nodes: a vector beats a map).
    per: Vec<NodeBytes>,
    cpus_nodes: &'a NodeSet,
    own: u64,
    own_local: u64,
}

impl<'a> Sum<'a> {
    fn new(node_ids: &[u32], cpus_nodes: &'a NodeSet) -> Self {
        let mut per: Vec<NodeBytes> = node_ids.iter().map(|&id| NodeBytes { id, ..Default::default() }).collect();
        per.sort_by_key(|n| n.id);
        per.dedup_by_key(|n| n.id);
        Sum { per, cpus_nodes, own: 0, own_local: 0 }
    }

    fn add(&mut self, cat: Category, own: bool, bytes_per_node: impl Iterator<Item = (u32, u64)>) {
        for (node, b) in bytes_per_node {
            if own {
                self.own = self.own.saturating_add(b);
                if self.cpus_nodes.contains(node) {
                    self.own_local = self.own_local.saturating_add(b);
                }
            }
            let i = match self.per.binary_search_by_key(&node, |n| n.id) {
                Ok(i) => i,
                Err(i) => {
                    self.per.insert(i, NodeBytes { id: node, ..Default::default() });
                    i
                }
            };
            let e = &mut self.per[i];
            e.bytes = e.bytes.saturating_add(b);
            let by_kind = match cat {
                Category::Huge => &mut e.huge_bytes,
                Category::Heap => &mut e.heap_bytes,
                Category::Stack => &mut e.stack_bytes,
                Category::Private => &mut e.private_bytes,
            };
            *by_kind = by_kind.saturating_add(b);
        }
    }

    fn finish(self, pid: i32, comm: &str) -> ProcessNuma {
        let nodes = self.per;
        let total_bytes = nodes.iter().fold(0u64, |a, n| a.saturating_add(n.bytes));
        let locality = if self.cpus_nodes.is_empty() { None } else { ratio(self.own_local, self.own) };
        ProcessNuma {
            pid,
            comm: comm.to_string(),
            nodes,
            total_bytes,
            cpus_nodes: self.cpus_nodes.clone(),
            own_bytes: self.own,
            own_local_bytes: self.own_local,
            locality,
        }
    }
}

/// Sums `maps` per node and kind. `node_ids` are the machine's nodes (each
/// gets an entry); nodes the maps name beyond them are added.
pub fn summarize(pid: i32, comm: &str, maps: &[NumaMapping], node_ids: &[u32], cpus_nodes: NodeSet) -> ProcessNuma {
    let mut sum = Sum::new(node_ids, &cpus_nodes);
    for m in maps {
        let cat = match m.kind {
            MappingKind::Huge => Category::Huge,
            MappingKind::Heap => Category::Heap,
            MappingKind::Stack => Category::Stack,
            MappingKind::File(_) | MappingKind::Anon => Category::Private,
        };
        sum.add(cat, is_own_memory(m), m.bytes_per_node());
    }
    sum.finish(pid, comm)
}

/// [`summarize`] straight from `numa_maps` text, without building the
/// mappings (the per-process cost of `stat -p` over many processes).
pub fn summarize_text(pid: i32, comm: &str, text: &str, node_ids: &[u32], cpus_nodes: NodeSet) -> ProcessNuma {
    let mut sum = Sum::new(node_ids, &cpus_nodes);
    for v in numa_maps::views(text) {
        let (cat, own) = match v.kind {
            KindView::Huge => (Category::Huge, true),
            KindView::Heap => (Category::Heap, true),
            KindView::Stack => (Category::Stack, true),
            KindView::File(path) => (Category::Private, is_shared_memory_path(path)),
            KindView::Anon => (Category::Private, true),
        };
        sum.add(cat, own, v.bytes_per_node());
    }
    sum.finish(pid, comm)
}

/// Why a process could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skip {
    /// It exited.
    Exited,
    /// Permission denied (another user's process, without privileges).
    Denied,
}

/// Sorts a read failure of a process file: gone, denied, or a real error.
pub fn skip_reason(e: &SysError) -> Option<Skip> {
    let SysError::Io { source, .. } = e else { return None };
    match source.raw_os_error() {
        Some(libc::ESRCH) | Some(libc::ENOENT) => Some(Skip::Exited),
        Some(libc::EACCES) | Some(libc::EPERM) => Some(Skip::Denied),
        _ => None,
    }
}

/// Reads one process's threads' CPUs and `numa_maps` (each file once) and
/// sums them. `Err(Ok(skip))`: it exited or cannot be read.
pub fn read_process(sys: &SysRoot, topo: &Topology, stat: &ProcStat) -> Result<Result<ProcessNuma, Skip>, SysError> {
    let node_ids: Vec<u32> = topo.nodes.iter().map(|n| n.id).collect();
    let cpus = match procs::thread_cpus(sys, stat) {
        Ok(c) => c,
        Err(e) => return skip_reason(&e).map(Err).ok_or(e),
    };
    let text = match procs::read_numa_maps_text(sys, stat.pid) {
        Ok(Some(t)) => t,
        Ok(None) => return Ok(Err(Skip::Exited)),
        Err(e) => return skip_reason(&e).map(Err).ok_or(e),
    };
    let cpus_nodes: NodeSet = cpus.iter().filter_map(|&c| topo.node_of_cpu(c)).collect();
    Ok(Ok(summarize_text(stat.pid, &stat.comm, &text, &node_ids, cpus_nodes)))
}

/// The processes a list of `PID`s and name patterns designates.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    /// Their `stat`, sorted by pid, without duplicates.
    pub stats: Vec<ProcStat>,
    /// PIDs given that do not exist (or exited before being read).
    pub exited: Vec<i32>,
    /// Patterns that matched no process.
    pub unmatched: Vec<String>,
}

/// Finds processes by PID or by a pattern found in their command name or
/// command line (like numastat -p), reading each process's `stat` once and
/// `cmdline` only when the name does not match. `exclude` (numakit itself)
/// never matches a pattern.
pub fn select(sys: &SysRoot, specs: &[String], exclude: Option<i32>) -> Result<Selection, SysError> {
    let mut sel = Selection::default();
    let mut by_pid: BTreeMap<i32, ProcStat> = BTreeMap::new();
    let (numbers, patterns): (Vec<&String>, Vec<&String>) =
        specs.iter().partition(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()));
    let mut pids: Vec<i32> = Vec::new();
    for s in numbers {
        match s.parse::<i32>() {
            Ok(pid) => pids.push(pid),
            Err(_) => sel.unmatched.push(s.clone()),
        }
    }
    pids.sort_unstable();
    pids.dedup();
    for (pid, r) in pids.iter().zip(super::par_map(&pids, |&pid| procs::read_proc_stat(sys, pid))) {
        match r {
            Ok(Some(st)) => {
                by_pid.insert(*pid, st);
            }
            Ok(None) => sel.exited.push(*pid),
            Err(e) if skip_reason(&e).is_some() => sel.exited.push(*pid),
            Err(e) => return Err(e),
        }
    }
    if !patterns.is_empty() {
        let mut found = vec![false; patterns.len()];
        for pid in procs::list_pids(sys)? {
            if Some(pid) == exclude {
                continue;
            }
            let st = match by_pid.get(&pid) {
                Some(st) => st.clone(),
                None => match procs::read_proc_stat(sys, pid) {
                    Ok(Some(st)) => st,
                    Ok(None) => continue,
                    Err(e) if skip_reason(&e).is_some() => continue,
                    Err(e) => return Err(e),
                },
            };
            let mut cmdline: Option<String> = None;
            let mut hit = false;
            for (i, p) in patterns.iter().enumerate() {
                let m = st.comm.contains(p.as_str()) || {
                    if cmdline.is_none() {
                        cmdline = Some(procs::pidstat::read_cmdline(sys, pid).ok().flatten().unwrap_or_default());
                    }
                    cmdline.as_deref().is_some_and(|c| c.contains(p.as_str()))
                };
                if m {
                    found[i] = true;
                    hit = true;
                }
            }
            if hit {
                by_pid.insert(pid, st);
            }
        }
        sel.unmatched.extend(patterns.iter().zip(found).filter(|(_, f)| !f).map(|(p, _)| (*p).clone()));
    }
    sel.stats = by_pid.into_values().collect();
    Ok(sel)
}

/// What reading a set of processes gave.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ProcessReport {
    /// The processes read, in the order given.
    pub processes: Vec<ProcessNuma>,
    /// PIDs that exited before or while being read.
    pub exited: Vec<i32>,
    /// PIDs that could not be read (permissions).
    pub unreadable: Vec<i32>,
}

/// Reads every selected process ([`read_process`]), a few at a time
/// ([`super::par_map`]).
pub fn read_processes(sys: &SysRoot, topo: &Topology, stats: &[ProcStat]) -> Result<ProcessReport, SysError> {
    let mut r = ProcessReport::default();
    for (st, read) in stats.iter().zip(super::par_map(stats, |st| read_process(sys, topo, st))) {
        match read? {
            Ok(p) => r.processes.push(p),
            Err(Skip::Exited) => r.exited.push(st.pid),
            Err(Skip::Denied) => r.unreadable.push(st.pid),
        }
    }
    Ok(r)
}

/// The `n` processes with the most resident memory (kernel threads left
/// out), from one `stat` read each.
pub fn top_by_rss(sys: &SysRoot, n: usize) -> Result<Vec<ProcStat>, SysError> {
    let mut all = Vec::new();
    for pid in procs::list_pids(sys)? {
        match procs::read_proc_stat(sys, pid) {
            Ok(Some(st)) if !st.is_kernel_thread() => all.push(st),
            Ok(_) => {}
            Err(e) if skip_reason(&e).is_some() => {}
            Err(e) => return Err(e),
        }
    }
    all.sort_by(|a, b| b.rss_pages.cmp(&a.rss_pages).then(a.pid.cmp(&b.pid)));
    all.truncate(n);
    Ok(all)
}

/// numastat's memory categories of a process (`numastat -p`), in its row
/// order: Huge, Heap, Stack, Private.
pub const NUMASTAT_CATEGORIES: [&str; 4] = ["Huge", "Heap", "Stack", "Private"];

/// A process's memory per node as numastat 2.0.16 counts it, in bytes:
/// `(node, [huge, heap, stack, private])` sorted by node.
pub type NumastatUsage = Vec<(u32, [u64; 4])>;

/// Sums `numa_maps` text the way numastat does (`numastat -p`): the text
/// is read in pieces of at most 2047 bytes (its `fgets` buffer), a piece's
/// category is set by the first token starting with `huge`, `heap` or
/// `stack` (else Private), and every token `N<node>=<pages>` adds pages of
/// `page_bytes`, or of `huge_page_bytes` (the default huge page size,
/// whatever the mapping's own page size) in the Huge category. Nodes not
/// in `node_ids` are left out. `Err` on a token `N...` without `=` after
/// the node number (numastat stops with "node value parse error").
pub fn numastat_usage(
    text: &str,
    node_ids: &[u32],
    page_bytes: u64,
    huge_page_bytes: u64,
) -> Result<NumastatUsage, String> {
    let mut out: NumastatUsage = node_ids.iter().map(|&id| (id, [0u64; 4])).collect();
    out.sort_by_key(|(id, _)| *id);
    out.dedup_by_key(|(id, _)| *id);
    for line in text.split_inclusive('\n') {
        for piece in line.as_bytes().chunks(2047) {
            let piece = String::from_utf8_lossy(piece);
            let mut category = 3;
            for tok in piece.split([' ', '\t', '\r', '\n']).filter(|t| !t.is_empty()) {
                if category == 3 {
                    if let Some(c) = ["huge", "heap", "stack"].iter().position(|k| tok.starts_with(k)) {
                        category = c;
                    }
                }
                let Some(rest) = tok.strip_prefix('N') else { continue };
                let (node, after) = c_strtol(rest);
                let Some(value) = after.strip_prefix('=') else {
                    return Err(format!("node value parse error in {}", crate::text::quote(tok)));
                };
                let pages = c_strtol(value).0.max(0) as u64;
                let size = if category == 0 { huge_page_bytes } else { page_bytes };
                if let Some((_, cats)) = out.iter_mut().find(|(id, _)| i64::from(*id) == node) {
                    cats[category] = cats[category].saturating_add(pages.saturating_mul(size));
                }
            }
        }
    }
    Ok(out)
}

/// C's `strtol(s, &end, 10)`: optional blanks and sign, then digits
/// (saturating); the value (0 without digits) and the rest after them.
fn c_strtol(s: &str) -> (i64, &str) {
    let t = s.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let (neg, body) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let digits = body.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return (0, s);
    }
    let mut v: i64 = 0;
    for b in body[..digits].bytes() {
        v = v.saturating_mul(10).saturating_add(i64::from(b - b'0'));
    }
    (if neg { -v } else { v }, &body[digits..])
}

/// The `Name:` of `/proc/PID/status` as numastat shows it (blanks after
/// the colon skipped); `None` if the process is gone or unreadable.
pub fn status_name(sys: &SysRoot, pid: i32) -> Option<String> {
    let text = sys.read_bytes(format!("proc/{pid}/status")).ok()??;
    let text = String::from_utf8_lossy(&text);
    crate::sys::status_field(&text, "Name:").map(|v| v.trim_start().to_string())
}

/// The PIDs numastat finds for a pattern (`numastat NAME`, `-p NAME`):
/// those whose `Name:` and command line (NULs as spaces), joined by a
/// space and cut at 2047 bytes, contain `pattern`; `own` (the caller) is
/// left out. In `/proc` order.
pub fn numastat_find(sys: &SysRoot, pattern: &str, own: i32) -> Result<Vec<i32>, SysError> {
    let mut found = Vec::new();
    for pid in procs::list_pids(sys)? {
        let mut buf: Vec<u8> = status_name(sys, pid).unwrap_or_default().into_bytes();
        if let Ok(Some(cmdline)) = sys.read_bytes(format!("proc/{pid}/cmdline")) {
            buf.push(b' ');
            buf.extend(cmdline.iter().map(|&b| if b == 0 { b' ' } else { b }));
            buf.truncate(2047);
        }
        let hay = String::from_utf8_lossy(&buf);
        if hay.contains(pattern) && pid != own {
            found.push(pid);
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {

    #[test]
    fn numastat_usage_counts_as_numastat() {
        let text = "1000 default heap anon=3 dirty=3 N0=2 N1=1 kernelpagesize_kB=4\n\
                    2000 default stack anon=1 N1=1 kernelpagesize_kB=4\n\
                    3000 default file=/hugetlb/x huge dirty=1 N0=1 kernelpagesize_kB=1048576\n\
                    4000 default file=/lib/x.so mapped=5 N0=5 N7=9 kernelpagesize_kB=4\n";
        let u = numastat_usage(text, &[1, 0], 4096, 2 << 20).expect("parse");
        // Huge pages at the default huge page size, whatever their own size.
        assert_eq!(u, vec![(0, [2 << 20, 2 * 4096, 0, 5 * 4096]), (1, [0, 4096, 4096, 0])]);
        assert!(numastat_usage("1000 default N0x=1\n", &[0], 4096, 0).is_err());
    }
    use super::*;

    const MAPS: &str = "7f2c1a000000 bind:1 anon=2560 dirty=2560 N1=2560 kernelpagesize_kB=4
01b4c000 default heap anon=33 dirty=33 N0=30 N1=3 kernelpagesize_kB=4
7f00 default file=/usr/lib/x.so mapped=3 N0=3 kernelpagesize_kB=4
7fff default stack anon=5 dirty=5 N0=5 kernelpagesize_kB=4
7f40 default file=/anon_hugepage\\040(deleted) huge dirty=1 N1=1 kernelpagesize_kB=1048576
";

    #[test]
    fn split_like_numastat_with_locality() {
        let maps = numa_maps::parse(MAPS);
        let p = summarize(7, "x", &maps, &[0, 1, 2], [1].into_iter().collect());
        assert_eq!(p.nodes.len(), 3);
        let n0 = &p.nodes[0];
        assert_eq!(
            (n0.heap_bytes, n0.stack_bytes, n0.private_bytes, n0.huge_bytes),
            (30 * 4096, 5 * 4096, 3 * 4096, 0)
        );
        let n1 = &p.nodes[1];
        assert_eq!((n1.heap_bytes, n1.private_bytes, n1.huge_bytes), (3 * 4096, 2560 * 4096, 1 << 30));
        assert_eq!(n1.bytes, n1.heap_bytes + n1.private_bytes + n1.huge_bytes);
        assert_eq!(p.nodes[2].bytes, 0);
        assert_eq!(p.total_bytes, (38 + 2563) * 4096 + (1 << 30));
        // The file mapping (3 pages on node 0) is not its own memory.
        let want = (2563 * 4096 + (1u64 << 30)) as f64 / (p.total_bytes - 3 * 4096) as f64;
        assert!((p.locality.expect("locality") - want).abs() < 1e-12);
        assert_eq!((p.own_bytes, p.own_local_bytes), (p.total_bytes - 3 * 4096, 2563 * 4096 + (1 << 30)));
        assert_eq!(summarize(7, "x", &maps, &[0, 1], NodeSet::new()).locality, None);
        assert_eq!(summarize(7, "x", &[], &[0, 1], [0].into_iter().collect()).locality, None);
    }

    #[test]
    fn sums_saturate() {
        // Each mapping's bytes saturate; so do their sums over mappings
        // and nodes (they overflowed: a panic in debug builds).
        let t = "1000 default anon=1 N0=18446744073709551615 kernelpagesize_kB=4\n\
                 2000 default heap anon=1 N0=5 N1=18446744073709551615 kernelpagesize_kB=4\n";
        let p = summarize_text(1, "x", t, &[0, 1], NodeSet::first_n(1));
        assert_eq!((p.total_bytes, p.bytes_on(0), p.bytes_on(1)), (u64::MAX, u64::MAX, u64::MAX));
        assert_eq!(p, summarize(1, "x", &numa_maps::parse(t), &[0, 1], NodeSet::first_n(1)));
        assert_eq!(crate::procs::bytes_per_node(&numa_maps::parse(t)).get(&0), Some(&u64::MAX));
    }

    #[test]
    fn file_pages_do_not_count_for_locality() {
        let maps = numa_maps::parse(
            "1000 bind:2 anon=100 N2=100 kernelpagesize_kB=4\n\
             2000 bind:2 file=/usr/lib/libc.so.6 mapped=50 N0=50 kernelpagesize_kB=4\n\
             3000 bind:2 file=/memfd:pool\\040(deleted) dirty=10 N2=10 kernelpagesize_kB=4\n",
        );
        let p = summarize(1, "b", &maps, &[0, 1, 2], [2].into_iter().collect());
        assert_eq!((p.locality, p.bytes_on(0), p.total_bytes), (Some(1.0), 50 * 4096, 160 * 4096));
        assert!(!is_own_memory(&maps[1]) && is_own_memory(&maps[2]));
    }

    #[test]
    fn text_and_parsed_agree() {
        let cpus: NodeSet = [1].into_iter().collect();
        let a = summarize(7, "x", &numa_maps::parse(MAPS), &[0, 1, 2], cpus.clone());
        assert_eq!(summarize_text(7, "x", MAPS, &[0, 1, 2], cpus), a);
    }

    #[test]
    fn half_and_half_is_half_local() {
        let maps = numa_maps::parse("1000 interleave:0-1 anon=200 N0=100 N1=100 kernelpagesize_kB=4\n");
        let p = summarize(1, "i", &maps, &[0, 1], [0].into_iter().collect());
        assert_eq!(p.locality, Some(0.5));
    }

    #[test]
    fn live_self_and_gone() {
        let sys = SysRoot::live();
        let topo = Topology::read_nodes_only(&sys).expect("topo");
        let me = std::process::id() as i32;
        let specs = vec![me.to_string(), i32::MAX.to_string(), "no-such-process-name-xyz".to_string()];
        let sel = select(&sys, &specs, None).expect("select");
        assert_eq!(sel.stats.len(), 1);
        assert_eq!((sel.exited.clone(), sel.unmatched.clone()), (vec![i32::MAX], vec![specs[2].clone()]));
        let r = read_processes(&sys, &topo, &sel.stats).expect("read");
        assert_eq!(r.processes.len(), 1);
        let p = &r.processes[0];
        assert!(p.total_bytes > 0 && !p.cpus_nodes.is_empty(), "{p:?}");
        assert_eq!(p.locality, Some(1.0).filter(|_| topo.nodes.len() == 1).or(p.locality));
        let top = top_by_rss(&sys, 3).expect("top");
        assert!(top.len() <= 3 && top.windows(2).all(|w| w[0].rss_pages >= w[1].rss_pages));
    }

    #[test]
    fn errors_sorted() {
        let io =
            |code| SysError::Io { path: "/proc/1/numa_maps".into(), source: std::io::Error::from_raw_os_error(code) };
        assert_eq!(skip_reason(&io(libc::ESRCH)), Some(Skip::Exited));
        assert_eq!(skip_reason(&io(libc::EACCES)), Some(Skip::Denied));
        assert_eq!(skip_reason(&io(libc::EIO)), None);
    }
}
