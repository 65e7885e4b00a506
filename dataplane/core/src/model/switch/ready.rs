//! Per-port transmit readiness kept between calls, so that [`Switch::poll_at`] and a driver's choice of
//! ports to poll ([`Switch::next_port_to_poll`]) cost the ports that changed, not every port.
//!
//! A port's readiness ([`Switch::port_ready_at`]: when it next has a PFC frame or an eligible queue with
//! the line free) depends on its queues, its line, its PFC state, its holds and the configuration, and on
//! time only through instants it already reports: a value computed at t0 that is later than t1 is still the
//! value at t1 when none of those inputs changed (a pause expiring, a refresh or a shaper filling up in
//! between would have made the value itself that early). So each port keeps the value computed after its
//! latest change; every change marks the port stale ([`Switch::touch_port`]); a stale port, or one whose
//! value has come due, is computed afresh. Debug builds check every answer against the full computation.

use super::Switch;
use crate::model::PortId;
use crate::time::Instant;

/// The cache: per port, the readiness computed after its latest change, unless it changed since.
#[derive(Debug, Default)]
pub(super) struct Readiness {
    at: Vec<Option<Instant>>,
    stale: Vec<bool>,
    stale_ports: Vec<PortId>,
}

impl Readiness {
    /// Every one of `ports` ports to be computed afresh.
    pub(super) fn reset(&mut self, ports: usize) {
        self.at = vec![None; ports];
        self.stale = vec![true; ports];
        self.stale_ports = PortId::all(ports).collect();
    }

    fn mark(&mut self, port: PortId) {
        if let Some(stale) = self.stale.get_mut(port.index())
            && !*stale
        {
            *stale = true;
            self.stale_ports.push(port);
        }
    }
}

impl Switch {
    /// The port's queues, line, PFC state or holds changed: its readiness is computed afresh.
    pub(super) fn touch_port(&mut self, port: PortId) {
        self.readiness.mark(port);
    }

    pub(super) fn touch_all_ports(&mut self) {
        for port in PortId::all(self.ports.len()) {
            self.readiness.mark(port);
        }
    }

    /// Computes the readiness of the ports that changed, at the latest time the switch was given.
    pub(super) fn refresh_readiness(&mut self) {
        let now = self.now;
        let mut stale = std::mem::take(&mut self.readiness.stale_ports);
        for &port in &stale {
            let at = self.port_ready_at(port, now);
            self.readiness.at[port.index()] = at;
            self.readiness.stale[port.index()] = false;
        }
        stale.clear();
        self.readiness.stale_ports = stale;
    }

    /// The earliest [`port_ready_at`](Self::port_ready_at) of all ports at `now`, from the cache where
    /// it holds.
    pub(super) fn earliest_ready_at(&self, now: Instant) -> Option<Instant> {
        let mut earliest: Option<Instant> = None;
        for (port, (&at, &stale)) in self.readiness.at.iter().zip(&self.readiness.stale).enumerate() {
            let ready = if !stale && at.is_none_or(|t| t > now) {
                at
            } else {
                self.port_ready_at(PortId::new(port), now)
            };
            earliest = match (earliest, ready) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        debug_assert_eq!(
            earliest,
            PortId::all(self.ports.len()).filter_map(|p| self.port_ready_at(p, now)).min(),
            "cached port readiness"
        );
        earliest
    }

    /// The first port from `from` on that [`poll_transmit`](Self::poll_transmit) at `now` may have a
    /// frame for: the ports passed over have nothing due (polling them would return `None` and change
    /// nothing). A driver polls these instead of every port.
    pub fn next_port_to_poll(&self, from: usize, now: Instant) -> Option<PortId> {
        let (at, stale) = (&self.readiness.at, &self.readiness.stale);
        let port = (from..at.len()).find(|&p| stale[p] || at[p].is_some_and(|t| t <= now))?;
        debug_assert!(
            (from..port).all(|p| self.port_ready_at(PortId::new(p), now).is_none_or(|t| t > now)),
            "a port passed over has something due"
        );
        Some(PortId::new(port))
    }
}
