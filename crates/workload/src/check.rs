//! The checks a scenario passes before it runs: every field in a range that the simulator can
//! run in bounded time and memory, every name it refers to defined.
//!
//! Every message begins with the dotted key it concerns, as the file spells it
//! (`phone.fs.journal_mib`, `app[1].thread[0].ops[3]`, `file[2].size`; indices from 0), so
//! [`crate::locate`] can give the line of the key in the file. The ranges follow the kernel's
//! own bounds where it has one (`sched_latency_ns` and `sched_min_granularity_ns` from 100 µs,
//! `cpu.shares` 2..=262144, `blkio.weight` 10..=1000, nice -20..=19) and otherwise keep a value
//! out of the places where it would stop the clock (a zero interval re-arms its timer at the
//! same instant forever) or make a run allocate without bound ([`limits`]).

use std::collections::BTreeSet;

use forefront_model::block::SchedulerConfig;

use crate::{Op, Role, Scenario};

/// Sizes that allocate in proportion to their value: each has a ceiling, and the error names it.
pub mod limits {
    /// Background app instances of a run (`bg_apps`, `--bg-apps`, a sweep's `bg_apps`): each is
    /// a few tasks with their programs; a thousand already make a run of minutes.
    pub const MAX_BG_APPS: u32 = 1000;
    /// Busy background cells of a run (`bg_cells`, `--bg-cells`), and cells in all
    /// (`cells.total`): each is a whole Android user space.
    pub const MAX_CELLS: u32 = 64;
    /// Seeds of one sweep or `sim compare`.
    pub const MAX_SEEDS: u64 = 10_000;
    /// Points of one sweep (devices × variants × axes × policies × BG apps × seeds), refused
    /// before the product is built.
    pub const MAX_SWEEP_POINTS: u64 = 1_000_000;
    /// Any size or offset in a scenario (files, reads, writes, truncates, downloads): 1 PiB, the
    /// largest device [`MAX_CAPACITY_GIB`] allows; a run also checks its files fit its device.
    pub const MAX_BYTES: u64 = 1 << 50;
    /// A device's capacity (GiB): 1 PiB, so its size in bytes and sectors never overflows.
    pub const MAX_CAPACITY_GIB: u64 = 1 << 20;
    /// Reads one `read_random` expands to, and pages of one `sqlite` transaction (each is an
    /// instruction of the thread's program).
    pub const MAX_EXPANDED_OPS: u32 = 100_000;
    /// Any time in ms (compute, sleep, think, binder calls, intervals): one hour, the longest
    /// run (`duration_s` ≤ 3600).
    pub const MAX_MS: f64 = 3_600_000.0;
}

use limits::*;

fn range_f64(key: &str, v: f64, lo: f64, hi: f64) -> Result<(), String> {
    if v.is_finite() && v >= lo && v <= hi {
        Ok(())
    } else {
        Err(format!("{key} must be a number in [{lo}, {hi}], got {v}"))
    }
}

/// `app[i].alive_s`: windows in order and apart, within a run's longest duration, and only
/// for an app whose end the run does not wait for.
fn check_alive(i: usize, a: &crate::AppSpec) -> Result<(), String> {
    if a.alive_s.is_empty() {
        return Ok(());
    }
    if a.role == Role::Fg {
        return Err(format!("app[{i}].alive_s: the fg app `{}` lives for the whole run (the run waits for it)", a.name));
    }
    if a.start_jitter_ms > 0.0 {
        return Err(format!("app[{i}].alive_s: give either alive_s or start_jitter_ms for app `{}`, not both", a.name));
    }
    let mut prev_end = 0.0;
    for (k, &[from, to]) in a.alive_s.iter().enumerate() {
        let key = format!("app[{i}].alive_s[{k}]");
        range_f64(&format!("{key}[0]"), from, 0.0, MAX_MS / 1000.0)?;
        range_f64(&format!("{key}[1]"), to, 0.0, MAX_MS / 1000.0)?;
        if to <= from {
            return Err(format!("{key}: the window must end after it starts, got [{from}, {to}] s"));
        }
        if k > 0 && from <= prev_end {
            return Err(format!("{key}: the window must start after the one before ends ({prev_end} s), got {from} s"));
        }
        prev_end = to;
    }
    Ok(())
}

fn range_u64(key: &str, v: u64, lo: u64, hi: u64) -> Result<(), String> {
    if (lo..=hi).contains(&v) {
        Ok(())
    } else {
        Err(format!("{key} must be in {lo}..={hi}, got {v}"))
    }
}

impl Scenario {
    /// Every check of a loaded scenario; the message begins with the key it concerns.
    pub fn validate(&self) -> Result<(), String> {
        range_f64("duration_s", self.duration_s, f64::MIN_POSITIVE, 3600.0)?;
        if self.bg_apps > MAX_BG_APPS {
            return Err(format!("bg_apps: {} is over the limit of {MAX_BG_APPS} background app instances", self.bg_apps));
        }
        if self.bg_cells > MAX_CELLS {
            return Err(format!("bg_cells: {} is over the limit of {MAX_CELLS} cells", self.bg_cells));
        }
        let fg: Vec<_> = self.apps.iter().filter(|a| a.role == Role::Fg).collect();
        if fg.len() != 1 {
            return Err(format!("app: exactly one app must have role = \"fg\", found {}", fg.len()));
        }
        let mut names = BTreeSet::new();
        for (i, a) in self.apps.iter().enumerate() {
            if !names.insert(a.name.as_str()) {
                return Err(format!("app[{i}].name: app `{}` is defined twice", a.name));
            }
            if a.threads.is_empty() {
                return Err(format!("app[{i}]: app `{}` has no thread", a.name));
            }
            range_f64(&format!("app[{i}].start_jitter_ms"), a.start_jitter_ms, 0.0, MAX_MS)?;
            check_alive(i, a)?;
            for (j, t) in a.threads.iter().enumerate() {
                if !(-20..=19).contains(&t.nice) {
                    return Err(format!("app[{i}].thread[{j}].nice must be in -20..=19, got {}", t.nice));
                }
            }
        }
        let mut paths = std::collections::BTreeMap::new();
        for (i, f) in self.files.iter().enumerate() {
            if !names.contains(f.owner.as_str()) {
                return Err(format!("file[{i}].owner: file `{}`: owner `{}` is not an app of this scenario", f.path, f.owner));
            }
            if let Some(first) = paths.insert(f.path.as_str(), i) {
                return Err(format!("file[{i}].path: `{}` is already declared by file[{first}]", f.path));
            }
            if f.size.0 > MAX_BYTES {
                return Err(format!("file[{i}].size: {} bytes is over the limit of {MAX_BYTES} (1 PiB)", f.size.0));
            }
        }
        let declared = Declared::of(self);
        let mut has_headline = false;
        for (i, a) in self.apps.iter().enumerate() {
            for (j, t) in a.threads.iter().enumerate() {
                let mut cx = OpCheck {
                    apps: &names,
                    headline: &self.headline,
                    has_headline: false,
                    begun: BTreeSet::new(),
                    declared: &declared,
                };
                cx.ops(&t.ops, &format!("app[{i}].thread[{j}].ops"))
                    .map_err(|e| format!("{e} (app `{}` thread `{}`)", a.name, t.name))?;
                has_headline |= cx.has_headline;
            }
        }
        self.validate_cells()?;
        self.phone.storage.validate()?;
        self.validate_mounts()?;
        if let Some(a) = crate::trace_ops::unresolved(&self.apps) {
            return Err(format!(
                "app `{a}`: a `trace` op is expanded when the scenario is loaded from a file; this scenario was built in memory (call Scenario::resolve_traces first)"
            ));
        }
        if !has_headline {
            return Err(format!("headline: phase `{}` is never begun by any thread", self.headline));
        }
        let app_names: Vec<&str> = self.apps.iter().map(|a| a.name.as_str()).collect();
        for (i, k) in self.knobs.iter().enumerate() {
            k.validate(i, &app_names)?;
        }
        self.validate_phone()
    }

    fn validate_mounts(&self) -> Result<(), String> {
        let mut seen = BTreeSet::new();
        for m in &self.mounts {
            if !m.path.starts_with('/') {
                return Err(format!("mount `{}`: path must be absolute", m.path));
            }
            if !seen.insert(m.path.trim_end_matches('/')) {
                return Err(format!("mount `{}` is defined twice", m.path));
            }
            if m.fs != crate::MountFs::Ext4 && !m.sync {
                return Err(format!("mount `{}`: sync = false only applies to ext4", m.path));
            }
            match (m.fs, &m.device) {
                (crate::MountFs::Vfat, None) => return Err(format!("mount `{}`: fs = \"vfat\" needs a `device`", m.path)),
                (crate::MountFs::Vfat, Some(d)) => {
                    crate::load_device(d).map_err(|e| format!("mount `{}`: device: {e}", m.path))?;
                }
                (_, Some(_)) => return Err(format!("mount `{}`: `device` only applies to fs = \"vfat\"", m.path)),
                (_, None) => {}
            }
            match (m.fs, m.size_mib) {
                (crate::MountFs::Lfs, Some(mib)) if !(32..=MAX_BYTES >> 20).contains(&mib) => {
                    return Err(format!(
                        "mount `{}`: size_mib must be in 32..={} (at least four 8 MiB segments), got {mib}",
                        m.path,
                        MAX_BYTES >> 20
                    ))
                }
                (crate::MountFs::Lfs, _) | (_, None) => {}
                (_, Some(_)) => return Err(format!("mount `{}`: size_mib only applies to fs = \"lfs\"", m.path)),
            }
        }
        for name in &self.phone.storage.raid0_with {
            crate::load_device(name).map_err(|e| format!("phone.storage.raid0_with: {e}"))?;
        }
        Ok(())
    }

    fn validate_phone(&self) -> Result<(), String> {
        let p = &self.phone;
        let c = &p.cpu;
        if c.cores.is_empty() || c.cores.len() > 256 {
            return Err(format!("phone.cpu.cores must list 1 to 256 speed factors, got {}", c.cores.len()));
        }
        for (k, &s) in c.cores.iter().enumerate() {
            if !(s > 0.0 && s <= 100.0) {
                return Err(format!("phone.cpu.cores[{k}] must be a positive speed factor up to 100, got {s}"));
            }
        }
        // The kernel's sysctl bounds: sched_latency_ns and sched_min_granularity_ns 100 µs..1 s.
        range_f64("phone.cpu.sched_latency_ms", c.sched_latency_ms, 0.1, 1000.0)?;
        range_f64("phone.cpu.min_granularity_ms", c.min_granularity_ms, 0.1, 1000.0)?;
        range_f64("phone.cpu.wakeup_granularity_ms", c.wakeup_granularity_ms, 0.0, 1000.0)?;
        range_f64("phone.cpu.context_switch_us", c.context_switch_us, 0.0, 10_000.0)?;
        range_f64("phone.cpu.tick_ms", c.tick_ms, 0.01, 1000.0)?;
        range_f64("phone.cpu.compute_cv", c.compute_cv, 0.0, 3.0)?;
        range_u64("phone.fg_cpu_shares", p.fg_cpu_shares.into(), 2, 262_144)?;
        range_u64("phone.bg_cpu_shares", p.bg_cpu_shares.into(), 2, 262_144)?;
        if let Some(&core) = p.bg_cores.iter().find(|&&core| core >= c.cores.len()) {
            return Err(format!("phone.bg_cores names core {core}, but the phone has {} cores", c.cores.len()));
        }
        range_u64("phone.blkio_root_weight", p.blkio_root_weight.into(), 10, 1000)?;
        range_u64("phone.blkio_bg_weight", p.blkio_bg_weight.into(), 10, 1000)?;
        range_u64("phone.page_cache_mib", p.page_cache_mib, 16, MAX_BYTES >> 20)?;
        if !(p.dirty_background_ratio > 0.0 && p.dirty_background_ratio <= p.dirty_ratio && p.dirty_ratio <= 100.0) {
            return Err(format!(
                "phone.dirty_background_ratio: need 0 < dirty_background_ratio <= dirty_ratio <= 100, got {} and {}",
                p.dirty_background_ratio, p.dirty_ratio
            ));
        }
        range_f64("phone.dirty_expire_s", p.dirty_expire_s, 0.0, 86_400.0)?;
        // The kernel refuses dirty_bytes under two pages (dirty_bytes_min).
        if p.dirty_bytes != 0 && p.dirty_bytes < 2 * 4096 {
            return Err(format!("phone.dirty_bytes: need 0 (use dirty_ratio) or at least 8192, got {}", p.dirty_bytes));
        }
        range_u64("phone.dirty_bytes", p.dirty_bytes, 0, MAX_BYTES)?;
        range_u64("phone.dirty_background_bytes", p.dirty_background_bytes, 0, MAX_BYTES)?;
        // dirty_writeback_centisecs: one centisecond at least (0, the kernel's "off", would
        // re-arm the flusher's timer at the same instant).
        range_f64("phone.writeback_interval_s", p.writeback_interval_s, 0.01, 3600.0)?;
        range_u64("phone.read_ahead_kib", p.read_ahead_kib, 0, 1 << 20)?;
        if !(4..=1 << 20).contains(&p.readahead_folio_kib) || !p.readahead_folio_kib.is_power_of_two() {
            return Err(format!(
                "phone.readahead_folio_kib must be a power of two in 4..=1048576 (KiB), got {}",
                p.readahead_folio_kib
            ));
        }
        range_u64("phone.nr_requests", p.nr_requests as u64, 1, 1 << 20)?;
        range_u64("phone.max_request_kib", p.max_request_kib, 4, 1 << 20)?;
        validate_scheduler(&p.scheduler)?;
        let fs = &p.fs;
        range_f64("phone.fs.commit_interval_s", fs.commit_interval_s, 0.01, 3600.0)?;
        range_u64("phone.fs.journal_mib", fs.journal_mib, 1, MAX_BYTES >> 20)?;
        range_f64("phone.fs.fragmentation", fs.fragmentation, 0.0, 1.0)?;
        range_u64("phone.fs.extent_blocks", fs.extent_blocks.into(), 1, 1 << 24)?;
        let k = &p.costs;
        for (key, v) in [
            ("syscall_us", k.syscall_us),
            ("copy_page_us", k.copy_page_us),
            ("copy_write_page_us", k.write_copy_page_us()),
            ("alloc_page_us", k.alloc_page_us),
            ("reclaim_page_us", k.reclaim_page_us),
            ("submit_request_us", k.submit_request_us),
            ("writeback_page_us", k.writeback_page_us),
            ("journal_block_us", k.journal_block_us),
            ("metadata_us", k.metadata_us),
            ("wakeup_us", k.wakeup_us),
        ] {
            range_f64(&format!("phone.costs.{key}"), v, 0.0, 1e6)?;
        }
        range_f64("phone.net_mb_s", p.net_mb_s, 1e-6, 1e6)?;
        range_f64("phone.net_rtt_ms", p.net_rtt_ms, 0.0, 10_000.0)?;
        range_f64("phone.net_rtt_cv", p.net_rtt_cv, 0.0, 10.0)?;
        if let Some(name) = &p.net_link {
            if forefront_model::net::preset(name).is_none() {
                let known: Vec<&str> = forefront_model::net::PRESETS.iter().map(|p| p.0).collect();
                return Err(format!(
                    "phone.net_link: unknown link `{name}` (known: {}){}",
                    known.join(", "),
                    crate::did_you_mean(name, known.iter().copied())
                ));
            }
        }
        range_u64("phone.storage.chunk_kib", p.storage.chunk_kib, 0, 1 << 20)?;
        if let Some(h) = &p.host_reclaim {
            range_f64("phone.host_reclaim.interval_ms", h.interval_ms, 1.0, 3_600_000.0)?;
            range_f64("phone.host_reclaim.pass_mib", h.pass_mib, 0.0, (MAX_BYTES >> 20) as f64)?;
            range_f64("phone.host_reclaim.reserve_mib", h.reserve_mib, 0.0, (MAX_BYTES >> 20) as f64)?;
            range_f64("phone.host_reclaim.backed_mib", h.backed_mib, 0.0, (MAX_BYTES >> 20) as f64)?;
            range_f64("phone.host_reclaim.page_us", h.page_us, 0.0, 1e6)?;
            if let Some(r) = h.read_page_us {
                range_f64("phone.host_reclaim.read_page_us", r, 0.0, 1e6)?;
            }
            if h.fragments_kib.len() > 11 {
                return Err(format!(
                    "phone.host_reclaim.fragments_kib: {} orders; the buddy allocator has 11 (0..=10)",
                    h.fragments_kib.len()
                ));
            }
            for (j, k) in h.fragments_kib.iter().enumerate() {
                range_f64(&format!("phone.host_reclaim.fragments_kib[{j}]"), *k, 0.0, (MAX_BYTES >> 10) as f64)?;
            }
            let mut prev = 0.0;
            for (i, [ms, mib]) in h.passes.iter().enumerate() {
                range_f64(&format!("phone.host_reclaim.passes[{i}] ms"), *ms, prev, 1e9)?;
                range_f64(&format!("phone.host_reclaim.passes[{i}] MiB"), *mib, 0.0, (MAX_BYTES >> 20) as f64)?;
                prev = *ms;
            }
        }
        let cp = &self.cells_params;
        range_u64("cells.total", cp.total.into(), 0, MAX_CELLS.into())?;
        range_u64("cells.vp_memory_mib", cp.vp_memory_mib, 0, MAX_BYTES >> 20)?;
        range_u64("cells.screen[0]", cp.screen[0].into(), 1, 1 << 16)?;
        range_u64("cells.screen[1]", cp.screen[1].into(), 1, 1 << 16)?;
        range_u64("cells.bytes_per_pixel", cp.bytes_per_pixel.into(), 1, 16)?;
        range_f64("cells.union_lookup_us", cp.union_lookup_us, 0.0, 1e6)?;
        range_f64("cells.ns_call_us", cp.ns_call_us, 0.0, 1e6)?;
        Ok(())
    }
}

fn validate_scheduler(s: &SchedulerConfig) -> Result<(), String> {
    const MS: u64 = 600_000;
    match s {
        SchedulerConfig::Noop => Ok(()),
        SchedulerConfig::Deadline(d) => {
            range_u64("phone.scheduler.read_expire", d.read_expire, 0, MS)?;
            range_u64("phone.scheduler.write_expire", d.write_expire, 0, MS)?;
            range_u64("phone.scheduler.writes_starved", d.writes_starved.into(), 0, 1 << 16)?;
            range_u64("phone.scheduler.fifo_batch", d.fifo_batch.into(), 1, 1 << 16)
        }
        SchedulerConfig::Cfq(c) => {
            range_u64("phone.scheduler.quantum", c.quantum.into(), 1, 1 << 10)?;
            range_u64("phone.scheduler.fifo_expire_sync", c.fifo_expire_sync, 0, MS)?;
            range_u64("phone.scheduler.fifo_expire_async", c.fifo_expire_async, 0, MS)?;
            range_u64("phone.scheduler.back_seek_max", c.back_seek_max, 0, 1 << 30)?;
            range_u64("phone.scheduler.back_seek_penalty", c.back_seek_penalty, 1, 1000)?;
            range_u64("phone.scheduler.slice_sync", c.slice_sync, 1, MS)?;
            range_u64("phone.scheduler.slice_async", c.slice_async, 1, MS)?;
            range_u64("phone.scheduler.slice_async_rq", c.slice_async_rq.into(), 1, 1 << 10)?;
            range_u64("phone.scheduler.slice_idle", c.slice_idle, 0, MS)?;
            range_u64("phone.scheduler.group_idle", c.group_idle, 0, MS)?;
            range_u64("phone.scheduler.target_latency", c.target_latency, 1, MS)
        }
        SchedulerConfig::MqDeadline(d) => {
            range_u64("phone.scheduler.read_expire", d.read_expire, 0, MS)?;
            range_u64("phone.scheduler.write_expire", d.write_expire, 0, MS)?;
            range_u64("phone.scheduler.writes_starved", d.writes_starved.into(), 0, 1 << 16)?;
            range_u64("phone.scheduler.fifo_batch", d.fifo_batch.into(), 1, 1 << 16)?;
            range_u64("phone.scheduler.prio_aging_expire", d.prio_aging_expire, 0, 3_600_000)
        }
        SchedulerConfig::Bfq(b) => {
            range_u64("phone.scheduler.fifo_expire_sync", b.fifo_expire_sync, 1, MS)?;
            range_u64("phone.scheduler.fifo_expire_async", b.fifo_expire_async, 1, MS)?;
            range_u64("phone.scheduler.back_seek_max", b.back_seek_max, 0, 1 << 30)?;
            range_u64("phone.scheduler.back_seek_penalty", b.back_seek_penalty, 1, 1000)?;
            range_u64("phone.scheduler.slice_idle", b.slice_idle, 0, MS)?;
            range_u64("phone.scheduler.timeout_sync", b.timeout_sync, 1, MS)?;
            range_u64("phone.scheduler.max_budget", b.max_budget, 0, 1 << 24)?;
            range_u64("phone.scheduler.wr_coeff", b.wr_coeff.into(), 1, 1000)?;
            range_u64("phone.scheduler.wr_duration_ms", b.wr_duration_ms, 0, MS)?;
            range_u64("phone.scheduler.wr_min_idle_time_ms", b.wr_min_idle_time_ms, 0, MS)
        }
    }
}

/// The paths a scenario's files exist at: its `[[file]]`s and what any op creates (`creat`,
/// `write`, `sqlite`), as patterns where a template (`{i}`, `{n}`, `{n1}`) matches any number.
struct Declared {
    patterns: Vec<String>,
}

/// A template's placeholder in a normalised path.
const ANY: char = '\u{1}';

fn normalise(path: &str) -> String {
    path.replace("{i}", "\u{1}").replace("{n1}", "\u{1}").replace("{n}", "\u{1}")
}

/// Whether `a` and `b` (normalised) can name the same path: a placeholder in either matches a
/// run of digits or the other's placeholder.
fn may_match(a: &[char], b: &[char]) -> bool {
    match (a.first(), b.first()) {
        (None, None) => true,
        (Some(&ANY), Some(&ANY)) => may_match(&a[1..], &b[1..]),
        (Some(&ANY), _) => digits_then(&a[1..], b),
        (_, Some(&ANY)) => digits_then(&b[1..], a),
        (Some(x), Some(y)) => x == y && may_match(&a[1..], &b[1..]),
        _ => false,
    }
}

/// Whether `rest` (after a placeholder) matches `other` once one or more digits of it are taken.
fn digits_then(rest: &[char], other: &[char]) -> bool {
    let n = other.iter().take_while(|c| c.is_ascii_digit()).count();
    (1..=n).any(|k| may_match(rest, &other[k..]))
}

impl Declared {
    fn of(sc: &Scenario) -> Declared {
        let mut patterns: BTreeSet<String> = sc.files.iter().map(|f| normalise(&f.path)).collect();
        fn created(ops: &[Op], out: &mut BTreeSet<String>) {
            for op in ops {
                match op {
                    Op::Repeat { ops, .. } => created(ops, out),
                    Op::Creat { path } | Op::Write { path, .. } => {
                        out.insert(normalise(path));
                    }
                    Op::Sqlite { db, .. } => {
                        out.insert(normalise(db));
                    }
                    _ => {}
                }
            }
        }
        for t in sc.apps.iter().flat_map(|a| &a.threads) {
            created(&t.ops, &mut patterns);
        }
        Declared { patterns: patterns.into_iter().collect() }
    }

    fn contains(&self, path: &str) -> bool {
        let p: Vec<char> = normalise(path).chars().collect();
        self.patterns.iter().any(|d| {
            let d: Vec<char> = d.chars().collect();
            may_match(&d, &p)
        })
    }
}

struct OpCheck<'a> {
    apps: &'a BTreeSet<&'a str>,
    headline: &'a str,
    has_headline: bool,
    /// Phases begun earlier in this thread's program (in program order).
    begun: BTreeSet<String>,
    declared: &'a Declared,
}

impl OpCheck<'_> {
    fn ops(&mut self, ops: &[Op], key: &str) -> Result<(), String> {
        for (k, op) in ops.iter().enumerate() {
            let key = format!("{key}[{k}]");
            self.op(op, &key).map_err(|e| format!("{key} ({}): {e}", op_name(op)))?;
        }
        Ok(())
    }

    fn op(&mut self, op: &Op, key: &str) -> Result<(), String> {
        let size = |what: &str, b: crate::Bytes| {
            if b.0 > MAX_BYTES {
                Err(format!("{what} {} is over the limit of {MAX_BYTES} bytes (1 PiB)", b.0))
            } else {
                Ok(())
            }
        };
        let ms = |what: &str, v: f64| {
            if v.is_finite() && (0.0..=MAX_MS).contains(&v) {
                Ok(())
            } else {
                Err(format!("{what} must be a number of ms in [0, {MAX_MS}], got {v}"))
            }
        };
        let declared = |path: &str| {
            if self.declared.contains(path) {
                Ok(())
            } else {
                Err(format!("reads `{path}`, which no [[file]] declares and no op creates (a typo would read 0 bytes)"))
            }
        };
        match op {
            Op::Repeat { ops, .. } => {
                if ops.is_empty() {
                    return Err("`ops` is empty".into());
                }
                self.ops(ops, &format!("{key}.ops"))?;
            }
            Op::PhaseBegin { name } => {
                self.has_headline |= name == self.headline;
                self.begun.insert(name.clone());
            }
            Op::Input { phase, .. } => self.has_headline |= phase == self.headline,
            Op::PhaseEnd { name } if !self.begun.contains(name) => {
                return Err(format!("phase `{name}` ends before any `phase_begin` of it in this thread"));
            }
            Op::Foreground { app } | Op::DropCaches { app, .. }
                if !self.apps.contains(app.rsplit('/').next().unwrap_or(app).trim_end_matches("{i}")) =>
            {
                return Err(format!("unknown app `{app}`"));
            }
            Op::Read { path, offset, len, chunk, .. } => {
                if chunk.0 == 0 {
                    return Err("chunk must be > 0".into());
                }
                size("offset", *offset)?;
                size("len", *len)?;
                declared(path)?;
            }
            Op::Write { offset, len, chunk, .. } => {
                if chunk.0 == 0 {
                    return Err("chunk must be > 0".into());
                }
                size("offset", offset.unwrap_or_default())?;
                size("len", *len)?;
            }
            Op::ReadRandom { path, count, size: sz, size_max, span, offset, .. } => {
                let max = size_max.unwrap_or(*sz);
                if *count == 0 || sz.0 == 0 || max.0 < sz.0 || span.0 < max.0 {
                    return Err(format!(
                        "read_random needs count > 0 and 0 < size <= size_max <= span, got count {count}, size {}, size_max {}, span {}",
                        sz.0, max.0, span.0
                    ));
                }
                if *count > MAX_EXPANDED_OPS {
                    return Err(format!("count {count} is over the limit of {MAX_EXPANDED_OPS} reads"));
                }
                size("offset", *offset)?;
                size("span", *span)?;
                declared(path)?;
            }
            Op::Truncate { size: s, .. } => size("size", *s)?,
            Op::NetRecv { bytes } => size("bytes", *bytes)?,
            Op::Sqlite { pages, .. } if !(1..=MAX_EXPANDED_OPS).contains(pages) => {
                return Err(format!("pages must be in 1..={MAX_EXPANDED_OPS}, got {pages}"));
            }
            Op::Compute { ms: v }
            | Op::Sleep { ms: v }
            | Op::SleepUntil { ms: v }
            | Op::BinderCall { ms: v, .. }
            | Op::Compose { ms: v } => ms("ms", *v)?,
            Op::Think { ms: v, jitter_ms } => {
                ms("ms", *v)?;
                ms("jitter_ms", *jitter_ms)?;
            }
            Op::Vsync { hz } if !(hz.is_finite() && *hz > 0.0 && *hz <= 1000.0) => {
                return Err(format!("hz must be in (0, 1000], got {hz}"));
            }
            Op::Bio { sector, bytes, .. } => {
                if bytes.0 == 0 || bytes.0 > 1 << 30 {
                    return Err(format!("bytes must be in 1..={}, got {}", 1u64 << 30, bytes.0));
                }
                if sector.checked_mul(512).is_none_or(|b| b > MAX_BYTES) {
                    return Err(format!("sector {sector} is beyond the largest device ({MAX_BYTES} bytes)"));
                }
            }
            _ => {}
        }
        Ok(())
    }
}

/// The op's name as a scenario file spells it (`read_random`).
pub fn op_name(op: &Op) -> &'static str {
    match op {
        Op::Open { .. } => "open",
        Op::Creat { .. } => "creat",
        Op::Close { .. } => "close",
        Op::Read { .. } => "read",
        Op::ReadRandom { .. } => "read_random",
        Op::Write { .. } => "write",
        Op::Fsync { .. } => "fsync",
        Op::Fdatasync { .. } => "fdatasync",
        Op::Truncate { .. } => "truncate",
        Op::Unlink { .. } => "unlink",
        Op::Stat { .. } => "stat",
        Op::Compute { .. } => "compute",
        Op::Sleep { .. } => "sleep",
        Op::SleepUntil { .. } => "sleep_until",
        Op::Think { .. } => "think",
        Op::NetRecv { .. } => "net_recv",
        Op::Wait { .. } => "wait",
        Op::Signal { .. } => "signal",
        Op::Sqlite { .. } => "sqlite",
        Op::Repeat { .. } => "repeat",
        Op::PhaseBegin { .. } => "phase_begin",
        Op::PhaseEnd { .. } => "phase_end",
        Op::Foreground { .. } => "foreground",
        Op::Trace { .. } => "trace",
        Op::SwitchCell { .. } => "switch_cell",
        Op::DropCaches { .. } => "drop_caches",
        Op::Exec => "exec",
        Op::Input { .. } => "input",
        Op::BinderCall { .. } => "binder_call",
        Op::BinderServe { .. } => "binder_serve",
        Op::PostFrame { .. } => "post_frame",
        Op::Vsync { .. } => "vsync",
        Op::Compose { .. } => "compose",
        Op::Bio { .. } => "bio",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_of_life_out_of_order_or_on_the_fg_app_are_refused_at_their_line() {
        let sc = |fg_alive: &str, bg_alive: &str| {
            format!(
                "name = 't'\ndescription = 'd'\nheadline = 'x'\ndevice = 'galaxy-s5-emmc'\nduration_s = 5.0\n\
                 [[app]]\nname = 'fg'\nrole = 'fg'\n{fg_alive}\n[[app.thread]]\nname = 'm'\nops = [{{ op = 'phase_begin', name = 'x' }}, {{ op = 'phase_end', name = 'x' }}]\n\
                 [[app]]\nname = 'bg'\nrole = 'bg'\n{bg_alive}\n[[app.thread]]\nname = 'w'\nops = [{{ op = 'sleep', ms = 1.0 }}]\n"
            )
        };
        let err = |text: String| crate::Scenario::parse("t.toml", &text).unwrap_err().to_string();
        crate::Scenario::parse("t.toml", &sc("", "alive_s = [[0.5, 1.0], [2.0, 2.5]]")).unwrap_or_else(|e| panic!("{e}"));
        let e = err(sc("", "alive_s = [[0.5, 1.0], [0.9, 2.5]]"));
        assert!(e.contains("app[1].alive_s[1]: the window must start after the one before ends (1 s), got 0.9 s"), "{e}");
        assert!(e.contains("t.toml:16"), "the line of the key: {e}");
        let e = err(sc("", "alive_s = [[1.0, 0.5]]"));
        assert!(e.contains("app[1].alive_s[0]: the window must end after it starts"), "{e}");
        let e = err(sc("", "alive_s = [[-1.0, 0.5]]"));
        assert!(e.contains("app[1].alive_s[0][0] must be a number in [0, 3600]"), "{e}");
        let e = err(sc("alive_s = [[0.0, 1.0]]", ""));
        assert!(e.contains("app[0].alive_s: the fg app `fg` lives for the whole run"), "{e}");
    }

    #[test]
    fn templates_match_numbers_and_each_other() {
        let m = |a: &str, b: &str| {
            let (a, b): (Vec<char>, Vec<char>) = (normalise(a).chars().collect(), normalise(b).chars().collect());
            may_match(&a, &b)
        };
        assert!(m("/data/f{i}", "/data/f12"));
        assert!(m("/data/f12", "/data/f{n}"));
        assert!(m("/d/{i}/x{n}", "/d/{n1}/x3"));
        assert!(!m("/data/f{i}", "/data/f"));
        assert!(!m("/data/f{i}", "/data/fx"));
        assert!(!m("/data/a", "/data/b"));
    }
}
