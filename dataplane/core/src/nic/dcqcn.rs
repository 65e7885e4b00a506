//! The DCQCN reaction point (RP) of one flow: a pure state machine over integer time, driven by CNP
//! arrivals, bytes sent and timeouts.
//!
//! It follows the "Mellanox version" of the HPCC simulator (alibaba-edu/High-Precision-Congestion-Control:
//! `simulation/src/point-to-point/model/rdma-hw.cc`, cc_mode 1),
//! which models ConnectX-4+ firmware, with NVIDIA's parameter names and defaults (DOCA "DCQCN CC
//! Parameters", Mellanox DOC-2790; `docs/nic.md`, "Reaction point"):
//!
//! * **α** is given in 1/1024 units as the firmware's parameters are, and kept with 20 more fractional
//!   bits (`ALPHA_EXTRA_BITS` says why). It is updated every `dce_tcp_rtt` (1 µs) from the first CNP on:
//!   `α ← G·α/1024 + (1024 − G)` if a CNP arrived in the period, else `α ← G·α/1024` (`dce_tcp_g` = G =
//!   1019, i.e. g = 5/1024). The first CNP sets `α = initial_alpha_value` (1023). The 1 µs timer is never
//!   scheduled: ticks are applied lazily when α is needed (`docs/nic.md`: per-QP 1 µs timers would
//!   dominate a simulation), which gives the same values.
//! * **Decrease**: at most one per `rate_reduce_monitor_period` (4 µs). The checks run on a grid that
//!   starts 1 ns after the first CNP (so a check sees the α tick of the same microsecond, as in HPCC);
//!   a check after a CNP sets `target ← current` (if `clamp_tgt_rate`, or if the byte counter has
//!   raised the rate since the last decrease, or if `clamp_tgt_rate_after_time_inc` and the rate timer
//!   has; `clamps_target` below gives the sources), then `current ← current − current·α / 2^rpg_gd`
//!   (α/2 for `rpg_gd` = 11), bounded below by `rpg_min_dec_fac` % of the old rate and by
//!   `rpg_min_rate`. It resets the increase stages and the byte counter and restarts the rate timer.
//!   The first CNP itself sets
//!   `current = target = rate_to_set_on_first_cnp` (0 = keep the current rate) and only arms the check.
//! * **Increase** events come from the rate timer (`rpg_time_reset`, 300 µs after the decrease and then
//!   periodically) and from the byte counter (every `rpg_byte_reset` × 64 bytes sent while
//!   rate-limited, 2,097,088 bytes by default, [`BYTE_RESET_UNIT_BYTES`] gives the sources; 0 disables
//!   it, which is the HPCC simulator's behaviour). With F = `rpg_threshold` and the stages
//!   counted *before* the event: `max(time, byte stage) < F` → fast recovery `current ← ⌈(current +
//!   target)/2⌉`; `min(...) > F` → hyper increase `target += rpg_hai_rate`; otherwise additive increase
//!   `target += rpg_ai_rate`; after an increase of the target, `current ← (current + target)/2`. The target
//!   is capped at the maximum rate. (Without a byte counter the stage is the time stage alone, exactly
//!   HPCC's `RateIncEventMlx`.)
//! * Once current and target are back at the maximum rate the rate timer stops (in HPCC it keeps firing
//!   but can change nothing until the next decrease, which resets the stages anyway).
//!
//! Rates are bits per second (`u64`), so the arithmetic is exact integer arithmetic.
//!
//! # Time scale
//!
//! NVIDIA's defaults are tuned for 25–100 Gb/s, where a congested QP gets a CNP every few microseconds.
//! On a lab link N times slower everything that happens per packet happens N times less often: at
//! 200 Mb/s a QP sees a CNP about once a millisecond, α (1 µs period, g = 5/1024) has decayed to nothing
//! between two of them, each cut is a fraction of a percent and DCQCN does nothing visible.
//! [`DcqcnParams::time_scale`] = N runs the same firmware N times slower, so that a NIC at line rate R/N
//! behaves as the one at R with time stretched by N:
//!
//! * every period × N: `dce_tcp_rtt`, `rate_reduce_monitor_period`, `rpg_time_reset` (and the decrease
//!   grid's 1 ns offset), and the notification point's CNP interval (`NpParams::cnp_interval_ns`, applied
//!   by the NIC);
//! * every rate ÷ N: `rpg_ai_rate`, `rpg_hai_rate`, `rpg_min_rate`, `rate_to_set_on_first_cnp`,
//!   `rpg_max_rate` (kept in bits per second inside, so 5 Mb/s ÷ 500 is exactly 10 kb/s);
//! * unchanged: bytes and ratios. `rpg_byte_reset` is an amount of data, which a flow at rate r/N sends in
//!   N times the time the flow at r takes, so the byte counter keeps its place among the timers; α, G,
//!   `rpg_gd`, `rpg_min_dec_fac`, `rpg_threshold` and the stage counts are dimensionless.
//!
//! The mapping is t → N·t, rate → rate/N, bytes → bytes. The rest of the loop maps the same way on its
//! own: a packet takes N times longer on an N times slower line, a switch's ECN and PFC thresholds are in
//! bytes, and PFC quanta are bit times of the port. What does not scale is the lab's own latency (kernel,
//! switch model, scheduling), which at 200 Mb/s is of the order of what a 100 Gb/s fabric's microseconds
//! become × 500. With scale 1 (the default) nothing changes.

mod params;
#[cfg(test)]
mod tests;

use crate::time::{Instant, Nanos};
pub use params::{BYTE_RESET_UNIT_BYTES, DcqcnParams};
pub(crate) use params::{field_names, set_field};

/// α as the parameters give it (`initial_alpha_value`, `dce_tcp_g`): a fixed-point fraction with 10
/// fractional bits.
pub const ALPHA_ONE: u32 = 1024;
/// Extra fractional bits α is kept with inside (30 in all). With g = 5/1024 a 10-bit α truncated at
/// every 1 µs update would lose one unit per update below 205/1024, so a CNP's +5/1024 would be gone in
/// 5 µs whatever g says: the EWMA g describes needs the finer α that the HPCC simulator keeps in a
/// double. The parameters stay in NVIDIA's 1/1024 units.
const ALPHA_EXTRA_BITS: u32 = 20;
/// The largest [`DcqcnParams::time_scale`] (100 Gb/s down to 100 kb/s).
pub const MAX_TIME_SCALE: u32 = 1_000_000;

/// The longest DCQCN period once scaled.
pub const MAX_PERIOD_NS: u64 = 1 << 47;

/// What triggered a rate increase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum IncreaseEvent {
    Timer,
    Bytes,
}

/// The parameters in the units the state machine runs on, with the time scale applied.
#[derive(Debug, Clone, Copy)]
struct Scaled {
    alpha_period: Nanos,
    decrease_period: Nanos,
    /// Offset of the decrease grid from the first CNP (1 ns × N).
    decrease_offset: Nanos,
    timer: Nanos,
    ai_bps: u64,
    hai_bps: u64,
}

/// `mbps` Mb/s ÷ `scale` in bits per second, rounded to the nearest; a non-zero rate stays ≥ 1 b/s.
fn scaled_bps(mbps: u32, scale: u64) -> u64 {
    let bps = u64::from(mbps) * 1_000_000;
    if bps == 0 { 0 } else { ((bps + scale / 2) / scale).max(1) }
}

/// The reaction-point state of one flow.
#[derive(Debug, Clone)]
pub struct Dcqcn {
    params: DcqcnParams,
    scaled: Scaled,
    max_rate_bps: u64,
    min_rate_bps: u64,
    current_bps: u64,
    target_bps: u64,
    /// A CNP has been received at least once (α and the decrease grid exist).
    active: bool,
    /// α in 1/2^30 (1/1024 with [`ALPHA_EXTRA_BITS`] more), as of tick `alpha_ticks_done`.
    alpha: u64,
    alpha_cnp_arrived: bool,
    /// α tick k happens at `alpha_origin + k × dce_tcp_rtt` (k ≥ 1).
    alpha_origin: Instant,
    alpha_ticks_done: u64,
    /// Decrease checks happen at `decrease_origin + k × period` (k ≥ 1); one is pending after a CNP.
    decrease_origin: Instant,
    next_decrease: Option<Instant>,
    rate_timer: Option<Instant>,
    time_stage: u32,
    byte_stage: u32,
    bytes_since_event: u64,
    cnps: u64,
    decreases: u64,
    increases: u64,
}

impl Dcqcn {
    /// A flow that may send at up to `max_rate_bps` (the line rate, or the flow's configured rate); it
    /// starts there.
    /// With `params.time_scale` = N, `max_rate_bps` is the slow line's rate (R/N), not the rate the
    /// parameters are tuned for. A `time_scale` of 0 counts as 1 (`validate` refuses it).
    pub fn new(params: DcqcnParams, max_rate_bps: u64) -> Dcqcn {
        let n = u64::from(params.time_scale.max(1));
        let max_rate_bps = match params.rpg_max_rate_mbps {
            0 => max_rate_bps,
            cap => max_rate_bps.min(scaled_bps(cap, n)),
        }
        .max(1);
        let scaled = Scaled {
            alpha_period: Nanos::from_ns(params.dce_tcp_rtt_ns.saturating_mul(n).max(1)),
            decrease_period: Nanos::from_ns(params.rate_reduce_monitor_period_ns.saturating_mul(n).max(1)),
            decrease_offset: Nanos::from_ns(n),
            timer: Nanos::from_ns(params.rpg_time_reset_ns.saturating_mul(n).max(1)),
            ai_bps: scaled_bps(params.rpg_ai_rate_mbps, n),
            hai_bps: scaled_bps(params.rpg_hai_rate_mbps, n),
        };
        Dcqcn {
            params,
            scaled,
            max_rate_bps,
            min_rate_bps: scaled_bps(params.rpg_min_rate_mbps, n).clamp(1, max_rate_bps),
            current_bps: max_rate_bps,
            target_bps: max_rate_bps,
            active: false,
            alpha: u64::from(params.initial_alpha_value) << ALPHA_EXTRA_BITS,
            alpha_cnp_arrived: false,
            alpha_origin: Instant::ZERO,
            alpha_ticks_done: 0,
            decrease_origin: Instant::ZERO,
            next_decrease: None,
            rate_timer: None,
            time_stage: 0,
            byte_stage: 0,
            bytes_since_event: 0,
            cnps: 0,
            decreases: 0,
            increases: 0,
        }
    }

    pub fn params(&self) -> &DcqcnParams {
        &self.params
    }

    /// The rate the flow may send at now.
    pub fn rate_bps(&self) -> u64 {
        self.current_bps
    }

    pub fn target_bps(&self) -> u64 {
        self.target_bps
    }

    pub fn max_rate_bps(&self) -> u64 {
        self.max_rate_bps
    }

    /// α (in 1/1024) as it is at `now`, pending ticks applied.
    pub fn alpha_at(&self, now: Instant) -> u32 {
        (self.alpha_fraction_at(now) >> ALPHA_EXTRA_BITS) as u32
    }

    /// α as a fraction of 1 at `now`, with the precision it is kept in.
    pub fn alpha_f64_at(&self, now: Instant) -> f64 {
        self.alpha_fraction_at(now) as f64 / f64::from(ALPHA_ONE << ALPHA_EXTRA_BITS)
    }

    fn alpha_fraction_at(&self, now: Instant) -> u64 {
        let mut copy = self.clone();
        copy.settle_alpha(now);
        copy.alpha
    }

    pub fn cnps(&self) -> u64 {
        self.cnps
    }

    pub fn decreases(&self) -> u64 {
        self.decreases
    }

    pub fn increases(&self) -> u64 {
        self.increases
    }

    /// Current and target below the maximum: the rate timer and byte counter are running.
    pub fn is_limited(&self) -> bool {
        self.rate_timer.is_some()
    }

    /// A CNP for this flow arrived.
    pub fn on_cnp(&mut self, now: Instant) {
        self.cnps += 1;
        if !self.active {
            self.active = true;
            self.alpha = u64::from(self.params.initial_alpha_value) << ALPHA_EXTRA_BITS;
            self.alpha_cnp_arrived = false;
            self.alpha_origin = now;
            self.alpha_ticks_done = 0;
            if self.params.rate_to_set_on_first_cnp_mbps > 0 {
                let n = u64::from(self.params.time_scale.max(1));
                let rate = scaled_bps(self.params.rate_to_set_on_first_cnp_mbps, n);
                self.current_bps = rate.clamp(self.min_rate_bps, self.max_rate_bps);
            }
            self.target_bps = self.current_bps;
            self.decrease_origin = now + self.scaled.decrease_offset;
            self.next_decrease = Some(self.decrease_origin + self.scaled.decrease_period);
            return;
        }
        self.settle_alpha(now);
        self.alpha_cnp_arrived = true;
        if self.next_decrease.is_none() {
            let period = self.scaled.decrease_period;
            let k = now.saturating_since(self.decrease_origin).as_ns() / period.as_ns() + 1;
            let mut at = self.decrease_origin + period * k;
            if at <= now {
                at += period;
            }
            self.next_decrease = Some(at);
        }
    }

    /// `bytes` (frame bytes) of this flow went out: drives the byte counter while rate-limited.
    pub fn on_sent(&mut self, bytes: u64) {
        let reset = u64::from(self.params.rpg_byte_reset_64bytes) * BYTE_RESET_UNIT_BYTES;
        if reset == 0 || !self.is_limited() {
            return;
        }
        self.bytes_since_event += bytes;
        while self.bytes_since_event >= reset && self.is_limited() {
            self.bytes_since_event -= reset;
            self.increase(IncreaseEvent::Bytes);
        }
    }

    /// The next instant [`Dcqcn::handle_timeout`] has work: a pending decrease check or the rate timer.
    pub fn poll_at(&self) -> Option<Instant> {
        match (self.next_decrease, self.rate_timer) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Runs the decrease check and rate-timer events due by `now`, each at its own instant.
    pub fn handle_timeout(&mut self, now: Instant) {
        loop {
            let decrease = self.next_decrease.filter(|&t| t <= now);
            let timer = self.rate_timer.filter(|&t| t <= now);
            match (decrease, timer) {
                (Some(d), t) if t.is_none_or(|t| d <= t) => self.decrease(d),
                (_, Some(t)) => {
                    self.rate_timer = Some(t + self.scaled.timer);
                    self.increase(IncreaseEvent::Timer);
                }
                _ => break,
            }
        }
    }

    fn settle_alpha(&mut self, now: Instant) {
        if !self.active {
            return;
        }
        let due = now.saturating_since(self.alpha_origin).as_ns() / self.scaled.alpha_period.as_ns();
        let mut pending = due.saturating_sub(self.alpha_ticks_done);
        if pending == 0 {
            return;
        }
        let g = u64::from(self.params.dce_tcp_g);
        let decay = |a: u64| (g * a) >> 10;
        self.alpha = decay(self.alpha);
        if self.alpha_cnp_arrived {
            self.alpha += u64::from(ALPHA_ONE - self.params.dce_tcp_g) << ALPHA_EXTRA_BITS;
            self.alpha_cnp_arrived = false;
        }
        pending -= 1;
        // Without CNPs α only decays; it reaches 0 within ~4,500 ticks (g = 5/1024 from 1 in 2^-30
        // steps), so this loop is bounded.
        while pending > 0 && self.alpha > 0 {
            let next = decay(self.alpha);
            if next == self.alpha {
                break;
            }
            self.alpha = next;
            pending -= 1;
        }
        self.alpha_ticks_done = due;
    }

    fn decrease(&mut self, at: Instant) {
        self.next_decrease = None;
        self.settle_alpha(at);
        let p = self.params;
        if self.clamps_target() {
            self.target_bps = self.current_bps;
        }
        let old = u128::from(self.current_bps);
        let cut = (old * u128::from(self.alpha)) >> (p.rpg_gd + ALPHA_EXTRA_BITS);
        let floor = old * u128::from(p.rpg_min_dec_fac) / 100;
        let new = old.saturating_sub(cut).max(floor) as u64;
        self.current_bps = new.clamp(self.min_rate_bps, self.max_rate_bps);
        self.time_stage = 0;
        self.byte_stage = 0;
        self.bytes_since_event = 0;
        self.rate_timer = Some(at + self.scaled.timer);
        self.decreases += 1;
    }

    /// Whether a decrease first sets target = current. NVIDIA's text for `clamp_tgt_rate_after_time_inc`
    /// ("the target rate should be updated if the transmission rate was increased due to the timer, and
    /// not only due to the byte counter"; Mellanox/mstflint `tools_layouts/tools_open_layouts.h`,
    /// `tools_open_roce_cc_ecn`) makes an increase by the byte counter clamp in any case, and the flag add
    /// the timer's; the DCQCN authors' simulator does exactly that (bobzhuyb/ns3-rdma
    /// `qbb-net-device.cc`, `rpr_cnm_received`). With no increase since the last cut the target stays.
    fn clamps_target(&self) -> bool {
        let p = &self.params;
        p.clamp_tgt_rate || self.byte_stage > 0 || (p.clamp_tgt_rate_after_time_inc && self.time_stage > 0)
    }

    fn increase(&mut self, event: IncreaseEvent) {
        let p = self.params;
        let f = p.rpg_threshold;
        let (high, low) = if p.rpg_byte_reset_64bytes == 0 {
            (self.time_stage, self.time_stage)
        } else {
            (self.time_stage.max(self.byte_stage), self.time_stage.min(self.byte_stage))
        };
        if high >= f {
            let step = if low > f { self.scaled.hai_bps } else { self.scaled.ai_bps };
            self.target_bps = (self.target_bps + step).min(self.max_rate_bps);
        }
        // Rounded up, so that current reaches a target it is one bit/s below.
        self.current_bps = (self.current_bps + self.target_bps).div_ceil(2);
        match event {
            IncreaseEvent::Timer => self.time_stage = self.time_stage.saturating_add(1),
            IncreaseEvent::Bytes => self.byte_stage = self.byte_stage.saturating_add(1),
        }
        self.increases += 1;
        if self.current_bps >= self.max_rate_bps && self.target_bps >= self.max_rate_bps {
            self.current_bps = self.max_rate_bps;
            self.rate_timer = None;
            self.bytes_since_event = 0;
        }
    }
}
