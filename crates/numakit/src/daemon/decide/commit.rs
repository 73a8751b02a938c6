//! Step 5 of a scan: the proposals are committed best first, each re-checked
//! against the room earlier commits took, numakit's own pins undone where
//! they stand in the way, pages within the budget (the rest owed), and the
//! placement recorded in the history.

use super::book::{headroom, undoable};
use super::facts::demand;
use super::options::{cpu_fit, Opt};
use super::{keep, Scan};
use crate::daemon::action::{Action, ActionKind, Why};
use crate::daemon::history::{Placement, ProcCommitted};
use crate::daemon::machine::PerNode;
use crate::daemon::snapshot::ProcInfo;

impl Scan<'_> {
    /// Commits the proposals, best net benefit first.
    pub(super) fn commit(&mut self, procs: &[&ProcInfo], mut proposals: Vec<(i32, Opt, bool)>) {
        let Scan {
            ref v,
            cfg,
            now,
            page,
            ref mut h,
            ref mut book,
            facts: ref all_facts,
            ref mut actions,
            ref mut budget,
            budget_full,
            ref mut pages_total,
            ..
        } = *self;
        let machine = v.m;
        let live: std::collections::BTreeMap<i32, &ProcInfo> = procs.iter().map(|p| (p.pid, *p)).collect();
        proposals.sort_by(|a, b| b.1.net().total_cmp(&a.1.net()).then(a.0.cmp(&b.0)));
        for (pid, o, _ours) in proposals {
            let p = live[&pid];
            let f = &all_facts[&pid];
            // Re-check room against what earlier commits took.
            let need = demand(p, cfg);
            let fit = cpu_fit(v, f, &o.cpu, book, need, cfg);
            let mut need_mem = v.zeros();
            for &(_, d, x) in &o.moves {
                need_mem[d] += x;
            }
            let mem_ok =
                need_mem.enumerate().all(|(d, x)| *x <= 0.0 || *x <= book.free_bytes[d] - headroom(book, cfg, d) + 1.0);
            // The option was costed with the idle CPUs it saw; if an earlier
            // commit took them, it would now displace others for free: not now.
            let Some(fit) = fit.filter(|x| mem_ok && x.displaced <= o.displaced + 1e-6) else {
                actions.push(keep(pid, Why::RoomTaken));
                continue;
            };
            let pages_needed: u64 = o.moves.iter().map(|m| (m.2 as u64) / page).sum();
            if pages_needed > *budget && *budget < budget_full {
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
                horizon_s: f.horizon,
                horizon_runs: f.horizon_runs,
            };
            // Undo numakit's own placements that stand in the way, least
            // expected gain first.
            if fit.unpin > 0.0 {
                let mut pins: Vec<(i32, PerNode<f64>, f64)> = undoable(book, f, need, cfg)
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
                if freed + cfg.cpu_slack < fit.unpin || o.cpu.iter().any(|&a| need_at[a] > 1e-6) {
                    actions.push(keep(pid, Why::RoomTaken));
                    continue;
                }
                for i in chosen {
                    let (other, load, _) = &pins[i];
                    for (a, x) in load.enumerate() {
                        book.bound[a] -= x;
                        book.ours[a] -= x;
                    }
                    book.pins.retain(|x| x.0 != *other);
                    if let Some(rec) = h.committed.procs.get_mut(other) {
                        if let Some(pl) = rec.placement.take() {
                            actions.push(Action {
                                pid: *other,
                                kind: ActionKind::Revert {
                                    cpu_nodes: pl.origin_affinity,
                                    mem_policy: pl.origin_policy,
                                },
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
                let now_pages = pages.min(*budget);
                let (from, to) = (machine.id(b), machine.id(d));
                if now_pages > 0 {
                    *budget -= now_pages;
                    *pages_total += now_pages;
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
            for a in v.positions() {
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
            for a in v.positions().filter(|a| !o.cpu.contains(a)) {
                let x = displaced.min(book.free_cpus[a]);
                book.free_cpus[a] -= x;
                displaced -= x;
            }
            for &(b, d, x) in &o.moves {
                book.free_bytes[b] += x;
                book.free_bytes[d] -= x;
            }
            // Known to the process's observed record (every candidate has
            // one by now): the same identity in both halves.
            let (comm, start_s) = h
                .observed
                .procs
                .get(&pid)
                .map_or_else(|| (p.comm.clone(), now - p.age_s), |r| (r.comm.clone(), r.start_s));
            let rec = h.committed.procs.entry(pid).or_insert_with(|| ProcCommitted::new(&comm, start_s));
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
                need,
            });
        }
    }
}
