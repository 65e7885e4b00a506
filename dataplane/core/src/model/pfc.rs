//! Priority flow control on one port (IEEE 802.1Qbb; `docs/pfc.md`).
//!
//! **Generation** (this port's ingress PGs are filling): a priority whose PG asserts XOFF gets an XOFF
//! frame (`pfc_pause_quanta`, default 0xFFFF) at once, re-sent every `pfc_refresh_percent` of that pause
//! time while the PG stays above its limit, and a single XON (quanta 0) when it drains to its XON point.
//! Every frame carries the port's whole state: an XOFF for each asserted priority (so any frame refreshes
//! them all, and the port's one refresh timer restarts) and an XON for each priority just released. PFC frames leave ahead of data and are not subject
//! to pauses or holds.
//!
//! **Honouring** (frames received on this port pause its egress queues): each enabled class with a
//! priority in the port's `pfc_enable` pauses the queue `pfc_to_queue[priority]` for quanta × 512 bit
//! times at the port's speed, overwriting a running timer; quanta 0 resumes at once. Priorities not in
//! `pfc_enable` are counted but ignored. The frame on the line is always finished first (the scheduler only
//! picks frames between transmissions). Pause time is accumulated per priority, as SONiC's PFC history.

use crate::time::{Instant, Nanos};
use crate::wire::mac_control::{self, PfcRepr};

/// PFC counters of one priority, as `show pfc counters` and `--history` show them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct PfcCounters {
    /// PFC frames received with this class enabled (`SAI_PORT_STAT_PFC_n_RX_PKTS`).
    pub rx: u64,
    /// Of those, frames with quanta 0 (XON; `SAI_PORT_STAT_PFC_n_ON2OFF_RX_PKTS` is the Broadcom name).
    pub rx_xon: u64,
    /// PFC frames sent with this class enabled (`SAI_PORT_STAT_PFC_n_TX_PKTS`).
    pub tx: u64,
    /// Transitions from running to paused.
    pub rx_pause_transitions: u64,
    /// Total time the priority was paused, in nanoseconds (completed pauses; see [`PfcPort::paused_ns`]).
    pub rx_pause_ns: u64,
}

/// PFC state of one port.
#[derive(Debug, Clone, Default)]
pub struct PfcPort {
    /// Priorities this port is sending XOFF for.
    asserted: u8,
    /// Priorities whose state must go out in the next PFC frame.
    pending: u8,
    next_refresh: Option<Instant>,
    /// Per priority: paused until (exclusive), and since when (for the pause time).
    paused_until: [Instant; 8],
    pause_started: [Option<Instant>; 8],
    /// Priorities with a pause in progress (`pause_started` set): most ports have none to settle.
    pausing: u8,
    /// At least every `paused_until` (raised with them, never lowered): before it nothing is paused,
    /// which the packet path asks on every frame.
    paused_until_max: Instant,
    /// 802.3x PAUSE: all queues paused until.
    link_paused_until: Instant,
    pub counters: [PfcCounters; 8],
}

impl PfcPort {
    /// A PG's priorities asserted XOFF (`priorities` bit mask).
    pub fn assert_xoff(&mut self, priorities: u8) {
        let new = priorities & !self.asserted;
        self.asserted |= priorities;
        self.pending |= new;
    }

    /// A PG's priorities were released (XON).
    pub fn release_xoff(&mut self, priorities: u8) {
        let released = priorities & self.asserted;
        self.asserted &= !priorities;
        self.pending |= released;
        if self.asserted == 0 {
            self.next_refresh = None;
        }
    }

    /// Stops generating PFC for these priorities without sending XON (the watchdog took them over, or
    /// they left `pfc_enable`).
    pub fn forget(&mut self, priorities: u8) {
        self.asserted &= !priorities;
        self.pending &= !priorities;
        if self.asserted == 0 {
            self.next_refresh = None;
        }
    }

    pub fn asserted(&self) -> u8 {
        self.asserted
    }

    /// When a PFC frame is due: now if some state changed, else at the next refresh.
    pub fn next_frame_at(&self, now: Instant) -> Option<Instant> {
        if self.pending != 0 { Some(now) } else { self.next_refresh }
    }

    /// The PFC frame to send now, if one is due; counts it and schedules the refresh.
    pub fn poll_frame(&mut self, now: Instant, quanta: u16, refresh: Nanos) -> Option<PfcRepr> {
        if self.next_refresh.is_some_and(|t| t <= now) {
            self.pending |= self.asserted;
        }
        if self.pending == 0 {
            return None;
        }
        // The frame carries the port's whole XOFF state: every asserted priority is refreshed with it, not
        // only those that changed. The refresh timer is the port's, restarted by every frame; a frame that
        // left an asserted priority out would postpone its refresh, and a PG toggling on another priority
        // faster than the refresh interval would starve it until the peer's pause ran out.
        let class_enable = self.pending | self.asserted;
        let mut time = [0u16; 8];
        for (p, t) in time.iter_mut().enumerate() {
            if class_enable & (1 << p) != 0 {
                self.counters[p].tx += 1;
                if self.asserted & (1 << p) != 0 {
                    *t = quanta;
                }
            }
        }
        self.pending = 0;
        self.next_refresh = (self.asserted != 0).then(|| now + refresh.max(Nanos::from_ns(1)));
        Some(PfcRepr { class_enable, time })
    }

    /// A PFC frame arrived. `enabled` is the port's effective `pfc_enable`; `speed_mbps` converts quanta.
    pub fn receive(&mut self, frame: &PfcRepr, enabled: u8, speed_mbps: u32, now: Instant) {
        self.settle(now);
        for (p, quanta) in frame.priorities() {
            let p = usize::from(p);
            let c = &mut self.counters[p];
            c.rx += 1;
            if quanta == 0 {
                c.rx_xon += 1;
            }
            if enabled & (1 << p) == 0 {
                continue;
            }
            if quanta == 0 {
                self.end_pause(p, now);
                self.paused_until[p] = now;
                self.paused_until_max = self.paused_until_max.max(now);
            } else {
                if self.pause_started[p].is_none() {
                    self.pause_started[p] = Some(now);
                    self.pausing |= 1 << p;
                    self.counters[p].rx_pause_transitions += 1;
                }
                self.paused_until[p] = now + Nanos::from_ns(mac_control::quanta_to_ns(quanta, speed_mbps));
                self.paused_until_max = self.paused_until_max.max(self.paused_until[p]);
            }
        }
    }

    /// An 802.3x PAUSE frame arrived (honoured only on ports without PFC).
    pub fn receive_pause(&mut self, quanta: u16, speed_mbps: u32, now: Instant) {
        self.link_paused_until = now + Nanos::from_ns(mac_control::quanta_to_ns(quanta, speed_mbps));
    }

    fn end_pause(&mut self, p: usize, end: Instant) {
        self.pausing &= !(1 << p);
        if let Some(start) = self.pause_started[p].take() {
            self.counters[p].rx_pause_ns += end.saturating_since(start).as_ns();
        }
    }

    /// Closes pauses whose timers expired by `now`.
    pub fn settle(&mut self, now: Instant) {
        if self.pausing == 0 {
            return;
        }
        for p in 0..8 {
            if self.pause_started[p].is_some() && self.paused_until[p] <= now {
                self.end_pause(p, self.paused_until[p]);
            }
        }
    }

    /// Whether a pause is in progress (what [`PfcPort::settle`] may close).
    pub fn pausing(&self) -> bool {
        self.pausing != 0
    }

    /// Whether a pause in progress has expired by `now` ([`PfcPort::settle`] would close it).
    pub fn has_expired_pause(&self, now: Instant) -> bool {
        (0..8).any(|p| self.pause_started[p].is_some() && self.paused_until[p] <= now)
    }

    /// Lifts every pause on these priorities (the watchdog stops honouring them).
    pub fn unpause(&mut self, priorities: u8, now: Instant) {
        for p in 0..8 {
            if priorities & (1 << p) != 0 && self.paused_until[p] > now {
                self.end_pause(p, now);
                self.paused_until[p] = now;
                self.paused_until_max = self.paused_until_max.max(now);
            }
        }
    }

    /// Priorities paused at `now`.
    pub fn paused_priorities(&self, now: Instant) -> u8 {
        if self.paused_until_max <= now {
            return 0;
        }
        (0..8).filter(|&p| self.paused_until[p] > now).fold(0, |m, p| m | 1 << p)
    }

    /// Egress queues paused at `now`, given the port's priority → queue map.
    #[inline]
    pub fn paused_queues(&self, now: Instant, pfc_to_queue: &[u8; 8]) -> u8 {
        if self.link_paused_until > now {
            return 0xff;
        }
        let prios = self.paused_priorities(now);
        if prios == 0 {
            return 0;
        }
        (0..8).filter(|&p| prios & (1 << p) != 0).fold(0, |m, p| m | 1 << (pfc_to_queue[p] & 7))
    }

    /// [`PfcPort::paused_queues`], the map asked for only when some priority is paused.
    #[inline(always)]
    pub fn paused_queues_with<'a>(&self, now: Instant, pfc_to_queue: impl FnOnce() -> &'a [u8; 8]) -> u8 {
        if self.link_paused_until <= now && self.paused_until_max <= now {
            debug_assert_eq!(self.paused_queues(now, &[0, 1, 2, 3, 4, 5, 6, 7]), 0, "nothing paused");
            return 0;
        }
        self.paused_queues(now, pfc_to_queue())
    }

    /// The earliest pause expiry after `now`, if any queue is paused.
    pub fn next_unpause_at(&self, now: Instant) -> Option<Instant> {
        self.paused_until
            .iter()
            .chain(std::iter::once(&self.link_paused_until))
            .copied()
            .filter(|&t| t > now)
            .min()
    }

    /// Time priority `p` has spent paused up to `now` (including a pause in progress), in nanoseconds.
    pub fn paused_ns(&self, p: usize, now: Instant) -> u64 {
        let running =
            self.pause_started[p].map_or(Nanos::ZERO, |s| now.min(self.paused_until[p]).saturating_since(s));
        self.counters[p].rx_pause_ns + running.as_ns()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xoff_refresh_and_xon() {
        let mut pfc = PfcPort::default();
        pfc.assert_xoff(0b1000);
        let f = pfc.poll_frame(Instant::from_ns(100), 0xffff, Nanos::from_ns(1000)).unwrap();
        assert_eq!((f.class_enable, f.time[3]), (0b1000, 0xffff));
        assert!(pfc.poll_frame(Instant::from_ns(500), 0xffff, Nanos::from_ns(1000)).is_none());
        assert_eq!(pfc.next_frame_at(Instant::from_ns(500)), Some(Instant::from_ns(1100)));
        let f = pfc.poll_frame(Instant::from_ns(1100), 0xffff, Nanos::from_ns(1000)).unwrap();
        assert_eq!(f.time[3], 0xffff, "refresh");
        pfc.assert_xoff(0b10000);
        pfc.release_xoff(0b1000);
        let f = pfc.poll_frame(Instant::from_ns(1200), 0xffff, Nanos::from_ns(1000)).unwrap();
        assert_eq!(f.class_enable, 0b11000, "XON for 3 and XOFF for 4 share a frame");
        assert_eq!((f.time[3], f.time[4]), (0, 0xffff));
        assert_eq!(pfc.counters[3].tx, 3);
    }

    /// The soak's failure: priority 4's PG toggling XOFF/XON faster than the refresh interval must not
    /// postpone priority 3's refresh. Checked against the peer's side: a pause of `quanta` at 1 Gb/s
    /// (65535 quanta = 33.55 ms) must never run out while priority 3 stays asserted.
    #[test]
    fn a_toggling_priority_does_not_starve_another_ones_refresh() {
        let speed_mbps = 1000;
        let pause = Nanos::from_ns(mac_control::quanta_to_ns(0xffff, speed_mbps));
        let refresh = Nanos::from_ns(pause.as_ns() / 2);
        let mut pfc = PfcPort::default();
        // The peer, honouring what it receives on priority 3.
        let mut peer = PfcPort::default();
        pfc.assert_xoff(1 << 3);
        let mut now = Instant::from_ns(0);
        // Priority 4 changes state every 0.3 refresh intervals, for 100 pause times.
        let step = Nanos::from_ns(refresh.as_ns() * 3 / 10);
        let mut toggle = Instant::from_ns(0);
        while now < Instant::from_ns(100 * pause.as_ns()) {
            if now >= toggle {
                if pfc.asserted() & (1 << 4) != 0 {
                    pfc.release_xoff(1 << 4);
                } else {
                    pfc.assert_xoff(1 << 4);
                }
                toggle = now + step;
            }
            // Checked before this instant's frame: a refresh that comes after the pause ran out is late.
            if now > Instant::from_ns(0) {
                assert_eq!(
                    peer.paused_priorities(now) & (1 << 3),
                    1 << 3,
                    "priority 3 is asserted but its peer runs again at {now:?}"
                );
            }
            if let Some(f) = pfc.poll_frame(now, 0xffff, refresh) {
                peer.receive(&f, 0b1_1000, speed_mbps, now);
            }
            now = [pfc.next_frame_at(now), Some(toggle)].into_iter().flatten().min().unwrap().max(now);
        }
    }

    #[test]
    fn received_pause_overwrites_timer_and_xon_resumes() {
        let mut pfc = PfcPort::default();
        let map = [0, 1, 2, 3, 4, 5, 6, 7];
        // 100 quanta at 100G = 512 ns.
        pfc.receive(&PfcRepr::xoff(0b1000, 100), 0b11000, 100_000, Instant::from_ns(0));
        assert_eq!(pfc.paused_queues(Instant::from_ns(511), &map), 0b1000);
        assert_eq!(pfc.paused_queues(Instant::from_ns(512), &map), 0);
        pfc.receive(&PfcRepr::xoff(0b1000, 100), 0b11000, 100_000, Instant::from_ns(1000));
        pfc.receive(&PfcRepr::xoff(0b1000, 10), 0b11000, 100_000, Instant::from_ns(1100));
        assert_eq!(pfc.paused_queues(Instant::from_ns(1151), &map), 0b1000);
        assert_eq!(
            pfc.paused_queues(Instant::from_ns(1152), &map),
            0,
            "the last frame's quanta (10 = 51.2 ns) wins"
        );
        pfc.settle(Instant::from_ns(2000));
        assert_eq!(pfc.counters[3].rx_pause_ns, 512 + 152);
        assert_eq!(pfc.counters[3].rx_pause_transitions, 2);
        pfc.receive(&PfcRepr::xoff(0b1000, 0xffff), 0b11000, 100_000, Instant::from_ns(3000));
        pfc.receive(&PfcRepr::xon(0b1000), 0b11000, 100_000, Instant::from_ns(3100));
        assert_eq!(pfc.paused_queues(Instant::from_ns(3100), &map), 0);
        assert_eq!(pfc.counters[3].rx_xon, 1);
        // Priority 5 is not enabled: counted, not honoured.
        pfc.receive(&PfcRepr::xoff(0b10_0000, 0xffff), 0b11000, 100_000, Instant::from_ns(4000));
        assert_eq!((pfc.counters[5].rx, pfc.paused_queues(Instant::from_ns(4001), &map)), (1, 0));
    }
}
