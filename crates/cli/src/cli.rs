//! Every flag, defined once with its help. Parsing never reads the system.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// numakit: read the machine's NUMA layout, place work and memory, measure.
#[derive(Debug, Parser)]
#[command(name = "numakit", version, about, propagate_version = true)]
pub struct Cli {
    /// Read /sys and /proc below DIR instead of / (a dump of another machine).
    #[arg(long, global = true, value_name = "DIR", env = "NUMAKIT_SYSROOT")]
    pub sysroot: Option<PathBuf>,

    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Show the machine: nodes, CPUs, memory, distances, caches, devices.
    Topo(TopoArgs),
}

/// `numakit topo`.
#[derive(Debug, Args)]
pub struct TopoArgs {
    /// Print exactly what `numactl --hardware` prints.
    #[arg(long, short = 'H', conflicts_with_all = ["json", "svg"])]
    pub hardware: bool,
    /// Print the model as JSON (schema: docs/topo-json.md).
    #[arg(long, conflicts_with = "svg")]
    pub json: bool,
    /// Write a picture of the machine to FILE ("-" for standard output).
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
}
