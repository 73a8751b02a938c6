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

use std::ffi::c_void;
use std::fmt;
use std::ptr;
use std::str::FromStr;

use libc::{c_int, c_long, c_ulong};

use super::mask::KernelMask;
use super::{last_errno, log, ActError, Result};
use crate::sets::NodeSet;

const MPOL_F_STATIC_NODES: i32 = 1 << 15;
const MPOL_F_RELATIVE_NODES: i32 = 1 << 14;
const MPOL_F_NUMA_BALANCING: i32 = 1 << 13;
const MODE_FLAG_BITS: i32 = MPOL_F_STATIC_NODES | MPOL_F_RELATIVE_NODES | MPOL_F_NUMA_BALANCING;

/// `get_mempolicy` flags.
const MPOL_F_NODE: c_ulong = 1 << 0;
const MPOL_F_ADDR: c_ulong = 1 << 1;
const MPOL_F_MEMS_ALLOWED: c_ulong = 1 << 2;

/// `mbind` flags (also used by `move_pages`).
pub(crate) const MPOL_MF_STRICT: u32 = 1 << 0;
pub(crate) const MPOL_MF_MOVE: u32 = 1 << 1;
pub(crate) const MPOL_MF_MOVE_ALL: u32 = 1 << 2;

/// First size of the mask `get_mempolicy` fills. The kernel refuses
/// (`EINVAL`) a mask shorter than its `nr_node_ids`; 1024 bits covers the
/// largest x86 `MAX_NUMNODES`, and the wrappers double it on `EINVAL`.
const GET_FIRST_BITS: usize = 1024;
/// Largest mask tried: the kernel refuses masks longer than a page (4 KiB
/// pages: 32768 bits; 64 KiB pages: 524288 bits).
const GET_MAX_BITS: usize = 1 << 19;

/// The memory policy mode: one of the kernel's `MPOL_*` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mode {
    /// `MPOL_DEFAULT` (0): no policy of its own; a thread falls back to the
    /// system default (local allocation), a range to the thread policy.
    Default,
    /// `MPOL_PREFERRED` (1): try one node first, then fall back. With an
    /// empty node set the kernel turns it into [`Mode::Local`].
    Preferred,
    /// `MPOL_BIND` (2): allocate only on the given nodes.
    Bind,
    /// `MPOL_INTERLEAVE` (3): spread pages round-robin over the nodes.
    Interleave,
    /// `MPOL_LOCAL` (4, Linux 3.8): allocate on the node of the CPU that
    /// faults the page in.
    Local,
    /// `MPOL_PREFERRED_MANY` (5, Linux 5.15): try a set of nodes first, then
    /// fall back.
    PreferredMany,
    /// `MPOL_WEIGHTED_INTERLEAVE` (6, Linux 6.9): interleave by the weights
    /// in `/sys/kernel/mm/mempolicy/weighted_interleave/`.
    WeightedInterleave,
}

impl Mode {
    /// Every mode, in kernel order.
    pub const ALL: [Mode; 7] = [
        Mode::Default,
        Mode::Preferred,
        Mode::Bind,
        Mode::Interleave,
        Mode::Local,
        Mode::PreferredMany,
        Mode::WeightedInterleave,
    ];

    /// The kernel's `MPOL_*` value.
    pub const fn as_raw(self) -> i32 {
        match self {
            Mode::Default => 0,
            Mode::Preferred => 1,
            Mode::Bind => 2,
            Mode::Interleave => 3,
            Mode::Local => 4,
            Mode::PreferredMany => 5,
            Mode::WeightedInterleave => 6,
        }
    }

    /// The mode of a kernel `MPOL_*` value (without mode flags), if known.
    pub const fn from_raw(raw: i32) -> Option<Mode> {
        Some(match raw {
            0 => Mode::Default,
            1 => Mode::Preferred,
            2 => Mode::Bind,
            3 => Mode::Interleave,
            4 => Mode::Local,
            5 => Mode::PreferredMany,
            6 => Mode::WeightedInterleave,
            _ => return None,
        })
    }

    /// The name `numactl --show` prints after `policy:` (`default`,
    /// `preferred`, `bind`, `interleave`, `local`, `preferred-many`,
    /// `weighted-interleave`). This is also the [`Display`](fmt::Display)
    /// form.
    pub const fn name(self) -> &'static str {
        match self {
            Mode::Default => "default",
            Mode::Preferred => "preferred",
            Mode::Bind => "bind",
            Mode::Interleave => "interleave",
            Mode::Local => "local",
            Mode::PreferredMany => "preferred-many",
            Mode::WeightedInterleave => "weighted-interleave",
        }
    }

    /// The name the kernel writes in `/proc/PID/numa_maps` and tmpfs `mpol=`
    /// (`prefer`, `prefer (many)`, `weighted interleave`, ...).
    pub const fn kernel_name(self) -> &'static str {
        match self {
            Mode::Default => "default",
            Mode::Preferred => "prefer",
            Mode::Bind => "bind",
            Mode::Interleave => "interleave",
            Mode::Local => "local",
            Mode::PreferredMany => "prefer (many)",
            Mode::WeightedInterleave => "weighted interleave",
        }
    }

    /// The C constant (`MPOL_BIND`).
    pub const fn constant_name(self) -> &'static str {
        match self {
            Mode::Default => "MPOL_DEFAULT",
            Mode::Preferred => "MPOL_PREFERRED",
            Mode::Bind => "MPOL_BIND",
            Mode::Interleave => "MPOL_INTERLEAVE",
            Mode::Local => "MPOL_LOCAL",
            Mode::PreferredMany => "MPOL_PREFERRED_MANY",
            Mode::WeightedInterleave => "MPOL_WEIGHTED_INTERLEAVE",
        }
    }

    /// The first Linux version that accepts this mode from user space.
    pub const fn since(self) -> &'static str {
        match self {
            Mode::Default | Mode::Preferred | Mode::Bind | Mode::Interleave => "2.6.7",
            Mode::Local => "3.8",
            Mode::PreferredMany => "5.15",
            Mode::WeightedInterleave => "6.9",
        }
    }

    /// Whether the kernel wants a non-empty node set with this mode
    /// ([`Mode::Default`] and [`Mode::Local`] want an empty one;
    /// [`Mode::Preferred`] takes one node, or none for local allocation).
    pub const fn needs_nodes(self) -> bool {
        matches!(self, Mode::Bind | Mode::Interleave | Mode::PreferredMany | Mode::WeightedInterleave)
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Error from parsing a [`Mode`] or a [`Policy`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid memory policy \"{input}\": {reason}")]
pub struct ParseModeError {
    /// The text given.
    pub input: String,
    /// Why it was refused.
    pub reason: String,
}

impl FromStr for Mode {
    type Err = ParseModeError;

    /// Accepts numactl's names ([`Mode::name`]), the kernel's
    /// ([`Mode::kernel_name`]), the C constants (`MPOL_BIND`), numactl's
    /// option spellings (`membind`, `localalloc`) and `_` for `-`, ignoring
    /// case and surrounding blanks.
    fn from_str(s: &str) -> std::result::Result<Self, ParseModeError> {
        let t = s.trim().to_ascii_lowercase();
        let t = t.strip_prefix("mpol_").unwrap_or(&t).replace('_', "-");
        let mode = match t.as_str() {
            "default" => Mode::Default,
            "preferred" | "prefer" | "prefered" => Mode::Preferred,
            "bind" | "membind" => Mode::Bind,
            "interleave" => Mode::Interleave,
            "local" | "localalloc" => Mode::Local,
            "preferred-many" | "prefer (many)" | "prefer-many" => Mode::PreferredMany,
            "weighted-interleave" | "weighted interleave" => Mode::WeightedInterleave,
            _ => {
                return Err(ParseModeError {
                    input: s.to_string(),
                    reason: "expected default, preferred, bind, interleave, local, preferred-many or \
                             weighted-interleave"
                        .to_string(),
                })
            }
        };
        Ok(mode)
    }
}

impl serde::Serialize for Mode {
    /// Serialized as its numactl name.
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for Mode {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// Optional mode flags, or'ed into the mode argument.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct ModeFlags {
    /// `MPOL_F_STATIC_NODES` (1 << 15, Linux 2.6.26): the node set is not
    /// remapped when the cpuset's nodes change.
    pub static_nodes: bool,
    /// `MPOL_F_RELATIVE_NODES` (1 << 14, Linux 2.6.26): node ids are
    /// relative to the cpuset's allowed nodes.
    pub relative_nodes: bool,
    /// `MPOL_F_NUMA_BALANCING` (1 << 13, Linux 5.12): let automatic NUMA
    /// balancing move pages among the bound nodes; only with
    /// [`Mode::Bind`] (and [`Mode::PreferredMany`] on recent kernels).
    pub numa_balancing: bool,
}

impl ModeFlags {
    /// No flag.
    pub const NONE: ModeFlags = ModeFlags { static_nodes: false, relative_nodes: false, numa_balancing: false };

    /// The bits to or into the mode.
    pub const fn bits(self) -> i32 {
        (if self.static_nodes { MPOL_F_STATIC_NODES } else { 0 })
            | (if self.relative_nodes { MPOL_F_RELATIVE_NODES } else { 0 })
            | (if self.numa_balancing { MPOL_F_NUMA_BALANCING } else { 0 })
    }

    /// The flags among `bits` (other bits are ignored).
    pub const fn from_bits(bits: i32) -> ModeFlags {
        ModeFlags {
            static_nodes: bits & MPOL_F_STATIC_NODES != 0,
            relative_nodes: bits & MPOL_F_RELATIVE_NODES != 0,
            numa_balancing: bits & MPOL_F_NUMA_BALANCING != 0,
        }
    }

    /// Whether no flag is set.
    pub const fn is_empty(self) -> bool {
        self.bits() == 0
    }
}

impl fmt::Display for ModeFlags {
    /// `static`, `relative`, `balancing`, joined with `|`; empty when none.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> =
            [(self.static_nodes, "static"), (self.relative_nodes, "relative"), (self.numa_balancing, "balancing")]
                .iter()
                .filter(|(on, _)| *on)
                .map(|(_, n)| *n)
                .collect();
        f.write_str(&names.join("|"))
    }
}

/// Flags of [`mbind`] (the last argument), about pages already there.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct MbindFlags {
    /// `MPOL_MF_STRICT`: fail with `EIO` if a page of the range is not on
    /// the policy's nodes (after moving, when a move flag is set).
    pub strict: bool,
    /// `MPOL_MF_MOVE`: migrate the range's pages that only this process
    /// maps to follow the policy.
    pub move_: bool,
    /// `MPOL_MF_MOVE_ALL`: migrate shared pages too (needs `CAP_SYS_NICE`,
    /// else `EPERM`).
    pub move_all: bool,
}

impl MbindFlags {
    /// No flag: set the policy for future faults only.
    pub const NONE: MbindFlags = MbindFlags { strict: false, move_: false, move_all: false };

    /// The kernel's bits.
    pub const fn bits(self) -> u32 {
        (if self.strict { MPOL_MF_STRICT } else { 0 })
            | (if self.move_ { MPOL_MF_MOVE } else { 0 })
            | (if self.move_all { MPOL_MF_MOVE_ALL } else { 0 })
    }
}

/// A memory policy: a mode, its flags and its nodes.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Policy {
    /// The mode.
    pub mode: Mode,
    /// The mode flags.
    pub flags: ModeFlags,
    /// The nodes (empty for [`Mode::Default`] and [`Mode::Local`]). With
    /// [`ModeFlags::static_nodes`] or [`ModeFlags::relative_nodes`] the
    /// kernel reports the set as given, else as it applies it (intersected
    /// with the allowed nodes; one node for [`Mode::Preferred`]).
    pub nodes: NodeSet,
}

impl Policy {
    /// A policy without flags.
    pub fn new(mode: Mode, nodes: NodeSet) -> Policy {
        Policy { mode, flags: ModeFlags::NONE, nodes }
    }

    /// Makes this the calling thread's policy ([`set_mempolicy`]).
    pub fn apply(&self) -> Result<()> {
        set_mempolicy(self.mode, self.flags, &self.nodes)
    }
}

impl fmt::Display for Policy {
    /// `MODE[=FLAGS][:NODES]`, the layout of tmpfs's `mpol=` option with
    /// numactl's mode names: `bind:0-1`, `interleave=static:0-3`, `local`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.mode.name())?;
        if !self.flags.is_empty() {
            write!(f, "={}", self.flags)?;
        }
        if !self.nodes.is_empty() {
            write!(f, ":{}", self.nodes)?;
        }
        Ok(())
    }
}

impl FromStr for Policy {
    type Err = ParseModeError;

    /// Parses the [`Display`](fmt::Display) form; flags may be joined with
    /// `|` or `,`.
    fn from_str(s: &str) -> std::result::Result<Self, ParseModeError> {
        let err = |reason: String| ParseModeError { input: s.to_string(), reason };
        let (head, nodes) = match s.trim().split_once(':') {
            Some((h, n)) => (h, NodeSet::parse_list(n).map_err(|e| err(e.to_string()))?),
            None => (s.trim(), NodeSet::new()),
        };
        let (mode, flag_text) = match head.split_once('=') {
            Some((m, fl)) => (m, Some(fl)),
            None => (head, None),
        };
        let mode: Mode = mode.parse().map_err(|e: ParseModeError| err(e.reason))?;
        let mut flags = ModeFlags::NONE;
        for name in flag_text.into_iter().flat_map(|t| t.split(['|', ','])) {
            match name.trim() {
                "static" => flags.static_nodes = true,
                "relative" => flags.relative_nodes = true,
                "balancing" => flags.numa_balancing = true,
                other => return Err(err(format!("unknown mode flag \"{other}\" (static, relative, balancing)"))),
            }
        }
        Ok(Policy { mode, flags, nodes })
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::act::alloc::NodeBuffer;
    use crate::act::pages::{query_pages, PageStatus};
    use crate::act::testutil::{in_fresh_thread, log_lock};
    use crate::act::Pid;

    fn node0() -> NodeSet {
        NodeSet::parse_list("0").expect("set")
    }

    #[test]
    fn raw_values_match_the_kernel() {
        let raws: Vec<i32> = Mode::ALL.iter().map(|m| m.as_raw()).collect();
        assert_eq!(raws, vec![0, 1, 2, 3, 4, 5, 6]);
        assert_eq!(
            raws[..5],
            [libc::MPOL_DEFAULT, libc::MPOL_PREFERRED, libc::MPOL_BIND, libc::MPOL_INTERLEAVE, libc::MPOL_LOCAL]
        );
        for m in Mode::ALL {
            assert_eq!(Mode::from_raw(m.as_raw()), Some(m));
        }
        assert_eq!(Mode::from_raw(7), None);
        assert_eq!(ModeFlags { static_nodes: true, ..ModeFlags::NONE }.bits(), libc::MPOL_F_STATIC_NODES);
        assert_eq!(ModeFlags { relative_nodes: true, ..ModeFlags::NONE }.bits(), libc::MPOL_F_RELATIVE_NODES);
        assert_eq!(ModeFlags { numa_balancing: true, ..ModeFlags::NONE }.bits(), libc::MPOL_F_NUMA_BALANCING);
        let all = ModeFlags { static_nodes: true, relative_nodes: true, numa_balancing: true };
        assert_eq!(ModeFlags::from_bits(all.bits() | 2), all);
        assert_eq!(MbindFlags { strict: true, move_: true, move_all: true }.bits(), 7);
    }

    #[test]
    fn names_parse_and_print() {
        for m in Mode::ALL {
            assert_eq!(m.name().parse::<Mode>(), Ok(m));
            assert_eq!(m.kernel_name().parse::<Mode>(), Ok(m));
            assert_eq!(m.constant_name().parse::<Mode>(), Ok(m));
            assert_eq!(m.to_string(), m.name());
        }
        assert_eq!(" MemBind\n".parse::<Mode>(), Ok(Mode::Bind));
        assert_eq!("preferred_many".parse::<Mode>(), Ok(Mode::PreferredMany));
        assert_eq!("localalloc".parse::<Mode>(), Ok(Mode::Local));
        assert!("fastest".parse::<Mode>().is_err());
        assert_eq!(serde_json::to_string(&Mode::PreferredMany).expect("json"), "\"preferred-many\"");
        assert_eq!(serde_json::from_str::<Mode>("\"bind\"").expect("json"), Mode::Bind);
    }

    #[test]
    fn policy_text_round_trips() {
        for text in
            ["bind:0-1", "interleave=static:0-3,8", "local", "default", "preferred:2", "bind=static|balancing:1"]
        {
            let p: Policy = text.parse().expect(text);
            assert_eq!(p.to_string(), text);
        }
        let p: Policy = "membind=relative,static:0".parse().expect("parse");
        assert_eq!(p.mode, Mode::Bind);
        assert!(p.flags.static_nodes && p.flags.relative_nodes && !p.flags.numa_balancing);
        assert!("bind=sticky:0".parse::<Policy>().is_err());
        assert!("bind:0-".parse::<Policy>().is_err());
        assert!("nowhere:0".parse::<Policy>().is_err());
    }

    #[test]
    fn get_returns_what_set_set() {
        in_fresh_thread(|| {
            let n0 = node0();
            assert_eq!(get_mempolicy().expect("get").mode, Mode::Default, "fresh thread has no policy");
            for mode in [Mode::Bind, Mode::Preferred, Mode::Interleave, Mode::PreferredMany, Mode::WeightedInterleave] {
                if !kernel_supports(mode, ModeFlags::NONE) {
                    continue;
                }
                set_mempolicy(mode, ModeFlags::NONE, &n0).expect("set");
                assert_eq!(get_mempolicy().expect("get"), Policy::new(mode, n0.clone()), "{mode}");
            }
            set_mempolicy(Mode::Local, ModeFlags::NONE, &NodeSet::new()).expect("local");
            assert_eq!(get_mempolicy().expect("get"), Policy::new(Mode::Local, NodeSet::new()));
            // An empty preferred set is local allocation to the kernel.
            set_mempolicy(Mode::Preferred, ModeFlags::NONE, &NodeSet::new()).expect("preferred none");
            assert_eq!(get_mempolicy().expect("get").mode, Mode::Local);
            set_mempolicy(Mode::Default, ModeFlags::NONE, &NodeSet::new()).expect("default");
            assert_eq!(get_mempolicy().expect("get"), Policy::new(Mode::Default, NodeSet::new()));
        });
    }

    #[test]
    fn flags_come_back() {
        in_fresh_thread(|| {
            let n0 = node0();
            for flags in [
                ModeFlags { static_nodes: true, ..ModeFlags::NONE },
                ModeFlags { relative_nodes: true, ..ModeFlags::NONE },
                ModeFlags { numa_balancing: true, ..ModeFlags::NONE },
            ] {
                if !kernel_supports(Mode::Bind, flags) {
                    continue;
                }
                set_mempolicy(Mode::Bind, flags, &n0).expect("set");
                let p = get_mempolicy().expect("get");
                assert_eq!((p.mode, p.flags, p.nodes), (Mode::Bind, flags, n0.clone()));
            }
            // With static nodes the kernel reports the set as given, even a
            // node the thread may not use, as long as one given node is usable.
            let wide = NodeSet::parse_list("0,3").expect("set");
            set_mempolicy(Mode::Interleave, ModeFlags { static_nodes: true, ..ModeFlags::NONE }, &wide).expect("set");
            assert_eq!(get_mempolicy().expect("get").nodes, wide);
        });
    }

    #[test]
    fn missing_node_is_einval_naming_the_call() {
        in_fresh_thread(|| {
            for list in ["63", "64", "1000", "40000"] {
                let e = set_mempolicy(Mode::Bind, ModeFlags::NONE, &NodeSet::parse_list(list).expect("set"))
                    .expect_err(list);
                assert!(e.is_errno(libc::EINVAL), "{list}: {e}");
                assert_eq!(e.to_string(), "set_mempolicy: Invalid argument (EINVAL)");
            }
            // Nothing changed.
            assert_eq!(get_mempolicy().expect("get").mode, Mode::Default);
        });
    }

    #[test]
    fn sets_that_do_not_suit_the_mode_are_refused() {
        in_fresh_thread(|| {
            let empty = NodeSet::new();
            let e = set_mempolicy(Mode::Bind, ModeFlags::NONE, &empty).expect_err("bind to nothing");
            assert!(e.is_errno(libc::EINVAL), "{e}");
            let e = set_mempolicy(Mode::Default, ModeFlags::NONE, &node0()).expect_err("default with nodes");
            assert!(e.is_errno(libc::EINVAL), "{e}");
            let e = set_mempolicy(Mode::Local, ModeFlags::NONE, &node0()).expect_err("local with nodes");
            assert!(e.is_errno(libc::EINVAL), "{e}");
        });
    }

    #[test]
    fn balancing_with_the_wrong_mode_is_unsupported() {
        if !kernel_supports(Mode::Bind, ModeFlags { numa_balancing: true, ..ModeFlags::NONE }) {
            return;
        }
        in_fresh_thread(|| {
            let flags = ModeFlags { numa_balancing: true, ..ModeFlags::NONE };
            match set_mempolicy(Mode::Interleave, flags, &node0()) {
                Err(ActError::Unsupported { what, .. }) => assert!(what.contains("interleave"), "{what}"),
                other => panic!("expected Unsupported, got {other:?}"),
            }
        });
    }

    #[test]
    fn probing_knows_the_basics() {
        for m in [Mode::Default, Mode::Preferred, Mode::Bind, Mode::Interleave, Mode::Local] {
            assert!(kernel_supports(m, ModeFlags::NONE), "{m}");
        }
        assert!(!kernel_supports(
            Mode::Bind,
            ModeFlags { static_nodes: true, relative_nodes: true, ..ModeFlags::NONE }
        ));
        assert!(!kernel_supports(Mode::Interleave, ModeFlags { numa_balancing: true, ..ModeFlags::NONE }));
    }

    #[test]
    fn thread_bind_places_new_pages_on_node_0() {
        in_fresh_thread(|| {
            set_mempolicy(Mode::Bind, ModeFlags::NONE, &node0()).expect("bind");
            // No range policy: the pages follow the thread policy.
            let mut buf = NodeBuffer::unbound(64 * 4096).expect("buffer");
            buf.touch();
            let status = query_pages(Pid::SELF, &buf.page_addresses()).expect("query");
            assert_eq!(status.len(), buf.page_count());
            assert!(status.iter().all(|s| *s == PageStatus::Node(0)), "{status:?}");
            assert_eq!(node_of_address(buf.as_ptr() as usize).expect("node"), 0);
        });
    }

    #[test]
    fn mbind_sets_the_range_policy() {
        let mut buf = NodeBuffer::unbound(16 * 4096).expect("buffer");
        assert_eq!(get_mempolicy_at(buf.as_ptr() as usize).expect("get").mode, Mode::Default);
        let flags = MbindFlags { strict: true, move_: true, move_all: false };
        // SAFETY: the buffer is ours.
        unsafe { mbind(buf.as_mut_ptr().cast(), buf.len(), Mode::Interleave, ModeFlags::NONE, &node0(), flags) }
            .expect("mbind");
        let p = get_mempolicy_at(buf.as_ptr() as usize + 4096).expect("get");
        assert_eq!(p, Policy::new(Mode::Interleave, node0()));
        buf.touch();
        let status = query_pages(Pid::SELF, &buf.page_addresses()).expect("query");
        assert!(status.iter().all(|s| *s == PageStatus::Node(0)), "{status:?}");
    }

    #[test]
    fn mbind_errors() {
        let mut buf = NodeBuffer::unbound(4 * 4096).expect("buffer");
        // SAFETY: the buffer is ours; the calls are refused anyway.
        let e = unsafe {
            mbind(buf.as_mut_ptr().add(1).cast(), 4096, Mode::Bind, ModeFlags::NONE, &node0(), MbindFlags::NONE)
        }
        .expect_err("unaligned");
        assert!(e.is_errno(libc::EINVAL), "{e}");
        assert!(e.to_string().starts_with("mbind: "), "{e}");
        // SAFETY: as above.
        let e = unsafe {
            let nodes = NodeSet::parse_list("63").expect("set");
            mbind(buf.as_mut_ptr().cast(), 4096, Mode::Bind, ModeFlags::NONE, &nodes, MbindFlags::NONE)
        }
        .expect_err("missing node");
        assert!(e.is_errno(libc::EINVAL), "{e}");
    }

    #[test]
    fn mems_allowed_holds_node_0() {
        let m = mems_allowed().expect("mems");
        assert!(m.contains(0), "{m}");
    }

    #[test]
    fn node_of_unmapped_address_is_efault() {
        let e = node_of_address(8).expect_err("page 0 is never mapped");
        assert!(e.is_errno(libc::EFAULT), "{e}");
    }

    #[test]
    fn changes_are_logged_and_queries_are_not() {
        let _g = log_lock();
        let _ = log::take();
        let me = in_fresh_thread(|| {
            set_mempolicy(Mode::Bind, ModeFlags { static_nodes: true, ..ModeFlags::NONE }, &node0()).expect("set");
            let _ = get_mempolicy().expect("get");
            let _ = mems_allowed().expect("mems");
            let _ = set_mempolicy(Mode::Bind, ModeFlags::NONE, &NodeSet::new()); // refused: not logged
            set_mempolicy(Mode::Default, ModeFlags::NONE, &NodeSet::new()).expect("reset");
            Pid::this_thread().as_raw()
        });
        let mine: Vec<_> = log::take().into_iter().filter(|r| r.tid == me).collect();
        let lines: Vec<String> = mine.iter().map(|r| r.to_string()).collect();
        assert_eq!(
            lines,
            vec![
                "numakit: set_mempolicy self: mode bind nodes 0 flags static".to_string(),
                "numakit: set_mempolicy self: mode default".to_string(),
            ]
        );

        let mut buf = NodeBuffer::unbound(4096).expect("buffer");
        let _ = get_mempolicy_at(buf.as_ptr() as usize).expect("get");
        // SAFETY: the buffer is ours.
        unsafe { mbind(buf.as_mut_ptr().cast(), 4096, Mode::Bind, ModeFlags::NONE, &node0(), MbindFlags::NONE) }
            .expect("mbind");
        let me = Pid::this_thread().as_raw();
        let mine: Vec<_> = log::take().into_iter().filter(|r| r.tid == me).collect();
        assert_eq!(mine.len(), 1, "{mine:?}");
        assert_eq!(mine[0].call, "mbind");
        assert_eq!(mine[0].target, format!("self addr {:p} len 4096", buf.as_ptr()));
        assert_eq!(mine[0].detail, "mode bind nodes 0");
    }
}
