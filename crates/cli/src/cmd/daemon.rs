//! `numakit daemon`: automatic placement. The loop around
//! [`numakit::daemon::service::Service`]: scans at the service's interval,
//! the control socket's server ([`numakit::daemon::ctl::serve`]) in a
//! thread of its own (requests are handed to the loop, which owns the
//! state), SIGTERM/SIGINT for a clean exit and SIGHUP for a reload.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use clap::Args;
use numakit::act::mempolicy;
use numakit::daemon::apply::Outcome;
use numakit::daemon::ctl::{self, Access};
use numakit::daemon::protocol::Request;
use numakit::daemon::service::Service;
use numakit::daemon::settings::Settings;
use numakit::sets::NodeSet;
use numakit::sys::SysRoot;

use super::common::config_error;
use crate::Failure;

/// `numakit daemon`.
#[derive(Debug, Args)]
pub struct DaemonArgs {
    /// Configuration file (TOML; see contrib/numakit-daemon.toml). Without it, the defaults.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Decide and log, change nothing (no state file is written).
    #[arg(long)]
    pub dry_run: bool,
    /// Scan interval as numad's -i: MAX or MIN:MAX seconds (or 500ms, 2s, 1m; overrides the file).
    #[arg(long, short = 'i', value_name = "[MIN:]MAX")]
    pub interval: Option<String>,
    /// Stop after N scans (tests and benchmarks).
    #[arg(long, value_name = "N")]
    pub scans: Option<u64>,
}

static SIGNAL: AtomicI32 = AtomicI32::new(0);
static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(sig: libc::c_int) {
    // Only atomics: async-signal-safe.
    SIGNAL.store(sig, Ordering::SeqCst);
    if sig != libc::SIGHUP {
        STOP.store(true, Ordering::SeqCst);
    }
}

fn install_signals() {
    for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
        // SAFETY: the handler only stores to atomics.
        unsafe { libc::signal(sig, on_signal as *const () as libc::sighandler_t) };
    }
}

/// Reads the settings from `--config` and applies `--interval`.
pub fn load_settings(config: Option<&Path>, interval: Option<&str>) -> Result<Settings, Failure> {
    let mut s = match config {
        Some(p) => Settings::load(p).map_err(|e| config_error(p, e))?,
        None => Settings::default(),
    };
    if let Some(i) = interval {
        let parse = |v: &str| numakit::units::parse_seconds(v).ok();
        let (min, max) = match i.split_once(':') {
            Some((a, b)) => (parse(a), parse(b)),
            None => (Some(s.interval_min_s.min(parse(i).unwrap_or(0.0))), parse(i)),
        };
        let (Some(min), Some(max)) = (min, max) else {
            return Err(Failure::usage(format!("invalid --interval {i}: give MAX or MIN:MAX seconds")));
        };
        s.interval_min_s = min;
        s.interval_max_s = max;
        s.validate().map_err(|e| Failure::usage(format!("--interval {i}: {e}")))?;
    }
    Ok(s)
}

/// Runs the daemon until a signal (or `--scans`).
pub fn run(sys: &SysRoot, args: &DaemonArgs) -> anyhow::Result<u8> {
    if !sys.is_live() && !args.dry_run {
        return Err(Failure::usage("the daemon acts on live processes: --sysroot needs --dry-run").into());
    }
    let settings = load_settings(args.config.as_deref(), args.interval.as_deref())?;
    if sys.is_live() {
        // The daemon's own pages out of kernel AutoNUMA's reach: under an
        // explicit local policy (allocation as by default, on the node of
        // the CPU that faults a page in) the kernel neither scans nor moves
        // them. Set before any thread starts: threads inherit it. Without
        // it, beside a balancing kernel, the placer itself would add page
        // migrations of its own.
        if let Err(e) = mempolicy::set_mempolicy(mempolicy::Mode::Local, mempolicy::ModeFlags::NONE, &NodeSet::new()) {
            eprintln!("numakit daemon: warning: own memory policy left as it was: {e}");
        }
    }
    let group = if settings.ctl_group.is_empty() {
        None
    } else {
        Some(ctl::group_id(sys, &settings.ctl_group).ok_or_else(|| {
            Failure::usage(format!("ctl_group {:?}: no such group in /etc/group", settings.ctl_group))
        })?)
    };
    let socket = settings.socket.clone();
    let listener = ctl::bind(&socket, group).map_err(|e| Failure::system(e.to_string()))?;
    install_signals();
    let mut service = match Service::start(sys.clone(), settings, args.config.clone(), args.dry_run) {
        Ok(s) => s,
        Err(e) => {
            let _ = std::fs::remove_file(&socket);
            return Err(Failure::system(e.to_string()).into());
        }
    };
    let (tx, rx) = mpsc::channel::<ctl::CtlMsg>();
    {
        let sys = sys.clone();
        let access = Access { group };
        std::thread::spawn(move || ctl::serve(listener, sys, access, tx));
    }
    eprintln!(
        "numakit daemon: pid {}, socket {}, interval {}-{} s{}",
        std::process::id(),
        socket.display(),
        service.settings().interval_min_s,
        service.settings().interval_max_s,
        if args.dry_run { ", dry run" } else { "" }
    );
    let clock = Instant::now();
    let mut next = Instant::now();
    let mut scans = 0u64;
    while !STOP.load(Ordering::SeqCst) {
        if SIGNAL.swap(0, Ordering::SeqCst) == libc::SIGHUP {
            let r = service.handle(&Request::Reload);
            eprintln!("numakit daemon: SIGHUP: {}", r.error.unwrap_or_else(|| "reloaded".into()));
        }
        let wait = next.saturating_duration_since(Instant::now()).min(Duration::from_millis(200));
        match rx.recv_timeout(wait) {
            Ok((req, reply)) => {
                let _ = reply.send(service.handle(&req));
                continue;
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => {}
        }
        if Instant::now() < next {
            continue;
        }
        match service.scan(clock.elapsed().as_secs_f64()) {
            Ok(report) => {
                for (a, o) in &report.results {
                    if a.changes() && !matches!(o, Outcome::NotDone { .. }) {
                        eprintln!("numakit daemon: pid {}: {:?}: {} -> {}", a.pid, a.kind, a.reason, o.name());
                    }
                }
            }
            Err(e) => eprintln!("numakit daemon: scan failed: {e}"),
        }
        scans += 1;
        if args.scans.is_some_and(|n| scans >= n) {
            break;
        }
        next = Instant::now() + Duration::from_secs_f64(service.interval());
    }
    service.shutdown();
    let _ = std::fs::remove_file(&socket);
    eprintln!("numakit daemon: stopped after {scans} scans");
    Ok(0)
}
