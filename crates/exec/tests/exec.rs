//! The helper end to end, against a stand-in agent on a socket in a temporary directory: the
//! request names the pid that then runs the command (it exec'd in place), the command runs even
//! without an agent, and the exit status is the command's.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixListener;
use std::process::Command;

const EXE: &str = env!("CARGO_BIN_EXE_forefront-exec");

/// A stand-in agent on `sock`: takes one connection, reads one request line, answers `reply`
/// and returns the parsed request.
fn stand_in_agent(sock: &std::path::Path, reply: &'static str) -> std::thread::JoinHandle<forefront_proto::Request> {
    let l = UnixListener::bind(sock).unwrap();
    std::thread::spawn(move || {
        let (c, _) = l.accept().unwrap();
        let mut line = String::new();
        BufReader::new(&c).read_line(&mut line).unwrap();
        (&c).write_all(format!("{reply}\n").as_bytes()).unwrap();
        forefront_proto::parse(line.as_bytes()).unwrap()
    })
}

#[test]
fn names_its_own_pid_then_execs_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("agent.sock");
    let agent = stand_in_agent(&sock, "{\"ok\":true,\"message\":\"foreground\"}");
    // The shell prints its own pid: the one the helper named, if the exec kept it.
    let out = Command::new(EXE).args(["--burst", "--socket"]).arg(&sock).args(["--", "sh", "-c", "echo $$"]).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(out.stderr.is_empty(), "no warning when the agent answers: {}", String::from_utf8_lossy(&out.stderr));
    let shell_pid: i32 = String::from_utf8(out.stdout).unwrap().trim().parse().unwrap();
    let req = agent.join().unwrap();
    assert_eq!(req, forefront_proto::Request::Fg { pid: Some(shell_pid), uid: None, cgroup: None, burst: true });
}

#[test]
fn runs_the_command_without_an_agent_and_keeps_its_status() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(EXE).arg("--socket").arg(dir.path().join("none.sock")).args(["sh", "-c", "exit 7"]).output().unwrap();
    assert_eq!(out.status.code(), Some(7));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("warning") && err.contains("none.sock") && err.contains("running sh without the agent"), "{err}");
}

#[test]
fn a_refusal_is_a_warning_and_the_command_still_runs() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("agent.sock");
    let agent = stand_in_agent(&sock, "{\"ok\":false,\"error\":\"peer not allowed\"}");
    let out = Command::new(EXE).arg("--socket").arg(&sock).args(["true"]).output().unwrap();
    agent.join().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("agent refused: peer not allowed"));
}

#[test]
fn missing_command_and_bad_options_exit_with_usage_codes() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("none.sock");
    let out = Command::new(EXE).arg("--socket").arg(&sock).arg("/nonexistent/app").output().unwrap();
    assert_eq!(out.status.code(), Some(127));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot run /nonexistent/app"));
    let out = Command::new(EXE).arg("--frobnicate").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown option"));
    let out = Command::new(EXE).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn pid_names_another_process_and_needs_no_command() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("agent.sock");
    let agent = stand_in_agent(&sock, "{\"ok\":true,\"message\":\"foreground\"}");
    let out = Command::new(EXE).args(["--burst", "--pid", "4321", "--socket"]).arg(&sock).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(agent.join().unwrap(), forefront_proto::Request::Fg { pid: Some(4321), uid: None, cgroup: None, burst: true });
    // Nobody listening: the request was the whole job, so the exit status says it failed.
    let out = Command::new(EXE).args(["--pid", "4321", "--socket"]).arg(dir.path().join("none.sock")).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("pid 4321 not named foreground"));
}

#[test]
fn the_launch_does_not_wait_for_the_answer_unless_told_to() {
    // A slow agent: reads the request at once, answers after 1.5 s.
    let slow_agent = |sock: &std::path::Path| {
        let l = UnixListener::bind(sock).unwrap();
        std::thread::spawn(move || {
            let (c, _) = l.accept().unwrap();
            let mut line = String::new();
            BufReader::new(&c).read_line(&mut line).unwrap();
            std::thread::sleep(std::time::Duration::from_millis(1500));
            let _ = (&c).write_all(b"{\"ok\":false,\"error\":\"too late\"}\n");
            forefront_proto::parse(line.as_bytes()).unwrap()
        })
    };
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("agent.sock");
    let agent = slow_agent(&sock);
    // The exit of the exec'd command is timed (`wait`), not the end of the helper's stderr,
    // which the detached reader holds open until the answer.
    let t0 = std::time::Instant::now();
    let mut child = Command::new(EXE)
        .args(["--burst", "--socket"])
        .arg(&sock)
        .args(["--", "true"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    assert!(child.wait().unwrap().success());
    let ran_in = t0.elapsed();
    assert!(ran_in < std::time::Duration::from_millis(1200), "the command waited for the answer: {ran_in:?}");
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert!(err.contains("agent refused: too late"), "the detached reader warns: {err:?}");
    assert_eq!(agent.join().unwrap(), forefront_proto::Request::Fg { pid: Some(pid), uid: None, cgroup: None, burst: true });
    // --wait: the command runs after the answer.
    std::fs::remove_file(&sock).unwrap();
    let agent = slow_agent(&sock);
    let t0 = std::time::Instant::now();
    let out = Command::new(EXE).args(["--wait", "--socket"]).arg(&sock).args(["--", "true"]).output().unwrap();
    assert!(out.status.success());
    assert!(t0.elapsed() >= std::time::Duration::from_millis(1500), "--wait did not wait: {:?}", t0.elapsed());
    assert!(String::from_utf8_lossy(&out.stderr).contains("agent refused: too late"));
    agent.join().unwrap();
}
