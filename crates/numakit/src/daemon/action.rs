//! What a decision asks for, and why: bind a process's CPUs (and preferred
//! memory) to nodes, migrate pages between two nodes, revert an earlier
//! move, or keep things as they are. Every action carries its reason as
//! data ([`Why`], printed on demand) and its expected gain.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::sets_serde;
use super::snapshot::MemPolicy;
use crate::sets::NodeSet;

/// The change asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "kebab-case")]
pub enum ActionKind {
    /// Set the CPU affinity of every thread to the CPUs of `cpu_nodes`, and
    /// unless `mem_nodes` is empty the memory policy to preferred-many on
    /// them (new allocations land there; never MPOL_BIND, which can OOM).
    Bind {
        /// CPU nodes.
        #[serde(with = "sets_serde")]
        cpu_nodes: NodeSet,
        /// Preferred memory nodes (empty: leave the policy alone).
        #[serde(with = "sets_serde")]
        mem_nodes: NodeSet,
    },
    /// Migrate up to `pages` pages of the process from node `from` to `to`.
    Migrate {
        /// Source node.
        from: u32,
        /// Destination node.
        to: u32,
        /// Pages (of [`Config::page_bytes`](super::Config::page_bytes)).
        pages: u64,
    },
    /// Undo an earlier bind: restore the affinity and memory policy it had.
    /// Pages are not moved back.
    Revert {
        /// Affinity to restore (nodes).
        #[serde(with = "sets_serde")]
        cpu_nodes: NodeSet,
        /// Policy to restore.
        mem_policy: MemPolicy,
    },
    /// Nothing to do (the reason says why).
    Keep,
}

/// Why an action was chosen (or nothing was done).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "why", rename_all = "kebab-case")]
pub enum Why {
    /// A move that pays: access-time ratio now and after, stall share used,
    /// expected speed-up, benefit and cost in CPU-seconds over the horizon.
    Improve {
        /// Weighted access-time ratio now.
        ratio_now: f64,
        /// ... after the move.
        ratio_after: f64,
        /// Share of cycles stalled on memory (measured or assumed).
        stall_share: f64,
        /// Whether `stall_share` was measured.
        measured: bool,
        /// Part of the gain from protection against drift.
        drift_protection: f64,
        /// Expected speed-up.
        gain: f64,
        /// Expected benefit, CPU-seconds.
        benefit_s: f64,
        /// Cost of moving the pages, CPU-seconds.
        cost_s: f64,
        /// Horizon used, seconds.
        horizon_s: f64,
        /// Runs of the command name, seen to end, that shortened the
        /// horizon below the process's age (0: the horizon is the age).
        #[serde(default)]
        horizon_runs: u32,
    },
    /// Pages still owed by an earlier move, within this scan's budget.
    Pending {
        /// Pages left after this scan.
        left_pages: u64,
    },
    /// Progress fell after a move: undone.
    Harm {
        /// Progress before.
        before: f64,
        /// Progress now.
        after: f64,
        /// Local share of accesses before.
        locality_before: f64,
        /// ... now.
        locality_after: f64,
    },
    /// The move was judged and kept.
    Judged {
        /// Progress before.
        before: f64,
        /// Progress now.
        after: f64,
    },
    /// Excluded by configuration (which rule).
    Excluded {
        /// The matching rule.
        rule: String,
    },
    /// Affinity or memory policy set by someone else.
    OwnerPlaced,
    /// Left alone after harm, until then.
    LeftAlone {
        /// Until.
        until_s: f64,
    },
    /// Its command name is left alone after repeated harm.
    CommLeftAlone {
        /// Until.
        until_s: f64,
    },
    /// Moved recently.
    CoolDown {
        /// Until.
        until_s: f64,
    },
    /// Interleaved memory is left as it is.
    Interleaved,
    /// A move is waiting to be judged.
    Waiting,
    /// No node set has room for it.
    NoTarget,
    /// Already where it should be.
    InPlace,
    /// The best move does not pay.
    NotWorth {
        /// Its expected speed-up.
        gain: f64,
        /// Benefit, CPU-seconds.
        benefit_s: f64,
        /// Cost, CPU-seconds.
        cost_s: f64,
        /// Horizon used, seconds.
        #[serde(default)]
        horizon_s: f64,
        /// As for [`Why::Improve`].
        #[serde(default)]
        horizon_runs: u32,
    },
    /// This scan's page budget is spent.
    Budget,
    /// A better move this scan took the room.
    RoomTaken,
    /// The move that would pay puts pages or threads on memory marked slow
    /// (a move there did harm that neither CPU nor locality explains).
    SlowMemory {
        /// The memory nodes marked slow it would use.
        nodes: Vec<u32>,
        /// Marked until (the latest of them).
        until_s: f64,
    },
    /// An earlier placement undone to make room for a bigger gain.
    MakeRoom {
        /// The process that needs the room.
        for_pid: i32,
    },
}

/// Where a horizon came from, for the reason text: nothing when it is the
/// age, else the runs that shortened it.
fn horizon_source(runs: u32) -> String {
    if runs == 0 {
        String::new()
    } else {
        format!(" (the time left by {runs} ended runs of this command)")
    }
}

impl fmt::Display for Why {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Why::Improve {
                ratio_now,
                ratio_after,
                stall_share,
                measured,
                drift_protection,
                gain,
                benefit_s,
                cost_s,
                horizon_s,
                horizon_runs,
            } => write!(
                f,
                "access-time ratio {ratio_now:.2} -> {ratio_after:.2} with {:.0}% of cycles stalled on memory \
                     ({}): expected {:+.1}% progress ({:.1}% of it protection from drift), {benefit_s:.0} CPU-s \
                     gained over {horizon_s:.0} s{} against {cost_s:.1} CPU-s to move pages",
                stall_share * 100.0,
                if *measured { "measured" } else { "assumed" },
                gain * 100.0,
                drift_protection * 100.0,
                horizon_source(*horizon_runs)
            ),
            Why::Pending { left_pages } => write!(f, "continuing an earlier move, {left_pages} pages left after this"),
            Why::Harm { before, after, locality_before, locality_after } => write!(
                f,
                "progress fell from {before:.3} to {after:.3} ({:+.1}%), locality {:.0}% -> {:.0}%: undone, left alone",
                (after / before - 1.0) * 100.0,
                locality_before * 100.0,
                locality_after * 100.0
            ),
            Why::Judged { before, after } => {
                write!(f, "move kept: progress {before:.3} -> {after:.3} ({:+.1}%)", (after / before - 1.0) * 100.0)
            }
            Why::Excluded { rule } => write!(f, "excluded by {rule}"),
            Why::OwnerPlaced => f.write_str("its affinity or memory policy was set by its owner"),
            Why::LeftAlone { until_s } => write!(f, "left alone after harm until t={until_s:.0}"),
            Why::CommLeftAlone { until_s } => write!(f, "its command name is left alone until t={until_s:.0}"),
            Why::CoolDown { until_s } => write!(f, "moved recently; cool-down until t={until_s:.0}"),
            Why::Interleaved => f.write_str("interleaved memory is left as it is"),
            Why::Waiting => f.write_str("an earlier move is waiting to be judged"),
            Why::NoTarget => f.write_str("no node set has room for it"),
            Why::InPlace => f.write_str("already in the best place"),
            Why::NotWorth { gain, benefit_s, cost_s, horizon_s, horizon_runs } => write!(
                f,
                "best move gains {:+.2}%, {benefit_s:.1} CPU-s over {horizon_s:.0} s{} against {cost_s:.1} CPU-s: \
                 not worth it",
                gain * 100.0,
                horizon_source(*horizon_runs)
            ),
            Why::Budget => f.write_str("this scan's page budget is spent"),
            Why::RoomTaken => f.write_str("a better move this scan took the room"),
            Why::SlowMemory { nodes, until_s } => write!(
                f,
                "the move that pays uses memory of node(s) {} where a move did harm that CPU and locality do not \
                 explain; none there until t={until_s:.0}",
                nodes.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
            ),
            Why::MakeRoom { for_pid } => write!(f, "unpinned to make room for pid {for_pid}"),
        }
    }
}

/// One action for one process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Action {
    /// Process id.
    pub pid: i32,
    /// The change.
    #[serde(flatten)]
    pub kind: ActionKind,
    /// The reason.
    pub reason: Why,
    /// Expected speed-up of the process (fraction; 0 for keep and revert).
    pub expected_gain: f64,
}

impl Action {
    /// Whether the action changes anything.
    pub fn changes(&self) -> bool {
        !matches!(self.kind, ActionKind::Keep)
    }
}
