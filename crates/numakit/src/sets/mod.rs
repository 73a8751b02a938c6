//! CPU and node sets: one growable bitmap type, [`IdSet`], typed by what it
//! holds ([`CpuSet`], [`NodeSet`]), with the syntaxes users meet:
//!
//! * the kernel list syntax, `0-3,8,10-11` (also `0-15:2/4` strides), used by
//!   `cpulist`, `Cpus_allowed_list` and friends ([`IdSet::parse_list`],
//!   [`IdSet::to_list`]);
//! * the sysfs / taskset hex mask, `ff,00000001` (comma-separated 32-bit
//!   words, most significant first) ([`IdSet::parse_mask`],
//!   [`IdSet::to_mask`]);
//! * numactl's node and CPU syntax (`all`, `!` inversion, `+` relative to the
//!   allowed set, `same`) in [`numactl`], and libnuma's own readings of
//!   numbers and node strings (`numa_parse_nodestring`, for numactl and
//!   migratepages parity) in [`libnuma`];
//! * taskset's CPU mask (`0x` prefix, 32-bit groups) in [`taskset`].
//!
//! This module owns syntax and set algebra only. It never reads the system:
//! callers pass in whatever "all" or "allowed" means for them.

pub mod libnuma;
pub mod numactl;
pub mod taskset;

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::marker::PhantomData;

/// CPU ids are below this: twice the largest `NR_CPUS` any architecture's
/// kernel configuration allows today (8,192). Readers of kernel files
/// refuse larger ids (a crafted file must not make a set of millions of
/// bits).
pub const MAX_CPUS: u32 = 16_384;

/// Node ids are below this: the kernel's `MAX_NUMNODES` at its largest
/// (`NODES_SHIFT` = 10).
pub const MAX_NODES: u32 = 1024;

/// Largest id a set accepts from text (the kernel's `NR_CPUS` maximum is 8192;
/// node ids stay far below). Protects against `0-4000000000` eating memory.
pub const MAX_ID: u32 = 1 << 20;

/// Error from parsing a set.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SetError {
    /// The text is not in the expected syntax.
    #[error("invalid {what} \"{input}\": {reason}")]
    Syntax {
        /// What was being parsed ("cpu list", "node mask", ...).
        what: &'static str,
        /// The text given.
        input: String,
        /// Why it was refused.
        reason: String,
    },
}

/// The kind of id a set holds; only used to keep CPU and node sets apart.
pub trait Kind: 'static {
    /// Singular noun used in messages ("cpu", "node").
    const NAME: &'static str;
}

/// Marker for sets of logical CPU ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Cpu;
/// Marker for sets of NUMA node ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Node;
impl Kind for Cpu {
    const NAME: &'static str = "cpu";
}
impl Kind for Node {
    const NAME: &'static str = "node";
}

/// A set of logical CPU ids.
pub type CpuSet = IdSet<Cpu>;
/// A set of NUMA node ids.
pub type NodeSet = IdSet<Node>;

/// A growable bitmap of small non-negative ids.
///
/// Equality, ordering and hashing depend only on the members, never on the
/// capacity that happens to be allocated.
pub struct IdSet<K: Kind> {
    words: Vec<u64>,
    _kind: PhantomData<K>,
}

impl<K: Kind> Clone for IdSet<K> {
    fn clone(&self) -> Self {
        Self { words: self.words.clone(), _kind: PhantomData }
    }
}

impl<K: Kind> Default for IdSet<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Kind> IdSet<K> {
    /// The empty set.
    pub fn new() -> Self {
        Self { words: Vec::new(), _kind: PhantomData }
    }

    /// `{0, 1, ..., n-1}`.
    pub fn first_n(n: u32) -> Self {
        let mut s = Self::new();
        s.insert_range(0, n);
        s
    }

    /// Adds `id`.
    pub fn insert(&mut self, id: u32) {
        let w = (id / 64) as usize;
        if w >= self.words.len() {
            self.words.resize(w + 1, 0);
        }
        self.words[w] |= 1u64 << (id % 64);
    }

    /// Adds every id in `lo..hi`.
    pub fn insert_range(&mut self, lo: u32, hi: u32) {
        for id in lo..hi {
            self.insert(id);
        }
    }

    /// Removes `id`; returns whether it was there.
    pub fn remove(&mut self, id: u32) -> bool {
        let w = (id / 64) as usize;
        match self.words.get_mut(w) {
            Some(word) => {
                let had = *word & (1u64 << (id % 64)) != 0;
                *word &= !(1u64 << (id % 64));
                had
            }
            None => false,
        }
    }

    /// Whether `id` is a member.
    pub fn contains(&self, id: u32) -> bool {
        self.words.get((id / 64) as usize).is_some_and(|w| w & (1u64 << (id % 64)) != 0)
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Whether there is no member.
    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|&w| w == 0)
    }

    /// Smallest member.
    pub fn first(&self) -> Option<u32> {
        self.iter().next()
    }

    /// Largest member.
    pub fn last(&self) -> Option<u32> {
        self.words.iter().enumerate().rev().find(|(_, &w)| w != 0).map(|(i, &w)| i as u32 * 64 + 63 - w.leading_zeros())
    }

    /// Members in increasing order.
    pub fn iter(&self) -> Iter<'_> {
        Iter { words: &self.words, word: 0, bits: self.words.first().copied().unwrap_or(0) }
    }

    /// The members as a vector, in increasing order.
    pub fn to_vec(&self) -> Vec<u32> {
        self.iter().collect()
    }

    /// `self ∪ other`.
    pub fn union(&self, other: &Self) -> Self {
        let n = self.words.len().max(other.words.len());
        let words = (0..n)
            .map(|i| self.words.get(i).copied().unwrap_or(0) | other.words.get(i).copied().unwrap_or(0))
            .collect();
        Self { words, _kind: PhantomData }.trimmed()
    }

    /// `self ∩ other`.
    pub fn intersection(&self, other: &Self) -> Self {
        let words = self.words.iter().zip(&other.words).map(|(a, b)| a & b).collect();
        Self { words, _kind: PhantomData }.trimmed()
    }

    /// `self \ other`.
    pub fn difference(&self, other: &Self) -> Self {
        let words = self.words.iter().enumerate().map(|(i, a)| a & !other.words.get(i).copied().unwrap_or(0)).collect();
        Self { words, _kind: PhantomData }.trimmed()
    }

    /// Whether every member of `self` is in `other`.
    pub fn is_subset(&self, other: &Self) -> bool {
        self.difference(other).is_empty()
    }

    /// Whether the two sets share a member.
    pub fn intersects(&self, other: &Self) -> bool {
        self.words.iter().zip(&other.words).any(|(a, b)| a & b != 0)
    }

    /// The `n`-th member (0-based), as numactl's `+` relative syntax uses it.
    pub fn nth(&self, n: usize) -> Option<u32> {
        self.iter().nth(n)
    }

    fn trimmed(mut self) -> Self {
        while self.words.last() == Some(&0) {
            self.words.pop();
        }
        self
    }

    /// The raw 64-bit words, least significant first (bit `i` of word `w` is
    /// id `64*w + i`), e.g. for `sched_setaffinity` or `mbind` masks. The
    /// slice is at least `min_words` long.
    pub fn to_words(&self, min_words: usize) -> Vec<u64> {
        let mut w = self.words.clone();
        if w.len() < min_words {
            w.resize(min_words, 0);
        }
        w
    }

    /// Builds a set from raw 64-bit words (see [`IdSet::to_words`]).
    pub fn from_words(words: &[u64]) -> Self {
        Self { words: words.to_vec(), _kind: PhantomData }.trimmed()
    }

    fn syntax(what: &'static str, input: &str, reason: impl Into<String>) -> SetError {
        SetError::Syntax { what, input: input.to_string(), reason: reason.into() }
    }

    fn list_what() -> &'static str {
        if K::NAME == "cpu" {
            "cpu list"
        } else {
            "node list"
        }
    }

    fn mask_what() -> &'static str {
        if K::NAME == "cpu" {
            "cpu mask"
        } else {
            "node mask"
        }
    }

    /// Parses the kernel list syntax: `0-3,8,10-11`, with optional strides
    /// `0-15:2/4` (use 2 of every group of 4), and util-linux's (taskset's)
    /// step `0-10:2` (every second: `0-10:1/2`). Whitespace around the text
    /// (and a trailing NUL, as some sysfs files have) is ignored; an empty
    /// text is the empty set.
    pub fn parse_list(text: &str) -> Result<Self, SetError> {
        let what = Self::list_what();
        let t = text.trim_matches(|c: char| c.is_whitespace() || c == '\0');
        let mut set = Self::new();
        if t.is_empty() {
            return Ok(set);
        }
        for part in t.split(',') {
            let part = part.trim();
            if part.is_empty() {
                return Err(Self::syntax(what, text, "empty element between commas"));
            }
            let (range, stride) = match part.split_once(':') {
                Some((r, s)) => (r, Some(s)),
                None => (part, None),
            };
            let (lo, hi) = match range.split_once('-') {
                Some((a, b)) => (Self::parse_id(what, text, a)?, Self::parse_id(what, text, b)?),
                None => {
                    let v = Self::parse_id(what, text, range)?;
                    (v, v)
                }
            };
            if lo > hi {
                return Err(Self::syntax(what, text, format!("range {lo}-{hi} goes backwards")));
            }
            match stride {
                None => set.insert_range(lo, hi + 1),
                Some(s) => {
                    // The kernel's `USED/GROUP`, or util-linux's (taskset's)
                    // step `S` = `1/S`.
                    let (used, group) = match s.split_once('/') {
                        Some((u, g)) => (Self::parse_id(what, text, u)?, Self::parse_id(what, text, g)?),
                        None => (1, Self::parse_id(what, text, s)?),
                    };
                    if !range.contains('-') {
                        return Err(Self::syntax(what, text, format!("stride \"{s}\" needs a range A-B before it")));
                    }
                    if group == 0 || used == 0 || used > group {
                        return Err(Self::syntax(what, text, format!("stride \"{s}\" needs 0 < USED <= GROUP")));
                    }
                    let mut start = lo;
                    while start <= hi {
                        for id in start..(start.saturating_add(used)).min(hi + 1) {
                            set.insert(id);
                        }
                        start = match start.checked_add(group) {
                            Some(s) => s,
                            None => break,
                        };
                    }
                }
            }
        }
        Ok(set)
    }

    fn parse_id(what: &'static str, input: &str, s: &str) -> Result<u32, SetError> {
        let s = s.trim();
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return Err(Self::syntax(what, input, format!("\"{s}\" is not a number")));
        }
        match s.parse::<u32>() {
            Ok(v) if v < MAX_ID => Ok(v),
            _ => Err(Self::syntax(what, input, format!("{s} is larger than the limit {}", MAX_ID - 1))),
        }
    }

    /// Formats in the kernel list syntax (`0-3,8,10-11`); the empty set is "".
    pub fn to_list(&self) -> String {
        let mut out = String::new();
        let mut it = self.iter().peekable();
        while let Some(lo) = it.next() {
            let mut hi = lo;
            while it.peek() == Some(&(hi + 1)) {
                hi += 1;
                it.next();
            }
            if !out.is_empty() {
                out.push(',');
            }
            if hi == lo {
                out.push_str(&lo.to_string());
            } else {
                out.push_str(&format!("{lo}-{hi}"));
            }
        }
        out
    }

    /// Parses a hex mask as sysfs `cpumap` and `taskset` write it:
    /// comma-separated 32-bit words, most significant first (`ff,00000001`
    /// is CPUs 0 and 32-39). An optional `0x` prefix is accepted; words other
    /// than the first may be shorter than 8 digits only in the first word.
    pub fn parse_mask(text: &str) -> Result<Self, SetError> {
        let what = Self::mask_what();
        let t = text.trim_matches(|c: char| c.is_whitespace() || c == '\0');
        let t = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")).unwrap_or(t);
        if t.is_empty() {
            return Err(Self::syntax(what, text, "empty mask"));
        }
        let words: Vec<&str> = t.split(',').collect();
        let mut set = Self::new();
        let n = words.len();
        for (i, w) in words.iter().enumerate() {
            if w.is_empty() || w.len() > 8 && n > 1 || !w.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(Self::syntax(what, text, format!("\"{w}\" is not a 32-bit hex word")));
            }
            // A single word without commas may be longer than 32 bits (taskset style).
            let digits = w.as_bytes();
            let word_index = (n - 1 - i) as u64; // 32-bit word number of the last digit group
            for (j, d) in digits.iter().rev().enumerate() {
                let nibble = (*d as char).to_digit(16).unwrap_or(0);
                for b in 0..4u64 {
                    if nibble & (1 << b) != 0 {
                        let id = word_index * 32 + j as u64 * 4 + b;
                        if id >= MAX_ID as u64 {
                            return Err(Self::syntax(what, text, "mask is larger than the id limit"));
                        }
                        set.insert(id as u32);
                    }
                }
            }
        }
        Ok(set)
    }

    /// Formats as a sysfs mask: comma-separated 32-bit words of 8 hex digits,
    /// most significant first, covering at least `nbits` bits (the kernel
    /// prints `ceil(nr_ids / 32)` words).
    pub fn to_mask(&self, nbits: u32) -> String {
        let need = self.last().map_or(0, |l| l + 1).max(nbits).max(1);
        let nwords = need.div_ceil(32);
        let mut parts = Vec::with_capacity(nwords as usize);
        for w in (0..nwords).rev() {
            let word64 = self.words.get((w / 2) as usize).copied().unwrap_or(0);
            let word = if w % 2 == 0 { word64 as u32 } else { (word64 >> 32) as u32 };
            parts.push(format!("{word:08x}"));
        }
        parts.join(",")
    }
}

/// Iterator over the members of an [`IdSet`].
pub struct Iter<'a> {
    words: &'a [u64],
    word: usize,
    bits: u64,
}

impl Iterator for Iter<'_> {
    type Item = u32;
    fn next(&mut self) -> Option<u32> {
        loop {
            if self.bits != 0 {
                let b = self.bits.trailing_zeros();
                self.bits &= self.bits - 1;
                return Some(self.word as u32 * 64 + b);
            }
            self.word += 1;
            self.bits = *self.words.get(self.word)?;
        }
    }
}

impl<'a, K: Kind> IntoIterator for &'a IdSet<K> {
    type Item = u32;
    type IntoIter = Iter<'a>;
    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl<K: Kind> FromIterator<u32> for IdSet<K> {
    fn from_iter<I: IntoIterator<Item = u32>>(iter: I) -> Self {
        let mut s = Self::new();
        for id in iter {
            s.insert(id);
        }
        s
    }
}

impl<K: Kind> PartialEq for IdSet<K> {
    fn eq(&self, other: &Self) -> bool {
        let n = self.words.len().max(other.words.len());
        (0..n).all(|i| self.words.get(i).copied().unwrap_or(0) == other.words.get(i).copied().unwrap_or(0))
    }
}
impl<K: Kind> Eq for IdSet<K> {}

impl<K: Kind> Hash for IdSet<K> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        for id in self.iter() {
            id.hash(state);
        }
    }
}

impl<K: Kind> PartialOrd for IdSet<K> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<K: Kind> Ord for IdSet<K> {
    /// Lexicographic on the sorted members (so `{0,1} < {0,2} < {1}`).
    fn cmp(&self, other: &Self) -> Ordering {
        self.iter().cmp(other.iter())
    }
}

impl<K: Kind> fmt::Debug for IdSet<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}set[{}]", K::NAME, self.to_list())
    }
}

impl<K: Kind> fmt::Display for IdSet<K> {
    /// The kernel list syntax.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_list())
    }
}

impl<K: Kind> std::str::FromStr for IdSet<K> {
    type Err = SetError;
    fn from_str(s: &str) -> Result<Self, SetError> {
        Self::parse_list(s)
    }
}

impl<K: Kind> serde::Serialize for IdSet<K> {
    /// Serialized as an array of integers, the form the JSON schema documents.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

impl<'de, K: Kind> serde::Deserialize<'de> for IdSet<K> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v: Vec<u32> = Vec::deserialize(d)?;
        if let Some(bad) = v.iter().find(|&&id| id >= MAX_ID) {
            return Err(serde::de::Error::custom(format!("{} id {bad} exceeds the limit", K::NAME)));
        }
        Ok(v.into_iter().collect())
    }
}

#[cfg(test)]
mod tests;
