//! A real trace as part of an app's workload: the `trace` op expands, when the scenario is
//! loaded, into the file operations one traced thread made (strace or MobiGen), so a launch or
//! a switch can have the access pattern of a real one — small random reads into its APK, dex
//! and libraries, SQLite pages — instead of a hand-written sequential read.
//!
//! ```toml
//! ops = [
//!   { op = "foreground", app = "facebook" },
//!   { op = "phase_begin", name = "launch" },
//!   { op = "trace", path = "../testdata/traces/mobigen-facebook-cut.txt", tid = 1, gaps = "compute" },
//!   { op = "phase_end", name = "launch" },
//! ]
//! ```
//!
//! `path` is relative to the scenario file. `tid` picks the traced thread (it may be left out
//! when the trace has one thread with file I/O). `gaps` says what the time between one call's
//! end and the next call's start was: `none` (calls back to back, the default), `sleep` (the
//! thread waited: think time, another thread's turn) or `compute` (CPU work at speed 1.0: a
//! start-up's class loading and layout). Every file the thread reads is created on flash
//! before the run (as large as the furthest byte read, owned by the app) unless the scenario
//! declares it; every call that is not file I/O is left out, counted in the expansion's error
//! message when nothing is left.

use std::collections::BTreeMap;
use std::path::Path;

use forefront_record::trace::{SyscallRecord, TraceRecord};
use serde::{Deserialize, Serialize};

use crate::{AppSpec, Bytes, FileSpec, Op, Role, Scenario};

/// What the time between two traced calls was.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Gaps {
    /// Calls back to back.
    #[default]
    None,
    /// The thread slept (think time).
    Sleep,
    /// The thread computed (CPU work at speed 1.0).
    Compute,
}

/// The file operation a traced system call is, if forefront replays it; `sizes` grows to the
/// furthest byte read of each file.
pub fn record_op(r: &SyscallRecord, sizes: &mut BTreeMap<String, u64>) -> Option<Op> {
    let path = r.path.clone().or_else(|| r.fd.map(|fd| format!("/fd/{fd}")));
    let len = match r.result {
        Some(v) if v >= 0 => Some(v as u64),
        Some(_) => None,
        None => r.size,
    };
    match (r.name.as_str(), path) {
        ("read" | "pread" | "pread64" | "readv" | "preadv", Some(p)) => match len {
            Some(n) if n > 0 => {
                let off = r.offset.unwrap_or(0);
                let e = sizes.entry(p.clone()).or_insert(0);
                *e = (*e).max(off + n);
                Some(Op::Read { path: p, offset: Bytes(off), len: Bytes(n), chunk: Bytes(n), drop_behind: false })
            }
            _ => None,
        },
        ("write" | "pwrite" | "pwrite64" | "writev" | "pwritev", Some(p)) => match len {
            Some(n) if n > 0 => Some(Op::Write { path: p, offset: r.offset.map(Bytes), len: Bytes(n), chunk: Bytes(n) }),
            _ => None,
        },
        ("fsync", Some(p)) => Some(Op::Fsync { path: p }),
        ("fdatasync", Some(p)) => Some(Op::Fdatasync { path: p }),
        ("creat", Some(p)) => Some(Op::Creat { path: p }),
        ("open" | "openat" | "open64", Some(p)) => Some(Op::Open { path: p }),
        ("close", Some(p)) => Some(Op::Close { path: p }),
        ("unlink" | "unlinkat", Some(p)) => Some(Op::Unlink { path: p }),
        ("ftruncate" | "ftruncate64" | "truncate", Some(p)) => r.size.map(|s| Op::Truncate { path: p, size: Bytes(s) }),
        ("stat" | "stat64" | "lstat" | "lstat64" | "fstat" | "fstat64" | "newfstatat" | "access" | "faccessat", Some(p)) => {
            Some(Op::Stat { path: p })
        }
        _ => None,
    }
}

/// One `trace` op's expansion.
struct Expansion {
    ops: Vec<Op>,
    sizes: BTreeMap<String, u64>,
}

fn expand(base: &Path, path: &str, format: Option<&str>, tid: Option<u32>, gaps: Gaps) -> Result<Expansion, String> {
    let file = base.join(path);
    let fmt = match format {
        None => forefront_trace::InputFormat::Auto,
        Some(f) => forefront_trace::InputFormat::from_name(f).ok_or_else(|| format!("unknown trace format `{f}`"))?,
    };
    let opts = forefront_trace::ReadOptions { format: fmt, lenient: false };
    let (_, records) = forefront_trace::read_all(std::slice::from_ref(&file), &opts).map_err(|e| e.to_string())?;
    let mut calls: Vec<&SyscallRecord> = records
        .iter()
        .filter_map(|r| match r {
            TraceRecord::Syscall(s) => Some(s),
            _ => None,
        })
        .collect();
    if calls.is_empty() {
        return Err(format!("{}: no system calls (a block trace cannot drive an app's thread)", file.display()));
    }
    calls.sort_by_key(|r| (r.time_ns, r.tid));
    let mut per_tid: BTreeMap<u32, u64> = BTreeMap::new();
    let mut scratch = BTreeMap::new();
    for r in &calls {
        if record_op(r, &mut scratch).is_some() {
            *per_tid.entry(r.tid).or_insert(0) += 1;
        }
    }
    let listing = || per_tid.iter().map(|(t, n)| format!("{t} ({n} calls)")).collect::<Vec<_>>().join(", ");
    let tid = match tid {
        Some(t) if per_tid.contains_key(&t) => t,
        Some(t) => {
            return Err(format!("{}: thread {t} made no file I/O forefront replays (threads: {})", file.display(), listing()))
        }
        None if per_tid.len() == 1 => *per_tid.keys().next().expect("one"),
        None => return Err(format!("{}: several threads made file I/O; name one with `tid` ({})", file.display(), listing())),
    };
    let mut ops = vec![];
    let mut sizes = BTreeMap::new();
    let mut last_end: Option<u64> = None;
    for r in calls.iter().filter(|r| r.tid == tid) {
        let Some(op) = record_op(r, &mut sizes) else { continue };
        if let Some(end) = last_end {
            let gap_ms = r.time_ns.saturating_sub(end) as f64 / 1e6;
            if gap_ms > 0.0 {
                match gaps {
                    Gaps::None => {}
                    Gaps::Sleep => ops.push(Op::Sleep { ms: gap_ms }),
                    Gaps::Compute => ops.push(Op::Compute { ms: gap_ms }),
                }
            }
        }
        last_end = Some(r.time_ns + r.duration_ns.unwrap_or(0));
        ops.push(op);
    }
    Ok(Expansion { ops, sizes })
}

impl Scenario {
    /// Expands every `trace` op (paths relative to `base`, the scenario file's directory) and
    /// declares the files they read. Errors name the app, the thread and the trace.
    pub fn resolve_traces(&mut self, base: &Path) -> Result<(), String> {
        let mut new_files: Vec<FileSpec> = vec![];
        for a in &mut self.apps {
            let app = a.name.clone();
            let role = a.role;
            for t in &mut a.threads {
                let mut sizes = BTreeMap::new();
                t.ops = expand_ops(std::mem::take(&mut t.ops), base, &mut sizes)
                    .map_err(|e| format!("app `{app}` thread `{}`: trace: {e}", t.name))?;
                if !sizes.is_empty() && role == Role::Bg {
                    return Err(format!(
                        "app `{app}` thread `{}`: a `trace` op in a background template would give every instance the same files; use it in an fg or system app",
                        t.name
                    ));
                }
                for (path, size) in sizes {
                    match new_files.iter_mut().find(|f| f.path == path) {
                        Some(f) => f.size = Bytes(f.size.0.max(size)),
                        None => new_files.push(FileSpec { path, size: Bytes(size), owner: app.clone(), cached: false }),
                    }
                }
            }
        }
        for f in new_files {
            if !self.files.iter().any(|g| g.path == f.path) {
                self.files.push(f);
            }
        }
        Ok(())
    }
}

fn expand_ops(ops: Vec<Op>, base: &Path, sizes: &mut BTreeMap<String, u64>) -> Result<Vec<Op>, String> {
    let mut out = Vec::with_capacity(ops.len());
    for op in ops {
        match op {
            Op::Trace { path, format, tid, gaps } => {
                let e = expand(base, &path, format.as_deref(), tid, gaps).map_err(|m| format!("`{path}`: {m}"))?;
                for (p, s) in e.sizes {
                    let v = sizes.entry(p).or_insert(0);
                    *v = (*v).max(s);
                }
                out.extend(e.ops);
            }
            Op::Repeat { times, ops } => out.push(Op::Repeat { times, ops: expand_ops(ops, base, sizes)? }),
            other => out.push(other),
        }
    }
    Ok(out)
}

/// Whether `ops` still hold a `trace` op (a scenario built in memory, not loaded from a file).
pub(crate) fn has_trace(ops: &[Op]) -> bool {
    ops.iter().any(|op| match op {
        Op::Trace { .. } => true,
        Op::Repeat { ops, .. } => has_trace(ops),
        _ => false,
    })
}

/// The apps of a scenario whose threads still hold `trace` ops.
pub(crate) fn unresolved(apps: &[AppSpec]) -> Option<&str> {
    apps.iter().find(|a| a.threads.iter().any(|t| has_trace(&t.ops))).map(|a| a.name.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRACE: &str = "7 1000 open /data/app.db O_RDWR 3\n\
        7 2000 pread 3 8192 4096\n\
        7 5000 pwrite 3 0 4096\n\
        7 6000 fsync 3\n\
        7 9000 pread 3 0 16384\n\
        8 9500 pread 4 0 4096\n";

    fn scenario(dir: &Path, op: &str, role: &str) -> Result<Scenario, crate::LoadError> {
        std::fs::write(dir.join("t.mobigen"), TRACE).unwrap();
        let text = format!(
            "name='x'\ndescription='d'\nheadline='p'\ndevice='galaxy-s5-emmc'\nduration_s=10\n\
             [[app]]\nname='a'\nrole='{role}'\n[[app.thread]]\nname='m'\n\
             ops=[{{op='phase_begin', name='p'}}, {op}, {{op='phase_end', name='p'}}]\n\
             [[app]]\nname='f'\nrole='fg'\n[[app.thread]]\nname='m'\nops=[{{op='phase_begin', name='p'}}, {{op='phase_end', name='p'}}]\n"
        );
        let text = if role == "fg" { text.replace("name='f'\nrole='fg'", "name='f'\nrole='system'") } else { text };
        Scenario::parse(dir.join("s.toml").to_str().unwrap(), &text)
    }

    #[test]
    fn a_trace_op_becomes_the_threads_file_operations_and_declares_its_files() {
        let t = tempfile::tempdir().unwrap();
        let sc = scenario(t.path(), "{op='trace', path='t.mobigen', format='mobigen', tid=7, gaps='compute'}", "fg").unwrap();
        let ops = &sc.apps[0].threads[0].ops;
        let kinds: Vec<&str> = ops
            .iter()
            .map(|o| match o {
                Op::Open { .. } => "open",
                Op::Read { .. } => "read",
                Op::Write { .. } => "write",
                Op::Fsync { .. } => "fsync",
                Op::Compute { .. } => "compute",
                Op::PhaseBegin { .. } | Op::PhaseEnd { .. } => "phase",
                _ => "other",
            })
            .collect();
        // MobiGen has no durations: each gap runs from one call's start to the next's.
        assert_eq!(
            kinds,
            ["phase", "open", "compute", "read", "compute", "write", "compute", "fsync", "compute", "read", "phase"]
        );
        assert!(
            matches!(&ops[3], Op::Read { path, offset, len, .. } if path == "/data/app.db" && offset.0 == 8192 && len.0 == 4096)
        );
        assert!(matches!(&ops[2], Op::Compute { ms } if (*ms - 1.0).abs() < 1e-9), "µs timestamps: {:?}", ops[2]);
        // The file is declared, as large as the furthest byte read, owned by the app.
        let f = sc.files.iter().find(|f| f.path == "/data/app.db").unwrap();
        assert_eq!((f.size.0, f.owner.as_str()), (16384, "a"));
    }

    #[test]
    fn bad_trace_ops_are_refused_with_the_reason() {
        let t = tempfile::tempdir().unwrap();
        let err = |op: &str, role: &str| scenario(t.path(), op, role).unwrap_err().to_string();
        let e = err("{op='trace', path='t.mobigen'}", "fg");
        assert!(e.contains("several threads") && e.contains("7 (5 calls)") && e.contains("8 (1 calls)"), "{e}");
        let e = err("{op='trace', path='t.mobigen', tid=9}", "fg");
        assert!(e.contains("thread 9 made no file I/O"), "{e}");
        let e = err("{op='trace', path='missing.txt', tid=7}", "fg");
        assert!(e.contains("app `a` thread `m`: trace: `missing.txt`"), "{e}");
        let e = err("{op='trace', path='t.mobigen', tid=7}", "bg");
        assert!(e.contains("background template"), "{e}");
        let e = err("{op='trace', path='t.mobigen', tid=7, format='pcap'}", "fg");
        assert!(e.contains("unknown trace format `pcap`"), "{e}");
    }

    #[test]
    fn a_scenario_built_in_memory_must_resolve_its_traces() {
        let t = tempfile::tempdir().unwrap();
        let mut sc = scenario(t.path(), "{op='stat', path='/x'}", "fg").unwrap();
        sc.apps[0].threads[0].ops.push(Op::Trace { path: "t.mobigen".into(), format: None, tid: Some(7), gaps: Gaps::None });
        assert!(sc.validate().unwrap_err().contains("resolve_traces"));
        sc.resolve_traces(t.path()).unwrap();
        sc.validate().unwrap();
    }
}
