//! The switch's PFC generation across a link that goes down and comes back (the rest of the switch is
//! tested through its public interface in `dataplane/core/tests/`).

use super::*;
use crate::wire::build::Ipv4Flow;
use crate::wire::ip::Ecn;
use std::net::Ipv4Addr;

const TH_YAML: &str = include_str!("../../../../../configs/profiles/th_balanced.yaml");
const HOST_MAC: EthernetAddress = EthernetAddress([0x02, 0xbb, 0, 0, 0, 2]);

/// The TH BALANCED profile with a host behind Ethernet8 (learnt from its ARP request).
fn switch_with_host() -> Switch {
    let mut sw = Switch::new();
    sw.apply(&ConfigDb::from_yaml_str(TH_YAML).unwrap(), Instant::ZERO).unwrap();
    let arp = ArpRepr {
        operation: ArpOperation::Request,
        source_hardware_addr: HOST_MAC,
        source_protocol_addr: Ipv4Addr::new(192, 168, 0, 2),
        target_hardware_addr: EthernetAddress([0; 6]),
        target_protocol_addr: Ipv4Addr::new(192, 168, 0, 1),
    };
    let e8 = sw.port_id("Ethernet8").unwrap();
    let request = build::arp(&arp);
    sw.handle_frame(
        e8,
        build::ethernet(HOST_MAC, EthernetAddress::BROADCAST, None, EtherType::Arp, &request),
        Instant::ZERO,
    );
    while sw.poll_transmit(e8, Instant::from_ns(1_000)).is_some() {}
    sw
}

/// A routed 1 KB frame of DSCP 3 (lossless priority 3 in the profile's maps) from Ethernet0's side.
fn lossless_frame() -> Vec<u8> {
    let flow = Ipv4Flow {
        src_mac: EthernetAddress([0x02, 0xaa, 0, 0, 0, 1]),
        dst_mac: EthernetAddress([0x02, 0x4c, 0x53, 0, 0, 1]),
        src_ip: Ipv4Addr::new(172, 16, 1, 1),
        dst_ip: Ipv4Addr::new(192, 168, 0, 2),
        src_port: 49152,
        dscp: 3,
        ecn: Ecn::Ect0,
        ttl: 64,
    };
    flow.udp(4791, &[0; 1000])
}

fn xoff_events(sw: &mut Switch) -> usize {
    std::iter::from_fn(|| sw.poll_event()).filter(|e| matches!(e, Event::PfcXoff { pg: 3, .. })).count()
}

#[test]
fn a_port_asserts_pfc_while_its_pg_is_in_xoff_and_its_link_is_up() {
    let mut sw = switch_with_host();
    let (e0, e8) = (sw.port_id("Ethernet0").unwrap(), sw.port_id("Ethernet8").unwrap());
    // Ethernet8's queue 3 held: Ethernet0's PG 3 fills until it asserts XOFF for priority 3.
    sw.set_queue_hold(e8, 3, true);
    let mut sent = 0;
    while sw.mmu().xoff_pgs(e0) & (1 << 3) == 0 {
        sw.handle_frame(e0, lossless_frame(), Instant::from_ns(2_000));
        sent += 1;
        assert!(sent < 100_000, "PG 3 never reached XOFF");
    }
    assert_eq!(sw.pfc_state(e0).unwrap().0, 1 << 3, "XOFF asserted for priority 3");
    assert_eq!(xoff_events(&mut sw), 1);

    // Down: the port sends nothing, PFC included; the buffer still holds the PG in XOFF.
    sw.set_port_oper(e0, false, Instant::from_ns(3_000));
    assert_eq!(sw.pfc_state(e0).unwrap().0, 0);
    assert_eq!(sw.mmu().xoff_pgs(e0), 1 << 3);
    assert!(sw.poll_transmit(e0, Instant::from_ns(3_000)).is_none());

    // Back up with the PG still above its XON point: the peer is paused again at once.
    sw.set_port_oper(e0, true, Instant::from_ns(4_000));
    assert_eq!(sw.pfc_state(e0).unwrap().0, 1 << 3);
    assert_eq!(xoff_events(&mut sw), 1);
    let pfc = sw.poll_transmit(e0, Instant::from_ns(4_000)).expect("an XOFF frame is due");
    assert_eq!(pfc.queue, None, "a PFC frame, not data");

    // Drained: XON, and the MMU and the port agree again.
    sw.set_queue_hold(e8, 3, false);
    let mut t = 5_000;
    while sw.port_backlog(e8) > 0 {
        sw.poll_transmit(e8, Instant::from_ns(t));
        t += 1_000;
    }
    assert_eq!((sw.mmu().xoff_pgs(e0), sw.pfc_state(e0).unwrap().0), (0, 0));
}

/// Fills Ethernet0's PG 3 to XOFF behind a held Ethernet8 queue 3, then drains it to XON, `cycles` times:
/// (PFC frames Ethernet0 sent, XOFF events, XON events).
fn pause_cycles(sw: &mut Switch, cycles: u32) -> (u32, usize, usize) {
    let (e0, e8) = (sw.port_id("Ethernet0").unwrap(), sw.port_id("Ethernet8").unwrap());
    let (mut frames, mut xoff, mut xon) = (0, 0, 0);
    let mut t = 2_000;
    for _ in 0..cycles {
        sw.set_queue_hold(e8, 3, true);
        while sw.mmu().xoff_pgs(e0) & (1 << 3) == 0 {
            sw.handle_frame(e0, lossless_frame(), Instant::from_ns(t));
        }
        sw.set_queue_hold(e8, 3, false);
        while sw.port_backlog(e8) > 0 || sw.mmu().xoff_pgs(e0) != 0 {
            t += 1_000;
            sw.poll_transmit(e8, Instant::from_ns(t));
            frames += u32::from(sw.poll_transmit(e0, Instant::from_ns(t)).is_some());
        }
        t += 1_000;
        frames += u32::from(sw.poll_transmit(e0, Instant::from_ns(t)).is_some());
        for e in std::iter::from_fn(|| sw.poll_event()) {
            xoff += usize::from(matches!(e, Event::PfcXoff { pg: 3, .. }));
            xon += usize::from(matches!(e, Event::PfcXon { pg: 3, .. }));
        }
    }
    (frames, xoff, xon)
}

#[test]
fn a_switch_told_to_report_the_first_xoff_only_pauses_the_same() {
    // What a simulation asks of its switches (`PfcEvents::FirstXoff`): one XOFF event, no XON; the PFC
    // frames on the wire are those of a switch reporting every transition.
    let mut all = switch_with_host();
    let (frames, xoff, xon) = pause_cycles(&mut all, 3);
    assert_eq!((xoff, xon), (3, 3), "every transition reported by default");
    assert!(frames >= 6, "an XOFF and an XON frame per cycle: {frames}");
    let mut first = switch_with_host();
    first.set_pfc_events(PfcEvents::FirstXoff);
    assert_eq!(pause_cycles(&mut first, 3), (frames, 1, 0));
    assert_eq!(first.counters().ports, all.counters().ports, "the same counters");
}

/// Where the routed lossless frame of [`lossless_frame`] leaves, after it was handed to Ethernet0:
/// (egress port, destination MAC), or `None` if it left nowhere.
fn route_one(sw: &mut Switch, now: Instant) -> Option<(PortId, EthernetAddress)> {
    let e0 = sw.port_id("Ethernet0").unwrap();
    sw.handle_frame(e0, lossless_frame(), now);
    PortId::all(sw.port_count()).find_map(|p| {
        let t = sw.poll_transmit(p, now + Nanos::from_us(1))?;
        Some((p, EthernetFrame::new_checked(&t.frame[..]).unwrap().dst_addr()))
    })
}

/// Sends whatever every port holds (floods, ARP replies).
fn drain(sw: &mut Switch, now: Instant) {
    for p in PortId::all(sw.port_count()) {
        let mut t = now;
        while sw.port_backlog(p) > 0 {
            sw.poll_transmit(p, t);
            t += Nanos::from_us(1);
        }
    }
}

#[test]
fn cached_next_hops_follow_fdb_moves_neighbour_changes_and_flushes() {
    // The next-hop cache (`nexthop.rs`) must answer what the route, neighbour and FDB tables answer after
    // each change; debug builds also compare every hit with the full computation.
    let mut sw = switch_with_host();
    let (e8, e12) = (sw.port_id("Ethernet8").unwrap(), sw.port_id("Ethernet12").unwrap());
    assert_eq!(route_one(&mut sw, Instant::from_ns(10_000)), Some((e8, HOST_MAC)));
    assert_eq!(route_one(&mut sw, Instant::from_ns(20_000)), Some((e8, HOST_MAC)), "the cached answer");

    // The host moves to Ethernet12 (its next frame comes from there): the FDB entry moves.
    let moved =
        build::ethernet(HOST_MAC, EthernetAddress::BROADCAST, None, EtherType::Unknown(0x88b5), &[0; 46]);
    sw.handle_frame(e12, moved, Instant::from_ns(30_000));
    drain(&mut sw, Instant::from_ns(31_000));
    assert_eq!(route_one(&mut sw, Instant::from_ns(40_000)), Some((e12, HOST_MAC)));

    // The address is now at another MAC (an ARP from it, on Ethernet12).
    let new_mac = EthernetAddress([0x02, 0xbb, 0, 0, 0, 9]);
    let arp = ArpRepr {
        operation: ArpOperation::Request,
        source_hardware_addr: new_mac,
        source_protocol_addr: Ipv4Addr::new(192, 168, 0, 2),
        target_hardware_addr: EthernetAddress([0; 6]),
        target_protocol_addr: Ipv4Addr::new(192, 168, 0, 1),
    };
    let request =
        build::ethernet(new_mac, EthernetAddress::BROADCAST, None, EtherType::Arp, &build::arp(&arp));
    sw.handle_frame(e12, request, Instant::from_ns(50_000));
    drain(&mut sw, Instant::from_ns(51_000));
    assert_eq!(route_one(&mut sw, Instant::from_ns(60_000)), Some((e12, new_mac)));

    // The FDB flushed: a lossless packet whose neighbour has no port is dropped (never flooded).
    sw.flush_fdb(None, None);
    let dropped = sw.ledger().dropped;
    assert_eq!(route_one(&mut sw, Instant::from_ns(70_000)), None);
    assert_eq!(sw.ledger().dropped, dropped + 1);
}

#[test]
fn a_queued_frame_stays_small() {
    // The scheduler moves every queued frame on enqueue and dequeue: a guard against its allocation
    // growing back (it was 152 bytes; the frame's Vec is 24 of them).
    assert!(std::mem::size_of::<QueuedFrame>() <= 88, "{} bytes", std::mem::size_of::<QueuedFrame>());
}
