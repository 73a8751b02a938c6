//! Free resources and bound load per node, kept up to date as moves are
//! committed within one scan, and what a displaced thread or a move's
//! pages cost on a node.

use super::facts::Facts;
use crate::daemon::config::Config;
use crate::daemon::machine::{NodePos, PerNode};

/// Free resources, updated as moves are committed within one scan.
pub(super) struct Book {
    pub(super) free_cpus: PerNode<f64>,
    pub(super) free_bytes: PerNode<f64>,
    /// CPU load the scheduler cannot move: that of the listed processes
    /// with a restricted affinity, and the snapshot's
    /// [`bound_cpus`](crate::daemon::NodeState::bound_cpus) of the others.
    pub(super) bound: PerNode<f64>,
    /// Part of `bound` that numakit itself placed (it may undo those to make
    /// room for a bigger gain).
    pub(super) ours: PerNode<f64>,
    /// numakit's placements: pid, load per node, expected gain.
    pub(super) pins: Vec<(i32, PerNode<f64>, f64)>,
    /// Memory per CPU of the processes running on each node.
    pub(super) mem_per_cpu: PerNode<f64>,
    /// Memory (bytes, each process's in proportion to its CPU use there) and
    /// CPU use of the processes running on each node.
    pub(super) node_mem: PerNode<f64>,
    pub(super) node_cpu: PerNode<f64>,
    /// Memory per CPU of every process, over the machine.
    pub(super) mem_per_cpu_all: f64,
}

/// Memory per CPU of the processes other than `f`'s running on node `a`:
/// what follows a thread that `f` displaces from there (its own memory
/// does not follow the threads it displaces). When the snapshot shows
/// nobody else there, the machine's average per CPU (as for a node
/// without CPU use).
pub(super) fn others_mem_per_cpu(book: &Book, f: &Facts, a: NodePos) -> f64 {
    let own_cpu: f64 = f.own_cpu.iter().sum();
    let own_mem = if own_cpu > 0.0 { f.mem_total * f.own_cpu[a] / own_cpu } else { 0.0 };
    let cpu = book.node_cpu[a] - f.own_cpu[a];
    if cpu > 1e-9 {
        (book.node_mem[a] - own_mem).max(0.0) / cpu
    } else {
        book.mem_per_cpu_all
    }
}

/// Memory a move must leave free on a node: the configured margin, and at
/// least what one more CPU's worth of the processes running there uses, so
/// that moved pages do not push the next job's first touch to a slower node.
pub(super) fn headroom(book: &Book, cfg: &Config, b: NodePos) -> f64 {
    (cfg.mem_margin_bytes as f64).max(book.mem_per_cpu[b])
}

/// numakit's placements a process of load `need` may undo: those of at most
/// `1 / undo_size_ratio` of its size (no musical chairs between equals).
pub(super) fn undoable<'b>(
    book: &'b Book,
    f: &'b Facts,
    need: f64,
    cfg: &Config,
) -> impl Iterator<Item = &'b (i32, PerNode<f64>, f64)> + 'b {
    let ratio = cfg.undo_size_ratio;
    book.pins.iter().filter(move |x| x.0 != f.pid && x.1.iter().sum::<f64>() * ratio <= need)
}
