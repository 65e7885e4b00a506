//! Scenario tests: two NICs back to back through a tiny link model (serialisation at the sender's line
//! rate + a propagation delay, optional loss or rewriting), all in virtual time. Every frame either NIC
//! emits is decoded with `wire::decode` and must be valid (IPv4 frames must be UDP/4791 with a BTH).

use super::packet::{self, DataHeader, Envelope};
use super::*;
use crate::sim::{self, Device, NodeId, Sim};
use crate::wire::{
    BthRepr, Decoded, EtherType, Ipv4Packet, L4, MacControlRepr, PfcRepr, decode, mac_control,
};

mod dcqcn_loop;

const A_MAC: EthernetAddress = EthernetAddress([0x02, 0, 0, 0, 0, 0x0a]);
const B_MAC: EthernetAddress = EthernetAddress([0x02, 0, 0, 0, 0, 0x0b]);
const A_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const B_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);
const A: NodeId = NodeId::new(0);
const B: NodeId = NodeId::new(1);
/// 25 Gb/s, IP MTU 1068 ⇒ 1024-byte payloads, 1082-byte frames, 1106 bytes of line time each.
const RATE_MBPS: u32 = 25_000;
const MTU: u32 = 1068;
const FRAME_LEN: u64 = 1082;

fn nic_config(mac: EthernetAddress, ip: Ipv4Addr) -> NicConfig {
    NicConfig { mac, ip, line_rate_mbps: RATE_MBPS, mtu: MTU, ..NicConfig::default() }
}

fn flow_to_b(id: u32) -> FlowConfig {
    FlowConfig { id, dst_ip: B_IP, dst_mac: B_MAC, dst_qp: 0x11 + id, ..FlowConfig::default() }
}

/// A frame a NIC put on the line.
#[derive(Debug, Clone)]
struct Sent {
    at: u64,
    from: NodeId,
    frame: Vec<u8>,
    decoded: Decoded,
}

impl Sent {
    fn bth(&self) -> Option<&BthRepr> {
        self.decoded.bth()
    }

    fn is_data(&self) -> bool {
        self.bth().is_some_and(|b| u8::from(b.opcode) <= 0x0a)
    }

    fn data_header(&self) -> Option<DataHeader> {
        let Some(L4::Udp { offset, .. }) = self.decoded.l4() else { return None };
        DataHeader::parse(&self.frame[offset + 8 + 12..]).filter(|_| self.is_data())
    }

    fn pfc(&self) -> Option<PfcRepr> {
        match self.decoded.l3 {
            L3::MacControl(MacControlRepr::Pfc(p)) => Some(p),
            _ => None,
        }
    }
}

/// Decides the fate of a frame on the link: `false` drops it; it may be rewritten in place.
type Filter = Box<dyn FnMut(&Sent, &mut Vec<u8>) -> bool>;

/// Two NICs back to back on the virtual-time driver ([`crate::sim::Sim`]).
struct Harness {
    sim: Sim,
    sent: Vec<Sent>,
    /// (time, NIC, frame) of every frame delivered.
    delivered: Vec<(u64, NodeId, Decoded)>,
    keep_log: bool,
}

/// Every frame a NIC emits must decode, and IPv4 ones be RoCEv2 with the right ECN codepoint.
fn check_emitted(from: NodeId, frame: &[u8]) -> Decoded {
    let decoded = decode(frame).unwrap_or_else(|e| panic!("NIC {from} emitted an invalid frame: {e}"));
    if let L3::Ipv4 { header, l4 } = &decoded.l3 {
        let L4::Udp { header: udp, bth, .. } = l4 else { panic!("IPv4 frame without UDP") };
        assert_eq!(udp.dst_port, 4791);
        assert!(bth.is_some(), "RoCEv2 frame without BTH");
        let ecn_ok = if bth.is_some_and(|b| u8::from(b.opcode) <= 0x0a) {
            header.ecn == Ecn::Ect0
        } else {
            header.ecn == Ecn::NotEct
        };
        assert!(ecn_ok, "data is ECT(0), ACK/NAK/CNP not ECT");
    }
    decoded
}

impl Harness {
    fn new(a: NicConfig, b: NicConfig, delay_ns: u64) -> Harness {
        let (rate_a, rate_b) = (a.line_rate_mbps, b.line_rate_mbps);
        let mut sim = Sim::new();
        let a = sim.add(Device::Nic(Box::new(Nic::new(a).unwrap())));
        let b = sim.add(Device::Nic(Box::new(Nic::new(b).unwrap())));
        assert_eq!((a, b), (A, B));
        sim.connect(A.port(0), rate_a, B.port(0), rate_b, Nanos::from_ns(delay_ns));
        sim.keep_log = true;
        let mut h = Harness { sim, sent: Vec::new(), delivered: Vec::new(), keep_log: true };
        h.set_filter(None);
        h
    }

    fn pair() -> Harness {
        Harness::new(nic_config(A_MAC, A_IP), nic_config(B_MAC, B_IP), 1_000)
    }

    fn nic(&mut self, i: NodeId) -> &mut Nic {
        self.sim.nic(i)
    }

    /// Checks every emitted frame, then lets `filter` drop or rewrite it.
    fn set_filter(&mut self, mut filter: Option<Filter>) {
        self.sim.set_tap(Box::new(move |s: &sim::Sent, frame: &mut Vec<u8>| {
            let sent = Sent {
                at: s.at.as_ns(),
                from: s.from.node,
                frame: s.frame.clone(),
                decoded: check_emitted(s.from.node, &s.frame),
            };
            filter.as_mut().is_none_or(|f| f(&sent, frame))
        }));
    }

    /// Delivers `frame` to NIC `to` at `at`, as if it came off the link.
    fn inject(&mut self, to: NodeId, at: u64, frame: Vec<u8>) {
        self.sim.inject(to.port(0), Instant::from_ns(at), frame);
    }

    /// Runs events up to `end` (inclusive), or until both NICs are idle and the link is empty.
    fn run_until(&mut self, end: u64) {
        self.sim.keep_log = self.keep_log;
        self.sim.run_until(Instant::from_ns(end));
        for s in self.sim.sent.drain(..) {
            let decoded = decode(&s.frame).unwrap();
            self.sent.push(Sent { at: s.at.as_ns(), from: s.from.node, frame: s.frame, decoded });
        }
        for d in self.sim.delivered.drain(..) {
            self.delivered.push((d.at.as_ns(), d.to.node, decode(&d.frame).unwrap()));
        }
    }

    fn data_from(&self, from: NodeId) -> impl Iterator<Item = &Sent> {
        self.sent.iter().filter(move |s| s.from == from && s.is_data())
    }
}

/// xorshift64*: a deterministic loss process for the tests.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

fn pfc_frame(from: EthernetAddress, repr: PfcRepr) -> Vec<u8> {
    let mut frame = vec![0u8; mac_control::FRAME_LEN];
    MacControlRepr::Pfc(repr).emit_frame(from, &mut frame);
    frame
}

/// A CNP from B to the QP `qp` of A.
fn cnp_to_a(qp: u32) -> Vec<u8> {
    let env = Envelope {
        src_mac: B_MAC,
        dst_mac: A_MAC,
        vlan: None,
        priority: 6,
        src_ip: B_IP,
        dst_ip: A_IP,
        dscp: 48,
        ecn: Ecn::NotEct,
        ident: 0,
        ttl: 64,
        udp_src_port: 1234,
    };
    packet::rocev2_frame(&env, &packet::bth(Opcode::Cnp, qp, 0, false), bth::CNP_PAYLOAD_LEN, |_| {})
}

#[test]
fn delivers_messages_in_order_at_line_rate() {
    let mut h = Harness::pair();
    // PSNs wrap in the middle of the run.
    let flow = FlowConfig { messages: Some(100), initial_psn: 0xff_fff0, ..flow_to_b(1) };
    let qp = h.nic(A).add_flow(flow).unwrap();
    assert_eq!(qp, FIRST_AUTO_QP);
    h.run_until(u64::MAX / 2);

    let total = 100 * 65536;
    let rx = h.nic(B).rx_stats(A_IP, 0x12).unwrap();
    assert_eq!((rx.messages_received, rx.received_bytes), (100, total));
    assert_eq!((rx.out_of_order, rx.duplicates, rx.naks_sent, rx.psn_gaps), (0, 0, 0, 0));
    assert_eq!(rx.received_packets, 6400);
    assert_eq!(rx.expected_psn, packet::psn_add(0xff_fff0, 6400));
    let tx = h.nic(A).flow_stats(1).unwrap();
    assert_eq!((tx.acked_bytes, tx.sent_bytes, tx.retransmitted_packets), (total, total, 0));
    assert_eq!((tx.messages_started, tx.messages_completed), (100, 100));
    assert!(h.nic(A).all_flows_finished());
    // Every packet is acknowledged (ack_every = 1).
    assert_eq!((tx.acks_received, rx.acks_sent), (6400, 6400));

    // Goodput: 1024 payload bytes per 1106 bytes of line time at 25 Gb/s, minus one RTT over 2.3 ms.
    let ideal_mbps = 25_000.0 * 1024.0 / (FRAME_LEN + WIRE_OVERHEAD_BYTES) as f64;
    assert!(tx.goodput_mbps > 0.995 * ideal_mbps && tx.goodput_mbps <= ideal_mbps, "{}", tx.goodput_mbps);
    assert!(
        rx.goodput_mbps > 0.995 * ideal_mbps && rx.goodput_mbps <= 1.001 * ideal_mbps,
        "{}",
        rx.goodput_mbps
    );

    // On the wire: consecutive PSNs (wrapping), opcodes by position, AckReq on the last of a message.
    let data: Vec<_> = h.data_from(A).collect();
    assert_eq!(data.len(), 6400);
    for (i, s) in data.iter().enumerate() {
        let b = s.bth().unwrap();
        assert_eq!(b.psn, packet::psn_add(0xff_fff0, i as u64));
        let expected = match i % 64 {
            0 => Opcode::RcSendFirst,
            63 => Opcode::RcSendLast,
            _ => Opcode::RcSendMiddle,
        };
        assert_eq!((b.opcode, b.ack_request, b.dest_qp), (expected, i % 64 == 63, 0x12));
        assert_eq!(s.frame.len() as u64, FRAME_LEN);
        assert_eq!(s.decoded.dscp(), Some(26));
        let hdr = s.data_header().unwrap();
        assert_eq!((hdr.seq, hdr.message_id, hdr.flow_id, hdr.src_qp), (i as u64, i as u64 / 64, 1, qp));
    }
    // Back-to-back frames on the line: 1106 B at 25 Gb/s = 353.92 ns.
    let gaps: Vec<u64> = data.windows(2).take(100).map(|w| w[1].at - w[0].at).collect();
    assert!(gaps.iter().all(|&g| g == 353 || g == 354), "{gaps:?}");

    // One-way latency: serialisation (354 ns) + 1 µs, no queueing.
    assert!(rx.latency.min_ns >= 1_353 && rx.latency.p999_ns <= 1_356, "{:?}", rx.latency);
    assert_eq!(rx.latency.count, 6400);
    // A message: 64 × 353.92 ns + 1 µs.
    assert!((23_600..=23_700).contains(&rx.message_latency.p50_ns), "{:?}", rx.message_latency);
}

#[test]
fn pfc_xoff_pauses_for_quanta_and_xon_resumes() {
    let mut h = Harness::pair();
    h.nic(A).add_flow(flow_to_b(1)).unwrap();
    h.inject(A, 100_000, pfc_frame(B_MAC, PfcRepr::xoff(0b1000, 1000)));
    h.run_until(150_000);
    // 1000 quanta × 512 bits at 25 Gb/s = 20 480 ns.
    let pause_end = 100_000 + mac_control::quanta_to_ns(1000, RATE_MBPS);
    assert_eq!(pause_end, 120_480);
    let before = h.data_from(A).filter(|s| s.at <= 100_000).last().unwrap().at;
    assert!(before > 100_000 - 354, "the flow was sending up to the XOFF");
    let after: Vec<u64> = h.data_from(A).map(|s| s.at).filter(|&t| t > 100_000).collect();
    assert_eq!(after[0], pause_end, "nothing during the pause, resumes exactly at its end");
    assert_eq!(h.nic(A).pause_ns(3), 20_480);

    // XOFF for the maximum, then XON 10 µs later: resumes at once.
    h.inject(A, 200_000, pfc_frame(B_MAC, PfcRepr::xoff(0b1000, 0xffff)));
    h.inject(A, 210_000, pfc_frame(B_MAC, PfcRepr::xon(0b1000)));
    h.run_until(250_000);
    let after: Vec<u64> = h.data_from(A).map(|s| s.at).filter(|&t| t > 200_000).collect();
    assert_eq!(after[0], 210_000);
    assert_eq!(h.nic(A).pause_ns(3), 20_480 + 10_000);
    let c = h.nic(A).pfc_counters(3);
    assert_eq!((c.rx, c.rx_xon, c.rx_pause_transitions), (3, 1, 2));

    // A priority outside pfc_enable (0b0001_1000) is not honoured.
    h.inject(A, 300_000, pfc_frame(B_MAC, PfcRepr::xoff(0b1, 0xffff)));
    h.run_until(310_000);
    assert!(h.data_from(A).any(|s| s.at > 300_000 && s.at < 301_000));
    assert_eq!(h.nic(A).counters().rx_pfc_frames, 4);
}

#[test]
fn paused_priority_sends_nothing_while_another_keeps_sending() {
    let mut h = Harness::pair();
    h.nic(A).add_flow(FlowConfig { dscp: 26, priority: 3, ..flow_to_b(1) }).unwrap();
    h.nic(A).add_flow(FlowConfig { dscp: 34, priority: 4, ..flow_to_b(2) }).unwrap();
    h.inject(A, 50_000, pfc_frame(B_MAC, PfcRepr::xoff(0b1000, 0xffff)));
    h.run_until(1_000_000);
    let window = |s: &&Sent| s.at > 50_000 && s.at < 1_000_000;
    let during: Vec<_> = h.data_from(A).filter(window).collect();
    assert!(during.iter().all(|s| s.decoded.dscp() == Some(34)), "only priority 4 goes out");
    // Priority 4 takes the whole line: 950 µs / 353.92 ns ≈ 2684 frames.
    assert!(during.len() >= 2680, "{}", during.len());
    // Before the pause they shared the line round-robin.
    let before: Vec<_> = h.data_from(A).filter(|s| s.at < 50_000).map(|s| s.decoded.dscp()).collect();
    let p3 = before.iter().filter(|d| **d == Some(26)).count();
    assert!(p3.abs_diff(before.len() - p3) <= 1);
    assert!(h.nic(A).pause_ns(3) >= 949_000);
    assert_eq!(h.nic(A).pause_ns(4), 0);
    assert_eq!(h.nic(A).paused_priorities(), 0b1000);
}

#[test]
fn cnp_cuts_the_rate_as_dcqcn_says_and_the_timer_recovers_it() {
    let mut a = nic_config(A_MAC, A_IP);
    a.dcqcn.rpg_byte_reset_64bytes = 0; // timer-only (HPCC's variant) so the instants are the timer's
    let mut h = Harness::new(a, nic_config(B_MAC, B_IP), 1_000);
    let qp = h.nic(A).add_flow(flow_to_b(1)).unwrap();
    let t0 = 10_000;
    h.inject(A, t0, cnp_to_a(qp));
    h.run_until(t0 + 4_000);
    let line = 25_000_000_000u64;
    assert_eq!(h.nic(A).flow_dcqcn(1).unwrap().rate_bps(), line, "first CNP: no change before the check");
    h.run_until(t0 + 4_001);
    // α = 1023/1024 × (1019/1024)^4 after four 1 µs decays (kept in 2^-30); rate × (1 − α/2).
    let alpha = (0..4).fold(1023u64 << 20, |a, _| (1019 * a) >> 10);
    let cut = line - ((u128::from(line) * u128::from(alpha)) >> 31) as u64;
    assert_eq!(cut / 1_000_000, 12_754, "25 G × (1 − 0.97964/2)");
    let s = h.nic(A).flow_stats(1).unwrap();
    assert_eq!(s.cnps_received, 1);
    assert_eq!(h.nic(A).flow_dcqcn(1).unwrap().rate_bps(), cut);
    assert!((s.rate_mbps_now - cut as f64 / 1e6).abs() < 1e-6);
    let d = s.dcqcn.unwrap();
    assert_eq!((d.rate_decreases, d.cnps), (1, 1));

    // The flow is paced at the cut rate: bytes of line time over 100 µs.
    h.run_until(t0 + 300_000);
    let line_bits: u64 = h
        .data_from(A)
        .filter(|s| s.at >= t0 + 50_000 && s.at < t0 + 250_000)
        .map(|s| (s.frame.len() as u64 + WIRE_OVERHEAD_BYTES) * 8)
        .sum();
    let measured_bps = line_bits * 5_000; // over 200 µs
    assert!(measured_bps.abs_diff(cut) < cut / 100, "{measured_bps} vs {cut}");

    // The rate timer: fast recovery 300 µs after the decrease, then additive increase.
    h.run_until(t0 + 304_000);
    assert_eq!(h.nic(A).flow_dcqcn(1).unwrap().rate_bps(), cut);
    h.run_until(t0 + 304_001);
    let r1 = (cut + line).div_ceil(2);
    assert_eq!(h.nic(A).flow_dcqcn(1).unwrap().rate_bps(), r1);
    h.run_until(t0 + 604_001);
    assert_eq!(h.nic(A).flow_dcqcn(1).unwrap().rate_bps(), (r1 + line).div_ceil(2));
    // No more CNPs: back at the line rate within ~40 timer periods, and the timer stops.
    h.run_until(t0 + 20_000_000);
    assert_eq!(h.nic(A).flow_dcqcn(1).unwrap().rate_bps(), line);
    assert!(!h.nic(A).flow_dcqcn(1).unwrap().is_limited());
}

#[test]
fn notification_point_paces_cnps_per_qp() {
    let mut h = Harness::pair();
    let qp1 = h.nic(A).add_flow(FlowConfig { dcqcn: false, ..flow_to_b(1) }).unwrap();
    let qp2 = h.nic(A).add_flow(FlowConfig { dcqcn: false, ..flow_to_b(2) }).unwrap();
    // Every data packet A → B is CE-marked.
    h.set_filter(Some(Box::new(|s: &Sent, frame: &mut Vec<u8>| {
        if s.from == A && s.is_data() {
            let l3 = s.decoded.l3_offset;
            assert!(Ipv4Packet::new_checked(&mut frame[l3..]).unwrap().set_ecn_ce());
        }
        true
    })));
    h.run_until(1_000_000);
    for (qp, dst_qp) in [(qp1, 0x12), (qp2, 0x13)] {
        let cnps: Vec<&Sent> = h
            .sent
            .iter()
            .filter(|s| s.from == B && s.bth().is_some_and(|b| b.opcode.is_cnp() && b.dest_qp == qp))
            .collect();
        // The first CE arrives at ~1.35 µs; then one CNP per 50 µs: 20 in 1 ms.
        assert_eq!(cnps.len(), 20, "QP {qp:#x}");
        for w in cnps.windows(2) {
            assert!(w[1].at - w[0].at >= 50_000, "{} → {}", w[0].at, w[1].at);
            assert!(w[1].at - w[0].at < 51_000, "continuous CE: one CNP per interval");
        }
        let c = cnps[0];
        let b = c.bth().unwrap();
        assert!(b.becn);
        assert_eq!((c.decoded.dscp(), c.frame.len()), (Some(48), 14 + 20 + 8 + 12 + 16 + 4));
        let rx = h.nic(B).rx_stats(A_IP, dst_qp).unwrap();
        assert_eq!(rx.cnps_sent, 20);
        assert_eq!(rx.ce_packets, rx.received_packets);
        let tx = h.nic(A).flow_stats(qp - FIRST_AUTO_QP + 1).unwrap();
        assert!(tx.cnps_received >= 19, "{}", tx.cnps_received);
        assert!(tx.dcqcn.is_none(), "dcqcn disabled: CNPs only counted");
    }
}

#[test]
fn go_back_n_recovers_a_single_drop_with_exactly_the_packets_in_flight() {
    let mut h = Harness::pair();
    let flow = FlowConfig { messages: Some(1), message_bytes: 200 * 1024, ..flow_to_b(1) };
    h.nic(A).add_flow(flow).unwrap();
    let mut dropped = false;
    h.set_filter(Some(Box::new(move |s: &Sent, _: &mut Vec<u8>| {
        if !dropped && s.data_header().is_some_and(|d| d.seq == 50) {
            dropped = true;
            return false;
        }
        true
    })));
    h.run_until(u64::MAX / 2);
    // The NAK reaches A at T; every packet from seq 50 that A sent before T is sent again.
    let nak_at = h
        .delivered
        .iter()
        .find(|(_, to, d)| *to == A && d.bth().is_some_and(|b| b.opcode == Opcode::RcAck && b.psn == 50))
        .map(|(t, ..)| *t)
        .unwrap();
    let in_flight =
        h.data_from(A).filter(|s| s.at < nak_at && s.data_header().unwrap().seq >= 50).count() as u64;
    let tx = h.nic(A).flow_stats(1).unwrap();
    let rx = h.nic(B).rx_stats(A_IP, 0x12).unwrap();
    assert!(in_flight >= 5, "{in_flight}: serialisation + 2 µs RTT at 25 Gb/s");
    assert_eq!(tx.retransmitted_packets, in_flight);
    assert_eq!(tx.sent_packets, 200 + in_flight);
    assert_eq!((tx.naks_received, tx.timeouts), (1, 0));
    assert_eq!(rx.out_of_order, in_flight - 1);
    assert_eq!((rx.naks_sent, rx.psn_gaps, rx.duplicates), (1, 1, 0));
    assert_eq!((rx.messages_received, rx.received_bytes), (1, 200 * 1024));
    assert_eq!(tx.acked_bytes, 200 * 1024);
    // The retransmissions start at seq 50, in order.
    let resent: Vec<u64> =
        h.data_from(A).filter(|s| s.at >= nak_at).take(3).map(|s| s.data_header().unwrap().seq).collect();
    assert_eq!(resent, [50, 51, 52]);
    let nak = h
        .sent
        .iter()
        .find(|s| s.from == B && s.bth().is_some_and(|b| b.opcode == Opcode::RcAck && b.psn == 50));
    let Some(L4::Udp { offset, .. }) = nak.unwrap().decoded.l4() else { panic!() };
    let aeth = Aeth::parse(&nak.unwrap().frame[offset + 20..]).unwrap();
    assert_eq!(aeth.syndrome, Aeth::SYNDROME_NAK_PSN_SEQUENCE_ERROR);
}

/// Runs one flow of back-to-back messages of `message_bytes` for 20 ms with a 1/256 random loss of data
/// packets (the same loss process for every run).
fn lossy_run(mode: Retransmit, message_bytes: u64) -> (FlowStats, RxStats) {
    let cfg = |mac, ip| NicConfig { retransmit: mode, ..nic_config(mac, ip) };
    let mut h = Harness::new(cfg(A_MAC, A_IP), cfg(B_MAC, B_IP), 1_000);
    h.keep_log = false;
    h.nic(A).add_flow(FlowConfig { message_bytes, ..flow_to_b(1) }).unwrap();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    h.set_filter(Some(Box::new(move |s: &Sent, _: &mut Vec<u8>| {
        !(s.is_data() && rng.next().is_multiple_of(256))
    })));
    h.run_until(20_000_000);
    (h.nic(A).flow_stats(1).unwrap(), h.nic(B).rx_stats(A_IP, 0x12).unwrap())
}

#[test]
fn go_back_0_livelocks_under_1_in_256_drop_where_go_back_n_progresses() {
    let (gbn, gbn_rx) = lossy_run(Retransmit::GoBackN, 1 << 20);
    let (gb0, gb0_rx) = lossy_run(Retransmit::GoBack0, 1 << 20);
    let (gb0_4m, _) = lossy_run(Retransmit::GoBack0, 4 << 20);
    // 20 ms of a 25 Gb/s line ≈ 57.9 MB of payload.
    let line_bytes = 20e-3 * 25e9 / 8.0 * 1024.0 / 1106.0;
    for s in [&gbn, &gb0, &gb0_4m] {
        assert!(s.sent_bytes as f64 > 0.95 * line_bytes, "the link stays busy: {}", s.sent_bytes);
    }
    // Go-back-N loses about one RTT of packets per drop: ~90 % goodput.
    assert!(gbn.acked_bytes as f64 > 0.85 * line_bytes, "go-back-N goodput {}", gbn.acked_bytes);
    // Go-back-0 with 1 MiB (1024 packets) messages: a pass survives with (255/256)^1024 ≈ 1.8 %, and a
    // failed pass ends at its first drop (~256 packets): ~5 messages in 20 ms instead of ~50.
    assert!(gbn.acked_bytes > 5 * gb0.acked_bytes, "GBN {} vs GB0 {}", gbn.acked_bytes, gb0.acked_bytes);
    assert!(gb0.retransmitted_packets > 5 * gbn.retransmitted_packets);
    // With 4 MiB messages a pass survives with 1.1e-7: no message ever completes (docs/nic.md, "Loss
    // recovery").
    assert_eq!((gb0_4m.messages_completed, gb0_4m.acked_bytes), (0, 0));
    // The receivers agree with the senders on whole messages.
    assert!(gbn_rx.messages_received.abs_diff(gbn.messages_completed) <= 1);
    assert!(gb0_rx.messages_received.abs_diff(gb0.messages_completed) <= 1);
}

#[test]
fn lost_acks_are_recovered_by_the_timeout_and_duplicate_acks() {
    let mut h = Harness::pair();
    h.nic(A).add_flow(FlowConfig { messages: Some(1), message_bytes: 10 * 1024, ..flow_to_b(1) }).unwrap();
    // Every ACK of the first transmission is lost.
    h.set_filter(Some(Box::new(|s: &Sent, _: &mut Vec<u8>| !(s.from == B && s.at < 1_000_000))));
    h.run_until(u64::MAX / 2);
    let tx = h.nic(A).flow_stats(1).unwrap();
    let rx = h.nic(B).rx_stats(A_IP, 0x12).unwrap();
    // The timeout resends from the first packet; the receiver answers the first duplicate with an ACK of
    // everything, which stops the resending one round trip later (~7 packets at 25 Gb/s).
    assert_eq!((tx.timeouts, tx.acked_bytes), (1, 10 * 1024));
    assert!((1..10).contains(&tx.retransmitted_packets), "{}", tx.retransmitted_packets);
    assert_eq!(rx.duplicates, tx.retransmitted_packets);
    assert_eq!((rx.messages_received, rx.received_bytes), (1, 10 * 1024));
    assert!(rx.acks_sent > 10, "duplicates are acknowledged");
    assert!(h.nic(A).all_flows_finished());
}

#[test]
fn time_bounded_flow_starts_no_message_after_until() {
    let mut h = Harness::pair();
    // A 64 KiB message takes 64 × 353.92 ns = 22.65 µs at 25 Gb/s: messages start at 10, 32.7, 55.3,
    // 78.0 and 100.6 µs; the last is after `until` (100 µs) and does not start. The fourth is acknowledged
    // one packet time + 1.35 µs + ACK time later.
    let flow = FlowConfig { start_ns: 10_000, until_ns: Some(100_000), ..flow_to_b(1) };
    h.nic(A).add_flow(flow).unwrap();
    h.run_until(u64::MAX / 2);
    assert_eq!(h.data_from(A).next().unwrap().at, 10_000);
    let tx = h.nic(A).flow_stats(1).unwrap();
    assert_eq!((tx.messages_started, tx.messages_completed, tx.acked_bytes), (4, 4, 4 * 65536));
    assert!(tx.finished_ns.is_some_and(|t| t > 100_600 && t < 104_000), "{:?}", tx.finished_ns);
    assert!(h.nic(A).all_flows_finished());
}

#[test]
fn retransmission_timeout_recovers_a_lost_tail() {
    let mut h = Harness::pair();
    h.nic(A).add_flow(FlowConfig { messages: Some(1), message_bytes: 10 * 1024, ..flow_to_b(1) }).unwrap();
    let mut dropped = false;
    h.set_filter(Some(Box::new(move |s: &Sent, _: &mut Vec<u8>| {
        if !dropped && s.data_header().is_some_and(|d| d.seq == 9) {
            dropped = true;
            return false;
        }
        true
    })));
    h.run_until(u64::MAX / 2);
    let tx = h.nic(A).flow_stats(1).unwrap();
    assert_eq!((tx.timeouts, tx.retransmitted_packets, tx.naks_received), (1, 1, 0));
    assert_eq!((tx.acked_bytes, tx.messages_completed), (10 * 1024, 1));
    let rx = h.nic(B).rx_stats(A_IP, 0x12).unwrap();
    assert_eq!((rx.messages_received, rx.out_of_order, rx.naks_sent), (1, 0, 0));
    // Retransmitted one RTO after the last ACK progress (the ACK of seq 8).
    let last_ack = h
        .delivered
        .iter()
        .filter(|(_, to, d)| *to == A && d.bth().is_some_and(|b| b.opcode == Opcode::RcAck && b.psn == 8))
        .map(|(t, ..)| *t)
        .next()
        .unwrap();
    let resent = h.data_from(A).last().unwrap();
    assert_eq!(resent.data_header().unwrap().seq, 9);
    assert_eq!(resent.at, last_ack + 4_194_304);
    assert!(h.nic(A).all_flows_finished());
}

#[test]
fn storm_mode_emits_xoff_at_the_interval_and_silences_the_peer() {
    let mut h = Harness::pair();
    h.nic(B).add_flow(FlowConfig { dst_ip: A_IP, dst_mac: A_MAC, ..FlowConfig::default() }).unwrap();
    h.nic(A).set_storm(0b1000, Nanos::from_ns(10_000));
    assert_eq!(h.nic(A).storm_priorities(), 0b1000);
    h.run_until(100_000);
    let storm: Vec<&Sent> = h.sent.iter().filter(|s| s.from == A && s.pfc().is_some()).collect();
    let times: Vec<u64> = storm.iter().map(|s| s.at).collect();
    assert_eq!(times, (0..=100_000).step_by(10_000).collect::<Vec<_>>());
    for s in &storm {
        assert_eq!(s.pfc().unwrap(), PfcRepr::xoff(0b1000, 0xffff));
        assert_eq!(s.decoded.ethernet.dst_addr, EthernetAddress::MAC_CONTROL);
    }
    assert_eq!(h.nic(A).pfc_counters(3).tx, 11);
    // B paused from the first XOFF's arrival (60 B + 24 at 25 Gb/s = 27 ns, + 1 µs) on.
    assert!(h.data_from(B).all(|s| s.at <= 1_027));
    assert!(h.nic(B).pause_ns(3) >= 98_000);
    // Stop: no more XOFF, B resumes when the last one expires (65535 quanta = 1.342 ms).
    h.nic(A).set_storm(0, Nanos::ZERO);
    h.run_until(2_000_000);
    assert!(h.sent.iter().filter(|s| s.from == A && s.pfc().is_some()).all(|s| s.at <= 100_000));
    let resumed = h.data_from(B).find(|s| s.at > 100_000).unwrap().at;
    assert_eq!(resumed, 100_000 + 1_027 + mac_control::quanta_to_ns(0xffff, RATE_MBPS));
}

#[test]
fn arp_request_for_our_address_is_answered() {
    let mut nic = Nic::new(nic_config(A_MAC, A_IP)).unwrap();
    let request = |target| ArpRepr {
        operation: ArpOperation::Request,
        source_hardware_addr: B_MAC,
        source_protocol_addr: B_IP,
        target_hardware_addr: EthernetAddress::default(),
        target_protocol_addr: target,
    };
    let frame = |r: ArpRepr| {
        crate::wire::build::ethernet(
            B_MAC,
            EthernetAddress::BROADCAST,
            None,
            EtherType::Arp,
            &crate::wire::build::arp(&r),
        )
    };
    nic.handle_frame(&frame(request(Ipv4Addr::new(10, 0, 0, 99))), Instant::from_ns(0));
    assert_eq!(nic.poll_at(), None);
    assert_eq!(nic.counters().rx_ignored, 1);
    nic.handle_frame(&frame(request(A_IP)), Instant::from_ns(10));
    assert_eq!(nic.poll_at(), Some(Instant::from_ns(10)));
    let reply = decode(&nic.poll_transmit(Instant::from_ns(10)).unwrap()).unwrap();
    assert_eq!((reply.ethernet.src_addr, reply.ethernet.dst_addr), (A_MAC, B_MAC));
    let L3::Arp(arp) = reply.l3 else { panic!("{reply:?}") };
    assert_eq!(
        arp,
        ArpRepr {
            operation: ArpOperation::Reply,
            source_hardware_addr: A_MAC,
            source_protocol_addr: A_IP,
            target_hardware_addr: B_MAC,
            target_protocol_addr: B_IP,
        }
    );
    assert_eq!(nic.poll_transmit(Instant::from_ns(10)), None, "the line is busy with the reply");
    assert_eq!(nic.poll_at(), None);
    assert_eq!(nic.counters().tx_arp_replies, 1);
}

#[test]
fn gateway_vlan_ack_coalescing_and_rate_cap() {
    const GW: EthernetAddress = EthernetAddress([0x02, 0, 0, 0, 0, 0xee]);
    let a = NicConfig { gateway_mac: Some(GW), vlan_id: Some(100), ..nic_config(A_MAC, A_IP) };
    let b = NicConfig { ack_every: 4, ..nic_config(B_MAC, B_IP) };
    let mut h = Harness::new(a, b, 1_000);
    let flow =
        FlowConfig { messages: Some(10), message_bytes: 16 * 1024, rate_mbps: Some(5_000), ..flow_to_b(1) };
    h.nic(A).add_flow(flow).unwrap();
    // The "router": frames from A arrive addressed to the gateway, and leave it towards B.
    h.set_filter(Some(Box::new(|s: &Sent, frame: &mut Vec<u8>| {
        if s.from == A {
            assert_eq!(s.decoded.ethernet.dst_addr, GW);
            frame[..6].copy_from_slice(&B_MAC.0);
        }
        true
    })));
    h.run_until(u64::MAX / 2);
    for s in h.sent.iter().filter(|s| s.from == A) {
        assert_eq!(s.decoded.ethernet.dst_addr, GW);
        let tag = s.decoded.vlan.unwrap();
        assert_eq!((tag.vid, tag.pcp), (100, 3));
    }
    // 16 packets per message, an ACK every 4 in-order packets (the 4th of them also the AckReq'd last).
    let rx = h.nic(B).rx_stats(A_IP, 0x12).unwrap();
    assert_eq!((rx.messages_received, rx.acks_sent), (10, 40));
    // Paced at 5 Gb/s of line time: (1082 + 4 (tag) + 24) B → 1776 ns apart.
    let data: Vec<u64> = h.data_from(A).map(|s| s.at).collect();
    assert_eq!(data.len(), 160);
    assert!(data.windows(2).all(|w| w[1] - w[0] == 1_776), "{:?}", &data[..4]);
    let tx = h.nic(A).flow_stats(1).unwrap();
    assert_eq!(tx.rate_mbps_now, 5_000.0);
}

#[test]
fn config_validation_and_serde() {
    assert!(Nic::new(NicConfig { line_rate_mbps: 0, ..NicConfig::default() }).is_err());
    let err = Nic::new(NicConfig { mtu: 64, ..NicConfig::default() }).unwrap_err();
    assert_eq!(err.to_string(), "NicConfig.mtu: 64 is outside 128..=9216");
    let mut bad = NicConfig::default();
    bad.dcqcn.rpg_min_dec_fac = 101;
    assert!(Nic::new(bad).unwrap_err().to_string().starts_with("NicConfig.dcqcn: rpg_min_dec_fac"));
    let mut nic = Nic::new(NicConfig::default()).unwrap();
    assert_eq!(nic.add_flow(FlowConfig { id: 1, src_qp: 0x100, ..FlowConfig::default() }), Ok(0x100));
    assert_eq!(nic.add_flow(FlowConfig { id: 2, ..FlowConfig::default() }), Ok(0x101));
    assert!(nic.add_flow(FlowConfig { id: 2, ..FlowConfig::default() }).is_err());
    assert!(nic.add_flow(FlowConfig { id: 3, message_bytes: 0, ..FlowConfig::default() }).is_err());
    assert!(nic.remove_flow(1).is_some() && nic.flow_stats(1).is_none());

    let yaml = "mac: 02:00:00:00:00:07\nip: 10.1.1.1\nline_rate_mbps: 25000\ngateway_mac: 02:00:00:00:00:fe\n\
                retransmit: go_back_0\ndcqcn:\n  rpg_time_reset_ns: 55000\n";
    let cfg: NicConfig = serde_yaml::from_str(yaml).unwrap();
    assert_eq!(cfg.mac, EthernetAddress([2, 0, 0, 0, 0, 7]));
    assert_eq!(cfg.gateway_mac, Some(EthernetAddress([2, 0, 0, 0, 0, 0xfe])));
    assert_eq!(
        (cfg.retransmit, cfg.dcqcn.rpg_time_reset_ns, cfg.dcqcn.dce_tcp_g),
        (Retransmit::GoBack0, 55_000, 1019)
    );
    let back: NicConfig = serde_yaml::from_str(&serde_yaml::to_string(&cfg).unwrap()).unwrap();
    assert_eq!(back, cfg);
    let report = serde_yaml::to_string(&nic.report()).unwrap();
    assert!(report.contains("flows:") && report.contains("pause_ns"));
}

/// Sends `flow` (a few messages) from A at the current time, runs 1 ms, and returns its final statistics.
fn one_run(h: &mut Harness, flow: FlowConfig, end: u64) -> FlowStats {
    let id = flow.id;
    h.nic(A).add_flow(flow).unwrap();
    h.run_until(end);
    h.nic(A).remove_flow(id).unwrap()
}

#[test]
fn every_requester_qp_is_its_own_receiving_qp() {
    // The hardening issue's defect in the model: a second run of a sender from the same IP, naming the same
    // receiving QP, was taken for the first run (its PSNs for duplicates) and never got an ACK it could use.
    let mut h = Harness::pair();
    let messages = 10;
    let total = messages * 65536;
    let run = |id, src_qp, initial_psn| FlowConfig {
        src_qp,
        dst_qp: 0x12,
        initial_psn,
        messages: Some(messages),
        ..flow_to_b(id)
    };
    let first = one_run(&mut h, run(1, 0x100, 0), 1_000_000);
    // A new run: a fresh QPN and initial PSN (as rocehost draws them), the same DestQP.
    let second = one_run(&mut h, run(2, 0x2345, 0x12_3456), 2_000_000);
    // The same QPN drawn again, another initial PSN: a new incarnation of the key replaces the old state.
    let third = one_run(&mut h, run(3, 0x2345, 0xff_fff0), 3_000_000);
    for tx in [&first, &second, &third] {
        assert_eq!((tx.acked_bytes, tx.messages_completed), (total, messages), "{tx:?}");
        assert_eq!((tx.retransmitted_packets, tx.naks_received, tx.timeouts), (0, 0, 0), "{tx:?}");
    }
    assert!(
        second.goodput_mbps > first.goodput_mbps * 0.99,
        "{} vs {}",
        second.goodput_mbps,
        first.goodput_mbps
    );

    let b = h.nic(B);
    assert_eq!(b.counters().rx_qps_replaced, 1);
    assert_eq!(b.counters().rx_qps_expired, 0);
    let keys: Vec<_> = b.rx_keys().collect();
    assert_eq!(keys, [(A_IP, 0x12, 0x100), (A_IP, 0x12, 0x2345)], "the third run is live under its key");
    let report = b.report();
    assert_eq!(report.receivers.len(), 3, "the replaced QP stays in the report: {:?}", report.receivers);
    for rx in &report.receivers {
        assert_eq!((rx.received_bytes, rx.messages_received), (total, messages), "{rx:?}");
        assert_eq!((rx.duplicates, rx.out_of_order, rx.naks_sent), (0, 0, 0), "{rx:?}");
    }
    let (replaced, live) = (&report.receivers[0], &report.receivers[2]);
    assert_eq!((replaced.flow_id, replaced.src_qp, replaced.expected_psn), (2, 0x2345, 0x12_3456 + 640));
    assert_eq!((live.flow_id, live.src_qp, live.expected_psn), (3, 0x2345, packet::psn_add(0xff_fff0, 640)));
    assert_eq!(b.rx_stats(A_IP, 0x12).unwrap().flow_id, 3, "the lookup by DestQP finds the latest run");
}

#[test]
fn idle_receiving_qps_close_and_a_paused_requester_resumes() {
    let idle = 500_000;
    let b_cfg = NicConfig { rx_idle_timeout_ns: idle, ..nic_config(B_MAC, B_IP) };
    let mut h = Harness::new(nic_config(A_MAC, A_IP), b_cfg, 1_000);
    // Flow 1 finishes at once; flow 2 is paused by PFC for 1.34 ms (> the idle timeout) in the middle.
    let short = FlowConfig { messages: Some(2), ..flow_to_b(1) };
    let long = FlowConfig { messages: Some(40), initial_psn: 0xab_cdef, ..flow_to_b(2) };
    h.nic(A).add_flow(short).unwrap();
    h.nic(A).add_flow(long).unwrap();
    h.inject(A, 200_000, pfc_frame(B_MAC, PfcRepr::xoff(0b1000, 0xffff)));
    h.run_until(1_000_000);
    assert_eq!(h.nic(B).counters().rx_qps_expired, 2, "both QPs idled out during the pause");
    assert_eq!(h.nic(B).rx_keys().count(), 0);
    h.run_until(u64::MAX / 2);

    let pause_end = 200_000 + mac_control::quanta_to_ns(0xffff, RATE_MBPS);
    assert!(h.data_from(A).any(|s| s.at > pause_end), "flow 2 sent after the pause");
    let (a, b) = (h.nic(A).flow_stats(2).unwrap(), h.nic(B).rx_stats(A_IP, 0x13).unwrap());
    assert_eq!((a.acked_bytes, a.retransmitted_packets, a.timeouts), (40 * 65536, 0, 0), "{a:?}");
    assert_eq!(
        (b.received_bytes, b.duplicates, b.out_of_order),
        (40 * 65536, 0, 0),
        "resumed in order: {b:?}"
    );
    assert_eq!(b.expected_psn, packet::psn_add(0xab_cdef, 40 * 64));
    let c = h.nic(B).counters();
    assert_eq!((c.rx_qps_expired, c.rx_qps_replaced), (2, 0));
    let keys: Vec<_> = h.nic(B).rx_keys().collect();
    assert_eq!(keys, [(A_IP, 0x13, FIRST_AUTO_QP + 1)], "flow 2's QP came back; flow 1's stays closed");

    // Long after the end, flow 2's QP closes too; both stay in the report.
    let end = h.nic(B).now().as_ns() + idle;
    h.run_until(end);
    assert_eq!(h.nic(B).rx_keys().count(), 0);
    assert_eq!(h.nic(B).counters().rx_qps_expired, 3);
    let report = h.nic(B).report();
    let flows: Vec<u32> = report.receivers.iter().map(|r| r.flow_id).collect();
    assert_eq!(flows, [1, 2], "closed QPs are reported oldest first");
    assert_eq!(report.receivers[0].received_bytes, 2 * 65536);
    assert_eq!(h.nic(B).rx_stats(A_IP, 0x12).unwrap().messages_received, 2, "closed QPs are still found");
}

#[test]
fn closed_receiving_qps_are_bounded() {
    let b_cfg = NicConfig { rx_idle_timeout_ns: 100_000, ..nic_config(B_MAC, B_IP) };
    let mut h = Harness::new(nic_config(A_MAC, A_IP), b_cfg, 1_000);
    h.keep_log = false;
    let runs = RETIRED_RX_QPS as u32 + 3;
    for i in 0..runs {
        let flow = FlowConfig { src_qp: 0x1000 + i, messages: Some(1), message_bytes: 1024, ..flow_to_b(1) };
        one_run(&mut h, flow, u64::from(i + 1) * 300_000);
    }
    let end = u64::from(runs + 1) * 300_000;
    h.run_until(end);
    let b = h.nic(B);
    assert_eq!(b.counters().rx_qps_expired, u64::from(runs));
    let report = b.report();
    assert_eq!(report.receivers.len(), RETIRED_RX_QPS, "the oldest closed QPs are forgotten");
    assert_eq!(report.receivers[0].src_qp, 0x1003);
    assert!(report.receivers.iter().all(|r| r.received_bytes == 1024));
}
