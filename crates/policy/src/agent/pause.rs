//! When background work may be paused: a pure gate over a millisecond clock.
//!
//! Invariants: a pause never lasts longer than `max_ms`; between the end of one pause and the
//! start of the next there are at least `min_gap_ms`. So background work always gets at least
//! `min_gap_ms / (max_ms + min_gap_ms)` of wall time, whatever the callers ask.

/// Why a pause was not granted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    Disabled,
    /// Too soon after the previous pause; may retry in this many ms.
    TooSoon {
        retry_in_ms: u64,
    },
}

#[derive(Clone, Debug)]
pub struct PauseGate {
    enabled: bool,
    max_ms: u64,
    min_gap_ms: u64,
    /// Deadline of the pause in progress.
    until: Option<u64>,
    last_end: Option<u64>,
}

impl PauseGate {
    pub fn new(enabled: bool, max_ms: u64, min_gap_ms: u64) -> Self {
        PauseGate { enabled, max_ms, min_gap_ms, until: None, last_end: None }
    }

    /// Asks for a pause at `now`; returns its deadline. A pause already in progress is kept
    /// with its original deadline (a second burst does not extend it).
    pub fn begin(&mut self, now: u64) -> Result<u64, Refusal> {
        if !self.enabled {
            return Err(Refusal::Disabled);
        }
        if let Some(until) = self.until {
            return Ok(until);
        }
        if let Some(end) = self.last_end {
            let ready = end + self.min_gap_ms;
            if now < ready {
                return Err(Refusal::TooSoon { retry_in_ms: ready - now });
            }
        }
        let until = now + self.max_ms;
        self.until = Some(until);
        Ok(until)
    }

    /// Ends the pause in progress, if any; returns whether there was one.
    pub fn end(&mut self, now: u64) -> bool {
        if self.until.take().is_some() {
            self.last_end = Some(now);
            true
        } else {
            false
        }
    }

    /// The deadline of the pause in progress.
    pub fn deadline(&self) -> Option<u64> {
        self.until
    }

    pub fn expired(&self, now: u64) -> bool {
        self.until.is_some_and(|u| now >= u)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadline_gap_and_no_extension() {
        let mut g = PauseGate::new(true, 2000, 1000);
        assert_eq!(g.begin(100), Ok(2100));
        assert_eq!(g.begin(500), Ok(2100), "a second burst keeps the first deadline");
        assert!(!g.expired(2099));
        assert!(g.expired(2100));
        assert!(g.end(2100));
        assert!(!g.end(2101));
        assert_eq!(g.begin(2600), Err(Refusal::TooSoon { retry_in_ms: 500 }));
        assert_eq!(g.begin(3100), Ok(5100));
    }

    #[test]
    fn disabled_never_pauses() {
        let mut g = PauseGate::new(false, 2000, 0);
        assert_eq!(g.begin(0), Err(Refusal::Disabled));
        assert_eq!(g.deadline(), None);
    }

    #[test]
    fn background_share_is_bounded_whatever_the_callers_do() {
        // A hostile caller asks for a pause every ms and never ends one.
        let mut g = PauseGate::new(true, 300, 200);
        let mut paused = 0u64;
        for now in 0..100_000u64 {
            if g.expired(now) {
                g.end(now);
            }
            let _ = g.begin(now);
            if g.deadline().is_some() {
                paused += 1;
            }
        }
        let share = paused as f64 / 100_000.0;
        assert!(share <= 300.0 / 500.0 + 0.001, "paused {share}");
        assert!(share > 0.5, "pauses were granted: {share}");
    }
}
