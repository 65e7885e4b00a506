//! Full decode of one Ethernet frame: Ethernet II → optional 802.1Q tag → ARP | IPv4 | IPv6 | MAC Control
//! → UDP → RoCEv2 BTH (UDP destination port 4791).
//!
//! This is the single entry point the switch's ingress uses and the top-level parser the fuzz targets
//! exercise. It returns owned header representations plus byte offsets, so that the packet path can both
//! classify (DSCP, PCP, UDP port, BTH opcode) and edit in place (TTL, ECN, MACs) without a second parse.
//! A frame the model cannot make sense of is an [`Error`](super::Error); payload it does not interpret
//! (TCP, ICMP, other EtherTypes) is reported as such, not rejected.

use super::ip::Protocol;
use super::{
    ArpPacket, ArpRepr, BthHeader, BthRepr, EtherType, EthernetFrame, EthernetRepr, Ipv4Packet, Ipv4Repr,
    Ipv6Packet, Ipv6Repr, MacControlRepr, Result, UdpPacket, UdpRepr, VlanRepr, VlanTag, mac_control, udp,
};

/// A decoded frame: every header the dataplane understands, and where each starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoded {
    pub ethernet: EthernetRepr,
    /// The 802.1Q tag, if the frame is tagged (TPID 0x8100).
    pub vlan: Option<VlanRepr>,
    /// Offset of the network-layer header: 14 untagged, 18 tagged.
    pub l3_offset: usize,
    pub l3: L3,
}

/// The network layer of a frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum L3 {
    Arp(ArpRepr),
    Ipv4 {
        header: Ipv4Repr,
        l4: L4,
    },
    Ipv6 {
        header: Ipv6Repr,
        l4: L4,
    },
    /// 802.3x PAUSE or 802.1Qbb PFC: consumed by the receiving port, never forwarded.
    MacControl(MacControlRepr),
    /// An EtherType this model forwards at layer 2 but does not interpret.
    Other(EtherType),
}

/// The transport layer of an IP packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum L4 {
    /// UDP, with the RoCEv2 base transport header when the destination port is 4791.
    Udp { header: UdpRepr, offset: usize, bth: Option<BthRepr> },
    /// An IPv4 fragment: only the first carries the transport header, and it is not interpreted.
    Fragment,
    /// A protocol carried but not interpreted (TCP, ICMP, ...; with [`decode_transit`], also a transport
    /// header that does not parse).
    Other(Protocol),
}

impl Decoded {
    /// The effective EtherType (the inner one for a tagged frame).
    pub fn ethertype(&self) -> EtherType {
        self.vlan.map_or(self.ethernet.ethertype, |v| v.ethertype)
    }

    /// DSCP of an IP packet.
    pub fn dscp(&self) -> Option<u8> {
        match &self.l3 {
            L3::Ipv4 { header, .. } => Some(header.dscp),
            L3::Ipv6 { header, .. } => Some(header.dscp),
            _ => None,
        }
    }

    /// The transport header of an IP packet.
    pub fn l4(&self) -> Option<&L4> {
        match &self.l3 {
            L3::Ipv4 { l4, .. } | L3::Ipv6 { l4, .. } => Some(l4),
            _ => None,
        }
    }

    /// The UDP header of an IP packet, if it carries one.
    pub fn udp(&self) -> Option<&UdpRepr> {
        match self.l4() {
            Some(L4::Udp { header, .. }) => Some(header),
            _ => None,
        }
    }

    /// The RoCEv2 BTH, if this is a RoCEv2 packet.
    pub fn bth(&self) -> Option<&BthRepr> {
        match self.l4() {
            Some(L4::Udp { bth, .. }) => bth.as_ref(),
            _ => None,
        }
    }
}

/// Decodes a whole Ethernet frame (without FCS). Never panics; every failure is a typed error.
pub fn decode(frame: &[u8]) -> Result<Decoded> {
    decode_with(frame, Strictness::Strict)
}

/// Decodes a frame as a router sees it in transit: the Ethernet, VLAN, ARP, IP and MAC Control layers
/// must be valid, but a transport header that does not parse (a UDP length inconsistent with the IP
/// payload, a short RoCEv2 BTH) is not a reason to drop the packet: its L4 is [`L4::Other`] (not
/// interpreted), as on a router that forwards on the IP header alone.
pub fn decode_transit(frame: &[u8]) -> Result<Decoded> {
    decode_with(frame, Strictness::Transit)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Strictness {
    Strict,
    Transit,
}

fn decode_with(frame: &[u8], strictness: Strictness) -> Result<Decoded> {
    let l4 = |protocol: Protocol, payload: &[u8], offset: usize| match decode_l4(protocol, payload, offset) {
        Err(_) if strictness == Strictness::Transit => Ok(L4::Other(protocol)),
        result => result,
    };
    let eth = EthernetFrame::new_checked(frame)?;
    let ethernet = EthernetRepr::parse(&eth)?;
    let (vlan, ethertype, l3_offset) = if ethernet.ethertype == EtherType::Vlan {
        let tag = VlanTag::new_checked(eth.payload())?;
        let repr = VlanRepr::parse(&tag)?;
        (Some(repr), repr.ethertype, super::ethernet::HEADER_LEN + super::vlan::HEADER_LEN)
    } else {
        (None, ethernet.ethertype, super::ethernet::HEADER_LEN)
    };
    let payload = &frame[l3_offset..];
    let l3 = match ethertype {
        EtherType::Arp => L3::Arp(ArpRepr::parse(&ArpPacket::new_checked(payload)?)?),
        EtherType::Ipv4 => {
            let packet = Ipv4Packet::new_checked(payload)?;
            let header = Ipv4Repr::parse(&packet)?;
            let l4 = if header.frag_offset != 0 || header.more_frags {
                L4::Fragment
            } else {
                l4(header.protocol, packet.payload(), l3_offset + packet.header_len() as usize)?
            };
            L3::Ipv4 { header, l4 }
        }
        EtherType::Ipv6 => {
            let packet = Ipv6Packet::new_checked(payload)?;
            let header = Ipv6Repr::parse(&packet)?;
            let l4 = l4(header.next_header, packet.payload(), l3_offset + super::ipv6::HEADER_LEN)?;
            L3::Ipv6 { header, l4 }
        }
        EtherType::MacControl => {
            L3::MacControl(MacControlRepr::parse(&mac_control::Packet::new_checked(payload)?)?)
        }
        other => L3::Other(other),
    };
    Ok(Decoded { ethernet, vlan, l3_offset, l3 })
}

fn decode_l4(protocol: Protocol, payload: &[u8], offset: usize) -> Result<L4> {
    if protocol != Protocol::Udp {
        return Ok(L4::Other(protocol));
    }
    let packet = UdpPacket::new_checked(payload)?;
    let header = UdpRepr::parse(&packet)?;
    let bth = if header.dst_port == udp::ROCEV2_PORT {
        Some(BthRepr::parse(&BthHeader::new_checked(packet.payload())?)?)
    } else {
        None
    };
    Ok(L4::Udp { header, offset, bth })
}
