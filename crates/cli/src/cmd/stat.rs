//! `numakit stat` (being written).

use clap::Args;
use numakit::sys::SysRoot;

use crate::Failure;

/// `numakit stat`.
#[derive(Debug, Args)]
pub struct StatArgs {}

/// Runs `numakit stat`.
pub fn run(_sys: &SysRoot, _args: &StatArgs) -> anyhow::Result<u8> {
    Err(Failure::usage("numakit stat is not built yet").into())
}
