//! The discrete-event kernel of `forefront sim`. It knows nothing about phones.
//!
//! - [`SimTime`]: simulated time, `u64` nanoseconds since the start of a run.
//! - [`EventQueue`]: a binary heap of pending events (the earliest kept aside when it was
//!   scheduled last, as the next burst's end usually is) ordered by `(time, seq)`, where `seq` is the
//!   insertion order, so events at the same instant fire in the order they were scheduled and a
//!   run is a pure function of its inputs. Events are a caller-chosen `Copy` type; the heap's
//!   storage is reused, so scheduling does not allocate once it has grown.
//! - [`RngStreams`]: independent, seeded random streams, one per component, so adding a random
//!   draw in one layer does not shift the numbers another layer sees.
//! - [`Spread`]: a log-normal factor of mean 1 around a nominal time (device service, compute).
//! - A run that stops advancing — [`STALL_EVENTS`] events in a row at one instant, a timer
//!   re-armed with a zero interval — ends: [`EventQueue::pop`] returns `None` and
//!   [`EventQueue::stall_report`] names the event, instead of the run hanging.
//!
//! ```
//! use forefront_engine::{EventQueue, SimTime};
//! let mut q = EventQueue::new();
//! q.schedule(SimTime::from_us(5), 'b');
//! q.schedule(SimTime::from_us(1), 'a');
//! q.schedule(SimTime::from_us(5), 'c');
//! let order: Vec<char> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
//! assert_eq!(order, ['a', 'b', 'c']);
//! ```

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::fmt;

pub use rand::Rng;
use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;

/// Simulated time in nanoseconds since the start of the run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimTime(pub u64);

impl SimTime {
    pub const ZERO: SimTime = SimTime(0);
    pub const MAX: SimTime = SimTime(u64::MAX);

    pub const fn from_ns(ns: u64) -> Self {
        SimTime(ns)
    }
    pub const fn from_us(us: u64) -> Self {
        SimTime(us * 1_000)
    }
    pub const fn from_ms(ms: u64) -> Self {
        SimTime(ms * 1_000_000)
    }
    pub fn from_secs_f64(s: f64) -> Self {
        SimTime((s * 1e9).round().max(0.0) as u64)
    }
    pub const fn ns(self) -> u64 {
        self.0
    }
    pub fn as_ms_f64(self) -> f64 {
        self.0 as f64 / 1e6
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }
    /// `self + ns`, saturating at [`SimTime::MAX`].
    pub const fn after(self, ns: u64) -> Self {
        SimTime(self.0.saturating_add(ns))
    }
    /// Nanoseconds from `earlier` to `self`, zero if `earlier` is later.
    pub const fn since(self, earlier: SimTime) -> u64 {
        self.0.saturating_sub(earlier.0)
    }
}

impl fmt::Display for SimTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.6}s", self.as_secs_f64())
    }
}

/// Events popped in a row at one instant after which the queue calls the run stalled. A
/// phone's busiest instant (every task of a thousand background apps starting at once) pops a
/// few tens of thousands; a loop that does not advance time reaches this in a fraction of a
/// second.
pub const STALL_EVENTS: u64 = 1 << 21;

struct Entry<E> {
    time: SimTime,
    seq: u64,
    event: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.time == other.time && self.seq == other.seq
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    // BinaryHeap is a max-heap: invert so the earliest (time, seq) is on top.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.time, other.seq).cmp(&(self.time, self.seq))
    }
}

/// Pending events ordered by `(time, insertion seq)`.
///
/// Invariant: [`EventQueue::pop`] never returns an event earlier than the previous one it
/// returned; scheduling into the past is clamped to the current time (and counted, so a model
/// bug that does it shows up in [`EventQueue::clamped`]).
///
/// Invariant: `front`, when set, holds the earliest pending event: it is earlier in
/// `(time, seq)` than every entry of `heap`. A simulator mostly schedules, while handling one
/// event, the very next one (a core's burst ends before anything else is due): that event then
/// waits in `front` and is popped without a trip through the heap. Anything scheduled earlier
/// than `front` takes its place and pushes it into the heap, so the order is the heap's alone.
pub struct EventQueue<E> {
    front: Option<Entry<E>>,
    heap: BinaryHeap<Entry<E>>,
    seq: u64,
    now: SimTime,
    popped: u64,
    clamped: u64,
    /// Events popped in a row at `now`.
    same_instant: u64,
    /// The event at which the run was found stalled (then `pop` returns `None`).
    stalled: Option<Entry<E>>,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    pub fn new() -> Self {
        Self::with_capacity(1024)
    }
    pub fn with_capacity(cap: usize) -> Self {
        EventQueue {
            front: None,
            heap: BinaryHeap::with_capacity(cap),
            seq: 0,
            now: SimTime::ZERO,
            popped: 0,
            clamped: 0,
            same_instant: 0,
            stalled: None,
        }
    }
    /// The time of the last event popped.
    pub fn now(&self) -> SimTime {
        self.now
    }
    pub fn schedule(&mut self, mut time: SimTime, event: E) {
        if time < self.now {
            self.clamped += 1;
            time = self.now;
        }
        self.seq += 1;
        let entry = Entry { time, seq: self.seq, event };
        // `seq` grows, so a later-scheduled entry is earlier than another only by its time.
        let first = match (&self.front, self.heap.peek()) {
            (Some(f), _) => time < f.time,
            (None, Some(top)) => time < top.time,
            (None, None) => true,
        };
        if first {
            if let Some(old) = self.front.replace(entry) {
                self.heap.push(old);
            }
        } else {
            self.heap.push(entry);
        }
    }
    /// Schedule `ns` nanoseconds after the current time.
    pub fn schedule_in(&mut self, ns: u64, event: E) {
        self.schedule(self.now.after(ns), event);
    }
    /// The earliest event; `None` when there is none or the run has stalled (see
    /// [`EventQueue::stall_report`]).
    pub fn pop(&mut self) -> Option<(SimTime, E)> {
        let entry = match self.front.take() {
            Some(f) => f,
            None => self.heap.pop()?,
        };
        debug_assert!(entry.time >= self.now, "time went backwards");
        // Branch-free on the hot path: one compare and a conditional move.
        self.same_instant = if entry.time == self.now { self.same_instant + 1 } else { 0 };
        if self.same_instant >= STALL_EVENTS {
            return self.stall(entry);
        }
        self.now = entry.time;
        self.popped += 1;
        Some((entry.time, entry.event))
    }
    /// The run stalled at `entry`, kept for [`EventQueue::stall_report`]. The caller stops at
    /// this `None`; a later pop at the same instant puts its entry back and returns `None` too.
    #[cold]
    fn stall(&mut self, entry: Entry<E>) -> Option<(SimTime, E)> {
        match self.stalled {
            None => self.stalled = Some(entry),
            Some(_) => self.heap.push(entry),
        }
        None
    }
    pub fn peek_time(&self) -> Option<SimTime> {
        self.front.as_ref().or_else(|| self.heap.peek()).map(|e| e.time)
    }
    pub fn len(&self) -> usize {
        self.heap.len() + usize::from(self.front.is_some())
    }
    pub fn is_empty(&self) -> bool {
        self.front.is_none() && self.heap.is_empty()
    }
    /// Events popped so far.
    pub fn popped(&self) -> u64 {
        self.popped
    }
    /// When the run stalled ([`STALL_EVENTS`] events in a row at one instant): the instant,
    /// the event it stopped at and the kinds of event pending at that instant (by their
    /// `Debug` names without fields), most frequent first. `None` while time advances.
    pub fn stall_report(&self) -> Option<String>
    where
        E: fmt::Debug,
    {
        let stalled = self.stalled.as_ref()?;
        let kind = |e: &E| {
            let d = format!("{e:?}");
            d.split(['(', ' ', '{']).next().unwrap_or_default().to_string()
        };
        let mut kinds: std::collections::BTreeMap<String, u64> = std::collections::BTreeMap::new();
        for e in self.heap.iter().chain(&self.front).filter(|e| e.time == stalled.time) {
            *kinds.entry(kind(&e.event)).or_default() += 1;
        }
        let mut kinds: Vec<(String, u64)> = kinds.into_iter().collect();
        kinds.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let pending: Vec<String> = kinds.iter().map(|(k, n)| format!("{k} ×{n}")).collect();
        Some(format!(
            "the simulation stopped advancing at {}: {STALL_EVENTS} events in a row at that instant, the last `{:?}`{}",
            stalled.time,
            stalled.event,
            if pending.is_empty() { String::new() } else { format!(" (pending then: {})", pending.join(", ")) }
        ))
    }
    /// Events that were scheduled in the past and clamped to `now` (a model bug if non-zero).
    pub fn clamped(&self) -> u64 {
        self.clamped
    }
}

/// One seeded random stream per component. Streams are derived from the run seed and a stable
/// component name, never from creation order.
pub struct RngStreams {
    seed: u64,
}

impl RngStreams {
    pub fn new(seed: u64) -> Self {
        RngStreams { seed }
    }
    /// The stream for `component` (e.g. `"fs.alloc"`): the same name and seed always give the
    /// same numbers.
    pub fn stream(&self, component: &str) -> Pcg64Mcg {
        // FNV-1a over the name, mixed with the seed: stable across Rust versions (unlike
        // `DefaultHasher`).
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in component.bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        Pcg64Mcg::seed_from_u64(h ^ self.seed.rotate_left(17))
    }
}

/// The random-number generator type handed out by [`RngStreams`].
pub type SimRng = Pcg64Mcg;

/// A multiplicative spread around a nominal time: log-normal with mean 1 and coefficient of
/// variation `cv` (how service and compute times of real hardware scatter around their
/// data-sheet value: never negative, a long right tail). `cv = 0` draws nothing and is exactly
/// 1, so a model without spread consumes no random numbers.
#[derive(Clone, Debug)]
pub struct Spread {
    dist: Option<rand_distr::LogNormal<f64>>,
}

impl Spread {
    /// `cv` must be finite and >= 0 (callers validate their inputs).
    pub fn new(cv: f64) -> Self {
        if !(cv > 0.0 && cv.is_finite()) {
            return Spread { dist: None };
        }
        // Mean 1: sigma^2 = ln(1 + cv^2), mu = -sigma^2 / 2.
        let sigma2 = (1.0 + cv * cv).ln();
        Spread { dist: Some(rand_distr::LogNormal::new(-sigma2 / 2.0, sigma2.sqrt()).expect("finite sigma")) }
    }

    /// One factor.
    pub fn sample(&self, rng: &mut SimRng) -> f64 {
        use rand_distr::Distribution;
        match &self.dist {
            Some(d) => d.sample(rng),
            None => 1.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{EventQueue, Rng, RngStreams, SimTime, Spread, STALL_EVENTS};
    use proptest::prelude::{prop_assert, prop_assert_eq, proptest};

    #[test]
    fn a_spread_has_mean_one_and_the_asked_variation() {
        let mut rng = RngStreams::new(7).stream("t");
        let s = Spread::new(0.3);
        let xs: Vec<f64> = (0..200_000).map(|_| s.sample(&mut rng)).collect();
        let mean = xs.iter().sum::<f64>() / xs.len() as f64;
        let sd = (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / xs.len() as f64).sqrt();
        assert!((mean - 1.0).abs() < 0.005, "mean {mean}");
        assert!((sd - 0.3).abs() < 0.01, "sd {sd}");
        assert!(xs.iter().all(|&x| x > 0.0));
        let mut r2 = RngStreams::new(7).stream("u");
        let next = r2.clone().gen::<u64>();
        assert_eq!(Spread::new(0.0).sample(&mut r2), 1.0);
        assert_eq!(r2.gen::<u64>(), next, "cv 0 draws nothing");
    }

    proptest! {
        #[test]
        fn pops_in_time_then_insertion_order(times in proptest::collection::vec(0u64..50, 1..200)) {
            let mut q = EventQueue::new();
            for (i, t) in times.iter().enumerate() {
                q.schedule(SimTime(*t), i);
            }
            let mut last: Option<(SimTime, usize)> = None;
            let mut n = 0;
            while let Some((t, i)) = q.pop() {
                prop_assert_eq!(SimTime(times[i]), t);
                if let Some((lt, li)) = last {
                    prop_assert!(lt < t || (lt == t && li < i));
                }
                last = Some((t, i));
                n += 1;
            }
            prop_assert_eq!(n, times.len());
        }
    }

    proptest! {
        /// Scheduling and popping interleaved (as a simulator does: each event schedules more,
        /// often the very next one) pops exactly what a sorted list of `(time, seq)` would.
        #[test]
        fn interleaved_ops_pop_as_a_sorted_list(ops in proptest::collection::vec((0u64..40, 0usize..4), 1..300)) {
            let mut q = EventQueue::new();
            let mut model: Vec<(SimTime, usize)> = Vec::new();
            for (i, &(dt, pops)) in ops.iter().enumerate() {
                let t = q.now().after(dt);
                q.schedule(t, i);
                model.push((t, i));
                for _ in 0..pops {
                    model.sort();
                    let want = (!model.is_empty()).then(|| model.remove(0));
                    prop_assert_eq!(q.peek_time(), want.map(|w| w.0));
                    prop_assert_eq!(q.pop(), want);
                    prop_assert_eq!(q.len(), model.len());
                }
            }
            model.sort();
            let rest: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
            prop_assert_eq!(rest, model);
            prop_assert!(q.is_empty());
        }
    }

    #[test]
    fn a_loop_at_one_instant_is_reported_not_run_forever() {
        #[derive(Debug)]
        enum Ev {
            Timer,
            Core(u8),
        }
        let mut q = EventQueue::new();
        q.schedule(SimTime(5), Ev::Timer);
        let started = std::time::Instant::now();
        let mut n = 0u64;
        // A timer re-armed with a zero interval, as `writeback_interval_s = 0` did.
        while let Some((t, ev)) = q.pop() {
            n += 1;
            match ev {
                Ev::Timer => {
                    q.schedule(t, Ev::Timer);
                    q.schedule(t, Ev::Core(1));
                }
                Ev::Core(c) => assert_eq!(c, 1),
            }
        }
        assert!(started.elapsed().as_secs_f64() < 1.0, "{:?}", started.elapsed());
        assert_eq!(n, STALL_EVENTS, "the first event came at a new instant, then the loop");
        let report = q.stall_report().expect("stalled");
        assert!(report.contains("stopped advancing at 0.000000s"), "{report}");
        assert!(report.contains("Timer ×1") && report.contains("Core ×"), "{report}");
        assert!(q.pop().is_none(), "a stalled queue stays stopped");
        // Many events at one instant, then time advances: no stall.
        let mut q = EventQueue::new();
        for i in 0..100_000u64 {
            q.schedule(SimTime(1), i);
        }
        q.schedule(SimTime(2), 0);
        assert_eq!(std::iter::from_fn(|| q.pop()).count(), 100_001);
        assert!(q.stall_report().is_none());
    }

    #[test]
    fn scheduling_in_the_past_is_clamped_and_counted() {
        let mut q = EventQueue::new();
        q.schedule(SimTime(10), 1);
        assert_eq!(q.pop(), Some((SimTime(10), 1)));
        q.schedule(SimTime(5), 2);
        assert_eq!(q.clamped(), 1);
        assert_eq!(q.pop(), Some((SimTime(10), 2)));
    }

    #[test]
    fn streams_are_stable_and_independent() {
        let s = RngStreams::new(42);
        let a: u64 = s.stream("fs").gen();
        let b: u64 = s.stream("fs").gen();
        let c: u64 = s.stream("flash").gen();
        assert_eq!(a, b);
        assert_ne!(a, c);
        let d: u64 = RngStreams::new(43).stream("fs").gen();
        assert_ne!(a, d);
    }
}
