//! [`NodeBuffer`]: anonymous memory bound to nodes, for tests and
//! benchmarks (`numakit bench`).

use std::fmt;
use std::ptr::{self, NonNull};

use super::mempolicy::{mbind, MbindFlags, Mode, ModeFlags, Policy};
use super::pages::{query_pages, PageStatus};
use super::{last_errno, ActError, Pid, Result};
use crate::sets::NodeSet;

/// A private anonymous mapping
/// ([mmap(2)](https://man7.org/linux/man-pages/man2/mmap.2.html)) whose
/// memory policy is set with [`mbind`] before any page exists, so every
/// page faulted in follows it. Unmapped on drop.
///
/// Pages are only allocated when touched: call [`NodeBuffer::touch`] (or
/// write to it) before measuring where they are.
///
/// ```
/// use numakit::act::{query_pages, Mode, NodeBuffer, PageStatus, Pid};
/// use numakit::sets::NodeSet;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let mut buf = NodeBuffer::new(1 << 20, Mode::Bind, &NodeSet::parse_list("0")?)?;
/// buf.touch();
/// let status = query_pages(Pid::SELF, &buf.page_addresses())?;
/// assert!(status.iter().all(|s| *s == PageStatus::Node(0)));
/// buf.as_mut_slice()[0] = 7;
/// assert_eq!(buf.as_slice()[0], 7);
/// # Ok(()) }
/// ```
pub struct NodeBuffer {
    ptr: NonNull<u8>,
    len: usize,
    map_len: usize,
    policy: Option<Policy>,
}

// SAFETY: the buffer exclusively owns its mapping, like a `Box<[u8]>`;
// shared access only hands out `&[u8]`.
unsafe impl Send for NodeBuffer {}
// SAFETY: as above; `&NodeBuffer` gives read-only access.
unsafe impl Sync for NodeBuffer {}

impl NodeBuffer {
    /// Maps `len` bytes (rounded up to whole pages) and binds them to
    /// `nodes` with `mode`; the `mbind` is recorded in the change log.
    /// See [`mbind`] for what each mode wants of `nodes` (e.g. `EINVAL` for
    /// [`Mode::Bind`] with an empty set).
    pub fn new(len: usize, mode: Mode, nodes: &NodeSet) -> Result<NodeBuffer> {
        NodeBuffer::with_flags(len, mode, ModeFlags::NONE, nodes)
    }

    /// [`NodeBuffer::new`] with mode flags.
    pub fn with_flags(len: usize, mode: Mode, flags: ModeFlags, nodes: &NodeSet) -> Result<NodeBuffer> {
        let mut buf = NodeBuffer::unbound(len)?;
        // SAFETY: the mapping was just created, is owned by `buf` and has no
        // page yet; on error `buf` is dropped (unmapped).
        unsafe { mbind(buf.ptr.as_ptr().cast(), buf.map_len, mode, flags, nodes, MbindFlags::NONE) }?;
        buf.policy = Some(Policy { mode, flags, nodes: nodes.clone() });
        Ok(buf)
    }

    /// [`Mode::Bind`] to `nodes`.
    pub fn bind(len: usize, nodes: &NodeSet) -> Result<NodeBuffer> {
        NodeBuffer::new(len, Mode::Bind, nodes)
    }

    /// [`Mode::Interleave`] over `nodes`.
    pub fn interleave(len: usize, nodes: &NodeSet) -> Result<NodeBuffer> {
        NodeBuffer::new(len, Mode::Interleave, nodes)
    }

    /// [`Mode::Preferred`] on `node`.
    pub fn preferred(len: usize, node: u32) -> Result<NodeBuffer> {
        NodeBuffer::new(len, Mode::Preferred, &std::iter::once(node).collect::<NodeSet>())
    }

    /// Maps `len` bytes (rounded up to whole pages) without a range policy:
    /// pages follow the policy of the thread that faults them in. Nothing is
    /// recorded (no placement changes).
    pub fn unbound(len: usize) -> Result<NodeBuffer> {
        if len == 0 {
            return Err(ActError::Invalid { call: "mmap", why: "a buffer needs at least one byte".to_string() });
        }
        let page = NodeBuffer::page_size();
        let map_len = len
            .checked_next_multiple_of(page)
            .ok_or_else(|| ActError::Invalid { call: "mmap", why: format!("{len} bytes do not fit in memory") })?;
        // SAFETY: a new private anonymous mapping at an address the kernel
        // chooses: it overlaps nothing.
        let p = unsafe {
            libc::mmap(
                ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(ActError::sys("mmap", last_errno()));
        }
        let ptr = NonNull::new(p.cast::<u8>()).ok_or_else(|| ActError::sys("mmap", libc::ENOMEM))?;
        Ok(NodeBuffer { ptr, len, map_len, policy: None })
    }

    /// The system page size (`sysconf(_SC_PAGESIZE)`).
    pub fn page_size() -> usize {
        // SAFETY: sysconf only reads a configuration value.
        let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        usize::try_from(p).ok().filter(|&p| p > 0).unwrap_or(4096)
    }

    /// Faults every page in by writing to it (each page's first byte is
    /// read and written back, so contents are kept).
    pub fn touch(&mut self) {
        let page = NodeBuffer::page_size();
        let base = self.ptr.as_ptr();
        for off in (0..self.map_len).step_by(page) {
            // SAFETY: `off < map_len`, so the byte is inside the mapping,
            // which is readable and writable and exclusively ours (`&mut`).
            unsafe {
                let p = base.add(off);
                ptr::write_volatile(p, ptr::read_volatile(p));
            }
        }
    }

    /// The first byte.
    pub fn as_ptr(&self) -> *const u8 {
        self.ptr.as_ptr()
    }

    /// The first byte, for writing.
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// The length asked for (the mapping may be longer, up to a page
    /// boundary).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always false: a buffer has at least one byte.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The bytes (reading untouched pages faults them in, as the shared
    /// zero page).
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: the mapping holds `len` readable, initialised (zero-filled
        // by the kernel) bytes for the life of `self`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// The bytes, for writing.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as in `as_slice`, and `&mut self` makes the access
        // exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }

    /// Number of pages in the mapping.
    pub fn page_count(&self) -> usize {
        self.map_len / NodeBuffer::page_size()
    }

    /// The address of each page, for [`query_pages`] and
    /// [`move_pages`](super::pages::move_pages).
    pub fn page_addresses(&self) -> Vec<usize> {
        let base = self.ptr.as_ptr() as usize;
        (0..self.map_len).step_by(NodeBuffer::page_size()).map(|off| base + off).collect()
    }

    /// Where each page is ([`query_pages`] on [`NodeBuffer::page_addresses`]).
    pub fn page_status(&self) -> Result<Vec<PageStatus>> {
        query_pages(Pid::SELF, &self.page_addresses())
    }

    /// The policy the buffer was bound with (`None` for
    /// [`NodeBuffer::unbound`]).
    pub fn policy(&self) -> Option<&Policy> {
        self.policy.as_ref()
    }
}

impl Drop for NodeBuffer {
    fn drop(&mut self) {
        // SAFETY: the mapping was created by `unbound` with this length and
        // nothing borrows it any more.
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.map_len);
        }
    }
}

impl fmt::Debug for NodeBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NodeBuffer")
            .field("addr", &self.ptr)
            .field("len", &self.len)
            .field("pages", &self.page_count())
            .field("policy", &self.policy.as_ref().map(|p| p.to_string()))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::act::log;
    use crate::act::mempolicy::get_mempolicy_at;
    use crate::act::testutil::log_lock;

    fn node0() -> NodeSet {
        NodeSet::parse_list("0").expect("set")
    }

    #[test]
    fn bound_pages_land_on_node_0() {
        for mode in [Mode::Bind, Mode::Interleave, Mode::Preferred] {
            let mut buf = NodeBuffer::new(256 * 1024, mode, &node0()).expect("buffer");
            assert_eq!(buf.page_status().expect("query"), vec![PageStatus::Error(libc::ENOENT); buf.page_count()]);
            buf.touch();
            assert_eq!(buf.page_status().expect("query"), vec![PageStatus::Node(0); buf.page_count()], "{mode}");
            let p = get_mempolicy_at(buf.as_ptr() as usize).expect("policy");
            assert_eq!(p, Policy::new(mode, node0()));
            assert_eq!(buf.policy(), Some(&p));
        }
    }

    #[test]
    fn shorthands() {
        assert_eq!(NodeBuffer::bind(1, &node0()).expect("bind").policy().map(|p| p.mode), Some(Mode::Bind));
        let b = NodeBuffer::interleave(1, &node0()).expect("interleave");
        assert_eq!(b.policy().map(|p| p.mode), Some(Mode::Interleave));
        let b = NodeBuffer::preferred(1, 0).expect("preferred");
        assert_eq!(b.policy().map(|p| p.nodes.clone()), Some(node0()));
        let b = NodeBuffer::with_flags(1, Mode::Bind, ModeFlags { static_nodes: true, ..ModeFlags::NONE }, &node0())
            .expect("static");
        assert!(get_mempolicy_at(b.as_ptr() as usize).expect("get").flags.static_nodes);
    }

    #[test]
    fn lengths_round_up_to_pages() {
        let page = NodeBuffer::page_size();
        let mut b = NodeBuffer::unbound(page + 1).expect("buffer");
        assert_eq!((b.len(), b.page_count(), b.is_empty()), (page + 1, 2, false));
        let addrs = b.page_addresses();
        assert_eq!(addrs, vec![b.as_ptr() as usize, b.as_ptr() as usize + page]);
        assert_eq!(b.as_ptr() as usize % page, 0);
        b.as_mut_slice()[page] = 9;
        b.touch();
        assert_eq!(b.as_slice()[page], 9, "touch keeps contents");
        assert_eq!(b.as_slice().len(), page + 1);
        assert!(format!("{b:?}").contains("pages: 2"));
    }

    #[test]
    fn refusals() {
        let e = NodeBuffer::unbound(0).expect_err("empty");
        assert!(matches!(e, ActError::Invalid { call: "mmap", .. }), "{e}");
        let e = NodeBuffer::unbound(usize::MAX).expect_err("huge");
        assert!(matches!(e, ActError::Invalid { .. }), "{e}");
        let e = NodeBuffer::unbound(usize::MAX / 2).expect_err("too big to map");
        assert!(e.is_errno(libc::ENOMEM), "{e}");
        let e = NodeBuffer::bind(4096, &NodeSet::new()).expect_err("bind to nothing");
        assert!(e.is_errno(libc::EINVAL), "{e}");
        let e = NodeBuffer::bind(4096, &NodeSet::parse_list("63").expect("set")).expect_err("missing node");
        assert!(e.is_errno(libc::EINVAL), "{e}");
    }

    #[test]
    fn buffers_move_between_threads() {
        let mut buf = NodeBuffer::bind(4096, &node0()).expect("buffer");
        buf.as_mut_slice()[0] = 1;
        let buf = std::thread::spawn(move || {
            buf.touch();
            buf
        })
        .join()
        .expect("join");
        assert_eq!(buf.as_slice()[0], 1);
    }

    #[test]
    fn only_the_bind_is_logged() {
        let _g = log_lock();
        let _ = log::take();
        let mut a = NodeBuffer::unbound(4096).expect("unbound");
        a.touch();
        let b = NodeBuffer::bind(4096, &node0()).expect("bind");
        let _ = b.page_status().expect("query");
        let me = Pid::this_thread().as_raw();
        let mine: Vec<_> = log::take().into_iter().filter(|r| r.tid == me).collect();
        assert_eq!(mine.len(), 1, "{mine:?}");
        assert_eq!(mine[0].call, "mbind");
        assert_eq!(mine[0].target, format!("self addr {:p} len 4096", b.as_ptr()));
        assert_eq!(mine[0].detail, "mode bind nodes 0");
    }
}
