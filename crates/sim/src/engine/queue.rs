//! The batch queue: the next job starts whenever its threads fit the free
//! CPUs (where the policy, or its owner, says), and leaves when its work is
//! done.

use super::{bits, Engine, Job, JobOutcome, Pol, TraceEvent};
use crate::policy::{Policy, Start, StartView};
use crate::rng::Rng;

impl Engine<'_> {
    pub(super) fn start_jobs(&mut self, policy: &mut dyn Policy) {
        let total: u32 = self.m.total_cpus();
        loop {
            let running: u32 = self.jobs.iter().map(Job::threads).sum();
            let Some(spec) = self.wl.next_job(self.next) else { break };
            if running + spec.threads > total {
                break;
            }
            self.next += 1;
            self.load();
            let all = self.cpu_nodes;
            let (mask, pol, owner) = if spec.owner_pin {
                let a = self.idlest(all, false).unwrap_or(0);
                (1u64 << a, Pol::Prefer(1u64 << self.home[a]), true)
            } else {
                let view = self.start_view();
                match policy.on_start(&view, &spec) {
                    Some(Start { cpu_mask, pol }) if cpu_mask & all != 0 => (cpu_mask & all, pol, false),
                    _ => (all, Pol::Default, false),
                }
            };
            let pid = 1000 + spec.index as i32;
            if self.trace {
                self.out.trace.push(TraceEvent::Start {
                    t_s: self.t,
                    pid,
                    comm: spec.comm,
                    threads: spec.threads,
                    mem_gib: spec.mem_bytes / (1u64 << 30) as f64,
                    cpu_nodes: bits(mask).map(|i| self.m.id(i)).collect(),
                    owner_pinned: owner,
                });
            }
            let mut t_on = vec![0u32; self.n];
            for _ in 0..spec.threads {
                if let Some(a) = self.idlest(mask, true) {
                    t_on[a] += 1;
                    self.r[a] += 1;
                }
            }
            let s = self.cost.stall_share(spec.remote_slowdown);
            self.jobs.push(Job {
                pid,
                start: self.t,
                t_on,
                mem: vec![0.0; self.n],
                alloc: 0.0,
                mask,
                pol,
                owner_pinned: owner,
                s,
                bw: s * self.cost.bw_per_stall_gbs,
                work: 0.0,
                debt: 0.0,
                speed: 1.0,
                rng: Rng::stream(self.wl.seed ^ 0xD41F7, spec.index as u64),
                w_cpu: 0.0,
                w_wait: 0.0,
                w_work: 0.0,
                w_meff: 0.0,
                w_time: 0.0,
                w_node: vec![0.0; self.n],
                an_period: 1.0,
                an_pref: None,
                spec,
            });
        }
    }

    pub(super) fn start_view(&self) -> StartView {
        let mut bound_threads = vec![0u32; self.n];
        let mut bound_bw = vec![0.0; self.n];
        for j in &self.jobs {
            if j.mask != self.cpu_nodes {
                for (a, &k) in j.t_on.iter().enumerate() {
                    bound_threads[a] += k;
                    bound_bw[self.home[a]] += f64::from(k) * j.bw;
                }
            }
        }
        StartView {
            idle: (0..self.n).map(|a| self.cpus[a] - f64::from(self.r[a])).collect(),
            free_bytes: (0..self.n).map(|b| self.cap[b] - self.used[b]).collect(),
            bound_threads,
            bound_bw,
            home: self.home.clone(),
        }
    }

    pub(super) fn record(&mut self, j: &Job, finished: bool) {
        let alive = self.t - j.start;
        if self.trace {
            let speed = j.work / (f64::from(j.threads().max(1)) * alive.max(1e-9));
            self.out.trace.push(TraceEvent::End { t_s: self.t, pid: j.pid, finished, speed });
        }
        if alive >= 30.0 - 1e-9 {
            self.out.jobs.insert(
                j.spec.index,
                (JobOutcome { index: j.spec.index, work: j.work, alive_s: alive, finished }, j.threads()),
            );
        }
    }

    pub(super) fn retire(&mut self) {
        let mut i = 0;
        while i < self.jobs.len() {
            if self.jobs[i].work >= self.jobs[i].total_work() - 1e-6 {
                let j = self.jobs.swap_remove(i);
                for b in 0..self.n {
                    self.used[b] = (self.used[b] - j.mem[b]).max(0.0);
                }
                self.record(&j, true);
            } else {
                i += 1;
            }
        }
    }
}
