//! The daemon's thresholds, each with where its number comes from. They
//! were fixed (and written down in docs/simulate.md) before any comparison
//! was run, so the simulator cannot have been used to fit them.
//!
//! Readable from TOML (`#[serde(default)]`: any field may be left out).

use serde::{Deserialize, Serialize};

/// Configuration of [`decide`](super::decide).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Seconds between scans. 15 s: numad's `MAX_INTERVAL` and the systemd
    /// unit's `-i 15`.
    pub interval_s: f64,
    /// Minimum CPUs used to be a candidate. 0.5: numad's `CPU_THRESHOLD 50`.
    pub min_cpu: f64,
    /// Minimum resident memory to be a candidate. 300 MB: numad's
    /// `MEMORY_THRESHOLD 300`.
    pub min_rss_bytes: u64,
    /// Minimum age ("long-running"). 60 s: four scans of numad's 15 s
    /// interval, enough for a CPU-use average over several samples.
    pub min_age_s: f64,
    /// Processes never touched, by pid.
    pub exclude_pids: Vec<i32>,
    /// ... by command name (exact `comm`).
    pub exclude_comms: Vec<String>,
    /// ... by cgroup path prefix (`/system.slice` excludes services).
    pub exclude_cgroups: Vec<String>,
    /// ... by owner uid.
    pub exclude_uids: Vec<u32>,
    /// Also manage processes whose affinity or memory policy someone else
    /// set. Off: an owner's placement is respected (numad 2015 overwrote it).
    pub manage_owner_pinned: bool,
    /// Allow moving memory to CPU-less memory nodes (CXL, HBM, slow tiers).
    /// CPUs are never placed there. Off by default.
    pub use_cpuless_memory: bool,
    /// Memory left free on a target node. 100 MB: numad's `MBS_MARGIN`.
    pub mem_margin_bytes: u64,
    /// Calibration of firmware distances when no measured ratios are given:
    /// SLIT `slit_at` means an access-time ratio of `ratio_at`. 21 ↔ 1.62:
    /// the 2-socket Xeon SLIT with Intel MLC's idle latencies, 131 / 81 ns.
    pub slit_at: u32,
    /// See `slit_at`.
    pub ratio_at: f64,
    /// Share of cycles stalled on memory assumed when counters are absent.
    /// 0.2: the middle of the SPEC CPU2006 spread in the Dell paper (3–50 %
    /// slowdown all-remote at a 1.62 ratio ⇒ 5–80 % stalled; geometric mean
    /// ≈ 0.2).
    pub default_stall_share: f64,
    /// Cost of moving memory: seconds of the process's progress lost per GiB
    /// moved. 1 s/GiB: Linux `move_pages` measured 600–750 MB/s (2009,
    /// 16-core Opteron, commit "call migrate_prep() once per move_pages()"),
    /// batched TLB flushing (Linux 6.3) reports +292 % pages/s; ~1 GiB/s,
    /// charged as if the whole process waited.
    pub migrate_cost_s_per_gib: f64,
    /// Expected remaining run time is taken equal to the age (a process that
    /// has run for t is as likely as not to run another t), capped here.
    /// 3600 s: the gain of one hour is the most a move is credited with.
    pub max_horizon_s: f64,
    /// Runs of one command name seen to end before their run times replace
    /// the age as the expected remaining run time of its processes (see
    /// `decide`'s horizon); 0: never. 3: fewer say nothing of a spread.
    pub runs_to_learn: u32,
    /// A move must gain this many times its cost over the horizon. 2: a
    /// factor for the uncertainty of both estimates.
    pub min_benefit_over_cost: f64,
    /// Smallest expected speed-up worth a move. 0.01 (1 %): below the
    /// harm threshold the effect could not be told from noise.
    pub min_gain: f64,
    /// Stickiness: a process numakit already placed moves again only for
    /// this many times `min_gain` and `min_benefit_over_cost`. 1.25: numad's
    /// 5/4 memory bias for bound processes.
    pub stickiness: f64,
    /// No second move of a process within this time. 300 s: numad's
    /// `MIN_DELAY_FOR_REEVALUATION`.
    pub cooldown_s: f64,
    /// Global budget of pages migrated per second (4 KiB pages). 65536
    /// (256 MiB/s): kernel NUMA balancing's default `scan_size_mb` 256 per
    /// `scan_delay_ms` 1000 bounds its own sampling to the same rate.
    pub pages_per_s: u64,
    /// Bytes per page for the budget and the actions. 4096.
    pub page_bytes: u64,
    /// Pin processes where they already run (no pages to move) when the
    /// observed scheduler drift makes a later remote placement likely.
    pub pin_in_place: bool,
    /// Prior for the drift rate (moves of an unbound process's threads to
    /// another node, per process-hour), weighted as `drift_prior_weight_s`
    /// of observation.
    /// 1 per hour: an assumption, replaced by the observed rate as scans
    /// accumulate.
    pub drift_prior_per_hour: f64,
    /// Wait this long after a move (after its pages have moved) before
    /// judging it. 60 s: four scans.
    pub settle_s: f64,
    /// Revert when progress fell by more than this share. 0.03: the low end
    /// of the Dell spread; a smaller loss is within the noise of one window.
    pub harm_threshold: f64,
    /// After a revert, leave the process alone this long. 3600 s.
    pub leave_alone_s: f64,
    /// After this many reverts of one command name, leave the name alone.
    /// 3.
    pub comm_harm_limit: u32,
    /// ... for this long. 86400 s (a day).
    pub comm_leave_alone_s: f64,

    // The numbers below were constants inside `decide` until the rule set
    // was frozen; each is a design choice of the rule that uses it (none
    // was measured or fitted), named here so that every number a decision
    // uses is in one place.
    /// A single-threaded process this busy (CPU use plus run-queue wait)
    /// counts as one whole CPU. 0.5: half a CPU, numad's `CPU_THRESHOLD`;
    /// a busy loop reads 0.6–0.9 CPU in a virtual machine whose hypervisor
    /// steals time the guest does not see.
    pub busy_thread_cpu: f64,
    /// A process is placed only on rates (CPU use, wait, where its threads
    /// ran) over at least this many seconds; with a shorter scan interval
    /// they span several scans. 4: a CPU-time counter read late (a tick
    /// that came late, a virtual CPU the hypervisor did not run) by up to
    /// a second errs by at most a quarter, so a busy thread still reads
    /// above `busy_thread_cpu`; over a one-second window it can read half
    /// or less. Below the default `interval_min_s` (5 s), so the default
    /// scans are not delayed.
    pub min_rate_span_s: f64,
    /// Highest memory-stall share believed from counters. 0.95: a process
    /// is never taken as waiting on memory all the time (the speed-up
    /// formula diverges at 1).
    pub max_stall_share: f64,
    /// A process this much younger than `min_age_s` (as a fraction of it),
    /// but seen for `young_min_scans` scans, may get the options that move
    /// no pages. 0.5: half the age asked of page moves.
    pub young_age_fraction: f64,
    /// ... or seen for at least this many scan intervals, whichever is
    /// sooner. 2: two scans give one CPU-use window.
    pub young_min_scans: f64,
    /// The page budget accrues for at most this many intervals between two
    /// scans (a daemon stopped or starved for a while does not catch up
    /// with a burst). 4: four scans, as `settle_s` is four of numad's.
    pub max_budget_intervals: f64,
    /// CPUs are compared in steps of this many when nodes are ranked by
    /// room (fractions of spread loads must not reorder equals). 0.5.
    pub cpu_room_step: f64,
    /// An earlier placement of numakit's may be undone to make room only
    /// for a process at least this many times its size (no musical chairs
    /// between equals). 4: a quarter of the size.
    pub undo_size_ratio: f64,
    /// CPUs a placement may fall short of its need (or of the room freed
    /// by undoing earlier placements) and still fit: the scheduler absorbs
    /// a quarter CPU. 0.25.
    pub cpu_slack: f64,
    /// Pages moved to a group of nodes go in chunks of at least this many
    /// bytes, so a move is not split into slivers. 64 MiB.
    pub min_chunk_bytes: u64,
    /// Weight of the protection from future scheduler drift in a move's
    /// gain (the drift's loss is expected, not certain to be avoided). 0.5.
    pub drift_protect_weight: f64,
    /// Memory of threads a move displaces is charged this many times (it
    /// must follow them later at the same cost, and they run remote until
    /// it does). 2.
    pub displaced_mem_factor: f64,
    /// The collector's cost, not a rule: a process too small to be a
    /// candidate, whose main thread was too idle at its last reading to have
    /// been busy (`busy_thread_cpu`) over the last window alone, has its
    /// `/proc/PID/schedstat` read again only every this many scans
    /// (staggered by pid); the others at every scan. 4: the kernel prints a
    /// process's `schedstat` in about 1.5 µs (1.7 ms per 1150 processes
    /// kept open, measured on the development VM: 80 % of what `statm`
    /// costs), and a quarter of that keeps a scan of 1000 processes near the
    /// 5 ms it is meant to take; an idle pinned process that turns busy is
    /// then seen within four scans (one minute at numad's 15 s). 1: every
    /// scan.
    pub idle_small_read_every: u32,

    // The numbers below were constants of the history and of the collector
    // (none measured or fitted either); named here for the same reason.
    /// Weight of `drift_prior_per_hour` against the observed drifts, as
    /// seconds of observation. 3600 s: one hour, the prior's own unit.
    pub drift_prior_weight_s: f64,
    /// How far apart two start times of one pid may be and still be the
    /// same process. Start times come from ages in clock ticks and wall
    /// times read at different instants of a scan; a reused pid starts
    /// later than that. 2 s: a margin well above those differences.
    pub same_start_slack_s: f64,
    /// Run times kept per command name, the most recent (what `runs_to_learn`
    /// counts and the horizon learns from). 32: a choice (not measured) that
    /// bounds the history, over ten times `runs_to_learn`.
    pub runs_kept: u32,
    /// Command names whose run times are kept, those that ended most
    /// recently. 512: a choice that bounds the history (at most
    /// 512 × `runs_kept` run times).
    pub comms_with_runs_kept: u32,
    /// The collector uses a candidate's memory per node read from
    /// `numa_maps` again for at most this long, while its resident size
    /// stays within `numa_maps_rss_share`, its threads stay on the same node
    /// and no page of the machine has migrated (`pgmigrate_success` of
    /// `/proc/vmstat` unchanged): pages change node only by allocation (the
    /// resident size moves), migration (numakit's own, the kernel's
    /// AutoNUMA beside `autonuma = "place-cpus"`, compaction, other tools)
    /// or reclaim. 60 s: four scans, as `min_age_s` and `settle_s`.
    pub numa_maps_max_age_s: f64,
    /// See `numa_maps_max_age_s`: the share by which the resident size may
    /// move. 0.05 (5 %): a choice (not measured).
    pub numa_maps_rss_share: f64,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            interval_s: 15.0,
            min_cpu: 0.5,
            min_rss_bytes: 300 * 1_000_000,
            min_age_s: 60.0,
            exclude_pids: Vec::new(),
            exclude_comms: Vec::new(),
            exclude_cgroups: Vec::new(),
            exclude_uids: Vec::new(),
            manage_owner_pinned: false,
            use_cpuless_memory: false,
            mem_margin_bytes: 100 * 1_000_000,
            slit_at: 21,
            ratio_at: 131.0 / 81.0,
            default_stall_share: 0.2,
            migrate_cost_s_per_gib: 1.0,
            max_horizon_s: 3600.0,
            runs_to_learn: 3,
            min_benefit_over_cost: 2.0,
            min_gain: 0.01,
            stickiness: 1.25,
            cooldown_s: 300.0,
            pages_per_s: 65536,
            page_bytes: 4096,
            pin_in_place: true,
            drift_prior_per_hour: 1.0,
            settle_s: 60.0,
            harm_threshold: 0.03,
            leave_alone_s: 3600.0,
            comm_harm_limit: 3,
            comm_leave_alone_s: 86400.0,
            busy_thread_cpu: 0.5,
            min_rate_span_s: 4.0,
            max_stall_share: 0.95,
            young_age_fraction: 0.5,
            young_min_scans: 2.0,
            max_budget_intervals: 4.0,
            cpu_room_step: 0.5,
            undo_size_ratio: 4.0,
            cpu_slack: 0.25,
            min_chunk_bytes: 64 << 20,
            drift_protect_weight: 0.5,
            displaced_mem_factor: 2.0,
            idle_small_read_every: 4,
            drift_prior_weight_s: 3600.0,
            same_start_slack_s: 2.0,
            runs_kept: 32,
            comms_with_runs_kept: 512,
            numa_maps_max_age_s: 60.0,
            numa_maps_rss_share: 0.05,
        }
    }
}

impl Config {
    /// Reads a TOML configuration (missing fields take their defaults).
    pub fn from_toml(text: &str) -> Result<Self, toml::de::Error> {
        toml::from_str(text)
    }
}
