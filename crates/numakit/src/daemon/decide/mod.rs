//! The decision core: one pure function from (machine, snapshot, config,
//! history) to a [`Decision`] (actions with their reasons, and the next
//! history). The module docs of [`daemon`](super) state the contract and
//! the rules; this folder is their implementation. Inside, nodes are
//! positions ([`NodePos`](super::NodePos)) and per-node data is
//! [`PerNode`](super::PerNode); node ids come in from the snapshot and the
//! history and go out in actions and the history, through `View::by_id`,
//! `View::idx` and `View::ids`. A scan's steps, in the order [`decide`]
//! takes them:
//!
//! * `view`: the machine prepared for the decision (access-time ratios,
//!   each CPU node's home memory);
//! * `facts`: what is known of each process (where it runs and its memory
//!   is, what it needs and holds, its stall share);
//! * `book`: free and bound resources per node, kept up to date as moves
//!   are committed;
//! * `horizon`: how long a move's gain is credited (the expected remaining
//!   run time, learnt per command name from the runs seen to end);
//! * `owed`: step 2, migrations owed by earlier moves;
//! * `judge`: step 3, settled moves judged, harmful ones reverted;
//! * `options` and `choose`: step 4, every option of each candidate and the
//!   best one that pays;
//! * `commit`: step 5, the chosen moves committed best first.
//!
//! `tests/`: the one test suite, every test on inputs from one fixture.

use std::collections::BTreeMap;

use super::action::{Action, ActionKind, Why};
use super::config::Config;
use super::history::{History, ProcObserved, HISTORY_VERSION};
use super::machine::Machine;
use super::snapshot::{ProcInfo, Snapshot};

mod book;
mod choose;
mod commit;
mod facts;
mod horizon;
mod judge;
mod options;
mod owed;
#[cfg(test)]
mod tests;
mod view;

use book::Book;
use facts::{big, is_restricted, main_node, Facts};
use view::View;

const GIB: f64 = (1u64 << 30) as f64;

/// The outcome of one scan.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// Actions in the order to apply them (reverts and owed migrations
    /// first, then new moves best first, then the reasons for keeping).
    pub actions: Vec<Action>,
    /// The history to pass to the next call (and to persist).
    pub history: History,
}

impl Decision {
    /// Actions that change something.
    pub fn changes(&self) -> impl Iterator<Item = &Action> {
        self.actions.iter().filter(|a| a.changes())
    }
}

/// One scan's working state, which its steps share: the machine view, the
/// history being written, the free resources as moves are committed,
/// every process's facts, the actions so far and the page budget.
struct Scan<'a> {
    v: View<'a>,
    cfg: &'a Config,
    /// The snapshot's time.
    now: f64,
    /// The previous scan's time: the start of the window the snapshot's
    /// rates are over (none when no scan is on record).
    window_start: Option<f64>,
    /// Seconds since the last scan (the budget's refill).
    elapsed: f64,
    /// Page size, bytes.
    page: u64,
    h: History,
    book: Book,
    facts: BTreeMap<i32, Facts>,
    actions: Vec<Action>,
    /// Pages this scan may still migrate, of `budget_full`.
    budget: u64,
    budget_full: u64,
    /// Pages this scan migrates.
    pages_total: u64,
}

/// Decides what to do after one scan. Pure and deterministic: the same
/// inputs give the same actions and history.
///
/// 1. Learn the run times of the processes that exited, forget processes
///    that are gone (or whose pid was reused), expire
///    leave-alone periods, refill the page budget for the time elapsed.
/// 2. Continue migrations owed by earlier moves, within the budget.
/// 3. Judge moves that have settled: if progress fell by more than
///    `harm_threshold`, revert and leave the process alone (and after
///    `comm_harm_limit` reverts, its command name).
/// 4. Candidates: older than `min_age_s`, above `min_cpu` and
///    `min_rss_bytes`, not excluded, not placed by their owner, not cooling
///    down. For each, evaluate every node (and for processes larger than a
///    node, the nearest node groups) with room for its CPUs and memory;
///    gain = the speed-up from the lower access-time ratio for its measured
///    (or assumed) memory stall share, plus protection from observed drift
///    for unbound processes; cost = the pages to move.
/// 5. Commit the best moves first while they pay (`min_gain`,
///    `min_benefit_over_cost`, both × `stickiness` for a process placed
///    before), fit the free CPUs and memory, never put more bound CPU load
///    on a node than it has CPUs, and stay within the page budget.
pub fn decide(machine: &Machine, snap: &Snapshot, cfg: &Config, history: &History) -> Decision {
    let mut procs: Vec<&ProcInfo> = snap.procs.iter().collect();
    procs.sort_by_key(|p| p.pid);
    let mut scan = Scan::new(machine, snap, cfg, history, &procs);
    scan.owed_migrations(&procs);
    scan.judge(&procs);
    let drift_rate = scan.observe(&procs);
    let proposals = scan.candidates(&procs, drift_rate);
    scan.commit(&procs, proposals);
    scan.h.committed.pages_migrated += scan.pages_total;
    Decision { actions: scan.actions, history: scan.h }
}

/// When the window `p`'s rates are over began: the previous scan, or
/// earlier when they span several scans (a short interval,
/// [`Config::min_rate_span_s`](crate::daemon::Config::min_rate_span_s)).
/// A move made since is still in them. The collector says which scan they
/// start from ([`ProcInfo::rates_from_s`]); a snapshot that gives only
/// their span is taken back from now.
fn rates_since(window_start: Option<f64>, now: f64, p: &ProcInfo) -> Option<f64> {
    let own = p.rates_from_s.or_else(|| (p.rate_span_s > 0.0).then_some(now - p.rate_span_s));
    match (window_start, own) {
        (Some(w), Some(o)) => Some(w.min(o)),
        (w, o) => w.or(o),
    }
}

fn keep(pid: i32, why: Why) -> Action {
    Action { pid, kind: ActionKind::Keep, reason: why, expected_gain: 0.0 }
}

impl<'a> Scan<'a> {
    /// Step 1: the history brought up to date (gone processes forgotten,
    /// expired leave-alone periods and slow-memory marks dropped), the page
    /// budget refilled, the resources booked and every process's facts.
    fn new(machine: &'a Machine, snap: &Snapshot, cfg: &'a Config, history: &History, procs: &[&ProcInfo]) -> Self {
        let r = machine.ratios(cfg.slit_at, cfg.ratio_at);
        let homes = machine.positions().map(|a| machine.home_memory(&r, a)).collect();
        let all_cpu = machine.nodes.iter().filter(|n| n.cpus > 0).map(|n| n.id).collect();
        let v = View { m: machine, r, homes, all_cpu };
        let now = snap.time_s;
        let window_start = history.observed.last_time_s;
        let mut h = history.clone();
        h.version = HISTORY_VERSION;
        let elapsed = h
            .observed
            .last_time_s
            .map_or(cfg.interval_s, |t| (now - t).clamp(0.0, cfg.max_budget_intervals * cfg.interval_s));
        h.observed.last_time_s = Some(now);
        let page = cfg.page_bytes.max(1);
        let budget_full = (cfg.pages_per_s as f64 * elapsed) as u64;
        let budget = budget_full;

        horizon::learn_runs(&mut h.observed, &snap.exited, history.observed.last_time_s, now, cfg);
        let live: BTreeMap<i32, &ProcInfo> = procs.iter().map(|p| (p.pid, *p)).collect();
        h.observed
            .procs
            .retain(|pid, rec| live.get(pid).is_some_and(|p| rec.same_process(now - p.age_s, cfg.same_start_slack_s)));
        h.committed
            .procs
            .retain(|pid, rec| live.get(pid).is_some_and(|p| rec.same_process(now - p.age_s, cfg.same_start_slack_s)));
        for rec in h.committed.procs.values_mut() {
            if rec.left_alone_until_s.is_some_and(|u| u <= now) {
                rec.left_alone_until_s = None;
            }
        }
        for c in h.committed.comms.values_mut() {
            if c.left_alone_until_s.is_some_and(|u| u <= now) {
                c.left_alone_until_s = None;
                c.harms = 0;
            }
        }
        h.observed.comms.retain(|_, c| !c.runs.is_empty());
        h.committed.comms.retain(|_, c| c.harms > 0 || c.left_alone_until_s.is_some());
        h.committed.slow_memory.retain(|_, until| *until > now);

        let mut book = Book {
            free_cpus: v.zeros(),
            free_bytes: v.zeros(),
            bound: v.zeros(),
            ours: v.zeros(),
            pins: Vec::new(),
            mem_per_cpu: v.zeros(),
            node_mem: v.zeros(),
            node_cpu: v.zeros(),
            mem_per_cpu_all: 0.0,
        };
        {
            let mut mem = v.zeros();
            let mut cpu = v.zeros();
            for p in procs {
                let total: f64 = p.cpu_per_node.values().sum();
                for (id, x) in &p.cpu_per_node {
                    if let (Some(a), true) = (machine.index(*id), total > 0.0) {
                        cpu[a] += x;
                        mem[a] += p.mem_total() as f64 * x / total;
                    }
                }
            }
            let all = mem.iter().sum::<f64>() / cpu.iter().sum::<f64>().max(1e-9);
            for a in v.positions() {
                book.mem_per_cpu[a] = if cpu[a] > 0.0 { mem[a] / cpu[a] } else { all };
            }
            book.node_mem = mem;
            book.node_cpu = cpu;
            book.mem_per_cpu_all = all;
        }
        for ns in &snap.nodes {
            if let Some(a) = machine.index(ns.id) {
                book.free_cpus[a] = ns.free_cpus.max(0.0);
                book.free_bytes[a] = ns.free_bytes as f64;
                // Pinned load of processes too small to be listed: as
                // unmovable as a listed process's restricted one.
                book.bound[a] += ns.bound_cpus.max(0.0);
            }
        }
        let mut all_facts: BTreeMap<i32, Facts> = BTreeMap::new();
        for p in procs {
            let placed = h.committed.procs.get(&p.pid).and_then(|r| r.placement.as_ref());
            let ours = placed.is_some_and(|pl| pl.cpu_nodes == p.affinity);
            // Until numakit's move is judged, the process holds at least
            // what it was booked for: the window in which the move was made
            // reads low (its threads blocked while their pages moved).
            let booked = placed.filter(|pl| ours && !pl.judged).map_or(0.0, |pl| pl.need);
            let mut f = facts::facts(&v, p, cfg, ours, booked);
            (f.horizon, f.horizon_runs) = horizon::horizon(&h, p, cfg);
            for (b, x) in book.bound.iter_mut().zip(&f.own_bound) {
                *b += x;
            }
            if ours {
                for (b, x) in book.ours.iter_mut().zip(&f.own_ours) {
                    *b += x;
                }
                book.pins.push((p.pid, f.own_ours.clone(), placed.map_or(0.0, |pl| pl.expected_gain)));
            }
            all_facts.insert(p.pid, f);
        }

        Scan {
            v,
            cfg,
            now,
            window_start,
            elapsed,
            page,
            h,
            book,
            facts: all_facts,
            actions: Vec::new(),
            budget,
            budget_full,
            pages_total: 0,
        }
    }

    /// Memory growth of the candidates, and the drift of the unbound ones
    /// (their main node changed since the last scan); the drift rate
    /// observed so far.
    fn observe(&mut self, procs: &[&ProcInfo]) -> f64 {
        let Scan { ref v, cfg, now, elapsed, ref mut h, facts: ref mut all_facts, .. } = *self;
        for p in procs {
            if !big(p, cfg) {
                continue;
            }
            let rec = h.observed.procs.entry(p.pid).or_insert_with(|| ProcObserved::new(&p.comm, now - p.age_s));
            if let (Some((t0, r0)), Some(f)) = (rec.last_rss, all_facts.get_mut(&p.pid)) {
                if now > t0 {
                    f.growth = (p.rss_bytes as f64 - r0 as f64).max(0.0) / (now - t0);
                }
            }
            rec.last_rss = Some((now, p.rss_bytes));
            if is_restricted(v, p) {
                continue;
            }
            // Drift is counted between two consecutive measured placements
            // only: where a thread was at one instant is no placement.
            if !p.cpu_measured {
                rec.last_cpu_node = None;
                continue;
            }
            let main = main_node(v, p);
            if let (Some(prev), Some(cur)) = (rec.last_cpu_node, main) {
                h.observed.drift_observed_s += elapsed;
                if prev != cur {
                    h.observed.drifts += 1;
                }
            }
            rec.last_cpu_node = main;
        }
        h.observed.drift_rate(cfg.drift_prior_per_hour, cfg.drift_prior_weight_s)
    }
}
