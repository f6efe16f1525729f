//! The Revisiting Storage ([RS]) checks fail when the mechanism they check is switched off: each
//! test runs the real simulator on the suite's WebBench jobs with one mechanism removed and
//! asserts that its check fails, and, for a check not known red, that it passes with the
//! mechanism on (5 seeds, as `forefront sim validate`). The failure side runs one seed: the
//! figures with the mechanism off are several times outside the range. Only the WebBench jobs
//! run; the other papers' jobs get a copy of one run of the photo editor (a report with every
//! figure their checks read), so their checks are meaningless here and not read.

use forefront_sim::RunConfig;
use forefront_validate::{evaluate, known_red, suite, Check};

/// The checks over seeds 1..=`seeds`, with `off` applied to every WebBench job.
fn rs_checks(seeds: u64, off: fn(&mut RunConfig)) -> Vec<Check> {
    let jobs = suite();
    let mut cfgs = vec![];
    for j in jobs.iter().filter(|j| j.scenario == "webbench") {
        for seed in 1..=seeds {
            let mut c = j.config(seed).expect("a suite job configures");
            off(&mut c);
            cfgs.push(c);
        }
    }
    let runs: Vec<_> = std::thread::scope(|s| {
        let (a, b) = cfgs.split_at(cfgs.len() / 2);
        let ha = s.spawn(|| a.iter().map(forefront_sim::run).collect::<Vec<_>>());
        let rb: Vec<_> = b.iter().map(forefront_sim::run).collect();
        let mut ra = ha.join().expect("the runs complete");
        ra.extend(rb);
        ra
    });
    let ui = jobs.iter().find(|j| j.scenario == "ftc-photo-editor").expect("an interactivity job");
    let filler = forefront_sim::run(&ui.config(1).expect("it configures"));
    let mut wb = runs.into_iter();
    let mut reports = vec![];
    for j in &jobs {
        for _ in 0..seeds {
            reports.push(if j.scenario == "webbench" { wb.next().expect("a report per WebBench run") } else { filler.clone() });
        }
    }
    evaluate(&jobs, &reports, seeds as usize)
}

fn get<'a>(checks: &'a [Check], id: &str) -> &'a Check {
    checks.iter().find(|c| c.id == id).expect("a check of the suite")
}

/// `id` fails with its mechanism off (`off`, one seed) and, unless known red, passes with it on
/// (five seeds, as `forefront sim validate`).
fn fails_off_passes_on(id: &str, off: &[Check], what: &str) {
    static ON: std::sync::OnceLock<Vec<Check>> = std::sync::OnceLock::new();
    let c = get(off, id);
    eprintln!("{id} {what}: {:.3} (range {}..{})", c.measured, c.min, c.max);
    assert!(!c.pass, "{id} passed {what}: {}", c.measured);
    if known_red(id).is_none() {
        let c = get(ON.get_or_init(|| rs_checks(5, |_| {})), id);
        assert!(c.pass, "{id} fails with its mechanism on: {}", c.measured);
    }
}

#[test]
fn without_the_ftl_the_cards_rated_alike_tie_and_the_spread_check_fails() {
    // The flat model: every write that continues no stream costs 1 / write_rand_iops, so the
    // five 2.6-IOPS cards all run ~500 s and the spread without Kingston is ~23x over WiFi
    // (more over USB, where the fast cards run shorter).
    let off = rs_checks(1, |c| c.device.ftl = None);
    let mut on = None;
    for id in ["rs-spread-without-kingston", "rs-spread-without-kingston-usb"] {
        let c = get(&off, id);
        assert!(!c.pass, "{id} passed with the FTL replaced by the flat model: {}", c.measured);
        if known_red(id).is_none() {
            let on = on.get_or_insert_with(|| rs_checks(5, |_| {}));
            let c = get(on, id);
            assert!(c.pass, "{id} fails with the FTL: {}", c.measured);
        }
    }
}

#[test]
fn with_the_databases_in_ram_no_card_is_far_slower_than_the_internal_flash() {
    // What-if B on every device: the SQLite databases' synchronous random writes are what make
    // the slowest card slow; without them the ratio falls to ~1.
    let c = get(
        &rs_checks(1, |c| {
            let path = "/data/data/com.android.browser/databases";
            // The suite's own what-if B job has the mount already.
            if !c.scenario.mounts.iter().any(|m| m.path == path) {
                c.scenario.mounts.push(forefront_workload::Mount {
                    path: path.into(),
                    fs: forefront_workload::MountFs::Tmpfs,
                    sync: true,
                    size_mib: None,
                    device: None,
                })
            }
        }),
        "rs-slowest-card-vs-internal",
    )
    .clone();
    assert!(!c.pass, "passed with the databases in RAM: {}", c.measured);
    if known_red(c.id).is_none() {
        let on = get(&rs_checks(5, |_| {}), c.id).clone();
        assert!(on.pass, "fails with the databases on the card: {}", on.measured);
    }
}

#[test]
fn with_every_card_writing_randomly_at_one_speed_random_writes_no_longer_predict_the_runtime() {
    // The mechanism: a card's random-write cost (its FTL's AU closes, or 1 / write_rand_iops).
    // Off: every card's random writes cost the internal flash's, no FTL; what still differs
    // between cards is their sequential speed, which is their speed class. The check correlates
    // the runtimes with the cards' *rated* random IOPS (Table 2), which then predict nothing.
    let internal = forefront_workload::load_device("nexus-one-nand").expect("a built-in device");
    let off = rs_checks(1, |c| {
        if c.device.name.starts_with("sd-") {
            c.device.ftl = None;
            c.device.write_rand_iops = forefront_workload::load_device("nexus-one-nand").expect("built in").write_rand_iops;
        }
    });
    let what = format!("with every card's random writes as fast as the internal flash's ({} IOPS)", internal.write_rand_iops);
    fails_off_passes_on("rs-random-writes-predict", &off, &what);
}

#[test]
fn on_a_fast_card_the_network_matters() {
    // The mechanism: Kingston's random writes make WebBench storage-bound, so a 10x faster link
    // barely shortens it. Off: the Kingston runs get the internal flash instead of the card,
    // and the link's speed shows.
    let off = rs_checks(1, |c| {
        if c.device.name == "sd-kingston-c4" {
            c.device = forefront_workload::load_device("nexus-one-nand").unwrap();
        }
    });
    fails_off_passes_on("rs-network-matters-little", &off, "with Kingston replaced by the internal flash");
}

#[test]
fn with_the_databases_left_on_the_card_kingston_stays_far_slower_than_the_internal_flash() {
    // The mechanism of what-if B: the browser's databases on tmpfs, so their synchronous random
    // writes never reach the card. Off: the what-if's runs keep them on the card.
    let off = rs_checks(1, |c| c.scenario.mounts.retain(|m| m.path != "/data/data/com.android.browser/databases"));
    fails_off_passes_on("rs-databases-are-the-cause", &off, "with what-if B's databases left on the card");
}
