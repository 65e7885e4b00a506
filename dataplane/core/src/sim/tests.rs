//! The driver on its own: determinism, link timing, taps, a switch between two NICs.

use super::*;
use crate::model::config::ConfigDb;
use crate::nic::{FlowConfig, NicConfig};
use crate::wire::EthernetAddress;
use std::net::Ipv4Addr;

const A_MAC: EthernetAddress = EthernetAddress([0x02, 0, 0, 0, 0, 0x0a]);
const B_MAC: EthernetAddress = EthernetAddress([0x02, 0, 0, 0, 0, 0x0b]);
const A_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const B_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);

fn nic(mac: EthernetAddress, ip: Ipv4Addr) -> Nic {
    Nic::new(NicConfig { mac, ip, line_rate_mbps: 25_000, mtu: 1068, ..NicConfig::default() }).unwrap()
}

/// A sends 10 one-packet messages to B over a 1 µs link; everything logged.
fn pair() -> Sim {
    let mut sim = Sim::new();
    let (a, b) =
        (sim.add(Device::Nic(Box::new(nic(A_MAC, A_IP)))), sim.add(Device::Nic(Box::new(nic(B_MAC, B_IP)))));
    sim.connect((a, 0), 25_000, (b, 0), 25_000, 1_000);
    sim.keep_log = true;
    let flow = FlowConfig {
        id: 1,
        dst_ip: B_IP,
        dst_mac: B_MAC,
        dst_qp: 0x12,
        message_bytes: 1024,
        messages: Some(10),
        ..FlowConfig::default()
    };
    sim.nic(a).add_flow(flow).unwrap();
    sim
}

#[test]
fn a_run_is_deterministic_and_frames_arrive_after_serialisation_and_delay() {
    let mut one = pair();
    one.run_until(1_000_000);
    let mut two = pair();
    two.run_until(1_000_000);
    assert_eq!(one.sent, two.sent);
    assert_eq!(one.delivered, two.delivered);
    assert_eq!(one.nic(0).flow_stats(1).unwrap().acked_bytes, 10 * 1024);
    // Every frame A sent reached B after its bits at 25 Gb/s plus 1 µs, in order.
    let from_a: Vec<&Sent> = one.sent.iter().filter(|s| s.from == (0, 0)).collect();
    let at_b: Vec<&Delivered> = one.delivered.iter().filter(|d| d.to == (1, 0)).collect();
    assert_eq!(from_a.len(), at_b.len());
    for (s, d) in from_a.iter().zip(&at_b) {
        let bits = (s.frame.len() as u64 + WIRE_OVERHEAD_BYTES) * 8;
        assert_eq!(d.at, s.at + (bits * 1000).div_ceil(25_000) + 1_000);
        assert_eq!(d.frame, s.frame);
    }
}

#[test]
fn a_tap_loses_frames_and_the_nic_recovers() {
    let mut sim = pair();
    let mut dropped = 0;
    sim.set_tap(Box::new(move |s: &Sent, _: &mut Vec<u8>| {
        // The third frame A sends is lost.
        let keep = !(s.from == (0, 0) && dropped == 0 && s.at > 0 && s.frame.len() > 1000);
        if !keep {
            dropped += 1;
        }
        keep
    }));
    sim.run_until(50_000_000);
    let stats = sim.nic(0).flow_stats(1).unwrap();
    assert_eq!(stats.acked_bytes, 10 * 1024);
    assert!(stats.retransmitted_packets > 0);
}

#[test]
fn a_switch_between_two_nics_forwards_at_line_rate() {
    // Two routed ports; B behind Ethernet4 as a static neighbour.
    let yaml = r#"
DEVICE_METADATA: { localhost: { mac: "02:4c:53:00:00:01", asic: generic } }
PORT: { Ethernet0: { speed: 25000 }, Ethernet4: { speed: 25000 } }
INTERFACE:
  Ethernet0: {}
  Ethernet0|10.0.0.254/24: {}
  Ethernet4: {}
  Ethernet4|10.0.1.254/24: {}
NEIGH:
  Ethernet4|10.0.1.2: { neigh: "02:00:00:00:00:0b", family: IPv4 }
  Ethernet0|10.0.0.1: { neigh: "02:00:00:00:00:0a", family: IPv4 }
"#;
    let mut switch = Switch::new();
    switch.apply(&ConfigDb::from_yaml_str(yaml).unwrap(), 0).unwrap();
    let router = EthernetAddress([0x02, 0x4c, 0x53, 0, 0, 1]);
    let mut sim = Sim::new();
    let sw = sim.add(Device::Switch(Box::new(switch)));
    let a = {
        let cfg = NicConfig { gateway_mac: Some(router), ..nic(A_MAC, A_IP).config().clone() };
        sim.add(Device::Nic(Box::new(Nic::new(cfg).unwrap())))
    };
    let b_ip = Ipv4Addr::new(10, 0, 1, 2);
    let b = {
        let cfg = NicConfig { gateway_mac: Some(router), ..nic(B_MAC, b_ip).config().clone() };
        sim.add(Device::Nic(Box::new(Nic::new(cfg).unwrap())))
    };
    sim.connect((a, 0), 25_000, (sw, 0), 25_000, 500);
    sim.connect((b, 0), 25_000, (sw, 1), 25_000, 500);
    let flow = FlowConfig {
        id: 1,
        dst_ip: b_ip,
        dst_mac: B_MAC,
        dst_qp: 0x12,
        messages: Some(100),
        ..FlowConfig::default()
    };
    sim.nic(a).add_flow(flow).unwrap();
    sim.run_until(10_000_000);
    let sent = sim.nic(a).flow_stats(1).unwrap();
    assert!(sent.acked_bytes > 0 && sent.retransmitted_packets == 0, "{sent:?}");
    let c = sim.switch(sw).port_counters(PortId::new(1)).unwrap();
    assert!(c.tx_ok >= 100, "{c:?}");
}
