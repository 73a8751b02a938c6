//! What each man page says that the clap definition does not: its exit
//! codes, the files it reads and writes (default paths from the library's
//! constants) and what to see also; [`notes`] by the command's path
//! (`tune set`). Rendered into pages by the parent module.

use numakit::daemon::settings::Settings;
use numakit::place::auto::EX_TEMPFAIL;
use numakit::tune;

/// An exit code (or codes) and what it means.
pub(super) type Code = (String, &'static str);
/// A file or folder and what the command does with it.
pub(super) type File = (String, &'static str);

/// What a page says that the clap definition does not.
pub(super) struct Notes {
    pub exit: Vec<Code>,
    pub files: Vec<File>,
    pub see_also: &'static [&'static str],
}

fn code(c: impl ToString, what: &'static str) -> Code {
    (c.to_string(), what)
}

fn file(path: impl Into<String>, what: &'static str) -> File {
    (path.into(), what)
}

const OK: &str = "Success.";
const SYSTEM: &str =
    "A system error: a file that cannot be read or written, contradictory kernel data, a refused system call.";
const USAGE: &str = "A usage error: a bad option or value, a --sysroot that is not a Linux root. The message is one line on standard error naming the bad value.";

/// 0, 1, 2 as every command uses them.
fn usual() -> Vec<Code> {
    vec![code(0, OK), code(1, SYSTEM), code(2, USAGE)]
}

/// The files below `/` every command that reads the machine's nodes uses.
fn nodes_files() -> Vec<File> {
    vec![
        file("/sys/devices/system/node/", "The nodes: their CPUs, memory (meminfo), distances and huge pages."),
        file("/sys/devices/system/cpu/", "Online and possible CPUs."),
        file("/proc/self/status", "The CPUs and nodes numakit's cpuset allows."),
    ]
}

fn with(mut a: Vec<File>, b: Vec<File>) -> Vec<File> {
    a.extend(b);
    a
}

/// The daemon's files, from its built-in defaults.
fn daemon_files() -> (String, String, String, String) {
    let s = Settings::default();
    (
        s.socket.display().to_string(),
        s.state_dir.join("state.json").display().to_string(),
        s.state_dir.join("status.json").display().to_string(),
        s.log.display().to_string(),
    )
}

/// The Debian package's folder of links named after the C tools.
pub const COMPAT_DIR: &str = "/usr/lib/numakit/compat/";

/// The packaged daemon configuration (the systemd unit passes it with --config).
pub const DAEMON_CONFIG: &str = "/etc/numakit/daemon.toml";

/// The notes of the page of `path` (the words after `numakit`), or `None`
/// for a command nobody described yet.
pub(super) fn notes(path: &str) -> Option<Notes> {
    let (socket, state, status, log) = daemon_files();
    let tune_state = format!("/{}", tune::DEFAULT_STATE);
    let profiles = format!("/{}/", tune::DEFAULT_PROFILES_DIR);
    let tempfail = EX_TEMPFAIL;
    let n = |exit, files, see_also| Some(Notes { exit, files, see_also });
    let tune_knobs = || {
        vec![
            file("/proc/sys/kernel/", "numa_balancing and its scan and promotion knobs."),
            file("/proc/sys/vm/", "zone_reclaim_mode, numa_stat."),
            file(
                "/sys/kernel/mm/",
                "transparent_hugepage/, numa/demotion_enabled, mempolicy/weighted_interleave/ (node weights).",
            ),
            file("/sys/kernel/debug/sched/numa_balancing/", "The scan knobs on kernels that moved them to debugfs."),
        ]
    };
    let tune_state_file = || {
        file(tune_state.clone(), "The original value of every knob numakit changed, for tune revert (--state, NUMAKIT_TUNE_STATE; below --sysroot when given).")
    };
    let profiles_dir = || {
        file(
            profiles.clone(),
            "User profiles, one PROFILE.toml each (--profiles-dir, NUMAKIT_PROFILES_DIR; below --sysroot when given).",
        )
    };
    let socket_file = |what| file(socket.clone(), what);
    let irq_files = || {
        vec![
            file("/proc/interrupts", "Each IRQ's count per CPU since boot, chip, hardware IRQ and action names."),
            file("/proc/irq/N/", "smp_affinity_list (written by tune irq-local), effective_affinity_list, node."),
            file(
                "/sys/bus/pci/devices/*/",
                "numa_node, msi_irqs/ and irq: which IRQs are whose, and where the device is.",
            ),
            file(
                "/sys/class/net/, /sys/class/block/, /sys/bus/virtio/devices/",
                "Interfaces, disks and virtio devices named in action names.",
            ),
        ]
    };
    let process_files = || {
        file("/proc/PID/", "The process: status (allowed CPUs and nodes), task/ (threads, their affinity and last CPU), numa_maps (memory per node).")
    };
    match path {
        "" => n(
            vec![
                code(0, OK),
                code(1, SYSTEM),
                code(2, USAGE),
                code(tempfail, "run --auto and advise: the job does not fit now (EX_TEMPFAIL)."),
                code("126, 127", "run and numactl: the command cannot be run, or is not found."),
            ],
            vec![
                file("/sys/", "The machine (devices/system/node, devices/system/cpu, bus/pci, class/net, class/block, kernel/mm); below --sysroot when given."),
                file("/proc/", "Processes, counters and sysctls; below --sysroot when given."),
                file(DAEMON_CONFIG, "The daemon's configuration in the Debian package (its systemd unit passes it with --config)."),
                file(profiles.clone(), "User profiles of numakit tune."),
                file(tune_state.clone(), "numakit tune's state file."),
                file(state.clone(), "The daemon's state."),
                file(status.clone(), "The daemon's status, read by numakit exporter."),
                file(log.clone(), "The daemon's decision log."),
                file(socket.clone(), "The daemon's control socket (numakit ctl, advise, run --auto)."),
                file(
                    COMPAT_DIR,
                    "In the Debian package: numactl, numastat and migratepages, links to numakit, for an administrator to put first in PATH. Invoked as numactl, numakit behaves as numactl.",
                ),
            ],
            &["numactl(8)", "numastat(8)", "migratepages(8)", "taskset(1)"],
        ),
        "topo" => n(
            usual(),
            with(
                nodes_files(),
                vec![
                    file("/sys/devices/system/cpu/cpu*/", "Core and package ids, caches."),
                    file("/sys/bus/pci/devices/", "PCI devices and their nodes."),
                    file("/sys/class/net/, /sys/class/block/", "Network and block devices on those PCI devices."),
                ],
            ),
            &["numactl(8)", "lstopo(1)"],
        ),
        "run" => n(
            vec![
                code("0", "With --dry-run: the plan was printed."),
                code(1, "The placement could not be applied (a refused system call)."),
                code(2, "A usage error: bad option, unknown or disallowed node or CPU, memory-less or CPU-less node, empty intersection. Nothing was run."),
                code(tempfail, "With --auto: no node can take the job now (EX_TEMPFAIL); nothing was run."),
                code(126, "The command cannot be run."),
                code(127, "The command is not found."),
                code("other", "The command's own: numakit replaced itself with it."),
            ],
            with(
                nodes_files(),
                vec![
                    file("/proc/sys/kernel/osrelease", "The kernel version: which policies it has (--preferred-many, --weighted-interleave)."),
                    file("/sys/class/net/, /sys/class/block/, /sys/bus/pci/devices/", "The I/O specifiers netdev:, block:, file: and pci:."),
                    file("/proc/net/route, /proc/net/ipv6_route", "The I/O specifier ip:HOST (the interface the route leaves through)."),
                    socket_file("With --auto: the running daemon's view of the nodes, if it answers."),
                    file("/proc/stat", "With --auto and no daemon: CPU use, sampled over 200 ms."),
                ],
            ),
            &["numactl(8)", "set_mempolicy(2)", "sched_setaffinity(2)"],
        ),
        "show" => n(
            usual(),
            with(nodes_files(), vec![process_files()]),
            &["numactl(8)"],
        ),
        "pin" => n(
            vec![code(0, OK), code(1, "A system error, or some threads could not be pinned (listed)."), code(2, "A usage error: a bad list, no such process.")],
            with(nodes_files(), vec![file("/proc/PID/task/", "The threads whose affinity is set.")]),
            &["taskset(1)", "sched_setaffinity(2)"],
        ),
        "migrate" => n(
            vec![
                code(0, OK),
                code(1, "A system error, not enough free memory on the target (without --force), or pages that did not move (counted)."),
                code(2, "A usage error: a bad node list, no such process."),
            ],
            with(nodes_files(), vec![process_files()]),
            &["migratepages(8)", "migrate_pages(2)", "move_pages(2)"],
        ),
        "stat" => n(
            usual(),
            vec![
                file("/sys/devices/system/node/node*/", "numastat (allocation counters), meminfo and hugepages/ per node."),
                file("/proc/vmstat", "AutoNUMA activity (numa_* and pgmigrate_* counters)."),
                file("/proc/meminfo", "With -m where the kernel has no node folders: the machine as node 0."),
                file("/proc/PID/", "With -p: cmdline and comm (to match names), numa_maps (memory per node)."),
                file(
                    "/sys/fs/cgroup/PATH/",
                    "With --cgroup: cgroup.procs of PATH and every folder below it, memory.numa_stat, memory.stat (NUMA counters), cpuset.cpus.effective; cgroup2 at /sys/fs/cgroup or /sys/fs/cgroup/unified, then the v1 memory hierarchy.",
                ),
                file("/proc/PID/stat, /proc/PID/numa_maps", "With --cgroup: of each of the cgroup's processes (threads' last CPU, memory per node)."),
            ],
            &["numastat(8)"],
        ),
        "top" => n(
            usual(),
            with(
                nodes_files(),
                vec![
                    file("/proc/stat, /proc/vmstat", "CPU busy and AutoNUMA activity."),
                    file("/proc/PID/", "stat and status of every process, numa_maps of those shown."),
                    file("/etc/passwd", "User names (--user)."),
                ],
            ),
            &["top(1)", "numastat(8)"],
        ),
        "exporter" => n(
            vec![
                code(0, "Never while serving: it runs until killed."),
                code(1, "The address cannot be listened on, or the system cannot be read."),
                code(2, "A usage error: a bad --listen address."),
            ],
            vec![
                file("/sys/devices/system/node/node*/", "numastat, meminfo and hugepages/ per node, on every scrape."),
                file("/proc/vmstat", "AutoNUMA counters."),
                file("/proc/PID/", "stat of every process, numa_maps of the --top largest and of the exported cgroups' processes."),
                file(
                    "/sys/fs/cgroup/",
                    "Folders listed (at most 4096, 6 deep) to find Slurm job cgroups (job_N); of each exported cgroup (at most --max-cgroups): cgroup.procs of it and below, memory.stat, memory.numa_stat, cpuset.cpus.effective.",
                ),
                file(status.clone(), "The daemon's status (--daemon-status): its families are exported while the file exists."),
            ],
            &["numakit-daemon(1)"],
        ),
        "tune" => n(
            vec![
                code(0, OK),
                code(1, "A system error (a knob could not be written: the writes made are rolled back), or with check --against: a difference."),
                code(2, "A usage error: an unknown knob, a bad value, a bad profile, not root."),
            ],
            with(tune_knobs(), vec![tune_state_file(), profiles_dir()]),
            &["sysctl(8)"],
        ),
        "tune show" => n(usual(), with(tune_knobs(), vec![tune_state_file()]), &[]),
        "tune irq-local" => n(
            vec![
                code(0, "The device's IRQs are on its node's CPUs (or were already); IRQs the kernel manages are named and left alone."),
                code(1, "A system error: the device has no node, its node no CPUs, it has no IRQs, a write failed (the writes made are rolled back), or the kernel refused every move."),
                code(2, "A usage error: an unknown device, not root (without --dry-run)."),
            ],
            with(
                irq_files(),
                vec![
                    tune_state_file(),
                    file(format!("{tune_state}.lock"), "Locked while numakit tune writes: one at a time."),
                    file("/proc/PID/comm, /sys/fs/cgroup/system.slice/irqbalance.service/", "Whether irqbalance runs (it would move the IRQs again)."),
                ],
            ),
            &["irqbalance(1)"],
        ),
        "irq" | "irq show" => n(
            usual(),
            with(
                nodes_files(),
                with(irq_files(), vec![file("/proc/PID/comm, /sys/fs/cgroup/system.slice/irqbalance.service/", "Whether irqbalance runs.")]),
            ),
            &["irqbalance(1)", "numakit-tune(1)"],
        ),
        "tune set" | "tune apply" | "tune revert" => n(
            vec![
                code(0, OK),
                code(1, "A system error: a knob could not be written (the writes made are rolled back), the state file cannot be written."),
                code(2, "A usage error: an unknown knob, a bad value or profile, not root (without --dry-run)."),
            ],
            with(
                tune_knobs(),
                vec![
                    tune_state_file(),
                    file(format!("{tune_state}.lock"), "Locked while numakit tune writes: one at a time."),
                ],
            )
            .into_iter()
            .chain((path == "tune apply").then(profiles_dir))
            .collect(),
            &["sysctl(8)"],
        ),
        "tune profiles" => n(
            vec![code(0, OK), code(1, SYSTEM), code(2, "A profile file is invalid (each is named on standard error; the others are listed).")],
            vec![profiles_dir()],
            &[],
        ),
        "tune check" => n(
            vec![code(0, OK), code(1, "A system error, or with --against: this host differs from the baseline."), code(2, USAGE)],
            with(
                tune_knobs(),
                vec![
                    file("/sys/devices/system/cpu/", "SMT, cpufreq governors and boost, cpuidle states."),
                    file("/sys/devices/system/node/node*/hugepages/", "Huge pages per node."),
                    file("/proc/PID/comm", "Running irqbalance, numad and tuned."),
                ],
            ),
            &[],
        ),
        "bench" | "bench bandwidth" | "bench latency" | "bench loaded" => n(
            usual(),
            with(nodes_files(), vec![file("/sys/devices/system/cpu/cpu*/cache/", "Cache sizes (the default buffer sizes).")]),
            &["numakit-compare(1)"],
        ),
        "compare" => n(
            vec![
                code(0, "The experiment ran; the report says which configuration is better and how sure that is."),
                code(1, "A system error: a run failed, a file cannot be read or written."),
                code(2, "A usage error: a bad configuration, experiment file or option."),
            ],
            vec![],
            &["numakit-run(1)", "numakit-tune(1)"],
        ),
        "daemon" => n(
            vec![
                code(0, "Stopped by SIGTERM or SIGINT (every global setting it changed restored), or after --scans."),
                code(1, "A system error: another daemon answers on the socket, the state folder or socket cannot be written."),
                code(2, "A usage error: a bad configuration file or option, an unknown ctl_group."),
            ],
            with(
                nodes_files(),
                vec![
                    file(DAEMON_CONFIG, "The configuration the Debian package's systemd unit (numakit-daemon.service) passes with --config. Without --config, the built-in defaults."),
                    file(state.clone(), "History, ctl lists, each process's original placement, changed globals; written before and after every action (state_dir)."),
                    file(status.clone(), "Status after every scan, read by numakit exporter (state_dir)."),
                    file(log.clone(), "One JSON object per decision (log)."),
                    file(socket.clone(), "The control socket, mode 0660, group ctl_group (socket)."),
                    file("/proc/PID/", "stat, status, cgroup, statm, numa_maps and task/*/schedstat of the processes it watches."),
                    file("/proc/sys/kernel/numa_balancing", "AutoNUMA: read every scan (while on, only CPUs are placed by default); turned off while it runs with autonuma = \"disable\", and restored."),
                    file("/etc/group", "The ctl_group."),
                ],
            ),
            &["numakit-ctl(1)", "numakit-advise(1)", "numad(8)", "systemd.service(5)"],
        ),
        "ctl" | "ctl status" | "ctl exclude" | "ctl include" | "ctl forget" | "ctl reload" | "ctl decisions" => n(
            vec![
                code(0, OK),
                code(1, "The daemon cannot be reached, refused the request (not root nor in ctl_group), or failed it."),
                code(2, "A usage error: a bad option or target, an unreadable --config."),
            ],
            vec![
                socket_file("The daemon's control socket (--socket, or the socket of --config)."),
                file(DAEMON_CONFIG, "Read only when given with --config, for its socket."),
            ],
            &["numakit-daemon(1)"],
        ),
        "advise" => n(
            vec![
                code(0, "The advice was printed."),
                code(1, SYSTEM),
                code(2, USAGE),
                code(tempfail, "No node can take the job now (EX_TEMPFAIL)."),
            ],
            with(
                nodes_files(),
                vec![
                    socket_file("The running daemon's view of the nodes, if it answers (--socket; not with --no-daemon)."),
                    file("/proc/stat", "Without the daemon: CPU use, sampled over 200 ms."),
                ],
            ),
            &["numakit-run(1)", "numakit-daemon(1)"],
        ),
        "simulate" => n(usual(), vec![], &["numakit-daemon(1)", "numad(8)"]),
        "report" => n(
            vec![
                code(0, "The report was printed (whatever it says about the arms)."),
                code(1, "An input, the sacct file or an output file (the guard file, the proposed policy) cannot be read or written; sacct failed or timed out. An input (or a folder below a named one) that cannot be read to its end is named on standard error and left out; the report of the rest is printed, and the exit status is 1."),
                code(2, USAGE),
            ],
            vec![
                file("DIR/numakit-outcomes.jsonl", "The step outcome records the Slurm plugin and the job wrappers write (report=DIR), plain or gzip."),
                file("$TMPDIR/numakit-report.*", "Spilled job tables beyond --max-jobs-in-memory, removed at the end."),
                file("--guard-file FILE", "Guards added for arms worse than their control on always-valid evidence, under FILE.lock, replaced whole (the format numakit guard reads)."),
                file("--propose-policy OUT, OUT.diff", "The proposed policy (never the --policy file) and its line diff against --policy."),
            ],
            &["sacct(1)", "numakit-stat(1)", "numakit-policy(1)", "numakit-guard(1)"],
        ),
        "policy" | "policy check" | "policy explain" => n(
            vec![
                code(0, "The policy is valid (check: with what a site should know), or the job's rule was explained."),
                code(2, "A usage error, or the policy cannot be read or is not valid: one line with its file, line, column and word."),
            ],
            vec![file("FILE", "The policy file (the plugin's policy=, the wrappers' NUMAKIT_POLICY), at most 1 MiB.")],
            &["numakit-guard(1)", "numakit-report(1)"],
        ),
        "guard" | "guard list" | "guard add" | "guard clear" => n(
            vec![
                code(0, "The guards were listed, or the guard file was written."),
                code(1, "The guard file cannot be read or written, or its lock was held for 10 s."),
                code(2, USAGE),
            ],
            vec![
                file(crate::cmd::policy::DEFAULT_GUARDS, "The guard file (--file; the plugin's guard=, the wrappers' NUMAKIT_GUARD)."),
                file(format!("{}.lock", crate::cmd::policy::DEFAULT_GUARDS), "Locked while numakit guard writes: one at a time."),
            ],
            &["numakit-policy(1)", "numakit-report(1)"],
        ),
        "numactl" => n(
            vec![
                code(0, "Success (--show, --hardware)."),
                code(1, "Any error, as numactl exits."),
                code(126, "The command cannot be run."),
                code(127, "The command is not found."),
                code("other", "Running a command: the command's own (numakit replaced itself with it)."),
            ],
            with(nodes_files(), vec![file("/proc/sys/kernel/osrelease", "Which policies the kernel has.")]),
            &["numactl(8)", "numakit-run(1)"],
        ),
        "completions" => n(
            vec![code(0, OK), code(2, "A usage error: an unknown shell.")],
            vec![
                file("/usr/share/bash-completion/completions/numakit", "Where the Debian package installs the bash script."),
                file("/usr/share/zsh/vendor-completions/_numakit", "... the zsh script."),
                file("/usr/share/fish/vendor_completions.d/numakit.fish", "... the fish script."),
            ],
            &[],
        ),
        _ => None,
    }
}
