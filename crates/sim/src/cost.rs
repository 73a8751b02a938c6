//! The cost model, from published figures (sources in docs/simulate.md):
//!
//! * access-time ratio remote/local: Intel MLC on a 2-socket Xeon, 131 vs
//!   81 ns idle latency (1.62×); Dell's measurements: "about 1.5×";
//! * bandwidth remote/local: MLC 51 vs 108 GB/s (0.47); Dell: about half;
//! * per-job slowdown with all memory remote on that reference machine:
//!   3 % to 50 % (the SPEC CPU2006 spread in the Dell paper). A job's share
//!   of time stalled on memory at local speed is `slowdown / (1.62 - 1)`;
//! * migration: ~1 GiB/s for `migrate_pages` / `move_pages` (600–750 MB/s
//!   measured in 2009, batched TLB flushing +292 % pages/s in Linux 6.3),
//!   charged as if the whole process waited;
//! * contention: a memory node whose demanded bandwidth (remote traffic
//!   weighted by 1 / the bandwidth ratio) exceeds its bandwidth stretches
//!   every access to it by demand / bandwidth.
//!
//! Time per unit of work, relative to all-local and uncontended:
//! `(1 - s) + s × Σ w_ab × latency_ab × contention_b`, where `w_ab` is the
//! share of accesses from CPU node `a` to memory node `b`.

use serde::Serialize;

/// The model's constants.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CostModel {
    /// Remote/local access-time ratio of the reference 2-socket machine.
    pub ref_latency_ratio: f64,
    /// Remote/local bandwidth of the reference machine.
    pub ref_bw_ratio: f64,
    /// Seconds of a process's progress lost per GiB migrated.
    pub migrate_s_per_gib: f64,
    /// Seconds lost per GiB scanned by NUMA hinting faults (AutoNUMA):
    /// 0.5 µs per 4 KiB page, an assumption (no published per-fault cost
    /// was found).
    pub hint_fault_s_per_gib: f64,
    /// Memory bandwidth a thread demands at full speed per unit of stall
    /// share, GB/s (a fully memory-bound thread streams ~6 GB/s, about a
    /// STREAM single-thread figure on a recent Xeon).
    pub bw_per_stall_gbs: f64,
}

impl Default for CostModel {
    fn default() -> Self {
        Self {
            ref_latency_ratio: 131.0 / 81.0,
            ref_bw_ratio: 51.0 / 108.0,
            migrate_s_per_gib: 1.0,
            hint_fault_s_per_gib: 0.5e-6 * f64::from(1u32 << 18),
            bw_per_stall_gbs: 6.0,
        }
    }
}

impl CostModel {
    /// Share of time stalled on memory (at local speed) of a job that slows
    /// down by `remote_slowdown` with all memory remote on the reference
    /// machine.
    pub fn stall_share(&self, remote_slowdown: f64) -> f64 {
        (remote_slowdown / (self.ref_latency_ratio - 1.0)).clamp(0.0, 1.0)
    }

    /// Time per unit of work relative to local and uncontended, for stall
    /// share `s` and effective access ratio `m` (≥ 1).
    pub fn time_factor(&self, s: f64, m: f64) -> f64 {
        (1.0 - s) + s * m
    }

    /// Speed (work per CPU-second) for stall share `s` and ratio `m`.
    pub fn speed(&self, s: f64, m: f64) -> f64 {
        1.0 / self.time_factor(s, m)
    }

    /// Share of cycles a counter would see stalled on memory.
    pub fn observed_stall(&self, s: f64, m: f64) -> f64 {
        s * m / self.time_factor(s, m)
    }

    /// Contention factor of a memory node: demand / bandwidth, at least 1.
    pub fn contention(&self, demand_gbs: f64, bw_gbs: f64) -> f64 {
        if bw_gbs <= 0.0 {
            1.0
        } else {
            (demand_gbs / bw_gbs).max(1.0)
        }
    }

    /// Seconds lost moving `bytes`.
    pub fn migrate_s(&self, bytes: f64) -> f64 {
        bytes / f64::from(1u32 << 30) * self.migrate_s_per_gib
    }
}
