//! The storage stack and the mounts of "Revisiting Storage for Smartphones" [RS]: RAID-0
//! conserves bytes and is faster than its slower member; `sync = false` makes fsync issue no
//! request at all; tmpfs files never reach the device; a log-structured mount turns random DB
//! rewrites into appends and its cleaner keeps a small log from running out of segments.

use forefront_policy::Policy;
use forefront_sim::{run, RunConfig};
use forefront_workload::{load_device, Scenario};

/// A one-app scenario: `ops` on thread `main` of the FG app, `extra` appended (mounts, phone).
fn scenario(ops: &str, extra: &str) -> Scenario {
    let text = format!(
        "name = 't'\ndescription = 'd'\nheadline = 'run'\ndevice = 'sd-transcend-c2'\nduration_s = 600.0\n\
         [[file]]\npath = '/data/db'\nsize = '4MiB'\nowner = 'a'\ncached = true\n\
         [[app]]\nname = 'a'\nrole = 'fg'\n[[app.thread]]\nname = 'main'\n\
         ops = [{{ op = 'phase_begin', name = 'run' }}, {ops}, {{ op = 'phase_end', name = 'run' }}]\n{extra}"
    );
    Scenario::parse("test.toml", &text).unwrap_or_else(|e| panic!("{e}"))
}

fn cfg(sc: Scenario, device: &str) -> RunConfig {
    RunConfig {
        scenario: sc,
        device: load_device(device).unwrap(),
        policy: Policy::by_name("android").unwrap(),
        bg_apps: 0,
        seed: 1,
    }
}

/// 64 random 4 KiB rewrites of the DB, each followed by an fsync.
const DB_REWRITES: &str = "{ op = 'repeat', times = 64, ops = [\
    { op = 'write', path = '/data/db', offset = 0, len = '4KiB' },\
    { op = 'write', path = '/data/db', offset = '1MiB', len = '4KiB' },\
    { op = 'write', path = '/data/db', offset = '3MiB', len = '4KiB' },\
    { op = 'fsync', path = '/data/db' } ] }";

#[test]
fn raid0_conserves_bytes_and_stripes_over_both_members() {
    let write = "{ op = 'write', path = '/data/big', len = '32MiB', chunk = '512KiB' }, { op = 'fsync', path = '/data/big' }";
    let alone_sd = run(&cfg(scenario(write, ""), "sd-transcend-c2"));
    let raid =
        run(&cfg(scenario(write, "[phone.storage]\nraid0_with = ['nexus-one-nand']\nchunk_kib = 64\n"), "sd-transcend-c2"));
    let inv = &raid.invariants;
    assert_eq!(inv.bytes_submitted, inv.bytes_completed, "every byte submitted completes");
    assert_eq!(inv.requests_in_flight, 0);
    // The device bytes are the file's plus the journal's, as without RAID.
    assert!(raid.metrics.device_written_mb >= 32.0 * 1.048, "{}", raid.metrics.device_written_mb);
    assert!(raid.hooks["storage.raid0_pieces"] > inv.requests_submitted, "requests were split at chunk boundaries");
    // Striping over the card (4.2 MB/s) and the NAND (8 MB/s) beats the card alone.
    assert!(
        raid.metrics.fg_ms < 0.8 * alone_sd.metrics.fg_ms,
        "RAID-0 {} ms vs SD alone {} ms",
        raid.metrics.fg_ms,
        alone_sd.metrics.fg_ms
    );
    assert!(!alone_sd.hooks.contains_key("storage.raid0_pieces"));
}

#[test]
fn a_nosync_fsync_issues_no_request() {
    let synced = run(&cfg(scenario(DB_REWRITES, ""), "sd-kingston-c4"));
    let nosync = run(&cfg(scenario(DB_REWRITES, "[[mount]]\npath = '/data'\nsync = false\n"), "sd-kingston-c4"));
    assert!(synced.invariants.requests_submitted >= 64, "each fsync writes: {}", synced.invariants.requests_submitted);
    assert_eq!(nosync.hooks["fs.nosync_fsyncs"], 64);
    // Nothing reached the block layer before the run ended (write-back would, 30 s later).
    assert_eq!(nosync.invariants.requests_submitted, 0);
    assert!(nosync.metrics.fg_ms * 50.0 < synced.metrics.fg_ms, "{} vs {}", nosync.metrics.fg_ms, synced.metrics.fg_ms);
}

#[test]
fn tmpfs_files_never_reach_the_device() {
    let ops = "{ op = 'write', path = '/data/cache/f', len = '8MiB' }, { op = 'fsync', path = '/data/cache/f' }, \
               { op = 'read', path = '/data/cache/f', len = '8MiB' }, { op = 'unlink', path = '/data/cache/f' }";
    let r = run(&cfg(scenario(ops, "[[mount]]\npath = '/data/cache'\nfs = 'tmpfs'\n"), "sd-kingston-c4"));
    assert_eq!(r.invariants.requests_submitted, 0);
    assert_eq!(r.metrics.device_written_mb, 0.0);
    assert!(r.metrics.fg_ms < 100.0, "{}", r.metrics.fg_ms);
}

#[test]
fn a_log_structured_mount_appends_rewrites_and_its_cleaner_keeps_up() {
    let ext4 = run(&cfg(scenario(DB_REWRITES, ""), "sd-kingston-c4"));
    let lfs = run(&cfg(scenario(DB_REWRITES, "[[mount]]\npath = '/data'\nfs = 'lfs'\n"), "sd-kingston-c4"));
    // Random in-place rewrites pay the card's random-write cost; appends at the head do not.
    assert!(lfs.metrics.fg_ms * 5.0 < ext4.metrics.fg_ms, "lfs {} ms vs ext4 {} ms", lfs.metrics.fg_ms, ext4.metrics.fg_ms);
    assert!(lfs.hooks["lfs.blocks_appended"] >= 1024 + 3 * 64, "{:?}", lfs.hooks);
    assert_eq!(lfs.hooks["lfs.log_full"], 0);

    // A 16 MiB file in a 32 MiB log (4 segments): its first 4 MiB rewritten 12 times. The
    // file's two segments hold live blocks the rewrites leave behind; only the cleaner's
    // copying keeps two clean segments ahead of the head.
    let churn = "{ op = 'repeat', times = 12, ops = [{ op = 'write', path = '/data/db', offset = '0KiB', len = '256KiB' },{ op = 'write', path = '/data/db', offset = '256KiB', len = '256KiB' },{ op = 'write', path = '/data/db', offset = '512KiB', len = '256KiB' },{ op = 'write', path = '/data/db', offset = '768KiB', len = '256KiB' },{ op = 'write', path = '/data/db', offset = '1024KiB', len = '256KiB' },{ op = 'write', path = '/data/db', offset = '1280KiB', len = '256KiB' },{ op = 'write', path = '/data/db', offset = '1536KiB', len = '256KiB' },{ op = 'write', path = '/data/db', offset = '1792KiB', len = '256KiB' },{ op = 'write', path = '/data/db', offset = '2048KiB', len = '256KiB' },{ op = 'write', path = '/data/db', offset = '2304KiB', len = '256KiB' },{ op = 'write', path = '/data/db', offset = '2560KiB', len = '256KiB' },{ op = 'write', path = '/data/db', offset = '2816KiB', len = '256KiB' },{ op = 'write', path = '/data/db', offset = '3072KiB', len = '256KiB' },{ op = 'write', path = '/data/db', offset = '3328KiB', len = '256KiB' },{ op = 'write', path = '/data/db', offset = '3584KiB', len = '256KiB' },{ op = 'write', path = '/data/db', offset = '3840KiB', len = '256KiB' },\
        { op = 'fsync', path = '/data/db' }, { op = 'sleep', ms = 3000.0 } ] }";
    let mut sc = scenario(churn, "[[mount]]\npath = '/data'\nfs = 'lfs'\nsize_mib = 32\n");
    sc.files[0].size = forefront_workload::Bytes(16 << 20);
    let r = run(&cfg(sc, "sd-transcend-c2"));
    assert!(r.hooks["lfs.cleaner_passes"] > 0 && r.hooks["lfs.cleaner_blocks"] > 0, "{:?}", r.hooks);
    assert!(r.hooks["lfs.segments_used"] > 8, "the head went round the log: {:?}", r.hooks);
    assert_eq!(r.hooks["lfs.log_full"], 0, "the cleaner kept a clean segment: {:?} {:?}", r.hooks, r.warnings);
    assert_eq!(r.invariants.tasks_blocked_without_waker, 0);
}

#[test]
fn a_vfat_mount_lives_on_its_own_device() {
    let card = "[[mount]]\npath = '/sdcard'\nfs = 'vfat'\ndevice = 'sd-kingston-c4'\n";
    let write = |path: &str| {
        format!("{{ op = 'write', path = '{path}', len = '8MiB', chunk = '512KiB' }}, {{ op = 'fsync', path = '{path}' }}")
    };
    let on_card = run(&cfg(scenario(&write("/sdcard/DCIM/x.jpg"), card), "galaxy-s5-emmc"));
    let on_main = run(&cfg(scenario(&write("/data/x.jpg"), ""), "galaxy-s5-emmc"));
    let on_main_with_card = run(&cfg(scenario(&write("/data/x.jpg"), card), "galaxy-s5-emmc"));
    // 8 MiB at the card's 4.9 MB/s vs the eMMC's 54.5 MB/s.
    assert!(
        on_card.metrics.fg_ms > 5.0 * on_main.metrics.fg_ms,
        "card {} ms vs eMMC {} ms",
        on_card.metrics.fg_ms,
        on_main.metrics.fg_ms
    );
    assert!(on_card.metrics.fg_ms > 8.0 * 1.048 / 4.9 * 1e3, "{}", on_card.metrics.fg_ms);
    // A second device that nobody uses changes nothing.
    assert_eq!(on_main_with_card.metrics.fg_ms, on_main.metrics.fg_ms);
    assert_eq!(on_card.invariants.bytes_submitted, on_card.invariants.bytes_completed);
    // The FAT fsync writes the FAT block and the directory entry: at least 8 MiB + 2 blocks.
    assert!(on_card.metrics.device_written_mb >= (8.0 * 1048576.0 + 8192.0) / 1e6, "{}", on_card.metrics.device_written_mb);
}

#[test]
fn bad_mounts_are_refused_with_the_mount_named() {
    let ops = "{ op = 'compute', ms = 1.0 }";
    let text = |extra: &str| {
        format!(
            "name = 't'\ndescription = 'd'\nheadline = 'run'\ndevice = 'sd-transcend-c2'\nduration_s = 1.0\n\
             [[app]]\nname = 'a'\nrole = 'fg'\n[[app.thread]]\nname = 'main'\nops = [{ops}]\n{extra}"
        )
    };
    for (extra, want) in [
        ("[[mount]]\npath = '/sdcard'\nfs = 'vfat'\n", "mount `/sdcard`: fs = \"vfat\" needs a `device`"),
        ("[[mount]]\npath = '/sdcard'\nfs = 'vfat'\ndevice = 'sd-nope'\n", "mount `/sdcard`: device: unknown device `sd-nope`"),
        ("[[mount]]\npath = '/data'\nfs = 'tmpfs'\nsync = false\n", "sync = false only applies to ext4"),
        ("[[mount]]\npath = '/data'\nfs = 'lfs'\nsize_mib = 8\n", "size_mib must be in 32..="),
        ("[[mount]]\npath = 'data'\n", "path must be absolute"),
        ("[phone.storage]\nraid0_with = ['nope']\n", "phone.storage.raid0_with: unknown device `nope`"),
    ] {
        let e = Scenario::parse("m.toml", &text(extra)).unwrap_err().to_string();
        assert!(e.starts_with("m.toml:") && e.contains(want), "{e}");
    }
}
