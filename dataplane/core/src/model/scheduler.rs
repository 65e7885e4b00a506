//! Egress scheduling of one port: what leaves next, and when the line is free again.
//!
//! Models SONiC's `SCHEDULER` table (`docs/scheduling-wred.md`; SAI `SAI_SCHEDULER_ATTR_*`) the way a
//! Broadcom XGS MMU applies it to the eight unicast queues of a port, plus the port's line pacing. Each
//! [`Scheduler::dequeue`] picks one frame in this order:
//!
//! 1. **Minimum bandwidth** (`cir`/`cbs`, SAI `MIN_BANDWIDTH_RATE`/`_BURST_RATE`): a queue whose min-bandwidth
//!    token bucket can pay for its head frame is served before anything else, round-robin among such queues.
//!    The bucket meters everything the queue sends (whichever step served it, floored at empty), so a queue
//!    gets `max(cir, its weighted share)`, as Broadcom's min shaper which measures the queue's output.
//! 2. **STRICT** queues: highest `priority` first; equal priorities, and queues without one (which rank below
//!    every explicit priority), go by queue index, higher first (queue 7 highest, as Broadcom's SP cosq
//!    order that SONiC inherits). A strict queue is served until it is empty, paused or shaped.
//! 3. **Weighted** queues, one round-robin round over queue indices:
//!    - DWRR: classic deficit round robin (Shreedhar & Varghese) on frame bytes. A visit adds a quantum of
//!      `weight × DWRR_BASE_QUANTUM_BYTES` ([`DWRR_BASE_QUANTUM_BYTES`] = 16) to the queue's deficit; the
//!      queue then sends while its head fits the deficit. The quantum may be far smaller than a frame: the
//!      deficit accumulates over visits (computed in one step, not by spinning empty rounds). A small quantum
//!      interleaves queues finely, which is what sonic-mgmt's WRRtest expects (all queues finish together).
//!    - WRR: packet counts, `weight` packets per visit.
//!    - A port whose weighted queues mix DWRR and WRR runs them as one byte-deficit round (WRR queues are
//!      then DWRR with the same weight): Broadcom programs one scheduling mode per port
//!      (`bcm_cosq_port_sched_set`), and a packet count cannot share a round with a byte count.
//!
//!    A queue emptied by a dequeue loses its deficit (classic DRR). A queue that is blocked (PFC-paused or held)
//!    or shaper-limited is skipped: it gains no quantum while skipped, but keeps its deficit and its place in
//!    the round, so it gets its share back when it returns. Items are never reordered within a queue.
//!
//! **Shapers** (`pir`/`pbs`, SAI `MAX_BANDWIDTH_RATE`/`_BURST_RATE`) are token buckets per queue and, from
//! `PORT_QOS_MAP|<port>|scheduler`, per port. `meter_type` selects bytes/s and bytes, or packets/s and packets.
//! A byte meter counts a frame's `wire_len` (the bytes `show queue counters` counts: no FCS, preamble or
//! IFG); a packet meter counts 1. A queue's head may go when its bucket holds at least `min(cost, burst)`; it
//! then pays its full cost, which can leave the bucket in debt when the burst is smaller than a frame (so a
//! burst below one frame still yields exactly the configured rate). The port shaper gates the whole port
//! instead: it is open while not in debt, and whatever frame the queue scheduler picks then pays for itself
//! (a per-frame test there would let small frames overtake large ones of other queues and break DWRR
//! fairness). Tokens are capped at the burst; an absent `pbs`/`cbs` means one maximum frame
//! ([`DEFAULT_BURST_BYTES`], or 1 packet). A rate of 0 means no bucket (SAI's default of 0 = unlimited / no
//! guarantee). Buckets start full.
//!
//! **Policer** (the "supervision" of the strict CNP queue in UCloud's RoCE design article, QoS design
//! section; `docs/scheduling-wred.md`, "Shapers, the port shaper and the policer"): a STRICT queue with
//! `policer: true` and a `pir` has its bucket applied at [`Scheduler::enqueue`]: a frame the bucket cannot pay
//! for is refused (`Err`, the caller counts the drop) instead of waiting, so the strict queue cannot starve
//! the weighted ones. On a non-strict queue `policer` is ignored and `pir` shapes.
//!
//! **Line pacing**: a frame occupies the line for `(wire_len + 24) × 8` bits ([`WIRE_OVERHEAD_BYTES`]: FCS,
//! preamble/SFD, IFG) at `speed_mbps`. Line time is kept in picoseconds with the sub-picosecond remainder
//! carried, so a port sends exactly its bit rate over any run; it is reported in ns, rounded up. A frame
//! dequeued exactly at [`Scheduler::line_free_at_ns`] starts at the exact (sub-ns) instant the previous one
//! ended, so back-to-back frames do not drift by the rounding.
//!
//! Everything is integer arithmetic: bucket tokens are kept ×1e9 so that refilling adds `rate × elapsed_ns`
//! exactly, in `i128`/`u128`. Time is passed in (ns); nothing here reads a clock.

use super::config::{MeterType, SchedulerKind, SchedulerProfile};
use std::collections::VecDeque;

/// An item an egress queue holds.
pub trait Queued {
    /// Frame bytes without FCS.
    fn wire_len(&self) -> usize;
}

/// Bytes a frame occupies on the line beyond `wire_len`: FCS 4 + preamble/SFD 8 + IFG 12.
pub const WIRE_OVERHEAD_BYTES: u64 = 24;

/// DWRR quantum per unit of `weight`, in bytes. Weight 14 (SONiC's lossy `scheduler.0`) is a 224-byte quantum.
pub const DWRR_BASE_QUANTUM_BYTES: u64 = 16;

/// Burst of a byte-metered bucket without `pbs`/`cbs`: one maximum frame (9216-byte MTU + Ethernet header,
/// 802.1Q tag and FCS).
pub const DEFAULT_BURST_BYTES: u64 = 9216 + 14 + 4 + 4;

/// Burst of a packet-metered bucket without `pbs`/`cbs`.
pub const DEFAULT_BURST_PACKETS: u64 = 1;

const QUEUES: usize = 8;
/// Bucket tokens are stored ×1e9, so rate (per second) × elapsed ns adds whole scaled tokens.
const TOKEN_SCALE: i128 = 1_000_000_000;
const PS_PER_NS: u128 = 1000;
/// 1 bit at 1 Mb/s lasts 1 µs = 1e6 ps.
const PS_PER_BIT_AT_1_MBPS: u128 = 1_000_000;

/// How one egress queue is scheduled (from its `QUEUE|<port>|<q>` `scheduler`).
pub use super::config::SchedulerParams as QueueSettings;

impl QueueSettings {
    /// The settings of a `SCHEDULER` profile; `None` (no `scheduler` on the queue) is DWRR weight 1, unshaped.
    pub fn from_profile(profile: Option<&SchedulerProfile>) -> Self {
        profile.map_or_else(QueueSettings::default, |p| p.params)
    }

    fn is_weighted(&self) -> bool {
        matches!(self.kind, SchedulerKind::Dwrr | SchedulerKind::Wrr)
    }

    /// The enqueue-time policer applies (instead of a dequeue-time shaper).
    fn is_policed(&self) -> bool {
        self.kind == SchedulerKind::Strict && self.policer && self.pir.is_some_and(|r| r > 0)
    }
}

/// How one port is scheduled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortSettings {
    pub speed_mbps: u32,
    pub queues: [QueueSettings; QUEUES],
    /// The port shaper (`PORT_QOS_MAP|<port>|scheduler`): meter type, `pir`, `pbs`.
    pub shaper: Option<(MeterType, u64, u64)>,
}

impl PortSettings {
    /// A port whose queues have no scheduler (DWRR weight 1 each) and no port shaper.
    pub fn unshaped(speed_mbps: u32) -> Self {
        PortSettings { speed_mbps, queues: [QueueSettings::default(); QUEUES], shaper: None }
    }
}

/// A token bucket (shaper, policer or minimum-bandwidth meter).
#[derive(Debug, Clone, PartialEq, Eq)]
struct TokenBucket {
    meter: MeterType,
    rate_per_s: u64,
    burst: u64,
    /// Tokens × [`TOKEN_SCALE`] as of `updated_ns`; at most `burst`, negative after a frame larger than the burst.
    tokens_scaled: i128,
    updated_ns: u64,
}

impl TokenBucket {
    /// A full bucket, or `None` for rate 0 (no limit / no guarantee).
    fn new(meter: MeterType, rate_per_s: u64, burst: Option<u64>, now_ns: u64) -> Option<Self> {
        if rate_per_s == 0 {
            return None;
        }
        let burst = burst.unwrap_or(match meter {
            MeterType::Bytes => DEFAULT_BURST_BYTES,
            MeterType::Packets => DEFAULT_BURST_PACKETS,
        });
        let tokens_scaled = i128::from(burst) * TOKEN_SCALE;
        Some(TokenBucket { meter, rate_per_s, burst, tokens_scaled, updated_ns: now_ns })
    }

    /// As [`TokenBucket::new`], carrying the fill level of `old` (capped at the new burst) when the meter
    /// type is unchanged, so reconfiguring does not hand out a fresh burst.
    fn reconfigured(
        old: Option<&TokenBucket>,
        meter: MeterType,
        rate_per_s: u64,
        burst: Option<u64>,
        now_ns: u64,
    ) -> Option<Self> {
        let mut bucket = TokenBucket::new(meter, rate_per_s, burst, now_ns)?;
        if let Some(old) = old.filter(|old| old.meter == meter) {
            bucket.tokens_scaled = old.tokens_at(now_ns).min(bucket.cap_scaled());
            bucket.updated_ns = old.updated_ns.max(now_ns);
        }
        Some(bucket)
    }

    fn cap_scaled(&self) -> i128 {
        i128::from(self.burst) * TOKEN_SCALE
    }

    fn cost(&self, wire_len: usize) -> u64 {
        match self.meter {
            MeterType::Bytes => wire_len as u64,
            MeterType::Packets => 1,
        }
    }

    /// What the bucket must hold for the frame to go.
    fn threshold_scaled(&self, wire_len: usize) -> i128 {
        i128::from(self.cost(wire_len).min(self.burst)) * TOKEN_SCALE
    }

    fn tokens_at(&self, now_ns: u64) -> i128 {
        let cap = self.cap_scaled();
        if self.tokens_scaled >= cap {
            return self.tokens_scaled;
        }
        let elapsed_ns = now_ns.saturating_sub(self.updated_ns);
        let room = (cap - self.tokens_scaled) as u128;
        let refill = u128::from(self.rate_per_s) * u128::from(elapsed_ns);
        self.tokens_scaled + refill.min(room) as i128
    }

    fn refill(&mut self, now_ns: u64) {
        self.tokens_scaled = self.tokens_at(now_ns);
        self.updated_ns = self.updated_ns.max(now_ns);
    }

    fn allows(&self, now_ns: u64, wire_len: usize) -> bool {
        self.tokens_at(now_ns) >= self.threshold_scaled(wire_len)
    }

    /// Not in debt: the port shaper's gate, which does not depend on the frame the port sends next.
    fn is_open(&self, now_ns: u64) -> bool {
        self.tokens_at(now_ns) >= 0
    }

    /// Earliest instant >= now at which [`TokenBucket::allows`] holds.
    fn ready_at(&self, now_ns: u64, wire_len: usize) -> u64 {
        self.holds_at(now_ns, self.threshold_scaled(wire_len))
    }

    /// Earliest instant >= now at which [`TokenBucket::is_open`] holds.
    fn open_at(&self, now_ns: u64) -> u64 {
        self.holds_at(now_ns, 0)
    }

    /// Earliest instant >= now at which the bucket holds `threshold_scaled`.
    fn holds_at(&self, now_ns: u64, threshold_scaled: i128) -> u64 {
        let from_ns = now_ns.max(self.updated_ns);
        let missing = threshold_scaled - self.tokens_at(from_ns);
        if missing <= 0 {
            return from_ns;
        }
        let wait_ns = (missing as u128).div_ceil(u128::from(self.rate_per_s));
        from_ns.saturating_add(u64::try_from(wait_ns).unwrap_or(u64::MAX))
    }

    /// Takes the frame's cost. Without `allow_debt` the bucket stops at empty (a meter that merely measures
    /// traffic it did not admit).
    fn charge(&mut self, now_ns: u64, wire_len: usize, allow_debt: bool) {
        self.refill(now_ns);
        let after = self.tokens_scaled - i128::from(self.cost(wire_len)) * TOKEN_SCALE;
        self.tokens_scaled = if allow_debt { after } else { after.max(self.tokens_scaled.min(0)) };
    }
}

/// The unit of the weighted round's deficits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CreditUnit {
    /// DWRR (or a DWRR/WRR mix): bytes, quantum `weight × DWRR_BASE_QUANTUM_BYTES`.
    Bytes,
    /// WRR only: packets, quantum `weight`.
    Packets,
}

impl CreditUnit {
    fn of(queues: &[QueueSettings; QUEUES]) -> Self {
        let mut weighted = queues.iter().filter(|q| q.is_weighted()).peekable();
        if weighted.peek().is_some() && weighted.all(|q| q.kind == SchedulerKind::Wrr) {
            CreditUnit::Packets
        } else {
            CreditUnit::Bytes
        }
    }

    fn quantum(self, weight: u8) -> u64 {
        let weight = u64::from(weight.max(1));
        match self {
            CreditUnit::Bytes => weight * DWRR_BASE_QUANTUM_BYTES,
            CreditUnit::Packets => weight,
        }
    }

    fn cost(self, wire_len: usize) -> u64 {
        match self {
            CreditUnit::Bytes => wire_len as u64,
            CreditUnit::Packets => 1,
        }
    }
}

/// Which step of the service order picked a queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    MinBandwidth,
    Strict,
    Weighted,
}

#[derive(Debug, Clone)]
struct QueueState<T> {
    items: VecDeque<T>,
    bytes: u64,
    settings: QueueSettings,
    /// `pir`/`pbs` applied at dequeue.
    shaper: Option<TokenBucket>,
    /// `pir`/`pbs` applied at enqueue (STRICT with `policer`).
    policer: Option<TokenBucket>,
    /// `cir`/`cbs`.
    min_bandwidth: Option<TokenBucket>,
    /// DRR deficit in the port's [`CreditUnit`].
    deficit: u64,
}

impl<T> QueueState<T> {
    fn new(settings: QueueSettings, now_ns: u64) -> Self {
        let mut queue = QueueState {
            items: VecDeque::new(),
            bytes: 0,
            settings,
            shaper: None,
            policer: None,
            min_bandwidth: None,
            deficit: 0,
        };
        queue.configure(settings, now_ns);
        queue
    }

    fn configure(&mut self, settings: QueueSettings, now_ns: u64) {
        let meter = settings.meter_type;
        let pir = settings.pir.unwrap_or(0);
        let old_max = self.policer.as_ref().or(self.shaper.as_ref());
        let max_bucket = TokenBucket::reconfigured(old_max, meter, pir, settings.pbs, now_ns);
        let cir = settings.cir.unwrap_or(0);
        let min_bucket =
            TokenBucket::reconfigured(self.min_bandwidth.as_ref(), meter, cir, settings.cbs, now_ns);
        (self.shaper, self.policer) =
            if settings.is_policed() { (None, max_bucket) } else { (max_bucket, None) };
        self.min_bandwidth = min_bucket;
        self.settings = settings;
    }
}

/// The egress queues of one port, their scheduler and the port's line.
#[derive(Debug, Clone)]
pub struct Scheduler<T: Queued> {
    speed_mbps: u32,
    queues: [QueueState<T>; QUEUES],
    port_shaper: Option<TokenBucket>,
    unit: CreditUnit,
    /// The weighted queue whose DRR turn is in progress.
    turn: Option<usize>,
    /// The weighted queue visited last; the round continues after it.
    last_visited: usize,
    /// The queue the minimum-bandwidth step served last.
    min_bandwidth_last: usize,
    /// The line is busy until `line_free_at_ps + line_remainder / speed_mbps` ps.
    line_free_at_ps: u128,
    line_remainder: u64,
    total_len: usize,
}

impl<T: Queued> Scheduler<T> {
    pub fn new(settings: PortSettings) -> Self {
        let PortSettings { speed_mbps, queues, shaper } = settings;
        Scheduler {
            speed_mbps,
            queues: std::array::from_fn(|q| QueueState::new(queues[q], 0)),
            port_shaper: shaper.and_then(|(meter, pir, pbs)| TokenBucket::new(meter, pir, Some(pbs), 0)),
            unit: CreditUnit::of(&queues),
            turn: None,
            last_visited: QUEUES - 1,
            min_bandwidth_last: QUEUES - 1,
            line_free_at_ps: 0,
            line_remainder: 0,
            total_len: 0,
        }
    }

    /// Applies new settings, keeping queued items, the line state and (where the meter type is unchanged)
    /// bucket fill levels. A queue keeps its deficit only if its kind and weight and the port's credit unit
    /// are unchanged; otherwise it starts the round afresh at 0.
    pub fn reconfigure(&mut self, settings: PortSettings, now_ns: u64) {
        let PortSettings { speed_mbps, queues, shaper } = settings;
        if speed_mbps != self.speed_mbps {
            // The remainder is in units of the old speed: round the line time up to the next ps.
            self.line_free_at_ps += u128::from(self.line_remainder > 0);
            self.line_remainder = 0;
            self.speed_mbps = speed_mbps;
        }
        let unit = CreditUnit::of(&queues);
        for (q, new) in queues.into_iter().enumerate() {
            let state = &mut self.queues[q];
            let old = state.settings;
            let same_round = unit == self.unit && old.kind == new.kind && old.weight == new.weight;
            if !(same_round && new.is_weighted()) {
                state.deficit = 0;
                if self.turn == Some(q) {
                    self.turn = None;
                }
            }
            state.configure(new, now_ns);
        }
        self.unit = unit;
        self.port_shaper = shaper.and_then(|(meter, pir, pbs)| {
            TokenBucket::reconfigured(self.port_shaper.as_ref(), meter, pir, Some(pbs), now_ns)
        });
    }

    /// Appends an item to a queue. `Err(item)` when the queue is a policed STRICT queue whose bucket cannot
    /// pay for the frame (the caller counts the drop).
    pub fn enqueue(&mut self, queue: u8, item: T, now_ns: u64) -> Result<(), T> {
        let state = &mut self.queues[index(queue)];
        let wire_len = item.wire_len();
        if let Some(policer) = &mut state.policer {
            if !policer.allows(now_ns, wire_len) {
                return Err(item);
            }
            policer.charge(now_ns, wire_len, true);
        }
        state.bytes += wire_len as u64;
        state.items.push_back(item);
        self.total_len += 1;
        Ok(())
    }

    /// The next item to put on the line, if the line is free at `now_ns` and some queue not in `blocked`
    /// (bit q = queue q paused by PFC or held) is eligible under its shapers. Marks the line busy for the
    /// frame's serialisation time.
    pub fn dequeue(&mut self, now_ns: u64, blocked: u8) -> Option<(u8, T)> {
        if now_ns < self.line_free_at_ns() {
            return None;
        }
        let (q, step) = self.pick(now_ns, blocked)?;
        let unit = self.unit;
        let state = &mut self.queues[q];
        let item = state.items.pop_front()?;
        let wire_len = item.wire_len();
        state.bytes -= wire_len as u64;
        self.total_len -= 1;
        if let Some(shaper) = &mut state.shaper {
            shaper.charge(now_ns, wire_len, true);
        }
        if let Some(meter) = &mut state.min_bandwidth {
            meter.charge(now_ns, wire_len, step == Step::MinBandwidth);
        }
        if let Some(shaper) = &mut self.port_shaper {
            shaper.charge(now_ns, wire_len, true);
        }
        match step {
            Step::MinBandwidth => self.min_bandwidth_last = q,
            Step::Weighted => state.deficit -= unit.cost(wire_len),
            Step::Strict => {}
        }
        if state.items.is_empty() {
            state.deficit = 0;
            if self.turn == Some(q) {
                self.turn = None;
            }
        }
        self.occupy_line(now_ns, wire_len);
        Some((q as u8, item))
    }

    /// The line carries a frame that is not from a queue (a PFC frame): busy for its serialisation time from
    /// max(now, line free).
    pub fn occupy_line(&mut self, now_ns: u64, wire_len: usize) {
        if now_ns > self.line_free_at_ns() {
            // The line was idle: the frame starts now.
            self.line_free_at_ps = u128::from(now_ns) * PS_PER_NS;
            self.line_remainder = 0;
        }
        // Otherwise it follows the previous frame from the exact instant that one ends.
        let bits = (wire_len as u128 + u128::from(WIRE_OVERHEAD_BYTES)) * 8;
        let speed = u128::from(self.speed_mbps.max(1));
        let scaled = bits * PS_PER_BIT_AT_1_MBPS + u128::from(self.line_remainder);
        self.line_free_at_ps += scaled / speed;
        self.line_remainder = (scaled % speed) as u64;
    }

    /// When the frame on the line ends, rounded up to the ns.
    pub fn line_free_at_ns(&self) -> u64 {
        let ps = self.line_free_at_ps + u128::from(self.line_remainder > 0);
        u64::try_from(ps.div_ceil(PS_PER_NS)).unwrap_or(u64::MAX)
    }

    /// Earliest instant >= now at which `dequeue(…, blocked)` could return `Some` (line free and the shapers
    /// of some non-blocked queue hold enough for its head), `None` if every non-blocked queue is empty.
    pub fn next_ready_at(&self, now_ns: u64, blocked: u8) -> Option<u64> {
        let queue_ready = (0..QUEUES)
            .filter(|&q| blocked & (1 << q) == 0)
            .filter_map(|q| {
                let state = &self.queues[q];
                let head = state.items.front()?;
                Some(state.shaper.as_ref().map_or(now_ns, |shaper| shaper.ready_at(now_ns, head.wire_len())))
            })
            .min()?;
        let port_open = self.port_shaper.as_ref().map_or(now_ns, |shaper| shaper.open_at(now_ns));
        Some(queue_ready.max(port_open).max(self.line_free_at_ns()).max(now_ns))
    }

    /// Items waiting in one queue.
    pub fn len(&self, queue: u8) -> usize {
        self.queues[index(queue)].items.len()
    }

    /// Bytes (`wire_len`) waiting in one queue.
    pub fn bytes(&self, queue: u8) -> u64 {
        self.queues[index(queue)].bytes
    }

    /// Items waiting in all queues.
    pub fn total_len(&self) -> usize {
        self.total_len
    }

    pub fn is_empty(&self) -> bool {
        self.total_len == 0
    }

    /// Empties a queue (the watchdog's drop action), returning its items in order.
    pub fn flush(&mut self, queue: u8) -> Vec<T> {
        let q = index(queue);
        let state = &mut self.queues[q];
        let items: Vec<T> = state.items.drain(..).collect();
        state.bytes = 0;
        state.deficit = 0;
        self.total_len -= items.len();
        if self.turn == Some(q) {
            self.turn = None;
        }
        items
    }

    /// The items of one queue, head first.
    pub fn iter(&self, queue: u8) -> impl Iterator<Item = &T> {
        self.queues[index(queue)].items.iter()
    }

    // ---------------------------------------------------------------------------------------------
    // Choice

    /// The head of queue q, if the queue is not blocked and its shaper lets the head go now.
    fn eligible_head(&self, q: usize, now_ns: u64, blocked: u8) -> Option<&T> {
        if blocked & (1 << q) != 0 {
            return None;
        }
        let state = &self.queues[q];
        let head = state.items.front()?;
        let shaped = state.shaper.as_ref().is_some_and(|shaper| !shaper.allows(now_ns, head.wire_len()));
        (!shaped).then_some(head)
    }

    fn pick(&mut self, now_ns: u64, blocked: u8) -> Option<(usize, Step)> {
        if self.port_shaper.as_ref().is_some_and(|shaper| !shaper.is_open(now_ns)) {
            return None;
        }
        if let Some(q) = self.pick_min_bandwidth(now_ns, blocked) {
            return Some((q, Step::MinBandwidth));
        }
        if let Some(q) = self.pick_strict(now_ns, blocked) {
            return Some((q, Step::Strict));
        }
        self.pick_weighted(now_ns, blocked).map(|q| (q, Step::Weighted))
    }

    fn pick_min_bandwidth(&self, now_ns: u64, blocked: u8) -> Option<usize> {
        (1..=QUEUES).map(|step| (self.min_bandwidth_last + step) % QUEUES).find(|&q| {
            let Some(meter) = &self.queues[q].min_bandwidth else { return false };
            self.eligible_head(q, now_ns, blocked).is_some_and(|head| meter.allows(now_ns, head.wire_len()))
        })
    }

    fn pick_strict(&self, now_ns: u64, blocked: u8) -> Option<usize> {
        (0..QUEUES)
            .filter(|&q| self.queues[q].settings.kind == SchedulerKind::Strict)
            .filter(|&q| self.eligible_head(q, now_ns, blocked).is_some())
            .max_by_key(|&q| (self.queues[q].settings.priority.map_or(-1, i16::from), q))
    }

    /// Deficit round robin over the eligible weighted queues. The current turn continues while its head fits
    /// the deficit; otherwise the round moves on from the queue visited last. Instead of visiting queue after
    /// queue until one has accumulated enough deficit, the number of visits each eligible queue needs is
    /// computed, and the first queue in round order to get there wins; every eligible queue is credited with
    /// the visits it received on the way.
    fn pick_weighted(&mut self, now_ns: u64, blocked: u8) -> Option<usize> {
        let unit = self.unit;
        if let Some(q) = self.turn {
            let fits = self
                .eligible_head(q, now_ns, blocked)
                .is_some_and(|head| unit.cost(head.wire_len()) <= self.queues[q].deficit);
            if fits {
                return Some(q);
            }
            self.turn = None;
        }
        // (queue, position in round order, quantum, visits needed)
        let mut candidates = [(0usize, 0usize, 0u64, 0u64); QUEUES];
        let mut count = 0;
        for position in 0..QUEUES {
            let q = (self.last_visited + 1 + position) % QUEUES;
            let state = &self.queues[q];
            if !state.settings.is_weighted() {
                continue;
            }
            let Some(head) = self.eligible_head(q, now_ns, blocked) else { continue };
            let quantum = unit.quantum(state.settings.weight);
            let missing = unit.cost(head.wire_len()).saturating_sub(state.deficit);
            candidates[count] = (q, position, quantum, missing.div_ceil(quantum).max(1));
            count += 1;
        }
        let candidates = &candidates[..count];
        let &(winner, winner_position, _, winner_visits) =
            candidates.iter().min_by_key(|&&(_, position, _, visits)| (visits, position))?;
        for &(q, position, quantum, _) in candidates {
            let visits = if position <= winner_position { winner_visits } else { winner_visits - 1 };
            let deficit = &mut self.queues[q].deficit;
            *deficit = deficit.saturating_add(visits.saturating_mul(quantum));
        }
        self.turn = Some(winner);
        self.last_visited = winner;
        Some(winner)
    }
}

fn index(queue: u8) -> usize {
    debug_assert!(usize::from(queue) < QUEUES, "queue {queue} out of range");
    usize::from(queue) % QUEUES
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[derive(Debug, Clone, PartialEq, Eq)]
    struct Pkt {
        queue: u8,
        seq: u64,
        len: usize,
    }

    impl Queued for Pkt {
        fn wire_len(&self) -> usize {
            self.len
        }
    }

    fn pkt(queue: u8, seq: u64, len: usize) -> Pkt {
        Pkt { queue, seq, len }
    }

    fn weighted(kind: SchedulerKind, weight: u8) -> QueueSettings {
        QueueSettings { kind, weight, ..QueueSettings::default() }
    }

    fn dwrr(weight: u8) -> QueueSettings {
        weighted(SchedulerKind::Dwrr, weight)
    }

    fn strict(priority: Option<u8>) -> QueueSettings {
        QueueSettings { kind: SchedulerKind::Strict, priority, ..QueueSettings::default() }
    }

    /// Line rate in bytes/s of frame bytes when frames of `len` go back to back.
    fn frame_bytes_per_s(speed_mbps: u64, len: u64) -> u64 {
        speed_mbps * 1_000_000 / 8 * len / (len + WIRE_OVERHEAD_BYTES)
    }

    /// Dequeues everything (nothing blocked), each frame as soon as the scheduler allows.
    fn drain(s: &mut Scheduler<Pkt>, mut now_ns: u64) -> Vec<(u64, Pkt)> {
        let mut out = Vec::new();
        while let Some(t) = s.next_ready_at(now_ns, 0) {
            now_ns = t;
            let (q, p) = s.dequeue(now_ns, 0).expect("ready means dequeue succeeds");
            assert_eq!(q, p.queue);
            out.push((now_ns, p));
        }
        out
    }

    /// sonic-mgmt's WRRtest check: for each queue, the packets (of all queues) still outstanding when its last
    /// packet arrives. Returns them per queue.
    fn wrr_outstanding(order: &[u8], counts: &[(u8, u64)]) -> Vec<(u8, u64)> {
        let total: u64 = counts.iter().map(|&(_, n)| n).sum();
        let mut seen = [0u64; QUEUES];
        let mut diffs = Vec::new();
        for (i, &q) in order.iter().enumerate() {
            seen[usize::from(q)] += 1;
            let expected = counts.iter().find(|&&(cq, _)| cq == q).map(|&(_, n)| n).unwrap();
            if seen[usize::from(q)] == expected {
                diffs.push((q, total - (i as u64 + 1)));
            }
        }
        diffs
    }

    fn wrr_test(weights: [u8; 7], counts: [u64; 7]) -> u64 {
        let mut settings = PortSettings::unshaped(40_000);
        for (queue, weight) in settings.queues.iter_mut().zip(weights) {
            *queue = dwrr(weight);
        }
        let mut s = Scheduler::new(settings);
        // Egress held: everything is queued before the first dequeue, one burst per queue in queue order.
        let mut seq = 0;
        for (q, &n) in counts.iter().enumerate() {
            for _ in 0..n {
                s.enqueue(q as u8, pkt(q as u8, seq, 64), 0).unwrap();
                seq += 1;
            }
        }
        let order: Vec<u8> = drain(&mut s, 0).into_iter().map(|(_, p)| p.queue).collect();
        assert_eq!(order.len() as u64, counts.iter().sum::<u64>(), "all packets received");
        let table: Vec<(u8, u64)> = counts.iter().enumerate().map(|(q, &n)| (q as u8, n)).collect();
        let diffs = wrr_outstanding(&order, &table);
        assert_eq!(diffs.len(), 7);
        let worst = diffs.iter().map(|&(_, d)| d).max().unwrap();
        for (q, diff) in diffs {
            assert!(diff < 80, "queue {q}: {diff} packets outstanding when its last left (limit 80)");
        }
        worst
    }

    #[test]
    fn wrrtest_default_weights() {
        let worst = wrr_test([14, 14, 14, 15, 15, 14, 14], [140, 140, 140, 150, 150, 140, 140]);
        // Within one DWRR round (100 weight units × 16 bytes = 25 frames of 64 bytes) of each other.
        assert!(worst < 25, "worst {worst}");
    }

    #[test]
    fn wrrtest_weight_change() {
        let worst = wrr_test([8, 8, 8, 30, 30, 8, 8], [80, 80, 80, 300, 300, 80, 80]);
        // Within one DWRR round (100 weight units × 16 bytes = 25 frames of 64 bytes) of each other.
        assert!(worst < 25, "worst {worst}");
    }

    #[test]
    fn wrr_counts_packets_per_round() {
        let mut settings = PortSettings::unshaped(10_000);
        settings.queues[0] = weighted(SchedulerKind::Wrr, 3);
        settings.queues[1] = weighted(SchedulerKind::Wrr, 1);
        settings.queues[2..].fill(strict(None));
        let mut s = Scheduler::new(settings);
        for i in 0..8 {
            // Sizes must not matter for WRR.
            s.enqueue(0, pkt(0, i, 64), 0).unwrap();
            s.enqueue(1, pkt(1, i, 9000), 0).unwrap();
        }
        let order: Vec<u8> = drain(&mut s, 0).into_iter().take(8).map(|(_, p)| p.queue).collect();
        assert_eq!(order, [0, 0, 0, 1, 0, 0, 0, 1]);
    }

    #[test]
    fn mixed_dwrr_and_wrr_share_one_byte_round() {
        let mut settings = PortSettings::unshaped(10_000);
        settings.queues[0] = weighted(SchedulerKind::Wrr, 1);
        settings.queues[1] = dwrr(1);
        let mut s = Scheduler::new(settings);
        for i in 0..100 {
            s.enqueue(0, pkt(0, i, 1000), 0).unwrap();
            s.enqueue(1, pkt(1, i, 100), 0).unwrap();
        }
        let out = drain(&mut s, 0);
        // Equal weights in one byte round: about equal bytes while both are backlogged.
        let first_half: Vec<&Pkt> = out.iter().map(|(_, p)| p).take_while(|p| p.seq < 99).collect();
        let bytes = |q| first_half.iter().filter(|p| p.queue == q).map(|p| p.len as i64).sum::<i64>();
        assert!((bytes(0) - bytes(1)).abs() <= 1000 + 16, "{} vs {}", bytes(0), bytes(1));
    }

    #[test]
    fn strict_drains_first_in_priority_order() {
        let mut settings = PortSettings::unshaped(25_000);
        for q in 0..5 {
            settings.queues[q] = dwrr(14);
        }
        settings.queues[5] = strict(Some(5));
        settings.queues[6] = strict(Some(5));
        settings.queues[7] = strict(None);
        let mut s = Scheduler::new(settings);
        let mut seq = 0;
        for q in 0..8u8 {
            for _ in 0..10 {
                s.enqueue(q, pkt(q, seq, 100), 0).unwrap();
                seq += 1;
            }
        }
        let order: Vec<u8> = drain(&mut s, 0).into_iter().map(|(_, p)| p.queue).collect();
        // Equal priority: higher index first; no priority ranks below every explicit one.
        assert!(order[..10].iter().all(|&q| q == 6));
        assert!(order[10..20].iter().all(|&q| q == 5));
        assert!(order[20..30].iter().all(|&q| q == 7));
        assert!(order[30..].iter().all(|&q| q < 5));
        // Without priorities, queue 7 is highest.
        let mut settings = PortSettings::unshaped(25_000);
        settings.queues[6] = strict(None);
        settings.queues[7] = strict(None);
        let mut s = Scheduler::new(settings);
        s.enqueue(0, pkt(0, 0, 100), 0).unwrap();
        s.enqueue(6, pkt(6, 1, 100), 0).unwrap();
        s.enqueue(7, pkt(7, 2, 100), 0).unwrap();
        let order: Vec<u8> = drain(&mut s, 0).into_iter().map(|(_, p)| p.queue).collect();
        assert_eq!(order, [7, 6, 0]);
    }

    /// Traffic offered to one queue in [`simulate`].
    #[derive(Clone, Copy)]
    enum Load {
        /// Always has frames waiting.
        Backlogged { queue: u8, len: usize },
        /// One frame every `interval_ns`.
        Periodic { queue: u8, len: usize, interval_ns: u64 },
    }

    #[derive(Debug, Default)]
    struct Sent {
        bytes: [u64; QUEUES],
        packets: [u64; QUEUES],
        line_bits: u64,
        refused: [u64; QUEUES],
    }

    /// Queues in `mask` are paused for the first `paused_ns` of every `period_ns`.
    #[derive(Clone, Copy)]
    struct Pause {
        mask: u8,
        period_ns: u64,
        paused_ns: u64,
    }

    impl Pause {
        const NONE: Pause = Pause { mask: 0, period_ns: u64::MAX, paused_ns: 0 };

        fn blocked(&self, now_ns: u64) -> u8 {
            if now_ns % self.period_ns < self.paused_ns { self.mask } else { 0 }
        }

        fn next_change(&self, now_ns: u64) -> u64 {
            let phase = now_ns % self.period_ns;
            let period_start = now_ns - phase;
            if phase < self.paused_ns {
                period_start + self.paused_ns
            } else {
                period_start.saturating_add(self.period_ns)
            }
        }
    }

    /// Runs a port in virtual time from `from_ns` until `until_ns` with `pause` as the PFC/hold mask; counts
    /// what started transmission before `until_ns`.
    fn simulate(s: &mut Scheduler<Pkt>, loads: &[Load], from_ns: u64, until_ns: u64, pause: Pause) -> Sent {
        let mut sent = Sent::default();
        let mut next_arrival: Vec<u64> = loads
            .iter()
            .map(|load| if matches!(load, Load::Periodic { .. }) { from_ns } else { u64::MAX })
            .collect();
        let mut seq = 0;
        let mut now = from_ns;
        loop {
            for (i, load) in loads.iter().enumerate() {
                match *load {
                    Load::Backlogged { queue, len } => {
                        while s.len(queue) < 4 {
                            s.enqueue(queue, pkt(queue, seq, len), now).unwrap();
                            seq += 1;
                        }
                    }
                    Load::Periodic { queue, len, interval_ns } => {
                        while next_arrival[i] <= now {
                            if s.enqueue(queue, pkt(queue, seq, len), now).is_err() {
                                sent.refused[usize::from(queue)] += 1;
                            }
                            seq += 1;
                            next_arrival[i] += interval_ns;
                        }
                    }
                }
            }
            if now >= until_ns {
                return sent;
            }
            let mask = pause.blocked(now);
            if let Some((q, p)) = s.dequeue(now, mask) {
                assert_eq!(mask & (1 << q), 0, "dequeued a blocked queue");
                sent.bytes[usize::from(q)] += p.len as u64;
                sent.packets[usize::from(q)] += 1;
                sent.line_bits += (p.len as u64 + WIRE_OVERHEAD_BYTES) * 8;
                continue;
            }
            let wake = [s.next_ready_at(now, mask), Some(until_ns)]
                .into_iter()
                .flatten()
                .chain(next_arrival.iter().copied())
                .chain([pause.next_change(now)])
                .min()
                .unwrap();
            assert!(wake > now, "no progress at {now}");
            now = wake;
        }
    }

    #[test]
    fn ucloud_strict_cnp_queue_policed_and_weighted_share() {
        // 25G port; queue 6 (CNP) STRICT policed at 10% of the line; RoCE queue 3 and business queue 1 DWRR 60/40.
        let line_bytes_per_s = 25_000_000_000 / 8;
        let pir = line_bytes_per_s / 10;
        let mut settings = PortSettings::unshaped(25_000);
        settings.queues[6] = QueueSettings { pir: Some(pir), policer: true, ..strict(None) };
        settings.queues[3] = dwrr(60);
        settings.queues[1] = dwrr(40);
        let mut s = Scheduler::new(settings);
        let until_ns = 10_000_000;
        let loads = [
            // A misbehaving server offers ~40% of the line on the strict queue.
            Load::Periodic { queue: 6, len: 1000, interval_ns: 800 },
            Load::Backlogged { queue: 3, len: 1000 },
            Load::Backlogged { queue: 1, len: 1000 },
        ];
        let sent = simulate(&mut s, &loads, 0, until_ns, Pause::NONE);
        let rate = |q: usize| sent.bytes[q] * 1_000_000_000 / until_ns;
        // The strict queue gets its policed rate and no more (+ one default burst).
        let strict_limit = pir + DEFAULT_BURST_BYTES * 1_000_000_000 / until_ns;
        assert!(rate(6) <= strict_limit, "strict {} > {strict_limit}", rate(6));
        assert!(rate(6) * 100 >= pir * 99, "strict {} < pir {pir}", rate(6));
        assert!(sent.refused[6] > 0);
        // The rest is split 60/40.
        let (r3, r1) = (rate(3) as f64, rate(1) as f64);
        assert!((r3 / r1 - 1.5).abs() < 0.02, "queue 3 {r3} vs queue 1 {r1}");
        // Work conservation: the line was full.
        let line_bits: u64 = 25_000_000_000 / 1000 * until_ns / 1_000_000;
        assert!(line_bits.abs_diff(sent.line_bits) <= 1024 * 8, "{} of {line_bits}", sent.line_bits);
    }

    #[test]
    fn strict_queue_without_policer_waits_for_its_shaper() {
        let pir = 50_000_000;
        let mut settings = PortSettings::unshaped(25_000);
        settings.queues[7] = QueueSettings { pir: Some(pir), ..strict(None) };
        let mut s = Scheduler::new(settings);
        for i in 0..100 {
            s.enqueue(7, pkt(7, i, 1000), 0).unwrap();
        }
        let out = drain(&mut s, 0);
        assert_eq!(out.len(), 100);
        // The first ~9 frames ride the default burst, then one frame every 1000 / pir s = 20 µs.
        let (last_ns, _) = out.last().unwrap();
        let expected_ns = (100 * 1000 - DEFAULT_BURST_BYTES) * 1_000_000_000 / pir;
        assert!(last_ns.abs_diff(expected_ns) <= 20_000, "{last_ns} vs {expected_ns}");
    }

    fn shaped_rate(meter_type: MeterType, pir: u64, len: usize, until_ns: u64) -> (u64, Sent) {
        let mut settings = PortSettings::unshaped(10_000);
        settings.queues[2] = QueueSettings { meter_type, pir: Some(pir), ..dwrr(50) };
        settings.queues[0] = dwrr(1);
        let mut s = Scheduler::new(settings);
        let loads = [Load::Backlogged { queue: 2, len }, Load::Backlogged { queue: 0, len: 300 }];
        let sent = simulate(&mut s, &loads, 0, until_ns, Pause::NONE);
        let measured = match meter_type {
            MeterType::Bytes => sent.bytes[2],
            MeterType::Packets => sent.packets[2],
        } * 1_000_000_000
            / until_ns;
        (measured, sent)
    }

    #[test]
    fn shaper_rate_bytes_within_one_percent() {
        let pir = 100_000_000; // 800 Mb/s on a 10G port
        let (measured, sent) = shaped_rate(MeterType::Bytes, pir, 1000, 100_000_000);
        assert!(measured.abs_diff(pir) * 100 <= pir, "{measured} vs {pir}");
        // The unshaped low-weight queue takes the rest of the line.
        let line_bits: u64 = 10_000_000_000 / 10;
        assert!(line_bits.abs_diff(sent.line_bits) <= 1024 * 8, "{} of {line_bits}", sent.line_bits);
    }

    #[test]
    fn shaper_rate_packets_within_one_percent() {
        let pir = 100_000; // pps
        let (measured, _) = shaped_rate(MeterType::Packets, pir, 1500, 100_000_000);
        assert!(measured.abs_diff(pir) * 100 <= pir, "{measured} vs {pir}");
    }

    #[test]
    fn shaper_with_burst_below_one_frame_keeps_its_rate() {
        let pir = 10_000_000;
        let mut settings = PortSettings::unshaped(10_000);
        settings.queues[0] = QueueSettings { pir: Some(pir), pbs: Some(100), ..dwrr(1) };
        let mut s = Scheduler::new(settings);
        let sent = simulate(&mut s, &[Load::Backlogged { queue: 0, len: 1000 }], 0, 100_000_000, Pause::NONE);
        let measured = sent.bytes[0] * 10;
        assert!(measured.abs_diff(pir) * 100 <= pir, "{measured} vs {pir}");
    }

    #[test]
    fn port_shaper_limits_the_whole_port() {
        let pir = 200_000_000;
        let mut settings = PortSettings::unshaped(10_000);
        settings.shaper = Some((MeterType::Bytes, pir, 10_000));
        let mut s = Scheduler::new(settings);
        let loads = [Load::Backlogged { queue: 0, len: 500 }, Load::Backlogged { queue: 4, len: 1500 }];
        let sent = simulate(&mut s, &loads, 0, 100_000_000, Pause::NONE);
        let measured = (sent.bytes[0] + sent.bytes[4]) * 10;
        assert!(measured.abs_diff(pir) * 100 <= pir, "{measured} vs {pir}");
        assert!(sent.bytes[0].abs_diff(sent.bytes[4]) <= 1500 + 16, "{:?}", sent.bytes);
    }

    #[test]
    fn line_25g_sends_exactly_25e9_bits_per_second() {
        let mut s = Scheduler::new(PortSettings::unshaped(25_000));
        let mut now = 0;
        let mut frames = 0u64;
        s.enqueue(0, pkt(0, 0, 1000), 0).unwrap();
        while now < 1_000_000_000 {
            s.dequeue(now, 0).expect("line free and a frame queued");
            frames += 1;
            s.enqueue(0, pkt(0, frames, 1000), now).unwrap();
            now = s.next_ready_at(now, 0).unwrap();
        }
        // 1024 wire bytes = 8192 bits = 327.68 ns each: no rounding accumulates.
        assert_eq!(s.line_free_at_ps, u128::from(frames) * 327_680);
        let bits = frames * 8192;
        assert!(bits >= 25_000_000_000 && bits - 25_000_000_000 < 8192, "{bits} bits started within 1 s");
        // Frames that completed within the second.
        let completed = (frames - 1) * 8192;
        assert!(25_000_000_000 - completed < 8192, "{completed}");
    }

    #[test]
    fn line_time_carries_sub_picosecond_remainders() {
        // 7 Mb/s: one 64-byte frame is 704 bits = 100_571_428.57 ps.
        let mut s = Scheduler::new(PortSettings::unshaped(7));
        for i in 0..7 {
            s.enqueue(0, pkt(0, i, 64), 0).unwrap();
        }
        let out = drain(&mut s, 0);
        assert_eq!(out.len(), 7);
        assert_eq!(s.line_free_at_ps, 7 * 704 * 1_000_000 / 7);
        assert_eq!(s.line_remainder, 0);
        assert_eq!(s.line_free_at_ns(), 704_000);
    }

    #[test]
    fn occupy_line_delays_the_next_frame() {
        let mut s = Scheduler::new(PortSettings::unshaped(10_000));
        s.enqueue(0, pkt(0, 0, 1000), 0).unwrap();
        // A 64-byte PFC frame (wire_len 60) at t=100 on an idle line: 84 bytes = 67.2 ns.
        s.occupy_line(100, 60);
        assert_eq!(s.line_free_at_ns(), 168);
        assert!(s.dequeue(167, 0).is_none());
        assert_eq!(s.next_ready_at(0, 0), Some(168));
        // A second control frame queues behind the first.
        s.occupy_line(150, 60);
        assert_eq!(s.line_free_at_ps, 100_000 + 2 * 67_200);
        assert!(s.dequeue(235, 0).is_some());
    }

    #[test]
    fn blocked_queue_is_skipped_and_regains_its_share() {
        let mut settings = PortSettings::unshaped(10_000);
        settings.queues[0] = dwrr(1);
        settings.queues[1] = dwrr(1);
        let mut s = Scheduler::new(settings);
        let loads = [Load::Backlogged { queue: 0, len: 1500 }, Load::Backlogged { queue: 1, len: 1500 }];
        // Queue 1 paused for the first millisecond: queue 0 has the whole line.
        let paused = Pause { mask: 2, period_ns: u64::MAX, paused_ns: u64::MAX };
        let sent = simulate(&mut s, &loads, 0, 1_000_000, paused);
        assert_eq!(sent.packets[1], 0);
        assert!(sent.packets[0] >= 10_000_000_000 / 1000 / (1524 * 8), "{:?}", sent.packets);
        // Then both run for a millisecond: half each, from the first round on.
        let sent = simulate(&mut s, &loads, 1_000_000, 2_000_000, Pause::NONE);
        assert!(sent.packets[1] >= 400, "{:?}", sent.packets);
        assert!(sent.packets[0].abs_diff(sent.packets[1]) <= 1, "{:?}", sent.packets);
    }

    #[test]
    fn paused_queue_keeps_its_deficit_and_place() {
        // Jumbo frames on a weight-1 queue need hundreds of visits of deficit: intermittent PFC pauses must
        // not reset what it has accumulated, or it would starve against small frames.
        let mut settings = PortSettings::unshaped(100_000);
        settings.queues[0] = dwrr(1);
        settings.queues[1] = dwrr(1);
        let mut s = Scheduler::new(settings);
        let loads = [Load::Backlogged { queue: 0, len: 9000 }, Load::Backlogged { queue: 1, len: 64 }];
        // Queue 0 paused 5 µs of every 20 µs.
        let pause = Pause { mask: 1, period_ns: 20_000, paused_ns: 5_000 };
        let sent = simulate(&mut s, &loads, 0, 10_000_000, pause);
        let share = sent.bytes[0] as f64 / (sent.bytes[0] + sent.bytes[1]) as f64;
        // Paused 25% of the time, half the line otherwise (byte fairness): ~3/8 of the bytes.
        assert!((share - 0.375).abs() < 0.03, "jumbo queue share {share}, {:?}", sent.bytes);
        // And the deficit survives a pause: a queue skipped mid-turn keeps what it had.
        let mut s = Scheduler::new(PortSettings::unshaped(10_000));
        for i in 0..4 {
            s.enqueue(0, pkt(0, i, 100), 0).unwrap();
            s.enqueue(1, pkt(1, i, 100), 0).unwrap();
        }
        let (q, _) = s.dequeue(0, 0).unwrap();
        assert_eq!(q, 0);
        let deficit = s.queues[0].deficit;
        assert!(deficit > 0);
        let t = s.next_ready_at(0, 1).unwrap();
        assert_eq!(s.dequeue(t, 1).unwrap().0, 1);
        assert_eq!(s.queues[0].deficit, deficit);
    }

    #[test]
    fn cir_is_honoured_for_a_low_weight_queue() {
        let speed = 10_000;
        let line = frame_bytes_per_s(speed, 1000);
        let cir = line / 5;
        let mut settings = PortSettings::unshaped(speed as u32);
        settings.queues[0] = QueueSettings { cir: Some(cir), ..dwrr(1) };
        settings.queues[5] = dwrr(100);
        let mut s = Scheduler::new(settings);
        let loads = [Load::Backlogged { queue: 0, len: 1000 }, Load::Backlogged { queue: 5, len: 1000 }];
        let until_ns = 100_000_000;
        let sent = simulate(&mut s, &loads, 0, until_ns, Pause::NONE);
        let rate = sent.bytes[0] * 1_000_000_000 / until_ns;
        // The meter counts all the queue's output: it gets max(cir, weighted share) = cir.
        assert!(rate * 100 >= cir * 99 && rate * 100 <= cir * 102, "{rate} vs cir {cir}");
        // Without cir it would get 1/101 of the line.
        let mut s =
            Scheduler::new(PortSettings { queues: [dwrr(1); QUEUES], ..PortSettings::unshaped(10_000) });
        s.reconfigure(
            PortSettings {
                queues: std::array::from_fn(|q| if q == 5 { dwrr(100) } else { dwrr(1) }),
                ..PortSettings::unshaped(10_000)
            },
            0,
        );
        let sent = simulate(&mut s, &loads, 0, until_ns, Pause::NONE);
        assert!(sent.bytes[0] * 1_000_000_000 / until_ns < line / 90);
    }

    #[test]
    fn policer_refuses_at_enqueue() {
        let mut settings = PortSettings::unshaped(10_000);
        settings.queues[6] = QueueSettings {
            meter_type: MeterType::Packets,
            pir: Some(1000),
            pbs: Some(3),
            policer: true,
            ..strict(None)
        };
        let mut s = Scheduler::new(settings);
        for i in 0..3 {
            assert!(s.enqueue(6, pkt(6, i, 100), 0).is_ok());
        }
        assert_eq!(s.enqueue(6, pkt(6, 3, 100), 0), Err(pkt(6, 3, 100)));
        // One packet's worth of tokens after 1 ms.
        assert!(s.enqueue(6, pkt(6, 4, 100), 999_999).is_err());
        assert!(s.enqueue(6, pkt(6, 5, 100), 1_000_000).is_ok());
        assert_eq!(s.len(6), 4);
        // Queued frames are not held back by the policer.
        assert_eq!(drain(&mut s, 1_000_000).len(), 4);
    }

    #[test]
    fn reconfigure_keeps_items_and_flush_empties() {
        let mut s = Scheduler::new(PortSettings::unshaped(10_000));
        for i in 0..10 {
            s.enqueue(3, pkt(3, i, 200), 0).unwrap();
            s.enqueue(4, pkt(4, i, 300), 0).unwrap();
        }
        s.dequeue(0, 0).unwrap();
        let mut settings = PortSettings::unshaped(25_000);
        settings.queues[4] = strict(None);
        s.reconfigure(settings, 10);
        assert_eq!(s.total_len(), 19);
        // Equal weights and an empty deficit: the 200-byte head of queue 3 needs fewer visits than 300 bytes.
        assert_eq!((s.bytes(3), s.bytes(4)), (9 * 200, 10 * 300));
        let t = s.next_ready_at(10, 0).unwrap();
        assert_eq!(s.dequeue(t, 0).unwrap().0, 4, "queue 4 is strict now");
        let flushed = s.flush(3);
        assert_eq!(
            flushed.iter().map(|p| p.seq).collect::<Vec<_>>(),
            (10 - flushed.len() as u64..10).collect::<Vec<_>>()
        );
        assert_eq!((s.len(3), s.bytes(3)), (0, 0));
        assert_eq!(s.iter(4).count(), s.len(4));
        assert_eq!(s.total_len(), s.len(4));
        s.flush(4);
        assert!(s.is_empty());
        assert_eq!(s.next_ready_at(0, 0), None);
    }

    // ---------------------------------------------------------------------------------------------
    // Properties

    #[derive(Debug, Clone)]
    enum Op {
        Enqueue { queue: u8, len: usize },
        Dequeue,
        DequeueWhenReady,
        Block(u8),
        Advance(u64),
        Flush(u8),
        Reconfigure,
    }

    fn queue_settings() -> BoxedStrategy<QueueSettings> {
        (
            prop_oneof![Just(SchedulerKind::Strict), Just(SchedulerKind::Dwrr), Just(SchedulerKind::Wrr)],
            0u8..=100,
            proptest::option::of(0u8..=9),
            prop_oneof![Just(MeterType::Bytes), Just(MeterType::Packets)],
            proptest::option::of(0u64..200_000_000),
            proptest::option::of(0u64..20_000),
            proptest::option::of(0u64..200_000_000),
            proptest::option::of(0u64..20_000),
            any::<bool>(),
        )
            .prop_map(|(kind, weight, priority, meter_type, cir, cbs, pir, pbs, policer)| {
                // Packet meters get packet-sized numbers.
                let scale = |v: Option<u64>| match meter_type {
                    MeterType::Bytes => v,
                    MeterType::Packets => v.map(|v| v / 1000),
                };
                QueueSettings {
                    kind,
                    weight,
                    priority,
                    meter_type,
                    cir: scale(cir),
                    cbs: scale(cbs),
                    pir: scale(pir),
                    pbs: scale(pbs),
                    policer,
                }
            })
            .boxed()
    }

    fn port_settings() -> BoxedStrategy<PortSettings> {
        (
            prop_oneof![Just(1_000u32), Just(10_000), Just(25_000), Just(100_000), Just(7)],
            proptest::array::uniform8(queue_settings()),
            proptest::option::of((1_000_000u64..2_000_000_000, 0u64..30_000)),
        )
            .prop_map(|(speed_mbps, queues, shaper)| PortSettings {
                speed_mbps,
                queues,
                shaper: shaper.map(|(pir, pbs)| (MeterType::Bytes, pir, pbs)),
            })
            .boxed()
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            6 => (0u8..8, 40usize..9300).prop_map(|(queue, len)| Op::Enqueue { queue, len }),
            3 => Just(Op::Dequeue),
            4 => Just(Op::DequeueWhenReady),
            1 => any::<u8>().prop_map(Op::Block),
            2 => (0u64..200_000).prop_map(Op::Advance),
            1 => (0u8..8).prop_map(Op::Flush),
            1 => Just(Op::Reconfigure),
        ]
    }

    /// Dequeues at `now` and checks it against `next_ready_at`: Some exactly when ready now (work
    /// conservation: None at a free line means every non-blocked non-empty queue is shaper-limited).
    fn checked_dequeue(
        s: &mut Scheduler<Pkt>,
        now: u64,
        blocked: u8,
        last_seq: &mut [Option<u64>; QUEUES],
        out: &mut Vec<u64>,
    ) -> Result<bool, TestCaseError> {
        let ready = s.next_ready_at(now, blocked);
        let any_waiting = (0..8u8).any(|q| blocked & (1 << q) == 0 && s.len(q) > 0);
        prop_assert_eq!(ready.is_some(), any_waiting);
        prop_assert!(ready.is_none_or(|t| t >= now));
        let line_free = now >= s.line_free_at_ns();
        match s.dequeue(now, blocked) {
            Some((q, p)) => {
                prop_assert_eq!(ready, Some(now));
                prop_assert!(line_free);
                prop_assert_eq!(q, p.queue);
                prop_assert_eq!(blocked & (1 << q), 0);
                prop_assert!(
                    last_seq[usize::from(q)].is_none_or(|last| last < p.seq),
                    "reordered in queue {}",
                    q
                );
                last_seq[usize::from(q)] = Some(p.seq);
                out.push(p.seq);
                Ok(true)
            }
            None => {
                prop_assert!(ready != Some(now), "ready at {} but nothing dequeued", now);
                Ok(false)
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn order_exactly_once_and_work_conservation(
            settings in port_settings(),
            other in port_settings(),
            ops in proptest::collection::vec(op(), 1..400),
        ) {
            let mut s = Scheduler::new(settings.clone());
            let mut now = 0u64;
            let mut blocked = 0u8;
            let mut seq = 0u64;
            let mut accepted = Vec::new();
            let mut out = Vec::new();
            let mut last_seq = [None; QUEUES];
            let mut flip = false;
            for op in ops {
                match op {
                    Op::Enqueue { queue, len } => {
                        let bytes = s.bytes(queue);
                        match s.enqueue(queue, pkt(queue, seq, len), now) {
                            Ok(()) => {
                                accepted.push(seq);
                                prop_assert_eq!(s.bytes(queue), bytes + len as u64);
                            }
                            Err(p) => {
                                prop_assert_eq!(p.seq, seq);
                                let q = &s.queues[usize::from(queue)].settings;
                                prop_assert!(q.kind == SchedulerKind::Strict && q.policer);
                            }
                        }
                        seq += 1;
                    }
                    Op::Dequeue => {
                        checked_dequeue(&mut s, now, blocked, &mut last_seq, &mut out)?;
                    }
                    Op::DequeueWhenReady => {
                        if let Some(t) = s.next_ready_at(now, blocked) {
                            now = t;
                            prop_assert!(checked_dequeue(&mut s, now, blocked, &mut last_seq, &mut out)?);
                        }
                    }
                    Op::Block(mask) => blocked = mask,
                    Op::Advance(dt) => now += dt,
                    Op::Flush(queue) => {
                        let items = s.flush(queue);
                        for p in items {
                            prop_assert_eq!(p.queue, queue);
                            prop_assert!(last_seq[usize::from(queue)].is_none_or(|last| last < p.seq));
                            last_seq[usize::from(queue)] = Some(p.seq);
                            out.push(p.seq);
                        }
                    }
                    Op::Reconfigure => {
                        flip = !flip;
                        s.reconfigure(if flip { other.clone() } else { settings.clone() }, now);
                    }
                }
                let total: usize = (0..8u8).map(|q| s.len(q)).sum();
                prop_assert_eq!(s.total_len(), total);
                for q in 0..8u8 {
                    prop_assert_eq!(s.bytes(q), s.iter(q).map(|p| p.len as u64).sum::<u64>());
                }
            }
            // Drain what is left with nothing blocked: every queue empties (shapers only delay).
            while let Some(t) = s.next_ready_at(now, 0) {
                now = t;
                prop_assert!(checked_dequeue(&mut s, now, 0, &mut last_seq, &mut out)?);
            }
            prop_assert!(s.is_empty());
            out.sort_unstable();
            prop_assert_eq!(out, accepted);
        }
    }
}
