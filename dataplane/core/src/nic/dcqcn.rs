//! The DCQCN reaction point (RP) of one flow: a pure state machine over integer time, driven by CNP
//! arrivals, bytes sent and timeouts.
//!
//! It follows the "Mellanox version" of the HPCC simulator (alibaba-edu/High-Precision-Congestion-Control:
//! `simulation/src/point-to-point/model/rdma-hw.cc`, cc_mode 1),
//! which models ConnectX-4+ firmware, with NVIDIA's parameter names and defaults (DOCA "DCQCN CC
//! Parameters", Mellanox DOC-2790; `docs/nic.md`, "Reaction point"):
//!
//! * **α** is kept in 1/1024 units as the firmware does. It is updated every `dce_tcp_rtt` (1 µs) from the
//!   first CNP on: `α ← G·α/1024 + (1024 − G)` if a CNP arrived in the period, else `α ← G·α/1024`
//!   (`dce_tcp_g` = G = 1019, i.e. g = 5/1024). The first CNP sets `α = initial_alpha_value` (1023). The
//!   1 µs timer is never scheduled: ticks are applied lazily when α is needed (`docs/nic.md`: per-QP 1 µs
//!   timers would dominate a simulation), which gives the same values.
//! * **Decrease**: at most one per `rate_reduce_monitor_period` (4 µs). The checks run on a grid that
//!   starts 1 ns after the first CNP (so a check sees the α tick of the same microsecond, as in HPCC);
//!   a check after a CNP sets `target ← current` (if `clamp_tgt_rate`, or if
//!   `clamp_tgt_rate_after_time_inc` and the rate timer has fired since the last decrease; HPCC's
//!   `CLAMP_TARGET_RATE = 0` rule), then `current ← current − current·α / 2^rpg_gd` (α/2 for `rpg_gd` =
//!   11), bounded below by `rpg_min_dec_fac` % of the old rate and by `rpg_min_rate`. It resets the increase
//!   stages and the byte counter and restarts the rate timer. The first CNP itself sets
//!   `current = target = rate_to_set_on_first_cnp` (0 = keep the current rate) and only arms the check.
//! * **Increase** events come from the rate timer (`rpg_time_reset`, 300 µs after the decrease and then
//!   periodically) and from the byte counter (every `rpg_byte_reset` bytes sent while rate-limited; 0
//!   disables it, which is the HPCC simulator's behaviour). With F = `rpg_threshold` and the stages
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
//! * unchanged: bytes and ratios. `rpg_byte_reset` is a number of bytes, which a flow at rate r/N sends in
//!   N times the time the flow at r takes, so the byte counter keeps its place among the timers; α, G,
//!   `rpg_gd`, `rpg_min_dec_fac`, `rpg_threshold` and the stage counts are dimensionless.
//!
//! The mapping is t → N·t, rate → rate/N, bytes → bytes. The rest of the loop maps the same way on its
//! own: a packet takes N times longer on an N times slower line, a switch's ECN and PFC thresholds are in
//! bytes, and PFC quanta are bit times of the port. What does not scale is the lab's own latency (kernel,
//! switch model, scheduling), which at 200 Mb/s is of the order of what a 100 Gb/s fabric's microseconds
//! become × 500. With scale 1 (the default) nothing changes.

use serde::{Deserialize, Serialize};

/// α is a fixed-point fraction with 10 fractional bits.
pub const ALPHA_ONE: u32 = 1024;
/// The largest [`DcqcnParams::time_scale`] (100 Gb/s down to 100 kb/s).
pub const MAX_TIME_SCALE: u32 = 1_000_000;

/// DCQCN reaction-point parameters, named as MLNX_OFED names them. `Default` is NVIDIA's ConnectX-4+
/// firmware default (`docs/nic.md`, "Reaction point").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct DcqcnParams {
    /// `dce_tcp_g`, G in 1/1024: α ← G·α/1024 (+ 1024 − G if a CNP arrived). NVIDIA 1019 (g = 5/1024).
    pub dce_tcp_g: u32,
    /// `dce_tcp_rtt`: the α update period. NVIDIA 1 µs.
    pub dce_tcp_rtt_ns: u64,
    /// `initial_alpha_value`, in 1/1024: α on the first CNP of the flow. NVIDIA 1023.
    pub initial_alpha_value: u32,
    /// `rate_to_set_on_first_cnp`: current and target rate on the first CNP; 0 keeps the current rate.
    /// NVIDIA 0.
    pub rate_to_set_on_first_cnp_mbps: u32,
    /// `rpg_min_dec_fac`: one decrease leaves at least this percentage of the rate. NVIDIA 50.
    pub rpg_min_dec_fac: u32,
    /// `rpg_min_rate`: the rate never goes below this. NVIDIA 1 Mb/s.
    pub rpg_min_rate_mbps: u32,
    /// `rpg_gd`: decrease = rate·α / 2^rpg_gd with α in 1/1024, i.e. 11 ⇒ rate·α/2. NVIDIA 11.
    pub rpg_gd: u32,
    /// `rate_reduce_monitor_period`: at most one decrease per period. NVIDIA 4 µs.
    pub rate_reduce_monitor_period_ns: u64,
    /// `rpg_time_reset`: the rate-increase timer. NVIDIA 300 µs.
    pub rpg_time_reset_ns: u64,
    /// `rpg_byte_reset`: bytes sent between byte-counter increase events; 0 disables the byte counter.
    /// NVIDIA 32767 B (firmware NVConfig `RPG_BYTE_RESET`; `docs/nic.md`, "Reaction point").
    pub rpg_byte_reset_bytes: u64,
    /// `rpg_threshold`: F, the number of fast-recovery steps before additive increase. NVIDIA 1.
    pub rpg_threshold: u32,
    /// `rpg_ai_rate`: additive increase of the target. NVIDIA 5 Mb/s.
    pub rpg_ai_rate_mbps: u32,
    /// `rpg_hai_rate`: hyper increase of the target. NVIDIA 50 Mb/s.
    pub rpg_hai_rate_mbps: u32,
    /// `rpg_max_rate`: cap of the target; 0 = the flow's maximum (line or configured rate). NVIDIA 0.
    pub rpg_max_rate_mbps: u32,
    /// `clamp_tgt_rate`: every decrease first sets target = current. NVIDIA 0.
    pub clamp_tgt_rate: bool,
    /// `clamp_tgt_rate_after_time_inc`: a decrease sets target = current if the rate timer has fired
    /// since the previous decrease. NVIDIA 1.
    pub clamp_tgt_rate_after_time_inc: bool,
    /// N ≥ 1: run the parameters above N times slower (periods × N, rates ÷ N, bytes unchanged; see the
    /// module documentation), for a line N times slower than the one they are tuned for. The NIC applies
    /// it to its notification point's CNP interval too. 1 = as written.
    pub time_scale: u32,
}

impl Default for DcqcnParams {
    fn default() -> Self {
        DcqcnParams {
            dce_tcp_g: 1019,
            dce_tcp_rtt_ns: 1_000,
            initial_alpha_value: 1023,
            rate_to_set_on_first_cnp_mbps: 0,
            rpg_min_dec_fac: 50,
            rpg_min_rate_mbps: 1,
            rpg_gd: 11,
            rate_reduce_monitor_period_ns: 4_000,
            rpg_time_reset_ns: 300_000,
            rpg_byte_reset_bytes: 32_767,
            rpg_threshold: 1,
            rpg_ai_rate_mbps: 5,
            rpg_hai_rate_mbps: 50,
            rpg_max_rate_mbps: 0,
            clamp_tgt_rate: false,
            clamp_tgt_rate_after_time_inc: true,
            time_scale: 1,
        }
    }
}

impl DcqcnParams {
    /// The HPCC simulator's `dcqcn` variant of `simulation/run.py` (used in the HPCC paper; `docs/nic.md`)
    /// for a NIC of `line_rate_mbps`: g = 1/256 (G = 1020), α starts at 1, α period 1 µs, decrease period
    /// 4 µs, rate timer 300 µs, no byte counter, F = 1, RAI = 5 Mb/s and RHAI = 50 Mb/s per 25 Gb/s of line
    /// rate, minimum rate 1 Gb/s, no minimum decrease factor, target clamped only after a timer increase.
    pub fn hpcc(line_rate_mbps: u32) -> DcqcnParams {
        let per_25g = |mbps: u64| (mbps * u64::from(line_rate_mbps) / 25_000).max(1) as u32;
        DcqcnParams {
            dce_tcp_g: 1020,
            dce_tcp_rtt_ns: 1_000,
            initial_alpha_value: ALPHA_ONE,
            rate_to_set_on_first_cnp_mbps: 0,
            rpg_min_dec_fac: 0,
            rpg_min_rate_mbps: 1_000,
            rpg_gd: 11,
            rate_reduce_monitor_period_ns: 4_000,
            rpg_time_reset_ns: 300_000,
            rpg_byte_reset_bytes: 0,
            rpg_threshold: 1,
            rpg_ai_rate_mbps: per_25g(5),
            rpg_hai_rate_mbps: per_25g(50),
            rpg_max_rate_mbps: 0,
            clamp_tgt_rate: false,
            clamp_tgt_rate_after_time_inc: true,
            time_scale: 1,
        }
    }

    /// A field that makes the state machine meaningless, by name.
    pub fn validate(&self) -> Result<(), String> {
        if self.dce_tcp_g > ALPHA_ONE {
            return Err(format!("dce_tcp_g: {} is above 1024", self.dce_tcp_g));
        }
        if self.initial_alpha_value > ALPHA_ONE {
            return Err(format!("initial_alpha_value: {} is above 1024", self.initial_alpha_value));
        }
        if self.rpg_min_dec_fac > 100 {
            return Err(format!("rpg_min_dec_fac: {} is above 100 (%)", self.rpg_min_dec_fac));
        }
        if self.rpg_gd > 40 {
            return Err(format!("rpg_gd: {} is above 40", self.rpg_gd));
        }
        if !(1..=MAX_TIME_SCALE).contains(&self.time_scale) {
            return Err(format!("time_scale: {} is outside 1..={MAX_TIME_SCALE}", self.time_scale));
        }
        for (name, v) in [
            ("dce_tcp_rtt_ns", self.dce_tcp_rtt_ns),
            ("rate_reduce_monitor_period_ns", self.rate_reduce_monitor_period_ns),
            ("rpg_time_reset_ns", self.rpg_time_reset_ns),
        ] {
            if v == 0 {
                return Err(format!("{name}: must be > 0"));
            }
            // Periods up to ~1.8 × 10^14 ns (about two days) after scaling: no overflow in the timers.
            if v.checked_mul(u64::from(self.time_scale)).is_none_or(|t| t > MAX_PERIOD_NS) {
                return Err(format!(
                    "{name}: {v} ns × time_scale {} is above {MAX_PERIOD_NS} ns",
                    self.time_scale
                ));
            }
        }
        Ok(())
    }

    /// The parameter names [`DcqcnParams::set`] takes: the field names, units included.
    pub fn names() -> Vec<String> {
        match serde_json::to_value(DcqcnParams::default()) {
            Ok(serde_json::Value::Object(map)) => map.keys().cloned().collect(),
            _ => Vec::new(),
        }
    }

    /// Sets one parameter by its field name from text (a decimal number, or true/false/on/off/1/0 for the
    /// two clamp flags) and validates the result; on error nothing changes and the message names the
    /// parameter.
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), String> {
        let updated = set_field(self, name, value).ok_or_else(|| {
            format!("unknown DCQCN parameter {name:?} (known: {})", Self::names().join(", "))
        })??;
        updated.validate()?;
        *self = updated;
        Ok(())
    }
}

/// The longest DCQCN period once scaled.
pub const MAX_PERIOD_NS: u64 = 1 << 47;

/// `params` with the field `name` set from `value`, through serde (so the names are the field names and
/// the types are the fields'): `None` when there is no such field, `Some(Err)` when the value does not
/// fit it.
pub(crate) fn set_field<T: Serialize + serde::de::DeserializeOwned>(
    params: &T,
    name: &str,
    value: &str,
) -> Option<Result<T, String>> {
    use serde_json::Value;
    let Ok(Value::Object(mut map)) = serde_json::to_value(params) else { return None };
    let old = map.get(name)?;
    let text = value.trim();
    let new = match old {
        Value::Bool(_) => match text {
            "true" | "on" | "1" | "yes" => Value::Bool(true),
            "false" | "off" | "0" | "no" => Value::Bool(false),
            _ => return Some(Err(format!("{name}={value}: expected true or false"))),
        },
        _ => match text.parse::<u64>() {
            Ok(n) => Value::from(n),
            Err(_) => return Some(Err(format!("{name}={value}: expected a whole number ≥ 0"))),
        },
    };
    map.insert(name.to_owned(), new);
    Some(serde_json::from_value(Value::Object(map)).map_err(|e| format!("{name}={value}: {e}")))
}

/// What triggered a rate increase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum IncreaseEvent {
    Timer,
    Bytes,
}

/// The parameters in the units the state machine runs on, with the time scale applied.
#[derive(Debug, Clone, Copy)]
struct Scaled {
    alpha_period_ns: u64,
    decrease_period_ns: u64,
    /// Offset of the decrease grid from the first CNP (1 ns × N).
    decrease_offset_ns: u64,
    timer_ns: u64,
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
    /// α in 1/1024, as of tick `alpha_ticks_done`.
    alpha: u32,
    alpha_cnp_arrived: bool,
    /// α tick k happens at `alpha_origin_ns + k × dce_tcp_rtt` (k ≥ 1).
    alpha_origin_ns: u64,
    alpha_ticks_done: u64,
    /// Decrease checks happen at `decrease_origin_ns + k × period` (k ≥ 1); one is pending after a CNP.
    decrease_origin_ns: u64,
    next_decrease_ns: Option<u64>,
    rate_timer_ns: Option<u64>,
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
            alpha_period_ns: params.dce_tcp_rtt_ns.saturating_mul(n).max(1),
            decrease_period_ns: params.rate_reduce_monitor_period_ns.saturating_mul(n).max(1),
            decrease_offset_ns: n,
            timer_ns: params.rpg_time_reset_ns.saturating_mul(n).max(1),
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
            alpha: params.initial_alpha_value,
            alpha_cnp_arrived: false,
            alpha_origin_ns: 0,
            alpha_ticks_done: 0,
            decrease_origin_ns: 0,
            next_decrease_ns: None,
            rate_timer_ns: None,
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
    pub fn alpha_at(&self, now_ns: u64) -> u32 {
        let mut copy = self.clone();
        copy.settle_alpha(now_ns);
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
        self.rate_timer_ns.is_some()
    }

    /// A CNP for this flow arrived.
    pub fn on_cnp(&mut self, now_ns: u64) {
        self.cnps += 1;
        if !self.active {
            self.active = true;
            self.alpha = self.params.initial_alpha_value;
            self.alpha_cnp_arrived = false;
            self.alpha_origin_ns = now_ns;
            self.alpha_ticks_done = 0;
            if self.params.rate_to_set_on_first_cnp_mbps > 0 {
                let n = u64::from(self.params.time_scale.max(1));
                let rate = scaled_bps(self.params.rate_to_set_on_first_cnp_mbps, n);
                self.current_bps = rate.clamp(self.min_rate_bps, self.max_rate_bps);
            }
            self.target_bps = self.current_bps;
            self.decrease_origin_ns = now_ns + self.scaled.decrease_offset_ns;
            self.next_decrease_ns = Some(self.decrease_origin_ns + self.scaled.decrease_period_ns);
            return;
        }
        self.settle_alpha(now_ns);
        self.alpha_cnp_arrived = true;
        if self.next_decrease_ns.is_none() {
            let period = self.scaled.decrease_period_ns;
            let k = now_ns.saturating_sub(self.decrease_origin_ns) / period + 1;
            let mut at = self.decrease_origin_ns + k * period;
            if at <= now_ns {
                at += period;
            }
            self.next_decrease_ns = Some(at);
        }
    }

    /// `bytes` (frame bytes) of this flow went out: drives the byte counter while rate-limited.
    pub fn on_sent(&mut self, bytes: u64) {
        let reset = self.params.rpg_byte_reset_bytes;
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
    pub fn poll_at(&self) -> Option<u64> {
        match (self.next_decrease_ns, self.rate_timer_ns) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Runs the decrease check and rate-timer events due by `now_ns`, each at its own instant.
    pub fn handle_timeout(&mut self, now_ns: u64) {
        loop {
            let decrease = self.next_decrease_ns.filter(|&t| t <= now_ns);
            let timer = self.rate_timer_ns.filter(|&t| t <= now_ns);
            match (decrease, timer) {
                (Some(d), t) if t.is_none_or(|t| d <= t) => self.decrease(d),
                (_, Some(t)) => {
                    self.rate_timer_ns = Some(t + self.scaled.timer_ns);
                    self.increase(IncreaseEvent::Timer);
                }
                _ => break,
            }
        }
    }

    fn settle_alpha(&mut self, now_ns: u64) {
        if !self.active {
            return;
        }
        let due = now_ns.saturating_sub(self.alpha_origin_ns) / self.scaled.alpha_period_ns;
        let mut pending = due.saturating_sub(self.alpha_ticks_done);
        if pending == 0 {
            return;
        }
        let g = u64::from(self.params.dce_tcp_g);
        let decay = |a: u32| ((g * u64::from(a)) >> 10) as u32;
        self.alpha = decay(self.alpha);
        if self.alpha_cnp_arrived {
            self.alpha += ALPHA_ONE - self.params.dce_tcp_g;
            self.alpha_cnp_arrived = false;
        }
        pending -= 1;
        // Without CNPs α only decays; it reaches 0 within a few thousand ticks, so this loop is bounded.
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

    fn decrease(&mut self, at_ns: u64) {
        self.next_decrease_ns = None;
        self.settle_alpha(at_ns);
        let p = self.params;
        if p.clamp_tgt_rate || (p.clamp_tgt_rate_after_time_inc && self.time_stage > 0) {
            self.target_bps = self.current_bps;
        }
        let old = u128::from(self.current_bps);
        let cut = (old * u128::from(self.alpha)) >> p.rpg_gd;
        let floor = old * u128::from(p.rpg_min_dec_fac) / 100;
        let new = old.saturating_sub(cut).max(floor) as u64;
        self.current_bps = new.clamp(self.min_rate_bps, self.max_rate_bps);
        self.time_stage = 0;
        self.byte_stage = 0;
        self.bytes_since_event = 0;
        self.rate_timer_ns = Some(at_ns + self.scaled.timer_ns);
        self.decreases += 1;
    }

    fn increase(&mut self, event: IncreaseEvent) {
        let p = self.params;
        let f = p.rpg_threshold;
        let (high, low) = if p.rpg_byte_reset_bytes == 0 {
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
            self.rate_timer_ns = None;
            self.bytes_since_event = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const G100: u64 = 100_000_000_000;

    fn timer_only() -> DcqcnParams {
        DcqcnParams { rpg_byte_reset_bytes: 0, ..DcqcnParams::default() }
    }

    /// The firmware's α update, applied `n` times without a CNP.
    fn decay(mut a: u32, n: u32) -> u32 {
        for _ in 0..n {
            a = (1019 * a) >> 10;
        }
        a
    }

    #[test]
    fn first_cnp_cuts_after_the_monitor_period_with_decayed_alpha() {
        let mut rp = Dcqcn::new(timer_only(), G100);
        rp.on_cnp(0);
        assert_eq!(rp.rate_bps(), G100, "the first CNP only arms the check (rate_to_set_on_first_cnp = 0)");
        assert_eq!(rp.poll_at(), Some(4_001));
        rp.handle_timeout(4_000);
        assert_eq!(rp.rate_bps(), G100);
        // α: 1023 → 1018 → 1013 → 1008 → 1003 at 1..4 µs.
        assert_eq!(rp.alpha_at(4_001), 1003);
        assert_eq!(decay(1023, 4), 1003);
        rp.handle_timeout(4_001);
        // 100 G × (1 − 1003/2048) = 100 G − 48 974 609 375.
        assert_eq!(rp.rate_bps(), 51_025_390_625);
        assert_eq!(rp.target_bps(), G100, "no clamp before a timer increase");
        assert_eq!(rp.decreases(), 1);
        assert_eq!(rp.poll_at(), Some(304_001), "rate timer armed");
    }

    #[test]
    fn recovery_follows_the_timer_stages() {
        let mut rp = Dcqcn::new(timer_only(), G100);
        rp.on_cnp(0);
        rp.handle_timeout(4_001);
        let r0 = 51_025_390_625u64;
        // Stage 0 < F: fast recovery.
        rp.handle_timeout(304_000);
        assert_eq!(rp.rate_bps(), r0);
        rp.handle_timeout(304_001);
        let r1 = (r0 + G100).div_ceil(2);
        assert_eq!((rp.rate_bps(), rp.target_bps()), (r1, G100));
        // Stage 1 == F: additive increase (target already at the cap).
        rp.handle_timeout(604_001);
        let r2 = (r1 + G100).div_ceil(2);
        assert_eq!(rp.rate_bps(), r2);
        // A second CNP at 1 ms: α has decayed for 1000 ticks; the flag applies at the next tick, after the
        // decrease check at 1 000 001 (grid 1 + 4 µs·k). Target is clamped (the timer has fired).
        rp.handle_timeout(904_001);
        let r3 = (r2 + G100).div_ceil(2);
        assert_eq!(rp.rate_bps(), r3);
        rp.on_cnp(1_000_000);
        assert_eq!(rp.poll_at(), Some(1_000_001));
        rp.handle_timeout(1_000_001);
        let alpha = decay(1023, 1000);
        assert_eq!(rp.alpha_at(1_000_001), alpha);
        let r4 = r3 - ((u128::from(r3) * u128::from(alpha)) >> 11) as u64;
        assert_eq!((rp.rate_bps(), rp.target_bps()), (r4, r3));
        // The CNP flag raises α at the next tick: G·α/1024 + 5.
        assert_eq!(rp.alpha_at(1_001_000), ((1019 * alpha) >> 10) + 5);
        assert_eq!(rp.poll_at(), Some(1_300_001));
    }

    #[test]
    fn hyper_increase_and_return_to_line_rate() {
        let p = DcqcnParams {
            rpg_byte_reset_bytes: 0,
            rpg_ai_rate_mbps: 1_000,
            rpg_hai_rate_mbps: 10_000,
            ..timer_only()
        };
        let mut rp = Dcqcn::new(p, G100);
        rp.on_cnp(0);
        rp.handle_timeout(4_001);
        rp.on_cnp(300_000); // clamps nothing yet (time stage 0): target stays 100 G
        rp.handle_timeout(304_001); // decrease at 300 001 first, rate timer restarted to 600 001
        assert_eq!(rp.decreases(), 2);
        assert_eq!(rp.poll_at(), Some(600_001));
        let mut t = 600_001;
        let mut steps = 0;
        while rp.is_limited() {
            rp.handle_timeout(t);
            t += 300_000;
            steps += 1;
            assert!(steps < 100);
        }
        assert_eq!((rp.rate_bps(), rp.target_bps(), rp.poll_at()), (G100, G100, None));
    }

    #[test]
    fn hyper_stage_raises_target_by_hai() {
        let p = DcqcnParams { rpg_byte_reset_bytes: 0, ..timer_only() };
        let mut rp = Dcqcn::new(p, G100);
        rp.on_cnp(0);
        rp.handle_timeout(4_001);
        rp.handle_timeout(304_001); // FR (stage 0)
        rp.on_cnp(310_000);
        rp.handle_timeout(312_001); // decrease with clamp: target = current
        let target = rp.target_bps();
        assert!(target < G100);
        rp.handle_timeout(612_001); // stage 0: FR
        assert_eq!(rp.target_bps(), target);
        rp.handle_timeout(912_001); // stage 1: AI
        assert_eq!(rp.target_bps(), target + 5_000_000);
        rp.handle_timeout(1_212_001); // stage 2: HAI
        assert_eq!(rp.target_bps(), target + 55_000_000);
    }

    #[test]
    fn byte_counter_drives_increases_while_limited() {
        let mut rp = Dcqcn::new(DcqcnParams::default(), G100);
        rp.on_sent(1_000_000);
        assert_eq!(rp.increases(), 0, "not rate-limited: the byte counter is off");
        rp.on_cnp(0);
        rp.handle_timeout(4_001);
        let r0 = rp.rate_bps();
        rp.on_sent(32_766);
        assert_eq!(rp.rate_bps(), r0);
        rp.on_sent(1);
        // Byte stage 0, time stage 0 → fast recovery.
        assert_eq!(rp.rate_bps(), (r0 + G100).div_ceil(2));
        rp.on_sent(32_767);
        // Byte stage 1 = F, time stage 0 → additive increase (target capped at 100 G).
        assert_eq!(rp.rate_bps(), ((r0 + G100).div_ceil(2) + G100).div_ceil(2));
        assert_eq!(rp.increases(), 2);
    }

    #[test]
    fn min_rate_and_min_dec_fac_bound_the_cut() {
        let p = DcqcnParams { rpg_min_dec_fac: 80, rpg_byte_reset_bytes: 0, ..DcqcnParams::default() };
        let mut rp = Dcqcn::new(p, G100);
        rp.on_cnp(0);
        rp.handle_timeout(4_001);
        assert_eq!(rp.rate_bps(), 80_000_000_000, "at most 20 % per decrease");
        let p = DcqcnParams { rpg_min_rate_mbps: 90_000, rpg_byte_reset_bytes: 0, ..DcqcnParams::default() };
        let mut rp = Dcqcn::new(p, G100);
        rp.on_cnp(0);
        rp.handle_timeout(4_001);
        assert_eq!(rp.rate_bps(), 90_000_000_000);
    }

    #[test]
    fn rate_on_first_cnp_and_hpcc_profile() {
        let p = DcqcnParams { rate_to_set_on_first_cnp_mbps: 10_000, ..DcqcnParams::default() };
        let mut rp = Dcqcn::new(p, G100);
        rp.on_cnp(0);
        assert_eq!((rp.rate_bps(), rp.target_bps()), (10_000_000_000, 10_000_000_000));
        let h = DcqcnParams::hpcc(100_000);
        assert_eq!((h.rpg_ai_rate_mbps, h.rpg_hai_rate_mbps, h.dce_tcp_g), (20, 200, 1020));
        assert!(h.validate().is_ok() && DcqcnParams::default().validate().is_ok());
        // HPCC: α = 1 on the first CNP, g = 1/256: after 4 ticks 1024·(255/256)^4 in fixed point.
        let mut rp = Dcqcn::new(h, G100);
        rp.on_cnp(0);
        assert_eq!(rp.alpha_at(4_001), 1008);
    }

    #[test]
    fn cnps_within_one_period_cause_one_decrease() {
        let mut rp = Dcqcn::new(timer_only(), G100);
        rp.on_cnp(0);
        for t in (100..4_000).step_by(100) {
            rp.on_cnp(t);
        }
        rp.handle_timeout(4_001);
        assert_eq!(rp.decreases(), 1);
        assert_eq!(rp.poll_at(), Some(304_001), "no check pending: no CNP after the decrease");
        rp.on_cnp(4_001);
        assert_eq!(rp.poll_at(), Some(8_001));
    }

    /// xorshift64*: a deterministic event schedule.
    fn next(state: &mut u64) -> u64 {
        *state ^= *state >> 12;
        *state ^= *state << 25;
        *state ^= *state >> 27;
        state.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// The same firmware at 100 Gb/s and, time-scaled by 500, at 200 Mb/s, fed the same CNPs and bytes
    /// with the slow one's clock stretched 500×: the same α, the same decisions at 500× the instants, and
    /// rates 500× lower within rounding. Both with the byte counter and with the timer only.
    #[test]
    fn time_scale_stretches_the_trajectory() {
        const N: u64 = 500;
        for byte_reset in [32_767, 0] {
            let p = DcqcnParams { rpg_byte_reset_bytes: byte_reset, ..DcqcnParams::default() };
            let mut fast = Dcqcn::new(p, G100);
            let mut slow = Dcqcn::new(DcqcnParams { time_scale: N as u32, ..p }, G100 / N);
            let (mut t, mut rng, mut worst) = (0u64, 0x5eed_u64, 0u64);
            for step in 0..200_000u32 {
                let r = next(&mut rng);
                t += r % 1_500; // a 4 KB packet at 100 G takes ~330 ns; CNPs come in bursts
                fast.handle_timeout(t);
                slow.handle_timeout(t * N);
                // CNPs in bursts: a congested phase of every 2^14 steps, quiet otherwise.
                let congested = (step >> 14) % 3 != 2;
                if congested && r.is_multiple_of(7) {
                    fast.on_cnp(t);
                    slow.on_cnp(t * N);
                } else {
                    fast.on_sent(4_136);
                    slow.on_sent(4_136);
                }
                assert_eq!(slow.next_decrease_ns, fast.next_decrease_ns.map(|p| p * N), "step {step} at {t}");
                assert_eq!(slow.alpha_at(t * N), fast.alpha_at(t), "step {step}");
                assert_eq!(slow.decreases(), fast.decreases(), "step {step}");
                if slow.is_limited() && fast.is_limited() {
                    assert_eq!(slow.rate_timer_ns, fast.rate_timer_ns.map(|p| p * N), "step {step}");
                    assert_eq!((slow.time_stage, slow.byte_stage), (fast.time_stage, fast.byte_stage));
                } else if slow.is_limited() != fast.is_limited() {
                    // Recovery ends when current reaches the line rate. Halving the gap, the slow flow is
                    // within 1 b/s of it (500 b/s at 100 G) some increase events before the fast one:
                    // rounding, which the next decrease (it resets the stages) wipes out.
                    let limited = if fast.is_limited() { fast.rate_bps() } else { slow.rate_bps() * N };
                    assert!(limited >= G100 - G100 / 1_000_000, "step {step}: {fast:?}");
                }
                for (s, f) in [(slow.rate_bps(), fast.rate_bps()), (slow.target_bps(), fast.target_bps())] {
                    worst = worst.max((s * N).abs_diff(f));
                }
            }
            assert!(fast.decreases() > 1_000 && fast.increases() > 100, "{fast:?}");
            // Rounding: tens of bit/s at 200 Mb/s at worst (× 500 at 100 Gb/s), carried from one decision
            // to the next: within 10^-6 of the line rate.
            assert!(worst <= G100 / 1_000_000, "byte_reset {byte_reset}: off by {worst} b/s at 100 G");
        }
    }

    #[test]
    fn time_scale_divides_the_rate_steps() {
        let p = DcqcnParams {
            time_scale: 500,
            rpg_byte_reset_bytes: 0,
            rpg_min_rate_mbps: 10,
            rate_to_set_on_first_cnp_mbps: 50_000,
            ..DcqcnParams::default()
        };
        let line = 200_000_000;
        let mut rp = Dcqcn::new(p, line);
        rp.on_cnp(0);
        assert_eq!(rp.rate_bps(), 100_000_000, "50 G on the first CNP ÷ 500");
        assert_eq!(rp.poll_at(), Some(500 + 2_000_000), "the 4 µs check × 500, from 1 ns × 500");
        rp.handle_timeout(2_000_500);
        assert_eq!(rp.alpha_at(2_000_500), 1003, "four 500 µs α periods");
        assert_eq!(rp.poll_at(), Some(2_000_500 + 150_000_000), "the 300 µs timer × 500");
        let target = rp.target_bps();
        rp.handle_timeout(152_000_500); // fast recovery
        rp.handle_timeout(302_000_500); // additive increase: 5 Mb/s ÷ 500
        assert_eq!(rp.target_bps(), target + 10_000);
        assert_eq!(scaled_bps(1, 3), 333_333);
        assert_eq!(scaled_bps(1, 1_000_000), 1);
        assert_eq!(scaled_bps(0, 7), 0);
        // The floor: 10 Mb/s ÷ 500 = 20 kb/s.
        let mut rp = Dcqcn::new(DcqcnParams { rpg_min_dec_fac: 0, ..p }, line);
        for k in 0..200 {
            rp.on_cnp(k * 2_000_000);
            rp.handle_timeout(k * 2_000_000 + 1_999_999);
        }
        assert_eq!(rp.rate_bps(), 20_000);
    }

    #[test]
    fn parameters_set_by_name_with_errors_that_name_them() {
        let mut p = DcqcnParams::default();
        p.set("time_scale", "500").unwrap();
        p.set("rpg_time_reset_ns", " 55000 ").unwrap();
        p.set("clamp_tgt_rate", "on").unwrap();
        assert_eq!((p.time_scale, p.rpg_time_reset_ns, p.clamp_tgt_rate), (500, 55_000, true));
        let names = DcqcnParams::names();
        assert_eq!(names.len(), 17);
        for name in &names {
            let e = p.clone().set(name, "x").unwrap_err();
            assert!(e.starts_with(&format!("{name}=x: expected")), "{e}");
        }
        let before = p;
        for (name, value, needle) in [
            ("rpg_bogus", "1", "unknown DCQCN parameter \"rpg_bogus\" (known: clamp_tgt_rate, "),
            ("time_scale", "0", "time_scale: 0 is outside 1..=1000000"),
            ("time_scale", "-3", "time_scale=-3: expected a whole number"),
            ("dce_tcp_g", "5000000000", "dce_tcp_g=5000000000: invalid value"),
            ("rpg_min_dec_fac", "101", "rpg_min_dec_fac: 101 is above 100 (%)"),
            ("dce_tcp_rtt_ns", "0", "dce_tcp_rtt_ns: must be > 0"),
            (
                "rpg_time_reset_ns",
                "1000000000000",
                "rpg_time_reset_ns: 1000000000000 ns × time_scale 500 is above",
            ),
            ("clamp_tgt_rate", "maybe", "clamp_tgt_rate=maybe: expected true or false"),
        ] {
            let e = p.set(name, value).unwrap_err();
            assert!(e.starts_with(needle), "{name}={value}: {e}");
            assert_eq!(p, before, "nothing changes on error");
        }
    }
}
