//! The control socket of `numakit ctl` and `numakit advise`: a Unix stream
//! socket, one JSON request line in, one JSON response line out (what they
//! hold is [`super::protocol`]); its server ([`bind`], [`serve`]: each
//! connection in a thread of its own, its request handed to the daemon's
//! loop, which owns the state) and the typed [`Client`].
//!
//! Only root, or members of a configured group, may use it: the peer's
//! credentials come from the kernel (`SO_PEERCRED`), its supplementary
//! groups from `/proc/PID/status`; the socket file is mode 0660 and owned
//! by that group. numad's control queue took anyone's message.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::io::AsRawFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use serde::de::DeserializeOwned;

use super::protocol::{DecisionRecord, Done, NodeView, Status, Target};
use super::protocol::{Request, Response};
use crate::sys::SysRoot;

/// The peer of a connection, as the kernel reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Peer {
    /// Process id.
    pub pid: i32,
    /// Effective uid.
    pub uid: u32,
    /// Effective gid.
    pub gid: u32,
}

/// The peer credentials of a Unix socket (`SO_PEERCRED`).
pub fn peer(stream: &UnixStream) -> std::io::Result<Peer> {
    let mut cred = libc::ucred { pid: 0, uid: 0, gid: 0 };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `cred` is a valid, writable ucred of `len` bytes and the
    // descriptor belongs to `stream`, alive for the call.
    let r = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(Peer { pid: cred.pid, uid: cred.uid, gid: cred.gid })
}

/// Who may use the socket: root, and members of `group` when set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Access {
    /// The group's gid.
    pub group: Option<u32>,
}

impl Access {
    /// Whether `peer` may use the socket; its supplementary groups are read
    /// from `/proc/PID/status` below `sys`.
    pub fn allows(&self, sys: &SysRoot, peer: &Peer) -> bool {
        if peer.uid == 0 {
            return true;
        }
        let Some(g) = self.group else { return false };
        if peer.gid == g {
            return true;
        }
        supplementary_groups(sys, peer.pid).contains(&g)
    }
}

/// The `Groups:` line of `/proc/PID/status`.
pub fn supplementary_groups(sys: &SysRoot, pid: i32) -> Vec<u32> {
    sys.read(format!("proc/{pid}/status"))
        .ok()
        .flatten()
        .and_then(|t| {
            crate::sys::status_field(&t, "Groups:")
                .map(|g| g.split_whitespace().filter_map(|x| x.parse().ok()).collect())
        })
        .unwrap_or_default()
}

/// The gid of a group given by name (from `etc/group` below `sys`) or
/// number.
pub fn group_id(sys: &SysRoot, group: &str) -> Option<u32> {
    if let Ok(n) = group.parse() {
        return Some(n);
    }
    let text = sys.read("etc/group").ok().flatten()?;
    text.lines().find_map(|l| {
        let mut f = l.split(':');
        (f.next()? == group).then(|| f.nth(1).and_then(|g| g.parse().ok())).flatten()
    })
}

/// The longest request line read, bytes (a request is a few dozen).
pub const MAX_REQUEST_BYTES: usize = 4096;

/// How long a client may take to send its whole request.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(2);

/// Reads one request line from a connection: at most
/// [`MAX_REQUEST_BYTES`], all of it within `timeout` (not per read, so a
/// client sending a byte at a time cannot hold the connection longer).
/// Errors never quote the request.
pub fn read_request(stream: &UnixStream, timeout: Duration) -> Result<Request, String> {
    let deadline = std::time::Instant::now() + timeout;
    let mut line: Vec<u8> = Vec::new();
    let mut buf = [0u8; 512];
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return Err(format!("the request did not arrive within {} s", timeout.as_secs_f64()));
        }
        stream.set_read_timeout(Some(left)).map_err(|e| format!("reading the request: {e}"))?;
        let n = match (&*stream).read(&mut buf) {
            Ok(n) => n,
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                return Err(format!("the request did not arrive within {} s", timeout.as_secs_f64()))
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(format!("reading the request: {e}")),
        };
        let end = buf[..n].iter().position(|&b| b == b'\n');
        line.extend_from_slice(&buf[..end.unwrap_or(n)]);
        if line.len() > MAX_REQUEST_BYTES {
            return Err(format!("the request is longer than {MAX_REQUEST_BYTES} bytes"));
        }
        if end.is_some() || n == 0 {
            break;
        }
    }
    let text = std::str::from_utf8(&line).map_err(|_| "the request is not UTF-8".to_string())?;
    serde_json::from_str(text.trim()).map_err(|e| format!("bad request: {}", describe_json_error(&e)))
}

/// serde's message without the input it may quote, bounded.
fn describe_json_error(e: &serde_json::Error) -> String {
    let msg: String = e.to_string().chars().filter(|c| !c.is_control()).take(160).collect();
    msg
}

/// Writes one response line.
pub fn write_response(mut stream: &UnixStream, resp: &Response) -> std::io::Result<()> {
    let mut text = serde_json::to_string(resp).unwrap_or_else(|_| "{\"ok\":false}".into());
    text.push('\n');
    stream.write_all(text.as_bytes())
}

/// A request handed from a connection to the daemon's loop, with where the
/// loop sends its response.
pub type CtlMsg = (Request, mpsc::Sender<Response>);

/// Connections served at once; one more is answered "busy" at once.
pub const MAX_CONNECTIONS: usize = 32;

/// How long a connection waits for the loop's response.
pub const RESPONSE_TIMEOUT: Duration = Duration::from_secs(30);

/// Why the control socket could not be set up (one line, naming the path).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BindError(String);

/// Binds the control socket: refuses when another daemon answers there,
/// replaces a stale socket, refuses anything else at that path (a typo in
/// `socket` must never delete a file); mode 0660 with the control group.
pub fn bind(path: &Path, group: Option<u32>) -> Result<UnixListener, BindError> {
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_socket() => {
            if UnixStream::connect(path).is_ok() {
                return Err(BindError(format!("another numakit daemon is running (socket {})", path.display())));
            }
            std::fs::remove_file(path)
                .map_err(|e| BindError(format!("cannot replace the stale socket {}: {e}", path.display())))?;
        }
        Ok(_) => {
            return Err(BindError(format!(
                "socket {}: something that is not a socket is there; refusing to replace it",
                path.display()
            )))
        }
        Err(_) => {}
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| BindError(format!("{}: {e}", dir.display())))?;
    }
    // Bound and given its mode and group under a temporary name, then
    // renamed into place: the socket appears only once it listens, with
    // its final permissions (a client never sees it refuse, or open).
    let mut tmp_name = path.as_os_str().to_owned();
    tmp_name.push(format!(".{}.tmp", std::process::id()));
    let tmp = PathBuf::from(tmp_name);
    let _ = std::fs::remove_file(&tmp);
    let cannot = |e: std::io::Error| BindError(format!("cannot listen on {}: {e}", path.display()));
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

/// Accepts connections until the listener fails, each served in a thread
/// of its own (at most [`MAX_CONNECTIONS`]), so a slow or idle client never
/// delays another: the request is read ([`read_request`]), the peer checked
/// against `access`, and the request handed to the daemon's loop through
/// `tx`, whose response is written back. Blocks: the caller runs it in a
/// thread.
pub fn serve(listener: UnixListener, sys: SysRoot, access: Access, tx: mpsc::Sender<CtlMsg>) {
    let open = Arc::new(AtomicUsize::new(0));
    for conn in listener.incoming() {
        let Ok(stream) = conn else { continue };
        let _ = stream.set_write_timeout(Some(Duration::from_secs(5)));
        if open.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
            open.fetch_sub(1, Ordering::SeqCst);
            let _ = write_response(&stream, &Response::err("the daemon is busy: too many connections"));
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

fn serve_one(stream: &UnixStream, sys: &SysRoot, access: Access, tx: &mpsc::Sender<CtlMsg>) {
    // The request is read before the access check, so that a refused
    // client reads the refusal instead of a broken pipe.
    let req = read_request(stream, REQUEST_TIMEOUT);
    let resp = match (peer(stream), req) {
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
            rrx.recv_timeout(RESPONSE_TIMEOUT).unwrap_or_else(|_| Response::err("the daemon did not answer in 30 s"))
        }
    };
    let _ = write_response(stream, &resp);
}

/// Why a client request failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// No daemon listens there.
    #[error("no numakit daemon at {0} ({1})")]
    NoDaemon(String, std::io::Error),
    /// The daemon answered that it could not do it.
    #[error("{0}")]
    Refused(String),
    /// The socket refused us or broke, or the answer was not understood.
    #[error("{0}")]
    Io(String),
}

/// Sends one request and reads the response.
pub fn request(socket: &Path, req: &Request, timeout: Duration) -> Result<Response, ClientError> {
    let s = UnixStream::connect(socket).map_err(|e| match e.kind() {
        // The daemon is there, the socket file's mode keeps us out.
        std::io::ErrorKind::PermissionDenied => ClientError::Io(format!(
            "permission denied on {}: only root and the daemon's ctl_group may use it",
            socket.display()
        )),
        _ => ClientError::NoDaemon(socket.display().to_string(), e),
    })?;
    s.set_read_timeout(Some(timeout)).ok();
    s.set_write_timeout(Some(timeout)).ok();
    let mut text = serde_json::to_string(req).map_err(|e| ClientError::Io(e.to_string()))?;
    text.push('\n');
    (&s).write_all(text.as_bytes()).map_err(|e| ClientError::Io(format!("{}: {e}", socket.display())))?;
    let mut line = String::new();
    BufReader::new(&s)
        .read_line(&mut line)
        .map_err(|e| ClientError::Io(format!("{}: no answer: {e}", socket.display())))?;
    if line.trim().is_empty() {
        return Err(ClientError::Io(format!("{}: the daemon closed the connection", socket.display())));
    }
    serde_json::from_str(line.trim()).map_err(|e| ClientError::Io(format!("{}: bad answer: {e}", socket.display())))
}

/// A client of one daemon's control socket: one method per request, each
/// returning the request's typed answer.
#[derive(Debug, Clone)]
pub struct Client {
    /// The socket.
    pub socket: std::path::PathBuf,
    /// How long to wait for the daemon, per read or write.
    pub timeout: Duration,
}

impl Client {
    /// A client of the daemon at `socket`.
    pub fn new(socket: impl Into<std::path::PathBuf>, timeout: Duration) -> Self {
        Self { socket: socket.into(), timeout }
    }

    fn call<T: DeserializeOwned>(&self, req: &Request) -> Result<T, ClientError> {
        let resp = request(&self.socket, req, self.timeout)?;
        if !resp.ok {
            return Err(ClientError::Refused(resp.error.unwrap_or_else(|| "the daemon refused".into())));
        }
        resp.answer().map_err(|e| ClientError::Io(format!("{}: bad answer: {e}", self.socket.display())))
    }

    /// The daemon's state and counters.
    pub fn status(&self) -> Result<Status, ClientError> {
        self.call(&Request::Status)
    }

    /// The last `last` decisions, oldest first.
    pub fn decisions(&self, last: usize) -> Result<Vec<DecisionRecord>, ClientError> {
        self.call(&Request::Decisions { last })
    }

    /// Never touch `target`.
    pub fn exclude(&self, target: Target) -> Result<Done, ClientError> {
        self.call(&Request::Exclude { target })
    }

    /// Manage `target` again.
    pub fn include(&self, target: Target) -> Result<Done, ClientError> {
        self.call(&Request::Include { target })
    }

    /// Forget `target` (both lists and its harm memory).
    pub fn forget(&self, target: Target) -> Result<Done, ClientError> {
        self.call(&Request::Forget { target })
    }

    /// Re-read the configuration file.
    pub fn reload(&self) -> Result<Done, ClientError> {
        self.call(&Request::Reload)
    }

    /// The daemon's view of the nodes (idle CPUs, free memory, reserved
    /// CPUs) from its last scan.
    pub fn node_view(&self) -> Result<NodeView, ClientError> {
        self.call(&Request::Advise { cpus: 0, mem_bytes: 0, reserve: String::new() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn access_by_uid_gid_and_groups() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("proc/42")).unwrap();
        std::fs::write(d.path().join("proc/42/status"), "Name:\tx\nGroups:\t10 27 1001 \n").unwrap();
        std::fs::create_dir_all(d.path().join("etc")).unwrap();
        std::fs::write(d.path().join("etc/group"), "root:x:0:\nnumakit:x:1001:alice\n").unwrap();
        let sys = SysRoot::at(d.path());
        assert_eq!(group_id(&sys, "numakit"), Some(1001));
        assert_eq!(group_id(&sys, "77"), Some(77));
        assert_eq!(group_id(&sys, "nope"), None);
        let root_only = Access { group: None };
        let grp = Access { group: Some(1001) };
        let alice = Peer { pid: 42, uid: 1000, gid: 1000 };
        assert!(root_only.allows(&sys, &Peer { pid: 1, uid: 0, gid: 0 }));
        assert!(!root_only.allows(&sys, &alice));
        assert!(grp.allows(&sys, &alice));
        assert!(grp.allows(&sys, &Peer { pid: 7, uid: 1000, gid: 1001 }));
        assert!(!grp.allows(&sys, &Peer { pid: 7, uid: 1000, gid: 1000 }));
    }

    #[test]
    fn peer_credentials_of_a_socket_pair() {
        let (a, _b) = UnixStream::pair().unwrap();
        let p = peer(&a).unwrap();
        assert_eq!(p.pid, std::process::id() as i32);
        // SAFETY: plain getters.
        assert_eq!(p.uid, unsafe { libc::geteuid() });
    }
}
