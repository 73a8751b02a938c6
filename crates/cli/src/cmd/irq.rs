//! `numakit irq show`: every device's interrupts seen from its node. The
//! view is `numakit::irq`, the text and JSON `numakit::present::irq`; this
//! module reads, waits `--interval`, and prints.

use numakit::irq::{self, read};
use numakit::present::irq as view;
use numakit::sys::interrupts;
use numakit::sys::SysRoot;
use numakit::topo::Topology;

use super::common::read_error;
use crate::cli::{IrqAction, IrqArgs};
use crate::Failure;

/// Runs `numakit irq`.
pub fn run(sys: &SysRoot, args: &IrqArgs) -> anyhow::Result<u8> {
    match &args.action {
        IrqAction::Show { interval, all, format } => show(sys, interval.as_deref(), *all, format.json),
    }
}

fn show(sys: &SysRoot, interval: Option<&str>, all: bool, json: bool) -> anyhow::Result<u8> {
    let interval = match interval {
        None => None,
        Some(t) => match numakit::units::parse_duration(t) {
            Ok(d) if !d.is_zero() && d.as_secs() <= 86_400 => Some(d),
            Ok(_) => {
                return Err(Failure::usage(format!("--interval {t}: give a duration above 0 and at most 1 day")).into())
            }
            Err(_) => return Err(Failure::usage(format!("--interval {t}: not a duration (2, 2s, 500ms, 1m)")).into()),
        },
    };
    let topo = Topology::read(sys).map_err(read_error)?;
    let first = match interval {
        None => None,
        Some(d) => {
            let sample = interrupts::read_interrupts(sys).map_err(read_error)?;
            if sample.is_none() {
                return Err(Failure::usage(format!(
                    "--interval: no /{} below {}: nothing to count",
                    interrupts::INTERRUPTS,
                    sys.root().display()
                ))
                .into());
            }
            let start = std::time::Instant::now();
            std::thread::sleep(d);
            sample.map(|s| (s, start))
        }
    };
    let readings = read::read(sys).map_err(read_error)?;
    let mut v = irq::build(&topo, &readings);
    if let Some((earlier, start)) = first {
        v = v.with_rates(&earlier, start.elapsed().as_secs_f64());
    }
    let balance = read::irqbalance(sys);
    let filter = view::Filter { all };
    let text = if json {
        view::json(&v, &balance, &sys.root().display().to_string(), sys.is_live(), filter)
    } else {
        view::text(&v, &balance, filter)
    };
    crate::output::print(&text)?;
    Ok(0)
}
