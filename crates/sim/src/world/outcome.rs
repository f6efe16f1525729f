//! What a run produces ([`Outcome`]): the headline samples, the hooks that fired, the
//! invariant counters (request and byte conservation, tasks blocked at the end and whether each
//! has a waker), the timeline, the per-cell and interactivity figures, the recorded trace.

use std::collections::BTreeMap;

use forefront_engine::SimTime;
use forefront_model::prov::Tid;
use forefront_record::trace::TraceRecord;
use forefront_workload::Role;

use super::{CellOutcome, TState, Task, UiOutcome, World};
use crate::Cat;

/// One headline sample: duration and blocked-time breakdown.
pub struct Sample {
    pub app: String,
    /// The app's cell, and whether that cell was on the screen when the sample ended (always
    /// true outside cells): only those samples are the phone's foreground latency.
    pub cell: Option<usize>,
    pub on_screen: bool,
    pub phase: String,
    pub start: SimTime,
    pub ns: u64,
    pub cats: [u64; Cat::COUNT],
    /// Bytes the background apps read and wrote through system calls while the phase ran
    /// (0 for an input's response).
    pub bg_bytes: u64,
}

pub struct Outcome {
    pub samples: Vec<Sample>,
    pub hooks: BTreeMap<String, u64>,
    pub bg_read: u64,
    pub bg_written: u64,
    pub sim_end: SimTime,
    pub events: u64,
    /// Pages inserted into the page cache (a measure of the run's page-cache work).
    pub pages: u64,
    pub invariants: forefront_record::run::Invariants,
    pub dev_read: u64,
    pub dev_written: u64,
    pub dev_reorders: u64,
    pub timeline: forefront_record::run::Timeline,
    /// Recorded trace (time-ordered), when [`World::record_trace`] was called.
    pub trace: Option<Vec<TraceRecord>>,
    /// The headline app's waits for a CPU after a wake-up ([`forefront_model::cpu::WaitKind::Dispatch`]) and the
    /// runtime it was charged for such waits ([`forefront_model::cpu::WaitKind::SkippedClock`]), (end, kind, ns),
    /// when [`World::record_fg_cpu_waits`] was called.
    pub fg_cpu_waits: Option<Vec<(SimTime, forefront_model::cpu::WaitKind, u64)>>,
    pub dev_fg_behind_bg: u64,
    pub fg_pages_evicted: u64,
    pub fg_evicted_while_bg_clean: u64,
    /// Interactivity figures, when the scenario has input events.
    pub ui: Option<UiOutcome>,
    /// Background apps' threads that used the network: how many, and their time blocked on it
    /// (ns). Threads that never touch the link (an update's compiler threads) are left out, so
    /// a starved download shows as starved however many threads wait behind it.
    pub bg_net_threads: u64,
    pub bg_net_wait_ns: u64,
    /// Per virtual phone (Cells), in creation order: fg, busy, idle.
    pub cells: Vec<CellOutcome>,
    /// Foreground threads that had not finished their program when the run ended (at the
    /// scenario's duration); 0 when the run ended because they all had.
    pub fg_threads_unfinished: u64,
    /// fsync/fdatasync calls a `sync = false` mount made no-ops; pieces RAID-0 split requests into.
    pub nosync_fsyncs: u64,
    pub raid_pieces: u64,
    /// With `[phone.host_reclaim]`: the pages the guest reported to the host and the pages
    /// allocations took back from it over the run.
    pub host_reclaim: Option<(u64, u64)>,
    /// The log-structured area, when the scenario has an lfs mount.
    pub lfs: Option<LfsOutcome>,
    /// Why the run stopped early: time stopped advancing ([`forefront_engine::EventQueue::stall_report`]).
    pub stall: Option<String>,
}

/// What the log-structured area did over a run.
#[derive(Clone, Copy, Debug)]
pub struct LfsOutcome {
    pub appended: u64,
    pub segments_used: u64,
    /// Times the head found no clean segment (the log was too small for the workload).
    pub full: u64,
    pub cleaner_passes: u64,
    pub cleaner_blocks: u64,
}

impl World {
    pub(super) fn finish(mut self) -> Outcome {
        let ui = self.ui_outcome();
        let cells = self.cell_outcomes();
        let bg: Vec<&Task> = self.tasks.iter().filter(|t| self.role_now(t.app) == Role::Bg).collect();
        let net = |t: &&Task| t.acc[Cat::Net as usize];
        let bg_net_threads = bg.iter().filter(|t| net(t) > 0).count() as u64;
        let bg_net_wait_ns = bg.iter().map(net).sum();
        let mut inv = self.inv.clone();
        inv.requests_in_flight = self.reqs.live() as u64;
        inv.bytes_in_flight = self.reqs.iter().map(|r| r.bytes()).sum();
        inv.time_clamps = self.q.clamped();
        let (hooks, overtaken) = self.prio.finish();
        inv.boosted_async_overtaken = overtaken;
        for (tid, t) in self.tasks.iter().enumerate() {
            if t.state == TState::Blocked {
                inv.tasks_blocked_at_end += 1;
                if self.wg.blocker(tid as Tid).is_none() {
                    inv.tasks_blocked_without_waker += 1;
                }
            }
        }
        Outcome {
            samples: self.samples,
            hooks,
            bg_read: self.bg_read,
            bg_written: self.bg_written,
            sim_end: self.fg_done_at.unwrap_or(self.q.now().min(self.end)),
            events: self.q.popped(),
            pages: self.pc.inserted,
            invariants: inv,
            dev_read: self.st.served_bytes_read(),
            dev_written: self.st.served_bytes_written(),
            dev_reorders: self.st.reorders(),
            timeline: self.timeline,
            fg_cpu_waits: self.fg_cpu_waits,
            trace: self.rec.map(|mut r| {
                r.sort_by_key(|x| x.time_ns());
                r
            }),
            dev_fg_behind_bg: self.st.fg_behind_bg(),
            fg_pages_evicted: self.pc.evicted_fg,
            fg_evicted_while_bg_clean: self.pc.evicted_fg_while_bg_clean,
            ui,
            bg_net_threads,
            bg_net_wait_ns,
            cells,
            fg_threads_unfinished: if self.fg_done_at.is_some() { 0 } else { self.fg_tasks_left as u64 },
            nosync_fsyncs: self.vfs.nosync_fsyncs,
            lfs: self.fs.log.as_ref().map(|l| LfsOutcome {
                appended: l.appended,
                segments_used: l.segments_used,
                full: l.full,
                cleaner_passes: l.cleaner_passes,
                cleaner_blocks: l.cleaner_blocks,
            }),
            raid_pieces: self.st.pieces,
            host_reclaim: self.host.as_ref().map(|h| (h.reported, h.refaulted)),
            stall: self.q.stall_report(),
        }
    }
}
