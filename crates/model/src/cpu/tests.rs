use super::*;

/// Run the scheduler alone: every task has an endless supply of `burst`-ns bursts.
fn run_busy(s: &mut CpuSched, tids: &[Tid], burst: u64, until: SimTime) {
    let mut now = SimTime::ZERO;
    for &t in tids {
        s.wake(t, burst, now);
    }
    let mut changed = vec![];
    loop {
        s.take_changed(&mut changed);
        let next = (0..s.ncores()).filter_map(|c| s.deadline(c).map(|(t, g)| (t, c, g))).min();
        let Some((t, core, gen)) = next else { break };
        if t > until {
            break;
        }
        assert!(t >= now, "time went backwards");
        now = t;
        if let Some(Expired::BurstDone(tid)) = s.expire(core, gen, now) {
            s.continue_burst(tid, burst, now);
        }
    }
}

#[test]
fn group_weights_split_a_contended_core() {
    // One core, FG group 1024 vs BG group 110 (Android), one CPU hog in each.
    let mut s = CpuSched::new(CpuParams { cores: vec![1.0], ..Default::default() }, vec![1024, 1024, 110]);
    s.add_task(0, 1, 1024);
    s.add_task(1, 2, 1024);
    let end = SimTime::from_ms(2_000);
    run_busy(&mut s, &[0, 1], 3_000_000, end);
    let (fg, _) = s.times(0, end);
    let (bg, _) = s.times(1, end);
    let share = fg as f64 / (fg + bg) as f64;
    // 1024 / (1024 + 110) = 0.903
    assert!((share - 0.903).abs() < 0.02, "FG share {share}");
}

#[test]
fn equal_tasks_share_equally_and_bursts_end_on_time() {
    let mut s = CpuSched::new(CpuParams { cores: vec![2.0], ..Default::default() }, vec![1024]);
    s.add_task(0, 0, 1024);
    s.wake(0, 10_000_000, SimTime::ZERO);
    let (t, g) = s.deadline(0).unwrap();
    // 10 ms of work (+5 µs switch) on a 2× core, alone: the slice is extended, the burst ends
    // at 5.0025 ms.
    assert!(t <= SimTime::from_ms(6));
    let mut now = t;
    let mut gen = g;
    loop {
        match s.expire(0, gen, now) {
            Some(Expired::BurstDone(0)) => break,
            _ => {
                let (t2, g2) = s.deadline(0).unwrap();
                now = t2;
                gen = g2;
            }
        }
    }
    assert_eq!(now.ns(), 5_002_500);

    let mut s = CpuSched::new(CpuParams { cores: vec![1.0], ..Default::default() }, vec![1024]);
    for t in 0..3 {
        s.add_task(t, 0, 1024);
    }
    let end = SimTime::from_ms(3_000);
    run_busy(&mut s, &[0, 1, 2], 2_000_000, end);
    let shares: Vec<u64> = (0..3).map(|t| s.times(t, end).0).collect();
    let min = *shares.iter().min().unwrap() as f64;
    let max = *shares.iter().max().unwrap() as f64;
    assert!(max / min < 1.05, "{shares:?}");
}

/// cgroup `cpu.idle`: an idle group's hog gets the weight of SCHED_IDLE (3 against 1024: 0.3 %
/// of a contended core), a non-idle task waking preempts it at once even when the wake-up
/// granularity would not let it, and clearing the flag gives back the group's shares.
#[test]
fn an_idle_group_yields_the_core_and_is_preempted_by_any_wakeup() {
    let mut s = CpuSched::new(CpuParams { cores: vec![1.0], ..Default::default() }, vec![1024, 1024, 1024]);
    s.add_task(0, 1, 1024);
    s.add_task(1, 2, 1024);
    s.set_group_idle(2, true, SimTime::ZERO);
    assert!(s.group_is_idle(2) && s.group_weight(2) == WEIGHT_IDLEPRIO);
    let end = SimTime::from_ms(2_000);
    run_busy(&mut s, &[0, 1], 3_000_000, end);
    let (fg, _) = s.times(0, end);
    let (idle, _) = s.times(1, end);
    let share = idle as f64 / (fg + idle) as f64;
    assert!(share < 0.01, "idle group's share {share}");
    // Shares set while idle are kept for later; clearing restores them.
    s.set_group_shares(2, 512, end);
    assert_eq!(s.group_weight(2), WEIGHT_IDLEPRIO);
    s.set_group_idle(2, false, end);
    assert_eq!(s.group_weight(2), 512);

    // Wake-up preemption: the idle group's task hogs the core; a task of a non-idle group that
    // has run more (so CFS alone would not preempt) wakes and takes the core at once.
    let preempts = |idle: bool| {
        let mut s = CpuSched::new(CpuParams { cores: vec![1.0], ..Default::default() }, vec![1024, 1024, 1024]);
        s.add_task(0, 1, 1024);
        s.add_task(1, 2, 1024);
        s.set_group_idle(2, idle, SimTime::ZERO);
        // Task 0 runs 200 ms first (its group's vruntime is far ahead), then sleeps.
        run_busy(&mut s, &[0], 200_000_000, SimTime::from_ms(199));
        let mut now = SimTime::from_ms(199);
        while s.running_on(0) == Some(0) {
            let (t, g) = s.deadline(0).unwrap();
            now = t;
            if let Some(Expired::BurstDone(0)) = s.expire(0, g, now) {
                s.stop(0, now);
            }
        }
        s.wake(1, 1_000_000_000, now);
        let now = now.after(1_000_000);
        let (t, g) = s.deadline(0).unwrap();
        if t <= now {
            s.expire(0, g, t);
        }
        s.wake(0, 1_000_000, now);
        s.running_on(0) == Some(0)
    };
    assert!(preempts(true), "a non-idle wake-up preempts an idle group's task");
    assert!(!preempts(false), "without cpu.idle the far-ahead waker waits");
}

#[test]
fn woken_sleeper_preempts_a_hog() {
    let mut s = CpuSched::new(CpuParams { cores: vec![1.0], ..Default::default() }, vec![1024]);
    s.add_task(0, 0, 1024);
    s.add_task(1, 0, 1024);
    // Task 0 hogs the core for 100 ms of virtual time first.
    s.wake(0, 1_000_000_000, SimTime::ZERO);
    let mut now = SimTime::ZERO;
    while now < SimTime::from_ms(100) {
        let (t, g) = s.deadline(0).unwrap();
        now = t;
        s.expire(0, g, now);
    }
    s.wake(1, 1_000_000, now);
    assert_eq!(s.running_on(0), Some(1), "the sleeper must preempt the hog");
    assert_eq!(s.preemptions, 1);
}

#[test]
fn idle_cores_take_woken_tasks_and_pull_queued_ones() {
    let mut s = CpuSched::new(CpuParams { cores: vec![1.0, 1.0], ..Default::default() }, vec![1024]);
    for t in 0..3 {
        s.add_task(t, 0, 1024);
    }
    s.wake(0, 50_000_000, SimTime::ZERO);
    s.wake(1, 50_000_000, SimTime::ZERO);
    s.wake(2, 50_000_000, SimTime::ZERO);
    assert!(s.running_on(0).is_some() && s.running_on(1).is_some());
    // Finish whatever runs on core 1 by stopping it: core 1 must pull the queued task.
    let on1 = s.running_on(1).unwrap();
    let (t, g) = s.deadline(1).unwrap();
    let _ = (t, g);
    s.cores[1].burst_done = true;
    s.stop(on1, SimTime::from_ms(1));
    assert!(s.running_on(1).is_some(), "core 1 pulled the queued task");
}

#[test]
fn cpusets_confine_groups_and_wakeups_prefer_fast_idle_cores() {
    let mut s = CpuSched::new(CpuParams { cores: vec![1.0, 1.0, 0.5, 0.5], ..Default::default() }, vec![1024, 1024, 110]);
    s.set_group_cpus(2, 0b1100);
    for t in 0..4 {
        s.add_task(t, if t < 2 { 1 } else { 2 }, 1024);
    }
    // A foreground task goes to a big core, background ones only to little cores.
    s.wake(0, 50_000_000, SimTime::ZERO);
    assert!(s.running_on(0) == Some(0) || s.running_on(1) == Some(0));
    s.wake(2, 50_000_000, SimTime::ZERO);
    s.wake(3, 50_000_000, SimTime::ZERO);
    assert!(s.running_on(2).is_some() && s.running_on(3).is_some(), "BG on the little cores");
    assert_eq!(s.running_on(1).or(s.running_on(0)).map(|t| t < 2), Some(true));
    // The second big core stays free of background work even while it idles.
    s.wake(1, 50_000_000, SimTime::ZERO);
    let bigs: Vec<_> = [0, 1].iter().map(|&c| s.running_on(c)).collect();
    assert!(bigs.contains(&Some(0)) && bigs.contains(&Some(1)), "{bigs:?}");
}

fn vt(cores: usize, tick_ms: f64) -> CpuParams {
    CpuParams { cores: vec![1.0; cores], scheduler: SchedKind::VtCfs, tick_ms, ..Default::default() }
}

/// Like [`run_busy`], returning every instant a core timer fired.
fn run_busy_timers(s: &mut CpuSched, tids: &[Tid], burst: u64, until: SimTime) -> Vec<SimTime> {
    let mut now = SimTime::ZERO;
    for &t in tids {
        s.wake(t, burst, now);
    }
    let mut fired = vec![];
    let mut changed = vec![];
    loop {
        s.take_changed(&mut changed);
        let next = (0..s.ncores()).filter_map(|c| s.deadline(c).map(|(t, g)| (t, c, g))).min();
        let Some((t, core, gen)) = next else { break };
        if t > until {
            break;
        }
        now = t;
        fired.push(t);
        if let Some(Expired::BurstDone(tid)) = s.expire(core, gen, now) {
            s.continue_burst(tid, burst, now);
        }
    }
    fired
}

#[test]
fn vtcfs_preempts_at_every_tick_when_tasks_compete() {
    // Two equal hogs on one core, λ = 2 ms, bursts far longer than a tick: every timer is a
    // tick boundary and every tick hands the core to the other task.
    let mut s = CpuSched::new(vt(1, 2.0), vec![1024]);
    s.add_task(0, 0, 1024);
    s.add_task(1, 0, 1024);
    let end = SimTime::from_ms(1_000);
    let fired = run_busy_timers(&mut s, &[0, 1], 1_000_000_000, end);
    assert!(fired.iter().all(|t| t.ns() % 2_000_000 == 0), "a timer off the tick grid");
    assert!((495..=500).contains(&s.tick_preemptions), "{} tick preemptions in 500 ticks", s.tick_preemptions);
    assert_eq!(s.preemptions, 0, "no wake-up in this run: every preemption was a tick's");
    let (a, b) = (s.times(0, end).0 as f64, s.times(1, end).0 as f64);
    assert!((a / b - 1.0).abs() < 0.01, "equal shares: {a} vs {b}");
}

#[test]
fn vtcfs_alone_has_no_tick_events_and_weights_still_share() {
    // Alone: the only timer is the burst's end.
    let mut s = CpuSched::new(vt(1, 1.0), vec![1024]);
    s.add_task(0, 0, 1024);
    let fired = run_busy_timers(&mut s, &[0], 50_000_000, SimTime::from_ms(1_000));
    // (each burst also pays the 5 µs context switch of its first dispatch)
    assert_eq!(fired.len(), 19, "one timer per 50 ms burst, no tick in between: {fired:?}");
    assert!(fired.iter().enumerate().all(|(i, t)| t.ns() == (i as u64 + 1) * 50_000_000 + 5_000), "{fired:?}");
    assert_eq!(s.tick_preemptions, 0);
    // Groups 1024 vs 110 still split a contended core by weight (through vruntime).
    let mut s = CpuSched::new(vt(1, 1.0), vec![1024, 1024, 110]);
    s.add_task(0, 1, 1024);
    s.add_task(1, 2, 1024);
    let end = SimTime::from_ms(2_000);
    run_busy(&mut s, &[0, 1], 3_000_000, end);
    let (fg, bg) = (s.times(0, end).0 as f64, s.times(1, end).0 as f64);
    assert!((fg / (fg + bg) - 0.903).abs() < 0.02, "FG share {}", fg / (fg + bg));
}

/// Run one hog on a core for `ms`, then wake task 1 (after a long sleep in which it ran as
/// much as the hog) and return when it first runs.
fn wake_behind_hog(params: CpuParams, interactive: bool) -> (SimTime, SimTime) {
    let mut s = CpuSched::new(params, vec![1024]);
    s.add_task(0, 0, 1024);
    s.add_task(1, 0, 1024);
    s.add_task(2, 0, 1024);
    s.record_latencies();
    s.set_interactive(1, interactive);
    // Tasks 0 and 2 share the core for 101 ms; then task 1 wakes with the vruntime of a task
    // that ran just as much (it would queue behind both in plain vruntime order).
    s.wake(0, 1_000_000_000, SimTime::ZERO);
    s.wake(2, 1_000_000_000, SimTime::ZERO);
    let mut now = SimTime::ZERO;
    let wake_at = SimTime::from_ns(101_300_000);
    loop {
        let (t, g) = s.deadline(0).unwrap();
        if t > wake_at {
            break;
        }
        now = t;
        s.expire(0, g, now);
    }
    let _ = now;
    s.tasks[1].vruntime = s.cores[0].min_vruntime + 5_000_000;
    s.wake(1, 1_000_000, wake_at);
    let mut changed = vec![];
    loop {
        s.take_changed(&mut changed);
        if s.running_on(0) == Some(1) {
            let mut eps = vec![];
            s.take_latencies(&mut eps);
            let ep = eps.iter().find(|e| e.0 == 1).expect("an episode for task 1");
            assert_eq!(ep.1, WaitKind::Dispatch);
            return (wake_at, wake_at.after(ep.2));
        }
        let (t, g) = s.deadline(0).unwrap();
        s.expire(0, g, t);
    }
}

#[test]
fn vtcfs_runs_a_woken_interactive_task_at_the_next_tick() {
    let (woke, ran) = wake_behind_hog(vt(1, 2.0), true);
    // Woken at 101.3 ms: it runs at the next tick (102 ms) at the latest.
    assert!(ran <= SimTime::from_ms(102), "woke {woke:?}, ran {ran:?}");
    // Not marked: it waits in vruntime order, behind the running and the queued hog.
    let (_, ran_plain) = wake_behind_hog(vt(1, 2.0), false);
    assert!(ran_plain > SimTime::from_ms(104), "unmarked task ran at {ran_plain:?}");
}

#[test]
fn latency_episodes_split_dispatch_from_preemption() {
    let mut s = CpuSched::new(vt(1, 1.0), vec![1024]);
    s.add_task(0, 0, 1024);
    s.add_task(1, 0, 1024);
    s.record_latencies();
    run_busy(&mut s, &[0, 1], 1_000_000_000, SimTime::from_ms(20));
    let mut eps = vec![];
    s.take_latencies(&mut eps);
    // Task 0 dispatched at once; task 1 waited for the first tick; then preemptions of a tick each.
    assert_eq!(eps[0], (0, WaitKind::Dispatch, 0));
    assert_eq!(eps[1], (1, WaitKind::Dispatch, 1_000_000));
    assert!(eps[2..].iter().all(|e| e.1 == WaitKind::Preempted && e.2 == 1_000_000), "{eps:?}");
    assert!(eps.len() >= 19);
    assert!(s.context_switches >= 19);
}

#[test]
fn a_wakeup_preemption_charges_the_preempted_stint() {
    // Regression: the preempted task's last stint was not charged (no run time, no vruntime,
    // no burst progress, no core busy time) when a wake-up preempted it.
    for kind in [SchedKind::Cfs, SchedKind::VtCfs] {
        let mut s =
            CpuSched::new(CpuParams { cores: vec![1.0, 1.0], scheduler: kind, ..Default::default() }, vec![1024, 1024, 110]);
        s.add_task(0, 1, 1024); // a periodic FG task: 2 ms every 16.7 ms
        s.add_task(1, 2, 1024); // two BG hogs
        s.add_task(2, 2, 1024);
        s.wake(1, 100_000_000, SimTime::ZERO);
        s.wake(2, 100_000_000, SimTime::ZERO);
        let mut next_fg = SimTime::from_ms(5);
        let end = SimTime::from_ms(5000);
        let mut now;
        let mut changed = vec![];
        loop {
            s.take_changed(&mut changed);
            let next = (0..2).filter_map(|c| s.deadline(c).map(|(t, g)| (t, c, g))).min();
            if next_fg <= next.map_or(SimTime::MAX, |x| x.0) {
                if !s.is_runnable(0) {
                    s.wake(0, 2_000_000, next_fg);
                }
                next_fg = next_fg.after(16_700_000);
                continue;
            }
            let Some((t, core, gen)) = next else { break };
            if t > end {
                break;
            }
            now = t;
            if let Some(Expired::BurstDone(tid)) = s.expire(core, gen, now) {
                if tid == 0 {
                    s.stop(0, now);
                } else {
                    s.continue_burst(tid, 100_000_000, now);
                }
            }
            // Every runnable nanosecond of a hog is charged as running or waiting.
            for t in [1, 2] {
                let (run, wait) = s.times(t, now);
                assert!(run + wait + 1 >= now.ns(), "{kind:?}: task {t} lost {} ns by {now:?}", now.ns() - run - wait);
            }
        }
        // The cores were never idle: three tasks on two cores.
        let ran: u64 = (0..3).map(|t| s.times(t, end).0).sum();
        assert!(ran as f64 >= 0.995 * 2.0 * end.ns() as f64, "{kind:?}: the tasks ran {ran} ns of {}", 2 * end.ns());
    }
}

mod prop {
    use super::*;
    use proptest::prelude::*;

    /// One step of a random workload: wake a task with a burst, let the next timer fire, or
    /// toggle a task's interactive mark.
    #[derive(Clone, Debug)]
    enum Step {
        Wake { task: usize, burst_us: u64 },
        Fire,
        Mark { task: usize },
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            (0usize..6, 50u64..30_000).prop_map(|(task, burst_us)| Step::Wake { task, burst_us }),
            Just(Step::Fire),
            Just(Step::Fire),
            (0usize..6).prop_map(|task| Step::Mark { task }),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// Both disciplines keep the books and conserve work: every nanosecond of a runnable task
        /// is charged as running or waiting, no core idles while a task it may run waits, and a
        /// task finishing its burst leaves (here) at once.
        #[test]
        fn cfs_and_vtcfs_conserve_time_and_work(
            vt in any::<bool>(),
            cores in 1usize..4,
            groups in proptest::collection::vec(0u16..3, 6),
            steps in proptest::collection::vec(step(), 1..200),
        ) {
            let kind = if vt { SchedKind::VtCfs } else { SchedKind::Cfs };
            let params = CpuParams { cores: vec![1.0; cores], scheduler: kind, tick_ms: 1.0, ..Default::default() };
            let mut s = CpuSched::new(params, vec![1024, 1024, 110]);
            for (t, &g) in groups.iter().enumerate() {
                s.add_task(t as Tid, g, 1024);
            }
            let mut now = SimTime::ZERO;
            // When each task last became runnable, for the accounting check.
            let mut since: Vec<Option<(SimTime, u64, u64)>> = vec![None; 6];
            let mut changed = vec![];
            for st in steps {
                match st {
                    Step::Wake { task, burst_us } => {
                        if !s.is_runnable(task as Tid) {
                            let (run, wait) = s.times(task as Tid, now);
                            since[task] = Some((now, run, wait));
                            s.wake(task as Tid, burst_us * 1000, now);
                        }
                    }
                    Step::Mark { task } => {
                        let on = !s.is_interactive(task as Tid);
                        s.set_interactive(task as Tid, on);
                    }
                    Step::Fire => {
                        s.take_changed(&mut changed);
                        let next = (0..s.ncores()).filter_map(|c| s.deadline(c).map(|(t, g)| (t, c, g))).min();
                        if let Some((t, core, gen)) = next {
                            prop_assert!(t >= now, "time went backwards");
                            now = t;
                            if let Some(Expired::BurstDone(tid)) = s.expire(core, gen, now) {
                                s.stop(tid, now);
                                since[tid as usize] = None;
                            }
                        }
                    }
                }
                // Books: a runnable task's running + waiting time grew exactly by the time since
                // it became runnable.
                for (t, sn) in since.iter().enumerate() {
                    if let Some((t0, run0, wait0)) = sn {
                        let (run, wait) = s.times(t as Tid, now);
                        prop_assert_eq!(run + wait - run0 - wait0, now.since(*t0), "task {} lost time ({:?})", t, kind);
                    }
                }
                prop_assert!(s.queued_counts_agree(), "a core's queued count is off ({:?})", kind);
                // Work conservation: an idle core means nothing is queued anywhere.
                let idle = (0..s.ncores()).any(|c| s.running_on(c).is_none());
                let queued = (0..6).any(|t| s.is_runnable(t) && !(0..s.ncores()).any(|c| s.running_on(c) == Some(t)));
                prop_assert!(!(idle && queued), "a core idles while a task waits ({:?})", kind);
            }
        }
    }
}

mod speed {
    use proptest::prelude::*;

    use super::super::Speed;

    fn factors() -> impl Strategy<Value = f64> {
        prop_oneof![(-8i32..=8).prop_map(|e| 2f64.powi(e)), Just(0.75), Just(1.3), 0.01f64..4.0,]
    }

    fn amounts() -> impl Strategy<Value = u64> {
        prop_oneof![0u64..10_000, 0u64..(1 << 40), ((1u64 << 53) - 10)..((1u64 << 53) + 10), Just(u64::MAX >> 12)]
    }

    proptest! {
        /// The integer paths of power-of-two speeds give exactly what the float formulas do.
        #[test]
        fn integer_paths_match_the_float_formulas(factor in factors(), x in amounts()) {
            let s = Speed::new(factor);
            prop_assert_eq!(s.work_in(x), ((x as f64) * factor).round() as u64);
            prop_assert_eq!(s.time_for(x), (x as f64 / factor).ceil() as u64);
        }
    }

    #[test]
    fn powers_of_two_take_the_integer_path() {
        assert_eq!(Speed::new(1.0).pow2, Some(0));
        assert_eq!(Speed::new(0.5).pow2, Some(-1));
        assert_eq!(Speed::new(4.0).pow2, Some(2));
        assert_eq!(Speed::new(0.75).pow2, None);
        assert_eq!(Speed::new(0.0).pow2, None);
        // Half-way cases round away from zero, as f64::round does.
        assert_eq!(Speed::new(0.5).work_in(5), 3);
        assert_eq!(Speed::new(0.25).work_in(6), 2);
        assert_eq!(Speed::new(0.5).time_for(3), 6);
        assert_eq!(Speed::new(2.0).time_for(3), 2);
    }
}

#[test]
fn slices_end_on_the_tick_when_cfs_checks_them_from_the_tick() {
    // Three equal hogs on one core: CFS's slice is 6 ms / 3 = 2 ms (one core: no log2 scaling).
    // Tickless, switches fall every ~2 ms; with the Galaxy Nexus's HZ = 128 tick (7.8125 ms)
    // each stint runs to the first tick after its slice, so every switch is on the tick grid.
    let switch_times = |on_tick: bool| {
        let params =
            CpuParams { cores: vec![1.0], tick_ms: 7.8125, slice_on_tick: on_tick, context_switch_us: 0.0, ..Default::default() };
        let mut s = CpuSched::new(params, vec![1024]);
        for t in 0..3 {
            s.add_task(t, 0, 1024);
            s.wake(t, 1_000_000_000, SimTime::ZERO);
        }
        let mut times = vec![];
        let mut now = SimTime::ZERO;
        while now < SimTime::from_ms(500) {
            let before = s.running_on(0);
            let (t, g) = s.deadline(0).unwrap();
            now = t;
            s.expire(0, g, now);
            if s.running_on(0) != before {
                times.push(now.ns());
            }
        }
        times
    };
    let tickless = switch_times(false);
    let ticked = switch_times(true);
    assert!(tickless.iter().any(|t| t % 7_812_500 != 0), "tickless switches fall off the grid");
    assert!(ticked.iter().all(|t| t % 7_812_500 == 0), "{ticked:?}");
    // Fewer, longer stints: one per tick instead of one per 2 ms slice.
    assert!(ticked.len() * 3 < tickless.len(), "{} vs {}", ticked.len(), tickless.len());
    assert!(ticked.len() >= 60, "a switch at every tick: {}", ticked.len());
}

#[test]
fn a_preempted_run_ends_a_preempted_to_done_episode_when_it_stops() {
    // VT-CFS, λ = 1 ms, two tasks of 3 ms each on one core: task 0 runs 0–1, 2–3, 4–5 ms (first
    // preempted at 1 ms, stops at 5 ms: 4 ms); task 1 runs 1–2, 3–4, 5–6 ms (first preempted
    // at 2 ms, stops at 6 ms: 4 ms). A run never preempted records no such episode. No
    // context-switch cost, so that the stints are exact.
    let mut s = CpuSched::new(CpuParams { context_switch_us: 0.0, ..vt(1, 1.0) }, vec![1024]);
    s.add_task(0, 0, 1024);
    s.add_task(1, 0, 1024);
    s.add_task(2, 0, 1024);
    s.record_latencies();
    s.wake(0, 3_000_000, SimTime::ZERO);
    s.wake(1, 3_000_000, SimTime::ZERO);
    let mut changed = vec![];
    let mut done = vec![];
    while let Some((t, core, gen)) = (0..1).filter_map(|c| s.deadline(c).map(|(t, g)| (t, c, g))).min() {
        s.take_changed(&mut changed);
        if let Some(Expired::BurstDone(tid)) = s.expire(core, gen, t) {
            s.stop(tid, t);
            done.push((tid, t));
        }
    }
    assert_eq!(done, vec![(0, SimTime::from_ms(5)), (1, SimTime::from_ms(6))]);
    // Task 2 alone: dispatched, never preempted.
    s.wake(2, 2_000_000, SimTime::from_ms(10));
    while let Some((t, core, gen)) = (0..1).filter_map(|c| s.deadline(c).map(|(t, g)| (t, c, g))).min() {
        if let Some(Expired::BurstDone(tid)) = s.expire(core, gen, t) {
            s.stop(tid, t);
        }
    }
    let mut eps = vec![];
    s.take_latencies(&mut eps);
    let to_done: Vec<_> = eps.iter().filter(|e| e.1 == WaitKind::PreemptedToDone).collect();
    assert_eq!(to_done, vec![&(0, WaitKind::PreemptedToDone, 4_000_000), &(1, WaitKind::PreemptedToDone, 4_000_000)]);
}

/// One core: task 0 runs 6 ms (its vruntime is charged at that burst's end), then a 20 ms
/// burst (kernel code if `kernel`); task 1 wakes at 8 ms with a 0.1 ms kernel burst, placed
/// half a latency (3 ms) behind task 0's 6 ms of vruntime: over the 1 ms wake-up granularity,
/// so CFS preempts. Returns the scheduler just after the wake-up, and its time.
fn a_writer_woken_beside(params: CpuParams, kernel: bool) -> (CpuSched, SimTime) {
    let mut s = CpuSched::new(params, vec![1024]);
    s.add_task(0, 0, 1024);
    s.add_task(1, 0, 1024);
    s.set_kernel(0, kernel);
    s.wake(0, 6_000_000, SimTime::ZERO);
    let t = loop {
        let (t, g) = s.deadline(0).unwrap();
        if s.expire(0, g, t) == Some(Expired::BurstDone(0)) {
            break t;
        }
    };
    s.continue_burst(0, 20_000_000, t);
    let at = SimTime::from_ms(8);
    assert!(s.deadline(0).unwrap().0 > at);
    s.set_kernel(1, true);
    s.wake(1, 100_000, at);
    (s, at)
}

/// `preempt = "none"`: a wake-up that would preempt a task in the middle of a kernel burst (a
/// system call's work) waits for the burst's end, where the task gives the CPU up on its way
/// out; a user burst (a `compute`) and every burst under `full` are preempted at once.
#[test]
fn without_kernel_preemption_a_wakeup_waits_for_the_system_calls_end() {
    // (preempt, the running burst is kernel code) -> when the woken task gets the core.
    let run = |preempt: Preempt, kernel: bool| -> SimTime {
        let (mut s, at) = a_writer_woken_beside(CpuParams { cores: vec![1.0], preempt, ..Default::default() }, kernel);
        if s.running_on(0) == Some(1) {
            return at;
        }
        // Not preempted: the core's next event is task 0's burst end, and task 0 gives the
        // core up when it continues.
        let (t, g) = s.deadline(0).unwrap();
        assert_eq!(s.expire(0, g, t), Some(Expired::BurstDone(0)));
        s.set_kernel(0, kernel);
        s.continue_burst(0, 10_000_000, t);
        assert_eq!(s.running_on(0), Some(1), "preempted at the burst's end");
        t
    };
    let at = SimTime::from_ms(8);
    assert_eq!(run(Preempt::Full, true), at);
    assert_eq!(run(Preempt::Full, false), at);
    assert_eq!(run(Preempt::None, false), at, "user code is preempted at once");
    let deferred = run(Preempt::None, true);
    // The end of the 20 ms burst that began at 6 ms.
    assert!(deferred >= SimTime::from_ms(26) && deferred < SimTime::from_ms(27), "{deferred:?}");
}

/// `preempt = "none"`: a slice's end inside a kernel burst is deferred to the burst's end too.
#[test]
fn without_kernel_preemption_a_slice_ends_with_the_kernel_burst() {
    let shares = |preempt: Preempt| {
        let mut s = CpuSched::new(CpuParams { cores: vec![1.0], preempt, ..Default::default() }, vec![1024]);
        s.add_task(0, 0, 1024);
        s.add_task(1, 0, 1024);
        s.set_kernel(0, true);
        s.set_kernel(1, true);
        // Two 50 ms kernel bursts on one core: under `full` they alternate by slices (6 ms);
        // under `none` the first runs its whole burst before the second starts.
        s.wake(0, 50_000_000, SimTime::ZERO);
        s.wake(1, 50_000_000, SimTime::ZERO);
        let mut now = SimTime::ZERO;
        let mut first_done = None;
        while let Some((t, g)) = s.deadline(0) {
            now = t;
            if let Some(Expired::BurstDone(tid)) = s.expire(0, g, now) {
                first_done.get_or_insert((tid, now));
                s.stop(tid, now);
            }
        }
        (first_done.unwrap(), now)
    };
    let ((_, full_first), full_end) = shares(Preempt::Full);
    let ((_, none_first), none_end) = shares(Preempt::None);
    assert!(full_first > SimTime::from_ms(90), "interleaved: the first ends near the end ({full_first:?})");
    assert!(none_first < SimTime::from_ms(51), "run to completion ({none_first:?})");
    assert!(full_end >= SimTime::from_ms(100) && none_end >= SimTime::from_ms(100));
}

fn eevdf(cores: usize, slice_on_tick: bool) -> CpuParams {
    // Linux 6.15+: base slice 0.70 ms (× 1 + log2(ncpus)); HZ 250.
    CpuParams {
        cores: vec![1.0; cores],
        scheduler: SchedKind::Eevdf,
        min_granularity_ms: 0.7,
        tick_ms: 4.0,
        slice_on_tick,
        ..Default::default()
    }
}

/// Step core 0 until `until`, continuing every finished burst of `hog` with another of `burst`
/// and stopping any other task whose burst ends; returns the instants other tasks stopped.
fn step_until(s: &mut CpuSched, hog: Tid, burst: u64, mut now: SimTime, until: SimTime) -> (SimTime, Vec<(Tid, SimTime)>) {
    let mut stops = vec![];
    while let Some((t, g)) = s.deadline(0) {
        if t > until {
            break;
        }
        now = t;
        if let Some(Expired::BurstDone(tid)) = s.expire(0, g, now) {
            if tid == hog {
                s.continue_burst(tid, burst, now);
            } else {
                s.stop(tid, now);
                stops.push((tid, now));
            }
        }
    }
    (now.max(until), stops)
}

#[test]
fn eevdf_hogs_share_equally_in_requests_of_a_base_slice() {
    let mut s = CpuSched::new(eevdf(1, false), vec![1024]);
    for t in 0..3 {
        s.add_task(t, 0, 1024);
    }
    let end = SimTime::from_ms(3_000);
    run_busy(&mut s, &[0, 1, 2], 50_000_000, end);
    let runs: Vec<u64> = (0..3).map(|t| s.times(t, end).0).collect();
    let total: u64 = runs.iter().sum();
    for r in &runs {
        let share = *r as f64 / total as f64;
        assert!((share - 1.0 / 3.0).abs() < 0.01, "shares {runs:?}");
    }
    // One request of the base slice (0.7 ms × 1 = 0.7 ms on one core) between switches.
    let per_switch = total as f64 / s.context_switches as f64;
    assert!((per_switch - 700_000.0).abs() < 20_000.0, "{per_switch} ns per switch");
}

#[test]
fn eevdf_a_wakeup_preempts_only_with_lag() {
    // One core; task 0 a CPU hog, task 1 wakes for 50 µs bursts.
    let setup = || {
        let mut s = CpuSched::new(eevdf(1, true), vec![1024]);
        s.add_task(0, 0, 1024);
        s.add_task(1, 0, 1024);
        s.wake(0, 100_000_000, SimTime::ZERO);
        s
    };
    // Task 1's first wake-up: a new task, no lag. The hog runs alone and gets a new request
    // (deadline 0.7 ms of vruntime on) at each tick (8 ms, 12 ms, ...), where its slice is checked.
    // Woken 0.1 ms after the 8 ms tick, the hog is eligible and protected: no preemption, and
    // the woken task waits for the next check, the 12 ms tick.
    let mut s = setup();
    let at = SimTime::from_ns(8_100_000);
    step_until(&mut s, 0, 100_000_000, SimTime::ZERO, at);
    s.wake(1, 50_000, at);
    assert_eq!(s.running_on(0), Some(0), "run to parity: the hog keeps its request");
    let (_, stops) = step_until(&mut s, 0, 100_000_000, at, SimTime::from_ms(20));
    let (_, done) = stops[0];
    assert!(done >= SimTime::from_ms(12) && done < SimTime::from_ns(12_100_000), "{done:?}");

    // Woken 2.1 ms after a tick, the hog's request (0.7 ms) is over, though not yet noticed:
    // the wake-up's update of the running task finds it and reschedules (`update_curr`).
    let mut s = setup();
    let at = SimTime::from_ns(10_100_000);
    step_until(&mut s, 0, 100_000_000, SimTime::ZERO, at);
    s.wake(1, 50_000, at);
    assert_eq!(s.running_on(0), Some(1), "the hog's request had ended");

    // A task that slept owed service (positive lag) makes the hog ineligible: it preempts
    // even inside the hog's protected request.
    let mut s = setup();
    let at = SimTime::from_ns(8_100_000);
    step_until(&mut s, 0, 100_000_000, SimTime::ZERO, at);
    s.wake(1, 50_000, at);
    let (now, stops) = step_until(&mut s, 0, 100_000_000, at, SimTime::from_ms(14));
    assert_eq!(stops.len(), 1);
    // It waited to the 12 ms tick, and V moved on meanwhile: it left owed service.
    assert!(s.tasks[1].vlag > 0, "lag {}", s.tasks[1].vlag);
    let again = SimTime::from_ns(16_100_000);
    step_until(&mut s, 0, 100_000_000, now, again);
    s.wake(1, 50_000, again);
    assert_eq!(s.running_on(0), Some(1), "owed service: preempts at once");
}

#[test]
fn eevdf_a_short_sleeper_beside_a_hog_mostly_preempts_and_sometimes_waits_a_request() {
    // One core, a hog and a task that wakes every 300 µs for 60 µs (a launch's reads between
    // disk waits): its lag buys quick preemptions until it has used its share, then it waits
    // for the hog's request to end (at the next tick), and the wait gives it lag again.
    let mut s = CpuSched::new(eevdf(1, true), vec![1024]);
    s.add_task(0, 0, 1024);
    s.add_task(1, 0, 1024);
    s.record_latencies();
    s.wake(0, 100_000_000, SimTime::ZERO);
    let mut now = SimTime::from_ms(5);
    step_until(&mut s, 0, 100_000_000, SimTime::ZERO, now);
    let mut waits = vec![];
    for _ in 0..400 {
        s.wake(1, 60_000, now);
        let woke = now;
        // Step until the sleeper's burst is done.
        let done = loop {
            let (t, g) = s.deadline(0).expect("a task runs");
            match s.expire(0, g, t) {
                Some(Expired::BurstDone(0)) => s.continue_burst(0, 100_000_000, t),
                Some(Expired::BurstDone(1)) => {
                    s.stop(1, t);
                    break t;
                }
                _ => {}
            }
        };
        waits.push(done.since(woke) - 60_000 - 5_000);
        now = done.after(300_000);
        step_until(&mut s, 0, 100_000_000, done, now);
    }
    let quick = waits.iter().filter(|&&w| w < 100_000).count();
    let long = waits.iter().filter(|&&w| w >= 1_000_000).count();
    assert!(quick > 200, "most wake-ups preempt at once: {quick} of 400");
    assert!(long >= 10, "some wait for the hog's request: {long} of 400");
}

/// Hogs and one sleeper (runs `run` ns, sleeps `sleep` ns) on the cores of `params`: the
/// sleeper's waits from each wake-up to its first instruction (ns), over `rounds` wake-ups.
fn sleeper_beside_hogs(params: CpuParams, hogs: usize, run: u64, sleep: u64, rounds: usize) -> Vec<u64> {
    const HOG: u64 = 100_000_000;
    let cores = params.cores.len();
    let mut s = CpuSched::new(params, vec![1024]);
    let sl = hogs as Tid;
    for t in 0..=sl {
        s.add_task(t, 0, 1024);
    }
    s.record_latencies();
    for t in 0..sl {
        s.wake(t, HOG, SimTime::ZERO);
    }
    let mut next_wake = Some(SimTime::from_ms(20));
    let (mut waits, mut eps, mut done) = (vec![], vec![], 0);
    while done < rounds {
        let ev = (0..cores).filter_map(|c| s.deadline(c).map(|(t, g)| (t, c, g))).min_by_key(|x| x.0);
        match (ev, next_wake) {
            (Some((t, c, g)), w) if w.is_none_or(|w| t < w) => {
                if let Some(Expired::BurstDone(tid)) = s.expire(c, g, t) {
                    if tid == sl {
                        s.stop(sl, t);
                        next_wake = Some(t.after(sleep));
                        done += 1;
                    } else {
                        s.continue_burst(tid, HOG, t);
                    }
                }
            }
            (_, Some(w)) => {
                s.wake(sl, run, w);
                next_wake = None;
            }
            _ => break,
        }
        s.take_latencies(&mut eps);
        waits.extend(eps.drain(..).filter(|&(t, k, _)| t == sl && k == WaitKind::Dispatch).map(|e| e.2));
    }
    waits
}

/// Share (%) of `waits` (ns) longer than 1 ms.
fn share_over_1ms(waits: &[u64]) -> f64 {
    100.0 * waits.iter().filter(|&&w| w > 1_000_000).count() as f64 / waits.len().max(1) as f64
}

/// `scripts/sleeper-probe` on this VM (Linux 6.18.44: EEVDF, HZ 250, 2 vCPUs; three runs of
/// 2,000–3,000 wake-ups each, 2026-11-27, docs/twin.md "twin14"): hogs, the sleeper's run and
/// sleep (µs), and the range of the share (%) of its wake-ups that waited more than 1 ms.
const KERNEL_SLEEPER: [(usize, u64, u64, f64, f64); 5] = [
    (2, 1000, 1000, 20.2, 22.6),
    (4, 1000, 1000, 33.1, 34.2),
    (2, 50, 2000, 0.6, 1.1),
    (4, 50, 2000, 8.4, 9.1),
    (4, 100, 300, 2.9, 3.3),
];

#[test]
fn eevdf_a_sleeper_beside_hogs_waits_a_request_as_often_as_on_the_kernel() {
    // A task that runs briefly and sleeps, beside CPU hogs on 2 cores: how often it waits for a
    // hog's request (to its end, noticed at the tick) instead of preempting at once. The
    // model's share is within 1.5× of the kernel's range (the twin's tolerance, issue 29), ±1
    // point for shares near 0. Left out, a known disagreement (docs/twin.md, twin14): one hog
    // per core at 100 µs / 300 µs, where the kernel waited after 0.4–0.6 % and the model after
    // ~5 %. CFS's wake-up preemption never makes the sleeper wait: the check fails with it.
    let cfs = CpuParams { cores: vec![1.0; 2], slice_on_tick: true, ..Default::default() };
    let mut cfs_out = 0;
    for (hogs, run, sleep, lo, hi) in KERNEL_SLEEPER {
        let band = (lo / 1.5 - 1.0)..=(hi * 1.5 + 1.0);
        let share = share_over_1ms(&sleeper_beside_hogs(eevdf(2, true), hogs, run * 1000, sleep * 1000, 2000));
        assert!(band.contains(&share), "{hogs} hogs, {run}/{sleep} us: EEVDF {share:.1} %, kernel {lo}-{hi} %");
        let share = share_over_1ms(&sleeper_beside_hogs(cfs.clone(), hogs, run * 1000, sleep * 1000, 2000));
        cfs_out += usize::from(!band.contains(&share));
    }
    assert!(cfs_out >= 3, "CFS falls outside the kernel's band in {cfs_out} of 5");
}

/// `preempt = "none"`: the wait between a preempting wake-up and the deferred switch is runtime
/// of the task switched in, not of the one preempted (`rq_clock_skip_update`), except what a
/// tick in between already charged; the time each task really ran does not move.
#[test]
fn a_deferred_preemptions_wait_is_charged_to_the_woken_task() {
    // (preempt, tick ms) -> (writer's vruntime, woken task's vruntime and its vruntime when it
    // woke, the writer's time on the core), read at the switch.
    let run = |preempt: Preempt, tick_ms: f64| {
        // The writer runs 6 ms, then a 20 ms kernel burst; task 1 wakes at 8 ms and preempts it.
        let params = CpuParams { cores: vec![1.0], preempt, tick_ms, context_switch_us: 0.0, ..Default::default() };
        let (mut s, _) = a_writer_woken_beside(params, true);
        let woke_v = s.tasks[1].vruntime;
        if s.running_on(0) != Some(1) {
            let (t, g) = s.deadline(0).unwrap();
            assert_eq!(s.expire(0, g, t), Some(Expired::BurstDone(0)));
            s.continue_burst(0, 10_000_000, t);
        }
        assert_eq!(s.running_on(0), Some(1));
        (s.tasks[0].vruntime, s.tasks[1].vruntime, woke_v, s.tasks[0].run_ns)
    };
    let ms = 1_000_000;
    // Preempted at once: the writer is charged its 8 ms, the woken task nothing yet.
    let (w, v, v0, ran) = run(Preempt::Full, 4.0);
    assert_eq!((w, v - v0, ran), (8 * ms, 0, 8 * ms));
    // Deferred to the burst's end at 26 ms, with no tick in between (a 100 ms tick): the
    // writer ran 26 ms but is charged up to the wake-up, 8 ms; the woken task the 18 ms it
    // waited.
    let (w, v, v0, ran) = run(Preempt::None, 100.0);
    assert_eq!((w, v - v0, ran), (8 * ms, 18 * ms, 26 * ms));
    // With a 4 ms tick the clock was last updated at 24 ms: only the last 2 ms move.
    let (w, v, v0, ran) = run(Preempt::None, 4.0);
    assert_eq!((w, v - v0, ran), (24 * ms, 2 * ms, 26 * ms));
}
