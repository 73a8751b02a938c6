//! libnuma 2.0.16's own readings of numbers and node lists, for the tools
//! numakit stands in for (`numactl`, `migratepages`), where the same text
//! must give the same set, warning and refusal as libnuma:
//!
//! * [`strtoul`]: C's `strtoul(s, &end, 0)` (decimal, `0x` hex, `0` octal);
//! * [`parse_nodestring`]: `numa_parse_nodestring` (`all`, `!`, `+`,
//!   `A-B`, commas; nodes outside the allowed set refused, with libnuma's
//!   warning);
//! * [`as_list`]: a numactl option's list in the syntax
//!   [`numactl::SetSpec`](super::numactl::SetSpec) reads, with libnuma's
//!   quirks (a reversed range is its first id; strides refused).
//!
//! Syntax only: the caller passes what "allowed" means and prints.

use super::NodeSet;

/// The size in bits of libnuma's node masks (`numa_max_possible_node`).
pub const MASK_BITS: u64 = 1024;

/// C's `strtoul(s, &end, 0)`: the value (wrapped as C wraps a negative
/// one) and the bytes it used (0: no number).
pub fn strtoul(s: &str) -> (u64, usize) {
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

/// Why libnuma refuses a node string: the warning it prints first
/// (`numa_warn`'s text, without libnuma's `libnuma: Warning: ` prefix),
/// `None` when it refuses without one (text left after the list).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    /// The warning, if libnuma gives one.
    pub warning: Option<String>,
}

/// libnuma's `numa_parse_nodestring`: the nodes `text` names, given the
/// caller's allowed nodes (`Mems_allowed`) and the number of configured
/// memory nodes (what `!` inverts within).
pub fn parse_nodestring(text: &str, allowed: &NodeSet, configured: u32) -> Result<NodeSet, Refused> {
    let warn = |w: String| Refused { warning: Some(w) };
    let mut mask = NodeSet::new();
    if text.is_empty() {
        return Ok(mask);
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
            return Err(warn(format!("unparseable node description `{s}'")));
        }
        if !allowed_has(allowed, arg) {
            return Err(warn(format!("node argument {} is out of range", arg as i32)));
        }
        mask.insert(arg as u32);
        s = &s[used..];
        if let Some(after) = s.strip_prefix('-') {
            let (arg2, used2) = get_nr(after, allowed, relative);
            if used2 == 0 {
                return Err(warn(format!("missing node argument {after}")));
            }
            if !allowed_has(allowed, arg2) {
                return Err(warn(format!("node argument {} out of range", arg2 as i32)));
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
        return Err(Refused { warning: None });
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
    Ok(mask)
}

/// A numactl option's list as libnuma 2.0.16 reads it, in the syntax
/// numakit's resolver takes: a reversed range `A-B` (A > B) is `A` alone
/// (libnuma sets the first id, then counts up to the second), and strides
/// (`0-7:2`, `0-7:1/2`) are refused (`None`) as numactl refuses them. An
/// I/O specifier (`netdev:eth0`) is the caller's to pass on before this.
pub fn as_list(value: &str) -> Option<String> {
    if value.contains(':') {
        return None;
    }
    let prefix_len = value.len() - value.trim_start_matches(['!', '+']).len();
    let (prefix, list) = value.split_at(prefix_len);
    let parts: Vec<String> = list
        .split(',')
        .map(|part| match part.split_once('-') {
            Some((a, b)) => match (a.parse::<u32>(), b.parse::<u32>()) {
                (Ok(x), Ok(y)) if x > y => a.to_string(),
                _ => part.to_string(),
            },
            None => part.to_string(),
        })
        .collect();
    Some(format!("{prefix}{}", parts.join(",")))
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
        let p = |s: &str| parse_nodestring(s, &allowed, 4).ok().map(|m| m.to_list());
        assert_eq!(p("1,3").as_deref(), Some("1,3"));
        assert_eq!(p("all").as_deref(), Some("0-3"));
        assert_eq!(p("!1").as_deref(), Some("0,2-3"));
        assert_eq!(p("+1-2").as_deref(), Some("1-2"));
        assert_eq!(p("0-1,3").as_deref(), Some("0-1,3"));
        assert_eq!(p("4"), None);
        assert_eq!(p("0:1"), None);
        assert_eq!(p(",0"), None);
        assert_eq!(p("0-"), None);
        let w = |s: &str| parse_nodestring(s, &allowed, 4).unwrap_err().warning;
        assert_eq!(w("4").as_deref(), Some("node argument 4 is out of range"));
        assert_eq!(w("x").as_deref(), Some("unparseable node description `x'"));
        assert_eq!(w("0-").as_deref(), Some("missing node argument "));
        assert_eq!(w("0-9").as_deref(), Some("node argument 9 out of range"));
        assert_eq!(w("0:1"), None);
    }

    #[test]
    fn lists_as_libnuma() {
        assert_eq!(as_list("1-0").as_deref(), Some("1"));
        assert_eq!(as_list("!3-1,0").as_deref(), Some("!3,0"));
        assert_eq!(as_list("+1-0").as_deref(), Some("+1"));
        assert_eq!(as_list("0-3,5").as_deref(), Some("0-3,5"));
        assert_eq!(as_list("all").as_deref(), Some("all"));
        assert_eq!(as_list("0-7:2"), None);
        assert_eq!(as_list("0-7:1/2"), None);
    }
}
