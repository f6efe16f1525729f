//! The foreground operations (timed) and the background workloads (run until killed).

use std::io::{Read, Seek, SeekFrom, Write};
use std::os::fd::AsRawFd;
use std::path::Path;

use rusqlite::{Connection, OpenFlags};

use forefront_workload::bench::{
    BG_CHUNK, FIO_BS, LAUNCH_POINT_READS, LAUNCH_RANGE_ROWS, LAUNCH_READ_BUF, SWITCH_PHOTO_BYTES, SWITCH_ROW_BYTES,
    SWITCH_STATE_BYTES, SWITCH_TRANSACTIONS, SYNC_LOOP_MS, UPDATE_FSYNC_EVERY,
};

use crate::fixture::{App, FixtureError, Pattern};

fn io_err(path: &Path) -> impl Fn(std::io::Error) -> FixtureError + '_ {
    move |source| FixtureError::Io { path: path.into(), source }
}

/// Launch: cold read of every code/resource file, then open the database and run the queries
/// an app's first screen would (a count, an indexed range, 100 point reads of whole rows).
/// Returns bytes read from files.
pub fn launch(app: &App) -> Result<u64, FixtureError> {
    let dir = app.code_dir();
    let mut names: Vec<_> = std::fs::read_dir(&dir).map_err(io_err(&dir))?.flatten().map(|e| e.path()).collect();
    names.sort();
    let mut buf = vec![0u8; LAUNCH_READ_BUF as usize];
    let mut total = 0u64;
    for p in &names {
        let mut f = std::fs::File::open(p).map_err(io_err(p))?;
        loop {
            let n = f.read(&mut buf).map_err(io_err(p))?;
            if n == 0 {
                break;
            }
            total += n as u64;
        }
    }
    let db = app.db();
    let conn = Connection::open_with_flags(&db, OpenFlags::SQLITE_OPEN_READ_ONLY)
        .map_err(|source| FixtureError::Sql { path: db.clone(), source })?;
    Ok(total + launch_queries(&conn).map_err(|source| FixtureError::Sql { path: db.clone(), source })?)
}

/// The launch's queries on its open database: a count, an indexed range, [`LAUNCH_POINT_READS`]
/// point reads of whole rows. Returns the bytes of the rows read.
pub fn launch_queries(conn: &Connection) -> rusqlite::Result<u64> {
    let rows: i64 = conn.query_row("SELECT count(*) FROM items", [], |r| r.get(0))?;
    let mut st = conn
        .prepare(&format!("SELECT id, name FROM items WHERE name >= 'item-1' AND name < 'item-2' LIMIT {LAUNCH_RANGE_ROWS}"))?;
    let _listed = st.query_map([], |r| r.get::<_, i64>(0))?.count();
    let mut get = conn.prepare("SELECT body FROM items WHERE id = ?1")?;
    let mut x: i64 = 12345;
    let mut total = 0;
    for _ in 0..LAUNCH_POINT_READS {
        x = (x * 1_103_515_245 + 12_345) & 0x7fff_ffff;
        let id = x % rows.max(1);
        let body: Vec<u8> = get.query_row([id], |r| r.get(0))?;
        total += body.len() as u64;
    }
    Ok(total)
}

/// Switch: save the app's state (256 KiB, fsync), a photo (4 MiB, fsync) and 20 SQLite
/// transactions (WAL, synchronous=FULL: one fsync each). Returns bytes written.
pub fn switch(app: &App, seq: u64) -> Result<u64, FixtureError> {
    let mut total = 0;
    let mut p = Pattern::new(seq + 77);
    for (name, size) in [("state.bin", SWITCH_STATE_BYTES), ("photo.jpg", SWITCH_PHOTO_BYTES)] {
        let path = app.state_dir().join(name);
        let mut buf = vec![0u8; size as usize];
        p.fill(&mut buf);
        let mut f = std::fs::File::create(&path).map_err(io_err(&path))?;
        f.write_all(&buf).map_err(io_err(&path))?;
        f.sync_all().map_err(io_err(&path))?;
        total += size;
    }
    let db = app.db();
    let sql = |source| FixtureError::Sql { path: db.clone(), source };
    let mut conn = Connection::open(&db).map_err(sql)?;
    conn.execute_batch("PRAGMA synchronous=FULL;").map_err(sql)?;
    for i in 0..SWITCH_TRANSACTIONS {
        let tx = conn.transaction().map_err(sql)?;
        let mut body = vec![0u8; SWITCH_ROW_BYTES];
        p.fill(&mut body);
        tx.execute("INSERT INTO items(name, body) VALUES (?1, ?2)", rusqlite::params![format!("switch-{seq}-{i}"), body])
            .map_err(sql)?;
        tx.commit().map_err(sql)?;
        total += SWITCH_ROW_BYTES as u64;
    }
    Ok(total)
}

/// Background update: large sequential overwrites of a fully written file in 1 MiB writes,
/// fsync every 32 MiB, wrapping around. Never returns.
pub fn update_forever(path: &Path) -> Result<(), FixtureError> {
    write_forever(path, Some(UPDATE_FSYNC_EVERY))
}

/// Background copy: the same writes with no fsync (a file copy, an unpacked update): the data
/// is written back by the kernel's flusher threads, which belong to no cgroup. Never returns.
pub fn copy_forever(path: &Path) -> Result<(), FixtureError> {
    write_forever(path, None)
}

fn write_forever(path: &Path, fsync_every: Option<u64>) -> Result<(), FixtureError> {
    let mut f = std::fs::OpenOptions::new().write(true).open(path).map_err(io_err(path))?;
    let len = f.metadata().map_err(io_err(path))?.len().max(BG_CHUNK);
    let mut buf = vec![0u8; BG_CHUNK as usize];
    let mut p = Pattern::new(len);
    p.fill(&mut buf);
    let mut off = 0u64;
    loop {
        p.fill(&mut buf[..4096]); // fresh bytes per chunk without paying to regenerate 1 MiB
        f.write_all(&buf).map_err(io_err(path))?;
        off += buf.len() as u64;
        if fsync_every.is_some_and(|n| off % n == 0) {
            f.sync_data().map_err(io_err(path))?;
        }
        if off >= len {
            off = 0;
            f.seek(SeekFrom::Start(0)).map_err(io_err(path))?;
        }
    }
}

/// Background upload: large sequential reads in 1 MiB chunks, each dropped from the page
/// cache after use (`POSIX_FADV_DONTNEED`, as a streaming upload does) and the whole file at
/// the end of a pass, so every pass reads the device. The kernel evicts only the folios a range
/// covers whole: where the file system caches the reads in larger folios (ext4 since Linux
/// 6.11: 2 MiB under an 8 MiB read-ahead), the chunks' drops keep nearly the whole pass cached
/// until its end (`bench calibrate`'s `dontneed_folio_kib`; docs/twin.md, twin25). Never returns.
pub fn upload_forever(path: &Path) -> Result<(), FixtureError> {
    let mut f = std::fs::File::open(path).map_err(io_err(path))?;
    let mut buf = vec![0u8; BG_CHUNK as usize];
    let mut off = 0i64;
    loop {
        let n = f.read(&mut buf).map_err(io_err(path))?;
        if n == 0 {
            // SAFETY: fadvise on an open fd with plain integers.
            unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
            f.seek(SeekFrom::Start(0)).map_err(io_err(path))?;
            off = 0;
            continue;
        }
        // SAFETY: as above.
        unsafe { libc::posix_fadvise(f.as_raw_fd(), off, n as i64, libc::POSIX_FADV_DONTNEED) };
        off += n as i64;
    }
}

/// Drops a file's pages from the page cache (fio's `invalidate=1`).
fn invalidate(f: &std::fs::File) {
    // SAFETY: fadvise on an open fd with plain integers.
    unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
}

/// The S suite's reader (its fio job `readwrite=read`, defaults otherwise: the `psync` engine,
/// `bs` 4 KiB, buffered, `invalidate=1`, `--loops=10000`): the whole file in 4 KiB `read()`s,
/// pass after pass, its cached pages dropped at the start of each pass. Never returns.
pub fn seq_read_forever(path: &Path) -> Result<(), FixtureError> {
    let mut f = std::fs::File::open(path).map_err(io_err(path))?;
    let mut buf = vec![0u8; FIO_BS as usize];
    loop {
        invalidate(&f);
        f.seek(SeekFrom::Start(0)).map_err(io_err(path))?;
        while f.read(&mut buf).map_err(io_err(path))? > 0 {}
    }
}

/// The S suite's writer (fio `readwrite=write`, `size` = the file size, the file removed
/// before the cell so the first pass allocates it): the file created empty, then `len` bytes
/// in 4 KiB buffered `write()`s, no fsync, pass after pass over the same file. Never returns.
///
/// `overwrite`: keep the file (written whole beforehand) and overwrite it from the first pass on —
/// the suite's steady state, once its writers' first pass is done.
pub fn seq_write_forever(path: &Path, len: u64, overwrite: bool) -> Result<(), FixtureError> {
    if !overwrite {
        let _ = std::fs::remove_file(path);
    }
    let mut f = std::fs::OpenOptions::new().create(true).truncate(!overwrite).write(true).open(path).map_err(io_err(path))?;
    let mut buf = vec![0u8; FIO_BS as usize];
    let mut p = Pattern::new(len ^ 0xf10);
    let len = len.max(FIO_BS);
    loop {
        invalidate(&f);
        f.seek(SeekFrom::Start(0)).map_err(io_err(path))?;
        let mut off = 0;
        while off < len {
            p.fill(&mut buf[..8]); // fresh bytes per block
            f.write_all(&buf).map_err(io_err(path))?;
            off += FIO_BS;
        }
    }
}

/// The S suite's `sync` loop beside its writers (`while true; do sync & sleep 2; done`): a
/// `sync()` every [`SYNC_LOOP_MS`], each on a thread of its own so a slow one does not hold
/// back the next. Never returns.
pub fn sync_loop_forever() -> ! {
    loop {
        let _ = std::thread::Builder::new().name("sync".into()).spawn(|| {
            // SAFETY: sync(2) takes no arguments.
            unsafe { libc::sync() }
        });
        std::thread::sleep(std::time::Duration::from_millis(SYNC_LOOP_MS));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture::AppSpec;

    /// The simulator's launch reads as many database pages as SQLite does: its page-cache misses
    /// (`SQLITE_DBSTATUS_CACHE_MISS`, each a read of one B-tree page from the file) over the
    /// launch's queries on a freshly opened database, and the file's `page_count`, against the workload
    /// definition's figures from the file format's rules, for the default app and for rows
    /// small enough to have no overflow pages.
    #[test]
    fn the_workload_definition_reads_the_pages_sqlite_reads() {
        for (rows, row_bytes) in [(4000, 4096), (1000, 1024)] {
            let t = tempfile::tempdir().unwrap();
            let spec = AppSpec { code_files: 1, code_bytes: 4096, db_rows: rows, row_bytes };
            let app = App::build(t.path(), &spec).unwrap();
            let conn = Connection::open_with_flags(app.db(), OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
            let pages: i64 = conn.query_row("PRAGMA page_count", [], |r| r.get(0)).unwrap();
            launch_queries(&conn).unwrap();
            let (mut misses, mut high) = (0, 0);
            // SAFETY: the handle is this open connection's; the call only writes the two ints.
            let rc = unsafe {
                rusqlite::ffi::sqlite3_db_status(
                    conn.handle(),
                    rusqlite::ffi::SQLITE_DBSTATUS_CACHE_MISS,
                    &mut misses,
                    &mut high,
                    0,
                )
            };
            assert_eq!(rc, 0);
            // Overflow pages are read around the page cache (SQLite's direct overflow read: a
            // `pread` of the page's used bytes), so the misses count the B-tree pages only.
            let overflow = LAUNCH_POINT_READS * forefront_workload::bench::db_overflow_pages_per_row(&spec);
            let want_reads = (forefront_workload::bench::db_page_reads(&spec) - overflow) as f64;
            let want_pages = (forefront_workload::bench::db_bytes(&spec) / 4096) as f64;
            let (misses, pages) = (misses as f64, pages as f64);
            assert!(
                (want_reads / misses - 1.0).abs() < 0.10,
                "{rows} rows of {row_bytes} B: {misses} page reads, definition {want_reads}"
            );
            assert!(
                (want_pages / pages - 1.0).abs() < 0.05,
                "{rows} rows of {row_bytes} B: {pages} pages, definition {want_pages}"
            );
        }
    }

    #[test]
    fn launch_reads_everything_and_switch_writes() {
        let t = tempfile::tempdir().unwrap();
        let spec = AppSpec { code_files: 4, code_bytes: 256 << 10, db_rows: 100, row_bytes: 256 };
        let app = App::build(t.path(), &spec).unwrap();
        let read = launch(&app).unwrap();
        assert!(read >= (256 << 10) - 4 * 4096 + 100 * 256, "{read}");
        let written = switch(&app, 1).unwrap();
        assert_eq!(written, (256 << 10) + (4 << 20) + 20 * 4096);
        let conn = Connection::open(app.db()).unwrap();
        let n: i64 = conn.query_row("SELECT count(*) FROM items WHERE name LIKE 'switch-1-%'", [], |r| r.get(0)).unwrap();
        assert_eq!(n, 20);
    }
}
