//! `forefront bench`'s workload, defined once: the foreground app it launches and the
//! background workers it runs. The benchmark (`forefront_bench::fixture`, `::ops`, `::runner`)
//! builds real files and processes from these definitions; [`BenchWorkload::scenario`] builds
//! the simulator scenario of the same workload, for `bench run --predict` and `bench predict`
//! (docs/twin.md).
//!
//! What the scenario keeps and what it cannot:
//! - the app's code and resource files ([`code_file_sizes`]) read whole in
//!   [`LAUNCH_READ_BUF`]-sized `read()` calls, file by file in name order, as
//!   `forefront_bench::ops::launch` does; its SQLite database's first queries as the page
//!   reads they cause ([`db_page_reads`], by SQLite's file format: the name index's pages for
//!   `count(*)` and the range query, then a shared table leaf and an overflow page per point
//!   read), spread over the database file;
//! - the background workers' sizes and calls: `update` overwrites its file in
//!   [`BG_CHUNK`] writes with an `fdatasync` every [`UPDATE_FSYNC_EVERY`], wrapping around;
//!   `copy` the same without `fdatasync`; `upload` reads its file in [`BG_CHUNK`] reads,
//!   drops each chunk from the page cache after reading it (the read op's `drop_behind`) and
//!   the whole file at the end of a pass, as the bench's uploaders call `POSIX_FADV_DONTNEED`;
//!   the kernel drops only whole folios, and on this VM's ext4 a sequential read is cached in
//!   2 MiB folios that a 1 MiB call never covers, so nearly the whole pass stays cached until
//!   its end (`Host::readahead_folio_kib`, twin25; twin24 had taken the per-chunk drop at its
//!   word);
//!   `mixed` deals `update` to the even workers and `upload` to the odd ones;
//! - the switch ([`Fg::Switch`], `forefront_bench::ops::switch`): the app's state and a photo
//!   each created, written in one `write()` and `fsync`ed ([`SWITCH_STATE_BYTES`],
//!   [`SWITCH_PHOTO_BYTES`]); the database opened (its header and the B-tree paths to the
//!   rightmost table and index leaves read cold, [`SWITCH_OPEN_PAGE_READS`]); then
//!   [`SWITCH_TRANSACTIONS`] WAL transactions with `synchronous=FULL`, each appending its
//!   dirty pages' frames to `app.db-wal` and `fsync`ing it ([`switch_tx_pages`]); and at the
//!   close of the last connection SQLite's checkpoint: the WAL `fsync`ed, the pages written
//!   into the database ([`switch_checkpoint_pages`]), the database `fsync`ed and the WAL
//!   deleted;
//! - the processes: each foreground operation is a process of its own, as the bench starts
//!   one per sample (an `exec` op at the start of each: its I/O gets a new BFQ queue, which
//!   BFQ deems interactive), and every process's I/O is in the root blkio group
//!   (`phone.blkio_root_only`: the bench sets up no cgroups outside the agent's modes); the real
//!   operation's process starts before the background and reads its executable then, the
//!   scenario's issues its first request at the operation;
//! - the app's own CPU work (SQLite, the loop around the calls): the bench measures each
//!   operation's user time (`op_cpu_ms` in its report) and `bench predict` uses the `alone`
//!   mode's mean ([`Host::fg_compute_ms`]); the kernel's side of the calls (system calls, page
//!   allocations and copies, request submission) is the model's own cost per call and page.
//!   Where no measurement is given, the app's work is an assumption ([`LAUNCH_COMPUTE_MS`],
//!   [`SWITCH_COMPUTE_MS`]);
//! - the bench's order of samples, where its report records it (`timeline`, twin26): the
//!   bench interleaves the modes, one sample each per round, and a VM host's reclaim follows the
//!   drops (below); a mode's scenario then follows the run's timeline event by event
//!   (`sleep_until`), each sample's drop and operation at its time, the other modes' samples
//!   unmeasured ([`BenchWorkload::timeline`]), and the workers live as the bench's do: started
//!   anew at each sample's window, killed at its end, absent from the `alone` samples (the
//!   scenario's `alive_s`, twin28); without one, the mode's samples follow one another at the
//!   ramp's period;
//! - what is not the bench's: the bench restarts its workers and drops every cache before
//!   each sample, the steady loop (without a timeline) keeps its workers running (at their
//!   place in their files, and through the gaps between samples) and drops their files' clean
//!   pages with the sample's drop; a switch's database grows by its new rows in the bench, while the
//!   scenario's checkpoint rewrites the same pages each time; the random extra before each
//!   operation (its phase against the workers' I/O cycle: before the drop in the steady loop,
//!   where it makes the samples up to 150 ms further apart than the bench's; taken from the
//!   ramp along a timeline);
//! - on a VM whose host takes freed memory back (free page reporting: docs/twin.md, "The host
//!   takes freed memory back", twin23), the scenario's `[phone.host_reclaim]` where `bench
//!   calibrate` measured it ([`Host::host_reclaim`], twin24): a page allocated from memory the
//!   host took back costs its fault; without the figures it is not charged.

use std::fmt::Write;

pub use forefront_model::cpu::Preempt;

/// Sizes of the app. The defaults make a mid-sized mobile app: 40 MiB of code and resources in
/// 32 files, a 16 MiB SQLite database of 4 000 rows.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AppSpec {
    pub code_files: usize,
    pub code_bytes: u64,
    pub db_rows: usize,
    pub row_bytes: usize,
}

impl Default for AppSpec {
    fn default() -> Self {
        AppSpec { code_files: 32, code_bytes: 40 << 20, db_rows: 4000, row_bytes: 4096 }
    }
}

/// The launch's `read()` buffer (bytes).
pub const LAUNCH_READ_BUF: u64 = 128 << 10;
/// The launch's point reads of whole rows (`SELECT body FROM items WHERE id = ?`).
pub const LAUNCH_POINT_READS: u32 = 100;
/// Rows the launch's range query lists (`… WHERE name >= 'item-1' … LIMIT 200`).
pub const LAUNCH_RANGE_ROWS: u32 = 200;
/// Assumption where no measurement is given ([`Host::fg_compute_ms`]): the CPU time of the
/// launch's own work on this class of machine (ms at speed 1.0), not fitted to the bench's
/// result. It meant SQLite's work and the `read()` copies together; the bench measured 0.5–1.5 ms
/// of user time a launch on the twin's VM (docs/twin.md, twin15), the copies being the
/// model's per-page cost.
pub const LAUNCH_COMPUTE_MS: f64 = 10.0;
/// The switch's saved state (`state.bin`), written in one call and `fsync`ed.
pub const SWITCH_STATE_BYTES: u64 = 256 << 10;
/// The switch's photo (`photo.jpg`), written in one call and `fsync`ed.
pub const SWITCH_PHOTO_BYTES: u64 = 4 << 20;
/// The switch's SQLite transactions (one `INSERT` of a [`SWITCH_ROW_BYTES`] row each).
pub const SWITCH_TRANSACTIONS: u32 = 20;
/// The body of each row the switch inserts.
pub const SWITCH_ROW_BYTES: usize = 4096;
/// Page reads of opening the database cold for the switch: page 1 (header and schema), and the
/// interior and leaf pages on the way to the rightmost leaf of the table and of the name
/// index, where the new rows go (a 2-level B-tree each at the default 4 000 rows).
pub const SWITCH_OPEN_PAGE_READS: u32 = 5;
/// A WAL frame: a 24-byte frame header and the page (SQLite's WAL format).
pub const WAL_FRAME_BYTES: u64 = 4096 + 24;
/// Assumption where no measurement is given ([`Host::fg_compute_ms`]): the CPU time of the
/// switch's SQLite work (20 transactions) and its copies (ms at speed 1.0), not fitted to the
/// bench's result.
pub const SWITCH_COMPUTE_MS: f64 = 5.0;
/// The background workers' call size.
pub const BG_CHUNK: u64 = 1 << 20;

/// The longest random extra before each simulated sample's drop (ms): several of the
/// background's I/O cycles (an updater's 32 MiB write and `fdatasync`, 20-40 ms on this VM; a
/// reader's read-ahead window, under 10 ms), so that a launch meets each phase of them about
/// equally often (twin11), and short beside the ramp, so that the simulated samples come as
/// often as the bench's (twin25: a VM host's reclaim follows the frees of each sample's drop).
/// Along a bench run's timeline it is taken from the end of the ramp instead, so that every
/// drop stays at its measured time (twin26).
pub const PHASE_JITTER_MS: f64 = 150.0;
/// `update`'s `fdatasync` period.
pub const UPDATE_FSYNC_EVERY: u64 = 32 << 20;

/// The size of each code or resource file and its name: a few large libraries, many small
/// resources, the sizes summing to about `code_bytes` (each at least 4 KiB).
pub fn code_file_sizes(spec: &AppSpec) -> Vec<(String, u64)> {
    let n = spec.code_files.max(1) as u64;
    let weights: Vec<u64> = (0..n).map(|i| 1 + (i % 8) * (i % 8)).collect();
    let total: u64 = weights.iter().sum();
    weights
        .iter()
        .enumerate()
        .map(|(i, w)| {
            let ext = if i % 3 == 0 { "so" } else { "res" };
            (format!("part{i:03}.{ext}"), (spec.code_bytes * w / total).max(4096))
        })
        .collect()
}

/// SQLite's page size and usable bytes per page (no reserved bytes): `U` in the file format
/// (sqlite.org/fileformat2.html, "B-tree Pages").
const DB_PAGE: u64 = 4096;
/// A row's record beyond its body: the record header and the name (`item-N`, up to 9 bytes
/// for the default 4 000 rows) — the few bytes the format adds to the payload.
const ROW_RECORD_EXTRA: u64 = 16;
/// One entry of the name index: the record (header, `item-N`, the rowid) with its cell's
/// payload-size varint and its 2-byte cell pointer, about 17 bytes.
const INDEX_ENTRY: u64 = 17;

/// How a table row is stored, by the file format's rules for a table leaf cell: a payload of
/// `P` bytes stays local if `P ≤ X = U − 35`; otherwise `K = M + (P − M) % (U − 4)` bytes stay
/// local if `K ≤ X`, else `M = (U − 12)·32/255 − 23` (489 bytes), and the rest goes to overflow
/// pages of `U − 4` bytes. Returns (rows per table leaf, overflow pages per row).
fn row_layout(spec: &AppSpec) -> (u64, u64) {
    let u = DB_PAGE;
    let (x, m) = (u - 35, (u - 12) * 32 / 255 - 23);
    let p = spec.row_bytes as u64 + ROW_RECORD_EXTRA;
    let local = if p <= x {
        p
    } else {
        let k = m + (p - m) % (u - 4);
        if k <= x {
            k
        } else {
            m
        }
    };
    let overflow = (p - local).div_ceil(u - 4);
    // The cell: payload-size and rowid varints (2 + 2 bytes), the local payload, a 4-byte first
    // overflow page number if it overflows; and its 2-byte cell pointer. A leaf's header is 8.
    let cell = 4 + local + if overflow > 0 { 4 } else { 0 } + 2;
    (((u - 8) / cell).max(1), overflow)
}

/// Overflow pages of one row ([`row_layout`]): a point read reads them besides the row's leaf.
pub fn db_overflow_pages_per_row(spec: &AppSpec) -> u32 {
    row_layout(spec).1 as u32
}

/// The database file's size by the file format's rules ([`row_layout`]): the table's leaves
/// (several rows each, a row's body beyond its local part in overflow pages), the name index's
/// leaves ([`INDEX_ENTRY`] bytes an entry), page 1 and the interior pages (about one per 500
/// children).
pub fn db_bytes(spec: &AppSpec) -> u64 {
    let rows = spec.db_rows as u64;
    let (per_leaf, overflow) = row_layout(spec);
    let leaves = rows.div_ceil(per_leaf);
    let index = (rows * INDEX_ENTRY).div_ceil(DB_PAGE - 8);
    let interior = (leaves + index).div_ceil(500) + 1;
    ((rows * overflow + leaves + index + interior + 1) * DB_PAGE).max(64 << 10)
}

/// Page reads of the launch's queries, by the file format's layout ([`row_layout`]):
/// `count(*)` walks the smallest B-tree, the name index, leaf by leaf; the range query reads the
/// index pages its rows are on (it needs nothing from the table: `id` is the rowid, `name` is
/// in the index); each point read the table leaf of its row (the rows share leaves, so 100 rows
/// of 500 leaves touch about 91: `L·(1 − (1 − 1/L)^k)`) and the row's overflow pages; plus page 1
/// and the table's root. Measured on the bench's default app (strace of `bench op --fg
/// launch`, 2026-11-27): 210 `pread`s of 208 distinct pages (109 B-tree pages through SQLite's
/// page cache, 100 overflow pages read directly, page 1's header); this gives 211.
pub fn db_page_reads(spec: &AppSpec) -> u32 {
    let rows = spec.db_rows as u64;
    let (per_leaf, overflow) = row_layout(spec);
    let leaves = rows.div_ceil(per_leaf).max(1);
    let per_index_page = (DB_PAGE - 8) / INDEX_ENTRY;
    let index = rows.div_ceil(per_index_page);
    let range = u64::from(LAUNCH_RANGE_ROWS).min(rows).div_ceil(per_index_page);
    let k = f64::from(LAUNCH_POINT_READS);
    let touched = (leaves as f64 * (1.0 - (1.0 - 1.0 / leaves as f64).powf(k))).round() as u64;
    (index + range + touched + u64::from(LAUNCH_POINT_READS) * overflow + 2) as u32
}

/// Pages one switch transaction dirties (frames appended to the WAL): a
/// [`SWITCH_ROW_BYTES`] body exceeds a 4 KiB table leaf's local payload (`U − 35` = 4 061
/// bytes), so SQLite keeps its minimum local part (489 bytes) in the table's rightmost leaf and
/// the rest in overflow pages; plus the name index's leaf, and page 1, whose in-header database
/// size changes as the overflow pages are allocated.
pub fn switch_tx_pages() -> u64 {
    let overflow = (SWITCH_ROW_BYTES as u64 + 32 - 489).div_ceil(4092);
    1 + overflow + 1 + 1
}

/// Distinct pages the switch's checkpoint writes into the database: page 1, the index leaf,
/// every row's overflow pages and the table leaves the new rows fill (about 8 rows of 489
/// local bytes and their cell headers per 4 KiB leaf).
pub fn switch_checkpoint_pages() -> u64 {
    let n = u64::from(SWITCH_TRANSACTIONS);
    let overflow = (switch_tx_pages() - 3) * n;
    1 + 1 + overflow + n.div_ceil(8)
}

/// The foreground operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Fg {
    Launch,
    Switch,
    /// A replayed start-up I/O trace in the S suite's format (`forefront_bench::replay`): the
    /// trace's reads, O_DIRECT, one thread per traced process, on files the bench writes.
    Replay,
}

/// The background workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Bg {
    Update,
    /// Writes with no fsync: write-back is the flusher's.
    Copy,
    Upload,
    /// Half the background processes update (write), half upload (read): the S suite's
    /// mixed readers + writers cell.
    Mixed,
    None,
    /// The S suite's readers (`comm_startup_lat`'s fio jobs): `bg_procs` sequential readers,
    /// 4 KiB buffered `read()`s of a whole file, the file's cache dropped at each pass.
    #[serde(rename = "fio-read")]
    FioRead,
    /// The S suite's writers: `bg_procs` sequential writers, 4 KiB buffered `write()`s over a
    /// file created at the start, no fsync, plus the suite's `sync` every 2 s.
    #[serde(rename = "fio-write")]
    FioWrite,
    /// `bg_procs` fio-style readers and `bg_procs` fio-style writers (2 × `bg_procs` workers,
    /// readers on the even ones), plus the `sync` loop.
    #[serde(rename = "fio-rw")]
    FioRw,
}

/// One background worker's job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Worker {
    Update,
    Copy,
    Upload,
    /// fio-style sequential reader (`Bg::FioRead`).
    SeqRead,
    /// fio-style sequential writer (`Bg::FioWrite`).
    SeqWrite,
}

impl Worker {
    pub fn name(self) -> &'static str {
        match self {
            Worker::Update => "update",
            Worker::Copy => "copy",
            Worker::Upload => "upload",
            Worker::SeqRead => "seq-read",
            Worker::SeqWrite => "seq-write",
        }
    }
}

/// The fio-style workers' call size (fio's default `bs`).
pub const FIO_BS: u64 = 4096;
/// The S suite's `sync` loop period (`comm_startup_lat.sh`: `sync & sleep 2` while writers run).
pub const SYNC_LOOP_MS: u64 = 2000;

impl Bg {
    /// The job of worker `i` (`None` for [`Bg::None`]).
    pub fn worker(self, i: usize) -> Option<Worker> {
        match self {
            Bg::Update => Some(Worker::Update),
            Bg::Copy => Some(Worker::Copy),
            Bg::Upload => Some(Worker::Upload),
            Bg::Mixed if i % 2 == 0 => Some(Worker::Update),
            Bg::Mixed => Some(Worker::Upload),
            Bg::None => None,
            Bg::FioRead => Some(Worker::SeqRead),
            Bg::FioWrite => Some(Worker::SeqWrite),
            Bg::FioRw if i % 2 == 0 => Some(Worker::SeqRead),
            Bg::FioRw => Some(Worker::SeqWrite),
        }
    }

    /// How many worker processes `procs` (`--bg-procs`) means: twice as many for
    /// [`Bg::FioRw`] (N readers + N writers, as the S suite counts them), none for [`Bg::None`].
    pub fn workers(self, procs: usize) -> usize {
        match self {
            Bg::None => 0,
            Bg::FioRw => 2 * procs,
            _ => procs,
        }
    }

    /// Whether the S suite's `sync` loop runs beside the workers (its cells with writers).
    pub fn sync_loop(self) -> bool {
        matches!(self, Bg::FioWrite | Bg::FioRw)
    }

    /// One of the S suite's fio-style backgrounds.
    pub fn is_fio(self) -> bool {
        matches!(self, Bg::FioRead | Bg::FioWrite | Bg::FioRw)
    }
}

/// This machine's kernel settings the scenario takes (from sysfs and /proc, by the caller).
#[derive(Clone, Debug, PartialEq)]
pub struct Host {
    /// CPUs (each at speed 1.0).
    pub cpus: usize,
    pub page_cache_mib: u64,
    pub read_ahead_kib: u64,
    /// The kernel's on-demand read-ahead (`phone.async_read_ahead`): true for a Linux host
    /// (every kernel since 2.6.23 ramps its window and reads the next one asynchronously).
    pub async_read_ahead: bool,
    /// The folio the file system caches a sequential read in (KiB), where `bench calibrate`
    /// measured it (`dontneed_folio_kib`: the smallest aligned range `POSIX_FADV_DONTNEED`
    /// drops such a file in; twin25), or `None`: one page (`phone.readahead_folio_kib`). The
    /// uploaders' per-chunk drop keeps every folio its 1 MiB calls do not cover whole.
    pub readahead_folio_kib: Option<u64>,
    pub nr_requests: usize,
    pub max_request_kib: u64,
    pub dirty_background_ratio: f64,
    pub dirty_ratio: f64,
    pub dirty_expire_s: f64,
    pub writeback_interval_s: f64,
    /// CPU µs per 4 KiB page copied by `read()` on this machine (`bench calibrate`'s
    /// `copy_read_page_us`; its older files: `copy_page_us`, the mean of both directions), or
    /// `None` for the simulator's default `[phone.costs]`.
    pub copy_page_us: Option<f64>,
    /// CPU µs per 4 KiB page copied into the page cache by `write()` (`bench calibrate`'s
    /// `copy_write_page_us`), or `None`: the read side's figure.
    pub copy_write_page_us: Option<f64>,
    /// CPU µs per 4 KiB page the kernel adds to a `write()` over a page that is not cached, and
    /// to a read-ahead's page (its allocation, insertion and block lookup: `bench calibrate`'s
    /// `alloc_page_us`, measured as a cold page's write minus a cached one's, twin21), or
    /// `None`: the simulator's default `[phone.costs]` (0.5 µs, assumed).
    pub alloc_page_us: Option<f64>,
    /// CPU µs per 4 KiB page the kernel spends writing a dirty page back (an `fdatasync`'s
    /// walk of the file's pages, their buffers and the bios they go out in, and the flusher's
    /// the same): `bench calibrate`'s `writeback_page_us`, measured as the thread CPU time of
    /// an `fdatasync` over 32 MiB of dirty pages (twin23), or `None`: the simulator's default
    /// `[phone.costs]` (1.0 µs, assumed for a 2014-class phone core).
    pub writeback_page_us: Option<f64>,
    /// Whether the bench's file system journals (`forefront_sysfs::fs::fs_of`: an ext4 made
    /// without a journal reads `false`; `None`: unknown, or not ext4). `Some(false)` gives the
    /// scenario `[phone.fs] journal = false` (fsyncs write inodes in place, twin21); otherwise
    /// the simulator's ext4 journals.
    pub fs_journal: Option<bool>,
    /// The launcher's burst call to the agent (ms, `fg PID --burst` over its socket): the bench
    /// times each `agent`-mode operation from before that call (`forefront_bench::runner::
    /// time_op`) and reports its median (`burst_call_ms`). `Some`: the simulator's `agent`
    /// mode waits that long after the pause begins, before the operation's first call; `None`:
    /// the call is free, as before twin11.
    pub burst_call_ms: Option<f64>,
    /// The kernel's preemption model (`forefront_sysfs::sched::preempt_model`): with
    /// [`Preempt::None`] a woken task waits for the running one's system call to end (a
    /// background writer's `write()` call of page copies) before it gets the CPU.
    pub preempt: Preempt,
    /// The kernel's fair scheduler (`forefront_sysfs::sched::fair_scheduler`): `Some` for
    /// EEVDF (Linux 6.6+) with its base slice and tick (ms, before the `1 + log2(ncpus)`
    /// scaling of the slice), modelled as `[phone.cpu] scheduler = "eevdf"` with slices
    /// checked at the tick; `None`: the simulator's CFS, as before.
    pub eevdf: Option<(f64, f64)>,
    /// How the host groups the bench's processes for the CPU (`phone.cpu_groups`): one task
    /// group (`autogroup`: its session's autogroup, or the cpu cgroup it runs in), the root
    /// group (`root`), or the phones' foreground and background groups at equal weights
    /// (`android`, the model of every twin table before twin14; the default here).
    pub cpu_groups: crate::CpuGroups,
    /// The foreground operation's own CPU work (ms at speed 1.0): its user time as the bench
    /// measured it, scaled to its time on a CPU where perf's task clock was recorded (the CPU
    /// clock also counts waits for the CPU on a kernel without preemption: docs/twin.md, twin18)
    /// (`bench run` reports each mode's mean, `op_cpu_ms`; `bench predict` takes
    /// the `alone` mode's), since the model charges the kernel's side of its calls (system
    /// calls, page copies) by itself. `None`: the assumption ([`LAUNCH_COMPUTE_MS`],
    /// [`SWITCH_COMPUTE_MS`]).
    pub fg_compute_ms: Option<f64>,
    /// The VM host's reclaim of free memory (free page reporting) as `bench calibrate`
    /// measured it (its `host_*` figures), or `None`: no host model (a machine without it, or
    /// a calibration from before twin24). The scenario's `[phone.host_reclaim]`, its memory
    /// backed at the start being the reserve plus the bench's files (its fixture writes them
    /// just before the first sample, whose drop frees them).
    pub host_reclaim: Option<HostReclaimFigures>,
    /// The reporting passes the bench run measured (`[ms since its first sample, MiB]`, its
    /// report's `reporting_passes`), to replay instead of the model's schedule where the
    /// scenario follows the run's timeline and the host is modelled (`bench predict
    /// --measured-passes`, twin27); empty: the model schedules them.
    pub host_passes: Vec<[f64; 2]>,
}

/// `bench calibrate`'s figures of the host's reclaim of free memory (docs/twin.md, twin24).
#[derive(Clone, Debug, PartialEq)]
pub struct HostReclaimFigures {
    /// Between reporting passes (ms).
    pub interval_ms: f64,
    /// Memory one pass reports (MiB).
    pub pass_mib: f64,
    /// Free memory that stays backed (MiB).
    pub reserve_mib: f64,
    /// CPU per 4 KiB page a `write()` allocates from memory the host took back (µs).
    pub page_us: f64,
    /// The same for a page allocated for a read (µs), where measured (twin28); `None`:
    /// `page_us`.
    pub read_page_us: Option<f64>,
    /// Free memory in blocks of each order below the reporting order (KiB, index = order),
    /// where measured (twin29); empty: none.
    pub fragments_kib: Vec<f64>,
}

impl Default for Host {
    /// Kernel defaults on a 2-CPU machine with 16 GiB of page cache.
    fn default() -> Self {
        Host {
            cpus: 2,
            page_cache_mib: 16 << 10,
            read_ahead_kib: 128,
            async_read_ahead: true,
            readahead_folio_kib: None,
            nr_requests: 256,
            max_request_kib: 1280,
            dirty_background_ratio: 10.0,
            dirty_ratio: 20.0,
            dirty_expire_s: 30.0,
            writeback_interval_s: 5.0,
            copy_page_us: None,
            copy_write_page_us: None,
            alloc_page_us: None,
            writeback_page_us: None,
            fs_journal: None,
            burst_call_ms: None,
            preempt: Preempt::Full,
            eevdf: None,
            cpu_groups: crate::CpuGroups::Android,
            fg_compute_ms: None,
            host_reclaim: None,
            host_passes: vec![],
        }
    }
}

/// The bench's workload: what `bench run` measured (its report holds every field).
#[derive(Clone, Debug, PartialEq)]
pub struct BenchWorkload {
    pub fg: Fg,
    pub bg: Bg,
    pub bg_procs: usize,
    pub bg_file_bytes: u64,
    /// Time the background runs before each foreground operation starts.
    pub ramp_ms: u64,
    pub app: AppSpec,
    /// The run's samples in the order the bench took them, every mode's (its report's
    /// `timeline`; empty for a report from before twin26 or a kept background): where given, a
    /// mode's scenario follows it ([`SimSetup::mode`]), the other modes' samples as drops and
    /// waits of their measured length, so that the drops free memory when the bench's did
    /// (docs/twin.md, twin26).
    pub timeline: Vec<BenchSample>,
}

/// One sample of a bench run's timeline (`forefront_bench::runner::SampleTimes`): its mode and
/// when its caches were dropped, its background window began, its operation began and ended
/// (ms since the run's first sample).
#[derive(Clone, Debug, PartialEq, serde::Deserialize)]
pub struct BenchSample {
    pub mode: String,
    #[serde(default)]
    pub warmup: bool,
    pub dropped_ms: Option<f64>,
    pub window_ms: f64,
    pub op_ms: f64,
    pub end_ms: f64,
}

/// The bench mode without a background (`forefront_bench::runner::Mode::Alone`'s name): its
/// samples start no workers.
pub const ALONE_MODE: &str = "alone";

/// The prefix of a bench workload's name where a scenario is named (`sim sweep`'s
/// `scenario = "bench:launch/update"`).
pub const NAMED_PREFIX: &str = "bench:";
/// Foreground operations of a named bench scenario: `bench predict`'s default.
pub const NAMED_LAUNCHES: u32 = 10;

/// How the simulated machine is set up: the I/O scheduler (`deadline`, this kernel's
/// mq-deadline; or `bfq`, which the simulator models only where its `bfq` scheduler exists) and
/// whether the background runs.
#[derive(Clone, Debug, PartialEq)]
pub struct SimSetup {
    pub scheduler: String,
    pub background: bool,
    pub launches: u32,
    /// The bench mode simulated: with a [`BenchWorkload::timeline`], its first `launches`
    /// samples there are the measured ones.
    pub mode: Option<String>,
}

impl BenchWorkload {
    /// The workload `bench run --fg FG --bg BG` runs with its other options at their defaults
    /// (2 workers, 1 GiB files, a 1.5 s ramp, the default app), from `FG/BG` (`launch/update`).
    pub fn named(name: &str) -> Result<BenchWorkload, String> {
        let (fg, bg) = name.split_once('/').ok_or_else(|| format!("`{name}` is not FG/BG (e.g. launch/update)"))?;
        let fg = match fg {
            "launch" => Fg::Launch,
            "switch" => Fg::Switch,
            f => return Err(format!("`{f}` is not a bench foreground (launch, switch)")),
        };
        let bg = match bg {
            "update" => Bg::Update,
            "copy" => Bg::Copy,
            "upload" => Bg::Upload,
            "mixed" => Bg::Mixed,
            "none" => Bg::None,
            b => return Err(format!("`{b}` is not a bench background (update, copy, upload, mixed, none)")),
        };
        Ok(BenchWorkload {
            fg,
            bg,
            bg_procs: 2,
            bg_file_bytes: 1 << 30,
            ramp_ms: 1500,
            app: AppSpec::default(),
            timeline: vec![],
        })
    }

    /// The scenario a sweep names `bench:FG/BG` ([`NAMED_PREFIX`]) on `device`: [`Self::named`]'s
    /// workload, with its background, [`NAMED_LAUNCHES`] operations, the kernel's defaults for
    /// the machine ([`Host::default`]: a sweep's result must not depend on where it runs; its
    /// axes set `phone.*` to another machine's) and mq-deadline (`phone.scheduler` to change).
    pub fn named_scenario(name: &str, device: &str) -> Result<crate::Scenario, String> {
        let w = BenchWorkload::named(name)?;
        let setup = SimSetup { scheduler: "deadline".into(), background: true, launches: NAMED_LAUNCHES, mode: None };
        w.scenario(device, &Host::default(), &setup)
    }

    /// The scenario's TOML (the simulator's own format, so what it runs can be read and rerun
    /// with `forefront sim run FILE --device DEV`).
    pub fn scenario_toml(&self, device: &str, host: &Host, setup: &SimSetup) -> Result<String, String> {
        if self.fg == Fg::Replay {
            return Err("not yet in the simulator: `--fg replay` (a replayed S-suite start-up trace's O_DIRECT reads)".into());
        }
        if self.bg.is_fio() {
            return Err(format!(
                "not yet in the simulator: `--bg {}` (the S suite's fio-style 4 KiB buffered readers/writers and its sync loop)",
                bg_name(self.bg)
            ));
        }
        let mut s = String::new();
        let w = &mut s;
        let launches = setup.launches.max(1);
        let ramp = self.ramp_ms as f64;
        let bg_apps = if setup.background && self.bg != Bg::None { self.bg_procs } else { 0 };
        let slots = if bg_apps > 0 { self.slots(setup)? } else { vec![] };
        // Generous: the run ends when the launches are done.
        let duration = slots.last().map_or(0.0, |s| s.1.end_ms / 1000.0) + launches as f64 * (ramp / 1000.0 + 60.0) + 10.0;
        let _ =
            writeln!(w, "# Generated by forefront (crates/workload/src/bench.rs): `forefront bench`'s workload as a scenario.");
        let fg = fg_name(self.fg);
        let _ = writeln!(w, "name = \"bench-{fg}-{}\"", bg_name(self.bg));
        let _ = writeln!(w, "description = \"forefront bench: {fg} under {} ({} workers)\"", bg_name(self.bg), self.bg_procs);
        let _ = writeln!(w, "headline = \"{fg}\"\ndevice = {device:?}\nduration_s = {duration:.1}\nbg_apps = {bg_apps}");
        let _ = writeln!(w, "\n[phone]");
        let _ = writeln!(w, "page_cache_mib = {}", host.page_cache_mib);
        // Stock Linux: no foreground/background groups, every task at the same weight.
        let _ = writeln!(w, "fg_cpu_shares = 1024\nbg_cpu_shares = 1024\nbg_cores = []");
        let _ = writeln!(w, "blkio_root_weight = 1000\nblkio_bg_weight = 1000");
        // No blkio cgroups either: every process of the bench is in the root group (`blkio:/`).
        let _ = writeln!(w, "blkio_root_only = true");
        // The bench's processes as the host groups them for the CPU (`Host::cpu_groups`).
        let _ = writeln!(w, "cpu_groups = {:?}", host.cpu_groups.name());
        let _ = writeln!(
            w,
            "dirty_background_ratio = {:?}\ndirty_ratio = {:?}\ndirty_expire_s = {:?}\nwriteback_interval_s = {:?}",
            host.dirty_background_ratio, host.dirty_ratio, host.dirty_expire_s, host.writeback_interval_s
        );
        let _ = writeln!(
            w,
            "read_ahead_kib = {}\nnr_requests = {}\nmax_request_kib = {}",
            host.read_ahead_kib, host.nr_requests, host.max_request_kib
        );
        if host.async_read_ahead {
            let _ = writeln!(w, "async_read_ahead = true");
        }
        if let Some(kib) = host.readahead_folio_kib {
            let _ = writeln!(w, "readahead_folio_kib = {kib}");
        }
        let cores = vec!["1.0"; host.cpus.max(1)].join(", ");
        let _ = writeln!(w, "\n[phone.cpu]\ncores = [{cores}]");
        if host.preempt == Preempt::None {
            let _ = writeln!(w, "preempt = \"none\"");
        }
        if let Some((slice, tick)) = host.eevdf {
            let _ =
                writeln!(w, "scheduler = \"eevdf\"\nmin_granularity_ms = {slice:?}\ntick_ms = {tick:?}\nslice_on_tick = true");
        }
        let _ = writeln!(w, "\n[phone.scheduler]\nkind = {:?}", setup.scheduler);
        let _ = writeln!(w, "\n[phone.fs]\nstable_pages = false\ndiscard = false\nfragmentation = 0.0");
        if host.fs_journal == Some(false) {
            let _ = writeln!(w, "journal = false");
        }
        // The fixture writes its files just before the first sample, so they are cached when
        // its drop frees them. Along a timeline they start so, in the page cache, and the first
        // drop frees them as the bench's did (its workers start only at the first window, twin28);
        // in the steady loop, whose workers run from the start, they count as backed free
        // memory instead.
        let fixture_cached = !slots.is_empty();
        if let Some(h) = &host.host_reclaim {
            // The fixture's files, cached as it wrote them, are what the first sample's drop
            // frees: backed memory then (later samples free what the one before cached).
            let files = (self.bg_procs as u64 * self.bg_file_bytes + self.app.code_bytes + db_bytes(&self.app)) >> 20;
            let files = if fixture_cached { 0 } else { files };
            let backed = (h.reserve_mib + files as f64).min(host.page_cache_mib as f64);
            let _ = writeln!(
                w,
                "\n[phone.host_reclaim]\ninterval_ms = {:?}\npass_mib = {:?}\nreserve_mib = {:?}\nbacked_mib = {backed:?}\npage_us = {:?}",
                h.interval_ms, h.pass_mib, h.reserve_mib, h.page_us
            );
            if let Some(r) = h.read_page_us {
                let _ = writeln!(w, "read_page_us = {r:?}");
            }
            if !h.fragments_kib.is_empty() {
                let list: Vec<String> = h.fragments_kib.iter().map(|k| format!("{k:?}")).collect();
                let _ = writeln!(w, "fragments_kib = [{}]", list.join(", "));
            }
            // The run's own passes, on the timeline's clock, where the scenario follows it.
            if !slots.is_empty() && !host.host_passes.is_empty() {
                let list: Vec<String> = host.host_passes.iter().map(|[ms, mib]| format!("[{ms:?}, {mib:?}]")).collect();
                let _ = writeln!(w, "passes = [{}]", list.join(", "));
            }
        }
        if host.copy_page_us.is_some()
            || host.copy_write_page_us.is_some()
            || host.alloc_page_us.is_some()
            || host.writeback_page_us.is_some()
        {
            let _ = writeln!(w, "\n[phone.costs]");
        }
        if let Some(c) = host.alloc_page_us {
            let _ = writeln!(w, "alloc_page_us = {c:?}");
        }
        if let Some(c) = host.writeback_page_us {
            let _ = writeln!(w, "writeback_page_us = {c:?}");
        }
        if let Some(c) = host.copy_page_us {
            let _ = writeln!(w, "copy_page_us = {c:?}");
        }
        if let Some(c) = host.copy_write_page_us {
            let _ = writeln!(w, "copy_write_page_us = {c:?}");
        }

        let cached = if fixture_cached { "\ncached = true" } else { "" };
        for (name, size) in code_file_sizes(&self.app) {
            let _ = writeln!(w, "\n[[file]]\npath = \"/app/code/{name}\"\nsize = {size}\nowner = \"app\"{cached}");
        }
        let db = db_bytes(&self.app);
        let _ = writeln!(w, "\n[[file]]\npath = \"/app/data/app.db\"\nsize = {db}\nowner = \"app\"{cached}");
        if self.fg == Fg::Switch {
            // Written by the switch: created (truncated) by each one.
            for (name, size) in [("state.bin", SWITCH_STATE_BYTES), ("photo.jpg", SWITCH_PHOTO_BYTES)] {
                let _ = writeln!(w, "\n[[file]]\npath = \"/app/state/{name}\"\nsize = {size}\nowner = \"app\"");
            }
        }

        let _ = writeln!(w, "\n[[app]]\nname = \"shell\"\nrole = \"system\"\n[[app.thread]]\nname = \"main\"\nops = [{{ op = \"sleep\", ms = 1.0 }}]");
        let _ = writeln!(w, "\n[[app]]\nname = \"app\"\nrole = \"fg\"\n[[app.thread]]\nname = \"main\"\nops = [");
        if !slots.is_empty() {
            self.scheduled_ops(w, host, &slots);
            let _ = writeln!(w, "]");
        } else {
            let _ = writeln!(w, "  {{ op = \"repeat\", times = {launches}, ops = [");
            // Each operation is a process of its own (`forefront_bench::runner::spawn_op`).
            let _ = writeln!(w, "    {{ op = \"exec\" }},");
            // A uniform random extra of up to PHASE_JITTER_MS (the run's seed decides it), then the
            // drop and the ramp: nothing in the bench ties a launch's start to the phase of the
            // workers' I/O cycles (an fdatasync burst or a read-ahead window every 20-30 ms here),
            // and on the real machine the host's varying service times over the 1.5 s ramp spread
            // it over the whole cycle. A fixed pause made every simulated launch meet the
            // background at one phase (the same number of MiB in flight each time), since the
            // simulated cycle is periodic and restarts with each launch (a thaw, a preemption). The
            // extra spans several cycles, so each phase is about equally likely; its length is not
            // fitted (docs/twin.md, "The launch meets the background at a random phase", twin11;
            // twin25 shortened it from one ramp, below).
            // The bench drops every cache (`echo 3`: pages, and the inodes of files nobody holds
            // open, whose inode-table blocks are then read again at the next open) and starts its
            // workers anew before each sample (`forefront_bench::runner::one_sample`), so the
            // workers' files are not cached when the ramp begins: an updater's writes over them
            // allocate pages again through the ramp and into the launch (a 1 GiB file at ~0.5 GB/s
            // a worker), where the scenario's long-running workers would otherwise overwrite
            // cached pages (twin20). The workers keep their place in their files: with every clean
            // page dropped, which offset a pass starts at does not change what it costs.
            // The random extra comes before the drop, so the launch starts one ramp after it as
            // the bench's does: what the host has taken back of the memory the drop freed depends
            // on that time (twin24). And it is short, so that the samples' drops come about as far
            // apart as the bench's (one ramp and one operation, plus the bench's own ~0.3 s): a VM
            // host's reporting passes run on their own clock (~2.3 s here) while memory is freed,
            // and a pass that lands shortly after a drop takes back memory the workers are about
            // to allocate, as in about half the real samples (twin25). Not modelled: the bench
            // interleaves the modes, which puts each sample's drop at its own phase of that clock;
            // here one mode's samples come at a steady period, so the passes drift through their
            // phases by a fraction of a second a sample and ten samples see part of the cycle.
            let _ = writeln!(w, "    {{ op = \"think\", ms = 0.0, jitter_ms = {PHASE_JITTER_MS:?} }},");
            if bg_apps > 0 {
                for k in self.templates() {
                    let _ = writeln!(w, "    {{ op = \"drop_caches\", app = \"{}\", inodes = true }},", k.name());
                }
            }
            // The background's window, as the bench measures it sample by sample
            // (`bg_window_samples_mb_s`, whose median is its `bg_window_mb_s`): from the workers'
            // start after the drop, over the ramp, to the operation's end.
            let _ = writeln!(w, "    {{ op = \"phase_begin\", name = \"{}\" }},", crate::BG_WINDOW_PHASE);
            let _ = writeln!(w, "    {{ op = \"think\", ms = {:?} }},", ramp.max(100.0));
            let _ = writeln!(w, "    {{ op = \"drop_caches\", app = \"app\", inodes = true }},");
            self.operation_ops(w, host, true);
            let _ = writeln!(w, "  ] }},\n]");
        }

        // One background template per worker kind, in the order instances are dealt: `mixed`
        // alternates update, upload as the bench's workers do.
        for k in self.templates() {
            let n = k.name();
            let _ =
                writeln!(w, "\n[[file]]\npath = \"/bg/{n}{{i}}.dat\"\nsize = {}\nowner = \"{n}\"{cached}", self.bg_file_bytes);
            let _ = writeln!(w, "\n[[app]]\nname = \"{n}\"\nrole = \"bg\"");
            // Along a timeline the workers live as the bench's do: started at each sample's
            // window (after its drop) and killed at its end, absent from the `alone` samples
            // (`forefront_bench::runner::one_sample`; docs/twin.md, twin28).
            let lives: Vec<String> = slots
                .iter()
                .filter(|(_, s)| s.mode != ALONE_MODE)
                .map(|(_, s)| format!("[{:?}, {:?}]", s.window_ms / 1000.0, s.end_ms / 1000.0))
                .collect();
            if !lives.is_empty() {
                let _ = writeln!(w, "alive_s = [{}]", lives.join(", "));
            }
            let _ = writeln!(w, "[[app.thread]]\nname = \"{n}\"\nops = [");
            let _ = writeln!(w, "  {{ op = \"repeat\", times = 0, ops = [");
            let f = format!("/bg/{n}{{i}}.dat");
            match k {
                Worker::Upload => {
                    // Each chunk dropped after it is read, as the bench's uploaders do
                    // (`POSIX_FADV_DONTNEED` over it; only whole folios go, so on a kernel that
                    // caches the file in folios larger than a chunk nearly all of it stays:
                    // `phone.readahead_folio_kib`, twin25), and the whole file at the end of
                    // the pass (their `POSIX_FADV_DONTNEED` over the file at its end).
                    let _ = writeln!(
                        w,
                        "    {{ op = \"read\", path = \"{f}\", len = {}, chunk = {BG_CHUNK}, drop_behind = true }},",
                        self.bg_file_bytes
                    );
                    let _ = writeln!(w, "    {{ op = \"drop_caches\", app = \"{n}{{i}}\" }},");
                }
                Worker::SeqRead | Worker::SeqWrite => unreachable!("refused above"),
                Worker::Update | Worker::Copy => {
                    let step = UPDATE_FSYNC_EVERY.min(self.bg_file_bytes.max(BG_CHUNK));
                    let mut off = 0;
                    while off < self.bg_file_bytes {
                        let len = step.min(self.bg_file_bytes - off);
                        let _ = writeln!(
                            w,
                            "    {{ op = \"write\", path = \"{f}\", offset = {off}, len = {len}, chunk = {BG_CHUNK} }},"
                        );
                        if k == Worker::Update && len == step {
                            let _ = writeln!(w, "    {{ op = \"fdatasync\", path = \"{f}\" }},");
                        }
                        off += len;
                    }
                }
            }
            let _ = writeln!(w, "  ] }},\n]");
        }
        Ok(s)
    }

    /// The scenario's background templates, in the order instances are dealt (`mixed`
    /// alternates update, upload as the bench's workers do); none for the fio workloads, which
    /// the simulator does not express.
    fn templates(&self) -> Vec<Worker> {
        match self.bg {
            Bg::None | Bg::FioRead | Bg::FioWrite | Bg::FioRw => vec![],
            Bg::Mixed => vec![Worker::Update, Worker::Upload],
            b => vec![b.worker(0).expect("a worker")],
        }
    }

    /// The launch's ops (`forefront_bench::ops::launch`).
    /// The timeline's samples up to the `launches`-th measured one of `setup.mode`, each with
    /// whether it is measured (a sample of that mode, not a warm-up); none without a timeline
    /// or a mode.
    fn slots(&self, setup: &SimSetup) -> Result<Vec<(bool, BenchSample)>, String> {
        let Some(mode) = setup.mode.as_deref().filter(|_| !self.timeline.is_empty()) else { return Ok(vec![]) };
        let mut out = vec![];
        let mut measured = 0;
        for s in &self.timeline {
            let m = s.mode == mode && !s.warmup;
            let d = s.dropped_ms.unwrap_or(s.window_ms);
            if !(0.0 <= d && d <= s.window_ms && s.window_ms <= s.op_ms && s.op_ms <= s.end_ms) {
                return Err(format!(
                    "timeline: a {} sample's times are out of order (dropped {:?}, window {}, op {}, end {} ms)",
                    s.mode, s.dropped_ms, s.window_ms, s.op_ms, s.end_ms
                ));
            }
            out.push((m, s.clone()));
            measured += m as u32;
            if measured == setup.launches.max(1) {
                return Ok(out);
            }
        }
        if measured == 0 {
            return Err(format!("timeline: no sample of mode `{mode}`"));
        }
        Ok(out)
    }

    /// The foreground's program along the bench's timeline (`slots`), each event at its time
    /// in the bench's run (`sleep_until`; later where the simulated run fell behind): at each
    /// sample's drop, every file dropped (the bench's `echo 3`) and the operation's process
    /// started; at its operation's start, the operation. A measured sample has its window (from
    /// the workers' start) and its headline phase, and the random phase extra is taken from its
    /// ramp rather than added; another mode's is only its drop and its operation, so that the
    /// memory each drop frees is what the bench's freed. The workers live from each window to
    /// its sample's end, in every mode's sample but the `alone` ones (`alive_s`, written with
    /// the workers' templates).
    fn scheduled_ops(&self, w: &mut String, host: &Host, slots: &[(bool, BenchSample)]) {
        for (measured, s) in slots {
            let dropped = s.dropped_ms.unwrap_or(s.window_ms);
            let _ = writeln!(w, "  {{ op = \"sleep_until\", ms = {dropped:?} }},");
            for k in self.templates() {
                let _ = writeln!(w, "  {{ op = \"drop_caches\", app = \"{}\", inodes = true }},", k.name());
            }
            let _ = writeln!(w, "  {{ op = \"drop_caches\", app = \"app\", inodes = true }},");
            let _ = writeln!(w, "  {{ op = \"exec\" }},");
            if *measured {
                let _ = writeln!(w, "  {{ op = \"sleep_until\", ms = {:?} }},", s.window_ms);
                let _ = writeln!(w, "  {{ op = \"phase_begin\", name = \"{}\" }},", crate::BG_WINDOW_PHASE);
                let jitter = PHASE_JITTER_MS.min(s.op_ms - s.window_ms);
                let _ = writeln!(w, "  {{ op = \"sleep_until\", ms = {:?} }},", s.op_ms - jitter);
                let _ = writeln!(w, "  {{ op = \"think\", ms = 0.0, jitter_ms = {jitter:?} }},");
            } else {
                let _ = writeln!(w, "  {{ op = \"sleep_until\", ms = {:?} }},", s.op_ms);
            }
            self.operation_ops(w, host, *measured);
        }
    }

    /// One sample's operation, from the app's coming to the foreground to the shell's: a
    /// measured one inside its phase, and closing its background window (opened by the caller
    /// at the workers' start).
    fn operation_ops(&self, w: &mut String, host: &Host, measured: bool) {
        let fg = fg_name(self.fg);
        let _ = writeln!(w, "    {{ op = \"foreground\", app = \"app\" }},");
        if measured {
            let _ = writeln!(w, "    {{ op = \"phase_begin\", name = \"{fg}\" }},");
        }
        match self.fg {
            Fg::Launch => self.launch_ops(w, host.fg_compute_ms.unwrap_or(LAUNCH_COMPUTE_MS)),
            Fg::Switch => self.switch_ops(w, host.fg_compute_ms.unwrap_or(SWITCH_COMPUTE_MS)),
            Fg::Replay => unreachable!("`--fg replay` is refused at the top of `scenario_toml`"),
        }
        if measured {
            let _ = writeln!(w, "    {{ op = \"phase_end\", name = \"{fg}\" }},");
            let _ = writeln!(w, "    {{ op = \"phase_end\", name = \"{}\" }},", crate::BG_WINDOW_PHASE);
        }
        let _ = writeln!(w, "    {{ op = \"foreground\", app = \"shell\" }},");
    }

    fn launch_ops(&self, w: &mut String, compute_ms: f64) {
        let db = db_bytes(&self.app);
        for (name, size) in code_file_sizes(&self.app) {
            let _ = writeln!(w, "    {{ op = \"read\", path = \"/app/code/{name}\", len = {size}, chunk = {LAUNCH_READ_BUF} }},");
        }
        let _ = writeln!(
            w,
            "    {{ op = \"read_random\", path = \"/app/data/app.db\", span = {db}, count = {}, size = 4096 }},",
            db_page_reads(&self.app)
        );
        let _ = writeln!(w, "    {{ op = \"compute\", ms = {compute_ms:?} }},");
    }

    /// The switch's ops (`forefront_bench::ops::switch`; see the module doc).
    fn switch_ops(&self, w: &mut String, compute_ms: f64) {
        for (name, size) in [("state.bin", SWITCH_STATE_BYTES), ("photo.jpg", SWITCH_PHOTO_BYTES)] {
            let f = format!("/app/state/{name}");
            let _ = writeln!(w, "    {{ op = \"creat\", path = \"{f}\" }},");
            let _ = writeln!(w, "    {{ op = \"write\", path = \"{f}\", offset = 0, len = {size}, chunk = {size} }},");
            let _ = writeln!(w, "    {{ op = \"fsync\", path = \"{f}\" }},");
        }
        let db = db_bytes(&self.app);
        let wal = "/app/data/app.db-wal";
        let _ = writeln!(
            w,
            "    {{ op = \"read_random\", path = \"/app/data/app.db\", span = {db}, count = {SWITCH_OPEN_PAGE_READS}, size = 4096 }},"
        );
        let _ = writeln!(w, "    {{ op = \"creat\", path = \"{wal}\" }},");
        let frames = switch_tx_pages() * WAL_FRAME_BYTES;
        let _ = writeln!(w, "    {{ op = \"repeat\", times = {SWITCH_TRANSACTIONS}, ops = [");
        let _ = writeln!(w, "      {{ op = \"write\", path = \"{wal}\", len = {frames}, chunk = {WAL_FRAME_BYTES} }},");
        let _ = writeln!(w, "      {{ op = \"fsync\", path = \"{wal}\" }},");
        let _ = writeln!(w, "    ] }},");
        let _ = writeln!(w, "    {{ op = \"compute\", ms = {compute_ms:?} }},");
        // The checkpoint at close: the new pages go after the database's end (page 1 and the
        // leaves in place are a few pages more), then the database is synced and the WAL goes.
        let pages = switch_checkpoint_pages();
        let _ = writeln!(w, "    {{ op = \"write\", path = \"/app/data/app.db\", offset = 0, len = 4096, chunk = 4096 }},");
        let _ = writeln!(
            w,
            "    {{ op = \"write\", path = \"/app/data/app.db\", offset = {db}, len = {}, chunk = 4096 }},",
            (pages - 1) * 4096
        );
        let _ = writeln!(w, "    {{ op = \"fsync\", path = \"/app/data/app.db\" }},");
        let _ = writeln!(w, "    {{ op = \"unlink\", path = \"{wal}\" }},");
    }

    /// The scenario itself (parsed and checked like a scenario file).
    pub fn scenario(&self, device: &str, host: &Host, setup: &SimSetup) -> Result<crate::Scenario, String> {
        let text = self.scenario_toml(device, host, setup)?;
        crate::Scenario::parse("<bench workload>", &text).map_err(|e| e.to_string())
    }
}

fn fg_name(fg: Fg) -> &'static str {
    match fg {
        Fg::Launch => "launch",
        Fg::Switch => "switch",
        Fg::Replay => "replay",
    }
}

fn bg_name(bg: Bg) -> &'static str {
    match bg {
        Bg::Update => "update",
        Bg::Copy => "copy",
        Bg::Upload => "upload",
        Bg::Mixed => "mixed",
        Bg::None => "none",
        Bg::FioRead => "fio-read",
        Bg::FioWrite => "fio-write",
        Bg::FioRw => "fio-rw",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(bg: Bg) -> BenchWorkload {
        BenchWorkload {
            fg: Fg::Launch,
            bg,
            bg_procs: 2,
            bg_file_bytes: 64 << 20,
            ramp_ms: 1500,
            app: AppSpec::default(),
            timeline: vec![],
        }
    }

    #[test]
    fn each_sample_drops_the_workers_files_before_its_ramp_as_the_bench_does() {
        let setup = SimSetup { scheduler: "deadline".into(), background: true, launches: 3, mode: None };
        let ops = |bg| {
            let text = w(bg).scenario_toml("x", &Host::default(), &setup).unwrap();
            let fg = text.split("name = \"app\"").nth(1).expect("the app").split("[[app]]").next().unwrap().to_owned();
            fg
        };
        let mixed = ops(Bg::Mixed);
        let (update, upload, think) = (
            mixed.find(r#"op = "drop_caches", app = "update", inodes = true "#).expect("update's files dropped"),
            mixed.find(r#"op = "drop_caches", app = "upload", inodes = true "#).expect("upload's files dropped"),
            mixed.find(r#"op = "think", ms = 1500.0 "#).expect("the ramp"),
        );
        assert!(update < think && upload < think, "{mixed}");
        // `echo 3`: the app's inodes go too, so the launch reads its inode-table blocks.
        let app = mixed.find(r#"op = "drop_caches", app = "app", inodes = true "#).expect("the app's files and inodes dropped");
        assert!(think < app, "{mixed}");
        assert!(ops(Bg::Copy).contains(r#"op = "drop_caches", app = "copy", inodes = true "#));
        let none = SimSetup { background: false, ..setup.clone() };
        let alone = w(Bg::Update).scenario_toml("x", &Host::default(), &none).unwrap();
        assert!(!alone.contains(r#"app = "update" "#), "no workers, nothing of theirs to drop");
    }

    #[test]
    fn code_files_sum_to_the_app_size() {
        let sizes = code_file_sizes(&AppSpec::default());
        assert_eq!(sizes.len(), 32);
        let total: u64 = sizes.iter().map(|s| s.1).sum();
        assert!((total as f64 / (40u64 << 20) as f64 - 1.0).abs() < 0.01, "{total}");
        assert_eq!(sizes[0].0, "part000.so");
    }

    #[test]
    fn every_background_builds_a_valid_scenario() {
        let setup = SimSetup { scheduler: "deadline".into(), background: true, launches: 3, mode: None };
        for bg in [Bg::Update, Bg::Copy, Bg::Upload, Bg::Mixed, Bg::None] {
            let s = w(bg).scenario("galaxy-s6-ufs", &Host::default(), &setup).unwrap_or_else(|e| panic!("{bg:?}: {e}"));
            assert_eq!(s.bg_apps, if bg == Bg::None { 0 } else { 2 });
            assert_eq!(s.headline, "launch");
        }
        let text = w(Bg::Update).scenario_toml("x", &Host::default(), &setup).unwrap();
        // 64 MiB in 32 MiB steps: two writes, each followed by its fdatasync.
        assert_eq!(text.matches("op = \"fdatasync\"").count(), 2, "{text}");
        let mixed = w(Bg::Mixed).scenario("x", &Host::default(), &setup).unwrap();
        let names: Vec<_> = mixed.apps.iter().filter(|a| a.role == crate::Role::Bg).map(|a| a.threads[0].name.clone()).collect();
        assert_eq!(names, ["update", "upload"]);
        let alone = w(Bg::Update).scenario("x", &Host::default(), &SimSetup { background: false, ..setup.clone() }).unwrap();
        assert_eq!(alone.bg_apps, 0);
    }

    #[test]
    fn the_hosts_reclaim_reaches_the_scenario_with_the_fixtures_files_backed() {
        let setup = SimSetup { scheduler: "deadline".into(), background: true, launches: 2, mode: None };
        let stock = w(Bg::Update).scenario("x", &Host::default(), &setup).unwrap();
        assert_eq!(stock.phone.host_reclaim, None, "not measured: no host model");
        let h = HostReclaimFigures {
            interval_ms: 2300.0,
            pass_mib: 588.0,
            reserve_mib: 16.0,
            page_us: 15.0,
            read_page_us: Some(8.0),
            fragments_kib: vec![4.0, 8.0, 0.0, 96.0],
        };
        let s = w(Bg::Update).scenario("x", &Host { host_reclaim: Some(h), ..Host::default() }, &setup).unwrap();
        let r = s.phone.host_reclaim.expect("[phone.host_reclaim]");
        assert_eq!((r.interval_ms, r.pass_mib, r.reserve_mib, r.page_us, r.read_page_us), (2300.0, 588.0, 16.0, 15.0, Some(8.0)));
        assert_eq!(r.fragments_kib, vec![4.0, 8.0, 0.0, 96.0], "the free blocks below the reporting order (twin29)");
        // The reserve plus the two workers' files and the app's, which the fixture cached.
        let files = (2 * w(Bg::Update).bg_file_bytes + AppSpec::default().code_bytes + db_bytes(&AppSpec::default())) >> 20;
        assert_eq!(r.backed_mib, 16.0 + files as f64);
        // Each launch starts one ramp after its drop: the random extra comes before the drop.
        let text = w(Bg::Update).scenario_toml("x", &Host::default(), &setup).unwrap();
        let (jitter, drop) = (text.find("jitter_ms").unwrap(), text.find("op = \"drop_caches\", app = \"update\"").unwrap());
        assert!(jitter < drop, "{text}");
    }

    #[test]
    fn a_measured_copy_cost_reaches_the_scenario() {
        let setup = SimSetup { scheduler: "deadline".into(), background: true, launches: 1, mode: None };
        let stock = w(Bg::Copy).scenario("x", &Host::default(), &setup).unwrap();
        assert_eq!(stock.phone.costs, crate::Costs::default());
        let host = Host { copy_page_us: Some(0.42), ..Host::default() };
        let s = w(Bg::Copy).scenario("x", &host, &setup).unwrap();
        assert_eq!(s.phone.costs.copy_page_us, 0.42);
        assert_eq!(s.phone.costs.write_copy_page_us(), 0.42, "one figure: both directions");
        assert_eq!(s.phone.costs.alloc_page_us, crate::Costs::default().alloc_page_us);
        // The calibration's two directions, each to its side.
        let host = Host { copy_page_us: Some(0.38), copy_write_page_us: Some(0.53), ..Host::default() };
        let s = w(Bg::Copy).scenario("x", &host, &setup).unwrap();
        assert_eq!((s.phone.costs.copy_page_us, s.phone.costs.write_copy_page_us()), (0.38, 0.53));
        assert_eq!(s.phone.costs.alloc_page_us, crate::Costs::default().alloc_page_us, "not measured: the default");
        // A measured page allocation (twin21) replaces the assumed one, alone or with the copies.
        let host = Host { alloc_page_us: Some(0.21), ..Host::default() };
        let s = w(Bg::Update).scenario("x", &host, &setup).unwrap();
        assert_eq!((s.phone.costs.alloc_page_us, s.phone.costs.copy_page_us), (0.21, crate::Costs::default().copy_page_us));
        assert_eq!(s.phone.costs.writeback_page_us, crate::Costs::default().writeback_page_us, "not measured: the default");
        // A measured write-back cost per page (twin23) replaces the assumed one.
        let host = Host { writeback_page_us: Some(0.55), ..Host::default() };
        let s = w(Bg::Update).scenario("x", &host, &setup).unwrap();
        assert_eq!((s.phone.costs.writeback_page_us, s.phone.costs.alloc_page_us), (0.55, crate::Costs::default().alloc_page_us));
    }

    #[test]
    fn a_file_system_without_a_journal_reaches_the_scenario() {
        let setup = SimSetup { scheduler: "deadline".into(), background: true, launches: 1, mode: None };
        let journal = |fs_journal: Option<bool>| {
            let host = Host { fs_journal, ..Host::default() };
            w(Bg::Update).scenario("x", &host, &setup).unwrap().phone.fs.journal
        };
        assert!(journal(None), "unknown: the simulator's journaling ext4");
        assert!(journal(Some(true)));
        assert!(!journal(Some(false)));
    }

    #[test]
    fn a_measured_app_cpu_time_replaces_the_assumed_one() {
        let setup = SimSetup { scheduler: "deadline".into(), background: false, launches: 1, mode: None };
        let computes = |fg: Fg, host: &Host| -> Vec<f64> {
            let s = BenchWorkload { fg, ..w(Bg::None) }.scenario("x", host, &setup).unwrap();
            let app = s.apps.iter().find(|a| a.role == crate::Role::Fg).expect("the foreground app");
            let crate::Op::Repeat { ops, .. } = &app.threads[0].ops[0] else { panic!("{:?}", app.threads[0].ops) };
            ops.iter().filter_map(|o| if let crate::Op::Compute { ms } = o { Some(*ms) } else { None }).collect()
        };
        assert_eq!(computes(Fg::Launch, &Host::default()), [LAUNCH_COMPUTE_MS]);
        assert_eq!(computes(Fg::Switch, &Host::default()), [SWITCH_COMPUTE_MS]);
        let measured = Host { fg_compute_ms: Some(3.25), ..Host::default() };
        assert_eq!(computes(Fg::Launch, &measured), [3.25]);
        assert_eq!(computes(Fg::Switch, &measured), [3.25]);
    }

    #[test]
    fn switch_writes_its_files_and_its_wal() {
        let setup = SimSetup { scheduler: "deadline".into(), background: true, launches: 2, mode: None };
        let sw = BenchWorkload { fg: Fg::Switch, ..w(Bg::Update) };
        let s = sw.scenario("x", &Host::default(), &setup).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.headline, "switch");
        let text = sw.scenario_toml("x", &Host::default(), &setup).unwrap();
        assert!(!text.contains("op = \"read\", path = \"/app/code/"), "no launch reads in a switch");
        // Two fsync'ed files, one fsync per transaction, the checkpoint's database fsync.
        assert_eq!(text.matches("op = \"fsync\"").count(), 2 + 1 + 1, "{text}");
        assert!(text.contains(&format!("times = {SWITCH_TRANSACTIONS}")), "{text}");
        // A 4 KiB row: leaf, one overflow page, index leaf, page 1.
        assert_eq!(switch_tx_pages(), 4);
        assert_eq!(switch_checkpoint_pages(), 2 + 20 + 3);
    }

    #[test]
    fn each_operation_waits_a_random_phase_then_the_ramp_after_its_drop() {
        let setup = SimSetup { scheduler: "deadline".into(), background: true, launches: 3, mode: None };
        let s = w(Bg::Update).scenario("x", &Host::default(), &setup).unwrap();
        let app = s.apps.iter().find(|a| a.role == crate::Role::Fg).expect("the foreground app");
        let crate::Op::Repeat { ops, .. } = &app.threads[0].ops[0] else { panic!("{:?}", app.threads[0].ops) };
        let waits: Vec<_> = ops.iter().filter(|o| matches!(o, crate::Op::Think { .. } | crate::Op::Sleep { .. })).collect();
        assert_eq!(waits.len(), 2, "{ops:?}");
        // The random phase, then the workers' files dropped, then the ramp exactly (twin24).
        assert!(
            matches!(waits[0], crate::Op::Think { ms, jitter_ms } if *ms == 0.0 && *jitter_ms == PHASE_JITTER_MS),
            "{:?}",
            waits[0]
        );
        assert!(matches!(waits[1], crate::Op::Think { ms, jitter_ms } if *ms == 1500.0 && *jitter_ms == 0.0), "{:?}", waits[1]);
    }

    /// A bench run's order: a warm-up round, then rounds rotating the modes (times in ms).
    fn timeline() -> Vec<BenchSample> {
        let at = |mode: &str, warmup: bool, d: f64, op: f64, end: f64| BenchSample {
            mode: mode.into(),
            warmup,
            dropped_ms: Some(d),
            window_ms: d + 10.0,
            op_ms: op,
            end_ms: end,
        };
        vec![
            at("alone", true, 400.0, 520.0, 590.0),
            at("baseline", true, 800.0, 2_320.0, 3_100.0),
            at("alone", false, 3_300.0, 3_420.0, 3_490.0),
            at("baseline", false, 3_700.0, 5_220.0, 6_000.0),
            at("baseline", false, 6_200.0, 7_720.0, 8_500.0),
            at("alone", false, 8_700.0, 8_820.0, 8_890.0),
            at("baseline", false, 9_100.0, 10_620.0, 11_400.0),
        ]
    }

    #[test]
    fn a_mode_follows_the_bench_runs_timeline_and_measures_its_own_samples() {
        let tw = BenchWorkload { timeline: timeline(), ..w(Bg::Update) };
        let setup = SimSetup { scheduler: "deadline".into(), background: true, launches: 2, mode: Some("baseline".into()) };
        let text = tw.scenario_toml("x", &Host::default(), &setup).unwrap();
        let s = tw.scenario("x", &Host::default(), &setup).unwrap_or_else(|e| panic!("{e}"));
        let app = s.apps.iter().find(|a| a.role == crate::Role::Fg).expect("the foreground app");
        let ops = &app.threads[0].ops;
        // Up to the second measured baseline sample: five samples, two of them measured.
        let untils: Vec<f64> =
            ops.iter().filter_map(|o| if let crate::Op::SleepUntil { ms } = o { Some(*ms) } else { None }).collect();
        assert_eq!(untils.iter().filter(|&&t| [400.0, 800.0, 3_300.0, 3_700.0, 6_200.0].contains(&t)).count(), 5, "{untils:?}");
        assert!(!untils.contains(&8_700.0), "nothing after the last measured sample: {untils:?}");
        // Each measured one: its window from the workers' start, the random extra taken from its ramp.
        for (d, op) in [(3_700.0, 5_220.0), (6_200.0, 7_720.0)] {
            assert!(untils.contains(&(d + 10.0)) && untils.contains(&(op - PHASE_JITTER_MS)), "{untils:?}");
        }
        let count = |p: &str| text.matches(p).count();
        assert_eq!(count(r#"op = "phase_begin", name = "launch""#), 2, "{text}");
        assert_eq!(count(&format!(r#"op = "phase_begin", name = "{}""#, crate::BG_WINDOW_PHASE)), 2);
        // Every sample drops every file and launches the app (the other modes' unmeasured).
        assert_eq!(count(r#"op = "drop_caches", app = "app""#), 5);
        assert_eq!(count(r#"op = "drop_caches", app = "update""#), 5);
        assert_eq!(count(r#"op = "foreground", app = "app""#), 5);
        assert_eq!(count("op = \"read\", path = \"/app/code/part000.so\""), 5, "{text}");
        assert!(!text.contains("op = \"repeat\", times = 2,"), "no steady loop beside the timeline");
        // The workers live from each window to its sample's end, warm-up included, never in an
        // `alone` sample.
        let bg = s.apps.iter().find(|a| a.name == "update").expect("the workers");
        assert_eq!(bg.alive_s, vec![[0.81, 3.1], [3.71, 6.0], [6.21, 8.5]], "{text}");
    }

    #[test]
    fn a_timeline_without_the_mode_or_out_of_order_is_refused() {
        let setup = |m: &str| SimSetup { scheduler: "deadline".into(), background: true, launches: 2, mode: Some(m.into()) };
        let tw = BenchWorkload { timeline: timeline(), ..w(Bg::Update) };
        let e = tw.scenario_toml("x", &Host::default(), &setup("agent")).unwrap_err();
        assert!(e.contains("no sample of mode `agent`"), "{e}");
        let mut t = timeline();
        t[3].op_ms = 3_000.0;
        let e =
            BenchWorkload { timeline: t, ..w(Bg::Update) }.scenario_toml("x", &Host::default(), &setup("baseline")).unwrap_err();
        assert!(e.contains("out of order") && e.contains("op 3000"), "{e}");
        // Without a background the timeline does not matter: the steady loop.
        let alone = SimSetup { background: false, ..setup("alone") };
        assert!(tw.scenario_toml("x", &Host::default(), &alone).unwrap().contains("op = \"repeat\", times = 2,"));
    }

    #[test]
    fn named_workloads_are_the_bench_defaults() {
        let w = BenchWorkload::named("switch/mixed").unwrap();
        assert_eq!((w.fg, w.bg, w.bg_procs, w.bg_file_bytes, w.ramp_ms), (Fg::Switch, Bg::Mixed, 2, 1 << 30, 1500));
        let s = BenchWorkload::named_scenario("launch/update", "galaxy-s6-ufs").unwrap();
        assert_eq!((s.headline.as_str(), s.bg_apps, s.device.as_str()), ("launch", 2, "galaxy-s6-ufs"));
        for (bad, culprit) in [("launch", "FG/BG"), ("boot/update", "`boot`"), ("launch/download", "`download`")] {
            let e = BenchWorkload::named(bad).unwrap_err();
            assert!(e.contains(culprit), "{bad}: {e}");
        }
    }

    #[test]
    fn new_variants_are_refused_as_not_yet_in_the_simulator() {
        let setup = SimSetup { scheduler: "bfq".into(), background: true, launches: 1, mode: None };
        let e = BenchWorkload { fg: Fg::Replay, ..w(Bg::Update) }.scenario_toml("x", &Host::default(), &setup).unwrap_err();
        assert!(e.starts_with("not yet in the simulator: `--fg replay`"), "{e}");
        for bg in [Bg::FioRead, Bg::FioWrite, Bg::FioRw] {
            let e = w(bg).scenario_toml("x", &Host::default(), &setup).unwrap_err();
            assert!(e.starts_with(&format!("not yet in the simulator: `--bg {}`", bg_name(bg))), "{e}");
        }
    }

    #[test]
    fn fio_backgrounds_count_and_deal_workers_as_the_s_suite() {
        assert_eq!(Bg::FioRw.workers(5), 10);
        assert_eq!((Bg::FioRead.workers(5), Bg::FioWrite.workers(5), Bg::None.workers(5), Bg::Mixed.workers(4)), (5, 5, 0, 4));
        assert_eq!((Bg::FioRw.worker(0), Bg::FioRw.worker(1)), (Some(Worker::SeqRead), Some(Worker::SeqWrite)));
        assert!(Bg::FioWrite.sync_loop() && Bg::FioRw.sync_loop() && !Bg::FioRead.sync_loop() && !Bg::Update.sync_loop());
    }

    #[test]
    fn mixed_deals_update_to_even_workers() {
        assert_eq!(Bg::Mixed.worker(0), Some(Worker::Update));
        assert_eq!(Bg::Mixed.worker(1), Some(Worker::Upload));
        assert_eq!(Bg::None.worker(0), None);
    }
}
