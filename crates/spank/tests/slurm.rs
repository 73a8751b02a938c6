//! The plugin in a real Slurm on this machine (numakit_testbed::slurm): the
//! option's wiring in srun, sbatch and salloc, the site's arguments, and that a
//! task's CPUs and memory policy are what the plugin says it gave it. Placement
//! across several NUMA nodes is tested inside the QEMU guest.
//!
//! Needs root and Slurm's packages (scripts/install-deps); fails, never skips,
//! without them.

use std::path::PathBuf;

use numakit_testbed::slurm::{Slurm, SlurmSpec};
use numakit_testbed::Output;

/// The plugin cargo built for this test (the crate's cdylib, beside `deps/`).
fn plugin() -> PathBuf {
    let exe = std::env::current_exe().expect("the test's path");
    let deps = exe.parent().expect("deps/");
    let so = [deps.join("libnumakit_spank.so"), deps.parent().expect("profile folder").join("libnumakit_spank.so")]
        .into_iter()
        .find(|p| p.is_file());
    so.unwrap_or_else(|| panic!("libnumakit_spank.so not found beside {}", deps.display()))
}

/// A plugstack.conf line; the ledger and the (absent) daemon's socket are the
/// test's own, so nothing outside its folder is used.
fn plugstack(kind: &str, args: &str) -> String {
    format!("{kind} {} ledger={{dir}}/ledger socket={{dir}}/no-daemon.sock {args}\n", plugin().display())
}

fn start(plugstack: String) -> Slurm {
    Slurm::start(&SlurmSpec::default().plugstack(plugstack)).unwrap_or_else(|e| panic!("{e}"))
}

fn run(slurm: &Slurm, args: &[&str]) -> Output {
    slurm.run(args[0], &args[1..])
}

/// `args` fails, and its stderr is the plugin's one line naming `typed` with
/// `why`, plus at most Slurm's own lines that also name it (or say a plugin failed).
fn assert_refused(slurm: &Slurm, args: &[&str], typed: &str, why: &str) {
    let out = run(slurm, args);
    let ctx = || format!("{args:?}: {out:?}");
    assert_ne!(out.status, 0, "{}", ctx());
    let ours: Vec<&str> = out.stderr.lines().filter(|l| l.contains("error: numakit: ")).collect();
    assert_eq!(ours.len(), 1, "one line from the plugin: {}", ctx());
    assert!(ours[0].contains(typed) && ours[0].contains(why), "names {typed:?} and says {why:?}: {}", ctx());
    for line in out.stderr.lines() {
        let slurms_own = line.contains("spank")
            || line.contains("Plug-in")
            || line.contains("task 0: Exited")
            || line.starts_with("srun: job ");
        assert!(line.contains(typed) || slurms_own, "a line not about {typed:?}: {line:?} in {}", ctx());
    }
}

/// What the plugin said it gave the task against what the kernel says the task has.
fn assert_placed_as_told(out: &Output, mode: &str) {
    assert!(out.success(), "{out:?}");
    let field = |prefix: &str| -> String {
        let line = out.stdout.lines().find_map(|l| l.strip_prefix(prefix));
        line.unwrap_or_else(|| panic!("no {prefix:?} in {out:?}")).trim().to_string()
    };
    assert_eq!(field("NUMAKIT_NUMA="), mode);
    let placed = field("NUMAKIT_NUMA_PLACED=");
    let (cpus, memory) = placed
        .strip_prefix("cpus ")
        .and_then(|r| r.split_once(", memory "))
        .unwrap_or_else(|| panic!("NUMAKIT_NUMA_PLACED={placed:?}"));
    assert_eq!(field("Cpus_allowed_list:"), cpus, "the task's CPUs");
    let numactl_list = |key: &str| field(key).split_whitespace().collect::<Vec<_>>().join(",");
    match memory.split_once(' ') {
        None => assert_eq!(field("policy:"), memory, "numactl --show's policy"),
        Some((policy, nodes)) => {
            assert_eq!(field("policy:"), policy, "numactl --show's policy");
            let key = if policy == "interleave" { "interleavemask:" } else { "membind:" };
            assert_eq!(numactl_list(key), nodes, "numactl --show's {key}");
        }
    }
}

const SHOW: &str = "echo NUMAKIT_NUMA=$NUMAKIT_NUMA; echo NUMAKIT_NUMA_PLACED=$NUMAKIT_NUMA_PLACED; \
                    grep -E '^(Cpus|Mems)_allowed_list' /proc/self/status; numactl --show";

#[test]
fn option_is_checked_at_submission_and_applied_in_the_task() {
    let slurm = start(plugstack("required", "default=local allowed=auto,none,local"));

    let help = run(&slurm, &["srun", "--help"]);
    assert!(help.success() && help.stdout.contains("--numa=MODE"), "srun --help: {help:?}");
    assert!(help.stdout.contains("allowed here: auto, none, local"), "the site's list in the help: {help:?}");

    let bogus = "invalid --numa value";
    let refused = "not allowed on this cluster";
    assert_refused(&slurm, &["srun", "--numa=bogus", "/bin/true"], "bogus", bogus);
    assert_refused(&slurm, &["srun", "--numa=Local", "/bin/true"], "Local", bogus);
    assert_refused(&slurm, &["srun", "--numa=interleave", "/bin/true"], "interleave", refused);
    assert_refused(&slurm, &["srun", "--numa=nodes:0", "/bin/true"], "nodes:0", refused);
    assert_refused(&slurm, &["sbatch", "--numa=bogus", "--wrap", "true"], "bogus", bogus);
    assert_refused(&slurm, &["sbatch", "--numa=interleave", "--wrap", "true"], "interleave", refused);
    assert_refused(&slurm, &["salloc", "--numa=bogus", "/bin/true"], "bogus", bogus);

    assert_placed_as_told(&run(&slurm, &["srun", "--numa=local", "sh", "-c", SHOW]), "local");
    // The site's default, for a job that does not ask.
    assert_placed_as_told(&run(&slurm, &["srun", "sh", "-c", SHOW]), "local");
    assert_placed_as_told(&run(&slurm, &["srun", "--numa=auto", "sh", "-c", SHOW]), "auto");
    // The task's memory request reaches the decision (the step's memory on
    // this node, S_STEP_ALLOC_MEM, over its tasks here).
    let out = run(&slurm, &["srun", "--numa=auto", "--mem-per-cpu=300M", "/bin/true"]);
    assert!(out.success(), "{out:?}");
    assert!(slurm.log("slurmd").contains("free (need 0.3 GiB)"), "the request in the reason:\n{}", slurm.logs());

    // Two tasks placed at once are both recorded in the ledger while they run,
    // and their entries go when they end (slurm_spank_task_exit).
    let ledger = slurm.dir().join("ledger");
    let wait_both = format!(
        "for i in $(seq 50); do [ $(ls {} | grep -c json) -ge 2 ] && echo both && sleep 1 && exit; sleep 0.1; done; exit 1",
        ledger.display()
    );
    let two = run(&slurm, &["srun", "-n2", "--numa=auto", "sh", "-c", &wait_both]);
    assert!(two.success() && two.stdout == "both\nboth\n", "each task sees both entries: {two:?}");
    let left: Vec<_> = std::fs::read_dir(&ledger).expect("the ledger").flatten().map(|e| e.file_name()).collect();
    assert!(left.iter().all(|n| !n.to_string_lossy().ends_with(".json")), "entries left: {left:?}");

    let batch =
        run(&slurm, &["sbatch", "--wait", "--numa=none", "-o", "none.out", "--wrap", "echo mode=$NUMAKIT_NUMA"]);
    assert!(batch.success(), "sbatch --numa=none: {batch:?}\n{}", slurm.logs());
    let written = std::fs::read_to_string(slurm.workdir().join("none.out")).unwrap_or_default();
    // Asked for none with no daemon to exclude it from: runs, and says so in its output.
    let lines: Vec<&str> = written.lines().collect();
    assert!(
        lines.len() == 2 && lines[0].contains(".batch task 0: no numakit daemon answers") && lines[1] == "mode=none",
        "the batch job's output: {written:?}"
    );

    let log = slurm.log("slurmd");
    let ours: Vec<&str> = log.lines().filter(|l| l.contains("] numakit: slurm job ")).collect();
    assert!(
        ours.iter().any(|l| l.contains(" task 0: local: cpus "))
            && ours.iter().any(|l| l.contains(".batch task 0: none: ")),
        "the plugin's lines in slurmd's log: {ours:#?}"
    );
}

#[test]
fn site_arguments_and_node_lists() {
    let slurm = start(plugstack("required", ""));

    // No arguments: every mode allowed, `none` by default.
    let out = run(&slurm, &["srun", "sh", "-c", "echo $NUMAKIT_NUMA"]);
    assert!(out.success() && out.stdout == "none\n", "{out:?}");
    let node0 = std::fs::read_to_string("/sys/devices/system/node/node0/cpulist").expect("node 0's CPUs");
    let out = run(&slurm, &["srun", "--numa=nodes:0", "sh", "-c", SHOW]);
    assert_placed_as_told(&out, "nodes:0");
    assert!(out.stdout.contains(&format!("NUMAKIT_NUMA_PLACED=cpus {}, memory bind 0\n", node0.trim())), "{out:?}");
    assert_placed_as_told(&run(&slurm, &["srun", "--numa=interleave", "sh", "-c", SHOW]), "interleave");
    // The mode given to sbatch or salloc is the default of the steps inside the job.
    let script = "echo batch=$NUMAKIT_NUMA; srun sh -c 'echo step=$NUMAKIT_NUMA'; \
                  srun --numa=interleave sh -c 'echo own=$NUMAKIT_NUMA'";
    let out = run(&slurm, &["sbatch", "--wait", "--numa=local", "-o", "steps.out", "--wrap", script]);
    assert!(out.success(), "{out:?}");
    let written = std::fs::read_to_string(slurm.workdir().join("steps.out")).unwrap_or_default();
    assert_eq!(written, "batch=local\nstep=local\nown=interleave\n", "sbatch --numa=local's steps");
    let out = run(&slurm, &["salloc", "--numa=interleave", "srun", "sh", "-c", "echo step=$NUMAKIT_NUMA"]);
    assert!(out.success() && out.stdout == "step=interleave\n", "salloc --numa=interleave's step: {out:?}");

    // An auto batch job's steps go where its batch step is. Here the batch
    // step holds every CPU of this host in the ledger; its srun step is
    // placed inside them (it used to count that claim as another job's,
    // find no idle CPU and fail the step: "keep it pending").
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").expect("online CPUs");
    let all = numakit::sets::CpuSet::parse_list(online.trim()).expect("a CPU list").len().to_string();
    let script = "echo batch=$NUMAKIT_NUMA_PLACED; srun sh -c 'echo step=$NUMAKIT_NUMA_PLACED'";
    let out = run(&slurm, &["sbatch", "--wait", "--numa=auto", "-c", &all, "-o", "auto.out", "--wrap", script]);
    let written = std::fs::read_to_string(slurm.workdir().join("auto.out")).unwrap_or_default();
    assert!(out.success(), "{out:?}\n{written}\n{}", slurm.logs());
    let placed: Vec<&str> = written.lines().filter_map(|l| l.split_once('=').map(|x| x.1)).collect();
    assert!(
        written.lines().count() == 2 && placed.len() == 2 && placed[0] == placed[1] && placed[0].starts_with("cpus "),
        "the batch step and its step placed alike: {written:?}"
    );
    assert!(
        slurm.log("slurmd").contains("where its job's other steps are placed here"),
        "the step's reason: {}",
        slurm.logs()
    );

    // A list that reads well but that this host cannot give fails at the step's start.
    assert_refused(&slurm, &["srun", "--numa=nodes:7", "/bin/true"], "nodes:7", "node 7");

    // A report asked for where the step has no cgroup of its own
    // (proctrack/linuxproc here): the step runs, the log says why there is
    // none, and no file appears (the report itself is tested in the guest).
    slurm
        .set_plugstack(&plugstack("required", "report={dir}/reports report_interval=1"))
        .unwrap_or_else(|e| panic!("{e}"));
    let out = run(&slurm, &["srun", "--numa-report=numa-%j.txt", "/bin/true"]);
    assert!(out.success(), "{out:?}");
    assert!(slurm.log("slurmd").contains("no cgroup of the step's own: no NUMA report"), "{}", slurm.logs());
    assert!(!slurm.dir().join("reports").exists());
    let out = run(&slurm, &["srun", "--numa-report=", "/bin/true"]);
    assert!(
        out.status != 0 && out.stderr.contains("numakit: invalid --numa-report value \"\": give a file name"),
        "{out:?}"
    );
    slurm.set_plugstack(&plugstack("optional", "report=relative")).unwrap_or_else(|e| panic!("{e}"));
    let out = run(&slurm, &["srun", "/bin/true"]);
    assert!(out.success() && out.stderr.contains("invalid argument \"report=relative\""), "{out:?}");

    // A bad argument: a required plugin stops srun, an optional one is left out; both say why.
    slurm.set_plugstack(&plugstack("required", "default=bogus")).unwrap_or_else(|e| panic!("{e}"));
    assert_refused(&slurm, &["srun", "/bin/true"], "default=bogus", "plugstack.conf: invalid argument");
    slurm.set_plugstack(&plugstack("optional", "allowed=local,sideways")).unwrap_or_else(|e| panic!("{e}"));
    let out = run(&slurm, &["srun", "/bin/true"]);
    assert!(out.success(), "{out:?}");
    let said: Vec<&str> = out.stderr.lines().filter(|l| l.contains("numakit: ")).collect();
    assert!(said.len() == 1 && said[0].contains("\"sideways\" is not a mode"), "{out:?}");
    assert!(slurm
        .log("slurmd")
        .contains("error: numakit: plugstack.conf: invalid argument \"allowed=local,sideways\""));
}

#[test]
fn a_binding_slurm_made_is_never_widened() {
    let spec = SlurmSpec::default().task_plugin("task/affinity").plugstack(plugstack("required", "default=auto"));
    let slurm = Slurm::start(&spec).unwrap_or_else(|e| panic!("{e}"));
    let cpus_of = |out: &Output| {
        out.stdout.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")).map(str::trim).map(String::from)
    };
    // One task, one CPU: task/affinity binds the task to the CPU of its step.
    let slurms = run(&slurm, &["srun", "--cpu-bind=cores", "--numa=none", "sh", "-c", SHOW]);
    let bound = cpus_of(&slurms).unwrap_or_else(|| panic!("{slurms:?}"));
    assert!(!bound.contains([',', '-']), "Slurm bound the task to one CPU: {slurms:?}");
    for mode in ["auto", "local", "interleave", "nodes:0"] {
        let out = run(&slurm, &["srun", "--cpu-bind=cores", &format!("--numa={mode}"), "sh", "-c", SHOW]);
        assert_placed_as_told(&out, mode);
        assert_eq!(cpus_of(&out).as_deref(), Some(bound.as_str()), "--numa={mode} kept Slurm's binding: {out:?}");
    }
}
