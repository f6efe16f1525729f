//! [`PageSet`]: a set of page indices of one file, as a bitmap.
//!
//! The page cache keeps three per file — cached, dirty and under write-back — so that write-back
//! walks dirty pages in file order, fsync finds a page under write-back, and truncate finds the
//! cached pages past the new size, all at one 64-bit word per 64 indices between the lowest and
//! highest member (not one slot per page of the file, nor a tree node per page). Insert, remove
//! and contains are O(1).

/// A set of `u32` page indices (see the module docs).
#[derive(Clone, Debug, Default)]
pub struct PageSet {
    words: Vec<u64>,
    len: u32,
    /// No word below `lo` is non-zero.
    lo: usize,
    /// No word from `hi` on is non-zero.
    hi: usize,
}

impl PageSet {
    pub fn len(&self) -> u32 {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub fn contains(&self, i: u32) -> bool {
        self.words.get((i / 64) as usize).is_some_and(|w| w & (1 << (i % 64)) != 0)
    }
    /// Add `i`; false if it was there.
    pub fn insert(&mut self, i: u32) -> bool {
        let w = (i / 64) as usize;
        if self.words.len() <= w {
            self.words.resize(w + 1, 0);
        }
        let bit = 1 << (i % 64);
        if self.words[w] & bit != 0 {
            return false;
        }
        if self.len == 0 {
            (self.lo, self.hi) = (w, w + 1);
        } else {
            self.lo = self.lo.min(w);
            self.hi = self.hi.max(w + 1);
        }
        self.words[w] |= bit;
        self.len += 1;
        true
    }
    /// Remove `i`; false if it was not there.
    pub fn remove(&mut self, i: u32) -> bool {
        let w = (i / 64) as usize;
        let bit = 1 << (i % 64);
        match self.words.get_mut(w) {
            Some(x) if *x & bit != 0 => *x &= !bit,
            _ => return false,
        }
        self.len -= 1;
        if self.len == 0 {
            (self.lo, self.hi) = (0, 0);
        } else if self.words[w] == 0 {
            // Keep the bounds tight (each word is skipped once per emptying).
            while self.words[self.lo] == 0 {
                self.lo += 1;
            }
            while self.words[self.hi - 1] == 0 {
                self.hi -= 1;
            }
        }
        true
    }
    /// Add every index of `lo..hi`; returns how many were not there.
    pub fn insert_range(&mut self, lo: u32, hi: u32) -> u32 {
        if lo >= hi {
            return 0;
        }
        let span = Span::new(lo, hi);
        let (wlo, whi) = (span.wlo, span.whi);
        if self.words.len() <= whi {
            self.words.resize(whi + 1, 0);
        }
        let mut added = 0;
        for w in wlo..=whi {
            let m = span.mask(w);
            added += ones_within(m & !self.words[w], m);
            self.words[w] |= m;
        }
        if added > 0 {
            if self.len == 0 {
                (self.lo, self.hi) = (wlo, whi + 1);
            } else {
                self.lo = self.lo.min(wlo);
                self.hi = self.hi.max(whi + 1);
            }
            self.len += added;
        }
        added
    }
    /// Remove every index of `lo..hi`; returns how many were there.
    pub fn remove_range(&mut self, lo: u32, hi: u32) -> u32 {
        if lo >= hi {
            return 0;
        }
        let span = Span::new(lo, hi);
        let mut removed = 0;
        for w in span.wlo.max(self.lo)..(span.whi + 1).min(self.hi) {
            let m = span.mask(w);
            removed += ones_within(m & self.words[w], m);
            self.words[w] &= !m;
        }
        if removed > 0 {
            self.len -= removed;
            self.tighten();
        }
        removed
    }
    /// [`PageSet::remove_range`] on each of `sets`, the range's word masks computed once;
    /// returns how many each held.
    pub fn remove_range_each<const N: usize>(mut sets: [&mut PageSet; N], lo: u32, hi: u32) -> [u32; N] {
        let mut removed = [0; N];
        if lo >= hi {
            return removed;
        }
        let span = Span::new(lo, hi);
        let (wlo, whi) = (span.wlo, span.whi + 1);
        let from = sets.iter().map(|s| s.lo).min().unwrap_or(0).max(wlo);
        let to = sets.iter().map(|s| s.hi).max().unwrap_or(0).min(whi);
        for w in from..to {
            let m = span.mask(w);
            for (s, r) in sets.iter_mut().zip(&mut removed) {
                if s.lo <= w && w < s.hi {
                    *r += ones_within(m & s.words[w], m);
                    s.words[w] &= !m;
                }
            }
        }
        for (s, &r) in sets.iter_mut().zip(&removed) {
            if r > 0 {
                s.len -= r;
                s.tighten();
            }
        }
        removed
    }
    /// How many indices of `lo..hi` are members.
    pub fn count_range(&self, lo: u32, hi: u32) -> u32 {
        if lo >= hi {
            return 0;
        }
        let span = Span::new(lo, hi);
        (span.wlo.max(self.lo)..(span.whi + 1).min(self.hi))
            .map(|w| {
                let m = span.mask(w);
                ones_within(m & self.words[w], m)
            })
            .sum()
    }
    /// Word `w` of the bitmap (bit `b` = index `64 w + b`), 0 past its end.
    #[inline]
    pub fn word(&self, w: usize) -> u64 {
        self.words.get(w).copied().unwrap_or(0)
    }
    /// How many indices of `lo..hi` are members of any of `sets`.
    pub fn union_count_range(sets: &[&PageSet], lo: u32, hi: u32) -> u32 {
        if lo >= hi {
            return 0;
        }
        let span = Span::new(lo, hi);
        (span.wlo..=span.whi)
            .map(|w| {
                let word = sets.iter().fold(0, |acc, s| acc | s.words.get(w).copied().unwrap_or(0));
                let m = span.mask(w);
                ones_within(m & word, m)
            })
            .sum()
    }
    fn tighten(&mut self) {
        if self.len == 0 {
            (self.lo, self.hi) = (0, 0);
            return;
        }
        while self.words[self.lo] == 0 {
            self.lo += 1;
        }
        while self.words[self.hi - 1] == 0 {
            self.hi -= 1;
        }
    }
    /// The lowest member.
    /// A range holding every member (whole words: it may hold non-members at its ends), or
    /// `None` when the set is empty. O(1).
    pub fn span(&self) -> Option<(u32, u32)> {
        (self.len > 0).then(|| (self.lo as u32 * 64, self.hi as u32 * 64))
    }
    pub fn first(&self) -> Option<u32> {
        self.iter().next()
    }
    /// Members in ascending order.
    pub fn iter(&self) -> Iter<'_> {
        self.iter_from(0)
    }
    /// Members `>= first` in ascending order.
    pub fn iter_from(&self, first: u32) -> Iter<'_> {
        let start = ((first / 64) as usize).max(self.lo);
        if start >= self.hi {
            return Iter { words: &[], base: 0, cur: 0 };
        }
        let mut cur = self.words[start];
        if start == (first / 64) as usize {
            cur &= u64::MAX << (first % 64);
        }
        Iter { words: &self.words[start + 1..self.hi], base: start as u32 * 64, cur }
    }
}

/// The number of ones of `x`, a subset of the contiguous mask `m`. A stretch of pages is
/// usually wholly in or wholly out of a set: those cases need no population count (which the
/// baseline x86-64 target computes in software, a dozen instructions a word).
#[inline]
fn ones_within(x: u64, m: u64) -> u32 {
    if x == 0 {
        0
    } else if x == m {
        // A contiguous mask: its width from its ends.
        64 - m.leading_zeros() - m.trailing_zeros()
    } else {
        x.count_ones()
    }
}

/// The words that indices `lo..hi` (`lo < hi`) fall in, and the bits of each.
#[derive(Clone, Copy, Debug)]
struct Span {
    /// First and last word (inclusive).
    wlo: usize,
    whi: usize,
    /// The bits of the first word from `lo` on, and of the last word up to `hi`.
    first: u64,
    last: u64,
}

impl Span {
    #[inline]
    fn new(lo: u32, hi: u32) -> Span {
        debug_assert!(lo < hi);
        Span {
            wlo: (lo / 64) as usize,
            whi: ((hi - 1) / 64) as usize,
            first: u64::MAX << (lo % 64),
            last: u64::MAX >> (63 - (hi - 1) % 64),
        }
    }

    /// The bits of word `w` (between `wlo` and `whi`) that fall in the range.
    #[inline]
    fn mask(&self, w: usize) -> u64 {
        (if w == self.wlo { self.first } else { u64::MAX }) & (if w == self.whi { self.last } else { u64::MAX })
    }
}

/// Iterator over a [`PageSet`] in ascending order.
pub struct Iter<'a> {
    words: &'a [u64],
    /// Index of bit 0 of `cur`.
    base: u32,
    cur: u64,
}

impl Iterator for Iter<'_> {
    type Item = u32;
    #[inline]
    fn next(&mut self) -> Option<u32> {
        while self.cur == 0 {
            let (&w, rest) = self.words.split_first()?;
            self.words = rest;
            self.cur = w;
            self.base += 64;
        }
        let b = self.cur.trailing_zeros();
        self.cur &= self.cur - 1;
        Some(self.base + b)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use proptest::prelude::*;

    use super::*;

    #[test]
    fn ones_within_a_mask_counts_as_count_ones() {
        for (lo, hi) in [(0, 64), (0, 1), (63, 64), (5, 40), (1, 63)] {
            let m = Span::new(lo, hi).mask(0);
            assert_eq!(m.count_ones(), hi - lo);
            for x in [0, m, m & 0x5555_5555_5555_5555, m & (m << 1), m & !(1 << lo)] {
                assert_eq!(ones_within(x, m), x.count_ones(), "x {x:#x} in mask {m:#x}");
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        /// Removing a range from several sets at once is removing it from each.
        #[test]
        fn remove_range_each_is_remove_range_on_each(
            fills in proptest::collection::vec(proptest::collection::vec((0u32..3_000, 0u32..200), 0..20), 3),
            lo in 0u32..3_200,
            n in 0u32..600,
        ) {
            let mut sets: Vec<PageSet> = fills
                .iter()
                .map(|f| {
                    let mut s = PageSet::default();
                    for &(a, k) in f {
                        s.insert_range(a, a + k);
                    }
                    s
                })
                .collect();
            let mut each = sets.clone();
            let want: Vec<u32> = each.iter_mut().map(|s| s.remove_range(lo, lo + n)).collect();
            let [a, b, c] = &mut sets[..] else { unreachable!() };
            let got = PageSet::remove_range_each([a, b, c], lo, lo + n);
            prop_assert_eq!(got.to_vec(), want);
            for (s, e) in sets.iter().zip(&each) {
                prop_assert!(s.iter().eq(e.iter()));
                prop_assert_eq!(s.len(), e.len());
                prop_assert_eq!(s.span(), e.span());
            }
        }
    }

    #[test]
    fn a_span_masks_its_words() {
        let s = Span::new(70, 200); // words 1..=3
        assert_eq!((s.wlo, s.whi), (1, 3));
        assert_eq!(s.mask(1), u64::MAX << 6);
        assert_eq!(s.mask(2), u64::MAX);
        assert_eq!(s.mask(3), (1 << 8) - 1);
        assert_eq!(Span::new(3, 5).mask(0), 0b11000);
        assert_eq!(Span::new(64, 128).mask(1), u64::MAX);
    }

    #[test]
    fn iterates_in_order_from_a_start() {
        let mut s = PageSet::default();
        for i in [5, 64, 63, 700, 0, 128] {
            assert!(s.insert(i));
        }
        assert!(!s.insert(64));
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![0, 5, 63, 64, 128, 700]);
        assert_eq!(s.iter_from(6).collect::<Vec<_>>(), vec![63, 64, 128, 700]);
        assert_eq!(s.iter_from(701).next(), None);
        assert!(s.remove(0) && s.remove(5) && s.remove(63) && !s.remove(63));
        assert_eq!(s.first(), Some(64));
        assert_eq!(s.len(), 3);
    }

    #[derive(Clone, Debug)]
    enum Op {
        Insert(u32),
        Remove(u32),
        InsertRange(u32, u32),
        RemoveRange(u32, u32),
    }

    fn op() -> impl Strategy<Value = Op> {
        // Small and large indices, clustered so that words fill and empty.
        let idx = prop_oneof![0u32..300, 0u32..5_000, 60_000u32..60_200];
        prop_oneof![
            idx.clone().prop_map(Op::Insert),
            idx.clone().prop_map(Op::Remove),
            (idx.clone(), 0u32..200).prop_map(|(i, n)| Op::InsertRange(i, i + n)),
            (idx, 0u32..300).prop_map(|(i, n)| Op::RemoveRange(i, i + n)),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        /// Against a `BTreeSet` reference: membership, length, order, and iteration from any start.
        #[test]
        fn matches_a_btreeset(ops in proptest::collection::vec(op(), 0..400), starts in proptest::collection::vec(0u32..61_000, 4)) {
            let mut s = PageSet::default();
            let mut r = BTreeSet::new();
            for o in ops {
                match o {
                    Op::Insert(i) => prop_assert_eq!(s.insert(i), r.insert(i)),
                    Op::Remove(i) => prop_assert_eq!(s.remove(i), r.remove(&i)),
                    Op::InsertRange(lo, hi) => {
                        let added = (lo..hi).filter(|&i| r.insert(i)).count() as u32;
                        prop_assert_eq!(s.insert_range(lo, hi), added);
                    }
                    Op::RemoveRange(lo, hi) => {
                        prop_assert_eq!(s.count_range(lo, hi), r.range(lo..hi.max(lo)).count() as u32);
                        let removed = (lo..hi).filter(|&i| r.remove(&i)).count() as u32;
                        prop_assert_eq!(s.remove_range(lo, hi), removed);
                    }
                }
                prop_assert_eq!(s.len() as usize, r.len());
                prop_assert_eq!(s.first(), r.first().copied());
                match s.span() {
                    Some((a, b)) => prop_assert!(r.iter().all(|&i| a <= i && i < b)),
                    None => prop_assert!(r.is_empty()),
                }
            }
            prop_assert!(s.iter().eq(r.iter().copied()));
            for f in starts {
                prop_assert!(s.iter_from(f).eq(r.range(f..).copied()));
                prop_assert_eq!(s.contains(f), r.contains(&f));
            }
        }
    }
}
