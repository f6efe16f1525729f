//! Trace replay: a syscall trace becomes app threads running file operations; a block trace
//! becomes threads issuing requests straight to the block layer. Either runs on any device and
//! policy like a built-in scenario.
//!
//! Syscall replay maps each traced thread to a simulated thread of the app `replay` (the
//! threads named by `fg_tids`, or all when empty) or of a background app `trace-bg` (the
//! others). Files the trace reads are created on flash before the run, as large as the furthest
//! byte read. Timing: [`Timing::Trace`] keeps each thread's think time (the gap between the end
//! of one call and the start of the next; calls without a traced duration count as instant),
//! [`Timing::Afap`] issues calls back to back. The headline phase `replay` spans each
//! foreground thread from its first to its last call.
//!
//! Limits, each an error naming the record or the count: every request (block) and every byte a
//! call reads or writes (syscall) must lie within the device's capacity, and so must the files
//! the replay creates, together; a replay has at most [`MAX_REPLAY_THREADS`] threads.

use std::collections::{BTreeMap, BTreeSet};

use forefront_record::trace::{BlockAction, BlockEvent, BlockOp, SyscallRecord};
use forefront_workload::{AppSpec, Bytes, FileSpec, Op, Phone, Role, Scenario, ThreadSpec};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timing {
    /// Keep the trace's think times.
    Trace,
    /// As fast as possible.
    Afap,
}

/// What was left out of a replay, so the user can judge its fidelity.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Skipped {
    /// Syscall name → calls not replayed (not file I/O, or no file known).
    pub calls: BTreeMap<String, u64>,
    pub replayed: u64,
}

/// The most threads (syscall traces) or submitting pids (block traces) a replay simulates.
/// Each becomes a task of the simulator, and each foreground thread's start regroups every task
/// (`Op::Foreground`), so the set-up costs grow with the square of the count: 10,000 threads
/// replay in about a second, 20,000 took 4.5 s and 200,000 would take minutes. Real traces
/// have tens to hundreds (the Facebook trace: 74).
pub const MAX_REPLAY_THREADS: usize = 10_000;

fn too_many_threads(n: usize, what: &str) -> String {
    format!("the trace has {n} {what}; a replay simulates at most {MAX_REPLAY_THREADS} (each is a simulated task)")
}

/// A syscall record as an error names it.
fn describe_call(r: &SyscallRecord) -> String {
    format!("{} of tid {} at {:.6} s", r.name, r.tid, r.time_ns as f64 / 1e9)
}

const FG_APP: &str = "replay";
const BG_APP: &str = "trace-bg";

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

/// Build a scenario from syscall records (any order; sorted by time here).
///
/// `capacity` is the device's size in bytes: a call that reads or writes past it, or files that
/// together do not fit on it, are errors naming the call.
pub fn syscall_scenario(
    name: &str,
    records: &[SyscallRecord],
    fg_tids: &[u32],
    timing: Timing,
    device: &str,
    capacity: u64,
) -> Result<(Scenario, Skipped), String> {
    if records.is_empty() {
        return Err("the trace has no system calls to replay".into());
    }
    let mut sorted: Vec<&SyscallRecord> = records.iter().collect();
    sorted.sort_by_key(|r| (r.time_ns, r.tid));
    let t0 = sorted[0].time_ns;
    let mut skipped = Skipped::default();
    let mut sizes: BTreeMap<String, u64> = BTreeMap::new();
    let mut threads: BTreeMap<u32, (Vec<Op>, u64)> = BTreeMap::new(); // ops, time the last call ended
    for r in &sorted {
        let op = forefront_workload::trace_ops::record_op(r, &mut sizes);
        let Some(op) = op else {
            *skipped.calls.entry(r.name.clone()).or_insert(0) += 1;
            continue;
        };
        let end = match &op {
            Op::Read { offset, len, .. } => offset.0.checked_add(len.0),
            Op::Write { offset, len, .. } => offset.map_or(Some(len.0), |o| o.0.checked_add(len.0)),
            Op::Truncate { size, .. } => Some(size.0),
            _ => Some(0),
        };
        if end.is_none_or(|e| e > capacity) {
            return Err(format!(
                "{}: {} ends at byte {}, past the capacity of device {device} ({capacity} bytes)",
                describe_call(r),
                op_name(&op),
                end.map_or_else(|| "2^64 or more".to_string(), |e| e.to_string())
            ));
        }
        skipped.replayed += 1;
        if !threads.contains_key(&r.tid) && threads.len() == MAX_REPLAY_THREADS {
            let n = sorted.iter().map(|r| r.tid).collect::<BTreeSet<_>>().len();
            return Err(too_many_threads(n, "threads"));
        }
        let (ops, last_end) = threads.entry(r.tid).or_insert_with(|| (Vec::new(), t0));
        if timing == Timing::Trace && r.time_ns > *last_end {
            ops.push(Op::Sleep { ms: ms(r.time_ns - *last_end) });
        }
        *last_end = r.time_ns.saturating_add(r.duration_ns.unwrap_or(0));
        ops.push(op);
    }
    if threads.is_empty() {
        return Err("no call of the trace is file I/O that can be replayed".into());
    }
    let is_fg = |tid: u32| fg_tids.is_empty() || fg_tids.contains(&tid);
    let unknown: Vec<u32> = fg_tids.iter().copied().filter(|t| !threads.contains_key(t)).collect();
    if !unknown.is_empty() {
        return Err(format!("--fg names threads with no replayable call: {unknown:?}"));
    }
    let mut fg_threads = Vec::new();
    let mut bg_threads = Vec::new();
    for (tid, (ops, _)) in threads {
        let mut body = Vec::with_capacity(ops.len() + 3);
        if is_fg(tid) {
            // The first sleep (thread start offset) stays outside the measured phase.
            let mut it = ops.into_iter().peekable();
            if let Some(Op::Sleep { .. }) = it.peek() {
                body.push(it.next().expect("peeked"));
            }
            body.push(Op::Foreground { app: FG_APP.into() });
            body.push(Op::PhaseBegin { name: "replay".into() });
            body.extend(it);
            body.push(Op::PhaseEnd { name: "replay".into() });
            fg_threads.push(ThreadSpec { name: format!("tid{tid}"), background_priority: false, nice: 0, ops: body });
        } else {
            bg_threads.push(ThreadSpec { name: format!("tid{tid}"), background_priority: false, nice: 0, ops });
        }
    }
    let total = sizes.values().try_fold(0u64, |a, &b| a.checked_add(b));
    if total.is_none_or(|t| t > capacity) {
        return Err(format!(
            "the {} files the trace reads need {} bytes (each as large as the furthest byte read), more than the capacity of device {device} ({capacity} bytes)",
            sizes.len(),
            total.map_or_else(|| "2^64 or more".to_string(), |t| t.to_string())
        ));
    }
    let files =
        sizes.into_iter().map(|(path, size)| FileSpec { path, size: Bytes(size), owner: FG_APP.into(), cached: false }).collect();
    let mut apps =
        vec![AppSpec { name: FG_APP.into(), role: Role::Fg, threads: fg_threads, start_jitter_ms: 0.0, alive_s: vec![] }];
    let bg_apps = u32::from(!bg_threads.is_empty());
    if !bg_threads.is_empty() {
        apps.push(AppSpec { name: BG_APP.into(), role: Role::Bg, threads: bg_threads, start_jitter_ms: 0.0, alive_s: vec![] });
    }
    let span = ms(sorted.last().expect("non-empty").time_ns - t0) / 1e3;
    let sc = Scenario {
        name: format!("replay:{name}"),
        description: format!("replay of {name}"),
        headline: "replay".into(),
        device: device.into(),
        duration_s: (span * 20.0 + 600.0).min(3600.0),
        bg_apps,
        phone: Phone::default(),
        files,
        apps,
        bg_cells: 0,
        cells: Vec::new(),
        cells_params: Default::default(),
        mounts: Vec::new(),
        knobs: Vec::new(),
    };
    sc.validate()?;
    Ok((sc, skipped))
}

/// Build a scenario from block events: one thread per submitting pid issues each queued
/// request (Q, or D when the trace has no Q) at the block layer, keeping the gaps between
/// its submissions; reads and sync writes are waited for, async writes are not.
///
/// `capacity` is the device's size in bytes: a request past it is an error naming the request.
pub fn block_scenario(
    name: &str,
    events: &[BlockEvent],
    timing: Timing,
    device: &str,
    capacity: u64,
) -> Result<(Scenario, Skipped), String> {
    let has_q = events.iter().any(|e| e.action == BlockAction::Queue);
    let want = if has_q { BlockAction::Queue } else { BlockAction::Issue };
    let mut sorted: Vec<&BlockEvent> = events.iter().filter(|e| e.action == want).collect();
    if sorted.is_empty() {
        return Err("the trace has no queued (Q) or issued (D) block requests to replay".into());
    }
    sorted.sort_by_key(|e| (e.time_ns, e.seq));
    let t0 = sorted[0].time_ns;
    let mut skipped = Skipped::default();
    let mut threads: BTreeMap<u32, (Vec<Op>, u64)> = BTreeMap::new();
    for e in &sorted {
        let write = match e.rwbs.op {
            BlockOp::Read => false,
            BlockOp::Write => true,
            _ => {
                *skipped.calls.entry(format!("{:?}", e.rwbs.op).to_lowercase()).or_insert(0) += 1;
                continue;
            }
        };
        if e.bytes == 0 {
            *skipped.calls.entry("zero-length".into()).or_insert(0) += 1;
            continue;
        }
        let end = e.sector.checked_mul(forefront_record::trace::SECTOR_BYTES).and_then(|b| b.checked_add(e.bytes));
        if end.is_none_or(|b| b > capacity) {
            return Err(format!(
                "request {} {} of pid {} at {:.6} s (cpu {}, sequence {}): sector {} + {} bytes ends at byte {}, past the capacity of device {device} ({capacity} bytes)",
                e.action.code(),
                e.rwbs,
                e.pid,
                e.time_ns as f64 / 1e9,
                e.cpu,
                e.seq,
                e.sector,
                e.bytes,
                end.map_or_else(|| "2^64 or more".to_string(), |b| b.to_string())
            ));
        }
        skipped.replayed += 1;
        if !threads.contains_key(&e.pid) && threads.len() == MAX_REPLAY_THREADS {
            let n = sorted.iter().map(|e| e.pid).collect::<BTreeSet<_>>().len();
            return Err(too_many_threads(n, "submitting pids"));
        }
        let (ops, last) = threads.entry(e.pid).or_insert_with(|| (Vec::new(), t0));
        if timing == Timing::Trace && e.time_ns > *last {
            ops.push(Op::Sleep { ms: ms(e.time_ns - *last) });
        }
        *last = e.time_ns;
        ops.push(Op::Bio { write, sector: e.sector, bytes: Bytes(e.bytes), sync: !write || e.rwbs.sync });
    }
    let pids: BTreeSet<u32> = threads.keys().copied().collect();
    let fg_threads = threads
        .into_iter()
        .map(|(pid, (ops, _))| {
            let mut body = vec![Op::Foreground { app: FG_APP.into() }, Op::PhaseBegin { name: "replay".into() }];
            body.extend(ops);
            body.push(Op::PhaseEnd { name: "replay".into() });
            ThreadSpec { name: format!("pid{pid}"), background_priority: false, nice: 0, ops: body }
        })
        .collect();
    let span = ms(sorted.last().expect("non-empty").time_ns - t0) / 1e3;
    let sc = Scenario {
        name: format!("replay:{name}"),
        description: format!("block replay of {name} ({} submitters)", pids.len()),
        headline: "replay".into(),
        device: device.into(),
        duration_s: (span * 20.0 + 600.0).min(3600.0),
        bg_apps: 0,
        phone: Phone::default(),
        files: Vec::new(),
        apps: vec![AppSpec { name: FG_APP.into(), role: Role::Fg, threads: fg_threads, start_jitter_ms: 0.0, alive_s: vec![] }],
        bg_cells: 0,
        cells: Vec::new(),
        cells_params: Default::default(),
        mounts: Vec::new(),
        knobs: Vec::new(),
    };
    sc.validate()?;
    Ok((sc, skipped))
}

fn op_name(op: &Op) -> &'static str {
    match op {
        Op::Read { .. } => "the read",
        Op::Write { .. } => "the write",
        Op::Truncate { .. } => "the truncate",
        _ => "the call",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::any;

    const GIB16: u64 = 16 << 30;

    fn call(t: u64, tid: u32, name: &str, path: &str, off: Option<u64>, size: Option<u64>) -> SyscallRecord {
        SyscallRecord {
            time_ns: t,
            tid,
            name: name.into(),
            fd: Some(3),
            path: Some(path.into()),
            offset: off,
            size,
            duration_ns: None,
            result: size.map(|s| s as i64),
            comm: None,
        }
    }

    #[test]
    fn syscalls_become_ops_with_think_times_and_sized_files() {
        let recs = vec![
            call(1_000_000, 7, "pread64", "/d/a.db", Some(8192), Some(4096)),
            call(3_000_000, 7, "write", "/d/a.db-journal", None, Some(512)),
            call(3_500_000, 7, "fsync", "/d/a.db-journal", None, None),
            call(4_000_000, 7, "ioctl", "/dev/binder", None, None),
            call(2_000_000, 9, "read", "/d/b", Some(0), Some(100)),
        ];
        let (sc, skipped) = syscall_scenario("t", &recs, &[7], Timing::Trace, "galaxy-s5-emmc", GIB16).unwrap();
        assert_eq!(skipped.replayed, 4);
        assert_eq!(skipped.calls["ioctl"], 1);
        let sizes: BTreeMap<_, _> = sc.files.iter().map(|f| (f.path.as_str(), f.size.0)).collect();
        assert_eq!(sizes["/d/a.db"], 12288);
        assert_eq!(sizes["/d/b"], 100);
        assert_eq!(sc.apps.len(), 2, "tid 9 is background");
        let fg = &sc.apps[0].threads[0].ops;
        assert!(matches!(fg[0], Op::Foreground { .. }), "{fg:?}");
        // Think time between the pread (ends at 1 ms: no duration) and the write (3 ms): 2 ms.
        assert!(fg.iter().any(|o| matches!(o, Op::Sleep { ms } if (*ms - 2.0).abs() < 1e-9)), "{fg:?}");
        let (afap, _) = syscall_scenario("t", &recs, &[], Timing::Afap, "galaxy-s5-emmc", GIB16).unwrap();
        assert!(afap.apps[0].threads.iter().all(|t| t.ops.iter().all(|o| !matches!(o, Op::Sleep { .. }))));
    }

    #[test]
    fn empty_or_unreplayable_traces_are_errors() {
        assert!(syscall_scenario("t", &[], &[], Timing::Afap, "x", GIB16).is_err());
        let only_ioctl = vec![call(0, 1, "ioctl", "/dev/x", None, None)];
        assert!(syscall_scenario("t", &only_ioctl, &[], Timing::Afap, "x", GIB16).is_err());
        let recs = vec![call(0, 1, "read", "/a", Some(0), Some(10))];
        assert!(syscall_scenario("t", &recs, &[5], Timing::Afap, "x", GIB16).unwrap_err().contains("--fg"));
    }

    #[test]
    fn calls_and_requests_past_the_device_are_refused_naming_them() {
        // One pread at 1 EiB.
        let recs = vec![call(0, 1, "read", "/a", Some(0), Some(10)), call(2_000, 3, "pread64", "/b", Some(1 << 60), Some(4096))];
        let e = syscall_scenario("t", &recs, &[], Timing::Afap, "emmc", GIB16).unwrap_err();
        assert_eq!(
            e,
            "pread64 of tid 3 at 0.000002 s: the read ends at byte 1152921504606851072, past the capacity of device emmc (17179869184 bytes)"
        );
        // Files that fit one by one but not together.
        let recs = vec![
            call(0, 1, "read", "/a", Some((10 << 30) - 4096), Some(4096)),
            call(1, 1, "read", "/b", Some((10 << 30) - 4096), Some(4096)),
        ];
        let e = syscall_scenario("t", &recs, &[], Timing::Afap, "emmc", GIB16).unwrap_err();
        assert!(e.starts_with("the 2 files the trace reads need 21474836480 bytes"), "{e}");
        // A block request at sector 2^64 / 512 - 8 on a 16 GiB device.
        let mut q = BlockEvent {
            time_ns: 1_500_000,
            dev: forefront_record::trace::DevId { major: 8, minor: 0 },
            cpu: 1,
            seq: 7,
            pid: 42,
            comm: None,
            action: BlockAction::Queue,
            rwbs: forefront_record::trace::Rwbs::parse("R").unwrap(),
            sector: u64::MAX / 512 - 8,
            bytes: 4096,
            error: 0,
            detail: Default::default(),
        };
        let e = block_scenario("t", std::slice::from_ref(&q), Timing::Afap, "emmc", GIB16).unwrap_err();
        assert!(
            e.starts_with("request Q R of pid 42 at 0.001500 s (cpu 1, sequence 7): sector 36028797018963959 + 4096 bytes"),
            "{e}"
        );
        q.sector = (GIB16 - 4096) / 512;
        assert!(block_scenario("t", &[q], Timing::Afap, "emmc", GIB16).is_ok());
    }

    #[test]
    fn thread_counts_past_the_limit_are_refused() {
        let n = MAX_REPLAY_THREADS as u32 + 1;
        let recs: Vec<_> = (0..n).map(|t| call(u64::from(t), t, "read", "/a", Some(0), Some(10))).collect();
        let e = syscall_scenario("t", &recs, &[], Timing::Afap, "emmc", GIB16).unwrap_err();
        assert_eq!(e, format!("the trace has {n} threads; a replay simulates at most 10000 (each is a simulated task)"));
        assert!(syscall_scenario("t", &recs[1..], &[], Timing::Afap, "emmc", GIB16).is_ok());
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

        /// Any records (times, sizes, offsets and sectors up to 2^64, many threads): the
        /// scenario builders return a scenario or an error, never panic, and a scenario's files
        /// fit on the device.
        #[test]
        fn builders_refuse_or_build_never_panic(
            calls in proptest::collection::vec(
                (any::<u64>(), 0u32..64, 0usize..6, proptest::option::of(any::<u64>()), proptest::option::of(any::<u64>()), proptest::option::of(any::<u64>())),
                1..40),
            reqs in proptest::collection::vec((any::<u64>(), 0u32..64, any::<bool>(), any::<u64>(), 0u64..(1 << 33)), 1..40),
            capacity in 1u64..(1 << 40),
        ) {
            let names = ["read", "pread64", "write", "pwrite64", "ftruncate", "fsync"];
            let recs: Vec<SyscallRecord> = calls
                .iter()
                .map(|&(t, tid, k, off, size, dur)| SyscallRecord {
                    time_ns: t,
                    tid,
                    name: names[k].into(),
                    fd: Some(3),
                    path: Some(format!("/d/{}", tid % 4)),
                    // What the importers let through: a call's end within 2^63.
                    offset: off.map(|o| o >> 2),
                    size: size.map(|s| s >> 34),
                    duration_ns: dur,
                    result: None,
                    comm: None,
                })
                .collect();
            if let Ok((sc, _)) = syscall_scenario("p", &recs, &[], Timing::Trace, "d", capacity) {
                let total: u64 = sc.files.iter().map(|f| f.size.0).sum();
                proptest::prop_assert!(total <= capacity);
            }
            let evs: Vec<BlockEvent> = reqs
                .iter()
                .map(|&(t, pid, w, sector, bytes)| BlockEvent {
                    time_ns: t,
                    dev: forefront_record::trace::DevId { major: 8, minor: 0 },
                    cpu: 0,
                    seq: t,
                    pid,
                    comm: None,
                    action: BlockAction::Queue,
                    rwbs: forefront_record::trace::Rwbs::parse(if w { "W" } else { "R" }).unwrap(),
                    sector,
                    bytes,
                    error: 0,
                    detail: Default::default(),
                })
                .collect();
            if let Ok((sc, _)) = block_scenario("p", &evs, Timing::Trace, "d", capacity) {
                for t in &sc.apps[0].threads {
                    for op in &t.ops {
                        if let Op::Bio { sector, bytes, .. } = op {
                            proptest::prop_assert!(sector * 512 + bytes.0 <= capacity);
                        }
                    }
                }
            }
        }
    }
}
