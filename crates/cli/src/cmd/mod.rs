//! One module per subcommand; each turns parsed arguments into library
//! calls and prints the result. What several need is in [`common`]; no
//! command imports another.

pub mod advise;
pub mod bench;
mod common;
pub mod compare;
pub mod completions;
pub mod ctl;
pub mod daemon;
pub mod exporter;
mod irq;
pub mod manpages;
mod migrate;
pub mod migratepages;
pub mod numactl;
pub mod numastat;
mod pin;
pub mod policy;
pub mod report;
mod run;
mod show;
pub mod simulate;
pub mod stat;
pub mod top;
mod topo;
pub mod tune;

use clap::ArgMatches;
use numakit::sys::SysRoot;

use crate::cli::{Cli, Command};

/// Runs the chosen subcommand and returns its exit code.
pub fn dispatch(cli: Cli, matches: &ArgMatches) -> anyhow::Result<u8> {
    let sys = match &cli.global.sysroot {
        Some(dir) => SysRoot::at(dir),
        None => SysRoot::live(),
    };
    match cli.command {
        Command::Topo(args) => topo::run(&sys, &args),
        Command::Run(args) => {
            let m = matches.subcommand_matches("run").unwrap_or(matches);
            run::run(&sys, &args, m)
        }
        Command::Show(args) => show::run(&sys, &args),
        Command::Pin(args) => pin::run(&sys, &args),
        Command::Migrate(args) => migrate::run(&sys, &args),
        // numastat's own behaviour, options and exit codes.
        Command::Stat(args) if args.compat => {
            sys.check().map_err(common::read_error)?;
            numastat::run(&sys, &stat::numastat_argv(&args))
        }
        Command::Stat(args) => stat::run(&sys, &args),
        Command::Top(args) => top::run(&sys, &args),
        Command::Exporter(args) => exporter::run(&sys, &args),
        Command::Tune(args) => tune::run(&sys, &args),
        Command::Irq(args) => irq::run(&sys, &args),
        Command::Bench(args) => bench::run(&sys, &args),
        Command::Compare(args) => compare::run(&sys, &args),
        Command::Daemon(args) => daemon::run(&sys, &args),
        Command::Ctl(args) => ctl::run(&args),
        Command::Advise(args) => advise::run(&sys, &args),
        Command::Simulate(args) => simulate::run(&sys, &args),
        Command::Report(args) => report::run(&args),
        Command::Policy(args) => policy::run(&args),
        Command::Guard(args) => policy::run_guard(&args),
        Command::Numactl { args } => numactl::run(&sys, &args),
        Command::Completions(args) => completions::run(&args),
        Command::Manpages(args) => manpages::run(&args),
    }
}
