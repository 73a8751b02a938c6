//! What a policy rule matches a job on: the facts a batch system knows when
//! the job starts ([`JobFacts`]), and one test per word ([`Matcher`]):
//!
//! | word | matches | example |
//! |---|---|---|
//! | `partition=`, `account=`, `user=`, `qos=`, `name=` | any of a comma list of shell patterns (`*`, `?`, `[...]`) | `name=reco_*,hlt*` |
//! | `cpus=`, `gpus=` | a count in a range: `N`, `N-`, `-N`, `N-M` | `cpus=32-` |
//! | `mem=` | the memory asked for, a size range | `mem=64G-` |
//! | `gres=` | any GRES item asked for (`gpu:a100:2`) matches any pattern | `gres=gpu*` |
//! | `array=` | an array element or not | `array=yes` |
//!
//! A fact the batch system does not give (no QOS, no memory request) never
//! matches: the rule is passed over, and `policy explain` says why.

use super::super::ids::JobIds;

/// What the batch system knows of a job when it starts.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct JobFacts {
    /// Partition or queue.
    pub partition: Option<String>,
    /// Account (project, accounting group).
    pub account: Option<String>,
    /// User.
    pub user: Option<String>,
    /// Quality of service.
    pub qos: Option<String>,
    /// Job name.
    pub job_name: Option<String>,
    /// CPUs the job (on this host) was given.
    pub cpus: Option<u32>,
    /// Memory asked for, bytes.
    pub mem_bytes: Option<u64>,
    /// GPUs asked for.
    pub gpus: Option<u32>,
    /// GRES items asked for, as the batch system writes them (`gpu:a100:2`).
    pub gres: Vec<String>,
    /// Whether it is an element of a job array.
    pub array: Option<bool>,
}

impl JobFacts {
    /// With a Slurm job's environment: its QOS (`SLURM_JOB_QOS`) and GPUs
    /// (`SLURM_GPUS_ON_NODE`, else the ids in `SLURM_JOB_GPUS`), the GPUs
    /// as the GRES item `gpu:N`.
    pub fn with_slurm_env(mut self, var: &dyn Fn(&str) -> Option<String>) -> JobFacts {
        let get = |k: &str| var(k).map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
        self.qos = get("SLURM_JOB_QOS");
        let gpus = get("SLURM_GPUS_ON_NODE")
            .and_then(|v| v.parse().ok())
            .or_else(|| get("SLURM_JOB_GPUS").map(|ids| ids.split(',').count() as u32));
        if let Some(n) = gpus.filter(|n| *n > 0) {
            self.gres.push(format!("gpu:{n}"));
        }
        self.gpus = gpus;
        self
    }

    /// The facts a job's names carry (partition, account, user, name, array).
    pub fn from_ids(ids: &JobIds) -> JobFacts {
        JobFacts {
            partition: ids.partition.clone(),
            account: ids.account.clone(),
            user: ids.user.clone(),
            job_name: ids.job_name.clone(),
            array: Some(ids.array_task.is_some()),
            ..JobFacts::default()
        }
    }
}

/// A field matched by patterns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextField {
    /// `partition=`.
    Partition,
    /// `account=`.
    Account,
    /// `user=`.
    User,
    /// `qos=`.
    Qos,
    /// `name=`.
    Name,
}

impl TextField {
    /// The word's name, and the fact's name in messages.
    pub fn word(self) -> &'static str {
        match self {
            TextField::Partition => "partition",
            TextField::Account => "account",
            TextField::User => "user",
            TextField::Qos => "qos",
            TextField::Name => "name",
        }
    }

    fn get(self, f: &JobFacts) -> Option<&str> {
        match self {
            TextField::Partition => f.partition.as_deref(),
            TextField::Account => f.account.as_deref(),
            TextField::User => f.user.as_deref(),
            TextField::Qos => f.qos.as_deref(),
            TextField::Name => f.job_name.as_deref(),
        }
    }
}

/// A field matched by a range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CountField {
    /// `cpus=`.
    Cpus,
    /// `gpus=`.
    Gpus,
    /// `mem=` (bytes).
    Mem,
}

impl CountField {
    /// The word's name.
    pub fn word(self) -> &'static str {
        match self {
            CountField::Cpus => "cpus",
            CountField::Gpus => "gpus",
            CountField::Mem => "mem",
        }
    }

    fn get(self, f: &JobFacts) -> Option<u64> {
        match self {
            CountField::Cpus => f.cpus.map(u64::from),
            CountField::Gpus => f.gpus.map(u64::from),
            CountField::Mem => f.mem_bytes,
        }
    }
}

/// One test of a rule, with the word as the site typed it.
#[derive(Debug, Clone)]
pub enum Matcher {
    /// Any of the patterns matches the field.
    Text {
        /// The field.
        field: TextField,
        /// The patterns.
        patterns: Vec<glob::Pattern>,
        /// The word as typed.
        typed: String,
    },
    /// The field lies in `low..=high`.
    Count {
        /// The field.
        field: CountField,
        /// Lowest (inclusive).
        low: u64,
        /// Highest (inclusive).
        high: u64,
        /// The word as typed.
        typed: String,
    },
    /// Any GRES item matches any pattern.
    Gres {
        /// The patterns.
        patterns: Vec<glob::Pattern>,
        /// The word as typed.
        typed: String,
    },
    /// An array element (`true`) or not.
    Array(bool),
}

impl PartialEq for Matcher {
    fn eq(&self, other: &Matcher) -> bool {
        self.typed() == other.typed()
    }
}

impl Eq for Matcher {}

impl Matcher {
    /// The word as typed.
    pub fn typed(&self) -> String {
        match self {
            Matcher::Text { typed, .. } | Matcher::Count { typed, .. } | Matcher::Gres { typed, .. } => typed.clone(),
            Matcher::Array(a) => format!("array={}", if *a { "yes" } else { "no" }),
        }
    }

    /// `Ok(what matched)` or `Err(why not)`, in words (`policy explain`).
    pub fn test(&self, f: &JobFacts) -> Result<String, String> {
        let shown = |v: &str| crate::text::quote(v);
        match self {
            Matcher::Text { field, patterns, typed } => match field.get(f) {
                None => Err(format!("{typed}: the job's {} is not known", field.word())),
                Some(v) if patterns.iter().any(|p| p.matches(v)) => {
                    Ok(format!("{} {} matches {typed}", field.word(), shown(v)))
                }
                Some(v) => Err(format!("{} {} does not match {typed}", field.word(), shown(v))),
            },
            Matcher::Count { field, low, high, typed } => match field.get(f) {
                None => Err(format!("{typed}: the job's {} is not known", field.word())),
                Some(v) if (*low..=*high).contains(&v) => {
                    Ok(format!("{} {} in {typed}", field.word(), count(*field, v)))
                }
                Some(v) => Err(format!("{} {} outside {typed}", field.word(), count(*field, v))),
            },
            Matcher::Gres { patterns, typed } => match f.gres.iter().find(|g| patterns.iter().any(|p| p.matches(g))) {
                Some(g) => Ok(format!("gres {} matches {typed}", shown(g))),
                None if f.gres.is_empty() => Err(format!("{typed}: the job asked for no GRES")),
                None => Err(format!("gres {} does not match {typed}", shown(&f.gres.join(",")))),
            },
            Matcher::Array(want) => match f.array {
                None => Err(format!("{}: whether the job is an array element is not known", self.typed())),
                Some(a) if a == *want => Ok(self.typed()),
                Some(_) => Err(format!(
                    "{}: the job is {}",
                    self.typed(),
                    if *want { "not an array element" } else { "an array element" }
                )),
            },
        }
    }
}

fn count(field: CountField, v: u64) -> String {
    match field {
        CountField::Mem => crate::units::human_bytes(v),
        _ => v.to_string(),
    }
}
