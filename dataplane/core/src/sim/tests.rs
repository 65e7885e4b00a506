//! The driver on its own: determinism, link timing, taps, a switch between two NICs.

use super::*;
use crate::model::config::ConfigDb;
use crate::model::scheduler::WIRE_OVERHEAD_BYTES;
use crate::nic::{FlowConfig, NicConfig};
use crate::wire::EthernetAddress;
use std::net::Ipv4Addr;

const A_MAC: EthernetAddress = EthernetAddress([0x02, 0, 0, 0, 0, 0x0a]);
const B_MAC: EthernetAddress = EthernetAddress([0x02, 0, 0, 0, 0, 0x0b]);
const A_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const B_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);
/// The first and second node a test adds.
const A: NodeId = NodeId::new(0);
const B: NodeId = NodeId::new(1);

fn nic(mac: EthernetAddress, ip: Ipv4Addr) -> Nic {
    Nic::new(NicConfig { mac, ip, line_rate_mbps: 25_000, mtu: 1068, ..NicConfig::default() }).unwrap()
}

/// Flow 1 to QP 0x12 of `dst`: `messages` messages of `message_bytes`.
fn flow_to(dst_ip: Ipv4Addr, dst_mac: EthernetAddress, message_bytes: u64, messages: u64) -> FlowConfig {
    FlowConfig {
        id: 1,
        dst_ip,
        dst_mac,
        dst_qp: 0x12,
        message_bytes,
        messages: Some(messages),
        ..FlowConfig::default()
    }
}

/// A sends 10 one-packet messages to B over a 1 µs link; everything logged.
fn pair() -> Sim {
    let mut sim = Sim::new();
    let (a, b) =
        (sim.add(Device::Nic(Box::new(nic(A_MAC, A_IP)))), sim.add(Device::Nic(Box::new(nic(B_MAC, B_IP)))));
    sim.connect(a.port(0), 25_000, b.port(0), 25_000, Nanos::from_ns(1_000));
    sim.keep_log = true;
    let flow = flow_to(B_IP, B_MAC, 1024, 10);
    sim.nic(a).add_flow(flow).unwrap();
    sim
}

#[test]
fn a_run_is_deterministic_and_frames_arrive_after_serialisation_and_delay() {
    let mut one = pair();
    one.run_until(Instant::from_ns(1_000_000));
    let mut two = pair();
    two.run_until(Instant::from_ns(1_000_000));
    assert_eq!(one.sent, two.sent);
    assert_eq!(one.delivered, two.delivered);
    assert_eq!(one.nic(A).flow_stats(1).unwrap().acked_bytes, 10 * 1024);
    // Every frame A sent reached B after its bits at 25 Gb/s plus 1 µs, in order.
    let from_a: Vec<&Sent> = one.sent.iter().filter(|s| s.from == A.port(0)).collect();
    let at_b: Vec<&Delivered> = one.delivered.iter().filter(|d| d.to == B.port(0)).collect();
    assert_eq!(from_a.len(), at_b.len());
    for (s, d) in from_a.iter().zip(&at_b) {
        let bits = (s.frame.len() as u64 + WIRE_OVERHEAD_BYTES) * 8;
        assert_eq!(d.at.as_ns(), s.at.as_ns() + (bits * 1000).div_ceil(25_000) + 1_000);
        assert_eq!(d.frame, s.frame);
    }
}

#[test]
fn a_tap_loses_frames_and_the_nic_recovers() {
    let mut sim = pair();
    let mut dropped = 0;
    sim.set_tap(Box::new(move |s: &Sent, _: &mut Vec<u8>| {
        // The third frame A sends is lost.
        let keep = !(s.from == A.port(0) && dropped == 0 && s.at.as_ns() > 0 && s.frame.len() > 1000);
        if !keep {
            dropped += 1;
        }
        keep
    }));
    sim.run_until(Instant::from_ns(50_000_000));
    let stats = sim.nic(A).flow_stats(1).unwrap();
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
    switch.apply(&ConfigDb::from_yaml_str(yaml).unwrap(), Instant::ZERO).unwrap();
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
    sim.connect(a.port(0), 25_000, sw.port(0), 25_000, Nanos::from_ns(500));
    sim.connect(b.port(0), 25_000, sw.port(1), 25_000, Nanos::from_ns(500));
    let flow = flow_to(b_ip, B_MAC, FlowConfig::default().message_bytes, 100);
    sim.nic(a).add_flow(flow).unwrap();
    sim.run_until(Instant::from_ns(10_000_000));
    let sent = sim.nic(a).flow_stats(1).unwrap();
    assert!(sent.acked_bytes > 0 && sent.retransmitted_packets == 0, "{sent:?}");
    let c = sim.switch(sw).port_counters(PortId::new(1)).unwrap();
    assert!(c.tx_ok >= 100, "{c:?}");
}

/// A sends `messages` messages of 8 KiB to B (1 KiB packets) at `rate_mbps` over a 100 ns link; `a_to_b`
/// replaces the A→B direction.
fn fast_pair(rate_mbps: u32, messages: u64, seed: u64, a_to_b: Option<Link>) -> Sim {
    let mut sim = Sim::with_seed(seed);
    let mk = |mac, ip| {
        let cfg = NicConfig { line_rate_mbps: rate_mbps, ..nic(mac, ip).config().clone() };
        Device::Nic(Box::new(Nic::new(cfg).unwrap()))
    };
    let (a, b) = (sim.add(mk(A_MAC, A_IP)), sim.add(mk(B_MAC, B_IP)));
    sim.connect(a.port(0), rate_mbps, b.port(0), rate_mbps, Nanos::from_ns(100));
    if let Some(link) = a_to_b {
        sim.add_link(a.port(0), link);
    }
    sim.keep_log = true;
    let flow = flow_to(B_IP, B_MAC, 8192, messages);
    sim.nic(a).add_flow(flow).unwrap();
    sim
}

#[test]
fn back_to_back_frames_at_400g_do_not_drift() {
    let mut sim = fast_pair(400_000, 40, 0, None);
    sim.run_until(Instant::from_ns(1_000_000));
    let at_b: Vec<&Delivered> = sim.delivered.iter().filter(|d| d.to == B.port(0)).collect();
    assert!(at_b.len() >= 300, "{}", at_b.len());
    // Every frame after the first arrives within 1 ns of the exact (picosecond) sum of the serialisation
    // times before it (both ends rounded up to the ns: less than 1 ns apart). A 1 KiB frame at 400 Gb/s
    // takes 21.x ns; restarting each frame on the nanosecond the sender released it would add up to 1 ns.
    let mut exact_ps = 0u128;
    let first = at_b[0].at.as_ns();
    let mut back_to_back = 0;
    for pair in at_b.windows(2) {
        let bits = (pair[1].frame.len() as u128 + u128::from(WIRE_OVERHEAD_BYTES)) * 8;
        let gap_ps = bits * 1_000_000 / 400_000;
        if u128::from(pair[1].at.as_ns() - pair[0].at.as_ns()) * 1000 > gap_ps + 1000 {
            exact_ps = 0;
            continue; // the sender paused (window, next message): a new train
        }
        if exact_ps == 0 {
            exact_ps = u128::from(pair[0].at.as_ns() - first) * 1000;
        }
        exact_ps += gap_ps;
        back_to_back += 1;
        let got_ps = u128::from(pair[1].at.as_ns() - first) * 1000;
        assert!(
            got_ps.abs_diff(exact_ps) < 1000,
            "frame at {} ns, exact {} ps",
            pair[1].at.as_ns(),
            exact_ps
        );
    }
    assert!(back_to_back > 200, "{back_to_back}");
}

#[test]
fn a_lone_frame_arrives_after_its_bits_and_the_delay_to_the_nanosecond() {
    for rate in [25_000u32, 100_000, 400_000] {
        let mut sim = fast_pair(rate, 1, 0, None);
        sim.run_until(Instant::from_ns(200_000));
        let s = sim.sent.iter().find(|s| s.from == A.port(0)).unwrap();
        let d = sim.delivered.iter().find(|d| d.to == B.port(0)).unwrap();
        let bits = (s.frame.len() as u64 + WIRE_OVERHEAD_BYTES) * 8;
        assert_eq!(
            d.at.as_ns(),
            s.at.as_ns() + (bits * 1000).div_ceil(u64::from(rate)) + 100,
            "at {rate} Mb/s"
        );
    }
}

#[test]
fn every_nth_data_packet_is_lost_and_go_back_n_recovers() {
    let loss = Impairment::Every { n: 16, frames: Frames::Data };
    let link = Link { loss: Some(loss), ..Link::new(B.port(0), 100_000, Nanos::from_ns(100)) };
    let mut sim = fast_pair(100_000, 20, 0, Some(link));
    sim.run_until(Instant::from_ns(50_000_000));
    let stats = sim.link_stats(A.port(0)).unwrap();
    let data_sent =
        sim.sent.iter().filter(|s| s.from == A.port(0) && link::is_roce_data(&s.frame)).count() as u64;
    assert_eq!(stats.lost, data_sent / 16, "{stats:?}");
    assert!(stats.lost > 0);
    let flow = sim.nic(A).flow_stats(1).unwrap();
    assert_eq!(flow.acked_bytes, 20 * 8192);
    assert!(flow.retransmitted_packets >= stats.lost, "{flow:?}");
    // ACKs (B→A) are never data.
    assert!(sim.sent.iter().filter(|s| s.from == B.port(0)).all(|s| !link::is_roce_data(&s.frame)));
}

#[test]
fn random_loss_follows_the_seed() {
    let loss = Impairment::Random { probability: 0.02, frames: Frames::All };
    let link = Link { loss: Some(loss), ..Link::new(B.port(0), 100_000, Nanos::from_ns(100)) };
    let run = |seed| {
        let mut sim = fast_pair(100_000, 40, seed, Some(link));
        sim.run_until(Instant::from_ns(50_000_000));
        (sim.delivered.iter().map(|d| d.at.as_ns()).collect::<Vec<_>>(), sim.link_stats(A.port(0)).unwrap())
    };
    let (one, two, other) = (run(7), run(7), run(8));
    assert_eq!(one, two);
    assert_ne!(one.0, other.0);
    assert!(one.1.lost > 0 && one.1.lost < one.1.frames / 10, "{:?}", one.1);
}

#[test]
fn a_corrupted_frame_is_an_fcs_error_at_the_switch_and_a_capture_sees_what_was_sent() {
    let yaml = r#"
DEVICE_METADATA: { localhost: { mac: "02:4c:53:00:00:01", asic: generic } }
PORT: { Ethernet0: { speed: 100000 }, Ethernet4: { speed: 100000 } }
VLAN: { Vlan10: { vlanid: 10 } }
VLAN_MEMBER: { Vlan10|Ethernet0: { tagging_mode: untagged }, Vlan10|Ethernet4: { tagging_mode: untagged } }
"#;
    let mut switch = Switch::new();
    switch.apply(&ConfigDb::from_yaml_str(yaml).unwrap(), Instant::ZERO).unwrap();
    let mut sim = Sim::new();
    let sw = sim.add(Device::Switch(Box::new(switch)));
    let a = sim.add(Device::Nic(Box::new(nic(A_MAC, A_IP))));
    let b = sim.add(Device::Nic(Box::new(nic(B_MAC, B_IP))));
    let corrupt = Impairment::Every { n: 5, frames: Frames::All };
    sim.connect(a.port(0), 25_000, sw.port(0), 100_000, Nanos::from_ns(200));
    sim.add_link(
        a.port(0),
        Link { corrupt: Some(corrupt), ..Link::new(sw.port(0), 25_000, Nanos::from_ns(200)) },
    );
    sim.connect(b.port(0), 25_000, sw.port(1), 100_000, Nanos::from_ns(200));
    let capture = sim.capture(vec![a.port(0), sw.port(0)]);
    let flow = flow_to(B_IP, B_MAC, FlowConfig::default().message_bytes, 4);
    sim.nic(a).add_flow(flow).unwrap();
    sim.run_until(Instant::from_ns(2_000_000));
    let stats = sim.link_stats(a.port(0)).unwrap();
    assert!(stats.corrupted > 0 && stats.corrupted == stats.frames / 5, "{stats:?}");
    let c = sim.switch(sw).port_counters(PortId::new(0)).unwrap();
    assert_eq!(c.rx_err, stats.corrupted);
    assert_eq!(c.drop_reasons.get(&crate::model::DropReason::FcsError), Some(&stats.corrupted));
    let to_a = sim.link_stats(sw.port(0)).unwrap().frames;
    let (pcap, frames) = sim.capture_bytes(capture);
    assert_eq!(frames, stats.frames + to_a);
    assert!(pcap.len() > 24 + frames as usize * 16);
}

#[test]
fn a_stopped_node_sends_nothing_and_takes_nothing() {
    let mut sim = fast_pair(25_000, 1000, 0, None);
    sim.run_until(Instant::from_ns(20_000));
    sim.stop(B);
    let delivered_to_b = sim.delivered.iter().filter(|d| d.to == B.port(0)).count();
    let sent_by_b = sim.sent.iter().filter(|s| s.from == B.port(0)).count();
    sim.run_until(Instant::from_ns(200_000));
    assert_eq!(sim.delivered.iter().filter(|d| d.to == B.port(0)).count(), delivered_to_b);
    assert_eq!(sim.sent.iter().filter(|s| s.from == B.port(0)).count(), sent_by_b);
    assert!(sim.sent.iter().filter(|s| s.from == A.port(0)).count() > sent_by_b);
}

/// 802.1Qbb frame: (class-enable vector, quanta of priority 3), if it is one.
fn pfc_quanta3(frame: &[u8]) -> Option<(u8, u16)> {
    (frame.len() >= 34 && frame[12..14] == [0x88, 0x08] && frame[14..16] == [0x01, 0x01])
        .then(|| (frame[17], u16::from_be_bytes([frame[24], frame[25]])))
}

#[test]
fn pfc_across_a_100g_link_reaches_the_sender_one_delay_later_and_headroom_takes_the_flight() {
    // Two senders into one port at 100G, lossless priority 3: PG 3 trips after 20 KB of shared buffer;
    // 100 m cables (500 ns).
    let yaml = r#"
DEVICE_METADATA: { localhost: { mac: "02:4c:53:00:00:01" } }
PORT: { Ethernet0: { speed: 100000, mtu: 9100 }, Ethernet4: { speed: 100000, mtu: 9100 }, Ethernet8: { speed: 100000, mtu: 9100 } }
VLAN: { Vlan10: { vlanid: 10 } }
VLAN_MEMBER:
  Vlan10|Ethernet0: { tagging_mode: untagged }
  Vlan10|Ethernet4: { tagging_mode: untagged }
  Vlan10|Ethernet8: { tagging_mode: untagged }
FDB:
  Vlan10|02:00:00:00:00:0a: { port: Ethernet0 }
  Vlan10|02:00:00:00:00:0b: { port: Ethernet4 }
  Vlan10|02:00:00:00:00:0c: { port: Ethernet8 }
DSCP_TO_TC_MAP: { AZURE: { "3": "3" } }
TC_TO_PRIORITY_GROUP_MAP: { AZURE: { "3": "3" } }
PORT_QOS_MAP: { "Ethernet0,Ethernet4,Ethernet8": { dscp_to_tc_map: AZURE, tc_to_pg_map: AZURE, pfc_enable: "3" } }
BUFFER_ASIC: { global: { cell_size: 256 } }
BUFFER_POOL:
  ingress_lossless_pool: { type: ingress, mode: static, size: 20000000, xoff: 2000000 }
  egress_lossless_pool: { type: egress, mode: static, size: 20000000 }
BUFFER_PROFILE:
  pg_lossless: { pool: ingress_lossless_pool, size: 0, static_th: 20480, xoff: 409600, xon: 0, xon_offset: 2560 }
  egress_lossless_profile: { pool: egress_lossless_pool, size: 0, static_th: 20000000 }
BUFFER_PG: { "Ethernet0,Ethernet4,Ethernet8|3": { profile: pg_lossless } }
BUFFER_QUEUE: { "Ethernet0,Ethernet4,Ethernet8|3": { profile: egress_lossless_profile } }
"#;
    const DELAY: u64 = 500;
    let mut switch = Switch::new();
    switch.apply(&ConfigDb::from_yaml_str(yaml).unwrap(), Instant::ZERO).unwrap();
    let mut sim = Sim::new();
    let sw = sim.add(Device::Switch(Box::new(switch)));
    let c_mac = EthernetAddress([0x02, 0, 0, 0, 0, 0x0c]);
    let host = |mac, ip| {
        let cfg = NicConfig {
            line_rate_mbps: 100_000,
            mtu: 4200,
            pfc_enable: 1 << 3,
            ..nic(mac, ip).config().clone()
        };
        Device::Nic(Box::new(Nic::new(cfg).unwrap()))
    };
    let a = sim.add(host(A_MAC, A_IP));
    let b = sim.add(host(B_MAC, B_IP));
    let c = sim.add(host(c_mac, Ipv4Addr::new(10, 0, 0, 3)));
    for (n, port) in [(a, 0), (b, 1), (c, 2)] {
        sim.connect(n.port(0), 100_000, sw.port(port), 100_000, Nanos::from_ns(DELAY));
    }
    for (n, id) in [(a, 1), (b, 2)] {
        let flow = FlowConfig {
            id,
            dst_ip: Ipv4Addr::new(10, 0, 0, 3),
            dst_mac: c_mac,
            dst_qp: 0x100 + id,
            dscp: 3,
            priority: 3,
            message_bytes: 65536,
            ..FlowConfig::default()
        };
        sim.nic(n).add_flow(flow).unwrap();
    }
    sim.keep_log = true;
    sim.run_until(Instant::from_ns(300_000));

    // The first XOFF the switch sent A, and when A got it: its bits at 100G after the line was free, plus
    // the cable.
    let xoff = sim
        .sent
        .iter()
        .find(|s| s.from == sw.port(0) && pfc_quanta3(&s.frame).is_some_and(|(ce, q)| ce & 8 != 0 && q > 0))
        .expect("the switch paused A");
    let got =
        sim.delivered.iter().find(|d| d.to == a.port(0) && d.frame == xoff.frame && d.at >= xoff.at).unwrap();
    let pfc_bits_ns = ((xoff.frame.len() as u64 + WIRE_OVERHEAD_BYTES) * 8 * 1000).div_ceil(100_000);
    assert!(
        (xoff.at.as_ns() + pfc_bits_ns + DELAY..=xoff.at.as_ns() + pfc_bits_ns + DELAY + 1)
            .contains(&got.at.as_ns()),
        "XOFF sent at {} reached A at {} (expected {} + {pfc_bits_ns} + {DELAY})",
        xoff.at.as_ns(),
        got.at.as_ns(),
        xoff.at.as_ns()
    );
    // From then on A starts no data frame until it is released (XON or expiry).
    let released = sim
        .delivered
        .iter()
        .filter(|d| d.to == a.port(0) && d.at > got.at)
        .find(|d| pfc_quanta3(&d.frame).is_some_and(|(ce, q)| ce & 8 != 0 && q == 0))
        .map_or(got.at.as_ns() + 100_000, |d| d.at.as_ns());
    let data_while_paused = sim
        .sent
        .iter()
        .filter(|s| {
            s.from == a.port(0) && s.at >= got.at && s.at.as_ns() < released && link::is_roce_data(&s.frame)
        })
        .count();
    assert_eq!(data_while_paused, 0, "A sent data between {} and {released}", got.at.as_ns());
    // What A had in flight landed in PG 3's headroom: some, and at most two cable delays, the PFC frame
    // and one frame on each end at 100G (12.5 bytes per ns), in 256-byte cells; nothing was dropped.
    let wm =
        sim.switch(sw).mmu().port_watermarks(PortId::new(0), crate::model::mmu::WatermarkKind::Persistent);
    let frame = 4200 + 18 + WIRE_OVERHEAD_BYTES;
    let bound = (2 * DELAY + pfc_bits_ns) * 100_000 / 8_000 + 2 * frame + 2 * 256;
    assert!(wm.pg_headroom_bytes[3] > 0 && wm.pg_headroom_bytes[3] <= bound, "{wm:?} (bound {bound})");
    let counters = sim.switch(sw).port_counters(PortId::new(0)).unwrap();
    assert_eq!(counters.rx_drp, 0, "{counters:?}");
    assert!(sim.nic(a).flow_stats(1).unwrap().acked_bytes > 0);
}

#[test]
fn a_link_down_loses_what_is_put_on_it_and_the_flow_resumes_when_it_is_back() {
    let mut sim = pair();
    // A is sending; at 2 µs the link goes down (a frame may be on the wire: it is lost too).
    sim.run_until(Instant::from_ns(2_000));
    assert!(sim.link_is_up(A.port(0)));
    assert!(sim.set_link_up(B.port(0), false), "either end names the link");
    assert!(!sim.link_is_up(A.port(0)) && !sim.link_is_up(B.port(0)));
    let delivered = sim.delivered.len();
    sim.run_until(Instant::from_ns(3_000_000));
    assert_eq!(sim.delivered.len(), delivered, "nothing crosses a down link");
    let lost = sim.link_stats(A.port(0)).unwrap().lost + sim.link_stats(B.port(0)).unwrap().lost;
    assert!(lost > 0, "A's frames (retransmissions included) were lost");
    assert!(sim.nic(A).flow_stats(1).unwrap().acked_bytes < 10 * 1024);
    // Back up: go-back-N brings every message through.
    assert!(sim.set_link_up(A.port(0), true));
    sim.run_until(Instant::from_ns(60_000_000));
    assert_eq!(sim.nic(A).flow_stats(1).unwrap().acked_bytes, 10 * 1024);
    assert!(!sim.set_link_up(A.port(5), false), "a port without a link");
}

/// Two L2 switches joined by a 1 µs link, two 100G hosts on each: A and B send to C (an incast on
/// sw2's Ethernet0 that pauses sw2's uplink and so sw1), D sends to A. PFC on priority 3.
fn two_switches() -> Sim {
    let config = |local: [&str; 2], remote: [&str; 2]| {
        format!(
            r#"
DEVICE_METADATA: {{ localhost: {{ mac: "02:4c:53:00:00:01" }} }}
PORT: {{ Ethernet0: {{ speed: 100000, mtu: 9100 }}, Ethernet4: {{ speed: 100000, mtu: 9100 }}, Ethernet8: {{ speed: 100000, mtu: 9100 }} }}
VLAN: {{ Vlan10: {{ vlanid: 10 }} }}
VLAN_MEMBER:
  Vlan10|Ethernet0: {{ tagging_mode: untagged }}
  Vlan10|Ethernet4: {{ tagging_mode: untagged }}
  Vlan10|Ethernet8: {{ tagging_mode: untagged }}
FDB:
  Vlan10|{}: {{ port: Ethernet0 }}
  Vlan10|{}: {{ port: Ethernet4 }}
  Vlan10|{}: {{ port: Ethernet8 }}
  Vlan10|{}: {{ port: Ethernet8 }}
DSCP_TO_TC_MAP: {{ AZURE: {{ "3": "3" }} }}
TC_TO_PRIORITY_GROUP_MAP: {{ AZURE: {{ "3": "3" }} }}
PORT_QOS_MAP: {{ "Ethernet0,Ethernet4,Ethernet8": {{ dscp_to_tc_map: AZURE, tc_to_pg_map: AZURE, pfc_enable: "3" }} }}
BUFFER_ASIC: {{ global: {{ cell_size: 256 }} }}
BUFFER_POOL:
  ingress_lossless_pool: {{ type: ingress, mode: static, size: 20000000, xoff: 2000000 }}
  egress_lossless_pool: {{ type: egress, mode: static, size: 20000000 }}
BUFFER_PROFILE:
  pg_lossless: {{ pool: ingress_lossless_pool, size: 0, static_th: 20480, xoff: 409600, xon: 0, xon_offset: 2560 }}
  egress_lossless_profile: {{ pool: egress_lossless_pool, size: 0, static_th: 20000000 }}
BUFFER_PG: {{ "Ethernet0,Ethernet4,Ethernet8|3": {{ profile: pg_lossless }} }}
BUFFER_QUEUE: {{ "Ethernet0,Ethernet4,Ethernet8|3": {{ profile: egress_lossless_profile }} }}
"#,
            local[0], local[1], remote[0], remote[1]
        )
    };
    let macs = ["02:00:00:00:00:0a", "02:00:00:00:00:0b", "02:00:00:00:00:0c", "02:00:00:00:00:0d"];
    let switch = |yaml: String| {
        let mut s = Switch::new();
        s.apply(&ConfigDb::from_yaml_str(&yaml).unwrap(), Instant::ZERO).unwrap();
        Device::Switch(Box::new(s))
    };
    let host = |i: u8| {
        let mac = EthernetAddress([0x02, 0, 0, 0, 0, 0x0a + i]);
        let cfg = NicConfig {
            line_rate_mbps: 100_000,
            mtu: 4200,
            pfc_enable: 1 << 3,
            ..nic(mac, Ipv4Addr::new(10, 0, 0, 1 + i)).config().clone()
        };
        Device::Nic(Box::new(Nic::new(cfg).unwrap()))
    };
    let mut sim = Sim::with_seed(7);
    let sw1 = sim.add(switch(config([macs[0], macs[1]], [macs[2], macs[3]])));
    let (a, b) = (sim.add(host(0)), sim.add(host(1)));
    let sw2 = sim.add(switch(config([macs[2], macs[3]], [macs[0], macs[1]])));
    let (c, d) = (sim.add(host(2)), sim.add(host(3)));
    for (sw, hosts) in [(sw1, [a, b]), (sw2, [c, d])] {
        for (port, h) in hosts.into_iter().enumerate() {
            sim.connect(h.port(0), 100_000, sw.port(port), 100_000, Nanos::from_ns(100));
        }
    }
    sim.connect(sw1.port(2), 100_000, sw2.port(2), 100_000, Nanos::from_ns(1_000));
    let to = |i: u8| {
        let mac = EthernetAddress([0x02, 0, 0, 0, 0, 0x0a + i]);
        FlowConfig { dscp: 3, priority: 3, ..flow_to(Ipv4Addr::new(10, 0, 0, 1 + i), mac, 64 * 1024, 40) }
    };
    for (from, dst) in [(a, 2), (b, 2), (d, 0)] {
        sim.nic(from).add_flow(to(dst)).unwrap();
    }
    sim
}

/// Everything a run leaves behind that a report could show, as text.
fn outcome(sim: &mut Sim) -> String {
    let mut out = format!("now {} wakeups {}\n", sim.now(), sim.wakeups);
    for (t, id, e) in &sim.events {
        out += &format!("{t} {id} {e:?}\n");
    }
    for i in 0..sim.node_count() {
        let id = NodeId::new(i);
        match sim.device(id) {
            Device::Switch(_) => {
                for p in 0..3 {
                    let link = sim.link_stats(id.port(p));
                    out += &format!("{i}:{p} {:?} {link:?}\n", sim.switch(id).port_counters(PortId::new(p)));
                }
            }
            _ => {
                let n = sim.nic(id);
                out += &format!("{i} {:?} {:?}\n", n.counters(), n.flow_stats(1));
            }
        }
    }
    out
}

#[test]
fn parts_run_side_by_side_give_the_run_of_one() {
    let steps = [300_000u64, 301_000, 750_000, 2_000_000];
    let mut one = two_switches();
    for &t in &steps {
        one.run_until(Instant::from_ns(t));
    }
    let expected = outcome(&mut one);
    // The incast paused the uplink: the run exercises PFC across the parts' boundary.
    assert!(
        one.events.iter().any(|(_, id, e)| id.index() == 3 && matches!(e, Event::PfcXoff { .. })),
        "{expected}"
    );
    assert!(one.nic(NodeId::new(1)).flow_stats(1).unwrap().acked_bytes == 40 * 64 * 1024);

    let mut two = two_switches();
    assert_eq!(two.partition(2, Nanos::from_ns(500)), Some(Nanos::from_ns(1_000)));
    assert_eq!(two.part_count(), 2);
    for &t in &steps {
        two.run_until(Instant::from_ns(t));
    }
    assert_eq!(outcome(&mut two), expected);

    // Split after the start, with frames on the wires and wake-ups pending, and joined again.
    let mut later = two_switches();
    later.run_until(Instant::from_ns(steps[0]));
    later.partition(2, Nanos::from_ns(500));
    later.run_until(Instant::from_ns(steps[1]));
    later.run_until(Instant::from_ns(steps[2]));
    assert_eq!(later.partition(1, Nanos::ZERO), None);
    later.run_until(Instant::from_ns(steps[3]));
    assert_eq!(outcome(&mut later), expected);
}

#[test]
fn hosts_and_short_links_stay_with_their_switch() {
    let mut sim = two_switches();
    // The 1 µs uplink is the only link longer than 500 ns: two parts joined by it.
    assert_eq!(sim.partition(4, Nanos::from_ns(500)), Some(Nanos::from_ns(1_000)));
    assert_eq!(sim.part_count(), 2);
    // Shorter than 2 µs: everything is one group, in one part.
    assert_eq!(sim.partition(2, Nanos::from_ns(2_000)), None);
    assert_eq!(sim.part_count(), 1);
}
