//! `forefront bench` stopped by SIGTERM in the middle of a run undoes what it set up: the loop
//! image is unmounted, its loop device detached, the image it made removed, and no background
//! worker survives. Real kernel: needs root, util-linux (`losetup`, `mount`) and e2fsprogs
//! (`mkfs.ext4`); skips with a message otherwise. Touches only what it starts.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn have(tool: &str) -> bool {
    Command::new("sh").args(["-c", &format!("command -v {tool}")]).stdout(Stdio::null()).status().is_ok_and(|s| s.success())
}

/// Loop devices backed by `image` (`losetup -j`).
fn loops_of(image: &Path) -> Vec<String> {
    let out = Command::new("losetup").arg("-j").arg(image).output().expect("losetup");
    String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| l.split(':').next()).map(str::to_owned).collect()
}

/// Mount points of `/proc/mounts` whose source is `dev`.
fn mounts_of(dev: &str) -> Vec<String> {
    std::fs::read_to_string("/proc/mounts")
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            (f.next() == Some(dev)).then(|| f.next().unwrap_or_default().to_owned())
        })
        .collect()
}

/// Processes whose command line mentions `needle` (e.g. a path only this test uses).
fn procs_mentioning(needle: &str) -> Vec<i32> {
    let mut v = vec![];
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else { continue };
        let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmd).replace('\0', " ").contains(needle) && pid != std::process::id() as i32 {
            v.push(pid);
        }
    }
    v
}

/// Whatever happens, the test leaves nothing behind: the bench process, its workers, the mount,
/// the loop device and the files.
struct Cleanup {
    bench: Option<Child>,
    dir: PathBuf,
    image: PathBuf,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        if let Some(c) = &mut self.bench {
            let _ = c.kill();
            let _ = c.wait();
        }
        for dev in loops_of(&self.image) {
            for m in mounts_of(&dev) {
                for p in procs_mentioning(&m) {
                    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(p), nix::sys::signal::Signal::SIGKILL);
                }
                let _ = Command::new("umount").arg(&m).status();
            }
            let _ = Command::new("losetup").args(["-d", &dev]).status();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[test]
fn sigterm_mid_run_unmounts_detaches_and_stops_every_worker() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("SKIP: the bench cleanup test needs root (loop devices, mount, drop_caches)");
        return;
    }
    for tool in ["losetup", "mount", "umount", "mkfs.ext4"] {
        if !have(tool) {
            eprintln!("SKIP: the bench cleanup test needs `{tool}`");
            return;
        }
    }
    let dir = PathBuf::from(format!("/var/tmp/forefront-sigtest-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let image = dir.join("bench.img");
    let mut guard = Cleanup { bench: None, dir: dir.clone(), image: image.clone() };
    let log = std::fs::File::create(dir.join("bench.log")).unwrap();
    let bench = Command::new(env!("CARGO_BIN_EXE_forefront"))
        .args(["bench", "run", "--loop-image"])
        .arg(&image)
        .args(["--loop-mib", "160", "--bg-file-mib", "16", "--app-mib", "4", "--runs", "50", "--mode", "baseline"])
        .args(["--bg", "update", "--ramp-ms", "4000", "--format", "json"])
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("start forefront bench");
    let pid = nix::unistd::Pid::from_raw(bench.id() as i32);
    guard.bench = Some(bench);

    // Wait until the run is in full swing: image mounted on a loop device, workers writing.
    let t0 = Instant::now();
    let (dev, mnt) = loop {
        let ready = loops_of(&image).into_iter().find_map(|d| {
            let m = mounts_of(&d).into_iter().next()?;
            (!procs_mentioning(&format!("{m}/")).is_empty()).then_some((d, m))
        });
        if let Some(r) = ready {
            break r;
        }
        let log = std::fs::read_to_string(dir.join("bench.log")).unwrap_or_default();
        if let Some(st) = guard.bench.as_mut().unwrap().try_wait().unwrap() {
            panic!("bench exited early ({st}): {log}");
        }
        assert!(t0.elapsed() < Duration::from_secs(120), "no worker after 120 s: {log}");
        std::thread::sleep(Duration::from_millis(50));
    };

    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let t1 = Instant::now();
    let status = loop {
        if let Some(st) = guard.bench.as_mut().unwrap().try_wait().unwrap() {
            break st;
        }
        assert!(t1.elapsed() < Duration::from_secs(60), "bench still running 60 s after SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    };
    guard.bench = None;
    let log = std::fs::read_to_string(dir.join("bench.log")).unwrap_or_default();
    assert_eq!(status.code(), Some(130), "exit status after SIGTERM; log: {log}");
    assert!(log.contains("interrupted"), "{log}");
    // Workers are killed with their parent's cleanup; give the kernel a moment to reap them.
    let t2 = Instant::now();
    while !procs_mentioning(&format!("{mnt}/")).is_empty() && t2.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(procs_mentioning(&format!("{mnt}/")).is_empty(), "a worker survived");
    assert!(mounts_of(&dev).is_empty(), "{mnt} still mounted");
    assert!(loops_of(&image).is_empty(), "{dev} still attached to the image");
    assert!(!image.exists(), "the image the bench made was not removed");
    assert!(!Path::new(&mnt).exists(), "the mount point was not removed");
}
