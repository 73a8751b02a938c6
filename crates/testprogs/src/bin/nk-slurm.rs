//! `nk-slurm`: a real Slurm for a shell script, through the test harness
//! (`numakit_testbed::slurm`): starts munged, slurmctld and slurmd as the
//! options say, runs the script with `sh -c`, prints what it printed, kills
//! everything Slurm started and exits with the script's status. For the VM
//! tests, which run it inside the guest (several configurations one after
//! another in one boot); on the host it works the same.
//!
//! ```text
//! nk-slurm [--node NAME] [--task-plugin P] [--proctrack P]
//!          [--plugstack LINE]... [--conf LINE]... [--node-gres GRES] [--gres-conf LINE]... [--cgroup-conf LINE]...
//!          [--ready-timeout SECS] [--accounting] [--logs] SCRIPT
//! ```
//!
//! The script runs in the Slurm's work folder (where its jobs' tasks run
//! too) with `SLURM_CONF`, `NK_SLURM_DIR` (the Slurm's folder: `log/`,
//! `state/`, ...) and `NK_SLURM_NODE` exported. `{dir}` in a plugstack line
//! stands for that folder. With `--logs` the daemons' logs' tails follow
//! the script's stderr. Stderr also gets one line `nk-slurm: ready in S s`.
//! `--accounting` keeps Slurm's accounting in a slurmdbd with MariaDB
//! started in the same folder, so that `sacct` answers.
//! Exit status: the script's; 125 when Slurm did not start (the reason and
//! the daemons' logs on stderr), 2 for a bad option.

use std::time::{Duration, Instant};

use numakit_testbed::slurm::{Slurm, SlurmSpec};

fn usage(msg: &str) -> ! {
    eprintln!("nk-slurm: {msg}");
    eprintln!(
        "usage: nk-slurm [--node NAME] [--task-plugin P] [--proctrack P] [--plugstack LINE]... \
         [--conf LINE]... [--node-gres GRES] [--gres-conf LINE]... [--cgroup-conf LINE]... [--ready-timeout SECS] [--accounting] [--logs] SCRIPT"
    );
    std::process::exit(2)
}

fn main() {
    let mut spec = SlurmSpec::default();
    let mut plugstack = String::new();
    let mut cgroup: Option<String> = None;
    let mut logs = false;
    let mut script: Option<String> = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| usage(&format!("{a} needs a value")));
        match a.as_str() {
            "--node" => spec.node_name = Some(value()),
            "--task-plugin" => spec.task_plugin = value(),
            "--proctrack" => spec.proctrack = value(),
            "--plugstack" => {
                plugstack.push_str(&value());
                plugstack.push('\n');
            }
            "--conf" => spec.extra_conf.push(value()),
            "--node-gres" => spec.node_gres = Some(value()),
            "--gres-conf" => {
                let g = spec.gres_conf.get_or_insert_with(String::new);
                g.push_str(&value());
                g.push('\n');
            }
            "--cgroup-conf" => {
                let c = cgroup.get_or_insert_with(String::new);
                c.push_str(&value());
                c.push('\n');
            }
            "--ready-timeout" => {
                let v = value();
                let secs: u64 = v.parse().unwrap_or_else(|_| usage(&format!("--ready-timeout {v:?}: not seconds")));
                spec.ready_timeout = Duration::from_secs(secs);
            }
            "--logs" => logs = true,
            "--accounting" => spec.accounting = true,
            s if s.starts_with("--") => usage(&format!("unknown option {s}")),
            _ if script.is_none() => script = Some(a),
            _ => usage(&format!("one script only; also given {a:?}")),
        }
    }
    let Some(script) = script else { usage("no script") };
    spec.plugstack = plugstack;
    spec.cgroup_conf = cgroup;

    let t0 = Instant::now();
    let slurm = match Slurm::start(&spec) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("nk-slurm: {e}");
            std::process::exit(125);
        }
    };
    eprintln!("nk-slurm: ready in {:.1} s", t0.elapsed().as_secs_f64());
    let status = slurm
        .command("sh")
        .arg("-c")
        .arg(&script)
        .env("NK_SLURM_DIR", slurm.dir())
        .env("NK_SLURM_NODE", slurm.node())
        .status();
    let code = match status {
        Ok(s) => s.code().unwrap_or_else(|| {
            use std::os::unix::process::ExitStatusExt as _;
            128 + s.signal().unwrap_or(0)
        }),
        Err(e) => {
            eprintln!("nk-slurm: cannot run sh: {e}");
            127
        }
    };
    if logs {
        eprintln!("{}", slurm.logs());
    }
    // Kills every daemon, step and task, removes the folder (exit would not drop).
    drop(slurm);
    std::process::exit(code)
}
