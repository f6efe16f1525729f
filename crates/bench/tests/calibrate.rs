//! `bench calibrate` on a real kernel, on the benchmark's loop-device fixture: one calibration
//! measures every figure and the simulator loads its file; two in a row agree within the
//! spread each reports (ignored by default: it needs a quiet machine).
//! Skips (with the reason on stderr) without root or without loop devices.

use forefront_bench::calibrate::{calibrate, disagreements, CalPlan};
use forefront_bench::loopdev::LoopFs;

fn unavailable() -> Option<String> {
    if !nix::unistd::geteuid().is_root() {
        return Some("not root".into());
    }
    if !std::path::Path::new("/dev/loop-control").exists() {
        return Some("no /dev/loop-control (loop devices)".into());
    }
    for tool in ["losetup", "mkfs.ext4"] {
        let found = std::env::var_os("PATH").is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(tool).exists()));
        if !found {
            return Some(format!("no {tool}"));
        }
    }
    None
}

fn fixture() -> (tempfile::TempDir, LoopFs, CalPlan) {
    let work = tempfile::Builder::new().prefix("forefront-calibrate-test").tempdir_in("/var/tmp").unwrap();
    let fs = LoopFs::create(&work.path().join("image"), 512).expect("loop fixture");
    let plan = CalPlan {
        dir: fs.dir().to_path_buf(),
        file_bytes: 128 << 20,
        reps: 5,
        ops: 200,
        depth: Some(4),
        name: None,
        scheduler: None,
    };
    (work, fs, plan)
}

/// One calibration: every figure measured with its spread, nothing left on the fixture, and the
/// device file loads as the simulator loads a device.
#[test]
fn calibrate_measures_every_figure_cleans_up_and_loads() {
    if let Some(why) = unavailable() {
        eprintln!("SKIPPED calibrate_measures_every_figure_cleans_up_and_loads: {why}");
        return;
    }
    let (work, fs, plan) = fixture();
    let a = calibrate(&plan, &mut |_| {}).expect("calibration");
    // Nothing of the scratch file is left on the fixture.
    let left: Vec<_> =
        std::fs::read_dir(fs.dir()).unwrap().flatten().map(|e| e.file_name()).filter(|n| n != "lost+found").collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    let pa = a.device.provenance.as_ref().unwrap();
    assert!(pa.fields.len() >= 20, "{:?}", pa.fields.keys());
    assert!(pa.target.starts_with("loop"), "{}", pa.target);
    assert_eq!(pa.reps, 5);
    for (name, m) in &pa.fields {
        assert!(m.min <= m.value && m.value <= m.max, "{name}: {m:?}");
        assert!(m.value.is_finite() && m.value >= 0.0, "{name}: {m:?}");
    }
    for name in [
        "read_seq_mb_s",
        "write_seq_mb_s",
        "read_rand_iops",
        "write_rand_iops",
        "copy_page_us",
        "cold_write_page_us",
        "fdatasync_32m_cpu_us",
        "read_max_depth_mb_s",
        "write_max_depth_mb_s",
        "read_max_seq_depth_mb_s",
        "write_max_seq_depth_mb_s",
        "read_load_mb_s",
        "write_load_mb_s",
        "read_4k_under_read_load_p50_us",
        "read_4k_under_write_load_p50_us",
        "max_sectors_kb",
    ] {
        let m = &pa.fields[name];
        assert!(m.value > 0.0 && m.source != "assumed", "{name}: {m:?}");
    }
    // A page's allocation: a cold page's write beyond a cached one's (0 only where the noise of
    // the two medians hides it), what `bench predict` gives the simulator.
    assert_eq!(pa.fields["alloc_page_us"].source, "derived");
    // A dirty page's write-back: the fdatasync's CPU time (above: never 0, the kernel walks
    // 32 MiB of pages) less the requests' submission, per page.
    assert_eq!(pa.fields["writeback_page_us"].source, "derived");
    assert!(
        pa.fields["writeback_page_us"].value * 8192.0 <= pa.fields["fdatasync_32m_cpu_us"].value + 1e-6,
        "{:?}",
        pa.fields["writeback_page_us"]
    );
    // The host's reclaim of free memory: measured exactly where the balloon reports free pages
    // (this VM's does: docs/twin.md, twin24), absent elsewhere.
    let reporting = forefront_sysfs::vm::free_page_reporting(std::path::Path::new("/")) == Some(true);
    assert_eq!(pa.fields.contains_key("host_reclaim_reserve_mib"), reporting, "{:?}", pa.fields.keys());
    if reporting {
        assert_eq!(pa.fields["host_reclaim_reserve_mib"].source, "measured");
        if forefront_sysfs::vm::page_reporting_counters(std::path::Path::new("/")).is_some() {
            assert!(pa.fields["host_reclaim_pass_mib"].value > 0.0, "{:?}", pa.fields["host_reclaim_pass_mib"]);
        }
        match pa.fields.get("host_reclaim_page_us") {
            // Memory the host took back costs more than memory freed moments before (the
            // recycled 1 MiB call is ~0.15 ms here, a faulted one ~3 ms).
            Some(m) => {
                assert_eq!(m.source, "derived");
                assert!(m.value > 0.0, "{m:?}");
            }
            // The loop fixture's file (~190 MiB) stayed within what this host left backed.
            None => eprintln!(
                "calibrate_measures_every_figure_cleans_up_and_loads: host_reclaim_page_us not measured here (the fixture's file never met memory the host took back; reserve {} MiB): its check skipped",
                pa.fields["host_reclaim_reserve_mib"].value
            ),
        }
    }
    // The folio a sequential read is cached in, as POSIX_FADV_DONTNEED sees it: a power of two,
    // no larger than the read-ahead window that built it (the loop device's), and the bench's
    // 1 MiB drops leave the file cached exactly when it is larger than 1 MiB.
    let folio = &pa.fields["dontneed_folio_kib"];
    assert_eq!(folio.source, "measured");
    assert!(folio.value >= 4.0 && (folio.value as u64).is_power_of_two(), "{folio:?}");
    let disk = pa.target.split_whitespace().next().unwrap();
    let ra_kib: f64 = std::fs::read_to_string(format!("/sys/block/{disk}/queue/read_ahead_kb")).unwrap().trim().parse().unwrap();
    assert!(folio.value <= ra_kib.max(4.0), "folio {folio:?} beyond the {ra_kib} KiB read-ahead of {disk}");
    let kept = pa.fields["dontneed_1m_kept_pct"].value;
    assert_eq!(folio.value > 1024.0, kept > 10.0, "folio {} KiB, {kept}% kept by 1 MiB drops", folio.value);
    // A calibration agrees with itself, and the comparison sees a figure moved beyond its
    // spread (the check of the quiet-machine test below can fail).
    assert!(disagreements(&a.device, &a.device).is_empty());
    let mut moved = a.device.clone();
    let m = moved.provenance.as_mut().unwrap().fields.get_mut("read_4k_rand_qd1_p50_us").unwrap();
    m.value += 2.0 * m.spread() + 1.0;
    assert_eq!(disagreements(&a.device, &moved).len(), 1);

    let file = work.path().join("dev.toml");
    std::fs::write(&file, a.to_toml()).unwrap();
    // The shared stage's rates are the large requests' at depth.
    assert_eq!(a.device.read_depth_mb_s, pa.fields["read_max_seq_depth_mb_s"].value);
    assert_eq!(a.device.write_depth_mb_s, pa.fields["write_max_seq_depth_mb_s"].value);
    let loaded = forefront_workload::load_device(file.to_str().unwrap()).expect("the simulator loads the device file");
    assert_eq!(loaded, a.device);
    drop(fs);
}

/// Issue 29's repeatability: two calibrations in a row give figures that differ by less than
/// the spread each reports. A property of a quiet machine, so not part of the default test
/// run: on the shared CI machines two runs seconds apart differed by 3x in a 4 KiB cached
/// read (13 vs 38 us, spread 22) while each run's five repetitions agreed. Run it with
/// `cargo test --release -p forefront-bench --test calibrate -- --ignored` (as root) with
/// nothing else running, or use `forefront bench calibrate --check-against EARLIER.toml`;
/// docs/twin.md has the last quiet result.
#[test]
#[ignore = "timing property: needs a quiet machine (docs/twin.md, \"Repeatable within its spread\")"]
fn calibrate_twice_agrees_within_its_spread() {
    if let Some(why) = unavailable() {
        eprintln!("SKIPPED calibrate_twice_agrees_within_its_spread: {why}");
        return;
    }
    let (_work, fs, plan) = fixture();
    let a = calibrate(&plan, &mut |_| {}).expect("first calibration");
    let b = calibrate(&plan, &mut |_| {}).expect("second calibration");
    let d = disagreements(&a.device, &b.device);
    assert!(d.is_empty(), "the two calibrations differ beyond their spread: {d:#?}");
    drop(fs);
}
