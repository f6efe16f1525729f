//! Dirty throttling as Linux 3.10's `balance_dirty_pages` does it (IO-less, per task, per page).
//!
//! Every page a task dirties counts (`current->nr_dirtied`); once a task has dirtied
//! `nr_dirtied_pause` pages it enters [`DirtyThrottle::balance`]:
//! - at or below the **freerun ceiling** `(thresh + bg_thresh) / 2` it goes on unthrottled and
//!   checks again after `dirty_poll_interval` = `2^(ilog2(thresh - dirty) / 2)` pages;
//! - above it, it sleeps `pages_dirtied / task_ratelimit` (less the time since its last pause),
//!   where `task_ratelimit = dirty_ratelimit × pos_ratio`: the device's **dirty_ratelimit**
//!   (tracked every 200 ms towards `write_bw / N` for N throttled dirtiers) times the
//!   **position ratio**, `1 + ((setpoint − dirty)/(limit − setpoint))³` with `setpoint =
//!   (freerun + limit) / 2`, times the bdi control line. A task that dirties little sleeps
//!   little: pauses are proportional to what each task dirtied, not a wait until the system is
//!   below the limit;
//! - pauses shorter than `min_pause` are not taken (the pages are carried over in
//!   `dirty_paused_when`), longer ones are cut at `max_pause` (200 ms);
//! - at or over the limit the rate is 0: the task sleeps `max_pause` and checks again, until
//!   under the limit.
//!
//! Sources (Linux v3.10, mm/page-writeback.c): `balance_dirty_pages_ratelimited`,
//! `balance_dirty_pages`, `bdi_position_ratio`, `bdi_update_dirty_ratelimit`,
//! `bdi_update_write_bandwidth`, `bdi_min_pause`, `dirty_poll_interval`, `INIT_BW` (100 MB/s),
//! `MAX_PAUSE` (HZ/5), `BANDWIDTH_INTERVAL` (HZ/5), `DIRTY_POLL_THRESH` (32 pages).
//!
//! # Simplifications versus the kernel
//! - One backing device (bdi) for the machine: `bdi_thresh = thresh`, `bdi_dirty = dirty`
//!   (the simulator's thresholds are global, `mm::writeback::Thresholds`); the limit is the
//!   threshold itself (`hard_dirty_limit` follows it from above, slowly).
//! - Batched per write() call: the simulator counts the pages a call dirtied and balances once
//!   at the end of the call with all of them (the kernel checks every `nr_dirtied_pause` pages
//!   inside the call). The pause is computed from the pages dirtied, so the total sleep over a
//!   long write is the same; what is lost is where inside a call the sleeps fall.
//! - The bandwidth estimates are updated when a task balances (the kernel also updates the
//!   write bandwidth from the flusher); `bdi_max_pause` is taken as `MAX_PAUSE` (200 ms):
//!   with the scenarios' dirty limits (~10–100 MiB over freerun) and eMMC/UFS speeds its
//!   formula reaches the cap (`bdi_dirty / (bw / 16)` jiffies ≥ 20 jiffies).
//! - The per-CPU `bdp_ratelimits` / `ratelimit_pages` fallback (which makes a task balance
//!   early when many tasks dirty at once) and the 8-page check interval while `dirty_exceeded`
//!   are left out: with the balance batched per call they would only move checks inside it.
//! - `HZ` = 100 (assumption: ARM Android kernels of 2014 used 100 or 200; it only sets the
//!   granularity of pauses and of the 3 s bandwidth period, rounded up to 512 jiffies).
//!
//! # Invariants
//! - A task over the limit never proceeds: `balance` returns a pause with `recheck` until the
//!   dirty pages it sees are under the limit.
//! - Same inputs, same pauses: the state is per task id in a map only looked up, never
//!   iterated.

use std::collections::HashMap;

use forefront_engine::SimTime;
use serde::{Deserialize, Serialize};

use crate::prov::Tid;

/// Kernel tick rate assumed (see the module doc).
pub const HZ: u64 = 100;
const JIFFY_NS: u64 = 1_000_000_000 / HZ;
/// `MAX_PAUSE`: the longest single sleep, HZ/5 jiffies (200 ms).
pub const MAX_PAUSE_JIFFIES: u64 = HZ / 5;
/// `BANDWIDTH_INTERVAL`: the estimates are updated at most every HZ/5 (200 ms).
const BANDWIDTH_INTERVAL_NS: u64 = 200_000_000;
/// `INIT_BW`: 100 MB/s in 4 KiB pages per second, the estimates' starting point.
pub const INIT_BW: u64 = 100 << (20 - 12);
/// `DIRTY_POLL_THRESH`: 32 pages (128 KiB).
const DIRTY_POLL_THRESH: u64 = 32;
/// `roundup_pow_of_two(3 * HZ)`: the write-bandwidth averaging period (jiffies).
const BW_PERIOD_JIFFIES: u64 = (3 * HZ).next_power_of_two();

/// How dirty throttling is modelled (a scenario's `phone.dirty_throttle`: `per-page` or
/// `per-call`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ThrottleMode {
    /// Linux 3.x `balance_dirty_pages` (this module).
    #[default]
    PerPage,
    /// The simulator's earlier rule, kept for ablations: at the end of each write() call a
    /// task over the dirty limit waits until dirty + write-back pages are under it, and all
    /// waiters wake together (the hard-limit loop of Linux before 3.2, once per call).
    PerCall,
}

/// The global figures a balance decision reads.
#[derive(Clone, Copy, Debug)]
pub struct DirtyState {
    /// Dirty + write-back pages (`nr_dirty` in balance_dirty_pages).
    pub dirty: u64,
    /// `vm.dirty_background_ratio` threshold (pages).
    pub bg_thresh: u64,
    /// `vm.dirty_ratio` threshold (pages).
    pub thresh: u64,
    /// Pages ever dirtied (`BDI_DIRTIED`).
    pub dirtied: u64,
    /// Pages whose write-back ever completed (`BDI_WRITTEN`).
    pub written: u64,
}

/// What a task does after balancing.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Balance {
    /// Go on writing.
    Go,
    /// Sleep `ns`; with `recheck`, balance again (with no new pages) before writing more.
    Pause { ns: u64, recheck: bool },
}

#[derive(Clone, Copy, Debug, Default)]
struct TaskDirty {
    /// `current->nr_dirtied`.
    nr_dirtied: u64,
    /// `current->nr_dirtied_pause`.
    nr_dirtied_pause: u64,
    /// `current->dirty_paused_when` (ns); 0 = never.
    paused_when: u64,
}

/// The bdi's throttling state and each task's counters.
#[derive(Clone, Debug)]
pub struct DirtyThrottle {
    /// `bdi->write_bandwidth`, `avg_write_bandwidth` (pages/s).
    write_bw: u64,
    avg_write_bw: u64,
    /// `bdi->dirty_ratelimit`, `balanced_dirty_ratelimit` (pages/s).
    dirty_ratelimit: u64,
    balanced_dirty_ratelimit: u64,
    bw_time: u64,
    dirtied_stamp: u64,
    written_stamp: u64,
    tasks: HashMap<Tid, TaskDirty>,
    /// Pauses taken and their total (ns), for reports and tests.
    pub pauses: u64,
    pub paused_ns: u64,
}

impl Default for DirtyThrottle {
    fn default() -> Self {
        DirtyThrottle {
            write_bw: INIT_BW,
            avg_write_bw: INIT_BW,
            dirty_ratelimit: INIT_BW,
            balanced_dirty_ratelimit: INIT_BW,
            bw_time: 0,
            dirtied_stamp: 0,
            written_stamp: 0,
            tasks: HashMap::new(),
            pauses: 0,
            paused_ns: 0,
        }
    }
}

/// `dirty_freerun_ceiling`.
fn freerun(thresh: u64, bg_thresh: u64) -> u64 {
    (thresh + bg_thresh) / 2
}

/// `dirty_poll_interval`: pages a task may dirty before it checks again, below freerun.
pub fn dirty_poll_interval(dirty: u64, thresh: u64) -> u64 {
    if thresh > dirty {
        1 << ((thresh - dirty).ilog2() >> 1)
    } else {
        1
    }
}

/// `bdi_position_ratio` with one bdi (`bdi_thresh = thresh`, `bdi_dirty = dirty`); `write_bw`
/// in pages/s. 0 at or over the limit; 1 at the setpoint; up to 2 (global line) below it.
pub fn position_ratio(thresh: u64, bg_thresh: u64, dirty: u64, write_bw: u64) -> f64 {
    let limit = thresh;
    let freerun = freerun(thresh, bg_thresh);
    if dirty >= limit {
        return 0.0;
    }
    let setpoint = (freerun + limit) / 2;
    let x = (setpoint as f64 - dirty as f64) / (limit - setpoint + 1) as f64;
    let mut pos_ratio = (1.0 + x * x * x).clamp(0.0, 2.0);
    // The bdi control line: flat with one bdi except for its slope of 1 / (8 × write_bw).
    let bdi_thresh = thresh.max((limit - dirty) / 8);
    let xr = bdi_thresh as f64 / (thresh + 1) as f64;
    let bdi_setpoint = setpoint as f64 * xr;
    let span = (thresh.saturating_sub(bdi_thresh) + 8 * write_bw) as f64 * xr;
    let x_intercept = bdi_setpoint + span;
    if (dirty as f64) < x_intercept - span / 4.0 {
        pos_ratio *= (x_intercept - dirty as f64) / (x_intercept - bdi_setpoint + 1.0);
    } else {
        pos_ratio /= 4.0;
    }
    // The bdi reserve area: below half its threshold the bdi is pushed to fill up.
    let reserve = bdi_thresh as f64 / 2.0;
    if (dirty as f64) < reserve {
        if dirty as f64 > reserve / 8.0 {
            pos_ratio *= reserve / dirty as f64;
        } else {
            pos_ratio *= 8.0;
        }
    }
    pos_ratio
}

impl DirtyThrottle {
    /// `tid` dirtied `pages` more pages (`current->nr_dirtied`).
    pub fn account(&mut self, tid: Tid, pages: u64) {
        if pages > 0 {
            self.task(tid).nr_dirtied += pages;
        }
    }

    fn task(&mut self, tid: Tid) -> &mut TaskDirty {
        self.tasks.entry(tid).or_insert(TaskDirty { nr_dirtied_pause: DIRTY_POLL_THRESH, ..Default::default() })
    }

    /// `balance_dirty_pages_ratelimited` for `tid` at `now` (its pages already counted with
    /// [`DirtyThrottle::account`]), with the machine's figures `g`. `recheck`: the task comes
    /// back from a pause over the limit and balances whatever it dirtied.
    pub fn balance(&mut self, tid: Tid, now: SimTime, g: DirtyState, recheck: bool) -> Balance {
        let now_ns = now.ns();
        let t = self.task(tid);
        if !recheck && t.nr_dirtied < t.nr_dirtied_pause.max(1) {
            return Balance::Go;
        }
        let pages_dirtied = t.nr_dirtied;
        let freerun = freerun(g.thresh, g.bg_thresh);
        if g.dirty <= freerun {
            let t = self.tasks.get_mut(&tid).expect("task");
            t.paused_when = now_ns;
            t.nr_dirtied = 0;
            t.nr_dirtied_pause = dirty_poll_interval(g.dirty, g.thresh);
            return Balance::Go;
        }
        self.update_bandwidth(now_ns, g);
        let pos_ratio = position_ratio(g.thresh, g.bg_thresh, g.dirty, self.avg_write_bw);
        let task_ratelimit = (self.dirty_ratelimit as f64 * pos_ratio) as u64;
        let max_pause = MAX_PAUSE_JIFFIES;
        let t = self.tasks.get_mut(&tid).expect("task");
        if task_ratelimit == 0 {
            // Over the limit: sleep max_pause, then check again.
            t.paused_when = now_ns + max_pause * JIFFY_NS;
            t.nr_dirtied = 0;
            self.pauses += 1;
            self.paused_ns += max_pause * JIFFY_NS;
            return Balance::Pause { ns: max_pause * JIFFY_NS, recheck: true };
        }
        let (min_pause, nr_dirtied_pause) = min_pause(self.avg_write_bw, self.dirty_ratelimit, max_pause, task_ratelimit);
        // period and pause in ns (the kernel: jiffies).
        let period = pages_dirtied as f64 * 1e9 / task_ratelimit as f64;
        let mut pause = period;
        if t.paused_when > 0 {
            pause -= now_ns.saturating_sub(t.paused_when) as f64;
        }
        if pause < (min_pause * JIFFY_NS) as f64 {
            if pause < -1e9 {
                t.paused_when = now_ns;
                t.nr_dirtied = 0;
            } else if period > 0.0 {
                t.paused_when += period as u64;
                t.nr_dirtied = 0;
            } else if t.nr_dirtied_pause <= pages_dirtied {
                t.nr_dirtied_pause += pages_dirtied;
            }
            return Balance::Go;
        }
        let max_ns = (max_pause * JIFFY_NS) as f64;
        let mut now_ns = now_ns as f64;
        if pause > max_ns {
            now_ns += (pause - max_ns).min(max_ns);
            pause = max_ns;
        }
        let pause_ns = pause as u64;
        t.paused_when = now_ns as u64 + pause_ns;
        t.nr_dirtied = 0;
        t.nr_dirtied_pause = nr_dirtied_pause;
        self.pauses += 1;
        self.paused_ns += pause_ns;
        Balance::Pause { ns: pause_ns.max(1), recheck: false }
    }

    /// `__bdi_update_bandwidth`: every 200 ms, the write bandwidth and the dirty rate limit.
    fn update_bandwidth(&mut self, now_ns: u64, g: DirtyState) {
        let elapsed = now_ns.saturating_sub(self.bw_time);
        if elapsed < BANDWIDTH_INTERVAL_NS {
            return;
        }
        // Skip quiet periods (more than 1 s since the last update): only take stamps.
        if elapsed <= 1_000_000_000 {
            self.update_dirty_ratelimit(elapsed, g);
            self.update_write_bandwidth(elapsed, g.written);
        }
        self.dirtied_stamp = g.dirtied;
        self.written_stamp = g.written;
        self.bw_time = now_ns;
    }

    /// `bdi_update_write_bandwidth`.
    fn update_write_bandwidth(&mut self, elapsed_ns: u64, written: u64) {
        let elapsed = (elapsed_ns / JIFFY_NS).max(1);
        let mut bw = (written - self.written_stamp) * HZ;
        let mut avg = self.avg_write_bw;
        let old = self.write_bw;
        if elapsed > BW_PERIOD_JIFFIES {
            bw /= elapsed;
            avg = bw;
        } else {
            bw += old * (BW_PERIOD_JIFFIES - elapsed);
            bw /= BW_PERIOD_JIFFIES;
            if avg > old && old >= bw {
                avg -= (avg - old) >> 3;
            }
            if avg < old && old <= bw {
                avg += (old - avg) >> 3;
            }
        }
        self.write_bw = bw;
        self.avg_write_bw = avg.max(1);
    }

    /// `bdi_update_dirty_ratelimit`: track `write_bw / N` in filtered steps.
    fn update_dirty_ratelimit(&mut self, elapsed_ns: u64, g: DirtyState) {
        let elapsed = (elapsed_ns / JIFFY_NS).max(1);
        let write_bw = self.avg_write_bw;
        let dirty_ratelimit = self.dirty_ratelimit;
        let dirty_rate = (g.dirtied - self.dirtied_stamp) * HZ / elapsed;
        let pos_ratio = position_ratio(g.thresh, g.bg_thresh, g.dirty, write_bw);
        let task_ratelimit = (dirty_ratelimit as f64 * pos_ratio) as u64 + 1;
        let balanced = (task_ratelimit * write_bw / (dirty_rate | 1)).min(write_bw);
        let setpoint = (freerun(g.thresh, g.bg_thresh) + g.thresh) / 2;
        let mut step = 0;
        if g.dirty < setpoint {
            let x = self.balanced_dirty_ratelimit.min(balanced.min(task_ratelimit));
            if dirty_ratelimit < x {
                step = x - dirty_ratelimit;
            }
        } else {
            let x = self.balanced_dirty_ratelimit.max(balanced.max(task_ratelimit));
            if dirty_ratelimit > x {
                step = dirty_ratelimit - x;
            }
        }
        let shift = dirty_ratelimit / (2 * step + 1);
        step = if shift < 64 { (step >> shift).div_ceil(8) } else { 0 };
        let new = if dirty_ratelimit < balanced { dirty_ratelimit + step } else { dirty_ratelimit.saturating_sub(step) };
        self.dirty_ratelimit = new.max(1);
        self.balanced_dirty_ratelimit = balanced;
    }

    /// The device's current dirty rate limit (pages/s).
    pub fn dirty_ratelimit(&self) -> u64 {
        self.dirty_ratelimit
    }
}

/// `bdi_min_pause`: the shortest pause worth taking (jiffies) and the pages to dirty before
/// the next balance.
fn min_pause(avg_write_bw: u64, dirty_ratelimit: u64, max_pause: u64, task_ratelimit: u64) -> (u64, u64) {
    let hi = i64::from(avg_write_bw.max(1).ilog2());
    let lo = i64::from(dirty_ratelimit.max(1).ilog2());
    // Target a 10 ms pause for one dirtier, N × 10 ms for 2^N.
    let mut t = (HZ / 100).max(1) as i64;
    if hi > lo {
        t += (hi - lo) * (10 * HZ as i64) / 1024;
    }
    let mut t = (t as u64).min(1 + max_pause / 2);
    let hz2 = HZ.next_power_of_two();
    let mut pages = dirty_ratelimit * t / hz2;
    if pages < DIRTY_POLL_THRESH {
        t = max_pause;
        pages = dirty_ratelimit * t / hz2;
        if pages > DIRTY_POLL_THRESH {
            pages = DIRTY_POLL_THRESH;
            t = HZ * DIRTY_POLL_THRESH / dirty_ratelimit.max(1);
        }
    }
    let pause = HZ * pages / (task_ratelimit + 1);
    if pause > max_pause {
        t = max_pause;
        pages = task_ratelimit * t / hz2;
    }
    (if pages >= DIRTY_POLL_THRESH { 1 + t / 2 } else { t }, pages.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 512 MiB cache, 10 / 20 %: the QASIO phone's thresholds.
    const BG: u64 = 13_107;
    const TH: u64 = 26_214;

    fn state(dirty: u64, dirtied: u64, written: u64) -> DirtyState {
        DirtyState { dirty, bg_thresh: BG, thresh: TH, dirtied, written }
    }

    #[test]
    fn position_ratio_is_one_at_the_setpoint_and_zero_at_the_limit() {
        let setpoint = (freerun(TH, BG) + TH) / 2;
        let bw = 13_000;
        let at = position_ratio(TH, BG, setpoint, bw);
        assert!((at - 1.0).abs() < 0.01, "{at}");
        assert!(position_ratio(TH, BG, setpoint - 2_000, bw) > 1.0);
        assert!(position_ratio(TH, BG, setpoint + 2_000, bw) < 1.0);
        assert_eq!(position_ratio(TH, BG, TH, bw), 0.0);
        // Cubic: symmetric around the setpoint within the global line.
        let up = position_ratio(TH, BG, setpoint + 1_000, bw);
        let down = position_ratio(TH, BG, setpoint - 1_000, bw);
        assert!((up + down - 2.0).abs() < 0.05, "{up} {down}");
    }

    #[test]
    fn below_freerun_nobody_sleeps_and_the_poll_interval_grows_with_the_gap() {
        let mut th = DirtyThrottle::default();
        for i in 0..100 {
            let b = {
                th.account(1, 256);
                th.balance(1, SimTime::from_ms(i), state(10_000, i * 256, 0), false)
            };
            assert_eq!(b, Balance::Go);
        }
        assert_eq!(th.pauses, 0);
        assert_eq!(dirty_poll_interval(TH - 16_384, TH), 128);
        assert_eq!(dirty_poll_interval(TH - 4, TH), 2);
        assert_eq!(dirty_poll_interval(TH + 5, TH), 1);
    }

    #[test]
    fn over_the_limit_a_writer_sleeps_max_pause_and_rechecks() {
        let mut th = DirtyThrottle::default();
        th.account(1, 256);
        let b = th.balance(1, SimTime::from_ms(1), state(TH + 10, 0, 0), false);
        assert_eq!(b, Balance::Pause { ns: 200_000_000, recheck: true });
        // The recheck carries no pages and still balances.
        let b = th.balance(1, SimTime::from_ms(201), state(TH + 10, 0, 0), true);
        assert_eq!(b, Balance::Pause { ns: 200_000_000, recheck: true });
        assert_eq!(th.balance(1, SimTime::from_ms(401), state(TH - 5_000, 0, 0), true), Balance::Go);
    }

    #[test]
    fn pauses_are_proportional_to_the_pages_each_task_dirtied() {
        // Between freerun and the limit, at the setpoint: task_ratelimit ≈ dirty_ratelimit.
        let setpoint = (freerun(TH, BG) + TH) / 2;
        let mut th = DirtyThrottle::default();
        th.account(1, 2_560);
        th.account(2, 64);
        let heavy = th.balance(1, SimTime::from_ms(10), state(setpoint, 0, 0), false);
        let light = th.balance(2, SimTime::from_ms(10), state(setpoint, 0, 0), false);
        let Balance::Pause { ns: heavy, .. } = heavy else { panic!("{heavy:?}") };
        // 2,560 pages at ~25,600 pages/s: ~100 ms.
        assert!((80_000_000..120_000_000).contains(&heavy), "{heavy}");
        // 64 pages: 2.5 ms, under the minimum pause: carried over, no sleep.
        assert_eq!(light, Balance::Go);
    }

    #[test]
    fn the_rate_limit_tracks_the_write_bandwidth_shared_by_the_dirtiers() {
        // Two writers that dirty as fast as their throttling lets them, on a device that
        // writes 13,000 pages/s (~53 MB/s): the dirty level settles between freerun and the
        // limit, and the rate limit falls from INIT_BW to about write_bw / 2 each.
        let mut th = DirtyThrottle::default();
        let (mut dirty, mut dirtied, mut written) = (freerun(TH, BG), 0u64, 0u64);
        let bw = 13_000u64;
        for step in 1..=1_500u64 {
            let now = SimTime::from_ms(step * 100);
            let rate = th.dirty_ratelimit() as f64 * position_ratio(TH, BG, dirty, th.avg_write_bw);
            let each = (rate * 0.1) as u64;
            dirtied += 2 * each;
            let w = (bw / 10).min(dirty + 2 * each);
            written += w;
            dirty = dirty + 2 * each - w;
            for tid in [1, 2] {
                th.account(tid, each);
                th.balance(tid, now, state(dirty, dirtied, written), false);
            }
            if step > 600 {
                assert!(dirty > freerun(TH, BG) - 2_000 && dirty < TH, "step {step}: dirty {dirty}");
            }
        }
        let r = th.dirty_ratelimit();
        assert!((4_500..=8_500).contains(&r), "near write_bw / 2 = 6,500: {r}");
        assert!((12_000..=14_000).contains(&th.avg_write_bw), "{}", th.avg_write_bw);
    }
}
