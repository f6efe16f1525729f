//! Real-kernel check: capture the block I/O of a workload on a loop device the test creates,
//! import it, and compare the completed read/write requests with the kernel's own
//! `/sys/block/loopN/stat` deltas. Needs root and the ftrace `blk` tracer; prints `SKIP: ...`
//! otherwise. The loop device and its backing file are removed by guards even on failure.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use forefront_trace::capture::{capture, CaptureError, CaptureOptions};
use forefront_trace::stats::{FgSelector, StatsBuilder};
use forefront_trace::{InputFormat, ReadOptions, TraceReader};

/// Detaches the loop device we attached, on drop.
struct LoopDevice {
    dev: PathBuf,
}

impl Drop for LoopDevice {
    fn drop(&mut self) {
        let st = Command::new("losetup").arg("-d").arg(&self.dev).status();
        if !st.is_ok_and(|s| s.success()) {
            eprintln!("warning: could not detach {}", self.dev.display());
        }
    }
}

fn skip(reason: &str) {
    eprintln!("SKIP: {reason}");
}

fn stat(name: &str) -> (u64, u64) {
    let s = std::fs::read_to_string(format!("/sys/block/{name}/stat")).unwrap();
    let f: Vec<u64> = s.split_whitespace().map(|x| x.parse().unwrap()).collect();
    (f[0], f[4])
}

#[test]
fn capture_matches_kernel_stat_on_a_loop_device() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return skip("needs root (loop devices and tracefs)");
    }
    if Command::new("losetup").arg("--version").output().is_err() {
        return skip("losetup not installed");
    }
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("disk.img");
    std::fs::File::create(&img).unwrap().set_len(32 << 20).unwrap();
    let out = Command::new("losetup").args(["-f", "--show"]).arg(&img).output().unwrap();
    if !out.status.success() {
        return skip(&format!("losetup -f failed: {}", String::from_utf8_lossy(&out.stderr).trim()));
    }
    let dev = PathBuf::from(String::from_utf8(out.stdout).unwrap().trim());
    let _guard = LoopDevice { dev: dev.clone() };
    let name = dev.file_name().unwrap().to_str().unwrap().to_string();
    // Let udev finish probing the new device so its reads are not in our window.
    let _ = Command::new("udevadm").arg("settle").status();
    std::thread::sleep(Duration::from_millis(300));

    let d = dev.display();
    let script = format!(
        "dd if=/dev/zero of={d} bs=4k count=64 oflag=direct status=none && \
         dd if={d} of=/dev/null bs=64k count=8 iflag=direct status=none && \
         dd if=/dev/zero of={d} bs=1M count=2 status=none && sync && \
         dd if={d} of=/dev/null bs=4k count=16 skip=1000 iflag=direct status=none"
    );
    let mut opts = CaptureOptions::new(&name);
    opts.command = vec!["sh".into(), "-c".into(), script];
    opts.settle = Duration::from_millis(300);
    let captured = dir.path().join("capture.txt");
    let before = stat(&name);
    let tracer_path = "/sys/kernel/tracing/current_tracer";
    let tracer_before = std::fs::read_to_string(tracer_path).ok();
    let summary = {
        let mut f = std::io::BufWriter::new(std::fs::File::create(&captured).unwrap());
        match capture(&opts, &mut f) {
            Ok(s) => s,
            Err(CaptureError::NoBlkTracer) => return skip("kernel has no blk tracer"),
            Err(CaptureError::NoTracefs(e)) => return skip(&format!("no tracefs: {e}")),
            Err(e) => panic!("capture failed: {e}"),
        }
    };
    let after = stat(&name);
    assert!(summary.exit_status.is_some_and(|s| s.success()), "workload failed: {summary:?}");

    // Import the capture like any blkparse file.
    let mut reader = TraceReader::open(std::slice::from_ref(&captured), &ReadOptions::default()).unwrap();
    let mut b = StatsBuilder::new(FgSelector::default());
    for r in &mut reader {
        b.add(&r.unwrap());
    }
    assert_eq!(reader.format(), InputFormat::Blkparse);
    let s = b.finish(reader.format());
    let req = s.requests.as_ref().unwrap();
    let (reads, writes) = (after.0 - before.0, after.1 - before.1);
    eprintln!("captured R={} W={}; /sys/block/{name}/stat delta R={reads} W={writes}", req["R"], req["W"]);
    assert!(reads >= 24 && writes >= 65, "workload too small? R={reads} W={writes}");
    assert_eq!((req["R"], req["W"]), (reads, writes), "imported completions vs kernel stat");
    assert_eq!((summary.completed.reads, summary.completed.writes), (reads, writes));
    assert_eq!(s.bytes_read, (8 * 65536 + 16 * 4096) as u64);
    // tracefs is back to its previous state.
    // (Compared with what it was, not with "not blk": a tracer someone else left set is theirs.)
    assert_eq!(std::fs::read_to_string(tracer_path).ok(), tracer_before, "current_tracer was not restored");
    let enable = std::fs::read_to_string(format!("/sys/block/{name}/trace/enable")).unwrap();
    assert_eq!(enable.trim(), "0");
    assert!(Path::new(&captured).exists());
}
