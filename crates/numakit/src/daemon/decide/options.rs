//! The options for one process: which node sets to evaluate, whether its
//! CPU need fits them (and what it displaces), and each option's pages to
//! move, expected speed-up, benefit and cost.

use super::book::{headroom, others_mem_per_cpu, undoable, Book};
use super::facts::{demand, speedup, Facts};
use super::view::View;
use super::GIB;
use crate::daemon::config::Config;
use crate::daemon::machine::{NodePos, PerNode};
use crate::daemon::snapshot::ProcInfo;

/// How a process fits a node set.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Fit {
    /// Load of other processes that has to move away.
    pub(super) displaced: f64,
    /// Part of it that numakit placed and has to unpin, in all.
    pub(super) unpin: f64,
    /// ... of which on each node (so every node's bound load fits it).
    pub(super) unpin_at: PerNode<f64>,
}

/// Where a process's threads run after a move to `t`: those inside `t`
/// stay, the rest spread over `t` by CPU count (fractions).
pub(super) fn spread(v: &View, f: &Facts, t: &[NodePos]) -> PerNode<f64> {
    let cap: f64 = t.iter().map(|&a| v.cpus(a)).sum::<f64>().max(1e-12);
    let inside: f64 = t.iter().map(|&a| f.c[a]).sum();
    let total: f64 = f.c.iter().sum::<f64>().max(1e-12);
    let mut c = v.zeros();
    for &a in t {
        c[a] = f.c[a] / total + (1.0 - inside / total) * v.cpus(a) / cap;
    }
    c
}

/// Whether CPU load `need` fits node set `t`, and what it displaces. It
/// fits on the idle CPUs and the process's own; beyond that it displaces
/// other unbound threads (the scheduler moves them to the CPUs the process
/// frees, or to idle CPUs elsewhere) and, when needed, numakit's own earlier
/// placements (undone to make room); never anything bound by someone else:
/// on every node of `t`, that bound load plus the process's share stays
/// within the node's CPUs.
pub(super) fn cpu_fit(v: &View, f: &Facts, t: &[NodePos], book: &Book, need: f64, cfg: &Config) -> Option<Fit> {
    let slack = cfg.cpu_slack;
    let c_after = spread(v, f, t);
    let mut ours_at = v.zeros();
    for x in undoable(book, f, need, cfg) {
        for &a in t {
            ours_at[a] += x.1[a];
        }
    }
    let mut unpin_at = v.zeros();
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
    if short <= slack && must_unpin <= 1e-6 {
        return Some(Fit { displaced: 0.0, unpin: 0.0, unpin_at });
    }
    let unbound: f64 = t
        .iter()
        .map(|&a| (v.cpus(a) - book.free_cpus[a] - f.own_cpu[a] - (book.bound[a] - f.own_bound[a])).max(0.0))
        .sum();
    let unpin = must_unpin.max(short - unbound).max(0.0);
    if unpin > t.iter().map(|&a| ours_at[a]).sum::<f64>() + slack {
        return None;
    }
    let elsewhere: f64 = v.positions().filter(|a| !t.contains(a)).map(|a| f.own_cpu[a] + book.free_cpus[a]).sum();
    if short > elsewhere + slack {
        return None;
    }
    Some(Fit { displaced: short.max(unpin), unpin, unpin_at })
}

/// One evaluated target for a process.
#[derive(Debug, Clone)]
pub(super) struct Opt {
    pub(super) cpu: Vec<NodePos>,
    pub(super) mem: Vec<NodePos>,
    /// (from, to, bytes).
    pub(super) moves: Vec<(NodePos, NodePos, f64)>,
    pub(super) c_after: PerNode<f64>,
    /// Access-time ratio now (with memory still to come where it would land).
    pub(super) ratio_now: f64,
    pub(super) ratio_after: f64,
    pub(super) gain: f64,
    pub(super) protect: f64,
    pub(super) benefit_s: f64,
    pub(super) cost_s: f64,
    /// Nothing moves: no page, no thread, nobody displaced; only the
    /// affinity is narrowed to where the process already runs.
    pub(super) pin_only: bool,
    /// CPU load of others it displaces (what its cost was computed with).
    pub(super) displaced: f64,
}

impl Opt {
    pub(super) fn net(&self) -> f64 {
        self.benefit_s - self.cost_s
    }

    /// The part of `benefit_s` that comes from making accesses local now,
    /// without the protection from future drift.
    pub(super) fn local_benefit_s(&self) -> f64 {
        if self.gain > 0.0 {
            self.benefit_s * ((self.gain - self.protect) / self.gain).max(0.0)
        } else {
            0.0
        }
    }
}

/// Node sets worth evaluating: every allowed CPU node, and when the
/// process is larger than a node (CPUs or memory) the nearest groups
/// grown from every node, as `place::auto` does for `run --auto` (among
/// equally near nodes, those with more CPUs the process could have: not
/// bound by others, numakit's pins it may undo counted as available).
pub(super) fn target_sets(v: &View, p: &ProcInfo, f: &Facts, book: &Book, cfg: &Config) -> Vec<Vec<NodePos>> {
    let mut out: Vec<Vec<NodePos>> = Vec::new();
    let need = demand(p, cfg);
    let mem_need: f64 = f.mem.iter().sum();
    let home_mem = |set: &[NodePos]| -> f64 {
        let mut hs: Vec<NodePos> = set.iter().flat_map(|&a| v.homes[a].iter().copied()).collect();
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
    let mut avail: PerNode<f64> = v.positions().map(|a| v.cpus(a) - (book.bound[a] - f.own_bound[a])).collect();
    for x in undoable(book, f, need, cfg) {
        for (a, l) in x.1.enumerate() {
            avail[a] += l;
        }
    }
    // (In half CPUs: fractions of spread loads do not reorder equals.)
    let step = cfg.cpu_room_step;
    let avail: PerNode<f64> = avail.iter().map(|x| (x / step).round() * step).collect();
    for &start in &f.allowed {
        let mut others: Vec<NodePos> = f.allowed.iter().copied().filter(|&o| o != start).collect();
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
pub(super) fn evaluate(
    v: &View,
    p: &ProcInfo,
    f: &Facts,
    t: &[NodePos],
    book: &Book,
    cfg: &Config,
    drift_p: f64,
    unbound: bool,
    migrate: bool,
) -> Option<Opt> {
    let need = demand(p, cfg);
    let fit = cpu_fit(v, f, t, book, need, cfg)?;
    let displaced = fit.displaced;
    // Memory destinations: the home memory of the CPU nodes.
    let mut dest: Vec<NodePos> = t.iter().flat_map(|&a| v.homes[a].iter().copied()).collect();
    dest.sort_unstable();
    dest.dedup();
    let cpuless: Vec<NodePos> = if cfg.use_cpuless_memory {
        v.positions().filter(|&b| v.m.nodes[b].cpus == 0 && v.m.nodes[b].mem_bytes > 0).collect()
    } else {
        Vec::new()
    };
    let best_from_t = |b: NodePos| t.iter().map(|&a| v.r[a][b]).fold(f64::INFINITY, f64::min);
    let mut room: PerNode<f64> =
        v.positions().map(|b| (book.free_bytes[b] - headroom(book, cfg, b)).max(0.0)).collect();
    let mut sources: Vec<NodePos> = v.positions().filter(|b| f.mem[*b] > 0.0 && !dest.contains(b)).collect();
    sources.sort_by(|&x, &y| f.mem[y].total_cmp(&f.mem[x]).then(x.cmp(&y)));
    let page = cfg.page_bytes.max(1) as f64;
    let c_after = spread(v, f, t);
    // Each destination's share of the pages: the share of the threads it is
    // home to after the move (what first touch would have given it).
    let mut weight = v.zeros();
    for &a in t {
        for &b in &v.homes[a] {
            weight[b] += c_after[a] / v.homes[a].len() as f64;
        }
    }
    // How full a destination is for its share: CPU-less memory (no threads
    // of its own) counts evenly among CPU-less memory.
    let w_of = |x: NodePos| if cpuless.contains(&x) { 1.0 } else { weight[x] };
    let fill = |x: NodePos, mem: &PerNode<f64>| if w_of(x) > 0.0 { mem[x] / w_of(x) } else { f64::INFINITY };
    let mut mem_after = f.mem.clone();
    let mut moves = Vec::new();
    for b in sources.into_iter().filter(|_| migrate) {
        let mut left = f.mem[b];
        // CPU-less memory, when allowed, may keep its pages if it is no
        // farther than the destinations could be reached.
        let mut targets: Vec<NodePos> = dest.clone();
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
            // (At least d's share of what is left, and never less than
            // `min_chunk_bytes` at a time, so moves are not split into
            // slivers.)
            let w_all = if cpuless.contains(&d) { w_slow } else { w_fast };
            let share = if w_all > 0.0 { left * w_of(d) / w_all } else { left / targets.len().max(1) as f64 };
            let level = if next.is_finite() && w_of(d) > 0.0 {
                (next * w_of(d) - mem_after[d]).max(share).max(cfg.min_chunk_bytes as f64)
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
    let horizon = f.horizon;
    // Memory still being allocated lands where the threads run: now on
    // their current nodes, after the move on T. Counted up to the current
    // size over the horizon.
    let future = (f.growth * horizon).min(f.mem.iter().sum::<f64>());
    let (now_m, after_m) = if future > 0.0 {
        let spread = |c: &PerNode<f64>| -> PerNode<f64> {
            let ct: f64 = c.iter().sum::<f64>().max(1e-12);
            let mut m = v.zeros();
            for (a, &x) in c.enumerate().filter(|(_, x)| **x > 0.0) {
                let hs = &v.homes[a];
                for &b in hs {
                    m[b] += future * x / ct / hs.len() as f64;
                }
            }
            m
        };
        let now_m: PerNode<f64> = f.mem.iter().zip(spread(&f.c).iter()).map(|(a, b)| a + b).collect();
        let after_m: PerNode<f64> = mem_after.iter().zip(spread(&c_after).iter()).map(|(a, b)| a + b).collect();
        (now_m, after_m)
    } else {
        (f.mem.clone(), mem_after.clone())
    };
    let (ratio_now, ratio_after) = if future > 0.0 {
        (v.ratio(&f.c, &now_m), v.ratio(&c_after, &after_m))
    } else {
        (f.ratio_now, v.ratio(&c_after, &mem_after))
    };
    let gain_now = speedup(f.q, ratio_now, ratio_after);
    // Protection from drift: an unbound process may later run on another
    // allowed node; binding avoids that expected loss.
    let mut protect = 0.0;
    if cfg.pin_in_place && unbound {
        let away: Vec<NodePos> = f.allowed.iter().copied().filter(|a| !t.contains(a)).collect();
        if !away.is_empty() {
            let mean = away
                .iter()
                .map(|&a| {
                    let mut c1 = v.zeros();
                    c1[a] = 1.0;
                    v.ratio(&c1, &mem_after)
                })
                .sum::<f64>()
                / away.len() as f64;
            let loss = -speedup(f.q, ratio_after, mean);
            protect = (loss / (1.0 - loss).max(1e-9)).max(0.0) * drift_p * cfg.drift_protect_weight;
        }
    }
    let gain = gain_now + protect;
    let moved: f64 = moves.iter().map(|m| m.2).sum();
    // Displaced threads' memory has to follow them later (the same cost),
    // counted twice for the time they run remote before it does.
    let disp_mem = if displaced > 0.0 {
        let per: f64 = t.iter().map(|&a| others_mem_per_cpu(book, f, a)).sum::<f64>() / t.len().max(1) as f64;
        cfg.displaced_mem_factor * displaced * per
    } else {
        0.0
    };
    let cost_s = moved / GIB * cfg.migrate_cost_s_per_gib * need.max(1.0) + disp_mem / GIB * cfg.migrate_cost_s_per_gib;
    let benefit_s = gain * need * horizon;
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
    })
}
