//! `scripts/sched-probe OUTDIR --analyse` on a made-up trace in the kernel's text format: the
//! roles come from the bench's process names, each wake-up's wait ends at the switch that puts
//! the op on a CPU, and waits are split by what held that CPU. Skips without python3.

use std::fmt::Write as _;
use std::process::Command;

/// One op (`ff-op-launch`, pid 200) woken `n` times on CPU 0, where a copy worker (pid 100)
/// runs, and given the CPU `wait_us` later; then once on an idle CPU 1.
fn trace(n: usize, wait_us: u64) -> String {
    let mut t = String::from("# tracer: nop\n");
    let mut at = 10_000_000u64; // µs
    let line = |t: &mut String, who: &str, cpu: u32, at: u64, ev: &str| {
        let _ = writeln!(t, "{who:>20} [{cpu:03}] d..2. {}.{:06}: {ev}", at / 1_000_000, at % 1_000_000);
    };
    line(&mut t, "<idle>-0", 0, at, "sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=ff-bg-copy next_pid=100 next_prio=120");
    for _ in 0..n {
        at += 300;
        line(&mut t, "<idle>-0", 1, at, "sched_wakeup: comm=ff-op-launch pid=200 prio=120 target_cpu=000");
        at += wait_us;
        line(&mut t, "ff-bg-copy-100", 0, at, "sched_switch: prev_comm=ff-bg-copy prev_pid=100 prev_prio=120 prev_state=R ==> next_comm=ff-op-launch next_pid=200 next_prio=120");
        at += 20;
        line(&mut t, "ff-op-launch-200", 0, at, "sched_switch: prev_comm=ff-op-launch prev_pid=200 prev_prio=120 prev_state=D ==> next_comm=ff-bg-copy next_pid=100 next_prio=120");
    }
    at += 300;
    line(&mut t, "<idle>-0", 1, at, "sched_wakeup: comm=ff-op-launch pid=200 prio=120 target_cpu=001");
    line(&mut t, "<idle>-0", 1, at + 5, "sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=ff-op-launch next_pid=200 next_prio=120");
    t
}

#[test]
fn waits_for_a_cpu_are_found_and_split_by_holder() {
    if Command::new("python3").arg("--version").output().is_err() {
        eprintln!("SKIPPED waits_for_a_cpu_are_found_and_split_by_holder: no python3");
        return;
    }
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/sched-probe");
    let analyse = |n: usize, wait_us: u64| {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("trace.txt"), trace(n, wait_us)).unwrap();
        let out = Command::new("python3").arg(script).arg(d.path()).arg("--analyse").output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let roles = std::fs::read_to_string(d.path().join("pids.txt")).unwrap();
        assert_eq!(roles, "100 worker:copy\n200 op\n");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let text = analyse(12, 150);
    assert!(text.contains("op 200: 13 wake-ups; 13 ended by a switch-in"), "{text}");
    assert!(text.contains("behind worker:copy: 12 wake-ups, median 150 us"), "{text}");
    assert!(text.contains("behind idle: 1 wake-ups, median 5 us"), "{text}");
    // 12 x 150 µs + 5 µs.
    assert!(text.contains("median 1.8 ms over 1 ops"), "{text}");
    // The waits follow the trace: a writer that yields at once leaves nothing to wait for.
    let text = analyse(12, 0);
    assert!(text.contains("behind worker:copy: 12 wake-ups, median 0 us"), "{text}");
    // An op with fewer than 10 wake-ups (a warm-up that never ran) is not summarised.
    let text = analyse(3, 150);
    assert!(!text.contains("op 200:"), "{text}");
}

/// With `--syscalls`, each worker call's time on a CPU is its stretches between a switch-in and
/// a switch-out inside the call (twin23: the updaters' `fdatasync`s sleep for most of theirs).
#[test]
fn a_worker_calls_time_on_a_cpu_leaves_out_its_sleep() {
    if Command::new("python3").arg("--version").output().is_err() {
        eprintln!("SKIPPED a_worker_calls_time_on_a_cpu_leaves_out_its_sleep: no python3");
        return;
    }
    let mut t = String::from("# tracer: nop\n");
    let line = |t: &mut String, who: &str, at: u64, ev: &str| {
        let _ = writeln!(t, "{who:>20} [000] d..2. {}.{:06}: {ev}", at / 1_000_000, at % 1_000_000);
    };
    let mut at = 10_000_000u64; // µs
    line(&mut t, "<idle>-0", at, "sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=ff-bg-update next_pid=100 next_prio=120");
    for _ in 0..4 {
        // An fdatasync: 200 µs of submission, asleep until 900, 100 µs of wake-up work.
        at += 50;
        line(&mut t, "ff-bg-update-100", at, "sys_enter: NR 75 (3, 0, 0, 0, 0, 0)");
        line(&mut t, "ff-bg-update-100", at + 200, "sched_switch: prev_comm=ff-bg-update prev_pid=100 prev_prio=120 prev_state=D ==> next_comm=swapper/0 next_pid=0 next_prio=120");
        line(&mut t, "<idle>-0", at + 900, "sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=ff-bg-update next_pid=100 next_prio=120");
        line(&mut t, "ff-bg-update-100", at + 1000, "sys_exit: NR 75 = 0");
        at += 1000;
    }
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("trace.txt"), t).unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/sched-probe");
    let out = Command::new("python3").arg(script).arg(d.path()).arg("--analyse").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("worker:update: syscall 75: 4 calls, p10 1000 p50 1000 p90 1000 p99 1000 us; on a CPU p50 300 p90 300 us, mean 300 us"), "{text}");
}

/// `scripts/host-touch-probe` (twin23) writes its four passes, prints each, says whether the
/// host's free page reporting is on, and leaves nothing behind in the directory it was given.
#[test]
fn the_host_touch_probe_prints_its_four_passes_and_cleans_up() {
    if Command::new("python3").arg("--version").output().is_err() {
        eprintln!("SKIPPED the_host_touch_probe_prints_its_four_passes_and_cleans_up: no python3");
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/host-touch-probe");
    let out = Command::new("python3").arg(script).arg(d.path()).args(["--mib", "8", "--wait", "0"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("free page reporting (virtio-balloon feature 5): "), "{text}");
    for pass in ["new ", "cached ", "recycled ", "reported "] {
        let line = text.lines().find(|l| l.starts_with(pass)).unwrap_or_else(|| panic!("no {pass}pass: {text}"));
        assert!(line.contains("8 x 1 MiB write(): p50 "), "{line}");
    }
    assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0, "the probe's directory is removed");
    // A size too small to measure is refused with a message.
    let out = Command::new("python3").arg(script).arg(d.path()).args(["--mib", "2"]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--mib must be at least 8"));
    // Bad input names the argument; a directory that is not there is named too.
    let out = Command::new("python3").arg(script).arg(d.path()).args(["--mib", "lots"]).output().unwrap();
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("argument --mib"));
    let gone = d.path().join("gone");
    let out = Command::new("python3").arg(script).arg(&gone).output().unwrap();
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("not a directory"));
}
