//! The control socket: a Unix stream socket, one request line per connection, the peer's
//! credentials (`SO_PEERCRED`) checked against the config before anything is read.
//!
//! A slow or hostile client cannot block the agent nor other clients:
//!
//! - a request must arrive whole within [`REQUEST_DEADLINE`] of the connection being accepted
//!   (one deadline for the whole request, not per read: trickling a byte a second does not
//!   keep a connection);
//! - at most [`MAX_CONNECTIONS`] connections are served at once, and at most [`MAX_PER_UID`]
//!   of one uid, so one client (or one user) cannot take every slot;
//! - a refused peer gets its answer without a thread of its own, and refusals are logged at
//!   most [`REFUSALS_LOGGED_PER_S`] a second (a summary line counts the rest; it is written with
//!   the first refusal of a later second, so the count of a flood's last second waits for the
//!   next refusal);
//! - whatever a client sent is escaped before it reaches a log line ([`escape`]).
//!
//! The loop only ever sees parsed, authorised requests.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use crate::config::ControlSection;
use crate::daemon::{AgentError, Event, Peer};
use crate::proto::{self, Response, MAX_REQUEST};

/// Connections served at once.
pub const MAX_CONNECTIONS: usize = 16;
/// Connections of one uid served at once.
pub const MAX_PER_UID: usize = 4;
/// Time a client has, from the accept, to send its whole request line.
pub const REQUEST_DEADLINE: Duration = Duration::from_secs(2);
/// Refusal lines logged per second at most; the rest are counted in a summary line.
pub const REFUSALS_LOGGED_PER_S: u32 = 5;
/// Longest log line about a client (bytes of escaped text; longer ones are cut).
const MAX_LOGGED: usize = 300;

/// Escapes control characters (a newline, an escape sequence) the way Rust string literals do,
/// and cuts the text at `MAX_LOGGED` bytes: a client's string can neither forge a log line nor
/// flood the log.
pub fn escape(s: &str) -> String {
    escape_upto(s, MAX_LOGGED)
}

/// [`escape`] with a limit of `max` bytes.
pub fn escape_upto(s: &str, max: usize) -> String {
    let mut out = String::with_capacity(s.len().min(max));
    for c in s.chars() {
        if out.len() >= max {
            out.push_str("...");
            break;
        }
        if c.is_control() {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    out
}

/// Binds the socket (replacing a stale one; refusing if another agent answers there) and
/// makes it connectable by anyone: who may *use* it is decided by credentials, not file mode.
///
/// Nothing here writes through a name someone else could swap, wherever the socket lives: a
/// stale name is unlinked (never followed), `bind` refuses an existing name, and the mode is
/// set on the node just bound, held by an `O_PATH | O_NOFOLLOW` descriptor checked to be a
/// socket of ours.
pub fn bind(path: &Path) -> Result<UnixListener, AgentError> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
    let err = |source| AgentError::Socket { path: path.into(), source };
    if let Some(dir) = path.parent() {
        std::fs::DirBuilder::new().recursive(true).mode(0o755).create(dir).map_err(err)?;
    }
    if std::fs::symlink_metadata(path).is_ok() {
        if UnixStream::connect(path).is_ok() {
            return Err(err(std::io::Error::new(std::io::ErrorKind::AddrInUse, "another agent is listening there")));
        }
        std::fs::remove_file(path).map_err(err)?;
    }
    let l = UnixListener::bind(path).map_err(err)?;
    let node = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(err)?;
    let m = node.metadata().map_err(err)?;
    use std::os::unix::fs::FileTypeExt;
    if !m.file_type().is_socket() || m.uid() != nix::unistd::geteuid().as_raw() {
        return Err(err(std::io::Error::new(std::io::ErrorKind::PermissionDenied, "the socket was replaced right after bind")));
    }
    // chmod through the descriptor (the node itself, whatever its name points to now).
    use std::os::fd::AsRawFd;
    std::fs::set_permissions(format!("/proc/self/fd/{}", node.as_raw_fd()), std::fs::Permissions::from_mode(0o666))
        .map_err(err)?;
    Ok(l)
}

/// Refusals logged per second, and how many were not.
struct RefusalLog {
    log: fn(&str),
    window: Instant,
    logged: u32,
    unlogged: u64,
}

impl RefusalLog {
    fn note(&mut self, msg: &str) {
        if self.window.elapsed() >= Duration::from_secs(1) {
            if self.unlogged > 0 {
                (self.log)(&format!(
                    "control: {} more refusal(s) not logged (at most {REFUSALS_LOGGED_PER_S} a second)",
                    self.unlogged
                ));
            }
            self.window = Instant::now();
            self.logged = 0;
            self.unlogged = 0;
        }
        if self.logged < REFUSALS_LOGGED_PER_S {
            self.logged += 1;
            (self.log)(&format!("control: refused: {}", escape(msg)));
        } else {
            self.unlogged += 1;
        }
    }
}

/// Connections in service, in total and per uid.
#[derive(Default)]
struct Slots {
    total: usize,
    per_uid: BTreeMap<u32, usize>,
}

/// A connection's place in [`Slots`], given back when its thread ends.
struct Slot {
    slots: Arc<Mutex<Slots>>,
    uid: u32,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut s = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        s.total -= 1;
        if let Some(n) = s.per_uid.get_mut(&self.uid) {
            *n -= 1;
            if *n == 0 {
                s.per_uid.remove(&self.uid);
            }
        }
    }
}

fn take_slot(slots: &Arc<Mutex<Slots>>, uid: u32) -> Result<Slot, String> {
    let mut s = slots.lock().unwrap_or_else(|e| e.into_inner());
    if s.total >= MAX_CONNECTIONS {
        return Err(format!("busy: {MAX_CONNECTIONS} connections in service"));
    }
    let mine = s.per_uid.entry(uid).or_default();
    if *mine >= MAX_PER_UID {
        return Err(format!("busy: uid {uid} has {MAX_PER_UID} connections in service already"));
    }
    *mine += 1;
    s.total += 1;
    Ok(Slot { slots: slots.clone(), uid })
}

/// Answers a refused peer without waiting for it: one non-blocking write, then close.
fn refuse_now(stream: &UnixStream, msg: &str) {
    let _ = stream.set_nonblocking(true);
    let _ = reply(stream, &Response::err(msg));
}

/// Accepts connections forever, forwarding authorised requests to the loop.
pub fn serve(listener: UnixListener, allow: ControlSection, tx: mpsc::Sender<Event>, log: fn(&str)) {
    let slots = Arc::new(Mutex::new(Slots::default()));
    let refusals = Arc::new(Mutex::new(RefusalLog { log, window: Instant::now(), logged: 0, unlogged: 0 }));
    let refused = move |msg: &str| refusals.lock().unwrap_or_else(|e| e.into_inner()).note(msg);
    let refused = Arc::new(refused);
    for conn in listener.incoming() {
        let Ok(stream) = conn else { continue };
        let accepted = Instant::now();
        let peer = match peer_of(&stream) {
            Ok(p) => p,
            Err(msg) => {
                refuse_now(&stream, &msg);
                refused(&msg);
                continue;
            }
        };
        if !allow.allow_uids.contains(&peer.uid) && !allow.allow_gids.contains(&peer.gid) {
            let msg = format!("permission denied: uid {} gid {} (pid {}) is not allowed", peer.uid, peer.gid, peer.pid);
            refuse_now(&stream, &msg);
            refused(&msg);
            continue;
        }
        let slot = match take_slot(&slots, peer.uid) {
            Ok(s) => s,
            Err(msg) => {
                refuse_now(&stream, &msg);
                refused(&format!("pid {}: {msg}", peer.pid));
                continue;
            }
        };
        let (tx, refused) = (tx.clone(), refused.clone());
        std::thread::spawn(move || {
            let _slot = slot;
            let r = connection(&stream, peer, accepted + REQUEST_DEADLINE, &tx);
            if let Err(msg) = &r {
                refused(msg);
            }
            let _ = stream.set_write_timeout(Some(REQUEST_DEADLINE));
            let _ = reply(&stream, &r.unwrap_or_else(Response::err));
        });
    }
}

fn peer_of(stream: &UnixStream) -> Result<Peer, String> {
    use nix::sys::socket::{getsockopt, sockopt::PeerCredentials};
    let c = getsockopt(stream, PeerCredentials).map_err(|e| format!("no peer credentials: {e}"))?;
    Ok(Peer { pid: c.pid(), uid: c.uid(), gid: c.gid() })
}

/// Reads one request line that must be complete by `deadline`, parses it and hands it to the
/// loop.
fn connection(stream: &UnixStream, peer: Peer, deadline: Instant, tx: &mpsc::Sender<Event>) -> Result<Response, String> {
    let mut line = Vec::with_capacity(256);
    let mut chunk = [0u8; 1024];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(deadline_missed(peer, &line));
        }
        stream.set_read_timeout(Some(left)).map_err(|e| e.to_string())?;
        match (&*stream).read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                line.extend_from_slice(&chunk[..n]);
                if let Some(nl) = line.iter().position(|&b| b == b'\n') {
                    line.truncate(nl);
                    break;
                }
                if line.len() > MAX_REQUEST {
                    return Err(format!("pid {}: request longer than {MAX_REQUEST} bytes", peer.pid));
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                return Err(deadline_missed(peer, &line))
            }
            Err(e) => return Err(format!("pid {}: reading request: {e}", peer.pid)),
        }
    }
    let req = proto::parse(&line).map_err(|e| format!("pid {}: {e}", peer.pid))?;
    let (rtx, rrx) = mpsc::channel();
    tx.send(Event::Request { req, peer, reply: rtx }).map_err(|_| "agent is shutting down".to_owned())?;
    rrx.recv_timeout(Duration::from_secs(10)).map_err(|_| "agent did not answer in 10 s".to_owned())
}

fn deadline_missed(peer: Peer, got: &[u8]) -> String {
    format!(
        "pid {} (uid {}): request not complete within {} ms ({} byte(s) received)",
        peer.pid,
        peer.uid,
        REQUEST_DEADLINE.as_millis(),
        got.len()
    )
}

fn reply(mut stream: &UnixStream, r: &Response) -> std::io::Result<()> {
    let mut text = serde_json::to_vec(r).expect("response serialises");
    text.push(b'\n');
    stream.write_all(&text)
}

/// Client side (the protocol crate's): sends one request and returns the reply.
pub use forefront_proto::client::{request, request_within, ClientError};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::Request;
    use std::io::{BufRead, BufReader};
    use std::path::PathBuf;

    fn server(allow: ControlSection) -> (tempfile::TempDir, PathBuf, mpsc::Receiver<Event>) {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("s.sock");
        let l = bind(&p).unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || serve(l, allow, tx, |_| {}));
        (t, p, rx)
    }

    fn me() -> ControlSection {
        ControlSection { allow_uids: vec![nix::unistd::getuid().as_raw()], allow_gids: vec![] }
    }

    #[test]
    fn authorised_request_reaches_the_loop_and_gets_its_reply() {
        let (_t, p, rx) = server(me());
        std::thread::spawn(move || {
            if let Ok(Event::Request { req, peer, reply }) = rx.recv() {
                assert_eq!(req, Request::Status {});
                assert_eq!(peer.pid, std::process::id() as i32);
                reply.send(Response::ok("hi")).unwrap();
            }
        });
        let r = request(&p, &Request::Status {}).unwrap();
        assert_eq!(r, Response::ok("hi"));
    }

    #[test]
    fn unauthorised_peer_is_refused_before_parsing() {
        let (_t, p, rx) = server(ControlSection { allow_uids: vec![4242], allow_gids: vec![] });
        let r = request(&p, &Request::Status {}).unwrap();
        assert!(!r.ok);
        assert!(r.error.unwrap().contains("permission denied"));
        assert!(rx.try_recv().is_err(), "nothing reached the loop");
    }

    #[test]
    fn garbage_and_silence_get_errors_and_the_server_lives_on() {
        let (_t, p, rx) = server(me());
        for junk in [&b"\x00\x01\x02\n"[..], b"{\"cmd\":\"fg\",\"pid\":0}\n", &vec![b'x'; 100_000][..]] {
            let mut s = UnixStream::connect(&p).unwrap();
            let _ = s.write_all(junk);
            let mut out = String::new();
            let _ = BufReader::new(s).read_line(&mut out);
            assert!(out.contains("\"ok\":false"), "{out}");
        }
        // A client that connects and says nothing is timed out, not waited for forever.
        let s = UnixStream::connect(&p).unwrap();
        let t0 = std::time::Instant::now();
        let mut out = String::new();
        let _ = BufReader::new(&s).read_line(&mut out);
        assert!(out.contains("\"ok\":false"), "{out}");
        assert!(t0.elapsed() < Duration::from_secs(5));
        assert!(rx.try_recv().is_err());
        // Still serving.
        std::thread::spawn(move || {
            if let Ok(Event::Request { reply, .. }) = rx.recv() {
                reply.send(Response::ok("alive")).unwrap();
            }
        });
        assert_eq!(request(&p, &Request::Status {}).unwrap(), Response::ok("alive"));
    }

    #[test]
    fn a_trickling_client_is_cut_at_the_request_deadline() {
        let (_t, p, rx) = server(me());
        let mut s = UnixStream::connect(&p).unwrap();
        let t0 = std::time::Instant::now();
        // One byte every 200 ms: each read completes well within any per-read timeout.
        let reader = {
            let s = s.try_clone().unwrap();
            std::thread::spawn(move || {
                let mut out = String::new();
                let _ = BufReader::new(s).read_line(&mut out);
                (out, t0.elapsed())
            })
        };
        for b in br#"{"cmd":"status"   "#.iter().cycle().take(40) {
            if s.write_all(&[*b]).is_err() {
                break;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        let (out, took) = reader.join().unwrap();
        assert!(out.contains("not complete within 2000 ms"), "{out}");
        assert!(took >= REQUEST_DEADLINE && took < REQUEST_DEADLINE + Duration::from_millis(800), "{took:?}");
        assert!(rx.try_recv().is_err(), "nothing reached the loop");
    }

    #[test]
    fn one_uid_holds_at_most_its_share_of_the_connections() {
        let (_t, p, rx) = server(me());
        std::thread::spawn(move || {
            while let Ok(Event::Request { reply, .. }) = rx.recv() {
                reply.send(Response::ok("served")).unwrap();
            }
        });
        // Silent connections of this uid take its slots...
        let t0 = std::time::Instant::now();
        let held: Vec<UnixStream> = (0..MAX_PER_UID).map(|_| UnixStream::connect(&p).unwrap()).collect();
        std::thread::sleep(Duration::from_millis(100));
        // ...so one more of the same uid is refused at once, not queued.
        let r = request(&p, &Request::Status {}).unwrap();
        assert!(r.error.as_deref().unwrap_or("").contains("has 4 connections in service"), "{r:?}");
        assert!(t0.elapsed() < Duration::from_secs(1));
        // The deadline frees them: served again within it.
        let served = loop {
            let r = request(&p, &Request::Status {}).unwrap();
            if r.ok {
                break t0.elapsed();
            }
            assert!(t0.elapsed() < REQUEST_DEADLINE + Duration::from_secs(1), "still busy: {r:?}");
            std::thread::sleep(Duration::from_millis(50));
        };
        assert!(served <= REQUEST_DEADLINE + Duration::from_millis(500), "{served:?}");
        drop(held);
    }

    #[test]
    fn refusals_are_logged_at_a_bounded_rate() {
        static LINES: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
        fn log(l: &str) {
            LINES.lock().unwrap().push(l.to_owned());
        }
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("s.sock");
        let l = bind(&p).unwrap();
        let (tx, _rx) = mpsc::channel();
        let nobody = ControlSection { allow_uids: vec![4242], allow_gids: vec![] };
        std::thread::spawn(move || serve(l, nobody, tx, log));
        let t0 = std::time::Instant::now();
        let mut n = 0;
        while t0.elapsed() < Duration::from_millis(2500) {
            let r = request(&p, &Request::Status {}).unwrap();
            assert!(r.error.unwrap().contains("permission denied"));
            n += 1;
        }
        // One more after the last window: its summary line counts the refusals not logged.
        std::thread::sleep(Duration::from_millis(1100));
        request(&p, &Request::Status {}).unwrap();
        std::thread::sleep(Duration::from_millis(200)); // the reply goes out before the log line
        let lines = LINES.lock().unwrap().clone();
        let windows = t0.elapsed().as_secs() + 1;
        assert!(n > 100, "the flood was only {n} connections");
        assert!(lines.len() as u64 <= windows * (REFUSALS_LOGGED_PER_S as u64 + 1), "{} lines for {n} refusals", lines.len());
        let counted: u64 = lines.iter().filter_map(|l| l.strip_prefix("control: ")?.split(' ').next()?.parse::<u64>().ok()).sum();
        let logged = lines.iter().filter(|l| l.starts_with("control: refused")).count() as u64;
        assert_eq!(logged + counted, n + 1, "every refusal is logged or counted: {lines:?}");
    }

    #[test]
    fn client_text_cannot_forge_a_log_line() {
        assert_eq!(escape("a\nforefront-agent: root login\r\x1b[2J"), "a\\nforefront-agent: root login\\r\\u{1b}[2J");
        assert_eq!(escape("état"), "état");
        let long = escape(&"\n".repeat(10_000));
        assert!(long.len() < 320 && long.ends_with("..."), "{}", long.len());
        // A serde error quotes the client's text: escaped when logged.
        let e = proto::parse(br#"{"cmd":"x\nforged"}"#).unwrap_err();
        assert!(e.contains('\n'), "{e}");
        assert!(!escape(&e).contains('\n'));
    }

    #[test]
    fn the_socket_is_connectable_by_all_and_a_link_in_its_place_is_not_followed() {
        use std::os::unix::fs::PermissionsExt;
        let t = tempfile::tempdir().unwrap();
        let victim = t.path().join("victim");
        std::fs::write(&victim, "x").unwrap();
        std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o600)).unwrap();
        let p = t.path().join("s.sock");
        std::os::unix::fs::symlink(&victim, &p).unwrap();
        let _l = bind(&p).unwrap();
        assert_eq!(std::fs::symlink_metadata(&p).unwrap().permissions().mode() & 0o7777, 0o666);
        assert_eq!(std::fs::metadata(&victim).unwrap().permissions().mode() & 0o7777, 0o600, "the link's target kept its mode");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "x");
    }

    #[test]
    fn second_agent_on_the_same_socket_is_refused() {
        let (_t, p, _rx) = server(me());
        let e = bind(&p).unwrap_err().to_string();
        assert!(e.contains("another agent"), "{e}");
    }
}
