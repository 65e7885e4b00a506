//! Scenario tests of the switch core, driven with explicit timestamps: routing (IPv4, IPv6, ECMP), VLAN
//! bridging (learning, flooding, aging), ARP, drop-not-flood, and sonic-mgmt's DscpMappingPB.

mod common;

use common::*;
use lossless_core::model::config::ConfigDb;
use lossless_core::model::{DropReason, Event, PortId, Switch};
use lossless_core::sim::{Device, Sim};
use lossless_core::time::Instant;
use lossless_core::wire::build::{self, Dot1q};
use lossless_core::wire::ip::{Ecn, Protocol};
use lossless_core::wire::{self, ArpOperation, EtherType, Ipv4Packet, Ipv6Repr, L3};
use std::collections::BTreeMap;
use std::net::{Ipv4Addr, Ipv6Addr};

const SEC: u64 = 1_000_000_000;
const HOST2_IP: Ipv4Addr = Ipv4Addr::new(192, 168, 0, 2);
const GATEWAY: Ipv4Addr = Ipv4Addr::new(192, 168, 0, 1);
const UPLINK0_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);

/// Host 2 on Ethernet8 ARPs for its gateway: the switch learns its MAC (FDB) and IP (neighbour).
fn host2_announces(sw: &mut Switch, now: u64) {
    sw.handle_frame(port(sw, "Ethernet8"), arp_request(HOST2_MAC, HOST2_IP, GATEWAY), Instant::from_ns(now));
    drain_all(sw, Instant::from_ns(now));
}

/// Uplink 0 ARPs for the switch's 10.0.0.0 (the switch learns 10.0.0.1).
fn uplink0_announces(sw: &mut Switch, now: u64) {
    sw.handle_frame(
        port(sw, "Ethernet0"),
        arp_request(UPLINK0_MAC, UPLINK0_IP, Ipv4Addr::new(10, 0, 0, 0)),
        Instant::from_ns(now),
    );
    drain_all(sw, Instant::from_ns(now));
}

#[test]
fn routed_ipv4_uplink_to_vlan_host_rewrites_ttl_macs_and_checksum() {
    let mut sw = t0_switch();
    host2_announces(&mut sw, 0);
    let frame = routed_udp(UPLINK0_MAC, Ipv4Addr::new(172, 16, 1, 1), HOST2_IP, 1234, 5678, 8);
    sw.handle_frame(port(&sw, "Ethernet0"), frame, Instant::from_ns(SEC));
    let out = drain_all(&mut sw, Instant::from_ns(SEC));
    assert_eq!(out.len(), 1, "exactly one copy: {out:?}");
    let (p, tx) = &out[0];
    assert_eq!(*p, port(&sw, "Ethernet8"));
    let d = wire::decode(&tx.frame).unwrap();
    assert_eq!(d.ethernet.src_addr, ROUTER_MAC);
    assert_eq!(d.ethernet.dst_addr, HOST2_MAC);
    assert!(d.vlan.is_none(), "untagged member");
    let L3::Ipv4 { header, .. } = d.l3 else { panic!("not IPv4") };
    assert_eq!(header.ttl, 63);
    assert!(Ipv4Packet::new_checked(&tx.frame[14..]).unwrap().verify_checksum());
    assert_eq!(tx.queue, Some(0), "DSCP 8 -> TC 0 -> queue 0");
    let c = sw.port_counters(port(&sw, "Ethernet8")).unwrap();
    assert_eq!(
        (c.tx_ok, c.queues[0].packets, c.queues[7].packets),
        (2, 1, 1),
        "ARP reply on the control queue"
    );
}

#[test]
fn routed_to_tagged_member_carries_the_vlan_tag() {
    let mut sw = t0_switch();
    let host4_ip = Ipv4Addr::new(192, 168, 0, 4);
    let tagged = build::ethernet(
        HOST4_MAC,
        wire::EthernetAddress::BROADCAST,
        Some(Dot1q { pcp: 0, dei: false, vid: 1000 }),
        EtherType::Arp,
        &arp_request(HOST4_MAC, host4_ip, GATEWAY)[14..42],
    );
    sw.handle_frame(port(&sw, "Ethernet16"), tagged, Instant::from_ns(0));
    drain_all(&mut sw, Instant::ZERO);
    assert!(sw.neighbors().lookup(host4_ip.into()).is_some());
    sw.handle_frame(
        port(&sw, "Ethernet0"),
        routed_udp(UPLINK0_MAC, Ipv4Addr::new(172, 16, 0, 9), host4_ip, 1, 2, 3),
        Instant::from_ns(1),
    );
    let out = drain_all(&mut sw, Instant::from_ns(1));
    assert_eq!(out.len(), 1);
    let d = wire::decode(&out[0].1.frame).unwrap();
    let tag = d.vlan.expect("tagged on a tagged member");
    assert_eq!((tag.vid, tag.pcp), (1000, 3), "PCP carries the TC of a frame that arrived untagged");
    assert_eq!(out[0].1.queue, Some(3));
}

#[test]
fn routed_ipv6_between_uplinks_decrements_hop_limit() {
    let mut sw = t0_switch();
    let src: Ipv6Addr = "fc00::3".parse().unwrap();
    let dst: Ipv6Addr = "2001:db8::42".parse().unwrap();
    let datagram = build::udp_v6(src, dst, 4000, 4791, &[0; 32]);
    let ip = Ipv6Repr {
        src_addr: src,
        dst_addr: dst,
        next_header: Protocol::Udp,
        payload_len: 0,
        hop_limit: 2,
        dscp: 26,
        ecn: Ecn::Ect0,
        flow_label: 7,
    };
    let frame = build::ethernet(UPLINK1_MAC, ROUTER_MAC, None, EtherType::Ipv6, &build::ipv6(&ip, &datagram));
    sw.handle_frame(port(&sw, "Ethernet4"), frame.clone(), Instant::from_ns(0));
    let out = drain_all(&mut sw, Instant::ZERO);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].0, port(&sw, "Ethernet0"));
    let d = wire::decode(&out[0].1.frame).unwrap();
    assert_eq!((d.ethernet.src_addr, d.ethernet.dst_addr), (ROUTER_MAC, UPLINK0_MAC));
    let L3::Ipv6 { header, .. } = d.l3 else { panic!() };
    assert_eq!(header.hop_limit, 1);
    assert_eq!(&out[0].1.frame[14 + 8..], &frame[14 + 8..], "nothing but the hop limit changed in IPv6");

    // Hop limit 1 expires here.
    let ip1 = Ipv6Repr { hop_limit: 1, ..ip };
    let frame =
        build::ethernet(UPLINK1_MAC, ROUTER_MAC, None, EtherType::Ipv6, &build::ipv6(&ip1, &datagram));
    sw.handle_frame(port(&sw, "Ethernet4"), frame, Instant::from_ns(1));
    assert!(drain_all(&mut sw, Instant::from_ns(1)).is_empty());
    assert_eq!(sw.port_counters(port(&sw, "Ethernet4")).unwrap().drop_reasons[&DropReason::Ttl], 1);
}

#[test]
fn ttl_expiry_and_route_miss_are_counted_drops() {
    let mut sw = t0_switch();
    host2_announces(&mut sw, 0);
    let e0 = port(&sw, "Ethernet0");
    let mut frame = routed_udp(UPLINK0_MAC, Ipv4Addr::new(172, 16, 1, 1), HOST2_IP, 1, 2, 8);
    {
        let mut ip = Ipv4Packet::new_unchecked(&mut frame[14..]);
        ip.set_ttl(1);
        ip.fill_checksum();
    }
    sw.handle_frame(e0, frame, Instant::from_ns(1));
    sw.handle_frame(
        e0,
        routed_udp(UPLINK0_MAC, UPLINK0_IP, Ipv4Addr::new(8, 8, 8, 8), 1, 2, 8),
        Instant::from_ns(2),
    );
    assert!(drain_all(&mut sw, Instant::from_ns(2)).is_empty());
    let c = sw.port_counters(e0).unwrap();
    assert_eq!(c.rx_drp, 2);
    assert_eq!(c.drop_reasons[&DropReason::Ttl], 1);
    assert_eq!(c.drop_reasons[&DropReason::Lpm4Miss], 1);
}

#[test]
fn unresolved_next_hop_is_dropped_and_arped_for_once_per_second() {
    let mut sw = t0_switch();
    let (e0, e4) = (port(&sw, "Ethernet0"), port(&sw, "Ethernet4"));
    // 10.0.0.3 is a static neighbour, 10.0.0.1 is not known yet: flows hashed to it are dropped.
    let burst = |sw: &mut Switch, now: u64| {
        for src_port in 0..50 {
            let f = routed_udp(
                UPLINK1_MAC,
                Ipv4Addr::new(10, 0, 0, 3),
                Ipv4Addr::new(172, 16, 0, 1),
                src_port,
                7,
                8,
            );
            sw.handle_frame(e4, f, Instant::from_ns(now));
        }
        drain(sw, e0, Instant::from_ns(now))
    };
    let first = burst(&mut sw, 0);
    let unresolved = sw.port_counters(e4).unwrap().drop_reasons[&DropReason::UnresolvedNextHop];
    assert!(unresolved > 0 && unresolved < 50, "{unresolved} of 50 flows hash to the unresolved next hop");
    let arps: Vec<_> =
        first.iter().filter(|t| matches!(wire::decode(&t.frame).unwrap().l3, L3::Arp(_))).collect();
    assert_eq!(arps.len(), 1, "one ARP request, however many packets wait");
    let L3::Arp(req) = wire::decode(&arps[0].frame).unwrap().l3 else { unreachable!() };
    assert_eq!((req.operation, req.target_protocol_addr), (ArpOperation::Request, UPLINK0_IP));
    assert_eq!(req.source_protocol_addr, Ipv4Addr::new(10, 0, 0, 0));
    assert!(
        burst(&mut sw, SEC / 2).iter().all(|t| !matches!(wire::decode(&t.frame).unwrap().l3, L3::Arp(_)))
    );
    assert_eq!(
        burst(&mut sw, SEC)
            .iter()
            .filter(|t| matches!(wire::decode(&t.frame).unwrap().l3, L3::Arp(_)))
            .count(),
        1
    );

    // The reply resolves it: every flow is forwarded from then on.
    let reply =
        arp(ArpOperation::Reply, UPLINK0_MAC, UPLINK0_IP, ROUTER_MAC, ROUTER_MAC, Ipv4Addr::new(10, 0, 0, 0));
    sw.handle_frame(e0, reply, Instant::from_ns(SEC + 1));
    let drops = sw.port_counters(e4).unwrap().rx_drp;
    burst(&mut sw, SEC + 2);
    drain(&mut sw, e4, Instant::from_ns(SEC + 2));
    assert_eq!(sw.port_counters(e4).unwrap().rx_drp, drops);
}

#[test]
fn ecmp_spreads_flows_and_keeps_each_flow_on_one_path() {
    let mut sw = t0_switch();
    uplink0_announces(&mut sw, 0);
    let (e0, e4) = (port(&sw, "Ethernet0"), port(&sw, "Ethernet4"));
    let h8 = port(&sw, "Ethernet8");
    sw.handle_frame(h8, arp_request(HOST2_MAC, HOST2_IP, GATEWAY), Instant::from_ns(0));
    drain_all(&mut sw, Instant::ZERO);
    let mut per_path = [0usize; 2];
    for flow in 0..400u16 {
        let mut path = None;
        for _ in 0..3 {
            let f = Ipv4Flow_from(HOST2_MAC, HOST2_IP, Ipv4Addr::new(172, 16, 9, 9), 10_000 + flow);
            sw.handle_frame(h8, f, Instant::from_ns(1));
            let out = drain_all(&mut sw, Instant::from_ns(1));
            assert_eq!(out.len(), 1);
            let p = out[0].0;
            assert!(p == e0 || p == e4);
            assert!(path.is_none() || path == Some(p), "flow {flow} changed path");
            path = Some(p);
        }
        per_path[usize::from(path == Some(e4))] += 1;
    }
    for n in per_path {
        assert!((120..=280).contains(&n), "400 flows split {per_path:?}");
    }
}

#[allow(non_snake_case)]
fn Ipv4Flow_from(mac: wire::EthernetAddress, src: Ipv4Addr, dst: Ipv4Addr, src_port: u16) -> Vec<u8> {
    routed_udp(mac, src, dst, src_port, 4791, 8)
}

#[test]
fn vlan_learns_floods_unknown_lossy_unicast_and_ages() {
    let mut sw = t0_switch();
    let (e8, e12, e16) = (port(&sw, "Ethernet8"), port(&sw, "Ethernet12"), port(&sw, "Ethernet16"));
    // Unknown unicast (lossy, DSCP 8) from host 2 floods to Ethernet12 (untagged) and Ethernet16 (tagged).
    sw.handle_frame(e8, l2_frame(HOST2_MAC, HOST3_MAC, None), Instant::from_ns(0));
    let out = drain_all(&mut sw, Instant::ZERO);
    let ports: Vec<_> = out.iter().map(|(p, _)| *p).collect();
    assert_eq!(ports, vec![e12, e16]);
    assert!(wire::decode(&out[0].1.frame).unwrap().vlan.is_none());
    assert_eq!(wire::decode(&out[1].1.frame).unwrap().vlan.unwrap().vid, 1000);
    assert_eq!(sw.fdb().lookup(1000, HOST2_MAC).unwrap().port, e8);

    // Host 3 answers from Ethernet12, tagged frames from Ethernet16 are accepted; now unicast is direct.
    sw.handle_frame(e12, l2_frame(HOST3_MAC, HOST2_MAC, None), Instant::from_ns(SEC));
    assert_eq!(
        drain_all(&mut sw, Instant::from_ns(SEC)).iter().map(|(p, _)| *p).collect::<Vec<_>>(),
        vec![e8]
    );
    sw.handle_frame(e8, l2_frame(HOST2_MAC, HOST3_MAC, None), Instant::from_ns(2 * SEC));
    assert_eq!(
        drain_all(&mut sw, Instant::from_ns(2 * SEC)).iter().map(|(p, _)| *p).collect::<Vec<_>>(),
        vec![e12]
    );
    let tag = Dot1q { pcp: 1, dei: false, vid: 1000 };
    sw.handle_frame(e16, l2_frame(HOST4_MAC, HOST2_MAC, Some(tag)), Instant::from_ns(2 * SEC));
    let out = drain_all(&mut sw, Instant::from_ns(2 * SEC));
    assert_eq!(out.len(), 1);
    assert!(wire::decode(&out[0].1.frame).unwrap().vlan.is_none(), "untagged out of an untagged member");

    // A tag for a VLAN the port is not in is filtered.
    sw.handle_frame(
        e16,
        l2_frame(HOST4_MAC, HOST2_MAC, Some(Dot1q { vid: 2000, ..tag })),
        Instant::from_ns(2 * SEC),
    );
    assert_eq!(sw.port_counters(e16).unwrap().drop_reasons[&DropReason::IngressVlanFilter], 1);

    // Host 3 goes silent: after fdb_aging_time (600 s) plus at most one sweep, its entry is gone. The
    // virtual-time driver runs the switch's sweeps up to 700 s and logs each event with its time.
    let mut sim = Sim::new();
    let node = sim.add(Device::Switch(Box::new(sw)));
    sim.keep_log = true;
    let end = Instant::from_ns(700 * SEC);
    sim.run_until(end);
    let aged_at = sim.events.iter().find_map(|(at, _, e)| match e {
        Event::FdbAged { mac, .. } if *mac == HOST3_MAC => Some(at.as_ns()),
        _ => None,
    });
    let t = aged_at.expect("host 3 aged by 700 s");
    assert!(sim.switch(node).fdb().lookup(1000, HOST3_MAC).is_none(), "aged by {t}");
    assert!((601 * SEC..=676 * SEC).contains(&t), "aged at {t} ns: idle since 1 s, aging 600 s, sweep 75 s");
    let before = sim.sent.len();
    sim.inject(node.port(e8.index()), end, l2_frame(HOST2_MAC, HOST3_MAC, None));
    sim.run_until(end);
    let flooded: Vec<_> = sim.sent[before..].iter().map(|s| PortId::new(s.from.port)).collect();
    assert_eq!(flooded, vec![e12, e16], "flooded again after aging");
}

#[test]
fn arp_requests_for_switch_addresses_are_answered_and_senders_learned() {
    let mut sw = t0_switch();
    let e8 = port(&sw, "Ethernet8");
    sw.handle_frame(e8, arp_request(HOST2_MAC, HOST2_IP, GATEWAY), Instant::from_ns(0));
    let out = drain_all(&mut sw, Instant::ZERO);
    // The reply goes back to the host; the broadcast request is also flooded in the VLAN.
    let replies: Vec<_> = out.iter().filter(|(p, _)| *p == e8).collect();
    assert_eq!(replies.len(), 1);
    let d = wire::decode(&replies[0].1.frame).unwrap();
    let L3::Arp(reply) = d.l3 else { panic!() };
    assert_eq!(reply.operation, ArpOperation::Reply);
    assert_eq!((reply.source_hardware_addr, reply.source_protocol_addr), (ROUTER_MAC, GATEWAY));
    assert_eq!((reply.target_hardware_addr, reply.target_protocol_addr), (HOST2_MAC, HOST2_IP));
    assert_eq!(d.ethernet.dst_addr, HOST2_MAC);
    assert_eq!(out.len(), 3, "reply + flood to Ethernet12 and Ethernet16");
    assert_eq!(sw.neighbors().lookup(HOST2_IP.into()).unwrap().mac, HOST2_MAC);

    // Gratuitous ARP (sender == target) from host 3 is learned too.
    let host3_ip = Ipv4Addr::new(192, 168, 0, 3);
    let garp = arp(
        ArpOperation::Request,
        HOST3_MAC,
        host3_ip,
        wire::EthernetAddress::BROADCAST,
        wire::EthernetAddress([0; 6]),
        host3_ip,
    );
    sw.handle_frame(port(&sw, "Ethernet12"), garp, Instant::from_ns(1));
    assert_eq!(sw.neighbors().lookup(host3_ip.into()).unwrap().mac, HOST3_MAC);
    assert_eq!(drain_all(&mut sw, Instant::from_ns(1)).len(), 2, "a gratuitous ARP is flooded, not answered");

    // On a routed port, an ARP request for the switch is answered and never forwarded.
    sw.handle_frame(
        port(&sw, "Ethernet0"),
        arp_request(UPLINK0_MAC, UPLINK0_IP, Ipv4Addr::new(10, 0, 0, 0)),
        Instant::from_ns(2),
    );
    let out = drain_all(&mut sw, Instant::from_ns(2));
    assert!(out.iter().all(|(p, _)| *p == port(&sw, "Ethernet0")));
    assert!(sw.neighbors().lookup(UPLINK0_IP.into()).is_some());
}

#[test]
fn neighbour_outlives_fdb_entry_and_lossless_is_dropped_not_flooded() {
    // The Microsoft deadlock precondition: ARP (4 h) outlives the FDB entry (10 min).
    let mut sw = t0_switch();
    host2_announces(&mut sw, 0);
    uplink0_announces(&mut sw, 0);
    let e0 = port(&sw, "Ethernet0");
    let t = 900 * SEC;
    sw.handle_timeout(Instant::from_ns(t));
    sw.handle_timeout(Instant::from_ns(t + 100 * SEC));
    assert!(sw.fdb().lookup(1000, HOST2_MAC).is_none(), "FDB entry aged");
    assert!(sw.neighbors().lookup(HOST2_IP.into()).is_some(), "ARP entry still there");
    let now = t + 100 * SEC;
    let before = sw.port_counters(e0).unwrap().rx_drp;
    for dscp in [3u8, 4] {
        for i in 0..10 {
            sw.handle_frame(
                e0,
                routed_udp(UPLINK0_MAC, Ipv4Addr::new(172, 16, 0, 1), HOST2_IP, i, 4791, dscp),
                Instant::from_ns(now),
            );
        }
    }
    assert!(drain_all(&mut sw, Instant::from_ns(now)).is_empty(), "lossless is never flooded");
    let c = sw.port_counters(e0).unwrap();
    assert_eq!(c.rx_drp - before, 20);
    assert_eq!(c.drop_reasons[&DropReason::FdbMissLossless], 20);

    // DSCP 8 (lossy) floods by default ...
    sw.handle_frame(
        e0,
        routed_udp(UPLINK0_MAC, Ipv4Addr::new(172, 16, 0, 1), HOST2_IP, 1, 4791, 8),
        Instant::from_ns(now),
    );
    assert_eq!(drain_all(&mut sw, Instant::from_ns(now)).len(), 3, "flooded to the three VLAN members");

    // ... and is dropped with lossy_fdb_miss_action: drop.
    let mut db = t0_db();
    db.set("SWITCH", "switch", "lossy_fdb_miss_action", "drop");
    sw.apply(&db, Instant::from_ns(now)).unwrap();
    sw.handle_frame(
        e0,
        routed_udp(UPLINK0_MAC, Ipv4Addr::new(172, 16, 0, 1), HOST2_IP, 1, 4791, 8),
        Instant::from_ns(now),
    );
    assert!(drain_all(&mut sw, Instant::from_ns(now)).is_empty());
    assert_eq!(sw.port_counters(e0).unwrap().drop_reasons[&DropReason::FdbMissLossy], 1);
}

#[test]
fn lossless_unknown_unicast_in_a_vlan_is_not_flooded() {
    let mut sw = t0_switch();
    let e8 = port(&sw, "Ethernet8");
    let mut frame = l2_frame(HOST2_MAC, HOST3_MAC, None);
    {
        let mut ip = Ipv4Packet::new_unchecked(&mut frame[14..]);
        ip.rewrite_dscp(3);
    }
    sw.handle_frame(e8, frame, Instant::from_ns(0));
    assert!(drain_all(&mut sw, Instant::ZERO).is_empty());
    assert_eq!(sw.port_counters(e8).unwrap().drop_reasons[&DropReason::UnknownUnicastLossless], 1);
}

#[test]
fn pfc_and_link_local_frames_are_consumed_never_forwarded() {
    let mut sw = t0_switch();
    let e8 = port(&sw, "Ethernet8");
    let mut pfc = vec![0u8; wire::mac_control::FRAME_LEN];
    wire::MacControlRepr::Pfc(wire::PfcRepr::xoff(0b1000, 0xffff)).emit_frame(HOST2_MAC, &mut pfc);
    sw.handle_frame(e8, pfc, Instant::from_ns(0));
    let lldp = build::ethernet(
        HOST2_MAC,
        wire::EthernetAddress([0x01, 0x80, 0xc2, 0, 0, 0x0e]),
        None,
        EtherType::Unknown(0x88cc),
        &[0; 46],
    );
    sw.handle_frame(e8, lldp, Instant::from_ns(0));
    assert!(drain_all(&mut sw, Instant::ZERO).is_empty());
    assert_eq!(sw.port_counters(e8).unwrap().trapped, 2);
}

/// sonic-mgmt's test_pfc_counters.py: PFC pause (quanta > 0) and unpause (quanta 0) frames raise the PFC RX
/// counter of their priority, 802.3x PAUSE frames do not, and none of them counts as RX_OK or RX_DRP.
#[test]
fn pfc_and_pause_frames_count_as_pfc_rx_not_rx_ok_or_rx_drp() {
    let mut sw = t0_switch();
    let e8 = port(&sw, "Ethernet8");
    let frame = |repr: wire::MacControlRepr| {
        let mut f = vec![0u8; wire::mac_control::FRAME_LEN];
        repr.emit_frame(HOST2_MAC, &mut f);
        f
    };
    for quanta in [0xffff, 0] {
        for _ in 0..5 {
            sw.handle_frame(
                e8,
                frame(wire::MacControlRepr::Pfc(wire::PfcRepr::xoff(0b1_1000, quanta))),
                Instant::from_ns(0),
            );
        }
    }
    for _ in 0..3 {
        sw.handle_frame(
            e8,
            frame(wire::MacControlRepr::Pause(wire::PauseRepr { pause_time: 0xffff })),
            Instant::from_ns(0),
        );
    }
    let c = sw.port_counters(e8).unwrap();
    assert_eq!((c.rx_ok, c.rx_drp, c.rx_err), (0, 0, 0), "MAC Control frames are not RX_OK/RX_DRP");
    assert_eq!(c.rx_mac_control, 13);
    assert_eq!((c.pfc[3].rx, c.pfc[4].rx), (10, 10), "pause and unpause both count, per priority");
    assert_eq!(c.pfc.iter().map(|p| p.rx).sum::<u64>(), 20, "PAUSE frames are not PFC");
}

#[test]
fn malformed_frames_are_rx_errors_with_a_reason() {
    let mut sw = t0_switch();
    let e0 = port(&sw, "Ethernet0");
    let mut frame = routed_udp(UPLINK0_MAC, UPLINK0_IP, HOST2_IP, 1, 2, 8);
    frame[14 + 10] ^= 0xff; // corrupt the IPv4 header checksum
    sw.handle_frame(e0, frame, Instant::from_ns(0));
    sw.handle_frame(e0, vec![0u8; 5], Instant::from_ns(0));
    let c = sw.port_counters(e0).unwrap();
    assert_eq!((c.rx_err, c.rx_ok, c.rx_drp), (2, 0, 0));
    assert_eq!(c.drop_reasons.len(), 2);
    assert_eq!(sw.ledger().dropped, 2);
}

/// sonic-mgmt DscpMappingPB: one packet per DSCP 0..63 from an uplink to a server port; the destination
/// port's queue counters must match the AZURE maps exactly. The expectation is computed from the applied
/// maps, then checked against the numbers sonic-mgmt hard-codes for plain T0/T1 (q1 +58, q0/q2..q6 +1).
#[test]
fn dscp_mapping_pb_with_azure_maps() {
    let mut sw = t0_switch();
    host2_announces(&mut sw, 0);
    let (e0, e8) = (port(&sw, "Ethernet0"), port(&sw, "Ethernet8"));
    let before = sw.port_counters(e8).unwrap().queues;
    for dscp in 0..64u8 {
        sw.handle_frame(
            e0,
            routed_udp(UPLINK0_MAC, Ipv4Addr::new(172, 16, 0, 5), HOST2_IP, 1000, 2000, dscp),
            Instant::from_ns(1),
        );
    }
    let out = drain(&mut sw, e8, Instant::from_ns(1));
    assert_eq!(out.len(), 64);
    for tx in &out {
        let d = wire::decode(&tx.frame).unwrap();
        let L3::Ipv4 { header, .. } = d.l3 else { panic!() };
        assert_eq!(header.ttl, 63);
        assert_eq!(header.ecn, Ecn::Ect0, "ECN untouched");
    }
    let after = sw.port_counters(e8).unwrap().queues;
    let delta: Vec<u64> = (0..8).map(|q| after[q].packets - before[q].packets).collect();

    let qos = &sw.config().qos[e0.index()];
    let egress = &sw.config().qos[e8.index()];
    let mut expected = [0u64; 8];
    for dscp in 0..64 {
        let tc = qos.dscp_to_tc.unwrap()[dscp];
        expected[usize::from(egress.tc_to_queue[usize::from(tc)])] += 1;
    }
    assert_eq!(delta, expected.to_vec());
    assert_eq!(delta, vec![1, 58, 1, 1, 1, 1, 1, 0], "sonic-mgmt's expectation for AZURE maps");
}

/// DscpToPgMapping: PG packet counters on the source port: DSCP 3 → PG3, 4 → PG4, the other 62 → PG0.
#[test]
fn dscp_to_pg_mapping() {
    let mut sw = t0_switch();
    host2_announces(&mut sw, 0);
    let e0 = port(&sw, "Ethernet0");
    for dscp in 0..64u8 {
        sw.handle_frame(
            e0,
            routed_udp(UPLINK0_MAC, Ipv4Addr::new(172, 16, 0, 5), HOST2_IP, 1, 2, dscp),
            Instant::from_ns(1),
        );
    }
    let pgs: Vec<u64> = sw.port_counters(e0).unwrap().pgs.iter().map(|p| p.packets).collect();
    assert_eq!(pgs, vec![62, 0, 0, 1, 1, 0, 0, 0]);
}

#[test]
fn border_rules_pin_cnp_to_queue_6_and_rewrite_dscp() {
    let mut db = t0_db();
    db.set("BORDER_RULE", "Ethernet0|10", "udp_dport", "4791");
    db.set("BORDER_RULE", "Ethernet0|10", "dscp", "48");
    db.set("BORDER_RULE", "Ethernet0|10", "set_queue", "6");
    db.set("BORDER_RULE", "Ethernet0|20", "udp_dport", "4791");
    db.set("BORDER_RULE", "Ethernet0|20", "set_dscp", "3");
    db.set("BORDER_RULE", "Ethernet0|30", "dscp", "7");
    db.set("BORDER_RULE", "Ethernet0|30", "packet_action", "drop");
    let mut sw = Switch::new();
    sw.apply(&db, Instant::ZERO).unwrap();
    host2_announces(&mut sw, 0);
    let e0 = port(&sw, "Ethernet0");
    let src = Ipv4Addr::new(172, 16, 0, 5);
    sw.handle_frame(e0, routed_udp(UPLINK0_MAC, src, HOST2_IP, 1, 4791, 48), Instant::from_ns(1));
    sw.handle_frame(e0, routed_udp(UPLINK0_MAC, src, HOST2_IP, 1, 4791, 26), Instant::from_ns(1));
    sw.handle_frame(e0, routed_udp(UPLINK0_MAC, src, HOST2_IP, 1, 80, 7), Instant::from_ns(1));
    let e8 = port(&sw, "Ethernet8");
    let out = drain(&mut sw, e8, Instant::from_ns(1));
    let got: BTreeMap<u8, (u8, bool)> = out
        .iter()
        .map(|t| {
            let d = wire::decode(&t.frame).unwrap();
            let ok = Ipv4Packet::new_checked(&t.frame[14..]).unwrap().verify_checksum();
            (t.queue.unwrap(), (d.dscp().unwrap(), ok))
        })
        .collect();
    assert_eq!(got, BTreeMap::from([(6, (48, true)), (3, (3, true))]));
    assert_eq!(sw.port_counters(e0).unwrap().drop_reasons[&DropReason::BorderRule], 1);
}

#[test]
fn invalid_config_keeps_the_running_generation() {
    let mut sw = t0_switch();
    assert_eq!(sw.generation(), 1);
    let mut bad = t0_db();
    bad.set("PORT", "Ethernet0", "speed", "fast");
    bad.set("VLAN_MEMBER", "Vlan1000|Ethernet99", "tagging_mode", "untagged");
    let err = sw.apply(&bad, Instant::from_ns(5)).unwrap_err();
    assert!(err.errors.len() >= 2, "{err}");
    assert!(err.errors.iter().any(|e| e.location() == "PORT|Ethernet0|speed"), "{err}");
    assert_eq!(sw.generation(), 1);
    assert_eq!(sw.config().ports[0].speed_mbps, 100_000);
    let ok: ConfigDb = t0_db();
    assert_eq!(sw.apply(&ok, Instant::from_ns(6)).unwrap().generation, 2);
}

#[test]
fn a_port_whose_link_is_down_sends_nothing_and_comes_back() {
    let mut sw = t0_switch();
    host2_announces(&mut sw, 0);
    let e8 = port(&sw, "Ethernet8");
    let frame = || routed_udp(UPLINK0_MAC, Ipv4Addr::new(172, 16, 1, 1), HOST2_IP, 1234, 5678, 8);
    // Two frames wait behind a hold; the link goes down: they are dropped, their cells released.
    sw.set_port_hold(e8, true);
    sw.handle_frame(port(&sw, "Ethernet0"), frame(), Instant::from_ns(SEC));
    sw.handle_frame(port(&sw, "Ethernet0"), frame(), Instant::from_ns(SEC));
    assert_eq!(sw.queue_depth(e8, 0), 2);
    while sw.poll_event().is_some() {}
    sw.set_port_oper(e8, false, Instant::from_ns(SEC));
    assert!(!sw.port_oper_up(e8));
    assert_eq!(sw.queue_depth(e8, 0), 0);
    let c = sw.port_counters(e8).unwrap();
    assert_eq!((c.tx_drp, c.queues[0].dropped_packets), (2, 2));
    assert_eq!(
        sw.poll_event(),
        Some(Event::PortOperStatus { port: "Ethernet8".into(), up: false }),
        "the event names the port"
    );
    sw.set_port_hold(e8, false);
    // While down: forwarded frames are dropped with the link-down reason, nothing is sent.
    sw.handle_frame(port(&sw, "Ethernet0"), frame(), Instant::from_ns(2 * SEC));
    assert!(drain_all(&mut sw, Instant::from_ns(2 * SEC)).is_empty());
    let c0 = sw.port_counters(port(&sw, "Ethernet0")).unwrap();
    assert_eq!(c0.drop_reasons.get(&DropReason::EgressPortDown), Some(&1), "{:?}", c0.drop_reasons);
    // Back up: forwarding resumes.
    sw.set_port_oper(e8, true, Instant::from_ns(3 * SEC));
    assert_eq!(sw.poll_event(), Some(Event::PortOperStatus { port: "Ethernet8".into(), up: true }));
    sw.handle_frame(port(&sw, "Ethernet0"), frame(), Instant::from_ns(3 * SEC));
    let out = drain_all(&mut sw, Instant::from_ns(3 * SEC));
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(out[0].0, e8);
}

#[test]
fn transit_udp_with_an_inconsistent_header_is_routed_not_dropped() {
    let mut sw = t0_switch();
    host2_announces(&mut sw, 0);
    let mut frame = routed_udp(UPLINK0_MAC, Ipv4Addr::new(172, 16, 1, 1), HOST2_IP, 1234, 5678, 8);
    // The UDP length field claims more than the IP payload holds: a host's stack would drop it, a router
    // forwards on the IP header (wire::decode alone calls it malformed).
    let udp_len = 14 + 20 + 4;
    frame[udp_len..udp_len + 2].copy_from_slice(&4000u16.to_be_bytes());
    assert!(wire::decode(&frame).is_err());
    sw.handle_frame(port(&sw, "Ethernet0"), frame, Instant::from_ns(SEC));
    let out = drain_all(&mut sw, Instant::from_ns(SEC));
    assert_eq!(out.len(), 1, "routed: {out:?}");
    assert_eq!(out[0].0, port(&sw, "Ethernet8"));
    let c0 = sw.port_counters(port(&sw, "Ethernet0")).unwrap();
    assert_eq!((c0.rx_err, c0.rx_drp), (0, 0), "{:?}", c0.drop_reasons);
}

/// SAI's `IF_IN_NON_UCAST_PKTS` / `IF_OUT_NON_UCAST_PKTS`: frames to a group destination MAC (the I/G bit,
/// IEEE 802: broadcast and multicast) count apart from unicast, on the way in and on every copy out.
/// sonic-mgmt's sai_qos_tests.py forgives ingress drops only as far as the non-unicast count grew, so it
/// must count exactly those frames.
#[test]
fn group_addressed_frames_count_as_non_unicast_in_and_out() {
    let mut sw = t0_switch();
    let (e8, e12, e16) = (port(&sw, "Ethernet8"), port(&sw, "Ethernet12"), port(&sw, "Ethernet16"));
    let multicast = wire::EthernetAddress([0x01, 0x00, 0x5e, 0x00, 0x00, 0x01]);
    // Each of the three floods to Ethernet12 and Ethernet16: an unknown unicast, a broadcast, a multicast.
    for dst in [HOST3_MAC, wire::EthernetAddress::BROADCAST, multicast] {
        sw.handle_frame(e8, l2_frame(HOST2_MAC, dst, None), Instant::from_ns(0));
    }
    assert_eq!(drain_all(&mut sw, Instant::ZERO).len(), 6);
    let c = sw.port_counters(e8).unwrap();
    assert_eq!((c.rx_ok, c.rx_non_ucast), (3, 2));
    for out in [e12, e16] {
        let c = sw.port_counters(out).unwrap();
        assert_eq!((c.tx_ok, c.tx_non_ucast), (3, 2), "{out}");
    }
    // Known unicast: neither counter of non-unicast moves.
    sw.handle_frame(e12, l2_frame(HOST3_MAC, HOST2_MAC, None), Instant::from_ns(0));
    assert_eq!(drain_all(&mut sw, Instant::ZERO).len(), 1);
    assert_eq!(sw.port_counters(e12).unwrap().rx_non_ucast, 0);
    assert_eq!(sw.port_counters(e8).unwrap().tx_non_ucast, 0);
}
