//! The host's reclaim of the guest's free memory: free page reporting on a VM whose balloon
//! device offers it (virtio-balloon feature 5, `VIRTIO_BALLOON_F_REPORTING`; the guest's
//! `mm/page_reporting.c`). A machine model, not a phone's: `bench predict` turns it on where
//! `bench calibrate` measured it (docs/twin.md, "The host takes freed memory back").
//!
//! The guest's free memory is of two kinds here: *backed* (pages the host still holds for the
//! guest: freed recently, or the part reporting never takes) and *reported* (handed back to the
//! host, which discards it). As the kernel's `mm/page_reporting.c` schedules it: a free asks
//! for a pass [`PAGE_REPORTING_DELAY_NS`] later when none is asked for or running (a free while
//! one waits is covered by it); a pass reports up to [`HostReclaim::pass_pages`] of the backed
//! free pages, never below [`HostReclaim::reserve_pages`], and takes the rest of
//! [`HostReclaim::interval_ns`] beyond the delay to run; the next pass follows one delay after
//! it ends if its budget ran out (backed memory above the reserve left) or pages were freed
//! while it ran, and otherwise reporting goes idle. An allocation takes backed pages first (the buddy allocator
//! hands out the head of its free lists, and a reported block goes back to a list's tail); each
//! page beyond them is one the host must fault in, allocate and zero again: the allocating task
//! pays [`HostReclaim::page_ns`] of CPU for it, or [`HostReclaim::read_page_ns`] for a page
//! allocated for a read (the guest's vCPU stalls in the host's fault).
//!
//! **Free blocks below the reporting order** (twin29). Reporting takes only blocks of
//! `page_reporting_order` (9: 2 MiB) and above (`mm/page_reporting.c`); the smaller free blocks
//! (the *fragments*, free memory between allocations that stay) are never reported, and the
//! buddy allocator serves a folio of order `k` from the smallest free block of order `k` or
//! more (`__rmqueue_smallest` in `mm/page_alloc.c`). So a folio smaller than the reporting order
//! is cut from the fragments while there are any of its order or above, and meets the host's
//! fault only once they run out; the 1 MiB folios of the workers' 1 MiB `write()`s find few
//! (order 8, the largest below 9), the launch's 4–64 KiB read-ahead folios many
//! ([`FreeLedger::with_fragments`]: the inventory `bench calibrate` reads from
//! `/proc/buddyinfo` after its drop).
//!
//! A ledger can instead replay the passes a run measured ([`FreeLedger::scripted`]: each at
//! its time, reporting what the kernel reported, as far as the model's backed memory goes):
//! a control for the rest of the model, which then meets the host's passes where the real
//! run met them (docs/twin.md, twin27).
//!
//! Driven by its owner: [`FreeLedger::observe`] after anything may have freed pages (it
//! compares the page cache's running count of removals), [`FreeLedger::take`] on each
//! allocation, [`FreeLedger::pass`] when the pass it asked for is due.
//!
//! # Invariants
//! - `backed` never falls below the reserve through a modelled pass (only allocations, and a
//!   scripted pass reporting what was measured, take it lower).
//! - Outside a scripted ledger, a pass is pending (`pending`) exactly while the owner holds a
//!   timer for it: `observe` asks for one only when none is pending and none is running (a free
//!   while a pass runs asks for the one after it), `pass` for the next only when memory above
//!   the reserve is left; every pass starts at least [`PAGE_REPORTING_DELAY_NS`] (or the
//!   interval, if shorter) after the free or the pass that asked for it.
//! - A scripted ledger's passes come at their measured times, in order, one timer at a time.
//! - Every page allocated is either backed, cut from the fragments, or counted in `refaulted`;
//!   every page reported is counted in `reported`.
//! - The fragments never exceed their inventory (`frag[j] <= frag_home[j]` for every order):
//!   frees give back what was cut from them before anything else becomes backed memory.
//!
//! # Simplifications versus the kernel and the host
//! - One pool: the kernel reports free blocks of `page_reporting_order` and above per zone and
//!   migrate type, in batches of up to 32 blocks (`PAGE_REPORTING_CAPACITY`), under a budget of
//!   a sixteenth of each free list per pass; here a pass reports a measured number of pages
//!   (this VM's kernel reported 502–584 MiB per pass: docs/twin.md, twin24). What stays
//!   unreported (blocks below the reporting order, per-CPU lists, fragments) is the reserve,
//!   also measured.
//! - The kernel's states: a free of a reportable block (order ≥ `pageblock_order`) moves
//!   reporting from idle to `PAGE_REPORTING_REQUESTED` and schedules the work 2 s later; the
//!   work sets `PAGE_REPORTING_ACTIVE` as it starts, so frees while it waited are covered by it
//!   and ask for nothing more; frees while it runs, or a budget that runs out
//!   (`page_reporting_cycle`), set `REQUESTED` again and it reschedules itself 2 s after it
//!   ends. Here any free counts (not only one that leaves a block of the reporting order), the
//!   pass's reports all happen at its start, and it runs for the measured interval between two
//!   passes less the delay (the calibration times the passes from first report to first report
//!   on a quiet machine, 2.06–2.32 s on this VM: docs/twin.md, twin24, twin26); under the
//!   bench's load the kernel's passes ran 0.06–0.55 s (the reporting worker shares the CPUs
//!   with the writers), which the model's pass, not being CPU work, does not. Under the bench the passes then come every
//!   interval while each drop's memory outlasts a pass's budget, and one delay after a free
//!   once it does not (twin26: until then a free while a pass waited asked for another pass,
//!   which kept the passes on their own clock).
//! - The host's cost is two figures per page, both charged to the allocating task's CPU: a
//!   page a `write()` allocates (its copy's first touch), and one allocated for a read (the
//!   device's data fills it): on this VM a cold read's calls on reported memory took 8.1–8.7
//!   µs a page more than on recycled memory, all of it the reading thread's CPU time, where a
//!   write took ~15, and two calibrations an hour later gave 11.3 and 10.0 for a read, 11.2
//!   and 15.4 for a write (twin28; twin24 had charged reads the write's figure). The host's
//!   own work and its variation over time are not modelled.
//! - Only the page cache allocates here (no anonymous memory, no slab), as in [`super::reclaim`].
//! - The fragments are counted in pages per order, not blocks: a folio of order `k` takes its
//!   pages from the lowest order `j >= k` that has any, and the rest of a split block stays
//!   counted at order `j` (the kernel puts it on the lists below `j`: the same pages, usable by
//!   the same smaller folios; only a later folio of order exactly `j` could use it here and not
//!   there). A free gives the pages cut from the fragments back to them first (the freed folio
//!   merges back into the block it was cut from, whose neighbours are still in use), lowest
//!   order first; whatever else is freed merges into blocks of the reporting order (backed
//!   memory). A folio of the reporting order or above, or one that finds no fragment, is taken
//!   from the backed memory as before; its split remainder is not kept as fragments.
//! - The inventory is the calibration's, read once after its drop; the kernel's fragments
//!   change with everything else the machine holds.

use forefront_engine::SimTime;

/// The kernel's delay from a request for reporting to its pass (`PAGE_REPORTING_DELAY`,
/// `2 * HZ` in `mm/page_reporting.c`).
pub const PAGE_REPORTING_DELAY_NS: u64 = 2_000_000_000;

/// The host's reclaim, as measured (`bench calibrate`'s `host_*` figures).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HostReclaim {
    /// Time from one pass's start to the next one's while the passes follow one another (ns):
    /// the kernel's `PAGE_REPORTING_DELAY` (2 s) and the pass's own run, measured.
    pub interval_ns: u64,
    /// Pages one pass reports at most.
    pub pass_pages: u64,
    /// Backed free pages reporting leaves alone.
    pub reserve_pages: u64,
    /// CPU time an allocating task pays per page the host must fault back (ns): a page a
    /// `write()` allocates and copies into.
    pub page_ns: u64,
    /// The same for a page allocated for a read, which the device's data fills (ns; twin28).
    pub read_page_ns: u64,
}

/// The state of the guest's free memory as the host sees it.
#[derive(Clone, Debug)]
pub struct FreeLedger {
    pub cfg: HostReclaim,
    /// Free pages the host backs.
    pub backed: u64,
    /// The page cache's count of pages removed when last observed.
    seen: u64,
    /// A pass is scheduled.
    pending: bool,
    /// The last pass runs until then (the kernel's `PAGE_REPORTING_ACTIVE`): a free before it
    /// asks for the next pass one delay after it.
    active_until: SimTime,
    /// Pages reported over the run.
    pub reported: u64,
    /// Pages allocated from reported memory over the run (each paid `page_ns`).
    pub refaulted: u64,
    /// Free pages in blocks below the reporting order, by order (index = order), now.
    pub frag: Vec<u64>,
    /// The same as measured: what frees restore the fragments to.
    frag_home: Vec<u64>,
    /// Pages cut from the fragments over the run.
    pub from_fragments: u64,
    /// Passes as a run measured them ([`Self::scripted`]): at each time, the pages it
    /// reported, in order; the model's own schedule is off while this is `Some`.
    script: Option<std::collections::VecDeque<(SimTime, u64)>>,
}

impl FreeLedger {
    /// A ledger with `backed` free pages backed at the start (at least the reserve: the part
    /// reporting never takes); every other free page has been reported.
    pub fn new(cfg: HostReclaim, backed: u64) -> Self {
        FreeLedger {
            cfg,
            backed: backed.max(cfg.reserve_pages),
            seen: 0,
            pending: false,
            active_until: SimTime::ZERO,
            reported: 0,
            refaulted: 0,
            frag: Vec::new(),
            frag_home: Vec::new(),
            from_fragments: 0,
            script: None,
        }
    }

    /// The same ledger with an inventory of free blocks below the reporting order: `pages[j]`
    /// free pages in blocks of order `j` (`/proc/buddyinfo`'s count at order `j` times `2^j`,
    /// for `j` below `page_reporting_order`). Folios smaller than the reporting order are cut
    /// from them first ([`Self::take`]).
    pub fn with_fragments(mut self, pages: &[u64]) -> Self {
        self.frag = pages.to_vec();
        self.frag_home = pages.to_vec();
        self
    }

    /// A ledger whose passes are the ones a run measured (`passes`: each pass's time and the
    /// pages it reported, in order) instead of the kernel's schedule: frees ask for nothing,
    /// and each pass reports up to its pages of the backed free memory, the reserve included
    /// (what the kernel reported is the measurement). Returns the ledger and the time of its
    /// first pass for the owner to schedule.
    pub fn scripted(cfg: HostReclaim, backed: u64, passes: &[(SimTime, u64)]) -> (Self, Option<SimTime>) {
        let mut l = Self::new(cfg, backed);
        l.script = Some(passes.iter().copied().collect());
        let first = passes.first().map(|p| p.0);
        (l, first)
    }

    /// The page cache has removed `removed` pages over the run so far: those new since the last
    /// call are backed free memory now. Returns the time of the pass to schedule, if one must be.
    pub fn observe(&mut self, now: SimTime, removed: u64) -> Option<SimTime> {
        let freed = removed.saturating_sub(self.seen);
        self.seen = self.seen.max(removed);
        // What was cut from the fragments goes back to them first (lowest order first).
        let mut rest = freed;
        for (j, f) in self.frag.iter_mut().enumerate() {
            let back = rest.min(self.frag_home[j] - *f);
            *f += back;
            rest -= back;
        }
        self.backed += rest;
        let freed = rest;
        if freed == 0 || self.script.is_some() {
            return None;
        }
        if self.pending {
            // Covered by the pass that waits.
            return None;
        }
        if now < self.active_until {
            // Freed while a pass runs: the next one a delay after it ends.
            self.pending = true;
            return Some(self.active_until.after(self.delay_ns()));
        }
        if self.backed > self.cfg.reserve_pages {
            self.pending = true;
            return Some(now.after(self.delay_ns()));
        }
        None
    }

    /// From a request to its pass: the kernel's delay, or the whole interval if shorter.
    fn delay_ns(&self) -> u64 {
        PAGE_REPORTING_DELAY_NS.min(self.cfg.interval_ns)
    }

    /// `n` pages are allocated in folios of `order`: below the reporting order from the
    /// fragments of that order or above first (lowest first), then the backed ones. Returns how
    /// many the host must fault back (the allocating task's extra CPU time is that times
    /// `page_ns`).
    pub fn take(&mut self, n: u64, order: u32) -> u64 {
        let mut n = n;
        for f in self.frag.iter_mut().skip(order as usize) {
            let cut = n.min(*f);
            *f -= cut;
            n -= cut;
            self.from_fragments += cut;
        }
        let backed = n.min(self.backed);
        self.backed -= backed;
        let host = n - backed;
        self.refaulted += host;
        host
    }

    /// The pass scheduled for `now`: reports up to `pass_pages` above the reserve and runs for
    /// the interval less the delay. Returns the time of the next pass if backed memory is still
    /// above the reserve (the budget ran out); a free while it runs asks for one through
    /// [`Self::observe`].
    pub fn pass(&mut self, now: SimTime) -> Option<SimTime> {
        if let Some(script) = self.script.as_mut() {
            // A measured pass: what it reported, as far as the model's backed memory goes.
            let (_, pages) = script.pop_front().unwrap_or((now, 0));
            let report = pages.min(self.backed);
            self.backed -= report;
            self.reported += report;
            return script.front().map(|p| p.0.max(now));
        }
        let report = self.backed.saturating_sub(self.cfg.reserve_pages).min(self.cfg.pass_pages);
        self.backed -= report;
        self.reported += report;
        self.active_until = now.after(self.cfg.interval_ns - self.delay_ns());
        self.pending = self.backed > self.cfg.reserve_pages;
        self.pending.then(|| now.after(self.cfg.interval_ns))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CFG: HostReclaim =
        HostReclaim { interval_ns: 2_000, pass_pages: 100, reserve_pages: 10, page_ns: 11_000, read_page_ns: 8_000 };

    fn t(ns: u64) -> SimTime {
        SimTime::ZERO.after(ns)
    }

    #[test]
    fn memory_freed_moments_before_is_reallocated_without_the_host() {
        let mut l = FreeLedger::new(CFG, 0);
        assert_eq!(l.backed, 10, "the reserve is backed from the start");
        assert_eq!(l.observe(t(0), 250), Some(t(2_000)), "a free asks for a pass one interval later");
        assert_eq!(l.take(200, 9), 0, "taken before any pass: all backed");
        assert_eq!(l.take(100, 9), 40, "beyond the backed pages the host faults them back");
        assert_eq!((l.backed, l.refaulted), (0, 40));
    }

    #[test]
    fn passes_report_in_steps_down_to_the_reserve_then_stop() {
        let mut l = FreeLedger::new(CFG, 0);
        assert_eq!(l.observe(t(0), 250), Some(t(2_000)));
        assert_eq!(l.observe(t(500), 300), None, "a pass is pending already");
        assert_eq!(l.backed, 310);
        assert_eq!(l.pass(t(2_000)), Some(t(4_000)));
        assert_eq!(l.backed, 210);
        assert_eq!(l.pass(t(4_000)), Some(t(6_000)));
        assert_eq!(l.pass(t(6_000)), None, "the reserve is reached");
        assert_eq!((l.backed, l.reported), (10, 300));
        assert_eq!(l.take(30, 9), 20, "past the reserve every page is the host's");
        // Nothing pending: the next free asks for a pass again.
        assert_eq!(l.observe(t(7_000), 320), Some(t(9_000)));
    }

    #[test]
    fn a_free_while_a_pass_waits_is_covered_by_it() {
        let mut l = FreeLedger::new(CFG, 0);
        assert_eq!(l.observe(t(0), 50), Some(t(2_000)));
        assert_eq!(l.take(50, 9), 0, "reallocated before the pass");
        assert_eq!(l.observe(t(1_000), 110), None, "60 more freed: the waiting pass covers them");
        assert_eq!(l.take(60, 9), 0);
        assert_eq!(l.pass(t(2_000)), None, "nothing to report and nothing left: reporting goes idle");
        assert_eq!(l.observe(t(5_000), 300), Some(t(7_000)), "the next free starts it again");
    }

    #[test]
    fn a_free_while_a_pass_runs_asks_for_the_next_one_a_delay_after_it() {
        // The kernel's figures: a 2 s delay, a pass that runs 0.3 s.
        const S: u64 = 1_000_000_000;
        let cfg = HostReclaim { interval_ns: 2_300_000_000, ..CFG };
        let mut l = FreeLedger::new(cfg, 0);
        assert_eq!(l.observe(t(0), 50), Some(t(2 * S)), "the kernel's delay, not the interval");
        assert_eq!(l.pass(t(2 * S)), None, "50 reported down to the reserve: the budget did not run out");
        assert_eq!(l.observe(t(2 * S + 100_000_000), 80), Some(t(4_300_000_000)), "freed while it runs: 2 s after its end");
        assert_eq!(l.observe(t(3 * S), 90), None, "covered by the pass asked for");
        assert_eq!(l.pass(t(4_300_000_000)), None);
        assert_eq!(l.observe(t(5 * S), 200), Some(t(7 * S)), "idle again: the delay from the free");
    }

    #[test]
    fn allocations_between_passes_shrink_what_the_next_pass_finds() {
        let mut l = FreeLedger::new(CFG, 0);
        l.observe(t(0), 150);
        assert_eq!(l.take(145, 9), 0);
        assert_eq!(l.pass(t(2_000)), None, "15 backed pages: 5 reported, the reserve stays");
        assert_eq!((l.backed, l.reported), (10, 5));
    }

    #[test]
    fn scripted_passes_report_what_was_measured_at_their_times_and_frees_ask_for_none() {
        let (mut l, first) = FreeLedger::scripted(CFG, 0, &[(t(1_000), 30), (t(5_000), 500)]);
        assert_eq!(first, Some(t(1_000)));
        assert_eq!(l.observe(t(0), 200), None, "a free schedules nothing: the passes are the run's");
        assert_eq!(l.backed, 210, "the reserve and the free");
        assert_eq!(l.pass(t(1_000)), Some(t(5_000)), "the next measured pass");
        assert_eq!((l.backed, l.reported), (180, 30), "what was measured");
        assert_eq!(l.take(100, 9), 0);
        assert_eq!(l.pass(t(5_000)), None, "the last one");
        assert_eq!((l.backed, l.reported), (0, 110), "no more than the model's backed memory, the reserve not kept");
        assert_eq!(l.take(10, 9), 10);
    }

    #[test]
    fn a_ledger_that_starts_backed_reports_it_once_freed_again() {
        // The bench's first sample: the fixture's files were cached just before, so their pages
        // are backed when the sample's drop frees them.
        let mut l = FreeLedger::new(CFG, 500);
        assert_eq!(l.take(400, 9), 0);
        assert_eq!(l.observe(t(0), 0), None, "nothing freed: no pass");
        assert_eq!(l.take(200, 9), 100);
    }

    #[test]
    fn small_folios_are_cut_from_the_fragments_and_meet_the_host_only_once_they_run_out() {
        // No backed memory beyond the reserve: everything past the fragments is the host's.
        let mut l = FreeLedger::new(CFG, 0).with_fragments(&[0, 0, 8, 0, 16, 0, 0, 0, 4]);
        assert_eq!(l.take(6, 0), 0, "order 0 from the lowest order that has any: order 2");
        assert_eq!(l.frag, vec![0, 0, 2, 0, 16, 0, 0, 0, 4]);
        assert_eq!(l.take(20, 4), 0, "order 4 from order 4, then order 8");
        assert_eq!(l.frag, vec![0, 0, 2, 0, 0, 0, 0, 0, 0]);
        assert_eq!(l.take(8, 8), 0, "the reserve's backed pages");
        assert_eq!(l.take(4, 8), 2, "a 1 MiB folio cannot use the order-2 fragments: the host's");
        assert_eq!(l.take(3, 0), 1, "the last two order-2 pages, then the host's");
        assert_eq!((l.from_fragments, l.refaulted), (28, 3));
        // The drop: what was cut from the fragments goes back to them first.
        assert_eq!(l.observe(t(0), 30), None, "28 pages restore the fragments, 2 are backed: below the reserve, no pass");
        assert_eq!(l.frag, vec![0, 0, 8, 0, 16, 0, 0, 0, 4]);
        assert_eq!(l.backed, 2);
        assert_eq!(l.take(4, 9), 2, "the reporting order never uses the fragments");
    }

    #[test]
    fn without_an_inventory_every_order_takes_the_backed_memory_first() {
        let mut a = FreeLedger::new(CFG, 50);
        let mut b = FreeLedger::new(CFG, 50);
        assert_eq!(a.take(70, 0), b.take(70, 9));
        assert_eq!(a.refaulted, 20);
    }
}
