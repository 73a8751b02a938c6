//! The one applier of [`SimAction`]s every policy goes through: binds,
//! page migrations (charged to the job as lost time) and reverts.

use numakit::daemon::{ActionKind, MemPolicy};
use numakit::sets::NodeSet;

use super::{Engine, Pol, PAGE};
use crate::action::SimAction;

impl Engine<'_> {
    pub(super) fn migrate(&mut self, ji: usize, from: usize, to: usize, bytes: f64) -> f64 {
        if from == to || from >= self.n || to >= self.n {
            return 0.0;
        }
        let x = bytes.min(self.jobs[ji].mem[from]).min((self.cap[to] - self.used[to]).max(0.0));
        let x = (x / PAGE).floor() * PAGE;
        if x <= 0.0 {
            return 0.0;
        }
        let j = &mut self.jobs[ji];
        j.mem[from] -= x;
        j.mem[to] += x;
        self.used[from] -= x;
        self.used[to] += x;
        j.debt += self.cost.migrate_s(x);
        self.out.pages_migrated += (x / PAGE) as u64;
        x
    }

    pub(super) fn mask_of(&self, set: &NodeSet) -> u64 {
        set.iter().filter_map(|id| self.m.index(id)).filter(|&i| i < 64).fold(0u64, |acc, i| acc | (1 << i))
    }

    pub(super) fn pol_of(&self, p: &MemPolicy) -> Pol {
        match p {
            MemPolicy::Default | MemPolicy::Local => Pol::Default,
            MemPolicy::Preferred(s) | MemPolicy::Bind(s) => Pol::Prefer(self.mask_of(s)),
            MemPolicy::Interleave(s) => Pol::Interleave(self.mask_of(s)),
        }
    }

    pub(super) fn set_mask(&mut self, ji: usize, mask: u64) {
        self.jobs[ji].mask = mask;
        self.load();
        for a in 0..self.n {
            while mask & (1u64 << a) == 0 && self.jobs[ji].t_on[a] > 0 {
                let Some(b) = self.idlest(mask, false) else { return };
                self.move_thread(ji, a, b);
            }
        }
    }

    /// Applies one action (the only way policies change anything).
    pub fn apply(&mut self, action: &SimAction) {
        let Some(ji) = self.jobs.iter().position(|j| j.pid == action.pid) else { return };
        match &action.kind {
            ActionKind::Bind { cpu_nodes, mem_nodes } => {
                let mask = self.mask_of(cpu_nodes) & self.cpu_nodes;
                if mask == 0 {
                    return;
                }
                self.set_mask(ji, mask);
                if !mem_nodes.is_empty() {
                    self.jobs[ji].pol = Pol::Prefer(self.mask_of(mem_nodes));
                }
                self.out.binds += 1;
            }
            ActionKind::Migrate { from, to, pages } => {
                if let (Some(a), Some(b)) = (self.m.index(*from), self.m.index(*to)) {
                    self.migrate(ji, a, b, *pages as f64 * PAGE);
                }
            }
            ActionKind::Revert { cpu_nodes, mem_policy } => {
                let mut mask = self.mask_of(cpu_nodes) & self.cpu_nodes;
                if mask == 0 {
                    mask = self.cpu_nodes;
                }
                self.set_mask(ji, mask);
                self.jobs[ji].pol = self.pol_of(mem_policy);
                self.out.reverts += 1;
            }
            ActionKind::Keep => {}
        }
    }
}
