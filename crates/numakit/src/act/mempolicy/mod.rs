//! NUMA memory policy: [`set_mempolicy`], [`get_mempolicy`], [`mbind`].
//!
//! A memory policy says on which nodes the kernel allocates the pages a
//! thread (or an address range) faults in. The thread policy
//! ([`set_mempolicy`]) is per thread and inherited by threads and processes
//! created afterwards; a range policy ([`mbind`]) belongs to the mapping and
//! takes precedence over the thread policy for it. See
//! [set_mempolicy(2)](https://man7.org/linux/man-pages/man2/set_mempolicy.2.html)
//! and the kernel's `Documentation/admin-guide/mm/numa_memory_policy.rst`.
//!
//! Node masks are passed with libnuma's convention: `maxnode` is the mask's
//! number of bits plus one, because the kernel drops one from it
//! (`get_nodes()` begins with `--maxnode`). Masks are sized from the set, so
//! node ids above 63 (or 1023) reach the kernel intact; the kernel refuses
//! (`EINVAL`) ids at or above its `MAX_NUMNODES`.
//!
//! The types of a policy and their text forms have a room of their own,
//! `policy` (re-exported here); this file holds the system calls.

mod policy;
#[cfg(test)]
mod tests;

use std::ffi::c_void;
use std::ptr;

use libc::{c_int, c_long, c_ulong};

use super::mask::KernelMask;
use super::{last_errno, log, ActError, Result};
use crate::sets::NodeSet;
use policy::MODE_FLAG_BITS;
pub use policy::{MbindFlags, Mode, ModeFlags, ParseModeError, Policy};
pub(crate) use policy::{MPOL_MF_MOVE, MPOL_MF_MOVE_ALL};

/// `get_mempolicy` flags.
const MPOL_F_NODE: c_ulong = 1 << 0;
const MPOL_F_ADDR: c_ulong = 1 << 1;
const MPOL_F_MEMS_ALLOWED: c_ulong = 1 << 2;

/// First size of the mask `get_mempolicy` fills. The kernel refuses
/// (`EINVAL`) a mask shorter than its `nr_node_ids`; 1024 bits covers the
/// largest x86 `MAX_NUMNODES`, and the wrappers double it on `EINVAL`.
const GET_FIRST_BITS: usize = 1024;
/// Largest mask tried: the kernel refuses masks longer than a page (4 KiB
/// pages: 32768 bits; 64 KiB pages: 524288 bits).
const GET_MAX_BITS: usize = 1 << 19;

/// How change records describe a policy: `mode bind nodes 0-1 flags static`.
fn describe(mode: Mode, flags: ModeFlags, nodes: &NodeSet) -> String {
    let mut d = format!("mode {mode}");
    if !nodes.is_empty() {
        d.push_str(&format!(" nodes {nodes}"));
    }
    if !flags.is_empty() {
        d.push_str(&format!(" flags {flags}"));
    }
    d
}

/// Turns an `EINVAL` the kernel gives for a mode or flag it does not know
/// into [`ActError::Unsupported`], found out with [`kernel_supports`].
fn explain(call: &'static str, errno: i32, mode: Mode, flags: ModeFlags) -> ActError {
    if errno == libc::EINVAL {
        if flags.numa_balancing {
            let flag_only = ModeFlags { numa_balancing: true, ..ModeFlags::NONE };
            if !kernel_supports(Mode::Bind, flag_only) {
                return ActError::Unsupported {
                    what: "MPOL_F_NUMA_BALANCING".to_string(),
                    why: "this kernel does not know the flag (it came with Linux 5.12)".to_string(),
                };
            }
            if !kernel_supports(mode, flag_only) {
                return ActError::Unsupported {
                    what: format!("MPOL_F_NUMA_BALANCING with mode {mode}"),
                    why: "the kernel accepts the flag only with bind (and, on recent kernels, preferred-many)"
                        .to_string(),
                };
            }
        }
        if !kernel_supports(mode, ModeFlags::NONE) {
            return ActError::Unsupported {
                what: format!("memory policy mode {mode} ({})", mode.constant_name()),
                why: format!("this kernel does not know it (it came with Linux {})", mode.since()),
            };
        }
    }
    ActError::sys(call, errno)
}

/// Sets the calling thread's memory policy
/// ([set_mempolicy(2)](https://man7.org/linux/man-pages/man2/set_mempolicy.2.html)).
///
/// It applies to pages the thread faults in afterwards (pages already
/// there stay), is inherited by threads and processes it creates, and is
/// recorded in the [change log](super::log). [`Mode::Default`] with an
/// empty set removes the thread's policy.
///
/// Errors: `EINVAL` when the set does not suit the mode (empty for
/// [`Mode::Bind`], non-empty for [`Mode::Default`]) or holds no node this
/// thread may use; a mode or flag the kernel is too old for is reported as
/// [`ActError::Unsupported`].
///
/// ```
/// use numakit::act::{get_mempolicy, set_mempolicy, Mode, ModeFlags};
/// use numakit::sets::NodeSet;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// set_mempolicy(Mode::Bind, ModeFlags::default(), &NodeSet::parse_list("0")?)?;
/// assert_eq!(get_mempolicy()?.mode, Mode::Bind);
/// set_mempolicy(Mode::Default, ModeFlags::default(), &NodeSet::new())?;
/// assert_eq!(get_mempolicy()?.mode, Mode::Default);
/// # Ok(()) }
/// ```
pub fn set_mempolicy(mode: Mode, flags: ModeFlags, nodes: &NodeSet) -> Result<()> {
    let mask = KernelMask::from_words(&nodes.to_words(0), 0);
    let raw = mode.as_raw() | flags.bits();
    // SAFETY: the kernel reads `maxnode - 1` bits from the mask, which holds
    // exactly that many and outlives the call.
    let r = unsafe { libc::syscall(libc::SYS_set_mempolicy, raw as c_long, mask.as_ptr(), mask.maxnode()) };
    if r != 0 {
        return Err(explain("set_mempolicy", last_errno(), mode, flags));
    }
    log::record(&log::Change {
        call: "set_mempolicy",
        target: "self".to_string(),
        detail: describe(mode, flags, nodes),
    });
    Ok(())
}

/// One `get_mempolicy` call with a mask that grows on `EINVAL` until the
/// kernel's `nr_node_ids` fits. Returns the int it wrote and the mask.
fn get_raw(addr: usize, flags: c_ulong) -> Result<(c_int, NodeSet)> {
    let mut bits = GET_FIRST_BITS;
    loop {
        let mut mask = KernelMask::zeroed(bits);
        let mut out: c_int = 0;
        // SAFETY: `out` is a valid int; the kernel writes at most
        // `maxnode - 1` bits (rounded up to 64, and `bits` is a multiple of
        // 64) into the mask, which holds that many; both outlive the call.
        let r = unsafe {
            libc::syscall(
                libc::SYS_get_mempolicy,
                &mut out as *mut c_int,
                mask.as_mut_ptr(),
                mask.maxnode(),
                addr as c_ulong,
                flags,
            )
        };
        if r == 0 {
            return Ok((out, NodeSet::from_words(&mask.to_words())));
        }
        let errno = last_errno();
        if errno == libc::EINVAL && bits < GET_MAX_BITS {
            bits *= 2;
            continue;
        }
        return Err(ActError::sys("get_mempolicy", errno));
    }
}

fn policy_from_raw(raw: c_int, nodes: NodeSet) -> Result<Policy> {
    let mode = Mode::from_raw(raw & !MODE_FLAG_BITS).ok_or_else(|| ActError::Unsupported {
        what: format!("memory policy mode {}", raw & !MODE_FLAG_BITS),
        why: "the kernel reported a mode numakit does not know".to_string(),
    })?;
    Ok(Policy { mode, flags: ModeFlags::from_bits(raw), nodes })
}

/// The calling thread's memory policy
/// ([get_mempolicy(2)](https://man7.org/linux/man-pages/man2/get_mempolicy.2.html)
/// with no flag). A thread without a policy of its own reports
/// [`Mode::Default`] and no nodes.
///
/// ```
/// use numakit::act::{get_mempolicy, Mode};
/// # fn main() -> Result<(), numakit::act::ActError> {
/// let p = get_mempolicy()?;
/// assert_eq!(p.mode, Mode::Default); // nothing set in this fresh process
/// assert!(p.nodes.is_empty());
/// # Ok(()) }
/// ```
pub fn get_mempolicy() -> Result<Policy> {
    let (raw, nodes) = get_raw(0, 0)?;
    policy_from_raw(raw, nodes)
}

/// The policy of the mapping that contains `addr`
/// ([get_mempolicy(2)](https://man7.org/linux/man-pages/man2/get_mempolicy.2.html)
/// with `MPOL_F_ADDR`): what [`mbind`] set there, or [`Mode::Default`] when
/// the range has none (the thread policy then applies). `EFAULT` when
/// nothing is mapped at `addr`.
///
/// ```
/// use numakit::act::{get_mempolicy_at, Mode, NodeBuffer};
/// use numakit::sets::NodeSet;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let buf = NodeBuffer::new(1 << 16, Mode::Interleave, &NodeSet::parse_list("0")?)?;
/// assert_eq!(get_mempolicy_at(buf.as_ptr() as usize)?.mode, Mode::Interleave);
/// # Ok(()) }
/// ```
pub fn get_mempolicy_at(addr: usize) -> Result<Policy> {
    let (raw, nodes) = get_raw(addr, MPOL_F_ADDR)?;
    policy_from_raw(raw, nodes)
}

/// The node that holds the page at `addr`
/// ([get_mempolicy(2)](https://man7.org/linux/man-pages/man2/get_mempolicy.2.html)
/// with `MPOL_F_NODE | MPOL_F_ADDR`).
///
/// The kernel looks the page up as a read access would, so an untouched
/// anonymous page is faulted in (as the shared zero page, whose node is
/// where that page lives). [`query_pages`](super::pages::query_pages)
/// answers for many pages without faulting anything in.
///
/// ```
/// use numakit::act::node_of_address;
/// # fn main() -> Result<(), numakit::act::ActError> {
/// let v = vec![1u8; 4096];
/// let node = node_of_address(v.as_ptr() as usize)?;
/// assert_eq!(node, 0); // the only node of a single-node machine
/// # Ok(()) }
/// ```
pub fn node_of_address(addr: usize) -> Result<u32> {
    let mut node: c_int = -1;
    // SAFETY: `node` is a valid int that outlives the call; no mask is
    // passed (null, maxnode 0).
    let r = unsafe {
        libc::syscall(
            libc::SYS_get_mempolicy,
            &mut node as *mut c_int,
            ptr::null_mut::<c_ulong>(),
            0 as c_ulong,
            addr as c_ulong,
            MPOL_F_NODE | MPOL_F_ADDR,
        )
    };
    if r != 0 {
        return Err(ActError::sys("get_mempolicy", last_errno()));
    }
    u32::try_from(node).map_err(|_| ActError::sys("get_mempolicy", libc::EINVAL))
}

/// The node the calling thread's next interleaved allocation goes to
/// ([get_mempolicy(2)](https://man7.org/linux/man-pages/man2/get_mempolicy.2.html)
/// with `MPOL_F_NODE` and no address), as `numactl --show` prints it.
/// `EINVAL` unless the thread's policy interleaves.
///
/// ```
/// use numakit::act::{interleave_next_node, set_mempolicy, Mode, ModeFlags};
/// use numakit::sets::NodeSet;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// std::thread::spawn(|| -> Result<(), numakit::act::ActError> {
///     set_mempolicy(Mode::Interleave, ModeFlags::NONE, &NodeSet::parse_list("0").unwrap())?;
///     assert_eq!(interleave_next_node()?, 0);
///     Ok(())
/// }).join().unwrap()?;
/// # Ok(()) }
/// ```
pub fn interleave_next_node() -> Result<u32> {
    let (node, _) = get_raw(0, MPOL_F_NODE)?;
    u32::try_from(node).map_err(|_| ActError::sys("get_mempolicy", libc::EINVAL))
}

/// The nodes the calling thread may allocate on, its cpuset's `mems`
/// ([get_mempolicy(2)](https://man7.org/linux/man-pages/man2/get_mempolicy.2.html)
/// with `MPOL_F_MEMS_ALLOWED`, Linux 2.6.24).
///
/// ```
/// # fn main() -> Result<(), numakit::act::ActError> {
/// assert!(numakit::act::mems_allowed()?.contains(0));
/// # Ok(()) }
/// ```
pub fn mems_allowed() -> Result<NodeSet> {
    get_raw(0, MPOL_F_MEMS_ALLOWED).map(|(_, nodes)| nodes)
}

/// Sets the memory policy of the address range `addr .. addr + len`
/// ([mbind(2)](https://man7.org/linux/man-pages/man2/mbind.2.html)) and
/// records the change.
///
/// `addr` must be page-aligned (else `EINVAL`); `len` is rounded up to
/// whole pages; every page of the range must be mapped (else `EFAULT`).
/// Without `mbind_flags` only future faults follow the policy;
/// [`MbindFlags::move_`] migrates pages already there, and
/// [`MbindFlags::strict`] makes pages that stay off the nodes an error
/// (`EIO`).
///
/// # Safety
///
/// The range must be memory the caller owns for the duration of its use of
/// the policy, e.g. a mapping it created. The call does not change the
/// contents of memory, but it changes where every user of the range gets
/// its pages: on someone else's mapping (an allocator's heap, another
/// thread's stack) it breaks that code's placement assumptions, and a
/// [`Mode::Bind`] to nodes without free memory makes faults there fail
/// (the faulting thread is killed). [`NodeBuffer`](super::NodeBuffer) is the
/// safe way to get bound memory.
///
/// ```
/// use numakit::act::{get_mempolicy_at, mbind, MbindFlags, Mode, ModeFlags, NodeBuffer};
/// use numakit::sets::NodeSet;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let mut buf = NodeBuffer::unbound(1 << 20)?;
/// let node0 = NodeSet::parse_list("0")?;
/// // SAFETY: the buffer is ours and outlives the policy's use.
/// unsafe {
///     mbind(buf.as_mut_ptr().cast(), buf.len(), Mode::Bind, ModeFlags::NONE, &node0, MbindFlags::NONE)?;
/// }
/// assert_eq!(get_mempolicy_at(buf.as_ptr() as usize)?.nodes, node0);
/// # Ok(()) }
/// ```
pub unsafe fn mbind(
    addr: *mut c_void,
    len: usize,
    mode: Mode,
    flags: ModeFlags,
    nodes: &NodeSet,
    mbind_flags: MbindFlags,
) -> Result<()> {
    let mask = KernelMask::from_words(&nodes.to_words(0), 0);
    let raw = mode.as_raw() | flags.bits();
    // SAFETY: the kernel reads `maxnode - 1` bits from the mask, which holds
    // that many and outlives the call; it only reads and changes the page
    // tables' policy of the range, whose ownership the caller vouches for.
    let r = unsafe {
        libc::syscall(
            libc::SYS_mbind,
            addr as c_ulong,
            len as c_ulong,
            raw as c_ulong,
            mask.as_ptr(),
            mask.maxnode(),
            mbind_flags.bits() as c_ulong,
        )
    };
    if r != 0 {
        return Err(explain("mbind", last_errno(), mode, flags));
    }
    let mut detail = describe(mode, flags, nodes);
    let moves: Vec<&str> =
        [(mbind_flags.strict, "strict"), (mbind_flags.move_, "move"), (mbind_flags.move_all, "move-all")]
            .iter()
            .filter(|(on, _)| *on)
            .map(|(_, n)| *n)
            .collect();
    if !moves.is_empty() {
        detail.push_str(&format!(" mbind-flags {}", moves.join("|")));
    }
    log::record(&log::Change { call: "mbind", target: format!("self addr {addr:p} len {len}"), detail });
    Ok(())
}

/// Whether the running kernel accepts `mode` with `flags`, found out
/// without changing anything: an
/// [mbind(2)](https://man7.org/linux/man-pages/man2/mbind.2.html) of zero
/// bytes, which the kernel answers after checking the mode and flags and
/// before touching any mapping. Used to turn `EINVAL` into [`ActError::Unsupported`]; callers
/// can use it to offer only what the kernel has.
///
/// ```
/// use numakit::act::{kernel_supports, Mode, ModeFlags};
/// assert!(kernel_supports(Mode::Bind, ModeFlags::NONE));
/// // static and relative exclude each other on every kernel
/// assert!(!kernel_supports(Mode::Bind, ModeFlags { static_nodes: true, relative_nodes: true, ..ModeFlags::NONE }));
/// ```
pub fn kernel_supports(mode: Mode, flags: ModeFlags) -> bool {
    let raw = mode.as_raw() | flags.bits();
    // SAFETY: a zero-length range at address 0 with no mask: the kernel
    // validates mode and flags and returns before reading memory or
    // changing any mapping.
    let r = unsafe {
        libc::syscall(
            libc::SYS_mbind,
            0 as c_ulong,
            0 as c_ulong,
            raw as c_ulong,
            ptr::null::<c_ulong>(),
            0 as c_ulong,
            0 as c_ulong,
        )
    };
    r == 0
}
