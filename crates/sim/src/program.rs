//! A thread's program: its ops flattened into instructions with loop markers, expanding
//! macros (SQLite transactions), `{i}` templates and the names of a cell's private world
//! ([`Names`]). `{n}` (the iteration of the innermost `repeat`) expands when the op runs:
//! [`subst_iteration`].

use forefront_workload::{Bytes, CellsParams, Op, SqliteMode};

/// How an app instance's names expand: its background-template instance (`{i}`) and, for an
/// app of a cell, the cell's private paths, channels, binder services and app names
/// ([`forefront_workload::cells`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct Names<'a> {
    pub inst: Option<u32>,
    pub cell: Option<(&'a str, &'a CellsParams)>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Path,
    /// A channel or a binder service.
    Ipc,
    App,
}

impl Names<'_> {
    /// A file path as this app instance sees it.
    pub fn path(&self, s: &str) -> String {
        self.expand(Kind::Path, s)
    }

    fn expand(&self, kind: Kind, s: &str) -> String {
        let s = match self.inst {
            Some(i) => s.replace("{i}", &i.to_string()),
            None => s.to_string(),
        };
        let Some((cell, params)) = self.cell else { return s };
        match kind {
            Kind::Path => params.cell_path(cell, &s),
            Kind::Ipc if !s.contains(':') => format!("{cell}:{s}"),
            Kind::App if !s.contains('/') => format!("{cell}/{s}"),
            _ => s,
        }
    }
}

#[derive(Clone, Debug)]
pub enum Instr {
    Op(Op),
    /// Start of a loop run `times` times (0 = forever); its body ends at the matching `LoopEnd`.
    LoopStart {
        times: u32,
    },
    LoopEnd {
        start: usize,
    },
}

/// Flatten `ops`, expanding every name as `names` says.
pub fn compile(ops: &[Op], names: Names, out: &mut Vec<Instr>) {
    for op in ops {
        match op {
            Op::Repeat { times, ops } => {
                let start = out.len();
                out.push(Instr::LoopStart { times: *times });
                compile(ops, names, out);
                out.push(Instr::LoopEnd { start });
            }
            Op::Sqlite { db, mode, pages } => expand_sqlite(&names.expand(Kind::Path, db), *mode, *pages, out),
            Op::ReadRandom { path, count, size, size_max, offset, span, seed } => {
                expand_read_random(&names.expand(Kind::Path, path), *count, *size, *size_max, *offset, *span, *seed, out)
            }
            other => {
                let mut op = other.clone();
                map_names(&mut op, |kind, s| names.expand(kind, s));
                out.push(Instr::Op(op));
            }
        }
    }
}

/// Replace `{n}` in `op`'s path, channel or app name with `inner`, the 0-based iteration of
/// the innermost enclosing `repeat`, and `{n1}` with `outer`, that of the `repeat` around it
/// (0 outside any).
pub fn subst_iteration(op: &mut Op, inner: u32, outer: u32) {
    map_names(op, |_, s| {
        if s.contains("{n") {
            s.replace("{n}", &inner.to_string()).replace("{n1}", &outer.to_string())
        } else {
            s.to_string()
        }
    });
}

fn map_names(op: &mut Op, f: impl Fn(Kind, &str) -> String) {
    match op {
        Op::Open { path }
        | Op::Creat { path }
        | Op::Close { path }
        | Op::Read { path, .. }
        | Op::Write { path, .. }
        | Op::Fsync { path }
        | Op::Fdatasync { path }
        | Op::Truncate { path, .. }
        | Op::Unlink { path }
        | Op::Stat { path } => *path = f(Kind::Path, path),
        Op::Wait { chan } | Op::Signal { chan } => *chan = f(Kind::Ipc, chan),
        Op::Foreground { app } | Op::DropCaches { app, .. } => *app = f(Kind::App, app),
        Op::BinderCall { service, .. } | Op::BinderServe { service } => *service = f(Kind::Ipc, service),
        _ => {}
    }
}

/// `read_random` as the reads it stands for: offsets and sizes drawn from a stream named by
/// the path and the op's seed (not the run's seed: the same pages every start-up and run).
#[allow(clippy::too_many_arguments)]
fn expand_read_random(
    path: &str,
    count: u32,
    size: Bytes,
    size_max: Option<Bytes>,
    offset: Bytes,
    span: Bytes,
    seed: u64,
    out: &mut Vec<Instr>,
) {
    use forefront_engine::Rng;
    const PAGE: u64 = 4096;
    let mut rng = forefront_engine::RngStreams::new(seed).stream(&format!("read_random:{path}"));
    let (lo, hi) = (size.0, size_max.unwrap_or(size).0);
    for _ in 0..count {
        let len = if hi > lo { lo + rng.gen_range(0..=(hi - lo) / PAGE) * PAGE } else { lo };
        let slots = (span.0 - len) / PAGE + 1;
        let at = offset.0 + rng.gen_range(0..slots) * PAGE;
        out.push(Instr::Op(Op::Read {
            path: path.to_string(),
            offset: Bytes(at),
            len: Bytes(len),
            chunk: Bytes(len),
            drop_behind: false,
        }));
    }
}

/// The file operations SQLite 3.7/3.8 (Android 4.x–6) issues for one transaction of `pages`
/// modified DB pages (4 KiB pages):
/// - rollback journal (journal_mode=DELETE): create `-journal`, write its header and the
///   original pages, fsync it, write the DB pages in place, fsync the DB, unlink the journal;
/// - WAL: append the pages plus a commit frame to `-wal` and fsync it (checkpoints, every 1000
///   pages by default, are left to explicit ops).
fn expand_sqlite(db: &str, mode: SqliteMode, pages: u32, out: &mut Vec<Instr>) {
    let page = 4096u64;
    let n = u64::from(pages.max(1));
    match mode {
        SqliteMode::Rollback => {
            let j = format!("{db}-journal");
            out.push(Instr::Op(Op::Creat { path: j.clone() }));
            out.push(Instr::Op(Op::Write { path: j.clone(), offset: Some(Bytes(0)), len: Bytes(512), chunk: Bytes(512) }));
            out.push(Instr::Op(Op::Write {
                path: j.clone(),
                offset: Some(Bytes(512)),
                len: Bytes(n * (page + 8)),
                chunk: Bytes(page + 8),
            }));
            out.push(Instr::Op(Op::Fsync { path: j.clone() }));
            // DB pages: the first (header/root) page plus the modified ones, in place.
            out.push(Instr::Op(Op::Write { path: db.to_string(), offset: Some(Bytes(0)), len: Bytes(page), chunk: Bytes(page) }));
            for k in 1..n {
                out.push(Instr::Op(Op::Write {
                    path: db.to_string(),
                    offset: Some(Bytes(((k * 7919) % 256 + 1) * page)),
                    len: Bytes(page),
                    chunk: Bytes(page),
                }));
            }
            out.push(Instr::Op(Op::Fsync { path: db.to_string() }));
            out.push(Instr::Op(Op::Unlink { path: j }));
        }
        SqliteMode::Wal => {
            let w = format!("{db}-wal");
            out.push(Instr::Op(Op::Write {
                path: w.clone(),
                offset: None,
                len: Bytes((n + 1) * (page + 24)),
                chunk: Bytes(page + 24),
            }));
            out.push(Instr::Op(Op::Fsync { path: w }));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cells_names_are_its_own() {
        let params = CellsParams::default();
        let names = Names { inst: None, cell: Some(("work", &params)) };
        let mut out = Vec::new();
        let ops = [
            Op::Read { path: "/data/app.db".into(), offset: Bytes(0), len: Bytes(4096), chunk: Bytes(4096), drop_behind: false },
            Op::Read {
                path: "/system/lib/libc.so".into(),
                offset: Bytes(0),
                len: Bytes(4096),
                chunk: Bytes(4096),
                drop_behind: false,
            },
            Op::Signal { chan: "frame".into() },
            Op::Signal { chan: "host:done".into() },
            Op::Foreground { app: "mail".into() },
            Op::BinderCall { service: "activity".into(), ms: 1.0 },
        ];
        compile(&ops, names, &mut out);
        let got: Vec<String> = out.iter().map(|i| format!("{i:?}")).collect();
        assert!(got[0].contains("\"/cells/work/data/app.db\""), "{}", got[0]);
        assert!(got[1].contains("\"/system/lib/libc.so\""), "{}", got[1]);
        assert!(got[2].contains("\"work:frame\""), "{}", got[2]);
        assert!(got[3].contains("\"host:done\""), "{}", got[3]);
        assert!(got[4].contains("\"work/mail\""), "{}", got[4]);
        assert!(got[5].contains("\"work:activity\""), "{}", got[5]);
    }

    #[test]
    fn iteration_templates_expand_in_names_only_where_present() {
        let mut op = Op::Creat { path: "/d/IMG_{n1}_{n}.jpg".into() };
        subst_iteration(&mut op, 7, 2);
        assert!(matches!(&op, Op::Creat { path } if path == "/d/IMG_2_7.jpg"));
        let mut op = Op::Signal { chan: "plain".into() };
        subst_iteration(&mut op, 7, 2);
        assert!(matches!(&op, Op::Signal { chan } if chan == "plain"));
    }
}
