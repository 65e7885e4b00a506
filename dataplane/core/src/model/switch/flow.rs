//! The routed fast path: a table of flow entries, one per (ingress port, IPv4 destination, DSCP), each
//! holding the whole ingress decision for the common packet of a RoCE fabric (an untagged IPv4 packet
//! without options, addressed to the ingress router interface's MAC, routed to a single resolved next
//! hop, or to a next-hop group): its classification, its egress port and VLAN, the MACs to write and the
//! longest frame both MTU checks pass; for a group, that decision for each member. Such a packet is read at fixed offsets, found in one probe and forwarded without the
//! layer-by-layer parse, the L2 domain and router-interface checks, the classification, the route and
//! neighbour lookups that [`Switch::receive`](super::Switch) makes for any other frame.
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
//! over the members whose port is oper up (all of them when none is). The members' link state is read on
//! every packet, so a member leaving or rejoining the group needs no invalidation. A member whose outcome
//! the fast path does not serve (an unresolved neighbour, above all) sends its flows the full way.
//! Debug builds compare every hit with the full computation and the frame's fields with `wire::transit`.

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
use std::net::{IpAddr, Ipv4Addr};

/// Slots of the table (a power of two): a spine of the 128-host Clos sees 16 ports × 128 destinations;
/// a collision only costs a recomputation.
const SLOTS: usize = 4096;
/// A key no frame has (a DSCP is 6 bits): an unused slot.
const EMPTY: u64 = u64::MAX;

/// What the fast path does with a routed packet of one flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct FlowAction {
    pub(super) out: PortId,
    /// The VLAN it leaves in (a VLAN router interface), for the egress tag.
    pub(super) vid: Option<u16>,
    pub(super) class: Classification,
    /// The neighbour's MAC then the egress interface's: the frame's first 12 bytes after routing.
    pub(super) macs: [u8; 12],
    /// The ingress router interface's MAC: a frame to any other MAC is not routed.
    pub(super) router_mac: [u8; 6],
    /// The ingress VLAN (an untagged member with a VLAN interface), where the source MAC is learnt.
    pub(super) learn_vid: Option<u16>,
    /// The longest frame that passes the ingress port's L2 MTU and the egress port's L3 MTU.
    pub(super) max_len: u32,
}

#[derive(Debug, Clone, Copy)]
struct FlowSlot {
    key: u64,
    stamp: Stamp,
    entry: Entry,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Entry {
    /// A route with one next hop.
    One(FlowAction),
    /// A next-hop group: its members are the slot's [`FlowTable::groups`] (in the route's order).
    Group,
}

/// One member of a next-hop group, as a group entry holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Member {
    /// The port whose link decides membership (a port router interface's); `None`: always a member.
    port: Option<PortId>,
    /// What the fast path does with a packet hashed to this member; `None`: the full way decides.
    action: Option<FlowAction>,
}

#[derive(Debug, Default)]
pub(super) struct FlowTable {
    /// Empty until the first insert, then [`SLOTS`] long; a slot whose key is [`EMPTY`] is unused.
    slots: Vec<FlowSlot>,
    /// The members of a group entry, by slot (so their storage is reused, never grows past [`SLOTS`]).
    groups: Vec<Vec<Member>>,
    /// Tests compare the switch with and without the fast path, and count the frames it forwarded.
    #[cfg(test)]
    pub(super) disabled: bool,
    #[cfg(test)]
    pub(super) hits: u64,
}

fn flow_key(port: PortId, dst: u32, dscp: u8) -> u64 {
    u64::from(dst) << 32 | (port.index() as u64) << 8 | u64::from(dscp)
}

fn slot_of(key: u64) -> usize {
    // Fibonacci hashing of the port and destination (the top bits of the product mix every bit): a
    // flow's DSCPs share a slot (its data and ACKs have one; a CNP, rarer, replaces it for a while).
    ((key >> 8).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - SLOTS.trailing_zeros())) as usize
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

/// The IPv4 header checksum verifies.
#[inline]
fn checksum_ok(header: &[u8; 20]) -> bool {
    wire::checksum::ipv4_header_ok(header)
}

impl FlowTable {
    /// The slot of `key`, if it holds an entry for it under `stamp`.
    fn find(&self, key: u64, stamp: Stamp) -> Option<usize> {
        let at = slot_of(key);
        self.slots.get(at).is_some_and(|s| s.key == key && s.stamp == stamp).then_some(at)
    }

    fn insert(&mut self, key: u64, stamp: Stamp, entry: Entry) -> usize {
        if self.slots.is_empty() {
            self.slots = vec![FlowSlot { key: EMPTY, stamp, entry: Entry::Group }; SLOTS];
            self.groups = vec![Vec::new(); SLOTS];
        }
        let at = slot_of(key);
        self.slots[at] = FlowSlot { key, stamp, entry };
        at
    }
}

impl Switch {
    /// Forwards `frame` by its flow entry, if it is a packet the fast path serves and every per-packet
    /// check passes; else hands it back untouched for the full way.
    pub(super) fn forward_by_flow(&mut self, port: PortId, frame: Vec<u8>, now: Instant) -> Option<Vec<u8>> {
        #[cfg(test)]
        if self.flows.disabled {
            return Some(frame);
        }
        // Ethernet and the IPv4 header as one array: every read below at a fixed offset, unchecked.
        let Some(head) = wire::transit::untagged_ipv4_head(&frame) else { return Some(frame) };
        let (dst, dscp, ttl) = head_fields(head);
        let key = flow_key(port, dst, dscp);
        let stamp = self.next_hop_stamp();
        let at = match self.flows.find(key, stamp) {
            Some(at) => {
                #[cfg(debug_assertions)]
                if let Entry::One(action) = self.flows.slots[at].entry {
                    debug_assert_eq!(
                        Some(action),
                        self.next_hop_uncached(IpAddr::V4(Ipv4Addr::from(dst)))
                            .and_then(|hop| self.flow_action(port, dscp, hop)),
                        "flow entry of port {port:?} to {} DSCP {dscp}",
                        Ipv4Addr::from(dst)
                    );
                }
                at
            }
            None => {
                // Only what the fast path serves is kept: a destination it does not serve is remembered
                // by the next-hop cache, so it costs a probe there, not a computation per packet.
                match self.next_hop_kept(IpAddr::V4(Ipv4Addr::from(dst)), stamp) {
                    Some(hop) => {
                        let Some(action) = self.flow_action(port, dscp, hop) else { return Some(frame) };
                        self.flows.insert(key, stamp, Entry::One(action))
                    }
                    None => {
                        let Some(members) = self.group_members(port, dst, dscp) else { return Some(frame) };
                        let at = self.flows.insert(key, stamp, Entry::Group);
                        self.flows.groups[at] = members;
                        at
                    }
                }
            }
        };
        let flow = match &self.flows.slots[at].entry {
            Entry::One(action) => action,
            Entry::Group => {
                let (src, protocol, (src_port, dst_port)) = hash_fields(&frame);
                let flow = FlowKey {
                    src: IpAddr::V4(Ipv4Addr::from(src)),
                    dst: IpAddr::V4(Ipv4Addr::from(dst)),
                    protocol,
                    src_port,
                    dst_port,
                };
                let hash = flow.hash(self.config.switch.ecmp_hash_seed);
                let live = |m: &&Member| m.port.is_none_or(|p| self.ports[p.index()].oper_up);
                let members = &self.flows.groups[at];
                let up = members.iter().filter(live).count();
                let member = if up == members.len() || up == 0 {
                    &members[(hash % members.len() as u64) as usize]
                } else {
                    members.iter().filter(live).nth((hash % up as u64) as usize).expect("up > 0 members")
                };
                match &member.action {
                    Some(action) => action,
                    None => return Some(frame),
                }
            }
        };
        // The destination MAC as a 4- and a 2-byte word: one load and comparison each.
        let (mac_hi, mac_lo) = flow.router_mac.split_at(4);
        if frame.len() > flow.max_len as usize
            || head[..4] != *mac_hi
            || head[4..6] != *mac_lo
            || head[6] & 1 != 0
            // The TTL read again where it lies (a copy would wait on the stack through the probe).
            || head[ethernet::HEADER_LEN + 8] <= 1
            || !checksum_ok(wire::transit::ip_header(head))
        {
            return Some(frame);
        }
        if let Some(v) = flow.learn_vid {
            let src = EthernetAddress(head[6..12].try_into().expect("6 bytes"));
            // The only learning left to do: a refresh of the entry already on this port.
            if !self.fdb.refresh(v, src, port, now) {
                return Some(frame);
            }
        }
        debug_assert!(
            wire::transit(&frame).is_ok_and(|v| v.vlan.is_none()
                && v.dst_addr.0 == flow.router_mac
                && v.ip.is_some_and(|ip| ip.dst_addr == IpAddr::from(Ipv4Addr::from(dst))
                    && ip.dscp == dscp
                    && ip.ttl == ttl)),
            "the fixed-offset read disagrees with wire::transit"
        );
        #[cfg(debug_assertions)]
        if self.flows.slots[at].entry == Entry::Group {
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
        #[cfg(test)]
        {
            self.flows.hits += 1;
        }
        // What the full way does with such a frame once decided: MACs and TTL, counters, the queue.
        // The same 34 bytes, now to write: the MACs straight from the entry, then the TTL with its
        // checksum (RFC 1624), before the counters, so that nothing of the entry waits in a register.
        let mut frame = frame;
        let head = frame.first_chunk_mut::<34>().expect("34 bytes, read above");
        let (macs_out, header) = head.split_at_mut(ethernet::HEADER_LEN);
        macs_out[..12].copy_from_slice(&flow.macs);
        wire::ipv4::decrement_ttl_fixed(header.try_into().expect("20 bytes"));
        let (out, vid, class) = (flow.out, flow.vid, flow.class);
        let len = frame.len() as u64;
        self.ledger.received += 1;
        let counters = &mut self.ports[port.index()].counters;
        counters.rx_ok += 1;
        counters.rx_bytes += len;
        // A PG is below 8 (`classify` masks it): the mask spares the bounds check.
        debug_assert!(class.pg < 8, "PG {}", class.pg);
        let pg = &mut counters.pgs[usize::from(class.pg & 7)];
        pg.packets += 1;
        pg.bytes += len;
        // What `deliver` does with one copy, without its iterator.
        if self.enqueue(out, vid, frame, Meta { ingress: Some(port), class, pcp: None }, now) {
            self.ledger.forwarded += 1;
        } else {
            self.ledger.dropped += 1;
        }
        None
    }

    /// A group entry's members for packets with `dscp` arriving on `port` to `dst`, when its route is a
    /// next-hop group and the fast path serves at least one member; else `None`.
    fn group_members(&self, port: PortId, dst: u32, dscp: u8) -> Option<Vec<Member>> {
        let Some(RouteAction::NextHops(hops)) = self.derived.routes.lookup(IpAddr::V4(Ipv4Addr::from(dst)))
        else {
            return None;
        };
        if hops.len() < 2 {
            return None;
        }
        let members: Vec<Member> = hops
            .iter()
            .map(|&(next_hop, rif)| Member {
                port: match self.config.interfaces[rif.index()].kind {
                    RifKind::Port(p) => Some(p),
                    RifKind::Vlan(_) => None,
                },
                action: self.resolved_hop(next_hop, rif).and_then(|hop| self.flow_action(port, dscp, hop)),
            })
            .collect();
        members.iter().any(|m| m.action.is_some()).then_some(members)
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
            class,
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
