//! Memory allocation: each job touches its memory over its ramp, from the
//! nodes its threads run on, by its policy (first touch, preferred,
//! interleaved) with the kernel's fallback order.

use super::{bits, Engine, Pol};

impl Engine<'_> {
    /// Puts `bytes` of job `ji` first on `first` (if it has room), then in
    /// the kernel's fallback order from CPU node `a`.
    pub(super) fn place(&mut self, ji: usize, mut bytes: f64, first: Option<usize>, a: usize) {
        for k in 0..=self.order[a].len() {
            let b = if k == 0 {
                match first {
                    Some(b) => b,
                    None => continue,
                }
            } else {
                self.order[a][k - 1]
            };
            if bytes <= 0.0 {
                break;
            }
            let room = (self.cap[b] - self.used[b]).max(0.0);
            let x = bytes.min(room);
            if x > 0.0 {
                self.used[b] += x;
                self.jobs[ji].mem[b] += x;
                self.jobs[ji].alloc += x;
                bytes -= x;
            }
        }
    }

    pub(super) fn allocate(&mut self) {
        let dt = self.p.dt_s;
        for ji in 0..self.jobs.len() {
            let j = &self.jobs[ji];
            let left = j.spec.mem_bytes - j.alloc;
            if left <= 1.0 {
                continue;
            }
            let ramp = self.p.ramp_s.min(0.1 * j.spec.work_s).max(dt);
            let chunk = left.min(j.spec.mem_bytes * dt / ramp);
            let total = f64::from(j.threads().max(1));
            let pol = j.pol;
            for a in 0..self.n {
                let k = self.jobs[ji].t_on[a];
                if k == 0 {
                    continue;
                }
                let part = chunk * f64::from(k) / total;
                match pol {
                    Pol::Default => {
                        let h = self.home[a];
                        self.place(ji, part, Some(h), a);
                    }
                    Pol::Prefer(mask) => {
                        let first = self.order[a]
                            .iter()
                            .copied()
                            .find(|&b| mask & (1u64 << b) != 0 && self.cap[b] - self.used[b] > 0.0);
                        self.place(ji, part, first, a);
                    }
                    Pol::Interleave(mask) => {
                        let nodes: Vec<usize> = bits(mask).filter(|&b| b < self.n).collect();
                        let each = part / nodes.len().max(1) as f64;
                        for b in nodes {
                            self.place(ji, each, Some(b), a);
                        }
                    }
                }
            }
        }
    }
}
