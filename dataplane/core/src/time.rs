//! Time in the models: an [`Instant`] (a point on the model's clock) and a [`Nanos`] (a span), both whole
//! nanoseconds. The models never read a clock: whoever drives them (the simulator's calendar, a daemon's
//! runtime) says what time it is, and the origin is the driver's (the start of a simulation, the daemon's
//! start). Two types rather than two `u64`s so that the kinds cannot be mixed by accident: adding two
//! instants, or passing a delay where a deadline is wanted, no longer compiles. Only the arithmetic that
//! means something exists:
//!
//! - `Instant + Nanos = Instant` (and `-`), saturating at the ends of the clock rather than wrapping: a
//!   deadline "never" (`u64::MAX`) plus a delay stays "never";
//! - `Instant - Instant` is [`Instant::saturating_since`] / [`Instant::checked_since`]: a span is never
//!   negative, and the caller says which it expects;
//! - `Nanos ± Nanos`, `Nanos * u64`, `Nanos / u64`, saturating;
//! - ordering of each with itself.
//!
//! Both are serialised as the plain integer of nanoseconds, so nothing written as JSON or YAML changes.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::ops::{Add, AddAssign, Div, Mul, Sub, SubAssign};

/// A point on the model's clock: nanoseconds since the driver's origin.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Instant(u64);

/// A span of time in nanoseconds (a delay, a period, a timeout): never negative.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Nanos(u64);

impl Instant {
    /// The origin of the clock.
    pub const ZERO: Instant = Instant(0);
    /// The last instant: "never" for a deadline.
    pub const MAX: Instant = Instant(u64::MAX);

    /// The instant `ns` nanoseconds after the origin (at a boundary: a driver's clock, a test's figure).
    #[inline]
    pub const fn from_ns(ns: u64) -> Instant {
        Instant(ns)
    }

    /// Nanoseconds since the origin (at a boundary: output, a wire field, arithmetic not yet typed).
    #[inline]
    pub const fn as_ns(self) -> u64 {
        self.0
    }

    /// The span from `earlier` to `self`, or `None` if `earlier` is later.
    #[inline]
    pub const fn checked_since(self, earlier: Instant) -> Option<Nanos> {
        match self.0.checked_sub(earlier.0) {
            Some(ns) => Some(Nanos(ns)),
            None => None,
        }
    }

    /// The span from `earlier` to `self`, zero if `earlier` is later.
    #[inline]
    pub const fn saturating_since(self, earlier: Instant) -> Nanos {
        Nanos(self.0.saturating_sub(earlier.0))
    }
}

impl Nanos {
    pub const ZERO: Nanos = Nanos(0);
    pub const MAX: Nanos = Nanos(u64::MAX);

    #[inline]
    pub const fn from_ns(ns: u64) -> Nanos {
        Nanos(ns)
    }

    #[inline]
    pub const fn from_us(us: u64) -> Nanos {
        Nanos(us.saturating_mul(1_000))
    }

    #[inline]
    pub const fn from_ms(ms: u64) -> Nanos {
        Nanos(ms.saturating_mul(1_000_000))
    }

    #[inline]
    pub const fn as_ns(self) -> u64 {
        self.0
    }

    #[inline]
    pub const fn is_zero(self) -> bool {
        self.0 == 0
    }

    #[inline]
    pub const fn checked_sub(self, other: Nanos) -> Option<Nanos> {
        match self.0.checked_sub(other.0) {
            Some(ns) => Some(Nanos(ns)),
            None => None,
        }
    }
}

impl Add<Nanos> for Instant {
    type Output = Instant;
    #[inline]
    fn add(self, span: Nanos) -> Instant {
        Instant(self.0.saturating_add(span.0))
    }
}

impl AddAssign<Nanos> for Instant {
    #[inline]
    fn add_assign(&mut self, span: Nanos) {
        *self = *self + span;
    }
}

impl Sub<Nanos> for Instant {
    type Output = Instant;
    #[inline]
    fn sub(self, span: Nanos) -> Instant {
        Instant(self.0.saturating_sub(span.0))
    }
}

impl SubAssign<Nanos> for Instant {
    #[inline]
    fn sub_assign(&mut self, span: Nanos) {
        *self = *self - span;
    }
}

impl Add for Nanos {
    type Output = Nanos;
    #[inline]
    fn add(self, other: Nanos) -> Nanos {
        Nanos(self.0.saturating_add(other.0))
    }
}

impl AddAssign for Nanos {
    #[inline]
    fn add_assign(&mut self, other: Nanos) {
        *self = *self + other;
    }
}

/// Saturating at zero: a span is never negative (use [`Nanos::checked_sub`] where that is an error).
impl Sub for Nanos {
    type Output = Nanos;
    #[inline]
    fn sub(self, other: Nanos) -> Nanos {
        Nanos(self.0.saturating_sub(other.0))
    }
}

impl SubAssign for Nanos {
    #[inline]
    fn sub_assign(&mut self, other: Nanos) {
        *self = *self - other;
    }
}

impl Mul<u64> for Nanos {
    type Output = Nanos;
    #[inline]
    fn mul(self, times: u64) -> Nanos {
        Nanos(self.0.saturating_mul(times))
    }
}

/// Integer division, rounding down; dividing by zero panics as it does for `u64`.
impl Div<u64> for Nanos {
    type Output = Nanos;
    #[inline]
    fn div(self, parts: u64) -> Nanos {
        Nanos(self.0 / parts)
    }
}

impl fmt::Display for Instant {
    #[inline]
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{} ns", self.0)
    }
}

impl fmt::Display for Nanos {
    #[inline]
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{} ns", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instant_and_span_arithmetic() {
        let t = Instant::from_ns(1_000);
        let later = t + Nanos::from_us(2);
        assert_eq!(later.as_ns(), 3_000);
        assert_eq!(later.saturating_since(t), Nanos::from_ns(2_000));
        assert_eq!(later.checked_since(t), Some(Nanos::from_ns(2_000)));
        // Backwards is not a span: the caller chooses between an error and zero.
        assert_eq!(t.checked_since(later), None);
        assert_eq!(t.saturating_since(later), Nanos::ZERO);
        assert_eq!(later - Nanos::from_ns(2_500), Instant::from_ns(500));
        assert!(t < later);
    }

    #[test]
    fn never_stays_never_and_zero_stays_zero() {
        assert_eq!(Instant::MAX + Nanos::from_ms(1), Instant::MAX);
        assert_eq!(Instant::ZERO - Nanos::from_ns(1), Instant::ZERO);
        assert_eq!(Nanos::from_ns(3) - Nanos::from_ns(5), Nanos::ZERO);
        assert_eq!(Nanos::from_ns(3).checked_sub(Nanos::from_ns(5)), None);
        assert_eq!(Nanos::MAX * 2, Nanos::MAX);
    }

    #[test]
    fn span_scaling() {
        // Unit conversions: 100 ms (a PFC watchdog detection time) is 1e8 ns.
        assert_eq!(Nanos::from_ms(100).as_ns(), 100_000_000);
        assert_eq!(Nanos::from_ns(10) * 3 + Nanos::from_ns(1), Nanos::from_ns(31));
        assert_eq!(Nanos::from_ns(31) / 3, Nanos::from_ns(10));
    }

    #[test]
    fn serialised_as_plain_integers() {
        let json = serde_json::to_string(&(Instant::from_ns(7), Nanos::from_ns(9))).unwrap();
        assert_eq!(json, "[7,9]");
        let back: (Instant, Nanos) = serde_json::from_str("[7,9]").unwrap();
        assert_eq!(back, (Instant::from_ns(7), Nanos::from_ns(9)));
    }
}
