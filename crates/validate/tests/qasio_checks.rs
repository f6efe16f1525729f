//! Each QASIO check of `forefront sim validate` ([QA]) fails on the real simulator when the
//! mechanism it validates is switched off, and the checks not known red pass with it on.
//!
//! Seeds 1–2 on both sides (the suite's own runs, `scripts/validate`, use three 5-seed sets):
//! every job of the suite runs once with its mechanisms on; each case re-runs only the QASIO
//! jobs with one change and evaluates the whole suite again.
//!
//! The mechanisms: discard as ext4 `-o discard` issues it (off: `phone.fs.discard = false`),
//! QASIO's boost (off: the `qasio` jobs run `android`), per-page dirty throttling (off:
//! `phone.dirty_throttle = per-call`), the paper's background load that deletes nothing (off:
//! the writer re-creates one file, as the scenarios did before), the background writer itself.

use std::sync::OnceLock;

use forefront_record::run::RunReport;
use forefront_sim::{run, RunConfig};
use forefront_validate::{evaluate, suite, Check, Job};

const SEEDS: u64 = 2;

fn is_qasio(j: &Job) -> bool {
    j.scenario.starts_with("qasio-")
}

/// The reports of every job with the mechanisms on, run once.
fn baseline() -> &'static Vec<RunReport> {
    static B: OnceLock<Vec<RunReport>> = OnceLock::new();
    B.get_or_init(|| {
        let mut out = vec![];
        for j in suite() {
            for seed in 1..=SEEDS {
                out.push(run(&j.config(seed).expect("suite job")));
            }
        }
        out
    })
}

/// The suite's checks with the QASIO jobs re-run after `change` (which may also swap the job).
fn checks_with(change: &dyn Fn(&Job, &mut RunConfig)) -> Vec<Check> {
    let jobs = suite();
    let mut reports = baseline().clone();
    for (i, j) in jobs.iter().enumerate() {
        if !is_qasio(j) {
            continue;
        }
        for seed in 1..=SEEDS {
            let mut c = j.config(seed).expect("suite job");
            change(j, &mut c);
            reports[i * SEEDS as usize + (seed - 1) as usize] = run(&c);
        }
    }
    evaluate(&jobs, &reports, SEEDS as usize)
}

fn find<'a>(checks: &'a [Check], id: &str) -> &'a Check {
    checks.iter().find(|c| c.id == id).unwrap_or_else(|| panic!("no check {id}"))
}

/// The checks of [QA], with the mechanisms on.
#[test]
fn qasio_checks_not_known_red_pass_with_their_mechanisms() {
    let checks = checks_with(&|_, _| {});
    for c in checks.iter().filter(|c| c.source == "[QA]") {
        if c.known_red.is_none() {
            assert!(c.pass, "{} fails with its mechanism on: {} not in {}..{}", c.id, c.measured, c.min, c.max);
        }
    }
}

#[test]
fn without_discard_qasio_gains_too_little_on_contacts_and_the_burst() {
    let checks = checks_with(&|_, c| c.scenario.phone.fs.discard = false);
    for id in ["qasio-contacts", "qasio-camera-burst"] {
        let c = find(&checks, id);
        assert!(!c.pass, "{id} passes with discard off: {}", c.measured);
    }
}

#[test]
fn without_the_boost_qasio_gains_nothing() {
    let checks = checks_with(&|j, c| {
        if j.policy == "qasio" {
            *c = RunConfig::builtin(j.scenario, "android", Some(j.bg), c.seed).expect("built-in");
            c.scenario.duration_s = j.duration_s.unwrap_or(c.scenario.duration_s);
        }
    });
    for id in ["qasio-contacts", "qasio-camera-burst", "qasio-install"] {
        let c = find(&checks, id);
        assert!(!c.pass, "{id} passes without the boost: {}", c.measured);
    }
}

#[test]
fn throttling_once_per_write_call_breaks_the_install_figures() {
    let checks = checks_with(&|_, c| {
        c.scenario.phone.dirty_throttle = forefront_model::mm::throttle::ThrottleMode::PerCall;
    });
    for id in ["qasio-install", "qasio-install-slowdown"] {
        let c = find(&checks, id);
        assert!(!c.pass, "{id} passes with per-call throttling: {}", c.measured);
    }
}

#[test]
fn a_background_writer_that_recreates_its_file_stalls_fsync_for_minutes() {
    let checks = checks_with(&|j, c| {
        if j.scenario == "qasio-m1" {
            for app in &mut c.scenario.apps {
                let json = serde_json::to_string(&app.threads).unwrap().replace("big{n}.bin", "big.bin");
                app.threads = serde_json::from_str(&json).unwrap();
            }
        }
    });
    let c = find(&checks, "qasio-stock-fsync-p99");
    assert!(!c.pass, "qasio-stock-fsync-p99 passes when the BG writer re-creates its file: {} s", c.measured);
}

#[test]
fn without_the_background_writer_fsync_is_not_inflated() {
    let checks = checks_with(&|j, c| {
        if j.scenario == "qasio-m1" {
            c.bg_apps = 0;
        }
    });
    let c = find(&checks, "journal-inflates-fsync");
    assert!(!c.pass, "journal-inflates-fsync passes without a BG writer: {}", c.measured);
}
