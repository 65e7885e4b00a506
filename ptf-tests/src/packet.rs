//! PTF's frame builders (`simple_udp_packet`, `simple_tcp_packet`, `simple_arp_packet`, plus
//! `simple_roce_packet` and `simple_pfc_packet`) and masks that ignore fields when matching.
//!
//! The builders take a parameter struct whose `Default` is PTF's keyword defaults (`ptf.testutils`), so a
//! test reads like its Python original:
//!
//! ```
//! use lossless_ptf::packet::{simple_udp_packet, Udp};
//! let frame = simple_udp_packet(&Udp { ip_dscp: 3, pktlen: 64, ..Udp::default() });
//! assert_eq!(frame.len(), 64);
//! ```
//!
//! Frames carry no FCS: a `pktlen` of 64 is a 64-byte frame on the wire without its FCS, as scapy builds
//! it. Shorter requests are padded to the 60-byte Ethernet minimum.

use lossless_dataplane::wire::build::{self, Dot1q};
use lossless_dataplane::wire::ip::{Ecn, Protocol};
use lossless_dataplane::wire::{
    self, ArpOperation, ArpRepr, BthOpcode, BthRepr, EtherType, EthernetAddress, Ipv4Repr, Ipv6Repr, L3, L4,
    MacControlRepr, PfcRepr,
};
use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};

/// PTF's default destination MAC.
pub const DEFAULT_DST_MAC: EthernetAddress = EthernetAddress([0x00, 0x01, 0x02, 0x03, 0x04, 0x05]);
/// PTF's default source MAC.
pub const DEFAULT_SRC_MAC: EthernetAddress = EthernetAddress([0x00, 0x06, 0x07, 0x08, 0x09, 0x0a]);

/// Parses `aa:bb:cc:dd:ee:ff`; panics on anything else (test input).
pub fn mac(text: &str) -> EthernetAddress {
    let bytes: Vec<u8> = text
        .split(':')
        .map(|b| u8::from_str_radix(b, 16).unwrap_or_else(|_| panic!("bad MAC {text}")))
        .collect();
    EthernetAddress(bytes.try_into().unwrap_or_else(|_| panic!("bad MAC {text}")))
}

fn ecn(bits: u8) -> Ecn {
    Ecn::from(bits & 3)
}

/// The optional 802.1Q tag of a frame (`dl_vlan_enable`, `vlan_vid`, `vlan_pcp` in PTF).
fn tag(enable: bool, vid: u16, pcp: u8) -> Option<Dot1q> {
    enable.then_some(Dot1q { pcp, dei: false, vid })
}

/// Pads an L4 payload so that the whole frame is `pktlen` bytes: PTF fills with incrementing bytes.
fn filler(pktlen: usize, headers: usize) -> Vec<u8> {
    (0..pktlen.saturating_sub(headers)).map(|i| i as u8).collect()
}

fn ipv4_frame(
    l2: (EthernetAddress, EthernetAddress, Option<Dot1q>),
    ip: (Ipv4Addr, Ipv4Addr, u8, u8, u8, u16),
    protocol: Protocol,
    l4: &[u8],
) -> Vec<u8> {
    let (src, dst, dscp, ecn_bits, ttl, ident) = ip;
    let header = Ipv4Repr {
        src_addr: src,
        dst_addr: dst,
        protocol,
        payload_len: l4.len(),
        ttl,
        dscp,
        ecn: ecn(ecn_bits),
        ident,
        dont_frag: false,
        more_frags: false,
        frag_offset: 0,
    };
    build::ethernet(l2.0, l2.1, l2.2, EtherType::Ipv4, &build::ipv4(&header, l4))
}

fn l2_len(vlan: bool) -> usize {
    wire::ethernet::HEADER_LEN + if vlan { wire::vlan::HEADER_LEN } else { 0 }
}

/// `simple_udp_packet`'s parameters.
#[derive(Debug, Clone, Copy)]
pub struct Udp {
    pub pktlen: usize,
    pub eth_dst: EthernetAddress,
    pub eth_src: EthernetAddress,
    pub dl_vlan_enable: bool,
    pub vlan_vid: u16,
    pub vlan_pcp: u8,
    pub ip_src: Ipv4Addr,
    pub ip_dst: Ipv4Addr,
    /// The six DSCP bits (PTF's `ip_dscp`; `ip_tos` = dscp << 2 | ecn).
    pub ip_dscp: u8,
    pub ip_ecn: u8,
    pub ip_ttl: u8,
    pub ip_id: u16,
    pub udp_sport: u16,
    pub udp_dport: u16,
}

impl Default for Udp {
    fn default() -> Udp {
        Udp {
            pktlen: 100,
            eth_dst: DEFAULT_DST_MAC,
            eth_src: DEFAULT_SRC_MAC,
            dl_vlan_enable: false,
            vlan_vid: 0,
            vlan_pcp: 0,
            ip_src: Ipv4Addr::new(192, 168, 0, 1),
            ip_dst: Ipv4Addr::new(192, 168, 0, 2),
            ip_dscp: 0,
            ip_ecn: 0,
            ip_ttl: 64,
            ip_id: 1,
            udp_sport: 1234,
            udp_dport: 80,
        }
    }
}

/// A UDP/IPv4 frame of `pktlen` bytes (PTF's `simple_udp_packet`), UDP checksum filled.
pub fn simple_udp_packet(p: &Udp) -> Vec<u8> {
    let headers = l2_len(p.dl_vlan_enable) + wire::ipv4::HEADER_LEN + wire::udp::HEADER_LEN;
    let payload = filler(p.pktlen, headers);
    let datagram = build::udp_v4(p.ip_src, p.ip_dst, p.udp_sport, p.udp_dport, &payload);
    ipv4_frame(
        (p.eth_src, p.eth_dst, tag(p.dl_vlan_enable, p.vlan_vid, p.vlan_pcp)),
        (p.ip_src, p.ip_dst, p.ip_dscp, p.ip_ecn, p.ip_ttl, p.ip_id),
        Protocol::Udp,
        &datagram,
    )
}

/// `simple_udpv6_packet`'s parameters.
#[derive(Debug, Clone, Copy)]
pub struct Udpv6 {
    pub pktlen: usize,
    pub eth_dst: EthernetAddress,
    pub eth_src: EthernetAddress,
    pub ipv6_src: Ipv6Addr,
    pub ipv6_dst: Ipv6Addr,
    pub ipv6_dscp: u8,
    pub ipv6_ecn: u8,
    pub ipv6_hlim: u8,
    pub udp_sport: u16,
    pub udp_dport: u16,
}

impl Default for Udpv6 {
    fn default() -> Udpv6 {
        Udpv6 {
            pktlen: 100,
            eth_dst: DEFAULT_DST_MAC,
            eth_src: DEFAULT_SRC_MAC,
            ipv6_src: "2001:db8:85a3::8a2e:370:7334".parse().expect("literal"),
            ipv6_dst: "2001:db8:85a3::8a2e:370:7335".parse().expect("literal"),
            ipv6_dscp: 0,
            ipv6_ecn: 0,
            ipv6_hlim: 64,
            udp_sport: 1234,
            udp_dport: 80,
        }
    }
}

/// A UDP/IPv6 frame of `pktlen` bytes (PTF's `simple_udpv6_packet`).
pub fn simple_udpv6_packet(p: &Udpv6) -> Vec<u8> {
    let headers = wire::ethernet::HEADER_LEN + wire::ipv6::HEADER_LEN + wire::udp::HEADER_LEN;
    let payload = filler(p.pktlen, headers);
    let datagram = build::udp_v6(p.ipv6_src, p.ipv6_dst, p.udp_sport, p.udp_dport, &payload);
    let header = Ipv6Repr {
        src_addr: p.ipv6_src,
        dst_addr: p.ipv6_dst,
        next_header: Protocol::Udp,
        payload_len: datagram.len(),
        hop_limit: p.ipv6_hlim,
        dscp: p.ipv6_dscp,
        ecn: ecn(p.ipv6_ecn),
        flow_label: 0,
    };
    build::ethernet(p.eth_src, p.eth_dst, None, EtherType::Ipv6, &build::ipv6(&header, &datagram))
}

/// `simple_tcp_packet`'s parameters.
#[derive(Debug, Clone, Copy)]
pub struct Tcp {
    pub pktlen: usize,
    pub eth_dst: EthernetAddress,
    pub eth_src: EthernetAddress,
    pub dl_vlan_enable: bool,
    pub vlan_vid: u16,
    pub vlan_pcp: u8,
    pub ip_src: Ipv4Addr,
    pub ip_dst: Ipv4Addr,
    pub ip_dscp: u8,
    pub ip_ecn: u8,
    pub ip_ttl: u8,
    pub ip_id: u16,
    pub tcp_sport: u16,
    pub tcp_dport: u16,
    /// TCP flags byte (PTF's default "S" = 0x02).
    pub tcp_flags: u8,
}

impl Default for Tcp {
    fn default() -> Tcp {
        let u = Udp::default();
        Tcp {
            pktlen: 100,
            eth_dst: u.eth_dst,
            eth_src: u.eth_src,
            dl_vlan_enable: false,
            vlan_vid: 0,
            vlan_pcp: 0,
            ip_src: u.ip_src,
            ip_dst: u.ip_dst,
            ip_dscp: 0,
            ip_ecn: 0,
            ip_ttl: 64,
            ip_id: 1,
            tcp_sport: 1234,
            tcp_dport: 80,
            tcp_flags: 0x02,
        }
    }
}

/// A TCP/IPv4 frame of `pktlen` bytes (PTF's `simple_tcp_packet`): 20-byte TCP header, window 8192,
/// checksum over the pseudo-header filled.
pub fn simple_tcp_packet(p: &Tcp) -> Vec<u8> {
    const TCP_HEADER: usize = 20;
    let headers = l2_len(p.dl_vlan_enable) + wire::ipv4::HEADER_LEN + TCP_HEADER;
    let payload = filler(p.pktlen, headers);
    let mut segment = vec![0u8; TCP_HEADER];
    segment[0..2].copy_from_slice(&p.tcp_sport.to_be_bytes());
    segment[2..4].copy_from_slice(&p.tcp_dport.to_be_bytes());
    segment[12] = 5 << 4; // data offset: five words
    segment[13] = p.tcp_flags;
    segment[14..16].copy_from_slice(&8192u16.to_be_bytes());
    segment.extend_from_slice(&payload);
    let mut pseudo = Vec::with_capacity(12);
    pseudo.extend_from_slice(&p.ip_src.octets());
    pseudo.extend_from_slice(&p.ip_dst.octets());
    pseudo.extend_from_slice(&[0, 6]);
    pseudo.extend_from_slice(&(segment.len() as u16).to_be_bytes());
    let sum = !wire::checksum::combine(&[wire::checksum::sum(&pseudo), wire::checksum::sum(&segment)]);
    segment[16..18].copy_from_slice(&sum.to_be_bytes());
    ipv4_frame(
        (p.eth_src, p.eth_dst, tag(p.dl_vlan_enable, p.vlan_vid, p.vlan_pcp)),
        (p.ip_src, p.ip_dst, p.ip_dscp, p.ip_ecn, p.ip_ttl, p.ip_id),
        Protocol::Tcp,
        &segment,
    )
}

/// `simple_arp_packet`'s parameters (`arp_op` 1 = who-has, 2 = is-at).
#[derive(Debug, Clone, Copy)]
pub struct Arp {
    pub eth_dst: EthernetAddress,
    pub eth_src: EthernetAddress,
    pub vlan_vid: Option<u16>,
    pub arp_op: u16,
    pub ip_snd: Ipv4Addr,
    pub ip_tgt: Ipv4Addr,
    pub hw_snd: EthernetAddress,
    pub hw_tgt: EthernetAddress,
}

impl Default for Arp {
    fn default() -> Arp {
        Arp {
            eth_dst: EthernetAddress::BROADCAST,
            eth_src: DEFAULT_SRC_MAC,
            vlan_vid: None,
            arp_op: 1,
            ip_snd: Ipv4Addr::new(192, 168, 0, 1),
            ip_tgt: Ipv4Addr::new(192, 168, 0, 2),
            hw_snd: DEFAULT_SRC_MAC,
            hw_tgt: EthernetAddress([0; 6]),
        }
    }
}

/// An ARP frame (PTF's `simple_arp_packet`), padded to 60 bytes.
pub fn simple_arp_packet(p: &Arp) -> Vec<u8> {
    let repr = ArpRepr {
        operation: ArpOperation::from(p.arp_op),
        source_hardware_addr: p.hw_snd,
        source_protocol_addr: p.ip_snd,
        target_hardware_addr: p.hw_tgt,
        target_protocol_addr: p.ip_tgt,
    };
    let tag = p.vlan_vid.map(|vid| Dot1q { pcp: 0, dei: false, vid });
    build::ethernet(p.eth_src, p.eth_dst, tag, EtherType::Arp, &build::arp(&repr))
}

/// `simple_roce_packet`: a RoCEv2 RC SEND-ONLY frame (UDP 4791, BTH, zero ICRC) of `pktlen` bytes.
#[derive(Debug, Clone, Copy)]
pub struct Roce {
    pub pktlen: usize,
    pub eth_dst: EthernetAddress,
    pub eth_src: EthernetAddress,
    pub ip_src: Ipv4Addr,
    pub ip_dst: Ipv4Addr,
    pub ip_dscp: u8,
    /// ECT(0) by default, as RoCEv2 NICs send.
    pub ip_ecn: u8,
    pub ip_ttl: u8,
    pub ip_id: u16,
    pub udp_sport: u16,
    pub dest_qp: u32,
    pub psn: u32,
}

impl Default for Roce {
    fn default() -> Roce {
        let u = Udp::default();
        Roce {
            pktlen: 100,
            eth_dst: u.eth_dst,
            eth_src: u.eth_src,
            ip_src: u.ip_src,
            ip_dst: u.ip_dst,
            ip_dscp: 3,
            ip_ecn: 2,
            ip_ttl: 64,
            ip_id: 1,
            udp_sport: 49152,
            dest_qp: 0x11,
            psn: 0,
        }
    }
}

/// A RoCEv2 frame (`simple_roce_packet`).
pub fn simple_roce_packet(p: &Roce) -> Vec<u8> {
    let bth = BthRepr::rc(BthOpcode::from(0x04), p.dest_qp, p.psn, true);
    let headers = wire::ethernet::HEADER_LEN
        + wire::ipv4::HEADER_LEN
        + wire::udp::HEADER_LEN
        + wire::bth::HEADER_LEN
        + wire::bth::ICRC_LEN;
    let roce = build::rocev2_payload(&bth, p.pktlen.saturating_sub(headers));
    let datagram = build::udp_v4(p.ip_src, p.ip_dst, p.udp_sport, wire::udp::ROCEV2_PORT, &roce);
    ipv4_frame(
        (p.eth_src, p.eth_dst, None),
        (p.ip_src, p.ip_dst, p.ip_dscp, p.ip_ecn, p.ip_ttl, p.ip_id),
        Protocol::Udp,
        &datagram,
    )
}

/// An 802.1Qbb PFC frame from `src`: XOFF for `quanta` on the priorities of `mask` (0 = XON).
pub fn simple_pfc_packet(src: EthernetAddress, mask: u8, quanta: u16) -> Vec<u8> {
    let mut frame = vec![0u8; wire::mac_control::FRAME_LEN];
    MacControlRepr::Pfc(PfcRepr::xoff(mask, quanta)).emit_frame(src, &mut frame);
    frame
}

/// The PFC frame `frame` is, if it is one: (class-enable vector, per-priority quanta).
pub fn pfc_of(frame: &[u8]) -> Option<(u8, [u16; 8])> {
    match wire::decode(frame).ok()?.l3 {
        L3::MacControl(MacControlRepr::Pfc(p)) => Some((p.class_enable, p.time)),
        _ => None,
    }
}

/// The DSCP and ECN bits of an IPv4/IPv6 frame.
pub fn ds_field(frame: &[u8]) -> Option<(u8, Ecn)> {
    match wire::decode(frame).ok()?.l3 {
        L3::Ipv4 { header, .. } => Some((header.dscp, header.ecn)),
        L3::Ipv6 { header, .. } => Some((header.dscp, header.ecn)),
        _ => None,
    }
}

/// A frame to match, with the bytes to ignore (PTF's `Mask` and `set_do_not_care_scapy`).
#[derive(Clone, PartialEq, Eq)]
pub struct Mask {
    frame: Vec<u8>,
    care: Vec<bool>,
    /// What was ignored, for failure messages.
    ignored: Vec<&'static str>,
}

impl Mask {
    /// Matches `frame` exactly until fields are ignored.
    pub fn new(frame: Vec<u8>) -> Mask {
        let care = vec![true; frame.len()];
        Mask { frame, care, ignored: Vec::new() }
    }

    /// Ignores `len` bytes at `offset` (PTF's `set_do_not_care(offset_bits, len_bits)`, in bytes).
    pub fn dont_care(mut self, offset: usize, len: usize, what: &'static str) -> Mask {
        let end = (offset + len).min(self.care.len());
        for c in &mut self.care[offset.min(end)..end] {
            *c = false;
        }
        self.ignored.push(what);
        self
    }

    fn l3_offset(&self) -> usize {
        wire::decode(&self.frame).map_or(wire::ethernet::HEADER_LEN, |d| d.l3_offset)
    }

    fn l4_offset(&self) -> Option<usize> {
        let l3 = self.l3_offset();
        match wire::decode(&self.frame).ok()?.l3 {
            L3::Ipv4 { .. } => Some(l3 + usize::from(self.frame.get(l3)? & 0x0f) * 4),
            L3::Ipv6 { .. } => Some(l3 + wire::ipv6::HEADER_LEN),
            _ => None,
        }
    }

    fn is_ipv4(&self) -> bool {
        matches!(wire::decode(&self.frame).map(|d| d.l3), Ok(L3::Ipv4 { .. }))
    }

    pub fn ignore_dst_mac(self) -> Mask {
        self.dont_care(0, 6, "eth.dst")
    }

    pub fn ignore_src_mac(self) -> Mask {
        self.dont_care(6, 6, "eth.src")
    }

    /// Both MACs (a routed frame's are rewritten).
    pub fn ignore_macs(self) -> Mask {
        self.ignore_dst_mac().ignore_src_mac()
    }

    /// TTL (IPv4) or hop limit (IPv6).
    pub fn ignore_ttl(self) -> Mask {
        let l3 = self.l3_offset();
        if self.is_ipv4() {
            self.dont_care(l3 + 8, 1, "ip.ttl")
        } else {
            self.dont_care(l3 + 7, 1, "ipv6.hlim")
        }
    }

    /// The IPv4 header checksum.
    pub fn ignore_ip_checksum(self) -> Mask {
        let l3 = self.l3_offset();
        if self.is_ipv4() { self.dont_care(l3 + 10, 2, "ip.chksum") } else { self }
    }

    /// The ECN bits (and, for IPv4, the header checksum they change).
    pub fn ignore_ecn(self) -> Mask {
        let l3 = self.l3_offset();
        let m = if self.is_ipv4() {
            self.dont_care(l3 + 1, 1, "ip.tos")
        } else {
            self.dont_care(l3, 2, "ipv6.tc")
        };
        m.ignore_ip_checksum()
    }

    /// The UDP or TCP checksum.
    pub fn ignore_l4_checksum(self) -> Mask {
        let Some(l4) = self.l4_offset() else { return self };
        let tcp = matches!(
            wire::decode(&self.frame).map(|d| d.l3),
            Ok(L3::Ipv4 { l4: L4::Other(Protocol::Tcp), .. })
        );
        if tcp { self.dont_care(l4 + 16, 2, "tcp.chksum") } else { self.dont_care(l4 + 6, 2, "udp.chksum") }
    }

    /// What a routed copy of this frame looks like: MACs, TTL and IPv4 checksum ignored.
    pub fn routed(self) -> Mask {
        self.ignore_macs().ignore_ttl().ignore_ip_checksum()
    }

    /// Whether `frame` matches: same length, equal on every cared-for byte.
    pub fn matches(&self, frame: &[u8]) -> bool {
        frame.len() == self.frame.len()
            && self.frame.iter().zip(frame).zip(&self.care).all(|((a, b), care)| !care || a == b)
    }

    pub fn frame(&self) -> &[u8] {
        &self.frame
    }
}

impl From<Vec<u8>> for Mask {
    fn from(frame: Vec<u8>) -> Mask {
        Mask::new(frame)
    }
}

impl From<&Vec<u8>> for Mask {
    fn from(frame: &Vec<u8>) -> Mask {
        Mask::new(frame.clone())
    }
}

impl From<&Mask> for Mask {
    fn from(m: &Mask) -> Mask {
        m.clone()
    }
}

impl fmt::Debug for Mask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", describe(&self.frame))?;
        if !self.ignored.is_empty() {
            write!(f, " (ignoring {})", self.ignored.join(", "))?;
        }
        Ok(())
    }
}

/// One line about a frame for failure messages: decoded headers, or the length and first bytes.
pub fn describe(frame: &[u8]) -> String {
    match wire::decode(frame) {
        Ok(d) => {
            let l2 = format!("{} > {}", d.ethernet.src_addr, d.ethernet.dst_addr);
            let vlan = d.vlan.map(|v| format!(" vlan {} pcp {}", v.vid, v.pcp)).unwrap_or_default();
            let l3 = match d.l3 {
                L3::Ipv4 { header, l4 } => format!(
                    " {} > {} dscp {} ecn {:?} ttl {}{}",
                    header.src_addr,
                    header.dst_addr,
                    header.dscp,
                    header.ecn,
                    header.ttl,
                    l4_text(&l4)
                ),
                L3::Ipv6 { header, l4 } => format!(
                    " {} > {} dscp {} hlim {}{}",
                    header.src_addr,
                    header.dst_addr,
                    header.dscp,
                    header.hop_limit,
                    l4_text(&l4)
                ),
                L3::Arp(a) => {
                    format!(" arp {:?} {} > {}", a.operation, a.source_protocol_addr, a.target_protocol_addr)
                }
                L3::MacControl(m) => format!(" {m:?}"),
                other => format!(" {other:?}"),
            };
            format!("[{} B {l2}{vlan}{l3}]", frame.len())
        }
        Err(e) => format!("[{} B, undecodable ({e}): {:02x?}]", frame.len(), &frame[..frame.len().min(32)]),
    }
}

fn l4_text(l4: &L4) -> String {
    match l4 {
        L4::Udp { header, .. } => format!(" udp {} > {}", header.src_port, header.dst_port),
        other => format!(" {other:?}").chars().take(40).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builders_make_the_requested_length_and_decode() {
        for len in [60, 64, 100, 1500] {
            let udp = simple_udp_packet(&Udp { pktlen: len, ..Udp::default() });
            assert_eq!(udp.len(), len);
            assert!(matches!(wire::decode(&udp).unwrap().l3, L3::Ipv4 { l4: L4::Udp { .. }, .. }));
            let tcp = simple_tcp_packet(&Tcp { pktlen: len, ..Tcp::default() });
            assert_eq!(tcp.len(), len);
            let roce = simple_roce_packet(&Roce { pktlen: len.max(70), ..Roce::default() });
            assert_eq!(roce.len(), len.max(70));
            let v6 = simple_udpv6_packet(&Udpv6 { pktlen: len.max(70), ..Udpv6::default() });
            assert_eq!(v6.len(), len.max(70));
        }
        let tagged =
            simple_udp_packet(&Udp { dl_vlan_enable: true, vlan_vid: 10, vlan_pcp: 5, ..Udp::default() });
        let d = wire::decode(&tagged).unwrap();
        assert_eq!(d.vlan.map(|v| (v.vid, v.pcp)), Some((10, 5)));
        assert_eq!(ds_field(&simple_roce_packet(&Roce::default())), Some((3, Ecn::Ect0)));
    }

    #[test]
    fn tcp_checksum_verifies() {
        let f = simple_tcp_packet(&Tcp::default());
        let seg = &f[34..];
        let mut pseudo = Vec::new();
        pseudo.extend_from_slice(&[192, 168, 0, 1, 192, 168, 0, 2, 0, 6]);
        pseudo.extend_from_slice(&(seg.len() as u16).to_be_bytes());
        let total = wire::checksum::combine(&[wire::checksum::sum(&pseudo), wire::checksum::sum(seg)]);
        assert_eq!(total, 0xffff);
    }

    #[test]
    fn masks_ignore_exactly_the_named_fields() {
        let sent = simple_udp_packet(&Udp { ip_dscp: 3, ip_ecn: 2, ..Udp::default() });
        let mut routed = sent.clone();
        routed[0..12].copy_from_slice(&[9; 12]);
        routed[14 + 8] = 63; // TTL
        routed[14 + 10] ^= 0x55; // checksum
        assert!(!Mask::new(sent.clone()).matches(&routed));
        assert!(Mask::new(sent.clone()).routed().matches(&routed));
        let mut other = routed.clone();
        other[14 + 1] = 3 << 2 | 3; // CE
        assert!(!Mask::new(sent.clone()).routed().matches(&other));
        assert!(Mask::new(sent.clone()).routed().ignore_ecn().matches(&other));
        assert!(!Mask::new(sent.clone()).matches(&sent[..sent.len() - 1]));
    }

    #[test]
    fn pfc_frames_round_trip() {
        let f = simple_pfc_packet(mac("02:00:00:00:00:09"), 0b1000, 0xffff);
        assert_eq!(pfc_of(&f), Some((0b1000, [0, 0, 0, 0xffff, 0, 0, 0, 0])));
        assert_eq!(pfc_of(&simple_udp_packet(&Udp::default())), None);
    }
}
