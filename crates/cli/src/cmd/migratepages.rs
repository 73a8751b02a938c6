//! migratepages compatibility: numakit invoked as `migratepages` takes
//! `migratepages PID FROM-NODES TO-NODES` as migratepages (numactl 2.0.16)
//! does: getopt_long's option handling (every option, `-h` and `--help`
//! included, prints the usage and exits 1), the PID read as C's
//! `strtoul(s, &end, 0)` (decimal, `0x` hex, `0` octal), the node lists
//! read as libnuma's `numa_parse_nodestring` (`all`, `!`, `+`, `A-B`,
//! commas; nodes outside the caller's `Mems_allowed` refused) with its
//! warnings on stderr and `<LIST> is invalid` on stdout, then the pages
//! moved with `migrate_pages(2)` as `numakit migrate --from --to` moves
//! them; a refused call is `migrate_pages: REASON` and exit 1. libnuma's
//! I/O specifiers (`netdev:` ...) are not read here. The readings of
//! numbers and node strings are [`numakit::sets::libnuma`]'s.

use std::ffi::OsString;
use std::io::Write;

use numakit::act;
use numakit::sets::libnuma;
use numakit::sys::SysRoot;
use numakit::topo::Topology;

use super::common::getopt_help_only;

const USAGE: &str = "usage: migratepages pid from-nodes to-nodes

nodes is a comma delimited list of node numbers or A-B ranges or all.
";

fn usage() -> u8 {
    let _ = std::io::stderr().write_all(USAGE.as_bytes());
    1
}

/// libnuma's warning for a refused node string, if it gives one.
fn warn(r: &libnuma::Refused) {
    if let Some(w) = &r.warning {
        // libnuma's numa_warn: its message ends in a newline, and it adds one.
        let _ = write!(std::io::stderr(), "libnuma: Warning: {w}\n\n");
    }
}

/// Runs migratepages' command line (`argv[0]` included).
pub fn run(sys: &SysRoot, argv: &[OsString]) -> anyhow::Result<u8> {
    let args: Vec<String> = argv.iter().map(|a| a.to_string_lossy().into_owned()).collect();
    let prog = args.first().cloned().unwrap_or_else(|| "migratepages".into());
    let posixly = std::env::var_os("POSIXLY_CORRECT").is_some();
    let mut operands: Vec<&str> = Vec::new();
    let mut i = 1;
    while i < args.len() {
        let a = args[i].as_str();
        i += 1;
        if a == "--" {
            operands.extend(args[i..].iter().map(String::as_str));
            break;
        }
        if a.len() < 2 || !a.starts_with('-') {
            if posixly {
                operands.extend(args[i - 1..].iter().map(String::as_str));
                break;
            }
            operands.push(a);
            continue;
        }
        // Every option ends in the usage: only the message before it differs.
        if a.starts_with("--") {
            if let Some(msg) = getopt_help_only(&prog, a) {
                let _ = writeln!(std::io::stderr(), "{msg}");
            }
            return Ok(usage());
        }
        let c = a[1..].chars().next().unwrap_or('?');
        if c != 'h' {
            let _ = writeln!(std::io::stderr(), "{prog}: invalid option -- '{c}'");
        }
        return Ok(usage());
    }
    let [pid_text, from_text, to_text] = operands[..] else { return Ok(usage()) };
    let (pid, used) = libnuma::strtoul(pid_text);
    if used == 0 || used != pid_text.len() {
        return Ok(usage());
    }
    let pid = pid as i32;
    let allowed = numakit::procs::read_status(sys, std::process::id() as i32)
        .ok()
        .flatten()
        .map(|s| s.mems_allowed)
        .unwrap_or_default();
    let configured =
        Topology::read_nodes_only(sys).map(|t| t.memory_nodes().len() as u32).unwrap_or_else(|_| allowed.len() as u32);
    // The first list libnuma refuses is reported (the second is not read).
    let parse = |t: &str| {
        libnuma::parse_nodestring(t, &allowed, configured).map_err(|r| {
            warn(&r);
            t.to_string()
        })
    };
    let (from, to) = match parse(from_text).and_then(|f| Ok((f, parse(to_text)?))) {
        Ok(lists) => lists,
        Err(bad) => {
            outln!("<{bad}> is invalid");
            return Ok(1);
        }
    };
    if !sys.is_live() {
        let _ = writeln!(std::io::stderr(), "migratepages: acts on the running system; --sysroot is not allowed");
        return Ok(1);
    }
    match act::migrate_pages(act::Pid(pid), &from, &to) {
        Ok(_) => Ok(0),
        Err(e) => {
            let reason = e.errno().map_or_else(|| e.to_string(), act::errno_message);
            let _ = writeln!(std::io::stderr(), "migrate_pages: {reason}");
            Ok(1)
        }
    }
}
