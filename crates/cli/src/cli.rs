//! Every flag, defined once with its help. Parsing never reads the system.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// numakit: read the machine's NUMA layout, place work and memory, measure.
#[derive(Debug, Parser)]
#[command(name = "numakit", version, about, propagate_version = true)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,

    #[command(subcommand)]
    pub command: Command,
}

/// The options every subcommand takes.
#[derive(Debug, Args)]
pub struct Global {
    /// Read /sys and /proc below DIR instead of / (a dump of another machine).
    #[arg(long, global = true, value_name = "DIR", env = "NUMAKIT_SYSROOT")]
    pub sysroot: Option<PathBuf>,
}

/// `--json`, the same flag in every command that prints JSON (each
/// command's help says what its document holds).
#[derive(Debug, Clone, Copy, Default, Args)]
pub struct JsonOut {
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `--socket`, the running daemon's control socket, in every command that
/// talks to it.
#[derive(Debug, Clone, Default, Args)]
pub struct SocketArg {
    /// The daemon's control socket [default: the `socket` of the daemon's configuration (`ctl
    /// --config FILE`), else /run/numakit/daemon.sock].
    #[arg(long, value_name = "PATH")]
    pub socket: Option<PathBuf>,
}

/// Seconds as interval flags take them: a number (`0.5`, `2`) or a
/// duration (`500ms`, `2s`, `1m`), read by the library's one duration
/// parser ([`numakit::units::parse_seconds`]).
pub fn seconds(text: &str) -> Result<f64, String> {
    numakit::units::parse_seconds(text)
}

impl Cli {
    /// The command tree with only the subcommand `name`, for the launch
    /// paths that must start fast (building all of it costs about as much
    /// as the rest of `numakit run`); `None` for other names. Its
    /// definitions are the same as in [`Cli`]'s full tree, so a command line
    /// it accepts parses to the same [`Cli`]; anything it refuses (help,
    /// version, errors) is to be parsed again with the full tree, which
    /// prints clap's exact answer.
    pub fn narrow_command(name: &str) -> Option<clap::Command> {
        use clap::Command as C;
        let sub = match name {
            "run" => RunArgs::augment_args(C::new("run")),
            "stat" => crate::cmd::stat::StatArgs::augment_args(C::new("stat")),
            "topo" => TopoArgs::augment_args(C::new("topo")),
            "show" => ShowArgs::augment_args(C::new("show")),
            "pin" => PinArgs::augment_args(C::new("pin")),
            _ => return None,
        };
        Some(Global::augment_args(clap::Command::new("numakit")).subcommand(sub))
    }

    /// `numakit stat --compat` followed only by numastat's flag options
    /// (`-c -m -n -v -z` or their long names, each at most once, in any
    /// order): what clap parses from that line, without building clap's tree
    /// (the numastat stand-in's launch path, docs/benchmarks.md). `None` for
    /// any other line, which clap parses. `NUMAKIT_SYSROOT` is read as
    /// clap reads it for `--sysroot`.
    pub fn stat_compat_flags(argv: &[OsString]) -> Option<Cli> {
        let (Some("stat"), Some("--compat")) = (argv.get(1)?.to_str(), argv.get(2)?.to_str()) else {
            return None;
        };
        let mut args = crate::cmd::stat::StatArgs {
            compat: true,
            compress: false,
            numastat: false,
            sort: None,
            verbose: false,
            skip_zero: false,
            meminfo: false,
            pids: Vec::new(),
            cgroup: None,
            since: None,
            format: JsonOut::default(),
            interval: None,
            count: None,
        };
        for arg in &argv[3..] {
            let flag = match arg.to_str()? {
                "-c" | "--compress" => &mut args.compress,
                "-m" | "--meminfo" => &mut args.meminfo,
                "-n" | "--numastat" => &mut args.numastat,
                "-v" | "--verbose" => &mut args.verbose,
                "-z" | "--skip-zero" => &mut args.skip_zero,
                _ => return None,
            };
            if std::mem::replace(flag, true) {
                return None;
            }
        }
        // Set but empty, clap refuses it ("a value is required"): left to clap.
        let sysroot = match std::env::var_os(numakit::sys::SYSROOT_ENV) {
            Some(v) if v.is_empty() => return None,
            v => v.map(PathBuf::from),
        };
        Some(Cli { global: Global { sysroot }, command: Command::Stat(args) })
    }
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Show the machine: nodes, CPUs, memory, distances, caches, devices.
    ///
    /// With --json, the model as JSON (schema: docs/topo-json.md).
    Topo(TopoArgs),
    /// Run a command with a CPU and memory placement (numactl's options).
    Run(Box<RunArgs>),
    /// Show the placement of a process (default: numakit itself).
    Show(ShowArgs),
    /// Set the CPU affinity of every thread of a running process.
    Pin(PinArgs),
    /// Move a running process's memory to other nodes.
    Migrate(MigrateArgs),
    /// Per-node and per-process NUMA statistics (numastat and more).
    ///
    /// With --json, one JSON document (one object per line with --interval and --cgroup).
    Stat(crate::cmd::stat::StatArgs),
    /// A live terminal view of nodes and processes.
    Top(crate::cmd::top::TopArgs),
    /// Serve NUMA metrics for Prometheus.
    Exporter(crate::cmd::exporter::ExporterArgs),
    /// Kernel NUMA knobs: show, set, apply profiles, revert, check.
    Tune(crate::cmd::tune::TuneArgs),
    /// Device interrupts: where each IRQ is served, seen from its device's node.
    Irq(IrqArgs),
    /// Measure memory bandwidth and latency between nodes.
    ///
    /// With --json, the results as JSON (schema: docs/bench.md).
    Bench(crate::cmd::bench::BenchArgs),
    /// Run a workload under several configurations and compare, with statistics.
    ///
    /// With --json, the results as JSON (the format --save writes).
    Compare(crate::cmd::compare::CompareArgs),
    /// Automatic placement: move processes and memory where they run best, and do no harm.
    Daemon(crate::cmd::daemon::DaemonArgs),
    /// Talk to a running daemon: status, exclude, include, forget, reload, decisions.
    ///
    /// With --json, the daemon's answer as JSON.
    Ctl(crate::cmd::ctl::CtlArgs),
    /// Where a job of N CPUs and SIZE memory should run now (from the daemon's view if it runs).
    Advise(crate::cmd::advise::AdviseArgs),
    /// Simulate placement policies (numakit, numad, AutoNUMA, ...) on NUMA farms.
    ///
    /// With --json, the report as JSON.
    Simulate(crate::cmd::simulate::SimulateArgs),
    /// Does placement pay here? Analyse the step outcome records of NUMA experiments.
    ///
    /// Its intervals are always-valid by default (read it as often as wanted; --look once for one
    /// look at a fixed size). --guard-file stops arms that hurt a class; --propose-policy writes the
    /// policy the evidence calls for, for review (docs/policy.md, the loop).
    Report(crate::cmd::report::ReportArgs),
    /// The site's placement policy per job class: check a policy file, explain which rule a job meets.
    Policy(crate::cmd::policy::PolicyArgs),
    /// Arms stopped for a class because they hurt it: list, add, clear.
    Guard(crate::cmd::policy::GuardArgs),
    /// Behave exactly like numactl (also when numakit is invoked as `numactl`).
    #[command(disable_help_flag = true, disable_version_flag = true)]
    Numactl {
        /// numactl's arguments.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<OsString>,
    },
    /// Print the shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(crate::cmd::completions::CompletionsArgs),
    /// Write every man page into DIR (for packagers; scripts/build-deb).
    #[command(hide = true)]
    Manpages(crate::cmd::manpages::ManpagesArgs),
}

/// `numakit topo`.
#[derive(Debug, Args)]
pub struct TopoArgs {
    /// Print exactly what `numactl --hardware` prints.
    #[arg(long, short = 'H', conflicts_with_all = ["json", "svg"])]
    pub hardware: bool,
    #[command(flatten)]
    pub format: JsonOut,
    /// Write a picture of the machine to FILE ("-" for standard output).
    #[arg(long, value_name = "FILE", conflicts_with = "json")]
    pub svg: Option<PathBuf>,
}

/// `numakit irq`.
#[derive(Debug, Args)]
pub struct IrqArgs {
    #[command(subcommand)]
    pub action: IrqAction,
}

/// The `irq` subcommands.
#[derive(Debug, Subcommand)]
pub enum IrqAction {
    /// Every device's IRQs: device, its node, affinity, effective affinity, counts per node, off-node flag.
    ///
    /// With --json, the table as JSON (schema: docs/irq.md).
    Show {
        /// Also count over this long (90, 2s, 500ms) and show interrupts per second per node.
        #[arg(long, value_name = "DURATION")]
        interval: Option<String>,
        /// Also IRQs that belong to no known device (timer, ACPI, ...).
        #[arg(long)]
        all: bool,
        #[command(flatten)]
        format: JsonOut,
    },
}

/// `numakit run`. Node lists take numactl's syntax: `1-3,5`, `all`, `!LIST`,
/// `+LIST` (relative to the cpuset), `same`, and the I/O specifiers
/// `netdev:DEV`, `block:DEV`, `file:PATH`, `pci:ADDR`, `ip:HOST`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Run on the CPUs of these nodes.
    #[arg(long, short = 'N', value_name = "NODES", allow_hyphen_values = true)]
    pub cpunodebind: Option<String>,
    /// Run on these CPUs.
    #[arg(long, short = 'C', value_name = "CPUS", allow_hyphen_values = true)]
    pub physcpubind: Option<String>,
    /// Allocate memory only on these nodes.
    #[arg(long, short = 'm', value_name = "NODES", allow_hyphen_values = true)]
    pub membind: Option<String>,
    /// Prefer memory on this node, fall back to others.
    #[arg(long, short = 'p', value_name = "NODE", allow_hyphen_values = true)]
    pub preferred: Option<String>,
    /// Prefer memory on these nodes (Linux 5.15+).
    #[arg(long, short = 'P', value_name = "NODES", allow_hyphen_values = true)]
    pub preferred_many: Option<String>,
    /// Interleave memory round-robin over these nodes.
    #[arg(long, short = 'i', value_name = "NODES", allow_hyphen_values = true)]
    pub interleave: Option<String>,
    /// Interleave by the kernel's node weights (Linux 6.9+).
    #[arg(long, short = 'w', value_name = "NODES", allow_hyphen_values = true)]
    pub weighted_interleave: Option<String>,
    /// Allocate on the node the thread runs on.
    #[arg(long, short = 'l')]
    pub localalloc: bool,
    /// Let kernel NUMA balancing move bound memory (MPOL_F_NUMA_BALANCING, with --membind).
    #[arg(long, short = 'b')]
    pub balancing: bool,
    /// Make `all`, `!` and `+` refer to every node and CPU, not only the cpuset's.
    #[arg(long, short = 'a')]
    pub all: bool,
    /// Let numakit choose the node(s) from idle CPUs, free memory and the jobs it placed.
    #[arg(long, conflicts_with_all = ["cpunodebind", "physcpubind", "membind", "preferred", "preferred_many", "interleave", "weighted_interleave", "localalloc"])]
    pub auto: bool,
    /// With --auto: CPUs the job needs [default: the batch system's count (SLURM_CPUS_PER_TASK,
    /// HTCondor's machine ad, LSB_MCPU_HOSTS, NCPUS, PBS_NUM_PPN), else the CPUs numakit may
    /// run on when the batch system narrowed them, else 1].
    #[arg(long, value_name = "N", requires = "auto")]
    pub cpus: Option<u32>,
    /// With --auto: memory the job needs (bytes, or with K, M, G, T suffix) [default: inside a Slurm
    /// job its request, SLURM_MEM_PER_CPU times the CPUs or SLURM_MEM_PER_NODE].
    #[arg(long, value_name = "SIZE", requires = "auto")]
    pub mem: Option<String>,
    /// With --auto: CPUs kept for the OS, never given to the job.
    #[arg(long, value_name = "CPUS", requires = "auto")]
    pub reserve: Option<String>,
    /// With --auto: next to the job's devices (the GPUs and NICs its batch system's variables name)
    /// even where they lack idle CPUs, as --numa=devices; without it a device job goes there when it
    /// fits.
    #[arg(long, requires = "auto")]
    pub near_devices: bool,
    /// With --auto: when nothing fits now, wait up to this long for a fit (90, 30s, 10m, 2h)
    /// instead of exiting 75 at once.
    #[arg(long, value_name = "DURATION", requires = "auto")]
    pub wait: Option<String>,
    /// With --auto: when nothing fits (after --wait), exit 75 so the batch system can keep the job
    /// pending, or run the command unplaced with a line on stderr saying so.
    #[arg(long, value_name = "WHAT", requires = "auto", default_value = "exit", value_parser = ["exit", "run"])]
    pub if_no_fit: String,
    /// With --auto and no daemon answering: how long to sample the CPUs' use (a CPU idle half that
    /// time is idle); 0 counts only the jobs in the ledger as load, as a batch system counts CPUs.
    #[arg(long, value_name = "DURATION", requires = "auto", default_value = "200ms")]
    pub sample: String,
    /// With --auto: the host's record of the placements numakit made, shared by all jobs.
    #[arg(long, value_name = "DIR", requires = "auto", default_value = numakit::batch::ledger::DEFAULT_DIR)]
    pub ledger: PathBuf,
    /// With --auto: the site's experiment, its words as in Slurm's plugstack.conf
    /// (`experiment=NAME arms=auto:1,none:1 unit=job key=FILE cluster=NAME`); the job's arm
    /// replaces auto (docs/batch.md, Experiments).
    #[arg(long, value_name = "WORDS", requires = "auto")]
    pub experiment: Option<String>,
    /// With --auto: the site's policy (docs/policy.md): the first rule that matches the job gives
    /// its class and its mode (with a standing holdout) or an experiment of its own; a job no rule
    /// matches gets --experiment or the default.
    #[arg(long, value_name = "FILE", requires = "auto")]
    pub policy: Option<PathBuf>,
    /// With --auto: the guard file: arms stopped for a class, whose jobs get the control.
    #[arg(long, value_name = "FILE", requires = "auto")]
    pub guard: Option<PathBuf>,
    /// With --auto: the job asked for this mode itself (auto, devices, local, interleave, none,
    /// nodes:LIST): it is placed so and recorded as chosen, whatever the experiment draws.
    #[arg(long, value_name = "MODE", requires = "auto")]
    pub chosen: Option<String>,
    /// With --auto: the mode of a job when neither it nor an experiment chooses one.
    #[arg(long, value_name = "MODE", requires = "auto")]
    pub default_mode: Option<String>,
    /// With --auto: numakit stays the command's parent, hands it the batch system's signals, and
    /// appends the job's outcome record to DIR/numakit-outcomes.jsonl when it ends.
    #[arg(long, value_name = "DIR", requires = "auto")]
    pub outcomes: Option<PathBuf>,
    /// With --auto: this process's cgroup is the job's own (the batch system made it for the job):
    /// a none job is kept from the daemon by it, and the outcome record reads its CPU time and
    /// peak memory.
    #[arg(long, requires = "auto")]
    pub job_cgroup: bool,
    /// Keep the command out of a running `numakit daemon`'s reach while it runs: by its pid, or
    /// by its cgroup and so with every process it starts (for a batch job in its own cgroup).
    #[arg(long, value_name = "BY", num_args = 0..=1, default_missing_value = "pid", value_parser = ["pid", "cgroup"])]
    pub exclude_from_daemon: Option<String>,
    /// For --auto's view of the load and --exclude-from-daemon.
    #[command(flatten)]
    pub daemon: SocketArg,
    /// Print the decision and the equivalent numactl command; run nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// The command and its arguments.
    #[arg(trailing_var_arg = true, required = true, value_name = "COMMAND")]
    pub command: Vec<OsString>,
}

/// `numakit show`.
#[derive(Debug, Args)]
pub struct ShowArgs {
    /// The process (default: numakit itself, like `numactl --show`).
    pub pid: Option<i32>,
    #[command(flatten)]
    pub format: JsonOut,
}

/// `numakit pin`. Takes taskset's two forms: a CPU list (`pin -c 0-2,5 PID`,
/// as `taskset -p -c`) and a hex mask (`pin --mask 0x3 PID`, as `taskset -p`).
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("target").required(true).args(["cpus", "mask", "nodes"])))]
pub struct PinArgs {
    /// The process.
    pub pid: i32,
    /// CPUs: a list as taskset -c and numactl take it (`0-2,5`, the step `0-10:2`, `all`, `!`, `+`).
    #[arg(long, short = 'c', value_name = "CPUS")]
    pub cpus: Option<String>,
    /// CPUs as taskset's hex mask (`0x3`, `3`, `ff,ffffffff`: 32-bit groups, most significant
    /// first); bits of CPUs this machine does not have are ignored, as the kernel does.
    #[arg(long, value_name = "MASK")]
    pub mask: Option<String>,
    /// The CPUs of these nodes (numactl syntax).
    #[arg(long, value_name = "NODES")]
    pub nodes: Option<String>,
    #[command(flatten)]
    pub format: JsonOut,
}

/// `numakit migrate`.
#[derive(Debug, Args)]
pub struct MigrateArgs {
    /// The process.
    pub pid: i32,
    /// Source nodes (with --to: migrate_pages, migratepages' relative order).
    #[arg(long, value_name = "NODES")]
    pub from: Option<String>,
    /// Target node(s).
    #[arg(long, value_name = "NODES", required_unless_present = "to_cpus_node")]
    pub to: Option<String>,
    /// Target: the node where most of the process's threads run.
    #[arg(long, conflicts_with_all = ["to", "from"])]
    pub to_cpus_node: bool,
    /// Move even if the target nodes lack the free memory.
    #[arg(long)]
    pub force: bool,
    /// Print what would move; move nothing.
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub format: JsonOut,
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use clap::{CommandFactory, FromArgMatches};

    use super::*;

    fn walk(cmd: &clap::Command, path: &str, out: &mut BTreeMap<String, BTreeSet<String>>, at: &mut Vec<String>) {
        for a in cmd.get_arguments() {
            if let Some(long) = a.get_long().filter(|l| ["json", "socket"].contains(l)) {
                out.entry(long.to_string())
                    .or_default()
                    .insert(a.get_help().map(|h| h.to_string()).unwrap_or_default());
                at.push(format!("{path} --{long}"));
            }
        }
        for sub in cmd.get_subcommands() {
            walk(sub, &format!("{path} {}", sub.get_name()), out, at);
        }
    }

    /// `--json` and `--socket` are one definition each: the same help
    /// wherever they appear.
    #[test]
    fn shared_flags_have_one_help() {
        let (mut helps, mut at) = (BTreeMap::new(), Vec::new());
        walk(&Cli::command(), "numakit", &mut helps, &mut at);
        assert!(at.iter().filter(|a| a.ends_with("--json")).count() >= 14, "{at:?}");
        assert!(at.iter().filter(|a| a.ends_with("--socket")).count() >= 3, "{at:?}");
        for (flag, texts) in helps {
            assert_eq!(texts.len(), 1, "--{flag} has several help texts: {texts:?}");
        }
    }

    /// Every option and argument a user sees has a help text of its own
    /// (a doc comment that is missing glues the next option's text onto the
    /// one before: `exporter --help` showed --max-connections' words under
    /// --ledger and none under --max-connections).
    #[test]
    fn every_visible_argument_has_its_help() {
        fn check(cmd: &clap::Command, path: &str, bad: &mut Vec<String>) {
            for a in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
                let id = a.get_id().as_str();
                if ["help", "version"].contains(&id) {
                    continue;
                }
                if a.get_help().is_none_or(|h| h.to_string().trim().is_empty()) {
                    bad.push(format!("{path} {id}"));
                }
            }
            for sub in cmd.get_subcommands() {
                check(sub, &format!("{path} {}", sub.get_name()), bad);
            }
        }
        let mut bad = Vec::new();
        check(&Cli::command(), "numakit", &mut bad);
        assert!(bad.is_empty(), "arguments without help: {bad:?}");
    }

    /// Interval flags read durations with the library's parser: a plain
    /// number as before, and a unit too.
    #[test]
    fn intervals_take_durations() {
        let parse = |line: &str| {
            let argv: Vec<&str> = std::iter::once("numakit").chain(line.split(' ')).collect();
            Cli::command().try_get_matches_from(argv).and_then(|m| Cli::from_arg_matches(&m))
        };
        for (line, want) in [("stat --interval 0.5", 0.5), ("stat --interval 500ms", 0.5), ("stat --interval +2", 2.0)]
        {
            let Ok(Cli { command: Command::Stat(s), .. }) = parse(line) else { panic!("{line}") };
            assert_eq!(s.interval, Some(want), "{line}");
        }
        let Ok(Cli { command: Command::Top(t), .. }) = parse("top --interval 1m") else { panic!("top") };
        assert_eq!(t.interval, 60.0);
        assert!(parse("stat --interval soon").is_err());
    }
}
