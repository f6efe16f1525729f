//! BFQ: the Budget Fair Queueing scheduler of Linux 5.x/6.x (`block/bfq-iosched.c`,
//! `block/bfq-wf2q.c`, `block/bfq-cgroup.c`; `Documentation/block/bfq-iosched.rst`), the
//! scheduler the agent drives on a desktop (`forefront agent`, `bench`).
//!
//! # Structure
//!
//! - **bfq queues.** Each process has a *sync* queue per group (key: `prov.pid` and group);
//!   *async* requests share one queue per group and ioprio (RT level 0..7, BE level 0..7, one
//!   IDLE), as `bfq_async_queue_prio` keeps them in each `bfq_group`. A queue keeps its requests
//!   sorted by sector (`bfq_choose_req`: the one-way elevator with short back seeks at twice the
//!   cost) and in a FIFO with a deadline (`fifo_expire_sync` 125 ms / `_async` 250 ms) that is
//!   looked at once per budget (`bfq_check_fifo`).
//! - **Weights.** A queue's weight is `(8 − level) × 10` of its ioprio (`bfq_ioprio_to_weight`:
//!   BE level 4, a nice-0 task's, is 40; the IDLE class is level 7, 10), times its
//!   weight-raising coefficient. A group's weight is its `io.bfq.weight` (`blkio.bfq.weight`
//!   on cgroup v1): the scenario's blkio weight of the request's group, or the per-task weight a
//!   policy set on the request ([`super::Request::io_weight`]), which puts the task in a group of
//!   that weight (tasks with the same group and weight share it, as tasks in one cgroup do).
//! - **B-WF2Q+** (`bfq-wf2q.c`). Groups are flat children of the root group (the root group's
//!   own queues sit beside them, as in the kernel). In each group, per class (RT, BE, IDLE),
//!   active entities carry virtual start and finish times: a newly active entity starts at the
//!   tree's virtual time `V` (or at its old finish if that is later: the kernel's idle tree), a
//!   requeued one at its old finish; `F = S + budget / weight`. Serving `s` sectors advances `V`
//!   by `s / Σ weights`; the next entity is the eligible one (`S ≤ V`) with the smallest `F`,
//!   `V` jumping to the smallest `S` when none is eligible. Classes are strict (RT before BE
//!   before IDLE), except that every `BFQ_CL_IDLE_TIMEOUT` (200 ms) the IDLE class, if active,
//!   is chosen once (`bfq_lookup_next_entity`). When a queue expires its entity (and its
//!   group's) is charged the service it received: `F = S + service / weight`.
//! - **Budgets** (`__bfq_bfqq_recalc_budget`). A queue in service dispatches until its budget
//!   (sectors; async ones are charged 3× per sector, `bfq_async_charge_factor`, unless
//!   weight-raised or the scenario is asymmetric) is used up (`BUDGET_EXHAUSTED`: the next
//!   budget ×4), its budget timeout passes (`timeout_sync` 125 ms × the weight-raising factor:
//!   ×2), it runs dry (`NO_MORE_REQUESTS`: the next budget is what it used), or its idle wait ends
//!   (`TOO_IDLE`: −4 minimum budgets) — all capped at `max_budget` (16384 sectors,
//!   `bfq_default_max_budget`), starting at 2/3 of it; async queues always get `max_budget`. A
//!   sync queue that is *slow* (seeky, or under half the maximum budget in more than 20 ms) or
//!   timed out with a third of its budget left is charged for the time it held the device
//!   instead (`bfq_bfqq_charge_time`: `max_budget × elapsed / timeout`), so that weights share
//!   time rather than sectors for random I/O.
//! - **Idling** (`bfq_better_to_idle`). When the in-service sync queue runs dry, BFQ keeps the
//!   device for it for `slice_idle` (8 ms; ≥ 20 ms while weight-raised, ≤ 2 ms when it is seeky
//!   and the scenario is symmetric) if idling boosts throughput (a rotational device without
//!   command queueing, or a sequential, I/O-bound queue with short think time on a device that
//!   does not queue) and no queue is weight-raised, or if idling is needed for service
//!   guarantees: the queue is weight-raised while others are not, or the scenario is
//!   *asymmetric* — busy queues of different weights (unless this one has the smallest), of
//!   more than one class, or more than one group with requests pending
//!   (`idling_needed_for_service_guarantees`, `bfq_asymmetric_scenario`), or (Linux 5.12+,
//!   `plug_only_busy`) the queue is the only busy one: then a queue that becomes busy while
//!   its requests are in flight or it waits gets nothing dispatched unless it preempts (higher
//!   weight or class), so it cannot fill the device ahead of the in-service queue's next
//!   request. An IDLE-class queue
//!   never idles and is expired after each request while others are busy. Think time is
//!   tracked as CFQ's (the queue keeps its idle window while the mean is under `slice_idle / 2`).
//!   `hw_tag` (whether the device queues commands) is estimated as the kernel does: more than 3
//!   requests in the driver over 32 samples.
//! - **Preemption** (`bfq_bfqq_handle_idle_busy_switch`): a queue that becomes busy expires the
//!   in-service one if it is of a higher class or weight (`bfq_bfqq_higher_class_or_weight`:
//!   the queues' weights, raising included, when both are in one group; their groups' weights
//!   otherwise), or if it has budget left from a wait that did not stop it
//!   (`non_blocking_wait_rq`, arrived within 3 × `slice_idle`) and is as raised, or if the
//!   in-service queue would not idle anyway. So a new process's queue, raised as interactive
//!   (below), preempts a default-weight queue of its group that is in service.
//! - **`low_latency`** (weight raising, `bfq_update_bfqq_wr_on_rq_arrival`). A sync queue of the
//!   default weight (40) that becomes busy after being idle for at least `wr_min_idle_time` (2 s;
//!   a new queue always is) and is not part of a *large burst* (8 or more queues created within
//!   180 ms of each other, `bfq_handle_burst`: a batch of processes started together, whose
//!   interactivity BFQ does not believe) is *interactive*: its weight is multiplied by
//!   `wr_coeff` (30) for the weight-raising duration (`bfq_wr_duration`: the reference rate × the
//!   reference duration over the peak rate; with the kernel's initial peak-rate estimate, 2/3 of
//!   the reference, 1.5 × `ref_wr_duration`: 2.5 s × 1.5 = 3.75 s non-rotational, 7 s × 1.5 =
//!   10.5 s rotational), its budget capped at two minimum
//!   budgets, and raising ends earlier after 120000 sectors served while raised
//!   (`max_service_from_wr`). A busy queue receiving an async request more than 500 ms after its
//!   last raising start or finish is raised too (`bfq_wr_min_inter_arr_async`). A raised queue is
//!   not counted in the weights tree (`bfq_add_bfqq_busy`), so raising alone does not make the
//!   scenario asymmetric.
//! - **Processes.** A sync queue is a process's (`prov.pid`): a thread that runs a scenario's
//!   `exec` op goes on with a new pid, hence a new queue, which is interactive at its first
//!   request (never served: idle "for long"), as the kernel's queue of a new process's I/O
//!   context is.
//! - **Queue merging** (`bfq_setup_cooperator`, `bfq_do_or_sched_stable_merge`,
//!   `bfq_merge_bfqqs`, `bfq_split_bfqq`). A process's sync queue may be merged with another:
//!   its requests (and those of every process sharing it) are redirected to the other queue,
//!   which inherits its weight raising and I/O-boundness. A *stable merge* pairs a queue
//!   created within `bfq_burst_interval` (180 ms) of the group's last created queue (same class
//!   and level; one created more than `bfq_activation_stable_merging`, 600 ms, after it becomes
//!   the last created): at once on a non-rotational device with command queueing, otherwise at
//!   the queue's first request 600 ms (`bfq_late_stable_merging`) after its creation, unless
//!   idling for it boosts throughput; stably merged processes are never split. A
//!   *close-cooperator merge* (not on a non-rotational device with queueing, nor with a single
//!   busy queue) redirects the arriving request's queue to the in-service queue when the request
//!   lands within `BFQQ_CLOSE_THR` (8192 sectors) of the end of that queue's last dispatched
//!   request (`in_serv_last_pos`), or to a queue whose next request is that close; neither
//!   queue may be idle-class, seeky, async, of another class or group, or *too late*: busy and
//!   served for more than `bfq_merge_time_limit` (100 ms) since its busy period's first service
//!   (`service_from_backlogged` and `first_IO_time`, reset when the queue becomes busy, so the
//!   first request of a new busy period still sees the last period's). A merge is a scheduled
//!   redirection (`new_bfqq`, with the process references it will bring) done at each
//!   process's next request. A shared queue found seeky when it expires is split at the next
//!   request of each process not stably merged: the last process keeps it, the others get new
//!   queues that resume the raising and think time their own queues had when merged, and get
//!   no new raising for `wr_min_idle_time` (`split_time`).
//! - **I/O-bound** (`IO_bound`): a queue becomes I/O-bound when 120 of its idle-to-busy
//!   switches in a row come within 3 × `slice_idle` of its last completion
//!   (`bfq_requests_within_timer`), and stops being one when it expires too idle having used
//!   under 20 % of its budget. Only an I/O-bound, sequential queue with short think times makes
//!   idling boost throughput on a device that queues commands (`idling_boosts_thr_without_issues`).
//! - **`rotational`** (`blk_queue_nonrot`, from the scenario or the device file through
//!   [`super::SchedulerConfig::for_device`]): idling boosts throughput for a sequential,
//!   I/O-bound queue even on a device that queues commands, any seek over 800 sectors is seeky
//!   whatever the request's size, a budget shorter than 1 ms counts as `slice_idle` rather than
//!   `BFQ_MIN_TT` (`bfq_bfqq_is_slow`), and the initial weight-raising duration is 10.5 s.
//!
//! # Simplifications versus the kernel
//!
//! - Exact nanosecond times instead of jiffies (HZ = 1000 where a jiffy matters).
//! - No peak-rate estimation (`bfq_update_peak_rate`): the maximum budget stays at
//!   `max_budget` (the kernel's default until 194 budgets are assigned and its rate estimate is
//!   valid, then `peak_rate × timeout`), and the weight-raising duration at its initial value
//!   (`wr_duration_ms`: 3750 ms for a non-rotational device, 10500 ms for a rotational one; the
//!   kernel's falls to its 3000 ms floor once it has measured a disk faster than ~260 MB/s);
//!   both are tunables here. `forefront bench` selects BFQ anew for each of its samples (when the
//!   disk's scheduler is not BFQ already), so the initial values are the ones its launches meet;
//!   an instance kept across samples measured 12× slower launches (docs/twin.md, twin10).
//! - No soft real-time weight raising (`bfq_wr_max_softrt_rate`): it needs the rate at which a
//!   queue issues I/O after idling, which the phone workloads here never show (they are either
//!   interactive start-ups or I/O-bound).
//! - No I/O injection (`bfq_choose_bfqq_for_injection`, waker/woken detection): while BFQ idles
//!   for the in-service queue the device gets nothing else. This under-serves background I/O
//!   during idling on a device that queues commands.
//! - Queue merging (above) is checked when a request is inserted, not also when a bio could
//!   merge into a queued request (`bfq_allow_bio_merge`); the position tree is searched for the
//!   queue whose next request is nearest below or above the sector (the kernel looks at the
//!   tree node where the sector would go, then its neighbour); no waker or injection state is
//!   carried over (injection is not modelled); the out-of-memory queue does not exist. A queue
//!   is created at its process's first request (below), so stable merges pair queues by their
//!   processes' first requests rather than their starts, and a process that ends keeps its
//!   references (a queue never loses its last process but to a merge or a split). No
//!   multi-actuator. What merging does to the bench on the VM of docs/twin.md: every launch is
//!   merged at its creation and slow with the disk flagged non-rotational (twin19), and under
//!   `update` on the rotational-flagged disk 10 of 15 launches are merged as close cooperators
//!   when a worker's synchronous inode write meets the launch's inode-table read (twin21,
//!   `scripts/bfq-merges`); the model merges the workers' queues stably but its launches win
//!   that race by microseconds (twin22).
//! - A sync queue belongs to a process id (`prov.pid`: an app's index, or a new one after an
//!   `exec` op); the kernel's belongs to a process's I/O context. A queue whose process has
//!   gone (`exec` left it) stays idle here; the kernel frees it, and stops idling for a queue
//!   with no process left (`bfqq_process_refs`), which this model still does for up to
//!   `slice_idle` (20 ms raised) after the old process's last request.
//! - A new process's queue is created at its first request; the kernel's at the first I/O of
//!   the process (a bench operation's process reads its executable ~1.5 s before the operation,
//!   and its raising, 10.5 s here, outlasts that).
//! - No request-allocation limits per queue and class (`bfq_limit_depth`): the block queue's
//!   `nr_requests` is the only bound on async requests.
//! - Groups are flat (one level under the root, as Android's and the agent's are); a group's
//!   budget for its WF2Q+ finish time is the budget of the queue it would serve next.
//! - `next_queue_may_preempt` is taken as true when the new queue's root-level entity is not
//!   the in-service one.
//! - A queue's ioprio is fixed when it is created (the kernel re-reads the task's ioprio on each
//!   request, `bfq_check_ioprio_change`). Class 0 (`NONE`) is best effort level 4.
//! - `ReqOp::Flush` requests bypass the queues and are dispatched first, in order (the kernel's
//!   flush machinery), and the QASIO `boost` hint is not supported (BFQ has none).
//!
//! # Invariants
//!
//! - Every request given to `add` is dispatched once or removed by `remove_merged`; `queued()`
//!   counts the requests held.
//! - A queue is *busy* while it has requests queued, while it is in service, and after it was
//!   preempted empty while idling was needed for it (`__bfq_bfqq_expire`) until it next
//!   expires; a busy
//!   queue's entity is on its group's tree or in service; a group's entity is active while one
//!   of its queues is busy.
//! - `Σ weights` of a tree counts every active or in-service entity of it once.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use forefront_engine::SimTime;
use serde::{Deserialize, Serialize};

use super::{Dispatch, IoScheduler, ReqId, ReqOp, ReqSlab};

/// BFQ tunables, named as in `/sys/block/<dev>/queue/iosched/` (times in ms as there).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BfqParams {
    /// FIFO deadline of sync requests, ms (kernel 125 = NSEC_PER_SEC/8, `bfq_fifo_expire[1]`).
    pub fifo_expire_sync: u64,
    /// FIFO deadline of async requests, ms (kernel 250 = NSEC_PER_SEC/4, `bfq_fifo_expire[0]`).
    pub fifo_expire_async: u64,
    /// Longest backward seek, KiB (kernel 16384, `bfq_back_max`).
    pub back_seek_max: u64,
    /// Cost factor of a backward seek (kernel 2, `bfq_back_penalty`).
    pub back_seek_penalty: u64,
    /// Idle wait for the in-service sync queue's next request, ms; 0 disables idling (kernel
    /// 8 = NSEC_PER_SEC/125, `bfq_slice_idle`).
    pub slice_idle: u64,
    /// Budget timeout, ms (kernel 125 = HZ/8, `bfq_timeout`; sysfs `timeout_sync`).
    pub timeout_sync: u64,
    /// Maximum budget, sectors; 0 means the kernel's default 16384 (`bfq_default_max_budget`;
    /// the kernel would later tune it from its peak-rate estimate, which this model does not
    /// make).
    pub max_budget: u64,
    /// Weight raising for interactive queues (kernel default on, `low_latency`).
    pub low_latency: bool,
    /// Weight-raising factor (kernel 30, `bfq_wr_coeff`).
    pub wr_coeff: u32,
    /// Weight-raising duration of an interactive queue, ms; 0 (the default) is the kernel's
    /// `bfq_wr_duration` with its initial peak-rate estimate (`bfq_init_queue`: `peak_rate` =
    /// 2/3 `ref_rate`, `rate_dur_prod` = `ref_rate` × `ref_wr_duration`), i.e. 1.5 ×
    /// `ref_wr_duration` of the device's kind clamped to 3000..25000 ms: 2500 ms × 1.5 = 3750 ms
    /// non-rotational, 7000 ms × 1.5 = 10500 ms rotational ([`initial_wr_duration_ms`]).
    pub wr_duration_ms: u64,
    /// Idle time after which a queue that becomes busy again is interactive, ms (kernel 2000,
    /// `bfq_wr_min_idle_time`).
    pub wr_min_idle_time_ms: u64,
    /// Whether the device is rotational (`queue/rotational`, the kernel's `blk_queue_nonrot`):
    /// default false, the phones' flash; a device file's `rotational = true` (a calibrated disk
    /// that says so, like this VM's virtio disk) sets it too ([`super::SchedulerConfig::for_device`]).
    pub rotational: bool,
    /// Keep plugging for the in-service sync queue when it is the only busy queue (Linux 5.12+,
    /// "block, bfq: do not expire a queue when it is the only busy one": `tot_busy_queues == 1`
    /// in `idling_needed_for_service_guarantees`). Not a sysfs tunable: the kernel version's
    /// behaviour (default true, the kernels since 5.12; false is 5.x before it).
    pub plug_only_busy: bool,
    /// Queue merging (`bfq_setup_cooperator`, `bfq_do_or_sched_stable_merge`): stable merges
    /// of queues created close together, close-cooperator merges of queues whose I/O lands
    /// close together, and the split of a merged queue that turns seeky. Not a sysfs tunable:
    /// the kernel always merges (default true); false is the model without it, to see what
    /// merging does.
    pub queue_merging: bool,
}

impl Default for BfqParams {
    fn default() -> Self {
        BfqParams {
            fifo_expire_sync: 125,
            fifo_expire_async: 250,
            back_seek_max: 16 * 1024,
            back_seek_penalty: 2,
            slice_idle: 8,
            timeout_sync: 125,
            max_budget: 0,
            low_latency: true,
            wr_coeff: 30,
            wr_duration_ms: 0,
            wr_min_idle_time_ms: 2000,
            rotational: false,
            plug_only_busy: true,
            queue_merging: true,
        }
    }
}

const MS: i64 = 1_000_000;
/// `bfq_default_max_budget`, sectors.
const DEFAULT_MAX_BUDGET: u64 = 16 * 1024;
/// `bfq_async_charge_factor`.
const ASYNC_CHARGE_FACTOR: u64 = 3;
/// `BFQ_MIN_TT`, ns.
const MIN_TT: i64 = 2 * MS;
/// `BFQ_CL_IDLE_TIMEOUT` (HZ/5), ns.
const CL_IDLE_TIMEOUT: i64 = 200 * MS;
/// `BFQ_HW_QUEUE_THRESHOLD`, `BFQ_HW_QUEUE_SAMPLES`.
const HW_QUEUE_THRESHOLD: usize = 3;
const HW_QUEUE_SAMPLES: u32 = 32;
/// `BFQQ_SEEK_THR`, `BFQQ_SECT_THR_NONROT` (sectors).
const SEEK_THR: u64 = 8 * 100;
const SECT_THR_NONROT: u32 = 2 * 32;
/// `max_service_from_wr`, sectors.
const MAX_SERVICE_FROM_WR: u64 = 120_000;
/// `bfq_wr_min_inter_arr_async`, ns.
const WR_MIN_INTER_ARR_ASYNC: i64 = 500 * MS;
/// `bfq_large_burst_thresh`, `bfq_burst_interval` (ns).
const LARGE_BURST_THRESH: usize = 8;
const BURST_INTERVAL: i64 = 180 * MS;
/// `BFQQ_CLOSE_THR`, sectors: requests this close are "close" for queue merging.
const CLOSE_THR: u64 = 8 * 1024;
/// `bfq_merge_time_limit` (HZ/10), ns: a queue busy and served for longer is too late to merge.
const MERGE_TIME_LIMIT: i64 = 100 * MS;
/// `bfq_activation_stable_merging`, `bfq_late_stable_merging` (600 ms each), ns.
const ACTIVATION_STABLE_MERGING: i64 = 600 * MS;
const LATE_STABLE_MERGING: i64 = 600 * MS;
/// `bfq_requests_within_timer`: requests arriving within the idle window that make a queue
/// I/O-bound.
const REQUESTS_WITHIN_TIMER: u32 = 120;
/// `WFQ_SERVICE_SHIFT`: virtual times are service << 22 / weight.
const SERVICE_SHIFT: u32 = 22;
/// `BFQ_WEIGHT_CONVERSION_COEFF`, `IOPRIO_NR_LEVELS`.
const WEIGHT_COEFF: u32 = 10;
const NR_LEVELS: u8 = 8;
/// cgroup weight bounds (`BFQ_MIN_WEIGHT`, `BFQ_MAX_WEIGHT`).
const WEIGHT_MIN: u32 = 1;
const WEIGHT_MAX: u32 = 1000;
/// "Long ago" (`bfq_smallest_from_now`).
const LONG_AGO: i64 = i64::MIN / 4;

// Class indices (the kernel's `ioprio_class - 1`).
const RT: usize = 0;
const BE: usize = 1;
const IDLE: usize = 2;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expire {
    TooIdle,
    BudgetTimeout,
    BudgetExhausted,
    NoMoreRequests,
    Preempted,
}

/// `ref_wr_duration[]` of `bfq_init` (ms): rotational, non-rotational.
const REF_WR_DURATION_MS: [u64; 2] = [7000, 2500];

/// The weight-raising duration (ms) BFQ gives an interactive queue before it has a peak-rate
/// estimate of its own: `bfq_wr_duration` = `rate_dur_prod` / `peak_rate` with the initial
/// `peak_rate` = 2/3 `ref_rate`, so 1.5 × `ref_wr_duration`, clamped to 3000..25000 ms.
pub fn initial_wr_duration_ms(rotational: bool) -> u64 {
    (REF_WR_DURATION_MS[usize::from(!rotational)] * 3 / 2).clamp(3000, 25000)
}

/// `bfq_ioprio_to_weight`.
fn ioprio_weight(level: u8) -> u32 {
    u32::from(NR_LEVELS - level.min(NR_LEVELS - 1)) * WEIGHT_COEFF
}

fn delta(service: u64, weight: u64) -> u64 {
    (service << SERVICE_SHIFT) / weight.max(1)
}

/// Think-time estimate (`struct bfq_ttime`), ns.
#[derive(Clone, Copy, Default)]
struct TTime {
    last_end: i64,
    total: u64,
    samples: u64,
    mean: u64,
}

/// A schedulable entity (a queue or a group) with its B-WF2Q+ timestamps.
#[derive(Clone, Debug)]
struct Entity {
    /// The scheduling data (group index) whose trees it sits on.
    parent: usize,
    class: usize,
    /// Weight without raising (`orig_weight`) and with it (`weight`).
    orig_weight: u32,
    weight: u32,
    start: u64,
    finish: u64,
    budget: u64,
    service: u64,
    /// On its tree (waiting), or in service.
    active: bool,
    in_service: bool,
    /// Counted in its tree's `wsum`.
    counted: bool,
    /// What it is: a queue or a group.
    what: Ent,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Ent {
    Q(usize),
    G(usize),
}

#[derive(Default)]
struct Tree {
    vtime: u64,
    wsum: u64,
    /// Active entities waiting (not in service), by entity index.
    active: Vec<usize>,
}

/// A group's scheduling data (`bfq_sched_data`).
struct Sched {
    trees: [Tree; 3],
    in_service: Option<usize>,
    idle_last_service: i64,
}

struct Group {
    /// Its entity in the root's sched data (None for the root group itself).
    ent: Option<usize>,
    /// Queues of the group that are busy or have requests on the device (for
    /// `num_groups_with_pending_reqs`).
    pending: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum QKey {
    Sync { pid: u32, group: usize },
    Async { group: usize, class: u8, level: u8 },
}

struct Queue {
    ent: usize,
    group: usize,
    sync: bool,
    /// Class index (RT, BE, IDLE) and ioprio level.
    class: usize,
    level: u8,
    sort: BTreeSet<(u64, ReqId)>,
    /// FIFO: (insertion seq, request).
    fifo: BTreeSet<(u64, ReqId)>,
    next_rq: Option<ReqId>,
    queued: usize,
    dispatched: usize,
    busy: bool,
    max_budget: u64,
    budget_timeout: i64,
    wr_coeff: u32,
    wr_cur_max_time: i64,
    last_wr_start_finish: i64,
    service_from_wr: u64,
    has_short_ttime: bool,
    just_created: bool,
    in_large_burst: bool,
    in_burst_list: bool,
    non_blocking_wait_rq: bool,
    fifo_checked: bool,
    wait_request: bool,
    seek_history: u32,
    last_request_pos: u64,
    ttime: TTime,
    /// The weight it is counted with in `queue_weights` (busy or dispatched).
    weight_counted: Option<u32>,
    /// Counted in its group's `pending`.
    pending_counted: bool,
    /// `IO_bound`: 120 requests in a row arrived within the idle window.
    io_bound: bool,
    requests_within_timer: u32,
    // Queue merging.
    /// `creation_time`, `split_time`, and `first_IO_time` with `service_from_backlogged`:
    /// the first service of the current busy period and the service since.
    created: i64,
    split_time: i64,
    first_io: i64,
    from_backlogged: u64,
    /// Process references (`bfqq_process_refs`): processes whose I/O goes here, counting
    /// those a scheduled merge will redirect here.
    procs: u32,
    /// A scheduled merge: this queue's processes go to that one at their next request.
    new_q: Option<usize>,
    /// Shared by merged processes (`coop`), and to be split at a process's next request
    /// (`split_coop`: found seeky when it expired).
    coop: bool,
    split_coop: bool,
    /// The process (bic) it belongs to; `None` once shared.
    owner: Option<QKey>,
}

/// A process's per-queue state for merging (`struct bfq_iocq_bfqq_data`).
#[derive(Clone, Copy, Default)]
struct Bic {
    /// A scheduled (delayed) stable merge with this queue.
    stable_merge: Option<usize>,
    /// Merged stably: never split again.
    stably_merged: bool,
    /// The state its queue had when merged (`bfq_bfqq_save_state`), resumed at a split.
    saved: Option<Saved>,
}

#[derive(Clone, Copy)]
struct Saved {
    wr_coeff: u32,
    wr_cur_max_time: i64,
    last_wr_start_finish: i64,
    service_from_wr: u64,
    ttime: TTime,
    has_short_ttime: bool,
    io_bound: bool,
    in_large_burst: bool,
}

impl Queue {
    fn seeky(&self) -> bool {
        self.seek_history.count_ones() > 19
    }
    fn idle_class(&self) -> bool {
        self.class == IDLE
    }
}

#[derive(Clone, Copy)]
struct RqInfo {
    flush: bool,
    queue: usize,
    sector: u64,
    sectors: u32,
    seq: u64,
    fifo_time: i64,
    meta: bool,
}

pub struct Bfq {
    p: BfqParams,
    fifo_expire: [i64; 2],
    slice_idle: i64,
    timeout: i64,
    max_budget: u64,
    wr_duration: i64,
    wr_min_idle: i64,
    back_max_sectors: u64,
    nonrot: bool,
    /// blkio weights of the scenario's groups (index = `prov.blkio_group`).
    blkio_weights: Vec<u32>,

    ents: Vec<Entity>,
    scheds: Vec<Sched>,
    groups: Vec<Group>,
    /// (blkio group, weight) → group index; (0, root weight) is the root group (index 0).
    gmap: BTreeMap<(u16, u32), usize>,
    queues: Vec<Queue>,
    /// A process's (bic's) sync queue, or a group's async queue of a class and level.
    qmap: BTreeMap<QKey, usize>,
    bics: BTreeMap<QKey, Bic>,
    /// `last_bfqq_created` per group (stable merging).
    last_created: BTreeMap<usize, usize>,
    /// `in_serv_last_pos`: end of the in-service queue's last dispatched request (0 after a
    /// queue starts its service).
    in_serv_last_pos: u64,
    /// Merges done (stable, close-cooperator) and splits, for the tests and `stats`.
    merges: u64,
    splits: u64,

    in_service: Option<usize>,
    idle_timer: Option<i64>,
    busy_queues: [usize; 3],
    wr_busy_queues: usize,
    tot_rq_in_driver: usize,
    max_rq_in_driver: usize,
    hw_tag: i8,
    hw_tag_samples: u32,
    last_position: u64,
    last_budget_start: i64,
    last_idling_start: i64,
    queue_weights: BTreeMap<u32, usize>,
    groups_with_pending: usize,
    // Burst detection.
    burst_size: usize,
    large_burst: bool,
    last_ins_in_burst: i64,
    burst_list: Vec<usize>,
    burst_parent: usize,

    infos: Vec<Option<RqInfo>>,
    /// Per request id on the device: its queue.
    inflight: Vec<Option<usize>>,
    flushes: VecDeque<ReqId>,
    seq: u64,
    queued: usize,
}

impl Bfq {
    pub fn new(p: BfqParams, blkio_weights: &[u32]) -> Self {
        let ms = |v: u64| (v as i64).saturating_mul(MS);
        let max_budget = if p.max_budget == 0 { DEFAULT_MAX_BUDGET } else { p.max_budget };
        let root = Sched { trees: Default::default(), in_service: None, idle_last_service: 0 };
        let root_weight = blkio_weights.first().copied().unwrap_or(WEIGHT_MAX);
        let mut gmap = BTreeMap::new();
        gmap.insert((0u16, root_weight.clamp(WEIGHT_MIN, WEIGHT_MAX)), 0usize);
        Bfq {
            fifo_expire: [ms(p.fifo_expire_async.max(1)), ms(p.fifo_expire_sync.max(1))],
            slice_idle: ms(p.slice_idle),
            timeout: ms(p.timeout_sync.max(1)),
            max_budget,
            wr_duration: ms(if p.wr_duration_ms > 0 { p.wr_duration_ms } else { initial_wr_duration_ms(p.rotational) }),
            wr_min_idle: ms(p.wr_min_idle_time_ms),
            back_max_sectors: p.back_seek_max.saturating_mul(2),
            nonrot: !p.rotational,
            p: BfqParams { back_seek_penalty: p.back_seek_penalty.max(1), wr_coeff: p.wr_coeff.max(1), ..p },
            blkio_weights: blkio_weights.to_vec(),
            ents: Vec::new(),
            scheds: vec![root],
            groups: vec![Group { ent: None, pending: 0 }],
            gmap,
            queues: Vec::new(),
            qmap: BTreeMap::new(),
            bics: BTreeMap::new(),
            last_created: BTreeMap::new(),
            in_serv_last_pos: 0,
            merges: 0,
            splits: 0,
            in_service: None,
            idle_timer: None,
            busy_queues: [0; 3],
            wr_busy_queues: 0,
            tot_rq_in_driver: 0,
            max_rq_in_driver: 0,
            hw_tag: -1,
            hw_tag_samples: 0,
            last_position: 0,
            last_budget_start: 0,
            last_idling_start: 0,
            queue_weights: BTreeMap::new(),
            groups_with_pending: 0,
            burst_size: 0,
            large_burst: false,
            last_ins_in_burst: LONG_AGO,
            burst_list: Vec::new(),
            burst_parent: 0,
            infos: Vec::new(),
            inflight: Vec::new(),
            flushes: VecDeque::new(),
            seq: 0,
            queued: 0,
        }
    }

    fn min_budget(&self) -> u64 {
        self.max_budget / 32
    }

    fn tot_busy(&self) -> usize {
        self.busy_queues.iter().sum()
    }

    /// The group of a request: its blkio group with the weight it carries (or the group's).
    fn group_of(&mut self, blkio_group: u16, io_weight: u16, now: i64) -> usize {
        let base = match self.blkio_weights.get(blkio_group as usize) {
            Some(&w) => w,
            None => self.blkio_weights.first().copied().unwrap_or(WEIGHT_MAX),
        };
        let bg = if self.blkio_weights.get(blkio_group as usize).is_some() { blkio_group } else { 0 };
        let w = if io_weight > 0 { u32::from(io_weight) } else { base }.clamp(WEIGHT_MIN, WEIGHT_MAX);
        if let Some(&g) = self.gmap.get(&(bg, w)) {
            return g;
        }
        let g = self.groups.len();
        let ent = self.ents.len();
        self.ents.push(Entity {
            parent: 0,
            class: BE,
            orig_weight: w,
            weight: w,
            start: 0,
            finish: 0,
            budget: 0,
            service: 0,
            active: false,
            in_service: false,
            counted: false,
            what: Ent::G(g),
        });
        self.scheds.push(Sched { trees: Default::default(), in_service: None, idle_last_service: now });
        self.groups.push(Group { ent: Some(ent), pending: 0 });
        self.gmap.insert((bg, w), g);
        g
    }

    fn queue_for(&mut self, key: QKey, sync: bool, class: usize, level: u8, now: i64) -> usize {
        if let Some(&q) = self.qmap.get(&key) {
            return q;
        }
        let group = match key {
            QKey::Sync { group, .. } | QKey::Async { group, .. } => group,
        };
        let qi = self.queues.len();
        let ent = self.ents.len();
        let w = ioprio_weight(if class == IDLE { NR_LEVELS - 1 } else { level });
        self.ents.push(Entity {
            parent: group,
            class,
            orig_weight: w,
            weight: w,
            start: 0,
            finish: 0,
            budget: 0,
            service: 0,
            active: false,
            in_service: false,
            counted: false,
            what: Ent::Q(qi),
        });
        self.queues.push(Queue {
            ent,
            group,
            sync,
            class,
            level,
            sort: BTreeSet::new(),
            fifo: BTreeSet::new(),
            next_rq: None,
            queued: 0,
            dispatched: 0,
            busy: false,
            max_budget: 2 * self.max_budget / 3,
            budget_timeout: LONG_AGO,
            wr_coeff: 1,
            wr_cur_max_time: 0,
            last_wr_start_finish: now,
            service_from_wr: 0,
            has_short_ttime: sync && class != IDLE,
            just_created: sync,
            in_large_burst: false,
            in_burst_list: false,
            non_blocking_wait_rq: false,
            fifo_checked: false,
            wait_request: false,
            seek_history: 1,
            last_request_pos: 0,
            ttime: TTime { last_end: now + 1, ..Default::default() },
            weight_counted: None,
            pending_counted: false,
            io_bound: false,
            requests_within_timer: 0,
            created: now,
            split_time: LONG_AGO,
            first_io: now,
            from_backlogged: 0,
            procs: 1,
            new_q: None,
            coop: false,
            split_coop: false,
            owner: sync.then_some(key),
        });
        self.qmap.insert(key, qi);
        qi
    }

    fn info(&self, id: ReqId) -> Option<RqInfo> {
        self.infos.get(id as usize).copied().flatten()
    }

    // ------------------------------------------------------------ B-WF2Q+

    /// `__bfq_activate_entity` + `bfq_update_fin_time_enqueue`: put entity `e` on its tree.
    fn activate(&mut self, e: usize) {
        let (parent, class) = (self.ents[e].parent, self.ents[e].class);
        let vtime = self.scheds[parent].trees[class].vtime;
        let ent = &mut self.ents[e];
        // The kernel's idle tree: an entity that went idle before the tree's virtual time
        // reached its finish time restarts at that finish time.
        ent.start = vtime.max(ent.finish);
        ent.finish = ent.start + delta(ent.budget, u64::from(ent.weight));
        ent.active = true;
        if !ent.counted {
            ent.counted = true;
            let w = u64::from(ent.weight);
            self.scheds[parent].trees[class].wsum += w;
        }
        self.scheds[parent].trees[class].active.push(e);
    }

    /// Take entity `e` off its tree's waiting set (it is going into service or idle).
    fn extract(&mut self, e: usize) {
        let (parent, class) = (self.ents[e].parent, self.ents[e].class);
        let act = &mut self.scheds[parent].trees[class].active;
        if let Some(i) = act.iter().position(|&x| x == e) {
            act.swap_remove(i);
        }
        self.ents[e].active = false;
    }

    /// The entity stops being schedulable: charge what it got and drop its weight.
    fn deactivate(&mut self, e: usize) {
        self.extract(e);
        let (parent, class) = (self.ents[e].parent, self.ents[e].class);
        let ent = &mut self.ents[e];
        if ent.in_service {
            ent.finish = ent.start + delta(ent.service, u64::from(ent.weight));
            ent.in_service = false;
            if self.scheds[parent].in_service == Some(e) {
                self.scheds[parent].in_service = None;
            }
        }
        let ent = &mut self.ents[e];
        if ent.counted {
            ent.counted = false;
            let w = u64::from(ent.weight);
            let t = &mut self.scheds[parent].trees[class];
            t.wsum = t.wsum.saturating_sub(w);
        }
        self.ents[e].service = 0;
    }

    /// The in-service entity `e` is still busy: charge its service and requeue it
    /// (`__bfq_requeue_entity`).
    fn requeue(&mut self, e: usize, new_weight: u32) {
        let (parent, class) = (self.ents[e].parent, self.ents[e].class);
        if self.ents[e].in_service {
            let ent = &mut self.ents[e];
            ent.finish = ent.start + delta(ent.service, u64::from(ent.weight));
            ent.start = ent.finish;
            ent.in_service = false;
            if self.scheds[parent].in_service == Some(e) {
                self.scheds[parent].in_service = None;
            }
        } else {
            self.extract(e);
        }
        self.set_weight(e, new_weight);
        let ent = &mut self.ents[e];
        ent.finish = ent.start + delta(ent.budget, u64::from(ent.weight));
        ent.service = 0;
        ent.active = true;
        self.scheds[parent].trees[class].active.push(e);
    }

    fn set_weight(&mut self, e: usize, w: u32) {
        let (parent, class) = (self.ents[e].parent, self.ents[e].class);
        let ent = &mut self.ents[e];
        if ent.weight == w {
            return;
        }
        if ent.counted {
            let t = &mut self.scheds[parent].trees[class];
            t.wsum = t.wsum.saturating_sub(u64::from(ent.weight)) + u64::from(w);
        }
        ent.weight = w;
    }

    /// `bfq_lookup_next_entity` in group `g`'s sched data: the next entity to serve, if any.
    fn lookup_next(&mut self, g: usize, now: i64) -> Option<usize> {
        let mut first = RT;
        if now > self.scheds[g].idle_last_service + CL_IDLE_TIMEOUT {
            if !self.scheds[g].trees[IDLE].active.is_empty() {
                first = IDLE;
            }
            self.scheds[g].idle_last_service = now;
        }
        let order: &[usize] = if first == IDLE { &[IDLE, RT, BE] } else { &[RT, BE, IDLE] };
        for &c in order {
            let t = &self.scheds[g].trees[c];
            if t.active.is_empty() {
                continue;
            }
            // `bfq_update_vtime`: jump to the smallest start if nothing is eligible.
            let min_start = t.active.iter().map(|&e| self.ents[e].start).min().unwrap_or(0);
            let vtime = t.vtime.max(min_start);
            self.scheds[g].trees[c].vtime = vtime;
            let best = self.scheds[g].trees[c]
                .active
                .iter()
                .copied()
                .filter(|&e| self.ents[e].start <= vtime)
                .min_by_key(|&e| (self.ents[e].finish, self.ents[e].start, e));
            if best.is_some() {
                return best;
            }
        }
        None
    }

    /// `bfq_get_next_queue`: descend from the root to the next queue, putting each entity on
    /// the way in service.
    fn get_next_queue(&mut self, now: i64) -> Option<usize> {
        let mut g = 0;
        loop {
            let e = self.lookup_next(g, now)?;
            self.extract(e);
            self.ents[e].in_service = true;
            self.ents[e].service = 0;
            self.scheds[g].in_service = Some(e);
            match self.ents[e].what {
                Ent::Q(q) => return Some(q),
                Ent::G(child) => g = child,
            }
        }
    }

    /// `bfq_bfqq_served`: charge `served` sectors to queue `q` and its group, advancing the
    /// virtual times.
    fn served(&mut self, q: usize, served: u64, now: i64) {
        if self.queues[q].from_backlogged == 0 {
            self.queues[q].first_io = now;
        }
        self.queues[q].from_backlogged += served;
        let mut e = self.queues[q].ent;
        loop {
            let (parent, class) = (self.ents[e].parent, self.ents[e].class);
            self.ents[e].service += served;
            let t = &mut self.scheds[parent].trees[class];
            t.vtime += delta(served, t.wsum);
            match self.groups[parent].ent {
                Some(ge) => e = ge,
                None => break,
            }
        }
        if self.queues[q].wr_coeff > 1 {
            self.queues[q].service_from_wr += served;
        }
    }

    // ------------------------------------------------------------ queue state

    /// Count `q` in the weights tree with its current weight (`bfq_weights_tree_add`, and a
    /// weight change while counted) and its group as having pending requests. A weight-raised
    /// queue is not in the weights tree (`bfq_add_bfqq_busy` and
    /// `__bfq_entity_update_weight_prio` add a queue only while `wr_coeff == 1`): raising
    /// alone does not make the scenario asymmetric.
    fn weights_add(&mut self, q: usize) {
        let w = self.ents[self.queues[q].ent].weight;
        let want = (self.queues[q].wr_coeff == 1).then_some(w);
        if self.queues[q].weight_counted != want {
            if let Some(old) = self.queues[q].weight_counted.take() {
                self.weight_dec(old);
            }
            if let Some(w) = want {
                *self.queue_weights.entry(w).or_insert(0) += 1;
                self.queues[q].weight_counted = Some(w);
            }
        }
        if !self.queues[q].pending_counted {
            self.queues[q].pending_counted = true;
            let g = self.queues[q].group;
            self.groups[g].pending += 1;
            if self.groups[g].pending == 1 {
                self.groups_with_pending += 1;
            }
        }
    }

    fn weight_dec(&mut self, w: u32) {
        if let Some(n) = self.queue_weights.get_mut(&w) {
            *n -= 1;
            if *n == 0 {
                self.queue_weights.remove(&w);
            }
        }
    }

    /// `bfq_weights_tree_remove` and `bfq_del_bfqq_in_groups_with_pending_reqs`.
    fn weights_remove(&mut self, q: usize) {
        if let Some(w) = self.queues[q].weight_counted.take() {
            self.weight_dec(w);
        }
        if std::mem::take(&mut self.queues[q].pending_counted) {
            let g = self.queues[q].group;
            self.groups[g].pending -= 1;
            if self.groups[g].pending == 0 {
                self.groups_with_pending -= 1;
            }
        }
    }

    /// `bfq_asymmetric_scenario`.
    fn asymmetric(&self, q: Option<usize>) -> bool {
        let smallest =
            q.and_then(|q| self.queues[q].weight_counted).is_some_and(|w| self.queue_weights.keys().next() == Some(&w));
        let varied = !smallest && self.queue_weights.len() > 1;
        let classes = self.busy_queues.iter().filter(|&&n| n > 0).count() > 1;
        varied || classes || self.groups_with_pending > 1
    }

    /// `bfq_serv_to_charge`.
    fn serv_to_charge(&self, id: ReqId, q: usize) -> u64 {
        let sectors = u64::from(self.info(id).map_or(0, |i| i.sectors));
        if self.queues[q].sync || self.queues[q].wr_coeff > 1 || self.asymmetric(Some(q)) {
            sectors
        } else {
            sectors * ASYNC_CHARGE_FACTOR
        }
    }

    fn budget_left(&self, q: usize) -> i64 {
        let e = &self.ents[self.queues[q].ent];
        e.budget as i64 - e.service as i64
    }

    fn hw_queueing(&self) -> bool {
        self.hw_tag == 1
    }

    /// `idling_boosts_thr_without_issues`.
    fn idling_boosts_thr(&self, q: usize) -> bool {
        let qu = &self.queues[q];
        let rot_without_queueing = !self.nonrot && !self.hw_queueing();
        let seq_io_bound = !qu.seeky() && qu.io_bound && qu.has_short_ttime;
        let boosts = rot_without_queueing || ((!self.nonrot || !self.hw_queueing()) && seq_io_bound);
        boosts && self.wr_busy_queues == 0
    }

    /// `idling_needed_for_service_guarantees`, with (5.12+) the case where `q` is the only busy
    /// queue: plugging then costs no other queue anything, and it keeps a queue that becomes
    /// busy meanwhile from filling the device before `q`'s next request (`plug_only_busy`).
    fn idling_needed(&self, q: usize) -> bool {
        let qu = &self.queues[q];
        let tot_busy = self.tot_busy();
        (qu.wr_coeff > 1 && (self.wr_busy_queues < tot_busy || self.tot_rq_in_driver >= qu.dispatched + 4))
            || self.asymmetric(Some(q))
            || (self.p.plug_only_busy && tot_busy == 1)
    }

    /// `bfq_better_to_idle`.
    fn better_to_idle(&self, q: usize) -> bool {
        let qu = &self.queues[q];
        if self.slice_idle == 0 || !qu.sync || qu.idle_class() || !qu.has_short_ttime {
            return false;
        }
        self.idling_boosts_thr(q) || self.idling_needed(q)
    }

    fn must_idle(&self, q: usize) -> bool {
        self.queues[q].sort.is_empty() && self.better_to_idle(q)
    }

    fn wr_weight(&self, q: usize) -> u32 {
        let e = &self.ents[self.queues[q].ent];
        e.orig_weight * self.queues[q].wr_coeff
    }

    fn end_wr(&mut self, q: usize, now: i64) {
        if self.queues[q].wr_coeff > 1 && self.queues[q].busy {
            self.wr_busy_queues -= 1;
        }
        let qu = &mut self.queues[q];
        qu.wr_coeff = 1;
        qu.wr_cur_max_time = 0;
        qu.last_wr_start_finish = now;
    }

    /// `bfq_add_bfqq_busy`.
    fn add_busy(&mut self, q: usize) {
        let qu = &mut self.queues[q];
        qu.busy = true;
        self.busy_queues[qu.class] += 1;
        if qu.wr_coeff > 1 {
            self.wr_busy_queues += 1;
        }
        let w = self.wr_weight(q);
        let e = self.queues[q].ent;
        if !self.ents[e].in_service {
            self.set_weight(e, w);
            self.activate(e);
        }
        self.weights_add(q);
        self.activate_group(self.queues[q].group);
    }

    /// A group's entity becomes active when its first queue does.
    fn activate_group(&mut self, g: usize) {
        let Some(ge) = self.groups[g].ent else { return };
        if self.ents[ge].active || self.ents[ge].in_service {
            return;
        }
        let b = self.group_budget(g);
        self.ents[ge].budget = b;
        self.activate(ge);
    }

    /// A group's budget for its finish time: that of the queue it would serve next.
    fn group_budget(&self, g: usize) -> u64 {
        let s = &self.scheds[g];
        s.trees.iter().flat_map(|t| t.active.iter()).map(|&e| self.ents[e].budget).max().unwrap_or(self.max_budget).max(1)
    }

    /// `bfq_del_bfqq_busy`: the queue has nothing queued and is not in service.
    fn del_busy(&mut self, q: usize) {
        let qu = &mut self.queues[q];
        if !qu.busy {
            return;
        }
        qu.busy = false;
        self.busy_queues[qu.class] -= 1;
        if qu.wr_coeff > 1 {
            self.wr_busy_queues -= 1;
        }
        let e = self.queues[q].ent;
        self.deactivate(e);
        if self.queues[q].dispatched == 0 {
            self.weights_remove(q);
        }
        self.maybe_deactivate_group(self.queues[q].group);
    }

    fn maybe_deactivate_group(&mut self, g: usize) {
        let Some(ge) = self.groups[g].ent else { return };
        let s = &self.scheds[g];
        let busy = s.in_service.is_some() || s.trees.iter().any(|t| !t.active.is_empty());
        if !busy && (self.ents[ge].active || self.ents[ge].in_service) {
            self.deactivate(ge);
        }
    }

    // ------------------------------------------------------------ expiration

    /// `__bfq_bfqq_recalc_budget`.
    fn recalc_budget(&mut self, q: usize, reason: Expire) {
        let min_budget = self.min_budget();
        let max_budget = self.max_budget;
        let e = self.queues[q].ent;
        let qu = &self.queues[q];
        let mut budget = qu.max_budget;
        if qu.sync && qu.wr_coeff == 1 {
            budget = match reason {
                Expire::TooIdle => {
                    if qu.dispatched > 0 {
                        (budget * 2).min(max_budget)
                    } else if budget > 5 * min_budget {
                        budget - 4 * min_budget
                    } else {
                        min_budget
                    }
                }
                Expire::BudgetTimeout => (budget * 2).min(max_budget),
                Expire::BudgetExhausted => (budget * 4).min(max_budget),
                Expire::NoMoreRequests => self.ents[e].service.max(min_budget),
                Expire::Preempted => return,
            };
        } else if !qu.sync {
            budget = max_budget;
        }
        self.queues[q].max_budget = budget.min(max_budget);
        if let Some(next) = self.queues[q].next_rq {
            let charge = self.serv_to_charge(next, q);
            self.ents[e].budget = self.queues[q].max_budget.max(charge);
        }
    }

    /// `bfq_bfqq_expire`.
    fn expire(&mut self, q: usize, compensate: bool, reason: Expire, now: i64) {
        let e = self.queues[q].ent;
        if reason == Expire::TooIdle && self.ents[e].service <= 2 * self.ents[e].budget / 10 {
            self.queues[q].io_bound = false;
        }
        // bfq_bfqq_is_slow
        let mut slow = self.queues[q].seeky();
        let mut delta_ms = 0i64;
        if self.queues[q].sync {
            let from = if compensate { self.last_idling_start } else { now };
            let d = from - self.last_budget_start;
            if d < MS {
                delta_ms = if self.nonrot { MIN_TT / MS } else { self.slice_idle / MS };
            } else {
                delta_ms = d / MS;
                if d > 20 * MS {
                    slow = self.ents[e].service < self.max_budget / 2;
                }
            }
        } else {
            slow = false;
        }
        let left = self.budget_left(q);
        if self.queues[q].wr_coeff == 1 && (slow || (reason == Expire::BudgetTimeout && left >= self.ents[e].budget as i64 / 3)) {
            // bfq_bfqq_charge_time
            let timeout_ms = (self.timeout / MS).max(1);
            let bounded = delta_ms.clamp(0, timeout_ms) as u64;
            let for_time = self.max_budget * bounded / timeout_ms as u64;
            let tot = for_time.max(self.ents[e].service);
            if tot > self.ents[e].budget {
                self.ents[e].budget = tot;
            }
            let extra = tot - self.ents[e].service;
            if extra > 0 {
                self.served(q, extra, now);
            }
        }
        if self.p.low_latency && self.queues[q].wr_coeff == 1 {
            self.queues[q].last_wr_start_finish = now;
        }
        self.recalc_budget(q, reason);
        // __bfq_bfqq_expire: a shared queue found seeky is split at its processes' next requests.
        if self.queues[q].coop && self.queues[q].seeky() {
            self.queues[q].split_coop = true;
        }
        self.in_service = None;
        self.idle_timer = None;
        self.queues[q].wait_request = false;
        let g = self.queues[q].group;
        // A queue preempted while idling is needed for its service guarantees stays busy
        // (requeued though empty), so it cannot preempt back when its next request arrives.
        if self.queues[q].sort.is_empty() && !(reason == Expire::Preempted && self.idling_needed(q)) {
            // bfq_del_bfqq_busy (with the entity in service: charged as it leaves).
            self.del_busy(q);
            if reason != Expire::BudgetTimeout && reason != Expire::BudgetExhausted {
                self.queues[q].non_blocking_wait_rq = true;
            }
        } else {
            let w = self.wr_weight(q);
            self.requeue(e, w);
        }
        // The group's entity: charged, then requeued or idle.
        if let Some(ge) = self.groups[g].ent {
            let s = &self.scheds[g];
            let busy = s.in_service.is_some() || s.trees.iter().any(|t| !t.active.is_empty());
            if busy {
                let b = self.group_budget(g);
                self.ents[ge].budget = b;
                let w = self.ents[ge].weight;
                self.requeue(ge, w);
            } else if self.ents[ge].active || self.ents[ge].in_service {
                self.deactivate(ge);
            }
        }
        self.ents[e].service = 0;
    }

    /// `bfq_update_wr_data`: end weight raising when its time or service is up.
    fn update_wr_data(&mut self, q: usize, now: i64) {
        let qu = &self.queues[q];
        if qu.wr_coeff > 1
            && (qu.in_large_burst
                || now > qu.last_wr_start_finish + qu.wr_cur_max_time
                || qu.service_from_wr > MAX_SERVICE_FROM_WR)
        {
            self.end_wr(q, now);
        }
        let w = self.wr_weight(q);
        let e = self.queues[q].ent;
        if self.ents[e].weight != w && self.ents[e].in_service {
            // The new weight applies to its tree now (the kernel applies `prio_changed` at
            // the next requeue) and to the weights tree.
            self.set_weight(e, w);
            if self.queues[q].busy || self.queues[q].dispatched > 0 {
                self.weights_add(q);
            }
        }
    }

    // ------------------------------------------------------------ arrival

    /// `bfq_handle_burst`.
    fn handle_burst(&mut self, q: usize, now: i64) {
        if self.queues[q].in_burst_list || self.queues[q].in_large_burst {
            return;
        }
        let parent = self.queues[q].group;
        if now > self.last_ins_in_burst + BURST_INTERVAL || parent != self.burst_parent {
            self.large_burst = false;
            for &b in &self.burst_list {
                self.queues[b].in_burst_list = false;
            }
            self.burst_list.clear();
            if self.tot_busy() == 0 {
                self.burst_list.push(q);
                self.queues[q].in_burst_list = true;
                self.burst_size = 1;
            } else {
                self.burst_size = 0;
            }
            self.burst_parent = parent;
        } else if self.large_burst {
            self.queues[q].in_large_burst = true;
        } else {
            self.burst_size += 1;
            if self.burst_size == LARGE_BURST_THRESH {
                self.large_burst = true;
                for &b in &self.burst_list {
                    self.queues[b].in_large_burst = true;
                    self.queues[b].in_burst_list = false;
                }
                self.queues[q].in_large_burst = true;
                self.burst_list.clear();
            } else {
                self.burst_list.push(q);
                self.queues[q].in_burst_list = true;
            }
        }
        self.last_ins_in_burst = now;
    }

    /// `bfq_choose_req`: of two requests, the one to serve first from head position `last`.
    fn choose(&self, a: Option<ReqId>, b: ReqId, last: u64) -> ReqId {
        let Some(a) = a else { return b };
        if a == b {
            return b;
        }
        let (Some(ia), Some(ib)) = (self.info(a), self.info(b)) else { return b };
        if ia.meta != ib.meta {
            return if ia.meta { a } else { b };
        }
        let (s1, s2) = (ia.sector, ib.sector);
        let dist = |s: u64| {
            if s >= last {
                Some(s - last)
            } else if s + self.back_max_sectors >= last {
                Some((last - s) * self.p.back_seek_penalty)
            } else {
                None
            }
        };
        match (dist(s1), dist(s2)) {
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
        }
    }

    /// `bfq_find_next_rq` after `last` leaves the queue (checking the FIFO once per budget).
    fn find_next(&mut self, q: usize, last: ReqId, now: i64) -> Option<ReqId> {
        let qu = &self.queues[q];
        if qu.sort.is_empty() {
            return None;
        }
        if !qu.fifo_checked {
            self.queues[q].fifo_checked = true;
            if let Some(&(_, head)) = self.queues[q].fifo.iter().next() {
                if self.info(head).is_some_and(|i| now >= i.fifo_time) {
                    return Some(head);
                }
            }
        }
        let info = self.info(last)?;
        let qu = &self.queues[q];
        let key = (info.sector, last);
        let next = qu.sort.range((std::ops::Bound::Excluded(key), std::ops::Bound::Unbounded)).next().map(|k| k.1);
        let prev = qu.sort.range(..key).next_back().map(|k| k.1);
        let next = next.or_else(|| qu.sort.iter().next().map(|k| k.1));
        match (next, prev) {
            (Some(n), Some(p)) => Some(self.choose(Some(n), p, info.sector)),
            (n, p) => n.or(p),
        }
    }

    /// The idle-to-busy transition of queue `q` (`bfq_bfqq_handle_idle_busy_switch`).
    fn idle_busy_switch(&mut self, q: usize, old_wr: u32, now: i64) -> bool {
        let qu = &self.queues[q];
        let idle_for_long = qu.dispatched == 0 && now > qu.budget_timeout.saturating_add(self.wr_min_idle);
        let arrived_in_time = now <= qu.ttime.last_end + 3 * self.slice_idle;
        let in_burst = qu.in_large_burst;
        let default_weight = self.ents[qu.ent].orig_weight == ioprio_weight(4);
        let interactive = !in_burst && idle_for_long && default_weight;
        let deserves = self.p.low_latency && (qu.wr_coeff > 1 || (qu.sync && interactive));
        // bfq_bfqq_update_budg_for_activation
        let e = qu.ent;
        let wants_to_preempt = if qu.non_blocking_wait_rq && arrived_in_time && self.budget_left(q) > 0 {
            let left = self.budget_left(q) as u64;
            self.ents[e].budget = left.min(self.queues[q].max_budget);
            self.ents[e].service = 0;
            true
        } else {
            self.ents[e].service = 0;
            let charge = self.queues[q].next_rq.map_or(0, |r| self.serv_to_charge(r, q));
            self.ents[e].budget = self.queues[q].max_budget.max(charge);
            self.queues[q].non_blocking_wait_rq = false;
            false
        };
        let qu = &mut self.queues[q];
        if !qu.io_bound {
            if arrived_in_time {
                qu.requests_within_timer += 1;
                qu.io_bound = qu.requests_within_timer >= REQUESTS_WITHIN_TIMER;
            } else {
                qu.requests_within_timer = 0;
            }
        }
        if !qu.just_created && idle_for_long && now > qu.budget_timeout.saturating_add(10_000 * MS) {
            qu.in_large_burst = false;
        }
        qu.just_created = false;
        qu.from_backlogged = 0;
        // Not within `wr_min_idle_time` of a split: the queue resumed its raising state.
        if self.p.low_latency && now > qu.split_time.saturating_add(self.wr_min_idle) {
            if old_wr == 1 && deserves {
                if interactive {
                    qu.service_from_wr = 0;
                    qu.wr_coeff = self.p.wr_coeff;
                    qu.wr_cur_max_time = self.wr_duration;
                }
                let cap = 2 * self.max_budget / 32;
                self.ents[e].budget = self.ents[e].budget.min(cap);
            } else if old_wr > 1 {
                if interactive {
                    qu.wr_coeff = self.p.wr_coeff;
                    qu.wr_cur_max_time = self.wr_duration;
                } else if in_burst {
                    qu.wr_coeff = 1;
                }
            }
        }
        self.add_busy(q);
        // Preemption of the in-service queue.
        if let Some(s) = self.in_service {
            if s != q {
                let higher = self.higher_class_or_weight(q, s);
                let may = self.root_entity(q) != self.root_entity(s);
                if may
                    && ((wants_to_preempt && self.queues[q].wr_coeff >= self.queues[s].wr_coeff)
                        || higher
                        || !self.better_to_idle(s))
                {
                    self.expire(s, false, Expire::Preempted, now);
                }
            }
        }
        interactive
    }

    fn root_entity(&self, q: usize) -> usize {
        let g = self.queues[q].group;
        self.groups[g].ent.unwrap_or(self.queues[q].ent)
    }

    /// `bfq_bfqq_higher_class_or_weight`.
    fn higher_class_or_weight(&self, q: usize, s: usize) -> bool {
        if self.queues[q].class < self.queues[s].class {
            return true;
        }
        let (eq, es) = (&self.ents[self.queues[q].ent], &self.ents[self.queues[s].ent]);
        let (wq, ws) = if eq.parent == es.parent {
            (eq.weight, es.weight)
        } else {
            let w = |q: usize| self.ents[self.root_entity(q)].weight;
            (w(q), w(s))
        };
        wq > ws
    }

    /// The idle timer fired (`bfq_idle_slice_timer_body`).
    fn run_timer(&mut self, now: i64) {
        let Some(t) = self.idle_timer else { return };
        if now < t {
            return;
        }
        self.idle_timer = None;
        let Some(q) = self.in_service else { return };
        self.queues[q].wait_request = false;
        let reason = if now >= self.queues[q].budget_timeout {
            Expire::BudgetTimeout
        } else if self.queues[q].queued == 0 {
            Expire::TooIdle
        } else {
            return;
        };
        self.expire(q, true, reason, now);
    }

    fn arm_idle_timer(&mut self, q: usize, now: i64) {
        self.queues[q].wait_request = true;
        let mut sl = self.slice_idle;
        if self.queues[q].seeky() && self.queues[q].wr_coeff == 1 && !self.asymmetric(Some(q)) {
            sl = sl.min(MIN_TT);
        } else if self.queues[q].wr_coeff > 1 {
            sl = sl.max(20 * MS);
        }
        self.last_idling_start = now;
        self.idle_timer = Some(now + sl);
    }

    fn may_expire_for_budget_timeout(&self, q: usize, now: i64) -> bool {
        let qu = &self.queues[q];
        (!qu.wait_request || self.budget_left(q) >= self.ents[qu.ent].budget as i64 / 3) && now >= qu.budget_timeout
    }

    /// `__bfq_set_in_service_queue`.
    fn set_in_service(&mut self, q: usize, now: i64) {
        self.queues[q].fifo_checked = false;
        let coeff = i64::from(self.queues[q].wr_coeff.max(1));
        self.queues[q].budget_timeout = now + self.timeout * coeff;
        self.last_budget_start = now;
        self.in_service = Some(q);
        self.in_serv_last_pos = 0;
    }

    // ------------------------------------------------------------ queue merging

    /// The sync queue of process `key` (`bfq_init_rq`): its queue, split first if it is a
    /// shared queue found seeky and the process was not merged stably; or a new queue, with
    /// its stable merge done or scheduled.
    fn sync_queue(&mut self, key: QKey, class: usize, level: u8, now: i64) -> usize {
        if let Some(&q) = self.qmap.get(&key) {
            let stably = self.bics.get(&key).is_some_and(|b| b.stably_merged);
            if self.p.queue_merging && self.queues[q].coop && self.queues[q].split_coop && !stably {
                return self.split(key, q, class, level, now);
            }
            return q;
        }
        let q = self.queue_for(key, true, class, level, now);
        if self.p.queue_merging {
            return self.do_or_sched_stable_merge(key, q, now);
        }
        q
    }

    /// `bfq_split_bfqq` and the split queue's `bfq_bfqq_resume_state`: the last process of a
    /// shared queue keeps it; another gets a new queue with the raising and think time its own
    /// queue had when merged, and no new raising for `wr_min_idle_time` (`split_time`).
    fn split(&mut self, key: QKey, q: usize, class: usize, level: u8, now: i64) -> usize {
        self.splits += 1;
        if self.queues[q].procs == 1 && self.queues[q].new_q.is_none() {
            let qu = &mut self.queues[q];
            (qu.owner, qu.coop, qu.split_coop) = (Some(key), false, false);
            return q;
        }
        self.qmap.remove(&key);
        // bfq_put_cooperator: the references a scheduled merge took along its chain.
        let mut next = self.queues[q].new_q;
        let mut guard = 0;
        while let Some(m) = next {
            self.queues[m].procs = self.queues[m].procs.saturating_sub(1);
            next = self.queues[m].new_q;
            guard += 1;
            if guard > self.queues.len() {
                break;
            }
        }
        self.release_process_ref(q);
        let n = self.queue_for(key, true, class, level, now);
        let saved = self.bics.get(&key).and_then(|b| b.saved);
        let qu = &mut self.queues[n];
        qu.split_time = now;
        if let Some(s) = saved {
            qu.wr_coeff = s.wr_coeff;
            qu.wr_cur_max_time = s.wr_cur_max_time;
            qu.last_wr_start_finish = s.last_wr_start_finish;
            qu.service_from_wr = s.service_from_wr;
            qu.ttime = s.ttime;
            qu.has_short_ttime = s.has_short_ttime;
            qu.io_bound = s.io_bound;
            qu.in_large_burst = s.in_large_burst;
            if qu.wr_coeff > 1 && (qu.in_large_burst || now > qu.last_wr_start_finish + qu.wr_cur_max_time) {
                qu.wr_coeff = 1;
                qu.wr_cur_max_time = 0;
            }
            let w = self.wr_weight(n);
            let e = self.queues[n].ent;
            self.set_weight(e, w);
        }
        n
    }

    /// `bfq_do_or_sched_stable_merge` for new queue `q` of process `key`: a queue created
    /// within `bfq_burst_interval` of the group's last created one (same class and level) is
    /// merged with it at once on a non-rotational device with command queueing, or scheduled
    /// for a merge `bfq_late_stable_merging` later otherwise; a queue created more than
    /// `bfq_activation_stable_merging` after it (or unlike it) becomes the last created.
    fn do_or_sched_stable_merge(&mut self, key: QKey, q: usize, now: i64) -> usize {
        let g = self.queues[q].group;
        let last = self.last_created.get(&g).copied().filter(|&l| {
            let (lq, qu) = (&self.queues[l], &self.queues[q]);
            lq.created + ACTIVATION_STABLE_MERGING >= qu.created && lq.class == qu.class && lq.level == qu.level
        });
        let Some(l) = last else {
            self.last_created.insert(g, q);
            return q;
        };
        if self.queues[l].created + BURST_INTERVAL < now {
            return q;
        }
        if self.nonrot && self.hw_queueing() {
            // bfq_do_early_stable_merge
            let Some(n) = self.setup_merge(q, l) else { return q };
            if let Some(o) = self.queues[n].owner {
                self.bics.entry(o).or_default().stably_merged = true;
            }
            self.bics.entry(key).or_default().stably_merged = true;
            self.merge_into(key, q, n, now);
            return n;
        }
        self.bics.entry(key).or_default().stable_merge = Some(l);
        q
    }

    /// `bfq_too_late_for_merging`: busy and served for over `bfq_merge_time_limit`.
    fn too_late(&self, q: usize, now: i64) -> bool {
        let qu = &self.queues[q];
        qu.from_backlogged > 0 && now > qu.first_io + MERGE_TIME_LIMIT
    }

    /// `bfq_may_be_close_cooperator`.
    fn may_cooperate(&self, q: usize, n: usize, now: i64) -> bool {
        let (a, b) = (&self.queues[q], &self.queues[n]);
        !self.too_late(n, now)
            && !a.idle_class()
            && !b.idle_class()
            && a.class == b.class
            && !a.seeky()
            && !b.seeky()
            && a.sync
            && b.sync
    }

    /// `bfq_setup_merge`: schedule the redirection of `q`'s processes to `n` (or to the end
    /// of `n`'s own scheduled merges); `None` if a queue has no process or they differ in
    /// group, or the chain comes back to `q`.
    fn setup_merge(&mut self, q: usize, n: usize) -> Option<usize> {
        if self.queues[n].procs == 0 {
            return None;
        }
        let mut n = n;
        let mut guard = 0;
        while let Some(m) = self.queues[n].new_q {
            if m == q || guard > self.queues.len() {
                return None;
            }
            n = m;
            guard += 1;
        }
        if self.queues[q].procs == 0 || self.queues[n].procs == 0 || self.queues[q].group != self.queues[n].group {
            return None;
        }
        self.queues[q].new_q = Some(n);
        self.queues[n].procs += self.queues[q].procs;
        Some(n)
    }

    /// `bfq_setup_stable_merge`: the scheduled stable merge, unless idling for `q` boosts
    /// throughput or a queue has no process left; done or not, it is descheduled.
    fn setup_stable_merge(&mut self, key: QKey, q: usize, target: usize) -> Option<usize> {
        let bic = self.bics.entry(key).or_default();
        bic.stable_merge = None;
        let procs = self.queues[q].procs.min(self.queues[target].procs);
        if self.idling_boosts_thr(q) || procs == 0 {
            return None;
        }
        let n = self.setup_merge(q, target)?;
        self.bics.entry(key).or_default().stably_merged = true;
        if let Some(o) = self.queues[n].owner {
            self.bics.entry(o).or_default().stably_merged = true;
        }
        Some(n)
    }

    /// `bfq_setup_cooperator` for a sync request of process `key` at `sector` bound for `q`:
    /// a merge already scheduled; else (not on a non-rotational device with queueing) a due
    /// stable merge; else a close cooperator: the in-service queue if the request lands
    /// within `BFQQ_CLOSE_THR` of its last dispatched request, or a queue of the group whose
    /// next request does.
    fn setup_cooperator(&mut self, q: usize, key: QKey, sector: u64, now: i64) -> Option<usize> {
        if let Some(n) = self.queues[q].new_q {
            return Some(n);
        }
        let nonrot_with_queueing = self.nonrot && self.hw_queueing();
        if !nonrot_with_queueing {
            let qu = &self.queues[q];
            if let Some(target) = self.bics.get(&key).and_then(|b| b.stable_merge) {
                if qu.sync
                    && !qu.just_created
                    && now > qu.split_time.saturating_add(LATE_STABLE_MERGING)
                    && now > qu.created + LATE_STABLE_MERGING
                {
                    return self.setup_stable_merge(key, q, target);
                }
            }
        }
        if nonrot_with_queueing || self.too_late(q, now) || self.tot_busy() == 1 {
            return None;
        }
        if let Some(s) = self.in_service {
            if s != q
                && sector.abs_diff(self.in_serv_last_pos) <= CLOSE_THR
                && self.queues[s].group == self.queues[q].group
                && self.may_cooperate(q, s, now)
            {
                if let Some(n) = self.setup_merge(q, s) {
                    return Some(n);
                }
            }
        }
        let c = self.find_close(q, sector, now)?;
        if self.may_cooperate(q, c, now) {
            return self.setup_merge(q, c);
        }
        None
    }

    /// `bfq_find_close_cooperator` over the group's position tree (queues with a next
    /// request, not idle-class, not too late to merge, keyed by their next request's sector):
    /// the nearest below or above `sector` within `BFQQ_CLOSE_THR`, unless that is `q`.
    fn find_close(&self, q: usize, sector: u64, now: i64) -> Option<usize> {
        let g = self.queues[q].group;
        // (position, queue) of the nearest next request at or below the sector, and above it.
        let mut below: Option<(u64, usize)> = None;
        let mut above: Option<(u64, usize)> = None;
        for (i, qu) in self.queues.iter().enumerate() {
            if qu.group != g || qu.idle_class() || self.too_late(i, now) {
                continue;
            }
            let Some(pos) = qu.next_rq.and_then(|r| self.info(r)).map(|r| r.sector) else { continue };
            if pos <= sector {
                if below.is_none_or(|(b, _)| pos > b) {
                    below = Some((pos, i));
                }
            } else if above.is_none_or(|(a, _)| pos < a) {
                above = Some((pos, i));
            }
        }
        let mut near: Vec<(u64, usize)> =
            [below, above].into_iter().flatten().map(|(pos, i)| (pos.abs_diff(sector), i)).collect();
        near.sort_unstable();
        let &(d, c) = near.first()?;
        (d <= CLOSE_THR && c != q).then_some(c)
    }

    /// `bfq_merge_bfqqs`: redirect process `key` from `q` to `n`, `n` inheriting `q`'s weight
    /// raising and I/O-boundness; both queues' states are saved for a later split.
    fn merge_into(&mut self, key: QKey, q: usize, n: usize, now: i64) {
        self.merges += 1;
        self.save_state(q, now);
        self.save_state(n, now);
        if std::mem::take(&mut self.queues[q].io_bound) {
            self.queues[n].io_bound = true;
        }
        let (qw, nw) = (self.queues[q].wr_coeff, self.queues[n].wr_coeff);
        if nw == 1 && qw > 1 {
            let (max, start) = (self.queues[q].wr_cur_max_time, self.queues[q].last_wr_start_finish);
            let nu = &mut self.queues[n];
            (nu.wr_coeff, nu.wr_cur_max_time, nu.last_wr_start_finish) = (qw, max, start);
            if nu.busy {
                self.wr_busy_queues += 1;
            }
            self.reweigh(n);
        }
        if qw > 1 {
            self.queues[q].wr_coeff = 1;
            if self.queues[q].busy {
                self.wr_busy_queues -= 1;
            }
            self.reweigh(q);
        }
        self.qmap.insert(key, n);
        let bic = self.bics.entry(key).or_default();
        if bic.stable_merge == Some(n) {
            bic.stable_merge = None;
        }
        self.queues[n].coop = true;
        self.queues[n].owner = None;
        self.queues[q].owner = None;
        let g = self.queues[q].group;
        if self.last_created.get(&g) == Some(&q) {
            self.last_created.insert(g, n);
        }
        self.release_process_ref(q);
    }

    /// A weight change of `q` (raising inherited or given up): applied to its entity now if in
    /// service, else at its next activation; counted in the weights tree if it holds requests.
    fn reweigh(&mut self, q: usize) {
        let e = self.queues[q].ent;
        if self.ents[e].in_service {
            let w = self.wr_weight(q);
            self.set_weight(e, w);
        }
        if self.queues[q].busy || self.queues[q].dispatched > 0 {
            self.weights_add(q);
        }
    }

    /// `bfq_release_process_ref`: one process less; an empty queue waiting for service with
    /// no process left leaves the busy queues.
    fn release_process_ref(&mut self, q: usize) {
        let qu = &mut self.queues[q];
        qu.procs = qu.procs.saturating_sub(1);
        if qu.busy && qu.sort.is_empty() && self.in_service != Some(q) {
            self.del_busy(q);
        }
        // bfq_reassign_last_bfqq(bfqq, NULL).
        self.last_created.retain(|_, l| *l != q);
    }

    /// `bfq_bfqq_save_state` into the queue's own process (none once shared); a queue merged
    /// right at its creation saves the raising it would have had.
    fn save_state(&mut self, q: usize, now: i64) {
        let Some(o) = self.queues[q].owner else { return };
        let qu = &self.queues[q];
        let fresh = qu.just_created && !qu.in_large_burst && self.p.low_latency;
        let saved = Saved {
            wr_coeff: if fresh { self.p.wr_coeff } else { qu.wr_coeff },
            wr_cur_max_time: if fresh { self.wr_duration } else { qu.wr_cur_max_time },
            last_wr_start_finish: if fresh { now } else { qu.last_wr_start_finish },
            service_from_wr: if fresh { 0 } else { qu.service_from_wr },
            ttime: qu.ttime,
            has_short_ttime: qu.has_short_ttime,
            io_bound: qu.io_bound,
            in_large_burst: qu.in_large_burst,
        };
        self.bics.entry(o).or_default().saved = Some(saved);
    }

    /// Testing aid: the current weight of `pid`'s sync queue in the root group.
    #[cfg(test)]
    fn sync_weight(&self, pid: u32) -> Option<u32> {
        let q = *self.qmap.get(&QKey::Sync { pid, group: 0 })?;
        Some(self.wr_weight(q))
    }
}

impl IoScheduler for Bfq {
    fn name(&self) -> &'static str {
        "bfq"
    }

    fn add(&mut self, id: ReqId, reqs: &ReqSlab, now_t: SimTime) {
        let now = now_t.ns() as i64;
        let Some(r) = reqs.try_get(id) else { return };
        if self.infos.len() <= id as usize {
            self.infos.resize(id as usize + 1, None);
        }
        if self.infos[id as usize].is_some() {
            debug_assert!(false, "request {id} added twice");
            return;
        }
        self.queued += 1;
        if r.op == ReqOp::Flush {
            self.flushes.push_back(id);
            let info = RqInfo { flush: true, queue: 0, sector: 0, sectors: 0, seq: 0, fifo_time: 0, meta: false };
            self.infos[id as usize] = Some(info);
            return;
        }
        let (class, level) = match r.ioprio_class {
            1 => (RT, r.ioprio_level.min(NR_LEVELS - 1)),
            3 => (IDLE, NR_LEVELS - 1),
            2 => (BE, r.ioprio_level.min(NR_LEVELS - 1)),
            _ => (BE, 4),
        };
        let g = self.group_of(r.prov.blkio_group, r.io_weight, now);
        let key =
            if r.sync { QKey::Sync { pid: r.prov.pid, group: g } } else { QKey::Async { group: g, class: class as u8, level } };
        // bfq_init_rq: the process's queue (a split, or a new one with its stable merge).
        let mut q = if r.sync { self.sync_queue(key, class, level, now) } else { self.queue_for(key, false, class, level, now) };
        if self.queues[q].just_created && (self.burst_size > 0 || self.tot_busy() == 0) {
            self.handle_burst(q, now);
        }
        // __bfq_insert_request: a merge scheduled or found now redirects the request (and the
        // process) to the other queue.
        if r.sync && self.p.queue_merging {
            if let Some(n) = self.setup_cooperator(q, key, r.sector, now) {
                if self.qmap.get(&key) == Some(&q) {
                    let mut guard = 0;
                    while q != n && guard <= self.queues.len() {
                        let Some(next) = self.queues[q].new_q else { break };
                        self.merge_into(key, q, next, now);
                        q = next;
                        guard += 1;
                    }
                }
                self.queues[q].just_created = false;
                q = n;
            }
        }
        let sync = r.sync;
        let seq = self.seq;
        self.seq += 1;
        let info = RqInfo {
            flush: false,
            queue: q,
            sector: r.sector,
            sectors: r.sectors,
            seq,
            fifo_time: now + self.fifo_expire[usize::from(sync)],
            meta: r.meta,
        };
        self.infos[id as usize] = Some(info);
        // bfq_update_io_thinktime / has_short_ttime / seektime
        {
            let slice_idle = self.slice_idle;
            let qu = &mut self.queues[q];
            if qu.dispatched == 0 && !qu.busy {
                let elapsed = (now - qu.ttime.last_end).clamp(0, 2 * slice_idle) as u64;
                let t = &mut qu.ttime;
                t.samples = (7 * t.samples + 256) / 8;
                t.total = (7 * t.total + 256 * elapsed) / 8;
                t.mean = (t.total + 128) / t.samples.max(1);
            }
            if qu.sync && !qu.idle_class() && slice_idle > 0 {
                qu.has_short_ttime = !(qu.ttime.samples > 80 && qu.ttime.mean as i64 > slice_idle / 2);
            }
            let dist = if qu.last_request_pos > 0 { r.sector.abs_diff(qu.last_request_pos) } else { 0 };
            let seeky = dist > SEEK_THR && (!self.nonrot || r.sectors < SECT_THR_NONROT);
            qu.seek_history = (qu.seek_history << 1) | u32::from(seeky);
        }
        // bfq_add_request
        let old_wr = self.queues[q].wr_coeff;
        self.queues[q].queued += 1;
        self.queues[q].sort.insert((r.sector, id));
        self.queues[q].fifo.insert((seq, id));
        let prev = self.queues[q].next_rq;
        let next = self.choose(prev, id, self.last_position);
        self.queues[q].next_rq = Some(next);
        let mut interactive = false;
        if !self.queues[q].busy {
            interactive = self.idle_busy_switch(q, old_wr, now);
        } else {
            if self.p.low_latency && old_wr == 1 && !sync && now > self.queues[q].last_wr_start_finish + WR_MIN_INTER_ARR_ASYNC {
                self.queues[q].wr_coeff = self.p.wr_coeff;
                self.queues[q].wr_cur_max_time = self.wr_duration;
                self.wr_busy_queues += 1;
                // Out of the weights tree while raised (the kernel at the prio change).
                self.weights_add(q);
            }
            if prev != Some(next) && self.in_service != Some(q) {
                // bfq_updated_next_req
                let e = self.queues[q].ent;
                let nb = self.queues[q].max_budget.max(self.serv_to_charge(next, q)).max(self.ents[e].service);
                if self.ents[e].budget != nb {
                    self.ents[e].budget = nb;
                    let w = self.wr_weight(q);
                    if self.ents[e].active {
                        // `__bfq_requeue_entity` of an entity waiting on its tree: same start,
                        // new finish.
                        self.set_weight(e, w);
                        let ent = &mut self.ents[e];
                        ent.finish = ent.start + delta(ent.budget, u64::from(ent.weight));
                    }
                }
            }
        }
        if self.p.low_latency && (old_wr == 1 || self.queues[q].wr_coeff == 1 || interactive) {
            self.queues[q].last_wr_start_finish = now;
        }
        // bfq_rq_enqueued
        self.queues[q].last_request_pos = r.sector + u64::from(r.sectors);
        if self.in_service == Some(q) && self.queues[q].wait_request {
            let small = self.queues[q].queued == 1 && r.sectors < 32;
            let timed_out = now >= self.queues[q].budget_timeout;
            if !(small && self.idling_boosts_thr(q) && !timed_out) {
                self.queues[q].wait_request = false;
                self.idle_timer = None;
                if timed_out {
                    self.expire(q, false, Expire::BudgetTimeout, now);
                }
            }
        }
    }

    fn remove_merged(&mut self, id: ReqId, _reqs: &ReqSlab) {
        let Some(info) = self.info(id) else { return };
        self.infos[id as usize] = None;
        self.queued -= 1;
        if info.flush {
            self.flushes.retain(|&r| r != id);
            return;
        }
        let q = info.queue;
        self.queues[q].sort.remove(&(info.sector, id));
        self.queues[q].fifo.remove(&(info.seq, id));
        self.queues[q].queued -= 1;
        if self.queues[q].next_rq == Some(id) {
            let n = self.queues[q].sort.iter().next().map(|k| k.1);
            self.queues[q].next_rq = n;
        }
        if self.queues[q].sort.is_empty() && self.queues[q].busy && self.in_service != Some(q) {
            self.del_busy(q);
            let e = self.queues[q].ent;
            self.ents[e].budget = 0;
        }
    }

    fn dispatch(&mut self, _reqs: &ReqSlab, _in_flight: usize, now_t: SimTime) -> Dispatch {
        let now = now_t.ns() as i64;
        if let Some(id) = self.flushes.pop_front() {
            self.infos[id as usize] = None;
            self.queued -= 1;
            return Dispatch::Request(id);
        }
        self.run_timer(now);
        if self.tot_busy() == 0 {
            return Dispatch::Empty;
        }
        // bfq_select_queue
        let mut guard = 0;
        loop {
            guard += 1;
            if guard > 4 * (self.queues.len() + 4) {
                return Dispatch::Empty; // never spin (unreachable by construction)
            }
            let q = match self.in_service {
                Some(q) => q,
                None => {
                    let Some(q) = self.get_next_queue(now) else { return Dispatch::Empty };
                    self.set_in_service(q, now);
                    q
                }
            };
            if self.may_expire_for_budget_timeout(q, now) && !self.must_idle(q) {
                self.expire(q, false, Expire::BudgetTimeout, now);
                continue;
            }
            if let Some(next) = self.queues[q].next_rq {
                if self.serv_to_charge(next, q) as i64 > self.budget_left(q) {
                    self.expire(q, false, Expire::BudgetExhausted, now);
                    continue;
                }
                if self.queues[q].wait_request {
                    self.queues[q].wait_request = false;
                    self.idle_timer = None;
                }
                // bfq_dispatch_rq_from_bfqq
                let Some(info) = self.info(next) else {
                    // Unreachable by construction (a queue's next request is held); never
                    // panic in the simulator: forget it and look again.
                    self.queues[q].next_rq = self.queues[q].sort.iter().next().map(|k| k.1).filter(|&r| r != next);
                    continue;
                };
                let charge = self.serv_to_charge(next, q);
                self.served(q, charge, now);
                let qu = &mut self.queues[q];
                qu.sort.remove(&(info.sector, next));
                qu.fifo.remove(&(info.seq, next));
                qu.queued -= 1;
                qu.dispatched += 1;
                let nn = self.find_next(q, next, now);
                self.queues[q].next_rq = nn;
                self.infos[next as usize] = None;
                if self.inflight.len() <= next as usize {
                    self.inflight.resize(next as usize + 1, None);
                }
                self.inflight[next as usize] = Some(q);
                self.queued -= 1;
                self.tot_rq_in_driver += 1;
                self.last_position = info.sector + u64::from(info.sectors);
                self.in_serv_last_pos = self.last_position;
                self.update_wr_data(q, now);
                if self.tot_busy() > 1 && self.queues[q].idle_class() {
                    self.expire(q, false, Expire::BudgetExhausted, now);
                }
                return Dispatch::Request(next);
            }
            // Nothing queued in the in-service queue.
            if self.queues[q].wait_request {
                return match self.idle_timer {
                    Some(t) => Dispatch::WaitUntil(SimTime::from_ns(t as u64)),
                    None => Dispatch::Empty,
                };
            }
            if self.queues[q].dispatched != 0 && self.better_to_idle(q) {
                return Dispatch::Empty; // wait for its requests in flight
            }
            self.expire(q, false, Expire::NoMoreRequests, now);
        }
    }

    fn completed(&mut self, id: ReqId, _reqs: &ReqSlab, now_t: SimTime) {
        let now = now_t.ns() as i64;
        let Some(q) = self.inflight.get_mut(id as usize).and_then(Option::take) else { return };
        if self.queues[q].dispatched == 0 {
            return;
        }
        // bfq_update_hw_tag
        self.max_rq_in_driver = self.max_rq_in_driver.max(self.tot_rq_in_driver);
        if self.hw_tag != 1 && self.tot_rq_in_driver + self.queued > HW_QUEUE_THRESHOLD {
            let skip = self.in_service.is_some_and(|s| {
                let qu = &self.queues[s];
                qu.has_short_ttime && qu.dispatched + qu.queued < HW_QUEUE_THRESHOLD
            }) && self.tot_rq_in_driver < HW_QUEUE_THRESHOLD;
            if !skip {
                self.hw_tag_samples += 1;
                if self.hw_tag_samples > HW_QUEUE_SAMPLES {
                    self.hw_tag = i8::from(self.max_rq_in_driver > HW_QUEUE_THRESHOLD);
                    self.max_rq_in_driver = 0;
                    self.hw_tag_samples = 0;
                }
            }
        }
        self.tot_rq_in_driver = self.tot_rq_in_driver.saturating_sub(1);
        self.queues[q].dispatched -= 1;
        if self.queues[q].dispatched == 0 && !self.queues[q].busy {
            self.queues[q].budget_timeout = now;
            self.weights_remove(q);
        }
        self.queues[q].ttime.last_end = now;
        if self.in_service == Some(q) {
            if self.must_idle(q) {
                if self.queues[q].dispatched == 0 {
                    self.arm_idle_timer(q, now);
                }
            } else if self.may_expire_for_budget_timeout(q, now) {
                self.expire(q, false, Expire::BudgetTimeout, now);
            } else if self.queues[q].sort.is_empty() && (self.queues[q].dispatched == 0 || !self.better_to_idle(q)) {
                self.expire(q, false, Expire::NoMoreRequests, now);
            }
        }
    }

    fn queued(&self) -> usize {
        self.queued
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;
    use crate::block::deadline::testkit::*;
    use crate::block::Request;

    type Arrivals = Vec<(SimTime, Request)>;

    fn in_group(mut r: Request, g: u16) -> Request {
        r.prov.blkio_group = g;
        r
    }
    fn with_class(mut r: Request, class: u8, level: u8) -> Request {
        r.ioprio_class = class;
        r.ioprio_level = level;
        r
    }

    /// Each `(pid, group, class, level, start, stop)` keeps `depth` sequential sync reads of
    /// 64 KiB outstanding from `start`, re-issuing on completion until `stop`.
    #[allow(clippy::type_complexity)]
    fn readers(
        procs: &[(u32, u16, u8, u8, SimTime, SimTime)],
        depth: u64,
    ) -> (Arrivals, impl FnMut(&Done, SimTime) -> Vec<Request>) {
        let tag = Cell::new(0u64);
        let mut pos: BTreeMap<u32, u64> = BTreeMap::new();
        let make = move |pid: u32, g: u16, class: u8, level: u8, pos: &mut BTreeMap<u32, u64>| {
            let p = pos.entry(pid).or_insert(u64::from(pid) * 100_000_000);
            *p += 128;
            let t = tag.get();
            tag.set(t + 1);
            let mut r = read(*p, pid, t);
            r.sectors = 128;
            with_class(in_group(r, g), class, level)
        };
        let mut initial = Vec::new();
        for &(pid, g, class, level, start, _) in procs {
            for _ in 0..depth {
                initial.push((start, make(pid, g, class, level, &mut pos)));
            }
        }
        let procs = procs.to_vec();
        let source = move |d: &Done, now: SimTime| match procs.iter().find(|p| p.0 == d.pid) {
            Some(&(pid, g, class, level, _, stop)) if now < stop => vec![make(pid, g, class, level, &mut pos)],
            _ => Vec::new(),
        };
        (initial, source)
    }

    /// Sectors served per pid in `[from, to)` (by completion time).
    fn served(done: &[Done], pid: u32, from: SimTime, to: SimTime) -> u64 {
        done.iter().filter(|d| d.pid == pid && d.completed >= from && d.completed < to).count() as u64 * 128
    }

    /// 64 KiB in 250 µs: a 256 MB/s device.
    fn svc(_: &Request) -> u64 {
        250_000
    }

    #[test]
    fn defaults_are_the_kernels() {
        let p = BfqParams::default();
        assert_eq!((p.fifo_expire_sync, p.fifo_expire_async, p.slice_idle, p.timeout_sync), (125, 250, 8, 125));
        assert_eq!((p.back_seek_max, p.back_seek_penalty, p.wr_coeff, p.wr_min_idle_time_ms), (16384, 2, 30, 2000));
        assert!(p.low_latency && !p.rotational);
        assert_eq!((ioprio_weight(0), ioprio_weight(4), ioprio_weight(7)), (80, 40, 10));
        let s = Bfq::new(p, &[]);
        assert_eq!((s.max_budget, s.min_budget()), (16384, 512));
    }

    /// Documentation/block/bfq-iosched.rst: "each process (or group) is assigned a fraction of
    /// the device throughput proportional to its weight". Two groups of weights 300 and 100,
    /// each with a greedy sequential reader, share 3:1 — with and without weight raising (which
    /// raises queues inside their group, not the groups).
    #[test]
    fn group_weights_share_the_device_in_proportion() {
        for low_latency in [false, true] {
            let p = BfqParams { low_latency, ..Default::default() };
            let mut s = Bfq::new(p, &[1000, 300, 100]);
            let end = ms(6000);
            let (initial, mut src) = readers(&[(1, 1, 2, 4, ms(0), end), (2, 2, 2, 4, ms(0), end)], 4);
            let done = run(&mut s, initial, 4, &svc, Some(&mut src), end);
            let (a, b) = (served(&done, 1, ms(1000), end), served(&done, 2, ms(1000), end));
            let ratio = a as f64 / b as f64;
            assert!((2.7..=3.3).contains(&ratio), "low_latency {low_latency}: {a} vs {b} sectors, ratio {ratio:.2}");
            // Work conserving: the device is never idle while both read.
            let total = (a + b) as f64 / 128.0 * 0.25e-3;
            assert!(total > 4.9, "busy {total:.2} s of 5 s");
        }
    }

    /// The same property for queues of one group: ioprio levels 0 and 4 (weights 80 and 40).
    #[test]
    fn ioprio_weights_share_the_device_in_proportion() {
        let p = BfqParams { low_latency: false, ..Default::default() };
        let mut s = Bfq::new(p, &[1000]);
        let end = ms(4000);
        // Greedy readers (16 requests each for a device that holds 4): always backlogged, as the
        // guarantee assumes. (With only what the device holds outstanding, the lighter queue
        // runs dry at each dispatch and, having the smallest weight, is not idled for:
        // `bfq_asymmetric_scenario`.)
        let (initial, mut src) = readers(&[(1, 0, 2, 0, ms(0), end), (2, 0, 2, 4, ms(0), end)], 16);
        let done = run(&mut s, initial, 4, &svc, Some(&mut src), end);
        let ratio = served(&done, 1, ms(500), end) as f64 / served(&done, 2, ms(500), end) as f64;
        assert!((1.8..=2.2).contains(&ratio), "ratio {ratio:.2}");
    }

    /// bfq-iosched.rst, "ioprio classes": the IDLE class is served only when the others are
    /// idle (BFQ still gives it one request every `BFQ_CL_IDLE_TIMEOUT`, 200 ms, against
    /// starvation). An IDLE reader beside a BE reader gets almost nothing until the BE reader
    /// stops, then the whole device.
    #[test]
    fn the_idle_class_is_served_only_when_the_others_are_idle() {
        let mut s = Bfq::new(BfqParams::default(), &[1000]);
        let (initial, mut src) = readers(&[(1, 0, 2, 4, ms(0), ms(2000)), (2, 0, 3, 7, ms(0), ms(4000))], 4);
        let done = run(&mut s, initial, 4, &svc, Some(&mut src), ms(4000));
        let be = served(&done, 1, ms(100), ms(2000));
        let idle = served(&done, 2, ms(100), ms(2000));
        let share = idle as f64 / (be + idle) as f64;
        assert!(share < 0.01, "idle class got {share:.4} of the device while BE was busy ({idle} vs {be} sectors)");
        assert!(idle > 0, "one request per 200 ms keeps the idle class from starving");
        // Once BE is idle, the idle class gets the device.
        let after = served(&done, 2, ms(2100), ms(4000));
        assert!(after as f64 > 0.95 * 1.9 / 0.25e-3 * 128.0, "{after} sectors after BE stopped");
        // And without the BE reader it would have had the same from the start.
        let mut s = Bfq::new(BfqParams::default(), &[1000]);
        let (initial, mut src) = readers(&[(2, 0, 3, 7, ms(0), ms(1000))], 4);
        let alone = run(&mut s, initial, 4, &svc, Some(&mut src), ms(1000));
        assert!(served(&alone, 2, ms(0), ms(1000)) > 3800 * 128);
    }

    /// bfq-iosched.rst, `low_latency`: "the weight of a newly started interactive application
    /// is raised". A reader that starts at 5 s, while another has read for 5 s (its own raising
    /// long over: it read more than `max_service_from_wr` in its first 0.3 s), gets weight
    /// 40 × 30 and nearly the whole device while raised; without `low_latency` it gets half.
    #[test]
    fn low_latency_raises_a_newly_started_interactive_queue() {
        let share = |low_latency: bool| {
            let p = BfqParams { low_latency, ..Default::default() };
            let mut s = Bfq::new(p, &[1000]);
            let (initial, mut src) = readers(&[(1, 0, 2, 4, ms(0), ms(8000)), (2, 0, 2, 4, ms(5000), ms(8000))], 4);
            let mut weights = Vec::new();
            let done = {
                let done = run(&mut s, initial, 4, &svc, Some(&mut src), ms(5150));
                weights.push((s.sync_weight(1), s.sync_weight(2)));
                done
            };
            let (old, new) = (served(&done, 1, ms(5010), ms(5150)), served(&done, 2, ms(5010), ms(5150)));
            (new as f64 / (old + new) as f64, weights[0])
        };
        let (on, w) = share(true);
        assert_eq!(w, (Some(40), Some(1200)), "the old queue's raising ended, the new one's is on");
        assert!(on > 0.85, "raised: the new queue got {on:.2} of the device");
        let (off, w) = share(false);
        assert_eq!(w, (Some(40), Some(40)));
        assert!((0.4..=0.6).contains(&off), "not raised: {off:.2}");
    }

    /// Weight raising ends: for an I/O-bound queue after `max_service_from_wr` (120000 sectors)
    /// served while raised, for one that reads little after the raising duration (3.75 s).
    #[test]
    fn weight_raising_ends_after_its_service_or_its_duration() {
        // Greedy: 120000 sectors at 128 per 250 µs take about 0.25 s.
        let mut s = Bfq::new(BfqParams::default(), &[1000]);
        let (initial, mut src) = readers(&[(1, 0, 2, 4, ms(0), ms(1000))], 4);
        run(&mut s, initial, 4, &svc, Some(&mut src), ms(100));
        assert_eq!(s.sync_weight(1), Some(1200), "raised at first");
        let (initial, mut src) = readers(&[(1, 0, 2, 4, ms(0), ms(1000))], 4);
        let mut s = Bfq::new(BfqParams::default(), &[1000]);
        run(&mut s, initial, 4, &svc, Some(&mut src), ms(600));
        assert_eq!(s.sync_weight(1), Some(40), "after 120000 sectors");
        // Light: one 64 KiB read every 100 ms (3 % of the device) stays raised for 3.75 s.
        let light = |until: u64| {
            let mut s = Bfq::new(BfqParams::default(), &[1000]);
            let arrivals: Vec<(SimTime, Request)> = (0..until / 100)
                .map(|i| {
                    let mut r = read(i * 128, 1, i);
                    r.sectors = 128;
                    (ms(i * 100), r)
                })
                .collect();
            run(&mut s, arrivals, 4, &svc, None, ms(until));
            s.sync_weight(1)
        };
        assert_eq!(light(3500), Some(1200), "within the duration");
        assert_eq!(light(4200), Some(40), "after 3.75 s");
    }

    /// Queues created in a large burst (8 within 180 ms: processes started together) are not
    /// raised (`bfq_handle_burst`).
    /// The queue `pid`'s sync requests go to in the root group.
    fn queue_of(s: &Bfq, pid: u32) -> Option<usize> {
        s.qmap.get(&QKey::Sync { pid, group: 0 }).copied()
    }

    /// One 8-sector sync read of `pid` at `sector`, at `t_us` µs.
    fn read_at(t_us: u64, pid: u32, sector: u64, tag: u64) -> (SimTime, Request) {
        (SimTime::from_ns(t_us * 1000), read(sector, pid, tag))
    }

    #[test]
    fn a_queue_created_right_after_another_is_merged_into_it() {
        // bfq_do_or_sched_stable_merge: on a non-rotational device with command queueing, a
        // queue created within bfq_burst_interval (180 ms) of the last created one is merged
        // into it at once; one created 300 ms after is not, nor one 1 s after, which becomes
        // the last created.
        let go = |merging: bool, rotational: bool| {
            let mut s = Bfq::new(BfqParams { queue_merging: merging, rotational, ..Default::default() }, &[1000]);
            s.hw_tag = 1;
            let arrivals = vec![
                read_at(0, 1, 1_000_000, 1),
                read_at(50_000, 2, 20_000_000, 2),
                read_at(300_000, 3, 30_000_000, 3),
                read_at(1_000_000, 4, 40_000_000, 4),
                read_at(1_050_000, 5, 50_000_000, 5),
            ];
            run(&mut s, arrivals, 4, &svc, None, ms(2000));
            s
        };
        let s = go(true, false);
        assert_eq!(queue_of(&s, 2), queue_of(&s, 1), "created 50 ms after: merged");
        assert_ne!(queue_of(&s, 3), queue_of(&s, 1), "created 300 ms after: not merged");
        assert_eq!(queue_of(&s, 5), queue_of(&s, 4), "merged into the queue created 1 s after the first");
        assert!(s.bics[&QKey::Sync { pid: 2, group: 0 }].stably_merged);
        assert_eq!(s.merges, 2);
        // The mechanism off, or a rotational disk (a delayed merge, not yet due): no merge.
        for s in [go(false, false), go(true, true)] {
            assert_eq!((1..=5).filter_map(|p| queue_of(&s, p)).collect::<BTreeSet<_>>().len(), 5);
        }
    }

    #[test]
    fn on_a_rotational_disk_the_stable_merge_waits_600_ms() {
        // Delayed stable merge (bfq_setup_cooperator): scheduled at the creation, done at the
        // queue's first request 600 ms (bfq_late_stable_merging) after it, unless idling for
        // the queue boosts throughput.
        let mut s = Bfq::new(BfqParams { rotational: true, low_latency: false, ..Default::default() }, &[1000]);
        s.hw_tag = 1;
        let arrivals = vec![read_at(0, 1, 1_000_000, 1), read_at(50_000, 2, 20_000_000, 2), read_at(400_000, 2, 20_000_008, 3)];
        run(&mut s, arrivals, 4, &svc, None, ms(500));
        assert_ne!(queue_of(&s, 2), queue_of(&s, 1), "not before 600 ms");
        assert_eq!(s.bics[&QKey::Sync { pid: 2, group: 0 }].stable_merge, queue_of(&s, 1));
        run(&mut s, vec![read_at(700_000, 2, 20_000_016, 4)], 4, &svc, None, ms(1000));
        assert_eq!(queue_of(&s, 2), queue_of(&s, 1), "merged at its first request after 600 ms");
        assert_eq!(s.bics[&QKey::Sync { pid: 2, group: 0 }].stable_merge, None);
    }

    /// Queue 1 (pid 1, raised) in service and idling right after a read at 1,000,008 at 2.003
    /// s; queue 2 (pid 2) served at 2 s reads at `sector` at 2.010 s; async writes queued from
    /// 2.004 s make a third busy queue.
    fn close_request(p: BfqParams, hw_tag: i8, sector: u64) -> Bfq {
        let mut s = Bfq::new(p, &[1000]);
        s.hw_tag = hw_tag;
        let mut arrivals = vec![
            read_at(0, 1, 1_000_000, 1),
            read_at(1_000_000, 2, 50_000_000, 2),
            read_at(2_000_000, 2, 50_000_008, 3),
            read_at(2_003_000, 1, 1_000_008, 4),
            read_at(2_010_000, 2, sector, 5),
        ];
        for i in 0..6 {
            arrivals.push((ms(2004 + i), write(90_000_000 + i * 8, 9, 100 + i)));
        }
        run(&mut s, arrivals, 4, &svc, None, ms(3000));
        s
    }

    #[test]
    fn a_request_close_to_the_in_service_queues_last_one_merges_its_queue_into_it() {
        // bfq_setup_cooperator: queue 2's request lands 48 sectors from the end of the
        // in-service queue's last request (within BFQQ_CLOSE_THR, 8192), both queues served
        // within bfq_merge_time_limit (100 ms) of their busy periods' starts: queue 2's process
        // is redirected to queue 1.
        let rot = BfqParams { rotational: true, ..Default::default() };
        let s = close_request(rot.clone(), 1, 1_000_064);
        assert_eq!(queue_of(&s, 2), queue_of(&s, 1));
        assert!(s.queues[queue_of(&s, 1).unwrap()].coop);
        assert!(!s.bics[&QKey::Sync { pid: 2, group: 0 }].stably_merged);
        // Farther than BFQQ_CLOSE_THR; merging off; a non-rotational device with queueing.
        for s in [
            close_request(rot.clone(), 1, 1_000_016 + CLOSE_THR + 1),
            close_request(BfqParams { queue_merging: false, ..rot.clone() }, 1, 1_000_064),
            close_request(BfqParams::default(), 1, 1_000_064),
        ] {
            assert_ne!(queue_of(&s, 2), queue_of(&s, 1));
            assert_eq!(s.merges, 0);
        }
        // A non-rotational device whose queueing is not (yet) detected merges as well.
        let s = close_request(BfqParams::default(), -1, 1_000_064);
        assert_eq!(queue_of(&s, 2), queue_of(&s, 1));
    }

    #[test]
    fn a_merged_queue_that_turns_seeky_is_split() {
        // After the merge above, the two processes read far apart (1,000,000 and 60,000,000
        // on): the shared queue's seek history fills, it is found seeky when it expires, and
        // the next request of either process gets a queue of its own again (bfq_split_bfqq);
        // the other keeps the shared queue.
        let rot = BfqParams { rotational: true, ..Default::default() };
        let mut s = close_request(rot, 1, 1_000_064);
        let shared = queue_of(&s, 1).unwrap();
        assert_eq!(queue_of(&s, 2), Some(shared));
        let mut arrivals = Vec::new();
        // 25 ms apart: the queue expires (too idle) after each.
        for i in 0..30u64 {
            let t = 3_000_000 + i * 50_000;
            arrivals.push(read_at(t, 1, 1_000_000 + i * 64, 200 + 2 * i));
            arrivals.push(read_at(t + 25_000, 2, 60_000_000 + i * 64, 201 + 2 * i));
        }
        run(&mut s, arrivals, 4, &svc, None, ms(5000));
        assert!(s.splits >= 1, "split");
        assert_ne!(queue_of(&s, 2), queue_of(&s, 1));
        assert!(!s.queues[queue_of(&s, 2).unwrap()].coop || !s.queues[queue_of(&s, 1).unwrap()].coop);
    }

    #[test]
    fn a_large_burst_of_new_queues_is_not_raised() {
        // Burst detection alone: with merging, these queues (created 10 ms apart) are merged
        // stably into the first (`a_queue_created_right_after_another_is_merged_into_it`).
        let mut s = Bfq::new(BfqParams { queue_merging: false, ..Default::default() }, &[1000]);
        let procs: Vec<_> = (1..=10).map(|pid| (pid, 0, 2, 4, ms(u64::from(pid) * 10), ms(1000))).collect();
        let (initial, mut src) = readers(&procs, 1);
        run(&mut s, initial, 4, &svc, Some(&mut src), ms(300));
        let raised = (1..=10).filter(|&pid| s.sync_weight(pid) == Some(1200)).count();
        assert!(raised < 8, "{raised} of 10 queues of a burst raised");
        assert!(s.sync_weight(10) == Some(40), "the queues after the threshold are not raised");
    }

    /// Linux 5.12+ (`idling_needed_for_service_guarantees`, "block, bfq: do not expire a queue
    /// when it is the only busy one"): a sync queue that is the only busy one keeps the device
    /// plugged while its request is in flight and then for its idle wait, so a lower-weight
    /// queue that becomes busy meanwhile gets its request dispatched only after the in-service
    /// queue's next one (asymmetric weights then keep the plug). Without the rule (5.x before
    /// 5.12) the only busy queue is expired as soon as it empties and the newcomer's request
    /// reaches the device first.
    #[test]
    fn the_only_busy_queue_keeps_the_device_plugged() {
        let order = |plug_only_busy: bool| {
            let p = BfqParams { low_latency: false, plug_only_busy, ..Default::default() };
            let mut s = Bfq::new(p, &[1000]);
            // A device that queues commands (this VM's virtio disk: BFQ's estimate is 1 there),
            // where idling does not boost throughput: only the service guarantees keep a plug.
            s.hw_tag = 1;
            let mut slab = ReqSlab::default();
            let mut out = Vec::new();
            let us = |x: u64| SimTime::from_ns(x * 1000);
            let take = |s: &mut Bfq, slab: &ReqSlab, t: SimTime, out: &mut Vec<ReqId>| {
                while let Dispatch::Request(id) = s.dispatch(slab, 0, t) {
                    out.push(id);
                }
            };
            // A (ioprio level 0, weight 80) reads; its request is at the device.
            let a1 = slab.insert(with_class(read(0, 1, 1), 2, 0));
            s.add(a1, &slab, us(0));
            take(&mut s, &slab, us(0), &mut out);
            // B (level 4, weight 40) becomes busy while A1 is in flight.
            let b1 = slab.insert(with_class(read(1_000_000, 2, 2), 2, 4));
            s.add(b1, &slab, us(20));
            take(&mut s, &slab, us(20), &mut out);
            // A1 completes; A's next read comes 100 us later (a short think time).
            s.completed(a1, &slab, us(200));
            take(&mut s, &slab, us(200), &mut out);
            let a2 = slab.insert(with_class(read(8, 1, 3), 2, 0));
            s.add(a2, &slab, us(300));
            take(&mut s, &slab, us(300), &mut out);
            s.completed(a2, &slab, us(500));
            take(&mut s, &slab, us(500), &mut out);
            // Past A's idle wait (8 ms), B is served in any case.
            take(&mut s, &slab, ms(20), &mut out);
            let name = |id: ReqId| {
                if id == a1 {
                    "A1"
                } else if id == a2 {
                    "A2"
                } else if id == b1 {
                    "B1"
                } else {
                    "?"
                }
            };
            out.into_iter().map(name).collect::<Vec<_>>()
        };
        assert_eq!(order(true), ["A1", "A2", "B1"], "plugged for the only busy queue");
        assert_eq!(order(false), ["A1", "B1", "A2"], "without the rule B fills the device first");
    }

    /// `bfq_bfqq_handle_idle_busy_switch`: a queue that becomes busy expires the in-service
    /// one when it "is in a higher priority class, or has a higher weight than the in-service
    /// queue" (`bfq_bfqq_higher_class_or_weight`), and a new queue is interactive, so raised
    /// to 40 × 30. A greedy reader A (its own raising long over) is in service when a new
    /// process B reads once: in the root group beside A, B's raised queue outweighs A's and
    /// is served at once. With A and B in groups of their own of the same weight, the kernel
    /// compares the groups' weights (equal), and A keeps the device, idling for it being
    /// needed (two groups with pending requests), until its budget is used up.
    #[test]
    fn a_new_raised_queue_preempts_a_lighter_in_service_queue() {
        let wait = |weights: &[u32], ga: u16, gb: u16| {
            let mut s = Bfq::new(BfqParams::default(), weights);
            let (mut initial, mut src) = readers(&[(1, ga, 2, 4, ms(0), ms(3000))], 4);
            let mut b = in_group(read(500_000_000, 2, 1_000_000), gb);
            b.sectors = 8;
            initial.push((ms(1000), b));
            let done = run(&mut s, initial, 4, &svc, Some(&mut src), ms(1500));
            assert_eq!(s.sync_weight(1).or(Some(40)), Some(40), "A's raising is over");
            let d = done.iter().find(|d| d.pid == 2).expect("B is served");
            (d.dispatched.ns() - d.submitted.ns()) as f64 / 1e6
        };
        let root = wait(&[1000], 0, 0);
        let groups = wait(&[1000, 1000, 1000], 2, 1);
        assert!(root < 0.5, "B preempts in the root group: dispatched after {root:.3} ms");
        assert!(groups > 4.0 * root.max(0.25), "B in an equal group waits for A's budget: {groups:.3} ms (root {root:.3})");
    }

    /// `bfq_add_bfqq_busy` and `__bfq_entity_update_weight_prio` put a queue in the weights
    /// tree only while it is not weight-raised: a raised newcomer beside a default-weight
    /// queue leaves the scenario symmetric (so the other queue is not idled for), while two
    /// unraised queues of different ioprio weights make it asymmetric.
    #[test]
    fn weight_raised_queues_are_not_in_the_weights_tree() {
        let busy_pair = |low_latency: bool, level_b: u8| {
            let mut s = Bfq::new(BfqParams { low_latency, ..Default::default() }, &[1000]);
            let mut slab = ReqSlab::default();
            for (i, (pid, level)) in [(1u32, 4u8), (2, level_b)].into_iter().enumerate() {
                let id = slab.insert(with_class(read(i as u64 * 1_000_000, pid, i as u64), 2, level));
                s.add(id, &slab, ms(0));
            }
            (s.wr_busy_queues, s.asymmetric(None))
        };
        assert_eq!(busy_pair(true, 4), (2, false), "two raised queues: neither counted");
        assert_eq!(busy_pair(false, 4), (0, false), "equal weights");
        assert_eq!(busy_pair(false, 0), (0, true), "weights 40 and 80: asymmetric");
        // One raised (new, default weight) beside one that is not (ioprio level 0 is not a
        // default weight, so it is not deemed interactive): only the unraised one counts.
        assert_eq!(busy_pair(true, 0), (1, false), "the raised queue's 1200 is not in the tree");
    }

    /// The weight-raising duration before BFQ has a peak-rate estimate: 1.5 × `ref_wr_duration`
    /// (`bfq_init_queue`), 3750 ms on a non-rotational device and 10500 ms on a rotational one,
    /// which a device file's `rotational` selects through `SchedulerConfig::for_device`.
    #[test]
    fn the_raising_duration_follows_the_rotational_flag() {
        assert_eq!((initial_wr_duration_ms(false), initial_wr_duration_ms(true)), (3750, 10500));
        // A light reader (64 KiB every 100 ms) raised at its first request, seen at 5 s.
        let raised_at_5s = |s: &mut Bfq| {
            let arrivals: Vec<(SimTime, Request)> = (0..50)
                .map(|i| {
                    let mut r = read(i * 128, 1, i);
                    r.sectors = 128;
                    (ms(i * 100), r)
                })
                .collect();
            let done = run(s, arrivals, 4, &svc, None, ms(5000));
            done.len()
        };
        for (rot, want) in [(false, Some(40)), (true, Some(1200))] {
            let mut s = Bfq::new(BfqParams { rotational: rot, ..Default::default() }, &[1000]);
            assert_eq!(raised_at_5s(&mut s), 50);
            assert_eq!(s.sync_weight(1), want, "rotational {rot}");
        }
        // A device file's flag: the storage builds its scheduler from `for_device`.
        use super::super::{cfq::CfqParams, SchedulerConfig};
        let bfq = SchedulerConfig::Bfq(BfqParams::default());
        assert_eq!(bfq.for_device(true), SchedulerConfig::Bfq(BfqParams { rotational: true, ..Default::default() }));
        assert_eq!(bfq.for_device(false), bfq);
        let cfq = SchedulerConfig::Cfq(CfqParams::default());
        assert_eq!(cfq.for_device(true), SchedulerConfig::Cfq(CfqParams { rotational: true, ..Default::default() }));
        // An explicit duration wins over the flag.
        let mut s = Bfq::new(BfqParams { rotational: true, wr_duration_ms: 3000, ..Default::default() }, &[1000]);
        raised_at_5s(&mut s);
        assert_eq!(s.sync_weight(1), Some(40));
    }

    /// Every request comes back once; flushes first; merged-away requests are forgotten.
    #[test]
    fn every_request_is_dispatched_once_and_flushes_go_first() {
        let mut s = Bfq::new(BfqParams::default(), &[1000, 200]);
        let mut slab = ReqSlab::default();
        let mut ids = Vec::new();
        for i in 0..40u64 {
            let r =
                if i % 3 == 0 { write(i * 1000, 7, i) } else { in_group(read(i * 1000, (i % 4) as u32 + 1, i), (i % 2) as u16) };
            let id = slab.insert(r);
            s.add(id, &slab, ms(0));
            ids.push(id);
        }
        let f = slab.insert(req(ReqOp::Flush, 0, 0, true, 9, 99));
        s.add(f, &slab, ms(0));
        s.remove_merged(ids[5], &slab);
        assert_eq!(s.queued(), 40);
        assert_eq!(s.dispatch(&slab, 0, ms(0)), Dispatch::Request(f));
        let mut seen = BTreeSet::new();
        let mut t = 0u64;
        while seen.len() < 39 {
            t += 1;
            assert!(t < 10_000, "stuck with {} dispatched", seen.len());
            match s.dispatch(&slab, 0, ms(t)) {
                Dispatch::Request(id) => {
                    assert!(seen.insert(id), "dispatched twice");
                    slab.get_mut(id).times.dispatched = Some(ms(t));
                    s.completed(id, &slab, ms(t));
                }
                Dispatch::WaitUntil(_) | Dispatch::Empty => {}
            }
        }
        assert!(!seen.contains(&ids[5]));
        assert_eq!(s.queued(), 0);
    }
}
