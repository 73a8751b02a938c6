//! What a memory policy is: its [`Mode`] (the kernel's `MPOL_*` values,
//! their names and since which Linux), its [`ModeFlags`], [`MbindFlags`],
//! and a whole [`Policy`] with its text form (`bind=static:0-1`). No
//! system call here but [`Policy::apply`], which hands the policy to
//! [`super::set_mempolicy`].

use std::fmt;
use std::str::FromStr;

use crate::act::Result;
use crate::sets::NodeSet;

const MPOL_F_STATIC_NODES: i32 = 1 << 15;
const MPOL_F_RELATIVE_NODES: i32 = 1 << 14;
const MPOL_F_NUMA_BALANCING: i32 = 1 << 13;
pub(super) const MODE_FLAG_BITS: i32 = MPOL_F_STATIC_NODES | MPOL_F_RELATIVE_NODES | MPOL_F_NUMA_BALANCING;

/// `mbind` flags (also used by `move_pages`).
pub(crate) const MPOL_MF_STRICT: u32 = 1 << 0;
pub(crate) const MPOL_MF_MOVE: u32 = 1 << 1;
pub(crate) const MPOL_MF_MOVE_ALL: u32 = 1 << 2;

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

/// Flags of [`mbind`](super::mbind) (the last argument), about pages already there.
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

    /// Makes this the calling thread's policy ([`set_mempolicy`](super::set_mempolicy)).
    pub fn apply(&self) -> Result<()> {
        super::set_mempolicy(self.mode, self.flags, &self.nodes)
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
