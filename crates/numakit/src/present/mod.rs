//! Views of the model for people and scripts. Every function here returns
//! a string (or a serialisable value) and never reads the system or prints:
//! the CLI decides where output goes.
//!
//! * [`hardware`]: `numactl --hardware`, byte for byte;
//! * [`json`]: the documented, stable JSON schema (docs/topo-json.md);
//! * [`text`]: the human view of `numakit topo`;
//! * [`svg`]: a picture of packages, nodes, cores and PUs;
//! * [`stat`]: `numakit stat` (numastat's layout exactly with `--compat`);
//! * [`cgroup`]: `numakit stat --cgroup`, a cgroup's (a job's) NUMA report
//!   as text and as one JSON line;
//! * [`top`]: the cells of `numakit top` and its plain-text snapshot;
//! * `prometheus`: the exporter's Prometheus text exposition (feature
//!   `prometheus`);
//! * [`daemon`]: `numakit ctl status` for people;
//! * [`advise`]: `numakit advise`'s answer as text and JSON;
//! * [`irq`]: `numakit irq show`, the IRQ locality table and its JSON;
//! * [`migrate`]: `numakit migrate`'s report as text and JSON;
//! * [`pin`]: `numakit pin`'s report as text and JSON;
//! * [`tune`]: `numakit tune`'s knobs, changes, profiles and checks as text
//!   and JSON;
//! * `bench`, `compare`: `numakit bench` and `numakit compare` as text and
//!   JSON (feature `measure`); `plot`: the bench results as SVG charts
//!   (feature `plot`).

pub mod advise;
#[cfg(feature = "measure")]
pub mod bench;
pub mod cgroup;
#[cfg(feature = "measure")]
pub mod compare;
pub mod daemon;
pub mod hardware;
pub mod irq;
pub mod json;
pub mod migrate;
pub mod pin;
#[cfg(feature = "plot")]
pub mod plot;
#[cfg(feature = "prometheus")]
pub mod prometheus;
pub mod show;
pub mod stat;
pub mod svg;
pub mod text;
pub mod top;
pub mod tune;

pub use crate::units::human_bytes;
