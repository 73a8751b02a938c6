//! An experiment as a site writes it: the words after the plugin in
//! Slurm's `plugstack.conf`, or in the wrappers' `NUMAKIT_EXPERIMENT`
//! (the same words in both):
//!
//! ```text
//! experiment=numa-q4 arms=auto:1,none:1 unit=job key=/etc/numakit/experiment.key
//! experiment=dm arms=daemon-on:1,daemon-off:1 unit=host-period period=6h key=... cluster=farm
//! ```
//!
//! Parsing only ([`Design::from_words`]): every error is one line naming
//! the word as written. Which arm a job gets is [`super::assign`]'s.

use std::path::PathBuf;
use std::time::Duration;

use super::record::{ArmSource, Unit};
use crate::batch::JobMode;

/// The words that belong to an experiment (`NAME=...`); the rest of a
/// plugin's arguments are the site's placement settings.
pub const WORDS: [&str; 8] = ["experiment", "arms", "unit", "period", "key", "until", "stop", "cluster"];

/// What an arm does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArmKind {
    /// Jobs are placed in this mode (`auto`, `none`, `local`, `interleave`).
    Mode(JobMode),
    /// The host's `numakit daemon` acts (`daemon-on`) or only observes
    /// (`daemon-off`); jobs get the site's default mode. Host units only.
    Daemon(bool),
}

/// One arm and its share.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arm {
    /// Its name as written (`auto`, `daemon-off`): the record's `arm`.
    pub label: String,
    /// What it does.
    pub kind: ArmKind,
    /// Its weight: an arm of share 2 gets twice the units of one of share 1.
    pub share: u32,
}

/// An experiment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Design {
    /// Its name (`experiment=`): letters, digits, `.`, `_`, `-`.
    pub name: String,
    /// Its arms (at least two, all modes or all daemon arms).
    pub arms: Vec<Arm>,
    /// What is randomized (`unit=`, default `job`).
    pub unit: Unit,
    /// With `unit=host-period`: how long one period lasts.
    pub period: Option<Duration>,
    /// The secret key's file (`key=`).
    pub key: PathBuf,
    /// Jobs starting at or after this time (seconds since the epoch, UTC)
    /// get the site's default (`until=`).
    pub until: Option<u64>,
    /// While this file exists, jobs get the site's default (`stop=`).
    pub stop: Option<PathBuf>,
    /// The cluster's name where the batch system does not say it (the
    /// wrappers, the daemon); it wins over the batch system's (`cluster=`).
    pub cluster: Option<String>,
}

/// What a job runs with, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assignment {
    /// The experiment that ran (`None`: none, or stopped).
    pub experiment: Option<String>,
    /// Its unit.
    pub unit: Option<Unit>,
    /// With a host-period unit, the period's index.
    pub period: Option<u64>,
    /// The arm: a mode as typed, or a daemon arm's label.
    pub arm: String,
    /// How the arm was set.
    pub source: ArmSource,
    /// The experiment's arms and shares ([`Design::arms_spec`]), the
    /// record's `arms`; `None` when no experiment ran.
    pub arms: Option<String>,
    /// The mode the job's tasks are placed with.
    pub mode: JobMode,
    /// With a daemon arm: whether the host's daemon acts.
    pub daemon: Option<bool>,
    /// The job's class, where a policy rule matched it.
    pub class: Option<String>,
}

/// The largest share an arm may have (shares are weights, not counts).
pub const MAX_SHARE: u32 = 1000;

impl Assignment {
    /// An assignment outside any experiment: `mode`, set by `source`, of
    /// `class` where a policy's rule gave one.
    pub fn plain(source: ArmSource, mode: &JobMode, class: Option<&str>) -> Assignment {
        Assignment {
            experiment: None,
            unit: None,
            period: None,
            arm: mode.to_string(),
            source,
            arms: None,
            mode: mode.clone(),
            daemon: None,
            class: class.map(str::to_string),
        }
    }
}

impl Design {
    /// Whether `word` (`key=...`) is one of an experiment's ([`WORDS`]).
    pub fn is_word(word: &str) -> bool {
        word.split_once('=').is_some_and(|(k, _)| WORDS.contains(&k))
    }

    /// Splits a plugin's arguments into the experiment's words and the rest.
    pub fn split_args<S: AsRef<str>>(args: &[S]) -> (Vec<String>, Vec<String>) {
        let (mine, rest): (Vec<String>, Vec<String>) =
            args.iter().map(|a| a.as_ref().to_string()).partition(|a| Design::is_word(a));
        (mine, rest)
    }

    /// Reads an experiment from its words (each `NAME=VALUE`, any order);
    /// `Ok(None)` when there are none. An unknown, repeated, missing or bad
    /// word is an error naming it as written.
    pub fn from_words<S: AsRef<str>>(words: &[S]) -> Result<Option<Design>, String> {
        if words.is_empty() {
            return Ok(None);
        }
        let mut seen: Vec<(&str, &str, &str)> = Vec::new();
        for w in words {
            let w = w.as_ref();
            let Some((k, v)) = w.split_once('=').filter(|(k, _)| WORDS.contains(k)) else {
                return Err(format!(
                    "invalid experiment word {w:?}: use {}",
                    WORDS.map(|k| format!("{k}=")).join(", ")
                ));
            };
            if seen.iter().any(|(sk, _, _)| *sk == k) {
                return Err(format!("invalid experiment word {w:?}: {k}= is given twice"));
            }
            seen.push((k, v, w));
        }
        let get = |k: &str| seen.iter().find(|(sk, _, _)| *sk == k).map(|(_, v, w)| (*v, *w));
        let Some((name, name_w)) = get("experiment") else {
            return Err(format!("{}: an experiment needs experiment=NAME", seen[0].2));
        };
        if name.is_empty() || name.len() > 64 || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
        {
            return Err(format!(
                "invalid experiment word {name_w:?}: a name of 1 to 64 letters, digits, '.', '_' or '-'"
            ));
        }
        let unit = match get("unit") {
            None => Unit::Job,
            Some(("job", _)) => Unit::Job,
            Some(("host", _)) => Unit::Host,
            Some(("host-period", _)) => Unit::HostPeriod,
            Some((_, w)) => return Err(format!("invalid experiment word {w:?}: use unit=job, host or host-period")),
        };
        let period = match (get("period"), unit) {
            (Some((v, w)), Unit::HostPeriod) => {
                let d = crate::units::parse_duration(v).map_err(|e| format!("invalid experiment word {w:?}: {e}"))?;
                if d < Duration::from_secs(1) {
                    return Err(format!("invalid experiment word {w:?}: a period of at least 1 s"));
                }
                Some(d)
            }
            (None, Unit::HostPeriod) => return Err(format!("{name_w}: unit=host-period needs period=DURATION")),
            (Some((_, w)), _) => {
                return Err(format!("invalid experiment word {w:?}: period= goes with unit=host-period"))
            }
            (None, _) => None,
        };
        let Some((arms_v, arms_w)) = get("arms") else {
            return Err(format!("{name_w}: an experiment needs arms=ARM:SHARE,ARM:SHARE"));
        };
        let arms = parse_arms(arms_v, arms_w)?;
        if unit == Unit::Job && arms.iter().any(|a| matches!(a.kind, ArmKind::Daemon(_))) {
            return Err(format!(
                "invalid experiment word {arms_w:?}: daemon arms act on whole hosts: use unit=host or host-period"
            ));
        }
        let key = match get("key") {
            Some((v, _)) if v.starts_with('/') => PathBuf::from(v),
            Some((_, w)) => return Err(format!("invalid experiment word {w:?}: give the key file's absolute path")),
            None => return Err(format!("{name_w}: an experiment needs key=FILE (a secret of at least 16 bytes)")),
        };
        let until = match get("until") {
            Some((v, w)) => {
                Some(crate::units::parse_utc(v).map_err(|e| format!("invalid experiment word {w:?}: {e}"))?)
            }
            None => None,
        };
        let stop = match get("stop") {
            Some((v, _)) if v.starts_with('/') => Some(PathBuf::from(v)),
            Some((_, w)) => return Err(format!("invalid experiment word {w:?}: give an absolute path")),
            None => None,
        };
        let cluster = match get("cluster") {
            Some((v, w)) => {
                if v.is_empty() || v.len() > 64 || v.bytes().any(|b| b.is_ascii_control() || b == b' ') {
                    return Err(format!("invalid experiment word {w:?}: a name of 1 to 64 characters, no spaces"));
                }
                Some(v.to_string())
            }
            None => None,
        };
        Ok(Some(Design { name: name.to_string(), arms, unit, period, key, until, stop, cluster }))
    }

    /// The sum of the arms' shares.
    pub fn total_share(&self) -> u64 {
        self.arms.iter().map(|a| u64::from(a.share)).sum()
    }

    /// The arms with their shares as one word, `auto:2,none:1` (every
    /// share written out, in the site's order): the records' `arms`, from
    /// which `numakit report` checks the assignment's balance.
    pub fn arms_spec(&self) -> String {
        self.arms.iter().map(|a| format!("{}:{}", a.label, a.share)).collect::<Vec<_>>().join(",")
    }

    /// Whether the arms are the daemon's (on or off).
    pub fn daemon_arms(&self) -> bool {
        self.arms.iter().any(|a| matches!(a.kind, ArmKind::Daemon(_)))
    }
}

/// `auto:1,none:1`: at least two arms, each once, all modes or all daemon
/// arms.
fn parse_arms(value: &str, word: &str) -> Result<Vec<Arm>, String> {
    let bad = |why: String| format!("invalid experiment word {word:?}: {why}");
    let mut arms: Vec<Arm> = Vec::new();
    for item in value.split(',') {
        let (label, share) = item.split_once(':').unwrap_or((item, "1"));
        let kind = match label {
            "auto" => ArmKind::Mode(JobMode::Auto),
            "devices" => ArmKind::Mode(JobMode::Devices),
            "none" => ArmKind::Mode(JobMode::None),
            "local" => ArmKind::Mode(JobMode::Local),
            "interleave" => ArmKind::Mode(JobMode::Interleave),
            "daemon-on" => ArmKind::Daemon(true),
            "daemon-off" => ArmKind::Daemon(false),
            _ => {
                return Err(bad(format!(
                    "{label:?} is not an arm (auto, devices, none, local, interleave; daemon-on, daemon-off for host units)"
                )))
            }
        };
        let share: u32 = share
            .parse()
            .ok()
            .filter(|s| (1..=MAX_SHARE).contains(s))
            .ok_or_else(|| bad(format!("share {share:?} of {label}: give a whole number from 1 to {MAX_SHARE}")))?;
        if arms.iter().any(|a| a.label == label) {
            return Err(bad(format!("{label} is given twice")));
        }
        arms.push(Arm { label: label.to_string(), kind, share });
    }
    if arms.len() < 2 {
        return Err(bad("an experiment compares at least two arms".into()));
    }
    let daemon = arms.iter().filter(|a| matches!(a.kind, ArmKind::Daemon(_))).count();
    if daemon != 0 && daemon != arms.len() {
        return Err(bad("arms are all modes or all daemon arms, not both".into()));
    }
    Ok(arms)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<Option<Design>, String> {
        Design::from_words(&s.split_whitespace().collect::<Vec<_>>())
    }

    #[test]
    fn a_per_job_experiment_and_its_defaults() {
        let d = parse("experiment=numa-q4 arms=auto:2,none:1 key=/etc/numakit/experiment.key").unwrap().unwrap();
        assert_eq!(d.name, "numa-q4");
        assert_eq!(d.unit, Unit::Job);
        assert_eq!(
            d.arms,
            vec![
                Arm { label: "auto".into(), kind: ArmKind::Mode(JobMode::Auto), share: 2 },
                Arm { label: "none".into(), kind: ArmKind::Mode(JobMode::None), share: 1 },
            ]
        );
        assert_eq!(d.total_share(), 3);
        assert_eq!(d.arms_spec(), "auto:2,none:1");
        assert_eq!((d.period, d.until, d.stop.as_ref(), d.cluster.as_ref()), (None, None, None, None));
        assert!(!d.daemon_arms());
        // A share may be left out: 1.
        let d = parse("experiment=x arms=local,interleave key=/k").unwrap().unwrap();
        assert_eq!(d.arms.iter().map(|a| a.share).collect::<Vec<_>>(), [1, 1]);
        assert_eq!(d.arms_spec(), "local:1,interleave:1");
        assert_eq!(parse(""), Ok(None));
    }

    #[test]
    fn host_units_periods_and_stops() {
        let d = parse(
            "unit=host-period period=6h experiment=dm arms=daemon-on:1,daemon-off:1 key=/k until=2027-01-01 \
             stop=/etc/numakit/stop cluster=farm",
        )
        .unwrap()
        .unwrap();
        assert_eq!(d.unit, Unit::HostPeriod);
        assert_eq!(d.period, Some(Duration::from_secs(6 * 3600)));
        assert_eq!(d.until, Some(1_798_761_600));
        assert_eq!(d.stop, Some(PathBuf::from("/etc/numakit/stop")));
        assert_eq!(d.cluster.as_deref(), Some("farm"));
        assert!(d.daemon_arms());
        assert_eq!(parse("experiment=h arms=auto,none unit=host key=/k").unwrap().unwrap().unit, Unit::Host);
    }

    #[test]
    fn every_bad_word_is_named_as_written() {
        for (bad, names) in [
            ("experiment=x arms=auto,none key=/k color=red", "\"color=red\""),
            ("experiment=x arms=auto,none", "key=FILE"),
            ("arms=auto,none key=/k", "experiment=NAME"),
            ("experiment=x key=/k", "arms="),
            ("experiment=a/b arms=auto,none key=/k", "\"experiment=a/b\""),
            ("experiment=x arms=auto key=/k", "at least two arms"),
            ("experiment=x arms=auto,fast key=/k", "\"fast\" is not an arm"),
            ("experiment=x arms=auto:0,none key=/k", "share \"0\""),
            ("experiment=x arms=auto:1.5,none key=/k", "share \"1.5\""),
            ("experiment=x arms=auto,auto key=/k", "auto is given twice"),
            ("experiment=x arms=auto,nodes:0 key=/k", "\"nodes\" is not an arm"),
            ("experiment=x arms=daemon-on,daemon-off key=/k", "use unit=host or host-period"),
            ("experiment=x arms=auto,daemon-off unit=host key=/k", "not both"),
            ("experiment=x arms=auto,none unit=rack key=/k", "\"unit=rack\""),
            ("experiment=x arms=auto,none unit=host-period key=/k", "needs period="),
            ("experiment=x arms=auto,none unit=host-period period=soon key=/k", "\"period=soon\""),
            ("experiment=x arms=auto,none period=6h key=/k", "goes with unit=host-period"),
            ("experiment=x arms=auto,none key=etc/k", "\"key=etc/k\""),
            ("experiment=x arms=auto,none key=/k until=tomorrow", "\"until=tomorrow\""),
            ("experiment=x arms=auto,none key=/k stop=stop", "\"stop=stop\""),
            ("experiment=x arms=auto,none key=/k cluster=", "\"cluster=\""),
            ("experiment=x experiment=y arms=auto,none key=/k", "given twice"),
        ] {
            let e = parse(bad).unwrap_err();
            assert!(e.contains(names) && !e.contains('\n'), "{bad}: {e}");
        }
    }

    #[test]
    fn the_experiments_words_are_told_from_the_sites() {
        let args = ["default=auto", "experiment=x", "arms=auto,none", "report=/r", "key=/k", "ledger=/l"];
        let (mine, rest) = Design::split_args(&args);
        assert_eq!(mine, ["experiment=x", "arms=auto,none", "key=/k"]);
        assert_eq!(rest, ["default=auto", "report=/r", "ledger=/l"]);
        assert!(Design::is_word("until=2027-01-01") && !Design::is_word("until") && !Design::is_word("sample=0"));
    }
}
