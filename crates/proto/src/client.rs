//! The client side: one request, one reply, over the agent's Unix socket.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::{Request, Response};

/// How long [`request`] waits for the reply. The agent answers a request within its own
/// deadline (`forefront_agent::control::REQUEST_DEADLINE`) plus the work of the request.
pub const REPLY_TIMEOUT: Duration = Duration::from_secs(15);

/// How long a launcher waits for the agent before it runs the app anyway (`forefront agent
/// exec`, `forefront-exec`): a launch never waits long on the agent.
pub const EXEC_TIMEOUT: Duration = Duration::from_secs(2);

/// Sends one request and returns the reply (waits at most [`REPLY_TIMEOUT`]).
pub fn request(socket: &Path, req: &Request) -> Result<Response, ClientError> {
    request_within(socket, req, REPLY_TIMEOUT)
}

/// Sends one request and returns the reply, waiting at most `timeout` for each of the write and
/// the read.
pub fn request_within(socket: &Path, req: &Request, timeout: Duration) -> Result<Response, ClientError> {
    send(socket, req, timeout)?.reply()
}

/// A request sent, its reply not read yet ([`send`]).
#[derive(Debug)]
pub struct Pending {
    stream: UnixStream,
    path: PathBuf,
    written: std::io::Result<()>,
}

/// Connects and sends one request (waiting at most `timeout` for the write); the reply is read
/// by [`Pending::reply`], possibly by another process (a launcher that execs its app at once).
pub fn send(socket: &Path, req: &Request, timeout: Duration) -> Result<Pending, ClientError> {
    let err = |source| ClientError::Io { path: socket.into(), source };
    let mut s = UnixStream::connect(socket).map_err(err)?;
    s.set_read_timeout(Some(timeout)).map_err(err)?;
    s.set_write_timeout(Some(timeout)).map_err(err)?;
    let mut text = serde_json::to_vec(req).expect("request serialises");
    text.push(b'\n');
    let written = s.write_all(&text);
    Ok(Pending { stream: s, path: socket.into(), written })
}

impl Pending {
    /// Reads the reply (waiting at most the `timeout` given to [`send`]).
    pub fn reply(self) -> Result<Response, ClientError> {
        let err = |source| ClientError::Io { path: self.path.clone(), source };
        // The agent may answer (a refusal) and close before reading: read its reply even if our
        // write failed. A failure is reported as `Other`, never as `BrokenPipe`, which the CLI
        // would take for a closed stdout.
        let mut line = String::new();
        let read = BufReader::new(&self.stream).read_line(&mut line);
        if line.trim().is_empty() {
            let why = match (self.written, read) {
                (Err(e), _) | (_, Err(e)) => e.to_string(),
                _ => "connection closed without a reply".to_owned(),
            };
            return Err(err(std::io::Error::other(why)));
        }
        serde_json::from_str(&line).map_err(|e| ClientError::Reply { path: self.path.clone(), message: format!("{e}: {line:?}") })
    }
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
    use std::io::Read;
    use std::os::unix::net::UnixListener;

    fn serve_once(answer: &'static [u8]) -> (tempfile::TempDir, PathBuf, std::thread::JoinHandle<Vec<u8>>) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.sock");
        let l = UnixListener::bind(&p).unwrap();
        let h = std::thread::spawn(move || {
            let (mut c, _) = l.accept().unwrap();
            let mut line = Vec::new();
            let mut b = [0u8; 1];
            while c.read(&mut b).unwrap() == 1 && b[0] != b'\n' {
                line.push(b[0]);
            }
            c.write_all(answer).unwrap();
            line
        });
        (dir, p, h)
    }

    #[test]
    fn sends_one_line_and_parses_the_reply() {
        let (_dir, p, h) = serve_once(b"{\"ok\":true,\"message\":\"hi\"}\n");
        let req = Request::Fg { pid: Some(42), uid: None, cgroup: None, burst: true };
        let r = request_within(&p, &req, Duration::from_secs(5)).unwrap();
        assert_eq!(r, Response::ok("hi"));
        // What went over the wire is what the agent's parser accepts, and says the same thing.
        assert_eq!(crate::parse(&h.join().unwrap()).unwrap(), req);
    }

    #[test]
    fn a_bad_or_missing_reply_is_an_error_naming_the_socket() {
        let (_dir, p, h) = serve_once(b"not json\n");
        let e = request(&p, &Request::Status {}).unwrap_err().to_string();
        assert!(e.contains("s.sock") && e.contains("bad reply"), "{e}");
        h.join().unwrap();
        let (dir, p, h) = serve_once(b"");
        let e = request(&p, &Request::Status {}).unwrap_err().to_string();
        assert!(e.contains("closed without a reply"), "{e}");
        h.join().unwrap();
        let e = request(&dir.path().join("absent.sock"), &Request::Status {}).unwrap_err().to_string();
        assert!(e.contains("absent.sock"), "{e}");
    }
}
