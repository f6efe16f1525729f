//! Page cache control (`/proc/sys/vm`).

use std::path::{Path, PathBuf};

use crate::error::{read_to_string, write_str, Error, Result};

/// `sync` then `echo 3 > /proc/sys/vm/drop_caches`: clean page cache, dentries and inodes go,
/// so the next read of a file comes from the device (needs root).
pub fn drop_caches(root: &Path) -> Result<()> {
    // SAFETY: sync(2) takes no arguments and cannot fail.
    unsafe { libc::sync() };
    write_str(&root.join("proc/sys/vm/drop_caches"), "3")
}

/// The write-back settings of `/proc/sys/vm` (the kernel's
/// `Documentation/admin-guide/sysctl/vm.rst`). Of each bytes/ratio pair the kernel uses the one
/// that is not 0; writing one zeroes the other.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Writeback {
    /// `dirty_background_bytes` / `_ratio`: dirty memory at which the flusher threads start
    /// writing back in the background.
    pub background_bytes: u64,
    pub background_ratio: u64,
    /// `dirty_bytes` / `_ratio`: dirty memory at which a writing process is throttled.
    pub dirty_bytes: u64,
    pub dirty_ratio: u64,
    /// `dirty_writeback_centisecs`: period of the flusher's wake-ups (0 = none).
    pub writeback_centisecs: u64,
    /// `dirty_expire_centisecs`: age at which dirty data is written back by those wake-ups.
    pub expire_centisecs: u64,
}

/// The file of write-back setting `name` (e.g. `dirty_expire_centisecs`).
pub fn vm_path(root: &Path, name: &str) -> PathBuf {
    root.join("proc/sys/vm").join(name)
}

fn read_u64(path: &Path) -> Result<u64> {
    let text = read_to_string(path)?;
    text.trim().parse().map_err(|e| Error::Parse { path: path.to_owned(), line: 1, message: format!("{:?}: {e}", text.trim()) })
}

/// Reads the write-back settings.
pub fn writeback(root: &Path) -> Result<Writeback> {
    let r = |name| read_u64(&vm_path(root, name));
    Ok(Writeback {
        background_bytes: r("dirty_background_bytes")?,
        background_ratio: r("dirty_background_ratio")?,
        dirty_bytes: r("dirty_bytes")?,
        dirty_ratio: r("dirty_ratio")?,
        writeback_centisecs: r("dirty_writeback_centisecs")?,
        expire_centisecs: r("dirty_expire_centisecs")?,
    })
}

/// Memory the kernel counts as dirtyable, in bytes: `MemFree + Active(file) + Inactive(file)`
/// of `/proc/meminfo` (the kernel's `global_dirtyable_memory`, less its small reserves).
/// `dirty_ratio` and `dirty_background_ratio` are percentages of it.
pub fn dirtyable_bytes(root: &Path) -> Result<u64> {
    let path = root.join("proc/meminfo");
    let text = read_to_string(&path)?;
    let mut sum = 0;
    for field in ["MemFree:", "Active(file):", "Inactive(file):"] {
        let (i, line) = text.lines().enumerate().find(|(_, l)| l.starts_with(field)).ok_or_else(|| Error::Parse {
            path: path.clone(),
            line: 0,
            message: format!("no {field} line"),
        })?;
        let kib = line[field.len()..].trim().trim_end_matches("kB").trim();
        sum += kib.parse::<u64>().map_err(|e| Error::Parse {
            path: path.clone(),
            line: i + 1,
            message: format!("{field} {kib:?}: {e}"),
        })? * 1024;
    }
    Ok(sum)
}

/// Whether this machine's memory balloon reports free memory to its host (virtio-balloon
/// feature 5, `VIRTIO_BALLOON_F_REPORTING`: the guest's `mm/page_reporting.c` tells the host of
/// free blocks of 2 MiB and up about a second after they are freed, and the host takes them
/// back, so the next write into them faults on the host; docs/twin.md, twin23). `None`: no
/// virtio balloon (not a VM, or none configured), or its features cannot be read.
pub fn free_page_reporting(root: &Path) -> Option<bool> {
    const VIRTIO_ID_BALLOON: u32 = 5;
    const VIRTIO_BALLOON_F_REPORTING: usize = 5;
    let devices = root.join("sys/bus/virtio/devices");
    let mut entries: Vec<PathBuf> = std::fs::read_dir(&devices).ok()?.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    entries.into_iter().find_map(|d| {
        let id = std::fs::read_to_string(d.join("device")).ok()?;
        let id = u32::from_str_radix(id.trim().trim_start_matches("0x"), 16).ok()?;
        if id != VIRTIO_ID_BALLOON {
            return None;
        }
        // One character per feature bit, bit 0 first.
        let bits = std::fs::read_to_string(d.join("features")).ok()?;
        Some(bits.trim().as_bytes().get(VIRTIO_BALLOON_F_REPORTING) == Some(&b'1'))
    })
}

/// The free page reporting's running counts where this kernel exposes them (this VM's kernel
/// does, as `page_reporting` module parameters; stock kernels do not): the memory reported
/// (KiB) and the passes run since boot. `None` where they are absent or unreadable.
pub fn page_reporting_counters(root: &Path) -> Option<ReportingCounters> {
    let dir = root.join("sys/module/page_reporting/parameters");
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).ok()?.trim().parse::<u64>().ok();
    Some(ReportingCounters { reported_kib: read("reported_kib")?, passes: read("passes")? })
}

/// The free memory below free page reporting's order, by order: `pages[j]` free pages in
/// blocks of order `j` (`/proc/buddyinfo`'s count at order `j` times `2^j`, all zones summed)
/// for every `j` below `page_reporting_order` (the module parameter; the kernel's default,
/// `pageblock_order`, is 9 on x86-64 with 4 KiB pages). These blocks are never reported: the
/// buddy allocator cuts small folios from them first (docs/twin.md, twin29). `None` where the
/// kernel does not report free pages or the files are unreadable.
pub fn free_below_reporting_order(root: &Path) -> Option<Vec<u64>> {
    let order: usize = std::fs::read_to_string(root.join("sys/module/page_reporting/parameters/page_reporting_order"))
        .ok()?
        .trim()
        .parse()
        .ok()
        // The buddy allocator's orders are 0..=10 (`MAX_PAGE_ORDER`); anything else is not a
        // reporting order this reader understands.
        .filter(|&o| o <= 11)?;
    let text = std::fs::read_to_string(root.join("proc/buddyinfo")).ok()?;
    let mut pages = vec![0u64; order];
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        // "Node 0, zone   Normal   749  1072 ..."
        let counts = line.split_once("zone")?.1.split_whitespace().skip(1);
        for (j, c) in counts.enumerate().take(order) {
            pages[j] += c.parse::<u64>().ok()? << j;
        }
    }
    Some(pages)
}

/// [`page_reporting_counters`]' figures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReportingCounters {
    pub reported_kib: u64,
    pub passes: u64,
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_reporting_counters_are_read_where_the_kernel_has_them() {
        let t = tempfile::tempdir().unwrap();
        assert_eq!(super::page_reporting_counters(t.path()), None, "a stock kernel");
        let d = t.path().join("sys/module/page_reporting/parameters");
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("reported_kib"), "887719072\n").unwrap();
        assert_eq!(super::page_reporting_counters(t.path()), None, "no pass count");
        std::fs::write(d.join("passes"), "4325\n").unwrap();
        assert_eq!(
            super::page_reporting_counters(t.path()),
            Some(super::ReportingCounters { reported_kib: 887_719_072, passes: 4325 })
        );
        std::fs::write(d.join("passes"), "many\n").unwrap();
        assert_eq!(super::page_reporting_counters(t.path()), None, "unreadable");
    }

    #[test]
    fn the_free_blocks_below_the_reporting_order_are_summed_over_zones_in_pages() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("sys/module/page_reporting/parameters");
        std::fs::create_dir_all(&d).unwrap();
        std::fs::create_dir_all(t.path().join("proc")).unwrap();
        std::fs::write(
            t.path().join("proc/buddyinfo"),
            "Node 0, zone      DMA      0      0      0      0      0      0      0      0      1      1      3 \n\
             Node 0, zone    DMA32      2      3      0      2      3      2      1      4      4      2    752 \n\
             Node 0, zone   Normal    749   1072    430    699   1058    955    683    529    372    230    703 \n",
        )
        .unwrap();
        assert_eq!(super::free_below_reporting_order(t.path()), None, "no reporting order: no reporting");
        std::fs::write(d.join("page_reporting_order"), "9\n").unwrap();
        let pages = super::free_below_reporting_order(t.path()).unwrap();
        assert_eq!(pages.len(), 9, "orders 0..8");
        assert_eq!(pages[0], 751);
        assert_eq!(pages[1], (3 + 1072) * 2);
        assert_eq!(pages[8], (1 + 4 + 372) * 256);
        std::fs::write(d.join("page_reporting_order"), "4000000000\n").unwrap();
        assert_eq!(super::free_below_reporting_order(t.path()), None, "no such order");
        std::fs::write(d.join("page_reporting_order"), "9\n").unwrap();
        std::fs::write(t.path().join("proc/buddyinfo"), "Node 0, zone Normal 1 x 3\n").unwrap();
        assert_eq!(super::free_below_reporting_order(t.path()), None, "unreadable");
    }

    #[test]
    fn writes_3_in_a_fake_tree() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(t.path().join("proc/sys/vm")).unwrap();
        std::fs::write(t.path().join("proc/sys/vm/drop_caches"), "0").unwrap();
        super::drop_caches(t.path()).unwrap();
        assert_eq!(std::fs::read_to_string(t.path().join("proc/sys/vm/drop_caches")).unwrap(), "3");
    }

    #[test]
    fn free_page_reporting_is_the_balloons_feature_5() {
        let t = tempfile::tempdir().unwrap();
        assert_eq!(super::free_page_reporting(t.path()), None, "no virtio bus");
        let dev = |name: &str, id: &str, features: &str| {
            let d = t.path().join("sys/bus/virtio/devices").join(name);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("device"), id).unwrap();
            std::fs::write(d.join("features"), features).unwrap();
        };
        // A block device with bit 5 set is not a balloon.
        dev("virtio1", "0x0002\n", "0010011001\n");
        assert_eq!(super::free_page_reporting(t.path()), None, "no balloon");
        dev("virtio0", "0x0005\n", "0110000000\n");
        assert_eq!(super::free_page_reporting(t.path()), Some(false));
        // This VM's balloon (twin23): stats, deflate on OOM and free page reporting.
        dev("virtio0", "0x0005\n", "0110010100000000\n");
        assert_eq!(super::free_page_reporting(t.path()), Some(true));
    }

    #[test]
    fn reads_write_back_settings_and_names_a_bad_file() {
        let t = tempfile::tempdir().unwrap();
        let vm = t.path().join("proc/sys/vm");
        std::fs::create_dir_all(&vm).unwrap();
        for (f, v) in [
            ("dirty_background_bytes", "0\n"),
            ("dirty_background_ratio", "10\n"),
            ("dirty_bytes", "0\n"),
            ("dirty_ratio", "20\n"),
            ("dirty_writeback_centisecs", "500\n"),
            ("dirty_expire_centisecs", "3000\n"),
        ] {
            std::fs::write(vm.join(f), v).unwrap();
        }
        let w = super::writeback(t.path()).unwrap();
        assert_eq!((w.background_ratio, w.dirty_ratio, w.writeback_centisecs, w.expire_centisecs), (10, 20, 500, 3000));
        let meminfo = t.path().join("proc/meminfo");
        std::fs::write(&meminfo, "MemTotal: 2000 kB\nMemFree: 100 kB\nActive(file): 20 kB\nInactive(file): 3 kB\n").unwrap();
        assert_eq!(super::dirtyable_bytes(t.path()).unwrap(), 123 * 1024);
        std::fs::write(&meminfo, "MemTotal: 2000 kB\nMemFree: 100 kB\nActive(file): lots\nInactive(file): 3 kB\n").unwrap();
        let e = super::dirtyable_bytes(t.path()).unwrap_err().to_string();
        assert!(e.contains("meminfo:3") && e.contains("Active(file)"), "{e}");
        std::fs::write(vm.join("dirty_ratio"), "twenty").unwrap();
        let e = super::writeback(t.path()).unwrap_err().to_string();
        assert!(e.contains("dirty_ratio") && e.contains("twenty"), "{e}");
    }
}
