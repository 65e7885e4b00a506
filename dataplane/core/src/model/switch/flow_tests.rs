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
    // 4096 of them per switch, probed at random: a guard against the entry growing.
    assert!(std::mem::size_of::<FlowSlot>() <= 80, "{} bytes", std::mem::size_of::<FlowSlot>());
}
