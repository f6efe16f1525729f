//! The scenario file's schema. `Default` impls are the single source of truth for every
//! optional field; scenario files say where each number they set comes from.

use forefront_model::block::SchedulerConfig;
use forefront_model::cpu::CpuParams;
use forefront_model::fs::FsParams;
use serde::{Deserialize, Serialize};

use crate::Bytes;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub name: String,
    pub description: String,
    /// The phase whose durations are the headline FG metric (the time the user waits).
    pub headline: String,
    /// A built-in device name or a device file path.
    pub device: String,
    /// Simulated time limit (s); the run ends earlier when every foreground thread is done.
    pub duration_s: f64,
    /// Background app instances when `--bg-apps` is not given.
    #[serde(default)]
    pub bg_apps: u32,
    #[serde(default)]
    pub phone: Phone,
    #[serde(default, rename = "file")]
    pub files: Vec<FileSpec>,
    #[serde(rename = "app")]
    pub apps: Vec<AppSpec>,
    /// Busy background cells when `--bg-cells` is not given (scenarios with `[[cell]]`).
    #[serde(default)]
    pub bg_cells: u32,
    /// Virtual phones (Cells, SOSP'11): see [`crate::cells`].
    #[serde(default, rename = "cell")]
    pub cells: Vec<crate::cells::CellSpec>,
    #[serde(default, rename = "cells")]
    pub cells_params: crate::cells::CellsParams,
    /// File systems other than the phone's journaling one, by path prefix ([`Mount`]).
    #[serde(default, rename = "mount")]
    pub mounts: Vec<Mount>,
    /// Kernel knobs set by time (`[[knob]]`: ioprio, BFQ weight, freezer, cgroup CPU weight and
    /// `cpu.idle`, the write-back hold): [`crate::knobs`].
    #[serde(default, rename = "knob", skip_serializing_if = "Vec::is_empty")]
    pub knobs: Vec<crate::KnobSpec>,
}

/// Files whose path starts with `path` (a directory: `/data/cache` covers `/data/cache/x`, not
/// `/data/cache2`) live on this file system instead of the phone's ext4 on its device; the
/// longest matching prefix wins. [RS]'s what-ifs and selective sync:
///
/// ```toml
/// [[mount]]
/// path = "/data/data/com.android.browser/cache"   # web cache in RAM (what-if A)
/// fs = "tmpfs"
/// [[mount]]
/// path = "/data/data/com.android.browser/databases"
/// sync = false                                    # fsync returns at once (selective sync)
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mount {
    pub path: String,
    #[serde(default)]
    pub fs: MountFs,
    /// false: fsync and fdatasync return at once (no write-back wait, no journal commit, no
    /// cache flush); data reaches the device by ordinary write-back. Ext4 only.
    #[serde(default = "yes")]
    pub sync: bool,
    /// Size of the log-structured area (MiB, `fs = "lfs"` only; every lfs mount shares one),
    /// taken from the end of the device.
    #[serde(default)]
    pub size_mib: Option<u64>,
    /// The device it is on (`fs = "vfat"` only): a built-in device name or a device file, with
    /// its own block queue, after the phone's main device in the LBA space.
    #[serde(default)]
    pub device: Option<String>,
}

fn yes() -> bool {
    true
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MountFs {
    /// The phone's ext4 on its block device.
    #[default]
    Ext4,
    /// RAM only (shmem without swap, as on Android): never written to a device, never
    /// evicted; its pages are taken from the page cache's memory.
    Tmpfs,
    /// Log-structured (NILFS2-like) on the same device: every block written goes to the log's
    /// head; fsync writes a summary block instead of committing the ext4 journal; a cleaner
    /// task rewrites the live blocks of old segments ([RS]'s pilot for SQLite files).
    Lfs,
    /// FAT on a device of its own (Android's `/sdcard` on the SD card): no journal; fsync
    /// writes the file's data, FAT block and directory entry in place, then flushes that device.
    Vfat,
}

/// The log-structured area's size when no lfs mount gives one (MiB): an assumption, 32
/// NILFS2 segments of 8 MiB.
pub const DEFAULT_LFS_MIB: u64 = 256;

/// The phase name that marks a window of the background's I/O: each such phase gives one
/// figure of the run's `bg_window_samples_mb_s` (the background apps' system-call bytes over
/// the phase's time), as `forefront bench` reports its background sample by sample.
pub const BG_WINDOW_PHASE: &str = "bg_window";

/// The mount of `path` among `mounts` (`None`: the phone's ext4, synchronous): the longest
/// prefix that is `path` or a parent of it.
pub fn mount_of<'a>(mounts: &'a [Mount], path: &str) -> Option<&'a Mount> {
    mounts
        .iter()
        .filter(|m| {
            let p = m.path.trim_end_matches('/');
            path == p || (path.starts_with(p) && path.as_bytes().get(p.len()) == Some(&b'/'))
        })
        .max_by_key(|m| m.path.trim_end_matches('/').len())
}

/// The CPU groups of a scenario's user tasks (`[phone] cpu_groups`). Kernel threads are in the
/// root group in all three.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CpuGroups {
    /// Android's: the foreground app's tasks in the foreground group (`fg_cpu_shares`), every
    /// other app's in the background group (`bg_cpu_shares`, `bg_cores`).
    #[default]
    Android,
    /// Linux's autogroup (`CONFIG_SCHED_AUTOGROUP`, `kernel.sched_autogroup_enabled = 1`, a
    /// process in the root cpu cgroup): the processes of one session — `forefront bench` and
    /// everything it starts — are one task group at nice 0, and inside it they compete as tasks
    /// of one level, the launch against each worker, not as one group entity against another.
    Autogroup,
    /// A Linux machine without autogroup: every user task in the root group beside the kernel
    /// threads, one level.
    Root,
}

impl CpuGroups {
    /// The name a scenario file gives it.
    pub fn name(self) -> &'static str {
        match self {
            CpuGroups::Android => "android",
            CpuGroups::Autogroup => "autogroup",
            CpuGroups::Root => "root",
        }
    }
}

/// The phone apart from its storage device.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Phone {
    pub cpu: CpuParams,
    /// cpu.shares of the foreground group (Android: 1024) [VT].
    pub fg_cpu_shares: u32,
    /// cpu.shares of the background group (Android of the FTC paper: 110) [VT].
    pub bg_cpu_shares: u32,
    /// Cores the background group may use (Android's `background` cpuset); empty = all.
    pub bg_cores: Vec<usize>,
    /// blkio weights (CFQ groups): root and background [AOSP].
    pub blkio_root_weight: u32,
    pub blkio_bg_weight: u32,
    /// Every task's I/O in the root blkio group (a stock Linux machine where nothing sets up
    /// blkio cgroups: `/proc/PID/cgroup` shows `blkio:/` for every process, as for
    /// `forefront bench` on this VM) instead of the foreground/background groups Android's
    /// cgroups give its apps. CFQ and BFQ schedule groups as entities of their own, so this
    /// decides which queues compare weights (BFQ's preemption, `bfq_asymmetric_scenario`). A
    /// policy's per-task I/O weight (the agent's cgroups) still applies. Default false: the
    /// phones' groups.
    pub blkio_root_only: bool,
    /// Which CPU group each user task is in ([`CpuGroups`]); default `android`, the phones'
    /// foreground and background groups. A policy's own groups (the agent's cgroups) apply
    /// whatever this says.
    pub cpu_groups: CpuGroups,
    /// Memory the page cache may use (MiB).
    pub page_cache_mib: u64,
    /// vm.dirty_background_ratio / vm.dirty_ratio (% of page-cache memory) [K].
    pub dirty_background_ratio: f64,
    pub dirty_ratio: f64,
    /// vm.dirty_expire_centisecs / dirty_writeback_centisecs, in seconds [K].
    pub dirty_expire_s: f64,
    pub writeback_interval_s: f64,
    /// vm.dirty_bytes / vm.dirty_background_bytes (bytes; 0, the kernel's default, means the
    /// ratio applies). As in `domain_dirty_limits` (mm/page-writeback.c), a byte value replaces
    /// its ratio, and a background threshold at or above the limit becomes half the limit.
    pub dirty_bytes: u64,
    pub dirty_background_bytes: u64,
    /// Periodic write-back (false: `dirty_writeback_centisecs` = 0, the flusher is never woken
    /// by its timer; data is written when over the background threshold, by reclaim or fsync).
    pub periodic_writeback: bool,
    /// Dirty throttling: `per-page` (default), Linux 3.x's balance_dirty_pages, each task
    /// paused in proportion to the pages it dirtied above the freerun ceiling
    /// ([`forefront_model::mm::throttle`]); `per-call`, the earlier model kept for ablations:
    /// a writer over the dirty limit waits at the end of each write() call until the system
    /// is under it.
    pub dirty_throttle: forefront_model::mm::throttle::ThrottleMode,
    /// read_ahead_kb [K].
    pub read_ahead_kib: u64,
    /// The kernel's on-demand read-ahead (`mm/readahead.c`: a window ramping from the first
    /// read's size to `read_ahead_kib`, the next window submitted asynchronously when a read
    /// reaches its marker page; [`forefront_model::fs::readahead`]). Off (the default, every
    /// phone scenario): a sequential miss reads up to `read_ahead_kib` (at most 1 MiB) and waits
    /// for it. `bench predict` turns it on for this machine's kernel.
    pub async_read_ahead: bool,
    /// The folio a sequential read's pages are cached in (KiB, a power of two from 4): a
    /// read's `drop_behind` (`POSIX_FADV_DONTNEED`) drops only the folios its range covers
    /// whole ([`forefront_model::fs::ext4`]). 4 (the default): every page its own folio, as
    /// the papers' kernels cached file pages; `bench predict` takes this machine's from `bench
    /// calibrate`'s `dontneed_folio_kib` (2048 on this VM's ext4, docs/twin.md twin25).
    pub readahead_folio_kib: u64,
    /// Async requests the block queue holds before writers wait (nr_requests) [K].
    pub nr_requests: usize,
    /// Largest request (max_sectors_kb) [K].
    pub max_request_kib: u64,
    pub scheduler: SchedulerConfig,
    pub fs: FsParams,
    pub costs: Costs,
    /// The network link every `net_recv` shares ([`forefront_model::net::Link`]): its rate
    /// (MB/s) and round-trip time (ms), or a named preset that sets both (`wifi-bg`,
    /// `usb-tether`: [`forefront_model::net::PRESETS`]).
    pub net_mb_s: f64,
    pub net_rtt_ms: f64,
    pub net_link: Option<String>,
    /// Spread of each transfer's round trip: its RTT times a log-normal factor of mean 1 and
    /// this coefficient of variation (0: every round trip is the link's RTT).
    pub net_rtt_cv: f64,
    /// The block device: the run's device alone, or RAID-0 with more ([RS]'s pilot).
    pub storage: forefront_model::storage::StorageSpec,
    /// A VM host that takes the guest's free memory back (free page reporting,
    /// [`forefront_model::mm::host`]): `bench predict` sets it from `bench calibrate`'s
    /// `host_*` figures. None (every phone scenario): memory costs only `alloc_page_us`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_reclaim: Option<HostReclaimSpec>,
}

/// `[phone.host_reclaim]`: the host's reclaim of free memory, as `bench calibrate` measures it
/// (docs/twin.md, "The host takes freed memory back").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostReclaimSpec {
    /// Time from memory being freed to the reporting pass that hands it to the host, and between
    /// passes while some is left (ms; the kernel's `PAGE_REPORTING_DELAY`, 2 s).
    pub interval_ms: f64,
    /// Memory one pass reports at most (MiB).
    pub pass_mib: f64,
    /// Free memory reporting leaves backed (MiB).
    pub reserve_mib: f64,
    /// Free memory backed when the run starts (MiB; at least the reserve): what was freed just
    /// before it, such as the page cache a previous run left for its first drop to free.
    pub backed_mib: f64,
    /// CPU time an allocation pays per 4 KiB page the host took back (µs): a page a `write()`
    /// allocates.
    pub page_us: f64,
    /// The same for a page allocated for a read (µs; twin28); absent: `page_us`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_page_us: Option<f64>,
    /// Free memory in blocks below the kernel's reporting order, KiB per order (index = order;
    /// `bench calibrate`'s `host_free_order*_kib`, twin29): never reported, and the buddy
    /// allocator cuts folios smaller than the reporting order from them first. Absent: none
    /// (every allocation takes the backed memory first, as before twin29).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fragments_kib: Vec<f64>,
    /// The passes as a run measured them, `[ms, MiB]` each (ms since the run's start, in
    /// order): where given, each reports up to its MiB of the backed free memory at its time
    /// and the model's own schedule of passes is off (`bench predict --measured-passes`,
    /// docs/twin.md twin27). Empty: the model schedules its passes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub passes: Vec<[f64; 2]>,
}

impl Phone {
    /// The link's rate and round trip: the preset's when `net_link` names one (validated).
    pub fn link(&self) -> forefront_model::net::LinkParams {
        self.net_link
            .as_deref()
            .and_then(forefront_model::net::preset)
            .unwrap_or(forefront_model::net::LinkParams { mb_s: self.net_mb_s, rtt_ms: self.net_rtt_ms })
    }
}

impl Default for Phone {
    fn default() -> Self {
        Phone {
            cpu: CpuParams::default(),
            fg_cpu_shares: 1024,
            bg_cpu_shares: 110,
            bg_cores: Vec::new(),
            blkio_root_weight: 1000,
            blkio_bg_weight: 200,
            blkio_root_only: false,
            cpu_groups: CpuGroups::Android,
            page_cache_mib: 512,
            dirty_background_ratio: 10.0,
            dirty_ratio: 20.0,
            dirty_expire_s: 30.0,
            writeback_interval_s: 5.0,
            dirty_bytes: 0,
            dirty_background_bytes: 0,
            periodic_writeback: true,
            dirty_throttle: Default::default(),
            read_ahead_kib: 128,
            async_read_ahead: false,
            readahead_folio_kib: 4,
            nr_requests: 128,
            max_request_kib: 512,
            scheduler: SchedulerConfig::default(),
            fs: FsParams::default(),
            costs: Costs::default(),
            net_mb_s: 5.0,
            net_rtt_ms: 0.0,
            net_link: None,
            net_rtt_cv: 0.0,
            storage: Default::default(),
            host_reclaim: None,
        }
    }
}

/// CPU costs of kernel paths (µs of work at speed 1.0). Not published in the papers: chosen as
/// plausible for a 2014-class ARM core and documented as assumptions.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Costs {
    pub syscall_us: f64,
    /// Copying one 4 KiB page between user and page cache (a `read()`'s, and a `write()`'s
    /// unless `copy_write_page_us` is given).
    pub copy_page_us: f64,
    /// Copying one 4 KiB page from user into the page cache in a `write()` (the page looked up
    /// or added, copied, marked dirty and accounted): `bench calibrate` measures it apart from
    /// the read side (the twin's host, tw15: 0.53 µs against 0.38; docs/twin.md, twin17). `None`:
    /// `copy_page_us`, one cost either way (every phone scenario).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub copy_write_page_us: Option<f64>,
    /// Allocating a page cache page.
    pub alloc_page_us: f64,
    /// Reclaiming one page.
    pub reclaim_page_us: f64,
    /// Building and submitting one block request.
    pub submit_request_us: f64,
    /// Write-back work per page (flusher).
    pub writeback_page_us: f64,
    /// Journal work per metadata block (commit thread).
    pub journal_block_us: f64,
    /// Metadata update inside a journal handle (inode, bitmap, directory).
    pub metadata_us: f64,
    /// Waking up from a block (return to user).
    pub wakeup_us: f64,
}

impl Costs {
    /// A `write()`'s copy cost per page (µs): `copy_write_page_us`, else `copy_page_us`.
    pub fn write_copy_page_us(&self) -> f64 {
        self.copy_write_page_us.unwrap_or(self.copy_page_us)
    }
}

impl Default for Costs {
    fn default() -> Self {
        Costs {
            syscall_us: 2.0,
            copy_page_us: 1.5,
            copy_write_page_us: None,
            alloc_page_us: 0.5,
            reclaim_page_us: 0.6,
            submit_request_us: 8.0,
            writeback_page_us: 1.0,
            journal_block_us: 3.0,
            metadata_us: 10.0,
            wakeup_us: 3.0,
        }
    }
}

/// A file on flash when the run starts (written and synced, not in the page cache).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileSpec {
    /// Path; `{i}` is replaced by the background instance number for files of the template.
    pub path: String,
    pub size: Bytes,
    /// Owning app (name); the file belongs to each instance of a background template.
    pub owner: String,
    /// Start in the page cache (clean) instead of only on flash.
    #[serde(default)]
    pub cached: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The app the user interacts with (one instance).
    Fg,
    /// A background app template. `--bg-apps N` makes N instances, dealt round-robin over
    /// the scenario's templates in file order (instance i of k templates uses template i mod k).
    Bg,
    /// A system service (launcher, system_server): never foreground or background-classed.
    System,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AppSpec {
    pub name: String,
    pub role: Role,
    #[serde(rename = "thread")]
    pub threads: Vec<ThreadSpec>,
    /// Start each background instance after a random delay in [0, start_jitter_ms).
    #[serde(default)]
    pub start_jitter_ms: f64,
    /// The windows the app's processes live in (`[start_s, end_s]` of simulated time, in order,
    /// each ending before the next starts): at each start every thread begins its program anew
    /// as a new process (a new pid, as `exec` gives), at each end it is killed, stopping where
    /// the freezer would (before its next op or its next `read()`/`write()` call; a call in
    /// progress finishes) — `forefront bench` starts its workers at each sample and kills them
    /// at its end. Empty (the default): from the start to the run's end. Not for the `fg` app.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub alive_s: Vec<[f64; 2]>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThreadSpec {
    pub name: String,
    /// Worker threads of Android apps run in the background CPU group even when their app is in
    /// the foreground (THREAD_PRIORITY_BACKGROUND; FTC+VT-CFS [VT]).
    #[serde(default)]
    pub background_priority: bool,
    #[serde(default)]
    pub nice: i32,
    pub ops: Vec<Op>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SqliteMode {
    /// Rollback journal (journal_mode=DELETE): journal write + fsync, DB write + fsync, unlink.
    Rollback,
    /// Write-ahead log: append frames + fsync.
    Wal,
}

/// One operation of a thread. Paths are absolute strings; `{i}` expands in templates to the
/// background instance number, `{n}` to the 0-based iteration of the innermost `repeat`
/// (a new file per iteration: `/data/f{n}`) and `{n1}` to that of the `repeat` around it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
pub enum Op {
    /// Open an existing file (path lookup; CPU only).
    Open {
        path: String,
    },
    /// Create (or truncate to zero) a file: a journal handle on inode and directory blocks.
    Creat {
        path: String,
    },
    Close {
        path: String,
    },
    /// Read `len` bytes at `offset` in `chunk`-sized read() calls; with `drop_behind`, each
    /// call's pages leave the page cache after it (`POSIX_FADV_DONTNEED` over the call's range,
    /// as `forefront bench`'s uploaders read their files).
    Read {
        path: String,
        #[serde(default)]
        offset: Bytes,
        len: Bytes,
        #[serde(default = "default_chunk")]
        chunk: Bytes,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        drop_behind: bool,
    },
    /// `count` small reads at page-aligned offsets spread uniformly over `offset..offset +
    /// span`, each `size` long (or, with `size_max`, uniformly `size..=size_max` in 4 KiB
    /// steps): the page faults into code and resources, resource lookups and SQLite pages of an
    /// app start-up. The offsets and sizes are a fixed function of the path and `seed` (a
    /// start-up reads the same pages each time); each read is one `pread()`, and the kernel
    /// reads ahead only for a miss that continues cached pages.
    ReadRandom {
        path: String,
        count: u32,
        size: Bytes,
        #[serde(default)]
        size_max: Option<Bytes>,
        #[serde(default)]
        offset: Bytes,
        span: Bytes,
        #[serde(default)]
        seed: u64,
    },
    /// Write `len` bytes at `offset` (default: append at the end) in `chunk`-sized calls.
    Write {
        path: String,
        #[serde(default)]
        offset: Option<Bytes>,
        len: Bytes,
        #[serde(default = "default_chunk")]
        chunk: Bytes,
    },
    Fsync {
        path: String,
    },
    Fdatasync {
        path: String,
    },
    Truncate {
        path: String,
        size: Bytes,
    },
    Unlink {
        path: String,
    },
    /// stat/getattr-like metadata read (CPU only: inodes are cached).
    Stat {
        path: String,
    },
    /// CPU work (ms at speed 1.0).
    Compute {
        ms: f64,
    },
    Sleep {
        ms: f64,
    },
    /// Sleep until `ms` after the run's start (no wait once that time has passed): a program
    /// that follows a recorded schedule (`bench predict` along a bench run's timeline).
    SleepUntil {
        ms: f64,
    },
    /// The user thinking: sleep `ms` plus a uniform random extra in [0, `jitter_ms`) (the
    /// run's seed decides it), so input events do not fall at one phase of the display's vsync.
    Think {
        ms: f64,
        #[serde(default)]
        jitter_ms: f64,
    },
    /// Receive `bytes` from the network at the phone's link rate.
    NetRecv {
        bytes: Bytes,
    },
    /// Block until `chan` has been signalled (a counting semaphore), then consume one signal.
    Wait {
        chan: String,
    },
    Signal {
        chan: String,
    },
    /// One SQLite transaction writing `pages` 4 KiB DB pages.
    Sqlite {
        db: String,
        mode: SqliteMode,
        #[serde(default = "one")]
        pages: u32,
    },
    /// Repeat `ops` `times` times (0 = until the run ends).
    Repeat {
        times: u32,
        ops: Vec<Op>,
    },
    /// Begin a measured phase (the scenario's `headline` is the FG figure; a phase named
    /// [`BG_WINDOW_PHASE`] is a window over which the background's I/O rate is reported).
    PhaseBegin {
        name: String,
    },
    PhaseEnd {
        name: String,
    },
    /// Make `app` the foreground app (the activity manager's App Status change).
    Foreground {
        app: String,
    },
    /// The file operations of one thread of a real trace (strace or MobiGen), expanded when the
    /// scenario is loaded ([`crate::trace_ops`]): `path` relative to the scenario file, `tid`
    /// the traced thread, `gaps` what the time between calls was (`none`, `sleep`, `compute`).
    Trace {
        path: String,
        #[serde(default)]
        format: Option<String>,
        #[serde(default)]
        tid: Option<u32>,
        #[serde(default)]
        gaps: crate::trace_ops::Gaps,
    },
    /// Put virtual phone `cell` on the screen (Cells): the device mux saves the old cell's
    /// framebuffer and restores the new one's ([`crate::cells::CellsParams::switch_copy_ms`] of
    /// work), and the new cell's own foreground app becomes the phone's foreground app.
    SwitchCell {
        cell: String,
    },
    /// Evict `app`'s clean pages (the app was killed and its memory reclaimed: the next launch is cold).
    /// `app` names an app instance (`update0`, or `update{i}` in a background template); a
    /// background template's own name (`update`) drops the pages of every instance of it.
    DropCaches {
        app: String,
        /// Drop the app's inodes too (`echo 3 > drop_caches`, as `forefront bench` does before
        /// each sample; default false: only pages, `echo 1`): each file's inode-table block is
        /// read again, synchronously, before its data is next read.
        #[serde(default)]
        inodes: bool,
    },
    /// The thread goes on as a new process (`fork` + `exec`, as `forefront bench` starts one per
    /// operation): from here its requests carry a new process id, so the kernel's per-process
    /// state keyed by it starts afresh — BFQ's and CFQ's sync queue (the kernel's is per I/O
    /// context: a new process gets a new one, and BFQ deems a new queue interactive). Its app,
    /// uid, groups and files stay the same.
    Exec,
    /// An input event delivered by the input dispatcher: starts an *interaction*, a headline
    /// sample named `phase` that ends when SurfaceFlinger displays a frame showing its result
    /// (`post_frame`). The thread joins the user-interactive task chain (FTC) and so does every
    /// task it or a chain task hands work to (`signal`, `binder_call`, `post_frame`) until the
    /// chain's interactions are all displayed. `continuous` marks a drag (FTC's 20 ms target
    /// slice) rather than a tap (10 ms).
    Input {
        phase: String,
        #[serde(default)]
        continuous: bool,
    },
    /// A synchronous binder call: queue a transaction of `ms` of work (at speed 1.0) to a server
    /// thread of `service` and block until it replies. In the wait graph the caller waits on
    /// the server thread running it.
    BinderCall {
        service: String,
        ms: f64,
    },
    /// A binder server thread's loop body: wait for a transaction of `service`, run it, reply.
    BinderServe {
        service: String,
    },
    /// Queue a rendered frame to the compositor (BufferQueue). With `result` (the default) it
    /// shows the result of the oldest interaction that has no frame yet.
    PostFrame {
        #[serde(default = "yes")]
        result: bool,
    },
    /// Sleep until the next vsync edge of a `hz` display (edges at multiples of 1/hz s).
    Vsync {
        hz: f64,
    },
    /// Compose the queued frames (`ms` of work) and show them at the next vsync edge; with no frame
    /// queued, do nothing (a vsync during a continuous interaction with no new frame is a
    /// missed frame deadline).
    Compose {
        ms: f64,
    },
    /// A request straight to the block layer at `sector` (512 B units), bypassing the page cache
    /// and file system: block-trace replay. `sync` requests are waited for; async ones are not.
    Bio {
        write: bool,
        sector: u64,
        bytes: Bytes,
        #[serde(default)]
        sync: bool,
    },
}

fn default_chunk() -> Bytes {
    Bytes(64 * 1024)
}
fn one() -> u32 {
    1
}
