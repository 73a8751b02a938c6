//! One module per subcommand; each turns parsed arguments into library
//! calls and prints the result.

mod topo;

use numakit::sys::SysRoot;

use crate::cli::{Cli, Command};

/// Runs the chosen subcommand and returns its exit code.
pub fn dispatch(cli: Cli) -> anyhow::Result<u8> {
    let sys = match &cli.sysroot {
        Some(dir) => SysRoot::at(dir),
        None => SysRoot::live(),
    };
    match cli.command {
        Command::Topo(args) => topo::run(&sys, &args),
    }
}
