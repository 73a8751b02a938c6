//! `numakit tune` (being written).

use clap::Args;
use numakit::sys::SysRoot;

use crate::Failure;

/// `numakit tune`.
#[derive(Debug, Args)]
pub struct TuneArgs {}

/// Runs `numakit tune`.
pub fn run(_sys: &SysRoot, _args: &TuneArgs) -> anyhow::Result<u8> {
    Err(Failure::usage("numakit tune is not built yet").into())
}
