//! The one time base of switchd, rocehost and the labs, and its wall-clock reading.
//!
//! Model time is `CLOCK_MONOTONIC` in nanoseconds ([`monotonic_ns`]) everywhere: switchd's runtime gives it
//! to the switch model (event and counter timestamps), rocehost to its NIC (the times in its report). Every
//! process of a machine reads the same clock, so a switch event and a host's report line up without any
//! conversion. The monotonic clock counts from an unspecified start (the boot) and never jumps; an
//! operator reading times wants the wall clock, which [`WallClock`] gives from an offset taken once
//! ([`WallClock::process`]): later changes of the system time (NTP steps, `date -s`) do not move what
//! was already reported.

use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

pub use crate::io::runtime::monotonic_ns;

/// `CLOCK_REALTIME` in nanoseconds since the Unix epoch (0 for a clock set before 1970).
pub fn realtime_ns() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

/// The offset between the monotonic clock and the wall clock, measured once: converts model times to Unix
/// times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WallClock {
    /// Unix time minus monotonic time, ns.
    offset_ns: i128,
}

impl WallClock {
    /// Measures the offset now (the wall clock read between two monotonic readings, paired with their
    /// midpoint).
    pub fn measure() -> WallClock {
        let before = monotonic_ns();
        let unix = realtime_ns();
        let after = monotonic_ns();
        let monotonic = before + (after - before) / 2;
        WallClock { offset_ns: i128::from(unix) - i128::from(monotonic) }
    }

    /// This process's offset, measured at the first call (switchd and rocehost make it at start).
    pub fn process() -> WallClock {
        static CLOCK: OnceLock<WallClock> = OnceLock::new();
        *CLOCK.get_or_init(WallClock::measure)
    }

    /// The Unix time (ns) of the monotonic time `monotonic_ns`.
    pub fn unix_ns(&self, monotonic_ns: u64) -> u64 {
        (i128::from(monotonic_ns) + self.offset_ns).clamp(0, i128::from(u64::MAX)) as u64
    }
}

/// A Unix time in ns as RFC 3339 UTC with microseconds: `2024-05-06T07:08:09.123456Z`.
pub fn format_unix_ns(unix_ns: u64) -> String {
    let secs = unix_ns / 1_000_000_000;
    let micros = (unix_ns % 1_000_000_000) / 1_000;
    let (days, day_secs) = (secs / 86_400, secs % 86_400);
    let (year, month, day) = civil_from_days(days as i64);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{micros:06}Z",
        day_secs / 3600,
        day_secs / 60 % 60,
        day_secs % 60
    )
}

/// (year, month, day) of a day count since 1970-01-01 in the proleptic Gregorian calendar (Howard
/// Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unix_times_format_as_rfc3339_utc() {
        assert_eq!(format_unix_ns(0), "1970-01-01T00:00:00.000000Z");
        assert_eq!(format_unix_ns(951_782_400_000_000_000), "2000-02-29T00:00:00.000000Z");
        assert_eq!(format_unix_ns(1_700_000_000_123_456_789), "2023-11-14T22:13:20.123456Z");
        assert_eq!(format_unix_ns(4_107_542_399_999_999_999), "2100-02-28T23:59:59.999999Z");
    }

    #[test]
    fn the_wall_clock_maps_monotonic_now_to_unix_now() {
        let clock = WallClock::measure();
        let (mono, unix) = (monotonic_ns(), realtime_ns());
        let mapped = clock.unix_ns(mono);
        assert!(mapped.abs_diff(unix) < 50_000_000, "mapped {mapped}, realtime {unix}");
        assert_eq!(WallClock::process(), WallClock::process());
        assert_eq!(clock.unix_ns(mono + 1_000) - mapped, 1_000);
    }
}
