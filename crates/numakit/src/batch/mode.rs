//! What a job asks for (`--numa=auto|devices|local|interleave|none|nodes:LIST`)
//! and what a site allows ([`Site`]: the plugin's arguments in Slurm's
//! `plugstack.conf`, or a wrapper's options). Parsing only: each error is
//! one line naming the value as it was typed.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use super::ledger::DEFAULT_DIR;
use crate::sets::{numactl::SetSpec, Node};

/// A job's NUMA placement mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobMode {
    /// Each task gets the node(s) `run --auto`'s rules choose, CPUs and
    /// memory bound together; where the batch system bound the task, only
    /// within that binding.
    Auto,
    /// CPUs and memory next to the devices the job was given (its GPUs,
    /// NICs: `batch::devices`), even where they lack idle CPUs; a job
    /// without known devices is placed as `auto`.
    Devices,
    /// Memory from the node the allocating thread runs on
    /// (`--localalloc`); CPUs as the batch system gave them.
    Local,
    /// Memory interleaved over the nodes of the task's CPUs
    /// (`--interleave`); CPUs as given.
    Interleave,
    /// Not placed, and kept out of a running `numakit daemon`'s reach for
    /// the job's lifetime.
    None,
    /// CPUs and memory bound to these nodes (numactl's node syntax, as
    /// typed), within the task's allocation.
    Nodes(String),
}

/// The mode names, as typed and as `allowed=` lists them.
pub const MODE_NAMES: [&str; 6] = ["auto", "devices", "local", "interleave", "none", "nodes"];

impl JobMode {
    /// Reads a mode as typed; the error names the text.
    pub fn parse(text: &str) -> Result<JobMode, String> {
        let t = text.trim();
        let mode = match t {
            "auto" => JobMode::Auto,
            "devices" => JobMode::Devices,
            "local" => JobMode::Local,
            "interleave" => JobMode::Interleave,
            "none" => JobMode::None,
            _ => match t.strip_prefix("nodes:") {
                Some(list) => {
                    SetSpec::<Node>::parse(list).map_err(|e| format!("invalid --numa value {text:?}: {e}"))?;
                    JobMode::Nodes(list.to_string())
                }
                None => {
                    return Err(format!(
                        "invalid --numa value {text:?}: use auto, devices, local, interleave, none or nodes:LIST"
                    ))
                }
            },
        };
        Ok(mode)
    }

    /// The mode's name (`nodes` for any node list).
    pub fn name(&self) -> &'static str {
        match self {
            JobMode::Auto => "auto",
            JobMode::Devices => "devices",
            JobMode::Local => "local",
            JobMode::Interleave => "interleave",
            JobMode::None => "none",
            JobMode::Nodes(_) => "nodes",
        }
    }
}

impl fmt::Display for JobMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JobMode::Nodes(l) => write!(f, "nodes:{l}"),
            m => f.write_str(m.name()),
        }
    }
}

impl FromStr for JobMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        JobMode::parse(s)
    }
}

/// A site's settings for job placement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Site {
    /// The mode of a job that asks for none.
    pub default: JobMode,
    /// The mode names a job may ask for ([`MODE_NAMES`] by default).
    pub allowed: Vec<String>,
    /// The job ledger's folder.
    pub ledger: PathBuf,
    /// The daemon's control socket.
    pub socket: PathBuf,
    /// Without a daemon: how long to sample the CPUs' load before placing
    /// (`None`: only the ledger's placements count as load).
    pub sample: Option<Duration>,
}

impl Default for Site {
    fn default() -> Self {
        Site {
            default: JobMode::None,
            allowed: MODE_NAMES.iter().map(|s| s.to_string()).collect(),
            ledger: PathBuf::from(DEFAULT_DIR),
            socket: crate::daemon::settings::Settings::default().socket,
            sample: None,
        }
    }
}

impl Site {
    /// Reads the site's arguments (`default=MODE`, `allowed=MODE,...`,
    /// `ledger=DIR`, `socket=PATH`, `sample=MS`); an unknown or bad one is
    /// an error naming it as written. The default must itself be allowed.
    pub fn from_args<S: AsRef<str>>(args: &[S]) -> Result<Site, String> {
        let mut site = Site::default();
        let mut default = None;
        for a in args {
            let a = a.as_ref();
            let Some((key, value)) = a.split_once('=') else {
                return Err(format!("invalid argument {a:?}: use default=, allowed=, ledger=, socket= or sample="));
            };
            match key {
                "default" => {
                    default = Some(JobMode::parse(value).map_err(|_| {
                        format!(
                            "invalid argument {a:?}: use default=auto, devices, local, interleave, none or nodes:LIST"
                        )
                    })?)
                }
                "allowed" => {
                    let names: Vec<String> = value.split(',').map(|s| s.trim().to_string()).collect();
                    if let Some(bad) = names.iter().find(|n| !MODE_NAMES.contains(&n.as_str())) {
                        return Err(format!(
                            "invalid argument {a:?}: {bad:?} is not a mode (auto, devices, local, interleave, none, nodes)"
                        ));
                    }
                    site.allowed = names;
                }
                "ledger" if !value.is_empty() => site.ledger = PathBuf::from(value),
                "socket" if !value.is_empty() => site.socket = PathBuf::from(value),
                "sample" => {
                    let ms: u64 = value
                        .parse()
                        .ok()
                        .filter(|ms| *ms <= 10_000)
                        .ok_or_else(|| format!("invalid argument {a:?}: give milliseconds from 0 to 10000"))?;
                    site.sample = (ms > 0).then(|| Duration::from_millis(ms));
                }
                _ => {
                    return Err(format!("invalid argument {a:?}: use default=, allowed=, ledger=, socket= or sample="))
                }
            }
        }
        if let Some(d) = default {
            site.default = d;
        }
        site.check(&site.default).map_err(|e| format!("default={}: {e}", site.default))?;
        Ok(site)
    }

    /// Whether a job may ask for `mode`; the error names it.
    pub fn check(&self, mode: &JobMode) -> Result<(), String> {
        if self.allowed.iter().any(|a| a == mode.name()) {
            Ok(())
        } else {
            Err(format!("--numa={mode} is not allowed on this cluster (allowed: {})", self.allowed.join(", ")))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_as_typed() {
        assert_eq!(JobMode::parse("auto"), Ok(JobMode::Auto));
        assert_eq!(JobMode::parse("devices"), Ok(JobMode::Devices));
        assert_eq!(JobMode::Devices.to_string(), "devices");
        assert_eq!(JobMode::parse("nodes:0-1"), Ok(JobMode::Nodes("0-1".into())));
        assert_eq!(JobMode::parse("nodes:!1"), Ok(JobMode::Nodes("!1".into())));
        assert_eq!(JobMode::Nodes("0,2".into()).to_string(), "nodes:0,2");
        let e = JobMode::parse("bogus").unwrap_err();
        assert!(e.contains("\"bogus\"") && !e.contains('\n'), "{e}");
        assert!(JobMode::parse("nodes:x").unwrap_err().contains("\"nodes:x\""));
        assert!(JobMode::parse("nodes:").is_err());
    }

    #[test]
    fn site_arguments() {
        let s = Site::from_args(&["default=auto", "allowed=auto,none", "sample=20", "ledger=/tmp/l"]).unwrap();
        assert_eq!(s.default, JobMode::Auto);
        assert_eq!(s.allowed, ["auto", "none"]);
        assert_eq!(s.sample, Some(Duration::from_millis(20)));
        assert_eq!(s.ledger, PathBuf::from("/tmp/l"));
        assert!(s.check(&JobMode::None).is_ok());
        let e = s.check(&JobMode::Nodes("1".into())).unwrap_err();
        assert_eq!(e, "--numa=nodes:1 is not allowed on this cluster (allowed: auto, none)");
        assert_eq!(Site::from_args::<&str>(&[]).unwrap().default, JobMode::None);
        for (bad, names) in [
            ("defualt=auto", "\"defualt=auto\""),
            ("allowed=auto,fast", "\"fast\""),
            ("default=sometimes", "\"default=sometimes\""),
            ("sample=-1", "\"sample=-1\""),
            ("verbose", "\"verbose\""),
        ] {
            let e = Site::from_args(&[bad]).unwrap_err();
            assert!(e.contains(names) && !e.contains('\n'), "{bad}: {e}");
        }
        // A default the site does not allow.
        let e = Site::from_args(&["default=auto", "allowed=none"]).unwrap_err();
        assert!(e.starts_with("default=auto: "), "{e}");
    }
}
