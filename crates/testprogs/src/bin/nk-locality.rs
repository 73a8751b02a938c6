//! `nk-locality`: samples the memory locality of processes, for the placer
//! comparison (bench/placers, crates/cli/tests/vm_placers.rs), without
//! numakit's own code and without a fork per sample (under an emulated,
//! fully busy guest every process start costs seconds).
//!
//! ```text
//! nk-locality --pids P1,P2,... [--secs S] [--interval-ms 1000] [--tick-ms 100]
//!             [--until-min M --for N] [--cpu-of PID,...|@FILE]
//! ```
//!
//! Every tick it reads each thread's last CPU (`/proc/PID/task/TID/stat`
//! field 39) and counts it for that CPU's node; every interval it reads each
//! process's `/proc/PID/numa_maps` (pages per node, every mapping) and
//! prints one line
//!
//! ```text
//! sample t=SECS up=UPTIME loc=L min=M own=L own_min=M pid=PID:LOCAL/TOTAL@RUN_NODES:N0=pages,N3=pages:allowed=NODES ...
//! ```
//!
//! where a thread runs on the node it was seen on most often during the
//! interval, a process's run nodes are those of its threads, `allowed` the
//! nodes whose CPUs its CPU affinity holds (`Cpus_allowed_list` of
//! `/proc/PID/status`, read at the sample: a placer's bind narrows it), its locality
//! is the share of its pages on its run nodes, `loc` is the page-weighted
//! locality of all the processes and `min` the lowest one. `own` and
//! `own_min` are the same over the processes' own pages: every mapping but
//! those of a file that other processes map too (`mapmax=` above 1 and no
//! anonymous pages: the C library, a binary several copies run), whose
//! pages no placement makes local to all their users (numakit's daemon
//! leaves them where they are; numad's `migrate_pages` moves them with the
//! rest). `t` is seconds since the start, `up` the system's uptime
//! (`/proc/uptime`). A process that has gone is left out.
//!
//! Its first line, `begin up=UPTIME`, is printed once the counters'
//! baseline is read (a harness starts the placer after it).
//!
//! It stops after `--secs`, when every process has gone, or (with
//! `--until-min M --for N`) once `min` has been at least M in N samples in
//! a row. Its last line, read at the last sample, says what the run cost:
//!
//! ```text
//! end t=SECS up=UPTIME samples=N stopped=secs|settled|gone targets_sys_s=S
//!     cpu=PID:USER_S:SYS_S,... pgmigrate_success=D numa_pages_migrated=D ...
//! ```
//!
//! `targets_sys_s` is the system CPU time the sampled processes used since
//! the start (AutoNUMA's scanning and fault-time migrations are charged to
//! them), `cpu=` the user and system CPU time of each `--cpu-of` process so
//! far (numad, the numakit daemon: all their threads; `@FILE`: the PIDs are
//! read from FILE at the end, for a process started after the sampler), and
//! the `/proc/vmstat`
//! NUMA and migration counters are differences since the start.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::time::{Duration, Instant};

/// `/proc/vmstat` counters whose change the end line reports.
const VMSTAT: [&str; 7] = [
    "pgmigrate_success",
    "pgmigrate_fail",
    "numa_pages_migrated",
    "numa_pte_updates",
    "numa_hint_faults",
    "numa_hint_faults_local",
    "thp_migration_success",
];

fn arg<T: std::str::FromStr>(args: &[String], name: &str) -> Option<T> {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok())
}

fn pid_list(args: &[String], name: &str) -> Vec<i32> {
    arg::<String>(args, name).unwrap_or_default().split(',').filter_map(|p| p.trim().parse().ok()).collect()
}

/// The CPUs of a kernel CPU list ("0-3,8"); malformed parts are skipped.
fn cpus_of(list: &str) -> impl Iterator<Item = u32> + '_ {
    list.trim()
        .split(',')
        .filter_map(|part| {
            let (a, b) = part.split_once('-').unwrap_or((part, part));
            Some(a.parse::<u32>().ok()?..=b.parse::<u32>().ok()?)
        })
        .flatten()
}

/// CPU id -> node id, from `/sys/devices/system/node/node*/cpulist`.
fn cpu_nodes() -> BTreeMap<u32, u32> {
    let mut map = BTreeMap::new();
    let Ok(dir) = std::fs::read_dir("/sys/devices/system/node") else { return map };
    for e in dir.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(node) = name.strip_prefix("node").and_then(|n| n.parse::<u32>().ok()) else { continue };
        let list = std::fs::read_to_string(e.path().join("cpulist")).unwrap_or_default();
        map.extend(cpus_of(&list).map(|cpu| (cpu, node)));
    }
    map
}

/// Field `n` (1-based, as in proc(5)) of a stat line; the name may hold spaces.
fn stat_field(stat: &str, n: usize) -> Option<&str> {
    let rest = &stat[stat.rfind(") ")? + 2..];
    rest.split_whitespace().nth(n.checked_sub(3)?)
}

/// The `processor` field (39) of a stat line.
fn processor(stat: &str) -> Option<u32> {
    stat_field(stat, 39)?.parse().ok()
}

/// utime and stime (fields 14 and 15) of a process, in seconds.
fn cpu_times(pid: i32) -> Option<(f64, f64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let ticks = |n| stat_field(&stat, n).and_then(|v| v.parse::<f64>().ok());
    // USER_HZ is 100 on every Linux architecture this runs on.
    Some((ticks(14)? / 100.0, ticks(15)? / 100.0))
}

fn uptime() -> f64 {
    std::fs::read_to_string("/proc/uptime")
        .ok()
        .and_then(|t| t.split_whitespace().next().and_then(|v| v.parse().ok()))
        .unwrap_or(0.0)
}

fn vmstat() -> BTreeMap<String, i64> {
    let text = std::fs::read_to_string("/proc/vmstat").unwrap_or_default();
    text.lines()
        .filter_map(|l| l.split_once(' '))
        .filter(|(k, _)| VMSTAT.contains(k))
        .filter_map(|(k, v)| Some((k.to_string(), v.trim().parse().ok()?)))
        .collect()
}

/// Pages per node of a numa_maps text: over every mapping, and over the
/// process's own ones (all but a file's mapping that other processes map
/// too and that holds no anonymous pages; shared memory, `/dev/shm` and
/// SysV segments, is its own).
fn split_pages(maps: &str) -> (BTreeMap<u32, u64>, BTreeMap<u32, u64>) {
    let (mut all, mut own) = (BTreeMap::new(), BTreeMap::new());
    for line in maps.lines() {
        let mut pages: Vec<(u32, u64)> = Vec::new();
        let (mut file, mut mapmax, mut anon) = (false, 1u64, 0u64);
        for tok in line.split_whitespace() {
            let Some((k, v)) = tok.split_once('=') else { continue };
            match k {
                "file" => file = !(v.starts_with("/dev/shm/") || v.starts_with("/SYSV")),
                "mapmax" => mapmax = v.parse().unwrap_or(1),
                "anon" => anon = v.parse().unwrap_or(0),
                _ => {
                    if let (Some(Ok(n)), Ok(p)) = (k.strip_prefix('N').map(str::parse::<u32>), v.parse::<u64>()) {
                        pages.push((n, p));
                    }
                }
            }
        }
        let shared_file = file && mapmax > 1 && anon == 0;
        for (n, p) in pages {
            *all.entry(n).or_default() += p;
            if !shared_file {
                *own.entry(n).or_default() += p;
            }
        }
    }
    (all, own)
}

/// The nodes whose CPUs a process may run on, from its status
/// `Cpus_allowed_list`, as a comma-separated list (empty when unreadable).
fn allowed_nodes(status: &str, nodes: &BTreeMap<u32, u32>) -> String {
    let list = status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")).unwrap_or("");
    let on: BTreeSet<u32> = cpus_of(list).filter_map(|cpu| nodes.get(&cpu).copied()).collect();
    on.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
}

/// Seen counts per thread and node during one interval.
type Seen = BTreeMap<(i32, u32), BTreeMap<u32, u32>>;

fn tick(pids: &[i32], nodes: &BTreeMap<u32, u32>, seen: &mut Seen) {
    for &pid in pids {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { continue };
        for t in tasks.flatten() {
            let Ok(tid) = t.file_name().to_string_lossy().parse::<u32>() else { continue };
            let stat = std::fs::read_to_string(t.path().join("stat")).unwrap_or_default();
            if let Some(node) = processor(&stat).and_then(|c| nodes.get(&c)) {
                *seen.entry((pid, tid)).or_default().entry(*node).or_default() += 1;
            }
        }
    }
}

/// Page-weighted locality over processes and the lowest one.
#[derive(Default)]
struct Locality {
    local: u64,
    total: u64,
    min: Option<f64>,
}

impl Locality {
    /// Adds one process's pages per node, `run` its run nodes; returns
    /// (local, total) pages.
    fn add(&mut self, pages: &BTreeMap<u32, u64>, run: &BTreeSet<u32>) -> (u64, u64) {
        let tot: u64 = pages.values().sum();
        let loc: u64 = pages.iter().filter(|(n, _)| run.contains(n)).map(|(_, p)| p).sum();
        self.local += loc;
        self.total += tot;
        let share = if tot > 0 { loc as f64 / tot as f64 } else { 0.0 };
        self.min = Some(self.min.map_or(share, |m: f64| m.min(share)));
        (loc, tot)
    }
    fn share(&self) -> f64 {
        if self.total > 0 {
            self.local as f64 / self.total as f64
        } else {
            0.0
        }
    }
}

/// Page-weighted locality and the lowest process's.
type Shares = (f64, f64);

/// One sample: locality over all pages and over the processes' own pages,
/// and the detail per process; `None` when every process has gone.
fn sample(pids: &[i32], seen: &Seen, nodes: &BTreeMap<u32, u32>) -> Option<(Shares, Shares, String)> {
    let (mut all, mut own) = (Locality::default(), Locality::default());
    let mut detail = String::new();
    for &pid in pids {
        let Ok(maps) = std::fs::read_to_string(format!("/proc/{pid}/numa_maps")) else { continue };
        let (pages, own_pages) = split_pages(&maps);
        let run: BTreeSet<u32> = seen
            .range((pid, 0)..=(pid, u32::MAX))
            .filter_map(|(_, counts)| counts.iter().max_by_key(|(n, c)| (**c, std::cmp::Reverse(**n))).map(|(n, _)| *n))
            .collect();
        let (loc, tot) = all.add(&pages, &run);
        own.add(&own_pages, &run);
        let run_s: Vec<String> = run.iter().map(u32::to_string).collect();
        let pages_s: Vec<String> = pages.iter().map(|(n, p)| format!("N{n}={p}")).collect();
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        let allowed = allowed_nodes(&status, nodes);
        detail += &format!(" pid={pid}:{loc}/{tot}@{}:{}:allowed={allowed}", run_s.join(","), pages_s.join(","));
    }
    Some(((all.share(), all.min?), (own.share(), own.min?), detail))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let pids = pid_list(&args, "--pids");
    if pids.is_empty() {
        eprintln!(
            "usage: nk-locality --pids P1,P2,... [--secs S] [--interval-ms MS] [--tick-ms MS] \
             [--until-min M --for N] [--cpu-of PID,...]"
        );
        std::process::exit(2);
    }
    let secs: Option<f64> = arg(&args, "--secs");
    let interval = Duration::from_millis(arg(&args, "--interval-ms").unwrap_or(1000));
    let tick_every = Duration::from_millis(arg(&args, "--tick-ms").unwrap_or(100)).min(interval);
    let until: Option<f64> = arg(&args, "--until-min");
    let for_n: u32 = arg(&args, "--for").unwrap_or(1).max(1);
    let cpu_of_arg: String = arg(&args, "--cpu-of").unwrap_or_default();
    let nodes = cpu_nodes();
    let start = Instant::now();
    let vm0 = vmstat();
    let sys0: f64 = pids.iter().filter_map(|&p| cpu_times(p)).map(|c| c.1).sum();
    let mut out = std::io::stdout().lock();
    // The counters' baseline is taken: a placer started after this line
    // has every page it moves counted.
    let _ = writeln!(out, "begin up={}", uptime());
    let _ = out.flush();
    let (mut samples, mut in_a_row) = (0u32, 0u32);
    let mut sys_last = sys0;
    let stopped = loop {
        let window = Instant::now();
        let mut seen = Seen::new();
        while window.elapsed() < interval {
            tick(&pids, &nodes, &mut seen);
            std::thread::sleep(tick_every);
        }
        let Some(((loc, min), (own, own_min), detail)) = sample(&pids, &seen, &nodes) else { break "gone" };
        sys_last = pids.iter().filter_map(|&p| cpu_times(p)).map(|c| c.1).sum::<f64>().max(sys_last);
        samples += 1;
        let t = start.elapsed().as_secs_f64();
        let line = format!(
            "sample t={t:.1} up={:.2} loc={loc:.4} min={min:.4} own={own:.4} own_min={own_min:.4}{detail}",
            uptime()
        );
        if writeln!(out, "{line}").and_then(|()| out.flush()).is_err() {
            break "gone";
        }
        in_a_row = if until.is_some_and(|m| min >= m) { in_a_row + 1 } else { 0 };
        if in_a_row >= for_n {
            break "settled";
        }
        if secs.is_some_and(|s| t >= s) {
            break "secs";
        }
    };
    let cpu_of: Vec<i32> = match cpu_of_arg.strip_prefix('@') {
        Some(file) => std::fs::read_to_string(file).unwrap_or_default(),
        None => cpu_of_arg,
    }
    .split([',', ' ', '\n'])
    .filter_map(|p| p.trim().parse().ok())
    .collect();
    let cpu: Vec<String> =
        cpu_of.iter().filter_map(|&p| cpu_times(p).map(|(u, s)| format!("{p}:{u:.2}:{s:.2}"))).collect();
    let vm1 = vmstat();
    let deltas: Vec<String> =
        vm1.iter().map(|(k, v)| format!("{k}={}", v - vm0.get(k).copied().unwrap_or(0))).collect();
    let _ = writeln!(
        out,
        "end t={:.1} up={:.2} samples={samples} stopped={stopped} targets_sys_s={:.2} cpu={} {}",
        start.elapsed().as_secs_f64(),
        uptime(),
        sys_last - sys0,
        if cpu.is_empty() { "-".to_string() } else { cpu.join(",") },
        deltas.join(" ")
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat_line(name: &str) -> String {
        let mut stat = format!("42 ({name}) R");
        for i in 4..=38 {
            stat += &format!(" {i}");
        }
        stat + " 7 0 0"
    }

    #[test]
    fn fields_after_a_name_with_spaces() {
        let stat = stat_line("a b) c");
        assert_eq!(processor(&stat), Some(7));
        assert_eq!(stat_field(&stat, 3), Some("R"));
        assert_eq!(stat_field(&stat, 14), Some("14"));
        assert_eq!(stat_field(&stat, 2), None);
    }

    #[test]
    fn allowed_nodes_of_an_affinity() {
        let nodes = BTreeMap::from([(0, 0), (1, 0), (2, 1), (3, 1), (4, 2), (5, 2)]);
        let status =
            |l: &str| format!("Name:\tx\nCpus_allowed:\t3f\nCpus_allowed_list:\t{l}\nMems_allowed_list:\t0-2\n");
        assert_eq!(allowed_nodes(&status("0-5"), &nodes), "0,1,2");
        assert_eq!(allowed_nodes(&status("2-3"), &nodes), "1");
        assert_eq!(allowed_nodes(&status("1,4"), &nodes), "0,2");
        assert_eq!(allowed_nodes("no such line", &nodes), "");
    }

    #[test]
    fn pages_summed_over_mappings() {
        let maps = "7f00 default anon=3 dirty=3 N0=2 N3=1 kernelpagesize_kB=4\n7f10 default file=/x N3=5\n";
        let p = split_pages(maps).0;
        assert_eq!(p.get(&0), Some(&2));
        assert_eq!(p.get(&3), Some(&6));
    }

    #[test]
    fn own_pages_leave_out_files_other_processes_map() {
        let maps = "7f00 default anon=3 dirty=3 N0=2 N3=1 kernelpagesize_kB=4\n\
                    7f10 default file=/usr/lib/libc.so.6 mapped=40 mapmax=9 N1=40 kernelpagesize_kB=4\n\
                    7f20 default file=/usr/lib/libc.so.6 anon=2 dirty=2 mapmax=9 N1=2 kernelpagesize_kB=4\n\
                    7f30 default file=/opt/job mapped=5 N3=5 kernelpagesize_kB=4\n\
                    7f40 default file=/dev/shm/seg mapped=7 mapmax=2 N1=7 kernelpagesize_kB=4\n";
        let (all, own) = split_pages(maps);
        assert_eq!(all, BTreeMap::from([(0, 2), (1, 49), (3, 6)]));
        // libc's file pages go; its written (anonymous) pages, a file only
        // this process maps and shared memory stay.
        assert_eq!(own, BTreeMap::from([(0, 2), (1, 9), (3, 6)]));
        let mut l = Locality::default();
        assert_eq!(l.add(&own, &BTreeSet::from([1])), (9, 17));
        assert_eq!(l.add(&all, &BTreeSet::from([1])), (49, 57));
        assert!((l.share() - 58.0 / 74.0).abs() < 1e-12);
        assert_eq!(l.min, Some(9.0 / 17.0));
    }

    #[test]
    fn locality_of_this_process() {
        // this test process: its threads run somewhere, its pages are somewhere;
        // on a one-node machine everything is local
        let me = std::process::id() as i32;
        let nodes = cpu_nodes();
        let mut seen = Seen::new();
        tick(&[me], &nodes, &mut seen);
        let ((loc, min), (own, own_min), detail) = sample(&[me], &seen, &nodes).expect("this process");
        for x in [loc, min, own, own_min] {
            assert!((0.0..=1.0).contains(&x), "{detail}");
        }
        if nodes.values().collect::<BTreeSet<_>>().len() == 1 {
            assert!(loc > 0.99 && own > 0.99, "one node: all local: {detail}");
        }
        assert!(detail.contains(":allowed="), "{detail}");
        assert!(sample(&[], &seen, &nodes).is_none());
    }
}
