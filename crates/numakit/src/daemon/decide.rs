//! The decision core: one pure function from (machine, snapshot, config,
//! history) to (actions, new history). See the module docs of
//! [`daemon`](super) for the rules; this file is their implementation.

use std::collections::BTreeMap;

use super::action::{Action, ActionKind, Why};
use super::bandwidth::{self, NodeLoad};
use super::config::Config;
use super::history::{History, Placement, ProcRecord};
use super::machine::Machine;
use super::snapshot::{MemPolicy, ProcInfo, Snapshot};
use crate::sets::NodeSet;

const GIB: f64 = (1u64 << 30) as f64;

/// The outcome of one scan.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// Actions in the order to apply them (reverts and owed migrations
    /// first, then new moves best first, then the reasons for keeping).
    pub actions: Vec<Action>,
    /// The history to pass to the next call (and to persist).
    pub history: History,
}

impl Decision {
    /// Actions that change something.
    pub fn changes(&self) -> impl Iterator<Item = &Action> {
        self.actions.iter().filter(|a| a.changes())
    }
}

/// The machine prepared for one decision: ratios and home memory per node.
struct View<'a> {
    m: &'a Machine,
    r: Vec<Vec<f64>>,
    homes: Vec<Vec<usize>>,
    /// Nodes with CPUs.
    all_cpu: NodeSet,
}

impl View<'_> {
    fn n(&self) -> usize {
        self.m.len()
    }
    fn cpus(&self, i: usize) -> f64 {
        f64::from(self.m.nodes[i].cpus)
    }
    fn by_id(&self, map: impl Iterator<Item = (u32, f64)>) -> Vec<f64> {
        let mut v = vec![0.0; self.n()];
        for (id, x) in map {
            if let Some(i) = self.m.index(id) {
                v[i] += x;
            }
        }
        v
    }
    fn ids(&self, idx: &[usize]) -> NodeSet {
        idx.iter().map(|&i| self.m.nodes[i].id).collect()
    }
    fn idx(&self, set: &NodeSet) -> Vec<usize> {
        set.iter().filter_map(|id| self.m.index(id)).collect()
    }
    /// Σ c_a m_b r_ab over the non-zero entries.
    fn ratio(&self, c: &[f64], mem: &[f64]) -> f64 {
        self.ratio_k(c, mem, &[])
    }
    /// Σ c_a m_b r_ab k_b: with each memory node's contention factor `k`
    /// (empty: all 1).
    fn ratio_k(&self, c: &[f64], mem: &[f64], k: &[f64]) -> f64 {
        let cs: Vec<(usize, f64)> = c.iter().copied().enumerate().filter(|x| x.1 > 0.0).collect();
        let ms: Vec<(usize, f64)> = mem.iter().copied().enumerate().filter(|x| x.1 > 0.0).collect();
        let (ct, mt): (f64, f64) = (cs.iter().map(|x| x.1).sum(), ms.iter().map(|x| x.1).sum());
        if ct <= 0.0 || mt <= 0.0 {
            return 1.0;
        }
        let mut s = 0.0;
        for &(a, ca) in &cs {
            let row = &self.r[a];
            s += ca * ms.iter().map(|&(b, mb)| mb * row[b] * k.get(b).copied().unwrap_or(1.0)).sum::<f64>();
        }
        s / (ct * mt)
    }
    /// Share of accesses that go to the CPU node's home memory.
    fn locality(&self, c: &[f64], mem: &[f64]) -> f64 {
        let (ct, mt): (f64, f64) = (c.iter().sum(), mem.iter().sum());
        if ct <= 0.0 || mt <= 0.0 {
            return 1.0;
        }
        let mut s = 0.0;
        for (a, &ca) in c.iter().enumerate().filter(|(_, x)| **x > 0.0) {
            s += ca * self.homes[a].iter().map(|&b| mem[b]).sum::<f64>();
        }
        s / (ct * mt)
    }
}

/// Free resources, updated as moves are committed within one scan.
struct Book {
    free_cpus: Vec<f64>,
    free_bytes: Vec<f64>,
    /// CPU load the scheduler cannot move (restricted affinity).
    bound: Vec<f64>,
    /// Part of `bound` that numakit itself placed (it may undo those to make
    /// room for a bigger gain).
    ours: Vec<f64>,
    /// numakit's placements: pid, load per node, expected gain.
    pins: Vec<(i32, Vec<f64>, f64)>,
    /// Memory per CPU of the processes running on each node.
    mem_per_cpu: Vec<f64>,
    /// Memory (bytes, each process's in proportion to its CPU use there) and
    /// CPU use of the processes running on each node.
    node_mem: Vec<f64>,
    node_cpu: Vec<f64>,
    /// Memory per CPU of every process, over the machine.
    mem_per_cpu_all: f64,
    /// Memory nodes' bandwidth utilisation and the processes' exposure to
    /// it (empty when bandwidth is not known).
    load: NodeLoad,
}

/// Memory per CPU of the processes other than `f`'s running on node `a`:
/// what follows a thread that `f` displaces from there (its own memory
/// does not follow the threads it displaces). When the snapshot shows
/// nobody else there, the machine's average per CPU (as for a node
/// without CPU use).
fn others_mem_per_cpu(book: &Book, f: &Facts, a: usize) -> f64 {
    let own_cpu: f64 = f.own_cpu.iter().sum();
    let own_mem = if own_cpu > 0.0 { f.mem_total * f.own_cpu[a] / own_cpu } else { 0.0 };
    let cpu = book.node_cpu[a] - f.own_cpu[a];
    if cpu > 1e-9 {
        (book.node_mem[a] - own_mem).max(0.0) / cpu
    } else {
        book.mem_per_cpu_all
    }
}

/// Memory a move must leave free on a node: the configured margin, and at
/// least what one more CPU's worth of the processes running there uses, so
/// that moved pages do not push the next job's first touch to a slower node.
fn headroom(book: &Book, cfg: &Config, b: usize) -> f64 {
    (cfg.mem_margin_bytes as f64).max(book.mem_per_cpu[b])
}

/// How a process fits a node set.
#[derive(Debug, Clone, PartialEq)]
struct Fit {
    /// Load of other processes that has to move away.
    displaced: f64,
    /// Part of it that numakit placed and has to unpin, in all.
    unpin: f64,
    /// ... of which on each node (so every node's bound load fits it).
    unpin_at: Vec<f64>,
}

/// Where a process's threads run after a move to `t`: those inside `t`
/// stay, the rest spread over `t` by CPU count (fractions).
fn spread(v: &View, f: &Facts, t: &[usize]) -> Vec<f64> {
    let cap: f64 = t.iter().map(|&a| v.cpus(a)).sum::<f64>().max(1e-12);
    let inside: f64 = t.iter().map(|&a| f.c[a]).sum();
    let total: f64 = f.c.iter().sum::<f64>().max(1e-12);
    let mut c = vec![0.0; v.n()];
    for &a in t {
        c[a] = f.c[a] / total + (1.0 - inside / total) * v.cpus(a) / cap;
    }
    c
}

/// numakit's placements a process of load `need` may undo: those of at most
/// a quarter of its size (no musical chairs between equals).
fn undoable<'b>(book: &'b Book, f: &'b Facts, need: f64) -> impl Iterator<Item = &'b (i32, Vec<f64>, f64)> + 'b {
    book.pins.iter().filter(move |x| x.0 != f.pid && x.1.iter().sum::<f64>() * 4.0 <= need)
}

/// Whether CPU load `need` fits node set `t`, and what it displaces. It
/// fits on the idle CPUs and the process's own; beyond that it displaces
/// other unbound threads (the scheduler moves them to the CPUs the process
/// frees, or to idle CPUs elsewhere) and, when needed, numakit's own earlier
/// placements (undone to make room); never anything bound by someone else:
/// on every node of `t`, that bound load plus the process's share stays
/// within the node's CPUs.
fn cpu_fit(v: &View, f: &Facts, t: &[usize], book: &Book, need: f64) -> Option<Fit> {
    const SLACK: f64 = 0.25;
    let c_after = spread(v, f, t);
    let mut ours_at = vec![0.0; v.n()];
    for x in undoable(book, f, need) {
        for &a in t {
            ours_at[a] += x.1[a];
        }
    }
    let mut unpin_at = vec![0.0; v.n()];
    for &a in t {
        let load = c_after[a] * need;
        let bound = book.bound[a] - f.own_bound[a];
        if bound - ours_at[a] + load > v.cpus(a) + 1e-6 {
            return None;
        }
        unpin_at[a] = (bound + load - v.cpus(a)).max(0.0);
    }
    let must_unpin: f64 = unpin_at.iter().sum();
    let avail: f64 = t.iter().map(|&a| book.free_cpus[a] + f.own_cpu[a]).sum();
    let short = (need - avail).max(0.0);
    if short <= SLACK && must_unpin <= 1e-6 {
        return Some(Fit { displaced: 0.0, unpin: 0.0, unpin_at });
    }
    let unbound: f64 = t
        .iter()
        .map(|&a| (v.cpus(a) - book.free_cpus[a] - f.own_cpu[a] - (book.bound[a] - f.own_bound[a])).max(0.0))
        .sum();
    let unpin = must_unpin.max(short - unbound).max(0.0);
    if unpin > t.iter().map(|&a| ours_at[a]).sum::<f64>() + SLACK {
        return None;
    }
    let elsewhere: f64 = (0..v.n()).filter(|a| !t.contains(a)).map(|a| f.own_cpu[a] + book.free_cpus[a]).sum();
    if short > elsewhere + SLACK {
        return None;
    }
    Some(Fit { displaced: short.max(unpin), unpin, unpin_at })
}

/// One evaluated target for a process.
#[derive(Debug, Clone)]
struct Opt {
    cpu: Vec<usize>,
    mem: Vec<usize>,
    /// (from index, to index, bytes).
    moves: Vec<(usize, usize, f64)>,
    c_after: Vec<f64>,
    /// Access-time ratio now (with memory still to come where it would land).
    ratio_now: f64,
    ratio_after: f64,
    gain: f64,
    protect: f64,
    benefit_s: f64,
    cost_s: f64,
    /// Nothing moves: no page, no thread, nobody displaced; only the
    /// affinity is narrowed to where the process already runs.
    pin_only: bool,
    /// CPU load of others it displaces (what its cost was computed with).
    displaced: f64,
    /// Change in the other processes' progress through memory contention,
    /// CPUs (positive: they gain).
    others: f64,
    /// The process's share of the node load after the move.
    load_after: NodeLoad,
}

impl Opt {
    fn net(&self) -> f64 {
        self.benefit_s - self.cost_s
    }
}

/// Per-process facts used by the evaluation.
struct Facts {
    pid: i32,
    c: Vec<f64>,
    own_cpu: Vec<f64>,
    mem: Vec<f64>,
    ratio_now: f64,
    locality: f64,
    q: f64,
    measured: bool,
    allowed: Vec<usize>,
    own_bound: Vec<f64>,
    /// `own_bound` when numakit placed the process, else zeros.
    own_ours: Vec<f64>,
    /// Memory growth, bytes per second (0 until seen twice).
    growth: f64,
    /// Its memory, bytes (as the book counts it).
    mem_total: f64,
    /// Memory traffic, bytes per second (0 when not counted).
    traffic: f64,
    /// Its share of the node load now (empty when bandwidth is not known).
    load: NodeLoad,
}

fn speedup(q: f64, ratio_now: f64, ratio_after: f64) -> f64 {
    let t = (1.0 - q) + q * ratio_after / ratio_now;
    if t > 0.0 {
        1.0 / t - 1.0
    } else {
        0.0
    }
}

/// The CPUs a process needs: what it used over the window plus what its
/// threads waited for a CPU (a busy thread sharing a CPU with another uses
/// half a CPU and needs a whole one; counting only its use, three such
/// threads on a node of two CPUs look like they fit it), at most one per
/// thread. Tick accounting over a short window can read slightly above
/// what its threads can use (1.013 CPUs for one busy thread in a
/// test-bed guest), which must not make a one-thread process "larger than
/// a node" of one CPU and send it to a group of nodes.
///
/// A single-threaded process busy for at least half the window needs a
/// whole CPU: its one thread is either mostly idle or a CPU's worth of
/// work, and a busy thread's CPU time can read low in a virtual machine
/// whose hypervisor takes time the guest does not see as stolen (a busy
/// loop reads 0.6 to 0.9 CPU in a test-bed guest on a loaded host; by
/// those readings three fit a node of two CPUs).
fn demand(p: &ProcInfo) -> f64 {
    let busy = p.cpu_use + p.cpu_wait.max(0.0);
    if p.threads <= 1 && busy >= 0.5 {
        return 1.0;
    }
    busy.clamp(0.0, f64::from(p.threads.max(1)))
}

fn is_restricted(v: &View, p: &ProcInfo) -> bool {
    if p.cpuset.is_empty() {
        !v.all_cpu.is_subset(&p.affinity)
    } else {
        !p.cpuset.intersection(&v.all_cpu).is_subset(&p.affinity)
    }
}

/// What a restricted process holds on each node: its need (not only what
/// it got), on the nodes it may run on, shared as its threads ran there
/// over the window. Only its affinity's nodes: a process bound during the
/// window ran partly elsewhere, and counting that part where it ran would
/// leave half its load off the node it is now bound to.
fn held(v: &View, p: &ProcInfo, own_cpu: &[f64]) -> Vec<f64> {
    let nodes = v.idx(&p.affinity);
    let need = demand(p);
    let ran: f64 = nodes.iter().map(|&a| own_cpu[a]).sum();
    let cap: f64 = nodes.iter().map(|&a| v.cpus(a)).sum();
    let mut out = vec![0.0; v.n()];
    for &a in &nodes {
        out[a] = match (ran > 1e-9, cap > 0.0) {
            (true, _) => need * own_cpu[a] / ran,
            (false, true) => need * v.cpus(a) / cap,
            _ => 0.0,
        };
    }
    out
}

fn facts(v: &View, p: &ProcInfo, cfg: &Config, ours: bool) -> Facts {
    let own_cpu = v.by_id(p.cpu_per_node.iter().map(|(k, x)| (*k, *x)));
    let mut c = own_cpu.clone();
    if c.iter().sum::<f64>() <= 0.0 {
        for i in v.idx(&p.affinity) {
            c[i] = v.cpus(i);
        }
    }
    let mem = v.by_id(p.mem_per_node.iter().map(|(k, x)| (*k, *x as f64)));
    let scope = if p.cpuset.is_empty() { v.all_cpu.clone() } else { p.cpuset.intersection(&v.all_cpu) };
    let own_bound = if is_restricted(v, p) { held(v, p, &own_cpu) } else { vec![0.0; v.n()] };
    let (q, measured) = match p.mem_stall_share {
        Some(q) if q.is_finite() => (q.clamp(0.0, 0.95), true),
        _ => (cfg.default_stall_share, false),
    };
    Facts {
        pid: p.pid,
        ratio_now: v.ratio(&c, &mem),
        locality: v.locality(&c, &mem),
        c,
        own_cpu,
        mem,
        q,
        measured,
        allowed: v.idx(&scope),
        own_ours: if ours { own_bound.clone() } else { vec![0.0; v.n()] },
        own_bound,
        growth: 0.0,
        mem_total: p.mem_total() as f64,
        traffic: p.mem_traffic.filter(|x| x.is_finite()).unwrap_or(0.0).max(0.0),
        load: NodeLoad::default(),
    }
}

/// Node sets worth evaluating: every allowed CPU node, and when the
/// process is larger than a node (CPUs or memory) the nearest groups
/// grown from every node, as `place::auto` does for `run --auto` (among
/// equally near nodes, those with more CPUs the process could have: not
/// bound by others, numakit's pins it may undo counted as available).
fn target_sets(v: &View, p: &ProcInfo, f: &Facts, book: &Book) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = Vec::new();
    let need = demand(p);
    let mem_need: f64 = f.mem.iter().sum();
    let home_mem = |set: &[usize]| -> f64 {
        let mut hs: Vec<usize> = set.iter().flat_map(|&a| v.homes[a].iter().copied()).collect();
        hs.sort_unstable();
        hs.dedup();
        hs.iter().map(|&b| v.m.nodes[b].mem_bytes as f64).sum()
    };
    for &a in &f.allowed {
        if v.cpus(a) >= need && home_mem(&[a]) >= mem_need {
            out.push(vec![a]);
        }
    }
    // Grown from every node too small on its own (not only when every node
    // is): on uneven machines a process may fit a few big nodes nominally
    // while the room it needs is only to be had on groups of small ones.
    let mut avail: Vec<f64> = (0..v.n()).map(|a| v.cpus(a) - (book.bound[a] - f.own_bound[a])).collect();
    for x in undoable(book, f, need) {
        for (a, l) in x.1.iter().enumerate() {
            avail[a] += l;
        }
    }
    // (In half CPUs: fractions of spread loads do not reorder equals.)
    let avail: Vec<f64> = avail.iter().map(|x| (x * 2.0).round() / 2.0).collect();
    for &start in &f.allowed {
        let mut others: Vec<usize> = f.allowed.iter().copied().filter(|&o| o != start).collect();
        others.sort_by(|&x, &y| {
            v.r[start][x]
                .total_cmp(&v.r[start][y])
                .then(avail[y].total_cmp(&avail[x]))
                .then(v.cpus(y).total_cmp(&v.cpus(x)))
                .then(x.cmp(&y))
        });
        let mut g = vec![start];
        for o in others {
            let cap: f64 = g.iter().map(|&a| v.cpus(a)).sum();
            if cap >= need && home_mem(&g) >= mem_need {
                break;
            }
            g.push(o);
        }
        g.sort_unstable();
        if !out.contains(&g) {
            out.push(g);
        }
    }
    out
}

#[allow(clippy::too_many_arguments)]
fn evaluate(
    v: &View,
    p: &ProcInfo,
    f: &Facts,
    t: &[usize],
    book: &Book,
    cfg: &Config,
    drift_p: f64,
    unbound: bool,
    migrate: bool,
) -> Option<Opt> {
    let need = demand(p);
    let fit = cpu_fit(v, f, t, book, need)?;
    let displaced = fit.displaced;
    // Memory destinations: the home memory of the CPU nodes.
    let mut dest: Vec<usize> = t.iter().flat_map(|&a| v.homes[a].iter().copied()).collect();
    dest.sort_unstable();
    dest.dedup();
    let cpuless: Vec<usize> = if cfg.use_cpuless_memory {
        (0..v.n()).filter(|&b| v.m.nodes[b].cpus == 0 && v.m.nodes[b].mem_bytes > 0).collect()
    } else {
        Vec::new()
    };
    let best_from_t = |b: usize| t.iter().map(|&a| v.r[a][b]).fold(f64::INFINITY, f64::min);
    let mut room: Vec<f64> = (0..v.n()).map(|b| (book.free_bytes[b] - headroom(book, cfg, b)).max(0.0)).collect();
    let mut sources: Vec<usize> = (0..v.n()).filter(|b| f.mem[*b] > 0.0 && !dest.contains(b)).collect();
    sources.sort_by(|&x, &y| f.mem[y].total_cmp(&f.mem[x]).then(x.cmp(&y)));
    let page = cfg.page_bytes.max(1) as f64;
    let c_after = spread(v, f, t);
    // Each destination's share of the pages: the share of the threads it is
    // home to after the move (what first touch would have given it).
    let mut weight = vec![0.0; v.n()];
    for &a in t {
        for &b in &v.homes[a] {
            weight[b] += c_after[a] / v.homes[a].len() as f64;
        }
    }
    // How full a destination is for its share: CPU-less memory (no threads
    // of its own) counts evenly among CPU-less memory.
    let w_of = |x: usize| if cpuless.contains(&x) { 1.0 } else { weight[x] };
    let fill = |x: usize, mem: &[f64]| if w_of(x) > 0.0 { mem[x] / w_of(x) } else { f64::INFINITY };
    let mut mem_after = f.mem.clone();
    let mut moves = Vec::new();
    for b in sources.into_iter().filter(|_| migrate) {
        let mut left = f.mem[b];
        // CPU-less memory, when allowed, may keep its pages if it is no
        // farther than the destinations could be reached.
        let mut targets: Vec<usize> = dest.clone();
        targets.extend(cpuless.iter().copied().filter(|&c| c != b && best_from_t(c) < best_from_t(b)));
        if cpuless.contains(&b) && targets.len() == dest.len() && dest.iter().all(|&d| room[d] < page) {
            continue;
        }
        // Sum of the shares of the targets of each kind (fast, CPU-less).
        let w_kind =
            |slow: bool| -> f64 { targets.iter().filter(|&&x| cpuless.contains(&x) == slow).map(|&x| w_of(x)).sum() };
        let (w_fast, w_slow) = (w_kind(false), w_kind(true));
        for _ in 0..64 * targets.len().max(1) {
            if left < page {
                break;
            }
            // Fast memory first, then the destination holding the least of
            // the process for its share of the threads: its memory stays
            // spread over T's nodes as its threads are, so one node's
            // bandwidth does not carry it all, and the node that runs more
            // of its threads holds more of it.
            let Some(&d) = targets.iter().filter(|&&d| room[d] >= page).min_by(|&&x, &&y| {
                let fx = cpuless.contains(&x);
                let fy = cpuless.contains(&y);
                fx.cmp(&fy)
                    .then(fill(x, &mem_after).total_cmp(&fill(y, &mem_after)))
                    .then(mem_after[x].total_cmp(&mem_after[y]))
                    .then(x.cmp(&y))
            }) else {
                break;
            };
            // Up to the fill of the next-least-filled destination, so chunks
            // alternate between T's nodes.
            let next = targets
                .iter()
                .filter(|&&x| x != d && room[x] >= page && cpuless.contains(&x) == cpuless.contains(&d))
                .map(|&x| fill(x, &mem_after))
                .fold(f64::INFINITY, f64::min);
            // (At least d's share of what is left, and never less than 64
            // MiB at a time, so moves are not split into slivers.)
            let w_all = if cpuless.contains(&d) { w_slow } else { w_fast };
            let share = if w_all > 0.0 { left * w_of(d) / w_all } else { left / targets.len().max(1) as f64 };
            let level = if next.is_finite() && w_of(d) > 0.0 {
                (next * w_of(d) - mem_after[d]).max(share).max(64.0 * 1024.0 * 1024.0)
            } else {
                f64::INFINITY
            };
            let chunk = (left.min(room[d]).min(level) / page).floor() * page;
            if chunk < page {
                break;
            }
            room[d] -= chunk;
            left -= chunk;
            mem_after[b] -= chunk;
            mem_after[d] += chunk;
            moves.push((b, d, chunk));
        }
    }
    let inside: f64 = t.iter().map(|&a| f.c[a]).sum();
    let total: f64 = f.c.iter().sum::<f64>().max(1e-12);
    let horizon = p.age_s.min(cfg.max_horizon_s).max(0.0);
    // Memory still being allocated lands where the threads run: now on
    // their current nodes, after the move on T. Counted up to the current
    // size over the horizon.
    let future = (f.growth * horizon).min(f.mem.iter().sum::<f64>());
    let (now_m, after_m) = if future > 0.0 {
        let spread = |c: &[f64]| -> Vec<f64> {
            let ct: f64 = c.iter().sum::<f64>().max(1e-12);
            let mut m = vec![0.0; v.n()];
            for (a, &x) in c.iter().enumerate().filter(|(_, x)| **x > 0.0) {
                let hs = &v.homes[a];
                for &b in hs {
                    m[b] += future * x / ct / hs.len() as f64;
                }
            }
            m
        };
        let now_m: Vec<f64> = f.mem.iter().zip(spread(&f.c)).map(|(a, b)| a + b).collect();
        let after_m: Vec<f64> = mem_after.iter().zip(spread(&c_after)).map(|(a, b)| a + b).collect();
        (now_m, after_m)
    } else {
        (f.mem.clone(), mem_after.clone())
    };
    // Memory bandwidth: each node's contention now, and after the
    // process's traffic follows it (grown by the speed-up that brings: a
    // faster process asks for more); what that does to everyone else.
    let (k_now, k_after, others, load_after) = if book.load.active() {
        let bw = v.m.bandwidth.as_deref().unwrap_or_default();
        let mut after = book.load.clone();
        after.add(&f.load, -1.0);
        let k_now = book.load.factors();
        let with =
            |own: &[f64]| bandwidth::factors(&after.util.iter().zip(own).map(|(x, y)| x + y).collect::<Vec<_>>());
        let first = with(&bandwidth::util_of(bw, f.traffic, &c_after, &after_m));
        let up = 1.0 + speedup(f.q, v.ratio_k(&f.c, &now_m, &k_now), v.ratio_k(&c_after, &after_m, &first)).max(0.0);
        let own_util = bandwidth::util_of(bw, f.traffic * up, &c_after, &after_m);
        let k_after = with(&own_util);
        let others = bandwidth::others_gain(&after.exposure, &k_now, &k_after);
        let own = NodeLoad {
            util: own_util,
            exposure: bandwidth::exposure_of(&v.r, &k_after, p.cpu_use, f.q, &c_after, &after_m),
        };
        (k_now, k_after, others, own)
    } else {
        (Vec::new(), Vec::new(), 0.0, NodeLoad::default())
    };
    let (ratio_now, ratio_after) = if future > 0.0 || book.load.active() {
        (v.ratio_k(&f.c, &now_m, &k_now), v.ratio_k(&c_after, &after_m, &k_after))
    } else {
        (f.ratio_now, v.ratio(&c_after, &mem_after))
    };
    let gain_now = speedup(f.q, ratio_now, ratio_after);
    // Protection from drift: an unbound process may later run on another
    // allowed node; binding avoids that expected loss.
    let mut protect = 0.0;
    if cfg.pin_in_place && unbound {
        let away: Vec<usize> = f.allowed.iter().copied().filter(|a| !t.contains(a)).collect();
        if !away.is_empty() {
            let mean = away
                .iter()
                .map(|&a| {
                    let mut c1 = vec![0.0; v.n()];
                    c1[a] = 1.0;
                    v.ratio(&c1, &mem_after)
                })
                .sum::<f64>()
                / away.len() as f64;
            let loss = -speedup(f.q, ratio_after, mean);
            protect = (loss / (1.0 - loss).max(1e-9)).max(0.0) * drift_p * 0.5;
        }
    }
    let gain = gain_now + protect;
    let moved: f64 = moves.iter().map(|m| m.2).sum();
    // Displaced threads' memory has to follow them later (the same cost),
    // counted twice for the time they run remote before it does.
    let disp_mem = if displaced > 0.0 {
        let per: f64 = t.iter().map(|&a| others_mem_per_cpu(book, f, a)).sum::<f64>() / t.len().max(1) as f64;
        2.0 * displaced * per
    } else {
        0.0
    };
    let cost_s = moved / GIB * cfg.migrate_cost_s_per_gib * need.max(1.0) + disp_mem / GIB * cfg.migrate_cost_s_per_gib;
    let benefit_s = (gain * need + others) * horizon;
    let pin_only = moves.is_empty() && displaced <= 0.0 && inside >= total - 1e-9;
    Some(Opt {
        cpu: t.to_vec(),
        mem: dest,
        moves,
        c_after,
        ratio_now,
        ratio_after,
        gain,
        protect,
        benefit_s,
        cost_s,
        pin_only,
        displaced,
        others,
        load_after,
    })
}

/// The memory nodes' bandwidth load: each process's traffic as utilisation
/// of the nodes its memory is on, and then (with the contention that gives)
/// its exposure to them; each process's share is kept in its facts. Empty
/// when the machine's bandwidth is not measured or no traffic is counted.
fn node_load(v: &View, procs: &[&ProcInfo], all: &mut BTreeMap<i32, Facts>) -> NodeLoad {
    let Some(bw) = v.m.bandwidth.as_deref() else { return NodeLoad::default() };
    if !all.values().any(|f| f.traffic > 0.0) {
        return NodeLoad::default();
    }
    let mut load = NodeLoad { util: vec![0.0; v.n()], exposure: vec![0.0; v.n()] };
    for f in all.values_mut() {
        let util = bandwidth::util_of(bw, f.traffic, &f.c, &f.mem);
        for (x, y) in load.util.iter_mut().zip(&util) {
            *x += y;
        }
        f.load.util = util;
    }
    let k = load.factors();
    for p in procs {
        let Some(f) = all.get_mut(&p.pid) else { continue };
        f.load.exposure = bandwidth::exposure_of(&v.r, &k, p.cpu_use, f.q, &f.c, &f.mem);
        for (x, y) in load.exposure.iter_mut().zip(&f.load.exposure) {
            *x += y;
        }
    }
    load
}

/// The memory nodes of a placement: its memory nodes when it names them,
/// else the home memory of its CPU nodes.
fn placement_memory(v: &View, cpu_nodes: &NodeSet, mem_nodes: &NodeSet) -> Vec<usize> {
    if !mem_nodes.is_empty() {
        return v.idx(mem_nodes);
    }
    let mut d: Vec<usize> = v.idx(cpu_nodes).into_iter().flat_map(|a| v.homes[a].iter().copied()).collect();
    d.sort_unstable();
    d.dedup();
    d
}

fn excluded(p: &ProcInfo, cfg: &Config) -> Option<String> {
    if cfg.exclude_pids.contains(&p.pid) {
        return Some(format!("pid {}", p.pid));
    }
    if cfg.exclude_comms.iter().any(|c| c == &p.comm) {
        return Some(format!("command name {}", p.comm));
    }
    if let Some(c) = cfg
        .exclude_cgroups
        .iter()
        .find(|c| p.cgroup == **c || p.cgroup.starts_with(&format!("{}/", c.trim_end_matches('/'))))
    {
        return Some(format!("cgroup {c}"));
    }
    if cfg.exclude_uids.contains(&p.uid) {
        return Some(format!("uid {}", p.uid));
    }
    None
}

fn keep(pid: i32, why: Why) -> Action {
    Action { pid, kind: ActionKind::Keep, reason: why, expected_gain: 0.0 }
}

fn main_node(v: &View, p: &ProcInfo) -> Option<u32> {
    p.cpu_per_node
        .iter()
        .filter(|(id, x)| **x > 0.0 && v.m.index(**id).is_some())
        .max_by(|a, b| a.1.total_cmp(b.1).then(b.0.cmp(a.0)))
        .map(|(id, _)| *id)
}

/// Decides what to do after one scan. Pure and deterministic: the same
/// inputs give the same actions and history.
///
/// 1. Forget processes that are gone (or whose pid was reused), expire
///    leave-alone periods, refill the page budget for the time elapsed.
/// 2. Continue migrations owed by earlier moves, within the budget.
/// 3. Judge moves that have settled: if progress fell by more than
///    `harm_threshold`, revert and leave the process alone (and after
///    `comm_harm_limit` reverts, its command name).
/// 4. Candidates: older than `min_age_s`, above `min_cpu` and
///    `min_rss_bytes`, not excluded, not placed by their owner, not cooling
///    down. For each, evaluate every node (and for processes larger than a
///    node, the nearest node groups) with room for its CPUs and memory;
///    gain = the speed-up from the lower access-time ratio for its measured
///    (or assumed) memory stall share, plus protection from observed drift
///    for unbound processes; cost = the pages to move.
/// 5. Commit the best moves first while they pay (`min_gain`,
///    `min_benefit_over_cost`, both × `stickiness` for a process placed
///    before), fit the free CPUs and memory, never put more bound CPU load
///    on a node than it has CPUs, and stay within the page budget.
pub fn decide(machine: &Machine, snap: &Snapshot, cfg: &Config, history: &History) -> Decision {
    let r = machine.ratios(cfg.slit_at, cfg.ratio_at);
    let homes = (0..machine.len()).map(|i| machine.home_memory(&r, i)).collect();
    let all_cpu = machine.nodes.iter().filter(|n| n.cpus > 0).map(|n| n.id).collect();
    let v = View { m: machine, r, homes, all_cpu };
    let now = snap.time_s;
    let mut h = history.clone();
    h.version = 1;
    let elapsed = h.last_time_s.map_or(cfg.interval_s, |t| (now - t).clamp(0.0, 4.0 * cfg.interval_s));
    h.last_time_s = Some(now);
    let page = cfg.page_bytes.max(1);
    let budget_full = (cfg.pages_per_s as f64 * elapsed) as u64;
    let mut budget = budget_full;

    let mut procs: Vec<&ProcInfo> = snap.procs.iter().collect();
    procs.sort_by_key(|p| p.pid);
    let live: BTreeMap<i32, &ProcInfo> = procs.iter().map(|p| (p.pid, *p)).collect();
    h.procs.retain(|pid, rec| live.get(pid).is_some_and(|p| (now - p.age_s - rec.start_s).abs() <= 2.0));
    for rec in h.procs.values_mut() {
        if rec.left_alone_until_s.is_some_and(|u| u <= now) {
            rec.left_alone_until_s = None;
        }
    }
    for c in h.comms.values_mut() {
        if c.left_alone_until_s.is_some_and(|u| u <= now) {
            c.left_alone_until_s = None;
            c.harms = 0;
        }
    }
    h.comms.retain(|_, c| c.harms > 0 || c.left_alone_until_s.is_some());
    h.slow_memory.retain(|_, until| *until > now);

    let mut book = Book {
        free_cpus: vec![0.0; v.n()],
        free_bytes: vec![0.0; v.n()],
        bound: vec![0.0; v.n()],
        ours: vec![0.0; v.n()],
        pins: Vec::new(),
        mem_per_cpu: vec![0.0; v.n()],
        node_mem: vec![0.0; v.n()],
        node_cpu: vec![0.0; v.n()],
        mem_per_cpu_all: 0.0,
        load: NodeLoad::default(),
    };
    {
        let mut mem = vec![0.0; v.n()];
        let mut cpu = vec![0.0; v.n()];
        for p in &procs {
            let total: f64 = p.cpu_per_node.values().sum();
            for (id, x) in &p.cpu_per_node {
                if let (Some(i), true) = (machine.index(*id), total > 0.0) {
                    cpu[i] += x;
                    mem[i] += p.mem_total() as f64 * x / total;
                }
            }
        }
        let all = mem.iter().sum::<f64>() / cpu.iter().sum::<f64>().max(1e-9);
        for i in 0..v.n() {
            book.mem_per_cpu[i] = if cpu[i] > 0.0 { mem[i] / cpu[i] } else { all };
        }
        book.node_mem = mem;
        book.node_cpu = cpu;
        book.mem_per_cpu_all = all;
    }
    for ns in &snap.nodes {
        if let Some(i) = machine.index(ns.id) {
            book.free_cpus[i] = ns.free_cpus.max(0.0);
            book.free_bytes[i] = ns.free_bytes as f64;
        }
    }
    let mut all_facts: BTreeMap<i32, Facts> = BTreeMap::new();
    for p in &procs {
        let placed = h.procs.get(&p.pid).and_then(|r| r.placement.as_ref());
        let ours = placed.is_some_and(|pl| pl.cpu_nodes == p.affinity);
        let f = facts(&v, p, cfg, ours);
        for (b, x) in book.bound.iter_mut().zip(&f.own_bound) {
            *b += x;
        }
        if ours {
            for (b, x) in book.ours.iter_mut().zip(&f.own_ours) {
                *b += x;
            }
            book.pins.push((p.pid, f.own_ours.clone(), placed.map_or(0.0, |pl| pl.expected_gain)));
        }
        all_facts.insert(p.pid, f);
    }
    if cfg.use_bandwidth {
        book.load = node_load(&v, &procs, &mut all_facts);
    }

    let mut actions: Vec<Action> = Vec::new();
    let mut pages_total = 0u64;

    // 2. Owed migrations.
    for p in &procs {
        let Some(rec) = h.procs.get_mut(&p.pid) else { continue };
        let Some(pl) = rec.placement.as_mut() else { continue };
        if pl.pending.is_empty() {
            continue;
        }
        let mut left = Vec::new();
        let owed: u64 = pl.pending.iter().map(|x| x.2).sum();
        let mut remaining = owed;
        for &(from, to, pages) in &pl.pending {
            let have = p.mem_per_node.get(&from).copied().unwrap_or(0) / page;
            let want = pages.min(have);
            let now_pages = want.min(budget);
            if now_pages > 0 {
                budget -= now_pages;
                pages_total += now_pages;
                remaining -= now_pages.min(remaining);
                actions.push(Action {
                    pid: p.pid,
                    kind: ActionKind::Migrate { from, to, pages: now_pages },
                    reason: Why::Pending { left_pages: 0 },
                    expected_gain: 0.0,
                });
            }
            if want > now_pages {
                left.push((from, to, want - now_pages));
            }
        }
        let left_pages: u64 = left.iter().map(|x| x.2).sum();
        for a in actions.iter_mut().rev().take_while(|a| a.pid == p.pid) {
            a.reason = Why::Pending { left_pages };
        }
        pl.pending = left;
        if pl.pending.is_empty() {
            pl.settled_from_s = now;
        }
    }

    // 3. Judge settled moves.
    let mut harmed_comms: std::collections::BTreeSet<String> = std::collections::BTreeSet::new();
    for p in &procs {
        let Some(rec) = h.procs.get_mut(&p.pid) else { continue };
        let Some(pl) = rec.placement.as_ref() else { continue };
        if pl.cpu_nodes != p.affinity {
            // Someone else changed it since: theirs now.
            rec.placement = None;
            continue;
        }
        if pl.judged || !pl.pending.is_empty() || now - pl.settled_from_s < cfg.settle_s {
            continue;
        }
        let f = &all_facts[&p.pid];
        let after = if pl.baseline_is_instr { p.progress.value() } else { p.progress.cpu_rate };
        let before = pl.baseline_progress;
        if before > 0.0 && after < before * (1.0 - cfg.harm_threshold) {
            actions.push(Action {
                pid: p.pid,
                kind: ActionKind::Revert { cpu_nodes: pl.prev_affinity.clone(), mem_policy: pl.prev_policy.clone() },
                reason: Why::Harm { before, after, locality_before: pl.baseline_locality, locality_after: f.locality },
                expected_gain: 0.0,
            });
            // A loss the process's CPU share does not explain (it waited for
            // a CPU less than the loss) with its memory no less local than
            // before: the memory nodes the move put it on are slower than
            // their access-time ratio says (bandwidth, which the daemon is
            // not told). No move puts pages or threads on them for a while.
            let waited = p.cpu_wait / (p.cpu_use + p.cpu_wait).max(1e-12);
            if waited < cfg.harm_threshold && f.locality + 1e-9 >= pl.baseline_locality {
                for b in placement_memory(&v, &pl.cpu_nodes, &pl.mem_nodes) {
                    h.slow_memory.insert(machine.nodes[b].id, now + cfg.leave_alone_s);
                }
            }
            if pl.prev_affinity != pl.origin_affinity {
                // Back to numakit's earlier placement, which had been judged.
                let mem_nodes = match &pl.prev_policy {
                    MemPolicy::Preferred(n) | MemPolicy::Bind(n) => n.clone(),
                    _ => NodeSet::new(),
                };
                let mut back = pl.clone();
                back.cpu_nodes = pl.prev_affinity.clone();
                back.mem_nodes = mem_nodes;
                back.prev_affinity = pl.origin_affinity.clone();
                back.prev_policy = pl.origin_policy.clone();
                back.judged = true;
                // The pages this move put on its memory nodes go back too
                // (owed, within the budget from the next scan on): restoring
                // only the CPUs would leave them away from their memory.
                let dest = placement_memory(&v, &back.cpu_nodes, &back.mem_nodes);
                back.pending.clear();
                for b in v.idx(&pl.mem_nodes).into_iter().filter(|b| !dest.contains(b)) {
                    let pages = f.mem[b] as u64 / page;
                    let k = dest.len() as u64;
                    for (i, &d) in dest.iter().enumerate() {
                        let n = pages / k + u64::from((i as u64) < pages % k);
                        if n > 0 {
                            back.pending.push((machine.nodes[b].id, machine.nodes[d].id, n));
                        }
                    }
                }
                rec.placement = Some(back);
            } else {
                // Its bound load goes back to the scheduler.
                for (b, x) in book.bound.iter_mut().zip(&f.own_bound) {
                    *b -= x;
                }
                for (b, x) in book.ours.iter_mut().zip(&f.own_ours) {
                    *b -= x;
                }
                book.pins.retain(|x| x.0 != p.pid);
                rec.placement = None;
            }
            rec.left_alone_until_s = Some(now + cfg.leave_alone_s);
            h.reverts += 1;
            // Reverts of one name in one scan share their cause (one crowded
            // node, one bad estimate): they count once.
            if harmed_comms.insert(p.comm.clone()) {
                let c = h.comms.entry(p.comm.clone()).or_default();
                c.harms += 1;
                if c.harms >= cfg.comm_harm_limit {
                    c.left_alone_until_s = Some(now + cfg.comm_leave_alone_s);
                }
            }
        } else if let Some(pl) = rec.placement.as_mut() {
            pl.judged = true;
            actions.push(keep(p.pid, Why::Judged { before, after }));
            // A kept move of the name ends its run of reverts: the name is
            // left alone only after reverts with no success in between.
            if let Some(c) = h.comms.get_mut(&p.comm).filter(|c| c.left_alone_until_s.is_none()) {
                c.harms = 0;
            }
        }
    }

    // Memory growth of candidates, and drift of the unbound ones.
    let big = |p: &ProcInfo| p.cpu_use >= cfg.min_cpu && p.rss_bytes >= cfg.min_rss_bytes;
    for p in &procs {
        if !big(p) {
            continue;
        }
        let rec = h.procs.entry(p.pid).or_insert_with(|| ProcRecord::new(&p.comm, now - p.age_s));
        if let (Some((t0, r0)), Some(f)) = (rec.last_rss, all_facts.get_mut(&p.pid)) {
            if now > t0 {
                f.growth = (p.rss_bytes as f64 - r0 as f64).max(0.0) / (now - t0);
            }
        }
        rec.last_rss = Some((now, p.rss_bytes));
        if is_restricted(&v, p) {
            continue;
        }
        let main = main_node(&v, p);
        if let (Some(prev), Some(cur)) = (rec.last_cpu_node, main) {
            h.drift_observed_s += elapsed;
            if prev != cur {
                h.drifts += 1;
            }
        }
        rec.last_cpu_node = main;
    }
    let drift_rate = h.drift_rate(cfg.drift_prior_per_hour);

    // 4. Candidates and their best options.
    let mut proposals: Vec<(i32, Opt, bool)> = Vec::new();
    for p in &procs {
        // Younger than `min_age_s` but seen for two scans: only options that
        // move no pages (a pin or a bind while its memory is still small).
        let young = p.age_s < cfg.min_age_s;
        if !big(p) || p.age_s < (cfg.min_age_s / 2.0).min(2.0 * cfg.interval_s) {
            continue;
        }
        if let Some(rule) = excluded(p, cfg) {
            actions.push(keep(p.pid, Why::Excluded { rule }));
            continue;
        }
        let rec = h.procs.get(&p.pid);
        let placed = rec.and_then(|r| r.placement.as_ref());
        let ours = placed.is_some_and(|pl| pl.cpu_nodes == p.affinity);
        let restricted = is_restricted(&v, p) || p.mem_policy != MemPolicy::Default;
        if !ours && !cfg.manage_owner_pinned && (p.owner_pinned || restricted) {
            actions.push(keep(p.pid, Why::OwnerPlaced));
            continue;
        }
        if !ours && matches!(p.mem_policy, MemPolicy::Interleave(_)) {
            actions.push(keep(p.pid, Why::Interleaved));
            continue;
        }
        if let Some(until_s) = h.comms.get(&p.comm).and_then(|c| c.left_alone_until_s) {
            actions.push(keep(p.pid, Why::CommLeftAlone { until_s }));
            continue;
        }
        if let Some(until_s) = rec.and_then(|r| r.left_alone_until_s) {
            actions.push(keep(p.pid, Why::LeftAlone { until_s }));
            continue;
        }
        if placed.is_some_and(|pl| !pl.judged) {
            actions.push(keep(p.pid, Why::Waiting));
            continue;
        }
        // Cooling down after a move: only finishing that move (its pages) is
        // allowed.
        let cooling = rec.and_then(|r| r.last_move_s).filter(|last| now - last < cfg.cooldown_s);
        let f = &all_facts[&p.pid];
        let current = placed.filter(|_| ours).map(|pl| v.idx(&pl.cpu_nodes));
        // Pages of numakit's placement away from the home memory of the
        // nodes its threads are bound to (left behind by "CPUs now, pages
        // later", or allocated elsewhere when those nodes were full).
        // Only nodes with memory of their own: a memory-less node's home is
        // another node, shared with its neighbours (a firmware-distance
        // gain, and a bandwidth the daemon is not told).
        let own_memory = |t: &[usize]| t.iter().all(|&a| v.homes[a] == [a]);
        let pages_away = current.as_ref().is_some_and(|cur| {
            own_memory(cur) && (0..v.n()).any(|b| !cur.contains(&b) && f.mem[b] >= cfg.page_bytes.max(1) as f64)
        });
        // A judged placement of numakit's that no move could improve enough
        // (even to all-local), and that has no pages left to bring home, is
        // left as it is without evaluating options.
        if ours
            && cooling.is_none()
            && placed.is_some_and(|pl| pl.judged)
            && !pages_away
            && speedup(f.q, f.ratio_now, 1.0) < cfg.min_gain * cfg.stickiness
        {
            actions.push(keep(p.pid, Why::InPlace));
            continue;
        }
        let drift_p = 1.0 - (-drift_rate * p.age_s.min(cfg.max_horizon_s)).exp();
        let mut options: Vec<Opt> = Vec::new();
        for t in target_sets(&v, p, f, &book) {
            // Where numakit placed it, only finishing the move (its pages)
            // is a new option; while cooling down, nothing else.
            let same = current.as_ref() == Some(&t);
            if cooling.is_some() && !same {
                continue;
            }
            let unbound = !ours && !restricted;
            let Some(o) = evaluate(&v, p, f, &t, &book, cfg, drift_p, unbound, !young) else { continue };
            if !o.moves.is_empty() && !same {
                // Also: CPUs there now, pages later (cheaper while it grows).
                options.extend(evaluate(&v, p, f, &t, &book, cfg, drift_p, unbound, false));
            }
            if same && o.moves.is_empty() {
                continue;
            }
            options.push(o);
        }
        // Nothing more onto memory that did harm: no pages moved there, no
        // threads moved to the nodes it is home to.
        let mut onto_slow: Vec<Opt> = Vec::new();
        if !h.slow_memory.is_empty() {
            let slow = |b: usize| h.slow_memory.contains_key(&machine.nodes[b].id);
            let (keep_o, slow_o): (Vec<Opt>, Vec<Opt>) = options.into_iter().partition(|o| {
                let inside: f64 = o.cpu.iter().map(|&a| f.c[a]).sum();
                let total: f64 = f.c.iter().sum();
                !o.moves.iter().any(|m| slow(m.1)) && (inside >= total - 1e-9 || !o.mem.iter().any(|&b| slow(b)))
            });
            options = keep_o;
            onto_slow = slow_o;
        }
        let stick = if ours { cfg.stickiness } else { 1.0 };
        // Bringing the pages of numakit's own placement home to the memory
        // of the nodes its threads are bound to moves no thread and
        // displaces nobody: it can only make accesses local. It is not a
        // move elsewhere (no stickiness) and its gain is not in doubt, only
        // its size: it must pay for its pages, with the same margin as any
        // move.
        let finish = |o: &Opt| {
            ours && current.as_ref() == Some(&o.cpu) && own_memory(&o.cpu) && o.displaced <= 0.0 && !o.moves.is_empty()
        };
        // A pin in place costs nothing and is judged by CPU time (what it
        // could harm), so any expected gain will do; a move must pass both
        // thresholds.
        let pays = |o: &Opt| {
            if o.pin_only && !ours {
                o.gain > 0.0
            } else if finish(o) {
                o.gain > 0.0 && o.benefit_s >= cfg.min_benefit_over_cost * o.cost_s
            } else {
                o.gain >= cfg.min_gain * stick && o.benefit_s >= cfg.min_benefit_over_cost * stick * o.cost_s
            }
        };
        // The best option that pays; when none does, the best one (to say
        // why nothing is done). Not "the best option, if it pays": a move
        // that also carries a few stray pages can net a hair more than the
        // pin in place beside it and then fail the thresholds a move needs.
        let key = |o: &Opt| {
            let main_in = f.c.iter().enumerate().any(|(a, x)| *x > 0.0 && o.cpu.contains(&a));
            (o.cpu.len(), !main_in, o.cpu.clone())
        };
        let better =
            |o: &Opt, b: &Opt| o.net() > b.net() + 1e-9 || ((o.net() - b.net()).abs() <= 1e-9 && key(o) < key(b));
        let pick = |paying: bool| {
            options.iter().filter(|o| pays(o) == paying).fold(None::<&Opt>, |b, o| match b {
                Some(b) if !better(o, b) => Some(b),
                _ => Some(o),
            })
        };
        // A move that would pay but for memory marked slow: said so.
        let slow_why = || {
            let mut nodes: Vec<u32> = Vec::new();
            for o in onto_slow.iter().filter(|o| pays(o)) {
                let mem = o.moves.iter().map(|m| m.1).chain(o.mem.iter().copied());
                nodes.extend(mem.map(|b| machine.nodes[b].id).filter(|id| h.slow_memory.contains_key(id)));
            }
            nodes.sort_unstable();
            nodes.dedup();
            (!nodes.is_empty()).then(|| Why::SlowMemory {
                until_s: nodes.iter().map(|id| h.slow_memory[id]).fold(0.0, f64::max),
                nodes,
            })
        };
        let Some(o) = pick(true).or_else(|| pick(false)).cloned() else {
            let why = match cooling {
                Some(last) => Why::CoolDown { until_s: last + cfg.cooldown_s },
                None => slow_why().unwrap_or(if ours { Why::InPlace } else { Why::NoTarget }),
            };
            actions.push(keep(p.pid, why));
            continue;
        };
        if !pays(&o) {
            let why = if let Some(last) = cooling {
                Why::CoolDown { until_s: last + cfg.cooldown_s }
            } else if let Some(why) = slow_why() {
                why
            } else if o.gain <= 0.0 && o.moves.is_empty() {
                Why::InPlace
            } else {
                Why::NotWorth { gain: o.gain, benefit_s: o.benefit_s, cost_s: o.cost_s }
            };
            actions.push(keep(p.pid, why));
            continue;
        }
        proposals.push((p.pid, o, ours));
    }

    // 5. Commit, best first.
    proposals.sort_by(|a, b| b.1.net().total_cmp(&a.1.net()).then(a.0.cmp(&b.0)));
    for (pid, o, _ours) in proposals {
        let p = live[&pid];
        let f = &all_facts[&pid];
        // Re-check room against what earlier commits took.
        let need = demand(p);
        let fit = cpu_fit(&v, f, &o.cpu, &book, need);
        let mut need_mem = vec![0.0; v.n()];
        for &(_, d, x) in &o.moves {
            need_mem[d] += x;
        }
        let mem_ok = need_mem
            .iter()
            .enumerate()
            .all(|(d, x)| *x <= 0.0 || *x <= book.free_bytes[d] - headroom(&book, cfg, d) + 1.0);
        // The option was costed with the idle CPUs it saw; if an earlier
        // commit took them, it would now displace others for free: not now.
        let Some(fit) = fit.filter(|x| mem_ok && x.displaced <= o.displaced + 1e-6) else {
            actions.push(keep(pid, Why::RoomTaken));
            continue;
        };
        let pages_needed: u64 = o.moves.iter().map(|m| (m.2 as u64) / page).sum();
        if pages_needed > budget && budget < budget_full {
            actions.push(keep(pid, Why::Budget));
            continue;
        }
        let why = Why::Improve {
            ratio_now: o.ratio_now,
            ratio_after: o.ratio_after,
            stall_share: f.q,
            measured: f.measured,
            drift_protection: o.protect,
            gain: o.gain,
            benefit_s: o.benefit_s,
            cost_s: o.cost_s,
            horizon_s: p.age_s.min(cfg.max_horizon_s),
            others_cpus: o.others,
        };
        // Undo numakit's own placements that stand in the way, least
        // expected gain first.
        if fit.unpin > 0.0 {
            let mut pins: Vec<(i32, Vec<f64>, f64)> = undoable(&book, f, need)
                .filter(|x| o.cpu.iter().any(|&a| x.1[a] > 0.0) && x.2 * cfg.stickiness < o.gain)
                .cloned()
                .collect();
            pins.sort_by(|a, b| a.2.total_cmp(&b.2).then(a.0.cmp(&b.0)));
            // Those on nodes that must shed bound load first, then any in T.
            let mut need_at = fit.unpin_at.clone();
            let mut chosen: Vec<usize> = Vec::new();
            for (i, x) in pins.iter().enumerate() {
                if o.cpu.iter().any(|&a| need_at[a] > 1e-6 && x.1[a] > 0.0) {
                    for &a in &o.cpu {
                        need_at[a] -= x.1[a];
                    }
                    chosen.push(i);
                }
            }
            let mut freed: f64 = chosen.iter().map(|&i| o.cpu.iter().map(|&a| pins[i].1[a]).sum::<f64>()).sum();
            for (i, x) in pins.iter().enumerate() {
                if freed + 1e-6 >= fit.unpin {
                    break;
                }
                if !chosen.contains(&i) {
                    freed += o.cpu.iter().map(|&a| x.1[a]).sum::<f64>();
                    chosen.push(i);
                }
            }
            if freed + 0.25 < fit.unpin || o.cpu.iter().any(|&a| need_at[a] > 1e-6) {
                actions.push(keep(pid, Why::RoomTaken));
                continue;
            }
            for i in chosen {
                let (other, load, _) = &pins[i];
                for (a, x) in load.iter().enumerate() {
                    book.bound[a] -= x;
                    book.ours[a] -= x;
                }
                book.pins.retain(|x| x.0 != *other);
                if let Some(rec) = h.procs.get_mut(other) {
                    if let Some(pl) = rec.placement.take() {
                        actions.push(Action {
                            pid: *other,
                            kind: ActionKind::Revert { cpu_nodes: pl.origin_affinity, mem_policy: pl.origin_policy },
                            reason: Why::MakeRoom { for_pid: pid },
                            expected_gain: 0.0,
                        });
                    }
                    rec.last_move_s = Some(now);
                }
            }
        }
        let cpu_nodes = v.ids(&o.cpu);
        let mem_nodes = v.ids(&o.mem);
        actions.push(Action {
            pid,
            kind: ActionKind::Bind { cpu_nodes: cpu_nodes.clone(), mem_nodes: mem_nodes.clone() },
            reason: why.clone(),
            expected_gain: o.gain,
        });
        let mut pending = Vec::new();
        for &(b, d, x) in &o.moves {
            let pages = (x as u64) / page;
            let now_pages = pages.min(budget);
            let (from, to) = (machine.nodes[b].id, machine.nodes[d].id);
            if now_pages > 0 {
                budget -= now_pages;
                pages_total += now_pages;
                actions.push(Action {
                    pid,
                    kind: ActionKind::Migrate { from, to, pages: now_pages },
                    reason: why.clone(),
                    expected_gain: o.gain,
                });
            }
            if pages > now_pages {
                pending.push((from, to, pages - now_pages));
            }
        }
        // Book-keeping: its CPU load moves into T, T's bound load grows.
        let load: f64 = f.own_cpu.iter().sum();
        let mut displaced = 0.0;
        for a in 0..v.n() {
            book.free_cpus[a] += f.own_cpu[a] - o.c_after[a] * load;
            if book.free_cpus[a] < 0.0 {
                displaced -= book.free_cpus[a];
                book.free_cpus[a] = 0.0;
            }
            book.bound[a] += o.c_after[a] * need - f.own_bound[a];
            book.ours[a] += o.c_after[a] * need - f.own_ours[a];
        }
        book.pins.retain(|x| x.0 != pid);
        book.pins.push((pid, o.c_after.iter().map(|c| c * need).collect(), o.gain));
        // Displaced threads take idle CPUs outside T.
        for a in (0..v.n()).filter(|a| !o.cpu.contains(a)) {
            let x = displaced.min(book.free_cpus[a]);
            book.free_cpus[a] -= x;
            displaced -= x;
        }
        for &(b, d, x) in &o.moves {
            book.free_bytes[b] += x;
            book.free_bytes[d] -= x;
        }
        book.load.add(&f.load, -1.0);
        book.load.add(&o.load_after, 1.0);
        let rec = h.procs.entry(pid).or_insert_with(|| ProcRecord::new(&p.comm, now - p.age_s));
        rec.last_move_s = Some(now);
        rec.moves += 1;
        let prev = rec.placement.take();
        rec.placement = Some(Placement {
            cpu_nodes,
            mem_nodes,
            prev_affinity: p.affinity.clone(),
            prev_policy: p.mem_policy.clone(),
            origin_affinity: prev.as_ref().map_or_else(|| p.affinity.clone(), |x| x.origin_affinity.clone()),
            origin_policy: prev.as_ref().map_or_else(|| p.mem_policy.clone(), |x| x.origin_policy.clone()),
            baseline_progress: if o.pin_only { p.progress.cpu_rate } else { p.progress.value() },
            baseline_is_instr: !o.pin_only && p.progress.instr_rate.is_some(),
            baseline_locality: f.locality,
            expected_gain: o.gain,
            at_s: now,
            judged: false,
            settled_from_s: now,
            pending,
        });
    }
    h.pages_migrated += pages_total;
    Decision { actions, history: h }
}

/// The rules changed after the first run with 100 random farms per class
/// (docs/simulate.md, "Changed after the first comparison run", 6 to 9, and
/// after the second, 10 and on).
#[cfg(test)]
mod changed_rules {
    use super::*;
    use crate::daemon::{MachineNode, NodeState, Placement, ProcRecord, Progress};

    const GB: u64 = 1 << 30;

    fn ns(list: &str) -> NodeSet {
        NodeSet::parse_list(list).expect("node list")
    }

    fn machine(nodes: &[(u32, u32, u64)], distances: Vec<Vec<u32>>) -> Machine {
        let nodes = nodes.iter().map(|&(id, cpus, gib)| MachineNode { id, cpus, mem_bytes: gib * GB }).collect();
        Machine::new(nodes, distances).expect("machine")
    }

    /// An unbound process of `threads` CPUs, spread over `cpu` (node, CPUs),
    /// its memory `mem` (node, GiB).
    fn proc_(pid: i32, comm: &str, cpu: &[(u32, f64)], mem: &[(u32, u64)], stall: f64) -> ProcInfo {
        let cpus: f64 = cpu.iter().map(|c| c.1).sum();
        ProcInfo {
            pid,
            comm: comm.into(),
            uid: 1000,
            cgroup: "/batch.slice".into(),
            threads: cpus.ceil() as u32,
            cpu_use: cpus,
            cpu_wait: 0.0,
            rss_bytes: mem.iter().map(|m| m.1 * GB).sum(),
            mem_per_node: mem.iter().map(|&(n, g)| (n, g * GB)).collect(),
            cpu_per_node: cpu.iter().copied().collect(),
            affinity: ns("0-63"),
            cpuset: NodeSet::new(),
            mem_policy: MemPolicy::Default,
            owner_pinned: false,
            age_s: 600.0,
            progress: Progress { cpu_rate: cpus, instr_rate: Some(cpus) },
            mem_stall_share: Some(stall),
            mem_traffic: None,
        }
    }

    fn snap(t: f64, free: &[(u32, f64, u64)], procs: Vec<ProcInfo>) -> Snapshot {
        Snapshot {
            time_s: t,
            nodes: free.iter().map(|&(id, c, g)| NodeState { id, free_cpus: c, free_bytes: g * GB }).collect(),
            procs,
        }
    }

    /// Records in `h` that numakit placed `p` on `cpu` (memory `mem`) at
    /// 800 s, coming from `prev` (all nodes for a first move); not judged
    /// yet; the next scan is at `now`.
    fn placed(h: &mut History, p: &ProcInfo, now: f64, cpu: &str, mem: &str, prev: &str, instr: bool) {
        let mut rec = ProcRecord::new(&p.comm, now - p.age_s);
        rec.last_move_s = Some(800.0);
        rec.moves = 1;
        let prev_policy = if prev == "0-63" { MemPolicy::Default } else { MemPolicy::Preferred(ns(prev)) };
        rec.placement = Some(Placement {
            cpu_nodes: ns(cpu),
            mem_nodes: ns(mem),
            prev_affinity: ns(prev),
            prev_policy,
            origin_affinity: ns("0-63"),
            origin_policy: MemPolicy::Default,
            baseline_progress: 1.0,
            baseline_is_instr: instr,
            baseline_locality: 1.0,
            expected_gain: 0.05,
            at_s: 800.0,
            judged: false,
            pending: Vec::new(),
            settled_from_s: 800.0,
        });
        h.procs.insert(p.pid, rec);
        h.last_time_s = Some(now - 15.0);
    }

    /// An hour-old process `p` that numakit placed on `nodes` (CPUs and
    /// memory) and judged; the next scan is at 1200 s.
    fn judged_placement(p: &mut ProcInfo, nodes: &str) -> History {
        p.age_s = 3600.0;
        p.affinity = ns(nodes);
        p.mem_policy = MemPolicy::Preferred(ns(nodes));
        let mut h = History::new();
        placed(&mut h, p, 1200.0, nodes, nodes, "0-63", true);
        h.procs.get_mut(&p.pid).and_then(|r| r.placement.as_mut()).expect("placement").judged = true;
        h
    }

    fn binds(d: &Decision) -> Vec<(i32, String)> {
        d.changes()
            .filter_map(|a| match &a.kind {
                ActionKind::Bind { cpu_nodes, .. } => Some((a.pid, cpu_nodes.to_list())),
                _ => None,
            })
            .collect()
    }

    /// Change 6: two processes want the one idle CPU of node 0: the first takes it;
    /// the second, costed without displacing anyone, waits instead of
    /// displacing a thread for free.
    #[test]
    fn an_option_whose_idle_cpus_were_taken_waits() {
        let m = machine(&[(0, 4, 8), (1, 4, 8)], vec![vec![10, 21], vec![21, 10]]);
        let mut procs =
            vec![proc_(1, "reco", &[(1, 1.0)], &[(0, 2)], 0.4), proc_(2, "reco", &[(1, 1.0)], &[(0, 2)], 0.4)];
        // Three small local jobs on node 0 (below the memory threshold).
        for pid in 10..13 {
            let mut p = proc_(pid, "small", &[(0, 1.0)], &[(0, 0)], 0.2);
            p.rss_bytes = 200_000_000;
            p.mem_per_node = BTreeMap::from([(0, 200_000_000)]);
            procs.push(p);
        }
        let d = decide(&m, &snap(1000.0, &[(0, 1.0, 4), (1, 0.0, 4)], procs), &Config::default(), &History::new());
        assert_eq!(binds(&d), [(1, "0".to_string())], "{:#?}", d.actions);
        let why: Vec<&Why> = d.actions.iter().filter(|a| a.pid == 2).map(|a| &a.reason).collect();
        assert_eq!(why, [&Why::RoomTaken]);
    }

    /// Change 7: a second move judged harmful goes back to the first placement, and
    /// the pages it moved are owed back there.
    #[test]
    fn a_revert_takes_the_pages_back() {
        let m = machine(&[(0, 4, 8), (1, 4, 8)], vec![vec![10, 21], vec![21, 10]]);
        let mut p = proc_(7, "java", &[(1, 1.0)], &[(1, 2)], 0.4);
        p.affinity = ns("1");
        p.mem_policy = MemPolicy::Preferred(ns("1"));
        p.progress.instr_rate = Some(0.8);
        let mut h = History::new();
        placed(&mut h, &p, 1000.0, "1", "1", "0", true);
        let cfg = Config::default();
        let free = [(0, 0.0, 4), (1, 0.0, 4)];
        let d = decide(&m, &snap(1000.0, &free, vec![p.clone()]), &cfg, &h);
        let c: Vec<&Action> = d.changes().collect();
        assert_eq!(c.len(), 1, "{:#?}", d.actions);
        assert_eq!(c[0].kind, ActionKind::Revert { cpu_nodes: ns("0"), mem_policy: MemPolicy::Preferred(ns("0")) });
        let pl = d.history.procs[&7].placement.as_ref().expect("placement");
        assert_eq!(pl.pending, [(1, 0, 2 * GB / 4096)]);
        // Next scan: back on node 0, its pages follow within the budget.
        p.affinity = ns("0");
        p.mem_policy = MemPolicy::Preferred(ns("0"));
        p.cpu_per_node = BTreeMap::from([(0, 1.0)]);
        p.age_s += 15.0;
        let d2 = decide(&m, &snap(1015.0, &free, vec![p]), &cfg, &d.history);
        let c: Vec<(ActionKind, Why)> = d2.changes().map(|a| (a.kind.clone(), a.reason.clone())).collect();
        assert_eq!(c, [(ActionKind::Migrate { from: 1, to: 0, pages: 2 * GB / 4096 }, Why::Pending { left_pages: 0 })]);
    }

    /// Change 8: pins of one name reverted in one scan (one crowded node) count
    /// once against the name; a kept move of the name ends the run.
    #[test]
    fn reverts_of_one_scan_count_once_and_a_success_ends_the_run() {
        let m = machine(&[(0, 4, 8), (1, 4, 8)], vec![vec![10, 21], vec![21, 10]]);
        let mut h = History::new();
        let mut procs = Vec::new();
        for pid in 1..=4 {
            let mut p = proc_(pid, "hs06", &[(0, 0.8)], &[(0, 1)], 0.3);
            p.affinity = ns("0");
            p.mem_policy = MemPolicy::Preferred(ns("0"));
            p.progress = Progress { cpu_rate: 0.8, instr_rate: Some(0.8) };
            placed(&mut h, &p, 1000.0, "0", "0", "0-63", false);
            procs.push(p);
        }
        let cfg = Config::default();
        let free = [(0, 0.0, 4), (1, 0.0, 4)];
        let d = decide(&m, &snap(1000.0, &free, procs), &cfg, &h);
        assert_eq!(d.history.reverts, 4);
        assert_eq!(d.history.comms["hs06"].harms, 1);
        assert_eq!(d.history.comms["hs06"].left_alone_until_s, None);
        // Another hs06 whose pin is judged and kept: the run ends.
        let mut p = proc_(9, "hs06", &[(1, 1.0)], &[(1, 1)], 0.3);
        p.affinity = ns("1");
        p.mem_policy = MemPolicy::Preferred(ns("1"));
        let mut h = d.history.clone();
        placed(&mut h, &p, 1015.0, "1", "1", "0-63", false);
        let d2 = decide(&m, &snap(1015.0, &free, vec![p]), &cfg, &h);
        assert!(d2.actions.iter().any(|a| matches!(a.reason, Why::Judged { .. })), "{:#?}", d2.actions);
        assert_eq!(d2.history.comms["hs06"].harms, 0);
    }

    /// Change 9: on uneven nodes a 4-CPU process nominally fits the one 6-CPU node,
    /// which its owners' pinned jobs fill; the pair of 2-CPU nodes it runs
    /// on is a target too.
    #[test]
    fn groups_of_small_nodes_are_targets_on_uneven_machines() {
        let m =
            machine(&[(0, 2, 4), (1, 2, 4), (2, 6, 16)], vec![vec![10, 11, 21], vec![11, 10, 21], vec![21, 21, 10]]);
        let mut procs = vec![proc_(1, "java", &[(0, 2.0), (1, 2.0)], &[(0, 1), (1, 1)], 0.4)];
        for pid in 10..16 {
            let mut p = proc_(pid, "owner", &[(2, 1.0)], &[(2, 1)], 0.1);
            p.affinity = ns("2");
            procs.push(p);
        }
        let d = decide(
            &m,
            &snap(1000.0, &[(0, 0.0, 2), (1, 0.0, 2), (2, 0.0, 8)], procs),
            &Config::default(),
            &History::new(),
        );
        assert_eq!(binds(&d), [(1, "0-1".to_string())], "{:#?}", d.actions);
    }

    /// Change 10: the threads a move displaces take their own memory with
    /// them, not the moving process's: a 4-thread process with 8 GiB on
    /// node 0 and half its threads on node 1 displaces two small jobs from
    /// node 0, whose 200 MB each are what has to follow them.
    #[test]
    fn displaced_threads_are_charged_their_own_memory() {
        let m = machine(&[(0, 4, 16), (1, 4, 16)], vec![vec![10, 21], vec![21, 10]]);
        let mut java = proc_(1, "java", &[(0, 2.0), (1, 2.0)], &[(0, 8)], 0.05);
        java.age_s = 60.0;
        let mut procs = vec![java];
        for pid in 10..12 {
            let mut p = proc_(pid, "small", &[(0, 1.0)], &[(0, 0)], 0.2);
            p.rss_bytes = 200_000_000;
            p.mem_per_node = BTreeMap::from([(0, 200_000_000)]);
            procs.push(p);
        }
        let d = decide(&m, &snap(1000.0, &[(0, 0.0, 7), (1, 2.0, 15)], procs), &Config::default(), &History::new());
        assert_eq!(binds(&d), [(1, "0".to_string())], "{:#?}", d.actions);
        let Some(Why::Improve { cost_s, .. }) = d.actions.iter().find(|a| a.pid == 1).map(|a| &a.reason) else {
            panic!("{:#?}", d.actions)
        };
        // Two displaced threads of 200 MB, counted twice.
        assert!((cost_s - 4.0 * 200e6 / GB as f64).abs() < 0.05, "{cost_s}");
    }

    /// Change 11: numakit bound a process's CPUs to node 0 and left a third
    /// of its pages on node 1 ("CPUs now, pages later"); bringing them home
    /// gains less than `min_gain` (its stall share is small) but pays its
    /// pages many times over: they move.
    #[test]
    fn pages_left_behind_by_our_own_placement_come_home_when_they_pay() {
        let m = machine(&[(0, 4, 8), (1, 4, 8)], vec![vec![10, 21], vec![21, 10]]);
        let mut p = proc_(1, "java", &[(0, 1.0)], &[(0, 2), (1, 1)], 0.04);
        let h = judged_placement(&mut p, "0");
        let d = decide(&m, &snap(1200.0, &[(0, 3.0, 5), (1, 4.0, 6)], vec![p]), &Config::default(), &h);
        let c: Vec<&ActionKind> = d.changes().map(|a| &a.kind).collect();
        assert_eq!(
            c,
            [
                &ActionKind::Bind { cpu_nodes: ns("0"), mem_nodes: ns("0") },
                &ActionKind::Migrate { from: 1, to: 0, pages: GB / 4096 }
            ],
            "{:#?}",
            d.actions
        );
        let Some(Why::Improve { gain, .. }) = d.changes().next().map(|a| &a.reason) else { panic!() };
        assert!(*gain > 0.0 && *gain < Config::default().min_gain, "{gain}");
    }

    /// Change 12: a 6-thread process on 4-CPU nodes; node 0, the first of
    /// its socket, is full of owner-pinned jobs. Groups were grown with
    /// equally near nodes by size and index, so every group took node 0
    /// and none fitted; now by the CPUs the process could have there.
    #[test]
    fn groups_grow_with_nodes_that_have_room() {
        let m = machine(
            &[(0, 4, 8), (1, 4, 8), (2, 4, 8), (3, 4, 8)],
            vec![vec![10, 11, 11, 21], vec![11, 10, 11, 21], vec![11, 11, 10, 21], vec![21, 21, 21, 10]],
        );
        let mut procs = vec![proc_(1, "java", &[(1, 2.0), (2, 2.0), (3, 2.0)], &[(1, 2), (2, 2), (3, 1)], 0.4)];
        for pid in 10..14 {
            let mut p = proc_(pid, "owner", &[(0, 1.0)], &[(0, 1)], 0.1);
            p.affinity = ns("0");
            procs.push(p);
        }
        let free = [(0, 0.0, 3), (1, 2.0, 5), (2, 2.0, 5), (3, 2.0, 6)];
        let d = decide(&m, &snap(1000.0, &free, procs), &Config::default(), &History::new());
        assert_eq!(binds(&d), [(1, "1-2".to_string())], "{:#?}", d.actions);
    }

    /// In the test bed (4 nodes of 1 CPU, ring distances) one busy thread
    /// read 1.013 CPUs over a window: it was "larger than a node" and was
    /// bound to nodes 0 and 3, its memory on node 0 whose one CPU another
    /// process is bound to, so it kept running on node 3 far from all of
    /// its memory. A process needs at most one CPU per thread.
    #[test]
    fn a_thread_never_needs_more_than_one_cpu() {
        let ring = vec![vec![10, 20, 30, 20], vec![20, 10, 20, 30], vec![30, 20, 10, 20], vec![20, 30, 20, 10]];
        let m = machine(&[(0, 1, 1), (1, 1, 1), (2, 1, 1), (3, 1, 1)], ring);
        let mib = |x: u64| x << 20;
        let mut p = proc_(407, "nk-hold", &[(1, 0.5065), (3, 0.5065)], &[], 0.2);
        p.threads = 1;
        p.mem_per_node = BTreeMap::from([(0, mib(320))]);
        p.rss_bytes = mib(320);
        let mut q = proc_(408, "nk-hold", &[(0, 1.0)], &[], 0.2);
        q.affinity = ns("0");
        q.mem_per_node = BTreeMap::from([(0, mib(320))]);
        q.rss_bytes = mib(320);
        let free = [(0, 0.0, 0), (1, 0.5, 1), (2, 0.0, 0), (3, 0.5, 1)];
        let mut s = snap(1000.0, &free, vec![p, q]);
        for (n, x) in s.nodes.iter_mut().zip([mib(350), mib(990), mib(600), mib(980)]) {
            n.free_bytes = x;
        }
        let d = decide(&m, &s, &Config::default(), &History::new());
        let b = binds(&d);
        assert!(b.iter().any(|(pid, _)| *pid == 407), "{:#?}", d.actions);
        for (pid, nodes) in &b {
            assert!(nodes.parse::<u32>().is_ok(), "pid {pid} bound to the group {nodes}: {:#?}", d.actions);
        }
    }

    /// The best option that pays, not the best option if it pays: a
    /// process local but for a few stray pages on another node was never
    /// pinned, because the bind that also moved those pages netted a hair
    /// more than the pin in place and then needed `min_gain` (in the test
    /// bed: "best move gains +0.02%", every scan for six minutes).
    /// Change 20 (tried, off by default): a move onto memory whose bandwidth
    /// is saturated pays only if what it gains beats what it costs the
    /// processes already there.
    #[test]
    fn memory_bandwidth_counts_for_the_mover_and_for_the_others() {
        let m = machine(&[(0, 4, 8), (1, 4, 8)], vec![vec![10, 21], vec![21, 10]]);
        // Node 0's memory streams 10 GB/s, node 1's 40; remote half of that.
        let bw = vec![vec![10e9, 20e9], vec![5e9, 40e9]];
        let pinned = |pid: i32, node: u32, traffic: f64| {
            let mut q = proc_(pid, "owner", &[(node, 1.0)], &[(node, 1)], 0.6);
            q.affinity = ns(&node.to_string());
            q.owner_pinned = true;
            q.mem_traffic = Some(traffic);
            q
        };
        // Job 1 runs on node 0 with its memory on node 1; node 1's CPUs are
        // all held by its owners' processes, so the one way to make it local
        // is to bring its pages to node 0.
        let scan = |others_on_0: f64| {
            let mut job = proc_(1, "job", &[(0, 1.0)], &[(1, 2)], 0.5);
            job.mem_traffic = Some(3e9);
            let mut procs = vec![job];
            procs.extend((2..5).map(|pid| pinned(pid, 0, others_on_0)));
            procs.extend((5..9).map(|pid| pinned(pid, 1, 0.5e9)));
            snap(1000.0, &[(0, 0.0, 4), (1, 0.0, 3)], procs)
        };
        let migrates = |d: &Decision| {
            d.changes().filter(|a| a.pid == 1 && matches!(a.kind, ActionKind::Migrate { to: 0, .. })).count()
        };
        // Without bandwidth known, or with it known and not used (the
        // default), the pages come home.
        let mb = m.clone().with_bandwidth(bw).expect("bandwidth");
        for machine in [&m, &mb] {
            let d = decide(machine, &scan(4e9), &Config::default(), &History::new());
            assert!(migrates(&d) > 0, "{:#?}", d.actions);
        }
        // Node 0's memory is 120 % busy with the three jobs' 12 GB/s: the
        // job's 3 GB/s more would slow them more than it gains.
        let cfg = Config { use_bandwidth: true, ..Config::default() };
        let d = decide(&mb, &scan(4e9), &cfg, &History::new());
        assert_eq!(migrates(&d), 0, "{:#?}", d.actions);
        assert!(binds(&d).is_empty(), "{:#?}", d.actions);
        // With room on node 0 (3 GB/s used of 10), they do.
        let d = decide(&mb, &scan(1e9), &cfg, &History::new());
        assert!(migrates(&d) > 0, "{:#?}", d.actions);
        let Some(Why::Improve { others_cpus, .. }) = d.changes().find(|a| a.pid == 1).map(|a| &a.reason) else {
            panic!("{:#?}", d.actions)
        };
        assert!(*others_cpus <= 0.0 && *others_cpus > -0.05, "others {others_cpus}");
    }

    #[test]
    fn the_best_option_that_pays_is_taken() {
        let m = machine(&[(0, 4, 8), (1, 4, 8)], vec![vec![10, 21], vec![21, 10]]);
        let mut p = proc_(1, "job", &[(0, 1.0)], &[(0, 2)], 0.2);
        p.mem_per_node.insert(1, 3 * 4096);
        let d = decide(&m, &snap(1000.0, &[(0, 3.0, 6), (1, 4.0, 8)], vec![p]), &Config::default(), &History::new());
        assert_eq!(binds(&d), [(1, "0".to_string())], "{:#?}", d.actions);
        assert!(!d.changes().any(|a| matches!(a.kind, ActionKind::Migrate { .. })), "{:#?}", d.actions);
    }

    /// Change 17: pages moved to a group of nodes go to each node in
    /// proportion to the process's threads there, not evenly. A 6-thread
    /// process placed on nodes 0-1 runs 4 threads on node 0 and 2 on node
    /// 1, with 4 and 2 GiB there and 3 GiB left behind on node 2. Evening
    /// out would give 4.5 and 4.5 GiB, half of it remote to the node that
    /// runs two thirds of the threads; now 6 and 3 GiB, as first touch
    /// would have put them.
    #[test]
    fn pages_moved_to_a_group_follow_its_threads() {
        let d = vec![vec![10, 16, 22, 22], vec![16, 10, 22, 22], vec![22, 22, 10, 16], vec![22, 22, 16, 10]];
        let m = machine(&[(0, 4, 16), (1, 4, 16), (2, 4, 16), (3, 4, 16)], d);
        let mut p = proc_(1, "java", &[(0, 4.0), (1, 2.0)], &[(0, 4), (1, 2), (2, 3)], 0.4);
        let h = judged_placement(&mut p, "0-1");
        let free = [(0, 0.0, 12), (1, 2.0, 14), (2, 4.0, 13), (3, 4.0, 16)];
        let d = decide(&m, &snap(1200.0, &free, vec![p]), &Config::default(), &h);
        let mut to = [0u64; 4];
        for a in d.changes() {
            if let ActionKind::Migrate { from, to: dst, pages } = a.kind {
                assert_eq!(from, 2, "{:#?}", d.actions);
                to[dst as usize] += pages * 4096;
            }
        }
        assert_eq!(to[0] + to[1], 3 * GB, "{:#?}", d.actions);
        let after = [4 * GB + to[0], 2 * GB + to[1]];
        // 2:1 to within the 64 MiB a move is never split below.
        assert!(after[0].abs_diff(2 * after[1]) <= (3 * 64) << 20, "{after:?}: {:#?}", d.actions);
    }

    /// Change 19: a move judged harmful although its process had its CPUs
    /// and its memory got no less local (by the access-time ratios) lost
    /// through the memory it put the process on: bandwidth, which the
    /// daemon is not told. Here a job moved to a memory-less node, its pages
    /// to that node's home, node 0. For `leave_alone_s` no other move puts
    /// pages or threads on node 0; without the rule the next job, remote
    /// from its memory on node 0, is bound there. The same loss while the
    /// job waited for a CPU says nothing about the memory.
    #[test]
    fn memory_that_did_harm_gets_no_more_for_a_while() {
        // Node 1 has CPUs and no memory; its home is node 0.
        let d = vec![vec![10, 12, 21], vec![12, 10, 21], vec![21, 21, 10]];
        let m = machine(&[(0, 4, 16), (1, 4, 0), (2, 4, 8)], d);
        let mut a = proc_(1, "reco", &[(1, 1.0)], &[(0, 2)], 0.5);
        a.affinity = ns("1");
        a.mem_policy = MemPolicy::Preferred(ns("0"));
        a.progress.instr_rate = Some(0.8);
        let mut h = History::new();
        placed(&mut h, &a, 1000.0, "1", "0", "0-63", true);
        h.procs.get_mut(&1).and_then(|r| r.placement.as_mut()).expect("placement").baseline_locality = 0.0;
        let b = proc_(2, "reco", &[(2, 1.0)], &[(0, 2)], 0.5);
        let free = [(0, 2.0, 8), (1, 3.0, 0), (2, 0.0, 0)];
        let cfg = Config::default();
        let d = decide(&m, &snap(1000.0, &free, vec![a.clone(), b.clone()]), &cfg, &h);
        assert!(d.changes().any(|x| x.pid == 1 && matches!(x.reason, Why::Harm { .. })), "{:#?}", d.actions);
        assert_eq!(d.history.slow_memory, BTreeMap::from([(0, 1000.0 + cfg.leave_alone_s)]));
        assert!(binds(&d).iter().all(|(pid, to)| *pid != 2 || to == "2"), "{:#?}", d.actions);
        // A scan later it still holds (and b stays off node 0 and node 1).
        let mut b2 = b.clone();
        b2.age_s += 15.0;
        let d2 = decide(&m, &snap(1015.0, &free, vec![b2.clone()]), &cfg, &d.history);
        assert!(binds(&d2).iter().all(|(pid, to)| *pid != 2 || to == "2"), "{:#?}", d2.actions);
        // With no pin in place to make instead, the decision says why the
        // move to its memory is not made.
        let no_pin = Config { pin_in_place: false, ..Config::default() };
        let d4 = decide(&m, &snap(1015.0, &free, vec![b2]), &no_pin, &d.history);
        let why: Vec<&Why> = d4.actions.iter().filter(|a| a.pid == 2).map(|a| &a.reason).collect();
        assert_eq!(
            why,
            [&Why::SlowMemory { nodes: vec![0], until_s: 1000.0 + cfg.leave_alone_s }],
            "{:#?}",
            d4.actions
        );
        // Lost while waiting for a CPU: nothing learnt, b goes to its memory.
        a.cpu_use = 0.8;
        a.cpu_wait = 0.2;
        a.cpu_per_node = BTreeMap::from([(1, 0.8)]);
        let d3 = decide(&m, &snap(1000.0, &free, vec![a, b]), &cfg, &h);
        assert!(d3.changes().any(|x| x.pid == 1 && matches!(x.reason, Why::Harm { .. })), "{:#?}", d3.actions);
        assert!(d3.history.slow_memory.is_empty());
        assert_eq!(binds(&d3), [(2, "0".to_string())], "{:#?}", d3.actions);
    }
}
