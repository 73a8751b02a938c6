//! One record line read without copying: the fields of a
//! `numakit-step-outcome/1` record the analysis uses, borrowed from the
//! line where JSON allows (strings without escapes), every other field
//! skipped unparsed, and the value of the `--by` field (any field, dotted
//! for nested ones: `placement.mode`) as text. Decides nothing: what a
//! field means for the analysis is `jobs.rs`'s and `collect.rs`'s.

use std::borrow::Cow;
use std::fmt;

use numakit::experiment::{ArmSource, Unit, SCHEMA};
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};

/// Every field of a record, dotted where nested, as `--by` accepts them.
pub const FIELDS: &[&str] = &[
    "schema",
    "cluster",
    "job",
    "step",
    "array_job",
    "array_task",
    "host",
    "user",
    "job_name",
    "partition",
    "account",
    "batch_system",
    "experiment",
    "unit",
    "period",
    "arm",
    "arm_source",
    "arms",
    "class",
    "placement.mode",
    "placement.cpus",
    "placement.memory",
    "start_unix",
    "end_unix",
    "wall_s",
    "cpu_user_s",
    "cpu_system_s",
    "cpus",
    "cpu_efficiency",
    "peak_memory_bytes",
    "exit_status",
    "exit_signal",
    "numa.locality",
    "numakit_version",
    "hardware.key",
    "hardware.packages",
    "hardware.nodes",
    "hardware.cores",
    "hardware.cpus",
    "hardware.cpu_model",
];

/// How every record the library writes begins (`StepOutcome`'s first
/// field, written compactly): where a record starts inside a line.
pub const RECORD_START: &[u8] = b"{\"schema\":\"numakit-step-outcome/1";

/// Why a part of a line before another record's start is bad.
pub const CUT_SHORT: &str =
    "a record cut short (its writer stopped mid-line, a full disk?), the next record written after it on the same line";

/// Where the first record start ([`RECORD_START`]) in `line` is. Inside
/// a JSON string its quotes would be escaped, so a match is a record's
/// first byte.
pub fn record_start(line: &[u8]) -> Option<usize> {
    line.windows(RECORD_START.len()).position(|w| w == RECORD_START)
}

/// The error text that marks a line of another schema (or none).
const OTHER: &str = "\u{0}other schema";

/// What one line is.
#[derive(Debug)]
pub enum Parsed<'a> {
    /// A step outcome record.
    Record(Box<Line<'a>>),
    /// A JSON object of another schema, or without one.
    Other,
    /// Not a record: the reason, one line.
    Bad(String),
}

/// The fields of one record the analysis uses.
#[derive(Debug, Default)]
pub struct Line<'a> {
    pub cluster: Cow<'a, str>,
    pub job: Cow<'a, str>,
    pub step: Cow<'a, str>,
    pub host: Cow<'a, str>,
    pub experiment: Option<Cow<'a, str>>,
    pub unit: Option<Unit>,
    pub period: Option<u64>,
    pub arm: Cow<'a, str>,
    pub arm_source: Option<ArmSource>,
    pub arms: Option<Cow<'a, str>>,
    pub start_unix: f64,
    pub end_unix: f64,
    pub wall_s: f64,
    pub cpu_user_s: Option<f64>,
    pub cpu_system_s: Option<f64>,
    pub exit_status: Option<i32>,
    pub exit_signal: Option<i32>,
    pub locality: Option<f64>,
    pub hardware_key: Cow<'a, str>,
    /// The `--by` field's value as text; `None` when missing or null.
    pub by: Option<Cow<'a, str>>,
}

/// Parses one line; `by` is the `--by` field split at its dots.
pub fn parse<'a>(line: &'a [u8], by: &[&str]) -> Parsed<'a> {
    let mut de = serde_json::Deserializer::from_slice(line);
    match (RecordSeed { by }).deserialize(&mut de).and_then(|l| de.end().map(|()| l)) {
        Ok(l) => Parsed::Record(Box::new(l)),
        Err(e) if e.to_string().starts_with(OTHER) => Parsed::Other,
        Err(e) => Parsed::Bad(e.to_string()),
    }
}

/// A scalar value: what a `--by` field or a wanted nested field holds.
#[derive(Debug)]
enum Leaf<'a> {
    Null,
    Str(Cow<'a, str>),
    Num(f64),
    Bool(bool),
    Other,
}

impl<'a> Leaf<'a> {
    fn text(self) -> Option<Cow<'a, str>> {
        match self {
            Leaf::Null => None,
            Leaf::Str(s) => Some(s),
            Leaf::Num(x) => {
                Some(Cow::Owned(if x.fract() == 0.0 && x.abs() < 1e15 { format!("{x:.0}") } else { x.to_string() }))
            }
            Leaf::Bool(b) => Some(Cow::Borrowed(if b { "true" } else { "false" })),
            Leaf::Other => Some(Cow::Borrowed("(object)")),
        }
    }
}

/// A string borrowed from the line where it has no escapes.
struct StrSeed;

impl<'de> DeserializeSeed<'de> for StrSeed {
    type Value = Cow<'de, str>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Cow<'de, str>, D::Error> {
        d.deserialize_str(StrVisitor)
    }
}

struct StrVisitor;

impl<'de> Visitor<'de> for StrVisitor {
    type Value = Cow<'de, str>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Borrowed(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(v))
    }
}

/// A string or null.
struct OptStrSeed;

impl<'de> DeserializeSeed<'de> for OptStrSeed {
    type Value = Option<Cow<'de, str>>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_option(OptStrVisitor)
    }
}

struct OptStrVisitor;

impl<'de> Visitor<'de> for OptStrVisitor {
    type Value = Option<Cow<'de, str>>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string or null")
    }
    fn visit_none<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        StrSeed.deserialize(d).map(Some)
    }
}

struct LeafSeed;

impl<'de> DeserializeSeed<'de> for LeafSeed {
    type Value = Leaf<'de>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Leaf<'de>, D::Error> {
        d.deserialize_any(LeafVisitor)
    }
}

struct LeafVisitor;

impl<'de> Visitor<'de> for LeafVisitor {
    type Value = Leaf<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a value")
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Leaf<'de>, E> {
        Ok(Leaf::Str(Cow::Borrowed(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Leaf<'de>, E> {
        Ok(Leaf::Str(Cow::Owned(v.to_string())))
    }
    fn visit_string<E>(self, v: String) -> Result<Leaf<'de>, E> {
        Ok(Leaf::Str(Cow::Owned(v)))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Leaf<'de>, E> {
        Ok(Leaf::Num(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Leaf<'de>, E> {
        Ok(Leaf::Num(v as f64))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Leaf<'de>, E> {
        Ok(Leaf::Num(v as f64))
    }
    fn visit_bool<E>(self, v: bool) -> Result<Leaf<'de>, E> {
        Ok(Leaf::Bool(v))
    }
    fn visit_unit<E>(self) -> Result<Leaf<'de>, E> {
        Ok(Leaf::Null)
    }
    fn visit_none<E>(self) -> Result<Leaf<'de>, E> {
        Ok(Leaf::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Leaf<'de>, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Leaf<'de>, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Leaf::Other)
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Leaf<'de>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Leaf::Other)
    }
}

/// A nested object (`hardware`, `numa`, `placement`): the field `want`
/// and the rest of the `--by` path, when it leads here.
struct NestedSeed<'p> {
    want: Option<&'static str>,
    by: Option<&'p [&'p str]>,
}

impl<'de> DeserializeSeed<'de> for NestedSeed<'_> {
    type Value = (Leaf<'de>, Leaf<'de>);
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for NestedSeed<'_> {
    type Value = (Leaf<'de>, Leaf<'de>);
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object or null")
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok((Leaf::Null, Leaf::Null))
    }
    fn visit_none<E>(self) -> Result<Self::Value, E> {
        Ok((Leaf::Null, Leaf::Null))
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let (mut wanted, mut by) = (Leaf::Null, Leaf::Null);
        while let Some(key) = map.next_key_seed(StrSeed)? {
            let is_want = self.want == Some(&*key);
            let by_here = self.by.filter(|p| p.first() == Some(&&*key));
            match by_here {
                Some(path) if path.len() > 1 => {
                    by = map.next_value_seed(NestedSeed { want: None, by: Some(&path[1..]) })?.1;
                }
                Some(_) => {
                    let v = map.next_value_seed(LeafSeed)?;
                    if is_want {
                        by = match &v {
                            Leaf::Str(s) => Leaf::Str(s.clone()),
                            Leaf::Num(x) => Leaf::Num(*x),
                            _ => Leaf::Null,
                        };
                        wanted = v;
                    } else {
                        by = v;
                    }
                }
                None if is_want => wanted = map.next_value_seed(LeafSeed)?,
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok((wanted, by))
    }
}

struct RecordSeed<'p> {
    by: &'p [&'p str],
}

impl<'de> DeserializeSeed<'de> for RecordSeed<'_> {
    type Value = Line<'de>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Line<'de>, D::Error> {
        d.deserialize_map(self)
    }
}

fn need<T, E: de::Error>(v: Option<T>, name: &'static str) -> Result<T, E> {
    v.ok_or_else(|| E::missing_field(name))
}

impl<'de> Visitor<'de> for RecordSeed<'_> {
    type Value = Line<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Line<'de>, A::Error> {
        let mut l = Line::default();
        let (mut schema, mut cluster, mut job, mut step, mut host, mut arm) = (false, None, None, None, None, None);
        let (mut start, mut end, mut wall, mut key) = (None, None, None, None);
        let top = self.by.first().copied();
        while let Some(k) = map.next_key_seed(StrSeed)? {
            let k = &*k;
            if top == Some(k) {
                if self.by.len() > 1 {
                    let want = match k {
                        "hardware" => Some("key"),
                        "numa" => Some("locality"),
                        _ => None,
                    };
                    let (w, b) = map.next_value_seed(NestedSeed { want, by: Some(&self.by[1..]) })?;
                    l.by = b.text();
                    match (k, w) {
                        ("hardware", Leaf::Str(s)) => key = Some(s),
                        ("numa", Leaf::Num(x)) => l.locality = Some(x),
                        _ => {}
                    }
                    continue;
                }
                let v = map.next_value_seed(LeafSeed)?;
                // a --by field the analysis also uses: read it from the text
                let text = v.text();
                match k {
                    "schema" => {
                        if !text.as_deref().is_some_and(|s| s.starts_with(SCHEMA)) {
                            return Err(de::Error::custom(OTHER));
                        }
                        schema = true;
                    }
                    "cluster" => cluster = text.clone(),
                    "job" => job = text.clone(),
                    "step" => step = text.clone(),
                    "host" => host = text.clone(),
                    "arm" => arm = text.clone(),
                    "experiment" => l.experiment = text.clone(),
                    "arms" => l.arms = text.clone(),
                    "unit" | "arm_source" | "period" | "start_unix" | "end_unix" | "wall_s" | "cpu_user_s"
                    | "cpu_system_s" | "exit_status" | "exit_signal" => {
                        return Err(de::Error::custom(format!(
                            "--by {k} is a number or a setting; use it as a field of its own"
                        )));
                    }
                    _ => {}
                }
                l.by = text;
                continue;
            }
            match k {
                "schema" => {
                    let s = map.next_value_seed(StrSeed)?;
                    if !s.starts_with(SCHEMA) {
                        return Err(de::Error::custom(OTHER));
                    }
                    schema = true;
                }
                "cluster" => cluster = Some(map.next_value_seed(StrSeed)?),
                "job" => job = Some(map.next_value_seed(StrSeed)?),
                "step" => step = Some(map.next_value_seed(StrSeed)?),
                "host" => host = Some(map.next_value_seed(StrSeed)?),
                "experiment" => l.experiment = map.next_value_seed(OptStrSeed)?,
                "unit" => l.unit = map.next_value()?,
                "period" => l.period = map.next_value()?,
                "arm" => arm = Some(map.next_value_seed(StrSeed)?),
                "arm_source" => l.arm_source = Some(map.next_value()?),
                "arms" => l.arms = map.next_value_seed(OptStrSeed)?,
                "start_unix" => start = Some(map.next_value()?),
                "end_unix" => end = Some(map.next_value()?),
                "wall_s" => wall = Some(map.next_value()?),
                "cpu_user_s" => l.cpu_user_s = map.next_value()?,
                "cpu_system_s" => l.cpu_system_s = map.next_value()?,
                "exit_status" => l.exit_status = map.next_value()?,
                "exit_signal" => l.exit_signal = map.next_value()?,
                "numa" => {
                    if let Leaf::Num(x) = map.next_value_seed(NestedSeed { want: Some("locality"), by: None })?.0 {
                        l.locality = Some(x);
                    }
                }
                "hardware" => {
                    if let Leaf::Str(s) = map.next_value_seed(NestedSeed { want: Some("key"), by: None })?.0 {
                        key = Some(s);
                    }
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        if !schema {
            return Err(de::Error::custom(OTHER));
        }
        l.cluster = need(cluster, "cluster")?;
        l.job = need(job, "job")?;
        l.step = need(step, "step")?;
        l.host = need(host, "host")?;
        l.arm = need(arm, "arm")?;
        need(l.arm_source, "arm_source")?;
        l.start_unix = need(start, "start_unix")?;
        l.end_unix = need(end, "end_unix")?;
        l.wall_s = need(wall, "wall_s")?;
        l.hardware_key = need(key, "hardware.key")?;
        Ok(l)
    }
}

#[cfg(test)]
mod tests;
