//! The FTC + VT-CFS [VT] (the journal's and the precursor's) and Cells [CE] checks of `forefront
//! sim validate` against the real simulator: each fails with the mechanism it checks switched off, and a check not known red
//! passes with it on. Runs the whole suite (every check needs its jobs): with the mechanisms on
//! at `scripts/validate`'s first set (seeds 1–5: the dispatch figure is a mean over rare long
//! waits and needs them), with a mechanism off at seed 1 only (the figures then sit far outside
//! their ranges: a system compared with itself, or every switch cold).

use forefront_sim::{run, RunConfig};
use forefront_validate::{evaluate, known_red, suite, Check, Job};
use forefront_workload::Op;

/// The suite's checks over seeds 1..=`seeds`, with every job's configuration changed by `off` first.
fn checks(seeds: u64, off: &dyn Fn(&Job, &mut RunConfig)) -> Vec<Check> {
    let jobs = suite();
    let mut reports = vec![];
    for j in &jobs {
        for seed in 1..=seeds {
            let mut c = j.config(seed).expect("a suite job's configuration");
            off(j, &mut c);
            reports.push(run(&c));
        }
    }
    evaluate(&jobs, &reports, seeds as usize)
}

/// The suite at seeds 1–5 with every mechanism on, run once for both tests.
fn on() -> &'static [Check] {
    static ON: std::sync::OnceLock<Vec<Check>> = std::sync::OnceLock::new();
    ON.get_or_init(|| checks(5, &|_, _| {}))
}

fn find<'a>(cs: &'a [Check], id: &str) -> &'a Check {
    cs.iter().find(|c| c.id == id).unwrap_or_else(|| panic!("no check {id}"))
}

/// FTC and VT-CFS removed: the journal's system runs as stock Android (CFS, no promotion).
fn no_ftc_vtcfs(j: &Job, c: &mut RunConfig) {
    if j.scenario == "ftc-aviary" && j.policy == "ftc+vt-cfs" {
        c.policy = forefront_policy::Policy::by_name("android").expect("a policy");
    }
}

/// Virtual phones not kept resident: every switch finds the new cell's launcher cold (its
/// pages dropped when it wakes), as if a background VP were stopped instead of kept running.
fn cold_cells(j: &Job, c: &mut RunConfig) {
    if j.scenario != "cells-switch" {
        return;
    }
    for app in c.scenario.apps.iter_mut().filter(|a| a.name == "launcher") {
        for t in &mut app.threads {
            for op in &mut t.ops {
                if let Op::Repeat { ops, .. } = op {
                    if let Some(i) = ops.iter().position(|o| matches!(o, Op::Wait { .. })) {
                        ops.insert(i + 1, Op::DropCaches { app: "launcher".into(), inodes: false });
                    }
                }
            }
        }
    }
}

/// The editor's AsyncTask workers in the foreground CPU group (as if Android did not put them in
/// the background group), in the precursor's scenario.
fn workers_in_fg_group(j: &Job, c: &mut RunConfig) {
    if j.scenario != "ftc-photo-editor" {
        return;
    }
    for app in c.scenario.apps.iter_mut().filter(|a| a.name == "editor") {
        for t in &mut app.threads {
            t.background_priority = false;
        }
    }
}

/// FTC removed from the precursor's FTC job, VT-CFS from its tick jobs (stock CFS instead).
fn precursor_policies_off(j: &Job, c: &mut RunConfig) {
    if j.scenario == "ftc-photo-editor" && (j.policy == "ftc" || j.tick_ms.is_some()) {
        c.policy = forefront_policy::Policy::by_name("android").expect("a policy");
    }
}

#[test]
fn the_precursor_checks_fail_without_their_mechanisms() {
    let on = on();
    for id in ["bg-cpu-starves-fg-workers", "ftc-shortens-taps", "vtcfs-tick-bounds-preemption"] {
        let c = find(on, id);
        assert!(c.pass, "{id} failed with its mechanism: {} not in {}..{}", c.measured, c.min, c.max);
    }
    // Workers in the foreground group: background CPU apps barely slow the tap.
    let fg_workers = checks(1, &workers_in_fg_group);
    let c = find(&fg_workers, "bg-cpu-starves-fg-workers");
    assert!(!c.pass, "passed with the workers in the FG group: {}", c.measured);
    // No FTC, no VT-CFS: no reduction, and preemption waits as long as CFS's slices.
    let off = checks(1, &precursor_policies_off);
    for id in ["ftc-shortens-taps", "vtcfs-tick-bounds-preemption"] {
        let c = find(&off, id);
        assert!(!c.pass, "{id} passed without its mechanism: {}", c.measured);
    }
}

#[test]
fn the_journal_checks_fail_without_ftc_and_vt_cfs() {
    let on = on();
    let off = checks(1, &no_ftc_vtcfs);
    for id in ["vtcfs-journal-response", "vtcfs-journal-preemption", "vtcfs-journal-dispatch"] {
        let c = find(&off, id);
        assert!(!c.pass, "{id} passed without FTC and VT-CFS: {}", c.measured);
        assert!(c.measured.abs() < 0.1, "{id}: the same system twice differs by {}", c.measured);
        let c = find(on, id);
        if known_red(id).is_none() {
            assert!(c.pass, "{id} failed with FTC and VT-CFS: {} not in {}..{}", c.measured, c.min, c.max);
        }
    }
    // The Cells switch: warm (cells kept resident) passes, cold fails.
    let c = find(on, "cells-switch-imperceptible");
    assert!(c.pass, "a warm switch: {} ms", c.measured);
    let cold = checks(1, &cold_cells);
    let c = find(&cold, "cells-switch-imperceptible");
    assert!(!c.pass, "a cold switch passed: {} ms", c.measured);
}
