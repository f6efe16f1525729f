//! The flash translation layer of an SD card or a simple eMMC: allocation units (AUs), the few
//! AUs the card keeps open, and what a write costs inside an open AU versus outside one.
//!
//! A device selects it with a `[ftl]` table in its device file ([`FtlParams`]); without one the
//! device keeps the flat model of [`super`] (every non-sequential write costs
//! `1 / write_rand_iops`), so every other device is unchanged.
//!
//! The model is the one Arnd Bergmann measured with flashbench on real cards (Linaro's "flash
//! card survey", and LWN 428584 "Optimizing Linux with cheap flash drives", 2011) and the SD
//! specification's speed-class model (Physical Layer Simplified Specification 2.00–3.01, §4.13:
//! the card is written in allocation units of up to 4 MiB for SDHC, a speed class is measured
//! on a recording stream written in order through AUs):
//!
//! - the logical space is cut into AUs of `au_kib` (the erase-block group the card's FTL maps as
//!   one unit);
//! - the card keeps at most `open_aus` AUs **open**: a new physical block is being filled for
//!   each while its old block still holds the data not yet rewritten;
//! - a write inside an open AU costs its **page program** time (`bytes / write_seq`; with
//!   `random_in_au` a write out of order costs at least one whole `page_kib` page; without it
//!   — a *linear-only* card — a write behind the AU's write pointer closes the AU and reopens
//!   it, and a write ahead of it first copies the skipped pages);
//! - an open AU whose new block has no free page left (`au_kib` of pages programmed, in place
//!   rewrites included) is **merged** and reopened;
//! - a write to an AU that is not open opens it; when `open_aus` are open already, the least
//!   recently written one is **closed** first: its pages not rewritten are copied from the old
//!   block into the new one and the old block is erased (garbage collection). That copy is
//!   what a random write far from the open AUs pays.
//!
//! **Calibration.** The card table's random-write figure (`write_rand_iops`, [RS] Table 2:
//! random 4 KiB writes over a large file) is, in this model, a page program plus the close of
//! an AU that holds one written page. So the cost of closing an AU with `w` bytes still to copy
//! is `(1 / write_rand_iops − program(4 KiB)) · w / (au − 4 KiB)`: the measured figure fixes the
//! card's copy rate, the geometry fixes how often a workload pays it.
//! `crates/sim/tests/card_microbench.rs` runs the paper's microbenchmark on every card model and
//! compares with the table (within 20 %).
//!
//! Simplifications versus a real card's firmware:
//! - one close cost per AU, linear in the pages it copies; the erase is folded into it (erase is
//!   a few ms against hundreds for the copy on the cards modelled);
//! - no separate FAT-area handling (cards that allow random writes in their first AUs): the
//!   simulated ext4 puts its journal and metadata elsewhere anyway;
//! - no background garbage collection in idle time: a close is paid by the write that causes
//!   it, as flashbench measures on SD cards (they have no idle-time GC worth the name);
//! - the AU map starts empty (every AU closed) and wear levelling is free.

use serde::{Deserialize, Serialize};

/// The FTL geometry of a device file's `[ftl]` table; every field cites its source there.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FtlParams {
    /// Allocation unit (KiB): the unit the FTL maps and garbage-collects.
    pub au_kib: u64,
    /// AUs the card keeps open at once.
    pub open_aus: usize,
    /// Effective page (KiB): the smallest program; an out-of-order write costs at least one.
    pub page_kib: u64,
    /// Whether writes may land out of order inside an open AU (page-mapped log blocks); false:
    /// a linear-only card, on which a write behind the AU's write pointer closes and reopens it.
    #[serde(default)]
    pub random_in_au: bool,
}

impl FtlParams {
    pub fn validate(&self) -> Result<(), String> {
        if !(4..=1 << 20).contains(&self.page_kib) || !self.page_kib.is_power_of_two() {
            return Err(format!("ftl.page_kib must be a power of two in 4..=1048576, got {}", self.page_kib));
        }
        if !(self.page_kib..=1 << 20).contains(&self.au_kib) || self.au_kib % self.page_kib != 0 {
            return Err(format!(
                "ftl.au_kib must be a multiple of page_kib ({}) in {}..=1048576, got {}",
                self.page_kib, self.page_kib, self.au_kib
            ));
        }
        if self.au_kib / self.page_kib > 1 << 16 {
            return Err(format!("ftl.au_kib / page_kib must be at most 65536 pages, got {}", self.au_kib / self.page_kib));
        }
        if !(1..=64).contains(&self.open_aus) {
            return Err(format!("ftl.open_aus must be in 1..=64, got {}", self.open_aus));
        }
        Ok(())
    }
}

/// One open AU: its new block's programmed pages.
#[derive(Clone, Debug)]
struct OpenAu {
    au: u64,
    /// The byte after the last write (linear-only: bytes below it are programmed or copied).
    pointer: u64,
    /// Random-in-AU: which logical pages have a copy in the new block.
    written: Vec<u64>,
    distinct: u64,
    /// Pages programmed into the new block, rewrites included.
    used: u64,
}

/// What one write cost the FTL, split for the device's bookkeeping.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FtlCost {
    /// Page programs (ns, at the sequential program rate).
    pub program_ns: f64,
    /// AU closes, merges and skipped-page copies (ns).
    pub copy_ns: f64,
    /// AUs closed or merged by this write.
    pub closes: u32,
}

/// The FTL state of one device.
#[derive(Clone, Debug)]
pub struct Ftl {
    pub params: FtlParams,
    page: u64,
    pages_per_au: u64,
    /// ns to program one byte (sequential rate).
    program_ns_per_byte: f64,
    /// ns to copy one page during a close.
    copy_ns_per_page: f64,
    /// Open AUs, least recently written first.
    open: Vec<OpenAu>,
    /// Page maps of closed AUs, reused by the next opens (no allocation per write).
    spare: Vec<Vec<u64>>,
    /// AUs closed or merged so far.
    pub closes: u64,
}

impl Ftl {
    /// The FTL of a device that programs at `write_seq_mb_s` and was measured at
    /// `write_rand_iops` random 4 KiB writes per second (the close cost's calibration).
    pub fn new(params: FtlParams, write_seq_mb_s: f64, write_rand_iops: f64) -> Self {
        let page = params.page_kib * 1024;
        let au = params.au_kib * 1024;
        let pages_per_au = au / page;
        let program_ns_per_byte = 1e3 / write_seq_mb_s;
        let random_ns = 1e9 / write_rand_iops;
        // The microbenchmark's write: one out-of-order page program, then the close of an AU
        // holding that one page (`pages_per_au - 1` pages to copy).
        let programmed = if params.random_in_au { page.max(4096) } else { 4096 };
        let page_program = programmed as f64 * program_ns_per_byte;
        let copied_pages = (au - programmed.min(au)) as f64 / page as f64;
        let copy_ns_per_page = if copied_pages > 0.0 { ((random_ns - page_program) / copied_pages).max(0.0) } else { 0.0 };
        Ftl { params, page, pages_per_au, program_ns_per_byte, copy_ns_per_page, open: Vec::new(), spare: Vec::new(), closes: 0 }
    }

    /// The cost of closing (or merging) the AU at `open[i]`, which it removes.
    fn close(&mut self, i: usize, cost: &mut FtlCost) {
        let a = self.open.remove(i);
        let kept = if self.params.random_in_au { a.distinct as f64 } else { a.pointer as f64 / self.page as f64 };
        cost.copy_ns += (self.pages_per_au as f64 - kept).max(0.0) * self.copy_ns_per_page;
        cost.closes += 1;
        self.closes += 1;
        self.spare.push(a.written);
    }

    /// Open `au` as the most recently written, closing the least recently written one when
    /// `open_aus` are open already.
    fn open_au(&mut self, au: u64, cost: &mut FtlCost) {
        if self.open.len() >= self.params.open_aus {
            self.close(0, cost);
        }
        let words = if self.params.random_in_au { self.pages_per_au.div_ceil(64) as usize } else { 0 };
        let mut written = self.spare.pop().unwrap_or_default();
        written.clear();
        written.resize(words, 0);
        self.open.push(OpenAu { au, pointer: 0, written, distinct: 0, used: 0 });
    }

    /// Serve a write of `bytes` at byte offset `offset`: its FTL cost.
    pub fn write(&mut self, offset: u64, bytes: u64) -> FtlCost {
        let mut cost = FtlCost::default();
        let au_bytes = self.pages_per_au * self.page;
        let mut pos = offset;
        let end = offset + bytes;
        while pos < end {
            let au = pos / au_bytes;
            let piece_end = end.min((au + 1) * au_bytes);
            self.write_in_au(au, pos - au * au_bytes, piece_end - pos, &mut cost);
            pos = piece_end;
        }
        cost
    }

    fn write_in_au(&mut self, au: u64, off: u64, bytes: u64, cost: &mut FtlCost) {
        let first = off / self.page;
        let last = (off + bytes).div_ceil(self.page); // exclusive
        let n = last - first;
        let mut i = match self.open.iter().position(|a| a.au == au) {
            Some(i) => {
                // The most recently written goes last (LRU order).
                let a = self.open.remove(i);
                self.open.push(a);
                self.open.len() - 1
            }
            None => {
                self.open_au(au, cost);
                self.open.len() - 1
            }
        };
        if self.params.random_in_au {
            // Out of place in the new block: no room left means a merge first.
            if self.open[i].used + n > self.pages_per_au {
                self.close(i, cost);
                self.open_au(au, cost);
                i = self.open.len() - 1;
            }
            let a = &mut self.open[i];
            let in_order = off == a.pointer;
            for p in first..last {
                let (w, b) = ((p / 64) as usize, p % 64);
                if a.written[w] & (1 << b) == 0 {
                    a.written[w] |= 1 << b;
                    a.distinct += 1;
                }
            }
            // A write continuing the previous one streams into the page being filled; one out
            // of order programs whole pages.
            a.used += if in_order { (off + bytes).div_ceil(self.page) - off.div_ceil(self.page) } else { n };
            a.pointer = off + bytes;
            let programmed = if in_order { bytes } else { bytes.max(n * self.page) };
            cost.program_ns += programmed as f64 * self.program_ns_per_byte;
        } else {
            if off < self.open[i].pointer {
                // Behind the write pointer: the AU is closed (its rest copied) and reopened.
                self.close(i, cost);
                self.open_au(au, cost);
                i = self.open.len() - 1;
            }
            let a = &mut self.open[i];
            // Pages skipped ahead of the pointer are copied from the old block first.
            cost.copy_ns += (off - a.pointer) as f64 / self.page as f64 * self.copy_ns_per_page;
            a.pointer = off + bytes;
            cost.program_ns += bytes as f64 * self.program_ns_per_byte;
            // A block filled to its last page needs no copy: it is closed for free.
            if a.pointer >= self.pages_per_au * self.page {
                self.open.remove(i);
            }
        }
    }

    /// AUs open now.
    pub fn open_aus(&self) -> usize {
        self.open.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A card of 1 MiB AUs, 16 KiB pages, 10 MB/s, 10 random IOPS.
    fn ftl(open_aus: usize, random_in_au: bool) -> Ftl {
        Ftl::new(FtlParams { au_kib: 1024, open_aus, page_kib: 16, random_in_au }, 10.0, 10.0)
    }

    const MS: f64 = 1e6;

    #[test]
    fn a_random_write_far_from_the_open_aus_pays_the_measured_random_cost() {
        for random_in_au in [false, true] {
            let mut f = ftl(2, random_in_au);
            // Fill the open slots, then every write to a new AU closes one holding one page.
            f.write(300 * 1024, 4096);
            f.write((10 << 20) + 300 * 1024, 4096);
            for k in 2..10u64 {
                let c = f.write(((k * 10) << 20) + 300 * 1024, 4096);
                let total = (c.program_ns + c.copy_ns) / MS;
                assert!((total - 100.0).abs() < 0.01, "random_in_au {random_in_au}: {total} ms, 1/10 IOPS = 100 ms");
                assert_eq!(c.closes, 1);
            }
        }
    }

    #[test]
    fn writes_inside_an_open_au_cost_only_page_programs() {
        let mut f = ftl(2, true);
        f.write(0, 4096);
        f.write(5 << 20, 4096);
        // Rewrites inside both open AUs, out of order: one 16 KiB page each (1.6384 ms).
        for off in [512 * 1024, 8192, (5 << 20) + 65536, 4096] {
            let c = f.write(off, 4096);
            assert_eq!(c.closes, 0);
            assert_eq!(c.copy_ns, 0.0);
            assert!((c.program_ns / MS - 1.6384).abs() < 1e-6, "{}", c.program_ns / MS);
        }
    }

    #[test]
    fn more_open_aus_keep_more_streams_cheap() {
        // Three interleaved clustered writers (a journal, a DB, a cache file).
        let run = |open| {
            let mut f = ftl(open, true);
            let mut ms = 0.0;
            for k in 0..30u64 {
                for base in [0u64, 4 << 20, 8 << 20] {
                    let c = f.write(base + (k * 7 % 16) * 4096, 4096);
                    ms += (c.program_ns + c.copy_ns) / MS;
                }
            }
            ms
        };
        let (two, three) = (run(2), run(3));
        assert!(two > 20.0 * three, "2 open AUs {two} ms vs 3 open {three} ms");
    }

    #[test]
    fn a_linear_only_card_reopens_an_au_written_behind_its_pointer() {
        let mut lin = ftl(2, false);
        let mut rnd = ftl(2, true);
        for f in [&mut lin, &mut rnd] {
            f.write(0, 8192);
        }
        // In order: cheap on both. Then a rewrite of page 0.
        assert_eq!(lin.write(8192, 4096).closes, 0);
        let back = lin.write(0, 4096);
        assert_eq!(back.closes, 1);
        assert!(back.copy_ns / MS > 90.0, "the close copies almost the whole AU: {} ms", back.copy_ns / MS);
        let back = rnd.write(0, 4096);
        assert_eq!(back.closes, 0, "a random-in-AU card rewrites in its log block");
    }

    #[test]
    fn a_sequential_stream_fills_aus_without_copying() {
        let mut f = ftl(1, false);
        let mut copy = 0.0;
        for k in 0..(8 * 1024 / 64) {
            copy += f.write(k * 65536, 65536).copy_ns;
        }
        assert_eq!(copy, 0.0);
        assert_eq!(f.closes, 0);
        assert_eq!(f.open_aus(), 0, "full AUs are closed as they fill");
    }

    #[test]
    fn a_full_log_block_is_merged() {
        let mut f = ftl(1, true);
        // 64 pages per AU: the 65th rewrite of one page merges the AU (63 pages to copy).
        for _ in 0..64 {
            assert_eq!(f.write(0, 4096).closes, 0);
        }
        let c = f.write(0, 4096);
        assert_eq!(c.closes, 1);
        assert!((c.copy_ns / MS - 63.0 * (100.0 - 1.6384) / 63.0).abs() < 1e-6, "{}", c.copy_ns / MS);
    }

    #[test]
    fn bad_geometry_is_refused_by_name() {
        let p = FtlParams { au_kib: 1000, open_aus: 2, page_kib: 16, random_in_au: true };
        assert!(p.validate().unwrap_err().starts_with("ftl.au_kib"));
        let p = FtlParams { au_kib: 1024, open_aus: 0, page_kib: 16, random_in_au: true };
        assert!(p.validate().unwrap_err().starts_with("ftl.open_aus"));
        let p = FtlParams { au_kib: 1024, open_aus: 2, page_kib: 12, random_in_au: true };
        assert!(p.validate().unwrap_err().starts_with("ftl.page_kib"));
    }
}
