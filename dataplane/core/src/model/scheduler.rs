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
//! dequeued exactly at [`Scheduler::line_free_at`] starts at the exact (sub-ns) instant the previous one
//! ended, so back-to-back frames do not drift by the rounding.
//!
//! Everything is integer arithmetic: bucket tokens are kept ×1e9 so that refilling adds `rate × elapsed_ns`
//! exactly, in `i128`/`u128`. Time is passed in (an [`Instant`]); nothing here reads a clock.

use super::config::{MeterType, SchedulerKind, SchedulerProfile};
use crate::time::Instant;
use bucket::{CreditUnit, TokenBucket};
use std::collections::VecDeque;

mod bucket;
#[cfg(test)]
mod tests;

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
/// 1 bit at 1 Mb/s lasts 1 µs = 1e6 ps.
const PS_PER_BIT_AT_1_MBPS: u128 = 1_000_000;
/// 1 byte at 1 Mb/s lasts 8 µs.
const PS_PER_BYTE_AT_1_MBPS: u64 = 8 * 1_000_000;

/// The picoseconds a byte occupies the line at `speed_mbps` when that is a whole number (every usual speed:
/// 1, 10, 25, 40, 50, 100, 200, 400, 800 Gb/s all divide 8e6), else 0. With a whole number the division of
/// [`Scheduler::occupy_line`] is exact and leaves its remainder as it was, so a multiplication gives the
/// same result.
fn whole_ps_per_byte(speed_mbps: u32) -> u64 {
    let speed = u64::from(speed_mbps.max(1));
    if PS_PER_BYTE_AT_1_MBPS.is_multiple_of(speed) { PS_PER_BYTE_AT_1_MBPS / speed } else { 0 }
}

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
    fn new(settings: QueueSettings, now: Instant) -> Self {
        let mut queue = QueueState {
            items: VecDeque::new(),
            bytes: 0,
            settings,
            shaper: None,
            policer: None,
            min_bandwidth: None,
            deficit: 0,
        };
        queue.configure(settings, now);
        queue
    }

    fn configure(&mut self, settings: QueueSettings, now: Instant) {
        let meter = settings.meter_type;
        let pir = settings.pir.unwrap_or(0);
        let old_max = self.policer.as_ref().or(self.shaper.as_ref());
        let max_bucket = TokenBucket::reconfigured(old_max, meter, pir, settings.pbs, now);
        let cir = settings.cir.unwrap_or(0);
        let min_bucket =
            TokenBucket::reconfigured(self.min_bandwidth.as_ref(), meter, cir, settings.cbs, now);
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
    /// [`whole_ps_per_byte`] of the speed: 0 when the line's time needs the general division.
    ps_per_byte: u64,
    /// The last frame started on an idle line (so from a whole ns, `line_early_ps` 0) with the fast line
    /// time: its bytes on the wire (0: none yet), the ns it moved the line by and the `line_early_ps` it left.
    /// The next such frame of the same length (the common case: a lightly loaded port sending one size)
    /// moves the line by the same without the multiplication and the division.
    idle_frame: (u64, u64, u64),
    queues: [QueueState<T>; QUEUES],
    port_shaper: Option<TokenBucket>,
    unit: CreditUnit,
    /// The weighted queue whose DRR turn is in progress.
    turn: Option<usize>,
    /// The weighted queue visited last; the round continues after it.
    last_visited: usize,
    /// The queue the minimum-bandwidth step served last.
    min_bandwidth_last: usize,
    /// The line is busy until `P + line_remainder / speed_mbps` ps, with `P` in whole ps; `line_free` is that
    /// instant rounded up to the ns (asked for on every poll), and `line_early_ps` how far `P + 1` (when the
    /// remainder is not 0, else `P`) falls before it: `P = line_free × 1000 − line_early_ps − (remainder >
    /// 0)`, with `line_early_ps` < 1000 (0 once `line_free` saturated at [`Instant::MAX`]). Kept that way, a
    /// frame moves the line with 64-bit arithmetic and one division by a constant.
    line_free: Instant,
    line_early_ps: u64,
    line_remainder: u64,
    total_len: usize,
    /// Queues holding at least one item (bit q): the choice looks only at these.
    nonempty: u8,
    /// Queues by their settings (bit q), so that each step of the choice looks only at its own queues:
    /// STRICT, weighted (DWRR/WRR), and with a minimum-bandwidth meter.
    strict_queues: u8,
    weighted_queues: u8,
    metered_queues: u8,
    /// Queues without a dequeue-time shaper, none at all when the port has a port shaper: a queue of these
    /// with items is ready as soon as the line is free.
    unshaped_queues: u8,
    /// Of [`Scheduler::unshaped_queues`], those without a minimum-bandwidth meter either: when such a queue is
    /// the only one open, the choice is that queue, decided by [`Scheduler::pick_only`] without the steps.
    plain_queues: u8,
}

/// What the choice of the next queue reads and moves: each weighted queue's deficit, the DRR turn and the
/// round's position. Debug builds compare a fast choice with the full one from the same state.
#[cfg(debug_assertions)]
type ChoiceState = ([u64; QUEUES], Option<usize>, usize);

impl<T: Queued> Scheduler<T> {
    pub fn new(settings: PortSettings) -> Self {
        let PortSettings { speed_mbps, queues, shaper } = settings;
        Scheduler {
            speed_mbps,
            ps_per_byte: whole_ps_per_byte(speed_mbps),
            idle_frame: (0, 0, 0),
            queues: std::array::from_fn(|q| QueueState::new(queues[q], Instant::ZERO)),
            port_shaper: shaper
                .and_then(|(meter, pir, pbs)| TokenBucket::new(meter, pir, Some(pbs), Instant::ZERO)),
            unit: CreditUnit::of(&queues),
            turn: None,
            last_visited: QUEUES - 1,
            min_bandwidth_last: QUEUES - 1,
            line_free: Instant::ZERO,
            line_early_ps: 0,
            line_remainder: 0,
            total_len: 0,
            nonempty: 0,
            strict_queues: 0,
            weighted_queues: 0,
            metered_queues: 0,
            unshaped_queues: 0,
            plain_queues: 0,
        }
        .with_masks()
    }

    fn with_masks(mut self) -> Self {
        self.refresh_masks();
        self
    }

    /// Recomputes the per-kind queue masks from the queues' settings (after a (re)configuration).
    fn refresh_masks(&mut self) {
        let queues = &self.queues;
        let mask = |f: fn(&QueueState<T>) -> bool| {
            (0..QUEUES).filter(|&q| f(&queues[q])).fold(0u8, |m, q| m | 1 << q)
        };
        let (strict, weighted, metered) = (
            mask(|s| s.settings.kind == SchedulerKind::Strict),
            mask(|s| s.settings.is_weighted()),
            mask(|s| s.min_bandwidth.is_some()),
        );
        (self.strict_queues, self.weighted_queues, self.metered_queues) = (strict, weighted, metered);
        self.unshaped_queues = if self.port_shaper.is_some() { 0 } else { mask(|s| s.shaper.is_none()) };
        self.plain_queues = self.unshaped_queues & !metered;
    }

    /// Applies new settings, keeping queued items, the line state and (where the meter type is unchanged)
    /// bucket fill levels. A queue keeps its deficit only if its kind and weight and the port's credit unit
    /// are unchanged; otherwise it starts the round afresh at 0.
    pub fn reconfigure(&mut self, settings: PortSettings, now: Instant) {
        let PortSettings { speed_mbps, queues, shaper } = settings;
        if speed_mbps != self.speed_mbps {
            // The remainder is in units of the old speed: round the line time up to the next ps (which
            // `line_free` and `line_early_ps` already count).
            self.line_remainder = 0;
            self.speed_mbps = speed_mbps;
            self.ps_per_byte = whole_ps_per_byte(speed_mbps);
            self.idle_frame = (0, 0, 0);
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
            state.configure(new, now);
        }
        self.unit = unit;
        self.port_shaper = shaper.and_then(|(meter, pir, pbs)| {
            TokenBucket::reconfigured(self.port_shaper.as_ref(), meter, pir, Some(pbs), now)
        });
        self.refresh_masks();
    }

    /// Appends an item to a queue. `Err(item)` when the queue is a policed STRICT queue whose bucket cannot
    /// pay for the frame (the caller counts the drop).
    #[inline]
    pub fn enqueue(&mut self, queue: u8, item: T, now: Instant) -> Result<(), T> {
        let state = &mut self.queues[index(queue)];
        let wire_len = item.wire_len();
        if let Some(policer) = &mut state.policer {
            if !policer.allows(now, wire_len) {
                return Err(item);
            }
            policer.charge(now, wire_len, true);
        }
        state.bytes += wire_len as u64;
        state.items.push_back(item);
        self.total_len += 1;
        self.nonempty |= 1 << index(queue);
        Ok(())
    }

    /// The next item to put on the line, if the line is free at `now` and some queue not in `blocked`
    /// (bit q = queue q paused by PFC or held) is eligible under its shapers. Marks the line busy for the
    /// frame's serialisation time.
    #[inline(always)]
    pub fn dequeue(&mut self, now: Instant, blocked: u8) -> Option<(u8, T)> {
        if self.total_len == 0 || now < self.line_free_at() {
            return None;
        }
        let open = self.nonempty & !blocked;
        let (q, step) = if open.is_power_of_two() && open & self.plain_queues != 0 {
            let q = open.trailing_zeros() as usize;
            if self.queues[q].items.len() == 1 {
                return Some(self.dequeue_last(q, now, blocked));
            }
            self.pick_only(q, now, blocked)
        } else {
            self.pick(now, blocked)?
        };
        let unit = self.unit;
        let state = &mut self.queues[q];
        let item = state.items.pop_front()?;
        let wire_len = item.wire_len();
        state.bytes -= wire_len as u64;
        self.total_len -= 1;
        if let Some(shaper) = &mut state.shaper {
            shaper.charge(now, wire_len, true);
        }
        if let Some(meter) = &mut state.min_bandwidth {
            meter.charge(now, wire_len, step == Step::MinBandwidth);
        }
        if let Some(shaper) = &mut self.port_shaper {
            shaper.charge(now, wire_len, true);
        }
        let emptied = state.items.is_empty();
        match step {
            Step::MinBandwidth => self.min_bandwidth_last = q,
            // An emptied queue loses its deficit below: [`Scheduler::pick_only`] does not credit it.
            Step::Weighted if !emptied => state.deficit -= unit.cost(wire_len),
            Step::Weighted | Step::Strict => {}
        }
        if emptied {
            self.nonempty &= !(1 << q);
            state.deficit = 0;
            if self.turn == Some(q) {
                self.turn = None;
            }
        }
        self.occupy_line(now, wire_len);
        Some((q as u8, item))
    }

    /// [`Scheduler::dequeue`] when queue `q`, without shaper or meter on a port without port shaper, is the
    /// only open queue and holds one frame (a lightly loaded port's every frame): the choice is `q`
    /// ([`Scheduler::pick_only`]), no bucket is charged, and the queue empties, which takes its deficit and
    /// turn away (classic DRR); of the round, only its position moves (to `q` when it is weighted). Debug
    /// builds compare with [`Scheduler::pick_only`] (itself checked against the full choice) followed by the
    /// general dequeue's bookkeeping.
    #[inline(always)]
    #[cfg_attr(not(debug_assertions), allow(unused_variables))]
    fn dequeue_last(&mut self, q: usize, now: Instant, blocked: u8) -> (u8, T) {
        #[cfg(debug_assertions)]
        let expected = {
            let before = self.choice_state();
            let (picked, _) = self.pick_only(q, now, blocked);
            assert_eq!(picked, q, "the only open queue");
            let mut after = self.choice_state();
            self.restore_choice_state(before);
            // What the general dequeue does to a queue it empties.
            after.0[q] = 0;
            if after.1 == Some(q) {
                after.1 = None;
            }
            after
        };
        let bit = 1u8 << q;
        let state = &mut self.queues[q];
        let Some(item) = state.items.pop_front() else { unreachable!("queue {q} holds one frame") };
        let wire_len = item.wire_len();
        debug_assert_eq!(state.bytes, wire_len as u64, "the bytes of a queue's one frame");
        debug_assert!(state.shaper.is_none() && state.min_bandwidth.is_none(), "a plain queue");
        state.bytes = 0;
        state.deficit = 0;
        self.total_len -= 1;
        self.nonempty &= !bit;
        if self.strict_queues & bit == 0 {
            // Weighted: its turn (continued or new) ends with its last frame.
            self.last_visited = q;
            self.turn = None;
        } else if self.turn == Some(q) {
            self.turn = None;
        }
        #[cfg(debug_assertions)]
        assert_eq!(self.choice_state(), expected, "the last frame of the only open queue");
        self.occupy_line(now, wire_len);
        (q as u8, item)
    }

    /// The line carries a frame that is not from a queue (a PFC frame): busy for its serialisation time from
    /// max(now, line free).
    #[inline(always)]
    pub fn occupy_line(&mut self, now: Instant, wire_len: usize) {
        let bytes = (wire_len as u64).saturating_add(WIRE_OVERHEAD_BYTES);
        let idle = now > self.line_free;
        if idle {
            // The line was idle: the frame starts now.
            (self.line_free, self.line_early_ps, self.line_remainder) = (now, 0, 0);
            let (idle_bytes, idle_ns, idle_early_ps) = self.idle_frame;
            if bytes == idle_bytes
                && let Some(ns) = now.as_ns().checked_add(idle_ns)
            {
                #[cfg(debug_assertions)]
                let expected = {
                    let (whole, remainder) = self.line_time(u128::from(bytes));
                    self.line_end(self.line_end_ps() + whole, remainder)
                };
                (self.line_free, self.line_early_ps) = (Instant::from_ns(ns), idle_early_ps);
                #[cfg(debug_assertions)]
                assert_eq!(
                    (self.line_free, self.line_early_ps, self.line_remainder),
                    expected,
                    "an idle line"
                );
                return;
            }
        }
        // Otherwise it follows the previous frame from the exact instant that one ends.
        #[cfg(debug_assertions)]
        let expected = {
            let (whole, remainder) = self.line_time(wire_len as u128 + u128::from(WIRE_OVERHEAD_BYTES));
            self.line_end(self.line_end_ps() + whole, remainder)
        };
        match bytes.checked_mul(self.ps_per_byte) {
            // (bytes × 8e6 + remainder) / speed with speed dividing 8e6 and remainder < speed: `whole` ps,
            // the remainder unchanged. The end moves by `whole` ps: with t = whole + 999 − early, the
            // instant rounded up moves by ⌊t / 1000⌋ ns and lies 999 − t mod 1000 ps after the end.
            Some(whole) if self.ps_per_byte != 0 && whole <= u64::MAX - 999 => {
                let t = whole + (999 - self.line_early_ps);
                let (ns, early_ps) = (t / 1000, 999 - t % 1000);
                (self.line_free, self.line_early_ps) = match self.line_free.as_ns().checked_add(ns) {
                    Some(end) => {
                        if idle {
                            self.idle_frame = (bytes, ns, early_ps);
                        }
                        (Instant::from_ns(end), early_ps)
                    }
                    None => (Instant::MAX, 0),
                };
            }
            _ => {
                let (whole, remainder) = self.line_time(u128::from(bytes));
                (self.line_free, self.line_early_ps, self.line_remainder) =
                    self.line_end(self.line_end_ps() + whole, remainder);
            }
        }
        #[cfg(debug_assertions)]
        assert_eq!(
            (self.line_free, self.line_early_ps, self.line_remainder),
            expected,
            "the line's end at {} Mb/s",
            self.speed_mbps
        );
    }

    /// The whole picoseconds `P` of the line's end (see [`Scheduler::line_free`]).
    fn line_end_ps(&self) -> u128 {
        (u128::from(self.line_free.as_ns()) * 1000 - u128::from(self.line_early_ps))
            .saturating_sub(u128::from(self.line_remainder > 0))
    }

    /// `line_free`, `line_early_ps` and `line_remainder` of a line ending at `end_ps + remainder / speed` ps.
    fn line_end(&self, end_ps: u128, remainder: u64) -> (Instant, u64, u64) {
        let ceil_ps = end_ps + u128::from(remainder > 0);
        let free = crate::ps::to_instant_ceil(ceil_ps);
        let early = (u128::from(free.as_ns()) * 1000).checked_sub(ceil_ps).map_or(0, |e| e as u64);
        (free, early, remainder)
    }

    /// A frame's time on the line in whole ps, and the new remainder: `(bytes × 8 bits × 1e6 + remainder) /
    /// speed`.
    fn line_time(&self, bytes: u128) -> (u128, u64) {
        let speed = u128::from(self.speed_mbps.max(1));
        let scaled = bytes * 8 * PS_PER_BIT_AT_1_MBPS + u128::from(self.line_remainder);
        crate::ps::div_rem(scaled, speed as u64)
    }

    /// When the frame on the line ends, rounded up to the ns.
    pub fn line_free_at(&self) -> Instant {
        self.line_free
    }

    /// Earliest instant >= now at which `dequeue(…, blocked)` could return `Some` (line free and the shapers
    /// of some non-blocked queue hold enough for its head), `None` if every non-blocked queue is empty.
    #[inline]
    pub fn next_ready_at(&self, now: Instant, blocked: u8) -> Option<Instant> {
        if self.total_len == 0 {
            return None;
        }
        debug_assert_eq!(
            self.nonempty,
            (0..QUEUES).filter(|&q| !self.queues[q].items.is_empty()).fold(0, |m, q| m | 1 << q),
            "non-empty queue mask"
        );
        let open = self.nonempty & !blocked;
        if open & self.unshaped_queues != 0 {
            // A queue with items and no shaper on a port without a port shaper: ready when the line is.
            let ready = self.line_free_at().max(now);
            debug_assert_eq!(Some(ready), self.next_ready_at_by_queue(now, open), "unshaped queue ready");
            return Some(ready);
        }
        self.next_ready_at_by_queue(now, open)
    }

    /// [`Scheduler::next_ready_at`] from each open queue's shaper and the port shaper.
    #[inline(never)]
    fn next_ready_at_by_queue(&self, now: Instant, open: u8) -> Option<Instant> {
        let queue_ready = (0..QUEUES)
            .filter(|&q| open & (1 << q) != 0)
            .filter_map(|q| {
                let state = &self.queues[q];
                let head = state.items.front()?;
                Some(state.shaper.as_ref().map_or(now, |shaper| shaper.ready_at(now, head.wire_len())))
            })
            .min()?;
        let port_open = self.port_shaper.as_ref().map_or(now, |shaper| shaper.open_at(now));
        Some(queue_ready.max(port_open).max(self.line_free_at()).max(now))
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

    /// The queues holding at least one item, as a bit mask.
    pub fn nonempty_queues(&self) -> u8 {
        self.nonempty
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
        self.nonempty &= !(1 << q);
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
    fn eligible_head(&self, q: usize, now: Instant, blocked: u8) -> Option<&T> {
        if (self.nonempty & !blocked) & (1 << q) == 0 {
            return None;
        }
        let state = &self.queues[q];
        let head = state.items.front()?;
        let shaped = state.shaper.as_ref().is_some_and(|shaper| !shaper.allows(now, head.wire_len()));
        (!shaped).then_some(head)
    }

    /// The choice when queue `q`, without shaper or meter on a port without port shaper, is the only open
    /// queue: the minimum-bandwidth step has nothing to serve, and the strict step serves `q` if it is STRICT;
    /// otherwise the weighted round has `q` as its one candidate, which continues its turn while its head fits
    /// the deficit, else gets the visits its head needs (what [`Scheduler::pick_weighted`] does with one
    /// candidate). When the head is the queue's last frame, the dequeue empties the queue, which then loses
    /// its deficit and turn (classic DRR): the visits are not counted, only the round's position moves.
    /// Debug builds compare with the full choice from the same state.
    #[inline]
    #[cfg_attr(not(debug_assertions), allow(unused_variables))]
    fn pick_only(&mut self, q: usize, now: Instant, blocked: u8) -> (usize, Step) {
        #[cfg(debug_assertions)]
        let full = {
            let before = self.choice_state();
            let full = self.pick(now, blocked);
            let after = self.choice_state();
            self.restore_choice_state(before);
            (full, after)
        };
        let step = if self.strict_queues & (1 << q) != 0 {
            Step::Strict
        } else if self.queues[q].items.len() == 1 {
            // Whether its turn continues or starts, the round is at `q` (a turn in progress is the queue
            // visited last), and the dequeue takes away the turn and the deficit with the last frame.
            debug_assert!(self.turn.is_none_or(|t| t == self.last_visited), "a turn is the last visited");
            self.turn = Some(q);
            self.last_visited = q;
            Step::Weighted
        } else {
            let (unit, turn) = (self.unit, self.turn);
            let state = &mut self.queues[q];
            let cost = state.items.front().map_or(0, |head| unit.cost(head.wire_len()));
            let continues = turn == Some(q) && cost <= state.deficit;
            if !continues {
                let quantum = unit.quantum(state.settings.weight);
                let missing = cost.saturating_sub(state.deficit);
                let visits = if missing <= quantum { 1 } else { missing.div_ceil(quantum) };
                state.deficit = state.deficit.saturating_add(visits.saturating_mul(quantum));
            }
            if !continues {
                self.turn = Some(q);
                self.last_visited = q;
            }
            Step::Weighted
        };
        #[cfg(debug_assertions)]
        {
            let (full_pick, mut full_after) = full;
            if self.queues[q].items.len() == 1 {
                // Dropped by this dequeue: the shortcut above leaves it uncounted.
                full_after.0[q] = self.queues[q].deficit;
            }
            assert_eq!(
                (Some((q, step)), self.choice_state()),
                (full_pick, full_after),
                "one open queue's choice"
            );
        }
        (q, step)
    }

    #[cfg(debug_assertions)]
    fn choice_state(&self) -> ChoiceState {
        (std::array::from_fn(|q| self.queues[q].deficit), self.turn, self.last_visited)
    }

    #[cfg(debug_assertions)]
    fn restore_choice_state(&mut self, (deficits, turn, last_visited): ChoiceState) {
        for (state, deficit) in self.queues.iter_mut().zip(deficits) {
            state.deficit = deficit;
        }
        (self.turn, self.last_visited) = (turn, last_visited);
    }

    #[inline(never)]
    fn pick(&mut self, now: Instant, blocked: u8) -> Option<(usize, Step)> {
        if self.port_shaper.as_ref().is_some_and(|shaper| !shaper.is_open(now)) {
            return None;
        }
        if let Some(q) = self.pick_min_bandwidth(now, blocked) {
            return Some((q, Step::MinBandwidth));
        }
        if let Some(q) = self.pick_strict(now, blocked) {
            return Some((q, Step::Strict));
        }
        self.pick_weighted(now, blocked).map(|q| (q, Step::Weighted))
    }

    fn pick_min_bandwidth(&self, now: Instant, blocked: u8) -> Option<usize> {
        if self.nonempty & !blocked & self.metered_queues == 0 {
            return None;
        }
        (1..=QUEUES).map(|step| (self.min_bandwidth_last + step) % QUEUES).find(|&q| {
            let Some(meter) = &self.queues[q].min_bandwidth else { return false };
            self.eligible_head(q, now, blocked).is_some_and(|head| meter.allows(now, head.wire_len()))
        })
    }

    fn pick_strict(&self, now: Instant, blocked: u8) -> Option<usize> {
        let open = self.nonempty & !blocked & self.strict_queues;
        if open == 0 {
            return None;
        }
        (0..QUEUES)
            .filter(|&q| open & (1 << q) != 0)
            .filter(|&q| self.eligible_head(q, now, blocked).is_some())
            .max_by_key(|&q| (self.queues[q].settings.priority.map_or(-1, i16::from), q))
    }

    /// Deficit round robin over the eligible weighted queues. The current turn continues while its head fits
    /// the deficit; otherwise the round moves on from the queue visited last. Instead of visiting queue after
    /// queue until one has accumulated enough deficit, the number of visits each eligible queue needs is
    /// computed, and the first queue in round order to get there wins; every eligible queue is credited with
    /// the visits it received on the way.
    fn pick_weighted(&mut self, now: Instant, blocked: u8) -> Option<usize> {
        let unit = self.unit;
        if let Some(q) = self.turn {
            let fits = self
                .eligible_head(q, now, blocked)
                .is_some_and(|head| unit.cost(head.wire_len()) <= self.queues[q].deficit);
            if fits {
                return Some(q);
            }
            self.turn = None;
        }
        let open = self.nonempty & !blocked & self.weighted_queues;
        if open.is_power_of_two() {
            // One weighted queue with items (the usual case of a lightly loaded port): the round below with
            // a single candidate, without its arrays. It gets the visits its head needs, at least one.
            let q = open.trailing_zeros() as usize;
            let cost = unit.cost(self.eligible_head(q, now, blocked)?.wire_len());
            let state = &mut self.queues[q];
            let quantum = unit.quantum(state.settings.weight);
            let visits = cost.saturating_sub(state.deficit).div_ceil(quantum).max(1);
            state.deficit = state.deficit.saturating_add(visits.saturating_mul(quantum));
            self.turn = Some(q);
            self.last_visited = q;
            return Some(q);
        }
        // (queue, position in round order, quantum, visits needed)
        let mut candidates = [(0usize, 0usize, 0u64, 0u64); QUEUES];
        let mut count = 0;
        // The weighted queues with items, not blocked, in round order: bit i is position i of the round.
        let start = (self.last_visited + 1) % QUEUES;
        let mut round = open.rotate_right(start as u32);
        while round != 0 {
            let position = round.trailing_zeros() as usize;
            round &= round - 1;
            let q = (start + position) % QUEUES;
            let state = &self.queues[q];
            let Some(head) = self.eligible_head(q, now, blocked) else { continue };
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
