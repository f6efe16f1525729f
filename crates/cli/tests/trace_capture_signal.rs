//! `forefront trace capture` interrupted by SIGINT restores tracefs and exits 130. Root only
//! (loop device + tracefs); prints `SKIP: ...` otherwise. Cleans up its loop device on drop.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

struct LoopDevice(PathBuf);

impl Drop for LoopDevice {
    fn drop(&mut self) {
        let _ = Command::new("losetup").arg("-d").arg(&self.0).status();
    }
}

fn is_root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.starts_with(b"0\n"))
}

#[test]
fn sigint_restores_tracefs() {
    if !is_root() {
        eprintln!("SKIP: needs root (loop devices and tracefs)");
        return;
    }
    let tracer_path = "/sys/kernel/tracing/current_tracer";
    let Ok(tracer_before) = std::fs::read_to_string(tracer_path) else {
        eprintln!("SKIP: tracefs not mounted at /sys/kernel/tracing");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("disk.img");
    std::fs::File::create(&img).unwrap().set_len(8 << 20).unwrap();
    let out = Command::new("losetup").args(["-f", "--show"]).arg(&img).output();
    let Some(out) = out.ok().filter(|o| o.status.success()) else {
        eprintln!("SKIP: cannot create a loop device");
        return;
    };
    let dev = PathBuf::from(String::from_utf8(out.stdout).unwrap().trim());
    let _guard = LoopDevice(dev.clone());
    let name = dev.file_name().unwrap().to_str().unwrap().to_string();
    let output = dir.path().join("cap.txt");
    let mut child = Command::new(env!("CARGO_BIN_EXE_forefront"))
        .args(["trace", "capture", "--dev", &name, "-o", output.to_str().unwrap(), "--", "sleep", "30"])
        .spawn()
        .unwrap();
    // Wait until tracing is on, then interrupt our own child by its pid.
    let enable = format!("/sys/block/{name}/trace/enable");
    let start = Instant::now();
    while std::fs::read_to_string(&enable).unwrap_or_default().trim() != "1" {
        assert!(start.elapsed() < Duration::from_secs(10), "capture never enabled tracing");
        std::thread::sleep(Duration::from_millis(20));
    }
    let st = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(st.success());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert!(start.elapsed() < Duration::from_secs(10), "did not stop promptly");
    assert_eq!(std::fs::read_to_string(&enable).unwrap().trim(), "0");
    assert_eq!(std::fs::read_to_string(tracer_path).unwrap(), tracer_before);
    assert!(output.exists());
}
