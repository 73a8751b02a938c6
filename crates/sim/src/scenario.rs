//! Scenarios: a machine, a workload queue, a horizon and a seed. The named
//! ones cover every class on the machines it matters on; random ones draw
//! a machine (2–32 nodes) and a workload from a seed, for each class.

use std::ops::Range;

use serde::Serialize;

use super::machines::SimMachine;
use super::workload::{Class, Workload};

/// One scenario.
#[derive(Debug, Clone, Serialize)]
pub struct Scenario {
    /// Name (`reco-2s`, or `random-reco-17`).
    pub name: String,
    /// Workload class.
    pub class: Class,
    /// Machine.
    #[serde(skip)]
    pub machine: SimMachine,
    /// Machine name.
    pub machine_name: String,
    /// Workload.
    pub workload: Workload,
    /// Simulated seconds.
    pub horizon_s: f64,
    /// Seed (workload, scheduler, counters).
    pub seed: u64,
    /// Whether it was generated from a seed.
    pub random: bool,
}

fn median_node_cpus(m: &SimMachine) -> u32 {
    let mut v: Vec<u32> = m.model.nodes.iter().map(|n| n.cpus).filter(|&c| c > 0).collect();
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or(1)
}

impl Scenario {
    /// A scenario of `class` on `machine`.
    pub fn new(name: &str, class: Class, machine: SimMachine, seed: u64, random: bool) -> Self {
        let workload = Workload::new(class, seed, machine.total_cpus(), median_node_cpus(&machine));
        Self {
            name: name.into(),
            class,
            machine_name: machine.name.clone(),
            machine,
            workload,
            horizon_s: class.horizon_s(),
            seed,
            random,
        }
    }

    /// The named scenarios.
    pub fn named() -> Vec<Self> {
        use Class::*;
        type Named = (&'static str, Class, fn() -> SimMachine);
        let list: [Named; 14] = [
            ("reco-2s", Reco, SimMachine::intel_2s),
            ("reco-8n", Reco, SimMachine::amd_8n),
            ("reco-tiered", Reco, SimMachine::tiered),
            ("sim-2s", Sim, SimMachine::intel_2s),
            ("sim-4s", Sim, SimMachine::intel_4s),
            ("evgen-2s", Evgen, SimMachine::intel_2s),
            ("hs06-2s", Hs06, SimMachine::intel_2s),
            ("hs06-8n", Hs06, SimMachine::amd_8n),
            ("jvm-4s", Jvm, SimMachine::intel_4s),
            ("jvm-8n", Jvm, SimMachine::amd_8n),
            ("mixed-2s", Mixed, SimMachine::intel_2s),
            ("mixed-4s", Mixed, SimMachine::intel_4s),
            ("mixed-8n", Mixed, SimMachine::amd_8n),
            ("mixed-tiered", Mixed, SimMachine::tiered),
        ];
        list.iter().enumerate().map(|(i, (name, class, m))| Self::new(name, *class, m(), 1 + i as u64, false)).collect()
    }

    /// A random scenario of `class` from `seed`.
    pub fn random(class: Class, seed: u64) -> Self {
        let mix = seed.wrapping_mul(1000).wrapping_add(class as u64 + 1);
        let machine = SimMachine::random(mix);
        Self::new(&format!("random-{}-{seed}", class.name()), class, machine, mix, true)
    }

    /// `seeds` random scenarios of every class (seeds 0 to `seeds` - 1).
    pub fn random_set(seeds: u64) -> Vec<Self> {
        Self::random_range(0..seeds)
    }

    /// The random scenarios of every class from the seeds of `seeds`,
    /// class by class.
    pub fn random_range(seeds: Range<u64>) -> Vec<Self> {
        Class::ALL.iter().flat_map(|&c| seeds.clone().map(move |s| Self::random(c, s))).collect()
    }

    /// A named scenario, or `random-CLASS-SEED`.
    pub fn by_name(name: &str) -> Option<Self> {
        if let Some(rest) = name.strip_prefix("random-") {
            let (class, seed) = rest.rsplit_once('-')?;
            return Some(Self::random(Class::from_name(class)?, seed.parse().ok()?));
        }
        Self::named().into_iter().find(|s| s.name == name)
    }
}
