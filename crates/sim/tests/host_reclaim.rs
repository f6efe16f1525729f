//! A VM host that takes the guest's free memory back (`[phone.host_reclaim]`,
//! `forefront_model::mm::host`; issue 29, docs/twin.md twin24): a writer that allocates page-cache
//! pages after a reporting pass has handed the memory it would get to the host pays the host's
//! fault on each page (a reader its own figure, twin28); right after the free, or with no host
//! model, it does not.

use forefront_policy::Policy;
use forefront_sim::{run, RunConfig};
use forefront_workload::{load_device, Scenario};

/// The host's cost per page in these runs (µs) and the pages the writer allocates.
const PAGE_US: f64 = 10.0;
const PAGES: u64 = 64 * 256;

/// An app that caches 64 MiB (writing file `a`), drops it (its pages become free memory, backed),
/// waits `wait_ms`, then writes 64 MiB of file `b` inside the headline phase: 16,384 new pages.
/// With `host`, 64 MiB of free memory is backed at the start (file `a`'s writes take it), and a
/// reporting pass runs 2 s after the drop and reports up to 1 GiB.
fn cfg(wait_ms: f64, host: bool) -> RunConfig {
    cfg_with(wait_ms, host.then_some(""), "{ op = 'write', path = '/data/b', len = '64MiB', chunk = '1MiB' }")
}

/// [`cfg`] with the host's table given more keys (`host`: `None` for no host model) and
/// `phase` the headline's op.
fn cfg_with(wait_ms: f64, host: Option<&str>, phase: &str) -> RunConfig {
    let host = match host {
        Some(more) => format!(
            "[phone.host_reclaim]\ninterval_ms = 2000.0\npass_mib = 1024.0\nreserve_mib = 0.0\nbacked_mib = 64.0\npage_us = {PAGE_US}\n{more}"
        ),
        None => String::new(),
    };
    let text = format!(
        "name = 't'\ndescription = 'd'\nheadline = 'run'\ndevice = 'galaxy-s6-ufs'\nduration_s = 60\n\
         [phone]\npage_cache_mib = 4096\ndirty_background_ratio = 80.0\ndirty_ratio = 90.0\n{host}\
         [[file]]\npath = '/data/a'\nsize = '64MiB'\nowner = 'fg'\n\
         [[file]]\npath = '/data/b'\nsize = '64MiB'\nowner = 'fg'\n\
         [[app]]\nname = 'fg'\nrole = 'fg'\n[[app.thread]]\nname = 'main'\n\
         ops = [{{ op = 'foreground', app = 'fg' }}, {{ op = 'write', path = '/data/a', len = '64MiB', chunk = '1MiB' }}, \
         {{ op = 'fsync', path = '/data/a' }}, {{ op = 'drop_caches', app = 'fg' }}, {{ op = 'sleep', ms = {wait_ms:?} }}, \
         {{ op = 'phase_begin', name = 'run' }}, {phase}, {{ op = 'phase_end', name = 'run' }}]\n"
    );
    let scenario = Scenario::parse("host.toml", &text).unwrap_or_else(|e| panic!("{e}"));
    // Reads at 20 GB/s (this VM's disk reads a cached host file about as fast): a read's
    // device time does not hide the CPU time it adds (the model submits a read-ahead window's
    // requests as its step starts, so the step's CPU work and the device overlap).
    let mut device = load_device("galaxy-s6-ufs").unwrap();
    (device.read_seq_mb_s, device.bus_mb_s, device.read_rand_iops, device.cmd_overhead_us) = (20_000.0, 20_000.0, 1e6, 1.0);
    RunConfig { scenario, device, policy: Policy::by_name("android").unwrap(), bg_apps: 0, seed: 1 }
}

/// Scenario `text` (named `name` in errors) on the stock UFS device under Android's policy, seed 1.
fn stock(name: &str, text: &str) -> RunConfig {
    let scenario = Scenario::parse(name, text).unwrap_or_else(|e| panic!("{e}"));
    RunConfig {
        scenario,
        device: load_device("galaxy-s6-ufs").unwrap(),
        policy: Policy::by_name("android").unwrap(),
        bg_apps: 0,
        seed: 1,
    }
}

#[test]
fn a_write_into_memory_the_host_took_back_pays_its_fault_per_page() {
    let plain = run(&cfg(3000.0, false));
    assert_eq!(plain.host_reclaim, None, "no host model, no counts");
    let late = run(&cfg(3000.0, true));
    let h = late.host_reclaim.expect("host counts");
    // The pass at 2 s reported the 64 MiB the drop freed; the phase's writes took all of it back.
    assert_eq!(h.reported_pages, PAGES);
    assert_eq!(h.refaulted_pages, PAGES);
    let extra_ms = late.metrics.fg_ms - plain.metrics.fg_ms;
    let expect_ms = PAGES as f64 * PAGE_US / 1e3;
    assert!((extra_ms - expect_ms).abs() < 0.05 * expect_ms, "extra {extra_ms:.1} ms, expected {expect_ms:.1} ms");
}

/// A cold read's pages allocated from memory the host took back pay the read's figure
/// (`read_page_us`, twin28: on this VM a read's fault costs about half a write's), or the
/// write's where none is given (a device file from before twin28).
#[test]
fn a_cold_read_into_memory_the_host_took_back_pays_the_reads_figure() {
    let read = "{ op = 'read', path = '/data/b', len = '64MiB', chunk = '1MiB' }";
    let plain = run(&cfg_with(3000.0, None, read)).metrics.fg_ms;
    let extra = |more: &str| {
        let r = run(&cfg_with(3000.0, Some(more), read));
        assert_eq!(r.host_reclaim.expect("host counts").refaulted_pages, PAGES, "the read allocated all it needed from the host");
        r.metrics.fg_ms - plain
    };
    let (own, writes) = (extra("read_page_us = 4.0\n"), extra(""));
    let expect = |us: f64| PAGES as f64 * us / 1e3;
    assert!((own - expect(4.0)).abs() < 0.05 * expect(4.0), "read figure: extra {own:.1} ms, expected {:.1}", expect(4.0));
    assert!((writes - expect(PAGE_US)).abs() < 0.05 * expect(PAGE_US), "write figure: extra {writes:.1} ms");
}

/// twin29: a writer's 1 MiB folios and a reader's small read-ahead folios after the host took
/// back all the free memory reporting can take: the writer pays for every page, and the reader
/// too without an inventory of the free blocks below the reporting order, but not with one
/// (its 4–256 KiB folios are cut from those blocks, which reporting never takes; the writer's
/// order-8 folios find none of order 8 or above).
#[test]
fn small_read_ahead_folios_are_cut_from_the_blocks_reporting_leaves_and_a_writers_are_not() {
    let run_with = |fragments: &str| {
        let host = format!(
            "[phone.host_reclaim]\ninterval_ms = 2000.0\npass_mib = 1024.0\nreserve_mib = 0.0\nbacked_mib = 64.0\npage_us = {PAGE_US}\n{fragments}"
        );
        let text = format!(
            "name = 't'\ndescription = 'd'\nheadline = 'run'\ndevice = 'galaxy-s6-ufs'\nduration_s = 60\n\
             [phone]\npage_cache_mib = 4096\ndirty_background_ratio = 80.0\ndirty_ratio = 90.0\n\
             async_read_ahead = true\nread_ahead_kib = 8192\n{host}\
             [[file]]\npath = '/data/a'\nsize = '64MiB'\nowner = 'fg'\n\
             [[file]]\npath = '/data/b'\nsize = '32MiB'\nowner = 'fg'\n\
             [[file]]\npath = '/data/c'\nsize = '3584KiB'\nowner = 'fg'\n\
             [[app]]\nname = 'fg'\nrole = 'fg'\n[[app.thread]]\nname = 'main'\n\
             ops = [{{ op = 'foreground', app = 'fg' }}, {{ op = 'write', path = '/data/a', len = '64MiB', chunk = '1MiB' }}, \
             {{ op = 'fsync', path = '/data/a' }}, {{ op = 'drop_caches', app = 'fg' }}, {{ op = 'sleep', ms = 3000.0 }}, \
             {{ op = 'phase_begin', name = 'run' }}, {{ op = 'write', path = '/data/b', len = '32MiB', chunk = '1MiB' }}, \
             {{ op = 'read', path = '/data/c', len = '3584KiB', chunk = '128KiB' }}, {{ op = 'phase_end', name = 'run' }}]\n"
        );
        run(&stock("frag.toml", &text)).host_reclaim.expect("host counts").refaulted_pages
    };
    // The writer's 32 MiB; the reader's 3.5 MiB: windows of 512 KiB, 1 MiB and 2 MiB in folios
    // of 4, 16 and 64 KiB.
    let (writer, reader) = (32 * 256, 896);
    assert_eq!(run_with(""), writer + reader, "no inventory: every page past the backed memory is the host's");
    // 16 MiB free in 256 KiB blocks (order 6): enough for the reader, too small a block for the writer.
    let with = run_with("fragments_kib = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 16384.0]\n");
    assert_eq!(with, writer, "the reader's folios cut from the free blocks reporting leaves, the writer's not");
    // Too few such blocks: the reader's last folios meet the host's memory again.
    assert_eq!(run_with("fragments_kib = [0.0, 0.0, 0.0, 0.0, 2048.0]\n"), writer + reader - 512);
}

#[test]
fn memory_freed_moments_before_costs_nothing_more() {
    let plain = run(&cfg(100.0, false));
    let soon = run(&cfg(100.0, true));
    let h = soon.host_reclaim.expect("host counts");
    assert_eq!(h.refaulted_pages, 0, "no pass ran before the writes: the freed memory was backed");
    assert_eq!(soon.metrics.fg_ms, plain.metrics.fg_ms, "same run, same figures");
}

#[test]
fn a_bad_host_figure_is_refused_with_its_key() {
    let text = "name = 't'\ndescription = 'd'\nheadline = 'run'\ndevice = 'galaxy-s6-ufs'\nduration_s = 1\n\
                [phone.host_reclaim]\ninterval_ms = 0.0\npass_mib = 1.0\nreserve_mib = 0.0\nbacked_mib = 0.0\npage_us = 1.0\n\
                [[app]]\nname = 'fg'\nrole = 'fg'\n[[app.thread]]\nname = 'main'\nops = [{ op = 'phase_begin', name = 'run' }, { op = 'sleep', ms = 1.0 }, { op = 'phase_end', name = 'run' }]\n";
    let e = Scenario::parse("bad.toml", text).unwrap_err().to_string();
    assert!(e.contains("phone.host_reclaim.interval_ms"), "{e}");
    let e = Scenario::parse("bad.toml", &text.replace("page_us = 1.0", "page_us = 1.0\ncolour = 2")).unwrap_err().to_string();
    assert!(e.contains("colour"), "{e}");
}

/// Device MB read by reading a 64 MiB file twice in 1 MiB calls, the first pass with or
/// without `drop_behind`, the page cache's read-ahead folio `folio_kib` (`phone.readahead_folio_kib`).
fn read_twice_mb(drop_behind: bool, folio_kib: u64, chunk: &str) -> f64 {
    let text = format!(
        "name = 't'\ndescription = 'd'\nheadline = 'run'\ndevice = 'galaxy-s6-ufs'\nduration_s = 60\n\
         [phone]\npage_cache_mib = 1024\nasync_read_ahead = true\nread_ahead_kib = 4096\nreadahead_folio_kib = {folio_kib}\n\
         [[file]]\npath = '/data/a'\nsize = '64MiB'\nowner = 'fg'\n\
         [[app]]\nname = 'fg'\nrole = 'fg'\n[[app.thread]]\nname = 'main'\n\
         ops = [{{ op = 'foreground', app = 'fg' }}, {{ op = 'phase_begin', name = 'run' }}, \
         {{ op = 'read', path = '/data/a', len = '64MiB', chunk = '{chunk}', drop_behind = {drop_behind} }}, \
         {{ op = 'read', path = '/data/a', len = '64MiB', chunk = '1MiB' }}, {{ op = 'phase_end', name = 'run' }}]\n"
    );
    run(&stock("drop.toml", &text)).metrics.device_read_mb
}

/// The bench's uploaders drop each chunk after reading it (`drop_behind`): with every page its
/// own folio, every page is read from the device once (the read-ahead ahead of the chunk is not
/// dropped with it), and none is left cached, so reading the file again goes to the device again.
#[test]
fn a_reader_that_drops_behind_reads_each_page_once_and_keeps_none() {
    let (kept, dropped) = (read_twice_mb(false, 4, "1MiB"), read_twice_mb(true, 4, "1MiB"));
    assert!((kept - 67.1).abs() < 1.0, "cached after the first pass: the second reads nothing ({kept} MB)");
    assert!((dropped - 134.2).abs() < 1.0, "each page once per pass, twice in all ({dropped} MB)");
}

/// With the file cached in 2 MiB folios (this VM's ext4, twin25), a 1 MiB call's drop covers
/// no folio whole and keeps the whole file cached (the second pass reads nothing), while 2 MiB
/// calls drop every folio they read, as `bench calibrate`'s `folio` step measures on the kernel.
#[test]
fn drop_behind_drops_only_the_folios_a_call_covers_whole() {
    let one_mib = read_twice_mb(true, 2048, "1MiB");
    assert!((one_mib - 67.1).abs() < 1.0, "1 MiB calls never cover a 2 MiB folio: nothing dropped ({one_mib} MB)");
    let two_mib = read_twice_mb(true, 2048, "2MiB");
    assert!((two_mib - 134.2).abs() < 1.0, "2 MiB calls drop each folio they read ({two_mib} MB)");
}

#[test]
fn a_read_ahead_folio_that_is_not_a_power_of_two_is_refused_with_its_key() {
    let text = "name = 't'\ndescription = 'd'\nheadline = 'run'\ndevice = 'galaxy-s6-ufs'\nduration_s = 1\n\
                [phone]\nreadahead_folio_kib = 1000\n\
                [[app]]\nname = 'fg'\nrole = 'fg'\n[[app.thread]]\nname = 'main'\nops = [{ op = 'phase_begin', name = 'run' }, { op = 'sleep', ms = 1.0 }, { op = 'phase_end', name = 'run' }]\n";
    let e = Scenario::parse("bad.toml", text).unwrap_err().to_string();
    assert!(e.contains("phone.readahead_folio_kib"), "{e}");
}

/// Measured passes (`passes`, twin27) must be in time order with sizes that are figures: the
/// error names the field and the pass.
#[test]
fn measured_passes_out_of_order_are_refused_by_their_place() {
    let text = |passes: &str| {
        format!(
            "name = 't'\ndescription = 'd'\nheadline = 'run'\ndevice = 'galaxy-s6-ufs'\nduration_s = 60\n\
             [phone]\npage_cache_mib = 4096\n\
             [phone.host_reclaim]\ninterval_ms = 2000.0\npass_mib = 1024.0\nreserve_mib = 0.0\nbacked_mib = 64.0\npage_us = 10.0\npasses = {passes}\n\
             [[app]]\nname = 'fg'\nrole = 'fg'\n[[app.thread]]\nname = 'main'\nops = [{{ op = 'phase_begin', name = 'run' }}, {{ op = 'sleep', ms = 1.0 }}, {{ op = 'phase_end', name = 'run' }}]\n"
        )
    };
    if let Err(e) = Scenario::parse("host.toml", &text("[[100.0, 64.0], [2100.0, 32.0]]")) {
        panic!("in order: {e}");
    }
    let err = Scenario::parse("host.toml", &text("[[100.0, 64.0], [50.0, 32.0]]")).unwrap_err().to_string();
    assert!(err.contains("host.toml") && err.contains("phone.host_reclaim.passes[1] ms"), "{err}");
    let err = Scenario::parse("host.toml", &text("[[100.0, -1.0]]")).unwrap_err().to_string();
    assert!(err.contains("phone.host_reclaim.passes[0] MiB"), "{err}");
}
