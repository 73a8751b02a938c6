//! `numakit exporter` (being written).

use clap::Args;
use numakit::sys::SysRoot;

use crate::Failure;

/// `numakit exporter`.
#[derive(Debug, Args)]
pub struct ExporterArgs {}

/// Runs `numakit exporter`.
pub fn run(_sys: &SysRoot, _args: &ExporterArgs) -> anyhow::Result<u8> {
    Err(Failure::usage("numakit exporter is not built yet").into())
}
