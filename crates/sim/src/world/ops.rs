//! Tasks' programs: fetching the next instruction (loops, iteration substitution) and starting
//! each op. File ops hand over to the model's layers — `fs::ext4`'s step function on the
//! phone's ext4, `fs::vfs` on tmpfs and `sync = false` mounts (the mount a new file is on is
//! resolved here, from the scenario's mounts); kernel threads step in `mm::writeback`,
//! `fs::jbd2`, `mm::reclaim` and `fs::cleaner`. The rest is the framework's: IPC, network,
//! phases, foreground changes, raw bios.
//!
//! A step returns the CPU work to do first and what follows it ([`After`]); a step that blocks
//! registers its wait before returning [`After::Block`].

use forefront_engine::Rng;
use forefront_model::block::{Completes, ReqOp, Request};
use forefront_model::fs::cleaner;
use forefront_model::fs::ext4::{self, FileOp, MetaKind};
use forefront_model::fs::jbd2::{self, Jbd2Costs};
use forefront_model::fs::vfs::{MountClass, TmpfsCall, TmpfsCosts};
use forefront_model::kernel::After;
use forefront_model::mm::reclaim;
use forefront_model::mm::writeback::{self, WritebackParams};
use forefront_model::mm::FileId;
use forefront_model::prov::{Origin, Provenance, Tid, Uid};
use forefront_model::wait::{Blocker, Why};
use forefront_policy::Hook;
use forefront_workload::Op;

use super::{Ev, Exec, Kind, Sample, World};
use crate::program::Instr;
use crate::Cat;

/// Process ids `exec` gives start above this (an app's tasks carry its index as their pid).
const EXEC_PID_BASE: u32 = 1 << 20;

/// An IPC channel: a counting semaphore (its waiters are in the wait graph).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Chan {
    pub(super) id: u32,
    pub(super) signals: u64,
    /// Stored signals sent by a task of the user-interactive chain (the consumer joins it).
    pub(super) from_chain: u64,
}

impl World {
    /// Advance `tid` by one step: returns CPU work to do first (ns) and what follows it.
    pub(super) fn step(&mut self, tid: Tid) -> (u64, After) {
        // Kernel code unless the instruction below is a `compute` (user code).
        self.tasks[tid as usize].user_burst = false;
        match self.tasks[tid as usize].kind {
            Kind::Flusher => {
                let p = WritebackParams {
                    // Extended while write-back is held (see `knobs`).
                    expire_ns: self.dirty_expire_ns(),
                    background_pages: self.wb.thresholds.background_pages,
                    nr_requests: self.phone.nr_requests,
                    submit_ns: self.ns.submit_request,
                };
                return writeback::flusher_step(self, tid, &p);
            }
            Kind::Jbd2 => {
                let costs = Jbd2Costs { journal_block: self.ns.journal_block, submit: self.ns.submit_request };
                return jbd2::step(self, tid, &costs);
            }
            Kind::Kswapd => {
                let costs = self.reclaim_costs();
                return reclaim::kswapd_step(self, tid, &costs);
            }
            Kind::Cleaner => {
                let k = self.ext4_params();
                return cleaner::step(self, tid, &k);
            }
            Kind::User => {}
        }
        match self.tasks[tid as usize].exec {
            Exec::None => {}
            Exec::Binder(stage) => return self.binder_step(tid, stage),
            Exec::Present(results) => return self.present(tid, results),
            _ => return self.continue_op(tid),
        }
        // Fetch the next instruction (the previous op, if any, has finished).
        if self.rec.is_some() {
            self.rec_span_end(tid);
        }
        // The cgroup freezer stops a task here, between ops (a scenario's `[[knob]]` or the
        // agent's pause), and a kill (`super::life`).
        if self.frozen_before_op(tid) {
            return (0, After::Block);
        }
        let t = &mut self.tasks[tid as usize];
        let Some(instr) = t.prog.get(t.pc).cloned() else {
            return (0, After::Exit);
        };
        t.pc += 1;
        match instr {
            Instr::LoopStart { times, .. } => {
                t.loops.push((t.pc, times, 0));
                (0, After::Step)
            }
            Instr::LoopEnd { start } => {
                let (body, left, iter) = t.loops.pop().expect("balanced loops");
                debug_assert_eq!(body, start + 1);
                if left == 0 {
                    t.loops.push((body, 0, iter.wrapping_add(1)));
                    t.pc = body;
                } else if left > 1 {
                    t.loops.push((body, left - 1, iter + 1));
                    t.pc = body;
                }
                (0, After::Step)
            }
            Instr::Op(mut op) => {
                let n = t.loops.len();
                let iter = |k: usize| n.checked_sub(k + 1).map_or(0, |i| t.loops[i].2);
                crate::program::subst_iteration(&mut op, iter(0), iter(1));
                if self.rec.is_some() {
                    self.tasks[tid as usize].span = super::record::span_of(&op, self.now());
                }
                let virt = self.cell_overhead(tid, &op);
                let (work, after) = self.start_op(tid, op);
                (work + virt, after)
            }
        }
    }

    /// A pid for a new process: one no app's task has (theirs are app indices) and no earlier
    /// one was given.
    pub(super) fn new_pid(&self) -> u32 {
        let last = self.tasks.iter().map(|t| t.pid).max().unwrap_or(0);
        last.max(EXEC_PID_BASE) + 1
    }

    /// The channel named `name` (created on first use, numbered in creation order).
    pub(super) fn chan(&mut self, name: String) -> Chan {
        let next = self.chans.len() as u32;
        *self.chans.entry(name).or_insert(Chan { id: next, signals: 0, from_chain: 0 })
    }

    pub(super) fn file_of(&mut self, path: &str, uid: Uid) -> FileId {
        match self.vfs.lookup(path) {
            Some(id) => id,
            None => self.create_file(path, uid),
        }
    }

    pub(super) fn start_op(&mut self, tid: Tid, op: Op) -> (u64, After) {
        if !self.mounts.is_empty() {
            if let Some(step) = self.mounted_op(tid, &op) {
                return step;
            }
        }
        let now = self.now();
        let uid = self.tasks[tid as usize].uid;
        let sys = self.ns.syscall;
        let set = |w: &mut World, e: Exec| w.tasks[tid as usize].exec = e;
        match op {
            Op::Open { path } | Op::Close { path } | Op::Stat { path } => {
                self.file_of(&path, uid);
                (sys, After::Step)
            }
            Op::Exec => {
                self.tasks[tid as usize].pid = self.new_pid();
                (sys, After::Step)
            }
            Op::Creat { path } => {
                let file = self.file_of(&path, uid);
                self.fs.inodes[file as usize].unlinked = false;
                set(self, Exec::File(FileOp::Meta { file, kind: MetaKind::Creat, stage: 0 }));
                (sys, After::Step)
            }
            Op::Unlink { path } => match self.vfs.unlink(&path) {
                Some(file) => {
                    set(self, Exec::File(FileOp::Meta { file, kind: MetaKind::Unlink, stage: 0 }));
                    (sys, After::Step)
                }
                None => (sys, After::Step), // ENOENT
            },
            Op::Truncate { path, size } => {
                let file = self.file_of(&path, uid);
                set(self, Exec::File(FileOp::Meta { file, kind: MetaKind::Truncate(size.0), stage: 0 }));
                (sys, After::Step)
            }
            Op::Read { path, offset, len, chunk, drop_behind } => {
                let file = self.file_of(&path, uid);
                let size = self.fs.inodes[file as usize].size;
                let end = (offset.0 + len.0).min(size);
                if offset.0 >= end {
                    return (sys, After::Step);
                }
                let call_end = end.min(offset.0 + chunk.0);
                set(self, Exec::File(FileOp::Read { file, pos: offset.0, end, chunk: chunk.0, call_end, drop_behind }));
                (sys, After::Step)
            }
            Op::Write { path, offset, len, chunk } => {
                let file = self.file_of(&path, uid);
                let start = offset.map_or(self.fs.inodes[file as usize].size, |o| o.0);
                let end = start + len.0;
                if len.0 == 0 {
                    return (sys, After::Step);
                }
                let call_end = end.min(start + chunk.0);
                set(self, Exec::File(FileOp::Write { file, pos: start, end, chunk: chunk.0, call_end, meta_done: false }));
                (sys, After::Step)
            }
            Op::Fsync { ref path } | Op::Fdatasync { ref path } => {
                let datasync = matches!(op, Op::Fdatasync { .. });
                let path = path.clone();
                let file = self.file_of(&path, uid);
                set(self, Exec::File(FileOp::Fsync { file, stage: 0, datasync, from: 0, to: 0 }));
                (sys, After::Step)
            }
            Op::Compute { ms } => {
                self.tasks[tid as usize].user_burst = true;
                let ms = ms * self.compute_spread.sample(&mut self.compute_rng);
                (((ms * 1e6) as u64).max(1), After::Step)
            }
            Op::Sleep { ms } => (0, After::Sleep(now.after((ms * 1e6) as u64))),
            Op::SleepUntil { ms } => (0, After::Sleep(now.max(forefront_engine::SimTime::ZERO.after((ms * 1e6) as u64)))),
            Op::Think { ms, jitter_ms } => {
                let extra = if jitter_ms > 0.0 { self.think_rng.gen_range(0.0..jitter_ms) } else { 0.0 };
                (0, After::Sleep(now.after(((ms + extra) * 1e6) as u64)))
            }
            Op::NetRecv { bytes } => {
                // One round trip, then a fair share of the link until the bytes are in.
                self.link.request(tid, bytes.0);
                self.tasks[tid as usize].wait = None;
                self.wg.unblock(tid);
                self.block_on(tid, Blocker::Timer, Cat::Net);
                let rtt = (self.link.rtt_ns() as f64 * self.rtt_spread.sample(&mut self.rtt_rng)) as u64;
                self.q.schedule(now.after(rtt), Ev::NetJoin(tid));
                (sys, After::Block)
            }
            Op::Wait { chan } => {
                let c = self.chan(chan.clone());
                if c.signals > 0 {
                    let x = self.chans.get_mut(&chan).expect("channel");
                    x.signals -= 1;
                    if x.from_chain > 0 {
                        x.from_chain -= 1;
                        self.ui_join(tid);
                    }
                    (sys, After::Step)
                } else {
                    self.block_on(tid, Blocker::Ipc { chan: c.id }, Cat::Ipc);
                    (sys, After::Block)
                }
            }
            Op::Signal { chan } => {
                let c = self.chan(chan.clone());
                if let Some(w) = self.wg.first_blocked_on(Blocker::Ipc { chan: c.id }) {
                    // Join before the wake-up, so FTC's weight applies to it.
                    self.ui_signal(tid, Some(w), &chan);
                    self.wake(w);
                } else {
                    self.chans.get_mut(&chan).expect("channel").signals += 1;
                    self.ui_signal(tid, None, &chan);
                }
                (sys, After::Step)
            }
            Op::PhaseBegin { name } => {
                if self.agent.is_some() {
                    self.agent_phase(tid, &name, true);
                }
                let times = self.cpu.times(tid, now);
                let bg = self.bg_read + self.bg_written;
                let t = &mut self.tasks[tid as usize];
                let acc = t.acc;
                t.phases.push((name, now, acc, times, bg));
                (0, After::Step)
            }
            Op::PhaseEnd { name } => {
                let times = self.cpu.times(tid, now);
                let t = &mut self.tasks[tid as usize];
                if let Some(pos) = t.phases.iter().rposition(|p| p.0 == name) {
                    let (phase, start, acc0, (run0, wait0), bg0) = t.phases.remove(pos);
                    let bg_bytes = self.bg_read + self.bg_written - bg0;
                    let mut cats = [0u64; Cat::COUNT];
                    for (i, c) in cats.iter_mut().enumerate() {
                        *c = t.acc[i] - acc0[i];
                    }
                    cats[Cat::CpuRunning as usize] = times.0 - run0;
                    cats[Cat::CpuRunnable as usize] = times.1 - wait0;
                    let (app, cell) = (self.apps[t.app].name.clone(), self.apps[t.app].cell);
                    let on_screen = cell.is_none() || cell == self.fg_cell;
                    self.samples.push(Sample { app, cell, on_screen, phase, start, ns: now.since(start), cats, bg_bytes });
                }
                if self.agent.is_some() {
                    self.agent_phase(tid, &name, false);
                }
                (0, After::Step)
            }
            Op::Foreground { app } => {
                let found = self.apps.iter().find(|a| a.name == app).map(|a| (a.uid, a.cell));
                if let Some((uid, Some(cell))) = found {
                    // Cells: the app's cell remembers its foreground app; it is the phone's
                    // only while that cell is on the screen.
                    self.cells[cell].fg_uid = Some(uid);
                    if self.fg_cell != Some(cell) {
                        self.hook(Hook::CellForegroundDeferred);
                        return (self.us(50.0), After::Step);
                    }
                }
                self.fg_uid = found.map(|f| f.0);
                // App Status Detector: the framework writes the FG UID to sysfs.
                self.prio.fg_uid_changed();
                self.agent_foreground();
                self.regroup(now);
                (self.us(50.0), After::Step)
            }
            Op::SwitchCell { cell } => self.switch_cell(&cell),
            // Expanded when the scenario is loaded (`Scenario::validate` refuses a leftover).
            Op::Trace { .. } => (0, After::Step),
            Op::DropCaches { app, inodes } => {
                // An instance by its name, else every instance of a template by the template's.
                let mut uids: Vec<u32> = self.apps.iter().filter(|a| a.name == app).map(|a| a.uid).collect();
                if uids.is_empty() {
                    uids = self.apps.iter().filter(|a| a.spec == app).map(|a| a.uid).collect();
                }
                let files: Vec<FileId> =
                    (0..self.fs.inodes.len() as FileId).filter(|&f| uids.contains(&self.fs.inodes[f as usize].owner)).collect();
                for f in files {
                    // Every clean page goes: the stretches between dirty or in-flight ones.
                    self.pc.remove_clean_range(f, 0, u32::MAX);
                    if inodes {
                        self.fs.drop_inode(f);
                    }
                }
                (sys, After::Step)
            }
            Op::Input { phase, continuous } => self.ui_input(tid, phase, continuous),
            Op::BinderCall { service, ms } => self.binder_call(tid, &service, ms),
            Op::BinderServe { service } => self.binder_serve(tid, &service),
            Op::PostFrame { result } => self.post_frame(tid, result),
            Op::Vsync { hz } => self.vsync(hz),
            Op::Compose { ms } => self.compose(tid, ms),
            Op::Bio { write, sector, bytes, sync } => {
                let t = &self.tasks[tid as usize];
                let fg = self.prio.request_is_fg(false, self.task_is_fg(tid), false);
                let sectors = bytes.0.div_ceil(512).clamp(1, u64::from(u32::MAX)) as u32;
                let prov =
                    Provenance { uid: t.uid, pid: t.pid, tid, fg, origin: Origin::Replay, blkio_group: self.blkio_group_of(tid) };
                let op = if write { ReqOp::Write } else { ReqOp::Read };
                let req = Request::new(op, sector, sectors, sync || !write, prov);
                self.count_bytes(tid, u64::from(sectors) * 512, write);
                let id = self.submit(req, Completes::Other).id;
                let cost = self.ns.submit_request;
                if sync {
                    self.wait_request(tid, id, Why::Own, Cat::BlockQueue);
                    (cost, After::Block)
                } else {
                    (cost, After::Step)
                }
            }
            Op::Repeat { .. } | Op::Sqlite { .. } | Op::ReadRandom { .. } => unreachable!("expanded by the compiler"),
        }
    }

    pub(super) fn continue_op(&mut self, tid: Tid) -> (u64, After) {
        if self.knobs.frozen(tid) || self.life_pending(tid) {
            return self.continue_frozen(tid);
        }
        if matches!(self.tasks[tid as usize].exec, Exec::File(FileOp::Read { .. } | FileOp::Write { .. }))
            && self.alloc_gate_pauses(tid)
        {
            // A copy loop's checkpoint.
            return (0, After::Block);
        }
        match self.tasks[tid as usize].exec.clone() {
            Exec::File(op) => {
                let k = self.ext4_params();
                ext4::step(self, &k, tid, op)
            }
            _ => {
                self.tasks[tid as usize].exec = Exec::None;
                (0, After::Step)
            }
        }
    }

    /// Create the file at `path` on the mount the path is under (the phone's ext4 outside every
    /// mount).
    pub(super) fn create_file(&mut self, path: &str, uid: Uid) -> FileId {
        let mount = forefront_workload::mount_of(&self.mounts, path);
        let region = mount.and_then(|m| self.mounts.iter().position(|x| std::ptr::eq(x, m))).map_or(0, |i| self.mount_region[i]);
        let class = match mount {
            None => MountClass::Ext4,
            Some(m) if m.fs == forefront_workload::MountFs::Vfat => MountClass::Vfat,
            Some(m) if m.fs == forefront_workload::MountFs::Tmpfs => MountClass::Tmpfs,
            Some(m) if m.fs == forefront_workload::MountFs::Lfs => MountClass::Lfs,
            Some(m) if !m.sync => MountClass::Ext4NoSync,
            Some(_) => MountClass::Ext4,
        };
        self.vfs.create(&mut self.pc, &mut self.fs, path, uid, class, region)
    }

    /// A file operation on a file of a mount other than the phone's synchronous ext4: on
    /// tmpfs every operation is CPU work only (a syscall per call, a copy per page, an
    /// allocation per new page); on an ext4 mount with `sync = false`, fsync and fdatasync
    /// return at once. `None`: the operation takes the ordinary path.
    // Out of line: only scenarios with mounts take it; it keeps `start_op` small.
    #[inline(never)]
    pub(super) fn mounted_op(&mut self, tid: Tid, op: &Op) -> Option<(u64, After)> {
        let path = match op {
            Op::Creat { path }
            | Op::Unlink { path }
            | Op::Truncate { path, .. }
            | Op::Read { path, .. }
            | Op::Write { path, .. }
            | Op::Fsync { path }
            | Op::Fdatasync { path } => path,
            _ => return None,
        };
        let uid = self.tasks[tid as usize].uid;
        let class = match self.vfs.lookup(path) {
            Some(f) => self.vfs.class(f),
            None if matches!(op, Op::Unlink { .. }) => return None, // ENOENT
            None => {
                let f = self.file_of(path, uid);
                self.vfs.class(f)
            }
        };
        let is_sync = matches!(op, Op::Fsync { .. } | Op::Fdatasync { .. });
        match class {
            MountClass::Ext4 | MountClass::Lfs | MountClass::Vfat => None,
            MountClass::Ext4NoSync if is_sync => {
                self.vfs.nosync_fsyncs += 1;
                Some((self.us(self.costs.syscall_us), After::Step))
            }
            MountClass::Ext4NoSync => None,
            MountClass::Tmpfs => {
                let file = if matches!(op, Op::Unlink { .. }) {
                    self.vfs.unlink(path).expect("looked up above")
                } else {
                    self.file_of(path, uid)
                };
                let call = match *op {
                    Op::Creat { .. } => TmpfsCall::Create,
                    Op::Unlink { .. } => TmpfsCall::Unlink,
                    Op::Truncate { size, .. } => TmpfsCall::Truncate(size.0),
                    Op::Read { offset, len, chunk, .. } => TmpfsCall::Read { offset: offset.0, len: len.0, chunk: chunk.0 },
                    Op::Write { offset, len, chunk, .. } => {
                        TmpfsCall::Write { offset: offset.map(|o| o.0), len: len.0, chunk: chunk.0 }
                    }
                    _ => TmpfsCall::Sync,
                };
                let c = &self.costs;
                let costs = TmpfsCosts {
                    syscall_us: c.syscall_us,
                    metadata_us: c.metadata_us,
                    copy_page_us: c.copy_page_us,
                    copy_write_page_us: c.write_copy_page_us(),
                    alloc_page_us: c.alloc_page_us,
                };
                let (us, read, written) = self.vfs.tmpfs_call(&mut self.pc, &mut self.fs, file, call, &costs);
                match call {
                    TmpfsCall::Read { .. } => self.count_bytes(tid, read, false),
                    TmpfsCall::Write { .. } => self.count_bytes(tid, written, true),
                    _ => {}
                }
                Some((self.us(us), After::Step))
            }
        }
    }
}
