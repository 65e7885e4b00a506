//! The routed fast path against the full way: twin switches, one with its flow table disabled, are given
//! the same frames, time and changes (host moves, MAC changes, FDB flushes, links going down, new
//! configurations) and must agree on everything observable after each step: what leaves every port, the
//! counters, the ledger, the FDB (ages included), the neighbours and the events. The scenario also asserts
//! where frames go, so a stale entry fails it even where both twins would agree.

use super::*;
use crate::model::config::ConfigDb;
use crate::model::counters::DropReason;
use crate::model::switch::{Event, Transmit};
use crate::time::Nanos;
use crate::wire::build::{self, Ipv4Flow};
use crate::wire::ip::Ecn;
use crate::wire::{ArpOperation, ArpRepr, EtherType};
use proptest::prelude::*;

const T0_YAML: &str = include_str!("../../../../../configs/t0.yaml");
const ROUTER_MAC: EthernetAddress = EthernetAddress([0x02, 0x4c, 0x53, 0, 0, 1]);
const UPLINK_MAC: EthernetAddress = EthernetAddress([0x02, 0xaa, 0, 0, 0, 1]);
const HOST_MAC: EthernetAddress = EthernetAddress([0x02, 0xbb, 0, 0, 0, 2]);
const HOST_IP: Ipv4Addr = Ipv4Addr::new(192, 168, 0, 2);
/// Ethernet4's static neighbour (`NEIGH` in the T0 configuration).
const UPLINK1_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 3);

fn t0_db() -> ConfigDb {
    ConfigDb::from_yaml_str(T0_YAML).unwrap()
}

/// Everything a driver or an operator can observe of a switch, less the frames.
#[derive(Debug, PartialEq)]
struct Observed {
    counters: crate::model::counters::CountersDump,
    fdb: Vec<(u16, EthernetAddress, crate::model::forwarding::FdbEntry)>,
    neighbors: Vec<(IpAddr, crate::model::forwarding::Neighbor)>,
    events: Vec<Event>,
}

fn observe(sw: &mut Switch) -> Observed {
    Observed {
        counters: sw.counters(),
        fdb: sw.fdb().entries(),
        neighbors: sw.neighbors().entries(),
        events: std::iter::from_fn(|| sw.poll_event()).collect(),
    }
}

/// Sends whatever every port holds, one frame per microsecond per port (a bounded number of tries: a
/// port whose link is down sends nothing, and a frame wrongly queued there must fail a test, not hang it).
fn drain(sw: &mut Switch, now: Instant) -> Vec<(PortId, Transmit)> {
    let mut out = Vec::new();
    for p in PortId::all(sw.port_count()) {
        let mut t = now;
        for _ in 0..1_000 {
            if sw.port_backlog(p) == 0 {
                break;
            }
            if let Some(tx) = sw.poll_transmit(p, t) {
                out.push((p, tx));
            }
            t += Nanos::from_us(1);
        }
    }
    out
}

struct Twin {
    fast: Switch,
    full: Switch,
}

impl Twin {
    fn new(db: &ConfigDb) -> Twin {
        let mut fast = Switch::new();
        let mut full = Switch::new();
        full.flows.disabled = true;
        fast.apply(db, Instant::ZERO).unwrap();
        full.apply(db, Instant::ZERO).unwrap();
        Twin { fast, full }
    }

    fn port(&self, name: &str) -> PortId {
        self.fast.port_id(name).unwrap()
    }

    /// Applies the same change to both, then checks they agree.
    fn both(&mut self, now_ns: u64, change: impl Fn(&mut Switch)) -> Vec<(PortId, Transmit)> {
        change(&mut self.fast);
        change(&mut self.full);
        let now = Instant::from_ns(now_ns);
        let (a, b) = (drain(&mut self.fast, now), drain(&mut self.full, now));
        assert_eq!(a, b, "what left the ports");
        assert_eq!(observe(&mut self.fast), observe(&mut self.full));
        a
    }

    /// A frame arrives on `port`: what left where.
    fn frame(&mut self, port: &str, frame: Vec<u8>, now_ns: u64) -> Vec<(PortId, Transmit)> {
        let p = self.port(port);
        self.both(now_ns, |sw| sw.handle_frame(p, frame.clone(), Instant::from_ns(now_ns)))
    }

    fn hits(&self) -> u64 {
        self.fast.flows.hits
    }

    fn drops(&self, port: &str, reason: DropReason) -> u64 {
        let c = self.fast.port_counters(self.port(port)).unwrap();
        c.drop_reasons.get(&reason).copied().unwrap_or(0)
    }
}

fn arp_request(mac: EthernetAddress, ip: Ipv4Addr, target: Ipv4Addr) -> Vec<u8> {
    let arp = ArpRepr {
        operation: ArpOperation::Request,
        source_hardware_addr: mac,
        source_protocol_addr: ip,
        target_hardware_addr: EthernetAddress([0; 6]),
        target_protocol_addr: target,
    };
    build::ethernet(mac, EthernetAddress::BROADCAST, None, EtherType::Arp, &build::arp(&arp))
}

fn routed(src_mac: EthernetAddress, dst: Ipv4Addr, dscp: u8, ttl: u8, payload: usize) -> Vec<u8> {
    Ipv4Flow {
        src_mac,
        dst_mac: ROUTER_MAC,
        src_ip: Ipv4Addr::new(172, 16, 1, 1),
        dst_ip: dst,
        src_port: 49152,
        dscp,
        ecn: Ecn::Ect0,
        ttl,
    }
    .udp(4791, &vec![0; payload])
}

/// The ECMP route of the T0 configuration (172.16.0.0/16 over 10.0.0.1 on Ethernet0 and 10.0.0.3 on
/// Ethernet4, in that order).
const ECMP_DST: Ipv4Addr = Ipv4Addr::new(172, 16, 5, 5);
const UPLINK0_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const UPLINK3_MAC: EthernetAddress = EthernetAddress([0x02, 0xaa, 0, 0, 0, 3]);

/// A RoCEv2 packet from the VLAN host to the ECMP route, from UDP port `src_port`.
fn ecmp_flow(src_port: u16) -> Vec<u8> {
    Ipv4Flow {
        src_mac: HOST_MAC,
        dst_mac: ROUTER_MAC,
        src_ip: HOST_IP,
        dst_ip: ECMP_DST,
        src_port,
        dscp: 3,
        ecn: Ecn::Ect0,
        ttl: 64,
    }
    .udp(4791, &[0; 100])
}

/// The group member (0: 10.0.0.1, 1: 10.0.0.3) of `ecmp_flow(src_port)` with `seed`, by the hash's
/// definition (`FlowKey::hash` over the 5-tuple, modulo the live members), not by the switch.
fn member_by_hash(src_port: u16, seed: u32, members: u64) -> u64 {
    let key = crate::model::forwarding::FlowKey {
        src: IpAddr::V4(HOST_IP),
        dst: IpAddr::V4(ECMP_DST),
        protocol: 17,
        src_port,
        dst_port: 4791,
    };
    key.hash(seed) % members
}

/// Where a frame left: (port, destination MAC, queue).
fn left(out: &[(PortId, Transmit)]) -> Vec<(PortId, EthernetAddress, Option<u8>)> {
    out.iter().map(|(p, t)| (*p, EthernetAddress(t.frame[..6].try_into().unwrap()), t.queue)).collect()
}

#[test]
fn flow_entries_follow_moves_mac_changes_flushes_links_and_configurations() {
    let db = t0_db();
    let mut twin = Twin::new(&db);
    let (e8, e12) = (twin.port("Ethernet8"), twin.port("Ethernet12"));
    twin.frame("Ethernet8", arp_request(HOST_MAC, HOST_IP, Ipv4Addr::new(192, 168, 0, 1)), 0);
    let data = || routed(UPLINK_MAC, HOST_IP, 3, 64, 100);

    // The first frame fills the entry, the next ones use it.
    assert_eq!(left(&twin.frame("Ethernet0", data(), 10_000)), [(e8, HOST_MAC, Some(3))]);
    assert_eq!(left(&twin.frame("Ethernet0", data(), 20_000)), [(e8, HOST_MAC, Some(3))]);
    assert_eq!(twin.hits(), 2);

    // The host moves to Ethernet12 (its next frame comes from there).
    let moved =
        build::ethernet(HOST_MAC, EthernetAddress::BROADCAST, None, EtherType::Unknown(0x88b5), &[0; 46]);
    twin.frame("Ethernet12", moved, 30_000);
    assert_eq!(left(&twin.frame("Ethernet0", data(), 40_000)), [(e12, HOST_MAC, Some(3))]);

    // Its address moves to another MAC.
    let new_mac = EthernetAddress([0x02, 0xbb, 0, 0, 0, 9]);
    twin.frame("Ethernet12", arp_request(new_mac, HOST_IP, Ipv4Addr::new(192, 168, 0, 1)), 50_000);
    assert_eq!(left(&twin.frame("Ethernet0", data(), 60_000)), [(e12, new_mac, Some(3))]);
    assert_eq!(left(&twin.frame("Ethernet0", data(), 61_000)), [(e12, new_mac, Some(3))]);

    // The FDB flushed: the lossless packet's neighbour has no port, it is dropped (never flooded).
    twin.both(70_000, |sw| {
        sw.flush_fdb(None, None);
    });
    assert_eq!(left(&twin.frame("Ethernet0", data(), 71_000)), []);
    assert_eq!(twin.drops("Ethernet0", DropReason::FdbMissLossless), 1);
    twin.frame("Ethernet12", arp_request(new_mac, HOST_IP, Ipv4Addr::new(192, 168, 0, 1)), 72_000);
    assert_eq!(left(&twin.frame("Ethernet0", data(), 73_000)), [(e12, new_mac, Some(3))]);
    let hits = twin.hits();
    assert_eq!(left(&twin.frame("Ethernet0", data(), 74_000)), [(e12, new_mac, Some(3))]);
    assert_eq!(twin.hits(), hits + 1);

    // The egress link goes down, then comes back.
    twin.both(80_000, |sw| sw.set_port_oper(e12, false, Instant::from_ns(80_000)));
    assert_eq!(left(&twin.frame("Ethernet0", data(), 81_000)), []);
    assert_eq!(twin.drops("Ethernet0", DropReason::EgressPortDown), 1);
    twin.both(82_000, |sw| sw.set_port_oper(e12, true, Instant::from_ns(82_000)));
    assert_eq!(left(&twin.frame("Ethernet0", data(), 83_000)), [(e12, new_mac, Some(3))]);

    // A new DSCP map: DSCP 3 is now TC 1 (queue 1, PG 0).
    let mut remapped = db.clone();
    remapped.set("DSCP_TO_TC_MAP", "AZURE", "3", "1");
    twin.both(90_000, |sw| {
        sw.apply(&remapped, Instant::from_ns(90_000)).unwrap();
    });
    assert_eq!(left(&twin.frame("Ethernet0", data(), 91_000)), [(e12, new_mac, Some(1))]);
    assert_eq!(left(&twin.frame("Ethernet0", data(), 92_000)), [(e12, new_mac, Some(1))]);

    // A smaller MTU on the egress port: the 1100-byte packet no longer fits.
    let mut small = remapped.clone();
    small.set("PORT", "Ethernet12", "mtu", "1000");
    twin.both(100_000, |sw| {
        sw.apply(&small, Instant::from_ns(100_000)).unwrap();
    });
    let big = || routed(UPLINK_MAC, HOST_IP, 3, 64, 1100);
    assert_eq!(left(&twin.frame("Ethernet0", big(), 101_000)), []);
    assert_eq!(twin.drops("Ethernet0", DropReason::ExceedsL3Mtu), 1);
    assert_eq!(left(&twin.frame("Ethernet0", data(), 102_000)).len(), 1);

    // Per-packet checks on a frame whose flow has an entry: TTL, checksum, MACs.
    assert_eq!(left(&twin.frame("Ethernet0", routed(UPLINK_MAC, HOST_IP, 3, 1, 100), 110_000)), []);
    assert_eq!(twin.drops("Ethernet0", DropReason::Ttl), 1);
    let mut bad_sum = data();
    bad_sum[24] ^= 0x40;
    assert_eq!(left(&twin.frame("Ethernet0", bad_sum, 111_000)), []);
    let mut multicast_src = data();
    multicast_src[6] |= 1;
    assert_eq!(left(&twin.frame("Ethernet0", multicast_src, 112_000)), []);
    let mut other_dst = data();
    other_dst[5] ^= 0x10;
    assert_eq!(left(&twin.frame("Ethernet0", other_dst, 113_000)), []);
    assert_eq!(twin.drops("Ethernet0", DropReason::SmacMulticast), 1);
}

#[test]
fn a_vlan_ingress_refreshes_learning_and_learns_moves_the_full_way() {
    let mut twin = Twin::new(&t0_db());
    let (e4, e8, e12) = (twin.port("Ethernet4"), twin.port("Ethernet8"), twin.port("Ethernet12"));
    let up = || routed(HOST_MAC, UPLINK1_IP, 3, 64, 100);
    let uplink1_mac = EthernetAddress([0x02, 0xaa, 0, 0, 0, 3]);
    // The first frame learns the host on Ethernet12, the next refresh its entry by the fast path.
    for (i, t) in [0u64, 1_000_000, 2_000_000].into_iter().enumerate() {
        assert_eq!(left(&twin.frame("Ethernet12", up(), t)), [(e4, uplink1_mac, Some(3))]);
        assert_eq!(twin.hits(), i as u64);
        assert_eq!(twin.fast.fdb().lookup(1000, HOST_MAC).unwrap().last_seen, Instant::from_ns(t));
    }
    // The host moves to Ethernet8 and back: both moves are learnt (with their events).
    twin.frame("Ethernet8", up(), 3_000_000);
    assert_eq!(twin.fast.fdb().lookup(1000, HOST_MAC).unwrap().port, e8);
    twin.frame("Ethernet12", up(), 4_000_000);
    assert_eq!(twin.fast.fdb().lookup(1000, HOST_MAC).unwrap().port, e12);
    // Aging after a stretch of fast-path frames removes what the full way would.
    twin.both(1_000_000_000_000, |sw| sw.handle_timeout(Instant::from_ns(1_000_000_000_000)));
    assert!(twin.fast.fdb().lookup(1000, HOST_MAC).is_none());
}

/// One step of the random sequences below.
#[derive(Debug, Clone)]
enum Step {
    Frame { port: usize, dst: usize, dscp: u8, ttl: u8, payload: usize, flip: Option<(usize, u8)> },
    Announce { port: usize, mac: u8 },
    Flush,
    Link { port: usize, up: bool },
    Timeout { secs: u64 },
}

const PORTS: [&str; 4] = ["Ethernet0", "Ethernet4", "Ethernet8", "Ethernet12"];
/// A VLAN host, an uplink neighbour, the ECMP route, the switch itself, an unresolved host, a route miss.
const DESTINATIONS: [Ipv4Addr; 6] = [
    HOST_IP,
    UPLINK1_IP,
    Ipv4Addr::new(172, 16, 5, 5),
    Ipv4Addr::new(192, 168, 0, 1),
    Ipv4Addr::new(192, 168, 0, 77),
    Ipv4Addr::new(8, 8, 8, 8),
];

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => (0..4usize, 0..6usize, prop::sample::select(vec![3u8, 4, 0, 48]), prop::sample::select(vec![64u8, 2, 1]),
              prop::sample::select(vec![20usize, 100, 1200]), prop::option::weighted(0.3, (0..40usize, any::<u8>())))
            .prop_map(|(port, dst, dscp, ttl, payload, flip)| Step::Frame { port, dst, dscp, ttl, payload, flip }),
        2 => (2..4usize, 0..2u8).prop_map(|(port, mac)| Step::Announce { port, mac }),
        1 => Just(Step::Flush),
        1 => (0..4usize, any::<bool>()).prop_map(|(port, up)| Step::Link { port, up }),
        1 => (0..700u64).prop_map(|secs| Step::Timeout { secs }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    /// Random frames (some of them damaged) and changes between them: the twins never disagree.
    #[test]
    fn the_fast_path_agrees_with_the_full_way(steps in prop::collection::vec(step(), 1..40)) {
        let mut twin = Twin::new(&t0_db());
        let mut now = 0u64;
        for step in steps {
            now += 10_000;
            match step {
                Step::Frame { port, dst, dscp, ttl, payload, flip } => {
                    let src = if port >= 2 { HOST_MAC } else { UPLINK_MAC };
                    let mut frame = routed(src, DESTINATIONS[dst], dscp, ttl, payload);
                    if let Some((at, value)) = flip {
                        frame[at] = value;
                    }
                    twin.frame(PORTS[port], frame, now);
                }
                Step::Announce { port, mac } => {
                    let mac = EthernetAddress([0x02, 0xbb, 0, 0, 0, 2 + mac]);
                    twin.frame(PORTS[port], arp_request(mac, HOST_IP, Ipv4Addr::new(192, 168, 0, 1)), now);
                }
                Step::Flush => {
                    twin.both(now, |sw| {
                        sw.flush_fdb(None, None);
                    });
                }
                Step::Link { port, up } => {
                    let p = twin.port(PORTS[port]);
                    twin.both(now, |sw| sw.set_port_oper(p, up, Instant::from_ns(now)));
                }
                Step::Timeout { secs } => {
                    now += secs * 1_000_000_000;
                    twin.both(now, |sw| sw.handle_timeout(Instant::from_ns(now)));
                }
            }
        }
    }

    /// The header checksum the fast path verifies is the one `wire` verifies.
    #[test]
    fn checksum_ok_is_ipv4_checksum_verification(header in prop::array::uniform20(any::<u8>()), fix in any::<bool>()) {
        let mut frame = routed(UPLINK_MAC, HOST_IP, 3, 64, 20);
        frame[14..34].copy_from_slice(&header);
        frame[14] = 0x45;
        if fix {
            frame[24..26].fill(0);
            let sum = crate::wire::checksum::checksum(&frame[14..34]);
            frame[24..26].copy_from_slice(&sum.to_be_bytes());
        }
        prop_assert_eq!(checksum_ok(frame[14..34].try_into().unwrap()), Ipv4Packet::new_unchecked(&frame[14..]).verify_checksum());
    }
}

#[test]
fn a_flow_slot_stays_small() {
    // Four to a cache line, so that a probe reads one line: a guard against the slot growing.
    assert_eq!(std::mem::size_of::<Slot>(), 16);
    assert_eq!(std::mem::align_of::<Slot>(), 16);
}

/// A RoCEv2 packet from the VLAN host to `dst` with `dscp`.
fn from_host(dst: Ipv4Addr, dscp: u8) -> Vec<u8> {
    Ipv4Flow {
        src_mac: HOST_MAC,
        dst_mac: ROUTER_MAC,
        src_ip: HOST_IP,
        dst_ip: dst,
        src_port: 49152,
        dscp,
        ecn: Ecn::Ect0,
        ttl: 64,
    }
    .udp(4791, &[0; 100])
}

#[test]
fn the_index_grows_with_the_flows_and_starts_again_when_full() {
    let mut twin = Twin::new(&t0_db());
    let (e0, e4) = (twin.port("Ethernet0"), twin.port("Ethernet4"));
    // Both uplinks resolved (10.0.0.3 is static); the host's first frame is learnt the full way.
    twin.frame("Ethernet0", arp_request(UPLINK_MAC, UPLINK0_IP, Ipv4Addr::new(10, 0, 0, 0)), 1_000);
    twin.frame("Ethernet8", from_host(HOST_IP, 3), 2_000);
    assert!(twin.fast.flows.slots.is_empty(), "nothing routed yet");
    // Distinct destinations of the ECMP route, then one more DSCP (another key, the same destination).
    let dst = |i: usize| Ipv4Addr::new(172, 16, (i / 256) as u8, (i % 256) as u8);
    let mut t = 10_000;
    let mut send = |twin: &mut Twin, frame: Vec<u8>| {
        t += 1_000;
        let out = left(&twin.frame("Ethernet8", frame, t));
        assert!(matches!(out[..], [(p, _, Some(_))] if p == e0 || p == e4), "{out:?}");
    };
    for i in 0..MAX_SLOTS / 2 {
        let hits = twin.hits();
        send(&mut twin, from_host(dst(i), 3));
        assert_eq!(twin.hits(), hits + 1, "a new entry forwards its first packet");
        let k = i + 1;
        // Sized by the entries it holds: never more than half full, never more than twice that.
        assert_eq!(twin.fast.flows.slots.len(), (2 * k).next_power_of_two().max(MIN_SLOTS), "{k} entries");
        assert_eq!(twin.fast.flows.live, k);
    }
    // Every entry of one port and DSCP shares one group, of two member actions.
    assert_eq!((twin.fast.flows.groups.len(), twin.fast.flows.members.len()), (1, 2));
    assert_eq!(twin.fast.flows.actions.len(), 2);
    let live = |twin: &Twin| twin.fast.flows.live;
    send(&mut twin, from_host(dst(0), 3));
    assert_eq!(live(&twin), MAX_SLOTS / 2, "the first destination is still there");
    // Half full at its largest: the next new entry starts the table again, alone in it.
    send(&mut twin, from_host(dst(0), 5));
    assert_eq!((twin.fast.flows.slots.len(), live(&twin)), (MAX_SLOTS, 1));
    // So the first destination is computed again, then found.
    send(&mut twin, from_host(dst(0), 3));
    send(&mut twin, from_host(dst(0), 3));
    assert_eq!(live(&twin), 2);
}

#[test]
fn ecmp_entries_choose_the_full_ways_member_as_links_and_neighbours_change() {
    let db = t0_db();
    let mut twin = Twin::new(&db);
    let (e0, e4) = (twin.port("Ethernet0"), twin.port("Ethernet4"));
    let uplinks = [(e0, UPLINK_MAC), (e4, UPLINK3_MAC)];
    // Frames 10 µs apart, from the time of the last change on.
    let now = std::cell::Cell::new(0);
    let send = |twin: &mut Twin, src_port: u16| {
        now.set(now.get() + 10_000);
        left(&twin.frame("Ethernet8", ecmp_flow(src_port), now.get()))
    };
    // The host's first frame is learnt the full way; 10.0.0.1 is not resolved yet.
    let ports: Vec<u16> = (49152..49152 + 24).collect();
    send(&mut twin, 1);
    let (hits, unresolved) = (twin.hits(), twin.drops("Ethernet8", DropReason::UnresolvedNextHop));
    let mut served = 0;
    for &sp in &ports {
        let out = send(&mut twin, sp);
        if member_by_hash(sp, 0, 2) == 1 {
            assert_eq!(out, [(e4, UPLINK3_MAC, Some(3))]);
            served += 1;
        } else {
            // An unresolved member: the full way drops and sends ARP requests out of Ethernet0.
            assert!(out.iter().all(|&(p, mac, _)| p == e0 && mac == EthernetAddress::BROADCAST));
        }
    }
    assert!(served > 0 && served < ports.len() as u64, "the flows spread over both members");
    assert_eq!(twin.hits(), hits + served);
    assert_eq!(
        twin.drops("Ethernet8", DropReason::UnresolvedNextHop),
        unresolved + ports.len() as u64 - served
    );

    // 10.0.0.1 answers: every flow now takes its member by the fast path.
    twin.frame("Ethernet0", arp_request(UPLINK_MAC, UPLINK0_IP, Ipv4Addr::new(10, 0, 0, 0)), 1_000_000);
    now.set(1_000_000);
    let hits = twin.hits();
    let spread = |twin: &mut Twin| ports.iter().map(|&sp| send(twin, sp)).collect::<Vec<_>>();
    let all_up = spread(&mut twin);
    for (&sp, out) in ports.iter().zip(&all_up) {
        let (p, mac) = uplinks[member_by_hash(sp, 0, 2) as usize];
        assert_eq!(out, &[(p, mac, Some(3))], "flow from port {sp}");
    }
    assert_eq!(twin.hits(), hits + ports.len() as u64);

    // Ethernet0 goes down: its flows rehash over the member left (the fast path still serves them all).
    now.set(2_000_000);
    twin.both(2_000_000, |sw| sw.set_port_oper(e0, false, Instant::from_ns(2_000_000)));
    let hits = twin.hits();
    for out in spread(&mut twin) {
        assert_eq!(out, [(e4, UPLINK3_MAC, Some(3))]);
    }
    assert_eq!(twin.hits(), hits + ports.len() as u64);
    // It comes back: every flow returns to its member.
    now.set(3_000_000);
    twin.both(3_000_000, |sw| sw.set_port_oper(e0, true, Instant::from_ns(3_000_000)));
    assert_eq!(spread(&mut twin), all_up);
    // Both down: the full way's choice among all members meets a down port and drops.
    now.set(4_000_000);
    twin.both(4_000_000, |sw| {
        sw.set_port_oper(e0, false, Instant::from_ns(4_000_000));
        sw.set_port_oper(e4, false, Instant::from_ns(4_000_000));
    });
    let dropped = twin.drops("Ethernet8", DropReason::EgressPortDown);
    assert!(spread(&mut twin).iter().all(Vec::is_empty));
    assert_eq!(twin.drops("Ethernet8", DropReason::EgressPortDown), dropped + ports.len() as u64);
    now.set(5_000_000);
    twin.both(5_000_000, |sw| {
        sw.set_port_oper(e0, true, Instant::from_ns(5_000_000));
        sw.set_port_oper(e4, true, Instant::from_ns(5_000_000));
    });

    // Another hash seed: the flows follow the new hash.
    let mut reseeded = db.clone();
    reseeded.set("SWITCH", "switch", "ecmp_hash_seed", "12345");
    now.set(6_000_000);
    twin.both(6_000_000, |sw| {
        sw.apply(&reseeded, Instant::from_ns(6_000_000)).unwrap();
    });
    let reseeded_out = spread(&mut twin);
    for (&sp, out) in ports.iter().zip(&reseeded_out) {
        let (p, mac) = uplinks[member_by_hash(sp, 12345, 2) as usize];
        assert_eq!(out, &[(p, mac, Some(3))], "flow from port {sp} with seed 12345");
    }
    assert_ne!(reseeded_out, all_up, "a new seed moves some of 24 flows");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    /// ECMP packets of every shape the hash reads differently (other protocols, fragments, UDP headers
    /// that do not parse, short BTHs, other ports), arriving while the members' links change: the twins
    /// never disagree.
    #[test]
    fn ecmp_packets_of_any_shape_agree_with_the_full_way(
        steps in prop::collection::vec((0..24u16, prop::sample::select(vec![4791u16, 1000]),
            prop::sample::select(vec![0usize, 4, 12, 100]), prop::option::weighted(0.4, (20..=39usize, any::<u8>())),
            prop::option::weighted(0.15, (0..2usize, any::<bool>()))), 1..40)
    ) {
        let mut twin = Twin::new(&t0_db());
        twin.frame("Ethernet0", arp_request(UPLINK_MAC, UPLINK0_IP, Ipv4Addr::new(10, 0, 0, 0)), 0);
        let mut now = 0u64;
        for (src_port, dst_port, payload, reshape, link) in steps {
            now += 10_000;
            if let Some((port, up)) = link {
                let p = twin.port(["Ethernet0", "Ethernet4"][port]);
                twin.both(now, |sw| sw.set_port_oper(p, up, Instant::from_ns(now)));
            }
            let mut frame = Ipv4Flow { src_port, ..Ipv4Flow {
                src_mac: HOST_MAC, dst_mac: ROUTER_MAC, src_ip: HOST_IP, dst_ip: ECMP_DST,
                src_port: 0, dscp: 3, ecn: Ecn::Ect0, ttl: 64 } }.udp(dst_port, &vec![0; payload]);
            if let Some((at, value)) = reshape {
                // A header byte changed (protocol, fragment bits, UDP ports or length), the IPv4
                // checksum made right again, so that the packet still reaches the route.
                frame[at] = value;
                if (14..34).contains(&at) {
                    frame[14] = 0x45;
                    frame[24..26].fill(0);
                    let sum = crate::wire::checksum::checksum(&frame[14..34]);
                    frame[24..26].copy_from_slice(&sum.to_be_bytes());
                }
            }
            twin.frame("Ethernet8", frame, now);
        }
    }

    /// The fixed-offset read of what the ECMP hash takes is `wire::transit`'s.
    #[test]
    fn hash_fields_are_what_transit_reads(protocol in prop::sample::select(vec![17u8, 6]), frag in 0..4u16,
        dst_port in prop::sample::select(vec![4791u16, 1000]), payload in 0..30usize,
        udp_len in prop::option::of(0..60u16), cut in 0..8usize) {
        let mut frame = routed(UPLINK_MAC, HOST_IP, 3, 64, payload);
        frame[14 + 9] = protocol;
        let flags = [0u16, 0x2000, 0x0001, 0x4000][frag as usize];
        frame[20..22].copy_from_slice(&flags.to_be_bytes());
        if let Some(len) = udp_len {
            frame[38..40].copy_from_slice(&len.to_be_bytes());
        }
        frame[36..38].copy_from_slice(&dst_port.to_be_bytes());
        // A shorter IPv4 total length (trailing bytes as Ethernet padding).
        let total = u16::from_be_bytes([frame[16], frame[17]]).saturating_sub(cut as u16).max(20);
        frame[16..18].copy_from_slice(&total.to_be_bytes());
        frame[24..26].fill(0);
        let sum = crate::wire::checksum::checksum(&frame[14..34]);
        frame[24..26].copy_from_slice(&sum.to_be_bytes());
        let ip = crate::wire::transit(&frame).unwrap().ip.unwrap();
        let IpAddr::V4(src) = ip.src_addr else { unreachable!() };
        prop_assert!(fixed_ipv4(&frame).is_some());
        prop_assert_eq!(hash_fields(&frame), (u32::from(src), u8::from(ip.protocol), ip.udp_ports.unwrap_or((0, 0))));
    }
}
