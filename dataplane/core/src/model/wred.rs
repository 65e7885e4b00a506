//! WRED and ECN marking on an egress queue (SONiC WRED_PROFILE; `docs/scheduling-wred.md`, "WRED_PROFILE").
//!
//! Given the queue length (instantaneous by default, as SONiC sets weight 0; or an EWMA with weight
//! 2^-weight, as UCloud's RoCE design article observed on Broadcom), a colour's min/max thresholds and drop
//! probability: below min nothing happens; between min and max the probability rises linearly from 0 to the
//! configured percentage; at or above max it is certain. An ECN-capable packet whose colour is in the
//! profile's `ecn` set is marked CE instead of dropped; a packet is dropped only where `wred_<colour>_enable`
//! is true. Randomness comes from the switch's seeded generator, so runs are reproducible.

use super::config::WredProfile;

/// What WRED decided for one packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WredAction {
    Pass,
    MarkCe,
    Drop,
}

/// Packet colour (all traffic is green until policers colour it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Colour {
    Green = 0,
    Yellow = 1,
    Red = 2,
}

/// A small, fast, seeded generator (xorshift64*): reproducible WRED decisions.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9e37_79b9_7f4a_7c15 | 1)
    }

    pub fn next_u32(&mut self) -> u32 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        (x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 32) as u32
    }
}

/// Per-queue WRED state: the averaged queue length (bytes, scaled by 2^16).
#[derive(Debug, Clone, Copy, Default)]
pub struct WredQueue {
    avg_scaled: u64,
}

impl WredQueue {
    /// Folds the current queue length in and returns the length WRED compares (the average, or the
    /// instantaneous length with weight 0).
    pub fn observe(&mut self, queue_bytes: u64, weight: u8) -> u64 {
        let sample = queue_bytes << 16;
        if weight == 0 {
            self.avg_scaled = sample;
        } else if sample >= self.avg_scaled {
            self.avg_scaled += (sample - self.avg_scaled) >> weight;
        } else {
            self.avg_scaled -= (self.avg_scaled - sample) >> weight;
        }
        self.avg_scaled >> 16
    }
}

/// Decides for one packet of `colour`, ECN-capable or not, with the queue at `queue_bytes`.
#[inline(always)]
pub fn decide(
    profile: &WredProfile,
    colour: Colour,
    ect: bool,
    queue_bytes: u64,
    rng: &mut Rng,
) -> WredAction {
    let c = profile.colours[colour as usize];
    let mark = ect && profile.ecn[colour as usize];
    if !(mark || c.enabled) || c.max_bytes == 0 || queue_bytes < c.min_bytes {
        return WredAction::Pass;
    }
    let hit = if queue_bytes >= c.max_bytes {
        true
    } else {
        // p = percent/100 × (q − min)/(max − min), compared against a uniform 32-bit number.
        let span = u128::from(c.max_bytes - c.min_bytes).max(1);
        let threshold =
            (u128::from(c.drop_probability_percent) * u128::from(queue_bytes - c.min_bytes)) << 32;
        u128::from(rng.next_u32()) * 100 * span < threshold
    };
    match (hit, mark) {
        (false, _) => WredAction::Pass,
        (true, true) => WredAction::MarkCe,
        (true, false) if c.enabled => WredAction::Drop,
        (true, false) => WredAction::Pass,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::config::WredColour;

    fn profile(ecn: bool, enabled: bool) -> WredProfile {
        let c = WredColour { enabled, min_bytes: 1000, max_bytes: 2000, drop_probability_percent: 10 };
        WredProfile { name: "p".into(), ecn: [ecn; 3], colours: [c; 3], weight: 0 }
    }

    #[test]
    fn below_min_passes_above_max_always_acts() {
        let mut rng = Rng::new(1);
        let p = profile(true, true);
        assert_eq!(decide(&p, Colour::Green, true, 999, &mut rng), WredAction::Pass);
        assert_eq!(decide(&p, Colour::Green, true, 2000, &mut rng), WredAction::MarkCe);
        assert_eq!(decide(&p, Colour::Green, false, 2000, &mut rng), WredAction::Drop);
        let no_wred = profile(true, false);
        assert_eq!(
            decide(&no_wred, Colour::Green, false, 5000, &mut rng),
            WredAction::Pass,
            "non-ECT without WRED"
        );
        let no_ecn = profile(false, true);
        assert_eq!(
            decide(&no_ecn, Colour::Green, true, 5000, &mut rng),
            WredAction::Drop,
            "ECT dropped without ECN"
        );
    }

    #[test]
    fn probability_rises_linearly_between_min_and_max() {
        let mut rng = Rng::new(7);
        let p = profile(true, true);
        for (q, expected) in [(1250u64, 0.025), (1500, 0.05), (1900, 0.09)] {
            let n = 200_000;
            let marks =
                (0..n).filter(|_| decide(&p, Colour::Green, true, q, &mut rng) == WredAction::MarkCe).count();
            let f = marks as f64 / n as f64;
            assert!((f - expected).abs() < 0.003, "q={q}: {f} vs {expected}");
        }
    }

    #[test]
    fn ewma_follows_slowly() {
        let mut q = WredQueue::default();
        assert_eq!(q.observe(1 << 20, 0), 1 << 20);
        let mut q = WredQueue::default();
        let first = q.observe(1 << 20, 2);
        assert_eq!(first, 1 << 18, "a quarter of the step with weight 2");
        for _ in 0..100 {
            q.observe(1 << 20, 2);
        }
        assert!(q.observe(1 << 20, 2) > (1 << 20) - 16);
    }
}
