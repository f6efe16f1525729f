//! `forefront-exec`: the launcher's helper for `forefront agent`.
//!
//! ```text
//! forefront-exec [--burst] [--socket PATH] [--] CMD [ARG...]
//! forefront-exec [--burst] [--socket PATH] --pid PID [[--] CMD [ARG...]]
//! ```
//!
//! Names its own pid foreground over the agent's control socket (with `--burst`, a launch
//! begins: the agent pauses the background), then `execve`s CMD in its place: same pid, so the
//! app runs foreground from its first instruction. It does what `forefront agent exec` does, in
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

const USAGE: &str = "usage: forefront-exec [--burst] [--socket PATH] [--] CMD [ARG...]
       forefront-exec [--burst] [--socket PATH] --pid PID [[--] CMD [ARG...]]

Tell the forefront agent this process is the foreground app (with --burst: a launch begins,
pause the background), then exec CMD in its place (same pid). CMD runs even if the agent
cannot be reached (a warning on stderr).

  --burst          pause background work while CMD starts (the agent ends the pause when
                   CMD's I/O goes quiet, at pause.max_ms, or on `forefront agent fg --burst-end`)
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
    let mut socket = PathBuf::from(DEFAULT_SOCKET);
    let mut pid = None;
    let mut command = Vec::new();
    while let Some(a) = it.next() {
        match a.to_str() {
            Some("--") => break,
            Some("--burst") => burst = true,
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
    Ok(Parsed::Run(Args { burst, socket, pid, command }))
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
    // Only returns on failure.
    let err = std::process::Command::new(&args.command[0]).args(&args.command[1..]).exec();
    eprintln!("forefront-exec: cannot run {cmd}: {err}");
    ExitCode::from(if err.kind() == std::io::ErrorKind::NotFound { 127 } else { 126 })
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
            Ok(Parsed::Run(Args { burst, socket: socket.into(), pid: None, command: cmd.iter().map(OsString::from).collect() }))
        };
        assert_eq!(p(&["xterm"]), run(false, DEFAULT_SOCKET, &["xterm"]));
        assert_eq!(p(&["--burst", "--socket", "/s", "--", "ls", "-l"]), run(true, "/s", &["ls", "-l"]));
        assert_eq!(p(&["--socket=/t", "ls", "--burst"]), run(false, "/t", &["ls", "--burst"]));
        assert_eq!(p(&["--", "-weird"]), run(false, DEFAULT_SOCKET, &["-weird"]));
        assert_eq!(
            p(&["--burst", "--pid", "4321"]),
            Ok(Parsed::Run(Args { burst: true, socket: DEFAULT_SOCKET.into(), pid: Some(4321), command: vec![] }))
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
