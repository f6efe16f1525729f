//! deadline: PLACEHOLDER (FIFO) until the real scheduler lands.

use std::collections::VecDeque;

use forefront_engine::SimTime;
use serde::{Deserialize, Serialize};

use super::{Dispatch, IoScheduler, ReqId, ReqSlab};

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeadlineParams {}

pub struct Deadline {
    fifo: VecDeque<ReqId>,
}

impl Deadline {
    pub fn new(_p: DeadlineParams) -> Self {
        Deadline { fifo: VecDeque::new() }
    }
}

impl IoScheduler for Deadline {
    fn name(&self) -> &'static str {
        "deadline"
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
    fn queued(&self) -> usize {
        self.fifo.len()
    }
}
