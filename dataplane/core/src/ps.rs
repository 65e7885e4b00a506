//! Picosecond arithmetic for line and pacing timers, in 64 bits whenever the values fit.
//!
//! Serialisation times are kept in picoseconds with an exact remainder (`u128`, so no run can overflow).
//! Dividing a `u128` is a library call (`__udivti3`) that costs tens of nanoseconds, several times per frame
//! on the switch's, the NIC's and the link's hot paths; every value these timers hold in practice fits in
//! 64 bits (an instant before ~213 days of virtual time in ps, a frame's bits × 10^12), so these helpers
//! divide in 64 bits then and fall back to 128 bits otherwise. The results are the same either way.

use crate::time::Instant;

/// `n / d` and `n % d`.
#[inline]
pub(crate) fn div_rem(n: u128, d: u64) -> (u128, u64) {
    debug_assert!(d > 0);
    match u64::try_from(n) {
        Ok(n) => (u128::from(n / d), n % d),
        Err(_) => (n / u128::from(d), (n % u128::from(d)) as u64),
    }
}

/// Picoseconds to nanoseconds, rounded up, saturating at `u64::MAX`.
#[inline]
pub(crate) fn to_ns_ceil(ps: u128) -> u64 {
    match u64::try_from(ps) {
        Ok(ps) => ps.div_ceil(1000),
        Err(_) => u64::try_from(ps.div_ceil(1000)).unwrap_or(u64::MAX),
    }
}

/// Picoseconds to the instant they fall in, rounded up (the boundary between the ps timers and [`Instant`]).
#[inline]
pub(crate) fn to_instant_ceil(ps: u128) -> Instant {
    Instant::from_ns(to_ns_ceil(ps))
}

/// An instant in picoseconds.
#[inline]
pub(crate) fn of_instant(at: Instant) -> u128 {
    u128::from(at.as_ns()) * 1000
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_as_128_bit_arithmetic_on_both_sides_of_64_bits() {
        let edge = u128::from(u64::MAX);
        for n in [0, 1, 999, 1000, 1001, edge - 1, edge, edge + 1, edge * 1000 + 7, u128::MAX] {
            for d in [1u64, 7, 1000, 25_000, 400_000_000_000, u64::MAX] {
                assert_eq!(div_rem(n, d), (n / u128::from(d), (n % u128::from(d)) as u64), "{n} / {d}");
            }
            let ns = u64::try_from(n.div_ceil(1000)).unwrap_or(u64::MAX);
            assert_eq!(to_ns_ceil(n), ns, "{n} ps");
        }
    }
}
