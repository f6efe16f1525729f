//! Building a [`World`] from a scenario: the CPU scheduler and its groups, the page cache, the
//! file system and its regions (FAT mounts, the log-structured area), the block devices (one
//! flash device, a RAID-0 array, the devices of FAT mounts), the kernel threads, the apps'
//! threads with their compiled programs, and the files on flash at the start.
//!
//! Invariants it establishes: task ids are dense and in creation order (the flusher, jbd2 and
//! kswapd first, then the log cleaner if any, then the apps' threads in instance order); every
//! task starts blocked with a [`Wait`] and a blocker in the wait graph (`Timer` until its start
//! time, `Idle` for kernel threads); nobody is foreground until a `foreground` op runs.

use std::collections::BTreeMap;

use forefront_engine::{EventQueue, Rng, RngStreams, SimTime};
use forefront_model::block::ReqSlab;
use forefront_model::cpu::{nice_to_weight, CpuSched, SchedKind, ROOT_GROUP};
use forefront_model::flash::FlashParams;
use forefront_model::fs::{Fs, Journal, BLOCK};
use forefront_model::kernel::After;
use forefront_model::mm::writeback::{Thresholds, WritebackState};
use forefront_model::mm::PageCache;
use forefront_model::prov::{Tid, Uid};
use forefront_model::storage::Storage;
use forefront_model::wait::{Blocker, WaitGraph};
use forefront_policy::Policy;
use forefront_workload::{Costs, Op, Role, Scenario};

use super::{App, Ev, Exec, Kind, TState, Task, Wait, World, BG_GROUP, BUCKET_MS};
use crate::program::{compile, Instr, Names};
use crate::Cat;
use forefront_model::fs::vfs::{MountClass, Vfs};

/// The scenario's [`Costs`] in ns, each converted once as `(us × 1000) as u64`.
#[derive(Clone, Copy, Debug)]
pub(super) struct CostsNs {
    pub(super) syscall: u64,
    pub(super) copy_page: u64,
    pub(super) copy_write_page: u64,
    pub(super) alloc_page: u64,
    pub(super) reclaim_page: u64,
    pub(super) submit_request: u64,
    pub(super) writeback_page: u64,
    pub(super) journal_block: u64,
    pub(super) metadata: u64,
    pub(super) wakeup: u64,
}

impl CostsNs {
    fn of(c: &Costs) -> CostsNs {
        let ns = |us: f64| (us * 1e3) as u64;
        CostsNs {
            syscall: ns(c.syscall_us),
            copy_page: ns(c.copy_page_us),
            copy_write_page: ns(c.write_copy_page_us()),
            alloc_page: ns(c.alloc_page_us),
            reclaim_page: ns(c.reclaim_page_us),
            submit_request: ns(c.submit_request_us),
            writeback_page: ns(c.writeback_page_us),
            journal_block: ns(c.journal_block_us),
            metadata: ns(c.metadata_us),
            wakeup: ns(c.wakeup_us),
        }
    }
}

/// The syscall name, path and size an op shows in exported traces (None: not a syscall).
/// Whether any thread of the scenario delivers input events.
pub(super) fn has_input(sc: &Scenario) -> bool {
    fn any(ops: &[Op]) -> bool {
        ops.iter().any(|op| match op {
            Op::Input { .. } => true,
            Op::Repeat { ops, .. } => any(ops),
            _ => false,
        })
    }
    sc.apps.iter().any(|a| a.threads.iter().any(|t| any(&t.ops)))
}

pub(super) const KERNEL_UID: Uid = 0;

/// The dirty thresholds of a page cache of `capacity` pages: the ratios, or `dirty_bytes` /
/// `dirty_background_bytes` where set (`domain_dirty_limits`, mm/page-writeback.c: a byte value
/// is rounded up to pages and replaces its ratio; a background threshold at or above the limit
/// becomes half the limit).
fn thresholds(phone: &forefront_workload::Phone, capacity: u64) -> Thresholds {
    let mut t = Thresholds::of(capacity, phone.dirty_background_ratio, phone.dirty_ratio);
    if phone.dirty_bytes == 0 && phone.dirty_background_bytes == 0 {
        return t;
    }
    if phone.dirty_bytes > 0 {
        t.limit_pages = phone.dirty_bytes.div_ceil(4096);
    }
    if phone.dirty_background_bytes > 0 {
        t.background_pages = phone.dirty_background_bytes.div_ceil(4096);
    }
    if t.background_pages >= t.limit_pages {
        t.background_pages = t.limit_pages / 2;
    }
    t
}

impl World {
    pub fn new(sc: &Scenario, dev: FlashParams, policy: Policy, bg_apps: u32, seed: u64) -> World {
        let streams = RngStreams::new(seed);
        let phone = sc.phone.clone();
        let (mut fg_w, mut bg_w) = forefront_policy::cpu_shares(&policy, phone.fg_cpu_shares, phone.bg_cpu_shares);
        if let Some(cfg) = &policy.agent {
            (fg_w, bg_w) = super::agent::cpu_weights(cfg, (fg_w, bg_w), false);
        }
        let mut cpu_params = phone.cpu.clone();
        if forefront_policy::runs_vt_cfs(&policy) {
            cpu_params.scheduler = SchedKind::VtCfs;
        }
        let mut cpu = CpuSched::new(cpu_params, vec![1024, fg_w, bg_w, 1024]);
        cpu.set_group_cpus(BG_GROUP, phone.bg_cores.iter().fold(0u64, |m, &c| m | (1u64 << c)));
        let (cell_list, instances) = sc.instances(bg_apps, sc.bg_cells);
        let capacity = sc.cells_params.page_cache_mib(phone.page_cache_mib, cell_list.len()) * 256;
        let pc = PageCache::new(capacity);
        let max_sectors = (phone.max_request_kib * 2) as u32;
        // The run's device first, then the RAID-0 members the scenario adds (validated at load).
        let mut devs = vec![dev];
        for name in &phone.storage.raid0_with {
            devs.push(forefront_workload::load_device(name).expect("scenario validation checked the device names"));
        }
        // RAID-0 uses each member up to the smallest one's capacity.
        let capacity_gib = devs.iter().map(|d| d.capacity_gib).min().unwrap_or(0) * devs.len() as u64;
        let mut fs = Fs::new(phone.fs.clone(), capacity_gib << 30, streams.stream("fs.alloc"));
        let stripe = devs.len();
        // Devices of FAT mounts, each once, in mount order: their LBA ranges follow the main
        // device's (validated at load).
        let mut mount_devs: Vec<&str> = Vec::new();
        for m in &sc.mounts {
            if let Some(d) = m.device.as_deref().filter(|d| !mount_devs.contains(d)) {
                mount_devs.push(d);
            }
        }
        for d in &mount_devs {
            let p = forefront_workload::load_device(d).expect("scenario validation checked the mount devices");
            fs.add_region(p.capacity_gib << 18);
            devs.push(p);
        }
        let mount_region: Vec<u8> = sc
            .mounts
            .iter()
            .map(|m| m.device.as_deref().and_then(|d| mount_devs.iter().position(|x| *x == d)).map_or(0, |i| i as u8 + 1))
            .collect();
        let mut weights = [phone.blkio_root_weight, phone.blkio_root_weight, phone.blkio_bg_weight];
        if let Some(cfg) = &policy.agent {
            weights = super::agent::blkio_weights(cfg, weights);
        }
        let layout = (stripe, phone.storage.chunk_kib);
        let st = Storage::build(devs, layout, &phone.scheduler, &weights, max_sectors, |i| {
            streams.stream(&format!("flash.service.{i}"))
        });
        let agent_cfg = policy.agent.clone();
        let mut w = World {
            q: EventQueue::with_capacity(4096),
            cpu,
            pc,
            fs,
            jn: Journal::new(),
            reqs: ReqSlab::default(),
            st,
            scratch_done: Vec::new(),
            tasks: Vec::new(),
            apps: Vec::new(),
            ns: CostsNs::of(&phone.costs),
            costs: phone.costs.clone(),
            wb: WritebackState::new(thresholds(&phone, capacity)),
            throttle: Default::default(),
            phone,
            prio: super::priority::Priority::new(policy),
            fg_uid: None,
            flusher: 0,
            jbd2: 1,
            kswapd: 2,
            kick_pending: false,
            wg: WaitGraph::new(1),
            chans: BTreeMap::new(),
            link: forefront_model::net::Link::new(sc.phone.link()),
            async_queued: 0,
            timeline: forefront_record::run::Timeline { bucket_ms: BUCKET_MS as f64, ..Default::default() },
            bucket_fg: 0,
            bucket_bg: 0,
            rec: None,
            core_curr: Vec::new(),
            fg_cpu_waits: None,
            scratch_ids: Vec::new(),
            scratch_waiters: Vec::new(),
            scratch_started: Vec::new(),
            samples: Vec::new(),
            fg_tasks_left: 0,
            fg_done_at: None,
            end: SimTime::from_secs_f64(sc.duration_s),
            bg_read: 0,
            bg_written: 0,
            inv: Default::default(),
            max_sectors,
            ui: super::ui::Ui::new(has_input(sc)),
            think_rng: streams.stream("workload.think"),
            compute_spread: forefront_engine::Spread::new(sc.phone.cpu.compute_cv),
            compute_rng: streams.stream("cpu.compute"),
            rtt_spread: forefront_engine::Spread::new(sc.phone.net_rtt_cv),
            rtt_rng: streams.stream("net.rtt"),
            cells: cell_list.iter().map(super::cells::Cell::new).collect(),
            fg_cell: (!cell_list.is_empty()).then_some(0),
            cells_params: sc.cells_params.clone(),
            mounts: sc.mounts.clone(),
            mount_region,
            vfs: Vfs::default(),
            knobs: Default::default(),
            knob_specs: sc.knobs.clone(),
            agent: None,
            host: None,
        };
        if let Some(h) = sc.phone.host_reclaim.as_ref() {
            use forefront_model::mm::host::{FreeLedger, HostReclaim};
            let pages = |mib: f64| (mib * 256.0).round() as u64;
            let cfg = HostReclaim {
                interval_ns: (h.interval_ms * 1e6).round() as u64,
                pass_pages: pages(h.pass_mib),
                reserve_pages: pages(h.reserve_mib),
                page_ns: (h.page_us * 1e3).round() as u64,
                read_page_ns: (h.read_page_us.unwrap_or(h.page_us) * 1e3).round() as u64,
            };
            // The free blocks below the reporting order (twin29), KiB per order in pages.
            let fragments: Vec<u64> = h.fragments_kib.iter().map(|k| (k / 4.0).round() as u64).collect();
            w.host = Some(if h.passes.is_empty() {
                FreeLedger::new(cfg, pages(h.backed_mib)).with_fragments(&fragments)
            } else {
                // The passes a run measured, each at its time (twin27).
                let passes: Vec<(SimTime, u64)> =
                    h.passes.iter().map(|[ms, mib]| (SimTime::ZERO.after((ms * 1e6).round() as u64), pages(*mib))).collect();
                let (l, first) = FreeLedger::scripted(cfg, pages(h.backed_mib), &passes);
                let l = l.with_fragments(&fragments);
                if let Some(t) = first {
                    w.q.schedule(t, Ev::HostReport);
                }
                l
            });
        }
        if w.ui.enabled {
            w.cpu.record_latencies();
        }
        // Kernel threads: the write-back flusher and the jbd2 commit thread (root group, nice 0).
        w.apps.push(App::new("kernel", KERNEL_UID, Role::System, "kernel", None));
        w.flusher = w.add_task("flush-8:0", 0, Kind::Flusher, Vec::new(), false, 0);
        w.jbd2 = w.add_task("jbd2/sda-8", 0, Kind::Jbd2, Vec::new(), false, 0);
        w.kswapd = w.add_task("kswapd0", 0, Kind::Kswapd, Vec::new(), false, 0);
        w.wg.set_jbd2(w.jbd2);
        // A log-structured mount: its area at the end of the device and its cleaner task.
        let lfs: Vec<&forefront_workload::Mount> =
            sc.mounts.iter().filter(|m| m.fs == forefront_workload::MountFs::Lfs).collect();
        let mut cleaner = None;
        if !lfs.is_empty() {
            let mib = lfs.iter().filter_map(|m| m.size_mib).max().unwrap_or(forefront_workload::DEFAULT_LFS_MIB);
            w.fs.add_log_area(mib * 256, forefront_model::fs::log::SEGMENT_BLOCKS);
            cleaner = Some(w.add_task("nilfs_cleanerd", 0, Kind::Cleaner, Vec::new(), false, 0));
        }
        w.tasks[w.flusher as usize].exec = Exec::Flusher;
        w.tasks[w.jbd2 as usize].exec = Exec::Jbd2;

        // Apps: the FG app and system apps once, the BG template `bg_apps` times, then each
        // cell's apps (`Scenario::instances`).
        let mut jitter = streams.stream("workload.start");
        let mut starts: Vec<(Tid, SimTime)> = Vec::new();
        // Per app, its windows of life (`alive_s`; none for the kernel's).
        let mut lives: Vec<Vec<[f64; 2]>> = vec![vec![]];
        for (uid, inst) in (10_000..).zip(&instances) {
            let spec = inst.spec;
            let app = w.apps.len();
            let name = inst.name.clone();
            let mut a = App::new(&name, uid, spec.role, &spec.name, inst.cell);
            a.headline = spec.role == Role::Fg && inst.cell.is_none_or(|c| cell_list[c].role == forefront_workload::CellRole::Fg);
            w.apps.push(a);
            lives.push(spec.alive_s.clone());
            let start = if let Some(&[from, _]) = spec.alive_s.first() {
                SimTime::from_secs_f64(from)
            } else if spec.start_jitter_ms > 0.0 {
                SimTime::from_secs_f64(jitter.gen_range(0.0..spec.start_jitter_ms) / 1e3)
            } else {
                SimTime::ZERO
            };
            let names = Names { inst: inst.inst, cell: inst.cell.map(|c| (cell_list[c].name.as_str(), &sc.cells_params)) };
            for t in &spec.threads {
                let mut prog = Vec::new();
                compile(&t.ops, names, &mut prog);
                let tid = w.add_task(&format!("{name}:{}", t.name), app, Kind::User, prog, t.background_priority, t.nice);
                if w.apps[app].headline {
                    w.fg_tasks_left += 1;
                }
                starts.push((tid, start));
            }
        }
        // Files on flash at the start: one per owning app instance (a cell's private copy),
        // one in all for a cell's shared base.
        for f in &sc.files {
            let owners: Vec<usize> = (0..w.apps.len()).filter(|&a| w.apps[a].spec == f.owner).collect();
            for app in owners {
                let (inst, cell) = (instances[app - 1].inst, w.apps[app].cell);
                let names = Names { inst, cell: cell.map(|c| (w.cells[c].name.as_str(), &sc.cells_params)) };
                let path = names.path(&f.path);
                if cell.is_some() && w.vfs.lookup(&path).is_some() {
                    continue;
                }
                let uid = w.apps[app].uid;
                let id = w.create_file(&path, uid);
                if w.vfs.class(id) == MountClass::Tmpfs {
                    w.vfs.tmpfs_resize(&mut w.pc, &mut w.fs, id, f.size.0);
                    continue;
                }
                let blocks = f.size.0.div_ceil(BLOCK);
                if w.fs.inodes[id as usize].log {
                    w.fs.log_write(id, 0, blocks);
                } else if w.fs.inodes[id as usize].region > 0 {
                    w.fs.region_allocate(id, 0, blocks);
                } else {
                    w.fs.allocate(id, 0, blocks, &mut Vec::new());
                }
                w.fs.inodes[id as usize].size = f.size.0;
                if f.cached {
                    let n = blocks.min(w.pc.free_pages()) as u32;
                    w.pc.insert_run(id, 0, n, uid);
                    w.pc.set_uptodate_range(id, 0, n);
                }
            }
        }
        if let Some(cfg) = agent_cfg {
            w.agent_start(*cfg, &sc.headline);
        }
        // Initial CPU groups: nobody is foreground until a `foreground` op runs.
        for tid in 0..w.tasks.len() as Tid {
            let g = w.group_for(tid);
            w.cpu.set_group(tid, g, SimTime::ZERO);
        }
        for (tid, at) in starts.into_iter().chain(cleaner.map(|t| (t, SimTime::ZERO))) {
            w.q.schedule(at, Ev::Wake(tid, 0));
            w.tasks[tid as usize].wait = Some(Wait { cat: Cat::Sleep, own: false, fg_io: false });
            w.wg.block(tid, Blocker::Timer, SimTime::ZERO);
            w.tasks[tid as usize].state = TState::Blocked;
        }
        if w.phone.periodic_writeback {
            let wb = SimTime::from_secs_f64(w.phone.writeback_interval_s);
            w.q.schedule(wb, Ev::FlusherTimer);
        }
        w.schedule_knobs();
        w.schedule_lives(&lives);
        w.q.schedule(SimTime::from_secs_f64(w.phone.fs.commit_interval_s), Ev::CommitTimer);
        w.q.schedule(SimTime::from_ms(BUCKET_MS), Ev::Sample);
        // Kernel threads start idle (blocked on their wake-up).
        for k in [w.flusher, w.jbd2, w.kswapd] {
            w.tasks[k as usize].state = TState::Blocked;
            w.tasks[k as usize].wait = Some(Wait { cat: Cat::Sleep, own: false, fg_io: false });
            w.wg.block(k, Blocker::Idle, SimTime::ZERO);
        }
        w
    }

    pub(super) fn add_task(&mut self, name: &str, app: usize, kind: Kind, prog: Vec<Instr>, bg_prio: bool, nice: i32) -> Tid {
        let tid = self.tasks.len() as Tid;
        let uid = self.apps[app].uid;
        self.cpu.add_task(tid, ROOT_GROUP, nice_to_weight(nice));
        self.wg.add_task();
        self.ui.add_task(nice);
        self.tasks.push(Task {
            name: name.to_string(),
            app,
            uid,
            pid: app as u32,
            kind,
            state: TState::Blocked,
            after: After::Step,
            token: 0,
            prog,
            pc: 0,
            loops: Vec::new(),
            exec: Exec::None,
            wait: None,
            acc: [0; Cat::COUNT],
            phases: Vec::new(),
            bg_prio,
            span: None,
            zero_steps: 0,
            user_burst: false,
            life: Default::default(),
        });
        tid
    }
}
