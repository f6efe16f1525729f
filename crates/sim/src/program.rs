//! A thread's program: its ops flattened into instructions with loop markers, expanding
//! macros (SQLite transactions) and `{i}` templates. `{n}` (the iteration of the innermost
//! `repeat`) expands when the op runs: [`subst_iteration`].

use forefront_workload::{Bytes, Op, SqliteMode};

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

/// Flatten `ops`, replacing `{i}` with `inst` in every string.
pub fn compile(ops: &[Op], inst: Option<u32>, out: &mut Vec<Instr>) {
    for op in ops {
        match op {
            Op::Repeat { times, ops } => {
                let start = out.len();
                out.push(Instr::LoopStart { times: *times });
                compile(ops, inst, out);
                out.push(Instr::LoopEnd { start });
            }
            Op::Sqlite { db, mode, pages } => expand_sqlite(&subst(db, inst), *mode, *pages, out),
            other => out.push(Instr::Op(subst_op(other, inst))),
        }
    }
}

fn subst(s: &str, inst: Option<u32>) -> String {
    match inst {
        Some(i) => s.replace("{i}", &i.to_string()),
        None => s.to_string(),
    }
}

fn subst_op(op: &Op, inst: Option<u32>) -> Op {
    let mut op = op.clone();
    map_names(&mut op, |s| subst(s, inst));
    op
}

/// Replace `{n}` in `op`'s path, channel or app name with `inner`, the 0-based iteration of
/// the innermost enclosing `repeat`, and `{n1}` with `outer`, that of the `repeat` around it
/// (0 outside any).
pub fn subst_iteration(op: &mut Op, inner: u32, outer: u32) {
    map_names(op, |s| {
        if s.contains("{n") {
            s.replace("{n}", &inner.to_string()).replace("{n1}", &outer.to_string())
        } else {
            s.to_string()
        }
    });
}

fn map_names(op: &mut Op, f: impl Fn(&str) -> String) {
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
        | Op::Stat { path } => *path = f(path),
        Op::Wait { chan } | Op::Signal { chan } => *chan = f(chan),
        Op::Foreground { app } | Op::DropCaches { app } => *app = f(app),
        Op::BinderCall { service, .. } | Op::BinderServe { service } => *service = f(service),
        _ => {}
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
    fn iteration_templates_expand_in_names_only_where_present() {
        let mut op = Op::Creat { path: "/d/IMG_{n1}_{n}.jpg".into() };
        subst_iteration(&mut op, 7, 2);
        assert!(matches!(&op, Op::Creat { path } if path == "/d/IMG_2_7.jpg"));
        let mut op = Op::Signal { chan: "plain".into() };
        subst_iteration(&mut op, 7, 2);
        assert!(matches!(&op, Op::Signal { chan } if chan == "plain"));
    }
}
