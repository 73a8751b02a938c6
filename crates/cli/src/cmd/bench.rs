//! `numakit bench` (being written).

use clap::Args;
use numakit::sys::SysRoot;

use crate::Failure;

/// `numakit bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {}

/// Runs `numakit bench`.
pub fn run(_sys: &SysRoot, _args: &BenchArgs) -> anyhow::Result<u8> {
    Err(Failure::usage("numakit bench is not built yet").into())
}
