//! Counting what NUMA does: per-node allocation counters ([`counters`]),
//! per-node memory with huge pages of every size ([`meminfo`]), the
//! AutoNUMA and migration counters of `/proc/vmstat` ([`vmstat`]), memory
//! of processes per node and their locality ([`process`]), the same for a
//! cgroup (a batch job) with its own NUMA counters ([`cgroup`]), node CPU use
//! ([`cpu`]), rates between samples ([`rate`]) and the refresh model of
//! `top` ([`top`]).
//!
//! Everything here reads through [`SysRoot`] and returns plain data; rates
//! are computed here from (previous, current, interval) so that `stat`,
//! `top`, the JSON and the exporter agree. Nothing here prints or changes
//! the system.

pub mod cgroup;
pub mod counters;
pub mod cpu;
pub mod meminfo;
pub mod process;
#[cfg(test)]
mod proptests;
pub mod rate;
pub mod top;
pub mod vmstat;

use std::time::Duration;

use serde::Serialize;

pub use cgroup::{CgroupCounters, CgroupDir, CgroupError, CgroupSample, JobReport};
pub use counters::{read_node_counters, NodeCounters, NodeRates, NUMASTAT_COUNTERS};
pub use meminfo::{read_node_meminfo, NodeMeminfo};
pub use process::{ProcessNuma, ProcessReport, Selection};
pub use rate::Rate;
pub use vmstat::{read_vmstat, VmNuma, VmRates};

use crate::sys::{SysError, SysRoot};
use crate::topo::Topology;

/// The system page size in bytes.
pub fn page_size() -> u64 {
    // SAFETY: sysconf only reads a configuration value.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(p).ok().filter(|p| *p > 0).unwrap_or(4096)
}

/// Applies `f` to every item on a few threads (at most the CPUs, at most
/// 4) and returns the results in the items' order. Reading `/proc` files of
/// many processes is kernel time spent one process at a time (each
/// `numa_maps` walks that process's page tables under its own mmap lock),
/// so spreading processes over CPUs shortens the wall time; small inputs
/// stay on the calling thread.
pub fn par_map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let threads = std::thread::available_parallelism().map_or(1, usize::from).min(4);
    if items.len() < 32 || threads < 2 {
        return items.iter().map(f).collect();
    }
    let next = AtomicUsize::new(0);
    let mut parts: Vec<Vec<(usize, R)>> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        // Small batches keep the threads busy to the end.
                        let start = next.fetch_add(8, Ordering::Relaxed);
                        if start >= items.len() {
                            return done;
                        }
                        for (i, item) in items.iter().enumerate().skip(start).take(8) {
                            done.push((i, f(item)));
                        }
                    }
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap_or_else(|e| std::panic::resume_unwind(e))).collect()
    });
    let mut all: Vec<(usize, R)> = parts.drain(..).flatten().collect();
    all.sort_by_key(|(i, _)| *i);
    all.into_iter().map(|(_, r)| r).collect()
}

/// The counters of one moment: every node's `numastat` and the AutoNUMA
/// counters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CounterSample {
    /// Per-node counters, sorted by id.
    pub nodes: Vec<NodeCounters>,
    /// `/proc/vmstat` counters.
    pub vm: VmNuma,
}

impl CounterSample {
    /// Reads both.
    pub fn read(sys: &SysRoot) -> Result<Self, SysError> {
        Ok(Self { nodes: read_node_counters(sys)?, vm: read_vmstat(sys)? })
    }

    /// Rates from `prev` to `self` over `interval`.
    pub fn rates_since(&self, prev: &CounterSample, interval: Duration) -> CounterRates {
        CounterRates {
            interval_secs: interval.as_secs_f64(),
            nodes: counters::node_rates(&prev.nodes, &self.nodes, interval),
            vm: vmstat::vm_rates(&prev.vm, &self.vm, interval),
        }
    }
}

/// Rates of every counter over one interval.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CounterRates {
    /// The interval, in seconds.
    pub interval_secs: f64,
    /// Per node.
    pub nodes: Vec<NodeRates>,
    /// AutoNUMA.
    pub vm: VmRates,
}

/// Everything the exporter serves, read in one go.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricsSample {
    /// Node memory and huge pages.
    pub memory: Vec<NodeMeminfo>,
    /// Node counters and AutoNUMA counters.
    pub counters: CounterSample,
    /// The top processes by resident memory, with their resident bytes.
    pub processes: Vec<(ProcessNuma, u64)>,
    /// Top processes that could not be read (permissions).
    pub unreadable: usize,
}

impl MetricsSample {
    /// Reads node memory, counters, and the `top` processes by RSS (their
    /// `numa_maps` only).
    pub fn read(sys: &SysRoot, topo: &Topology, top: usize) -> Result<Self, SysError> {
        let memory = read_node_meminfo(sys)?;
        let counters = CounterSample::read(sys)?;
        let page = page_size();
        let mut processes = Vec::new();
        let mut unreadable = 0;
        if top > 0 {
            for st in process::top_by_rss(sys, top)? {
                match process::read_process(sys, topo, &st)? {
                    Ok(p) => processes.push((p, st.rss_pages * page)),
                    Err(process::Skip::Denied) => unreadable += 1,
                    Err(process::Skip::Exited) => {}
                }
            }
        }
        Ok(Self { memory, counters, processes, unreadable })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn par_map_keeps_order() {
        let items: Vec<u64> = (0..1000).collect();
        let out = super::par_map(&items, |x| x * 2);
        assert_eq!(out, items.iter().map(|x| x * 2).collect::<Vec<_>>());
        assert_eq!(super::par_map(&items[..3], |x| x + 1), vec![1, 2, 3]);
    }
}
