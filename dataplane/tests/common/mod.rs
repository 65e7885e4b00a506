//! Shared helpers of the switch scenario tests: a small topology, frame builders and a driver loop.
#![allow(dead_code)]

use lossless_dataplane::model::config::ConfigDb;
use lossless_dataplane::model::{PortId, Switch, Transmit};
use lossless_dataplane::wire::build::{self, Dot1q, Ipv4Flow};
use lossless_dataplane::wire::ip::Ecn;
use lossless_dataplane::wire::{ArpOperation, ArpRepr, EtherType, EthernetAddress};
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
pub const T0_YAML: &str = r#"
DEVICE_METADATA:
  localhost: { mac: "02:4c:53:00:00:01", hostname: t0 }
PORT:
  Ethernet0: { speed: 100000, mtu: 9100 }
  Ethernet4: { speed: 100000 }
  Ethernet8: { speed: 25000 }
  Ethernet12: { speed: 25000 }
  Ethernet16: { speed: 25000 }
INTERFACE:
  Ethernet0: {}
  Ethernet0|10.0.0.0/31: {}
  Ethernet0|fc00::/127: {}
  Ethernet4: {}
  Ethernet4|10.0.0.2/31: {}
  Ethernet4|fc00::2/127: {}
VLAN:
  Vlan1000: { vlanid: 1000 }
VLAN_MEMBER:
  Vlan1000|Ethernet8: { tagging_mode: untagged }
  Vlan1000|Ethernet12: { tagging_mode: untagged }
  Vlan1000|Ethernet16: { tagging_mode: tagged }
VLAN_INTERFACE:
  Vlan1000: {}
  Vlan1000|192.168.0.1/24: {}
NEIGH:
  Ethernet4|10.0.0.3: { neigh: "02:aa:00:00:00:03", family: IPv4 }
  Ethernet0|fc00::1: { neigh: "02:aa:00:00:00:01", family: IPv6 }
  Ethernet4|fc00::3: { neigh: "02:aa:00:00:00:03", family: IPv6 }
STATIC_ROUTE:
  172.16.0.0/16: { nexthop: "10.0.0.1,10.0.0.3" }
  2001:db8::/32: { nexthop: "fc00::1" }
DSCP_TO_TC_MAP:
  AZURE: { "0": "1", "1": "1", "2": "1", "3": "3", "4": "4", "5": "2", "6": "1", "7": "1", "8": "0",
           "9": "1", "10": "1", "11": "1", "12": "1", "13": "1", "14": "1", "15": "1", "16": "1", "17": "1",
           "18": "1", "19": "1", "20": "1", "21": "1", "22": "1", "23": "1", "24": "1", "25": "1", "26": "1",
           "27": "1", "28": "1", "29": "1", "30": "1", "31": "1", "32": "1", "33": "1", "34": "1", "35": "1",
           "36": "1", "37": "1", "38": "1", "39": "1", "40": "1", "41": "1", "42": "1", "43": "1", "44": "1",
           "45": "1", "46": "5", "47": "1", "48": "6", "49": "1", "50": "1", "51": "1", "52": "1", "53": "1",
           "54": "1", "55": "1", "56": "1", "57": "1", "58": "1", "59": "1", "60": "1", "61": "1", "62": "1",
           "63": "1" }
TC_TO_QUEUE_MAP:
  AZURE: { "0": "0", "1": "1", "2": "2", "3": "3", "4": "4", "5": "5", "6": "6", "7": "7" }
TC_TO_PRIORITY_GROUP_MAP:
  AZURE: { "0": "0", "1": "0", "2": "0", "3": "3", "4": "4", "5": "0", "6": "0", "7": "7" }
MAP_PFC_PRIORITY_TO_QUEUE:
  AZURE: { "0": "0", "1": "1", "2": "2", "3": "3", "4": "4", "5": "5", "6": "6", "7": "7" }
PORT_QOS_MAP:
  Ethernet0,Ethernet4,Ethernet8,Ethernet12,Ethernet16:
    dscp_to_tc_map: AZURE
    tc_to_queue_map: "[TC_TO_QUEUE_MAP|AZURE]"
    tc_to_pg_map: AZURE
    pfc_to_queue_map: AZURE
    pfc_enable: "3,4"
"#;

pub fn t0_db() -> ConfigDb {
    ConfigDb::from_yaml_str(T0_YAML).expect("T0 YAML parses")
}

/// A switch with [`T0_YAML`] applied at time 0.
pub fn t0_switch() -> Switch {
    let mut sw = Switch::new();
    sw.apply(&t0_db(), 0).expect("T0 config applies");
    sw
}

pub fn port(sw: &Switch, name: &str) -> PortId {
    sw.port_id(name).unwrap_or_else(|| panic!("no port {name}"))
}

/// Drains every frame queued on `port`.
pub fn drain(sw: &mut Switch, port: PortId, now_ns: u64) -> Vec<Transmit> {
    std::iter::from_fn(|| sw.poll_transmit(port, now_ns)).collect()
}

/// Drains every port; returns (port, frame) pairs in port order.
pub fn drain_all(sw: &mut Switch, now_ns: u64) -> Vec<(PortId, Transmit)> {
    (0..sw.port_count()).flat_map(|p| drain(sw, p, now_ns).into_iter().map(move |t| (p, t))).collect()
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
