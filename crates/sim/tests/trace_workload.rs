//! A real trace as an app's workload (`trace` op): the testdata scenario replays the Facebook
//! app's MobiGen session as the FG thread.

use forefront_sim::{run, RunConfig};

fn cfg(policy: &str, bg: u32) -> RunConfig {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/scenarios/facebook-trace-update.toml");
    RunConfig::builtin(path, policy, Some(bg), 1).expect("the testdata scenario loads")
}

#[test]
fn the_traced_session_replays_every_write_and_background_updates_slow_it() {
    let alone = run(&cfg("android", 0));
    // 3 sessions of 1246 pwrites, 3.0 MiB each (the trace's own total: 3126640 bytes).
    assert_eq!(alone.metrics.fg_samples_ms.len(), 3);
    assert!(alone.metrics.device_written_mb >= 3.0 * 3.126, "{}", alone.metrics.device_written_mb);
    assert_eq!(alone.invariants.tasks_blocked_without_waker, 0);
    let busy = run(&cfg("android", 2));
    assert!(busy.metrics.fg_ms > 1.5 * alone.metrics.fg_ms, "{} vs {}", busy.metrics.fg_ms, alone.metrics.fg_ms);
}
