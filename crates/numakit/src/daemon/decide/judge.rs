//! Step 3 of a scan: moves that have settled are judged by the process's
//! progress before and after; one that did harm is reverted (to numakit's
//! earlier placement, its pages owed back, or to none), the process is left
//! alone, and repeated harm leaves its command name alone. Harm that neither
//! waiting for a CPU nor locality explains marks the memory the move used
//! as slow.

use std::collections::BTreeSet;

use super::view::placement_memory;
use super::{keep, rates_since, Scan};
use crate::daemon::action::{Action, ActionKind, Why};
use crate::daemon::snapshot::{MemPolicy, ProcInfo};
use crate::sets::NodeSet;

impl Scan<'_> {
    /// Judges the settled moves: keeps them, or reverts those whose
    /// progress fell by more than `harm_threshold`.
    pub(super) fn judge(&mut self, procs: &[&ProcInfo]) {
        let Scan {
            ref v,
            cfg,
            now,
            window_start,
            page,
            ref mut h,
            ref mut book,
            facts: ref all_facts,
            ref mut actions,
            ..
        } = *self;
        let machine = v.m;
        let mut harmed_comms: BTreeSet<String> = BTreeSet::new();
        for p in procs {
            let Some(rec) = h.committed.procs.get_mut(&p.pid) else { continue };
            let Some(pl) = rec.placement.as_ref() else { continue };
            if pl.cpu_nodes != p.affinity {
                // Someone else changed it since: theirs now.
                rec.placement = None;
                continue;
            }
            if pl.judged || !pl.pending.is_empty() || now - pl.settled_from_s < cfg.settle_s {
                continue;
            }
            // Never on a window in which the move was still being made (its
            // pages took longer than `settle_s` to move): its threads were
            // blocked while their pages moved, and it ran half where it was.
            if pl.made_in_window(rates_since(window_start, now, p)) {
                continue;
            }
            let f = &all_facts[&p.pid];
            let after = if pl.baseline_is_instr { p.progress.value() } else { p.progress.cpu_rate };
            let before = pl.baseline_progress;
            if before > 0.0 && after < before * (1.0 - cfg.harm_threshold) {
                actions.push(Action {
                    pid: p.pid,
                    kind: ActionKind::Revert {
                        cpu_nodes: pl.prev_affinity.clone(),
                        mem_policy: pl.prev_policy.clone(),
                    },
                    reason: Why::Harm {
                        before,
                        after,
                        locality_before: pl.baseline_locality,
                        locality_after: f.locality,
                    },
                    expected_gain: 0.0,
                });
                // A loss the process's CPU share does not explain (it waited for
                // a CPU less than the loss) with its memory no less local than
                // before: the memory nodes the move put it on are slower than
                // their access-time ratio says (bandwidth, which the daemon is
                // not told). No move puts pages or threads on them for a while.
                let waited = p.cpu_wait / (p.cpu_use + p.cpu_wait).max(1e-12);
                if waited < cfg.harm_threshold && f.locality + 1e-9 >= pl.baseline_locality {
                    for b in placement_memory(v, &pl.cpu_nodes, &pl.mem_nodes) {
                        h.committed.slow_memory.insert(machine.id(b), now + cfg.leave_alone_s);
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
                    let dest = placement_memory(v, &back.cpu_nodes, &back.mem_nodes);
                    back.pending.clear();
                    for b in v.idx(&pl.mem_nodes).into_iter().filter(|b| !dest.contains(b)) {
                        let pages = f.mem[b] as u64 / page;
                        let k = dest.len() as u64;
                        for (i, &d) in dest.iter().enumerate() {
                            let n = pages / k + u64::from((i as u64) < pages % k);
                            if n > 0 {
                                back.pending.push((machine.id(b), machine.id(d), n));
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
                h.committed.reverts += 1;
                // Reverts of one name in one scan share their cause (one crowded
                // node, one bad estimate): they count once.
                if harmed_comms.insert(p.comm.clone()) {
                    let c = h.committed.comms.entry(p.comm.clone()).or_default();
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
                if let Some(c) = h.committed.comms.get_mut(&p.comm).filter(|c| c.left_alone_until_s.is_none()) {
                    c.harms = 0;
                }
            }
        }
    }
}
