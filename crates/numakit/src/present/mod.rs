//! Views of the model for people and scripts. Every function here returns
//! a string (or a serialisable value) and never reads the system or prints:
//! the CLI decides where output goes.
//!
//! * [`hardware`]: `numactl --hardware`, byte for byte;
//! * [`json`]: the documented, stable JSON schema (docs/topo-json.md);
//! * [`text`]: the human view of `numakit topo`;
//! * [`show`]: `numactl --show`, byte for byte, and `numakit show`;
//! * [`migrate`]: `numakit migrate`'s report as text and JSON;
//! * [`pin`]: `numakit pin`'s report as text and JSON.
//!
//! Behind the library's features:
//!
//! * `svg` (feature `svg`): a picture of packages, nodes, cores and PUs;
//! * `stat` (feature `stats`): `numakit stat` (numastat's layout exactly
//!   with `--compat`);
//! * `cgroup` (feature `stats`): `numakit stat --cgroup`, a cgroup's (a
//!   job's) NUMA report as text and as one JSON line;
//! * `top` (feature `stats`): the cells of `numakit top` and its
//!   plain-text snapshot;
//! * `prometheus` (feature `prometheus`): the exporter's Prometheus text
//!   exposition;
//! * `daemon` (feature `daemon`): `numakit ctl status` for people;
//! * `advise` (feature `daemon`): `numakit advise`'s answer as text and JSON;
//! * `tune` (feature `tune`): `numakit tune`'s knobs, changes, profiles and
//!   checks as text and JSON;
//! * `irq` (feature `irq`): `numakit irq show`, the IRQ locality table and
//!   its JSON;
//! * `bench`, `compare` (feature `measure`): `numakit bench` and `numakit
//!   compare` as text and JSON; `plot` (feature `plot`): the bench results
//!   as SVG charts.

#[cfg(feature = "daemon")]
pub mod advise;
#[cfg(feature = "measure")]
pub mod bench;
#[cfg(feature = "stats")]
pub mod cgroup;
#[cfg(feature = "measure")]
pub mod compare;
#[cfg(feature = "daemon")]
pub mod daemon;
pub mod hardware;
#[cfg(feature = "irq")]
pub mod irq;
pub mod json;
pub mod migrate;
pub mod pin;
#[cfg(feature = "plot")]
pub mod plot;
#[cfg(feature = "prometheus")]
pub mod prometheus;
pub mod show;
#[cfg(feature = "stats")]
pub mod stat;
#[cfg(feature = "svg")]
pub mod svg;
pub mod text;
#[cfg(feature = "stats")]
pub mod top;
#[cfg(feature = "tune")]
pub mod tune;

pub use crate::units::human_bytes;
