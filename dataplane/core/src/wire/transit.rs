//! What a router's packet path reads of a frame in transit, found in place: [`transit()`] walks the same
//! layers with the same checks as [`decode_transit`](super::decode_transit) but copies out only the handful
//! of fields forwarding needs (addresses, TTL, DSCP, the UDP ports), instead of building every header's
//! owned representation. An IP packet needs nothing more; for anything else (ARP, MAC Control, other
//! EtherTypes, all rare on a data path) the caller asks `decode_transit` for the rest.
//!
//! The two agree on every input, errors included, up to the network layer of a frame that is not IP (which
//! `transit` does not look into, so does not reject): [`Transit::of`] projects a [`Decoded`] onto this view
//! and a property test (below) compares them on arbitrary bytes; debug builds of the switch compare them
//! on every frame.

use super::ip::Protocol;
use super::{
    BthHeader, Decoded, EtherType, EthernetAddress, EthernetFrame, Ipv4Packet, Ipv6Packet, L3, L4, Result,
    UdpPacket, VlanRepr, VlanTag, ethernet, udp, vlan,
};
use std::net::IpAddr;

/// The fields of a frame a router's packet path reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transit {
    pub src_addr: EthernetAddress,
    pub dst_addr: EthernetAddress,
    /// The 802.1Q tag, if the frame is tagged.
    pub vlan: Option<VlanRepr>,
    /// The IP header's fields; `None` for any other EtherType.
    pub ip: Option<IpFields>,
}

/// The fields of an IPv4 or IPv6 header (and its UDP ports) forwarding reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpFields {
    pub src_addr: IpAddr,
    pub dst_addr: IpAddr,
    /// IPv4 protocol, or IPv6 next header.
    pub protocol: Protocol,
    /// TTL or hop limit.
    pub ttl: u8,
    pub dscp: u8,
    /// (source, destination) port, when the transport header is UDP and parses as [`decode_transit`]
    /// requires (with a RoCEv2 BTH when the destination port is 4791); `None` otherwise, fragments too.
    ///
    /// [`decode_transit`]: super::decode_transit
    pub udp_ports: Option<(u16, u16)>,
}

impl Transit {
    /// The view of a fully decoded frame: what [`transit()`] returns for the same bytes.
    pub fn of(d: &Decoded) -> Transit {
        let udp_ports = |l4: &L4| match l4 {
            L4::Udp { header, .. } => Some((header.src_port, header.dst_port)),
            _ => None,
        };
        let ip = match &d.l3 {
            L3::Ipv4 { header, l4 } => Some(IpFields {
                src_addr: header.src_addr.into(),
                dst_addr: header.dst_addr.into(),
                protocol: header.protocol,
                ttl: header.ttl,
                dscp: header.dscp,
                udp_ports: udp_ports(l4),
            }),
            L3::Ipv6 { header, l4 } => Some(IpFields {
                src_addr: header.src_addr.into(),
                dst_addr: header.dst_addr.into(),
                protocol: header.next_header,
                ttl: header.hop_limit,
                dscp: header.dscp,
                udp_ports: udp_ports(l4),
            }),
            _ => None,
        };
        Transit { src_addr: d.ethernet.src_addr, dst_addr: d.ethernet.dst_addr, vlan: d.vlan, ip }
    }
}

/// The transit view of a frame (without FCS), with the checks and errors of
/// [`decode_transit`](super::decode_transit). Never panics.
pub fn transit(frame: &[u8]) -> Result<Transit> {
    if let Some(view) = untagged_ipv4(frame) {
        debug_assert_eq!(Ok(view), transit_layers(frame), "the IPv4 fast path disagrees");
        return Ok(view);
    }
    transit_layers(frame)
}

/// The 20-byte header of an untagged IPv4 frame without options whose lengths hold as
/// [`transit_layers`] requires (frame long enough, version 4 and IHL 5, total length within the frame);
/// the checksum is not verified here. `None` for anything else. Shared by [`untagged_ipv4`] and the
/// switch's flow fast path, which read further fields at fixed offsets.
#[inline]
pub(crate) fn untagged_ipv4_header(frame: &[u8]) -> Option<&[u8; 20]> {
    untagged_ipv4_head(frame).map(ip_header)
}

/// The first 34 bytes (Ethernet then the IPv4 header) of a frame [`untagged_ipv4_header`] accepts, as
/// one array, so that every later read and write at a fixed offset needs no bounds check.
#[inline]
pub(crate) fn untagged_ipv4_head(frame: &[u8]) -> Option<&[u8; 34]> {
    const IP: usize = ethernet::HEADER_LEN;
    let head = frame.first_chunk::<34>()?;
    // The EtherType (0x0800) as one 16-bit comparison, then the version/IHL byte (0x45).
    if head[12..14] != [0x08, 0x00] || head[14] != 0x45 {
        return None;
    }
    // 20 <= total length <= what follows the Ethernet header, in one unsigned comparison (the frame
    // has at least 34 bytes, so the right side does not wrap).
    let total_len = usize::from(u16::from_be_bytes([head[IP + 2], head[IP + 3]]));
    if total_len.wrapping_sub(20) > frame.len() - (IP + 20) {
        return None;
    }
    Some(head)
}

/// The IPv4 header of a 34-byte head [`untagged_ipv4_head`] returned.
#[inline]
pub(crate) fn ip_header(head: &[u8; 34]) -> &[u8; 20] {
    head.last_chunk::<20>().expect("34 = 14 + 20")
}

/// The common frame on a RoCE fabric, read with fixed offsets: untagged IPv4 without options, every
/// check of [`transit_layers`] passing (length, version, IHL, total length, header checksum). `None` for
/// anything else, which [`transit_layers`] reads (and rejects with its errors).
fn untagged_ipv4(frame: &[u8]) -> Option<Transit> {
    const IP: usize = ethernet::HEADER_LEN;
    let header = untagged_ipv4_header(frame)?;
    let total_len = usize::from(u16::from_be_bytes([header[2], header[3]]));
    if !super::checksum::ipv4_header_ok(header) {
        return None;
    }
    let protocol = Protocol::from(header[9]);
    // More fragments (0x2000) or a fragment offset (0x1fff): a fragment, whose ports are not read.
    let fragment = u16::from_be_bytes([header[6], header[7]]) & 0x3fff != 0;
    let mac = |at: usize| {
        EthernetAddress([
            frame[at],
            frame[at + 1],
            frame[at + 2],
            frame[at + 3],
            frame[at + 4],
            frame[at + 5],
        ])
    };
    let addr = |at: usize| IpAddr::from([header[at], header[at + 1], header[at + 2], header[at + 3]]);
    Some(Transit {
        src_addr: mac(6),
        dst_addr: mac(0),
        vlan: None,
        ip: Some(IpFields {
            src_addr: addr(12),
            dst_addr: addr(16),
            protocol,
            ttl: header[8],
            dscp: super::ip::split_ds(header[1]).0,
            udp_ports: if fragment { None } else { udp_ports(protocol, &frame[IP + 20..IP + total_len]) },
        }),
    })
}

/// [`transit()`] layer by layer, for any frame.
fn transit_layers(frame: &[u8]) -> Result<Transit> {
    let eth = EthernetFrame::new_checked(frame)?;
    let (vlan, ethertype, l3_offset) = match eth.ethertype() {
        EtherType::Vlan => {
            let repr = VlanRepr::parse(&VlanTag::new_checked(eth.payload())?)?;
            (Some(repr), repr.ethertype, ethernet::HEADER_LEN + vlan::HEADER_LEN)
        }
        ethertype => (None, ethertype, ethernet::HEADER_LEN),
    };
    let payload = &frame[l3_offset..];
    let ip = match ethertype {
        EtherType::Ipv4 => {
            let packet = Ipv4Packet::new_checked(payload)?;
            if !packet.verify_checksum() {
                return Err(super::Error::Checksum { layer: super::Layer::Ipv4 });
            }
            let protocol = packet.protocol();
            let fragment = packet.frag_offset() != 0 || packet.more_frags();
            Some(IpFields {
                src_addr: packet.src_addr().into(),
                dst_addr: packet.dst_addr().into(),
                protocol,
                ttl: packet.ttl(),
                dscp: packet.dscp(),
                udp_ports: if fragment { None } else { udp_ports(protocol, packet.payload()) },
            })
        }
        EtherType::Ipv6 => {
            let packet = Ipv6Packet::new_checked(payload)?;
            let protocol = packet.next_header();
            Some(IpFields {
                src_addr: packet.src_addr().into(),
                dst_addr: packet.dst_addr().into(),
                protocol,
                ttl: packet.hop_limit(),
                dscp: packet.dscp(),
                udp_ports: udp_ports(protocol, packet.payload()),
            })
        }
        _ => None,
    };
    Ok(Transit { src_addr: eth.src_addr(), dst_addr: eth.dst_addr(), vlan, ip })
}

/// The UDP ports of a transport header that parses as UDP (and carries a whole BTH when it is RoCEv2).
fn udp_ports(protocol: Protocol, payload: &[u8]) -> Option<(u16, u16)> {
    if protocol != Protocol::Udp {
        return None;
    }
    let packet = UdpPacket::new_checked(payload).ok()?;
    let (src, dst) = (packet.src_port(), packet.dst_port());
    if dst == udp::ROCEV2_PORT {
        BthHeader::new_checked(packet.payload()).ok()?;
    }
    Some((src, dst))
}

/// What a RoCEv2 endpoint reads of an IPv4 RoCEv2 packet, found in place: the fields [`decode`] gives for
/// a frame it decodes to IPv4, UDP and a BTH.
///
/// [`decode`]: fn@super::decode
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RoceV4 {
    pub src_mac: EthernetAddress,
    pub dst_mac: EthernetAddress,
    pub ip: super::Ipv4Repr,
    pub udp: super::UdpRepr,
    /// Offset of the UDP header in the frame.
    pub udp_offset: usize,
    pub bth: super::BthRepr,
}

/// The RoCEv2 view of a frame when [`decode`](fn@super::decode) (strict) would decode it to IPv4, UDP and a
/// BTH; `None` for anything else (another protocol, an error, a fragment), which the caller decodes in
/// full.
pub fn roce_v4(frame: &[u8]) -> Option<RoceV4> {
    let eth = EthernetFrame::new_checked(frame).ok()?;
    let (ethertype, l3_offset) = match eth.ethertype() {
        EtherType::Vlan => {
            let tag = VlanTag::new_checked(eth.payload()).ok()?;
            (tag.ethertype(), ethernet::HEADER_LEN + vlan::HEADER_LEN)
        }
        ethertype => (ethertype, ethernet::HEADER_LEN),
    };
    if ethertype != EtherType::Ipv4 {
        return None;
    }
    let packet = Ipv4Packet::new_checked(&frame[l3_offset..]).ok()?;
    let ip = super::Ipv4Repr::parse(&packet).ok()?;
    if ip.frag_offset != 0 || ip.more_frags || ip.protocol != Protocol::Udp {
        return None;
    }
    let datagram = UdpPacket::new_checked(packet.payload()).ok()?;
    let udp = super::UdpRepr::parse(&datagram).ok()?;
    if udp.dst_port != udp::ROCEV2_PORT {
        return None;
    }
    let bth = super::BthRepr::parse(&BthHeader::new_checked(datagram.payload()).ok()?).ok()?;
    let udp_offset = l3_offset + usize::from(packet.header_len());
    Some(RoceV4 { src_mac: eth.src_addr(), dst_mac: eth.dst_addr(), ip, udp, udp_offset, bth })
}

impl RoceV4 {
    /// The view of a fully decoded frame, if it is an IPv4 RoCEv2 packet.
    pub fn of(d: &Decoded) -> Option<RoceV4> {
        match &d.l3 {
            L3::Ipv4 { header, l4: L4::Udp { header: udp, offset, bth: Some(bth) } } => Some(RoceV4 {
                src_mac: d.ethernet.src_addr,
                dst_mac: d.ethernet.dst_addr,
                ip: *header,
                udp: *udp,
                udp_offset: *offset,
                bth: *bth,
            }),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::build::Ipv4Flow;
    use crate::wire::ip::Ecn;
    use crate::wire::{Layer, decode, decode_transit};
    use proptest::prelude::*;
    use std::net::Ipv4Addr;

    fn roce_frame() -> Vec<u8> {
        Ipv4Flow {
            src_mac: EthernetAddress([2, 0, 0, 0, 0, 1]),
            dst_mac: EthernetAddress([2, 0, 0, 0, 0, 2]),
            src_ip: Ipv4Addr::new(10, 0, 0, 1),
            dst_ip: Ipv4Addr::new(10, 0, 1, 1),
            src_port: 49152,
            dscp: 26,
            ecn: Ecn::Ect0,
            ttl: 64,
        }
        .udp(udp::ROCEV2_PORT, &[0; 40])
    }

    fn agree(frame: &[u8]) {
        assert_eq!(roce_v4(frame), decode(frame).ok().and_then(|d| RoceV4::of(&d)), "{frame:02x?}");
        let (fast, full) = (transit(frame), decode_transit(frame));
        match (&fast, &full) {
            // Not IP: the view does not parse ARP or MAC Control, whose errors only the full decoder finds.
            (Ok(t), Err(e)) if t.ip.is_none() => {
                assert!(matches!(e.layer(), Layer::Arp | Layer::MacControl), "{e} for {frame:02x?}")
            }
            _ => assert_eq!(fast, full.map(|d| Transit::of(&d)), "{frame:02x?}"),
        }
    }

    #[test]
    fn reads_what_the_packet_carries() {
        let t = transit(&roce_frame()).unwrap();
        let ip = t.ip.unwrap();
        assert_eq!((ip.dst_addr, ip.ttl, ip.dscp), (IpAddr::V4(Ipv4Addr::new(10, 0, 1, 1)), 64, 26));
        assert_eq!(ip.udp_ports, Some((49152, 4791)));
        assert_eq!(t.vlan, None);
    }

    #[test]
    fn a_short_bth_hides_the_ports_as_decode_transit_does() {
        // UDP to 4791 with a payload shorter than a BTH: forwarded, but its transport is not interpreted.
        let mut frame = roce_frame();
        frame.truncate(14 + 20 + 8 + 4);
        let total = (20 + 8 + 4u16).to_be_bytes();
        frame[16..18].copy_from_slice(&total);
        frame[14 + 20 + 4..14 + 20 + 6].copy_from_slice(&12u16.to_be_bytes());
        let mut ip = Ipv4Packet::new_unchecked(&mut frame[14..]);
        ip.fill_checksum();
        assert_eq!(transit(&frame).unwrap().ip.unwrap().udp_ports, None);
        agree(&frame);
    }

    proptest! {
        /// Arbitrary bytes behind a valid-looking start (so that deep layers are reached), and mutations of a
        /// real frame: the view and the full decoder agree, errors included.
        #[test]
        fn agrees_with_decode_transit(
            ethertype in prop::sample::select(vec![0x0800u16, 0x86dd, 0x8100, 0x0806, 0x8808, 0x1234]),
            inner in prop::sample::select(vec![0x0800u16, 0x86dd, 0x0806]),
            rest in prop::collection::vec(any::<u8>(), 0..120),
            flips in prop::collection::vec((0usize..90, any::<u8>()), 0..4),
            cut in 0usize..100,
        ) {
            let mut frame = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1];
            frame.extend_from_slice(&ethertype.to_be_bytes());
            if ethertype == 0x8100 {
                frame.extend_from_slice(&[0x60, 0x0a]);
                frame.extend_from_slice(&inner.to_be_bytes());
            }
            frame.extend_from_slice(&rest);
            agree(&frame);
            let mut real = roce_frame();
            for (at, value) in flips {
                if let Some(b) = real.get_mut(at) {
                    *b = value;
                }
            }
            agree(&real);
            // The same mutations with a valid header checksum, so that changed header fields (version,
            // IHL, lengths, fragments, protocol) reach the fixed-offset IPv4 path and its fall-back.
            let mut resummed = real.clone();
            if resummed.len() >= 14 + 20 {
                resummed[24..26].fill(0);
                let ihl = usize::from(resummed[14] & 0x0f) * 4;
                let header = &resummed[14..(14 + ihl.max(20)).min(resummed.len())];
                let sum = crate::wire::checksum::checksum(header);
                resummed[24..26].copy_from_slice(&sum.to_be_bytes());
                agree(&resummed);
            }
            real.truncate(cut);
            agree(&real);
        }
    }
}
