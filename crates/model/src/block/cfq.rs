//! CFQ: the Linux 3.10 `block/cfq-iosched.c` scheduler (with `CONFIG_CFQ_GROUP_IOSCHED`), the
//! default I/O scheduler of Android phones of 2012–2018.
//!
//! # Structure
//!
//! - **cfq queues.** Each process has a *sync* queue (key: `prov.pid` and blkio group); *async*
//!   requests (write-back) share one queue per I/O priority (class RT/BE level 0..7, or IDLE),
//!   which lives in the root group, as in 3.10 ("all async queues are mapped to root group").
//!   A queue keeps its requests sorted by sector (one-way elevator with short back seeks,
//!   `cfq_choose_req`) and in a FIFO with a deadline (`fifo_expire_sync` / `_async`) that is
//!   checked once per time slice.
//! - **Service trees.** Per group, busy queues sit on one of 7 trees: {RT, BE} × {async,
//!   sync-noidle, sync} plus one for the IDLE class, ordered by `rb_key` (about "now + a priority
//!   offset − the slice left over last time").
//! - **Groups.** Busy groups sit on a tree ordered by `vdisktime`; a group is charged the time its
//!   queue's slice used, scaled by `1 / vfraction` where `vfraction = weight / Σ weights of busy
//!   groups`; its `group_slice = target_latency × vfraction`. A group that becomes busy is placed
//!   behind the last busy group.
//!
//! # Dispatch (`cfq_dispatch_requests` → `cfq_select_queue`)
//!
//! The *active queue* keeps the device until its slice ends, it runs dry and idling gives up,
//! or it is preempted. Then the group with the smallest `vdisktime` is chosen, in it the class
//! (RT > BE > IDLE), and the workload type (async, sync-noidle, sync): the current one continues
//! until its *workload slice* (its share of the group slice, smaller for async) runs out,
//! otherwise the tree whose first queue has the smallest `rb_key`. The first queue of that tree
//! becomes active. Its slice (`slice_sync` 100 ms / `slice_async` 40 ms, ± 20 % per ioprio level
//! from 4, `cfq_prio_slice`, shrunk by `low_latency` so that all queues of the class fit into
//! the group slice) starts when its first request completes. Per dispatch round a queue may have
//! `quantum / 2` requests on the device (up to `quantum` early in its slice, unlimited if it is
//! the only busy queue); async queues never dispatch while sync requests are on the device,
//! sync queues that idle never while async ones are, and async depth ramps up by one request per
//! `slice_sync` since a sync request last waited longer than `fifo_expire_sync`
//! (`cfq_may_dispatch`). An async queue is expired after `2 × slice_async_rq × (8 − level)`
//! dispatches, an IDLE-class one after each dispatch.
//!
//! **Idling.** When the active sync queue's last request completes and it has none queued, CFQ
//! keeps the device idle for `slice_idle` (8 ms) waiting for that process's next request
//! (`cfq_arm_slice_timer`); [`Dispatch::WaitUntil`] carries the idle timer. Queues whose process
//! thinks longer than `slice_idle`, or that are seeky, or whose next request is a sync write
//! (`REQ_NOIDLE`) lose their idle window and go to the sync-noidle tree, where CFQ idles only on
//! the tree's last queue; `group_idle` idles on a group's last queue. A request arriving for the
//! idling queue ends the wait (`cfq_rq_enqueued`). On a non-rotational device that queues
//! commands (`hw_tag`, estimated from the depth actually reached: at least 5) CFQ does not idle.
//!
//! **Preemption** (`cfq_should_preempt`): a sync request preempts an async active queue (even
//! across groups); an RT request a BE queue; anything an IDLE-class queue; metadata (`meta`,
//! `REQ_PRIO`) a queue without; and, within a group, a queue whose slice is used up.
//!
//! # Simplifications versus the kernel (and choices)
//!
//! - Exact nanosecond times instead of jiffies; constants of one jiffy (`CFQ_MIN_TT` = 2,
//!   minimum charge 1, the "1 jiffy left" wait-busy test) use 1 ms (HZ = 1000).
//! - No close-cooperator detection or queue merging (`cfq_close_cooperator`, prio trees).
//! - No `REQ_NOIDLE` flag on requests: sync writes (and discards) are treated as `REQ_NOIDLE`
//!   (`WRITE_SYNC` carries it in 3.10), reads are not. `meta` is `REQ_PRIO`.
//! - Think time is tracked per sync queue (the kernel tracks it per io context, which maps to one
//!   sync queue); async queues have no think time (the kernel would use the flusher's).
//! - A sync queue's ioprio follows the requests only while the queue is not busy (the kernel
//!   re-reads the task's ioprio on every request). Class 0 (`IOPRIO_CLASS_NONE`) is best effort
//!   level 4 (a nice-0 task's). Levels above 7 are 7.
//! - A blkio group index beyond `blkio_weights` is treated as the root group (index 0). Weights
//!   are clamped to the kernel's 10..=1000; no weights means a root group of weight 1000. Groups
//!   are flat (Android's groups are children of the root; with 3.10's `vfraction` that is the
//!   same as weight / Σ busy weights).
//! - `ReqOp::Flush` requests given to `add` bypass the queues and are dispatched first, in
//!   order. In the simulator they never reach CFQ: `BlockQueue::submit` puts every flush and
//!   every PREFLUSH / FUA write (jbd2's commit record) on the dispatch queue, as Linux 3.10's
//!   `blk_insert_flush` keeps REQ_FLUSH / REQ_FUA requests out of the elevator, so CFQ neither
//!   serves nor counts them.
//! - `remove_merged` cannot move the merge target's FIFO deadline forward (the trait does not
//!   name the target).
//! - QASIO `boost(id)`: the request goes to the front of its cfq queue (boosted requests are
//!   dispatched, in boost order, before the FIFO and sector order when the queue is served);
//!   if it is in an async queue that is not active, that queue is moved to the front of its
//!   service tree exactly as a preempting queue is (`rb_key` = first − 1 s), so it is the next
//!   async queue served, and the async tree is favoured at the next workload choice. Boosting
//!   does not bypass sync-before-async (`cfq_may_dispatch`), but whenever CFQ would dispatch a
//!   non-boosted async request while a boosted one waits in another queue (of any group), the
//!   boosted one goes instead, charged to the active queue's slice: QASIO's rule that a boosted
//!   request goes ahead of every other async request. (QASIO's patch is not public; this is
//!   the rule as the paper states it, not its code.)

use std::collections::{BTreeMap, VecDeque};

use sorted_vec::SortedSet;

use forefront_engine::SimTime;
use serde::{Deserialize, Serialize};

use super::{Dispatch, IoScheduler, ReqId, ReqOp, ReqSlab};

/// CFQ tunables, named as in `/sys/block/<dev>/queue/iosched/` (times in ms as there).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CfqParams {
    /// Requests a queue may have on the device per dispatch round (half of it normally), count
    /// (kernel default 8, block/cfq-iosched.c `cfq_quantum`).
    pub quantum: u32,
    /// FIFO deadline of sync requests, ms (kernel default 125 = HZ/8, block/cfq-iosched.c
    /// `cfq_fifo_expire[1]`).
    pub fifo_expire_sync: u64,
    /// FIFO deadline of async requests, ms (kernel default 250 = HZ/4, block/cfq-iosched.c
    /// `cfq_fifo_expire[0]`).
    pub fifo_expire_async: u64,
    /// Longest backward seek the elevator takes, KiB (kernel default 16384, block/cfq-iosched.c
    /// `cfq_back_max`).
    pub back_seek_max: u64,
    /// Cost factor of a backward seek relative to a forward one (kernel default 2,
    /// block/cfq-iosched.c `cfq_back_penalty`).
    pub back_seek_penalty: u64,
    /// Base time slice of a sync queue, ms (kernel default 100 = HZ/10, block/cfq-iosched.c
    /// `cfq_slice_sync`).
    pub slice_sync: u64,
    /// Base time slice of an async queue, ms (kernel default 40 = HZ/25, block/cfq-iosched.c
    /// `cfq_slice_async`).
    pub slice_async: u64,
    /// Async dispatches per slice are `2 × slice_async_rq × (8 − level)`, count (kernel default
    /// 2, block/cfq-iosched.c `cfq_slice_async_rq`).
    pub slice_async_rq: u32,
    /// Idle wait for a sync queue's next request, ms; 0 disables idling (kernel default 8 =
    /// HZ/125, block/cfq-iosched.c `cfq_slice_idle`).
    pub slice_idle: u64,
    /// Idle wait for a group's next request, ms (kernel default 8 = HZ/125,
    /// block/cfq-iosched.c `cfq_group_idle`).
    pub group_idle: u64,
    /// Scale slices so that every busy queue of a class is served within `target_latency`
    /// (kernel default on, block/cfq-iosched.c `cfq_latency`).
    pub low_latency: bool,
    /// Period in which all busy queues should be served, ms (kernel default 300 = 3*HZ/10,
    /// block/cfq-iosched.c `cfq_target_latency`).
    pub target_latency: u64,
    /// Whether the device is rotational (`/sys/block/<dev>/queue/rotational`). The MMC and UFS
    /// drivers mark their queues non-rotational (default false): then CFQ stops idling once it
    /// finds the device queues commands (`hw_tag`), and "seeky" means requests under 32 KiB.
    pub rotational: bool,
}

impl Default for CfqParams {
    fn default() -> Self {
        CfqParams {
            quantum: 8,
            fifo_expire_sync: 125,
            fifo_expire_async: 250,
            back_seek_max: 16 * 1024,
            back_seek_penalty: 2,
            slice_sync: 100,
            slice_async: 40,
            slice_async_rq: 2,
            slice_idle: 8,
            group_idle: 8,
            low_latency: true,
            target_latency: 300,
            rotational: false,
        }
    }
}

const MS: u64 = 1_000_000;
/// One jiffy at HZ = 1000, ns.
const JIFFY: u64 = MS;
/// `CFQ_MIN_TT`: minimum workload slice, 2 jiffies.
const MIN_TT: u64 = 2 * JIFFY;
/// `CFQ_IDLE_DELAY` (HZ/5): rb_key offset of IDLE-class queues, ns.
const IDLE_DELAY: i64 = 200 * MS as i64;
/// `CFQ_IDLE_DELAY` added unscaled to a joining group's vdisktime: the kernel adds HZ/5 in
/// units of 1/4096 jiffy; in our units (ns × 4096) that is 0.2 s of ns.
const GROUP_IDLE_DELAY_VT: u64 = 200 * MS;
const SERVICE_SHIFT: u32 = 12;
const HW_QUEUE_MIN: usize = 5;
/// `CFQQ_SEEK_THR`: a seek over more sectors is "seeky" on a rotational device.
const SEEK_THR: u64 = 8 * 100;
/// `CFQQ_CLOSE_THR`: a request this close (sectors) to the head may preempt an idling queue.
const CLOSE_THR: u64 = 8 * 1024;
/// `CFQQ_SECT_THR_NONROT`: on a non-rotational device, requests under 32 KiB are "seeky".
const SECT_THR_NONROT: u32 = 2 * 32;
const WEIGHT_MIN: u32 = 10;
const WEIGHT_MAX: u32 = 1000;

// Workload classes and types (indices as in the kernel's `wl_class_t` / `wl_type_t`).
const BE: usize = 0;
const RT: usize = 1;
const IDLE: usize = 2;
const ASYNC: usize = 0;
const SYNC_NOIDLE: usize = 1;
const SYNC: usize = 2;
const TREES_PER_GROUP: usize = 7;

/// Think-time estimate (`struct cfq_ttime`), ns.
#[derive(Clone, Copy, Default)]
struct TTime {
    last_end: u64,
    total: u64,
    samples: u64,
    mean: u64,
}

impl TTime {
    fn update(&mut self, now: u64, slice_idle: u64) {
        let elapsed = now.saturating_sub(self.last_end).min(2 * slice_idle);
        self.samples = (7 * self.samples + 256) / 8;
        self.total = (7 * self.total + 256 * elapsed) / 8;
        self.mean = (self.total + 128) / self.samples.max(1);
    }
    fn valid(&self) -> bool {
        self.samples > 80
    }
    /// `cfq_io_thinktime_big`.
    fn big(&self, slice: u64) -> bool {
        self.valid() && self.mean > slice
    }
}

#[derive(Default)]
struct ServiceTree {
    /// `(rb_key, insertion seq, queue)`: equal keys keep insertion order, as the rbtree does.
    set: SortedSet<(i64, u64, usize)>,
    ttime: TTime,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum QKey {
    Sync { pid: u32, group: usize },
    Async { class: u8, level: u8 },
}

struct Queue {
    sync: bool,
    /// ioprio class 1 RT, 2 BE, 3 IDLE.
    class: u8,
    level: u8,
    group: usize,
    sort: SortedSet<(u64, ReqId)>,
    /// FIFO: (insertion seq, request); deadlines are monotone (one expiry per queue kind).
    fifo: SortedSet<(u64, ReqId)>,
    /// QASIO-boosted requests, served first.
    boosted: VecDeque<ReqId>,
    next_rq: Option<ReqId>,
    queued: usize,
    prio_pending: usize,
    /// Requests on the device.
    dispatched: usize,
    on_rr: bool,
    /// The service tree the queue is on, with its key.
    st: Option<usize>,
    rb_key: i64,
    rb_seq: u64,
    wait_request: bool,
    must_dispatch: bool,
    fifo_expire: bool,
    idle_window: bool,
    slice_new: bool,
    deep: bool,
    wait_busy: bool,
    dispatch_start: u64,
    slice_start: Option<u64>,
    slice_end: u64,
    allocated_slice: u64,
    slice_dispatch: u32,
    slice_resid: i64,
    seek_history: u32,
    last_request_pos: u64,
    ttime: TTime,
}

struct Group {
    weight: u32,
    vdisktime: u64,
    /// weight / Σ busy weights, fixed point with `SERVICE_SHIFT`; valid while on the tree.
    vfraction: u64,
    on_tree: bool,
    tree_seq: u64,
    /// Busy queues of the group (`nr_cfqq`).
    nr_cfqq: usize,
    busy_queues_avg: [u64; 3],
    saved_wl_slice: u64,
    saved_wl_type: usize,
    saved_wl_class: usize,
    dispatched: usize,
    ttime: TTime,
}

#[derive(Clone, Copy)]
struct RqInfo {
    flush: bool,
    queue: usize,
    sector: u64,
    seq: u64,
    fifo_time: u64,
    sync: bool,
    /// `REQ_PRIO` (metadata).
    prio: bool,
    /// `REQ_NOIDLE` (sync write).
    noidle: bool,
    /// Submission time, ns.
    start: u64,
    dispatched: bool,
}

pub struct Cfq {
    p: CfqParams,
    /// ns, indexed by sync (0 async, 1 sync).
    fifo_expire: [u64; 2],
    slice: [u64; 2],
    slice_idle: u64,
    group_idle: u64,
    target_latency: u64,
    back_max_sectors: u64,
    nonrot: bool,

    queues: Vec<Queue>,
    qmap: BTreeMap<QKey, usize>,
    groups: Vec<Group>,
    trees: Vec<ServiceTree>,
    grp_tree: SortedSet<(u64, u64, usize)>,
    grp_min_vdisktime: u64,
    busy_weight: u64,

    serving_group: Option<usize>,
    serving_class: usize,
    serving_type: usize,
    workload_expires: i64,
    active: Option<usize>,
    idle_timer: Option<u64>,

    busy_queues: usize,
    busy_sync_queues: usize,
    rq_in_driver: usize,
    rq_in_flight: [usize; 2],
    rq_queued: usize,
    hw_tag: i8,
    hw_tag_est_depth: usize,
    hw_tag_samples: u32,
    last_position: u64,
    last_delayed_sync: i64,

    infos: Vec<Option<RqInfo>>,
    flushes: VecDeque<ReqId>,
    seq: u64,
    /// Every boosted request still queued, in boost order (stale entries are dropped lazily).
    boost_order: VecDeque<ReqId>,
}

fn seeky(q: &Queue) -> bool {
    q.seek_history.count_ones() > 32 / 8
}

impl Cfq {
    pub fn new(p: CfqParams, blkio_weights: &[u32]) -> Self {
        // Lower bounds as the sysfs store functions clamp them (and to avoid dividing by 0).
        let ms = |v: u64, min: u64| v.max(min).saturating_mul(MS);
        let weights: Vec<u32> = if blkio_weights.is_empty() { vec![WEIGHT_MAX] } else { blkio_weights.to_vec() };
        let groups = weights
            .iter()
            .map(|&w| Group {
                weight: w.clamp(WEIGHT_MIN, WEIGHT_MAX),
                vdisktime: 0,
                vfraction: 0,
                on_tree: false,
                tree_seq: 0,
                nr_cfqq: 0,
                busy_queues_avg: [0; 3],
                saved_wl_slice: 0,
                saved_wl_type: ASYNC,
                saved_wl_class: BE,
                dispatched: 0,
                ttime: TTime::default(),
            })
            .collect::<Vec<_>>();
        let trees = (0..groups.len() * TREES_PER_GROUP).map(|_| ServiceTree::default()).collect();
        Cfq {
            fifo_expire: [ms(p.fifo_expire_async, 1), ms(p.fifo_expire_sync, 1)],
            slice: [ms(p.slice_async, 1), ms(p.slice_sync, 1)],
            slice_idle: ms(p.slice_idle, 0),
            group_idle: ms(p.group_idle, 0),
            target_latency: ms(p.target_latency, 1),
            back_max_sectors: p.back_seek_max.saturating_mul(2),
            nonrot: !p.rotational,
            p: CfqParams {
                quantum: p.quantum.max(1),
                slice_async_rq: p.slice_async_rq.max(1),
                back_seek_penalty: p.back_seek_penalty.max(1),
                ..p
            },
            queues: Vec::new(),
            qmap: BTreeMap::new(),
            groups,
            trees,
            grp_tree: SortedSet::new(),
            grp_min_vdisktime: 0,
            busy_weight: 0,
            serving_group: None,
            serving_class: BE,
            serving_type: ASYNC,
            workload_expires: 0,
            active: None,
            idle_timer: None,
            busy_queues: 0,
            busy_sync_queues: 0,
            rq_in_driver: 0,
            rq_in_flight: [0; 2],
            rq_queued: 0,
            hw_tag: -1,
            hw_tag_est_depth: 0,
            hw_tag_samples: 0,
            last_position: 0,
            // "assume sync ops weren't delayed in the last second"
            last_delayed_sync: -(1000 * MS as i64),
            infos: Vec::new(),
            flushes: VecDeque::new(),
            seq: 0,
            boost_order: VecDeque::new(),
        }
    }

    /// Whether CFQ currently treats the device as queueing commands (`hw_tag`; −1 = not yet
    /// known, which counts as yes).
    pub fn hw_tag(&self) -> i8 {
        self.hw_tag
    }

    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    fn info(&self, id: ReqId) -> Option<RqInfo> {
        self.infos.get(id as usize).copied().flatten()
    }

    // ---- classification ----

    fn wl_class(q: &Queue) -> usize {
        match q.class {
            3 => IDLE,
            1 => RT,
            _ => BE,
        }
    }
    fn wl_type(q: &Queue) -> usize {
        if !q.sync {
            ASYNC
        } else if !q.idle_window {
            SYNC_NOIDLE
        } else {
            SYNC
        }
    }
    fn tree_index(group: usize, class: usize, ty: usize) -> usize {
        group * TREES_PER_GROUP + if class == IDLE { 6 } else { class * 3 + ty }
    }
    fn tree_of(&self, qi: usize) -> usize {
        let q = &self.queues[qi];
        q.st.unwrap_or_else(|| Self::tree_index(q.group, Self::wl_class(q), Self::wl_type(q)))
    }
    fn busy_wl(&self, class: usize, g: usize) -> usize {
        if class == IDLE {
            return self.trees[Self::tree_index(g, IDLE, 0)].set.len();
        }
        (0..3).map(|t| self.trees[Self::tree_index(g, class, t)].set.len()).sum()
    }
    fn busy_async(&self, g: usize) -> usize {
        self.trees[Self::tree_index(g, RT, ASYNC)].set.len() + self.trees[Self::tree_index(g, BE, ASYNC)].set.len()
    }

    /// `cfq_prio_slice`: base slice ± 20 % per level from 4, ns.
    fn prio_slice(&self, sync: bool, level: u8) -> u64 {
        let base = self.slice[sync as usize] as i64;
        (base + base / 5 * (4 - i64::from(level))).max(1) as u64
    }
    fn group_slice(&self, g: usize) -> u64 {
        ((u128::from(self.target_latency) * u128::from(self.groups[g].vfraction)) >> SERVICE_SHIFT) as u64
    }
    fn iops_mode(&self) -> bool {
        self.slice_idle == 0 && self.hw_tag != 0
    }
    fn slice_used(&self, qi: usize, now: u64) -> bool {
        let q = &self.queues[qi];
        !q.slice_new && now >= q.slice_end
    }

    /// `cfq_group_get_avg_queues`: a busy-queue average that rises fast and decays slowly.
    fn group_avg_queues(&mut self, g: usize, rt: bool) -> u64 {
        let class = if rt { RT } else { BE };
        let busy = self.busy_wl(class, g) as u64;
        let avg = &mut self.groups[g].busy_queues_avg[class];
        let (lo, hi) = ((*avg).min(busy), (*avg).max(busy));
        *avg = (3 * hi + lo + 2) / 4;
        *avg
    }

    /// `cfq_scaled_cfqq_slice`, ns.
    fn scaled_slice(&mut self, qi: usize) -> u64 {
        let (sync, level, g, rt) = {
            let q = &self.queues[qi];
            (q.sync, q.level, q.group, Self::wl_class(q) == RT)
        };
        let mut slice = self.prio_slice(sync, level);
        if self.p.low_latency {
            let iq = self.group_avg_queues(g, rt);
            let sync_slice = self.slice[1];
            let expect = sync_slice * iq;
            let group_slice = self.group_slice(g);
            if expect > group_slice {
                let base_low = 2 * self.slice_idle;
                let low = slice.min(base_low * slice / sync_slice);
                slice = (slice as u128 * group_slice as u128 / expect as u128) as u64;
                slice = slice.max(low);
            }
        }
        slice
    }

    // ---- request choice within a queue ----

    /// `cfq_choose_req`: which of two requests to serve next from head position `last`.
    fn choose_req(&self, r1: Option<ReqId>, r2: Option<ReqId>, last: u64) -> Option<ReqId> {
        let (a, b) = match (r1, r2) {
            (None, _) => return r2,
            (_, None) => return r1,
            (Some(a), Some(b)) if a == b => return r2,
            (Some(a), Some(b)) => (a, b),
        };
        let (Some(ia), Some(ib)) = (self.info(a), self.info(b)) else {
            return r1.or(r2);
        };
        if ia.sync != ib.sync {
            return Some(if ia.sync { a } else { b });
        }
        if ia.prio != ib.prio {
            return Some(if ia.prio { a } else { b });
        }
        let dist = |s: u64| -> Option<u64> {
            if s >= last {
                Some(s - last)
            } else if s + self.back_max_sectors >= last {
                Some((last - s).saturating_mul(self.p.back_seek_penalty))
            } else {
                None // wraps
            }
        };
        let (s1, s2) = (ia.sector, ib.sector);
        Some(match (dist(s1), dist(s2)) {
            (Some(d1), Some(d2)) => {
                if d1 < d2 || (d1 == d2 && s1 >= s2) {
                    a
                } else {
                    b
                }
            }
            (Some(_), None) => a,
            (None, Some(_)) => b,
            (None, None) => {
                if s1 <= s2 {
                    a
                } else {
                    b
                }
            }
        })
    }

    /// `cfq_find_next_rq`: the best neighbour of `last` in sector order.
    fn find_next_rq(&self, qi: usize, last: ReqId) -> Option<ReqId> {
        let info = self.info(last)?;
        let key = (info.sector, last);
        let sort = &self.queues[qi].sort;
        // The first key after `key` (wrapping to the first, unless that is `key`), and the last
        // key before it.
        let below = sort.partition_point(|k| *k < key);
        let above = sort.partition_point(|k| *k <= key);
        let next = sort.get(above).or_else(|| sort.first().filter(|k| **k != key)).map(|k| k.1);
        let prev = below.checked_sub(1).map(|i| sort[i].1);
        self.choose_req(next, prev, info.sector)
    }

    // ---- groups ----

    fn group_of(&self, idx: u16) -> usize {
        let i = usize::from(idx);
        if i < self.groups.len() {
            i
        } else {
            0
        }
    }

    fn group_tree_add(&mut self, g: usize) {
        if self.groups[g].on_tree {
            return;
        }
        self.busy_weight += u64::from(self.groups[g].weight);
        let seq = self.next_seq();
        let grp = &mut self.groups[g];
        grp.vfraction = ((u64::from(grp.weight) << SERVICE_SHIFT) / self.busy_weight.max(1)).max(1);
        grp.on_tree = true;
        grp.tree_seq = seq;
        self.grp_tree.find_or_insert((grp.vdisktime, seq, g));
    }

    fn group_tree_del(&mut self, g: usize) {
        let grp = &mut self.groups[g];
        if !grp.on_tree {
            return;
        }
        self.busy_weight -= u64::from(grp.weight);
        grp.vfraction = 0;
        grp.on_tree = false;
        self.grp_tree.remove_item(&(grp.vdisktime, grp.tree_seq, g));
    }

    /// `cfq_group_notify_queue_add`.
    fn group_queue_add(&mut self, g: usize) {
        self.groups[g].nr_cfqq += 1;
        if self.groups[g].on_tree {
            return;
        }
        // Behind the last busy group: a group that was idle does not keep old credit.
        self.groups[g].vdisktime = match self.grp_tree.last() {
            Some(&(vt, _, _)) => vt + GROUP_IDLE_DELAY_VT,
            None => self.grp_min_vdisktime,
        };
        self.group_tree_add(g);
    }

    /// `cfq_group_notify_queue_del`.
    fn group_queue_del(&mut self, g: usize) {
        let grp = &mut self.groups[g];
        grp.nr_cfqq = grp.nr_cfqq.saturating_sub(1);
        if grp.nr_cfqq > 0 {
            return;
        }
        self.group_tree_del(g);
        self.groups[g].saved_wl_slice = 0;
    }

    /// `cfq_cfqq_slice_usage`, ns.
    fn slice_usage(&self, qi: usize, now: u64) -> u64 {
        let q = &self.queues[qi];
        match q.slice_start {
            Some(start) if start != now => now.saturating_sub(start).min(q.allocated_slice),
            _ => now.saturating_sub(q.dispatch_start).max(JIFFY),
        }
    }

    /// `cfq_group_served`: charge the group for the slice its queue used.
    fn group_served(&mut self, g: usize, qi: usize, now: u64) {
        let nr_sync =
            self.groups[g].nr_cfqq as i64 - self.busy_async(g) as i64 - self.trees[Self::tree_index(g, IDLE, 0)].set.len() as i64;
        let used = self.slice_usage(qi, now);
        let q = &self.queues[qi];
        let charge = if self.iops_mode() {
            u64::from(q.slice_dispatch) * JIFFY
        } else if !q.sync && nr_sync <= 0 {
            q.allocated_slice
        } else {
            used
        };
        let vfr = self.groups[g].vfraction.max(1);
        let was_on = self.groups[g].on_tree;
        self.group_tree_del(g);
        let scaled = (u128::from(charge) << (2 * SERVICE_SHIFT)) / u128::from(vfr);
        let grp = &mut self.groups[g];
        grp.vdisktime = grp.vdisktime.saturating_add(scaled.min(u128::from(u64::MAX / 4)) as u64);
        if was_on {
            self.group_tree_add(g);
        }
        let grp = &mut self.groups[g];
        if self.workload_expires > now as i64 {
            grp.saved_wl_slice = (self.workload_expires - now as i64) as u64;
            grp.saved_wl_type = self.serving_type;
            grp.saved_wl_class = self.serving_class;
        } else {
            grp.saved_wl_slice = 0;
        }
    }

    // ---- service trees ----

    fn slice_offset(&self, qi: usize) -> i64 {
        let q = &self.queues[qi];
        // (nr_cfqq - 1) is -1 for the first queue of an idle group, as in the kernel.
        (self.groups[q.group].nr_cfqq as i64 - 1) * (self.prio_slice(true, 0) as i64 - self.prio_slice(q.sync, q.level) as i64)
    }

    /// `cfq_service_tree_add`.
    fn service_tree_add(&mut self, qi: usize, add_front: bool, now: u64) {
        let st = {
            let q = &self.queues[qi];
            Self::tree_index(q.group, Self::wl_class(q), Self::wl_type(q))
        };
        let key = if self.queues[qi].class == 3 {
            match self.trees[st].set.last() {
                Some(&(k, _, other)) if other != qi => IDLE_DELAY + k,
                _ => IDLE_DELAY + now as i64,
            }
        } else if !add_front {
            let k = self.slice_offset(qi) + now as i64 - self.queues[qi].slice_resid;
            self.queues[qi].slice_resid = 0;
            k
        } else {
            -(1000 * MS as i64) + self.trees[st].set.first().map_or(now as i64, |f| f.0)
        };
        let mut new = true;
        if let Some(old) = self.queues[qi].st {
            new = false;
            let q = &self.queues[qi];
            if key == q.rb_key && old == st {
                return;
            }
            self.trees[old].set.remove_item(&(q.rb_key, q.rb_seq, qi));
            self.queues[qi].st = None;
        }
        let seq = self.next_seq();
        self.trees[st].set.find_or_insert((key, seq, qi));
        let q = &mut self.queues[qi];
        q.st = Some(st);
        q.rb_key = key;
        q.rb_seq = seq;
        if add_front || !new {
            return;
        }
        let g = q.group;
        self.group_queue_add(g);
    }

    fn resort_rr_list(&mut self, qi: usize, now: u64) {
        if self.queues[qi].on_rr {
            self.service_tree_add(qi, false, now);
        }
    }

    fn add_cfqq_rr(&mut self, qi: usize, now: u64) {
        let q = &mut self.queues[qi];
        q.on_rr = true;
        self.busy_queues += 1;
        if q.sync {
            self.busy_sync_queues += 1;
        }
        self.resort_rr_list(qi, now);
    }

    fn del_cfqq_rr(&mut self, qi: usize) {
        let q = &mut self.queues[qi];
        if !q.on_rr {
            return;
        }
        q.on_rr = false;
        if let Some(st) = q.st.take() {
            self.trees[st].set.remove_item(&(q.rb_key, q.rb_seq, qi));
        }
        let (g, sync) = (q.group, q.sync);
        self.group_queue_del(g);
        self.busy_queues = self.busy_queues.saturating_sub(1);
        if sync {
            self.busy_sync_queues = self.busy_sync_queues.saturating_sub(1);
        }
    }

    // ---- queue lookup ----

    fn queue_for(&mut self, key: QKey, sync: bool, class: u8, level: u8, group: usize, now: u64) -> usize {
        if let Some(&qi) = self.qmap.get(&key) {
            return qi;
        }
        let qi = self.queues.len();
        self.queues.push(Queue {
            sync,
            class,
            level,
            group,
            sort: SortedSet::new(),
            fifo: SortedSet::new(),
            boosted: VecDeque::new(),
            next_rq: None,
            queued: 0,
            prio_pending: 0,
            dispatched: 0,
            on_rr: false,
            st: None,
            rb_key: 0,
            rb_seq: 0,
            wait_request: false,
            must_dispatch: false,
            fifo_expire: false,
            idle_window: sync && class != 3,
            slice_new: false,
            deep: false,
            wait_busy: false,
            dispatch_start: 0,
            slice_start: None,
            slice_end: 0,
            allocated_slice: 0,
            slice_dispatch: 0,
            slice_resid: 0,
            seek_history: 0,
            last_request_pos: 0,
            ttime: TTime { last_end: now, ..TTime::default() },
        });
        self.qmap.insert(key, qi);
        qi
    }

    // ---- removal and dispatch of requests ----

    /// `cfq_remove_request`: out of the sort tree, FIFO and boost list.
    fn remove_request(&mut self, id: ReqId) {
        let Some(info) = self.info(id) else { return };
        let qi = info.queue;
        if self.queues[qi].next_rq == Some(id) {
            self.queues[qi].next_rq = self.find_next_rq(qi, id);
        }
        let q = &mut self.queues[qi];
        q.fifo.remove_item(&(info.seq, id));
        q.sort.remove_item(&(info.sector, id));
        if let Some(pos) = q.boosted.iter().position(|&r| r == id) {
            q.boosted.remove(pos);
        }
        q.queued = q.queued.saturating_sub(1);
        if info.prio {
            q.prio_pending = q.prio_pending.saturating_sub(1);
        }
        self.rq_queued = self.rq_queued.saturating_sub(1);
    }

    /// `cfq_dispatch_insert` + `cfq_activate_request`.
    fn dispatch_insert(&mut self, id: ReqId, reqs: &ReqSlab) {
        let Some(mut info) = self.info(id) else {
            return;
        };
        let qi = info.queue;
        self.queues[qi].next_rq = self.find_next_rq(qi, id);
        self.remove_request(id);
        info.dispatched = true;
        self.infos[id as usize] = Some(info);
        let q = &mut self.queues[qi];
        q.dispatched += 1;
        let sync = q.sync;
        let g = q.group;
        self.groups[g].dispatched += 1;
        self.rq_in_flight[sync as usize] += 1;
        self.rq_in_driver += 1;
        self.last_position = reqs.try_get(id).map_or(info.sector, |r| r.end_sector());
    }

    /// `cfq_check_fifo`: the FIFO head if expired, looked at once per slice.
    fn check_fifo(&mut self, qi: usize, now: u64) -> Option<ReqId> {
        let q = &mut self.queues[qi];
        if q.fifo_expire {
            return None;
        }
        q.fifo_expire = true;
        let &(_, id) = q.fifo.first()?;
        let info = self.info(id)?;
        (now >= info.fifo_time).then_some(id)
    }

    // ---- idling ----

    /// `cfq_should_idle`.
    fn should_idle(&self, qi: usize) -> bool {
        let q = &self.queues[qi];
        if self.slice_idle == 0 || Self::wl_class(q) == IDLE {
            return false;
        }
        if q.idle_window && !(self.nonrot && self.hw_tag != 0) {
            return true;
        }
        let st = &self.trees[self.tree_of(qi)];
        q.st.is_some() && st.set.len() == 1 && q.sync && !st.ttime.big(self.slice_idle)
    }

    /// `cfq_arm_slice_timer`.
    fn arm_slice_timer(&mut self, now: u64) {
        let Some(qi) = self.active else { return };
        if self.nonrot && self.hw_tag != 0 {
            return;
        }
        let mut group_idle = 0;
        if !self.should_idle(qi) {
            if self.group_idle > 0 {
                group_idle = self.group_idle;
            } else {
                return;
            }
        }
        let q = &self.queues[qi];
        if q.dispatched > 0 {
            return;
        }
        // Do not idle past the slice for a process that thinks longer than what is left.
        if q.sync && q.ttime.valid() && q.slice_end.wrapping_sub(now) < q.ttime.mean {
            return;
        }
        if group_idle > 0 && self.groups[q.group].nr_cfqq > 1 {
            return;
        }
        let sl = if group_idle > 0 { group_idle } else { self.slice_idle };
        if sl == 0 {
            return;
        }
        self.queues[qi].wait_request = true;
        self.idle_timer = Some(now + sl);
    }

    /// `cfq_idle_slice_timer`, run at the timer's time `t`.
    fn idle_timer_fired(&mut self, t: u64) {
        let Some(qi) = self.active else { return };
        let q = &self.queues[qi];
        if q.must_dispatch {
            return;
        }
        if !self.slice_used(qi, t) {
            if self.busy_queues == 0 || !q.sort.is_empty() {
                return;
            }
            self.queues[qi].deep = false;
        }
        self.slice_expired(false, t);
    }

    /// Run the idle timer if it is due: every entry point calls this first, so the timer takes
    /// effect at its own time even if nobody asked for a dispatch at that moment.
    fn run_timer(&mut self, now: u64) {
        if let Some(t) = self.idle_timer {
            if t <= now {
                self.idle_timer = None;
                self.idle_timer_fired(t);
            }
        }
    }

    /// `cfq_should_wait_busy`.
    fn should_wait_busy(&self, qi: usize, now: u64) -> bool {
        let q = &self.queues[qi];
        let g = &self.groups[q.group];
        if !q.sort.is_empty() || g.nr_cfqq > 1 || g.ttime.big(self.group_idle) {
            return false;
        }
        if self.slice_used(qi, now) {
            return true;
        }
        let left = q.slice_end.saturating_sub(now);
        (q.sync && q.ttime.valid() && left < q.ttime.mean) || left <= JIFFY
    }

    // ---- slices ----

    fn set_active_queue(&mut self, qi: Option<usize>, now: u64) {
        if let Some(qi) = qi {
            let q = &mut self.queues[qi];
            q.slice_start = None;
            q.dispatch_start = now;
            q.allocated_slice = 0;
            q.slice_end = 0;
            q.slice_dispatch = 0;
            q.wait_request = false;
            q.must_dispatch = false;
            q.fifo_expire = false;
            q.slice_new = true;
        }
        self.idle_timer = None;
        self.active = qi;
    }

    /// `__cfq_slice_expired`.
    fn slice_expired(&mut self, timed_out: bool, now: u64) {
        let Some(qi) = self.active else { return };
        self.idle_timer = None;
        {
            let q = &mut self.queues[qi];
            q.wait_request = false;
            q.wait_busy = false;
        }
        if timed_out {
            let resid = if self.queues[qi].slice_new {
                self.scaled_slice(qi) as i64
            } else {
                self.queues[qi].slice_end as i64 - now as i64
            };
            self.queues[qi].slice_resid = resid;
        }
        let g = self.queues[qi].group;
        self.group_served(g, qi, now);
        if self.queues[qi].on_rr && self.queues[qi].sort.is_empty() {
            self.del_cfqq_rr(qi);
        }
        self.resort_rr_list(qi, now);
        self.active = None;
    }

    fn set_prio_slice(&mut self, qi: usize, now: u64) {
        let slice = self.scaled_slice(qi);
        let q = &mut self.queues[qi];
        q.slice_start = Some(now);
        q.slice_end = now + slice;
        q.allocated_slice = slice;
    }

    // ---- choosing what to serve ----

    fn choose_wl_type(&self, g: usize, class: usize) -> usize {
        let mut best = SYNC_NOIDLE;
        let mut lowest: Option<i64> = None;
        for ty in [ASYNC, SYNC_NOIDLE, SYNC] {
            if let Some(&(k, _, _)) = self.trees[Self::tree_index(g, class, ty)].set.first() {
                if lowest.is_none_or(|l| k < l) {
                    lowest = Some(k);
                    best = ty;
                }
            }
        }
        best
    }

    /// `choose_wl_class_and_type`.
    fn choose_wl_class_and_type(&mut self, g: usize, now: u64) {
        let original = self.serving_class;
        self.serving_class = if self.busy_wl(RT, g) > 0 {
            RT
        } else if self.busy_wl(BE, g) > 0 {
            BE
        } else {
            self.serving_class = IDLE;
            self.workload_expires = (now + JIFFY) as i64;
            return;
        };
        if original == self.serving_class {
            let count = self.trees[Self::tree_index(g, self.serving_class, self.serving_type)].set.len();
            if count > 0 && now as i64 <= self.workload_expires {
                return;
            }
        }
        let class = self.serving_class;
        self.serving_type = self.choose_wl_type(g, class);
        let count = self.trees[Self::tree_index(g, class, self.serving_type)].set.len() as u64;
        let group_slice = self.group_slice(g);
        let busy = self.busy_wl(class, g) as u64;
        let mut slice = group_slice * count / self.groups[g].busy_queues_avg[class].max(busy).max(1);
        if self.serving_type == ASYNC {
            let tmp = self.target_latency * self.busy_async(g) as u64 / (self.busy_queues as u64).max(1);
            slice = slice.min(tmp);
            slice = slice * self.slice[0] / self.slice[1];
        } else {
            slice = slice.max(2 * self.slice_idle);
        }
        slice = slice.max(MIN_TT);
        self.workload_expires = (now + slice) as i64;
    }

    /// `cfq_choose_cfqg`.
    fn choose_cfqg(&mut self, now: u64) {
        let Some(&(vt, _, g)) = self.grp_tree.first() else {
            self.serving_group = None;
            return;
        };
        self.grp_min_vdisktime = self.grp_min_vdisktime.max(vt);
        self.serving_group = Some(g);
        let grp = &self.groups[g];
        if grp.saved_wl_slice > 0 {
            self.workload_expires = (now + grp.saved_wl_slice) as i64;
            self.serving_type = grp.saved_wl_type;
            self.serving_class = grp.saved_wl_class;
        } else {
            self.workload_expires = now as i64 - 1;
        }
        self.choose_wl_class_and_type(g, now);
    }

    fn get_next_queue(&self) -> Option<usize> {
        if self.rq_queued == 0 {
            return None;
        }
        let g = self.serving_group?;
        let st = Self::tree_index(g, self.serving_class, self.serving_type);
        self.trees[st].set.first().map(|k| k.2)
    }

    fn new_queue(&mut self, now: u64) -> Option<usize> {
        self.choose_cfqg(now);
        let qi = self.get_next_queue();
        self.set_active_queue(qi, now);
        qi
    }

    /// Whether to keep the device waiting for the active group (`check_group_idle`).
    fn group_idle_wait(&self, qi: usize) -> bool {
        let g = &self.groups[self.queues[qi].group];
        self.group_idle > 0 && g.nr_cfqq == 1 && g.dispatched > 0 && !g.ttime.big(self.group_idle)
    }

    /// `cfq_select_queue`: keep the active queue, wait, or expire it and pick the next.
    fn select_queue(&mut self, now: u64) -> Option<usize> {
        let Some(qi) = self.active else {
            return self.new_queue(now);
        };
        if self.rq_queued == 0 {
            return None;
        }
        let q = &self.queues[qi];
        if q.wait_busy && !q.sort.is_empty() {
            // expire
        } else if self.slice_used(qi, now) && !q.must_dispatch {
            if self.groups[q.group].nr_cfqq == 1 && q.sort.is_empty() && q.dispatched > 0 && self.should_idle(qi) {
                return None;
            }
            if self.group_idle_wait(qi) {
                return None;
            }
        } else if !q.sort.is_empty() {
            return Some(qi);
        } else {
            if self.idle_timer.is_some() {
                return None;
            }
            // A deep seeky queue on a fast device: stop idling for it.
            let q = &self.queues[qi];
            if seeky(q)
                && q.idle_window
                && (q.slice_new || q.slice_end.wrapping_sub(now) > now.wrapping_sub(q.slice_start.unwrap_or(0)))
            {
                let q = &mut self.queues[qi];
                q.deep = false;
                q.idle_window = false;
            }
            if self.queues[qi].dispatched > 0 && self.should_idle(qi) {
                return None;
            }
            if self.group_idle_wait(qi) {
                return None;
            }
        }
        self.slice_expired(false, now);
        self.new_queue(now)
    }

    /// `cfq_slice_used_soon`.
    fn slice_used_soon(&self, qi: usize, now: u64) -> bool {
        let q = &self.queues[qi];
        q.slice_new || now + self.slice_idle * q.dispatched as u64 > q.slice_end
    }

    /// `cfq_may_dispatch`.
    fn may_dispatch(&self, qi: usize, now: u64) -> bool {
        let q = &self.queues[qi];
        if self.should_idle(qi) && self.rq_in_flight[0] > 0 {
            return false; // drain async before sync that idles
        }
        if self.rq_in_flight[1] > 0 && !q.sync {
            return false; // no async while sync is in flight
        }
        let idle_class = Self::wl_class(q) == IDLE;
        let mut max = if idle_class { 1 } else { (self.p.quantum / 2).max(1) as usize };
        if q.dispatched >= max {
            if idle_class {
                return false;
            }
            let promote_sync = q.sync && self.busy_sync_queues == 1;
            if self.busy_queues > 1 && self.slice_used_soon(qi, now) && !promote_sync {
                return false;
            }
            max = if self.busy_queues == 1 || promote_sync { usize::MAX } else { self.p.quantum as usize };
        }
        if !q.sync && self.p.low_latency {
            let last_sync = (now as i64 - self.last_delayed_sync).max(0) as u64;
            let mut depth = (last_sync / self.slice[1]) as usize;
            if depth == 0 && q.dispatched == 0 {
                depth = 1;
            }
            max = max.min(depth);
        }
        q.dispatched < max
    }

    /// `cfq_prio_to_maxrq`: async dispatches per slice.
    fn prio_to_maxrq(&self, qi: usize) -> u32 {
        let q = &self.queues[qi];
        2 * self.p.slice_async_rq * (8 - u32::from(q.level.min(7)))
    }

    // ---- arrival ----

    /// `cfq_update_idle_window`.
    fn update_idle_window(&mut self, qi: usize) {
        let next_noidle = self.queues[qi].next_rq.and_then(|r| self.info(r)).is_some_and(|i| i.noidle);
        let slice_idle = self.slice_idle;
        let q = &mut self.queues[qi];
        if !q.sync || q.class == 3 {
            return;
        }
        let mut enable = q.idle_window;
        if q.queued >= 4 {
            q.deep = true;
        }
        if next_noidle || slice_idle == 0 || (!q.deep && seeky(q)) {
            enable = false;
        } else if q.ttime.valid() {
            enable = q.ttime.mean <= slice_idle;
        }
        q.idle_window = enable;
    }

    /// `cfq_should_preempt`: does a request `info` for queue `ni` take the device now?
    fn should_preempt(&self, ni: usize, info: &RqInfo, now: u64) -> bool {
        let Some(ai) = self.active else { return false };
        let (n, a) = (&self.queues[ni], &self.queues[ai]);
        let (ncls, acls) = (Self::wl_class(n), Self::wl_class(a));
        if ncls == IDLE {
            return false;
        }
        if acls == IDLE {
            return true;
        }
        if acls == RT && ncls != RT {
            return false;
        }
        if info.sync && !a.sync {
            return true;
        }
        if n.group != a.group {
            return false;
        }
        if self.slice_used(ai, now) {
            return true;
        }
        if self.serving_type == SYNC_NOIDLE
            && Self::wl_type(n) == SYNC_NOIDLE
            && n.st.is_some_and(|st| self.trees[st].set.len() == 2)
            && a.sort.is_empty()
        {
            return true;
        }
        if info.prio && a.prio_pending == 0 {
            return true;
        }
        if ncls == RT && acls != RT {
            return true;
        }
        if a.sort.is_empty() && !self.should_idle(ai) {
            return true;
        }
        if a.slice_dispatch == 0 || !a.wait_request {
            return false;
        }
        info.sector.abs_diff(self.last_position) <= CLOSE_THR
    }

    /// `cfq_preempt_queue`.
    fn preempt_queue(&mut self, qi: usize, now: u64) {
        let old_type = self.active.map(|a| Self::wl_type(&self.queues[a]));
        self.slice_expired(true, now);
        if old_type != Some(Self::wl_type(&self.queues[qi])) {
            let g = self.queues[qi].group;
            self.groups[g].saved_wl_slice = 0;
        }
        if !self.queues[qi].on_rr {
            return;
        }
        self.service_tree_add(qi, true, now);
        let q = &mut self.queues[qi];
        q.slice_end = 0;
        q.slice_new = true;
    }

    /// `cfq_update_hw_tag`, at a completion (before `rq_in_driver` drops).
    fn update_hw_tag(&mut self) {
        self.hw_tag_est_depth = self.hw_tag_est_depth.max(self.rq_in_driver);
        if self.hw_tag == 1 {
            return;
        }
        if self.rq_queued <= HW_QUEUE_MIN && self.rq_in_driver <= HW_QUEUE_MIN {
            return;
        }
        if let Some(qi) = self.active {
            let q = &self.queues[qi];
            if q.idle_window && q.dispatched + q.queued < HW_QUEUE_MIN && self.rq_in_driver < HW_QUEUE_MIN {
                return;
            }
        }
        self.hw_tag_samples += 1;
        if self.hw_tag_samples <= 50 {
            return;
        }
        self.hw_tag = if self.hw_tag_est_depth >= HW_QUEUE_MIN { 1 } else { 0 };
    }

    /// The oldest boosted request still queued in a queue other than `qi`.
    fn boosted_elsewhere(&mut self, qi: usize) -> Option<ReqId> {
        while let Some(&b) = self.boost_order.front() {
            match self.info(b) {
                Some(i) if !i.dispatched && !i.flush && self.queues[i.queue].boosted.contains(&b) => {
                    if i.queue == qi {
                        return None;
                    }
                    return Some(b);
                }
                _ => {
                    self.boost_order.pop_front();
                }
            }
        }
        None
    }

    fn boost_queued(&mut self, id: ReqId) -> bool {
        let Some(info) = self.info(id) else {
            return false;
        };
        if info.flush || info.dispatched {
            return false;
        }
        let qi = info.queue;
        let mut changed = false;
        if !self.queues[qi].boosted.contains(&id) {
            self.queues[qi].boosted.push_back(id);
            self.boost_order.push_back(id);
            changed = true;
        }
        let q = &self.queues[qi];
        if !q.sync && q.on_rr && self.active != Some(qi) {
            if let Some(st) = q.st {
                if self.trees[st].set.first().map(|k| k.2) != Some(qi) {
                    self.service_tree_add(qi, true, 0);
                    changed = true;
                }
            }
        }
        changed
    }
}

/// Normalised (class, level) of a request's ioprio: class 0 (none) is best effort level 4.
fn norm_prio(class: u8, level: u8) -> (u8, u8) {
    match class {
        1 => (1, level.min(7)),
        2 => (2, level.min(7)),
        3 => (3, 7),
        _ => (2, 4),
    }
}

impl IoScheduler for Cfq {
    fn name(&self) -> &'static str {
        "cfq"
    }

    /// `cfq_set_request` + `cfq_insert_request` + `cfq_rq_enqueued`.
    fn add(&mut self, id: ReqId, reqs: &ReqSlab, now_t: SimTime) {
        let now = now_t.ns();
        self.run_timer(now);
        let Some(r) = reqs.try_get(id) else { return };
        if self.info(id).is_some() {
            debug_assert!(false, "request {id} added twice");
            return;
        }
        if self.infos.len() <= id as usize {
            self.infos.resize(id as usize + 1, None);
        }
        if r.op == ReqOp::Flush {
            self.flushes.push_back(id);
            self.infos[id as usize] = Some(RqInfo {
                flush: true,
                queue: 0,
                sector: r.sector,
                seq: 0,
                fifo_time: 0,
                sync: r.sync,
                prio: false,
                noidle: false,
                start: now,
                dispatched: false,
            });
            return;
        }
        let sync = r.sync;
        let (class, level) = norm_prio(r.ioprio_class, r.ioprio_level);
        let (key, group) = if sync {
            let g = self.group_of(r.prov.blkio_group);
            (QKey::Sync { pid: r.prov.pid, group: g }, g)
        } else {
            (QKey::Async { class, level }, 0)
        };
        let qi = self.queue_for(key, sync, class, level, group, now);
        if sync && !self.queues[qi].on_rr && self.active != Some(qi) {
            let q = &mut self.queues[qi];
            if (q.class, q.level) != (class, level) {
                q.class = class;
                q.level = level;
                if class == 3 {
                    q.idle_window = false;
                }
            }
        }
        let seq = self.next_seq();
        let info = RqInfo {
            flush: false,
            queue: qi,
            sector: r.sector,
            seq,
            fifo_time: now + self.fifo_expire[sync as usize],
            sync,
            prio: r.meta,
            noidle: sync && r.op != ReqOp::Read,
            start: r.times.submitted.ns(),
            dispatched: false,
        };
        self.infos[id as usize] = Some(info);
        {
            let q = &mut self.queues[qi];
            q.fifo.find_or_insert((seq, id));
            q.sort.find_or_insert((r.sector, id));
            q.queued += 1;
        }
        if !self.queues[qi].on_rr {
            self.add_cfqq_rr(qi, now);
        }
        let prev = self.queues[qi].next_rq;
        self.queues[qi].next_rq = self.choose_req(prev, Some(id), self.last_position);

        // cfq_rq_enqueued
        self.rq_queued += 1;
        if r.meta {
            self.queues[qi].prio_pending += 1;
        }
        if sync {
            let st = self.tree_of(qi);
            self.queues[qi].ttime.update(now, self.slice_idle);
            self.trees[st].ttime.update(now, self.slice_idle);
        }
        let g = self.queues[qi].group;
        self.groups[g].ttime.update(now, self.group_idle);
        {
            let nonrot = self.nonrot;
            let q = &mut self.queues[qi];
            let sdist = if q.last_request_pos != 0 { r.sector.abs_diff(q.last_request_pos) } else { 0 };
            q.seek_history <<= 1;
            q.seek_history |= u32::from(if nonrot { r.sectors < SECT_THR_NONROT } else { sdist > SEEK_THR });
        }
        self.update_idle_window(qi);
        self.queues[qi].last_request_pos = r.end_sector();

        if self.active == Some(qi) {
            if self.queues[qi].wait_request {
                if r.bytes() > 4096 || self.busy_queues > 1 {
                    self.idle_timer = None;
                    self.queues[qi].wait_request = false;
                } else {
                    // A small request and nobody else busy: let it through, keep the timer
                    // (the kernel hopes for merges until the timer kicks the queue).
                    self.queues[qi].must_dispatch = true;
                }
            }
        } else if self.should_preempt(qi, &info, now) {
            self.preempt_queue(qi, now);
        }
        if r.boosted {
            self.boost_queued(id);
        }
    }

    /// `cfq_merged_requests` for the request merged away.
    fn remove_merged(&mut self, id: ReqId, _reqs: &ReqSlab) {
        let Some(info) = self.info(id) else { return };
        if info.dispatched {
            return;
        }
        if info.flush {
            self.flushes.retain(|&r| r != id);
            self.infos[id as usize] = None;
            return;
        }
        self.remove_request(id);
        self.infos[id as usize] = None;
        let qi = info.queue;
        if self.queues[qi].on_rr && self.queues[qi].sort.is_empty() && self.active != Some(qi) {
            self.del_cfqq_rr(qi);
        }
    }

    /// `cfq_dispatch_requests` (one request per call).
    fn dispatch(&mut self, reqs: &ReqSlab, _in_flight: usize, now_t: SimTime) -> Dispatch {
        let now = now_t.ns();
        if let Some(id) = self.flushes.pop_front() {
            self.infos[id as usize] = None;
            return Dispatch::Request(id);
        }
        self.run_timer(now);
        if self.busy_queues == 0 || self.rq_queued == 0 {
            return Dispatch::Empty;
        }
        let wait = |s: &Self| match s.idle_timer {
            Some(t) if t > now && s.active.is_some() => Dispatch::WaitUntil(SimTime::from_ns(t)),
            _ => Dispatch::Empty,
        };
        let Some(qi) = self.select_queue(now) else {
            return wait(self);
        };
        if self.queues[qi].sort.is_empty() || !self.may_dispatch(qi, now) {
            return wait(self);
        }
        let id = match self.queues[qi].boosted.front().copied() {
            Some(b) => Some(b),
            None => self.check_fifo(qi, now).or(self.queues[qi].next_rq),
        };
        let Some(mut id) = id.or_else(|| self.queues[qi].sort.iter().next().map(|k| k.1)) else {
            return wait(self);
        };
        // QASIO's rule: no async request goes to the device ahead of a boosted one.
        if !self.queues[qi].sync && !self.queues[qi].boosted.contains(&id) {
            if let Some(b) = self.boosted_elsewhere(qi) {
                id = b;
            }
        }
        let from = self.info(id).map_or(qi, |i| i.queue);
        self.dispatch_insert(id, reqs);
        if from != qi && self.queues[from].on_rr && self.queues[from].sort.is_empty() && self.active != Some(from) {
            self.del_cfqq_rr(from);
        }
        let (sync, slice_dispatch) = {
            let q = &mut self.queues[qi];
            q.slice_dispatch += 1;
            q.must_dispatch = false;
            (q.sync, q.slice_dispatch)
        };
        // Expire an async queue that used its request budget, an IDLE-class one after each
        // request, when others are waiting.
        let expire_now = self.busy_queues > 1
            && ((!sync && slice_dispatch >= self.prio_to_maxrq(qi)) || Self::wl_class(&self.queues[qi]) == IDLE);
        if expire_now {
            self.queues[qi].slice_end = now + JIFFY;
            self.slice_expired(false, now);
        }
        Dispatch::Request(id)
    }

    /// `cfq_completed_request`.
    fn completed(&mut self, id: ReqId, _reqs: &ReqSlab, now_t: SimTime) {
        let now = now_t.ns();
        self.run_timer(now);
        let Some(info) = self.info(id) else { return };
        if !info.dispatched || info.flush {
            return;
        }
        self.infos[id as usize] = None;
        self.update_hw_tag();
        let qi = info.queue;
        self.rq_in_driver = self.rq_in_driver.saturating_sub(1);
        let (sync, g) = {
            let q = &mut self.queues[qi];
            q.dispatched = q.dispatched.saturating_sub(1);
            (q.sync, q.group)
        };
        self.groups[g].dispatched = self.groups[g].dispatched.saturating_sub(1);
        self.rq_in_flight[sync as usize] = self.rq_in_flight[sync as usize].saturating_sub(1);
        if info.sync {
            self.queues[qi].ttime.last_end = now;
            let st = self.tree_of(qi);
            self.trees[st].ttime.last_end = now;
            if info.start + self.fifo_expire[1] <= now {
                self.last_delayed_sync = now as i64;
            }
        }
        self.groups[g].ttime.last_end = now;

        if self.active == Some(qi) {
            let empty = self.queues[qi].sort.is_empty();
            if self.queues[qi].slice_new {
                self.set_prio_slice(qi, now);
                self.queues[qi].slice_new = false;
            }
            if self.should_wait_busy(qi, now) {
                let extend = if self.slice_idle > 0 { self.slice_idle } else { self.group_idle };
                let q = &mut self.queues[qi];
                q.slice_end = now + extend;
                q.wait_busy = true;
            }
            if self.slice_used(qi, now) || Self::wl_class(&self.queues[qi]) == IDLE {
                self.slice_expired(true, now);
            } else if info.sync && empty {
                self.arm_slice_timer(now);
            }
        }
    }

    fn boost(&mut self, id: ReqId, _reqs: &ReqSlab) -> bool {
        self.boost_queued(id)
    }

    fn queued(&self) -> usize {
        self.rq_queued + self.flushes.len()
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use proptest::prelude::*;

    use super::*;
    use crate::block::deadline::testkit::*;
    use crate::block::{Request, SchedulerConfig};

    type Arrivals = Vec<(SimTime, Request)>;

    fn rot() -> CfqParams {
        CfqParams { rotational: true, ..Default::default() }
    }

    fn in_group(mut r: Request, g: u16) -> Request {
        r.prov.blkio_group = g;
        r
    }
    fn with_prio(mut r: Request, class: u8, level: u8) -> Request {
        r.ioprio_class = class;
        r.ioprio_level = level;
        r
    }

    fn add(s: &mut Cfq, slab: &mut ReqSlab, r: Request, now: SimTime) -> ReqId {
        let mut r = r;
        r.times.submitted = now;
        let id = slab.insert(r);
        s.add(id, slab, now);
        id
    }

    fn tag_of(slab: &ReqSlab, d: Dispatch) -> Option<u64> {
        match d {
            Dispatch::Request(id) => Some(slab.get(id).tag),
            _ => None,
        }
    }

    /// Each `(pid, group, class)` keeps `depth` sequential sync reads outstanding, re-issuing on
    /// completion until `stop`. Returns the initial arrivals and the closed-loop source.
    fn closed_readers(
        procs: &[(u32, u16, u8)],
        depth: u64,
        stop: SimTime,
    ) -> (Arrivals, impl FnMut(&Done, SimTime) -> Vec<Request>) {
        let next_tag = Cell::new(0u64);
        let mut pos: BTreeMap<u32, u64> = BTreeMap::new();
        let make = move |pid: u32, g: u16, class: u8, pos: &mut BTreeMap<u32, u64>| {
            let p = pos.entry(pid).or_insert(u64::from(pid) * 10_000_000);
            *p += 8;
            let t = next_tag.get();
            next_tag.set(t + 1);
            with_prio(in_group(read(*p, pid, t), g), class, 4)
        };
        let mut initial = Vec::new();
        for &(pid, g, class) in procs {
            for _ in 0..depth {
                initial.push((SimTime::ZERO, make(pid, g, class, &mut pos)));
            }
        }
        let procs = procs.to_vec();
        let source = move |d: &Done, now: SimTime| {
            if now >= stop || !d.sync {
                return Vec::new();
            }
            match procs.iter().find(|p| p.0 == d.pid) {
                Some(&(pid, g, class)) => vec![make(pid, g, class, &mut pos)],
                None => Vec::new(),
            }
        };
        (initial, source)
    }

    #[test]
    fn defaults_are_the_kernels() {
        let p = CfqParams::default();
        assert_eq!((p.quantum, p.fifo_expire_sync, p.fifo_expire_async), (8, 125, 250));
        assert_eq!((p.slice_sync, p.slice_async, p.slice_async_rq), (100, 40, 2));
        assert_eq!((p.slice_idle, p.group_idle, p.target_latency), (8, 8, 300));
        assert!(p.low_latency && !p.rotational);
        let s = Cfq::new(p, &[]);
        // cfq_prio_slice: 100 ms ± 20 ms per level from 4.
        assert_eq!(s.prio_slice(true, 0), 180 * MS);
        assert_eq!(s.prio_slice(true, 4), 100 * MS);
        assert_eq!(s.prio_slice(true, 7), 40 * MS);
        assert_eq!(s.prio_slice(false, 4), 40 * MS);
    }

    #[test]
    fn sync_preempts_async_and_async_waits_for_sync() {
        let mut s = Cfq::new(CfqParams::default(), &[1000]);
        let mut slab = ReqSlab::default();
        for i in 0..20 {
            add(&mut s, &mut slab, write(i * 8, 0, 100 + i), ms(0));
        }
        let w = s.dispatch(&slab, 0, ms(0));
        assert_eq!(tag_of(&slab, w), Some(100));
        // A sync read arrives while the async queue is active: it preempts, but first the
        // async write on the device drains ("Drain async requests before we start sync IO").
        add(&mut s, &mut slab, read(1_000_000, 1, 1), ms(1));
        assert_eq!(s.dispatch(&slab, 1, ms(1)), Dispatch::Empty);
        let Dispatch::Request(w) = w else { unreachable!() };
        s.completed(w, &slab, SimTime::from_us(1500));
        let d = s.dispatch(&slab, 0, SimTime::from_us(1500));
        assert_eq!(tag_of(&slab, d), Some(1));
        // While the sync read is on the device, no async request goes.
        assert!(tag_of(&slab, s.dispatch(&slab, 1, ms(1))).is_none());
        let Dispatch::Request(sync_id) = d else { unreachable!() };
        s.completed(sync_id, &slab, ms(2));
        assert_eq!(s.queued(), 19);
        // Sync done, nothing to idle for on a queueing-unknown flash device: async resumes.
        let t = tag_of(&slab, s.dispatch(&slab, 0, ms(2)));
        assert!(t.is_some_and(|t| t >= 100), "got {t:?}");
    }

    #[test]
    fn idling_waits_for_the_next_request_and_ends_on_arrival() {
        for arrive in [true, false] {
            let mut s = Cfq::new(rot(), &[1000]);
            let mut slab = ReqSlab::default();
            let r1 = add(&mut s, &mut slab, read(0, 1, 1), ms(0));
            add(&mut s, &mut slab, write(5_000_000, 0, 100), ms(0));
            assert_eq!(s.dispatch(&slab, 0, ms(0)), Dispatch::Request(r1));
            // The reader's request is on the device: CFQ waits for it rather than serving async.
            assert_eq!(s.dispatch(&slab, 1, ms(0)), Dispatch::Empty);
            s.completed(r1, &slab, ms(1));
            assert_eq!(s.dispatch(&slab, 0, ms(1)), Dispatch::WaitUntil(ms(9)));
            assert_eq!(s.dispatch(&slab, 0, SimTime::from_us(8_999)), Dispatch::WaitUntil(ms(9)));
            if arrive {
                let r2 = add(&mut s, &mut slab, read(8, 1, 2), ms(5));
                assert_eq!(s.dispatch(&slab, 0, ms(5)), Dispatch::Request(r2));
            } else {
                // The timer fires: the reader's slice ends and the write goes.
                assert_eq!(tag_of(&slab, s.dispatch(&slab, 0, ms(9))), Some(100));
            }
        }
    }

    /// Two sync readers always busy: each gets its whole 100 ms slice in turn.
    #[test]
    fn sync_queues_take_turns_with_full_slices() {
        let mut s = Cfq::new(rot(), &[1000]);
        let (initial, mut src) = closed_readers(&[(1, 0, 2), (2, 0, 2)], 2, ms(2000));
        let done = run(&mut s, initial, 1, &|_| MS, Some(&mut src), ms(2000));
        let mut runs: Vec<(u32, SimTime, SimTime, usize)> = Vec::new();
        for d in &done {
            match runs.last_mut() {
                Some(r) if r.0 == d.pid => {
                    r.2 = d.completed;
                    r.3 += 1;
                }
                _ => runs.push((d.pid, d.dispatched, d.completed, 1)),
            }
        }
        assert!((17..=22).contains(&runs.len()), "{} runs: {runs:?}", runs.len());
        for r in &runs[1..runs.len() - 1] {
            let len = r.2.since(r.1);
            assert!((95 * MS..=110 * MS).contains(&len), "run {r:?} lasted {len} ns");
        }
        let n1 = done.iter().filter(|d| d.pid == 1).count() as f64;
        let n2 = done.iter().filter(|d| d.pid == 2).count() as f64;
        assert!((n1 / n2 - 1.0).abs() < 0.1, "{n1} vs {n2}");
    }

    #[test]
    fn fifo_expiry_serves_a_bypassed_request() {
        const FAR: u64 = 1 << 40;
        for expire in [125u64, 10_000] {
            let mut s = Cfq::new(CfqParams { fifo_expire_sync: expire, ..rot() }, &[1000]);
            let (mut initial, mut src) = closed_readers(&[(1, 0, 2)], 4, ms(1000));
            // A far request of the same process: the sector sweep keeps passing it by.
            initial.push((SimTime::ZERO, read(900_000_000, 1, FAR)));
            let done = run(&mut s, initial, 1, &|_| MS, Some(&mut src), ms(1000));
            let far = done.iter().find(|d| d.tag == FAR).map(|d| d.dispatched);
            if expire == 125 {
                // The FIFO is checked once per slice: at the first slice start after 125 ms.
                let t = far.expect("far request served");
                assert!(t >= ms(125) && t <= ms(240), "far request dispatched at {t}");
            } else {
                assert!(far.is_none_or(|t| t >= ms(1000)), "{far:?}");
            }
        }
    }

    /// A saturating sync reader and a saturating async writer: sync gets most of the device,
    /// async is not starved.
    #[test]
    fn async_starvation_is_bounded() {
        let mut s = Cfq::new(CfqParams::default(), &[1000]);
        let (mut initial, mut reader) = closed_readers(&[(1, 0, 2)], 4, ms(5000));
        let mut wtag = 1_000_000u64;
        for i in 0..64 {
            initial.push((SimTime::ZERO, write(500_000_000 + i * 8, 0, wtag)));
            wtag += 1;
        }
        let mut src = |d: &Done, now: SimTime| {
            let mut v = reader(d, now);
            if !d.sync && now < ms(5000) {
                v.push(write(500_000_000 + wtag * 8, 0, wtag));
                wtag += 1;
            }
            v
        };
        let done = run(&mut s, initial, 1, &|_| MS, Some(&mut src), ms(5000));
        let sync = done.iter().filter(|d| d.sync).count() as f64;
        let asyn = done.iter().filter(|d| !d.sync).count() as f64;
        let share = asyn / (sync + asyn);
        assert!(share > 0.05 && share < 0.3, "async share {share}");
        let first_async = done.iter().find(|d| !d.sync).map(|d| d.completed).unwrap();
        assert!(first_async < ms(400), "first async completion at {first_async}");
        // No async request waited longer than a few target latencies.
        let worst = done.iter().filter(|d| !d.sync).map(|d| d.dispatched.since(d.submitted)).max().unwrap();
        assert!(worst < 1000 * MS, "worst async wait {worst} ns");
    }

    fn group_time(weights: &[u32]) -> (f64, f64) {
        let mut s = Cfq::new(CfqParams::default(), weights);
        let (initial, mut src) = closed_readers(&[(1, 0, 2), (2, 1, 2)], 4, ms(20_000));
        let done = run(&mut s, initial, 1, &|_| MS, Some(&mut src), ms(20_000));
        let t = |g: u16| done.iter().filter(|d| d.group == g).map(|d| d.completed.since(d.started)).sum::<u64>() as f64;
        (t(0), t(1))
    }

    #[test]
    fn group_weights_share_device_time() {
        let (a, b) = group_time(&[1000, 200]);
        assert!((4.0..=6.0).contains(&(a / b)), "1000 vs 200: {a} / {b} = {}", a / b);
        let (a, b) = group_time(&[1000, 1000]);
        assert!((0.85..=1.15).contains(&(a / b)), "equal weights: {}", a / b);
    }

    #[test]
    fn unknown_group_is_root() {
        let mut s = Cfq::new(CfqParams::default(), &[1000, 200]);
        let mut slab = ReqSlab::default();
        add(&mut s, &mut slab, in_group(read(0, 7, 1), 9), ms(0));
        let qi = s.qmap[&QKey::Sync { pid: 7, group: 0 }];
        assert_eq!(s.queues[qi].group, 0);
    }

    #[test]
    fn idle_class_only_served_when_nothing_else() {
        let mut s = Cfq::new(rot(), &[1000]);
        let (mut initial, mut src) = closed_readers(&[(1, 0, 2)], 2, ms(500));
        for i in 0..20 {
            initial.push((SimTime::ZERO, with_prio(read(700_000_000 + i * 8, 2, 5000 + i), 3, 7)));
        }
        let done = run(&mut s, initial, 1, &|_| MS, Some(&mut src), SimTime::MAX);
        let idle: Vec<&Done> = done.iter().filter(|d| d.pid == 2).collect();
        assert_eq!(idle.len(), 20);
        for i in &idle {
            let blocking = done.iter().filter(|d| d.pid == 1 && d.submitted <= i.dispatched && d.dispatched > i.dispatched);
            assert_eq!(blocking.count(), 0, "idle request dispatched at {} while BE waited", i.dispatched);
        }
        assert!(idle[0].dispatched >= ms(500));
    }

    #[test]
    fn boost_moves_an_async_request_ahead() {
        for boost in [None, Some("other queue"), Some("same queue")] {
            let mut s = Cfq::new(CfqParams::default(), &[1000]);
            let mut slab = ReqSlab::default();
            let q1: Vec<ReqId> = (0..10).map(|i| add(&mut s, &mut slab, write(i * 8, 0, i), ms(0))).collect();
            let q2: Vec<ReqId> =
                (0..10).map(|i| add(&mut s, &mut slab, with_prio(write(1_000_000 + i * 8, 5, 100 + i), 2, 6), ms(0))).collect();
            let first = match boost {
                None => 0,
                Some("other queue") => {
                    slab.get_mut(q2[9]).boosted = true;
                    assert!(s.boost(q2[9], &slab));
                    109
                }
                Some(_) => {
                    slab.get_mut(q1[9]).boosted = true;
                    assert!(s.boost(q1[9], &slab));
                    assert!(!s.boost(q1[9], &slab), "boosting twice changes nothing");
                    9
                }
            };
            assert_eq!(tag_of(&slab, s.dispatch(&slab, 0, ms(1))), Some(first), "{boost:?}");
        }
    }

    #[test]
    fn a_boosted_request_in_another_group_goes_before_the_active_async_queue() {
        // Group 0's async queue is active and mid-slice; a request boosted in group 1's async
        // queue must still be the next async request dispatched (QASIO's rule).
        let mut s = Cfq::new(CfqParams::default(), &[1000, 200]);
        let mut slab = ReqSlab::default();
        for i in 0..10 {
            add(&mut s, &mut slab, write(i * 8, 0, i), ms(0));
        }
        let other: Vec<ReqId> =
            (0..4).map(|i| add(&mut s, &mut slab, in_group(write(5_000_000 + i * 8, 9, 100 + i), 1), ms(0))).collect();
        assert_eq!(tag_of(&slab, s.dispatch(&slab, 0, ms(1))), Some(0));
        slab.get_mut(other[3]).boosted = true;
        s.boost(other[3], &slab);
        assert_eq!(tag_of(&slab, s.dispatch(&slab, 1, ms(2))), Some(103));
    }

    #[test]
    fn remove_merged_and_flush() {
        let mut s = Cfq::new(CfqParams::default(), &[1000]);
        let mut slab = ReqSlab::default();
        let a = add(&mut s, &mut slab, read(0, 1, 0), ms(0));
        let b = add(&mut s, &mut slab, read(8, 1, 1), ms(0));
        add(&mut s, &mut slab, req(ReqOp::Flush, 0, 0, true, 1, 2), ms(0));
        assert_eq!(s.queued(), 3);
        s.remove_merged(b, &slab);
        s.remove_merged(b, &slab);
        assert_eq!(s.queued(), 2);
        assert_eq!(tag_of(&slab, s.dispatch(&slab, 0, ms(0))), Some(2));
        assert_eq!(s.dispatch(&slab, 1, ms(0)), Dispatch::Request(a));
        assert_eq!(s.queued(), 0);
        // Completions of requests the scheduler does not know (e.g. from the dispatch queue).
        s.completed(b, &slab, ms(1));
        s.completed(12345, &slab, ms(1));
        assert!(!s.boost(12345, &slab));
    }

    #[test]
    fn queueing_flash_device_stops_idling() {
        let run_depth = |depth: usize| {
            let mut s = Cfq::new(CfqParams::default(), &[1000]);
            let procs: Vec<(u32, u16, u8)> = (1..=4).map(|p| (p, 0, 2)).collect();
            let (initial, mut src) = closed_readers(&procs, 8, ms(2000));
            run(&mut s, initial, depth, &|_| MS, Some(&mut src), ms(2000));
            s.hw_tag()
        };
        assert_eq!(run_depth(1), 0);
        assert_eq!(run_depth(32), 1);
    }

    #[derive(Clone, Debug)]
    struct Arrival {
        at_us: u64,
        op: u8,
        sync: bool,
        pid: u32,
        group: u16,
        class: u8,
        level: u8,
        meta: bool,
        sector: u64,
        sectors: u32,
        boost: bool,
        merge_away: bool,
    }

    fn arrival() -> impl Strategy<Value = Arrival> {
        (
            (0u64..300_000, 0u8..10, any::<bool>(), 0u32..5, 0u16..4),
            (0u8..4, 0u8..9, any::<bool>(), 0u64..100_000, 1u32..256, 0u8..10, 0u8..20),
        )
            .prop_map(|((at_us, op, sync, pid, group), (class, level, meta, sector, sectors, boost, merge))| Arrival {
                at_us,
                op,
                sync,
                pid,
                group,
                class,
                level,
                meta,
                sector: sector * 8,
                sectors,
                boost: boost == 0,
                merge_away: merge == 0,
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(96))]
        /// Every request added is dispatched exactly once (or merged away), `queued()` stays
        /// exact and the run terminates, for every scheduler, on devices of depth 1..32.
        #[test]
        fn every_request_dispatched_once(
            arrivals in proptest::collection::vec(arrival(), 1..150),
            depth in 1usize..=32,
            service_us in 20u64..5000,
        ) {
            let mut configs = SchedulerConfig::all();
            configs.push(SchedulerConfig::Cfq(rot()));
            configs.push(SchedulerConfig::Cfq(CfqParams { slice_idle: 0, group_idle: 0, ..Default::default() }));
            configs.push(SchedulerConfig::Cfq(CfqParams { low_latency: false, quantum: 1, ..rot() }));
            for cfg in &configs {
                let mut sched = cfg.build(&[1000, 200, 500]);
                let mut expected = 0;
                let reqs: Vec<(SimTime, Request)> = arrivals
                    .iter()
                    .enumerate()
                    .map(|(i, a)| {
                        let op = match a.op {
                            0..=4 => ReqOp::Read,
                            5..=7 => ReqOp::Write,
                            8 => ReqOp::Discard,
                            _ => ReqOp::Flush,
                        };
                        let mut r = req(op, a.sector, a.sectors, a.sync || op == ReqOp::Read, a.pid, i as u64);
                        r.prov.blkio_group = a.group;
                        r.ioprio_class = a.class;
                        r.ioprio_level = a.level;
                        r.meta = a.meta;
                        r.boosted = a.boost;
                        if a.merge_away {
                            r.merged = MERGE_AWAY;
                        } else {
                            expected += 1;
                        }
                        (SimTime::from_us(a.at_us), r)
                    })
                    .collect();
                let service = move |r: &Request| service_us * 1000 + u64::from(r.sectors) * 100;
                let done = run(sched.as_mut(), reqs, depth, &service, None, SimTime::MAX);
                prop_assert_eq!(done.len(), expected, "{}", cfg.name());
                prop_assert_eq!(sched.queued(), 0);
            }
        }
    }
}
