//! The phone's network link, shared by every app.
//!
//! A transfer (`net_recv`) first waits one round trip (the request reaching the server and the
//! first byte coming back), then shares the link's bandwidth equally with every other transfer
//! in progress — processor sharing, the long-run fairness of TCP flows on one bottleneck — until
//! its bytes are in.
//!
//! Invariants: the bytes served per unit of time never exceed the bandwidth; while `n` flows are
//! active each is served at `bandwidth / n`; a flow finishes exactly when its bytes are served
//! (to the nanosecond, rounded up); completion events carry a generation and a stale one (the
//! set of flows changed after it was scheduled) is ignored.
//!
//! Simplifications versus a real network: no TCP slow start or congestion window (a transfer
//! runs at its fair share from its first byte), no loss, no per-flow RTT difference, no uplink
//! (sends are not modelled), one bottleneck.
//!
//! The simulator (`forefront-sim`) drives it: a `net_recv` registers its transfer
//! ([`Link::request`]) and blocks; after the round trip its bytes join the link ([`Link::join`]);
//! each completion event ([`Link::complete`]) wakes the transfers it finished. A scenario sets
//! the link in `[phone]`: `net_mb_s` and `net_rtt_ms`, or `net_link = "wifi-bg"` / `"usb-tether"`.

use forefront_engine::SimTime;

use crate::prov::Tid;

/// Link speed and latency, from a preset or the scenario.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkParams {
    pub mb_s: f64,
    pub rtt_ms: f64,
}

/// Named links: `(name, MB/s, RTT ms, description)`. Values are assumptions stated with their
/// reasoning; the Revisiting Storage paper [RS] gives only "USB tethering is about 10× faster
/// than 802.11 b/g WiFi".
pub const PRESETS: &[(&str, f64, f64, &str)] = &[
    ("wifi-bg", 2.5, 20.0, "802.11 b/g WiFi: ~20 Mb/s real throughput of 54 Mb/s, 20 ms RTT through a proxy (assumptions)"),
    ("usb-tether", 25.0, 2.0, "USB reverse tethering: ~10x the WiFi [RS], 2 ms RTT (assumption)"),
];

pub fn preset(name: &str) -> Option<LinkParams> {
    PRESETS.iter().find(|p| p.0 == name).map(|p| LinkParams { mb_s: p.1, rtt_ms: p.2 })
}

#[derive(Clone, Debug)]
struct Flow {
    tid: Tid,
    /// Bytes still to come.
    left: f64,
}

/// The shared link's state.
#[derive(Clone, Debug)]
pub struct Link {
    /// Bytes per nanosecond.
    rate: f64,
    rtt_ns: u64,
    flows: Vec<Flow>,
    /// Transfers waiting out their round trip: (tid, bytes).
    pending: Vec<(Tid, u64)>,
    /// When `flows[..].left` was last brought up to date.
    at: SimTime,
    gen: u64,
    /// Bytes delivered so far.
    pub delivered: u64,
}

impl Link {
    pub fn new(p: LinkParams) -> Link {
        Link {
            rate: p.mb_s * 1e6 / 1e9,
            rtt_ns: (p.rtt_ms * 1e6) as u64,
            flows: Vec::new(),
            pending: Vec::new(),
            at: SimTime::ZERO,
            gen: 0,
            delivered: 0,
        }
    }

    pub fn rtt_ns(&self) -> u64 {
        self.rtt_ns
    }

    /// Transfers in progress (past their round trip).
    pub fn active(&self) -> usize {
        self.flows.len()
    }

    /// `tid` asks for `bytes`; it joins the link after the round trip ([`Link::join`]).
    pub fn request(&mut self, tid: Tid, bytes: u64) {
        self.pending.push((tid, bytes));
    }

    /// `tid`'s round trip is over: its bytes start flowing. Returns the next completion event
    /// to schedule (time, generation).
    pub fn join(&mut self, now: SimTime, tid: Tid) -> Option<(SimTime, u64)> {
        let i = self.pending.iter().position(|p| p.0 == tid).expect("a requested transfer");
        let (_, bytes) = self.pending.remove(i);
        self.advance(now);
        self.flows.push(Flow { tid, left: bytes as f64 });
        self.next(now)
    }

    /// The completion event of generation `gen` fired at `now`: the transfers that are done
    /// (in the order they joined) and the next event to schedule. A stale event returns nothing.
    pub fn complete(&mut self, now: SimTime, gen: u64) -> (Vec<Tid>, Option<(SimTime, u64)>) {
        if gen != self.gen {
            return (Vec::new(), None);
        }
        self.advance(now);
        let mut done = Vec::new();
        self.flows.retain(|f| {
            // Half a byte absorbs the float error of the shares.
            let finished = f.left <= 0.5;
            if finished {
                done.push(f.tid);
            }
            !finished
        });
        (done, self.next(now))
    }

    fn advance(&mut self, now: SimTime) {
        let elapsed = now.since(self.at) as f64;
        self.at = now;
        if self.flows.is_empty() || elapsed == 0.0 {
            return;
        }
        let share = elapsed * self.rate / self.flows.len() as f64;
        for f in &mut self.flows {
            let served = share.min(f.left);
            f.left -= served;
            self.delivered += served.round() as u64;
        }
    }

    fn next(&mut self, now: SimTime) -> Option<(SimTime, u64)> {
        self.gen += 1;
        let min = self.flows.iter().map(|f| f.left).fold(f64::INFINITY, f64::min);
        if !min.is_finite() {
            return None;
        }
        let ns = (min.max(0.0) * self.flows.len() as f64 / self.rate).ceil() as u64;
        Some((now.after(ns.max(1)), self.gen))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_to_end(link: &mut Link, mut ev: Option<(SimTime, u64)>, out: &mut Vec<(Tid, SimTime)>) {
        while let Some((t, g)) = ev {
            let (done, next) = link.complete(t, g);
            out.extend(done.into_iter().map(|d| (d, t)));
            ev = next;
        }
    }

    #[test]
    fn one_transfer_takes_its_bytes_over_the_bandwidth() {
        let mut l = Link::new(LinkParams { mb_s: 2.0, rtt_ms: 0.0 });
        l.request(1, 2_000_000);
        let ev = l.join(SimTime::ZERO, 1);
        let mut out = vec![];
        run_to_end(&mut l, ev, &mut out);
        assert_eq!(out, vec![(1, SimTime::from_ms(1000))]);
    }

    #[test]
    fn concurrent_transfers_share_the_link_equally() {
        // Two equal transfers started together finish together, at twice the time of one; a
        // third, half the size, started with them finishes first, at 3 × its size / bandwidth.
        let mut l = Link::new(LinkParams { mb_s: 1.0, rtt_ms: 0.0 });
        let mut ev = None;
        for (tid, bytes) in [(1, 1_000_000), (2, 1_000_000), (3, 500_000)] {
            l.request(tid, bytes);
            ev = l.join(SimTime::ZERO, tid);
        }
        let mut out = vec![];
        run_to_end(&mut l, ev, &mut out);
        assert_eq!(out[0], (3, SimTime::from_ms(1500)));
        assert_eq!(out[1].1, out[2].1, "{out:?}");
        // 2.5 MB in all at 1 MB/s: the link never idles and never exceeds its bandwidth.
        assert_eq!(out[1].1, SimTime::from_ms(2500));
        assert_eq!(l.delivered, 2_500_000);
    }

    #[test]
    fn a_late_joiner_slows_the_others_and_stale_events_are_ignored() {
        let mut l = Link::new(LinkParams { mb_s: 1.0, rtt_ms: 0.0 });
        l.request(1, 1_000_000);
        let first = l.join(SimTime::ZERO, 1).unwrap();
        assert_eq!(first.0, SimTime::from_ms(1000));
        l.request(2, 1_000_000);
        let ev = l.join(SimTime::from_ms(500), 2);
        // The event scheduled before flow 2 joined is stale.
        assert_eq!(l.complete(first.0, first.1), (vec![], None));
        let mut out = vec![];
        run_to_end(&mut l, ev, &mut out);
        // Flow 1 had 0.5 MB left at 500 ms, served at 0.5 MB/s: done at 1500 ms; flow 2 then has
        // 0.5 MB left at full rate: done at 2000 ms.
        assert_eq!(out, vec![(1, SimTime::from_ms(1500)), (2, SimTime::from_ms(2000))]);
    }

    #[test]
    fn presets_are_ten_times_apart() {
        let (w, u) = (preset("wifi-bg").unwrap(), preset("usb-tether").unwrap());
        assert!((u.mb_s / w.mb_s - 10.0).abs() < 1e-9);
        assert!(preset("lte").is_none());
    }
}
