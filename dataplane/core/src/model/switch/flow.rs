//! The routed fast path: a table of flow entries, one per (ingress port, IPv4 destination, DSCP), each
//! holding the whole ingress decision for the common packet of a RoCE fabric (an untagged IPv4 packet
//! without options, addressed to the ingress router interface's MAC, routed to a single resolved next
//! hop, or to a next-hop group): its classification, its egress port and VLAN, the MACs to write and the
//! longest frame both MTU checks pass; for a group, that decision for each member. Such a packet is read
//! at fixed offsets, found in one probe and forwarded without the layer-by-layer parse, the L2 domain and
//! router-interface checks, the classification, the route and neighbour lookups that
//! [`Switch::receive`](super::Switch) makes for any other frame.
//!
//! An entry holds while what it was computed from is unchanged: the configuration (its generation:
//! ports' admin state and MTUs, interfaces, VLANs, QoS maps, routes), the FDB and the neighbour table
//! (their versions, as in `nexthop.rs`), and the ports' links and the watchdog's actions (a count of
//! their changes, in the same stamp). What can change without those is checked on every packet: the
//! frame's length, IPv4 header checksum and lengths, destination and source MAC, TTL, and the learning
//! of the source MAC when the ingress port is in a VLAN (the FDB entry must already be on this port: its aging is refreshed in place, which is all the
//! full path's learning does then). Anything else, or any check failing, goes the full way with its
//! drops, traps, learning events, ARP and floods; nothing is changed before the fast path is sure.
//! An outcome the fast path does not serve (a trap, a drop, an unresolved neighbour) is kept as an empty
//! entry of the next-hop cache under the same stamp, so the full way is not preceded by a futile
//! computation per packet.
//!
//! A group entry (a route with several next hops: a leaf's upward traffic in a Clos) chooses the member
//! per packet as `Switch::ecmp_member` does: the flow hash with `ecmp_hash_seed` over the source and
//! destination, the protocol and the UDP ports (read at fixed offsets, where `wire::transit` finds them),
//! over the members whose port is oper up (all of them when none is). The links are in the stamp, so the
//! members a packet chooses among are fixed when the group is made (a member leaving or rejoining the
//! group starts a new epoch, as any link change does). A member whose outcome
//! the fast path does not serve (an unresolved neighbour, above all) sends its flows the full way.
//! Debug builds compare every hit with the full computation and the frame's fields with `wire::transit`.
//!
//! The table's memory is what a switch of a large simulated fabric pays for it in cache misses, so it is
//! sized by the flows the switch forwards, not by a fixed worst case: an index of 16-byte slots (key,
//! decision number), four to a cache line, that doubles when half full, and the decisions apart,
//! each kept once however many (port, destination) pairs share it. A probe reads one line of the index
//! and one decision from a pool of a few hundred, where the fixed table of 4,096 80-byte entries read
//! two lines of 320 KiB per switch.

use super::nexthop::{NextHop, Stamp};
use super::{Meta, Switch};
use crate::model::PortId;
use crate::model::classify::Classification;
use crate::model::config::RifKind;
use crate::model::forwarding::{FlowKey, RouteAction};
use crate::time::Instant;
#[cfg(test)]
use crate::wire::Ipv4Packet;
use crate::wire::{self, EthernetAddress, bth, ethernet, udp, vlan};
use rustc_hash::FxHashMap;
use std::net::{IpAddr, Ipv4Addr};

/// Slots of the index when the first entry comes (a power of two); it doubles when half full, so it is
/// sized by the flows a switch actually forwards (a leaf of the 128-host Clos has about a thousand
/// (port, destination) pairs, a spine two thousand), up to [`MAX_SLOTS`].
const MIN_SLOTS: usize = 64;
/// The most slots the index grows to (16 bytes each: 256 KiB). Half full at this size, it forgets every
/// entry and starts again: a switch forwarding more flows than that recomputes some.
const MAX_SLOTS: usize = 16384;
/// `Slot::entry` of a next-hop group: the low bits are its index in [`FlowTable::groups`].
const GROUP: u32 = 1 << 31;
/// `Member::action` of a member the fast path does not serve.
const NO_ACTION: u32 = u32::MAX;

/// What the fast path does with a routed packet of one flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct FlowAction {
    pub(super) out: PortId,
    /// The VLAN it leaves in (a VLAN router interface), for the egress tag.
    pub(super) vid: Option<u16>,
    /// What `enqueue` is given with the frame (the ingress port, the classification, no PCP): whole,
    /// so that it is copied as it lies rather than put together from its fields per packet.
    pub(super) meta: Meta,
    /// The neighbour's MAC then the egress interface's: the frame's first 12 bytes after routing.
    pub(super) macs: [u8; 12],
    /// The ingress router interface's MAC: a frame to any other MAC is not routed.
    pub(super) router_mac: [u8; 6],
    /// The ingress VLAN (an untagged member with a VLAN interface), where the source MAC is learnt.
    pub(super) learn_vid: Option<u16>,
    /// The longest frame that passes the ingress port's L2 MTU and the egress port's L3 MTU.
    pub(super) max_len: u32,
}

impl std::hash::Hash for FlowAction {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        let Meta { ingress, class, pcp } = self.meta;
        let Classification { tc, pg, queue_override, set_dscp, drop } = class;
        (self.out, self.vid, ingress, pcp, tc, pg, queue_override, set_dscp, drop).hash(h);
        (self.macs, self.router_mac, self.learn_vid, self.max_len).hash(h);
    }
}

/// One (ingress port, destination, DSCP) of the index: 16 bytes, so that a probe reads one cache line
/// (four slots to a line); what it decides is kept apart, once per distinct decision.
#[derive(Debug, Clone, Copy)]
#[repr(C, align(16))]
struct Slot {
    /// [`UNUSED_KEY`] in an unused slot.
    key: u64,
    /// An index into [`FlowTable::actions`], or [`GROUP`] | an index into [`FlowTable::groups`].
    entry: u32,
}

/// No flow's key: a key's bits 38 and 39 are always 0 (a DSCP is below 64).
const UNUSED_KEY: u64 = u64::MAX;
const UNUSED: Slot = Slot { key: UNUSED_KEY, entry: 0 };

/// A next-hop group's members: `members[start..start + len]`; and those a packet chooses among,
/// `members[pick_start..pick_start + pick_len]`: the members whose port is oper up, or all of them when
/// none is. The links are in the stamp the entries were made under (`Switch::link_changes`), so that set
/// holds as long as the group does, and a packet's choice is one index, not a count of the members up.
#[derive(Debug, Clone, Copy)]
struct Group {
    start: u32,
    len: u32,
    pick_start: u32,
    pick_len: u32,
}

/// One member of a next-hop group, as a group entry holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Member {
    /// The port whose link decides membership (a port router interface's); `None`: always a member.
    port: Option<PortId>,
    /// What the fast path does with a packet hashed to this member, an index into
    /// [`FlowTable::actions`]; [`NO_ACTION`]: the full way decides.
    action: u32,
}

/// The flow entries. All of them were computed under one [`Stamp`] (the switch's when they were made):
/// when the switch's stamp moves on, the table forgets them all (a new epoch: every slot marked unused,
/// which costs far less than computing the entries again); that is what an entry's own stamp was
/// checked for, without 24 bytes in every slot. The index is open-addressed (linear probing): within
/// an epoch nothing is removed, so a probe stops at the first unused slot. (Slots used to carry the
/// epoch they were made in, so that a new one marked none of them; that was a second comparison per
/// probe, and a register.) The decisions are interned: the 2,000 entries of a Clos spine share a few
/// hundred actions (one per ingress port, egress port and class), a leaf's 1,000 group entries a few
/// groups.
#[derive(Debug, Default)]
pub(super) struct FlowTable {
    /// Empty until the first insert; a power of two at least [`MIN_SLOTS`] long from then on.
    slots: Vec<Slot>,
    /// Slots holding an entry.
    live: usize,
    /// What the entries were computed under; [`Stamp::NEVER`] until the first entry.
    stamp: Stamp,
    /// This epoch's distinct decisions, and where each is (to intern a new entry's).
    actions: Vec<FlowAction>,
    action_ids: FxHashMap<FlowAction, u32>,
    groups: Vec<Group>,
    members: Vec<Member>,
    group_ids: FxHashMap<Vec<Member>, u32>,
    /// Tests compare the switch with and without the fast path, and count the frames it forwarded.
    #[cfg(test)]
    pub(super) disabled: bool,
    #[cfg(test)]
    pub(super) hits: u64,
}

/// A new entry's decision, before it is interned.
enum Entry {
    /// A route with one next hop.
    One(FlowAction),
    /// A next-hop group: its members in the route's order.
    Group(Vec<NewMember>),
}

/// A new group entry's member: its port, its decision if the fast path serves it, and whether its port is
/// oper up (always, without a port).
type NewMember = (Option<PortId>, Option<FlowAction>, bool);

/// The index key of a frame's flow, from the 34-byte head `wire::transit::untagged_ipv4_head` returned:
/// its ingress port, IPv4 destination and DSCP. The destination is taken as it lies in memory (a key
/// only has to tell flows apart), which spares a byte swap per frame, in the low 32 bits (see
/// `slot_of`). Keys of distinct flows differ while port indices are below 2^24 (a switch's port
/// states alone would take 80 GB beyond that).
#[inline]
fn flow_key(port: PortId, head: &[u8; 34]) -> u64 {
    debug_assert!(port.index() < 1 << 24, "port index {}", port.index());
    let header = wire::transit::ip_header(head);
    let dst = u32::from_ne_bytes([header[16], header[17], header[18], header[19]]);
    ((port.index() as u64) << 8 | u64::from(header[1] >> 2)) << 32 | u64::from(dst)
}

/// The home slot of `key` in an index of `mask + 1` slots (a power of two, at most [`MAX_SLOTS`]).
#[inline]
fn slot_of(key: u64, mask: usize) -> usize {
    // Fibonacci hashing: the top bits of the product, by a fixed shift (a shift by the index's size
    // needed the count register, and moves around it), then the low bits of those. Bit i of the
    // product depends on the key's bits up to i: the shift keeps bits 50 and up, which depend on the
    // destination (the key's low 32 bits), the DSCP and the port's low bits whatever the index's size.
    const SHIFT: u32 = 64 - MAX_SLOTS.trailing_zeros();
    (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> SHIFT) as usize & mask
}

/// The fields of an untagged IPv4 frame without options the fast path reads, when its lengths hold as
/// `wire::transit` requires (the checksum is verified apart, only for a frame the table has an entry
/// for): (destination address, DSCP, TTL).
#[cfg(test)]
fn fixed_ipv4(frame: &[u8]) -> Option<(u32, u8, u8)> {
    wire::transit::untagged_ipv4_head(frame).map(head_fields)
}

/// `fixed_ipv4`'s fields, from the 34-byte head `wire::transit::untagged_ipv4_head` returned.
#[inline]
fn head_fields(head: &[u8; 34]) -> (u32, u8, u8) {
    let header = wire::transit::ip_header(head);
    let dst = u32::from_be_bytes([header[16], header[17], header[18], header[19]]);
    (dst, header[1] >> 2, header[8])
}

/// What the ECMP hash reads of a frame `fixed_ipv4` accepted, at fixed offsets as `wire::transit` reads
/// it: (source address, protocol, UDP ports). The ports are (0, 0), as `route` takes them, unless the
/// packet is UDP, not a fragment, and its UDP header parses (a length within the IPv4 payload, and a whole
/// BTH after it when it goes to the RoCEv2 port).
fn hash_fields(frame: &[u8]) -> (u32, u8, (u16, u16)) {
    const IP: usize = ethernet::HEADER_LEN;
    const UDP: usize = IP + 20;
    let header = &frame[IP..UDP];
    let src = u32::from_be_bytes([header[12], header[13], header[14], header[15]]);
    let protocol = header[9];
    let fragment = u16::from_be_bytes([header[6], header[7]]) & 0x3fff != 0;
    let ports = || {
        if protocol != 17 || fragment {
            return None;
        }
        let total_len = usize::from(u16::from_be_bytes([header[2], header[3]]));
        let datagram = frame.get(UDP..IP + total_len)?;
        let head = datagram.first_chunk::<{ udp::HEADER_LEN }>()?;
        let len = usize::from(u16::from_be_bytes([head[4], head[5]]));
        let dst = u16::from_be_bytes([head[2], head[3]]);
        if len < udp::HEADER_LEN
            || len > datagram.len()
            || (dst == udp::ROCEV2_PORT && len - udp::HEADER_LEN < bth::HEADER_LEN)
        {
            return None;
        }
        Some((u16::from_be_bytes([head[0], head[1]]), dst))
    };
    (src, protocol, ports().unwrap_or((0, 0)))
}

/// [`FlowKey::hash`] of an IPv4 flow from its fields as the frame holds them: the same FNV-1a over the
/// same 13 bytes (addresses, protocol, ports, big-endian) and the same finaliser, without building the
/// key's address enums (debug builds compare the two on every packet).
#[inline]
fn flow_hash_v4(seed: u32, src: u32, dst: u32, protocol: u8, (src_port, dst_port): (u16, u16)) -> u64 {
    let [s0, s1, s2, s3] = src.to_be_bytes();
    let [d0, d1, d2, d3] = dst.to_be_bytes();
    let [sp0, sp1] = src_port.to_be_bytes();
    let [dp0, dp1] = dst_port.to_be_bytes();
    let bytes = [s0, s1, s2, s3, d0, d1, d2, d3, protocol, sp0, sp1, dp0, dp1];
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ u64::from(seed);
    for b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h ^= h >> 30;
    h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^= h >> 27;
    h = h.wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

/// The IPv4 header checksum verifies.
#[inline]
fn checksum_ok(header: &[u8; 20]) -> bool {
    wire::checksum::ipv4_header_ok(header)
}

impl FlowTable {
    /// The entry of `key` under `stamp`: an index into `actions`, or [`GROUP`] | an index into
    /// `groups`. `None` under another stamp than the table's too (`at_stamp` then starts a new epoch).
    #[inline]
    fn find(&self, key: u64, stamp: Stamp) -> Option<u32> {
        if self.stamp != stamp {
            return None;
        }
        let mask = self.slots.len().wrapping_sub(1);
        let mut at = slot_of(key, mask);
        // Never more than half full: an unused slot ends every probe.
        loop {
            let slot = self.slots.get(at)?;
            if slot.key == key {
                return Some(slot.entry);
            }
            if slot.key == UNUSED_KEY {
                return None;
            }
            at = (at + 1) & mask;
        }
    }

    /// Forgets every entry if they were computed under another stamp than `stamp`.
    fn at_stamp(&mut self, stamp: Stamp) {
        if self.stamp != stamp {
            self.new_epoch(stamp);
        }
    }

    /// Forgets every entry: they were computed under another stamp.
    #[cold]
    fn new_epoch(&mut self, stamp: Stamp) {
        self.stamp = stamp;
        self.live = 0;
        self.slots.fill(UNUSED);
        self.actions.clear();
        self.action_ids.clear();
        self.groups.clear();
        self.members.clear();
        self.group_ids.clear();
    }

    /// Adds the entry of `key`, not in the table, computed under the table's stamp (`find` just missed
    /// it); returns what `find` will return for it.
    fn insert(&mut self, key: u64, entry: Entry) -> u32 {
        if (self.live + 1) * 2 > self.slots.len() {
            if self.slots.len() < MAX_SLOTS {
                self.grow();
            } else {
                self.new_epoch(self.stamp);
            }
        }
        let entry = match entry {
            Entry::One(action) => self.intern(action),
            Entry::Group(members) => {
                let up: Vec<bool> = members.iter().map(|m| m.2).collect();
                let members: Vec<Member> = members
                    .into_iter()
                    .map(|(port, action, _)| Member {
                        port,
                        action: action.map_or(NO_ACTION, |a| self.intern(a)),
                    })
                    .collect();
                let next = self.groups.len() as u32;
                let id = *self.group_ids.entry(members).or_insert_with_key(|members| {
                    let start = self.members.len() as u32;
                    self.members.extend_from_slice(members);
                    // Within an epoch the same members have the same links: the first group's choice set
                    // is every later one's. All of them (the usual case) are the members themselves; a
                    // part of them is kept after them.
                    let len = members.len() as u32;
                    let n_up = up.iter().filter(|&&u| u).count();
                    let (pick_start, pick_len) = if n_up == 0 || n_up == members.len() {
                        (start, len)
                    } else {
                        self.members.extend(members.iter().zip(&up).filter(|m| *m.1).map(|m| *m.0));
                        (start + len, n_up as u32)
                    };
                    self.groups.push(Group { start, len, pick_start, pick_len });
                    next
                });
                GROUP | id
            }
        };
        self.place(Slot { key, entry });
        entry
    }

    /// The index of `action` in `actions`, added if new.
    fn intern(&mut self, action: FlowAction) -> u32 {
        let next = self.actions.len() as u32;
        *self.action_ids.entry(action).or_insert_with(|| {
            self.actions.push(action);
            next
        })
    }

    /// Puts `slot` at the first unused slot from its key's home.
    fn place(&mut self, slot: Slot) {
        let mask = self.slots.len() - 1;
        let mut at = slot_of(slot.key, mask);
        while self.slots[at].key != UNUSED_KEY {
            at = (at + 1) & mask;
        }
        self.slots[at] = slot;
        self.live += 1;
    }

    /// Doubles the index (from nothing: [`MIN_SLOTS`]), keeping its entries.
    fn grow(&mut self) {
        let len = (self.slots.len() * 2).max(MIN_SLOTS);
        let old = std::mem::replace(&mut self.slots, vec![UNUSED; len]);
        self.live = 0;
        for slot in old.into_iter().filter(|s| s.key != UNUSED_KEY) {
            self.place(slot);
        }
    }

    /// The action a group entry's packet takes, by its flow hash `hash` and the ports' link state `up`
    /// (a member whose port is down is left out, unless all are): `None` for a member the fast path does
    /// not serve. As `Switch::ecmp_member` chooses.
    #[inline]
    #[cfg_attr(not(debug_assertions), allow(unused_variables))]
    fn member(&self, group: u32, hash: u64, up: impl Fn(PortId) -> bool) -> Option<u32> {
        let Group { start, len, pick_start, pick_len } = self.groups[(group & !GROUP) as usize];
        let member = self.members[pick_start as usize + (hash % u64::from(pick_len)) as usize];
        #[cfg(debug_assertions)]
        {
            // The choice among the members up now, as `Switch::ecmp_member` makes it.
            let members = &self.members[start as usize..(start + len) as usize];
            let live = |m: &&Member| m.port.is_none_or(&up);
            let n_up = members.iter().filter(live).count();
            let full = if n_up == members.len() || n_up == 0 {
                &members[(hash % members.len() as u64) as usize]
            } else {
                members.iter().filter(live).nth((hash % n_up as u64) as usize).expect("n_up > 0 members")
            };
            assert_eq!(member, *full, "ECMP member of group {group:#x}");
        }
        (member.action != NO_ACTION).then_some(member.action)
    }
}

impl Switch {
    /// Forwards `frame` by its flow entry, if it is a packet the fast path serves and every per-packet
    /// check passes; else hands it, untouched, to the full way (`Switch::receive_full`).
    ///
    /// Everything but the common hit is out of line, each called last (a new flow's entry, a group's
    /// member, a refresh of the source's FDB entry, the full way): nothing is kept across those calls,
    /// so the common frame pays no stack frame and few saved registers for them.
    #[inline(always)]
    pub(super) fn forward_by_flow(&mut self, port: PortId, frame: Vec<u8>, now: Instant) {
        #[cfg(test)]
        if self.flows.disabled {
            return self.receive_full(port, frame, now);
        }
        // Ethernet and the IPv4 header as one array: every read below at a fixed offset, unchecked.
        let Some(head) = wire::transit::untagged_ipv4_head(&frame) else {
            return self.receive_full(port, frame, now);
        };
        let Some(entry) = self.flows.find(flow_key(port, head), self.next_hop_stamp()) else {
            return self.forward_new_flow(port, frame, now);
        };
        if entry & GROUP != 0 {
            return self.forward_group(port, frame, now, entry);
        }
        #[cfg(debug_assertions)]
        {
            let (dst, dscp, _) = head_fields(head);
            debug_assert_eq!(
                Some(self.flows.actions[entry as usize]),
                self.next_hop_uncached(IpAddr::V4(Ipv4Addr::from(dst)))
                    .and_then(|hop| self.flow_action(port, dscp, hop)),
                "flow entry of port {port:?} to {} DSCP {dscp}",
                Ipv4Addr::from(dst)
            );
        }
        self.forward_by_action::<false>(port, frame, now, entry, entry);
    }

    /// A frame of a group entry (`entry`): by the action of the member it hashes to, or the full way
    /// when the fast path does not serve that member.
    #[inline(never)]
    fn forward_group(&mut self, port: PortId, frame: Vec<u8>, now: Instant, entry: u32) {
        let (src, protocol, (src_port, dst_port)) = hash_fields(&frame);
        let head = frame.first_chunk::<34>().expect("a frame the fast path read");
        let (dst, _, _) = head_fields(head);
        let seed = self.config.switch.ecmp_hash_seed;
        let hash = flow_hash_v4(seed, src, dst, protocol, (src_port, dst_port));
        debug_assert_eq!(
            hash,
            FlowKey {
                src: IpAddr::V4(Ipv4Addr::from(src)),
                dst: IpAddr::V4(Ipv4Addr::from(dst)),
                protocol,
                src_port,
                dst_port,
            }
            .hash(seed),
            "the IPv4 flow hash"
        );
        let ports = &self.ports;
        match self.flows.member(entry, hash, |p| ports[p.index()].oper_up) {
            Some(action) => self.forward_by_action::<false>(port, frame, now, entry, action),
            None => self.receive_full(port, frame, now),
        }
    }

    /// A frame whose entry's action learns its source (an ingress VLAN): the refresh of its FDB entry is
    /// a call, whose saved registers the other frames do not pay.
    #[inline(never)]
    fn forward_learning(&mut self, port: PortId, frame: Vec<u8>, now: Instant, entry: u32, action: u32) {
        self.forward_by_action::<true>(port, frame, now, entry, action);
    }

    /// The per-packet checks of action `action` (an index into the table's actions; `entry` is what the
    /// index gave, for debug builds' checks) and, when they pass, the frame forwarded by it. `LEARN`:
    /// the source's FDB entry is refreshed here (else a learning action is handed to
    /// `forward_learning`).
    #[inline(always)]
    fn forward_by_action<const LEARN: bool>(
        &mut self,
        port: PortId,
        frame: Vec<u8>,
        now: Instant,
        entry: u32,
        action: u32,
    ) {
        #[cfg(not(debug_assertions))]
        let _ = entry;
        let head = frame.first_chunk::<34>().expect("a frame the fast path read");
        let flow = &self.flows.actions[action as usize];
        // The destination MAC as a 4- and a 2-byte word: one load and comparison each.
        let (mac_hi, mac_lo) = flow.router_mac.split_at(4);
        if frame.len() > flow.max_len as usize
            || head[..4] != *mac_hi
            || head[4..6] != *mac_lo
            || head[6] & 1 != 0
            || head[ethernet::HEADER_LEN + 8] <= 1
            || !checksum_ok(wire::transit::ip_header(head))
        {
            return self.receive_full(port, frame, now);
        }
        if let Some(v) = flow.learn_vid {
            if !LEARN {
                return self.forward_learning(port, frame, now, entry, action);
            }
            let src = EthernetAddress(head[6..12].try_into().expect("6 bytes"));
            // The only learning left to do: a refresh of the entry already on this port.
            if !self.fdb.refresh(v, src, port, now) {
                return self.receive_full(port, frame, now);
            }
        }
        #[cfg(debug_assertions)]
        {
            let (dst, dscp, ttl) = head_fields(head);
            debug_assert!(
                wire::transit(&frame).is_ok_and(|v| v.vlan.is_none()
                    && v.dst_addr.0 == flow.router_mac
                    && v.ip.is_some_and(|ip| ip.dst_addr == IpAddr::from(Ipv4Addr::from(dst))
                        && ip.dscp == dscp
                        && ip.ttl == ttl)),
                "the fixed-offset read disagrees with wire::transit"
            );
            if entry & GROUP != 0 {
                let ip = wire::transit(&frame).ok().and_then(|v| v.ip).expect("an IPv4 packet");
                let full = match self.derived.routes.lookup(ip.dst_addr) {
                    Some(RouteAction::NextHops(hops)) if hops.len() > 1 => {
                        let (next_hop, rif) = self.ecmp_member(hops, &ip);
                        self.resolved_hop(next_hop, rif).and_then(|hop| self.flow_action(port, dscp, hop))
                    }
                    _ => None,
                };
                debug_assert_eq!(
                    Some(*flow),
                    full,
                    "ECMP member of port {port:?} to {} DSCP {dscp}",
                    ip.dst_addr
                );
            }
        }
        // What the full way does with such a frame once decided: MACs and TTL, counters, the queue.
        // The same 34 bytes, now to write: the MACs straight from the entry, then the TTL with its
        // checksum (RFC 1624), before the counters, so that nothing of the entry waits in a register.
        let mut frame = frame;
        let head = frame.first_chunk_mut::<34>().expect("34 bytes, read above");
        let (macs_out, header) = head.split_at_mut(ethernet::HEADER_LEN);
        macs_out[..12].copy_from_slice(&flow.macs);
        wire::ipv4::decrement_ttl_fixed(header.try_into().expect("20 bytes"));
        let (out, vid, meta) = (flow.out, flow.vid, flow.meta);
        #[cfg(test)]
        {
            self.flows.hits += 1;
        }
        let len = frame.len() as u64;
        // Counted as forwarded before the call, taken back if `enqueue` drops it: nothing of the switch
        // is needed after the call on the common way.
        self.ledger.received += 1;
        self.ledger.forwarded += 1;
        let counters = &mut self.ports[port.index()].counters;
        counters.rx_ok += 1;
        counters.rx_bytes += len;
        // A PG is below 8 (`classify` masks it): the mask spares the bounds check.
        debug_assert!(meta.class.pg < 8, "PG {}", meta.class.pg);
        let pg = &mut counters.pgs[usize::from(meta.class.pg & 7)];
        pg.packets += 1;
        pg.bytes += len;
        // What `deliver` does with one copy, without its iterator.
        if !self.enqueue(out, vid, frame, meta, now) {
            self.ledger.forwarded -= 1;
            self.ledger.dropped += 1;
        }
    }

    /// A frame of the fast path's shape whose flow has no entry (or whose entries a new stamp just
    /// forgot): its entry is made when the fast path serves it, and the frame forwarded by it; any
    /// other frame goes the full way. Only what the fast path serves is kept: a destination it does not
    /// serve is remembered by the next-hop cache, so it costs a probe there, not a computation per packet.
    #[cold]
    #[inline(never)]
    fn forward_new_flow(&mut self, port: PortId, frame: Vec<u8>, now: Instant) {
        let head = wire::transit::untagged_ipv4_head(&frame).expect("checked by forward_by_flow");
        let (key, (dst, dscp, _)) = (flow_key(port, head), head_fields(head));
        let stamp = self.next_hop_stamp();
        self.flows.at_stamp(stamp);
        let entry = match self.next_hop_kept(IpAddr::V4(Ipv4Addr::from(dst)), stamp) {
            Some(hop) => match self.flow_action(port, dscp, hop) {
                Some(action) => Entry::One(action),
                None => return self.receive_full(port, frame, now),
            },
            None => match self.group_members(port, dst, dscp) {
                Some(members) => Entry::Group(members),
                None => return self.receive_full(port, frame, now),
            },
        };
        // `find` has just missed the key under this stamp.
        self.flows.insert(key, entry);
        // Found now: the fast path's checks and forwarding, as for any later frame of the flow
        // (`handle_frame` is `forward_by_flow`, inlined).
        self.handle_frame(port, frame, now);
    }

    /// A group entry's members for packets with `dscp` arriving on `port` to `dst`, when its route is a
    /// next-hop group and the fast path serves at least one member; else `None`.
    fn group_members(&self, port: PortId, dst: u32, dscp: u8) -> Option<Vec<NewMember>> {
        let Some(RouteAction::NextHops(hops)) = self.derived.routes.lookup(IpAddr::V4(Ipv4Addr::from(dst)))
        else {
            return None;
        };
        if hops.len() < 2 {
            return None;
        }
        let members: Vec<_> = hops
            .iter()
            .map(|&(next_hop, rif)| {
                let member = match self.config.interfaces[rif.index()].kind {
                    RifKind::Port(p) => Some(p),
                    RifKind::Vlan(_) => None,
                };
                let action =
                    self.resolved_hop(next_hop, rif).and_then(|hop| self.flow_action(port, dscp, hop));
                (member, action, member.is_none_or(|p| self.ports[p.index()].oper_up))
            })
            .collect();
        members.iter().any(|m| m.1.is_some()).then_some(members)
    }

    /// The fast path's decision for an untagged IPv4 packet with `dscp` arriving on `port` (addressed
    /// to the router, from a unicast source) routed to `hop` (its route's single next hop, or the member
    /// of its next-hop group a packet hashes to), computed from the tables as the full way decides it;
    /// `None` when the full way must take it.
    fn flow_action(&self, port: PortId, dscp: u8, hop: NextHop) -> Option<FlowAction> {
        let port_cfg = self.config.ports.get(port.index())?;
        if !port_cfg.admin_up {
            return None;
        }
        let learn_vid = self.derived.untagged_vlan[port.index()];
        let rif_in = match learn_vid {
            Some(v) => self.derived.vlan(v)?.rif?,
            None => self.derived.rif_by_port[port.index()]?,
        };
        let router_mac = self.config.interfaces[rif_in.index()].mac;
        // A multicast router MAC would count as non-unicast, or be trapped as link-local.
        if router_mac.is_multicast() {
            return None;
        }
        // Only a port whose table answers classification (no border rules: no drop, no DSCP rewrite).
        let class = self.derived.dscp_class(port, dscp)?;
        if class.drop || class.set_dscp.is_some() {
            return None;
        }
        let NextHop { out, vid, src_mac, dst_mac } = hop;
        let out_cfg = &self.config.ports[out.index()];
        if !out_cfg.admin_up {
            return None;
        }
        // The egress link and the watchdog's ingress drop are in the stamp (`Switch::link_changes`):
        // checked here, when the entry is made, rather than per packet.
        if !self.ports[out.index()].oper_up
            || self.wd_masks.get(port.index()).is_some_and(|m| m.dropping_ingress & (1 << class.tc) != 0)
        {
            return None;
        }
        let mut macs = [0; 12];
        macs[..6].copy_from_slice(&dst_mac.0);
        macs[6..].copy_from_slice(&src_mac.0);
        let l2_max = port_cfg.mtu as usize + ethernet::HEADER_LEN + vlan::HEADER_LEN;
        let l3_max = out_cfg.mtu as usize + ethernet::HEADER_LEN;
        Some(FlowAction {
            out,
            vid,
            meta: Meta { ingress: Some(port), class, pcp: None },
            macs,
            router_mac: router_mac.0,
            learn_vid,
            max_len: l2_max.min(l3_max).try_into().unwrap_or(u32::MAX),
        })
    }
}

#[cfg(test)]
#[path = "flow_tests.rs"]
mod tests;
