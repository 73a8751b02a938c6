//! The plugin in a real Slurm on this machine (numakit_testbed::slurm): the
//! option's wiring in srun, sbatch and salloc, the site's arguments, and that a
//! task's CPUs and memory policy are what the plugin says it gave it. Placement
//! across several NUMA nodes is tested inside the QEMU guest.
//!
//! Needs root and Slurm's packages (scripts/install-deps); fails, never skips,
//! without them. A plugin built without Slurm's headers (`build.rs`) cannot be
//! loaded: each test then says so and stops, except with `CI=true`, where that fails.

use std::path::{Path, PathBuf};

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

/// Whether the plugin was built for a Slurm (outside CI, a test of a plugin
/// built for none says why it stops; with `CI=true` it fails).
fn built_for_slurm(test: &str) -> bool {
    match numakit_spank::BUILT_FOR {
        Ok(_) => true,
        Err(why) if std::env::var("CI").as_deref() != Ok("true") => {
            eprintln!("{test}: skipped: the plugin was built for no Slurm ({why})");
            false
        }
        Err(why) => panic!("the plugin was built for no Slurm ({why}); CI must test it"),
    }
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
    if !built_for_slurm("option_is_checked_at_submission_and_applied_in_the_task") {
        return;
    }
    let slurm = start(plugstack("required", "default=local allowed=auto,none,local"));

    let help = run(&slurm, &["srun", "--help"]);
    assert!(help.success() && help.stdout.contains("--numa=MODE"), "srun --help: {help:?}");
    // srun wraps the plugin's usage text at its own width: compare words.
    let words = help.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(words.contains("allowed here: auto, none, local"), "the site's list in the help: {help:?}");

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
    // slurmd's own first line (no step prefix), at its start.
    let first = format!(
        "numakit: SPANK plugin {}, built for Slurm {v}, in Slurm {v}",
        env!("CARGO_PKG_VERSION"),
        v = running_slurm()
    );
    let slurmds = log.lines().filter(|l| l.ends_with(&first) && !l.contains("] [")).count();
    assert_eq!(slurmds, 1, "{first:?} in slurmd's log:\n{log}");
    let ours: Vec<&str> = log.lines().filter(|l| l.contains("] numakit: slurm job ")).collect();
    assert!(
        ours.iter().any(|l| l.contains(" task 0: local: cpus "))
            && ours.iter().any(|l| l.contains(".batch task 0: none: ")),
        "the plugin's lines in slurmd's log: {ours:#?}"
    );
}

#[test]
fn site_arguments_and_node_lists() {
    if !built_for_slurm("site_arguments_and_node_lists") {
        return;
    }
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
    // The job's stderr goes apart: under load srun says there "Job N step
    // creation temporarily disabled, retrying" while the last step's
    // resources are released, which is Slurm's business, not the output's.
    let script = "echo batch=$NUMAKIT_NUMA; srun sh -c 'echo step=$NUMAKIT_NUMA'; \
                  srun --numa=interleave sh -c 'echo own=$NUMAKIT_NUMA'";
    let out =
        run(&slurm, &["sbatch", "--wait", "--numa=local", "-o", "steps.out", "-e", "steps.err", "--wrap", script]);
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
    let out = run(
        &slurm,
        &["sbatch", "--wait", "--numa=auto", "-c", &all, "-o", "auto.out", "-e", "auto.err", "--wrap", script],
    );
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
    // none, and no report appears (the report itself is tested in the
    // guest); the step's outcome record does, without its NUMA part.
    slurm
        .set_plugstack(&plugstack("required", "report={dir}/reports report_interval=1"))
        .unwrap_or_else(|e| panic!("{e}"));
    let out = run(&slurm, &["srun", "-n2", "--numa-report=numa-%j.txt", "/bin/true"]);
    assert!(out.success(), "{out:?}");
    assert!(slurm.log("slurmd").contains("no cgroup of the step's own: no NUMA report"), "{}", slurm.logs());
    // ... and so does the job's own output, once (its first task here).
    let said = "no NUMA report (--numa-report): the step has no cgroup of its own here";
    assert_eq!(out.stderr.matches(said).count(), 1, "{out:?}");
    assert!(!slurm.dir().join("reports/numakit-steps.jsonl").exists());
    // slurmstepd writes it in its exit hook, which may come after srun returned.
    let file = slurm.dir().join("reports/numakit-outcomes.jsonl");
    for _ in 0..100 {
        if file.exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let outcomes = std::fs::read_to_string(&file).unwrap_or_default();
    assert!(outcomes.lines().count() == 1 && outcomes.contains("\"numa\":null"), "{outcomes}");
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
    if !built_for_slurm("a_binding_slurm_made_is_never_widened") {
        return;
    }
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

/// A ledger folder that is not as documented (here 0755, so other users'
/// jobs could not record their placements) is said once, in slurmd's log
/// at its start, not in the jobs' output; a missing one is made 1777.
#[test]
fn a_ledger_folder_not_as_documented_is_said_once_in_slurmds_log() {
    use std::os::unix::fs::PermissionsExt;
    if !built_for_slurm("a_ledger_folder_not_as_documented_is_said_once_in_slurmds_log") {
        return;
    }
    let d = tempfile::tempdir().expect("tmp");
    let (closed, missing) = (d.path().join("closed"), d.path().join("run/numakit/jobs"));
    std::fs::create_dir(&closed).expect("ledger");
    std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    for (ledger, problem) in [(&closed, true), (&missing, false)] {
        let line = format!("required {} ledger={} default=auto\n", plugin().display(), ledger.display());
        let slurm = start(line);
        let out = run(&slurm, &["srun", "--numa=auto", "/bin/true"]);
        assert!(out.success() && !out.stderr.contains("ledger"), "nothing in the job's output: {out:?}");
        let log = slurm.log("slurmd");
        let said: Vec<&str> = log.lines().filter(|l| l.contains("numakit: job ledger ")).collect();
        if problem {
            assert_eq!(said.len(), 1, "one line:\n{log}");
            assert!(said[0].contains("mode 0755: other users' jobs cannot write in it"), "{}", said[0]);
        } else {
            assert!(said.is_empty(), "{said:?}");
            let mode = std::fs::metadata(ledger).expect("made").permissions().mode() & 0o7777;
            assert_eq!(mode, 0o1777, "made as documented");
        }
    }
}

/// The site's report folder is written by root in slurmstepd: a user who
/// planted FIFOs at its file names (where the wrappers let users write)
/// must not hang the step's end. The step ends at once, and slurmd's log
/// says why nothing was appended. (The step report's line needs a step
/// cgroup, which this host's Slurm does not make: its file goes by the
/// same rule, `numakit::files::append_line`.)
#[test]
fn fifos_in_the_report_folder_do_not_hang_the_steps_end() {
    if !built_for_slurm("fifos_in_the_report_folder_do_not_hang_the_steps_end") {
        return;
    }
    let d = tempfile::tempdir().expect("tmp");
    for name in ["numakit-steps.jsonl", "numakit-outcomes.jsonl"] {
        let c = std::ffi::CString::new(d.path().join(name).as_os_str().as_encoded_bytes()).expect("path");
        // SAFETY: mkfifo with a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o666) }, 0);
    }
    let slurm = start(plugstack("required", &format!("default=auto report={}", d.path().display())));
    let out = run(&slurm, &["timeout", "60", "srun", "--numa-report=r.txt", "/bin/true"]);
    assert!(out.success(), "the step ended: {out:?}\n{}", slurm.logs());
    let log = slurm.log("slurmd");
    assert!(log.contains("numakit-outcomes.jsonl: not a regular file (a FIFO or socket): not appended to"), "{log}");
}

/// The tested Slurm's version (the packages', or `NUMAKIT_SLURM_PREFIX`'s).
fn running_slurm() -> String {
    numakit_testbed::slurm::install::version().unwrap_or_else(|e| panic!("{e}"))
}

/// A copy of the plugin in `dir` whose `plugin_version` is `number`: the one
/// word that building it against another Slurm's `slurm_version.h` changes
/// (how build.rs reads a header is tested in tests/build_script.rs; a second
/// build of the crate here would cost a minute).
fn plugin_for(number: u32, dir: &Path) -> PathBuf {
    let mut bytes = std::fs::read(plugin()).expect("the plugin");
    let at = symbol_offset(&bytes, "plugin_version").expect("plugin_version in the plugin's dynamic symbols");
    let word = &mut bytes[at..at + 4];
    assert_eq!(u32::from_le_bytes([word[0], word[1], word[2], word[3]]), numakit_spank::SLURM_VERSION_NUMBER);
    word.copy_from_slice(&number.to_le_bytes());
    let to = dir.join(format!("libnumakit_spank-{number:x}.so"));
    std::fs::write(&to, bytes).expect("the copy");
    to
}

/// The file offset of a dynamic symbol's value in a 64-bit little-endian ELF.
fn symbol_offset(elf: &[u8], name: &str) -> Option<usize> {
    let u16_at = |o: usize| Some(u16::from_le_bytes(elf.get(o..o + 2)?.try_into().ok()?) as usize);
    let u32_at = |o: usize| Some(u32::from_le_bytes(elf.get(o..o + 4)?.try_into().ok()?) as usize);
    let u64_at = |o: usize| Some(u64::from_le_bytes(elf.get(o..o + 8)?.try_into().ok()?) as usize);
    if elf.get(..6)? != b"\x7fELF\x02\x01" {
        return None;
    }
    let (shoff, shentsize, shnum) = (u64_at(0x28)?, u16_at(0x3a)?, u16_at(0x3c)?);
    // (type, address, offset, size, link) of each section
    let sections: Vec<_> = (0..shnum)
        .map(|i| {
            let s = shoff + i * shentsize;
            Some((u32_at(s + 4)?, u64_at(s + 0x10)?, u64_at(s + 0x18)?, u64_at(s + 0x20)?, u32_at(s + 0x28)?))
        })
        .collect::<Option<_>>()?;
    const SHT_DYNSYM: usize = 11;
    let &(_, _, symoff, symsize, link) = sections.iter().find(|s| s.0 == SHT_DYNSYM)?;
    let strtab = sections.get(link)?.2;
    (symoff..symoff + symsize).step_by(24).find_map(|sym| {
        let name_at = strtab + u32_at(sym)?;
        let end = elf.get(name_at..)?.iter().position(|&b| b == 0)?;
        if &elf[name_at..name_at + end] != name.as_bytes() {
            return None;
        }
        let (_, addr, offset, _, _) = *sections.get(u16_at(sym + 6)?)?;
        Some(u64_at(sym + 8)? - addr + offset)
    })
}

#[test]
fn another_slurm_version_is_one_line_and_never_a_crash() {
    if !built_for_slurm("another_slurm_version_is_one_line_and_never_a_crash") {
        return;
    }
    let dir = tempfile::tempdir().expect("a folder");
    // 21.08.8: another minor release. Slurm refuses it before any of its code
    // runs, in one line naming the file and the version it was built for.
    let older = plugin_for(0x15_08_08, dir.path());
    let refusal = format!("plugin_load_from_file: Incompatible Slurm plugin {} version (21.08.8)", older.display());
    let ours = |log: &str| log.lines().filter(|l| l.contains("numakit: ")).map(String::from).collect::<Vec<_>>();

    // required: slurmd stops at its start, with an exit status, not a signal.
    let spec = SlurmSpec::default().plugstack(format!("required {} default=local\n", older.display()));
    let err = Slurm::start(&spec).expect_err("slurmd must not start with a required plugin it refuses").to_string();
    assert!(err.contains("slurmd exited (exit status: 1)"), "{err}");
    assert_eq!(err.lines().filter(|l| l.ends_with(&refusal)).count(), 1, "{refusal:?} once in:\n{err}");
    assert!(err.contains("error: slurmd initialization failed"), "{err}");
    assert!(ours(&err).is_empty(), "the plugin's code never ran: {err}");

    // optional: slurmd runs, jobs run without it; slurmd and each step's
    // slurmstepd say once why, and so does srun.
    let slurm = start(format!("optional {} default=local\n", older.display()));
    let out = run(&slurm, &["srun", "sh", "-c", "echo mode=$NUMAKIT_NUMA"]);
    assert!(out.success() && out.stdout == "mode=\n", "{out:?}");
    assert_eq!(out.stderr.lines().filter(|l| l.ends_with(&refusal)).count(), 1, "{out:?}");
    let log = slurm.log("slurmd");
    let refused: Vec<&str> = log.lines().filter(|l| l.contains("Incompatible Slurm plugin")).collect();
    assert!(refused.iter().all(|l| l.ends_with(&refusal)), "{refused:#?}");
    assert_eq!(refused.iter().filter(|l| !l.contains("] [")).count(), 1, "slurmd's own: {refused:#?}");
    assert_eq!(refused.iter().filter(|l| l.contains("] [1.0] ")).count(), 1, "the step's: {refused:#?}");
    assert!(ours(&log).is_empty(), "{log}");
    // Its option is not there either: one of srun's own usage errors.
    let out = run(&slurm, &["srun", "--numa=local", "/bin/true"]);
    assert!(out.status != 0 && out.stderr.contains("unrecognized option '--numa=local'"), "{out:?}");

    // Another micro release of the same major and minor (22.05.2 for
    // 22.05.8), which Slurm loads; the plugin's first line says what it was
    // built for and what loaded it.
    let ours = numakit_spank::SLURM_VERSION_NUMBER;
    let other_micro = (ours & !0xff) | if ours & 0xff == 2 { 3 } else { 2 };
    let micro = plugin_for(other_micro, dir.path());
    slurm
        .set_plugstack(
            &plugstack("required", "").replace(&plugin().display().to_string(), &micro.display().to_string()),
        )
        .unwrap_or_else(|e| panic!("{e}"));
    let out = run(&slurm, &["srun", "--numa=local", "sh", "-c", SHOW]);
    assert_placed_as_told(&out, "local");
    let built = format!("{}.{:02}.{}", other_micro >> 16, (other_micro >> 8) & 0xff, other_micro & 0xff);
    let said = format!(
        "numakit: SPANK plugin {}, built for Slurm {built}, in Slurm {}",
        env!("CARGO_PKG_VERSION"),
        running_slurm()
    );
    let log = slurm.log("slurmd");
    assert_eq!(log.lines().filter(|l| l.contains("] [2.0] ") && l.ends_with(&said)).count(), 1, "{said:?} in:\n{log}");
}

/// `--numa=nodes:LIST` that this host cannot give fails the step under
/// `optional` as under `required` (Slurm itself would ignore a failing hook
/// of an optional plugin and run the task unplaced): the plugin's one line
/// in the job's output, the task ended with status 1 before its program ran.
#[test]
fn an_unsatisfiable_node_list_fails_the_step_under_optional_and_required() {
    if !built_for_slurm("an_unsatisfiable_node_list_fails_the_step_under_optional_and_required") {
        return;
    }
    let slurm = start(plugstack("optional", ""));
    for kind in ["optional", "required"] {
        slurm.set_plugstack(&plugstack(kind, "")).unwrap_or_else(|e| panic!("{e}"));
        let args = ["srun", "--numa=nodes:7", "sh", "-c", "echo ran"];
        assert_refused(&slurm, &args, "nodes:7", "node 7");
        let out = run(&slurm, &args);
        assert!(out.status == 1 && !out.stdout.contains("ran"), "{kind}: the program never ran: {out:?}");
        eprintln!("{kind}: srun --numa=nodes:7 says:\n{}", out.stderr);
        let file = format!("nodes7-{kind}.out");
        let out = run(&slurm, &["sbatch", "--wait", "--numa=nodes:7", "-o", &file, "--wrap", "echo ran"]);
        let written = std::fs::read_to_string(slurm.workdir().join(&file)).unwrap_or_default();
        assert!(out.status != 0, "{kind}: sbatch --wait: {out:?}\n{written}");
        let ours: Vec<&str> = written.lines().filter(|l| l.contains("numakit: ")).collect();
        assert!(
            ours.len() == 1 && ours[0].contains("nodes:7") && !written.contains("ran"),
            "{kind}: the batch job's output: {written:?}"
        );
        eprintln!("{kind}: sbatch --numa=nodes:7's output:\n{written}");
    }
}

/// The job ledger's entries, as file names.
fn ledger_entries(slurm: &Slurm) -> Vec<String> {
    let dir = slurm.dir().join("ledger");
    let names = std::fs::read_dir(dir).into_iter().flatten().flatten();
    names.map(|e| e.file_name().to_string_lossy().into_owned()).filter(|n| n.ends_with(".json")).collect()
}

/// Waits (30 s at most) until `ready`; false when it never was.
fn wait_until(mut ready: impl FnMut() -> bool) -> bool {
    let end = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !ready() {
        if std::time::Instant::now() > end {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    true
}

/// The outcome records written so far (`report={dir}/reports`).
fn outcome_records(slurm: &Slurm) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(slurm.dir().join("reports/numakit-outcomes.jsonl")).unwrap_or_default();
    text.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect()
}

/// Nothing of the plugin's at error level in slurmd's log (and no panic).
fn assert_no_plugin_error(slurm: &Slurm) {
    let log = slurm.log("slurmd");
    let bad: Vec<&str> = log.lines().filter(|l| l.contains("error: numakit") || l.contains("panicked")).collect();
    assert!(bad.is_empty(), "the plugin's errors in slurmd's log: {bad:#?}");
}

/// `scancel` while a placed step runs: the task dies of Slurm's signal,
/// slurmstepd still runs the plugin's task_exit and exit hooks (its ledger
/// entry goes, the step's outcome record says the signal), nothing of the
/// plugin's fails, and the next job is placed as usual.
#[test]
fn a_job_cancelled_mid_step_leaves_its_record_and_no_ledger_entry() {
    if !built_for_slurm("a_job_cancelled_mid_step_leaves_its_record_and_no_ledger_entry") {
        return;
    }
    let slurm = start(plugstack("required", "default=auto report={dir}/reports"));
    let srun = slurm
        .command("srun")
        .args(["-J", "long", "--numa=auto", "sleep", "300"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("srun starts");
    assert!(wait_until(|| !ledger_entries(&slurm).is_empty()), "the task was never placed\n{}", slurm.logs());
    let job = run(&slurm, &["squeue", "-h", "-n", "long", "-o", "%i"]).stdout.trim().to_string();
    let out = run(&slurm, &["scancel", &job]);
    assert!(out.success() && !job.is_empty(), "scancel {job}: {out:?}");
    let srun = srun.wait_with_output().expect("srun ends");
    assert!(!srun.status.success(), "srun of a cancelled job: {srun:?}");
    assert!(wait_until(|| !outcome_records(&slurm).is_empty()), "no outcome record\n{}", slurm.logs());
    let records = outcome_records(&slurm);
    let r = &records[0];
    assert!(records.len() == 1 && r["job"].as_str() == Some(job.as_str()), "{records:#?}");
    assert!(r["exit_signal"].as_i64().is_some_and(|s| s > 0) && r["exit_status"].is_null(), "killed: {r}");
    assert!(wait_until(|| ledger_entries(&slurm).is_empty()), "left in the ledger: {:?}", ledger_entries(&slurm));
    assert_no_plugin_error(&slurm);
    let out = run(&slurm, &["srun", "--numa=auto", "sh", "-c", SHOW]);
    assert_placed_as_told(&out, "auto");
}

/// slurmd stopped while a placed step runs (a node's slurmd restarted by
/// its administrator): the step, which slurmstepd runs on its own, ends as
/// it would have, with its output and outcome record; the plugin's exit
/// hooks run without slurmd; slurmd started again loads the plugin and the
/// next job is placed as usual.
#[test]
fn slurmd_stopped_mid_job_the_step_ends_as_it_would() {
    if !built_for_slurm("slurmd_stopped_mid_job_the_step_ends_as_it_would") {
        return;
    }
    let mut slurm = start(plugstack("required", "default=auto report={dir}/reports"));
    let script = "while [ ! -e go ]; do sleep 0.1; done; echo placed=$NUMAKIT_NUMA_PLACED";
    let srun = slurm
        .command("srun")
        .args(["--numa=auto", "sh", "-c", script])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("srun starts");
    assert!(wait_until(|| !ledger_entries(&slurm).is_empty()), "the task was never placed\n{}", slurm.logs());
    let stopped = slurm.stop("slurmd").unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(slurm.workdir().join("go"), "").expect("go");
    let srun = srun.wait_with_output().expect("srun ends");
    let stdout = String::from_utf8_lossy(&srun.stdout);
    assert!(
        srun.status.success() && stdout.starts_with("placed=cpus "),
        "the step without slurmd ({stopped}): {srun:?}\n{}",
        slurm.logs()
    );
    assert!(wait_until(|| !outcome_records(&slurm).is_empty()), "no outcome record\n{}", slurm.logs());
    let r = &outcome_records(&slurm)[0];
    assert!(r["exit_status"].as_i64() == Some(0) && r["exit_signal"].is_null(), "{r}");
    assert!(wait_until(|| ledger_entries(&slurm).is_empty()), "left in the ledger: {:?}", ledger_entries(&slurm));
    slurm.restart_slurmd(std::time::Duration::from_secs(60)).unwrap_or_else(|e| panic!("{e}"));
    let out = run(&slurm, &["srun", "--numa=auto", "sh", "-c", SHOW]);
    assert_placed_as_told(&out, "auto");
    assert_no_plugin_error(&slurm);
    let starts =
        slurm.log("slurmd").lines().filter(|l| l.contains("numakit: SPANK plugin") && !l.contains("] [")).count();
    assert_eq!(starts, 2, "slurmd loaded the plugin at each start");
}

/// On a cgroup v1 host (EL8's default, and this machine's kind) with
/// Slurm's cgroup plugins: the step's report names v1's
/// `cpuset.effective_cpus` with the step's CPUs, and its outcome record has
/// the cgroup's peak memory. (The reader's v1 cases: synthetic trees in
/// the library's tests.)
#[test]
fn a_cgroup_v1_step_has_its_report_and_record() {
    if !built_for_slurm("a_cgroup_v1_step_has_its_report_and_record") {
        return;
    }
    if !Path::new("/sys/fs/cgroup/memory/tasks").exists() {
        eprintln!("a_cgroup_v1_step_has_its_report_and_record: no cgroup v1 memory hierarchy on this host");
        return;
    }
    let mut spec = SlurmSpec::default()
        .task_plugin("task/cgroup")
        .proctrack("proctrack/cgroup")
        .plugstack(plugstack("required", "default=local report={dir}/reports report_interval=1"));
    spec.cgroup_conf = Some("CgroupPlugin=cgroup/v1\nConstrainCores=yes\nConstrainRAMSpace=yes\n".into());
    // (the later line wins over the harness's jobacct_gather/none)
    spec.extra_conf.push("JobAcctGatherType=jobacct_gather/cgroup".into());
    let slurm = Slurm::start(&spec).unwrap_or_else(|e| panic!("{e}"));
    let script = "head -c 50000000 /dev/zero | tail -c 1 > /dev/null; sleep 2; cat /proc/self/cgroup";
    let out = run(&slurm, &["srun", "--mem=200M", "--numa-report=v1-%j.txt", "sh", "-c", script]);
    eprintln!("{out:?}");
    assert!(out.success(), "{out:?}\n{}", slurm.logs());
    assert!(wait_until(|| !outcome_records(&slurm).is_empty()), "no outcome record\n{}", slurm.logs());
    let r = &outcome_records(&slurm)[0];
    eprintln!("record: {r}");
    // slurmstepd's exit hook writes the record first, then the report.
    let file = slurm.workdir().join("v1-1.txt");
    wait_until(|| std::fs::read_to_string(&file).is_ok_and(|t| t.contains("locality")));
    let report = std::fs::read_to_string(&file).unwrap_or_default();
    eprintln!("report:\n{report}");
    assert!(report.contains("cpuset.effective_cpus)"), "the CPUs from v1's file: {report}\n{}", slurm.logs());
    assert!(report.contains("counters (memory.stat"), "v1's memory.stat, read: {report}");
    assert!(r["peak_memory_bytes"].as_u64().is_some_and(|b| b > 0), "peak memory: {r}");
    assert_eq!(r["cpu_source"].as_str(), Some("cpuacct"), "CPU time from the step's cpuacct cgroup: {r}");
}
