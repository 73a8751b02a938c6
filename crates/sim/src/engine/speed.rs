//! One step of progress: each job's speed from its CPU share, the access
//! ratios of where its memory is and the bandwidth contention on each
//! node (the cost model, [`crate::cost`]), less the time owed to page
//! migrations and hinting faults.

use super::Engine;

impl Engine<'_> {
    // Several per-node arrays are indexed together here.
    #[allow(clippy::needless_range_loop)]
    pub(super) fn progress(&mut self) {
        self.load();
        let dt = self.p.dt_s;
        let f: Vec<f64> = (0..self.n)
            .map(|a| if self.r[a] == 0 { 1.0 } else { (self.cpus[a] / f64::from(self.r[a])).min(1.0) })
            .collect();
        let mut demand = vec![0.0; self.n];
        for j in &self.jobs {
            if j.alloc <= 0.0 || j.bw <= 0.0 {
                continue;
            }
            for a in 0..self.n {
                if j.t_on[a] == 0 {
                    continue;
                }
                let act = f64::from(j.t_on[a]) * f[a] * j.speed * j.bw / j.alloc;
                for b in 0..self.n {
                    if j.mem[b] > 0.0 {
                        demand[b] += act * j.mem[b] / self.m.bw_ratio[a][b];
                    }
                }
            }
        }
        let cont: Vec<f64> = (0..self.n).map(|b| self.cost.contention(demand[b], self.m.bw_gbs[b])).collect();
        for j in &mut self.jobs {
            let mut act_total = 0.0;
            let mut meff = 0.0;
            for a in 0..self.n {
                if j.t_on[a] == 0 {
                    continue;
                }
                let act = f64::from(j.t_on[a]) * f[a];
                act_total += act;
                j.w_wait += f64::from(j.t_on[a]) * (1.0 - f[a]) * dt;
                j.w_node[a] += act * dt;
                if j.alloc > 0.0 {
                    let mut row = 0.0;
                    for b in 0..self.n {
                        if j.mem[b] > 0.0 {
                            row += j.mem[b] * self.m.latency[a][b] * cont[b];
                        }
                    }
                    meff += act * row / j.alloc;
                }
            }
            let m = if act_total > 0.0 && j.alloc > 0.0 { meff / act_total } else { 1.0 };
            let speed = self.cost.speed(j.s, m);
            let mut work = act_total * speed * dt;
            let lost = j.debt.min(dt);
            work *= 1.0 - lost / dt;
            j.debt -= lost;
            let left = (j.total_work() - j.work).max(0.0);
            work = work.min(left);
            j.work += work;
            j.speed = speed;
            j.w_cpu += act_total * dt;
            j.w_work += work;
            j.w_meff += m * dt;
            j.w_time += dt;
            self.out.work += work;
        }
    }
}
