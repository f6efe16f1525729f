//! noop: one FIFO; the device sees requests in arrival order (merges still happen upstream).

use std::collections::VecDeque;

use forefront_engine::SimTime;

use super::{Dispatch, IoScheduler, ReqId, ReqSlab};

#[derive(Default)]
pub struct Noop {
    fifo: VecDeque<ReqId>,
}

impl IoScheduler for Noop {
    fn name(&self) -> &'static str {
        "noop"
    }
    fn add(&mut self, id: ReqId, _reqs: &ReqSlab, _now: SimTime) {
        self.fifo.push_back(id);
    }
    fn remove_merged(&mut self, id: ReqId, _reqs: &ReqSlab) {
        self.fifo.retain(|&r| r != id);
    }
    fn dispatch(&mut self, _reqs: &ReqSlab, _in_flight: usize, _now: SimTime) -> Dispatch {
        self.fifo.pop_front().map_or(Dispatch::Empty, Dispatch::Request)
    }
    fn completed(&mut self, _id: ReqId, _reqs: &ReqSlab, _now: SimTime) {}
    fn boost(&mut self, id: ReqId, _reqs: &ReqSlab) -> bool {
        match self.fifo.iter().position(|&r| r == id) {
            Some(0) | None => false,
            Some(pos) => {
                self.fifo.remove(pos);
                self.fifo.push_front(id);
                true
            }
        }
    }
    fn queued(&self) -> usize {
        self.fifo.len()
    }
}
