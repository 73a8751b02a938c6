//! numastat compatibility: numakit invoked as `numastat` (a symlink), or
//! `numakit stat --compat` with numastat's options, behaves as numastat
//! 2.0.16: its options (`-c -m -n -p -s[NODE] -v -V -z`, PIDs and patterns
//! as further arguments) parsed by getopt_long's rules (options and
//! arguments in any order, `-s` takes its node only attached, `--help`),
//! its messages and exit codes (1 for a usage error), and its output byte
//! for byte (`present::stat::numastat_*`). The width is numastat's:
//! `NUMASTAT_WIDTH` read as C's `atoi` (outside 1..10000000: 80), else 80
//! on a terminal, else unlimited; never under 32.

use std::ffi::OsString;
use std::io::{IsTerminal, Write};

use numakit::present::stat::{self as view, NumastatOptions, NumastatProcesses};
use numakit::stats::{self, process};
use numakit::sys::{SysError, SysRoot};

use super::common::getopt_help_only;

/// numastat's version line after `PROG version: `.
const VERSION: &str = "20130723: Dec 26 2022";

/// What numastat's command line asks for.
#[derive(Debug, Default)]
struct Request {
    opts: NumastatOptions,
    meminfo: bool,
    numastat: bool,
    pids: Vec<i32>,
}

/// Writes to stdout through the one writer.
fn out(text: &str) -> anyhow::Result<()> {
    if !text.is_empty() {
        crate::output::print(text)?;
    }
    Ok(())
}

fn err_line(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// C's `perror` text of an I/O error: the message without Rust's
/// ` (os error N)`.
fn strerror(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

fn sys_strerror(e: &SysError) -> String {
    match e {
        SysError::Io { source, .. } => strerror(source),
        other => other.to_string(),
    }
}

fn usage(prog: &str) -> u8 {
    err_line(&format!(
        "Usage: {prog} [-c] [-m] [-n] [-p <PID>|<pattern>] [-s[<node>]] [-v] [-V] [-z] [ <PID>|<pattern>... ]"
    ));
    err_line("-c to minimize column widths");
    err_line("-m to show meminfo-like system-wide memory usage");
    err_line("-n to show the numastat statistics info");
    err_line("-p <PID>|<pattern> to show process info");
    err_line("-s[<node>] to sort data by total column or <node>");
    err_line("-v to make some reports more verbose");
    err_line(&format!("-V to show the {prog} code version"));
    err_line("-z to skip rows and columns of zeros");
    1
}

/// C's `atoi` (via `strtol`, then cut to an `int`).
fn atoi(s: &str) -> i32 {
    let t = s.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let (neg, body) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let mut v: i64 = 0;
    for b in body.bytes().take_while(u8::is_ascii_digit) {
        v = v.saturating_mul(10).saturating_add(i64::from(b - b'0'));
    }
    let v = if neg { v.checked_neg().unwrap_or(i64::MIN) } else { v };
    v as i32
}

fn all_digits(s: &str) -> bool {
    s.bytes().all(|b| b.is_ascii_digit())
}

/// numastat's `get_screen_width`.
fn screen_width() -> usize {
    let w = match std::env::var_os("NUMASTAT_WIDTH") {
        Some(v) => {
            let w = atoi(&v.to_string_lossy());
            if (1..=10_000_000).contains(&w) {
                w as usize
            } else {
                80
            }
        }
        // numastat asks xterm's `resize` on a terminal but reads too few
        // bytes of its answer, so 80 it is.
        None if std::io::stdout().is_terminal() => 80,
        None => view::UNLIMITED_WIDTH,
    };
    w.max(32)
}

/// Adds the PIDs a specifier designates (digits: that PID, else a
/// pattern), printing numastat's line when a pattern finds none.
fn add_spec(sys: &SysRoot, spec: &str, req: &mut Request) -> anyhow::Result<()> {
    if all_digits(spec) {
        req.pids.push(atoi(spec));
        return Ok(());
    }
    let found = process::numastat_find(sys, spec, std::process::id() as i32).unwrap_or_default();
    if found.is_empty() {
        // numastat prints the pattern as given; on a terminal it is escaped.
        let shown = numakit::text::for_stream(spec, std::io::stdout().is_terminal());
        out(&format!("Found no processes containing pattern: \"{shown}\"\n"))?;
    }
    req.pids.extend(found);
    Ok(())
}

/// Runs numastat's command line (`argv[0]` is the program name numastat
/// prints in its messages).
pub fn run(sys: &SysRoot, argv: &[OsString]) -> anyhow::Result<u8> {
    let args: Vec<String> = argv.iter().map(|a| a.to_string_lossy().into_owned()).collect();
    let prog = args.first().cloned().unwrap_or_else(|| "numastat".into());
    let compat = args.len() <= 1;
    let mut req = Request::default();
    let mut rest: Vec<String> = Vec::new();
    let posixly = std::env::var_os("POSIXLY_CORRECT").is_some();
    let mut i = 1;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        if a == "--" {
            rest.extend(args[i..].iter().cloned());
            break;
        }
        if a.starts_with("--") {
            if let Some(msg) = getopt_help_only(&prog, a) {
                err_line(&msg);
            }
            return Ok(usage(&prog));
        }
        if a.len() < 2 || !a.starts_with('-') {
            if posixly {
                rest.extend(args[i - 1..].iter().cloned());
                break;
            }
            rest.push(a.clone());
            continue;
        }
        let cluster = &a[1..];
        for (at, c) in cluster.char_indices() {
            let attached = &cluster[at + c.len_utf8()..];
            match c {
                'c' => req.opts.compress = true,
                'm' => req.meminfo = true,
                'n' => req.numastat = true,
                'v' => req.opts.verbose = true,
                'z' => req.opts.skip_zero = true,
                'V' => {
                    out(&format!("{prog} version: {VERSION}\n"))?;
                    return Ok(0);
                }
                'p' => {
                    let value = if !attached.is_empty() {
                        attached.to_string()
                    } else if let Some(v) = args.get(i) {
                        i += 1;
                        v.clone()
                    } else {
                        err_line(&format!("{prog}: option requires an argument -- 'p'"));
                        return Ok(usage(&prog));
                    };
                    add_spec(sys, &value, &mut req)?;
                    break;
                }
                's' => {
                    req.opts.sort = true;
                    if !attached.is_empty() && all_digits(attached) {
                        req.opts.sort_node = Some(i64::from(atoi(attached)));
                    }
                    break;
                }
                '?' => return Ok(usage(&prog)),
                other => {
                    err_line(&format!("{prog}: invalid option -- '{other}'"));
                    return Ok(usage(&prog));
                }
            }
        }
    }
    let width = screen_width();
    for spec in &rest {
        add_spec(sys, spec, &mut req)?;
    }
    show(sys, compat, req, width)
}

/// Prints what the request asks for, in numastat's order: processes,
/// `-m`, then the counters.
fn show(sys: &SysRoot, compat: bool, mut req: Request, width: usize) -> anyhow::Result<u8> {
    let node_ids = stats::counters::node_ids(sys).unwrap_or_default();
    if node_ids.is_empty() {
        let what = if compat {
            "sysfs not mounted or system not NUMA aware"
        } else {
            "Couldn't open /sys/devices/system/node"
        };
        err_line(&format!("{what}: No such file or directory"));
        return Ok(1);
    }
    let counters = || -> Result<_, u8> {
        stats::counters::read_counters_of(sys, &node_ids).map_err(|e| {
            err_line(&format!("cannot open {}", sys_strerror(&e)));
            1
        })
    };
    if compat {
        return match counters() {
            Ok(nodes) => out(&view::numastat_compat(&nodes, width)).map(|_| 0),
            Err(code) => Ok(code),
        };
    }
    let page = stats::page_size();
    let huge = sys
        .read_meminfo("proc/meminfo")
        .ok()
        .flatten()
        .and_then(|l| l.into_iter().find(|(k, _)| k == "Hugepagesize").map(|(_, v)| v))
        .unwrap_or(0);
    if !req.pids.is_empty() {
        req.pids.sort_unstable();
        req.pids.dedup();
        let (mut tables, head) = NumastatProcesses::new(&node_ids, req.pids.len(), req.opts, width);
        out(&head)?;
        for (ix, &pid) in req.pids.iter().enumerate() {
            let name = process::status_name(sys, pid);
            let usage = match numakit::procs::read_numa_maps_text(sys, pid) {
                Ok(Some(text)) => match process::numastat_usage(&text, &node_ids, page, huge) {
                    Ok(u) => Some(u),
                    Err(_) => {
                        out(&tables.add(ix, pid, name.as_deref(), None))?;
                        err_line("node value parse error: Success");
                        return Ok(1);
                    }
                },
                Ok(None) => {
                    out(&tables.add(ix, pid, name.as_deref(), None))?;
                    err_line(&format!("Can't read /proc/{pid}/numa_maps: No such file or directory"));
                    continue;
                }
                Err(e) => {
                    out(&tables.add(ix, pid, name.as_deref(), None))?;
                    err_line(&format!("Can't read /proc/{pid}/numa_maps: {}", sys_strerror(&e)));
                    continue;
                }
            };
            out(&tables.add(ix, pid, name.as_deref(), usage.as_ref()))?;
        }
    }
    if req.meminfo {
        match stats::read_node_meminfo(sys) {
            Ok(nodes) => out(&view::numastat_meminfo_mb(&nodes, huge, &req.opts, width))?,
            Err(e) => {
                err_line(&format!("cannot open {}", sys_strerror(&e)));
                return Ok(1);
            }
        }
    }
    if req.numastat || (req.pids.is_empty() && !req.meminfo) {
        match counters() {
            Ok(nodes) => out(&view::numastat_counters_mb(&nodes, page, &req.opts, width))?,
            Err(code) => return Ok(code),
        }
    }
    Ok(0)
}
