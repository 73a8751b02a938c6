//! `numakit daemon`: automatic placement. The loop around
//! [`numakit::daemon::service::Service`]: scans at the service's interval,
//! the control socket in a thread of its own (requests are handed to the
//! loop, which owns the state), SIGTERM/SIGINT for a clean exit and SIGHUP
//! for a reload.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use clap::Args;
use numakit::act::mempolicy;
use numakit::daemon::apply::Outcome;
use numakit::daemon::ctl::{self, Access};
use numakit::daemon::protocol::{Request, Response};
use numakit::daemon::service::Service;
use numakit::daemon::settings::Settings;
use numakit::sets::NodeSet;
use numakit::sys::SysRoot;

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
    /// Scan interval as numad's -i: MAX or MIN:MAX seconds (overrides the file).
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
        Some(p) => {
            let text = numakit::files::read_named_text(p).map_err(|e| Failure::usage(format!("--config {e}")))?;
            Settings::from_toml(&text, &p.display().to_string()).map_err(|e| Failure::usage(e.to_string()))?
        }
        None => Settings::default(),
    };
    if let Some(i) = interval {
        let parse = |v: &str| v.parse::<f64>().ok().filter(|x| x.is_finite());
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

type CtlMsg = (Request, mpsc::Sender<Response>);

/// Binds the control socket: refuses when another daemon answers there,
/// replaces a stale socket, refuses anything else at that path (a typo in
/// `socket` must never delete a file); mode 0660 with the control group.
fn bind_socket(path: &Path, group: Option<u32>) -> Result<UnixListener, Failure> {
    use std::os::unix::fs::FileTypeExt;
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_socket() => {
            if std::os::unix::net::UnixStream::connect(path).is_ok() {
                return Err(Failure::system(format!("another numakit daemon is running (socket {})", path.display())));
            }
            std::fs::remove_file(path)
                .map_err(|e| Failure::system(format!("cannot replace the stale socket {}: {e}", path.display())))?;
        }
        Ok(_) => {
            return Err(Failure::system(format!(
                "socket {}: something that is not a socket is there; refusing to replace it",
                path.display()
            )))
        }
        Err(_) => {}
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| Failure::system(format!("{}: {e}", dir.display())))?;
    }
    // Bound and given its mode and group under a temporary name, then
    // renamed into place: the socket appears only once it listens, with
    // its final permissions (a client never sees it refuse, or open).
    let mut tmp_name = path.as_os_str().to_owned();
    tmp_name.push(format!(".{}.tmp", std::process::id()));
    let tmp = PathBuf::from(tmp_name);
    let _ = std::fs::remove_file(&tmp);
    let cannot = |e: std::io::Error| Failure::system(format!("cannot listen on {}: {e}", path.display()));
    let l = UnixListener::bind(&tmp).map_err(cannot)?;
    let placed = (|| {
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o660))?;
        if let Some(g) = group {
            std::os::unix::fs::chown(&tmp, None, Some(g))?;
        }
        std::fs::rename(&tmp, path)
    })();
    if let Err(e) = placed {
        let _ = std::fs::remove_file(&tmp);
        return Err(cannot(e));
    }
    Ok(l)
}

/// Connections served at once; one more is answered "busy" at once.
const MAX_CONNECTIONS: usize = 32;

/// Accepts connections, each served in a thread of its own (at most
/// [`MAX_CONNECTIONS`]), so a slow or idle client never delays another.
fn serve(listener: UnixListener, sys: SysRoot, access: Access, tx: mpsc::Sender<CtlMsg>) {
    let open = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    for conn in listener.incoming() {
        let Ok(stream) = conn else { continue };
        let _ = stream.set_write_timeout(Some(Duration::from_secs(5)));
        if open.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
            open.fetch_sub(1, Ordering::SeqCst);
            let _ = ctl::write_response(&stream, &Response::err("the daemon is busy: too many connections"));
            continue;
        }
        let (sys, tx, done) = (sys.clone(), tx.clone(), open.clone());
        let spawned = std::thread::Builder::new().name("numakit-ctl".into()).spawn(move || {
            serve_one(&stream, &sys, access, &tx);
            done.fetch_sub(1, Ordering::SeqCst);
        });
        if spawned.is_err() {
            open.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

fn serve_one(stream: &std::os::unix::net::UnixStream, sys: &SysRoot, access: Access, tx: &mpsc::Sender<CtlMsg>) {
    // The request is read before the access check, so that a refused
    // client reads the refusal instead of a broken pipe.
    let req = ctl::read_request(stream, ctl::REQUEST_TIMEOUT);
    let resp = match (ctl::peer(stream), req) {
        (Err(e), _) => Response::err(format!("cannot read the peer's credentials: {e}")),
        (Ok(p), _) if !access.allows(sys, &p) => Response::err(format!(
            "permission denied: uid {} is not root{}",
            p.uid,
            access.group.map_or(String::new(), |g| format!(" and not in group {g}"))
        )),
        (Ok(_), Err(e)) => Response::err(e),
        (Ok(_), Ok(req)) => {
            let (rtx, rrx) = mpsc::channel();
            if tx.send((req, rtx)).is_err() {
                return;
            }
            rrx.recv_timeout(Duration::from_secs(30))
                .unwrap_or_else(|_| Response::err("the daemon did not answer in 30 s"))
        }
    };
    let _ = ctl::write_response(stream, &resp);
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
    let listener = bind_socket(&socket, group)?;
    install_signals();
    let mut service = match Service::start(sys.clone(), settings, args.config.clone(), args.dry_run) {
        Ok(s) => s,
        Err(e) => {
            let _ = std::fs::remove_file(&socket);
            return Err(Failure::system(e.to_string()).into());
        }
    };
    let (tx, rx) = mpsc::channel::<CtlMsg>();
    {
        let sys = sys.clone();
        let access = Access { group };
        std::thread::spawn(move || serve(listener, sys, access, tx));
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
