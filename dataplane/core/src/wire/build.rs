//! Whole-frame builders from owned representations: what tests, benchmarks, the host emulator and the
//! PTF-style frame builders use. Lengths and checksums (IPv4 header, UDP) are filled in; frames shorter than
//! the Ethernet minimum are padded to 60 bytes (no FCS).
//!
//! The RoCEv2 ICRC is emitted as zeros: switches forward RoCEv2 without verifying it, and the emulated
//! hosts on both ends of a lab do not check it either.

use super::ethernet::{self, Address};
use super::ip::{Ecn, Protocol};
use super::{
    ArpPacket, ArpRepr, BthHeader, BthRepr, EtherType, EthernetFrame, EthernetRepr, Ipv4Packet, Ipv4Repr,
    Ipv6Packet, Ipv6Repr, UdpPacket, UdpRepr, VlanRepr, VlanTag, arp, bth, ipv4, ipv6, udp, vlan,
};
use core::net::{Ipv4Addr, Ipv6Addr};

/// An 802.1Q tag to put on a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Dot1q {
    pub pcp: u8,
    pub dei: bool,
    pub vid: u16,
}

/// An Ethernet frame around `payload`, optionally tagged, padded to the 60-byte minimum.
pub fn ethernet(
    src: Address,
    dst: Address,
    tag: Option<Dot1q>,
    ethertype: EtherType,
    payload: &[u8],
) -> Vec<u8> {
    let header_len = ethernet::HEADER_LEN + if tag.is_some() { vlan::HEADER_LEN } else { 0 };
    let mut frame = vec![0u8; (header_len + payload.len()).max(ethernet::MIN_FRAME_LEN)];
    let outer = if tag.is_some() { EtherType::Vlan } else { ethertype };
    let mut eth = EthernetFrame::new_unchecked(&mut frame[..]);
    EthernetRepr { src_addr: src, dst_addr: dst, ethertype: outer }.emit(&mut eth);
    if let Some(t) = tag {
        let repr = VlanRepr { pcp: t.pcp, dei: t.dei, vid: t.vid, ethertype };
        repr.emit(&mut VlanTag::new_unchecked(&mut frame[ethernet::HEADER_LEN..]));
    }
    frame[header_len..header_len + payload.len()].copy_from_slice(payload);
    frame
}

/// An IPv4 packet (20-byte header, checksum filled) around `payload`; `payload_len` is taken from it.
pub fn ipv4(header: &Ipv4Repr, payload: &[u8]) -> Vec<u8> {
    let repr = Ipv4Repr { payload_len: payload.len(), ..*header };
    let mut packet = vec![0u8; ipv4::HEADER_LEN + payload.len()];
    repr.emit(&mut Ipv4Packet::new_unchecked(&mut packet[..]));
    packet[ipv4::HEADER_LEN..].copy_from_slice(payload);
    packet
}

/// An IPv6 packet (fixed header only) around `payload`; `payload_len` is taken from it.
pub fn ipv6(header: &Ipv6Repr, payload: &[u8]) -> Vec<u8> {
    let repr = Ipv6Repr { payload_len: payload.len(), ..*header };
    let mut packet = vec![0u8; ipv6::HEADER_LEN + payload.len()];
    repr.emit(&mut Ipv6Packet::new_unchecked(&mut packet[..]));
    packet[ipv6::HEADER_LEN..].copy_from_slice(payload);
    packet
}

fn udp_unchecksummed(src_port: u16, dst_port: u16, payload: &[u8]) -> Vec<u8> {
    let mut datagram = vec![0u8; udp::HEADER_LEN + payload.len()];
    let repr = UdpRepr { src_port, dst_port, payload_len: payload.len() };
    repr.emit(&mut UdpPacket::new_unchecked(&mut datagram[..]));
    datagram[udp::HEADER_LEN..].copy_from_slice(payload);
    datagram
}

/// A UDP datagram with its checksum over the IPv4 pseudo-header.
pub fn udp_v4(src: Ipv4Addr, dst: Ipv4Addr, src_port: u16, dst_port: u16, payload: &[u8]) -> Vec<u8> {
    let mut datagram = udp_unchecksummed(src_port, dst_port, payload);
    UdpPacket::new_unchecked(&mut datagram[..]).fill_checksum_v4(src, dst);
    datagram
}

/// A UDP datagram with its (mandatory) checksum over the IPv6 pseudo-header.
pub fn udp_v6(src: Ipv6Addr, dst: Ipv6Addr, src_port: u16, dst_port: u16, payload: &[u8]) -> Vec<u8> {
    let mut datagram = udp_unchecksummed(src_port, dst_port, payload);
    UdpPacket::new_unchecked(&mut datagram[..]).fill_checksum_v6(src, dst);
    datagram
}

/// A RoCEv2 UDP payload: BTH, `payload_len` zero bytes, and a zero ICRC.
pub fn rocev2_payload(header: &BthRepr, payload_len: usize) -> Vec<u8> {
    let mut out = vec![0u8; bth::HEADER_LEN + payload_len + bth::ICRC_LEN];
    header.emit(&mut BthHeader::new_unchecked(&mut out[..]));
    out
}

/// An ARP packet (28 bytes).
pub fn arp(repr: &ArpRepr) -> Vec<u8> {
    let mut out = vec![0u8; arp::PACKET_LEN];
    repr.emit(&mut ArpPacket::new_unchecked(&mut out[..]));
    out
}

/// Addresses and DS field of a routed IPv4 RoCEv2 test flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv4Flow {
    pub src_mac: Address,
    pub dst_mac: Address,
    pub src_ip: Ipv4Addr,
    pub dst_ip: Ipv4Addr,
    pub src_port: u16,
    pub dscp: u8,
    pub ecn: Ecn,
    pub ttl: u8,
}

impl Ipv4Flow {
    /// A RoCEv2 RC SEND-ONLY frame of exactly `frame_len` bytes (at least 62: headers + BTH + ICRC).
    pub fn rocev2(&self, bth: &BthRepr, frame_len: usize) -> Vec<u8> {
        const OVERHEAD: usize =
            ethernet::HEADER_LEN + ipv4::HEADER_LEN + udp::HEADER_LEN + bth::HEADER_LEN + bth::ICRC_LEN;
        let roce = rocev2_payload(bth, frame_len.saturating_sub(OVERHEAD));
        self.udp(udp::ROCEV2_PORT, &roce)
    }

    /// A UDP frame to `dst_port` carrying `payload`.
    pub fn udp(&self, dst_port: u16, payload: &[u8]) -> Vec<u8> {
        let datagram = udp_v4(self.src_ip, self.dst_ip, self.src_port, dst_port, payload);
        let header = Ipv4Repr {
            src_addr: self.src_ip,
            dst_addr: self.dst_ip,
            protocol: Protocol::Udp,
            payload_len: datagram.len(),
            ttl: self.ttl,
            dscp: self.dscp,
            ecn: self.ecn,
            ident: 0,
            dont_frag: true,
            more_frags: false,
            frag_offset: 0,
        };
        ethernet(self.src_mac, self.dst_mac, None, EtherType::Ipv4, &ipv4(&header, &datagram))
    }
}

/// The 64-byte RoCEv2 frame used by benchmarks and examples: RC SEND ONLY, QP 0x11, PSN 0x123456.
pub fn rocev2_v4_example(dscp: u8, ecn: Ecn, frame_len: usize) -> Vec<u8> {
    let flow = Ipv4Flow {
        src_mac: Address([0x02, 0, 0, 0, 0, 0x01]),
        dst_mac: Address([0x02, 0, 0, 0, 0, 0x02]),
        src_ip: Ipv4Addr::new(192, 0, 2, 1),
        dst_ip: Ipv4Addr::new(198, 51, 100, 1),
        src_port: 49152,
        dscp,
        ecn,
        ttl: 64,
    };
    flow.rocev2(&example_bth(), frame_len)
}

/// The BTH of [`rocev2_v4_example`].
pub fn example_bth() -> BthRepr {
    BthRepr::rc(super::BthOpcode::from(0x04), 0x11, 0x12_3456, true)
}
