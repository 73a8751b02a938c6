//! Synthetic farms whose truth is known: step outcome records of job
//! classes with injected effects (a gain, a loss, none, a cut in
//! variation), hosts of two hardware keys with small host-to-host
//! differences and optionally one slow host, heavy-tailed run times
//! (log-normal, or Pareto: ln T = ln median + s (E - 1) with E exponential,
//! a tail of index 1/s), a few failing jobs, jobs of several steps and
//! hosts, users' own choices. Deterministic from a seed (its own
//! SplitMix64, so a library update never changes a farm). For the
//! calibration tests and the scale benchmark; never used by the analysis.

use std::io::{self, Write};

use numakit::experiment::{ArmSource, Hardware, Numa, Placement, StepOutcome, Unit, SCHEMA};

/// SplitMix64 (Steele, Lea, Flood 2014).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15)
    }
    /// The next 64 bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        crate::jobs::mix(self.0)
    }
    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Uniform integer below `n` (0 for 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next_u64() % n
        }
    }
    /// Standard normal (Box–Muller).
    pub fn normal(&mut self) -> f64 {
        let u = self.unit().max(1e-300);
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * self.unit()).cos()
    }
    /// Exponential with mean 1.
    pub fn exp1(&mut self) -> f64 {
        -(1.0 - self.unit()).ln()
    }
}

/// The shape of run times around a class's median.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tail {
    /// ln T normal.
    LogNormal,
    /// ln T = ln median + s (E - 1): a Pareto tail.
    Pareto,
}

/// A job class and what the `auto` arm does to it against `none`.
#[derive(Debug, Clone)]
pub struct Class {
    /// Its job name.
    pub name: String,
    /// Weight among the classes.
    pub weight: f64,
    /// Median wall time under `none`, seconds.
    pub median_s: f64,
    /// Standard deviation of ln T under `none` (the job-to-job spread).
    pub sd_log: f64,
    /// The true effect of `auto`: E[ln T | auto] - E[ln T | none].
    pub effect: f64,
    /// sd(ln T | auto) / sd(ln T | none) of the job-to-job spread.
    pub sd_factor: f64,
    /// Run-time shape.
    pub tail: Tail,
}

/// A farm to generate.
#[derive(Debug, Clone)]
pub struct Farm {
    /// Seed.
    pub seed: u64,
    /// Jobs.
    pub jobs: u64,
    /// Days the jobs' starts spread over, from 2026-01-01.
    pub days: f64,
    /// Hosts of the first and the second hardware key.
    pub hosts: [u32; 2],
    /// The classes.
    pub classes: Vec<Class>,
    /// Host-to-host standard deviation of ln T (every host's own speed).
    pub host_sd: f64,
    /// One host (index over all hosts) made this much slower (1.2: 20%).
    pub slow_host: Option<(u32, f64)>,
    /// Share of jobs that fail (exit 1, cut short).
    pub fail_rate: f64,
    /// Share of jobs with a batch step and an srun step (two lines).
    pub two_steps: f64,
    /// Share of jobs whose srun step runs on two hosts.
    pub two_hosts: f64,
    /// Share of jobs whose user chose the arm (kept out of comparisons).
    pub chosen: f64,
    /// The randomization unit.
    pub unit: Unit,
    /// Period of switchback designs, seconds.
    pub period_s: f64,
    /// Share of `auto` among the assigned (the rest `none`).
    pub auto_share: f64,
    /// Hosts of a per-host design get a host-to-host extra ln T spread
    /// correlated over their periods (on top of `host_sd`).
    pub experiment: String,
}

impl Farm {
    /// The farm of the calibration tests: six classes (a 3% gain on a
    /// log-normal class, a 3% loss on a Pareto class, two classes with no
    /// effect, a variation cut from 11.5% to 3.8% with no effect on the
    /// mean, a 5% gain with heavy tails), hosts of two keys, one slow
    /// host 20% slower, 1% failing jobs, per-job arms at 50:50.
    pub fn calibration(seed: u64, jobs: u64) -> Farm {
        let c = |name: &str, weight, median_s, sd_log, effect: f64, sd_factor, tail| Class {
            name: name.into(),
            weight,
            median_s,
            sd_log,
            effect,
            sd_factor,
            tail,
        };
        Farm {
            seed,
            jobs,
            days: 7.0,
            hosts: [12, 8],
            classes: vec![
                c("reco", 1.0, 1800.0, 0.20, (0.97f64).ln(), 1.0, Tail::LogNormal),
                c("sim", 1.0, 3600.0, 0.25, (1.03f64).ln(), 1.0, Tail::Pareto),
                c("hepspec", 1.0, 600.0, 0.10, 0.0, 1.0, Tail::LogNormal),
                c("analysis", 1.0, 300.0, 0.40, 0.0, 1.0, Tail::Pareto),
                c("eda", 1.0, 7200.0, 0.115, 0.0, 0.33, Tail::LogNormal),
                c("cfd", 1.0, 5400.0, 0.30, (0.95f64).ln(), 1.0, Tail::Pareto),
            ],
            host_sd: 0.01,
            slow_host: Some((3, 1.2)),
            fail_rate: 0.01,
            two_steps: 0.3,
            two_hosts: 0.05,
            chosen: 0.03,
            unit: Unit::Job,
            period_s: 6.0 * 3600.0,
            auto_share: 0.5,
            experiment: "numa-test".into(),
        }
    }

    fn host_name(&self, h: u32) -> String {
        format!("wn{h:04}")
    }

    /// Writes the farm's records, one JSON line each, to `out`; returns
    /// the lines written.
    pub fn write(&self, out: &mut impl Write) -> io::Result<u64> {
        let mut rng = Rng::new(self.seed);
        let n_hosts = self.hosts[0] + self.hosts[1];
        let host_effect: Vec<f64> = (0..n_hosts)
            .map(|h| {
                let slow = match self.slow_host {
                    Some((s, f)) if s == h => f.ln(),
                    _ => 0.0,
                };
                self.host_sd * rng.normal() + slow
            })
            .collect();
        let hw: [Hardware; 2] = [
            hardware(2, 32, "Intel(R) Xeon(R) Gold 6130 CPU @ 2.10GHz"),
            hardware(4, 64, "AMD EPYC 7702P 64-Core Processor"),
        ];
        let total_weight: f64 = self.classes.iter().map(|c| c.weight).sum();
        let start0 = 1_767_225_600.0; // 2026-01-01T00:00:00Z
        let mut lines = 0;
        let mut line = Vec::with_capacity(2048);
        for j in 0..self.jobs {
            let mut pick = rng.unit() * total_weight;
            let class = self
                .classes
                .iter()
                .find(|c| {
                    pick -= c.weight;
                    pick < 0.0
                })
                .unwrap_or(&self.classes[self.classes.len() - 1]);
            let host = rng.below(u64::from(n_hosts)) as u32;
            let key = usize::from(host >= self.hosts[0]);
            let start = start0 + rng.unit() * self.days * 86_400.0;
            let period = (start / self.period_s).floor() as u64;
            let (arm, source) = if rng.unit() < self.chosen {
                (if rng.unit() < 0.5 { "auto" } else { "local" }, ArmSource::Chosen)
            } else {
                let u = match self.unit {
                    Unit::Job => rng.unit(),
                    Unit::Host => Rng::new(self.seed ^ 0xA5A5 ^ u64::from(host) << 20).unit(),
                    Unit::HostPeriod => Rng::new(self.seed ^ 0x5A5A ^ (u64::from(host) << 40) ^ period).unit(),
                };
                (if u < self.auto_share { "auto" } else { "none" }, ArmSource::Assigned)
            };
            let auto = arm == "auto";
            let eps = match class.tail {
                Tail::LogNormal => rng.normal(),
                Tail::Pareto => rng.exp1() - 1.0,
            };
            let s = class.sd_log * if auto { class.sd_factor } else { 1.0 };
            let ln_t =
                class.median_s.ln() + host_effect[host as usize] + if auto { class.effect } else { 0.0 } + s * eps;
            let mut wall = ln_t.exp();
            let failed = rng.unit() < self.fail_rate;
            if failed {
                wall *= rng.unit().max(0.01);
            }
            let ci = self.classes.iter().position(|c| c.name == class.name).unwrap_or(0);
            let cpus = [4u32, 8, 16][ci % 3];
            let eff = (0.92 + 0.03 * rng.normal()).clamp(0.5, 1.0);
            let cpu_total = wall * f64::from(cpus) * eff;
            let locality = if auto { 0.97 + 0.02 * rng.unit() } else { 0.55 + 0.4 * rng.unit() };
            // the job's lines: (step, host, start, end, share of its CPU)
            let mut parts: Vec<(&str, u32, f64, f64, f64)> = Vec::with_capacity(3);
            if rng.unit() < self.two_steps {
                parts.push(("batch", host, start, start + wall, 0.02));
                let second = if rng.unit() < self.two_hosts {
                    // a host of the same key
                    let base = if key == 0 { 0 } else { self.hosts[0] };
                    Some(base + rng.below(u64::from(self.hosts[key])) as u32)
                } else {
                    None
                };
                let s0 = start + wall * 0.01;
                match second {
                    Some(h2) if h2 != host => {
                        parts.push(("0", host, s0, start + wall * 0.995, 0.49));
                        parts.push(("0", h2, s0, start + wall * 0.995, 0.49));
                    }
                    _ => parts.push(("0", host, s0, start + wall * 0.995, 0.98)),
                }
            } else {
                parts.push(("batch", host, start, start + wall, 1.0));
            }
            for (p, &(step, h, st, en, share)) in parts.iter().enumerate() {
                let last = p + 1 == parts.len();
                let r = StepOutcome {
                    class: None,
                    schema: SCHEMA.into(),
                    cluster: "farm".into(),
                    job: (1_000_000 + j).to_string(),
                    step: step.into(),
                    array_job: None,
                    array_task: None,
                    host: self.host_name(h),
                    user: Some(format!("user{:02}", j % 37)),
                    job_name: Some(class.name.clone()),
                    partition: Some(if key == 0 { "intel" } else { "amd" }.into()),
                    account: Some("physics".into()),
                    batch_system: "slurm".into(),
                    experiment: Some(self.experiment.clone()),
                    unit: Some(self.unit),
                    period: (self.unit == Unit::HostPeriod).then_some(period),
                    arm: arm.into(),
                    arm_source: source,
                    arms: Some(format!(
                        "auto:{:.0},none:{:.0}",
                        self.auto_share * 100.0,
                        (1.0 - self.auto_share) * 100.0
                    )),
                    placement: Placement {
                        mode: arm.into(),
                        cpus: Some(format!("0-{}", cpus - 1)),
                        memory: Some(if auto { "bind 0" } else { "unchanged" }.into()),
                    },
                    start_unix: round3(st),
                    end_unix: round3(en),
                    wall_s: round3(en - st),
                    cpu_user_s: Some(round3(cpu_total * share * 0.97)),
                    cpu_system_s: Some(round3(cpu_total * share * 0.03)),
                    cpu_source: Some("cpu.stat".into()),
                    cpus: Some(cpus),
                    cpu_efficiency: Some((eff * 1000.0).round() / 1000.0),
                    peak_memory_bytes: Some((1 + rng.below(64)) << 28),
                    exit_status: Some(if failed && last { 1 } else { 0 }),
                    exit_signal: None,
                    numa: Some(Numa {
                        locality: Some((locality * 1e4).round() / 1e4),
                        node_bytes: vec![(0, (1 + rng.below(1 << 20)) << 12), (1, rng.below(1 << 18) << 12)],
                        counters_delta: vec![
                            ("numa_pages_migrated".into(), rng.below(5000)),
                            ("numa_pte_updates".into(), rng.below(50_000)),
                            ("numa_hint_faults".into(), rng.below(40_000)),
                            ("numa_hint_faults_local".into(), rng.below(30_000)),
                        ],
                    }),
                    numakit_version: "0.1.0".into(),
                    hardware: hw[key].clone(),
                };
                line.clear();
                serde_json::to_writer(&mut line, &r).map_err(io::Error::other)?;
                line.push(b'\n');
                out.write_all(&line)?;
                lines += 1;
            }
        }
        Ok(lines)
    }
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

fn hardware(packages: u32, cores: u32, model: &str) -> Hardware {
    let nodes = packages;
    Hardware {
        key: format!(
            "{packages}p{nodes}n{cores}c{}t-{}g-{}",
            cores * 2,
            96 * nodes,
            model.split_whitespace().take(3).collect::<Vec<_>>().join("_")
        ),
        packages,
        nodes,
        cores,
        cpus: cores * 2,
        node_mem_bytes: vec![96 << 30; nodes as usize],
        cpu_model: Some(model.into()),
    }
}
