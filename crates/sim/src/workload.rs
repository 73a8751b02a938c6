//! Workloads: job classes of a physics computing farm, and the queue of
//! jobs a scenario runs (job `i` depends only on the seed and `i`, so every
//! policy sees the same jobs in the same order).
//!
//! | class | like | threads | memory | all-remote slowdown | run time |
//! |---|---|---|---|---|---|
//! | `reco` | ATLAS reconstruction, memory-bound | 1 | 1.6–2.4 GiB | 15–45 % | 50–100 min |
//! | `sim` | Geant4 simulation, cache-resident | 1 | 0.4–1.0 GiB | 0–2 % | 50–120 min |
//! | `evgen` | event generation, short | 1 | 0.35–0.7 GiB | 3–25 % | 40–90 s |
//! | `hs06` | HEPSPEC06, one copy per CPU | 1 | 0.5–1.5 GiB | 3–50 % (SPEC CPU2006 spread) | 15–30 min |
//! | `jvm` | SPECjbb-like JVM larger than a node, plus `hs06` copies | 1.5 × a node | 1.5–2.5 GiB per thread | 10–30 % | longer than the run |
//! | `mixed` | 35 % reco, 35 % sim, 10 % evgen, 20 % hs06; 10 % pinned by their owner | | | | |

use serde::Serialize;

use super::rng::Rng;

const GIB: f64 = (1u64 << 30) as f64;

/// A workload class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Class {
    /// Memory-bound long jobs.
    Reco,
    /// Cache-resident jobs.
    Sim,
    /// Short jobs.
    Evgen,
    /// One copy per CPU of a benchmark suite.
    Hs06,
    /// Multi-threaded jobs larger than a node.
    Jvm,
    /// A mix.
    Mixed,
}

impl Class {
    /// All classes.
    pub const ALL: [Class; 6] = [Class::Reco, Class::Sim, Class::Evgen, Class::Hs06, Class::Jvm, Class::Mixed];

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Class::Reco => "reco",
            Class::Sim => "sim",
            Class::Evgen => "evgen",
            Class::Hs06 => "hs06",
            Class::Jvm => "jvm",
            Class::Mixed => "mixed",
        }
    }

    /// The class of a name.
    pub fn from_name(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.name() == s)
    }

    /// Simulated time a scenario of this class runs, seconds.
    pub fn horizon_s(self) -> f64 {
        match self {
            Class::Evgen => 1800.0,
            Class::Hs06 => 5400.0,
            _ => 10800.0,
        }
    }
}

/// One job.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JobSpec {
    /// Position in the queue.
    pub index: usize,
    /// Its kind (for `mixed`, the kind drawn).
    pub kind: Class,
    /// Command name.
    pub comm: &'static str,
    /// Threads (each wants a CPU).
    pub threads: u32,
    /// Memory, bytes.
    pub mem_bytes: f64,
    /// Slowdown with all memory remote on the reference 2-socket machine.
    pub remote_slowdown: f64,
    /// Run time alone with local memory, seconds.
    pub work_s: f64,
    /// Pinned by its owner at start (CPUs and memory to one node).
    pub owner_pin: bool,
}

/// The queue of a scenario.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Workload {
    /// Class.
    pub class: Class,
    /// Seed.
    pub seed: u64,
    /// Threads of a JVM (1.5 × the median node's CPUs).
    pub jvm_threads: u32,
    /// JVMs at the head of a `jvm` queue.
    pub jvms: usize,
    /// Explicit jobs (hand-built cases): when not empty, the queue is
    /// exactly these and then ends.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fixed: Vec<JobSpec>,
}

impl Workload {
    /// The workload of `class` for a machine with `total_cpus` and median
    /// node size `node_cpus`.
    pub fn new(class: Class, seed: u64, total_cpus: u32, node_cpus: u32) -> Self {
        let jvm_threads = (node_cpus * 3).div_ceil(2).max(2);
        let jvms = ((f64::from(total_cpus) * 0.6) / f64::from(jvm_threads)).floor().max(1.0) as usize;
        Self { class, seed, jvm_threads: jvm_threads.min(total_cpus), jvms, fixed: Vec::new() }
    }

    /// A queue of exactly these jobs.
    pub fn fixed(jobs: Vec<JobSpec>) -> Self {
        Self { class: Class::Mixed, seed: 0, jvm_threads: 1, jvms: 0, fixed: jobs }
    }

    /// Job `i`, or `None` when the queue has ended.
    pub fn next_job(&self, i: usize) -> Option<JobSpec> {
        if self.fixed.is_empty() {
            Some(self.job(i))
        } else {
            self.fixed.get(i).cloned().map(|mut j| {
                j.index = i;
                j
            })
        }
    }

    /// Job `i`.
    pub fn job(&self, i: usize) -> JobSpec {
        let mut r = Rng::stream(self.seed ^ 0x10B5, i as u64);
        let kind = match self.class {
            Class::Mixed => r
                .pick(&[(Class::Reco, 0.35), (Class::Sim, 0.35), (Class::Evgen, 0.10), (Class::Hs06, 0.20)])
                .unwrap_or(Class::Reco),
            Class::Jvm if i >= self.jvms => Class::Hs06,
            c => c,
        };
        let owner_pin = self.class == Class::Mixed && r.chance(0.10);
        let (comm, threads, mem, slow, work) = match kind {
            Class::Reco => ("athena", 1, r.range(1.6, 2.4), r.range(0.15, 0.45), r.range(3000.0, 6000.0)),
            Class::Sim => ("geant4", 1, r.range(0.4, 1.0), r.range(0.0, 0.02), r.range(3000.0, 7200.0)),
            Class::Evgen => ("evgen", 1, r.range(0.35, 0.7), r.range(0.03, 0.25), r.range(40.0, 90.0)),
            Class::Hs06 => ("hs06", 1, r.range(0.5, 1.5), r.range(0.03, 0.5), r.range(900.0, 1800.0)),
            Class::Jvm | Class::Mixed => {
                let t = self.jvm_threads;
                ("java", t, f64::from(t) * r.range(1.5, 2.5), r.range(0.1, 0.3), 1.0e6)
            }
        };
        JobSpec { index: i, kind, comm, threads, mem_bytes: mem * GIB, remote_slowdown: slow, work_s: work, owner_pin }
    }
}
