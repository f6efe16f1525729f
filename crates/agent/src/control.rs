//! The control socket: a Unix stream socket, one request line per connection, the peer's
//! credentials (`SO_PEERCRED`) checked against the config before anything is parsed.
//!
//! Every connection has its own thread with read and write timeouts, and the number of
//! connections served at once is capped, so a slow or hostile client cannot block the agent:
//! the loop only ever sees parsed, authorised requests.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use crate::config::ControlSection;
use crate::daemon::{AgentError, Event, Peer};
use crate::proto::{self, Request, Response, MAX_REQUEST};

const MAX_CONNECTIONS: usize = 16;
const IO_TIMEOUT: Duration = Duration::from_secs(2);

/// Binds the socket (replacing a stale one; refusing if another agent answers there) and
/// makes it connectable by anyone: who may *use* it is decided by credentials, not file mode.
pub fn bind(path: &Path) -> Result<UnixListener, AgentError> {
    let err = |source| AgentError::Socket { path: path.into(), source };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(err)?;
    }
    if path.exists() {
        if UnixStream::connect(path).is_ok() {
            return Err(err(std::io::Error::new(std::io::ErrorKind::AddrInUse, "another agent is listening there")));
        }
        std::fs::remove_file(path).map_err(err)?;
    }
    let l = UnixListener::bind(path).map_err(err)?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o666)).map_err(err)?;
    Ok(l)
}

/// Accepts connections forever, forwarding authorised requests to the loop.
pub fn serve(listener: UnixListener, allow: ControlSection, tx: mpsc::Sender<Event>, log: fn(&str)) {
    let busy = Arc::new(AtomicUsize::new(0));
    let allow = Arc::new(allow);
    for conn in listener.incoming() {
        let Ok(stream) = conn else { continue };
        if busy.load(Ordering::SeqCst) >= MAX_CONNECTIONS {
            let _ = reply(&stream, &Response::err("busy: too many connections"));
            continue;
        }
        busy.fetch_add(1, Ordering::SeqCst);
        let (busy, allow, tx) = (busy.clone(), allow.clone(), tx.clone());
        std::thread::spawn(move || {
            let r = connection(&stream, &allow, &tx);
            if let Err(msg) = &r {
                log(&format!("control: refused: {msg}"));
            }
            let _ = reply(&stream, &r.unwrap_or_else(Response::err));
            busy.fetch_sub(1, Ordering::SeqCst);
        });
    }
}

fn peer_of(stream: &UnixStream) -> Result<Peer, String> {
    use nix::sys::socket::{getsockopt, sockopt::PeerCredentials};
    let c = getsockopt(stream, PeerCredentials).map_err(|e| format!("no peer credentials: {e}"))?;
    Ok(Peer { pid: c.pid(), uid: c.uid(), gid: c.gid() })
}

fn connection(stream: &UnixStream, allow: &ControlSection, tx: &mpsc::Sender<Event>) -> Result<Response, String> {
    let peer = peer_of(stream)?;
    if !allow.allow_uids.contains(&peer.uid) && !allow.allow_gids.contains(&peer.gid) {
        return Err(format!("permission denied: uid {} gid {} (pid {}) is not allowed", peer.uid, peer.gid, peer.pid));
    }
    stream.set_read_timeout(Some(IO_TIMEOUT)).map_err(|e| e.to_string())?;
    stream.set_write_timeout(Some(IO_TIMEOUT)).map_err(|e| e.to_string())?;
    let mut line = Vec::new();
    BufReader::new(stream.take(MAX_REQUEST as u64 + 2))
        .read_until(b'\n', &mut line)
        .map_err(|e| format!("pid {}: reading request: {e}", peer.pid))?;
    if line.last() == Some(&b'\n') {
        line.pop();
    }
    let req = proto::parse(&line).map_err(|e| format!("pid {}: {e}", peer.pid))?;
    let (rtx, rrx) = mpsc::channel();
    tx.send(Event::Request { req, peer, reply: rtx }).map_err(|_| "agent is shutting down".to_owned())?;
    rrx.recv_timeout(Duration::from_secs(10)).map_err(|_| "agent did not answer in 10 s".to_owned())
}

fn reply(mut stream: &UnixStream, r: &Response) -> std::io::Result<()> {
    let mut text = serde_json::to_vec(r).expect("response serialises");
    text.push(b'\n');
    stream.write_all(&text)
}

/// Client side: sends one request and returns the reply.
pub fn request(socket: &Path, req: &Request) -> Result<Response, ClientError> {
    let err = |source| ClientError::Io { path: socket.into(), source };
    let mut s = UnixStream::connect(socket).map_err(err)?;
    s.set_read_timeout(Some(Duration::from_secs(15))).map_err(err)?;
    let mut text = serde_json::to_vec(req).expect("request serialises");
    text.push(b'\n');
    // The agent may answer (a refusal) and close before reading: read its reply even if our
    // write failed. A failure is reported as `Other`, never as `BrokenPipe`, which the CLI
    // would take for a closed stdout.
    let written = s.write_all(&text);
    let mut line = String::new();
    let read = BufReader::new(&s).read_line(&mut line);
    if line.trim().is_empty() {
        let why = match (written, read) {
            (Err(e), _) | (_, Err(e)) => e.to_string(),
            _ => "connection closed without a reply".to_owned(),
        };
        return Err(err(std::io::Error::other(why)));
    }
    serde_json::from_str(&line).map_err(|e| ClientError::Reply { path: socket.into(), message: format!("{e}: {line:?}") })
}

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("agent socket {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("agent socket {path}: bad reply: {message}")]
    Reply { path: PathBuf, message: String },
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn second_agent_on_the_same_socket_is_refused() {
        let (_t, p, _rx) = server(me());
        let e = bind(&p).unwrap_err().to_string();
        assert!(e.contains("another agent"), "{e}");
    }
}
