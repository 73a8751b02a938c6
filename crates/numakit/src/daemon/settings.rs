//! The daemon's configuration file (TOML): where it keeps its state, log
//! and control socket, how often it scans, which processes it may manage,
//! which CPUs it keeps for the system, how it lives with kernel AutoNUMA,
//! and the decision core's thresholds under `[decide]`
//! ([`Config`](super::Config)).
//!
//! ```toml
//! interval_min_s = 5          # numad -i MIN:MAX
//! interval_max_s = 15
//! reserved_cpus = "0"         # numad -R
//! autonuma = "place-cpus"     # or "defer" or "disable"
//! include_comms = []          # when non-empty, only these are managed
//! ctl_group = "numakit"       # besides root, who may use `numakit ctl`
//! [decide]
//! min_rss_bytes = 300000000
//! exclude_comms = ["geant4"]
//! ```
//!
//! Every field may be left out; [`Settings::validate`] checks the values
//! and names the bad one in a one-line error.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::action::ActionKind;
use super::config::Config;
use crate::sets::CpuSet;

/// How the daemon lives with the kernel's automatic NUMA balancing
/// (`kernel.numa_balancing`). Two controllers must never move the same
/// pages: the kernel cannot be told to skip one process, so while it
/// balances the daemon leaves page migration to it, steps back altogether,
/// or turns it off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum AutonumaMode {
    /// While the kernel balances (bit 0 of `numa_balancing`, or bit 1,
    /// memory tiering, when the daemon may use CPU-less memory nodes), the
    /// daemon places CPUs only: it binds and reverts affinity as decided and
    /// never migrates a page. The kernel's hinting faults then see the
    /// accesses come from the bound node and move the pages there; its
    /// scheduler can no longer take the threads away from them. While the
    /// kernel does not balance, the daemon places CPUs and pages. Checked
    /// at every scan.
    #[default]
    PlaceCpus,
    /// While the kernel balances, the daemon decides and logs but changes
    /// nothing ("deferred"). Checked at every scan.
    Defer,
    /// Turn the kernel's balancing off at start (value recorded in the
    /// state file) and put the original value back on exit, also after a
    /// crash at the next start.
    Disable,
}

/// What the daemon may do in one scan, beside the kernel's balancing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Coexistence {
    /// Place CPUs and pages: the kernel does not balance.
    Full,
    /// Bind and revert CPUs, migrate no page: the kernel balances (why).
    CpusOnly(String),
    /// Change nothing: the kernel balances and the mode is `defer` (why).
    Deferred(String),
}

/// The note of a migration not done because the kernel balances.
pub const LEFT_TO_KERNEL: &str = "left to the kernel's NUMA balancing";

impl Coexistence {
    /// Why an action that changes something must not be applied in this
    /// scan, or None: a deferring daemon applies nothing, one that places
    /// CPUs only applies binds and reverts (affinity) and no migration.
    pub fn refuses(&self, kind: &ActionKind) -> Option<String> {
        match (self, kind) {
            (Coexistence::Deferred(why), _) => Some(why.clone()),
            (Coexistence::CpusOnly(_), ActionKind::Migrate { .. }) => Some(LEFT_TO_KERNEL.into()),
            _ => None,
        }
    }
}

/// What [`AutonumaMode`] allows when `kernel.numa_balancing` reads
/// `numa_balancing` (None: no such file, a kernel without NUMA balancing).
/// Bit 1 (memory tiering) counts only when the daemon may place memory on
/// CPU-less nodes, the only pages tiering moves.
pub fn coexistence(mode: AutonumaMode, numa_balancing: Option<u64>, use_cpuless_memory: bool) -> Coexistence {
    let Some(v) = numa_balancing else { return Coexistence::Full };
    if v & 1 == 0 && !(v & 2 != 0 && use_cpuless_memory) {
        return Coexistence::Full;
    }
    match mode {
        AutonumaMode::PlaceCpus => Coexistence::CpusOnly(format!(
            "kernel AutoNUMA is on (kernel.numa_balancing = {v}): placing CPUs only, the kernel moves the pages"
        )),
        AutonumaMode::Defer => Coexistence::Deferred(format!(
            "kernel AutoNUMA is on (kernel.numa_balancing = {v}): deciding and logging only; set autonuma = \"place-cpus\" \
             or \"disable\", or turn it off, to let numakit place"
        )),
        // Turned off at start; a kernel that balances anyway (someone set
        // it back) is someone else's decision, and both moving pages is
        // what must never happen.
        AutonumaMode::Disable => Coexistence::CpusOnly(format!(
            "kernel AutoNUMA was turned back on (kernel.numa_balancing = {v}): placing CPUs only, the kernel moves the pages"
        )),
    }
}

/// The daemon's settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    /// Shortest time between scans, seconds (after a scan that changed
    /// something). 5: numad's minimum.
    pub interval_min_s: f64,
    /// Longest time between scans, seconds (the interval doubles from
    /// `interval_min_s` while nothing changes). 15: numad's default.
    pub interval_max_s: f64,
    /// Directory of the state file (history, control lists, originals) and
    /// `status.json`.
    pub state_dir: PathBuf,
    /// Decision log, one JSON object per line.
    pub log: PathBuf,
    /// Control socket of `numakit ctl` and `numakit advise`.
    pub socket: PathBuf,
    /// Group (name or number) whose members may use the control socket
    /// besides root. Empty: root only.
    pub ctl_group: String,
    /// CPUs never given to managed processes (numad's `-R`), a CPU list.
    pub reserved_cpus: String,
    /// Kernel AutoNUMA coexistence.
    pub autonuma: AutonumaMode,
    /// When non-empty, only these pids are managed.
    pub include_pids: Vec<i32>,
    /// When non-empty, only these command names are managed.
    pub include_comms: Vec<String>,
    /// When non-empty, only processes in cgroups under these paths.
    pub include_cgroups: Vec<String>,
    /// When non-empty, only processes of these uids.
    pub include_uids: Vec<u32>,
    /// A `numakit bench latency --json` result: measured access-time
    /// ratios used instead of the firmware distances. Empty: none.
    pub bench_latency: PathBuf,
    /// The decision core's thresholds and exclusion lists.
    pub decide: Config,
    /// An experiment on the daemon itself, in the words a site gives the
    /// Slurm plugin (docs/batch.md, Experiments): daemon arms
    /// (`arms=daemon-on:1,daemon-off:1`), a host unit, `cluster=NAME`. In
    /// the periods this host draws `daemon-off` the daemon decides and logs
    /// only. Empty: none.
    pub experiment: String,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            interval_min_s: 5.0,
            interval_max_s: 15.0,
            state_dir: PathBuf::from("/var/lib/numakit"),
            log: PathBuf::from("/var/log/numakit/decisions.jsonl"),
            socket: PathBuf::from("/run/numakit/daemon.sock"),
            ctl_group: String::new(),
            reserved_cpus: String::new(),
            autonuma: AutonumaMode::PlaceCpus,
            include_pids: Vec::new(),
            include_comms: Vec::new(),
            include_cgroups: Vec::new(),
            include_uids: Vec::new(),
            bench_latency: PathBuf::new(),
            decide: Config::default(),
            experiment: String::new(),
        }
    }
}

/// A bad settings file or value, in one line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SettingsError(pub String);

/// Why a configuration file could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file could not be read ([`crate::files::read_named`]'s reason;
    /// callers name the file).
    #[error("{0}")]
    Read(crate::files::Unreadable),
    /// It was read but is not a valid configuration (names the file).
    #[error(transparent)]
    Invalid(#[from] SettingsError),
}

impl Settings {
    /// Reads and checks the configuration file `path` (the one reader of
    /// `--config`, for the daemon, `ctl` and a reload).
    pub fn load(path: &Path) -> Result<Self, LoadError> {
        let text = crate::files::read_named_text(path).map_err(|e| LoadError::Read(e.why))?;
        Ok(Self::from_toml(&text, &path.display().to_string())?)
    }

    /// Parses TOML and validates it; `origin` names the file in errors.
    pub fn from_toml(text: &str, origin: &str) -> Result<Self, SettingsError> {
        let s: Settings = toml::from_str(text).map_err(|e| {
            SettingsError(format!("{origin}: {}", e.message().lines().next().unwrap_or("invalid TOML")))
        })?;
        s.validate().map_err(|e| SettingsError(format!("{origin}: {}", e.0)))?;
        Ok(s)
    }

    /// The reserved CPUs as a set.
    pub fn reserved(&self) -> Result<CpuSet, SettingsError> {
        if self.reserved_cpus.trim().is_empty() {
            return Ok(CpuSet::new());
        }
        CpuSet::parse_list(self.reserved_cpus.trim())
            .map_err(|e| SettingsError(format!("reserved_cpus {:?}: {e}", self.reserved_cpus)))
    }

    /// Checks every value; the error names the field and the value.
    pub fn validate(&self) -> Result<(), SettingsError> {
        let bad =
            |field: &str, v: &dyn std::fmt::Display, why: &str| Err(SettingsError(format!("{field} = {v}: {why}")));
        let min = self.interval_min_s;
        let max = self.interval_max_s;
        if !(min.is_finite() && min >= 0.1) {
            return bad("interval_min_s", &min, "must be at least 0.1 s");
        }
        if !(max.is_finite() && max >= min) {
            return bad("interval_max_s", &max, "must be at least interval_min_s");
        }
        self.reserved()?;
        let d = &self.decide;
        let fractions = [
            ("decide.min_cpu", d.min_cpu, 0.0, 4096.0),
            ("decide.default_stall_share", d.default_stall_share, 0.0, 1.0),
            ("decide.harm_threshold", d.harm_threshold, 0.0, 1.0),
            ("decide.min_gain", d.min_gain, 0.0, 10.0),
            ("decide.ratio_at", d.ratio_at, 1.0, 100.0),
            ("decide.stickiness", d.stickiness, 1.0, 100.0),
            ("decide.min_benefit_over_cost", d.min_benefit_over_cost, 0.0, 1e6),
            ("decide.numa_maps_rss_share", d.numa_maps_rss_share, 0.0, 1.0),
        ];
        for (name, v, lo, hi) in fractions {
            if !(v.is_finite() && (lo..=hi).contains(&v)) {
                return bad(name, &v, &format!("must be between {lo} and {hi}"));
            }
        }
        let times = [
            ("decide.min_age_s", d.min_age_s),
            ("decide.cooldown_s", d.cooldown_s),
            ("decide.settle_s", d.settle_s),
            ("decide.max_horizon_s", d.max_horizon_s),
            ("decide.leave_alone_s", d.leave_alone_s),
            ("decide.comm_leave_alone_s", d.comm_leave_alone_s),
            ("decide.migrate_cost_s_per_gib", d.migrate_cost_s_per_gib),
            ("decide.interval_s", d.interval_s),
            ("decide.same_start_slack_s", d.same_start_slack_s),
            ("decide.numa_maps_max_age_s", d.numa_maps_max_age_s),
            ("decide.min_rate_span_s", d.min_rate_span_s),
        ];
        for (name, v) in times {
            if !(v.is_finite() && v >= 0.0) {
                return bad(name, &v, "must be a number of seconds, 0 or more");
            }
        }
        if !(d.drift_prior_weight_s.is_finite() && d.drift_prior_weight_s > 0.0) {
            return bad("decide.drift_prior_weight_s", &d.drift_prior_weight_s, "must be a number of seconds above 0");
        }
        if d.page_bytes == 0 || !d.page_bytes.is_power_of_two() {
            return bad("decide.page_bytes", &d.page_bytes, "must be a power of two");
        }
        if d.slit_at <= 10 {
            return bad("decide.slit_at", &d.slit_at, "must be above the local distance 10");
        }
        #[cfg(feature = "experiment")]
        self.experiment_design()?;
        #[cfg(not(feature = "experiment"))]
        if !self.experiment.trim().is_empty() {
            return Err(SettingsError(format!(
                "experiment = {:?}: this build of numakit has no experiments (library feature `experiment`)",
                self.experiment
            )));
        }
        Ok(())
    }

    /// The daemon's experiment ([`Settings::experiment`]), checked: daemon
    /// arms, a host unit and the cluster's name (the daemon has no batch
    /// system to name it).
    #[cfg(feature = "experiment")]
    pub fn experiment_design(&self) -> Result<Option<crate::experiment::Design>, SettingsError> {
        let words: Vec<&str> = self.experiment.split_whitespace().collect();
        let bad = |why: String| SettingsError(format!("experiment = {:?}: {why}", self.experiment));
        let Some(d) = crate::experiment::Design::from_words(&words).map_err(bad)? else { return Ok(None) };
        if !d.daemon_arms() {
            return Err(bad("the daemon's arms are daemon-on and daemon-off".into()));
        }
        if d.cluster.is_none() {
            return Err(bad("give cluster=NAME, as the jobs' records name it".into()));
        }
        Ok(Some(d))
    }

    /// Whether a process passes the include lists (every non-empty list
    /// must match).
    pub fn included(&self, pid: i32, comm: &str, cgroup: &str, uid: u32) -> bool {
        (self.include_pids.is_empty() || self.include_pids.contains(&pid))
            && (self.include_comms.is_empty() || self.include_comms.iter().any(|c| c == comm))
            && (self.include_cgroups.is_empty() || self.include_cgroups.iter().any(|c| cgroup_under(cgroup, c)))
            && (self.include_uids.is_empty() || self.include_uids.contains(&uid))
    }
}

/// Whether cgroup path `path` is `prefix` or below it.
pub fn cgroup_under(path: &str, prefix: &str) -> bool {
    let prefix = prefix.trim_end_matches('/');
    prefix.is_empty() || path == prefix || path.strip_prefix(prefix).is_some_and(|rest| rest.starts_with('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn beside_a_balancing_kernel_the_default_places_cpus_and_moves_no_page() {
        use crate::daemon::snapshot::MemPolicy;
        let nodes = |l: &str| crate::sets::NodeSet::parse_list(l).unwrap();
        let bind = ActionKind::Bind { cpu_nodes: nodes("1"), mem_nodes: nodes("") };
        let revert = ActionKind::Revert { cpu_nodes: nodes("0-3"), mem_policy: MemPolicy::Default };
        let migrate = ActionKind::Migrate { from: 0, to: 1, pages: 10 };
        assert_eq!(Settings::default().autonuma, AutonumaMode::PlaceCpus);
        let c = coexistence(AutonumaMode::PlaceCpus, Some(1), false);
        assert!(matches!(&c, Coexistence::CpusOnly(why) if why.contains("numa_balancing = 1")), "{c:?}");
        assert_eq!((c.refuses(&bind), c.refuses(&revert)), (None, None));
        assert_eq!(c.refuses(&migrate).as_deref(), Some(LEFT_TO_KERNEL));
        // Balancing off, absent, or tiering only while CPU-less nodes are
        // not the daemon's: everything, in every mode.
        for mode in [AutonumaMode::PlaceCpus, AutonumaMode::Defer, AutonumaMode::Disable] {
            for (v, cpuless) in [(Some(0), false), (None, false), (Some(2), false)] {
                let c = coexistence(mode, v, cpuless);
                assert_eq!(c, Coexistence::Full, "{mode:?} {v:?}");
                assert_eq!(c.refuses(&migrate), None);
            }
        }
        // Tiering moves pages to and from CPU-less nodes: it counts when the
        // daemon may put memory there.
        assert!(matches!(coexistence(AutonumaMode::PlaceCpus, Some(2), true), Coexistence::CpusOnly(_)));
        // defer: nothing at all.
        let d = coexistence(AutonumaMode::Defer, Some(3), false);
        for k in [&bind, &revert, &migrate] {
            assert!(d.refuses(k).is_some_and(|w| w.contains("numa_balancing = 3")), "{d:?}");
        }
        // disable, with the kernel's balancing turned back on by someone
        // else: never two movers of pages.
        let x = coexistence(AutonumaMode::Disable, Some(1), false);
        assert_eq!((x.refuses(&bind), x.refuses(&migrate).as_deref()), (None, Some(LEFT_TO_KERNEL)));
        // The file's spelling.
        let s = Settings::from_toml("autonuma = \"place-cpus\"", "f").unwrap();
        assert_eq!(s.autonuma, AutonumaMode::PlaceCpus);
    }

    #[test]
    fn defaults_and_sections() {
        let s = Settings::from_toml("", "f").unwrap();
        assert_eq!(s, Settings::default());
        let s = Settings::from_toml(
            "interval_min_s = 2\ninterval_max_s = 8\nreserved_cpus = \"0-1\"\nautonuma = \"disable\"\n\
             [decide]\nmin_rss_bytes = 1000\nexclude_comms = [\"g4\"]\n",
            "f",
        )
        .unwrap();
        assert_eq!(s.interval_max_s, 8.0);
        assert_eq!(s.reserved().unwrap().to_list(), "0-1");
        assert_eq!(s.autonuma, AutonumaMode::Disable);
        assert_eq!(s.decide.min_rss_bytes, 1000);
        assert_eq!(s.decide.exclude_comms, vec!["g4".to_string()]);
        assert_eq!(s.decide.min_cpu, Config::default().min_cpu);
    }

    #[test]
    fn errors_name_the_field_and_value() {
        let e = |t: &str| Settings::from_toml(t, "/etc/numakit.toml").unwrap_err().0;
        assert_eq!(e("interval_min_s = 0"), "/etc/numakit.toml: interval_min_s = 0: must be at least 0.1 s");
        assert!(e("interval_min_s = 10\ninterval_max_s = 5").contains("interval_max_s = 5"));
        assert!(e("reserved_cpus = \"x\"").contains("reserved_cpus \"x\""));
        assert!(e("autonuma = \"maybe\"").contains("maybe"), "{}", e("autonuma = \"maybe\""));
        assert!(e("intervl = 3").contains("intervl"));
        assert!(e("[decide]\nharm_threshold = 2").contains("decide.harm_threshold = 2"));
        assert!(e("[decide]\npage_bytes = 3000").contains("decide.page_bytes = 3000"));
        assert!(e("[decide]\ndrift_prior_weight_s = 0").contains("decide.drift_prior_weight_s = 0"));
        assert!(e("[decide]\nnuma_maps_rss_share = 1.5").contains("decide.numa_maps_rss_share = 1.5"));
        assert!(e("[decide]\nsame_start_slack_s = -1").contains("decide.same_start_slack_s = -1"));
        for t in ["interval_min_s = 0", "[decide]\nmin_cpu = -1", "[decide]\ncooldown_s = -5"] {
            assert!(!e(t).contains('\n'), "{t}");
        }
    }

    #[test]
    #[cfg(feature = "experiment")]
    fn the_daemons_experiment() {
        let ok =
            "experiment = \"experiment=dm arms=daemon-on,daemon-off unit=host-period period=6h key=/k cluster=farm\"";
        let s = Settings::from_toml(ok, "f").unwrap();
        let d = s.experiment_design().unwrap().unwrap();
        assert_eq!((d.name.as_str(), d.cluster.as_deref()), ("dm", Some("farm")));
        assert_eq!(Settings::default().experiment_design().unwrap(), None);
        let e = |t: &str| Settings::from_toml(t, "f").unwrap_err().0;
        for (words, says) in [
            ("experiment=dm arms=auto,none unit=host key=/k cluster=farm", "daemon-on and daemon-off"),
            ("experiment=dm arms=daemon-on,daemon-off unit=host key=/k", "cluster=NAME"),
            ("experiment=dm arms=daemon-on,daemon-off key=/k cluster=c", "use unit=host or host-period"),
            ("experiment=dm arms=daemon-on key=/k", "at least two arms"),
        ] {
            let err = e(&format!("experiment = \"{words}\""));
            assert!(err.starts_with("f: experiment = ") && err.contains(says) && !err.contains('\n'), "{err}");
        }
    }

    #[test]
    fn the_contrib_example_is_valid() {
        let s = Settings::from_toml(include_str!("../../../../contrib/numakit-daemon.toml"), "example").unwrap();
        assert_eq!(s.decide.exclude_cgroups, vec!["/system.slice".to_string()]);
        assert_eq!(s.decide.min_rss_bytes, Config::default().min_rss_bytes);
        // The package installs it: its mode is the packaged default.
        assert_eq!(s.autonuma, AutonumaMode::PlaceCpus);
    }

    #[test]
    fn include_lists() {
        let mut s = Settings::default();
        assert!(s.included(5, "x", "/a", 0));
        s.include_comms = vec!["reco".into()];
        s.include_cgroups = vec!["/batch/".into()];
        assert!(s.included(5, "reco", "/batch/job1", 0));
        assert!(!s.included(5, "reco", "/batchx/job1", 0));
        assert!(!s.included(5, "sim", "/batch/job1", 0));
        assert!(cgroup_under("/a/b", "/a") && cgroup_under("/a", "/a") && !cgroup_under("/ab", "/a"));
    }
}
