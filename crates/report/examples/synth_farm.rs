//! Writes a synthetic farm's step outcome records to standard output
//! (`numakit_report::synth`): the input of bench/report.sh and a way to
//! try `numakit report` without a farm.
//!
//!   cargo run --release -p numakit-report --example synth_farm -- JOBS DAYS SEED [HOSTS_A HOSTS_B [TWO_STEP_PCT]]
//!
//! TWO_STEP_PCT: the share of jobs with a batch step and an srun step, in
//! percent (default 30); 0 gives one line per job.

use std::io::Write;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let num = |i: usize, default: u64| args.get(i).map_or(Ok(default), |a| a.parse::<u64>());
    let (Ok(jobs), Ok(days), Ok(seed), Ok(ha), Ok(hb), Ok(two)) =
        (num(0, 10_000), num(1, 7), num(2, 1), num(3, 12), num(4, 8), num(5, 30))
    else {
        eprintln!("usage: synth_farm JOBS DAYS SEED [HOSTS_A HOSTS_B [TWO_STEP_PCT]] (whole numbers)");
        std::process::exit(2);
    };
    let mut farm = numakit_report::synth::Farm::calibration(seed, jobs);
    farm.days = days as f64;
    farm.hosts = [ha as u32, hb as u32];
    farm.two_steps = (two.min(100) as f64) / 100.0;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 20, stdout.lock());
    match farm.write(&mut out).and_then(|n| out.flush().map(|()| n)) {
        Ok(n) => eprintln!("synth_farm: {n} lines"),
        Err(e) => {
            eprintln!("synth_farm: {e}");
            std::process::exit(1);
        }
    }
}
