//! Tasks and their blocking: the one place a task blocks ([`World::block_on`]), wakes
//! ([`World::wake_split`]) and leaves or rejoins the CPU ([`World::settle`]), and the CPU groups
//! that follow the foreground app.
//!
//! Invariants:
//! - a task has a [`Wait`] exactly when the wait graph has a blocker for it (`block_on`, the
//!   sleeps in `settle` and `build` set both; `wake_split` clears both);
//! - a task is `Blocked` only between leaving the CPU and its wake-up: a wake during its last
//!   burst keeps it `Runnable` and no blocked time is charged;
//! - blocked time is charged to one [`Cat`] per wait, except a wait for a request the task
//!   submitted itself, which is split by the request's stage (block queue, device queue,
//!   device service).
//!
//! Simplifications: a wake-up costs a fixed `wakeup` CPU burst; a program that takes 100,000
//! zero-cost steps in a row ends its thread rather than hang the run.

use forefront_engine::SimTime;
use forefront_model::block::{ReqSlab, ReqTimes};
use forefront_model::cpu::{GroupId, ROOT_GROUP};
use forefront_model::fs::ext4::FileOp;
use forefront_model::kernel::After;
use forefront_model::prov::{Tid, Uid};
use forefront_model::wait::{Blocker, Why};
use forefront_policy::{FgWait, Hook};
use forefront_workload::{CpuGroups, Role};

use super::priority::{Io, TaskFacts};
use super::{Ev, World, BG_GROUP, FG_GROUP, SESSION_GROUP};
use crate::program::Instr;
use crate::Cat;
use forefront_model::cpu::CpuSched;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum TState {
    /// On a core or in a run queue.
    Runnable,
    Blocked,
    Done,
}

/// How a blocked task's time is accounted. What it waits for, and since when, is in the
/// [`WaitGraph`]; a task has a `Wait` exactly when the graph has a blocker for it.
#[derive(Clone, Copy, Debug)]
pub(super) struct Wait {
    pub(super) cat: Cat,
    /// It waits for a request it submitted itself: time is split by the request's stage.
    pub(super) own: bool,
    /// Counted in `fg_io_waiting` (a foreground task waiting for I/O).
    pub(super) fg_io: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    User,
    Flusher,
    Jbd2,
    Kswapd,
    /// The log-structured mount's cleaner (`forefront_model::fs::cleaner`).
    Cleaner,
}

/// Progress inside a multi-step operation.
#[derive(Clone, Debug)]
pub(super) enum Exec {
    None,
    /// A file operation in progress (`model::fs::ext4`).
    File(FileOp),
    /// A binder server thread inside a transaction.
    Binder(super::ui::BinderStage),
    /// The compositor finished composing: display the frame (it shows this many results).
    Present(u32),
    Flusher,
    Jbd2,
}

pub(super) struct Task {
    pub(super) name: String,
    pub(super) app: usize,
    pub(super) uid: Uid,
    pub(super) pid: u32,
    pub(super) kind: Kind,
    pub(super) state: TState,
    pub(super) after: After,
    pub(super) token: u32,
    pub(super) prog: Vec<Instr>,
    pub(super) pc: usize,
    /// Open loops: (first instruction of the body, iterations left (0 = forever), iteration).
    pub(super) loops: Vec<(usize, u32, u32)>,
    pub(super) exec: Exec,
    pub(super) wait: Option<Wait>,
    /// Blocked time per category (ns).
    pub(super) acc: [u64; Cat::COUNT],
    /// Open phases: name, start, blocked time per category and CPU (running, runnable) then.
    pub(super) phases: Vec<OpenPhase>,
    pub(super) bg_prio: bool,
    /// The op in progress, for `--trace-out` syscall spans: (name, path, size, start).
    pub(super) span: Option<(&'static str, Option<String>, Option<u64>, SimTime)>,
    pub(super) zero_steps: u32,
    /// The burst its last step returned is user code (an `Op::Compute`); every other burst is
    /// kernel code (a system call's work, a kernel thread's): the CPU model's preemption points.
    pub(super) user_burst: bool,
    /// Where it is in its app's windows of life (`super::life`).
    pub(super) life: super::life::Life,
}

/// A phase begun and not yet ended: (name, start, blocked ns per category, CPU (running,
/// runnable) ns, background bytes read and written so far) at its start.
pub(super) type OpenPhase = (String, SimTime, [u64; Cat::COUNT], (u64, u64), u64);

pub(super) struct App {
    pub(super) name: String,
    pub(super) uid: Uid,
    /// Its role inside its cell (the phone's role for apps outside cells): see
    /// [`World::role_now`] for the role the phone sees.
    pub(super) role: Role,
    /// Its spec's name (the owner named by `[[file]]`).
    pub(super) spec: String,
    /// Its virtual phone (Cells), if any.
    pub(super) cell: Option<usize>,
    /// Its threads are the foreground the run waits for (the fg app, in the fg cell).
    pub(super) headline: bool,
    /// Bytes its syscalls read and wrote.
    pub(super) read: u64,
    pub(super) written: u64,
}

impl World {
    pub(super) fn group_for(&self, tid: Tid) -> GroupId {
        if let Some(g) = self.agent_group(tid) {
            return g;
        }
        let t = &self.tasks[tid as usize];
        match self.role_now(t.app) {
            Role::System => ROOT_GROUP,
            _ => match self.phone.cpu_groups {
                CpuGroups::Autogroup => SESSION_GROUP,
                CpuGroups::Root => ROOT_GROUP,
                CpuGroups::Android if Some(t.uid) == self.fg_uid && !t.bg_prio => FG_GROUP,
                CpuGroups::Android => BG_GROUP,
            },
        }
    }

    pub(super) fn is_fg_uid(&self, uid: Uid) -> bool {
        Some(uid) == self.fg_uid
    }

    /// Whether work of task `tid` counts as foreground. Stock Android knows only cgroups (the FG
    /// group); a classifying policy uses the FG app's UID (App Status Detector).
    pub(super) fn task_is_fg(&self, tid: Tid) -> bool {
        self.prio.task_is_fg(self.facts(tid))
    }

    /// What the policy seam knows of task `tid`.
    pub(super) fn facts(&self, tid: Tid) -> TaskFacts {
        facts_in(&self.tasks, &self.cpu, self.fg_uid, self.phone.cpu_groups, tid)
    }

    /// FastTrack's Page Allocator: a background user task (not a kernel thread, not one holding a
    /// journal handle) pauses at its next allocation or copy checkpoint while foreground I/O is
    /// in flight. True if the task was paused (registered).
    pub(super) fn alloc_gate_pauses(&mut self, tid: Tid) -> bool {
        if self.prio.alloc_may_proceed() {
            return false; // the gate is open (the common case: decided without the task's facts)
        }
        let bg_role = self.role_now(self.tasks[tid as usize].app) == Role::Bg;
        let holds_handle = self.wg.handle_of(tid).is_some();
        if !self.prio.alloc_gate_pauses(self.facts(tid), bg_role, holds_handle) {
            return false;
        }
        self.block_on(tid, Blocker::Alloc, Cat::Alloc);
        true
    }

    /// Move every task whose CPU group changed (a new foreground app or cell).
    pub(super) fn regroup(&mut self, now: SimTime) {
        for t in 0..self.tasks.len() as Tid {
            let g = self.group_for(t);
            if self.cpu.group_of(t) != g {
                self.cpu.set_group(t, g, now);
                self.prio.hook(Hook::CpuGroupMove);
            }
        }
    }

    /// Register that `tid` waits on `b` (the one place tasks block); the caller returns
    /// `After::Block`. Its time is charged to `cat` (or split by stage for its own request).
    pub(super) fn block_on(&mut self, tid: Tid, b: Blocker, cat: Cat) {
        let now = self.now();
        let own = matches!(b, Blocker::Request { id, .. } if self.reqs.get(id).prov.tid == tid);
        let wait = gate_wait(b, &self.reqs, tid);
        debug_assert!(self.tasks[tid as usize].wait.is_none(), "{} waits twice", self.tasks[tid as usize].name);
        self.wg.block(tid, b, now);
        // The policy seam: the allocation gate's count, QASIO's boost, FG inheritance.
        let (tasks, cpu, fg_uid, groups) = (&self.tasks, &self.cpu, self.fg_uid, self.phone.cpu_groups);
        let mut rq = Io { reqs: &mut self.reqs, st: &mut self.st };
        let fg_io = self.prio.on_block(tid, wait, &self.wg, &self.jn, &mut rq, |w| facts_in(tasks, cpu, fg_uid, groups, w));
        self.tasks[tid as usize].wait = Some(Wait { cat, own, fg_io });
    }

    /// Wake every task waiting on `b`, in the order they blocked.
    pub(super) fn wake_all(&mut self, b: Blocker) {
        // The shared queues keep a count: skip the walk when nobody waits there.
        if b.counted() && self.wg.count(b) == 0 {
            return;
        }
        for t in self.wg.blocked_on(|x| x == b) {
            self.wake(t);
        }
    }

    /// Wake `tid` from whatever it waits for (no-op if it does not wait).
    pub(super) fn wake(&mut self, tid: Tid) {
        self.wake_split(tid, None);
    }

    pub(super) fn wake_split(&mut self, tid: Tid, times: Option<ReqTimes>) {
        let now = self.now();
        let t = &mut self.tasks[tid as usize];
        let Some(w) = t.wait.take() else { return };
        let (_, since) = self.wg.unblock(tid).expect("a waiting task has a blocker");
        let t = &mut self.tasks[tid as usize];
        t.token = t.token.wrapping_add(1);
        if w.fg_io {
            self.prio.on_wake(true, self.wg.count(Blocker::Alloc));
        }
        let t = &mut self.tasks[tid as usize];
        if t.state == TState::Runnable {
            // Woken before its burst ended: it never left the CPU, nothing was blocked.
            t.after = After::Step;
            return;
        }
        match (w.own, times) {
            (true, Some(rt)) => {
                let d = rt.dispatched.unwrap_or(now).max(since).min(now);
                let s = rt.service_start.unwrap_or(now).max(d).min(now);
                t.acc[Cat::BlockQueue as usize] += d.since(since);
                t.acc[Cat::DeviceQueue as usize] += s.since(d);
                t.acc[Cat::DeviceService as usize] += now.since(s);
            }
            _ => t.acc[w.cat as usize] += now.since(since),
        }
        if t.state == TState::Blocked {
            t.state = TState::Runnable;
            t.after = After::Step;
            let work = self.ns.wakeup;
            if self.prio.promotes_chain() && self.ui.in_chain(tid) {
                // FTC: the chain task's weight for the run queue it joins now.
                self.ftc_promote(tid);
            }
            // The wake-up's work is the kernel's (the rest of the call the task slept in).
            self.cpu.set_kernel(tid, true);
            self.cpu.wake(tid, work, now);
        }
    }

    /// The task's CPU burst ended: carry out what it planned, then step its program.
    pub(super) fn after_burst(&mut self, tid: Tid) {
        let now = self.now();
        let after = std::mem::replace(&mut self.tasks[tid as usize].after, After::Step);
        if self.settle(tid, after, now) {
            return;
        }
        loop {
            let (cost, after) = self.step(tid);
            if cost > 0 {
                self.tasks[tid as usize].zero_steps = 0;
                self.tasks[tid as usize].after = after;
                self.cpu.set_kernel(tid, !self.tasks[tid as usize].user_burst);
                self.cpu.continue_burst(tid, cost, now);
                return;
            }
            let t = &mut self.tasks[tid as usize];
            t.zero_steps += 1;
            if t.zero_steps > 100_000 {
                // A program that loops without doing anything: end the thread rather than hang.
                t.wait = None;
                self.wg.unblock(tid);
                self.settle(tid, After::Exit, now);
                return;
            }
            if self.settle(tid, after, now) {
                return;
            }
        }
    }

    /// Apply `after` for a task whose burst is over; true if it left the CPU.
    pub(super) fn settle(&mut self, tid: Tid, after: After, now: SimTime) -> bool {
        match after {
            After::Step => false,
            After::Block => {
                if self.tasks[tid as usize].wait.is_some() {
                    // Blocked time starts when the task leaves the CPU (its last burst was
                    // counted as running).
                    self.wg.restart(tid, now);
                    self.tasks[tid as usize].state = TState::Blocked;
                    self.cpu.stop(tid, now);
                    true
                } else {
                    false // woken during its last burst
                }
            }
            After::Sleep(until) => {
                let t = &mut self.tasks[tid as usize];
                t.wait = Some(Wait { cat: t.wait.map_or(Cat::Sleep, |w| w.cat), own: false, fg_io: false });
                t.state = TState::Blocked;
                self.wg.unblock(tid);
                self.wg.block(tid, Blocker::Timer, now);
                let t = &mut self.tasks[tid as usize];
                let token = t.token;
                self.cpu.stop(tid, now);
                self.q.schedule(until, Ev::Wake(tid, token));
                true
            }
            After::Exit => {
                let t = &mut self.tasks[tid as usize];
                t.state = TState::Done;
                if self.apps[t.app].headline {
                    self.fg_tasks_left -= 1;
                    if self.fg_tasks_left == 0 && self.ui.idle() {
                        self.fg_done_at = Some(now);
                    }
                }
                self.cpu.stop(tid, now);
                true
            }
        }
    }

    pub(super) fn wake_if(&mut self, tid: Tid, b: Blocker) {
        if self.wg.is_blocked_on(tid, b) {
            self.wake(tid);
        }
    }

    pub(super) fn wake_flusher(&mut self) {
        self.wake_if(self.flusher, Blocker::Idle);
    }

    pub(super) fn wake_jbd2(&mut self) {
        self.wake_if(self.jbd2, Blocker::Idle);
    }
}

/// Where a wait on `b` by task `tid` is, for FastTrack's allocation gate
/// ([`forefront_policy::GateScope`]): in the page cache — the fill of a page the task's own read
/// allocated and locked, or a data page or metadata buffer someone else's I/O holds — or past it
/// (an own sync write, write-back waits of sync paths, the journal).
pub(super) fn gate_wait(b: Blocker, reqs: &ReqSlab, tid: Tid) -> FgWait {
    match b {
        Blocker::Request { id, why: Why::Own } => {
            let r = reqs.get(id);
            if r.op.is_read() && r.prov.tid == tid {
                FgWait::PageCache
            } else {
                FgWait::PastPageCache
            }
        }
        Blocker::Request { why: Why::DataPage | Why::MetaBuffer, .. } => FgWait::PageCache,
        b if b.is_io() => FgWait::PastPageCache,
        _ => FgWait::NotIo,
    }
}

/// What the policy seam knows of task `tid`, from the tasks, the CPU groups and the FG UID
/// (a free function so that it can be borrowed beside the seam).
fn facts_in(tasks: &[Task], cpu: &CpuSched, fg_uid: Option<Uid>, groups: CpuGroups, tid: Tid) -> TaskFacts {
    let t = &tasks[tid as usize];
    let user = t.kind == Kind::User;
    let fg_uid = Some(t.uid) == fg_uid;
    // Without Android's groups (`phone.cpu_groups`) the FG app's tasks share one group with
    // everyone else; to the policy they are still where the FG group would have put them, so
    // that only the CPU scheduling changes with the groups.
    let fg_group = match cpu.group_of(tid) {
        FG_GROUP => true,
        BG_GROUP => false,
        _ => groups != CpuGroups::Android && user && fg_uid && !t.bg_prio,
    };
    TaskFacts { user, fg_group, fg_uid }
}
