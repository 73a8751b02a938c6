//! Which arm a job gets: a pure function of the experiment, its secret
//! key, the unit's names (cluster, job or host, period) and what the job
//! asked for. Reproducible (anyone with the key recomputes every
//! assignment), balanced by the arms' shares in expectation, and neither
//! guessable nor choosable by users who cannot read the key.
//!
//! The draw is HMAC-SHA256 (RFC 2104) keyed with the key file's bytes
//! over the fields below joined by NUL bytes; its first 8 bytes, read
//! big-endian, are `u` in [0, 2^64), and the arm is the one whose share
//! interval holds `u * total / 2^64`:
//!
//! ```text
//! numakit-arm/1 NUL EXPERIMENT NUL CLUSTER NUL job NUL JOB_ID
//! numakit-arm/1 NUL EXPERIMENT NUL CLUSTER NUL host NUL HOST
//! numakit-arm/1 NUL EXPERIMENT NUL CLUSTER NUL host-period NUL HOST NUL PERIOD
//! ```
//!
//! HMAC-SHA256 rather than SipHash: the key is the file as it is (any
//! length, no format to get wrong), and any language's standard library
//! recomputes an assignment (Python: `hmac.new(key, msg, "sha256")`),
//! which an analyst auditing an experiment needs; a draw per job start
//! costs a microsecond either way. The experiment's name is hashed too,
//! so two experiments on one farm draw independently.

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use super::design::{ArmKind, Assignment, Design};
use super::record::{ArmSource, Unit};
use crate::batch::JobMode;

/// The first field of every hashed message: a new version changes every
/// assignment, so it is never changed within one experiment.
pub const DOMAIN: &str = "numakit-arm/1";

/// The names of the unit being assigned.
#[derive(Debug, Clone, PartialEq)]
pub struct Subject<'a> {
    /// The cluster's name (the design's `cluster=`, else the batch
    /// system's; `None` when neither says).
    pub cluster: Option<&'a str>,
    /// The job id as the batch system writes it.
    pub job: &'a str,
    /// This host's short name.
    pub host: &'a str,
    /// When the step starts, seconds since the epoch.
    pub start_unix: f64,
}

/// The draw `u` for a message of `fields`, keyed with `key`.
pub fn draw(key: &[u8], fields: &[&str]) -> u64 {
    // new_from_slice accepts keys of any length (HMAC hashes long ones).
    let Ok(mut mac) = <Hmac<Sha256> as KeyInit>::new_from_slice(key) else { return 0 };
    for (i, f) in fields.iter().enumerate() {
        if i > 0 {
            mac.update(&[0]);
        }
        mac.update(f.as_bytes());
    }
    let out = mac.finalize().into_bytes();
    let mut first = [0u8; 8];
    first.copy_from_slice(&out[..8]);
    u64::from_be_bytes(first)
}

/// The arm `u` falls in: the arms' shares laid end to end on [0, total),
/// `u * total / 2^64` (no modulo bias beyond total / 2^64).
pub fn pick(shares: &[u32], u: u64) -> usize {
    let total: u64 = shares.iter().map(|s| u64::from(*s)).sum();
    let x = ((u128::from(u) * u128::from(total)) >> 64) as u64;
    let mut end = 0u64;
    for (i, s) in shares.iter().enumerate() {
        end += u64::from(*s);
        if x < end {
            return i;
        }
    }
    shares.len().saturating_sub(1)
}

/// The hashed fields of `subject`'s unit in `design` (see the module's
/// text), and the period index with a host-period unit.
pub fn fields(design: &Design, cluster: &str, subject: &Subject<'_>) -> (Vec<String>, Option<u64>) {
    let mut f = vec![DOMAIN.to_string(), design.name.clone(), cluster.to_string()];
    let mut period = None;
    match design.unit {
        Unit::Job => f.extend(["job".to_string(), subject.job.to_string()]),
        Unit::Host => f.extend(["host".to_string(), subject.host.to_string()]),
        Unit::HostPeriod => {
            let len = design.period.map_or(1, |p| p.as_secs().max(1));
            let p = subject.start_unix.max(0.0) as u64 / len;
            period = Some(p);
            f.extend(["host-period".to_string(), subject.host.to_string(), p.to_string()]);
        }
    }
    (f, period)
}

/// The arm index `subject` draws in `design` with `key`, and the period.
pub fn arm_index(design: &Design, key: &[u8], cluster: &str, subject: &Subject<'_>) -> (usize, Option<u64>) {
    let (f, period) = fields(design, cluster, subject);
    let refs: Vec<&str> = f.iter().map(String::as_str).collect();
    let shares: Vec<u32> = design.arms.iter().map(|a| a.share).collect();
    (pick(&shares, draw(key, &refs)), period)
}

/// Why an experiment does not run now, or `None` when it does: past its
/// `until=` at `now`, or its `stop=` file present (`stop_present`).
pub fn stopped(design: &Design, now: f64, stop_present: bool) -> Option<String> {
    if let Some(u) = design.until.filter(|u| now >= *u as f64) {
        return Some(format!("experiment {}: ended at {}", design.name, crate::units::utc_rfc3339(u)));
    }
    if stop_present {
        let f = design.stop.as_ref().map_or_else(String::new, |p| crate::text::path(p));
        return Some(format!("experiment {}: stopped by the site ({f} exists)", design.name));
    }
    None
}

/// What the job runs with. `design` is the site's experiment (if any),
/// `key` its key file's bytes or why they could not be read, `stop` why
/// it does not run now ([`stopped`]), `chosen` the mode the job asked for
/// (it always wins, and is kept out of the comparison), `default` the
/// site's. Never fails: a broken experiment is the site's default, with
/// the reason returned for the log (once).
pub fn assign(
    design: Option<&Design>,
    key: Result<&[u8], String>,
    stop: Option<String>,
    chosen: Option<&JobMode>,
    default: &JobMode,
    subject: &Subject<'_>,
) -> (Assignment, Option<String>) {
    let plain = |source: ArmSource, mode: &JobMode| Assignment::plain(source, mode, None);
    let fallback = |why: Option<String>| match chosen {
        Some(m) => (plain(ArmSource::Chosen, m), why),
        None => (plain(ArmSource::Default, default), why),
    };
    let Some(d) = design else { return fallback(None) };
    if let Some(why) = stop {
        return fallback(Some(why));
    }
    let Some(cluster) = d.cluster.as_deref().or(subject.cluster) else {
        return fallback(Some(format!(
            "experiment {}: the batch system names no cluster: give cluster=NAME; jobs get the site's default",
            d.name
        )));
    };
    let key = match key {
        Ok(k) => k,
        Err(e) => return fallback(Some(format!("experiment {}: {e}; jobs get the site's default", d.name))),
    };
    let (i, period) = arm_index(d, key, cluster, subject);
    let arm = &d.arms[i];
    let (mode, daemon) = match &arm.kind {
        ArmKind::Mode(m) => (m.clone(), None),
        ArmKind::Daemon(on) => (default.clone(), Some(*on)),
    };
    let (arm_label, source, mode) = match chosen {
        Some(m) => (m.to_string(), ArmSource::Chosen, m.clone()),
        None => (arm.label.clone(), ArmSource::Assigned, mode),
    };
    let a = Assignment {
        experiment: Some(d.name.clone()),
        unit: Some(d.unit),
        period,
        arm: arm_label,
        source,
        arms: Some(d.arms_spec()),
        mode,
        daemon,
        class: None,
    };
    (a, None)
}

/// Why the host's daemon must only decide and log at `now` in a daemon
/// experiment (this host's arm for the period `now` falls in is
/// `daemon-off`), or `None` when it acts as its settings say (arm
/// `daemon-on`, the experiment stopped, or not a daemon experiment).
pub fn daemon_off(design: &Design, key: &[u8], host: &str, now: f64, stop_present: bool) -> Option<String> {
    let cluster = design.cluster.as_deref()?;
    if !design.daemon_arms() || stopped(design, now, stop_present).is_some() {
        return None;
    }
    let s = Subject { cluster: Some(cluster), job: "", host, start_unix: now };
    let (i, period) = arm_index(design, key, cluster, &s);
    let off = matches!(design.arms[i].kind, ArmKind::Daemon(false));
    let when = period.map_or_else(String::new, |p| format!(" in period {p}"));
    off.then(|| {
        format!(
            "experiment {}: this host's arm is {}{when}: deciding and logging only",
            design.name, design.arms[i].label
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn design(words: &str) -> Design {
        Design::from_words(&words.split_whitespace().collect::<Vec<_>>()).unwrap().unwrap()
    }

    fn subject<'a>(job: &'a str, host: &'a str, start: f64) -> Subject<'a> {
        Subject { cluster: Some("farm"), job, host, start_unix: start }
    }

    const KEY: &[u8] = b"0123456789abcdef0123456789abcdef";

    #[test]
    fn the_draw_is_rfc_4231_hmac_sha256() {
        // RFC 4231 test case 2: key "Jefe", data "what do ya want for nothing?".
        assert_eq!(draw(b"Jefe", &["what do ya want for nothing?"]), 0x5bdc_c146_bf60_754e);
        // Fields are joined by NUL bytes.
        assert_eq!(draw(KEY, &["a", "b"]), draw(KEY, &["a\0b"]));
        assert_ne!(draw(KEY, &["ab"]), draw(KEY, &["a", "b"]));
        // What an analyst recomputes, here with Python's standard library:
        // int.from_bytes(hmac.new(KEY, b"\0".join([b"numakit-arm/1", b"q", b"farm", b"job", b"42"]),
        //                "sha256").digest()[:8], "big")
        assert_eq!(draw(KEY, &["numakit-arm/1", "q", "farm", "job", "42"]), 0xd6af_fdc2_803a_7b20);
    }

    #[test]
    fn pick_lays_the_shares_end_to_end() {
        assert_eq!(pick(&[1, 1], 0), 0);
        assert_eq!(pick(&[1, 1], (1 << 63) - 1), 0);
        assert_eq!(pick(&[1, 1], 1 << 63), 1);
        assert_eq!(pick(&[1, 1], u64::MAX), 1);
        assert_eq!(pick(&[2, 1], u64::MAX / 3 * 2 - 10), 0);
        assert_eq!(pick(&[2, 1], u64::MAX / 3 * 2 + 10), 1);
        assert_eq!(pick(&[1, 2, 1], u64::MAX / 2), 1);
    }

    #[test]
    fn jobs_are_balanced_by_share_and_reproducible() {
        let d = design("experiment=q arms=auto:3,none:1 key=/k");
        let mut counts = [0u32; 2];
        for job in 0..20_000 {
            let id = job.to_string();
            let (a, note) = assign(Some(&d), Ok(KEY), None, None, &JobMode::None, &subject(&id, "wn1", 0.0));
            assert_eq!(note, None);
            assert_eq!(a.source, ArmSource::Assigned);
            assert_eq!(a.experiment.as_deref(), Some("q"));
            assert_eq!(a.arms.as_deref(), Some("auto:3,none:1"));
            counts[usize::from(a.arm == "none")] += 1;
            // Every step of the job, on any host, at any time: the same arm.
            let (b, _) = assign(Some(&d), Ok(KEY), None, None, &JobMode::None, &subject(&id, "wn9", 9e9));
            assert_eq!(a, b);
        }
        // 3:1 of 20000: 15000 expected, sd sqrt(20000 * 3/4 * 1/4) = 61.
        assert!((14_700..=15_300).contains(&counts[0]), "{counts:?}");
        // Another key or experiment name: another assignment for many jobs.
        let other = design("experiment=r arms=auto:3,none:1 key=/k");
        let same = (0..1000)
            .filter(|j| {
                let id = j.to_string();
                let s = subject(&id, "h", 0.0);
                arm_index(&d, KEY, "farm", &s) == arm_index(&other, KEY, "farm", &s)
            })
            .count();
        assert!((500..=750).contains(&same), "independent draws agree 62.5% of the time: {same}");
    }

    #[test]
    fn hosts_and_periods() {
        let d = design("experiment=s arms=daemon-on,daemon-off unit=host-period period=6h key=/k cluster=c");
        let s = |host, t| Subject { cluster: None, job: "1", host, start_unix: t };
        let (a, _) = assign(Some(&d), Ok(KEY), None, None, &JobMode::Auto, &s("wn1", 21_600.0 * 10.0 + 5.0));
        assert_eq!(a.period, Some(10));
        assert_eq!(a.mode, JobMode::Auto, "a daemon arm keeps the site's default mode");
        assert_eq!(a.daemon, Some(a.arm == "daemon-on"));
        // Within one period every job of the host draws alike; over many periods both arms come.
        let (b, _) = assign(Some(&d), Ok(KEY), None, None, &JobMode::Auto, &s("wn1", 21_600.0 * 11.0 - 1.0));
        assert_eq!((a.arm.as_str(), a.period), (b.arm.as_str(), b.period));
        let arms: std::collections::BTreeSet<String> = (0..40)
            .map(|p| assign(Some(&d), Ok(KEY), None, None, &JobMode::Auto, &s("wn1", 21_600.0 * p as f64)).0.arm)
            .collect();
        assert_eq!(arms.len(), 2);
        // The recomputation a site's analyst makes.
        let (f, period) = fields(&d, "c", &s("wn1", 21_600.0 * 10.0));
        assert_eq!(f, ["numakit-arm/1", "s", "c", "host-period", "wn1", "10"]);
        assert_eq!(period, Some(10));
        let h = design("experiment=h arms=auto,none unit=host key=/k");
        assert_eq!(fields(&h, "farm", &subject("7", "wn2", 0.0)).0, ["numakit-arm/1", "h", "farm", "host", "wn2"]);
    }

    #[test]
    fn the_daemon_is_off_in_the_periods_its_host_draws_off() {
        let d = design("experiment=s arms=daemon-on,daemon-off unit=host-period period=1h key=/k cluster=c stop=/s");
        let mut offs = 0;
        for p in 0..200u64 {
            let t = p as f64 * 3600.0 + 10.0;
            let s = Subject { cluster: None, job: "", host: "wn1", start_unix: t };
            let (a, _) = assign(Some(&d), Ok(KEY), None, None, &JobMode::Auto, &s);
            let off = daemon_off(&d, KEY, "wn1", t, false);
            // The daemon and the jobs' records agree on the host's arm.
            assert_eq!(off.is_some(), a.arm == "daemon-off", "period {p}");
            if let Some(w) = off {
                assert!(w.contains(&format!("daemon-off in period {p}")), "{w}");
                offs += 1;
                assert_eq!(daemon_off(&d, KEY, "wn1", t, true), None, "stopped by the site: it acts");
            }
        }
        assert!((70..=130).contains(&offs), "half the periods off: {offs}");
        let modes = design("experiment=m arms=auto,none unit=host key=/k cluster=c");
        assert_eq!(daemon_off(&modes, KEY, "wn1", 0.0, false), None, "not the daemon's experiment");
    }

    #[test]
    fn chosen_wins_and_a_broken_or_stopped_experiment_is_the_default() {
        let d = design("experiment=q arms=auto,none key=/k until=2027-01-01 stop=/etc/numakit/stop");
        let s = subject("42", "wn1", 0.0);
        let (a, _) = assign(Some(&d), Ok(KEY), None, Some(&JobMode::Local), &JobMode::None, &s);
        assert_eq!((a.arm.as_str(), a.source, &a.mode), ("local", ArmSource::Chosen, &JobMode::Local));
        assert_eq!(a.experiment.as_deref(), Some("q"), "chosen within a running experiment");
        assert_eq!(a.arms.as_deref(), Some("auto:1,none:1"));
        let (a, why) = assign(Some(&d), Err("key /k: missing".into()), None, None, &JobMode::None, &s);
        assert_eq!((a.arm.as_str(), a.source, a.experiment, a.arms), ("none", ArmSource::Default, None, None));
        assert_eq!(why.as_deref(), Some("experiment q: key /k: missing; jobs get the site's default"));
        let no_cluster = Subject { cluster: None, ..s.clone() };
        let (a, why) = assign(Some(&d), Ok(KEY), None, None, &JobMode::Auto, &no_cluster);
        assert_eq!(a.source, ArmSource::Default);
        assert!(why.is_some_and(|w| w.contains("cluster=NAME")));
        // Stopped by date, by file.
        let end = 1_798_761_600.0;
        assert_eq!(stopped(&d, end - 1.0, false), None);
        assert_eq!(stopped(&d, end, false).as_deref(), Some("experiment q: ended at 2027-01-01T00:00:00Z"));
        let w = stopped(&d, 0.0, true).unwrap();
        assert!(w.contains("/etc/numakit/stop exists"), "{w}");
        let (a, _) = assign(Some(&d), Ok(KEY), Some(w), Some(&JobMode::Auto), &JobMode::None, &s);
        assert_eq!((a.source, a.experiment), (ArmSource::Chosen, None));
        // No experiment at all.
        let (a, why) = assign(None, Err(String::new()), None, None, &JobMode::Interleave, &s);
        assert_eq!((a.arm.as_str(), a.source, why), ("interleave", ArmSource::Default, None));
    }
}
