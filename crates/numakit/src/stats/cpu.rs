//! How busy each node's CPUs were between two `/proc/stat` samples.

use crate::sets::CpuSet;
use crate::sys::stat::{self, CpuSample};
use crate::sys::{SysError, SysRoot};
use crate::topo::Topology;

/// The CPUs idle at least `threshold` (0..=1) of a `window` starting now:
/// `/proc/stat` read, `window` slept, read again.
pub fn idle_cpus_over(sys: &SysRoot, window: std::time::Duration, threshold: f64) -> Result<CpuSet, SysError> {
    let before = stat::read_cpu_sample(sys)?;
    std::thread::sleep(window);
    let after = stat::read_cpu_sample(sys)?;
    Ok(stat::idle_cpus(&before, &after, threshold))
}

/// Busy share (0..=1) of each node's CPUs between two samples, weighting
/// every CPU by its elapsed ticks; `None` for a node without CPUs or
/// without elapsed ticks. In the order of [`Topology::nodes`].
pub fn node_busy(topo: &Topology, before: &CpuSample, after: &CpuSample) -> Vec<(u32, Option<f64>)> {
    topo.nodes
        .iter()
        .map(|n| {
            let (mut total, mut idle) = (0u64, 0u64);
            for cpu in n.cpus.iter() {
                let (Some(a), Some(b)) = (after.get(&cpu), before.get(&cpu)) else { continue };
                total += a.total.saturating_sub(b.total);
                idle += a.idle.saturating_sub(b.idle);
            }
            (n.id, (total > 0).then(|| total.saturating_sub(idle) as f64 / total as f64))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::stat::parse_stat;
    use crate::sys::SysRoot;
    use crate::topo::synth::SynthMachine;

    #[test]
    fn busy_per_node() {
        let d = tempfile::tempdir().expect("tmp");
        SynthMachine::intel_2s_ht(2, 1024).write(d.path()).expect("write");
        let topo = Topology::read_nodes_only(&SysRoot::at(d.path())).expect("topo");
        let ids: Vec<u32> = topo.nodes.iter().map(|n| n.id).collect();
        let cpus0: Vec<u32> = topo.nodes[0].cpus.iter().collect();
        let mut a = String::new();
        let mut b = String::new();
        for (i, c) in cpus0.iter().enumerate() {
            // CPU 0 of node 0: 75% busy; the others idle.
            a.push_str(&format!("cpu{c} 0 0 0 0 0 0 0 0\n"));
            let (busy, idle) = if i == 0 { (75, 25) } else { (0, 100) };
            b.push_str(&format!("cpu{c} {busy} 0 0 {idle} 0 0 0 0\n"));
        }
        let r = node_busy(&topo, &parse_stat(&a).unwrap(), &parse_stat(&b).unwrap());
        assert_eq!(r.len(), ids.len());
        let want = 75.0 / (100.0 * cpus0.len() as f64);
        assert!((r[0].1.expect("busy") - want).abs() < 1e-12);
        assert_eq!(r[1].1, None);
    }
}
