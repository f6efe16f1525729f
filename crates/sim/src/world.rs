//! The simulated phone: every layer, the tasks, and the event loop that connects them.

use std::collections::{BTreeMap, HashMap};

use forefront_engine::{EventQueue, Rng, RngStreams, SimTime};
use forefront_model::block::{BlockQueue, Insert, ReqId, ReqOp, ReqSlab, ReqTimes, Request, Submitted};
use forefront_model::cpu::{nice_to_weight, CpuSched, Expired, GroupId, SchedKind, ROOT_GROUP};
use forefront_model::flash::{FlashDevice, FlashParams, Started};
use forefront_model::fs::ext4::{self, Ext4, Ext4Params, FileOp, MetaKind};
use forefront_model::fs::jbd2::{self, Jbd2Costs};
use forefront_model::fs::{Fs, Journal, BLOCK, SECTORS_PER_BLOCK};
use forefront_model::kernel::{After, Kernel};
use forefront_model::mm::reclaim::{self, Reclaim as ReclaimCtx, ReclaimCosts};
use forefront_model::mm::writeback::{self, Writeback, WritebackParams};
use forefront_model::mm::{FileId, PageCache, ReclaimOrder, PAGE_SIZE};
use forefront_model::prov::{Origin, Provenance, Tid, Uid};
use forefront_model::storage::{Member, Storage};
use forefront_model::wait::{Blocker, Via, WaitGraph, Why};
use forefront_policy::{device_class, request_is_fg, Boost, Dependency, Dispatch as DispatchPolicy, Hook, Policy, Reclaim};
use forefront_record::trace::{
    BlockAction, BlockDetail, BlockEvent, BlockOp, DevId, Rwbs, SchedEvent, SchedRecord, SyscallRecord, TraceRecord,
};
use forefront_workload::{Costs, Op, Phone, Role, Scenario};

use crate::program::{compile, Instr, Names};
use crate::Cat;

mod cells;
mod lfs;
mod ui;
pub use cells::CellOutcome;
pub use ui::UiOutcome;

pub const FG_GROUP: GroupId = 1;
pub const BG_GROUP: GroupId = 2;

#[derive(Clone, Copy, Debug)]
pub enum Ev {
    Core(u8, u64),
    DevDone(ReqId),
    Kick,
    Wake(Tid, u32),
    FlusherTimer,
    CommitTimer,
    /// A `net_recv`'s round trip is over: its bytes start to flow.
    NetJoin(Tid),
    /// The link's next transfer completion (generation: stale ones are ignored).
    NetDone(u64),
    /// Close a timeline bucket.
    Sample,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TState {
    /// On a core or in a run queue.
    Runnable,
    Blocked,
    Done,
}

/// The scenario's [`Costs`] in ns, each converted once as `(us × 1000) as u64`.
#[derive(Clone, Copy, Debug)]
struct CostsNs {
    syscall: u64,
    copy_page: u64,
    alloc_page: u64,
    reclaim_page: u64,
    submit_request: u64,
    writeback_page: u64,
    journal_block: u64,
    metadata: u64,
    wakeup: u64,
}

impl CostsNs {
    fn of(c: &Costs) -> CostsNs {
        let ns = |us: f64| (us * 1e3) as u64;
        CostsNs {
            syscall: ns(c.syscall_us),
            copy_page: ns(c.copy_page_us),
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

/// How a blocked task's time is accounted. What it waits for, and since when, is in the
/// [`WaitGraph`]; a task has a `Wait` exactly when the graph has a blocker for it.
#[derive(Clone, Copy, Debug)]
struct Wait {
    cat: Cat,
    /// It waits for a request it submitted itself: time is split by the request's stage.
    own: bool,
    /// Counted in `fg_io_waiting` (a foreground task waiting for I/O).
    fg_io: bool,
}

/// An IPC channel: a counting semaphore (its waiters are in the wait graph).
#[derive(Clone, Copy, Debug, Default)]
struct Chan {
    id: u32,
    signals: u64,
    /// Stored signals sent by a task of the user-interactive chain (the consumer joins it).
    from_chain: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    User,
    Flusher,
    Jbd2,
    Kswapd,
    /// The log-structured mount's cleaner ([`lfs`]).
    Cleaner,
}

/// Progress inside a multi-step operation.
#[derive(Clone, Debug)]
enum Exec {
    None,
    /// A file operation in progress (`model::fs::ext4`).
    File(FileOp),
    /// A binder server thread inside a transaction.
    Binder(ui::BinderStage),
    /// The compositor finished composing: display the frame (it shows this many results).
    Present(u32),
    Flusher,
    Jbd2,
}

struct Task {
    name: String,
    app: usize,
    uid: Uid,
    pid: u32,
    kind: Kind,
    state: TState,
    after: After,
    token: u32,
    prog: Vec<Instr>,
    pc: usize,
    /// Open loops: (first instruction of the body, iterations left (0 = forever), iteration).
    loops: Vec<(usize, u32, u32)>,
    exec: Exec,
    wait: Option<Wait>,
    /// Blocked time per category (ns).
    acc: [u64; Cat::COUNT],
    /// Open phases: name, start, blocked time per category and CPU (running, runnable) then.
    phases: Vec<OpenPhase>,
    bg_prio: bool,
    /// The op in progress, for `--trace-out` syscall spans: (name, path, size, start).
    span: Option<(&'static str, Option<String>, Option<u64>, SimTime)>,
    zero_steps: u32,
}

/// A phase begun and not yet ended: (name, start, blocked ns per category, CPU (running,
/// runnable) ns) at its start.
type OpenPhase = (String, SimTime, [u64; Cat::COUNT], (u64, u64));

struct App {
    name: String,
    uid: Uid,
    /// Its role inside its cell (the phone's role for apps outside cells): see
    /// [`World::role_now`] for the role the phone sees.
    role: Role,
    /// Its spec's name (the owner named by `[[file]]`).
    spec: String,
    /// Its virtual phone (Cells), if any.
    cell: Option<usize>,
    /// Its threads are the foreground the run waits for (the fg app, in the fg cell).
    headline: bool,
    /// Bytes its syscalls read and wrote.
    read: u64,
    written: u64,
}

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
}

#[derive(Clone, Copy, Debug)]
enum Seg {
    /// Pages `first..first+n` of `file` (read fill or write-back).
    Pages {
        file: FileId,
        first: u32,
        n: u32,
        write: bool,
    },
    Journal,
    Meta {
        block: u64,
    },
    Other,
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
    pub dev_fg_behind_bg: u64,
    pub fg_pages_evicted: u64,
    pub fg_evicted_while_bg_clean: u64,
    /// Interactivity figures, when the scenario has input events.
    pub ui: Option<UiOutcome>,
    /// Background apps' threads: how many, and their time blocked on the network (ns).
    pub bg_threads: u64,
    pub bg_net_wait_ns: u64,
    /// Per virtual phone (Cells), in creation order: fg, busy, idle.
    pub cells: Vec<CellOutcome>,
    /// Foreground threads that had not finished their program when the run ended (at the
    /// scenario's duration); 0 when the run ended because they all had.
    pub fg_threads_unfinished: u64,
    /// fsync/fdatasync calls a `sync = false` mount made no-ops; pieces RAID-0 split requests into.
    pub nosync_fsyncs: u64,
    pub raid_pieces: u64,
    /// The log-structured area, when the scenario has an lfs mount.
    pub lfs: Option<LfsOutcome>,
    /// Why the run stopped early: time stopped advancing ([`EventQueue::stall_report`]).
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

pub struct World {
    q: EventQueue<Ev>,
    cpu: CpuSched,
    pc: PageCache,
    fs: Fs,
    jn: Journal,
    reqs: ReqSlab,
    req_serial: Vec<u64>,
    serial: u64,
    segs: Vec<Vec<Seg>>,
    /// The block devices: one flash device or a RAID-0 array, then the devices of FAT mounts,
    /// each with its own block queue.
    st: Storage,
    scratch_done: Vec<ReqId>,
    tasks: Vec<Task>,
    apps: Vec<App>,
    policy: Policy,
    costs: Costs,
    /// `costs` in ns, converted once (the file paths ask for them on every step).
    ns: CostsNs,
    phone: Phone,
    paths: HashMap<String, FileId>,
    fg_uid: Option<Uid>,
    flusher: Tid,
    jbd2: Tid,
    kswapd: Tid,
    kick_pending: bool,
    /// Who waits for what: every blocked task, journal handles, request wake lists.
    wg: WaitGraph,
    chans: BTreeMap<String, Chan>,
    /// QASIO dependency types already counted per live request (bit per [`Dependency`]).
    req_deps: Vec<u8>,
    scratch_through: Vec<Tid>,
    /// Async page write-back requests in submission order (stale entries dropped lazily).
    wb_queue: std::collections::VecDeque<(ReqId, u64)>,
    /// Boosted requests still in the host's queues: (id, serial, overtaken). The dependency
    /// types found for each are in `req_deps`.
    boost_watch: Vec<(ReqId, u64, bool)>,
    scratch_behind: Vec<(ReqId, Why, Via)>,
    /// Meta block → (request, serial) while a checkpoint write holds it.
    meta_io: HashMap<u64, (ReqId, u64)>,
    /// The network link every `net_recv` shares.
    link: forefront_model::net::Link,
    async_queued: usize,
    /// Foreground tasks waiting for I/O right now (FastTrack's Page Allocator gate).
    fg_io_waiting: u32,
    pending_release: bool,
    /// Direct reclaim found only dirty pages: the flusher writes regardless of thresholds.
    wb_for_reclaim: bool,
    timeline: forefront_record::run::Timeline,
    bucket_fg: u64,
    bucket_bg: u64,
    /// Records for `--trace-out`, when asked for.
    rec: Option<Vec<TraceRecord>>,
    core_curr: Vec<Option<Tid>>,
    scratch_ids: Vec<ReqId>,
    /// A completed request's waiters (reused: completions do not allocate).
    scratch_waiters: Vec<(Tid, SimTime)>,
    scratch_started: Vec<Started>,
    samples: Vec<Sample>,
    hooks: BTreeMap<Hook, u64>,
    fg_tasks_left: usize,
    /// When the last foreground thread finished (the run ends there).
    fg_done_at: Option<SimTime>,
    end: SimTime,
    bg_read: u64,
    bg_written: u64,
    inv: forefront_record::run::Invariants,
    dirty_bg_pages: u64,
    dirty_limit_pages: u64,
    max_sectors: u32,
    /// The framework's interactive path: interactions, frames, binder, FTC's chain.
    ui: ui::Ui,
    /// Users' think times (`think` ops).
    think_rng: forefront_engine::SimRng,
    /// `[phone.cpu] compute_cv` and its stream.
    compute_spread: forefront_engine::Spread,
    compute_rng: forefront_engine::SimRng,
    /// Virtual phones (empty outside Cells scenarios) and the one on the screen.
    cells: Vec<cells::Cell>,
    fg_cell: Option<usize>,
    cells_params: forefront_workload::CellsParams,
    /// The scenario's mounts ([`forefront_workload::Mount`]) and, per file, which it is on.
    mounts: Vec<forefront_workload::Mount>,
    /// Per mount, its FAT region in the file system (index + 1), 0 for none.
    mount_region: Vec<u8>,
    file_mount: Vec<MountClass>,
    /// Pages each tmpfs file holds (taken from the page cache's capacity).
    ram_pages: Vec<u64>,
    /// fsync/fdatasync calls a `sync = false` mount turned into no-ops.
    nosync_fsyncs: u64,
    /// The log cleaner's passes and the blocks it marked for rewriting.
    cleaner_passes: u64,
    cleaner_blocks: u64,
}

/// Where a file lives: the phone's ext4 (with or without sync) or RAM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum MountClass {
    Ext4,
    Ext4NoSync,
    Tmpfs,
    Lfs,
    Vfat,
}

const KERNEL_UID: Uid = 0;
/// Timeline bucket (ms of simulated time).
pub const BUCKET_MS: u64 = 100;

impl World {
    pub fn new(sc: &Scenario, dev: FlashParams, policy: Policy, bg_apps: u32, seed: u64) -> World {
        let streams = RngStreams::new(seed);
        let phone = sc.phone.clone();
        let fg_w = policy.cpu.fg_shares.unwrap_or(phone.fg_cpu_shares);
        let bg_w = policy.cpu.bg_shares.unwrap_or(phone.bg_cpu_shares);
        let mut cpu_params = phone.cpu.clone();
        if policy.vt_cfs {
            cpu_params.scheduler = SchedKind::VtCfs;
        }
        let mut cpu = CpuSched::new(cpu_params, vec![1024, fg_w, bg_w]);
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
        let weights = [phone.blkio_root_weight, phone.blkio_root_weight, phone.blkio_bg_weight];
        let mut members: Vec<Member> = devs
            .into_iter()
            .enumerate()
            .map(|(i, d)| Member {
                bq: BlockQueue::new(phone.scheduler.build(&weights), d.queue_depth, max_sectors),
                dev: FlashDevice::new(d).seeded(streams.stream(&format!("flash.service.{i}"))),
            })
            .collect();
        let st = if members.len() == 1 {
            let m = members.pop().expect("one member");
            Storage::single(m.bq, m.dev)
        } else {
            Storage::stack(members, stripe, phone.storage.chunk_kib, capacity_gib << 21)
        };
        let mut w = World {
            q: EventQueue::with_capacity(4096),
            cpu,
            pc,
            fs,
            jn: Journal::new(),
            reqs: ReqSlab::default(),
            req_serial: Vec::new(),
            serial: 0,
            segs: Vec::new(),
            st,
            scratch_done: Vec::new(),
            tasks: Vec::new(),
            apps: Vec::new(),
            ns: CostsNs::of(&phone.costs),
            costs: phone.costs.clone(),
            dirty_bg_pages: (capacity as f64 * phone.dirty_background_ratio / 100.0) as u64,
            dirty_limit_pages: (capacity as f64 * phone.dirty_ratio / 100.0) as u64,
            phone,
            policy,
            paths: HashMap::new(),
            fg_uid: None,
            flusher: 0,
            jbd2: 1,
            kswapd: 2,
            kick_pending: false,
            wg: WaitGraph::new(1),
            chans: BTreeMap::new(),
            req_deps: Vec::new(),
            scratch_through: Vec::new(),
            wb_queue: std::collections::VecDeque::new(),
            boost_watch: Vec::new(),
            scratch_behind: Vec::new(),
            meta_io: HashMap::new(),
            link: forefront_model::net::Link::new(sc.phone.link()),
            async_queued: 0,
            fg_io_waiting: 0,
            pending_release: false,
            wb_for_reclaim: false,
            timeline: forefront_record::run::Timeline { bucket_ms: BUCKET_MS as f64, ..Default::default() },
            bucket_fg: 0,
            bucket_bg: 0,
            rec: None,
            core_curr: Vec::new(),
            scratch_ids: Vec::new(),
            scratch_waiters: Vec::new(),
            scratch_started: Vec::new(),
            samples: Vec::new(),
            hooks: BTreeMap::new(),
            fg_tasks_left: 0,
            fg_done_at: None,
            end: SimTime::from_secs_f64(sc.duration_s),
            bg_read: 0,
            bg_written: 0,
            inv: Default::default(),
            max_sectors,
            ui: ui::Ui::new(has_input(sc)),
            think_rng: streams.stream("workload.think"),
            compute_spread: forefront_engine::Spread::new(sc.phone.cpu.compute_cv),
            compute_rng: streams.stream("cpu.compute"),
            cells: cell_list.iter().map(cells::Cell::new).collect(),
            fg_cell: (!cell_list.is_empty()).then_some(0),
            cells_params: sc.cells_params.clone(),
            mounts: sc.mounts.clone(),
            mount_region,
            file_mount: Vec::new(),
            ram_pages: Vec::new(),
            nosync_fsyncs: 0,
            cleaner_passes: 0,
            cleaner_blocks: 0,
        };
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
        for (uid, inst) in (10_000..).zip(&instances) {
            let spec = inst.spec;
            let app = w.apps.len();
            let name = inst.name.clone();
            let mut a = App::new(&name, uid, spec.role, &spec.name, inst.cell);
            a.headline = spec.role == Role::Fg && inst.cell.is_none_or(|c| cell_list[c].role == forefront_workload::CellRole::Fg);
            w.apps.push(a);
            let start = if spec.start_jitter_ms > 0.0 {
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
                if cell.is_some() && w.paths.contains_key(&path) {
                    continue;
                }
                let uid = w.apps[app].uid;
                let id = w.create_file(&path, uid);
                if w.file_mount[id as usize] == MountClass::Tmpfs {
                    w.ram_resize(id, f.size.0);
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
        let wb = SimTime::from_secs_f64(w.phone.writeback_interval_s);
        w.q.schedule(wb, Ev::FlusherTimer);
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

    fn add_task(&mut self, name: &str, app: usize, kind: Kind, prog: Vec<Instr>, bg_prio: bool, nice: i32) -> Tid {
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
        });
        tid
    }

    fn create_file(&mut self, path: &str, uid: Uid) -> FileId {
        let id = self.pc.add_file();
        self.fs.create(id, path, uid);
        self.paths.insert(path.to_string(), id);
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
        self.file_mount.push(class);
        self.ram_pages.push(0);
        self.fs.inodes[id as usize].log = class == MountClass::Lfs;
        self.fs.inodes[id as usize].region = region;
        id
    }

    /// Set tmpfs file `file`'s size; its pages come from (or go back to) the page cache's
    /// memory. Returns how many pages it gained.
    fn ram_resize(&mut self, file: FileId, bytes: u64) -> u64 {
        let want = bytes.div_ceil(PAGE_SIZE);
        let have = std::mem::replace(&mut self.ram_pages[file as usize], want);
        // Never below a floor the page cache needs to work at all: tmpfs beyond memory would be
        // an out-of-memory kill on a phone, which the simulator does not model.
        self.pc.capacity = (self.pc.capacity + have).saturating_sub(want).max(64);
        self.fs.inodes[file as usize].size = bytes;
        want.saturating_sub(have)
    }

    /// A file operation on a file of a mount other than the phone's synchronous ext4: on
    /// tmpfs every operation is CPU work only (a syscall per call, a copy per page, an
    /// allocation per new page); on an ext4 mount with `sync = false`, fsync and fdatasync
    /// return at once. `None`: the operation takes the ordinary path.
    fn mounted_op(&mut self, tid: Tid, op: &Op) -> Option<(u64, After)> {
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
        let sys = self.costs.syscall_us;
        let class = match self.paths.get(path.as_str()) {
            Some(&f) => self.file_mount[f as usize],
            None if matches!(op, Op::Unlink { .. }) => return None, // ENOENT
            None => {
                let f = self.file_of(path, uid);
                self.file_mount[f as usize]
            }
        };
        let is_sync = matches!(op, Op::Fsync { .. } | Op::Fdatasync { .. });
        match class {
            MountClass::Ext4 | MountClass::Lfs | MountClass::Vfat => None,
            MountClass::Ext4NoSync if is_sync => {
                self.nosync_fsyncs += 1;
                Some((self.us(sys), After::Step))
            }
            MountClass::Ext4NoSync => None,
            MountClass::Tmpfs => {
                let c = self.costs.clone();
                let calls = |len: u64, chunk: u64| len.div_ceil(chunk.max(1)).max(1) as f64;
                let pages = |b: u64| b.div_ceil(PAGE_SIZE) as f64;
                let file = if matches!(op, Op::Unlink { .. }) {
                    self.paths.remove(path.as_str()).expect("looked up above")
                } else {
                    self.file_of(path, uid)
                };
                let size = self.fs.inodes[file as usize].size;
                let us = match op {
                    Op::Creat { .. } | Op::Unlink { .. } => {
                        self.ram_resize(file, 0);
                        sys + c.metadata_us
                    }
                    Op::Truncate { size: to, .. } => {
                        self.ram_resize(file, to.0);
                        sys + c.metadata_us
                    }
                    Op::Read { offset, len, chunk, .. } => {
                        let n = len.0.min(size.saturating_sub(offset.0));
                        self.count_bytes(tid, n, false);
                        calls(n, chunk.0) * sys + pages(n) * c.copy_page_us
                    }
                    Op::Write { offset, len, chunk, .. } => {
                        let start = offset.map_or(size, |o| o.0);
                        let new = self.ram_resize(file, size.max(start + len.0));
                        self.count_bytes(tid, len.0, true);
                        calls(len.0, chunk.0) * sys + pages(len.0) * c.copy_page_us + new as f64 * c.alloc_page_us
                    }
                    _ => sys, // fsync, fdatasync: nothing to do
                };
                Some((self.us(us), After::Step))
            }
        }
    }

    fn group_for(&self, tid: Tid) -> GroupId {
        let t = &self.tasks[tid as usize];
        match self.role_now(t.app) {
            Role::System => ROOT_GROUP,
            _ if Some(t.uid) == self.fg_uid && !t.bg_prio => FG_GROUP,
            _ => BG_GROUP,
        }
    }

    fn is_fg_uid(&self, uid: Uid) -> bool {
        Some(uid) == self.fg_uid
    }

    /// Whether work of task `tid` counts as foreground. Stock Android knows only cgroups (the FG
    /// group); a classifying policy uses the FG app's UID (App Status Detector).
    fn task_is_fg(&self, tid: Tid) -> bool {
        let t = &self.tasks[tid as usize];
        if self.policy.classify_io {
            self.is_fg_uid(t.uid)
        } else {
            self.cpu.group_of(tid) == FG_GROUP
        }
    }

    /// Move every task whose CPU group changed (a new foreground app or cell).
    fn regroup(&mut self, now: SimTime) {
        for t in 0..self.tasks.len() as Tid {
            let g = self.group_for(t);
            if self.cpu.group_of(t) != g {
                self.cpu.set_group(t, g, now);
                self.hook(Hook::CpuGroupMove);
            }
        }
    }

    fn hook(&mut self, h: Hook) {
        *self.hooks.entry(h).or_insert(0) += 1;
    }

    // ---------------------------------------------------------------- event loop

    /// Record block, syscall and scheduler events for a Perfetto export.
    pub fn record_trace(&mut self) {
        self.rec = Some(Vec::new());
        self.core_curr = vec![None; self.cpu.ncores()];
    }

    /// Every task as (tid, app, thread), for naming exported trace tracks.
    pub fn thread_names(&self) -> Vec<(u32, String, String)> {
        self.tasks
            .iter()
            .enumerate()
            .map(|(tid, t)| {
                let app = self.apps[t.app].name.clone();
                let thread = t.name.strip_prefix(&format!("{app}:")).unwrap_or(&t.name).to_string();
                (tid as u32, app, thread)
            })
            .collect()
    }

    /// The FG app's task ids (for colouring exported traces).
    pub fn fg_tids(&self) -> Vec<u32> {
        (0..self.tasks.len() as Tid).filter(|&t| self.apps[self.tasks[t as usize].app].headline).collect()
    }

    fn rec_block(&mut self, id: ReqId, action: BlockAction) {
        let Some(rec) = &mut self.rec else { return };
        let r = self.reqs.get(id);
        let time_ns = match action {
            BlockAction::Issue => r.times.dispatched,
            BlockAction::Complete => r.times.completed,
            _ => None,
        }
        .unwrap_or(self.q.now())
        .ns();
        let op = match r.op {
            ReqOp::Read => BlockOp::Read,
            ReqOp::Write => BlockOp::Write,
            ReqOp::Flush => BlockOp::Flush,
            ReqOp::Discard => BlockOp::Discard,
        };
        let t = &self.tasks[r.prov.tid as usize];
        rec.push(TraceRecord::Block(BlockEvent {
            time_ns,
            dev: DevId { major: 8, minor: 0 },
            cpu: 0,
            seq: rec.len() as u64,
            pid: r.prov.tid,
            comm: Some(t.name.clone()),
            action,
            rwbs: Rwbs { op, preflush: r.preflush, fua: r.fua, ahead: false, sync: r.sync, meta: r.meta },
            sector: r.sector,
            bytes: r.bytes(),
            error: 0,
            detail: BlockDetail::None,
        }));
    }

    /// Record a context switch on core `c` if its running task changed (`--trace-out`).
    fn rec_switch(&mut self, c: usize) {
        let Some(rec) = &mut self.rec else { return };
        let now = self.q.now().ns();
        let next = self.cpu.running_on(c);
        let prev = self.core_curr[c];
        if next == prev {
            return;
        }
        self.core_curr[c] = next;
        let who = |t: Option<Tid>| match t {
            Some(t) => (self.tasks[t as usize].name.clone(), t),
            None => ("swapper".to_string(), 0),
        };
        let ((pc, pp), (nc, np)) = (who(prev), who(next));
        let prev_state = match prev {
            Some(t) if self.cpu.is_runnable(t) => "R",
            Some(_) => "S",
            None => "R",
        };
        rec.push(TraceRecord::Sched(SchedRecord {
            time_ns: now,
            cpu: c as u32,
            event: SchedEvent::Switch {
                prev_comm: pc,
                prev_pid: pp,
                prev_prio: 120,
                prev_state: prev_state.to_string(),
                next_comm: nc,
                next_pid: np,
                next_prio: 120,
            },
        }));
    }

    /// Close the syscall span of the op `tid` just finished.
    fn rec_span_end(&mut self, tid: Tid) {
        let now = self.q.now();
        let Some((name, path, size, start)) = self.tasks[tid as usize].span.take() else { return };
        if let Some(rec) = &mut self.rec {
            rec.push(TraceRecord::Syscall(SyscallRecord {
                time_ns: start.ns(),
                tid,
                name: name.to_string(),
                fd: None,
                path,
                offset: None,
                size,
                duration_ns: Some(now.since(start)),
                result: None,
                comm: None,
            }));
        }
    }

    fn close_bucket(&mut self) {
        let mb_s = |b: u64| (b as f64 / 1e6 / (BUCKET_MS as f64 / 1e3) * 1000.0).round() / 1000.0;
        let tl = &mut self.timeline;
        tl.fg_mb_per_s.push(mb_s(self.bucket_fg));
        tl.bg_mb_per_s.push(mb_s(self.bucket_bg));
        tl.dirty_mb.push(((self.pc.nr_dirty * PAGE_SIZE) as f64 / 1e4).round() / 100.0);
        tl.queue_depth.push(self.st.depth() as u32);
        self.bucket_fg = 0;
        self.bucket_bg = 0;
    }

    /// Account syscall bytes of `tid` (totals and the current timeline bucket).
    fn count_bytes(&mut self, tid: Tid, bytes: u64, write: bool) {
        let app = self.tasks[tid as usize].app;
        let a = &mut self.apps[app];
        if write {
            a.written += bytes;
        } else {
            a.read += bytes;
        }
        match self.role_now(app) {
            Role::Bg => {
                if write {
                    self.bg_written += bytes;
                } else {
                    self.bg_read += bytes;
                }
                self.bucket_bg += bytes;
            }
            Role::Fg => self.bucket_fg += bytes,
            Role::System => {}
        }
    }

    pub fn run(mut self) -> Outcome {
        while let Some((now, ev)) = self.q.pop() {
            // The run ends when the FG app's threads are done and what they showed is on screen.
            if now > self.end || (self.fg_tasks_left == 0 && self.ui.idle()) {
                break;
            }
            if self.ui.enabled {
                self.ui_account(now);
            }
            match ev {
                Ev::Core(core, gen) => {
                    if let Some(Expired::BurstDone(tid)) = self.cpu.expire(core as usize, gen, now) {
                        self.after_burst(tid);
                    }
                }
                Ev::DevDone(id) => self.device_done(id),
                Ev::Kick => {
                    self.kick_pending = false;
                    self.dispatch();
                }
                Ev::Wake(tid, token) => {
                    if self.tasks[tid as usize].token == token {
                        self.wake(tid);
                    }
                }
                Ev::NetJoin(tid) => {
                    if let Some((t, gen)) = self.link.join(now, tid) {
                        self.q.schedule(t, Ev::NetDone(gen));
                    }
                }
                Ev::NetDone(gen) => {
                    let (done, next) = self.link.complete(now, gen);
                    if let Some((t, gen)) = next {
                        self.q.schedule(t, Ev::NetDone(gen));
                    }
                    for tid in done {
                        self.wake(tid);
                    }
                }
                Ev::FlusherTimer => {
                    self.wake_flusher();
                    let t = now.after((self.phone.writeback_interval_s * 1e9) as u64);
                    self.q.schedule(t, Ev::FlusherTimer);
                }
                Ev::Sample => {
                    self.close_bucket();
                    self.q.schedule(now.after(BUCKET_MS * 1_000_000), Ev::Sample);
                }
                Ev::CommitTimer => {
                    let interval = (self.phone.fs.commit_interval_s * 1e9) as u64;
                    if let Some(s) = self.jn.running.started {
                        if now.since(s) >= interval && !self.jn.running.is_empty() {
                            self.jn.commit_requested = self.jn.commit_requested.max(self.jn.running.id);
                            self.wake_jbd2();
                        }
                    }
                    self.q.schedule(now.after(interval / 5), Ev::CommitTimer);
                }
            }
            if self.pending_release {
                self.pending_release = false;
                self.wake_all(Blocker::Alloc);
            }
            if self.ui.enabled {
                self.ui_latencies();
            }
            self.rearm();
        }
        self.finish()
    }

    fn now(&self) -> SimTime {
        self.q.now()
    }

    fn rearm(&mut self) {
        while let Some(c) = self.cpu.next_changed() {
            if let Some((t, gen)) = self.cpu.deadline(c) {
                self.q.schedule(t, Ev::Core(c as u8, gen));
            }
            if self.rec.is_some() {
                self.rec_switch(c);
            }
        }
    }

    fn finish(mut self) -> Outcome {
        let ui = self.ui_outcome();
        let cells = self.cell_outcomes();
        let bg: Vec<&Task> = self.tasks.iter().filter(|t| self.role_now(t.app) == Role::Bg).collect();
        let (bg_threads, bg_net_wait_ns) = (bg.len() as u64, bg.iter().map(|t| t.acc[Cat::Net as usize]).sum());
        let mut inv = self.inv.clone();
        inv.requests_in_flight = self.reqs.live() as u64;
        let mut bytes = 0;
        for id in 0..self.req_serial.len() as ReqId {
            if let Some(r) = self.reqs.try_get(id) {
                bytes += r.bytes();
            }
        }
        inv.bytes_in_flight = bytes;
        inv.time_clamps = self.q.clamped();
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
            hooks: self.hooks.into_iter().map(|(h, n)| (h.name().to_string(), n)).collect(),
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
            trace: self.rec.map(|mut r| {
                r.sort_by_key(|x| x.time_ns());
                r
            }),
            dev_fg_behind_bg: self.st.fg_behind_bg(),
            fg_pages_evicted: self.pc.evicted_fg,
            fg_evicted_while_bg_clean: self.pc.evicted_fg_while_bg_clean,
            ui,
            bg_threads,
            bg_net_wait_ns,
            cells,
            fg_threads_unfinished: if self.fg_done_at.is_some() { 0 } else { self.fg_tasks_left as u64 },
            nosync_fsyncs: self.nosync_fsyncs,
            lfs: self.fs.log.as_ref().map(|l| LfsOutcome {
                appended: l.appended,
                segments_used: l.segments_used,
                full: l.full,
                cleaner_passes: self.cleaner_passes,
                cleaner_blocks: self.cleaner_blocks,
            }),
            raid_pieces: self.st.pieces,
            stall: self.q.stall_report(),
        }
    }

    // ---------------------------------------------------------------- tasks and CPU

    /// Register that `tid` waits on `b` (the one place tasks block); the caller returns
    /// `After::Block`. Its time is charged to `cat` (or split by stage for its own request).
    fn block_on(&mut self, tid: Tid, b: Blocker, cat: Cat) {
        let now = self.now();
        let kind = self.tasks[tid as usize].kind;
        let own = matches!(b, Blocker::Request { id, .. } if self.reqs.get(id).prov.tid == tid);
        let fg_io = self.policy.alloc_gate && kind == Kind::User && b.is_io() && self.task_is_fg(tid);
        if fg_io {
            self.fg_io_waiting += 1;
        }
        let t = &mut self.tasks[tid as usize];
        debug_assert!(t.wait.is_none(), "{} waits twice", t.name);
        t.wait = Some(Wait { cat, own, fg_io });
        self.wg.block(tid, b, now);
        if b.is_io() && (self.policy.boost != Boost::Off || self.policy.fg_inherit) {
            self.qasio_on_block(tid);
        }
    }

    /// Wake every task waiting on `b`, in the order they blocked.
    fn wake_all(&mut self, b: Blocker) {
        // The shared queues keep a count: skip the walk when nobody waits there.
        if b.counted() && self.wg.count(b) == 0 {
            return;
        }
        for t in self.wg.blocked_on(|x| x == b) {
            self.wake(t);
        }
    }

    /// Wake `tid` from whatever it waits for (no-op if it does not wait).
    fn wake(&mut self, tid: Tid) {
        self.wake_split(tid, None);
    }

    fn wake_split(&mut self, tid: Tid, times: Option<ReqTimes>) {
        let now = self.now();
        let t = &mut self.tasks[tid as usize];
        let Some(w) = t.wait.take() else { return };
        let (_, since) = self.wg.unblock(tid).expect("a waiting task has a blocker");
        let t = &mut self.tasks[tid as usize];
        t.token = t.token.wrapping_add(1);
        if w.fg_io {
            self.fg_io_waiting -= 1;
            if self.fg_io_waiting == 0 && self.wg.count(Blocker::Alloc) > 0 {
                // FG I/O served: resume the paused background work.
                self.pending_release = true;
            }
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
            if self.policy.ftc && self.ui.in_chain(tid) {
                // FTC: the chain task's weight for the run queue it joins now.
                self.ftc_promote(tid);
            }
            self.cpu.wake(tid, work, now);
        }
    }

    /// The task's CPU burst ended: carry out what it planned, then step its program.
    fn after_burst(&mut self, tid: Tid) {
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
    fn settle(&mut self, tid: Tid, after: After, now: SimTime) -> bool {
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

    fn us(&self, us: f64) -> u64 {
        (us * 1e3) as u64
    }

    /// Advance `tid` by one step: returns CPU work to do first (ns) and what follows it.
    fn step(&mut self, tid: Tid) -> (u64, After) {
        match self.tasks[tid as usize].kind {
            Kind::Flusher => {
                let p = WritebackParams {
                    expire_ns: (self.phone.dirty_expire_s * 1e9) as u64,
                    background_pages: self.dirty_bg_pages,
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
            Kind::Cleaner => return self.cleaner_step(tid),
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
                    self.tasks[tid as usize].span = span_of(&op, self.now());
                }
                let virt = self.cell_overhead(tid, &op);
                let (work, after) = self.start_op(tid, op);
                (work + virt, after)
            }
        }
    }

    /// The channel named `name` (created on first use, numbered in creation order).
    fn chan(&mut self, name: String) -> Chan {
        let next = self.chans.len() as u32;
        *self.chans.entry(name).or_insert(Chan { id: next, signals: 0, from_chain: 0 })
    }

    fn file_of(&mut self, path: &str, uid: Uid) -> FileId {
        match self.paths.get(path) {
            Some(&id) => id,
            None => self.create_file(path, uid),
        }
    }

    fn start_op(&mut self, tid: Tid, op: Op) -> (u64, After) {
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
            Op::Creat { path } => {
                let file = self.file_of(&path, uid);
                self.fs.inodes[file as usize].unlinked = false;
                set(self, Exec::File(FileOp::Meta { file, kind: MetaKind::Creat, stage: 0 }));
                (sys, After::Step)
            }
            Op::Unlink { path } => match self.paths.remove(&path) {
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
            Op::Read { path, offset, len, chunk } => {
                let file = self.file_of(&path, uid);
                let size = self.fs.inodes[file as usize].size;
                let end = (offset.0 + len.0).min(size);
                if offset.0 >= end {
                    return (sys, After::Step);
                }
                let call_end = end.min(offset.0 + chunk.0);
                set(self, Exec::File(FileOp::Read { file, pos: offset.0, end, chunk: chunk.0, call_end }));
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
                let ms = ms * self.compute_spread.sample(&mut self.compute_rng);
                (((ms * 1e6) as u64).max(1), After::Step)
            }
            Op::Sleep { ms } => (0, After::Sleep(now.after((ms * 1e6) as u64))),
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
                self.q.schedule(now.after(self.link.rtt_ns()), Ev::NetJoin(tid));
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
                let times = self.cpu.times(tid, now);
                let t = &mut self.tasks[tid as usize];
                let acc = t.acc;
                t.phases.push((name, now, acc, times));
                (0, After::Step)
            }
            Op::PhaseEnd { name } => {
                let times = self.cpu.times(tid, now);
                let t = &mut self.tasks[tid as usize];
                if let Some(pos) = t.phases.iter().rposition(|p| p.0 == name) {
                    let (phase, start, acc0, (run0, wait0)) = t.phases.remove(pos);
                    let mut cats = [0u64; Cat::COUNT];
                    for (i, c) in cats.iter_mut().enumerate() {
                        *c = t.acc[i] - acc0[i];
                    }
                    cats[Cat::CpuRunning as usize] = times.0 - run0;
                    cats[Cat::CpuRunnable as usize] = times.1 - wait0;
                    let (app, cell) = (self.apps[t.app].name.clone(), self.apps[t.app].cell);
                    let on_screen = cell.is_none() || cell == self.fg_cell;
                    self.samples.push(Sample { app, cell, on_screen, phase, start, ns: now.since(start), cats });
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
                if self.policy.classify_io {
                    // App Status Detector: the framework writes the FG UID to sysfs.
                    self.hook(Hook::AppStatusFgUid);
                }
                self.regroup(now);
                (self.us(50.0), After::Step)
            }
            Op::SwitchCell { cell } => self.switch_cell(&cell),
            // Expanded when the scenario is loaded (`Scenario::validate` refuses a leftover).
            Op::Trace { .. } => (0, After::Step),
            Op::DropCaches { app } => {
                if let Some(uid) = self.apps.iter().find(|a| a.name == app).map(|a| a.uid) {
                    let files: Vec<FileId> =
                        (0..self.fs.inodes.len() as FileId).filter(|&f| self.fs.inodes[f as usize].owner == uid).collect();
                    for f in files {
                        // Every clean page goes: the stretches between dirty or in-flight ones.
                        let mut lo = 0;
                        while let Some(busy) = self.pc.first_busy_from(f, lo) {
                            self.pc.remove_range(f, lo, busy.index);
                            lo = busy.index + 1;
                        }
                        self.pc.remove_range(f, lo, u32::MAX);
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
                let fg = request_is_fg(&self.policy, false, self.task_is_fg(tid), false);
                let sectors = bytes.0.div_ceil(512).clamp(1, u64::from(u32::MAX)) as u32;
                let prov =
                    Provenance { uid: t.uid, pid: t.pid, tid, fg, origin: Origin::Replay, blkio_group: self.cpu.group_of(tid) };
                let op = if write { ReqOp::Write } else { ReqOp::Read };
                let req = Request::new(op, sector, sectors, sync || !write, prov);
                self.count_bytes(tid, u64::from(sectors) * 512, write);
                let (id, _) = self.submit(req, Seg::Other);
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

    fn continue_op(&mut self, tid: Tid) -> (u64, After) {
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

    fn ext4_params(&self) -> Ext4Params {
        Ext4Params {
            copy_page: self.ns.copy_page,
            syscall: self.ns.syscall,
            metadata: self.ns.metadata,
            writeback_page: self.ns.writeback_page,
            submit_request: self.ns.submit_request,
            read_ahead_kib: self.phone.read_ahead_kib,
            max_sectors: self.max_sectors,
            dirty_background_pages: self.dirty_bg_pages,
            dirty_limit_pages: self.dirty_limit_pages,
            reclaim: self.reclaim_costs(),
        }
    }

    // ---------------------------------------------------------------- page cache paths

    fn reclaim_order(&self) -> ReclaimOrder {
        match self.policy.reclaim {
            Reclaim::Global => ReclaimOrder::Global,
            Reclaim::BackgroundFirst => ReclaimOrder::BackgroundFirst,
        }
    }

    /// Reclaim `want` pages in the policy's order, counting hooks; returns (freed, bg_busy).
    fn shrink(&mut self, want: u64) -> forefront_model::mm::Reclaimed {
        let order = self.reclaim_order();
        let fg = self.fg_uid;
        let r = self.pc.reclaim(want, order, |u| Some(u) == fg);
        if order == ReclaimOrder::BackgroundFirst && r.freed > 0 {
            self.hook(Hook::ReclaimBgFirst);
        }
        if r.bg_busy {
            self.hook(Hook::ReclaimBgDirtyFirst);
        }
        r
    }

    fn reclaim_costs(&self) -> ReclaimCosts {
        ReclaimCosts { alloc_page: self.ns.alloc_page, reclaim_page: self.ns.reclaim_page }
    }

    /// FastTrack's Page Allocator: a background user task (not a kernel thread, not one holding a
    /// journal handle) pauses at its next allocation or copy checkpoint while foreground I/O is
    /// in flight. True if the task was paused (registered).
    fn alloc_gate_pauses(&mut self, tid: Tid) -> bool {
        let t = &self.tasks[tid as usize];
        if !self.policy.alloc_gate || self.fg_io_waiting == 0 || t.kind != Kind::User || self.wg.handle_of(tid).is_some() {
            return false;
        }
        if self.role_now(t.app) != Role::Bg || self.task_is_fg(tid) {
            return false;
        }
        self.hook(Hook::PageAllocBgPaused);
        self.block_on(tid, Blocker::Alloc, Cat::Alloc);
        true
    }

    /// Wait for request `id` (must be live) for reason `why`. Time waiting for an own request
    /// is split by its stage; for someone else's it goes to `cat_other`.
    fn wait_request(&mut self, tid: Tid, id: ReqId, why: Why, cat_other: Cat) {
        let own = self.reqs.get(id).prov.tid == tid;
        let cat = if own { Cat::BlockQueue } else { cat_other };
        self.block_on(tid, Blocker::Request { id, why }, cat);
    }

    /// Submit one request for a run of pages (read fill or write-back); sets `io` on the pages.
    fn submit_pages(&mut self, tid: Tid, file: FileId, (first, lba, n): (u32, u64, u32), write: bool, origin: Origin) -> u64 {
        let owner = self.fs.inodes[file as usize].owner;
        let kernel = self.tasks[tid as usize].kind != Kind::User;
        let sync = !write || !kernel || origin == Origin::Fsync;
        let fg = request_is_fg(&self.policy, kernel, self.task_is_fg(tid), self.is_fg_uid(owner));
        let group = if kernel { ROOT_GROUP } else { self.cpu.group_of(tid) };
        let prov = Provenance { uid: owner, pid: self.tasks[tid as usize].pid, tid, fg, origin, blkio_group: group };
        let op = if write { ReqOp::Write } else { ReqOp::Read };
        let req = Request::new(op, lba * SECTORS_PER_BLOCK, n * SECTORS_PER_BLOCK as u32, sync, prov);
        let (id, serial) = self.submit(req, Seg::Pages { file, first, n, write });
        if write && !sync && self.policy.fg_inherit && self.wb_queue.back() != Some(&(id, serial)) {
            self.wb_queue.push_back((id, serial));
        }
        if write {
            self.pc.start_writeback_range(file, first, n, id);
        } else {
            self.pc.lock_range(file, first, n, id);
        }
        self.ns.submit_request
    }

    /// Submit a request through the policy's dispatch seam; returns (id, serial).
    fn submit(&mut self, req: Request, seg: Seg) -> (ReqId, u64) {
        let now = self.now();
        self.inv.requests_submitted += 1;
        self.inv.bytes_submitted += req.bytes();
        let is_async = !req.sync;
        let insert = if self.policy.dispatch == DispatchPolicy::ForegroundDirect && req.prov.fg {
            self.hook(Hook::DispatchFgDirect);
            Insert::DispatchQueue
        } else {
            Insert::Scheduler
        };
        let out = self.st.submit(&mut self.reqs, req, insert, now);
        if self.rec.is_some() {
            match out {
                Submitted::Queued(id) => self.rec_block(id, BlockAction::Queue),
                Submitted::Merged(id) => self.rec_block(id, BlockAction::BackMerge),
            }
        }
        let id = match out {
            Submitted::Queued(id) => {
                let i = id as usize;
                if self.segs.len() <= i {
                    self.segs.resize_with(i + 1, Vec::new);
                    self.req_serial.resize(i + 1, 0);
                }
                self.serial += 1;
                self.req_serial[i] = self.serial;
                self.segs[i].clear();
                if self.req_deps.len() <= i {
                    self.req_deps.resize(i + 1, 0);
                }
                self.req_deps[i] = 0;
                if is_async {
                    self.async_queued += 1;
                }
                id
            }
            Submitted::Merged(id) => {
                self.inv.requests_merged += 1;
                id
            }
        };
        self.segs[id as usize].push(seg);
        if !self.kick_pending {
            self.kick_pending = true;
            self.q.schedule(now, Ev::Kick);
        }
        (id, self.req_serial[id as usize])
    }

    // ------------------------------------------------------------- QASIO and forefront

    /// QASIO's detection and forefront's FG inheritance, at the one moment they can change:
    /// a task blocks on I/O (directly or through the journal). Every task whose wait now
    /// passes through `tid`'s is walked in the wait graph; each queued request found is
    /// - boosted (policy `boost`) if it is asynchronous — the paper's QASIO — and counted once
    ///   per dependency type;
    /// - made foreground (policy `fg_inherit`) if the walking task is foreground, whether the
    ///   request is async write-back or the jbd2 thread's own journal writes.
    fn qasio_on_block(&mut self, tid: Tid) {
        let mut through = std::mem::take(&mut self.scratch_through);
        let mut behind = std::mem::take(&mut self.scratch_behind);
        self.wg.waiting_through(tid, &mut through);
        for &w in &through {
            let fg = self.policy.fg_inherit && self.tasks[w as usize].kind == Kind::User && self.task_is_fg(w);
            self.wg.io_behind(w, &mut behind);
            for &(id, why, via) in &behind {
                let Some(r) = self.reqs.try_get(id) else { continue };
                if r.times.service_start.is_some() {
                    continue; // in service: nothing left to reorder
                }
                let (sync, queued, boosted) = (r.sync, r.is_queued(), r.boosted);
                if self.policy.boost != Boost::Off && !sync {
                    if let Some(dep) = dependency(why, via) {
                        let bit = 1u8 << dep as u8;
                        if self.req_deps[id as usize] & bit == 0 {
                            self.req_deps[id as usize] |= bit;
                            self.hook(Hook::QasioDetected(dep));
                        }
                        if queued && !boosted {
                            self.boost_watch.push((id, self.req_serial[id as usize], false));
                        }
                        self.boost_request(id);
                    }
                }
                if fg && !self.reqs.get(id).prov.fg {
                    self.inherit_fg(id);
                }
                if fg && why == Why::Ordered && via == Via::Commit {
                    self.inherit_ordered();
                }
            }
        }
        self.scratch_through = through;
        self.scratch_behind = behind;
    }

    /// Check QASIO's rule as request `id` goes to the device: a boosted request leaves the watch
    /// (served first unless something overtook it); a BG async request that is not boosted
    /// overtakes every boosted request still queued.
    fn watch_boosts(&mut self, id: ReqId) {
        let serial = self.req_serial[id as usize];
        let r = self.reqs.get(id);
        let overtakes = !r.sync && !r.boosted && !r.prov.fg;
        let mut i = 0;
        while i < self.boost_watch.len() {
            let (b, bs, overtaken) = self.boost_watch[i];
            if (b, bs) == (id, serial) {
                self.boost_watch.swap_remove(i);
                if !overtaken {
                    for dep in Dependency::ALL {
                        if self.req_deps[id as usize] & (1u8 << dep as u8) != 0 {
                            self.hook(Hook::QasioServedFirst(dep));
                        }
                    }
                }
                continue;
            }
            if !self.live((b, bs)) {
                self.boost_watch.swap_remove(i); // merged away
                continue;
            }
            if overtakes && !overtaken {
                self.boost_watch[i].2 = true;
                self.inv.boosted_async_overtaken += 1;
            }
            i += 1;
        }
    }

    /// forefront: an FG task waits for a commit that waits for its ordered data. The commit
    /// waits for all of it (jbd2 only blocks on one request at a time), so every ordered write
    /// of the committing transaction still queued becomes FG and is boosted, not just the one
    /// jbd2 sleeps on — the wait graph knows the whole set; QASIO's kernel hint does not.
    fn inherit_ordered(&mut self) {
        let Some((txn, _)) = &self.jn.committing else { return };
        let ordered: Vec<(ReqId, u64)> = txn.ordered.iter().copied().zip(txn.ordered_serials.iter().copied()).collect();
        for r in ordered {
            if !self.live(r) {
                continue;
            }
            let req = self.reqs.get(r.0);
            if req.times.service_start.is_some() || req.prov.fg {
                continue;
            }
            if !req.sync && self.policy.boost != Boost::Off {
                self.boost_request(r.0);
            }
            self.inherit_fg(r.0);
        }
    }

    /// forefront: an FG task waits in direct reclaim for write-back to clean pages. The oldest
    /// queued async write-back, enough to cover the `pages` it lacks, serves it: FG from here on.
    /// (The allocation wait is not an edge of the wait graph — any completion may let reclaim
    /// succeed — so the seam is here, at the reclaim decision.)
    fn inherit_reclaim_writeback(&mut self, pages: u64) {
        let mut covered = 0;
        let mut i = 0;
        while covered < pages && i < self.wb_queue.len() {
            let r = self.wb_queue[i];
            if !self.live(r) || self.reqs.get(r.0).times.service_start.is_some() {
                if i == 0 {
                    self.wb_queue.pop_front();
                } else {
                    i += 1;
                }
                continue;
            }
            covered += u64::from(self.reqs.get(r.0).sectors) / SECTORS_PER_BLOCK;
            if !self.reqs.get(r.0).prov.fg {
                self.inherit_fg(r.0);
            }
            i += 1;
        }
    }

    /// QASIO's boost: the I/O scheduler moves queued request `id` ahead of the other async
    /// requests; a request already in the device's queue moves ahead of its class there.
    fn boost_request(&mut self, id: ReqId) {
        if self.reqs.get(id).is_queued() {
            if self.st.boost(&mut self.reqs, id) {
                self.hook(Hook::QasioBoostScheduler);
            }
        } else if self.policy.boost == Boost::SchedulerAndDevice && !self.reqs.get(id).boosted {
            let r = self.reqs.get_mut(id);
            r.boosted = true;
            let (read, fg) = (r.op.is_read(), r.prov.fg);
            if self.st.reclass(&self.reqs, id, device_class(&self.policy, read, fg, true), fg) {
                self.hook(Hook::QasioBoostDevice);
            }
        }
    }

    /// forefront: request `id` (queued or in the device queue) serves a foreground task, so it
    /// is foreground from here on: straight to the dispatch queue if the policy sends FG
    /// requests there, and FG priority in the device.
    fn inherit_fg(&mut self, id: ReqId) {
        self.reqs.get_mut(id).prov.fg = true;
        self.hook(Hook::FgInherited);
        if self.reqs.get(id).is_queued() {
            if self.policy.dispatch == DispatchPolicy::ForegroundDirect && self.st.promote(&self.reqs, id) {
                self.hook(Hook::DispatchFgDirect);
            }
        } else {
            let r = self.reqs.get(id);
            let class = device_class(&self.policy, r.op.is_read(), true, r.boosted);
            self.st.reclass(&self.reqs, id, class, true);
        }
    }

    fn live(&self, (id, serial): (ReqId, u64)) -> bool {
        self.reqs.try_get(id).is_some() && self.req_serial[id as usize] == serial
    }

    fn dispatch(&mut self) {
        let now = self.now();
        let mut ids = std::mem::take(&mut self.scratch_ids);
        ids.clear();
        let policy = &self.policy;
        let wake =
            self.st.dispatch(&mut self.reqs, now, |r| device_class(policy, r.op.is_read(), r.prov.fg, r.boosted), &mut ids);
        for &id in &ids {
            if !self.boost_watch.is_empty() {
                self.watch_boosts(id);
            }
            let r = self.reqs.get(id);
            if !r.sync {
                self.async_queued -= 1;
            }
            if r.boosted && self.policy.boost == Boost::SchedulerAndDevice {
                self.hook(Hook::QasioBoostDevice);
            }
            if self.rec.is_some() {
                self.rec_block(id, BlockAction::Issue);
            }
        }
        self.scratch_ids = ids;
        let mut started = std::mem::take(&mut self.scratch_started);
        started.clear();
        self.st.start(&mut self.reqs, now, &mut started);
        for s in &started {
            self.q.schedule(s.done_at, Ev::DevDone(s.id));
        }
        self.scratch_started = started;
        if let Some(t) = wake {
            self.q.schedule(t, Ev::Kick);
        }
        if self.wg.count(Blocker::Congestion) > 0 && self.async_queued < self.phone.nr_requests * 7 / 8 {
            self.wake_all(Blocker::Congestion);
        }
    }

    /// Device request `id` finished: complete the top requests it ends (one, on a single
    /// device; none or several, on RAID-0).
    fn device_done(&mut self, id: ReqId) {
        let now = self.now();
        let mut done = std::mem::take(&mut self.scratch_done);
        done.clear();
        self.st.complete(&mut self.reqs, id, now, &mut done);
        for &t in &done {
            self.request_done(t);
        }
        self.scratch_done = done;
        self.dispatch();
    }

    /// Top request `id` is complete: pages, metadata buffers and waiters.
    fn request_done(&mut self, id: ReqId) {
        if self.rec.is_some() {
            self.rec_block(id, BlockAction::Complete);
        }
        self.inv.requests_completed += 1;
        self.inv.bytes_completed += self.reqs.get(id).bytes();
        let segs = std::mem::take(&mut self.segs[id as usize]);
        for seg in &segs {
            match *seg {
                Seg::Pages { file, first, n, write } => {
                    if write {
                        self.pc.end_writeback_range(file, first, n, id);
                    } else {
                        self.pc.fill_range(file, first, n, id);
                    }
                }
                Seg::Meta { block } => {
                    if self.meta_io.get(&block).is_some_and(|&(r, _)| r == id) {
                        self.meta_io.remove(&block);
                    }
                }
                Seg::Journal | Seg::Other => {}
            }
        }
        self.segs[id as usize] = segs;
        let req = self.reqs.free(id);
        let mut waiters = std::mem::take(&mut self.scratch_waiters);
        self.wg.take_waiters_into(id, &mut waiters);
        for &(tid, _) in &waiters {
            self.wake_split(tid, Some(req.times));
        }
        self.scratch_waiters = waiters;
        // Conditions that completions can end.
        if self.pc.nr_dirty + self.pc.nr_writeback < self.dirty_limit_pages {
            self.wake_all(Blocker::Throttle);
        }
        if !(self.policy.alloc_gate && self.fg_io_waiting > 0) {
            self.wake_all(Blocker::Alloc);
        }
    }
}

// ---------------------------------------------------------------- writes, fsync, metadata
impl World {
    fn wake_if(&mut self, tid: Tid, b: Blocker) {
        if self.wg.is_blocked_on(tid, b) {
            self.wake(tid);
        }
    }

    fn wake_flusher(&mut self) {
        self.wake_if(self.flusher, Blocker::Idle);
    }

    fn wake_jbd2(&mut self) {
        self.wake_if(self.jbd2, Blocker::Idle);
    }

    /// A data-less or journal request (flush, discard, journal blocks, metadata).
    fn submit_control(&mut self, tid: Tid, op: ReqOp, block: u64, blocks: u64, origin: Origin) -> (ReqId, u64) {
        let t = &self.tasks[tid as usize];
        let kernel = t.kind != Kind::User;
        // FastTrack matches sync requests to the FG app by PID: the jbd2 thread's journal
        // writes are not the FG app's, even when an FG fsync forced the commit (no owner).
        let fg = request_is_fg(&self.policy, kernel, self.task_is_fg(tid), false);
        let prov = Provenance {
            uid: t.uid,
            pid: t.pid,
            tid,
            fg,
            origin,
            blkio_group: if kernel { ROOT_GROUP } else { self.cpu.group_of(tid) },
        };
        // Checkpoint writes are write-back; discards are async too: 3.10's blkdev_issue_discard
        // submits REQ_WRITE | REQ_DISCARD without REQ_SYNC (and waits for it) — QASIO's D_discard.
        let sync = !matches!(origin, Origin::Checkpoint | Origin::Discard);
        let mut req = Request::new(op, block * SECTORS_PER_BLOCK, (blocks * SECTORS_PER_BLOCK) as u32, sync, prov);
        req.meta = matches!(origin, Origin::JournalCommit | Origin::Checkpoint | Origin::Metadata);
        req.preflush = op == ReqOp::Flush;
        let seg = if origin == Origin::Checkpoint {
            Seg::Meta { block }
        } else if origin == Origin::JournalCommit {
            Seg::Journal
        } else {
            Seg::Other
        };
        self.submit(req, seg)
    }
}

// ---------------------------------------------------------------- QASIO's classification
/// QASIO's dependency type of an async request a task waits on for reason `why`, reached
/// `via` the journal or directly (FAST'15 §3). None: a wait on one's own I/O, which is sync.
fn dependency(why: Why, via: Via) -> Option<Dependency> {
    match via {
        Via::Handle => Some(Dependency::IJHandle),
        Via::Commit => Some(Dependency::IJCommit),
        Via::Direct => match why {
            Why::MetaBuffer => Some(Dependency::DMeta),
            Why::DataPage => Some(Dependency::DData),
            // The commit's data=ordered flush must see the data on flash, as fsync must.
            Why::SyncWriteback | Why::Ordered => Some(Dependency::DSync),
            Why::Discard => Some(Dependency::DDiscard),
            Why::Own | Why::JournalWrite => None,
        },
    }
}

/// The syscall name, path and size an op shows in exported traces (None: not a syscall).
/// Whether any thread of the scenario delivers input events.
fn has_input(sc: &Scenario) -> bool {
    fn any(ops: &[Op]) -> bool {
        ops.iter().any(|op| match op {
            Op::Input { .. } => true,
            Op::Repeat { ops, .. } => any(ops),
            _ => false,
        })
    }
    sc.apps.iter().any(|a| a.threads.iter().any(|t| any(&t.ops)))
}

fn span_of(op: &Op, now: SimTime) -> Option<(&'static str, Option<String>, Option<u64>, SimTime)> {
    let (name, path, size) = match op {
        Op::Open { path } => ("open", Some(path), None),
        Op::Creat { path } => ("creat", Some(path), None),
        Op::Close { path } => ("close", Some(path), None),
        Op::Read { path, len, .. } => ("read", Some(path), Some(len.0)),
        Op::Write { path, len, .. } => ("write", Some(path), Some(len.0)),
        Op::Fsync { path } => ("fsync", Some(path), None),
        Op::Fdatasync { path } => ("fdatasync", Some(path), None),
        Op::Truncate { path, size } => ("truncate", Some(path), Some(size.0)),
        Op::Unlink { path } => ("unlink", Some(path), None),
        Op::Stat { path } => ("stat", Some(path), None),
        Op::Compute { .. } => ("compute", None, None),
        Op::Sleep { .. } | Op::Think { .. } => ("sleep", None, None),
        Op::NetRecv { bytes } => ("net_recv", None, Some(bytes.0)),
        Op::Wait { .. } => ("wait", None, None),
        Op::Signal { .. } => ("signal", None, None),
        Op::BinderCall { .. } => ("binder_call", None, None),
        Op::Compose { .. } => ("compose", None, None),
        _ => return None,
    };
    Some((name, path.cloned(), size, now))
}

/// The machine as the layer modules see it (`forefront_model::kernel`).
impl Kernel for World {
    fn now(&self) -> SimTime {
        self.q.now()
    }
    fn block(&mut self, tid: Tid, b: Blocker, cat: Cat) {
        self.block_on(tid, b, cat);
    }
    fn wait_request(&mut self, tid: Tid, id: ReqId, why: Why, cat_other: Cat) {
        World::wait_request(self, tid, id, why, cat_other);
    }
    fn wake_all(&mut self, b: Blocker) {
        World::wake_all(self, b);
    }
    fn wake_where(&mut self, pred: &dyn Fn(Blocker) -> bool) {
        for t in self.wg.blocked_on(pred) {
            self.wake(t);
        }
    }
    fn submit_control(&mut self, tid: Tid, op: ReqOp, block: u64, blocks: u64, origin: Origin) -> (ReqId, u64) {
        World::submit_control(self, tid, op, block, blocks, origin)
    }
    fn live(&self, r: (ReqId, u64)) -> bool {
        World::live(self, r)
    }
    fn mark_commit_record(&mut self, id: ReqId) {
        self.st.mark_commit_record(&mut self.reqs, id);
    }
    fn request_mut(&mut self, id: ReqId) -> &mut Request {
        self.reqs.get_mut(id)
    }
    fn journal(&mut self) -> &mut Journal {
        &mut self.jn
    }
    fn fs(&self) -> &Fs {
        &self.fs
    }
    fn page_cache(&mut self) -> &mut PageCache {
        &mut self.pc
    }
}

/// Reclaim's seams (`forefront_model::mm::reclaim`): the victim order, the FastTrack allocation
/// gate and forefront's reclaim-wait inheritance are the policy's.
impl ReclaimCtx for World {
    fn shrink(&mut self, want: u64) -> forefront_model::mm::Reclaimed {
        World::shrink(self, want)
    }
    fn alloc_gate_pauses(&mut self, tid: Tid) -> bool {
        World::alloc_gate_pauses(self, tid)
    }
    fn wake_kswapd(&mut self) {
        self.wake_if(self.kswapd, Blocker::Idle);
    }
    fn writeback_for_reclaim(&mut self) {
        // wakeup_flusher_threads from reclaim: write back regardless of the thresholds.
        self.wb_for_reclaim = true;
        self.wake_flusher();
    }
    fn release_alloc_waiters(&mut self) {
        if !(self.policy.alloc_gate && self.fg_io_waiting > 0) {
            World::wake_all(self, Blocker::Alloc);
        }
    }
    fn reclaim_wait(&mut self, tid: Tid, short: u64) {
        if self.policy.fg_inherit && self.task_is_fg(tid) {
            self.inherit_reclaim_writeback(short);
        }
    }
}

/// The flusher's context (`forefront_model::mm::writeback`): ext4's write-back path.
impl Writeback for World {
    fn async_queued(&self) -> usize {
        self.async_queued
    }
    fn ensure_handle(&mut self, tid: Tid) -> bool {
        ext4::ensure_handle(self, tid)
    }
    fn stop_handle_of(&mut self, tid: Tid) {
        let txn = self.wg.release_handle(tid).expect("held");
        ext4::stop_handle(self, txn);
    }
    fn writeback_pages(&mut self, tid: Tid, file: FileId, idxs: &[u32], origin: Origin) -> u64 {
        let k = self.ext4_params();
        ext4::writeback_pages(self, &k, tid, file, idxs, origin)
    }
    fn meta_io(&mut self) -> &mut HashMap<u64, (ReqId, u64)> {
        &mut self.meta_io
    }
    fn writeback_for_reclaim_flag(&mut self) -> &mut bool {
        &mut self.wb_for_reclaim
    }
}

/// The file paths' context (`forefront_model::fs::ext4`).
impl Ext4 for World {
    fn fs_mut(&mut self) -> &mut Fs {
        &mut self.fs
    }
    fn wait_graph(&mut self) -> &mut WaitGraph {
        &mut self.wg
    }
    fn set_file_op(&mut self, tid: Tid, op: Option<FileOp>) {
        self.tasks[tid as usize].exec = op.map_or(Exec::None, Exec::File);
    }
    fn count_bytes(&mut self, tid: Tid, bytes: u64, write: bool) {
        World::count_bytes(self, tid, bytes, write);
    }
    fn submit_pages(&mut self, tid: Tid, file: FileId, run: (u32, u64, u32), write: bool, origin: Origin) -> u64 {
        World::submit_pages(self, tid, file, run, write, origin)
    }
    fn serial(&self, id: ReqId) -> u64 {
        self.req_serial[id as usize]
    }
    fn task_is_fg(&self, tid: Tid) -> bool {
        World::task_is_fg(self, tid)
    }
    fn wake_flusher(&mut self) {
        World::wake_flusher(self);
    }
    fn wake_jbd2(&mut self) {
        World::wake_jbd2(self);
    }
    fn wake_jbd2_holders(&mut self, txn: u64) {
        self.wake_if(self.jbd2, Blocker::Holders { txn });
    }
}
