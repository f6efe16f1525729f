//! Holding buffered write-back during a pause (`[pause] hold_writeback`).
//!
//! Freezing the background stops it from dirtying more pages, but on cgroup v1 the pages it
//! dirtied before are written back by the kernel's flusher threads, which belong to no group:
//! neither the freezer nor BFQ's group weights reach them, and their writes compete with the
//! launch's reads. The kernel has no per-group switch for that; what it allows is to move the
//! global write-back thresholds for the pause and put them back after it:
//!
//! - `dirty_bytes` → the throttling limit in force (`dirty_bytes`, or `dirty_ratio` % of the
//!   dirtyable memory in `/proc/meminfo`): the same limit, now in bytes, so that
//! - `dirty_background_bytes` → that limit less one page: background write-back (the flusher
//!   writing because too much is dirty) stops until dirty data reaches the throttling limit.
//!   The kernel caps a background threshold at or above the limit to half the limit, which is
//!   why the limit is pinned first;
//! - `dirty_expire_centisecs` → a day ([`HELD_EXPIRE_CENTISECS`]): periodic write-back (the
//!   flusher's wake-up every `dirty_writeback_centisecs`) writes only data dirtied longer ago
//!   than the expiry: none, in practice, and a periodic pass under way stops at its next batch
//!   (the kernel recomputes the cut-off for each).
//!
//! `dirty_writeback_centisecs` is left alone. Turning periodic write-back off with it (0 for the
//! pause, as this module did until 2026-11-28) holds the same data, but the kernel's handler for
//! that file wakes every flusher to write *all* dirty data (`wakeup_flusher_threads`,
//! `WB_start_all`) whenever a new non-zero value is written: every pause ended with a full
//! write-back pass, dirty data that had not expired included (measured on this VM's kernel 6.18:
//! 200 MB of freshly dirtied data written within 0.5 s of `0 → 500`; the expiry's file wakes
//! nobody, and with it at a day 200 MB stayed dirty through eight seconds of periodic wake-ups
//! and were written at the first wake-up after the original came back). With the expiry as the
//! hold, the end of a pause only puts the thresholds back: what has expired by then is written
//! at the flusher's next periodic wake-up, the rest when it expires, as without the agent.
//!
//! Nothing is held when periodic write-back is off already (`dirty_writeback_centisecs` = 0, an
//! administrator's choice) or the expiry is a day or more already (another holder's, or an
//! administrator's who keeps periodic write-back from writing anything): a second agent must
//! not take held values for originals. The expiry is written first and put back last, so that a
//! second holder reading meanwhile backs off.
//!
//! Out of reach from user space: write-back already queued in the block layer, `sync(2)` and
//! `fsync(2)` by any process (they write their data whatever the thresholds), and data beyond
//! the throttling limit. The originals are journaled before the first write, restored when the
//! pause ends (by the agent, or by its watchdog should the agent die) and by the next start or
//! `forefront agent restore` after a crash.

use std::path::{Path, PathBuf};

use forefront_sysfs::vm::{self, Writeback};

const PAGE: u64 = 4096;

/// `dirty_expire_centisecs` during a pause: one day (see the module doc). The kernel turns it
/// into jiffies as `value * 10` ms in 32 bits, which this leaves far from overflowing.
pub const HELD_EXPIRE_CENTISECS: u64 = 24 * 60 * 60 * 100;

/// One setting held during a pause.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Held {
    /// The file written during the pause, and the value.
    pub set: PathBuf,
    pub value: String,
    /// The file and text that restore the original. For a bytes/ratio pair it is the file of
    /// the one in use: writing it zeroes the other (and the bytes files refuse 0).
    pub path: PathBuf,
    pub original: String,
}

/// The settings to hold for a pause (at most a minute, the config's bound on `pause.max_ms`:
/// well inside the held expiry), from the current ones and the dirtyable memory, in the order
/// to apply them (release them in reverse: the expiry is held first and put back last, so
/// another holder never plans from a half-held state). Pure: `root` only names the files.
pub fn plan(root: &Path, now: &Writeback, dirtyable_bytes: u64) -> Vec<Held> {
    if now.writeback_centisecs == 0 || now.expire_centisecs >= HELD_EXPIRE_CENTISECS {
        return vec![];
    }
    let pair = |bytes: u64, ratio: u64, name: &str| {
        if bytes > 0 {
            (bytes, vm::vm_path(root, &format!("{name}_bytes")), bytes.to_string())
        } else {
            (dirtyable_bytes / 100 * ratio, vm::vm_path(root, &format!("{name}_ratio")), ratio.to_string())
        }
    };
    let (limit, limit_path, limit_original) = pair(now.dirty_bytes, now.dirty_ratio, "dirty");
    let (background, bg_path, bg_original) = pair(now.background_bytes, now.background_ratio, "dirty_background");
    let limit = limit.max(2 * PAGE); // the kernel's minimum for dirty_bytes
    let held_background = limit - PAGE;
    let path = vm::vm_path(root, "dirty_expire_centisecs");
    let mut out = vec![Held {
        set: path.clone(),
        value: HELD_EXPIRE_CENTISECS.to_string(),
        path,
        original: now.expire_centisecs.to_string(),
    }];
    if held_background > background {
        out.push(Held {
            set: vm::vm_path(root, "dirty_bytes"),
            value: limit.to_string(),
            path: limit_path,
            original: limit_original,
        });
        out.push(Held {
            set: vm::vm_path(root, "dirty_background_bytes"),
            value: held_background.to_string(),
            path: bg_path,
            original: bg_original,
        });
    }
    out
}

/// Reads the settings and plans the hold.
pub fn plan_now(root: &Path) -> Result<Vec<Held>, forefront_sysfs::Error> {
    Ok(plan(root, &vm::writeback(root)?, vm::dirtyable_bytes(root)?))
}

/// Writes the held values, in order.
pub fn apply(held: &[Held]) -> Vec<forefront_sysfs::Error> {
    held.iter().filter_map(|h| forefront_sysfs::write_value(&h.set, &h.value).err()).collect()
}

/// Writes the originals back, in reverse order.
pub fn release(held: &[Held]) -> Vec<forefront_sysfs::Error> {
    held.iter().rev().filter_map(|h| forefront_sysfs::write_value(&h.path, &h.original).err()).collect()
}

/// A fake `/proc/sys/vm` with the kernel's default write-back settings and a `/proc/meminfo`
/// with `dirtyable_kib` of dirtyable memory, under `root` (for tests of the agent).
#[cfg(test)]
pub(crate) fn fake_vm(root: &Path, dirtyable_kib: u64) {
    let vm = root.join("proc/sys/vm");
    std::fs::create_dir_all(&vm).unwrap();
    for (f, v) in [
        ("dirty_background_bytes", 0),
        ("dirty_background_ratio", 10),
        ("dirty_bytes", 0),
        ("dirty_ratio", 20),
        ("dirty_writeback_centisecs", 500),
        ("dirty_expire_centisecs", 3000),
    ] {
        std::fs::write(vm.join(f), v.to_string()).unwrap();
    }
    std::fs::write(root.join("proc/meminfo"), format!("MemFree: {dirtyable_kib} kB\nActive(file): 0 kB\nInactive(file): 0 kB\n"))
        .unwrap();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stock() -> Writeback {
        Writeback {
            background_bytes: 0,
            background_ratio: 10,
            dirty_bytes: 0,
            dirty_ratio: 20,
            writeback_centisecs: 500,
            expire_centisecs: 3000,
        }
    }

    fn names(p: &[Held]) -> Vec<(&str, &str)> {
        fn n(p: &Path) -> &str {
            p.file_name().unwrap().to_str().unwrap()
        }
        p.iter().map(|h| (n(&h.set), n(&h.path))).collect()
    }

    #[test]
    fn stock_ratios_pin_the_limit_in_bytes_and_restore_through_the_ratios() {
        let mem = 1000 << 20;
        let p = plan(Path::new("/"), &stock(), mem);
        assert_eq!(
            names(&p),
            [
                ("dirty_expire_centisecs", "dirty_expire_centisecs"),
                ("dirty_bytes", "dirty_ratio"),
                ("dirty_background_bytes", "dirty_background_ratio"),
            ]
        );
        let limit = mem / 100 * 20;
        assert_eq!((p[0].value.as_str(), p[0].original.as_str()), ("8640000", "3000"), "a day: nothing expires in the pause");
        assert_eq!((p[1].value.clone(), p[1].original.as_str()), (limit.to_string(), "20"));
        assert_eq!((p[2].value.clone(), p[2].original.as_str()), ((limit - 4096).to_string(), "10"));
    }

    #[test]
    fn the_periodic_interval_is_never_written() {
        // Writing it back after a pause would wake every flusher to write all dirty data.
        for w in [stock(), Writeback { background_bytes: 64 << 20, dirty_bytes: 256 << 20, ..stock() }] {
            let p = plan(Path::new("/"), &w, 1 << 34);
            assert!(!p.is_empty());
            assert!(p
                .iter()
                .all(|h| !h.set.ends_with("dirty_writeback_centisecs") && !h.path.ends_with("dirty_writeback_centisecs")));
        }
    }

    #[test]
    fn bytes_settings_restore_through_bytes() {
        let w = Writeback { background_bytes: 64 << 20, dirty_bytes: 256 << 20, ..stock() };
        let p = plan(Path::new("/"), &w, 1 << 34);
        assert_eq!(names(&p)[1..], [("dirty_bytes", "dirty_bytes"), ("dirty_background_bytes", "dirty_background_bytes")]);
        assert_eq!(p[2].original, (64u64 << 20).to_string());
    }

    #[test]
    fn nothing_is_held_with_periodic_write_back_off_or_held_and_a_high_background_is_kept() {
        let off = Writeback { writeback_centisecs: 0, ..stock() };
        assert!(plan(Path::new("/"), &off, 1 << 30).is_empty(), "off already: an admin's choice");
        let held = Writeback { expire_centisecs: HELD_EXPIRE_CENTISECS, ..stock() };
        assert!(plan(Path::new("/"), &held, 1 << 30).is_empty(), "held already: another holder's");
        let almost = Writeback { expire_centisecs: HELD_EXPIRE_CENTISECS - 1, ..stock() };
        assert_eq!(plan(Path::new("/"), &almost, 1 << 30).len(), 3, "just below a day: held");
        let high = Writeback { background_bytes: 256 << 20, dirty_bytes: 256 << 20, ..stock() };
        assert_eq!(names(&plan(Path::new("/"), &high, 1 << 30)).len(), 1, "only the expiry");
    }

    #[test]
    fn a_second_holder_backs_off_until_the_first_has_released() {
        let t = tempfile::tempdir().unwrap();
        fake_vm(t.path(), 1_024_000);
        let first = plan_now(t.path()).unwrap();
        assert!(apply(&first).is_empty());
        assert!(plan_now(t.path()).unwrap().is_empty(), "held values are not originals");
        assert!(release(&first).is_empty());
        // (The fake tree keeps `dirty_bytes` where the kernel zeroes it when the ratio is
        // written: only the expiry is compared.)
        assert_eq!(plan_now(t.path()).unwrap()[0], first[0], "released: held again");
    }

    #[test]
    fn apply_then_release_on_a_fake_tree() {
        let t = tempfile::tempdir().unwrap();
        fake_vm(t.path(), 1_024_000);
        let vm = t.path().join("proc/sys/vm");
        let p = plan_now(t.path()).unwrap();
        assert!(apply(&p).is_empty());
        let read = |f: &str| std::fs::read_to_string(vm.join(f)).unwrap();
        assert_eq!(read("dirty_bytes"), (1024000u64 * 1024 / 100 * 20).to_string());
        assert_eq!((read("dirty_writeback_centisecs"), read("dirty_expire_centisecs")), ("500".into(), "8640000".into()));
        assert!(release(&p).is_empty());
        assert_eq!((read("dirty_ratio"), read("dirty_background_ratio")), ("20".into(), "10".into()));
        assert_eq!((read("dirty_writeback_centisecs"), read("dirty_expire_centisecs")), ("500".into(), "3000".into()));
    }
}
