//! The FTC + VT-CFS [VT] and Cells [CE] checks of `forefront sim validate` against the real
//! simulator: each fails with the mechanism it checks switched off, and a check not known red
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
                        ops.insert(i + 1, Op::DropCaches { app: "launcher".into() });
                    }
                }
            }
        }
    }
}

#[test]
fn the_journal_checks_fail_without_ftc_and_vt_cfs() {
    let on = checks(5, &|_, _| {});
    let off = checks(1, &no_ftc_vtcfs);
    for id in ["vtcfs-journal-response", "vtcfs-journal-preemption", "vtcfs-journal-dispatch"] {
        let c = find(&off, id);
        assert!(!c.pass, "{id} passed without FTC and VT-CFS: {}", c.measured);
        assert!(c.measured.abs() < 0.1, "{id}: the same system twice differs by {}", c.measured);
        let c = find(&on, id);
        if known_red(id).is_none() {
            assert!(c.pass, "{id} failed with FTC and VT-CFS: {} not in {}..{}", c.measured, c.min, c.max);
        }
    }
    // The Cells switch: warm (cells kept resident) passes, cold fails.
    let c = find(&on, "cells-switch-imperceptible");
    assert!(c.pass, "a warm switch: {} ms", c.measured);
    let cold = checks(1, &cold_cells);
    let c = find(&cold, "cells-switch-imperceptible");
    assert!(!c.pass, "a cold switch passed: {} ms", c.measured);
}
