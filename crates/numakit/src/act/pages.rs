//! Where pages are, and moving them: [`migrate_pages`], [`move_pages`],
//! [`query_pages`].
//!
//! Both calls act on a whole process ([`Pid::SELF`] is the caller's). The
//! caller needs the right to ptrace the target (`EPERM` otherwise); moving
//! pages that other processes map too needs `CAP_SYS_NICE`.

use std::ffi::c_void;
use std::fmt;

use libc::{c_int, c_long, c_ulong};

use super::mask::KernelMask;
use super::mempolicy::{MPOL_MF_MOVE, MPOL_MF_MOVE_ALL};
use super::{errno_name, last_errno, log, ActError, Pid, Result};
use crate::sets::NodeSet;

/// How many pages one `move_pages` system call handles; longer lists are
/// split, so any number of pages works.
pub const MOVE_PAGES_CHUNK: usize = 16 * 1024;

/// Marks a status slot the kernel did not fill (it writes node ids, which
/// are non-negative, or negative errno values, which are small).
const NOT_REPORTED: c_int = c_int::MIN;

/// Where one page is, as `move_pages` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PageStatus {
    /// The page is on this node (after the move, when moving).
    Node(u32),
    /// The kernel's error for this page, as a positive errno:
    /// `ENOENT` (not present: never touched, or the shared zero page),
    /// `EFAULT` (nothing mapped there, or a special mapping),
    /// `EACCES` (mapped by several processes and not moved without
    /// `MPOL_MF_MOVE_ALL`), `EBUSY` (busy, e.g. under I/O or pinned),
    /// `ENOMEM` (no room on the target node), `EIO` (could not be written
    /// back), `EINVAL` (a page that cannot move), `E2BIG`, ...
    Error(i32),
    /// The kernel stopped before this page and said nothing about it (it
    /// does so when a batch of a move fails: those pages are not moved).
    NotReported,
}

impl PageStatus {
    fn from_raw(raw: c_int) -> PageStatus {
        if raw == NOT_REPORTED {
            PageStatus::NotReported
        } else if raw >= 0 {
            PageStatus::Node(raw as u32)
        } else {
            PageStatus::Error(-raw)
        }
    }

    /// The node, when the page is present.
    pub fn node(self) -> Option<u32> {
        match self {
            PageStatus::Node(n) => Some(n),
            _ => None,
        }
    }

    /// The errno, when the kernel reported an error for the page.
    pub fn errno(self) -> Option<i32> {
        match self {
            PageStatus::Error(e) => Some(e),
            _ => None,
        }
    }
}

impl fmt::Display for PageStatus {
    /// `node 3`, `ENOENT`, `not reported`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PageStatus::Node(n) => write!(f, "node {n}"),
            PageStatus::Error(e) => f.write_str(&errno_name(*e)),
            PageStatus::NotReported => f.write_str("not reported"),
        }
    }
}

/// Flags of [`move_pages`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct MoveFlags {
    /// `MPOL_MF_MOVE_ALL` instead of `MPOL_MF_MOVE`: also move pages other
    /// processes map (needs `CAP_SYS_NICE`, else the call fails with
    /// `EPERM`).
    pub move_all: bool,
}

impl MoveFlags {
    /// `MPOL_MF_MOVE`: move the pages only this process maps.
    pub const MOVE: MoveFlags = MoveFlags { move_all: false };
    /// `MPOL_MF_MOVE_ALL`.
    pub const MOVE_ALL: MoveFlags = MoveFlags { move_all: true };

    /// The kernel's bits.
    pub const fn bits(self) -> c_int {
        (if self.move_all { MPOL_MF_MOVE_ALL } else { MPOL_MF_MOVE }) as c_int
    }
}

/// Moves every page of process `pid` that is on a node of `from` to the
/// matching node of `to`
/// ([migrate_pages(2)](https://man7.org/linux/man-pages/man2/migrate_pages.2.html))
/// and records the change. Returns the number of pages that could not be
/// moved.
///
/// Nodes are matched by position (the n-th node of `from` goes to the n-th
/// node of `to`, wrapping as the kernel's `node_remap` does); pages already
/// on a node in both sets stay. Errors: `EINVAL` when `to` holds no node the
/// caller may use, `EPERM` when the caller may not ptrace `pid` or `to` is
/// outside `pid`'s allowed nodes without `CAP_SYS_NICE`, `ESRCH` for an
/// unknown `pid`.
///
/// ```
/// use numakit::act::{migrate_pages, Pid};
/// use numakit::sets::NodeSet;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let node0 = NodeSet::parse_list("0")?;
/// assert_eq!(migrate_pages(Pid::SELF, &node0, &node0)?, 0); // nothing to move
/// # Ok(()) }
/// ```
pub fn migrate_pages(pid: Pid, from: &NodeSet, to: &NodeSet) -> Result<u64> {
    // One maxnode describes both masks: give them the same length.
    let words = from.to_words(0).len().max(to.to_words(0).len()).max(1);
    let from_mask = KernelMask::from_words(&from.to_words(words), words * 64);
    let to_mask = KernelMask::from_words(&to.to_words(words), words * 64);
    // SAFETY: the kernel reads `maxnode - 1` bits from each mask; both hold
    // that many and outlive the call.
    let r = unsafe {
        libc::syscall(
            libc::SYS_migrate_pages,
            pid.as_raw() as c_long,
            from_mask.maxnode(),
            from_mask.as_ptr(),
            to_mask.as_ptr(),
        )
    };
    if r < 0 {
        return Err(ActError::sys("migrate_pages", last_errno()));
    }
    log::record(&log::Change {
        call: "migrate_pages",
        target: pid.process_target(),
        detail: format!("from nodes {from} to nodes {to}: {r} pages not moved"),
    });
    Ok(r as u64)
}

/// Moves the pages at `pages` (any address inside each page) of process
/// `pid` to `nodes[i]`, or, with `nodes` `None`, only reports where they
/// are ([move_pages(2)](https://man7.org/linux/man-pages/man2/move_pages.2.html)).
/// Returns one [`PageStatus`] per address.
///
/// A move is recorded in the change log (once per call, summing up the
/// outcome); a query is not. Long lists are split into calls of
/// [`MOVE_PAGES_CHUNK`] pages; if one fails, the moves already done are
/// recorded and the error returned. The whole call fails (rather than one
/// page) for a target node that does not exist or has no memory (`ENODEV`),
/// one the target may not use (`EACCES`), `EPERM` (no right over `pid`, or
/// [`MoveFlags::move_all`] without `CAP_SYS_NICE`) and `ESRCH`.
///
/// ```
/// use numakit::act::{move_pages, MoveFlags, NodeBuffer, PageStatus, Pid};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let mut buf = NodeBuffer::unbound(4 * 4096)?;
/// buf.touch();
/// let pages = buf.page_addresses();
/// let status = move_pages(Pid::SELF, &pages, Some(&vec![0; pages.len()]), MoveFlags::MOVE)?;
/// assert!(status.iter().all(|s| *s == PageStatus::Node(0)));
/// # Ok(()) }
/// ```
pub fn move_pages(pid: Pid, pages: &[usize], nodes: Option<&[u32]>, flags: MoveFlags) -> Result<Vec<PageStatus>> {
    move_pages_in_chunks(pid, pages, nodes, flags, MOVE_PAGES_CHUNK)
}

/// Where the pages at `pages` of process `pid` are: [`move_pages`] without
/// target nodes
/// ([move_pages(2)](https://man7.org/linux/man-pages/man2/move_pages.2.html)
/// with `nodes` null). Nothing changes and nothing is recorded; an untouched page
/// is [`PageStatus::Error`]`(ENOENT)` (it is not faulted in), an address
/// with nothing mapped `EFAULT`.
///
/// ```
/// use numakit::act::{query_pages, NodeBuffer, PageStatus, Pid};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let mut buf = NodeBuffer::unbound(2 * 4096)?;
/// let pages = buf.page_addresses();
/// assert_eq!(query_pages(Pid::SELF, &pages)?[0], PageStatus::Error(libc::ENOENT));
/// buf.touch();
/// assert_eq!(query_pages(Pid::SELF, &pages)?[0], PageStatus::Node(0));
/// # Ok(()) }
/// ```
pub fn query_pages(pid: Pid, pages: &[usize]) -> Result<Vec<PageStatus>> {
    move_pages_in_chunks(pid, pages, None, MoveFlags::MOVE, MOVE_PAGES_CHUNK)
}

/// A range of a process's address space to move pages of: `[start, end)`
/// in steps of `page_bytes` (the mapping's page size).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageRange {
    /// First address.
    pub start: u64,
    /// One past the last address.
    pub end: u64,
    /// The mapping's page size, bytes.
    pub page_bytes: u64,
}

/// What [`move_ranges`] did, page by page as the kernel answered.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MoveTally {
    /// Pages now on the target node.
    pub moved: u64,
    /// Pages asked to move that did not, by why (`left on node 2`,
    /// `EBUSY`, `not reported (the batch stopped)`).
    pub failed: std::collections::BTreeMap<String, u64>,
}

impl MoveTally {
    /// Pages that did not move.
    pub fn failed_total(&self) -> u64 {
        self.failed.values().sum()
    }
}

/// Addresses queried (and moved) per batch by [`move_ranges`].
pub const MOVE_BATCH_PAGES: usize = 4096;

/// Moves the pages of `pid` found in `ranges` on a node `pick` selects to
/// node `to`, at most `limit` of them, in batches of [`MOVE_BATCH_PAGES`]:
/// each batch is queried first (`move_pages` without nodes) and only the
/// pages picked are moved. Tallies the kernel's per-page answers into
/// `tally` (kept up to date when an error stops the walk).
///
/// The one page-moving routine of numakit (`numakit migrate --to NODE`
/// and the daemon's partial migrations). The caller reads the ranges
/// (`/proc/PID/maps`); this function only makes the calls.
pub fn move_ranges(
    pid: Pid,
    ranges: &[PageRange],
    pick: impl Fn(u32) -> bool,
    to: u32,
    limit: u64,
    flags: MoveFlags,
    tally: &mut MoveTally,
) -> Result<()> {
    let mut left = limit;
    for r in ranges {
        let step = r.page_bytes.max(1);
        let mut addr = r.start;
        while addr < r.end && left > 0 {
            let n = ((r.end - addr).div_ceil(step)).min(MOVE_BATCH_PAGES as u64);
            let addrs: Vec<usize> = (0..n).map(|i| (addr + i * step) as usize).collect();
            addr += n * step;
            let status = query_pages(pid, &addrs)?;
            let todo: Vec<usize> = addrs
                .iter()
                .zip(&status)
                .filter(|(_, s)| matches!(s, PageStatus::Node(n) if *n != to && pick(*n)))
                .map(|(a, _)| *a)
                .take(usize::try_from(left).unwrap_or(usize::MAX))
                .collect();
            if todo.is_empty() {
                continue;
            }
            left -= todo.len() as u64;
            let targets = vec![to; todo.len()];
            for s in move_pages(pid, &todo, Some(&targets), flags)? {
                let why = match s {
                    PageStatus::Node(n) if n == to => {
                        tally.moved += 1;
                        continue;
                    }
                    PageStatus::Node(n) => format!("left on node {n}"),
                    PageStatus::Error(errno) => errno_name(errno),
                    PageStatus::NotReported => "not reported (the batch stopped)".into(),
                };
                *tally.failed.entry(why).or_default() += 1;
            }
        }
        if left == 0 {
            break;
        }
    }
    Ok(())
}

fn move_pages_in_chunks(
    pid: Pid,
    pages: &[usize],
    nodes: Option<&[u32]>,
    flags: MoveFlags,
    chunk: usize,
) -> Result<Vec<PageStatus>> {
    let targets: Option<Vec<c_int>> = match nodes {
        None => None,
        Some(n) if n.len() != pages.len() => {
            return Err(ActError::Invalid {
                call: "move_pages",
                why: format!("{} target nodes for {} pages", n.len(), pages.len()),
            })
        }
        Some(n) => Some(
            n.iter()
                .map(|&id| c_int::try_from(id))
                .collect::<std::result::Result<_, _>>()
                .map_err(|_| ActError::Invalid { call: "move_pages", why: "a node id above i32::MAX".to_string() })?,
        ),
    };
    let chunk = chunk.max(1);
    let mut out: Vec<PageStatus> = Vec::with_capacity(pages.len());
    for (i, addrs) in pages.chunks(chunk).enumerate() {
        let ptrs: Vec<*mut c_void> = addrs.iter().map(|&a| a as *mut c_void).collect();
        let mut status: Vec<c_int> = vec![NOT_REPORTED; addrs.len()];
        let nodes_ptr = match &targets {
            Some(t) => t[i * chunk..i * chunk + addrs.len()].as_ptr(),
            None => std::ptr::null(),
        };
        // SAFETY: `ptrs`, the target slice (same length) and `status` (same
        // length, written by the kernel) all hold `count` elements and
        // outlive the call. The kernel only looks the addresses up in the
        // target's page tables and migrates pages without changing their
        // contents or addresses.
        let r = unsafe {
            libc::syscall(
                libc::SYS_move_pages,
                pid.as_raw() as c_long,
                addrs.len() as c_ulong,
                ptrs.as_ptr(),
                nodes_ptr,
                status.as_mut_ptr(),
                flags.bits() as c_long,
            )
        };
        if r < 0 {
            let errno = last_errno();
            if let Some(t) = &targets {
                if !out.is_empty() {
                    record_move(pid, &out, &t[..out.len()], Some(errno));
                }
            }
            return Err(ActError::sys("move_pages", errno));
        }
        out.extend(status.into_iter().map(PageStatus::from_raw));
    }
    if let Some(t) = &targets {
        if !pages.is_empty() {
            record_move(pid, &out, t, None);
        }
    }
    Ok(out)
}

/// Records a (possibly partial) `move_pages` move.
fn record_move(pid: Pid, status: &[PageStatus], targets: &[c_int], stopped: Option<i32>) {
    let on_target = status.iter().zip(targets).filter(|(s, &t)| s.node() == u32::try_from(t).ok()).count();
    let to: NodeSet = targets.iter().filter_map(|&t| u32::try_from(t).ok()).collect();
    let mut detail = format!("{} pages to nodes {to}: {on_target} on their target node", status.len());
    if on_target < status.len() {
        detail.push_str(&format!(", {} not", status.len() - on_target));
    }
    if let Some(e) = stopped {
        detail.push_str(&format!(" (then stopped: {})", errno_name(e)));
    }
    log::record(&log::Change { call: "move_pages", target: pid.process_target(), detail });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::act::alloc::NodeBuffer;
    use crate::act::testutil::log_lock;

    fn node0() -> NodeSet {
        NodeSet::parse_list("0").expect("set")
    }

    #[test]
    fn status_from_raw() {
        assert_eq!(PageStatus::from_raw(3), PageStatus::Node(3));
        assert_eq!(PageStatus::from_raw(-libc::ENOENT), PageStatus::Error(libc::ENOENT));
        assert_eq!(PageStatus::from_raw(NOT_REPORTED), PageStatus::NotReported);
        assert_eq!(PageStatus::Error(libc::ENOENT).to_string(), "ENOENT");
        assert_eq!(PageStatus::Node(2).to_string(), "node 2");
        assert_eq!(PageStatus::Node(2).node(), Some(2));
        assert_eq!(PageStatus::Error(libc::EFAULT).errno(), Some(libc::EFAULT));
        assert_eq!(MoveFlags::MOVE.bits(), 2);
        assert_eq!(MoveFlags::MOVE_ALL.bits(), 4);
    }

    #[test]
    fn migrate_self_from_0_to_0_moves_nothing() {
        assert_eq!(migrate_pages(Pid::SELF, &node0(), &node0()).expect("migrate"), 0);
        // A source node without pages (63 does not exist here) moves nothing.
        let from = NodeSet::parse_list("0,63").expect("set");
        assert_eq!(migrate_pages(Pid::SELF, &from, &node0()).expect("migrate"), 0);
    }

    #[test]
    fn migrate_to_a_missing_node_is_refused() {
        let e = migrate_pages(Pid::SELF, &node0(), &NodeSet::parse_list("63").expect("set")).expect_err("node 63");
        assert!(e.is_errno(libc::EINVAL) || e.is_errno(libc::EPERM), "{e}");
        assert!(e.to_string().starts_with("migrate_pages: "), "{e}");
    }

    #[test]
    fn migrate_unknown_pid_is_esrch() {
        let e = migrate_pages(Pid(i32::MAX), &node0(), &node0()).expect_err("no such process");
        assert!(e.is_errno(libc::ESRCH), "{e}");
    }

    #[test]
    fn untouched_pages_are_enoent_touched_are_on_node_0() {
        let mut buf = NodeBuffer::unbound(8 * 4096).expect("buffer");
        let pages = buf.page_addresses();
        let status = query_pages(Pid::SELF, &pages).expect("query");
        assert_eq!(status, vec![PageStatus::Error(libc::ENOENT); pages.len()]);
        buf.touch();
        let status = query_pages(Pid::SELF, &pages).expect("query");
        assert_eq!(status, vec![PageStatus::Node(0); pages.len()]);
    }

    #[test]
    fn move_ranges_moves_only_what_is_picked_up_to_the_limit() {
        let mut buf = NodeBuffer::unbound(8 * buf_page()).expect("buffer");
        buf.touch();
        let pages = buf.page_addresses();
        let range =
            PageRange { start: pages[0] as u64, end: (pages[7] + buf_page()) as u64, page_bytes: buf_page() as u64 };
        // Nothing picked, or no pages allowed: no page is asked to move, so
        // neither a missing target node nor a missing process is an error.
        let mut t = MoveTally::default();
        move_ranges(Pid::SELF, &[range], |_| false, 63, u64::MAX, MoveFlags::MOVE, &mut t).expect("none picked");
        move_ranges(Pid(i32::MAX), &[range], |_| true, 63, 0, MoveFlags::MOVE, &mut t).expect("limit 0");
        assert_eq!(t, MoveTally::default());
        // Pages already on the target are never moved.
        move_ranges(Pid::SELF, &[range], |_| true, 0, u64::MAX, MoveFlags::MOVE, &mut t).expect("on 0 already");
        assert_eq!(t, MoveTally::default());
        // Picked pages go to the kernel: a node without memory is refused.
        let e = move_ranges(Pid::SELF, &[range], |n| n == 0, 63, 3, MoveFlags::MOVE, &mut t).expect_err("node 63");
        assert!(e.is_errno(libc::ENODEV), "{e}");
        assert_eq!(t.moved + t.failed_total(), 0);
        let e = move_ranges(Pid(i32::MAX), &[range], |_| true, 63, 1, MoveFlags::MOVE, &mut t).expect_err("pid");
        assert!(e.is_errno(libc::ESRCH), "{e}");
    }

    #[test]
    fn unmapped_addresses_are_efault() {
        let buf = NodeBuffer::unbound(4 * 4096).expect("buffer");
        let status = query_pages(Pid::SELF, &[8, buf.as_ptr() as usize]).expect("query");
        assert_eq!(status, vec![PageStatus::Error(libc::EFAULT), PageStatus::Error(libc::ENOENT)]);
    }

    #[test]
    fn lists_longer_than_a_chunk() {
        // 20000 untouched pages: more than one kernel call, no memory used.
        let buf = NodeBuffer::unbound(20_000 * buf_page()).expect("buffer");
        let pages = buf.page_addresses();
        assert!(pages.len() > MOVE_PAGES_CHUNK);
        let status = query_pages(Pid::SELF, &pages).expect("query");
        assert_eq!(status.len(), pages.len());
        assert!(status.iter().all(|s| *s == PageStatus::Error(libc::ENOENT)));
    }

    fn buf_page() -> usize {
        NodeBuffer::page_size()
    }

    #[test]
    fn chunk_boundaries_keep_order_and_targets() {
        let mut buf = NodeBuffer::unbound(10 * buf_page()).expect("buffer");
        buf.touch();
        let mut pages = buf.page_addresses();
        pages.insert(4, 8); // an unmapped address in the middle
        let targets = vec![0u32; pages.len()];
        let status = move_pages_in_chunks(Pid::SELF, &pages, Some(&targets), MoveFlags::MOVE, 3).expect("move");
        let mut want = vec![PageStatus::Node(0); pages.len()];
        want[4] = PageStatus::Error(libc::EFAULT);
        assert_eq!(status, want);
        let status = move_pages_in_chunks(Pid::SELF, &pages, None, MoveFlags::MOVE, 1).expect("query");
        assert_eq!(status, want);
    }

    #[test]
    fn move_to_a_missing_node_fails_the_call() {
        let mut buf = NodeBuffer::unbound(2 * buf_page()).expect("buffer");
        buf.touch();
        let pages = buf.page_addresses();
        let e = move_pages(Pid::SELF, &pages, Some(&[0, 63]), MoveFlags::MOVE).expect_err("node 63");
        assert!(e.is_errno(libc::ENODEV), "{e}");
        assert!(e.to_string().starts_with("move_pages: "), "{e}");
    }

    #[test]
    fn mismatched_lengths_are_invalid() {
        let e = move_pages(Pid::SELF, &[0, 4096], Some(&[0]), MoveFlags::MOVE).expect_err("lengths");
        assert!(matches!(e, ActError::Invalid { call: "move_pages", .. }), "{e}");
        assert_eq!(move_pages(Pid::SELF, &[], Some(&[]), MoveFlags::MOVE).expect("empty"), vec![]);
    }

    #[test]
    fn move_all_needs_cap_sys_nice() {
        let mut buf = NodeBuffer::unbound(buf_page()).expect("buffer");
        buf.touch();
        match move_pages(Pid::SELF, &buf.page_addresses(), Some(&[0]), MoveFlags::MOVE_ALL) {
            Ok(s) => assert_eq!(s, vec![PageStatus::Node(0)]),
            Err(e) => assert!(e.is_errno(libc::EPERM), "{e}"),
        }
    }

    #[test]
    fn moves_are_logged_queries_are_not() {
        let _g = log_lock();
        let _ = log::take();
        let mut buf = NodeBuffer::unbound(3 * buf_page()).expect("buffer");
        buf.touch();
        let pages = buf.page_addresses();
        let _ = query_pages(Pid::SELF, &pages).expect("query");
        let _ = move_pages(Pid::SELF, &pages, None, MoveFlags::MOVE).expect("query via move_pages");
        let _ = move_pages(Pid::SELF, &pages, Some(&[0, 0, 0]), MoveFlags::MOVE).expect("move");
        let _ = migrate_pages(Pid::SELF, &node0(), &node0()).expect("migrate");
        let me = Pid::this_thread().as_raw();
        let mine: Vec<String> = log::take().into_iter().filter(|r| r.tid == me).map(|r| r.to_string()).collect();
        assert_eq!(
            mine,
            vec![
                "numakit: move_pages self: 3 pages to nodes 0: 3 on their target node".to_string(),
                "numakit: migrate_pages self: from nodes 0 to nodes 0: 0 pages not moved".to_string(),
            ]
        );
    }
}
