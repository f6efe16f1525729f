//! Where BFQ is absent: the agent's idle I/O class on a real mq-deadline queue. A loop device
//! (direct I/O onto a file) with mq-deadline, four O_DIRECT readers in the agent's scope
//! (background) and four outside it (foreground, best-effort class): once the agent has put the
//! background readers in the idle class, mq-deadline serves the foreground's requests first, so
//! the foreground reads several times more; `agent check` names the device's scheduler and the
//! mechanism it uses; stopping the agent restores the readers' classes.
//!
//! Needs root, cgroup v1 cpu/blkio/freezer, `losetup` and a loop device offering mq-deadline;
//! elsewhere it prints `SKIP: ...` and passes. `Drop` kills only the readers and agent it
//! started, detaches its own loop device and removes its own groups.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_forefront");
mod common;

fn skip_note(msg: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{msg}");
}

struct Rig {
    dir: tempfile::TempDir,
    group: String,
    loopdev: Option<String>,
    agent: Option<Child>,
    readers: Vec<Child>,
}

impl Drop for Rig {
    fn drop(&mut self) {
        common::teardown(&self.group, self.agent.take(), &mut self.readers);
        if let Some(l) = &self.loopdev {
            let _ = Command::new("losetup").args(["-d", l]).status();
        }
    }
}

fn read_bytes(pid: i32) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/io")).unwrap_or_default();
    text.lines().find_map(|l| l.strip_prefix("read_bytes: ")).and_then(|v| v.trim().parse().ok()).unwrap_or(0)
}

fn ionice(pid: i32) -> String {
    let o = Command::new("ionice").arg("-p").arg(pid.to_string()).output().unwrap();
    String::from_utf8_lossy(&o.stdout).trim().to_owned()
}

#[test]
fn mq_deadline_serves_the_foreground_first_once_the_agent_idles_the_background() {
    let name = "mq_deadline_serves_the_foreground_first_once_the_agent_idles_the_background";
    if let Some(why) = common::rig_unavailable() {
        return skip_note(&format!("SKIP: {name}: {why}"));
    }
    let dir = tempfile::Builder::new().prefix("ff-mqdl").tempdir().unwrap();
    let img = dir.path().join("disk.img");
    // 64 MiB of real blocks (not a sparse file): every read reaches the backing file.
    let ok = Command::new("dd")
        .arg(format!("of={}", img.display()))
        .args(["if=/dev/zero", "bs=1M", "count=64", "status=none"])
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "cannot write {}", img.display());
    let mut rig = Rig { dir, group: format!("ff-test-mqdl-{}", std::process::id()), loopdev: None, agent: None, readers: vec![] };
    let out = match Command::new("losetup").args(["--find", "--show", "--direct-io=on"]).arg(&img).output() {
        Ok(o) if o.status.success() => o,
        Ok(o) => return skip_note(&format!("SKIP: {name}: losetup: {}", String::from_utf8_lossy(&o.stderr).trim())),
        Err(e) => return skip_note(&format!("SKIP: {name}: losetup: {e}")),
    };
    let dev = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    rig.loopdev = Some(dev.clone());
    let short = dev.trim_start_matches("/dev/").to_owned();
    let sched = format!("/sys/block/{short}/queue/scheduler");
    if std::fs::write(&sched, "mq-deadline").is_err() {
        return skip_note(&format!("SKIP: {name}: {short} does not offer mq-deadline"));
    }
    assert!(std::fs::read_to_string(&sched).unwrap().contains("[mq-deadline]"));

    // Four readers of each kind; "bg" ones in the agent's scope.
    let reader = || {
        Command::new("dd")
            .arg(format!("if={dev}"))
            .args(["of=/dev/null", "bs=4k", "iflag=direct", "status=none"])
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    let mut bg = vec![];
    let mut fg = vec![];
    for _ in 0..4 {
        let c = reader();
        bg.push(c.id() as i32);
        rig.readers.push(c);
        let c = reader();
        fg.push(c.id() as i32);
        rig.readers.push(c);
    }
    let before: Vec<String> = bg.iter().map(|p| ionice(*p)).collect();
    let cfg = rig.dir.path().join("agent.toml");
    std::fs::write(
        &cfg,
        format!(
            "[agent]\nsocket = {:?}\nstate = {:?}\ngroup = {:?}\nrescan_ms = 100\n[scope]\ntrees = {bg:?}\n\
             [pause]\nenabled = false\n[focus]\nx11 = \"off\"\n[dbus]\nenabled = \"off\"\n",
            rig.dir.path().join("agent.sock"),
            rig.dir.path().join("state.json"),
            rig.group
        ),
    )
    .unwrap();

    // `agent check` names the loop device's scheduler and the mechanism it will use there.
    let o = Command::new(BIN).args(["agent", "check", "--format", "json", "--config"]).arg(&cfg).output().unwrap();
    let caps: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let cap = |n: &str| caps.as_array().unwrap().iter().find(|c| c["name"] == n).cloned().unwrap_or_default();
    assert!(cap("disks")["detail"].as_str().unwrap().contains(&format!("{short} mq-deadline")), "{caps:#}");
    let idle = cap("io: ioprio idle");
    assert!(idle["detail"].as_str().unwrap().contains(&format!("{short} (mq-deadline)")), "{idle:#}");
    assert!(idle["detail"].as_str().unwrap().starts_with("used"), "{idle:#}");

    let log = std::fs::File::create(rig.dir.path().join("agent.log")).unwrap();
    rig.agent = Some(Command::new(BIN).args(["agent", "run", "--config"]).arg(&cfg).stderr(log).spawn().unwrap());
    let t0 = Instant::now();
    while !bg.iter().all(|p| ionice(*p).starts_with("idle")) {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "the background readers were not made idle: {:?}",
            bg.iter().map(|p| ionice(*p)).collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(fg.iter().all(|p| !ionice(*p).starts_with("idle")), "the foreground keeps its class");

    // Two seconds of contention on the mq-deadline queue.
    let sum = |pids: &[i32]| pids.iter().map(|p| read_bytes(*p)).sum::<u64>();
    let (f0, b0) = (sum(&fg), sum(&bg));
    std::thread::sleep(Duration::from_secs(2));
    let (f1, b1) = (sum(&fg), sum(&bg));
    let (f, b) = (f1 - f0, b1 - b0);
    skip_note(&format!(
        "mq-deadline on {short}: foreground read {:.1} MiB, idle-class background {:.2} MiB in 2 s",
        f as f64 / 1048576.0,
        b as f64 / 1048576.0
    ));
    assert!(f > 1 << 20, "the foreground read {f} bytes: no load to compare");
    // Four readers against four: in one class they share the queue (~1:1, 3.6-4.0 MB/s each with
    // `none`). Idle-class requests are dispatched whenever the foreground's queue is empty for an
    // instant, which happens more while the foreground readers wait for a CPU: the ratio read
    // 10-25x on a quiet machine and 4.7x once beside the whole test suite. 3x is far from 1:1.
    assert!(f > 3 * b, "mq-deadline did not favour the foreground: {f} vs {b} bytes");

    let mut a = rig.agent.take().unwrap();
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(a.id() as i32), nix::sys::signal::Signal::SIGTERM).unwrap();
    assert!(a.wait().unwrap().success());
    let after: Vec<String> = bg.iter().map(|p| ionice(*p)).collect();
    assert_eq!(after, before, "the agent's stop restores the readers' I/O classes");
}
