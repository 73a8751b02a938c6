//! numactl's syntax for node and CPU lists, as `--cpunodebind`,
//! `--membind`, `--physcpubind` and friends take them:
//!
//! * `1-3,5`: a list in the kernel syntax;
//! * `all`: every id of the allowed set (the caller's cpuset);
//! * `!LIST`: the allowed ids *not* in LIST;
//! * `+LIST`: ids relative to the allowed set (`+0-1` is its first two);
//! * `same`: the set given to the previous option.
//!
//! Parsing ([`SetSpec::parse`]) is pure syntax; [`SetSpec::resolve`] turns a
//! spec into ids given the allowed set. Whether the ids exist or may be used
//! is for the caller to check, where it can say which rule was broken.
//! [`SetSpec::resolve_within`] reads a list as libnuma 2.0.16 does (the ids
//! typed, [`SetSpec::typed_ends`], must be allowed; the ids inside a range
//! that are not are skipped; `!` inverts within a wider set than the allowed
//! one).
//! The I/O specifiers (`netdev:`, `block:`, ...) need the machine model and
//! are handled by the placement layer on top of this.

use super::{IdSet, Kind, SetError};

/// A parsed numactl set specification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetSpec<K: Kind> {
    /// `same`: the set of the previous option.
    Same,
    /// `all`, `!...`, `+...` or a plain list.
    Ids {
        /// The list (empty for `all`).
        list: IdSet<K>,
        /// `all` was given.
        all: bool,
        /// `!` was given: the complement within the allowed set.
        invert: bool,
        /// `+` was given: indexes into the allowed set.
        relative: bool,
        /// The ids typed alone or as the ends of a range (`1,4-6` gives
        /// 1, 4 and 6); empty for `all` and `+`.
        ends: IdSet<K>,
    },
}

/// Why a spec could not be resolved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    /// `same` with no previous set.
    #[error("\"same\" needs an earlier {0} option to refer to")]
    NoPrevious(&'static str),
    /// A relative index beyond the allowed set.
    #[error("relative {kind} +{index} is out of range: only {count} {kind}s are allowed ({allowed})")]
    RelativeOutOfRange {
        /// "cpu" or "node".
        kind: &'static str,
        /// The index given.
        index: u32,
        /// How many ids are allowed.
        count: usize,
        /// The allowed set, in list syntax.
        allowed: String,
    },
}

impl<K: Kind> SetSpec<K> {
    /// Parses numactl's syntax. `what` names the option for messages.
    pub fn parse(text: &str) -> Result<Self, SetError> {
        let t = text.trim();
        if t == "same" {
            return Ok(SetSpec::Same);
        }
        let (invert, rest) = match t.strip_prefix('!') {
            Some(r) => (true, r),
            None => (false, t),
        };
        let (relative, rest) = match rest.strip_prefix('+') {
            Some(r) => (true, r),
            None => (false, rest),
        };
        if rest == "all" {
            if relative {
                return Err(SetError::Syntax {
                    what: "numactl set",
                    input: text.to_string(),
                    reason: "\"+\" cannot be combined with \"all\"".into(),
                });
            }
            return Ok(SetSpec::Ids { list: IdSet::new(), all: true, invert, relative: false, ends: IdSet::new() });
        }
        if rest.is_empty() {
            return Err(SetError::Syntax {
                what: if K::NAME == "cpu" { "cpu list" } else { "node list" },
                input: text.to_string(),
                reason: "empty list".into(),
            });
        }
        let list = IdSet::parse_list(rest).map_err(|e| match e {
            SetError::Syntax { what, reason, .. } => SetError::Syntax { what, input: text.to_string(), reason },
        })?;
        let mut ends = IdSet::new();
        if !relative {
            // The syntax is valid (parse_list took it): each part is `A`,
            // `A-B` or `A-B:S...`.
            for part in rest.split(',') {
                let range = part.split(':').next().unwrap_or(part);
                for end in range.split('-').filter_map(|e| e.trim().parse::<u32>().ok()) {
                    ends.insert(end);
                }
            }
        }
        Ok(SetSpec::Ids { list, all: false, invert, relative, ends })
    }

    /// The ids typed alone or as a range's ends (empty for `same`, `all`
    /// and `+`): the ones libnuma checks against the allowed set.
    pub fn typed_ends(&self) -> IdSet<K> {
        match self {
            SetSpec::Ids { ends, .. } => ends.clone(),
            SetSpec::Same => IdSet::new(),
        }
    }

    /// Turns the spec into ids as libnuma 2.0.16's parser does: `allowed`
    /// is what `all` and `+` refer to and the ids of a range are kept only
    /// where allowed (that the typed ids themselves are allowed is for the
    /// caller to check, with [`SetSpec::typed_ends`]); `!` inverts within
    /// `universe`, not within `allowed`.
    pub fn resolve_within(
        &self,
        allowed: &IdSet<K>,
        universe: &IdSet<K>,
        previous: Option<&IdSet<K>>,
    ) -> Result<IdSet<K>, ResolveError> {
        match self {
            SetSpec::Same => previous.cloned().ok_or(ResolveError::NoPrevious(K::NAME)),
            SetSpec::Ids { list, all, invert, relative, .. } => {
                // `+` lists are positions in the allowed set, not ids.
                let typed = if *relative { list.clone() } else { list.intersection(allowed) };
                let chosen = chosen(&typed, *all, *relative, allowed)?;
                Ok(if *invert { universe.difference(&chosen) } else { chosen })
            }
        }
    }

    /// Turns the spec into ids: `allowed` is what `all`, `!` and `+` refer
    /// to, `previous` what `same` refers to.
    pub fn resolve(&self, allowed: &IdSet<K>, previous: Option<&IdSet<K>>) -> Result<IdSet<K>, ResolveError> {
        match self {
            SetSpec::Same => previous.cloned().ok_or(ResolveError::NoPrevious(K::NAME)),
            SetSpec::Ids { list, all, invert, relative, .. } => {
                let chosen = chosen(list, *all, *relative, allowed)?;
                Ok(if *invert { allowed.difference(&chosen) } else { chosen })
            }
        }
    }
}

/// The ids a spec names before `!`: `allowed` for `all`, the allowed ids at
/// the positions of `list` for `+`, else `list`.
fn chosen<K: Kind>(list: &IdSet<K>, all: bool, relative: bool, allowed: &IdSet<K>) -> Result<IdSet<K>, ResolveError> {
    if all {
        return Ok(allowed.clone());
    }
    if !relative {
        return Ok(list.clone());
    }
    let mut out = IdSet::new();
    for idx in list.iter() {
        match allowed.nth(idx as usize) {
            Some(id) => out.insert(id),
            None => {
                return Err(ResolveError::RelativeOutOfRange {
                    kind: K::NAME,
                    index: idx,
                    count: allowed.len(),
                    allowed: allowed.to_list(),
                })
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sets::{CpuSet, NodeSet};

    fn allowed() -> NodeSet {
        NodeSet::parse_list("0-3,6").expect("list")
    }

    #[test]
    fn plain_all_invert_relative_same() {
        let a = allowed();
        let r = |s: &str| SetSpec::<crate::sets::Node>::parse(s).expect("parse").resolve(&a, None);
        assert_eq!(r("1-2").expect("r").to_list(), "1-2");
        assert_eq!(r("all").expect("r").to_list(), "0-3,6");
        assert_eq!(r("!1-2").expect("r").to_list(), "0,3,6");
        assert_eq!(r("+0,4").expect("r").to_list(), "0,6");
        assert_eq!(r("!+0").expect("r").to_list(), "1-3,6");
        assert!(r("!all").expect("r").is_empty());
        let prev = NodeSet::parse_list("3").expect("p");
        let same = SetSpec::<crate::sets::Node>::parse("same").expect("same");
        assert_eq!(same.resolve(&a, Some(&prev)).expect("r"), prev);
        assert_eq!(same.resolve(&a, None), Err(ResolveError::NoPrevious("node")));
    }

    #[test]
    fn libnuma_reading_keeps_allowed_ids_of_ranges_and_inverts_in_the_universe() {
        let a = allowed();
        let u = NodeSet::parse_list("0-7").expect("list");
        let spec = |s: &str| SetSpec::<crate::sets::Node>::parse(s).expect("parse");
        let r = |s: &str| spec(s).resolve_within(&a, &u, None).expect("r").to_list();
        assert_eq!(r("2-6"), "2-3,6");
        assert_eq!(r("!0-3"), "4-7");
        assert_eq!(r("!all"), "4-5,7");
        assert_eq!(r("all"), "0-3,6");
        assert_eq!(r("+0,4"), "0,6");
        assert_eq!(r("!+0"), "1-7");
        assert_eq!(spec("1,4-6").typed_ends().to_list(), "1,4,6");
        assert_eq!(spec("!2-3").typed_ends().to_list(), "2-3");
        assert_eq!(spec("0-7:2").typed_ends().to_list(), "0,7");
        assert!(spec("+1-2").typed_ends().is_empty());
        assert!(spec("all").typed_ends().is_empty());
    }

    #[test]
    fn relative_out_of_range_names_allowed() {
        let a = CpuSet::parse_list("4-5").expect("l");
        let e = SetSpec::<crate::sets::Cpu>::parse("+2").expect("p").resolve(&a, None).unwrap_err();
        assert_eq!(e.to_string(), "relative cpu +2 is out of range: only 2 cpus are allowed (4-5)");
    }

    #[test]
    fn syntax_errors_name_the_input() {
        let e = SetSpec::<crate::sets::Node>::parse("1-x").unwrap_err();
        assert!(e.to_string().contains("\"1-x\""), "{e}");
        assert!(SetSpec::<crate::sets::Node>::parse("").is_err());
        assert!(SetSpec::<crate::sets::Node>::parse("!").is_err());
        assert!(SetSpec::<crate::sets::Node>::parse("+all").is_err());
    }
}
