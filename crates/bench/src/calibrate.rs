//! `forefront bench calibrate`: measure this machine's disk through the kernel the way the
//! simulator's device files describe one, and write a device file it loads.
//!
//! The fixture is the benchmark's: a work directory on the file system under test (or an ext4
//! image on a loop device, [`crate::loopdev`]) holding one fully written scratch file; every
//! access is `O_DIRECT` on that file, so the page cache is out of the path and each call is one
//! or more commands of the disk behind it. Each repetition measures, in this order:
//!
//! | step | what | gives |
//! |---|---|---|
//! | `read-seq` | 4 KiB and 1 MiB sequential reads, queue depth 1 | `read_seq_mb_s`, `cmd_overhead_us` |
//! | `read-rand` | 4 KiB random reads, depth 1 | `read_rand_iops`, `service_cv`, latency percentiles |
//! | `read-depth` | 4 KiB random reads from `depth` threads; 1 MiB random reads from up to 8 | `channels`; `read_depth_mb_s` (the device's shared transfer stage) |
//! | `write-seq` | 4 KiB and 1 MiB sequential writes, depth 1 | `write_seq_mb_s` |
//! | `write-rand` | 4 KiB random writes, depth 1 and at depth; 1 MiB random writes from up to 8 threads | `write_rand_iops`, percentiles; `write_depth_mb_s` |
//! | `flush` | `fdatasync` after a 4 KiB write (a cache flush, no journal commit: the file is allocated) | `flush_overhead_us` |
//! | `fua` | 4 KiB `O_DSYNC` writes (FUA, or write + flush where the disk has no FUA) | recorded only |
//! | `discard` | punch a hole in the file, then `FITRIM` exactly its former blocks | `discard_us_per_mib` |
//! | `copy` | buffered 1 MiB `write()`s over a 32 MiB file's pages just dropped from the page cache, then over them cached, each pass `fdatasync`ed, then 128 KiB `read()`s of them | `copy_write_page_us`, `copy_read_page_us` (the simulator's `[phone.costs]` `copy_write_page_us` and `copy_page_us`, for `bench predict`) and their mean `copy_page_us`; `alloc_page_us` (`[phone.costs]`'s: a cold page's write beyond the copy, `cold_write_page_us` − `copy_write_page_us`); `writeback_page_us` (`[phone.costs]`'s: the `fdatasync`s' CPU time per page written, `fdatasync_32m_cpu_us`, less the simulator's cost per request); `writeback_32m_mb_s` (their rate: recorded) |
//! | `folio` | a 64 MiB file read sequentially in 1 MiB `read()`s (cold), then `POSIX_FADV_DONTNEED` over each aligned range of one size, for each power of two from 4 KiB to 4 MiB, the pages left cached counted (`mincore`) | `dontneed_folio_kib` (the smallest range size that drops at least nine tenths of the file: the folio the file system caches a sequential read in, `[phone] readahead_folio_kib` for `bench predict`: docs/twin.md, twin25); `dontneed_1m_kept_pct` (the share the bench's uploaders' 1 MiB drops leave cached) |
//! | `large` | reads and writes of `max_sectors_kb` (the largest request the kernel sends: the bench's read-ahead and write-back requests) from [`BW_DEPTH`] threads, at random offsets and as one sequential stream per thread, from huge-page buffers so that each reaches the device whole | `read_max_depth_mb_s`, `write_max_depth_mb_s` (random); `read_max_seq_depth_mb_s`, `write_max_seq_depth_mb_s` (streams): the device's `read_depth_mb_s`/`write_depth_mb_s`; `read_max_request_kib`, `write_max_request_kib`: the mean request the device received |
//! | `under-load` | 4 KiB random reads at depth 1 while [`LOAD_THREADS`] threads read (then write) `max_sectors_kb` requests back to back | `read_4k_under_{read,write}_load_{p50,p90,mean}_us` and the load's `{read,write}_load_mb_s`: how the host orders a small read behind large transfers already submitted (docs/twin.md) |
//! | `host` | only on a VM whose balloon reports free pages: a 768 MiB file (at most half the file system's free space) written, dropped and rewritten at once (recycled memory), dropped again and rewritten once reporting has settled, each 1 MiB `write()` timed; the kernel's reporting counters followed meanwhile where it has them; then the same for cold reads (dropped and read at once, dropped and read once reporting has settled again, each 1 MiB `read()`'s CPU time); `/proc/buddyinfo` just after the rewrite's drop | `host_reclaim_page_us`, `host_reclaim_read_page_us` (twin28), `host_free_order0_kib` … (the free blocks below `page_reporting_order`, each order's: twin29), `host_reclaim_reserve_mib`, `host_reclaim_pass_mib`, `host_reclaim_interval_ms` (the simulator's `[phone.host_reclaim]`, for `bench predict`: docs/twin.md, twin24), `host_recycled_write_1m_us`, `host_recycled_read_1m_cpu_us` |
//!
//! The model's cost formulas ([`forefront_model::flash`]) turn the timings into its fields:
//! a sequential read of `b` bytes costs `overhead + b / read_seq`, so the 4 KiB and 1 MiB
//! sequential medians give `read_seq` (their difference) and `overhead` (what the 4 KiB read
//! costs beyond its transfer); a random 4 KiB read costs `overhead + 1 / read_rand_iops`; with
//! `channels` commands served at once, the rate at depth is `channels / (overhead + access)`,
//! so `channels` = the rate at depth × the median latency at depth 1. Writes the same way.
//! The channels overlap latency, not bandwidth: the 1 MiB reads and writes from 8 threads give
//! the aggregate rate of large transfers at depth (`read_1m_depth_mb_s`, `write_1m_depth_mb_s`),
//! written as the device's `read_depth_mb_s`/`write_depth_mb_s`, the one transfer stage its
//! channels share ([`forefront_model::flash`]). The bench's own requests are larger (its
//! read-ahead and write-back are cut at `max_sectors_kb`, 4 MiB here, and stream through their
//! files), so the stage's rates are the `large` step's sequential streams at that size (on this
//! VM's disk the same as at random offsets within their spread, docs/twin.md); the 1 MiB and
//! random figures stay in `[provenance.fields]`. Requests of that size need buffers in huge
//! pages ([`Aligned`]): from 4 KiB pages the block layer cut each `O_DIRECT` 4 MiB call into
//! 1016 KiB requests (`max_segments` 254), which this VM's host moved at 0.55–0.75 of the rate
//! it moves the page cache's 4 MiB requests at (docs/twin.md, twin20); `*_max_request_kib`
//! shows what arrived. The
//! `under-load` step measures what the stage predicts: a small read that arrives behind large
//! transfers waits for them when the host serves its queue in arrival order, and does not when
//! it shares its bandwidth among the commands in service.
//! `queue_depth`, `capacity_gib` and `rotational` (`queue/rotational`, which BFQ and CFQ read:
//! the simulator passes it to them, not to the device model) are read from sysfs. The device
//! file's `[provenance]` table holds every figure's median and range over the repetitions and
//! how it was obtained (`measured`, `derived`, `assumed`), with the host, kernel and date.
//!
//! Simplifications (said again in the file): no write buffer (`write_buffer_kib = 0`: a
//! write's measured completion time is its cost, whatever cache the host keeps behind it);
//! `starvation_ms` is assumed at 1 µs, so the device serves commands in arrival order (a disk
//! behind virtio or NVMe does not put reads before writes the way a phone's eMMC does).

use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::Instant;

use forefront_model::flash::{DeviceProvenance, FlashKind, FlashParams, Measured};
use forefront_sysfs::{block, procfs};

use crate::fixture::Pattern;
use crate::runner::BenchError;
use crate::stats::quantile;

const KIB4: usize = 4096;
const MIB: usize = 1 << 20;

/// What to measure and how much.
#[derive(Clone, Debug)]
pub struct CalPlan {
    /// Parent of the work directory (created inside, removed afterwards).
    pub dir: PathBuf,
    /// Size of the scratch file (the span of the random accesses).
    pub file_bytes: u64,
    /// Repetitions of every measurement (the spread is their range).
    pub reps: u32,
    /// Operations per random-access measurement at depth 1 (four times as many at depth).
    pub ops: usize,
    /// Threads of the measurements at depth; `None`: the device's queue depth from sysfs, at
    /// most [`MAX_DEPTH`].
    pub depth: Option<usize>,
    /// The device file's `name`.
    pub name: Option<String>,
    /// The I/O scheduler to measure under (set for the calibration, the original put back
    /// afterwards, also on an error or interrupt); `None`: the one the disk has.
    pub scheduler: Option<String>,
}

/// Threads at most for the measurements at depth (the VM has few cores; more threads measure
/// the scheduler, not the disk).
pub const MAX_DEPTH: usize = 32;

/// The steps of one repetition, in order (for a progress bar).
pub const STEPS: [&str; 13] = [
    "read-seq",
    "read-rand",
    "read-depth",
    "write-seq",
    "write-rand",
    "flush",
    "fua",
    "discard",
    "copy",
    "folio",
    "large",
    "under-load",
    "host",
];

pub enum CalProgress<'a> {
    Setup(&'a str),
    Start { total: usize },
    Step { rep: u32, step: &'static str },
}

/// A calibration: the device file's content, and what it measured.
#[derive(Clone, Debug)]
pub struct Calibration {
    pub device: FlashParams,
    /// The block device and its scheduler (`vda (mq-deadline)`).
    pub target: String,
}

impl Calibration {
    /// The device file: a comment header, then the TOML the simulator loads.
    pub fn to_toml(&self) -> String {
        let p = self.device.provenance.as_ref().expect("a calibration has provenance");
        let body = toml::to_string(&self.device).expect("a device serialises");
        format!(
            "# Measured by `{}` on {} (kernel {}), {}: {}.\n\
             # Every figure is the median of {} repetitions; [provenance.fields] gives each one's range\n\
             # and how it was obtained (crates/bench/src/calibrate.rs). Not measured: the write buffer\n\
             # (0: a write's completion time is its cost) and starvation_ms (1 us: arrival order).\n{body}",
            p.tool, p.host, p.kernel, p.date, p.target, p.reps
        )
    }
}

/// One repetition's figures by name (the model's fields and the extra percentiles).
type Figures = Vec<(&'static str, f64)>;

struct Scratch {
    file: File,
    path: PathBuf,
    len: u64,
}

/// A page-aligned buffer (O_DIRECT needs the memory aligned as well as the offsets).
///
/// A buffer of 2 MiB or more is mapped on its own, 2 MiB-aligned, and asks for transparent
/// huge pages (`madvise(MADV_HUGEPAGE)`, honoured when `transparent_hugepage/enabled` is
/// `always` or `madvise`): the block layer cuts an `O_DIRECT` request's memory into segments
/// at page boundaries that are not physically contiguous, and with 4 KiB pages a device's
/// `max_segments` (254 on virtio-blk) caps the request at 1016 KiB whatever `max_sectors_kb`
/// says, while the page cache's read-ahead and write-back (large folios) do reach
/// `max_sectors_kb` (docs/twin.md, twin20). The `large` step records the request size the
/// device actually received (`*_max_request_kib`).
struct Aligned {
    mem: Mem,
    off: usize,
    len: usize,
}

enum Mem {
    Heap(Vec<u8>),
    /// An anonymous mapping of `len` bytes at `base` (unmapped on drop).
    Map {
        base: *mut u8,
        len: usize,
    },
}

const HUGE: usize = 2 * MIB;

impl Aligned {
    fn new(len: usize, seed: u64) -> Aligned {
        let (mem, off) = if len >= HUGE { Self::huge(len).unwrap_or_else(|| Self::heap(len)) } else { Self::heap(len) };
        let mut a = Aligned { mem, off, len };
        Pattern::new(seed).fill(a.get(len));
        a
    }

    fn heap(len: usize) -> (Mem, usize) {
        let buf = vec![0u8; len + KIB4];
        let off = buf.as_ptr().align_offset(KIB4);
        (Mem::Heap(buf), off)
    }

    /// A 2 MiB-aligned anonymous mapping with the huge-page advice (before any page is
    /// touched, so the first touch faults in huge pages); `None` if the mapping fails.
    fn huge(len: usize) -> Option<(Mem, usize)> {
        let map_len = len.div_ceil(HUGE) * HUGE + HUGE;
        // SAFETY: a fresh private anonymous mapping; nothing else refers to it.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return None;
        }
        let base = base.cast::<u8>();
        let off = base.align_offset(HUGE);
        // SAFETY: the range lies inside the mapping made above. The advice is a hint: without
        // huge pages the buffer still works, with smaller requests (recorded by the `large` step).
        unsafe { libc::madvise(base.add(off).cast(), map_len - off, libc::MADV_HUGEPAGE) };
        Some((Mem::Map { base, len: map_len }, off))
    }

    fn get(&mut self, n: usize) -> &mut [u8] {
        assert!(n <= self.len);
        match &mut self.mem {
            Mem::Heap(buf) => &mut buf[self.off..self.off + n],
            // SAFETY: `off + n <= off + len`, inside the mapping, which this value owns alone.
            Mem::Map { base, .. } => unsafe { std::slice::from_raw_parts_mut(base.add(self.off), n) },
        }
    }
}

impl Drop for Aligned {
    fn drop(&mut self) {
        if let Mem::Map { base, len } = self.mem {
            // SAFETY: the mapping made in `huge`, unmapped once.
            unsafe { libc::munmap(base.cast(), len) };
        }
    }
}

/// xorshift64*: the random offsets (deterministic per repetition and thread).
struct Offsets(u64);
impl Offsets {
    fn next(&mut self, span: u64, align: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % (span / align)) * align
    }
}

fn io<'a>(path: &'a Path, what: &str) -> impl Fn(std::io::Error) -> BenchError + 'a {
    let what = what.to_owned();
    move |e| BenchError::Step(format!("{}: {what}: {e}", path.display()))
}

fn check_interrupt() -> Result<(), BenchError> {
    if crate::interrupt::requested() {
        Err(BenchError::Interrupted)
    } else {
        Ok(())
    }
}

fn us(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e6
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    quantile(&v, 0.5)
}

/// The coefficient of variation of a log-normal with this median and 90th percentile
/// (`p90 / p50 = exp(1.2816 σ)`), at most 3 (the model's bound).
fn lognormal_cv(p50: f64, p90: f64) -> f64 {
    let sigma = (p90 / p50).max(1.0).ln() / 1.2816;
    ((sigma * sigma).exp() - 1.0).sqrt().min(3.0)
}

fn percentiles(v: &mut [f64]) -> (f64, f64, f64) {
    v.sort_by(|a, b| a.total_cmp(b));
    (quantile(v, 0.5), quantile(v, 0.9), quantile(v, 0.99))
}

impl Scratch {
    /// Timed `O_DIRECT` reads or writes of `size` bytes at the offsets `offs` (depth 1).
    fn timed(&self, write: bool, size: usize, offs: &[u64], buf: &mut Aligned) -> Result<Vec<f64>, BenchError> {
        let mut lat = Vec::with_capacity(offs.len());
        for (i, &o) in offs.iter().enumerate() {
            if i % 64 == 0 {
                check_interrupt()?;
            }
            let b = buf.get(size);
            let t = Instant::now();
            if write {
                self.file.write_all_at(b, o).map_err(io(&self.path, "O_DIRECT write"))?;
            } else {
                self.file.read_exact_at(b, o).map_err(io(&self.path, "O_DIRECT read"))?;
            }
            lat.push(us(t));
        }
        Ok(lat)
    }

    fn sequential(&self, size: usize, count: usize, start: u64) -> Vec<u64> {
        let start = start.min(self.len - (size * count) as u64) / KIB4 as u64 * KIB4 as u64;
        (0..count as u64).map(|i| start + i * size as u64).collect()
    }

    fn random(&self, count: usize, seed: u64) -> Vec<u64> {
        self.random_sized(KIB4, count, seed)
    }

    fn random_sized(&self, size: usize, count: usize, seed: u64) -> Vec<u64> {
        let mut r = Offsets(seed | 1);
        (0..count).map(|_| r.next(self.len, size as u64)).collect()
    }

    /// 4 KiB random accesses from `depth` threads at once: (operations per second, latencies).
    fn at_depth(&self, write: bool, depth: usize, total: usize, seed: u64) -> Result<(f64, Vec<f64>), BenchError> {
        self.sized_at_depth(write, KIB4, depth, total, seed)
    }

    /// `size`-byte random accesses (aligned to `size`) from `depth` threads at once.
    fn sized_at_depth(
        &self,
        write: bool,
        size: usize,
        depth: usize,
        total: usize,
        seed: u64,
    ) -> Result<(f64, Vec<f64>), BenchError> {
        let per = total.div_ceil(depth);
        let (wall, lat) = self
            .threads_timed(write, size, depth, seed, |k| self.random_sized(size, per, seed.wrapping_mul(31) + k as u64 * 7919))?;
        Ok((lat.len() as f64 / wall, lat))
    }

    /// `depth` threads at once, thread `k` timing `size`-byte accesses at `offsets(k)`: the wall
    /// time (s) and every access's latency (µs).
    fn threads_timed(
        &self,
        write: bool,
        size: usize,
        depth: usize,
        seed: u64,
        offsets: impl Fn(usize) -> Vec<u64> + Sync,
    ) -> Result<(f64, Vec<f64>), BenchError> {
        let offsets = &offsets;
        let t0 = Instant::now();
        let results: Vec<Result<Vec<f64>, BenchError>> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..depth)
                .map(|k| {
                    s.spawn(move || {
                        let mut buf = Aligned::new(size, seed + k as u64);
                        self.timed(write, size, &offsets(k), &mut buf)
                    })
                })
                .collect();
            hs.into_iter()
                .map(|h| h.join().unwrap_or_else(|_| Err(BenchError::Step("a calibration thread panicked".into()))))
                .collect()
        });
        let wall = t0.elapsed().as_secs_f64();
        let mut lat = vec![];
        for r in results {
            lat.extend(r?);
        }
        Ok((wall, lat))
    }

    /// `depth` sequential streams of `size`-byte accesses, one thread each in its own region of
    /// the file (`per` accesses, wrapping within the region): MB/s over all of them.
    fn streams_at_depth(&self, write: bool, size: usize, depth: usize, per: usize, seed: u64) -> Result<f64, BenchError> {
        let region = (self.len / depth as u64) / size as u64 * size as u64;
        if region < size as u64 {
            return Err(BenchError::Step(format!("{}: too small for {depth} streams of {size} bytes", self.path.display())));
        }
        let (wall, lat) = self.threads_timed(write, size, depth, seed, |k| {
            let base = k as u64 * region;
            (0..per as u64).map(|i| base + (i * size as u64) % region).collect()
        })?;
        Ok((lat.len() * size) as f64 / wall / 1e6)
    }

    fn fdatasync(&self) -> Result<(), BenchError> {
        self.file.sync_data().map_err(io(&self.path, "fdatasync"))
    }
}

/// `struct fstrim_range` and `FITRIM` (`_IOWR('X', 121, struct fstrim_range)`, linux/fs.h).
#[repr(C)]
struct FstrimRange {
    start: u64,
    len: u64,
    minlen: u64,
}
const FITRIM: libc::c_ulong = 0xC018_5879;

/// `struct fiemap` with room for [`FIEMAP_EXTENTS`] extents, and `FS_IOC_FIEMAP`
/// (`_IOWR('f', 11, struct fiemap)`, linux/fs.h, linux/fiemap.h).
#[repr(C)]
struct Fiemap {
    start: u64,
    length: u64,
    flags: u32,
    mapped_extents: u32,
    extent_count: u32,
    reserved: u32,
    extents: [FiemapExtent; FIEMAP_EXTENTS],
}
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct FiemapExtent {
    logical: u64,
    physical: u64,
    length: u64,
    reserved64: [u64; 2],
    flags: u32,
    reserved: [u32; 3],
}
const FIEMAP_EXTENTS: usize = 64;
const FS_IOC_FIEMAP: libc::c_ulong = 0xC020_660B;
const FIEMAP_FLAG_SYNC: u32 = 1;

/// The physical byte ranges (on the file system's device) of `len` bytes of `file` at `off`.
fn physical_ranges(s: &Scratch, off: u64, len: u64) -> Result<Vec<(u64, u64)>, BenchError> {
    let mut m = Fiemap {
        start: off,
        length: len,
        flags: FIEMAP_FLAG_SYNC,
        mapped_extents: 0,
        extent_count: FIEMAP_EXTENTS as u32,
        reserved: 0,
        extents: [FiemapExtent::default(); FIEMAP_EXTENTS],
    };
    // SAFETY: FS_IOC_FIEMAP reads and writes a `struct fiemap` followed by `extent_count`
    // extents, which is exactly `Fiemap`'s layout.
    let r = unsafe { libc::ioctl(s.file.as_raw_fd(), FS_IOC_FIEMAP as _, &mut m as *mut Fiemap) };
    if r != 0 {
        return Err(io(&s.path, "FIEMAP")(std::io::Error::last_os_error()));
    }
    let mut out = vec![];
    for e in &m.extents[..(m.mapped_extents as usize).min(FIEMAP_EXTENTS)] {
        // Clip each extent to the asked range.
        let lo = e.logical.max(off);
        let hi = (e.logical + e.length).min(off + len);
        if hi > lo {
            out.push((e.physical + (lo - e.logical), hi - lo));
        }
    }
    Ok(out)
}

/// Discard cost: punch `len` bytes out of the file at `off` (freeing its blocks), then `FITRIM`
/// exactly the blocks it had — the file system sends the device one discard per free extent
/// there. Returns (µs, bytes trimmed), or `None` where the file system or device cannot trim.
/// The hole is written again afterwards, so the file stays fully allocated.
fn discard_once(s: &Scratch, fs_root: &File, off: u64, len: u64, buf: &mut Aligned) -> Result<Option<(f64, u64)>, BenchError> {
    let ranges = physical_ranges(s, off, len)?;
    // SAFETY: fallocate on an open fd with plain integers.
    let r = unsafe {
        libc::fallocate(
            s.file.as_raw_fd(),
            libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
            off as libc::off_t,
            len as libc::off_t,
        )
    };
    if r != 0 {
        return Err(io(&s.path, "punch hole")(std::io::Error::last_os_error()));
    }
    s.fdatasync()?;
    // The freed blocks become free space when the journal commit that freed them is done.
    // SAFETY: syncfs on an open fd.
    unsafe { libc::syncfs(fs_root.as_raw_fd()) };
    let mut total_us = 0.0;
    let mut trimmed = 0u64;
    let mut unsupported = false;
    for (start, l) in ranges {
        let mut range = FstrimRange { start, len: l, minlen: 0 };
        let t = Instant::now();
        // SAFETY: FITRIM reads and writes one `struct fstrim_range`.
        let r = unsafe { libc::ioctl(fs_root.as_raw_fd(), FITRIM as _, &mut range as *mut FstrimRange) };
        total_us += us(t);
        if r != 0 {
            let e = std::io::Error::last_os_error();
            if matches!(e.raw_os_error(), Some(libc::EOPNOTSUPP) | Some(libc::ENOTTY)) {
                unsupported = true;
                break;
            }
            return Err(io(&s.path, "FITRIM")(e));
        }
        trimmed += range.len;
    }
    // Refill the hole (fully written again, as the fixture promises).
    let mut o = off;
    while o < off + len {
        let n = ((off + len - o) as usize).min(MIB);
        s.file.write_all_at(buf.get(n), o).map_err(io(&s.path, "refill"))?;
        o += n as u64;
    }
    s.fdatasync()?;
    Ok((!unsupported && trimmed > 0).then_some((total_us, trimmed)))
}

/// Threads, and 1 MiB accesses per thread, of the large-transfer measurements at depth.
pub const BW_DEPTH: usize = 8;
const BW_OPS: usize = 16;

/// Threads of the large-transfer load under which the small reads' latency is measured: the
/// bench's two background workers (`forefront_workload::bench`, `bg_procs` = 2).
pub const LOAD_THREADS: usize = 2;

/// The largest request the calibration sends at once (`max_sectors_kb` beyond it is clipped):
/// 16 MiB, a buffer per thread.
const MAX_REQUEST: usize = 16 * MIB;

/// 4 KiB random `O_DIRECT` reads at depth 1 (`samples` of them) while `LOAD_THREADS` threads
/// issue `size`-byte random reads (`write`: writes) back to back, one each in flight; the load
/// starts first and stops when the last small read has returned. Returns the load's MB/s over
/// the measurement and the small reads' latencies (µs).
fn latency_under_load(s: &Scratch, write: bool, size: usize, samples: usize, seed: u64) -> Result<(f64, Vec<f64>), BenchError> {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    let stop = AtomicBool::new(false);
    let moved = AtomicU64::new(0);
    let started = AtomicU64::new(0);
    let (stop, moved, started) = (&stop, &moved, &started);
    std::thread::scope(|sc| {
        let load: Vec<_> = (0..LOAD_THREADS)
            .map(|k| {
                sc.spawn(move || -> Result<(), BenchError> {
                    let mut buf = Aligned::new(size, seed + 100 + k as u64);
                    let mut r = Offsets((seed.wrapping_mul(131) + k as u64 * 7919) | 1);
                    started.fetch_add(1, Ordering::SeqCst);
                    while !stop.load(Ordering::Relaxed) {
                        let o = r.next(s.len, size as u64);
                        let b = buf.get(size);
                        if write {
                            s.file.write_all_at(b, o).map_err(io(&s.path, "O_DIRECT write (load)"))?;
                        } else {
                            s.file.read_exact_at(b, o).map_err(io(&s.path, "O_DIRECT read (load)"))?;
                        }
                        moved.fetch_add(size as u64, Ordering::Relaxed);
                    }
                    Ok(())
                })
            })
            .collect();
        let measured = (|| {
            // The load's first requests are in flight before the first small read.
            while started.load(Ordering::SeqCst) < LOAD_THREADS as u64 {
                std::thread::yield_now();
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
            let mut buf = Aligned::new(KIB4, seed);
            let offs = s.random(samples, seed + 1);
            let m0 = moved.load(Ordering::Relaxed);
            let t0 = Instant::now();
            let lat = s.timed(false, KIB4, &offs, &mut buf)?;
            let mb_s = (moved.load(Ordering::Relaxed) - m0) as f64 / t0.elapsed().as_secs_f64() / 1e6;
            Ok((mb_s, lat))
        })();
        stop.store(true, Ordering::Relaxed);
        for h in load {
            h.join().unwrap_or_else(|_| Err(BenchError::Step("a calibration thread panicked".into())))?;
        }
        measured
    })
}

/// Size of the file whose page-cache copies `copy` times.
const COPY_FILE_MIB: usize = 32;

/// The page cache's CPU costs on this machine, µs per 4 KiB page ([`PageCosts`]): the median
/// over buffered 1 MiB writes over an allocated file's pages when they are not cached (the
/// kernel allocates and inserts a page for each, and maps its block), then over the same pages
/// cached (the copy alone: the bench's background call), then over 128 KiB reads of them (the
/// launch's call). The file is written and synced first and its pages dropped
/// (`POSIX_FADV_DONTNEED`, this file only) before the cold pass, which overwrites whole pages
/// and so reads nothing; it is removed at the end (the work directory goes on an interrupt).
///
/// Each pass ends with an `fdatasync` of its 32 MiB of dirty pages, as the bench's updaters
/// do every 32 MiB: the calling thread's CPU time in it (`CLOCK_THREAD_CPUTIME_ID`) is the
/// kernel's work to write those pages back (walk them, build and submit the requests, flush
/// the cache; the wait itself costs none), and the disk's count of the writes it completed
/// meanwhile (`disk`'s stat; 0 where another queue counts them) the requests they went out
/// in. The simulator charges a request's submission apart (`submit_request_us`, 8 µs assumed),
/// so `writeback_page_us` is the CPU time less that per request, per page.
fn page_copies(s: &Scratch, disk: &str) -> Result<PageCosts, BenchError> {
    let (path, f, mut buf) = synced_file(s, "copy.dat", COPY_FILE_MIB, 11)?;
    let len = COPY_FILE_MIB * MIB;
    let per_page = |t: f64, bytes: usize| t / (bytes / KIB4) as f64;
    drop_cached(&f, &path)?;
    // One pass of 1 MiB write()s over the file (each with new contents), synced afterwards:
    // µs per page of each call, and the sync's CPU time (µs) and the writes the disk completed.
    let pass = |buf: &mut [u8]| -> Result<(Vec<f64>, SyncCost), BenchError> {
        let mut t_page = vec![];
        for o in (0..len).step_by(MIB) {
            buf[0] = buf[0].wrapping_add(1);
            let t = Instant::now();
            f.write_all_at(buf, o as u64).map_err(io(&path, "write"))?;
            t_page.push(per_page(us(t), MIB));
        }
        check_interrupt()?;
        let before = disk_requests(disk)?;
        let cpu = thread_cpu_us();
        let t = Instant::now();
        f.sync_data().map_err(io(&path, "fdatasync"))?;
        let wall_us = us(t);
        let cpu_us = thread_cpu_us() - cpu;
        let requests = disk_requests(disk)?[4].saturating_sub(before[4]);
        Ok((t_page, SyncCost { cpu_us, requests, wall_us }))
    };
    let (cold, sync_cold) = pass(&mut buf)?;
    let (w, sync_warm) = pass(&mut buf)?;
    let chunk = 128 << 10;
    let mut r = vec![];
    for o in (0..len).step_by(chunk) {
        let t = Instant::now();
        f.read_exact_at(&mut buf[..chunk], o as u64).map_err(io(&path, "read"))?;
        r.push(per_page(us(t), chunk));
    }
    drop(f);
    std::fs::remove_file(&path).map_err(io(&path, "remove"))?;
    let (write, cold) = (median(w), median(cold));
    let pages = (len / KIB4) as f64;
    let submit_us = forefront_workload::Costs::default().submit_request_us;
    let syncs = [sync_cold, sync_warm];
    let writeback = median(syncs.iter().map(|y| (y.cpu_us - y.requests as f64 * submit_us).max(0.0) / pages).collect());
    Ok(PageCosts {
        write,
        read: median(r),
        alloc: (cold - write).max(0.0),
        cold_write: cold,
        sync_cpu: median(syncs.iter().map(|y| y.cpu_us).collect()),
        sync_requests: median(syncs.iter().map(|y| y.requests as f64).collect()),
        writeback,
        sync_mb_s: len as f64 / median(syncs.iter().map(|y| y.wall_us).collect()),
    })
}

/// Size of the file [`copy_probe`] writes and reads (MiB): the calibration's copy file.
pub const COPY_PROBE_MIB: usize = COPY_FILE_MIB;

/// One probe of the page cache's copy costs ([`copy_probe`]), µs per 4 KiB page.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CopyProbe {
    /// The median 1 MiB `write()` over cached pages (the calibration's `copy_write_page_us`).
    pub write_page_us: f64,
    /// The median 128 KiB `read()` of cached pages (the calibration's `copy_read_page_us`).
    pub read_page_us: f64,
}

impl CopyProbe {
    /// The probes' medians, each direction's own (`None` without probes).
    pub fn medians(probes: &[CopyProbe]) -> Option<CopyProbe> {
        if probes.is_empty() {
            return None;
        }
        let of = |f: fn(&CopyProbe) -> f64| median(probes.iter().map(f).collect());
        Some(CopyProbe { write_page_us: of(|p| p.write_page_us), read_page_us: of(|p| p.read_page_us) })
    }
}

/// The calibration's copy step without its cold pass's timing, for `bench run` to take
/// beside its samples: the page copy's cost moves from minute to minute on this VM (0.26–0.51 µs a
/// page, docs/twin.md twin27), so a calibration taken minutes before a run
/// need not describe it. `path` is a file of [`COPY_PROBE_MIB`] MiB, written once (by
/// [`make_probe_file`]); whether or not it is cached, one untimed pass of 1 MiB `write()`s
/// over it caches every page and an `fdatasync` cleans them, then a timed pass of 1 MiB
/// `write()`s over the cached pages and one of 128 KiB `read()`s of them, and a last
/// `fdatasync`, so that the probe leaves no dirty page to a sample. ~70 ms on this VM.
pub fn copy_probe(path: &Path) -> Result<CopyProbe, BenchError> {
    let f = std::fs::OpenOptions::new().read(true).write(true).open(path).map_err(io(path, "open"))?;
    let len = COPY_PROBE_MIB * MIB;
    let mut buf = vec![0u8; MIB];
    Pattern::new(17).fill(&mut buf);
    let per_page = |t: f64, bytes: usize| t / (bytes / KIB4) as f64;
    let mut w = vec![];
    for timed in [false, true] {
        for o in (0..len).step_by(MIB) {
            buf[0] = buf[0].wrapping_add(1);
            let t = Instant::now();
            f.write_all_at(&buf, o as u64).map_err(io(path, "write"))?;
            if timed {
                w.push(per_page(us(t), MIB));
            }
        }
        if !timed {
            f.sync_data().map_err(io(path, "fdatasync"))?;
        }
    }
    let chunk = 128 << 10;
    let mut r = vec![];
    for o in (0..len).step_by(chunk) {
        let t = Instant::now();
        f.read_exact_at(&mut buf[..chunk], o as u64).map_err(io(path, "read"))?;
        r.push(per_page(us(t), chunk));
    }
    f.sync_data().map_err(io(path, "fdatasync"))?;
    Ok(CopyProbe { write_page_us: median(w), read_page_us: median(r) })
}

/// The file [`copy_probe`] works on: [`COPY_PROBE_MIB`] MiB at `path`, written and synced.
pub fn make_probe_file(path: &Path) -> Result<(), BenchError> {
    let f = create_rw(path)?;
    let mut buf = vec![0u8; MIB];
    Pattern::new(17).fill(&mut buf);
    for o in (0..COPY_PROBE_MIB * MIB).step_by(MIB) {
        f.write_all_at(&buf, o as u64).map_err(io(path, "write"))?;
    }
    f.sync_data().map_err(io(path, "fdatasync"))
}

/// Size of the file [`dontneed_folio`] reads (MiB): several read-ahead windows of 8 MiB, so
/// that the folios reach the size the window's ramp ends at.
const FOLIO_FILE_MIB: usize = 64;

/// The folio the file system caches a sequential read in, as `POSIX_FADV_DONTNEED` sees it
/// (KiB), and the share of the file (%) that dropping each 1 MiB call's range leaves cached
/// (what the bench's uploaders do: `crate::ops::upload_forever`). The kernel evicts only the
/// folios a range covers whole (`mapping_try_invalidate`, `mm/truncate.c`); a file system that
/// caches read-ahead in large folios (ext4 since Linux 6.11) keeps every folio that straddles
/// a range's ends. For each power of two `g` from 4 KiB to 4 MiB the file is dropped, read
/// whole in 1 MiB `read()`s (the uploaders' call), and dropped again in `g`-aligned ranges of
/// `g`; the pages `mincore` still finds are counted. The figure is the smallest `g` that
/// drops nine tenths of the file (its first read-ahead windows use smaller folios); the file
/// is removed at the end.
fn dontneed_folio(s: &Scratch) -> Result<(f64, f64), BenchError> {
    let (path, f, mut buf) = synced_file(s, "folio.dat", FOLIO_FILE_MIB, 13)?;
    let len = FOLIO_FILE_MIB * MIB;
    let fd = f.as_raw_fd();
    let dontneed = |off: usize, n: usize| -> Result<(), BenchError> {
        // SAFETY: fadvise on an open fd with plain integers.
        let rc = unsafe { libc::posix_fadvise(fd, off as i64, n as i64, libc::POSIX_FADV_DONTNEED) };
        if rc != 0 {
            return Err(io(&path, "posix_fadvise(DONTNEED)")(std::io::Error::from_raw_os_error(rc)));
        }
        Ok(())
    };
    let mut kept = |g: usize| -> Result<f64, BenchError> {
        check_interrupt()?;
        dontneed(0, 0)?;
        for o in (0..len).step_by(MIB) {
            f.read_exact_at(&mut buf, o as u64).map_err(io(&path, "read"))?;
        }
        for o in (0..len).step_by(g) {
            dontneed(o, g)?;
        }
        let resident = forefront_agent::prefetch::resident_ranges(&f, len as u64, u64::MAX).map_err(io(&path, "mincore"))?;
        Ok(resident.iter().map(|r| r.1).sum::<u64>() as f64 / len as f64)
    };
    let mut folio = None;
    let mut kept_1m = f64::NAN;
    let mut g = KIB4;
    while g <= 4 * MIB {
        let k = kept(g)?;
        if g == MIB {
            kept_1m = 100.0 * k;
        }
        if folio.is_none() && k <= 0.1 {
            folio = Some(g);
        }
        if folio.is_some() && g >= MIB {
            break;
        }
        g *= 2;
    }
    dontneed(0, 0)?;
    drop(f);
    std::fs::remove_file(&path).map_err(io(&path, "remove"))?;
    // NaN: no range up to 4 MiB dropped the file (not a figure `bench predict` can use).
    Ok((folio.map_or(f64::NAN, |g| (g / 1024) as f64), kept_1m))
}

/// A new file `name` beside the scratch file, written whole in 1 MiB calls of a pattern (from
/// `seed`) and synced: its path, the open file and the 1 MiB buffer (the pattern in it).
fn synced_file(s: &Scratch, name: &str, mib: usize, seed: u64) -> Result<(PathBuf, File, Vec<u8>), BenchError> {
    let path = s.path.with_file_name(name);
    let f = create_rw(&path)?;
    let mut buf = vec![0u8; MIB];
    Pattern::new(seed).fill(&mut buf);
    for o in (0..mib * MIB).step_by(MIB) {
        f.write_all_at(&buf, o as u64).map_err(io(&path, "write"))?;
    }
    f.sync_data().map_err(io(&path, "fdatasync"))?;
    Ok((path, f, buf))
}

/// A new, empty file at `path`, open for reading and writing (a file there is truncated).
fn create_rw(path: &Path) -> Result<File, BenchError> {
    std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(path).map_err(io(path, "create"))
}

/// `POSIX_FADV_DONTNEED` over the whole of `f` (at `path`): its clean pages leave the page cache.
fn drop_cached(f: &File, path: &Path) -> Result<(), BenchError> {
    // SAFETY: fadvise on an open fd with plain integers.
    let rc = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    if rc != 0 {
        return Err(io(path, "posix_fadvise(DONTNEED)")(std::io::Error::from_raw_os_error(rc)));
    }
    Ok(())
}

/// One `fdatasync` of [`page_copies`]: the calling thread's CPU time in it and the writes the
/// disk completed meanwhile.
#[derive(Clone, Copy, Debug)]
struct SyncCost {
    cpu_us: f64,
    requests: u64,
    /// Its duration (µs).
    wall_us: f64,
}

/// The calling thread's CPU time (µs): `CLOCK_THREAD_CPUTIME_ID`.
fn thread_cpu_us() -> f64 {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes the timespec it is given; the clock exists on every Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as f64 * 1e6 + t.tv_nsec as f64 / 1e3
}

/// [`page_copies`]' figures, µs per 4 KiB page.
#[derive(Clone, Copy, Debug)]
struct PageCosts {
    /// A `write()`'s copy into a cached page (`copy_write_page_us`).
    write: f64,
    /// A `read()`'s copy out of a cached page (`copy_read_page_us`).
    read: f64,
    /// A `write()` over a page that is not cached, beyond the copy: the page's allocation,
    /// insertion and block lookup (`alloc_page_us`; never below 0: the two medians' noise).
    alloc: f64,
    /// The whole cost of a `write()` over a page that is not cached (`cold_write_page_us`).
    cold_write: f64,
    /// The CPU time of an `fdatasync` of the file's 32 MiB of dirty pages, µs
    /// (`fdatasync_32m_cpu_us`).
    sync_cpu: f64,
    /// The writes the disk completed during it (`fdatasync_32m_requests`).
    sync_requests: f64,
    /// Its CPU time less the simulator's submission cost per request, per page
    /// (`writeback_page_us`, the simulator's `[phone.costs]` figure; never below 0).
    writeback: f64,
    /// MB/s of that `fdatasync` (32 MiB over its median duration): the page cache's write-back
    /// as the disk takes it (`writeback_32m_mb_s`; recorded, not used: docs/twin.md, twin24).
    sync_mb_s: f64,
}

/// The work directory and scratch file, removed on drop (also on an interrupt).
struct WorkDir(PathBuf);
impl Drop for WorkDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Size of the file [`host_reclaim`] frees and writes again (MiB): more than this VM's host
/// leaves backed (~300 MiB) and than one reporting pass takes (~550 MiB), so that the rewrite
/// meets both kinds of memory and the wait sees two passes.
const HOST_FILE_MIB: usize = 768;
/// The longest [`host_reclaim`] waits for reporting to settle (s).
const HOST_WAIT_S: f64 = 9.0;
/// Without the kernel's counters, the wait before the rewrite (s): beyond two of the kernel's
/// 2 s `PAGE_REPORTING_DELAY`s.
const HOST_BLIND_WAIT_S: f64 = 5.0;

/// The host's reclaim of free memory ([`HostFigures`]), on a VM whose balloon reports free pages
/// (docs/twin.md, twin24). A file of [`HOST_FILE_MIB`] is written, dropped from the page cache
/// (`POSIX_FADV_DONTNEED`, this file only) and written again at once in 1 MiB calls (the
/// allocator hands back the memory just freed: the recycled cost), dropped again, and written
/// again once reporting has settled: then each call either took memory the host still backed
/// (as fast as a recycled one) or memory it had taken back (its fault on every page). Where the
/// kernel counts its reporting (`forefront_sysfs::vm::page_reporting_counters`) the wait
/// follows the passes: it ends when, after one pass at least, nothing more is reported for
/// 2.5 s (at most [`HOST_WAIT_S`]); the passes give the interval and the memory per pass.
/// Elsewhere it waits [`HOST_BLIND_WAIT_S`] and those two are not measured.
///
/// The file is smaller on a small file system (half its free space); `None` below 64 MiB.
fn host_reclaim(s: &Scratch) -> Result<Option<HostFigures>, BenchError> {
    let path = s.path.with_file_name("host.dat");
    let dir = s.path.parent().unwrap_or(Path::new("/"));
    let free = nix::sys::statvfs::statvfs(dir)
        .map(|v| v.blocks_available() * v.fragment_size())
        .map_err(|e| io(dir, "statvfs")(std::io::Error::from(e)))?;
    let file_mib = HOST_FILE_MIB.min((free / 2 / MIB as u64) as usize);
    if file_mib < 64 {
        return Ok(None);
    }
    let f = create_rw(&path)?;
    let mut buf = vec![0u8; MIB];
    Pattern::new(13).fill(&mut buf);
    let len = file_mib * MIB;
    let drop_cache = || drop_cached(&f, &path);
    // One pass of 1 MiB write()s over the file: µs per call.
    let pass = |buf: &mut [u8]| -> Result<Vec<f64>, BenchError> {
        let mut t_call = Vec::with_capacity(file_mib);
        for o in (0..len).step_by(MIB) {
            buf[0] = buf[0].wrapping_add(1);
            let t = Instant::now();
            f.write_all_at(buf, o as u64).map_err(io(&path, "write"))?;
            t_call.push(us(t));
        }
        check_interrupt()?;
        Ok(t_call)
    };
    // One pass of 1 MiB read()s over the file: the calling thread's CPU µs per call (a cold
    // read's device wait is not CPU time; the host's fault on a page it fills is, here).
    let read_pass = |buf: &mut [u8]| -> Result<Vec<f64>, BenchError> {
        let mut cpu_call = Vec::with_capacity(file_mib);
        for o in (0..len).step_by(MIB) {
            let c = thread_cpu_us();
            f.read_exact_at(buf, o as u64).map_err(io(&path, "read"))?;
            cpu_call.push(thread_cpu_us() - c);
        }
        check_interrupt()?;
        Ok(cpu_call)
    };
    pass(&mut buf)?;
    f.sync_data().map_err(io(&path, "fdatasync"))?;
    drop_cache()?;
    let recycled = median(pass(&mut buf)?);
    f.sync_data().map_err(io(&path, "fdatasync"))?;
    drop_cache()?;
    // The free blocks reporting never takes, as a drop leaves them (twin29).
    let fragments = forefront_sysfs::vm::free_below_reporting_order(Path::new("/"));
    let (interval_ms, pass_mib) = settle_reporting()?;
    let calls = pass(&mut buf)?;
    // The same for reads: a cold read at once over memory just freed (recycled), then one once
    // reporting has settled again.
    f.sync_data().map_err(io(&path, "fdatasync"))?;
    drop_cache()?;
    let read_recycled = median(read_pass(&mut buf)?);
    drop_cache()?;
    settle_reporting()?;
    let reads = read_pass(&mut buf)?;
    drop(f);
    std::fs::remove_file(&path).map_err(io(&path, "remove"))?;
    // A call that took memory the host had taken back pays its fault on 256 pages (~3 ms here,
    // against ~0.15 ms recycled): four times the recycled median tells the two apart.
    let (slow, fast): (Vec<f64>, Vec<f64>) = calls.iter().partition(|&&t| t > 4.0 * recycled);
    // No slow call: the rewrite never reached memory the host had taken back (its file smaller
    // than what the host left backed): the fault is not measured (NaN), not 0.
    let page_us = if slow.is_empty() { f64::NAN } else { ((median(slow) - recycled) / (MIB / KIB4) as f64).max(0.0) };
    // Reads the same way, on their CPU time (~2.2 ms a call against ~0.07 recycled here).
    let slow_reads: Vec<f64> = reads.iter().copied().filter(|&t| t > 4.0 * read_recycled).collect();
    let read_page_us =
        if slow_reads.is_empty() { f64::NAN } else { ((median(slow_reads) - read_recycled) / (MIB / KIB4) as f64).max(0.0) };
    Ok(Some(HostFigures {
        page_us,
        read_page_us,
        reserve_mib: fast.len() as f64,
        pass_mib,
        interval_ms,
        recycled_us: recycled,
        read_recycled_cpu_us: read_recycled,
        fragments,
    }))
}

/// After a drop: wait for the host's reporting to settle, following the passes where the
/// kernel counts them (see [`host_reclaim`]). Returns the shortest interval between two passes
/// and the most one reported (MiB), where counted.
fn settle_reporting() -> Result<(Option<f64>, Option<f64>), BenchError> {
    let freed = Instant::now();
    let root = Path::new("/");
    let (mut interval_ms, mut pass_mib) = (None, None);
    if let Some(c0) = forefront_sysfs::vm::page_reporting_counters(root) {
        // (time of the pass's first report, KiB it reported), in order.
        let mut passes: Vec<(f64, u64)> = vec![];
        let (mut last, mut last_change) = (c0, freed);
        while freed.elapsed().as_secs_f64() < HOST_WAIT_S {
            check_interrupt()?;
            std::thread::sleep(std::time::Duration::from_millis(5));
            let Some(c) = forefront_sysfs::vm::page_reporting_counters(root) else { break };
            if c != last {
                let kib = c.reported_kib.saturating_sub(last.reported_kib);
                let now_ms = freed.elapsed().as_secs_f64() * 1e3;
                // A pass reports in batches a few tens of ms apart; the next one comes an
                // interval (2 s in the kernel's source) later.
                match passes.last_mut() {
                    Some((t, k)) if now_ms - *t < 500.0 => *k += kib,
                    _ => passes.push((now_ms, kib)),
                }
                (last, last_change) = (c, Instant::now());
            }
            if !passes.is_empty() && last_change.elapsed().as_secs_f64() > 2.5 {
                break;
            }
        }
        pass_mib = passes.iter().map(|p| p.1 as f64 / 1024.0).reduce(f64::max);
        interval_ms = passes.windows(2).map(|w| w[1].0 - w[0].0).reduce(f64::min);
    } else {
        std::thread::sleep(std::time::Duration::from_secs_f64(HOST_BLIND_WAIT_S));
    }
    Ok((interval_ms, pass_mib))
}

/// The names of the figures of the free memory below the reporting order, by order (twin29).
const HOST_FREE_ORDER: [&str; 10] = [
    "host_free_order0_kib",
    "host_free_order1_kib",
    "host_free_order2_kib",
    "host_free_order3_kib",
    "host_free_order4_kib",
    "host_free_order5_kib",
    "host_free_order6_kib",
    "host_free_order7_kib",
    "host_free_order8_kib",
    "host_free_order9_kib",
];

/// [`host_reclaim`]'s figures.
#[derive(Clone, Debug)]
struct HostFigures {
    /// CPU per 4 KiB page of a write into memory the host took back, beyond a recycled one (µs;
    /// NaN where no call of the rewrite met such memory).
    page_us: f64,
    /// The same for a cold read's page, on the reading thread's CPU time (µs; NaN likewise).
    read_page_us: f64,
    /// The rewrite's fast MiB: free memory the host still backed once reporting settled.
    reserve_mib: f64,
    /// The most one pass reported (MiB), where the kernel counts it.
    pass_mib: Option<f64>,
    /// The shortest time between two passes (ms), where the kernel counts them and two ran.
    interval_ms: Option<f64>,
    /// The recycled rewrite's median 1 MiB call (µs).
    recycled_us: f64,
    /// The recycled cold read's median 1 MiB call, its CPU time (µs).
    read_recycled_cpu_us: f64,
    /// Free pages in blocks of each order below the reporting order just after the drop
    /// (`/proc/buddyinfo`), where the kernel has them.
    fragments: Option<Vec<u64>>,
}

#[allow(clippy::too_many_arguments)]
fn one_rep(
    s: &Scratch,
    disk: &str,
    fs_root: &File,
    plan: &CalPlan,
    depth: usize,
    big: usize,
    rep: u32,
    progress: &mut dyn FnMut(CalProgress),
) -> Result<(Figures, bool), BenchError> {
    let seed = 0x5eed_0000 + rep as u64 * 1_000_003;
    let mut b4 = Aligned::new(KIB4, seed);
    let mut b1m = Aligned::new(MIB, seed + 1);
    let mut f: Figures = vec![];
    let start = Offsets(seed).next(s.len, MIB as u64);
    let step = |st: &'static str, p: &mut dyn FnMut(CalProgress)| p(CalProgress::Step { rep, step: st });

    // Medians, not means: on a shared machine a few calls wait for something else entirely
    // (a host flush, another guest), and one 5 ms outlier in 200 calls moves a mean by 25 µs.
    step("read-seq", progress);
    let r4 = median(s.timed(false, KIB4, &s.sequential(KIB4, 256, start), &mut b4)?);
    let r1m = median(s.timed(false, MIB, &s.sequential(MIB, 64, start / 2), &mut b1m)?);
    let read_seq = ((MIB - KIB4) as f64 / (r1m - r4)).max(1e-3); // bytes/µs = MB/s
    let overhead = (r4 - KIB4 as f64 / read_seq).max(0.0);

    step("read-rand", progress);
    let mut rr = s.timed(false, KIB4, &s.random(plan.ops, seed + 2), &mut b4)?;
    let rr_mean = mean(&rr);
    let (p50, p90, p99) = percentiles(&mut rr);
    // A random 4 KiB access costs at least its transfer at the sequential rate (a disk whose
    // random reads are as fast as its sequential ones has no seek to pay).
    let access = (p50 - overhead).max(KIB4 as f64 / read_seq);
    let cv = lognormal_cv(p50, p90);

    step("read-depth", progress);
    let (iops_d, mut lat_d) = s.at_depth(false, depth, plan.ops * 4, seed + 3)?;
    let channels = (iops_d * p50 / 1e6).round().clamp(1.0, 64.0);
    let (dp50, _, dp99) = percentiles(&mut lat_d);
    // 1 MiB transfers at depth (recorded; the shared stage's rates are the `large` step's).
    let bw_depth = depth.min(BW_DEPTH);
    let mb_s = |ops_per_s: f64| ops_per_s * MIB as f64 / 1e6;
    let (r1m_d, _) = s.sized_at_depth(false, MIB, bw_depth, bw_depth * BW_OPS, seed + 9)?;

    step("write-seq", progress);
    let w4 = median(s.timed(true, KIB4, &s.sequential(KIB4, 256, start / 3), &mut b4)?);
    let w1m = median(s.timed(true, MIB, &s.sequential(MIB, 64, start / 5), &mut b1m)?);
    let write_seq = ((MIB - KIB4) as f64 / (w1m - w4)).max(1e-3);

    step("write-rand", progress);
    let mut rw = s.timed(true, KIB4, &s.random(plan.ops, seed + 4), &mut b4)?;
    let rw_mean = mean(&rw);
    let (wp50, wp90, wp99) = percentiles(&mut rw);
    let waccess = (wp50 - overhead).max(KIB4 as f64 / write_seq);
    let (wiops_d, _) = s.at_depth(true, depth, plan.ops * 4, seed + 5)?;
    let (w1m_d, _) = s.sized_at_depth(true, MIB, bw_depth, bw_depth * BW_OPS, seed + 10)?;

    step("flush", progress);
    let mut fl = vec![];
    for o in s.random(30, seed + 6) {
        check_interrupt()?;
        s.file.write_all_at(b4.get(KIB4), o).map_err(io(&s.path, "write"))?;
        let t = Instant::now();
        s.fdatasync()?;
        fl.push(us(t));
    }

    step("fua", progress);
    let dsync = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_DIRECT | libc::O_DSYNC)
        .open(&s.path)
        .map_err(io(&s.path, "open O_DIRECT|O_DSYNC"))?;
    let mut fua = vec![];
    for o in s.random(30, seed + 7) {
        check_interrupt()?;
        let t = Instant::now();
        dsync.write_all_at(b4.get(KIB4), o).map_err(io(&s.path, "O_DSYNC write"))?;
        fua.push(us(t));
    }

    step("discard", progress);
    let mut d_us = 0.0;
    let mut d_bytes = 0u64;
    let mut trim_ok = true;
    for k in 0..4u64 {
        check_interrupt()?;
        let off = Offsets(seed + 8 + k).next(s.len - 4 * MIB as u64, MIB as u64);
        match discard_once(s, fs_root, off, 4 * MIB as u64, &mut b1m)? {
            Some((t, b)) => {
                d_us += t;
                d_bytes += b;
            }
            None => {
                trim_ok = false;
                break;
            }
        }
    }
    let discard = if trim_ok { d_us / (d_bytes as f64 / MIB as f64) } else { 0.0 };

    step("copy", progress);
    let pc = page_copies(s, disk)?;
    let (copy_w, copy_r) = (pc.write, pc.read);

    step("folio", progress);
    let (folio_kib, kept_1m) = dontneed_folio(s)?;

    // The kernel's largest requests at depth, and a small read behind them.
    step("large", progress);
    let stat0 = disk_requests(disk)?;
    let (rbig_d, _) = s.sized_at_depth(false, big, bw_depth, bw_depth * BW_OPS, seed + 11)?;
    let (wbig_d, _) = s.sized_at_depth(true, big, bw_depth, bw_depth * BW_OPS, seed + 12)?;
    let rseq_d = s.streams_at_depth(false, big, bw_depth, BW_OPS, seed + 15)?;
    let wseq_d = s.streams_at_depth(true, big, bw_depth, BW_OPS, seed + 16)?;
    let stat1 = disk_requests(disk)?;
    // The mean request the device received over the step (KiB): `big` if nothing cut them.
    let kib_per_request = |ios: usize, sectors: usize| {
        let n = stat1[ios].saturating_sub(stat0[ios]);
        if n == 0 {
            0.0
        } else {
            stat1[sectors].saturating_sub(stat0[sectors]) as f64 * 512.0 / n as f64 / 1024.0
        }
    };
    step("under-load", progress);
    let samples = (plan.ops / 2).max(10);
    let (rl_mb_s, mut rl) = latency_under_load(s, false, big, samples, seed + 13)?;
    let rl_mean = mean(&rl);
    let (rl50, rl90, _) = percentiles(&mut rl);
    let (wl_mb_s, mut wl) = latency_under_load(s, true, big, samples, seed + 14)?;
    let wl_mean = mean(&wl);
    let (wl50, wl90, _) = percentiles(&mut wl);
    let big_mb_s = |ops_per_s: f64| ops_per_s * big as f64 / 1e6;
    step("host", progress);
    // Only where the host takes free memory back (the figures are then in every repetition).
    if forefront_sysfs::vm::free_page_reporting(Path::new("/")) == Some(true) {
        // NaN: not measured in this repetition (the file system too small for the file).
        let h = host_reclaim(s)?;
        let nan = f64::NAN;
        let h = h.as_ref();
        f.extend([
            ("host_reclaim_page_us", h.map_or(nan, |h| h.page_us)),
            ("host_reclaim_read_page_us", h.map_or(nan, |h| h.read_page_us)),
            ("host_reclaim_reserve_mib", h.map_or(nan, |h| h.reserve_mib)),
            ("host_reclaim_pass_mib", h.and_then(|h| h.pass_mib).unwrap_or(nan)),
            ("host_reclaim_interval_ms", h.and_then(|h| h.interval_ms).unwrap_or(nan)),
            ("host_recycled_write_1m_us", h.map_or(nan, |h| h.recycled_us)),
            ("host_recycled_read_1m_cpu_us", h.map_or(nan, |h| h.read_recycled_cpu_us)),
        ]);
        // The free blocks below the reporting order, each order's KiB (twin29); NaN at the
        // orders the kernel reports (or where it does not say).
        let frag = h.and_then(|h| h.fragments.as_ref());
        f.extend(
            HOST_FREE_ORDER
                .iter()
                .enumerate()
                .map(|(j, &name)| (name, frag.and_then(|p| p.get(j)).map_or(nan, |&pages| (pages * 4) as f64))),
        );
    }

    f.extend([
        ("read_seq_mb_s", read_seq),
        ("cmd_overhead_us", overhead),
        ("read_rand_iops", 1e6 / access),
        ("service_cv", cv),
        ("channels", channels),
        ("write_seq_mb_s", write_seq),
        ("write_rand_iops", 1e6 / waccess),
        ("flush_overhead_us", median(fl)),
        ("discard_us_per_mib", discard),
        ("read_4k_seq_qd1_p50_us", r4),
        ("read_1m_seq_qd1_p50_us", r1m),
        ("read_4k_rand_qd1_mean_us", rr_mean),
        ("read_4k_rand_qd1_p50_us", p50),
        ("read_4k_rand_qd1_p90_us", p90),
        ("read_4k_rand_qd1_p99_us", p99),
        ("read_4k_rand_depth_iops", iops_d),
        ("read_4k_rand_depth_p50_us", dp50),
        ("read_4k_rand_depth_p99_us", dp99),
        ("write_4k_seq_qd1_p50_us", w4),
        ("write_1m_seq_qd1_p50_us", w1m),
        ("write_4k_rand_qd1_mean_us", rw_mean),
        ("write_4k_rand_qd1_p50_us", wp50),
        ("write_4k_rand_qd1_p90_us", wp90),
        ("write_4k_rand_qd1_p99_us", wp99),
        ("write_4k_rand_depth_iops", wiops_d),
        ("fua_write_4k_p50_us", median(fua)),
        ("read_1m_depth_mb_s", mb_s(r1m_d)),
        ("write_1m_depth_mb_s", mb_s(w1m_d)),
        ("copy_page_us", (copy_w + copy_r) / 2.0),
        ("copy_write_page_us", copy_w),
        ("copy_read_page_us", copy_r),
        ("cold_write_page_us", pc.cold_write),
        ("alloc_page_us", pc.alloc),
        ("fdatasync_32m_cpu_us", pc.sync_cpu),
        ("fdatasync_32m_requests", pc.sync_requests),
        ("writeback_page_us", pc.writeback),
        ("writeback_32m_mb_s", pc.sync_mb_s),
        ("dontneed_folio_kib", folio_kib),
        ("dontneed_1m_kept_pct", kept_1m),
        ("read_max_depth_mb_s", big_mb_s(rbig_d)),
        ("write_max_depth_mb_s", big_mb_s(wbig_d)),
        ("read_max_seq_depth_mb_s", rseq_d),
        ("write_max_seq_depth_mb_s", wseq_d),
        ("read_max_request_kib", kib_per_request(0, 2)),
        ("write_max_request_kib", kib_per_request(4, 6)),
        ("read_load_mb_s", rl_mb_s),
        ("read_4k_under_read_load_p50_us", rl50),
        ("read_4k_under_read_load_p90_us", rl90),
        ("read_4k_under_read_load_mean_us", rl_mean),
        ("write_load_mb_s", wl_mb_s),
        ("read_4k_under_write_load_p50_us", wl50),
        ("read_4k_under_write_load_p90_us", wl90),
        ("read_4k_under_write_load_mean_us", wl_mean),
    ]);
    Ok((f, trim_ok))
}

/// The disk's completed reads, merged reads, sectors read, read ticks, completed writes, merged
/// writes, sectors written (`/sys/block/DISK/stat`, its first seven fields): counted at the
/// device, so after the block layer has split and merged requests.
fn disk_requests(disk: &str) -> Result<[u64; 7], BenchError> {
    let path = Path::new("/sys/block").join(disk).join("stat");
    let text = std::fs::read_to_string(&path).map_err(io(&path, "read"))?;
    parse_disk_stat(&text, &path)
}

fn parse_disk_stat(text: &str, path: &Path) -> Result<[u64; 7], BenchError> {
    let f = text
        .split_whitespace()
        .take(7)
        .map(|x| x.parse::<u64>().map_err(|e| BenchError::Step(format!("{}: field `{x}`: {e}", path.display()))))
        .collect::<Result<Vec<u64>, _>>()?;
    f.try_into().map_err(|_| BenchError::Step(format!("{}: fewer than 7 fields", path.display())))
}

/// How each figure was obtained (the `how` of its provenance entry).
fn how(name: &str, depth: usize, ops: usize, big: usize) -> (&'static str, String) {
    let d = |s: &str| ("derived", s.to_owned());
    let m = |s: String| ("measured", s);
    let kib = big / 1024;
    let rw = |n: &str| if n.starts_with("read") { "read" } else { "write" };
    match name {
        n if n.ends_with("_max_request_kib") => m(format!(
            "the mean size of the {}s the device completed during the `large` step (its sectors / its requests, /sys/block/DISK/stat): {kib} KiB unless the block layer cut the requests (max_segments); 0 if that disk counted no {}s (the file on a stacked device whose requests another queue counts)",
            rw(n),
            rw(n)
        )),
        n if n.ends_with("_max_seq_depth_mb_s") => m(format!(
            "MB/s of {} sequential streams (a thread each, its own region of the file) of {BW_OPS} {kib} KiB (max_sectors_kb) O_DIRECT {}s",
            depth.min(BW_DEPTH),
            rw(n)
        )),
        n if n.ends_with("_max_depth_mb_s") => m(format!(
            "MB/s of {} random {kib} KiB (max_sectors_kb) O_DIRECT {}s from {} threads",
            depth.min(BW_DEPTH) * BW_OPS,
            rw(n),
            depth.min(BW_DEPTH)
        )),
        n if n.ends_with("_load_mb_s") => m(format!(
            "MB/s of the {LOAD_THREADS} threads' back-to-back random {kib} KiB O_DIRECT {}s while the small reads ran",
            rw(n)
        )),
        n if n.contains("_under_") => m(format!(
            "{} 4 KiB random O_DIRECT reads at depth 1 while {LOAD_THREADS} threads {} random {kib} KiB O_DIRECT requests back to back",
            (ops / 2).max(10),
            if n.contains("under_read") { "read" } else { "write" }
        )),
        "read_seq_mb_s" => d("(1 MiB - 4 KiB) / (median 1 MiB - median 4 KiB sequential O_DIRECT read, depth 1)"),
        "cmd_overhead_us" => d("median 4 KiB sequential read - 4 KiB / read_seq_mb_s"),
        "read_rand_iops" => d("1 / (median 4 KiB random read at depth 1 - cmd_overhead_us), the access at least 4 KiB / read_seq_mb_s"),
        "service_cv" => d("the log-normal whose p90/p50 is that of the 4 KiB random reads at depth 1 (whole latency, not the access part alone), at most 3"),
        "channels" => d("4 KiB random reads per second at depth x median latency at depth 1, rounded, 1..=64"),
        "write_seq_mb_s" => d("(1 MiB - 4 KiB) / (median 1 MiB - median 4 KiB sequential O_DIRECT write, depth 1)"),
        "write_rand_iops" => d("1 / (median 4 KiB random write at depth 1 - cmd_overhead_us), the access at least 4 KiB / write_seq_mb_s"),
        "flush_overhead_us" => m("median fdatasync after a 4 KiB O_DIRECT write to an allocated file (a cache flush), 30 per repetition".into()),
        "discard_us_per_mib" => m("FITRIM of the blocks of a 4 MiB hole just punched in the file, 4 per repetition, us per MiB trimmed".into()),
        "copy_page_us" => d("mean of copy_write_page_us and copy_read_page_us (bench predict gives the simulator each direction's own figure; the mean is for a scenario with one copy cost)"),
        "copy_write_page_us" => m(format!("median buffered 1 MiB write() over cached pages of a {COPY_FILE_MIB} MiB file, us per 4 KiB page")),
        "dontneed_folio_kib" => m(format!("smallest power-of-two range (4 KiB..4 MiB) whose aligned POSIX_FADV_DONTNEEDs drop at least 90% of a {FOLIO_FILE_MIB} MiB file just read in 1 MiB read()s (mincore): the folio a sequential read is cached in, KiB")),
        "dontneed_1m_kept_pct" => m(format!("share of a {FOLIO_FILE_MIB} MiB file just read in 1 MiB read()s that POSIX_FADV_DONTNEED over each call's 1 MiB leaves cached (mincore), %")),
        "copy_read_page_us" => m(format!("median buffered 128 KiB read() of cached pages of a {COPY_FILE_MIB} MiB file, us per 4 KiB page")),
        "cold_write_page_us" => m(format!("median buffered 1 MiB write() over the pages of an allocated {COPY_FILE_MIB} MiB file just dropped from the page cache (POSIX_FADV_DONTNEED), us per 4 KiB page")),
        "alloc_page_us" => d("cold_write_page_us - copy_write_page_us, at least 0: a page's allocation, insertion and block lookup beyond the copy (the simulator's [phone.costs] alloc_page_us, for bench predict)"),
        "fdatasync_32m_cpu_us" => m(format!("median CPU time of the calling thread (CLOCK_THREAD_CPUTIME_ID) in an fdatasync of the {COPY_FILE_MIB} MiB of pages each copy pass dirtied, us (the write-back's walk, requests and cache flush; its wait costs none)")),
        "fdatasync_32m_requests" => m("median count of the writes the disk completed during that fdatasync (/sys/block/DISK/stat; 0 if another queue counts them)".into()),
        "writeback_page_us" => d("(fdatasync_32m_cpu_us - fdatasync_32m_requests x the simulator's submit_request_us, 8 us) / the pages written, at least 0, median of the two passes: a dirty page's write-back (the simulator's [phone.costs] writeback_page_us, for bench predict)"),
        "writeback_32m_mb_s" => m(format!("MB/s of the copy step's fdatasyncs of {COPY_FILE_MIB} MiB of dirty pages (the median duration of the two): the page cache's write-back as the disk takes it, one file's at a time; recorded beside the O_DIRECT streams of the `large` step, not used by the simulator (docs/twin.md, twin24)")),
        "host_reclaim_page_us" => d("(median 1 MiB write() of the host step's last pass that took memory the host had taken back - host_recycled_write_1m_us) / 256 pages, at least 0 (not written if no repetition's rewrite met such memory): the host's fault per 4 KiB page (the simulator's [phone.host_reclaim] page_us, for bench predict)"),
        n if n.starts_with("host_free_order") => m(format!(
            "free memory in blocks of order {} (/proc/buddyinfo, all zones) just after the host step's {HOST_FILE_MIB} MiB file was dropped, KiB: blocks below the kernel's page_reporting_order, which reporting never hands to the host and from which the buddy allocator cuts smaller folios first ([phone.host_reclaim] fragments_kib, for bench predict; twin29)",
            n.trim_start_matches("host_free_order").trim_end_matches("_kib")
        )),
        "host_reclaim_reserve_mib" => m(format!("the 1 MiB write()s of the host step's last pass as fast as a recycled one (at most 4x its median): free memory the host still backed once reporting settled ({HOST_FILE_MIB} MiB file dropped, then written again after the reporting passes; [phone.host_reclaim] reserve_mib)")),
        "host_reclaim_pass_mib" => m("the most one free page reporting pass reported after the host step's drop (MiB; the kernel's page_reporting reported_kib, sampled every 5 ms, its changes within 500 ms one pass; [phone.host_reclaim] pass_mib)".into()),
        "host_reclaim_interval_ms" => m("the shortest time between two such passes (ms; the kernel's PAGE_REPORTING_DELAY is 2 s; [phone.host_reclaim] interval_ms)".into()),
        "host_recycled_write_1m_us" => m(format!("median 1 MiB write() over the {HOST_FILE_MIB} MiB host-step file's pages just dropped (POSIX_FADV_DONTNEED): memory freed moments before, us")),
        "host_reclaim_read_page_us" => d("(median CPU time of the 1 MiB read()s of the host step's cold read after reporting settled that took memory the host had taken back (over 4x host_recycled_read_1m_cpu_us) - host_recycled_read_1m_cpu_us) / 256 pages, at least 0 (not written if none did): the host's fault per 4 KiB page allocated for a read (the simulator's [phone.host_reclaim] read_page_us, for bench predict; twin28)"),
        "host_recycled_read_1m_cpu_us" => m(format!("median CPU time (CLOCK_THREAD_CPUTIME_ID) of a 1 MiB read() of the {HOST_FILE_MIB} MiB host-step file read cold at once after its drop: memory freed moments before, us")),
        n if n.starts_with("read_1m_depth") || n.starts_with("write_1m_depth") => m(format!(
            "MB/s of {} random 1 MiB O_DIRECT {}s from {} threads",
            depth.min(BW_DEPTH) * BW_OPS,
            if n.starts_with("read") { "read" } else { "write" },
            depth.min(BW_DEPTH)
        )),
        n if n.contains("depth") => m(format!("{} 4 KiB random O_DIRECT {}s from {depth} threads", ops * 4, if n.starts_with("read") { "read" } else { "write" })),
        n if n.starts_with("fua") => m("4 KiB O_DIRECT|O_DSYNC writes (FUA, or write + flush), 30 per repetition".into()),
        n if n.contains("rand") => m(format!("{ops} 4 KiB random O_DIRECT {}s, depth 1", if n.starts_with("read") { "read" } else { "write" })),
        n if n.contains("_1m_") => m("64 sequential 1 MiB O_DIRECT accesses, depth 1".into()),
        _ => m("256 sequential 4 KiB O_DIRECT accesses, depth 1".into()),
    }
}

/// The median, min and max of one figure over the repetitions that measured it (NaN: one that
/// could not, such as the interval between reporting passes where only one ran); `None` if none
/// did.
fn over_reps(reps: &[Figures], i: usize) -> Option<(f64, f64, f64)> {
    let mut v: Vec<f64> = reps.iter().map(|f| f[i].1).filter(|x| !x.is_nan()).collect();
    v.sort_by(|a, b| a.total_cmp(b));
    let (&lo, &hi) = (v.first()?, v.last()?);
    Some((quantile(&v, 0.5), lo, hi))
}

/// A date as RFC 3339 UTC (civil-from-days, H. Hinnant's algorithm; no date crate for one line).
pub fn rfc3339(t: std::time::SystemTime) -> String {
    let secs = t.duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem / 60 % 60, rem % 60)
}

/// Runs the calibration (root: `FITRIM` and a fair measurement need it).
pub fn calibrate(plan: &CalPlan, progress: &mut dyn FnMut(CalProgress)) -> Result<Calibration, BenchError> {
    if !nix::unistd::geteuid().is_root() {
        return Err(BenchError::Step("calibration needs root (FITRIM, the device's queue in sysfs)".into()));
    }
    if plan.reps < 2 {
        return Err(BenchError::Step("--reps must be at least 2 (the spread is the range of the repetitions)".into()));
    }
    if plan.file_bytes < 64 * MIB as u64 {
        return Err(BenchError::Step("the scratch file must be at least 64 MiB".into()));
    }
    let root = Path::new("/");
    let work = WorkDir(plan.dir.join(format!("forefront-calibrate-{}", std::process::id())));
    std::fs::create_dir_all(&work.0).map_err(io(&work.0, "create"))?;
    let queue = block::queue_dir_for_path(root, &work.0)?;
    let disk = block::disk_name(&queue);
    let (original, available) = block::scheduler(&queue)?;
    let _sched = match &plan.scheduler {
        Some(want) if *want != original => {
            if !available.iter().any(|a| a == want) {
                return Err(BenchError::Step(format!(
                    "{}: scheduler {want} not offered (available: {})",
                    queue.display(),
                    available.join(" ")
                )));
            }
            block::set_scheduler(&queue, want)?;
            Some(crate::runner::SchedGuard { queue: queue.clone(), original: original.clone() })
        }
        _ => None,
    };
    let sched = plan.scheduler.clone().unwrap_or(original);
    let (qd, qd_from) = block::queue_depth(&queue)?;
    let max_kb: usize = block::queue_attr(&queue, "max_sectors_kb")?
        .trim()
        .parse()
        .map_err(|e| BenchError::Step(format!("{}/max_sectors_kb: {e}", queue.display())))?;
    // A multiple of 4 KiB, at least 64 KiB, at most MAX_REQUEST and a sixteenth of the file.
    let big = (max_kb * 1024).clamp(16 * KIB4, MAX_REQUEST.min(plan.file_bytes as usize / 16)) / KIB4 * KIB4;
    let capacity = block::capacity_bytes(&queue)?;
    // What the kernel's schedulers read (`blk_queue_nonrot`): "1" or "0".
    let rotational = block::queue_attr(&queue, "rotational")?.trim() == "1";
    let depth = plan.depth.unwrap_or(qd as usize).clamp(1, MAX_DEPTH);

    progress(CalProgress::Setup("writing the scratch file"));
    let path = work.0.join("scratch.dat");
    crate::fixture::write_file(&path, plan.file_bytes, 7)?;
    check_interrupt()?;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(&path)
        .map_err(io(&path, "open O_DIRECT"))?;
    let s = Scratch { file, path: path.clone(), len: plan.file_bytes / MIB as u64 * MIB as u64 };
    let fs_root = File::open(&work.0).map_err(io(&work.0, "open"))?;

    progress(CalProgress::Start { total: plan.reps as usize * STEPS.len() });
    let mut reps = vec![];
    let mut trim_ok = true;
    for rep in 0..plan.reps {
        let (f, ok) = one_rep(&s, &disk, &fs_root, plan, depth, big, rep, progress)?;
        trim_ok &= ok;
        reps.push(f);
    }

    let (host, kernel) = procfs::uname(root)?;
    let mut fields = std::collections::BTreeMap::new();
    let value = |name: &str| -> f64 {
        let i = reps[0].iter().position(|(n, _)| *n == name).expect("a known figure");
        over_reps(&reps, i).expect("measured in every repetition").0
    };
    for (i, (name, _)) in reps[0].iter().enumerate() {
        let Some((med, lo, hi)) = over_reps(&reps, i) else { continue };
        let (source, how) = if *name == "discard_us_per_mib" && !trim_ok {
            ("assumed", "FITRIM is not supported here (no discard on this file system or device): 0".to_owned())
        } else {
            let (s, h) = how(name, depth, plan.ops, big);
            (s, h.to_owned())
        };
        fields.insert(name.to_string(), Measured { source: source.into(), value: med, min: lo, max: hi, how });
    }
    let fixed = |v: f64, how: String| Measured { source: "measured".into(), value: v, min: v, max: v, how };
    fields.insert("queue_depth".into(), fixed(qd as f64, format!("{}", qd_from.display())));
    fields.insert("max_sectors_kb".into(), fixed(max_kb as f64, format!("{}/max_sectors_kb", queue.display())));
    fields.insert("rotational".into(), fixed(f64::from(u8::from(rotational)), format!("{}/rotational", queue.display())));
    fields.insert(
        "capacity_gib".into(),
        fixed((capacity >> 30).max(1) as f64, format!("{}/size", queue.parent().unwrap_or(&queue).display())),
    );
    fields.insert(
        "starvation_ms".into(),
        Measured {
            source: "assumed".into(),
            value: 0.001,
            min: 0.001,
            max: 0.001,
            how: "1 us: commands served in arrival order (no reads-before-writes class order in a host's disk)".into(),
        },
    );
    fields.insert(
        "write_buffer_kib".into(),
        Measured {
            source: "assumed".into(),
            value: 0.0,
            min: 0.0,
            max: 0.0,
            how: "0: the measured write completion times are the costs, whatever cache is behind them".into(),
        },
    );
    let target = format!(
        "{disk} ({sched}; write_cache {}, fua {}), file system of {}",
        block::queue_attr(&queue, "write_cache").unwrap_or_else(|_| "?".into()),
        block::queue_attr(&queue, "fua").unwrap_or_else(|_| "?".into()),
        plan.dir.display()
    );
    let read_seq = value("read_seq_mb_s");
    let write_seq = value("write_seq_mb_s");
    let device = FlashParams {
        name: plan.name.clone().unwrap_or_else(|| format!("{host}-{disk}")),
        kind: FlashKind::Disk,
        description: format!("{disk} on {host}, measured by forefront bench calibrate"),
        queue_depth: (qd as usize).clamp(1, 256),
        channels: value("channels") as usize,
        read_seq_mb_s: read_seq,
        read_rand_iops: value("read_rand_iops"),
        write_seq_mb_s: write_seq,
        write_rand_iops: value("write_rand_iops"),
        bus_mb_s: read_seq.max(write_seq),
        cmd_overhead_us: value("cmd_overhead_us"),
        write_buffer_kib: 0,
        flush_overhead_us: value("flush_overhead_us"),
        discard_us_per_mib: if trim_ok { value("discard_us_per_mib") } else { 0.0 },
        capacity_gib: (capacity >> 30).max(1),
        starvation_ms: 0.001,
        nv_buffer_kib: 0,
        nv_buffer_mb_s: 0.0,
        write_streams: 0,
        service_cv: value("service_cv"),
        program_unit_us: 0.0,
        read_depth_mb_s: value("read_max_seq_depth_mb_s"),
        write_depth_mb_s: value("write_max_seq_depth_mb_s"),
        // Seen in a block trace (scripts/twin-probe, docs/twin.md), not measured by a step here.
        batch_completion: false,
        rotational,
        ftl: None,
        provenance: Some(DeviceProvenance {
            tool: format!("forefront bench calibrate {}", env!("CARGO_PKG_VERSION")),
            host,
            kernel,
            date: rfc3339(std::time::SystemTime::now()),
            target: target.clone(),
            reps: plan.reps,
            fields,
        }),
    };
    device.validate().map_err(|e| BenchError::Step(format!("the calibrated device is not valid: {e}")))?;
    Ok(Calibration { device, target })
}

/// The figures of a calibration with their spread, as a table.
pub fn table(c: &Calibration) -> String {
    use std::fmt::Write;
    let p = c.device.provenance.as_ref().expect("provenance");
    let mut s = format!("{} on {} (kernel {}), {}, {} repetitions\n", p.target, p.host, p.kernel, p.date, p.reps);
    let _ = writeln!(s, "{:<28} {:>12} {:>12} {:>12} {:>8}  source", "figure", "median", "min", "max", "spread");
    for (name, m) in &p.fields {
        let rel = if m.value != 0.0 { format!("{:.1}%", 100.0 * m.spread() / m.value.abs()) } else { "-".into() };
        let _ = writeln!(s, "{name:<28} {:>12.3} {:>12.3} {:>12.3} {rel:>8}  {}", m.value, m.min, m.max, m.source);
    }
    s
}

/// Whether two calibrations agree within their own noise: for every figure measured in both,
/// the medians differ by at most the larger of the two ranges of repetitions. Returns the
/// figures that do not.
pub fn disagreements(a: &FlashParams, b: &FlashParams) -> Vec<String> {
    let (Some(pa), Some(pb)) = (&a.provenance, &b.provenance) else { return vec!["no provenance".into()] };
    let mut out = vec![];
    for (name, ma) in &pa.fields {
        let Some(mb) = pb.fields.get(name) else {
            out.push(format!("{name}: missing in the second"));
            continue;
        };
        let allowed = ma.spread().max(mb.spread());
        let diff = (ma.value - mb.value).abs();
        if diff > allowed {
            out.push(format!("{name}: {} vs {} differ by {diff:.3} > spread {allowed:.3}", ma.value, mb.value));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prov(fields: &[(&str, f64, f64, f64)]) -> FlashParams {
        let mut d = forefront_model::flash::FlashParams {
            provenance: Some(DeviceProvenance::default()),
            ..serde_json::from_value(serde_json::json!({
                "name": "t", "kind": "disk", "description": "", "queue_depth": 1, "channels": 1,
                "read_seq_mb_s": 1.0, "read_rand_iops": 1.0, "write_seq_mb_s": 1.0, "write_rand_iops": 1.0,
                "bus_mb_s": 1.0, "cmd_overhead_us": 0.0, "write_buffer_kib": 0, "flush_overhead_us": 0.0,
                "discard_us_per_mib": 0.0, "capacity_gib": 1
            }))
            .unwrap()
        };
        let p = d.provenance.as_mut().unwrap();
        for (n, v, lo, hi) in fields {
            p.fields
                .insert(n.to_string(), Measured { source: "measured".into(), value: *v, min: *lo, max: *hi, how: String::new() });
        }
        d
    }

    #[test]
    fn a_figure_some_repetitions_could_not_measure_spreads_over_the_others_and_none_is_left_out() {
        let reps: Vec<Figures> =
            vec![vec![("a", 1.0), ("b", f64::NAN)], vec![("a", 3.0), ("b", f64::NAN)], vec![("a", f64::NAN), ("b", f64::NAN)]];
        assert_eq!(over_reps(&reps, 0), Some((2.0, 1.0, 3.0)));
        assert_eq!(over_reps(&reps, 1), None, "no repetition measured it: not written");
    }

    #[test]
    fn disagreement_is_a_difference_beyond_either_runs_spread() {
        let a = prov(&[("x", 10.0, 9.0, 11.0), ("y", 5.0, 5.0, 5.0)]);
        let b = prov(&[("x", 11.5, 11.0, 12.0), ("y", 5.0, 5.0, 5.0)]);
        assert!(disagreements(&a, &b).is_empty(), "1.5 <= a's range 2");
        let c = prov(&[("x", 12.5, 12.0, 13.0), ("y", 5.1, 5.0, 5.2)]);
        let d = disagreements(&a, &c);
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(d[0].starts_with("x: 10 vs 12.5"), "{d:?}");
        assert_eq!(disagreements(&a, &prov(&[("x", 10.0, 9.0, 11.0)])), ["y: missing in the second"]);
    }

    #[test]
    fn dates_are_rfc3339_utc() {
        use std::time::{Duration, UNIX_EPOCH};
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(UNIX_EPOCH + Duration::from_secs(1_795_651_200 + 3_723)), "2026-11-26T01:02:03Z");
        assert_eq!(rfc3339(UNIX_EPOCH + Duration::from_secs(951_782_400)), "2000-02-29T00:00:00Z");
    }

    #[test]
    fn a_disk_stat_line_gives_requests_and_sectors_and_bad_ones_name_the_file() {
        let p = Path::new("/sys/block/vda/stat");
        let line = "  120  3  9600  40  8  0  65536  12  0  50  52  0  0  0  0  0  0\n";
        assert_eq!(parse_disk_stat(line, p).unwrap(), [120, 3, 9600, 40, 8, 0, 65536]);
        let short = parse_disk_stat("1 2 3", p).unwrap_err().to_string();
        assert!(short.contains("/sys/block/vda/stat") && short.contains("fewer than 7"), "{short}");
        let bad = parse_disk_stat("1 2 x 4 5 6 7", p).unwrap_err().to_string();
        assert!(bad.contains("/sys/block/vda/stat") && bad.contains("`x`"), "{bad}");
    }

    #[test]
    fn large_buffers_are_mapped_on_huge_page_boundaries_and_small_ones_on_pages() {
        let mut big = Aligned::new(4 * MIB, 3);
        let mut small = Aligned::new(MIB, 3);
        assert!(matches!(big.mem, Mem::Map { .. }), "a 4 MiB buffer is its own mapping");
        assert!(matches!(small.mem, Mem::Heap(_)));
        assert_eq!(big.get(4 * MIB).as_ptr() as usize % HUGE, 0);
        assert_eq!(small.get(MIB).as_ptr() as usize % KIB4, 0);
        // The same pattern either way (the seed decides the bytes, not the memory).
        let mut expect = vec![0u8; MIB];
        Pattern::new(3).fill(&mut expect);
        assert_eq!(&small.get(MIB)[..], &expect[..]);
        let mut expect4 = vec![0u8; 4 * MIB];
        Pattern::new(3).fill(&mut expect4);
        assert_eq!(&big.get(4 * MIB)[..], &expect4[..]);
    }

    #[test]
    fn random_offsets_stay_inside_and_aligned() {
        let mut r = Offsets(12345);
        for _ in 0..1000 {
            let o = r.next(64 << 20, 4096);
            assert!(o < 64 << 20 && o % 4096 == 0);
        }
    }

    /// The run's probe of the copy (twin27) times both directions on its own file and leaves
    /// it clean and whole, so a sample after it starts with no dirty page of its making.
    #[test]
    fn a_copy_probe_times_both_directions_and_leaves_its_file_clean() {
        let t = tempfile::tempdir().unwrap();
        let path = t.path().join("probe.dat");
        make_probe_file(&path).unwrap();
        let p = copy_probe(&path).unwrap();
        // A 4 KiB page's copy takes between a nanosecond and a millisecond on any machine.
        for (what, us) in [("write", p.write_page_us), ("read", p.read_page_us)] {
            assert!(us > 0.001 && us < 1000.0, "{what}: {us} us a page");
        }
        assert_eq!(std::fs::metadata(&path).unwrap().len(), (COPY_PROBE_MIB * MIB) as u64);
        // Nothing of the probe's is left dirty: POSIX_FADV_DONTNEED evicts clean pages only
        // (dirty ones it hands to write-back and keeps), so none stays resident. On a file
        // system that keeps its pages anyway (tmpfs) the check cannot be made.
        let f = File::open(&path).unwrap();
        drop_cached(&f, &path).unwrap();
        let resident = forefront_agent::prefetch::resident_ranges(&f, (COPY_PROBE_MIB * MIB) as u64, u64::MAX).unwrap();
        let kept: u64 = resident.iter().map(|r| r.1).sum();
        let tmpfs = nix::sys::statfs::statfs(t.path()).is_ok_and(|s| s.filesystem_type() == nix::sys::statfs::TMPFS_MAGIC);
        if tmpfs {
            eprintln!("SKIPPED the probe's clean-file check: {} is on tmpfs, which keeps clean pages", t.path().display());
        } else {
            assert_eq!(kept, 0, "the probe left {kept} bytes dirty");
        }
        assert!(copy_probe(&t.path().join("missing.dat")).unwrap_err().to_string().contains("missing.dat"));
    }
}
