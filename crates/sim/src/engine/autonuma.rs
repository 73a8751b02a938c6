//! The kernel's automatic NUMA balancing as modelled: task placement
//! towards the node holding most of a job's pages, and scanning whose
//! hinting faults cost time and migrate pages to the nodes the job runs
//! on.

use super::{bits, Engine, GIB};

impl Engine<'_> {
    /// AutoNUMA task placement: each job's preferred node is the CPU node
    /// whose memory holds most of its pages; a thread elsewhere moves there
    /// when a CPU is idle, or swaps with a thread that prefers elsewhere.
    pub(super) fn autonuma_tasks(&mut self) {
        for ji in 0..self.jobs.len() {
            let j = &self.jobs[ji];
            if j.alloc <= 0.0 {
                continue;
            }
            let mask = j.mask & self.cpu_nodes;
            let pref = bits(mask).max_by(|&x, &y| {
                j.mem[self.home[x]].total_cmp(&j.mem[self.home[y]]).then(j.t_on[x].cmp(&j.t_on[y])).then(y.cmp(&x))
            });
            self.jobs[ji].an_pref = pref;
            let Some(p) = pref else { continue };
            // Groups larger than their preferred node stay spread.
            if f64::from(self.jobs[ji].threads()) > self.cpus[p] {
                continue;
            }
            let Some(a) = (0..self.n).find(|&a| a != p && self.jobs[ji].t_on[a] > 0) else { continue };
            if f64::from(self.r[p]) < self.cpus[p] {
                self.move_thread(ji, a, p);
                continue;
            }
            let partner = (0..self.jobs.len()).find(|&o| {
                o != ji
                    && self.jobs[o].t_on[p] > 0
                    && self.jobs[o].mask & (1u64 << a) != 0
                    && self.jobs[o].an_pref != Some(p)
                    && f64::from(self.jobs[o].threads()) <= self.cpus[p]
            });
            if let Some(o) = partner {
                self.move_thread(ji, a, p);
                self.move_thread(o, p, a);
            }
        }
    }

    /// AutoNUMA scanning: hinting faults on a share of each job's memory per
    /// step (rate between its size per 60 s and per 1 s, at most 256 MB/s),
    /// each costing time; faulted pages outside the nodes its threads run
    /// on migrate to them (pseudo-interleave: pages already on any active
    /// node of a spread job stay).
    pub(super) fn autonuma_scan(&mut self) {
        let dt = self.p.dt_s;
        for ji in 0..self.jobs.len() {
            let (alloc, period) = (self.jobs[ji].alloc, self.jobs[ji].an_period);
            if alloc <= 0.0 {
                continue;
            }
            let scanned = (alloc / period).min(256.0 * 1024.0 * 1024.0) * dt;
            let scanned = scanned.min(alloc);
            self.jobs[ji].debt += scanned / GIB * self.cost.hint_fault_s_per_gib;
            let t_on = self.jobs[ji].t_on.clone();
            let total: f64 = t_on.iter().map(|&k| f64::from(k)).sum();
            if total <= 0.0 {
                continue;
            }
            let maxk = t_on.iter().copied().max().unwrap_or(0);
            let active: Vec<usize> = (0..self.n).filter(|&a| t_on[a] > 0 && 3 * t_on[a] >= maxk).collect();
            let mut active_mem: Vec<usize> = active.iter().map(|&a| self.home[a]).collect();
            active_mem.sort_unstable();
            active_mem.dedup();
            let local: f64 = (0..self.n)
                .filter(|&a| t_on[a] > 0)
                .map(|a| f64::from(t_on[a]) / total * self.jobs[ji].mem[self.home[a]] / alloc)
                .sum();
            let act_total: f64 = active.iter().map(|&a| f64::from(t_on[a])).sum();
            for b in 0..self.n {
                let mb = self.jobs[ji].mem[b];
                if mb <= 0.0 || active_mem.contains(&b) {
                    continue;
                }
                let faulted = scanned * mb / alloc;
                for &a in &active {
                    let share = f64::from(t_on[a]) / act_total;
                    let to = self.home[a];
                    self.migrate(ji, b, to, faulted * share);
                }
            }
            let j = &mut self.jobs[ji];
            j.an_period = if local >= 0.7 { (period * 2.0).min(60.0) } else { (period / 2.0).max(1.0) };
        }
    }
}
