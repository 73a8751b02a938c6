//! Step 4 of a scan: the candidates (large, long-running, not excluded, not
//! placed by their owner, not left alone or cooling down), every option for
//! each, and the best option that pays; the others get a reason to keep.

use super::facts::{big, excluded, is_restricted, speedup};
use super::options::{evaluate, target_sets, Opt};
use super::{keep, rates_since, Scan};
use crate::daemon::action::Why;
use crate::daemon::machine::NodePos;
use crate::daemon::snapshot::{MemPolicy, ProcInfo};

impl Scan<'_> {
    /// Each candidate's best option that pays (pid, option, whether numakit
    /// placed it before), in pid order; a reason to keep for the others.
    pub(super) fn candidates(&mut self, procs: &[&ProcInfo], drift_rate: f64) -> Vec<(i32, Opt, bool)> {
        let Scan { ref v, cfg, now, window_start, ref h, ref book, facts: ref all_facts, ref mut actions, .. } = *self;
        let machine = v.m;
        let mut proposals: Vec<(i32, Opt, bool)> = Vec::new();
        for p in procs {
            // Younger than `min_age_s` but seen for two scans: only options that
            // move no pages (a pin or a bind while its memory is still small).
            let young = p.age_s < cfg.min_age_s;
            if !big(p, cfg)
                || p.age_s < (cfg.min_age_s * cfg.young_age_fraction).min(cfg.young_min_scans * cfg.interval_s)
            {
                continue;
            }
            if let Some(rule) = excluded(p, cfg) {
                actions.push(keep(p.pid, Why::Excluded { rule }));
                continue;
            }
            let rec = h.committed.procs.get(&p.pid);
            let placed = rec.and_then(|r| r.placement.as_ref());
            let ours = placed.is_some_and(|pl| pl.cpu_nodes == p.affinity);
            let restricted = is_restricted(v, p) || p.mem_policy != MemPolicy::Default;
            if !ours && !cfg.manage_owner_pinned && (p.owner_pinned || restricted) {
                actions.push(keep(p.pid, Why::OwnerPlaced));
                continue;
            }
            if !ours && matches!(p.mem_policy, MemPolicy::Interleave(_)) {
                actions.push(keep(p.pid, Why::Interleaved));
                continue;
            }
            if let Some(until_s) = h.committed.comms.get(&p.comm).and_then(|c| c.left_alone_until_s) {
                actions.push(keep(p.pid, Why::CommLeftAlone { until_s }));
                continue;
            }
            if let Some(until_s) = rec.and_then(|r| r.left_alone_until_s) {
                actions.push(keep(p.pid, Why::LeftAlone { until_s }));
                continue;
            }
            // Unjudged, or its last pages moved during this window (which
            // shows it half where it was): the next window measures it.
            if placed.is_some_and(|pl| !pl.judged || (ours && pl.made_in_window(rates_since(window_start, now, p)))) {
                actions.push(keep(p.pid, Why::Waiting));
                continue;
            }
            // Only a measured placement is acted on: where its threads were at
            // the instant of one scan (no earlier reading of them yet) may be
            // a moment's bounce of the scheduler onto a busy node. The next
            // scan measures it.
            if !p.cpu_measured {
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
            let own_memory = |t: &[NodePos]| t.iter().all(|&a| v.homes[a] == [a]);
            let pages_away = current.as_ref().is_some_and(|cur| {
                own_memory(cur) && v.positions().any(|b| !cur.contains(&b) && f.mem[b] >= cfg.page_bytes.max(1) as f64)
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
            let drift_p = 1.0 - (-drift_rate * f.horizon).exp();
            let mut options: Vec<Opt> = Vec::new();
            for t in target_sets(v, p, f, book, cfg) {
                // Where numakit placed it, only finishing the move (its pages)
                // is a new option; while cooling down, nothing else.
                let same = current.as_ref() == Some(&t);
                if cooling.is_some() && !same {
                    continue;
                }
                let unbound = !ours && !restricted;
                let Some(o) = evaluate(v, p, f, &t, book, cfg, drift_p, unbound, !young) else { continue };
                if !o.moves.is_empty() && !same {
                    // Also: CPUs there now, pages later (cheaper while it grows).
                    options.extend(evaluate(v, p, f, &t, book, cfg, drift_p, unbound, false));
                }
                if same && o.moves.is_empty() {
                    continue;
                }
                options.push(o);
            }
            // Nothing more onto memory that did harm: no pages moved there, no
            // threads moved to the nodes it is home to.
            let mut onto_slow: Vec<Opt> = Vec::new();
            if !h.committed.slow_memory.is_empty() {
                let slow = |b: NodePos| h.committed.slow_memory.contains_key(&machine.id(b));
                let (keep_o, slow_o): (Vec<Opt>, Vec<Opt>) = options.into_iter().partition(|o| {
                    let inside: f64 = o.cpu.iter().map(|&a| f.c[a]).sum();
                    let total: f64 = f.c.iter().sum();
                    !o.moves.iter().any(|m| slow(m.1)) && (inside >= total - 1e-9 || !o.mem.iter().any(|&b| slow(b)))
                });
                options = keep_o;
                onto_slow = slow_o;
            }
            let stick = if ours { cfg.stickiness } else { 1.0 };
            // Bringing a process's pages home to the memory of the nodes its
            // threads already run on (numakit's own placement, or a first pin
            // where every thread is) moves no thread and displaces nobody: it
            // can only make accesses local. It is not a move elsewhere (no
            // stickiness) and its gain is not in doubt, only its size: the
            // pages must pay for themselves (their gain, not the protection
            // from drift the pin brings), with the same margin as any move.
            let all_inside = |o: &Opt| o.cpu.iter().map(|&a| f.c[a]).sum::<f64>() >= f.c.iter().sum::<f64>() - 1e-9;
            let home = |o: &Opt| {
                (if ours { current.as_ref() == Some(&o.cpu) } else { all_inside(o) })
                    && own_memory(&o.cpu)
                    && o.displaced <= 0.0
                    && !o.moves.is_empty()
            };
            // A pin in place costs nothing and is judged by CPU time (what it
            // could harm), so any expected gain will do; a move must pass both
            // thresholds.
            let pays = |o: &Opt| {
                if o.pin_only && !ours {
                    o.gain > 0.0
                } else if home(o) {
                    o.gain > 0.0 && o.local_benefit_s() >= cfg.min_benefit_over_cost * o.cost_s
                } else {
                    o.gain >= cfg.min_gain * stick && o.benefit_s >= cfg.min_benefit_over_cost * stick * o.cost_s
                }
            };
            // The best option that pays; when none does, the best one (to say
            // why nothing is done). Not "the best option, if it pays": a move
            // that also carries a few stray pages can net a hair more than the
            // pin in place beside it and then fail the thresholds a move needs.
            let key = |o: &Opt| {
                let main_in = f.c.enumerate().any(|(a, x)| *x > 0.0 && o.cpu.contains(&a));
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
                    nodes.extend(mem.map(|b| machine.id(b)).filter(|id| h.committed.slow_memory.contains_key(id)));
                }
                nodes.sort_unstable();
                nodes.dedup();
                (!nodes.is_empty()).then(|| Why::SlowMemory {
                    until_s: nodes.iter().map(|id| h.committed.slow_memory[id]).fold(0.0, f64::max),
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
                    Why::NotWorth {
                        gain: o.gain,
                        benefit_s: o.benefit_s,
                        cost_s: o.cost_s,
                        horizon_s: f.horizon,
                        horizon_runs: f.horizon_runs,
                    }
                };
                actions.push(keep(p.pid, why));
                continue;
            }
            proposals.push((p.pid, o, ours));
        }
        proposals
    }
}
