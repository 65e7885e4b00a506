//! Per-port transmit readiness kept between calls, so that [`Switch::poll_at`], a driver's choice of ports
//! to poll ([`Switch::next_port_to_poll`]) and [`Switch::handle_timeout`] cost the ports that changed, not
//! every port.
//!
//! A port's readiness ([`Switch::port_ready_at`]: when it next has a PFC frame or an eligible queue with
//! the line free) depends on its queues, its line, its PFC state, its holds and the configuration, and on
//! time only through instants it already reports: a value computed at t0 that is later than t1 is still the
//! value at t1 when none of those inputs changed (a pause expiring, a refresh or a shaper filling up in
//! between would have made the value itself that early). So each port keeps the value computed after its
//! latest change; every change marks the port stale ([`Switch::touch_port`]); a stale port, or one whose
//! value has come due, is computed afresh.
//!
//! The values sit in a tournament tree (each inner node the minimum of its two children), so the earliest
//! of them is read at the root, and the first port from a given one on whose value has come due is found
//! by one walk up and down the tree, whatever the number of ports (by a scan of the leaves on a switch of
//! up to 32 ports, cheaper there). The common answers of a driver's visit (nothing due, no port changed)
//! are inline tests of the root and of the stale ports. The ports with a pause in progress
//! (the only ones whose PFC state [`Switch::handle_timeout`] has to settle) are kept as a set too: a port
//! starts pausing only when a PFC frame arrives on it, which marks it stale, and every stale port is looked
//! at before the set is used. Debug builds check every answer against the full computation.

use super::Switch;
use crate::model::PortId;
use crate::time::Instant;

/// A leaf's key for "never" (no readiness, or a port past the last).
const NEVER: u64 = u64::MAX;
/// Up to this many leaves (a switch of a fabric: 12 to 32 ports) the first port due is found by a scan
/// of the leaves, which costs less than the walk up and down the tree's levels, a dependent load and a
/// branch at each.
const SCAN_LEAVES: usize = 32;

/// One port's entry: its readiness as computed after its latest change, and whether it changed since.
#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    at: Option<Instant>,
    stale: bool,
    /// In [`Readiness::pausing`].
    is_pausing: bool,
}

/// The cache: per port, the readiness computed after its latest change, unless it changed since.
#[derive(Debug, Default)]
pub(super) struct Readiness {
    slots: Vec<Slot>,
    stale_ports: Vec<PortId>,
    /// Tournament tree over `at` (`None` as [`NEVER`]): leaves from `leaves` on, node `i`'s children at
    /// `2i` and `2i + 1`, the root at 1. Stale ports keep their last value in it until refreshed.
    tree: Vec<u64>,
    leaves: usize,
    /// Ports whose value is `Some(Instant::MAX)`, which the tree cannot tell from `None`.
    at_last_instant: usize,
    /// Ports that may have a pause in progress (a superset of those that do), each once.
    pausing: Vec<PortId>,
}

impl Readiness {
    /// Every one of `ports` ports to be computed afresh.
    pub(super) fn reset(&mut self, ports: usize) {
        self.slots = vec![Slot { at: None, stale: true, is_pausing: false }; ports];
        self.stale_ports = PortId::all(ports).collect();
        self.leaves = ports.next_power_of_two();
        self.tree = vec![NEVER; 2 * self.leaves];
        self.at_last_instant = 0;
        self.pausing.clear();
    }

    /// The port's readiness is to be computed afresh ([`Switch::touch_port`], for callers holding a port).
    #[inline]
    pub(super) fn mark(&mut self, port: PortId) {
        if let Some(slot) = self.slots.get_mut(port.index())
            && !slot.stale
        {
            slot.stale = true;
            self.stale_ports.push(port);
        }
    }

    /// Stores a port's fresh value and brings the minima above it up to date. The tree's leaf always holds
    /// the slot's value, so an unchanged value (a port that stays idle, or stays busy until the same
    /// instant) leaves the tree as it is.
    #[inline]
    fn set(&mut self, port: usize, at: Option<Instant>) {
        let slot = &mut self.slots[port];
        slot.stale = false;
        if slot.at == at {
            debug_assert_eq!(self.tree[self.leaves + port], at.map_or(NEVER, Instant::as_ns), "leaf");
            return;
        }
        let last = Some(Instant::MAX);
        self.at_last_instant = self.at_last_instant + usize::from(at == last) - usize::from(slot.at == last);
        slot.at = at;
        self.set_leaf(port, at);
    }

    #[inline(never)]
    fn set_leaf(&mut self, port: usize, at: Option<Instant>) {
        let tree = &mut self.tree[..];
        let mut i = self.leaves + port;
        let mut value = at.map_or(NEVER, Instant::as_ns);
        tree[i] = value;
        // Up while the minimum changes: each node's new value is the minimum of the one just set below
        // it and that one's sibling.
        while i > 1 {
            let min = value.min(tree[i ^ 1]);
            i /= 2;
            if tree[i] == min {
                break;
            }
            tree[i] = min;
            value = min;
        }
    }

    /// The first port from `from` on whose stored value is at or before `now`.
    fn first_due(&self, from: usize, now: Instant) -> Option<usize> {
        if from >= self.leaves {
            return None;
        }
        let now = now.as_ns();
        if self.leaves <= SCAN_LEAVES {
            return self.tree[self.leaves + from..].iter().position(|&t| t <= now).map(|i| from + i);
        }
        let mut i = self.leaves + from;
        // Up while the subtree at `i` has nothing due, moving right past it (from a right child, up first).
        while self.tree[i] > now {
            while i & 1 == 1 {
                i /= 2;
            }
            if i == 0 {
                return None;
            }
            i += 1;
        }
        // Down to the leftmost leaf due.
        while i < self.leaves {
            i *= 2;
            if self.tree[i] > now {
                i += 1;
            }
        }
        Some(i - self.leaves)
    }

    /// No port changed since the values were last computed.
    #[inline(always)]
    pub(super) fn is_fresh(&self) -> bool {
        self.stale_ports.is_empty()
    }

    /// Whether no port has a pause in progress that [`Switch::settle_pauses`] would have to look at (stale
    /// ports aside: check [`Readiness::is_fresh`] too).
    #[inline(always)]
    pub(super) fn none_pausing(&self) -> bool {
        self.pausing.is_empty()
    }

    /// The earliest value of every port when it is later than `now` (and a value, not "never"): with
    /// every value fresh, the earliest readiness of the switch without a walk.
    #[inline(always)]
    fn root_after(&self, now: Instant) -> Option<Instant> {
        let root = self.tree.get(1).copied().unwrap_or(NEVER);
        (root > now.as_ns() && root != NEVER).then(|| Instant::from_ns(root))
    }

    fn note_pausing(&mut self, port: PortId) {
        let slot = &mut self.slots[port.index()];
        if !slot.is_pausing {
            slot.is_pausing = true;
            self.pausing.push(port);
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
    #[inline]
    pub(super) fn refresh_readiness(&mut self) {
        match *self.readiness.stale_ports.as_slice() {
            [] => {}
            // The usual case after a frame (the port it came in for and went out of): inline.
            [port] => {
                self.refresh_port(port, self.now);
                self.readiness.stale_ports.clear();
            }
            _ => self.refresh_stale_ports(),
        }
    }

    #[inline(always)]
    fn refresh_port(&mut self, port: PortId, now: Instant) {
        let pausing = self.ports[port.index()].pfc.pausing();
        let at = self.port_ready_at(port, now);
        self.readiness.set(port.index(), at);
        if pausing {
            self.readiness.note_pausing(port);
        }
    }

    #[inline(never)]
    fn refresh_stale_ports(&mut self) {
        let now = self.now;
        for i in 0..self.readiness.stale_ports.len() {
            let port = self.readiness.stale_ports[i];
            self.refresh_port(port, now);
        }
        self.readiness.stale_ports.clear();
    }

    /// Closes the pauses that expired by `now` ([`PfcPort::settle`](crate::model::pfc::PfcPort::settle)) on
    /// the ports that have one in progress; the others have nothing to settle.
    pub(super) fn settle_pauses(&mut self, now: Instant) {
        // A port that received a PFC frame since the readiness was last refreshed is stale: not yet known
        // to be pausing.
        for i in 0..self.readiness.stale_ports.len() {
            let port = self.readiness.stale_ports[i];
            if self.ports[port.index()].pfc.pausing() {
                self.readiness.note_pausing(port);
            }
        }
        let mut i = 0;
        while i < self.readiness.pausing.len() {
            let port = self.readiness.pausing[i];
            let pfc = &mut self.ports[port.index()].pfc;
            pfc.settle(now);
            if pfc.pausing() {
                i += 1;
            } else {
                self.readiness.slots[port.index()].is_pausing = false;
                self.readiness.pausing.swap_remove(i);
            }
        }
        debug_assert!(
            self.ports.iter().all(|s| !s.pfc.has_expired_pause(now)),
            "a port with an expired pause left unsettled"
        );
    }

    /// The earliest [`port_ready_at`](Self::port_ready_at) of all ports at `now`, from the cache where
    /// it holds.
    #[inline]
    pub(super) fn earliest_ready_at(&self, now: Instant) -> Option<Instant> {
        let r = &self.readiness;
        // Every value fresh and none due: the root is the answer (a root of NEVER may also be a port
        // ready at the last instant, told apart by the full walk).
        let earliest = match r.root_after(now) {
            Some(root) if r.is_fresh() => Some(root),
            _ => self.earliest_ready_rest(now),
        };
        debug_assert_eq!(
            earliest,
            PortId::all(self.ports.len()).filter_map(|p| self.port_ready_at(p, now)).min(),
            "cached port readiness"
        );
        earliest
    }

    /// [`earliest_ready_at`](Self::earliest_ready_at) when the root alone does not answer.
    #[inline(never)]
    fn earliest_ready_rest(&self, now: Instant) -> Option<Instant> {
        let r = &self.readiness;
        let root = r.tree.get(1).copied().unwrap_or(NEVER);
        if r.stale_ports.is_empty() && root == NEVER && r.at_last_instant == 0 {
            None
        } else {
            self.earliest_ready_walk(now)
        }
    }

    /// [`earliest_ready_at`](Self::earliest_ready_at) port by port: stale and due ports computed afresh.
    fn earliest_ready_walk(&self, now: Instant) -> Option<Instant> {
        let r = &self.readiness;
        let mut earliest: Option<Instant> = None;
        for (port, &Slot { at, stale, .. }) in r.slots.iter().enumerate() {
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
        earliest
    }

    /// The first port from `from` on that [`poll_transmit`](Self::poll_transmit) at `now` may have a
    /// frame for: the ports passed over have nothing due (polling them would return `None` and change
    /// nothing). A driver polls these instead of every port.
    #[inline]
    pub fn next_port_to_poll(&self, from: usize, now: Instant) -> Option<PortId> {
        // Every value fresh and none due (the usual answer once a visit has served its ports): inline.
        let r = &self.readiness;
        if r.is_fresh() && r.tree.get(1).is_some_and(|&root| root > now.as_ns()) {
            debug_assert!(
                (from..self.ports.len())
                    .all(|p| self.port_ready_at(PortId::new(p), now).is_none_or(|t| t > now)),
                "a port passed over has something due"
            );
            return None;
        }
        self.next_port_to_poll_walk(from, now)
    }

    /// [`next_port_to_poll`](Self::next_port_to_poll) with some port stale or due.
    #[inline(never)]
    fn next_port_to_poll_walk(&self, from: usize, now: Instant) -> Option<PortId> {
        let r = &self.readiness;
        // A stale port's value in the tree is its old one: those ports are looked at apart. A root later
        // than `now` has nothing due below it (the usual answer once a visit has served its ports).
        let due =
            if r.tree.get(1).is_some_and(|&root| root > now.as_ns()) { None } else { r.first_due(from, now) };
        let port = if r.stale_ports.is_empty() {
            due?
        } else {
            let stale = r.stale_ports.iter().map(|p| p.index()).filter(|&p| p >= from).min();
            due.into_iter().chain(stale).min()?
        };
        debug_assert_eq!(
            Some(port),
            (from..r.slots.len()).find(|&p| r.slots[p].stale || r.slots[p].at.is_some_and(|t| t <= now)),
            "the tree's first port due"
        );
        debug_assert!(
            (from..port).all(|p| self.port_ready_at(PortId::new(p), now).is_none_or(|t| t > now)),
            "a port passed over has something due"
        );
        Some(PortId::new(port))
    }
}
