//! A switched-to app's working set read back before it asks (`[prefetch]`).
//!
//! BFQ's `low_latency` protects a *new* I/O queue, so it helps a start-up; an app that is
//! already running and comes back to the front (a switch) gets no such help, and its pages
//! may have left the page cache while it was in the background (the background's reads and
//! writes evicted them, or a `drop_caches`). The app then faults them back one at a time, each
//! read waiting behind whatever the background has in the device. This is the case Windows'
//! SuperFetch was made for (it "restores" the pages of the apps in use after a memory-hungry
//! background job evicted them; Russinovich, Solomon and Ionescu, *Windows Internals*, 6th ed.,
//! part 2, ch. 10, "Proactive Memory Management (SuperFetch)"), and Android's `iorapd` does the
//! same for a start-up from a recorded trace (AOSP `frameworks/base/startop/iorap`).
//!
//! What the agent does:
//!
//! - **Record** ([`record`]): when an app named foreground by pid stops being the foreground,
//!   or a process is sent to the background by pid (`agent scope PID`), the agent notes which
//!   pages of the regular files the app's processes have open
//!   (`/proc/PID/fd`) or mapped (`/proc/PID/map_files`) are in the page cache (`mincore(2)`
//!   over a read-only, never-touched mapping), at most `max_mb` of them and `max_files` files.
//!   That is a superset of the app's own working set: a page another process cached in one of
//!   those files counts too (the page cache does not say who read a page).
//! - **Restore** ([`spawn_restore`]): when a request names that app foreground again (the same
//!   pid and process start time), a thread of the agent (`prefetch.threads` of them) reopens
//!   the files the app still has open or mapped (matched by device and inode: a file replaced
//!   under the same name is not read) and asks the kernel to read the recorded ranges back
//!   (`posix_fadvise(WILLNEED)`: the kernel's read-ahead, which submits the reads and returns;
//!   a page still cached costs a lookup). The thread runs at the real-time I/O class
//!   (`ioprio_set`, level 4), so BFQ and mq-deadline serve its reads ahead of best-effort and
//!   idle-class I/O, including the kernel's write-back; the app's own reads of a page being
//!   read wait for that read instead of issuing their own, one at a time. It keeps at most
//!   [`RESTORE_WINDOW`] requests in flight (shared by its threads, [`Window`]): before asking
//!   for more it polls, without blocking, until enough of the ranges it asked for are readable,
//!   since BFQ trims a queue that holds more than its weighted share of the request tags to one
//!   tag, which stalled an unbounded restore for 108–170 ms in the middle of a switch (traced;
//!   the constant's doc), and a blocking wait on a page the app is reading waits behind BFQ's
//!   idling ([`ready`]).
//!
//! Invariants: recording only reads (`open(O_RDONLY | O_NONBLOCK | O_NOATIME)` of regular files
//! only, so a FIFO or a device is never opened; a mapping that is never touched, so nothing is
//! faulted in); no file stays open between a record and its restore (a deleted file's space is
//! not held); a restore asks for at most what was recorded, which is at most `max_mb`; nothing
//! the agent journals is touched (the thread's I/O class dies with it), so a crash mid-restore
//! leaves nothing to restore. Anonymous memory (a heap swapped out) is not covered: only file
//! pages have a file to read them back from.

use std::collections::BTreeSet;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How much one record may hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Bytes of resident pages recorded, over every file (the restore reads at most this).
    pub max_bytes: u64,
    /// Files looked at (open files first, then mapped ones, in `/proc`'s order).
    pub max_files: usize,
}

/// One file's resident pages when the app left the foreground.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileSet {
    pub dev: u64,
    pub ino: u64,
    /// (byte offset, length) of each run of resident pages, in file order, page-aligned.
    pub ranges: Vec<(u64, u64)>,
}

/// What an app had in the page cache when it left the foreground.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WorkingSet {
    pub files: Vec<FileSet>,
    /// Files looked at (including those with nothing resident).
    pub files_seen: usize,
}

impl WorkingSet {
    /// Bytes recorded (page-rounded).
    pub fn bytes(&self) -> u64 {
        self.files.iter().flat_map(|f| &f.ranges).map(|(_, len)| len).sum()
    }
    pub fn ranges(&self) -> usize {
        self.files.iter().map(|f| f.ranges.len()).sum()
    }

    /// The ranges dealt out to `n` parts in turn (over every file, in file order), each part
    /// keeping only the files it has ranges of: for `n` restore threads. `n` = 0 counts as 1.
    pub fn split(&self, n: usize) -> Vec<WorkingSet> {
        let n = n.max(1);
        let mut parts = vec![WorkingSet { files: vec![], files_seen: self.files_seen }; n];
        let mut next = 0;
        for f in &self.files {
            let mut mine: Vec<Vec<(u64, u64)>> = vec![vec![]; n];
            for &r in &f.ranges {
                mine[next].push(r);
                next = (next + 1) % n;
            }
            for (part, ranges) in parts.iter_mut().zip(mine) {
                if !ranges.is_empty() {
                    part.files.push(FileSet { dev: f.dev, ino: f.ino, ranges });
                }
            }
        }
        parts.retain(|p| !p.files.is_empty());
        parts
    }
}

/// What a restore did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Restored {
    /// Files of the record found open or mapped again, and reopened.
    pub files: usize,
    /// Files of the record the app no longer has (skipped).
    pub missing: usize,
    /// Bytes asked for.
    pub bytes: u64,
    /// `posix_fadvise` calls that failed (their ranges are skipped).
    pub failed: usize,
}

/// The regular files `pids` have open or mapped, each once (by device and inode), in order:
/// every process's open files, then every process's mapped files. Each comes with a path that
/// opens that very file (`/proc/PID/fd/N` or `/proc/PID/map_files/A-B`) while the process has it.
/// Processes that have gone, or whose entries cannot be read, contribute nothing.
pub fn files_of(root: &Path, pids: &[i32]) -> Vec<(u64, u64, PathBuf)> {
    let mut seen = BTreeSet::new();
    let mut out = vec![];
    let mut add = |path: PathBuf| {
        // metadata follows the magic link to the file itself, without opening it.
        if let Ok(md) = std::fs::metadata(&path) {
            if md.is_file() && seen.insert((md.dev(), md.ino())) {
                out.push((md.dev(), md.ino(), path));
            }
        }
    };
    for pid in pids {
        let dir = root.join(format!("proc/{pid}/fd"));
        let Ok(rd) = std::fs::read_dir(&dir) else { continue };
        let mut fds: Vec<u64> = rd.flatten().filter_map(|e| e.file_name().to_str()?.parse().ok()).collect();
        fds.sort_unstable();
        for fd in fds {
            add(dir.join(fd.to_string()));
        }
    }
    for pid in pids {
        let Ok(maps) = std::fs::read_to_string(root.join(format!("proc/{pid}/maps"))) else { continue };
        for line in maps.lines() {
            // start-end perms offset dev inode [path]
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() < 6 || f[4] == "0" || !f[5].starts_with('/') {
                continue;
            }
            add(root.join(format!("proc/{pid}/map_files/{}", f[0])));
        }
    }
    out
}

fn open_quietly(path: &Path) -> std::io::Result<std::fs::File> {
    let open = |flags| std::fs::OpenOptions::new().read(true).custom_flags(flags).open(path);
    // O_NOATIME needs the file's owner or CAP_FOWNER; without it the open is retried plainly.
    open(libc::O_NONBLOCK | libc::O_NOATIME).or_else(|_| open(libc::O_NONBLOCK))
}

fn page_size() -> u64 {
    // SAFETY: sysconf with a valid name has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as u64
    } else {
        4096
    }
}

/// The runs of `file`'s pages (of its first `size` bytes) that are in the page cache, as
/// (byte offset, length), at most `budget` bytes in all. Looked at through a read-only shared
/// mapping that is never touched, 1 GiB at a time.
pub fn resident_ranges(file: &std::fs::File, size: u64, budget: u64) -> std::io::Result<Vec<(u64, u64)>> {
    const WINDOW: u64 = 1 << 30;
    let page = page_size();
    let mut runs: Vec<(u64, u64)> = vec![];
    let mut total = 0u64;
    let mut vec = vec![];
    let mut off = 0u64;
    while off < size && total < budget {
        let len = (size - off).min(WINDOW);
        let pages = len.div_ceil(page) as usize;
        vec.clear();
        vec.resize(pages, 0u8);
        // SAFETY: a fresh read-only shared mapping of an open file, `len` > 0 bytes from a
        // page-aligned offset within the file; it is never dereferenced, only handed to
        // mincore (with a vector of one byte per page) and unmapped before the loop goes on.
        unsafe {
            let addr = libc::mmap(
                std::ptr::null_mut(),
                len as usize,
                libc::PROT_READ,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                off as libc::off_t,
            );
            if addr == libc::MAP_FAILED {
                return Err(std::io::Error::last_os_error());
            }
            let r = libc::mincore(addr, len as usize, vec.as_mut_ptr());
            let err = std::io::Error::last_os_error();
            libc::munmap(addr, len as usize);
            if r != 0 {
                return Err(err);
            }
        }
        for (i, v) in vec.iter().enumerate() {
            if v & 1 == 0 || total >= budget {
                continue;
            }
            let at = off + i as u64 * page;
            let take = page.min(size - at).min(budget - total).max(1);
            match runs.last_mut() {
                Some((start, l)) if *start + *l == at => *l += take,
                _ => runs.push((at, take)),
            }
            total += take;
        }
        off += len;
    }
    Ok(runs)
}

/// What `pids` (an app's processes) have resident in the files they have open or mapped.
pub fn record(root: &Path, pids: &[i32], limits: Limits) -> WorkingSet {
    let mut ws = WorkingSet::default();
    let mut total = 0u64;
    for (dev, ino, path) in files_of(root, pids).into_iter().take(limits.max_files) {
        if total >= limits.max_bytes {
            break;
        }
        ws.files_seen += 1;
        let Ok(file) = open_quietly(&path) else { continue };
        // The file opened must be the one looked at (a process can change its fds meanwhile).
        let Ok(md) = file.metadata() else { continue };
        if (md.dev(), md.ino()) != (dev, ino) || md.len() == 0 {
            continue;
        }
        let Ok(ranges) = resident_ranges(&file, md.len(), limits.max_bytes - total) else { continue };
        let bytes: u64 = ranges.iter().map(|(_, l)| l).sum();
        if bytes > 0 {
            total += bytes;
            ws.files.push(FileSet { dev, ino, ranges });
        }
    }
    ws
}

/// Reads `ws` back into the page cache: reopens each recorded file through `pids`' open and
/// mapped files and asks for its ranges with `posix_fadvise(WILLNEED)`, keeping at most `window`
/// requests' worth of them in flight ([`Window`]), stopping after `limit`.
pub fn restore(root: &Path, pids: &[i32], ws: &WorkingSet, limit: Duration, window: u64) -> Restored {
    let t0 = Instant::now();
    let mut out = Restored::default();
    let now: std::collections::BTreeMap<(u64, u64), PathBuf> =
        files_of(root, pids).into_iter().map(|(d, i, p)| ((d, i), p)).collect();
    let mut files: Vec<std::fs::File> = vec![];
    let mut win = Window::new(window);
    for f in &ws.files {
        let file = now
            .get(&(f.dev, f.ino))
            .and_then(|p| open_quietly(p).ok())
            .filter(|file| file.metadata().is_ok_and(|md| (md.dev(), md.ino()) == (f.dev, f.ino)));
        let Some(file) = file else {
            out.missing += 1;
            continue;
        };
        out.files += 1;
        files.push(file);
        let fi = files.len() - 1;
        for (off, len) in f.ranges.iter().flat_map(|&(o, l)| win.pieces(o, l)).collect::<Vec<_>>() {
            // Room in the window: ranges whose pages are all readable leave it (in any order);
            // until then the thread polls, never blocking on one page (below).
            while !win.room_for(len) {
                if t0.elapsed() >= limit {
                    return out;
                }
                win.complete(|(wf, woff, wlen)| ready(&files[wf], woff, wlen));
                if !win.room_for(len) {
                    std::thread::sleep(WINDOW_POLL);
                }
            }
            if t0.elapsed() >= limit {
                return out;
            }
            // SAFETY: plain syscall on an open descriptor with integer arguments.
            let r = unsafe {
                libc::posix_fadvise(files[fi].as_raw_fd(), off as libc::off_t, len as libc::off_t, libc::POSIX_FADV_WILLNEED)
            };
            if r == 0 {
                out.bytes += len;
                win.submitted(fi, off, len);
            } else {
                out.failed += 1;
            }
        }
    }
    out
}

/// Whether the reads of `file`'s range (`off`, `len`) have completed: a one-byte
/// `preadv2(RWF_NOWAIT)` of the range's first page and of the last page of each
/// [`WINDOW_CHUNK`] of it succeeds only where the page is in the cache and up to date (a page
/// under read is locked and answers `EAGAIN`). Never blocks: a blocking read of a page that the
/// *app* is reading waits for the app's best-effort request, which BFQ may hold back for the
/// 20 ms it idles on a weight-raised queue that just emptied (the restore's own: traced, 2–3
/// stalls of 20.3–22.4 ms in every switch of the cell, and 54–75 ms in two). An error other than
/// `EAGAIN` (end of file, an I/O error) counts as done: such a page holds nothing up.
fn ready(file: &std::fs::File, off: u64, len: u64) -> bool {
    let end = off + len;
    let mut at = off;
    loop {
        let next = (at + WINDOW_CHUNK).min(end);
        let probe = [at, next.saturating_sub(1).max(at)];
        for o in probe {
            let mut b = 0u8;
            let iov = libc::iovec { iov_base: (&mut b as *mut u8).cast(), iov_len: 1 };
            // SAFETY: one iovec of one byte pointing at a live local; a valid descriptor.
            let r = unsafe { libc::preadv2(file.as_raw_fd(), &iov, 1, o as libc::off_t, libc::RWF_NOWAIT) };
            if r < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EAGAIN) {
                return false;
            }
        }
        if next >= end {
            return true;
        }
        at = next;
    }
}

/// How long a restore thread sleeps between two looks at its requests in flight when its
/// window is full.
pub const WINDOW_POLL: Duration = Duration::from_micros(200);

/// The request size a [`Window`] counts a range in: a range asks for `len / WINDOW_CHUNK`
/// requests, rounded up. Read-ahead builds requests of up to the disk's `max_sectors_kb` (4 MiB
/// on this VM's vda, 128–1280 KiB on most disks); counting in 128 KiB over-counts a large
/// range's requests, which keeps fewer in flight, never more.
pub const WINDOW_CHUNK: u64 = 128 << 10;

/// Requests one restore thread keeps in flight at most, for one thread; `threads` threads
/// share it (each at least 4).
///
/// Why a window: BFQ (Linux 5.17 and later, `bfqq_request_over_limit` in
/// `block/bfq-iosched.c`) trims a queue's request-tag depth to **one** once the requests it has
/// allocated reach its share of `nr_requests`, weighted by its class's weights
/// (`nr_requests × weight ÷ the sum of the weights of its class's busy queues`). An unbounded
/// `WILLNEED` of a thousand ranges reaches it in one go: traced on this VM's vda (the blk tracer
/// with BFQ's messages, the S suite's switch cell under 5 readers + 5 writers), the restore
/// thread logged "too many requests: allocated 128 limit 128" (and 85 of 85) and then waited
/// 108–170 ms for one tag in each slow switch, while the app read its pages itself. 32 stays
/// under that share with up to eight real-time queues of equal weight at the default 256 tags.
pub const RESTORE_WINDOW: u64 = 32;

/// The window of one of `threads` restore threads.
pub fn window_per_thread(threads: usize) -> u64 {
    (RESTORE_WINDOW / threads.max(1) as u64).max(4)
}

/// The bookkeeping of a restore's requests in flight: the ranges asked for and how many
/// requests each counts for. A step function over a completion test: [`Window::room_for`] says
/// whether the next range may be asked for, [`Window::complete`] drops the ranges a test says
/// are done, in any order, [`Window::submitted`] records a range asked for.
///
/// Invariants (tested): the ranges in flight count for at most the window, except one range
/// that alone counts for more, which is asked for only with nothing else in flight; a range
/// that does not complete (a page the app is reading at a lower priority) holds only its own
/// place, never the others'.
#[derive(Debug)]
pub struct Window {
    cap: u64,
    used: u64,
    ranges: Vec<(usize, u64, u64, u64)>,
}

impl Window {
    /// A window of `cap` requests (0 counts as 1).
    pub fn new(cap: u64) -> Window {
        Window { cap: cap.max(1), used: 0, ranges: vec![] }
    }

    fn requests(len: u64) -> u64 {
        len.div_ceil(WINDOW_CHUNK).max(1)
    }

    /// A range cut into the pieces it is asked for in: at most half the window each (one
    /// `WILLNEED` of a large file would otherwise fill the window by itself, and wait for every
    /// range in flight, a stuck one included, before it could go).
    pub fn pieces(&self, off: u64, len: u64) -> Vec<(u64, u64)> {
        let most = (self.cap / 2).max(1).saturating_mul(WINDOW_CHUNK);
        let end = off + len;
        (off..end).step_by(most as usize).map(|o| (o, most.min(end - o))).collect()
    }

    /// Whether a range of `len` bytes may be asked for now.
    pub fn room_for(&self, len: u64) -> bool {
        self.ranges.is_empty() || self.used + Self::requests(len) <= self.cap
    }

    /// Drops the ranges (file index, offset, length) that `done` says have completed.
    pub fn complete(&mut self, mut done: impl FnMut((usize, u64, u64)) -> bool) {
        let used = &mut self.used;
        self.ranges.retain(|&(f, o, l, n)| {
            let keep = !done((f, o, l));
            if !keep {
                *used -= n;
            }
            keep
        });
    }

    /// Records a range asked for.
    pub fn submitted(&mut self, file: usize, off: u64, len: u64) {
        let n = Self::requests(len);
        self.used += n;
        self.ranges.push((file, off, len, n));
    }

    /// Requests in flight, as counted.
    pub fn in_flight(&self) -> u64 {
        self.used
    }
}

/// The restore's I/O class: real time, level 4 (the middle of its eight levels).
pub const RESTORE_IOPRIO: forefront_sysfs::ioprio::IoPrio = forefront_sysfs::ioprio::IoPrio { class: 1, level: 4 };

/// How long a restore may go on asking for ranges (it only submits reads; this bounds a
/// thread stuck behind a saturated queue).
pub const RESTORE_LIMIT: Duration = Duration::from_secs(2);

/// Restores `ws` on `threads` threads of its own (its ranges dealt out among them,
/// [`WorkingSet::split`]) at [`RESTORE_IOPRIO`], `pids` found from `pid` and its descendants
/// when each thread starts; each logs what it did through `log`. With `join`, a cgroup v1
/// `tasks` file, each thread first moves itself (its tid alone) into that group, so that its
/// reads are the group's. The threads are not joined: each ends by itself within
/// [`RESTORE_LIMIT`] plus the time of one `posix_fadvise` (its polls for room in its window,
/// [`window_per_thread`], stop at that limit too).
pub fn spawn_restore(
    root: PathBuf,
    pid: i32,
    ws: WorkingSet,
    threads: usize,
    join: Option<PathBuf>,
    log: fn(&str),
) -> std::io::Result<()> {
    let parts = ws.split(threads);
    let n = parts.len();
    for (k, part) in parts.into_iter().enumerate() {
        let root = root.clone();
        let join = join.clone();
        std::thread::Builder::new().name("ff-prefetch".into()).spawn(move || {
            let t0 = Instant::now();
            if let Some(tasks) = &join {
                // SAFETY: gettid has no arguments and cannot fail.
                let tid = unsafe { libc::gettid() };
                if let Err(e) = forefront_sysfs::write_value(tasks, &tid.to_string()) {
                    log(&format!("prefetch: pid {pid}: the restore stays in the agent's group: {e}"));
                }
            }
            let class = match forefront_sysfs::ioprio::set(0, RESTORE_IOPRIO) {
                Ok(()) => "real-time I/O class",
                Err(_) => "the agent's I/O class (ioprio_set refused)",
            };
            let pids = app_pids(&root, pid);
            let r = restore(&root, &pids, &part, RESTORE_LIMIT, window_per_thread(n));
            let which = if n > 1 { format!(" (thread {} of {n})", k + 1) } else { String::new() };
            log(&format!(
                "prefetch: pid {pid}{which}: {:.1} MiB asked for in {} of {} file(s) ({} gone, {} refused) in {:.1} ms, {class}",
                r.bytes as f64 / (1 << 20) as f64,
                r.files,
                part.files.len(),
                r.missing,
                r.failed,
                t0.elapsed().as_secs_f64() * 1000.0
            ));
        })?;
    }
    Ok(())
}

/// `pid` and its descendants (at most 4096 processes): an app's processes.
pub fn app_pids(root: &Path, pid: i32) -> Vec<i32> {
    let (mut todo, mut seen) = (vec![pid], vec![pid]);
    while let Some(p) = todo.pop() {
        for kid in forefront_sysfs::procfs::children(root, p).unwrap_or_default() {
            if seen.len() >= 4096 || seen.contains(&kid) {
                continue;
            }
            seen.push(kid);
            todo.push(kid);
        }
    }
    seen
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Seek, SeekFrom, Write};

    const PAGE: u64 = 4096;

    #[test]
    fn each_restore_thread_joins_the_group_it_is_given_by_its_own_tid() {
        let t = tempfile::tempdir().unwrap();
        let tasks = t.path().join("tasks");
        std::fs::write(&tasks, "").unwrap();
        let ws = WorkingSet { files: vec![FileSet { dev: 1, ino: 10, ranges: vec![(0, PAGE)] }], files_seen: 1 };
        // No /proc under this root: the thread finds no file to read and ends.
        spawn_restore(t.path().to_path_buf(), 4242, ws, 1, Some(tasks.clone()), |_| {}).unwrap();
        let t0 = Instant::now();
        let mut text = String::new();
        while text.is_empty() && t0.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(5));
            text = std::fs::read_to_string(&tasks).unwrap();
        }
        let tid: i32 = text.trim().parse().unwrap_or_else(|_| panic!("a tid in {tasks:?}, got {text:?}"));
        assert_ne!(tid, std::process::id() as i32, "the thread's own id, not the process's");
    }

    #[test]
    fn a_split_deals_every_range_out_once_and_keeps_only_files_with_ranges() {
        let ws = WorkingSet {
            files: vec![
                FileSet { dev: 1, ino: 10, ranges: vec![(0, PAGE), (8 * PAGE, PAGE), (16 * PAGE, 2 * PAGE)] },
                FileSet { dev: 1, ino: 11, ranges: vec![(0, PAGE)] },
            ],
            files_seen: 3,
        };
        assert_eq!(ws.split(1), vec![ws.clone()]);
        assert_eq!(ws.split(0), vec![ws.clone()], "0 counts as 1");
        let parts = ws.split(3);
        assert_eq!(parts.len(), 3);
        assert_eq!(
            parts[0].files,
            vec![FileSet { dev: 1, ino: 10, ranges: vec![(0, PAGE)] }, FileSet { dev: 1, ino: 11, ranges: vec![(0, PAGE)] }]
        );
        assert_eq!(parts[1].files, vec![FileSet { dev: 1, ino: 10, ranges: vec![(8 * PAGE, PAGE)] }]);
        assert_eq!(parts[2].files, vec![FileSet { dev: 1, ino: 10, ranges: vec![(16 * PAGE, 2 * PAGE)] }]);
        assert_eq!(parts.iter().map(WorkingSet::bytes).sum::<u64>(), ws.bytes());
        assert_eq!(ws.split(8).len(), 4, "no empty parts");
    }

    /// Whether each of `ranges` is wholly in the page cache.
    fn cached(file: &std::fs::File, size: u64, ranges: &[(u64, u64)]) -> Vec<bool> {
        let res = resident_ranges(file, size, u64::MAX).unwrap();
        ranges.iter().map(|&(o, l)| res.iter().any(|&(ro, rl)| ro <= o && o + l <= ro + rl)).collect()
    }

    fn evict(file: &std::fs::File, size: u64) {
        // SAFETY: plain syscall on an open descriptor.
        unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, size as libc::off_t, libc::POSIX_FADV_DONTNEED) };
    }

    /// A 4 MiB file on a disk-backed file system (beside the build), written and synced, then
    /// evicted: `None` (with a message) where its pages cannot be evicted (a tmpfs).
    fn cold_file() -> Option<(tempfile::TempDir, std::fs::File, u64)> {
        let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target");
        let dir = tempfile::tempdir_in(if base.is_dir() { base } else { std::env::temp_dir() }).unwrap();
        let size = 4 << 20;
        let mut f =
            std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(dir.path().join("ws")).unwrap();
        f.write_all(&vec![7u8; size as usize]).unwrap();
        f.sync_all().unwrap();
        evict(&f, size);
        if cached(&f, size, &[(0, size)])[0] || !resident_ranges(&f, size, u64::MAX).unwrap().is_empty() {
            eprintln!("SKIP: the pages of {} cannot be evicted here (tmpfs?)", dir.path().display());
            return None;
        }
        Some((dir, f, size))
    }

    #[test]
    fn resident_ranges_are_the_pages_read_coalesced_and_within_budget() {
        let Some((_dir, mut f, size)) = cold_file() else { return };
        // pages 3..5 and 10 read: two runs
        for (page, n) in [(3u64, 2u64), (10, 1)] {
            f.seek(SeekFrom::Start(page * PAGE)).unwrap();
            let mut buf = vec![0u8; (n * PAGE) as usize];
            f.read_exact(&mut buf).unwrap();
        }
        let runs = resident_ranges(&f, size, u64::MAX).unwrap();
        // read-ahead may bring neighbours in: the pages read are within the runs, and the
        // runs are ordered and disjoint
        assert_eq!(cached(&f, size, &[(3 * PAGE, 2 * PAGE), (10 * PAGE, PAGE)]), vec![true, true], "{runs:?}");
        assert!(runs.windows(2).all(|w| w[0].0 + w[0].1 < w[1].0), "{runs:?}");
        let total: u64 = runs.iter().map(|r| r.1).sum();
        let capped = resident_ranges(&f, size, PAGE).unwrap();
        assert_eq!(capped.iter().map(|r| r.1).sum::<u64>(), PAGE.min(total));
    }

    #[test]
    fn a_recorded_working_set_is_read_back_after_eviction_and_not_without_the_restore() {
        let Some((_dir, mut f, size)) = cold_file() else { return };
        let touched = [(PAGE, PAGE), (200 * PAGE, 4 * PAGE), (900 * PAGE, PAGE)];
        for &(o, l) in &touched {
            f.seek(SeekFrom::Start(o)).unwrap();
            let mut buf = vec![0u8; l as usize];
            f.read_exact(&mut buf).unwrap();
        }
        let me = [std::process::id() as i32];
        let ws = record(Path::new("/"), &me, Limits { max_bytes: 1 << 30, max_files: 4096 });
        let md = f.metadata().unwrap();
        let mine = ws.files.iter().find(|s| (s.dev, s.ino) == (md.dev(), md.ino())).expect("the open file is recorded");
        let covered = |o: u64, l: u64| mine.ranges.iter().any(|&(ro, rl)| ro <= o && o + l <= ro + rl);
        assert!(touched.iter().all(|&(o, l)| covered(o, l)), "{:?}", mine.ranges);
        // evicted (the background's doing): without a restore the pages stay out
        evict(&f, size);
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(cached(&f, size, &touched), vec![false; 3], "nothing brings them back by itself");
        // the restore asks for them; the reads complete shortly after
        let only_mine = WorkingSet { files: vec![mine.clone()], files_seen: 1 };
        // a window of one request: each range is waited for before the next is asked for
        let r = restore(Path::new("/"), &me, &only_mine, RESTORE_LIMIT, 1);
        assert_eq!((r.files, r.missing, r.failed), (1, 0, 0));
        assert_eq!(r.bytes, only_mine.bytes());
        let t0 = Instant::now();
        while cached(&f, size, &touched) != vec![true; 3] && t0.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(cached(&f, size, &touched), vec![true; 3], "the restore read the working set back");
    }

    /// Runs a window of `cap` over ranges of `lens` bytes, each completing `lat` polls after it
    /// was asked for, except the ranges in `stuck`, which complete only after `stuck_for` polls
    /// (a page the app is reading). Returns the most requests ever in flight and the polls taken.
    fn run_window(cap: u64, lens: &[u64], lat: u64, stuck: &[usize], stuck_for: u64) -> (u64, u64) {
        let mut w = Window::new(cap);
        // each piece named by its index (its "offset" in the window) and its range's
        let pieces: Vec<(usize, u64)> =
            lens.iter().enumerate().flat_map(|(i, &l)| w.pieces(0, l).into_iter().map(move |(_, pl)| (i, pl))).collect();
        let mut asked_at = vec![0u64; pieces.len()];
        let (mut peak, mut now) = (0, 0u64);
        for (i, &(range, len)) in pieces.iter().enumerate() {
            while !w.room_for(len) {
                now += 1;
                w.complete(|(_, off, _)| {
                    let k = off as usize;
                    now - asked_at[k] >= if stuck.contains(&pieces[k].0) { stuck_for } else { lat }
                });
                assert!(now < 1_000_000, "the window never made room");
            }
            assert!(Window::requests(len) <= (cap / 2).max(1), "piece {i} of range {range}: {len} B");
            asked_at[i] = now;
            w.submitted(0, i as u64, len);
            assert!(w.in_flight() <= cap, "piece {i}: {} requests in flight over {cap}", w.in_flight());
            peak = peak.max(w.in_flight());
        }
        (peak, now)
    }

    #[test]
    fn a_restore_window_bounds_the_requests_in_flight() {
        // the switch cell's working set: ~1000 runs of 16 KiB, a few large ones among them
        let lens: Vec<u64> = (0..1000).map(|i| if i % 97 == 0 { 3 << 20 } else { 16 << 10 }).collect();
        let (peak, _) = run_window(RESTORE_WINDOW, &lens, 5, &[], 0);
        assert!(peak <= RESTORE_WINDOW, "{peak}");
        // a range larger than the window goes in pieces of half of it
        let w = Window::new(4);
        let cut = w.pieces(4096, 1 << 20);
        assert_eq!(cut.len(), 4);
        assert_eq!(cut[0], (4096, 256 << 10));
        assert!(cut.windows(2).all(|p| p[0].0 + p[0].1 == p[1].0));
        assert_eq!(cut.iter().map(|c| c.1).sum::<u64>(), 1 << 20);
        assert_eq!(w.pieces(0, 4096), vec![(0, 4096)]);
        let (peak, _) = run_window(4, &[16 << 10, 16 << 10, 1 << 20, 16 << 10], 3, &[], 0);
        assert!(peak <= 4, "{peak}");
        // without a window (what the restore did before) all 1000 are in flight at once: the
        // depth at which BFQ trims a queue to one tag (128 of 256 traced here)
        let (peak, _) = run_window(u64::MAX, &lens, 5, &[], 0);
        assert!(peak > 128, "{peak}");
    }

    #[test]
    fn a_range_that_does_not_complete_holds_only_its_own_place() {
        // ~1000 ranges of one request, each done 10 polls after it is asked for: with a window of
        // 32, about 1000 / 32 x 10 polls. Ranges 5 and 500 are the app's pages: done only after
        // 2000 polls (BFQ holding the app's request back). Completions are taken in any order,
        // so the restore goes on around them at nearly the same pace.
        let mut lens = vec![16u64 << 10; 1000];
        // and a large file's range right behind a stuck one (it goes in pieces)
        lens[6] = 4 << 20;
        let (_, free) = run_window(32, &lens, 10, &[], 0);
        let (_, stuck) = run_window(32, &lens, 10, &[5, 500], 2000);
        // (waiting for the oldest range first, as a blocking wait does, would add the stuck
        // ranges' 2 x 2000 polls to the ~310)
        assert!(stuck < free + free / 10, "{stuck} polls with two stuck ranges against {free}");
    }

    #[test]
    fn the_window_is_shared_by_the_restore_threads() {
        assert_eq!(window_per_thread(0), RESTORE_WINDOW);
        assert_eq!(window_per_thread(1), RESTORE_WINDOW);
        assert_eq!(window_per_thread(4), RESTORE_WINDOW / 4);
        assert_eq!(window_per_thread(64), 4);
    }

    #[test]
    fn a_record_stays_within_its_limits_and_a_closed_file_is_not_restored() {
        let Some((dir, mut f, size)) = cold_file() else { return };
        let mut buf = vec![0u8; size as usize];
        f.seek(SeekFrom::Start(0)).unwrap();
        f.read_exact(&mut buf).unwrap();
        let me = [std::process::id() as i32];
        let ws = record(Path::new("/"), &me, Limits { max_bytes: 64 * PAGE, max_files: 4096 });
        assert!(ws.bytes() <= 64 * PAGE, "{}", ws.bytes());
        assert!(record(Path::new("/"), &me, Limits { max_bytes: 1 << 30, max_files: 0 }).files.is_empty());
        // the file closed (and replaced by another of the same name): not reopened
        let md = f.metadata().unwrap();
        let mine = WorkingSet { files: vec![FileSet { dev: md.dev(), ino: md.ino(), ranges: vec![(0, size)] }], files_seen: 1 };
        drop(f);
        std::fs::remove_file(dir.path().join("ws")).unwrap();
        std::fs::write(dir.path().join("ws"), b"another").unwrap();
        let r = restore(Path::new("/"), &me, &mine, RESTORE_LIMIT, 2);
        assert_eq!((r.files, r.missing, r.bytes), (0, 1, 0));
    }

    #[test]
    fn files_of_takes_regular_files_only_and_each_once() {
        let dir = tempfile::tempdir().unwrap();
        let a = std::fs::File::create(dir.path().join("a")).unwrap();
        let a2 = std::fs::File::open(dir.path().join("a")).unwrap();
        let me = [std::process::id() as i32];
        let files = files_of(Path::new("/"), &me);
        let md = a.metadata().unwrap();
        assert_eq!(files.iter().filter(|(d, i, _)| (*d, *i) == (md.dev(), md.ino())).count(), 1);
        // /dev/null, pipes and sockets the test harness holds are not regular files
        assert!(files.iter().all(|(_, _, p)| std::fs::metadata(p).is_ok_and(|m| m.is_file())));
        drop((a, a2));
        // a process that is gone contributes nothing
        assert!(files_of(Path::new("/"), &[i32::MAX]).is_empty());
    }
}
