//! The kernel knobs of a desktop agent in the simulator (issue #29): the cgroup freezer, ioprio
//! classes carried on requests to BFQ and mq-deadline, BFQ group weights, cgroup `cpu.idle`,
//! and the write-back knobs (`dirty_bytes`, periodic write-back, the agent's hold); and an app's
//! windows of life (`alive_s`: started anew, killed at the freezer's stopping points), as
//! `forefront bench` starts and kills its workers. Each test runs the whole simulator with the
//! knob on and off and asserts the difference the kernel's documentation promises.

use forefront_policy::Policy;
use forefront_sim::{run, RunConfig};
use forefront_workload::{load_device, Scenario};

/// An FG app (foreground from the start) running `fg` inside phase `run`, and a BG template
/// running `bg` forever; `extra` appended (phone, knobs, files).
fn scenario(fg: &str, bg: &str, extra: &str, duration_s: f64) -> Scenario {
    let text = format!(
        "name = 't'\ndescription = 'd'\nheadline = 'run'\ndevice = 'galaxy-s6-ufs'\nduration_s = {duration_s}\n\
         [[file]]\npath = '/data/fg'\nsize = '64MiB'\nowner = 'fg'\n\
         [[file]]\npath = '/data/bg{{i}}'\nsize = '1GiB'\nowner = 'bg'\n\
         [[app]]\nname = 'fg'\nrole = 'fg'\n[[app.thread]]\nname = 'main'\n\
         ops = [{{ op = 'foreground', app = 'fg' }}, {{ op = 'phase_begin', name = 'run' }}, {fg}, {{ op = 'phase_end', name = 'run' }}]\n\
         [[app]]\nname = 'bg'\nrole = 'bg'\n[[app.thread]]\nname = 'worker'\n\
         ops = [{{ op = 'repeat', times = 0, ops = [{bg}] }}]\n{extra}"
    );
    Scenario::parse("test.toml", &text).unwrap_or_else(|e| panic!("{e}"))
}

fn cfg(sc: Scenario, bg_apps: u32) -> RunConfig {
    cfg_on(sc, bg_apps, "galaxy-s6-ufs")
}

fn cfg_on(sc: Scenario, bg_apps: u32, device: &str) -> RunConfig {
    RunConfig {
        scenario: sc,
        device: load_device(device).unwrap(),
        policy: Policy::by_name("android").unwrap(),
        bg_apps,
        seed: 1,
    }
}

const BG_READER: &str = "{ op = 'read', path = '/data/bg{i}', len = '1GiB', chunk = '256KiB' }";
/// A start-up's reads: 2,000 scattered 4–16 KiB reads of a 64 MiB file.
const LAUNCH: &str = "{ op = 'read_random', path = '/data/fg', count = 2000, size = '4KiB', size_max = '16KiB', span = '64MiB' }";

/// Mean background MB/s over the timeline buckets in `[from_s, to_s)`.
fn bg_rate(r: &forefront_record::run::RunReport, from_s: f64, to_s: f64) -> f64 {
    let b = r.timeline.bucket_ms / 1e3;
    let v: Vec<f64> = r
        .timeline
        .bg_mb_per_s
        .iter()
        .enumerate()
        .filter(|(i, _)| *i as f64 * b >= from_s && (*i as f64 + 1.0) * b <= to_s)
        .map(|(_, &x)| x)
        .collect();
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

/// cgroup freezer: a BG task frozen at 1 s does no more I/O (its `read()` call in progress
/// ends, then it stops before the next call) and goes on when thawed at 2 s.
#[test]
fn the_freezer_stops_a_bg_tasks_ops_and_thawing_resumes_them() {
    let fg = "{ op = 'sleep', ms = 3000.0 }";
    // One op of 4,096 read() calls: the freezer stops it between two of them.
    let bg = "{ op = 'read', path = '/data/bg{i}', len = '1GiB', chunk = '256KiB' }";
    let knobs = "[[knob]]\nat_s = 1.0\napp = 'bg'\nfrozen = true\n[[knob]]\nat_s = 2.0\napp = 'bg'\nfrozen = false\n";
    let frozen = run(&cfg(scenario(fg, bg, knobs, 10.0), 2));
    let free = run(&cfg(scenario(fg, bg, "", 10.0), 2));
    let (before, during, after) = (bg_rate(&frozen, 0.2, 1.0), bg_rate(&frozen, 1.1, 2.0), bg_rate(&frozen, 2.1, 2.9));
    assert!(before > 50.0, "BG reads before the freeze: {before:.1} MB/s");
    assert_eq!(during, 0.0, "frozen: no BG syscall I/O ({during:.2} MB/s)");
    assert!(after > 0.5 * before, "thawed: {after:.1} MB/s vs {before:.1} before");
    assert!(bg_rate(&free, 1.1, 2.0) > 50.0, "without the freezer the BG reads on");
    assert_eq!(frozen.invariants.tasks_blocked_at_end, free.invariants.tasks_blocked_at_end, "nobody is left frozen");
}

/// ioprio: BG readers in the IDLE class leave the device to the FG start-up. Under BFQ on a
/// UFS device that queues 32 commands (BFQ idles for the FG queue rather than filling the
/// device with BG reads), and under mq-deadline on an eMMC device without command queueing
/// (its strict class order decides every dispatch; on the UFS device BG reads never wait in
/// the host long enough for the order to matter, as on a real NVMe/UFS queue).
#[test]
fn the_idle_ioprio_class_shields_the_fg_under_bfq_and_mq_deadline() {
    for (sched, device, vs_alone) in [("bfq", "galaxy-s6-ufs", 1.5), ("mq-deadline", "galaxy-s5-emmc", 8.0)] {
        let phone = format!("[phone.scheduler]\nkind = '{sched}'\n");
        let idle = format!("{phone}[[knob]]\napp = 'bg'\nioprio_class = 'idle'\n");
        let be = run(&cfg_on(scenario(LAUNCH, BG_READER, &phone, 60.0), 4, device));
        let shielded = run(&cfg_on(scenario(LAUNCH, BG_READER, &idle, 60.0), 4, device));
        let alone = run(&cfg_on(scenario(LAUNCH, BG_READER, &phone, 60.0), 0, device));
        let (b, s, a) = (be.metrics.fg_ms, shielded.metrics.fg_ms, alone.metrics.fg_ms);
        let (bg_be, bg_idle) = (be.metrics.bg_mb_per_s, shielded.metrics.bg_mb_per_s);
        assert!(s <= b, "{sched}: FG start-up {s:.0} ms with idle-class BG vs {b:.0} ms best effort");
        assert!(s < vs_alone * a, "{sched}: {s:.0} ms vs {a:.0} ms alone");
        assert!(bg_idle > 0.0, "{sched}: the idle class is still served");
        if sched == "bfq" {
            // BFQ shields the FG start-up well already (it idles for it); what the idle class
            // changes is the BG's share while the FG reads.
            assert!(bg_idle < 0.7 * bg_be, "bfq: BG {bg_idle:.1} MB/s in the idle class vs {bg_be:.1} MB/s");
        } else {
            assert!(s < 0.5 * b, "{sched}: FG start-up {s:.0} ms with idle-class BG vs {b:.0} ms");
        }
    }
}

/// BFQ group weights through the per-task knob: BG readers whose cgroup has `io.bfq.weight` 10
/// against the FG's 1000 get a small share of the device and the FG start-up is faster than
/// at 1000 each.
#[test]
fn a_low_bfq_weight_for_the_bg_speeds_the_fg_up() {
    let phone = "[phone]\nblkio_bg_weight = 1000\n[phone.scheduler]\nkind = 'bfq'\nlow_latency = false\n";
    let low = format!("{phone}[[knob]]\napp = 'bg'\nio_weight = 10\n");
    let equal = run(&cfg(scenario(LAUNCH, BG_READER, phone, 60.0), 4));
    let weighted = run(&cfg(scenario(LAUNCH, BG_READER, &low, 60.0), 4));
    let (e, w) = (equal.metrics.fg_ms, weighted.metrics.fg_ms);
    assert!(w < 0.95 * e, "FG {w:.0} ms with BG weight 10 vs {e:.0} ms at equal weights");
    let (be, bw) = (equal.metrics.bg_mb_per_s, weighted.metrics.bg_mb_per_s);
    assert!(bw < 0.6 * be, "BG {bw:.1} MB/s at weight 10 vs {be:.1} MB/s");
}

/// cgroup `cpu.idle` on the BG group: a CPU-bound FG phase beside CPU hogs in the BG group runs
/// about as fast as alone; with Android's BG shares (110) it is slower.
#[test]
fn cpu_idle_on_the_bg_group_gives_the_fg_its_cores() {
    let fg = "{ op = 'compute', ms = 2000.0 }";
    let bg = "{ op = 'compute', ms = 50.0 }";
    let phone = "[phone.cpu]\ncores = [1.0]\n";
    let idle = format!("{phone}[[knob]]\nbg_cpu_idle = true\n");
    let shares = run(&cfg(scenario(fg, bg, phone, 30.0), 4)).metrics.fg_ms;
    let idled = run(&cfg(scenario(fg, bg, &idle, 30.0), 4)).metrics.fg_ms;
    let alone = run(&cfg(scenario(fg, bg, phone, 30.0), 0)).metrics.fg_ms;
    assert!(idled < 1.02 * alone, "cpu.idle: {idled:.0} ms vs {alone:.0} ms alone");
    // The BG group's 110 shares against the FG group's 1024 take 110/1134 of the core.
    assert!(shares > 1.07 * alone, "BG shares 110: {shares:.0} ms vs {alone:.0} ms alone");
}

/// `dirty_bytes`: a writer over the byte limit is throttled where the ratio's limit (20 % of a
/// 512 MiB page cache) lets 64 MiB through into the page cache at memory speed.
#[test]
fn dirty_bytes_replaces_the_ratio_limit() {
    let fg = "{ op = 'write', path = '/data/out', len = '64MiB', chunk = '256KiB' }";
    let bg = "{ op = 'sleep', ms = 1000.0 }";
    let ratio = run(&cfg(scenario(fg, bg, "", 60.0), 0)).metrics.fg_ms;
    let bytes = run(&cfg(scenario(fg, bg, "[phone]\ndirty_bytes = 8388608\ndirty_background_bytes = 4194304\n", 60.0), 0));
    assert!(bytes.metrics.fg_ms > 3.0 * ratio, "8 MiB limit: {:.0} ms vs {ratio:.0} ms under the ratio", bytes.metrics.fg_ms);
    assert!(bytes.metrics.device_written_mb > 50.0, "throttled data reached the device during the write");
}

/// Periodic write-back and the agent's hold: 1 MiB written and left dirty reaches the device
/// by expiry (30 s + the 5 s timer) with the defaults; not with periodic write-back off, nor
/// while the agent holds write-back — and once the hold is released, it does.
#[test]
fn periodic_writeback_and_the_hold_keep_dirty_data_in_memory() {
    let fg = "{ op = 'write', path = '/data/out', len = '1MiB' }, { op = 'sleep', ms = 50000.0 }";
    let bg = "{ op = 'sleep', ms = 1000.0 }";
    let written = |extra: &str| run(&cfg(scenario(fg, bg, extra, 60.0), 0)).metrics.device_written_mb;
    // The journal's own commits write a little metadata in every case.
    let base = written("[phone]\nperiodic_writeback = false\n");
    assert!(base < 0.5, "periodic write-back off: {base:.2} MB written");
    let periodic = written("");
    assert!(periodic > base + 0.9, "expired data written by the periodic flusher: {periodic:.2} MB");
    let held = written("[[knob]]\nhold_writeback = true\n");
    assert!(held < base + 0.1, "held: {held:.2} MB");
    let released = written("[[knob]]\nhold_writeback = true\n[[knob]]\nat_s = 40.0\nhold_writeback = false\n");
    assert!(released > base + 0.9, "released at 40 s: {released:.2} MB");
}

#[test]
fn a_knob_naming_no_app_or_an_unknown_app_is_an_error() {
    let text = |k: &str| {
        format!(
            "name = 't'\ndescription = 'd'\nheadline = 'run'\ndevice = 'galaxy-s6-ufs'\nduration_s = 1.0\n\
             [[app]]\nname = 'fg'\nrole = 'fg'\n[[app.thread]]\nname = 'main'\n\
             ops = [{{ op = 'phase_begin', name = 'run' }}, {{ op = 'phase_end', name = 'run' }}]\n{k}"
        )
    };
    let e = Scenario::parse("k.toml", &text("[[knob]]\napp = 'bgg'\nfrozen = true\n")).unwrap_err().to_string();
    assert!(e.contains("knob[0].app") && e.contains("bgg"), "{e}");
    let e = Scenario::parse("k.toml", &text("[[knob]]\nfrozen = true\n")).unwrap_err().to_string();
    assert!(e.contains("name the app"), "{e}");
    let e = Scenario::parse("k.toml", &text("[[knob]]\napp = 'fg'\nio_weight = 0\n")).unwrap_err().to_string();
    assert!(e.contains("io_weight"), "{e}");
    let e = Scenario::parse("k.toml", &text("[[knob]]\napp = 'fg'\nfrozen = true\ncolour = 1\n")).unwrap_err().to_string();
    assert!(e.contains("colour"), "{e}");
}

/// `drop_caches` by a background template's name drops the pages of every instance of it (as
/// `forefront bench`'s cache drop before each sample reaches every worker's file). The FG app
/// reads a worker's file after the drop: cold (from the device) unless the drop missed it.
#[test]
fn dropping_a_templates_caches_reaches_every_instance() {
    let fg_read = |drop: &str, file: &str| {
        let text = format!(
            "name = 't'\ndescription = 'd'\nheadline = 'run'\ndevice = 'galaxy-s6-ufs'\nduration_s = 5.0\n\
             [[file]]\npath = '/data/fg'\nsize = '1MiB'\nowner = 'fg'\n\
             [[file]]\npath = '/data/bg{{i}}'\nsize = '32MiB'\nowner = 'bg'\n\
             [[app]]\nname = 'fg'\nrole = 'fg'\n[[app.thread]]\nname = 'main'\n\
             ops = [{{ op = 'foreground', app = 'fg' }}, {{ op = 'think', ms = 1000.0 }}, {{ op = 'drop_caches', app = '{drop}' }},\n\
             {{ op = 'phase_begin', name = 'run' }}, {{ op = 'read', path = '{file}', len = '32MiB', chunk = '1MiB' }}, {{ op = 'phase_end', name = 'run' }}]\n\
             [[app]]\nname = 'bg'\nrole = 'bg'\n[[app.thread]]\nname = 'worker'\n\
             ops = [{{ op = 'read', path = '/data/bg{{i}}', len = '32MiB', chunk = '1MiB' }}, {{ op = 'think', ms = 10000.0 }}]\n"
        );
        let sc = Scenario::parse("test.toml", &text).unwrap_or_else(|e| panic!("{e}"));
        let r = run(&cfg(sc, 2));
        r.metrics.fg_ms
    };
    let cached = fg_read("fg", "/data/bg0");
    let first = fg_read("bg", "/data/bg0");
    let second = fg_read("bg", "/data/bg1");
    assert!(first > 3.0 * cached, "the template's drop reaches worker 0: {first} ms vs {cached} ms cached");
    assert!(second > 3.0 * cached, "and worker 1: {second} ms vs {cached} ms cached");
}

/// `alive_s` (an app's processes live in windows: `forefront bench`'s workers): a BG reader
/// reads only inside its windows — nothing before the first, nothing between them once the
/// call in progress at the kill has finished, nothing after the last — and reads in each.
#[test]
fn an_app_lives_only_in_its_windows_and_is_killed_at_their_ends() {
    let fg = "{ op = 'sleep', ms = 3000.0 }";
    let lives = scenario(fg, BG_READER, "", 10.0);
    let mut windows = lives.clone();
    windows.apps.iter_mut().find(|a| a.name == "bg").unwrap().alive_s = vec![[0.5, 1.0], [2.0, 2.5]];
    let all = run(&cfg(lives, 2));
    let some = run(&cfg(windows, 2));
    assert!(bg_rate(&all, 0.0, 0.5) > 50.0 && bg_rate(&all, 1.1, 2.0) > 50.0, "without windows it reads throughout");
    assert_eq!(bg_rate(&some, 0.0, 0.5), 0.0, "not started before its first window");
    assert!(bg_rate(&some, 0.6, 1.0) > 50.0, "reads in the first window: {:.1} MB/s", bg_rate(&some, 0.6, 1.0));
    assert_eq!(bg_rate(&some, 1.1, 2.0), 0.0, "killed between the windows");
    assert!(bg_rate(&some, 2.1, 2.5) > 50.0, "started again: {:.1} MB/s", bg_rate(&some, 2.1, 2.5));
    assert_eq!(bg_rate(&some, 2.6, 3.0), 0.0, "killed after the last");
}

/// A window's start runs the program anew from its first op, as a new process: a reader
/// restarted at 2 s reads its file's first pages again — cached by the first window, so at
/// the page cache's speed, many times the device's — where one that merely resumed (the
/// freezer, thawed at 2 s) reads on into pages it has not read, at the device's speed. And a
/// program that had ended (one pass of a small file) runs again in the next window.
#[test]
fn a_restarted_app_begins_its_program_anew_as_a_new_process() {
    let fg = "{ op = 'sleep', ms = 3000.0 }";
    let mut lives = scenario(fg, BG_READER, "", 10.0);
    lives.apps.iter_mut().find(|a| a.name == "bg").unwrap().alive_s = vec![[0.2, 1.0], [2.0, 2.5]];
    let knobs = "[[knob]]\nat_s = 1.0\napp = 'bg'\nfrozen = true\n[[knob]]\nat_s = 2.0\napp = 'bg'\nfrozen = false\n";
    let frozen = scenario(fg, BG_READER, knobs, 10.0);
    let (restarted, resumed) = (run(&cfg(lives, 1)), run(&cfg(frozen, 1)));
    let first = bg_rate(&restarted, 0.3, 1.0);
    let (again, on) = (bg_rate(&restarted, 2.0, 2.3), bg_rate(&resumed, 2.0, 2.3));
    assert!(first > 50.0 && on > 50.0, "both read from the device: {first:.1}, {on:.1} MB/s");
    assert!(again > 3.0 * on, "restarted: its first pages again, cached ({again:.1} MB/s); resumed: new pages ({on:.1} MB/s)");

    // A program that ends within its window (a 4 MiB file read once) runs again in the next.
    let small = "{ op = 'repeat', times = 1, ops = [{ op = 'read', path = '/data/small{i}', len = '4MiB', chunk = '256KiB' }] }";
    let file = "[[file]]\npath = '/data/small{i}'\nsize = '4MiB'\nowner = 'bg'\n";
    let mut ends = scenario(fg, small, file, 10.0);
    let bg = ends.apps.iter_mut().find(|a| a.name == "bg").unwrap();
    bg.alive_s = vec![[0.2, 1.0], [2.0, 2.5]];
    // Unwrapped from the helper's endless loop: the program is the one pass.
    let forefront_workload::Op::Repeat { ops, .. } = bg.threads[0].ops[0].clone() else { panic!("the helper's loop") };
    bg.threads[0].ops = ops;
    let r = run(&cfg(ends, 1));
    let mib = |from: f64, to: f64| bg_rate(&r, from, to) * (to - from);
    assert!((3.5..=4.5).contains(&mib(0.2, 1.0)), "first window: one pass ({:.2} MB)", mib(0.2, 1.0));
    assert!((3.5..=4.5).contains(&mib(2.0, 2.5)), "second window: one pass again ({:.2} MB)", mib(2.0, 2.5));
}
