//! `numakit stat`: per-node NUMA counters and AutoNUMA activity (default),
//! numastat itself (`--compat`, run by `cmd::numastat` through the
//! dispatcher), per-node memory (`-m`),
//! per-process memory per node with locality (`-p`), once or every
//! `--interval` seconds, as text or JSON.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use clap::{ArgAction, Args};
use numakit::present::stat as view;
use numakit::stats::{self, process, CounterSample, ProcessReport};
use numakit::sys::SysRoot;
use numakit::topo::Topology;
use serde_json::{Map, Value};

use super::common::read_error;
use crate::Failure;

/// `numakit stat`.
#[derive(Debug, Args)]
pub struct StatArgs {
    /// Print exactly what `numastat` prints: without other options its default counters table,
    /// with -m, -p, -c, -n, -s, -v, -z what `numastat` prints with them (NUMASTAT_WIDTH is honoured).
    #[arg(long, conflicts_with_all = ["json", "interval"])]
    pub compat: bool,
    /// With --compat: numastat's -c (columns as narrow as their contents, whole MB).
    #[arg(short = 'c', long = "compress", requires = "compat")]
    pub compress: bool,
    /// With --compat: numastat's -n (the node counters in MB).
    #[arg(short = 'n', long = "numastat", requires = "compat")]
    pub numastat: bool,
    /// With --compat: numastat's -s (sort rows by Total, or by the NODE-th node's column).
    #[arg(short = 's', long = "sort", value_name = "NODE", num_args = 0..=1, require_equals = true, requires = "compat")]
    pub sort: Option<Option<String>>,
    /// With --compat: numastat's -v (one table per process).
    #[arg(short = 'v', long = "verbose", requires = "compat")]
    pub verbose: bool,
    /// With --compat: numastat's -z (leave out rows and columns of zeros).
    #[arg(short = 'z', long = "skip-zero", requires = "compat")]
    pub skip_zero: bool,
    /// Per-node memory in MB like `numastat -m`, huge pages of every size counted at their size.
    #[arg(short = 'm', long = "meminfo")]
    pub meminfo: bool,
    /// Memory per node of these processes (PIDs, or patterns found in their command name or line)
    /// split Huge/Heap/Stack/Private, and their locality.
    #[arg(short = 'p', long = "pid", value_name = "PID|NAME", num_args = 1.., action = ArgAction::Append)]
    pub pids: Vec<String>,
    /// The NUMA report of a cgroup (a batch job, a step): its processes' memory per node and locality,
    /// the kernel's per-node charge and NUMA counters. PATH as in /proc/PID/cgroup, or a /sys/fs/cgroup folder.
    #[arg(long, value_name = "PATH", conflicts_with_all = ["compat", "meminfo", "pids", "interval"])]
    pub cgroup: Option<String>,
    /// With --cgroup: also show how much the counters grew since FILE, an earlier `stat --cgroup --json` of it.
    #[arg(long, value_name = "FILE", requires = "cgroup")]
    pub since: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub format: crate::cli::JsonOut,
    /// Print the deltas and rates of every SECS seconds (or 500ms, 2s, 1m; memory views: a fresh snapshot).
    #[arg(long, value_name = "SECS", value_parser = crate::cli::seconds)]
    pub interval: Option<f64>,
    /// With --interval: stop after N intervals.
    #[arg(long, value_name = "N", requires = "interval")]
    pub count: Option<u64>,
}

/// numastat's command line for `stat --compat` and its options
/// (`argv[0]` included): the bare `numastat` when none is given.
pub fn numastat_argv(args: &StatArgs) -> Vec<std::ffi::OsString> {
    let mut v: Vec<String> = vec!["numastat".into()];
    for (on, flag) in [
        (args.compress, "-c"),
        (args.meminfo, "-m"),
        (args.numastat, "-n"),
        (args.verbose, "-v"),
        (args.skip_zero, "-z"),
    ] {
        if on {
            v.push(flag.into());
        }
    }
    if let Some(node) = &args.sort {
        v.push(format!("-s{}", node.as_deref().unwrap_or("")));
    }
    for p in &args.pids {
        v.push("-p".into());
        v.push(p.clone());
    }
    v.into_iter().map(Into::into).collect()
}

/// The line width of tables: `NUMASTAT_WIDTH` if set (as numastat reads
/// it), else the terminal's width on a terminal, else unlimited.
fn screen_width() -> usize {
    if let Some(v) = std::env::var_os("NUMASTAT_WIDTH") {
        let w = v.to_str().and_then(|s| s.trim().parse::<usize>().ok()).filter(|w| (1..=10_000_000).contains(w));
        return w.unwrap_or(80).max(32);
    }
    if !std::io::stdout().is_terminal() {
        return view::UNLIMITED_WIDTH;
    }
    terminal_columns().unwrap_or(80).max(32)
}

/// Columns of the terminal on stdout.
pub fn terminal_columns() -> Option<usize> {
    // SAFETY: TIOCGWINSZ fills the winsize we pass and reads nothing else.
    let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
    // SAFETY: as above; fd 1 is stdout.
    let rc = unsafe { libc::ioctl(1, libc::TIOCGWINSZ, &mut ws) };
    (rc == 0 && ws.ws_col > 0).then_some(ws.ws_col as usize)
}

fn sys_err(e: numakit::sys::SysError) -> Failure {
    read_error(e)
}

fn write_out(text: &str) -> anyhow::Result<()> {
    let mut out = crate::output::stdout();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}

fn note(line: &str) {
    let _ = writeln!(std::io::stderr(), "numakit: {line}");
}

/// Runs `numakit stat`.
pub fn run(sys: &SysRoot, args: &StatArgs) -> anyhow::Result<u8> {
    sys.check().map_err(sys_err)?;
    let interval = match args.interval {
        None => None,
        Some(s) if s.is_finite() && s > 0.0 && s <= 86_400.0 => Some(Duration::from_secs_f64(s)),
        Some(s) => return Err(Failure::usage(format!("invalid --interval {s}: give seconds above 0")).into()),
    };
    if args.count == Some(0) {
        return Err(Failure::usage("invalid --count 0: give at least 1").into());
    }
    if let Some(path) = &args.cgroup {
        return cgroup_report(sys, path, args.since.as_deref(), args.format.json);
    }
    let width = screen_width();
    let memory_view = args.meminfo || !args.pids.is_empty();
    let topo = if args.pids.is_empty() { None } else { Some(Topology::read_nodes_only(sys).map_err(sys_err)?) };
    let Some(interval) = interval else {
        return if memory_view {
            memory_once(sys, topo.as_ref(), args, width, true)
        } else {
            counters_once(sys, args, width)
        };
    };
    let mut remaining = args.count;
    if memory_view {
        loop {
            std::thread::sleep(interval);
            memory_once(sys, topo.as_ref(), args, width, false)?;
            if !tick(&mut remaining) {
                return Ok(0);
            }
        }
    }
    let mut prev = CounterSample::read(sys).map_err(sys_err)?;
    let mut prev_at = Instant::now();
    loop {
        std::thread::sleep(interval);
        let cur = CounterSample::read(sys).map_err(sys_err)?;
        let now = Instant::now();
        let rates = cur.rates_since(&prev, now.duration_since(prev_at));
        if args.format.json {
            write_out(&format!("{}\n", serde_json::to_string(&view::rates_json(&rates))?))?;
        } else {
            write_out(&format!("{}\n", view::rates_text(&rates, width)))?;
        }
        (prev, prev_at) = (cur, now);
        if !tick(&mut remaining) {
            return Ok(0);
        }
    }
}

/// Counts down `--count`; false when done.
fn tick(remaining: &mut Option<u64>) -> bool {
    match remaining {
        None => true,
        Some(n) => {
            *n -= 1;
            *n > 0
        }
    }
}

fn counters_once(sys: &SysRoot, args: &StatArgs, width: usize) -> anyhow::Result<u8> {
    let sample = CounterSample::read(sys).map_err(sys_err)?;
    if args.format.json {
        write_out(&format!("{}\n", serde_json::to_string_pretty(&view::counters_json(&sample))?))?;
    } else {
        write_out(&view::counters_text(&sample, width))?;
    }
    Ok(0)
}

/// `-m` and/or `-p` once. `first`: a PID list that designates nothing is a
/// usage error (later intervals just show nothing).
fn memory_once(
    sys: &SysRoot,
    topo: Option<&Topology>,
    args: &StatArgs,
    width: usize,
    first: bool,
) -> anyhow::Result<u8> {
    let mut json = Map::new();
    let mut text = String::new();
    if args.meminfo {
        let nodes = stats::read_node_meminfo(sys).map_err(sys_err)?;
        if args.format.json {
            if let Value::Object(o) = view::meminfo_json(&nodes) {
                json.extend(o);
            }
        } else {
            text.push_str(&view::meminfo_text(&nodes, width));
        }
    }
    if let Some(topo) = topo {
        let report = read_report(sys, topo, &args.pids, first)?;
        if args.format.json {
            if let Value::Object(o) = view::processes_json(&report) {
                json.extend(o);
            }
        } else {
            let ids: Vec<u32> = topo.nodes.iter().map(|n| n.id).collect();
            text.push_str(&view::processes_text(&report, &ids, width));
        }
        if let Some(line) = view::skipped_line(&report) {
            note(&line);
        }
    }
    if args.format.json {
        let v = Value::Object(json);
        let s = if args.interval.is_some() { serde_json::to_string(&v)? } else { serde_json::to_string_pretty(&v)? };
        write_out(&format!("{s}\n"))?;
    } else {
        write_out(&text)?;
    }
    Ok(0)
}

/// Selects and reads the processes of `-p`.
fn read_report(sys: &SysRoot, topo: &Topology, specs: &[String], first: bool) -> Result<ProcessReport, Failure> {
    let own = std::process::id() as i32;
    let sel = process::select(sys, specs, Some(own)).map_err(sys_err)?;
    for p in &sel.unmatched {
        note(&format!("no process matches \"{p}\""));
    }
    if first && sel.stats.is_empty() {
        let what: Vec<String> = sel.exited.iter().map(|p| p.to_string()).chain(sel.unmatched.iter().cloned()).collect();
        return Err(Failure::usage(format!("no such process: {}", what.join(" "))));
    }
    let mut report = process::read_processes(sys, topo, &sel.stats).map_err(sys_err)?;
    report.exited.extend(sel.exited);
    report.exited.sort_unstable();
    Ok(report)
}

/// `--cgroup PATH [--since FILE]`: the cgroup's report, as text or one
/// JSON line. A PATH that names no cgroup, or a FILE that is not an
/// earlier report of it, is a usage error naming it.
fn cgroup_report(sys: &SysRoot, path: &str, since: Option<&std::path::Path>, json: bool) -> anyhow::Result<u8> {
    use numakit::present::cgroup as cg_view;
    use numakit::stats::cgroup::{CgroupError, JobReport};
    // The start snapshot first: a bad FILE fails before anything is read.
    let start = match since {
        None => None,
        Some(file) => {
            let shown = numakit::text::path(file);
            let text = numakit::files::read_named_text(file).map_err(|e| Failure::usage(format!("--since {e}")))?;
            let v: Value =
                serde_json::from_str(&text).map_err(|e| Failure::usage(format!("--since {shown} is not JSON: {e}")))?;
            Some((
                cg_view::start_from_json(&v).map_err(|e| Failure::usage(format!("--since {shown}: {e}")))?,
                shown.to_string(),
            ))
        }
    };
    let report = JobReport::collect(sys, path).map_err(|e| match e {
        CgroupError::Sys(e) => sys_err(e),
        e => Failure::usage(e.to_string()),
    })?;
    let delta = match &start {
        None => None,
        Some(((cgroup, counters), shown)) => {
            if *cgroup != report.cgroup.path {
                return Err(Failure::usage(format!(
                    "--since {shown} is the report of cgroup {}, not of {}",
                    numakit::text::quote(cgroup),
                    numakit::text::quote(&report.cgroup.path)
                ))
                .into());
            }
            Some(report.counters.delta(counters))
        }
    };
    // The job's devices: the first of its processes whose environment
    // names some (root, or the job's owner, may read it).
    let mem: Vec<(u32, u64)> = report.nodes.iter().map(|n| (n.id, n.bytes)).collect();
    let devices = match Topology::read_nodes_only(sys) {
        Ok(topo) => report.processes.iter().find_map(|p| super::common::process_devices(sys, &topo, p.pid, &mem)),
        Err(_) => None,
    };
    if json {
        let mut v = cg_view::json(&report, delta.as_deref());
        if let (Some(d), Some(o)) = (&devices, v.as_object_mut()) {
            o.insert("devices".into(), serde_json::to_value(d)?);
        }
        write_out(&format!("{}\n", serde_json::to_string(&v)?))?;
    } else {
        let mut text = cg_view::text(&report, delta.as_deref());
        if let Some(d) = &devices {
            text.push_str(&numakit::present::show::devices_text(d, report.total_bytes));
        }
        write_out(&text)?;
    }
    Ok(0)
}
