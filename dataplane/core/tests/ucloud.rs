//! The shipped UCloud profile behaves as UCloud's RoCE design article ("UCloud高性能RoCE网络设计", QoS
//! design section; `docs/scheduling-wred.md`) describes: border classification on the server ports
//! (4791/48 → queue 6, 4791/46 → queue 5, everything else re-marked to the business class), DSCP trust on
//! the uplinks, CNP strict but policed.

mod common;

use common::*;
use lossless_core::model::config::ConfigDb;
use lossless_core::model::{PortId, Switch};
use lossless_core::time::Instant;
use lossless_core::wire;
use std::net::Ipv4Addr;

const UCLOUD: &str = include_str!("../../../configs/profiles/ucloud.yaml");

fn ucloud() -> Switch {
    let mut sw = Switch::new();
    sw.apply(&ConfigDb::from_yaml_str(UCLOUD).unwrap(), Instant::ZERO).unwrap();
    let e0 = port(&sw, "Ethernet0");
    sw.handle_frame(
        e0,
        arp_request(UPLINK0_MAC, Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 0)),
        Instant::from_ns(0),
    );
    drain_all(&mut sw, Instant::ZERO);
    sw
}

#[test]
fn border_rules_on_server_ports_and_dscp_trust_on_uplinks() {
    let mut sw = ucloud();
    let (e0, e8) = (port(&sw, "Ethernet0"), port(&sw, "Ethernet8"));
    let server = |dport: u16, dscp: u8| {
        routed_udp(HOST2_MAC, Ipv4Addr::new(192, 168, 0, 2), Ipv4Addr::new(172, 16, 0, 7), 1000, dport, dscp)
    };
    // The server's frames go to the uplink via the ECMP route; 10.0.0.3 is static, 10.0.0.1 learned.
    for (dport, dscp) in [(4791, 48), (4791, 46), (4791, 26), (80, 46)] {
        sw.handle_frame(e8, server(dport, dscp), Instant::from_ns(1_000));
    }
    let out = drain_all(&mut sw, Instant::from_ns(1_000));
    let got: Vec<(u8, u8)> = out
        .iter()
        .map(|(_, t)| (t.queue.unwrap(), wire::decode(&t.frame).unwrap().dscp().unwrap()))
        .collect();
    let mut got_sorted = got.clone();
    got_sorted.sort();
    assert_eq!(
        got_sorted,
        vec![(2, 0), (2, 0), (5, 46), (6, 48)],
        "CNP→6, RoCE→5, the rest re-marked to 0 → queue 2"
    );
    // On the uplink DSCP is trusted as is: 46 → queue 5 whatever the port.
    sw.handle_frame(
        e0,
        routed_udp(UPLINK0_MAC, Ipv4Addr::new(172, 16, 0, 7), Ipv4Addr::new(192, 168, 0, 9), 1, 80, 46),
        Instant::from_ns(2_000),
    );
    sw.handle_frame(
        port(&sw, "Ethernet12"),
        arp_request(HOST3_MAC, Ipv4Addr::new(192, 168, 0, 9), Ipv4Addr::new(192, 168, 0, 1)),
        Instant::from_ns(2_000),
    );
    drain_all(&mut sw, Instant::from_ns(2_000));
    sw.handle_frame(
        e0,
        routed_udp(UPLINK0_MAC, Ipv4Addr::new(172, 16, 0, 7), Ipv4Addr::new(192, 168, 0, 9), 1, 80, 46),
        Instant::from_ns(3_000),
    );
    let out = drain_all(&mut sw, Instant::from_ns(3_000));
    assert_eq!(out.iter().map(|(_, t)| t.queue).collect::<Vec<_>>(), vec![Some(5)]);
}

#[test]
fn the_strict_cnp_queue_is_policed() {
    let mut sw = ucloud();
    let e8 = port(&sw, "Ethernet8");
    // 2,000 CNPs of 60 bytes of one flow (one ECMP path) at once: 120,000 bytes against the uplink queue's
    // 125 MB/s policer with a 64 KiB bucket.
    for _ in 0..2000u16 {
        let f =
            routed_udp(HOST2_MAC, Ipv4Addr::new(192, 168, 0, 2), Ipv4Addr::new(172, 16, 0, 7), 7, 4791, 48);
        sw.handle_frame(e8, f, Instant::from_ns(1_000));
    }
    let dropped: u64 =
        PortId::all(sw.port_count()).map(|p| sw.port_counters(p).unwrap().queues[6].dropped_packets).sum();
    let sent = drain_all(&mut sw, Instant::from_ns(1_000)).len() as u64;
    assert!(dropped > 0, "the policer drops the excess");
    assert_eq!(sent + dropped, 2000);
    assert!(sent <= 65_536 / 60 + 1, "no more than the burst passes at once: {sent}");
}
