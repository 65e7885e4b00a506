//! The deterministic schedule: from a seed, every action of the run with its time. The same seed and
//! duration give the same run plan (what happens when, to which host, with which configuration).

use crate::config::Variant;
use std::time::Duration;

/// SplitMix64: small, seedable, good enough to pick jitter and hosts.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// `base` ± up to `jitter`.
    pub fn around(&mut self, base: Duration, jitter: Duration) -> Duration {
        let j = jitter.as_millis() as u64;
        let offset = self.next_u64() % (2 * j + 1);
        (base + Duration::from_millis(offset)).saturating_sub(jitter)
    }
}

/// One scheduled action.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Apply the whole configuration with these values (`replace: true`).
    Apply(Variant),
    /// Stop host `i`'s rocehost and start a new one.
    Restart(usize),
    /// A PFC storm on priorities 3 and 4 from host `i` for the storm duration.
    Storm(usize),
}

impl Action {
    pub fn kind(&self) -> &'static str {
        match self {
            Action::Apply(_) => "apply",
            Action::Restart(_) => "restart",
            Action::Storm(_) => "storm",
        }
    }
}

/// When each kind of action comes, on average (each one jittered by a fifth of its period).
pub const APPLY_EVERY: Duration = Duration::from_secs(10);
pub const RESTART_EVERY: Duration = Duration::from_secs(20);
pub const STORM_EVERY: Duration = Duration::from_secs(30);
pub const STORM_LENGTH: Duration = Duration::from_secs(3);
/// No storm starts this close to the end (its detection and restoration must be seen).
const STORM_MARGIN: Duration = Duration::from_secs(6);

/// The plan of a run of `length`: (time since the start, action), in time order. `senders` are the hosts
/// restarted in turn; `stormers` the hosts a storm comes from (hosts that receive lossless traffic, so the
/// stormed queues hold packets and the watchdog can see the deadlock).
pub fn plan(seed: u64, length: Duration, senders: &[usize], stormers: &[usize]) -> Vec<(Duration, Action)> {
    let mut rng = Rng::new(seed);
    let mut out = Vec::new();
    // Each series: its first time, then every period ± a fifth; `make` draws the action.
    let series = |rng: &mut Rng,
                  out: &mut Vec<(Duration, Action)>,
                  every: Duration,
                  first: Duration,
                  make: &mut dyn FnMut(&mut Rng, usize) -> Action| {
        let (mut at, mut n) = (first, 0);
        while at < length {
            out.push((at, make(rng, n)));
            n += 1;
            at += rng.around(every, every / 5);
        }
    };
    series(&mut rng, &mut out, APPLY_EVERY, APPLY_EVERY, &mut |r, _| {
        Action::Apply(Variant::pick(|n| r.below(n)))
    });
    let first_restart = RESTART_EVERY / 2 + Duration::from_secs(3);
    series(&mut rng, &mut out, RESTART_EVERY, first_restart, &mut |_, n| {
        Action::Restart(senders[n % senders.len()])
    });
    // Storms: the hosts in turn, the order shuffled a little by the seed.
    series(&mut rng, &mut out, STORM_EVERY, STORM_EVERY / 2, &mut |r, n| {
        Action::Storm(stormers[(n + 1 + r.below(2)) % stormers.len()])
    });
    let storm_end = length.saturating_sub(STORM_MARGIN + STORM_LENGTH);
    out.retain(|(at, a)| !matches!(a, Action::Storm(_)) || *at <= storm_end);
    out.sort_by_key(|(at, _)| *at);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plan_is_deterministic_and_mixed() {
        let a = plan(7, Duration::from_secs(180), &[0, 1, 2], &[0, 1, 3]);
        assert_eq!(a, plan(7, Duration::from_secs(180), &[0, 1, 2], &[0, 1, 3]));
        assert_ne!(a, plan(8, Duration::from_secs(180), &[0, 1, 2], &[0, 1, 3]));
        let count = |f: fn(&Action) -> bool| a.iter().filter(|(_, x)| f(x)).count();
        assert!((14..=22).contains(&count(|x| matches!(x, Action::Apply(_)))), "{a:?}");
        assert!((7..=11).contains(&count(|x| matches!(x, Action::Restart(_)))), "{a:?}");
        assert!((4..=7).contains(&count(|x| matches!(x, Action::Storm(_)))), "{a:?}");
        assert!(a.windows(2).all(|w| w[0].0 <= w[1].0));
        assert!(a.iter().all(|(at, x)| !matches!(x, Action::Storm(_))
            || *at + STORM_LENGTH + STORM_MARGIN <= Duration::from_secs(180)));
    }
}
