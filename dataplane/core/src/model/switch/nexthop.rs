//! A cache of where routed packets go, by destination address: the route lookup, the neighbour and, for
//! a VLAN interface, the FDB entry behind it, answered by one probe of a small direct-mapped table.
//!
//! Only the common outcome is kept: a route with one next hop (a connected subnet, or a static route with
//! a single next hop; ECMP groups depend on the flow and are not kept here, the flow fast path's group
//! entries hold them), its neighbour resolved, and its egress port known. Every other outcome (a miss, a
//! trap, a drop, an ARP to send, a flood) goes the full way, with its side effects, every time. An entry
//! holds while what it was computed from is unchanged: the configuration (its generation: routes,
//! interfaces, VLANs), the FDB and the neighbour table (their versions count entries added, moved or
//! removed; a refresh does not change an answer). Checks that depend on the port's state (up, MTU) are
//! made on every packet, after the cache. The routed fast path (`flow.rs`) also keeps the other outcomes,
//! as empty entries, so that a destination it does not serve costs it one probe (an ECMP group's costs a
//! route lookup more, when the flow table misses, to build its group entry); the full way treats them as
//! misses. Debug builds compare every hit with the full computation.

use super::Switch;
use crate::model::PortId;
use crate::model::config::{RifId, RifKind};
use crate::model::forwarding::RouteAction;
use crate::wire::EthernetAddress;
use std::net::IpAddr;

/// Slots of the table (a power of two): a ToR's routed destinations are a few hundred at most.
const SLOTS: usize = 256;

/// Where a routed packet to one destination leaves, and with which MACs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct NextHop {
    pub(super) out: PortId,
    /// The VLAN it leaves in (a VLAN router interface), for the egress tag.
    pub(super) vid: Option<u16>,
    /// The egress router interface's MAC.
    pub(super) src_mac: EthernetAddress,
    /// The neighbour's MAC.
    pub(super) dst_mac: EthernetAddress,
}

/// What an entry was computed from: the configuration's generation, the FDB's version, the neighbour
/// table's and the count of link and watchdog changes, as their sum. Each of them only grows over the
/// switch's life (a change adds to it; an installed configuration's tables go on from the old tables'
/// versions, `adopt_dynamic`), so the sum moves whenever any of them moves and never comes back to a
/// value it had: one word compared per probe, where three were. (The links and the watchdog are there
/// for the flow entries, which then need not read them per packet; the next-hop cache does not depend
/// on them, and only recomputes an entry more often.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Stamp(u64);

impl Stamp {
    /// A stamp no switch has (the sum of its counts never comes near `u64::MAX`): an empty table's.
    pub(super) const NEVER: Stamp = Stamp(u64::MAX);
}

impl Default for Stamp {
    fn default() -> Self {
        Stamp::NEVER
    }
}

#[derive(Debug, Clone, Copy)]
struct Slot {
    dst: IpAddr,
    stamp: Stamp,
    /// `None`: not an outcome the cache keeps (the full way decides).
    hop: Option<NextHop>,
}

#[derive(Debug, Default)]
pub(super) struct NextHopCache {
    /// Empty until the first insert, then [`SLOTS`] long.
    slots: Vec<Option<Slot>>,
}

fn slot_of(dst: IpAddr) -> usize {
    let folded = match dst {
        IpAddr::V4(a) => u32::from(a),
        IpAddr::V6(a) => {
            let x = u128::from(a);
            (x ^ x >> 32 ^ x >> 64 ^ x >> 96) as u32
        }
    };
    // Fibonacci hashing: the top bits of the product mix every bit of the address.
    (folded.wrapping_mul(0x9e37_79b9) >> (32 - SLOTS.trailing_zeros())) as usize
}

impl NextHopCache {
    /// `Some(hop)` when the slot holds `dst` under `stamp` (`hop` is `None` for an outcome not kept).
    fn get(&self, dst: IpAddr, stamp: Stamp) -> Option<Option<NextHop>> {
        let slot = self.slots.get(slot_of(dst))?.as_ref()?;
        (slot.dst == dst && slot.stamp == stamp).then_some(slot.hop)
    }

    fn insert(&mut self, dst: IpAddr, stamp: Stamp, hop: Option<NextHop>) {
        if self.slots.is_empty() {
            self.slots = vec![None; SLOTS];
        }
        self.slots[slot_of(dst)] = Some(Slot { dst, stamp, hop });
    }
}

impl Switch {
    pub(super) fn next_hop_stamp(&self) -> Stamp {
        Stamp(self.generation + self.fdb.version() + self.neighbors.version() + self.link_changes)
    }

    /// The cached next hop of `dst`, if it holds.
    pub(super) fn cached_next_hop(&self, dst: IpAddr) -> Option<NextHop> {
        let hop = self.next_hops.get(dst, self.next_hop_stamp())??;
        debug_assert_eq!(Some(hop), self.next_hop_uncached(dst), "cached next hop of {dst}");
        Some(hop)
    }

    /// The next hop of `dst` when it is an outcome the cache keeps, from the cache or computed (and then
    /// kept, either way): for the fast path, where a destination the full way must take costs one probe.
    pub(super) fn next_hop_kept(&mut self, dst: IpAddr, stamp: Stamp) -> Option<NextHop> {
        if let Some(hop) = self.next_hops.get(dst, stamp) {
            debug_assert_eq!(hop, self.next_hop_uncached(dst), "cached next hop of {dst}");
            return hop;
        }
        let hop = self.next_hop_uncached(dst);
        self.next_hops.insert(dst, stamp, hop);
        hop
    }

    /// Remembers the next hop the full computation found for `dst` (`route` calls it only for a route
    /// with one next hop).
    pub(super) fn cache_next_hop(&mut self, dst: IpAddr, hop: NextHop) {
        debug_assert_eq!(Some(hop), self.next_hop_uncached(dst), "next hop to cache for {dst}");
        let stamp = self.next_hop_stamp();
        self.next_hops.insert(dst, stamp, Some(hop));
    }

    /// What the cache would hold for `dst`, computed the full way (no side effects): the outcome of the
    /// route lookup, neighbour and FDB when it is one the cache keeps, else `None`.
    pub(super) fn next_hop_uncached(&self, dst: IpAddr) -> Option<NextHop> {
        let (next_hop, rif) = match self.derived.routes.lookup(dst)? {
            RouteAction::Connected(rif) => (dst, *rif),
            RouteAction::NextHops(hops) if hops.len() == 1 => hops[0],
            _ => return None,
        };
        self.resolved_hop(next_hop, rif)
    }

    /// Where a packet to the neighbour `next_hop` on `rif` leaves, when its neighbour is resolved and, on
    /// a VLAN interface, its MAC has an FDB entry (the full way's outcome then; else `None`).
    pub(super) fn resolved_hop(&self, next_hop: IpAddr, rif: RifId) -> Option<NextHop> {
        let neighbor = self.neighbors.lookup(next_hop)?;
        let iface = &self.config.interfaces[rif.index()];
        let (out, vid) = match iface.kind {
            RifKind::Port(p) => (p, None),
            RifKind::Vlan(v) => (self.fdb.lookup(v, neighbor.mac)?.port, Some(v)),
        };
        Some(NextHop { out, vid, src_mac: iface.mac, dst_mac: neighbor.mac })
    }
}
