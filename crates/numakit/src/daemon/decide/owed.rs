//! Step 2 of a scan: migrations owed by earlier moves (pages that did not
//! fit the page budget then, or a revert's pages going back) continue,
//! within the budget.

use super::Scan;
use crate::daemon::action::{Action, ActionKind, Why};
use crate::daemon::snapshot::ProcInfo;

impl Scan<'_> {
    /// Continues the migrations owed by earlier moves, within the budget;
    /// a placement whose pages are all home starts settling.
    pub(super) fn owed_migrations(&mut self, procs: &[&ProcInfo]) {
        let Scan { page, now, ref mut h, ref mut actions, ref mut budget, ref mut pages_total, .. } = *self;
        for p in procs {
            let Some(rec) = h.committed.procs.get_mut(&p.pid) else { continue };
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
                let now_pages = want.min(*budget);
                if now_pages > 0 {
                    *budget -= now_pages;
                    *pages_total += now_pages;
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
    }
}
