//! Starts a test Slurm (numakit_testbed::slurm) for scripts: prints
//! `SLURM_CONF=PATH` once it is ready, keeps it up until its standard input
//! closes, then kills it. `plugstack.conf` is in the folder of that file and may
//! be rewritten while it runs (bench/slurm.sh does).
//!
//!   cargo run --release -p numakit-testbed --example slurm-up [TASK_PLUGIN]

use std::io::{Read as _, Write as _};

use numakit_testbed::slurm::{Slurm, SlurmSpec};

fn main() {
    let mut spec = SlurmSpec::default();
    if let Some(task) = std::env::args().nth(1) {
        spec = spec.task_plugin(task);
    }
    let slurm = match Slurm::start(&spec) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("slurm-up: {e}");
            std::process::exit(1);
        }
    };
    println!("SLURM_CONF={}", slurm.conf().display());
    let _ = std::io::stdout().flush();
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
    drop(slurm);
}
