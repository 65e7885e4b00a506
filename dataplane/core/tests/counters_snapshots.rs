//! Snapshots of the full counters dump after two canonical scenarios, so that any change in what an
//! operator would read (counter names, what is counted where, drop reason names) is a reviewed change.

mod common;

use common::*;
use lossless_core::time::Instant;
use std::net::Ipv4Addr;

const SEC: u64 = 1_000_000_000;

/// A host learns its gateway, an uplink learns the switch, then one packet per DSCP is routed down to the
/// host (DscpMappingPB), plus a TTL-expired packet, a route miss and a malformed frame.
#[test]
fn routed_dscp_sweep() {
    let mut sw = t0_switch();
    let (e0, e8) = (port(&sw, "Ethernet0"), port(&sw, "Ethernet8"));
    sw.handle_frame(
        e8,
        arp_request(HOST2_MAC, Ipv4Addr::new(192, 168, 0, 2), Ipv4Addr::new(192, 168, 0, 1)),
        Instant::from_ns(0),
    );
    sw.handle_frame(
        e0,
        arp_request(UPLINK0_MAC, Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 0)),
        Instant::from_ns(0),
    );
    for dscp in 0..64 {
        let f =
            routed_udp(UPLINK0_MAC, Ipv4Addr::new(172, 16, 0, 5), Ipv4Addr::new(192, 168, 0, 2), 1, 2, dscp);
        sw.handle_frame(e0, f, Instant::from_ns(SEC));
    }
    let mut expired =
        routed_udp(UPLINK0_MAC, Ipv4Addr::new(172, 16, 0, 5), Ipv4Addr::new(192, 168, 0, 2), 1, 2, 8);
    {
        let mut ip = lossless_core::wire::Ipv4Packet::new_unchecked(&mut expired[14..]);
        ip.set_ttl(1);
        ip.fill_checksum();
    }
    sw.handle_frame(e0, expired, Instant::from_ns(SEC));
    sw.handle_frame(
        e0,
        routed_udp(UPLINK0_MAC, Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(8, 8, 8, 8), 1, 2, 8),
        Instant::from_ns(SEC),
    );
    sw.handle_frame(e0, vec![0x02; 20], Instant::from_ns(SEC));
    drain_all(&mut sw, Instant::from_ns(SEC));
    insta::assert_yaml_snapshot!(sw.counters());
}

/// The Microsoft deadlock precondition: the host's FDB entry ages out while its ARP entry stays; lossless
/// packets (DSCP 3, 4) to it are dropped on ingress, a lossy one (DSCP 8) is flooded to the VLAN.
#[test]
fn fdb_miss_drop_not_flood() {
    let mut sw = t0_switch();
    let (e0, e8) = (port(&sw, "Ethernet0"), port(&sw, "Ethernet8"));
    sw.handle_frame(
        e8,
        arp_request(HOST2_MAC, Ipv4Addr::new(192, 168, 0, 2), Ipv4Addr::new(192, 168, 0, 1)),
        Instant::from_ns(0),
    );
    drain_all(&mut sw, Instant::ZERO);
    sw.handle_timeout(Instant::from_ns(700 * SEC));
    sw.handle_timeout(Instant::from_ns(800 * SEC));
    for dscp in [3, 4, 4, 8] {
        let f =
            routed_udp(UPLINK0_MAC, Ipv4Addr::new(172, 16, 0, 5), Ipv4Addr::new(192, 168, 0, 2), 1, 2, dscp);
        sw.handle_frame(e0, f, Instant::from_ns(800 * SEC));
    }
    drain_all(&mut sw, Instant::from_ns(800 * SEC));
    insta::assert_yaml_snapshot!(sw.counters());
}
