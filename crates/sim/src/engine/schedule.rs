//! The scheduler: threads leave nodes with more runnable threads than
//! CPUs, and drift (to a node with an idle CPU, or by swapping with a
//! thread on another node), less with AutoNUMA on.

use super::{bits, Engine};

impl Engine<'_> {
    pub(super) fn load(&mut self) {
        self.r.iter_mut().for_each(|x| *x = 0);
        for j in &self.jobs {
            for (a, &k) in j.t_on.iter().enumerate() {
                self.r[a] += k;
            }
        }
    }

    pub(super) fn idlest(&mut self, mask: u64, rng_pick: bool) -> Option<usize> {
        let mut best: Vec<usize> = Vec::new();
        let mut best_idle = f64::NEG_INFINITY;
        for a in bits(mask & self.cpu_nodes) {
            let idle = self.cpus[a] - f64::from(self.r[a]);
            if idle > best_idle + 1e-9 {
                best_idle = idle;
                best.clear();
                best.push(a);
            } else if (idle - best_idle).abs() <= 1e-9 {
                best.push(a);
            }
        }
        if best.is_empty() {
            return None;
        }
        Some(if rng_pick { best[self.rng.below(best.len())] } else { best[0] })
    }

    pub(super) fn move_thread(&mut self, j: usize, from: usize, to: usize) {
        self.jobs[j].t_on[from] -= 1;
        self.jobs[j].t_on[to] += 1;
        self.r[from] -= 1;
        self.r[to] += 1;
    }

    pub(super) fn schedule(&mut self) {
        self.load();
        let dt = self.p.dt_s;
        let factor = if self.autonuma { self.p.autonuma_drift_factor } else { 1.0 };
        // Overload relief: threads leave nodes with more runnable threads than CPUs.
        for a in 0..self.n {
            while f64::from(self.r[a]) > self.cpus[a] {
                let mut cands: Vec<(usize, usize)> = Vec::new();
                for (ji, j) in self.jobs.iter().enumerate() {
                    if j.t_on[a] == 0 {
                        continue;
                    }
                    for b in bits(j.mask & self.cpu_nodes) {
                        if b != a && f64::from(self.r[b]) < self.cpus[b] {
                            cands.push((ji, b));
                        }
                    }
                }
                if cands.is_empty() {
                    break;
                }
                let pick = if self.autonuma {
                    cands.iter().copied().find(|&(ji, b)| self.jobs[ji].an_pref == Some(b))
                } else {
                    None
                };
                let (ji, b) = pick.unwrap_or_else(|| cands[self.rng.below(cands.len())]);
                self.move_thread(ji, a, b);
            }
        }
        // Drift.
        let p_idle = dt / self.p.drift_idle_s * factor;
        let p_swap = dt / self.p.drift_swap_s * factor;
        for ji in 0..self.jobs.len() {
            let mask = self.jobs[ji].mask & self.cpu_nodes;
            if mask.count_ones() < 2 {
                continue;
            }
            for a in 0..self.n {
                let k = self.jobs[ji].t_on[a];
                for _ in 0..k {
                    let (idle_draw, swap_draw) = {
                        let r = &mut self.jobs[ji].rng;
                        (r.unit(), r.unit())
                    };
                    if idle_draw < p_idle {
                        let others = mask & !(1u64 << a);
                        let free = bits(others).any(|b| f64::from(self.r[b]) < self.cpus[b]);
                        if free {
                            if let Some(b) = self.idlest(others, true) {
                                self.move_thread(ji, a, b);
                                break;
                            }
                        }
                    }
                    if swap_draw < p_swap {
                        let others: Vec<usize> = bits(mask & !(1u64 << a)).collect();
                        if others.is_empty() {
                            break;
                        }
                        let b = others[self.jobs[ji].rng.below(others.len())];
                        let partners: Vec<usize> = (0..self.jobs.len())
                            .filter(|&o| o != ji && self.jobs[o].t_on[b] > 0 && self.jobs[o].mask & (1u64 << a) != 0)
                            .collect();
                        if partners.is_empty() {
                            break;
                        }
                        let o = partners[self.jobs[ji].rng.below(partners.len())];
                        self.move_thread(ji, a, b);
                        self.move_thread(o, b, a);
                        break;
                    }
                }
            }
        }
        if self.autonuma {
            self.autonuma_tasks();
        }
    }
}
