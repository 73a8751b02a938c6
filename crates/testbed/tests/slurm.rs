//! The test Slurm itself: it starts, runs a step and a batch job, and leaves
//! nothing behind.

use std::path::Path;

use numakit_testbed::slurm::{Slurm, SlurmSpec};

#[test]
fn starts_runs_jobs_and_cleans_up() {
    let slurm = Slurm::start(&SlurmSpec::default()).unwrap_or_else(|e| panic!("{e}"));
    let out = slurm.run("srun", ["/bin/echo", "hello"]);
    assert!(out.success() && out.stdout == "hello\n", "srun: {out:?}\n{}", slurm.logs());
    let out = slurm.run("sbatch", ["--wait", "-o", "batch.out", "--wrap", "echo batch"]);
    assert!(out.success(), "sbatch: {out:?}\n{}", slurm.logs());
    let batch = std::fs::read_to_string(slurm.workdir().join("batch.out")).unwrap_or_default();
    assert_eq!(batch, "batch\n");
    // A step still running when the harness is dropped is killed with it.
    let mut long = slurm.command("srun").args(["sleep", "300"]).spawn().expect("srun starts");
    let dir = slurm.dir().to_path_buf();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !running_in(&dir, "sleep") {
        assert!(std::time::Instant::now() < deadline, "the step never started\n{}", slurm.logs());
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    drop(slurm);
    let _ = long.wait();
    assert!(!running_in(&dir, "sleep"), "a task outlived the test Slurm");
    assert!(!running_in(&dir, "slurmstepd"), "a slurmstepd outlived the test Slurm");
    assert!(!dir.exists(), "{} was not removed", dir.display());
}

/// Whether a process named `comm` runs with its working directory in `dir`.
fn running_in(dir: &Path, comm: &str) -> bool {
    std::fs::read_dir("/proc").into_iter().flatten().flatten().any(|e| {
        let name = std::fs::read_to_string(e.path().join("comm")).unwrap_or_default();
        let cwd = std::fs::read_link(e.path().join("cwd")).unwrap_or_default();
        let state = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let zombie = state.rsplit(')').next().is_some_and(|r| r.trim_start().starts_with('Z'));
        name.trim() == comm && cwd.starts_with(dir) && !zombie
    })
}
