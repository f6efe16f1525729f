//! `forefront-exec`: the launcher's helper for `forefront agent`.
//!
//! ```text
//! forefront-exec [--burst] [--wait] [--socket PATH] [--] CMD [ARG...]
//! forefront-exec [--burst] [--socket PATH] --pid PID [[--] CMD [ARG...]]
//! ```
//!
//! Names its own pid foreground over the agent's control socket (with `--burst`, a launch
//! begins: the agent pauses the background), then `execve`s CMD in its place: same pid. The
//! request is on the agent's socket before CMD's first instruction, but the launch does not
//! wait for the agent's answer: a detached grandchild reads it and only warns (a round trip
//! through the agent's threads cost the S suite's start-ups with no background 10–20 ms on a
//! loaded machine; see "The no-background start-up" in docs/agent.md). With `--wait` the
//! helper waits for the reply first, so that CMD runs foreground (and the background is
//! being paused) from its first instruction. It does what `forefront agent exec` does, in
//! a binary of a few hundred KB instead of the `forefront` binary's 11 MB: a launch right after
//! a cache drop pays for reading the launcher's pages, and that is the whole cost of this step
//! (see "A cheap exec" in docs/agent.md). The request is the agent's own type
//! ([`forefront_proto::Request`]), sent by the protocol crate's client.
//!
//! A launch never fails because of the agent: if the socket cannot be reached, refuses, or does
//! not answer within [`forefront_proto::client::EXEC_TIMEOUT`], a warning goes to stderr and
//! CMD runs anyway. The socket is `--socket PATH`, else [`forefront_proto::DEFAULT_SOCKET`]
//! (this helper does not read the agent's TOML config: pass `--socket` where `agent.socket` is
//! set to another path). Exit status: CMD's own; 2 for a usage error; 127 if CMD is not found
//! and 126 if it cannot be run, as shells do.
//!
//! With `--pid PID` it names another process instead of its own: a switch to an app that is
//! already running (`forefront-exec --burst --pid $(pidof app)`), at the same small cost. CMD
//! is then optional; without one, the exit status is 0 if the agent accepted the request and 1
//! (with the reason on stderr) if not.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::ExitCode;

use forefront_proto::{client, Request, DEFAULT_SOCKET};

const USAGE: &str = "usage: forefront-exec [--burst] [--wait] [--socket PATH] [--] CMD [ARG...]
       forefront-exec [--burst] [--socket PATH] --pid PID [[--] CMD [ARG...]]

Tell the forefront agent this process is the foreground app (with --burst: a launch begins,
pause the background), then exec CMD in its place (same pid). CMD runs even if the agent
cannot be reached (a warning on stderr), and without waiting for its answer unless --wait.

  --burst          pause background work while CMD starts (the agent ends the pause when
                   CMD's I/O goes quiet, at pause.max_ms, or on `forefront agent fg --burst-end`)
  --wait           wait for the agent's answer before the exec (CMD then runs foreground
                   from its first instruction); by default the request is sent, CMD runs at
                   once and a detached process reads the answer (and warns on a refusal)
  --socket PATH    the agent's control socket (default /run/forefront/agent.sock; this helper
                   does not read the agent's config file)
  --pid PID        name PID foreground instead of this process (a switch to a running app);
                   CMD is then optional
  -h, --help       this text
  -V, --version    the version
";

#[derive(Debug, PartialEq)]
struct Args {
    burst: bool,
    /// Wait for the agent's reply before the exec (the default is not to).
    wait: bool,
    socket: PathBuf,
    /// Another process to name (a switch); `None`: this process, which then execs `command`.
    pid: Option<i32>,
    command: Vec<OsString>,
}

#[derive(Debug, PartialEq)]
enum Parsed {
    Run(Args),
    Help,
    Version,
}

fn parse(args: impl IntoIterator<Item = OsString>) -> Result<Parsed, String> {
    let mut it = args.into_iter();
    let mut burst = false;
    let mut wait = false;
    let mut socket = PathBuf::from(DEFAULT_SOCKET);
    let mut pid = None;
    let mut command = Vec::new();
    while let Some(a) = it.next() {
        match a.to_str() {
            Some("--") => break,
            Some("--burst") => burst = true,
            Some("--wait") => wait = true,
            Some("-h" | "--help") => return Ok(Parsed::Help),
            Some("-V" | "--version") => return Ok(Parsed::Version),
            Some("--socket") => {
                let p = it.next().ok_or("--socket needs a PATH")?;
                if p.is_empty() {
                    return Err("--socket needs a PATH, got an empty one".into());
                }
                socket = p.into();
            }
            Some(s) if s.starts_with("--socket=") => {
                let p = &s["--socket=".len()..];
                if p.is_empty() {
                    return Err("--socket needs a PATH, got an empty one".into());
                }
                socket = p.into();
            }
            Some("--pid") => {
                let p = it.next().ok_or("--pid needs a PID")?;
                let p = p
                    .to_str()
                    .and_then(|p| p.parse::<i32>().ok())
                    .filter(|p| *p > 1)
                    .ok_or_else(|| format!("--pid needs a process id above 1, got {:?}", p.to_string_lossy()))?;
                pid = Some(p);
            }
            Some(s) if s.starts_with('-') && s.len() > 1 => {
                return Err(format!("unknown option {s:?} (put the command after `--` if it starts with '-')"))
            }
            _ => {
                command.push(a);
                break;
            }
        }
    }
    command.extend(it);
    if command.is_empty() && pid.is_none() {
        return Err("no command to run".into());
    }
    Ok(Parsed::Run(Args { burst, wait, socket, pid, command }))
}

fn main() -> ExitCode {
    let args = match parse(std::env::args_os().skip(1)) {
        Ok(Parsed::Run(a)) => a,
        Ok(Parsed::Help) => {
            print!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Ok(Parsed::Version) => {
            println!("forefront-exec {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("forefront-exec: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let pid = args.pid.unwrap_or(std::process::id() as i32);
    let req = Request::Fg { pid: Some(pid), uid: None, cgroup: None, burst: args.burst };
    if args.pid.is_none() && !args.wait {
        // A launch: the request is sent (queued on the agent's socket) before the app runs;
        // its reply is read off the app's path, by a detached process that only warns.
        let first = args.command[0].to_string_lossy().into_owned();
        match client::send(&args.socket, &req, client::EXEC_TIMEOUT) {
            Ok(pending) => reply_detached(pending, &first),
            Err(e) => eprintln!("warning: forefront-exec: running {first} without the agent: {e}"),
        }
        return exec(&args.command);
    }
    let failed = match client::request_within(&args.socket, &req, client::EXEC_TIMEOUT) {
        Ok(r) if r.ok => None,
        Ok(r) => Some(format!("agent refused: {}", r.error.unwrap_or_default())),
        Err(e) => Some(e.to_string()),
    };
    let Some(first) = args.command.first() else {
        // --pid without a command: the request was the whole job.
        return match failed {
            None => ExitCode::SUCCESS,
            Some(why) => {
                eprintln!("forefront-exec: pid {pid} not named foreground: {why}");
                ExitCode::FAILURE
            }
        };
    };
    let cmd = first.to_string_lossy().into_owned();
    if let Some(why) = failed {
        eprintln!("warning: forefront-exec: running {cmd} without the agent: {why}");
    }
    exec(&args.command)
}

/// Runs `command` in this process's place; returns only on failure.
fn exec(command: &[OsString]) -> ExitCode {
    let err = std::process::Command::new(&command[0]).args(&command[1..]).exec();
    eprintln!("forefront-exec: cannot run {}: {err}", command[0].to_string_lossy());
    ExitCode::from(if err.kind() == std::io::ErrorKind::NotFound { 127 } else { 126 })
}

/// Reads the agent's reply in a detached grandchild (double fork: the app never sees a child
/// of ours, nor a zombie), which warns on stderr if the agent refused or did not answer and
/// exits. Its stdin and stdout are /dev/null, so that it holds no pipe of the app's open. If
/// it cannot fork, the reply is read here.
fn reply_detached(pending: client::Pending, cmd: &str) {
    let warn = |r: Result<forefront_proto::Response, client::ClientError>| match r {
        Ok(r) if r.ok => {}
        Ok(r) => eprintln!("warning: forefront-exec: {cmd}: agent refused: {}", r.error.unwrap_or_default()),
        Err(e) => eprintln!("warning: forefront-exec: {cmd}: {e}"),
    };
    // SAFETY: this process is single-threaded (nothing above starts a thread), so the child
    // may run any code; the grandchild exits through `_exit` without returning here.
    match unsafe { libc::fork() } {
        -1 => warn(pending.reply()),
        0 => {
            // SAFETY: as above.
            if unsafe { libc::fork() } == 0 {
                if let Ok(null) = std::fs::OpenOptions::new().read(true).write(true).open("/dev/null") {
                    use std::os::fd::AsRawFd;
                    // SAFETY: dup2 onto the standard descriptors of this process only.
                    unsafe {
                        libc::dup2(null.as_raw_fd(), 0);
                        libc::dup2(null.as_raw_fd(), 1);
                    }
                }
                warn(pending.reply());
            }
            // SAFETY: ends the (grand)child without running the parent's exit handlers.
            unsafe { libc::_exit(0) }
        }
        child => {
            drop(pending);
            let mut status = 0;
            // SAFETY: waits for our own child, which exits at once.
            unsafe { libc::waitpid(child, &mut status, 0) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(args: &[&str]) -> Result<Parsed, String> {
        parse(args.iter().map(OsString::from))
    }

    #[test]
    fn options_end_at_the_command_or_at_double_dash() {
        let run = |burst, socket: &str, cmd: &[&str]| {
            Ok(Parsed::Run(Args {
                burst,
                wait: false,
                socket: socket.into(),
                pid: None,
                command: cmd.iter().map(OsString::from).collect(),
            }))
        };
        assert_eq!(p(&["xterm"]), run(false, DEFAULT_SOCKET, &["xterm"]));
        assert_eq!(p(&["--burst", "--socket", "/s", "--", "ls", "-l"]), run(true, "/s", &["ls", "-l"]));
        assert_eq!(p(&["--socket=/t", "ls", "--burst"]), run(false, "/t", &["ls", "--burst"]));
        assert_eq!(p(&["--", "-weird"]), run(false, DEFAULT_SOCKET, &["-weird"]));
        assert_eq!(
            p(&["--burst", "--pid", "4321"]),
            Ok(Parsed::Run(Args { burst: true, wait: false, socket: DEFAULT_SOCKET.into(), pid: Some(4321), command: vec![] }))
        );
        assert_eq!(
            p(&["--wait", "ls"]),
            Ok(Parsed::Run(Args {
                burst: false,
                wait: true,
                socket: DEFAULT_SOCKET.into(),
                pid: None,
                command: vec!["ls".into()]
            }))
        );
        assert_eq!(p(&["--help"]), Ok(Parsed::Help));
        assert_eq!(p(&["-V"]), Ok(Parsed::Version));
    }

    #[test]
    fn usage_errors_say_what_is_wrong() {
        assert!(p(&[]).unwrap_err().contains("no command"));
        assert!(p(&["--burst", "--"]).unwrap_err().contains("no command"));
        assert!(p(&["--socket"]).unwrap_err().contains("needs a PATH"));
        assert!(p(&["--socket="]).unwrap_err().contains("empty"));
        assert!(p(&["--bust", "ls"]).unwrap_err().contains("unknown option \"--bust\""));
        assert!(p(&["--pid"]).unwrap_err().contains("needs a PID"));
        for bad in ["1", "0", "-5", "x", "99999999999"] {
            assert!(p(&["--pid", bad]).unwrap_err().contains("above 1"), "{bad}");
        }
    }
}
