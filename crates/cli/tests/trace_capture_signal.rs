//! `forefront trace capture` stopped by a signal or by `--duration`: tracefs is restored, the
//! exit status is 130 for a signal, and no process of the workload survives — not even one it
//! left in the background that ignores SIGTERM. Root only (loop device + tracefs) with the
//! kernel's `blk` tracer; prints `SKIP: ...` otherwise. Cleans up its loop device and any
//! process its own workload started (each carries a marker in its environment, checked before
//! it is killed) on drop, also when an assertion fails; it signals nothing else.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// tracefs is one per machine: the tests of this file take turns.
static TRACEFS: Mutex<()> = Mutex::new(());

struct LoopDevice(PathBuf);

impl Drop for LoopDevice {
    fn drop(&mut self) {
        let _ = Command::new("losetup").arg("-d").arg(&self.0).status();
    }
}

fn is_root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.starts_with(b"0\n"))
}

/// A loop device on an 8 MiB image in `dir`, or why the test cannot run here.
fn setup(dir: &Path) -> Result<(LoopDevice, String), String> {
    if !is_root() {
        return Err("needs root (loop devices and tracefs)".into());
    }
    let tracers = ["/sys/kernel/tracing/available_tracers", "/sys/kernel/debug/tracing/available_tracers"];
    if let Some(t) = tracers.iter().find_map(|p| std::fs::read_to_string(p).ok()) {
        if !t.split_whitespace().any(|x| x == "blk") {
            return Err("the kernel has no blk tracer (CONFIG_BLK_DEV_IO_TRACE)".into());
        }
    }
    let img = dir.join("disk.img");
    std::fs::File::create(&img).unwrap().set_len(8 << 20).unwrap();
    let out = Command::new("losetup").args(["-f", "--show"]).arg(&img).output();
    let Some(out) = out.ok().filter(|o| o.status.success()) else {
        return Err("cannot create a loop device".into());
    };
    let dev = PathBuf::from(String::from_utf8(out.stdout).unwrap().trim());
    let name = dev.file_name().unwrap().to_str().unwrap().to_string();
    // The kernel keeps a loop device's trace switch across detach and attach: a capture killed
    // outright on an earlier device of this number leaves it on, and the tests would then see
    // "tracing started" before their capture is ready. The device is ours now: switch it off.
    let _ = std::fs::write(format!("/sys/block/{name}/trace/enable"), "0");
    Ok((LoopDevice(dev), name))
}

fn wait_for_tracing(dev: &str, child: &mut Child) {
    let enable = format!("/sys/block/{dev}/trace/enable");
    let start = Instant::now();
    while std::fs::read_to_string(&enable).unwrap_or_default().trim() != "1" {
        if let Ok(Some(st)) = child.try_wait() {
            panic!("capture exited ({st}) before tracing started");
        }
        assert!(start.elapsed() < Duration::from_secs(10), "capture never enabled tracing");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn sigint_restores_tracefs() {
    let _turn = TRACEFS.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let (_loop, name) = match setup(dir.path()) {
        Ok(x) => x,
        Err(why) => return eprintln!("SKIP: {why}"),
    };
    let tracer_path = "/sys/kernel/tracing/current_tracer";
    let tracer_before = std::fs::read_to_string(tracer_path).ok();
    let output = dir.path().join("cap.txt");
    let mut child = Command::new(env!("CARGO_BIN_EXE_forefront"))
        .args(["trace", "capture", "--dev", &name, "-o", output.to_str().unwrap(), "--", "sleep", "30"])
        .spawn()
        .unwrap();
    let _kill = ChildGuard(&mut child as *mut Child);
    wait_for_tracing(&name, &mut child);
    let start = Instant::now();
    // Interrupt our own child, by its pid.
    let st = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(st.success());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert!(start.elapsed() < Duration::from_secs(10), "did not stop promptly");
    assert_eq!(std::fs::read_to_string(format!("/sys/block/{name}/trace/enable")).unwrap().trim(), "0");
    // tracefs was mounted by the capture if it was not before (then unmounted again).
    assert_eq!(std::fs::read_to_string(tracer_path).ok(), tracer_before);
    assert!(output.exists());
}

/// Kills the `forefront` child if the test fails before it exits (by pid: our own child).
struct ChildGuard(*mut Child);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        // SAFETY: the guard is declared after the child it points to and dropped before it.
        let child = unsafe { &mut *self.0 };
        if let Ok(None) = child.try_wait() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The processes the workload wrote into `pids` (its shell, then a background writer that
/// ignores SIGTERM, then a `sleep`). On drop, any of them still alive and still carrying the
/// test's marker in its environment (so not a recycled pid) is SIGKILLed: a failing test
/// leaves nothing behind.
struct Workload {
    pids: PathBuf,
    /// `FOREFRONT_TEST_WORKLOAD=<this value>`, inherited by everything the workload starts.
    marker: String,
}

impl Workload {
    fn read(&self) -> Vec<i32> {
        std::fs::read_to_string(&self.pids).unwrap_or_default().split_whitespace().filter_map(|p| p.parse().ok()).collect()
    }

    /// Pids of the workload still alive (zombies waiting for a reaper do nothing: not counted).
    fn alive(&self) -> Vec<i32> {
        let env = format!("FOREFRONT_TEST_WORKLOAD={}", self.marker);
        let ours =
            |p: i32| std::fs::read(format!("/proc/{p}/environ")).is_ok_and(|e| e.split(|&b| b == 0).any(|v| v == env.as_bytes()));
        self.read().into_iter().filter(|&p| state(p).is_some_and(|s| s != 'Z') && ours(p)).collect()
    }
}

impl Drop for Workload {
    fn drop(&mut self) {
        for p in self.alive() {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(p), nix::sys::signal::Signal::SIGKILL);
        }
    }
}

/// The state letter of /proc/PID/stat (`Z` for a zombie).
fn state(pid: i32) -> Option<char> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    s[s.rfind(')')? + 2..].chars().next()
}

/// Runs a capture whose workload leaves a SIGTERM-ignoring writer and a sleeper in the
/// background, stops it with `signal` (or by `--duration` when None), and checks that none of
/// the workload's processes survives and its output file stops growing.
fn ends_the_whole_workload(signal: Option<&str>) {
    let _turn = TRACEFS.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let (_loop, name) = match setup(dir.path()) {
        Ok(x) => x,
        Err(why) => return eprintln!("SKIP: {why}"),
    };
    let pids = dir.path().join("pids");
    let written = dir.path().join("written");
    let script = format!(
        "echo $$ > {p}; (trap '' TERM; while :; do echo x >> {w}; sleep 0.02; done) & echo $! >> {p}; sleep 300 & echo $! >> {p}; wait",
        p = pids.display(),
        w = written.display()
    );
    let workload = Workload { pids: pids.clone(), marker: dir.path().display().to_string() };
    let output = dir.path().join("cap.txt");
    let mut args = vec!["trace", "capture", "--dev", &name, "-o", output.to_str().unwrap(), "--settle-ms", "0"];
    if signal.is_none() {
        // Counted from the workload's spawn: long enough that a loaded machine starts all three
        // processes before it is over (1 s was not, once, in CI), short enough for a test.
        args.extend(["--duration", "4"]);
    }
    args.extend(["--", "sh", "-c", &script]);
    let mut child = Command::new(env!("CARGO_BIN_EXE_forefront"))
        .args(&args)
        .env("FOREFRONT_TEST_WORKLOAD", &workload.marker)
        // Not the harness's pipes: a survivor holding them would hang whoever reads them.
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(dir.path().join("stderr")).unwrap())
        .spawn()
        .unwrap();
    let _kill = ChildGuard(&mut child as *mut Child);
    wait_for_tracing(&name, &mut child);
    let start = Instant::now();
    while workload.read().len() < 3 || !written.exists() {
        assert!(start.elapsed() < Duration::from_secs(10), "the workload never started its background processes");
        std::thread::sleep(Duration::from_millis(20));
    }
    // A pid is written right after its fork: reading /proc/PID/environ while that child is in
    // execve can fail for a moment, so wait (bounded) for all three to read as ours and alive.
    let start = Instant::now();
    while workload.alive().len() < 3 && start.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(workload.alive().len(), 3, "{:?}", workload.read());
    if let Some(sig) = signal {
        let st = Command::new("kill").args([sig, &child.id().to_string()]).status().unwrap();
        assert!(st.success());
    }
    let status = child.wait().unwrap();
    let stderr = std::fs::read_to_string(dir.path().join("stderr")).unwrap_or_default();
    assert_eq!(status.code(), Some(if signal.is_some() { 130 } else { 0 }), "{signal:?}: {stderr}");
    assert!(start.elapsed() < Duration::from_secs(10), "{signal:?}: did not stop promptly");
    assert_eq!(workload.alive(), Vec::<i32>::new(), "{signal:?}: workload processes survived the capture");
    let size = std::fs::metadata(&written).unwrap().len();
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(std::fs::metadata(&written).unwrap().len(), size, "{signal:?}: something still writes");
    assert_eq!(std::fs::read_to_string(format!("/sys/block/{name}/trace/enable")).unwrap().trim(), "0");
}

#[test]
fn sigint_ends_the_whole_workload() {
    ends_the_whole_workload(Some("-INT"));
}

#[test]
fn sigterm_ends_the_whole_workload() {
    ends_the_whole_workload(Some("-TERM"));
}

#[test]
fn sighup_ends_the_whole_workload() {
    ends_the_whole_workload(Some("-HUP"));
}

#[test]
fn duration_ends_the_whole_workload() {
    ends_the_whole_workload(None);
}
