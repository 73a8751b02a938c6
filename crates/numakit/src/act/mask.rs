//! Kernel bitmaps (`unsigned long` arrays) built from and read back into
//! numakit's sets.
//!
//! The sets keep 64-bit words, least significant first; the kernel wants
//! `unsigned long` words, which are 32 bits on 32-bit targets. Converting
//! word by word keeps bit `i` at bit `i` on every target.

use libc::c_ulong;

/// Bits in one kernel word.
pub(crate) const ULONG_BITS: usize = c_ulong::BITS as usize;
const PER_U64: usize = 64 / ULONG_BITS;

/// A bitmap laid out as the kernel reads and writes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KernelMask {
    longs: Vec<c_ulong>,
}

impl KernelMask {
    /// An all-zero mask of at least `min_bits` bits (at least one word).
    pub(crate) fn zeroed(min_bits: usize) -> Self {
        let n = min_bits.div_ceil(ULONG_BITS).max(1);
        KernelMask { longs: vec![0; n] }
    }

    /// The mask of a set given as 64-bit words (`IdSet::to_words`), padded to
    /// at least `min_bits` bits and at least one word.
    pub(crate) fn from_words(words: &[u64], min_bits: usize) -> Self {
        let mut longs = Vec::with_capacity(words.len() * PER_U64);
        for &w in words {
            for k in 0..PER_U64 {
                // Truncation is the point: take the k-th unsigned long of w.
                longs.push((w >> (k * ULONG_BITS)) as c_ulong);
            }
        }
        let n = min_bits.div_ceil(ULONG_BITS).max(1);
        if longs.len() < n {
            longs.resize(n, 0);
        }
        KernelMask { longs }
    }

    /// The mask as 64-bit words, least significant first
    /// (for `IdSet::from_words`).
    #[allow(clippy::useless_conversion, reason = "c_ulong is u32 on 32-bit targets")]
    pub(crate) fn to_words(&self) -> Vec<u64> {
        self.longs
            .chunks(PER_U64)
            .map(|c| c.iter().enumerate().fold(0u64, |acc, (k, &l)| acc | (u64::from(l) << (k * ULONG_BITS))))
            .collect()
    }

    /// Size in bits (a multiple of the word size).
    pub(crate) fn bits(&self) -> usize {
        self.longs.len() * ULONG_BITS
    }

    /// Size in bytes, as `sched_*affinity` take it.
    pub(crate) fn byte_len(&self) -> usize {
        std::mem::size_of_val(self.longs.as_slice())
    }

    /// The `maxnode` argument of `set_mempolicy`, `mbind` and
    /// `migrate_pages` for this mask. The kernel drops one from it before use
    /// (`get_nodes()` starts with `--maxnode`), so, like libnuma
    /// (`nodemask->size + 1`), this is the number of bits plus one.
    pub(crate) fn maxnode(&self) -> libc::c_ulong {
        (self.bits() + 1) as c_ulong
    }

    pub(crate) fn as_ptr(&self) -> *const c_ulong {
        self.longs.as_ptr()
    }

    pub(crate) fn as_mut_ptr(&mut self) -> *mut c_ulong {
        self.longs.as_mut_ptr()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sets::NodeSet;

    #[test]
    fn round_trip_keeps_every_bit() {
        let s = NodeSet::parse_list("0,5,63,64,127,200,1023").expect("parse");
        let m = KernelMask::from_words(&s.to_words(0), 0);
        assert_eq!(m.bits(), 1024);
        assert_eq!(m.byte_len(), 128);
        assert_eq!(m.maxnode(), 1025);
        assert_eq!(NodeSet::from_words(&m.to_words()), s);
    }

    #[test]
    fn padding_and_empty() {
        let m = KernelMask::from_words(&[], 0);
        assert_eq!(m.bits(), ULONG_BITS);
        let m = KernelMask::from_words(&[1], 1000);
        assert_eq!(m.bits(), 1024);
        assert_eq!(m.to_words()[0], 1);
        assert_eq!(KernelMask::zeroed(1025).bits(), 1024 + ULONG_BITS);
    }
}
