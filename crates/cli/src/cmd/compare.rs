//! `numakit compare` (being written).

use clap::Args;
use numakit::sys::SysRoot;

use crate::Failure;

/// `numakit compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {}

/// Runs `numakit compare`.
pub fn run(_sys: &SysRoot, _args: &CompareArgs) -> anyhow::Result<u8> {
    Err(Failure::usage("numakit compare is not built yet").into())
}
