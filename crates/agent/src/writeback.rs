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
//! - `dirty_writeback_centisecs` → 0: no periodic flusher wake-ups;
//! - `dirty_expire_centisecs` → its value plus the pause's length: data that had not expired
//!   when the pause began does not expire during it, so a periodic pass already running stops
//!   at the data that had.
//!
//! Nothing is held when periodic write-back is off already (an administrator's choice, or
//! another holder: a second agent must not take held values for originals).
//!
//! Out of reach from user space: write-back already queued in the block layer, `sync(2)` and
//! `fsync(2)` by any process (they write their data whatever the thresholds), and data beyond
//! the throttling limit. The originals are journaled before the first write, restored when the
//! pause ends (by the agent, or by its watchdog should the agent die) and by the next start or
//! `forefront agent restore` after a crash.

use std::path::{Path, PathBuf};

use forefront_sysfs::vm::{self, Writeback};

const PAGE: u64 = 4096;

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

/// The settings to hold for a pause of at most `max_ms`, from the current ones and the
/// dirtyable memory, in the order to apply them (release them in reverse: periodic write-back
/// is turned off first and back on last, so another holder never plans from a half-held
/// state). Pure: `root` only names the files.
pub fn plan(root: &Path, now: &Writeback, dirtyable_bytes: u64, max_ms: u64) -> Vec<Held> {
    if now.writeback_centisecs == 0 {
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
    // Periodic write-back off first: a second holder reading meanwhile backs off.
    let mut out: Vec<Held> = [
        ("dirty_writeback_centisecs", now.writeback_centisecs, 0),
        ("dirty_expire_centisecs", now.expire_centisecs, now.expire_centisecs + max_ms.div_ceil(10)),
    ]
    .into_iter()
    .map(|(name, original, value)| {
        let path = vm::vm_path(root, name);
        Held { set: path.clone(), value: value.to_string(), path, original: original.to_string() }
    })
    .collect();
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
pub fn plan_now(root: &Path, max_ms: u64) -> Result<Vec<Held>, forefront_sysfs::Error> {
    Ok(plan(root, &vm::writeback(root)?, vm::dirtyable_bytes(root)?, max_ms))
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
        let p = plan(Path::new("/"), &stock(), mem, 3000);
        assert_eq!(
            names(&p),
            [
                ("dirty_writeback_centisecs", "dirty_writeback_centisecs"),
                ("dirty_expire_centisecs", "dirty_expire_centisecs"),
                ("dirty_bytes", "dirty_ratio"),
                ("dirty_background_bytes", "dirty_background_ratio"),
            ]
        );
        let limit = mem / 100 * 20;
        assert_eq!((p[0].value.as_str(), p[0].original.as_str()), ("0", "500"));
        assert_eq!((p[1].value.as_str(), p[1].original.as_str()), ("3300", "3000"), "3 s more: nothing expires in the pause");
        assert_eq!((p[2].value.clone(), p[2].original.as_str()), (limit.to_string(), "20"));
        assert_eq!((p[3].value.clone(), p[3].original.as_str()), ((limit - 4096).to_string(), "10"));
    }

    #[test]
    fn bytes_settings_restore_through_bytes() {
        let w = Writeback { background_bytes: 64 << 20, dirty_bytes: 256 << 20, ..stock() };
        let p = plan(Path::new("/"), &w, 1 << 34, 100);
        assert_eq!(names(&p)[2..], [("dirty_bytes", "dirty_bytes"), ("dirty_background_bytes", "dirty_background_bytes")]);
        assert_eq!(p[3].original, (64u64 << 20).to_string());
        assert_eq!(p[1].value, "3010", "100 ms rounds up to 1 cs");
    }

    #[test]
    fn nothing_is_held_with_periodic_write_back_off_and_a_high_background_is_kept() {
        let off = Writeback { writeback_centisecs: 0, ..stock() };
        assert!(plan(Path::new("/"), &off, 1 << 30, 3000).is_empty(), "off already: an admin's choice or another holder");
        let high = Writeback { background_bytes: 256 << 20, dirty_bytes: 256 << 20, ..stock() };
        assert_eq!(names(&plan(Path::new("/"), &high, 1 << 30, 3000)).len(), 2, "only the periodic pair");
    }

    #[test]
    fn apply_then_release_on_a_fake_tree() {
        let t = tempfile::tempdir().unwrap();
        fake_vm(t.path(), 1_024_000);
        let vm = t.path().join("proc/sys/vm");
        let p = plan_now(t.path(), 3000).unwrap();
        assert!(apply(&p).is_empty());
        let read = |f: &str| std::fs::read_to_string(vm.join(f)).unwrap();
        assert_eq!(read("dirty_bytes"), (1024000u64 * 1024 / 100 * 20).to_string());
        assert_eq!(read("dirty_writeback_centisecs"), "0");
        assert!(release(&p).is_empty());
        assert_eq!((read("dirty_ratio"), read("dirty_background_ratio")), ("20".into(), "10".into()));
        assert_eq!((read("dirty_writeback_centisecs"), read("dirty_expire_centisecs")), ("500".into(), "3000".into()));
    }
}
