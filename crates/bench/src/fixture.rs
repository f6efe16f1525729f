//! The "app" the benchmark launches and the background files, built on a real file system.
//!
//! Every file is fully written with non-repeating bytes and fsynced (no sparse files, nothing a
//! compressing or deduplicating device could shortcut), so a cold read really reads the device.

use std::io::Write;
use std::path::{Path, PathBuf};

use rusqlite::Connection;

/// Sizes of the app: the definition shared with the simulator's scenario of the bench
/// (`forefront_workload::bench`).
pub use forefront_workload::bench::AppSpec;

#[derive(Debug, thiserror::Error)]
pub enum FixtureError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: sqlite: {source}")]
    Sql {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
}

/// Where the app lives.
#[derive(Clone, Debug)]
pub struct App {
    pub dir: PathBuf,
}

impl App {
    pub fn code_dir(&self) -> PathBuf {
        self.dir.join("app/code")
    }
    pub fn db(&self) -> PathBuf {
        self.dir.join("app/data/app.db")
    }
    pub fn state_dir(&self) -> PathBuf {
        self.dir.join("app/state")
    }

    /// Builds the app under `dir/app`.
    pub fn build(dir: &Path, spec: &AppSpec) -> Result<App, FixtureError> {
        let app = App { dir: dir.into() };
        for d in [app.code_dir(), app.db().parent().unwrap().to_path_buf(), app.state_dir()] {
            std::fs::create_dir_all(&d).map_err(|source| FixtureError::Io { path: d.clone(), source })?;
        }
        // Mixed sizes: a few large libraries, many small resources (sizes sum to code_bytes).
        for (i, (name, size)) in forefront_workload::bench::code_file_sizes(spec).into_iter().enumerate() {
            write_file(&app.code_dir().join(name), size, i as u64 + 1)?;
        }
        let db = app.db();
        let sql = |source| FixtureError::Sql { path: db.clone(), source };
        let _ = std::fs::remove_file(&db);
        let mut conn = Connection::open(&db).map_err(sql)?;
        conn.execute_batch(
            "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;
             CREATE TABLE items(id INTEGER PRIMARY KEY, name TEXT NOT NULL, body BLOB NOT NULL);
             CREATE INDEX items_name ON items(name);",
        )
        .map_err(sql)?;
        let tx = conn.transaction().map_err(sql)?;
        {
            let mut st = tx.prepare("INSERT INTO items(id, name, body) VALUES (?1, ?2, ?3)").map_err(sql)?;
            let mut rng = Pattern::new(0xdb);
            for id in 0..spec.db_rows {
                let mut body = vec![0u8; spec.row_bytes];
                rng.fill(&mut body);
                st.execute(rusqlite::params![id as i64, format!("item-{id}"), body]).map_err(sql)?;
            }
        }
        tx.commit().map_err(sql)?;
        conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);").map_err(sql)?;
        drop(conn);
        sync_dir(&app.dir)?;
        Ok(app)
    }
}

/// A fast deterministic byte stream (xorshift64*), so files are not compressible.
pub struct Pattern(u64);

impl Pattern {
    pub fn new(seed: u64) -> Self {
        Pattern(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            let v = self.0.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
    }
}

/// Writes `size` bytes of pattern and fsyncs.
pub fn write_file(path: &Path, size: u64, seed: u64) -> Result<(), FixtureError> {
    let err = |source| FixtureError::Io { path: path.into(), source };
    let mut f = std::fs::File::create(path).map_err(err)?;
    let mut p = Pattern::new(seed);
    let mut buf = vec![0u8; 1 << 20];
    let mut left = size;
    while left > 0 {
        let n = left.min(buf.len() as u64) as usize;
        p.fill(&mut buf[..n]);
        f.write_all(&buf[..n]).map_err(err)?;
        left -= n as u64;
    }
    f.sync_all().map_err(err)
}

fn sync_dir(dir: &Path) -> Result<(), FixtureError> {
    std::fs::File::open(dir).and_then(|d| d.sync_all()).map_err(|source| FixtureError::Io { path: dir.into(), source })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_a_fully_written_app() {
        let t = tempfile::tempdir().unwrap();
        let spec = AppSpec { code_files: 5, code_bytes: 1 << 20, db_rows: 50, row_bytes: 512 };
        let app = App::build(t.path(), &spec).unwrap();
        let mut total = 0;
        for e in std::fs::read_dir(app.code_dir()).unwrap() {
            let e = e.unwrap();
            use std::os::unix::fs::MetadataExt;
            let md = e.metadata().unwrap();
            assert!(md.blocks() * 512 >= md.len(), "{:?} is sparse", e.path());
            total += md.len();
        }
        assert!(((1 << 20) - 5 * 4096..=(1 << 20) + 5 * 4096).contains(&total), "{total}");
        let conn = Connection::open(app.db()).unwrap();
        let n: i64 = conn.query_row("SELECT count(*) FROM items", [], |r| r.get(0)).unwrap();
        assert_eq!(n, 50);
        let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0)).unwrap();
        assert_eq!(mode, "wal");
    }

    #[test]
    fn pattern_does_not_repeat_within_a_buffer() {
        let mut b = vec![0u8; 1 << 16];
        Pattern::new(1).fill(&mut b);
        assert_ne!(b[..4096], b[4096..8192]);
        assert!(b.iter().filter(|&&x| x == 0).count() < 1024);
    }
}
