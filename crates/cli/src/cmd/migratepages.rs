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
//! I/O specifiers (`netdev:` ...) are not read here.

use std::ffi::OsString;
use std::io::Write;

use numakit::act;
use numakit::sets::NodeSet;
use numakit::sys::SysRoot;
use numakit::topo::Topology;

use super::common::getopt_help_only;

const USAGE: &str = "usage: migratepages pid from-nodes to-nodes

nodes is a comma delimited list of node numbers or A-B ranges or all.
";

/// The size in bits of libnuma's node masks (`numa_max_possible_node`).
const MASK_BITS: u64 = 1024;

fn usage() -> u8 {
    let _ = std::io::stderr().write_all(USAGE.as_bytes());
    1
}

fn warn(msg: &str) {
    // libnuma's numa_warn: its message ends in a newline, and it adds one.
    let _ = write!(std::io::stderr(), "libnuma: Warning: {msg}\n\n");
}

/// C's `strtoul(s, &end, 0)`: the value (wrapped as C wraps a negative
/// one) and the bytes it used (0: no number).
fn strtoul(s: &str) -> (u64, usize) {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c) {
        i += 1;
    }
    let neg = match b.get(i) {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    let mut radix = 10;
    if b.get(i) == Some(&b'0') {
        if matches!(b.get(i + 1), Some(b'x' | b'X')) && b.get(i + 2).is_some_and(u8::is_ascii_hexdigit) {
            radix = 16;
            i += 2;
        } else {
            radix = 8;
        }
    }
    let start = i;
    let mut v: u64 = 0;
    let mut overflow = false;
    while let Some(d) = b.get(i).and_then(|c| (*c as char).to_digit(radix)) {
        match v.checked_mul(u64::from(radix)).and_then(|x| x.checked_add(u64::from(d))) {
            Some(x) => v = x,
            None => overflow = true,
        }
        i += 1;
    }
    if i == start {
        return (0, 0);
    }
    let v = if overflow { u64::MAX } else { v };
    (if neg { v.wrapping_neg() } else { v }, i)
}

/// libnuma's `get_nr`: a node number, or with `relative` the n-th allowed
/// node (the mask size when there is none).
fn get_nr(s: &str, allowed: &NodeSet, relative: bool) -> (u64, usize) {
    let (nr, used) = strtoul(s);
    if !relative || used == 0 {
        return (nr, used);
    }
    let found = usize::try_from(nr).ok().and_then(|n| allowed.nth(n));
    (found.map_or(MASK_BITS, u64::from), used)
}

fn allowed_has(allowed: &NodeSet, n: u64) -> bool {
    u32::try_from(n).is_ok_and(|n| allowed.contains(n))
}

/// libnuma's `numa_parse_nodestring`; `None` (after its warning, if it
/// gives one) when libnuma refuses the text.
fn parse_nodestring(text: &str, allowed: &NodeSet, configured: u32) -> Option<NodeSet> {
    let mut mask = NodeSet::new();
    if text.is_empty() {
        return Some(mask);
    }
    let mut s = text;
    let invert = s.starts_with('!');
    if invert {
        s = &s[1..];
    }
    let relative = s.starts_with('+');
    if relative {
        s = &s[1..];
    }
    loop {
        if s.starts_with(|c: char| c.is_ascii_alphabetic()) && s == "all" {
            mask = allowed.clone();
            s = "";
            break;
        }
        let (arg, used) = get_nr(s, allowed, relative);
        if used == 0 {
            warn(&format!("unparseable node description `{s}'"));
            return None;
        }
        if !allowed_has(allowed, arg) {
            warn(&format!("node argument {} is out of range", arg as i32));
            return None;
        }
        mask.insert(arg as u32);
        s = &s[used..];
        if let Some(after) = s.strip_prefix('-') {
            let (arg2, used2) = get_nr(after, allowed, relative);
            if used2 == 0 {
                warn(&format!("missing node argument {after}"));
                return None;
            }
            if !allowed_has(allowed, arg2) {
                warn(&format!("node argument {} out of range", arg2 as i32));
                return None;
            }
            for n in arg..=arg2 {
                if allowed_has(allowed, n) {
                    mask.insert(n as u32);
                }
            }
            s = &after[used2..];
        }
        match s.strip_prefix(',') {
            Some(next) => s = next,
            None => break,
        }
    }
    if !s.is_empty() {
        return None;
    }
    if invert {
        let mut inv = NodeSet::new();
        for n in 0..configured {
            if !mask.contains(n) {
                inv.insert(n);
            }
        }
        mask = inv;
    }
    Some(mask)
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
    let (pid, used) = strtoul(pid_text);
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
    let Some(from) = parse_nodestring(from_text, &allowed, configured) else {
        outln!("<{from_text}> is invalid");
        return Ok(1);
    };
    let Some(to) = parse_nodestring(to_text, &allowed, configured) else {
        outln!("<{to_text}> is invalid");
        return Ok(1);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strtoul_as_c() {
        assert_eq!(strtoul("12"), (12, 2));
        assert_eq!(strtoul("0x1f"), (31, 4));
        assert_eq!(strtoul("010"), (8, 3));
        assert_eq!(strtoul("0x"), (0, 1));
        assert_eq!(strtoul(" 5"), (5, 2));
        assert_eq!(strtoul("x"), (0, 0));
        assert_eq!(strtoul("-1"), (u64::MAX, 2));
    }

    #[test]
    fn nodestrings_as_libnuma() {
        let allowed = NodeSet::parse_list("0-3").unwrap_or_default();
        let p = |s: &str| parse_nodestring(s, &allowed, 4).map(|m| m.to_list());
        assert_eq!(p("1,3").as_deref(), Some("1,3"));
        assert_eq!(p("all").as_deref(), Some("0-3"));
        assert_eq!(p("!1").as_deref(), Some("0,2-3"));
        assert_eq!(p("+1-2").as_deref(), Some("1-2"));
        assert_eq!(p("0-1,3").as_deref(), Some("0-1,3"));
        assert_eq!(p("4"), None);
        assert_eq!(p("0:1"), None);
        assert_eq!(p(",0"), None);
        assert_eq!(p("0-"), None);
    }
}
