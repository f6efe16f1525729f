//! Cells (SOSP'11) in the world: virtual phones sharing the kernel, and the one on the screen.
//!
//! What a cell changes, each from a mechanism of the paper (costs in
//! [`forefront_workload::CellsParams`]):
//! - **who is foreground**: only the foreground cell's own foreground app is the phone's
//!   ([`World::role_now`]); every app of a background cell is a background app of the phone,
//!   whatever its role inside its cell, so every policy treats it as background;
//! - **switching** (`switch_cell`): the device mux saves and restores the framebuffer (CPU work
//!   of the switching task), the new cell's remembered foreground app becomes the phone's, and
//!   every task's CPU group follows at once;
//! - **virtualisation overhead**: a lookup through the unioned file system per namespace
//!   operation (open, creat, stat, unlink), a device-namespace check per call into a
//!   virtualised driver (binder, input, frames, vsync), and the resident memory of each extra
//!   cell's user space taken from the page cache.
//!
//! Simplifications versus Cells: no copy-up (a cell cannot write its shared base, refused at
//! load), no KSM scanning cost (its effect is folded into `vp_memory_mib`), the framebuffer
//! copies are CPU work only (no memory-bus contention), and the radio/telephony proxies of the
//! paper are not modelled.

use forefront_engine::SimTime;
use forefront_model::kernel::After;
use forefront_model::prov::{Tid, Uid};
use forefront_policy::Hook;
use forefront_workload::{CellInstance, CellRole, Op, Role};

use super::{App, World};

/// A virtual phone of the run.
pub(super) struct Cell {
    pub name: String,
    template: String,
    role: CellRole,
    /// The app its own framework put in the foreground last (the phone's while on screen).
    pub fg_uid: Option<Uid>,
    /// Since when it is on the screen (while it is).
    since: SimTime,
    on_screen_ns: u64,
    switched_in: u64,
}

impl Cell {
    pub fn new(c: &CellInstance) -> Cell {
        Cell {
            name: c.name.clone(),
            template: c.template.clone(),
            role: c.role,
            fg_uid: None,
            since: SimTime::ZERO,
            on_screen_ns: 0,
            switched_in: 0,
        }
    }
}

/// One virtual phone's share of a run.
#[derive(Clone, Debug)]
pub struct CellOutcome {
    pub name: String,
    pub template: String,
    /// `fg`, `busy` or `idle`: its role when the run started.
    pub role: &'static str,
    pub apps: Vec<String>,
    /// Time on the screen (ns), and how often it was switched to.
    pub on_screen_ns: u64,
    pub switched_in: u64,
    /// CPU time of its threads (ns) and their syscall bytes.
    pub cpu_ns: u64,
    pub read: u64,
    pub written: u64,
}

impl App {
    pub(super) fn new(name: &str, uid: Uid, role: Role, spec: &str, cell: Option<usize>) -> App {
        App { name: name.to_string(), uid, role, spec: spec.to_string(), cell, headline: false, read: 0, written: 0 }
    }
}

impl World {
    /// The role the phone sees for `app` now: its own outside cells and in the foreground
    /// cell; background for every app of a background cell.
    pub(super) fn role_now(&self, app: usize) -> Role {
        let a = &self.apps[app];
        match a.cell {
            Some(c) if Some(c) != self.fg_cell => Role::Bg,
            _ => a.role,
        }
    }

    /// Virtualisation work `op` costs a task of a cell (ns), besides the op's own: CPU work,
    /// so it spreads like a `compute` burst (`[phone.cpu] compute_cv`, drawn only for the ops
    /// that have such work, so runs without cells draw nothing more).
    pub(super) fn cell_overhead(&mut self, tid: Tid, op: &Op) -> u64 {
        if self.apps[self.tasks[tid as usize].app].cell.is_none() {
            return 0;
        }
        let p = &self.cells_params;
        let ns = match op {
            Op::Open { .. } | Op::Creat { .. } | Op::Stat { .. } | Op::Unlink { .. } => self.us(p.union_lookup_us),
            Op::BinderCall { .. }
            | Op::BinderServe { .. }
            | Op::Input { .. }
            | Op::PostFrame { .. }
            | Op::Vsync { .. }
            | Op::Compose { .. } => self.us(p.ns_call_us),
            _ => 0,
        };
        self.spread_cpu_work(ns)
    }

    /// `ns` of CPU work scattered like a `compute` burst (none drawn for zero work).
    fn spread_cpu_work(&mut self, ns: u64) -> u64 {
        if ns == 0 {
            return 0;
        }
        (ns as f64 * self.compute_spread.sample(&mut self.compute_rng)) as u64
    }

    /// `switch_cell`: put `cell` on the screen.
    pub(super) fn switch_cell(&mut self, cell: &str) -> (u64, After) {
        let now = self.now();
        let sys = self.us(self.costs.syscall_us);
        let Some(c) = self.cells.iter().position(|x| x.name == cell) else {
            self.hook(Hook::CellSwitchMissing);
            return (sys, After::Step);
        };
        self.hook(Hook::CellSwitch);
        if self.fg_cell != Some(c) {
            if let Some(old) = self.fg_cell {
                let o = &mut self.cells[old];
                o.on_screen_ns += now.since(o.since);
            }
            let n = &mut self.cells[c];
            n.since = now;
            n.switched_in += 1;
            self.fg_cell = Some(c);
            self.fg_uid = self.cells[c].fg_uid;
            self.prio.fg_uid_changed();
            self.regroup(now);
        }
        // The mux's framebuffer copies are CPU work (memcpy): they spread like it.
        let copy = self.us(self.cells_params.switch_copy_ms() * 1e3);
        (sys + self.spread_cpu_work(copy), After::Step)
    }

    pub(super) fn cell_outcomes(&self) -> Vec<CellOutcome> {
        let now = self.fg_done_at.unwrap_or(self.q.now().min(self.end));
        self.cells
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let apps: Vec<usize> = (0..self.apps.len()).filter(|&a| self.apps[a].cell == Some(i)).collect();
                let cpu_ns = (0..self.tasks.len())
                    .filter(|&t| self.apps[self.tasks[t].app].cell == Some(i))
                    .map(|t| self.cpu.times(t as Tid, now).0)
                    .sum();
                let on_screen_ns = c.on_screen_ns + if self.fg_cell == Some(i) { now.since(c.since) } else { 0 };
                CellOutcome {
                    name: c.name.clone(),
                    template: c.template.clone(),
                    role: match c.role {
                        CellRole::Fg => "fg",
                        CellRole::Busy => "busy",
                        CellRole::Idle => "idle",
                    },
                    apps: apps.iter().map(|&a| self.apps[a].name.clone()).collect(),
                    on_screen_ns,
                    switched_in: c.switched_in,
                    cpu_ns,
                    read: apps.iter().map(|&a| self.apps[a].read).sum(),
                    written: apps.iter().map(|&a| self.apps[a].written).sum(),
                }
            })
            .collect()
    }
}
