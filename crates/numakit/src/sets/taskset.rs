//! taskset's CPU mask as `taskset -p MASK PID` takes it: `0x` (optional),
//! hex digits, commas between 32-bit groups as taskset and sysfs print
//! them (`ff,ffffffff`; every group after the first has 8 digits). As
//! `sched_setaffinity(2)` does, bits of CPUs the caller may not use are
//! dropped; a mask that leaves none is refused. Syntax only: the caller
//! passes the CPUs it may use.

use super::CpuSet;

/// Why a mask is refused (the message follows the mask as typed).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct MaskError(String);

/// The CPUs of `typed` that `allowed` holds.
pub fn parse_mask(typed: &str, allowed: &CpuSet) -> Result<CpuSet, MaskError> {
    let bad = |why: String| MaskError(why);
    let digits = typed.strip_prefix("0x").unwrap_or(typed);
    let groups: Vec<&str> = digits.split(',').collect();
    if digits.is_empty() || groups.iter().any(|g| g.is_empty()) {
        return Err(bad("not a hex mask (an empty group)".into()));
    }
    if let Some(g) = groups.iter().find(|g| !g.bytes().all(|b| b.is_ascii_hexdigit())) {
        return Err(bad(format!("\"{g}\" is not hexadecimal")));
    }
    if let Some(g) = groups.iter().skip(1).find(|g| g.len() != 8) {
        return Err(bad(format!("group \"{g}\" after a comma must have 8 hex digits (32 CPUs)")));
    }
    let set = CpuSet::parse_mask(digits).map_err(|e| bad(e.to_string()))?;
    let usable = set.intersection(allowed);
    if usable.is_empty() {
        if set.is_empty() {
            return Err(bad("selects no CPU".into()));
        }
        return Err(bad(format!(
            "selects CPU(s) {}, none of which this process may use (CPUs {})",
            set.to_list(),
            allowed.to_list()
        )));
    }
    Ok(usable)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_as_taskset_takes_them() {
        let allowed = CpuSet::parse_list("0-3,32-35").expect("list");
        let m = |t: &str| parse_mask(t, &allowed).map(|s| s.to_list()).map_err(|e| e.to_string());
        assert_eq!(m("0x3"), Ok("0-1".into()));
        assert_eq!(m("f0000000f"), Ok("0-3,32-35".into()));
        assert_eq!(m("ff,0000000f"), Ok("0-3,32-35".into()));
        assert_eq!(m("ff,f"), Err("group \"f\" after a comma must have 8 hex digits (32 CPUs)".into()));
        assert_eq!(m("zz"), Err("\"zz\" is not hexadecimal".into()));
        assert_eq!(m("0x"), Err("not a hex mask (an empty group)".into()));
        assert_eq!(m("1,"), Err("not a hex mask (an empty group)".into()));
        assert_eq!(m("0"), Err("selects no CPU".into()));
        assert_eq!(m("f0"), Err("selects CPU(s) 4-7, none of which this process may use (CPUs 0-3,32-35)".into()));
    }
}
