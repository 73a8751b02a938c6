//! Strings from the records by id, in bounded memory. Each parsing thread
//! gives the strings of its chunks ids of its own ([`LocalStrings`],
//! emptied between chunks once it holds [`LOCAL_MAX`]); the fold keeps,
//! per thread, the text of those ids and what they are in the report's
//! one table ([`Translate`]); the report's table ([`Strings`]) takes a
//! string only when the fold keeps state for it (a cell, a host, a
//! cluster within their limits, `collect.rs`), so a record of a million
//! distinct names costs the report nothing beyond its limits.

use std::collections::HashMap;

use crate::jobs::FastMap;

/// Strings a parsing thread holds ids for before it starts anew (between
/// chunks; a chunk of 4 MiB adds at most its own strings).
pub const LOCAL_MAX: usize = 1 << 16;

/// A [`Translate`] entry not (yet) in the report's table.
const UNSET: u32 = u32::MAX - 1;

/// The report's strings by id.
#[derive(Debug, Default)]
pub struct Strings {
    // SipHash (std's default): the keys are text from the records
    ids: HashMap<Box<str>, u32>,
    pub names: Vec<String>,
}

impl Strings {
    /// The id of `s`, new if unseen.
    pub fn id(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.ids.get(s) {
            return i;
        }
        let i = self.names.len() as u32;
        self.ids.insert(s.into(), i);
        self.names.push(s.to_string());
        i
    }
    /// The id of `s` if seen.
    pub fn get(&self, s: &str) -> Option<u32> {
        self.ids.get(s).copied()
    }
    /// The string of `id` (`(none)` for an id it does not have).
    pub fn name(&self, id: u32) -> &str {
        self.names.get(id as usize).map_or("(none)", String::as_str)
    }
}

/// A parsing thread's ids.
#[derive(Default)]
pub struct LocalStrings {
    // the fast hasher: this table is on every line's path, and bounded
    ids: FastMap<Box<str>, u32>,
    /// Strings given ids since the last batch, in id order.
    pub fresh: Vec<String>,
}

impl LocalStrings {
    /// The id of `s` in this thread's table.
    pub fn id(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.ids.get(s) {
            return i;
        }
        let i = self.ids.len() as u32;
        self.ids.insert(s.into(), i);
        self.fresh.push(s.to_string());
        i
    }

    /// Before a chunk: empties the table when it holds [`LOCAL_MAX`] or
    /// more; whether it did (the batch says so, and the fold starts its
    /// [`Translate`] of this thread anew).
    pub fn start_chunk(&mut self) -> bool {
        if self.ids.len() < LOCAL_MAX {
            return false;
        }
        self.ids = FastMap::default();
        self.fresh.clear();
        true
    }
}

/// One parsing thread's ids as the fold sees them: their text, and their
/// id in the report's table where it has one.
#[derive(Default)]
pub struct Translate {
    text: Vec<Box<str>>,
    global: Vec<u32>,
}

impl Translate {
    /// Forgets every id (the thread started its table anew).
    pub fn reset(&mut self) {
        *self = Translate::default();
    }

    /// The thread's next id is `s`.
    pub fn push(&mut self, s: &str) {
        self.text.push(s.into());
        self.global.push(UNSET);
    }

    /// The text of the thread's id `local`.
    pub fn text(&self, local: u32) -> &str {
        self.text.get(local as usize).map_or("", |s| s)
    }

    /// The report's id of the thread's id `local`, if the report's table
    /// has the string.
    pub fn get(&mut self, strings: &Strings, local: u32) -> Option<u32> {
        let g = *self.global.get(local as usize)?;
        if g != UNSET {
            return Some(g);
        }
        let g = strings.get(self.text(local))?;
        self.global[local as usize] = g;
        Some(g)
    }

    /// The report's id of the thread's id `local`, the string taken into
    /// the report's table if it is not there.
    pub fn intern(&mut self, strings: &mut Strings, local: u32) -> u32 {
        if let Some(g) = self.get(strings, local) {
            return g;
        }
        let g = strings.id(self.text(local));
        if let Some(slot) = self.global.get_mut(local as usize) {
            *slot = g;
        }
        g
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_translate_lazily_and_survive_a_reset() {
        let mut local = LocalStrings::default();
        let (a, b) = (local.id("a"), local.id("b"));
        let mut t = Translate::default();
        local.fresh.drain(..).for_each(|s| t.push(&s));
        let mut global = Strings::default();
        assert_eq!(t.get(&global, a), None, "not interned: nothing kept");
        assert_eq!(global.names.len(), 0);
        let gb = t.intern(&mut global, b);
        assert_eq!((t.get(&global, b), global.name(gb)), (Some(gb), "b"));
        // another thread interned "a": found without interning again
        let ga = global.id("a");
        assert_eq!(t.get(&global, a), Some(ga));
        // a thread's table is emptied only once full, between chunks
        assert!(!local.start_chunk());
        for i in 0..LOCAL_MAX {
            local.id(&i.to_string());
        }
        assert!(local.start_chunk() && local.id("z") == 0 && local.fresh == ["z"]);
    }
}
