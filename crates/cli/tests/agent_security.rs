//! The agent as a root daemon against a hostile local user (issue 27): a throwaway system user
//! plants journals, links and directories in a scratch directory, floods and trickles the
//! socket; the agent and its watchdog are killed together during a pause.
//!
//! Each test needs root (to create the user and run the agent); the ones that run the agent
//! need cgroup v1 cpu, blkio and freezer too. Elsewhere they print `SKIP: ... (reason)` and
//! pass. Cleanup runs in `Drop` even when an assertion fails: the user is deleted, the agent
//! and the processes the test started are killed by pid, its own groups thawed and removed,
//! `/proc/sys/vm` put back as it was.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_forefront");
mod common;
use common::CONTROLLERS;
/// The agent's whole-request deadline (`forefront_agent::control::REQUEST_DEADLINE`).
const DEADLINE: Duration = Duration::from_secs(2);

/// Written to fd 2 directly: the harness captures `eprintln!` of passing tests.
fn note(msg: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{msg}");
}

fn not_root() -> bool {
    !nix::unistd::geteuid().is_root()
}

macro_rules! root_or_skip {
    ($name:expr) => {
        if not_root() {
            note(&format!("SKIP: {} needs root (to create a throwaway user and run the agent)", $name));
            return;
        }
    };
}

macro_rules! cgroups_or_skip {
    ($name:expr) => {
        root_or_skip!($name);
        if let Some(why) = common::rig_unavailable() {
            note(&format!("SKIP: {} needs cgroup v1 cpu/blkio/freezer ({why})", $name));
            return;
        }
    };
}

/// A system user made for one test (`useradd --system`), deleted when dropped.
struct TestUser {
    name: String,
    uid: u32,
    gid: u32,
}

impl TestUser {
    fn new(tag: &str) -> TestUser {
        let name = format!("ffsec{tag}{}", std::process::id());
        let out = Command::new("useradd")
            .args(["--system", "--no-create-home", "--user-group", "--shell", "/usr/sbin/nologin", &name])
            .output()
            .expect("useradd runs");
        assert!(out.status.success(), "useradd {name}: {}", String::from_utf8_lossy(&out.stderr));
        let user = nix::unistd::User::from_name(&name).unwrap().expect("user exists");
        TestUser { name, uid: user.uid.as_raw(), gid: user.gid.as_raw() }
    }

    /// `sh -c SCRIPT` as this user, in `dir`; panics unless it succeeds.
    fn sh(&self, dir: &Path, script: &str) {
        let out = Command::new("sh").arg("-c").arg(script).current_dir(dir).uid(self.uid).gid(self.gid).output().unwrap();
        assert!(out.status.success(), "as {}: {script}: {}", self.name, String::from_utf8_lossy(&out.stderr));
    }

    /// This test binary, run again as this user, in helper `mode` (see [`helper`]).
    fn helper(&self, mode: &str) -> Command {
        let mut c = Command::new(std::env::current_exe().unwrap());
        c.args(["helper", "--exact", "--ignored", "--nocapture", "--test-threads", "1"])
            .env("FF_SEC_HELPER", mode)
            .uid(self.uid)
            .gid(self.gid)
            .stdin(Stdio::null());
        c
    }
}

impl Drop for TestUser {
    fn drop(&mut self) {
        let _ = Command::new("userdel").arg(&self.name).output();
    }
}

/// A scratch directory (root's, 0755), an agent, the processes of a test, its groups.
struct Rig {
    dir: tempfile::TempDir,
    group: String,
    agent: Option<Child>,
    children: Vec<Child>,
}

impl Rig {
    fn new(tag: &str) -> Rig {
        let dir = tempfile::Builder::new().prefix("ff-sec-test").tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::create_dir(dir.path().join("run")).unwrap();
        Rig { dir, group: format!("ff-sec-{tag}-{}", std::process::id()), agent: None, children: vec![] }
    }
    fn path(&self, p: &str) -> PathBuf {
        self.dir.path().join(p)
    }
    fn socket(&self) -> PathBuf {
        self.path("run/agent.sock")
    }
    fn log(&self) -> PathBuf {
        self.path("run/agent.log")
    }

    fn config(&self, state: &Path, extra: &str) -> PathBuf {
        let p = self.path("run/agent.toml");
        // Write-back settings are system-wide: only the test about them holds them.
        // A pause in these tests lasts until burst-end or max_ms, whatever the foreground does
        // (the default ends it once the foreground's I/O is quiet): only the test about that
        // sets idle_end_ms.
        let extra = if extra.contains("idle_end_ms") {
            extra.to_string()
        } else if extra.contains("[pause]\n") {
            extra.replacen("[pause]\n", "[pause]\nidle_end_ms = 0\n", 1)
        } else {
            format!("{extra}[pause]\nidle_end_ms = 0\n")
        };
        let extra = if extra.contains("hold_writeback") {
            extra.to_owned()
        } else if extra.contains("[pause]\n") {
            extra.replacen("[pause]\n", "[pause]\nhold_writeback = false\n", 1)
        } else {
            format!("{extra}[pause]\nhold_writeback = false\n")
        };
        std::fs::write(
            &p,
            format!(
                "[agent]\nsocket = {:?}\nstate = {state:?}\ngroup = {:?}\nrescan_ms = 100\n{extra}",
                self.socket(),
                self.group
            ),
        )
        .unwrap();
        p
    }

    fn agent_cmd(&self, config: &Path) -> Command {
        let log = std::fs::OpenOptions::new().create(true).append(true).open(self.log()).unwrap();
        let mut c = Command::new(BIN);
        c.args(["agent", "run", "--config"]).arg(config).stderr(log).stdin(Stdio::null());
        c
    }

    fn start_agent(&mut self, mut cmd: Command) {
        self.agent = Some(cmd.spawn().unwrap());
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(10) {
            if self.cli(&["status", "--format", "json"]).status.success() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("agent did not answer in 10 s; log:\n{}", std::fs::read_to_string(self.log()).unwrap_or_default());
    }

    fn cli(&self, args: &[&str]) -> std::process::Output {
        Command::new(BIN).arg("agent").args(args).arg("--socket").arg(self.socket()).output().unwrap()
    }

    fn status(&self) -> serde_json::Value {
        let out = self.cli(&["status", "--format", "json"]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    }

    fn spawn_sleeper(&mut self) -> i32 {
        let c = Command::new("sleep").arg("60").spawn().unwrap();
        let pid = c.id() as i32;
        self.children.push(c);
        pid
    }

    fn gdir(&self, ctrl: &str, sub: &str) -> PathBuf {
        common::gdir(&self.group, ctrl, sub)
    }

    /// The background freezer group's state; `GONE` once a restore removed the group.
    fn freezer_state(&self) -> String {
        match std::fs::read_to_string(self.gdir("freezer", "bg").join("freezer.state")) {
            Ok(s) => s.trim().to_owned(),
            // ENODEV: read while the group is being removed (a dead agent's watchdog restores).
            Err(e) if e.raw_os_error() == Some(nix::libc::ENODEV) || !self.gdir("freezer", "bg").exists() => "GONE".into(),
            Err(e) => panic!("freezer.state: {e}"),
        }
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        common::teardown(&self.group, self.agent.take(), &mut self.children);
    }
}

/// Every file under `dir`: (path, owner, mode, kind, contents or link target).
fn snapshot(dir: &Path) -> Vec<(PathBuf, u32, u32, String)> {
    let mut out = vec![];
    let mut todo = vec![dir.to_owned()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let m = std::fs::symlink_metadata(&p).unwrap();
            let what = if m.file_type().is_symlink() {
                format!("-> {}", std::fs::read_link(&p).unwrap().display())
            } else if m.is_dir() {
                todo.push(p.clone());
                "dir".into()
            } else {
                String::from_utf8_lossy(&std::fs::read(&p).unwrap()).into_owned()
            };
            out.push((p, m.uid(), m.mode(), what));
        }
    }
    out.sort();
    out
}

/// Runs `forefront agent ARGS` as root and returns (success, stderr).
fn agent_as_root(args: &[&str], config: &Path) -> (bool, String) {
    let out = Command::new(BIN).arg("agent").args(args).arg("--config").arg(config).stdin(Stdio::null()).output().unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// The hostile user's traps, each in a directory of its own, and what root's agent does with
/// them: `agent run` and `agent restore` (the unit's `ExecStopPost=`) refuse, naming the
/// reason, and no file of the scratch directory changes — the victim least of all.
#[test]
fn a_state_directory_a_user_planted_is_refused_and_nothing_is_written() {
    root_or_skip!("a_state_directory_a_user_planted_is_refused_and_nothing_is_written");
    let user = TestUser::new("plant");
    let rig = Rig::new("plant");
    let victim = rig.path("victim");
    std::fs::write(&victim, "root's file").unwrap();
    std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o644)).unwrap();
    // The user's own directory (a home), and a world-writable sticky one (like /dev/shm).
    let home = rig.path("home");
    std::fs::create_dir(&home).unwrap();
    std::os::unix::fs::chown(&home, Some(user.uid), Some(user.gid)).unwrap();
    let shm = rig.path("shm");
    std::fs::create_dir(&shm).unwrap();
    std::fs::set_permissions(&shm, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let journal = format!(r#"{{"agent_pid":1,"entries":[{{"kind":"knob","path":{victim:?},"original":"pwned"}}]}}"#);
    // 1. A journal naming the victim, in a directory the user owns.
    user.sh(&home, &format!("mkdir -m 755 j && printf '%s' '{journal}' > j/state.json && chmod 644 j/state.json"));
    // 2. A temporary-file symlink to the victim, in a directory the user owns.
    user.sh(&home, &format!("mkdir -m 755 t && ln -s {} t/state.tmp", victim.display()));
    // 3. The agent's directory made first by the user in the sticky place (as /dev/shm/forefront
    //    could be), with a planted journal and link inside.
    user.sh(
        &shm,
        &format!(
            "mkdir -m 755 forefront && printf '%s' '{journal}' > forefront/state.json && ln -s {} forefront/state.tmp",
            victim.display()
        ),
    );
    // 4. A journal and link planted in the sticky, world-writable place itself.
    user.sh(&shm, &format!("printf '%s' '{journal}' > state.json && ln -s {} state.tmp", victim.display()));
    let before = snapshot(rig.dir.path());
    for (state, why) in [
        (home.join("j/state.json"), format!("owned by uid {}", user.uid)),
        (home.join("t/state.json"), format!("owned by uid {}", user.uid)),
        (shm.join("forefront/state.json"), format!("owned by uid {}", user.uid)),
        (shm.join("state.json"), "group or others may write it".to_owned()),
    ] {
        let cfg = rig.config(&state, "");
        for args in [&["run"][..], &["restore"]] {
            let (ok, err) = agent_as_root(args, &cfg);
            assert!(!ok, "agent {args:?} with {} succeeded", state.display());
            assert!(err.contains(&why) && err.contains("refused"), "agent {args:?} {}: {err}", state.display());
        }
        let mut after = snapshot(rig.dir.path());
        after.retain(|(p, ..)| !p.starts_with(rig.path("run")));
        let mut want = before.clone();
        want.retain(|(p, ..)| !p.starts_with(rig.path("run")));
        assert_eq!(after, want, "{}: a file changed", state.display());
        for c in CONTROLLERS {
            assert!(!rig.gdir(c, "").exists(), "the refused agent made no group");
        }
    }
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "root's file");
    // The same places, made by nobody but the agent: accepted, private.
    let fresh = shm.join("fresh/state.json");
    let (ok, err) = agent_as_root(&["restore"], &rig.config(&fresh, ""));
    assert!(ok, "{err}");
    assert!(!fresh.parent().unwrap().exists(), "restore with nothing to restore makes nothing");
}

/// What the re-executed test binary does as the throwaway user (`FF_SEC_HELPER`):
///
/// - `trickle SOCKET N SECS`: N connections, each sending a request one byte a second for SECS
///   seconds; prints each connection's reply.
/// - `flood SOCKET SECS`: connect, read the reply, close, again, for SECS seconds; prints the
///   number of connections.
///
/// Without the variable (a plain `cargo test --ignored`) it does nothing.
#[test]
#[ignore = "run by the tests below as another user"]
fn helper() {
    let Ok(mode) = std::env::var("FF_SEC_HELPER") else { return };
    let w: Vec<&str> = mode.split(' ').collect();
    match w[..] {
        ["trickle", socket, n, secs] => {
            let n: usize = n.parse().unwrap();
            let secs: u64 = secs.parse().unwrap();
            let mut conns: Vec<UnixStream> = (0..n).filter_map(|_| UnixStream::connect(socket).ok()).collect();
            let readers: Vec<_> = conns
                .iter()
                .map(|c| {
                    let c = c.try_clone().unwrap();
                    std::thread::spawn(move || {
                        let mut line = String::new();
                        let _ = BufReader::new(c).read_line(&mut line);
                        line
                    })
                })
                .collect();
            let text = br#"{"cmd":"status"}"#;
            for i in 0..secs as usize {
                for c in &mut conns {
                    let _ = c.write_all(&text[i % (text.len() - 1)..][..1]);
                }
                std::thread::sleep(Duration::from_secs(1));
            }
            drop(conns);
            for r in readers {
                println!("REPLY {}", r.join().unwrap().trim());
            }
        }
        ["flood", socket, secs] => {
            let t0 = Instant::now();
            let mut n = 0;
            while t0.elapsed() < Duration::from_secs(secs.parse().unwrap()) {
                if let Ok(c) = UnixStream::connect(socket) {
                    let mut line = String::new();
                    let _ = BufReader::new(c).read_line(&mut line);
                    n += 1;
                }
            }
            println!("CONNECTIONS {n}");
        }
        _ => panic!("bad FF_SEC_HELPER {mode:?}"),
    }
}

/// The helper's output lines that start with `tag`.
fn helper_lines(out: &std::process::Output, tag: &str) -> Vec<String> {
    // (A line may start with the harness's own "test helper ... ".)
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.find(tag).map(|i| l[i + tag.len()..].trim().to_owned()))
        .collect()
}

/// 16 connections of an allowed user trickling a byte a second: the user gets its share of
/// slots (4), each cut at the 2 s request deadline; root's `status` from another connection
/// is answered at once all along. A flood of refused connections grows the log by a bounded
/// amount; a client's newline cannot forge a log line.
#[test]
fn slow_clients_and_refused_floods_neither_block_the_socket_nor_flood_the_log() {
    cgroups_or_skip!("slow_clients_and_refused_floods_neither_block_the_socket_nor_flood_the_log");
    let trickler = TestUser::new("slow");
    let stranger = TestUser::new("flood");
    let mut rig = Rig::new("loris");
    let cfg = rig.config(&rig.path("run/state/state.json"), &format!("[control]\nallow_uids = [0, {}]\n", trickler.uid));
    rig.start_agent(rig.agent_cmd(&cfg));

    // Slow loris: 16 trickling connections for 6 s, root asking for the status meanwhile.
    let loris = trickler.helper(&format!("trickle {} 16 6", rig.socket().display())).stdout(Stdio::piped()).spawn().unwrap();
    rig.children.push(loris);
    std::thread::sleep(Duration::from_millis(300));
    let t0 = Instant::now();
    let mut worst = Duration::ZERO;
    while t0.elapsed() < Duration::from_secs(5) {
        let t = Instant::now();
        let out = rig.cli(&["status", "--format", "json"]);
        worst = worst.max(t.elapsed());
        assert!(out.status.success(), "status refused during the trickle: {}", String::from_utf8_lossy(&out.stderr));
        std::thread::sleep(Duration::from_millis(100));
    }
    note(&format!("status during a 16-connection slow loris: slowest answer {:.1} ms", worst.as_secs_f64() * 1e3));
    assert!(worst < DEADLINE, "status waited {worst:?}");
    let loris = rig.children.pop().unwrap();
    let out = loris.wait_with_output().unwrap();
    let replies = helper_lines(&out, "REPLY");
    assert_eq!(replies.len(), 16, "{replies:?}");
    let cut = replies.iter().filter(|r| r.contains("not complete within 2000 ms")).count();
    let busy = replies.iter().filter(|r| r.contains("busy: uid")).count();
    assert_eq!((cut, busy), (4, 12), "{replies:?}");

    // A refused user floods for 3 s: the log grows by a few lines a second, not per connection.
    let log_before = std::fs::metadata(rig.log()).unwrap().len();
    let out = stranger.helper(&format!("flood {} 3", rig.socket().display())).output().unwrap();
    let n: u64 = helper_lines(&out, "CONNECTIONS")[0].parse().unwrap();
    // One more refusal a second later logs the count of the unlogged ones.
    std::thread::sleep(Duration::from_millis(1100));
    let _ = Command::new(BIN)
        .args(["agent", "status", "--socket"])
        .arg(rig.socket())
        .uid(stranger.uid)
        .gid(stranger.gid)
        .output()
        .unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let grew = std::fs::metadata(rig.log()).unwrap().len() - log_before;
    let log = std::fs::read_to_string(rig.log()).unwrap();
    note(&format!("refused flood: {n} connections in 3 s, log grew {grew} bytes"));
    assert!(n > 300, "the flood made only {n} connections");
    assert!(grew < 6 * 6 * 200, "log grew {grew} bytes for {n} refusals");
    assert!(log.contains("more refusal(s) not logged"), "{log}");

    // A newline in a client's string: refused, and logged on one line.
    let mut s = UnixStream::connect(rig.socket()).unwrap();
    s.write_all(b"{\"cmd\":\"fg\",\"cgroup\":\"/x\\nforefront-agent: FORGED\"}\n").unwrap();
    let mut line = String::new();
    BufReader::new(&s).read_line(&mut line).unwrap();
    assert!(line.contains("control character"), "{line}");
    let mut s = UnixStream::connect(rig.socket()).unwrap();
    s.write_all(b"{\"cmd\":\"x\\nforefront-agent: FORGED\"}\n").unwrap();
    let _ = BufReader::new(&s).read_line(&mut String::new());
    std::thread::sleep(Duration::from_millis(200));
    let log = std::fs::read_to_string(rig.log()).unwrap();
    assert!(log.contains("FORGED"), "the refusal is logged: {log}");
    assert!(!log.lines().any(|l| l.starts_with("forefront-agent: FORGED")), "a forged line: {log}");
    let a = rig.agent.take().unwrap();
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(a.id() as i32), nix::sys::signal::Signal::SIGTERM).unwrap();
    assert!(a.wait_with_output().unwrap().status.success());
}

/// `/proc/sys/vm`'s write-back settings, put back as they were when dropped.
struct VmGuard(Vec<(PathBuf, String)>);

fn vm_settings() -> Vec<(PathBuf, String)> {
    [
        "dirty_bytes",
        "dirty_ratio",
        "dirty_background_bytes",
        "dirty_background_ratio",
        "dirty_writeback_centisecs",
        "dirty_expire_centisecs",
    ]
    .iter()
    .map(|n| {
        let p = Path::new("/proc/sys/vm").join(n);
        let v = std::fs::read_to_string(&p).unwrap().trim().to_owned();
        (p, v)
    })
    .collect()
}

impl Drop for VmGuard {
    fn drop(&mut self) {
        for (p, v) in &self.0 {
            if v != "0" || p.ends_with("dirty_writeback_centisecs") {
                let _ = std::fs::write(p, v);
            }
        }
    }
}

/// A command line of `dist/forefront-agent.service` (`ExecStopPost=` ...), with the installed
/// binary and config replaced by this build's and the test's.
fn unit_command(key: &str, config: &Path) -> Command {
    let unit = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../dist/forefront-agent.service")).unwrap();
    let line = unit.lines().find_map(|l| l.strip_prefix(&format!("{key}="))).unwrap_or_else(|| panic!("no {key}= in the unit"));
    let words: Vec<&str> = line.split_whitespace().collect();
    assert!(words[0].ends_with("/forefront") && words.ends_with(&["--config", "/etc/forefront/agent.toml"]), "{line}");
    let mut c = Command::new(BIN);
    c.args(&words[1..words.len() - 1]).arg(config).stdin(Stdio::null());
    c
}

fn unit_value(key: &str) -> String {
    let unit = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../dist/forefront-agent.service")).unwrap();
    unit.lines()
        .find_map(|l| l.strip_prefix(&format!("{key}=")))
        .unwrap_or_else(|| panic!("no {key}= in the unit"))
        .trim()
        .to_owned()
}

/// Waits until the background is thawed and write-back is as before; returns when, from `t0`.
fn until_restored(rig: &Rig, before: &[(PathBuf, String)], t0: Instant, limit: Duration) -> Option<Duration> {
    while t0.elapsed() < limit {
        if matches!(rig.freezer_state().as_str(), "THAWED" | "GONE") && vm_settings() == before {
            return Some(t0.elapsed());
        }
        std::thread::sleep(Duration::from_micros(500));
    }
    None
}

/// Starts a pause with write-back held and returns the watchdog's pid.
fn pause(rig: &mut Rig, before: &[(PathBuf, String)]) -> i32 {
    let app = rig.spawn_sleeper();
    let out = rig.cli(&["fg", &app.to_string(), "--burst"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("paused"), "{}", String::from_utf8_lossy(&out.stderr));
    let t0 = Instant::now();
    while rig.freezer_state() != "FROZEN" && t0.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(2));
    }
    assert_eq!(rig.freezer_state(), "FROZEN");
    assert_ne!(vm_settings(), before, "write-back held");
    rig.status()["watchdog_pid"].as_i64().expect("a watchdog") as i32
}

/// Kills the agent and its watchdog so that neither can act on the other's death: the agent is
/// stopped first (it would start another watchdog), then both get SIGKILL.
fn kill_both(agent: i32, watchdog: i32) {
    use nix::sys::signal::{kill, Signal};
    kill(nix::unistd::Pid::from_raw(agent), Signal::SIGSTOP).unwrap();
    sigkill(watchdog);
    sigkill(agent);
}

/// Whether this process may lower an `oom_score_adj` (CAP_SYS_RESOURCE, bit 24 of CapEff).
fn has_cap_sys_resource() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let eff = status.lines().find_map(|l| l.strip_prefix("CapEff:")).unwrap().trim();
    u64::from_str_radix(eff, 16).unwrap() & (1 << 24) != 0
}

fn sigkill(pid: i32) {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL).unwrap();
}

/// A pause nothing can leave behind. The agent and its watchdog die together during a pause
/// (with write-back held, 30 s deadline), three ways:
///
/// 1. `kill -9 -PGID` of the agent's process group: the watchdog lives in a session of its
///    own, survives, and thaws on EOF.
/// 2. SIGKILL of both by pid: nothing of the agent is left. What systemd runs after the main
///    process dies (`ExecStopPost=` of dist/forefront-agent.service, run here in its place as
///    this VM has no systemd) restores everything.
/// 3. The same, then `Restart=always`: the restarted agent (`ExecStart=`) restores at start.
///
/// Each is timed from the kill to "thawed and every write-back setting back".
#[test]
fn killing_the_agent_and_its_watchdog_together_leaves_nothing_paused() {
    cgroups_or_skip!("killing_the_agent_and_its_watchdog_together_leaves_nothing_paused");
    let before = VmGuard(vm_settings());
    if before.0.iter().any(|(p, v)| p.ends_with("dirty_writeback_centisecs") && v == "0") {
        note("SKIP: periodic write-back is off on this system: nothing to hold");
        return;
    }
    assert_eq!(unit_value("Restart"), "always");
    let restart_sec: f64 = unit_value("RestartSec").parse().unwrap();
    let mut rig = Rig::new("kill");
    let bg = rig.spawn_sleeper();
    let cfg = rig.config(
        &rig.path("run/state/state.json"),
        &format!("[scope]\ntrees = [{bg}]\n[pause]\nmax_ms = 30000\nmin_gap_ms = 0\nhold_writeback = true\n"),
    );

    // 1. The process group.
    let mut cmd = rig.agent_cmd(&cfg);
    cmd.process_group(0);
    rig.start_agent(cmd);
    let agent = rig.agent.as_ref().unwrap().id() as i32;
    let watchdog = pause(&mut rig, &before.0);
    assert_ne!(nix::unistd::getpgid(Some(nix::unistd::Pid::from_raw(watchdog))).unwrap().as_raw(), agent, "own group");
    let t0 = Instant::now();
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(-agent), nix::sys::signal::Signal::SIGKILL).unwrap();
    let took = until_restored(&rig, &before.0, t0, Duration::from_secs(5));
    let _ = rig.agent.take().unwrap().wait();
    let group_kill = took.expect("still paused 5 s after the group kill");
    note(&format!("group kill: thawed and write-back restored {:.1} ms after it", group_kill.as_secs_f64() * 1e3));
    assert!(group_kill < Duration::from_secs(1));

    // 2. Both by pid; then the unit's ExecStopPost.
    rig.start_agent(rig.agent_cmd(&cfg));
    let watchdog = pause(&mut rig, &before.0);
    let t0 = Instant::now();
    kill_both(rig.agent.as_ref().unwrap().id() as i32, watchdog);
    let _ = rig.agent.take().unwrap().wait();
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(rig.freezer_state(), "FROZEN", "nothing else ended the pause: the test kills what it claims");
    let t1 = Instant::now();
    let out = unit_command("ExecStopPost", &cfg).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stop_post = until_restored(&rig, &before.0, t1, Duration::from_secs(5)).expect("ExecStopPost did not restore");
    note(&format!(
        "both killed, ExecStopPost: restored {:.1} ms after it started ({:.0} ms after the kill, 200 ms of it waiting on purpose)",
        stop_post.as_secs_f64() * 1e3,
        t0.elapsed().as_secs_f64() * 1e3
    ));
    assert!(stop_post < Duration::from_secs(1));

    // 3. Both by pid; then Restart=always after RestartSec: the new agent restores at start.
    rig.start_agent(rig.agent_cmd(&cfg));
    let watchdog = pause(&mut rig, &before.0);
    kill_both(rig.agent.as_ref().unwrap().id() as i32, watchdog);
    let _ = rig.agent.take().unwrap().wait();
    let t0 = Instant::now();
    std::thread::sleep(Duration::from_secs_f64(restart_sec));
    rig.agent = Some(
        unit_command("ExecStart", &cfg)
            .stderr(std::fs::OpenOptions::new().append(true).open(rig.log()).unwrap())
            .spawn()
            .unwrap(),
    );
    let restarted = until_restored(&rig, &before.0, t0, Duration::from_secs_f64(restart_sec) + Duration::from_secs(5))
        .expect("the restarted agent did not restore");
    note(&format!(
        "both killed, Restart=always (RestartSec={restart_sec}): restored {:.0} ms after the kill ({:.1} ms after the restart)",
        restarted.as_secs_f64() * 1e3,
        (restarted.as_secs_f64() - restart_sec) * 1e3
    ));
    assert!(restarted < Duration::from_secs_f64(restart_sec + 1.0));
    let log = common::log_with(&rig.log(), "unclean exit");
    assert!(log.contains("unclean exit"), "{log}");
    // The restarted agent runs on with nothing paused: stop it cleanly.
    let t = Instant::now();
    while !rig.cli(&["status"]).status.success() && t.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let a = rig.agent.take().unwrap();
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(a.id() as i32), nix::sys::signal::Signal::SIGTERM).unwrap();
    assert!(a.wait_with_output().unwrap().status.success());
    assert_eq!(vm_settings(), before.0);
}

/// The watchdog killed on its own during a pause: the agent starts another within a loop turn,
/// hands it the pause, and that one thaws when the agent then dies.
#[test]
fn a_killed_watchdog_is_replaced_and_the_replacement_guards_the_pause() {
    cgroups_or_skip!("a_killed_watchdog_is_replaced_and_the_replacement_guards_the_pause");
    let mut rig = Rig::new("wd");
    let bg = rig.spawn_sleeper();
    let cfg = rig.config(&rig.path("run/state/state.json"), &format!("[scope]\ntrees = [{bg}]\n[pause]\nmax_ms = 30000\n"));
    rig.start_agent(rig.agent_cmd(&cfg));
    let app = rig.spawn_sleeper();
    assert!(rig.cli(&["fg", &app.to_string(), "--burst"]).status.success());
    let first = rig.status()["watchdog_pid"].as_i64().unwrap() as i32;
    sigkill(first);
    let t0 = Instant::now();
    let second = loop {
        let w = rig.status()["watchdog_pid"].as_i64().unwrap_or(0) as i32;
        if w != first && w != 0 {
            break w;
        }
        assert!(t0.elapsed() < Duration::from_secs(2), "no new watchdog");
        std::thread::sleep(Duration::from_millis(10));
    };
    note(&format!("watchdog replaced {:.0} ms after it was killed", t0.elapsed().as_secs_f64() * 1e3));
    let adj = std::fs::read_to_string(format!("/proc/{second}/oom_score_adj")).unwrap();
    if has_cap_sys_resource() {
        assert_eq!(
            adj.trim(),
            "-1000",
            "the OOM killer never picks the watchdog; log:\n{}",
            std::fs::read_to_string(rig.log()).unwrap()
        );
    } else {
        note("SKIP (part): no CAP_SYS_RESOURCE here, so no oom_score_adj below 0 (the agent logs it)");
        let needle = format!("watchdog pid {second}: not protected from the OOM killer");
        let log = common::log_with(&rig.log(), &needle);
        assert!(log.contains(&needle), "{log}");
    }
    assert_eq!(rig.freezer_state(), "FROZEN", "still paused");
    sigkill(rig.agent.as_ref().unwrap().id() as i32);
    let _ = rig.agent.take().unwrap().wait();
    let t0 = Instant::now();
    // Thawed, then (the agent being dead) its groups removed as its journal is restored.
    while !matches!(rig.freezer_state().as_str(), "THAWED" | "GONE") {
        assert!(t0.elapsed() < Duration::from_secs(1), "the new watchdog did not thaw");
        std::thread::sleep(Duration::from_millis(1));
    }
}
