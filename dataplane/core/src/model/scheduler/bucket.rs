//! Token buckets (shapers, policers, minimum-bandwidth meters) and the unit of the weighted round's deficits.

use super::{DEFAULT_BURST_BYTES, DEFAULT_BURST_PACKETS, DWRR_BASE_QUANTUM_BYTES, QUEUES, QueueSettings};
use crate::model::config::{MeterType, SchedulerKind};
use crate::time::{Instant, Nanos};

/// Bucket tokens are stored ×1e9, so rate (per second) × elapsed ns adds whole scaled tokens.
const TOKEN_SCALE: i128 = 1_000_000_000;

/// A token bucket (shaper, policer or minimum-bandwidth meter).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct TokenBucket {
    meter: MeterType,
    rate_per_s: u64,
    burst: u64,
    /// Tokens × [`TOKEN_SCALE`] as of `updated`; at most `burst`, negative after a frame larger than the burst.
    tokens_scaled: i128,
    updated: Instant,
}

impl TokenBucket {
    /// A full bucket, or `None` for rate 0 (no limit / no guarantee).
    pub(super) fn new(meter: MeterType, rate_per_s: u64, burst: Option<u64>, now: Instant) -> Option<Self> {
        if rate_per_s == 0 {
            return None;
        }
        let burst = burst.unwrap_or(match meter {
            MeterType::Bytes => DEFAULT_BURST_BYTES,
            MeterType::Packets => DEFAULT_BURST_PACKETS,
        });
        let tokens_scaled = i128::from(burst) * TOKEN_SCALE;
        Some(TokenBucket { meter, rate_per_s, burst, tokens_scaled, updated: now })
    }

    /// As [`TokenBucket::new`], carrying the fill level of `old` (capped at the new burst) when the meter
    /// type is unchanged, so reconfiguring does not hand out a fresh burst.
    pub(super) fn reconfigured(
        old: Option<&TokenBucket>,
        meter: MeterType,
        rate_per_s: u64,
        burst: Option<u64>,
        now: Instant,
    ) -> Option<Self> {
        let mut bucket = TokenBucket::new(meter, rate_per_s, burst, now)?;
        if let Some(old) = old.filter(|old| old.meter == meter) {
            bucket.tokens_scaled = old.tokens_at(now).min(bucket.cap_scaled());
            bucket.updated = old.updated.max(now);
        }
        Some(bucket)
    }

    pub(super) fn cap_scaled(&self) -> i128 {
        i128::from(self.burst) * TOKEN_SCALE
    }

    pub(super) fn cost(&self, wire_len: usize) -> u64 {
        match self.meter {
            MeterType::Bytes => wire_len as u64,
            MeterType::Packets => 1,
        }
    }

    /// What the bucket must hold for the frame to go.
    pub(super) fn threshold_scaled(&self, wire_len: usize) -> i128 {
        i128::from(self.cost(wire_len).min(self.burst)) * TOKEN_SCALE
    }

    pub(super) fn tokens_at(&self, now: Instant) -> i128 {
        let cap = self.cap_scaled();
        if self.tokens_scaled >= cap {
            return self.tokens_scaled;
        }
        let elapsed = now.saturating_since(self.updated);
        let room = (cap - self.tokens_scaled) as u128;
        let refill = u128::from(self.rate_per_s) * u128::from(elapsed.as_ns());
        self.tokens_scaled + refill.min(room) as i128
    }

    pub(super) fn refill(&mut self, now: Instant) {
        self.tokens_scaled = self.tokens_at(now);
        self.updated = self.updated.max(now);
    }

    pub(super) fn allows(&self, now: Instant, wire_len: usize) -> bool {
        self.tokens_at(now) >= self.threshold_scaled(wire_len)
    }

    /// Not in debt: the port shaper's gate, which does not depend on the frame the port sends next.
    pub(super) fn is_open(&self, now: Instant) -> bool {
        self.tokens_at(now) >= 0
    }

    /// Earliest instant >= now at which [`TokenBucket::allows`] holds.
    pub(super) fn ready_at(&self, now: Instant, wire_len: usize) -> Instant {
        self.holds_at(now, self.threshold_scaled(wire_len))
    }

    /// Earliest instant >= now at which [`TokenBucket::is_open`] holds.
    pub(super) fn open_at(&self, now: Instant) -> Instant {
        self.holds_at(now, 0)
    }

    /// Earliest instant >= now at which the bucket holds `threshold_scaled`.
    pub(super) fn holds_at(&self, now: Instant, threshold_scaled: i128) -> Instant {
        let from = now.max(self.updated);
        let missing = threshold_scaled - self.tokens_at(from);
        if missing <= 0 {
            return from;
        }
        let wait_ns = (missing as u128).div_ceil(u128::from(self.rate_per_s));
        from + Nanos::from_ns(u64::try_from(wait_ns).unwrap_or(u64::MAX))
    }

    /// Takes the frame's cost. Without `allow_debt` the bucket stops at empty (a meter that merely measures
    /// traffic it did not admit).
    pub(super) fn charge(&mut self, now: Instant, wire_len: usize, allow_debt: bool) {
        self.refill(now);
        let after = self.tokens_scaled - i128::from(self.cost(wire_len)) * TOKEN_SCALE;
        self.tokens_scaled = if allow_debt { after } else { after.max(self.tokens_scaled.min(0)) };
    }
}

/// The unit of the weighted round's deficits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum CreditUnit {
    /// DWRR (or a DWRR/WRR mix): bytes, quantum `weight × DWRR_BASE_QUANTUM_BYTES`.
    Bytes,
    /// WRR only: packets, quantum `weight`.
    Packets,
}

impl CreditUnit {
    pub(super) fn of(queues: &[QueueSettings; QUEUES]) -> Self {
        let mut weighted = queues.iter().filter(|q| q.is_weighted()).peekable();
        if weighted.peek().is_some() && weighted.all(|q| q.kind == SchedulerKind::Wrr) {
            CreditUnit::Packets
        } else {
            CreditUnit::Bytes
        }
    }

    pub(super) fn quantum(self, weight: u8) -> u64 {
        let weight = u64::from(weight.max(1));
        match self {
            CreditUnit::Bytes => weight * DWRR_BASE_QUANTUM_BYTES,
            CreditUnit::Packets => weight,
        }
    }

    pub(super) fn cost(self, wire_len: usize) -> u64 {
        match self {
            CreditUnit::Bytes => wire_len as u64,
            CreditUnit::Packets => 1,
        }
    }
}
