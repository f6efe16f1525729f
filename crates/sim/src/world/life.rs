//! Processes that live in windows (`[[app]] alive_s`): an app's threads start their programs
//! anew as new processes at each window's start and are killed at its end, as `forefront
//! bench` starts its background workers at each sample and kills them after it
//! (`forefront_bench::runner::one_sample`).
//!
//! - **Start** (a window's start): each thread of the app begins its program at its first op as
//!   a new process — a new pid as `exec` gives one (so BFQ gives its I/O a new queue, which it
//!   deems interactive), its loops and its op in progress forgotten. The first window's start
//!   is the thread's start (the build's wake-up); a later one restarts a killed thread, and one
//!   whose program had ended.
//! - **Kill** (a window's end): the thread stops where the cgroup freezer would stop it
//!   (`super::knobs`): before its next op, or before the next `read()`/`write()` call of a
//!   chunked read or write; a call in progress finishes (its device waits, an `fsync`). There it
//!   abandons its op and waits, charged as sleep, until the next start. Its dirty pages stay in
//!   the page cache for write-back, as a killed process's do.
//!
//! Simplifications versus the kernel: `SIGKILL` also ends a task's killable sleeps at once (a
//! throttling pause, an I/O wait of `TASK_KILLABLE`, a `sleep`), here every call in progress
//! finishes first; a task the freezer holds when it is killed dies where it stands, and one
//! it holds at a start is started anew and stays held (the new process is in the same cgroup);
//! exit's own work (closing files, freeing the process's memory) is not charged; a thread
//! waiting on a channel nobody signals never reaches a stopping point, so it is never killed.
//!
//! Tests: `tests/kernel_knobs.rs` (`an_app_lives_only_in_its_windows…`,
//! `a_restarted_app_begins_its_program_anew…`).
//!
//! Invariants: a thread is `Dead` only while it waits on `Blocker::Idle` with no op in
//! progress (`Exec::None`); `Killed` and `Restart` are left at the thread's next stopping
//! point, where the freezer's checks (`World::frozen_before_op`, `World::continue_frozen`)
//! call [`World::stop_point`]; a thread that is `Running` is never parked here.

use forefront_engine::SimTime;
use forefront_model::prov::Tid;
use forefront_model::wait::Blocker;

use super::tasks::{Exec, Kind, TState, Wait};
use super::{Ev, World};
use crate::Cat;

/// Where a thread of an app with windows of life is in them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) enum Life {
    /// Running its program (every thread of an app without windows, always).
    #[default]
    Running,
    /// Killed, not yet at a stopping point.
    Killed,
    /// Killed and stopped: waits on `Blocker::Idle` for the next window.
    Dead,
    /// Killed and started again before it reached a stopping point: it starts anew there.
    Restart,
}

/// What a thread does at a stopping point ([`World::stop_point`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum AtStop {
    /// Nothing of its life: the freezer decides.
    Go,
    /// It was started anew: it goes on at its program's first op.
    Restarted,
    /// It is dead: it is now blocked (the caller returns `After::Block`).
    Parked,
}

impl World {
    /// Schedule every app's windows of life (build time): each window's end, and each start
    /// after the first (the first is the threads' start, [`super::build`]).
    pub(super) fn schedule_lives(&mut self, alive_s: &[Vec<[f64; 2]>]) {
        for (app, windows) in alive_s.iter().enumerate() {
            for (k, &[from, to]) in windows.iter().enumerate() {
                if k > 0 {
                    self.q.schedule(SimTime::from_secs_f64(from), Ev::Life(app as u32, true));
                }
                self.q.schedule(SimTime::from_secs_f64(to), Ev::Life(app as u32, false));
            }
        }
    }

    /// A window of app `app` starts (`start`) or ends.
    pub(super) fn life_event(&mut self, app: usize, start: bool) {
        let tids: Vec<Tid> = (0..self.tasks.len() as Tid)
            .filter(|&t| self.tasks[t as usize].kind == Kind::User && self.tasks[t as usize].app == app)
            .collect();
        for tid in tids {
            let t = &self.tasks[tid as usize];
            let parked = self.wg.is_blocked_on(tid, Blocker::Idle);
            match (start, t.life, t.state) {
                // A program that ended before its kill is over.
                (false, _, TState::Done) => {}
                (false, _, _) if parked => {
                    // Held by the freezer at a stopping point: it dies there.
                    self.abandon(tid);
                    self.tasks[tid as usize].life = Life::Dead;
                }
                (false, _, _) => self.tasks[tid as usize].life = Life::Killed,
                (true, Life::Running, TState::Done) => {
                    // Its program ended within the last window: a new process runs it again.
                    self.restart(tid);
                    let now = self.now();
                    let t = &mut self.tasks[tid as usize];
                    t.state = TState::Blocked;
                    t.wait = Some(Wait { cat: Cat::Sleep, own: false, fg_io: false });
                    self.wg.block(tid, Blocker::Idle, now);
                    self.wake(tid);
                }
                (true, Life::Dead, _) => {
                    self.restart(tid);
                    self.wake_if(tid, Blocker::Idle);
                }
                (true, Life::Killed | Life::Restart, _) => self.tasks[tid as usize].life = Life::Restart,
                (true, Life::Running, _) => {} // a window starting as the last ends: not killed
            }
        }
    }

    /// At a stopping point of `tid`: whether it is killed, started anew or goes on.
    #[inline]
    pub(super) fn stop_point(&mut self, tid: Tid) -> AtStop {
        match self.tasks[tid as usize].life {
            Life::Running => AtStop::Go,
            Life::Restart => {
                self.restart(tid);
                AtStop::Restarted
            }
            Life::Killed | Life::Dead => {
                self.abandon(tid);
                self.tasks[tid as usize].life = Life::Dead;
                self.block_on(tid, Blocker::Idle, Cat::Sleep);
                AtStop::Parked
            }
        }
    }

    /// Whether `tid` has something of its life to do at its next stopping point.
    #[inline]
    pub(super) fn life_pending(&self, tid: Tid) -> bool {
        self.tasks[tid as usize].life != Life::Running
    }

    /// The op in progress is abandoned (at a stopping point: between calls).
    fn abandon(&mut self, tid: Tid) {
        if self.rec.is_some() {
            self.rec_span_end(tid);
        }
        self.tasks[tid as usize].exec = Exec::None;
        self.knobs.forget_call(tid);
    }

    /// `tid` runs its program anew as a new process.
    fn restart(&mut self, tid: Tid) {
        self.abandon(tid);
        let pid = self.new_pid();
        let t = &mut self.tasks[tid as usize];
        t.pc = 0;
        t.loops.clear();
        t.pid = pid;
        t.life = Life::Running;
    }
}
