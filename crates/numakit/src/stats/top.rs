//! The model behind `numakit top`: one [`TopSampler::sample`] per refresh
//! gives a [`TopFrame`] (nodes, AutoNUMA activity, the processes to show),
//! with rates computed from the previous sample. It never draws.
//!
//! Cost per refresh: `/proc/stat`, each node's `meminfo` and `numastat`,
//! `/proc/vmstat`, and one `/proc/PID/stat` per process; then, only for the
//! rows shown, the threads' `stat` (multi-threaded processes),
//! `numa_maps` and `sched`. No file is read twice in a refresh.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use serde::Serialize;

use super::counters::{self, node_rates, NodeCounters};
use super::meminfo::{self, NodeMeminfo};
use super::process::{self, skip_reason, ProcessNuma, Skip};
use super::vmstat::{self, vm_rates, VmNuma};
use crate::procs::{self, pidstat, ProcStat};
use crate::sys::stat::{self as cpustat, CpuSample};
use crate::sys::{SysError, SysRoot};
use crate::topo::Topology;

/// What the process table is sorted by (largest first, except pid and
/// name). Keys that need `numa_maps` are not offered: sorting must not
/// read it for every process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum SortKey {
    /// Resident memory.
    Rss,
    /// CPU use over the last interval.
    Cpu,
    /// Thread count.
    Threads,
    /// Process id (ascending).
    Pid,
    /// Command name (ascending).
    Name,
}

impl SortKey {
    /// Every key, in the order `s` cycles through them.
    pub const ALL: [SortKey; 5] = [SortKey::Rss, SortKey::Cpu, SortKey::Threads, SortKey::Pid, SortKey::Name];

    /// Its name on the command line and in the header.
    pub fn name(self) -> &'static str {
        match self {
            SortKey::Rss => "rss",
            SortKey::Cpu => "cpu",
            SortKey::Threads => "threads",
            SortKey::Pid => "pid",
            SortKey::Name => "name",
        }
    }

    /// The key called `name`.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The next key in [`SortKey::ALL`].
    pub fn next(self) -> Self {
        let i = Self::ALL.iter().position(|k| *k == self).unwrap_or(0);
        Self::ALL[(i + 1) % Self::ALL.len()]
    }
}

/// What to show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopOptions {
    /// Sort key.
    pub sort: SortKey,
    /// Only processes whose command name contains this.
    pub name: Option<String>,
    /// Only processes of this user (name or uid).
    pub user: Option<String>,
    /// How many process rows to fill (read `numa_maps` for).
    pub rows: usize,
}

impl Default for TopOptions {
    fn default() -> Self {
        Self { sort: SortKey::Rss, name: None, user: None, rows: 20 }
    }
}

/// One node in the node panel.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NodeRow {
    /// Node id.
    pub id: u32,
    /// `MemTotal`.
    pub total_bytes: Option<u64>,
    /// `MemFree`.
    pub free_bytes: Option<u64>,
    /// Busy share of its CPUs over the interval (`None`: first sample or
    /// no CPUs).
    pub cpu_busy: Option<f64>,
    /// `numa_hit` per second.
    pub hit_per_sec: Option<f64>,
    /// `numa_miss` per second.
    pub miss_per_sec: Option<f64>,
}

/// Machine-wide AutoNUMA activity over the interval.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SystemRow {
    /// `numa_hint_faults` per second.
    pub hint_faults_per_sec: Option<f64>,
    /// Local share of those faults.
    pub hint_local_ratio: Option<f64>,
    /// `numa_pages_migrated` per second.
    pub pages_migrated_per_sec: Option<f64>,
}

/// One row of the process table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProcRow {
    /// Process id.
    pub pid: i32,
    /// Command name.
    pub comm: String,
    /// Owner's name (or uid).
    pub user: String,
    /// Threads.
    pub threads: u64,
    /// Resident memory.
    pub rss_bytes: u64,
    /// CPU use over the interval, in CPUs (1.0 = one CPU busy).
    pub cpu: Option<f64>,
    /// Memory per node, running nodes and locality (`None` if it could not
    /// be read: see `skipped`).
    pub memory: Option<ProcessNuma>,
    /// NUMA pages migrated for it (main thread, `/proc/PID/sched`).
    pub migrations: Option<u64>,
    /// Why `memory` is missing.
    pub denied: bool,
}

/// One refresh.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TopFrame {
    /// Time since the previous sample (`None` for the first).
    pub interval_secs: Option<f64>,
    /// Node panel, sorted by id.
    pub nodes: Vec<NodeRow>,
    /// AutoNUMA activity.
    pub system: SystemRow,
    /// Process rows, sorted.
    pub processes: Vec<ProcRow>,
    /// Processes passing the filters.
    pub matched: usize,
    /// Processes seen (kernel threads left out).
    pub total: usize,
}

struct Prev {
    at: Instant,
    cpu: CpuSample,
    counters: Vec<NodeCounters>,
    vm: VmNuma,
    /// pid -> (start time, CPU ticks).
    ticks: HashMap<i32, (u64, u64)>,
}

/// Samples the system refresh after refresh, keeping what rates need.
pub struct TopSampler {
    prev: Option<Prev>,
    users: BTreeMap<u32, String>,
    page_size: u64,
    ticks_per_sec: f64,
}

impl TopSampler {
    /// A sampler for `sys`, reading user names once.
    pub fn new(sys: &SysRoot) -> Result<Self, SysError> {
        Ok(Self::with_units(pidstat::read_user_names(sys)?, super::page_size(), pidstat::clock_ticks_per_sec()))
    }

    /// A sampler with given user names, page size and clock tick rate
    /// (tests use fixed ones).
    pub fn with_units(users: BTreeMap<u32, String>, page_size: u64, ticks_per_sec: f64) -> Self {
        Self { prev: None, users, page_size, ticks_per_sec }
    }

    fn user_name(&self, uid: Option<u32>) -> String {
        match uid {
            None => "?".to_string(),
            Some(u) => self.users.get(&u).cloned().unwrap_or_else(|| u.to_string()),
        }
    }

    fn user_matches(&self, want: &str, uid: Option<u32>) -> bool {
        let Some(uid) = uid else { return false };
        want.parse::<u32>().ok() == Some(uid) || self.users.get(&uid).is_some_and(|n| n == want)
    }

    /// Reads one refresh at time `now`.
    pub fn sample(
        &mut self,
        sys: &SysRoot,
        topo: &Topology,
        opts: &TopOptions,
        now: Instant,
    ) -> Result<TopFrame, SysError> {
        let cpu = cpustat::read_cpu_sample(sys).unwrap_or_default();
        let mem = meminfo::read_node_free(sys)?;
        let counters = counters::read_node_counters(sys).unwrap_or_default();
        let vm = vmstat::read_vmstat(sys)?;
        let interval = self.prev.as_ref().map(|p| now.saturating_duration_since(p.at));

        // Every process's stat, once.
        let mut stats: Vec<(ProcStat, Option<u32>)> = Vec::new();
        let mut total = 0;
        for pid in procs::list_pids(sys)? {
            let st = match procs::read_proc_stat(sys, pid) {
                Ok(Some(st)) if !st.is_kernel_thread() => st,
                Ok(_) => continue,
                Err(e) if skip_reason(&e).is_some() => continue,
                Err(e) => return Err(e),
            };
            total += 1;
            if opts.name.as_deref().is_some_and(|n| !st.comm.contains(n)) {
                continue;
            }
            let uid = if opts.user.is_some() { pidstat::owner_uid(sys, pid) } else { None };
            if opts.user.as_deref().is_some_and(|u| !self.user_matches(u, uid)) {
                continue;
            }
            stats.push((st, uid));
        }
        let cpu_of = |st: &ProcStat| -> Option<f64> {
            let p = self.prev.as_ref()?;
            let secs = interval?.as_secs_f64();
            let (start, ticks) = p.ticks.get(&st.pid)?;
            (*start == st.start_ticks && secs > 0.0)
                .then(|| st.cpu_ticks.saturating_sub(*ticks) as f64 / self.ticks_per_sec / secs)
        };
        let mut rows: Vec<(ProcStat, Option<u32>, Option<f64>)> = stats
            .into_iter()
            .map(|(st, uid)| {
                let c = cpu_of(&st);
                (st, uid, c)
            })
            .collect();
        let matched = rows.len();
        sort_rows(&mut rows, opts.sort);
        let ticks = rows.iter().map(|(st, _, _)| (st.pid, (st.start_ticks, st.cpu_ticks))).collect();
        rows.truncate(opts.rows);

        let mut processes = Vec::with_capacity(rows.len());
        for (st, uid, cpu_use) in rows {
            let uid = uid.or_else(|| pidstat::owner_uid(sys, st.pid));
            let (memory, denied) = match process::read_process(sys, topo, &st)? {
                Ok(p) => (Some(p), false),
                Err(Skip::Exited) => continue,
                Err(Skip::Denied) => (None, true),
            };
            let migrations = if denied { None } else { pidstat::read_numa_pages_migrated(sys, st.pid).ok().flatten() };
            processes.push(ProcRow {
                pid: st.pid,
                user: self.user_name(uid),
                threads: st.num_threads,
                rss_bytes: st.rss_pages.saturating_mul(self.page_size),
                cpu: cpu_use,
                comm: st.comm,
                memory,
                migrations,
                denied,
            });
        }

        let prev = self.prev.as_ref();
        let busy: BTreeMap<u32, Option<f64>> =
            prev.map(|p| super::cpu::node_busy(topo, &p.cpu, &cpu).into_iter().collect()).unwrap_or_default();
        let rates = match (prev, interval) {
            (Some(p), Some(i)) => node_rates(&p.counters, &counters, i),
            _ => Vec::new(),
        };
        let per_sec = |id: u32, name: &str| -> Option<f64> {
            rates.iter().find(|r| r.id == id)?.rates.iter().find(|(k, _)| k == name).map(|(_, r)| r.per_sec)
        };
        let mut ids: Vec<u32> = topo.nodes.iter().map(|n| n.id).collect();
        ids.extend(mem.iter().map(|m| m.id).filter(|id| !topo.nodes.iter().any(|n| n.id == *id)));
        let mem_of = |id: u32| -> Option<&NodeMeminfo> { mem.iter().find(|m| m.id == id) };
        let nodes = ids
            .into_iter()
            .map(|id| NodeRow {
                id,
                total_bytes: mem_of(id).and_then(NodeMeminfo::total_bytes),
                free_bytes: mem_of(id).and_then(NodeMeminfo::free_bytes),
                cpu_busy: busy.get(&id).copied().flatten(),
                hit_per_sec: per_sec(id, "numa_hit"),
                miss_per_sec: per_sec(id, "numa_miss"),
            })
            .collect();
        let system = match (prev, interval) {
            (Some(p), Some(i)) => {
                let r = vm_rates(&p.vm, &vm, i);
                let ps = |name: &str| r.rates.iter().find(|(k, _)| k == name).map(|(_, r)| r.per_sec);
                SystemRow {
                    hint_faults_per_sec: ps("numa_hint_faults"),
                    hint_local_ratio: r.hint_local_ratio,
                    pages_migrated_per_sec: ps("numa_pages_migrated"),
                }
            }
            _ => SystemRow::default(),
        };
        self.prev = Some(Prev { at: now, cpu, counters, vm, ticks });
        Ok(TopFrame {
            interval_secs: interval.map(|d: Duration| d.as_secs_f64()),
            nodes,
            system,
            processes,
            matched,
            total,
        })
    }
}

fn sort_rows(rows: &mut [(ProcStat, Option<u32>, Option<f64>)], key: SortKey) {
    match key {
        SortKey::Rss => rows.sort_by(|a, b| b.0.rss_pages.cmp(&a.0.rss_pages).then(a.0.pid.cmp(&b.0.pid))),
        SortKey::Cpu => rows.sort_by(|a, b| {
            let (x, y) = (a.2.unwrap_or(-1.0), b.2.unwrap_or(-1.0));
            y.total_cmp(&x).then(b.0.rss_pages.cmp(&a.0.rss_pages)).then(a.0.pid.cmp(&b.0.pid))
        }),
        SortKey::Threads => rows.sort_by(|a, b| b.0.num_threads.cmp(&a.0.num_threads).then(a.0.pid.cmp(&b.0.pid))),
        SortKey::Pid => rows.sort_by_key(|r| r.0.pid),
        SortKey::Name => rows.sort_by(|a, b| a.0.comm.cmp(&b.0.comm).then(a.0.pid.cmp(&b.0.pid))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &std::path::Path, rel: &str, text: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, text).expect("write");
    }

    fn stat_line(pid: i32, comm: &str, ticks: u64, threads: u64, rss: u64, cpu: u32) -> String {
        // Fields 3..39: state ppid pgrp session tty tpgid flags minflt cminflt
        // majflt cmajflt utime stime cutime cstime priority nice threads
        // itrealvalue starttime vsize rss ... processor (39).
        let mut f: Vec<String> = vec!["0".into(); 37];
        f[0] = "S".into();
        f[1] = "1".into();
        f[11] = ticks.to_string();
        f[17] = threads.to_string();
        f[19] = "77".into();
        f[21] = rss.to_string();
        f[36] = cpu.to_string();
        format!("{pid} ({comm}) {}\n", f.join(" "))
    }

    /// A fake root: two nodes (CPUs 0-1 and 2-3), three processes.
    fn fake(dir: &std::path::Path, tick: u64) {
        let m = crate::topo::synth::SynthMachine::two_by_two(1024);
        m.write(dir).expect("synth");
        let nd = "sys/devices/system/node";
        write(dir, &format!("{nd}/node0/numastat"), &format!("numa_hit {}\nnuma_miss 0\n", 1000 + 100 * tick));
        write(dir, &format!("{nd}/node1/numastat"), &format!("numa_hit {}\nnuma_miss {}\n", 10, 4 * tick));
        write(
            dir,
            "proc/vmstat",
            &format!(
                "numa_hint_faults {}\nnuma_hint_faults_local {}\nnuma_pages_migrated {}\n",
                100 + 10 * tick,
                50 + 9 * tick,
                7 * tick
            ),
        );
        let busy = 50 * tick;
        write(
            dir,
            "proc/stat",
            &format!(
                "cpu0 {busy} 0 0 {} 0 0 0 0\ncpu1 0 0 0 {}\ncpu2 0 0 0 {}\ncpu3 0 0 0 {}\n",
                100 * tick - busy,
                100 * tick,
                100 * tick,
                100 * tick
            ),
        );
        write(dir, "etc/passwd", "root:x:0:0::/:/bin/sh\n");
        for (pid, comm, rss, cpu, maps) in [
            (10, "big", 3000, 0, "1000 bind:1 anon=300 N1=300 kernelpagesize_kB=4\n"),
            (20, "small", 10, 2, "1000 default heap anon=10 N1=10 kernelpagesize_kB=4\n"),
            (30, "mid", 500, 3, "1000 interleave:0-1 anon=100 N0=50 N1=50 kernelpagesize_kB=4\n"),
        ] {
            let ticks = if pid == 20 { 30 * tick } else { 0 };
            write(dir, &format!("proc/{pid}/stat"), &stat_line(pid, comm, ticks, 1, rss, cpu));
            write(dir, &format!("proc/{pid}/numa_maps"), maps);
            write(dir, &format!("proc/{pid}/sched"), "numa_pages_migrated  :  5\n");
        }
    }

    #[test]
    fn frames_and_rates() {
        let d = tempfile::tempdir().expect("tmp");
        fake(d.path(), 1);
        let sys = SysRoot::at(d.path());
        let topo = Topology::read_nodes_only(&sys).expect("topo");
        let mut s = TopSampler::with_units(BTreeMap::new(), 4096, 100.0);
        let t0 = Instant::now();
        let opts = TopOptions { rows: 2, ..Default::default() };
        let f = s.sample(&sys, &topo, &opts, t0).expect("frame");
        assert_eq!((f.total, f.matched, f.processes.len(), f.interval_secs), (3, 3, 2, None));
        assert_eq!(f.processes[0].comm, "big");
        assert_eq!(f.processes[0].rss_bytes, 3000 * 4096);
        let big = f.processes[0].memory.as_ref().expect("memory");
        // big runs on CPU 0 (node 0) with all its memory on node 1.
        assert_eq!((big.bytes_on(1), big.locality), (300 * 4096, Some(0.0)));
        assert_eq!(f.processes[1].memory.as_ref().and_then(|m| m.locality), Some(0.5));
        assert_eq!(f.processes[0].migrations, Some(5));
        assert!(f.nodes.iter().all(|n| n.cpu_busy.is_none() && n.hit_per_sec.is_none()));
        assert_eq!(f.nodes[0].free_bytes, Some(512 << 20));

        fake(d.path(), 3);
        let opts = TopOptions { rows: 5, sort: SortKey::Cpu, ..Default::default() };
        let f = s.sample(&sys, &topo, &opts, t0 + Duration::from_secs(2)).expect("frame");
        assert_eq!(f.interval_secs, Some(2.0));
        // pid 20 used 60 ticks = 0.6 s in 2 s.
        assert_eq!(f.processes[0].comm, "small");
        assert!((f.processes[0].cpu.expect("cpu") - 0.3).abs() < 1e-9);
        assert_eq!(f.nodes[0].hit_per_sec, Some(100.0));
        assert_eq!(f.nodes[1].miss_per_sec, Some(4.0));
        // CPU 0 did 100 busy of 200 ticks, CPU 1 200 idle: node 0 25% busy.
        assert_eq!(f.nodes[0].cpu_busy, Some(0.25));
        assert_eq!(f.system.hint_faults_per_sec, Some(10.0));
        assert_eq!(f.system.hint_local_ratio, Some(0.9));
        assert_eq!(f.system.pages_migrated_per_sec, Some(7.0));

        let opts = TopOptions { name: Some("mi".into()), ..Default::default() };
        let f = s.sample(&sys, &topo, &opts, t0 + Duration::from_secs(4)).expect("frame");
        assert_eq!((f.matched, f.processes[0].pid), (1, 30));
        let opts = TopOptions { user: Some("nobody-here".into()), ..Default::default() };
        assert_eq!(s.sample(&sys, &topo, &opts, t0 + Duration::from_secs(5)).expect("frame").matched, 0);
    }

    #[test]
    fn sort_keys_cycle() {
        assert_eq!(SortKey::parse("cpu"), Some(SortKey::Cpu));
        let mut k = SortKey::Rss;
        for _ in 0..SortKey::ALL.len() {
            k = k.next();
        }
        assert_eq!(k, SortKey::Rss);
    }
}
