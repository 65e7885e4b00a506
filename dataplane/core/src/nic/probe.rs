//! Pingmesh probes: the latency probing of Microsoft's Pingmesh ("Pingmesh: A Large-Scale System for Data
//! Center Network Latency Measurement and Analysis", SIGCOMM 2015) as they ran it over RDMA ("RDMA over
//! Commodity Ethernet at Scale", SIGCOMM 2016): every host sends a small probe to every other at a fixed
//! interval, the peer's NIC answers at once, and the prober takes the round trip from its own clock.
//!
//! Framing (`docs/pingmesh.md`): a probe is a real RoCEv2 packet, a **UD SEND Only** (BTH opcode 0x64) to
//! the well-known probe QP [`PROBE_QP`] on both sides, so it never touches an RC QP's PSN state:
//!
//! ```text
//! Ethernet | IPv4 (probe DSCP, ECT(0)) | UDP → 4791 | BTH (UD SEND Only, DestQP 0x1000, PSN = seq)
//!   | DETH (IBA vol. 1 §9.3.3: Q_Key 0x4c4c504d "LLPM", source QP 0x1000)
//!   | probe header, 32 bytes:
//!       0       kind: 1 ping, 2 pong
//!       1..8    zero
//!       8..16   seq               the prober's probe number towards this peer, from 0
//!       16..24  sent_ns           the prober's clock when the ping's first bit left (echoed by the pong)
//!       24..32  responder_hold_ns the responder's clock from the ping's arrival to the pong's first bit
//!                                 leaving (0 in a ping): its turnaround, in the RTT but not the network's
//!   | ICRC
//! ```
//!
//! The responder answers every ping it gets (no configuration), with the ping's DSCP and the priority that
//! DSCP maps to (as ACKs), to the MAC the ping came from. The prober keeps each unanswered ping's send time;
//! a pong for an unknown or expired sequence number is counted, not measured. The RTT is the prober's clock
//! from the ping's first bit leaving to the pong's arrival, so it holds two serialisations, the paths'
//! propagation and queueing both ways, and the responder's turnaround (`responder_hold_ns`).

use super::mac_serde;
use super::packet::{self, Envelope, PSN_MASK};
use super::stats::{Histogram, LatencySummary};
use crate::time::{Instant, Nanos};
use crate::wire::bth::Opcode;
use crate::wire::{BthRepr, EthernetAddress};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::net::Ipv4Addr;

/// The probe QP: the BTH DestQP of pings and pongs, and the DETH source QP.
pub const PROBE_QP: u32 = 0x00_1000;
/// The Q_Key of probes ("LLPM").
pub const PROBE_QKEY: u32 = 0x4c4c_504d;
/// UDP source port of pings to the prober's first peer; the next peers count up (a fixed ECMP path per pair).
pub const PROBE_SRC_PORT: u16 = 0xd000;
/// Bytes after the BTH: DETH and probe header.
pub const PROBE_PAYLOAD_LEN: usize = Deth::LEN + ProbeHeader::LEN;

/// The Datagram Extended Transport Header of a UD packet (IBA vol. 1 §9.3.3): Q_Key, one reserved byte,
/// the 24-bit source QP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deth {
    pub qkey: u32,
    pub src_qp: u32,
}

impl Deth {
    pub const LEN: usize = 8;

    pub fn parse(bytes: &[u8]) -> Option<Deth> {
        let b = bytes.get(..Self::LEN)?;
        Some(Deth {
            qkey: u32::from_be_bytes([b[0], b[1], b[2], b[3]]),
            src_qp: u32::from_be_bytes([0, b[5], b[6], b[7]]),
        })
    }

    pub fn emit(&self, b: &mut [u8]) {
        b[0..4].copy_from_slice(&self.qkey.to_be_bytes());
        b[4] = 0;
        b[5..8].copy_from_slice(&(self.src_qp & PSN_MASK).to_be_bytes()[1..]);
    }
}

/// Ping or pong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeKind {
    Ping,
    Pong,
}

/// The probe header after the DETH (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProbeHeader {
    pub kind: ProbeKind,
    pub seq: u64,
    pub sent_ns: u64,
    pub responder_hold_ns: u64,
}

impl ProbeHeader {
    pub const LEN: usize = 32;

    pub fn parse(bytes: &[u8]) -> Option<ProbeHeader> {
        let b = bytes.get(..Self::LEN)?;
        let kind = match b[0] {
            1 => ProbeKind::Ping,
            2 => ProbeKind::Pong,
            _ => return None,
        };
        let u64_at = |i: usize| u64::from_be_bytes(b[i..i + 8].try_into().unwrap_or_default());
        Some(ProbeHeader { kind, seq: u64_at(8), sent_ns: u64_at(16), responder_hold_ns: u64_at(24) })
    }

    pub fn emit(&self, b: &mut [u8]) {
        b[..8].fill(0);
        b[0] = match self.kind {
            ProbeKind::Ping => 1,
            ProbeKind::Pong => 2,
        };
        b[8..16].copy_from_slice(&self.seq.to_be_bytes());
        b[16..24].copy_from_slice(&self.sent_ns.to_be_bytes());
        b[24..32].copy_from_slice(&self.responder_hold_ns.to_be_bytes());
    }
}

/// The probe in the BTH payload (DETH, header) if it is one: the right Q_Key and a known kind.
pub fn parse_probe(payload: &[u8]) -> Option<ProbeHeader> {
    let deth = Deth::parse(payload)?;
    if deth.qkey != PROBE_QKEY {
        return None;
    }
    ProbeHeader::parse(&payload[Deth::LEN..])
}

/// Whether a received frame is a MAC control frame (PFC, PAUSE) or a pong: all a pure prober takes in
/// beside another NIC model on the same interface (rocehost `--probe-only`).
pub fn is_pfc_or_pong(frame: &[u8]) -> bool {
    use crate::wire::{L3, L4, bth, udp};
    let Ok(d) = crate::wire::decode(frame) else { return false };
    match d.l3 {
        L3::MacControl(_) => true,
        L3::Ipv4 { l4: L4::Udp { offset, bth: Some(b), .. }, .. }
            if b.opcode == Opcode::UdSendOnly && b.dest_qp == PROBE_QP =>
        {
            let start = offset + udp::HEADER_LEN + bth::HEADER_LEN;
            frame.get(start..).and_then(parse_probe).is_some_and(|h| h.kind == ProbeKind::Pong)
        }
        _ => false,
    }
}

/// A whole probe frame (ping or pong) with the addressing of `env`.
pub fn probe_frame(env: &Envelope, header: &ProbeHeader) -> Vec<u8> {
    let bth = BthRepr {
        migration_req: true,
        ..packet::bth(Opcode::UdSendOnly, PROBE_QP, header.seq as u32, false)
    };
    packet::rocev2_frame(env, &bth, PROBE_PAYLOAD_LEN, |p| {
        Deth { qkey: PROBE_QKEY, src_qp: PROBE_QP }.emit(&mut p[..Deth::LEN]);
        header.emit(&mut p[Deth::LEN..]);
    })
}

/// A ping to answer: where it came from and what to echo.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pong {
    pub to_mac: EthernetAddress,
    pub to_ip: Ipv4Addr,
    pub dscp: u8,
    pub udp_src_port: u16,
    pub seq: u64,
    /// The ping's `sent_ns`, echoed as it came (the prober's clock, a wire field).
    pub sent_ns: u64,
    pub arrived: Instant,
}

/// One host to probe.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbePeer {
    pub ip: Ipv4Addr,
    /// The next hop towards it (the peer itself on a shared segment, else the first-hop router).
    #[serde(with = "mac_serde")]
    pub mac: EthernetAddress,
}

/// What to probe, how often, in which class.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ProbeConfig {
    /// One ping to every peer per interval (the peers' pings are spread evenly over it).
    pub interval_ns: u64,
    /// DSCP of the pings (the pongs carry the ping's): the class the probes measure.
    pub dscp: u8,
    /// PFC priority the pings wait on when paused (and their VLAN PCP when the NIC tags).
    pub priority: u8,
    /// No ping before this instant.
    pub start_ns: u64,
    /// No ping at or after this instant.
    pub until_ns: Option<u64>,
    /// A ping unanswered this long is lost.
    pub timeout_ns: u64,
    pub peers: Vec<ProbePeer>,
}

impl Default for ProbeConfig {
    fn default() -> Self {
        ProbeConfig {
            interval_ns: 1_000_000,
            // DSCP 3 → priority 3: the lossless class of SONiC's AZURE maps.
            dscp: 3,
            priority: 3,
            start_ns: 0,
            until_ns: None,
            timeout_ns: 100_000_000,
            peers: Vec::new(),
        }
    }
}

impl ProbeConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.interval_ns == 0 {
            return Err("interval_ns must be > 0".into());
        }
        if self.timeout_ns == 0 {
            return Err("timeout_ns must be > 0".into());
        }
        if self.dscp > 63 {
            return Err(format!("dscp {} is above 63", self.dscp));
        }
        if self.priority > 7 {
            return Err(format!("priority {} is above 7", self.priority));
        }
        for (i, p) in self.peers.iter().enumerate() {
            if self.peers[..i].iter().any(|q| q.ip == p.ip) {
                return Err(format!("peer {} is listed twice", p.ip));
            }
        }
        Ok(())
    }
}

/// What the prober measured towards one peer.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ProbeStats {
    pub peer: Option<Ipv4Addr>,
    pub dscp: u8,
    pub priority: u8,
    pub sent: u64,
    /// Pongs that matched a ping in flight: the RTT samples.
    pub received: u64,
    /// Pings unanswered for `timeout_ns`.
    pub lost: u64,
    /// Pings in flight at the time of the report (younger than `timeout_ns`).
    pub outstanding: u64,
    /// Pongs for no ping in flight (duplicates, or answers after the timeout).
    pub unexpected: u64,
    /// Ping's first bit leaving to the pong's arrival, on the prober's clock.
    pub rtt: LatencySummary,
    /// The responder's turnaround as it reported it (part of `rtt`).
    pub responder_hold: LatencySummary,
}

#[derive(Debug, Clone)]
struct PeerProbe {
    peer: ProbePeer,
    next_at: Instant,
    next_seq: u64,
    /// (seq, sent at) of the pings in flight, oldest first.
    outstanding: VecDeque<(u64, Instant)>,
    sent: u64,
    received: u64,
    lost: u64,
    unexpected: u64,
    rtt: Histogram,
    hold: Histogram,
}

impl PeerProbe {
    fn expire(&mut self, now: Instant, timeout: Nanos) {
        while self.outstanding.front().is_some_and(|&(_, sent)| sent + timeout <= now) {
            self.outstanding.pop_front();
            self.lost += 1;
        }
    }
}

/// The sending side of probing: the schedule and the measurements.
#[derive(Debug, Clone)]
pub(crate) struct Prober {
    cfg: ProbeConfig,
    /// `cfg`'s times, compiled.
    interval: Nanos,
    timeout: Nanos,
    /// No ping at or after this (`Instant::MAX`: no end).
    until: Instant,
    peers: Vec<PeerProbe>,
}

impl Prober {
    pub(crate) fn new(cfg: ProbeConfig) -> Result<Prober, String> {
        cfg.validate()?;
        let n = cfg.peers.len() as u64;
        let (interval, start) = (Nanos::from_ns(cfg.interval_ns), Instant::from_ns(cfg.start_ns));
        let peers = cfg
            .peers
            .iter()
            .enumerate()
            .map(|(k, peer)| PeerProbe {
                peer: peer.clone(),
                next_at: start + interval * k as u64 / n.max(1),
                next_seq: 0,
                outstanding: VecDeque::new(),
                sent: 0,
                received: 0,
                lost: 0,
                unexpected: 0,
                rtt: Histogram::new(),
                hold: Histogram::new(),
            })
            .collect();
        Ok(Prober {
            interval,
            timeout: Nanos::from_ns(cfg.timeout_ns),
            until: cfg.until_ns.map_or(Instant::MAX, Instant::from_ns),
            cfg,
            peers,
        })
    }

    pub(crate) fn config(&self) -> &ProbeConfig {
        &self.cfg
    }

    /// The earliest instant a ping is due.
    pub(crate) fn next_due(&self) -> Option<Instant> {
        self.peers.iter().map(|p| p.next_at).filter(|&t| t < self.until).min()
    }

    /// The ping due at `now` (the earliest due first), its first bit leaving at `sent`: its peer and
    /// header; the peer's next ping is scheduled one interval on (never in a burst after a pause).
    pub(crate) fn take_due(&mut self, now: Instant, sent: Instant) -> Option<(ProbePeer, u16, ProbeHeader)> {
        let until = self.until;
        let (k, p) = self
            .peers
            .iter_mut()
            .enumerate()
            .filter(|(_, p)| p.next_at <= now && p.next_at < until)
            .min_by_key(|(_, p)| p.next_at)?;
        p.expire(now, self.timeout);
        p.next_at += self.interval;
        if p.next_at <= now {
            p.next_at = now + self.interval;
        }
        let seq = p.next_seq;
        p.next_seq += 1;
        p.sent += 1;
        p.outstanding.push_back((seq, sent));
        let header = ProbeHeader { kind: ProbeKind::Ping, seq, sent_ns: sent.as_ns(), responder_hold_ns: 0 };
        Some((p.peer.clone(), PROBE_SRC_PORT.wrapping_add(k as u16), header))
    }

    /// A pong from `from` arrived at `now`.
    pub(crate) fn on_pong(&mut self, from: Ipv4Addr, pong: &ProbeHeader, now: Instant) {
        let timeout = self.timeout;
        let Some(p) = self.peers.iter_mut().find(|p| p.peer.ip == from) else { return };
        p.expire(now, timeout);
        match p.outstanding.iter().position(|&(seq, _)| seq == pong.seq) {
            Some(i) => {
                let (_, sent) = p.outstanding.remove(i).unwrap_or_default();
                p.received += 1;
                p.rtt.record(now.saturating_since(sent).as_ns());
                p.hold.record(pong.responder_hold_ns);
            }
            None => p.unexpected += 1,
        }
    }

    /// The RTT histogram towards `peer`.
    pub(crate) fn rtt_histogram(&self, peer: Ipv4Addr) -> Option<&Histogram> {
        self.peers.iter().find(|p| p.peer.ip == peer).map(|p| &p.rtt)
    }

    pub(crate) fn stats(&self, now: Instant) -> Vec<ProbeStats> {
        self.peers
            .iter()
            .map(|p| {
                let mut p = p.clone();
                p.expire(now, self.timeout);
                ProbeStats {
                    peer: Some(p.peer.ip),
                    dscp: self.cfg.dscp,
                    priority: self.cfg.priority,
                    sent: p.sent,
                    received: p.received,
                    lost: p.lost,
                    outstanding: p.outstanding.len() as u64,
                    unexpected: p.unexpected,
                    rtt: p.rtt.summary(),
                    responder_hold: p.hold.summary(),
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nic::{Nic, NicConfig, WIRE_OVERHEAD_BYTES};
    use crate::sim::{Device, NodeId, Sim};
    use crate::time::Instant;
    use crate::wire::ip::Ecn;
    use crate::wire::{L3, L4, decode};

    const MAC_A: EthernetAddress = EthernetAddress([2, 0, 0, 0, 0, 1]);
    const MAC_B: EthernetAddress = EthernetAddress([2, 0, 0, 0, 0, 2]);

    fn ip(n: u8) -> Ipv4Addr {
        Ipv4Addr::new(10, 0, 0, n)
    }

    fn envelope() -> Envelope {
        Envelope {
            src_mac: MAC_A,
            dst_mac: MAC_B,
            vlan: None,
            priority: 3,
            src_ip: ip(1),
            dst_ip: ip(2),
            dscp: 26,
            ecn: Ecn::Ect0,
            ident: 7,
            ttl: 64,
            udp_src_port: PROBE_SRC_PORT,
        }
    }

    #[test]
    fn a_ping_is_a_ud_send_only_with_a_deth_that_decodes() {
        let ping = ProbeHeader {
            kind: ProbeKind::Ping,
            seq: 5,
            sent_ns: 0x0102_0304_0506_0708,
            responder_hold_ns: 0,
        };
        let frame = probe_frame(&envelope(), &ping);
        // Ethernet 14, IPv4 20, UDP 8, BTH 12, DETH 8, probe header 32, ICRC 4.
        assert_eq!(frame.len(), 14 + 20 + 8 + 12 + 8 + 32 + 4);
        let d = decode(&frame).unwrap();
        let L3::Ipv4 { header, l4: L4::Udp { header: udp, offset, bth: Some(bth) } } = d.l3 else {
            panic!("not RoCEv2: {d:?}")
        };
        assert_eq!((header.dscp, header.ecn), (26, Ecn::Ect0));
        assert_eq!((udp.src_port, udp.dst_port), (PROBE_SRC_PORT, 4791));
        assert_eq!(
            (bth.opcode, bth.dest_qp, bth.psn, bth.partition_key),
            (Opcode::UdSendOnly, PROBE_QP, 5, 0xffff)
        );
        // Opcode 0x64 on the wire; the DETH as IBA lays it out: Q_Key, a reserved byte, source QP.
        let b = offset + 8;
        assert_eq!(frame[b], 0x64);
        assert_eq!(&frame[b + 12..b + 20], &[0x4c, 0x4c, 0x50, 0x4d, 0, 0x00, 0x10, 0x00]);
        let payload = &frame[b + 12..frame.len() - 4];
        assert_eq!(parse_probe(payload), Some(ping));
        // Another Q_Key or an unknown kind is not a probe.
        let mut other = payload.to_vec();
        other[3] ^= 1;
        assert_eq!(parse_probe(&other), None);
        let mut kind = payload.to_vec();
        kind[8] = 9;
        assert_eq!(parse_probe(&kind), None);
    }

    /// Two NICs joined by one link; A probes B every `interval_ns` on `priority`.
    fn pair(rate_mbps: u32, delay_ns: u64, interval_ns: u64, priority: u8) -> (Sim, NodeId, NodeId) {
        let nic = |mac, n| {
            Nic::new(NicConfig {
                mac,
                ip: ip(n),
                line_rate_mbps: rate_mbps,
                pfc_enable: 0b1000,
                ..NicConfig::default()
            })
            .unwrap()
        };
        let mut a = nic(MAC_A, 1);
        a.set_probes(ProbeConfig {
            interval_ns,
            dscp: priority,
            priority,
            peers: vec![ProbePeer { ip: ip(2), mac: MAC_B }],
            ..ProbeConfig::default()
        })
        .unwrap();
        let mut sim = Sim::new();
        let a = sim.add(Device::Nic(Box::new(a)));
        let b = sim.add(Device::Nic(Box::new(nic(MAC_B, 2))));
        sim.connect(a.port(0), rate_mbps, b.port(0), rate_mbps, Nanos::from_ns(delay_ns));
        (sim, a, b)
    }

    #[test]
    fn rtt_on_one_link_is_two_serialisations_and_two_propagations_plus_the_turnaround() {
        // Link physics, not the model's own rules: a 98-byte frame occupies (98 + 24) × 8 = 976 bits,
        // 976 ns at 1 Gb/s; 1 µs of propagation each way; B's line is idle, so it answers at once.
        let (mut sim, a, b) = pair(1000, 1_000, 10_000, 3);
        sim.run_until(Instant::from_ns(1_000_000 - 1));
        let bits = (14 + 20 + 8 + 12 + 8 + 32 + 4 + WIRE_OVERHEAD_BYTES) * 8;
        let serialisation_ns = bits * 1000 / 1000; // bits / (1000 Mb/s) in ns
        let turnaround_ns = 0;
        let expected = 2 * (serialisation_ns + 1_000) + turnaround_ns;
        assert_eq!(expected, 3_952);
        let stats = sim.nic(a).probe_stats();
        let s = &stats[0];
        assert_eq!((s.peer, s.sent), (Some(ip(2)), 100), "one ping per 10 µs for 1 ms");
        assert_eq!((s.received, s.lost, s.unexpected), (100, 0, 0), "{s:?}");
        assert_eq!(
            (s.rtt.min_ns, s.rtt.p50_ns, s.rtt.p99_ns, s.rtt.max_ns),
            (expected, expected, expected, expected)
        );
        assert_eq!(s.responder_hold.max_ns, turnaround_ns);
        let responder = sim.nic(b).counters();
        assert_eq!((responder.rx_probe_frames, responder.tx_probe_reply_frames), (100, 100));
        assert!(sim.nic(b).probe_stats().is_empty(), "B answers without probing itself");
    }

    #[test]
    fn a_busy_responder_line_shows_as_its_turnaround() {
        // B sends back-to-back 1500-byte data to A: a pong waits for the data frame on the line (at most
        // one, control frames go first), and B reports that wait as its turnaround.
        let (mut sim, a, b) = pair(1000, 1_000, 10_000, 3);
        sim.nic(b)
            .add_flow(crate::nic::FlowConfig {
                id: 1,
                dst_ip: ip(1),
                dst_mac: MAC_A,
                dcqcn: false,
                ..Default::default()
            })
            .unwrap();
        sim.run_until(Instant::from_ns(2_000_000));
        let s = &sim.nic(a).probe_stats()[0];
        assert_eq!(s.received, s.sent - s.outstanding);
        let frame_ns = (1500 + 14 + WIRE_OVERHEAD_BYTES) * 8; // one full data frame at 1 Gb/s
        assert!(s.responder_hold.max_ns > 0 && s.responder_hold.max_ns <= frame_ns, "{s:?}");
        assert!(s.rtt.max_ns > 3_952 && s.rtt.max_ns <= 3_952 + 2 * frame_ns, "{s:?}");
        assert!(s.rtt.min_ns >= 3_952, "{s:?}");
    }

    #[test]
    fn pings_wait_while_their_priority_is_paused_and_go_on_another() {
        // B storms priority 3 from 0: A's priority 3 is paused from the first XOFF's arrival (about 2 µs,
        // after the ping at 0) to the end. Priority 0 is never paused: one ping per 10 µs.
        for (priority, sent) in [(3u8, 1), (0, 100)] {
            let (mut sim, a, b) = pair(1000, 1_000, 10_000, priority);
            sim.nic(b).set_storm(0b1000, Nanos::from_ns(10_000));
            sim.run_until(Instant::from_ns(1_000_000 - 1));
            let s = &sim.nic(a).probe_stats()[0];
            assert_eq!(s.sent, sent, "priority {priority}: {s:?}");
        }
    }

    #[test]
    fn unanswered_pings_are_lost_after_the_timeout() {
        let mut a = Nic::new(NicConfig { mac: MAC_A, ip: ip(1), ..NicConfig::default() }).unwrap();
        let peers = vec![ProbePeer { ip: ip(9), mac: MAC_B }];
        a.set_probes(ProbeConfig {
            interval_ns: 1_000,
            timeout_ns: 5_000,
            until_ns: Some(10_000),
            peers,
            ..Default::default()
        })
        .unwrap();
        let mut t = 0;
        while let Some(at) = a.poll_at() {
            t = at.as_ns().max(t);
            a.handle_timeout(Instant::from_ns(t));
            while a.poll_transmit(Instant::from_ns(t)).is_some() {}
            if t > 20_000 {
                break;
            }
        }
        a.handle_timeout(Instant::from_ns(20_000));
        let s = &a.probe_stats()[0];
        assert_eq!((s.sent, s.received, s.lost, s.outstanding), (10, 0, 10, 0), "{s:?}");
        let bad = ProbeConfig { dscp: 64, ..ProbeConfig::default() };
        assert!(a.set_probes(bad).unwrap_err().to_string().contains("dscp 64"));
    }
}
