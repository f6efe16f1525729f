//! Synthetic traces of a given size for the import benchmark and `scripts/bench-import`
//! (deterministic: a fixed-seed xorshift generator).

use std::io::{self, Write};

use forefront_record::trace::{BlockAction, BlockDetail, BlockEvent, DevId, IoLayer, IoSpan, Rwbs};

use crate::blktrace::{encode, RawTrace};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// `requests` block requests (Q, G, I, D, C each; 70 % sequential) on two CPUs.
pub fn block_events(requests: u64) -> Vec<BlockEvent> {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut out = Vec::with_capacity(requests as usize * 5);
    let mut seq = [0u64; 2];
    let mut t = 0u64;
    let mut next_sector = 2048u64;
    let comms = ["fio", "kworker/u8:2", "jbd2/sda1-8", "com.android.chrome"];
    for i in 0..requests {
        let r = rng.next();
        let cpu = (r & 1) as u32;
        let pid = 1000 + (r >> 8) as u32 % 4;
        let comm = comms[(pid - 1000) as usize];
        let write = r & 2 != 0;
        let nsec = 8u64 << ((r >> 16) % 5);
        let sector = if (r >> 24) % 10 < 7 { next_sector } else { (r >> 32) % 100_000_000 };
        next_sector = sector + nsec;
        let rwbs = Rwbs::parse(if write { "WS" } else { "R" }).unwrap();
        let mut push = |action, dt: u64, cpu: u32, pid: u32, comm: Option<&str>| {
            t += dt;
            seq[cpu as usize] += 1;
            out.push(BlockEvent {
                time_ns: t,
                dev: DevId { major: 8, minor: 0 },
                cpu,
                seq: seq[cpu as usize],
                pid,
                comm: comm.map(str::to_string),
                action,
                rwbs,
                sector,
                bytes: nsec * 512,
                error: 0,
                detail: BlockDetail::None,
            });
        };
        push(BlockAction::Queue, 1_000 + i % 700, cpu, pid, Some(comm));
        push(BlockAction::GetRq, 300, cpu, pid, Some(comm));
        push(BlockAction::Insert, 200, cpu, pid, Some(comm));
        push(BlockAction::Issue, 2_000, cpu, pid, Some(comm));
        push(BlockAction::Complete, 50_000 + (r >> 40) % 200_000, 1 - cpu, 0, None);
    }
    out
}

/// blkparse text of [`block_events`].
pub fn write_blkparse<W: Write>(w: &mut W, events: &[BlockEvent]) -> io::Result<()> {
    for e in events {
        crate::blkparse::write_event(w, e)?;
    }
    Ok(())
}

/// Per-CPU binary blktrace files' contents for [`block_events`] (little-endian), with the
/// process-name notes blktrace writes.
pub fn blktrace_per_cpu(events: &[BlockEvent]) -> Vec<Vec<u8>> {
    let mut cpus = vec![Vec::new(), Vec::new()];
    let mut named = std::collections::BTreeSet::new();
    for e in events {
        let c = e.cpu as usize;
        if let Some(comm) = &e.comm {
            if named.insert((e.cpu, e.pid)) {
                cpus[c].extend_from_slice(&encode(&RawTrace::process_name(e.pid, comm, e.cpu, e.time_ns, 0), false));
            }
        }
        cpus[c].extend_from_slice(&encode(&RawTrace::from_event(e), false));
    }
    cpus
}

/// `n` strace lines (openat/read/write/pread64/fsync/close, some split unfinished/resumed).
pub fn write_strace<W: Write>(w: &mut W, n: u64) -> io::Result<()> {
    let mut rng = Rng(42);
    let mut t = 3_600_000_000u64;
    for i in 0..n {
        let r = rng.next();
        let tid = 4000 + (r % 4) as u32;
        t += 10 + r % 500;
        let (h, m, s, us) = (t / 3_600_000_000 % 24, t / 60_000_000 % 60, t / 1_000_000 % 60, t % 1_000_000);
        let ts = format!("{h:02}:{m:02}:{s:02}.{us:06}");
        match i % 6 {
            0 => writeln!(
                w,
                "{tid} {ts} openat(AT_FDCWD, \"/data/data/app/db{}.sqlite\", O_RDWR|O_CREAT|O_CLOEXEC, 0600) = {} <0.000021>",
                r % 7,
                3 + r % 5
            )?,
            1 => writeln!(
                w,
                "{tid} {ts} read({}, \"SQLite format 3\\0\\20\\0\\1\\1\\0@  \\0\\0\\0\\2\"..., 4096) = 4096 <0.000012>",
                3 + r % 5
            )?,
            2 => {
                writeln!(
                    w,
                    "{tid} {ts} pwrite64({}, \"\\r\\0\\0\\0\\1\\17\\304\\0\\17\\304\"..., 4096, {} <unfinished ...>",
                    3 + r % 5,
                    (r % 1000) * 4096
                )?;
                writeln!(w, "{tid} {ts} <... pwrite64 resumed>) = 4096 <0.000044>")?;
            }
            3 => writeln!(w, "{tid} {ts} write({}, \"\\0\\0\\0\\0\"..., 512) = 512 <0.000009>", 3 + r % 5)?,
            4 => writeln!(w, "{tid} {ts} fdatasync({}) = 0 <0.002311>", 3 + r % 5)?,
            _ => writeln!(w, "{tid} {ts} close({}) = 0 <0.000005>", 3 + r % 5)?,
        }
    }
    Ok(())
}

/// `n` IOPro records over all six layers.
pub fn write_iopro<W: Write>(w: &mut W, n: u64) -> io::Result<()> {
    let mut rng = Rng(7);
    for i in 0..n {
        let r = rng.next();
        let s = IoSpan {
            time_ns: 1_000_000_000 + i * 10_000,
            duration_ns: 1000 + r % 100_000,
            uid: 10061,
            pid: 2001 + (r % 3) as u32,
            tid: 2001 + (r % 9) as u32,
            layer: IoLayer::from_iopro(4 + (i % 6) as u32).unwrap(),
            write: r & 1 == 1,
            rw_raw: (r & 1) as u32,
            func_id: (r % 40) as u32,
            flag: 0,
            fd: 42,
            offset: (r >> 20) % 1_000_000 * 4096,
            size: 4096,
            inode: 1311 + r % 10,
            lba: (r >> 30) % 10_000_000,
            path: "/data/data/com.example/databases/app.db".into(),
        };
        crate::iopro::write_record(w, &s)?;
    }
    Ok(())
}

/// `n` ftrace lines (sched_switch, sched_wakeup, block_rq_issue, block_rq_complete).
pub fn write_ftrace<W: Write>(w: &mut W, n: u64) -> io::Result<()> {
    let mut rng = Rng(99);
    writeln!(w, "# tracer: nop")?;
    let mut t = 500_000_000u64;
    for i in 0..n {
        let r = rng.next();
        t += 1 + r % 50;
        let (s, us) = (t / 1_000_000, t % 1_000_000);
        let cpu = r % 4;
        match i % 4 {
            0 => writeln!(w, "            bash-11008   [{cpu:03}] d..2.   {s}.{us:06}: sched_switch: prev_comm=bash prev_pid=11008 prev_prio=120 prev_state=S ==> next_comm=dd next_pid=11010 next_prio=120")?,
            1 => writeln!(w, "              dd-11010   [{cpu:03}] dN.4.   {s}.{us:06}: sched_wakeup: comm=kworker/0:1 pid=18 prio=120 target_cpu=000")?,
            2 => writeln!(w, "              dd-11010   [{cpu:03}] .....   {s}.{us:06}: block_rq_issue: 254,0 WS 4096 () {} + 8 be,0,4 [dd]", r % 1_000_000)?,
            _ => writeln!(w, "          <idle>-0       [{cpu:03}] ..s1.   {s}.{us:06}: block_rq_complete: 254,0 WS () {} + 8 be,0,4 [0]", r % 1_000_000)?,
        }
    }
    Ok(())
}

/// `n` MobiGen lines in the Facebook trace's style.
pub fn write_mobigen<W: Write>(w: &mut W, n: u64) -> io::Result<()> {
    let mut rng = Rng(5);
    for i in 0..n {
        let r = rng.next();
        let tid = 1 + r % 60;
        let t = i * 40;
        match i % 5 {
            0 => writeln!(w, "{tid} {t} open /data/data O_WRONLY|O_CREAT|O_TRUNC|O_LARGEFILE {}", 30 + r % 50)?,
            1 => writeln!(w, "{tid} {t} pwrite {} {} 4096", 30 + r % 50, (r % 1000) * 4096)?,
            2 => writeln!(w, "{tid} {t} read {} 1", 30 + r % 50)?,
            3 => writeln!(w, "{tid} {t} stat64 \"/data/data/com.facebook.katana/databases/fb.db\" 0")?,
            _ => writeln!(w, "{tid} {t} fsync {} 0", 30 + r % 50)?,
        }
    }
    Ok(())
}
