//! What a collector would read of the simulated machine: a daemon
//! [`Snapshot`] (nodes' free CPUs and memory, each job as a process with
//! its measurement window), and which jobs exited since the last one.

use numakit::daemon::{MemPolicy, NodeState, ProcInfo, Progress, Snapshot};
use numakit::sets::NodeSet;

use super::{bits, Engine, Pol, PAGE};

impl Engine<'_> {
    pub(super) fn ids(&self, mask: u64) -> NodeSet {
        bits(mask).filter(|&i| i < self.n).map(|i| self.m.id(i)).collect()
    }

    /// What a collector would read now; resets the measurement window.
    pub fn snapshot(&mut self) -> Snapshot {
        self.load();
        let nodes = (0..self.n)
            .map(|a| NodeState {
                id: self.m.id(a),
                free_cpus: (self.cpus[a] - f64::from(self.r[a])).max(0.0),
                free_bytes: (self.cap[a] - self.used[a]).max(0.0) as u64,
                // Every job is listed, pinned ones with their affinity.
                bound_cpus: 0.0,
            })
            .collect();
        let mut procs = Vec::with_capacity(self.jobs.len());
        for ji in 0..self.jobs.len() {
            let noise = if self.p.counters { 1.0 + self.p.counter_noise * self.jobs[ji].rng.normal() } else { 1.0 };
            let j = &self.jobs[ji];
            if j.alloc <= 0.0 || j.w_time <= 0.0 {
                continue;
            }
            let wt = j.w_time;
            let sm = self.m;
            let pol = match j.pol {
                Pol::Default => MemPolicy::Default,
                Pol::Prefer(m) => MemPolicy::Preferred(self.ids(m)),
                Pol::Interleave(m) => MemPolicy::Interleave(self.ids(m)),
            };
            let m = j.w_meff / wt;
            procs.push(ProcInfo {
                pid: j.pid,
                comm: j.spec.comm.to_string(),
                uid: 1000,
                cgroup: format!("/batch.slice/job{}", j.spec.index),
                threads: j.threads(),
                cpu_use: j.w_cpu / wt,
                cpu_wait: j.w_wait / wt,
                rss_bytes: j.alloc as u64,
                mem_per_node: (0..self.n).filter(|&b| j.mem[b] >= PAGE).map(|b| (sm.id(b), j.mem[b] as u64)).collect(),
                cpu_per_node: (0..self.n)
                    .filter(|&a| j.w_node[a] > 0.0)
                    .map(|a| (sm.id(a), j.w_node[a] / wt))
                    .collect(),
                // The model knows where every thread ran all along.
                cpu_measured: true,
                rate_span_s: 0.0,
                rates_from_s: None,
                affinity: self.ids(j.mask),
                cpuset: NodeSet::new(),
                mem_policy: pol,
                owner_pinned: j.owner_pinned,
                age_s: self.t - j.start,
                progress: Progress { cpu_rate: j.w_cpu / wt, instr_rate: self.p.counters.then(|| j.w_work / wt) },
                mem_stall_share: self
                    .p
                    .counters
                    .then(|| (self.cost.observed_stall(j.s, m) * noise.max(0.0)).clamp(0.0, 1.0)),
            });
        }
        for j in &mut self.jobs {
            j.w_cpu = 0.0;
            j.w_wait = 0.0;
            j.w_work = 0.0;
            j.w_meff = 0.0;
            j.w_time = 0.0;
            j.w_node.iter_mut().for_each(|x| *x = 0.0);
        }
        let mut shown: Vec<i32> = procs.iter().map(|p| p.pid).collect();
        shown.sort_unstable();
        // Jobs get pids never used before, so a pid no longer shown exited.
        let exited = self.shown.iter().filter(|pid| shown.binary_search(pid).is_err()).copied().collect();
        self.shown = shown;
        Snapshot { time_s: self.t, nodes, procs, exited }
    }
}
