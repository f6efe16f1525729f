//! The agent on this real kernel (cgroup v1 cpu, blkio, freezer). Each test needs root and
//! those hierarchies; elsewhere it prints `SKIP: ... (reason)` and passes. Every test cleans
//! up through [`Rig`]'s `Drop`, even when an assertion fails: it kills only the processes it
//! started (by pid), thaws and removes its own uniquely named groups. One change is not undone:
//! the agent's `[agent] favor_dynmods` (on by default) turns the kernel's cgroup `favordynmods` on,
//! which from kernel 6.18 stays on until reboot (moves stop waiting for RCU grace periods; forks
//! and exits measured no slower: docs/agent.md, "Moves without a grace period").

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_forefront");
mod common;
use common::CONTROLLERS;

fn skip_reason() -> Option<String> {
    if let Some(why) = common::rig_unavailable() {
        return Some(why);
    }
    None
}

/// Written to fd 2 directly: the test harness captures `eprintln!` of passing tests, and a
/// skip must be visible in `cargo test` output.
fn skip_note(msg: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{msg}");
}

macro_rules! real_kernel_or_skip {
    ($name:expr) => {
        if let Some(why) = skip_reason() {
            skip_note(&format!("SKIP: {} needs root and cgroup v1 cpu/blkio/freezer ({why})", $name));
            return;
        }
    };
}

struct Rig {
    dir: tempfile::TempDir,
    group: String,
    children: Vec<Child>,
    agent: Option<Child>,
}

impl Rig {
    fn new(tag: &str) -> Rig {
        let dir = tempfile::Builder::new().prefix("ff-agent-test").tempdir().unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        Rig { dir, group: format!("ff-test-{tag}-{}", std::process::id()), children: vec![], agent: None }
    }

    fn socket(&self) -> PathBuf {
        self.dir.path().join("agent.sock")
    }
    fn state(&self) -> PathBuf {
        self.dir.path().join("state.json")
    }
    fn log(&self) -> PathBuf {
        self.dir.path().join("agent.log")
    }

    /// A background process that stamps a counter file every 10 ms.
    fn spawn_ticker(&mut self) -> (i32, PathBuf) {
        let f = self.dir.path().join(format!("tick{}", self.children.len()));
        let c = Command::new("sh")
            .arg("-c")
            // Overwritten in place (`1<>`: no O_TRUNC). A truncating `>` frees the file's block
            // once write-back has allocated it, and on a `-o discard` mount the next open then
            // waits for that block's discard: a background ticker in the idle I/O class (which
            // outlives a killed agent until `agent restore`) could wait seconds for it, and the
            // tests read its ticks as "the task runs", not as "its I/O is served".
            .arg(format!("i=0; while :; do i=$((i+1)); printf '%012d\\n' $i 1<> {}; sleep 0.01; done", f.display()))
            .spawn()
            .unwrap();
        let pid = c.id() as i32;
        self.children.push(c);
        (pid, f)
    }

    fn config(&self, trees: &[i32], extra: &str) -> PathBuf {
        let p = self.dir.path().join("agent.toml");
        // Write-back settings are system-wide and these tests run at once: only the test about
        // them holds them, so no test sees another's held values.
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
        // The CPU side is off by default; these tests check its groups too.
        let extra = if extra.contains("[cpu]\n") {
            extra.replacen("[cpu]\n", "[cpu]\nenabled = true\n", 1)
        } else {
            format!("{extra}[cpu]\nenabled = true\n")
        };
        let extra = if extra.contains("hold_writeback") {
            extra.to_string()
        } else if extra.contains("[pause]\n") {
            extra.replacen("[pause]\n", "[pause]\nhold_writeback = false\n", 1)
        } else {
            format!("{extra}[pause]\nhold_writeback = false\n")
        };
        std::fs::write(
            &p,
            format!(
                "[agent]\nsocket = {:?}\nstate = {:?}\ngroup = {:?}\nrescan_ms = 100\n[scope]\ntrees = {:?}\n{extra}",
                self.socket(),
                self.state(),
                self.group,
                trees
            ),
        )
        .unwrap();
        p
    }

    fn start_agent(&mut self, config: &Path) {
        let log = std::fs::OpenOptions::new().create(true).append(true).open(self.log()).unwrap();
        let child = Command::new(BIN).args(["agent", "run", "--config"]).arg(config).stderr(log).spawn().unwrap();
        self.agent = Some(child);
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(10) {
            if self.cli(&["status", "--format", "json"]).status.success() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
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

    fn signal_agent(&mut self, sig: nix::sys::signal::Signal) -> std::process::ExitStatus {
        let mut a = self.agent.take().expect("agent running");
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(a.id() as i32), sig).unwrap();
        a.wait().unwrap()
    }

    /// Kills the agent and its watchdog so that neither acts on the other's death (the agent,
    /// stopped first, cannot start another watchdog): what a crash of both leaves.
    fn kill_agent_and_watchdog(&mut self) {
        use nix::sys::signal::{kill, Signal};
        let watchdog = self.status()["watchdog_pid"].as_i64().expect("a watchdog") as i32;
        let agent = self.agent.as_ref().expect("agent running").id() as i32;
        kill(nix::unistd::Pid::from_raw(agent), Signal::SIGSTOP).unwrap();
        kill(nix::unistd::Pid::from_raw(watchdog), Signal::SIGKILL).unwrap();
        self.signal_agent(Signal::SIGKILL);
    }

    fn gdir(&self, ctrl: &str, sub: &str) -> PathBuf {
        common::gdir(&self.group, ctrl, sub)
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        common::teardown(&self.group, self.agent.take(), &mut self.children);
    }
}

fn cgroup_line(pid: i32, ctrl: &str) -> String {
    let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap();
    text.lines()
        .find(|l| l.split(':').nth(1).is_some_and(|c| c.split(',').any(|x| x == ctrl)))
        .unwrap()
        .rsplit(':')
        .next()
        .unwrap()
        .to_owned()
}

fn ioprio_class(pid: i32) -> i64 {
    // SAFETY: plain syscall (IOPRIO_WHO_PROCESS = 1).
    let r = unsafe { libc_syscall_ioprio_get(pid) };
    assert!(r >= 0);
    r >> 13
}

unsafe fn libc_syscall_ioprio_get(pid: i32) -> i64 {
    unsafe {
        extern "C" {
            fn syscall(n: i64, ...) -> i64;
        }
        const SYS_IOPRIO_GET: i64 = if cfg!(target_arch = "aarch64") { 31 } else { 252 };
        syscall(SYS_IOPRIO_GET, 1i64, pid as i64)
    }
}

fn read(p: PathBuf) -> String {
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display())).trim().to_owned()
}

fn ticks(f: &Path) -> u64 {
    std::fs::read_to_string(f).ok().and_then(|s| s.trim().parse().ok()).unwrap_or(0)
}

#[test]
fn applies_v1_knobs_and_restores_them_on_sigterm() {
    real_kernel_or_skip!("applies_v1_knobs_and_restores_them_on_sigterm");
    let mut rig = Rig::new("knobs");
    let (bg, _) = rig.spawn_ticker();
    let before = (cgroup_line(bg, "cpu"), cgroup_line(bg, "blkio"), ioprio_class(bg));
    let cfg = rig.config(&[bg], "");
    rig.start_agent(&cfg);
    let bgdir = format!("/{}/bg", rig.group);
    assert_eq!(cgroup_line(bg, "cpu"), bgdir);
    assert_eq!(cgroup_line(bg, "blkio"), bgdir);
    assert_eq!(cgroup_line(bg, "freezer"), bgdir);
    assert_eq!(read(rig.gdir("cpu", "fg").join("cpu.shares")), "1024");
    assert_eq!(read(rig.gdir("cpu", "bg").join("cpu.idle")), "1");
    // cpu.idle=1 makes the kernel report its minimum weight (3) in cpu.shares.
    assert_eq!(read(rig.gdir("cpu", "bg").join("cpu.shares")), "3");
    if rig.gdir("blkio", "bg").join("blkio.bfq.weight").exists() {
        assert_eq!(read(rig.gdir("blkio", "bg").join("blkio.bfq.weight")), "10");
    }
    assert_eq!(ioprio_class(bg), 3, "idle I/O class");
    // Membership follows forks: the shell's `sleep` children are born in the bg groups.
    let procs = rig.gdir("cpu", "bg").join("cgroup.procs");
    let t0 = Instant::now();
    let child = loop {
        let pids: Vec<i32> = read(procs.clone()).lines().filter_map(|l| l.parse().ok()).collect();
        if let Some(c) = pids.into_iter().find(|&p| p != bg) {
            break Some(c);
        }
        if t0.elapsed() > Duration::from_secs(2) {
            break None;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    assert!(child.is_some(), "no child of the background shell appeared in its group");
    let st = rig.status();
    assert_eq!(st["classes"]["background"][0]["pid"], bg);
    assert!(st["changes"].as_array().unwrap().len() >= 9);
    let knobs: Vec<String> = st["knobs"].as_array().unwrap().iter().map(|k| k["path"].as_str().unwrap().to_owned()).collect();
    assert!(knobs.iter().any(|p| p.ends_with("/bg/cpu.idle")), "{knobs:?}");

    let status = rig.signal_agent(nix::sys::signal::Signal::SIGTERM);
    assert!(status.success(), "{status:?}");
    assert_eq!((cgroup_line(bg, "cpu"), cgroup_line(bg, "blkio"), ioprio_class(bg)), before);
    for c in CONTROLLERS {
        assert!(!rig.gdir(c, "").exists(), "{c} group removed");
    }
    assert!(!rig.state().exists(), "clean exit leaves no state file");
}

#[test]
fn sigkill_during_a_pause_leaves_nothing_frozen_after_one_second() {
    real_kernel_or_skip!("sigkill_during_a_pause_leaves_nothing_frozen_after_one_second");
    let mut rig = Rig::new("kill");
    let (bg, tick) = rig.spawn_ticker();
    let cfg = rig.config(&[bg], "[pause]\nmax_ms = 30000\n");
    rig.start_agent(&cfg);
    let (fg, _) = rig.spawn_ticker();
    let out = rig.cli(&["fg", &fg.to_string(), "--burst"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // The reply comes once the freeze is requested; the kernel completes it while the
    // launch runs (FREEZING, then FROZEN): give it a moment.
    let state = rig.gdir("freezer", "bg").join("freezer.state");
    // (A loaded machine takes a while to stop every task; this test is about the thaw.)
    let t0 = Instant::now();
    while read(state.clone()) != "FROZEN" && t0.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(read(state), "FROZEN");
    let n = ticks(&tick);
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(ticks(&tick), n, "background does not run while frozen");

    let t0 = Instant::now();
    rig.signal_agent(nix::sys::signal::Signal::SIGKILL);
    let mut resumed = None;
    while t0.elapsed() < Duration::from_secs(3) {
        if ticks(&tick) > n {
            resumed = Some(t0.elapsed());
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let resumed = resumed.expect("background never resumed after the agent was killed");
    eprintln!("background resumed {:.0} ms after SIGKILL", resumed.as_secs_f64() * 1000.0);
    assert!(
        resumed < Duration::from_secs(1),
        "resumed after {resumed:?}; agent's log:\n{}",
        std::fs::read_to_string(rig.log()).unwrap_or_default()
    );
    // Thawed, or already gone: the watchdog then restores the dead agent's journal, which
    // removes its groups (`a_killed_agents_watchdog_restores_io_classes_and_groups`).
    match std::fs::read_to_string(rig.gdir("freezer", "bg").join("freezer.state")) {
        Ok(state) => assert_eq!(state.trim(), "THAWED"),
        // (ENODEV: read while the group is being removed.)
        Err(e) => assert!(e.kind() == std::io::ErrorKind::NotFound || e.raw_os_error() == Some(nix::libc::ENODEV), "{e}"),
    }
}

#[test]
fn restart_after_a_crash_restores_original_values() {
    real_kernel_or_skip!("restart_after_a_crash_restores_original_values");
    let mut rig = Rig::new("crash");
    let (bg, _) = rig.spawn_ticker();
    let before = (cgroup_line(bg, "cpu"), ioprio_class(bg));
    let cfg = rig.config(&[bg], "");
    rig.start_agent(&cfg);
    assert_eq!(ioprio_class(bg), 3);
    // Both die: nothing of the agent is left to restore (the watchdog alone would restore at
    // once: `a_killed_agents_watchdog_restores_io_classes_and_groups`).
    rig.kill_agent_and_watchdog();
    assert!(rig.state().exists(), "a crash leaves the journal");
    assert_eq!(cgroup_line(bg, "cpu"), format!("/{}/bg", rig.group), "still moved: nobody restored yet");
    // Restart with nothing in scope: the old changes are undone and not redone.
    let cfg = rig.config(&[], "[cpu]\nbg_idle = false\npause_only = false\n");
    rig.start_agent(&cfg);
    assert_eq!((cgroup_line(bg, "cpu"), ioprio_class(bg)), before);
    assert_eq!(read(rig.gdir("cpu", "bg").join("cpu.idle")), "0");
    assert_eq!(read(rig.gdir("cpu", "bg").join("cpu.shares")), "110", "Android's background shares");
    let log = std::fs::read_to_string(rig.log()).unwrap();
    assert!(log.contains("unclean exit"), "{log}");
    assert!(rig.signal_agent(nix::sys::signal::Signal::SIGINT).success());
    assert!(!rig.gdir("cpu", "").exists());
}

/// An agent killed alone (SIGKILL, the OOM killer, a panic) must not leave the background worse
/// off than no agent at all: in the idle I/O class and the agent's groups, with nobody left to
/// move a process that comes to the foreground. Its watchdog restores the journal at once.
#[test]
fn a_killed_agents_watchdog_restores_io_classes_and_groups() {
    real_kernel_or_skip!("a_killed_agents_watchdog_restores_io_classes_and_groups");
    let mut rig = Rig::new("wdrestore");
    let (bg, _) = rig.spawn_ticker();
    let before = (cgroup_line(bg, "cpu"), cgroup_line(bg, "blkio"), ioprio_class(bg));
    // No pause: the watchdog runs all the same (it has a journal to guard, nothing to thaw).
    let cfg = rig.config(&[bg], "[pause]\nenabled = false\n");
    rig.start_agent(&cfg);
    assert!(rig.status()["watchdog_pid"].as_i64().is_some(), "a watchdog without a pause");
    assert_eq!(ioprio_class(bg), 3, "background in the idle I/O class");
    assert_eq!(cgroup_line(bg, "blkio"), format!("/{}/bg", rig.group));
    let t0 = Instant::now();
    rig.signal_agent(nix::sys::signal::Signal::SIGKILL);
    let now = || (cgroup_line(bg, "cpu"), cgroup_line(bg, "blkio"), ioprio_class(bg));
    while now() != before || rig.state().exists() || rig.gdir("blkio", "").exists() {
        assert!(
            t0.elapsed() < Duration::from_secs(2),
            "2 s after the agent died: {:?} (before {before:?}), journal {}, groups {}; agent's log:\n{}",
            now(),
            rig.state().exists(),
            rig.gdir("blkio", "").exists(),
            std::fs::read_to_string(rig.log()).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    skip_note(&format!(
        "watchdog restored a killed agent's changes {:.1} ms after the SIGKILL",
        t0.elapsed().as_secs_f64() * 1e3
    ));
    let log = common::log_with(&rig.log(), "change(s) left by agent pid");
    assert!(log.contains("change(s) left by agent pid"), "{log}");
    // A clean stop afterwards: the next agent starts on a clean system (no "unclean exit").
    let cfg = rig.config(&[], "");
    rig.start_agent(&cfg);
    assert!(!std::fs::read_to_string(rig.log()).unwrap().contains("unclean exit"));
    assert!(rig.signal_agent(nix::sys::signal::Signal::SIGTERM).success());
}

#[test]
fn bad_socket_input_is_refused_and_the_agent_lives_on() {
    real_kernel_or_skip!("bad_socket_input_is_refused_and_the_agent_lives_on");
    let mut rig = Rig::new("bad");
    let cfg = rig.config(&[], "");
    rig.start_agent(&cfg);
    for junk in [&b"{\"cmd\":\"fg\",\"pid\":-1}\n"[..], b"\xff\xff\n", b"{\"cmd\":\"rm -rf\"}\n", &[b'{'; 70_000][..]] {
        let mut s = std::os::unix::net::UnixStream::connect(rig.socket()).unwrap();
        let _ = s.write_all(junk);
        let mut line = String::new();
        let _ = BufReader::new(s).read_line(&mut line);
        assert!(line.contains("\"ok\":false"), "{line}");
    }
    let out = rig.cli(&["fg", "999999999"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no process 999999999"));
    assert!(rig.status()["pid"].is_number(), "still serving");
    let log = std::fs::read_to_string(rig.log()).unwrap();
    assert!(log.contains("control: refused"), "refusals are logged: {log}");
    assert!(rig.signal_agent(nix::sys::signal::Signal::SIGTERM).success());
}

#[test]
fn unauthorised_peer_is_refused() {
    real_kernel_or_skip!("unauthorised_peer_is_refused");
    let mut rig = Rig::new("auth");
    let cfg = rig.config(&[], "");
    rig.start_agent(&cfg);
    let out = Command::new(BIN)
        .args(["agent", "status", "--socket"])
        .arg(rig.socket())
        .uid(65534)
        .gid(65534)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("permission denied: uid 65534"), "{err}");
    assert!(rig.signal_agent(nix::sys::signal::Signal::SIGTERM).success());
}

/// Cell groups this test made in the cpu hierarchy, removed last (after the rig killed the
/// processes in them): anything still inside goes back to the root first.
struct CellDirs(Vec<PathBuf>);

impl Drop for CellDirs {
    fn drop(&mut self) {
        for _ in 0..20 {
            for d in self.0.iter().rev() {
                if let Ok(pids) = std::fs::read_to_string(d.join("cgroup.procs")) {
                    for pid in pids.lines() {
                        let _ = std::fs::write("/sys/fs/cgroup/cpu/cgroup.procs", pid);
                    }
                }
                let _ = std::fs::remove_dir(d);
            }
            if self.0.iter().all(|d| !d.exists()) {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

#[test]
fn a_cell_switch_moves_every_process_of_both_cells_and_restores_them() {
    real_kernel_or_skip!("a_cell_switch_moves_every_process_of_both_cells_and_restores_them");
    // Two cells (virtual phones) as cgroup subtrees of the cpu hierarchy, a process in each.
    let base = format!("ff-cellroot-{}", std::process::id());
    let root = Path::new("/sys/fs/cgroup/cpu").join(&base);
    let cells = CellDirs(vec![root.clone(), root.join("a"), root.join("b")]);
    for d in &cells.0 {
        std::fs::create_dir_all(d).unwrap();
    }
    let mut rig = Rig::new("cells");
    let (pa, _) = rig.spawn_ticker();
    let (pb, _) = rig.spawn_ticker();
    std::fs::write(root.join("a/cgroup.procs"), pa.to_string()).unwrap();
    std::fs::write(root.join("b/cgroup.procs"), pb.to_string()).unwrap();
    let (cell_a, cell_b) = (format!("/{base}/a"), format!("/{base}/b"));
    assert_eq!((cgroup_line(pa, "cpu"), cgroup_line(pb, "cpu")), (cell_a.clone(), cell_b.clone()));
    let cfg = rig.config(&[], &format!("[cells]\na = {cell_a:?}\nb = {cell_b:?}\n"));
    rig.start_agent(&cfg);
    let (fg, bg) = (format!("/{}/fg", rig.group), format!("/{}/bg", rig.group));
    let wait_for = |want: (&str, &str)| {
        let t0 = Instant::now();
        loop {
            let got = (cgroup_line(pa, "cpu"), cgroup_line(pb, "cpu"));
            if (got.0.as_str(), got.1.as_str()) == want || t0.elapsed() > Duration::from_secs(2) {
                return got;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    };
    // (With no foreground named yet the agent classifies nobody.)
    let out = rig.cli(&["cell", "a"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(wait_for((&fg, &bg)), (fg.clone(), bg.clone()), "cell a foreground");
    assert_eq!(cgroup_line(pa, "freezer"), fg, "every hierarchy follows");
    let out = rig.cli(&["cell", "b"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(wait_for((&bg, &fg)), (bg.clone(), fg.clone()), "cell b foreground, a background");
    let out = rig.cli(&["cell", "nope"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("cells: a, b"), "{}", String::from_utf8_lossy(&out.stderr));
    // Stopping the agent puts each process back in its cell.
    let status = rig.signal_agent(nix::sys::signal::Signal::SIGTERM);
    assert!(status.success(), "{status:?}");
    assert_eq!((cgroup_line(pa, "cpu"), cgroup_line(pb, "cpu")), (cell_a, cell_b));
    drop(rig);
    drop(cells);
}

#[test]
fn agent_exec_makes_the_launched_command_foreground_from_its_first_instruction() {
    // Without an agent the command still runs, with a warning.
    let out = Command::new(BIN)
        .args(["agent", "exec", "--socket", "/nonexistent/forefront.sock", "--", "echo", "ran"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "ran");
    assert!(String::from_utf8_lossy(&out.stderr).contains("without the agent"), "{}", String::from_utf8_lossy(&out.stderr));

    real_kernel_or_skip!("agent_exec_makes_the_launched_command_foreground_from_its_first_instruction");
    let mut rig = Rig::new("exec");
    let (bg, _) = rig.spawn_ticker();
    let cfg = rig.config(&[bg], "[pause]\nmax_ms = 500\nmin_gap_ms = 0\n");
    rig.start_agent(&cfg);
    // The launcher helper (`crates/exec`) sends the same request; it sits beside this binary
    // when the workspace is built (`cargo test --workspace`).
    let helper = Path::new(BIN).with_file_name("forefront-exec");
    let mut launchers = vec![vec![BIN.to_owned(), "agent".into(), "exec".into()]];
    if helper.exists() {
        // (`--wait`: the helper's default does not wait for the answer, so the order checked
        // below holds only with it; the default is checked after the loop)
        launchers.push(vec![helper.to_string_lossy().into_owned(), "--wait".into()]);
    } else {
        skip_note(&format!("SKIP (part): {} not built (cargo build --release -p forefront-exec)", helper.display()));
    }
    let fg = format!(":/{}/fg", rig.group);
    for launcher in launchers {
        // The exec'd shell reads its own cgroup first thing. Without a burst it is already in
        // the FG group.
        let script = "grep -E ':cpu(,|:)' /proc/self/cgroup; cat /sys/fs/cgroup/freezer/$0/bg/freezer.state; echo $$";
        let run = |burst: bool| {
            let out = Command::new(&launcher[0])
                .args(&launcher[1..])
                .args(if burst { &["--burst"][..] } else { &[][..] })
                .arg("--socket")
                .arg(rig.socket())
                .args(["--", "sh", "-c", script])
                .arg(&rig.group)
                .output()
                .unwrap();
            assert!(out.status.success(), "{launcher:?}: {}", String::from_utf8_lossy(&out.stderr));
            assert!(out.stderr.is_empty(), "{launcher:?}: {}", String::from_utf8_lossy(&out.stderr));
            String::from_utf8_lossy(&out.stdout).into_owned()
        };
        let text = run(false);
        assert!(text.contains(&fg), "{launcher:?}: the command runs in the FG group: {text}");
        assert!(text.contains("THAWED"), "{launcher:?}: no burst, no pause: {text}");
        // With a burst the background is paused before the command's first instruction; the
        // launcher is not moved before the reply (the moves would delay the launch), but it is
        // not in the background groups either; the scan places it when the pause ends.
        let text = run(true);
        assert!(text.contains("FREEZING") || text.contains("FROZEN"), "{launcher:?}: the background is being paused: {text}");
        assert!(!text.contains(&format!(":/{}/bg", rig.group)), "{launcher:?}: never in the paused group: {text}");
        let pid = text.lines().last().unwrap().trim().to_owned();
        let st = rig.status();
        assert!(st["foreground"].to_string().contains(&pid), "{launcher:?}: pid {pid} named foreground: {st}");
        assert!(rig.cli(&["fg", "--burst-end"]).status.success(), "the pause ends for the next launcher");
    }
    if helper.exists() {
        // Without --wait: the command runs at once and the agent still gets the request (the
        // pause begins, the shell's pid is the foreground), read by the detached process.
        let out = Command::new(&helper)
            .arg("--burst")
            .arg("--socket")
            .arg(rig.socket())
            .args(["--", "sh", "-c", "echo $$; sleep 0.5"])
            .output()
            .unwrap();
        assert!(out.status.success() && out.stderr.is_empty(), "{out:?}");
        let pid = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        let st = rig.status();
        assert!(st["foreground"].to_string().contains(&pid), "pid {pid} named foreground without --wait: {st}");
        assert!(rig.cli(&["fg", "--burst-end"]).status.success());
    }
}

#[test]
fn scope_at_run_time_moves_a_process_to_the_background_and_back() {
    real_kernel_or_skip!("scope_at_run_time_moves_a_process_to_the_background_and_back");
    let mut rig = Rig::new("scope");
    let (p, _) = rig.spawn_ticker();
    let before = (cgroup_line(p, "cpu"), cgroup_line(p, "blkio"), ioprio_class(p));
    // Nothing in the config's scope: the agent manages no process until told.
    let cfg = rig.config(&[], "");
    rig.start_agent(&cfg);
    assert_eq!(cgroup_line(p, "cpu"), before.0, "not managed before `scope`");
    let out = rig.cli(&["scope", &p.to_string()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("joined"));
    let bgdir = format!("/{}/bg", rig.group);
    assert_eq!(cgroup_line(p, "cpu"), bgdir);
    assert_eq!(cgroup_line(p, "blkio"), bgdir);
    assert_eq!(ioprio_class(p), 3, "idle I/O class");
    assert_eq!(rig.status()["runtime_scope"]["trees"][0], p);
    // Twice is refused with the reason; the agent lives on.
    let again = rig.cli(&["scope", &p.to_string()]);
    assert!(!again.status.success() && String::from_utf8_lossy(&again.stderr).contains("already"));
    let out = rig.cli(&["scope", &p.to_string(), "--remove"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!((cgroup_line(p, "cpu"), cgroup_line(p, "blkio"), ioprio_class(p)), before, "restored on removal");
    let status = rig.signal_agent(nix::sys::signal::Signal::SIGTERM);
    assert!(status.success(), "{status:?}");
}

#[test]
fn a_pause_ends_once_the_foreground_goes_idle_on_io() {
    real_kernel_or_skip!("a_pause_ends_once_the_foreground_goes_idle_on_io");
    let mut rig = Rig::new("idle");
    let (bg, _) = rig.spawn_ticker();
    let cfg = rig.config(&[bg], "[pause]\nmax_ms = 20000\nmin_gap_ms = 0\nidle_end_ms = 200\n");
    rig.start_agent(&cfg);
    let paused = |rig: &Rig| !rig.status()["paused"].is_null();
    let wait_unpaused = |rig: &Rig, limit: Duration| {
        let t0 = Instant::now();
        while paused(rig) {
            if t0.elapsed() > limit {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Some(t0.elapsed())
    };
    // A foreground that reads with O_DIRECT (block I/O every few ms) keeps the pause on...
    let data = rig.dir.path().join("data");
    std::fs::write(&data, vec![7u8; 16 << 20]).unwrap();
    let reader = Command::new("dd")
        .arg(format!("if={}", data.display()))
        .args(["of=/dev/null", "bs=4k", "iflag=direct", "status=none"])
        .spawn()
        .unwrap();
    let rpid = reader.id() as i32;
    rig.children.push(reader);
    let out = rig.cli(&["fg", &rpid.to_string(), "--burst"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    std::thread::sleep(Duration::from_millis(500));
    let still_reading = std::fs::metadata(format!("/proc/{rpid}/io")).is_ok()
        && std::fs::read_to_string(format!("/proc/{rpid}/stat")).is_ok_and(|s| !s.contains(") Z "));
    if still_reading {
        assert!(paused(&rig), "paused while the foreground still reads");
    } else {
        skip_note("the direct reader finished in under 500 ms: its half of the test proves nothing here");
    }
    assert!(wait_unpaused(&rig, Duration::from_secs(15)).is_some(), "the pause never ended");
    // ...and a foreground that does no I/O ends it after idle_end_ms, long before max_ms.
    let idle = Command::new("sleep").arg("30").spawn().unwrap();
    let ipid = idle.id() as i32;
    rig.children.push(idle);
    let t0 = Instant::now();
    let out = rig.cli(&["fg", &ipid.to_string(), "--burst"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("paused"));
    let ended = wait_unpaused(&rig, Duration::from_secs(5)).expect("pause still on after 5 s");
    let total = t0.elapsed();
    assert!(
        total >= Duration::from_millis(190) && total < Duration::from_millis(2000),
        "ended after {ended:?} ({total:?} from the request)"
    );
    assert_eq!(read(rig.gdir("freezer", "bg").join("freezer.state")), "THAWED");
    let status = rig.signal_agent(nix::sys::signal::Signal::SIGTERM);
    assert!(status.success(), "{status:?}");
}

#[test]
fn a_rule_makes_a_program_foreground_the_moment_it_starts() {
    real_kernel_or_skip!("a_rule_makes_a_program_foreground_the_moment_it_starts");
    let mut rig = Rig::new("rule");
    let (bg, _) = rig.spawn_ticker();
    // A program with a name of our own (comm = the executable's file name).
    let probe = rig.dir.path().join("ffruleprobe");
    std::fs::copy("/bin/sleep", &probe).unwrap();
    // One copy runs before the agent starts: a rule fires on a start, not on what runs already.
    let early = Command::new(&probe).arg("30").spawn().unwrap();
    let early_pid = early.id() as i32;
    rig.children.push(early);
    let cfg = rig.config(&[bg], "[pause]\nmax_ms = 5000\n[rules]\nfg_commands = [\"ffruleprobe\"]\n");
    rig.start_agent(&cfg);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(rig.status()["foreground"], "none", "the copy that ran first did not fire");
    let t0 = Instant::now();
    let late = Command::new(&probe).arg("30").spawn().unwrap();
    let pid = late.id() as i32;
    rig.children.push(late);
    let fgdir = format!("/{}/fg", rig.group);
    while cgroup_line(pid, "cpu") != fgdir {
        assert!(
            t0.elapsed() < Duration::from_secs(3),
            "the rule never fired; log:\n{}",
            std::fs::read_to_string(rig.log()).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    eprintln!("rule fired {:.1} ms after spawn", t0.elapsed().as_secs_f64() * 1e3);
    let st = rig.status();
    assert_eq!(st["foreground"]["pids"][0], pid, "{st}");
    assert!(!st["paused"].is_null(), "rules.burst pauses the background");
    assert_eq!(cgroup_line(bg, "cpu"), format!("/{}/bg", rig.group));
    assert_ne!(cgroup_line(early_pid, "cpu"), fgdir, "only the new start is foreground");
    let log = std::fs::read_to_string(rig.log()).unwrap_or_default();
    assert!(log.contains("rule: ffruleprobe (pid"), "{log}");
    let status = rig.signal_agent(nix::sys::signal::Signal::SIGTERM);
    assert!(status.success(), "{status:?}");
}

/// Puts `/proc/sys/vm`'s write-back settings back as they were, whatever the test did.
struct VmGuard(Vec<(PathBuf, String)>);

impl VmGuard {
    fn take() -> VmGuard {
        VmGuard(vm_settings())
    }
}

/// The write-back settings now. (Not a [`VmGuard`]: a guard taken only to compare would write
/// what it read back when dropped, racing with whoever is restoring them.)
fn vm_settings() -> Vec<(PathBuf, String)> {
    let names = [
        "dirty_bytes",
        "dirty_ratio",
        "dirty_background_bytes",
        "dirty_background_ratio",
        "dirty_writeback_centisecs",
        "dirty_expire_centisecs",
    ];
    names.iter().map(|n| (Path::new("/proc/sys/vm").join(n), read(Path::new("/proc/sys/vm").join(n)))).collect()
}

impl Drop for VmGuard {
    fn drop(&mut self) {
        // Of the background pair, the one not 0 restores both.
        for (p, v) in &self.0 {
            if v != "0" || p.ends_with("dirty_writeback_centisecs") {
                let _ = std::fs::write(p, v);
            }
        }
    }
}

impl Rig {
    /// An agent whose pauses hold write-back (at most 20 s each), a ticker in its background and
    /// a `sleep` to name foreground; returns the sleep's pid.
    fn start_holding_agent(&mut self) -> String {
        let (bg, _) = self.spawn_ticker();
        let cfg = self.config(&[bg], "[pause]\nmax_ms = 20000\nhold_writeback = true\n");
        self.start_agent(&cfg);
        let app = Command::new("sleep").arg("30").spawn().unwrap();
        let pid = app.id().to_string();
        self.children.push(app);
        pid
    }
}

/// Taken by the tests whose agents hold write-back, before their [`VmGuard`] (so released after
/// it restores): the settings are the machine's, and a guard taken during another test's pause
/// would read held values as the originals and leave them behind.
static WRITEBACK_TESTS: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn a_pause_holds_write_back_and_the_watchdog_restores_it_when_the_agent_is_killed() {
    real_kernel_or_skip!("a_pause_holds_write_back_and_the_watchdog_restores_it_when_the_agent_is_killed");
    let _one_at_a_time = WRITEBACK_TESTS.lock().unwrap_or_else(|e| e.into_inner());
    let before = VmGuard::take();
    let writeback = || read(PathBuf::from("/proc/sys/vm/dirty_writeback_centisecs"));
    let expire = || read(PathBuf::from("/proc/sys/vm/dirty_expire_centisecs"));
    if writeback() == "0" {
        skip_note("SKIP: periodic write-back is off on this system: nothing to hold");
        return;
    }
    let mut rig = Rig::new("wb");
    let app_pid = rig.start_holding_agent();
    let out = rig.cli(&["fg", &app_pid, "--burst"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(expire(), "8640000", "nothing expires during the pause");
    assert_eq!(vm_settings()[4], before.0[4], "the periodic interval is not written");
    let held = rig.status()["paused"]["writeback_held"].as_array().unwrap().len();
    assert!(held >= 1, "{held} settings held");
    let bytes = |n: &str| read(Path::new("/proc/sys/vm").join(n)).parse::<u64>().unwrap();
    if held == 3 {
        assert_eq!(bytes("dirty_background_bytes"), bytes("dirty_bytes") - 4096, "background write-back held to the limit");
    }
    // The agent ends the pause: every setting is back.
    assert!(rig.cli(&["fg", "--burst-end"]).status.success());
    assert_eq!(vm_settings(), before.0, "restored at the pause's end");
    // A pause whose agent is SIGKILLed: its watchdog restores them within moments.
    std::thread::sleep(Duration::from_millis(1100)); // min_gap_ms
    let out = rig.cli(&["fg", &app_pid, "--burst"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("paused"), "{}", String::from_utf8_lossy(&out.stdout));
    assert_eq!(expire(), "8640000");
    rig.signal_agent(nix::sys::signal::Signal::SIGKILL);
    let t0 = Instant::now();
    while vm_settings() != before.0 {
        assert!(
            t0.elapsed() < Duration::from_secs(2),
            "not restored 2 s after the agent died: {:?}; agent log:\n{}",
            vm_settings(),
            std::fs::read_to_string(rig.log()).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Pages of `f` in the page cache that are dirty, by `cachestat(2)` (Linux 6.5); `None` where
/// the kernel lacks it.
fn dirty_pages(f: &std::fs::File) -> Option<u64> {
    use std::os::fd::AsRawFd;
    #[repr(C)]
    struct Range {
        off: u64,
        len: u64,
    }
    #[repr(C)]
    #[derive(Default)]
    struct Stat {
        nr_cache: u64,
        nr_dirty: u64,
        nr_writeback: u64,
        nr_evicted: u64,
        nr_recently_evicted: u64,
    }
    const SYS_CACHESTAT: nix::libc::c_long = 451; // the same on every architecture
    let range = Range { off: 0, len: 0 }; // len 0: to the end of the file
    let mut st = Stat::default();
    // SAFETY: both pointers are to live structs of the kernel's layout; the fd is open.
    let r = unsafe { nix::libc::syscall(SYS_CACHESTAT, f.as_raw_fd(), &range as *const Range, &mut st as *mut Stat, 0) };
    (r == 0).then_some(st.nr_dirty)
}

/// The end of a pause puts the write-back thresholds back and nothing more: dirty data that has
/// not expired stays dirty, as it would without the agent. (Holding periodic write-back with
/// `dirty_writeback_centisecs = 0`, as the agent did before, fails this: writing the original
/// back makes the kernel write all dirty data at once.)
#[test]
fn the_end_of_a_pause_does_not_write_back_dirty_data_that_has_not_expired() {
    real_kernel_or_skip!("the_end_of_a_pause_does_not_write_back_dirty_data_that_has_not_expired");
    let _one_at_a_time = WRITEBACK_TESTS.lock().unwrap_or_else(|e| e.into_inner());
    let before = VmGuard::take();
    if read(PathBuf::from("/proc/sys/vm/dirty_writeback_centisecs")) == "0" {
        skip_note("SKIP: periodic write-back is off on this system: nothing to hold");
        return;
    }
    let mut rig = Rig::new("wbend");
    // 32 MiB written and not synced, in a file on the disk the rig's directory is on (a file
    // system with write-back: on tmpfs nothing is ever dirty, and the test skips).
    let path = rig.dir.path().join("dirty");
    let mut f = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&path).unwrap();
    let chunk = vec![0x5au8; 1 << 20];
    for _ in 0..32 {
        f.write_all(&chunk).unwrap();
    }
    let Some(dirty) = dirty_pages(&f) else {
        skip_note("SKIP: no cachestat(2) in this kernel (6.5 or later): the file's dirty pages cannot be counted");
        return;
    };
    if dirty < 32 * 256 * 9 / 10 {
        skip_note(&format!(
            "SKIP: only {dirty} of the file's 8192 pages are dirty just after writing it (tmpfs, or write-back already under way): nothing to observe"
        ));
        return;
    }
    let app_pid = rig.start_holding_agent();
    let out = rig.cli(&["fg", &app_pid, "--burst"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("paused"), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(rig.cli(&["fg", "--burst-end"]).status.success());
    assert_eq!(vm_settings(), before.0, "restored at the pause's end");
    // A full write-back pass writes 32 MiB in well under a second on any disk this runs on.
    std::thread::sleep(Duration::from_millis(1500));
    let after = dirty_pages(&f).unwrap();
    assert!(
        after >= dirty * 9 / 10,
        "{after} of {dirty} dirty pages left 1.5 s after the pause's end: its end wrote back data that had not expired"
    );
}

#[test]
fn a_burst_moves_the_named_processs_background_child_before_the_reply() {
    real_kernel_or_skip!("a_burst_moves_the_named_processs_background_child_before_the_reply");
    // A window's owner (here a shell, as an xterm) and its child doing the work: both in the
    // background when the burst names the owner. The child must not be left in the groups the
    // burst freezes (issue 28's focus-driven switch found it frozen there).
    struct KillOnDrop(i32);
    impl Drop for KillOnDrop {
        fn drop(&mut self) {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.0), nix::sys::signal::Signal::SIGKILL);
        }
    }
    let mut rig = Rig::new("kids");
    let (other, _) = rig.spawn_ticker();
    let owner = Command::new("sh").args(["-c", "sleep 60 & wait"]).spawn().unwrap();
    let opid = owner.id() as i32;
    rig.children.push(owner);
    let t0 = Instant::now();
    let kid = loop {
        let kids = std::fs::read_to_string(format!("/proc/{opid}/task/{opid}/children")).unwrap_or_default();
        if let Some(k) = kids.split_whitespace().next() {
            break k.parse::<i32>().unwrap();
        }
        assert!(t0.elapsed() < Duration::from_secs(10), "the shell's child did not start");
        std::thread::sleep(Duration::from_millis(10));
    };
    let _kid_guard = KillOnDrop(kid);
    let cfg = rig.config(&[other, opid], "[pause]\nmax_ms = 20000\nmin_gap_ms = 0\n");
    rig.start_agent(&cfg);
    let (bgdir, fgdir) = (format!("/{}/bg", rig.group), format!("/{}/fg", rig.group));
    assert_eq!(cgroup_line(kid, "freezer"), bgdir, "the child starts in the background");
    let out = rig.cli(&["fg", &opid.to_string(), "--burst"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("background paused for"), "{}", String::from_utf8_lossy(&out.stdout));
    // Right after the reply, with the pause on until burst-end: the owner and its child are out
    // of the paused group, the other background app is in it.
    assert_eq!(cgroup_line(opid, "freezer"), fgdir);
    assert_eq!(cgroup_line(kid, "freezer"), fgdir, "the named process's child was left in the paused group");
    assert_eq!(cgroup_line(kid, "blkio"), fgdir);
    assert_eq!(cgroup_line(other, "freezer"), bgdir);
    assert!(rig.cli(&["fg", "--burst-end"]).status.success());
    let status = rig.signal_agent(nix::sys::signal::Signal::SIGTERM);
    assert!(status.success(), "{status:?}");
}

#[test]
fn favor_dynmods_turns_the_kernel_switch_on_and_leaves_no_mount_behind() {
    real_kernel_or_skip!("favor_dynmods_turns_the_kernel_switch_on_and_leaves_no_mount_behind");
    let mut rig = Rig::new("dyn");
    let (bg, _) = rig.spawn_ticker();
    // `[agent] favor_dynmods` is on by default: the rig's config does not name it.
    let cfg = rig.config(&[bg], "");
    rig.start_agent(&cfg);
    let log = std::fs::read_to_string(rig.log()).unwrap();
    let line =
        log.lines().find(|l| l.contains("favor_dynmods:")).unwrap_or_else(|| panic!("no favor_dynmods line in the log:\n{log}"));
    if line.contains("refused") {
        skip_note(&format!(
            "SKIP: favor_dynmods_turns_the_kernel_switch_on_and_leaves_no_mount_behind: this kernel has no favordynmods ({line})"
        ));
        return;
    }
    assert!(line.contains("and unmounted") || line.contains("already mounted with favordynmods"), "{line}");
    // Nothing of it stays: no mount of its named hierarchy, no directory beside the journal.
    let mi = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(!mi.contains("name=forefront_dyn"), "a forefront_dyn hierarchy is still mounted:\n{mi}");
    let left: Vec<_> = std::fs::read_dir(rig.dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("dynmods."))
        .collect();
    assert!(left.is_empty(), "left beside the journal: {left:?}");
    assert!(rig.signal_agent(nix::sys::signal::Signal::SIGTERM).success());
}

/// Of `pid`'s executable mappings of `exe` (its smaps): their size and how much of it is
/// resident (kB), and whether every one is locked (`lo` in `VmFlags`, the kernel's `VM_LOCKED`).
/// (smaps's `Locked:` is not used: it is a proportional share, halved by every other process
/// that maps the same pages.)
fn exec_mapping(pid: i32, exe: &Path) -> (u64, u64, bool) {
    let smaps = std::fs::read_to_string(format!("/proc/{pid}/smaps")).unwrap();
    let exe = std::fs::canonicalize(exe).unwrap();
    let (mut size, mut rss, mut locked, mut any) = (0, 0, true, false);
    let mut in_exec = false;
    for line in smaps.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        // A mapping's header: `start-end perms offset dev inode [path]`.
        if f.len() >= 5 && f[0].contains('-') && !f[0].ends_with(':') {
            in_exec = f[1].contains('x') && f.get(5).is_some_and(|p| Path::new(p) == exe);
            any |= in_exec;
            continue;
        }
        if !in_exec {
            continue;
        }
        match f.first().copied() {
            Some("Size:") => size += f[1].parse::<u64>().unwrap(),
            Some("Rss:") => rss += f[1].parse::<u64>().unwrap(),
            Some("VmFlags:") => locked &= f[1..].contains(&"lo"),
            _ => {}
        }
    }
    assert!(any, "pid {pid} maps no executable part of {}", exe.display());
    (size, rss, locked)
}

#[test]
fn the_agent_and_its_watchdog_keep_their_code_in_memory() {
    real_kernel_or_skip!("the_agent_and_its_watchdog_keep_their_code_in_memory");
    // `[agent] lock_memory` (on by default): every page of the binary's code is locked in
    // memory from the start, so the first pause never reads the code from the disk. With it
    // off, the same processes lock none of it (the check can fail).
    for lock in [true, false] {
        let mut rig = Rig::new(if lock { "lock" } else { "nolock" });
        let (bg, _) = rig.spawn_ticker();
        let cfg = rig.config(&[bg], "");
        if !lock {
            let text =
                std::fs::read_to_string(&cfg).unwrap().replacen("rescan_ms = 100\n", "rescan_ms = 100\nlock_memory = false\n", 1);
            std::fs::write(&cfg, text).unwrap();
        }
        rig.start_agent(&cfg);
        let agent = rig.agent.as_ref().unwrap().id() as i32;
        let watchdog = rig.status()["watchdog_pid"].as_i64().expect("a watchdog") as i32;
        let log = std::fs::read_to_string(rig.log()).unwrap();
        if lock && log.contains("lock_memory: not locked") {
            skip_note(&format!("SKIP: the_agent_and_its_watchdog_keep_their_code_in_memory: mlockall refused here:\n{log}"));
            return;
        }
        for (who, pid) in [("agent", agent), ("watchdog", watchdog)] {
            // The watchdog locks its pages as it starts, which the agent does not wait for:
            // give it up to 5 s to be done.
            let t0 = Instant::now();
            let (size, rss, locked) = loop {
                let m = exec_mapping(pid, Path::new(BIN));
                if !lock || (m.2 && m.1 == m.0) || t0.elapsed() > Duration::from_secs(5) {
                    break m;
                }
                std::thread::sleep(Duration::from_millis(50));
            };
            if lock {
                assert!(locked, "{who}: its code is not locked; log:\n{log}");
                assert_eq!(rss, size, "{who}: {rss} of {size} kB of its code in memory; log:\n{log}");
            } else {
                assert!(!locked, "{who}: its code is locked with lock_memory = false");
            }
        }
        if lock {
            assert!(log.contains("lock_memory: ") && log.contains("MiB of the agent's code and data locked"), "{log}");
        }
        assert!(rig.signal_agent(nix::sys::signal::Signal::SIGTERM).success());
    }
}
