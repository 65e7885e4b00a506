//! Shared helpers of the switch scenario tests: a small topology, frame builders and a driver loop.
#![allow(dead_code)]

use lossless_core::model::config::ConfigDb;
use lossless_core::model::{PortId, Switch, Transmit};
use lossless_core::time::Instant;
use lossless_core::wire::build::{self, Dot1q, Ipv4Flow};
use lossless_core::wire::ip::Ecn;
use lossless_core::wire::{ArpOperation, ArpRepr, EtherType, EthernetAddress};
use std::net::Ipv4Addr;

pub const ROUTER_MAC: EthernetAddress = EthernetAddress([0x02, 0x4c, 0x53, 0x00, 0x00, 0x01]);
pub const UPLINK0_MAC: EthernetAddress = EthernetAddress([0x02, 0xaa, 0x00, 0x00, 0x00, 0x01]);
pub const UPLINK1_MAC: EthernetAddress = EthernetAddress([0x02, 0xaa, 0x00, 0x00, 0x00, 0x03]);
pub const HOST2_MAC: EthernetAddress = EthernetAddress([0x02, 0xbb, 0x00, 0x00, 0x00, 0x02]);
pub const HOST3_MAC: EthernetAddress = EthernetAddress([0x02, 0xbb, 0x00, 0x00, 0x00, 0x03]);
pub const HOST4_MAC: EthernetAddress = EthernetAddress([0x02, 0xbb, 0x00, 0x00, 0x00, 0x04]);

/// A T0-like switch: two routed uplinks (Ethernet0, Ethernet4), a server VLAN 1000 on Ethernet8/12
/// (untagged) and Ethernet16 (tagged), SONiC's AZURE QoS maps with PFC on 3,4 on every port, a static
/// route with two next hops (ECMP) and IPv6 on the uplinks.
pub const T0_YAML: &str = include_str!("../../../../configs/t0.yaml");

pub fn t0_db() -> ConfigDb {
    ConfigDb::from_yaml_str(T0_YAML).expect("T0 YAML parses")
}

/// A switch with [`T0_YAML`] applied at time 0.
pub fn t0_switch() -> Switch {
    let mut sw = Switch::new();
    sw.apply(&t0_db(), Instant::ZERO).expect("T0 config applies");
    sw
}

pub fn port(sw: &Switch, name: &str) -> PortId {
    sw.port_id(name).unwrap_or_else(|| panic!("no port {name}"))
}

/// Drains every frame queued on `port`, starting at `now` and following the port's line rate (each frame is
/// taken when the line frees up).
///
/// Not a virtual-time driver ([`lossless_core::sim::Sim`] is): it runs no timers and leaves the other ports
/// alone, so a test sees exactly what one port had queued, with nothing the switch's timers would add.
pub fn drain(sw: &mut Switch, port: PortId, now: Instant) -> Vec<Transmit> {
    let mut t = now;
    let mut out = Vec::new();
    loop {
        match sw.poll_transmit(port, t) {
            Some(tx) => out.push(tx),
            None => match sw.next_transmit_at(port) {
                Some(next) if next > t => t = next,
                _ => break,
            },
        }
    }
    out
}

/// Drains every port; returns (port, frame) pairs in port order.
pub fn drain_all(sw: &mut Switch, now: Instant) -> Vec<(PortId, Transmit)> {
    PortId::all(sw.port_count()).flat_map(|p| drain(sw, p, now).into_iter().map(move |t| (p, t))).collect()
}

pub fn arp(
    op: ArpOperation,
    src_mac: EthernetAddress,
    src_ip: Ipv4Addr,
    dst_mac: EthernetAddress,
    target_mac: EthernetAddress,
    target_ip: Ipv4Addr,
) -> Vec<u8> {
    let repr = ArpRepr {
        operation: op,
        source_hardware_addr: src_mac,
        source_protocol_addr: src_ip,
        target_hardware_addr: target_mac,
        target_protocol_addr: target_ip,
    };
    build::ethernet(src_mac, dst_mac, None, EtherType::Arp, &build::arp(&repr))
}

/// A host's ARP request for its gateway (teaches the switch the host's MAC and IP).
pub fn arp_request(src_mac: EthernetAddress, src_ip: Ipv4Addr, target_ip: Ipv4Addr) -> Vec<u8> {
    arp(
        ArpOperation::Request,
        src_mac,
        src_ip,
        EthernetAddress::BROADCAST,
        EthernetAddress([0; 6]),
        target_ip,
    )
}

/// A routed UDP frame from an uplink neighbour to the router MAC.
pub fn routed_udp(
    src_mac: EthernetAddress,
    src_ip: Ipv4Addr,
    dst_ip: Ipv4Addr,
    src_port: u16,
    dst_port: u16,
    dscp: u8,
) -> Vec<u8> {
    Ipv4Flow { src_mac, dst_mac: ROUTER_MAC, src_ip, dst_ip, src_port, dscp, ecn: Ecn::Ect0, ttl: 64 }
        .udp(dst_port, &[0x5a; 18])
}

/// A bridged frame inside the VLAN, optionally tagged.
pub fn l2_frame(src: EthernetAddress, dst: EthernetAddress, tag: Option<Dot1q>) -> Vec<u8> {
    let flow = Ipv4Flow {
        src_mac: src,
        dst_mac: dst,
        src_ip: Ipv4Addr::new(192, 168, 0, 2),
        dst_ip: Ipv4Addr::new(192, 168, 0, 3),
        src_port: 1000,
        dscp: 8,
        ecn: Ecn::NotEct,
        ttl: 64,
    };
    let untagged = flow.udp(2000, &[0; 18]);
    match tag {
        None => untagged,
        Some(t) => build::ethernet(src, dst, Some(t), EtherType::Ipv4, &untagged[14..]),
    }
}

/// Cases for a property suite whose budget is `n` at the default of 256 cases: `PROPTEST_CASES` (which
/// proptest reads for suites on its default config) scales it by the same factor, so that
/// `PROPTEST_CASES=2560` runs every suite 10x (nightly-style mode). Unset or unparsable: `n`.
pub fn proptest_cases(n: u32) -> u32 {
    match std::env::var("PROPTEST_CASES").ok().and_then(|v| v.trim().parse::<u64>().ok()) {
        Some(cases) => u32::try_from(u64::from(n) * cases / 256).unwrap_or(u32::MAX).max(1),
        None => n,
    }
}
