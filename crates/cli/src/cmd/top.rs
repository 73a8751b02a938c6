//! `numakit top` (being written).

use clap::Args;
use numakit::sys::SysRoot;

use crate::Failure;

/// `numakit top`.
#[derive(Debug, Args)]
pub struct TopArgs {}

/// Runs `numakit top`.
pub fn run(_sys: &SysRoot, _args: &TopArgs) -> anyhow::Result<u8> {
    Err(Failure::usage("numakit top is not built yet").into())
}
